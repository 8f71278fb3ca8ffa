"""Costs (issue 9): every line of a deterministic tiny scenario computed by hand; cost differences
are sums of line differences; the sweep's cheapest feasible point; clean errors on bad input."""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy import stats as st

from twin import cli
from twin.experiment.compare import run_compare
from twin.experiment.decide import payback_years
from twin.experiment.sweep import run_sweep
from twin.model.costs import annuity_factor, capital_items
from twin.scenario.loader import load_scenario
from twin.sim import run_replication

H_DAYS = 10
H = 24.0 * H_DAYS
T = H_DAYS / 365.0
NODES = 4
NODE_W = 4600.0 + 2 * 100.0  # non-GPU + 2 GPUs at idle (no workload): power.non_gpu_w, workload default idle
FULL_W = 4600.0 + 2 * 700.0  # full demand per node, sizes UPS and generator
NEVER = {"dist": "fixed", "value_h": 1.0e7}

DET: dict[str, Any] = {
    "name": "cost-det",
    "seed": 7,
    "horizon_days": H_DAYS,
    "cluster": {
        "racks": 2, "nodes_per_rack": 2,
        "node": {
            "type": "testnode", "gpus": 2,
            "parts": {
                # every node's GPU fails at 100 h, then 100 h after each return to service
                "gpu": {"count": 1, "effect": "node_down", "failure": {"dist": "fixed", "value_h": 100},
                        "repair": {"time": {"dist": "fixed", "value_h": 4}}},
                "psu": {"count": 2, "required": 1, "effect": "redundant", "failure": NEVER,
                        "repair": {"hot_swap": True}},
            },
        },
    },
    "maintenance": {
        "detection": {"dist": "fixed", "value_h": 0.25},
        "crews": {"technicians": {"count": 4, "shift": "24x7"}, "day": {"count": 1, "shift": "business"}},
        "spares": {"gpu": {"stock": 4, "reorder_point": 0, "reorder_qty": 4, "lead_time_days": 1}},
    },
    "network": {"rails": 1, "nodes_per_leaf": 2, "spines": 1, "optics_per_link": 2,
                "optic": {"failure": NEVER}, "leaf": {"failure": NEVER}, "spine": {"failure": NEVER},
                "link_flaps_per_link_per_year": 0},
    "power": {"topology": "n+1", "psu_part": "psu", "capacity_w": 6000, "utility": {"outages_per_year": 0},
              "ups": {"failure": None}, "generator": {"failure": None}, "switchboard": {"failure": None},
              "pdu": {"failure": None}},
    "costs": {
        "currency": "EUR", "amortisation_years": 4, "facility_amortisation_years": 10, "discount_rate": 0.05,
        "capital": {"node": {"testnode": 100000}, "psu": 500, "ups_per_kw": 200, "generator_per_kw": 300,
                    "switchboard": 20000, "pdu": 1500, "optic": 700, "leaf": 20000, "spine": 25000},
        "parts": {"gpu": 20000},
        "spares": {"holding_rate_per_year": 0.2},
        "labour": {"rate_per_hour": 50, "pools": {"day": 80}},
        "energy": {"price_per_kwh": 0.1, "pue": 1.5},
    },
}
DOWN = [(100.0, 104.25), (204.25, 208.5)]
"""Every node: fails at 100, ticket at 100.25, spare and crew at once, 4 h repair, back at 104.25;
again at 204.25 → 208.5; the next failure (308.5) is past the horizon."""


def tou_price(h: np.ndarray) -> np.ndarray:
    """Hour-of-week tariff of the tests: 0.12 from 08:00 to 20:00 on weekdays, 0.06 otherwise."""
    h = np.asarray(h)
    day, hod = h // 24, h % 24
    return np.where((day < 5) & (hod >= 8) & (hod < 20), 0.12, 0.06)


def write_tou(path: Path, hours: list[int] | None = None) -> Path:
    hs = list(range(168)) if hours is None else hours
    path.write_text("hour_of_week,price_per_kwh\n" + "".join(f"{h},{float(tou_price(np.array(h))):.2f}\n" for h in hs))
    return path


def write(path: Path, doc: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def up_hours(k: int) -> float:
    """Hours of [k, k+1) with the nodes up (all four fail and return together)."""
    down = sum(max(0.0, min(k + 1, b) - max(k, a)) for a, b in DOWN)
    return 1.0 - down


def crf(r: float, n: float) -> float:
    return r / (1 - (1 + r) ** -n)


@pytest.mark.parametrize("tariff", ["flat", "tou"])
def test_every_cost_line_by_hand(tmp_path: Path, tariff: str) -> None:
    doc = copy.deepcopy(DET)
    if tariff == "tou":
        write_tou(tmp_path / "tou.csv")
        doc["costs"]["energy"]["time_of_use"] = {"file": "tou.csv"}
    ld = load_scenario(write(tmp_path / "det.yaml", doc))
    res = run_replication(ld.scenario, 0, ld.hash)
    m, lines = res.metrics, res.tables["costs"]
    assert m["node_down_hours"] == pytest.approx(NODES * 8.5, abs=1e-9)  # the hand timeline holds

    # capital: purchase × CRF(r, n) × T
    it, plant = crf(0.05, 4), crf(0.05, 10)
    ups_kw = NODES * FULL_W / 1000.0  # one feed (n+1) carrying every node
    purchase = {
        "node testnode": (4 * 100000, it), "psu": (8 * 500, it),
        "ups": (ups_kw * 200, plant), "generator": (ups_kw * 300, plant), "switchboard": (20000, plant),
        "pdu": (2 * 1500, plant),  # one PDU per rack per feed
        "optic": (16 * 700, it),  # 2 leaf groups × 1 rail = 2 leaves; 4 access + 2×2 trunk links, 2 optics each
        "leaf": (2 * 20000, it), "spine": (1 * 25000, it), "initial stock gpu": (4 * 20000, it),
    }
    cap = lines[lines.category == "capital"].set_index("item")
    assert sorted(cap.index) == sorted(purchase)
    for item, (p, f) in purchase.items():
        assert cap.loc[item, "purchase"] == pytest.approx(p, rel=1e-12)
        assert cap.loc[item, "amount"] == pytest.approx(p * f * T, rel=1e-12)
    capital = sum(p * f * T for p, f in purchase.values())
    assert m["cost.capital"] == pytest.approx(capital, rel=1e-12)
    assert m["cost.capital_purchase"] == pytest.approx(sum(p for p, _ in purchase.values()), rel=1e-12)
    assert annuity_factor(0.0, 4) == 0.25 and annuity_factor(0.05, 4) == pytest.approx(it, rel=1e-15)

    # energy: 4 nodes × 4.8 kW while up, × PUE 1.5, priced hour by hour
    hours = np.arange(int(H))
    up = np.array([up_hours(int(k)) for k in hours])
    price = tou_price(hours % 168) if tariff == "tou" else np.full(len(hours), 0.1)
    kwh = NODES * NODE_W / 1000.0 * up * 1.5
    assert m["cost.energy_kwh"] == pytest.approx(kwh.sum(), rel=1e-12)
    assert m["cost.energy"] == pytest.approx(float((kwh * price).sum()), rel=1e-12)

    # repair parts: 2 GPU repairs per node
    assert m["cost.repair_parts"] == pytest.approx(NODES * 2 * 20000, rel=1e-12)
    # labour: 4 technicians around the clock at 50; 1 day worker at 80 for 8 weekdays × 9 h in 10 days
    assert m["cost.labour"] == pytest.approx(4 * H * 50 + 1 * 8 * 9 * 80, rel=1e-12)
    # holding: mean units on hand × T × 20 % × price. On hand: 4 until the four tickets take them at
    # 100.25 (reorder point 0: 4 ordered, 24 h lead) → 0 until 124.25 → 4 until 204.5 → 0 until 228.5 → 4
    on_hand_h = 4 * 100.25 + 4 * (204.5 - 124.25) + 4 * (H - 228.5)
    assert m["cost.spares_holding"] == pytest.approx(on_hand_h / H * T * 0.2 * 20000, rel=1e-12)
    total = m["cost.capital"] + m["cost.energy"] + m["cost.repair_parts"] + m["cost.labour"] + m["cost.spares_holding"]
    assert m["cost.total"] == pytest.approx(total, rel=1e-12)
    assert m["cost.total"] == pytest.approx(float(lines["amount"].sum()), rel=1e-12)
    assert math.isnan(m["cost.per_useful_gpu_hour"])  # no workload
    from twin.report.cost_figures import figures

    assert figures(res, tmp_path / "fig") == ["cost_breakdown.png"] and (tmp_path / "fig" / "cost_breakdown.png").is_file()


WL_TINY: dict[str, Any] = {
    "name": "cost-a",
    "seed": 11,
    "horizon_days": 40,
    "cluster": {"racks": 2, "nodes_per_rack": 4, "node": {"gpus": 8, "parts": {
        "gpu": {"count": 8, "effect": "node_down", "failure": {"mtbf_h": 20000},
                "repair": {"time": {"dist": "fixed", "value_h": 8}}},
        "psu": {"count": 6, "required": 4, "min_to_run": 3, "effect": "redundant", "failure": {"mtbf_h": 30000},
                "repair": {"hot_swap": True, "time": {"dist": "fixed", "value_h": 0.5}}}}}},
    "maintenance": {"crews": {"technicians": {"count": 1, "shift": "business"}},
                    "spares": {"gpu": {"stock": 1, "reorder_point": 0, "reorder_qty": 1, "lead_time_days": 10}}},
    "workload": {"jobs": [{"name": "train", "gpus": 64, "work_h": 100000,
                           "checkpoint": {"interval_h": 2, "size_gb": 100, "mode": "sync"}}]},
    "costs": {},
}


def test_cost_difference_is_sum_of_line_differences_and_breakeven(tmp_path: Path) -> None:
    a = copy.deepcopy(WL_TINY)
    b = copy.deepcopy(WL_TINY)
    b["name"] = "cost-b"
    b["maintenance"]["spares"]["gpu"]["stock"] = 3  # two more GPU spares: fewer stock-outs, more useful hours
    pa, pb = write(tmp_path / "a.yaml", a), write(tmp_path / "b.yaml", b)
    res = run_compare([str(pa), str(pb)], [], 5, results_root=tmp_path / "res", progress=False, echo=lambda s: None)
    ta, tb = (r.replications.set_index("replication").sort_index() for r in res.results)
    cats = ["cost.capital", "cost.energy", "cost.repair_parts", "cost.labour", "cost.spares_holding"]
    d_total = tb["cost.total"] - ta["cost.total"]
    d_sum = sum(tb[c] - ta[c] for c in cats)
    np.testing.assert_allclose(d_total.to_numpy(), d_sum.to_numpy(), rtol=1e-12, atol=1e-6)
    p = res.paired.set_index("metric")
    assert p.loc["cost.total", "diff"] == pytest.approx(sum(p.loc[c, "diff"] for c in cats), rel=1e-12, abs=1e-6)
    np.testing.assert_allclose((ta["cost.total"] / ta["useful_gpu_hours"]).to_numpy(),
                               ta["cost.per_useful_gpu_hour"].to_numpy(), rtol=1e-12)
    # the variant buys two more GPU spares: capital purchase differs by exactly that
    assert (tb["cost.capital_purchase"] - ta["cost.capital_purchase"]).to_numpy() == pytest.approx(2 * 25000.0)

    # break-even recomputed from the stored replications (formulas in twin/experiment/decide.py)
    be = pd.read_parquet(res.folder / "breakeven.parquet").iloc[0]
    years = 40 / 365.0
    op = ["cost.energy", "cost.repair_parts", "cost.labour", "cost.spares_holding"]
    ben = (2.0 * (tb["useful_gpu_hours"] - ta["useful_gpu_hours"]) - sum(tb[c] - ta[c] for c in op)) / years
    assert be.annual_net_benefit == pytest.approx(ben.mean(), rel=1e-9)
    hw = st.t.ppf(0.975, len(ben) - 1) * ben.std(ddof=1) / math.sqrt(len(ben))
    assert be.annual_net_benefit_ci_low == pytest.approx(ben.mean() - hw, rel=1e-9)
    assert be.extra_capital == pytest.approx(50000.0)
    b_ = ben.mean()
    assert b_ > 0 and 0.08 * 50000 / b_ < 1, "the variant must repay its spares for the test to bite"
    assert be.payback_years == pytest.approx(-math.log(1 - 0.08 * 50000 / b_) / math.log(1.08), rel=1e-9)
    b_lo = ben.mean() - hw
    if b_lo > 0.08 * 50000:
        assert be.payback_years_ci_high == pytest.approx(-math.log(1 - 0.08 * 50000 / b_lo) / math.log(1.08), rel=1e-9)
    else:
        assert be.payback_years_ci_high == math.inf
    assert payback_years(100.0, 50.0, 0.0) == 2.0 and payback_years(100.0, -1.0, 0.05) == math.inf
    assert payback_years(0.0, -1.0, 0.05) == 0.0
    # break-even tariff: both options' cost net of the value of useful GPU-hours equal at k*
    na = ta["cost.total"] - ta["cost.energy"] - 2.0 * ta["useful_gpu_hours"]
    nb = tb["cost.total"] - tb["cost.energy"] - 2.0 * tb["useful_gpu_hours"]
    k = (nb - na).mean() / (ta["cost.energy"] - tb["cost.energy"]).mean()
    assert k > 0
    assert be.tariff_multiplier_breakeven == pytest.approx(k, rel=1e-9)
    assert be.energy_price_breakeven_per_kwh == pytest.approx(k * 0.10, rel=1e-9)  # flat default price


def test_sweep_chooses_cheapest_point_meeting_the_constraint(tmp_path: Path) -> None:
    doc = copy.deepcopy(WL_TINY)
    doc.pop("workload")
    path = write(tmp_path / "s.yaml", doc)
    thr, conf = 0.98, 0.95
    res = run_sweep(str(path), [], ["maintenance.spares.gpu.stock=0,2,4,8", "maintenance.crews.technicians.count=1,2"],
                    6, results_root=tmp_path / "res", progress=False, echo=lambda s: None,
                    objective="cost.total", constraints=[f"node_availability>={thr}"], confidence=conf)
    tidy = pd.read_parquet(res.folder / "sweep.parquet")
    dec = pd.read_parquet(res.folder / "decision.parquet")
    cost = tidy[tidy.metric == "cost.total"].set_index("point")["mean"]
    av = tidy[tidy.metric == "node_availability"].set_index("point")
    lower = av["mean"] - st.t.ppf(conf, av["n"] - 1) * av["std"] / np.sqrt(av["n"])
    feasible = lower >= thr
    assert feasible.any() and not feasible.all(), "the grid must straddle the constraint for the test to bite"
    chosen = res.chosen
    assert chosen is not None and bool(dec.set_index("point").loc[chosen, "chosen"])
    assert feasible[chosen]
    cheaper = cost[cost < cost[chosen]].index
    assert not feasible[cheaper].any()
    assert (dec.set_index("point")["feasible"] == feasible).all()


def test_constraint_bounds_without_spread_and_for_several_constraints() -> None:
    """No spread (the same value in every replication) is no certainty: 'stockouts<=0' after a few
    replications without stock-outs is not met (it was: the t-bound collapsed to the mean), and an
    availability of 1 in 10 replications bounds the mean by the distribution-free share of
    replications that may differ; k constraints are each bounded at 1 - (1 - c)/k (joint level c)."""
    from twin.experiment.decide import Constraint, choose, confidence_bound

    assert confidence_bound(0.0, 0.0, 2, 0.95, "upper", (0.0, math.inf)) == math.inf
    p = 1 - 0.05 ** (1 / 10)
    assert confidence_bound(1.0, 0.0, 10, 0.95, "lower", (0.0, 1.0)) == pytest.approx(1 - p)
    assert confidence_bound(1.0, 0.1, 10, 0.95, "lower") == pytest.approx(1 - st.t.ppf(0.95, 9) * 0.1 / math.sqrt(10))
    tidy = pd.DataFrame([{"point": 0, "metric": m, "n": 10, "mean": mean, "std": sd, "ci_low": 0.0, "ci_high": 0.0}
                         for m, mean, sd in [("cost.total", 1.0, 0.1), ("stockouts", 0.0, 0.0),
                                             ("node_availability", 0.99, 0.004), ("goodput", 0.8, 0.01)]])
    dec, chosen = choose(tidy, [], "cost.total", [Constraint("stockouts", "<=", 0.0)], 0.95)
    assert chosen is None and dec.loc[0, "stockouts_upper_bound"] == math.inf
    cons = [Constraint("node_availability", ">=", 0.9873), Constraint("goodput", ">=", 0.7)]
    dec, _ = choose(tidy, [], "cost.total", cons, 0.95)
    each = st.t.ppf(1 - 0.05 / 2, 9) * 0.004 / math.sqrt(10)
    assert dec.loc[0, "node_availability_lower_bound"] == pytest.approx(0.99 - each)
    assert not dec.loc[0, "feasible"]  # 0.99 - 0.00286 < 0.9873; at 95 % alone (0.00232) it would pass


def _run(tmp_path: Path, doc: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    path = write(tmp_path / "bad.yaml", doc)
    code = cli.main(["run", str(path), "--results", str(tmp_path / "r"), "--quiet"])
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    return code, err


@pytest.mark.parametrize("where,value,field", [
    (("energy", "price_per_kwh"), -0.1, "costs.energy.price_per_kwh"),
    (("capital", "crah"), -5, "costs.capital.crah"),
    (("parts", "gpu"), -1, "costs.parts.gpu"),
    (("labour", "rate_per_hour"), -20, "costs.labour.rate_per_hour"),
    (("discount_rate",), 1.0, "costs.discount_rate"),
    (("discount_rate",), -0.01, "costs.discount_rate"),
    (("capital", "node"), {"other-node": 1}, "costs.capital.node"),
    (("labour", "pools"), {"nightshift": 10}, "costs.labour.pools.nightshift"),
    (("parts", "gpuu"), 10, "costs.parts.gpuu"),
])
def test_bad_cost_input_is_one_clean_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                          where: tuple[str, ...], value: Any, field: str) -> None:
    doc = copy.deepcopy(DET)
    cur = doc["costs"]
    for k in where[:-1]:
        cur = cur.setdefault(k, {})
    cur[where[-1]] = value
    code, err = _run(tmp_path, doc, capsys)
    assert code == 2 and len(err) == 1, err
    assert "bad.yaml" in err[0] and field in err[0], err[0]


@pytest.mark.parametrize("where", ["node", "rack"])
def test_a_repaired_part_without_a_price_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    where: str) -> None:
    """With costs, every repaired part type has a price (a missing one would silently cost 0)."""
    doc = copy.deepcopy(DET)
    part = {"count": 2, "failure": {"mtbf_h": 1e6}}
    if where == "node":
        doc["cluster"]["node"]["parts"]["dimm"] = part
    else:
        doc["cluster"]["rack_parts"] = {"dimm": part}
    code, err = _run(tmp_path, doc, capsys)
    assert code == 2 and len(err) == 1, err
    assert "costs.parts" in err[0] and "'dimm'" in err[0] and "add costs.parts.dimm" in err[0], err[0]
    doc["costs"].setdefault("parts", {})["dimm"] = 40.0
    assert _run(tmp_path, doc, capsys)[0] == 0


@pytest.mark.parametrize("hours,row", [([0, 1, 2, 4] + list(range(5, 168)), "row 5"),
                                       (list(range(100)), "row 102"),
                                       ([0, 1, 1] + list(range(2, 168)), "row 4")])
def test_time_of_use_csv_with_gaps_is_rejected(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                               hours: list[int], row: str) -> None:
    write_tou(tmp_path / "tou.csv", hours)
    doc = copy.deepcopy(DET)
    doc["costs"]["energy"]["time_of_use"] = {"file": "tou.csv"}
    code, err = _run(tmp_path, doc, capsys)
    assert code == 2 and len(err) == 1, err
    assert "tou.csv" in err[0] and row in err[0], err[0]


def test_scenario_capital_lines_of_cooling_and_power_options() -> None:
    root = Path(__file__).resolve().parents[1] / "scenarios"
    air = load_scenario(root / "air.yaml").scenario
    liq = load_scenario(root / "liquid.yaml").scenario
    p2n = load_scenario(root / "power-2n.yaml").scenario
    pn = load_scenario(root / "power-n.yaml").scenario

    def items(sc: Any) -> dict[str, float]:
        return {i.item: i.purchase for i in capital_items(sc)}

    ia, il, i2, i1 = items(air), items(liq), items(p2n), items(pn)
    kw = 128 * (3200 + 8 * 700) / 1000.0  # baseline.yaml: non-GPU 3.2 kW at full load (issue 23)
    assert ia["crah"] == 2 * 4 * 80000 and ia["chiller"] == pytest.approx(kw * 500)
    # heat capture (liquid.capture_fraction 0.7): the liquid plant is sized for 70 % of the heat, the rest
    # goes to a chiller and the hall's air units (one zone of four CRAH units, derived)
    assert il["cdu"] == 2 * 2 * 150000 and il["dry cooler"] == pytest.approx(kw * 0.7 * 250)
    assert il["cold plates and manifolds"] == 128 * 10000 and il["chiller"] == pytest.approx(kw * 0.3 * 500)
    assert il["crah"] == 4 * 80000
    assert i2["psu"] == 128 * 8 * 1000 and i1["psu"] == 128 * 4 * 1000
    assert i2["ups"] == pytest.approx(2 * kw * 300) and i1["ups"] == pytest.approx(kw * 300)
    assert i2["pdu"] == 2 * 32 * 5000 and i2["switchboard"] == 2 * 150000
    # evaporative units replace the chiller; with a trim chiller (mechanical mode carries the whole air
    # load) the chiller plant is bought as well
    ie = items(load_scenario(root / "evaporative.yaml").scenario)
    it = items(load_scenario(root / "evaporative-trim.yaml").scenario)
    assert ie["evaporative units"] == pytest.approx(kw * 150) and "chiller" not in ie and "trim chiller" not in ie
    assert it["evaporative units"] == pytest.approx(kw * 150) and it["trim chiller"] == pytest.approx(kw * 500)


def test_energy_with_a_cooling_model_prices_its_facility_energy_exactly() -> None:
    root = Path(__file__).resolve().parents[1] / "scenarios"
    ld = load_scenario(root / "hybrid.yaml", ["horizon_days=12"])
    m = run_replication(ld.scenario, 0, ld.hash).metrics
    assert m["cost.energy_kwh"] == pytest.approx(m["energy.facility_kwh"], rel=1e-9)
    assert m["cost.energy"] == pytest.approx(0.10 * m["energy.facility_kwh"], rel=1e-9)


def test_hourly_tariff_series_and_energy_integral(tmp_path: Path) -> None:
    from twin.model.costs import energy_cost
    from twin.scenario.costs import load_tou_csv

    p = tmp_path / "series.csv"
    p.write_text("hour,price_per_kwh\n0,0.1\n1,0.2\n\n2,0.3\n")
    kind, prices = load_tou_csv(p)
    assert kind == "hour" and prices.tolist() == [0.1, 0.2, 0.3]
    # 1 kW on [0, 1.5), 3 kW on [1.5, 4); price repeats: 0.1, 0.2, 0.3, 0.1; PUE 2 on day 0
    hourly = prices[np.arange(4) % 3]
    it, fac, cost = energy_cost(np.array([0.0, 1.5]), np.array([1000.0, 3000.0]), 4.0, hourly, np.array([2.0]))
    assert it == pytest.approx(1.5 * 1 + 2.5 * 3)
    assert fac == pytest.approx(2 * it)
    assert cost == pytest.approx(2 * (1 * 0.1 + 0.5 * 0.2 + 0.5 * 3 * 0.2 + 3 * 0.3 + 3 * 0.1))
    p.write_text("hour,price_per_kwh\n0,0.1\n1,-0.2\n")
    with pytest.raises(Exception, match="row 3"):
        load_tou_csv(p)


def test_sweep_objective_follows_the_metric_direction() -> None:
    """A higher-is-better objective is maximised: among feasible points the one with the largest mean
    goodput is chosen (twin 0.6.0 chose the smallest: it minimised every objective), the cost is still
    minimised, and a metric with no better direction is refused."""
    from twin.errors import InputError
    from twin.experiment.decide import choose, sense_of

    tidy = pd.DataFrame([{"point": p, "metric": m, "n": 10, "mean": v, "std": 0.01, "ci_low": v, "ci_high": v}
                         for p, g, c in [(0, 0.70, 3.0), (1, 0.80, 2.0), (2, 0.75, 1.0)]
                         for m, v in [("goodput", g), ("cost.total", c), ("crew_utilisation.technicians", 0.5)]])
    assert choose(tidy, [], "goodput", [], 0.95)[1] == 1
    assert choose(tidy, [], "cost.total", [], 0.95)[1] == 2
    assert sense_of("goodput") == "max" and sense_of("cost.total") == "min"
    with pytest.raises(InputError, match="no better direction"):
        choose(tidy, [], "crew_utilisation.technicians", [], 0.95)


def test_sweep_tables_speak_the_catalogue(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The terminal tables and the report's decision table of a costed sweep: labels with units, money
    in the scenario's currency (twin 0.6.0 printed 'total cost (currency units)' in the sweep table and
    the raw decision.parquet columns 'objective_mean', 'node_availability_lower_bound' in the report)."""
    doc = copy.deepcopy(WL_TINY)
    doc.pop("workload")
    path = write(tmp_path / "s.yaml", doc)
    code = cli.main(["sweep", str(path), "--param", "maintenance.crews.technicians.count=1,2", "--objective",
                     "cost.total", "--constraint", "node_availability>=0", "--reps", "2",
                     "--results", str(tmp_path / "res"), "--quiet"])
    out = capsys.readouterr().out
    assert code == 0
    (folder,) = (tmp_path / "res").rglob("sweep-*")
    md = (folder / "report.md").read_text()
    for text in (out, md):
        assert "currency units" not in text
        assert "total cost (USD)" in text
        assert "node availability (%): lower bound" in text
        for raw in ("objective_mean", "node_availability_lower_bound", "objective_ci_low"):
            assert raw not in text, raw
    assert "the smallest mean total cost among points" in out
    assert "Smallest mean total cost among the grid points" in md


def test_a_hall_without_cooling_reports_its_flat_pue_in_every_output(tmp_path: Path) -> None:
    """Issue 23: baseline has no cooling section, so its energy cost uses costs.energy.pue; the metric
    pue.flat says so (summary headline, compare and report tables read it), and a cooled hall has none."""
    from twin.experiment.single import headline_rows
    from twin.report.metrics import lookup
    from twin.scenario import load_scenario
    from twin.sim import run_replication

    root = Path(__file__).resolve().parent.parent / "scenarios"
    m = run_replication(load_scenario(root / "baseline.yaml", ["horizon_days=5"]).scenario, 0).metrics
    assert m["pue.flat"] == 1.55 and "pue" not in m
    assert ("PUE", "1.550 (flat: no cooling section, costs.energy.pue)") in headline_rows(m)
    assert lookup("pue.flat").label == "PUE flat (no cooling section)"
    air = run_replication(load_scenario(root / "air.yaml", ["horizon_days=5"]).scenario, 0).metrics
    assert "pue.flat" not in air and "pue" in air
