"""Nodes of the cluster and their service state.

A node is *down* while it has at least one down reason (a failed ``node_down`` part, a redundant
group below its minimum, a drain for a cold repair, burn-in, a thermal trip, a power loss, a
planned drain...). It is *cut* while at least one link reason holds (NIC, optic, leaf). Only the
0 ↔ 1 transitions are published on the bus, so every subscriber sees one clean state-change path.
"""

from __future__ import annotations

from collections import Counter
from typing import Callable, Iterable

import numpy as np
from numpy.typing import NDArray

from twin import kernels_lazy
from twin.model.causes import DownCause
from twin.model.engine import Engine, Topic

# the compiled kernels, imported at their first use (twin.kernels_lazy: a run without them imports no numba)
any_lt = kernels_lazy.function("twin.kernels_events", "any_lt", globals())


_ALL = np.array([-1], dtype=np.int64)  # any_lt's "every node"
_FEW_NODES = 16  # set_load compares up to this many nodes' loads in Python (a list), more with numpy
MASK_NODES = 256  # above this many nodes a repeated write of one array goes through a boolean mask


def node_mask(n_nodes: int, nodes: NDArray[np.int64]) -> NDArray[np.bool_]:
    """The boolean mask of ``nodes`` among ``n_nodes``: ``a[mask] = v`` writes what ``a[nodes] = v`` writes
    (the same nodes, one value), ~0.7 µs faster for 2,048 of 2,080 nodes."""
    mask = np.zeros(n_nodes, dtype=bool)
    mask[nodes] = True
    return mask


def rack_path(rack: int) -> str:
    """Dotted path of a rack, the prefix of its nodes' and rack parts' paths (``hall.rack03``)."""
    return f"hall.rack{rack:02d}"


def node_path(node: int, nodes_per_rack: int) -> str:
    """Dotted path of a node, e.g. ``hall.rack03.node012`` (node index within the hall)."""
    return f"{rack_path(node // nodes_per_rack)}.node{node:03d}"


def node_blocks(racks: int, groups: int, nodes_per_rack: int) -> list[tuple[int, int]]:
    """Contiguous node ranges [start, end) of ``groups`` near-equal blocks of racks (air zones, coolant
    loops: the same rule as the thermal model's)."""
    return [(((z * racks) // groups) * nodes_per_rack, (((z + 1) * racks) // groups) * nodes_per_rack)
            for z in range(groups)]


class SpeedSource:
    """The speed cap of one source ('thermal', 'power', 'degraded'...): the fraction of full speed of each
    node's slowest GPU for that source. Its one writer holds this object (``Cluster.speed_source``), writes
    ``caps`` (in place, compiled kernels included) and then calls ``changed(nodes)``, which publishes
    ``Topic.NODE_SPEED`` (the cluster's own account first). Everyone else reads the cluster's
    ``node_speed`` / ``min_speed`` / ``speed_caps``."""

    __slots__ = ("_subs", "caps", "name")

    def __init__(self, name: str, caps: NDArray[np.float64],
                 subs: list[Callable[[NDArray[np.int64]], None]]) -> None:
        self.name = name
        self.caps = caps
        """Speed fraction of each node for this source (1.0: no cap)."""
        self._subs = subs

    def changed(self, nodes: NDArray[np.int64]) -> None:
        """The caps of ``nodes`` were written: publish ``Topic.NODE_SPEED``."""
        for fn in self._subs:  # = bus.publish(Topic.NODE_SPEED, nodes): the cluster owns the topic
            fn(nodes)


class Cluster:
    """The nodes: their service state (down and cut reasons), GPU load and speed caps. Load and speed are
    written through the cluster's methods only (``set_load``, a ``SpeedSource``), which publish
    ``Topic.NODE_LOAD`` / ``Topic.NODE_SPEED``; the arrays others read are read-only views."""

    def __init__(self, engine: Engine, racks: int, nodes_per_rack: int, gpus_per_node: int) -> None:
        self.engine = engine
        self.racks = racks
        self.nodes_per_rack = nodes_per_rack
        self.n_nodes = racks * nodes_per_rack
        self.gpus_per_node = gpus_per_node
        engine.n_nodes = self.n_nodes
        self._util = np.zeros(self.n_nodes)
        self._util_ro: NDArray[np.float64] = self._util.view()  # (node_util: read-only)
        self._util_ro.flags.writeable = False
        engine.read_node_util_from(self._node_util)
        self._load_subs = engine.bus.handlers(Topic.NODE_LOAD)
        # the array of set_load's last write (every node of it at _last_util; arrays given are never changed)
        self._last_nodes: NDArray[np.int64] | None = None
        self._last_util = 0.0
        self._stale = False  # that write was not made yet in _util (set_load deferred it: node_util makes it)
        self._mask_memo: tuple[NDArray[np.int64], NDArray[np.bool_]] | None = None  # mask_of's last (nodes, mask)
        self._speed_subs = engine.bus.handlers(Topic.NODE_SPEED)
        self.speed_caps: dict[str, NDArray[np.float64]] = {}
        """Per source the speed fraction of each node's slowest GPU (read it; a ``SpeedSource`` writes it).
        A node's speed is the minimum over sources (the tighter cap applies)."""
        self._sources: dict[str, SpeedSource] = {}
        self._slow = False  # some source caps some node below 1 (kept by _on_speed)
        self._compiled = False  # compiled bookkeeping (a thermal source exists: its kernels are loaded)
        engine.bus.subscribe(Topic.NODE_SPEED, self._on_speed)  # first subscriber: updated before the others read
        self.down_count = np.zeros(self.n_nodes, dtype=np.int32)
        self.cut_count = np.zeros(self.n_nodes, dtype=np.int32)
        self._down_reasons: dict[int, Counter[DownCause]] = {}
        self._cut_reasons: dict[int, Counter[DownCause]] = {}
        self._down_since: dict[int, tuple[float, DownCause]] = {}
        self._cut_since: dict[int, tuple[float, DownCause]] = {}
        self.n_up = self.n_nodes
        self.n_cut = 0  # nodes with at least one cut reason
        self._down_arr: np.ndarray | None = np.zeros(0, dtype=np.int64)
        engine.recorder.level("nodes_up", 0.0, self.n_up)

    def node_path(self, node: int) -> str:
        """Dotted path of a node, e.g. ``hall.rack03.node012`` (node index within the hall)."""
        return node_path(node, self.nodes_per_rack)

    def rack_of(self, node: int) -> int:
        return node // self.nodes_per_rack

    def is_up(self, node: int) -> bool:
        return bool(self.down_count[node] == 0)

    def is_cut(self, node: int) -> bool:
        return bool(self.cut_count[node] > 0)

    def down_nodes(self) -> np.ndarray:
        """The nodes out of service now, sorted (cached between up/down transitions; do not write)."""
        arr = self._down_arr
        if arr is None:
            arr = self._down_arr = np.fromiter(sorted(self._down_since), dtype=np.int64, count=len(self._down_since))
        return arr

    def down_reasons(self, node: int) -> Counter[DownCause]:
        return self._down_reasons.get(node, Counter())

    def cut_reasons(self, node: int) -> Counter[DownCause]:
        return self._cut_reasons.get(node, Counter())

    def out_for(self, nodes: Iterable[int], causes: frozenset[DownCause]) -> int:
        """How many of ``nodes`` are out of service (down) or cut off the fabric for one of ``causes``."""
        k = 0
        for node in nodes:
            if self.down_count[node] and not causes.isdisjoint(self._down_reasons[node]):
                k += 1
            elif self.cut_count[node] and not causes.isdisjoint(self._cut_reasons[node]):
                k += 1
        return k

    # ---- load and speed -----------------------------------------------------------------
    def set_load(self, nodes: NDArray[np.int64], util: float) -> None:
        """The GPU utilisation of ``nodes`` is now ``util``: written and published (``Topic.NODE_LOAD``) when it
        changes the load of any of them (no subscriber's state depends on a publication that changes none).
        The caller never changes ``nodes`` afterwards (subscribers may keep it). A load written again to the array
        written last (a job's checkpoint toggles) is made in the array when it is next read (``node_util``)."""
        if nodes is self._last_nodes:  # the last write was of this array, all of it at _last_util, and none since
            if util == self._last_util:
                return
            self._last_util = util  # the write itself deferred to the next read or other write (_write_last)
            self._stale = True
        else:
            if self._stale:
                self._write_last()
            nu = self._util
            if len(nodes) <= _FEW_NODES:  # a few nodes: the same test in Python floats (~0.7 µs less than numpy's)
                for x in nu[nodes].tolist():
                    if x != util:
                        break
                else:
                    return
            elif not np.count_nonzero(nu[nodes] != util):
                return
            nu[nodes] = util
            self._last_nodes, self._last_util = nodes, util
        for fn in self._load_subs:  # = bus.publish(Topic.NODE_LOAD, nodes, util): the cluster owns the topic
            fn(nodes, util)

    def _write_last(self) -> None:
        """Make the write ``set_load`` deferred: every node of the array it last wrote at its last load (a job-wide
        array written again through a mask of the same nodes, ~0.7 µs less)."""
        self._stale = False
        nodes = self._last_nodes
        assert nodes is not None
        if len(nodes) > MASK_NODES:
            self._util[self.mask_of(nodes)] = self._last_util
        else:
            self._util[nodes] = self._last_util

    def mask_of(self, nodes: NDArray[np.int64]) -> NDArray[np.bool_]:
        """:func:`node_mask` of ``nodes`` (an array never changed once published), kept for the last array asked:
        the cluster's and the IT power's job-wide writes of one job share it (read it, do not write it)."""
        memo = self._mask_memo
        if memo is not None and memo[0] is nodes:
            return memo[1]
        mask = node_mask(self.n_nodes, nodes)
        self._mask_memo = (nodes, mask)
        return mask

    @property
    def node_util(self) -> NDArray[np.float64]:
        """GPU utilisation of each node in [0, 1] now (read-only; ``set_load`` writes it). A load written again to
        the array written last is made in the array when it is read (here or ``util_read``) or another array's
        load is written: read it again after an event rather than keeping it."""
        if self._stale:
            self._write_last()
        return self._util_ro

    def _node_util(self) -> NDArray[np.float64]:
        """``node_util`` (the engine's reader: ``Engine.node_util``)."""
        if self._stale:
            self._write_last()
        return self._util_ro

    def speed_source(self, source: str) -> SpeedSource:
        """The writer's handle of speed-cap source ``source`` (its caps created at 1.0): one writer per source."""
        assert source not in self._sources, f"speed source {source!r} has a writer already"
        arr = self.speed_caps[source] = np.ones(self.n_nodes)
        if source == "thermal":  # a thermal model runs compiled kernels: the cluster's bookkeeping may too
            self._compiled = True
        src = self._sources[source] = SpeedSource(source, arr, self._speed_subs)
        return src

    def _on_speed(self, nodes: NDArray[np.int64]) -> None:
        # while nothing was slowed, only the changed nodes can have become slow; once some node was,
        # whether any still is needs every node
        arrs = self.speed_caps.values()
        if self._compiled:  # (the same tests, compiled: a hall with a thermal model has its kernels loaded)
            for arr in arrs:
                if any_lt(arr, _ALL if self._slow else np.asarray(nodes, dtype=np.int64), 1.0):
                    self._slow = True
                    return
            self._slow = False
            return
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

    @property
    def util_read(self) -> NDArray[np.float64]:
        """The per-node utilisation array itself, writable, for compiled kernels that only read it (numba types a
        read-only array on its slow path, ~2 µs a call); everyone else reads ``node_util``."""
        if self._stale:
            self._write_last()
        return self._util

    @property
    def slow(self) -> bool:
        """True while some speed-cap source may cap some node below 1 (else every node's speed is 1)."""
        return self._slow

    def min_speed(self, nodes: NDArray[np.int64]) -> float:
        """Speed of the slowest node of ``nodes`` (1.0 while no source caps any node)."""
        if not self._slow:
            return 1.0
        return float(self.node_speed(nodes).min())

    # ---- down / up ----------------------------------------------------------------------
    def add_down(self, node: int, cause: DownCause) -> None:
        self.down_count[node] += 1
        self._down_reasons.setdefault(node, Counter())[cause] += 1
        if self.down_count[node] == 1:
            now = self.engine.now
            self._down_since[node] = (now, cause)
            self._down_arr = None
            self.n_up -= 1
            self.engine.recorder.level("nodes_up", now, self.n_up)
            self.engine.recorder.event(now, "node_down", cause.label, node)
            self.engine.bus.publish(Topic.NODE_DOWN, node, cause)

    def remove_down(self, node: int, cause: DownCause) -> None:
        reasons = self._down_reasons[node]
        assert reasons[cause] > 0, f"node {node} is not down for {cause}"
        reasons[cause] -= 1
        if reasons[cause] == 0:
            del reasons[cause]
        self.down_count[node] -= 1
        if self.down_count[node] == 0:
            del self._down_reasons[node]
            now = self.engine.now
            start, first = self._down_since.pop(node)
            self._down_arr = None
            self.engine.recorder.interval(node, start, now, "down", first.label)
            self.n_up += 1
            self.engine.recorder.level("nodes_up", now, self.n_up)
            self.engine.recorder.event(now, "node_up", first.label, node, now - start)
            self.engine.bus.publish(Topic.NODE_UP, node, first)

    # ---- rail cut -----------------------------------------------------------------------
    def add_cut(self, node: int, cause: DownCause) -> None:
        self.cut_count[node] += 1
        self._cut_reasons.setdefault(node, Counter())[cause] += 1
        if self.cut_count[node] == 1:
            self.n_cut += 1
            self._cut_since[node] = (self.engine.now, cause)
            self.engine.bus.publish(Topic.NODE_CUT, node, cause)

    def remove_cut(self, node: int, cause: DownCause) -> None:
        reasons = self._cut_reasons[node]
        assert reasons[cause] > 0
        reasons[cause] -= 1
        if reasons[cause] == 0:
            del reasons[cause]
        self.cut_count[node] -= 1
        if self.cut_count[node] == 0:
            self.n_cut -= 1
            del self._cut_reasons[node]
            start, first = self._cut_since.pop(node)
            self.engine.recorder.interval(node, start, self.engine.now, "cut", first.label)
            self.engine.bus.publish(Topic.NODE_UNCUT, node, first)

    def finish(self) -> None:
        """Close open intervals at the horizon."""
        end = self.engine.horizon_h
        for node, (start, cause) in sorted(self._down_since.items()):
            self.engine.recorder.interval(node, start, end, "down", cause.label)
        for node, (start, cause) in sorted(self._cut_since.items()):
            self.engine.recorder.interval(node, start, end, "cut", cause.label)
