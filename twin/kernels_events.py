"""Compiled kernels for the bookkeeping around the thermal kernels at each event (issue 41, scope item 3):
the IT power's caps, the comparisons of per-node arrays that decide what an update changed, the walk of a
group's pending crossings that decides which are silent (:func:`plan_group`, with the wake-up's minimum in
:func:`plan_one`), and the speed bookkeeping of a pace change in a hall with a thermal model (the cluster's slowed
test :func:`any_lt`, a job's speed minima :func:`min_of_at`).

Each replaces a sequence of numpy calls on a gathered copy (``a[idx] != v``, ``np.isfinite(a[idx]).sum()``,
``a[idx] = v``: ~1–2 µs of fixed cost each, on 1 to a few hundred nodes) by one plain loop compiled by numba
(``@njit(cache=True)``), with the same comparisons and the same writes in the same order, so results are
identical. Only paths that already run compiled code call them (a hall with thermal, fans or caps): a run
without any pays no numba start-up for them.

A second module beside :mod:`twin.kernels` (near the 800-line cap), under the same rules: numba's on-disk
cache keys a function on its own file, so no kernel here calls a compiled function of another module (an
edit there would not recompile it here: each module's kernels are self-contained, and a helper both need
is written in each). It imports :mod:`twin.kernels` first only for the cache folder that module sets
before numba is imported. Indices are the model's own (in range, as numpy would check). The kernels also
run as plain Python (``NUMBA_DISABLE_JIT=1``: a CI step runs ``tests/test_kernels_events.py`` that way).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from twin import kernels as _kernels  # noqa: F401  (sets NUMBA_CACHE_DIR before numba compiles anything here)

_JIT = {"cache": True, "error_model": "numpy", "nogil": True}
INF = math.inf


@njit(**_JIT)
def any_ne_at(a: np.ndarray, idx: np.ndarray, v: np.ndarray) -> bool:
    """``bool(np.any(a[idx] != v))``."""
    for j in range(idx.shape[0]):
        if a[idx[j]] != v[j]:
            return True
    return False


@njit(**_JIT)
def put_finite_delta(a: np.ndarray, idx: np.ndarray, v: np.ndarray) -> int:
    """``a[idx] = v``, returning how many more of ``a[idx]`` are finite after than before
    (``np.isfinite(a[idx]).sum()`` after the write less before it: an index given twice counts twice)."""
    n = idx.shape[0]
    before = 0
    for j in range(n):
        if math.isfinite(a[idx[j]]):
            before += 1
    for j in range(n):
        a[idx[j]] = v[j]
    after = 0
    for j in range(n):
        if math.isfinite(a[idx[j]]):
            after += 1
    return after - before


@njit(**_JIT)
def put_changed_at(a: np.ndarray, idx: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``ch = idx[a[idx] != v]``, then ``a[idx] = v`` when ``ch`` is not empty; returns ``ch`` (in the order of
    ``idx``)."""
    n = idx.shape[0]
    mask = np.empty(n, dtype=np.bool_)
    k = 0
    for j in range(n):
        d = a[idx[j]] != v[j]
        mask[j] = d
        if d:
            k += 1
    ch = np.empty(k, dtype=idx.dtype)
    if k:
        k = 0
        for j in range(n):
            if mask[j]:
                ch[k] = idx[j]
                k += 1
        for j in range(n):
            a[idx[j]] = v[j]
    return ch


@njit(**_JIT)
def minimum_at(out: np.ndarray, a: np.ndarray, idx: np.ndarray) -> None:
    """``np.minimum(out, a[idx], out=out)`` without the gathered copy (a NaN of either side wins, as numpy's;
    of two equal values ``out`` keeps its own, the convention of :func:`twin.kernels.it_nodes`)."""
    for j in range(idx.shape[0]):
        x = a[idx[j]]
        if x < out[j] or x != x:
            out[j] = x


@njit(**_JIT)
def min_of_at(a: np.ndarray, idx: np.ndarray) -> float:
    """``float(a[idx].min())`` for at least one index (nan if one of them is)."""
    m = a[idx[0]]
    for j in range(1, idx.shape[0]):
        x = a[idx[j]]
        if x != x:
            return x
        if x < m:
            m = x
    return m


@njit(**_JIT)
def all_eq_at(a: np.ndarray, idx: np.ndarray, x: int) -> bool:
    """``not np.count_nonzero(a[idx] != x)``: every one of ``idx`` has ``x`` in ``a`` (a group's nodes still in it)."""
    for j in range(idx.shape[0]):
        if a[idx[j]] != x:
            return False
    return True


@njit(**_JIT)
def any_lt(a: np.ndarray, idx: np.ndarray, x: float) -> bool:
    """``bool((a[idx] < x).any())``; every element of ``a`` (``bool((a < x).any())``) when ``idx`` has a
    negative first index (an empty ``idx``: False)."""
    if idx.shape[0] and idx[0] < 0:
        for i in range(a.shape[0]):
            if a[i] < x:
                return True
        return False
    for j in range(idx.shape[0]):
        if a[idx[j]] < x:
            return True
    return False


@njit(**_JIT)
def cool_count(cool: np.ndarray, idx: np.ndarray, ref: np.ndarray) -> tuple[int, bool]:
    """``(np.count_nonzero(cool[idx]), np.array_equal(ref, cool[idx]))``: how many of nodes ``idx`` are cool,
    and whether their flags are those of ``ref`` (False for a ``ref`` of another length)."""
    k = 0
    same = ref.shape[0] == idx.shape[0]
    for j in range(idx.shape[0]):
        c = cool[idx[j]]
        if c:
            k += 1
        if same and ref[j] != c:
            same = False
    return k, same


@njit(**_JIT)
def cap_moves_draw(idx: np.ndarray, util: np.ndarray, old: np.ndarray, new: np.ndarray, other: np.ndarray,
                   idle_w: float, tdp_w: float) -> bool:
    """Whether a source's GPU caps ``new[j]`` in place of ``old[idx[j]]`` move some node's GPU draw as
    ``twin.kernels.it_nodes`` computes it: the tightest cap (the lower of the source's and ``other[idx[j]]``; empty:
    none; nan if either is) against the demand ``u·(tdp − idle) + idle`` at ``u = util[idx[j]]``. A nan or zero draw
    counts as moved (a conservative answer: the caller then refreshes)."""
    has_o = other.shape[0] > 0
    for j in range(idx.shape[0]):
        i = idx[j]
        u = util[i]
        d = u * (tdp_w - idle_w) + idle_w
        co = old[i]
        cn = new[j]
        if has_o:  # (the lower of the two; nan if either is)
            x = other[i]
            co = math.nan if (x != x or co != co) else (x if x < co else co)
            cn = math.nan if (x != x or cn != cn) else (x if x < cn else cn)
        go = co if co < d or co != co else d
        gn = cn if cn < d or cn != cn else d
        if go != gn or go == 0.0:  # (nan: != is True)
            return True
    return False


@njit(**_JIT)
def put_min1_at(dst: np.ndarray, idx: np.ndarray, a: np.ndarray) -> None:
    """``dst[idx] = np.minimum(1.0, a[idx])`` (nan propagates): the lowest speed of nodes ``idx`` over one source."""
    for j in range(idx.shape[0]):
        i = idx[j]
        x = a[i]
        dst[i] = x if (x < 1.0 or x != x) else 1.0


@njit(**_JIT)
def argsort_stable(key: np.ndarray) -> np.ndarray:
    """Indices that sort ``key`` (float64: the kernels pass integer keys as floats, exact below 2**53, so one
    version is compiled) ascending, ties in their order (``np.argsort(key,
    kind="stable")``: a stable sort's permutation is unique): insertion-sorted runs of 32, merged bottom-up,
    written out (numba's own ``argsort`` costs seconds to compile)."""
    n = key.shape[0]
    a = np.arange(n)
    for lo in range(0, n, 32):
        for k in range(lo + 1, min(lo + 32, n)):
            x = a[k]
            kx = key[x]
            j = k
            while j > lo and kx < key[a[j - 1]]:
                a[j] = a[j - 1]
                j -= 1
            a[j] = x
    b = np.empty(n, dtype=np.int64)
    width = 32
    while width < n:
        for lo in range(0, n, 2 * width):
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i, j = lo, mid
            for k in range(lo, hi):
                if j < hi and (i >= mid or key[a[j]] < key[a[i]]):
                    b[k] = a[j]
                    j += 1
                else:
                    b[k] = a[i]
                    i += 1
        a, b = b, a
        width *= 2
    return a


@njit(**_JIT)
def plan_group(arr: np.ndarray, gid: int, gid_of: np.ndarray, u: int, keep_due_h: float, t_next: np.ndarray,
               kind: np.ndarray, silent: np.ndarray, down: np.ndarray, caps: np.ndarray, x_sp: np.ndarray,
               x_ok: np.ndarray, t_due: np.ndarray) -> int:
    """Decide which pending slowdown crossings of a group are silent (``LazyCrossings.plan``): the members of
    ``arr`` still in group ``gid``; their crossings walked in time order from the group's slowest published
    speed (its nodes in service; 1 if none); a crossing is silent where it may be (``x_ok``) and its speed
    after is at least every speed the group has by then. A due silent crossing (t ≤ ``keep_due_h``; −inf:
    none kept) keeps its flag. Sets ``silent`` and ``t_due`` (inf where silent); returns the change in the
    number of silent flags."""
    floor0 = INF
    n_up = 0
    npend = 0
    for a in range(arr.shape[0]):
        nd = arr[a]
        if gid_of[nd] != gid:
            continue
        if down[nd] == 0:
            n_up += 1
            if caps[nd] < floor0:
                floor0 = caps[nd]
        for k in range(u):
            i = nd * u + k
            t = t_next[i]
            if t < INF and kind[i] == 1 and not (silent[i] and t <= keep_due_h):
                npend += 1
    if npend == 0:
        return 0
    if n_up == 0:
        floor0 = 1.0
    ui = np.empty(npend, dtype=np.int64)
    tp = np.empty(npend)
    z = 0
    for a in range(arr.shape[0]):
        nd = arr[a]
        if gid_of[nd] != gid:
            continue
        for k in range(u):
            i = nd * u + k
            t = t_next[i]
            if t < INF and kind[i] == 1 and not (silent[i] and t <= keep_due_h):
                ui[z] = i
                tp[z] = t
                z += 1
    o = argsort_stable(tp)
    delta = 0
    low = floor0  # the group's slowest speed just before this crossing
    for z in range(npend):
        i = ui[o[z]]
        xs = x_sp[i]
        sil = x_ok[i] and xs >= low
        if xs < low:
            low = xs
        delta += (1 if sil else 0) - (1 if silent[i] else 0)
        silent[i] = sil
        t_due[i] = INF if sil else t_next[i]
    return delta


@njit(**_JIT)
def plan_one(nodes: np.ndarray, arr: np.ndarray, gid: int, gid_of: np.ndarray, u: int, keep_due_h: float,
             t_next: np.ndarray, kind: np.ndarray, silent: np.ndarray, down: np.ndarray, caps: np.ndarray,
             x_sp: np.ndarray, x_ok: np.ndarray, t_due: np.ndarray, check: bool) -> tuple[bool, int, float]:
    """``LazyCrossings.plan`` of one group in one call: with ``check``, only when every node of ``nodes`` is in
    group ``gid`` (whose members' array is ``arr``; the common case), :func:`plan_group` of it, then the earliest
    time of ``t_due`` (``float(t_due.min())``: the wake-up's). Returns (whether they were all in ``gid``, True
    without ``check``: else nothing was done; the change in the number of silent flags; the earliest ``t_due``,
    nan if one is)."""
    if check:
        for j in range(nodes.shape[0]):
            if gid_of[nodes[j]] != gid:
                return False, 0, INF
    delta = plan_group(arr, gid, gid_of, u, keep_due_h, t_next, kind, silent, down, caps, x_sp, x_ok, t_due)
    return True, delta, min_all(t_due)


@njit(**_JIT)
def min_all(a: np.ndarray) -> float:
    """``float(a.min())`` (nan if some element is; inf for none): four running minima by selects, which the
    compiler vectorises (a minimum does not depend on the order it is taken in)."""
    n = a.shape[0]
    m0 = m1 = m2 = m3 = INF
    bad = False
    i = 0
    while i + 4 <= n:
        v0 = a[i]
        v1 = a[i + 1]
        v2 = a[i + 2]
        v3 = a[i + 3]
        bad |= (v0 != v0) | (v1 != v1) | (v2 != v2) | (v3 != v3)
        m0 = v0 if v0 < m0 else m0
        m1 = v1 if v1 < m1 else m1
        m2 = v2 if v2 < m2 else m2
        m3 = v3 if v3 < m3 else m3
        i += 4
    while i < n:
        v = a[i]
        bad |= v != v
        m0 = v if v < m0 else m0
        i += 1
    m0 = m1 if m1 < m0 else m0
    m2 = m3 if m3 < m2 else m2
    m0 = m2 if m2 < m0 else m0
    return math.nan if bad else m0


@njit(**_JIT)
def unit_indices(nodes: np.ndarray, u: int) -> np.ndarray:
    """The thermal units of ``nodes`` (``u`` a node, node-major): ``(nodes[:, None] * u + np.arange(u)).ravel()``."""
    out = np.empty(nodes.shape[0] * u, dtype=np.int64)
    for j in range(nodes.shape[0]):
        b = nodes[j] * u
        for k in range(u):
            out[j * u + k] = b + k
    return out


@njit(**_JIT)
def group_due(arr: np.ndarray, gid: int, gid_of: np.ndarray, u: int, due_h: float, silent: np.ndarray,
              t_next: np.ndarray, clear_rest: bool) -> tuple[np.ndarray, int]:
    """``LazyCrossings.plan``'s settling of a group in one call: of the thermal units of the nodes of ``arr`` still
    in group ``gid`` (``gid_of``: each node's group; node-major, as :func:`unit_indices` of
    ``arr[gid_of[arr] == gid]``), those whose silent crossing is due by ``due_h`` (h), in that order, and with
    ``clear_rest`` the silent flags of the others among them cleared (``twin.kernels_units.silent_due`` of those
    units: the same split). Returns (the due units, the number of flags cleared)."""
    nd = 0
    for j in range(arr.shape[0]):
        if gid_of[arr[j]] == gid:
            b = arr[j] * u
            for q in range(u):
                if silent[b + q] and t_next[b + q] <= due_h:
                    nd += 1
    idx = np.empty(nd, dtype=np.int64)
    z = 0
    cleared = 0
    for j in range(arr.shape[0]):
        if gid_of[arr[j]] == gid:
            b = arr[j] * u
            for q in range(u):
                i = b + q
                if silent[i]:
                    if t_next[i] <= due_h:
                        idx[z] = i
                        z += 1
                    elif clear_rest:
                        silent[i] = False
                        cleared += 1
    return idx, cleared


@njit(**_JIT)
def unique_ints(a: np.ndarray) -> np.ndarray:
    """``np.unique(a)`` for integers: marks over their range (node indices: a range of at most the hall's nodes),
    read in order; a range over 16 × the count plus 4,096 is sorted instead."""
    n = a.shape[0]
    if n == 0:
        return a.copy()
    lo = a[0]
    hi = a[0]
    for k in range(n):
        lo = min(lo, a[k])
        hi = max(hi, a[k])
    if hi - lo > 16 * n + 4096:
        kf = np.empty(n)  # float keys (node indices: exact below 2**53, the same order; one compiled sort)
        for k in range(n):
            kf[k] = a[k]
        s = a[argsort_stable(kf)]
        keep = 1
        for k in range(1, n):
            if s[k] != s[k - 1]:
                keep += 1
        out = np.empty(keep, dtype=a.dtype)
        out[0] = s[0]
        z = 1
        for k in range(1, n):
            if s[k] != s[k - 1]:
                out[z] = s[k]
                z += 1
        return out
    mark = np.zeros(hi - lo + 1, dtype=np.bool_)
    keep = 0
    for k in range(n):
        if not mark[a[k] - lo]:
            mark[a[k] - lo] = True
            keep += 1
    out = np.empty(keep, dtype=a.dtype)
    z = 0
    for v in range(hi - lo + 1):
        if mark[v]:
            out[z] = lo + v
            z += 1
    return out


@njit(**_JIT)
def none_hot(engaged: np.ndarray, t_next: np.ndarray, n_capped: np.ndarray, speed_caps: np.ndarray,
             it_caps: np.ndarray) -> bool:
    """``GpuState._n_hot_check``: no unit engaged, none heading for a crossing (``t_next`` all ±inf or NaN), no
    node with capped GPUs, every thermal speed 1 and every thermal cap infinite (``not engaged.any() and not
    np.isfinite(t_next).any() and not n_capped.any() and (speed_caps == 1).all() and np.isinf(it_caps).all()``)."""
    for i in range(engaged.shape[0]):
        if engaged[i]:
            return False
    for i in range(t_next.shape[0]):
        if math.isfinite(t_next[i]):
            return False
    for i in range(n_capped.shape[0]):
        if n_capped[i] != 0.0:
            return False
    for i in range(speed_caps.shape[0]):
        if speed_caps[i] != 1.0:
            return False
    for i in range(it_caps.shape[0]):
        if not math.isinf(it_caps[i]):
            return False
    return True


@njit(**_JIT)
def merge_level(t0: np.ndarray, v0: np.ndarray, ct: np.ndarray, cv: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A level (times ``t0`` ascending, values ``v0``) with a step correction added (times ``ct`` ascending, the
    correction from each on ``cv``), as ``LazyCrossings.finish`` merges the silent crossings' power: the times
    ``np.union1d(t0, ct)``, and at each the level's last value at or before it (its first before its start) plus
    the correction's (0 before its start), as ``np.searchsorted(..., side="right") - 1``: one merge pass."""
    n0 = t0.shape[0]
    n1 = ct.shape[0]
    tt = np.empty(n0 + n1)
    vs = np.empty(n0 + n1)
    i = j = z = 0
    while i < n0 or j < n1:
        x = t0[i] if j >= n1 or (i < n0 and t0[i] <= ct[j]) else ct[j]
        while i < n0 and t0[i] <= x:
            i += 1
        while j < n1 and ct[j] <= x:
            j += 1
        tt[z] = x
        vs[z] = v0[i - 1 if i > 0 else 0] + (cv[j - 1] if j > 0 else 0.0)
        z += 1
    return tt[:z], vs[:z]


@njit(**_JIT)
def put_steps(bt: np.ndarray, bv: np.ndarray, k: int, st: np.ndarray, ot: int, sv: np.ndarray, ov: int, m: int,
              now: float, end_v: float) -> int:
    """The site power corrections of a settling (``LazyCrossings._record_steps``): when some of the ``m`` changes
    ``sv[ov:ov + m]`` is nonzero (``np.count_nonzero``), write them and their times ``st[ot:ot + m]`` at ``k`` of the
    buffers ``bt``, ``bv`` (room for ``m + 1`` more), then ``now`` and ``end_v``; return the new count, or −1 when
    every change is zero (nothing written)."""
    nz = False
    for i in range(m):
        if sv[ov + i] != 0.0:
            nz = True
            break
    if not nz:
        return -1
    for i in range(m):
        bt[k + i] = st[ot + i]
        bv[k + i] = sv[ov + i]
    bt[k + m] = now
    bv[k + m] = end_v
    return k + m + 1


@njit(**_JIT)
def union2(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``np.union1d(a, b)`` for two integer arrays of one dtype: one merge pass when each is strictly increasing
    (the nodes an update's accounts and its settling changed, in node order), else :func:`unique_ints`."""
    na = a.shape[0]
    nb = b.shape[0]
    for k in range(1, na):
        if a[k] <= a[k - 1]:
            return unique_ints(np.concatenate((a, b)))
    for k in range(1, nb):
        if b[k] <= b[k - 1]:
            return unique_ints(np.concatenate((a, b)))
    out = np.empty(na + nb, dtype=a.dtype)
    i = 0
    j = 0
    z = 0
    while i < na and j < nb:
        if a[i] < b[j]:
            out[z] = a[i]
            i += 1
        elif b[j] < a[i]:
            out[z] = b[j]
            j += 1
        else:
            out[z] = a[i]
            i += 1
            j += 1
        z += 1
    while i < na:
        out[z] = a[i]
        i += 1
        z += 1
    while j < nb:
        out[z] = b[j]
        j += 1
        z += 1
    return out[:z].copy()


def sorted_union(arrays: list[np.ndarray]) -> np.ndarray:
    """``np.unique(np.concatenate(arrays))`` for integer arrays of one dtype (``np.union1d`` of two): the nodes
    settled crossings changed. Two arrays (an update's changes and its settling's): one compiled merge
    (:func:`union2`, ~1 µs). Otherwise a handful of node indices is cheapest as a Python set (~2 µs against
    ~10 µs for numpy's sort); above 64 indices, compiled (:func:`unique_ints`)."""
    if len(arrays) == 2 and arrays[0].dtype == arrays[1].dtype:
        return union2(arrays[0], arrays[1])
    if sum(len(a) for a in arrays) > 64:
        return unique_ints(np.concatenate(arrays))
    s: set[int] = set()
    for a in arrays:
        s.update(a.tolist())
    return np.array(sorted(s), dtype=arrays[0].dtype)
