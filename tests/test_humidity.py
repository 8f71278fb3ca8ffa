"""Humidity and water of evaporative cooling (issue 42 item 3): a hot, humid weather file forces the units
into mechanical mode for the hours the weather itself says (computed here with PsychroLib hour by hour),
raising cooling energy and PUE through the ambient/cooling path; PUE differs between two climates; the
water cap; the failures added by hours outside the envelope; bad input."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import psychrolib as psy
import pytest

from tests import weather_files as wf
from twin.cli import main
from twin.errors import InputError
from twin.scenario import load_scenario
from twin.scenario.humidity import ASHRAE_2021
from twin.scenario.weather import read_epw
from twin.sim import run_replication

ROOT = Path(__file__).resolve().parent.parent
EVAP = ROOT / "scenarios" / "evaporative.yaml"
QUIET = ["workload=null", "cooling.air.evaporative.water_failure={mtbf_h: 1.0e12}",
         "cooling.air.crah.failure={mtbf_h: 1.0e12}"]


def _run(weather: Path, days: int, *extra: str) -> dict[str, float]:
    ld = load_scenario(EVAP, [f"horizon_days={days}", f"cooling.ambient.csv={{file: {weather}}}", *QUIET, *extra])
    return dict(run_replication(ld.scenario, 0).metrics)


def _mechanical_hours_from_weather(path: Path, hours: int, env_name: str, eff: float, sp: float, rise: float) -> int:
    """Hours with neither pads-on nor pads-off operation inside the envelope's upper humidity limits at the
    set point (or with the air to trim hotter than the return air): scalar PsychroLib on each row."""
    psy.SetUnitSystem(psy.SI)
    env = ASHRAE_2021[env_name]
    w = read_epw(path)
    n = 0
    for k in range(hours):
        db, dp, p = float(w.dry_c[k]), float(w.dew_c[k]), float(w.pressure_pa[k])
        wb = psy.GetTWetBulbFromTDewPoint(db, min(dp, db), p)
        ok = []
        w_off = psy.GetHumRatioFromTDewPoint(min(dp, db), p)
        pads = [(db, w_off)]
        if db > sp:
            t_pad = max(sp, wb + (1 - eff) * (db - wb))
            pads.insert(0, (t_pad, psy.GetHumRatioFromTWetBulb(t_pad, wb, p)))
        for t_pad, hr in pads:
            dew = psy.GetTDewPointFromHumRatio(sp, hr, p)
            rh = psy.GetRelHumFromHumRatio(sp, hr, p)
            ok.append(dew <= env.dew_max_c and rh <= env.rh_max and t_pad - sp < rise)
        n += not any(ok)
    return n


def test_hot_humid_site_forces_evaporative_into_mechanical_mode() -> None:
    """The SYNTHETIC hot, humid year, 60 days from 1 January, class A2: the mechanical hours are those the
    weather file gives hour by hour; the chiller raises cooling energy and PUE against the same hall without
    one (whose supply floats and leaves the envelope instead)."""
    days = 60
    ld = load_scenario(EVAP, [f"horizon_days={days}"])
    e, a = ld.scenario.cooling.air.evaporative, ld.scenario.cooling.air  # type: ignore[union-attr]
    expect = _mechanical_hours_from_weather(wf.HOT_HUMID, days * 24, "A2", e.effectiveness, a.supply_c, e.it_rise_c)
    assert expect > 100  # the weather forces it: a real share of the hours
    chill = _run(wf.HOT_HUMID, days, "cooling.air.evaporative.humidity.mechanical=chiller",
                 "cooling.air.evaporative.humidity.envelope=A2")
    assert chill["cooling.evaporative.mechanical_hours"] == expect
    free = _run(wf.HOT_HUMID, days, "cooling.air.evaporative.humidity.envelope=A2")
    assert chill["cooling.evaporative.chiller_kwh"] > 0
    assert chill["energy.cooling_kwh"] > free["energy.cooling_kwh"] + 0.9 * chill["cooling.evaporative.chiller_kwh"]
    assert chill["pue"] > free["pue"] + 0.01
    assert chill["energy.facility_kwh"] > free["energy.facility_kwh"]
    assert chill["energy.it_kwh"] == pytest.approx(free["energy.it_kwh"], rel=0.01)  # same idle hall
    # without the chiller the humid supply leaves the envelope; the chiller holds it (too-dry air aside)
    assert free["cooling.evaporative.humidity_outside_envelope_hours"] > 0
    assert chill["cooling.evaporative.outside_envelope_hours"] < free["cooling.evaporative.outside_envelope_hours"]
    assert chill["cooling.evaporative.above_setpoint_hours"] == 0.0
    assert chill["water.site_l"] < free["water.site_l"]


def test_pue_differs_between_two_climates() -> None:
    """Golden, CO (real TMY3, dry, 1,829 m) against the synthetic hot, humid year, same hall with a trim
    chiller, one year: the humid site runs the chiller far more, so its PUE is higher."""
    dry = _run(wf.TMY3, 365, "cooling.air.evaporative.humidity.mechanical=chiller")
    wet = _run(wf.HOT_HUMID, 365, "cooling.air.evaporative.humidity.mechanical=chiller")
    assert wet["cooling.evaporative.mechanical_hours"] > dry["cooling.evaporative.mechanical_hours"] + 1000
    assert wet["pue"] > dry["pue"] + 0.05
    assert wet["energy.free_cooling_hours.air"] < dry["energy.free_cooling_hours.air"]


def test_water_cap_forces_mechanical_mode_when_reached() -> None:
    base = _run(wf.TMY3, 365, "cooling.air.evaporative.humidity.mechanical=chiller")
    assert base["cooling.evaporative.water_cap_hours"] == 0.0 and base["water.site_l"] > 0
    cap = 0.4 * base["water.site_l"]
    capped = _run(wf.TMY3, 365, "cooling.air.evaporative.humidity.mechanical=chiller",
                  f"cooling.air.evaporative.humidity.water_cap_l_per_year={cap}")
    assert capped["water.site_l"] == pytest.approx(cap, rel=1e-9)
    assert capped["cooling.evaporative.water_cap_hours"] > 0
    assert capped["cooling.evaporative.chiller_kwh"] > base["cooling.evaporative.chiller_kwh"]
    assert capped["pue"] > base["pue"]


def test_hours_outside_the_envelope_add_failures() -> None:
    """No chiller on the humid site: the supply's humidity is outside A1 every hour, so the X-factor parts
    fail at failure_factor times their rate (same seed: 3x the factor, more failures of those parts)."""
    one = _run(wf.HOT_HUMID, 365, "cooling.air.evaporative.humidity.failure_factor=1")
    three = _run(wf.HOT_HUMID, 365, "cooling.air.evaporative.humidity.failure_factor=3")
    assert one["cooling.evaporative.humidity_outside_envelope_hours"] == 365 * 24
    aged = ("gpu", "hbm", "host", "psu")
    n1 = sum(one[f"failures.{p}"] for p in aged)
    n3 = sum(three[f"failures.{p}"] for p in aged)
    assert n3 > 2.0 * n1 > 0
    assert three["failures.software"] == one["failures.software"]  # transient faults do not age


def test_supply_state_metrics_follow_psychrometrics() -> None:
    m = _run(wf.HOT_HUMID, 30)
    w = read_epw(wf.HOT_HUMID)
    # the supply's humidity ratio can only rise through the pads: its dew point is at least the outside's
    assert m["cooling.evaporative.supply_dew_point_max_c"] >= float(np.max(w.dew_c[:720])) - 1e-6
    assert 0 < m["cooling.evaporative.supply_rh_max"] <= 1.0


def test_water_cap_needs_a_chiller(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(InputError, match="water_cap_l_per_year: a water cap needs mechanical: chiller"):
        load_scenario(EVAP, ["cooling.air.evaporative.humidity.water_cap_l_per_year=1000"])
    code = main(["run", str(EVAP), "--set", "cooling.air.evaporative.humidity.envelope=B7",
                 "--results", str(tmp_path), "--quiet"])
    assert code == 2
    err = capsys.readouterr().err
    assert "cooling.air.evaporative.humidity.envelope" in err


def test_mode_choice_by_hand() -> None:
    """35 °C / 20 °C wet-bulb at sea level, pads ε 0.85 (T_out 22.25 °C, dew point 18.96 °C: test_psychro), set
    point 22 °C: in A3 (DP ≤ 24 °C, RH ≤ 85 %) the pads run and the chiller trims 0.25 °C of a 12 °C rise; in
    A1 (DP ≤ 17 °C) the pads' air is too humid, and the outside air (DP 13.9 °C) is 13 °C above the set point:
    pads off with the chiller taking 13/15 of the heat when the rise is 15 °C, mechanical mode when it is 12."""
    from twin.model.cooling.humidity import hourly_modes

    one = (np.array([35.0]), np.array([20.0]), np.array([101325.0]), 0.85, 22.0)
    a3 = hourly_modes(*one, 12.0, ASHRAE_2021["A3"], chiller=True)
    assert not a3.mechanical[0, 0] and a3.chiller_share[0, 0] == pytest.approx(0.25 / 12.0, abs=1e-9)
    assert a3.pad_c[0, 0] == pytest.approx(22.25) and a3.dew_c[0, 0] == pytest.approx(18.96, abs=0.2)
    a1 = hourly_modes(*one, 15.0, ASHRAE_2021["A1"], chiller=True)
    assert not a1.mechanical[0, 0] and a1.pad_c[0, 0] == 35.0 and a1.chiller_share[0, 0] == pytest.approx(13 / 15)
    a1_12 = hourly_modes(*one, 12.0, ASHRAE_2021["A1"], chiller=True)
    assert a1_12.mechanical[0, 0] and a1_12.chiller_share[0, 0] == 1.0
    # without a chiller the supply is the pads' air, outside A1 on humidity, inside A3
    none = hourly_modes(*one, 12.0, ASHRAE_2021["A1"], chiller=False)
    assert none.supply_c[0, 0] == pytest.approx(22.25) and none.humid_outside[0, 0] and not none.mechanical[0, 0]
    assert not hourly_modes(*one, 12.0, ASHRAE_2021["A3"], chiller=False).outside[0, 0]
