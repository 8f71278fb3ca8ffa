"""Psychrometrics of the outside and supply air (ASHRAE Handbook - Fundamentals 2017, ch. 1) through
PsychroLib (D. Thevenard and D. Meyer, MIT licence; SI units), vectorised over hours.

Pure functions, no clock; they take floats or numpy arrays (°C, Pa, humidity ratio kg/kg, relative
humidity as a fraction 0-1) and return numpy arrays.

* Site pressure: the standard atmosphere at the site's elevation (ch. 1 eq. 3) when a weather file has
  no station pressure.
* Wet-bulb from dry-bulb, dew point and pressure: the thermodynamic wet-bulb temperature, PsychroLib's
  iteration on ch. 1 eq. 33/35 (tolerance 0.001 °C).
* Direct evaporative stage: the adiabatic saturation process keeps the wet-bulb; the air leaves the pads
  at T_out = T_wb + (1 − ε)(T_db − T_wb) with the humidity ratio W(T_out, T_wb, p) of eq. 33/35, hence
  its dew point and relative humidity.

PsychroLib compiles its functions with numba on first use (about 2 s of CPU once per process); it is
imported here lazily, so scenarios without weather humidity never pay for it.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["site_pressure_pa", "wet_bulb_c", "dew_point_from_wet_bulb_c", "hum_ratio_from_dew_point",
           "dew_point_from_hum_ratio_c", "rel_hum", "evaporative_state", "SupplyState"]

F = NDArray[np.float64]


@cache
def _psy() -> Any:
    import psychrolib

    psychrolib.SetUnitSystem(psychrolib.SI)
    return psychrolib


def _arr(x: Any) -> F:
    return np.asarray(x, dtype=np.float64)


def _b(*xs: Any) -> list[F]:
    """The arguments broadcast to one shape, as writeable float arrays (numba's ufuncs take them)."""
    return [np.array(x, dtype=np.float64) for x in np.broadcast_arrays(*[_arr(x) for x in xs])]


def site_pressure_pa(elevation_m: Any) -> F:
    """Standard-atmosphere pressure (Pa) at ``elevation_m`` (ASHRAE Fundamentals ch. 1 eq. 3):
    101,325 Pa at sea level, about 81,200 Pa at 1,829 m."""
    return _arr(_psy().GetStandardAtmPressure(_arr(elevation_m)))


def wet_bulb_c(t_db_c: Any, t_dp_c: Any, pressure_pa: Any) -> F:
    """Thermodynamic wet-bulb temperature (°C) from dry-bulb ``t_db_c``, dew point ``t_dp_c`` (at most the
    dry-bulb: a higher one is taken as the dry-bulb, i.e. saturated air) and pressure ``pressure_pa``."""
    t_db = _arr(t_db_c)
    t_dp = np.minimum(_arr(t_dp_c), t_db)
    t_db, t_dp, p = _b(t_db, t_dp, pressure_pa)
    return _arr(_psy().GetTWetBulbFromTDewPoint(t_db, t_dp, p))


def hum_ratio_from_dew_point(t_dp_c: Any, pressure_pa: Any) -> F:
    """Humidity ratio (kg water per kg dry air) of air whose dew point is ``t_dp_c`` at ``pressure_pa``."""
    t_dp, p = _b(t_dp_c, pressure_pa)
    return _arr(_psy().GetHumRatioFromTDewPoint(t_dp, p))


def hum_ratio_from_wet_bulb(t_db_c: Any, t_wb_c: Any, pressure_pa: Any) -> F:
    """Humidity ratio (kg/kg) of air at dry-bulb ``t_db_c`` with wet-bulb ``t_wb_c`` (at most the dry-bulb)
    at ``pressure_pa`` (ch. 1 eq. 33 above freezing, eq. 35 below)."""
    t_db = _arr(t_db_c)
    t_wb = np.minimum(_arr(t_wb_c), t_db)
    t_db, t_wb, p = _b(t_db, t_wb, pressure_pa)
    return np.maximum(_arr(_psy().GetHumRatioFromTWetBulb(t_db, t_wb, p)), 1e-7)


def dew_point_from_hum_ratio_c(t_db_c: Any, hum_ratio: Any, pressure_pa: Any) -> F:
    """Dew point (°C) of air at dry-bulb ``t_db_c`` with humidity ratio ``hum_ratio`` at ``pressure_pa``."""
    t_db, w, p = _b(t_db_c, np.maximum(_arr(hum_ratio), 1e-7), pressure_pa)
    return _arr(_psy().GetTDewPointFromHumRatio(t_db, w, p))


def dew_point_from_wet_bulb_c(t_db_c: Any, t_wb_c: Any, pressure_pa: Any) -> F:
    """Dew point (°C) of air at dry-bulb ``t_db_c`` and wet-bulb ``t_wb_c`` at ``pressure_pa``."""
    return dew_point_from_hum_ratio_c(t_db_c, hum_ratio_from_wet_bulb(t_db_c, t_wb_c, pressure_pa), pressure_pa)


def rel_hum(t_db_c: Any, hum_ratio: Any, pressure_pa: Any) -> F:
    """Relative humidity (fraction 0-1, capped at 1) of air at ``t_db_c`` with ``hum_ratio`` at
    ``pressure_pa``."""
    t_db, w, p = _b(t_db_c, np.maximum(_arr(hum_ratio), 1e-7), pressure_pa)
    return np.minimum(_arr(_psy().GetRelHumFromHumRatio(t_db, w, p)), 1.0)


class SupplyState:
    """State of the air leaving an evaporative air unit: dry-bulb ``t_c`` (°C), humidity ratio ``w``
    (kg/kg), dew point ``dew_c`` (°C) and relative humidity ``rh`` (0-1), one per hour."""

    __slots__ = ("t_c", "w", "dew_c", "rh")

    def __init__(self, t_c: F, w: F, dew_c: F, rh: F) -> None:
        self.t_c, self.w, self.dew_c, self.rh = t_c, w, dew_c, rh


def evaporative_state(t_db_c: Any, t_wb_c: Any, pressure_pa: Any, effectiveness: float,
                      setpoint_c: Any = -np.inf, wet: Any = True) -> SupplyState:
    """Air after a direct evaporative stage of saturation ``effectiveness`` ε fed with outside air at
    dry-bulb ``t_db_c``, wet-bulb ``t_wb_c`` and ``pressure_pa``: the pads cool it along the wet-bulb line
    to T_out = T_wb + (1 − ε)(T_db − T_wb), modulated to stop at ``setpoint_c`` when T_out is below it (the
    pads are wetted only as far as the set point needs); with ``wet`` false (no water) or outside air at or
    below the set point nothing evaporates and the humidity ratio is the outside air's. The supply is
    max(set point, air leaving the pads): below the set point the unit mixes return air to hold it, at the
    same humidity ratio (the hall adds no moisture)."""
    t_db = _arr(t_db_c)
    t_wb = np.minimum(_arr(t_wb_c), t_db)
    p = _arr(pressure_pa)
    t_out = t_wb + (1.0 - effectiveness) * (t_db - t_wb)
    evap = np.asarray(wet, dtype=bool) & (t_db > setpoint_c)
    t_pad = np.where(evap, np.maximum(t_out, setpoint_c), t_db)
    w = hum_ratio_from_wet_bulb(t_pad, t_wb, p)  # adiabatic: the wet-bulb is kept; t_pad = t_db: outside air
    t_s = np.maximum(t_pad, setpoint_c)
    t_s, w, p = _b(t_s, w, p)
    return SupplyState(t_s.astype(np.float64), w.astype(np.float64), dew_point_from_hum_ratio_c(t_s, w, p),
                       rel_hum(t_s, w, p))
