"""Node pools of the scheduler: the free nodes and the hot spares, as boolean masks."""

from __future__ import annotations

import numpy as np

_FEW = 8  # discard_many and add_many take up to this many nodes one by one

class NodePool:
    """A set of node indices held as a boolean mask: O(1) add/remove, vectorised listing."""

    def __init__(self, n: int, members: range | None = None) -> None:
        self.mask = np.zeros(n, dtype=bool)
        self.count = 0
        if members is not None:
            self.mask[list(members)] = True
            self.count = int(self.mask.sum())

    def add(self, node: int) -> None:
        if not self.mask[node]:
            self.mask[node] = True
            self.count += 1

    def discard(self, node: int) -> None:
        if self.mask[node]:
            self.mask[node] = False
            self.count -= 1

    def discard_many(self, nodes: np.ndarray) -> None:
        """Remove every node of ``nodes`` (an index array without repeats) that is a member."""
        if not self.count:
            return
        m = self.mask
        if len(nodes) <= _FEW:  # a few nodes one by one (numpy's three calls cost more)
            for n in nodes.tolist():
                if m[n]:
                    m[n] = False
                    self.count -= 1
            return
        self.count -= int(np.count_nonzero(m[nodes]))
        m[nodes] = False

    def add_many(self, nodes: np.ndarray) -> None:
        """Add every node of ``nodes`` (an index array without repeats)."""
        m = self.mask
        if len(nodes) <= _FEW:
            for n in nodes.tolist():
                if not m[n]:
                    m[n] = True
                    self.count += 1
            return
        self.count += len(nodes) - int(np.count_nonzero(m[nodes]))
        m[nodes] = True

    def __contains__(self, node: int) -> bool:
        return bool(self.mask[node])

    def __len__(self) -> int:
        return self.count

    def first(self, exclude: np.ndarray | None = None) -> int:
        """The lowest-numbered member, without those where ``exclude`` is true (``nodes(exclude)[0]``); -1: none."""
        if not self.count:
            return -1
        m = self.mask if exclude is None else self.mask & ~exclude
        i = int(m.argmax())  # (the first True: one pass that stops there, not the listing of every member)
        return i if m[i] else -1

    def nodes(self, exclude: np.ndarray | None = None) -> np.ndarray:
        """Members in index order, without those where ``exclude`` is true."""
        m = self.mask if exclude is None else self.mask & ~exclude
        return np.flatnonzero(m)
