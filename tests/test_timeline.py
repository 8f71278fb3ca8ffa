"""The life of a hall as stages (issue 52): steps that add racks, replace the node type, drain nodes for
their installation; headroom; life-cycle costs."""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

import pytest
import yaml

from twin.cli import main
from twin.life import remaining_share
from twin.scenario.loader import load_dict, load_scenario
from twin.sim import run_replication

ROOT = Path(__file__).resolve().parent.parent

NEVER = {"dist": "fixed", "value_h": 1e9}
BASE: dict[str, Any] = {
    "name": "tl", "seed": 7, "horizon_days": 20,
    "cluster": {"racks": 2, "nodes_per_rack": 2, "node": {
        "type": "old", "gpus": 8, "gpu": {"tdp_w": 700.0, "idle_w": 100.0}, "non_gpu_w": 3000.0,
        "parts": {"gpu": {"count": 1, "effect": "node_down", "failure": NEVER,
                          "repair": {"time": {"dist": "fixed", "value_h": 1.0}}}}}},
    "maintenance": {"crews": {"technicians": {"count": 10, "shift": "24x7"}}},
    "costs": {"capital": {"node": {"old": 100000.0, "new": 250000.0}}},
}


def doc(**timeline: Any) -> dict[str, Any]:
    d = copy.deepcopy(BASE)
    d["timeline"] = timeline
    return d


def idle_kw(gpus: int, idle_w: float, non_gpu_w: float) -> float:
    return (gpus * idle_w + non_gpu_w) / 1000.0


def test_adding_racks_adds_exactly_their_nodes_parts_and_load() -> None:
    sc = load_dict(doc(steps=[{"name": "grow", "day": 8, "add_racks": 3}])).scenario
    st = sc.timeline.stages
    assert [s.cluster.n_nodes for s in st] == [4, 10]
    assert [s.horizon_days for s in st] == [8, 12]
    res = run_replication(sc, 0)
    parts = res.tables["parts"]
    gpu = parts[parts.part == "gpu"].set_index("stage")["installed"]
    assert list(gpu) == [4, 10]  # one part per node
    assert res.metrics["stage_gpus.0"] == 32 and res.metrics["stage_gpus.1"] == 80
    # no workload, nothing fails: every node idles all the time; the energy is the closed form
    pue = sc.costs.energy.pue
    kw = idle_kw(8, 100.0, 3000.0)
    expected = (4 * kw * 8 * 24 + 10 * kw * 12 * 24) * pue
    assert res.metrics["cost.energy_kwh"] == pytest.approx(expected, rel=1e-9)
    # stage 0 is the scenario without its timeline up to the step (same seed): identical metrics
    plain = copy.deepcopy(BASE)
    plain["horizon_days"] = 8
    alone = run_replication(load_dict(plain).scenario, 0).metrics
    assert res.metrics["stage_cost.0"] == alone["cost.total"]


def refresh(install: dict[str, Any] | None = None, **more: Any) -> dict[str, Any]:
    d = doc(steps=[{"name": "refresh", "day": 10, "resale_per_node": 20000.0, "disposal_per_node": 500.0,
                    "capital": 30000.0, "install": install or {"racks": "all", "hours_per_rack": 5, "crews": 1},
                    "set": {"cluster.node.type": "new", "cluster.node.gpu": {"tdp_w": 1000.0, "idle_w": 150.0},
                            "cluster.node.parts.gpu.failure": {"dist": "fixed", "value_h": 50.0}, **more}}])
    d["cluster"]["node"]["parts"]["gpu"]["failure"] = {"dist": "fixed", "value_h": 100.0}
    return d


def test_node_type_replacement_changes_failures_power_and_drains_its_window(tmp_path: Path) -> None:
    sc = load_dict(refresh()).scenario
    old, new = sc.timeline.stages
    assert (old.cluster.node.type, new.cluster.node.type) == ("old", "new")
    assert new.cluster.node.gpu.train_w == 1000.0  # derived afresh from the new TDP, not carried
    res = run_replication(sc, 0)
    # the installation: two racks one after the other, 5 h each, 2 nodes per rack: 20 node-hours exactly
    assert res.metrics["installation.node_hours"] == 20.0
    assert res.metrics["step_install_node_hours.refresh"] == 20.0
    iv = res.tables["node_intervals"]
    drained = iv[(iv.stage == 1) & (iv.cause == "planned:installation_maintenance")]
    assert float((drained.end_h - drained.start_h).sum()) == pytest.approx(20.0, abs=1e-9)
    # failures: a fixed lifetime of 100 h before, 50 h after (repair 1 h + detection 0.25 h)
    r0 = run_replication(old, 0).metrics
    r1 = run_replication(new, 0).metrics
    assert r0["failures.gpu"] == 4 * 2        # 240 h: at 100 and 201.25 h, each of 4 nodes
    assert r1["failures.gpu"] > 2 * r0["failures.gpu"] * 0.9
    assert res.metrics["failures.gpu"] == r0["failures.gpu"] + r1["failures.gpu"]
    # power: more per GPU from the date
    assert r1["cost.energy_kwh"] > r0["cost.energy_kwh"] * idle_kw(8, 150, 3000) / idle_kw(8, 100, 3000) * 0.9


def test_step_time_follows_the_new_generation() -> None:
    d = refresh(install={"racks": "none"}, **{"workload.jobs.0.training.peak_tflops": 2250.0})
    d["cluster"]["nodes_per_rack"] = 5
    d["workload"] = {"scheduler": {"policy": "fifo", "hot_spares": 2},
                     "storage": {"write_gb_per_s": 0.1, "read_gb_per_s": 1.0},
                     "jobs": [{"name": "llm", "gpus": 64,
                               "training": {"params_b": 1.0, "tokens_t": 0.02, "peak_tflops": 989.0, "mfu": 0.4},
                               "checkpoint": {"interval_h": 0.25, "mode": "sync"}}]}
    old, new = load_dict(d).scenario.timeline.stages
    assert new.workload.jobs[0].work_h == pytest.approx(old.workload.jobs[0].work_h * 989.0 / 2250.0, rel=1e-12)


def test_life_cost_is_the_stages_plus_the_steps_capital() -> None:
    sc = load_dict(refresh()).scenario
    res = run_replication(sc, 0)
    old, new = sc.timeline.stages
    s0, s1 = (run_replication(s, 0).metrics for s in (old, new))
    c = sc.costs
    psu = 0.0  # the node has no PSU part: its price is capital.node alone
    age = 10 / 365.0
    share = ((1 - (1 + c.discount_rate) ** -(c.amortisation_years - age))
             / (1 - (1 + c.discount_rate) ** -c.amortisation_years))
    writeoff = 4 * (100000.0 + psu) * share
    step = 30000.0 + writeoff - 4 * 20000.0 + 4 * 500.0
    assert res.metrics["step_writeoff.refresh"] == pytest.approx(writeoff, rel=1e-12)
    assert res.metrics["step_capital.refresh"] == pytest.approx(step, rel=1e-12)
    assert res.metrics["cost.total"] == pytest.approx(s0["cost.total"] + s1["cost.total"] + step, rel=1e-12)
    assert res.metrics["cost.capital_purchase"] == s1["cost.capital_purchase"]  # the hall as built at the end
    assert res.metrics["energy.it_kwh" if "energy.it_kwh" in s0 else "cost.energy_kwh"] == pytest.approx(
        s0["cost.energy_kwh"] + s1["cost.energy_kwh"], rel=1e-12)
    assert remaining_share(0.0, 5, 2) == pytest.approx(0.6) and remaining_share(0.08, 5, 6) == 0.0


def hall(path: str, **extra: Any) -> dict[str, Any]:
    """A bundled hall over 60 days with a refresh to a 1,000 W GPU on day 30 (nodes 8 x 1000 + 4,500 W)."""
    d: dict[str, Any] = {"extends": str(ROOT / "scenarios" / path), "name": "refresh", "horizon_days": 60,
                         "timeline": {"steps": [{"name": "refresh", "day": 30, "set": {
                             "cluster.node.type": "dgx-h100", "cluster.node.gpu": {"tdp_w": 1000.0, "train_w": 930.0},
                             "cluster.node.non_gpu_w": 4500.0, "cluster.node.nameplate_w": 14300.0,
                             "cluster.rack.power_limit_kw": 132.0}}], **extra}}
    return d


def test_a_refresh_beyond_the_air_halls_cooling_is_refused_with_its_shortfall(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "air-refresh.yaml"
    p.write_text(yaml.safe_dump(hall("air.yaml", on_exceed="refuse")))
    # closed form: a zone of 16 racks x 4 nodes at full power 4.5 + 8 x 1.0 kW against 3 x 200 kW of CRAH units
    short = 64 * (4.5 + 8 * 1.0) - 3 * 200.0
    assert main(["run", str(p), "--dry-run", "--results", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert "timeline.steps.0" in err and f"cooling_air_zone short by {short:,.1f} kW" in err


def test_a_refresh_run_throttles_the_air_hall_not_the_liquid_one(tmp_path: Path) -> None:
    out = {}
    for name in ("air.yaml", "liquid.yaml"):
        d = hall(name)
        d["timeline"]["steps"][0]["set"]["cooling.plant.chillers.capacity_kw"] = 1200.0  # heat rejection grown
        p = tmp_path / f"r-{name}"
        p.write_text(yaml.safe_dump(d))
        sc = load_scenario(p).scenario
        heads = dict((w, c - lo) for w, c, lo, _ in sc.timeline.headroom[1])
        out[name] = (heads, run_replication(sc, 0).metrics)
    air_heads, air = out["air.yaml"]
    liq_heads, liq = out["liquid.yaml"]
    assert air_heads["cooling_air_zone"] == pytest.approx(600.0 - 64 * 12.5)
    assert liq_heads["cooling_air_zone"] > 0  # the air carries 30 % of the heat in the liquid hall
    assert air["stage_throttled_gpu_hours.0"] == 0.0
    assert air["stage_throttled_gpu_hours.1"] > 0.0
    assert liq["stage_throttled_gpu_hours.1"] == 0.0
    assert not math.isnan(air["cost.per_useful_gpu_hour"])


@pytest.mark.parametrize("bad, where", [
    ({"steps": [{"name": "a", "day": 30}, {"name": "b", "day": 20}]}, "timeline.steps.1.day"),
    ({"steps": [{"name": "a", "day": 5, "set": {"cluster.node.gpus": 0}}]}, "timeline.steps.0"),
    ({"steps": [{"name": "a", "day": 5, "set": {"cluster.nodes.x": 1}}]}, "timeline.steps.0"),
    ({"steps": [{"name": "a", "day": 5, "set": {"horizon_days": 1}}]}, "timeline.steps.0.set.horizon_days"),
    ({"steps": [{"name": "a", "day": 5, "capital": -1}]}, "timeline.steps.0.capital"),
])
def test_bad_timeline_is_one_line_exit_2(tmp_path: Path, bad: dict[str, Any], where: str,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    d = copy.deepcopy(BASE)
    d["horizon_days"] = 60
    d["timeline"] = bad
    p = tmp_path / "bad.yaml"
    p.write_text(yaml.safe_dump(d))
    assert main(["run", str(p), "--dry-run", "--results", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert where in err and "Traceback" not in err


def test_a_step_after_the_horizon_is_not_reached() -> None:
    d = refresh()
    d["horizon_days"] = 6
    sc = load_dict(d).scenario
    assert len(sc.timeline.stages) == 1 and sc.timeline.stages[0].horizon_days == 6
    res = run_replication(sc, 0).metrics
    assert res["life.stages"] == 1 and not any(k.startswith("step_") for k in res)


def test_no_timeline_changes_nothing() -> None:
    sc = load_dict(copy.deepcopy(BASE)).scenario
    assert sc.timeline is None and sc.installation is None


def test_the_headroom_after_each_step_is_an_advisory_when_short(tmp_path: Path) -> None:
    from twin.scenario.advice import advise

    p = tmp_path / "air-refresh.yaml"
    p.write_text(yaml.safe_dump(hall("air.yaml")))
    texts = [str(a) for a in advise(load_scenario(p).scenario)]
    assert any(t.startswith("timeline.steps.0: step 'refresh' (day 30) exceeds the hall's headroom: "
                            "cooling_air_zone short by 200.0 kW") for t in texts), texts
    assert not [t for t in texts if "restart as new" in t]  # the parts keep their age (tests/test_part_age.py)
    assert not [t for t in texts if "timeline.base" in t]
    assert not [str(a) for a in advise(load_dict(copy.deepcopy(BASE)).scenario) if "timeline" in str(a)]


def test_jobs_follow_the_cluster() -> None:
    d = doc(steps=[{"name": "grow", "day": 5, "add_racks": 2, "jobs_follow": True}])
    d["workload"] = {"jobs": [{"name": "big", "gpus": 24, "work_h": 1000.0}]}
    old, new = load_dict(d).scenario.timeline.stages
    assert (old.workload.jobs[0].gpus, new.workload.jobs[0].gpus) == (24, 48)  # 4 -> 8 nodes: twice the GPUs


def test_every_life_metric_is_catalogued_and_explained() -> None:
    from twin.report import metrics as catalogue
    from twin.report.explain import lookup

    res = run_replication(load_dict(refresh()).scenario, 0)
    assert catalogue.missing(list(res.metrics)) == []
    assert [k for k in res.metrics if lookup(k) is None and k.startswith(
        ("stage_", "step_", "headroom", "installation.", "life.", "cost.st"))] == []


def retrofit(**step: Any) -> dict[str, Any]:
    """The bundled air hall retrofitted to liquid on day 30 of 60, the nodes kept, one CRAH unit per zone
    removed (the air carries only the heat not captured)."""
    liquid = yaml.safe_load((ROOT / "scenarios" / "examples" / "growth" / "air-retrofit-liquid.yaml").read_text())
    sets = liquid["timeline"]["steps"][0]["set"]
    keep = {k: v for k, v in sets.items() if k.startswith("cooling.")}
    keep["cooling.air.crah.count"] = 3
    keep["cooling.air.crah.required"] = 2
    return {"extends": str(ROOT / "scenarios" / "air.yaml"), "name": "retrofit", "horizon_days": 60,
            "timeline": {"steps": [{"name": "retrofit", "day": 30, "set": keep, **step}]}}


def loaded(tmp_path: Path, d: dict[str, Any], name: str = "s.yaml") -> Any:
    p = tmp_path / name
    p.write_text(yaml.safe_dump(d))
    return load_scenario(p).scenario


def test_a_retrofit_writes_off_the_air_plant_it_removes(tmp_path: Path) -> None:
    from twin.life import step_capital

    sc = loaded(tmp_path, retrofit(plant_resale_share=0.1))
    old, new = sc.timeline.stages
    assert (old.cooling.type, new.cooling.type) == ("air", "liquid")
    node = old.cluster.node
    n = old.cluster.n_nodes
    full_kw = n * (node.gpus * node.gpu.tdp_w + node.non_gpu_w) / 1000.0  # the cost model's air heat, kW
    f = new.cooling.liquid.capture_fraction
    cap, c = old.costs.capital, old.costs
    zones = old.cooling.air.zones
    # removed: one CRAH unit per zone, and the chiller capacity the air no longer needs (the liquid's share)
    removed = zones * 1 * cap.crah + (full_kw - full_kw * (1.0 - f)) * cap.chiller_per_kw
    r, years, age = c.discount_rate, c.plant_years, 30 / 365.0
    share = (1 - (1 + r) ** -(years - age)) / (1 - (1 + r) ** -years)
    s = step_capital(sc)[0]
    assert s["nodes_replaced"] == 0 and s["writeoff"] == 0.0  # the nodes stay
    assert s["plant_removed"] == pytest.approx(removed, rel=1e-12)
    assert s["plant_writeoff"] == pytest.approx(removed * share, rel=1e-12)
    assert s["plant_resale"] == pytest.approx(0.1 * removed, rel=1e-12)
    assert s["capital"] == pytest.approx(removed * share - 0.1 * removed, rel=1e-12)
    # the default: scrapped, nothing fetched
    s0 = step_capital(loaded(tmp_path, retrofit(), "default.yaml"))[0]
    assert s0["plant_resale"] == 0.0 and s0["capital"] == pytest.approx(removed * share, rel=1e-12)


def test_plant_added_then_removed_is_written_off_at_its_own_age(tmp_path: Path) -> None:
    from twin.life import PlantLot, plant_change, remaining_share, step_capital

    d = retrofit()
    d["timeline"]["steps"] = [{"name": "crah", "day": 10, "set": {"cooling.air.crah.count": 6}},
                              {"name": "less", "day": 40, "set": {"cooling.air.crah.count": 3}}]
    sc = loaded(tmp_path, d)
    grow, shrink = step_capital(sc)
    price, zones = sc.costs.capital.crah, sc.cooling.air.zones
    assert grow["plant_removed"] == 0.0 and grow["capital"] == 0.0  # added plant is priced by the stage's annuity
    # 6 -> 3 per zone: the 4 original units per zone go first (oldest), at 40 days; none of the added ones
    r, n = sc.costs.discount_rate, sc.costs.plant_years
    assert shrink["plant_removed"] == pytest.approx(zones * 3 * price, rel=1e-12)
    assert shrink["plant_writeoff"] == pytest.approx(zones * 3 * price * remaining_share(r, n, 40 / 365.0), rel=1e-12)
    lots = {("cooling", "crah"): [PlantLot(2.0, 0.0, 100.0, 10.0), PlantLot(2.0, 365.0, 100.0, 10.0)]}
    removed, off = plant_change(lots, sc.timeline.stages[0], 730.0, 0.0)  # stage 0 holds 8 units: nothing removed
    assert (removed, off) == (0.0, 0.0) and sum(x.quantity for x in lots[("cooling", "crah")]) == 8.0


def test_a_refresh_that_grows_the_plant_writes_none_off() -> None:
    from twin.life import step_capital

    sc = load_scenario(ROOT / "scenarios" / "examples" / "growth" / "air-refresh.yaml").scenario
    s = step_capital(sc)[0]
    assert s["plant_removed"] == 0.0 and s["plant_writeoff"] == 0.0
    assert s["capital"] == pytest.approx(s["works"] + s["writeoff"] - s["resale"] + s["disposal"], rel=1e-12)
