"""The cooling plant's equations (model.md §4): CRAH capacity derating, the room's target supply, fan
loss, chiller COP, free cooling, cooling and facility power.

Pure functions, no clock. The array forms (``crah_capacity_factor``, ``chiller_cop``, ``free_cooling``,
``cooling_power_w``, ``facility_power_w``) take floats or numpy arrays; ``room_target_c`` and
``fan_r_factor`` take floats (the model evaluates them once per event of one zone or node).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["crah_capacity_factor", "room_target_c", "fan_r_factor", "chiller_cop", "free_cooling",
           "cooling_power_w", "facility_power_w"]


def crah_capacity_factor(ambient_c: Any, design_ambient_c: float, derate_per_c: float) -> Any:
    """Fraction of its rated capacity a CRAH unit delivers at ``ambient_c`` (°C): 1 up to the design
    ambient, less ``derate_per_c`` (per °C) above it, never below 0."""
    return np.maximum(0.0, 1.0 - derate_per_c * np.maximum(0.0, ambient_c - design_ambient_c))


def room_target_c(supply_c: float, heat_w: float, capacity_w: float, r_room_c_per_kw: float) -> float:
    """Supply temperature (°C) an air zone settles at: its set point ``supply_c`` while its CRAH capacity
    covers the heat, else supply_c + (Q − Q_cap)·R_room with the excess in kW and R_room in °C/kW."""
    if heat_w > capacity_w:
        return supply_c + (heat_w - capacity_w) / 1000.0 * r_room_c_per_kw
    return supply_c


def fan_r_factor(healthy: int, required: int) -> float:
    """Multiplier of a node's thermal resistance with ``healthy`` of its fans left: required/healthy
    below ``required`` (the remaining fans move less air), 1 with enough fans; 1 with none (the node
    trips instead)."""
    return required / healthy if 0 < healthy < required else 1.0


def chiller_cop(ambient_c: Any, cop_at_ref: float, ref_c: float, slope_per_c: float, cop_min: float) -> Any:
    """Chiller coefficient of performance at ``ambient_c`` (°C): ``cop_at_ref`` at ``ref_c``, falling by
    ``slope_per_c`` per °C warmer, never below ``cop_min``."""
    return np.maximum(cop_min, cop_at_ref - slope_per_c * (ambient_c - ref_c))


def free_cooling(ambient_c: Any, supply_c: float, approach_c: float) -> Any:
    """Whether the outside air (°C) is cold enough to make the supply without the chiller."""
    return ambient_c <= supply_c - approach_c


def cooling_power_w(heat_w: Any, kw_per_kw: float, cop: Any, free: Any) -> Any:
    """Power (W) to remove ``heat_w``: fans or pumps at ``kw_per_kw`` of the heat, plus the chiller's
    heat/COP unless ``free`` (free cooling)."""
    return heat_w * (kw_per_kw + np.where(free, 0.0, 1.0 / cop))


def facility_power_w(it_w: Any, cooling_w: Any, ups_efficiency: float, transformer_efficiency: float) -> Any:
    """Facility power (W) drawn for IT power ``it_w`` through the UPS, plus ``cooling_w``, both through
    the transformer."""
    return (it_w / ups_efficiency + cooling_w) / transformer_efficiency
