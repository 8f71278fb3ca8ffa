"""The rooms' side of the cooling plant (issue 24; the plant itself is ``cooling.chillers``): CRAH units
and CDUs the plant takes out of service, and the chilled-water supply offset, both heard on the bus.

* **Unit gates.** A CRAH unit or a CDU delivers while it is healthy (its own part population) and the
  plant has not taken it out (``Topic.COOLING_UNIT``: power lost or restarting, maintenance, its row's
  branch failed). The gate passes the air and liquid rooms only the clean transitions of "delivers", so
  their capacity and flow counts stay as they were. Without a plant there is no gate (the rooms get the
  part callbacks themselves, as before).
* **Supply offset.** ``Topic.PLANT_SUPPLY`` gives the chilled-water loop's offset above its set point,
  held on a grid. The coolant supply of liquid-cooled GPUs is ``liquid.supply_c`` + offset; each air
  zone's supply set point is ``air.supply_c`` + offset (the CRAH coil follows the water: assumption, no
  coil lag), so a change of the offset shifts the zone's whole trajectory (start, target, held inlet)
  by the same amount: a zone with slack sees supply_c + offset exactly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import numpy as np

from twin.model.cooling.state import CoolingState
from twin.model.engine import Topic


class PlantLink(CoolingState):
    """Room of the cooling component: what the plant does to the rooms (a mixin of ``Thermal``)."""

    plant_c: float  # the plant's supply offset the rooms apply now, °C
    _unit_failed: dict[str, set[int]]  # per kind ('crah', 'cdu'): units failed (their part population)
    _unit_off: dict[str, set[int]]  # per kind: units the plant took out of service
    _unit_fn: dict[str, Callable[[int, bool], None]]  # per kind: the room's callback (idx, delivers)

    if TYPE_CHECKING:  # air-room methods used here
        def _plan_step(self, z: int) -> None:
            raise NotImplementedError

        def _zone_account(self, z: int, now: float) -> None:
            raise NotImplementedError

        def _plan_inlet_trip(self, z: int, jumped: bool = False) -> None:
            raise NotImplementedError

    def _init_plant_link(self) -> None:
        self.plant_c = 0.0
        self._unit_failed = {"crah": set(), "cdu": set()}
        self._unit_off = {"crah": set(), "cdu": set()}
        self._unit_fn = {}
        if self.spec.plant is not None:
            bus = self.engine.bus
            bus.subscribe(Topic.COOLING_UNIT, self._on_cooling_unit)
            bus.subscribe(Topic.PLANT_SUPPLY, self._on_plant_supply)

    def _gated(self, kind: str, fn: Callable[[int, bool], None]) -> Callable[[int, bool], None]:
        """The part callback of ``kind`` units: ``fn`` itself without a plant, else through the gate."""
        if self.spec.plant is None:
            return fn
        self._unit_fn[kind] = fn

        def on_part(idx: int, healthy: bool) -> None:
            self._gate(kind, idx, self._unit_failed[kind], not healthy)
        return on_part

    def _on_cooling_unit(self, kind: str, idx: int, off: bool) -> None:
        self._gate(kind, idx, self._unit_off[kind], off)

    def _gate(self, kind: str, idx: int, reasons: set[int], out: bool) -> None:
        """Unit ``idx`` of ``kind`` gains (``out``) or loses a reason to be out of service (its part failed:
        ``reasons`` is the failed set; the plant took it out: the off set); the room hears only when the unit's
        state flips, with its new state (healthy and in service, or not)."""
        failed, offs = self._unit_failed[kind], self._unit_off[kind]
        before = idx not in failed and idx not in offs
        if out:
            reasons.add(idx)
        else:
            reasons.discard(idx)
        after = idx not in failed and idx not in offs
        if before != after:
            self._unit_fn[kind](idx, after)

    def _on_plant_supply(self, offset_c: float) -> None:
        delta = offset_c - self.plant_c
        self.plant_c = offset_c
        if delta == 0.0 or not self.on:
            return
        if self.air is not None:
            for z in range(len(self.zones)):
                self._shift_zone(z, delta)
            if self._resp_on:  # the operator's budgets moved with the supply (cooling.response)
                self._resp_replan()
                for z in range(len(self.zones)):
                    self._shortfall(z, float(self.z_tgt[z]))
        nodes = self._all
        if self.gpu_on_liquid:
            assert self.liquid is not None
            self._flush_for(slice(0, self.N))
            self.inlet[:] = self.liquid.supply_c + offset_c
            self._update(nodes)
            self._set_cool(slice(0, self.N))
        self._try_restarts()

    def _shift_zone(self, z: int, delta: float) -> None:
        """Move zone ``z``'s supply trajectory (start, target, held inlet) by ``delta`` °C now."""
        assert self.air is not None
        s, e = self.zones[z]
        now = self.engine.now
        self._flush_for(slice(s, e))
        self._zone_account(z, now)
        s0 = self._supply_now(z) + delta
        self.z_S0[z] = s0
        self.z_ta[z] = now
        self.z_tgt[z] += delta
        self.z_held[z] += delta
        self.z_step_timer[z].cancel()
        self.z_trip_timer[z].cancel()
        tgt = float(self.z_tgt[z])
        self.timeline.append((now, "zone", z, s0, tgt, float(self.z_q[z]) / 1000.0, float(self.z_cap[z]) / 1000.0))
        nodes = np.arange(s, e, dtype=np.int64)
        if self.aged_air:
            self._age_air_update(nodes)
        if not self.gpu_on_liquid:
            self.inlet[s:e] = self.z_held[z]
            self._update(nodes)
            self._set_cool(slice(s, e))
        self._plan_step(z)
        self._plan_inlet_trip(z, jumped=True)
