"""The ``cooling`` component: one object built from the rooms of this package (see its docstring).

``Thermal`` holds the parameters every room reads, builds each room's state in the original order
(the order matters: facility parts and bus subscriptions are registered as they are built), and owns
the lifecycle (``start``, ``finish``, ``results``) and the node up/down handlers that involve several
rooms. The rooms are mixins over one object, not collaborating objects: the hot path
(``GpuState._update_now``, taken at every load change of a warm node) reads the GPU arrays, the air
heat, the accounting, ageing and tracing state in one call, and plain ``self.x`` lookups keep it as
fast as it was in one class (a room object would add an attribute hop per access in that loop).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from twin.errors import InputError
from twin.model.cooling.ageing import Ageing
from twin.model.cooling.air import AirRooms
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


class Thermal(Component, GpuState, LazyCrossings, Trips, OperatorResponse, AirRooms, EvaporativeAir, LiquidLoops, Leaks,
              DeferredReplay, Ageing, EnergyPue, PlantLink):
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
        self._env = eng.env
        self.cluster = cl = ctx.cluster
        self.parts = ctx.parts
        self.shop = ctx.shop
        self._facility = {}
        sc = ctx.sc
        self.sc = sc
        c = sc.cooling
        assert c is not None
        self.spec = c
        self.on = bool(c.thermal)
        self.type = c.type
        self.N = n = cl.n_nodes
        self.g = g = cl.gpus_per_node
        # thermal units: one per GPU when GPUs differ (an R spread, or inlet offsets in an air hall), else one
        # per node standing for its g identical GPUs (same equations, g times fewer array elements); w GPUs
        # per unit
        a = c.air
        offsets = (c.type == "air" and a is not None
                   and (a.slot_preheat_c > 0 or a.rack_rise_c > 0 or a.recirculation_c > 0))
        self.u = u = g if (c.gpu.r_sigma > 0 or offsets) else 1
        self.w = float(g // u)
        self.G = n * u
        self._ar = np.arange(u)
        self._all = np.arange(n, dtype=np.int64)
        # the 'thermal' speed cap (an unregistered source while the thermal model is off: nobody reads it)
        self.speed_src = ctx.cluster.speed_source("thermal") if self.on else SpeedSource("thermal", np.ones(n), [])
        self.speed_caps = self.speed_src.caps
        gp, gpw = c.gpu, sc.cluster.node.gpu  # thermal figures, power figures (declared once, cluster.node)
        self.idle_w = float(gpw.idle_w)
        self.tdp_w = gpw.demand_w  # the demand at full load (train_w, tdp_w unless set)
        self.pmin_w = gpw.min_w
        self.slow_c = gp.slowdown_c
        self.shut_c = gp.shutdown_c
        self.alpha = gpw.speed_alpha
        self.C = gp.c_j_per_c
        self.non_gpu_w = sc.cluster.node.non_gpu_w  # at full utilisation
        self.non_gpu_idle_w = float(sc.cluster.node.non_gpu_idle_w)  # type: ignore[arg-type]  # resolved
        self.max_inlet_c = c.node.max_inlet_c
        self.reboot_h = c.node.reboot_h
        H = eng.horizon_h
        self.H = H
        self.n_hours = int(math.ceil(H)) + 1
        if c.ambient.csv is not None and c.ambient.csv._values is None:
            raise InputError("scenario", "cooling.ambient.csv.file",
                             "the ambient CSV was not loaded (load the scenario with twin.scenario.load_scenario)")
        self.ambient_h = c.ambient.hourly_c(self.n_hours)

        # ---- IT power: one source of truth, shared with the power chain (the it_power service) ----------
        self.it = it = ctx.service(IT_POWER)
        self._it_caps = it.cap_of("thermal")  # read here; written through it.set_cap
        self._pcap = np.full(self.cluster.n_nodes, INF)  # per node: the power-chain GPU cap (W) last applied
        self._n_pcap = 0  # nodes with a finite one
        self._in_update = 0  # depth of _update calls (a NODE_SPEED inside one waits for its end)
        self._speed_later: list[NDArray[np.int64]] = []

        # ---- the rooms, each building its state (in this order: see the module docstring) ------------
        self.air = c.air
        self.liquid = c.liquid
        self.gpu_on_liquid = self.type in ("liquid", "hybrid")
        fac_specs = c.facility_parts()
        self.timeline: list[tuple[float, str, int, float, float, float, float]] = []
        self._init_plant_link()
        if self.air is not None:
            self._init_air(fac_specs)
        self._init_evap(fac_specs)
        if self.liquid is not None:
            self._init_liquid(fac_specs)
            if self.liquid.leak is not None:
                self._init_leaks(fac_specs)
        self._init_fans()
        self._init_gpu()
        self._init_lazy()
        self._init_trips()
        self._init_response()
        self._init_trace()
        self._init_ageing()
        self._init_replay()
        if self.on:
            self._subscribe()

    def _subscribe(self) -> None:
        bus = self.engine.bus
        bus.subscribe(Topic.NODE_LOAD, self._on_load)
        bus.subscribe(Topic.NODE_DOWN, self._on_down)
        bus.subscribe(Topic.NODE_UP, self._on_up)
        bus.subscribe(Topic.NODE_SPEED, self._on_speed)
        if self.fan_part is not None:
            bus.subscribe(Topic.GROUP, self._on_group)
        if self.aged or self.aged_air:
            bus.subscribe(PART_FAILED, self._on_part_failed)
            bus.subscribe(PART_RESTORED, self._on_part_restored)

    # =================================================================================== lifecycle
    def start(self) -> None:
        eng = self.engine
        for inj in self.spec.inject:
            pop = self.ctx.facility.get(inj.part)
            if pop is not None:
                eng.calls(pop.fail_now).at(inj.at_h, inj.index)
            else:
                npop = self.parts[inj.part]
                eng.calls(npop.reschedule_now).at(inj.at_h, inj.index)
        if not self.on:
            return
        # a second speed source (the power model's caps; sources are made while the models are built)
        self._multi_speed = len(self.cluster.speed_caps) > 1
        # per-GPU units under a power chain: their own caps for the site cap's water-filling (the node cap, the
        # mean of the GPUs' powers, holds site-capped GPUs' powers and would move with the site cap)
        self._ucap = self.it.unit_cap("thermal").reshape(-1) if self.u > 1 and self._multi_speed else None
        self._start_ageing()
        self._start_lazy()
        self._update(np.arange(self.N))
        self._set_cool(self._all)
        self._start_trace()
        if self.air is not None:
            self._start_air()

    def finish(self) -> None:
        if not self.on:
            return
        self._flush_log()
        H = self.H
        self._finish_lazy(H)
        self._integrate(H)
        self._flush_histogram(H)
        if self.air is not None:
            self._finish_air(H)
        if self.liquid is not None:
            self._finish_liquid(H)

    # =================================================================================== node up / down
    def _on_down(self, node: int, cause: DownCause) -> None:
        if self.cool[node] and not self.tripped:  # nothing to restart, nothing thermal can change now
            self._log_state(node)
            return
        self._update(np.array([node], dtype=np.int64))
        self._try_restarts()

    def _on_up(self, node: int, cause: DownCause) -> None:
        reason = self._instant_trip_reason(node)
        if reason is not None:
            self._trip(node, reason)
            return
        # a node keeps its last thermal caps while down: one that went down capped is updated when it comes
        # back (logging it would leave its job paced by the stale cap until its next direct update)
        if self.cool[node] and self.speed_caps[node] == 1.0 and self._it_caps[node] == INF:
            self._log_state(node)
            return
        self._update(np.array([node], dtype=np.int64))

    # =================================================================================== results
    def facility_parts(self) -> Mapping[str, FacilityParts]:
        return dict(self._facility)

    def results(self, so_far: ResultsSoFar) -> tuple[dict[str, float], dict[str, pd.DataFrame]]:
        m: dict[str, float] = {}
        tables: dict[str, pd.DataFrame] = {}
        em, et = self._energy()
        m.update(em)
        tables.update(et)
        if self.air is not None:
            m["cooling.zone_over_capacity_hours"] = float(self.z_over_h)
        if self.liquid is not None:
            m["cooling.loop_no_flow_hours"] = float(self.noflow_h)
            if self.liquid.leak is not None:
                lm, lt = self._leak_results()
                m.update(lm)
                tables.update(lt)
        tl = pd.DataFrame(self.timeline, columns=["time_h", "unit", "index", "supply_c", "target_c", "load_kw",
                                                  "capacity_kw"])
        tl = tl.astype({"time_h": "float64", "index": "int64", "supply_c": "float64", "target_c": "float64",
                        "load_kw": "float64", "capacity_kw": "float64"})  # typed even when empty
        tl["unit"] = pd.Categorical(tl["unit"], categories=["zone", "loop"])
        tables["cooling_timeline"] = tl
        if not self.on:
            return m, tables
        H = self.H
        busy_h, capped_h, spsum_h, _ = self._acc
        m["thermal.throttled_gpu_hours"] = float(capped_h)
        m["thermal.speed_loss_gpu_hours"] = float(busy_h - spsum_h)
        m["thermal.mean_speed"] = float(spsum_h / busy_h) if busy_h > 0 else math.nan
        rows = list(self.trip_rows) + [(n, s, math.nan, r) for n, (s, r) in sorted(self.tripped.items())]
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
        if self.air is not None:
            m["thermal.inlet_above_27c_node_hours"] = float(self.z_hot_node_h)
            rm, rt = self._response_results()
            m.update(rm)
            tables.update(rt)  # type: ignore[arg-type]
        hist = self.hist
        tot = hist.sum()
        tables["gpu_temperature"] = pd.DataFrame({"temp_c": np.arange(_HIST_MAX_C, dtype=np.int32),
                                                  "gpu_hours": hist})
        if tot > 0:  # the 1 °C bin's middle, never above the hottest temperature reached
            cdf = np.cumsum(hist) / tot
            for q in (50, 95, 99):
                m[f"thermal.gpu_temp_p{q}_c"] = min(float(np.searchsorted(cdf, q / 100.0) + 0.5), float(self.tpeak_c))
        m["thermal.gpu_temp_max_c"] = float(self.tpeak_c)
        tables["thermal_trace"] = self._trace_table()
        tables["throughput_hourly"] = self._throughput_hourly()
        return m, tables


__all__ = ["Thermal"]
