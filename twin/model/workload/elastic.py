"""Elastic jobs (``elastic``): whole replicas swapped, shrunk and grown back, with a reconfiguration
pause at each change, and the ``elastic`` table's events."""

from __future__ import annotations

import math

import numpy as np

from twin.model.causes import DownCause
from twin.model.workload.jobs import RECONF, RESTARTING, RUNNING, Job
from twin.model.workload.scheduler import Scheduler


class ElasticJobs(Scheduler):
    """Elastic jobs (``elastic``) (a layer of :class:`twin.model.workload.Workload`)."""

    def _take_from_pools(self, k: int, job: Job) -> np.ndarray:
        """Up to ``k`` nodes for ``job``'s replacement or growth: hot spares first, then free nodes, lowest
        ids first (as a rigid job's replacement), of its node pool; not yet taken out of the pools."""
        parts = []
        got = 0
        ex = self._excl(job, job.spec.nodes_needed > 1)
        if k == 1:  # (one node, the common replacement: the first pool's lowest-numbered one, without listing them)
            for pool in (self.spares, self.free):
                node = pool.first(ex)
                if node >= 0:
                    return np.array([node], dtype=np.int64)
            return np.zeros(0, dtype=np.int64)
        for pool in (self.spares, self.free):
            if got == k:
                break
            take = pool.nodes(ex)[: k - got]
            parts.append(take)
            got += len(take)
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    def _reshape(self, job: Job, cause: DownCause, lost_nodes: list[int]) -> bool:
        """An elastic job lost ``lost_nodes``: swap in free nodes for them, else go on with the whole
        replicas its kept nodes (and any free ones) make, keeping its progress; then a reconfiguration
        pause (a restart under way starts over instead). False, changing nothing, when it would keep
        fewer than ``min_replicas`` (it is interrupted as a rigid job)."""
        nodes = job.nodes
        keep = nodes[~np.isin(nodes, lost_nodes)]
        want = len(nodes) - len(keep)
        if not want:
            return False
        avail = self._take_from_pools(want, job)
        if len(avail) < want:  # no replacement for them all: the whole replicas it can make
            r = (len(keep) + len(avail)) // job.spec.rn
            if r < job.spec.min_rep:
                return False
            size = r * job.spec.rn
            if size <= len(keep):
                self._return_nodes(keep[size:])  # the rest of the broken replicas (highest ids)
                keep, avail = keep[:size], avail[:0]
            else:
                avail = avail[: size - len(keep)]
        self._advance(job)
        self._set_util(job, 0.0)
        for n in lost_nodes:
            if self.owner[n] == job.spec.jid:
                self.owner[n] = -1
        self._end_io(job)  # a write under way is aborted; progress is kept
        job.pending_save_h = math.nan
        job.io_blocked = job.async_retry = False
        job.ckpt_waiting = False
        for n in avail.tolist():
            self._remove_from_pools(n)
        self.owner[avail] = job.spec.jid
        before = len(nodes) // job.spec.rn
        job.nodes = np.sort(np.concatenate((keep, avail)))
        self._elastic_event(job, "swap" if len(job.nodes) == len(nodes) else "shrink", cause, before)
        if len(job.nodes) < job.spec.nodes_needed:
            self._shrunk[job.spec.jid] = job
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
            want = job.spec.nodes_needed - len(job.nodes)
            avail = self._take_from_pools(want, job)
            k = len(avail) // job.spec.rn * job.spec.rn
            if not k:
                continue
            avail = avail[:k]
            self._advance(job)
            self._set_util(job, 0.0)
            for n in avail.tolist():
                self._remove_from_pools(n)
            self.owner[avail] = job.spec.jid
            before = len(job.nodes) // job.spec.rn
            job.nodes = np.sort(np.concatenate((job.nodes, avail)))
            self._elastic_event(job, "grow", None, before)
            if len(job.nodes) == job.spec.nodes_needed:
                del self._shrunk[jid]
            self._begin_reconfigure(job)

    def _elastic_event(self, job: Job, kind: str, cause: DownCause | None, before: int) -> None:
        """A row of the ``elastic`` table; changes of one job at one instant are one row (one pause)."""
        now = self._env._now
        after = len(job.nodes) // job.spec.rn
        ev = self.elastic_events
        if job.last_reshape_h == now and ev and ev[-1][1] == job.spec.jid and ev[-1][0] == now:
            row = ev[-1]
            row[6] = after
            if row[3] != "start":
                row[3] = "shrink" if after < row[5] else "grow" if after > row[5] else "swap"
            return
        job.last_reshape_h = now
        ev.append([now, job.spec.jid, job.spec.name, kind, "" if cause is None else cause.label, before, after, job.spec.nodes_needed // job.spec.rn,
                   job.spec.reconf_pause_h if kind != "start" else 0.0])

    def _begin_reconfigure(self, job: Job) -> None:
        """Pause the job for its reconfiguration (from now: changes at one instant pay one pause)."""
        job.state = RECONF
        job.last_t = self._env._now
        self._timer_of(job).set(self._env._now + job.spec.reconf_pause_h, lambda: self._reconfigured(job))

    def _reconfigured(self, job: Job) -> None:
        if job.state != RECONF:
            return
        self._advance(job)
        self._begin_running(job)
        if job.spec.jid in self._shrunk:
            self._schedule()  # it may grow now
