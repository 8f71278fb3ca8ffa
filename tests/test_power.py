"""The power chain (model.md §5) against hand-computed and closed-form answers.

Deterministic tests use scheduled utility outages (``power.inject``) and chain elements that
never fail (``failure: null``), so every expected time is computed in the test from the
scenario's numbers: UPS ride-through = SoC × ride_through × rated/actual load, PSU budget and GPU
cap from model.md §5, speed from model.md §3. Statistical tests compare with a closed form
(k-of-n availability) or a binomial bound over many outages.
"""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from scipy import stats

from twin import cli
from twin.model.it_power import IT_POWER
from twin.physics import closed_forms as cf
from twin.physics.power import node_it_power_w, site_gpu_cap_w
from twin.scenario.loader import load_dict
from twin.sim import Model, run_replication
from twin.validation.physical import quiet_power_section

GPUS, TDP, IDLE, NON_GPU, CAP_W = 8, 700.0, 100.0, 4600.0, 3300.0
FULL_W = NON_GPU + GPUS * TDP  # 10.2 kW: DGX H100 max system power (sources.md)
IDLE_NODE_W = NON_GPU + GPUS * IDLE
NEVER = {"dist": "fixed", "value_h": 1e9}
PSU_LAYOUT = {  # topology: (count, required, min_to_run)
    "n": (4, 4, 3),
    "n+1": (5, 4, 3),
    "2n": (8, 4, 3),
    "split": (6, 4, 3),
}


def scenario(topology: str, *, racks: int = 2, nodes_per_rack: int = 2, days: float = 1.0, seed: int = 5,
             psu_failure: dict[str, Any] | None = None, job_gpus: int | None = None,
             workload: dict[str, Any] | None = None, crews: int = 1, **power: Any) -> dict[str, Any]:
    count, req, run = PSU_LAYOUT[topology]
    doc: dict[str, Any] = {
        "name": f"power-{topology.replace('+', 'p')}",
        "seed": seed,
        "horizon_days": days,
        "cluster": {"racks": racks, "nodes_per_rack": nodes_per_rack, "node": {"gpus": GPUS, "parts": {
            "psu": {"count": count, "required": req, "min_to_run": run, "effect": "redundant",
                    "failure": psu_failure or NEVER,
                    "repair": {"hot_swap": True, "burn_in_h": 0, "time": {"dist": "fixed", "value_h": 0.5}}},
        }}},
        "maintenance": {"detection": {"dist": "fixed", "value_h": 0},
                        "crews": {"crew": {"count": crews, "shift": "24x7"}}},
        "power": quiet_power_section(topology, **power),
    }
    if job_gpus is not None:
        doc["workload"] = {"jobs": [{"name": "train", "gpus": job_gpus, "work_h": 1e6}]}
    if workload is not None:
        doc["workload"] = workload
    return doc


def run(doc: dict[str, Any], replication: int = 0):  # noqa: ANN201 - ReplicationResult
    return run_replication(load_dict(doc).scenario, replication)


def down_hours(res) -> float:  # noqa: ANN001
    iv = res.tables["node_intervals"]
    d = iv[iv["state"] == "down"]
    return float((d["end_h"] - d["start_h"]).sum())


# ---- physics helpers ------------------------------------------------------------------------------

def test_node_it_power_and_site_cap_water_filling() -> None:
    assert node_it_power_w(1.0, math.inf, GPUS, IDLE, TDP, NON_GPU) == pytest.approx(FULL_W)
    assert node_it_power_w(0.0, math.inf, GPUS, IDLE, TDP, NON_GPU) == pytest.approx(IDLE_NODE_W)
    # a cap only binds above it; array and scalar agree
    v = node_it_power_w(np.array([0.0, 0.5, 1.0]), np.array([np.inf, 300.0, 662.5]), GPUS, IDLE, TDP, NON_GPU)
    np.testing.assert_allclose(v, [IDLE_NODE_W, NON_GPU + 8 * 300.0, NON_GPU + 8 * 662.5])
    # water-filling: draws 700, 700, 100 W per GPU; the limit allows 1,100 W per GPU in total
    # across the three nodes -> the two hungry ones get 500 W each, the idle one keeps its 100 W
    assert site_gpu_cap_w([700.0, 700.0, 100.0], 8, 3 * NON_GPU, 3 * NON_GPU + 8 * 1100.0) == pytest.approx(500.0)
    assert site_gpu_cap_w([700.0, 700.0], 8, 0.0, 1e9) == math.inf
    x = np.array([650.0, 420.0, 700.0, 130.0, 510.0])
    c = site_gpu_cap_w(x, 8, 5 * NON_GPU, 5 * NON_GPU + 8 * 1700.0)
    assert 8 * np.minimum(x, c).sum() + 5 * NON_GPU == pytest.approx(5 * NON_GPU + 8 * 1700.0)


# ---- k-of-n PSUs with the power chain: closed form ------------------------------------------------

@pytest.mark.parametrize("reps,days", [(8, 60), pytest.param(30, 200, marks=pytest.mark.slow)])
def test_k_of_n_psu_availability_with_reliable_feeds(reps: int, days: float) -> None:
    """One DGX-class node, 6 PSUs split 3/3 over two feeds that never fail, 2 dedicated crews,
    exponential failures and repairs. The node is down while fewer than min_to_run = 3 PSUs work,
    so its availability is the 3-of-6 birth-death closed form (model.md §9)."""
    lam, mu, crews = 0.2, 1.0, 2
    doc = scenario("split", racks=1, nodes_per_rack=1, days=days, seed=4040, crews=crews, reboot_h=0.0,
                   psu_failure={"dist": "exponential", "mean_h": 1 / lam})
    doc["cluster"]["node"]["parts"]["psu"]["repair"]["time"] = {"dist": "exponential", "mean_h": 1 / mu}
    sc = load_dict(doc).scenario
    H, warm = sc.horizon_h, 48.0
    u = []
    for rep in range(reps):
        res = run_replication(sc, rep)
        iv = res.tables["node_intervals"]
        d = iv[iv["state"] == "down"]
        # the power chain's own account of the downtime agrees with the cluster's, all of it 'psu'
        assert res.metrics["power.down_node_hours"] == pytest.approx(down_hours(res), rel=1e-9, abs=1e-9)
        assert res.metrics["power.down_node_hours.psu"] == pytest.approx(res.metrics["power.down_node_hours"])
        s = np.maximum(d["start_h"].to_numpy(), warm)
        e = np.minimum(d["end_h"].to_numpy(), H)
        u.append(float(np.clip(e - s, 0, None).sum() / (H - warm)))
    x = np.array(u)
    half = stats.t.ppf(0.995, reps - 1) * x.std(ddof=1) / math.sqrt(reps)
    expected = 1 - cf.k_of_n_availability(6, 3, lam, mu, crews)
    print(f"unavailability {x.mean():.5f} ± {half:.5f}, expected {expected:.5f}")
    assert abs(x.mean() - expected) <= half
    # a model that took the node down below `required` (4) instead of min_to_run is far off
    assert abs(x.mean() - (1 - cf.k_of_n_availability(6, 4, lam, mu, crews))) > half


# ---- losing one feed for hours --------------------------------------------------------------------

T0, D = 10.0, 5.0  # the outage of feed A: from 10 h, for 5 h


def feed_loss(topology: str, start_failure_prob: float) -> tuple[Any, float]:
    """4 nodes under one 32-GPU compute-bound job (no checkpoints) for a day; feed A loses
    utility at T0 for D hours; its generator starts (p = 0) or never does (p = 1)."""
    doc = scenario(topology, job_gpus=32, generator={"start_failure_prob": start_failure_prob},
                   inject=[{"feed": "A", "at_h": T0, "duration_h": D}])
    res = run(doc)
    count = PSU_LAYOUT[topology][0]
    on_a = math.ceil(count / len(load_dict(doc).scenario.power.feeds))  # round robin: A gets the first slot
    share_a = on_a / count
    load_fraction = 4 * FULL_W * share_a / (4 * FULL_W)  # feed A's share of the full load / UPS rating
    ride_h = (10 / 60) / load_fraction
    return res, ride_h


def test_2n_feed_loss_no_downtime_no_capping() -> None:
    res, ride_h = feed_loss("2n", 1.0)
    assert ride_h == pytest.approx(1 / 3)  # each feed carries half: 20 min on a full battery
    m = res.metrics
    assert down_hours(res) == 0.0 and m["power.down_node_hours"] == 0.0
    assert m["power.capped_gpu_hours"] == 0.0 and m["power.capped_node_hours"] == 0.0
    assert m["interruptions"] == 0
    assert m["max_job.kept_h"] == pytest.approx(24.0, rel=1e-12)  # full speed all day
    # feed A was dead from the UPS running empty to utility back
    feeds = res.tables["power_feeds"]
    dead = feeds[(feeds.feed == "A") & (feeds.state == "dead")]
    assert len(dead) == 1 and dead.cause.iloc[0] == "generator_start"
    assert dead.start_h.iloc[0] == pytest.approx(T0 + ride_h) and dead.end_h.iloc[0] == pytest.approx(T0 + D)


def test_dgx_split_feed_loss_caps_without_downtime() -> None:
    res, ride_h = feed_loss("split", 1.0)
    m = res.metrics
    assert down_hours(res) == 0.0 and m["interruptions"] == 0
    capped_h = T0 + D - (T0 + ride_h)
    # 3 PSUs x 3.3 kW = 9.9 kW < 10.2 kW: each GPU capped at (9900 - 4600)/8 = 662.5 W
    gpu_cap = (3 * CAP_W - NON_GPU) / GPUS
    speed = ((gpu_cap - IDLE) / (TDP - IDLE)) ** 0.5
    assert m["power.capped_gpu_hours"] == pytest.approx(32 * capped_h, rel=1e-9)
    assert m["power.capped_node_hours"] == pytest.approx(4 * capped_h, rel=1e-9)
    # the compute-bound job ran at `speed` while capped: its kept work says so
    assert m["max_job.kept_h"] == pytest.approx(24.0 - (1 - speed) * capped_h, rel=1e-9)
    # IT power: 4 nodes at 9.9 kW while capped, 10.2 kW otherwise
    assert m["power.it_energy_kwh"] * 1000 == pytest.approx(
        4 * FULL_W * (24.0 - capped_h) + 4 * 3 * CAP_W * capped_h, rel=1e-9)


@pytest.mark.parametrize("p", [0.0, 1.0])
def test_single_feed_down_once_ups_exhausted_unless_generator_starts(p: float) -> None:
    res, ride_h = feed_loss("n", p)
    assert ride_h == pytest.approx(1 / 6)  # one feed carries the full load: 10 min
    m = res.metrics
    if p == 0.0:  # the generator takes over after 10 s, well inside the ride-through
        assert down_hours(res) == 0.0 and m["power.down_node_hours"] == 0.0
        assert m["power.generator_starts"] == 1 and m["power.outages_reaching_load"] == 0
        return
    reboot = 0.1
    per_node = T0 + D + reboot - (T0 + ride_h)
    assert m["power.down_node_hours"] == pytest.approx(4 * per_node, rel=1e-9)
    assert m["power.down_node_hours.generator_start"] == pytest.approx(4 * per_node, rel=1e-9)
    assert down_hours(res) == pytest.approx(4 * per_node, rel=1e-9)
    iv = res.tables["node_intervals"]
    assert (iv["cause"].astype(str) == "power:generator_start").all()
    np.testing.assert_allclose(iv["start_h"], T0 + ride_h)
    np.testing.assert_allclose(iv["end_h"], T0 + D + reboot)
    assert m["power.outages_reaching_load"] == 1


# ---- UPS state of charge: a second outage before the battery has recharged ------------------------

def test_ups_soc_second_outage_rides_through_for_less() -> None:
    """One feed, no generator, idle nodes (constant load). Outage 1 drains the battery for 15 min;
    outage 2 starts 2 h after it ended (recharge takes 8 h) and lasts an hour: it rides through
    for SoC2 x ride-through / load fraction, then the nodes go down."""
    t1, d1, gap, d2, recharge = 10.0, 0.25, 2.0, 1.0, 8.0
    t2 = t1 + d1 + gap
    doc = scenario("n", generator=None, reboot_h=0.0, ups={"recharge_h": recharge},
                   inject=[{"feed": "A", "at_h": t1, "duration_h": d1}, {"feed": "A", "at_h": t2, "duration_h": d2}])
    res = run(doc)
    lf = (4 * IDLE_NODE_W) / (4 * FULL_W)  # actual load / rated (full) load
    full_ride_h = (10 / 60) / lf
    assert d1 < full_ride_h  # the first outage rides through
    soc1 = 1 - d1 / full_ride_h
    soc2 = soc1 + gap / recharge
    assert soc2 < 1
    ride2 = soc2 * full_ride_h
    out = res.tables["power_outages"].sort_values("start_h")
    assert out["soc_start"].tolist() == pytest.approx([1.0, soc2], rel=1e-12)
    assert out["dead_h"].tolist() == pytest.approx([0.0, d2 - ride2], rel=1e-9)
    iv = res.tables["node_intervals"]
    assert len(iv) == 4
    np.testing.assert_allclose(iv["start_h"], t2 + ride2, rtol=1e-12)
    np.testing.assert_allclose(iv["end_h"], t2 + d2, rtol=1e-12)
    assert (iv["cause"].astype(str) == "power:utility").all()
    assert res.metrics["power.down_node_hours.utility"] == pytest.approx(4 * (d2 - ride2), rel=1e-9)
    # a model that forgot the first drain (battery full again) would go down 10 min later
    assert (t2 + full_ride_h) - iv["start_h"].iloc[0] > 0.15


# ---- generator start failures: binomial -----------------------------------------------------------

def test_generator_start_failure_share_binomial() -> None:
    """p = 0.2 over ~1,800 utility outages of one feed: the share of outages that reach the load
    is a binomial proportion (one independent draw per outage). A reached outage must be a
    failed start: the 10-minute battery outlasts the 10 s start delay (recharge 0.1 h)."""
    p = 0.2
    doc = scenario("n", racks=1, nodes_per_rack=1, days=730, seed=99, reboot_h=0.0,
                   utility={"outages_per_year": 900, "duration": {"dist": "fixed", "value_h": 0.5}},
                   ups={"recharge_h": 0.1}, generator={"start_failure_prob": p})
    res = run(doc)
    out = res.tables["power_outages"]
    out = out[out["end_h"].notna()]
    n = len(out)
    k = int(out["reached_load"].sum())
    assert n > 1500
    assert (out["reached_load"] == (out["generator"] == "failed_start")).all()
    share = k / n
    print(f"{k}/{n} = {share:.4f} reached the load, p = {p}")
    assert stats.binomtest(k, n, p).pvalue > 1e-4  # the suite's budget (tests/judging.py)
    # a start failure probability of 0.25 is rejected by the same data
    assert stats.binomtest(k, n, 0.25).pvalue < 0.001
    # each reaching outage is down for 0.5 h minus the ride-through, and recorded as such
    assert res.metrics["power.down_node_hours.generator_start"] == pytest.approx(
        float(out.loc[out.reached_load, "dead_h"].sum()), rel=1e-9)


# ---- energy: one source of truth ------------------------------------------------------------------

def test_energy_matches_independent_accounting() -> None:
    """No capping (2N, no outages): IT energy = (non-GPU + idle GPUs) x node-hours up
    + GPUs x (TDP - idle) x node-hours computing, the latter from the jobs' own running time.
    The same energy is the integral of the site power table and of the it_power service."""
    wl = {
        "scheduler": {"policy": "backfill"},
        "jobs": [{"name": "big", "gpus": 48, "work_h": 1e6, "checkpoint": {"interval_h": 1.0, "write_h": 0.1}}],
        "synthetic": {"arrival_rate_per_h": 0.5, "gpus": {"values": [8, 16]},
                      "work": {"dist": "exponential", "mean_h": 3}, "checkpoint": {"interval_h": 1, "write_h": 0.05,
                                                                                   "mode": "async"}},
    }
    doc = scenario("2n", racks=2, nodes_per_rack=4, days=20, workload=wl,
                   psu_failure={"dist": "exponential", "mean_h": 2000.0})
    doc["cluster"]["node"]["parts"]["gpu"] = {"count": 8, "effect": "node_down", "failure": {"mtbf_h": 20000},
                                              "repair": {"time": {"dist": "fixed", "value_h": 3}}}
    sc = load_dict(doc).scenario
    model = Model(sc)
    model.run()
    res = model.result()
    H = sc.horizon_h
    assert res.metrics["failures.gpu"] > 0 and res.metrics["failures.psu"] > 0
    assert res.metrics["power.capped_gpu_hours"] == 0.0
    jobs = res.tables["jobs"]
    jobs = jobs[jobs["record"] == "job"]
    computing_node_h = float((jobs["run_h"] * jobs["nodes"].astype(float)).sum())
    up_node_h = sc.cluster.n_nodes * H - down_hours(res)
    expected_wh = IDLE_NODE_W * up_node_h + GPUS * (TDP - IDLE) * computing_node_h
    e_kwh = res.metrics["power.it_energy_kwh"]
    assert e_kwh * 1000 == pytest.approx(expected_wh, rel=1e-9)
    site = res.tables["power_site"]
    dur = np.diff(np.append(site["time_h"].to_numpy(), H))
    assert float((site["it_power_w"].to_numpy() * dur).sum()) / 1000 == pytest.approx(e_kwh, rel=1e-12)
    assert model.services[IT_POWER].energy_kwh() == pytest.approx(e_kwh, rel=1e-12)
    assert res.metrics["power.mean_w"] * H / 1000 == pytest.approx(e_kwh, rel=1e-9)
    assert res.metrics["power.peak_w"] == pytest.approx(site["it_power_w"].max())
    # UPS losses on the IT load: (1/efficiency - 1) of it
    assert res.metrics["power.ups_loss_kwh"] == pytest.approx(e_kwh * (1 / 0.95 - 1), rel=1e-9)


def test_energy_agrees_with_thermal_accounting() -> None:
    """With a cooling section too, the thermal model's IT energy is the same integral."""
    from twin.scenario.schema import Scenario

    if "cooling" not in Scenario.model_fields:
        pytest.skip("no cooling section in this build")
    base = Path(__file__).resolve().parents[1] / "scenarios" / "air.yaml"
    if not base.is_file():
        pytest.skip("no air.yaml")
    from twin.scenario.loader import load_scenario

    loaded = load_scenario(base, ["horizon_days=5", "power={}"])
    res = run_replication(loaded.scenario)
    assert res.metrics["energy.it_kwh"] == pytest.approx(res.metrics["power.it_energy_kwh"], rel=1e-9)


@pytest.mark.parametrize("ups,eff", [("{efficiency: 0.9}", 0.9), ("null", 1.0)])
def test_facility_energy_uses_the_power_chains_ups(ups: str, eff: float) -> None:
    """One UPS: with a power section, facility energy and PUE use its efficiency (1 without a UPS), as
    power.ups_loss_kwh does; before, they used cooling.energy.ups_efficiency (0.95) in every case. A
    different explicit cooling.energy.ups_efficiency is refused."""
    from twin.errors import InputError
    from twin.scenario.loader import load_scenario

    base = Path(__file__).resolve().parents[1] / "scenarios" / "liquid.yaml"
    sets = ["horizon_days=2", f"power={{ups: {ups}}}"]
    res = run_replication(load_scenario(base, sets).scenario)
    m = res.metrics
    transformer = 0.985  # cooling.energy.transformer_efficiency default
    assert m["energy.facility_kwh"] == pytest.approx((m["energy.it_kwh"] / eff + m["energy.cooling_kwh"])
                                                     / transformer, rel=1e-12)
    assert m["power.ups_loss_kwh"] == pytest.approx(m["energy.it_kwh"] * (1 / eff - 1), rel=1e-9, abs=1e-9)
    with pytest.raises(InputError, match="cooling.energy.ups_efficiency"):
        load_scenario(base, [*sets, "cooling.energy.ups_efficiency=0.97"])


# ---- site power cap ---------------------------------------------------------------------------------

def test_site_cap_holds_site_power_and_slows_jobs() -> None:
    """4 nodes computing under a site cap of 36 kW: every GPU is held at (36000/4 - 4600)/8 =
    550 W, so the site draws exactly the cap and the job runs at ((550-100)/(700-100))^0.5."""
    cap = 36000.0
    doc = scenario("2n", job_gpus=32, site_cap_w=cap)
    res = run(doc)
    m = res.metrics
    gpu = (cap / 4 - NON_GPU) / GPUS
    speed = ((gpu - IDLE) / (TDP - IDLE)) ** 0.5
    assert m["power.peak_w"] == pytest.approx(cap, rel=1e-12)
    assert m["max_job.kept_h"] == pytest.approx(24.0 * speed, rel=1e-9)
    assert m["power.site_capped_gpu_hours"] == pytest.approx(32 * 24.0, rel=1e-9)
    assert m["power.site_cap_exceeded_hours"] == 0.0


# ---- ramps ------------------------------------------------------------------------------------------

def test_power_ramps_on_a_step_function() -> None:
    from twin.model.power import power_ramps

    # P = 0 on [0, 1), 10 on [1, 2), 30 on [2, 4]
    ts = np.array([0.0, 1.0, 2.0])
    vs = np.array([0.0, 10.0, 30.0])
    step, ramp = power_ramps(ts, vs, 4.0, 1.0)
    assert step == 20.0
    assert ramp == 20.0  # P(t + 1) − P(t): 10 on [0, 1), 20 on [1, 2), 0 on [2, 3]
    step, ramp = power_ramps(ts, vs, 4.0, 2.0)
    assert ramp == 30.0  # over two hours the two steps add up: P(2.5) − P(0.5)


# ---- the bundled scenarios -------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["power-n", "power-n1", "power-2n", "power-dgx-split"])
def test_bundled_power_scenarios_load_and_run(name: str, tmp_path: Path) -> None:
    path = Path(__file__).resolve().parents[1] / "scenarios" / f"{name}.yaml"
    rc = cli.main(["run", str(path), "--set", "horizon_days=10", "--results", str(tmp_path), "--quiet"])
    assert rc == 0


# ---- bad input ---------------------------------------------------------------------------------------

def _bad(tmp_path: Path, doc: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> str:
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    rc = cli.main(["run", str(path), "--results", str(tmp_path / "r")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1, err
    assert str(path) in err[0]
    return err[0]


@pytest.mark.parametrize("mutate,field", [
    (lambda d: d["cluster"]["node"]["parts"]["psu"].update(min_to_run=5), "cluster.node.parts.psu.min_to_run"),
    (lambda d: d["power"]["ups"].update(ride_through_min=-5), "power.ups.ride_through_min"),
    (lambda d: d["power"]["generator"].update(start_failure_prob=1.5), "power.generator.start_failure_prob"),
    (lambda d: d["power"]["generator"].update(start_failure_prob=-0.1), "power.generator.start_failure_prob"),
    (lambda d: d["power"].update(topology="2n"), "power.topology"),
    (lambda d: d["power"].update(psu_feeds=["A", "B", "C", "A", "B", "A"]), "power.psu_feeds"),
    (lambda d: d["power"].update(psu_feeds=["A", "B"]), "power.psu_feeds"),
    (lambda d: d["power"].update(capacity_w=2000), "power.capacity_w"),
    (lambda d: d["power"].update(inject=[{"feed": "C", "at_h": 1, "duration_h": 1}]), "power.inject.0.feed"),
    (lambda d: d["power"]["utility"].update(outages_per_year=-1), "power.utility.outages_per_year"),
    (lambda d: d["power"]["ups"].update(efficiency=1.2), "power.ups.efficiency"),
    (lambda d: d["power"].update(psu_part="fan"), "power.psu_part"),
])
def test_bad_power_input(mutate: Any, field: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = copy.deepcopy(scenario("split"))
    mutate(doc)
    line = _bad(tmp_path, doc, capsys)
    assert field in line, line


def test_node_down_hours_by_part_include_power_shortfalls_and_repair_drains() -> None:
    """A part's node-hours down count every down period it started: its own failure, the drain for its
    repair (``repair:<part>``) and what the power chain attributes to it (too few PSUs, a failed PDU);
    with the causes no part owns (thermal trips, planned drains, feeds, utility) they add up to the total."""
    from twin.scenario.loader import load_scenario

    path = Path(__file__).resolve().parents[1] / "scenarios" / "power-n.yaml"
    from twin.validation.framework import IDENTICAL_GPU_SETS

    sc = load_scenario(path, ["horizon_days=120", "power.pdu.failure={mtbf_h: 5000}",
                              "cluster.node.parts.nic.failure={mtbf_h: 300000}",  # NIC repairs happen
                              *IDENTICAL_GPU_SETS]).scenario  # (accounting, not GPU temperatures)
    res = run_replication(sc, 0)
    m = res.metrics
    iv = res.tables["node_intervals"]
    d = iv[iv["state"] == "down"]
    by_cause = (d["end_h"] - d["start_h"]).groupby(d["cause"].astype(str)).sum()
    assert by_cause.get("power:pdu", 0.0) > 0 and by_cause.get("repair:nic", 0.0) > 0  # the case is exercised
    assert m["node_down_hours.pdu"] == pytest.approx(by_cause["power:pdu"])
    assert m["node_down_hours.pdu"] == pytest.approx(m["power.down_node_hours.pdu"])
    assert m["node_down_hours.psu"] == pytest.approx(by_cause.get("power:psu", 0.0) + by_cause.get("psu", 0.0))
    assert m["node_down_hours.nic"] == pytest.approx(by_cause["repair:nic"] + by_cause.get("nic", 0.0))
    parts = res.tables["parts"].set_index("part")["node_down_hours"]
    per_part = {k.removeprefix("node_down_hours."): v for k, v in m.items() if k.startswith("node_down_hours.")}
    assert parts.to_dict() == pytest.approx(per_part)
    owned = set(per_part) | {f"repair:{p}" for p in per_part} | {"power:psu", "power:pdu"}
    unowned = float(sum(h for c, h in by_cause.items() if c not in owned))
    assert sum(per_part.values()) + unowned == pytest.approx(m["node_down_hours"])


def test_power_chain_cap_cools_the_gpus() -> None:
    """Coupling power -> thermal: a site cap holding every busy GPU near 613 W keeps it at about
    24 + 613 x 0.1 = 85.3 C, below the 89 C slowdown, in a hall where 700 W would reach 94 C. Before,
    the thermal model heated the GPUs at their demanded 700 W and reported them throttled nearly all
    the time (and hotter than they were)."""
    from twin.scenario.loader import load_scenario
    from twin.validation.framework import IDENTICAL_GPU_SETS

    base = Path(__file__).resolve().parents[1] / "scenarios" / "air.yaml"
    sets = ["horizon_days=2", "cooling.gpu.r_air_c_per_w=0.1",  # GPUs demand 700 W, non-GPU a constant 4.6 kW:
            "cluster.node.gpu.train_w=700", "cluster.node.non_gpu_w=4600", "cluster.node.non_gpu_idle_w=4600",
            "workload={jobs: [{name: all, gpus: 1024, work_h: 1000000}]}",
            f"power={{topology: n+1, utility: {{outages_per_year: 0}}, site_cap_w: {128 * (4600 + 8 * 613)}}}",
            *IDENTICAL_GPU_SETS]  # identical GPUs at the supply: one temperature to predict
    res = run_replication(load_scenario(base, sets).scenario)
    m = res.metrics
    busy_gpu_h = 1024 * 48.0
    assert m["power.site_capped_gpu_hours"] > 0.9 * busy_gpu_h  # the cap binds
    assert m["thermal.throttled_gpu_hours"] < 0.01 * busy_gpu_h, m["thermal.throttled_gpu_hours"]
    assert 84.0 <= m["thermal.gpu_temp_p50_c"] <= 86.0 and m["thermal.gpu_temp_p99_c"] < 89.0
    assert m["thermal.gpu_temp_max_c"] == pytest.approx(24 + 613 * 0.1, abs=0.05)
    # the node's speed is the power model's: the share lost to slowdown is (1 - s)/s of the work done at s
    # (kept or later lost), s = ((613 - 100)/(700 - 100))^0.5
    speed = ((613 - 100) / (700 - 100)) ** 0.5
    done = m["goodput.useful"] + m["goodput.lost"]
    assert m["goodput.slowdown"] == pytest.approx((1 - speed) / speed * done, rel=1e-3)


# ---- concurrent maintenance, common-cause and latent units of the chain (issue 24) -------------

def _maint_doc(topology: str, ups: dict[str, Any] | None = None, **power: Any) -> dict[str, Any]:
    count, req, run = PSU_LAYOUT[topology]
    psu = {"count": count, "required": req, "min_to_run": run, "effect": "redundant", "failure": NEVER,
           "repair": {"hot_swap": True, "burn_in_h": 0}}
    return {"name": f"maint-{topology}", "horizon_days": 125.0, "seed": 3,
            "cluster": {"racks": 2, "nodes_per_rack": 3, "node": {"gpus": GPUS, "parts": {"psu": psu}}},
            "maintenance": {"detection": {"dist": "fixed", "value_h": 0}, "crews": {"crew": {"count": 1}}},
            "power": quiet_power_section(topology, ups=ups or {}, **power)}


def test_concurrent_maintenance_validation_case_is_exact() -> None:
    """N loses exactly nodes × (duration + reboot_h) per UPS window; 2N none (twin validate case)."""
    from twin.validation.framework import Settings
    from twin.validation.physical import concurrent_maintenance

    n, two_n = concurrent_maintenance(Settings())
    assert n.reference == pytest.approx(3 * 6 * 8.1, rel=1e-12) and n.passed, n
    assert two_n.reference == 0.0 and two_n.passed, two_n
    assert all(n.excludes(v) for v in n.wrong.values()) and all(two_n.excludes(v) for v in two_n.wrong.values())


def test_maintenance_drain_is_a_planned_interruption_and_ends_after_reboot() -> None:
    mt = {"interval_h": 1000.0, "duration_h": 8.0, "offset_h": 100.0}
    res = run_replication(load_dict(_maint_doc("n", {"maintenance": mt})).scenario, 0)
    iv = res.tables["node_intervals"]
    down = iv[iv["state"] == "down"]
    first = down[down["start_h"] < 200]
    assert len(first) == 6 and set(first["cause"].astype(str)) == {"planned:power_maintenance"}
    assert np.allclose(first["start_h"], 100.0) and np.allclose(first["end_h"], 108.1)
    assert res.metrics["power.down_node_hours.maintenance"] == pytest.approx(res.metrics["power.down_node_hours"])


def test_outage_during_ups_bypass_maintenance_drops_the_load() -> None:
    """Bypass keeps the load up on raw utility; an outage during the window reaches it at once (the
    generator still starts 10 s later: down for the start delay plus reboot_h)."""
    mt = {"interval_h": 1000.0, "duration_h": 8.0, "offset_h": 100.0, "mode": "bypass"}
    doc = _maint_doc("n", {"maintenance": mt}, inject=[{"feed": "A", "at_h": 102.0, "duration_h": 1.0}])
    res = run_replication(load_dict(doc).scenario, 0)
    m = res.metrics
    assert m["power.maintenance_exposure_hours"] == pytest.approx(3 * 8.0)
    assert m["power.down_node_hours.maintenance"] == 0.0
    assert m["power.down_node_hours"] == pytest.approx(6 * (10 / 3600 + 0.1), rel=1e-9)
    # without the maintenance the UPS rides through the 10 s start: nothing lost
    doc["power"]["ups"].pop("maintenance")
    assert run_replication(load_dict(doc).scenario, 0).metrics["power.down_node_hours"] == 0.0


def test_generator_in_maintenance_cannot_start() -> None:
    mt = {"interval_h": 1000.0, "duration_h": 8.0, "offset_h": 100.0}
    doc = _maint_doc("n", generator={"maintenance": mt}, inject=[{"feed": "A", "at_h": 101.0, "duration_h": 1.0}])
    res = run_replication(load_dict(doc).scenario, 0)
    # the UPS carries idle nodes for 10 min × rated/actual load, then the feed is dead until utility returns
    ride_h = 10 / 60 / (IDLE_NODE_W / FULL_W)
    assert res.metrics["power.down_node_hours"] == pytest.approx(6 * (1.0 - ride_h + 0.1), rel=1e-9)


@pytest.mark.parametrize("where,value,msg", [
    ("generator", {"mode": "isolate"}, "@power.generator.maintenance.mode"),
    ("switchboard", {"mode": "bypass"}, "@power.switchboard.maintenance.mode"),
    ("ups", {"interval_h": 10.0, "duration_h": 6.0}, "@power.ups.maintenance.duration_h"),
])
def test_bad_maintenance_is_one_line_with_its_path(where: str, value: dict[str, Any], msg: str) -> None:
    from twin.errors import InputError

    doc = _maint_doc("2n")
    doc["power"][where] = {**doc["power"].get(where, {}), "maintenance": value}
    with pytest.raises(InputError, match=msg.lstrip("@").replace(".", r"\.")):
        load_dict(doc)


def test_generators_a_and_b_share_common_cause_events() -> None:
    """β = 0.5 across feeds: common events fail both generators at once (each its own ticket)."""
    doc = _maint_doc("2n", generator={"failure": {"dist": "exponential", "mean_h": 200.0},
                                      "common_cause_beta": 0.5})
    res = run_replication(load_dict(doc).scenario, 0)
    m = res.metrics
    from scipy.stats import poisson

    expected = 125.0 * 24 * 0.5 / 200.0  # common events at βλ over the horizon (7.5)
    assert 1 <= m["ccf_events.generator"] <= poisson.ppf(0.999, expected)
    assert m["ccf_failures.generator"] >= m["ccf_events.generator"]
    ev = res.tables["events"]
    fails = ev[(ev["kind"] == "fail") & ev["path"].astype(str).str.endswith("generator")]
    both = fails.groupby("time_h")["path"].nunique()
    assert (both == 2).sum() >= 1  # at least one event took A and B together
    t = res.tables["tickets"]
    assert len(t[t["part"] == "generator"]) + 2 >= m["failures.generator"]


def test_latent_generator_failure_found_by_an_outage() -> None:
    """A generator failed silently (tests every 10,000 h, never reached) is found by the outage that
    calls on it: counted as found on demand, and the outage reaches the load once the UPS is empty."""
    doc = _maint_doc("n", generator={"failure": {"dist": "fixed", "value_h": 50.0}, "latent_test_interval_h": 10000.0},
                     inject=[{"feed": "A", "at_h": 400.0, "duration_h": 1.0}])
    res = run_replication(load_dict(doc).scenario, 0)
    m = res.metrics
    assert m["latent_found_demand.generator"] == 1 and m["latent_found_test.generator"] == 0
    t = res.tables["tickets"]
    g = t[t["part"] == "generator"].iloc[0]
    assert g["fail_h"] == pytest.approx(50.0) and g["detected_h"] == pytest.approx(400.0)
    assert m["power.down_node_hours.feed"] > 0


def test_site_cap_with_heterogeneous_gpus_settles() -> None:
    """Per-GPU thermal units (an R spread) under a binding site cap. The thermal model's node cap is the mean of
    its GPUs' powers, and the free GPUs of a throttled node draw the site cap: filled against that node cap, a
    site cap moved the thermal cap that moved it, without end (RecursionError, issue 23). The site cap now
    water-fills against each GPU's own thermal cap: the run ends, the cap binds, and the site's IT power stays
    at or below the cap whenever the GPUs are not at their floor."""
    from twin.scenario.loader import load_scenario
    from twin.sim import Model
    from twin.validation.framework import IDENTICAL_GPU_SETS

    base = Path(__file__).resolve().parents[1] / "scenarios" / "air.yaml"
    # baseline's node: 3,200 W non-GPU at full load + 8 GPUs at 650 W in training; the cap allows 560 W a GPU
    cap_w = 128 * (3200 + 8 * 560)
    sets = ["horizon_days=2", "cooling.gpu.r_air_c_per_w=0.1", "cooling.gpu.r_sigma=0.05",
            "workload={jobs: [{name: all, gpus: 1024, work_h: 1000000}]}",
            f"power={{topology: n+1, utility: {{outages_per_year: 0}}, site_cap_w: {cap_w}}}",
            # the R spread alone (no inlet offsets: hotter inlets would hold more GPUs at their thermal cap)
            *IDENTICAL_GPU_SETS[1:]]
    model = Model(load_scenario(base, sets).scenario)
    th = model.by_section["cooling"]
    assert th.params.units_per_node == 8  # one thermal unit per GPU
    model.run()
    res = model.result()
    assert res.metrics["power.site_capped_gpu_hours"] > 0.9 * 1024 * 48.0
    assert res.metrics["thermal.throttled_gpu_hours"] > 0  # some GPUs hold at their own thermal cap
    _, vs = model.engine.recorder.levels["site_power_w"]
    assert max(vs[1:]) <= cap_w * (1 + 1e-12)


def _plain(v: Any) -> bool:
    """``v`` holds only values (numbers, strings, arrays, and lists, tuples and dicts of them)."""
    if isinstance(v, (list, tuple)):
        return all(_plain(x) for x in v)
    if isinstance(v, dict):
        return all(_plain(x) for x in v.keys()) and all(_plain(x) for x in v.values())
    return isinstance(v, (bool, int, float, str, type(None), np.ndarray, np.generic))


def _state(chain: Any) -> dict[str, Any]:
    """Every attribute of ``chain`` as a comparable copy (arrays and lists copied), and the events scheduled."""
    out: dict[str, Any] = {"_queued": len(chain.engine.env._queue)}
    for k, v in vars(chain).items():
        if isinstance(v, np.ndarray):
            out[k] = v.copy()
        elif isinstance(v, (list, dict)) and _plain(v):  # (containers of model objects: not the chain's own state)
            out[k] = copy.deepcopy(v)
        elif isinstance(v, (bool, int, float, str, type(None))):
            out[k] = v
    return out


def _same(a: Any, b: Any) -> bool:
    """Exact equality of two snapshots (arrays elementwise, NaN equal to NaN)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.shape == b.shape
                and bool(np.array_equal(a, b, equal_nan=a.dtype.kind == "f")))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(v, b[k]) for k, v in a.items())
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return bool(a == b)


def test_power_chain_idle_means_a_refresh_changes_nothing_for_it(monkeypatch) -> None:
    """``PowerChain._idle()`` (the IT power's watch: a refresh that moves no node's power may be skipped while it is
    True) holds only where ``_settle()`` then ``_after_load(nodes)`` change none of the chain's state and schedule no
    event: checked at every refresh of 60 days of the N+1 power hall with frequent utility outages (feeds on battery,
    UPS timers armed: not idle then), both answers seen."""
    from twin.model.power import PowerChain
    from twin.scenario.loader import load_scenario

    hall = Path(__file__).resolve().parents[1] / "benchmarks" / "halls" / "power-n1.yaml"
    sc = load_scenario(hall, ["horizon_days=60", "power.utility.outages_per_year=60"]).scenario
    seen = {True: 0, False: 0}
    real = PowerChain._after_load

    def after(self: PowerChain, idx: np.ndarray) -> None:
        idle = self._idle()
        seen[idle] += 1
        if idle:
            before = _state(self)
            self._settle()
            real(self, idx)
            assert _same(before, _state(self))
        else:
            real(self, idx)

    monkeypatch.setattr(PowerChain, "_after_load", after)
    Model(sc).run()
    assert seen[True] > 100 and seen[False] > 10, seen
