"""The replay kernel (twin/kernels_replay.py, issue 41) against the numpy replay it replaced
(``DeferredReplay._replay_units`` of twin 0.13, restated below), bit for bit, on random logs: one and several
units per node, with and without service flags, steady states inside and outside the histogram's range. CI
also runs this file with ``NUMBA_DISABLE_JIT=1`` (plain Python)."""

from __future__ import annotations

import numpy as np
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
    lo, hi = KR.replay_units(t_s, u_s, np.zeros(0, dtype=np.bool_) if up_s is None else up_s, up_s is not None, u,
                             cnt, start, start_u, g0, R_g, tin_g, IDLE, TDP, C, W, HIST, s["tss"], s["t0"], s["gon"],
                             s["hist"], prev_tss, lg, decay, G)
    contrib = np.expm1(lg)
    np.negative(contrib, out=contrib)
    contrib *= prev_tss
    contrib *= np.exp(decay, out=decay)
    s["T"][g0] = np.exp(G) * T0 + np.add.reduceat(contrib, start_u)
    return lo, hi, prev_tss, lg


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), u=st.sampled_from([1, 2, 8]), with_up=st.booleans(),
       hot=st.booleans(), same_r=st.booleans())
def test_replay_kernel_is_the_numpy_replay_bit_for_bit(seed: int, u: int, with_up: bool, hot: bool,
                                                        same_r: bool) -> None:
    rng = np.random.default_rng(seed)
    n_nodes = int(rng.integers(1, 12))
    nodes_g = np.sort(rng.choice(n_nodes * 2, n_nodes, replace=False)).astype(np.int64)
    cnt = rng.integers(1, 7, n_nodes).astype(np.int64)
    ends = cnt.cumsum()
    start, lastpos = ends - cnt, ends - 1
    M = int(ends[-1])
    # each node's times in order, some repeated (zero durations: −0.0 logs)
    t_s = np.concatenate([np.sort(rng.integers(1, 8, c)).astype(np.float64) * rng.uniform(0.5, 2.0) for c in cnt])
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
