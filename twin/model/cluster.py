"""Nodes of the cluster and their service state.

A node is *down* while it has at least one down reason (a failed ``node_down`` part, a redundant
group below its minimum, a drain for a cold repair, burn-in, a thermal trip, a power loss, a
planned drain...). It is *cut* while at least one link reason holds (NIC, optic, leaf). Only the
0 ↔ 1 transitions are published on the bus, so every subscriber sees one clean state-change path.
"""

from __future__ import annotations

from collections import Counter
from typing import Iterable

import numpy as np

from twin.model.engine import Engine, Topic


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


class Cluster:
    def __init__(self, engine: Engine, racks: int, nodes_per_rack: int, gpus_per_node: int) -> None:
        self.engine = engine
        self.racks = racks
        self.nodes_per_rack = nodes_per_rack
        self.n_nodes = racks * nodes_per_rack
        self.gpus_per_node = gpus_per_node
        engine.init_nodes(self.n_nodes)
        self.down_count = np.zeros(self.n_nodes, dtype=np.int32)
        self.cut_count = np.zeros(self.n_nodes, dtype=np.int32)
        self._down_reasons: dict[int, Counter[str]] = {}
        self._cut_reasons: dict[int, Counter[str]] = {}
        self._down_since: dict[int, tuple[float, str]] = {}
        self._cut_since: dict[int, tuple[float, str]] = {}
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

    def down_reasons(self, node: int) -> Counter[str]:
        return self._down_reasons.get(node, Counter())

    def cut_reasons(self, node: int) -> Counter[str]:
        return self._cut_reasons.get(node, Counter())

    def out_for(self, nodes: Iterable[int], causes: frozenset[str]) -> int:
        """How many of ``nodes`` are out of service (down) or cut off the fabric for one of ``causes``."""
        k = 0
        for node in nodes:
            if self.down_count[node] and not causes.isdisjoint(self._down_reasons[node]):
                k += 1
            elif self.cut_count[node] and not causes.isdisjoint(self._cut_reasons[node]):
                k += 1
        return k

    # ---- down / up ----------------------------------------------------------------------
    def add_down(self, node: int, cause: str) -> None:
        self.down_count[node] += 1
        self._down_reasons.setdefault(node, Counter())[cause] += 1
        if self.down_count[node] == 1:
            now = self.engine.now
            self._down_since[node] = (now, cause)
            self._down_arr = None
            self.n_up -= 1
            self.engine.recorder.level("nodes_up", now, self.n_up)
            self.engine.recorder.event(now, "node_down", cause, node)
            self.engine.bus.publish(Topic.NODE_DOWN, node, cause)

    def remove_down(self, node: int, cause: str) -> None:
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
            self.engine.recorder.interval(node, start, now, "down", first)
            self.n_up += 1
            self.engine.recorder.level("nodes_up", now, self.n_up)
            self.engine.recorder.event(now, "node_up", first, node, now - start)
            self.engine.bus.publish(Topic.NODE_UP, node, first)

    # ---- rail cut -----------------------------------------------------------------------
    def add_cut(self, node: int, cause: str) -> None:
        self.cut_count[node] += 1
        self._cut_reasons.setdefault(node, Counter())[cause] += 1
        if self.cut_count[node] == 1:
            self.n_cut += 1
            self._cut_since[node] = (self.engine.now, cause)
            self.engine.bus.publish(Topic.NODE_CUT, node, cause)

    def remove_cut(self, node: int, cause: str) -> None:
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
            self.engine.recorder.interval(node, start, self.engine.now, "cut", first)
            self.engine.bus.publish(Topic.NODE_UNCUT, node, first)

    def finish(self) -> None:
        """Close open intervals at the horizon."""
        end = self.engine.horizon_h
        for node, (start, cause) in sorted(self._down_since.items()):
            self.engine.recorder.interval(node, start, end, "down", cause)
        for node, (start, cause) in sorted(self._cut_since.items()):
            self.engine.recorder.interval(node, start, end, "cut", cause)
