"""Step time of a 3D-parallel transformer training job (issue 28; sources-realism.md §7).

Pure functions and small frozen records, no simulation clock. A job trains a transformer of a
given shape (:class:`ModelShape`) with a parallel layout (:class:`Layout`: tensor ``tp``,
pipeline ``pp`` with ``m`` microbatches and ``v`` interleaved chunks per GPU, data ``dp``) on an
interconnect of NVLink domains joined by per-GPU NICs (:class:`Interconnect`). One step costs
(:func:`step_breakdown`):

* **compute**: the step's hardware FLOPs (:func:`hardware_flops_per_step`, the Megatron-LM
  accounting: 24·s·h² + 4·s²·h per layer and sequence forward, 2·s·h·V for the logits,
  backward twice the forward, one more forward of the layers with full activation
  recomputation; for a GPT layer this is exactly Narayanan et al.'s (SC21) eq. 3,
  96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)); the s² term halved with ``causal``) of the slowest
  pipeline stage (the last: l/pp layers and the logits, :func:`stage_flops_per_step`) over its
  tp·dp GPUs × peak × a kernel efficiency η_k (an input: the share of peak the GEMMs reach; it
  is tuned, never derived);
* **tensor parallelism**: per microbatch and layer, 4 all-reduces of the activations
  (b·s·h elements; 2 forward, 2 backward; 6 with recomputation) inside an NVLink domain
  (Megatron-LM §3.3), each a reduce-scatter and an all-gather with sequence parallelism (the same
  bytes on a ring; in-switch reduction, ``Interconnect.nvls``, speeds up only the all-reduce);
* **pipeline**: per microbatch, 2·v point-to-point sends of b·s·h elements (activation forward,
  gradient backward), divided by tp with the scatter/gather optimisation (each tp rank sends
  1/tp over its own NIC, then an all-gather inside the domain) (Megatron-LM §4.1);
* **bubble**: (p − 1)/(v·m) of the pipelined time (Megatron-LM §2.2; Llama 3 §3.3.2 states
  the same ratio for its schedule);
* **data parallelism**: the gradients of the GPU's parameter shard (N/(tp·pp) parameters)
  all-reduced, or reduce-scattered and the parameters all-gathered (ZeRO-1/2; ZeRO-3/FSDP
  gathers them again for the backward), over the dp group; the gradient collective hides only
  behind the last microbatch's backward and the pipeline drain, the parameter gather behind the
  first forward and the fill (:func:`dp_exposed_s`); optional gradient compression scales the
  gradient bytes and costs GPU time;
* **throttling**: the extra time when the slowest GPU runs at ``speed`` < 1 (thermal or power
  caps slow compute, and with it the bubble, which is other stages' compute).

Collectives are a sum over tiers (:func:`tiered_collective_s`): inside a domain of g GPUs at
NVLink bandwidth, then across N domains on the NICs with each GPU carrying 1/g of the buffer:

    t_allreduce = 2(g − 1)/g · S/(B_NVL·η_NVL) + 2(N − 1)/N · (S/g)/(B_NIC·η_NIC)
                  + 2(g − 1)·α_NVL + 2(N − 1)·α_NIC

with NCCL's bus-bandwidth factors (NVIDIA nccl-tests ``doc/PERFORMANCE.md``: all-reduce
2(n − 1)/n; reduce-scatter, all-gather, all-to-all (n − 1)/n) and per-tier efficiencies η
and latencies α of Calculon's H100 system (Isaev et al., SC23, ``systems/h100_80g_nvl8.json``:
NVLink 450 GB/s per direction, η 0.6, 1 µs; scale-out 50 GB/s = 400 Gb/s, η 0.9, 2 µs).
A degraded fabric (spines lost, oversubscription) enters as ``nic_share``, the healthy share
of the NIC tier's bandwidth.

Example: a 405B-class step on 8,192 H100 (the Llama 3 layout; η_k 0.5 for illustration; FSDP
and the pipeline sends hidden behind compute):

>>> shape = ModelShape(layers=126, hidden=16384, heads=128, kv_heads=8, ffn_hidden=53248,
...                    gated_mlp=True, vocab=128256, tied_embeddings=False, seq_len=8192,
...                    global_batch=2048)
>>> lay = Layout(tp=8, pp=16, dp=64, interleave=8, dp_collective="rs_ag", dp_overlap=1.0,
...              pp_overlap=1.0)
>>> b = step_breakdown(shape, lay, Interconnect(), peak_flops=989e12, eta_k=0.5)
>>> round(b.total_s, 2), b.limiter
(14.21, 'tp')
>>> {k: round(v, 3) for k, v in b.shares().items() if v}
{'compute': 0.82, 'tp': 0.124, 'bubble': 0.055}
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from functools import cached_property
from typing import Literal

from twin.physics import context_parallel as _cp
from twin.physics import moe as _moe
from twin.physics.moe import MoE

__all__ = [
    "BUS_FACTORS", "Interconnect", "Layout", "MoE", "ModelShape", "active_params_count", "core_attention_flops_per_sequence",
    "layer_passes", "effective_peak_flops", "StepBreakdown", "bubble_fraction", "bus_factor",
    "dp_peers_per_domain", "forward_flops_per_sequence", "hardware_flops_per_step", "mfu",
    "model_flops_per_step", "p2p_s", "params_count", "stage_flops_per_step", "step_breakdown", "tiered_collective_s",
    "tp_collectives_per_layer",
]

Collective = Literal["all_reduce", "reduce_scatter", "all_gather", "all_to_all"]

BUS_FACTORS: dict[str, str] = {
    "all_reduce": "2(n − 1)/n",
    "reduce_scatter": "(n − 1)/n",
    "all_gather": "(n − 1)/n",
    "all_to_all": "(n − 1)/n",
}
"""NCCL's bus-bandwidth factors (nccl-tests doc/PERFORMANCE.md): bytes each GPU moves per byte of
buffer, so a collective of S bytes over n GPUs of bandwidth B takes at least factor·S/B."""


def bus_factor(op: Collective, n: int) -> float:
    """NCCL bus-bandwidth factor of ``op`` over ``n`` GPUs (0 for n = 1)."""
    if n < 1:
        raise ValueError("n must be >= 1")
    if op == "all_reduce":
        return 2.0 * (n - 1) / n
    if op in ("reduce_scatter", "all_gather", "all_to_all"):
        return (n - 1) / n
    raise ValueError(f"unknown collective {op!r}; allowed: {', '.join(BUS_FACTORS)}")


def _steps(op: Collective, n: int) -> int:
    """Latency-bound steps of a ring ``op`` over ``n`` GPUs (2(n − 1) for all-reduce, n − 1 else)."""
    return 2 * (n - 1) if op == "all_reduce" else (n - 1)


# ---- inputs -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class ModelShape:
    """A decoder-only transformer and its global batch.

    ``hidden`` h, ``layers`` l, ``seq_len`` s (tokens), ``vocab`` V, ``global_batch`` B
    (sequences per optimiser step); ``heads``/``kv_heads`` for grouped-query attention (the K
    and V projections are kv_heads/heads of h wide); ``ffn_hidden`` the MLP width (default 4h),
    ``gated_mlp`` three MLP matrices (SwiGLU) instead of two; ``tied_embeddings`` one
    vocabulary matrix for input and output. ``params`` overrides the parameter count (used for
    the data-parallel gradient size and 6N model FLOPs) when the published figure is wanted; ``moe`` a
    mixture-of-experts MLP in the layers after its ``dense_layers`` (twin/physics/moe.py)."""

    layers: int
    hidden: int
    seq_len: int
    vocab: int
    global_batch: int
    heads: int = 0
    kv_heads: int = 0
    ffn_hidden: int = 0
    gated_mlp: bool = False
    tied_embeddings: bool = True
    params: float = 0.0
    moe: MoE | None = None

    def __post_init__(self) -> None:
        for f in ("layers", "hidden", "seq_len", "vocab", "global_batch"):
            if getattr(self, f) < 1:
                raise ValueError(f"{f} must be >= 1")
        if self.moe is not None and self.moe.dense_layers > self.layers:
            raise ValueError("moe.dense_layers must not exceed layers")
        if self.kv_heads and self.heads and (self.kv_heads > self.heads or self.heads % self.kv_heads):
            raise ValueError("kv_heads must divide heads")

    @property
    def ffn(self) -> int:
        """MLP width (4h unless given)."""
        return self.ffn_hidden or 4 * self.hidden

    @property
    def kv_width(self) -> float:
        """Width of the K (and of the V) projection: h·kv_heads/heads (h without GQA)."""
        if self.heads and self.kv_heads:
            return self.hidden * self.kv_heads / self.heads
        return float(self.hidden)

    @property
    def attn_params(self) -> float:
        """Weights of one layer's attention projections: Q and O (2h²), K and V (2·h·kv_width)."""
        h = float(self.hidden)
        return 2 * h * h + 2 * h * self.kv_width

    @property
    def layer_matmul_params(self) -> float:
        """Weights of one (dense) layer's matrix multiplications: the attention projections and the MLP
        (2 or 3 matrices of h × ffn). 12h² for a GPT layer."""
        return self.attn_params + (3 if self.gated_mlp else 2) * float(self.hidden) * self.ffn

    @property
    def moe_layers(self) -> int:
        """Layers with a mixture-of-experts MLP (0 without ``moe``)."""
        return 0 if self.moe is None else self.layers - self.moe.dense_layers

    def layer_params_sum(self, active: bool, capacity: bool = False) -> float:
        """Matmul weights of all layers: total, or (``active``) those one token uses (with the capacity
        factor's padding when ``capacity``)."""
        if self.moe is None:
            return self.layers * self.layer_matmul_params
        mo, h, g = self.moe, self.hidden, self.gated_mlp
        mlp = mo.layer_active_params(h, g, capacity) if active else mo.layer_total_params(h, g)
        return mo.dense_layers * self.layer_matmul_params + self.moe_layers * (self.attn_params + mlp)

    def expert_params(self) -> float:
        """Weights of the routed experts (all layers): sharded by expert parallelism (0 without ``moe``)."""
        if self.moe is None:
            return 0.0
        return self.moe_layers * self.moe.experts * self.moe.expert_params(self.hidden, self.gated_mlp)


@dataclass(frozen=True)
class Layout:
    """How a job is split over its GPUs: tp × pp × dp GPUs.

    ``microbatch`` sequences per microbatch b, so m = B/(dp·b) microbatches per step;
    ``interleave`` v model chunks per pipeline GPU; ``recompute`` full activation
    recomputation (one more forward); ``scatter_gather`` the Megatron-LM inter-stage
    optimisation; ``dp_collective`` 'all_reduce' (DDP) or 'rs_ag' (ZeRO/FSDP: gradients
    reduce-scattered, parameters all-gathered); ``dp_overlap`` the share (0..1) of compute
    time that can hide data-parallel communication, ``tp_overlap`` and ``pp_overlap`` the share
    of tp and pipeline communication hidden (0: exposed, as in Megatron-LM 2021);
    ``grad_bytes`` per gradient element reduced (4: fp32), ``param_bytes`` per parameter
    gathered (2: bf16), ``act_bytes`` per activation element (2);
    ``compression`` a factor (0..1] on data-parallel gradient bytes, costing the GPU
    ``compress_s_per_gb`` seconds per (uncompressed) gigabyte of its gradient shard;
    ``causal`` counts core attention (the s² terms) at half, as current Megatron-LM does for the
    causal mask (False: the non-causal count of Narayanan et al. SC21, against which twin validate's
    kernel efficiencies were tuned); ``zero_stage`` 0 (from ``dp_collective``), 1 or 2 (optimizer
    state, and at 2 gradients, sharded: one reduce-scatter and one all-gather per step) or 3 (ZeRO-3 /
    FSDP: parameters sharded too, gathered in forward and again in backward, one more all-gather);
    ``selective_recompute`` recomputes the core attention (QKᵀ, softmax, attention over V) in the
    backward, one more forward of it (Korthikanti et al. 2022 §5; FlashAttention likewise recomputes its
    scores; ignored with full ``recompute``, which recomputes everything), ``attention_recompute_share`` of
    that forward's FLOPs (1: Megatron-LM's selective recompute, QKᵀ, softmax and attention over V; 0.5:
    FlashAttention-2, whose backward recomputes QKᵀ only, one of the forward's two matmuls: its benchmark
    counts the backward as 2.5 forwards instead of 2); ``sequence_parallel`` splits
    the norms' and the column-parallel GEMMs' inputs over tp (Korthikanti et al. §4.2.2: memory only,
    see twin/physics/memory.py; its reduce-scatter + all-gather move the all-reduce's bytes, and the norms
    it splits are elementwise, outside this FLOP count);
    ``score_bytes`` bytes of memory traffic per attention-score element (a·s² per layer and sequence) over
    a whole step, when the scores are written to memory (softmax, mask and dropout as separate kernels:
    Megatron-LM 2021; 0: FlashAttention-style kernels keep them on chip), at ``hbm_bytes_s`` effective
    bytes/s of the GPU's memory (:func:`score_memory_s`);
    ``cp`` context-parallel GPUs per sequence (twin/physics/context_parallel.py; tp × cp × pp × dp GPUs,
    ranks tp innermost, then cp) exchanging keys and values by ``cp_collective`` ('ring' or 'all_gather');
    ``ep`` expert-parallel GPUs (a divisor of dp) over which a MoE model's experts are split, its
    all-to-alls hidden for the share ``ep_overlap`` (twin/physics/moe.py). With cp > 1 the data-parallel
    collectives and ZeRO shards span dp·cp GPUs (Megatron-Core's data-parallel group with context
    parallelism); the routed experts' gradients are reduced over dp·cp/ep GPUs."""

    tp: int = 1
    pp: int = 1
    dp: int = 1
    microbatch: int = 1
    interleave: int = 1
    recompute: bool = False
    scatter_gather: bool = True
    dp_collective: Literal["all_reduce", "rs_ag"] = "all_reduce"
    dp_overlap: float = 0.0
    tp_overlap: float = 0.0
    pp_overlap: float = 0.0
    grad_bytes: float = 4.0
    param_bytes: float = 2.0
    act_bytes: float = 2.0
    compression: float = 1.0
    compress_s_per_gb: float = 0.0
    causal: bool = False
    zero_stage: int = 0
    selective_recompute: bool = False
    attention_recompute_share: float = 1.0
    sequence_parallel: bool = True
    score_bytes: float = 0.0
    hbm_bytes_s: float = 0.0
    cp: int = 1
    cp_collective: Literal["ring", "all_gather"] = "ring"
    ep: int = 1
    ep_overlap: float = 0.0

    def __post_init__(self) -> None:
        if self.cp < 1 or self.ep < 1:
            raise ValueError("cp and ep must be >= 1")
        if self.score_bytes < 0 or (self.score_bytes > 0 and not self.hbm_bytes_s > 0):
            raise ValueError("score_bytes must be >= 0, and with score_bytes > 0 hbm_bytes_s must be > 0")
        if self.dp % self.ep:
            raise ValueError("ep must divide dp (expert parallelism splits the data-parallel ranks)")
        if self.cp_collective not in ("ring", "all_gather"):
            raise ValueError("cp_collective must be 'ring' or 'all_gather'")
        if not 0.0 <= self.ep_overlap <= 1.0:
            raise ValueError("ep_overlap must be in [0, 1]")
        if not 0.0 <= self.attention_recompute_share <= 1.0:
            raise ValueError("attention_recompute_share must be in [0, 1]")
        if self.zero_stage not in (0, 1, 2, 3):
            raise ValueError("zero_stage must be 0, 1, 2 or 3")
        if self.zero_stage and self.dp_collective != "rs_ag":
            raise ValueError("zero_stage 1-3 shards over data parallelism: dp_collective must be 'rs_ag'")
        for f in ("tp", "pp", "dp", "microbatch", "interleave"):
            if getattr(self, f) < 1:
                raise ValueError(f"{f} must be >= 1")
        for f in ("dp_overlap", "tp_overlap", "pp_overlap"):
            if not 0.0 <= getattr(self, f) <= 1.0:
                raise ValueError(f"{f} must be in [0, 1]")
        if not 0.0 < self.compression <= 1.0:
            raise ValueError("compression must be in (0, 1]")
        if self.dp_collective not in ("all_reduce", "rs_ag"):
            raise ValueError("dp_collective must be 'all_reduce' or 'rs_ag'")

    @property
    def gpus(self) -> int:
        return self.tp * self.cp * self.pp * self.dp

    @property
    def zero(self) -> int:
        """The ZeRO stage in effect: ``zero_stage``, else 1 with 'rs_ag' (gradients reduce-scattered,
        parameters all-gathered after the optimizer step) and 0 (DDP) with 'all_reduce'."""
        return self.zero_stage or (1 if self.dp_collective == "rs_ag" else 0)

    def microbatches(self, shape: ModelShape) -> int:
        """m = B/(dp·b); ValueError unless it is a whole number >= 1."""
        per = self.dp * self.microbatch
        if shape.global_batch % per:
            raise ValueError(f"global_batch {shape.global_batch} is not a multiple of dp × microbatch ({per})")
        return shape.global_batch // per


@dataclass(frozen=True)
class Interconnect:
    """Two tiers: NVLink domains of ``domain_gpus`` GPUs (8: an HGX node; 72: a GB200 NVL72 rack),
    and one NIC per GPU between domains.

    Bandwidths per GPU per direction: ``nvlink_gbyte_s`` GB/s (H100 NVLink 4: 450, i.e. 900 GB/s
    bidirectional, DGX SuperPOD H100 RA; A100: 300; GB200: 900), ``nic_gbit_s`` Gbit/s
    (ConnectX-7: 400). Efficiencies and latencies: Calculon's H100 system (Isaev et al. SC23,
    ``systems/h100_80g_nvl8.json``): NVLink 0.6 and 1 µs, scale-out 0.9 and 2 µs.

    ``nvls``: the NVLink switches reduce in the switch (NVLink SHARP, NCCL's NVLS algorithm: H100's
    NVSwitch and GB200's NVLink Switch; not A100's): an all-reduce inside a domain sends and receives
    each GPU's buffer once (bus factor 1 instead of 2(g − 1)/g, 2 latency steps); reduce-scatter and
    all-gather are unchanged. ``nvlink_op_eff`` multiplies the NVLink tier's bandwidth per operation
    (all_reduce, reduce_scatter, all_gather; 1: the tier's one efficiency)."""

    domain_gpus: int = 8
    nvlink_gbyte_s: float = 450.0
    nvlink_eff: float = 0.6
    nvlink_latency_s: float = 1e-6
    nic_gbit_s: float = 400.0
    nic_eff: float = 0.9
    nic_latency_s: float = 2e-6
    nvls: bool = False
    nvlink_op_eff: tuple[float, float, float] = (1.0, 1.0, 1.0)
    """Multipliers of the NVLink tier's bandwidth for (all_reduce, reduce_scatter, all_gather)."""

    def __post_init__(self) -> None:
        if self.domain_gpus < 1:
            raise ValueError("domain_gpus must be >= 1")
        if len(self.nvlink_op_eff) != 3 or not all(0.0 < e <= 2.0 for e in self.nvlink_op_eff):
            raise ValueError("nvlink_op_eff must be 3 factors in (0, 2]")
        for f in ("nvlink_gbyte_s", "nic_gbit_s"):
            if not getattr(self, f) > 0:
                raise ValueError(f"{f} must be > 0")
        for f in ("nvlink_eff", "nic_eff"):
            if not 0.0 < getattr(self, f) <= 1.0:
                raise ValueError(f"{f} must be in (0, 1]")

    @property
    def nvlink_bytes_s(self) -> float:
        """Effective NVLink bandwidth per GPU per direction, bytes/s (B·η)."""
        return self.nvlink_gbyte_s * 1e9 * self.nvlink_eff

    def nic_bytes_s(self, nic_share: float = 1.0) -> float:
        """Effective NIC bandwidth per GPU, bytes/s (B·η × the fabric's healthy share)."""
        return self.nic_gbit_s * 1e9 / 8.0 * self.nic_eff * nic_share


# ---- collectives --------------------------------------------------------------------------------

def tiered_collective_s(op: Collective, bytes_per_gpu: float, g: int, n_domains: int, ic: Interconnect,
                        nic_share: float = 1.0) -> float:
    """Seconds for a hierarchical ``op`` of ``bytes_per_gpu`` bytes (the buffer S each GPU holds)
    over g GPUs in each of ``n_domains`` NVLink domains (g·N GPUs).

    Inside each domain the ring moves factor(g)·S over NVLink; across domains each of the g GPUs
    carries its 1/g share over its own NIC, factor(N)·(S/g); plus one latency per ring step in
    each tier. ``nic_share`` (0..1] is the healthy share of the NIC tier's bandwidth; 0 gives
    inf when the collective crosses domains."""
    if g < 1 or n_domains < 1:
        raise ValueError("g and n_domains must be >= 1")
    t = 0.0
    if g > 1:
        op_eff = dict(zip(("all_reduce", "reduce_scatter", "all_gather"), ic.nvlink_op_eff)).get(op, 1.0)
        if ic.nvls and op == "all_reduce":   # in-switch reduction: each GPU's buffer out once and in once
            factor, steps = 1.0, 2
        else:
            factor, steps = bus_factor(op, g), _steps(op, g)
        t += factor * bytes_per_gpu / (ic.nvlink_bytes_s * op_eff) + steps * ic.nvlink_latency_s
    if n_domains > 1:
        bw = ic.nic_bytes_s(nic_share)
        if bw <= 0.0:
            return math.inf
        t += bus_factor(op, n_domains) * (bytes_per_gpu / g) / bw + _steps(op, n_domains) * ic.nic_latency_s
    return t


def p2p_s(nbytes: float, bytes_s: float, latency_s: float) -> float:
    """Seconds to send ``nbytes`` point to point at ``bytes_s`` effective bandwidth (inf at 0)."""
    if nbytes <= 0.0:
        return 0.0
    if bytes_s <= 0.0:
        return math.inf
    return nbytes / bytes_s + latency_s


def bubble_fraction(pp: int, microbatches: int, interleave: int = 1) -> float:
    """Pipeline bubble as a share of the ideal (bubble-free) time: (p − 1)/(v·m)."""
    if pp < 1 or microbatches < 1 or interleave < 1:
        raise ValueError("pp, microbatches and interleave must be >= 1")
    return (pp - 1) / (interleave * microbatches)


# ---- FLOPs ----------------------------------------------------------------------------------------

def params_count(shape: ModelShape) -> float:
    """Parameters: ``shape.params`` if given, else l × layer matmul weights + V·h (×2 untied).
    Biases and norms (O(l·h)) are left out: below 0.01 % at these sizes."""
    if shape.params > 0:
        return float(shape.params)
    emb = shape.vocab * shape.hidden * (1 if shape.tied_embeddings else 2)
    return shape.layer_params_sum(active=False) + emb


def active_params_count(shape: ModelShape) -> float:
    """Parameters one token uses: :func:`params_count` for a dense model; for a MoE model the layers'
    active weights (top_k and shared experts, the router) and the embeddings (DeepSeek-V3: 37 B of 671 B)."""
    if shape.moe is None:
        return params_count(shape)
    emb = shape.vocab * shape.hidden * (1 if shape.tied_embeddings else 2)
    return shape.layer_params_sum(active=True) + emb


def effective_peak_flops(peak_flops: float, fp8_peak_flops: float, fp8_share: float) -> float:
    """Peak FLOP/s of a step whose FLOPs run the share ``fp8_share`` at the FP8 peak and the rest at
    ``peak_flops`` (bf16): 1 / (share/fp8 + (1 − share)/bf16), the harmonic mean by FLOPs."""
    if not 0.0 <= fp8_share <= 1.0:
        raise ValueError("fp8_share must be in [0, 1]")
    if peak_flops <= 0 or fp8_peak_flops <= 0:
        raise ValueError("peaks must be > 0")
    return 1.0 / (fp8_share / fp8_peak_flops + (1.0 - fp8_share) / peak_flops)


def forward_flops_per_sequence(shape: ModelShape, causal: bool = False,
                               capacity: bool = False) -> tuple[float, float]:
    """(layers, logits) forward FLOPs of one sequence: l·(2·s·P_layer + 4·s²·h) and 2·s·h·V; with
    ``causal`` the core attention term 4·s²·h is halved (the causal mask; current Megatron-LM's count).
    A MoE layer counts its active weights (``capacity``: with the capacity factor's padding)."""
    s, h = float(shape.seq_len), float(shape.hidden)
    attn = 4.0 * s * s * h * (0.5 if causal else 1.0)
    layers = 2.0 * s * shape.layer_params_sum(active=True, capacity=capacity) + shape.layers * attn
    return layers, 2.0 * s * h * shape.vocab


def core_attention_flops_per_sequence(shape: ModelShape, causal: bool = False) -> float:
    """Forward FLOPs of the core attention (QKᵀ and attention over V) of all layers of one sequence:
    l·4·s²·h (half with ``causal``): what selective recompute computes once more."""
    s, h = float(shape.seq_len), float(shape.hidden)
    return shape.layers * 4.0 * s * s * h * (0.5 if causal else 1.0)


def layer_passes(recompute: bool, selective: bool, shape: ModelShape, causal: bool,
                 attention_share: float = 1.0) -> float:
    """Forward-pass equivalents of the layers' FLOPs per sequence: 3 (forward + backward), 4 with full
    recomputation, and with selective recompute 3 + ``attention_share`` × core attention/layers (that share
    of its forward once more: 1 Megatron-LM's selective recompute, 0.5 FlashAttention-2's backward): the
    multiplier of :func:`forward_flops_per_sequence`'s layer FLOPs."""
    if recompute:
        return 4.0
    if not selective:
        return 3.0
    layers, _ = forward_flops_per_sequence(shape, causal, capacity=True)
    return 3.0 + attention_share * core_attention_flops_per_sequence(shape, causal) / layers


def hardware_flops_per_step(shape: ModelShape, recompute: bool, causal: bool = False,
                            selective: bool = False, attention_share: float = 1.0) -> float:
    """FLOPs the GPUs execute per step (all GPUs): B × (3 or, with full recomputation, 4 passes of
    the layers + 3 of the logits; with selective recompute 3 passes and one more of the core
    attention). For a GPT shape with recomputation (non-causal) this is Megatron-LM's
    96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)); with selective recompute (non-causal)
    72·B·s·l·h²·(1 + 2s/(9h) + V/(12·l·h))."""
    layers, logits = forward_flops_per_sequence(shape, causal, capacity=True)
    return shape.global_batch * (layer_passes(recompute, selective, shape, causal, attention_share) * layers
                                 + 3.0 * logits)


def model_flops_per_step(shape: ModelShape, causal: bool = False) -> float:
    """Model FLOPs per step (no recomputation): PaLM's (Chowdhery et al. 2023, App. B) 6·N + 12·l·h·s
    per token with N the matmul weights (6·N + 6·l·h·s with ``causal``; N the active weights of a MoE
    model, without the capacity factor's padding); the MFU numerator."""
    layers, logits = forward_flops_per_sequence(shape, causal)
    return shape.global_batch * (3.0 * layers + 3.0 * logits)


def stage_flops_per_step(shape: ModelShape, layout: Layout) -> float:
    """FLOPs one GPU of the slowest pipeline stage executes per step: the last stage, with l/pp of
    the layers (an even split, assumption) and the logits: B·(passes·layers/pp + 3·logits)/(tp·cp·dp).
    With pp = 1 this is the whole step over tp·dp GPUs."""
    layers, logits = forward_flops_per_sequence(shape, layout.causal, capacity=True)
    passes = layer_passes(layout.recompute, layout.selective_recompute, shape, layout.causal,
                          layout.attention_recompute_share)
    return shape.global_batch * (passes * layers / layout.pp + 3.0 * logits) / (layout.tp * layout.cp * layout.dp)


def score_memory_s(shape: ModelShape, layout: Layout) -> float:
    """Seconds one GPU of the last pipeline stage spends per step moving attention scores through memory:
    B/dp sequences × l/pp layers × a/tp heads × (s/cp)·s scores × ``score_bytes`` / ``hbm_bytes_s``
    (0 with ``score_bytes`` 0). Memory-bound work the FLOP count leaves out: its weight against a layer's
    GEMMs grows as a·s/h²."""
    if layout.score_bytes <= 0:
        return 0.0
    heads = shape.heads or 1
    s = float(shape.seq_len)
    elems = shape.global_batch / layout.dp * shape.layers / layout.pp * heads / layout.tp * s * s / layout.cp
    return elems * layout.score_bytes / layout.hbm_bytes_s


def mfu(flops_per_step: float, step_s: float, gpus: int, peak_flops: float) -> float:
    """FLOPs utilisation: flops_per_step / (step_s × gpus × peak_flops)."""
    return flops_per_step / (step_s * gpus * peak_flops)


# ---- the step ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class StepBreakdown:
    """One step's time, seconds, by what it is spent on (they sum to ``total_s``).

    ``compute_s`` the GPUs' FLOPs at full speed; ``tp_s`` exposed tensor-parallel collectives;
    ``pp_s`` exposed pipeline sends; ``bubble_s`` the pipeline bubble; ``dp_s`` exposed
    data-parallel communication; ``compress_s`` gradient compression; ``throttle_s`` the extra
    time of a slowed GPU (speed < 1), all components included; ``cp_s`` exposed context-parallel
    key/value exchanges; ``ep_s`` exposed expert-parallel all-to-alls."""

    compute_s: float
    tp_s: float
    pp_s: float
    bubble_s: float
    dp_s: float
    compress_s: float
    throttle_s: float
    cp_s: float = 0.0
    ep_s: float = 0.0

    @cached_property
    def total_s(self) -> float:
        """The step time, s: the sum of the components (taken once: the object is frozen; a running job's
        step-time integral reads it at every progress update)."""
        return (self.compute_s + self.tp_s + self.pp_s + self.bubble_s + self.dp_s + self.compress_s
                + self.throttle_s + self.cp_s + self.ep_s)

    def shares(self) -> dict[str, float]:
        """Each component's share of the step (names without the ``_s``)."""
        t = self.total_s
        return {f.name[:-2]: (getattr(self, f.name) / t if t > 0 else 0.0) for f in fields(self)}

    def describe(self) -> str:
        """One line: the step time and each non-zero component's share, and what limits it."""
        parts = ", ".join(f"{k} {v:.0%}" for k, v in self.shares().items() if v > 0.0005)
        return f"{self.total_s:.4g} s ({parts}); limited by {self.limiter}"

    @property
    def limiter(self) -> str:
        """What limits the step beyond compute: the largest other component, or 'compute' when
        every other component is zero."""
        best, name = 0.0, "compute"
        for f in fields(self):
            if f.name == "compute_s":
                continue
            v = getattr(self, f.name)
            if v > best:
                best, name = v, f.name[:-2]
        return name


def tp_collectives_per_layer(recompute: bool) -> int:
    """Tensor-parallel all-reduces per layer and microbatch: 2 forward + 2 backward (Megatron-LM
    §3.3), 2 more for the recomputed forward."""
    return 6 if recompute else 4


def dp_peers_per_domain(layout: Layout, domain_gpus: int) -> int:
    """Members of one data-parallel group inside one NVLink domain, with ranks placed tp innermost,
    then pp, then dp (Megatron-LM's and Llama 3's order): domain/(tp·pp) when that divides,
    else 1, at most dp. With cp > 1 (the group spans dp·cp GPUs, cp next to tp): the cp peers that share
    a domain, domain/tp when that divides, at most cp."""
    if layout.cp > 1:
        if domain_gpus >= layout.tp and domain_gpus % layout.tp == 0:
            return max(1, min(layout.cp, domain_gpus // layout.tp))
        return 1
    inner = layout.tp * layout.pp
    if domain_gpus >= inner and domain_gpus % inner == 0:
        return max(1, min(layout.dp, domain_gpus // inner))
    return 1


def ep_peers_per_domain(layout: Layout, domain_gpus: int) -> int:
    """Members of one expert-parallel group inside one NVLink domain, the ep ranks next after tp·cp
    (Megatron-Core's order tp-cp-ep-dp-pp): domain/(tp·cp) when that divides, at most ep."""
    inner = layout.tp * layout.cp
    if domain_gpus >= inner and domain_gpus % inner == 0:
        return max(1, min(layout.ep, domain_gpus // inner))
    return 1


def cp_step_s(shape: ModelShape, layout: Layout, ic: Interconnect, flops_s: float,
              nic_share: float = 1.0) -> _cp.CpComm:
    """Context-parallel traffic of one layer and microbatch (twin/physics/context_parallel.py) on the link the
    cp group uses: NVLink when tp·cp fits in the domain, else each GPU's NIC; ``flops_s`` the effective FLOP/s
    that computes an attention block."""
    if layout.cp <= 1:
        return _cp.CpComm(0.0, 0.0, 0.0)
    kv = _cp.kv_chunk_bytes(shape.seq_len, layout.microbatch, shape.kv_width, layout.tp, layout.cp, layout.act_bytes)
    if layout.tp * layout.cp <= ic.domain_gpus:
        bw, lat = ic.nvlink_bytes_s, ic.nvlink_latency_s
    else:
        bw, lat = ic.nic_bytes_s(nic_share), ic.nic_latency_s
    block = _cp.block_attention_flops(shape.seq_len, layout.microbatch, shape.hidden, layout.tp, layout.cp,
                                      layout.causal) / flops_s
    return _cp.cp_comm(kv, layout.cp, layout.cp_collective, layout.recompute, bw, lat, block)


def ep_a2a_bytes(shape: ModelShape, layout: Layout) -> float:
    """Bytes of one GPU's all-to-all buffer per MoE layer and microbatch: its b·s/(cp·tp) tokens (sequence
    parallelism splits them over tp) × top_k × the capacity factor × h × act_bytes (0 without MoE)."""
    mo = shape.moe
    if mo is None:
        return 0.0
    tokens = float(layout.microbatch) * shape.seq_len / (layout.cp * layout.tp)
    return tokens * mo.top_k * mo.capacity_factor * shape.hidden * layout.act_bytes


def ep_step_s(shape: ModelShape, layout: Layout, ic: Interconnect, nic_share: float = 1.0) -> float:
    """All-to-all seconds of one microbatch on a stage (its MoE layers: moe_layers/pp), before overlap:
    4 (6 with recomputation) all-to-alls per layer over the ep group (twin/physics/moe.py)."""
    if shape.moe is None or layout.ep <= 1:
        return 0.0
    g = ep_peers_per_domain(layout, ic.domain_gpus)
    one = _moe.all_to_all_s(ep_a2a_bytes(shape, layout), g, layout.ep // g, ic.nvlink_bytes_s,
                            ic.nic_bytes_s(nic_share), ic.nvlink_latency_s, ic.nic_latency_s)
    return _moe.a2a_per_layer(layout.recompute) * one * shape.moe_layers / layout.pp


def step_breakdown(shape: ModelShape, layout: Layout, ic: Interconnect, peak_flops: float, eta_k: float,
                   speed: float = 1.0, nic_share: float = 1.0) -> StepBreakdown:
    """The step time of ``shape`` trained with ``layout`` on ``ic``, by component (see the module text).

    ``peak_flops`` per GPU (FLOP/s at the training precision), ``eta_k`` in (0, 1] the share of
    peak the kernels reach, ``speed`` in [0, 1] the slowest GPU's speed, ``nic_share`` in [0, 1]
    the healthy share of the NIC tier. The tensor-parallel group must fit in one NVLink domain.
    A zero ``speed`` or a cut fabric that the step needs gives an infinite throttle or
    communication term."""
    if layout.tp > ic.domain_gpus or ic.domain_gpus % layout.tp:
        raise ValueError(f"tp {layout.tp} must divide the NVLink domain ({ic.domain_gpus} GPUs)")
    if not 0.0 < eta_k <= 1.0:
        raise ValueError("eta_k must be in (0, 1]")
    m = layout.microbatches(shape)
    tp, pp, v = layout.tp, layout.pp, layout.interleave
    # compute: the slowest pipeline stage (the last, which carries the logits) sets the step
    compute = stage_flops_per_step(shape, layout) / (peak_flops * eta_k) + score_memory_s(shape, layout)
    # tensor parallelism, per microbatch (its s/cp tokens with context parallelism)
    act = float(layout.microbatch) * shape.seq_len / layout.cp * shape.hidden * layout.act_bytes
    tp_mb = 0.0
    if tp > 1:
        if layout.sequence_parallel:   # each all-reduce becomes a reduce-scatter and an all-gather
            one_tp = (tiered_collective_s("reduce_scatter", act, tp, 1, ic)
                      + tiered_collective_s("all_gather", act, tp, 1, ic))
        else:
            one_tp = tiered_collective_s("all_reduce", act, tp, 1, ic)
        per_layer = tp_collectives_per_layer(layout.recompute) * one_tp
        tp_mb = per_layer * shape.layers / pp * (1.0 - layout.tp_overlap)
    # pipeline sends, per microbatch: 2·v of the activations, in the domain when the whole
    # pipeline fits in it, else on the NICs (each tp rank its 1/tp with scatter/gather)
    pp_mb = 0.0
    if pp > 1:
        if tp * pp <= ic.domain_gpus:
            one = p2p_s(act, ic.nvlink_bytes_s, ic.nvlink_latency_s)
        elif layout.scatter_gather and tp > 1:
            one = (p2p_s(act / tp, ic.nic_bytes_s(nic_share), ic.nic_latency_s)
                   + tiered_collective_s("all_gather", act, tp, 1, ic))
        else:
            one = p2p_s(act, ic.nic_bytes_s(nic_share), ic.nic_latency_s)
        pp_mb = 2.0 * v * one * (1.0 - layout.pp_overlap)
    compute_mb = compute / m
    # context parallelism (per layer, the stage's l/pp layers) and expert parallelism, per microbatch
    cp_mb = cp_step_s(shape, layout, ic, peak_flops * eta_k, nic_share).exposed_s * shape.layers / pp
    ep_mb = ep_step_s(shape, layout, ic, nic_share) * (1.0 - layout.ep_overlap)
    tp_s, pp_s, cp_s, ep_s = m * tp_mb, m * pp_mb, m * cp_mb, m * ep_mb
    comm_mb = tp_mb + pp_mb + cp_mb + ep_mb
    bubble_full = bubble_fraction(pp, m, v) * m * (compute_mb + comm_mb)
    # data parallelism
    dp_s = t_back = t_front = 0.0
    compress = 0.0
    if layout.dp > 1 or layout.cp > 1:
        t_back, t_front, grad = _dp_collectives(shape, layout, ic, nic_share)
        if layout.compression < 1.0:
            compress = grad / 1e9 * layout.compress_s_per_gb
        dp_s = dp_exposed_s(t_back, t_front, compute, m, bubble_full, layout)
    full = StepBreakdown(compute, tp_s, pp_s, bubble_full, dp_s, compress, 0.0, cp_s, ep_s)
    if speed >= 1.0:
        return full
    # throttled: compute, the bubble (other stages' compute) and compression stretch by 1/speed;
    # more compute can hide more data-parallel communication
    if speed <= 0.0:
        return StepBreakdown(compute, tp_s, pp_s, bubble_full, dp_s, compress, math.inf, cp_s, ep_s)
    c2 = compute / speed
    bubble2 = bubble_fraction(pp, m, v) * m * (c2 / m + comm_mb)
    dp2 = dp_exposed_s(t_back, t_front, c2, m, bubble2, layout) if (layout.dp > 1 or layout.cp > 1) else 0.0
    slow_total = c2 + tp_s + pp_s + cp_s + ep_s + bubble2 + dp2 + compress / speed
    return StepBreakdown(compute, tp_s, pp_s, bubble_full, dp_s, compress, slow_total - full.total_s, cp_s, ep_s)


def _dp_collectives(shape: ModelShape, layout: Layout, ic: Interconnect,
                    nic_share: float) -> tuple[float, float, float]:
    """(gradient-side seconds, parameter-gather seconds, gradient bytes) of the data-parallel collectives
    of one GPU: its dense weights over the dp·cp group, a MoE model's routed experts (sharded over ep)
    over the dp·cp/ep GPUs holding the same experts (step_breakdown's data-parallel term)."""
    tp, pp = layout.tp, layout.pp
    experts = shape.expert_params() if shape.params <= 0 else 0.0
    groups = [(params_count(shape) - experts, layout.dp * layout.cp, dp_peers_per_domain(layout, ic.domain_gpus))]
    if experts > 0:
        n_e = layout.dp * layout.cp // layout.ep
        groups.append((experts / layout.ep, n_e, 1))     # expert replicas sit in other domains (assumption)
    t_back = t_front = grad_total = 0.0
    for params, n, g in groups:
        if n <= 1:
            continue
        g = max(1, min(g, n))
        nd = n // g
        shard = params / (tp * pp)
        grad = shard * layout.grad_bytes
        grad_total += grad
        if layout.dp_collective == "all_reduce":
            t_back += tiered_collective_s("all_reduce", grad * layout.compression, g, nd, ic, nic_share)
        else:
            t_back += tiered_collective_s("reduce_scatter", grad * layout.compression, g, nd, ic, nic_share)
            t_ag = tiered_collective_s("all_gather", shard * layout.param_bytes, g, nd, ic, nic_share)
            t_front += t_ag
            if layout.zero == 3:
                t_back += t_ag          # ZeRO-3 gathers the parameters again for the backward
    return t_back, t_front, grad_total


def dp_exposed_s(t_back_s: float, t_front_s: float, compute_s: float, microbatches: int, bubble_s: float,
                 layout: Layout) -> float:
    """Exposed data-parallel seconds of a step with ``microbatches`` accumulated microbatches.

    The gradients of a step are final only in the last microbatch's backward, so their
    reduce-scatter (or all-reduce; ``t_back_s``, with ZeRO-3's backward parameter gather) can hide
    only behind that backward and the pipeline drain: dp_overlap × (backward share of one
    microbatch's compute + half the bubble). The parameter all-gather after the optimizer step
    (``t_front_s``: ZeRO-1/2's, ZeRO-3's forward gather) hides behind the next step's first
    microbatch forward and the pipeline fill: dp_overlap × (forward share + half the bubble). The
    forward is 1 of the 3 passes (1 of 4 with full recomputation, the backward 3 of 4 then)."""
    passes = 4.0 if layout.recompute else 3.0
    mb = compute_s / microbatches
    back = layout.dp_overlap * (mb * (passes - 1.0) / passes + 0.5 * bubble_s)
    front = layout.dp_overlap * (mb / passes + 0.5 * bubble_s)
    return _exposed(t_back_s, back) + _exposed(t_front_s, front)


def _exposed(t_comm: float, hide: float) -> float:
    """Communication time not hidden behind ``hide`` seconds of compute: max(0, t − hide)."""
    x = t_comm - hide
    return x if (x > 0.0 or math.isnan(x)) else 0.0
