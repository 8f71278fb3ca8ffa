"""Mixture-of-experts layers: parameters (total and active), the capacity factor, and the all-to-all of
expert parallelism (issue 50). Pure functions and a frozen record; no simulation clock.

A MoE transformer (DeepSeek-V3, Liu et al. 2024, arXiv 2412.19437 §2.1 and §4.2; Megatron-Core MoE,
``megatron/core/transformer/moe``) replaces the MLP of its layers after the first ``dense_layers`` by
``experts`` routed experts (MLPs of width ``expert_ffn``) of which a router picks ``top_k`` per token,
plus ``shared_experts`` that every token passes through. Per MoE layer:

* parameters: total = router (h·E) + (E + shared)·P_e, active per token = (top_k + shared)·P_e, with
  P_e = (3 if gated else 2)·h·expert_ffn; the FLOPs of a token follow its *active* parameters;
* the **capacity factor** c: each expert computes up to c × its average share of tokens (padded when
  fewer come; Megatron-Core ``moe_expert_capacity_factor``, GShard/Switch): the routed experts execute c
  times the routed FLOPs and the all-to-all moves c times the routed tokens (c = 1: dropless, balanced);
* **expert parallelism** over ``ep`` GPUs (each holds E/ep experts): per layer and microbatch the tokens
  go to their experts (dispatch) and come back (combine), in forward and again (their gradients) in
  backward: 4 all-to-alls (6 with full recomputation). Each GPU's buffer is
  S = tokens × top_k × c × h × bytes; with uniform routing over ep = g·N GPUs (g in each of N NVLink
  domains) a GPU sends (g − 1)/(g·N) of S to the others of its domain over NVLink and (N − 1)/N of S to
  other domains over its own NIC, both at once (:func:`all_to_all_s`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["MoE", "all_to_all_s", "a2a_per_layer"]


@dataclass(frozen=True)
class MoE:
    """The mixture-of-experts part of a model shape (see the module text)."""

    experts: int
    top_k: int
    expert_ffn: int
    shared_experts: int = 0
    dense_layers: int = 0
    capacity_factor: float = 1.0

    def __post_init__(self) -> None:
        if self.experts < 1 or self.top_k < 1 or self.expert_ffn < 1:
            raise ValueError("experts, top_k and expert_ffn must be >= 1")
        if self.top_k > self.experts:
            raise ValueError("top_k must not exceed experts")
        if self.shared_experts < 0 or self.dense_layers < 0:
            raise ValueError("shared_experts and dense_layers must be >= 0")
        if not (math.isfinite(self.capacity_factor) and self.capacity_factor >= 1.0):
            raise ValueError("capacity_factor must be >= 1")

    def expert_params(self, hidden: int, gated: bool) -> float:
        """Weights of one expert MLP, P_e = (3 if gated else 2)·h·expert_ffn."""
        return (3.0 if gated else 2.0) * hidden * self.expert_ffn

    def layer_total_params(self, hidden: int, gated: bool) -> float:
        """MLP weights of one MoE layer: the router h·E and (E + shared) experts."""
        return float(hidden) * self.experts + (self.experts + self.shared_experts) * self.expert_params(hidden, gated)

    def layer_active_params(self, hidden: int, gated: bool, capacity: bool = False) -> float:
        """MLP weights one token uses in a MoE layer: (top_k [× capacity factor] + shared) experts and the
        router; ``capacity``: with the padding of the capacity factor (executed, not model, FLOPs)."""
        k = self.top_k * (self.capacity_factor if capacity else 1.0)
        return float(hidden) * self.experts + (k + self.shared_experts) * self.expert_params(hidden, gated)


def all_to_all_s(bytes_per_gpu: float, g: int, n_domains: int, nvlink_bytes_s: float, nic_bytes_s: float,
                 nvlink_latency_s: float, nic_latency_s: float) -> float:
    """Seconds of one all-to-all of ``bytes_per_gpu`` (S, each GPU's buffer) over g GPUs in each of
    ``n_domains`` NVLink domains, uniform destinations: max(S·(g − 1)/(g·N) / B_NVL, S·(N − 1)/N / B_NIC) plus
    one latency per tier used (the two tiers send at once); inf when the NIC tier is needed at 0 bandwidth."""
    if g < 1 or n_domains < 1:
        raise ValueError("g and n_domains must be >= 1")
    n = g * n_domains
    if n == 1 or bytes_per_gpu <= 0.0:
        return 0.0
    t_nvl = bytes_per_gpu * (g - 1) / n / nvlink_bytes_s if g > 1 else 0.0
    t_nic = 0.0
    if n_domains > 1:
        if nic_bytes_s <= 0.0:
            return math.inf
        t_nic = bytes_per_gpu * (n_domains - 1) / n_domains / nic_bytes_s
    lat = (nvlink_latency_s if g > 1 else 0.0) + (nic_latency_s if n_domains > 1 else 0.0)
    return max(t_nvl, t_nic) + lat


def a2a_per_layer(recompute: bool) -> int:
    """All-to-alls per MoE layer and microbatch: dispatch and combine forward, their gradients backward
    (4), two more for the recomputed forward (6)."""
    return 6 if recompute else 4
