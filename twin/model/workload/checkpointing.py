"""Checkpoints and restarts of the workload's jobs: each job's timer (its next checkpoint or its end),
sync and async writes and the storage bandwidth they share, restarts with the checkpoint read, and the
retention history and lineage of each job (:mod:`twin.model.checkpoints`)."""

from __future__ import annotations

import math

from twin.model.engine import Timer
from twin.model.workload.jobs import CKPT, RESTARTING, RUNNING, Job, job_has_no_checkpoint, remember
from twin.model.workload.progress import Progress


class Checkpointing(Progress):
    """Checkpoints and restarts of the workload's jobs (a layer of :class:`twin.model.workload.Workload`)."""

    def _arm(self, job: Job) -> None:
        """(Re)schedule the job's next checkpoint start or completion at its current rate."""
        timer = job.timer or self._timer_of(job)
        rate = job.rate
        if job.state != RUNNING or rate <= 0:
            timer.cancel()
            return
        spec = job.spec
        to_done = spec.work_h - job.progress_h
        iv = spec.ckpt.interval_h
        # a checkpointing job also writes a final checkpoint at completion: the nearer of the two
        if iv is not None and not job.ckpt_waiting:
            to_ckpt = iv - job.since_restart_h
            target = to_ckpt if to_ckpt < to_done else to_done  # (= min(to_done, to_ckpt))
        else:
            target = to_done  # (= min(to_done, inf))
        t = self._env._now + (0.0 if 0.0 > target else target) / rate  # (= max(target, 0.0), NaN and -0.0 alike)
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
        spec = job.spec
        work_h = spec.work_h
        eps = 1e-9 * max(1.0, work_h)
        final = job.progress_h >= work_h - eps
        if final:
            job.progress_h = work_h
        iv = spec.ckpt.interval_h
        if iv is not None and (final or job.since_restart_h >= iv - eps):
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

    def _write_time_h(self, job: Job) -> float:
        st = self.storage
        bw = self.spec.storage.write_gb_per_s if st is None else st.write_gb_per_s
        writers = self.writers
        memo = job.write_memo  # (a function of these two for the job: its checkpoint, nodes and the per-node bandwidth are fixed)
        if memo is not None and memo[0] == bw and memo[1] == writers:
            return memo[2]
        w = job.spec.ckpt.write_time_h(bw, writers, job.spec.nodes_needed, self.spec.storage.node_write_gb_per_s)
        job.write_memo = (bw, writers, w)
        return w

    def _storage_down(self) -> bool:
        return self.storage is not None and not self.storage.available

    def _block(self, job: Job, final: bool) -> None:
        """Stop ``job`` until the storage returns (its checkpoint write, or its restart's read, cannot be
        made now): it holds its nodes idle; :meth:`_on_storage` retries."""
        self._end_io(job)
        if job.timer is not None:
            job.timer.cancel()
        if not job.io_blocked:
            job.acct.storage_stops += 1
        job.io_blocked = True
        job.blocked_final = final
        self._set_util(job, 0.0)

    def _start_checkpoint(self, job: Job, final: bool, retry: bool = False) -> None:
        ck = job.spec.ckpt
        mode = ck.mode
        job.ckpt_waiting = False
        st = self.storage
        peer = mode == "peer"
        if not peer and st is not None and not st.available:  # the write cannot start: it waits for the storage, then writes
            self._advance(job)
            job.state = CKPT
            if not final:
                job.pending_save_h = math.nan  # (an async write in flight failed too: _on_storage)
            if not retry:
                job.acct.checkpoints += 1
            self._block(job, final)
            return
        if job.writing or job.reading:
            self._end_io(job)
        if not peer:   # (a peer copy goes to a neighbour's memory, not the storage)
            self.writers += 1
            job.writing = True
        w = self._write_time_h(job)
        job.since_restart_h = 0.0
        save = job.progress_h
        now = job.capture_h = self._env._now
        if not retry:
            job.acct.checkpoints += 1
        # the write's transfer begins below, at this instant: the storage's change of the job's data demand
        # ending is taken with it (Storage.data_share's transfer_next; nothing reads the storage in between)
        transfer_next = st is not None and not peer
        timer = job.timer or self._timer_of(job)
        if mode != "async" or final:
            job.pending_save_h = math.nan  # (the final write supersedes an async write still in flight)
            job.state = CKPT
            if final:
                self._set_util(job, 0.0, transfer_next)  # (the pending call of _due is replaced by set: no cancel first)
            else:
                self._pause(job, w, transfer_next)
            timer.set(now + w, lambda: self._ckpt_done(job, save, final))
        else:
            stall = ck.async_fraction * w
            job.pending_save_h = save
            job.state = CKPT
            self._pause(job, stall, transfer_next)
            timer.set(now + stall, lambda: self._async_resume(job))
            saver = job.saver
            if saver is None:
                saver = job.saver = self.engine.timer()
            saver.set(now + w, lambda: self._async_saved(job))
        if transfer_next:  # (after the job stopped reading data: its demand is gone first)
            assert st is not None
            st.transfer_begins(job.spec.jid, True, ck.size_gb / (w * 3600.0) if w > 0 else 0.0)

    def _end_io(self, job: Job, share_next: bool = False) -> None:
        """Release the job's share of storage bandwidth (write finished or aborted). ``share_next``: the job's
        data demand is set next, at this instant (:meth:`twin.model.storage.Storage.transfer_ends`)."""
        if job.writing:
            self.writers -= 1
            job.writing = False
            if self.storage is not None:
                self.storage.transfer_ends(job.spec.jid, True, share_next and not job.reading)
        if job.reading:
            self.readers -= 1
            job.reading = False
            if self.storage is not None:
                self.storage.transfer_ends(job.spec.jid, False, share_next)

    def _ckpt_done(self, job: Job, save: float, final: bool) -> None:
        if job.state != CKPT:
            return
        # a write ended, its job running again below: its data demand is set next (_set_util → _data_rate →
        # data_share, nothing reading the storage in between), so the storage may take both changes at once
        self._end_io(job, not final and bool(job.spec.data_gbs))
        self._advance(job)
        job.saved_h = save
        remember(job, save)
        if job.spec.ckpt.mode == "peer":
            job.peer_holders = job.nodes.copy()
            job.peer_gone = []
            job.peer_count += 1
            if job.peer_count % job.spec.ckpt.storage_every == 0 or final:
                job.stored_h = save
        if final:
            self._complete(job)
            return
        job.state = RUNNING
        self._set_util(job, 1.0)
        self._arm(job)
        if job.spec.jid in self._shrunk:
            self._schedule()  # it may grow now

    def _async_resume(self, job: Job) -> None:
        if job.state != CKPT:
            return
        self._advance(job)
        job.state = RUNNING
        self._set_util(job, 1.0)
        self._arm(job)
        if job.spec.jid in self._shrunk:
            self._schedule()  # it may grow now

    def _async_saved(self, job: Job) -> None:
        # the write completes if it is the job's latest (a later write re-arms the saver: a restarted job
        # writes the same progress again) and was not aborted since it started (an interruption or a
        # final write clears pending_save_h)
        if not math.isnan(job.pending_save_h) and job.state in (RUNNING, CKPT):
            self._end_io(job)
            job.saved_h = job.pending_save_h
            remember(job, job.saved_h)
            job.pending_save_h = math.nan
            if job.ckpt_waiting:  # the checkpoint that fell due meanwhile starts now
                job.ckpt_waiting = False
                if job.state == RUNNING:
                    self._advance(job)
                    self._start_checkpoint(job, False)

    def _retry_async(self, job: Job) -> None:
        """Write again the async checkpoint that failed in an outage (its progress is still unsaved)."""
        job.async_retry = False
        if math.isnan(job.pending_save_h):
            return
        self._end_io(job)
        self.writers += 1
        job.writing = True
        w = self._write_time_h(job)
        if self.storage is not None:
            self.storage.transfer_begins(job.spec.jid, True, job.spec.ckpt.size_gb / (w * 3600.0) if w > 0 else 0.0)
        saver = job.saver
        if saver is None:
            saver = job.saver = self.engine.timer()
        saver.set(self._env._now + w, lambda: self._async_saved(job))

    def _begin_running(self, job: Job) -> None:
        job.state = RUNNING
        # a data-reading job's data share is taken once, by _set_util at load 1 (its rate with the share, as
        # _compute_rate's _data_rate would set it, then ask again of the same storage state: the same share)
        job.rate = self._compute_rate(job, False)
        self._set_util(job, 1.0)
        self._arm(job)

    def _read_time_h(self, job: Job) -> float:
        rs = self.spec.restart
        if rs.read_h is not None:
            return rs.read_h
        ck = job.spec.ckpt
        if job_has_no_checkpoint(ck):
            return 0.0
        if self._reads_peer(job):   # from the neighbour's memory: each node its shard at peer_gb_per_s
            return ck.size_gb / max(1, job.spec.nodes_needed) / ck.peer_gb_per_s / 3600.0
        st = self.storage
        bw = (self.spec.storage.read_gb_per_s if st is None else st.read_gb_per_s) / max(1, self.readers)
        node = self.spec.storage.node_read_gb_per_s
        if node is not None:
            bw = min(bw, job.spec.nodes_needed * node)
        return ck.size_gb / bw / 3600.0

    def _begin_restart(self, job: Job) -> None:
        job.state = RESTARTING
        timer = self._timer_of(job)
        timer.cancel()
        if self._storage_down() and not job_has_no_checkpoint(job.spec.ckpt) and not self._reads_peer(job):
            self._block(job, False)  # its checkpoint cannot be read now: the restart starts when the storage returns
            return
        self._end_io(job)
        self.readers += 1
        job.reading = True
        rs = self.spec.restart
        read_h = self._read_time_h(job)  # (one read time for the three uses: nothing it reads changes between them)
        dur = rs.restart_h(read_h, job.spec.gpus)  # (= self._restart_h(job))
        job.restart_until = self._env._now + dur
        job.read_until = self._env._now + rs.detection_h + rs.reschedule_h + read_h
        if (self.storage is not None and rs.read_h is None and not job_has_no_checkpoint(job.spec.ckpt)
                and not self._reads_peer(job)):
            # the read itself (after detection and rescheduling) is the storage's transfer
            if read_h > 0:
                until = job.restart_until
                t0 = self._env._now + rs.detection_h + rs.reschedule_h
                gbs = job.spec.ckpt.size_gb / (read_h * 3600.0)
                begin, end = job.read_timers or self._read_timers_of(job)
                begin.set(t0, lambda: self._read_window(job, until, gbs))
                end.set(t0 + read_h, lambda: self._read_window(job, until, 0.0))
        self._set_util(job, 0.0)
        timer.set(self._env._now + dur, lambda: self._restart_done(job))

    @staticmethod
    def _reads_peer(job: Job) -> bool:
        """Whether the job's restart reads its peer checkpoint (a neighbour's memory), not the storage."""
        return job.spec.ckpt.mode == "peer" and not job.from_storage and job.peer_holders is not None

    def _read_timers_of(self, job: Job) -> tuple[Timer, Timer]:
        """The job's timers of the beginning and end of its restart's checkpoint read on the storage (made
        at its first such restart; a restart started over re-arms them)."""
        timers = job.read_timers = (self.engine.timer(), self.engine.timer())
        return timers

    def _read_window(self, job: Job, until: float, gb_per_s: float) -> None:
        """The checkpoint read of the restart ending at ``until`` begins (at ``gb_per_s``) or ends (0) on the
        storage, if that restart is still under way."""
        st = self.storage
        if st is None or job.state != RESTARTING or job.restart_until != until or not job.reading:
            return
        if gb_per_s > 0:
            st.transfer_begins(job.spec.jid, False, gb_per_s)
        else:
            st.transfer_ends(job.spec.jid, False)

    def _restart_h(self, job: Job) -> float:
        """Hours a restart takes: detection, rescheduling, reading the checkpoint, initialising the ranks,
        warm-up (:meth:`twin.scenario.workload.Restart.restart_h`)."""
        return self.spec.restart.restart_h(self._read_time_h(job), job.spec.gpus)

    def _restart_done(self, job: Job) -> None:
        if job.state != RESTARTING:
            return
        # its data demand is set next, at this instant (_begin_running → _set_util → _data_rate → data_share,
        # nothing reading the storage in between): the storage may take the read's end with it
        self._end_io(job, bool(job.spec.data_gbs))
        self._advance(job)
        self._begin_running(job)
