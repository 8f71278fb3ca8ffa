"""The metric catalogue (issue 30, item 2): what every metric of a replication is called, its unit,
which way is better, its group and how a person reads it.

Every human-facing table and figure names a metric by its :func:`label` and prints its value with
:func:`format_value` (percent, k/M/G with the unit, money in the scenario's currency, hours, °C; never
scientific notation); machine outputs (parquet, JSON) keep the raw keys and values.

A metric is found by its exact key, or by a pattern whose ``*`` stands for one dotted suffix
(a part type, a cause, a crew pool): ``failures.*`` matches ``failures.gpu`` and labels it
"failures: gpu". A metric missing here fails ``tests/test_metric_catalogue.py``, which says which
:class:`Metric` line to add. ``python -m twin.docs`` writes ``docs/metrics-reference.md`` from it.
"""

from __future__ import annotations

import fnmatch
import math
from dataclasses import dataclass
from typing import Iterable, Sequence

GROUPS: tuple[str, ...] = ("availability", "throughput", "thermal", "power", "network", "storage", "energy", "cost",
                           "scale")
"""Groups in report order. ``scale`` holds the size of the run (nodes, GPUs, horizon): no direction,
left out of comparisons' forest plots."""

FORMATS = ("percent", "count", "hours", "days", "energy_kwh", "power_w", "power_kw", "ramp_w_per_h",
           "temperature_c", "money", "ratio")
"""How a value prints. ``percent``: a fraction shown ×100 with ``%`` (a difference in percentage points,
``pp``); ``count``/``hours``/``days``: k/M with the unit; ``energy_kwh``: kWh, MWh, GWh; ``power_w``:
W, kW, MW; ``money``: the scenario's currency with k/M/bn; ``ratio``: a plain number (the PUE)."""


@dataclass(frozen=True)
class Metric:
    """One catalogue entry. ``key`` is an exact metric key or a pattern with ``*`` for one dotted
    suffix; ``label`` may hold ``{}`` for that suffix. ``direction``: +1 higher is better, −1 lower
    is better, 0 no preferred direction. ``unit``: what one value is in (for ``money`` the currency
    is the scenario's; for ``percent`` the value is a fraction)."""

    key: str
    label: str
    unit: str
    direction: int
    group: str
    fmt: str
    meaning: str

    def __post_init__(self) -> None:
        if self.group not in GROUPS:
            raise ValueError(f"{self.key}: group {self.group!r} not in {GROUPS}")
        if self.fmt not in FORMATS:
            raise ValueError(f"{self.key}: format {self.fmt!r} not in {FORMATS}")
        if self.direction not in (-1, 0, 1):
            raise ValueError(f"{self.key}: direction must be -1, 0 or +1")


M = Metric
CATALOGUE: tuple[Metric, ...] = (
    # ---- availability: is the hardware there
    M("node_availability", "node availability", "fraction", +1, "availability", "percent",
      "time-weighted share of nodes up (not failed, not in repair, not cut off by power or cooling)"),
    M("fleet_capacity_availability", "fleet capacity availability", "fraction", +1, "availability", "percent",
      "time-weighted share of the fleet's GPU capacity usable by jobs"),
    M("failures", "failures", "failures", -1, "availability", "count",
      "hardware and transient failures over the horizon, all part types"),
    M("failures.*", "failures: {}", "failures", -1, "availability", "count", "failures of one part type"),
    M("node_down_hours", "node-hours down", "node-h", -1, "availability", "hours",
      "node-hours spent down (failed, waiting for spares or crews, in repair or burn-in)"),
    M("node_down_hours.*", "node-hours down: {}", "node-h", -1, "availability", "hours",
      "node-hours down charged to one cause"),
    M("stockouts", "spare stock-outs", "stock-outs", -1, "availability", "count",
      "repairs that found no spare part on the shelf"),
    M("stockouts.*", "spare stock-outs: {}", "stock-outs", -1, "availability", "count",
      "stock-outs of one part type"),
    M("stockout_share.*", "stock-out share: {}", "fraction", -1, "availability", "percent",
      "share of one part type's spare demands that found no spare"),
    M("repair.wait_detect_h", "repair: detection", "h", -1, "availability", "hours",
      "mean hours from failure to detection, per repair ticket"),
    M("repair.wait_spare_h", "repair: waiting for parts", "h", -1, "availability", "hours",
      "mean hours from detection to a spare in hand, per repair ticket"),
    M("repair.wait_crew_h", "repair: waiting for a crew", "h", -1, "availability", "hours",
      "mean hours from spare to a technician starting, per repair ticket"),
    M("repair.hands_on_h", "repair: hands-on", "h", -1, "availability", "hours",
      "mean hands-on repair hours per ticket"),
    M("repair.burn_in_h", "repair: burn-in", "h", -1, "availability", "hours",
      "mean burn-in hours after a repair, per ticket"),
    M("crew_utilisation.*", "crew utilisation: {}", "fraction", 0, "availability", "percent",
      "hands-on hours over on-shift hours of one crew pool (above 100 % when repairs run past a shift)"),
    # the repair ladder and vendor RMA (issue 25)
    M("repair.remediated", "repairs cleared by remediation", "tickets", 0, "availability", "count",
      "tickets cleared by automated remediation (reset, reboot, row remap): no technician, no spare"),
    M("repair.replaced", "repairs by replacement", "tickets", 0, "availability", "count",
      "tickets cleared by a technician's replacement with a spare"),
    M("repair.escalated", "repairs escalated", "tickets", -1, "availability", "count",
      "tickets whose replacement did not clear the fault (deep repair, vendor visit)"),
    M("repair.remediation_h", "repair: remediation", "h", -1, "availability", "hours",
      "mean hours of an automated remediation attempt"),
    M("repair.escalation_h", "repair: escalation", "h", -1, "availability", "hours", "mean hours of an escalation"),
    M("repair.wait_crew_h.*", "repair: waiting for a crew, impact {}", "h", -1, "availability", "hours",
      "mean hours a ticket of one impact class (none, node, multi) waited for a technician"),
    M("rma.sent.*", "parts sent to RMA: {}", "parts", 0, "availability", "count",
      "replaced parts of one type sent to the vendor"),
    M("rma.at_vendor_mean.*", "parts at the vendor: {}", "parts", -1, "availability", "count",
      "time-weighted mean number of parts of one type in the RMA pipeline"),
    M("spares_scrapped.*", "parts scrapped: {}", "parts", -1, "availability", "count",
      "replaced parts of one type that did not come back from RMA"),
    # common-cause and latent failures (issue 24)
    M("ccf_events.*", "common-cause events: {}", "events", -1, "availability", "count",
      "common-cause events of one unit type's groups (each fails every working unit of its group)"),
    M("ccf_failures.*", "common-cause failures: {}", "failures", -1, "availability", "count",
      "unit failures caused by common-cause events of one unit type"),
    M("node_down_hours_ccf.*", "node-hours down, common cause: {}", "node-h", -1, "availability", "hours",
      "node-hours down started by a common-cause event of one unit type"),
    M("ccf_unit_hours.*", "unit-hours down, common cause: {}", "unit-h", -1, "availability", "hours",
      "hours site units of one type spent failed by common-cause events (from the event to their repair)"),
    M("latent_found_test.*", "latent failures found at a test: {}", "failures", 0, "availability", "count",
      "silent failures of one unit type found by a periodic test"),
    M("latent_found_demand.*", "latent failures found on demand: {}", "failures", -1, "availability", "count",
      "silent failures of one unit type found when a demand called on the unit"),
    # not all nodes are equal (issue 26)
    M("health.lemons", "lemon nodes", "nodes", -1, "availability", "count",
      "nodes with more failures than a frailty-free node would have at the 99th percentile (or quarantined)"),
    M("health.lemon_down_share", "lemon nodes' share of downtime", "fraction", 0, "availability", "percent",
      "share of node-hours down that fell on lemon nodes"),
    M("health.quarantines", "quarantines", "quarantines", 0, "availability", "count",
      "nodes taken out for a deep repair after repeated failures"),
    M("health.frailty_max", "largest frailty", "multiplier", 0, "availability", "ratio",
      "the largest node failure-rate multiplier drawn"),
    M("health.infant_defects", "infant defects", "parts", -1, "availability", "count",
      "replaced parts that were defective (early-life failures)"),
    # ---- throughput: what the jobs got out of it
    M("goodput", "goodput", "fraction", +1, "throughput", "percent",
      "useful GPU-hours over installed GPU-hours"),
    M("goodput.useful", "goodput: useful work", "fraction", +1, "throughput", "percent",
      "share of installed GPU-hours spent on work that was kept"),
    M("goodput.lost", "goodput lost at interruptions", "fraction", -1, "throughput", "percent",
      "share of installed GPU-hours of work lost at interruptions (progress since the last checkpoint)"),
    M("goodput.*", "goodput lost to: {}", "fraction", -1, "throughput", "percent",
      "share of installed GPU-hours lost to one mechanism (the shares add up to 1 with useful work)"),
    M("goodput.mechanism.*", "goodput lost to (mechanism): {}", "fraction", -1, "throughput", "percent",
      "share of installed GPU-hours lost to one mechanism, from its own events (thermal slowdown, fail-slow "
      "parts (effect degraded), power cap, fabric slowdown, data stall, storage outage, thermal trips, power "
      "outages, maintenance, checkpoints, restarts, reconfiguration, idle; with NVLink domains also NVLink "
      "slowdown and placement); with goodput they sum to 1"),
    M("goodput.mechanism.failure.*", "goodput lost to failures of: {}", "fraction", -1, "throughput", "percent",
      "share of installed GPU-hours lost to failures of one node part type (down time and lost work)"),
    M("goodput.slowdown.*", "goodput lost to slowdown: {}", "fraction", -1, "throughput", "percent",
      "the running slowdown split by the sequential rule: (with NVLink domains: placement first), thermal "
      "speed, then fail-slow parts (fail_slow: parts with effect degraded), then power caps, (then NVLink "
      "switch trays down), then the fabric, then the training-data reads (data: a share below the demand; "
      "storage_outage: stalled in an outage)"),
    M("step.share.compute", "step share: compute", "fraction", +1, "throughput", "percent",
      "share of the layout jobs' step time spent computing at full speed, over their running hours "
      "(GPU-weighted)"),
    M("step.share.*", "step share: {}", "fraction", -1, "throughput", "percent",
      "share of the layout jobs' step time spent on one non-compute component over their running hours "
      "(GPU-weighted): tp collectives, pp sends, pipeline bubble, exposed dp communication, gradient "
      "compression, throttling"),
    M("step.mean_s", "mean step time", "s", -1, "throughput", "ratio",
      "the layout jobs' step time averaged over their running hours (GPU-weighted), seconds"),
    M("step.ideal_s", "failure-free step time", "s", 0, "throughput", "ratio",
      "the layout jobs' step time at full speed with a healthy fabric and NVLink (GPU-weighted), seconds"),
    M("goodput.down.*", "goodput lost to nodes down: {}", "fraction", -1, "throughput", "percent",
      "installed GPU-hours of nodes down, by the cause that took them down"),
    M("goodput.lost.*", "goodput lost at interruptions: {}", "fraction", -1, "throughput", "percent",
      "work lost at interruptions (progress since the last checkpoint), by the interruption's cause"),
    M("useful_gpu_hours", "useful GPU-hours", "GPU-h", +1, "throughput", "hours",
      "GPU-hours of training progress that was kept"),
    M("lost_gpu_hours", "lost GPU-hours", "GPU-h", -1, "throughput", "hours",
      "GPU-hours of progress lost to interruptions (work since the last checkpoint)"),
    M("checkpoint_gpu_hours", "checkpoint GPU-hours", "GPU-h", -1, "throughput", "hours",
      "GPU-hours spent writing checkpoints"),
    M("restart_gpu_hours", "restart GPU-hours", "GPU-h", -1, "throughput", "hours",
      "GPU-hours spent restarting jobs after interruptions"),
    M("utilisation", "GPU utilisation", "fraction", 0, "throughput", "percent",
      "GPU-hours busy (running, checkpointing, restarting) over installed GPU-hours"),
    M("ettr.max_job", "ETTR of the largest job", "fraction", +1, "throughput", "percent",
      "effective training time ratio of the largest job: kept progress over wall time"),
    M("max_job.interruptions", "interruptions of the largest job", "interruptions", -1, "throughput", "count",
      "interruptions of the largest job over the horizon"),
    M("max_job.kept_h", "kept progress of the largest job", "h", +1, "throughput", "hours",
      "hours of progress the largest job kept"),
    M("interruptions", "job interruptions", "interruptions", -1, "throughput", "count",
      "job interruptions over the horizon, all causes"),
    M("interruptions.*", "job interruptions: {}", "interruptions", -1, "throughput", "count",
      "job interruptions of one cause"),
    M("jobs_completed", "jobs completed", "jobs", +1, "throughput", "count", "jobs that finished"),
    M("jobs_submitted", "jobs submitted", "jobs", 0, "throughput", "count", "jobs submitted"),
    M("queue_wait_h.mean", "mean queue wait", "h", -1, "throughput", "hours", "mean hours a job waited to start"),
    M("queue_wait_h.jobs", "jobs that waited", "jobs", 0, "throughput", "count",
      "jobs whose queue wait is counted in the mean"),
    M("queue_wait_h.mean.*", "mean queue wait, jobs of {}", "h", -1, "throughput", "hours",
      "mean hours jobs up to a size (nodes_le_N: at most N nodes) waited to start"),
    M("starvation.advisories", "starvation advisories", "jobs", -1, "throughput", "count",
      "head jobs that waited longer than the stated time with no bound on their start"),
    M("starvation.unreserved_h", "longest head wait without a reservation", "h", -1, "throughput", "hours",
      "longest time a head job went with no bound on its start"),
    M("reconfigure_gpu_hours", "reconfiguration GPU-hours", "GPU-h", -1, "throughput", "hours",
      "GPU-hours elastic jobs spent reconfiguring after a shrink or a growth"),
    M("elastic.starts", "elastic starts", "starts", 0, "throughput", "count", "starts of elastic jobs"),
    M("elastic.shrinks", "elastic shrinks", "shrinks", -1, "throughput", "count",
      "times an elastic job went on with fewer replicas"),
    M("elastic.swaps", "elastic swaps", "swaps", 0, "throughput", "count",
      "times an elastic job replaced a lost node by a free one"),
    M("elastic.grows", "elastic grows", "grows", 0, "throughput", "count", "times an elastic job grew back"),
    M("elastic.reduced_hours", "hours elastic jobs ran short", "h", -1, "throughput", "hours",
      "hours elastic jobs ran with fewer replicas than they asked for"),
    M("elastic.kept_gpu_hours", "GPU-hours kept by elasticity", "GPU-h", +1, "throughput", "hours",
      "useful GPU-hours elastic jobs made while short of replicas"),
    M("stragglers.episodes", "straggler episodes", "episodes", -1, "throughput", "count",
      "episodes of a degraded (slow but running) node"),
    M("stragglers.swaps", "straggler swaps", "swaps", 0, "throughput", "count",
      "stragglers swapped for a hot spare at the cost of a restart"),
    M("stragglers.node_hours", "straggler node-hours", "node-h", -1, "throughput", "hours",
      "node-hours nodes ran degraded"),
    M("stragglers.speed_lost_node_hours", "speed lost to stragglers", "node-h", -1, "throughput", "hours",
      "node-hours × (1 − speed) of degraded nodes"),
    M("sdc.defective_nodes", "nodes with silent data corruption", "nodes", -1, "throughput", "count",
      "nodes drawn as defective (corrupting)"),
    M("sdc.corruptions", "silent data corruptions", "corruptions", -1, "throughput", "count",
      "corruptions of a job's state by defective nodes"),
    M("sdc.harmless", "harmless corruptions", "corruptions", 0, "throughput", "count",
      "corruptions on a node that ran no job"),
    M("sdc.discarded", "corruptions already discarded", "corruptions", 0, "throughput", "count",
      "corruptions detected after the job had restarted from a checkpoint captured before them: no cost"),
    M("sdc.rollbacks", "rollbacks for corruption", "rollbacks", -1, "throughput", "count",
      "jobs rolled back to a checkpoint captured before a corruption"),
    M("sdc.lost_gpu_hours", "GPU-hours lost to corruption", "GPU-h", -1, "throughput", "hours",
      "progress GPU-hours lost to rollbacks"),
    M("sdc.found_by_test", "defective nodes found", "nodes", 0, "throughput", "count",
      "defective nodes found by the test after a detected corruption"),
    # ---- thermal
    M("thermal.gpu_temp_max_c", "GPU temperature: max", "°C", -1, "thermal", "temperature_c",
      "highest GPU temperature"),
    M("thermal.gpu_temp_p50_c", "GPU temperature: median", "°C", -1, "thermal", "temperature_c",
      "median GPU temperature (time-weighted over busy GPUs)"),
    M("thermal.gpu_temp_p95_c", "GPU temperature: p95", "°C", -1, "thermal", "temperature_c",
      "95th percentile of GPU temperature"),
    M("thermal.gpu_temp_p99_c", "GPU temperature: p99", "°C", -1, "thermal", "temperature_c",
      "99th percentile of GPU temperature"),
    M("thermal.inlet_above_27c_node_hours", "node-hours with inlet above 27 °C", "node-h", -1, "thermal", "hours",
      "node-hours with the air inlet above the ASHRAE recommended 27 °C"),
    M("thermal.mean_speed", "mean GPU speed (throttling)", "fraction", +1, "thermal", "percent",
      "mean clock speed of busy GPUs relative to full speed"),
    M("thermal.speed_loss_gpu_hours", "GPU-hours lost to throttling", "GPU-h", -1, "thermal", "hours",
      "busy GPU-hours times the speed lost to thermal throttling"),
    M("thermal.throttled_gpu_hours", "throttled GPU-hours", "GPU-h", -1, "thermal", "hours",
      "GPU-hours run below full speed for heat"),
    M("thermal.trip_node_hours", "node-hours tripped", "node-h", -1, "thermal", "hours",
      "node-hours shut down by thermal trips"),
    M("thermal.trips", "thermal trips", "trips", -1, "thermal", "count", "thermal trips, all kinds"),
    M("thermal.trips.*", "thermal trips: {}", "trips", -1, "thermal", "count", "thermal trips of one kind"),
    M("cooling.loop_no_flow_hours", "hours with a loop without flow", "h", -1, "thermal", "hours",
      "hours some liquid loop had no coolant flow"),
    M("response.actions", "operator responses to a cooling shortfall", "plans", 0, "thermal", "count",
      "caps or drains the operator set or changed for short air zones (cooling.response)"),
    M("response.capped_node_hours", "node-hours under the operator's cap", "node-h", -1, "thermal", "hours",
      "node-hours whose GPUs the operator capped to fit a zone's cooling"),
    M("response.drained_node_hours", "node-hours drained for cooling", "node-h", -1, "thermal", "hours",
      "node-hours the operator held out of service to fit a zone's cooling"),
    M("leak.events", "node leaks", "leaks", -1, "thermal", "count", "coolant leaks at nodes (cooling.liquid.leak)"),
    M("leak.detected", "leaks isolated before damage", "leaks", 0, "thermal", "count",
      "node leaks detected in time: their rack isolated, nothing destroyed"),
    M("leak.nodes_destroyed", "nodes destroyed by leaks", "nodes", -1, "thermal", "count",
      "nodes an undetected leak destroyed (bought again in cost.leak_damage)"),
    M("leak.loop_events", "loop leaks", "leaks", -1, "thermal", "count",
      "CDU or manifold leaks that took a whole coolant loop down"),
    M("plant.loop_offset_max_c", "chilled-water peak above set point", "°C", -1, "thermal", "temperature_c",
      "highest rise of the chilled-water loop above its set point (the plant fell short: chillers stopped, "
      "failed or in maintenance)"),
    M("plant.capacity_short_hours", "hours the chillers fell short", "h", -1, "thermal", "hours",
      "hours the running chillers' capacity was below the heat of the loop"),
    M("plant.power_stops.*", "cooling units stopped by power loss: {}", "stops", -1, "thermal", "count",
      "cooling units of one kind (chiller, crah, cdu) that lost power (a utility loss off UPS, a dead feed)"),
    M("plant.power_off_unit_hours.*", "unit-hours without power or restarting: {}", "unit-h", -1, "thermal",
      "hours", "hours cooling units of one kind were unpowered or restarting after power came back"),
    M("plant.transfers.*", "cooling units transferred to their other feed: {}", "transfers", 0, "thermal", "count",
      "dual-fed cooling units of one kind that moved to their other feed when theirs died (each a restart)"),
    M("plant.transfer_failures.*", "failed transfers of cooling units: {}", "failures", -1, "thermal", "count",
      "dual-fed cooling units of one kind whose transfer switch failed to transfer (they wait for their feed)"),
    M("plant.maintenance_windows", "cooling maintenance windows", "windows", 0, "thermal", "count",
      "scheduled maintenance windows of chillers, CRAH units and CDUs"),
    M("plant.maintenance_hours", "cooling maintenance hours", "unit-h", 0, "thermal", "hours",
      "unit-hours of scheduled maintenance of chillers, CRAH units and CDUs"),
    M("plant.maintenance_exposure_hours", "cooling hours exposed by maintenance", "unit-h", -1, "thermal", "hours",
      "unit-hours a redundant cooling group ran without its spare for maintenance"),
    M("plant.maintenance_short_hours", "cooling hours short for maintenance", "unit-h", -1, "thermal", "hours",
      "unit-hours a cooling group without a spare (N) lacked a unit for maintenance"),
    M("plant.maintenance_drains", "cooling maintenance visits that drained the load", "visits", -1, "thermal",
      "count", "visits of a cooling unit with no working spare in its group that drained the nodes it cools "
               "(when_short: drain)"),
    M("plant.maintenance_drained_hours", "cooling maintenance hours drained", "unit-h", 0, "thermal", "hours",
      "unit-hours of maintenance windows whose load was drained (when_short: drain)"),
    M("plant.maintenance_drained_node_hours", "node-hours drained for cooling maintenance", "node-h", -1, "thermal",
      "hours", "node-hours the drains for cooling maintenance took out: nodes × (duration + reboot_h) per visit"),
    M("cooling.zone_over_capacity_hours", "hours with a zone over its cooling capacity", "h", -1, "thermal", "hours",
      "hours some zone's heat load exceeded its cooling capacity"),
    # ---- power
    M("power.capped_gpu_hours", "power-capped GPU-hours", "GPU-h", -1, "power", "hours",
      "GPU-hours run under a power cap"),
    M("power.capped_node_hours", "power-capped node-hours", "node-h", -1, "power", "hours",
      "node-hours run under a power cap"),
    M("power.down_node_hours", "node-hours without power", "node-h", -1, "power", "hours",
      "node-hours down for lack of power"),
    M("power.down_node_hours.*", "node-hours without power: {}", "node-h", -1, "power", "hours",
      "node-hours without power charged to one cause"),
    M("power.feed_dead_hours", "hours with a dead feed", "h", -1, "power", "hours", "hours some feed was dead"),
    M("power.feed_outages", "feed outages", "outages", -1, "power", "count", "outages of a feed"),
    M("power.maintenance_windows", "power maintenance windows", "windows", 0, "power", "count",
      "scheduled maintenance windows of UPS, generator and switchboard"),
    M("power.maintenance_hours", "power maintenance hours", "h", 0, "power", "hours",
      "hours of scheduled maintenance of the power chain"),
    M("power.maintenance_exposure_hours", "hours exposed by maintenance", "h", -1, "power", "hours",
      "hours a feed ran without its redundancy (on bypass, or its load on one feed) for maintenance"),
    M("power.generator_start_failures", "generator start failures", "failures", -1, "power", "count",
      "generator starts that failed"),
    M("power.transfer_failures", "failed transfers to generator", "failures", -1, "power", "count",
      "transfer switches that failed to put a running generator on its feed (until a manual transfer)"),
    M("power.generator_starts", "generator starts", "starts", 0, "power", "count", "generator starts"),
    M("power.it_energy_kwh", "IT energy (power model)", "kWh", -1, "power", "energy_kwh",
      "IT energy integrated by the power model"),
    M("power.max_ramp_w_per_h", "largest site power ramp", "W/h", -1, "power", "ramp_w_per_h",
      "largest change of site IT power over an hour"),
    M("power.max_step_w", "largest site power step", "W", -1, "power", "power_w",
      "largest instantaneous change of site IT power"),
    M("power.mean_w", "mean site IT power", "W", 0, "power", "power_w", "time-weighted mean IT power"),
    M("power.outages_reaching_load", "outages reaching the load", "outages", -1, "power", "count",
      "power outages that reached IT equipment"),
    M("power.peak_w", "peak site IT power", "W", -1, "power", "power_w", "highest IT power"),
    M("power.ups_loss_kwh", "UPS losses", "kWh", -1, "power", "energy_kwh", "energy lost in UPS conversion"),
    M("power.utility_outages", "utility outages", "outages", -1, "power", "count", "outages of the utility supply"),
    M("power.ups_shortfalls", "UPS module shortfalls", "shortfalls", -1, "power", "count",
      "times a modular UPS fell below its required modules (its load to the static bypass)"),
    M("power.ups_short_hours", "UPS hours below required modules", "h", -1, "power", "hours",
      "feed-hours a modular UPS had fewer working modules than required"),
    M("power.ups_bypass_failures", "failed transfers to UPS bypass", "failures", -1, "power", "count",
      "static bypass transfers that failed and dropped the load"),
    M("power.ups_faults", "UPS faults", "faults", -1, "power", "count", "UPS faults that dropped the load"),
    M("power.generator_short_hours", "generator hours below required sets", "h", -1, "power", "hours",
      "feed-hours a generator plant had fewer available sets than required"),
    M("power.generator_set_start_failures", "generator sets failing to start", "failures", -1, "power", "count",
      "generator sets that failed to start on a demand"),
    M("power.generator_run_failures", "generator sets failing to run", "failures", -1, "power", "count",
      "running generator sets that failed"),
    M("power.generator_trips", "generator plant trips", "trips", -1, "power", "count",
      "generator plants left with fewer running sets than required while carrying their feed"),
    M("power.switching_errors", "maintenance switching errors", "errors", -1, "power", "count",
      "maintenance visits whose switching went wrong and dropped a load"),
    M("power.test_unit_hours", "unit-hours out for periodic tests", "h", -1, "power", "hours",
      "unit-hours power units spent out of service for their periodic tests"),
    M("power.generator_block_trips", "generator block-load trips", "trips", -1, "power", "count",
      "generators tripped by a transfer step above their block-load limit"),
    M("power.hall_losses", "hall-wide power losses", "losses", -1, "power", "count",
      "times every feed was dead at once (the hall lost power)"),
    M("power.restart_node_hours", "node-hours in staged restart", "node-h", -1, "power", "hours",
      "node-hours held down by the staged restart after hall-wide power losses, from power back"),
    M("power.power_cycle_failures", "cold power-cycle failures", "failures", -1, "power", "count",
      "node part units that failed at the cold power-up after a hall-wide loss"),
    M("power.oversub_feed_losses", "feed losses while oversubscribed", "losses", -1, "power", "count",
      "times one feed was lost and the survivors carried an oversubscribed hall"),
    M("power.oversub_trips", "overload trips of the surviving feed", "trips", -1, "power", "count",
      "surviving feeds tripped because capping came later than the breaker's trip time"),
    M("power.oversub_capped_hours", "hours capped to one feed", "h", -1, "power", "hours",
      "hours site IT power was capped to one feed's capacity after a feed loss"),
    M("power.oversub_peak_overload", "peak overload at a feed loss", "ratio", -1, "power", "ratio",
      "largest IT power / feed capacity seen at a feed loss"),
    M("power.grid_dr_requests", "demand-response requests", "requests", 0, "power", "count",
      "demand-response requests honoured"),
    M("power.grid_dr_hours", "hours under demand response", "h", 0, "power", "hours",
      "hours site IT power was held down for demand-response requests"),
    M("power.grid_dr_short_hours", "hours a request could not be met", "h", -1, "power", "hours",
      "hours a demand-response limit was below the site at minimum GPU power"),
    M("power.grid_dr_shed_kwh", "energy shed on request", "kWh", 0, "power", "energy_kwh",
      "contracted energy shed: Σ kW × hours of the requests"),
    M("power.grid_dr_earnings", "demand-response earnings", "currency", 1, "power", "money",
      "payment for the energy shed at power.grid.dr_price_per_kwh"),
    M("power.grid_outages", "grid outages from the file", "outages", -1, "power", "count",
      "utility outages scheduled in power.grid.file"),
    M("hazards.events", "hazard and common-cause events", "events", -1, "power", "count",
      "hazard zone events and cross-type common-cause events that failed at least one unit"),
    M("hazards.events.*", "hazard events: {}", "events", -1, "power", "count",
      "events of one hazard zone event kind or common-cause group that failed at least one unit"),
    M("hazards.units_failed", "units failed by hazard events", "units", -1, "power", "count",
      "facility units failed by hazard zone events and cross-type common-cause events"),
    # ---- network
    M("node_cut_hours", "node-hours cut off", "node-h", -1, "network", "hours",
      "node-hours up but cut off from the fabric"),
    M("network.cut_node_hours", "node-hours cut off (fabric)", "node-h", -1, "network", "hours",
      "node-hours cut off from the fabric, all causes"),
    M("network.cut_node_hours.*", "node-hours cut off: {}", "node-h", -1, "network", "hours",
      "node-hours cut off from the fabric by one cause"),
    # ---- the shared storage (issue 29)
    M("storage.bandwidth_gb_per_s.mean", "storage bandwidth in use: mean", "GB/s", 0, "storage", "ratio",
      "time-weighted mean of the storage bandwidth in use (checkpoint writes and reads, training-data reads)"),
    M("storage.bandwidth_gb_per_s.peak", "storage bandwidth in use: peak", "GB/s", 0, "storage", "ratio",
      "highest storage bandwidth in use at any instant"),
    M("storage.downtime_h", "storage downtime", "h", -1, "storage", "hours",
      "hours the storage was unavailable (metadata service down, or fewer servers up than needed)"),
    M("storage.availability", "storage availability", "fraction", +1, "storage", "percent",
      "share of the horizon the storage was available"),
    M("storage.outages", "storage outages", "outages", -1, "storage", "count",
      "storage outages over the horizon"),
    M("storage.jobs_stopped", "jobs stopped by storage outages", "jobs", -1, "storage", "count",
      "jobs that a storage outage stopped (reading data, writing or reading a checkpoint during it)"),
    M("storage.outage_gpu_hours", "GPU-hours stopped by storage outages", "GPU-h", -1, "storage", "hours",
      "GPU-hours of jobs stopped by storage outages"),
    M("storage.data_stall_gpu_hours", "data-stall GPU-hours", "GPU-h", -1, "storage", "hours",
      "GPU-hours of running time lost waiting for training data (a share of the storage below the demand)"),
    M("storage.data_jobs", "jobs reading training data", "jobs", 0, "storage", "count",
      "jobs with a training-data read demand on the shared storage"),
    M("network.bisection_fraction", "fabric bisection bandwidth", "fraction", +1, "network", "percent",
      "time-weighted share of the full bisection bandwidth available"),
    M("network.bisection_fraction.min", "fabric bisection bandwidth: min", "fraction", +1, "network", "percent",
      "lowest share of the full bisection bandwidth"),
    M("network.spine_availability", "spine availability", "fraction", +1, "network", "percent",
      "time-weighted share of spine switches up"),
    M("network.link_flaps", "access link flaps", "flaps", -1, "network", "count", "flaps of node-to-leaf links"),
    M("network.link_flaps_skipped", "access link flaps skipped", "flaps", 0, "network", "count",
      "link flaps drawn on links already down (not applied)"),
    M("network.trunk_flaps", "trunk link flaps", "flaps", -1, "network", "count", "flaps of leaf-to-spine links"),
    M("network.trunk_flaps_skipped", "trunk link flaps skipped", "flaps", 0, "network", "count",
      "trunk flaps drawn on links already down (not applied)"),
    M("network.access_links", "access links", "links", 0, "network", "count", "node-to-leaf links"),
    M("network.trunk_links", "trunk links", "links", 0, "network", "count", "leaf-to-spine links"),
    M("network.links", "links", "links", 0, "network", "count", "links of the fabric"),
    M("network.optics", "optics", "optics", 0, "network", "count", "optical transceivers"),
    M("network.leaves", "leaf switches", "switches", 0, "network", "count", "leaf switches"),
    M("network.spines", "spine switches", "switches", 0, "network", "count", "spine switches"),
    M("network.groups", "fabric groups", "groups", 0, "network", "count", "groups of the fabric"),
    # ---- energy
    M("energy.it_kwh", "IT energy", "kWh", -1, "energy", "energy_kwh", "energy drawn by IT equipment"),
    M("energy.cooling_kwh", "cooling energy", "kWh", -1, "energy", "energy_kwh", "energy drawn by cooling"),
    M("energy.losses_kwh", "electrical losses", "kWh", -1, "energy", "energy_kwh",
      "energy lost in distribution and conversion"),
    M("energy.facility_kwh", "facility energy", "kWh", -1, "energy", "energy_kwh",
      "total facility energy (IT + cooling + losses)"),
    M("energy.peak_it_kw", "peak IT power", "kW", -1, "energy", "power_kw", "highest IT power"),
    M("energy.peak_facility_kw", "peak facility power", "kW", -1, "energy", "power_kw", "highest facility power"),
    M("energy.free_cooling_hours.*", "free-cooling hours: {}", "h", +1, "energy", "hours",
      "hours the cooling of this kind ran on outside air or water alone"),
    M("density.rack_kw", "power per rack", "kW", 0, "cost", "power_kw",
      "nameplate of a rack's nodes (cluster.nodes_per_rack × nameplate)"),
    M("density.rack_limit_kw", "supported power per rack", "kW", +1, "cost", "power_kw",
      "the rack's power limit: cluster.rack.power_limit_kw, else the cooling option's (cooling.density)"),
    M("density.racks_at_limit", "racks needed at the supported density", "racks", -1, "cost", "count",
      "racks the nodes need at the supported power per rack and in the rack's U space"),
    M("density.white_space_m2", "white space", "m2", -1, "cost", "count",
      "floor the racks and the cooling units on it take, aisles and clearances included (cooling.density)"),
    M("energy.server_fans_kwh", "server fan energy", "kWh", -1, "energy", "energy_kwh",
      "energy drawn by the nodes' own fans (part of IT energy; cluster.node.fans)"),
    M("fans.peak_speed", "peak server fan speed", "fraction", -1, "thermal", "ratio",
      "fastest speed any working server fan reached, fraction of full speed (1: the fans cannot add air)"),
    M("energy.chiller_cop_seasonal", "chiller seasonal COP", "ratio", +1, "energy", "ratio",
      "heat the chillers removed over their electrical energy, on the chiller curve (cooling.energy.chiller_curve)"),
    M("pue", "PUE", "ratio", -1, "energy", "ratio", "facility energy over IT energy"),
    # the life of a hall (issue 52, twin/life.py): a scenario with a timeline, stage by stage
    M("installation.node_hours", "node-hours drained for installation", "node-h", -1, "availability", "hours",
      "node-hours the installation work of a timeline's step drained (racks × nodes × hours per rack)"),
    M("installation.windows", "installation drains", "drains", 0, "availability", "count",
      "drain windows of installation work (waves of racks)"),
    M("life.stages", "stages of the life", "stages", 0, "scale", "count", "stages of a timeline (steps + 1)"),
    M("cost.stages", "cost of the stages", "currency", -1, "cost", "money",
      "sum of the stages' cost.total (each stage's annuity, energy, repairs, labour, holding, water)"),
    M("cost.steps", "cost of the steps", "currency", -1, "cost", "money",
      "sum of the steps' capital: works + write-off of replaced nodes − resale + disposal"),
    M("stage_cost.*", "cost of stage {}", "currency", -1, "cost", "money", "cost.total of one stage"),
    M("stage_capital.*", "capital of stage {}", "currency", -1, "cost", "money",
      "the annuity of what the stage holds, for its duration"),
    M("stage_energy_cost.*", "energy cost of stage {}", "currency", -1, "cost", "money", "energy cost of one stage"),
    M("stage_cost_per_useful_gpu_hour.*", "cost per useful GPU-hour, stage {}", "currency/GPU-h", -1, "cost", "money",
      "one stage's cost.total over its useful GPU-hours"),
    M("stage_useful_gpu_hours.*", "useful GPU-hours, stage {}", "GPU-h", +1, "throughput", "hours",
      "useful GPU-hours of one stage"),
    M("stage_goodput.*", "goodput, stage {}", "fraction", +1, "throughput", "percent", "goodput of one stage"),
    M("stage_gpus.*", "GPUs, stage {}", "GPUs", 0, "scale", "count", "GPUs installed in one stage"),
    M("stage_facility_kwh.*", "facility energy, stage {}", "kWh", -1, "energy", "energy_kwh",
      "facility energy of one stage"),
    M("stage_throttled_gpu_hours.*", "throttled GPU-hours, stage {}", "GPU-h", -1, "thermal", "hours",
      "GPU-hours below full speed for heat in one stage"),
    M("stage_speed_loss_gpu_hours.*", "GPU-hours lost to throttling, stage {}", "GPU-h", -1, "thermal", "hours",
      "work lost to thermal throttling in one stage, GPU-hours"),
    M("step_works.*", "works of step {}", "currency", -1, "cost", "money", "the step's own capital (timeline.steps.capital)"),
    M("step_nodes_replaced.*", "nodes replaced at step {}", "nodes", 0, "scale", "count",
      "nodes a change of node type replaced"),
    M("step_writeoff.*", "write-off at step {}", "currency", -1, "cost", "money",
      "what the replaced nodes still owed of their annuity when replaced"),
    M("step_resale.*", "resale at step {}", "currency", +1, "cost", "money", "what the replaced nodes fetched"),
    M("step_disposal.*", "disposal at step {}", "currency", -1, "cost", "money", "cost of removing the replaced nodes"),
    M("step_plant_removed.*", "plant removed at step {}", "currency", 0, "cost", "money",
      "purchase price of the cooling and power plant the step removed"),
    M("step_plant_writeoff.*", "plant write-off at step {}", "currency", -1, "cost", "money",
      "what the removed plant still owed of its annuity when removed"),
    M("step_plant_resale.*", "plant resale at step {}", "currency", +1, "cost", "money",
      "what the removed plant fetched (plant_resale_share of its price)"),
    M("step_capital.*", "capital of step {}", "currency", -1, "cost", "money",
      "works + write-off − resale + disposal + plant write-off − plant resale, paid at the step"),
    M("step_purchase.*", "purchase added at step {}", "currency", 0, "cost", "money",
      "purchase price of the hall after the step less before (priced through the stages' annuities)"),
    M("step_install_node_hours.*", "node-hours drained at step {}", "node-h", -1, "availability", "hours",
      "node-hours the step's installation drained"),
    M("headroom_cooling_air_zone.*", "air zone cooling headroom, stage {}", "kW", +1, "thermal", "power_kw",
      "largest air zone's CRAH design capacity (required × capacity) less its air heat at full power"),
    M("headroom_cooling_plant.*", "plant headroom, stage {}", "kW", +1, "thermal", "power_kw",
      "chiller or dry-cooler design capacity (required × capacity) less the full IT load"),
    M("headroom_power_ups.*", "UPS headroom, stage {}", "kW", +1, "power", "power_kw",
      "a feed's UPS rating less the full IT load"),
    M("headroom_rack_power.*", "rack power headroom, stage {}", "kW", +1, "power", "power_kw",
      "the rack's power limit less its nodes' nameplate"),
    M("headroom_floor.*", "floor headroom, stage {}", "m2", +1, "cost", "count",
      "the building's white space (timeline.hall_m2) less what the racks and cooling units take"),
    M("headroom_min.*", "least headroom over the life: {}", "kW or m2", +1, "cost", "count",
      "the smallest headroom of a check over the stages (negative: a shortfall)"),
    M("pue.flat", "PUE flat (no cooling section)", "ratio", -1, "energy", "ratio",
      "the constant PUE the energy cost used because the scenario has no cooling section to model it"),
    M("water.evaporated_l", "water evaporated", "L", -1, "energy", "count",
      "water the evaporative units evaporated to cool the outside air"),
    M("water.site_l", "site water", "L", -1, "energy", "count",
      "water drawn by the evaporative units: evaporated plus blowdown"),
    M("water.wue_l_per_kwh", "WUE", "L/kWh", -1, "energy", "ratio",
      "water usage effectiveness: site water per kWh of IT energy"),
    M("cooling.evaporative.wet_hours", "evaporative hours", "h", 0, "energy", "hours",
      "hours the evaporative units evaporated water (outside air above the set point, water available)"),
    M("cooling.evaporative.dry_hours", "dry hours", "h", 0, "energy", "hours",
      "hours the evaporative units ran without evaporating water (outside air alone, or water supply down)"),
    M("cooling.evaporative.fallback_hours", "dry-fallback hours", "h", -1, "thermal", "hours",
      "hours the outside air was above the set point while the water supply was down (units ran dry)"),
    M("cooling.evaporative.above_setpoint_hours", "hours with supply above set point", "h", -1, "thermal", "hours",
      "hours the evaporative units' supply floated above their set point (wet-bulb, or dry operation)"),
    M("cooling.evaporative.outside_envelope_hours", "hours outside the ASHRAE envelope", "h", -1, "thermal", "hours",
      "hours the evaporative units' supply air was outside its ASHRAE class (dry-bulb, dew point or RH)"),
    M("cooling.evaporative.humidity_outside_envelope_hours", "hours with humidity outside the envelope", "h", -1,
      "thermal", "hours", "hours the supply air's dew point or RH was outside its ASHRAE class (failures added)"),
    M("cooling.evaporative.supply_dew_point_max_c", "highest supply dew point", "°C", 0, "thermal", "temperature_c",
      "highest dew point of the evaporative units' supply air while it was outside air"),
    M("cooling.evaporative.supply_rh_max", "highest supply RH", "ratio", 0, "thermal", "ratio",
      "highest relative humidity (0-1) of the evaporative units' supply air while it was outside air"),
    M("cooling.evaporative.trim_hours", "trim-chiller hours", "h", -1, "energy", "hours",
      "hours a trim chiller cooled the pads' (or outside) air the rest of the way to the set point"),
    M("cooling.evaporative.mechanical_hours", "mechanical-mode hours", "h", -1, "energy", "hours",
      "hours the evaporative units recirculated return air through the chiller (envelope, heat or water cap)"),
    M("cooling.evaporative.water_cap_hours", "hours under the water cap", "h", -1, "energy", "hours",
      "hours the pads stayed dry because the year's water cap was reached"),
    M("cooling.evaporative.chiller_kwh", "trim/mechanical chiller energy", "kWh", -1, "energy", "energy_kwh",
      "electrical energy of the evaporative units' trim chiller and mechanical mode"),
    # ---- cost
    M("cost.per_useful_gpu_hour", "cost per useful GPU-hour", "currency", -1, "cost", "money",
      "total cost over the horizon divided by the useful GPU-hours"),
    M("cost.total", "total cost", "currency", -1, "cost", "money",
      "cost over the horizon: capital amortised plus operating costs"),
    M("cost.capital", "capital (amortised)", "currency", -1, "cost", "money",
      "capital amortised over the horizon"),
    M("cost.capital.*", "capital (amortised): {}", "currency", -1, "cost", "money",
      "capital of one group amortised over the horizon"),
    M("cost.capital_purchase", "capital (purchase price)", "currency", -1, "cost", "money",
      "purchase price of all capital, not amortised"),
    M("cost.energy", "energy cost", "currency", -1, "cost", "money", "energy bought over the horizon"),
    M("cost.energy_kwh", "energy billed", "kWh", -1, "cost", "energy_kwh", "energy the energy cost is for"),
    M("cost.labour", "labour cost", "currency", -1, "cost", "money", "technician labour over the horizon"),
    M("cost.repair_parts", "repair parts cost", "currency", -1, "cost", "money", "parts used in repairs"),
    M("cost.leak_damage", "leak damage cost", "currency", -1, "cost", "money",
      "nodes destroyed by leaks bought again (node and PSUs; part of cost.repair_parts)"),
    M("cost.spares_holding", "spares holding cost", "currency", -1, "cost", "money", "cost of holding spares"),
    M("cost.water", "water cost", "currency", -1, "cost", "money",
      "site water of evaporative cooling over the horizon (zero without it)"),
    # ---- twin forecast: the time to train a job (its tables, not summary.json)
    M("forecast.days", "time to train", "days", -1, "throughput", "days",
      "days from the job's submission to its completion (twin forecast)"),
    M("forecast.days_lost.*", "days lost to: {}", "days", -1, "throughput", "days",
      "days of a forecast run lost to one cause (an interruption cause, checkpoints, throttling, network, queueing)"),
    M("forecast.days_saved", "days saved", "days", +1, "throughput", "days",
      "days a what-if lever saves per forecast run, paired against the baseline"),
    # ---- scale: the size of the run
    M("nodes", "nodes", "nodes", 0, "scale", "count", "nodes in the cluster"),
    M("gpus_installed", "GPUs installed", "GPUs", 0, "scale", "count", "GPUs installed"),
    M("horizon_h", "horizon", "h", 0, "scale", "hours", "simulated hours"),
    M("events_processed", "events processed", "events", 0, "scale", "count", "simulation events processed"),
)
del M

_EXACT = {m.key: m for m in CATALOGUE if "*" not in m.key}
_PATTERNS = sorted((m for m in CATALOGUE if "*" in m.key), key=lambda m: -len(m.key))
"""Longest pattern first, so ``thermal.trips.*`` wins over a shorter one."""


class UnknownMetric(KeyError):
    """A metric key the catalogue has no entry for."""


def find(key: str) -> Metric | None:
    """The catalogue entry of ``key`` (exact key first, then the longest matching pattern), or None.
    A pattern's ``*`` matches one dotted suffix without dots."""
    if key in _EXACT:
        return _EXACT[key]
    for m in _PATTERNS:
        if fnmatch.fnmatchcase(key, m.key) and "." not in key[len(m.key) - 1:]:
            return m
    return None


def lookup(key: str) -> Metric:
    """:func:`find` or :class:`UnknownMetric`."""
    m = find(key)
    if m is None:
        raise UnknownMetric(key)
    return m


def _suffix(key: str, m: Metric) -> str:
    return key[len(m.key) - 1:].replace("_", " ") if m.key.endswith("*") else ""


def label(key: str) -> str:
    """Human label of ``key`` ("failures: gpu"); the raw key when it is not catalogued."""
    m = find(key)
    return key if m is None else m.label.format(_suffix(key, m))


def unit_label(key: str, currency: str = "USD") -> str:
    """The unit a person reads (``%``, ``node-h``, ``kWh``, the currency …)."""
    m = find(key)
    if m is None:
        return ""
    if m.fmt == "money":
        return currency or "currency units"
    if m.fmt == "percent":
        return "%"
    return "" if m.unit == "ratio" else m.unit


SELF_SCALED = frozenset({"energy_kwh", "power_w", "power_kw", "ramp_w_per_h"})
"""Formats whose printed values carry a unit scaled to their size (kWh, MWh, GWh …): a table column of
them names no unit (it would be wrong for most rows), an axis of raw values does."""


def label_with_unit(key: str, currency: str = "USD", table: bool = False) -> str:
    """"node-hours down (node-h)"; a count keeps its bare label (its values carry the noun), and so
    does, with ``table`` (a column of values printed by :func:`format_value`), a metric whose values
    carry their own scaled unit (``IT energy``, its values 228.1 MWh or 17.29 GWh; an axis of raw
    values keeps ``(kWh)``)."""
    m = find(key)
    bare = m is not None and (m.fmt == "count" or (table and m.fmt in SELF_SCALED))
    u = unit_label(key, currency) if not bare else ""
    return f"{label(key)} ({u})" if u else label(key)


def direction(key: str) -> int:
    """+1 higher is better, −1 lower is better, 0 none (also for an uncatalogued key)."""
    m = find(key)
    return 0 if m is None else m.direction


def group(key: str) -> str:
    m = find(key)
    return "other" if m is None else m.group


def missing(keys: Iterable[str]) -> list[str]:
    """The keys the catalogue does not know, sorted."""
    return sorted({k for k in keys if find(k) is None})


def by_group(keys: Sequence[str]) -> list[tuple[str, list[str]]]:
    """``keys`` grouped in :data:`GROUPS` order (uncatalogued ones last, under ``other``), each
    group's keys in catalogue order then by name."""
    order = {m.key: i for i, m in enumerate(CATALOGUE)}
    out: dict[str, list[str]] = {}
    for k in keys:
        out.setdefault(group(k), []).append(k)

    def rank(k: str) -> tuple[int, str]:
        m = find(k)
        return (order[m.key] if m is not None else len(order), k)

    return [(g, sorted(out[g], key=rank)) for g in (*GROUPS, "other") if g in out]


# ------------------------------------------------------------------------------ numbers

_PREFIX = ((1e9, 1e9, "G"), (1e6, 1e6, "M"), (1e4, 1e3, "k"))
"""(from magnitude, divisor, prefix): 12,345 prints as 12.35 k, 1,234 as 1,234."""


def plain(x: float, sig: int = 4, signed: bool = False) -> str:
    """``x`` with ``sig`` significant digits, thousands separators and never an exponent (at most
    eight decimals: smaller magnitudes print as 0)."""
    if x is None or not isinstance(x, (int, float)) or math.isnan(x):
        return "–"
    if math.isinf(x):
        return ("+∞" if signed else "∞") if x > 0 else "−∞"
    if x == 0:
        return "0"
    a = abs(x)
    dec = min(8, max(0, sig - 1 - math.floor(math.log10(a))))
    s = f"{a:,.{dec}f}"
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    if s in ("0", ""):
        return "0"
    sign = "−" if x < 0 else ("+" if signed else "")
    return sign + s


def _scaled(x: float, unit: str, signed: bool, sig: int, prefixes: Sequence[tuple[float, float, str]] = _PREFIX,
            base_units: Sequence[str] | None = None) -> str:
    """``x`` in ``unit`` with a k/M/G multiplier (or the next of ``base_units``: kWh → MWh → GWh)."""
    if x is None or math.isnan(x) or math.isinf(x):
        return plain(x, sig, signed)
    a = abs(x)
    if base_units is not None:  # W, kW, MW, GW
        i = 0
        while i + 1 < len(base_units) and a >= 1000:
            a /= 1000
            x /= 1000
            i += 1
        return f"{plain(x, sig, signed)} {base_units[i]}".strip()
    for lim, f, p in prefixes:
        if a >= lim:
            return f"{plain(x / f, sig, signed)} {p} {unit}".strip()
    return f"{plain(x, sig, signed)} {unit}".strip()


def format_value(key: str, x: float, currency: str = "USD", delta: bool = False, sig: int = 4,
                 bare: bool = False) -> str:
    """``x`` of metric ``key`` as a person reads it: ``99.91 %``, ``12.35 failures``, ``1.73 M GPU-h``,
    ``17.29 GWh``, ``USD 1.4 M``, ``78.2 °C``. With ``delta`` the value is a difference: signed, and
    a fraction's difference in percentage points (``+0.12 pp``). An uncatalogued key prints as a
    plain number. ``bare``: without the unit where it is not bound to a multiplier (the ``%`` or
    ``pp``, the currency, a count's or hours' unit; kWh, W and °C stay), for the bounds of an
    interval next to a value that has it."""
    m = find(key)
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if bare and m is not None and m.fmt in ("percent", "money", "count", "hours", "days"):
        full = format_value(key, x, currency, delta, sig)
        unit = {"percent": "pp" if delta else "%", "money": currency or "currency units"}.get(m.fmt, m.unit)
        if m.fmt == "days":
            unit = "days"
        return full[: -len(unit)].rstrip() if unit and full.endswith(unit) else full
    x = float(x)
    if m is None:
        return plain(x, sig, delta)
    f = m.fmt
    if f == "percent":
        return f"{plain(100 * x, sig, delta)} {'pp' if delta else '%'}"
    if f == "money":
        cur = currency or "currency units"
        if math.isinf(x):
            return plain(x, sig, delta)
        a = abs(x)
        for lim, div, p in ((1e9, 1e9, "bn"), (1e6, 1e6, "M"), (1e4, 1e3, "k")):
            if a >= lim:
                return f"{plain(x / div, sig, delta)} {p} {cur}"
        return f"{plain(x, sig, delta)} {cur}"
    if f == "energy_kwh":
        return _scaled(x, "", delta, sig, base_units=("kWh", "MWh", "GWh", "TWh"))
    if f == "power_w":
        return _scaled(x, "", delta, sig, base_units=("W", "kW", "MW", "GW"))
    if f == "power_kw":
        return _scaled(x, "", delta, sig, base_units=("kW", "MW", "GW"))
    if f == "ramp_w_per_h":
        return _scaled(x, "", delta, sig, base_units=("W/h", "kW/h", "MW/h", "GW/h"))
    if f == "temperature_c":
        return f"{plain(x, sig, delta)} °C"
    if f == "ratio":
        return plain(x, sig, delta)
    if f == "days":
        return _scaled(x, "days", delta, sig)
    return _scaled(x, m.unit, delta, sig)


def format_interval(key: str, lo: float, hi: float, currency: str = "USD", delta: bool = False,
                    bare: bool = True) -> str:
    """``[lo, hi]`` in the metric's format (``bare``: without a unit that the value beside it shows)."""
    return f"[{format_value(key, lo, currency, delta, bare=bare)}, {format_value(key, hi, currency, delta, bare=bare)}]"


def catalogue_markdown() -> str:
    """``docs/metrics-reference.md``: every entry, grouped."""
    lines = ["# Metrics reference", "",
             "Generated from the metric catalogue (`twin/report/metrics.py`) by `python -m twin.docs`; do not",
             "edit by hand (a test checks it is up to date). Every human-facing table and figure names a metric",
             "by its label and prints it in its format; machine outputs (`*.parquet`, `*.json`) keep the key",
             "and the raw value (a percent is stored as a fraction, money in the scenario's currency). A `*` in",
             "a key stands for one suffix: a part type, a cause or a crew pool. Better: which way is better",
             "(`higher`, `lower`, or `–` when neither).", ""]
    for g in GROUPS:
        lines += [f"## {g}", "", "| key | label | unit | better | format | meaning |", "|---|---|---|---|---|---|"]
        for m in CATALOGUE:
            if m.group == g:
                better = {1: "higher", -1: "lower", 0: "–"}[m.direction]
                lines.append(f"| `{m.key}` | {m.label.replace('{}', '*part*')} | {m.unit} | {better} | {m.fmt} "
                             f"| {m.meaning} |")
        lines.append("")
    return "\n".join(lines)


__all__ = ["CATALOGUE", "FORMATS", "GROUPS", "Metric", "UnknownMetric", "by_group", "catalogue_markdown",
           "direction", "find", "format_interval", "format_value", "group", "label", "label_with_unit", "lookup",
           "SELF_SCALED",
           "missing", "plain", "unit_label"]
