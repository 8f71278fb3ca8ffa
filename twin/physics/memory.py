"""Memory feasibility of a parallel layout: what one GPU holds at its peak, against its HBM (issue 49).

Pure functions, no simulation clock. Bytes per GPU (GB = 10⁹ bytes) of a job with
:class:`~twin.physics.parallel.ModelShape` and :class:`~twin.physics.parallel.Layout`, on the
pipeline stage that holds the most (:func:`memory_breakdown` checks the first and the last stage):

* **model state** (ZeRO paper, Rajbhandari et al. 2020, §3.1, mixed-precision Adam, K = 12): the
  GPU's N/(tp·pp) parameters (an even split over stages, assumption) as ``param_bytes`` weights,
  ``grad_bytes`` gradients and ``optimizer_bytes`` (12: fp32 master weights, momentum, variance);
  ZeRO-1 shards the optimizer state over dp, ZeRO-2 the gradients too, ZeRO-3/FSDP the weights too
  (and holds two layers' gathered weights, the one in use and the one prefetched);
* **activations** of one layer and microbatch (Korthikanti et al. 2022, "Reducing Activation
  Recomputation in Large Transformer Models", §4: 34·s·b·h + 5·a·s²·b bytes for a GPT layer with
  dropout), here without dropout and for grouped-query attention and gated MLPs, in elements of
  ``act_bytes``: s·b·h·(2 norm inputs + QKV input + Q + 2·kv/h for K and V + the output projection's
  input + the MLP input + (3 if gated else 2)·ffn/h MLP intermediates), plus the a·s²·b softmax
  output without recomputation (``none``); ``selective`` recomputes the attention core and keeps
  none of the s² term (Megatron-LM's default, and what FlashAttention does); ``full`` keeps only
  each layer's input (s·b·h) and rebuilds one layer at a time (that layer's selective set on top).
  With tp > 1 all of it is divided by tp with sequence parallelism (``Layout.sequence_parallel``,
  Megatron-LM's default with tp); without it the two norm inputs and the QKV and MLP inputs (4·s·b·h) are
  whole on every tp rank and only the rest is divided (Korthikanti et al. §4.2.2), and
  by cp with context parallelism (each GPU holds s/cp tokens). A MoE layer (twin/physics/moe.py) keeps,
  instead of the dense MLP's intermediates, (top_k × capacity factor + shared) copies of the token (the
  dispatched input) and of the expert's intermediates;
* **mixture-of-experts and context parallelism**: the routed experts' weights are split over ep, the rest
  over tp·pp as before; ZeRO shards the dense state over dp·cp and the experts' state over dp·cp/ep;
* **in flight**: the 1F1B schedule keeps min(pp, m) microbatches of its l/pp layers on the first
  stage, × (1 + (pp − 1)/(pp·v)) with v interleaved chunks (Korthikanti et al. §4.2); one
  microbatch on the last stage, which also holds its logits (s·b·V/tp in fp32, 4 bytes, for the
  loss: assumption);
* a **reserve** (CUDA context, NCCL buffers, allocator fragmentation): ``reserve_gb``, an input.

>>> from twin.physics.parallel import Layout, ModelShape
>>> gpt = ModelShape(layers=24, hidden=2048, heads=16, seq_len=2048, vocab=51200, global_batch=8)
>>> m = memory_breakdown(gpt, Layout(dp=8), "selective", reserve_gb=0.0)
>>> round(m.total_gb, 2), m.stage
(27.27, 'first')
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Literal

from twin.physics.parallel import Layout, ModelShape, params_count

__all__ = ["RECOMPUTE_MODES", "MemoryBreakdown", "Recompute", "activation_bytes_per_layer", "memory_breakdown",
           "check_fits"]

Recompute = Literal["none", "selective", "full"]
RECOMPUTE_MODES = ("none", "selective", "full")
LOGIT_BYTES = 4.0
"""Bytes per logit held for the loss (fp32; assumption: Megatron-LM casts the logits to fp32 for the
cross-entropy)."""


def activation_bytes_per_layer(shape: ModelShape, layout: Layout, mode: Recompute) -> float:
    """Bytes one layer keeps for its backward, per microbatch of ``layout.microbatch`` sequences, on one
    GPU (divided by tp with sequence parallelism); the module text gives the count."""
    if mode not in RECOMPUTE_MODES:
        raise ValueError(f"recompute mode must be one of {', '.join(RECOMPUTE_MODES)}")
    s, b, h = float(shape.seq_len), float(layout.microbatch), float(shape.hidden)
    sbh = s * b * h
    split = layout.tp * layout.cp
    # without sequence parallelism (tp > 1) the norms' inputs and the column-parallel GEMMs' inputs are
    # whole on every tp rank (Korthikanti et al. 2022 §4.2.2): 2 norm inputs + the QKV and MLP inputs
    whole = 0.0 if (layout.sequence_parallel or layout.tp == 1) else 4.0 * sbh / layout.cp
    if mode == "full":
        return sbh * layout.act_bytes / (split if (layout.sequence_parallel or layout.tp == 1) else layout.cp)
    heads = shape.heads or 1
    mats = 3 if shape.gated_mlp else 2
    mlp = mats * shape.ffn / h
    mo = shape.moe
    if mo is not None:   # the layers' average: dense MLPs in the first dense_layers, experts in the others
        per_moe = (mo.top_k * mo.capacity_factor + mo.shared_experts) * (1.0 + mats * mo.expert_ffn / h)
        mlp = (mo.dense_layers * mlp + shape.moe_layers * per_moe) / shape.layers
    elems = sbh * (2 + 1 + 1 + 2 * shape.kv_width / h + 1 + 1 + mlp)
    if mode == "none":
        elems += heads * s * s * b
    if whole:
        return (whole + (elems - 4.0 * sbh) / split) * layout.act_bytes
    return elems * layout.act_bytes / split


@dataclass(frozen=True)
class MemoryBreakdown:
    """Bytes per GPU, GB (10⁹ bytes), on ``stage`` ('first' or 'last'), by what holds them."""

    stage: str
    weights_gb: float
    gradients_gb: float
    optimizer_gb: float
    activations_gb: float
    logits_gb: float
    reserve_gb: float

    @property
    def total_gb(self) -> float:
        return float(sum(getattr(self, f.name) for f in fields(self) if f.name.endswith("_gb")))

    def largest(self) -> tuple[str, float]:
        """The largest component (name without ``_gb``) and its GB."""
        best = max((f.name for f in fields(self) if f.name.endswith("_gb") and f.name != "reserve_gb"),
                   key=lambda n: getattr(self, n))
        return best[:-3], getattr(self, best)

    def describe(self) -> str:
        parts = ", ".join(f"{f.name[:-3]} {getattr(self, f.name):.1f}" for f in fields(self)
                          if f.name.endswith("_gb"))
        return f"{self.total_gb:.1f} GB on the {self.stage} stage ({parts})"


def memory_breakdown(shape: ModelShape, layout: Layout, mode: Recompute, reserve_gb: float,
                     optimizer_bytes: float = 12.0) -> MemoryBreakdown:
    """What one GPU holds at its peak on the fuller of the first and the last pipeline stage (GB)."""
    if reserve_gb < 0 or optimizer_bytes < 0:
        raise ValueError("reserve_gb and optimizer_bytes must be >= 0")
    split = layout.tp * layout.pp
    experts = shape.expert_params() if shape.params <= 0 else 0.0
    dense = (params_count(shape) - experts) / split
    expert = experts / (split * layout.ep)
    z, dp = layout.zero, layout.dp * layout.cp
    dp_e = max(1, dp // layout.ep)

    def state(per_param: float, stage: int) -> float:
        return per_param * (dense / (dp if z >= stage else 1) + expert / (dp_e if z >= stage else 1))

    weights = state(layout.param_bytes, 3)
    if z >= 3:   # two layers' gathered weights: the one computing and the one prefetched
        layer = shape.layer_matmul_params
        if shape.moe is not None and shape.moe_layers:
            layer = shape.attn_params + shape.moe.layer_total_params(shape.hidden, shape.gated_mlp) / layout.ep
        weights += 2.0 * layer / layout.tp * layout.param_bytes
    grads = state(layout.grad_bytes, 2)
    opt = state(optimizer_bytes, 1)
    m = layout.microbatches(shape)
    per_layer = activation_bytes_per_layer(shape, layout, mode)
    layers_stage = shape.layers / layout.pp
    work = activation_bytes_per_layer(shape, layout, "selective") if mode == "full" else 0.0
    in_flight = min(layout.pp, m)
    if layout.interleave > 1 and layout.pp > 1:
        factor = in_flight * (1.0 + (layout.pp - 1) / (layout.pp * layout.interleave))
    else:
        factor = float(in_flight)
    first = factor * layers_stage * per_layer + work
    last = layers_stage * per_layer + work
    logits = shape.seq_len * layout.microbatch * shape.vocab / (layout.tp * layout.cp) * LOGIT_BYTES
    g = 1e9
    a = MemoryBreakdown("first", weights / g, grads / g, opt / g, first / g, 0.0 if layout.pp > 1 else logits / g,
                        reserve_gb)
    if layout.pp == 1:
        return a
    b = MemoryBreakdown("last", weights / g, grads / g, opt / g, last / g, logits / g, reserve_gb)
    return a if a.total_gb >= b.total_gb else b


def check_fits(shape: ModelShape, layout: Layout, mode: Recompute, hbm_gb: float, reserve_gb: float,
               optimizer_bytes: float = 12.0) -> MemoryBreakdown:
    """The breakdown when it fits in ``hbm_gb``; ValueError naming what does not fit and by how much
    otherwise."""
    mb = memory_breakdown(shape, layout, mode, reserve_gb, optimizer_bytes)
    if mb.total_gb > hbm_gb:
        name, gb = mb.largest()
        raise ValueError(f"the layout does not fit in memory: {mb.describe()} > {hbm_gb:g} GB of HBM, "
                         f"{mb.total_gb - hbm_gb:.1f} GB over (largest: {name} {gb:.1f} GB; recompute '{mode}', "
                         f"ZeRO stage {layout.zero})")
    return mb
