"""Planned maintenance: rolling drains on a calendar (model.md §7).

Each wave is one scheduled event that drains a batch of nodes (down reason ``planned``) and one
that returns them; jobs on drained nodes see a planned interruption through the bus.
"""

from __future__ import annotations

from twin.model.cluster import Cluster
from twin.model.causes import PLANNED
from twin.model.engine import Engine
from twin.scenario.schema import Planned


class PlannedMaintenance:
    def __init__(self, engine: Engine, cluster: Cluster, spec: Planned) -> None:
        self.engine = engine
        self.cluster = cluster
        self.spec = spec
        self.waves = 0
        self._next_node = 0
        self._waves = engine.calls(self._wave)
        self._wave_ends = engine.calls(self._wave_end)

    def start(self) -> None:
        t = self.spec.start_day * 24.0
        if t < self.engine.horizon_h:
            self._waves.at(t)

    def _wave(self) -> None:
        n = self.cluster.n_nodes
        batch = [(self._next_node + i) % n for i in range(min(self.spec.batch_nodes, n))]
        self._next_node = (self._next_node + len(batch)) % n
        self.waves += 1
        for node in batch:
            self.cluster.add_down(node, PLANNED)
        end = self.engine.now + self.spec.duration_h
        self._wave_ends.at(end, batch)
        nxt = self.engine.now + self.spec.every_days * 24.0
        if nxt < self.engine.horizon_h:
            self._waves.at(nxt)

    def _wave_end(self, batch: list[int]) -> None:
        for node in batch:
            self.cluster.remove_down(node, PLANNED)
