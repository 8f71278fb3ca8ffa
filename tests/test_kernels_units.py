"""The fused update kernels (issue 41): ``twin.kernels_units.update_nodes`` against the sequence of kernel calls and
numpy statements ``GpuState._update_now`` made before it (settle the due silent crossings, bring the units to now,
apply their new conditions, compare the thermal caps), and ``twin.kernels.account_update`` against
``GpuState._account``, ``_refresh_tp`` and the speed-cap comparison as numpy (twin 0.14.0, restated below),
``kernels_units.wake_units`` against ``GpuState._wake``'s split and quick path, and ``kernels.it_fans_nodes``
against ``ITPower.refresh``'s capped path (its caps, node power and fans), on random states. Bit for bit: the same operations in the same order. CI also runs this file with
``NUMBA_DISABLE_JIT=1`` (plain Python)."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from twin import kernels as K
from twin import kernels_events as KE
from twin import kernels_units as KU

INF = math.inf
_E = np.empty(0)
_EB = np.empty(0, dtype=bool)
_NOPF = np.empty((6, 0))  # no node pools of other power figures (update_units's pf)
PRM = {"idle": 100.0, "tdp": 700.0, "C": 300.0, "slow": 89.0, "shut": 92.0, "pmin": 150.0, "alpha": 0.5,
       "ng_w": 3200.0, "ng_idle": 1600.0, "share": 0.3}


def _state(rng: np.random.Generator, n_nodes: int, u: int) -> dict[str, np.ndarray]:
    G = n_nodes * u
    t_next = np.where(rng.random(G) < 0.5, rng.uniform(0.5, 2.5, G), INF)
    return {
        "T": rng.uniform(20.0, 95.0, G), "tss": rng.uniform(20.0, 100.0, G), "t0": rng.uniform(0.0, 1.0, G),
        "tau": rng.uniform(5.0, 60.0, G), "gon": rng.random(G) < 0.9, "hist": rng.uniform(0.0, 5.0, 160),
        "engaged": rng.random(G) < 0.3, "speed": np.where(rng.random(G) < 0.5, 1.0, rng.uniform(0.3, 1.0, G)),
        "t_next": t_next, "kind": np.where(np.isfinite(t_next), 1, 0).astype(np.int8),
        "ucap": np.full(G, INF), "x_cap": rng.uniform(200.0, 700.0, G), "x_P": rng.uniform(200.0, 700.0, G),
        "x_sp": rng.uniform(0.3, 1.0, G), "x_tss": rng.uniform(60.0, 89.0, G), "x_ok": rng.random(G) < 0.7,
        "pw": rng.uniform(200.0, 800.0, G), "t_due": np.where(rng.random(G) < 0.5, t_next, INF),
        "traced": rng.random(G) < 0.2, "silent": (rng.random(G) < 0.6) & np.isfinite(t_next),
        "rbase": 0.092 * np.exp(0.05 * rng.normal(size=G)), "toff": rng.uniform(0.0, 3.0, G),
        "rfactor": rng.uniform(0.9, 1.2, n_nodes), "inlet": rng.uniform(18.0, 30.0, n_nodes),
        "down": (rng.random(n_nodes) < 0.15).astype(np.int32),
        "util": np.where(rng.random(n_nodes) < 0.2, 0.0, rng.uniform(0.0, 1.0, n_nodes)),
        "n_busy": np.where(rng.random(n_nodes) < 0.8, 8.0, 0.0), "n_capped": rng.uniform(0.0, 8.0, n_nodes),
        "n_spsum": rng.uniform(0.0, 8.0, n_nodes), "n_tp": rng.uniform(0.0, 8.0, n_nodes),
        "caps": np.where(rng.random(n_nodes) < 0.5, 1.0, rng.uniform(0.3, 1.0, n_nodes)),
        "oth_n": np.where(rng.random(n_nodes) < 0.5, 1.0, rng.uniform(0.3, 1.0, n_nodes)),
        "it_caps": np.where(rng.random(n_nodes) < 0.5, INF, rng.uniform(300.0, 700.0, n_nodes)),
        "acc": rng.uniform(0.0, 100.0, 4), "tot": rng.uniform(0.0, 100.0, 4),
    }


# the units' float state in one block (CoolingArrays.ublk): each name's row
_ROW = {"T": KU.R_T, "tss": KU.R_TSS, "t0": KU.R_T0, "tau": KU.R_TAU, "speed": KU.R_SPEED, "t_next": KU.R_NEXT,
        "t_due": KU.R_DUE, "x_P": KU.R_XP, "x_sp": KU.R_XSP, "x_tss": KU.R_XTSS, "pw": KU.R_PW}


def _block(s: dict[str, np.ndarray]) -> np.ndarray:
    """Move the state's per-unit float arrays into one padded block as the model holds them (``s``' entries
    become views of its rows); the padding is inf (never a unit's, never written: the tests check)."""
    n = len(s["T"])
    blk = np.full((KU.N_ROWS, n + 8), INF)
    for k, r in _ROW.items():
        blk[r, :n] = s[k]
        s[k] = blk[r, :n]
    return blk


# the accounts in one block (CoolingArrays.nblk): each name's row; the padding a sentinel no write leaves as it is
_AROW = {"n_busy": KU.A_BUSY, "n_capped": KU.A_CAPPED, "n_spsum": KU.A_SPSUM, "n_tp": KU.A_TP, "acc": KU.A_ACC,
         "tot": KU.A_TOT}
_APAD = -7.25


def _ablock(s: dict[str, np.ndarray]) -> np.ndarray:
    """Move the state's per-node accounts and the four totals into one padded block as the model holds them
    (``s``' entries become views of its rows: the totals the first four elements of theirs)."""
    n = len(s["n_busy"])
    blk = np.full((len(_AROW), max(n, 4) + 8), _APAD)
    for k, r in _AROW.items():
        blk[r, :len(s[k])] = s[k]
        s[k] = blk[r, :len(s[k])]
    return blk


# the units' bool state in one block (CoolingArrays.bblk): each name's row; the padding True
_BROW = {"gon": KU.B_GON, "engaged": KU.B_ENG, "silent": KU.B_SILENT, "x_ok": KU.B_XOK}


def _bblock(s: dict[str, np.ndarray]) -> np.ndarray:
    """Move the state's per-unit bool arrays into one padded block as the model holds them (``s``' entries become
    views of its rows); the padding True (never a unit's, never written: the tests check)."""
    n = len(s["gon"])
    blk = np.ones((len(_BROW), n + 8), dtype=bool)
    for k, r in _BROW.items():
        blk[r, :n] = s[k]
        s[k] = blk[r, :n]
    return blk


def _apad_kept(blk: np.ndarray, n: int) -> bool:
    """No kernel wrote the accounts block's padding (past ``n`` nodes, past the four totals)."""
    return bool(np.all(blk[:KU.A_ACC, n:] == _APAD) and np.all(blk[KU.A_ACC:, 4:] == _APAD))


def test_unit_rows_are_the_models() -> None:
    """The kernels' rows of the blocks are the model's (``twin.model.cooling.arrays``), one row per name."""
    from twin.model.cooling import arrays as A
    names = ("R_T", "R_TSS", "R_T0", "R_TAU", "R_SPEED", "R_NEXT", "R_DUE", "R_XP", "R_XSP", "R_XTSS", "R_PW", "N_ROWS")
    assert [getattr(A, k) for k in names] == [getattr(KU, k) for k in names]
    assert sorted(_ROW.values()) == list(range(KU.N_ROWS))
    anames = ("A_BUSY", "A_CAPPED", "A_SPSUM", "A_TP", "A_ACC", "A_TOT")
    assert [getattr(A, k) for k in anames] == [getattr(KU, k) for k in anames] == [getattr(K, k) for k in anames]
    assert sorted(_AROW.values()) == list(range(A.N_AROWS))
    bnames = ("B_GON", "B_ENG", "B_SILENT", "B_XOK")
    assert [getattr(A, k) for k in bnames] == [getattr(KU, k) for k in bnames]
    assert sorted(_BROW.values()) == list(range(A.N_BROWS))


def _nodes(rng: np.random.Generator, n_nodes: int, contiguous: bool) -> np.ndarray:
    k = int(rng.integers(1, n_nodes + 1))
    nodes = (np.arange(k) + int(rng.integers(0, n_nodes - k + 1))) if contiguous else \
        np.sort(rng.choice(n_nodes, size=k, replace=False))
    return nodes.astype(np.int64)


def _same(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> None:
    for k in a:
        assert np.array_equal(a[k], b[k], equal_nan=a[k].dtype.kind == "f"), k


def _ref_update_now(s: dict[str, np.ndarray], nodes: np.ndarray, gi: np.ndarray, u: int, g: float, w: float,
                    now: float, eps_h: float, settle: bool, t_acc: float, pc: np.ndarray, hot: bool, silent_on: bool,
                    heat: int, oth: bool, nout: np.ndarray, uout: np.ndarray) -> tuple:
    """``GpuState._update_now`` up to the thermal cap's comparison as twin 0.14.0 made it: ``lazy.settle_in`` (the
    split, ``GpuState.integrate``, ``settle_units``, the speeds written as ``put_changed_at``), ``advance_units``,
    per node ``down_count[nsl] == 0`` and ``node_util[nsl]``, ``update_units`` and ``any_ne_at``."""
    cleared = n_sil = 0
    tmax = -INF
    tp_t = tp_dv = ts = dP = _E
    e_wh = dP_sum = 0.0
    ch = np.empty(0, dtype=np.int64)
    ocap = s["x_cap"] if silent_on else _E
    oth_n = s["oth_n"] if oth else _E
    if settle:
        idx, cleared = KU.silent_due(gi, now + eps_h, s["silent"], s["t_next"], True)
        if len(idx):
            dt = now - t_acc
            if dt > 0:
                s["acc"] += s["tot"] * dt
                t_acc = now
            tmax, n_sil, snodes, new_caps, _, tp_t, tp_dv, ts, dP, e_wh, dP_sum = KU.settle_units(
                idx, now, u, w, _block(s), _bblock(s), s["hist"], s["kind"], ocap, s["ucap"], _ablock(s), s["caps"],
                oth_n)
            ch = KE.put_changed_at(s["caps"], snodes, new_caps)
    t2 = KU.advance_units(gi, np.array([now]), s["T"], s["tss"], s["t0"], s["tau"], s["gon"], s["hist"], w)
    tmax = max(tmax, t2)
    up = s["down"][nodes] == 0
    util = s["util"][nodes]
    def x(k: str) -> np.ndarray:  # the stash while silent crossings are on, else empty
        return s[k] if silent_on else (_EB if s[k].dtype == bool else _E)

    short, t_min = KU.update_units(
        nodes, u, g, w, now, up, util, pc, s["rfactor"], s["inlet"], s["rbase"], s["toff"], PRM["idle"], PRM["tdp"],
        PRM["C"], PRM["slow"], PRM["shut"], PRM["pmin"], PRM["alpha"], s["T"], s["tss"], s["tau"], s["gon"],
        s["engaged"], s["speed"], s["t_next"], s["kind"], hot, s["ucap"], silent_on, ocap, x("x_P"), x("x_sp"),
        x("x_tss"), x("x_ok"), x("pw"), x("t_due"), x("traced"), heat, PRM["ng_w"], PRM["ng_idle"], PRM["share"],
        _NOPF, nout, uout)
    ne = KE.any_ne_at(s["it_caps"], nodes, nout[6])
    return (t_acc, cleared, n_sil, tmax, tp_t, tp_dv, ts, dP, e_wh, dP_sum, ch, up, short, t_min, ne)


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), u=st.sampled_from([1, 4, 8]), hot=st.booleans(), silent_on=st.booleans(),
       settle=st.booleans(), with_pc=st.booleans(), contiguous=st.booleans(), heat=st.sampled_from([0, 1, 2, 3]),
       oth=st.booleans(), t_acc=st.sampled_from([0.5, 2.0]), rows=st.booleans())
def test_update_nodes_is_the_sequence_it_replaces(seed: int, u: int, hot: bool, silent_on: bool, settle: bool,
                                                  with_pc: bool, contiguous: bool, heat: int, oth: bool,
                                                  t_acc: float, rows: bool) -> None:
    rng = np.random.default_rng(seed)
    n_nodes = 12
    s = _state(rng, n_nodes, u)
    settle = settle and silent_on  # (silent crossings exist only while they are on)
    nodes = _nodes(rng, n_nodes, contiguous)
    gi = (nodes[:, None] * u + np.arange(u)).ravel()
    k = len(nodes)
    pc = rng.uniform(200.0, 800.0, k) if with_pc else _E
    now, eps_h = 2.0, 1e-9
    g, w = float(u * (8 // u)), float(8 // u)
    blk = _block(s)
    nblk = _ablock(s)
    bblk = _bblock(s)
    ref = {kk: v.copy() for kk, v in s.items()}
    r_nout, r_uout = np.zeros((8, k)), np.zeros((5, k * u))  # (rows a kernel leaves unwritten: 0 in both)
    want = _ref_update_now(ref, nodes, gi, u, g, w, now, eps_h, settle, t_acc, pc, hot, silent_on, heat, oth,
                           r_nout, r_uout)
    # (without the trace's rows: a power row, written where some unit needs capping, and the scratch row)
    nout, uout = np.zeros((8, k)), np.zeros((5 if rows else 2, k * u))
    up = np.empty(k, dtype=np.bool_)
    prm = np.array([PRM[k] for k in ("idle", "tdp", "C", "slow", "shut", "pmin", "alpha", "ng_w", "ng_idle",
                                     "share")])
    def x(kk: str) -> np.ndarray:
        return s[kk] if silent_on else (_EB if s[kk].dtype == bool else _E)

    got = KU.update_nodes(  # (it builds gi, the units of nodes, itself)
        nodes, now, eps_h, settle, t_acc, s["down"], s["util"], u, g, w, pc, s["rfactor"], s["inlet"],
        s["rbase"], s["toff"], prm, blk, bblk, s["hist"], s["kind"], hot, s["ucap"], silent_on,
        s["x_cap"] if silent_on else _E, x("traced"), heat, nblk, s["caps"], s["oth_n"] if oth else _E, s["it_caps"],
        _NOPF, nout, uout, up)
    # the settling's five arrays come packed in one (tp_t, tp_dv, ts, dP, the changed nodes as floats), ``up``
    # written into the argument
    t_acc_, cleared, n_sil, tmax, res, ntp, m, e_wh, dP_sum, short, t_min, ne = got
    z = 2 * ntp + 2 * m
    got = (t_acc_, cleared, n_sil, tmax, res[:ntp], res[ntp:2 * ntp], res[2 * ntp:2 * ntp + m], res[2 * ntp + m:z],
           e_wh, dP_sum, res[z:].astype(np.int64), up, short, t_min, ne)
    assert len(got) == len(want) and res.dtype == np.float64 and np.array_equal(res[z:], got[10])
    for a, b in zip(got, want):
        if isinstance(b, np.ndarray):
            assert a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)
        else:
            assert a == b or (a != a and b != b), (a, b)
    assert np.array_equal(nout, r_nout, equal_nan=True)
    if rows:
        assert np.array_equal(uout, r_uout, equal_nan=True)
    else:
        assert np.array_equal(uout[1], r_uout[4], equal_nan=True)
        if not short:
            assert np.array_equal(uout[0], r_uout[0], equal_nan=True)
    _same(s, ref)  # (without silent_on: the stash's rows, passed, untouched)
    assert np.all(blk[:, len(s["T"]):] == INF) and _apad_kept(nblk, n_nodes) and np.all(bblk[:, len(s["T"]):])


def _ref_account(s: dict[str, np.ndarray], nodes: np.ndarray, nout: np.ndarray, up: np.ndarray, now: float,
                 t_acc: float, hot: bool, tp_mode: int, speeds: list[np.ndarray], slow: bool, n_hot: bool
                 ) -> tuple[float, float, np.ndarray, bool, bool]:
    """``GpuState._account``, ``_refresh_tp`` (``Cluster.node_speed``) and the speed-cap comparison of twin 0.14.0."""
    dt = now - t_acc
    if dt > 0:
        s["acc"] += s["tot"] * dt
        t_acc = now
    busy = nout[2]
    d_busy = K.account_nodes(nodes, busy, nout[4], nout[5], s["n_busy"], s["n_capped"], s["n_spsum"], s["tot"], hot)
    rec = 0.0
    if tp_mode == 1:
        sp = np.ones(len(nodes))
        if slow:
            for arr in speeds:
                np.minimum(sp, arr[nodes], out=sp)
        tp = s["n_busy"][nodes] * sp
        delta = float((tp - s["n_tp"][nodes]).sum())
        if delta != 0.0:
            s["n_tp"][nodes] = tp
            s["tot"][3] += delta
            rec = delta
    elif d_busy != 0.0:
        s["n_tp"][nodes] = busy
        s["tot"][3] += d_busy
        rec = d_busy
    any_down = bool(np.count_nonzero(~up))
    ch = np.empty(0, dtype=np.int64)
    rose = False
    if n_hot:
        caps = s["caps"]
        changed = up & (caps[nodes] != nout[3])
        if np.count_nonzero(changed):
            ch = nodes[changed]
            new_sp = nout[3][changed]
            rose = bool(np.count_nonzero(caps[ch] < new_sp))
            caps[ch] = new_sp
    return t_acc, rec, ch, rose, any_down


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), hot=st.booleans(), tp_mode=st.sampled_from([0, 1]), slow=st.booleans(),
       n_src=st.sampled_from([0, 1, 2, 3]), n_hot=st.booleans(), contiguous=st.booleans(),
       t_acc=st.sampled_from([0.5, 2.0]))
def test_account_update_is_the_python_path(seed: int, hot: bool, tp_mode: int, slow: bool, n_src: int,
                                           n_hot: bool, contiguous: bool, t_acc: float) -> None:
    rng = np.random.default_rng(seed)
    n_nodes = 12
    s = _state(rng, n_nodes, 1)
    nodes = _nodes(rng, n_nodes, contiguous)
    k = len(nodes)
    nout = np.empty((8, k))
    nout[2] = np.where(rng.random(k) < 0.7, 8.0, 0.0)
    nout[3] = np.where(rng.random(k) < 0.5, s["caps"][nodes], rng.uniform(0.3, 1.0, k))
    nout[4] = rng.uniform(0.0, 8.0, k)
    nout[5] = rng.uniform(0.0, 8.0, k)
    up = rng.random(k) < 0.85
    speeds = [np.where(rng.random(n_nodes) < 0.5, 1.0, rng.uniform(0.3, 1.0, n_nodes)) for _ in range(n_src)]
    ref = {kk: v.copy() for kk, v in s.items()}
    want = _ref_account(ref, nodes, nout, up, 2.0, t_acc, hot, tp_mode, speeds, slow, n_hot)
    if n_src <= 2:  # (as GpuState passes them: up to two sources' arrays, else their minimum per node)
        sp_a = speeds[0] if n_src else _E
        sp_b = speeds[1] if n_src > 1 else _E
        sp_n = _E
    else:
        sp_a = sp_b = _E
        sp_n = np.ones(k)
        if slow:
            for arr in speeds:
                np.minimum(sp_n, arr[nodes], out=sp_n)
    nblk = _ablock(s)
    got = K.account_update(nodes, nout, up, 2.0, t_acc, hot, tp_mode, slow, sp_a, sp_b, sp_n, nblk, n_hot, s["caps"])
    assert got[0] == want[0] and got[1] == want[1] and got[3] == want[3] and got[4] == want[4]
    assert got[2].dtype == want[2].dtype and np.array_equal(got[2], want[2])
    _same(s, ref)
    assert _apad_kept(nblk, n_nodes)


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), u=st.sampled_from([1, 4, 8]), silent_on=st.booleans(), oth=st.booleans(),
       t_acc=st.sampled_from([0.5, 2.0]))
def test_wake_units_is_the_sequence_it_replaces(seed: int, u: int, silent_on: bool, oth: bool, t_acc: float) -> None:
    rng = np.random.default_rng(seed)
    s = _state(rng, 10, u)
    s["t_due"] = np.where(rng.random(len(s["t_due"])) < 0.3, INF, s["t_next"])
    s["kind"] = np.where(np.isfinite(s["t_next"]), rng.choice([1, 2], size=len(s["kind"]), p=[0.8, 0.2]),
                         0).astype(np.int8)
    if not silent_on:  # (t_due is t_next while silent crossings are off: the kernel reads t_next's row)
        s["t_due"] = s["t_next"].copy()
    blk = _block(s)
    nblk = _ablock(s)
    bblk = _bblock(s)
    now, eps_h = 2.0, 1e-9
    w = float(8 // u)
    ref = {kk: v.copy() for kk, v in s.items()}
    # GpuState._wake and LazyCrossings.settle's arithmetic as twin 0.14.0 made them
    due = np.flatnonzero(ref["t_due"] <= now + eps_h)
    r_settle: tuple = ()
    r_acc = t_acc
    if len(due) and silent_on:
        quick = (ref["kind"][due] == 1) & ref["x_ok"][due]
        if np.count_nonzero(quick):
            q = due[quick]
            ref["t_next"][q] = np.minimum(ref["t_next"][q], now)
            if now - r_acc > 0:
                ref["acc"] += ref["tot"] * (now - r_acc)
                r_acc = now
            r_settle = KU.settle_units(
                q, now, u, w, _block(ref), _bblock(ref), ref["hist"], ref["kind"], ref["x_cap"], ref["ucap"],
                _ablock(ref), ref["caps"], ref["oth_n"] if oth else _E)
            due = due[~quick]
    got = KU.wake_units(now, eps_h, silent_on, t_acc, u, w, blk, bblk, s["hist"], s["kind"], s["x_cap"], s["ucap"],
                        nblk, s["caps"], s["oth_n"] if oth else _E)
    assert np.array_equal(got[0], due) and got[1] == r_acc
    res, ng, ntp, m = got[4:8]  # settle_units' seven arrays packed in one (the nodes as floats)
    assert res.dtype == np.float64 and len(res) == 3 * ng + 2 * ntp + 2 * m
    if r_settle:
        tmax, n_sil, nodes, new_caps, it_caps, tp_t, tp_dv, ts, dP, e_wh, dP_sum = r_settle
        assert got[2] == n_sil and got[3] == tmax and got[8] == e_wh and got[9] == dP_sum
        z = 3 * ng + 2 * ntp
        parts = (res[:ng].astype(np.int64), res[ng:2 * ng], res[2 * ng:3 * ng], res[3 * ng:3 * ng + ntp],
                 res[3 * ng + ntp:z], res[z:z + m], res[z + m:])
        for a, b in zip(parts, (nodes, new_caps, it_caps, tp_t, tp_dv, ts, dP)):
            assert a.dtype == b.dtype and np.array_equal(a, b)
    else:
        assert got[2] == 0 and ng == ntp == m == 0 and len(res) == 0
    _same(s, ref)
    assert np.all(blk[:, len(s["T"]):] == INF)


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), slow=st.booleans(), n_src=st.sampled_from([0, 1, 2]),
       contiguous=st.booleans(), same=st.booleans())
def test_refresh_tp_is_the_numpy_path(seed: int, slow: bool, n_src: int, contiguous: bool, same: bool) -> None:
    rng = np.random.default_rng(seed)
    s = _state(rng, 12, 1)
    nodes = _nodes(rng, 12, contiguous)
    speeds = [np.where(rng.random(12) < 0.5, 1.0, rng.uniform(0.3, 1.0, 12)) for _ in range(n_src)]
    sp = np.ones(len(nodes))  # GpuState._refresh_tp with Cluster.node_speed, twin 0.14.0
    if slow:
        for arr in speeds:
            np.minimum(sp, arr[nodes], out=sp)
    if same:  # nothing changed: no write
        s["n_tp"][nodes] = s["n_busy"][nodes] * sp
    ref = {k: v.copy() for k, v in s.items()}
    tp = ref["n_busy"][nodes] * sp
    delta = float((tp - ref["n_tp"][nodes]).sum())
    if delta != 0.0:
        ref["n_tp"][nodes] = tp
        ref["tot"][3] += delta
    got = K.refresh_tp(nodes, slow, speeds[0] if n_src else _E, speeds[1] if n_src > 1 else _E, _E, s["n_busy"],
                       s["n_tp"], s["tot"])
    assert got == delta
    _same(s, ref)


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_src=st.sampled_from([0, 1, 2]), fans=st.booleans(), common=st.booleans(),
       short=st.booleans(), some_down=st.booleans())
def test_it_fans_nodes_is_the_sequence_it_replaces(seed: int, n_src: int, fans: bool, common: bool, short: bool,
                                                   some_down: bool) -> None:
    """``ITPower.refresh``'s capped path of twin 0.14.0: ``min_cap`` (``minimum_at`` per source), ``it_nodes``,
    then ``npw[idx] += FanLaw.power_w(...)`` (``fan_nodes``); with every node in service, the site total
    ``np.add.reduce(npw)`` (twin 0.16.0, after the kernel; arrays of up to 200 nodes: the pairwise split)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 200))
    idx = np.sort(rng.choice(n, size=int(rng.integers(0, n + 1)), replace=False)).astype(np.int64)
    k = len(idx)
    util_all = rng.choice([0.0, 1.0, 0.37, 0.5], n) * rng.choice([1.0, rng.uniform()], n)
    srcs = [np.where(rng.random(n) < 0.4, INF, rng.uniform(0.0, 900.0, n)) for _ in range(n_src)]
    gpus, idle, tdp, ng0, slope = 8.0, 100.0, 700.0, 1600.0, float(rng.choice([0.0, 1600.0]))
    p = np.array([45.0, 20.0, 0.2, 6.0, 150.0, 1600.0, 3200.0, 8 * 600.0, 800.0, 10200.0, 25.0, 150.0])
    inlet = rng.uniform(10.0, 60.0, n)
    healthy = (rng.integers(0, 7, n) if short else np.full(n, 6)).astype(np.float64)
    down = (rng.random(n) < 0.2).astype(np.int32) if some_down else np.zeros(n, dtype=np.int32)
    util_s, stated = (float(rng.choice([0.0, 0.3, 1.0])), float(rng.uniform(0.0, 100.0))) if common else (0.0, 0.0)
    npw0, node_w0 = rng.uniform(0.0, 1e4, n), rng.uniform(0.0, 100.0, n)
    r_npw, r_node_w = npw0.copy(), node_w0.copy()
    cap = np.full(k, INF)
    for arr in srcs:
        KE.minimum_at(cap, arr, idx)
    K.it_nodes(idx, util_all, cap, gpus, idle, tdp, ng0, slope, r_npw)
    r_top, r_total = -1.0, 0.0
    if fans:
        out = np.empty(k)
        r_top, r_total = K.fan_nodes(idx, util_s, _E if common else util_all[idx], stated, inlet, healthy, short,
                                     down, not some_down, p, r_node_w, out)
        r_npw[idx] += out
    npw, node_w = npw0.copy(), node_w0.copy()
    top, total, site = K.it_fans_nodes(idx, util_all, srcs[0] if n_src else _E, srcs[1] if n_src > 1 else _E, gpus,
                                       idle, tdp, ng0, slope, npw, fans, util_s, common, stated, inlet, healthy, short,
                                       down, not some_down, p, node_w, not some_down)
    assert (top, total) == (r_top, r_total)
    assert np.array_equal(npw, r_npw) and np.array_equal(node_w, r_node_w)
    # with every node in service, the site total of twin 0.16's refresh after it: float(np.add.reduce(npw))
    assert site == float(np.add.reduce(r_npw)) if not some_down else math.isnan(site)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), u=st.sampled_from([1, 8]), hot=st.booleans(), silent_on=st.booleans(),
       with_pc=st.booleans(), heat=st.sampled_from([0, 1, 2, 3]))
def test_update_units_takes_each_nodes_pool_figures(seed: int, u: int, hot: bool, silent_on: bool, with_pc: bool,
                                                   heat: int) -> None:
    """Node pools of other power figures (issue 52): with ``pf`` each node's steady states, caps, speeds, crossings
    and air heat are those of the kernel run with its own pool's figures as the scalars (excludes the hall's
    scalar figures for every node, and a row of ``pf`` read for the wrong figure: the two pools differ in all)."""
    rng = np.random.default_rng(seed)
    n_nodes, split = 12, 5
    s = _state(rng, n_nodes, u)
    s["inlet"] = rng.uniform(30.0, 45.0, n_nodes)  # warm enough that some units cap (the throttling branch)
    figs = [(100.0, 700.0, 150.0, 0.5, 3200.0, 1600.0), (150.0, 930.0, 200.0, 0.8, 4500.0, 2250.0)]
    pf = np.empty((6, n_nodes))
    pf[:, :split] = np.asarray(figs[0])[:, None]
    pf[:, split:] = np.asarray(figs[1])[:, None]
    nodes = np.arange(n_nodes, dtype=np.int64)
    pc = rng.uniform(200.0, 800.0, n_nodes) if with_pc else _E
    if with_pc:
        pc[[0, split]] = INF
    g, w, now = float(u * (8 // u)), float(8 // u), 2.0
    up = s["down"] == 0
    up[[0, split]] = True
    util = s["util"].copy()
    util[[0, split]] = 1.0  # a node of each pool at full load: each pool's run takes the throttling branch
    s["inlet"][[0, split]] = 45.0  # (in the warmest inlet: 700 W on the coolest unit's R then passes the slowdown)

    def run(st_: dict[str, np.ndarray], sel: np.ndarray, f: tuple[float, ...], pf_: np.ndarray
            ) -> tuple[bool, float, np.ndarray, np.ndarray]:
        k = len(sel)
        nout, uout = np.zeros((8, k)), np.zeros((5, k * u))
        def x(kk: str) -> np.ndarray:
            return st_[kk] if silent_on else (_EB if st_[kk].dtype == bool else _E)
        short, t_min = KU.update_units(
            sel, u, g, w, now, up[sel], util[sel], pc[sel] if with_pc else _E, st_["rfactor"], st_["inlet"],
            st_["rbase"], st_["toff"], f[0], f[1], PRM["C"], PRM["slow"], PRM["shut"], f[2], f[3], st_["T"],
            st_["tss"], st_["tau"], st_["gon"], st_["engaged"], st_["speed"], st_["t_next"], st_["kind"], hot,
            st_["ucap"], silent_on, st_["x_cap"] if silent_on else _E, x("x_P"), x("x_sp"), x("x_tss"), x("x_ok"),
            x("pw"), x("t_due"), x("traced"), heat, f[4], f[5], PRM["share"], pf_, nout, uout)
        return short, t_min, nout, uout

    ref = {kk: v.copy() for kk, v in s.items()}
    sh, tm, nout, uout = run(s, nodes, figs[0], pf)  # (the scalars are pool 0's, pf overrides them)
    a, b = nodes[:split], nodes[split:]
    sh_a, tm_a, no_a, uo_a = run(ref, a, figs[0], _NOPF)
    sh_b, tm_b, no_b, uo_b = run(ref, b, figs[1], _NOPF)
    assert not sh and not sh_a and not sh_b and tm == min(tm_a, tm_b)
    assert np.array_equal(nout, np.hstack([no_a, no_b]), equal_nan=True)
    assert np.array_equal(uout, np.hstack([uo_a, uo_b]), equal_nan=True)
    _same(s, ref)
