"""The job a forecast follows and the horizon of its replications: the failure-free figures of the
job (:class:`Target`), the horizon bound ``submit + factor × failure-free time`` and the scenario
re-validated with that horizon. Used by :mod:`twin.forecast.run` and :mod:`twin.forecast.levers`.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Callable

from twin.errors import InputError
from twin.limits import MAX_HORIZON_DAYS
from twin.physics import training as tr
from twin.scenario.loader import Loaded, load_dict
from twin.scenario.schema import Scenario

DEFAULT_BOUND_FACTOR = 10.0
"""Horizon bound of a forecast replication, as a multiple of the failure-free time to train."""


@dataclass(frozen=True)
class Target:
    """The job a forecast follows, and its failure-free figures (hours)."""

    index: int
    name: str
    gpus: int
    nodes: int
    submit_h: float
    work_h: float
    write_h: float
    interval_h: float | None
    failure_free_h: float
    tokens_t: float | None
    params_b: float | None
    basis: str = "work_h"
    """How ``work_h`` was computed: 'layout' (steps × the step time of the job's parallel layout),
    '6PD' (6·P·D / (GPUs × peak × MFU)) or 'work_h' (given in hours)."""
    six_pd_h: float | None = None
    """6·P·D / (GPUs × peak × MFU) in hours at the job's (given or derived) MFU, for training jobs."""

    @property
    def checkpoint_overhead_h(self) -> float:
        return self.failure_free_h - self.work_h


def select_job(sc: Scenario, name: str | None, source: str = "scenario") -> int:
    """Index of the forecast job: ``name``, else the only job with a ``training`` block, else the
    job with the most GPUs. InputError when the scenario has no explicit job or no such name."""
    wl = sc.workload
    if wl is None or not wl.jobs:
        raise InputError(source, "workload.jobs", "a forecast needs an explicit job (workload.jobs) to follow")
    if name is not None:
        for i, j in enumerate(wl.jobs):
            if j.name == name:
                return i
        raise InputError(source, "--job", f"no job named {name!r}; jobs: {[j.name for j in wl.jobs]}")
    trained = [i for i, j in enumerate(wl.jobs) if j.training is not None]
    if len(trained) == 1:
        return trained[0]
    pool = trained or list(range(len(wl.jobs)))
    return max(pool, key=lambda i: (wl.jobs[i].gpus, -i))


def target_of(sc: Scenario, index: int) -> Target:
    """Failure-free figures of job ``index`` of ``sc``."""
    assert sc.workload is not None
    job = sc.workload.jobs[index]
    assert job.work_h is not None
    ck = job.checkpoint
    st = sc.workload.storage
    w = ck.write_time_h(st.write_gb_per_s, 1, -(-job.gpus // sc.cluster.node.gpus), st.node_write_gb_per_s)
    ff = tr.failure_free_h(job.work_h, ck.interval_h, w, ck.mode, ck.async_fraction)
    t = job.training
    basis, six_pd = "work_h", None
    if t is not None:
        basis = "layout" if job.step.layout is not None else "6PD"
        if t.peak_tflops is not None and t.mfu is not None:
            six_pd = t.six_pd_h(job.gpus)
    return Target(index, job.name, job.gpus, -(-job.gpus // sc.cluster.node.gpus), job.submit_h, job.work_h, w,
                  ck.interval_h, ff, t.tokens_t if t else None, t.params_b if t else None, basis, six_pd)


def bound_h(target: Target, factor: float) -> float:
    """Horizon bound of a replication: submit + factor × failure-free time, hours."""
    return min(target.submit_h + factor * target.failure_free_h, MAX_HORIZON_DAYS * 24.0)


def with_horizon(loaded: Loaded, horizon_h: float, seed: int | None = None,
                 edit: Callable[[dict[str, Any]], None] | None = None) -> Loaded:
    """The scenario re-validated with ``horizon_days`` = horizon_h/24 (and optionally another seed
    and an edit of the resolved mapping)."""
    doc = copy.deepcopy(loaded.resolved)
    doc["horizon_days"] = horizon_h / 24.0
    if seed is not None:
        doc["seed"] = int(seed)
    if edit is not None:
        edit(doc)
    return load_dict(doc, str(loaded.source), loaded.base_dir)
