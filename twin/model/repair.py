"""Repair logistics (model.md §2): detection → spare part → crew on shift → repair → burn-in.

A ticket reserves its spare before it calls a crew, so technicians are never held idle waiting
for a delivery (a stated modelling choice). Crews are dispatched by priority: tickets whose node is
out of service first, then lost links, then lost redundancy; FIFO within a priority. A repair that
has started runs to completion even past the end of a shift (assumption).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generator

import numpy as np
import simpy

from twin.model.cluster import Cluster
from twin.model.engine import Engine
from twin.scenario.distributions import Fixed
from twin.scenario.schema import Maintenance, Shift, Spares
from twin.units import Calendar, HOURS_PER_DAY


class CrewPool:
    def __init__(self, engine: Engine, name: str, spec: Shift) -> None:
        self.name = name
        self.count = spec.count
        self.resource = simpy.PriorityResource(engine.env, capacity=spec.count)
        self.calendar = Calendar(spec.shift, spec.start_hour, spec.end_hour, list(spec.workdays))
        self.busy_h = 0.0
        self.jobs = 0


class Inventory:
    """Spares of one part type with an (s, Q) policy on the inventory position
    (on hand + on order − backorders). Demands that find none on hand are stock-outs and wait
    in FIFO order for deliveries."""

    def __init__(self, engine: Engine, part: str, spec: Spares) -> None:
        self.engine = engine
        self.part = part
        self.on_hand = spec.stock
        self.reorder_point = spec.reorder_point if spec.reorder_point is not None else spec.stock - 1
        self.reorder_qty = spec.reorder_qty
        self.lead_h = spec.lead_time_days * HOURS_PER_DAY
        self.on_order = 0
        self.waiting: list[simpy.Event] = []
        self.demands = 0
        self.stockouts = 0
        self.orders = 0
        self._level = f"spares_on_hand.{part}"  # step function of units on hand (priced by the cost model)
        engine.recorder.level(self._level, engine.now, self.on_hand)

    def take(self) -> tuple[simpy.Event, bool]:
        """Request one spare. Returns (event that fires when the spare is in hand, stock-out?)."""
        env = self.engine.env
        self.demands += 1
        ev = env.event()
        stockout = self.on_hand == 0
        if stockout:
            self.stockouts += 1
            self.engine.recorder.event(self.engine.now, "stockout", f"spares.{self.part}", -1, 0.0)
            self.waiting.append(ev)
        else:
            self.on_hand -= 1
            self.engine.recorder.level(self._level, self.engine.now, self.on_hand)
            ev.succeed()
        self._reorder()
        return ev, stockout

    def _position(self) -> int:
        return self.on_hand + self.on_order - len(self.waiting)

    def _reorder(self) -> None:
        while self._position() <= self.reorder_point:
            self.on_order += self.reorder_qty
            self.orders += 1
            qty = self.reorder_qty
            self.engine.call_at(self.engine.now + self.lead_h, lambda q=qty: self._deliver(q))

    def _deliver(self, qty: int) -> None:
        self.on_order -= qty
        self.on_hand += qty
        while self.waiting and self.on_hand > 0:
            self.on_hand -= 1
            self.waiting.pop(0).succeed()
        self.engine.recorder.level(self._level, self.engine.now, self.on_hand)


@dataclass
class RepairShop:
    """Owns crews and inventories and runs one SimPy process per repair ticket."""

    engine: Engine
    cluster: Cluster
    spec: Maintenance
    crews: dict[str, CrewPool] = field(default_factory=dict)
    inventories: dict[str, Inventory] = field(default_factory=dict)
    _ticket_id: int = 0

    def __post_init__(self) -> None:
        for name, shift in self.spec.crews.items():
            self.crews[name] = CrewPool(self.engine, name, shift)
        for part, sp in self.spec.spares.items():
            self.inventories[part] = Inventory(self.engine, part, sp)
        self._default_pool = next(iter(self.crews))
        self.open: dict[int, tuple[Any, ...]] = {}

    def on_failure(self, pop: Any, idx: int) -> None:
        self._ticket_id += 1
        self.engine.env.process(self._ticket(self._ticket_id, pop, idx))

    def _draw(self, pop: Any, idx: int, purpose: str, k: int, dist: object) -> float:
        if isinstance(dist, Fixed):  # nothing random to draw (no other stream depends on this one)
            return dist.value_h
        u = pop.uniform(idx, purpose, k)  # stream "<part path>#<purpose>", draw k
        return float(dist.sample(np.array([u]))[0])  # type: ignore[attr-defined]

    def _ticket(self, tid: int, pop: Any, idx: int) -> Generator[simpy.Event, object, None]:
        eng = self.engine
        env = eng.env
        rec = eng.recorder
        node = pop.node_of(idx)
        path = pop.path(idx)
        k = int(pop.repairs[idx])
        t_fail = eng.now
        found = pop.found_event(idx)  # hook: a latent failure waits until a test or a demand finds it
        if found is not None:
            yield found
        else:
            yield env.timeout(self._draw(pop, idx, "detect", k, self.spec.detection))
        t_detect = eng.now
        stockout = False
        inv = self.inventories.get(pop.name)
        if inv is not None:
            ev, stockout = inv.take()
            yield ev
        t_spare = eng.now
        pool = self.crews[pop.spec.repair.crew or self._default_pool]
        self.open[tid] = (pop.name, path, node, pop.spec.effect, t_fail, t_detect, t_spare, stockout, pool.name)
        while True:
            # queue for a crew only while the crew is on shift, so an off-shift low-priority ticket
            # never holds a crew over a weekend ahead of a node-down ticket
            wait = pool.calendar.wait_h(eng.now)
            if wait > 0:
                yield env.timeout(wait)
            node_out = not self.cluster.is_up(node) if node >= 0 else pop.out_of_service(idx)
            req = pool.resource.request(priority=0 if node_out else pop.priority)
            yield req
            if pool.calendar.on_shift(eng.now):
                break
            pool.resource.release(req)  # the shift ended while it queued: wait for the next one
        t_crew = eng.now
        t_start = eng.now
        drained = False
        if node >= 0 and not pop.spec.repair.hot_swap and pop.spec.effect not in ("node_down", "transient"):
            self.cluster.add_down(node, f"repair:{pop.name}")
            drained = True
        yield env.timeout(self._draw(pop, idx, "repair", k, pop.spec.repair.time))
        t_end = eng.now
        pool.resource.release(req)
        pool.busy_h += t_end - t_start
        pool.jobs += 1
        burn = pop.spec.repair.burn_in_h
        affects_node = node >= 0 and (drained or pop.spec.effect == "node_down" or pop.node_failed_by_group(node))
        if burn > 0 and affects_node:
            self.cluster.add_down(node, "burn_in")
        pop.restore(idx)
        if drained:
            self.cluster.remove_down(node, f"repair:{pop.name}")
        if burn > 0 and affects_node:
            yield env.timeout(burn)
            self.cluster.remove_down(node, "burn_in")
        t_back = eng.now
        del self.open[tid]
        rec.event(t_back, "repair_done", path, node, t_back - t_fail)
        rec.tickets.append(
            (tid, pop.name, path, node, pop.spec.effect, t_fail, t_detect, t_spare, t_crew, t_start, t_end,
             t_back, stockout, drained, pool.name, True)
        )

    def finish(self) -> None:
        """Tickets still open at the horizon, with the phases they reached (NaN after that)."""
        nan = float("nan")
        for tid, (name, path, node, effect, t_fail, t_detect, t_spare, stockout, pool) in sorted(self.open.items()):
            self.engine.recorder.tickets.append(
                (tid, name, path, node, effect, t_fail, t_detect, t_spare, nan, nan, nan, nan, stockout,
                 False, pool, False))


TICKET_COLUMNS = [
    "ticket", "part", "path", "node", "effect", "fail_h", "detected_h", "spare_h", "crew_h",
    "start_h", "end_h", "back_h", "stockout", "drained", "crew_pool", "done",
]
