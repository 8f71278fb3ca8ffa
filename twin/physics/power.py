"""Electrical power of GPUs, nodes and UPS batteries (model.md §5).

All functions broadcast over numpy arrays; scalar inputs give a float.

UPS assumptions (stated, not sourced): the battery delivers constant power, its usable energy
is linear in the state of charge (SoC, 0..1) and independent of the discharge rate (no
Peukert effect, no temperature or ageing derating), so the ride-through time is linear in SoC
and inversely proportional to the load fraction. Recharge is linear in time, empty to full in
``recharge_h`` hours (real chargers taper near full; linear is the simple, stated choice).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from twin.physics.arrays import FloatOrArray, as_f64 as _f, float_or_array as _out

__all__ = [
    "gpu_power_w",
    "non_gpu_power_w",
    "node_power_budget_w",
    "gpu_cap_from_budget_w",
    "node_it_power_w",
    "site_gpu_cap_w",
    "ups_ride_through_min",
    "ups_soc_after",
    "ups_recharge_soc",
    "power_ramps",
]


def gpu_power_w(idle_w: ArrayLike, tdp_w: ArrayLike, utilisation: ArrayLike) -> FloatOrArray:
    """Demanded GPU power in W: P_idle + (P_tdp − P_idle)·utilisation.

    ``utilisation`` must lie in [0, 1] (ValueError otherwise); thermal and PSU caps are
    applied separately.
    """
    u = _f(utilisation)
    if np.any((u < 0.0) | (u > 1.0)) or np.any(np.isnan(u)):
        raise ValueError("utilisation must lie in [0, 1]")
    idle = _f(idle_w)
    return _out(idle + (_f(tdp_w) - idle) * u)


def non_gpu_power_w(util: ArrayLike, idle_w: float, busy_w: float) -> FloatOrArray:
    """Node load besides the GPUs in W at utilisation ``util`` in [0, 1]: idle_w + (busy_w − idle_w)·util
    (CPUs, memory, NICs, NVSwitches and fans working harder as the GPUs do; constant when the two are equal)."""
    return _out(idle_w + (busy_w - idle_w) * _f(util))


def node_power_budget_w(healthy_psus_on_live_feeds: ArrayLike, capacity_w: ArrayLike) -> FloatOrArray:
    """Node power budget in W: healthy PSUs on live feeds × per-PSU ``capacity_w`` (W)."""
    return _out(_f(healthy_psus_on_live_feeds) * _f(capacity_w))


def gpu_cap_from_budget_w(budget_w: ArrayLike, non_gpu_w: ArrayLike, gpus: ArrayLike) -> FloatOrArray:
    """Per-GPU power cap in W when the node budget binds: (budget − non-GPU load)/GPUs, ≥ 0.

    Apply it only when the budget is below the node's demand; the tighter of this and the
    thermal cap applies (model.md §5).
    """
    g = _f(gpus)
    if np.any(g <= 0):
        raise ValueError("gpus must be positive")
    return _out(np.maximum(0.0, (_f(budget_w) - _f(non_gpu_w)) / g))


def node_it_power_w(
    util: ArrayLike, gpu_cap_w: ArrayLike, gpus: ArrayLike, idle_w: ArrayLike, tdp_w: ArrayLike,
    non_gpu_w: ArrayLike,
) -> FloatOrArray:
    """IT power of a node in W: non-GPU load + GPUs × min(GPU demand, GPU cap).

    GPU demand = P_idle + (P_tdp − P_idle)·util (model.md §5); ``gpu_cap_w`` is the tightest
    per-GPU cap in W (thermal, PSU budget, site cap; ``inf`` for none). ``non_gpu_w`` (CPUs,
    memory, NICs, NVSwitches, fans) is taken as constant (assumption). This is on the
    simulator's hot path (every load change), so ``util`` is not range-checked here: callers
    pass utilisation in [0, 1] (:func:`gpu_power_w` checks it).
    """
    u = np.asarray(util, dtype=np.float64)
    if isinstance(gpu_cap_w, float) and gpu_cap_w == np.inf:  # no cap (the common case): two array ops
        p = u * (gpus * (tdp_w - idle_w)) + (non_gpu_w + gpus * idle_w)
    else:
        p = np.minimum(u * (tdp_w - idle_w) + idle_w, gpu_cap_w) * gpus + non_gpu_w  # type: ignore[operator]
    return float(p) if np.ndim(p) == 0 else p


def site_gpu_cap_w(gpu_w: ArrayLike, gpus_per_node: float, fixed_w: float, site_cap_w: float) -> float:
    """Per-GPU power cap in W that holds a site at ``site_cap_w`` (W), by water-filling.

    ``gpu_w`` is each powered node's per-GPU draw before the site cap (W); ``fixed_w`` the load
    the cap cannot touch (non-GPU load of those nodes, W). Returns the largest c with
    fixed_w + gpus_per_node · Σ min(gpu_w_i, c) ≤ site_cap_w, which caps only the hungriest
    GPUs and leaves the others alone; ``inf`` when the site is under its cap, 0 when even zero
    GPU power exceeds it (the caller floors c at the GPUs' minimum power limit).
    """
    x = np.sort(_f(gpu_w).ravel())
    budget = (float(site_cap_w) - float(fixed_w)) / float(gpus_per_node)  # Σ per-GPU watts allowed
    if x.sum() <= budget:
        return float("inf")
    if budget <= 0.0:
        return 0.0
    m = len(x)
    before = np.concatenate(([0.0], np.cumsum(x)[:-1]))  # Σ of the draws below x_j
    at = before + (m - np.arange(m)) * x  # Σ min(x_i, x_j): non-decreasing in j
    j = int(np.argmax(at > budget))  # first level that overshoots; the cap lies in [x_{j-1}, x_j)
    return float((budget - before[j]) / (m - j))


def ups_ride_through_min(
    state_of_charge: ArrayLike, ride_through_full_min: ArrayLike, load_fraction: ArrayLike = 1.0
) -> FloatOrArray:
    """Minutes a UPS can carry its load: SoC × ride_through_full_min / load_fraction.

    ``ride_through_full_min`` is the rated ride-through at full charge and full (rated) load;
    ``load_fraction`` is the load relative to that rating. Linear in SoC and inverse in load
    (constant-power discharge, no Peukert effect; see module docstring). Zero load gives inf.
    """
    soc = np.clip(_f(state_of_charge), 0.0, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = soc * _f(ride_through_full_min) / _f(load_fraction)
    return _out(np.where(_f(load_fraction) <= 0.0, np.inf, t))


def ups_soc_after(
    soc0: ArrayLike, outage_min: ArrayLike, ride_through_full_min: ArrayLike, load_fraction: ArrayLike
) -> FloatOrArray:
    """State of charge (0..1) after carrying ``load_fraction`` for ``outage_min`` minutes.

    SoC0 − outage_min·load_fraction/ride_through_full_min, floored at 0 (linear discharge, the
    same assumption as :func:`ups_ride_through_min`).
    """
    soc = _f(soc0) - _f(outage_min) * _f(load_fraction) / _f(ride_through_full_min)
    return _out(np.clip(soc, 0.0, 1.0))


def ups_recharge_soc(soc0: ArrayLike, hours: ArrayLike, recharge_h: ArrayLike) -> FloatOrArray:
    """State of charge (0..1) after recharging for ``hours`` h: min(1, SoC0 + hours/recharge_h).

    Linear recharge, empty to full in ``recharge_h`` hours (stated assumption).
    """
    return _out(np.clip(_f(soc0) + _f(hours) / _f(recharge_h), 0.0, 1.0))


def power_ramps(ts: NDArray[np.float64], vs: NDArray[np.float64], horizon_h: float,
                window_h: float) -> tuple[float, float]:
    """Largest instantaneous step (W) and largest change over any ``window_h`` (W per window) of a
    right-continuous step function given by breakpoints ``ts`` and values ``vs`` on [0, horizon_h].

    The change P(t + w) − P(t) of a step function is itself piecewise constant and changes only
    where t or t + w is a breakpoint, so it is evaluated at those points exactly.
    """
    if len(ts) == 0:
        return math.nan, math.nan
    step = float(np.abs(np.diff(vs)).max()) if len(vs) > 1 else 0.0

    def at(t: NDArray[np.float64]) -> NDArray[np.float64]:
        return vs[np.clip(np.searchsorted(ts, t, side="right") - 1, 0, len(vs) - 1)]

    cand = np.concatenate((ts, ts - window_h))
    cand = cand[(cand >= 0.0) & (cand + window_h <= horizon_h)]
    if len(cand) == 0:
        return step, math.nan
    ramp = float(np.abs(at(cand + window_h) - at(cand)).max())
    return step, ramp
