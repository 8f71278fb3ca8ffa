"""Lumped first-order thermal model of a GPU (model.md §3).

Each GPU is one thermal RC node::

    C · dT/dt = P − (T − T_in) / R

with ``R`` in °C/W (junction to inlet), ``C`` in J/°C, ``P`` in W and temperatures in °C, so
the time constant ``τ = R·C`` is in **seconds**. With ``P`` and ``T_in`` constant between events
the response is a single exponential and threshold crossings have a closed form; the simulator
schedules those crossings as events and never steps time.

When the inlet itself relaxes first-order (an air zone heating up after a cooling loss, §4),
the GPU's response is the exact sum of two exponentials (:func:`gpu_temperature_moving_inlet_c`)
and crossings are found with ``scipy.optimize.brentq`` on that exact expression
(:func:`crossing_time_moving_inlet_s`) rather than by quantising the inlet.

All functions broadcast over numpy arrays; scalar inputs give a Python-compatible float.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from twin.physics.arrays import FloatOrArray, as_f64 as _f, float_or_array as _out

__all__ = [
    "steady_state_c",
    "tau_s",
    "temperature_c",
    "crossing_time_s",
    "power_cap_w",
    "speed_fraction",
    "trips",
    "room_supply_c",
    "gpu_temperature_moving_inlet_c",
    "crossing_time_moving_inlet_s",
    "acceleration_factor",
    "accelerated_failure_time_h",
]


# --------------------------------------------------------------------------- constant inlet


def steady_state_c(power_w: ArrayLike, inlet_c: ArrayLike, r_c_per_w: ArrayLike) -> FloatOrArray:
    """Steady-state temperature T_ss = T_in + P·R, in °C.

    ``power_w`` in W, ``inlet_c`` in °C, ``r_c_per_w`` in °C/W.
    """
    return _out(_f(inlet_c) + _f(power_w) * _f(r_c_per_w))


def tau_s(r_c_per_w: ArrayLike, c_j_per_c: ArrayLike) -> FloatOrArray:
    """Thermal time constant τ = R·C, in seconds (R in °C/W, C in J/°C)."""
    return _out(_f(r_c_per_w) * _f(c_j_per_c))


def temperature_c(t_s: ArrayLike, t0_c: ArrayLike, tss_c: ArrayLike, tau_s: ArrayLike) -> FloatOrArray:
    """Temperature after ``t_s`` seconds of constant power: T_ss + (T0 − T_ss)·e^(−t/τ), in °C.

    ``t0_c`` is the temperature at t = 0, ``tss_c`` the steady state, ``tau_s`` the time
    constant in seconds. A zero time constant means an instantaneous response (T0 at t = 0,
    T_ss after).
    """
    t, t0, tss, tau = np.broadcast_arrays(_f(t_s), _f(t0_c), _f(tss_c), _f(tau_s))
    with np.errstate(divide="ignore", invalid="ignore"):
        decay = np.exp(-t / tau)
    decay = np.where(tau > 0, decay, np.where(t > 0, 0.0, 1.0))
    return _out(tss + (t0 - tss) * decay)


def crossing_time_s(
    t0_c: ArrayLike, tss_c: ArrayLike, threshold_c: ArrayLike, tau_s: ArrayLike
) -> FloatOrArray:
    """Time in seconds at which the step response reaches ``threshold_c``.

    t_x = τ·ln((T0 − T_ss)/(T_x − T_ss)) when T_x lies strictly between T0 and T_ss (rising or
    falling response); ``inf`` elementwise otherwise (never reached, or already there at t = 0).
    """
    t0, tss, tx, tau = np.broadcast_arrays(_f(t0_c), _f(tss_c), _f(threshold_c), _f(tau_s))
    crossed = ((t0 < tx) & (tx < tss)) | ((tss < tx) & (tx < t0))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = tau * np.log((t0 - tss) / (tx - tss))
    return _out(np.where(crossed, t, np.inf))


def power_cap_w(
    demand_w: ArrayLike,
    inlet_c: ArrayLike,
    r_c_per_w: ArrayLike,
    slowdown_c: ArrayLike,
    p_min_w: ArrayLike,
) -> FloatOrArray:
    """Thermally allowed power in W (model.md §3 slowdown).

    Returns ``demand_w`` where its steady state T_in + P_d·R is at most ``slowdown_c``;
    otherwise max(P_min, (slowdown_c − T_in)/R), never above the demand. ``inlet_c`` and
    ``slowdown_c`` in °C, ``r_c_per_w`` in °C/W.
    """
    demand, inlet, r, slow, pmin = np.broadcast_arrays(
        _f(demand_w), _f(inlet_c), _f(r_c_per_w), _f(slowdown_c), _f(p_min_w)
    )
    ok = inlet + demand * r <= slow
    with np.errstate(divide="ignore", invalid="ignore"):
        capped = np.minimum(demand, np.maximum(pmin, (slow - inlet) / r))
    return _out(np.where(ok, demand, capped))


def speed_fraction(
    cap_w: ArrayLike, demand_w: ArrayLike, idle_w: ArrayLike, alpha: ArrayLike
) -> FloatOrArray:
    """Speed of a power-capped GPU as a fraction of full speed, in [0, 1].

    min(1, ((P_cap − P_idle)/(P_d − P_idle))^α) when P_cap < P_d, else 1; 0 when P_cap ≤ P_idle.
    Powers in W; ``alpha`` dimensionless (model default 0.5, an assumption).
    """
    cap, demand, idle, a = np.broadcast_arrays(_f(cap_w), _f(demand_w), _f(idle_w), _f(alpha))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ratio = (cap - idle) / (demand - idle)
        ratio = np.clip(np.nan_to_num(ratio, nan=0.0, posinf=1.0, neginf=0.0), 0.0, 1.0)
        s = np.minimum(1.0, ratio**a)
    s = np.where(cap <= idle, 0.0, s)
    return _out(np.where(cap >= demand, 1.0, s))


def trips(
    inlet_c: ArrayLike, r_c_per_w: ArrayLike, p_min_w: ArrayLike, shutdown_c: ArrayLike
) -> bool | NDArray[np.bool_]:
    """Whether the GPU trips: its steady state at P_min (W) exceeds ``shutdown_c`` (°C)."""
    res = _f(inlet_c) + _f(p_min_w) * _f(r_c_per_w) > _f(shutdown_c)
    return bool(res) if np.ndim(res) == 0 else res


# --------------------------------------------------------------------------- moving inlet


def room_supply_c(
    t_s: ArrayLike, s0_c: ArrayLike, s_target_c: ArrayLike, room_tau_s: ArrayLike
) -> FloatOrArray:
    """Air-zone supply temperature relaxing first-order, in °C.

    S(t) = S_target + (S0 − S_target)·e^(−t/τ_room); ``t_s`` and ``room_tau_s`` in seconds.
    """
    return temperature_c(t_s, s0_c, s_target_c, room_tau_s)


def _phi(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """expm1(x)/x, equal to 1 at x = 0 (stable for small |x|)."""
    small = np.abs(x) < 1e-8
    with np.errstate(divide="ignore", invalid="ignore"):
        v = np.expm1(x) / x
    return np.where(small, 1.0 + 0.5 * x, v)


def gpu_temperature_moving_inlet_c(
    t_s: ArrayLike,
    t0_c: ArrayLike,
    power_w: ArrayLike,
    r_c_per_w: ArrayLike,
    tau_gpu_s: ArrayLike,
    s0_c: ArrayLike,
    s_target_c: ArrayLike,
    tau_room_s: ArrayLike,
) -> FloatOrArray:
    """GPU temperature (°C) at ``t_s`` seconds under constant power and a first-order inlet.

    Exact solution of τ_g·dT/dt = S(t) + P·R − T with S(t) = S_t + (S0 − S_t)·e^(−t/τ_r)::

        T(t) = T_f + (T0 − T_f)·e^(−t/τ_g) + D·τ_r/(τ_r − τ_g)·(e^(−t/τ_r) − e^(−t/τ_g))

    where T_f = S_t + P·R (final steady state) and D = S0 − S_t. The last term is evaluated
    as D·(t/τ_g)·e^(−t/τ_g)·expm1(x)/x with x = t·(1/τ_g − 1/τ_r), which is exact and stable
    as τ_g → τ_r (the limit D·(t/τ)·e^(−t/τ)); for large x the direct difference is used.
    Times in s, power in W, R in °C/W. Both time constants must be positive.
    """
    t, t0, p, r, tg, s0, st, tr = np.broadcast_arrays(
        _f(t_s), _f(t0_c), _f(power_w), _f(r_c_per_w), _f(tau_gpu_s), _f(s0_c),
        _f(s_target_c), _f(tau_room_s),
    )
    tf = st + p * r
    d = s0 - st
    eg = np.exp(-t / tg)
    x = t * (1.0 / tg - 1.0 / tr)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        stable = d * (t / tg) * eg * _phi(np.minimum(x, 30.0))
        direct = d * tr / (tr - tg) * (np.exp(-t / tr) - eg)
    term = np.where(x > 30.0, direct, stable)
    return _out(tf + (t0 - tf) * eg + term)


def _moving_inlet_extremum_s(
    t0_c: float, power_w: float, r_c_per_w: float, tau_gpu_s: float,
    s0_c: float, s_target_c: float, tau_room_s: float,
) -> float:
    """Time (s) of the single interior extremum of the moving-inlet response, or nan if none.

    dT/dt = 0 reduces to e^(x·t) = 1 + (k/τ_g)·u with k = τ_r − τ_g, x = k/(τ_g τ_r) and
    u = 1 − (T0 − T_f)/D, so t* = τ_r·u·log1p(y)/y with y = k·u/τ_g (t* = τ·u when τ_g = τ_r).
    The derivative is a sum of two exponentials, so it changes sign at most once.
    """
    tf = s_target_c + power_w * r_c_per_w
    d = s0_c - s_target_c
    if d == 0.0:
        return math.nan
    u = 1.0 - (t0_c - tf) / d
    k = tau_room_s - tau_gpu_s
    y = k * u / tau_gpu_s
    if y <= -1.0:
        return math.nan
    t_star = tau_room_s * u * (1.0 if abs(y) < 1e-12 else math.log1p(y) / y)
    return t_star if t_star > 0.0 else math.nan


def crossing_time_moving_inlet_s(
    t0_c: ArrayLike,
    power_w: ArrayLike,
    r_c_per_w: ArrayLike,
    tau_gpu_s: ArrayLike,
    s0_c: ArrayLike,
    s_target_c: ArrayLike,
    tau_room_s: ArrayLike,
    threshold_c: ArrayLike,
    horizon_s: ArrayLike,
) -> FloatOrArray:
    """First time (s) in (0, ``horizon_s``] at which the moving-inlet response reaches ``threshold_c``.

    Root-finding, not inlet quantisation (model.md §3): the exact expression of
    :func:`gpu_temperature_moving_inlet_c` minus the threshold is bracketed and solved with
    ``scipy.optimize.brentq`` (xtol 1e-9 s). Its derivative is a sum of two exponentials, so
    the response has at most one interior extremum t* (found in closed form); the scan grid
    is therefore [0, t*, horizon] (t* only when inside the horizon), on each piece of which
    the response is monotone, so the first piece whose ends straddle the threshold holds the
    first crossing and contains no other. Starting exactly on the threshold does not count
    as a crossing at t = 0. Returns ``inf`` if the threshold is not reached within the
    horizon. Broadcasts over array arguments (one brentq per element).
    """
    args = np.broadcast_arrays(
        _f(t0_c), _f(power_w), _f(r_c_per_w), _f(tau_gpu_s), _f(s0_c), _f(s_target_c),
        _f(tau_room_s), _f(threshold_c), _f(horizon_s),
    )
    out = np.empty(args[0].shape, dtype=np.float64)
    for idx in np.ndindex(out.shape):
        out[idx] = _crossing_moving_scalar(*(float(a[idx]) for a in args))
    return _out(out)


def _crossing_moving_scalar(
    t0: float, p: float, r: float, tg: float, s0: float, st: float, tr: float,
    tx: float, horizon: float,
) -> float:
    def f(t: float) -> float:
        return float(gpu_temperature_moving_inlet_c(t, t0, p, r, tg, s0, st, tr)) - tx

    if not horizon > 0.0:
        return math.inf
    grid = [0.0]
    t_star = _moving_inlet_extremum_s(t0, p, r, tg, s0, st, tr)
    if t_star == t_star and 0.0 < t_star < horizon:
        grid.append(t_star)
    grid.append(float(horizon))
    values = [f(t) for t in grid]
    for a, b, fa, fb in zip(grid[:-1], grid[1:], values[:-1], values[1:]):
        if fa == 0.0:
            continue  # on the threshold at the start of a monotone piece: not a crossing
        if fb == 0.0:
            return b
        if (fa < 0.0) != (fb < 0.0):
            from scipy.optimize import brentq  # here: scipy.optimize costs ~0.1 s of every start-up

            return float(brentq(f, a, b, xtol=1e-9, rtol=4 * np.finfo(float).eps, maxiter=200))
    return math.inf


# --------------------------------------------------------------------------- ageing (model.md §2)


def acceleration_factor(temp_c: ArrayLike, t_ref_c: ArrayLike, doubling_c: ArrayLike) -> FloatOrArray:
    """Ageing rate relative to the reference temperature: AF = 2^((T − T_ref)/doubling_c).

    Temperatures in °C; ``doubling_c`` is the warming (°C) that doubles the ageing rate (halves
    the life), e.g. 15 °C for fans (sources.md).
    """
    return _out(np.exp2((_f(temp_c) - _f(t_ref_c)) / _f(doubling_c)))


def accelerated_failure_time_h(
    now_h: ArrayLike, effective_age_h: ArrayLike, life_h: ArrayLike, af: ArrayLike
) -> FloatOrArray:
    """Absolute failure time (h) of a part whose effective age grows at rate ``af`` from now on.

    The part fails when its effective age reaches its drawn ``life_h`` (both in hours at the
    reference temperature): t = now + (life − age)/AF, never before ``now_h``. AF must be > 0.
    """
    remaining = np.maximum(0.0, _f(life_h) - _f(effective_age_h))
    return _out(_f(now_h) + remaining / _f(af))
