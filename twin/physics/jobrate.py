"""Progress rates of training jobs (model.md §6): ideal step time / actual step time, for a job of
compute and a ring all-reduce (``job_rate``) and for a job with a parallel layout (``parallel_rate``,
from the step broken down by component, :mod:`twin.physics.parallel`). Pure functions of their
arguments, cached: the event loop asks the same few questions again and again."""

from __future__ import annotations

import functools
import math
from typing import Protocol

from twin.physics import parallel as par
from twin.physics.steptime import progress_rate, ring_allreduce_s


class LaidOutStep(Protocol):
    """A job's step model with a parallel layout (``twin.scenario.workload.StepModel``): hashable, and
    its step broken down by component at a speed, NIC bandwidth and fabric and NVLink shares."""

    def __hash__(self) -> int: ...

    def breakdown(self, nic_gbit_s: float | None = None, speed: float = 1.0, nic_share: float = 1.0,
                  domain_gpus: int = 0, nvlink_share: float = 1.0) -> par.StepBreakdown: ...


@functools.lru_cache(maxsize=65536)
def job_rate(t_compute_s: float, overlap: float, speed: float, grad_gb: float = 0.0, hop_latency_s: float = 0.0,
             n: int = 1, bw_ideal_gbps: float = 0.0, bw_now_gbps: float = 0.0) -> float:
    """Progress rate of a synchronous job (model.md §6): ideal / actual step time, with the ring
    all-reduce of ``grad_gb`` GB over ``n`` nodes at the ideal and current per-node bandwidth
    (Gbit/s) and the slowest GPU's ``speed``; without gradient exchange (one node, no fabric)
    compute time alone. A pure function of its arguments, cached: the event loop asks the same
    few questions again and again (every start and restart of a job of a given size)."""
    if n <= 1 or grad_gb <= 0:
        return float(progress_rate(t_compute_s, 0.0, 0.0, overlap, speed))
    grad = grad_gb * 1e9
    t_ideal = ring_allreduce_s(n, grad, bw_ideal_gbps, hop_latency_s)
    t_now = ring_allreduce_s(n, grad, bw_now_gbps, hop_latency_s) if bw_now_gbps > 0 else math.inf
    if not math.isfinite(t_now):
        return 0.0
    return float(progress_rate(t_compute_s, t_ideal, t_now, overlap, speed))


@functools.lru_cache(maxsize=4096)
def parallel_breakdown(st: LaidOutStep, speed: float, nic_gbit_s: float, nic_share: float, domain_gpus: int = 0,
                       nvlink_share: float = 1.0) -> par.StepBreakdown:
    """Step time of a job with a model and a layout (:mod:`twin.physics.parallel`), by component, at the
    slowest GPU's ``speed``, ``nic_gbit_s`` per GPU and the fabric's healthy share ``nic_share``, its
    ranks in NVLink blocks of ``domain_gpus`` (0: the layout's domain) at ``nvlink_share`` of the
    NVLink bandwidth (twin.model.domains). Cached: evaluated only when one of these inputs of the
    job changes."""
    return st.breakdown(nic_gbit_s, speed, nic_share, domain_gpus, nvlink_share)


def parallel_rate(st: LaidOutStep, speed: float, nic_gbit_s: float, nic_share: float, domain_gpus: int = 0,
                  nvlink_share: float = 1.0) -> float:
    """Progress rate of a layout job: ideal step (full speed, healthy fabric and NVLink, the layout's
    domain) / actual step; 0 when the step cannot complete (speed 0, fabric cut)."""
    actual = parallel_breakdown(st, speed, nic_gbit_s, nic_share, domain_gpus, nvlink_share).total_s
    if not math.isfinite(actual):
        return 0.0
    return parallel_breakdown(st, 1.0, nic_gbit_s, 1.0).total_s / actual
