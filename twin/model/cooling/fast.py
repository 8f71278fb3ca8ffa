"""The ``twin.physics.thermal`` equations in the forms the cooling model evaluates on its hot paths.

The physics functions broadcast and check their arguments (``np.broadcast_arrays``, a zero time
constant, 0-d results returned as floats), which costs more than the arithmetic itself on arrays of
a few units at every event. These are the same equations on arrays (or floats) the model has already
shaped, nothing else. ``tests/test_cooling_fast.py`` pins each to its physics function: bit for bit
where the expression is the same, to 1e-12 relative where the form rounds differently (the replay's
log-decay forms, the room supply in minutes).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from twin.physics import thermal as phys

__all__ = ["demand_w", "steady_c", "tau_s", "power_cap_w", "capped_speed", "step_c", "log_decay", "step_log_c", "shared_segments_c",
           "grouped_segments_c", "supply_c", "crossing_time_min",
           "rise_time_s"]


def demand_w(idle_w: float, tdp_w: float, util: Any) -> Any:
    """Demanded GPU power (W) at utilisation ``util`` in [0, 1] (``physics.power.gpu_power_w``)."""
    return idle_w + (tdp_w - idle_w) * util


def steady_c(inlet_c: Any, power_w: Any, r_c_per_w: Any) -> Any:
    """Steady-state temperature T_in + P·R, °C (``physics.thermal.steady_state_c``)."""
    return inlet_c + power_w * r_c_per_w


def tau_s(r_c_per_w: Any, c_j_per_c: float) -> Any:
    """Time constant R·C, s (``physics.thermal.tau_s``)."""
    return r_c_per_w * c_j_per_c


def power_cap_w(demand_w: NDArray[np.float64], inlet_c: NDArray[np.float64], r_c_per_w: NDArray[np.float64],
                slowdown_c: float, p_min_w: float) -> NDArray[np.float64]:
    """Thermally allowed power per GPU (W): the demand where its steady state is at most ``slowdown_c``,
    else max(P_min, (slowdown_c − T_in)/R), never above the demand (``physics.thermal.power_cap_w`` on
    arrays of one shape)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        capped = np.minimum(demand_w, np.maximum(p_min_w, (slowdown_c - inlet_c) / r_c_per_w))
    return np.where(inlet_c + demand_w * r_c_per_w <= slowdown_c, demand_w, capped)


def capped_speed(cap_w: NDArray[np.float64], demand_w: NDArray[np.float64], idle_w: float,
                 alpha: float) -> NDArray[np.float64]:
    """Speed fraction of GPUs whose cap ``cap_w`` is below their demand: ((P_cap − P_idle)/(P_d − P_idle))^α
    clipped to [0, 1], 0 at or below idle (``physics.thermal.speed_fraction`` wherever cap < demand; the
    values elsewhere are not that function's and callers discard them)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        s = np.minimum(1.0, np.clip((cap_w - idle_w) / (demand_w - idle_w), 0.0, 1.0) ** alpha)
    return np.where(cap_w <= idle_w, 0.0, s)


def rise_time_s(t_c: NDArray[np.float64], tss_c: NDArray[np.float64], threshold_c: float,
                tau_s: NDArray[np.float64]) -> NDArray[np.float64]:
    """Time (s) at which units at ``t_c`` heading for ``tss_c`` reach ``threshold_c``, for units known to
    cross it (t_c < threshold_c < tss_c): τ·ln((T0 − T_ss)/(T_x − T_ss)) (``physics.thermal.crossing_time_s``
    where it crosses)."""
    return tau_s * np.log((t_c - tss_c) / (threshold_c - tss_c))


def step_c(t_c: Any, tss_c: Any, dt_h: Any, tau_s: Any) -> Any:
    """Temperature (°C) ``dt_h`` hours after ``t_c`` under the steady state ``tss_c`` and time constant
    ``tau_s`` > 0 s: T_ss + (T − T_ss)·e^(−t/τ) (``physics.thermal.temperature_c`` at t = 3600·dt_h)."""
    return tss_c + (t_c - tss_c) * np.exp(dt_h * -3600.0 / tau_s)


def log_decay(dt_h: NDArray[np.float64], tau_s: Any) -> NDArray[np.float64]:
    """ln of the decay factor e^(−t/τ) of segments of ``dt_h`` hours, time constants ``tau_s`` (s)."""
    lg = dt_h * -3600.0
    lg /= tau_s
    return lg


def step_log_c(t_c: Any, tss_c: Any, lg: Any) -> Any:
    """The step response with the log of its decay factor ``lg`` (≤ 0) given: e^lg·T + (1 − e^lg)·T_ss,
    the second weight by expm1 (exact near lg = 0)."""
    return np.exp(lg) * t_c - np.expm1(lg) * tss_c


def shared_segments_c(t_c: NDArray[np.float64], tss_c: NDArray[np.float64], lg: NDArray[np.float64]
                      ) -> NDArray[np.float64]:
    """Temperatures (°C) after segments that every element of ``t_c`` shares: segment i has steady state
    ``tss_c[i]`` and decay log ``lg[i]``. The recurrence T_i = a_i·T_(i−1) + (1 − a_i)·T_ss,i in closed
    form: T_last = A·T_0 + Σ_i (1 − a_i)·T_ss,i·Π_(j>i) a_j, products as sums of logs ≤ 0."""
    after = lg[::-1].cumsum()[::-1]  # Σ of the logs from each segment to the last
    lg_all = float(after[0])
    after -= lg  # … after each segment
    forced_c = float((-np.expm1(lg) * tss_c * np.exp(after)).sum())
    out: NDArray[np.float64] = np.exp(lg_all) * t_c + forced_c
    return out


def grouped_segments_c(t0_c: NDArray[np.float64], tss_c: NDArray[np.float64], lg: NDArray[np.float64],
                       start: NDArray[np.int64], cnt: NDArray[np.int64], last: NDArray[np.int64]
                       ) -> NDArray[np.float64]:
    """:func:`shared_segments_c` for groups of segments, one group per element of ``t0_c``: the group's
    segments are ``tss_c[start:start + cnt]`` and ``lg`` likewise (``last`` = start + cnt − 1), in
    time order. Returns each group's temperature after its last segment (°C)."""
    csum = lg.cumsum()
    base = csum[start] - lg[start]
    lg_from_first = np.subtract(csum, base.repeat(cnt), out=csum)  # Σ of logs from the group's first entry to this one
    lg_all = lg_from_first[last]
    contrib = np.expm1(lg)  # −expm1(lg) · T_ss,prev · e^(lg_all − lg_from_first), in place
    np.negative(contrib, out=contrib)
    contrib *= tss_c
    decay = lg_all.repeat(cnt)
    decay -= lg_from_first
    contrib *= np.exp(decay, out=decay)
    out: NDArray[np.float64] = np.exp(lg_all) * t0_c + np.add.reduceat(contrib, start)
    return out


def supply_c(s0_c: Any, target_c: Any, dt_min: float, tau_min: float) -> Any:
    """Air-zone supply (°C) ``dt_min`` minutes after ``s0_c``, relaxing toward ``target_c`` with the room's
    time constant ``tau_min`` (minutes) (``physics.thermal.room_supply_c``, there in seconds)."""
    return target_c + (s0_c - target_c) * math.exp(-dt_min / tau_min)


def crossing_time_min(s0_c: float, target_c: float, threshold_c: float, tau_min: float) -> float:
    """Minutes until a supply relaxing from ``s0_c`` toward ``target_c`` (time constant ``tau_min``,
    minutes) reaches ``threshold_c``; inf if it never does. ``physics.thermal.crossing_time_s`` is
    τ·ln(…), linear in τ: given τ in minutes it gives minutes."""
    return float(phys.crossing_time_s(s0_c, target_c, threshold_c, tau_min))
