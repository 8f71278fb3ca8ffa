"""Thermal and cooling model (model.md §3, §4; issue 4).

The reference computations in these tests are written here, from the equations, and never call the
simulator's closed-form functions (``twin.physics.thermal``): an independent ``solve_ivp`` integration
of the same ODEs, hand-chained exponentials, and hand-summed energy.
"""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy.integrate import solve_ivp
from scipy.optimize import brentq

from twin.cli import main as cli_main
from twin.physics import thermal as phys
from twin.scenario.loader import load_dict, load_scenario
from twin.sim import ReplicationResult, run_replication
from twin.validation.framework import IDENTICAL_GPU_SETS, identical_gpus

SCEN = Path(__file__).resolve().parent.parent / "scenarios"
NEVER = {"dist": "fixed", "value_h": 1.0e9}
FAN = {"count": 6, "required": 5, "min_to_run": 1, "effect": "redundant", "failure": NEVER,
       "repair": {"hot_swap": True, "time": {"dist": "fixed", "value_h": 0.25}}}


def make_doc(name: str, hours: float, cooling: dict[str, Any], racks: int = 1, npr: int = 1,
             parts: dict[str, Any] | None = None, jobs: list[dict[str, Any]] | None = None, crews: int = 3,
             restart: dict[str, Any] | None = None) -> dict[str, Any]:
    wl: dict[str, Any] = {"jobs": jobs or []}
    if restart is not None:
        wl["restart"] = restart
    return {
        "name": name, "seed": 7, "horizon_days": hours / 24.0,
        "cluster": {"racks": racks, "nodes_per_rack": npr, "node": {"gpus": 8, "parts": parts or {}}},
        "maintenance": {"detection": {"dist": "fixed", "value_h": 0.25},
                        "crews": {"crew": {"count": crews, "shift": "24x7"}}},
        "workload": wl,
        "cooling": identical_gpus(cooling),  # the closed forms here are one GPU's at a known inlet
    }


def run_doc(doc: dict[str, Any]) -> ReplicationResult:
    return run_replication(load_dict(doc).scenario)


def trace_temperature(trace: pd.DataFrame, node: int, t_h: np.ndarray) -> np.ndarray:
    """The simulator's GPU temperature at times ``t_h`` from its recorded state: between two recorded
    updates the response is first order from (time, temp) toward tss with time constant tau."""
    r = trace[(trace.node == node) & (trace.gpu == 0)].sort_values("time_h", kind="stable")
    r = r.groupby("time_h", as_index=False).last()  # the state after the last update at that time
    t = r["time_h"].to_numpy()
    k = np.searchsorted(t, t_h, side="right") - 1
    assert (k >= 0).all()
    T0, tss, tau = r["temp_c"].to_numpy()[k], r["tss_c"].to_numpy()[k], r["tau_s"].to_numpy()[k]
    return tss + (T0 - tss) * np.exp(-(t_h - t[k]) * 3600.0 / tau)


def speed_switches(trace: pd.DataFrame, node: int) -> tuple[list[float], list[float]]:
    """Times at which the traced GPU's speed drops below 1 (throttling engages) and returns to 1."""
    r = trace[(trace.node == node) & (trace.gpu == 0)].sort_values("time_h", kind="stable")
    r = r.groupby("time_h", as_index=False).last()
    slow = (r["speed"] < 1.0).to_numpy()
    t = r["time_h"].to_numpy()
    on = [float(t[i]) for i in range(1, len(t)) if slow[i] and not slow[i - 1]]
    off = [float(t[i]) for i in range(1, len(t)) if not slow[i] and slow[i - 1]]
    return on, off


# ======================================================================================================
# 1. Independent reference: solve_ivp on the same ODEs through load steps, fan failures, a CRAH loss
#    and its repair.
# ======================================================================================================
REF = dict(supply=24.0, tau_room_s=15 * 60.0, r_room=1.5, crah_kw=6.0, r_air=0.09, C=400.0, idle=100.0, tdp=700.0,
           pmin=200.0, slow=89.0, non_gpu=4600.0, step=0.05)


def reference_scenario() -> dict[str, Any]:
    c = {
        "type": "air",
        "air": {"zones": 1, "crah": {"count": 2, "required": 1, "capacity_kw": REF["crah_kw"], "failure": NEVER,
                                     "repair": {"time": {"dist": "fixed", "value_h": 1.0}}},
                "supply_c": REF["supply"], "room_tau_min": 15, "r_room_c_per_kw": REF["r_room"],
                "inlet_step_c": REF["step"], "fan_part": "fan", "design_ambient_c": 60},
        "gpu": {"r_air_c_per_w": REF["r_air"], "c_j_per_c": REF["C"]},
        "inject": [{"part": "crah", "index": 0, "at_h": 2.0}, {"part": "fan", "index": 0, "at_h": 2.5},
                   {"part": "fan", "index": 1, "at_h": 2.6}],
        "trace": {"nodes": [0], "from_h": 0, "to_h": 100},
    }
    jobs = [{"name": "first", "gpus": 8, "work_h": 1.0, "submit_h": 0.0},
            {"name": "second", "gpus": 8, "work_h": 100.0, "submit_h": 1.5}]
    return make_doc("reference", 4.5, c, parts={"fan": FAN}, jobs=jobs)


def reference_solution() -> tuple[Any, list[float], list[float], dict[float, tuple[float, float]]]:
    """Integrate room supply S and GPU temperature T with solve_ivp, switching the control mode at
    events. Returns (piecewise dense solutions, engage times, release times, and for each crossing the
    window of times in which its crossing function lies within ±step/2 of zero)."""
    R0 = REF["r_air"]
    # the scenario's discrete changes, hours: (time, util, healthy CRAH capacity kW, R)
    #   job 'first' 0-1 h; 'second' from 1.5 h; CRAH 0 fails 2.0, back 2.0 + 0.25 + 1.0 = 3.25;
    #   fan 0 fails 2.5 (5 of 6 left = required: no change), fan 1 at 2.6 (4 left: R × 5/4);
    #   fan 0 back at 2.5 + 0.25 + 0.25 = 3.0 (5 left: R nominal); fan 1 back at 3.1.
    knots = [0.0, 1.0, 1.5, 2.0, 2.6, 3.0, 3.25, 4.5]

    def params(t_h: float) -> tuple[float, float, float]:
        util = 1.0 if (t_h < 1.0 or t_h >= 1.5) else 0.0
        cap = REF["crah_kw"] * (1 if 2.0 <= t_h < 3.25 else 2)
        R = R0 * (5 / 4 if 2.6 <= t_h < 3.0 else 1.0)
        return util, cap, R

    S, T = REF["supply"], REF["supply"] + REF["idle"] * R0
    engaged = False
    pieces = []
    engage_t: list[float] = []
    release_t: list[float] = []
    windows: dict[float, tuple[float, float]] = {}
    half = REF["step"] / 2
    for a, b in zip(knots[:-1], knots[1:]):
        util, cap, R = params(0.5 * (a + b))
        pd_w = REF["idle"] + (REF["tdp"] - REF["idle"]) * util
        q_kw = (REF["non_gpu"] + 8 * pd_w) / 1000.0
        s_tgt = REF["supply"] + max(0.0, q_kw - cap) * REF["r_room"]
        t = a * 3600.0
        while t < b * 3600.0 - 1e-9:
            if engaged and S + pd_w * R <= REF["slow"]:
                engaged = False
            if not engaged and T >= REF["slow"] - 1e-9 and S + pd_w * R > REF["slow"]:
                engaged = True

            def rhs(_t: float, y: np.ndarray, eng: bool = engaged) -> list[float]:
                s, temp = y
                p = max(REF["pmin"], min(pd_w, (REF["slow"] - s) / R)) if eng else pd_w
                return [(s_tgt - s) / REF["tau_room_s"], (p - (temp - s) / R) / REF["C"]]

            def hit_slow(_t: float, y: np.ndarray) -> float:
                return y[1] - REF["slow"]

            def release(_t: float, y: np.ndarray) -> float:
                return y[0] + pd_w * R - REF["slow"]

            hit_slow.terminal, hit_slow.direction = True, 1  # type: ignore[attr-defined]
            release.terminal, release.direction = True, -1  # type: ignore[attr-defined]
            ev = release if engaged else hit_slow
            sol = solve_ivp(rhs, (t, b * 3600.0), [S, T], method="DOP853", rtol=1e-11, atol=1e-11,
                            events=[ev], dense_output=True)
            pieces.append((t, sol.t[-1], sol.sol))
            S, T = sol.y[0, -1], sol.y[1, -1]
            if sol.status == 1:
                te = float(sol.t_events[0][0])
                # the crossing function g(t) near te, continued past te in the same mode (free for an
                # engage: the GPU would keep heating; the room's supply does not depend on the mode)
                cont = solve_ivp(rhs, (te, te + 1800.0), sol.y[:, -1], method="DOP853", rtol=1e-11,
                                 atol=1e-11, dense_output=True)
                if engaged:
                    def g(x: float) -> float:
                        y = sol.sol(x) if x <= te else cont.sol(x)
                        return float(y[0] + pd_w * R - REF["slow"])
                else:
                    def g(x: float) -> float:
                        y = sol.sol(x) if x <= te else cont.sol(x)
                        return float(y[1] - REF["slow"])
                sign = -1.0 if engaged else 1.0  # g falls through 0 at a release, rises at an engage
                lo = brentq(lambda x: g(x) + sign * half, t, te)
                hi = brentq(lambda x: g(x) - sign * half, te, te + 1800.0)
                assert a * 3600.0 < lo and hi < b * 3600.0  # the window lies inside this segment
                windows[te / 3600.0] = (lo / 3600.0, hi / 3600.0)
                if engaged:
                    release_t.append(te / 3600.0)
                    engaged = False
                else:
                    engage_t.append(te / 3600.0)
                    engaged = True
                    T = REF["slow"]
            t = float(sol.t[-1])
    return pieces, engage_t, release_t, windows


def test_reference_solve_ivp_agrees_with_simulator() -> None:
    res = run_doc(reference_scenario())
    tr = res.tables["thermal_trace"]
    pieces, engage_ref, release_ref, windows = reference_solution()
    # temperatures on a 5-second grid
    t_grid, T_ref = [], []
    for a, b, f in pieces:
        ts = np.arange(math.ceil(a / 5.0) * 5.0, b, 5.0)
        if len(ts):
            t_grid.append(ts / 3600.0)
            T_ref.append(f(ts)[1])
    tg = np.concatenate(t_grid)
    Tr = np.concatenate(T_ref)
    Ts = trace_temperature(tr, 0, tg)
    # the simulator holds the moving supply on a grid of inlet_step_c, never more than half a step
    # from the true supply; the GPU filters its inlet with unit gain, so |ΔT| <= step/2
    bound = REF["step"] / 2 + 1e-6
    assert np.max(np.abs(Ts - Tr)) <= bound, np.max(np.abs(Ts - Tr))
    assert Tr.max() > REF["slow"] - 1e-6  # the scenario does reach the slowdown temperature
    # the crossings: one engage (room heating after the CRAH loss) and one release (room cooling)
    on, off = speed_switches(tr, 0)
    assert len(engage_ref) == 1 and len(release_ref) == 1
    assert len(on) == 1 and len(off) == 1
    # the simulator's crossing function differs from the reference's by at most step/2, so its crossing
    # lies where the reference's is within ±step/2 of zero
    for sim_t, ref_t in ((on[0], engage_ref[0]), (off[0], release_ref[0])):
        lo, hi = windows[ref_t]
        assert lo - 1e-9 <= sim_t <= hi + 1e-9, (sim_t, ref_t, lo, hi)
        assert hi - lo < 0.01  # and that window is narrow (tens of seconds)
    assert 2.0 < engage_ref[0] < 2.6 and 3.25 < release_ref[0] < 4.5


# ======================================================================================================
# 2. End-to-end coupling: a CDU failure at a known time under a known job.
# ======================================================================================================
def test_cdu_failure_progress_lost_equals_hand_computation() -> None:
    t_f = 3.3
    c = {"type": "liquid",
         "liquid": {"loops": 1, "supply_c": 35,
                    "cdu": {"count": 1, "required": 1, "failure": NEVER,
                            "repair": {"time": {"dist": "fixed", "value_h": 1.0}},
                            "pumps": {"count": 1, "required": 1, "failure": NEVER}},
                    "leak": None},
         "node": {"reboot_h": 0.25},
         "inject": [{"part": "cdu", "index": 0, "at_h": t_f}]}
    job = {"name": "train", "gpus": 8, "work_h": 100.0, "submit_h": 0.0,
           "checkpoint": {"interval_h": 1.0, "write_h": 0.02, "mode": "sync"}}
    restart = {"detection_h": 0.05, "reschedule_h": 0.1, "read_h": 0.03, "warmup_h": 0.1}
    res = run_doc(make_doc("cdu-coupling", 6.0, c, jobs=[job], restart=restart))

    # by hand (model.md §3): cold plate R 0.04 °C/W, no-flow R 0.35, C 400 J/°C, 35 °C coolant
    tau_cp, tau_nf = 0.04 * 400, 0.35 * 400
    T = 35 + 100 * 0.04  # idle steady state at t = 0
    # the job computes 0-1.0, checkpoints 1.0-1.02, computes 1.02-2.02, ... (saves 3.0 at 3.04)
    schedule = [(0.0, 1.0, 700), (1.0, 1.02, 100), (1.02, 2.02, 700), (2.02, 2.04, 100), (2.04, 3.04, 700),
                (3.04, 3.06, 100), (3.06, t_f, 700)]
    for a, b, p in schedule:
        tss = 35 + p * 0.04
        T = tss + (T - tss) * math.exp(-(b - a) * 3600 / tau_cp)
    # flow lost: at 700 W it would settle at 35 + 700·0.35 = 280 °C; it reaches 89 °C after t_s
    t_s = tau_nf * math.log((T - 280.0) / (89.0 - 280.0))
    # then capped: (89 − 35)/0.35 = 154 W < P_min, so 200 W; speed ((200 − 100)/(700 − 100))^0.5
    speed = math.sqrt(100.0 / 600.0)
    # at 200 W it settles at 35 + 70 = 105 °C > 92: the node trips after t_2 more seconds
    t_2 = tau_nf * math.log((89.0 - 105.0) / (92.0 - 105.0))
    t_trip = t_f + (t_s + t_2) / 3600.0
    lost = (t_f - 3.06) + t_s / 3600.0 + speed * t_2 / 3600.0
    back = t_f + 0.25 + 1.0 + 0.25  # detection, CDU repair, reboot
    kept = 3.0 + (6.0 - (back + 0.05 + 0.1 + 0.03 + 0.1))

    jobs = res.tables["jobs"]
    intr = jobs[jobs.record == "interruption"]
    assert len(intr) == 1
    row = intr.iloc[0]
    assert row.cause == "thermal_trip"
    assert abs(row.time_h - t_trip) < 1e-9
    assert abs(row.lost_h - lost) < 1e-9
    trips = res.tables["thermal_trips"]
    assert list(trips.reason) == ["gpu_shutdown"]
    assert abs(trips.start_h.iloc[0] - t_trip) < 1e-9 and abs(trips.end_h.iloc[0] - back) < 1e-9
    j = jobs[jobs.record == "job"].iloc[0]
    assert abs(j.kept_h - kept) < 1e-9
    assert abs(res.metrics["thermal.throttled_gpu_hours"] - 8 * t_2 / 3600.0) < 1e-9
    assert abs(res.metrics["thermal.speed_loss_gpu_hours"] - 8 * (1 - speed) * t_2 / 3600.0) < 1e-9


# ======================================================================================================
# 3. Healthy cooling never throttles; less capacity throttles, none trips, at the predicted times.
# ======================================================================================================
def _hall(inject: list[dict[str, Any]], hours: float = 20.0) -> dict[str, Any]:
    """2 racks × 4 nodes in one zone of four 30 kW CRAH units (3 required: 90 kW ≥ 8 × 10.2 kW), all busy."""
    c = {"type": "air",
         "air": {"zones": 1, "crah": {"count": 4, "required": 3, "capacity_kw": 30, "failure": NEVER},
                 "supply_c": 24, "room_tau_min": 15, "inlet_step_c": 0.05, "fan_part": None,
                 "design_ambient_c": 60},
         "gpu": {"r_air_c_per_w": 0.09},
         "inject": inject, "trace": {"nodes": [0], "from_h": 0, "to_h": 1000}}
    jobs = [{"name": "all", "gpus": 64, "work_h": 1e6, "submit_h": 0.0}]
    return make_doc("hall", hours, c, racks=2, npr=4, jobs=jobs)


def test_healthy_full_load_never_throttles() -> None:
    res = run_doc(_hall([], hours=72.0))
    m = res.metrics
    assert m["thermal.throttled_gpu_hours"] == 0.0 and m["thermal.trips"] == 0.0
    assert m["thermal.mean_speed"] == 1.0
    # 24 °C + 700 W × 0.09 °C/W = 87 °C at steady full load, below the 89 °C slowdown
    assert abs(m["thermal.gpu_temp_max_c"] - 87.0) < 1e-9
    # every GPU-hour in the 87 °C bin: its middle (87.5) would be hotter than any GPU ever was
    for q in (50, 95, 99):
        assert m[f"thermal.gpu_temp_p{q}_c"] == m["thermal.gpu_temp_max_c"]


def test_lost_capacity_throttles_at_predicted_time() -> None:
    t0 = 10.0
    res = run_doc(_hall([{"part": "crah", "index": 0, "at_h": t0}, {"part": "crah", "index": 1, "at_h": t0}]))
    # two of four units left: 60 kW for 81.6 kW; R_room = 2 °C/min × 15 min / 90 kW (default)
    r_room = 2.0 * 15 / 90.0
    s_inf = 24 + (81.6 - 60.0) * r_room
    tau_r, tau_g = 15 * 60.0, 0.09 * 400
    T0, D = 87.0, 24 - s_inf  # GPU at its steady state, supply starts D below its new target

    def gpu(t: float) -> float:  # exact response to a first-order inlet (written here, from the ODE)
        return (s_inf + 63.0) + (T0 - s_inf - 63.0) * math.exp(-t / tau_g) + D * tau_r / (tau_r - tau_g) * (
            math.exp(-t / tau_r) - math.exp(-t / tau_g))

    t_x = brentq(lambda t: gpu(t) - 89.0, 0.0, 3600.0)
    on, off = speed_switches(res.tables["thermal_trace"], 0)
    # throttled from the crossing until the units are back (10 + 0.25 detection + 4 h repair) and the
    # room has cooled again
    assert len(on) == 1 and len(off) == 1 and off[0] > t0 + 4.25
    # quantised inlet (step 0.05 °C): the crossing lies where the exact response is within ±0.025 °C of 89
    lo = brentq(lambda t: gpu(t) - 89.0 + 0.025, 0.0, t_x)
    hi = brentq(lambda t: gpu(t) - 89.0 - 0.025, t_x, 7200.0)
    assert t0 + lo / 3600 - 1e-9 <= on[0] <= t0 + hi / 3600 + 1e-9
    assert res.metrics["thermal.trips"] == 0.0
    assert res.metrics["thermal.throttled_gpu_hours"] > 0.0
    # capped at steady state: P = (89 − S∞)/R, speed ((P − 100)/600)^0.5
    p_cap = (89.0 - s_inf) / 0.09
    tr = res.tables["thermal_trace"].query("node == 0 and time_h < @t0 + 4.25")
    assert abs(tr.speed.iloc[-1] - math.sqrt((p_cap - 100) / 600)) < 0.01  # within one inlet step of S∞


def test_lost_all_cooling_trips_on_inlet_at_predicted_time() -> None:
    t0 = 10.0
    doc = _hall([{"part": "crah", "index": i, "at_h": t0} for i in range(4)])
    doc["cooling"]["response"] = {"policy": "none"}  # trips and restarts alone (tests/test_response.py: with one)
    res = run_doc(doc)
    r_room = 2.0 * 15 / 90.0
    s_inf = 24 + 81.6 * r_room  # no capacity left: the room heats toward this
    t_trip = t0 + 15.0 * math.log((s_inf - 24.0) / (s_inf - 35.0)) / 60.0  # supply reaches 35 °C
    trips = res.tables["thermal_trips"]
    assert len(trips) == 8 and set(trips.reason) == {"inlet"}
    assert np.allclose(trips.start_h, t_trip, rtol=0, atol=1e-9)
    # three crews repair three units by 10 + 0.25 + 4 h: 90 kW covers all eight nodes, which come back
    # after the 0.25 h reboot
    assert np.allclose(trips.end_h, t0 + 0.25 + 4.0 + 0.25, rtol=0, atol=1e-9)
    # initial heating rate about 2 °C/min at the design load (the R_room default, sources.md)
    assert abs((s_inf - 24.0) / 15.0 * 90.0 / 81.6 - 2.0) < 1e-12


# ======================================================================================================
# 4. Energy: constant load P for T hours gives exactly P·T; cooling and losses summed by hand; PUE ≥ 1.
# ======================================================================================================
@pytest.mark.parametrize("ctype", ["air", "liquid", "hybrid"])
def test_energy_exact_for_constant_load(ctype: str) -> None:
    hours = 240.0
    c: dict[str, Any] = {"type": ctype}
    if ctype != "liquid":
        c["air"] = {"supply_c": 22, "fan_part": None}
    c["ambient"] = {"mean_c": 18, "seasonal_amplitude_c": 9, "diurnal_amplitude_c": 6}
    jobs = [{"name": "all", "gpus": 16, "work_h": 1e6, "submit_h": 0.0}]
    res = run_doc(make_doc("energy", hours, c, racks=1, npr=2, jobs=jobs))
    m = res.metrics
    # server fans (issue 42): the 1,020 W inside the non-GPU load at full load replaced by the fans at 22 °C inlet
    # (flow 15/23 of full); liquid and hybrid nodes keep a quarter of them (residual fans)
    fans_w = (1.0 if ctype == "air" else 0.25) * 1020.0 * (15.0 / 23.0) ** 3
    node_w = 4600 + 8 * 700.0 - 1020.0 + fans_w
    assert m["energy.it_kwh"] == pytest.approx(2 * node_w * hours / 1000.0, rel=1e-12)
    assert m["energy.server_fans_kwh"] == pytest.approx(2 * fans_w * hours / 1000.0, rel=1e-12)
    # by hand: hourly ambient at the hour's midpoint; COP 5 at 25 °C, −0.1 per °C, at least 2
    k = np.arange(int(hours)) + 0.5
    amb = 18 + 9 * np.cos(2 * np.pi * (k / 24 - 196) / 365) + 6 * np.cos(2 * np.pi * ((k % 24) - 15) / 24)
    cop = np.maximum(2.0, 5.0 - 0.1 * (amb - 25.0))
    gpu_w, rest_w = 2 * 8 * 700.0, 2 * (4600.0 - 1020.0 + fans_w)
    f = 0.7  # heat capture (liquid.capture_fraction default): liquid and hybrid put 30 % of node heat on air
    air_heat = {"air": gpu_w + rest_w, "liquid": (1 - f) * (gpu_w + rest_w), "hybrid": (1 - f) * (gpu_w + rest_w)}[ctype]
    liq_heat = {"air": 0.0, "liquid": f * (gpu_w + rest_w), "hybrid": f * (gpu_w + rest_w)}[ctype]
    cool = air_heat * (0.05 + np.where(amb <= 22 - 6, 0.0, 1.0 / cop)) + liq_heat * (
        0.02 + np.where(amb <= 35 - 5, 0.0, 1.0 / cop))
    it = 2 * node_w
    facility = (it / 0.95 + cool) / 0.985
    assert m["energy.cooling_kwh"] == pytest.approx(cool.sum() / 1000.0, rel=1e-12)
    assert m["energy.facility_kwh"] == pytest.approx(facility.sum() / 1000.0, rel=1e-12)
    assert m["pue"] >= 1.0
    assert m["energy.peak_it_kw"] == pytest.approx(it / 1000.0, rel=1e-12)
    daily = res.tables["pue_daily"]
    assert len(daily) == 10 and (daily.pue >= 1.0).all()
    assert daily.it_kwh.sum() == pytest.approx(m["energy.it_kwh"], rel=1e-12)


# ======================================================================================================
# 5. Diurnal ambient on a marginal air design: a daily throughput ripple with a 24 h period.
# ======================================================================================================
def _marginal(diurnal: float) -> dict[str, Any]:
    c = {"type": "air",
         "air": {"zones": 1, "crah": {"count": 2, "required": 2, "capacity_kw": 22, "failure": NEVER},
                 "supply_c": 24, "fan_part": None, "design_ambient_c": 25, "derate_per_c": 0.02},
         "gpu": {"r_air_c_per_w": 0.0925},  # 24 + 700 × 0.0925 = 88.75 °C: 0.25 °C below slowdown
         "ambient": {"mean_c": 22, "seasonal_amplitude_c": 0, "diurnal_amplitude_c": diurnal}}
    jobs = [{"name": "all", "gpus": 32, "work_h": 1e6, "submit_h": 0.0}]
    return make_doc("marginal", 6 * 24.0, c, racks=1, npr=4, jobs=jobs)


def test_diurnal_ambient_gives_daily_throughput_ripple() -> None:
    res = run_doc(_marginal(8.0))
    eff = res.tables["throughput_hourly"]["effective_gpu_hours"].to_numpy()
    days = eff[24:].reshape(-1, 24)  # drop the first day (start-up)
    # periodic with period 24 h: every day repeats the same hourly profile
    assert np.allclose(days, days[0], rtol=0, atol=1e-9)
    ripple = days[0]
    assert ripple.max() == pytest.approx(32.0, abs=1e-12)  # nights: full speed
    assert ripple.min() < 32.0 * (1 - 1e-4)  # afternoons: throttled
    assert 12 <= int(np.argmin(ripple)) <= 19  # around the 15:00 ambient peak
    spec = np.abs(np.fft.rfft(eff[24:] - eff[24:].mean()))
    freqs = np.fft.rfftfreq(len(eff[24:]), d=1.0)
    assert freqs[int(np.argmax(spec))] == pytest.approx(1 / 24.0)
    # control: no diurnal swing, no ripple
    flat = run_doc(_marginal(0.0)).tables["throughput_hourly"]["effective_gpu_hours"].to_numpy()
    assert np.ptp(flat[24:]) == 0.0


# ======================================================================================================
# 6. Invariance: ample cooling, no acceleration: thermal on changes no failure, repair or job table.
# ======================================================================================================
def test_thermal_on_off_invariance_with_ample_cooling() -> None:
    sets = ["horizon_days=45", "cooling.type=air",
            "cooling.air={zones: 2, crah: {count: 3, required: 2, capacity_kw: 2000, failure: {mtbf_h: 300}},"
            " supply_c: 20}",
            "cooling.gpu.r_air_c_per_w=0.05"] + IDENTICAL_GPU_SETS  # (offsets would age the nodes differently)
    on = run_replication(load_scenario(SCEN / "baseline.yaml", sets).scenario)
    off = run_replication(load_scenario(SCEN / "baseline.yaml", sets + ["cooling.thermal=false"]).scenario)
    assert on.metrics["thermal.throttled_gpu_hours"] == 0.0 and on.metrics["thermal.trips"] == 0.0
    assert on.metrics["failures.crah"] > 0  # the cooling units fail and use the crews in both runs
    for name in ("events", "node_intervals", "tickets", "jobs", "parts"):
        pd.testing.assert_frame_equal(on.tables[name], off.tables[name], check_exact=True)


# ======================================================================================================
# 7. Temperature-accelerated ageing: effective age carried across a temperature change.
# ======================================================================================================
def test_accelerated_ageing_carries_effective_age() -> None:
    parts = {"gpu": {"count": 8, "effect": "node_down", "failure": {"dist": "fixed", "value_h": 1000.0},
                     "repair": {"time": {"dist": "fixed", "value_h": 1.0}}}}
    c = {"type": "liquid", "liquid": {"leak": None, "cdu": {"failure": NEVER, "pumps": {"failure": NEVER}}},
         "ageing": {"gpu": {"t_ref_c": 60.0, "doubling_c": 10.0, "temperature": "gpu"}}}
    jobs = [{"name": "j", "gpus": 8, "work_h": 100.0, "submit_h": 0.0}]
    res = run_doc(make_doc("ageing", 4800.0, c, parts=parts, jobs=jobs))
    # busy 0-100 h at 35 + 700 × 0.04 = 63 °C, then idle at 35 + 100 × 0.04 = 39 °C (steady states)
    af_busy, af_idle = 2 ** ((63 - 60) / 10), 2 ** ((39 - 60) / 10)
    t_fail = 100.0 + (1000.0 - af_busy * 100.0) / af_idle
    ev = res.tables["events"]
    fails = ev[(ev.kind == "fail") & ev.path.astype(str).str.endswith(tuple(f"gpu{i}" for i in range(8)))]
    assert len(fails) == 8
    assert np.allclose(fails.time_h, t_fail, rtol=0, atol=1e-6)
    # and without acceleration the drawn life holds
    plain = copy.deepcopy(make_doc("ageing", 4800.0, c, parts=parts, jobs=jobs))
    plain["cooling"]["ageing"] = {}
    plain["cooling"]["heat_ageing"] = {"xfactor": {"enabled": False}}  # no acceleration at all
    ev0 = run_doc(plain).tables["events"]
    f0 = ev0[(ev0.kind == "fail") & (ev0.time_h < 1500.0)]
    assert np.allclose(f0.time_h, 1000.0) and len(f0) == 8


def test_acceleration_physics() -> None:
    assert phys.acceleration_factor(75.0, 60.0, 15.0) == pytest.approx(2.0)
    assert phys.acceleration_factor(45.0, 60.0, 15.0) == pytest.approx(0.5)
    assert phys.accelerated_failure_time_h(10.0, 30.0, 130.0, 2.0) == pytest.approx(60.0)
    assert phys.accelerated_failure_time_h(10.0, 140.0, 130.0, 2.0) == pytest.approx(10.0)


# ======================================================================================================
# 8. Leaks, stress scenarios, figures.
# ======================================================================================================
def test_leak_takes_node_and_neighbour_down_until_repaired() -> None:
    c = {"type": "liquid",
         "liquid": {"cdu": {"failure": NEVER, "pumps": {"failure": NEVER}},
                    "leak": {"failure": {"dist": "fixed", "value_h": 5.0}, "neighbours": 1,
                             "repair": {"time": {"dist": "fixed", "value_h": 2.0}}}},
         "inject": []}
    res = run_doc(make_doc("leak", 12.0, c, racks=1, npr=2))
    iv = res.tables["node_intervals"]
    down = iv[iv.state == "down"]
    assert sorted(down.node.tolist()) == [0, 1]
    assert np.allclose(down.start_h, 5.0) and np.allclose(down.end_h, 5.0 + 0.25 + 2.0)
    assert set(down.cause.astype(str)) == {"leak"}


@pytest.mark.parametrize("name", ["crah-failure", "cdu-failure"])
def test_stress_scenarios_trip_and_recover(name: str, tmp_path: Path) -> None:
    res = run_replication(load_scenario(SCEN / f"{name}.yaml").scenario)
    trips = res.tables["thermal_trips"]
    assert len(trips) > 0 and (trips.start_h >= 200.0).all() and trips.end_h.notna().all()
    reason = {"crah-failure": "inlet", "cdu-failure": "gpu_shutdown"}[name]
    assert set(trips.reason) == {reason}
    from twin.report.thermal_figures import figures

    written = figures(res, tmp_path)
    assert set(written) == {"thermal_week.png", "pue_daily.png", "throughput_ripple.png"}
    assert all((tmp_path / f).stat().st_size > 1000 for f in written)


@pytest.mark.parametrize("name", ["air", "liquid", "hybrid"])
def test_cooling_scenarios_run(name: str, tmp_path: Path) -> None:
    rc = cli_main(["run", str(SCEN / f"{name}.yaml"), "--results", str(tmp_path), "--quiet",
                   "--set", "horizon_days=20"])
    assert rc == 0


@pytest.mark.slow
@pytest.mark.parametrize("name", ["air", "liquid", "hybrid", "crah-failure", "cdu-failure"])
def test_cooling_scenarios_run_full(name: str, tmp_path: Path) -> None:
    assert cli_main(["run", str(SCEN / f"{name}.yaml"), "--results", str(tmp_path), "--quiet"]) == 0


# ======================================================================================================
# 9. Bad input: clean one-line errors naming the file and the field.
# ======================================================================================================
BAD = [
    ({"type": "air", "air": {"supply_c": 95}}, "cooling.air.supply_c"),
    ({"type": "liquid", "liquid": {"supply_c": 93}}, "cooling.liquid.supply_c"),
    ({"type": "air", "gpu": {"r_air_c_per_w": -0.1}}, "cooling.gpu.r_air_c_per_w"),
    ({"type": "liquid", "gpu": {"r_no_flow_c_per_w": -1}}, "cooling.gpu.r_no_flow_c_per_w"),
    ({"type": "air", "gpu": {"c_j_per_c": -400}}, "cooling.gpu.c_j_per_c"),
    ({"type": "air", "gpu": {"c_j_per_c": 0}}, "cooling.gpu.c_j_per_c"),
    ({"type": "air", "air": {"crah": {"count": 4, "required": 5}}}, "cooling.air.crah.required"),
    ({"type": "liquid", "liquid": {"cdu": {"count": 2, "required": 3}}}, "cooling.liquid.cdu.required"),
    ({"type": "hybrid", "liquid": {"cdu": {"pumps": {"count": 1, "required": 2}}}},
     "cooling.liquid.cdu.pumps.required"),
    ({"type": "air", "air": {"fan_part": "blower"}}, "cooling.air.fan_part"),
    ({"type": "air", "gpu": {"slowdown_c": 95}}, "cooling.gpu.shutdown_c"),
    ({"type": "liquid", "liquid": {"capture_fraction": None}, "air": {}}, "cooling.air"),
    ({"type": "immersion"}, "cooling.type"),
]


@pytest.mark.parametrize("cooling,field", BAD)
def test_bad_input_is_a_clean_error(cooling: dict[str, Any], field: str, tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    doc = {"extends": str(SCEN / "baseline.yaml"), "name": "bad", "cooling": cooling}
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(doc))
    rc = cli_main(["run", str(path), "--results", str(tmp_path / "r")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2
    assert len(err) == 1
    assert str(path) in err[0] and f": {field}:" in err[0], err[0]


# ======================================================================================================
# 10. The deferred replay of cool nodes' load changes equals the direct per-event path.
# ======================================================================================================
def lazy_and_direct(path: Path, sets: list[str]) -> tuple[Any, Any]:
    """The same run twice: as usual (cool nodes' load changes logged and replayed in batches), and
    with every node traced for the whole horizon (every load change through the direct path)."""
    lazy = run_replication(load_scenario(path, [*sets, "cooling.trace={nodes: [0]}"]).scenario)
    every = ",".join(str(i) for i in range(128))  # the baseline cluster's nodes
    direct = run_replication(load_scenario(
        path, [*sets, f"cooling.trace={{nodes: [{every}], from_h: 0, to_h: 100000}}"]).scenario)
    return lazy, direct


def assert_same_results(lazy: Any, direct: Any) -> None:
    for k, v in direct.metrics.items():
        if k.startswith(("thermal.", "energy.", "cooling.")) or k in ("pue", "goodput"):
            assert lazy.metrics[k] == pytest.approx(v, rel=1e-9, abs=1e-9), k
    for name in ("gpu_temperature", "throughput_hourly", "thermal_trips", "cooling_timeline", "jobs", "events"):
        pd.testing.assert_frame_equal(lazy.tables[name], direct.tables[name], check_exact=False, rtol=1e-9,
                                      atol=1e-9)


def test_deferred_replay_equals_direct_path() -> None:
    sets = ["horizon_days=12", "cooling.inject=[{part: crah, index: 0, at_h: 100}, {part: crah, index: 1, at_h: 100},"
            " {part: crah, index: 2, at_h: 100}]", "cooling.air.zones=2"]
    lazy, direct = lazy_and_direct(SCEN / "air.yaml", sets)
    assert lazy.metrics["thermal.trips"] > 0  # the CRAH loss makes zone 0 warm part of the time
    assert_same_results(lazy, direct)


def test_ambient_csv_drives_free_cooling_hours(tmp_path: Path) -> None:
    from twin.scenario.cooling import load_ambient_csv

    f = tmp_path / "outdoor.csv"
    f.write_text("hour,temp_c\n" + "".join(f"{h},{10.0 if h % 24 < 12 else 30.0}\n" for h in range(24)))
    values = load_ambient_csv(f)
    assert list(values[:13]) == [10.0] * 12 + [30.0]
    doc = make_doc("csv", 48.0, {"type": "liquid", "ambient": {"csv": {"file": str(f)}}})
    sc = load_dict(doc).scenario
    assert sc.cooling is not None and sc.cooling.ambient.csv is not None
    sc.cooling.ambient.csv.bind(values)  # the loader's job (see twin.scenario.cooling.AmbientCsv)
    res = run_replication(sc)
    # liquid free cooling while outdoor <= 35 - 5 = 30 °C: every hour of this series
    assert res.metrics["energy.free_cooling_hours.liquid"] == pytest.approx(48.0)
    bad = tmp_path / "bad.csv"
    bad.write_text("temp_c\n12\nwarm\n")
    from twin.errors import InputError

    with pytest.raises(InputError, match="row 3"):
        load_ambient_csv(bad)
