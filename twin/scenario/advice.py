"""Advisories: what a scenario's own numbers imply, in closed form, before anything is simulated.

A scenario can be valid and still describe a regime its author did not mean: spare parts reordered
too close to (or below) the demand of their lead time (replenishment cycles run out, nodes wait weeks
for parts), a crew so loaded that failed units wait longer for a technician than their repair takes, a checkpoint
interval far from the optimum of the job's own failure rate (Daly's, or with silent data corruption the
optimum with the detection latency and the checkpoint retention), a rolling set of kept checkpoints shorter
than the SDC detection latency, a horizon shorter than the period of a scheduled mechanism (yearly
maintenance windows on a 90-day horizon: :mod:`twin.scenario.horizon`). The simulator runs such
scenarios faithfully; these checks say, in one line each, what to expect and why, so that a number
such as a low ETTR is not mistaken for a property of the cluster. They never change a result.

Rates are long-run renewal rates, units / mean time to failure, of the node parts, rack parts and
fabric units (facility units, a few per site, are left out: their share of the demand is negligible). Burn-in does
not hold a technician (the model releases the crew before it), so a crew's offered load is
Σ rate × mean hands-on repair time.

The crew's queue is the finite-source (machine-repair) queue M/M/c//N of its units (every unit of
every k-of-n group whose repairs the pool does): a failed unit does not fail again until repaired,
so at most N units wait, and a pool of c ≥ N technicians never makes a repair wait. Treating the
failures as an unlimited (Poisson) stream, as M/M/c does, would call 6 units with one technician an
unbounded queue. The spares check uses a cycle service level: the chance that the lead-time demand
(Poisson) does not exceed the reorder point.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from twin.limits import mean_time_h
from twin.physics import checkpoints as pcf
from twin.physics import closed_forms as cf
from twin.scenario.health import Stragglers
from twin.units import DAYS_PER_WEEK, HOURS_PER_DAY, HOURS_PER_YEAR, Calendar

if TYPE_CHECKING:  # pragma: no cover
    from twin.scenario.schema import Scenario


CYCLE_SERVICE_LEVEL = 0.95
"""A spare part is reported when the chance that a replenishment cycle has no stock-out, P(Poisson
lead-time demand ≤ reorder point), is below this (95 %, a common inventory target: about one cycle
in twenty runs out); the suggested reorder point is the smallest that reaches it."""
CREW_WAIT_RATIO = 1.0
"""A crew pool is reported when a failed unit's mean wait for a technician (finite-source queue
M/M/c//N) is at least this multiple of the mean time its repair holds one: queueing at least doubles
the time to repair."""
ETTR_LOSS = 0.01
"""A checkpoint interval is reported when Daly's ETTR at it is this much (1 point) or more below
Daly's ETTR at his optimum interval (the curve is flat near the optimum: a factor of 2 or 3 off may
cost a few tenths of a point, not worth a flag)."""


@dataclass(frozen=True)
class Advice:
    """One advisory: the scenario field it concerns and what to expect."""

    field: str
    text: str

    def __str__(self) -> str:
        return f"{self.field}: {self.text}"


def repair_units(sc: "Scenario") -> dict[str, tuple[int, float, Any]]:
    """Units whose failures need a technician and a spare, by part type: (installed units, such
    failures per hour, the part's spec). Node parts (count × nodes; transient faults open no ticket),
    rack parts (count × racks) and fabric units. A failure that the repair ladder's automated
    remediation clears (share ``repair.ladder.remediate_success``) needs neither, so the rate counts
    the replacement share 1 − s₁ of failures only."""
    n = sc.cluster.n_nodes
    out: dict[str, tuple[int, float, Any]] = {}

    def add(name: str, units: int, part: Any) -> None:
        m = mean_time_h(part.failure)
        replace = 1.0 - part.repair.ladder.remediate_success
        out[name] = (units, units * replace / m if m > 0 else math.inf, part)

    for name, part in sc.cluster.node.parts.items():
        if part.effect != "transient":
            add(name, part.count * n, part)
    for name, part in sc.cluster.rack_parts.items():
        add(name, part.count * sc.cluster.racks, part)
    net = sc.network
    if net is not None:
        counts = net.counts(n)
        units = {"optic": counts["optics"], "leaf": counts["leaves"], "spine": counts["spines"]}
        for name, part in net.facility_parts().items():
            add(name, units[name], part)
    return out


def repair_demand_per_h(sc: "Scenario") -> dict[str, tuple[float, Any]]:
    """Failures per hour that open a repair ticket, by part type, with the part's spec (see
    :func:`repair_units`)."""
    return {name: (rate_h, part) for name, (_, rate_h, part) in repair_units(sc).items()}


def spares_advice(sc: "Scenario") -> list[Advice]:
    """Spares that run out too often, at the :data:`CYCLE_SERVICE_LEVEL`.

    Bought spares ((s, Q) reorder, no RMA): the reorder point's cycle service level, P(Poisson
    lead-time demand ≤ reorder point). A rotable pool (vendor RMA returning every replaced part,
    ``rma_return_share`` 1): no order is ever placed, the stock S circulates, and by Palm's theorem
    the share of replacements that find a spare is P(Poisson(demand over the turnaround) ≤ S − 1).
    With a share r < 1 returned, the scrapped rest is bought after the lead time: the replenishment
    time is taken as their mean, r·T_rma + (1 − r)·T_lead, against the reorder point."""
    demand = repair_demand_per_h(sc)
    out = []
    for name, sp in sc.maintenance.spares.items():
        if name not in demand:
            continue
        from scipy.stats import poisson  # only with spares: importing scipy.stats costs ~0.3 s
        rate_h = demand[name][0]
        days = sp.lead_time_days
        rotable = sp.rma_turnaround_days is not None and sp.rma_return_share >= 1.0
        if sp.rma_turnaround_days is not None:
            r = sp.rma_return_share
            days = r * sp.rma_turnaround_days + (1.0 - r) * sp.lead_time_days
        lead = rate_h * days * HOURS_PER_DAY
        if rotable:
            field, s, what = "stock", sp.stock - 1, "stock less one"
            kind = "RMA turnaround"
        else:
            field = "reorder_point"
            s = sp.reorder_point if sp.reorder_point is not None else sp.stock - 1
            what, kind = "reorder point", "replenishment time"
        level = float(poisson.cdf(s, lead))
        if level < CYCLE_SERVICE_LEVEL:
            suggest = int(poisson.ppf(CYCLE_SERVICE_LEVEL, lead)) + (1 if rotable else 0)
            regime = ("below the mean demand: expect stock-outs in most replenishment cycles" if s < lead else
                      f"{1 - level:.0%} of replenishment cycles run out")
            out.append(Advice(
                f"maintenance.spares.{name}.{field}",
                f"{what} {s} against a mean demand of {lead:.1f} over the {days:g}-day {kind} "
                f"({rate_h * HOURS_PER_DAY:.2f} replacements/day): {regime} (service level {level:.0%}), "
                f"nodes waiting for parts and jobs waiting for nodes; {field} {suggest} gives a "
                f"{CYCLE_SERVICE_LEVEL:.0%} service level (Poisson demand)"))
    return out


def crew_advice(sc: "Scenario") -> list[Advice]:
    """A crew pool whose failed units wait on average at least :data:`CREW_WAIT_RATIO` × the time a
    repair holds a technician, by the finite-source queue M/M/c//N of the pool's units.

    The pool's part types (n_j units failing at λ_j each) become one class with the same total
    failure rate Λ = Σ n_j·λ_j, the same offered work a = Σ n_j·λ_j × mean hands-on time (μ = Λ/a),
    and the same loss of failure rate per unit down when the units down are a failure-weighted mix:
    λ = Σ n_j·λ_j²/Λ, so N = Λ/λ = Λ²/Σ n_j·λ_j² (rounded, then λ = Λ/N). For one part type this is
    that type's N and λ exactly; a type that almost never fails adds almost nothing to N; for large N
    the queue tends to M/M/c with the same load. A shift calendar is taken as its long-run share f of
    on-shift hours: c technicians each repairing at f·μ."""

    crews = sc.maintenance.crews
    default = next(iter(crews))
    rate = {name: 0.0 for name in crews}  # Λ
    rate_sq = {name: 0.0 for name in crews}  # Σ n_j·λ_j²
    load = {name: 0.0 for name in crews}
    for n_units, rate_h, part in repair_units(sc).values():
        pool = part.repair.crew or default
        if pool in load and rate_h > 0:
            rate[pool] += rate_h
            rate_sq[pool] += rate_h * rate_h / n_units
            load[pool] += rate_h * mean_time_h(part.repair.time)
    out = []
    week_h = DAYS_PER_WEEK * HOURS_PER_DAY
    for name, shift in crews.items():
        if not (0 < load[name] < math.inf and rate[name] < math.inf):
            continue
        cal = Calendar(shift.shift, shift.start_hour, shift.end_hour, list(shift.workdays))
        on_shift = cal.on_shift_hours(week_h) / week_h
        if not on_shift > 0:
            continue
        capacity = shift.count * on_shift  # technicians available on average
        hands_on_h = load[name] / rate[name]  # mean time a repair holds a technician
        units = max(1, round(rate[name] ** 2 / rate_sq[name]))  # the effective number of units N
        q = cf.machine_repair(units, rate[name] / units, on_shift / hands_on_h, shift.count)
        held_h = hands_on_h / on_shift  # a repair's time at a technician, off-shift hours included
        if q.mean_wait_h < CREW_WAIT_RATIO * held_h:
            continue
        over = (f"; the offered work exceeds the pool, so failed units pile up until about {q.mean_down:,.0f} of "
                f"{units:,} are down on average" if load[name] >= capacity else "")
        out.append(Advice(
            f"maintenance.crews.{name}.count",
            f"repairs offer {load[name]:.2f} technicians of work on average (failures/h × mean hands-on time) "
            f"and the pool has {capacity:.2f} on shift on average: a failed unit waits {q.mean_wait_h:.3g} h for a "
            f"technician on average, more than the {held_h:.3g} h its repair holds one (finite-source queue "
            f"M/M/{shift.count}//{units}: {q.mean_waiting:.2f} repairs waiting, technicians busy "
            f"{q.utilisation:.0%} of the time{over})"))
    return out


def job_interruption_rates_per_h(sc: "Scenario", n_nodes: int) -> list[tuple[str, str, float]]:
    """(source, effect, interruptions per hour) of a job on ``n_nodes`` nodes: every node part that
    stops a job (node down, link down, transient fault), the node_down rack parts of the fewest racks
    that hold it, and the fabric (access-link optics, leaf
    switches of its groups, link flaps, and for a job spanning several leaf groups the flaps of its
    leaves' uplinks). Redundant parts stop a node only after several failures and
    are left out. Long-run rates: units / mean time to failure.

    The ``health`` section adds (:func:`health_interruption_rates_per_h`): straggler swaps and repair
    drains of ``degraded`` parts (effect ``straggler``) and silent-data-corruption rollbacks (effect
    ``rollback``)."""
    rows = []
    for name, part in sc.cluster.node.parts.items():
        if part.effect in ("node_down", "link_down", "transient"):
            rows.append((name, part.effect, n_nodes * part.count / mean_time_h(part.failure)))
    racks = math.ceil(n_nodes / sc.cluster.nodes_per_rack)  # the fewest racks the job can be on
    for name, part in sc.cluster.rack_parts.items():
        if part.effect == "node_down":  # any unit's failure takes the rack down
            rows.append((name, "rack_down", racks * part.count / mean_time_h(part.failure)))
    net = sc.network
    if net is not None and n_nodes > 1:  # a one-node job does not use the compute fabric (not cut, no flaps)
        groups = math.ceil(n_nodes / net.nodes_per_leaf)
        rows.append(("optic (node links)", "cut", n_nodes * net.rails * net.optics_per_link / mean_time_h(net.optic.failure)))
        rows.append(("leaf", "cut", groups * net.rails / mean_time_h(net.leaf.failure)))
        rows.append(("link_flap", "transient", n_nodes * net.rails * net.link_flaps_per_link_per_year / HOURS_PER_YEAR))
        if groups > 1 and net.spines > 0 and net.trunk_flaps_per_link_per_year > 0:  # the job crosses the spines
            uplinks = groups * net.rails * net.uplinks  # every uplink of the job's leaves
            rows.append(("trunk_flap", "transient", uplinks * net.trunk_flaps_per_link_per_year / HOURS_PER_YEAR))
    return rows + health_interruption_rates_per_h(sc, n_nodes)


def health_interruption_rates_per_h(sc: "Scenario", n_nodes: int) -> list[tuple[str, str, float]]:
    """(source, effect, interruptions per hour) of a job on ``n_nodes`` nodes from the ``health``
    mechanisms (:mod:`twin.scenario.health`, :mod:`twin.model.health`), in closed form:

    * a node part with effect ``degraded`` (``straggler``): with ``stragglers.policy: swap`` every
      failure drains the node ``detection_h`` after it began, restarting the job: n × count / MTTF
      (approximation: a rung-1 remediation that clears the fault before the detector fires is not
      subtracted). With ``keep`` the job runs slow (not an interruption) until the replacement,
      which drains the node unless the part is hot-swapped: n × count × (1 − s₁) / MTTF, s₁ the
      ladder's ``remediate_success`` (0 when hot-swapped or never repaired);
    * silent data corruption (``rollback``, source ``sdc``): n × ``defective_share`` / mean time
      between corruptions. This is the rate at the start of a run: a detection sends the node to a
      test that finds the defect with probability ``test_finds`` (the node is then repaired), so over
      a long run the rate falls below it; the advice takes it as it stands (an upper bound). A
      corruption on an idle node is harmless, but a job's nodes are busy by definition."""
    rows: list[tuple[str, str, float]] = []
    health = sc.health
    policy = (health.stragglers if health is not None else Stragglers()).policy
    for name, part in sc.cluster.node.parts.items():
        if part.effect != "degraded":
            continue
        if policy == "swap":
            share = 1.0
        elif part.repair.policy == "repair" and not part.repair.hot_swap:
            share = 1.0 - part.repair.ladder.remediate_success
        else:
            share = 0.0
        if share > 0:
            rows.append((name, "straggler", n_nodes * part.count * share / mean_time_h(part.failure)))
    sdc = health.sdc if health is not None else None
    if sdc is not None and sdc.defective_share > 0:
        rows.append(("sdc", "rollback", n_nodes * sdc.defective_share / mean_time_h(sdc.corruption)))
    return rows


LATENCY_SAMPLES = 32
"""Quantiles (midpoints) of a random SDC detection latency the checkpoint optimum averages over."""


def latency_samples_h(dist: Any, n: int = LATENCY_SAMPLES) -> list[float]:
    """The SDC detection latency as equally likely values, hours: a fixed latency itself, else the
    distribution's ``n`` quantile midpoints."""
    from twin.scenario.distributions import Fixed

    if isinstance(dist, Fixed):
        return [dist.value_h]
    import numpy as np

    return [float(x) for x in dist.sample((np.arange(n) + 0.5) / n)]


@dataclass(frozen=True)
class CheckpointOptimum:
    """What :func:`checkpoint_optimum` finds for a job: the interruption rates (per hour), the pause δ and
    restart R (hours), the SDC latency's values, the retention, the optimum interval and the ETTR function."""

    crash_rate_per_h: float
    sdc_rate_per_h: float
    pause_h: float
    restart_h: float
    latency_h: list[float]
    keep_last: int
    persistent_every_h: float | None
    interval_h: float
    floored: bool = False
    """The unconstrained optimum lay below the shortest interval allowed, which ``interval_h`` is then."""
    optimum_h: float = 0.0
    """The unconstrained optimum, hours (``interval_h`` unless floored)."""

    def ettr(self, interval_h: float) -> float:
        """Expected ETTR at ``interval_h`` (twin.physics.checkpoints.ettr; Daly's without SDC)."""
        return pcf.ettr(interval_h, self.pause_h, self.restart_h, self.crash_rate_per_h, self.sdc_rate_per_h,
                        self.latency_h, self.keep_last, self.persistent_every_h)

    def daly_h(self) -> float:
        """Daly's interval for all interruptions taken as crashes, hours."""
        return float(cf.daly_interval_h(self.pause_h, 1.0 / (self.crash_rate_per_h + self.sdc_rate_per_h)))


def checkpoint_optimum(ck: Any, pause_h: float, restart_h: float, crash_rate_per_h: float, sdc_rate_per_h: float,
                       detection: Any, min_interval_h: float = 0.0) -> CheckpointOptimum:
    """The optimum checkpoint interval of a job with checkpoint spec ``ck`` (its retention), pause δ, restart
    R, crash and SDC rates and the SDC ``detection`` latency distribution (None: no SDC), by
    :func:`twin.physics.checkpoints.optimal_interval_h`: Daly's without SDC, else the numeric optimum of the
    expected wall time with rollbacks to the newest kept checkpoint captured before the corruption; at least
    ``min_interval_h`` (an asynchronous checkpoint's write time: the next one cannot start sooner)."""
    lat = latency_samples_h(detection) if detection is not None and sdc_rate_per_h > 0 else [0.0]
    sdc = sdc_rate_per_h if detection is not None else 0.0
    ret = ck.retention
    tau = pcf.optimal_interval_h(pause_h, restart_h, crash_rate_per_h, sdc, lat, ret.keep_last,
                                 ret.persistent_every_h)
    return CheckpointOptimum(crash_rate_per_h, sdc, pause_h, restart_h, lat, ret.keep_last, ret.persistent_every_h,
                             max(tau, min_interval_h), tau < min_interval_h, tau)


def checkpoint_advice(sc: "Scenario") -> list[Advice]:
    """A listed job's checkpoint interval whose expected ETTR is at least ``ETTR_LOSS`` below the ETTR at
    the optimum interval (the job writing and reading alone; δ = the job's pause: the write time, or
    ``async_fraction`` of it for an asynchronous checkpoint, as the model pauses it; exponential
    interruptions at the long-run rate); and, with silent data corruption, a rolling set of kept
    checkpoints that spans less than the detection latency (:func:`retention_advice`: the listed jobs'
    checkpoint specs, the synthetic jobs' and the trace's).

    The rate is the sum of :func:`job_interruption_rates_per_h`: hardware, straggler swaps and
    drains, and SDC rollbacks. Without SDC the optimum and the ETTRs are Daly's (exact formula). An SDC
    rollback is not a crash: the model rolls the job back to its newest kept checkpoint captured *before*
    the corruption, so it loses the detection latency's work plus the time back to that checkpoint, and
    when the rolling set (``checkpoint.retention.keep_last``) spans less than the latency, back to a
    persistent checkpoint (or the start). Daly's interval does not apply then: the optimum is that of the
    expected wall time of :mod:`twin.physics.checkpoints` (Daly's exact form for the crashes, the SDC
    rollbacks' expected loss with the job's retention), found numerically."""
    wl = sc.workload
    if wl is None:
        return []
    out = []
    gpn = sc.cluster.node.gpus
    sdc = sc.health.sdc if sc.health is not None else None
    for i, job in enumerate(wl.jobs):
        ck = job.checkpoint
        if ck.interval_h is None:
            continue
        nodes = max(1, math.ceil(job.gpus / gpn))
        rows = job_interruption_rates_per_h(sc, nodes)
        rate = sum(r for _, _, r in rows)
        if not rate > 0:
            continue
        M = 1.0 / rate  # noqa: N806 (Daly's job MTBF M)
        sdc_rate = sum(r for _, effect, r in rows if effect == "rollback")
        strag_rate = sum(r for _, effect, r in rows if effect == "straggler")
        write = ck.write_time_h(wl.storage.write_gb_per_s, 1, nodes, wl.storage.node_write_gb_per_s)
        delta = ck.pause_h(write)  # the job's pause (as the model)
        read = wl.restart.read_h if wl.restart.read_h is not None else wl.storage.read_time_h(ck.size_gb, nodes)
        R = wl.restart.restart_h(read, job.gpus)
        opt = checkpoint_optimum(ck, delta, R, rate - sdc_rate, sdc_rate, sdc.detection if sdc is not None else None,
                                 write if ck.mode == "async" else 0.0)
        if opt.sdc_rate_per_h > 0:
            out.extend(retention_advice(f"workload.jobs.{i}.checkpoint", f"job {job.name!r}", ck, delta, opt.latency_h))
        tau_o = opt.interval_h
        if not tau_o > 0 or opt.ettr(tau_o) - opt.ettr(ck.interval_h) < ETTR_LOSS:
            continue
        health = ""
        if sdc_rate > 0 or strag_rate > 0:
            shares = ([f"SDC rollbacks {100 * sdc_rate / rate:.2g} %"] if sdc_rate > 0 else []) + (
                [f"straggler restarts {100 * strag_rate / rate:.2g} %"] if strag_rate > 0 else [])
            health = f" ({', '.join(shares)} of them)"
        if opt.sdc_rate_per_h > 0:
            ret = ck.retention
            lat = sum(opt.latency_h) / len(opt.latency_h)
            kept = (f"one every {ret.persistent_every_h:g} h persistent" if ret.persistent_every_h is not None
                    else "no persistent ones")
            daly = opt.daly_h()
            same = daly > 0 and abs(tau_o / daly - 1.0) <= 0.02  # a pause of 0 makes Daly's interval 0
            vs = ("which counts them as crashes, is as good here: the rolling set spans the latency" if same else
                  "which counts them as crashes, does not apply")
            what = (f"the optimum {tau_o:.3g} h with SDC rollbacks to the newest kept checkpoint captured before "
                    f"the corruption (detected {lat:.3g} h later; the last {ret.keep_last} checkpoints kept, {kept}; "
                    f"Daly's {daly:.3g} h, {vs})")
            name = "ETTR"
        else:
            what, name = f"Daly's optimum {tau_o:.3g} h", "Daly's ETTR"
        if opt.floored:
            what = (f"its write time {tau_o:.3g} h (the optimum {opt.optimum_h:.3g} h is shorter than the "
                    f"asynchronous write, so the next checkpoint could not start)")
        out.append(Advice(
            f"workload.jobs.{i}.checkpoint.interval_h",
            f"{ck.interval_h:g} h is {ck.interval_h / tau_o:.2g} × {what} for job "
            f"{job.name!r} ({nodes} nodes: interruptions every {M:.3g} h{health}, checkpoint pause "
            f"{delta * 3600:.3g} s, restart {R:.3g} h): {name} {opt.ettr(ck.interval_h):.3f} here, "
            f"{opt.ettr(tau_o):.3f} at the optimum"))
    if sdc is not None and sdc.defective_share > 0:  # the synthetic and trace jobs' shared checkpoint specs
        for key, src in (("synthetic", wl.synthetic), ("trace", wl.trace)):
            if src is not None:
                ck = src.checkpoint
                write = ck.write_time_h(wl.storage.write_gb_per_s)
                pause = ck.pause_h(write)
                out.extend(retention_advice(f"workload.{key}.checkpoint", f"every {key} job", ck, pause,
                                            latency_samples_h(sdc.detection)))
    return out


def retention_advice(where: str, who: str, ck: Any, pause_h: float, latency_h: list[float]) -> list[Advice]:
    """With SDC (detection latencies ``latency_h``, hours): a job's rolling set of kept checkpoints
    (``keep_last`` × (interval + pause)) spans less than the mean detection latency, so a rollback cannot
    return to the checkpoint before the corruption from the rolling set: it returns to a persistent
    checkpoint (losing half their spacing more on average) or, without persistent ones, to the job's
    start. ``where``: the checkpoint spec's field path; ``who``: the job(s) it names."""
    if ck.interval_h is None or not latency_h:
        return []
    ret = ck.retention
    period = ck.interval_h + pause_h
    lat = sum(latency_h) / len(latency_h)
    span = ret.keep_last * period
    if span >= lat:
        return []
    need = math.floor(lat / period) + 2
    back = (f"to a persistent checkpoint (one every {ret.persistent_every_h:g} h kept)" if ret.persistent_every_h
            is not None else "to the start of the job (no persistent checkpoints: retention.persistent_every_h null)")
    return [Advice(f"{where}.retention.keep_last",
                   f"{who} keeps its last {ret.keep_last} checkpoints, one every {period:.3g} h: they span "
                   f"{span:.3g} h, less than the {lat:.3g} h SDC detection latency, so a rollback for a corruption "
                   f"returns {back}; keep_last {need} keeps the checkpoint before it")]


def advice_lines(sc: "Scenario") -> list[str]:
    """The advisories as the commands print them: ``advice: <field>: <text>``."""
    return [f"advice: {a}" for a in advise(sc)]


def advise(sc: "Scenario") -> list[Advice]:
    """Every advisory of ``sc`` (see the module docstring); empty when its numbers raise no flag."""
    return (spares_advice(sc) + crew_advice(sc) + checkpoint_advice(sc) + unit_slip_advice(sc) + rack_advice(sc)
            + horizon_advice(sc) + timeline_advice(sc))


def timeline_advice(sc: "Scenario") -> list[Advice]:
    """A timeline's headroom after each step that reaches a shortfall (run with its consequences,
    ``timeline.on_exceed: run``; :mod:`twin.scenario.headroom`)."""
    from twin.scenario.headroom import shortfalls

    tl = sc.timeline
    if tl is None:
        return []
    out = []
    for k, found in enumerate(tl.headroom[1:], start=1):
        short = shortfalls(found)
        if short:
            step = tl.steps[k - 1]
            out.append(Advice(f"timeline.steps.{k - 1}", f"step {step.name!r} (day {step.day:g}) exceeds the hall's "
                              f"headroom: {'; '.join(short)}; it runs with its consequences (timeline.on_exceed: run)"))
    return out


def horizon_advice(sc: "Scenario") -> list[Advice]:
    """A scheduled mechanism (a maintenance window, a periodic test, planned drains, the outdoor seasons)
    whose period the horizon does not hold (:mod:`twin.scenario.horizon`)."""
    from twin.scenario.horizon import hidden_lines

    return [Advice(field, text) for field, text in hidden_lines(sc)]


def rack_advice(sc: "Scenario") -> list[Advice]:
    """A rack whose nodes' nameplate power (``cluster.node.nameplate_w``, else the node's full demand)
    exceeds ``cluster.rack.power_limit_kw`` (given, else the cooling option's, ``cooling.density``), or whose nodes' U heights exceed ``cluster.rack.u_space``."""
    cl = sc.cluster
    node, rack = cl.node, cl.rack
    if cl.pools:  # node pools (cluster.pools): the rack of the highest nameplate
        node = max((p for _, _, p in cl.node_pools()), key=lambda p: p.rated_w)
    out = []
    kw = cl.nodes_per_rack * node.rated_w / 1000.0
    if rack.power_limit_kw is not None and kw > rack.power_limit_kw:
        fit = int(rack.power_limit_kw * 1000.0 // node.rated_w)
        where = "cluster.rack.power_limit_kw"
        if "power_limit_kw" not in rack.model_fields_set and sc.cooling is not None:  # the option's density
            where = f"the {sc.cooling.type} option's density, cooling.density.{sc.cooling.type}_rack_kw"
        out.append(Advice("cluster.nodes_per_rack",
                          f"{cl.nodes_per_rack} nodes of {node.rated_w / 1000.0:g} kW nameplate draw {kw:g} kW per "
                          f"rack, above its power limit of {rack.power_limit_kw:g} kW ({where}): "
                          f"{fit} fit; the model powers and cools the racks as given"))
    u = cl.nodes_per_rack * node.u_height
    if rack.u_space is not None and u > rack.u_space:
        out.append(Advice("cluster.nodes_per_rack",
                          f"{cl.nodes_per_rack} nodes of {node.u_height}U take {u}U, above the rack's "
                          f"{rack.u_space}U (cluster.rack.u_space): {rack.u_space // node.u_height} fit"))
    return out


def unit_slip_advice(sc: "Scenario") -> list[Advice]:
    """Values that look like a unit slip (:mod:`twin.scenario.slips`): a horizon of thousands of days
    that reads as hours, a temperature above 100 °C (kelvin or Fahrenheit), a power in watts below
    10 W (kilowatts), hours given in a ``_days`` field."""
    from twin.scenario.slips import unit_slips

    doc = sc.model_dump(mode="python", exclude={"timeline": {"base"}})  # a timeline's base: the document itself
    return [Advice(field, text) for field, text in unit_slips(doc)]
