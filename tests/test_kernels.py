"""The compiled kernels (twin/kernels.py and twin/kernels_units.py, issue 41) against straightforward numpy and the physics functions.

Each scalar kernel is pinned to its ``twin.physics.thermal`` function (bit for bit where no transcendental
function is involved; to 1e-12 of the temperatures' scale where the C library's exp/log/pow may differ
from numpy's SIMD forms in the last bit), the sums to numpy's order bit for bit, and the unit kernels to
the numpy code they replaced (``GpuState._update_now`` / ``_throttle``, ``lazy._stash`` and ``_settle``
of twin 0.8.1, restated below). CI also runs this file with ``NUMBA_DISABLE_JIT=1`` (plain Python).
"""

from __future__ import annotations

import math
import os
import pathlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from twin import kernels as K
from twin import kernels_events as KE
from twin import kernels_units as KU
from twin.physics import thermal as phys

_temp = st.floats(-40.0, 200.0)
_tau = st.floats(1e-2, 1e5)
_r = st.floats(1e-3, 1.0)
_p = st.floats(0.0, 2000.0)
REL = 1e-12
INF = math.inf


def _close(got: object, want: object, *scale: object) -> None:
    s = max([1.0] + [float(np.max(np.abs(np.asarray(x)[np.isfinite(x)]), initial=0.0)) for x in scale])
    g, w = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    assert np.array_equal(np.isinf(g), np.isinf(w)), (got, want)
    fin = np.isfinite(w)
    assert np.all(np.abs(g[fin] - w[fin]) <= REL * s * np.maximum(1.0, np.abs(w[fin]) / s)), (got, want)


# ------------------------------------------------------------------------------------------ physics
@settings(max_examples=200, deadline=None)
@given(tin=_temp, p=_p, r=_r, c=st.floats(1.0, 5000.0))
def test_steady_state_and_tau_are_physics_bit_for_bit(tin: float, p: float, r: float, c: float) -> None:
    assert KU.steady_c(tin, p, r) == phys.steady_state_c(p, tin, r)
    assert KU.tau_s(r, c) == phys.tau_s(r, c)


@settings(max_examples=200, deadline=None)
@given(t=_temp, tss=_temp, dt_h=st.floats(0.0, 2000.0), tau=_tau)
def test_step_is_physics_temperature(t: float, tss: float, dt_h: float, tau: float) -> None:
    _close(KU.step_c(t, tss, dt_h, tau), phys.temperature_c(dt_h * 3600.0, t, tss, tau), t, tss)


@settings(max_examples=200, deadline=None)
@given(pd=_p, tin=_temp, r=_r, slow=st.floats(60.0, 100.0), pmin=st.floats(0.0, 300.0))
def test_power_cap_is_physics_bit_for_bit(pd: float, tin: float, r: float, slow: float, pmin: float) -> None:
    assert KU.power_cap_w(pd, tin, r, slow, pmin) == phys.power_cap_w(pd, tin, r, slow, pmin)


@settings(max_examples=200, deadline=None)
@given(cap=_p, pd=st.floats(1.0, 2000.0), idle=st.floats(0.0, 300.0), alpha=st.floats(0.1, 2.0))
def test_capped_speed_is_physics_speed_fraction_below_demand(cap: float, pd: float, idle: float, alpha: float
                                                             ) -> None:
    if not (cap < pd and pd > idle):
        return  # the kernel is called only for caps below the demand
    _close(KU.capped_speed(cap, pd, idle, alpha), phys.speed_fraction(cap, pd, idle, alpha), 1.0)


@settings(max_examples=200, deadline=None)
@given(t0=_temp, tss=_temp, x=_temp, tau=_tau)
def test_crossing_time_is_physics(t0: float, tss: float, x: float, tau: float) -> None:
    with np.errstate(over="ignore"):
        _close(KU.crossing_time_s(t0, tss, x, tau), phys.crossing_time_s(t0, tss, x, tau), tau)


# ------------------------------------------------------------------------------------------ sums
_vals = st.lists(st.floats(-1e6, 1e6), min_size=0, max_size=300)


@settings(max_examples=200, deadline=None)
@given(v=_vals, data=st.data())
def test_pairwise_and_reduceat_sums_are_numpys_bit_for_bit(v: list[float], data: st.DataObject) -> None:
    a = np.array(v, dtype=float)
    for ps in (K.pairwise_sum, KU.pairwise_sum):  # (each kernel module has its copy)
        assert ps(a, 0, len(a)) == a.sum() or (len(a) == 0 and ps(a, 0, 0) == 0.0)
    if len(a):
        cuts = sorted(set(data.draw(st.lists(st.integers(0, len(a) - 1), max_size=6))) | {0})
        ends = cuts[1:] + [len(a)]
        want = np.add.reduceat(a, cuts)
        got = [KU.reduceat_sum(a, s, e - s) for s, e in zip(cuts, ends)]
        assert np.array_equal(np.array(got), want)
        u = data.draw(st.integers(1, 12))
        m = len(a) // u * u
        if m:
            rows = a[:m].reshape(-1, u).sum(axis=1)
            assert np.array_equal(rows, [K.pairwise_sum(a, j * u, u) for j in range(m // u)])
            assert np.array_equal(rows, [KU.pairwise_sum(a, j * u, u) for j in range(m // u)])


def test_pairwise_sum_of_long_arrays_is_numpys() -> None:
    rng = np.random.default_rng(1)
    for n in (129, 1000, 4097, 100_003):
        a = rng.normal(size=n) * 10 ** rng.uniform(-5, 5, size=n)
        assert K.pairwise_sum(a, 0, n) == a.sum() == KU.pairwise_sum(a, 0, n)


# ------------------------------------------------------------------------------------------ units
def _state(rng: np.random.Generator, n_nodes: int, u: int, silent: bool) -> dict[str, np.ndarray]:
    G = n_nodes * u
    return {
        "T": rng.uniform(20.0, 95.0, G), "tss": rng.uniform(20.0, 100.0, G), "t0": rng.uniform(0.0, 1.0, G),
        "tau": rng.uniform(5.0, 60.0, G), "gon": rng.random(G) < 0.9, "hist": rng.uniform(0.0, 5.0, 160),
        "engaged": rng.random(G) < 0.3, "speed": np.ones(G), "t_next": np.full(G, INF),
        "kind": np.zeros(G, dtype=np.int8), "ucap": np.full(G, INF), "x_cap": np.full(G, INF),
        "x_P": np.zeros(G), "x_sp": np.ones(G), "x_tss": np.zeros(G), "x_ok": np.zeros(G, dtype=bool),
        "pw": np.zeros(G), "t_due": np.full(G, INF), "traced": rng.random(G) < 0.2,
        "rbase": 0.092 * np.exp(0.05 * rng.normal(size=G)), "toff": rng.uniform(0.0, 3.0, G),
        "rfactor": rng.uniform(0.9, 1.2, n_nodes), "inlet": rng.uniform(18.0, 30.0, n_nodes),
    }


def _ref_update(s: dict[str, np.ndarray], nodes: np.ndarray, u: int, g: float, w: float, now: float,
                up_n: np.ndarray, util: np.ndarray, pc: np.ndarray | None, prm: dict[str, float], hot: bool,
                silent: bool) -> tuple[bool, float, np.ndarray]:
    """twin 0.8.1's numpy path of ``_update_now`` (state to now, steady states), ``_throttle`` and ``_stash``."""
    idle, tdp, C, slow, shut, pmin, alpha = (prm[k] for k in ("idle", "tdp", "C", "slow", "shut", "pmin", "alpha"))
    gsl = (nodes[:, None] * u + np.arange(u)).ravel()
    tss_old = s["tss"][gsl]
    dt_h = now - s["t0"][gsl]
    T = tss_old + (s["T"][gsl] - tss_old) * np.exp(dt_h * -3600.0 / s["tau"][gsl])
    bins = np.minimum(np.maximum(tss_old, 0.0), 159).astype(np.intp)
    s["hist"] += np.bincount(bins, weights=dt_h * s["gon"][gsl], minlength=160) * w
    pd_n = (idle + (tdp - idle) * util) * up_n
    draw_n = pd_n if pc is None else np.minimum(pd_n, pc)
    R = s["rbase"][gsl] * np.repeat(s["rfactor"][nodes], u)
    tin = np.repeat(s["inlet"][nodes], u) + s["toff"][gsl]
    pd = np.repeat(pd_n, u)
    draw = np.repeat(draw_n, u)
    s["gon"][gsl] = np.repeat(up_n, u)
    tss = tin + draw * R
    need = tss > slow
    s["T"][gsl] = T
    s["t0"][gsl] = now
    s["tau"][gsl] = R * C
    busy_n = (up_n & (util > 0.0)) * g
    out = np.empty((7, len(nodes)))
    out[0], out[1], out[2] = pd_n, draw_n, busy_n
    if not np.count_nonzero(need):
        s["tss"][gsl] = tss
        s["ucap"][gsl] = INF
        if hot:
            s["engaged"][gsl] = False
            s["t_next"][gsl] = INF
            s["speed"][gsl] = 1.0
            if silent:
                s["t_due"][gsl] = INF
        out[3], out[4], out[5], out[6] = 1.0, 0.0, busy_n, INF
        return True, INF, out
    engage = need & (s["engaged"][gsl] | (T >= slow - 1e-6))
    pcap = np.asarray(phys.power_cap_w(pd, tin, R, slow, pmin))
    xP = np.minimum(pcap, draw)
    s["ucap"][gsl] = np.where(engage, pcap, INF)
    P = np.where(engage, xP, draw)
    capped = engage & (P < draw)
    with np.errstate(divide="ignore", invalid="ignore"):
        xsp = np.where(xP <= idle, 0.0, np.minimum(1.0, np.clip((xP - idle) / (pd - idle), 0.0, 1.0) ** alpha))
    speed = np.where(capped, xsp, 1.0)
    tss = tin + P * R
    tau = s["tau"][gsl]
    t_cross = np.full(len(tss), INF)
    kind = np.zeros(len(tss), dtype=np.int8)
    free_up = need & ~engage
    t_cross[free_up] = tau[free_up] * np.log((T[free_up] - tss[free_up]) / (slow - tss[free_up]))
    kind[free_up] = 1
    hotu = engage & (tss > shut)
    if hotu.any():
        ts = np.asarray(phys.crossing_time_s(T[hotu], tss[hotu], shut, tau[hotu]), dtype=np.float64)
        t_cross[hotu] = np.where(T[hotu] >= shut - 1e-6, 0.0, ts)
        kind[hotu] = 2
    t_next = now + t_cross / 3600.0
    if silent:
        s["x_cap"][gsl] = pcap
        xtss = tin + xP * R
        s["x_P"][gsl] = xP
        s["x_sp"][gsl] = np.where(xP < draw, xsp, 1.0)
        s["x_tss"][gsl] = xtss
        s["x_ok"][gsl] = free_up & (xtss <= shut) & ~s["traced"][gsl]
        s["pw"][gsl] = P
        s["t_due"][gsl] = t_next
    s["tss"][gsl] = tss
    s["engaged"][gsl] = engage
    s["speed"][gsl] = speed
    s["t_next"][gsl] = t_next
    s["kind"][gsl] = kind
    busy_g = (busy_n > 0)[:, None]
    capped_g = capped.reshape(-1, u)
    out[3] = speed.reshape(-1, u).min(axis=1)
    out[4] = (busy_g & capped_g).sum(axis=1) * w
    out[5] = np.where(busy_g, speed.reshape(-1, u), 0.0).sum(axis=1) * w
    out[6] = np.where(capped_g.any(axis=1), np.add.reduce(P.reshape(-1, u), axis=1) / u, INF)
    return False, float(t_next.min()), out


def _assert_state_close(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> None:
    for k in a:
        if a[k].dtype == bool or a[k].dtype.kind in "iu":
            assert np.array_equal(a[k], b[k]), k
        else:
            _close(a[k], b[k], a[k])


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), u=st.sampled_from([1, 4, 8]), hot=st.booleans(), silent=st.booleans(),
       with_pc=st.booleans(), contiguous=st.booleans(), heat=st.sampled_from([0, 1, 2, 3]),
       ng_idle=st.sampled_from([1600.0, 3200.0]))
def test_update_units_is_the_numpy_path(seed: int, u: int, hot: bool, silent: bool, with_pc: bool,
                                        contiguous: bool, heat: int, ng_idle: float) -> None:
    ng_w = 3200.0
    rng = np.random.default_rng(seed)
    n_nodes = 12
    s = _state(rng, n_nodes, u, silent)
    k = int(rng.integers(1, n_nodes + 1))
    nodes = (np.arange(k) + int(rng.integers(0, n_nodes - k + 1))) if contiguous else \
        np.sort(rng.choice(n_nodes, size=k, replace=False))
    nodes = nodes.astype(np.int64)
    up_n = rng.random(k) < 0.85
    util = np.where(rng.random(k) < 0.2, 0.0, rng.uniform(0.0, 1.0, k))
    pc = rng.uniform(200.0, 800.0, k) if with_pc else None
    prm = {"idle": 100.0, "tdp": 700.0, "C": 300.0, "slow": 89.0, "shut": 92.0, "pmin": 150.0, "alpha": 0.5}
    now = float(rng.uniform(1.0, 2.0))
    g, w = float(u * (8 // u)), float(8 // u)
    ref = {kk: v.copy() for kk, v in s.items()}
    r_short, r_tmin, r_out = _ref_update(ref, nodes, u, g, w, now, up_n, util, pc, prm, hot, silent)
    gi = (nodes[:, None] * u + np.arange(u)).ravel()
    tmax = KU.advance_units(gi, np.array([now]), s["T"], s["tss"], s["t0"], s["tau"], s["gon"], s["hist"], w)
    _close(tmax, ref["T"][gi].max(), ref["T"])
    nout = np.empty((8, k))
    uout = np.empty((5, k * u))
    e = np.empty(0)
    short, tmin = KU.update_units(
        nodes, u, g, w, now, up_n, util, e if pc is None else pc, s["rfactor"], s["inlet"], s["rbase"], s["toff"],
        prm["idle"], prm["tdp"], prm["C"], prm["slow"], prm["shut"], prm["pmin"], prm["alpha"], s["T"], s["tss"],
        s["tau"], s["gon"], s["engaged"], s["speed"], s["t_next"], s["kind"], hot, s["ucap"], silent, s["x_cap"],
        s["x_P"], s["x_sp"], s["x_tss"], s["x_ok"], s["pw"], s["t_due"], s["traced"], heat, ng_w, ng_idle, 0.3,
        np.empty((6, 0)), nout, uout)
    assert short == r_short
    _close(tmin, r_tmin, r_tmin)
    _close(nout[:7], r_out, r_out)
    if heat:  # AirRooms.air_heat_w at the draw (air.py)
        gw = r_out[1]
        ng = ng_w
        if ng_idle != ng_w:
            ng = ng_idle + (ng_w - ng_idle) * np.clip((gw - prm["idle"]) / (prm["tdp"] - prm["idle"]), 0.0, 1.0)
        want = (0.3 * (ng + gw * g) * up_n) if heat == 3 else ((ng + (gw * g if heat == 1 else 0.0)) * up_n)
        assert np.array_equal(nout[7], want)
    _assert_state_close(s, ref)


def _ref_settle(s: dict[str, np.ndarray], idx: np.ndarray, now: float, u: int, w: float, oth: bool
                ) -> tuple[np.ndarray, np.ndarray, list[float], list[float], float, float]:
    """twin 0.8.1's numpy ``_settle`` (its arithmetic; the publications stay in lazy.py)."""
    ts = s["t_next"][idx]
    dt = ts - s["t0"][idx]
    tss0 = s["tss"][idx]
    s["hist"] += np.bincount(np.clip(tss0, 0.0, 159).astype(np.intp), weights=dt * s["gon"][idx], minlength=160) * w
    s["T"][idx] = tss0 + (s["T"][idx] - tss0) * np.exp(dt * -3600.0 / s["tau"][idx])
    s["t0"][idx] = ts
    s["tss"][idx] = s["x_tss"][idx]
    s["engaged"][idx] = True
    s["ucap"][idx] = s["x_cap"][idx]
    xs = s["x_sp"][idx]
    s["speed"][idx] = xs
    xP = s["x_P"][idx]
    capped = xP < s["pw"][idx]
    dP = (xP - s["pw"][idx]) * w
    s["pw"][idx] = xP
    s["t_next"][idx] = INF
    s["t_due"][idx] = INF
    s["kind"][idx] = 0
    s["silent"][idx] = False
    held = now - ts
    nd = idx // u
    o = np.lexsort((ts, nd))
    nd_o, xs_o, ts_o, held_o = nd[o], xs[o], ts[o], held[o]
    last = np.ones(len(nd_o), dtype=bool)
    if len(nd_o) > 1:
        np.not_equal(nd_o[1:], nd_o[:-1], out=last[:-1])
    nodes = nd_o[last]
    first = np.flatnonzero(np.concatenate(([True], last[:-1])))
    nb = s["n_busy"][nd_o]
    busy = nb > 0.0
    dcap = (busy & capped[o]) * w
    dsp = busy * (w * (xs_o - 1.0))
    acc, tot = s["acc"], s["tot"]
    acc[1] += float((dcap * held_o).sum())
    acc[2] += float((dsp * held_o).sum())
    tot[1] += float(dcap.sum())
    tot[2] += float(dsp.sum())
    s["n_capped"][nodes] += np.add.reduceat(dcap, first)
    s["n_spsum"][nodes] += np.add.reduceat(dsp, first)
    old = s["caps"][nd_o]
    cm = xs_o.copy()
    for k in range(1, min(u, len(cm))):
        same = nd_o[k:] == nd_o[:-k]
        np.minimum(cm[k:], np.where(same, xs_o[:-k], INF), out=cm[k:])
    after = np.minimum(old, cm)
    before = old.copy()
    if len(after) > 1:
        before[1:] = np.where(last[:-1], old[1:], after[:-1])
    new_caps = after[last]
    if oth:
        o_n = s["oth_n"][nd_o]
        d = nb * (np.minimum(after, o_n) - np.minimum(before, o_n))
        new_sp = np.minimum(new_caps, o_n[last])
    else:
        d = nb * (after - before)
        new_sp = new_caps
    nz = d != 0.0
    tp_t: list[float] = []
    tp_dv: list[float] = []
    if np.count_nonzero(nz):
        acc[3] += float((d[nz] * held_o[nz]).sum())
        tp = s["n_busy"][nodes] * new_sp
        tot[3] += float((tp - s["n_tp"][nodes]).sum())
        s["n_tp"][nodes] = tp
        tp_t, tp_dv = ts_o[nz].tolist(), d[nz].tolist()
    gu = (nodes[:, None] * u + np.arange(u)).ravel()
    it_caps = np.where((s["speed"][gu].reshape(-1, u) < 1.0).any(axis=1),
                       np.add.reduce(s["pw"][gu].reshape(-1, u), axis=1) / u, INF)
    return nodes, new_caps, tp_t, tp_dv, float((dP * held).sum()), float(dP.sum()), it_caps  # type: ignore[return-value]


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), u=st.sampled_from([1, 4, 8]), oth=st.booleans(), grouped=st.booleans())
def test_settle_units_is_the_numpy_path(seed: int, u: int, oth: bool, grouped: bool) -> None:
    rng = np.random.default_rng(seed)
    n_nodes = 10
    s = _state(rng, n_nodes, u, True)
    G = n_nodes * u
    m = int(rng.integers(1, G + 1))
    idx = np.sort(rng.choice(G, size=m, replace=False)).astype(np.int64)
    if not grouped:  # (units not in node order: the kernel's general sort)
        idx = rng.permutation(idx)
    now = 2.0
    s["t_next"][idx] = rng.uniform(1.0, 2.0, m)
    s["t_next"][idx[: m // 3]] = 1.5  # ties in time
    s["x_sp"] = rng.uniform(0.3, 1.0, G)
    s["x_P"] = rng.uniform(200.0, 700.0, G)
    s["pw"] = s["x_P"] + np.where(rng.random(G) < 0.8, rng.uniform(0.0, 100.0, G), 0.0)
    s["x_tss"] = rng.uniform(60.0, 89.0, G)
    s["x_cap"] = rng.uniform(200.0, 700.0, G)
    s["silent"] = rng.random(G) < 0.7
    s["n_busy"] = np.where(rng.random(n_nodes) < 0.8, 8.0, 0.0)
    s["n_capped"] = rng.uniform(0.0, 8.0, n_nodes)
    s["n_spsum"] = rng.uniform(0.0, 8.0, n_nodes)
    s["n_tp"] = rng.uniform(0.0, 8.0, n_nodes)
    s["caps"] = np.where(rng.random(n_nodes) < 0.5, 1.0, rng.uniform(0.3, 1.0, n_nodes))
    s["oth_n"] = np.where(rng.random(n_nodes) < 0.5, 1.0, rng.uniform(0.3, 1.0, n_nodes))
    s["acc"] = rng.uniform(0.0, 100.0, 4)
    s["tot"] = rng.uniform(0.0, 100.0, 4)
    w = float(8 // u)
    ref = {k: v.copy() for k, v in s.items()}
    n_sil_ref = int(np.count_nonzero(ref["silent"][idx]))
    r_nodes, r_caps, r_tpt, r_tpdv, r_ewh, r_dsum, r_itc = _ref_settle(ref, idx, now, u, w, oth)
    # the accounts in one padded block as the model holds them (CoolingArrays.nblk, rows A_*; s' entries its views)
    nblk = np.full((6, max(n_nodes, 4) + 8), -7.25)
    for k, r in (("n_busy", KU.A_BUSY), ("n_capped", KU.A_CAPPED), ("n_spsum", KU.A_SPSUM), ("n_tp", KU.A_TP),
                 ("acc", KU.A_ACC), ("tot", KU.A_TOT)):
        nblk[r, :len(s[k])] = s[k]
        s[k] = nblk[r, :len(s[k])]
    # and the units' float and bool state (CoolingArrays.ublk, bblk, rows R_*, B_*; padded)
    ublk = np.full((KU.N_ROWS, G + 8), INF)
    for k, r in (("T", KU.R_T), ("tss", KU.R_TSS), ("t0", KU.R_T0), ("tau", KU.R_TAU), ("speed", KU.R_SPEED),
                 ("t_next", KU.R_NEXT), ("t_due", KU.R_DUE), ("x_P", KU.R_XP), ("x_sp", KU.R_XSP),
                 ("x_tss", KU.R_XTSS), ("pw", KU.R_PW)):
        ublk[r, :G] = s[k]
        s[k] = ublk[r, :G]
    bblk = np.ones((4, G + 8), dtype=bool)
    for k, r in (("gon", KU.B_GON), ("engaged", KU.B_ENG), ("silent", KU.B_SILENT)):
        bblk[r, :G] = s[k]
        s[k] = bblk[r, :G]
    got = KU.settle_units(idx, now, u, w, ublk, bblk, s["hist"], s["kind"], s["x_cap"], s["ucap"], nblk, s["caps"],
                          s["oth_n"] if oth else np.empty(0))
    assert np.all(ublk[:, G:] == INF) and np.all(bblk[:, G:])  # (padding unwritten)
    assert np.all(nblk[:KU.A_ACC, n_nodes:] == -7.25) and np.all(nblk[KU.A_ACC:, 4:] == -7.25)  # (padding unwritten)
    tmax, n_sil, nodes, new_caps, it_caps, tp_t, tp_dv, ts, dP, e_wh, dsum = got
    assert n_sil == n_sil_ref
    assert np.array_equal(nodes, r_nodes) and np.array_equal(new_caps, r_caps)
    assert np.array_equal(it_caps, r_itc)
    assert np.array_equal(tp_t, r_tpt) and np.array_equal(tp_dv, r_tpdv)
    assert e_wh == r_ewh and dsum == r_dsum  # (sums in numpy's order)
    assert np.array_equal(ts, s["t0"][idx])
    _close(tmax, ref["T"][idx].max(), ref["T"])
    for k in ("acc", "tot", "n_capped", "n_spsum", "n_tp", "hist"):
        assert np.array_equal(s[k], ref[k]), k  # (no transcendental function in these)
    _assert_state_close(s, ref)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), u=st.sampled_from([1, 4, 8]), clear=st.booleans())
def test_silent_due_is_the_numpy_split(seed: int, u: int, clear: bool) -> None:
    rng = np.random.default_rng(seed)
    G = 10 * u
    silent = rng.random(G) < 0.5
    t_next = np.where(rng.random(G) < 0.2, INF, rng.uniform(0.0, 2.0, G))
    gi = rng.permutation(G)[: int(rng.integers(1, G + 1))].astype(np.int64)
    due_h = 1.0
    sub = silent[gi]
    want_idx = gi[sub & (t_next[gi] <= due_h)]
    want_rest = gi[sub & ~(t_next[gi] <= due_h)]
    ref = silent.copy()
    if clear:
        ref[want_rest] = False
    idx, cleared = KU.silent_due(gi, due_h, silent, t_next, clear)
    assert np.array_equal(idx, want_idx)
    assert cleared == (len(want_rest) if clear else 0)
    assert np.array_equal(silent, ref)


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), u=st.sampled_from([1, 4, 8]), keep=st.booleans())
def test_plan_group_is_the_numpy_walk(seed: int, u: int, keep: bool) -> None:
    """twin 0.8.1's numpy walk of ``lazy._plan`` for one group."""
    rng = np.random.default_rng(seed)
    n_nodes = 12
    G = n_nodes * u
    arr = np.sort(rng.choice(n_nodes, size=int(rng.integers(1, n_nodes + 1)), replace=False)).astype(np.int64)
    gid_of = np.where(rng.random(n_nodes) < 0.8, 3, 5).astype(np.int64)
    t_next = np.where(rng.random(G) < 0.3, INF, np.round(rng.uniform(0.0, 2.0, G), 1))  # ties in time
    kind = rng.integers(0, 3, G).astype(np.int8)
    silent = rng.random(G) < 0.4
    down = (rng.random(n_nodes) < 0.2).astype(np.int32)
    caps = np.where(rng.random(n_nodes) < 0.5, 1.0, rng.uniform(0.3, 1.0, n_nodes))
    x_sp = rng.uniform(0.2, 1.0, G)
    x_ok = rng.random(G) < 0.8
    t_due = rng.uniform(0.0, 2.0, G)
    now = 1.0
    keep_h = now + 1e-12 if keep else -INF
    r_sil, r_due = silent.copy(), t_due.copy()
    mem = arr[gid_of[arr] == 3]
    gu = (mem[:, None] * u + np.arange(u)).ravel()
    t = t_next[gu]
    pend = (t < INF) & (kind[gu] == 1)
    if keep:
        pend &= ~(r_sil[gu] & (t <= now + 1e-12))
    pend = np.flatnonzero(pend)
    delta = 0
    if len(pend):
        up = mem[down[mem] == 0]
        floor0 = float(caps[up].min()) if len(up) else 1.0
        ui = gu[pend][np.argsort(t[pend], kind="stable")]
        xs = x_sp[ui]
        before = np.empty(len(xs))
        before[0] = floor0
        if len(xs) > 1:
            np.minimum.accumulate(np.minimum(xs[:-1], floor0), out=before[1:])
        sil = x_ok[ui] & (xs >= before)
        delta = int(np.count_nonzero(sil)) - int(np.count_nonzero(r_sil[ui]))
        r_sil[ui] = sil
        r_due[ui] = np.where(sil, INF, t_next[ui])
    got = KE.plan_group(arr, 3, gid_of, u, keep_h, t_next, kind, silent, down, caps, x_sp, x_ok, t_due)
    assert got == delta
    assert np.array_equal(silent, r_sil) and np.array_equal(t_due, r_due)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), hot=st.booleans())
def test_account_nodes_is_the_numpy_account(seed: int, hot: bool) -> None:
    """twin 0.8.1's numpy ``GpuState._account`` totals (before the effective GPUs)."""
    rng = np.random.default_rng(seed)
    n_nodes = 40
    nodes = np.sort(rng.choice(n_nodes, size=int(rng.integers(1, n_nodes + 1)), replace=False)).astype(np.int64)
    k = len(nodes)
    busy, capped, spsum = (rng.choice([0.0, 8.0], k), rng.uniform(0.0, 8.0, k), rng.uniform(0.0, 8.0, k))
    st8 = [rng.uniform(0.0, 8.0, n_nodes) for _ in range(3)]
    tot = rng.uniform(0.0, 1e4, 4)
    r = [a.copy() for a in st8]
    rt = tot.copy()
    d_busy = float((busy - r[0][nodes]).sum())
    rt[0] += d_busy
    r[0][nodes] = busy
    if hot:
        rt[1] += float((capped - r[1][nodes]).sum())
        rt[2] += float((spsum - r[2][nodes]).sum())
        r[1][nodes] = capped
    else:
        rt[2] += d_busy
    r[2][nodes] = spsum
    got = K.account_nodes(nodes, busy, capped, spsum, st8[0], st8[1], st8[2], tot, hot)
    assert got == d_busy and np.array_equal(tot, rt)
    for a, b in zip(st8, r):
        assert np.array_equal(a, b)


@settings(max_examples=100, deadline=None)
@given(v=st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.5, INF, -3.0]) | st.floats(-1e3, 1e3), max_size=300))
def test_argsort_stable_is_numpys(v: list[float]) -> None:
    a = np.array(v, dtype=float)
    ints = np.floor(a[np.isfinite(a)]).astype(np.int64)
    for sort in (KU.argsort_stable, KE.argsort_stable):  # (each kernel module has its copy)
        assert np.array_equal(sort(a), np.argsort(a, kind="stable"))
        assert np.array_equal(sort(ints.astype(np.float64)), np.argsort(ints, kind="stable"))  # (integer keys as the kernels pass them)


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), common=st.booleans(), short=st.booleans(), some_down=st.booleans())
def test_fan_nodes_is_the_numpy_fan_law(seed: int, common: bool, short: bool, some_down: bool) -> None:
    """``FanLaw.power_w``'s numpy arithmetic of twin 0.12 (the fan curve and cube law of twin.physics.fans, the
    stated fans by the general functions), restated: the kernel's is the same bit for bit."""
    from twin.physics.fans import fan_demand, fan_speed, node_fan_power_w

    rng = np.random.default_rng(seed)
    n_nodes = int(rng.integers(1, 300))
    idx = np.sort(rng.choice(n_nodes, size=int(rng.integers(0, n_nodes + 1)), replace=False)).astype(np.int64)
    k = len(idx)
    exh, design, ref = rng.uniform(35.0, 50.0), rng.uniform(20.0, 30.0), rng.uniform(15.0, 55.0)
    smin, cnt = rng.uniform(0.1, 0.5), int(rng.integers(1, 9))
    full_w, res = rng.uniform(20.0, 400.0), rng.choice([1.0, rng.uniform(0.05, 0.5)])
    max_w = full_w * res
    ng0, ng1, rated = rng.uniform(500.0, 1500.0), rng.uniform(1500.0, 3000.0), rng.uniform(8000.0, 12000.0)
    a_w, g0 = 8 * rng.uniform(300.0, 700.0), 8 * rng.uniform(50.0, 150.0)
    inlet = rng.uniform(10.0, 60.0, n_nodes)  # some above the exhaust: the 1 °C floor of the rise
    healthy = (rng.integers(0, cnt + 1, n_nodes) if short else np.full(n_nodes, cnt)).astype(np.float64)
    down = (rng.random(n_nodes) < 0.2).astype(np.int32) if some_down else np.zeros(n_nodes, dtype=np.int32)
    util: float | np.ndarray = float(rng.choice([0.0, 0.3, 1.0, rng.uniform()])) if common else rng.uniform(0, 1, k)
    k_c = exh - design

    def share(x: float | np.ndarray) -> float | np.ndarray:
        return (x * a_w + g0 + (ng0 + (ng1 - ng0) * x)) / rated

    def stated_w(x: float | np.ndarray) -> float | np.ndarray:
        return node_fan_power_w(fan_demand(share(x), ref, design, exh, smin), cnt, cnt, full_w)

    node_w0 = rng.uniform(0.0, 100.0, n_nodes)
    rise = np.maximum(exh - inlet[idx], 1.0)
    demand = np.maximum(share(util) * (k_c / rise), smin)
    if short:
        s = np.asarray(fan_speed(demand, cnt, healthy[idx]))
        w = np.asarray(node_fan_power_w(demand, cnt, healthy[idx], max_w), dtype=np.float64)
    else:
        s = np.minimum(demand, 1.0)
        w = max_w * s * s * s
    stated = stated_w(util)
    r_node_w = node_w0.copy()
    up = down[idx] == 0
    r_node_w[idx] = np.where(up, w, 0.0)
    r_out = np.where(up, w - stated, 0.0)
    p = np.array([exh, k_c, smin, cnt, max_w, ng0, ng1, a_w, g0, rated, max(exh - ref, 1.0), full_w])
    node_w, out = node_w0.copy(), np.empty(k)
    top, total = K.fan_nodes(idx, util if common else 0.0, np.empty(0) if common else util,
                             float(stated_w(util)) if common else 0.0, inlet, healthy, short, down,
                             not down.any(), p, node_w, out)
    assert np.array_equal(node_w, r_node_w) and np.array_equal(out, r_out)
    assert total == float(r_node_w.sum())
    assert top == (float(s.max()) if k else -1.0)


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), slope=st.booleans())
def test_it_nodes_is_node_it_power_w(seed: int, slope: bool) -> None:
    """``ITPower.refresh`` under caps (twin 0.12: node_it_power_w of the tightest caps, the non-GPU load by
    non_gpu_power_w, or constant without a slope): bit for bit."""
    from twin.physics.power import node_it_power_w, non_gpu_power_w

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 200))
    idx = rng.choice(n, size=int(rng.integers(0, n + 1)), replace=False).astype(np.int64)
    util = rng.choice([0.0, 1.0, 0.37, 0.5], n) * rng.choice([1.0, rng.uniform()], n)
    cap = np.where(rng.random(len(idx)) < 0.4, INF, rng.uniform(0.0, 900.0, len(idx)))
    gpus, idle, tdp = int(rng.integers(1, 9)), rng.uniform(50.0, 150.0), rng.uniform(300.0, 1200.0)
    ng1 = rng.uniform(500.0, 3000.0)
    ng0 = rng.uniform(200.0, ng1) if slope else ng1
    u = util[idx]
    want = node_it_power_w(u, cap, gpus, idle, tdp, non_gpu_power_w(u, ng0, ng1) if slope else ng1)
    npw = rng.uniform(0.0, 1e4, n)
    r = npw.copy()
    r[idx] = want
    K.it_nodes(idx, util, cap, float(gpus), idle, tdp, ng0, ng1 - ng0, npw)
    assert np.array_equal(npw, r)


def test_jit_cache_goes_to_the_user_cache_keyed_by_version_when_the_package_is_read_only(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import twin

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert K._cache_dir() is None or not os.access(Path(K.__file__).parent, os.W_OK)  # editable: __pycache__
    monkeypatch.setattr(K.os, "access", lambda *a, **k: False)  # a read-only install
    d = K._cache_dir()
    assert d == str(tmp_path / "twin" / f"numba-{twin.__version__}") and Path(d).is_dir()
