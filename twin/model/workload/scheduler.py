"""The workload's scheduler: node pools (free nodes, hot spares), the queue (:mod:`twin.model.jobqueue`),
FIFO or EASY backfill with reservations, starvation advisories, and starting, completing and releasing jobs."""

from __future__ import annotations

import math

import numpy as np

from twin.model.jobqueue import ANY
from twin.model.workload.checkpointing import Checkpointing
from twin.model.workload.jobs import DONE, NO_NODES, QUEUED, RESTARTING, RUNNING, Job


class Scheduler(Checkpointing):
    """The workload's scheduler (a layer of :class:`twin.model.workload.Workload`)."""

    def _schedulable(self) -> int:
        return self.cluster.n_nodes - self.spare_target

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

    def _free_for(self, job: Job) -> np.ndarray:
        """Free nodes ``job`` may use: of its node pool, and not cut off a rail when it spans nodes."""
        return self.free.nodes(self._excl(job, job.spec.nodes_needed > 1))

    def _excl(self, job: Job, multi_node: bool) -> np.ndarray | None:
        """Nodes ``job`` may not use (True): outside its node pool (``pool``), or cut off a rail when it
        spans nodes; None when it may use any."""
        cut = self._cut_mask(multi_node)
        ex = job.spec.excl
        if ex is None:
            return cut
        return ex if cut is None else ex | cut

    def _fits_pool(self, job: Job) -> int:
        """Nodes ``job`` could start on now (of its node pool, ``pool``): free, and the hot spares it may use."""
        return len(self._free_for(job)) + len(self._spares_for(job))

    def _held_for(self, job: Job) -> int:
        """Nodes running jobs hold now that ``job`` could use once they end (those of its node pool, ``pool``)."""
        held = self.owner >= 0
        if job.spec.excl is not None:
            held = held & ~job.spec.excl
        return int(np.count_nonzero(held))

    def _spares_for(self, job: Job) -> np.ndarray:
        """Hot spares a queued job may start on: a requeued job (it lost a node with no replacement) may
        restart on them (they are kept for its kind; idle spares must not hold it back until the spare
        pool is full again, later returns top it up); a new job may not."""
        if not job.started_once or not len(self.spares):
            return np.zeros(0, dtype=np.int64)
        return self.spares.nodes(self._excl(job, job.spec.nodes_needed > 1))

    def _cut_mask(self, multi_node: bool) -> np.ndarray | None:
        """Nodes a job may not use because they are cut off a rail (multi-node jobs only; None while
        no node is cut)."""
        cl = self.cluster
        return cl.cut_count > 0 if multi_node and cl.n_cut else None

    def _submit(self, job: Job) -> None:
        job.queued_at = self._env._now
        self.jobs.append(job)
        self._by_id[job.spec.jid] = job
        self._enqueue(job)
        self._schedule()

    def _enqueue(self, job: Job) -> None:
        self.queue.add(job, max(0.0, job.spec.work_h - job.progress_h))

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
            chosen: list[int] = pool[order[:k]].tolist()
            return chosen
        first: list[int] = pool[:k].tolist()
        return first

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
        head_ex: np.ndarray | None = None
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
                    i = 1 if job.spec.nodes_needed > 1 else 0
                    fits = (f1, fm)[i] + ((s1, sm)[i] if job.started_once else 0)
                    if job.spec.excl is not None:  # only its node pool's nodes
                        fits = self._fits_pool(job)
                    if job.spec.unit > 1 and job.spec.nodes_needed <= fits:  # tp groups in whole units per domain
                        fits = self._domain_fit(job)
                    if job.spec.nodes_needed <= fits:
                        self._start_from_pools(job)
                        continue
                    if job.spec.rn and fits // job.spec.rn >= job.spec.min_rep:  # elastic: start on the whole replicas that fit
                        self._start_from_pools(job, fits // job.spec.rn * job.spec.rn)
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
                    head_ex = job.spec.excl
                    continue
                # a head of one node pool: a job of another pool takes none of its nodes, so the index may not
                # judge by the head's spare nodes; the estimate below does (and hides what it refuses: while such
                # a head waits, a pass may look at every queued job that fits by count)
                job = q.first((f1, fm), (s1, sm), extra if head_ex is None else big, limit_h)
                if job is None:
                    return
                if job.spec.excl is not None and self._fits_pool(job) < job.spec.nodes_needed:
                    q.hide(job)  # fits by count, not in its node pool
                    hidden.append(job)
                    continue
                if job.spec.unit > 1 and self._domain_fit(job) < job.spec.nodes_needed:  # fits by count, not by domain
                    q.hide(job)
                    hidden.append(job)
                    continue
                # EASY backfill: must not delay the head's reservation (a job confined to another node pool
                # than the head's takes none of the head's nodes)
                est_end = now + self._remaining_h(job, 1.0)
                takes = job.spec.nodes_needed
                if head_ex is not None and job.spec.excl is not None and bool(job.spec.excl[~head_ex].all()):
                    takes = 0
                if est_end > shadow and takes > extra:
                    q.hide(job)
                    hidden.append(job)
                    continue
                if est_end > shadow:
                    extra -= takes
                self._start_from_pools(job)
        finally:
            for job in hidden:
                q.show(job)

    def _unbounded(self, head: Job) -> bool:
        """True when the running jobs' ends cannot free enough nodes for ``head`` (as
        :meth:`_reservation` returning None): the nodes it may use now plus all allocated nodes are
        fewer than it needs."""
        return self._fits_pool(head) + self._held_for(head) < head.spec.nodes_needed

    def _note_unreserved(self, job: Job | None) -> None:
        """``job`` is now the head of the queue with no bound on its start (None: no such head): end
        the previous head's spell, start this one's and arm the advisory for when its hours without a
        bound reach ``starvation_advisory_h``."""
        cur = self._unreserved
        if cur is job:
            return
        now = self._env._now
        if cur is not None:
            cur.acct.unreserved_h += now - self._unreserved_since
            self._starve_timer.cancel()
        self._unreserved = job
        if job is not None:
            self._unreserved_since = now
            if not job.advised:
                self._starve_timer.set(now + max(0.0, self.spec.scheduler.starvation_advisory_h - job.acct.unreserved_h))

    def _starving(self) -> None:
        """The advisory: the head job has had no bound on its start for the stated hours."""
        job = self._unreserved
        assert job is not None
        job.advised = True
        now = self._env._now
        hours = job.acct.unreserved_h + now - self._unreserved_since
        usable = len(self._free_for(job)) + self._held_for(job)
        text = (f"job {job.spec.name!r} (id {job.spec.jid}, {job.spec.nodes_needed} nodes) has waited {now - job.spec.submit_h:.1f} h, "
                f"{hours:.1f} h of them with no reservation: only {usable} nodes are up and schedulable for it "
                f"(later jobs backfill meanwhile)")
        self.advisories.append((now, job.spec.jid, job.spec.name, job.spec.nodes_needed, usable, now - job.spec.submit_h, hours, text))

    def _start_from_pools(self, job: Job, k: int = 0) -> None:
        """Start ``job`` on nodes picked from the free pool, with the hot spares if it needs them and
        may use them (a requeued job); on ``k`` nodes when given (an elastic job's whole replicas that
        fit), else all it needs."""
        k = k or job.spec.nodes_needed
        if job.spec.unit > 1:  # in whole units per NVLink domain (checked by _schedule)
            assert self.domains is not None
            self._start(job, self.domains.pick(self._domain_pool(job), k, job.spec.unit))
            return
        pool = self._free_for(job)
        if k > len(pool):
            spares = self._spares_for(job)
            if len(spares):
                pool = np.concatenate((pool, spares))
        self._start(job, self._pick_nodes(job, k, pool))
        if k < job.spec.nodes_needed:
            self._shrunk[job.spec.jid] = job
            self._elastic_event(job, "start", None, job.spec.nodes_needed // job.spec.rn)

    def _domain_pool(self, job: Job) -> np.ndarray:
        """The sorted nodes ``job`` may start on: free, and the hot spares when it may use them."""
        pool = self._free_for(job)
        spares = self._spares_for(job)
        return np.sort(np.concatenate((pool, spares))) if len(spares) else pool

    def _domain_fit(self, job: Job) -> int:
        """Nodes ``job`` (tp groups spanning nodes) could start on now in whole units per NVLink domain."""
        assert self.domains is not None
        return self.domains.usable(self._domain_pool(job), job.spec.unit)

    def _remaining_h(self, job: Job, rate: float) -> float:
        """Expected hours to the job's end without failures: its remaining work at ``rate`` plus the pauses
        of the checkpoints still to come (a sync write, or an async write's stall; the final one too), at
        the write time of now, and a restart still to come or under way. (The backfill estimate: leaving
        these out let a backfilled job run past the head job's reservation with no failure at all.)"""
        ran = job.rate * (self._env._now - job.last_t) if job.state == RUNNING else 0.0  # (not yet advanced)
        left = max(0.0, job.spec.work_h - job.progress_h - ran)
        hours = left / rate
        if job.state == RESTARTING:  # the rest of its restart
            hours += max(0.0, job.restart_until - self._env._now)
        elif job.started_once and job.state == QUEUED:  # a requeued job starts with a restart
            hours += self._restart_h(job)
        ck = job.spec.ckpt
        if ck.interval_h is not None and left > 0:
            n = math.ceil((left + job.since_restart_h + ran) / ck.interval_h - 1e-9)  # to come, the final one
            w = self._write_time_h(job)  # (the final checkpoint is a sync write)
            hours += w + (n - 1) * ck.pause_h(w)
        return hours

    def _reservation(self, head: Job) -> tuple[float | None, int]:
        """EASY: the time the head job can start (from running jobs' expected ends) and how many
        nodes are spare at that time."""
        avail = self._fits_pool(head)
        ends = []
        ex = head.spec.excl  # (a head of one node pool counts only its pool's nodes)
        for j in self.allocated.values():
            self.queue.ops += 1
            k = len(j.nodes) if ex is None else len(j.nodes) - int(np.count_nonzero(ex[j.nodes]))
            if k:
                ends.append((self._env._now + self._remaining_h(j, j.rate if j.rate > 0 else 1.0), k))
        ends.sort()
        for t, k in ends:
            avail += k
            if avail >= head.spec.nodes_needed:
                return t, avail - head.spec.nodes_needed
        return None, 0

    def _start(self, job: Job, nodes: list[int]) -> None:
        self.queue.remove(job)
        if job is self._unreserved:
            self._note_unreserved(None)
        arr = np.array(nodes, dtype=np.int64)
        arr.sort()
        self.spares.discard_many(arr)
        self.free.discard_many(arr)
        self.owner[arr] = job.spec.jid
        job.nodes = arr
        self.allocated[job.spec.jid] = job
        job.acct.wait_h += self._env._now - job.queued_at
        job.last_t = self._env._now
        if job.started_once:
            self._begin_restart(job)
        else:
            job.started_once = True
            job.acct.first_start_h = self._env._now
            self._begin_running(job)

    def _complete(self, job: Job) -> None:
        self._end_io(job)
        job.state = DONE
        if job.timer is not None:
            job.timer.cancel()
        job.acct.end_h = self._env._now
        job.saved_h = job.progress_h
        job.history = job.lineage = None  # (no rollback of a finished job)
        self._set_util(job, 0.0)
        self._release(job)
        self._shrunk.pop(job.spec.jid, None)
        del self._by_id[job.spec.jid]  # looked up only while it holds nodes (a trace brings millions of jobs)
        # a finished job keeps only its record for the jobs table: its timers (each with a closure over the job)
        # go, unless an async write's end is still due (it ends the write's storage transfer)
        job.timer = None
        if job.saver is not None and not job.saver.pending:
            job.saver = None
        if job.spec.repeat:
            sp = job.spec  # (a repeat is rigid: no elastic replicas)
            self._submit(self._new_job(sp.name, sp.gpus, sp.work_h, self._env._now, sp.priority, sp.ckpt, sp.step, True,
                                       data_gbs=sp.data_gbs, pool=sp.pool))
        self._schedule()

    def _release(self, job: Job) -> None:
        self.allocated.pop(job.spec.jid, None)
        nodes = job.nodes
        self.owner[nodes] = -1
        up = nodes[self.cluster.down_count[nodes] == 0]
        # in node order, as _node_available one by one: the hot-spare pool is topped up first
        top = max(0, min(len(up), self.spare_target - len(self.spares)))
        if top:
            self.spares.add_many(up[:top])
        self.free.add_many(up[top:])
        job.nodes = NO_NODES  # (shared: a trace keeps a million finished jobs for the jobs table)
        job.load_memo = job.write_memo = None  # (nor their last node arrays and write times)
