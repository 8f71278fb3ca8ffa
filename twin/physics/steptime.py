"""Step time of a synchronous data-parallel training job (model.md §6).

GPU speed (thermal and power caps) and fabric bandwidth meet in one step-time model; the job's
progress rate is ideal/actual step time as a whole, never a product of separate factors.

Example (the model.md §6 case): t_compute 1 s, ideal t_comm 0.5 s, overlap 0.9, speed 0.8
and 25 % bandwidth (t_comm 2.0 s):

>>> round(progress_rate(1.0, 0.5, 2.0, 0.9, 0.8), 3)
0.471

whereas the product of the separate factors (speed alone: 0.8; bandwidth alone:
1/(1 + 2.0 − 0.9) = 0.476) would give 0.381.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from twin.physics.arrays import FloatOrArray, as_f64 as _f, float_or_array as _out

__all__ = ["ring_allreduce_s", "step_time_s", "progress_rate"]


def _div(a: float, b: float) -> float:
    """a / b for floats as numpy divides float64 (b = 0 gives ±inf or NaN instead of raising)."""
    if b == 0.0:
        if a != a or a == 0.0:
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b


def _all_scalar(*xs: object) -> bool:
    for x in xs:
        if not isinstance(x, (int, float)):
            return False
    return True


def ring_allreduce_s(
    n_nodes: ArrayLike, grad_bytes: ArrayLike, bw_node_gbps: ArrayLike, hop_latency_s: ArrayLike
) -> FloatOrArray:
    """Ring all-reduce time in seconds across ``n_nodes`` nodes.

    2(n−1)/n · 8·grad_bytes/(bw_node_gbps·10^9) + 2(n−1)·hop_latency_s; 0 for n = 1.
    ``grad_bytes`` in bytes, ``bw_node_gbps`` the node's bandwidth in Gbit/s (all its rails,
    times the healthy share of the spines crossed), ``hop_latency_s`` in seconds. Zero
    bandwidth with n > 1 gives inf.
    """
    if _all_scalar(n_nodes, grad_bytes, bw_node_gbps, hop_latency_s):  # the event loop's path, same arithmetic
        nf = float(n_nodes)  # type: ignore[arg-type]
        if nf < 1:
            raise ValueError("n_nodes must be >= 1")
        if nf == 1:
            return 0.0
        bw = float(bw_node_gbps) * 1e9  # type: ignore[arg-type]
        head = 2.0 * (nf - 1.0) / nf * 8.0 * float(grad_bytes)  # type: ignore[arg-type]
        return (_div(head, bw)) + 2.0 * (nf - 1.0) * float(hop_latency_s)  # type: ignore[arg-type]
    n = _f(n_nodes)
    if np.any(n < 1):
        raise ValueError("n_nodes must be >= 1")
    with np.errstate(divide="ignore", invalid="ignore"):
        t = 2.0 * (n - 1.0) / n * 8.0 * _f(grad_bytes) / (_f(bw_node_gbps) * 1e9) + 2.0 * (
            n - 1.0
        ) * _f(hop_latency_s)
    return _out(np.where(n == 1, 0.0, t))


def step_time_s(
    t_compute_s: ArrayLike, t_comm_s: ArrayLike, overlap: ArrayLike, speed: ArrayLike
) -> FloatOrArray:
    """Step time in seconds: t_c + max(0, t_comm − overlap·t_c) with t_c = t_compute/speed.

    ``speed`` is the slowest GPU's speed fraction (0..1]; ``overlap`` the fraction (0..1) of
    compute time that can hide communication. Speed 0 gives inf.
    """
    if _all_scalar(t_compute_s, t_comm_s, overlap, speed):  # the event loop's path, same arithmetic
        t_c = _div(float(t_compute_s), float(speed))  # type: ignore[arg-type]
        x = float(t_comm_s) - float(overlap) * t_c  # type: ignore[arg-type]
        return t_c + (x if (x > 0.0 or x != x) else 0.0)  # np.maximum(0, x): NaN propagates
    with np.errstate(divide="ignore"):
        t_ca = _f(t_compute_s) / _f(speed)
    exposed = np.maximum(0.0, _f(t_comm_s) - _f(overlap) * t_ca)
    return _out(t_ca + exposed)


def progress_rate(
    t_compute_s: ArrayLike,
    t_comm_ideal_s: ArrayLike,
    t_comm_s: ArrayLike,
    overlap: ArrayLike,
    speed: ArrayLike,
) -> FloatOrArray:
    """Progress rate (0..1 normally): ideal step time (speed 1, ``t_comm_ideal_s``) / actual.

    Times in seconds. Speed 0 (or infinite communication time) gives 0.
    """
    if _all_scalar(t_compute_s, t_comm_ideal_s, t_comm_s, overlap, speed):
        return _div(step_time_s(t_compute_s, t_comm_ideal_s, overlap, 1.0),  # type: ignore[arg-type]
                    step_time_s(t_compute_s, t_comm_s, overlap, speed))  # type: ignore[arg-type]
    ideal = _f(step_time_s(t_compute_s, t_comm_ideal_s, overlap, 1.0))
    actual = _f(step_time_s(t_compute_s, t_comm_s, overlap, speed))
    return _out(ideal / actual)
