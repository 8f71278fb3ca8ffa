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
           + Σ_jobs (10 + checkpoints)           # listed jobs, trace rows, synthetic arrivals

with expected failures = units × horizon / mean time to failure.
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


def _jobs(sc: Scenario, H: float) -> float:
    wl = sc.workload
    if wl is None:
        return 0.0

    def ckpts(ck: Any, work_h: float) -> float:
        iv = getattr(ck, "interval_h", None)
        return work_h / iv if iv else 0.0

    total = 0.0
    for job in wl.jobs:
        work = job.work_h if job.work_h is not None else H
        runs = max(1.0, H / work) if job.repeat else 1.0
        total += runs * EVENTS_PER_JOB + ckpts(job.checkpoint, min(work * runs, H))
    syn = getattr(wl, "synthetic", None)
    if syn is not None:
        n = syn.arrival_rate_per_h * H
        total += n * (EVENTS_PER_JOB + ckpts(syn.checkpoint, mean_time_h(syn.work)))
    tr = getattr(wl, "trace", None)
    if tr is not None:
        rows = getattr(tr, "_rows", None) or []
        total += sum(EVENTS_PER_JOB + ckpts(tr.checkpoint, float(r[2])) for r in rows)
    return total


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
