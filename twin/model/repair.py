"""Repair logistics (model.md §2): detection → the repair ladder → burn-in.

The ladder of a part type (``repair.ladder``): automated remediation first (reset, reboot, row remap:
no technician, no spare; it clears the fault with probability s₁), then a replacement by a technician
of the part's crew pool with a spare (it clears the fault with probability s₂), then escalation (a deep
repair or vendor visit with its own time, no technician held, no second spare). The part swapped out
by a replacement goes back to stock through vendor RMA when its inventory has one: the RMA is opened
when the replacement takes its spare and the refurbished unit arrives a turnaround later (stock
logistics, not downtime).

A ticket reserves its spare before it calls a crew, so technicians are never held idle waiting
for a delivery (a stated modelling choice). Crews are dispatched by impact (:class:`CrewPool`): a free
technician on shift takes any ticket that has waited ``maintenance.dispatch.ageing_h`` first (oldest
first), else the ticket whose repair returns the most GPUs to service now, then the part's dispatch
priority, then the longest wait. A repair that has started runs to completion even past the end of a
shift (assumption).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Generator, Sequence

import numpy as np
import simpy

from twin.model.causes import BURN_IN, THERMAL_TRIP, DownCause
from twin.model.cluster import Cluster, node_blocks
from twin.model.engine import Engine
from twin.model.parts import PART_FAILED, PART_REPLACED, UNIT_FAILED
from twin.scenario.distributions import Fixed
from twin.scenario.schema import Maintenance, Scenario, Shift, Spares
from twin.units import HOURS_PER_DAY, Calendar

NAN = float("nan")


@dataclass
class _Waiting:
    """A ticket waiting for a technician of a pool."""

    since_h: float
    order: int
    seq: int
    impact: Callable[[], int]
    event: simpy.Event


class CrewPool:
    """Technicians of one skill with a working calendar and a dispatch queue (see the module docstring).

    ``request`` returns an event that fires when a technician is assigned, with the ticket's impact
    (GPUs) at that moment as its value; ``release`` frees the technician. Assignments happen only while
    the pool is on shift (at a request, a release, or the next shift start)."""

    def __init__(self, engine: Engine, name: str, spec: Shift, ageing_h: float) -> None:
        self.engine = engine
        self.name = name
        self.count = spec.count
        self.free = spec.count
        self.ageing_h = ageing_h
        self.calendar = Calendar(spec.shift, spec.start_hour, spec.end_hour, list(spec.workdays))
        self.queue: list[_Waiting] = []
        self._seq = 0
        self._wake = False
        self.busy_h = 0.0
        self.jobs = 0
        self._level = f"crew_busy.{name}"  # step function of technicians at work
        engine.recorder.level(self._level, engine.now, 0)

    def request(self, impact: Callable[[], int], order: int) -> simpy.Event:
        ev = self.engine.env.event()
        self._seq += 1
        self.queue.append(_Waiting(self.engine.now, order, self._seq, impact, ev))
        self._dispatch()
        return ev

    def release(self) -> None:
        self.free += 1
        self.engine.recorder.level(self._level, self.engine.now, self.count - self.free)
        self._dispatch()

    def _on_wake(self) -> None:
        self._wake = False
        self._dispatch()

    def _key(self, w: _Waiting, now: float) -> tuple[Any, ...]:
        if now - w.since_h >= self.ageing_h:
            return (0, w.since_h, w.seq)  # aged: oldest first, before every younger ticket
        return (1, -w.impact(), w.order, w.since_h, w.seq)

    def _dispatch(self) -> None:
        if not self.queue or self.free == 0:
            return
        eng = self.engine
        now = eng.now
        if not self.calendar.on_shift(now):
            if not self._wake:
                self._wake = True
                eng.calls(self._on_wake).at(now + self.calendar.wait_h(now))
            return
        while self.free and self.queue:
            q = self.queue
            i = 0 if len(q) == 1 else min(range(len(q)), key=lambda j: self._key(q[j], now))
            w = q.pop(i)
            self.free -= 1
            w.event.succeed(w.impact())
        eng.recorder.level(self._level, now, self.count - self.free)


class Inventory:
    """Spares of one part type with an (s, Q) policy on the inventory position (on hand + on order +
    at the vendor for RMA − backorders). Demands that find none on hand are stock-outs and wait in FIFO
    order for deliveries or RMA returns.

    With vendor RMA, the RMA is opened when a replacement takes a spare: the failed part it replaces
    comes back refurbished (or, with advance replacement, the vendor's unit arrives) ``rma_turnaround``
    later, whether or not the demand found a spare, so the pipeline is Palm's: units at the vendor are
    the RMAs of the last turnaround. A part the vendor scraps lowers the position (the (s, Q) policy
    may order)."""

    def __init__(self, engine: Engine, part: str, spec: Spares) -> None:
        self.engine = engine
        self.part = part
        self.on_hand = spec.stock
        self.reorder_point = spec.reorder_point if spec.reorder_point is not None else spec.stock - 1
        self.reorder_qty = spec.reorder_qty
        self.lead_h = spec.lead_time_days * HOURS_PER_DAY
        self.rma_h = None if spec.rma_turnaround_days is None else spec.rma_turnaround_days * HOURS_PER_DAY
        self.rma_return_share = spec.rma_return_share
        self.on_order = 0
        self.at_vendor = 0
        self.waiting: list[simpy.Event] = []
        self.demands = 0
        self.stockouts = 0
        self.orders = 0
        self.rma_sent = 0
        self.rma_returned = 0
        self.scrapped = 0
        self._level = f"spares_on_hand.{part}"  # step function of units on hand (priced by the cost model)
        engine.recorder.level(self._level, engine.now, self.on_hand)
        if self.rma_h is not None:
            self._rma_level = f"rma_at_vendor.{part}"  # step function of units at the vendor
            engine.recorder.level(self._rma_level, engine.now, 0)

    def take(self, returned: bool = False) -> tuple[simpy.Event, bool]:
        """Request one spare; with RMA, ``returned`` says whether the part it replaces comes back
        refurbished (else it is scrapped). Returns (event that fires when the spare is in hand, stock-out?)."""
        env = self.engine.env
        self.demands += 1
        ev = env.event()
        stockout = self.on_hand == 0
        if self.rma_h is not None:
            self._rma(returned)
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

    def _rma(self, returned: bool) -> None:
        assert self.rma_h is not None
        if returned:
            self.rma_sent += 1
            self.at_vendor += 1
            self.engine.recorder.level(self._rma_level, self.engine.now, self.at_vendor)
            self.engine.calls(self._rma_back).at(self.engine.now + self.rma_h)
        else:
            self.scrapped += 1

    def _rma_back(self) -> None:
        self.at_vendor -= 1
        self.rma_returned += 1
        self.engine.recorder.level(self._rma_level, self.engine.now, self.at_vendor)
        self._arrive(1)

    def _position(self) -> int:
        return self.on_hand + self.on_order + self.at_vendor - len(self.waiting)

    def _reorder(self) -> None:
        while self._position() <= self.reorder_point:
            self.on_order += self.reorder_qty
            self.orders += 1
            qty = self.reorder_qty
            self.engine.calls(self._deliver).at(self.engine.now + self.lead_h, qty)

    def _deliver(self, qty: int) -> None:
        self.on_order -= qty
        self._arrive(qty)

    def _arrive(self, qty: int) -> None:
        self.on_hand += qty
        while self.waiting and self.on_hand > 0:
            self.on_hand -= 1
            self.waiting.pop(0).succeed()
        self.engine.recorder.level(self._level, self.engine.now, self.on_hand)


TICKET_COLUMNS = [
    "ticket", "part", "path", "node", "effect", "fail_h", "detected_h", "remediated_h", "spare_h", "crew_h",
    "start_h", "end_h", "fixed_h", "back_h", "rung", "impact_gpus", "stockout", "drained", "rma", "crew_pool",
    "done",
]
"""Columns of the ``tickets`` table: times in hours (a phase a ticket skipped ends when the one before it
did; a phase not reached by the horizon is NaN). ``remediated_h`` ends the remediation attempt (=
``detected_h`` without one), ``end_h`` the hands-on replacement, ``fixed_h`` the escalation (= ``end_h``
without one), ``back_h`` the burn-in. ``rung``: 1 remediated, 2 replaced, 3 escalated (0: open at the
horizon before its outcome was known). ``impact_gpus``: GPUs out because of the unit when a technician
was assigned (NaN: none was). ``rma``: the swapped-out part went to the vendor and will return."""

RUNGS = {1: "remediated", 2: "replaced", 3: "escalated"}


@dataclass
class _Ticket:
    tid: int
    part: str
    path: str
    node: int
    effect: str
    pool: str
    fail_h: float
    detected_h: float = NAN
    remediated_h: float = NAN
    spare_h: float = NAN
    crew_h: float = NAN
    start_h: float = NAN
    end_h: float = NAN
    fixed_h: float = NAN
    back_h: float = NAN
    rung: int = 0
    impact_gpus: float = NAN
    stockout: bool = False
    drained: bool = False
    rma: bool = False

    def row(self, done: bool) -> tuple[Any, ...]:
        return (self.tid, self.part, self.path, self.node, self.effect, self.fail_h, self.detected_h,
                self.remediated_h, self.spare_h, self.crew_h, self.start_h, self.end_h, self.fixed_h, self.back_h,
                self.rung, self.impact_gpus, self.stockout, self.drained, self.rma, self.pool, done)


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
            self.crews[name] = CrewPool(self.engine, name, shift, self.spec.dispatch.ageing_h)
        for part, sp in self.spec.spares.items():
            self.inventories[part] = Inventory(self.engine, part, sp)
        self._default_pool = next(iter(self.crews))
        self.open: dict[int, _Ticket] = {}
        self._node_causes: dict[str, frozenset[DownCause]] = {}

    def attach(self) -> None:
        """Subscribe to part and site-unit failures. Called once every component is built, so that the shop
        comes last among the subscribers: a failure is seen by the models (health, ageing) before its ticket."""
        self.engine.bus.subscribe(PART_FAILED, self.on_failure)
        self.engine.bus.subscribe(UNIT_FAILED, self.on_failure)

    def on_failure(self, pop: Any, idx: int) -> None:
        """Open the ticket of failed unit ``idx`` of ``pop`` (``PART_FAILED``, ``UNIT_FAILED``)."""
        if pop.spec.repair.policy == "none":  # never repaired: the unit stays failed to the horizon
            return
        self._ticket_id += 1
        self.engine.env.process(self._ticket(self._ticket_id, pop, idx))

    def _draw(self, pop: Any, idx: int, purpose: str, k: int, dist: object) -> float:
        if isinstance(dist, Fixed):  # nothing random to draw (no other stream depends on this one)
            return dist.value_h
        u = pop.uniform(idx, purpose, k)  # stream "<part path>#<purpose>", draw k
        return dist.sample1(u)  # type: ignore[attr-defined,no-any-return]  # (= float(dist.sample(np.array([u]))[0]))

    def impact_gpus(self, pop: Any, idx: int) -> int:
        """GPUs out of service (or cut off the fabric) now because of unit ``idx`` of ``pop``: those of
        its node for a node part, of the nodes in its ``scope`` for a site or rack unit, counted when
        the node's down (or cut) reasons include one of the unit's causes."""
        node = pop.node_of(idx)
        cl = self.cluster
        if node >= 0:
            causes = self._node_causes.get(pop.name)
            if causes is None:
                causes = self._node_causes[pop.name] = frozenset({pop.cause})
            return cl.out_for((node,), causes) * cl.gpus_per_node
        if pop.scope is None:
            return 0
        return cl.out_for(pop.scope(idx), pop.causes) * cl.gpus_per_node

    def _ticket(self, tid: int, pop: Any, idx: int) -> Generator[simpy.Event, object, None]:
        eng = self.engine
        env = eng.env
        node = pop.node_of(idx)
        k = int(pop.repairs[idx])
        rep = pop.spec.repair
        lad = rep.ladder
        pool = self.crews[rep.crew or self._default_pool]
        t = self.open[tid] = _Ticket(tid, pop.name, pop.path(idx), node, pop.spec.effect, pool.name, eng.now)
        found = pop.found_event(idx)  # a latent failure waits until a test or a demand finds it
        if found is not None:
            yield found
        else:
            yield env.timeout(self._draw(pop, idx, "detect", k, self.spec.detection))
        t.detected_h = eng.now
        if lad.remediate_success > 0:  # rung 1: automated remediation, no technician, no spare
            yield env.timeout(self._draw(pop, idx, "remediate", k, lad.remediate_time))
            t.remediated_h = eng.now
            if lad.remediate_success >= 1 or pop.uniform(idx, "remediate_ok", k) < lad.remediate_success:
                t.rung = 1
                t.spare_h = t.crew_h = t.start_h = t.end_h = t.fixed_h = t.back_h = eng.now
                pop.restore(idx)  # renewed: a fresh lifetime from now (assumption, the Ladder docstring)
                self._close(tid, pop, idx)
                return
        else:
            t.remediated_h = t.detected_h
        inv = self.inventories.get(pop.name)
        if inv is not None:
            if inv.rma_h is not None:  # the RMA of the part this replacement swaps out
                share = inv.rma_return_share
                t.rma = share >= 1 or (share > 0 and pop.uniform(idx, "rma", k) < share)
            ev, t.stockout = inv.take(t.rma)
            yield ev
        t.spare_h = eng.now
        impact = yield pool.request(lambda: self.impact_gpus(pop, idx), pop.priority)
        t.impact_gpus = float(impact)  # type: ignore[arg-type]
        t.crew_h = t.start_h = eng.now
        if node >= 0 and not rep.hot_swap and pop.spec.effect not in ("node_down", "transient"):
            self.cluster.add_down(node, DownCause.repair(pop.name))
            t.drained = True
        yield env.timeout(self._draw(pop, idx, "repair", k, rep.time))
        t.end_h = eng.now
        pool.release()
        pool.busy_h += t.end_h - t.start_h
        pool.jobs += 1
        t.rung = 2
        if lad.replace_success < 1 and pop.uniform(idx, "replace_ok", k) >= lad.replace_success:
            t.rung = 3  # escalation: the node stays out, no technician held, no second spare
            yield env.timeout(self._draw(pop, idx, "escalate", k, lad.escalate_time))
        t.fixed_h = eng.now
        burn = rep.burn_in_h
        affects_node = node >= 0 and (t.drained or pop.spec.effect == "node_down" or pop.node_failed_by_group(node))
        if burn > 0 and affects_node:
            self.cluster.add_down(node, BURN_IN)
        pop.restore(idx)
        self.engine.bus.publish(PART_REPLACED, pop, idx)
        if t.drained:
            self.cluster.remove_down(node, DownCause.repair(pop.name))
        if burn > 0 and affects_node:
            yield env.timeout(burn)
            self.cluster.remove_down(node, BURN_IN)
        t.back_h = eng.now
        self._close(tid, pop, idx)

    def _close(self, tid: int, pop: Any, idx: int) -> None:
        t = self.open.pop(tid)
        self.engine.recorder.event(t.back_h, "repair_done", t.path, t.node, t.back_h - t.fail_h)
        self.engine.recorder.tickets.append(t.row(True))

    def finish(self) -> None:
        """Tickets still open at the horizon, with the phases they reached (NaN after that)."""
        for tid, t in sorted(self.open.items()):
            self.engine.recorder.tickets.append(t.row(False))


def bind_scopes(sc: Scenario, cluster: Cluster, facility: dict[str, Any]) -> None:
    """Give the cooling units whose owner does not declare them the nodes they serve (air zones and
    coolant loops are blocks of racks, :func:`twin.model.cluster.node_blocks`) and the causes they take
    them down by, so dispatch by impact sees a CDU cooling 64 nodes. A unit's owner may set its own."""
    c = sc.cooling
    if c is None:
        return
    racks, npr = sc.cluster.racks, sc.cluster.nodes_per_rack
    trip = frozenset({THERMAL_TRIP})  # the thermal model's down reason for a trip
    if c.air is not None and "crah" in facility and facility["crah"].scope is None:
        zones = node_blocks(racks, c.air.zones, npr)
        per = c.air.crah.count
        facility["crah"].scope = lambda i, z=zones, k=per: range(*z[i // k])
        facility["crah"].causes = trip
    lq = c.liquid
    if lq is not None:
        loops = node_blocks(racks, lq.loops, npr)
        per, pumps = lq.cdu.count, lq.cdu.pumps.count
        if "cdu" in facility and facility["cdu"].scope is None:
            facility["cdu"].scope = lambda i, lp=loops, k=per: range(*lp[i // k])
            facility["cdu"].causes = trip
        if "cdu_pump" in facility and facility["cdu_pump"].scope is None:
            facility["cdu_pump"].scope = lambda i, lp=loops, k=per * pumps: range(*lp[i // k])
            facility["cdu_pump"].causes = trip
        if lq.leak is not None and "leak" in facility and facility["leak"].scope is None:
            nb = lq.leak.neighbours
            facility["leak"].scope = lambda i, nb=nb, npr=npr: range(i, min(i + 1 + nb, (i // npr + 1) * npr))
        if lq.leak is not None and "loop_leak" in facility and facility["loop_leak"].scope is None:
            facility["loop_leak"].scope = lambda i, lp=loops: range(*lp[i])  # its loop (cause loop_leak)


def impact_class(gpus: float, gpus_per_node: int) -> str:
    """Impact class of a ticket: ``none`` (0 GPUs: lost redundancy), ``node`` (up to one node's GPUs),
    ``multi`` (more: a rack, a zone, a loop)."""
    if math.isnan(gpus):
        return "unassigned"
    if gpus <= 0:
        return "none"
    return "node" if gpus <= gpus_per_node else "multi"


IMPACT_CLASSES = ("none", "node", "multi")


_COL = {name: i for i, name in enumerate(TICKET_COLUMNS)}


def _mean(x: np.ndarray) -> float:
    """Mean of a float column with NaN left out (NaN when nothing is left): numpy's pairwise sum over the
    values in ticket order divided by their count, as pandas' ``Series.mean`` computes it."""
    nan = np.isnan(x)
    n = int(x.size - nan.sum())
    if n == 0:
        return NAN
    return float(np.where(nan, 0.0, x).sum() / n)


def repair_metrics(shop: RepairShop, records: Sequence[tuple[Any, ...]], horizon_h: float, gpus_per_node: int,
                   parts: list[str]) -> tuple[dict[str, float], dict[str, dict[str, int]]]:
    """Metrics of the repair logistics, and each part type's done tickets per rung (for the parts table),
    from the ticket ``records`` (``Recorder.tickets``: rows of :data:`TICKET_COLUMNS` in closing order).

    The one definition of these metrics, for a full replication and a Monte-Carlo worker alike: it reads
    the records, not the ``tickets`` table, so a worker that keeps only metrics builds no table (issue 31:
    the table's pandas operations cost ~3 ms a replication whatever the number of tickets).

    Phase means (hours) are over the tickets that reached each phase (NaN phases left out):
    ``repair.wait_detect_h`` and ``repair.remediation_h`` over all, the rest over those that went to a
    technician (rung 2 or 3). ``repair.<remediated|replaced|escalated>``: done tickets per rung.
    ``repair.wait_crew_h.<none|node|multi>``: mean wait for a technician by impact class at dispatch
    (:func:`impact_class`; absent when a class had no ticket). ``crew_utilisation.<pool>``: busy
    technician-hours over on-shift technician-hours. Per part type with vendor RMA:
    ``rma.sent.<part>``, ``rma.at_vendor_mean.<part>`` (time-weighted units at the vendor) and
    ``spares_scrapped.<part>``."""
    from twin.observe.recorder import time_weighted_mean

    m: dict[str, float] = {}
    for pool in shop.crews.values():
        shift_h = pool.calendar.on_shift_hours(horizon_h) * pool.count
        m[f"crew_utilisation.{pool.name}"] = pool.busy_h / shift_h if shift_h else NAN
    by_part: dict[str, dict[str, int]] = {p: {name: 0 for name in RUNGS.values()} for p in parts}
    if records:
        def col(name: str) -> np.ndarray:
            return np.array([r[_COL[name]] for r in records], dtype=np.float64)

        fail, detected, remediated = col("fail_h"), col("detected_h"), col("remediated_h")
        rung = [r[_COL["rung"]] for r in records]
        done = [bool(r[_COL["done"]]) for r in records]
        m["repair.wait_detect_h"] = _mean(detected - fail)
        m["repair.remediation_h"] = _mean(remediated - detected)
        rep = np.array([g != 1 for g in rung], dtype=bool)
        spare, start, end, fixed, back = (col(c)[rep] for c in ("spare_h", "start_h", "end_h", "fixed_h", "back_h"))
        m["repair.wait_spare_h"] = _mean(spare - remediated[rep])
        wait = start - spare
        m["repair.wait_crew_h"] = _mean(wait)
        m["repair.hands_on_h"] = _mean(end - start)
        m["repair.escalation_h"] = _mean(fixed - end)
        m["repair.burn_in_h"] = _mean(back - fixed)
        for r, name in RUNGS.items():
            m[f"repair.{name}"] = float(sum(1 for g, d in zip(rung, done) if d and g == r))
        cls = [impact_class(float(g), gpus_per_node) for g in col("impact_gpus")[rep]]
        for c in IMPACT_CLASSES:
            sel = wait[np.array([k == c for k in cls], dtype=bool)] if cls else wait[:0]
            sel = sel[~np.isnan(sel)]
            if len(sel):  # only a class that had tickets (a mean over none is undefined, not 0)
                m[f"repair.wait_crew_h.{c}"] = float(sel.sum() / len(sel))
        for rec, g, d in zip(records, rung, done):
            part = str(rec[_COL["part"]])
            if d and part in by_part and g in RUNGS:
                by_part[part][RUNGS[int(g)]] += 1
    else:
        m.update({f"repair.{name}": 0.0 for name in RUNGS.values()})
    for part, inv in shop.inventories.items():
        if inv.rma_h is None:
            continue
        ts, vs = shop.engine.recorder.level_series(f"rma_at_vendor.{part}")
        m[f"rma.sent.{part}"] = float(inv.rma_sent)
        m[f"rma.at_vendor_mean.{part}"] = time_weighted_mean(ts, vs, horizon_h)
        m[f"spares_scrapped.{part}"] = float(inv.scrapped)
    return m, by_part
