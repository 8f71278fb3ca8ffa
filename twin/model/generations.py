"""GPU generations of a pooled hall (``cluster.pools``, issue 52): the ``generation`` speed cap.

A job's work is stated at the fastest generation's peak FLOP/s; each node of an older pool runs at its pool's
peak over the fastest (:meth:`twin.scenario.schema.Cluster.generation_speed`), a speed cap through the cluster's
speed sources like a thermal or power cap, so a synchronous job spanning two generations runs at its slowest
GPU's pace (the workload paces a job by its slowest node) and one on the fastest nodes only at full speed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from twin.model.component import BuildContext, Component, Metrics, ResultsSoFar, Tables

if TYPE_CHECKING:  # pragma: no cover
    from twin.scenario.schema import Scenario


class Generations(Component):
    """Writes each pool's generation speed as the ``generation`` speed cap of its nodes, once, at the start."""

    name = "generations"

    @classmethod
    def wanted(cls, sc: "Scenario") -> bool:
        return bool(sc.cluster.pools) and min(sc.cluster.generation_speed()) < 1.0

    @classmethod
    def build(cls, ctx: BuildContext) -> "Generations":
        return cls(ctx)

    def __init__(self, ctx: BuildContext) -> None:
        cl = ctx.sc.cluster
        self.speed = cl.generation_speed()
        src = ctx.cluster.speed_source("generation")
        for (a, b, _), s in zip(cl.node_pools(), self.speed):
            src.caps[a:b] = s
        src.changed(np.arange(ctx.cluster.n_nodes, dtype=np.int64))  # before any job starts (build time)

    def results(self, so_far: ResultsSoFar) -> tuple[Metrics, Tables]:
        return {}, {}  # the caps act through the jobs' pace (their step time and work hours)
