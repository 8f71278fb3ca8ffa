"""A training run in training terms: parameters, tokens, peak throughput and MFU -> work hours.

Pure functions, no SimPy and no scenario imports (the scenario schema, the workload model and the
forecast use this module).

Training compute: C = 6·P·D FLOPs for P parameters and D tokens (Kaplan et al. 2020, "Scaling
Laws for Neural Language Models", §2.1: ≈ 2 FLOPs per parameter and token forward, 4 backward).
It counts the dense matrix multiplies only: attention's sequence-length term, embeddings and
recomputation (activation checkpointing) are left out; model FLOPs utilisation (MFU) is defined
against the same count, so a published MFU converts consistently.

Ideal wall time on G GPUs of peak throughput F (FLOP/s at the training precision):
work_h = 6·P·D / (G·F·MFU) / 3600. It is the ``work_h`` of a job: wall hours at full speed on all
its GPUs, with no failures, checkpoints or slowdowns.
"""

from __future__ import annotations

import math

FLOPS_PER_PARAM_TOKEN = 6.0
"""Training FLOPs per parameter per token (forward 2 + backward 4; Kaplan et al. 2020)."""
DEFAULT_CHECKPOINT_BYTES_PER_PARAM = 16.0
"""Bytes of checkpoint per parameter (assumption): the mixed-precision Adam model state of the ZeRO
paper (Rajbhandari et al. 2020, §3.1): 2 (bf16 weights) + 2 (bf16 gradients) + 12 (fp32 master
weights, momentum, variance). A checkpoint without gradients needs 14: 16 is slightly conservative."""


def training_flops(params_b: float, tokens_t: float) -> float:
    """Training FLOPs 6·P·D for ``params_b`` billion parameters and ``tokens_t`` trillion tokens."""
    return FLOPS_PER_PARAM_TOKEN * params_b * 1e9 * tokens_t * 1e12


def cluster_flops_per_s(gpus: int, peak_tflops: float, mfu: float) -> float:
    """Sustained model FLOP/s of ``gpus`` GPUs at ``peak_tflops`` TFLOP/s each and utilisation ``mfu``."""
    return gpus * peak_tflops * 1e12 * mfu


def work_hours(params_b: float, tokens_t: float, gpus: int, peak_tflops: float, mfu: float) -> float:
    """Ideal wall hours: 6·P·D / (gpus × peak_tflops·10^12 × mfu) / 3600.

    >>> round(work_hours(405, 15.6, 16384, 989, 0.41), 1)   # Llama 3 405B: about 66 days
    1585.0
    """
    if not (0.0 < mfu <= 1.0):
        raise ValueError(f"mfu must be in (0, 1], got {mfu}")
    if params_b <= 0 or tokens_t <= 0 or gpus < 1 or peak_tflops <= 0:
        raise ValueError("params_b, tokens_t, gpus and peak_tflops must be positive")
    return training_flops(params_b, tokens_t) / cluster_flops_per_s(gpus, peak_tflops, mfu) / 3600.0


def tokens_per_day(tokens_t: float, wall_h: float) -> float:
    """Tokens per day when ``tokens_t`` trillion tokens take ``wall_h`` hours."""
    return tokens_t * 1e12 / (wall_h / 24.0)


def checkpoint_size_gb(params_b: float, bytes_per_param: float = DEFAULT_CHECKPOINT_BYTES_PER_PARAM) -> float:
    """Whole-job checkpoint size, GB (10^9 bytes): parameters × bytes per parameter."""
    return params_b * 1e9 * bytes_per_param / 1e9


def checkpoint_write_h(size_gb: float, write_gb_per_s: float, writers: int = 1, writer_nodes: int = 0,
                       node_gb_per_s: float | None = None, overhead_s: float = 0.0) -> float:
    """Hours to write ``size_gb``: size / min(aggregate bandwidth ``write_gb_per_s`` shared equally by ``writers``
    concurrent writers, ``writer_nodes`` × the per-node front-end bandwidth ``node_gb_per_s``) + a fixed
    ``overhead_s`` (seconds: serialisation, metadata, the barrier), / 3600. Without a per-node bandwidth (None)
    or writer nodes (0) the front end is not a limit.

    >>> round(checkpoint_write_h(6480, 2000, 1, 16, 25.0, 30.0) * 3600, 1)   # 16 nodes at 25 GB/s: 400 GB/s
    46.2
    """
    bw = write_gb_per_s / max(1, writers)
    if node_gb_per_s is not None and writer_nodes > 0:
        bw = min(bw, writer_nodes * node_gb_per_s)
    return size_gb / bw / 3600.0 + overhead_s / 3600.0


def checkpoint_count(work_h: float, interval_h: float | None) -> int:
    """Checkpoints a job writes without failures: one after every ``interval_h`` of progress and a
    final one at completion (the workload's rule), i.e. ceil(work/interval); 0 without checkpointing.
    The same 1e-9 relative tolerance as the workload decides whether the last interval is whole."""
    if interval_h is None:
        return 0
    eps = 1e-9 * max(1.0, work_h)
    k = math.floor((work_h + eps) / interval_h)
    rest = work_h - k * interval_h
    return k + (1 if rest > eps else 0) if k > 0 else 1


def failure_free_h(work_h: float, interval_h: float | None, write_h: float, mode: str = "sync",
                   async_fraction: float = 0.0) -> float:
    """Wall hours without failures or slowdowns: work plus checkpoint pauses. A sync checkpoint
    pauses for its write time; an async one stalls ``async_fraction`` of it, except the final
    checkpoint, which is always written in full before the job completes."""
    n = checkpoint_count(work_h, interval_h)
    if n == 0:
        return work_h
    per = async_fraction * write_h if mode == "async" else write_h
    return work_h + (n - 1) * per + write_h
