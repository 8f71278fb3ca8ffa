"""Tests of the pure-physics layer twin.physics (model.md §3, §5, §6, §9).

Reference sides are computed independently (ODE integration with solve_ivp, generator-matrix
null spaces, textbook sum formulas), never with the closed forms under test.
"""

from __future__ import annotations

import ast
import doctest
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.integrate import solve_ivp
from scipy.linalg import null_space
from scipy.optimize import minimize_scalar
from scipy.stats import binom

from twin.physics import closed_forms as cf
from twin.physics import power, steptime, thermal

PHYSICS_DIR = Path(thermal.__file__).parent

# H100-SXM-class reference numbers (model.md §3) and an illustrative lumped RC.
TDP_W = 700.0
P_MIN_W = 200.0
IDLE_W = 70.0
SLOWDOWN_C = 89.0
SHUTDOWN_C = 92.0
R_C_PER_W = 0.086
C_J_PER_C = 350.0  # tau = 30.1 s


def test_no_simpy_anywhere_in_physics() -> None:
    for path in PHYSICS_DIR.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            assert not any(n.split(".")[0] == "simpy" for n in names), path


# ----------------------------------------------------------------------------- thermal basics


def test_steady_state_and_tau() -> None:
    assert thermal.steady_state_c(700.0, 25.0, 0.086) == pytest.approx(85.2)
    assert thermal.tau_s(0.086, 350.0) == pytest.approx(30.1)
    v = thermal.steady_state_c(np.array([0.0, 100.0]), 20.0, 0.1)
    assert isinstance(v, np.ndarray)
    np.testing.assert_allclose(v, [20.0, 30.0])
    assert isinstance(thermal.steady_state_c(1.0, 2.0, 3.0), float)


def test_temperature_step_response_points() -> None:
    assert thermal.temperature_c(0.0, 30.0, 80.0, 20.0) == pytest.approx(30.0)
    assert thermal.temperature_c(20.0, 30.0, 80.0, 20.0) == pytest.approx(80.0 - 50.0 / math.e)
    assert thermal.temperature_c(1e6, 30.0, 80.0, 20.0) == pytest.approx(80.0)
    # falling
    assert thermal.temperature_c(20.0, 80.0, 30.0, 20.0) == pytest.approx(30.0 + 50.0 / math.e)
    # vectorised over time and over GPUs
    t = np.array([0.0, 10.0, 20.0])
    np.testing.assert_allclose(
        thermal.temperature_c(t, 30.0, 80.0, 20.0), 80.0 - 50.0 * np.exp(-t / 20.0)
    )
    # zero time constant: instantaneous
    assert thermal.temperature_c(0.0, 30.0, 80.0, 0.0) == 30.0
    assert thermal.temperature_c(1.0, 30.0, 80.0, 0.0) == 80.0


def test_crossing_time_rising_falling_and_not_crossed() -> None:
    tau = 30.0
    assert thermal.crossing_time_s(30.0, 90.0, 60.0, tau) == pytest.approx(tau * math.log(2.0))
    assert thermal.crossing_time_s(90.0, 30.0, 60.0, tau) == pytest.approx(tau * math.log(2.0))
    assert thermal.crossing_time_s(30.0, 90.0, 95.0, tau) == math.inf  # beyond steady state
    assert thermal.crossing_time_s(30.0, 90.0, 20.0, tau) == math.inf  # behind start
    assert thermal.crossing_time_s(30.0, 90.0, 90.0, tau) == math.inf  # asymptote only
    assert thermal.crossing_time_s(60.0, 90.0, 60.0, tau) == math.inf  # already there
    v = thermal.crossing_time_s(np.array([30.0, 30.0, 90.0]), np.array([90.0, 50.0, 30.0]), 60.0, tau)
    assert v[0] == pytest.approx(tau * math.log(2.0))
    assert v[1] == math.inf
    assert v[2] == pytest.approx(tau * math.log(2.0))


def _rc_rhs(power_w: float, inlet_c: float):
    def rhs(_t: float, y: np.ndarray) -> np.ndarray:
        return (power_w - (y - inlet_c) / R_C_PER_W) / C_J_PER_C

    return rhs


def test_multistep_profile_matches_solve_ivp() -> None:
    """(a) RC response and crossings of a multi-step load profile vs numerical ODE integration."""
    # (duration s, power W, inlet C): train, checkpoint pause, train in a warmer inlet, idle-ish.
    profile = [(60.0, 700.0, 25.0), (20.0, 200.0, 25.0), (90.0, 700.0, 30.0), (60.0, 300.0, 20.0)]
    thresholds = [60.0, 80.0, 86.0]
    t_start_c = 35.0

    # Reference: solve_ivp per segment (the ODE's right-hand side jumps at each step).
    ref_crossings: list[tuple[float, float]] = []
    ref_samples: list[tuple[float, float]] = []
    y0, t_abs = t_start_c, 0.0
    for dur, p, tin in profile:
        events = []
        for thr in thresholds:
            ev = (lambda thr_: (lambda _t, y: y[0] - thr_))(thr)
            events.append(ev)
        sol = solve_ivp(
            _rc_rhs(p, tin), (0.0, dur), [y0], method="DOP853", rtol=1e-12, atol=1e-12,
            events=events, dense_output=True,
        )
        for thr, times in zip(thresholds, sol.t_events):
            for te in times:
                ref_crossings.append((t_abs + te, thr))
        for ts in np.linspace(0.0, dur, 7):
            ref_samples.append((t_abs + ts, float(sol.sol(ts)[0])))
        y0 = float(sol.y[0, -1])
        t_abs += dur

    # Model: closed forms, one evaluation per segment (event-driven; no time stepping).
    tau = thermal.tau_s(R_C_PER_W, C_J_PER_C)
    got_crossings: list[tuple[float, float]] = []
    got_samples: list[tuple[float, float]] = []
    y0, t_abs = t_start_c, 0.0
    for dur, p, tin in profile:
        tss = thermal.steady_state_c(p, tin, R_C_PER_W)
        tx = thermal.crossing_time_s(y0, tss, np.array(thresholds), tau)
        for thr, t in zip(thresholds, tx):
            if t <= dur:
                got_crossings.append((t_abs + float(t), thr))
        ts = np.linspace(0.0, dur, 7)
        for t, v in zip(ts, thermal.temperature_c(ts, y0, tss, tau)):
            got_samples.append((t_abs + float(t), float(v)))
        y0 = thermal.temperature_c(dur, y0, tss, tau)
        t_abs += dur

    ref_crossings.sort()
    got_crossings.sort()
    assert len(ref_crossings) >= 6  # the profile really does cross thresholds both ways
    assert [c[1] for c in got_crossings] == [c[1] for c in ref_crossings]
    np.testing.assert_allclose(
        [c[0] for c in got_crossings], [c[0] for c in ref_crossings], rtol=0, atol=1e-6
    )
    np.testing.assert_allclose(
        [s[1] for s in got_samples], [s[1] for s in ref_samples], rtol=0, atol=1e-8
    )


def test_power_cap() -> None:
    # steady state at demand below slowdown: no cap
    assert thermal.power_cap_w(700.0, 25.0, R_C_PER_W, SLOWDOWN_C, P_MIN_W) == 700.0
    # hot inlet: cap so that T_ss = slowdown
    cap = thermal.power_cap_w(700.0, 35.0, R_C_PER_W, SLOWDOWN_C, P_MIN_W)
    assert cap == pytest.approx((SLOWDOWN_C - 35.0) / R_C_PER_W)
    assert 35.0 + cap * R_C_PER_W == pytest.approx(SLOWDOWN_C)
    # very hot inlet: floor at P_min
    assert thermal.power_cap_w(700.0, 80.0, R_C_PER_W, SLOWDOWN_C, P_MIN_W) == P_MIN_W
    # never above demand (demand below P_min)
    assert thermal.power_cap_w(150.0, 80.0, R_C_PER_W, SLOWDOWN_C, P_MIN_W) == 150.0
    v = thermal.power_cap_w(700.0, np.array([25.0, 35.0, 80.0]), R_C_PER_W, SLOWDOWN_C, P_MIN_W)
    np.testing.assert_allclose(v, [700.0, 54.0 / R_C_PER_W, P_MIN_W])


def test_speed_fraction() -> None:
    assert thermal.speed_fraction(700.0, 700.0, IDLE_W, 0.5) == 1.0
    assert thermal.speed_fraction(800.0, 700.0, IDLE_W, 0.5) == 1.0
    s = thermal.speed_fraction(385.0, 700.0, IDLE_W, 0.5)
    assert s == pytest.approx(math.sqrt((385.0 - IDLE_W) / (700.0 - IDLE_W)))
    assert thermal.speed_fraction(385.0, 700.0, IDLE_W, 1.0) == pytest.approx(0.5)
    assert thermal.speed_fraction(IDLE_W, 700.0, IDLE_W, 0.5) == 0.0
    assert thermal.speed_fraction(10.0, 700.0, IDLE_W, 0.5) == 0.0
    v = thermal.speed_fraction(np.array([10.0, 385.0, 700.0]), 700.0, IDLE_W, 1.0)
    np.testing.assert_allclose(v, [0.0, 0.5, 1.0])


def test_trips() -> None:
    assert thermal.trips(25.0, R_C_PER_W, P_MIN_W, SHUTDOWN_C) is False
    assert thermal.trips(80.0, R_C_PER_W, P_MIN_W, SHUTDOWN_C) is True
    np.testing.assert_array_equal(
        thermal.trips(np.array([25.0, 74.0, 75.0]), R_C_PER_W, P_MIN_W, SHUTDOWN_C),
        [False, False, True],  # 74 + 17.2 = 91.2; 75 + 17.2 = 92.2
    )


finite = dict(allow_nan=False, allow_infinity=False)


@settings(max_examples=200, deadline=None)
@given(
    t=st.floats(0.0, 1e5, **finite),
    t0=st.floats(-50.0, 150.0, **finite),
    tss=st.floats(-50.0, 150.0, **finite),
    tau=st.floats(1e-3, 1e4, **finite),
)
def test_temperature_stays_between_t0_and_tss(t: float, t0: float, tss: float, tau: float) -> None:
    v = thermal.temperature_c(t, t0, tss, tau)
    lo, hi = min(t0, tss), max(t0, tss)
    assert lo - 1e-9 <= v <= hi + 1e-9


@settings(max_examples=200, deadline=None)
@given(
    cap=st.floats(0.0, 2000.0, **finite),
    demand=st.floats(0.0, 2000.0, **finite),
    idle=st.floats(0.0, 300.0, **finite),
    alpha=st.floats(0.05, 3.0, **finite),
)
def test_speed_fraction_in_unit_interval(cap: float, demand: float, idle: float, alpha: float) -> None:
    s = thermal.speed_fraction(cap, demand, idle, alpha)
    assert 0.0 <= s <= 1.0
    # monotone in the cap
    assert thermal.speed_fraction(cap + 10.0, demand, idle, alpha) >= s


# ----------------------------------------------------------------------------- moving inlet


def _moving_ref(t0, p, r, tg, s0, s_t, tr, t_end, thresholds=(), t_eval=None):
    """solve_ivp of tau_g dT/dt = S(t) + P R - T with the room inlet S(t) as its own ODE state."""

    def rhs(_t, y):
        temp, s = y
        return [(s + p * r - temp) / tg, (s_t - s) / tr]

    events = [(lambda thr_: (lambda _t, y: y[0] - thr_))(thr) for thr in thresholds]
    return solve_ivp(
        rhs, (0.0, t_end), [t0, s0], method="DOP853", rtol=1e-12, atol=1e-12,
        t_eval=t_eval, events=events or None,
    )


MOVING_CASES = [
    # t0, P, R, tau_gpu, S0, S_target, tau_room  (seconds)
    (40.0, 700.0, R_C_PER_W, 30.0, 25.0, 45.0, 600.0),  # room heating, slow room
    (85.0, 200.0, R_C_PER_W, 30.0, 25.0, 60.0, 600.0),  # GPU cools then rises with the room
    (95.0, 700.0, R_C_PER_W, 30.0, 40.0, 22.0, 300.0),  # room recovering: rises, then falls
    (70.0, 200.0, R_C_PER_W, 30.0, 25.0, 70.0, 600.0),  # falls, then rises above T0
    (40.0, 500.0, R_C_PER_W, 60.0, 25.0, 50.0, 20.0),  # room faster than the GPU
    (40.0, 500.0, R_C_PER_W, 45.0, 25.0, 50.0, 45.0),  # equal time constants
    (40.0, 500.0, R_C_PER_W, 45.0, 25.0, 50.0, 45.0 * (1 + 1e-9)),  # nearly equal
    (40.0, 500.0, R_C_PER_W, 45.0, 25.0, 50.0, 45.0 * (1 + 1e-5)),
]


@pytest.mark.parametrize("case", MOVING_CASES)
def test_moving_inlet_solution_matches_solve_ivp(case) -> None:
    """(b) Exact sum-of-two-exponentials solution vs numerical integration."""
    t0, p, r, tg, s0, s_t, tr = case
    t_eval = np.concatenate([np.linspace(0.0, 5 * max(tg, tr), 41), [20 * max(tg, tr), 5e4]])
    sol = _moving_ref(t0, p, r, tg, s0, s_t, tr, t_eval[-1], t_eval=t_eval)
    got = thermal.gpu_temperature_moving_inlet_c(t_eval, t0, p, r, tg, s0, s_t, tr)
    np.testing.assert_allclose(got, sol.y[0], rtol=0, atol=1e-8)
    np.testing.assert_allclose(
        thermal.room_supply_c(t_eval, s0, s_t, tr), sol.y[1], rtol=0, atol=1e-8
    )


def test_moving_inlet_reduces_to_constant_inlet() -> None:
    t = np.linspace(0.0, 300.0, 13)
    a = thermal.gpu_temperature_moving_inlet_c(t, 40.0, 700.0, R_C_PER_W, 30.0, 25.0, 25.0, 600.0)
    b = thermal.temperature_c(t, 40.0, 25.0 + 700.0 * R_C_PER_W, 30.0)
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)


def test_moving_inlet_equal_tau_continuous() -> None:
    t = np.linspace(0.0, 500.0, 51)
    eq = thermal.gpu_temperature_moving_inlet_c(t, 40.0, 500.0, R_C_PER_W, 45.0, 25.0, 50.0, 45.0)
    # Lipschitz in tau_room with no loss of precision across the switch at x = 1e-8
    # (the true sensitivity here is about 6.8 degC per unit relative change of tau_room).
    for eps in (1e-14, 1e-12, 1e-10, 1e-9, 1e-8, 1e-6):
        near = thermal.gpu_temperature_moving_inlet_c(
            t, 40.0, 500.0, R_C_PER_W, 45.0, 25.0, 50.0, 45.0 * (1 + eps)
        )
        np.testing.assert_allclose(near, eq, rtol=0, atol=8.0 * eps + 1e-12)


@pytest.mark.parametrize(
    "case, threshold",
    [
        (MOVING_CASES[0], 75.0),  # monotone rise
        (MOVING_CASES[1], 70.0),  # crossed on the initial fall
        (MOVING_CASES[3], 60.0),  # crossed twice (fall, then rise): first one wanted
        (MOVING_CASES[3], 80.0),  # above T0: crossed only on the late rise
        (MOVING_CASES[2], 97.0),  # crossed twice (rise, then fall with the room)
        (MOVING_CASES[2], 90.0),  # below T0: crossed only on the late fall
        (MOVING_CASES[4], 80.0),
        (MOVING_CASES[5], 80.0),
        (MOVING_CASES[6], 80.0),
    ],
)
def test_moving_inlet_crossing_matches_solve_ivp(case, threshold) -> None:
    t0, p, r, tg, s0, s_t, tr = case
    horizon = 3600.0
    sol = _moving_ref(t0, p, r, tg, s0, s_t, tr, horizon, thresholds=[threshold])
    ref = sol.t_events[0]
    assert len(ref) >= 1
    got = thermal.crossing_time_moving_inlet_s(t0, p, r, tg, s0, s_t, tr, threshold, horizon)
    assert got == pytest.approx(float(ref[0]), abs=1e-6)
    # a horizon that ends before the crossing gives inf
    assert thermal.crossing_time_moving_inlet_s(
        t0, p, r, tg, s0, s_t, tr, threshold, 0.5 * float(ref[0])
    ) == math.inf


def test_moving_inlet_crossing_twice_needs_the_split() -> None:
    """T starts above the threshold and ends above it: only the extremum split finds it."""
    t0, p, r, tg, s0, s_t, tr = MOVING_CASES[3]
    t_end = thermal.gpu_temperature_moving_inlet_c(3600.0, t0, p, r, tg, s0, s_t, tr)
    assert t0 > 60.0 and t_end > 60.0
    got = thermal.crossing_time_moving_inlet_s(t0, p, r, tg, s0, s_t, tr, 60.0, 3600.0)
    assert 0.0 < got < 100.0


def test_moving_inlet_crossing_not_reached_and_vectorised() -> None:
    t0, p, r, tg, s0, s_t, tr = MOVING_CASES[0]  # final steady state 45 + 60.2 = 105.2
    assert thermal.crossing_time_moving_inlet_s(t0, p, r, tg, s0, s_t, tr, 110.0, 1e5) == math.inf
    assert thermal.crossing_time_moving_inlet_s(t0, p, r, tg, s0, s_t, tr, 30.0, 1e5) == math.inf
    v = thermal.crossing_time_moving_inlet_s(t0, p, r, tg, s0, s_t, tr, np.array([75.0, 110.0]), 3600.0)
    assert isinstance(v, np.ndarray) and v.shape == (2,)
    assert np.isfinite(v[0]) and v[1] == math.inf


# ----------------------------------------------------------------------------- power


def test_gpu_power() -> None:
    assert power.gpu_power_w(IDLE_W, TDP_W, 1.0) == TDP_W
    assert power.gpu_power_w(IDLE_W, TDP_W, 0.0) == IDLE_W
    np.testing.assert_allclose(power.gpu_power_w(100.0, 700.0, np.array([0.5, 0.25])), [400.0, 250.0])
    with pytest.raises(ValueError):
        power.gpu_power_w(IDLE_W, TDP_W, 1.2)


def test_node_budget_and_gpu_cap_dgx_feed_loss() -> None:
    # DGX H100 class: 6 x 3.3 kW, split 3/3 over A/B; losing a feed leaves 9.9 kW < 10.2 kW.
    budget = power.node_power_budget_w(3, 3300.0)
    assert budget == pytest.approx(9900.0)
    non_gpu = 10200.0 - 8 * TDP_W  # 4.6 kW of non-GPU load at full demand
    cap = power.gpu_cap_from_budget_w(budget, non_gpu, 8)
    assert cap == pytest.approx((9900.0 - 4600.0) / 8)
    assert cap < TDP_W
    assert power.gpu_cap_from_budget_w(1000.0, 4600.0, 8) == 0.0
    np.testing.assert_allclose(power.node_power_budget_w(np.array([6, 4, 0]), 3300.0), [19800.0, 13200.0, 0.0])


def test_ups() -> None:
    assert power.ups_ride_through_min(1.0, 10.0) == 10.0
    assert power.ups_ride_through_min(0.5, 10.0) == 5.0
    assert power.ups_ride_through_min(1.0, 10.0, 0.5) == 20.0
    assert power.ups_ride_through_min(1.0, 10.0, 0.0) == math.inf
    assert power.ups_soc_after(1.0, 4.0, 10.0, 1.0) == pytest.approx(0.6)
    assert power.ups_soc_after(1.0, 4.0, 10.0, 0.5) == pytest.approx(0.8)
    assert power.ups_soc_after(0.3, 20.0, 10.0, 1.0) == 0.0
    assert power.ups_recharge_soc(0.2, 2.0, 8.0) == pytest.approx(0.45)
    assert power.ups_recharge_soc(0.9, 2.0, 8.0) == 1.0
    # a second outage before the battery is full rides through for less
    soc = power.ups_soc_after(1.0, 6.0, 10.0, 1.0)
    soc = power.ups_recharge_soc(soc, 1.0, 8.0)
    assert power.ups_ride_through_min(soc, 10.0) == pytest.approx(10.0 * (0.4 + 1.0 / 8.0))
    # ride-through and drain agree: draining for the ride-through time empties the battery
    rt = power.ups_ride_through_min(0.7, 12.0, 0.8)
    assert power.ups_soc_after(0.7, rt, 12.0, 0.8) == pytest.approx(0.0, abs=1e-12)


# ----------------------------------------------------------------------------- step time


def test_ring_allreduce() -> None:
    assert steptime.ring_allreduce_s(1, 1e9, 400.0, 1e-5) == 0.0
    assert steptime.ring_allreduce_s(2, 1e9, 400.0, 5e-6) == pytest.approx(8e9 / 400e9 + 2 * 5e-6)
    n = 64
    expected = 2 * 63 / 64 * 8 * 2e9 / (3200.0 * 1e9) + 2 * 63 * 5e-6
    assert steptime.ring_allreduce_s(n, 2e9, 3200.0, 5e-6) == pytest.approx(expected)
    # a quarter of the bandwidth: bandwidth term x4
    v = steptime.ring_allreduce_s(np.array([1, 8]), 1e9, 100.0, 0.0)
    np.testing.assert_allclose(v, [0.0, 2 * 7 / 8 * 8e9 / 100e9])


def test_step_time() -> None:
    assert steptime.step_time_s(1.0, 0.5, 0.9, 1.0) == pytest.approx(1.0)  # fully hidden
    assert steptime.step_time_s(1.0, 2.0, 0.9, 1.0) == pytest.approx(1.0 + 1.1)
    assert steptime.step_time_s(1.0, 2.0, 0.0, 0.5) == pytest.approx(4.0)
    assert steptime.step_time_s(1.0, 0.0, 0.5, 0.0) == math.inf


def test_progress_rate_whole_model_vs_product_of_factors() -> None:
    """(f) t_compute 1, t_comm 0.5 -> 2.0 (25 % bandwidth), overlap 0.9, speed 0.8."""
    t_comp, t_comm_ideal, overlap, speed = 1.0, 0.5, 0.9, 0.8
    t_comm = t_comm_ideal / 0.25
    assert t_comm == 2.0
    whole = steptime.progress_rate(t_comp, t_comm_ideal, t_comm, overlap, speed)
    # by hand: ideal step 1.0; actual t_c = 1.25, exposed = 2.0 - 1.125 = 0.875 -> 2.125
    assert whole == pytest.approx(1.0 / 2.125)
    assert round(whole, 3) == 0.471
    speed_only = steptime.progress_rate(t_comp, t_comm_ideal, t_comm_ideal, overlap, speed)
    bw_only = steptime.progress_rate(t_comp, t_comm_ideal, t_comm, overlap, 1.0)
    product = speed_only * bw_only
    assert speed_only == pytest.approx(0.8)
    assert round(product, 3) == 0.381
    assert steptime.progress_rate(t_comp, t_comm_ideal, t_comm_ideal, overlap, 1.0) == 1.0
    assert steptime.progress_rate(t_comp, t_comm_ideal, t_comm, overlap, 0.0) == 0.0


def test_steptime_docstring_example() -> None:
    res = doctest.testmod(steptime, verbose=False)
    assert res.attempted >= 1 and res.failed == 0


# ----------------------------------------------------------------------------- closed forms


def test_availability_single() -> None:
    assert cf.availability_single(1000.0, 10.0) == pytest.approx(1000.0 / 1010.0)
    np.testing.assert_allclose(cf.availability_single(np.array([9.0, 1.0]), 1.0), [0.9, 0.5])


def test_k_of_n_one_of_two_one_crew() -> None:
    """(c) k_of_n(2, 1, r=1) equals the 1-of-2 one-crew closed form."""
    for lam, mu in [(1e-3, 0.1), (0.5, 1.0), (2.0, 1.0)]:
        assert cf.k_of_n_availability(2, 1, lam, mu, 1) == pytest.approx(
            cf.one_of_two_one_crew(lam, mu), rel=1e-12
        )


def _ctmc_availability(n: int, k: int, lam: float, mu: float, r: int) -> float:
    """Stationary availability from the generator matrix on i = units down (null space of Q^T)."""
    q = np.zeros((n + 1, n + 1))
    for i in range(n + 1):
        if i < n:
            q[i, i + 1] = (n - i) * lam  # every working unit keeps failing, system up or down
        if i > 0:
            q[i, i - 1] = min(i, r) * mu
        q[i, i] = -q[i].sum()
    pi = null_space(q.T)[:, 0]
    pi = pi / pi.sum()
    return float(pi[: n - k + 1].sum())


@pytest.mark.parametrize("crews", [1, 2])
@pytest.mark.parametrize("lam, mu", [(1e-3, 0.05), (0.1, 0.25), (1.0, 0.5)])
def test_k_of_n_vs_ctmc_generator(crews: int, lam: float, mu: float) -> None:
    """(c) 4-out-of-6 against the numerically solved generator matrix."""
    ref = _ctmc_availability(6, 4, lam, mu, crews)
    assert cf.k_of_n_availability(6, 4, lam, mu, crews) == pytest.approx(ref, rel=1e-10, abs=1e-14)


def test_k_of_n_independent_crews_is_binomial() -> None:
    # with a crew per unit the units are independent: down share q = lam/(lam+mu)
    lam, mu, n, k = 0.2, 1.0, 8, 5
    ref = binom.cdf(n - k, n, lam / (lam + mu))
    assert cf.k_of_n_availability(n, k, lam, mu, n) == pytest.approx(ref, rel=1e-12)


def test_k_of_n_edge_cases() -> None:
    assert cf.k_of_n_availability(4, 2, 0.0, 1.0, 1) == 1.0
    # large n in log space stays finite
    a = cf.k_of_n_availability(2000, 1990, 1e-4, 0.1, 3)
    assert 0.0 < a <= 1.0
    with pytest.raises(ValueError):
        cf.k_of_n_availability(3, 4, 0.1, 1.0, 1)
    with pytest.raises(ValueError):
        cf.k_of_n_availability(3, 1, 0.1, 1.0, 0)


def _erlang_c_sum_formula(a: Fraction, c: int) -> Fraction:
    """Textbook Erlang C: (a^c/c!)(c/(c−a)) / (Σ_{k<c} a^k/k! + (a^c/c!)(c/(c−a)))."""
    top = a**c / math.factorial(c) * Fraction(c) / (c - a)
    return top / (sum(a**k / math.factorial(k) for k in range(c)) + top)


def test_erlang_c_textbook() -> None:
    """(d) lambda 2/h, mu 1/h, 3 servers: P(wait) = 4/9, mean wait 4/9 h (textbook example)."""
    ref = _erlang_c_sum_formula(Fraction(2), 3)
    assert ref == Fraction(4, 9)
    assert cf.erlang_c_probability(2.0, 1.0, 3) == pytest.approx(float(ref), rel=1e-14)
    assert cf.erlang_c_mean_wait_h(2.0, 1.0, 3) == pytest.approx(float(ref) / (3 * 1.0 - 2.0))
    # a larger system, exactly in rationals
    for a, c in [(Fraction(90), 100), (Fraction(7, 2), 4), (Fraction(1, 2), 1)]:
        ref = _erlang_c_sum_formula(a, c)
        assert cf.erlang_c_probability(float(a) * 0.25, 0.25, c) == pytest.approx(float(ref), rel=1e-12)
    # M/M/1: P(wait) = rho, W_q = rho/(mu - lambda)
    assert cf.erlang_c_probability(0.6, 1.0, 1) == pytest.approx(0.6)
    assert cf.erlang_c_mean_wait_h(0.6, 1.0, 1) == pytest.approx(0.6 / 0.4)


def test_erlang_c_unstable_raises() -> None:
    with pytest.raises(ValueError):
        cf.erlang_c_probability(3.0, 1.0, 3)
    with pytest.raises(ValueError):
        cf.erlang_c_mean_wait_h(5.0, 1.0, 3)


def test_young_and_daly_intervals() -> None:
    """(e) Daly reduces to Young for small delta/M; tau = M for delta >= 2M."""
    assert cf.young_interval_h(0.1, 20.0) == pytest.approx(2.0)
    m = 10.0
    prev = math.inf
    for delta in (1e-2, 1e-3, 1e-4, 1e-5):
        rel = abs(cf.daly_interval_h(delta, m) / cf.young_interval_h(delta, m) - 1.0)
        assert rel < prev
        prev = rel
    assert prev < 2e-3
    # exact formula spot check
    d, mm = 0.5, 4.0
    x = d / (2 * mm)
    assert cf.daly_interval_h(d, mm) == pytest.approx(
        math.sqrt(2 * d * mm) * (1 + math.sqrt(x) / 3 + x / 9) - d
    )
    assert cf.daly_interval_h(8.0, 4.0) == 4.0
    assert cf.daly_interval_h(9.0, 4.0) == 4.0
    np.testing.assert_allclose(cf.daly_interval_h(np.array([0.5, 9.0]), 4.0), [cf.daly_interval_h(0.5, 4.0), 4.0])


def test_daly_wall_time() -> None:
    work, delta, restart, m = 100.0, 0.1, 0.2, 5.0
    tau = cf.daly_interval_h(delta, m)
    tw = cf.daly_expected_wall_time_h(work, tau, delta, restart, m)
    expected = m * math.exp(restart / m) * (math.exp((tau + delta) / m) - 1) * work / tau
    assert tw == pytest.approx(expected, rel=1e-14)
    assert tw > work * (tau + delta) / tau
    # no failures in the limit: wall time = work plus checkpoints
    assert cf.daly_expected_wall_time_h(work, 1.0, 0.1, 0.2, 1e9) == pytest.approx(110.0, rel=1e-6)
    # Daly's interval is near the numerical optimum of the exact wall time
    best = minimize_scalar(
        lambda t: cf.daly_expected_wall_time_h(work, t, delta, restart, m), bounds=(0.01, 5.0),
        method="bounded", options={"xatol": 1e-8},
    )
    assert tw <= best.fun * 1.001


def test_palm_vs_direct_poisson_sum() -> None:
    """(g) Palm stockout share vs 1 - sum_{j<S} e^-m m^j / j!."""
    for lam, lead, stock in [(0.01, 168.0, 0), (0.01, 168.0, 1), (0.01, 168.0, 3), (0.2, 72.0, 20)]:
        mean = lam * lead
        direct = 1.0 - sum(math.exp(-mean) * mean**j / math.factorial(j) for j in range(stock))
        assert cf.palm_stockout_share(lam, lead, stock) == pytest.approx(direct, rel=1e-9, abs=1e-15)
    assert cf.palm_stockout_share(0.01, 168.0, 0) == 1.0
    v = cf.palm_stockout_share(0.01, 168.0, np.array([1, 2, 3]))
    assert np.all(np.diff(v) < 0)


def test_job_interruption_rate() -> None:
    assert cf.job_interruption_rate_per_h(2048, 1 / 50_000) == pytest.approx(2048 / 50_000)
    np.testing.assert_allclose(cf.job_interruption_rate_per_h(np.array([1, 10]), 0.01), [0.01, 0.1])


_times = st.one_of(st.just(0.0), st.just(math.inf), st.floats(1e-6, 1e6))


def _same(x: float, y: float) -> bool:
    return (x != x and y != y) or (x == y and math.copysign(1, x) == math.copysign(1, y))


@settings(max_examples=300, deadline=None)
@given(tc=_times, comm=_times, comm_ideal=_times, overlap=st.floats(0, 1), speed=st.one_of(st.just(0.0), st.floats(1e-3, 1)),
       n=st.integers(1, 20_000), grad=st.floats(0, 1e12), bw=st.one_of(st.just(0.0), st.floats(1, 1e4)))
def test_step_time_scalar_path_is_bit_identical_to_array_path(tc, comm, comm_ideal, overlap, speed, n, grad, bw) -> None:
    """The event loop calls the step-time functions with Python floats and gets a plain-float path
    (issue 10); it must give exactly what the numpy path gives."""
    one = np.ones(1)
    with np.errstate(all="ignore"):
        assert _same(steptime.step_time_s(tc, comm, overlap, speed),
                     float(steptime.step_time_s(tc * one, comm, overlap, speed)[0]))
        assert _same(steptime.progress_rate(tc, comm_ideal, comm, overlap, speed),
                     float(steptime.progress_rate(tc * one, comm_ideal, comm, overlap, speed)[0]))
        assert _same(steptime.ring_allreduce_s(n, grad, bw, 5e-6),
                     float(steptime.ring_allreduce_s(n * one, grad, bw, 5e-6)[0]))


def test_machine_repair_against_a_hand_computed_chain() -> None:
    """M/M/1//2 with λ = μ = 1/h: p ∝ (1, 2ρ, 2ρ²) = (1, 2, 2)/5, so L = 6/5 units down, L_q = 2/5
    (state 2 has one waiting), busy 4/5, throughput λ(N − L) = 4/5 per h, W_q = L_q/throughput = 1/2 h."""
    q = cf.machine_repair(2, 1.0, 1.0, 1)
    assert q.mean_down == pytest.approx(1.2)
    assert q.mean_waiting == pytest.approx(0.4)
    assert q.utilisation == pytest.approx(0.8) == q.throughput_per_h
    assert q.mean_wait_h == pytest.approx(0.5)


def test_machine_repair_equals_the_generator_solution_and_tends_to_erlang_c() -> None:
    n, c, lam, mu = 6, 2, 0.3, 1.0
    Q = np.zeros((n + 1, n + 1))
    for i in range(n + 1):
        if i < n:
            Q[i, i + 1] = (n - i) * lam
        if i > 0:
            Q[i, i - 1] = min(i, c) * mu
        Q[i, i] = -Q[i].sum()
    A = np.vstack([Q.T, np.ones(n + 1)])
    p = np.linalg.lstsq(A, np.append(np.zeros(n + 1), 1.0), rcond=None)[0]
    i = np.arange(n + 1)
    q = cf.machine_repair(n, lam, mu, c)
    assert q.mean_down == pytest.approx(float(i @ p), rel=1e-12)
    assert q.mean_waiting == pytest.approx(float(np.maximum(i - c, 0) @ p), rel=1e-12)
    # the unavailability of a 4-of-6 group is the same chain's P(i > 2)
    assert 1 - cf.k_of_n_availability(n, 4, lam, mu, c) == pytest.approx(float(p[3:].sum()), rel=1e-10)
    # many units, same load: M/M/c (Erlang C); few units: far from it
    assert cf.machine_repair(10**6, 3e-6, 1.0, 4).mean_wait_h == pytest.approx(
        cf.erlang_c_mean_wait_h(3.0, 1.0, 4), rel=1e-4)
    assert cf.machine_repair(6, 0.25, 1.0, 1).utilisation < 0.9  # M/M/1 at load 1.5: unstable
    assert cf.machine_repair(4, 10.0, 1.0, 4).mean_waiting == 0.0  # a server per unit: nobody waits
