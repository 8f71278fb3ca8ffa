"""The water of evaporative cooling is priced (cost.water = site water in m³ × costs.water_per_m3): it is
in cost.total and the cost per useful GPU-hour, zero in a hall without evaporative cooling, refused
when negative, counted in the break-even's operating cost, and a ``twin sensitivity`` factor."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from twin import cli
from twin.experiment.decide import OPERATING, breakeven
from twin.model.costs import CATEGORIES
from twin.scenario.costs import Costs as CostsSpec
from twin.scenario.loader import load_scenario
from twin.sim import run_replication

ROOT = Path(__file__).resolve().parent.parent
EVAP = ROOT / "scenarios" / "evaporative.yaml"
AIR = ROOT / "scenarios" / "air.yaml"
SHORT = ["horizon_days=7", "cooling.ambient.seasonal_peak_day=3"]
"""A week at the height of summer: the pads evaporate water from the first afternoon."""


def _run(path: Path, sets: list[str]) -> tuple[dict[str, float], pd.DataFrame, float]:
    ld = load_scenario(path, sets)
    assert ld.scenario.costs is not None
    res = run_replication(ld.scenario, 0)
    return dict(res.metrics), res.tables["costs"], ld.scenario.costs.water_per_m3


@pytest.mark.parametrize("price", [None, 4.75])
def test_water_cost_is_site_water_times_price(price: float | None) -> None:
    sets = SHORT + ([f"costs.water_per_m3={price}"] if price is not None else [])
    m, table, p = _run(EVAP, sets)
    assert p == (price if price is not None else CostsSpec().water_per_m3)
    assert m["water.site_l"] > 0, "the week must use water for the test to bite"
    m3 = m["water.site_l"] / 1000.0
    assert m["cost.water"] == pytest.approx(m3 * p, rel=1e-9, abs=1e-9)
    row = table[table.category == "water"]
    assert len(row) == 1 and row.iloc[0]["unit"] == "m3"
    assert row.iloc[0]["quantity"] == pytest.approx(m3, rel=1e-12)
    assert row.iloc[0]["amount"] == pytest.approx(m["cost.water"], rel=1e-12)
    # in the total and so in the cost per useful GPU-hour
    others = sum(m[f"cost.{c}"] for c in CATEGORIES if c != "water")
    assert m["cost.total"] - others == pytest.approx(m["cost.water"], rel=1e-9)
    assert m["cost.total"] == pytest.approx(float(table["amount"].sum()), rel=1e-12)
    assert m["cost.per_useful_gpu_hour"] == pytest.approx(m["cost.total"] / m["useful_gpu_hours"], rel=1e-12)


def test_price_moves_only_the_water_line() -> None:
    """A replication is a pure function of the scenario and its seed: changing the water price
    changes cost.water and the total by the same amount and nothing else."""
    a, _, pa = _run(EVAP, SHORT + ["costs.water_per_m3=1"])
    b, _, pb = _run(EVAP, SHORT + ["costs.water_per_m3=6"])
    assert a["water.site_l"] == b["water.site_l"] > 0
    d = (pb - pa) * a["water.site_l"] / 1000.0
    assert b["cost.water"] - a["cost.water"] == pytest.approx(d, rel=1e-9)
    assert b["cost.total"] - a["cost.total"] == pytest.approx(d, rel=1e-9)
    for c in CATEGORIES:
        if c != "water":
            assert a[f"cost.{c}"] == b[f"cost.{c}"], c


def test_no_water_cost_without_evaporative_cooling() -> None:
    m, table, _ = _run(AIR, ["horizon_days=7", "costs.water_per_m3=100"])
    assert "water.site_l" not in m
    assert m["cost.water"] == 0.0
    assert not (table.category == "water").any()
    assert m["cost.total"] == pytest.approx(sum(m[f"cost.{c}"] for c in CATEGORIES if c != "water"), rel=1e-12)


@pytest.mark.parametrize("value", ["-1", "-0.001", "nan", "inf"])
def test_bad_water_price_is_one_clean_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str) -> None:
    code = cli.main(["run", str(EVAP), "--set", f"costs.water_per_m3={value}", "--set", "horizon_days=1",
                     "--results", str(tmp_path / "r"), "--quiet"])
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert code == 2 and len(err) == 1, err
    assert "costs.water_per_m3" in err[0] and "evaporative.yaml" in err[0], err[0]
    assert not (tmp_path / "r").exists()


def test_schema_says_assumption_and_sensitivity() -> None:
    desc = CostsSpec.model_fields["water_per_m3"].description or ""
    assert "assumption" in desc and "twin sensitivity" in desc and "costs.water_per_m3=" in desc


def test_breakeven_counts_water_as_operating_cost() -> None:
    """Two options that differ only by their water bill: the one that pays w more per replication
    has an annual net benefit of −w/T."""
    assert "cost.water" in OPERATING
    n, years, w = 4, 0.5, 1234.0
    base = {"replication": np.arange(n), "useful_gpu_hours": np.full(n, 1000.0), "cost.capital_purchase": 1e6,
            "cost.energy": 10.0, "cost.energy_kwh": 100.0, "cost.repair_parts": 1.0, "cost.labour": 2.0, "cost.spares_holding": 3.0,
            "cost.water": 0.0, "cost.total": 16.0}
    a = pd.DataFrame(base)
    b = pd.DataFrame({**base, "cost.water": w, "cost.total": 16.0 + w})
    be = breakeven(a, b, 2.0, 0.08, years)
    assert be["annual_net_benefit"] == pytest.approx(-w / years, rel=1e-12)


def test_water_price_is_a_sensitivity_factor(tmp_path: Path) -> None:
    """`twin sensitivity --param costs.water_per_m3=LOW,HIGH` lists the factor and reports its
    effect on the cost per useful GPU-hour (paired: the same replications, only the price differs),
    and none on goodput."""
    from twin.experiment.sweep import run_sensitivity

    lo, hi = 1.0, 6.0
    res = run_sensitivity(str(EVAP), SHORT, [f"costs.water_per_m3={lo:g},{hi:g}"], None, 2,
                          results_root=tmp_path, progress=False, echo=lambda s: None)
    assert [f.name for f in res.factors] == ["costs.water_per_m3"]
    assert "cost.per_useful_gpu_hour" in res.metrics
    base = res.results["baseline"].replications.set_index("replication").sort_index()
    p0 = load_scenario(EVAP, SHORT).scenario.costs.water_per_m3  # type: ignore[union-attr]
    d = res.deltas.set_index(["metric", "level"])
    for level, p in (("low", lo), ("high", hi)):
        want = ((p - p0) * base["water.site_l"] / 1000.0 / base["useful_gpu_hours"]).mean()
        assert want != 0 and math.isfinite(want)
        assert d.loc[("cost.per_useful_gpu_hour", level), "delta"] == pytest.approx(want, rel=1e-9)
        assert d.loc[(res.metrics[0], level), "delta"] == 0.0
    r = res.ranking[res.ranking.metric == "cost.per_useful_gpu_hour"]
    assert list(r.factor) == ["costs.water_per_m3"]
