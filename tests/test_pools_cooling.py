"""Node pools in a hall with a cooling section (issue 52): the thermal model, the air zones' heat, the server fans
and the power chain's caps take each node's own pool's power figures.

Deterministic halls: no failures but what a case injects, one job on every GPU at full training load. Every
expected number is computed here from the scenario's figures (model.md §3, §4 and §5).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from twin.cli import main
from twin.errors import InputError
from twin.model.it_power import IT_POWER, ITPower
from twin.scenario.loader import load_dict
from twin.sim import Model, run_replication
from twin.validation.framework import identical_gpus
from twin.validation.physical import quiet_power_section

NEVER = {"dist": "fixed", "value_h": 1e9}
GPUS, NPR = 8, 4  # 2 racks of 4 nodes: rack 0 holds cluster.node, rack 1 the pool (the last rack)
OLD = {"tdp": 700.0, "idle": 100.0, "train": 650.0, "min": 200.0, "alpha": 0.5, "ng": 3000.0, "ng0": 1500.0}
NEW = {"tdp": 1000.0, "idle": 150.0, "train": 930.0, "min": 250.0, "alpha": 0.8, "ng": 4000.0, "ng0": 2000.0,
       "nameplate": 13000.0}
SUPPLY_C, R_HALL, R_NEW = 24.0, 0.06, 0.05


def pool(**over: Any) -> dict[str, Any]:
    gpu = {"tdp_w": NEW["tdp"], "idle_w": NEW["idle"], "train_w": NEW["train"], "min_w": NEW["min"],
           "speed_alpha": NEW["alpha"], **over}
    return {"name": "new", "racks": 1, "node": {"type": "new", "gpu": gpu, "non_gpu_w": NEW["ng"],
                                                "non_gpu_idle_w": NEW["ng0"], "nameplate_w": NEW["nameplate"]}}


def hall(hours: float, cooling: dict[str, Any], pools: bool = True, fans: bool = True) -> dict[str, Any]:
    node = {"type": "old", "gpus": GPUS, "parts": {},
            "gpu": {"tdp_w": OLD["tdp"], "idle_w": OLD["idle"], "train_w": OLD["train"], "min_w": OLD["min"],
                    "speed_alpha": OLD["alpha"]},
            "non_gpu_w": OLD["ng"], "non_gpu_idle_w": OLD["ng0"], "fans": {"enabled": fans}}
    return {"name": "pools-cooling", "seed": 5, "horizon_days": hours / 24.0,
            "cluster": {"racks": 2, "nodes_per_rack": NPR, "node": node,
                        "pools": [pool(r_air_c_per_w=R_NEW)] if pools else []},
            "maintenance": {"detection": {"dist": "fixed", "value_h": 0}, "crews": {"crew": {"count": 2}}},
            "workload": {"jobs": [{"name": "all", "gpus": 2 * NPR * GPUS, "work_h": 1e6, "submit_h": 0.0}]},
            "cooling": identical_gpus(cooling)}


def air(zones: int, crah: dict[str, Any], **over: Any) -> dict[str, Any]:
    return {"type": "air", "air": {"zones": zones, "supply_c": SUPPLY_C, "fan_part": None, "design_ambient_c": 60,
                                   "crah": {"failure": NEVER, **crah}},
            "gpu": {"r_air_c_per_w": R_HALL}, "node": {"max_inlet_c": 45.0},
            "response": {"policy": "none"}, "trace": {"nodes": [0, 3, 4, 7], "from_h": 0, "to_h": 1e6}, **over}


def node_w(f: dict[str, float]) -> float:
    """A node at full training load: non-GPU load + 8 GPUs at their training draw, W."""
    return f["ng"] + GPUS * f["train"]


# ---- (a) the energy, the air heat per zone and the GPU temperatures from each pool's own figures -------------

def test_a_pooled_air_hall_draws_and_heats_by_each_pools_figures() -> None:
    """Wrong models this excludes: the hall's scalar figures for every node (the pool's nodes would draw and heat
    8 × 650 + 3,000 W, not 8 × 930 + 4,000 W, and their fans run by the old node's nameplate); the pool's
    figures without its heat sink (its GPUs at 24 + 930 × 0.06, not × 0.05)."""
    hours = 12.0
    doc = hall(hours, air(2, {"count": 2, "required": 1, "capacity_kw": 60.0}))
    sc = load_dict(doc).scenario
    model = Model(sc, 0)
    model.run()
    m = model.result().metrics
    # the server fans (model.md §4, issue 42) by each pool's nameplate and non-GPU load, at the supply inlet
    f = sc.cluster.node.fans
    k_c = f.exhaust_c - f.design_inlet_c
    ref_c = f.reference_inlet_c if f.reference_inlet_c is not None else f.design_inlet_c

    def fans_w(fig: dict[str, float], rated_w: float) -> tuple[float, float]:
        full = f.max_w if f.max_w is not None else min(f.share * rated_w, fig["ng0"])
        share = node_w(fig) / rated_w
        run = max(f.min_speed, share * k_c / max(f.exhaust_c - SUPPLY_C, 1.0))
        stated = max(f.min_speed, share * k_c / max(f.exhaust_c - ref_c, 1.0))
        return full * min(1.0, run) ** 3, full * min(1.0, stated) ** 3

    old_rated = OLD["ng"] + GPUS * OLD["tdp"]
    fo, so = fans_w(OLD, old_rated)
    fn, sn = fans_w(NEW, NEW["nameplate"])
    assert abs((fn - sn) - (fo - so)) > 1.0  # the pools' fans differ: the test can tell them apart
    it_w = NPR * (node_w(OLD) + fo - so) + NPR * (node_w(NEW) + fn - sn)
    assert m["energy.it_kwh"] == pytest.approx(it_w * hours / 1000.0, rel=1e-9)
    assert m["energy.server_fans_kwh"] == pytest.approx(NPR * (fo + fn) * hours / 1000.0, rel=1e-9)
    # each air zone's heat at full load (AirRooms.air_heat_w: non-GPU + GPUs in an air hall), and the pool's
    # nodes' heat now, from their own figures
    cool = model.by_section["cooling"]
    assert cool.arrays.z_full == pytest.approx([NPR * node_w(OLD), NPR * node_w(NEW)], rel=1e-12)
    assert cool.arrays.node_air_w[NPR:] == pytest.approx(node_w(NEW), rel=1e-12)
    assert m["thermal.throttled_gpu_hours"] == 0.0
    # each GPU's steady state: the supply + its draw × its heat sink
    tr = model.result().tables["thermal_trace"]
    last = tr.sort_values("time_h", kind="stable").groupby("node").last()
    assert last.loc[[0, 3], "tss_c"].to_numpy() == pytest.approx(SUPPLY_C + OLD["train"] * R_HALL, abs=1e-9)
    assert last.loc[[4, 7], "tss_c"].to_numpy() == pytest.approx(SUPPLY_C + NEW["train"] * R_NEW, abs=1e-9)
    assert last.loc[[4, 7], "power_w"].to_numpy() == pytest.approx(NEW["train"], rel=1e-12)


# ---- (b) a partial refresh beyond an air zone's capacity: reported in kW, throttles; a liquid hall does not ------

def refresh(cooling: dict[str, Any], on_exceed: str = "run") -> dict[str, Any]:
    """The hall without pools for a day, then its last rack refreshed to the new generation (timeline step)."""
    d = hall(48.0, cooling, pools=False, fans=False)
    d["timeline"] = {"on_exceed": on_exceed, "steps": [{"name": "refresh", "day": 1, "set": {
        "cluster.pools": [pool()]}}]}
    return d


CRAH_KW = 34.0  # one unit per zone: 4 old nodes train at 32.8 kW, 4 new ones at 45.76 kW


def test_b_a_refresh_beyond_the_air_zone_is_reported_and_throttles_only_the_new_pool(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Wrong models this excludes: the headroom from the old TDP (no shortfall), the thermal model with the hall's
    scalar figures (the refreshed zone would carry 4 × 8.2 kW and never warm), throttling spread over the hall."""
    cooling = air(2, {"count": 1, "required": 1, "capacity_kw": CRAH_KW})
    short_kw = NPR * (NEW["ng"] + GPUS * NEW["tdp"]) / 1000.0 - CRAH_KW  # closed form from the new TDP: 14 kW
    assert short_kw == pytest.approx(14.0)
    p = tmp_path / "s.yaml"
    p.write_text(yaml.safe_dump(refresh(cooling, "refuse")))
    assert main(["run", str(p), "--dry-run", "--results", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert f"cooling_air_zone short by {short_kw:,.1f} kW" in err
    res = run_replication(load_dict(refresh(cooling)).scenario, 0)
    m = res.metrics
    assert m["headroom_cooling_air_zone.1"] == pytest.approx(-short_kw, rel=1e-12)
    assert m["stage_throttled_gpu_hours.0"] == 0.0 and m["stage_throttled_gpu_hours.1"] > 0.0
    tr = res.tables["thermal_trace"]
    after = tr[tr["stage"] == 1]
    assert (after[after.node >= NPR].speed < 1.0).any()  # the refreshed rack's GPUs throttle
    assert (after[after.node < NPR].speed == 1.0).all()  # the kept rack's never do
    # the same refresh in a liquid hall: the cold plates take the GPUs' heat, nothing throttles
    liquid = {"type": "liquid", "liquid": {"loops": 2, "supply_c": 35, "leak": None,
                                           "cdu": {"count": 2, "required": 1, "failure": NEVER,
                                                   "pumps": {"count": 1, "required": 1, "failure": NEVER}}}}
    ml = run_replication(load_dict(refresh(liquid)).scenario, 0).metrics
    assert ml["stage_throttled_gpu_hours.1"] == 0.0 and ml["thermal.throttled_gpu_hours"] == 0.0


# ---- (c) through the bus: a CRAH failure heats and slows the hotter pool first ------------------------------

def test_c_a_crah_failure_slows_the_hotter_pool_and_not_the_other() -> None:
    """One zone of two 40 kW units (both required) carrying 32.8 + 45.76 kW; a unit fails at 4 h (a part failure
    on the bus) and stays failed: the room warms toward 24 + 38.6 kW × R_room. At the hall's 0.06 °C/W the new
    GPUs (930 W) reach 89 °C once the supply passes 33.2 °C, the old ones (650 W) only past 50 °C: the new pool
    throttles, the old does not. Wrong model excluded: the hall's scalar figures (both pools alike)."""
    cooling = air(1, {"count": 2, "required": 2, "capacity_kw": 40.0},
                  inject=[{"part": "crah", "index": 0, "at_h": 4.0}])
    d = hall(12.0, cooling, fans=False)
    d["cluster"]["pools"] = [pool()]  # the hall's heat sink for both pools
    res = run_replication(load_dict(d).scenario, 0)
    m = res.metrics
    tr = res.tables["thermal_trace"]
    assert (tr[tr.time_h < 4.0].speed == 1.0).all()
    new, old = tr[tr.node >= NPR], tr[tr.node < NPR]
    assert (new.speed < 1.0).any() and (old.speed == 1.0).all()
    assert float(new.temp_c.max()) > float(old.temp_c.max()) + 10.0
    assert m["thermal.throttled_gpu_hours"] > 0.0 and m["thermal.trips"] == 0.0
    assert m["max_job.kept_h"] < 12.0  # the job spans both pools: it ran at the throttled pool's pace


def test_c_the_operators_response_caps_both_pools_at_one_cap_above_each_floor() -> None:
    """The same CRAH failure with the operator's response (policy cap, 0.1 h, trip supply 35 °C): the zone is capped
    at one cap c per GPU, each node at max(c, its pool's min_w) and its own draw, its speed by its own law; c is the
    highest cap at which the zone's air heat (each node's non-GPU load, following its own utilisation, + 8 GPUs)
    fits the budget and every GPU (the supply that heat makes + its draw × R) stays at the slowdown. Wrong models
    excluded: one node type's heat for the zone (c differs), the hall's floor and speed law for the new pool."""
    cooling = air(1, {"count": 2, "required": 2, "capacity_kw": 40.0,
                      "repair": {"time": {"dist": "fixed", "value_h": 100.0}}},  # (failed to the end)
                  inject=[{"part": "crah", "index": 0, "at_h": 4.0}])
    cooling["node"] = {"max_inlet_c": 35.0}
    cooling["response"] = {"policy": "cap", "response_h": 0.1}
    d = hall(12.0, cooling, fans=False)
    d["cluster"]["pools"] = [pool()]
    sc = load_dict(d).scenario
    model = Model(sc, 0)
    model.run()
    res = model.result()
    rows = res.tables["cooling_response"]
    assert list(rows.action) == ["cap"] and res.metrics["thermal.trips"] == 0.0
    c, budget, cap_w = float(rows.cap_w.iloc[0]), 1000.0 * rows.budget_kw.iloc[0], 1000.0 * rows.capacity_kw.iloc[0]
    assert cap_w == 40000.0  # one unit left
    r_room = model.by_section["cooling"].air_rooms.r_room / 1000.0  # °C per W of heat above the units' capacity
    slow_c = sc.cooling.gpu.slowdown_c

    def heat_w(x: float, f: dict[str, float]) -> float:  # a node's air heat with its GPUs at x W
        u = min(max((x - f["idle"]) / (f["train"] - f["idle"]), 0.0), 1.0)
        return f["ng0"] + (f["ng"] - f["ng0"]) * u + GPUS * x

    def fits(cap: float) -> bool:
        xo, xn = min(max(cap, OLD["min"]), OLD["train"]), min(max(cap, NEW["min"]), NEW["train"])
        q = NPR * (heat_w(xo, OLD) + heat_w(xn, NEW))
        room = SUPPLY_C + max(0.0, q - cap_w) * r_room
        return q <= budget and room + max(xo, xn) * R_HALL <= slow_c

    assert OLD["min"] < c < NEW["train"] and fits(c * (1 - 1e-9)) and not fits(c * (1 + 1e-6))
    op = it_of(model).cap_of("operator")
    assert op[:NPR] == pytest.approx(max(c, OLD["min"]), rel=1e-12)
    assert op[NPR:] == pytest.approx(max(c, NEW["min"]), rel=1e-12)
    sp = model.cluster.speed_caps["operator"]
    assert sp[:NPR] == pytest.approx(speed(max(c, OLD["min"]), OLD), rel=1e-12)
    assert sp[NPR:] == pytest.approx(speed(max(c, NEW["min"]), NEW), rel=1e-12)


# ---- (d) the power chain's caps per pool in a cooled hall: a PSU-capped node, the oversubscription limit -------

T0 = 10.0


def powered(topology: str, **power: Any) -> dict[str, Any]:
    d = hall(24.0, air(2, {"count": 2, "required": 1, "capacity_kw": 60.0}), fans=False)
    count = {"split": 6, "2n": 8}[topology]
    d["cluster"]["node"]["parts"]["psu"] = {
        "count": count, "required": 4, "min_to_run": 3, "effect": "redundant", "failure": NEVER,
        "repair": {"hot_swap": True, "burn_in_h": 0, "time": {"dist": "fixed", "value_h": 0.5}}}
    d["power"] = quiet_power_section(topology, ups=None, generator=None,
                                     inject=[{"feed": "A", "at_h": T0, "duration_h": 100.0}], **power)
    return d


def speed(cap_w: float, f: dict[str, float]) -> float:
    return 1.0 if cap_w >= f["train"] else ((cap_w - f["idle"]) / (f["train"] - f["idle"])) ** f["alpha"]


def it_of(model: Model) -> ITPower:
    it = model.service(IT_POWER)
    assert it is not None
    return it


def test_d_a_lost_feed_caps_only_the_pool_its_psus_cannot_carry() -> None:
    """DGX-class split feeds (6 PSUs, 3 per feed) of 3,000 W: feed A lost from 10 h, each node keeps 9 kW. The old
    node trains at 8.2 kW (uncapped); the new one at 11.44 kW is capped at (9,000 − 4,000) / 8 = 625 W per GPU, at
    24 + 625 × 0.05 °C, and slows by its own law. Wrong models excluded: the hall's non-GPU load in the budget
    (cap 750 W), the old node's speed law, the thermal model at the uncapped draw."""
    cap_w = 3000.0
    model = Model(load_dict(powered("split", capacity_w=cap_w)).scenario, 0)
    model.run()
    m = model.result().metrics
    gpu_cap = (3 * cap_w - NEW["ng"]) / GPUS
    assert gpu_cap == 625.0 and 3 * cap_w > node_w(OLD)
    pw = it_of(model).node_power_w
    assert pw[:NPR] == pytest.approx(node_w(OLD), rel=1e-12) and pw[NPR:] == pytest.approx(3 * cap_w, rel=1e-12)
    capped_h = 24.0 - T0
    assert m["power.capped_node_hours"] == pytest.approx(NPR * capped_h, rel=1e-9)
    assert m["max_job.kept_h"] == pytest.approx(24.0 - (1 - speed(gpu_cap, NEW)) * capped_h, rel=1e-9)
    tr = model.result().tables["thermal_trace"]
    last = tr.sort_values("time_h", kind="stable").groupby("node").last()
    assert last.loc[[4, 7], "tss_c"].to_numpy() == pytest.approx(SUPPLY_C + gpu_cap * R_NEW, abs=1e-9)
    assert last.loc[[0, 3], "tss_c"].to_numpy() == pytest.approx(SUPPLY_C + OLD["train"] * R_HALL, abs=1e-9)


def test_d_the_oversubscription_limit_caps_each_pool_at_one_cap_above_its_floor() -> None:
    """2N feeds oversubscribed at 60 kW each against 78.56 kW in training: feed A lost from 10 h (no UPS), the site
    is held at 60 kW: 28 kW of non-GPU load leaves 32 kW for 64 GPUs, one cap c = 500 W above both floors; the old
    pool's GPUs (650 W) and the new (930 W) both capped at c, each slowed by its own law, each GPU at
    24 + 500 × its heat sink. Wrong models excluded: the hall's figures for the water-fill, one speed law."""
    limit_w = 60000.0
    fixed_w = NPR * (OLD["ng"] + NEW["ng"])
    c = (limit_w - fixed_w) / GPUS / (2 * NPR)
    assert c == 500.0 and c > max(OLD["min"], NEW["min"]) and c < OLD["train"]
    model = Model(load_dict(powered("2n", oversubscription={"feed_capacity_kw": limit_w / 1000.0,
                                                            "capping_latency_s": 0.0})).scenario, 0)
    model.run()
    m = model.result().metrics
    pw = it_of(model).node_power_w
    assert pw[:NPR] == pytest.approx(OLD["ng"] + GPUS * c, rel=1e-9)
    assert pw[NPR:] == pytest.approx(NEW["ng"] + GPUS * c, rel=1e-9)
    slow = min(speed(c, OLD), speed(c, NEW))
    assert abs(speed(c, OLD) - speed(c, NEW)) > 0.01  # two laws
    assert m["max_job.kept_h"] == pytest.approx(24.0 - (1 - slow) * (24.0 - T0), rel=1e-9)
    tr = model.result().tables["thermal_trace"]
    last = tr.sort_values("time_h", kind="stable").groupby("node").last()
    assert last.loc[[4, 7], "tss_c"].to_numpy() == pytest.approx(SUPPLY_C + c * R_NEW, abs=1e-9)
    assert last.loc[[0, 3], "tss_c"].to_numpy() == pytest.approx(SUPPLY_C + c * R_HALL, abs=1e-9)


def test_a_hybrid_hall_still_refuses_a_pool_of_other_figures() -> None:
    """A hybrid hall splits its heat between air and liquid by one node type's non-GPU load (the refusal that
    remains: docs/guide/timeline.md, Limits); the same pool with the hall's figures runs there."""
    d = copy.deepcopy(hall(1.0, {"type": "hybrid"}))
    with pytest.raises(InputError, match=r"cluster\.pools\.0\.node\.gpu\..*hybrid"):
        load_dict(d)
    d["cluster"]["pools"] = [{"name": "same", "racks": 1, "node": {"type": "same", "gpu": {"r_cold_plate_c_per_w": 0.03}}}]
    assert load_dict(d).scenario.cluster.pools[0].node.gpu.r_cold_plate_c_per_w == 0.03


@pytest.mark.parametrize("hall_type", ["air", "liquid"])
def test_the_bundled_partial_refreshes_of_cooled_halls_run(hall_type: str) -> None:
    """scenarios/examples/growth/partial-refresh-{air,liquid}.yaml, briefly (four days, the step on day two): the
    air hall's refreshed zone is short of its CRAH design capacity by 64 × 12.5 − 3 × 200 = 200 kW; the liquid
    hall's air takes 30 % of the heat."""
    from twin.scenario.loader import load_scenario

    path = Path(__file__).resolve().parents[1] / "scenarios" / "examples" / "growth" / f"partial-refresh-{hall_type}.yaml"
    loaded = load_scenario(path, ["horizon_days=4", "timeline.steps.0.day=2"])
    m = run_replication(loaded.scenario, 0, loaded.hash).metrics
    assert m["step_nodes_replaced.refresh-half"] == 64
    if hall_type == "air":
        assert m["headroom_cooling_air_zone.1"] == pytest.approx(3 * 200 - 64 * (4.5 + 8 * 1.0), rel=1e-12)
