"""The replay kernel (twin/kernels_replay.py, issue 41) against the numpy replay it replaced
(``DeferredReplay._replay_units`` of twin 0.13, restated below), bit for bit, on random logs: one and several
units per node, with and without service flags, steady states inside and outside the histogram's range. CI
also runs this file with ``NUMBA_DISABLE_JIT=1`` (plain Python)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from twin import kernels_replay as KR
from twin.model.cooling import fast

HIST = 160
IDLE, TDP, C, W = 70.0, 700.0, 2600.0, 1.5


def _numpy_replay(s: dict, nodes_g, cnt, start, lastpos, t_s, u_s, up_s, u):  # the 0.13 code, on a state dict
    if u == 1:
        t_u, u_u, up_u = t_s, u_s, up_s
        cnt_u, start_u, last_u, g0 = cnt, start, lastpos, nodes_g
        R_g = (s["rbase"] * s["rfactor"])[g0]
        tin_g = s["inlet"][g0]
    else:
        cnt_u = np.repeat(cnt, u)
        last_u = cnt_u.cumsum() - 1
        start_u = last_u + 1 - cnt_u
        src = np.repeat(np.repeat(start, u) - start_u, cnt_u)
        src += np.arange(len(src))
        t_u, u_u = t_s[src], u_s[src]
        up_u = up_s[src] if up_s is not None else None
        g0 = (nodes_g[:, None] * u + np.arange(u)).ravel()
        R_g = (s["rbase"] * np.repeat(s["rfactor"], u))[g0]
        tin_g = np.repeat(s["inlet"], u)[g0]
    Mu = len(t_u)
    R = R_g[0] if not np.count_nonzero(R_g != R_g[0]) else R_g.repeat(cnt_u)
    tin = tin_g[0] if not np.count_nonzero(tin_g != tin_g[0]) else tin_g.repeat(cnt_u)
    pdem = fast.demand_w(IDLE, TDP, u_u)
    tss_new = fast.steady_c(tin, pdem * up_u if up_u is not None else pdem, R)
    prev_tss = np.empty(Mu)
    prev_tss[1:] = tss_new[:-1]
    prev_tss[start_u] = s["tss"][g0]
    dur = np.empty(Mu)
    np.subtract(t_u[1:], t_u[:-1], out=dur[1:])
    dur[start_u] = t_u[start_u] - s["t0"][g0]
    on0 = s["gon"][g0]
    if up_u is None and on0.all():
        wts = dur
    else:
        prev_on = np.empty(Mu, dtype=bool)
        prev_on[1:] = True if up_u is None else up_u[:-1]
        prev_on[start_u] = on0
        wts = dur * prev_on
    lo, hi = float(prev_tss.min()), float(prev_tss.max())
    bins = prev_tss if 0.0 <= lo and hi < HIST else np.clip(prev_tss, 0.0, HIST - 1)
    s["hist"] += np.bincount(bins.astype(np.intp), weights=wts, minlength=HIST) * W
    lg = fast.log_decay(dur, fast.tau_s(R, C))
    s["T"][g0] = fast.grouped_segments_c(s["T"][g0], prev_tss, lg, start_u, cnt_u, last_u)
    s["t0"][g0] = t_u[last_u]
    s["tss"][g0] = tss_new[last_u]
    s["gon"][g0] = up_u[last_u] if up_u is not None else True
    return lo, hi, prev_tss, lg


def _kernel_replay(s: dict, nodes_g, cnt, start, t_s, u_s, up_s, u):  # replay.py's call site
    if u == 1:
        cnt_u, start_u, g0 = cnt, start, nodes_g
        R_g = (s["rbase"] * s["rfactor"])[g0]
        tin_g = s["inlet"][g0]
    else:
        cnt_u = np.repeat(cnt, u)
        start_u = cnt_u.cumsum() - cnt_u
        g0 = (nodes_g[:, None] * u + np.arange(u)).ravel()
        R_g = (s["rbase"] * np.repeat(s["rfactor"], u))[g0]
        tin_g = np.repeat(s["inlet"], u)[g0]
    Mu = len(t_s) * u
    prev_tss, lg, decay, G = np.empty(Mu), np.empty(Mu), np.empty(Mu), np.empty(len(g0))
    T0 = s["T"][g0]
    tail = np.empty(Mu, dtype=np.int64)
    lo, hi, nt = KR.replay_units(t_s, u_s, np.zeros(0, dtype=np.bool_) if up_s is None else up_s, up_s is not None,
                                 u, cnt, start, start_u, g0, R_g, tin_g, IDLE, TDP, C, W, HIST, s["tss"], s["t0"],
                                 s["gon"], s["hist"], prev_tss, lg, decay, G, -750.0, tail)
    tail = tail[:nt]  # the exponentials of the pairs that do not underflow only; the others' terms in decay
    c = np.expm1(lg[tail])
    np.negative(c, out=c)
    c *= prev_tss[tail]
    c *= np.exp(decay[tail])
    decay[tail] = c
    s["T"][g0] = np.exp(G) * T0 + np.add.reduceat(decay, start_u)
    return lo, hi, prev_tss, lg


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), u=st.sampled_from([1, 2, 8]), with_up=st.booleans(),
       hot=st.booleans(), same_r=st.booleans(), scale=st.sampled_from([0.01, 1.0, 30.0]))
def test_replay_kernel_is_the_numpy_replay_bit_for_bit(seed: int, u: int, with_up: bool, hot: bool,
                                                        same_r: bool, scale: float) -> None:
    """(``scale``: logs of minutes, hours or days, so that none, some or most pairs' decay to their unit's last
    pair underflows, which the call site takes as e^decay = +0 without computing it.)"""
    rng = np.random.default_rng(seed)
    n_nodes = int(rng.integers(1, 12))
    nodes_g = np.sort(rng.choice(n_nodes * 2, n_nodes, replace=False)).astype(np.int64)
    cnt = rng.integers(1, 13, n_nodes).astype(np.int64)
    ends = cnt.cumsum()
    start, lastpos = ends - cnt, ends - 1
    M = int(ends[-1])
    # each node's times in order, some repeated (zero durations: −0.0 logs)
    t_s = np.concatenate([np.sort(rng.integers(1, 8, c)).astype(np.float64) * rng.uniform(0.5, 2.0) * scale
                          for c in cnt])
    u_s = rng.choice([0.0, 0.3, 1.0], M)
    up_s = rng.random(M) < 0.8 if with_up else None
    N = n_nodes * 2
    state = {
        "rbase": rng.uniform(0.02, 0.09, N * u) if not same_r else np.full(N * u, 0.05),
        "rfactor": rng.uniform(0.9, 1.1, N) if not same_r else np.ones(N),
        "inlet": rng.uniform(-30.0, 40.0, N) if hot else np.full(N, 24.0),
        "tss": rng.uniform(20.0, 200.0 if hot else 90.0, N * u),
        "t0": rng.uniform(0.0, 1.0, N * u),
        "gon": rng.random(N * u) < 0.9,
        "T": rng.uniform(20.0, 90.0, N * u),
        "hist": rng.uniform(0.0, 5.0, HIST),
    }
    a = {k: v.copy() for k, v in state.items()}
    b = {k: v.copy() for k, v in state.items()}
    ra = _numpy_replay(a, nodes_g, cnt, start, lastpos, t_s, u_s, up_s, u)
    rb = _kernel_replay(b, nodes_g, cnt, start, t_s, u_s, up_s, u)
    assert ra[0] == rb[0] and ra[1] == rb[1]
    assert np.array_equal(ra[2], rb[2]) and np.array_equal(ra[3], rb[3])
    for k in state:
        assert np.array_equal(a[k], b[k]) and np.array_equal(np.signbit(a[k]), np.signbit(b[k])), k


def _numpy_peak_pairs(x, s0, c0, a_all, c_all, prev_tss):  # DeferredReplay._replay_units' peak before the kernel
    peak = -np.inf
    for j in range(int(c0.max())):  # the j-th pair of every such unit at once
        act = c0 > j
        idx = s0[act] + j
        x[act] = a_all[idx] * x[act] + c_all[idx] * prev_tss[idx]
        peak = max(peak, float(x[act].max()))
    return peak


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_units=st.integers(1, 9))
def test_peak_pairs_is_the_numpy_walk(seed: int, n_units: int) -> None:
    """``peak_pairs`` (each unit's pairs in order) against the numpy walk it replaced (the j-th pair of every
    unit at once): the same peak and last temperatures, bit for bit."""
    rng = np.random.default_rng(seed)
    c0 = rng.integers(1, 9, n_units).astype(np.int64)
    s0 = (c0.cumsum() - c0 + rng.integers(0, 3, n_units).cumsum()).astype(np.int64)  # gaps: other units' pairs
    n = int(s0[-1] + c0[-1]) + 2
    lg = -rng.exponential(2.0, n) * rng.choice([0.0, 1.0, 100.0], n)
    a_all, c_all = np.exp(lg), -np.expm1(lg)
    prev_tss = rng.uniform(20.0, 110.0, n)
    x0 = rng.uniform(20.0, 90.0, n_units)
    xa, xb = x0.copy(), x0.copy()
    want = _numpy_peak_pairs(xa, s0, c0, a_all, c_all, prev_tss)
    got = KR.peak_pairs(xb, s0, c0, a_all, c_all, prev_tss, -np.inf)
    assert got == want
    assert np.array_equal(xa, xb)


def _numpy_peak_cell(x, tin, R, P, dur, tau, peak):  # DeferredReplay._replay_cell_units' peak before the kernel
    for k in range(len(dur)):
        x = fast.step_c(x, fast.steady_c(tin, P[k], R), dur[k], tau)
        peak = max(peak, float(x.max()))
    return peak, x


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_units=st.integers(1, 20), n_seg=st.integers(1, 30),
       rows=st.integers(1, 40))
def test_peak_cell_is_the_numpy_steps(seed: int, n_units: int, n_seg: int, rows: int) -> None:
    """``peak_cell`` over blocks of ``rows`` segments (numpy's decay factors) against one numpy step per segment
    (``fast.step_c`` of ``fast.steady_c``): the same peak and temperatures, bit for bit."""
    rng = np.random.default_rng(seed)
    R = rng.uniform(0.02, 0.09, n_units)
    tau = fast.tau_s(R, C)
    tin = rng.uniform(20.0, 45.0, n_units)
    P = fast.demand_w(IDLE, TDP, rng.choice([0.0, 0.3, 1.0], n_seg + 1))
    dur = rng.exponential(0.05, n_seg) * rng.choice([0.0, 1.0, 10.0], n_seg)
    x0 = rng.uniform(20.0, 90.0, n_units)
    peak0 = float(x0.max())
    want, x_want = _numpy_peak_cell(x0.copy(), tin, R, P, dur, tau, peak0)
    x, peak = x0.copy(), peak0
    for k in range(0, n_seg, rows):  # replay.py's blocks
        fac = np.exp(np.divide.outer(dur[k:k + rows] * -3600.0, tau))
        peak = KR.peak_cell(x, tin, R, P, fac, k, peak)
    assert peak == want
    assert np.array_equal(x, x_want)


def test_replay_kernel_refuses_unit_groups_out_of_order() -> None:
    """The kernel's one pass takes the pairs in output order (the cumulative sum and the histogram's order):
    unit groups not one after another are refused, not summed in another order."""
    one = np.ones(2)
    cnt, start = np.array([1, 1], dtype=np.int64), np.array([0, 1], dtype=np.int64)
    out = [np.empty(2) for _ in range(4)]
    with pytest.raises(ValueError, match="running offsets"):
        KR.replay_units(one, one, np.zeros(0, dtype=np.bool_), False, 1, cnt, start, np.array([1, 0], dtype=np.int64),
                        np.array([0, 1], dtype=np.int64), one * 0.05, one * 30.0, IDLE, TDP, C, W, HIST,
                        np.full(2, 40.0), np.zeros(2), np.ones(2, dtype=np.bool_), np.zeros(HIST), *out, -750.0,
                        np.empty(2, dtype=np.int64))


def _numpy_group_pairs(nd, pe, st_p, in_cell, n_nodes, tk, ut, gon, u, n_busy, g, dbusy_k):
    """``DeferredReplay._replay_log``'s mask of the pairs in cells and ``_replay_pairs`` up to the units' replay,
    as numpy before the kernel (nd in int16, radix-sorted)."""
    pos = np.arange(len(nd))
    if in_cell is not None:
        keep = ~in_cell[nd]
        nd, pe, pos = nd[keep], pe[keep], pos[keep]
        st_p = st_p[keep] if st_p is not None else None
    if not len(nd):
        return None
    k = len(tk)
    n_pairs = len(nd)
    o = nd.argsort(kind="stable")
    per_node = np.bincount(nd, minlength=n_nodes)
    nodes_g = per_node.nonzero()[0]
    cnt = per_node[nodes_g]
    ends = cnt.cumsum()
    start = ends - cnt
    lastpos = ends - 1
    eid_s = pe[o]
    t_s = tk[eid_s]
    u_s = ut[eid_s]
    gon0 = gon[nodes_g * u]
    up_s = None
    if st_p is not None or not gon0.all():
        ar = np.arange(n_pairs)
        st_s = st_p[o] if st_p is not None else np.full(n_pairs, -1, dtype=np.int8)
        src = np.where(st_s >= 0, ar, 0)
        src[start] = start
        src = np.maximum.accumulate(src)
        st_src = st_s[src]
        up_s = np.where(st_src >= 0, st_src == 1, gon0.repeat(cnt)[src])
    b_s = u_s > 0.0
    if up_s is not None:
        b_s &= up_s
    pb = np.empty(n_pairs, dtype=bool)
    pb[1:] = b_s[:-1]
    pb[start] = n_busy[nodes_g] > 0.0
    d = b_s.view(np.int8) - pb.view(np.int8)
    dbusy_k += np.bincount(eid_s, weights=d, minlength=k) * float(g)
    busy_last = b_s[lastpos] * float(g)
    return pos[o], nodes_g, cnt, start, t_s, u_s, up_s, d, busy_last


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), u=st.sampled_from([1, 2, 8]), with_st=st.booleans(),
       cells=st.sampled_from(["none", "some", "all"]), all_on=st.booleans())
def test_group_pairs_is_the_numpy_grouping(seed: int, u: int, with_st: bool, cells: str, all_on: bool) -> None:
    """``group_pairs`` against the numpy mask, stable argsort, bincounts and running maximum it replaced, bit for
    bit: random logs of node arrays (each node at most once an entry; single-node entries may be changes of
    service), nodes in cells or not, in service or not when the log began, busy or not."""
    rng = np.random.default_rng(seed)
    n_nodes = int(rng.integers(1, 30))
    k = int(rng.integers(1, 40))
    arrs = [np.sort(rng.choice(n_nodes, int(rng.integers(1, n_nodes + 1)), replace=False)).astype(np.int64)
            for _ in range(k)]
    lens = np.array([len(a) for a in arrs])
    nd = np.concatenate(arrs)
    pe = np.arange(k, dtype=np.int32).repeat(lens)
    st_p = None
    if with_st:
        st_p = np.full(len(nd), -1, dtype=np.int8)
        single = np.flatnonzero(lens == 1)
        pos = (lens.cumsum() - lens)[single]
        st_p[pos] = rng.integers(-1, 2, len(pos))
    in_cell = None if cells == "none" else (rng.random(n_nodes) < 0.5 if cells == "some" else np.ones(n_nodes, bool))
    tk = np.sort(rng.uniform(0.0, 100.0, k))
    ut = rng.choice([0.0, 0.4, 1.0], k)
    gon = np.ones(n_nodes * u, dtype=bool) if all_on else rng.random(n_nodes * u) < 0.7
    g = 8
    n_busy = rng.choice([0.0, float(g)], n_nodes)
    dk0 = rng.integers(-5, 5, k).astype(np.float64)
    da, db = dk0.copy(), dk0.copy()
    want = _numpy_group_pairs(nd.astype(np.int16), pe, st_p, in_cell, n_nodes, tk, ut, gon, u, n_busy, g, da)
    got = KR.group_pairs(nd, pe, np.zeros(0, dtype=np.int8) if st_p is None else st_p, st_p is not None,
                         np.zeros(0, dtype=np.bool_) if in_cell is None else in_cell, n_nodes, tk, ut, gon, u,
                         n_busy, float(g), db)
    o, nodes_g, cnt, start, t_s, u_s, up_s, has_up, d, busy_last = got
    if want is None:
        assert len(o) == 0 and len(nodes_g) == 0
        assert np.array_equal(da, db) and np.array_equal(db, dk0)
        return
    for w, x in zip(want[:6], (o, nodes_g, cnt, start, t_s, u_s)):
        assert np.array_equal(w, x)
    assert has_up == (want[6] is not None)
    if has_up:
        assert np.array_equal(want[6], up_s)
    assert np.array_equal(want[7], d) and np.array_equal(want[8], busy_last)
    assert np.array_equal(da, db) and np.array_equal(np.signbit(da), np.signbit(db))


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_mark_entries_is_the_numpy_mask(seed: int) -> None:
    """``mark_entries`` against ``mark[nd[~skip[pe]]] = True`` (``DeferredReplay._cells``' nodes in other entries)."""
    rng = np.random.default_rng(seed)
    n_nodes, k = int(rng.integers(1, 30)), int(rng.integers(1, 40))
    lens = rng.integers(1, n_nodes + 1, k).astype(np.int64)
    nd = np.concatenate([rng.choice(n_nodes, c, replace=False) for c in lens]).astype(np.int64)
    pos = lens.cumsum() - lens
    pe = np.arange(k, dtype=np.int32).repeat(lens)
    skip = rng.random(k) < 0.6
    mark0 = rng.random(n_nodes) < 0.2
    want, got = mark0.copy(), mark0.copy()
    want[nd[~skip[pe]]] = True
    KR.mark_entries(nd, pos, lens, skip, got)
    assert np.array_equal(want, got)


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 3000))
def test_numpy_exponentials_are_elementwise(seed: int, n: int) -> None:
    """The replay takes numpy's ``np.exp`` and ``np.expm1`` of gathered subsets of the decay logs (the tail's
    pairs, the peak walks' hot units) where it took them of whole arrays: the values must not depend on an
    element's place in the array (numpy's SIMD loops and their remainders)."""
    rng = np.random.default_rng(seed)
    lg = -rng.exponential(rng.choice([0.01, 1.0, 50.0, 800.0]), n)
    pos = np.sort(rng.choice(n, int(rng.integers(1, n + 1)), replace=False))
    assert np.array_equal(np.exp(lg)[pos], np.exp(lg[pos]))
    assert np.array_equal(np.expm1(lg)[pos], np.expm1(lg[pos]))
