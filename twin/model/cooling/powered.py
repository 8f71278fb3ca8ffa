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


from twin.model.cooling.arrays import CoolingArrays, CoolingParams
from twin.model.engine import Topic

if TYPE_CHECKING:  # pragma: no cover
    from twin.model.cooling.ports import AirPort, GpuPort, ReplayPort, ResponsePort, TripsPort
    from twin.model.engine import Engine


class PlantLink:
    """Room of the cooling component: what the plant does to the rooms."""

    air_rooms: AirPort  # wired by Thermal
    gpu: GpuPort  # wired by Thermal
    replay: ReplayPort  # wired by Thermal
    response: ResponsePort  # wired by Thermal
    trips: TripsPort  # wired by Thermal

    def __init__(self, params: CoolingParams, arrays: CoolingArrays, engine: Engine) -> None:
        self.params = params
        self.arrays = arrays
        self.engine = engine
        self.plant_c = 0.0  # the plant's supply offset the rooms apply now, °C
        # per kind ('crah', 'cdu'): units failed (their part population), units the plant took out of service
        self._unit_failed: dict[str, set[int]] = {"crah": set(), "cdu": set()}
        self._unit_off: dict[str, set[int]] = {"crah": set(), "cdu": set()}
        self._unit_fn: dict[str, Callable[[int, bool], None]] = {}  # per kind: the room's callback (idx, delivers)
        if self.params.spec.plant is not None:
            bus = self.engine.bus
            bus.subscribe(Topic.COOLING_UNIT, self._on_cooling_unit)
            bus.subscribe(Topic.PLANT_SUPPLY, self._on_plant_supply)

    def gated(self, kind: str, fn: Callable[[int, bool], None]) -> Callable[[int, bool], None]:
        """The part callback of ``kind`` units: ``fn`` itself without a plant, else through the gate."""
        if self.params.spec.plant is None:
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
        if delta == 0.0 or not self.params.on:
            return
        if self.params.air is not None:
            for z in range(len(self.arrays.zones)):
                self.air_rooms.shift_zone(z, delta)
            if self.response.enabled:  # the operator's budgets moved with the supply (cooling.response)
                self.response.replan()
                for z in range(len(self.arrays.zones)):
                    self.response.shortfall(z, float(self.air_rooms.z_tgt[z]))
        nodes = self.params.all_nodes
        if self.params.gpu_on_liquid:
            assert self.params.liquid is not None
            self.replay.flush_for(slice(0, self.params.n_nodes))
            self.arrays.inlet[:] = self.params.liquid.supply_c + offset_c
            self.gpu.update(nodes)
            self.replay.set_cool(slice(0, self.params.n_nodes))
        self.trips.try_restarts()
