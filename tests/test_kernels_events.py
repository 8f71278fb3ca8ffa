"""The per-event bookkeeping kernels (twin/kernels_events.py, issue 41) against the numpy statements they
replace, on random arrays with infinities, NaNs, repeated values and repeated indices. CI also runs this file
with ``NUMBA_DISABLE_JIT=1`` (plain Python)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from twin import kernels_events as KE

INF = np.inf

_vals = st.sampled_from([0.0, 0.5, 1.0, 250.0, np.inf, -np.inf, np.nan])


@st.composite
def _case(draw: st.DrawFn, unique: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = draw(st.integers(1, 40))
    a = np.array(draw(st.lists(_vals, min_size=n, max_size=n)))
    k = draw(st.integers(0, n if unique else 2 * n))
    if unique:
        idx = np.array(draw(st.permutations(range(n)))[:k], dtype=np.int64)
    else:
        idx = np.array(draw(st.lists(st.integers(0, n - 1), min_size=k, max_size=k)), dtype=np.int64)
    v = np.array(draw(st.lists(_vals, min_size=k, max_size=k)))
    return a, idx, v


@settings(max_examples=300, deadline=None)
@given(c=_case())
def test_any_ne_at_is_numpy(c: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
    a, idx, v = c
    assert KE.any_ne_at(a, idx, v) == bool(np.any(a[idx] != v))


@settings(max_examples=300, deadline=None)
@given(c=_case(unique=True))
def test_put_finite_delta_is_numpy(c: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
    a, idx, v = c
    want = a.copy()
    before = int(np.isfinite(want[idx]).sum())
    want[idx] = v
    delta = int(np.isfinite(want[idx]).sum()) - before
    got = a.copy()
    assert KE.put_finite_delta(got, idx, v) == delta
    assert np.array_equal(got, want, equal_nan=True)


def test_put_finite_delta_counts_a_repeated_index_twice() -> None:
    a = np.array([np.inf, 1.0])
    assert KE.put_finite_delta(a, np.array([0, 0, 1]), np.array([5.0, 6.0, np.inf])) == 2 - 1
    assert a.tolist() == [6.0, np.inf]


@settings(max_examples=300, deadline=None)
@given(c=_case(unique=True))
def test_put_changed_at_is_numpy(c: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
    a, idx, v = c
    want = a.copy()
    ch_want = idx[want[idx] != v]
    if len(ch_want):
        want[idx] = v
    got = a.copy()
    ch = KE.put_changed_at(got, idx, v)
    assert ch.dtype == idx.dtype and ch.tolist() == ch_want.tolist()
    assert np.array_equal(got, want, equal_nan=True)


def test_put_changed_at_writes_nothing_when_nothing_changed() -> None:
    a = np.array([1.0, -0.0, 3.0])
    ch = KE.put_changed_at(a, np.array([1, 2]), np.array([0.0, 3.0]))  # 0.0 == -0.0: no change, no write
    assert len(ch) == 0 and np.signbit(a[1])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.integers(0, 3000), max_size=40), min_size=1, max_size=4))
def test_sorted_union_is_numpy_unique(parts: list[list[int]]) -> None:
    arrays = [np.array(p, dtype=np.int64) for p in parts]
    got, want = KE.sorted_union(arrays), np.unique(np.concatenate(arrays))
    assert got.dtype == want.dtype and got.tolist() == want.tolist()
    if len(arrays) == 2:
        assert got.tolist() == np.union1d(arrays[0], arrays[1]).tolist()


@settings(max_examples=200, deadline=None)
@given(st.lists(_vals, max_size=12), st.integers(0, 5), st.integers(0, 3))
def test_put_steps_is_the_numpy_record(dv: list[float], k: int, off: int) -> None:
    # LazyCrossings._record_power's statements before: if np.count_nonzero(dP): buffers[k:k+m] = ts, dP; then now, −Σ
    m = len(dv)
    src = np.concatenate([np.full(off, 7.0), np.arange(m, dtype=np.float64) * 0.5, np.array(dv)])  # times, changes
    ts, dP = src[off:off + m], src[off + m:]
    bt, bv = np.full(k + m + 3, -1.0), np.full(k + m + 3, -1.0)
    wt, wv = bt.copy(), bv.copy()
    want = -1
    if np.count_nonzero(dP):
        wt[k:k + m], wv[k:k + m] = ts, dP
        wt[k + m], wv[k + m] = 9.0, -2.5
        want = k + m + 1
    got = KE.put_steps(bt, bv, k, src, off, src, off + m, m, 9.0, -2.5)
    assert got == want
    np.testing.assert_array_equal(bt, wt)
    np.testing.assert_array_equal(bv, wv)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-1, 2), min_size=1, max_size=20), st.data())
def test_all_eq_at_is_numpy(gid: list[int], data: st.DataObject) -> None:
    a = np.array(gid, dtype=np.int64)
    idx = np.array(data.draw(st.lists(st.integers(0, len(gid) - 1), max_size=12)), dtype=np.int64)
    x = data.draw(st.integers(-1, 2))
    assert KE.all_eq_at(a, idx, x) == (not np.count_nonzero(a[idx] != x))


@settings(max_examples=200, deadline=None)
@given(st.sets(st.integers(0, 300), max_size=80), st.sets(st.integers(0, 300), max_size=80), st.booleans())
def test_union2_merge_is_numpy_union1d(a: set[int], b: set[int], shuffle: bool) -> None:
    # the model's case: two strictly increasing node lists (merged in one pass); shuffled: the sorted fallback
    x, y = np.array(sorted(a), dtype=np.int64), np.array(sorted(b), dtype=np.int64)
    if shuffle:
        x = x[::-1].copy()
    got, want = KE.union2(x, y), np.union1d(x, y)
    assert got.dtype == want.dtype and got.tolist() == want.tolist()
    assert KE.sorted_union([x, y]).tolist() == want.tolist()


@settings(max_examples=300, deadline=None)
@given(c=_case(), init=_vals)
def test_minimum_at_is_numpy_minimum(c: tuple[np.ndarray, np.ndarray, np.ndarray], init: float) -> None:
    a, idx, _ = c
    out = np.full(len(idx), init)
    want = np.minimum(out, a[idx])
    KE.minimum_at(out, a, idx)
    assert np.array_equal(out, want, equal_nan=True)


@settings(max_examples=100, deadline=None)
@given(nodes=st.lists(st.integers(0, 5000), max_size=30), u=st.sampled_from([1, 2, 4, 8]))
def test_unit_indices_are_numpy(nodes: list[int], u: int) -> None:
    a = np.array(nodes, dtype=np.int64)
    got, want = KE.unit_indices(a, u), (a[:, None] * u + np.arange(u)).ravel()
    assert got.dtype == want.dtype and got.tolist() == want.tolist()


@settings(max_examples=150, deadline=None)
@given(groups=st.lists(st.integers(-1, 3), min_size=1, max_size=40), pick=st.lists(st.integers(0, 39), max_size=30),
       gid=st.integers(-1, 3), u=st.sampled_from([1, 2, 4, 8]), seed=st.integers(0, 2**32 - 1), clear=st.booleans())
def test_group_due_is_the_sequence_it_replaces(groups: list[int], pick: list[int], gid: int, u: int, seed: int,
                                               clear: bool) -> None:
    """``LazyCrossings.plan``'s settling of a group as twin 0.16.0 made it: the units of the group's nodes still in it
    (``arr[gid_of[arr] == gid]`` node-major), then ``kernels_units.silent_due`` of those units."""
    from twin import kernels_units as KU
    rng = np.random.default_rng(seed)
    gid_of = np.array(groups, dtype=np.int64)  # each node's group
    arr = np.array(sorted({i for i in pick if i < len(groups)}), dtype=np.int64)  # a group's nodes as recorded
    G = len(groups) * u
    silent = rng.random(G) < 0.5
    t_next = np.where(rng.random(G) < 0.2, np.inf, rng.uniform(0.0, 2.0, G))
    sel = arr[gid_of[arr] == gid]
    units = (sel[:, None] * u + np.arange(u)).ravel()
    ref = silent.copy()
    want, want_cleared = KU.silent_due(units, 1.0, ref, t_next, clear)
    got, cleared = KE.group_due(arr, gid, gid_of, u, 1.0, silent, t_next, clear)
    assert got.dtype == want.dtype and got.tolist() == want.tolist() and cleared == want_cleared
    assert np.array_equal(silent, ref)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-50, 3000), max_size=400), st.booleans())
def test_unique_ints_is_numpy_unique(v: list[int], sparse: bool) -> None:
    a = np.array(v, dtype=np.int64)
    if sparse and len(a):  # (a range too wide for marks: the sorted path)
        a = a * 1_000_003
    got, want = KE.unique_ints(a), np.unique(a)
    assert got.dtype == want.dtype and got.tolist() == want.tolist()


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_none_hot_is_the_numpy_check(data: st.DataObject) -> None:
    n = data.draw(st.integers(0, 12))
    eng = np.array(data.draw(st.lists(st.booleans() | st.just(False), min_size=n, max_size=n)), dtype=bool)
    t_next = np.array(data.draw(st.lists(st.sampled_from([np.inf, -np.inf, np.nan, 1.5]) | st.just(np.inf),
                                         min_size=n, max_size=n)), dtype=float)
    capped = np.array(data.draw(st.lists(st.sampled_from([0.0, -0.0, 2.0, np.nan]) | st.just(0.0), min_size=n,
                                         max_size=n)), dtype=float)
    caps = np.array(data.draw(st.lists(st.sampled_from([1.0, 0.5, np.nan]) | st.just(1.0), min_size=n, max_size=n)),
                    dtype=float)
    it = np.array(data.draw(st.lists(st.sampled_from([np.inf, -np.inf, 300.0, np.nan]) | st.just(np.inf),
                                     min_size=n, max_size=n)), dtype=float)
    want = (not eng.any() and not np.isfinite(t_next).any() and not capped.any() and bool((caps == 1.0).all())
            and bool(np.isinf(it).all()))
    assert KE.none_hot(eng, t_next, capped, caps, it) == want


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([0.0, 0.5, 1.0, 1.25, 2.0, 3.5, 7.0]) | st.floats(0.0, 10.0), min_size=1,
                max_size=40, unique=True),
       st.lists(st.sampled_from([0.0, 0.5, 1.0, 1.25, 2.0, 3.5, 7.0, 11.0]) | st.floats(0.0, 12.0), min_size=1,
                max_size=60), st.data())
def test_merge_level_is_numpys_union_and_searchsorted(t0: list[float], ct: list[float], data: st.DataObject) -> None:
    """``LazyCrossings.finish``'s numpy merge of twin 0.14.0 (a level's strictly rising times; corrections with ties)."""
    t0a = np.sort(np.array(t0))
    v0 = np.array(data.draw(st.lists(st.floats(-1e6, 1e6), min_size=len(t0), max_size=len(t0))))
    o = np.argsort(np.array(ct), kind="stable")
    cta = np.array(ct)[o]
    cv = np.cumsum(np.array(data.draw(st.lists(st.floats(-1e4, 1e4), min_size=len(ct), max_size=len(ct))))[o])
    tt = np.union1d(t0a, cta)
    base = v0[np.maximum(np.searchsorted(t0a, tt, side="right") - 1, 0)]
    k = np.searchsorted(cta, tt, side="right") - 1
    want = base + np.where(k >= 0, cv[np.maximum(k, 0)], 0.0)
    got_t, got_v = KE.merge_level(t0a, v0, cta, cv)
    assert np.array_equal(got_t, tt) and np.array_equal(got_v, want)


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), u=st.sampled_from([1, 8]), keep=st.booleans(), mixed=st.booleans(),
       nan=st.booleans(), nocheck=st.booleans())
def test_plan_one_is_plan_group_and_the_wake_up(seed: int, u: int, keep: bool, mixed: bool, nan: bool,
                                                nocheck: bool) -> None:
    """``plan_one``: when every node given is in the group (or without the check: ``nocheck``), ``plan_group``
    of it and ``t_due.min()``; when one is not, nothing (``LazyCrossings.plan`` then takes its general path)."""
    rng = np.random.default_rng(seed)
    n_nodes = 12
    G = n_nodes * u
    arr = np.sort(rng.choice(n_nodes, size=int(rng.integers(1, n_nodes + 1)), replace=False)).astype(np.int64)
    gid_of = np.where(rng.random(n_nodes) < 0.8, 3, 5).astype(np.int64)
    gid_of[arr[0]] = 3
    nodes = arr[gid_of[arr] == 3]
    if mixed:
        nodes = arr.copy()
        gid_of[nodes[-1]] = 5
    t_next = np.where(rng.random(G) < 0.3, INF, np.round(rng.uniform(0.0, 2.0, G), 1))
    kind = rng.integers(0, 3, G).astype(np.int8)
    silent = rng.random(G) < 0.4
    down = (rng.random(n_nodes) < 0.2).astype(np.int32)
    caps = np.where(rng.random(n_nodes) < 0.5, 1.0, rng.uniform(0.3, 1.0, n_nodes))
    x_sp = rng.uniform(0.2, 1.0, G)
    x_ok = rng.random(G) < 0.8
    t_due = np.where(rng.random(G) < 0.3, INF, rng.uniform(0.0, 2.0, G))
    if nan:
        t_due[int(rng.integers(0, G))] = np.nan
    keep_h = 1.0 + 1e-12 if keep else -INF
    r_sil, r_due = silent.copy(), t_due.copy()
    one = bool(np.all(gid_of[nodes] == 3))
    delta = KE.plan_group(arr, 3, gid_of, u, keep_h, t_next, kind, r_sil, down, caps, x_sp, x_ok, r_due) if one else 0
    if not one and nocheck:  # without the check: plan_group of the group's members, whatever nodes are
        r_sil, r_due = silent.copy(), t_due.copy()
        delta = KE.plan_group(arr, 3, gid_of, u, keep_h, t_next, kind, r_sil, down, caps, x_sp, x_ok, r_due)
        one = True
    got = KE.plan_one(nodes, arr, 3, gid_of, u, keep_h, t_next, kind, silent, down, caps, x_sp, x_ok, t_due,
                      not nocheck)
    assert got[0] == one and got[1] == delta
    assert np.array_equal(silent, r_sil) and np.array_equal(t_due, r_due, equal_nan=True)
    if one:
        m = float(r_due.min())
        assert got[2] == m or (np.isnan(m) and np.isnan(got[2]))


@settings(max_examples=300, deadline=None)
@given(a=st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.5, 250.0, np.inf, np.nan]), min_size=1, max_size=40))
def test_min_all_is_numpy_min(a: list[float]) -> None:
    arr = np.array(a)
    want = float(arr.min())
    got = KE.min_all(arr)
    assert got == want or (np.isnan(want) and np.isnan(got))


@settings(max_examples=300, deadline=None)
@given(c=_case())
def test_min_of_at_is_numpy_min(c: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
    a, idx, _ = c
    if not len(idx):
        return
    want = float(a[idx].min())
    got = KE.min_of_at(a, idx)
    assert got == want or (np.isnan(want) and np.isnan(got))


@settings(max_examples=300, deadline=None)
@given(c=_case(), x=st.sampled_from([0.5, 1.0, np.inf]), every=st.booleans())
def test_any_lt_is_numpy(c: tuple[np.ndarray, np.ndarray, np.ndarray], x: float, every: bool) -> None:
    """``any_lt``: ``(a[idx] < x).any()``, or over every element with the sentinel index -1 (the cluster's
    test of whether some node is slowed)."""
    a, idx, _ = c
    if every:
        assert KE.any_lt(a, np.array([-1], dtype=np.int64), x) == bool((a < x).any())
    else:
        assert KE.any_lt(a, idx, x) == bool((a[idx] < x).any())


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_cool_count_is_numpy(data: st.DataObject) -> None:
    """``cool_count``: ``np.count_nonzero(cool[idx])`` and ``np.array_equal(ref, cool[idx])`` (the thermal log's
    split of a load change into its cool and warm nodes)."""
    n = data.draw(st.integers(1, 30))
    cool = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    k = data.draw(st.integers(0, 2 * n))
    idx = np.array(data.draw(st.lists(st.integers(0, n - 1), min_size=k, max_size=k)), dtype=np.int64)
    kind = data.draw(st.sampled_from(["same", "other", "empty", "random"]))
    if kind == "same":
        ref = cool[idx].copy()
    elif kind == "empty":
        ref = np.zeros(0, dtype=bool)
    elif kind == "other":
        ref = np.zeros(k + 1, dtype=bool)
    else:
        ref = np.array(data.draw(st.lists(st.booleans(), min_size=k, max_size=k)), dtype=bool)
    got = KE.cool_count(cool, idx, ref)
    assert got == (int(np.count_nonzero(cool[idx])), bool(np.array_equal(ref, cool[idx])))


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_cap_moves_draw_is_the_numpy_draw(data: st.DataObject) -> None:
    """``cap_moves_draw``: some node's GPU draw ``np.minimum(demand, tightest cap)`` (``ITPower.node_power_w``'s
    GPU term, as ``twin.kernels.it_nodes`` computes it) differs, a nan or zero draw counting as moved."""
    n = data.draw(st.integers(1, 12))
    caps = st.sampled_from([0.0, 50.0, 100.0, 250.0, 400.0, 700.0, np.inf, np.nan])
    old = np.array(data.draw(st.lists(caps, min_size=n, max_size=n)))
    util = np.array(data.draw(st.lists(st.sampled_from([0.0, 0.25, 1.0]), min_size=n, max_size=n)))
    k = data.draw(st.integers(0, n))
    idx = np.array(data.draw(st.permutations(range(n)))[:k], dtype=np.int64)
    new = np.array(data.draw(st.lists(caps, min_size=k, max_size=k)))
    other = np.array(data.draw(st.lists(caps, min_size=n, max_size=n))) if data.draw(st.booleans()) else np.empty(0)
    d = util[idx] * (700.0 - 100.0) + 100.0

    def draw_w(c: np.ndarray) -> np.ndarray:
        if len(other):
            c = np.minimum(c, other[idx])  # the lower of the two, nan if either is
        return np.minimum(c, d)

    go, gn = draw_w(old[idx].copy()), draw_w(new.copy())
    want = bool(np.any((go != gn) | (go == 0.0) | np.isnan(go)))
    assert KE.cap_moves_draw(idx, util, old, new, other, 100.0, 700.0) == want


@settings(max_examples=300, deadline=None)
@given(c=_case())
def test_put_min1_at_is_numpy(c: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
    """``put_min1_at``: ``dst[idx] = np.minimum(1.0, a[idx])`` (thermal's record of the other sources' speeds)."""
    a, idx, _ = c
    dst = np.full(len(a), 7.0)
    want = dst.copy()
    want[idx] = np.minimum(np.ones(len(idx)), a[idx])
    KE.put_min1_at(dst, idx, a)
    assert np.array_equal(dst, want, equal_nan=True)
