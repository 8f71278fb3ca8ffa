"""Thermal trips and restarts (model.md §3, §4): a node tripped by a GPU shutdown crossing, its zone's
inlet limit or a lost fan comes back ``reboot_h`` after its cooling is restored (coolant flows, it has
a fan, its inlet air, the room's supply plus its rack and recirculation offsets, is below ``max_inlet_c``, its GPUs would not trip at P_min, and its air zone could carry
every node in service, those rebooting and this one at full load)."""

from __future__ import annotations

import bisect
import functools
from typing import TYPE_CHECKING

import numpy as np

from twin.model.cooling.common import TRIP
from twin.model.cooling.arrays import CoolingArrays, CoolingParams

if TYPE_CHECKING:  # pragma: no cover
    from twin.model.cooling.ports import AirPort, ResponsePort
    from twin.model.cluster import Cluster
    from twin.model.engine import Engine
    from twin.model.engine import Timer


class Trips:
    """Room of the cooling component: trips, the restart checks and reboots."""

    air_rooms: AirPort  # wired by Thermal
    response: ResponsePort  # wired by Thermal

    def __init__(self, params: CoolingParams, arrays: CoolingArrays, engine: Engine, cluster: Cluster) -> None:
        self.params = params
        self.arrays = arrays
        self.engine = engine
        self.cluster = cluster
        self.tripped: dict[int, tuple[float, str]] = {}
        self._tripped_order: list[int] = []  # the keys of tripped, kept sorted (restart checks go in node order)
        self.pending: dict[int, Timer] = {}  # tripped nodes admitted to reboot: their reboot timers
        self._reserved_w: dict[int, float] = {}  # their full-load air heat reserved in their zone, W
        self.trip_rows: list[tuple[int, float, float, str]] = []
        # inlet trip (air): a node's inlet air is its zone's supply plus its offset (noff), so it reaches
        # max_inlet_c when the supply reaches max_inlet_c − noff (its trip supply)
        self.trip_inlet_n = None if self.arrays.noff is None else self.params.max_inlet_c - self.arrays.noff
        self.z_trip_levels = []
        if self.params.air is not None:
            th = self.trip_inlet_n
            self.z_trip_levels = [np.array([self.params.max_inlet_c]) if th is None else np.unique(th[s:e])
                                  for s, e in self.arrays.zones]

    def instant_trip_reason(self, node: int) -> str | None:
        a, p = self.arrays, self.params
        if self.air_rooms.fan_part is not None and a.fans_h[node] == 0:
            return "no_fan"
        if p.air is not None and self.air_rooms.supply_now(int(a.zone_of[node])) >= self._trip_supply_c(node):
            return "inlet"
        return None

    def _trip_supply_c(self, node: int) -> float:
        """The zone supply (°C) at which ``node``'s inlet air reaches ``max_inlet_c`` (less its offset)."""
        return self.params.max_inlet_c if self.trip_inlet_n is None else float(self.trip_inlet_n[node])

    def trip(self, node: int, reason: str) -> None:
        if node in self.tripped:
            return
        self.tripped[node] = (self.engine.now, reason)
        bisect.insort(self._tripped_order, node)
        self.cluster.add_down(node, TRIP)

    def _node_full_air_w(self, node: int) -> float:
        """Air heat (W) of ``node`` at full load, under the operator's cap if it has one (cooling.response)."""
        tdp_w = float(self.air_rooms.figs_w(node)[1])  # (its pool's in a hall of node pools)
        return float(self.air_rooms.air_heat_w(min(tdp_w, float(self.arrays.op_cap_w[node])), 1.0, node))

    def _cooling_ok(self, node: int) -> bool:
        """Could ``node`` run again: flow, fans, room below the inlet limit, no trip at P_min, zone headroom."""
        return self._cooling_check(node)[0]

    def _cooling_check(self, node: int) -> tuple[bool, bool]:
        """(``_cooling_ok``, whether a False came from a zone-wide condition: the zone's supply air at the
        inlet limit, or no headroom for one more node at full load; these hold for every node of the zone
        at this instant, and admitting nodes only tightens them)."""
        a, p = self.arrays, self.params
        pmin_w = p.pmin_w if p.figs is None else float(p.figs[2][node])  # (its pool's in a hall of node pools)
        if self.air_rooms.fan_part is not None and a.fans_h[node] == 0:
            return False, False
        if p.liquid is not None and p.gpu_on_liquid and not a.loop_flow[a.loop_of[node]]:
            return False, False
        # the node's hottest GPU: max over its GPUs of R_base·fan factor = (max R_base)·fan factor, exactly
        # (rounding is monotonic, and the factor is positive)
        if a.toff is None:
            r = float(a.rmax_n[node] * a.rfactor[node])
            if a.inlet[node] + pmin_w * r >= p.shut_c:
                return False, False
        else:  # per GPU: its own inlet offset and R (u > 1 here)
            gs = slice(node * p.units_per_node, (node + 1) * p.units_per_node)
            hot = float((a.toff[gs] + pmin_w * (a.rbase[gs] * a.rfactor[node])).max())
            if a.inlet[node] + hot >= p.shut_c:
                return False, False
        if p.air is not None:
            z = int(a.zone_of[node])
            sup = self.air_rooms.supply_now(z)
            if sup >= p.max_inlet_c:
                return False, True
            if self.trip_inlet_n is not None and sup >= self.trip_inlet_n[node]:
                return False, False  # this node's inlet (supply plus its offset) at the limit: not zone-wide
            if not a.z_slack[z]:
                # admit only if the zone could carry every node in service, those rebooting and this one at
                # full load, so restarts never overload a zone (the workload may load them at once)
                s, e = a.zones[z]
                n_up = int(np.count_nonzero(self.cluster.down_count[s:e] == 0))
                full = self._node_full_air_w(node)
                if n_up * full + a.z_reserved[z] + full > self.response.admit_budget_w(z):
                    return False, True
        return True, False

    def try_restarts(self) -> None:
        """Schedule a reboot of every tripped node whose cooling would hold now, in node order.

        Once a node of an air zone fails a zone-wide condition, the zone's later nodes are skipped: they
        would fail it too (the same supply air and headroom, and admissions only use headroom up). This
        keeps a hall with one badly overloaded zone from re-checking each of its tripped nodes at every
        event."""
        if not self.tripped:
            return
        order = self._tripped_order  # not changed by this loop (admitting only schedules a reboot)
        i = 0
        while i < len(order):
            node = order[i]
            i += 1
            if node in self.pending:
                continue
            ok, zone_wide = self._cooling_check(node)
            if not ok:
                if zone_wide:  # skip the rest of the zone (a contiguous node range, so a run of `order`)
                    i = bisect.bisect_left(order, self.arrays.zones[int(self.arrays.zone_of[node])][1], i)
                continue
            self._admit_reboot(node)

    def _admit_reboot(self, node: int) -> None:
        """Schedule the reboot of tripped ``node`` in ``reboot_h``, reserving its full-load heat in its zone."""
        timer = self.pending[node] = self.engine.timer(functools.partial(self._reboot_done, node))
        if self.params.air is not None:
            w = self._reserved_w[node] = self._node_full_air_w(node)
            self.arrays.z_reserved[self.arrays.zone_of[node]] += w
        timer.set(self.engine.now + self.params.reboot_h)

    def _reboot_done(self, node: int) -> None:
        del self.pending[node]
        if self.params.air is not None:
            self.arrays.z_reserved[self.arrays.zone_of[node]] -= self._reserved_w.pop(node)
        if not self._cooling_ok(node):
            self.try_restarts()
            return
        start, reason = self.tripped.pop(node)
        del self._tripped_order[bisect.bisect_left(self._tripped_order, node)]
        self.trip_rows.append((node, start, self.engine.now, reason))
        self.cluster.remove_down(node, TRIP)
        self.try_restarts()
