"""How each metric of ``summary.json`` (and of every experiment's ``summaries.parquet``) is computed:
with the metric catalogue (:mod:`twin.report.metrics`: label, unit, direction, group, meaning), the
source of ``twin explain METRIC``.

One entry per metric, or per family of metrics with a suffix (``failures.<part>``,
``power.down_node_hours.<cause>``): how the model computes it, in the words of the user guide's
model pages (``docs/guide/``). What it means, its unit and which way is better live in the catalogue only. A test runs
short replications of bundled scenarios that have every model section and checks that every metric
they record is both catalogued and explained here.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class MetricDoc:
    """One metric, or a family of them: ``name`` may end in a placeholder (``failures.<part>``)."""

    name: str
    computed: str

    @property
    def pattern(self) -> re.Pattern[str]:
        """The metric names this entry explains (a placeholder matches one name segment: letters, digits, _ : / -)."""
        parts = re.split(r"(<[a-z_]+>)", self.name)
        body = "".join(r"[A-Za-z0-9_:/\-]+" if p.startswith("<") else re.escape(p) for p in parts)
        return re.compile(f"^{body}$")

    @property
    def prefix(self) -> str:
        """The fixed part before a placeholder ('' for a plain name)."""
        return self.name.split("<", 1)[0] if "<" in self.name else ""


_H = MetricDoc
METRICS: tuple[MetricDoc, ...] = (
    _H('goodput.mechanism.<mechanism>', 'slowdown GPU-hours by the sequential rule (thermal, fail_slow, power, fabric, '
       'data; with NVLink domains placement first and nvlink_slowdown before the fabric); down GPU-hours by the '
       'cause that took each node down; lost work by interruption cause; checkpoint, restart, reconfigure and idle '
       'GPU-hours; data_stall: running GPU-hours lost to a data share below the demand (r_fabric − r); '
       'storage_outage: running GPU-hours of data-reading jobs stalled in storage outages plus GPU-hours of jobs '
       'whose checkpoint write or restart waited for the storage; each / installed GPU-hours (with goodput they '
       'sum to 1)'),
    _H('goodput.mechanism.failure.<part>', 'down and lost GPU-hours whose cause is the part (or repair:<part>) '
       '/ installed GPU-hours'),
    _H('goodput.slowdown.<source>', 'Σ over jobs of GPUs × the slowdown hours charged to the source: thermal '
       '1 − r_thermal, fail_slow r_thermal − r_failslow (parts with effect degraded), power r_failslow − '
       'r_speed, fabric r_speed − r_fabric, data (or storage_outage, in an outage) r_fabric − r with '
       'r = min(r_fabric, share / demand) (without data reads r_fabric = r); with '
       'NVLink domains (cluster.nvlink) placement 1 − r_place (the job\'s NVLink blocks, gcd of its GPUs per '
       'domain, smaller than its layout\'s domain), thermal r_place − r_thermal, nvlink r_speed − r_nvlink '
       '(switch trays down: h/n of the NVLink bandwidth), fabric r_nvlink − r_fabric; / installed GPU-hours'),
    _H('goodput.storage_wait', 'Σ over jobs of GPUs × hours a checkpoint write or a restart waited for the storage '
       '(an outage) / installed GPU-hours'),
    _H('step.share.<component>', 'Σ over layout jobs of GPUs × ∫ (component / step time) dt over running hours, '
       '/ Σ GPUs × running hours; the step by component from twin/physics/parallel.py step_breakdown at the '
       'job\'s current speed, fabric share, NVLink block and NVLink share (re-evaluated only when one changes)'),
    _H('step.mean_s', 'Σ over layout jobs of GPUs × ∫ step time dt / Σ GPUs × running hours'),
    _H('step.ideal_s', 'Σ over layout jobs of GPUs × running hours × the step at full speed, healthy fabric and '
       'NVLink in the layout\'s domain / Σ GPUs × running hours'),
    _H('goodput.down.<cause>', 'down node-hours of the cause × GPUs per node / installed GPU-hours'),
    _H('goodput.lost.<cause>', 'Σ over interruptions of the cause of lost_h × the job\'s GPUs / installed GPU-hours'),
    _H('repair.remediated', 'done tickets with rung 1 (automated remediation cleared the fault)'),
    _H('repair.replaced', 'done tickets with rung 2 (the replacement cleared the fault)'),
    _H('repair.escalated', 'done tickets with rung 3 (escalated after a replacement that did not clear it)'),
    _H('repair.remediation_h', 'mean over tickets that tried remediation of remediated_h − detected_h'),
    _H('repair.escalation_h', 'mean over escalated tickets of the escalation time drawn'),
    _H('repair.wait_crew_h.<class>', 'mean over tickets of the impact class (impact_gpus at dispatch: 0, up to one '
       "node's GPUs, more) of start_h − spare_h"),
    _H('rma.sent.<part>', 'replacements of the part whose spares have rma_turnaround_days'),
    _H('rma.at_vendor_mean.<part>', 'time-weighted mean of the level rma_at_vendor.<part> over the horizon'),
    _H('spares_scrapped.<part>', 'RMA sends that did not come back (drawn per part with rma_return_share)'),
    _H('ccf_events.<part>', "common events drawn at β·λ per group on the group's own stream"),
    _H('ccf_failures.<part>', 'working units a common event failed (each with its own ticket)'),
    _H('node_down_hours_ccf.<part>', 'node_intervals rows whose cause is ccf:<part>, summed'),
    _H('ccf_unit_hours.<part>', 'Σ over units failed by a common event of (repair or horizon − event time)'),
    _H('latent_found_test.<part>', 'latent failures of the part whose ticket started at a periodic test'),
    _H('latent_found_demand.<part>', 'latent failures of the part whose ticket started when a demand found it'),
    _H('power.maintenance_windows', 'maintenance windows that started within the horizon'),
    _H('power.maintenance_hours', 'Σ of the windows\' durations within the horizon'),
    _H('power.maintenance_exposure_hours', 'hours a feed ran on maintenance bypass or its load on the other '
       'feed alone'),
    _H('queue_wait_h.mean.<size>', 'mean over jobs of at most N nodes (nodes_le_N) of first_start_h − submit_h'),
    _H('starvation.advisories', 'head jobs whose time with no bound on their start passed '
       'scheduler.starvation_advisory_h'),
    _H('starvation.unreserved_h', 'the largest total time a head job spent with no bound on its start'),
    _H('reconfigure_gpu_hours', 'Σ over elastic reconfigurations of reconfigure_h × the job\'s GPUs'),
    _H('goodput.reconfigure', 'reconfigure_gpu_hours / installed GPU-hours'),
    _H('elastic.starts', 'starts of jobs with an elastic block'),
    _H('elastic.shrinks', 'node losses an elastic job rode through on fewer whole replicas'),
    _H('elastic.swaps', 'node losses an elastic job covered with free nodes'),
    _H('elastic.grows', 'times an elastic job took free nodes back'),
    _H('elastic.reduced_hours', 'Σ of the hours elastic jobs ran with fewer replicas than asked'),
    _H('elastic.kept_gpu_hours', 'progress made while short × the GPUs that made it'),
    _H('health.lemons', 'nodes whose failures exceed the frailty-free 99th percentile, or quarantined'),
    _H('health.lemon_down_share', 'down node-hours of lemon nodes / all down node-hours'),
    _H('health.quarantines', 'nodes that reached k failures in the window (health.frailty.quarantine)'),
    _H('health.frailty_max', 'the largest gamma multiplier drawn over the nodes'),
    _H('health.infant_defects', 'replacements drawn defective (probability health.infant.probability)'),
    _H('stragglers.episodes', 'failures of parts with effect degraded'),
    _H('stragglers.swaps', 'episodes the swap policy ended by draining the node after detection'),
    _H('stragglers.node_hours', 'Σ over episodes of their duration'),
    _H('stragglers.speed_lost_node_hours', 'Σ over episodes of duration × (1 − speed)'),
    _H('sdc.defective_nodes', 'nodes drawn defective with probability health.sdc.probability'),
    _H('sdc.corruptions', 'corruption events of defective nodes'),
    _H('sdc.harmless', 'corruptions on a node that ran no job'),
    _H('sdc.discarded', 'detections of a corruption whose job had restarted since from a checkpoint captured '
       'before it (its running state no longer held the corruption): no rollback, no test'),
    _H('sdc.rollbacks', 'jobs rolled back to the last checkpoint captured before the corruption'),
    _H('sdc.lost_gpu_hours', 'Σ over rollbacks of progress lost × the job\'s GPUs'),
    _H('sdc.found_by_test', 'defective nodes the post-detection test found'),
    _H('horizon_h', 'horizon_days × 24'),
    _H('nodes', 'cluster.racks × cluster.nodes_per_rack'),
    _H('gpus_installed', 'nodes × cluster.node.gpus'),
    _H('events_processed', 'counted by the engine'),
    _H('node_availability',
       'Σ over nodes of up hours / (nodes × horizon_h); a node is down from the failure that takes it down '
       '(or a trip, a drain, a power shortfall) until it is back, burn-in included'),
    _H('fleet_capacity_availability', 'time-weighted mean of the nodes up (the capacity table) / nodes'),
    _H('node_down_hours', 'Σ over node_intervals with state down of (end_h − start_h)'),
    _H('node_down_hours.<part>',
       'the node_intervals rows whose cause is that part; with the other causes they add up to '
       'node_down_hours'),
    _H('node_cut_hours', 'Σ over node_intervals with state cut of (end_h − start_h)'),
    _H('failures', 'Σ of failures.<part>'),
    _H('failures.<part>', "counted when a unit's drawn time to failure elapses (or its aged life is used up)"),
    _H('stockouts', 'Σ of stockouts.<part>'),
    _H('stockouts.<part>',
       "counted by the part's (s, Q) inventory when a repair asks for a spare and the stock is 0"),
    _H('stockout_share.<part>', 'stockouts.<part> / spare demands (NaN without demands)'),
    _H('crew_utilisation.<pool>', "hands-on repair hours / (technicians × on-shift hours of the pool's calendar)"),
    _H('repair.wait_detect_h', 'mean over tickets of detected_h − fail_h'),
    _H('repair.wait_spare_h', 'mean over tickets of spare_h − detected_h'),
    _H('repair.wait_crew_h', 'mean over tickets of start_h − spare_h'),
    _H('repair.hands_on_h', 'mean over tickets of end_h − start_h'),
    _H('repair.burn_in_h', 'mean over tickets of back_h − end_h'),
    _H('useful_gpu_hours',
       'Σ over jobs of kept progress (ideal hours) × GPUs, progress-weighted (an hour at speed 0.8 counts '
       '0.8)'),
    _H('goodput',
       'useful_gpu_hours / (nodes × GPUs per node × horizon_h), hot spares included; goodput.* break it down'
       ' and sum to 1'),
    _H('goodput.useful', 'useful_gpu_hours / installed GPU-hours'),
    _H('goodput.lost', 'lost_gpu_hours / installed GPU-hours'),
    _H('goodput.checkpoint', 'checkpoint_gpu_hours / installed GPU-hours'),
    _H('goodput.restart', 'restart_gpu_hours / installed GPU-hours'),
    _H('goodput.slowdown', '(running GPU-hours − progress GPU-hours made) / installed GPU-hours'),
    _H('goodput.down', 'node-hours down × GPUs per node / installed GPU-hours'),
    _H('goodput.idle', '1 − the other goodput shares'),
    _H('utilisation', '(running + checkpoint + restart GPU-hours) / installed GPU-hours'),
    _H('lost_gpu_hours', 'Σ over jobs of lost hours × GPUs'),
    _H('checkpoint_gpu_hours',
       'Σ over jobs of checkpoint hours × GPUs (an asynchronous checkpoint counts its stall)'),
    _H('restart_gpu_hours',
       'Σ over jobs of restart hours × GPUs (detection_h + reschedule_h + read time + GPUs × init_s_per_rank + warmup_h per restart)'),
    _H('jobs_submitted', 'listed jobs, synthetic arrivals and trace rows'),
    _H('jobs_completed', 'jobs in state done'),
    _H('interruptions',
       'an allocated node going down (or cut, for a multi-node job), a transient fault on one, or a planned '
       'drain'),
    _H('interruptions.planned', 'interruptions flagged planned'),
    _H('interruptions.unplanned', 'interruptions not flagged planned'),
    _H('interruptions.<cause>', "the jobs table's interruption rows with that cause"),
    _H('queue_wait_h.mean', 'mean over jobs submitted after workload.warmup_h that started'),
    _H('queue_wait_h.jobs', 'jobs submitted after warm-up that started'),
    _H('ettr.max_job',
       'kept work in ideal hours / wall time from its first start to its completion (or the horizon)'),
    _H('max_job.kept_h', "the job's progress hours"),
    _H('max_job.interruptions', 'its interruption rows'),
    _H('thermal.throttled_gpu_hours',
       "integrated exactly between events from the RC model's closed-form threshold crossings"),
    _H('thermal.speed_loss_gpu_hours',
       'Σ over busy GPU-hours of (1 − speed), speed = ((P_cap − P_idle)/(P_d − P_idle))^α'),
    _H('thermal.mean_speed', 'Σ speed × busy hours / busy hours'),
    _H('thermal.trips', 'rows of the thermal_trips table'),
    _H('thermal.trips.<reason>', 'thermal_trips rows with that reason'),
    _H('thermal.trip_node_hours', 'Σ over trips of (end_h or the horizon − start_h)'),
    _H('thermal.inlet_above_27c_node_hours', "integrated from the zones' supply temperature steps"),
    _H('thermal.gpu_temp_p<q>_c',
       "from the histogram of GPU-hours in 1 °C bins, the bin's middle, at most thermal.gpu_temp_max_c"),
    _H('thermal.gpu_temp_max_c', 'maximum over the replication'),
    _H('cooling.zone_over_capacity_hours', 'Σ over zones of the hours with Q > Q_cap'),
    _H('cooling.loop_no_flow_hours', 'Σ over loops of the hours without flow'),
    _H('response.actions', "cooling_response rows with action cap or drain: a zone's plan set or changed, "
       "response_h after its target supply reaches its lowest trip supply, then at capacity or supply changes"),
    _H('response.capped_node_hours', 'Σ over zones of the nodes × hours with a finite operator cap'),
    _H('response.drained_node_hours', 'Σ over zones of the drained nodes × hours'),
    _H('leak.events', 'failures of the node leak units (cooling.liquid.leak.failure)'),
    _H('leak.detected', 'leaks whose detection draw (stream leak_detect) fell below leak.detection.probability'),
    _H('leak.nodes_destroyed', 'rows of the leak_damage table: nodes of undetected leaks whose damage draw (stream '
       'leak_damage) fell below leak.damage.probability'),
    _H('leak.loop_events', 'failures of the loop_leak units (cooling.liquid.leak.loop)'),
    _H('plant.loop_offset_max_c', 'largest x at the plant\'s events, x(t) = x_ss + (x0 − x_ss)·e^(−t/τ) with '
       'x_ss = max(0, Q − Q_cap)·R, R = τ/(4186·V) (x is monotone between events)'),
    _H('plant.capacity_short_hours', 'Σ of the time with the running chillers\' capacity below the IT heat of the '
       'loop (both taken at the plant\'s events)'),
    _H('plant.power_stops.<kind>', 'units of the kind that went from powered to unpowered (off UPS: the feed '
       'left utility/generator; on UPS: the feed went dead)'),
    _H('plant.power_off_unit_hours.<kind>', 'Σ over units of (power back + restart_s − power lost)'),
    _H('plant.transfers.<kind>', 'dual-fed units that moved to their other (live) feed when theirs died'),
    _H('plant.transfer_failures.<kind>', 'transfers drawn as failed with power.ats.failure_to_transfer_prob on the '
       'stream cooling.plant.<kind><i>.ats#transfer'),
    _H('plant.maintenance_windows', 'cooling maintenance windows that started within the horizon'),
    _H('plant.maintenance_hours', 'Σ of the windows\' durations within the horizon'),
    _H('plant.maintenance_exposure_hours', 'Σ of the windows of units whose group has more units than required '
       '(and were not drained)'),
    _H('plant.maintenance_short_hours', 'Σ of the windows of units whose group has exactly the units required '
       '(and, with when_short: drain, were not drained)'),
    _H('plant.maintenance_drains', 'visits with when_short: drain that found fewer than required other units of the '
       'group healthy and in service at their start'),
    _H('plant.maintenance_drained_hours', 'Σ of the windows of the visits that drained'),
    _H('plant.maintenance_drained_node_hours', 'Σ over drained visits of the nodes the unit cools × (min(start + '
       'duration + cooling.node.reboot_h, horizon) − start)'),
    _H('energy.it_kwh', 'exact sum of the piecewise-constant site IT power over time'),
    _H('energy.cooling_kwh',
       'heat × (fan/pump kW per kW + 1/COP unless free cooling), COP = max(2, 5 − 0.1·(T_out − 25))'),
    _H('energy.losses_kwh', 'facility − IT − cooling energy, with facility = (IT/η_UPS + cooling)/η_transformer'),
    _H('energy.facility_kwh', '(IT/η_UPS + cooling)/η_transformer'),
    _H('energy.peak_it_kw', 'maximum of the site IT power level'),
    _H('energy.peak_facility_kw', 'maximum of the facility power'),
    _H('energy.free_cooling_hours.<plant>', 'hours with the outdoor temperature ≤ supply − approach'),
    _H('density.rack_kw', 'cluster.nodes_per_rack × cluster.node.nameplate_w / 1000'),
    _H('density.rack_limit_kw', 'cluster.rack.power_limit_kw, else cooling.density.<type>_rack_kw'),
    _H('density.racks_at_limit', 'ceil(nodes / min(floor(limit / nameplate), floor(u_space / u_height)))'),
    _H('density.white_space_m2', 'racks × rack_m2 + CRAH units × crah_m2 + CDUs × cdu_m2 (cooling.density)'),
    _H('energy.server_fans_kwh', 'Σ over nodes up of (healthy/count)·P_max·s³ × duration, s = min(1, demand·count/'
       'healthy), demand = max(min_speed, load·(T_exh − T_design)/(T_exh − T_inlet)) (twin.physics.fans)'),
    _H('fans.peak_speed', 'max over events and working fans of s = min(1, demand·count/healthy)'),
    _H('energy.chiller_cop_seasonal', 'Σ chilled load × duration / Σ chilled load / COP(PLR, T_wb + approach) × '
       'duration'),
    _H('pue', 'energy.facility_kwh / energy.it_kwh (daily in pue_daily)'),
    _H('pue.flat', 'costs.energy.pue, reported only without a cooling section (the energy cost is IT energy × it)'),
    _H('water.evaporated_l', 'Σ over intervals of Q_air × max(0, T_db − T_supply)/ΔT_IT × duration / h_fg '
       '(h_fg = 2.45 MJ/kg, 1 kg = 1 L), T_supply = max(set point, T_wb + (1 − ε)(T_db − T_wb)) with water, '
       'max(set point, T_db) without'),
    _H('water.site_l', 'water.evaporated_l × (1 + blowdown_share)'),
    _H('water.wue_l_per_kwh', 'water.site_l / energy.it_kwh'),
    _H('cooling.evaporative.wet_hours', 'hours with T_db > set point, the water supply up and evaporation > 0'),
    _H('cooling.evaporative.dry_hours', 'the horizon less cooling.evaporative.wet_hours'),
    _H('cooling.evaporative.fallback_hours', 'hours with T_db > set point while the water supply part was failed'),
    _H('cooling.evaporative.above_setpoint_hours', "hours the hour's base supply (wet or dry) exceeded the set point"),
    _H('cooling.evaporative.outside_envelope_hours', 'hours whose supply (T, dew point, RH by PsychroLib at the '
       "site's pressure) is outside cooling.air.evaporative.humidity.envelope"),
    _H('cooling.evaporative.humidity_outside_envelope_hours', 'as outside_envelope_hours, dew point or RH only'),
    _H('cooling.evaporative.supply_dew_point_max_c', 'maximum over intervals not in mechanical mode'),
    _H('cooling.evaporative.supply_rh_max', 'maximum over intervals not in mechanical mode'),
    _H('cooling.evaporative.trim_hours', 'hours with 0 < chiller share < 1 (share = (T_pad − set point)/ΔT_IT)'),
    _H('cooling.evaporative.mechanical_hours', 'hours with chiller share 1 (no feasible pads-on or pads-off mode)'),
    _H('cooling.evaporative.water_cap_hours', 'Σ duration × (1 − share of the interval before the cap is reached)'),
    _H('cooling.evaporative.chiller_kwh', 'Σ Q_air × chiller share / COP × duration'),
    _H('power.down_node_hours', 'Σ of power.down_node_hours.<cause>'),
    _H('power.down_node_hours.<cause>', "integrated over each node's power state"),
    _H('power.capped_gpu_hours', 'integrated between events'),
    _H('power.capped_node_hours', 'integrated between events'),
    _H('power.site_capped_gpu_hours', 'integrated between events'),
    _H('power.site_cap_exceeded_hours', 'integrated between events'),
    _H('power.it_energy_kwh', 'Σ of IT power × time, exactly'),
    _H('power.ups_loss_kwh', '(1 − efficiency) × energy through each UPS'),
    _H('power.peak_w', 'maximum of the site_power_w level'),
    _H('power.mean_w', 'time-weighted mean of the site_power_w level'),
    _H('power.max_step_w', 'largest jump of the site_power_w level'),
    _H('power.max_ramp_w_per_h', 'largest change of the site_power_w level within one hour'),
    _H('power.utility_outages', 'outages drawn from utility.outages_per_year, and injected ones'),
    _H('power.feed_outages', 'rows of the power_outages table'),
    _H('power.outages_reaching_load', 'power_outages rows with dead_h > 0'),
    _H('power.generator_starts', 'one per feed outage with a generator'),
    _H('power.generator_start_failures', 'drawn with the start failure probability'),
    _H('power.transfer_failures', 'drawn per generator start with ats.failure_to_transfer_prob on the stream '
       'power.feed<X>.ats#transfer'),
    _H('power.feed_dead_hours', 'Σ over power_feeds rows in state dead of (end_h − start_h)'),
    _H('power.ups_shortfalls', 'a modular UPS falling below ups.modules.required working modules'),
    _H('power.ups_short_hours', 'Σ over feeds of the hours below ups.modules.required working modules'),
    _H('power.ups_bypass_failures', 'drawn per shortfall with ups.bypass.failure_to_transfer_prob on the stream '
       'power.feed<X>.ups#bypass'),
    _H('power.ups_faults', 'faults at ups.fault.per_year (stream power.feed<X>.ups#fault) that hit a UPS in service'),
    _H('power.generator_short_hours', 'Σ over feeds of the hours below generator.modules.required available sets'),
    _H('power.generator_set_start_failures', 'drawn per available set and demand with generator.start_failure_prob '
       'on the stream power.feed<X>.generator.set<jj>#start'),
    _H('power.generator_run_failures', 'running sets failing at generator.modules.run_failure_per_h (stream '
       'power.feed<X>.generator.set<jj>#run)'),
    _H('power.generator_trips', 'running plants left with fewer than generator.modules.required running sets'),
    _H('power.switching_errors', 'drawn per maintenance visit with switching_error_prob on the stream '
       'power.feed<X>.<unit>#switching'),
    _H('power.test_unit_hours', 'Σ of test_duration_h over the periodic tests of working units'),
    _H('power.generator_block_trips', 'transfers whose step (feed load / generator.block_load.steps) exceeded '
       'max_step_frac × rating_kw'),
    _H('power.hall_losses', 'times every feed was in state dead at once (power_feeds)'),
    _H('power.restart_node_hours', 'Σ over nodes of the power:restart hold: facility_h + fabric_h + storage_h + '
       'j × batch_h for batch j, per hall-wide loss'),
    _H('power.power_cycle_failures', 'drawn per unit with recovery.power_cycle_failure_prob on the stream '
       'power.recovery.<part>#cycle at its batch power-up'),
    _H('power.oversub_feed_losses', 'a feed dead while another is live, with oversubscription set'),
    _H('power.oversub_trips', 'feed losses where the trip curve at IT power / feed_capacity_kw was shorter than '
       'capping_latency_s'),
    _H('power.oversub_capped_hours', 'from capping_latency_s after a feed loss to every feed live again'),
    _H('power.oversub_peak_overload', 'max over feed losses of IT power / feed_capacity_kw at the loss'),
    _H('power.grid_dr_requests', 'requests from demand_response.per_year (stream power.grid#dr_arrival) and the file'),
    _H('power.grid_dr_hours', 'hours with at least one request running (union)'),
    _H('power.grid_dr_short_hours', 'hours the limit was below every up node at its min_w (cluster.node.gpu.min_w, or its pool\'s)'),
    _H('power.grid_dr_shed_kwh', 'Σ of reduce_kw × duration over requests (the part before the horizon)'),
    _H('power.grid_dr_earnings', 'power.grid_dr_shed_kwh × power.grid.dr_price_per_kwh'),
    _H('power.grid_outages', 'outage rows of power.grid.file before the horizon'),
    _H('hazards.events', 'Σ of hazards.events.<name>'),
    _H('hazards.events.<name>', 'events of the zone event or group (streams hazards.<name>) that failed a unit'),
    _H('hazards.units_failed', 'units those events failed (working units only)'),
    _H('network.access_links', 'from the topology (nodes, rails, nodes_per_leaf, uplinks, optics_per_link)'),
    _H('network.links', 'from the topology (nodes, rails, nodes_per_leaf, uplinks, optics_per_link)'),
    _H('network.optics', 'from the topology (nodes, rails, nodes_per_leaf, uplinks, optics_per_link)'),
    _H('network.leaves', 'from the topology (nodes, rails, nodes_per_leaf, uplinks, optics_per_link)'),
    _H('network.spines', 'from the topology (nodes, rails, nodes_per_leaf, uplinks, optics_per_link)'),
    _H('network.groups', 'from the topology (nodes, rails, nodes_per_leaf, uplinks, optics_per_link)'),
    _H('storage.bandwidth_gb_per_s.mean', 'time integral of the bandwidth in use / horizon_h; in use = '
       'min(write bandwidth, Σ checkpoint writes) + min(read bandwidth the writes leave, Σ checkpoint reads + '
       'Σ data shares), at the servers up; 0 in an outage'),
    _H('storage.bandwidth_gb_per_s.peak', 'largest bandwidth in use (as for the mean) at any change'),
    _H('storage.downtime_h', 'Σ of the storage_outages table (end_h − start_h): metadata units up < required, or '
       'servers up < required; closed at the horizon'),
    _H('storage.availability', '1 − storage.downtime_h / horizon_h'),
    _H('storage.outages', 'rows of the storage_outages table'),
    _H('storage.jobs_stopped', 'jobs of the storage_jobs table with storage_stops > 0 (a storage outage found them '
       'reading data, or writing or reading a checkpoint, or one fell due)'),
    _H('storage.outage_gpu_hours', 'Σ of the storage_jobs table\'s outage_gpu_hours: (stalled running hours + '
       'blocked checkpoint or restart hours) × GPUs'),
    _H('storage.data_stall_gpu_hours', 'Σ of the storage_jobs table\'s data_stall_gpu_hours: running hours × '
       '(r_fabric − r) × GPUs outside outages, r = min(r_fabric, share / demand)'),
    _H('storage.data_jobs', 'jobs with a read demand > 0 after the node caches'),
    _H('network.trunk_links', 'from the topology (nodes, rails, nodes_per_leaf, uplinks, optics_per_link)'),
    _H('network.bisection_fraction', 'time-weighted mean of the healthy uplink share'),
    _H('network.bisection_fraction.min', 'minimum of the bisection level'),
    _H('network.spine_availability', 'time-weighted mean of healthy spines / spines'),
    _H('network.link_flaps', 'drawn at link_flaps_per_link_per_year per link'),
    _H('network.link_flaps_skipped', 'counted, not applied'),
    _H('network.trunk_flaps', 'drawn at trunk_flaps_per_link_per_year per uplink'),
    _H('network.cut_node_hours', 'Σ of network.cut_node_hours.<cause>'),
    _H('network.cut_node_hours.<cause>', "integrated over each node's cut periods"),
    _H('cost.total', 'capital + energy + repair parts + labour + spares holding + water'),
    _H('cost.per_useful_gpu_hour', 'cost.total / useful_gpu_hours'),
    _H('cost.capital',
       'each purchase P amortised as an annuity and prorated: P·CRF·T, CRF = r/(1 − (1+r)^−n), T = days/365'),
    _H('cost.capital.<group>', "the costs table's capital rows of that group"),
    _H('cost.capital_purchase', "Σ of the costs table's purchase column"),
    _H('cost.energy', 'Σ P_IT·PUE·price·Δt over the piecewise-constant site IT power (flat or time-of-use price)'),
    _H('cost.energy_kwh', 'IT energy × PUE'),
    _H('cost.repair_parts', 'repairs × part price (costs.parts), plus cost.leak_damage'),
    _H('cost.leak_damage', 'leak.nodes_destroyed × (capital.node of the type + PSUs per node × capital.psu)'),
    _H('cost.labour', 'technicians × on-shift hours × rate'),
    _H('cost.spares_holding', 'holding rate (25 %/yr) × part price × mean units on hand × T'),
    _H('cost.water', 'water.site_l / 1000 (m³) × costs.water_per_m3; 0 without evaporative cooling'),
    # the life of a hall: a scenario with a timeline (twin/life.py, docs/guide/timeline.md)
    _H('installation.node_hours', 'Σ over the installation windows of nodes × hours within the horizon (racks × '
       'nodes per rack × hours_per_rack for a step\'s work)'),
    _H('installation.windows', 'the drains of the installation section (waves of crews racks)'),
    _H('life.stages', 'the steps before the horizon + 1'),
    _H('cost.stages', "Σ over the stages of each stage's cost.total"),
    _H('cost.steps', 'Σ over the steps of step_capital.<step>'),
    _H('stage_<metric>.<k>', "stage k's own metric (stage 0 before the first step), from its own run"),
    _H('step_works.<step>', 'timeline.steps.capital'),
    _H('step_nodes_replaced.<step>', 'the nodes of the racks whose node type the step changes (cluster.node.type, '
                                     'or a rack given to or taken from a pool: cluster.pools), else 0'),
    _H('step_writeoff.<step>', 'Σ over the replaced nodes of price × (1 − (1 + r)^−(n − a)) / (1 − (1 + r)^−n), '
       'a their age in years, n amortisation_years, r discount_rate ((n − a)/n at r = 0; 0 once a ≥ n)'),
    _H('step_resale.<step>', 'nodes replaced × resale_per_node'),
    _H('step_disposal.<step>', 'nodes replaced × disposal_per_node'),
    _H('step_plant_removed.<step>', 'Σ over the cooling and power capital items the stage after holds less of: the '
       'quantity removed (oldest lots first) × its unit price'),
    _H('step_plant_writeoff.<step>', 'Σ over the plant removed of quantity × price × (1 − (1 + r)^−(n − a)) / '
       '(1 − (1 + r)^−n), a its lot\'s age in years, n its amortisation years (facility_amortisation_years)'),
    _H('step_plant_resale.<step>', 'step_plant_removed × plant_resale_share'),
    _H('step_capital.<step>', 'works + write-off − resale + disposal + plant write-off − plant resale'),
    _H('step_purchase.<step>', 'cost.capital_purchase of the stage after the step − that of the stage before'),
    _H('step_install_node_hours.<step>', "installation.node_hours of the step's stage"),
    _H('headroom_<check>.<k>', "capacity − load of the check in stage k (twin/scenario/headroom.py): the load "
       "is every node at full power (non-GPU + GPUs × TDP), or at nameplate for the rack"),
    _H('headroom_min.<check>', 'the least headroom_<check> over the stages'),
    _H('forecast.days', "each replication runs until the job completes; its completion time is work + Σ losses "
       "(the identity of twin forecast, exact per replication), from the job's submission"),
    _H('forecast.days_lost.<cause>', "an interruption cause's lost work (progress since the last checkpoint), "
       "restart time and requeue wait; or the checkpoint, throttling, network-slowdown or initial-queueing time"),
    _H('forecast.days_saved', 'paired over replications (common random numbers): baseline days − lever days'),
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
    """What ``twin explain NAME`` prints: the catalogue's label, unit, direction, group and meaning,
    and how it is computed; raises KeyError for a name no entry explains."""
    from twin.report import metrics as catalogue

    doc = lookup(name)
    entry = catalogue.find(name)
    if doc is None or entry is None:
        raise KeyError(name)
    family = f" (one of {doc.name})" if doc.name != name else ""
    better = {1: "higher is better", -1: "lower is better", 0: "no better direction"}[entry.direction]
    return [f"{name}{family}: {catalogue.label(name)}", f"  unit:     {catalogue.unit_label(name) or entry.unit}",
            f"  means:    {entry.meaning}", f"  group:    {entry.group} ({better})",
            f"  computed: {doc.computed}"]
