"""Context parallelism: the sequence split over ``cp`` GPUs, attention across the split (issue 50).
Pure functions; no simulation clock.

With context parallelism each of the cp GPUs of a group holds s/cp tokens of every sequence (their
activations, their share of the FLOPs), and attention needs every earlier token's keys and values.
Per layer and microbatch a GPU holds a K and a V chunk of (s/cp)·b·kv_w/tp elements each (kv_w the
K/V width: grouped-query attention makes it small), KV = 2·(s/cp)·b·(kv_w/tp)·bytes.

* **ring** (ring attention, Liu et al. 2023, arXiv 2310.01889; Megatron-Core's context parallelism): the
  chunks travel round the ring in cp − 1 steps. Forward: one KV chunk per step; backward: the KV chunk
  and its gradient dKV, 2 chunks per step; with full recomputation one more forward. Each step's
  transfer overlaps the attention of the block it brings (one (s/cp) × (s/cp) block of the core attention:
  4·(s/cp)²·b·h/tp FLOPs forward, halved under a causal mask with the load-balanced split, twice that
  backward), so only max(0, transfer − block compute) per step is exposed;
* **all_gather** (Llama 3 §3.3.2: "we first all-gather the key (K) and value (V) tensors, and then compute
  attention output for the local query"): the same bytes, (cp − 1)·KV forward (an all-gather) and
  2·(cp − 1)·KV backward (the gather again and a reduce-scatter of dKV), exposed (Llama 3 accepts the
  exposed latency because GQA makes K and V small).

The group's GPUs are the next ones after tp (ranks tp innermost, then cp): on NVLink when tp·cp fits in a
domain, else each GPU sends over its own NIC.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

__all__ = ["CpComm", "block_attention_flops", "cp_comm", "kv_chunk_bytes"]

CpCollective = Literal["ring", "all_gather"]


def kv_chunk_bytes(seq_len: int, microbatch: int, kv_width: float, tp: int, cp: int, act_bytes: float) -> float:
    """Bytes of one GPU's K and V chunk of one layer: 2·(s/cp)·b·(kv_w/tp)·bytes."""
    return 2.0 * seq_len / cp * microbatch * kv_width / tp * act_bytes


def block_attention_flops(seq_len: int, microbatch: int, hidden: int, tp: int, cp: int, causal: bool) -> float:
    """Forward FLOPs of one (s/cp) × (s/cp) block of the core attention on one GPU: 4·(s/cp)²·b·h/tp,
    halved with a causal mask (the load-balanced split gives every GPU the same share of the triangle)."""
    c = float(seq_len) / cp
    return 4.0 * c * c * microbatch * hidden / tp * (0.5 if causal else 1.0)


@dataclass(frozen=True)
class CpComm:
    """Context-parallel traffic of one layer and microbatch on one GPU: ``bytes`` sent, ``total_s`` the
    transfer time, ``exposed_s`` what compute does not hide."""

    bytes: float
    total_s: float
    exposed_s: float


def cp_comm(kv_bytes: float, cp: int, collective: CpCollective, recompute: bool, bytes_s: float, latency_s: float,
            block_s: float) -> CpComm:
    """Context-parallel traffic per layer and microbatch (module text): ``kv_bytes`` one chunk
    (:func:`kv_chunk_bytes`), ``bytes_s`` the link's effective bandwidth (NVLink or the NIC), ``block_s`` the
    seconds of one block's forward attention (:func:`block_attention_flops` / effective FLOP/s)."""
    if cp <= 1:
        return CpComm(0.0, 0.0, 0.0)
    if bytes_s <= 0.0:
        return CpComm(math.inf, math.inf, math.inf)
    steps = cp - 1
    fwd_passes = 2 if recompute else 1
    chunks = steps * (fwd_passes + 2)            # forward: 1 chunk per step; backward: KV and dKV
    t_chunk = kv_bytes / bytes_s + latency_s
    total = chunks * t_chunk
    if collective == "all_gather":
        return CpComm(chunks * kv_bytes, total, total)
    exposed = steps * (fwd_passes * max(0.0, t_chunk - block_s) + max(0.0, 2.0 * t_chunk - 2.0 * block_s))
    return CpComm(chunks * kv_bytes, total, exposed)
