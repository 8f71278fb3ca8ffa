"""Documented bounds on what one command may ask for, checked before any work starts.

A scenario or an experiment beyond a bound is refused with an :class:`~twin.errors.InputError`
(exit code 2) naming the bound and ``--force``, which overrides it. The bounds are there so a typo
(``racks: 16000`` for 16, ``mtbf_h: 0.1`` for 100,000) fails in a second instead of running for
days or exhausting memory; they are far above the bundled scenarios (≤ 2,080 nodes, ≤ 10^6
events per replication-year).

Hard bounds that no ``--force`` lifts live in the schema and the loader: horizon ≤ 36,500 days
(:class:`twin.scenario.schema.Scenario`), scenario files ≤ 1 MB, ≤ 200,000 YAML nodes after alias
expansion and ≤ 100 levels of nesting (:mod:`twin.scenario.loader`).

The event estimate is an order of magnitude, not a prediction (checked against the bundled
scenarios: within a factor of three of the events actually processed)::

    events ≈ 10 × (expected failures of every node part, rack part, fabric part and facility unit
                   + link and trunk flaps + planned drains)
           + Σ_jobs (10 + e × checkpoints)       # listed jobs, trace rows, synthetic arrivals

with expected failures = units × a renewal bound per unit from the part's distributions
(:func:`renewals_per_unit`: a heavy-tailed life renews at the pace of its repairs, whatever its
mean), and e = 3 events per asynchronous
checkpoint (due, stall over, saved), 2 per synchronous one. A trace counts its rows submitted
before the horizon, and checkpoints over their work scaled down to what the cluster's node-hours
over the horizon can run (the rest waits in the queue). Jobs are bounded too (:data:`MAX_JOBS`):
each job submitted is a record in memory to the end of the run, whatever its events.

Whatever the estimate, a replication stops at a hard bound on the events it processes
(:func:`event_bound`: ``--max-events``, default :data:`EVENT_BOUND_FACTOR` × the estimate, at least
:data:`EVENT_BOUND_MIN`) with exit 2 naming the population that failed most
(:func:`events_exceeded`). Local worker processes are at most :data:`MAX_WORKERS_PER_CPU` per usable
core (:func:`check_workers`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable

from twin.errors import InputError
from twin.units import HOURS_PER_DAY, HOURS_PER_YEAR

if TYPE_CHECKING:
    from twin.scenario.loader import Loaded
    from twin.scenario.schema import Scenario

MAX_HORIZON_DAYS = 36_500
"""Simulated horizon, days (100 years). Also a hard bound of the schema."""
MAX_NODES = 100_000
"""Nodes in the cluster (racks × nodes_per_rack): ~50× the largest bundled scenario."""
MAX_UNITS = 10_000_000
"""GPUs plus node part instances (nodes × (gpus + Σ part counts)): bounds the state arrays."""
MAX_REPLICATIONS = 100_000
"""Replications one command runs (all variants, points and --max-reps included)."""
MAX_EVENTS = 5e8
"""Estimated events of one replication (hours of CPU at 30–60k events/s)."""
MAX_WORKERS_PER_CPU = 4
"""Local worker processes (``--workers``, and ``--dask local``) per CPU core this process may use: each
worker is a process with its own copy of the model, and more than the cores only share them."""
MAX_TOTAL_EVENTS = 1e11
"""Estimated events of the whole command: replications × events of one replication."""

EVENTS_PER_FAILURE = 10.0
"""Events per failure (failure, detection, ticket, spare, crew, repair, burn-in, up/down, job restart)."""
EVENTS_PER_JOB = 10.0
"""Events per job besides its checkpoints (submit, start, interruptions, finish)."""
MAX_JOBS = 2_000_000
"""Jobs one replication submits (listed jobs and their repeats, synthetic arrivals, trace rows before
the horizon): each is a record of ~1 KiB in memory to the end of the run (with its row of the jobs
table), so this bounds a replication's jobs to ~2 GiB."""

FORCE_HINT = "use --force to run anyway"

EVENT_BOUND_FACTOR = 10.0
"""Hard bound on the events one replication processes, as a multiple of :func:`estimate_events`
(the estimate bounds the bundled scenarios' counts: a run beyond ten times it is a scenario the
estimate does not describe, and it would run on until it exhausts the machine's memory)."""
EVENT_BOUND_MIN = 1_000_000
"""... and at least this many events (a few seconds of CPU and ~0.5 GB of records)."""

_max_events: list[int] = []
"""The ``--max-events`` in force (innermost last), set by :func:`max_events_scope`."""
_bound_cache: dict[int, tuple[Any, int]] = {}


def _count(n: int) -> str:
    """A count for a message: ``123,456``, or ``about 10^30`` for absurd ones."""
    return f"{n:,}" if n < 10**15 else f"about 10^{int(n.bit_length() * 0.30103)}"


def mean_time_h(dist: Any) -> float:
    """Mean of a time distribution, hours; +inf when it overflows (a Weibull of tiny shape)."""
    try:
        return float(dist.mean())
    except OverflowError:
        return math.inf


def renewals_per_unit(part: Any, horizon_h: float, detection: Any) -> float:
    """An upper bound on the expected failures of one unit of ``part`` over ``horizon_h`` hours, from
    its life distribution ``L`` and the least time a failure keeps it out ``D`` (``detection``, unless
    its failures are latent, then the automated remediation when the ladder has one, and the hands-on
    repair of the failures it does not clear; a transient part renews at once, D = 0), each computed
    from the distribution (:meth:`twin.scenario.distributions._Dist.cdf` and ``mean_below``: closed forms
    with scipy.special, which scipy.stats uses too, without importing scipy.optimize at startup).
    The least of three bounds, each valid for any distribution:

    - Wald: with cycles X = L + D truncated at the horizon, E[N] ≤ 2 H / E[min(X, H)], and
      E[min(X, H)] ≥ Σ E[min(Xᵢ, H/k)] over the k terms of the cycle (a heavy-tailed life such as a
      lognormal of σ = 10 has a mean of years and a median of a second: its renewals are bounded by the
      repair, never by its mean);
    - the tail: every one of the first k lives must end before H, so E[N] ≤ F(H) / (1 − F(H));
    - NBUE lives (exponential, Weibull of shape ≥ 1, fixed): E[N] ≤ H / E[L] (the old estimate, exact
      for an exponential without repair time).

    A part never repaired (``repair: none``) fails at most once: F(H)."""
    import numpy as np

    with np.errstate(all="ignore"):  # extreme parameters overflow to inf/0, which the bounds handle
        return _renewals(part, float(horizon_h), detection)


def _renewals(part: Any, H: float, detection: Any) -> float:
    life = part.failure
    f_h = life.cdf(H)
    if part.repair.policy == "none":
        return f_h
    terms: list[tuple[Any, float]] = []
    if part.effect != "transient":
        if part.latent_test_interval_h is None:
            terms.append((detection, 1.0))
        lad = part.repair.ladder
        if lad.remediate_success > 0:
            terms.append((lad.remediate_time, 1.0))
        terms.append((part.repair.time, 1.0 - lad.remediate_success))
    cut = H / (1 + len(terms))
    cycle = life.mean_below(cut) + sum(w * d.mean_below(cut) for d, w in terms if w > 0)
    bounds = [2.0 * H / cycle if cycle > 0 else math.inf]
    if f_h < 1.0:
        bounds.append(f_h / (1.0 - f_h))
    if life.nbue():
        m = mean_time_h(life)
        bounds.append(H / m if m > 0 else math.inf)
    valid = [b for b in bounds if b == b]  # a NaN of extreme parameters bounds nothing
    return min(valid) if valid else math.inf


def populations(sc: Scenario) -> list[tuple[str, float, Any]]:
    """Every failing population of the scenario: (field path, units, part spec), node parts, rack
    parts, fabric units and the facility units of the power, cooling and storage sections."""
    n = sc.cluster.n_nodes
    out: list[tuple[str, float, Any]] = [(f"cluster.node.parts.{k}", float(p.count * n), p)
                                         for k, p in sc.cluster.node.parts.items()]
    if sc.cluster.pools:  # each pool's units at its own failure law (cluster.pools)
        out = [(f"cluster.node.parts.{k}" if j == 0 else f"cluster.pools.{j - 1}.node.parts.{k}",
                float(p.count * (b - a)), p)
               for j, (a, b, node) in enumerate(sc.cluster.node_pools()) for k, p in node.parts.items()]
    out += [(f"cluster.rack_parts.{k}", float(p.count * sc.cluster.racks), p) for k, p in sc.cluster.rack_parts.items()]
    net = sc.network
    if net is not None:
        c = net.counts(n)
        fp = net.facility_parts()
        out += [(f"network.{k}", float(c[key]), fp[k]) for k, key in (("optic", "optics"), ("leaf", "leaves"),
                                                                      ("spine", "spines"))]
    for section in ("power", "cooling", "storage"):
        sub = getattr(sc, section, None)
        if sub is not None and hasattr(sub, "facility_parts"):
            units = getattr(sub, "_facility_units", lambda name: None)
            for k, p in sub.facility_parts().items():
                out.append((f"{section}.{k}", float(units(k) or p.count), p))
    return out


def expected_failures(sc: Scenario) -> list[tuple[str, float]]:
    """(field path, bound on the expected failures over the horizon) of every failing population,
    largest first (:func:`renewals_per_unit` × units)."""
    det = sc.maintenance.detection
    rows = []
    for field, units, part in populations(sc):
        per = renewals_per_unit(part, sc.horizon_h, det) if units > 0 else 0.0
        rows.append((field, units * per if per > 0 else 0.0))
    return sorted(rows, key=lambda r: -r[1])


def _ckpts(ck: Any, work_h: float) -> float:
    """Events of the checkpoints over ``work_h`` hours of a job's work."""
    iv = getattr(ck, "interval_h", None)
    return work_h / iv * (3.0 if getattr(ck, "mode", "sync") == "async" else 2.0) if iv else 0.0


def _job_counts(sc: Scenario, H: float) -> tuple[float, float]:
    """(jobs submitted, their events) over the horizon ``H``, estimated (see the module)."""
    wl = sc.workload
    if wl is None:
        return 0.0, 0.0
    jobs = total = 0.0
    for job in wl.jobs:
        work = job.work_h if job.work_h is not None else H
        runs = max(1.0, H / work) if job.repeat else 1.0
        jobs += runs
        total += runs * EVENTS_PER_JOB + _ckpts(job.checkpoint, min(work * runs, H))
    syn = getattr(wl, "synthetic", None)
    if syn is not None:
        n = syn.arrival_rate_per_h * max(0.0, H - syn.start_h)
        jobs += n
        total += n * (EVENTS_PER_JOB + _ckpts(syn.checkpoint, mean_time_h(syn.work)))
    tr = getattr(wl, "trace", None)
    rows = getattr(tr, "_rows", None) if tr is not None else None
    if rows is not None:
        from twin.scenario.trace import trace_summary

        n_rows, work_h, node_h = trace_summary(rows, H, sc.cluster.node.gpus)
        jobs += n_rows
        # checkpoints over the work the cluster can do in the horizon (the rest waits in the queue)
        done = min(1.0, sc.cluster.n_nodes * H / node_h) if node_h > 0 else 1.0
        total += n_rows * EVENTS_PER_JOB + _ckpts(tr.checkpoint, work_h * done)
    return jobs, total


def _jobs(sc: Scenario, H: float) -> float:
    return _job_counts(sc, H)[1]


def estimate_events(sc: Scenario) -> float:
    """Order-of-magnitude number of events one replication of ``sc`` processes (see the module)."""
    H = sc.horizon_h
    failures = sum(f for _, f in expected_failures(sc))
    net = sc.network
    if net is not None:
        c = net.counts(sc.cluster.n_nodes)
        failures += net.link_flaps_per_link_per_year * c["access_links"] * H / HOURS_PER_YEAR
        failures += net.trunk_flaps_per_link_per_year * c["trunk_links"] * H / HOURS_PER_YEAR
    pl = sc.maintenance.planned
    if pl is not None:
        failures += pl.batch_nodes * max(0.0, H - pl.start_day * HOURS_PER_DAY) / (pl.every_days * HOURS_PER_DAY)
    return EVENTS_PER_FAILURE * failures + _jobs(sc, H)


def _top_population(sc: Scenario) -> str:
    """'FIELD (about N failures)' of the population with the most expected failures, for a message."""
    rows = expected_failures(sc)
    if not rows or not rows[0][1] > 0:
        return "the workload (jobs and their checkpoints)"
    field, f = rows[0]
    return f"{field} (about {f:.3g} failures: a renewal bound from its failure and repair distributions)"


@contextmanager
def max_events_scope(n: int | None) -> Iterator[None]:
    """While inside, every replication stops at ``n`` events (``--max-events``) instead of the default
    :func:`event_bound`; ``None`` changes nothing. Worker processes get it through the task's payload."""
    if n is None:
        yield
        return
    _max_events.append(int(n))
    try:
        yield
    finally:
        _max_events.pop()


def max_events_override() -> int | None:
    """The ``--max-events`` in force, or None."""
    return _max_events[-1] if _max_events else None


def event_bound(sc: Scenario) -> int:
    """Events after which a replication of ``sc`` is stopped (exit 2, :func:`events_exceeded`): the
    ``--max-events`` in force, else :data:`EVENT_BOUND_FACTOR` × :func:`estimate_events`, at least
    :data:`EVENT_BOUND_MIN`. Computed once per scenario object."""
    override = max_events_override()
    if override is not None:
        return override
    hit = _bound_cache.get(id(sc))
    if hit is not None and hit[0] is sc:
        return hit[1]
    est = estimate_events(sc)
    bound = int(min(max(EVENT_BOUND_MIN, EVENT_BOUND_FACTOR * est), 2**62)) if est == est else 2**62
    if len(_bound_cache) >= 16:
        _bound_cache.pop(next(iter(_bound_cache)))
    _bound_cache[id(sc)] = (sc, bound)
    return bound


def events_exceeded(sc: Scenario, source: str, events: int, now_h: float, failures: dict[str, int]) -> InputError:
    """The error (exit 2) of a replication stopped at its :func:`event_bound` after ``events`` events at
    ``now_h``: it names the bound and where it comes from, and the population that failed most so far
    (``failures``: failures by population name) against its expected failures, or the workload when
    failures are not most of the events."""
    bound = event_bound(sc)
    how = (f"--max-events {bound:,}" if max_events_override() is not None else
           f"{EVENT_BOUND_FACTOR:g} × the estimate of {estimate_events(sc):.3g} events, at least {EVENT_BOUND_MIN:,}; "
           "--max-events N sets it")
    fields = {f.rsplit(".", 1)[1]: f for f, _, _ in populations(sc)}
    expected = dict(expected_failures(sc))
    name, most = max(failures.items(), key=lambda kv: kv[1], default=("", 0))
    if most * EVENTS_PER_FAILURE >= events / 2:
        fld = fields.get(name, name)
        cause = (f"{fld} failed {most:,} times so far, against about {expected.get(fld, math.nan):.3g} expected over "
                 f"the whole horizon: check its failure distribution (a heavy tail renews almost at once after "
                 f"each repair) and its repair")
    else:
        cause = (f"failures account for few of them ({sum(failures.values()):,}): the workload (jobs, their "
                 f"checkpoints and restarts) makes the most")
    return InputError(source, "events", f"the replication was stopped after {events:,} events at {now_h:.4g} h of "
                                        f"{sc.horizon_h:g} h: the hard bound of {bound:,} events per replication ({how}); {cause}")


def check_limits(scenario: Scenario | Loaded, reps: int | None = None, force: bool = False,
                 reps_option: str = "--reps") -> None:
    """Refuse, before any work, a scenario (and ``reps`` replications of it) beyond the bounds of
    this module, unless ``force``. ``scenario`` may be a Scenario or a loaded scenario (then the
    error names its file). ``reps`` is the total number of replications the command may run, set by
    ``reps_option`` (named by the error: ``--max-reps`` with ``--target-ci``)."""
    if force:
        return
    sc = getattr(scenario, "scenario", scenario)
    src = str(getattr(scenario, "source", "scenario"))

    def refuse(field: str, what: str) -> None:
        raise InputError(src, field, f"{what}; {FORCE_HINT}")

    if sc.horizon_days > MAX_HORIZON_DAYS:
        refuse("horizon_days", f"{sc.horizon_days:g} days exceed the limit of {MAX_HORIZON_DAYS:,} days")
    n = sc.cluster.n_nodes
    if n > MAX_NODES:
        refuse("cluster", f"{_count(n)} nodes (racks × nodes_per_rack) exceed the limit of {MAX_NODES:,} nodes")
    units = n * (sc.cluster.node.gpus + sum(p.count for p in sc.cluster.node.parts.values()))
    units += sc.cluster.racks * sum(p.count for p in sc.cluster.rack_parts.values())
    if sc.network is not None:
        c = sc.network.counts(n)
        units += c["links"] + c["optics"] + c["leaves"] + c["spines"]
    if units > MAX_UNITS:
        refuse("cluster.node", f"{_count(units)} GPUs and part instances exceed the limit of {MAX_UNITS:,}")
    if reps is not None and reps > MAX_REPLICATIONS:
        refuse(reps_option, f"{_count(reps)} replications (all variants and points) exceed the limit of "
                            f"{MAX_REPLICATIONS:,} replications per command")
    jobs = _job_counts(sc, sc.horizon_h)[0]
    if jobs > MAX_JOBS:
        many = f"about {_count(int(jobs))}" if math.isfinite(jobs) else "infinitely many"  # (a rate of 1e308 per h)
        refuse("workload", f"{many} jobs are submitted over the horizon (listed, synthetic arrivals, trace rows), "
                           f"above the limit of {MAX_JOBS:,} (~1 KiB of memory each)")
    ev = estimate_events(sc)
    if not ev <= MAX_EVENTS:
        refuse("estimated events", f"about {ev:.3g} events per replication are estimated, above the limit of "
                                   f"{MAX_EVENTS:.0e} (most from {_top_population(sc)})")
    if reps is not None and not reps * ev <= MAX_TOTAL_EVENTS:
        refuse(reps_option, f"{_count(reps)} replications × about {ev:.3g} events are estimated, above the limit of "
                         f"{MAX_TOTAL_EVENTS:.0e} events for one command")


def usable_cpus() -> int:
    """CPU cores this process may run on (its affinity where the system says, else the machine's)."""
    import os

    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def check_workers(workers: int, dask: str | None = None, force: bool = False, source: str = "--workers") -> None:
    """Refuse ``--workers`` below 1, or above :data:`MAX_WORKERS_PER_CPU` × the usable cores for local
    processes (a pool, or ``--dask local``; a remote Dask cluster brings its own), unless ``force``."""
    if workers < 1:
        raise InputError(source, str(workers), "must be >= 1")
    if force or (dask is not None and dask != "local"):
        return
    cpus = usable_cpus()
    cap = MAX_WORKERS_PER_CPU * cpus
    if workers > cap:
        raise InputError(source, str(workers), f"more than {MAX_WORKERS_PER_CPU} × the {cpus} CPU cores this process "
                                               f"may use ({cap} worker processes): beyond the cores, workers only "
                                               f"share them and each holds its own model in memory (--dask ADDRESS "
                                               f"runs on other machines); {FORCE_HINT}")


def int_at_least(low: int) -> Callable[[str], int]:
    """An argparse type: an integer >= ``low`` (``--max-events`` here; ``twin.cli.nonneg_int``), with a
    one-line message naming the value."""
    import argparse

    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if v < low:
            raise argparse.ArgumentTypeError(f"{v} must be >= {low}")
        return v

    return parse


def add_guard_args(p: Any) -> None:
    """Add ``--force``, ``--max-events`` and ``--allow-path`` to a command's argparse parser."""
    p.add_argument("--force", action="store_true",
                   help="run even beyond the limits on nodes, replications and estimated events (twin.limits)")
    p.add_argument("--max-events", dest="max_events", type=int_at_least(1), default=None, metavar="N",
                   help=f"stop a replication (exit 2, naming the cause) after N events (default "
                        f"{EVENT_BOUND_FACTOR:g} × the estimate of twin.limits, at least {EVENT_BOUND_MIN:,}); "
                        "--force does not lift it")
    p.add_argument("--allow-path", dest="allow_paths", action="append", default=[], metavar="DIR",
                   help="let scenario paths (extends, file:) point into DIR as well as the scenario's folder "
                        "and the project; repeatable")
