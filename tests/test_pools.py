"""Node pools (issue 52): a hall of two GPU generations, and a timeline step that replaces a subset of racks."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from twin.cli import main
from twin.life import remaining_share
from twin.scenario.density import floor_plan
from twin.scenario.headroom import checks
from twin.scenario.loader import load_dict
from twin.sim import run_replication

NEVER = {"dist": "fixed", "value_h": 1e9}
BASE: dict[str, Any] = {
    "name": "pools", "seed": 7, "horizon_days": 20,
    "cluster": {"racks": 3, "nodes_per_rack": 2, "node": {
        "type": "old", "gpus": 8, "gpu": {"tdp_w": 700.0, "idle_w": 100.0}, "non_gpu_w": 3000.0,
        "parts": {"gpu": {"count": 1, "effect": "node_down", "failure": NEVER,
                          "repair": {"time": {"dist": "fixed", "value_h": 1.0}}}}}},
    "maintenance": {"crews": {"technicians": {"count": 10, "shift": "24x7"}}},
    "costs": {"capital": {"node": {"old": 100000.0, "new": 250000.0}}},
}
NEW = {"type": "new", "gpu": {"tdp_w": 1000.0, "idle_w": 150.0}, "non_gpu_w": 4000.0, "nameplate_w": 13000.0}


def hall(pool_racks: int = 1, **node: Any) -> dict[str, Any]:
    d = copy.deepcopy(BASE)
    d["cluster"]["pools"] = [{"name": "b200", "racks": pool_racks, "node": {**NEW, **node}}]
    return d


def idle_kw(gpus: int, idle_w: float, non_gpu_w: float) -> float:
    return (gpus * idle_w + non_gpu_w) / 1000.0


def test_a_pool_of_higher_power_draws_exactly_its_extra_power() -> None:
    sc = load_dict(hall()).scenario
    assert [(a, b, n.type) for a, b, n in sc.cluster.node_pools()] == [(0, 4, "old"), (4, 6, "new")]
    got = run_replication(sc, 0).metrics
    plain = run_replication(load_dict(copy.deepcopy(BASE)).scenario, 0).metrics
    hours, pue = 20 * 24, sc.costs.energy.pue
    # no workload, nothing fails: every node idles; the pool's two nodes draw their own idle power
    assert got["cost.energy_kwh"] == pytest.approx((4 * idle_kw(8, 100, 3000) + 2 * idle_kw(8, 150, 4000))
                                                   * hours * pue, rel=1e-12)
    extra = 2 * (idle_kw(8, 150, 4000) - idle_kw(8, 100, 3000)) * hours * pue
    assert got["cost.energy_kwh"] - plain["cost.energy_kwh"] == pytest.approx(extra, rel=1e-9)


def test_a_pools_failure_law_is_its_own() -> None:
    d = hall(parts={"gpu": {"failure": {"dist": "fixed", "value_h": 50.0}}})
    res = run_replication(load_dict(d).scenario, 0)
    # a fixed 50 h life, detection 0.25 h and repair 1 h: failures at 50 + 51.25 k h < 480 h, 9 per node,
    # in the pool's 2 nodes only (cluster.node's never fail)
    assert res.metrics["failures.gpu"] == 2 * 9
    ev = res.tables["events"]
    failed = ev[ev.kind == "node_down"]["node"].astype(int)
    assert len(failed) == 18 and set(failed) == {4, 5}


def paced(job_gpus: int) -> float:
    """End of a 10 h job in a hall whose first racks are the new generation (2× the peak of the old pool)."""
    d = copy.deepcopy(BASE)
    d["cluster"]["node"].update(type="new", peak_tflops=1978.0)
    d["cluster"]["pools"] = [{"name": "h100", "racks": 1, "node": {"type": "old", "peak_tflops": 989.0}}]
    d["workload"] = {"scheduler": {"policy": "fifo", "hot_spares": 0},
                     "jobs": [{"name": "llm", "gpus": job_gpus, "work_h": 10.0}]}
    jobs = run_replication(load_dict(d).scenario, 0).tables["jobs"]
    return float(jobs.end_h.iloc[0] - jobs.first_start_h.iloc[0])


def test_a_job_spanning_both_generations_runs_at_the_old_pace() -> None:
    assert paced(48) == pytest.approx(20.0, rel=1e-12)   # six nodes: two of the old generation, at half speed
    assert paced(32) == pytest.approx(10.0, rel=1e-12)   # four nodes of the new generation only


def test_what_a_pool_cannot_change_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import yaml

    d = hall(gpus=4)
    p = tmp_path / "s.yaml"
    p.write_text(yaml.safe_dump(d))
    assert main(["run", str(p), "--dry-run", "--results", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert "cluster.pools.0.node.gpus" in err and len(err.splitlines()) == 1
    d = hall()
    d["cooling"] = {"type": "hybrid"}  # (a hybrid hall's heat split holds one node type's figures)
    p.write_text(yaml.safe_dump(d))
    assert main(["run", str(p), "--dry-run", "--results", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert "cluster.pools.0.node.gpu.idle_w" in err and "hybrid" in err and len(err.splitlines()) == 1


def refresh(**install: Any) -> dict[str, Any]:
    d = copy.deepcopy(BASE)
    d["cluster"]["node"]["parts"]["gpu"]["failure"] = {"dist": "fixed", "value_h": 100.0}
    d["timeline"] = {"steps": [{
        "name": "partial", "day": 10, "resale_per_node": 20000.0, "disposal_per_node": 500.0, "capital": 30000.0,
        "install": {"racks": "replaced", "hours_per_rack": 5, "crews": 1, **install},
        "set": {"cluster.pools": [{"name": "b200", "racks": 2, "node": {
            **NEW, "parts": {"gpu": {"failure": {"dist": "fixed", "value_h": 50.0}}}}}]}}]}
    return d


def test_a_step_replacing_two_racks_of_three() -> None:
    sc = load_dict(refresh()).scenario
    old, new = sc.timeline.stages
    assert not old.cluster.pools and [n.type for _, _, n in new.cluster.node_pools()] == ["old", "new"]
    # the drain: the two replaced racks (1 and 2) one after the other, 5 h each: 2 racks × 2 nodes × 5 h
    wins = new.installation.windows
    assert [(w.first_node, w.nodes, w.start_h) for w in wins] == [(2, 2, 0.0), (4, 2, 5.0)]
    res = run_replication(sc, 0)
    assert res.metrics["installation.node_hours"] == 20.0
    iv = res.tables["node_intervals"]
    drained = iv[(iv.stage == 1) & (iv.cause == "planned:installation_maintenance")]
    assert set(drained.node.astype(int)) == {2, 3, 4, 5}
    assert float((drained.end_h - drained.start_h).sum()) == pytest.approx(20.0, abs=1e-9)
    # the write-off, resale and disposal of the four replaced nodes only (the first rack's two stay)
    c = sc.costs
    share = remaining_share(c.discount_rate, c.amortisation_years, 10 / 365.0)
    assert res.metrics["step_nodes_replaced.partial"] == 4
    assert res.metrics["step_writeoff.partial"] == pytest.approx(4 * 100000.0 * share, rel=1e-12)
    assert res.metrics["step_capital.partial"] == pytest.approx(
        30000.0 + 4 * 100000.0 * share - 4 * 20000.0 + 4 * 500.0, rel=1e-12)
    # the stage after holds 2 old and 4 new nodes: its capital purchase prices each type
    assert res.metrics["step_purchase.partial"] == pytest.approx(4 * (250000.0 - 100000.0), rel=1e-12)
    # failures from the date: the new racks' parts start new at the 50 h law (at 50, 101.25, 152.5, 203.75 h of
    # the 240 h stage), the first rack's keep their age and law (failed at 201.25 h of stage 0, replaced at
    # 202.5 h, 37.5 h old at the step: they fail at 62.5 and 163.75 h; new they would fail at 100 h)
    ev = r1_events(sc)
    fails = ev[ev.kind == "fail"]
    assert fails.groupby("node").size().to_dict() == {0: 2, 1: 2, 2: 4, 3: 4, 4: 4, 5: 4}
    first = fails.groupby("node").time_h.min().to_dict()
    assert first[0] == pytest.approx(62.5) and first[4] == pytest.approx(50.0)


def r1_events(sc: Any) -> Any:
    """Stage 1's events in the life (its times from the stage's start)."""
    ev = run_replication(sc, 0).tables["events"]
    return ev[ev.stage == 1]


def test_a_step_cannot_add_racks_before_the_pools() -> None:
    d = hall()
    d["timeline"] = {"steps": [{"name": "grow", "day": 5, "add_racks": 1}]}
    with pytest.raises(Exception, match="add_racks"):
        load_dict(d)
    d["timeline"] = {"steps": [{"name": "grow", "day": 5, "add_racks": 1, "set": {"cluster.pools.0.racks": 2}}]}
    sc = load_dict(d).scenario
    assert [n.type for _, _, n in sc.timeline.stages[1].cluster.node_pools()] == ["old", "new"]
    assert sc.timeline.stages[1].cluster.node_pools()[1][:2] == (4, 8)


def test_headroom_counts_each_pools_load() -> None:
    d = hall(pool_racks=2)
    d["cluster"]["rack"] = {"power_limit_kw": 20.0}
    sc = load_dict(d).scenario
    found = {c[0]: c for c in checks(sc)}
    # a rack of the new pool: 2 nodes at 13 kW nameplate (the old pool's rack: 2 × 8.6 kW)
    assert found["rack_power"][2] == pytest.approx(26.0)
    fp = floor_plan(sc)  # the nameplate summed over the pools: 2 old nodes at 8.6 kW, 4 new at 13 kW
    assert fp["it_kw"] == pytest.approx(2 * 8.6 + 4 * 13.0) and fp["rack_kw"] == pytest.approx(26.0)
    d = hall(pool_racks=2, gpu={"tdp_w": 700.0, "idle_w": 100.0}, non_gpu_w=3000.0, nameplate_w=8600.0)
    d["cluster"]["rack"] = {"power_limit_kw": 20.0}
    assert {c[0]: c for c in checks(load_dict(d).scenario)}["rack_power"][2] == pytest.approx(17.2)


def test_a_resolved_pooled_scenario_revalidates_to_itself() -> None:
    from twin.scenario.schema import Scenario

    sc = load_dict(hall(gpu={"tdp_w": 1000.0, "idle_w": 150.0})).scenario
    again = Scenario.model_validate(sc.model_dump(mode="json"))
    # the pool's training draw was derived from its own TDP (not cluster.node's, now written out as 700 W)
    assert again.cluster.pool_node(1).gpu.train_w == sc.cluster.pool_node(1).gpu.train_w == 1000.0
    assert again.cluster.pool_node(1) == sc.cluster.pool_node(1)


def test_the_bundled_partial_refresh() -> None:
    from twin.scenario.loader import load_scenario

    root = Path(__file__).resolve().parent.parent
    sc = load_scenario(root / "scenarios" / "examples" / "growth" / "partial-refresh.yaml").scenario
    before, after = sc.timeline.stages
    assert not before.cluster.pools
    assert [(a, b, n.type) for a, b, n in after.cluster.node_pools()] == [(0, 64, "dgx-h100"), (64, 128, "dgx-b200")]
    assert after.cluster.generation_speed() == pytest.approx([989.0 / 2250.0, 1.0])
    # 16 replaced racks of 4 nodes, a day each, two crews: 8 waves, 16 x 4 x 24 node-hours
    assert after.installation.node_hours(after.horizon_h) == 16 * 4 * 24
    assert min(w.first_node for w in after.installation.windows) == 64


def test_a_node_a_leak_destroys_is_bought_again_at_its_pools_price() -> None:
    from twin.scenario.loader import load_scenario

    root = Path(__file__).resolve().parent.parent
    # a pool that changes only the node type (and price) runs with the liquid hall's thermal model and leaks
    ov = ["horizon_days=30", "workload=null", "cooling.liquid.leak.failure.mtbf_h=2000",
          "cooling.liquid.leak.damage.probability=1", "cooling.liquid.leak.detection.probability=0",
          "costs.capital.node.dgx-h200=400000", "cluster.pools=[{name: h200, racks: 16, node: {type: dgx-h200}}]"]
    res = run_replication(load_scenario(root / "scenarios" / "liquid.yaml", ov).scenario, 0)
    dmg = res.tables["leak_damage"]
    old, new = int((dmg.node < 64).sum()), int((dmg.node >= 64).sum())
    assert old and new
    psus = 6 * 1000.0  # six PSUs a node at USD 1,000
    assert res.metrics["cost.leak_damage"] == pytest.approx(old * (300000.0 + psus) + new * (400000.0 + psus),
                                                            rel=1e-12)
