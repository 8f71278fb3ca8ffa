"""The engine: SimPy environment, the state-change bus and random streams (the crews' calendar is
:class:`twin.units.Calendar`).

Every subsystem publishes its state changes on one :class:`Bus` and subscribes to the others'
topics there; models never call each other point to point.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any, Callable

import numpy as np
import simpy
from numpy.typing import NDArray

from twin import rng


class Topic:
    """Names of bus topics and the arguments their subscribers receive."""

    NODE_DOWN = "node_down"  # (node: int, cause: str) node leaves service
    NODE_UP = "node_up"  # (node: int, cause: str) node returns to service
    NODE_CUT = "node_cut"  # (node: int, cause: str) node cut off a rail (multi-node jobs impossible)
    NODE_UNCUT = "node_uncut"  # (node: int, cause: str)
    TRANSIENT = "transient"  # (node: int, cause: str) transient fault: jobs on the node crash
    LINK_FLAP = "link_flap"  # (node: int, cause: str) a compute-fabric link of the node flapped: its
    # multi-node job crashes (a job on one node does not use the fabric)
    FABRIC_FLAP = "fabric_flap"  # (group: int, cause: str) an uplink of a leaf of this leaf group flapped:
    # jobs spanning several leaf groups with nodes in this one crash
    GROUP = "group"  # (node: int, part: str, healthy: int) a redundant group's healthy count changed
    NODE_SPEED = "node_speed"  # (nodes: ndarray[int]) engine.speed_caps[...] of these nodes changed
    NODE_LOAD = "node_load"  # (nodes: ndarray[int], util: float) engine.node_util of these nodes is now util;
    # the publisher never changes the array afterwards (subscribers may keep it: thermal's load log)
    JOB = "job"  # (job) the workload moved a job (start, checkpoint, interruption, restart, end)
    FABRIC = "fabric"  # () fabric bandwidth changed: ask the fabric service (twin.model.component.FABRIC) again
    STORAGE = "storage"  # (available: bool) the storage's bandwidth, data shares or availability changed: ask the
    # storage service (twin.model.component.STORAGE) again; available False: an outage (metadata or servers)
    RACK_PART = "rack_part"  # (rack: int, part: str, healthy: int) a rack part type's working units in a rack
    NVLINK = "nvlink"  # (domain: int) an NVLink domain's bandwidth share changed (twin.model.domains)
    PART_FAILED = "part_failed"  # (pop: PartPopulation, idx: int)
    PART_RESTORED = "part_restored"  # (pop: PartPopulation, idx: int)
    FEED = "feed"  # (feed: str, mode: str) a power feed's mode changed: utility, ups, generator or dead
    COOLING_UNIT = "cooling_unit"  # (kind: str, idx: int, off: bool) the plant took a CRAH unit ('crah') or a
    # CDU ('cdu') out of service (power lost or restarting, maintenance, a shared part failed) or gave it back
    PLANT_SUPPLY = "plant_supply"  # (offset_c: float) the chilled-water supply the rooms see is now offset_c
    # above its set point (the loop's offset held on a grid, issue 24)
    ZONE_INLET = "zone_inlet"  # (start: int, stop: int, held_c: float) nodes start..stop-1 (an air zone) now
    # take in air at held_c, °C (the zone's held supply: server fans speed up in warmer air)
    COOLING_LOAD = "cooling_load"  # (feed: str, load_w: float) electrical load of the cooling units running on
    # the feed's UPS output, W (the UPS carries it on battery)
    FEED_TRIP = "feed_trip"  # (feed: str, restore_h: float) the feed's breaker tripped on an overload
    # (twin.model.oversubscription): its load is dead until restore_h later
    GRID_OUTAGE = "grid_outage"  # (duration_h: float) a scheduled grid event cuts every feed's utility (twin.model.grid)


class Bus:
    """Synchronous publish/subscribe: ``publish`` calls every subscriber of a topic in order."""

    def __init__(self) -> None:
        self._subs: dict[str, list[Callable[..., None]]] = defaultdict(list)

    def subscribe(self, topic: str, fn: Callable[..., None]) -> None:
        self._subs[topic].append(fn)

    def publish(self, topic: str, *args: Any) -> None:
        for fn in self._subs.get(topic, ()):
            fn(*args)

    def handlers(self, topic: str) -> list[Callable[..., None]]:
        """The live subscriber list of ``topic`` (later subscriptions appear in it), for a publisher on
        the hot path to call in order itself: the same delivery as ``publish``, without its frame."""
        return self._subs[topic]


class Streams:
    """Counter-based random streams of one replication (model.md §1)."""

    def __init__(self, seed: int, replication: int) -> None:
        self.key = rng.replication_key(seed, replication)
        self._digests: dict[str, int] = {}

    def uniforms(self, digests: NDArray[np.uint64], k: NDArray[np.int64] | int, stream: int = 0) -> NDArray[np.float64]:
        return rng.uniforms(self.key, digests, k, stream)

    def scalar(self, path: str, k: int) -> float:
        """Uniform number ``k`` of stream ``path`` (one draw in plain Python, bit-identical to the
        array function: :func:`twin.rng.uniform1`)."""
        d = self._digests.get(path)
        if d is None:
            d = self._digests[path] = rng.path_digest(path)
        return rng.uniform1(self.key, d, k)


class Engine:
    """Holds what every component shares: env, bus, streams, recorder, horizon."""

    def __init__(self, seed: int, replication: int, horizon_h: float, recorder: Any) -> None:
        self.env = simpy.Environment(initial_time=0.0)  # a float clock from the start: now is always float
        self.bus = Bus()
        self.streams = Streams(seed, replication)
        self.recorder = recorder
        self.horizon_h = horizon_h
        self.n_nodes = 0
        self.node_util: NDArray[np.float64] = np.zeros(0)
        """GPU utilisation of each node in [0, 1], set by the workload (1 = computing at full power
        demand, 0 = idle or paused for a synchronous checkpoint)."""
        self.speed_caps: dict[str, NDArray[np.float64]] = {}
        """Per source ('thermal', 'power', ...) the speed fraction of each node's slowest GPU.
        A node's speed is the minimum over sources (the tighter cap applies)."""
        self._slow = False  # some source caps some node below 1 (kept by _on_speed: writers publish NODE_SPEED)
        self.bus.subscribe(Topic.NODE_SPEED, self._on_speed)  # first subscriber: updated before the others read

    def init_nodes(self, n_nodes: int) -> None:
        self.n_nodes = n_nodes
        self.node_util = np.zeros(n_nodes)

    def speed_cap(self, source: str) -> NDArray[np.float64]:
        """The writable speed-cap array of ``source`` (created at 1.0 on first use). A writer publishes
        ``Topic.NODE_SPEED`` with the nodes it changed (the engine's fast paths rely on it)."""
        arr = self.speed_caps.get(source)
        if arr is None:
            arr = self.speed_caps[source] = np.ones(self.n_nodes)
        return arr

    def _on_speed(self, nodes: NDArray[np.int64]) -> None:
        # while nothing was slowed, only the changed nodes can have become slow; once some node was,
        # whether any still is needs every node
        arrs = self.speed_caps.values()
        if self._slow:
            self._slow = any(bool((arr < 1.0).any()) for arr in arrs)
        else:
            self._slow = any(bool((arr[nodes] < 1.0).any()) for arr in arrs)

    def node_speed(self, nodes: NDArray[np.int64]) -> NDArray[np.float64]:
        """Speed of each node in ``nodes``: the minimum over all speed-cap sources."""
        out = np.ones(len(nodes))
        if self._slow:
            for arr in self.speed_caps.values():
                np.minimum(out, arr[nodes], out=out)
        return out

    def min_speed(self, nodes: NDArray[np.int64]) -> float:
        """Speed of the slowest node of ``nodes`` (1.0 while no source caps any node)."""
        if not self._slow:
            return 1.0
        return float(self.node_speed(nodes).min())

    @property
    def now(self) -> float:
        """Simulated time, hours (a float: the clock starts at 0.0)."""
        return self.env._now

    def timer(self, fn: Callable[[], None] | None = None, priority: float = simpy.events.NORMAL) -> Timer:
        """A new :class:`Timer` on this engine (unarmed) calling ``fn``, its calls at ``priority`` among the
        events of their instant (:meth:`call_at`)."""
        return Timer(self, fn, priority)

    def batch_timer(self, n: int, fn: Callable[[NDArray[np.int64]], None]) -> BatchTimer:
        """A new :class:`BatchTimer` over items 0 … n−1 calling ``fn(items)``."""
        return BatchTimer(self, n, fn)

    def call_at(self, t_h: float, fn: Callable[[], None], priority: float = simpy.events.NORMAL) -> simpy.events.Timeout:
        """Schedule ``fn()`` at absolute time ``t_h`` (no process: a callback on a timeout); among
        events of the same instant, lower ``priority`` first (SimPy's URGENT 0, NORMAL 1), then
        the order of scheduling."""
        d = t_h - self.env._now
        return _Call(self.env, d if d > 0.0 else 0.0, fn, priority)


class Timer:
    """One pending callback at a time, replacing a hand-rolled generation token: ``set(t_h)`` arms
    it (re-arming cancels the pending call), ``cancel()`` disarms it, ``reschedule(t_h)`` moves it.
    A cancelled or superseded call never runs its callback.

    ``fn`` (given here or to ``set``) takes no argument. Cost: one scheduled event per ``set``, as
    ``Engine.call_at``; cancelling empties the pending event's callback list (SimPy still pops the
    event at its time, with nothing to call), so the event order is that of the calls made.
    """

    __slots__ = ("_cb", "_env", "_ev", "_fn", "_priority", "due_h")

    def __init__(self, engine: Engine, fn: Callable[[], None] | None = None,
                 priority: float = simpy.events.NORMAL) -> None:
        self._env = engine.env
        self._fn = fn
        self._priority = priority
        self._cb = self._fire  # the bound method made once, not at every set
        self._ev: _TimerCall | None = None
        self.due_h = math.nan
        """Time (h) of the pending call; NaN when none is pending."""

    @property
    def pending(self) -> bool:
        """True while a call is armed and has not run."""
        return self._ev is not None

    def set(self, t_h: float, fn: Callable[[], None] | None = None) -> None:
        """Arm the timer at absolute time ``t_h`` (now if earlier), with ``fn`` if given (else the
        callback given before); a pending call is cancelled."""
        ev = self._ev
        if ev is not None:
            ev.callbacks.clear()
        if fn is not None:
            self._fn = fn
        env = self._env
        d = t_h - env._now
        self._ev = _TimerCall(env, d if d > 0.0 else 0.0, self._cb, self._priority)
        self.due_h = t_h

    def reschedule(self, t_h: float) -> None:
        """Move the call to ``t_h`` with the same callback (armed if it was not)."""
        self.set(t_h)

    def cancel(self) -> None:
        """Disarm: the pending call, if any, never runs."""
        ev = self._ev
        if ev is not None:
            ev.callbacks.clear()
            self._ev = None
            self.due_h = math.nan

    def _fire(self, _ev: simpy.events.Event) -> None:
        self._ev = None
        self.due_h = math.nan
        fn = self._fn
        assert fn is not None, "a Timer was set without a callback"
        fn()


class BatchTimer:
    """The :class:`Timer` of indexed items that share calls: ``set(items, t_h)`` schedules one call for
    the batch (one event, however many items), ``cancel(items)`` withdraws those items from whatever
    call they are in, and the call runs ``fn`` with the items of its batch still armed (not at all when
    none is). Re-arming an item moves it to its new call. For the power chain's nodes rebooting after
    power returns: a batch of nodes comes back together, and each may lose power again on its own.
    """

    __slots__ = ("_engine", "_fn", "_version")

    def __init__(self, engine: Engine, n: int, fn: Callable[[NDArray[np.int64]], None]) -> None:
        self._engine = engine
        self._fn = fn
        self._version = np.zeros(n, dtype=np.int64)  # an item's call is the one made at its version

    def set(self, items: NDArray[np.int64], t_h: float) -> None:
        """Arm ``items`` at absolute time ``t_h`` (now if earlier), in one call; their pending calls are
        cancelled."""
        self._version[items] += 1
        version = self._version[items].copy()
        self._engine.call_at(t_h, lambda: self._fire(items, version))

    def cancel(self, items: NDArray[np.int64] | int) -> None:
        """Disarm ``items``: their pending call, if any, never runs for them."""
        self._version[items] += 1

    def _fire(self, items: NDArray[np.int64], version: NDArray[np.int64]) -> None:
        armed = self._version[items] == version
        if armed.any():
            self._version[items[armed]] += 1  # fired: a later cancel of these items is a no-op
            self._fn(items[armed])


class _TimerCall(simpy.events.Timeout):
    """A timeout whose one callback is ``cb(event)``: Timeout.__init__ inlined as in :class:`_Call`."""

    def __init__(self, env: simpy.Environment, delay: float, cb: Callable[[simpy.events.Event], None],
                 priority: float = simpy.events.NORMAL) -> None:
        self.env = env
        self.callbacks: list[Any] = [cb]
        self._value = None
        self._delay = delay
        self._ok = True
        env.schedule(self, priority, delay)  # type: ignore[arg-type]


class _Call(simpy.events.Timeout):
    """A timeout that calls ``fn()`` when SimPy processes it: the event loop's most common event.

    Timeout.__init__ inlined (the same attributes, scheduled the same way through
    ``env.schedule``), with the callback in place from the start: ~0.5 µs less per scheduled
    callback than ``env.timeout`` plus ``callbacks.append``. SimPy >= 4.1 (pyproject)."""

    def __init__(self, env: simpy.Environment, delay: float, fn: Callable[[], None],
                 priority: float = simpy.events.NORMAL) -> None:
        self.env = env
        self.callbacks: list[Any] = [lambda _e: fn()]
        self._value = None
        self._delay = delay
        self._ok = True
        env.schedule(self, priority, delay)  # type: ignore[arg-type]
