"""The ``cooling`` component: the object that owns the rooms of this package (see its docstring) and wires
them to the bus.

``Thermal`` makes the parameters every room reads (``arrays.CoolingParams``) and the arrays the rooms share
(``arrays.CoolingArrays``), builds each room in the original order (the order matters: facility parts and
bus subscriptions are registered as they are built), gives each room the rooms it calls (``_wire``), and
owns the lifecycle (``start``, ``finish``, ``results``) and the node up/down handlers that involve several
rooms. The hot paths (``GpuState._update_now``, the replay) bind the shared arrays to locals.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

from twin.errors import InputError
from twin.model.cooling.ageing import Ageing
from twin.model.cooling.air import AirRooms
from twin.model.cooling.arrays import CoolingArrays, CoolingParams, pool_thermal
from twin.model.cooling.common import _HIST_MAX_C, INF
from twin.model.cooling.energy import EnergyPue
from twin.model.cooling.evaporative import EvaporativeAir
from twin.model.cooling.gpu import GpuState
from twin.model.cooling.lazy import LazyCrossings
from twin.model.cooling.leaks import Leaks
from twin.model.cooling.liquid import LiquidLoops
from twin.model.cooling.powered import PlantLink
from twin.model.cooling.replay import DeferredReplay
from twin.model.cooling.response import OperatorResponse
from twin.model.cooling.trips import Trips
from twin.model.engine import Topic
from twin.model.component import BuildContext, Component, ResultsSoFar
from twin.model.it_power import IT_POWER
from twin.model.causes import DownCause
from twin.model.cluster import SpeedSource
from twin.model.parts import PART_FAILED, PART_RESTORED, FacilityParts

from twin.scenario.schema import Scenario


class Thermal(Component):
    """Component for the ``cooling`` section (see the package docstring). Requires the shared IT power
    (it caps GPUs through it); owns the cooling units (CRAH, CDU, pumps, leaks) as site-level parts."""

    name = "cooling"
    requires = (IT_POWER,)

    @classmethod
    def wanted(cls, sc: Scenario) -> bool:
        return sc.cooling is not None

    @classmethod
    def build(cls, ctx: BuildContext) -> Thermal:
        return cls(ctx)

    def __init__(self, ctx: BuildContext) -> None:
        self.ctx = ctx
        self.engine = eng = ctx.engine
        self.cluster = cl = ctx.cluster
        self.parts = ctx.parts
        self.shop = ctx.shop
        self._facility: dict[str, FacilityParts] = {}
        sc = ctx.sc
        c = sc.cooling
        assert c is not None
        on = bool(c.thermal)
        n, g = cl.n_nodes, cl.gpus_per_node
        # thermal units: one per GPU when GPUs differ (an R spread, or inlet offsets in an air hall), else one
        # per node standing for its g identical GPUs (same equations, g times fewer array elements)
        a = c.air
        offsets = (c.type == "air" and a is not None
                   and (a.slot_preheat_c > 0 or a.rack_rise_c > 0 or a.recirculation_c > 0))
        u = g if (c.gpu.r_sigma > 0 or offsets) else 1
        # the 'thermal' speed cap (an unregistered source while the thermal model is off: nobody reads it)
        speed_src = cl.speed_source("thermal") if on else SpeedSource("thermal", np.ones(n), [])
        gp, gpw = c.gpu, sc.cluster.node.gpu  # thermal figures, power figures (declared once, cluster.node)
        horizon_h = eng.horizon_h
        n_hours = int(math.ceil(horizon_h)) + 1
        if c.ambient.csv is not None and c.ambient.csv._values is None:
            raise InputError("scenario", "cooling.ambient.csv.file",
                             "the ambient CSV was not loaded (load the scenario with twin.scenario.load_scenario)")
        figs, other = pool_thermal(sc)  # node pools of other power figures or heat sinks (None: none)
        self.params = p = CoolingParams(
            sc=sc, spec=c, on=on, type=c.type, air=c.air, liquid=c.liquid, gpu_on_liquid=c.type in ("liquid", "hybrid"),
            n_nodes=n, gpus_per_node=g, units_per_node=u, gpus_per_unit=float(g // u), n_units=n * u,
            unit_range=np.arange(u), all_nodes=np.arange(n, dtype=np.int64),
            idle_w=float(gpw.idle_w), tdp_w=gpw.demand_w,  # the demand at full load (train_w, tdp_w unless set)
            pmin_w=gpw.min_w, slow_c=gp.slowdown_c, shut_c=gp.shutdown_c, alpha=gpw.speed_alpha,
            c_j_per_c=gp.c_j_per_c, non_gpu_w=sc.cluster.node.non_gpu_w,
            non_gpu_idle_w=float(sc.cluster.node.non_gpu_idle_w),  # type: ignore[arg-type]  # resolved
            max_inlet_c=c.node.max_inlet_c, reboot_h=c.node.reboot_h, horizon_h=horizon_h, n_hours=n_hours,
            ambient_h=c.ambient.hourly_c(n_hours), figs=figs, other=other)
        # ---- IT power: one source of truth, shared with the power chain (the it_power service) ----------
        self.it = it = ctx.service(IT_POWER)
        self.arrays = arr = CoolingArrays(speed_caps=speed_src.caps,
                                          it_caps=it.cap_of("thermal"),  # read here; written through it.set_cap
                                          pcap=np.full(n, INF))

        # ---- the rooms, each building its state (in this order: see the module docstring) ------------
        # (facility parts are made, and subscribed, in the order of the rooms: link, air, evaporative, liquid, leaks)
        fac_specs = c.facility_parts()
        fac = self._facility
        self.link = PlantLink(p, arr, eng)
        self.air_rooms = AirRooms(p, arr, eng, cl, ctx.parts, self.link, fac_specs, fac)
        self.evaporative = EvaporativeAir(p, arr, eng, fac_specs, fac)
        self.liquid_loops = LiquidLoops(p, arr, eng, cl, self.link, fac_specs, fac)
        self.leaks = Leaks(p, arr, eng, cl, fac_specs, fac)
        self.gpu = GpuState(p, arr, eng, cl, it, speed_src, self.air_rooms)
        self.lazy = LazyCrossings(p, arr, eng, cl, it)
        self.trips = Trips(p, arr, eng, cl)
        self.response = OperatorResponse(p, arr, eng, cl, it)
        self.ageing = Ageing(p, arr, eng, ctx.parts)
        self.replay = DeferredReplay(p, arr, eng, cl, self.gpu, self.air_rooms)
        self.energy = EnergyPue(p, eng, it)
        self._wire()
        if on:
            self._subscribe()

    def _wire(self) -> None:
        """Give each room the rooms it calls (those it needs while it is built are constructor arguments)."""
        gpu, lazy, replay, trips, resp = self.gpu, self.lazy, self.replay, self.trips, self.response
        air, evap, liquid, ageing, link = self.air_rooms, self.evaporative, self.liquid_loops, self.ageing, self.link
        gpu.lazy, gpu.replay, gpu.trips, gpu.ageing = lazy, replay, trips, ageing
        lazy.gpu, lazy.replay, lazy.ageing = gpu, replay, ageing
        replay.lazy, replay.ageing = lazy, ageing
        trips.air_rooms, trips.response = air, resp
        resp.air_rooms, resp.evaporative, resp.gpu, resp.lazy = air, evap, gpu, lazy
        resp.link, resp.replay, resp.trips = link, replay, trips
        air.ageing, air.evaporative, air.gpu, air.replay, air.response, air.trips = ageing, evap, gpu, replay, resp, trips
        evap.ageing, evap.air_rooms, evap.trips = ageing, air, trips
        liquid.gpu, liquid.replay, liquid.trips = gpu, replay, trips
        ageing.evaporative = evap
        self.energy.evaporative = evap
        link.air_rooms, link.gpu, link.replay, link.response, link.trips = air, gpu, replay, resp, trips

    def _subscribe(self) -> None:
        bus = self.engine.bus
        bus.subscribe(Topic.NODE_LOAD, self.replay.on_load)
        bus.subscribe(Topic.NODE_DOWN, self._on_down)
        bus.subscribe(Topic.NODE_UP, self._on_up)
        bus.subscribe(Topic.NODE_SPEED, self.gpu.on_speed)
        if self.air_rooms.fan_part is not None:
            bus.subscribe(Topic.GROUP, self.air_rooms.on_group)
        if self.ageing.aged or self.ageing.aged_air:
            bus.subscribe(PART_FAILED, self.ageing.on_part_failed)
            bus.subscribe(PART_RESTORED, self.ageing.on_part_restored)

    # =================================================================================== lifecycle
    def start(self) -> None:
        p = self.params
        eng = self.engine
        for inj in p.spec.inject:
            pop = self.ctx.facility.get(inj.part)
            if pop is not None:
                eng.calls(pop.fail_now).at(inj.at_h, inj.index)
            else:
                npop = self.parts[inj.part]
                eng.calls(npop.reschedule_now).at(inj.at_h, inj.index)
        if not p.on:
            return
        # a second speed source (the power model's caps; sources are made while the models are built)
        self.gpu.multi_speed = len(self.cluster.speed_caps) > 1
        # per-GPU units under a power chain: their own caps for the site cap's water-filling (the node cap, the
        # mean of the GPUs' powers, holds site-capped GPUs' powers and would move with the site cap)
        self.gpu.ucap = self.it.unit_cap("thermal").reshape(-1) if p.units_per_node > 1 and self.gpu.multi_speed else None
        self.ageing.start()
        self.lazy.start()
        self.gpu.bind_args()  # (update_nodes' fixed arguments, from here on)
        self.gpu.update(np.arange(p.n_nodes))
        self.replay.set_cool(p.all_nodes)
        self.gpu.start_trace()
        if p.air is not None:
            self.air_rooms.start()

    def finish(self) -> None:
        if not self.params.on:
            return
        self.replay.flush_log()
        H = self.params.horizon_h
        self.lazy.finish(H)
        self.gpu.integrate(H)
        self.gpu.flush_histogram(H)
        if self.params.air is not None:
            self.air_rooms.finish(H)
        if self.params.liquid is not None:
            self.liquid_loops.finish(H)

    # =================================================================================== node up / down
    def _on_down(self, node: int, cause: DownCause) -> None:
        if self.arrays.cool[node] and not self.trips.tripped:  # nothing to restart, nothing thermal can change now
            self.replay.log_state(node)
            return
        self.gpu.update(np.array([node], dtype=np.int64))
        self.trips.try_restarts()

    def _on_up(self, node: int, cause: DownCause) -> None:
        reason = self.trips.instant_trip_reason(node)
        if reason is not None:
            self.trips.trip(node, reason)
            return
        # a node keeps its last thermal caps while down: one that went down capped is updated when it comes
        # back (logging it would leave its job paced by the stale cap until its next direct update)
        if self.arrays.cool[node] and self.arrays.speed_caps[node] == 1.0 and self.arrays.it_caps[node] == INF:
            self.replay.log_state(node)
            return
        self.gpu.update(np.array([node], dtype=np.int64))

    # =================================================================================== results
    def facility_parts(self) -> Mapping[str, FacilityParts]:
        return dict(self._facility)

    def results(self, so_far: ResultsSoFar) -> tuple[dict[str, float], dict[str, pd.DataFrame]]:
        m: dict[str, float] = {}
        tables: dict[str, pd.DataFrame] = {}
        em, et = self.energy.results()
        m.update(em)
        tables.update(et)
        if self.params.air is not None:
            m["cooling.zone_over_capacity_hours"] = float(self.air_rooms.z_over_h)
        if self.params.liquid is not None:
            m["cooling.loop_no_flow_hours"] = float(self.liquid_loops.noflow_h)
            if self.params.liquid.leak is not None:
                lm, lt = self.leaks.results()
                m.update(lm)
                tables.update(lt)
        tl = pd.DataFrame(self.arrays.timeline, columns=["time_h", "unit", "index", "supply_c", "target_c", "load_kw",
                                                  "capacity_kw"])
        tl = tl.astype({"time_h": "float64", "index": "int64", "supply_c": "float64", "target_c": "float64",
                        "load_kw": "float64", "capacity_kw": "float64"})  # typed even when empty
        tl["unit"] = pd.Categorical(tl["unit"], categories=["zone", "loop"])
        tables["cooling_timeline"] = tl
        if not self.params.on:
            return m, tables
        H = self.params.horizon_h
        busy_h, capped_h, spsum_h, _ = self.arrays.acc
        m["thermal.throttled_gpu_hours"] = float(capped_h)
        m["thermal.speed_loss_gpu_hours"] = float(busy_h - spsum_h)
        m["thermal.mean_speed"] = float(spsum_h / busy_h) if busy_h > 0 else math.nan
        rows = list(self.trips.trip_rows) + [(n, s, math.nan, r) for n, (s, r) in sorted(self.trips.tripped.items())]
        trips = pd.DataFrame(rows, columns=["node", "start_h", "end_h", "reason"])
        trips = trips.sort_values(["start_h", "node"], kind="stable").reset_index(drop=True)
        trips = trips.astype({"node": np.int32, "start_h": "float64", "end_h": "float64"})  # typed even when empty
        trips["path"] = pd.Series([self.cluster.node_path(int(n)) for n in trips["node"]], dtype="str")
        trips["reason"] = pd.Categorical(trips["reason"], categories=["gpu_shutdown", "inlet", "no_fan"])
        tables["thermal_trips"] = trips
        m["thermal.trips"] = float(len(trips))
        for r in ("gpu_shutdown", "inlet", "no_fan"):
            m[f"thermal.trips.{r}"] = float((trips["reason"] == r).sum())
        m["thermal.trip_node_hours"] = float((trips["end_h"].fillna(H) - trips["start_h"]).sum())
        if self.params.air is not None:
            m["thermal.inlet_above_27c_node_hours"] = float(self.air_rooms.z_hot_node_h)
            rm, rt = self.response.results()
            m.update(rm)
            tables.update(rt)
        hist = self.arrays.hist
        tot = hist.sum()
        tables["gpu_temperature"] = pd.DataFrame({"temp_c": np.arange(_HIST_MAX_C, dtype=np.int32),
                                                  "gpu_hours": hist})
        if tot > 0:  # the 1 °C bin's middle, never above the hottest temperature reached
            cdf = np.cumsum(hist) / tot
            for q in (50, 95, 99):
                m[f"thermal.gpu_temp_p{q}_c"] = min(float(np.searchsorted(cdf, q / 100.0) + 0.5), float(self.gpu.tpeak_c))
        m["thermal.gpu_temp_max_c"] = float(self.gpu.tpeak_c)
        tables["thermal_trace"] = self.gpu.trace_table()
        tables["throughput_hourly"] = self.gpu.throughput_hourly()
        return m, tables


__all__ = ["Thermal"]
