"""Psychrometrics (twin.physics.psychro, through PsychroLib) against ASHRAE Handbook - Fundamentals
(2017, ch. 1) values and hand computations with its equations and its saturation-pressure table, within
0.2 °C (issue 42: wet-bulb at sea level and at 806 mbar; the supply state after a direct evaporative
stage)."""

from __future__ import annotations

import numpy as np
import pytest

from twin.physics import psychro

# saturation pressure of water over liquid water, Pa (ASHRAE Fundamentals 2017 ch. 1 Table 3; steam tables)
P_WS = {7: 1002.1, 8: 1073.0, 16: 1818.8, 17: 1938.4, 18: 2064.7, 19: 2197.8, 20: 2339.2, 22: 2644.8, 23: 2810.4}


def _interp_dew_point(p_w_pa: float, lo: int) -> float:
    """Dew point (°C) between table rows lo and lo + 1 by linear interpolation of the saturation pressure."""
    return lo + (p_w_pa - P_WS[lo]) / (P_WS[lo + 1] - P_WS[lo])


def _w_eq33(t_c: float, t_wb_c: float, p_pa: float) -> float:
    """Humidity ratio from dry-bulb, wet-bulb and pressure: ASHRAE Fundamentals ch. 1 eq. 33 (above freezing),
    with W_s* = 0.621945 p_ws(t*)/(p − p_ws(t*)) (eq. 23) and p_ws from the table."""
    p_ws = P_WS[int(t_wb_c)]
    w_s = 0.621945 * p_ws / (p_pa - p_ws)
    return ((2501 - 2.326 * t_wb_c) * w_s - 1.006 * (t_c - t_wb_c)) / (2501 + 1.86 * t_c - 4.186 * t_wb_c)


def _p_w(w: float, p_pa: float) -> float:
    """Partial pressure of water vapour (Pa) of humidity ratio ``w`` (eq. 20 inverted)."""
    return p_pa * w / (0.621945 + w)


def test_standard_atmosphere() -> None:
    # ch. 1 Table 1: 101.325 kPa at sea level, 89.875 kPa at 1,000 m
    assert psychro.site_pressure_pa(0.0) == pytest.approx(101325, abs=2)
    assert psychro.site_pressure_pa(1000.0) == pytest.approx(89875, abs=2)


def test_wet_bulb_sea_level_handbook_example() -> None:
    # ch. 1 Example 1: 40 °C dry-bulb, 20 °C wet-bulb, 101.325 kPa -> W = 0.0065 kg/kg. Its dew point from
    # the table: p_w = p W / (0.621945 + W), between 7 and 8 °C; the wet-bulb back from (40 °C, that dew point)
    p = 101325.0
    t_dp = _interp_dew_point(_p_w(0.0065, p), 7)
    assert 7.0 < t_dp < 8.0
    assert float(psychro.wet_bulb_c(40.0, t_dp, p)) == pytest.approx(20.0, abs=0.2)


def test_wet_bulb_at_806_mbar() -> None:
    # 30 °C dry-bulb, 20 °C wet-bulb at 80.6 kPa (806 mbar, about Golden, CO): eq. 33 gives W, its dew point
    # from the table lies between 16 and 17 °C; the wet-bulb back from (30 °C, that dew point, 80.6 kPa)
    p = 80600.0
    w = _w_eq33(30.0, 20.0, p)
    assert w == pytest.approx(0.01438, abs=2e-5)
    t_dp = _interp_dew_point(_p_w(w, p), 16)
    assert float(psychro.wet_bulb_c(30.0, t_dp, p)) == pytest.approx(20.0, abs=0.2)
    # pressure matters: the same dry-bulb and dew point at sea level give a wet-bulb higher by more than 0.5 °C
    # (less water per kg of air there, but a larger psychrometric depression at altitude)
    assert float(psychro.wet_bulb_c(30.0, t_dp, 101325.0)) > 20.0 + 0.5


def test_supply_state_after_direct_evaporative_stage() -> None:
    # 35 °C / 20 °C wet-bulb at sea level through pads of effectiveness 0.85: T_out = 20 + 0.15 × 15 = 22.25 °C
    # on the wet-bulb line; eq. 33 at (22.25, 20) gives W, hence the dew point (table, 18-19 °C) and
    # RH = p_w / p_ws(22.25 °C) (table, interpolated between 22 and 23 °C)
    p = 101325.0
    w = _w_eq33(22.25, 20.0, p)
    p_w = _p_w(w, p)
    dew = _interp_dew_point(p_w, 18)
    rh = p_w / (P_WS[22] + 0.25 * (P_WS[23] - P_WS[22]))
    s = psychro.evaporative_state(np.array([35.0]), np.array([20.0]), p, 0.85)
    assert float(s.t_c[0]) == pytest.approx(22.25, abs=1e-9)
    assert float(s.w[0]) == pytest.approx(w, rel=0.005)
    assert float(s.dew_c[0]) == pytest.approx(dew, abs=0.2)
    assert float(s.rh[0]) == pytest.approx(rh, abs=0.01)
    # held at a 24 °C set point the pads stop at 24 °C: drier (lower RH), same wet-bulb
    s24 = psychro.evaporative_state(35.0, 20.0, p, 0.85, setpoint_c=24.0)
    assert float(s24.t_c) == pytest.approx(24.0) and float(s24.rh) < float(s.rh[0])
    assert float(psychro.wet_bulb_c(24.0, s24.dew_c, p)) == pytest.approx(20.0, abs=0.05)
    # no water: the outside air's humidity, mixed up to the set point
    dry = psychro.evaporative_state(35.0, 20.0, p, 0.85, setpoint_c=24.0, wet=False)
    assert float(dry.t_c) == pytest.approx(35.0)
    assert float(dry.dew_c) == pytest.approx(float(psychro.dew_point_from_wet_bulb_c(35.0, 20.0, p)), abs=1e-6)
