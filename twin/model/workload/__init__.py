"""Training workload: job queue, scheduler, checkpoint/restart, hot spares (model.md §7, §8).

The package's rooms: ``jobs`` (the job record and its states), ``pools`` (node pools), ``base`` (the
state the layers share), ``progress`` (progress and rates; the rate functions are
:mod:`twin.physics.jobrate`'s), ``checkpointing`` (checkpoints and restarts), ``scheduler`` (pools,
queue, reservations, backfill), ``elastic`` (elastic jobs), ``interruptions`` (the bus's node events,
rollbacks), ``sources`` (listed, synthetic and trace jobs), ``results`` (tables and metrics) and
``component`` (:class:`Workload`, wiring them to the bus).

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

from twin.model.workload.component import Workload
from twin.model.workload.jobs import (CKPT, DONE, QUEUED, RECONF, RESTARTING, RUNNING, STEP_COLUMNS, STEP_COMPONENTS,
                                      SUBMIT_PRIORITY, Interruption, Job, JobAccount, JobSpec, job_has_no_checkpoint)
from twin.model.workload.pools import NodePool
from twin.model.workload.results import (ADVISORY_COLUMNS, ELASTIC_COLUMNS, JOB_COLUMNS, QUEUE_BY_SIZE_COLUMNS,
                                         STORAGE_JOB_COLUMNS)
from twin.physics.jobrate import job_rate, parallel_breakdown, parallel_rate

__all__ = [
    "ADVISORY_COLUMNS", "CKPT", "DONE", "ELASTIC_COLUMNS", "JOB_COLUMNS", "QUEUED", "QUEUE_BY_SIZE_COLUMNS", "RECONF",
    "RESTARTING", "RUNNING", "STEP_COLUMNS", "STEP_COMPONENTS", "STORAGE_JOB_COLUMNS", "SUBMIT_PRIORITY",
    "Interruption", "Job", "JobAccount", "JobSpec", "NodePool", "Workload", "job_has_no_checkpoint", "job_rate",
    "parallel_breakdown", "parallel_rate",
]
