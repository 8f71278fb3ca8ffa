"""Each node's power figures for the power chain and the site limits in a hall of node pools (``cluster.pools``,
issue 52): the GPU's idle and training draw, its lowest cap and speed exponent, the non-GPU load and the node's
full demand, W, as per-node arrays built once (:func:`pool_figures`).

Without pools, or with pools of the hall's node's power figures, there are none (None): the power chain
(``twin.model.power``) and the site limits (``twin.model.site_limit``) keep their scalar path. With them, a
site cap stays one number c in W per GPU, each node's cap clamped at its own pool's lowest cap (max(c, min_w)),
and each node's speed follows its own pool's law (model.md §3) at its cap (:meth:`PoolFigures.speed`). The
water-fill that finds c (:func:`site_gpu_cap_floor_w`) counts each GPU at no less than its own floor.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from twin.physics.thermal import speed_fraction

if TYPE_CHECKING:  # pragma: no cover
    from twin.scenario.schema import Node, Scenario


def _figures(node: Node) -> tuple[float, float, float, float, float, float]:
    g = node.gpu
    return (float(g.idle_w), float(g.demand_w), float(g.min_w), float(g.speed_alpha), float(node.non_gpu_w),
            float(node.full_power_w))


class PoolFigures:
    """Per-node power figures (arrays over the hall's nodes, W; ``speed_alpha`` dimensionless)."""

    def __init__(self, n: int, pools: list[tuple[int, int, tuple[float, float, float, float, float, float]]]) -> None:
        arr = np.empty((6, n))
        for a, b, figs in pools:
            arr[:, a:b] = np.asarray(figs)[:, None]
        self.idle_w, self.demand_w, self.min_w, self.speed_alpha, self.non_gpu_w, self.full_w = arr
        """GPU idle draw, GPU demand at full load (train_w: P_d of the speed law), lowest GPU cap, speed
        exponent, non-GPU load at full utilisation and the node's full demand (non-GPU + GPUs × TDP)."""
        self.total_full_w = float(sum((b - a) * figs[5] for a, b, figs in pools))
        """Every node at its full demand, W (the UPS rating when not stated)."""

    def speed(self, cap_w: NDArray[np.float64]) -> NDArray[np.float64]:
        """Each node's speed fraction at its GPU cap ``cap_w`` (W per GPU, ``inf``: none), by its own pool's law."""
        s = np.ones(len(cap_w))
        lim = np.isfinite(cap_w)
        if lim.any():
            s[lim] = speed_fraction(cap_w[lim], self.demand_w[lim], self.idle_w[lim], self.speed_alpha[lim])
        return s

    def site_cap(self, gpu_w: NDArray[np.float64], on: NDArray[np.bool_], gpus: int, fixed_w: float,
                 limit_w: float) -> tuple[NDArray[np.float64] | float, bool]:
        """The site cap's per-node GPU caps (W) that hold site IT power at ``limit_w`` (W), and whether the limit
        is short (every powered GPU at its floor still above it). ``gpu_w``: each node's per-GPU draw before the
        site cap, W; ``on``: the powered nodes; ``fixed_w``: their non-GPU load, W. The caps are max(c, min_w) of
        each node (``inf`` when the site is under its limit: no cap)."""
        c, short = site_gpu_cap_floor_w(gpu_w[on], self.min_w[on], gpus, fixed_w, limit_w)
        if not np.isfinite(c):
            return np.inf, short
        return np.maximum(c, self.min_w), short


def site_gpu_cap_floor_w(gpu_w: NDArray[np.float64], min_w: NDArray[np.float64], gpus_per_node: float,
                         fixed_w: float, limit_w: float) -> tuple[float, bool]:
    """The common per-GPU cap c (W) of a water-fill whose GPUs each keep their own floor: the largest c with
    fixed_w + gpus_per_node · Σ min(gpu_w_i, max(c, min_w_i)) ≤ limit_w. Returns (c, short): ``inf`` when the
    site is under its limit; when even every GPU at its floor (min(gpu_w_i, min_w_i)) exceeds it, short is True
    and c is the lowest floor (each node then held at its own min_w). With one common floor this is
    :func:`twin.physics.power.site_gpu_cap_w` floored at it."""
    x = np.asarray(gpu_w, dtype=np.float64)
    lo = np.minimum(x, min_w)  # each GPU's draw at its floor
    budget = (float(limit_w) - float(fixed_w)) / float(gpus_per_node)  # Σ per-GPU watts allowed
    if x.sum() <= budget:
        return float("inf"), False
    base = float(lo.sum())
    if len(x) == 0 or base > budget:
        return (float(min_w.min()) if len(min_w) else 0.0), True
    # f(c) = Σ max(lo_i, min(x_i, c)) = base + Σ_{lo_i < c} (c − lo_i) − Σ_{x_i < c} (c − x_i): piecewise linear,
    # non-decreasing, with breakpoints at the lo_i and the x_i; f(min lo) = base <= budget < f(max x) = Σ x
    ls, xs = np.sort(lo), np.sort(x)
    cl = np.concatenate(([0.0], np.cumsum(ls)))
    cx = np.concatenate(([0.0], np.cumsum(xs)))
    p = np.unique(np.concatenate((ls, xs)))
    nl = np.searchsorted(ls, p, side="left")
    nx = np.searchsorted(xs, p, side="left")
    f = base + nl * p - cl[nl] - (nx * p - cx[nx])
    k = int(np.flatnonzero(f <= budget)[-1])  # the last breakpoint within the budget: c lies in [p_k, p_k+1)
    slope = int(np.searchsorted(ls, p[k], side="right")) - int(np.searchsorted(xs, p[k], side="right"))
    return float(p[k] + (budget - f[k]) / slope), False


def pool_figures(sc: Scenario) -> PoolFigures | None:
    """The per-node power figures of a hall whose pools change them (``cluster.pools``), else None."""
    cl = sc.cluster
    if not cl.pools:
        return None
    pools = [(a, b, _figures(node)) for a, b, node in cl.node_pools()]
    if all(figs == pools[0][2] for _, _, figs in pools):
        return None
    return PoolFigures(cl.n_nodes, pools)


__all__ = ["PoolFigures", "pool_figures", "site_gpu_cap_floor_w"]
