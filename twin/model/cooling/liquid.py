"""Liquid loops, CDUs and pumps (model.md §4).

A loop has flow while ``cdu.required`` of its CDUs are healthy and each of those has ``pumps.required``
healthy pumps; without flow its GPUs switch to ``r_no_flow_c_per_w``. Leaks (node and loop-wide, with
their detection and damage) are the ``leaks`` room's.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from twin.model.cooling.common import _blocks
from twin.model.cooling.state import CoolingState
from twin.model.parts import FacilityParts, contiguous_groups


class LiquidLoops(CoolingState):
    """Room of the cooling component: liquid loops, their CDUs and pumps (a mixin of ``Thermal``)."""

    def _init_liquid(self, fac_specs: dict[str, Any]) -> None:
        """Loops as near-equal blocks of racks, their CDUs and pumps (facility parts)."""
        lq = self.liquid
        assert lq is not None
        eng, cl = self.engine, self.cluster
        n = self.N
        L = lq.loops
        self.loops = _blocks(cl.racks, L, cl.nodes_per_rack)
        self.loop_of = np.empty(n, dtype=np.int64)
        for lp, (s, e) in enumerate(self.loops):
            self.loop_of[s:e] = lp
        cnt, pc = lq.cdu.count, lq.cdu.pumps.count
        self.cdu_ok = np.ones(L * cnt, dtype=bool)
        self.pumps_ok = np.full(L * cnt, pc, dtype=np.int64)
        self.loop_flow = np.ones(L, dtype=bool)
        self.loop_noflow_since = np.full(L, np.nan)
        self.noflow_h = 0.0
        cpaths = [f"cooling.loop{lp}.cdu{k}" for lp in range(L) for k in range(cnt)]
        ppaths = [f"{p}.pump{j}" for p in cpaths for j in range(pc)]
        self.cdu = FacilityParts(eng, "cdu", cpaths, fac_specs["cdu"],
                                 groups=contiguous_groups(len(cpaths), cnt))  # common cause: a loop's CDUs
        self.pump = FacilityParts(eng, "cdu_pump", ppaths, fac_specs["cdu_pump"],
                                  groups=contiguous_groups(len(ppaths), pc))  # a CDU's pumps
        eng.bus.subscribe(self.cdu.changed, self._gated("cdu", self._on_cdu))
        eng.bus.subscribe(self.pump.changed, self._on_pump)
        self._facility["cdu"] = self.cdu
        self._facility["cdu_pump"] = self.pump
        self.cdu.test_duration_h = lq.cdu.test_duration_h  # periodic tests take a working unit out (issue 43)
        self.pump.test_duration_h = lq.cdu.pumps.test_duration_h

    def _finish_liquid(self, H: float) -> None:
        """Close the loops' no-flow account at the horizon ``H`` (h)."""
        for lp in range(len(self.loops)):
            if not np.isnan(self.loop_noflow_since[lp]):
                self.noflow_h += H - self.loop_noflow_since[lp]
                self.loop_noflow_since[lp] = np.nan

    def _loop_flow(self, lp: int) -> bool:
        assert self.liquid is not None
        d = self.liquid.cdu
        sl = slice(lp * d.count, (lp + 1) * d.count)
        delivering = self.cdu_ok[sl] & (self.pumps_ok[sl] >= d.pumps.required)
        return int(delivering.sum()) >= d.required

    def _loop_changed(self, lp: int) -> None:
        assert self.liquid is not None
        flow = self._loop_flow(lp)
        if flow == bool(self.loop_flow[lp]):
            return
        now = self.engine.now
        self.loop_flow[lp] = flow
        if not flow:
            self.loop_noflow_since[lp] = now
        elif not np.isnan(self.loop_noflow_since[lp]):
            self.noflow_h += now - self.loop_noflow_since[lp]
            self.loop_noflow_since[lp] = np.nan
        self.timeline.append((now, "loop", lp, float(flow), float(flow), math.nan, math.nan))
        if not self.on:
            return
        s, e = self.loops[lp]
        self._flush_for(slice(s, e))
        gp = self.spec.gpu
        self.rfactor[s:e] = 1.0 if flow else gp.r_no_flow_c_per_w / gp.r_cold_plate_c_per_w
        self._update(np.arange(s, e, dtype=np.int64))
        self._set_cool(slice(s, e))
        self._try_restarts()

    def _on_cdu(self, idx: int, healthy: bool) -> None:
        assert self.liquid is not None
        self.cdu_ok[idx] = healthy
        self._loop_changed(idx // self.liquid.cdu.count)

    def _on_pump(self, idx: int, healthy: bool) -> None:
        assert self.liquid is not None
        cdu = idx // self.liquid.cdu.pumps.count
        self.pumps_ok[cdu] += 1 if healthy else -1
        self._loop_changed(cdu // self.liquid.cdu.count)
