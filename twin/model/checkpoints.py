"""A job's kept checkpoints and the lineage of its running state (issue 39): what a rollback after a
silent data corruption (twin.model.health) can return to, and whether the job still holds the state
a corruption struck.

* :class:`History`: the completed checkpoints a job keeps, by the scenario's retention policy
  (``checkpoint.retention``, :class:`twin.scenario.workload.Retention`): the newest ``keep_last`` (the
  rolling set) and, of those leaving it, the first and then one captured at least ``persistent_every_h``
  hours after the last one kept (persistent, kept to the job's end). Each checkpoint is (the time its
  state was captured h, the progress it saved h). A rollback to a time drops the checkpoints captured
  since (their state is corrupt) and returns to the newest one left.
* :class:`Lineage`: the wall-time spans whose computation the job's running state carries. A restart from
  a checkpoint captured at k keeps the spans up to k and starts a new span at the restart; a corruption at
  time c is in the running state only if c lies in a span. One struck in a span a restart discarded (an
  earlier rollback, a failure, a planned drain: any restart from a checkpoint captured before c) is gone,
  and its detection costs nothing.

* :func:`peer_copy_lost`: whether an in-memory peer checkpoint (``checkpoint.mode: peer``) survives the nodes a
  job lost since it completed: each node's shard is also in its partner's memory, so it is lost only when both
  holders of some shard are gone.

Hours throughout (the engine's clock).
"""

from __future__ import annotations

import math
from collections import deque

import numpy as np

Saved = tuple[float, float]
"""A kept checkpoint: (capture time h, progress saved h)."""


class History:
    """The checkpoints a job keeps (the module docstring), oldest first within each set; every
    persistent checkpoint was captured before every one of the rolling set."""

    __slots__ = ("keep_last", "every_h", "rolling", "kept")

    def __init__(self, keep_last: int, persistent_every_h: float | None) -> None:
        self.keep_last = keep_last
        self.every_h = persistent_every_h
        self.rolling: deque[Saved] = deque()
        self.kept: list[Saved] = []

    def add(self, capture_h: float, saved_h: float) -> None:
        """A checkpoint completed: it joins the rolling set; the oldest one leaving it is kept if it is
        the first to leave or was captured ``persistent_every_h`` after the last one kept."""
        rolling = self.rolling
        rolling.append((capture_h, saved_h))
        if len(rolling) > self.keep_last:
            old = rolling.popleft()
            every = self.every_h
            if every is not None and (not self.kept or old[0] >= self.kept[-1][0] + every - 1e-9):
                self.kept.append(old)

    def newest(self) -> Saved | None:
        """The newest kept checkpoint (the one an interruption restarts from), None if none."""
        if self.rolling:
            return self.rolling[-1]
        return self.kept[-1] if self.kept else None

    def drop_from(self, before_h: float) -> Saved | None:
        """Drop every checkpoint captured at or after ``before_h``; the newest one left (None: none)."""
        rolling, kept = self.rolling, self.kept
        while rolling and rolling[-1][0] >= before_h:
            rolling.pop()
        if not rolling:
            while kept and kept[-1][0] >= before_h:
                kept.pop()
        return self.newest()

    def __len__(self) -> int:
        return len(self.rolling) + len(self.kept)


class Lineage:
    """The wall-time spans (start, end) whose computation a job's running state carries, oldest first;
    the last is open (end inf) while the job runs on from its latest restart."""

    __slots__ = ("spans",)

    def __init__(self, start_h: float = 0.0) -> None:
        self.spans: list[tuple[float, float]] = [(start_h, math.inf)]

    def restore(self, capture_h: float | None, now_h: float) -> None:
        """The job restarts at ``now_h`` from a checkpoint captured at ``capture_h`` (None: from scratch):
        its state keeps the spans up to the capture, then computes anew from ``now_h``."""
        spans = self.spans
        if capture_h is None:
            spans.clear()
        else:
            while spans and spans[-1][0] > capture_h:
                spans.pop()
            if spans and spans[-1][1] > capture_h:
                spans[-1] = (spans[-1][0], capture_h)
        spans.append((now_h, math.inf))

    def holds(self, t_h: float) -> bool:
        """Whether the running state carries the computation at time ``t_h``."""
        for start, end in reversed(self.spans):
            if start <= t_h:
                return t_h <= end
        return False


def peer_partner(index: int, count: int) -> int:
    """Position of the node that holds a copy of the shard of the node at ``index`` among ``count`` holders:
    pairs (0, 1), (2, 3), ... of the job's sorted nodes (neighbours in a rack; assumption); an odd last node
    copies to the one before it. -1 for a single node (no peer)."""
    if count < 2:
        return -1
    j = index ^ 1
    return j if j < count else index - 1


def peer_copy_lost(holders: np.ndarray, gone: list[int]) -> bool:
    """Whether a peer checkpoint (each shard in its node's memory and its partner's, :func:`peer_partner`) is
    lost: some node among ``holders`` (the job's nodes when it completed) and the partner holding its copy are
    both in ``gone`` (nodes lost since). Nodes that joined later hold no shard of it; a single-node job keeps
    no copy, so losing its node loses it."""
    n = len(holders)
    if n == 0 or not gone:
        return False
    lost = set(int(x) for x in gone)
    pos = {int(node): i for i, node in enumerate(holders.tolist())}
    for node in lost:
        i = pos.get(node)
        if i is None:
            continue
        j = peer_partner(i, n)
        if j < 0 or int(holders[j]) in lost:
            return True
    return False
