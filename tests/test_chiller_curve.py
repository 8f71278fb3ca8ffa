"""Chiller COP by part load and condenser temperature (issue 42 item 4): the EnergyPlus EIR model with the
DOE-2 Centrifugal/5.50COP curves against hand computations, and the coupling weather file -> wet-bulb ->
condenser water -> COP -> cooling energy and PUE of an air hall in two climates."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import weather_files as wf
from twin.errors import InputError
from twin.physics import chiller_curve as cc
from twin.scenario import load_scenario
from twin.scenario.chiller_curve import ChillerCurve
from twin.sim import run_replication

ROOT = Path(__file__).resolve().parent.parent
AIR = ROOT / "scenarios" / "air.yaml"


def _cop(load_frac: float, t_cond: float) -> float:
    c = ChillerCurve()
    return float(cc.cop(load_frac * 1000.0, t_cond, c.chilled_water_c, 1000.0, c.cop_ref, c.cap_ft, c.eir_ft,
                        c.eir_fplr, c.min_plr, (24.0, 35.0), (5.0, 10.0)))


def test_reference_point_and_part_load_by_hand() -> None:
    # at 6.67 °C chilled water and 29.4 °C condenser water: CAPFT = 1.00334, EIRFT = 0.999088 (the
    # coefficients by hand), EIRFPLR(1) = 0.222903 + 0.313387 + 0.46371 = 1, EIRFPLR(0.5) = 0.495524
    assert _cop(1.00334, 29.4) == pytest.approx(5.5 / 0.999088, rel=2e-4)
    assert _cop(0.5 * 1.00334, 29.4) == pytest.approx(5.5 * 0.5 / (0.999088 * 0.495524), rel=2e-4)
    # below the minimum part load the chiller cycles at PLR 0.1: the same COP
    assert _cop(0.05, 29.4) == pytest.approx(_cop(0.1 * 1.00334, 29.4), rel=1e-3)
    # colder condenser water, better COP; held inside the curve's 24-35 °C range
    assert _cop(0.75, 24.0) > _cop(0.75, 29.4) > _cop(0.75, 35.0)
    assert _cop(0.75, 10.0) == _cop(0.75, 24.0)


def _air(weather: Path, *extra: str) -> dict[str, float]:
    ld = load_scenario(AIR, ["horizon_days=365", "workload=null", f"cooling.ambient.csv={{file: {weather}}}",
                             "cooling.air.crah.failure={mtbf_h: 1.0e12}", *extra])
    return dict(run_replication(ld.scenario, 0).metrics)


def test_chiller_curve_follows_the_climate_through_the_wet_bulb() -> None:
    """The same air hall a year in Golden, CO (dry: low wet-bulb, many free-cooling hours) and in the
    synthetic hot, humid year: on the curve the humid site's condenser water is warmer, its COP lower and its
    PUE higher; the curve moves cooling energy against the linear COP."""
    dry = _air(wf.TMY3, "cooling.energy.chiller_curve={}")
    wet = _air(wf.HOT_HUMID, "cooling.energy.chiller_curve={}")
    assert wet["energy.chiller_cop_seasonal"] < dry["energy.chiller_cop_seasonal"]
    assert wet["energy.free_cooling_hours.air"] < dry["energy.free_cooling_hours.air"]
    assert wet["pue"] > dry["pue"] + 0.02
    linear = _air(wf.HOT_HUMID)
    assert "energy.chiller_cop_seasonal" not in linear
    assert linear["energy.cooling_kwh"] != pytest.approx(wet["energy.cooling_kwh"], rel=1e-3)


def test_chiller_curve_needs_a_wet_bulb(tmp_path: Path) -> None:
    (tmp_path / "amb.csv").write_text("temp_c\n20\n25\n", encoding="utf-8")
    f = tmp_path / "s.yaml"
    f.write_text(f"extends: {AIR}\ncooling:\n  ambient:\n    csv: {{file: amb.csv}}\n  energy:\n    chiller_curve: {{}}\n")
    with pytest.raises(InputError, match=r"amb.csv: wet_bulb_c: .*chiller curve"):
        load_scenario(f)
    with pytest.raises(InputError, match=r"condenser_range_c: give \[low, high\]"):
        load_scenario(AIR, ["cooling.energy.chiller_curve={condenser_range_c: [35, 24]}"])
