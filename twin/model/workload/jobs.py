"""A training job's records: its frozen specification (:class:`JobSpec`), its account of hours
(:class:`JobAccount`) and its state (:class:`Job`, holding both), the job states, and the interruption record."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from operator import attrgetter
from typing import Final, NamedTuple, Protocol

import numpy as np

from twin.model.causes import DownCause
from twin.model.checkpoints import History, Lineage
from twin.model.component import Service
from twin.model.engine import Channel, Timer
from twin.physics import parallel as par
from twin.scenario.workload import Checkpoint, StepModel

QUEUED, RESTARTING, RUNNING, CKPT, DONE = "queued", "restarting", "running", "checkpointing", "done"
RECONF = "reconfiguring"  # an elastic job changing its replicas

NO_NODES = np.zeros(0, dtype=np.int64)
NO_NODES.flags.writeable = False  # shared by every job without nodes (a job's array is replaced, never changed)

SUBMIT_PRIORITY = 0.5
"""SimPy priority of a trace row's submission after the first: between URGENT (0) and NORMAL (1), so
that it comes, as if it had been scheduled when the model was built, before every ordinary event
scheduled later for the same instant (the rows are created one at a time as they are submitted)."""


class Interruption(NamedTuple):
    """A row of the workload's interruption records (``Workload.interruptions``; the ``jobs`` table's
    interruption rows): the job, when (h), the cause (a :class:`twin.model.causes.DownCause`: its kind, the part,
    planned or not; the tables write its label), planned or not (for the job: a planned drain), the progress
    lost (ideal hours) and the nodes the job held (0: a queued job's rollback)."""

    jid: int
    name: str
    time_h: float
    cause: DownCause
    planned: bool
    lost_h: float
    nodes: int


@dataclass(frozen=True, slots=True)
class JobSpec:
    """What a job is, fixed when it is submitted: its id and name, its size (GPUs, and nodes), its work
    (ideal hours: wall hours at full speed on all its GPUs), submission time (h) and priority, its
    checkpoint and step models, and what the workload derives from them at submission."""

    jid: int
    name: str
    gpus: int
    nodes_needed: int
    work_h: float
    submit_h: float
    priority: int
    ckpt: Checkpoint
    step: StepModel
    repeat: bool = False  # resubmitted when it completes
    # training-data reads (twin.model.storage): demand at full speed after the node caches, GB/s (0: none)
    data_gbs: float = 0.0
    unit: int = 1  # NVLink domains (twin.model.domains): nodes per placement unit of its tp groups
    # elastic data parallelism (rn = 0: a rigid job): replica nodes, fewest replicas, pause per change (h)
    rn: int = 0
    min_rep: int = 0
    reconf_pause_h: float = 0.0
    # its node pool (workload.jobs.<i>.pool; None: any node) and the nodes outside it (True; None: any node,
    # also when the pool is the whole hall), one array per pool shared by its jobs
    pool: str | None = None
    excl: np.ndarray | None = None


@dataclass(slots=True)
class JobAccount:
    """Where a job's hours went (hours; multiply by its GPUs for GPU-hours), read by the result tables and
    the forecast's observer; the state changes of :class:`Job` add to it."""

    first_start_h: float = math.nan
    end_h: float = math.nan
    run_h: float = 0.0
    ckpt_h: float = 0.0
    restart_h: float = 0.0
    lost_h: float = 0.0
    made_h: float = 0.0  # all progress ever made (kept + lost)
    # the running time lost to a rate below 1, split by the sequential rule (progress.Progress._rate_on_nodes):
    # placement, thermal speed, fail-slow parts' (health's degraded parts), the power chain's, NVLink, the
    # fabric, then the data stall
    slow_place_h: float = 0.0  # a placement whose NVLink blocks are smaller than the layout's domain
    slow_thermal_h: float = 0.0
    slow_failslow_h: float = 0.0
    slow_power_h: float = 0.0
    slow_nvlink_h: float = 0.0  # degraded NVLink (switch trays down)
    slow_fabric_h: float = 0.0
    slow_data_h: float = 0.0  # running time lost to a data share below the demand
    slow_outage_h: float = 0.0  # running time lost to a storage outage (a data-reading job stalled)
    blocked_h: float = 0.0  # hours stopped by storage outages while checkpointing or restarting
    storage_stops: int = 0  # storage outages that stopped the job
    # a layout job's step components' shares integrated over its running hours (the run-time limiter),
    # with the step time so integrated (s·h)
    # (kept in Python floats: nine IEEE multiplies and adds at each progress update, as numpy's ``acc += dt * vec``
    # would make them, without its two array calls; read as an array through ``bd_acc``)
    bd_sum: list[float] | None = None
    step_acc: float = 0.0
    wait_h: float = 0.0
    interruptions: int = 0
    planned_interruptions: int = 0
    checkpoints: int = 0
    unreserved_h: float = 0.0  # hours as the head of the queue with no bound on its start
    reconfig_h: float = 0.0  # elastic: hours paused for reconfiguration (share of its nodes held)

    @property
    def bd_acc(self) -> np.ndarray | None:
        """The step components' shares integrated over the running hours (h, in :data:`STEP_COMPONENTS` order),
        None before the job's first running hours on a finite step."""
        return None if self.bd_sum is None else np.array(self.bd_sum)
    reduced_h: float = 0.0  # elastic: wall hours running below full size
    kept_h: float = 0.0  # elastic: progress made while below full size (ideal hours)


@dataclass(slots=True)
class Job:
    """A job's state in the workload: its specification (``spec``), its account (``acct``) and what changes
    as it runs. Reading a field of the specification or the account on the job itself (``job.gpus``,
    ``job.run_h``) works too (read-only views, for tests and observers; the model reads ``job.spec`` and
    ``job.acct``)."""

    spec: JobSpec
    acct: JobAccount = field(default_factory=JobAccount)
    state: str = QUEUED
    nodes: np.ndarray = field(default_factory=lambda: NO_NODES)
    progress_h: float = 0.0
    saved_h: float = 0.0  # progress at the last completed checkpoint
    since_restart_h: float = 0.0  # progress since the last checkpoint start or restart
    rate: float = 0.0
    last_t: float = 0.0
    timer: Timer | None = None  # its one pending call (made at its first start: _timer_of)
    started_once: bool = False
    pending_save_h: float = math.nan  # async: progress that the in-flight write will save
    ckpt_waiting: bool = False  # a checkpoint fell due while the previous async write was in flight
    saver: Timer | None = None  # the end of its latest async write (a new write supersedes it)
    restart_until: float = 0.0  # end of the restart under way (h)
    read_until: float = 0.0  # end of the checkpoint read of the restart under way (h)
    read_timers: tuple[Timer, Timer] | None = None  # the read's beginning and end on the storage
    last_interrupt_h: float = math.nan
    writing: bool = False  # holds a share of the storage write bandwidth
    reading: bool = False  # holds a share of the storage read bandwidth
    # its rate by the sequential rule (progress.Progress._rate_on_nodes), each with a healthy fabric
    rate_thermal: float = 1.0  # rate at the thermal speed alone
    rate_failslow: float = 1.0  # rate at the thermal and fail-slow speeds
    rate_speed: float = 1.0  # rate at the node speed (thermal and power)
    rate_nvlink: float = 1.0  # rate at the node speed and the NVLink share
    rate_place: float = 1.0  # rate on its placement, full speed, healthy NVLink
    rate_fabric: float = 1.0  # rate before the data stall (with data_gbs only)
    rate_in_outage: bool = False  # its rate was set during a storage outage (its stall is the outage's)
    io_blocked: bool = False  # stopped by a storage outage (a checkpoint write or a restart's read waits)
    blocked_final: bool = False  # the blocked checkpoint is the job's final one
    async_retry: bool = False  # an async write failed in an outage: written again when the storage returns
    # a layout job's step (twin.physics.parallel) now
    bd: par.StepBreakdown | None = None
    bd_vec: tuple[float, ...] | None = None  # its components' shares of the step (STEP_COMPONENTS), None if infinite
    bd_nic: float = 0.0  # the NIC Gbit/s per GPU of its ideal step
    # its layout rates by their inputs (speeds, NIC, shares, NVLink block): the rates (r, nvlink, speed, thermal,
    # fail-slow, place), the step breakdown and its shares; Progress._rate_on_nodes reuses them for inputs seen
    # before (pure functions of the inputs for the job's step; a few inputs recur: its speeds before and after a
    # failure or a repair, its fabric share with and without a cut link)
    rate_memo: dict[tuple[float, float, float, int, float, float, float],
                    tuple[float, float, float, float, float, float, par.StepBreakdown,
                          tuple[float, ...] | None]] | None = None
    # the node array and utilisation of its last load write (Progress._set_util): while it holds that array (never
    # changed once published, and no other job's array holds its nodes) every node of it is at that load still
    load_memo: tuple[np.ndarray, float] | None = None
    # the storage's write bandwidth and writers of its last checkpoint write time, and that time (h):
    # Checkpointing._write_time_h reuses it while both are the same (the rest of its inputs never change)
    write_memo: tuple[float, int, float] | None = None
    queued_at: float = 0.0
    # the queue index (twin.model.jobqueue): slot in its bucket, work left when queued, queued or not
    qslot: int = -1
    qlb: float = 0.0
    queued: bool = False
    advised: bool = False  # starvation advisory issued
    last_reshape_h: float = math.nan  # elastic: its last change of replicas
    # for rollbacks (silent data corruption, twin.model.health; twin.model.checkpoints): the completed
    # checkpoints kept by the retention policy (made at the first), and the spans of wall time its running
    # state carries (None: one span since time 0, until its first restart)
    capture_h: float = 0.0  # capture time of the checkpoint being written
    # peer checkpoints (checkpoint.mode peer, twin.model.checkpoints.peer_copy_lost): the job's nodes when the
    # last one completed, the nodes lost since, the progress last drained to the storage, how many completed,
    # and whether the restart under way reads the storage (its peer copy lost)
    peer_holders: np.ndarray | None = None
    peer_gone: list[int] = field(default_factory=list)
    stored_h: float = 0.0
    peer_count: int = 0
    from_storage: bool = False
    history: History | None = None
    lineage: Lineage | None = None

    # the fields the queue reads (twin.model.jobqueue.QueuedJob), as plain properties
    @property
    def jid(self) -> int:
        return self.spec.jid

    @property
    def priority(self) -> int:
        return self.spec.priority

    @property
    def submit_h(self) -> float:
        return self.spec.submit_h

    @property
    def nodes_needed(self) -> int:
        return self.spec.nodes_needed


def _view(part: str, name: str) -> property:
    get = attrgetter(f"{part}.{name}")
    return property(lambda job: get(job), doc=f"``job.{part}.{name}`` (read-only)")


for _part, _cls in (("spec", JobSpec), ("acct", JobAccount)):
    for _f in fields(_cls):
        if not hasattr(Job, _f.name):
            setattr(Job, _f.name, _view(_part, _f.name))
Job.bd_acc = _view("acct", "bd_acc")  # type: ignore[attr-defined]  # (a property of the account, not a field)
del _part, _cls, _f


JOB: Final[Channel[Job]] = Channel(
    "job", "(job) the workload moved a job: start, checkpoint, interruption, restart, end (the workload)")
"""The bus topic of a job's state changes (published by the workload; observers such as the forecast's read
the job's typed records: ``job.spec``, ``job.acct``, ``job.state``, ``job.nodes``)."""



class JobRecords(Protocol):
    """What the workload offers its observers (the forecast's accounting): the typed records of every job and
    interruption so far, read-only, and which nodes a job holds."""

    @property
    def jobs(self) -> list[Job]:
        """Every job submitted so far, in submission order."""
        ...

    @property
    def interruptions(self) -> list[Interruption]:
        """Every interruption of a job so far, in time order."""
        ...

    def holds_any(self, jid: int, nodes: np.ndarray) -> bool:
        """True when job ``jid`` holds at least one of ``nodes`` now."""
        ...


JOB_RECORDS: Final[Service[JobRecords]] = Service(
    "job_records", "the jobs' and interruptions' typed records, read-only (twin.model.workload.Workload)")
"""The service of the workload's records for observers that change nothing (declared with its provider, as
``IT_POWER``: no type-only cycle)."""

STEP_COMPONENTS = ("compute", "tp", "pp", "bubble", "dp", "compress", "throttle", "cp", "ep")
"""The components of a layout job's step (twin.physics.parallel.StepBreakdown, without ``_s``)."""
STEP_COLUMNS = ["job", "name", "gpus", "tp", "pp", "dp", "ideal_step_s", "mean_step_s", "run_h",
                *(f"share_{c}" for c in STEP_COMPONENTS), "limiter"]


def step_shares(bd: par.StepBreakdown) -> tuple[float, ...] | None:
    """The components' shares of the step ``bd`` in :data:`STEP_COMPONENTS` order (each component's time over
    the step time, as floats); None when the step time is not finite and positive."""
    t = bd.total_s
    if not (math.isfinite(t) and t > 0):
        return None
    return tuple((np.array([getattr(bd, f"{c}_s") for c in STEP_COMPONENTS]) / t).tolist())


def job_has_no_checkpoint(ck: Checkpoint) -> bool:
    """True when the job writes no checkpoint it could restart from (none, or one of no size and no
    stated write time)."""
    return ck.interval_h is None or (ck.size_gb == 0 and ck.write_h is None)


def remember(job: Job, saved_h: float) -> None:
    """Keep a completed checkpoint in the job's history (by its retention policy, twin.model.checkpoints)."""
    hist = job.history
    if hist is None:
        ret = job.spec.ckpt.retention
        hist = job.history = History(ret.keep_last, ret.persistent_every_h)
    hist.add(job.capture_h, saved_h)


def restored(job: Job, now_h: float) -> None:
    """The job's running state is its newest kept checkpoint's (or none) again from ``now_h``: an
    interruption or a rollback lost what it computed since (twin.model.checkpoints.Lineage)."""
    newest = job.history.newest() if job.history is not None else None
    if job.lineage is None:
        job.lineage = Lineage()
    job.lineage.restore(newest[0] if newest is not None else None, now_h)
