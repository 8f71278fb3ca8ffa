"""Evaporative (adiabatic) cooling (issue 23 item 4): the supply and water equations, WUE, the wet-bulb
input, and the coupling water supply failure → dry operation → hotter supply → hotter GPUs."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from twin.errors import InputError
from twin.physics import evaporative as ev
from twin.scenario import load_scenario
from twin.sim import run_replication

ROOT = Path(__file__).resolve().parent.parent
EVAP = ROOT / "scenarios" / "evaporative.yaml"


def test_supply_is_the_set_point_or_the_pads_outlet_bounded_by_wet_bulb() -> None:
    # T_db 32, T_wb 22, ε 0.85: outlet 22 + 0.15·10 = 23.5
    assert ev.outlet_c(32.0, 22.0, 0.85) == pytest.approx(23.5, abs=1e-9)
    assert ev.supply_c(32.0, 22.0, 0.85, 24.0, True) == pytest.approx(24.0, abs=1e-9)  # set point reachable
    assert ev.supply_c(32.0, 22.0, 0.85, 20.0, True) == pytest.approx(23.5, abs=1e-9)  # floats above it
    assert ev.supply_c(32.0, 22.0, 0.85, 20.0, False) == pytest.approx(32.0, abs=1e-9)  # dry: outside air
    assert ev.supply_c(15.0, 10.0, 0.85, 20.0, False) == pytest.approx(20.0, abs=1e-9)  # cold: mixing
    assert ev.supply_c(30.0, 30.0, 0.95, 20.0, True) == pytest.approx(30.0, abs=1e-9)  # saturated air: no gain
    # arrays, wet and dry per element
    got = ev.supply_c(np.array([32.0, 32.0]), np.array([22.0, 22.0]), 0.75, 20.0, np.array([True, False]))
    assert got == pytest.approx([24.5, 32.0], abs=1e-9)


def test_water_is_evaporated_heat_over_latent_heat_with_blowdown() -> None:
    # 1 MW of air heat, T_db 32 cooled to 24 with a 12 °C IT rise: 1e6 · 8/12 W of evaporation
    q = ev.evaporated_heat_w(1.0e6, 32.0, 24.0, 12.0)
    assert q == pytest.approx(666666.6666666666, rel=1e-12)
    assert ev.evaporated_heat_w(1.0e6, 20.0, 24.0, 12.0) == 0.0  # no evaporation below the set point
    one_hour_j = q * 3600.0
    assert ev.water_l(one_hour_j, 0.25) == pytest.approx(one_hour_j / 2.45e6 * 1.25, rel=1e-12)
    assert ev.water_l(one_hour_j, 0.25) == pytest.approx(1224.4897959183672, rel=1e-9)
    assert ev.wue_l_per_kwh(1224.4897959183672, 1000.0) == pytest.approx(1.2244897959183672, rel=1e-12)
    assert math.isnan(ev.wue_l_per_kwh(5.0, 0.0))


def test_wet_bulb_model_never_exceeds_dry_bulb_and_rejects_a_wider_swing() -> None:
    sc = load_scenario(EVAP).scenario
    assert sc.cooling is not None
    amb = sc.cooling.ambient
    db, wb = amb.hourly_c(8760), amb.hourly_wet_bulb_c(8760)
    assert (wb <= db).all() and (db - wb).max() == pytest.approx(9.0, abs=0.05)  # 5 + 2 + 2 at the peaks
    with pytest.raises(InputError) as e:
        load_scenario(EVAP, ["cooling.ambient.wet_bulb.depression_mean_c=3"])
    assert "cooling.ambient.wet_bulb.depression_mean_c" in str(e.value)


def test_wet_bulb_from_the_ambient_csv(tmp_path: Path) -> None:
    rows = ["temp_c,wet_bulb_c"] + [f"{30 + (h % 2)},{22}" for h in range(48)]
    (tmp_path / "amb.csv").write_text("\n".join(rows) + "\n")
    f = tmp_path / "e.yaml"
    f.write_text(f"extends: {EVAP}\nname: e\ncooling:\n  ambient:\n    csv: {{file: amb.csv}}\n")
    sc = load_scenario(f).scenario
    assert sc.cooling is not None
    assert sc.cooling.ambient.hourly_wet_bulb_c(3).tolist() == [22.0, 22.0, 22.0]
    (tmp_path / "amb.csv").write_text("temp_c\n30\n31\n")  # no wet-bulb column: an evaporative hall needs one
    with pytest.raises(InputError) as e:
        load_scenario(f)
    assert "wet_bulb_c" in str(e.value) and "amb.csv" in str(e.value)
    (tmp_path / "amb.csv").write_text("temp_c,wet_bulb_c\n30,22\n21,22\n")  # wet-bulb above dry-bulb
    with pytest.raises(InputError) as e:
        load_scenario(f)
    assert "row 3" in str(e.value)


IDLE = ["workload=null", "horizon_days=3", "cooling.air.evaporative.water_failure={mtbf_h: 1.0e12}",
        "cooling.ambient.seasonal_peak_day=1"]  # a hot first days: evaporation from the first afternoon


def test_water_and_wue_of_an_idle_hall_match_the_closed_form() -> None:
    """No workload, no failures in 3 days: IT power is the nodes' constant idle draw, so the water is the
    sum over hours of the closed form with the hour's dry- and wet-bulb (deterministic, 1e-9)."""
    ld = load_scenario(EVAP, IDLE + ["cluster.node.parts={}", "network=null", "maintenance.spares={}",
                                     "cooling.air.fan_part=null", "cooling.air.crah.failure={mtbf_h: 1.0e12}",
                                     "health=null", "costs=null"])
    sc = ld.scenario
    assert sc.cooling is not None and sc.cooling.air is not None and sc.cooling.air.evaporative is not None
    res = run_replication(sc, 0)
    m = res.metrics
    node = sc.cluster.node
    it_w = sc.cluster.n_nodes * (node.non_gpu_idle_w + node.gpus * node.gpu.idle_w)  # idle: the non-GPU idle load
    e, a = sc.cooling.air.evaporative, sc.cooling.air
    H = 72
    db = sc.cooling.ambient.hourly_c(H)
    wb = sc.cooling.ambient.hourly_wet_bulb_c(H)
    sup = ev.supply_c(db, wb, e.effectiveness, a.supply_c, True)
    evap_j = float((ev.evaporated_heat_w(it_w, db, sup, e.it_rise_c) * 3600.0).sum())
    water = ev.water_l(evap_j, e.blowdown_share)
    assert evap_j > 0
    assert m["water.site_l"] == pytest.approx(water, rel=1e-9)
    assert m["water.evaporated_l"] == pytest.approx(evap_j / ev.LATENT_HEAT_J_PER_KG, rel=1e-9)
    assert m["energy.it_kwh"] == pytest.approx(it_w * H / 1000.0, rel=1e-9)
    assert m["water.wue_l_per_kwh"] == pytest.approx(water / (it_w * H / 1000.0), rel=1e-9)
    wet = int(((db > a.supply_c) & (sup < db)).sum())
    assert m["cooling.evaporative.wet_hours"] == wet and m["cooling.evaporative.dry_hours"] == H - wet
    assert m["cooling.evaporative.fallback_hours"] == 0.0


def _hot_run(extra: list[str]) -> dict[str, float]:
    # a light thermal design (no throttling, so the GPU temperature shows the supply 1:1), the hottest afternoon
    ld = load_scenario(EVAP, ["horizon_days=197", "cooling.gpu.r_air_c_per_w=0.05",
                              "cooling.air.evaporative.water_failure={mtbf_h: 1.0e12}",
                              "cooling.air.crah.failure={mtbf_h: 1.0e12}",
                              "cooling.trace={nodes: [0], from_h: 4680, to_h: 4728}", *extra])
    res = run_replication(ld.scenario, 0)
    m = dict(res.metrics)
    tr = res.tables["thermal_trace"]
    win = tr[(tr["time_h"] >= 4694.5) & (tr["time_h"] < 4697.0)]
    m["trace_max_c"] = float(win["temp_c"].max())
    m["trace_inlet_c"] = float(win["inlet_c"].max())
    return m


def test_a_failed_water_supply_runs_the_units_dry_and_the_gpus_hotter() -> None:
    """Water supply failed on a hot afternoon (day 195, 14:00) and is repaired in a fixed 6 h: the units run dry, the supply
    follows the outside dry-bulb (above the set point), and the GPUs' temperatures rise with it."""
    base = _hot_run([])
    fail = _hot_run(["cooling.inject=[{part: water_supply, index: 0, at_h: 4694}]",
                     "cooling.air.evaporative.water_repair={time: {dist: fixed, value_h: 6}}"])
    assert base["cooling.evaporative.fallback_hours"] == 0.0
    # 15 min to a ticket (maintenance.detection) + the 6 h repair, all with the outside air above the set point
    assert fail["cooling.evaporative.fallback_hours"] == pytest.approx(6.25, abs=1e-9)
    assert fail["failures.water_supply"] == 1.0
    assert fail["trace_inlet_c"] > base["trace_inlet_c"] + 3.0  # outside air ~31 °C against the wet base
    assert fail["trace_max_c"] > base["trace_max_c"] + 3.0
    assert fail["water.site_l"] < base["water.site_l"]  # no water evaporated while dry
    assert fail["thermal.gpu_temp_max_c"] > base["thermal.gpu_temp_max_c"]


def test_evaporative_units_need_no_chiller_energy() -> None:
    """Against the same hall with chilled CRAH units, the evaporative hall spends only fan energy (lower PUE)."""
    over = ["horizon_days=30", "cooling.ambient.seasonal_peak_day=15"]
    ev_m = run_replication(load_scenario(EVAP, over).scenario, 0).metrics
    air_m = run_replication(load_scenario(ROOT / "scenarios" / "air.yaml", over).scenario, 0).metrics
    assert ev_m["energy.cooling_kwh"] == pytest.approx(0.05 * ev_m["energy.it_kwh"], rel=1e-9)  # fan_kw_per_kw
    assert ev_m["pue"] < air_m["pue"]
    assert "water.site_l" not in air_m


def test_validation_case_evaporative_water_passes_and_excludes_the_wrong_models() -> None:
    """The `twin validate` case (deterministic, 1e-9): supply, water and WUE of a constant load."""
    from twin.validation import heat
    from twin.validation.framework import Settings

    results = heat.evaporative_water(Settings(quick=True, confidence=0.99))
    assert len(results) == 3
    for r in results:
        assert r.passed, r
        assert all(v != pytest.approx(r.reference, rel=1e-6) for v in r.wrong.values()), r
