"""The forecast's accounting observer: a model component that follows one job through the bus and
charges every hour of its wall time to a cause (the identity and the attribution rules are
:mod:`twin.forecast.run`'s module docstring).

It requires the workload's :data:`~twin.model.workload.jobs.JOB_RECORDS` service (the typed records of
the jobs and interruptions, read-only) and uses the fabric when there is one; it subscribes to JOB,
NODE_SPEED and FABRIC after the workload (it is built after its provider) and changes nothing. The forecast
adds it to the component registry for one job name (:func:`observer_for`).
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from twin.errors import InputError
from twin.model.component import FABRIC, BuildContext, Component
from twin.model.engine import Topic
from twin.model.workload.jobs import DONE, JOB, JOB_RECORDS, Job
from twin.physics.steptime import progress_rate, ring_allreduce_s
from twin.scenario.schema import Scenario


class JobObserver(Component):
    """Follows the job named :attr:`job_name` and accounts for its hours (see the module docstring)."""

    name = "forecast_observer"
    requires = (JOB_RECORDS,)
    uses = (FABRIC,)
    job_name: ClassVar[str] = ""
    """The job followed (set by :func:`observer_for`)."""

    @classmethod
    def wanted(cls, sc: Scenario) -> bool:
        if sc.workload is None:
            raise InputError(sc.name, "workload", "a forecast needs a workload section")
        return True

    @classmethod
    def build(cls, ctx: BuildContext) -> JobObserver:
        return cls(ctx)

    def __init__(self, ctx: BuildContext) -> None:
        self.engine = ctx.engine
        self.cluster = ctx.cluster
        self.fabric = ctx.optional(FABRIC)
        self.records = ctx.service(JOB_RECORDS)
        self.job: Job | None = None
        self.done = False
        self._prev = np.zeros(5)  # run, made, checkpoint, restart, wait (hours)
        self._cause = ""
        self._seen = 0  # interruption records scanned
        self._nodes: np.ndarray | None = None
        self._ls = 0.0  # single-factor losses in force since the last event
        self._ln = 0.0
        self.restart_by: dict[str, float] = {}
        """Restart hours by interruption cause."""
        self.requeue_by: dict[str, float] = {}
        """Queue hours after an interruption (no spare node), by its cause."""
        self.queue_h = 0.0
        self.checkpoint_h = 0.0
        self.throttle_h = 0.0
        self.network_h = 0.0
        bus = self.engine.bus
        bus.subscribe(JOB, self._on_job)
        bus.subscribe(Topic.NODE_SPEED, self._on_speed)
        bus.subscribe(Topic.FABRIC, self._on_fabric)

    def _find(self) -> Job | None:
        if self.job is None:
            for j in self.records.jobs:
                if j.spec.name == self.job_name:
                    self.job = j
                    break
        return self.job

    def _on_job(self, job: Job) -> None:
        self._update(False)

    def _on_speed(self, nodes: np.ndarray) -> None:
        job = self._find()
        if job is not None and len(job.nodes) and self.records.holds_any(job.spec.jid, nodes):
            self._update(True)

    def _on_fabric(self) -> None:
        self._update(True)

    def _factors(self, job: Job) -> tuple[float, float]:
        """(1 − rate at the current speed and ideal bandwidth, 1 − rate at full speed and the
        current bandwidth): the same step-time model as the workload's progress rate."""
        nodes = job.nodes
        n = len(nodes)
        if n == 0:
            return 0.0, 0.0
        speed = self.cluster.min_speed(nodes)
        st = job.spec.step
        fabric = self.fabric
        if fabric is None or n <= 1 or st.grad_gb <= 0:
            return max(0.0, 1.0 - float(progress_rate(st.t_compute_s, 0.0, 0.0, st.overlap, speed))), 0.0
        bw_ideal, bw_now = fabric.job_bandwidth_gbps(nodes)
        grad = st.grad_gb * 1e9
        t_i = float(ring_allreduce_s(n, grad, bw_ideal, st.hop_latency_s))
        t_n = float(ring_allreduce_s(n, grad, bw_now, st.hop_latency_s)) if bw_now > 0 else math.inf
        r_s = float(progress_rate(st.t_compute_s, t_i, t_i, st.overlap, speed))
        r_n = float(progress_rate(st.t_compute_s, t_i, t_n, st.overlap, 1.0)) if math.isfinite(t_n) else 0.0
        return max(0.0, 1.0 - r_s), max(0.0, 1.0 - r_n)

    def _update(self, refactor: bool) -> None:
        job = self._find()
        if job is None or self.done:
            return
        now = np.array([job.acct.run_h, job.acct.made_h, job.acct.ckpt_h, job.acct.restart_h, job.acct.wait_h])
        d = now - self._prev
        self._prev = now
        slow = d[0] - d[1]
        if slow != 0.0:
            tot = self._ls + self._ln
            share = self._ls / tot if tot > 0 else 1.0
            self.throttle_h += slow * share
            self.network_h += slow * (1.0 - share)
        self.checkpoint_h += d[2]
        if d[3] != 0.0:
            self.restart_by[self._cause] = self.restart_by.get(self._cause, 0.0) + d[3]
        if d[4] != 0.0:
            if self._cause:
                self.requeue_by[self._cause] = self.requeue_by.get(self._cause, 0.0) + d[4]
            else:
                self.queue_h += d[4]
        ints = self.records.interruptions
        while self._seen < len(ints):
            rec = ints[self._seen]
            self._seen += 1
            if rec.jid == job.spec.jid:
                self._cause = rec.cause.label
        if refactor or job.nodes is not self._nodes:
            self._nodes = job.nodes
            self._ls, self._ln = self._factors(job)
        if job.state == DONE:
            self.done = True

    def lost_by(self) -> tuple[dict[str, float], dict[str, int]]:
        """Lost work (hours) and interruption counts by cause, from the interruption records."""
        lost: dict[str, float] = {}
        count: dict[str, int] = {}
        if self.job is None:
            return lost, count
        for rec in self.records.interruptions:
            if rec.jid == self.job.spec.jid:
                c = rec.cause.label
                lost[c] = lost.get(c, 0.0) + rec.lost_h
                count[c] = count.get(c, 0) + 1
        return lost, count


def observer_for(job_name: str) -> type[JobObserver]:
    """The observer component class that follows job ``job_name`` (added to the registry by the forecast)."""
    return type("JobObserver", (JobObserver,), {"job_name": job_name, "__module__": __name__})
