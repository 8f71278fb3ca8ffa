"""The workload's state: what the layers of :class:`twin.model.workload.Workload` share (the engine, the
services it uses, the jobs, the node owners and pools, the queue, the storage transfers, the tables' rows),
and the few steps one layer asks of a layer above it (declared here, defined there)."""

from __future__ import annotations

from typing import Any

import numpy as np

from twin.model.causes import DownCause
from twin.model.component import FABRIC, STORAGE, BuildContext, Fabric, StorageService
from twin.model.domains import Domains
from twin.model.jobqueue import JobQueue
from twin.model.workload.jobs import JOB, Interruption, Job
from twin.model.workload.pools import NodePool
from twin.scenario.pools import job_pool_nodes
from twin.scenario.storage import DataLoading
from twin.scenario.workload import Checkpoint, Elastic, StepModel


class WorkloadBase:
    """The workload's state (see the module docstring)."""

    def __init__(self, model: BuildContext) -> None:
        self.model = model
        self.engine = model.engine
        self.fabric: Fabric | None = model.optional(FABRIC)
        self.storage: StorageService | None = model.optional(STORAGE)
        self._env = model.engine.env  # _env._now: the clock, read directly on the hot path (Engine.now)
        self._set_load = model.cluster.set_load
        self._on_job_subs = model.engine.bus.handlers(JOB)  # the workload owns JOB: a live list (subscribers may come later)
        self.cluster = model.cluster
        sc = model.sc
        self.sc = sc
        spec = sc.workload
        assert spec is not None
        self.spec = spec
        self.min_pause_s = self.spec.min_load_pause_s
        self.gpn = sc.cluster.node.gpus
        n = self.cluster.n_nodes
        self.owner = np.full(n, -1, dtype=np.int64)  # job id per node, -1 free
        self.spare_target = self.spec.scheduler.hot_spares
        self.jobs: list[Job] = []
        self._by_id: dict[int, Job] = {}
        self.allocated: dict[int, Job] = {}
        """Jobs holding nodes (running, checkpointing or restarting), by id."""
        self.queue: JobQueue[Job] = JobQueue()
        """Queued jobs, indexed by priority and size; ``queue.ops`` counts the scheduler's steps."""
        self.writers = 0
        self.readers = 0
        self.interruptions: list[Interruption] = []
        """Every interruption of a job, in time order (the rows of the ``jobs`` table's interruption records)."""
        self._jid = 0
        # starvation advisories: the head job with no bound on its start, since when; the advisory timer
        self._unreserved: Job | None = None
        self._unreserved_since = 0.0
        self._starve_timer = self.engine.timer(self._starving)
        self.advisories: list[tuple[Any, ...]] = []
        self._shrunk: dict[int, Job] = {}
        """Elastic jobs holding fewer than all their replicas, by id (they grow back first)."""
        self.elastic_events: list[list[Any]] = []
        self._has_elastic = False
        # the last `hot_spares` nodes start as the spare pool; later, returning nodes top it up first
        self.free = NodePool(n, range(n - self.spare_target))
        self.spares = NodePool(n, range(n - self.spare_target, n))
        self.domains = Domains(sc, self.engine.bus) if sc.cluster.nvlink is not None else None
        """The NVLink domains as scheduling units (None: each node is its own domain)."""
        self._pool_excl: dict[str, np.ndarray | None] = {}
        """The nodes outside each job pool named so far (True), by name (None: the whole hall)."""

    def _excl_of(self, pool: str | None) -> np.ndarray | None:
        """The nodes outside the node pool ``pool`` (a job's ``pool``), True; None for any node or a pool that is
        the whole hall (the unrestricted path)."""
        if pool is None:
            return None
        if pool not in self._pool_excl:
            a, b = job_pool_nodes(self.sc.cluster, pool)
            n = self.cluster.n_nodes
            mask = None
            if b - a < n:
                mask = np.ones(n, dtype=bool)
                mask[a:b] = False
                mask.flags.writeable = False
            self._pool_excl[pool] = mask
        return self._pool_excl[pool]

    # ---- steps of the layers above (defined by the layer named) ------------------------------------
    def _schedule(self) -> None:
        """Start queued jobs that may start (:mod:`twin.model.workload.scheduler`)."""
        raise NotImplementedError

    def _complete(self, job: Job) -> None:
        """The job finished (:mod:`twin.model.workload.scheduler`)."""
        raise NotImplementedError

    def _starving(self) -> None:
        """The starvation advisory falls due (:mod:`twin.model.workload.scheduler`)."""
        raise NotImplementedError

    def _grow(self) -> None:
        """Elastic jobs below full size grow back (:mod:`twin.model.workload.elastic`)."""
        raise NotImplementedError

    def _elastic_event(self, job: Job, kind: str, cause: DownCause | None, before: int) -> None:
        """A row of the ``elastic`` table (:mod:`twin.model.workload.elastic`)."""
        raise NotImplementedError

    def _new_job(self, name: str, gpus: int, work_h: float, submit_h: float, priority: int,
                 ckpt: Checkpoint, step: StepModel | None = None, repeat: bool = False,
                 elastic: Elastic | None = None, data: DataLoading | None = None,
                 data_gbs: float | None = None, pool: str | None = None) -> Job:
        """A new job record (:mod:`twin.model.workload.sources`)."""
        raise NotImplementedError
