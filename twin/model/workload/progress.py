"""Progress bookkeeping of the workload: piecewise-linear progress between events, the progress rate
of a job on its nodes (the step-time model of :mod:`twin.physics.jobrate`, the slowdown split by the
sequential rule) and the load its nodes carry (published as NODE_LOAD and JOB)."""

from __future__ import annotations

from twin import kernels_lazy
from twin.model.workload.base import WorkloadBase
from twin.model.workload.jobs import CKPT, RECONF, RESTARTING, RUNNING, STEP_COMPONENTS, Job, step_shares
from twin.physics import parallel as par
from twin.physics.jobrate import job_rate, parallel_breakdown, parallel_rate
from twin.physics.storage import data_limited_rate

# the compiled kernels, imported at their first use (twin.kernels_lazy: a run without them imports no numba)
min_of_at = kernels_lazy.function("twin.kernels_events", "min_of_at", globals())


_NINE_ZEROS = (0.0,) * 9
_RATE_MEMO_KEYS = 64  # inputs of a layout job's rates kept (Job.rate_memo; cleared when full)
assert len(STEP_COMPONENTS) == 9, "Progress._integrate_step adds nine components"


class Progress(WorkloadBase):
    """Progress bookkeeping of the workload (a layer of :class:`twin.model.workload.Workload`)."""

    def _advance(self, job: Job) -> None:
        now = self._env._now
        dt = now - job.last_t
        if dt > 0:
            if job.spec.rn:
                self._advance_elastic(job, dt)
            elif job.state == RUNNING:
                r = job.rate
                p = r * dt
                job.progress_h += p
                job.acct.made_h += p
                job.since_restart_h += p
                job.acct.run_h += dt
                if r != 1.0:
                    job.acct.slow_place_h += (1.0 - job.rate_place) * dt
                    job.acct.slow_thermal_h += (job.rate_place - job.rate_thermal) * dt
                    job.acct.slow_failslow_h += (job.rate_thermal - job.rate_failslow) * dt
                    job.acct.slow_power_h += (job.rate_failslow - job.rate_speed) * dt
                    job.acct.slow_nvlink_h += (job.rate_speed - job.rate_nvlink) * dt
                    if job.spec.data_gbs:  # the data stall comes last in the sequential rule
                        job.acct.slow_fabric_h += (job.rate_nvlink - job.rate_fabric) * dt
                        self._slow_data(job, (job.rate_fabric - r) * dt)
                    else:
                        job.acct.slow_fabric_h += (job.rate_nvlink - r) * dt
                bd = job.bd
                if bd is not None:
                    self._integrate_step(job, bd, dt)
            elif job.io_blocked:
                job.acct.blocked_h += dt
            elif job.state == CKPT:
                job.acct.ckpt_h += dt
            elif job.state == RESTARTING:
                job.acct.restart_h += dt
        job.last_t = now

    def _slow_data(self, job: Job, lost_h: float) -> None:
        """Running hours ``lost_h`` below the rate before the data stall: a storage outage's, or a data stall."""
        if job.rate_in_outage:
            job.acct.slow_outage_h += lost_h
        else:
            job.acct.slow_data_h += lost_h

    def _advance_elastic(self, job: Job, dt: float) -> None:
        """:meth:`_advance` of an elastic job: its hours count the share of its nodes it holds."""
        held = len(job.nodes) / job.spec.nodes_needed
        if job.state == RUNNING:
            p = job.rate * dt
            job.progress_h += p
            job.acct.made_h += p
            job.since_restart_h += p
            job.acct.run_h += dt * held
            r = job.rate / held if held > 0 else 1.0  # the rate on the nodes it holds (whole replicas)
            if r != 1.0:  # the slowdown split of _advance, on the share of its nodes it holds
                job.acct.slow_place_h += held * (1.0 - job.rate_place) * dt
                job.acct.slow_thermal_h += held * (job.rate_place - job.rate_thermal) * dt
                job.acct.slow_failslow_h += held * (job.rate_thermal - job.rate_failslow) * dt
                job.acct.slow_power_h += held * (job.rate_failslow - job.rate_speed) * dt
                job.acct.slow_nvlink_h += held * (job.rate_speed - job.rate_nvlink) * dt
                if job.spec.data_gbs:
                    rf = job.rate_fabric / held if held > 0 else 1.0
                    job.acct.slow_fabric_h += held * (job.rate_nvlink - rf) * dt
                    self._slow_data(job, held * (rf - r) * dt)
                else:
                    job.acct.slow_fabric_h += held * (job.rate_nvlink - r) * dt
            if job.bd is not None:
                self._integrate_step(job, job.bd, dt * held)
            if held < 1.0:
                job.acct.reduced_h += dt
                job.acct.kept_h += p
        elif job.io_blocked:
            job.acct.blocked_h += dt * held
        elif job.state == CKPT:
            job.acct.ckpt_h += dt * held
        elif job.state == RESTARTING:
            job.acct.restart_h += dt * held
        elif job.state == RECONF:
            job.acct.reconfig_h += dt * held

    @staticmethod
    def _integrate_step(job: Job, bd: par.StepBreakdown, dt: float) -> None:
        """Add ``dt`` running hours of the step ``bd`` to the job's run-time limiter: each component's
        share of the step and the step time, integrated over its running hours (a step that cannot
        complete, at speed 0 or on a cut fabric, adds nothing)."""
        vec = job.bd_vec
        if vec is not None:
            acct = job.acct
            # = acc += dt * vec on numpy arrays, in Python floats: the same multiply and add of each component,
            # without two array calls (STEP_COMPONENTS has nine: asserted below the class)
            a0, a1, a2, a3, a4, a5, a6, a7, a8 = acct.bd_sum or _NINE_ZEROS
            v0, v1, v2, v3, v4, v5, v6, v7, v8 = vec
            acct.bd_sum = [a0 + dt * v0, a1 + dt * v1, a2 + dt * v2, a3 + dt * v3, a4 + dt * v4, a5 + dt * v5,
                           a6 + dt * v6, a7 + dt * v7, a8 + dt * v8]
            acct.step_acc += dt * bd.total_s

    def _compute_rate(self, job: Job, data: bool = True) -> float:
        """Progress rate of the job on its nodes; an elastic job's times its replicas' share. ``data`` False: a
        running data-reading job's rate before its data share (``rate_fabric``; the caller takes the share
        next, :meth:`_set_util` at load 1 does)."""
        rate = self._rate_on_nodes(job)
        if job.spec.rn and len(job.nodes) < job.spec.nodes_needed:
            rate *= (len(job.nodes) // job.spec.rn) / (job.spec.nodes_needed // job.spec.rn)
        if job.spec.data_gbs:
            job.rate_fabric = rate
            if data and job.state == RUNNING:
                return self._data_rate(job)
        return rate

    def _data_rate(self, job: Job) -> float:
        """The running job's rate with its data share: its demand at its rate before the stall
        (``rate_fabric``) registered with the storage, ``min(rate, share / demand)``."""
        st = self.storage
        assert st is not None  # data_gbs is set only with the storage service
        spec = job.spec
        d = spec.data_gbs
        down = not st.available
        if down and not job.rate_in_outage:  # an outage stops it (running, or starting to run, in one)
            job.acct.storage_stops += 1
        job.rate_in_outage = down
        rate = job.rate_fabric
        share = st.data_share(spec.jid, d * rate)
        return data_limited_rate(rate, d, share)

    def _rate_on_nodes(self, job: Job) -> float:
        """The job's progress rate on its nodes now (ideal step time / actual), also setting
        ``job.rate_thermal``, ``job.rate_failslow`` and ``job.rate_speed``: the same step-time model at the
        thermal speed alone, at the thermal and fail-slow (``degraded`` parts, twin.model.health) speeds, and
        at the node speed, all with a healthy fabric. The slowdown is split in that order (the sequential
        rule): thermal 1 − r_thermal, fail-slow r_thermal − r_failslow, power r_failslow − r_speed, fabric
        r_speed − r; they add up to 1 − r."""
        nodes = job.nodes
        n = len(nodes)
        cl = self.cluster
        sp_t = sp_f = 1.0
        caps = cl.speed_caps
        if n and cl.slow and len(caps) == 1 and "thermal" in caps:
            # a hall with a thermal model, its one speed source (the common case): as below, without the dict
            sp = min_of_at(caps["thermal"], nodes)
            speed = sp if sp < 1.0 else 1.0  # (= min(1.0, sp))
            if speed < 1.0:
                sp_t = sp_f = sp
        elif n and cl.slow and "thermal" in caps:
            # a hall with a thermal model (its kernels loaded): each source's minimum over the nodes compiled,
            # the same minima as min_speed's (min over nodes and sources, from 1) and the sources' below
            mins = {name: min_of_at(arr, nodes) for name, arr in caps.items()}
            speed = min(1.0, *mins.values())
            if speed < 1.0:
                sp_t = mins["thermal"]
                dg = mins.get("degraded")
                sp_f = min(sp_t, dg) if dg is not None else sp_t
        else:
            speed = cl.min_speed(nodes) if n else 1.0
            if speed < 1.0:
                th = caps.get("thermal")
                sp_t = float(th[nodes].min()) if th is not None else 1.0
                dg = caps.get("degraded")
                sp_f = min(sp_t, float(dg[nodes].min())) if dg is not None else sp_t
        st = job.spec.step
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
            key = (speed, nic, share, blk, nvs, sp_t, sp_f)
            memo = job.rate_memo  # the rates of inputs seen before (pure functions: the same inputs, the same rates)
            if memo is None:
                memo = job.rate_memo = {}
            got = memo.get(key)
            if got is not None:
                r, r_nv, r_sp, r_t, r_f, r_pl, bd, vec = got
                if bd is not job.bd:  # (as below: the breakdown these inputs give, and its shares)
                    job.bd, job.bd_nic, job.bd_vec = bd, nic, vec
            else:
                bd = parallel_breakdown(st, speed, nic, share, blk, nvs)
                if bd is not job.bd:
                    job.bd, job.bd_nic, job.bd_vec = bd, nic, step_shares(bd)
                r = parallel_rate(st, speed, nic, share, blk, nvs)
                r_nv = r if share == 1.0 else parallel_rate(st, speed, nic, 1.0, blk, nvs)
                r_sp = r_nv if nvs == 1.0 else parallel_rate(st, speed, nic, 1.0, blk, 1.0)
                r_t = r_sp if sp_t == speed else parallel_rate(st, sp_t, nic, 1.0, blk, 1.0)
                r_f = r_sp if sp_f == speed else r_t if sp_f == sp_t else parallel_rate(st, sp_f, nic, 1.0, blk, 1.0)
                r_pl = r_t if sp_t == 1.0 else parallel_rate(st, 1.0, nic, 1.0, blk, 1.0)
                if len(memo) >= _RATE_MEMO_KEYS:
                    memo.clear()
                memo[key] = (r, r_nv, r_sp, r_t, r_f, r_pl, job.bd, job.bd_vec)
            job.rate_nvlink = r_nv
            job.rate_place = r_pl
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

    def _set_util(self, job: Job, util: float, transfer_next: bool = False) -> None:
        """Set the utilisation of the job's nodes; publish NODE_LOAD (every node of the job) when the load
        of any of them changes, then JOB (a job's state change, for observers such as the forecast's
        accounting) in any case. A publication that would change no node's load is not made: no
        subscriber's state depends on it (the IT power and GPU temperatures follow the same load).
        ``transfer_next``: the caller begins a checkpoint transfer on the storage next, at this instant
        (:meth:`twin.model.storage.Storage.data_share`)."""
        nodes = job.nodes
        if job.spec.data_gbs:  # a running job reads its data (its share may have changed), any other does not
            assert self.storage is not None
            if util > 0.0 and job.state == RUNNING:
                job.rate = self._data_rate(job)
            else:
                self.storage.data_share(job.spec.jid, 0.0, transfer_next)
        if len(nodes):
            # the cluster writes and publishes NODE_LOAD, unless the job's nodes are at this load already (its last
            # write was of this array at this load: then the cluster's own test would find no change either)
            memo = job.load_memo
            if memo is None or memo[0] is not nodes or memo[1] != util:
                self._set_load(nodes, util)
                job.load_memo = (nodes, util)
            for fn in self._on_job_subs:  # = bus.publish(JOB, job)
                fn(job)

    def _pause(self, job: Job, pause_h: float, transfer_next: bool = False) -> None:
        """The job stops for a checkpoint write or stall of ``pause_h`` hours: its nodes idle, unless the
        pause is shorter than ``workload.min_load_pause_s`` (then the facility models keep seeing them
        busy: only the job's data reading and JOB observers see it; the job itself makes no progress
        either way). ``transfer_next``: as :meth:`_set_util`'s."""
        if pause_h * 3600.0 < self.min_pause_s:
            self._set_util(job, 1.0, transfer_next)
        else:
            self._set_util(job, 0.0, transfer_next)
