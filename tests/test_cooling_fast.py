"""The cooling model's hot-path equations (twin/model/cooling/fast.py) are the physics functions'
(issue 21): bit for bit where the expression is the same, to 1e-12 of the temperatures' scale where the
form rounds differently (the replay's log-decay forms, the room supply in minutes)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from twin.model.cooling import fast
from twin.physics import power as ppower
from twin.physics import thermal as phys

_temp = st.floats(-40.0, 200.0)
_dt_h = st.floats(0.0, 2000.0)
_tau = st.floats(1e-2, 1e5)  # s (a GPU: R·C ≈ 30 s; a room in minutes: 5–60)
_r = st.floats(1e-3, 1.0)
_p = st.floats(0.0, 2000.0)
REL = 1e-12


def _close(got: object, want: object, *scale: object) -> None:
    """|got − want| ≤ 1e-12 × the largest magnitude among the inputs' temperatures (at least 1 °C)."""
    s = max([1.0] + [float(np.max(np.abs(x))) for x in scale])
    assert np.all(np.abs(np.asarray(got) - np.asarray(want)) <= REL * s), (got, want)


@settings(max_examples=300, deadline=None)
@given(t=st.lists(_temp, min_size=1, max_size=8), tss=_temp, dt_h=_dt_h, tau=_tau)
def test_step_is_physics_temperature_bit_for_bit(t: list[float], tss: float, dt_h: float, tau: float) -> None:
    T = np.array(t)
    n = len(t)
    got = fast.step_c(T, np.full(n, tss), np.full(n, dt_h), np.full(n, tau))
    want = phys.temperature_c(np.full(n, dt_h * 3600.0), T, tss, tau)
    assert np.array_equal(got, want)


@settings(max_examples=300, deadline=None)
@given(tin=_temp, p=_p, r=_r, c=st.floats(1.0, 5000.0), idle=st.floats(0.0, 300.0), tdp=st.floats(300.0, 1500.0),
       util=st.floats(0.0, 1.0))
def test_steady_state_tau_and_demand_are_physics_bit_for_bit(tin: float, p: float, r: float, c: float, idle: float,
                                                             tdp: float, util: float) -> None:
    assert fast.steady_c(np.array([tin]), np.array([p]), np.array([r]))[0] == phys.steady_state_c(p, tin, r)
    assert fast.tau_s(np.array([r]), c)[0] == phys.tau_s(r, c)
    assert fast.demand_w(idle, tdp, np.array([util]))[0] == ppower.gpu_power_w(idle, tdp, util)


@settings(max_examples=300, deadline=None)
@given(t=_temp, tss=_temp, dt_h=_dt_h, tau=_tau)
def test_log_decay_step_is_physics_temperature(t: float, tss: float, dt_h: float, tau: float) -> None:
    lg = fast.log_decay(np.array([dt_h]), tau)
    _close(fast.step_log_c(t, tss, lg), phys.temperature_c(dt_h * 3600.0, t, tss, tau), t, tss)


_segments = st.lists(st.tuples(st.floats(0.0, 0.05), _temp), min_size=1, max_size=30)  # (hours, steady state)


def _iterate(T0: np.ndarray, segs: list[tuple[float, float]], tau: float) -> np.ndarray:
    T = np.asarray(T0, dtype=np.float64)
    for dur_h, tss in segs:
        T = np.asarray(phys.temperature_c(dur_h * 3600.0, T, tss, tau))
    return T


@settings(max_examples=200, deadline=None)
@given(t0=st.lists(_temp, min_size=1, max_size=6), segs=_segments, tau=st.floats(5.0, 200.0))
def test_shared_segments_are_the_iterated_step_response(t0: list[float], segs: list[tuple[float, float]],
                                                        tau: float) -> None:
    dur = np.array([d for d, _ in segs])
    tss = np.array([s for _, s in segs])
    got = fast.shared_segments_c(np.array(t0), tss, fast.log_decay(dur, tau))
    _close(got, _iterate(np.array(t0), segs, tau), t0, tss)


@settings(max_examples=200, deadline=None)
@given(groups=st.lists(st.tuples(_temp, _segments), min_size=1, max_size=6), tau=st.floats(5.0, 200.0))
def test_grouped_segments_are_the_iterated_step_response(groups: list[tuple[float, list[tuple[float, float]]]],
                                                         tau: float) -> None:
    cnt = np.array([len(s) for _, s in groups], dtype=np.int64)
    last = cnt.cumsum() - 1
    start = last + 1 - cnt
    dur = np.array([d for _, s in groups for d, _ in s])
    tss = np.array([x for _, s in groups for _, x in s])
    t0 = np.array([t for t, _ in groups])
    got = fast.grouped_segments_c(t0, tss, fast.log_decay(dur, tau), start, cnt, last)
    want = [float(_iterate(np.array([t]), s, tau)[0]) for t, s in groups]
    _close(got, want, t0, tss)


@settings(max_examples=300, deadline=None)
@given(s0=_temp, tgt=_temp, dt_min=st.floats(0.0, 1e4), tau_min=st.floats(0.1, 600.0))
def test_room_supply_in_minutes_is_physics(s0: float, tgt: float, dt_min: float, tau_min: float) -> None:
    want = phys.room_supply_c(dt_min * 60.0, s0, tgt, tau_min * 60.0)
    _close(fast.supply_c(np.float64(s0), np.float64(tgt), dt_min, tau_min), want, s0, tgt)


@settings(max_examples=300, deadline=None)
@given(s0=_temp, tgt=_temp, x=_temp, tau_min=st.floats(0.1, 600.0))
def test_crossing_in_minutes_is_physics_in_seconds(s0: float, tgt: float, x: float, tau_min: float) -> None:
    got = fast.crossing_time_min(s0, tgt, x, tau_min)
    want = float(phys.crossing_time_s(s0, tgt, x, tau_min * 60.0)) / 60.0
    if np.isinf(want):
        assert np.isinf(got)
    else:
        assert got == pytest.approx(want, rel=REL, abs=0.0)


def test_the_model_evaluates_the_step_response_through_fast(monkeypatch: pytest.MonkeyPatch) -> None:
    """The GPU state is brought to now by fast.step_c (the pinned form), not by a copy of it."""
    from twin.scenario.loader import load_scenario
    from twin.sim import Model

    calls = []
    step = fast.step_c

    def spy(*args: object) -> object:
        calls.append(1)
        return step(*args)

    monkeypatch.setattr(fast, "step_c", spy)
    sc = load_scenario("scenarios/air.yaml", ["horizon_days=2"]).scenario
    Model(sc).run()
    assert calls


@settings(max_examples=300, deadline=None)
@given(d=st.lists(_p, min_size=1, max_size=8), tin=_temp, r=_r, slow=_temp, pmin=_p)
def test_power_cap_is_physics_bit_for_bit(d: list[float], tin: float, r: float, slow: float, pmin: float) -> None:
    n = len(d)
    D, T, R = np.array(d), np.full(n, tin), np.full(n, r)
    assert np.array_equal(fast.power_cap_w(D, T, R, slow, pmin), phys.power_cap_w(D, T, R, slow, pmin))


@settings(max_examples=300, deadline=None)
@given(cap=st.lists(_p, min_size=1, max_size=8), demand=_p, idle=st.floats(0.0, 300.0), alpha=st.floats(0.05, 3.0))
def test_capped_speed_is_physics_where_capped(cap: list[float], demand: float, idle: float, alpha: float) -> None:
    """Bit for bit wherever the cap is below the demand (the only place the model uses it)."""
    C = np.array(cap)
    D = np.full(len(cap), demand)
    m = C < D
    got = fast.capped_speed(C, D, idle, alpha)[m]
    assert np.array_equal(got, np.asarray(phys.speed_fraction(C, D, idle, alpha))[m])


@settings(max_examples=300, deadline=None)
@given(t=_temp, gap=st.floats(1e-6, 100.0), over=st.floats(1e-6, 100.0), tau=_tau)
def test_rise_time_is_physics_crossing_time_bit_for_bit(t: float, gap: float, over: float, tau: float) -> None:
    """Where a unit crosses (T0 < T_x < T_ss: the throttling path calls it only there)."""
    tx = t + gap
    tss = tx + over
    if not t < tx < tss:  # (rounding at large magnitudes)
        return
    got = fast.rise_time_s(np.array([t]), np.array([tss]), tx, np.array([tau]))
    assert got[0] == phys.crossing_time_s(t, tss, tx, tau)
