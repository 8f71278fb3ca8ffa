"""Job sources of the workload: the listed jobs, the synthetic arrival stream and the job trace (rows
created one at a time as they are submitted)."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from twin import rng
from twin.model.workload.interruptions import Interruptions
from twin.model.workload.jobs import SUBMIT_PRIORITY, Job, JobSpec
from twin.scenario.storage import DataLoading
from twin.scenario.workload import Checkpoint, Elastic, StepModel


class Sources(Interruptions):
    """Job sources of the workload (a layer of :class:`twin.model.workload.Workload`)."""

    def _new_job(self, name: str, gpus: int, work_h: float, submit_h: float, priority: int,
                 ckpt: Checkpoint, step: StepModel | None = None, repeat: bool = False,
                 elastic: Elastic | None = None, data: DataLoading | None = None,
                 data_gbs: float | None = None, pool: str | None = None) -> Job:
        """A new job (the next id), with what the workload derives from its sections: its training-data
        demand after the node caches (GB/s; ``data_gbs``: the given one instead, for a repeat), its
        elastic replicas (when its nodes make at least two whole replicas) and its NVLink placement unit."""
        self._jid += 1
        nodes_needed = -(-gpus // self.gpn)
        step = step or StepModel()
        extra: dict[str, Any] = {}
        if data_gbs is not None:
            extra["data_gbs"] = data_gbs
        elif data is not None and data.demand_mb_per_s_per_gpu > 0 and self.storage is not None:
            hit = self.storage.data_cache_hit(nodes_needed, data.dataset_gb)
            extra["data_gbs"] = data.demand_mb_per_s_per_gpu * gpus / 1000.0 * (1.0 - hit)
        if elastic is not None:
            rn = elastic.replica_nodes
            assert rn is not None  # derived by the schema
            if nodes_needed % rn == 0 and nodes_needed // rn >= max(2, elastic.min_replicas):
                extra.update(rn=rn, min_rep=elastic.min_replicas, reconf_pause_h=elastic.reconfigure_h)
                self._has_elastic = True
        if self.domains is not None and step.layout is not None:
            extra["unit"] = self.domains.unit(step.layout.tp)
        if pool is not None:
            extra.update(pool=pool, excl=self._excl_of(pool))
        return Job(JobSpec(self._jid, name, gpus, nodes_needed, work_h, submit_h, priority, ckpt, step, repeat,
                           **extra))

    def _build_sources(self) -> None:
        spec = self.spec
        H = self.engine.horizon_h
        pending: list[Job] = []
        for j in spec.jobs:
            assert j.work_h is not None  # the schema sets it (from the training block when not given)
            pending.append(self._new_job(j.name, j.gpus, j.work_h, j.submit_h, j.priority, j.checkpoint, j.step,
                                         j.repeat, j.elastic, j.data, pool=j.pool))
        if spec.synthetic is not None:
            pending.extend(self._synthetic_jobs(H))
        for job in pending:
            if job.spec.submit_h < H:
                self._timer_of(job).set(job.spec.submit_h, functools.partial(self._submit, job))  # (its timer's first use)
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
                          syn.priority, syn.checkpoint, elastic=syn.elastic, data=syn.data, pool=syn.pool)
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
        pool: dict[str, Any] = {} if tr.pool is None else {"pool": tr.pool, "excl": self._excl_of(tr.pool)}
        codes = rows.pool_codes  # a row's own pool (its `pool` cell), by its code
        by_code = [{"pool": p, "excl": self._excl_of(p)} for p in rows.pool_names]
        it = iter(order.tolist())
        first = next(it)
        first_row = self.engine.timer(lambda: submit(first))  # scheduled now, as the other jobs' submissions
        next_row = self.engine.timer(priority=SUBMIT_PRIORITY)

        def submit(i: int) -> None:
            g = int(gpus[i])
            own = pool if codes is None or codes[i] < 0 else by_code[codes[i]]
            self._submit(Job(JobSpec(base + i + 1, rows.name(i), g, -(-g // gpn), float(dur[i]), float(sub[i]),
                                     int(prio[i]), ck, step, **own)))
            nxt = next(it, None)
            if nxt is not None:
                next_row.set(float(sub[nxt]), lambda: submit(nxt))

        first_row.set(float(sub[first]))
