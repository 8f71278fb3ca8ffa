"""Liquid loops, CDUs and pumps (model.md §4).

A loop has flow while ``cdu.required`` of its CDUs are healthy and each of those has ``pumps.required``
healthy pumps; without flow its GPUs switch to ``r_no_flow_c_per_w``. Leaks (node and loop-wide, with
their detection and damage) are the ``leaks`` room's.
"""

from __future__ import annotations

import math
from typing import Any, TYPE_CHECKING

import numpy as np

from twin.model.cooling.common import _blocks
from twin.model.cooling.arrays import CoolingArrays, CoolingParams
from twin.model.parts import FacilityParts, contiguous_groups

if TYPE_CHECKING:  # pragma: no cover
    from twin.model.cooling.ports import GpuPort, LinkPort, ReplayPort, TripsPort
    from twin.model.cluster import Cluster
    from twin.model.engine import Engine



class LiquidLoops:
    """Room of the cooling component: liquid loops, their CDUs and pumps."""

    gpu: GpuPort  # wired by Thermal
    replay: ReplayPort  # wired by Thermal
    trips: TripsPort  # wired by Thermal

    def __init__(self, params: CoolingParams, arrays: CoolingArrays, engine: Engine, cluster: Cluster, link: LinkPort,
                 fac_specs: dict[str, Any], facility: dict[str, FacilityParts]) -> None:
        """Loops as near-equal blocks of racks, their CDUs and pumps (facility parts)."""
        self.params = params
        self.arrays = arrays
        self.engine = engine
        self.cluster = cluster
        self.link = link
        self._facility = facility
        self.noflow_h = 0.0
        if params.liquid is None:
            return
        lq = self.params.liquid
        assert lq is not None
        eng, cl = self.engine, self.cluster
        n = self.params.n_nodes
        n_loops = lq.loops
        self.arrays.loops = _blocks(cl.racks, n_loops, cl.nodes_per_rack)
        self.arrays.loop_of = np.empty(n, dtype=np.int64)
        for lp, (s, e) in enumerate(self.arrays.loops):
            self.arrays.loop_of[s:e] = lp
        cnt, pc = lq.cdu.count, lq.cdu.pumps.count
        self.cdu_ok = np.ones(n_loops * cnt, dtype=bool)
        self.pumps_ok = np.full(n_loops * cnt, pc, dtype=np.int64)
        self.arrays.loop_flow = np.ones(n_loops, dtype=bool)
        self.loop_noflow_since = np.full(n_loops, np.nan)
        self.noflow_h = 0.0
        cpaths = [f"cooling.loop{lp}.cdu{k}" for lp in range(n_loops) for k in range(cnt)]
        ppaths = [f"{p}.pump{j}" for p in cpaths for j in range(pc)]
        self.cdu = FacilityParts(eng, "cdu", cpaths, fac_specs["cdu"],
                                 groups=contiguous_groups(len(cpaths), cnt))  # common cause: a loop's CDUs
        self.pump = FacilityParts(eng, "cdu_pump", ppaths, fac_specs["cdu_pump"],
                                  groups=contiguous_groups(len(ppaths), pc))  # a CDU's pumps
        eng.bus.subscribe(self.cdu.changed, self.link.gated("cdu", self._on_cdu))
        eng.bus.subscribe(self.pump.changed, self._on_pump)
        self._facility["cdu"] = self.cdu
        self._facility["cdu_pump"] = self.pump
        self.cdu.test_duration_h = lq.cdu.test_duration_h  # periodic tests take a working unit out (issue 43)
        self.pump.test_duration_h = lq.cdu.pumps.test_duration_h

    def finish(self, H: float) -> None:
        """Close the loops' no-flow account at the horizon ``H`` (h)."""
        for lp in range(len(self.arrays.loops)):
            if not np.isnan(self.loop_noflow_since[lp]):
                self.noflow_h += H - self.loop_noflow_since[lp]
                self.loop_noflow_since[lp] = np.nan

    def _loop_flow(self, lp: int) -> bool:
        assert self.params.liquid is not None
        d = self.params.liquid.cdu
        sl = slice(lp * d.count, (lp + 1) * d.count)
        delivering = self.cdu_ok[sl] & (self.pumps_ok[sl] >= d.pumps.required)
        return int(delivering.sum()) >= d.required

    def _loop_changed(self, lp: int) -> None:
        assert self.params.liquid is not None
        flow = self._loop_flow(lp)
        if flow == bool(self.arrays.loop_flow[lp]):
            return
        now = self.engine.now
        self.arrays.loop_flow[lp] = flow
        if not flow:
            self.loop_noflow_since[lp] = now
        elif not np.isnan(self.loop_noflow_since[lp]):
            self.noflow_h += now - self.loop_noflow_since[lp]
            self.loop_noflow_since[lp] = np.nan
        self.arrays.timeline.append((now, "loop", lp, float(flow), float(flow), math.nan, math.nan))
        if not self.params.on:
            return
        s, e = self.arrays.loops[lp]
        self.replay.flush_for(slice(s, e))
        gp = self.params.spec.gpu
        self.arrays.rfactor[s:e] = 1.0 if flow else gp.r_no_flow_c_per_w / gp.r_cold_plate_c_per_w
        self.gpu.update(np.arange(s, e, dtype=np.int64))
        self.replay.set_cool(slice(s, e))
        self.trips.try_restarts()

    def _on_cdu(self, idx: int, healthy: bool) -> None:
        assert self.params.liquid is not None
        self.cdu_ok[idx] = healthy
        self._loop_changed(idx // self.params.liquid.cdu.count)

    def _on_pump(self, idx: int, healthy: bool) -> None:
        assert self.params.liquid is not None
        cdu = idx // self.params.liquid.cdu.pumps.count
        self.pumps_ok[cdu] += 1 if healthy else -1
        self._loop_changed(cdu // self.params.liquid.cdu.count)
