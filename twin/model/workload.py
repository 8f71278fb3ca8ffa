"""Training workload: job queue, scheduler, checkpoint/restart, hot spares (model.md §7, §8).

Progress is piecewise linear between events: a running job advances at its progress rate
(ideal step time / actual step time, model.md §6), recomputed whenever the bus says a node's
speed or the fabric changed. Each job has at most one pending call on its timer (the next
checkpoint, its completion, the end of a checkpoint pause or of a restart; ``engine.timer``), re-armed
or cancelled when its rate or state changes, and one on its saver (the end of an async write).

Definitions (all work in *ideal hours*: wall hours at full speed on all the job's GPUs):
- a sync checkpoint starts after every ``interval_h`` of progress since the last checkpoint or
  restart, pauses the job for the write time, and saves the progress reached when it started;
  an async one stalls the job for ``async_fraction`` of the write time and completes (saves) when
  the write ends. A job with checkpointing writes a final checkpoint before it completes.
- an interruption (allocated node down or cut, transient fault, planned drain) loses the progress
  since the last completed checkpoint, then pays detection + reschedule + checkpoint read +
  warm-up before progress resumes; an interruption during a restart starts the restart over.
- a job keeps its completed checkpoints by its retention policy (``checkpoint.retention``: the rolling
  set and persistent ones, twin.model.checkpoints.History); a silent-data-corruption rollback
  (:meth:`Workload.rollback`) returns to the newest kept one captured before the corruption, unless a
  restart since already discarded the corrupt state (:meth:`Workload.discarded`, the job's Lineage).
- an elastic job (``elastic``) holds whole replicas of ``replica_nodes`` nodes; with r of its R
  replicas it progresses at r/R of its rate on those nodes; losing nodes it swaps in free ones or
  shrinks to the whole replicas left (≥ ``min_replicas``, else it is interrupted as a rigid job),
  keeping its progress, grows back when nodes are free (before queued jobs start, as a rigid job's
  replacement does), and pauses ``reconfigure_h`` at each change; its hours (run, checkpoint,
  restart, reconfigure) count the share of its nodes it holds, so that hours × GPUs are GPU-hours.
- storage bandwidth is shared: a write (read) gets an equal share of the write (read) bandwidth
  among the writes (reads) in progress when it starts (no re-sharing mid-transfer; assumption); the
  bandwidths are the storage service's (twin.model.storage: the servers up), which also shares what the
  transfers leave among the running jobs' training-data reads: a job whose share is below its demand
  progresses at share / demand (a data stall). During a storage outage every job that reads or writes
  stops: a data-reading job stalls, a checkpoint write or read under way fails and one falling due waits;
  each is retried (a write from its start, a restart over) when the storage returns.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from twin import rng
from twin.model.component import FABRIC, JOBS, STORAGE, BuildContext, Component, Fabric, ResultsSoFar, StorageService
from twin.model.checkpoints import History, Lineage
from twin.model.domains import Domains
from twin.model.engine import Timer, Topic
from twin.model.jobqueue import ANY, JobQueue
from twin.physics import parallel as par
from twin.physics.steptime import progress_rate, ring_allreduce_s
from twin.physics.storage import data_limited_rate
from twin.scenario.storage import DataLoading
from twin.scenario.workload import Checkpoint, Elastic, StepModel

if TYPE_CHECKING:  # pragma: no cover
    from twin.scenario.schema import Scenario

@functools.lru_cache(maxsize=65536)
def job_rate(t_compute_s: float, overlap: float, speed: float, grad_gb: float = 0.0, hop_latency_s: float = 0.0,
             n: int = 1, bw_ideal_gbps: float = 0.0, bw_now_gbps: float = 0.0) -> float:
    """Progress rate of a synchronous job (model.md §6): ideal / actual step time, with the ring
    all-reduce of ``grad_gb`` GB over ``n`` nodes at the ideal and current per-node bandwidth
    (Gbit/s) and the slowest GPU's ``speed``; without gradient exchange (one node, no fabric)
    compute time alone. A pure function of its arguments, cached: the event loop asks the same
    few questions again and again (every start and restart of a job of a given size)."""
    if n <= 1 or grad_gb <= 0:
        return float(progress_rate(t_compute_s, 0.0, 0.0, overlap, speed))
    grad = grad_gb * 1e9
    t_ideal = ring_allreduce_s(n, grad, bw_ideal_gbps, hop_latency_s)
    t_now = ring_allreduce_s(n, grad, bw_now_gbps, hop_latency_s) if bw_now_gbps > 0 else math.inf
    if not math.isfinite(t_now):
        return 0.0
    return float(progress_rate(t_compute_s, t_ideal, t_now, overlap, speed))


@functools.lru_cache(maxsize=4096)
def parallel_breakdown(st: StepModel, speed: float, nic_gbit_s: float, nic_share: float, domain_gpus: int = 0,
                       nvlink_share: float = 1.0) -> par.StepBreakdown:
    """Step time of a job with a model and a layout (twin/physics/parallel.py), by component, at the
    slowest GPU's ``speed``, ``nic_gbit_s`` per GPU and the fabric's healthy share ``nic_share``, its
    ranks in NVLink blocks of ``domain_gpus`` (0: the layout's domain) at ``nvlink_share`` of the
    NVLink bandwidth (:mod:`twin.model.domains`). Cached: evaluated only when one of these inputs of the
    job changes."""
    return st.breakdown(nic_gbit_s, speed, nic_share, domain_gpus, nvlink_share)


def parallel_rate(st: StepModel, speed: float, nic_gbit_s: float, nic_share: float, domain_gpus: int = 0,
                  nvlink_share: float = 1.0) -> float:
    """Progress rate of a layout job: ideal step (full speed, healthy fabric and NVLink, the layout's
    domain) / actual step; 0 when the step cannot complete (speed 0, fabric cut)."""
    actual = parallel_breakdown(st, speed, nic_gbit_s, nic_share, domain_gpus, nvlink_share).total_s
    if not math.isfinite(actual):
        return 0.0
    return parallel_breakdown(st, 1.0, nic_gbit_s, 1.0).total_s / actual


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
        self.count -= int(np.count_nonzero(m[nodes]))
        m[nodes] = False

    def add_many(self, nodes: np.ndarray) -> None:
        """Add every node of ``nodes`` (an index array without repeats)."""
        m = self.mask
        self.count += len(nodes) - int(np.count_nonzero(m[nodes]))
        m[nodes] = True

    def __contains__(self, node: int) -> bool:
        return bool(self.mask[node])

    def __len__(self) -> int:
        return self.count

    def nodes(self, exclude: np.ndarray | None = None) -> np.ndarray:
        """Members in index order, without those where ``exclude`` is true."""
        m = self.mask if exclude is None else self.mask & ~exclude
        return np.flatnonzero(m)


QUEUED, RESTARTING, RUNNING, CKPT, DONE = "queued", "restarting", "running", "checkpointing", "done"
RECONF = "reconfiguring"  # an elastic job changing its replicas

_NO_NODES = np.zeros(0, dtype=np.int64)
_NO_NODES.flags.writeable = False  # shared by every job without nodes (a job's array is replaced, never changed)

SUBMIT_PRIORITY = 0.5
"""SimPy priority of a trace row's submission after the first: between URGENT (0) and NORMAL (1), so
that it comes, as if it had been scheduled when the model was built, before every ordinary event
scheduled later for the same instant (the rows are created one at a time as they are submitted)."""


@dataclass(slots=True)
class Job:
    jid: int
    name: str
    gpus: int
    nodes_needed: int
    work_h: float
    submit_h: float
    priority: int
    ckpt: Checkpoint
    step: StepModel
    repeat: bool = False
    state: str = QUEUED
    nodes: np.ndarray = field(default_factory=lambda: _NO_NODES)
    progress_h: float = 0.0
    saved_h: float = 0.0  # progress at the last completed checkpoint
    since_restart_h: float = 0.0  # progress since the last checkpoint start or restart
    rate: float = 0.0
    last_t: float = 0.0
    timer: Timer | None = None  # its one pending call (made at its first start: _timer_of)
    first_start_h: float = math.nan
    end_h: float = math.nan
    started_once: bool = False
    pending_save_h: float = math.nan  # async: progress that the in-flight write will save
    ckpt_waiting: bool = False  # a checkpoint fell due while the previous async write was in flight
    saver: Timer | None = None  # the end of its latest async write (a new write supersedes it)
    restart_until: float = 0.0  # end of the restart under way (h)
    read_until: float = 0.0  # end of the checkpoint read of the restart under way (h)
    last_interrupt_h: float = math.nan
    writing: bool = False  # holds a share of the storage write bandwidth
    reading: bool = False  # holds a share of the storage read bandwidth
    # accounting (hours; multiply by gpus for GPU-hours)
    run_h: float = 0.0
    ckpt_h: float = 0.0
    restart_h: float = 0.0
    lost_h: float = 0.0
    made_h: float = 0.0  # all progress ever made (kept + lost)
    # the running time lost to a rate below 1, split by the sequential rule (see Workload._rates):
    # thermal speed first, then fail-slow parts' (health's degraded parts), then the power chain's, then the fabric
    slow_thermal_h: float = 0.0
    slow_failslow_h: float = 0.0
    slow_power_h: float = 0.0
    slow_fabric_h: float = 0.0
    rate_thermal: float = 1.0  # rate at the thermal speed alone, healthy fabric
    rate_failslow: float = 1.0  # rate at the thermal and fail-slow speeds, healthy fabric
    rate_speed: float = 1.0  # rate at the node speed (thermal and power), healthy fabric
    # training-data reads (twin.model.storage): demand at full speed after the node caches, GB/s (0: none)
    data_gbs: float = 0.0
    rate_fabric: float = 1.0  # rate before the data stall (with data_gbs only)
    slow_data_h: float = 0.0  # running time lost to a data share below the demand
    slow_outage_h: float = 0.0  # running time lost to a storage outage (a data-reading job stalled)
    rate_in_outage: bool = False  # its rate was set during a storage outage (its stall is the outage's)
    io_blocked: bool = False  # stopped by a storage outage (a checkpoint write or a restart's read waits)
    blocked_final: bool = False  # the blocked checkpoint is the job's final one
    blocked_h: float = 0.0  # hours stopped by storage outages while checkpointing or restarting
    async_retry: bool = False  # an async write failed in an outage: written again when the storage returns
    storage_stops: int = 0  # storage outages that stopped the job
    # NVLink domains (twin.model.domains): nodes per placement unit of its tp groups; the running time lost
    # to degraded NVLink (switch trays down; split after the power chain's, before the fabric's)
    unit: int = 1
    slow_nvlink_h: float = 0.0
    slow_place_h: float = 0.0  # lost to a placement whose NVLink blocks are smaller than the layout's domain
    rate_nvlink: float = 1.0  # rate at the node speed and the NVLink share, healthy fabric
    rate_place: float = 1.0  # rate on its placement, full speed, healthy fabric and NVLink
    # a layout job's step (twin.physics.parallel) now, and its components' shares integrated over its
    # running hours (the run-time limiter), with the step time so integrated (s·h)
    bd: par.StepBreakdown | None = None
    bd_vec: np.ndarray | None = None  # its components' shares of the step (STEP_COMPONENTS), None if infinite
    bd_nic: float = 0.0  # the NIC Gbit/s per GPU of its ideal step
    bd_acc: np.ndarray | None = None
    step_acc: float = 0.0
    wait_h: float = 0.0
    queued_at: float = 0.0
    interruptions: int = 0
    planned_interruptions: int = 0
    checkpoints: int = 0
    # the queue index (twin.model.jobqueue): slot in its bucket, work left when queued, queued or not
    qslot: int = -1
    qlb: float = 0.0
    queued: bool = False
    # starvation: hours as the head of the queue with no bound on its start; advisory issued
    unreserved_h: float = 0.0
    advised: bool = False
    # elastic data parallelism (rn = 0: a rigid job): replica nodes, fewest replicas, pause per change
    rn: int = 0
    min_rep: int = 0
    reconf_pause_h: float = 0.0
    reconfig_h: float = 0.0  # hours paused for reconfiguration (share of its nodes held)
    reduced_h: float = 0.0  # wall hours running below full size
    kept_h: float = 0.0  # progress made while below full size (ideal hours)
    last_reshape_h: float = math.nan
    # for rollbacks (silent data corruption, twin.model.health; twin.model.checkpoints): the completed
    # checkpoints kept by the retention policy (made at the first), and the spans of wall time its running
    # state carries (None: one span since time 0, until its first restart)
    capture_h: float = 0.0  # capture time of the checkpoint being written
    history: History | None = None
    lineage: Lineage | None = None


STEP_COMPONENTS = ("compute", "tp", "pp", "bubble", "dp", "compress", "throttle")
"""The components of a layout job's step (twin.physics.parallel.StepBreakdown, without ``_s``)."""
STEP_COLUMNS = ["job", "name", "gpus", "tp", "pp", "dp", "ideal_step_s", "mean_step_s", "run_h",
                *(f"share_{c}" for c in STEP_COMPONENTS), "limiter"]

class Workload(Component):
    """The job queue and scheduler, subscribed to the engine's bus."""

    name = "workload"
    uses = (FABRIC, STORAGE)
    provides = (JOBS,)

    @classmethod
    def wanted(cls, sc: Scenario) -> bool:
        return sc.workload is not None

    @classmethod
    def build(cls, ctx: BuildContext) -> Workload:
        return cls(ctx)

    def __init__(self, model: BuildContext) -> None:
        self.model = model
        self.engine = model.engine
        self.fabric: Fabric | None = model.optional(FABRIC)
        self.storage: StorageService | None = model.optional(STORAGE)
        self._env = model.engine.env  # _env._now: the clock, read directly on the hot path (Engine.now)
        self._call_at = model.engine.call_at
        self._node_util = model.engine.node_util
        self._on_load_subs = model.engine.bus.handlers(Topic.NODE_LOAD)  # live lists (subscribers may come later)
        self._on_job_subs = model.engine.bus.handlers(Topic.JOB)
        self.cluster = model.cluster
        sc = model.sc
        self.sc = sc
        self.spec = sc.workload
        assert self.spec is not None
        self.min_pause_s = self.spec.min_load_pause_s
        self.gpn = sc.cluster.node.gpus
        n = self.cluster.n_nodes
        self.owner = np.full(n, -1, dtype=np.int64)  # job id per node, -1 free
        self.spare_target = self.spec.scheduler.hot_spares
        self.jobs: list[Job] = []
        self._by_id: dict[int, Job] = {}
        self.allocated: dict[int, Job] = {}
        """Jobs holding nodes (running, checkpointing or restarting), by id."""
        self.queue = JobQueue()
        """Queued jobs, indexed by priority and size; ``queue.ops`` counts the scheduler's steps."""
        self.writers = 0
        self.readers = 0
        self.interruptions: list[tuple[Any, ...]] = []
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

    # ---- sources ---------------------------------------------------------------------------
    def _new_job(self, name: str, gpus: int, work_h: float, submit_h: float, priority: int,
                 ckpt: Checkpoint, step: StepModel | None = None, repeat: bool = False,
                 elastic: Elastic | None = None, data: DataLoading | None = None) -> Job:
        self._jid += 1
        job = Job(self._jid, name, gpus, -(-gpus // self.gpn), work_h, submit_h, priority, ckpt,
                  step or StepModel(), repeat)
        if data is not None and data.demand_mb_per_s_per_gpu > 0 and self.storage is not None:
            hit = self.storage.data_cache_hit(job.nodes_needed, data.dataset_gb)
            job.data_gbs = data.demand_mb_per_s_per_gpu * gpus / 1000.0 * (1.0 - hit)
        if elastic is not None:
            rn = elastic.replica_nodes
            assert rn is not None  # derived by the schema
            if job.nodes_needed % rn == 0 and job.nodes_needed // rn >= max(2, elastic.min_replicas):
                job.rn, job.min_rep, job.reconf_pause_h = rn, elastic.min_replicas, elastic.reconfigure_h
                self._has_elastic = True
        if self.domains is not None and job.step.layout is not None:
            job.unit = self.domains.unit(job.step.layout.tp)
        return job

    def _build_sources(self) -> None:
        spec = self.spec
        H = self.engine.horizon_h
        pending: list[Job] = []
        for j in spec.jobs:
            pending.append(self._new_job(j.name, j.gpus, j.work_h, j.submit_h, j.priority, j.checkpoint, j.step,
                                         j.repeat, j.elastic, j.data))
        if spec.synthetic is not None:
            pending.extend(self._synthetic_jobs(H))
        for job in pending:
            if job.submit_h < H:
                self._call_at(job.submit_h, lambda j=job: self._submit(j))
        if spec.trace is not None:
            self._start_trace(H)

    def _synthetic_jobs(self, H: float) -> list[Job]:
        syn = self.spec.synthetic
        assert syn is not None
        streams = self.engine.streams
        d_arr = np.array([rng.path_digest("workload.synthetic#arrival")], dtype=np.uint64)
        d_gpu = np.array([rng.path_digest("workload.synthetic#gpus")], dtype=np.uint64)
        d_work = np.array([rng.path_digest("workload.synthetic#work")], dtype=np.uint64)
        mean_gap = 1.0 / syn.arrival_rate_per_h
        expected = int((H - syn.start_h) * syn.arrival_rate_per_h * 1.2) + 64
        times: list[float] = []
        k0 = 0
        t = syn.start_h
        while t < H:
            ks = np.arange(k0, k0 + expected)
            gaps = rng.exponential_from_u(streams.uniforms(d_arr, ks), mean_gap)
            for g in gaps:
                t += float(g)
                if t >= H:
                    break
                times.append(t)
            k0 += expected
        n = len(times)
        ks = np.arange(n)
        w = np.asarray(syn.gpus.weights if syn.gpus.weights is not None else [1.0] * len(syn.gpus.values), float)
        cdf = np.cumsum(w) / w.sum()
        choice = np.searchsorted(cdf, streams.uniforms(d_gpu, ks), side="right")
        choice = np.minimum(choice, len(cdf) - 1)
        work = syn.work.sample(streams.uniforms(d_work, ks))
        return [
            self._new_job(f"syn{i:05d}", int(syn.gpus.values[choice[i]]), max(float(work[i]), 1e-6), times[i],
                          syn.priority, syn.checkpoint, elastic=syn.elastic, data=syn.data)
            for i in range(n)
        ]

    def _start_trace(self, H: float) -> None:
        """Submit the trace's rows one at a time, each job created when it is submitted (a job trace
        can have millions of rows). Row ``i`` (1-based) is job ``base + i``, as if all rows had been
        created now; rows submit in time order, file order among equal times, after the listed and
        synthetic jobs of the same instant."""
        tr = self.spec.trace
        assert tr is not None
        rows = tr.rows()
        base = self._jid
        self._jid += len(rows)  # later jobs (repeats) are numbered after every row
        order = rows.order()
        order = order[rows.submit_h[order] < H]
        if not len(order):
            return
        sub, gpus, dur, prio = rows.submit_h, rows.gpus, rows.duration_h, rows.priority
        ck = tr.checkpoint
        gpn = self.gpn
        step = StepModel()
        it = iter(order.tolist())
        call = self.engine.call_at

        def submit(i: int) -> None:
            g = int(gpus[i])
            self._submit(Job(base + i + 1, rows.name(i), g, -(-g // gpn), float(dur[i]), float(sub[i]),
                             int(prio[i]), ck, step))
            nxt = next(it, None)
            if nxt is not None:
                call(float(sub[nxt]), lambda: submit(nxt), SUBMIT_PRIORITY)

        first = next(it)
        self._call_at(float(sub[first]), lambda: submit(first))

    def _schedulable(self) -> int:
        return self.cluster.n_nodes - self.spare_target

    # ---- node pools ------------------------------------------------------------------------
    def _usable(self, node: int) -> bool:
        return self.cluster.is_up(node) and self.owner[node] < 0

    def _node_available(self, node: int) -> None:
        """A node became free and up: top up the hot-spare pool first, else the general pool."""
        if len(self.spares) < self.spare_target:
            self.spares.add(node)
        else:
            self.free.add(node)

    def _remove_from_pools(self, node: int) -> None:
        self.spares.discard(node)
        self.free.discard(node)

    def _free_count(self, multi_node: bool) -> np.ndarray:
        """Free nodes a job may use: multi-node jobs avoid nodes cut off a rail."""
        return self.free.nodes(self._cut_mask(multi_node))

    def _spares_for(self, job: Job) -> np.ndarray:
        """Hot spares a queued job may start on: a requeued job (it lost a node with no replacement) may
        restart on them (they are kept for its kind; idle spares must not hold it back until the spare
        pool is full again, later returns top it up); a new job may not."""
        if not job.started_once or not len(self.spares):
            return np.zeros(0, dtype=np.int64)
        return self.spares.nodes(self._cut_mask(job.nodes_needed > 1))

    def _cut_mask(self, multi_node: bool) -> np.ndarray | None:
        """Nodes a job may not use because they are cut off a rail (multi-node jobs only; None while
        no node is cut)."""
        cl = self.cluster
        return cl.cut_count > 0 if multi_node and cl.n_cut else None

    # ---- progress bookkeeping -------------------------------------------------------------
    def _advance(self, job: Job) -> None:
        now = self._env._now
        dt = now - job.last_t
        if dt > 0:
            if job.rn:
                self._advance_elastic(job, dt)
            elif job.state == RUNNING:
                r = job.rate
                p = r * dt
                job.progress_h += p
                job.made_h += p
                job.since_restart_h += p
                job.run_h += dt
                if r != 1.0:
                    job.slow_place_h += (1.0 - job.rate_place) * dt
                    job.slow_thermal_h += (job.rate_place - job.rate_thermal) * dt
                    job.slow_failslow_h += (job.rate_thermal - job.rate_failslow) * dt
                    job.slow_power_h += (job.rate_failslow - job.rate_speed) * dt
                    job.slow_nvlink_h += (job.rate_speed - job.rate_nvlink) * dt
                    if job.data_gbs:  # the data stall comes last in the sequential rule
                        job.slow_fabric_h += (job.rate_nvlink - job.rate_fabric) * dt
                        self._slow_data(job, (job.rate_fabric - r) * dt)
                    else:
                        job.slow_fabric_h += (job.rate_nvlink - r) * dt
                bd = job.bd
                if bd is not None:
                    self._integrate_step(job, bd, dt)
            elif job.io_blocked:
                job.blocked_h += dt
            elif job.state == CKPT:
                job.ckpt_h += dt
            elif job.state == RESTARTING:
                job.restart_h += dt
        job.last_t = now

    def _slow_data(self, job: Job, lost_h: float) -> None:
        """Running hours ``lost_h`` below the rate before the data stall: a storage outage's, or a data stall."""
        if job.rate_in_outage:
            job.slow_outage_h += lost_h
        else:
            job.slow_data_h += lost_h

    def _advance_elastic(self, job: Job, dt: float) -> None:
        """:meth:`_advance` of an elastic job: its hours count the share of its nodes it holds."""
        held = len(job.nodes) / job.nodes_needed
        if job.state == RUNNING:
            p = job.rate * dt
            job.progress_h += p
            job.made_h += p
            job.since_restart_h += p
            job.run_h += dt * held
            r = job.rate / held if held > 0 else 1.0  # the rate on the nodes it holds (whole replicas)
            if r != 1.0:  # the slowdown split of _advance, on the share of its nodes it holds
                job.slow_place_h += held * (1.0 - job.rate_place) * dt
                job.slow_thermal_h += held * (job.rate_place - job.rate_thermal) * dt
                job.slow_failslow_h += held * (job.rate_thermal - job.rate_failslow) * dt
                job.slow_power_h += held * (job.rate_failslow - job.rate_speed) * dt
                job.slow_nvlink_h += held * (job.rate_speed - job.rate_nvlink) * dt
                if job.data_gbs:
                    rf = job.rate_fabric / held if held > 0 else 1.0
                    job.slow_fabric_h += held * (job.rate_nvlink - rf) * dt
                    self._slow_data(job, held * (rf - r) * dt)
                else:
                    job.slow_fabric_h += held * (job.rate_nvlink - r) * dt
            if job.bd is not None:
                self._integrate_step(job, job.bd, dt * held)
            if held < 1.0:
                job.reduced_h += dt
                job.kept_h += p
        elif job.io_blocked:
            job.blocked_h += dt * held
        elif job.state == CKPT:
            job.ckpt_h += dt * held
        elif job.state == RESTARTING:
            job.restart_h += dt * held
        elif job.state == RECONF:
            job.reconfig_h += dt * held

    @staticmethod
    def _integrate_step(job: Job, bd: par.StepBreakdown, dt: float) -> None:
        """Add ``dt`` running hours of the step ``bd`` to the job's run-time limiter: each component's
        share of the step and the step time, integrated over its running hours (a step that cannot
        complete, at speed 0 or on a cut fabric, adds nothing)."""
        acc = job.bd_acc
        if acc is None:
            acc = job.bd_acc = np.zeros(len(STEP_COMPONENTS))
        vec = job.bd_vec
        if vec is not None:
            acc += dt * vec
            job.step_acc += dt * bd.total_s

    def _compute_rate(self, job: Job) -> float:
        """Progress rate of the job on its nodes; an elastic job's times its replicas' share."""
        rate = self._rate_on_nodes(job)
        if job.rn and len(job.nodes) < job.nodes_needed:
            rate *= (len(job.nodes) // job.rn) / (job.nodes_needed // job.rn)
        if job.data_gbs:
            job.rate_fabric = rate
            if job.state == RUNNING:
                return self._data_rate(job)
        return rate

    def _data_rate(self, job: Job) -> float:
        """The running job's rate with its data share: its demand at its rate before the stall
        (``rate_fabric``) registered with the storage, ``min(rate, share / demand)``."""
        assert self.storage is not None  # data_gbs is set only with the storage service
        d = job.data_gbs
        down = not self.storage.available
        if down and not job.rate_in_outage:  # an outage stops it (running, or starting to run, in one)
            job.storage_stops += 1
        job.rate_in_outage = down
        share = self.storage.data_share(job.jid, d * job.rate_fabric)
        return data_limited_rate(job.rate_fabric, d, share)

    def _rate_on_nodes(self, job: Job) -> float:
        """The job's progress rate on its nodes now (ideal step time / actual), also setting
        ``job.rate_thermal``, ``job.rate_failslow`` and ``job.rate_speed``: the same step-time model at the
        thermal speed alone, at the thermal and fail-slow (``degraded`` parts, twin.model.health) speeds, and
        at the node speed, all with a healthy fabric. The slowdown is split in that order (the sequential
        rule): thermal 1 − r_thermal, fail-slow r_thermal − r_failslow, power r_failslow − r_speed, fabric
        r_speed − r; they add up to 1 − r."""
        nodes = job.nodes
        n = len(nodes)
        eng = self.engine
        speed = eng.min_speed(nodes) if n else 1.0
        sp_t = sp_f = 1.0
        if speed < 1.0:
            caps = eng.speed_caps
            th = caps.get("thermal")
            sp_t = float(th[nodes].min()) if th is not None else 1.0
            dg = caps.get("degraded")
            sp_f = min(sp_t, float(dg[nodes].min())) if dg is not None else sp_t
        st = job.step
        fabric = self.fabric
        if st.layout is not None:
            if fabric is None or n <= 1:
                nic, share = st.layout.nic_gbit_s, 1.0
            else:
                bw_ideal, bw_now = fabric.job_bandwidth_gbps(nodes)
                nic, share = bw_ideal / self.gpn, bw_now / bw_ideal
            dom, blk, nvs = self.domains, 0, 1.0
            if dom is not None and n:  # its ranks' NVLink blocks and the NVLink share of its domains
                blk, nvs = dom.block_gpus(nodes, st.layout.nvlink_domain_gpus), dom.nvlink_share(nodes)
            bd = parallel_breakdown(st, speed, nic, share, blk, nvs)
            if bd is not job.bd:
                job.bd, job.bd_nic, job.bd_vec = bd, nic, _step_shares(bd)
            r = parallel_rate(st, speed, nic, share, blk, nvs)
            r_nv = r if share == 1.0 else parallel_rate(st, speed, nic, 1.0, blk, nvs)
            r_sp = r_nv if nvs == 1.0 else parallel_rate(st, speed, nic, 1.0, blk, 1.0)
            r_t = r_sp if sp_t == speed else parallel_rate(st, sp_t, nic, 1.0, blk, 1.0)
            r_f = r_sp if sp_f == speed else r_t if sp_f == sp_t else parallel_rate(st, sp_f, nic, 1.0, blk, 1.0)
            job.rate_nvlink = r_nv
            job.rate_place = r_t if sp_t == 1.0 else parallel_rate(st, 1.0, nic, 1.0, blk, 1.0)
        elif fabric is None or n <= 1 or st.grad_gb <= 0:
            r = r_sp = job_rate(st.t_compute_s, st.overlap, speed)
            r_t = r_sp if sp_t == speed else job_rate(st.t_compute_s, st.overlap, sp_t)
            r_f = r_sp if sp_f == speed else r_t if sp_f == sp_t else job_rate(st.t_compute_s, st.overlap, sp_f)
            job.rate_nvlink = r_sp
        else:
            bw_ideal, bw_now = fabric.job_bandwidth_gbps(nodes)
            r = job_rate(st.t_compute_s, st.overlap, speed, st.grad_gb, st.hop_latency_s, n, bw_ideal, bw_now)
            r_sp = r if bw_now == bw_ideal else job_rate(st.t_compute_s, st.overlap, speed, st.grad_gb,
                                                         st.hop_latency_s, n, bw_ideal, bw_ideal)
            r_t = r_sp if sp_t == speed else job_rate(st.t_compute_s, st.overlap, sp_t, st.grad_gb, st.hop_latency_s,
                                                      n, bw_ideal, bw_ideal)
            r_f = r_sp if sp_f == speed else r_t if sp_f == sp_t else job_rate(
                st.t_compute_s, st.overlap, sp_f, st.grad_gb, st.hop_latency_s, n, bw_ideal, bw_ideal)
            job.rate_nvlink = r_sp
        job.rate_thermal = r_t
        job.rate_failslow = r_f
        job.rate_speed = r_sp
        return r

    def _set_util(self, job: Job, util: float) -> None:
        """Set the utilisation of the job's nodes; publish NODE_LOAD (every node of the job) when the load
        of any of them changes, then JOB (a job's state change, for observers such as the forecast's
        accounting) in any case. A publication that would change no node's load is not made: no
        subscriber's state depends on it (the IT power and GPU temperatures follow the same load)."""
        nodes = job.nodes
        if job.data_gbs:  # a running job reads its data (its share may have changed), any other does not
            assert self.storage is not None
            if util > 0.0 and job.state == RUNNING:
                job.rate = self._data_rate(job)
            else:
                self.storage.data_share(job.jid, 0.0)
        if len(nodes):
            nu = self._node_util
            if np.count_nonzero(nu[nodes] != util):
                nu[nodes] = util
                for fn in self._on_load_subs:  # = bus.publish(Topic.NODE_LOAD, nodes, util)
                    fn(nodes, util)
            for fn in self._on_job_subs:  # = bus.publish(Topic.JOB, job)
                fn(job)

    def _pause(self, job: Job, pause_h: float) -> None:
        """The job stops for a checkpoint write or stall of ``pause_h`` hours: its nodes idle, unless the
        pause is shorter than ``workload.min_load_pause_s`` (then the facility models keep seeing them
        busy: only the job's data reading and JOB observers see it; the job itself makes no progress
        either way)."""
        if pause_h * 3600.0 < self.min_pause_s:
            self._set_util(job, 1.0)
        else:
            self._set_util(job, 0.0)

    # ---- timers ---------------------------------------------------------------------------
    def _arm(self, job: Job) -> None:
        """(Re)schedule the job's next checkpoint start or completion at its current rate."""
        timer = job.timer or self._timer_of(job)
        if job.state != RUNNING or job.rate <= 0:
            timer.cancel()
            return
        to_done = job.work_h - job.progress_h
        iv = job.ckpt.interval_h
        to_ckpt = (iv - job.since_restart_h) if iv is not None and not job.ckpt_waiting else math.inf
        # a checkpointing job also writes a final checkpoint at completion
        target = min(to_done, to_ckpt)
        t = self._env._now + max(target, 0.0) / job.rate
        if t >= self.engine.horizon_h:
            timer.cancel()
            return
        timer.set(t, lambda: self._due(job))

    def _timer_of(self, job: Job) -> Timer:
        """The job's timer (made when first needed: a trace brings millions of jobs that never start)."""
        timer = job.timer
        if timer is None:
            timer = job.timer = self.engine.timer()
        return timer

    def _due(self, job: Job) -> None:
        """The job reached its next checkpoint or its end (armed by :meth:`_arm`)."""
        if job.state != RUNNING:
            return
        self._advance(job)
        eps = 1e-9 * max(1.0, job.work_h)
        final = job.progress_h >= job.work_h - eps
        if final:
            job.progress_h = job.work_h
        if job.ckpt.interval_h is not None and (final or job.since_restart_h >= job.ckpt.interval_h - eps):
            if not final and not math.isnan(job.pending_save_h):
                # the previous async write is still in flight (storage shared by several writers): the
                # checkpoint starts when it completes (_async_saved), the job running on meanwhile
                job.ckpt_waiting = True
                self._arm(job)
                return
            self._start_checkpoint(job, final)
        elif final:
            self._complete(job)
        else:  # numerical slack: re-arm
            self._arm(job)

    def _write_time_h(self, ck: Checkpoint) -> float:
        st = self.storage
        return ck.write_time_h(self.spec.storage.write_gb_per_s if st is None else st.write_gb_per_s, self.writers)

    def _storage_down(self) -> bool:
        return self.storage is not None and not self.storage.available

    def _block(self, job: Job, final: bool) -> None:
        """Stop ``job`` until the storage returns (its checkpoint write, or its restart's read, cannot be
        made now): it holds its nodes idle; :meth:`_on_storage` retries."""
        self._end_io(job)
        if job.timer is not None:
            job.timer.cancel()
        if not job.io_blocked:
            job.storage_stops += 1
        job.io_blocked = True
        job.blocked_final = final
        self._set_util(job, 0.0)

    def _start_checkpoint(self, job: Job, final: bool, retry: bool = False) -> None:
        ck = job.ckpt
        job.ckpt_waiting = False
        if self._storage_down():  # the write cannot start: the job waits for the storage, then writes
            self._advance(job)
            job.state = CKPT
            if not final:
                job.pending_save_h = math.nan  # (an async write in flight failed too: _on_storage)
            if not retry:
                job.checkpoints += 1
            self._block(job, final)
            return
        self._end_io(job)
        self.writers += 1
        job.writing = True
        w = self._write_time_h(ck)
        job.since_restart_h = 0.0
        save = job.progress_h
        job.capture_h = self._env._now
        if not retry:
            job.checkpoints += 1
        if ck.mode == "sync" or final:
            job.pending_save_h = math.nan  # (the final write supersedes an async write still in flight)
            job.state = CKPT
            timer = job.timer or self._timer_of(job)
            if final:
                self._set_util(job, 0.0)  # (the pending call of _due is replaced by set: no cancel first)
            else:
                self._pause(job, w)
            timer.set(self._env._now + w, lambda: self._ckpt_done(job, save, final))
        else:
            stall = ck.async_fraction * w
            job.pending_save_h = save
            job.state = CKPT
            timer = job.timer or self._timer_of(job)
            self._pause(job, stall)
            timer.set(self._env._now + stall, lambda: self._async_resume(job))
            saver = job.saver
            if saver is None:
                saver = job.saver = self.engine.timer()
            saver.set(self._env._now + w, lambda: self._async_saved(job))
        if self.storage is not None:  # (after the job stopped reading data: its demand is gone first)
            self.storage.transfer_begins(job.jid, True, ck.size_gb / (w * 3600.0) if w > 0 else 0.0)

    def _end_io(self, job: Job) -> None:
        """Release the job's share of storage bandwidth (write finished or aborted)."""
        if job.writing:
            self.writers -= 1
            job.writing = False
            if self.storage is not None:
                self.storage.transfer_ends(job.jid, True)
        if job.reading:
            self.readers -= 1
            job.reading = False
            if self.storage is not None:
                self.storage.transfer_ends(job.jid, False)

    def _ckpt_done(self, job: Job, save: float, final: bool) -> None:
        if job.state != CKPT:
            return
        self._end_io(job)
        self._advance(job)
        job.saved_h = save
        _remember(job, save)
        if final:
            self._complete(job)
            return
        job.state = RUNNING
        self._set_util(job, 1.0)
        self._arm(job)
        if job.jid in self._shrunk:
            self._schedule()  # it may grow now

    def _async_resume(self, job: Job) -> None:
        if job.state != CKPT:
            return
        self._advance(job)
        job.state = RUNNING
        self._set_util(job, 1.0)
        self._arm(job)
        if job.jid in self._shrunk:
            self._schedule()  # it may grow now

    def _async_saved(self, job: Job) -> None:
        # the write completes if it is the job's latest (a later write re-arms the saver: a restarted job
        # writes the same progress again) and was not aborted since it started (an interruption or a
        # final write clears pending_save_h)
        if not math.isnan(job.pending_save_h) and job.state in (RUNNING, CKPT):
            self._end_io(job)
            job.saved_h = job.pending_save_h
            _remember(job, job.saved_h)
            job.pending_save_h = math.nan
            if job.ckpt_waiting:  # the checkpoint that fell due meanwhile starts now
                job.ckpt_waiting = False
                if job.state == RUNNING:
                    self._advance(job)
                    self._start_checkpoint(job, False)

    # ---- scheduling -----------------------------------------------------------------------
    def _submit(self, job: Job) -> None:
        job.queued_at = self._env._now
        self.jobs.append(job)
        self._by_id[job.jid] = job
        self._enqueue(job)
        self._schedule()

    def _enqueue(self, job: Job) -> None:
        self.queue.add(job, max(0.0, job.work_h - job.progress_h))

    def _pick_nodes(self, job: Job, k: int, pool: np.ndarray) -> list[int]:
        """Choose ``k`` nodes from the sorted array ``pool``. ``pack``: under the fewest leaves when
        a fabric exists, else in the fewest racks (fullest racks first); ``first_fit``: lowest ids."""
        if self.spec.scheduler.placement == "pack":
            fabric = self.fabric
            if fabric is not None:
                return fabric.pack(pool, k)
            racks = pool // self.cluster.nodes_per_rack
            per_rack = np.bincount(racks)
            order = np.lexsort((pool, racks, -per_rack[racks]))
            return pool[order[:k]].tolist()
        return pool[:k].tolist()

    def _schedule(self) -> None:
        """Start queued jobs in queue order while they fit; ``fifo`` stops at the first that does not
        fit, ``backfill`` (EASY) reserves for it (the head) the time enough running jobs end and
        starts later jobs that fit if they end by then or use only nodes spare at that time.

        A reservation uses only what a real scheduler knows: the nodes free now and running jobs'
        expected ends (their requested work at their current rate, with the checkpoint and restart
        pauses to come). A node that is down counts only if the repair system publishes when it
        returns, and it publishes no estimate (twin/model/repair.py), so down nodes never count.
        When the running jobs' ends cannot free enough nodes for the head, its start has no bound:
        it is reserved at infinity, and every later job that fits starts (backfill never stops the
        cluster for a job that cannot start); each pass looks again, so the head gets a finite
        reservation, and backfill its limit, as soon as nodes return. A head without a bound for
        ``scheduler.starvation_advisory_h`` hours in all is named by an advisory (both policies).

        The same decisions as a scan of the queue in order, found through the queue's index
        (:mod:`twin.model.jobqueue`): within a pass, starts only take nodes, so a job passed over
        stays passed over, and the next job the scan would start is the first in queue order that
        may start now. The index narrows by size and by work left (a lower bound on the backfill
        estimate); the estimate itself decides, and a job it refuses is hidden for the pass."""
        if self._shrunk:
            self._grow()
        q = self.queue
        if not q.n:
            return
        fifo = self.spec.scheduler.policy == "fifo"
        now = self._env._now
        big = self.cluster.n_nodes + 1
        shadow: float | None = None
        extra = 0
        limit_h = ANY
        hidden: list[Job] = []
        try:
            while q.n:
                q.ops += 1
                cut = self._cut_mask(True)
                f1, s1 = len(self.free), len(self.spares)
                fm = f1 if cut is None else len(self.free.nodes(cut))
                sm = s1 if cut is None or not s1 else len(self.spares.nodes(cut))
                if shadow is None:
                    job = q.first((big, big), (0, 0), big, ANY)  # the head
                    assert job is not None
                    i = 1 if job.nodes_needed > 1 else 0
                    fits = (f1, fm)[i] + ((s1, sm)[i] if job.started_once else 0)
                    if job.unit > 1 and job.nodes_needed <= fits:  # tp groups in whole units per domain
                        fits = self._domain_fit(job)
                    if job.nodes_needed <= fits:
                        self._start_from_pools(job)
                        continue
                    if job.rn and fits // job.rn >= job.min_rep:  # elastic: start on the whole replicas that fit
                        self._start_from_pools(job, fits // job.rn * job.rn)
                        continue
                    if fifo:
                        self._note_unreserved(job if self._unbounded(job) else None)
                        return
                    shadow, extra = self._reservation(job)
                    if shadow is None:  # no running job's end frees enough nodes: reserved at infinity
                        self._note_unreserved(job)
                        shadow, extra, limit_h = math.inf, 0, ANY
                        continue
                    self._note_unreserved(None)
                    # a job ending by the reservation has at most this much work left (with margin for rounding)
                    limit_h = (shadow - now) + 1e-9 * max(1.0, abs(shadow))
                    continue
                job = q.first((f1, fm), (s1, sm), extra, limit_h)
                if job is None:
                    return
                if job.unit > 1 and self._domain_fit(job) < job.nodes_needed:  # fits by count, not by domain
                    q.hide(job)
                    hidden.append(job)
                    continue
                # EASY backfill: must not delay the head's reservation
                est_end = now + self._remaining_h(job, 1.0)
                if est_end > shadow and job.nodes_needed > extra:
                    q.hide(job)
                    hidden.append(job)
                    continue
                if est_end > shadow:
                    extra -= job.nodes_needed
                self._start_from_pools(job)
        finally:
            for job in hidden:
                q.show(job)

    def _unbounded(self, head: Job) -> bool:
        """True when the running jobs' ends cannot free enough nodes for ``head`` (as
        :meth:`_reservation` returning None): the nodes it may use now plus all allocated nodes are
        fewer than it needs."""
        avail = len(self._free_count(head.nodes_needed > 1)) + len(self._spares_for(head))
        return avail + int(np.count_nonzero(self.owner >= 0)) < head.nodes_needed

    def _note_unreserved(self, job: Job | None) -> None:
        """``job`` is now the head of the queue with no bound on its start (None: no such head): end
        the previous head's spell, start this one's and arm the advisory for when its hours without a
        bound reach ``starvation_advisory_h``."""
        cur = self._unreserved
        if cur is job:
            return
        now = self._env._now
        if cur is not None:
            cur.unreserved_h += now - self._unreserved_since
            self._starve_timer.cancel()
        self._unreserved = job
        if job is not None:
            self._unreserved_since = now
            if not job.advised:
                self._starve_timer.set(now + max(0.0, self.spec.scheduler.starvation_advisory_h - job.unreserved_h))

    def _starving(self) -> None:
        """The advisory: the head job has had no bound on its start for the stated hours."""
        job = self._unreserved
        assert job is not None
        job.advised = True
        now = self._env._now
        hours = job.unreserved_h + now - self._unreserved_since
        usable = len(self._free_count(job.nodes_needed > 1)) + int(np.count_nonzero(self.owner >= 0))
        text = (f"job {job.name!r} (id {job.jid}, {job.nodes_needed} nodes) has waited {now - job.submit_h:.1f} h, "
                f"{hours:.1f} h of them with no reservation: only {usable} nodes are up and schedulable for it "
                f"(later jobs backfill meanwhile)")
        self.advisories.append((now, job.jid, job.name, job.nodes_needed, usable, now - job.submit_h, hours, text))

    def _start_from_pools(self, job: Job, k: int = 0) -> None:
        """Start ``job`` on nodes picked from the free pool, with the hot spares if it needs them and
        may use them (a requeued job); on ``k`` nodes when given (an elastic job's whole replicas that
        fit), else all it needs."""
        k = k or job.nodes_needed
        if job.unit > 1:  # in whole units per NVLink domain (checked by _schedule)
            assert self.domains is not None
            self._start(job, self.domains.pick(self._domain_pool(job), k, job.unit))
            return
        pool = self._free_count(job.nodes_needed > 1)
        if k > len(pool):
            spares = self._spares_for(job)
            if len(spares):
                pool = np.concatenate((pool, spares))
        self._start(job, self._pick_nodes(job, k, pool))
        if k < job.nodes_needed:
            self._shrunk[job.jid] = job
            self._elastic_event(job, "start", "", job.nodes_needed // job.rn)

    def _domain_pool(self, job: Job) -> np.ndarray:
        """The sorted nodes ``job`` may start on: free, and the hot spares when it may use them."""
        pool = self._free_count(job.nodes_needed > 1)
        spares = self._spares_for(job)
        return np.sort(np.concatenate((pool, spares))) if len(spares) else pool

    def _domain_fit(self, job: Job) -> int:
        """Nodes ``job`` (tp groups spanning nodes) could start on now in whole units per NVLink domain."""
        assert self.domains is not None
        return self.domains.usable(self._domain_pool(job), job.unit)

    def _remaining_h(self, job: Job, rate: float) -> float:
        """Expected hours to the job's end without failures: its remaining work at ``rate`` plus the pauses
        of the checkpoints still to come (a sync write, or an async write's stall; the final one too), at
        the write time of now, and a restart still to come or under way. (The backfill estimate: leaving
        these out let a backfilled job run past the head job's reservation with no failure at all.)"""
        ran = job.rate * (self._env._now - job.last_t) if job.state == RUNNING else 0.0  # (not yet advanced)
        left = max(0.0, job.work_h - job.progress_h - ran)
        hours = left / rate
        if job.state == RESTARTING:  # the rest of its restart
            hours += max(0.0, job.restart_until - self._env._now)
        elif job.started_once and job.state == QUEUED:  # a requeued job starts with a restart
            hours += self._restart_h(job)
        ck = job.ckpt
        if ck.interval_h is not None and left > 0:
            n = math.ceil((left + job.since_restart_h + ran) / ck.interval_h - 1e-9)  # to come, the final one
            w = self._write_time_h(ck)  # (the final checkpoint is a sync write)
            hours += w + (n - 1) * (w if ck.mode == "sync" else ck.async_fraction * w)
        return hours

    def _reservation(self, head: Job) -> tuple[float | None, int]:
        """EASY: the time the head job can start (from running jobs' expected ends) and how many
        nodes are spare at that time."""
        avail = len(self._free_count(head.nodes_needed > 1)) + len(self._spares_for(head))
        ends = []
        for j in self.allocated.values():
            self.queue.ops += 1
            if len(j.nodes):
                ends.append((self._env._now + self._remaining_h(j, j.rate if j.rate > 0 else 1.0), len(j.nodes)))
        ends.sort()
        for t, k in ends:
            avail += k
            if avail >= head.nodes_needed:
                return t, avail - head.nodes_needed
        return None, 0

    def _start(self, job: Job, nodes: list[int]) -> None:
        self.queue.remove(job)
        if job is self._unreserved:
            self._note_unreserved(None)
        arr = np.array(nodes, dtype=np.int64)
        arr.sort()
        self.spares.discard_many(arr)
        self.free.discard_many(arr)
        self.owner[arr] = job.jid
        job.nodes = arr
        self.allocated[job.jid] = job
        job.wait_h += self._env._now - job.queued_at
        job.last_t = self._env._now
        if job.started_once:
            self._begin_restart(job)
        else:
            job.started_once = True
            job.first_start_h = self._env._now
            self._begin_running(job)

    def _begin_running(self, job: Job) -> None:
        job.state = RUNNING
        job.rate = self._compute_rate(job)
        self._set_util(job, 1.0)
        self._arm(job)

    def _read_time_h(self, ck: Checkpoint) -> float:
        rs = self.spec.restart
        if rs.read_h is not None:
            return rs.read_h
        if job_has_no_checkpoint(ck):
            return 0.0
        st = self.storage
        bw = (self.spec.storage.read_gb_per_s if st is None else st.read_gb_per_s) / max(1, self.readers)
        return ck.size_gb / bw / 3600.0

    def _begin_restart(self, job: Job) -> None:
        job.state = RESTARTING
        timer = self._timer_of(job)
        timer.cancel()
        if self._storage_down() and not job_has_no_checkpoint(job.ckpt):
            self._block(job, False)  # its checkpoint cannot be read now: the restart starts when the storage returns
            return
        self._end_io(job)
        self.readers += 1
        job.reading = True
        dur = self._restart_h(job)
        job.restart_until = self._env._now + dur
        rs = self.spec.restart
        job.read_until = self._env._now + rs.detection_h + rs.reschedule_h + self._read_time_h(job.ckpt)
        if self.storage is not None and rs.read_h is None and not job_has_no_checkpoint(job.ckpt):
            # the read itself (after detection and rescheduling) is the storage's transfer
            read_h = self._read_time_h(job.ckpt)
            if read_h > 0:
                until = job.restart_until
                t0 = self._env._now + rs.detection_h + rs.reschedule_h
                gbs = job.ckpt.size_gb / (read_h * 3600.0)
                self._call_at(t0, lambda: self._read_window(job, until, gbs))
                self._call_at(t0 + read_h, lambda: self._read_window(job, until, 0.0))
        self._set_util(job, 0.0)
        timer.set(self._env._now + dur, lambda: self._restart_done(job))

    def _read_window(self, job: Job, until: float, gb_per_s: float) -> None:
        """The checkpoint read of the restart ending at ``until`` begins (at ``gb_per_s``) or ends (0) on the
        storage, if that restart is still under way."""
        st = self.storage
        if st is None or job.state != RESTARTING or job.restart_until != until or not job.reading:
            return
        if gb_per_s > 0:
            st.transfer_begins(job.jid, False, gb_per_s)
        else:
            st.transfer_ends(job.jid, False)

    def _restart_h(self, job: Job) -> float:
        """Hours a restart takes: detection, rescheduling, reading the checkpoint, warm-up."""
        rs = self.spec.restart
        return rs.detection_h + rs.reschedule_h + self._read_time_h(job.ckpt) + rs.warmup_h

    def _restart_done(self, job: Job) -> None:
        if job.state != RESTARTING:
            return
        self._end_io(job)
        self._advance(job)
        self._begin_running(job)

    def _complete(self, job: Job) -> None:
        self._end_io(job)
        job.state = DONE
        if job.timer is not None:
            job.timer.cancel()
        job.end_h = self._env._now
        job.saved_h = job.progress_h
        job.history = job.lineage = None  # (no rollback of a finished job)
        self._set_util(job, 0.0)
        self._release(job)
        self._shrunk.pop(job.jid, None)
        del self._by_id[job.jid]  # looked up only while it holds nodes (a trace brings millions of jobs)
        # a finished job keeps only its record for the jobs table: its timers (each with a closure over the job)
        # go, unless an async write's end is still due (it ends the write's storage transfer)
        job.timer = None
        if job.saver is not None and not job.saver.pending:
            job.saver = None
        if job.repeat:
            nxt = self._new_job(job.name, job.gpus, job.work_h, self._env._now, job.priority, job.ckpt, job.step,
                                True)
            nxt.data_gbs = job.data_gbs
            self._submit(nxt)
        self._schedule()

    def _release(self, job: Job) -> None:
        self.allocated.pop(job.jid, None)
        nodes = job.nodes
        self.owner[nodes] = -1
        up = nodes[self.cluster.down_count[nodes] == 0]
        # in node order, as _node_available one by one: the hot-spare pool is topped up first
        top = max(0, min(len(up), self.spare_target - len(self.spares)))
        if top:
            self.spares.add_many(up[:top])
        self.free.add_many(up[top:])
        job.nodes = _NO_NODES  # (shared: a trace keeps a million finished jobs for the jobs table)

    # ---- interruptions --------------------------------------------------------------------
    def _interrupt(self, job: Job, cause: str, planned: bool, lost_nodes: list[int]) -> None:
        """Lose work since the last checkpoint; replace lost nodes from spares or free nodes, else
        requeue the job; then restart.

        Several losses at the same instant (a leaf switch cutting many of the job's nodes one by
        one, a rack losing power) are one interruption: the later ones only swap nodes. An elastic
        job that loses nodes swaps or shrinks instead (:meth:`_reshape`) while it keeps enough
        replicas."""
        if job.rn and lost_nodes and self._reshape(job, cause, lost_nodes):
            return
        self._advance(job)
        now = self._env._now
        same_instant = job.last_interrupt_h == now
        lost = job.progress_h - job.saved_h
        job.lost_h += lost
        job.progress_h = job.saved_h
        _restored(job, now)
        job.since_restart_h = 0.0
        job.pending_save_h = math.nan
        job.ckpt_waiting = False
        job.io_blocked = job.async_retry = False
        self._end_io(job)
        if not same_instant:
            job.interruptions += 1
            job.planned_interruptions += int(planned)
            self.interruptions.append((job.jid, job.name, now, cause, planned, lost, len(job.nodes)))
        job.last_interrupt_h = now
        if job.timer is not None:
            job.timer.cancel()
        # drop the lost nodes from the allocation
        self._set_util(job, 0.0)
        nodes = job.nodes
        if not lost_nodes:
            keep = nodes
        elif len(lost_nodes) == 1:  # the common case: one array comparison instead of np.isin
            keep = nodes[nodes != lost_nodes[0]]
        else:
            keep = nodes[~np.isin(nodes, lost_nodes)]
        for n in lost_nodes:
            if self.owner[n] == job.jid:
                self.owner[n] = -1
        need = (len(nodes) if job.rn else job.nodes_needed) - len(keep)  # an elastic job: its replicas now
        job.nodes = keep
        multi = job.nodes_needed > 1
        if job.unit > 1 and need:  # tp groups stay in whole units per NVLink domain
            keep, parts, ok = self._domain_replacement(job, keep, need)
            repl = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
            got = need if ok else -1
        else:
            repl = self._take_from_pools(need, multi)
            got = len(repl)
        if got == need:
            for n in repl.tolist():
                self._remove_from_pools(n)
            self.owner[repl] = job.jid
            if len(repl) == 1:  # slot the replacement into the sorted kept nodes (no full sort)
                at = int(keep.searchsorted(repl[0]))
                job.nodes = np.concatenate((keep[:at], repl, keep[at:]))
            elif len(repl):
                job.nodes = np.sort(np.concatenate((keep, repl)))
            else:
                job.nodes = keep
            job.last_t = self._env._now
            self._begin_restart(job)
        else:
            job.state = QUEUED
            self._shrunk.pop(job.jid, None)
            self._release(job)
            job.queued_at = self._env._now
            self._enqueue(job)
            self._schedule()

    def _domain_replacement(self, job: Job, keep: np.ndarray,
                            need: int) -> tuple[np.ndarray, list[np.ndarray], bool]:
        """:meth:`_interrupt`'s replacement of ``need`` lost nodes of a job whose tp groups span nodes:
        (nodes it keeps, [replacement nodes], found), the replacements in whole units per NVLink domain
        (:meth:`Domains.complete`; an incomplete unit's remaining nodes are given back when its domain has
        no free node to complete it); found is False when there are not enough (the job is requeued)."""
        assert self.domains is not None
        cut = self._cut_mask(True)
        got = self.domains.complete(keep, need, [self.spares.nodes(cut), self.free.nodes(cut)], job.unit)
        if got is None:
            return keep, [], False
        add, drop = got
        if len(drop):
            keep = keep[~np.isin(keep, drop)]
            job.nodes = keep
            self.owner[drop] = -1
            for n in drop.tolist():
                self._node_available(n)
        return keep, [add], True

    # ---- elastic jobs -----------------------------------------------------------------------
    def _take_from_pools(self, k: int, multi: bool) -> np.ndarray:
        """Up to ``k`` nodes for a running job's replacement or growth: hot spares first, then free
        nodes, lowest ids first (as a rigid job's replacement); not yet taken out of the pools."""
        parts = []
        got = 0
        for pool in (self.spares, self.free):
            if got == k:
                break
            take = pool.nodes(self._cut_mask(multi))[: k - got]
            parts.append(take)
            got += len(take)
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    def _reshape(self, job: Job, cause: str, lost_nodes: list[int]) -> bool:
        """An elastic job lost ``lost_nodes``: swap in free nodes for them, else go on with the whole
        replicas its kept nodes (and any free ones) make, keeping its progress; then a reconfiguration
        pause (a restart under way starts over instead). False, changing nothing, when it would keep
        fewer than ``min_replicas`` (it is interrupted as a rigid job)."""
        nodes = job.nodes
        keep = nodes[~np.isin(nodes, lost_nodes)]
        want = len(nodes) - len(keep)
        if not want:
            return False
        multi = job.nodes_needed > 1
        avail = self._take_from_pools(want, multi)
        if len(avail) < want:  # no replacement for them all: the whole replicas it can make
            r = (len(keep) + len(avail)) // job.rn
            if r < job.min_rep:
                return False
            size = r * job.rn
            if size <= len(keep):
                self._return_nodes(keep[size:])  # the rest of the broken replicas (highest ids)
                keep, avail = keep[:size], avail[:0]
            else:
                avail = avail[: size - len(keep)]
        self._advance(job)
        self._set_util(job, 0.0)
        for n in lost_nodes:
            if self.owner[n] == job.jid:
                self.owner[n] = -1
        self._end_io(job)  # a write under way is aborted; progress is kept
        job.pending_save_h = math.nan
        job.io_blocked = job.async_retry = False
        job.ckpt_waiting = False
        for n in avail.tolist():
            self._remove_from_pools(n)
        self.owner[avail] = job.jid
        before = len(nodes) // job.rn
        job.nodes = np.sort(np.concatenate((keep, avail)))
        self._elastic_event(job, "swap" if len(job.nodes) == len(nodes) else "shrink", cause, before)
        if len(job.nodes) < job.nodes_needed:
            self._shrunk[job.jid] = job
        if job.state == RESTARTING:
            self._begin_restart(job)
        else:
            self._begin_reconfigure(job)
        return True

    def _return_nodes(self, nodes: np.ndarray) -> None:
        """Nodes a job gives back while it goes on (an elastic job's broken replicas): to the pools."""
        self.owner[nodes] = -1
        for n in nodes.tolist():
            if self.cluster.is_up(n):
                self._node_available(n)

    def _grow(self) -> None:
        """Elastic jobs below full size take free whole replicas (spares first), in job order, before
        queued jobs start (as a rigid job's replacement would)."""
        for jid in sorted(self._shrunk):
            job = self._shrunk[jid]
            if job.state != RUNNING:
                continue
            self.queue.ops += 1
            want = job.nodes_needed - len(job.nodes)
            avail = self._take_from_pools(want, job.nodes_needed > 1)
            k = len(avail) // job.rn * job.rn
            if not k:
                continue
            avail = avail[:k]
            self._advance(job)
            self._set_util(job, 0.0)
            for n in avail.tolist():
                self._remove_from_pools(n)
            self.owner[avail] = job.jid
            before = len(job.nodes) // job.rn
            job.nodes = np.sort(np.concatenate((job.nodes, avail)))
            self._elastic_event(job, "grow", "", before)
            if len(job.nodes) == job.nodes_needed:
                del self._shrunk[jid]
            self._begin_reconfigure(job)

    def _elastic_event(self, job: Job, kind: str, cause: str, before: int) -> None:
        """A row of the ``elastic`` table; changes of one job at one instant are one row (one pause)."""
        now = self._env._now
        after = len(job.nodes) // job.rn
        ev = self.elastic_events
        if job.last_reshape_h == now and ev and ev[-1][1] == job.jid and ev[-1][0] == now:
            row = ev[-1]
            row[6] = after
            if row[3] != "start":
                row[3] = "shrink" if after < row[5] else "grow" if after > row[5] else "swap"
            return
        job.last_reshape_h = now
        ev.append([now, job.jid, job.name, kind, cause, before, after, job.nodes_needed // job.rn,
                   job.reconf_pause_h if kind != "start" else 0.0])

    def _begin_reconfigure(self, job: Job) -> None:
        """Pause the job for its reconfiguration (from now: changes at one instant pay one pause)."""
        job.state = RECONF
        job.last_t = self._env._now
        self._timer_of(job).set(self._env._now + job.reconf_pause_h, lambda: self._reconfigured(job))

    def _reconfigured(self, job: Job) -> None:
        if job.state != RECONF:
            return
        self._advance(job)
        self._begin_running(job)
        if job.jid in self._shrunk:
            self._schedule()  # it may grow now

    def _on_node_lost(self, node: int, cause: str) -> None:
        self._remove_from_pools(node)
        jid = int(self.owner[node])
        if jid >= 0:
            job = self._job(jid)
            planned = cause.startswith("planned")
            self._interrupt(job, cause, planned, [node])
        # refill the spare pool from free nodes if it dropped below target
        while len(self.spares) < self.spare_target and len(self.free):
            n = int(self.free.nodes()[0])
            self.free.discard(n)
            self.spares.add(n)

    def _on_node_cut(self, node: int, cause: str) -> None:
        jid = int(self.owner[node])
        if jid >= 0:
            job = self._job(jid)
            if job.nodes_needed > 1:
                self._interrupt(job, cause, False, [node])

    def _on_node_up(self, node: int, cause: str) -> None:
        if self.cluster.is_up(node) and self.owner[node] < 0 and node not in self.spares and node not in self.free:
            self._node_available(node)
        self._schedule()

    def _on_transient(self, node: int, cause: str) -> None:
        jid = int(self.owner[node])
        if jid >= 0:
            self._interrupt(self._job(jid), cause, False, [])

    def _on_link_flap(self, node: int, cause: str) -> None:
        """A compute-fabric link of ``node`` flapped: its job crashes if it spans several nodes (a job on
        one node talks over NVLink only, as for a cut link: ``_on_node_cut``)."""
        jid = int(self.owner[node])
        if jid >= 0 and self._job(jid).nodes_needed > 1:
            self._interrupt(self._job(jid), cause, False, [])

    def _on_fabric_flap(self, group: int, cause: str) -> None:
        """An uplink of a leaf of ``group`` flapped: every allocated job that spans several leaf groups
        and has a node in ``group`` crashes (in job order)."""
        fabric = self.fabric
        assert fabric is not None  # leaf groups flap only when the network component exists
        hit = [job for jid, job in sorted(self.allocated.items())
               if fabric.spans_groups(job.nodes) and bool((fabric.node_group[job.nodes] == group).any())]
        for job in hit:
            self._interrupt(job, cause, False, [])

    def _on_speed(self, nodes: np.ndarray) -> None:
        jids = {int(j) for j in np.unique(self.owner[nodes]) if j >= 0}
        for jid in sorted(jids):
            self._rerate(self._job(jid))

    def _on_fabric(self) -> None:
        for job in list(self.allocated.values()):
            if len(job.nodes) > 1:
                self._rerate(job)

    def _on_storage(self, available: bool) -> None:
        """The storage's shares or availability changed. In an outage every job that reads or writes stops:
        a checkpoint write under way fails (a sync or final one holds the job until the storage returns, an
        async one is written again then), a restart reading its checkpoint waits; data-reading jobs stall
        (rate 0). When the storage returns, the blocked jobs write their checkpoint from its start (or
        restart over) and the data-reading jobs re-rate."""
        if not available:
            for jid, job in sorted(self.allocated.items()):
                if job.writing:
                    self._advance(job)
                    if not math.isnan(job.pending_save_h):  # an async write in flight fails: retried later
                        self._end_io(job)
                        if job.saver is not None:
                            job.saver.cancel()
                        job.async_retry = True
                        job.storage_stops += 1
                    else:  # a sync (or final) write fails: the job waits, then writes again
                        self._block(job, job.progress_h >= job.work_h)
                elif (job.reading and job.state == RESTARTING and not job_has_no_checkpoint(job.ckpt)
                      and self._env._now < job.read_until):  # (still to read: in its warm-up it reads nothing)
                    self._advance(job)
                    self._block(job, False)
                # (a data-reading job is stopped by its re-rate below: _data_rate)
        else:
            for jid, job in sorted(self.allocated.items()):
                if job.io_blocked:
                    self._advance(job)
                    job.io_blocked = False
                    if job.state == CKPT:
                        self._start_checkpoint(job, job.blocked_final, retry=True)
                    else:
                        self._begin_restart(job)
                elif job.async_retry:
                    self._retry_async(job)
        st = self.storage
        assert st is not None  # (the topic's publisher)
        for job in [j for j in self.allocated.values() if j.data_gbs and j.state == RUNNING]:
            # re-rate only the jobs whose rate moves: a job that still gets its demand keeps its timer as armed
            share = st.data_share(job.jid, job.data_gbs * job.rate_fabric)
            if (data_limited_rate(job.rate_fabric, job.data_gbs, share) != job.rate
                    or job.rate_in_outage != (not st.available)):
                self._rerate(job)

    def _retry_async(self, job: Job) -> None:
        """Write again the async checkpoint that failed in an outage (its progress is still unsaved)."""
        job.async_retry = False
        if math.isnan(job.pending_save_h):
            return
        self._end_io(job)
        self.writers += 1
        job.writing = True
        w = self._write_time_h(job.ckpt)
        if self.storage is not None:
            self.storage.transfer_begins(job.jid, True, job.ckpt.size_gb / (w * 3600.0) if w > 0 else 0.0)
        saver = job.saver
        if saver is None:
            saver = job.saver = self.engine.timer()
        saver.set(self._env._now + w, lambda: self._async_saved(job))

    def _on_nvlink(self, domain: int) -> None:
        """An NVLink domain's bandwidth share changed: re-rate the jobs with nodes in it (in job order)."""
        assert self.domains is not None
        dn = self.domains.domain_nodes
        for job in sorted(self.allocated.values(), key=lambda j: j.jid):
            if len(job.nodes) and bool((job.nodes // dn == domain).any()):
                self._rerate(job)

    def _rerate(self, job: Job) -> None:
        if job.state == DONE or not len(job.nodes):
            return
        self._advance(job)
        job.rate = self._compute_rate(job)
        if job.state == RUNNING:
            self._arm(job)

    def _job(self, jid: int) -> Job:
        return self._by_id[jid]

    # ---- the JOBS service (twin.model.component.Jobs) ------------------------------------------
    def job_on(self, node: int) -> int:
        """Id of the job holding ``node`` now (running, checkpointing or restarting), or -1."""
        return int(self.owner[node])

    def rollback(self, jid: int, before_h: float, node: int, cause: str) -> tuple[float, int] | None:
        """Roll job ``jid`` back to its last checkpoint whose state was captured before ``before_h`` (the
        checkpoints captured since hold corrupt state and are dropped; none left: progress 0) and
        restart it, swapping ``node`` out if the job holds it (an interruption with ``cause``). Returns
        (the progress lost in ideal hours, the job's GPUs); None when the job is done or gone."""
        job = self._by_id.get(jid)
        if job is None or job.state == DONE:
            return None
        newest = job.history.drop_from(before_h) if job.history is not None else None
        target = newest[1] if newest is not None else 0.0
        before = job.lost_h
        job.saved_h = target
        if job.state == QUEUED:  # holds no nodes: its restart is still to come, from the older checkpoint
            lost = job.progress_h - target
            job.lost_h += lost
            job.progress_h = target
            _restored(job, self._env._now)
            job.interruptions += 1
            self.interruptions.append((job.jid, job.name, self._env._now, cause, False, lost, 0))
            return lost, job.gpus
        self._interrupt(job, cause, False, [node] if self.owner[node] == jid else [])
        return job.lost_h - before, job.gpus

    def discarded(self, jid: int, at_h: float) -> bool:
        """Whether job ``jid`` (running, restarting or queued) no longer holds the state it computed at
        ``at_h``: it restarted since from a checkpoint captured before then (its lineage,
        twin.model.checkpoints). False for a job done or gone (:meth:`rollback` says so)."""
        job = self._by_id.get(jid)
        if job is None or job.state == DONE or job.lineage is None:
            return False
        return not job.lineage.holds(at_h)

    # ---- component protocol ---------------------------------------------------------------
    def start(self) -> None:
        pass

    def finish(self) -> None:
        self._note_unreserved(None)  # (closes the last spell at the horizon)
        for job in self.jobs:
            if job.state != DONE:
                self._advance(job)
                if job.state == QUEUED:
                    job.wait_h += self._env._now - job.queued_at
                    job.queued_at = self._env._now

    def _jobs_table(self, H: float) -> pd.DataFrame:
        """The ``jobs`` table: a row per job, then a row per interruption. Built by columns from the
        job records (a trace can bring a million jobs: no dict or tuple per row)."""
        jl = self.jobs
        n = len(jl)
        ints = self.interruptions
        k = len(ints)

        def col(get: Any, dtype: Any = float) -> np.ndarray:
            return np.fromiter((get(j) for j in jl), dtype=dtype, count=n)

        def ettr(j: Job) -> float:
            end = j.end_h if j.state == DONE else H
            wall = end - j.first_start_h if not math.isnan(j.first_start_h) else 0.0
            return j.progress_h / wall if wall > 0 else math.nan

        nan_k = np.full(k, math.nan)
        i_col = list(zip(*ints)) if k else [()] * 7  # jid, name, time, cause, planned, lost, nodes

        def floats(get: Any, at_interruptions: Any = None) -> np.ndarray:
            tail = nan_k if at_interruptions is None else np.asarray(at_interruptions, dtype=float)
            return np.concatenate((col(get), tail))

        def integers(get: Any, at_interruptions: Any = None) -> Any:
            vals = np.concatenate((col(get, np.int64), np.asarray(at_interruptions if at_interruptions is not None
                                                                  else np.zeros(k), dtype=np.int64)))
            mask = np.zeros(n + k, dtype=bool)
            if at_interruptions is None:
                mask[n:] = True
            return pd.arrays.IntegerArray(vals, mask)

        names = np.empty(n + k, dtype=object)
        names[:n] = [j.name for j in jl]
        names[n:] = i_col[1]
        cause = np.empty(n + k, dtype=object)
        cause[:n] = ""
        cause[n:] = [str(c) for c in i_col[3]]
        data: dict[str, Any] = {
            "record": pd.Categorical.from_codes(np.r_[np.zeros(n, np.int8), np.ones(k, np.int8)],
                                                categories=["job", "interruption"]),
            "job": integers(lambda j: j.jid, i_col[0]),
            "name": names,
            "gpus": integers(lambda j: j.gpus),
            "nodes": integers(lambda j: j.nodes_needed, i_col[6]),
            "work_h": floats(lambda j: j.work_h),
            "submit_h": floats(lambda j: j.submit_h),
            "first_start_h": floats(lambda j: j.first_start_h),
            "end_h": floats(lambda j: j.end_h),
            "done": np.concatenate((col(lambda j: j.state == DONE, bool), np.zeros(k, dtype=bool))),
            "kept_h": floats(lambda j: j.progress_h),
            "lost_h": floats(lambda j: j.lost_h, i_col[5]),
            "made_h": floats(lambda j: j.made_h),
            "run_h": floats(lambda j: j.run_h),
            "checkpoint_h": floats(lambda j: j.ckpt_h),
            "restart_h": floats(lambda j: j.restart_h),
            "queue_wait_h": floats(lambda j: j.wait_h),
            "interruptions": integers(lambda j: j.interruptions),
            "planned_interruptions": integers(lambda j: j.planned_interruptions),
            "checkpoints": integers(lambda j: j.checkpoints),
            "ettr": floats(ettr),
            "time_h": np.concatenate((np.full(n, math.nan), np.asarray(i_col[2], dtype=float))),
            "cause": cause,
            "planned": np.concatenate((np.zeros(n, dtype=bool), np.asarray(i_col[4], dtype=bool))),
        }
        return pd.DataFrame(data, columns=JOB_COLUMNS)

    def results(self, so_far: ResultsSoFar) -> tuple[dict[str, float], dict[str, pd.DataFrame]]:
        H = self.engine.horizon_h
        installed = self.cluster.n_nodes * self.gpn * H
        jobs = self._jobs_table(H)
        jr = [j for j in self.jobs]
        useful = sum(j.progress_h * j.gpus for j in jr)
        lost = sum(j.lost_h * j.gpus for j in jr)
        made = sum(j.made_h * j.gpus for j in jr)
        run = sum(j.run_h * j.gpus for j in jr)
        ck = sum(j.ckpt_h * j.gpus for j in jr)
        rs = sum(j.restart_h * j.gpus for j in jr)
        rc = sum(j.reconfig_h * j.gpus for j in jr) if self._has_elastic else 0.0
        blocked = sum(j.blocked_h * j.gpus for j in jr) if self.storage is not None else 0.0
        down = self.model.recorder.state_hours("down") * self.gpn
        slow = run - made
        idle = installed - down - run - ck - rs - rc - blocked
        m: dict[str, float] = {
            "useful_gpu_hours": useful,
            "goodput": useful / installed,
            "goodput.useful": useful / installed,
            "goodput.lost": lost / installed,
            "goodput.checkpoint": ck / installed,
            "goodput.restart": rs / installed,
            "goodput.slowdown": slow / installed,
            "goodput.down": down / installed,
            "goodput.idle": idle / installed,
            "utilisation": (run + ck + rs + rc + blocked) / installed,
            "jobs_submitted": float(len(jr)),
            "jobs_completed": float(sum(j.state == DONE for j in jr)),
            "interruptions": float(len(self.interruptions)),
            "interruptions.planned": float(sum(1 for r in self.interruptions if r[4])),
            "interruptions.unplanned": float(sum(1 for r in self.interruptions if not r[4])),
            "lost_gpu_hours": lost,
            "checkpoint_gpu_hours": ck,
            "restart_gpu_hours": rs,
        }
        causes: dict[str, int] = {}
        for r in self.interruptions:
            causes[r[3]] = causes.get(r[3], 0) + 1
        for c, k in sorted(causes.items()):
            m[f"interruptions.{c}"] = float(k)
        m.update(self._goodput_by_mechanism(jr, installed, idle, ck, rs, rc, blocked))
        warm = self.spec.warmup_h
        waits = [j.wait_h for j in jr if j.submit_h >= warm and not math.isnan(j.first_start_h)]
        m["queue_wait_h.mean"] = float(np.mean(waits)) if waits else math.nan
        m["queue_wait_h.jobs"] = float(len(waits))
        if jr:
            big = max(jr, key=lambda j: (j.gpus, -j.jid))
            row = jobs[(jobs.record == "job") & (jobs.job == big.jid)].iloc[0]
            m["ettr.max_job"] = float(row.ettr)
            m["max_job.kept_h"] = big.progress_h
            m["max_job.interruptions"] = float(big.interruptions)
        by_size = self._queue_by_size(jr, warm)
        for row in by_size.itertuples():
            m[f"queue_wait_h.mean.nodes_le_{row.nodes_max}"] = float(row.mean_wait_h)
        m["starvation.advisories"] = float(len(self.advisories))
        m["starvation.unreserved_h"] = max((j.unreserved_h for j in jr), default=0.0)
        adv = pd.DataFrame(self.advisories, columns=ADVISORY_COLUMNS).astype(
            {"time_h": float, "job": "int64", "name": object, "nodes": "int64", "usable_nodes": "int64",
             "waited_h": float, "unreserved_h": float, "text": object})
        tables = {"jobs": jobs, "queue_by_size": by_size, "advisories": adv}
        if self.storage is not None:
            sj = self._storage_jobs(jr)
            tables["storage_jobs"] = sj
            m["storage.data_stall_gpu_hours"] = float(sj["data_stall_gpu_hours"].sum())
            m["storage.outage_gpu_hours"] = float(sj["outage_gpu_hours"].sum())
            m["storage.jobs_stopped"] = float((sj["storage_stops"] > 0).sum())
            m["storage.data_jobs"] = float((sj["read_gb_per_s"] > 0).sum())
            m["goodput.storage_wait"] = blocked / installed
        if self._has_elastic:
            el = pd.DataFrame(self.elastic_events, columns=ELASTIC_COLUMNS).astype(
                {"time_h": float, "job": "int64", "name": object, "event": object, "cause": object,
                 "replicas_before": "int64", "replicas_after": "int64", "replicas_full": "int64",
                 "reconfigure_h": float})
            tables["elastic"] = el
            m["goodput.reconfigure"] = rc / installed
            m["reconfigure_gpu_hours"] = rc
            for kind in ("start", "shrink", "swap", "grow"):
                m[f"elastic.{kind}s"] = float((el.event == kind).sum())
            m["elastic.reduced_hours"] = sum(j.reduced_h for j in jr)
            m["elastic.kept_gpu_hours"] = sum(j.kept_h * j.gpus for j in jr)
        laid = [j for j in jr if j.bd_acc is not None and j.bd_acc.sum() > 0]
        if laid:
            steps = self._step_table(laid)
            tables["step_breakdown"] = steps
            w = steps.gpus * steps.run_h
            for c in STEP_COMPONENTS:
                m[f"step.share.{c}"] = float((steps[f"share_{c}"] * w).sum() / w.sum())
            m["step.mean_s"] = float((steps.mean_step_s * w).sum() / w.sum())
            m["step.ideal_s"] = float((steps.ideal_step_s * w).sum() / w.sum())
        return m, tables

    def _step_table(self, laid: list[Job]) -> pd.DataFrame:
        """The run-time limiter of each layout job that ran: its failure-free step time, its mean step
        time over its running hours, each component's share of it (thermal and power throttling in
        ``throttle``, a degraded fabric or NVLink in ``dp``, ``pp`` and ``tp``) and the largest
        non-compute component (``compute`` when there is none)."""
        rows = []
        for j in laid:
            acc = j.bd_acc
            assert acc is not None
            hours = float(acc.sum())
            shares = acc / hours
            lay = j.step.layout
            assert lay is not None
            other = {c: float(v) for c, v in zip(STEP_COMPONENTS, shares) if c != "compute"}
            best = max(other, key=lambda c: other[c])
            limiter = best if other[best] > 0.0 else "compute"
            ideal = parallel_breakdown(j.step, 1.0, j.bd_nic, 1.0).total_s
            rows.append([j.jid, j.name, j.gpus, lay.tp, lay.pp, lay.dp, ideal, j.step_acc / hours, hours,
                         *shares.tolist(), limiter])
        return pd.DataFrame(rows, columns=STEP_COLUMNS).astype(
            {"job": "int64", "name": object, "gpus": "int64", "tp": "int64", "pp": "int64", "dp": "int64",
             "limiter": object})

    def _queue_by_size(self, jr: list[Job], warm: float) -> pd.DataFrame:
        """Queue wait by job size (nodes in power-of-two classes 1, 2, 3-4, 5-8, ...), of jobs submitted
        after the warm-up: the mean, 95th percentile and largest wait of those that started, and the
        jobs still queued at the horizon with the longest wait so far (a starved job shows there)."""
        sizes = np.fromiter((j.nodes_needed for j in jr if j.submit_h >= warm), dtype=np.int64)
        waits = np.fromiter((j.wait_h for j in jr if j.submit_h >= warm), dtype=float)
        started = np.fromiter((not math.isnan(j.first_start_h) for j in jr if j.submit_h >= warm), dtype=bool)
        queued = np.fromiter((j.state == QUEUED and not j.started_once for j in jr if j.submit_h >= warm), dtype=bool)
        cls = np.ceil(np.log2(np.maximum(sizes, 1))).astype(np.int64) if len(sizes) else sizes
        rows = []
        for k in np.unique(cls).tolist():
            sel = cls == k
            w = waits[sel & started]
            q = waits[sel & queued]
            rows.append((1 if k == 0 else 2 ** (k - 1) + 1, 2 ** k, int(sel.sum()), int(len(w)),
                         float(w.mean()) if len(w) else math.nan, float(np.percentile(w, 95)) if len(w) else math.nan,
                         float(w.max()) if len(w) else math.nan, int(len(q)), float(q.max()) if len(q) else math.nan))
        return pd.DataFrame(rows, columns=QUEUE_BY_SIZE_COLUMNS).astype(
            {"nodes_min": "int64", "nodes_max": "int64", "jobs": "int64", "started": "int64", "mean_wait_h": float,
             "p95_wait_h": float, "max_wait_h": float, "still_queued": "int64", "longest_queued_h": float})


    def _storage_jobs(self, jr: list[Job]) -> pd.DataFrame:
        """Per job that reads training data or was stopped by a storage outage: its demand, its data-stall
        and outage hours and GPU-hours, and the outages that stopped it."""
        rows = [(j.jid, j.name, j.gpus, j.data_gbs, j.slow_data_h, j.slow_data_h * j.gpus,
                 j.slow_outage_h + j.blocked_h, (j.slow_outage_h + j.blocked_h) * j.gpus, j.storage_stops)
                for j in jr if j.data_gbs or j.storage_stops or j.blocked_h or j.slow_outage_h]
        return pd.DataFrame(rows, columns=STORAGE_JOB_COLUMNS).astype(
            {"job": "int64", "name": object, "gpus": "int64", "read_gb_per_s": float, "data_stall_h": float,
             "data_stall_gpu_hours": float, "outage_h": float, "outage_gpu_hours": float, "storage_stops": "int64"})

    def _goodput_by_mechanism(self, jr: list[Job], installed: float, idle: float, ck: float,
                              rs: float, rc: float = 0.0, blocked: float = 0.0) -> dict[str, float]:
        """Installed GPU-hours not turned into kept progress, by the mechanism that cost them, each from its
        own events, as shares of the installed GPU-hours (``goodput`` + the ``goodput.mechanism.*``
        buckets = 1, no residual):

        * slowdown (running time at a rate below 1): split by the sequential rule of ``_compute_rate``
          into ``thermal_slowdown``, ``fail_slow`` (parts with effect ``degraded``), ``power_cap`` and
          ``fabric_slowdown``;
        * node-down time (the recorder's down intervals, by the cause that took the node down) and work
          lost at interruptions (by the interruption's cause), by cause: ``thermal_trip``,
          ``power_outage`` (``power:*``), ``maintenance`` (``planned*``), ``failure.<part>`` for each node
          part (``repair:<part>`` drains included), ``failure.other`` for any other cause (rack, fabric,
          leaks, link flaps, burn-in);
        * ``checkpoint``, ``restart`` (all restarts), ``reconfigure`` (elastic jobs' pauses to reshape; with
          elastic jobs only) and ``idle`` (installed, up and not in a job);
        * with the storage service: ``data_stall`` (running time lost to a data share below the demand) and
          ``storage_outage`` (running time of data-reading jobs stalled, and checkpoint writes and restarts
          waiting, during storage outages).

        ``goodput.slowdown.{thermal,fail_slow,power,fabric}``, ``goodput.down.<cause>`` and ``goodput.lost.<cause>``
        give the raw parts."""
        node_parts = list(self.sc.cluster.node.parts)

        def mech(cause: str) -> str:
            if cause == "thermal_trip":
                return "thermal_trip"
            if cause.startswith("power:"):
                return "power_outage"
            if cause.startswith("planned"):
                return "maintenance"
            part = cause[len("repair:"):] if cause.startswith("repair:") else cause
            return f"failure.{part}" if part in node_parts else "failure.other"

        out: dict[str, float] = {}
        buckets = {k: 0.0 for k in ("thermal_slowdown", "fail_slow", "power_cap", "fabric_slowdown", "thermal_trip",
                                    "power_outage", "maintenance", *(f"failure.{p}" for p in node_parts),
                                    "failure.other")}
        if self.domains is not None:  # NVLink domains: switch trays down, placements in small blocks
            sn = sum(j.slow_nvlink_h * j.gpus for j in jr)
            sl = sum(j.slow_place_h * j.gpus for j in jr)
            out["goodput.slowdown.nvlink"] = sn / installed
            out["goodput.slowdown.placement"] = sl / installed
            buckets["nvlink_slowdown"] = sn
            buckets["placement"] = sl
        st = sum(j.slow_thermal_h * j.gpus for j in jr)
        sfs = sum(j.slow_failslow_h * j.gpus for j in jr)
        sp = sum(j.slow_power_h * j.gpus for j in jr)
        sf = sum(j.slow_fabric_h * j.gpus for j in jr)
        out["goodput.slowdown.thermal"] = st / installed
        out["goodput.slowdown.fail_slow"] = sfs / installed
        out["goodput.slowdown.power"] = sp / installed
        out["goodput.slowdown.fabric"] = sf / installed
        buckets["thermal_slowdown"] += st
        buckets["fail_slow"] += sfs
        buckets["power_cap"] += sp
        buckets["fabric_slowdown"] += sf
        if self.storage is not None:
            sd = sum(j.slow_data_h * j.gpus for j in jr)
            so = sum(j.slow_outage_h * j.gpus for j in jr)
            out["goodput.slowdown.data"] = sd / installed
            out["goodput.slowdown.storage_outage"] = so / installed
            buckets["data_stall"] = sd
            buckets["storage_outage"] = so + blocked
        for cause, h in sorted(self.model.recorder.state_hours_by_cause("down").items()):
            g = h * self.gpn
            out[f"goodput.down.{cause}"] = g / installed
            buckets[mech(cause)] += g
        gpus = {j.jid: j.gpus for j in jr}
        lost: dict[str, float] = {}
        for jid, _name, _t, cause, _planned, lost_h, _n in self.interruptions:
            lost[cause] = lost.get(cause, 0.0) + lost_h * gpus[jid]
        for cause, g in sorted(lost.items()):
            out[f"goodput.lost.{cause}"] = g / installed
            buckets[mech(cause)] += g
        buckets["checkpoint"] = ck
        buckets["restart"] = rs
        if self._has_elastic:
            buckets["reconfigure"] = rc
        buckets["idle"] = idle
        for k, v in buckets.items():
            out[f"goodput.mechanism.{k}"] = v / installed
        return out


JOB_COLUMNS = [
    "record", "job", "name", "gpus", "nodes", "work_h", "submit_h", "first_start_h", "end_h", "done", "kept_h",
    "lost_h", "made_h", "run_h", "checkpoint_h", "restart_h", "queue_wait_h", "interruptions",
    "planned_interruptions", "checkpoints", "ettr", "time_h", "cause", "planned",
]


QUEUE_BY_SIZE_COLUMNS = ["nodes_min", "nodes_max", "jobs", "started", "mean_wait_h", "p95_wait_h", "max_wait_h",
                         "still_queued", "longest_queued_h"]
ELASTIC_COLUMNS = ["time_h", "job", "name", "event", "cause", "replicas_before", "replicas_after", "replicas_full",
                   "reconfigure_h"]
STORAGE_JOB_COLUMNS = ["job", "name", "gpus", "read_gb_per_s", "data_stall_h", "data_stall_gpu_hours", "outage_h",
                       "outage_gpu_hours", "storage_stops"]
ADVISORY_COLUMNS = ["time_h", "job", "name", "nodes", "usable_nodes", "waited_h", "unreserved_h", "text"]


def _step_shares(bd: par.StepBreakdown) -> np.ndarray | None:
    """The components' shares of the step ``bd`` in :data:`STEP_COMPONENTS` order; None when the step
    time is not finite and positive."""
    t = bd.total_s
    if not (math.isfinite(t) and t > 0):
        return None
    return np.array([getattr(bd, f"{c}_s") for c in STEP_COMPONENTS]) / t


def _remember(job: Job, saved_h: float) -> None:
    """Keep a completed checkpoint in the job's history (by its retention policy, twin.model.checkpoints)."""
    hist = job.history
    if hist is None:
        ret = job.ckpt.retention
        hist = job.history = History(ret.keep_last, ret.persistent_every_h)
    hist.add(job.capture_h, saved_h)


def _restored(job: Job, now_h: float) -> None:
    """The job's running state is its newest kept checkpoint's (or none) again from ``now_h``: an
    interruption or a rollback lost what it computed since (twin.model.checkpoints.Lineage)."""
    newest = job.history.newest() if job.history is not None else None
    if job.lineage is None:
        job.lineage = Lineage()
    job.lineage.restore(newest[0] if newest is not None else None, now_h)


def job_has_no_checkpoint(ck: Checkpoint) -> bool:
    return ck.interval_h is None or (ck.size_gb == 0 and ck.write_h is None)
