"""Quantitative coupling tests (issue 51, item 4): each chain's size against a truth computed here, and
each shown once to fail when the coupling is cut (the mechanism's effect set to zero through a scenario
override): the test's own check, run on the cut model, must reject it.

- a spare stock-out → waiting for the order → node downtime (Palm's theorem, Little's law);
- an evaporative water failure → supply temperature → throttled share → goodput, a static hall;
- the chiller-outage chain's lost GPU-hours, deterministic;
- the throttled share of a static hall of GPUs that differ (a lognormal spread of thermal resistance):
  the share of GPUs whose steady temperature would exceed the slowdown threshold, in closed form.

Rack power and U-space limits are advisories only (docs/guide: "Rack power and space"); nothing is
coupled at run time, so there is no coupling to test.
"""

from __future__ import annotations

import copy
import math
from typing import Any

import numpy as np
import pytest
from scipy import stats

from judging import TEST_CONFIDENCE
from twin.scenario import load_dict
from twin.sim import run_replication
from twin.validation.framework import t_interval
from twin.validation.reliability import base_doc


# ---- spare stock-out → wait for the order → node downtime ----------------------------------------------

PALM_S, PALM_LEAD_H, PALM_FLEET_PER_H, PALM_REPAIR_H = 3, 4.0, 0.5, 0.1


def palm_doc(lead_h: float = PALM_LEAD_H) -> dict[str, Any]:
    """2,000 nodes, one node_down board each (fleet rate 0.5 /h), a fixed 0.1 h repair with ample crews and
    no detection delay, (S − 1, S) spares with S = 3 and a fixed lead time."""
    n = 2000
    d = base_doc("palm-downtime", 2000.0 / 24.0, {"board": {
        "count": 1, "effect": "node_down", "failure": {"dist": "exponential", "mean_h": n / PALM_FLEET_PER_H},
        "repair": {"hot_swap": False, "burn_in_h": 0, "time": {"dist": "fixed", "value_h": PALM_REPAIR_H}}}},
        crews=50, racks=20, nodes_per_rack=100,
        spares={"board": {"stock": PALM_S, "reorder_point": PALM_S - 1, "reorder_qty": 1,
                          "lead_time_days": lead_h / 24.0}})
    d["seed"] = 51
    return d


def palm_downtime_h() -> float:
    """Mean node downtime per failure: repair + mean wait for a spare. Orders outstanding X ~
    Poisson(λL) (Palm); backorders B = (X − S)⁺; by Little's law the mean wait per demand is E[B]/λ."""
    lam_l = PALM_FLEET_PER_H * PALM_LEAD_H
    k = np.arange(PALM_S + 1, 200)
    backorders = float(((k - PALM_S) * stats.poisson.pmf(k, lam_l)).sum())
    return PALM_REPAIR_H + backorders / PALM_FLEET_PER_H


def palm_interval(doc: dict[str, Any], reps: int = 16) -> tuple[float, float, float]:
    """Per replication, the mean downtime (back − fail) of the failures of [L, H − 24 h) (steady state,
    all repaired by the horizon); the t interval of their mean at the suite's level."""
    sc = load_dict(doc).scenario
    H = sc.horizon_h
    means = []
    for rep in range(reps):
        t = run_replication(sc, rep).tables["tickets"]
        t = t[(t.fail_h >= PALM_LEAD_H) & (t.fail_h < H - 24.0)]
        assert bool(t.done.all())
        means.append(float((t.back_h - t.fail_h).mean()))
    return t_interval(np.array(means), TEST_CONFIDENCE)


def test_spare_stockout_downtime_is_palm_and_little() -> None:
    """Reference 0.536 h (0.1 h repair + E[B]/λ = 0.436 h of waiting); within the interval, which
    excludes the wrong models: no wait for spares (0.1 h) and every stock-out waiting the full lead
    time (0.1 + L·P(X ≥ S) = 1.39 h)."""
    want = palm_downtime_h()
    assert want == pytest.approx(0.1 + 0.4359, abs=1e-3)
    m, lo, hi = palm_interval(palm_doc())
    assert lo <= want <= hi, (want, m, lo, hi)
    assert (hi - lo) / 2 < 0.1 * want  # a stated interval: ±10 % of the reference at most
    full_lead = PALM_REPAIR_H + PALM_LEAD_H * float(stats.poisson.sf(PALM_S - 1, PALM_FLEET_PER_H * PALM_LEAD_H))
    for wrong in (PALM_REPAIR_H, full_lead):
        assert not lo <= wrong <= hi, (wrong, lo, hi)


def test_spare_stockout_downtime_check_fails_when_the_wait_is_cut() -> None:
    """Mutation: orders arrive at once (lead time 10⁻⁶ h: no stock-out wait), and the same check rejects
    the model."""
    m, lo, hi = palm_interval(palm_doc(lead_h=1e-6), reps=4)
    assert not lo <= palm_downtime_h() <= hi, (m, lo, hi)
    assert m == pytest.approx(PALM_REPAIR_H, abs=1e-3)


# ---- the throttled share of a static hall of GPUs that differ ----------------------------------------

def static_hall(cooling: dict[str, Any], nodes: int = 256, days: float = 8.0) -> dict[str, Any]:
    """``nodes`` nodes of 8 GPUs in one air zone with ample air units, one training job per node for the
    whole horizon, no failures: a static hall (inlet offsets off; the GPU spread as ``cooling`` sets it)."""
    from twin.validation.framework import identical_gpus

    c = copy.deepcopy(cooling)
    air = c.setdefault("air", {})
    air.update({"zones": 1, "fan_part": None,
                "crah": {"count": 2, "required": 1, "capacity_kw": 1e5, "failure": {"mtbf_h": 1e15}}})
    return {"name": "static-hall", "horizon_days": days, "seed": 7,
            "cluster": {"racks": nodes // 32, "nodes_per_rack": 32, "node": {"gpus": 8, "parts": {}}},
            "workload": {"scheduler": {"policy": "fifo", "hot_spares": 0},
                         "jobs": [{"name": f"j{i}", "gpus": 8, "work_h": 1e5} for i in range(nodes)]},
            "cooling": identical_gpus({"type": "air", **c})}


def run_static(doc: dict[str, Any]) -> tuple[Any, Any, dict[str, float]]:
    """(scenario, the cooling component, metrics) of one replication."""
    from twin.sim import Model

    sc = load_dict(doc).scenario
    m = Model(sc, 0)
    m.run()
    return sc, m.by_section["cooling"], dict(m.result().metrics)


def lognormal_share(inlet_c: float, r_median_c_per_w: float, sigma: float, power_w: float, slowdown_c: float) -> float:
    """Share of GPUs whose steady temperature inlet + R·P exceeds the slowdown, R = R_med·exp(σz):
    P(z > ln((T_slow − T_in)/(R_med·P))/σ) (0 or 1 for identical GPUs)."""
    x = math.log((slowdown_c - inlet_c) / (r_median_c_per_w * power_w))
    if sigma == 0:
        return float(x < 0)
    return float(stats.norm.sf(x / sigma))


def check_throttled_share(sc: Any, th: Any, metrics: dict[str, float], inlet_c: float) -> tuple[float, float, float]:
    """The hall's throttled share (throttled GPU-hours over busy GPU-hours): (share, closed form, the
    binomial half-width of G GPUs at the suite's level). Asserts that it equals the share of the model's
    own R draws over the threshold (1 %: the start-up transient) and that the thermal slowdown's goodput
    loss is the mean over nodes of 1 − the slowest GPU's capped speed (physics.thermal, 2 %)."""
    from twin.physics import thermal as pt

    g, gpu = sc.cooling.gpu, sc.cluster.node.gpu
    P = gpu.train_w
    G = sc.cluster.n_nodes * 8
    share = metrics["thermal.throttled_gpu_hours"] / (G * sc.horizon_h)
    r = g.r_air_c_per_w * th.arrays.rspread
    drawn = float(np.mean(inlet_c + r * P > g.slowdown_c))
    assert share == pytest.approx(drawn, rel=0.01, abs=1e-3), (share, drawn)
    cap = pt.power_cap_w(P, inlet_c, r, g.slowdown_c, gpu.min_w)
    slowest = np.asarray(pt.speed_fraction(cap, P, gpu.idle_w, gpu.speed_alpha)).reshape(-1, 8).min(axis=1)
    loss = metrics.get("goodput.mechanism.thermal_slowdown", 0.0)
    assert loss == pytest.approx(float(1 - slowest.mean()), rel=0.02, abs=1e-4), (loss, 1 - slowest.mean())
    p = lognormal_share(inlet_c, g.r_air_c_per_w, g.r_sigma, P, g.slowdown_c)
    half = float(stats.norm.ppf(0.5 + TEST_CONFIDENCE / 2)) * math.sqrt(max(p * (1 - p), 1e-12) / G)
    return share, p, half


HETERO = {"air": {"supply_c": 22.0}, "gpu": {"r_air_c_per_w": 0.092, "r_sigma": 0.05}}
"""R·P = 64.4 °C at 700 W against 67 °C of headroom: the median GPU runs below 89 °C, about a fifth above."""


def test_throttled_share_of_a_hall_of_gpus_that_differ_is_the_lognormal_tail() -> None:
    """2,048 GPUs at 22 °C, R = 0.092·exp(0.05·z) °C/W, 700 W: the share throttled is
    P(z > ln(67/64.4)/0.05) = 0.214 (closed form), within the binomial interval of 2,048 draws; the
    identical-GPU model (share 0) is far outside it."""
    sc, th, m = run_static(static_hall(HETERO))
    share, p, half = check_throttled_share(sc, th, m, 22.0)
    assert p == pytest.approx(0.2143, abs=1e-3)
    assert abs(share - p) <= half, (share, p, half)
    assert half < 0.05 and share > 4 * half  # a stated interval (±0.04); identical GPUs (0) excluded


def test_throttled_share_check_fails_without_the_spread() -> None:
    """Mutation: identical GPUs (r_sigma 0, the spread's effect set to zero): no GPU throttles and the
    closed-form check of the spread rejects the model."""
    cut = copy.deepcopy(HETERO)
    cut["gpu"]["r_sigma"] = 0.0
    sc, th, m = run_static(static_hall(cut, days=1.0))
    share, _, _ = check_throttled_share(sc, th, m, 22.0)
    p = lognormal_share(22.0, 0.092, 0.05, sc.cluster.node.gpu.train_w, 89.0)
    half = float(stats.norm.ppf(0.5 + TEST_CONFIDENCE / 2)) * math.sqrt(p * (1 - p) / (sc.cluster.n_nodes * 8))
    assert share == 0.0 and abs(share - p) > half


# ---- evaporative water failure → supply → throttled share → goodput ----------------------------------

T_DB, T_WB, EFFECTIVENESS = 32.0, 23.0, 0.85


def evaporative_hall(water_fails: bool) -> dict[str, Any]:
    """The static hall with evaporative units under constant weather (dry-bulb 32 °C, wet-bulb 23 °C),
    R = 0.08·exp(0.05·z) °C/W; the water supply fails at t = 0 and is not repaired within the horizon
    (``water_fails``) or never fails."""
    c: dict[str, Any] = {
        "plant": None,
        "ambient": {"mean_c": T_DB, "seasonal_amplitude_c": 0.0, "diurnal_amplitude_c": 0.0,
                    "wet_bulb": {"depression_mean_c": T_DB - T_WB, "depression_seasonal_amplitude_c": 0.0,
                                 "depression_diurnal_amplitude_c": 0.0}},
        "air": {"supply_c": 22.0, "evaporative": {
            "effectiveness": EFFECTIVENESS, "it_rise_c": 12, "water_failure": {"mtbf_h": 1e15},
            "water_repair": {"time": {"dist": "fixed", "value_h": 1e6}}}},
        "gpu": {"r_air_c_per_w": 0.08, "r_sigma": 0.05},
    }
    if water_fails:
        c["inject"] = [{"part": "water_supply", "index": 0, "at_h": 0.0}]
    return static_hall(c)


def check_evaporative_chain(water_fails: bool) -> tuple[float, float, float]:
    """Run the hall; the supply is the outside dry-bulb when the units run dry, else the pads' outlet
    T_wb + (1 − ε)(T_db − T_wb) (above the 22 °C set point); check the chain from that supply (see
    :func:`check_throttled_share`) and return (share, the dry hall's closed form, half-width)."""
    from twin.physics import evaporative as ev

    sc, th, m = run_static(evaporative_hall(water_fails))
    dry = abs(m["cooling.evaporative.fallback_hours"] - sc.horizon_h) < 1e-9
    assert dry or m["cooling.evaporative.fallback_hours"] == 0.0
    supply = float(ev.supply_c(T_DB, T_WB, EFFECTIVENESS, 22.0, not dry))
    assert supply == pytest.approx(T_DB if dry else T_WB + (1 - EFFECTIVENESS) * (T_DB - T_WB), abs=1e-12)
    share, _, _ = check_throttled_share(sc, th, m, supply)
    p_dry = lognormal_share(T_DB, 0.08, 0.05, sc.cluster.node.gpu.train_w, 89.0)
    G = sc.cluster.n_nodes * 8
    half = float(stats.norm.ppf(0.5 + TEST_CONFIDENCE / 2)) * math.sqrt(p_dry * (1 - p_dry) / G)
    assert dry == water_fails
    return share, p_dry, half


def test_evaporative_water_failure_throttles_the_closed_form_share_and_costs_its_goodput() -> None:
    """Water failed: the units run dry, the supply is 32 °C (the wet pads give 24.35 °C), the share of
    GPUs over 89 °C is P(z > ln(57/56)/0.05) = 0.362 (closed form, binomial interval of 2,048 draws), and
    the goodput lost to thermal slowdown is the slowest GPUs' capped speed per node."""
    share, p, half = check_evaporative_chain(True)
    assert p == pytest.approx(0.3617, abs=1e-3)
    assert abs(share - p) <= half, (share, p, half)
    assert half < 0.05


def test_evaporative_chain_check_fails_when_the_water_failure_has_no_effect() -> None:
    """Mutation: no water failure (the units stay wet, the failure's effect set to zero): the supply is the
    pads' 24.35 °C, hardly any GPU throttles, and the dry hall's closed-form check rejects the model."""
    share, p, half = check_evaporative_chain(False)
    assert share < 0.01 and abs(share - p) > half


# ---- chiller outage → loop → inlet → node trips → lost GPU-hours (deterministic) ----------------------

def chiller_outage_doc(chillers_on_ups: bool) -> dict[str, Any]:
    """plant_transfer's hall (`twin validate`): four nodes in one slack air zone, two chillers off (or on)
    the UPS of the feed that loses utility at 2 h, the generator taking it 10 s later and the chillers
    restarting 30 min after that; a 32-GPU job without checkpoints from t = 0, identical GPUs with a low
    resistance (no throttling: the chain ends at the 35 °C inlet trip)."""
    from twin.validation.framework import identical_gpus
    from twin.validation.plant import transfer_doc

    d = transfer_doc(chillers_on_ups, 2.0, 1.0, 1800.0, 10.0, 0.5, 30.0, 0.5)
    d["seed"] = 1
    d["cooling"] = identical_gpus(d["cooling"])
    d["cooling"]["gpu"]["r_air_c_per_w"] = 0.03
    d["workload"] = {"scheduler": {"policy": "fifo", "hot_spares": 0},
                     "jobs": [{"name": "train", "gpus": 32, "work_h": 1000.0}]}
    return d


def chiller_outage_lost_gpu_h() -> tuple[float, float]:
    """(trip time h, GPU-hours the trip costs the job) by hand: the loop's offset rises as
    x(t) = x_ss·(1 − e^(−t/τ)) from the utility loss, x_ss = Q·τ/(ρc_p·V) with Q the four nodes at their
    training draw; the zone's supply steps to 22 + j·0.5 °C when x crosses (j − ½)·0.5, and the nodes
    trip at the first step reaching the 35 °C inlet limit (j = 26). Without IT heat the loop falls at once,
    so the nodes are back after the reboot (0.25 h). The job loses its progress since t = 0 (no
    checkpoint) and the GPUs the reboot: 32 × (t_trip + reboot)."""
    from twin.validation.plant import WATER_KJ_PER_M3_C

    sc = load_dict(chiller_outage_doc(False)).scenario
    node = sc.cluster.node
    q_kw = 4 * (node.non_gpu_w + node.gpus * node.gpu.train_w) / 1000.0
    tau_s = 30.0 * 60.0
    x_ss = q_kw * tau_s / (WATER_KJ_PER_M3_C * 0.5)
    step = 0.5
    j = math.ceil((sc.cooling.node.max_inlet_c - 22.0) / step)
    t_trip = 2.0 + tau_s * math.log(x_ss / (x_ss - (j - 0.5) * step)) / 3600.0
    assert t_trip < 2.0 + (10.0 + 1800.0) / 3600.0  # before the chillers deliver again
    return t_trip, 32 * (t_trip + sc.cooling.node.reboot_h)


def chiller_outage_run(chillers_on_ups: bool) -> tuple[float, float]:
    """(first trip's start h or inf, GPU-hours the job lost to thermal trips: down + progress)."""
    sc = load_dict(chiller_outage_doc(chillers_on_ups)).scenario
    res = run_replication(sc, 0)
    m = res.metrics
    gpu_h = 32 * sc.horizon_h
    trips = res.tables["thermal_trips"]
    first = float(trips.start_h.min()) if len(trips) else math.inf
    return first, (m.get("goodput.down.thermal_trip", 0.0) + m.get("goodput.lost.thermal_trip", 0.0)) * gpu_h


def test_chiller_outage_chain_costs_the_hand_computed_gpu_hours() -> None:
    """The trip at 2.2258 h (the loop's closed form) and 32 × (2.2258 + 0.25) = 79.2 GPU-hours lost, to
    1e-6; a chain that forgot the progress lost (only the downtime, 8 GPU-hours) is far off."""
    t_trip, lost = chiller_outage_lost_gpu_h()
    assert t_trip == pytest.approx(2.2258, abs=1e-4)
    first, got = chiller_outage_run(False)
    assert first == pytest.approx(t_trip, rel=1e-9)
    assert got == pytest.approx(lost, rel=1e-6), (got, lost)
    assert abs(got - 32 * 0.25) > 10.0


def test_chiller_outage_check_fails_when_the_chillers_ride_through() -> None:
    """Mutation: the chillers on the UPS (the outage's effect on the plant set to zero): no rise, no trip,
    nothing lost, and the hand-computed check rejects the model."""
    _, lost = chiller_outage_lost_gpu_h()
    first, got = chiller_outage_run(True)
    assert first == math.inf and got == 0.0
    assert got != pytest.approx(lost, rel=1e-6)
