"""The chilled-water loop of a cooling plant (issue 24): its thermal inertia, first-order.

The loop's supply temperature above its set point, x (°C), relaxes first-order toward
x_ss = max(0, Q − Q_cap)·R_loop: C·dx/dt = (Q − Q_cap) − x/R while the running chillers fall short of
the heat Q (kW) the loop takes, and toward 0 once they cover it (the chillers' control holds the set
point). C (kJ/°C) is the loop's water, ρ·c_p·V with ρ·c_p = 4186 kJ/(m³·°C); τ = R·C. With every
chiller stopped the loop warms at Q/C at first (the rate a pure tank would), flattening toward Q·R.

Pure functions, no clock; times in seconds unless the name says otherwise.
"""

from __future__ import annotations

from twin.physics.thermal import crossing_time_s, temperature_c

__all__ = ["WATER_KJ_PER_M3_C", "loop_heat_capacity_kj_per_c", "loop_r_c_per_kw", "loop_target_c",
           "loop_offset_c", "loop_crossing_s"]

WATER_KJ_PER_M3_C = 4186.0
"""Volumetric heat capacity of water, kJ/(m³·°C) (ρ = 1000 kg/m³, c_p = 4.186 kJ/(kg·°C))."""


def loop_heat_capacity_kj_per_c(volume_m3: float) -> float:
    """Heat capacity C (kJ/°C) of a loop holding ``volume_m3`` of water."""
    return WATER_KJ_PER_M3_C * volume_m3


def loop_r_c_per_kw(tau_min: float, volume_m3: float) -> float:
    """Loop resistance R (°C/kW) for a time constant ``tau_min`` (minutes): R = τ/C."""
    return tau_min * 60.0 / loop_heat_capacity_kj_per_c(volume_m3)


def loop_target_c(heat_kw: float, capacity_kw: float, r_c_per_kw: float) -> float:
    """Offset (°C) of the loop supply above its set point that the loop settles at: the shortfall
    (heat − running capacity, kW) times R, 0 while the capacity covers the heat."""
    return max(0.0, heat_kw - capacity_kw) * r_c_per_kw


def loop_offset_c(t_s: float, x0_c: float, target_c: float, tau_s: float) -> float:
    """Loop offset (°C) ``t_s`` seconds after it was ``x0_c``, relaxing toward ``target_c``:
    x(t) = x_ss + (x0 − x_ss)·e^(−t/τ)."""
    return float(temperature_c(t_s, x0_c, target_c, tau_s))


def loop_crossing_s(x0_c: float, target_c: float, threshold_c: float, tau_s: float) -> float:
    """Seconds until the loop offset relaxing from ``x0_c`` toward ``target_c`` reaches ``threshold_c``:
    τ·ln((x0 − x_ss)/(x_th − x_ss)); inf when it never does."""
    return float(crossing_time_s(x0_c, target_c, threshold_c, tau_s))
