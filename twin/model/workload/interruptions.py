"""Interruptions of the workload's jobs: the bus's node, fabric, storage and NVLink events, the loss of
progress since the last checkpoint and the replacement of lost nodes, and the JOBS service's rollback."""

from __future__ import annotations

import math

import numpy as np

from twin import kernels_lazy
from twin.model.causes import DownCause
from twin.model.workload.elastic import ElasticJobs
from twin.model.workload.jobs import (CKPT, DONE, QUEUED, RESTARTING, RUNNING, Interruption, Job, job_has_no_checkpoint,
                                      restored)
from twin.model.checkpoints import peer_copy_lost
from twin.physics.storage import data_limited_rate

# the compiled kernels, imported at their first use (twin.kernels_lazy: a run without them imports no numba)
unique_ints = kernels_lazy.function("twin.kernels_events", "unique_ints", globals())


class Interruptions(ElasticJobs):
    """Interruptions of the workload's jobs (a layer of :class:`twin.model.workload.Workload`)."""

    def _interrupt(self, job: Job, cause: DownCause, planned: bool, lost_nodes: list[int]) -> None:
        """Lose work since the last checkpoint; replace lost nodes from spares or free nodes, else
        requeue the job; then restart.

        Several losses at the same instant (a leaf switch cutting many of the job's nodes one by
        one, a rack losing power) are one interruption: the later ones only swap nodes. An elastic
        job that loses nodes swaps or shrinks instead (:meth:`_reshape`) while it keeps enough
        replicas."""
        if job.spec.rn and lost_nodes and self._reshape(job, cause, lost_nodes):
            return
        self._advance(job)
        now = self._env._now
        same_instant = job.last_interrupt_h == now
        if job.spec.ckpt.mode == "peer" and job.peer_holders is not None:
            job.peer_gone.extend(lost_nodes)
            job.from_storage = peer_copy_lost(job.peer_holders, job.peer_gone)
            if job.from_storage:   # both holders of a shard are gone: back to the last drained checkpoint
                job.saved_h = min(job.saved_h, job.stored_h)
        lost = job.progress_h - job.saved_h
        job.acct.lost_h += lost
        job.progress_h = job.saved_h
        restored(job, now)
        job.since_restart_h = 0.0
        job.pending_save_h = math.nan
        job.ckpt_waiting = False
        job.io_blocked = job.async_retry = False
        self._end_io(job)
        if not same_instant:
            job.acct.interruptions += 1
            job.acct.planned_interruptions += int(planned)
            self.interruptions.append(Interruption(job.spec.jid, job.spec.name, now, cause, planned, lost, len(job.nodes)))
        elif lost > 0.0:   # a peer copy lost by a later loss of the same instant: the same interruption loses more
            for k in range(len(self.interruptions) - 1, -1, -1):
                rec = self.interruptions[k]
                if rec.jid == job.spec.jid:
                    self.interruptions[k] = rec._replace(lost_h=rec.lost_h + lost)
                    break
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
            if self.owner[n] == job.spec.jid:
                self.owner[n] = -1
        need = (len(nodes) if job.spec.rn else job.spec.nodes_needed) - len(keep)  # an elastic job: its replicas now
        job.nodes = keep
        kept_only = True  # (keep: of the job's nodes)
        if job.spec.unit > 1 and need:  # tp groups stay in whole units per NVLink domain
            keep, parts, ok = self._domain_replacement(job, keep, need)
            repl = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
            got = need if ok else -1
            kept_only = False
        else:
            repl = self._take_from_pools(need, job)
            got = len(repl)
        if got == need:
            for n in repl.tolist():
                self._remove_from_pools(n)
            self.owner[repl] = job.spec.jid
            if len(repl) == 1:  # slot the replacement into the sorted kept nodes (no full sort)
                at = int(keep.searchsorted(repl[0]))
                job.nodes = np.concatenate((keep[:at], repl, keep[at:]))
            elif len(repl):
                job.nodes = np.sort(np.concatenate((keep, repl)))
            else:
                job.nodes = keep
            memo = job.load_memo
            if kept_only and memo is not None and memo[0] is nodes:
                # the new array's load: its kept nodes are at the load of the old array's write just made
                # (Job.load_memo), and a replacement at it too (read in the cluster: an idle node's) makes every
                # node of it so; the restart's load write of that load (_begin_restart) then changes no node
                # (the cluster would compare them all and find none changed) and is not asked
                util = memo[1]
                if not len(repl) or all(x == util for x in self.cluster.node_util[repl].tolist()):
                    job.load_memo = (job.nodes, util)
            job.last_t = self._env._now
            self._begin_restart(job)
        else:
            job.state = QUEUED
            self._shrunk.pop(job.spec.jid, None)
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
        cut = self._excl(job, True)
        got = self.domains.complete(keep, need, [self.spares.nodes(cut), self.free.nodes(cut)], job.spec.unit)
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

    def _on_node_lost(self, node: int, cause: DownCause) -> None:
        self._remove_from_pools(node)
        jid = int(self.owner[node])
        if jid >= 0:
            job = self._job(jid)
            planned = cause.planned
            self._interrupt(job, cause, planned, [node])
        # refill the spare pool from free nodes if it dropped below target
        while len(self.spares) < self.spare_target and len(self.free):
            n = int(self.free.nodes()[0])
            self.free.discard(n)
            self.spares.add(n)

    def _on_node_cut(self, node: int, cause: DownCause) -> None:
        jid = int(self.owner[node])
        if jid >= 0:
            job = self._job(jid)
            if job.spec.nodes_needed > 1:
                self._interrupt(job, cause, False, [node])

    def _on_node_up(self, node: int, cause: DownCause) -> None:
        if self.cluster.is_up(node) and self.owner[node] < 0 and node not in self.spares and node not in self.free:
            self._node_available(node)
        self._schedule()

    def _on_transient(self, node: int, cause: DownCause) -> None:
        jid = int(self.owner[node])
        if jid >= 0:
            self._interrupt(self._job(jid), cause, False, [])

    def _on_link_flap(self, node: int, cause: DownCause) -> None:
        """A compute-fabric link of ``node`` flapped: its job crashes if it spans several nodes (a job on
        one node talks over NVLink only, as for a cut link: ``_on_node_cut``)."""
        jid = int(self.owner[node])
        if jid >= 0 and self._job(jid).nodes_needed > 1:
            self._interrupt(self._job(jid), cause, False, [])

    def _on_fabric_flap(self, group: int, cause: DownCause) -> None:
        """An uplink of a leaf of ``group`` flapped: every allocated job that spans several leaf groups
        and has a node in ``group`` crashes (in job order)."""
        fabric = self.fabric
        assert fabric is not None  # leaf groups flap only when the network component exists
        hit = [job for jid, job in sorted(self.allocated.items())
               if fabric.spans_groups(job.nodes) and bool((fabric.node_group[job.nodes] == group).any())]
        for job in hit:
            self._interrupt(job, cause, False, [])

    def _on_speed(self, nodes: np.ndarray) -> None:
        by_id = self._by_id  # (= self._job)
        if len(nodes) == 1:  # (a single GPU's crossing: its node's job, without np.unique)
            jid = int(self.owner[nodes[0]])
            if jid >= 0:
                self._rerate(by_id[jid])
            return
        own = self.owner[nodes]
        # each job once, in the order of their ids (np.unique; compiled in a hall with a thermal model, whose
        # kernels are loaded)
        rerate = self._rerate
        for jid in (unique_ints(own) if "thermal" in self.cluster.speed_caps else np.unique(own)).tolist():
            if jid >= 0:
                rerate(by_id[jid])

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
                        job.acct.storage_stops += 1
                    else:  # a sync (or final) write fails: the job waits, then writes again
                        self._block(job, job.progress_h >= job.spec.work_h)
                elif (job.reading and job.state == RESTARTING and not job_has_no_checkpoint(job.spec.ckpt)
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
        for job in [j for j in self.allocated.values() if j.spec.data_gbs and j.state == RUNNING]:
            # re-rate only the jobs whose rate moves: a job that still gets its demand keeps its timer as armed
            share = st.data_share(job.spec.jid, job.spec.data_gbs * job.rate_fabric)
            if (data_limited_rate(job.rate_fabric, job.spec.data_gbs, share) != job.rate
                    or job.rate_in_outage != (not st.available)):
                self._rerate(job)

    def _on_nvlink(self, domain: int) -> None:
        """An NVLink domain's bandwidth share changed: re-rate the jobs with nodes in it (in job order)."""
        assert self.domains is not None
        dn = self.domains.domain_nodes
        for job in sorted(self.allocated.values(), key=lambda j: j.spec.jid):
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

    def job_on(self, node: int) -> int:
        """Id of the job holding ``node`` now (running, checkpointing or restarting), or -1."""
        return int(self.owner[node])

    def rollback(self, jid: int, before_h: float, node: int, cause: DownCause) -> tuple[float, int] | None:
        """Roll job ``jid`` back to its last checkpoint whose state was captured before ``before_h`` (the
        checkpoints captured since hold corrupt state and are dropped; none left: progress 0) and
        restart it, swapping ``node`` out if the job holds it (an interruption with ``cause``). Returns
        (the progress lost in ideal hours, the job's GPUs); None when the job is done or gone."""
        job = self._by_id.get(jid)
        if job is None or job.state == DONE:
            return None
        newest = job.history.drop_from(before_h) if job.history is not None else None
        target = newest[1] if newest is not None else 0.0
        before = job.acct.lost_h
        job.saved_h = target
        if job.state == QUEUED:  # holds no nodes: its restart is still to come, from the older checkpoint
            lost = job.progress_h - target
            job.acct.lost_h += lost
            job.progress_h = target
            restored(job, self._env._now)
            job.acct.interruptions += 1
            self.interruptions.append(Interruption(job.spec.jid, job.spec.name, self._env._now, cause, False, lost, 0))
            return lost, job.spec.gpus
        self._interrupt(job, cause, False, [node] if self.owner[node] == jid else [])
        return job.acct.lost_h - before, job.spec.gpus

    def discarded(self, jid: int, at_h: float) -> bool:
        """Whether job ``jid`` (running, restarting or queued) no longer holds the state it computed at
        ``at_h``: it restarted since from a checkpoint captured before then (its lineage,
        twin.model.checkpoints). False for a job done or gone (:meth:`rollback` says so)."""
        job = self._by_id.get(jid)
        if job is None or job.state == DONE or job.lineage is None:
            return False
        return not job.lineage.holds(at_h)
