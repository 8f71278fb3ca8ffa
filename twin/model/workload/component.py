"""The workload component: the layers of :mod:`twin.model.workload` wired to the engine's bus."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from twin.model.component import FABRIC, JOBS, STORAGE, BuildContext, Component, ResultsSoFar
from twin.model.engine import Topic
from twin.model.workload import results as tables
from twin.model.workload.jobs import DONE, JOB_RECORDS, QUEUED
from twin.model.workload.sources import Sources

if TYPE_CHECKING:  # pragma: no cover
    from twin.scenario.schema import Scenario


class Workload(Sources, Component):
    """The job queue and scheduler, subscribed to the engine's bus: the layers of the package (progress,
    checkpointing, scheduler, elastic jobs, interruptions, sources) over the state of
    :class:`~twin.model.workload.base.WorkloadBase`; the result tables are :mod:`twin.model.workload.results`'s."""

    name = "workload"
    uses = (FABRIC, STORAGE)
    provides = (JOBS, JOB_RECORDS)

    @classmethod
    def wanted(cls, sc: Scenario) -> bool:
        return sc.workload is not None

    @classmethod
    def build(cls, ctx: BuildContext) -> Workload:
        return cls(ctx)

    def __init__(self, model: BuildContext) -> None:
        super().__init__(model)
        self._build_sources()
        bus = self.engine.bus
        bus.subscribe(Topic.NODE_DOWN, self._on_node_lost)
        bus.subscribe(Topic.NODE_CUT, self._on_node_cut)
        bus.subscribe(Topic.NODE_UP, self._on_node_up)
        bus.subscribe(Topic.NODE_UNCUT, self._on_node_up)
        bus.subscribe(Topic.TRANSIENT, self._on_transient)
        bus.subscribe(Topic.LINK_FLAP, self._on_link_flap)
        bus.subscribe(Topic.FABRIC_FLAP, self._on_fabric_flap)
        bus.subscribe(Topic.NODE_SPEED, self._on_speed)
        bus.subscribe(Topic.FABRIC, self._on_fabric)
        bus.subscribe(Topic.STORAGE, self._on_storage)
        if self.domains is not None:
            bus.subscribe(Topic.NVLINK, self._on_nvlink)

    def start(self) -> None:
        pass

    def holds_any(self, jid: int, nodes: np.ndarray) -> bool:
        """True when job ``jid`` holds at least one of ``nodes`` now (:class:`~twin.model.workload.jobs.JobRecords`)."""
        return bool((self.owner[nodes] == jid).any())

    def finish(self) -> None:
        self._note_unreserved(None)  # (closes the last spell at the horizon)
        for job in self.jobs:
            if job.state != DONE:
                self._advance(job)
                if job.state == QUEUED:
                    job.acct.wait_h += self._env._now - job.queued_at
                    job.queued_at = self._env._now

    def results(self, so_far: ResultsSoFar) -> tuple[dict[str, float], dict[str, pd.DataFrame]]:
        return tables.results(self, so_far)
