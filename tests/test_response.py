"""The operator's response to a cooling shortfall (issue 42 item 6): the starvation probe (2 of 4 CRAH
units left, nodes trip and, with no response, never all return), capping and draining to the heat budget,
and the coupling of the cap to the job's speed and goodput. Expected values are computed here from the
scenario's numbers and the room model's steady state, S = S₀ + (Q − Q_cap)·R_room."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest

from twin.scenario.loader import load_dict
from twin.sim import ReplicationResult, run_replication
from twin.validation.framework import identical_gpus

NEVER = {"dist": "fixed", "value_h": 1.0e9}
T_FAIL = 10.0
UNIT_KW, COUNT, REQUIRED = 25.0, 4, 3
R_ROOM = 2.0 * 15 / (REQUIRED * UNIT_KW)  # °C per kW: the schema's derived default
SUPPLY, MAX_INLET = 24.0, 35.0
N_NODES = 8
NON_GPU_W, GPUS, IDLE_W, TDP_W, ALPHA = 4600.0, 8, 100.0, 700.0, 0.5  # cluster.node defaults (train_w = tdp)


def probe(policy: str | None, hours: float = 200.0, failed: int = 2, response_h: float = 1.0,
          margin_c: float = 2.0, r_air: float = 0.09) -> dict[str, Any]:
    """The starvation probe at small scale: 2 racks × 4 nodes in one zone of four 25 kW CRAH units, all
    nodes in one job; ``failed`` units fail at 10 h and are never repaired (no derating: the design
    ambient is above the site's)."""
    inject = [{"part": "crah", "index": i, "at_h": T_FAIL} for i in range(failed)]
    c: dict[str, Any] = {
        "type": "air",
        "air": {"zones": 1, "crah": {"count": COUNT, "required": REQUIRED, "capacity_kw": UNIT_KW, "failure": NEVER,
                                     "repair": "none"},
                "supply_c": SUPPLY, "room_tau_min": 15, "inlet_step_c": 0.05, "fan_part": None,
                "design_ambient_c": 60},
        "gpu": {"r_air_c_per_w": r_air},
        "node": {"max_inlet_c": MAX_INLET},
        "inject": inject,
    }
    if policy is not None:
        c["response"] = {"policy": policy, "response_h": response_h, "inlet_margin_c": margin_c}
    return {
        "name": "probe", "seed": 3, "horizon_days": hours / 24.0,
        "cluster": {"racks": 2, "nodes_per_rack": 4, "node": {"gpus": GPUS, "parts": {}}},
        "maintenance": {"detection": {"dist": "fixed", "value_h": 0.25},
                        "crews": {"crew": {"count": 3, "shift": "24x7"}}},
        "workload": {"jobs": [{"name": "all", "gpus": N_NODES * GPUS, "work_h": 1e6, "submit_h": 0.0}]},
        "cooling": identical_gpus(c),
    }


def run(doc: dict[str, Any]) -> ReplicationResult:
    return run_replication(load_dict(doc).scenario)


def node_heat_w(gpu_w: float) -> float:
    return NON_GPU_W + GPUS * gpu_w


def budget_w(units_left: int, margin_c: float = 2.0) -> float:
    return units_left * UNIT_KW * 1000.0 + max(0.0, MAX_INLET - margin_c - SUPPLY) / R_ROOM * 1000.0


def availability(res: ReplicationResult) -> float:
    return float(res.metrics["node_availability"])


def test_default_policy_is_cap() -> None:
    sc = load_dict(probe(None)).scenario
    assert sc.cooling is not None and sc.cooling.response.policy == "cap"


def test_starvation_probe_none_leaves_nodes_tripped() -> None:
    """Today's behaviour (policy none): 2 of 4 units (50 kW) for 81.6 kW heads the room for
    24 + 31.6 × 0.4 = 36.6 °C, every node trips at the 35 °C crossing, and only the nodes the zone could
    carry at full load come back (⌊50 / 10.2⌋ = 4): the other 4 stay tripped to the horizon."""
    res = run(probe("none"))
    trips = res.tables["thermal_trips"]
    s_inf = SUPPLY + (N_NODES * node_heat_w(TDP_W) / 1000.0 - 2 * UNIT_KW) * R_ROOM
    t_trip = T_FAIL + 15.0 * math.log((s_inf - SUPPLY) / (s_inf - MAX_INLET)) / 60.0
    first = trips[trips.start_h < t_trip + 1e-6]
    assert len(first) == N_NODES and np.allclose(first.start_h, t_trip, atol=1e-9)
    assert int(trips.end_h.isna().sum()) == N_NODES - int(2 * UNIT_KW * 1000 // node_heat_w(TDP_W))
    assert res.metrics["response.actions"] == 0.0 and len(res.tables["cooling_response"]) == 0


def test_starvation_probe_cap_brings_tripped_nodes_back_capped() -> None:
    """Policy cap: at 10 h + response_h the operator caps every node at c with 8·h(c) = budget; all tripped
    nodes return capped (none left tripped), availability is above policy none's, and from then on the
    zone's heat stays within the budget (so its room within the margin below the trip supply)."""
    res_none = run(probe("none"))
    res = run(probe("cap"))
    B = budget_w(2)
    c = (B / N_NODES - NON_GPU_W) / GPUS
    resp = res.tables["cooling_response"]
    assert resp.action.astype(str).tolist() == ["cap"]
    assert resp.time_h.iloc[0] == pytest.approx(T_FAIL + 1.0, abs=1e-9)
    assert resp.cap_w.iloc[0] == pytest.approx(c, rel=1e-12)
    assert resp.budget_kw.iloc[0] == pytest.approx(B / 1000.0, rel=1e-12)
    trips = res.tables["thermal_trips"]
    assert len(trips) == N_NODES and trips.end_h.notna().all()  # every tripped node came back
    # those the zone could carry uncapped came back before the response, as with policy none; the other
    # four at the response (capped: admitted against the budget) after the 0.25 h reboot
    none_back = res_none.tables["thermal_trips"].end_h.dropna()
    keep = int(2 * UNIT_KW * 1000 // node_heat_w(TDP_W))
    assert sorted(trips.end_h.nsmallest(keep)) == pytest.approx(sorted(none_back.nsmallest(keep)), abs=1e-9)
    assert np.allclose(trips.end_h.nlargest(N_NODES - keep), T_FAIL + 1.0 + 0.25, atol=1e-9)
    assert availability(res) > availability(res_none)
    # heat within the budget once capped: the zone's load on every later timeline row
    tl = res.tables["cooling_timeline"]
    after = tl[(tl.unit == "zone") & (tl.time_h >= T_FAIL + 1.0)]
    assert len(after) and (after.load_kw <= B / 1000.0 * (1 + 1e-9)).all()
    assert (after.target_c <= MAX_INLET - 2.0 + 1e-9).all()
    # energy within the budget: a whole day later, every node up at full load capped, the IT energy is
    # 8 × h(c) × 24 h = the budget × 24 h (an air hall: all node heat goes to the zone's air)
    day = res.tables["pue_daily"].set_index("day")
    assert day.loc[3, "it_kwh"] == pytest.approx(N_NODES * node_heat_w(c) * 24 / 1000.0, rel=1e-9)
    assert day.loc[3, "it_kwh"] == pytest.approx(B * 24 / 1000.0, rel=1e-9)
    assert res.metrics["response.capped_node_hours"] == pytest.approx(N_NODES * (200.0 - T_FAIL - 1.0), rel=1e-9)


def test_cap_keeps_the_hottest_gpu_below_slowdown() -> None:
    """A warmer GPU design (R = 0.11 °C/W): the budget's cap (557.8 W) would leave the GPUs throttling in the
    33 °C room it makes, so the operator caps lower, at the c where S(c) + c·R = 89 °C with
    S(c) = 24 + (8·h(c) − 50 kW)·R_room: its GPUs settle at the slowdown temperature, not above it."""
    r = 0.11
    res = run(probe("cap", r_air=r))
    rho = R_ROOM / 1000.0  # °C per W
    c2 = (89.0 - SUPPLY - (N_NODES * NON_GPU_W - 2 * UNIT_KW * 1000.0) * rho) / (N_NODES * GPUS * rho + r)
    c1 = (budget_w(2) / N_NODES - NON_GPU_W) / GPUS
    assert c2 < c1
    resp = res.tables["cooling_response"]
    assert resp.action.astype(str).tolist() == ["cap"] and resp.cap_w.iloc[0] == pytest.approx(c2, rel=1e-12)
    s_c = SUPPLY + (N_NODES * node_heat_w(c2) - 2 * UNIT_KW * 1000.0) * rho
    assert s_c + c2 * r == pytest.approx(89.0, abs=1e-9)
    # the room that cap makes, on the timeline: the zone's target supply once capped
    tl = res.tables["cooling_timeline"]
    after = tl[(tl.unit == "zone") & (tl.time_h >= T_FAIL + 1.0)]
    assert after.target_c.iloc[-1] == pytest.approx(s_c, abs=1e-9)


def test_margin_to_the_set_point_keeps_heat_within_capacity() -> None:
    """A margin of max_inlet_c − supply_c: the budget is the CRAH capacity left (50 kW), and the zone's
    heat stays within it after the response."""
    res = run(probe("cap", margin_c=MAX_INLET - SUPPLY))
    resp = res.tables["cooling_response"]
    assert resp.budget_kw.iloc[0] == pytest.approx(2 * UNIT_KW, rel=1e-12)
    tl = res.tables["cooling_timeline"]
    after = tl[(tl.unit == "zone") & (tl.time_h >= T_FAIL + 1.0)]
    assert (after.load_kw <= 2 * UNIT_KW * (1 + 1e-9)).all()


def test_drain_policy_drains_the_fewest_nodes() -> None:
    """Policy drain: the operator keeps the most nodes whose full-load heat fits the budget (⌊72.5 / 10.2⌋ =
    7) and whose room leaves the hottest GPU at full power below slowdown (24 + 700 × 0.09 = 87 °C: a 2 °C
    rise, (50 + 2 / 0.4) kW / 10.2 kW: 5), and drains the rest, tripped nodes first."""
    res = run(probe("drain"))
    full = node_heat_w(TDP_W)
    rise_c = 89.0 - SUPPLY - TDP_W * 0.09
    keep = min(int(budget_w(2) // full), int((2 * UNIT_KW + rise_c / R_ROOM) * 1000.0 // full))
    assert keep == 5
    resp = res.tables["cooling_response"]
    assert resp.action.astype(str).tolist() == ["drain"] and int(resp.drained.iloc[0]) == N_NODES - keep
    # rack 0 came back before the response (as with policy none); of rack 1, tripped at the response, the
    # first three in node order are drained to the horizon, the last comes back
    trips = res.tables["thermal_trips"]
    iv = res.tables["node_intervals"]
    down = iv[iv.state == "down"]
    assert sorted(down[down.end_h >= 200.0].node.tolist()) == [4, 5, 6]
    assert res.metrics["response.drained_node_hours"] == pytest.approx((N_NODES - keep) * (200.0 - T_FAIL - 1.0),
                                                                       rel=1e-9)
    assert int(trips.end_h.isna().sum()) == 0  # tripped, then drained: its trip ended, the drain holds it
    # drained node-hours are a cooling loss in the goodput buckets, not a failure
    assert res.metrics["goodput.mechanism.failure.other"] == 0.0
    assert res.metrics["goodput.mechanism.thermal_trip"] > 0.0
    # the room with the five nodes left: at most the 2 °C rise the hottest GPU allows
    tl = res.tables["cooling_timeline"]
    after = tl[(tl.unit == "zone") & (tl.time_h >= T_FAIL + 1.0)]
    assert (after.target_c <= SUPPLY + rise_c + 1e-9).all()


def test_cap_slows_the_job_between_uncapped_and_tripped() -> None:
    """Coupling (bus: IT power cap + NODE_SPEED): the capped job runs at ((c − P_idle)/(P_d − P_idle))^α of
    full speed, so its goodput lies below the healthy hall's and above policy none's (whose job stops when
    nodes stay tripped)."""
    healthy = run(probe("cap", failed=0))
    capped = run(probe("cap"))
    tripped = run(probe("none"))
    g_h, g_c, g_t = (r.metrics["goodput"] for r in (healthy, capped, tripped))
    assert g_t < g_c < g_h
    c = (budget_w(2) / N_NODES - NON_GPU_W) / GPUS
    speed = ((c - IDLE_W) / (TDP_W - IDLE_W)) ** ALPHA
    assert 0.5 < speed < 1.0
    # throttling of the capped run goes to the power-cap bucket (the operator's cap is a power cap)
    assert capped.metrics["goodput.mechanism.power_cap"] > 0.0
    # the cap's speed, seen by the job: after its restart it makes progress at that speed. Before the
    # failure it ran at full speed (87 °C); between the failure and the trip the room heated and the GPUs
    # throttled, which costs at most that half hour of progress
    job = capped.tables["jobs"].iloc[0]
    t_trip = float(capped.tables["thermal_trips"].start_h.min())
    after = job.run_h - t_trip  # running hours after the trip (the job's run_h counts its running time)
    made_after_hi = job.made_h - T_FAIL  # progress after the trip if it made 1 h per hour up to the failure
    made_after_lo = job.made_h - t_trip
    assert made_after_lo / after <= speed * (1 + 1e-9) <= made_after_hi / after
    assert made_after_lo / after == pytest.approx(speed, abs=(t_trip - T_FAIL) / after)


def test_capped_hall_equals_the_direct_path() -> None:
    """The bundled air hall with its heterogeneity defaults (per-GPU units, silent crossings) and three CRAH
    units of a zone lost: the operator's caps, made mid-run as a second speed source, give the same results
    on the deferred/silent paths as with every node traced (every change direct)."""
    from pathlib import Path

    from test_thermal import assert_same_results, lazy_and_direct

    scen = Path(__file__).resolve().parent.parent / "scenarios"
    sets = ["horizon_days=12", "cooling.inject=[{part: crah, index: 0, at_h: 100}, {part: crah, index: 1, at_h: 100},"
            " {part: crah, index: 2, at_h: 100}]", "cooling.air.zones=2"]
    lazy, direct = lazy_and_direct(scen / "air.yaml", sets)
    resp = lazy.tables["cooling_response"]
    assert (resp.action.astype(str) == "cap").any()
    assert lazy.metrics["response.capped_node_hours"] > 0
    assert_same_results(lazy, direct)
    pd.testing.assert_frame_equal(resp, direct.tables["cooling_response"], check_exact=False, rtol=1e-9, atol=1e-9)


def test_bad_policy_is_a_one_line_error_exit_2(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    import yaml

    from twin.cli import main

    f = tmp_path / "probe.yaml"
    f.write_text(yaml.safe_dump(probe("cap", hours=24.0)))
    rc = main(["run", str(f), "--results", str(tmp_path / "out"), "--quiet", "--set", "cooling.response.policy=shed"])
    err = capsys.readouterr().err
    assert rc == 2
    assert "cooling.response.policy" in err and "Traceback" not in err
    rc = main(["run", str(f), "--results", str(tmp_path / "out2"), "--quiet", "--set",
               "cooling.liquid.leak.damage.probability=0.5"])  # an air hall has no liquid plant
    assert rc == 2 and "Traceback" not in capsys.readouterr().err


def test_cap_follows_the_hourly_derating() -> None:
    """A hot site (30 ± 6 °C daily, design ambient 25 °C, 3 %/°C derating): the zone's capacity changes hour
    by hour, and the operator's cap with it; after the first response the zone's heat never exceeds the
    budget of the hour (capacity of that hour + the room's allowance), and the cap is lower on afternoons."""
    doc = probe("cap", hours=72.0)
    air = doc["cooling"]["air"]
    air["design_ambient_c"], air["derate_per_c"] = 25.0, 0.03
    doc["cooling"]["ambient"] = {"mean_c": 30.0, "seasonal_amplitude_c": 0.0, "diurnal_amplitude_c": 6.0}
    res = run(doc)
    resp = res.tables["cooling_response"]
    caps = resp[resp.action.astype(str) == "cap"]
    assert len(caps) > 24 and caps.cap_w.nunique() > 5  # re-planned as the derating moved
    allowance_kw = (MAX_INLET - 2.0 - SUPPLY) / R_ROOM
    assert np.allclose(caps.budget_kw, caps.capacity_kw + allowance_kw, rtol=1e-12)
    # the cap solves n·h(c) = budget (or the hottest-GPU rule binds below it)
    assert (N_NODES * (NON_GPU_W + GPUS * caps.cap_w) <= caps.budget_kw * 1000.0 * (1 + 1e-9)).all()
    hot = caps[(caps.time_h % 24 >= 13) & (caps.time_h % 24 <= 17)]
    cool = caps[(caps.time_h % 24 <= 5)]
    assert len(hot) and len(cool) and hot.cap_w.mean() < cool.cap_w.mean()
    tl = res.tables["cooling_timeline"]
    z = tl[(tl.unit == "zone") & (tl.time_h >= float(caps.time_h.iloc[0]))].copy()
    # the budget in force at each timeline row: the last plan's, at or before it
    i = np.searchsorted(caps.time_h.to_numpy(), z.time_h.to_numpy(), side="right") - 1
    assert (z.load_kw.to_numpy() <= caps.budget_kw.to_numpy()[i] * (1 + 1e-9)).all()
