"""Node pools under a power section (issue 52 follow-up): the power chain and the site limits cap each pool's GPUs
with one common cap, each node clamped at its own pool's min_w, and slow each pool by its own speed law.

Deterministic: no failures, no outages; one job on every GPU at full load for the whole horizon. The common cap
and each pool's speed are computed in the tests from the scenario's numbers (model.md §3 and §5).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from twin.cli import main
from twin.model.it_power import IT_POWER, ITPower
from twin.model.power_figures import site_gpu_cap_floor_w
from twin.physics.power import site_gpu_cap_w
from twin.scenario.loader import load_dict
from twin.sim import Model
from twin.validation.physical import quiet_power_section

NEVER = {"dist": "fixed", "value_h": 1e9}
GPUS, OLD_N, NEW_N = 8, 4, 2  # 3 racks of 2 nodes: cluster.node's 4 nodes, the pool's 2 (its last rack)
OLD = {"tdp": 700.0, "idle": 100.0, "min": 200.0, "alpha": 0.5, "ng": 3000.0}
NEW = {"tdp": 1000.0, "idle": 150.0, "alpha": 0.8, "ng": 4000.0}
FIXED_W = OLD_N * OLD["ng"] + NEW_N * NEW["ng"]  # non-GPU load of every node at full load, W


def hall(new_min_w: float, **power: Any) -> dict[str, Any]:
    return {
        "name": "pools-power", "seed": 3, "horizon_days": 1,
        "cluster": {"racks": 3, "nodes_per_rack": 2, "node": {
            "type": "old", "gpus": GPUS, "gpu": {"tdp_w": OLD["tdp"], "idle_w": OLD["idle"], "min_w": OLD["min"],
                                                 "speed_alpha": OLD["alpha"]},
            "non_gpu_w": OLD["ng"],
            "parts": {"psu": {"count": 4, "required": 4, "min_to_run": 3, "effect": "redundant", "failure": NEVER,
                              "repair": {"hot_swap": True, "burn_in_h": 0,
                                         "time": {"dist": "fixed", "value_h": 0.5}}}}},
            "pools": [{"name": "b200", "racks": 1, "node": {
                "type": "new", "gpu": {"tdp_w": NEW["tdp"], "idle_w": NEW["idle"], "min_w": new_min_w,
                                       "speed_alpha": NEW["alpha"]},
                "non_gpu_w": NEW["ng"]}}]},
        "maintenance": {"detection": {"dist": "fixed", "value_h": 0},
                        "crews": {"crew": {"count": 1, "shift": "24x7"}}},
        "power": quiet_power_section("n", **power),
        "workload": {"jobs": [{"name": "train", "gpus": GPUS * (OLD_N + NEW_N), "work_h": 1e6}]},
    }


def speed(cap_w: float, fig: dict[str, float]) -> float:
    """model.md §3: ((P_cap − P_idle)/(P_d − P_idle))^α below the demand, else 1."""
    return 1.0 if cap_w >= fig["tdp"] else ((cap_w - fig["idle"]) / (fig["tdp"] - fig["idle"])) ** fig["alpha"]


def it_of(model: Model) -> ITPower:
    it = model.service(IT_POWER)
    assert it is not None
    return it


def run_model(doc: dict[str, Any]) -> tuple[Model, dict[str, float]]:
    model = Model(load_dict(doc).scenario)
    model.run()
    return model, model.result().metrics


def check_pools(model: Model, m: dict[str, float], limit_w: float, old_cap: float, new_cap: float) -> None:
    it = it_of(model)
    pw = it.node_power_w
    # each pool's nodes draw non-GPU + 8 × their own cap; the site exactly at the limit
    assert pw[:OLD_N] == pytest.approx(OLD["ng"] + GPUS * old_cap, rel=1e-12)
    assert pw[OLD_N:] == pytest.approx(NEW["ng"] + GPUS * new_cap, rel=1e-12)
    assert m["power.peak_w"] == pytest.approx(limit_w, rel=1e-12)
    s = model.by_section["power"].speed  # the power chain's speed caps, per node
    s_old, s_new = speed(old_cap, OLD), speed(new_cap, NEW)
    assert s_old < 1.0 and s_new < 1.0 and abs(s_old - s_new) > 0.01  # two laws, both binding
    assert s[:OLD_N] == pytest.approx(s_old, rel=1e-12)
    assert s[OLD_N:] == pytest.approx(s_new, rel=1e-12)
    # the job spans both pools: it runs at its slowest node's pace
    assert m["max_job.kept_h"] == pytest.approx(24.0 * min(s_old, s_new), rel=1e-9)
    assert m["power.site_capped_gpu_hours"] == pytest.approx(GPUS * (OLD_N + NEW_N) * 24.0, rel=1e-9)
    assert m["power.site_cap_exceeded_hours"] == 0.0


def test_a_site_cap_caps_each_pool_at_one_cap_and_slows_each_by_its_own_law() -> None:
    """Site cap 44 kW: 20 kW of non-GPU load leaves 24 kW for 48 GPUs, one common cap of 500 W each (above both
    pools' min_w, below both demands)."""
    limit = 44000.0
    c = (limit - FIXED_W) / GPUS / (OLD_N + NEW_N)
    assert c == 500.0
    model, m = run_model(hall(300.0, site_cap_w=limit))
    assert it_of(model).cap_of("power_site") == pytest.approx(c, rel=1e-12)
    check_pools(model, m, limit, c, c)


def test_a_pools_min_w_floors_its_gpus_and_the_others_take_the_rest() -> None:
    """Site cap 43.2 kW with the new pool's min_w at 550 W: the common cap c falls below 550 W, so the new pool's
    GPUs hold at 550 W and the old pool's take what is left: 20 kW + 8 × (4 c + 2 × 550) = 43.2 kW, c = 450 W."""
    limit, new_min = 43200.0, 550.0
    c = ((limit - FIXED_W) / GPUS - NEW_N * new_min) / OLD_N
    assert c == 450.0 and OLD["min"] < c < new_min
    model, m = run_model(hall(new_min, site_cap_w=limit))
    caps = it_of(model).cap_of("power_site")
    assert caps[:OLD_N] == pytest.approx(c, rel=1e-12) and (caps[OLD_N:] == new_min).all()
    check_pools(model, m, limit, c, new_min)


def test_the_floored_water_fill_against_a_sweep() -> None:
    """site_gpu_cap_floor_w: the largest c with fixed + g Σ min(x_i, max(c, m_i)) <= limit, against a dense sweep
    of c; with one floor it is site_gpu_cap_w floored at it."""
    rng = np.random.default_rng(1)
    for _ in range(50):
        x = rng.uniform(100.0, 1000.0, 40)
        m = rng.choice([150.0, 300.0, 450.0], 40)
        lo = np.minimum(x, m)
        limit = 5000.0 + 8.0 * rng.uniform(lo.sum(), x.sum())
        c, short = site_gpu_cap_floor_w(x, m, 8, 5000.0, limit)
        assert not short
        assert 5000.0 + 8 * np.minimum(x, np.maximum(c, m)).sum() == pytest.approx(limit, rel=1e-12)
        above = c + 1e-6
        assert 5000.0 + 8 * np.minimum(x, np.maximum(above, m)).sum() > limit
        one = np.full(40, 150.0)
        c1, short1 = site_gpu_cap_floor_w(x, one, 8, 5000.0, limit)
        assert c1 == pytest.approx(max(site_gpu_cap_w(x, 8, 5000.0, limit), 150.0), rel=1e-12) and not short1
    c, short = site_gpu_cap_floor_w(np.array([500.0, 900.0]), np.array([300.0, 400.0]), 1, 0.0, 600.0)
    assert short and c == 300.0  # the floors alone (300 + 400 W) exceed the limit: each held at its own


def test_psu_capacity_and_site_cap_are_checked_against_each_pool(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "s.yaml"
    d = hall(300.0, capacity_w=2900.0)  # 4 × 2,900 W covers the old node's 8.6 kW but not the new one's 12 kW
    p.write_text(yaml.safe_dump(d))
    assert main(["run", str(p), "--dry-run", "--results", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert "power.capacity_w" in err and "cluster.pools.0" in err and len(err.splitlines()) == 1
    floor = OLD_N * (OLD["ng"] + GPUS * OLD["min"]) + NEW_N * (NEW["ng"] + GPUS * 300.0)
    p.write_text(yaml.safe_dump(hall(300.0, site_cap_w=floor - 1.0)))
    assert main(["run", str(p), "--dry-run", "--results", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert "power.site_cap_w" in err and f"{floor:g}" in err and len(err.splitlines()) == 1
    p.write_text(yaml.safe_dump(hall(300.0, site_cap_w=floor)))
    assert main(["run", str(p), "--dry-run", "--results", str(tmp_path / "r")]) == 0


def test_the_refusal_is_gone_for_power_and_cooling_and_stays_for_a_hybrid_hall(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "s.yaml"
    p.write_text(yaml.safe_dump(hall(300.0)))
    assert main(["run", str(p), "--dry-run", "--results", str(tmp_path / "r")]) == 0
    capsys.readouterr()
    d = copy.deepcopy(hall(300.0))
    d["cooling"] = {"type": "air"}  # (the thermal model takes each pool's figures: tests/test_pools_cooling.py)
    p.write_text(yaml.safe_dump(d))
    assert main(["run", str(p), "--dry-run", "--results", str(tmp_path / "r")]) == 0
    capsys.readouterr()
    d["cooling"] = {"type": "hybrid"}
    p.write_text(yaml.safe_dump(d))
    assert main(["run", str(p), "--dry-run", "--results", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "cluster.pools.0.node.gpu." in err and "hybrid" in err


def test_a_demand_response_request_caps_each_pool_by_its_own_figures(tmp_path: Path) -> None:
    """A grid request (power.grid, twin.model.site_limit) from hour 1 to past the horizon sheds 15.2 kW of the
    58.4 kW every node draws at full load: the same limit as above, the new pool held at its 550 W floor, the old
    at 450 W; the job ran its first hour at full speed."""
    from twin.scenario.loader import load_scenario

    full_w = OLD_N * (OLD["ng"] + GPUS * OLD["tdp"]) + NEW_N * (NEW["ng"] + GPUS * NEW["tdp"])
    assert full_w == 58400.0
    limit, new_min = 43200.0, 550.0
    (tmp_path / "grid.csv").write_text(f"kind,start_h,duration_h,kw\ndemand_response,1,100,{(full_w - limit) / 1000}\n")
    d = hall(new_min, grid={"file": "grid.csv"})
    p = tmp_path / "s.yaml"
    p.write_text(yaml.safe_dump(d))
    model = Model(load_scenario(p).scenario)
    model.run()
    m = model.result().metrics
    c = ((limit - FIXED_W) / GPUS - NEW_N * new_min) / OLD_N
    pw = it_of(model).node_power_w
    assert pw[:OLD_N] == pytest.approx(OLD["ng"] + GPUS * c, rel=1e-12)
    assert pw[OLD_N:] == pytest.approx(NEW["ng"] + GPUS * new_min, rel=1e-12)
    s = model.by_section["grid"].limit.speed
    s_old, s_new = speed(c, OLD), speed(new_min, NEW)
    assert s[:OLD_N] == pytest.approx(s_old, rel=1e-12) and s[OLD_N:] == pytest.approx(s_new, rel=1e-12)
    assert m["max_job.kept_h"] == pytest.approx(1.0 + 23.0 * min(s_old, s_new), rel=1e-9)
    assert m["power.grid_dr_short_hours"] == 0.0 and m["power.grid_dr_hours"] == pytest.approx(23.0)


def test_the_ups_is_sized_and_bought_for_each_pools_full_demand() -> None:
    """Without a stated UPS rating the power chain's UPS rating and the UPS bought (costs) are every node at its own
    pool's full demand: 4 × 8.6 kW + 2 × 12 kW = 58.4 kW per feed."""
    from twin.model.costs import capital_items

    d = hall(300.0)
    d["costs"] = {"capital": {"node": {"old": 100000.0, "new": 250000.0}}}
    sc = load_dict(d).scenario
    assert sc.power is not None and (sc.power.ups is None or sc.power.ups.capacity_kw is None)
    full_w = OLD_N * (OLD["ng"] + GPUS * OLD["tdp"]) + NEW_N * (NEW["ng"] + GPUS * NEW["tdp"])
    ups = [i for i in capital_items(sc) if i.item == "ups"]
    assert len(ups) == 1 and ups[0].quantity == pytest.approx(len(sc.power.feeds) * full_w / 1000.0, rel=1e-12)
    model = Model(sc)
    assert model.by_section["power"].ups_rating_w == full_w
