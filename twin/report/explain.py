"""What each metric of ``summary.json`` (and of every experiment's ``summaries.parquet``) means and
how it is computed: the source of ``twin explain METRIC``.

One entry per metric, or per family of metrics with a suffix (``failures.<part>``,
``power.down_node_hours.<cause>``): its unit, what it says, and how the model computes it, in the
words of the README's model sections. A test runs short replications of bundled scenarios that have
every model section (the scenarios ``docs/outputs-reference.md`` is generated from) and checks that
every metric they record is explained here, so a new metric cannot go unexplained.

Labels, formats and the direction of better (the metric catalogue of issue 30 item 2) are not here;
this module says what a number *is*.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class MetricDoc:
    """One metric, or a family of them: ``name`` may end in a placeholder (``failures.<part>``)."""

    name: str
    unit: str
    meaning: str
    computed: str

    @property
    def pattern(self) -> re.Pattern[str]:
        """The metric names this entry explains (a placeholder matches one name segment)."""
        parts = re.split(r"(<[a-z_]+>)", self.name)
        body = "".join(r"[A-Za-z0-9_]+" if p.startswith("<") else re.escape(p) for p in parts)
        return re.compile(f"^{body}$")

    @property
    def prefix(self) -> str:
        """The fixed part before a placeholder ('' for a plain name)."""
        return self.name.split("<", 1)[0] if "<" in self.name else ""


_M = MetricDoc
METRICS: tuple[MetricDoc, ...] = (
    # ------------------------------------------------------------------ the run
    _M("horizon_h", "h", "the simulated horizon", "horizon_days × 24"),
    _M("nodes", "nodes", "installed nodes, hot spares included", "cluster.racks × cluster.nodes_per_rack"),
    _M("gpus_installed", "GPUs", "installed GPUs", "nodes × cluster.node.gpus"),
    _M("events_processed", "events", "simulation events the replication processed (a cost measure, not a result)",
       "counted by the engine"),
    # ------------------------------------------------------------------ reliability
    _M("node_availability", "fraction of time", "mean over nodes of the share of the horizon each node is up",
       "Σ over nodes of up hours / (nodes × horizon_h); a node is down from the failure that takes it down "
       "(or a trip, a drain, a power shortfall) until it is back, burn-in included"),
    _M("fleet_capacity_availability", "fraction of GPU-hours",
       "available GPU-hours / installed GPU-hours (capped and rail-cut nodes count as available)",
       "time-weighted mean of the nodes up (the capacity table) / nodes"),
    _M("node_down_hours", "node-hours", "node-hours down, each down period once, under the cause that started it",
       "Σ over node_intervals with state down of (end_h − start_h)"),
    _M("node_down_hours.<part>", "node-hours",
       "node-hours of the down periods a part type started (its failure, the drain for its repair, burn-in; for "
       "the PSUs and PDUs the power chain's shortfalls)",
       "the node_intervals rows whose cause is that part; with the other causes they add up to node_down_hours"),
    _M("node_cut_hours", "node-hours", "node-hours a node was up but cut off the compute fabric",
       "Σ over node_intervals with state cut of (end_h − start_h)"),
    _M("failures", "count", "hardware and transient failures of every part type over the horizon",
       "Σ of failures.<part>"),
    _M("failures.<part>", "count", "failures of one part type (node, rack, fabric or facility part)",
       "counted when a unit's drawn time to failure elapses (or its aged life is used up)"),
    _M("stockouts", "count", "repairs that found no spare part on the shelf", "Σ of stockouts.<part>"),
    _M("stockouts.<part>", "count", "repairs of this part type that found no spare on the shelf and waited for a delivery",
       "counted by the part's (s, Q) inventory when a repair asks for a spare and the stock is 0"),
    _M("stockout_share.<part>", "fraction of demands", "share of this part type's spare demands that found no stock",
       "stockouts.<part> / spare demands (NaN without demands)"),
    _M("crew_utilisation.<pool>", "fraction of on-shift hours", "how busy a crew pool's technicians were",
       "hands-on repair hours / (technicians × on-shift hours of the pool's calendar)"),
    _M("repair.wait_detect_h", "h", "mean time from a failure to its repair ticket (detection)",
       "mean over tickets of detected_h − fail_h"),
    _M("repair.wait_spare_h", "h", "mean time a ticket waited for a spare part",
       "mean over tickets of spare_h − detected_h"),
    _M("repair.wait_crew_h", "h", "mean time a ticket waited for a technician (queue and off-shift hours)",
       "mean over tickets of start_h − spare_h"),
    _M("repair.hands_on_h", "h", "mean time a repair held a technician", "mean over tickets of end_h − start_h"),
    _M("repair.burn_in_h", "h", "mean burn-in after a repair before the node is back",
       "mean over tickets of back_h − end_h"),
    _M("repair.remediated", "count", "done tickets cleared by the ladder's automated remediation (reset, reboot, "
       "row remap: no technician, no spare)", "done tickets with rung 1"),
    _M("repair.replaced", "count", "done tickets cleared by a technician's replacement with a spare",
       "done tickets with rung 2"),
    _M("repair.escalated", "count", "done tickets whose replacement did not clear the fault and that were "
       "escalated (deep repair, vendor visit)", "done tickets with rung 3"),
    _M("repair.remediation_h", "h", "mean time of the automated remediation attempts",
       "mean over tickets that tried remediation of remediated_h − detected_h"),
    _M("repair.escalation_h", "h", "mean time of the escalations", "mean over escalated tickets of their "
       "escalation time"),
    _M("repair.wait_crew_h.<class>", "h", "mean wait for a technician of tickets of one impact class: none "
       "(0 GPUs returned: lost redundancy), node (up to one node's GPUs), multi (more: a rack, zone or loop)",
       "mean over tickets of the class of start_h − spare_h; the class from impact_gpus at dispatch"),
    _M("rma.sent.<part>", "count", "replaced parts of this type sent to the vendor through RMA",
       "replacements of a part whose spares have rma_turnaround_days"),
    _M("rma.at_vendor_mean.<part>", "count", "mean number of parts of this type at the vendor (the RMA pipeline)",
       "time-weighted mean of the level rma_at_vendor.<part> over the horizon"),
    _M("spares_scrapped.<part>", "count", "replaced parts that did not come back from RMA and were bought anew",
       "RMA sends × (1 − rma_return_share), drawn per part"),
    # ------------------------------------------------------------------ workload
    _M("useful_gpu_hours", "GPU-h", "work kept by the jobs: progress not lost by the horizon",
       "Σ over jobs of kept progress (ideal hours) × GPUs, progress-weighted (an hour at speed 0.8 counts 0.8)"),
    _M("goodput", "fraction of installed GPU-hours", "useful GPU-hours / installed GPU-hours",
       "useful_gpu_hours / (nodes × GPUs per node × horizon_h), hot spares included; goodput.* break it down "
       "and sum to 1"),
    _M("goodput.useful", "fraction of installed GPU-hours", "the useful share (equal to goodput)",
       "useful_gpu_hours / installed GPU-hours"),
    _M("goodput.lost", "fraction of installed GPU-hours", "progress made and later lost to an interruption",
       "lost_gpu_hours / installed GPU-hours"),
    _M("goodput.checkpoint", "fraction of installed GPU-hours", "time jobs were paused writing checkpoints",
       "checkpoint_gpu_hours / installed GPU-hours"),
    _M("goodput.restart", "fraction of installed GPU-hours",
       "time jobs spent restarting (detection, rescheduling, reading the checkpoint, warm-up)",
       "restart_gpu_hours / installed GPU-hours"),
    _M("goodput.slowdown", "fraction of installed GPU-hours",
       "allocated running time not turned into progress (thermal throttling, power capping, a slow fabric)",
       "(running GPU-hours − progress GPU-hours made) / installed GPU-hours"),
    _M("goodput.down", "fraction of installed GPU-hours", "GPU-hours of nodes down",
       "node-hours down × GPUs per node / installed GPU-hours"),
    _M("goodput.idle", "fraction of installed GPU-hours", "GPU-hours up but not allocated to a job",
       "1 − the other goodput shares"),
    _M("utilisation", "fraction of installed GPU-hours", "GPU-hours allocated to jobs (running, checkpointing, restarting)",
       "(running + checkpoint + restart GPU-hours) / installed GPU-hours"),
    _M("lost_gpu_hours", "GPU-h", "progress lost to interruptions (made since the last checkpoint)",
       "Σ over jobs of lost hours × GPUs"),
    _M("checkpoint_gpu_hours", "GPU-h", "GPU-hours jobs were paused for checkpoint writes",
       "Σ over jobs of checkpoint hours × GPUs (an asynchronous checkpoint counts its stall)"),
    _M("restart_gpu_hours", "GPU-h", "GPU-hours jobs spent restarting after interruptions",
       "Σ over jobs of restart hours × GPUs (detection_h + reschedule_h + read time + warmup_h per restart)"),
    _M("jobs_submitted", "jobs", "jobs submitted over the horizon", "listed jobs, synthetic arrivals and trace rows"),
    _M("jobs_completed", "jobs", "jobs that finished their work by the horizon", "jobs in state done"),
    _M("interruptions", "count", "job interruptions of every cause",
       "an allocated node going down (or cut, for a multi-node job), a transient fault on one, or a planned drain"),
    _M("interruptions.planned", "count", "interruptions by planned drains", "interruptions flagged planned"),
    _M("interruptions.unplanned", "count", "interruptions by failures, trips, cuts and faults",
       "interruptions not flagged planned"),
    _M("interruptions.<cause>", "count", "interruptions by one cause (a part type such as gpu, software or nic; "
       "a fabric unit such as optic or leaf; link_flap, trunk_flap; planned)",
       "the jobs table's interruption rows with that cause"),
    _M("queue_wait_h.mean", "h", "mean time from a job's submission to its first start",
       "mean over jobs submitted after workload.warmup_h that started"),
    _M("queue_wait_h.jobs", "jobs", "jobs counted in queue_wait_h.mean", "jobs submitted after warm-up that started"),
    _M("ettr.max_job", "fraction of wall time",
       "effective time to train of the largest job: kept work over the wall time it took",
       "kept work in ideal hours / wall time from its first start to its completion (or the horizon)"),
    _M("max_job.kept_h", "h", "kept work of the largest job, in ideal hours", "the job's progress hours"),
    _M("max_job.interruptions", "count", "interruptions of the largest job", "its interruption rows"),
    # ------------------------------------------------------------------ thermal and energy
    _M("thermal.throttled_gpu_hours", "GPU-h", "busy GPU-hours spent thermally throttled (capped below demand)",
       "integrated exactly between events from the RC model's closed-form threshold crossings"),
    _M("thermal.speed_loss_gpu_hours", "GPU-h", "busy GPU-hours lost to thermal throttling",
       "Σ over busy GPU-hours of (1 − speed), speed = ((P_cap − P_idle)/(P_d − P_idle))^α"),
    _M("thermal.mean_speed", "fraction", "mean thermal speed of busy GPUs", "Σ speed × busy hours / busy hours"),
    _M("thermal.trips", "count", "thermal trips of nodes (every reason)", "rows of the thermal_trips table"),
    _M("thermal.trips.<reason>", "count", "thermal trips by reason: gpu_shutdown (a GPU's steady state at minimum "
       "power above shutdown_c), inlet (inlet above max_inlet_c) or no_fan", "thermal_trips rows with that reason"),
    _M("thermal.trip_node_hours", "node-hours", "node-hours down after thermal trips",
       "Σ over trips of (end_h or the horizon − start_h)"),
    _M("thermal.inlet_above_27c_node_hours", "node-hours",
       "node-hours with the inlet above 27 °C, the ASHRAE recommended limit (air cooling)",
       "integrated from the zones' supply temperature steps"),
    _M("thermal.gpu_temp_p<q>_c", "°C", "a percentile (p50, p95, p99) of GPU-hours by steady-state temperature",
       "from the histogram of GPU-hours in 1 °C bins, the bin's middle, at most thermal.gpu_temp_max_c"),
    _M("thermal.gpu_temp_max_c", "°C", "the hottest temperature any GPU reached", "maximum over the replication"),
    _M("cooling.zone_over_capacity_hours", "h", "hours an air zone's heat exceeded its healthy, derated CRAH capacity",
       "Σ over zones of the hours with Q > Q_cap"),
    _M("cooling.loop_no_flow_hours", "h", "hours a liquid loop had no coolant flow (CDUs or pumps failed)",
       "Σ over loops of the hours without flow"),
    _M("energy.it_kwh", "kWh", "IT energy", "exact sum of the piecewise-constant site IT power over time"),
    _M("energy.cooling_kwh", "kWh", "cooling energy",
       "heat × (fan/pump kW per kW + 1/COP unless free cooling), COP = max(2, 5 − 0.1·(T_out − 25))"),
    _M("energy.losses_kwh", "kWh", "UPS and transformer losses",
       "facility − IT − cooling energy, with facility = (IT/η_UPS + cooling)/η_transformer"),
    _M("energy.facility_kwh", "kWh", "facility energy: IT, cooling and losses", "(IT/η_UPS + cooling)/η_transformer"),
    _M("energy.peak_it_kw", "kW", "peak IT power", "maximum of the site IT power level"),
    _M("energy.peak_facility_kw", "kW", "peak facility power", "maximum of the facility power"),
    _M("energy.free_cooling_hours.<plant>", "h", "hours a plant (air or liquid) cooled for free",
       "hours with the outdoor temperature ≤ supply − approach"),
    _M("pue", "ratio", "power usage effectiveness", "energy.facility_kwh / energy.it_kwh (daily in pue_daily)"),
    # ------------------------------------------------------------------ power
    _M("power.down_node_hours", "node-hours", "node-hours the power chain held nodes down (also while down for "
       "another reason)", "Σ of power.down_node_hours.<cause>"),
    _M("power.down_node_hours.<cause>", "node-hours", "node-hours held down by one power cause: psu, pdu, utility, "
       "generator_start or feed", "integrated over each node's power state"),
    _M("power.capped_gpu_hours", "GPU-h", "GPU-hours run power-capped below demand (a lost PSU or feed, a site cap)",
       "integrated between events"),
    _M("power.capped_node_hours", "node-hours", "node-hours run power-capped", "integrated between events"),
    _M("power.site_capped_gpu_hours", "GPU-h", "GPU-hours capped by the site cap (power.site_cap_w)",
       "integrated between events"),
    _M("power.site_cap_exceeded_hours", "h", "hours the site's demand exceeded the site cap",
       "integrated between events"),
    _M("power.it_energy_kwh", "kWh", "IT energy as the power chain sees it", "Σ of IT power × time, exactly"),
    _M("power.ups_loss_kwh", "kWh", "energy lost in the UPS", "(1 − efficiency) × energy through each UPS"),
    _M("power.peak_w", "W", "peak site IT power", "maximum of the site_power_w level"),
    _M("power.mean_w", "W", "mean site IT power", "time-weighted mean of the site_power_w level"),
    _M("power.max_step_w", "W", "largest instantaneous step of site power", "largest jump of the site_power_w level"),
    _M("power.max_ramp_w_per_h", "W/h", "largest ramp of site power over an hour",
       "largest change of the site_power_w level within one hour"),
    _M("power.utility_outages", "count", "utility outage events (a site-wide outage counts once)",
       "outages drawn from utility.outages_per_year, and injected ones"),
    _M("power.feed_outages", "count", "feeds taken off utility (one per feed an outage reached)",
       "rows of the power_outages table"),
    _M("power.outages_reaching_load", "count", "feed outages that reached the load (UPS empty before the generator)",
       "power_outages rows with dead_h > 0"),
    _M("power.generator_starts", "count", "generator start attempts", "one per feed outage with a generator"),
    _M("power.generator_start_failures", "count", "generator starts that failed", "drawn with the start failure probability"),
    _M("power.feed_dead_hours", "h", "hours feeds were dead (no utility, UPS or generator)",
       "Σ over power_feeds rows in state dead of (end_h − start_h)"),
    # ------------------------------------------------------------------ network
    *(_M(f"network.{k}", "units", f"the fabric's {what}", "from the topology (nodes, rails, nodes_per_leaf, uplinks, "
         "optics_per_link)")
      for k, what in (("access_links", "node-to-leaf links"), ("links", "links, access and trunk"),
                      ("optics", "optical transceivers"), ("leaves", "leaf switches"), ("spines", "spine switches"),
                      ("groups", "leaf groups (nodes_per_leaf nodes each)"), ("trunk_links", "leaf-to-spine links"))),
    _M("network.bisection_fraction", "fraction of time", "time-weighted share of leaf–spine capacity in service",
       "time-weighted mean of the healthy uplink share"),
    _M("network.bisection_fraction.min", "fraction", "the lowest share of leaf–spine capacity in service",
       "minimum of the bisection level"),
    _M("network.spine_availability", "fraction of time", "time-weighted share of spines up",
       "time-weighted mean of healthy spines / spines"),
    _M("network.link_flaps", "count", "access-link flaps", "drawn at link_flaps_per_link_per_year per link"),
    _M("network.link_flaps_skipped", "count", "flaps drawn on links already down (no effect)", "counted, not applied"),
    _M("network.trunk_flaps", "count", "leaf–spine link flaps (when enabled)",
       "drawn at trunk_flaps_per_link_per_year per uplink"),
    _M("network.cut_node_hours", "node-hours", "node-hours nodes were cut off the fabric", "Σ of network.cut_node_hours.<cause>"),
    _M("network.cut_node_hours.<cause>", "node-hours", "node-hours cut by one fabric cause (optic, leaf, nic, ...)",
       "integrated over each node's cut periods"),
    # ------------------------------------------------------------------ cost
    _M("cost.total", "currency", "total cost over the horizon", "capital + energy + repair parts + labour + spares holding"),
    _M("cost.per_useful_gpu_hour", "currency per GPU-h", "cost of one useful GPU-hour", "cost.total / useful_gpu_hours"),
    _M("cost.capital", "currency", "capital cost over the horizon",
       "each purchase P amortised as an annuity and prorated: P·CRF·T, CRF = r/(1 − (1+r)^−n), T = days/365"),
    _M("cost.capital.<group>", "currency", "capital cost of one group: compute, cooling, power, network, spares",
       "the costs table's capital rows of that group"),
    _M("cost.capital_purchase", "currency", "purchase price of everything bought (not amortised)",
       "Σ of the costs table's purchase column"),
    _M("cost.energy", "currency", "energy cost over the horizon",
       "Σ P_IT·PUE·price·Δt over the piecewise-constant site IT power (flat or time-of-use price)"),
    _M("cost.energy_kwh", "kWh", "facility energy the energy cost is computed from", "IT energy × PUE"),
    _M("cost.repair_parts", "currency", "parts consumed by repairs", "repairs × part price (costs.parts)"),
    _M("cost.labour", "currency", "technician cost", "technicians × on-shift hours × rate"),
    _M("cost.spares_holding", "currency", "cost of holding spare stock",
       "holding rate (25 %/yr) × part price × mean units on hand × T"),
)


def lookup(name: str) -> MetricDoc | None:
    """The entry that explains metric ``name`` (an exact name before a family), or None."""
    for doc in METRICS:
        if doc.name == name:
            return doc
    matches = [doc for doc in METRICS if "<" in doc.name and doc.pattern.match(name)]
    return max(matches, key=lambda d: len(d.prefix)) if matches else None  # the most specific family


def nearest(name: str, n: int = 3) -> list[str]:
    """The metric names (or families) closest to an unknown ``name``: those it begins or is a segment
    of (``ettr`` → ``ettr.max_job``), then difflib over the plain names and, for a dotted ``name``, over
    each family with its last segment put in the placeholder (``failure.gpu`` → ``failures.gpu``)."""
    names = [doc.name for doc in METRICS]
    hits = [c for c in names if name and (c.startswith(name) or name in c.split("."))]
    candidates = list(names)
    if "." in name:
        last = name.rsplit(".", 1)[-1]
        candidates += [re.sub(r"<[a-z_]+>", last, c) for c in names if "<" in c]
    close = difflib.get_close_matches(name, candidates, n=n, cutoff=0.6)
    return list(dict.fromkeys(hits + close))[:n]


def explain_lines(name: str) -> list[str]:
    """What ``twin explain NAME`` prints; raises KeyError for a name no entry explains."""
    doc = lookup(name)
    if doc is None:
        raise KeyError(name)
    family = f" (one of {doc.name})" if doc.name != name else ""
    return [f"{name}{family}", f"  unit:     {doc.unit}", f"  means:    {doc.meaning}",
            f"  computed: {doc.computed}"]
