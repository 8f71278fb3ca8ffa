"""Advisories: what a scenario's own numbers imply, in closed form, before anything is simulated.

A scenario can be valid and still describe a regime its author did not mean: spare parts reordered
below the demand of their lead time (every replenishment cycle runs out, nodes wait weeks for parts),
a crew offered more repair work than it can do (the repair queue grows without bound), a checkpoint
interval far from the Young/Daly optimum of the job's own failure rate. The simulator runs such
scenarios faithfully; these checks say, in one line each, what to expect and why, so that a number
such as a low ETTR is not mistaken for a property of the cluster. They never change a result.

Rates are long-run renewal rates, units / mean time to failure, of the node parts, rack parts and
fabric units (facility units, a few per site, are left out: their share of the demand is negligible). Burn-in does
not hold a technician (the model releases the crew before it), so a crew's offered load is
Σ rate × mean hands-on repair time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from twin.limits import mean_time_h
from twin.physics import closed_forms as cf
from twin.units import DAYS_PER_WEEK, HOURS_PER_DAY, HOURS_PER_YEAR, Calendar

if TYPE_CHECKING:  # pragma: no cover
    from twin.scenario.schema import Scenario

SAFETY_Z = 2.33
"""Standard normal quantile of the suggested reorder point's cycle service level (99 %)."""
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


def repair_demand_per_h(sc: "Scenario") -> dict[str, tuple[float, Any]]:
    """Failures per hour that open a repair ticket, by part type, with the part's spec: node parts
    (units = count × nodes; transient faults open no ticket), rack parts (count × racks) and fabric
    units."""
    n = sc.cluster.n_nodes
    out: dict[str, tuple[float, Any]] = {}
    for name, part in sc.cluster.node.parts.items():
        if part.effect != "transient":
            m = mean_time_h(part.failure)
            out[name] = (part.count * n / m if m > 0 else math.inf, part)
    for name, part in sc.cluster.rack_parts.items():
        m = mean_time_h(part.failure)
        out[name] = (part.count * sc.cluster.racks / m if m > 0 else math.inf, part)
    net = sc.network
    if net is not None:
        counts = net.counts(n)
        units = {"optic": counts["optics"], "leaf": counts["leaves"], "spine": counts["spines"]}
        for name, part in net.facility_parts().items():
            m = mean_time_h(part.failure)
            out[name] = (units[name] / m if m > 0 else math.inf, part)
    return out


def spares_advice(sc: "Scenario") -> list[Advice]:
    """A reorder point below the mean demand over the lead time: stock-outs in most cycles."""
    demand = repair_demand_per_h(sc)
    out = []
    for name, sp in sc.maintenance.spares.items():
        if name not in demand:
            continue
        rate_h = demand[name][0]
        lead = rate_h * sp.lead_time_days * HOURS_PER_DAY
        s = sp.reorder_point if sp.reorder_point is not None else sp.stock - 1
        if s < lead:
            suggest = math.ceil(lead + SAFETY_Z * math.sqrt(lead))
            out.append(Advice(
                f"maintenance.spares.{name}.reorder_point",
                f"{s} is below the mean demand over the {sp.lead_time_days:g}-day lead time ({lead:.1f} = "
                f"{rate_h * HOURS_PER_DAY:.2f} failures/day): expect stock-outs in most replenishment cycles, "
                f"nodes waiting for parts and jobs waiting for nodes; about {suggest} gives a 99 % cycle service "
                f"level (mean + {SAFETY_Z} Poisson sd)"))
    return out


def crew_advice(sc: "Scenario") -> list[Advice]:
    """A crew offered at least as much work as its on-shift capacity: the repair queue is unstable."""
    crews = sc.maintenance.crews
    default = next(iter(crews))
    load = {name: 0.0 for name in crews}
    for rate_h, part in repair_demand_per_h(sc).values():
        pool = part.repair.crew or default
        if pool in load:
            load[pool] += rate_h * mean_time_h(part.repair.time)
    out = []
    week_h = DAYS_PER_WEEK * HOURS_PER_DAY
    for name, shift in crews.items():
        cal = Calendar(shift.shift, shift.start_hour, shift.end_hour, list(shift.workdays))
        capacity = shift.count * cal.on_shift_hours(week_h) / week_h  # technicians available on average
        if load[name] >= capacity:
            out.append(Advice(
                f"maintenance.crews.{name}.count",
                f"repairs offer {load[name]:.2f} technicians of work on average (failures/h × mean hands-on time), "
                f"the pool has {capacity:.2f} on shift on average: the repair queue grows without bound over the "
                f"horizon (utilisation ≥ 1)"))
    return out


def job_interruption_rates_per_h(sc: "Scenario", n_nodes: int) -> list[tuple[str, str, float]]:
    """(source, effect, interruptions per hour) of a job on ``n_nodes`` nodes: every node part that
    stops a job (node down, link down, transient fault), the node_down rack parts of the fewest racks
    that hold it, and the fabric (access-link optics, leaf
    switches of its groups, link flaps, and for a job spanning several leaf groups the flaps of its
    leaves' uplinks). Redundant parts stop a node only after several failures and
    are left out. Long-run rates: units / mean time to failure."""
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
    return rows


def checkpoint_advice(sc: "Scenario") -> list[Advice]:
    """A listed job's checkpoint interval whose ETTR, by Daly's exact formula for the job's own
    interruption rate, is at least ``ETTR_LOSS`` below Daly's ETTR at his optimum interval (the job
    writing and reading alone; δ = the job's pause: the write time, or ``async_fraction`` of it for an
    asynchronous checkpoint, as the model pauses it; exponential interruptions at the long-run
    rate)."""
    wl = sc.workload
    if wl is None:
        return []
    out = []
    gpn = sc.cluster.node.gpus
    for i, job in enumerate(wl.jobs):
        ck = job.checkpoint
        if ck.interval_h is None:
            continue
        nodes = max(1, math.ceil(job.gpus / gpn))
        rate = sum(r for _, _, r in job_interruption_rates_per_h(sc, nodes))
        if not rate > 0:
            continue
        M = 1.0 / rate
        write = ck.write_time_h(wl.storage.write_gb_per_s)
        delta = write if ck.mode == "sync" else ck.async_fraction * write  # the job's pause (as the model)
        read = wl.restart.read_h if wl.restart.read_h is not None else ck.size_gb / wl.storage.read_gb_per_s / 3600.0
        R = wl.restart.detection_h + wl.restart.reschedule_h + read + wl.restart.warmup_h
        tau_d = float(cf.daly_interval_h(delta, M))

        def ettr(tau: float) -> float:
            return tau / float(cf.daly_expected_wall_time_h(tau, tau, delta, R, M))

        if not tau_d > 0 or ettr(tau_d) - ettr(ck.interval_h) < ETTR_LOSS:
            continue
        out.append(Advice(
            f"workload.jobs.{i}.checkpoint.interval_h",
            f"{ck.interval_h:g} h is {ck.interval_h / tau_d:.2g} × Daly's optimum {tau_d:.3g} h for job "
            f"{job.name!r} ({nodes} nodes: interruptions every {M:.3g} h, checkpoint pause {delta * 3600:.3g} s, "
            f"restart {R:.3g} h): Daly's ETTR {ettr(ck.interval_h):.3f} here, {ettr(tau_d):.3f} at the optimum"))
    return out


def advice_lines(sc: "Scenario") -> list[str]:
    """The advisories as the commands print them: ``advice: <field>: <text>``."""
    return [f"advice: {a}" for a in advise(sc)]


def advise(sc: "Scenario") -> list[Advice]:
    """Every advisory of ``sc`` (see the module docstring); empty when its numbers raise no flag."""
    return spares_advice(sc) + crew_advice(sc) + checkpoint_advice(sc)
