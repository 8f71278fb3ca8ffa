"""Direct evaporative (adiabatic) cooling of outside air (sources-realism §9): supply temperature, the
heat taken up by evaporation, water use and WUE.

Pure functions, no clock; they take floats or numpy arrays.

* Saturation effectiveness ε = (T_db − T_out)/(T_db − T_wb) (HVAC handbook Eq. 9.8.6, usually
  0.75–0.95), so the pads' outlet is T_out = T_wb + (1 − ε)(T_db − T_wb), bounded below by wet-bulb.
* The hall's supply is max(set point, T_out) while the pads are wetted, max(set point, T_db) in dry
  operation (outside air alone; below the set point the unit mixes return air to hold it).
* The outside air is cooled only as far as the set point needs (the pads are modulated: an
  assumption), so the heat the evaporating water takes up is m·c_p·(T_db − T_supply) with the air
  flow m·c_p = Q_air/ΔT_IT that carries the hall's air heat Q_air across the IT equipment with a rise
  ΔT_IT; water = that heat / h_fg × (1 + blowdown share) (litres = kg at 1 kg/L).
* WUE = site water (L) / IT energy (kWh) (The Green Grid 2011; ISO/IEC 30134-9).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["LATENT_HEAT_J_PER_KG", "outlet_c", "supply_c", "evaporated_heat_w", "water_l", "wue_l_per_kwh"]

LATENT_HEAT_J_PER_KG = 2.45e6
"""Latent heat of vaporisation of water near 20 °C, J/kg (2,454 kJ/kg at 20 °C, 2,442 at 25 °C: steam
tables, e.g. the IAPWS-IF97 values in any engineering handbook); one value for all hours (its change over
10–30 °C is under 1 %)."""


def outlet_c(t_db_c: Any, t_wb_c: Any, effectiveness: float) -> Any:
    """Air temperature (°C) leaving wetted pads of saturation ``effectiveness`` ε with outside air at
    dry-bulb ``t_db_c`` and wet-bulb ``t_wb_c``: T_wb + (1 − ε)(T_db − T_wb)."""
    return t_wb_c + (1.0 - effectiveness) * (t_db_c - t_wb_c)


def supply_c(t_db_c: Any, t_wb_c: Any, effectiveness: float, setpoint_c: float, wet: Any) -> Any:
    """Supply temperature (°C) of an evaporative air unit: max(set point, T_wb + (1 − ε)(T_db − T_wb))
    while ``wet`` (pads wetted: water available), max(set point, T_db) in dry operation."""
    t_out = np.where(wet, outlet_c(t_db_c, t_wb_c, effectiveness), t_db_c)
    out = np.maximum(setpoint_c, t_out)
    return float(out) if np.ndim(out) == 0 else out


def evaporated_heat_w(air_heat_w: Any, t_db_c: Any, supply_c_: Any, it_rise_c: float) -> Any:
    """Heat (W) taken up by evaporating water while the outside air at ``t_db_c`` is cooled to the
    supply ``supply_c_``: the air flow that carries ``air_heat_w`` across the IT equipment with a rise of
    ``it_rise_c`` (m·c_p = Q/ΔT) times max(0, T_db − T_supply). 0 when the supply is not below dry-bulb
    (no evaporation: mixing or dry operation)."""
    return air_heat_w * np.maximum(0.0, t_db_c - supply_c_) / it_rise_c


def water_l(evaporated_j: Any, blowdown_share: float, latent_j_per_kg: float = LATENT_HEAT_J_PER_KG) -> Any:
    """Site water (L) for ``evaporated_j`` (J) of evaporation: evaporated / h_fg × (1 + blowdown share),
    the blowdown (bleed) water that keeps the dissolved solids down, per litre evaporated (1 kg = 1 L)."""
    return evaporated_j / latent_j_per_kg * (1.0 + blowdown_share)


def wue_l_per_kwh(water_l_: float, it_kwh: float) -> float:
    """Water usage effectiveness, site water (L) per IT energy (kWh); NaN without IT energy."""
    return water_l_ / it_kwh if it_kwh > 0 else float("nan")
