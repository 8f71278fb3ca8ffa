"""Compiled kernel of the replay of logged load changes on per-GPU thermal units (issue 41).

A cool node's load changes are logged and replayed later in one go (``twin.model.cooling.replay``): per
thermal unit, the steady state after each logged change, the time-weighted histogram of the steady states,
the log-decay of each segment and the closed form of the first-order recurrence over the unit's segments
(``twin.model.cooling.fast.grouped_segments_c``). As numpy that is ~25 passes over arrays of the logged
pairs repeated for each unit; :func:`replay_units` does the arithmetic in two passes with the same
operations in the same order (the sequential cumulative sum of ``np.cumsum``, the in-order bin sums of
``np.bincount``), leaving the exponentials (``np.exp``, ``np.expm1``: numpy's SIMD forms, which the C
library's may differ from in the last bit) and the segment sums (``np.add.reduceat``: numpy's pairwise order)
to numpy, so results are identical to the numpy replay bit for bit. Before it, :func:`group_pairs` groups the
logged pairs by node (a counting sort: the same order as numpy's stable argsort) with their times, service and
changes of busy GPUs; the peaks are followed by :func:`peak_pairs` and :func:`peak_cell`.

A module of its own beside :mod:`twin.kernels` (near the 800-line cap) under the same rules: numba's
on-disk cache keys a function on its own file, so no kernel here calls a compiled function of another
module (an edit there would not recompile it here); it imports :mod:`twin.kernels` first only for the
cache folder that module sets before numba is imported. Also runs as plain Python
(``NUMBA_DISABLE_JIT=1``: a CI step runs ``tests/test_kernels_replay.py`` that way).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from twin import kernels as _kernels  # noqa: F401  (sets NUMBA_CACHE_DIR before numba compiles anything here)

_JIT = {"cache": True, "error_model": "numpy", "nogil": True}


@njit(**_JIT)
def replay_units(t_s: np.ndarray, u_s: np.ndarray, up_s: np.ndarray, has_up: bool, u: int, cnt: np.ndarray,
                 start: np.ndarray, start_u: np.ndarray, g0: np.ndarray, R_g: np.ndarray, tin_g: np.ndarray,
                 idle_w: float, tdp_w: float, c_j_per_c: float, w: float, hist_max: int, tss: np.ndarray,
                 t0: np.ndarray, gon: np.ndarray, hist: np.ndarray, prev_tss: np.ndarray, lg: np.ndarray,
                 decay: np.ndarray, log_g: np.ndarray, under: float, tail: np.ndarray) -> tuple[float, float, int]:
    """The replay of logged pairs on thermal units, up to the exponentials.

    The pairs (time ``t_s``, utilisation ``u_s``, in service ``up_s`` when ``has_up``, after each logged
    change) come grouped by node: node group ``n`` is pairs ``start[n] … start[n] + cnt[n] − 1``. Unit group
    ``k`` (unit ``g0[k]``, of node group ``k // u``; R ``R_g[k]``, inlet ``tin_g[k]``) takes its node's pairs
    at positions ``start_u[k] + m`` of the outputs (the unit groups one after another: ``start_u`` is the running
    sum of their sizes, else ValueError). Writes, per position: the steady state before the pair
    (``prev_tss``), the log of its decay factor (``lg``, ≤ 0) and the log-decay from the pair to the group's
    last (``decay``), and per unit group the log-decay over the whole group (``log_g``); adds the time-weighted
    steady states to the histogram ``hist`` (× ``w``); moves the units' ``t0``, ``tss`` and ``gon`` to their
    last pair. A position whose log-decay is at most ``under`` (e^decay is +0 there) gets its finished term in
    ``decay`` instead, ``prev_tss`` × 0 (−expm1(lg)·prev_tss·e^decay is that same signed zero: −expm1(lg) ≥ 0);
    the others' positions go to ``tail``, ascending. Returns the lowest and highest ``prev_tss`` and the number
    of positions in ``tail``. The caller finishes the closed form for those:
    T_last = e^log_g·T_0 + Σ_group −expm1(lg)·prev_tss·e^decay (``fast.grouped_segments_c``)."""
    n_units = g0.shape[0]
    span = tdp_w - idle_w
    lo = np.inf
    hi = -np.inf
    # one pass over the pairs in output order (each unit's, then the next unit's: start_u must be the running
    # offsets), fusing what were separate passes: the histogram's bins take the pairs in the same order (clipped
    # always: the same bin as unclipped for a value in range), the cumulative sum of lg is the same running sum
    # (held in ``decay`` until the unit's last pair is known)
    b = np.zeros(hist_max)
    top = hist_max - 1.0
    acc = 0.0
    pos = 0
    nt = 0
    for k in range(n_units):
        ng = k // u
        s = start[ng]
        c = cnt[ng]
        o = start_u[k]
        if o != pos:
            raise ValueError("replay_units: start_u must be the running offsets of the unit groups")
        pos += c
        gu = g0[k]
        R = R_g[k]
        tin = tin_g[k]
        tau = R * c_j_per_c
        prev = tss[gu]
        prev_t = t0[gu]
        on = gon[gu]
        x = prev
        for m in range(c):
            p = s + m
            i = o + m
            pdem = idle_w + span * u_s[p]  # fast.demand_w
            if has_up:
                up = up_s[p]
                x = tin + (pdem * (1.0 if up else 0.0)) * R  # fast.steady_c(tin, pdem × up, R)
            else:
                up = True
                x = tin + pdem * R
            prev_tss[i] = prev
            if prev < lo or prev != prev:
                lo = prev
            if prev > hi or prev != prev:
                hi = prev
            dur = t_s[p] - prev_t
            v = 0.0 if prev < 0.0 else prev  # np.bincount of the clipped steady states, weights in order
            v = top if v > top else v
            b[int(v)] += dur * (1.0 if on else 0.0)
            lgi = dur * -3600.0 / tau  # fast.log_decay
            lg[i] = lgi
            acc = lgi if i == 0 else acc + lgi  # lg.cumsum(), in order over every pair
            decay[i] = acc
            prev = x
            prev_t = t_s[p]
            on = up
        if c > 0:
            t0[gu] = prev_t
            tss[gu] = x
            gon[gu] = on
            # fast.grouped_segments_c up to its exponentials: base = csum[start] − lg[start], P = csum − base,
            # log_g = P[last], decay = log_g − P
            base = decay[o] - lg[o]
            g = decay[o + c - 1] - base
            log_g[k] = g
            for m in range(c):
                i = o + m
                d = g - (decay[i] - base)
                if d <= under:  # (a NaN goes to the tail, as numpy would have taken its exponential)
                    decay[i] = prev_tss[i] * 0.0
                else:
                    decay[i] = d
                    tail[nt] = i
                    nt += 1
    for j in range(hist_max):
        hist[j] += b[j] * w
    return lo, hi, nt


@njit(**_JIT)
def peak_pairs(x: np.ndarray, s0: np.ndarray, c0: np.ndarray, a_all: np.ndarray, c_all: np.ndarray,
               prev_tss: np.ndarray, peak: float) -> float:
    """The hottest temperature (°C) at the logged pairs' times of some units: unit ``h`` starts at ``x[h]``
    and takes its pairs ``s0[h] … s0[h] + c0[h] − 1`` in order, T ← a·T + c·T_ss,prev (decay factors
    ``a_all`` = e^lg and weights ``c_all`` = −expm1(lg), numpy's, and the steady states ``prev_tss``). Returns
    the largest of ``peak`` and every such T; leaves ``x`` at each unit's last T. (``DeferredReplay._replay_units``'
    peak, formerly the j-th pair of every unit at once in numpy: the same products and sums, and a maximum,
    which does not depend on the order.)"""
    for h in range(s0.shape[0]):
        xv = x[h]
        s = s0[h]
        for j in range(c0[h]):
            i = s + j
            xv = a_all[i] * xv + c_all[i] * prev_tss[i]
            if xv > peak:
                peak = xv
        x[h] = xv
    return peak


@njit(**_JIT)
def peak_cell(x: np.ndarray, tin: np.ndarray, R: np.ndarray, P: np.ndarray, fac: np.ndarray, k0: int,
              peak: float) -> float:
    """The hottest temperature (°C) of a cell's units over its shared segments ``k0 … k0 + len(fac) − 1``:
    unit ``j`` at ``x[j]`` steps to T_ss + (T − T_ss)·fac[r, j] with T_ss = tin[j] + P[k0 + r]·R[j] (``fast.step_c``
    of ``fast.steady_c``, fac = numpy's e^(−3600·dur/τ) of the segment). Returns the largest of ``peak`` and
    every such T; leaves ``x`` at the units' temperatures after the last segment taken.
    (``DeferredReplay._replay_cell_units``' peak, formerly one numpy step per segment.)"""
    n_rows = fac.shape[0]
    n_u = x.shape[0]
    for r in range(n_rows):
        pk = P[k0 + r]
        for j in range(n_u):
            ts = tin[j] + pk * R[j]
            xv = ts + (x[j] - ts) * fac[r, j]
            x[j] = xv
            if xv > peak:
                peak = xv
    return peak


@njit(**_JIT)
def group_pairs(nd: np.ndarray, pe: np.ndarray, st: np.ndarray, has_st: bool, in_cell: np.ndarray, n_nodes: int,
                tk: np.ndarray, ut: np.ndarray, gon: np.ndarray, u: int, n_busy: np.ndarray, g: float,
                dbusy_k: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                              np.ndarray, bool, np.ndarray, np.ndarray]:
    """The logged (node ``nd[i]``, entry ``pe[i]``) pairs (in entry order) of nodes not in a cell (``in_cell``,
    per node; empty: none is) grouped by node, in time order within a node: ``DeferredReplay._replay_pairs`` up
    to the units' replay, in two passes (a counting sort) where numpy took ~25 calls (the pairs' mask, a stable
    argsort, bincounts, the service's running maximum).

    Returns ``o`` (the pairs' positions in ``nd``, grouped), the logged nodes ascending (``nodes_g``), their
    groups' sizes (``cnt``) and first positions (``start``), each grouped pair's time ``tk[pe]`` and utilisation
    ``ut[pe]``; its service ``up_s`` (1 / 0 changes of service ``st[i]``, −1 a load change, when ``has_st``;
    before a node's first change its state when the log began, ``gon`` of its first unit, ``u`` units a node),
    computed only when ``has_st`` or a node was out of service when the log began (``has_up``; else empty); each
    pair's change of busy (0 or 1: utilisation above 0 and in service) against the pair before it, or the node's
    ``n_busy`` > 0 (``d``, int8); and each node's busy GPUs after its last pair (``busy_last``, × ``g``). Adds the
    changes of busy GPUs at each entry (their sum in pair order, × ``g``) to ``dbusy_k``; with no pair left, returns
    empty groups and leaves ``dbusy_k`` alone."""
    n_all = nd.shape[0]
    has_cells = in_cell.shape[0] > 0
    per_node = np.zeros(n_nodes, dtype=np.int64)
    for i in range(n_all):
        v = nd[i]
        if has_cells and in_cell[v]:
            continue
        per_node[v] += 1
    n_g = 0
    for v in range(n_nodes):
        if per_node[v] > 0:
            n_g += 1
    nodes_g = np.empty(n_g, dtype=np.int64)
    cnt = np.empty(n_g, dtype=np.int64)
    start = np.empty(n_g, dtype=np.int64)
    ptr = np.empty(n_nodes, dtype=np.int64)  # each node's next position
    j = 0
    n_pairs = 0
    for v in range(n_nodes):
        c = per_node[v]
        if c > 0:
            nodes_g[j] = v
            cnt[j] = c
            start[j] = n_pairs
            ptr[v] = n_pairs
            n_pairs += c
            j += 1
    o = np.empty(n_pairs, dtype=np.int64)
    for i in range(n_all):  # (in entry order: stable within a node)
        v = nd[i]
        if has_cells and in_cell[v]:
            continue
        o[ptr[v]] = i
        ptr[v] += 1
    t_s = np.empty(n_pairs)
    u_s = np.empty(n_pairs)
    has_up = has_st
    for j in range(n_g):
        if not gon[nodes_g[j] * u]:
            has_up = True
    up_s = np.empty(n_pairs if has_up else 0, dtype=np.bool_)
    d = np.empty(n_pairs, dtype=np.int8)
    busy_last = np.empty(n_g)
    if n_pairs == 0:
        return o, nodes_g, cnt, start, t_s, u_s, up_s, has_up, d, busy_last
    k = tk.shape[0]
    tmp = np.zeros(k)  # (np.bincount of the changes by entry, in pair order)
    for n in range(n_g):
        v = nodes_g[n]
        s = start[n]
        on0 = gon[v * u]
        pb = n_busy[v] > 0.0
        cur = -1  # the node's last change of service so far (−1: none)
        for m in range(cnt[n]):
            j = s + m
            i = o[j]
            e = pe[i]
            t_s[j] = tk[e]
            uj = ut[e]
            u_s[j] = uj
            b = uj > 0.0
            if has_up:
                if has_st and st[i] >= 0:
                    cur = st[i]
                up = (cur == 1) if cur >= 0 else on0
                up_s[j] = up
                b = b and up
            dj = (1 if b else 0) - (1 if pb else 0)
            d[j] = dj
            tmp[e] += dj
            pb = b
        busy_last[n] = (1.0 if pb else 0.0) * g
    for e in range(k):
        dbusy_k[e] += tmp[e] * g
    return o, nodes_g, cnt, start, t_s, u_s, up_s, has_up, d, busy_last


@njit(**_JIT)
def mark_entries(nd: np.ndarray, pos: np.ndarray, lens: np.ndarray, skip: np.ndarray, mark: np.ndarray) -> None:
    """Set ``mark`` of the nodes of every logged entry ``e`` not ``skip[e]``: its pairs ``pos[e] … pos[e] +
    lens[e] − 1`` of the logged nodes ``nd`` (``DeferredReplay._cells``: ``mark[nd[~skip[pe]]] = True``, pe the
    entry of each pair, in one pass over the entries rather than four over the pairs)."""
    for e in range(lens.shape[0]):
        if not skip[e]:
            p0 = pos[e]
            for p in range(p0, p0 + lens[e]):
                mark[nd[p]] = True
