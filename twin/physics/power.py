"""Electrical power of GPUs, nodes and UPS batteries (model.md §5).

All functions broadcast over numpy arrays; scalar inputs give a float.

UPS assumptions (stated, not sourced): the battery delivers constant power, its usable energy
is linear in the state of charge (SoC, 0..1) and independent of the discharge rate (no
Peukert effect, no temperature or ageing derating), so the ride-through time is linear in SoC
and inversely proportional to the load fraction. Recharge is linear in time, empty to full in
``recharge_h`` hours (real chargers taper near full; linear is the simple, stated choice).
"""

from __future__ import annotations

from typing import Union

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatOrArray = Union[float, NDArray[np.float64]]

__all__ = [
    "gpu_power_w",
    "node_power_budget_w",
    "gpu_cap_from_budget_w",
    "ups_ride_through_min",
    "ups_soc_after",
    "ups_recharge_soc",
]


def _out(x: NDArray) -> FloatOrArray:
    x = np.asarray(x)
    return float(x) if x.ndim == 0 else x


def _f(x: ArrayLike) -> NDArray[np.float64]:
    return np.asarray(x, dtype=np.float64)


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
