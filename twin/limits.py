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

with expected failures = units × horizon / mean time to failure, and e = 3 events per asynchronous
checkpoint (due, stall over, saved), 2 per synchronous one. A trace counts its rows submitted
before the horizon, and checkpoints over their work scaled down to what the cluster's node-hours
over the horizon can run (the rest waits in the queue). Jobs are bounded too (:data:`MAX_JOBS`):
each job submitted is a record in memory to the end of the run, whatever its events.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

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


def _count(n: int) -> str:
    """A count for a message: ``123,456``, or ``about 10^30`` for absurd ones."""
    return f"{n:,}" if n < 10**15 else f"about 10^{int(n.bit_length() * 0.30103)}"


def mean_time_h(dist: Any) -> float:
    """Mean of a time distribution, hours; +inf when it overflows (a Weibull of tiny shape)."""
    try:
        return float(dist.mean())
    except OverflowError:
        return math.inf


def _rate(units: float, horizon_h: float, dist: Any) -> float:
    """Expected renewals of ``units`` independent units over ``horizon_h``."""
    if units <= 0:
        return 0.0
    m = mean_time_h(dist)
    if not m > 0:
        return math.inf  # a zero mean time to failure never lets time advance
    u = float(units) if units < 10**300 else math.inf
    return u * horizon_h / m


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
    n = sc.cluster.n_nodes
    failures = sum(_rate(p.count * n, H, p.failure) for p in sc.cluster.node.parts.values())
    failures += sum(_rate(p.count * sc.cluster.racks, H, p.failure) for p in sc.cluster.rack_parts.values())
    net = sc.network
    if net is not None:
        c = net.counts(n)
        failures += _rate(c["optics"], H, net.optic.failure) + _rate(c["leaves"], H, net.leaf.failure)
        failures += _rate(c["spines"], H, net.spine.failure)
        failures += net.link_flaps_per_link_per_year * c["access_links"] * H / HOURS_PER_YEAR
        failures += net.trunk_flaps_per_link_per_year * c["trunk_links"] * H / HOURS_PER_YEAR
    for section in ("power", "cooling"):
        sub = getattr(sc, section, None)
        if sub is not None and hasattr(sub, "facility_parts"):
            failures += sum(_rate(p.count, H, p.failure) for p in sub.facility_parts().values())
    pl = sc.maintenance.planned
    if pl is not None:
        failures += pl.batch_nodes * max(0.0, H - pl.start_day * HOURS_PER_DAY) / (pl.every_days * HOURS_PER_DAY)
    return EVENTS_PER_FAILURE * failures + _jobs(sc, H)


def check_limits(scenario: Scenario | Loaded, reps: int | None = None, force: bool = False) -> None:
    """Refuse, before any work, a scenario (and ``reps`` replications of it) beyond the bounds of
    this module, unless ``force``. ``scenario`` may be a Scenario or a loaded scenario (then the
    error names its file). ``reps`` is the total number of replications the command may run."""
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
        refuse("--reps", f"{_count(reps)} replications exceed the limit of {MAX_REPLICATIONS:,}")
    jobs = _job_counts(sc, sc.horizon_h)[0]
    if jobs > MAX_JOBS:
        refuse("workload", f"about {_count(int(jobs))} jobs are submitted over the horizon (listed, synthetic "
                           f"arrivals, trace rows), above the limit of {MAX_JOBS:,} (~1 KiB of memory each)")
    ev = estimate_events(sc)
    if not ev <= MAX_EVENTS:
        refuse("estimated events", f"about {ev:.3g} events per replication are estimated (failure rates × parts "
                                   f"× horizon + jobs), above the limit of {MAX_EVENTS:.0e}")
    if reps is not None and not reps * ev <= MAX_TOTAL_EVENTS:
        refuse("--reps", f"{_count(reps)} replications × about {ev:.3g} events are estimated, above the limit of "
                         f"{MAX_TOTAL_EVENTS:.0e} events for one command")


def add_guard_args(p: Any) -> None:
    """Add ``--force`` and ``--allow-path`` to a command's argparse parser."""
    p.add_argument("--force", action="store_true",
                   help="run even beyond the limits on nodes, replications and estimated events (twin.limits)")
    p.add_argument("--allow-path", dest="allow_paths", action="append", default=[], metavar="DIR",
                   help="let scenario paths (extends, file:) point into DIR as well as the scenario's folder "
                        "and the project; repeatable")
