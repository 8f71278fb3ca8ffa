"""Compiled kernels (issue 41): the folder of numba's on-disk cache (set here, before numba is imported, for
every kernel module), and the kernels of the accounting after an update of GPU units, the server fans and the
IT power under caps.

Each is a plain loop compiled by numba (``@njit(cache=True)``) in place of a sequence of numpy calls of
~2 µs fixed cost each. numba's on-disk cache keys a function on its own file, so a kernel calling a compiled
function of another module would not be recompiled when that function changes: each kernel module is
self-contained (the per-GPU units' kernels are in :mod:`twin.kernels_units`, the bookkeeping around them in
:mod:`twin.kernels_events`, the replay in :mod:`twin.kernels_replay`; a helper two modules need, such as
:func:`pairwise_sum`, is written in each). Sums follow numpy's pairwise order (:func:`pairwise_sum`), so
totals are numpy's bit for bit.

The kernels also run as plain Python (``NUMBA_DISABLE_JIT=1``: the unit tests run that way in CI).

**One compiled version each.** numba compiles a kernel once per distinct argument types, and inside a kernel a
constant argument is typed as a literal (``Literal[int](0)``, ``Literal[bool](True)``, also a count still at its
first value ``0`` midway through type inference): calls between kernels pass ``np.int64(0)`` and
``np.int64(count)``, runtime flags, and float64 sort keys, so a first run compiles each kernel once
(``benchmarks/README.md``, issue 41 item 2).

**The JIT cache.** Compiled kernels are cached on disk so a run pays compilation once per installed
version, not per process: in ``twin/__pycache__`` when the package folder is writable (an editable
install), else in the user cache directory (``$XDG_CACHE_HOME/twin/numba-<version>``, by default
``~/.cache/twin/numba-<version>``), keyed by twin's version; set before numba is imported, so
Monte-Carlo pool workers and Dask workers on the machine reuse it. ``NUMBA_CACHE_DIR`` set by the user
wins.
"""

from __future__ import annotations

import math
import os
import tempfile
from pathlib import Path

from twin import __version__


def _cache_dir() -> str | None:
    """The folder for numba's cache when the package folder is not writable (None: numba's default,
    ``__pycache__`` beside this file)."""
    here = Path(__file__).resolve().parent
    if os.access(here, os.W_OK) and (not (here / "__pycache__").exists() or os.access(here / "__pycache__", os.W_OK)):
        return None
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    d = Path(base) / "twin" / f"numba-{__version__}"
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError:
        d = Path(tempfile.gettempdir()) / f"twin-numba-{__version__}-{os.getuid() if hasattr(os, 'getuid') else 0}"
        d.mkdir(parents=True, exist_ok=True)
    return str(d)


if "NUMBA_CACHE_DIR" not in os.environ:
    _d = _cache_dir()
    if _d is not None:
        os.environ["NUMBA_CACHE_DIR"] = _d

import numpy as np  # noqa: E402
from numba import njit  # noqa: E402

INF = math.inf
_EPS_C = 1e-6  # temperature tolerance at a crossing, °C (twin.model.cooling.common)
_HIST_MAX_C = 160  # histogram bins, 1 °C each (twin.model.cooling.common)

# rows of the accounts' block (CoolingArrays.nblk; as twin.kernels_units' A_*, pinned equal in tests/test_kernels_units.py):
# per node busy GPUs, capped busy GPUs, Σ speed, effective GPUs; the four site totals integrated and now (indices 0–3)
A_BUSY, A_CAPPED, A_SPSUM, A_TP, A_ACC, A_TOT = range(6)

_JIT = {"cache": True, "error_model": "numpy", "nogil": True}  # numpy's float semantics: x/0 = inf, 0/0 = nan


# ===================================================================================== sums
@njit(**_JIT)
def _pairwise_leaf(a: np.ndarray, start: int, n: int) -> float:
    """numpy's pairwise sum of at most 128 elements: in order below 8, else 8 accumulators."""
    if n < 8:
        s = -0.0
        for i in range(n):
            s += a[start + i]
        return s
    r0 = a[start]
    r1 = a[start + 1]
    r2 = a[start + 2]
    r3 = a[start + 3]
    r4 = a[start + 4]
    r5 = a[start + 5]
    r6 = a[start + 6]
    r7 = a[start + 7]
    i = 8
    while i < n - (n % 8):
        r0 += a[start + i]
        r1 += a[start + i + 1]
        r2 += a[start + i + 2]
        r3 += a[start + i + 3]
        r4 += a[start + i + 4]
        r5 += a[start + i + 5]
        r6 += a[start + i + 6]
        r7 += a[start + i + 7]
        i += 8
    s = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        s += a[start + i]
        i += 1
    return s


@njit(**_JIT)
def pairwise_sum(a: np.ndarray, start: int, n: int) -> float:
    """Σ a[start:start + n] in numpy's pairwise order (``np.add.reduce`` on a contiguous run: halves split
    at multiples of 8 down to blocks of at most 128), so a kernel's sums equal numpy's bit for bit. (The
    recursion runs on an explicit stack: numba's cache does not take recursive functions.)"""
    if n <= 128:
        return _pairwise_leaf(a, start, n)
    st = np.empty(64, dtype=np.int64)  # frames: start, count, phase; depth ≤ log2(n / 128) + 1
    sn = np.empty(64, dtype=np.int64)
    sp = np.zeros(64, dtype=np.int64)
    sv = np.empty(64)  # the left half's sum while the right half is summed
    st[0] = start
    sn[0] = n
    top = 1
    ret = 0.0
    while top > 0:
        f = top - 1
        nn = sn[f]
        if nn <= 128:
            ret = _pairwise_leaf(a, st[f], nn)
            top -= 1
            continue
        n2 = nn // 2
        n2 -= n2 % 8
        if sp[f] == 0:
            sp[f] = 1
            st[top] = st[f]
            sn[top] = n2
            sp[top] = 0
            top += 1
        elif sp[f] == 1:
            sv[f] = ret
            sp[f] = 2
            st[top] = st[f] + n2
            sn[top] = nn - n2
            sp[top] = 0
            top += 1
        else:
            ret = sv[f] + ret
            top -= 1
    return ret


# ===================================================================================== accounting
@njit(**_JIT)
def account_nodes(nodes: np.ndarray, busy: np.ndarray, capped: np.ndarray, spsum: np.ndarray, n_busy: np.ndarray,
                  n_capped: np.ndarray, n_spsum: np.ndarray, tot: np.ndarray, hot: bool) -> float:
    """``GpuState._account``'s totals for ``nodes`` (already integrated to now): their busy GPUs, and with
    ``hot`` (some unit capped or engaged, now or at the last update) their capped GPUs and Σ speed, set per
    node and the changes added to ``tot`` (busy, capped, Σ speed); without ``hot`` Σ speed moves with the
    busy GPUs (every speed 1). Returns the change of busy GPUs. Sums in numpy's order."""
    n = nodes.shape[0]
    d = np.empty(n)
    for j in range(n):
        d[j] = busy[j] - n_busy[nodes[j]]
    d_busy = pairwise_sum(d, np.int64(0), n)
    tot[0] += d_busy
    for j in range(n):
        n_busy[nodes[j]] = busy[j]
    if hot:
        for j in range(n):
            d[j] = capped[j] - n_capped[nodes[j]]
        tot[1] += pairwise_sum(d, np.int64(0), n)
        for j in range(n):
            d[j] = spsum[j] - n_spsum[nodes[j]]
        tot[2] += pairwise_sum(d, np.int64(0), n)
        for j in range(n):
            n_capped[nodes[j]] = capped[j]
    else:
        tot[2] += d_busy
    for j in range(n):
        n_spsum[nodes[j]] = spsum[j]
    return d_busy


@njit(**_JIT)
def refresh_tp(nodes: np.ndarray, slow: bool, sp_a: np.ndarray, sp_b: np.ndarray, sp_n: np.ndarray,
               n_busy: np.ndarray, n_tp: np.ndarray, tot: np.ndarray) -> float:
    """``GpuState._refresh_tp``: the effective GPUs of ``nodes`` (busy GPUs × the node's speed: the lower of
    ``sp_a`` and ``sp_b``, each empty for none, 1 unless ``slow``, as ``Cluster.node_speed``; or ``sp_n`` per node
    of ``nodes`` when not empty); their change in numpy's sum order, written into ``n_tp`` and ``tot[3]`` when not
    0. Returns the change (0: none)."""
    n = nodes.shape[0]
    tp = np.empty(n)
    d = np.empty(n)
    for j in range(n):
        i = nodes[j]
        s = 1.0
        if sp_n.shape[0]:
            s = sp_n[j]
        elif slow:
            if sp_a.shape[0]:
                x = sp_a[i]
                s = x if x < s or x != x else s  # np.minimum
            if sp_b.shape[0]:
                x = sp_b[i]
                s = x if x < s or x != x else s
        tp[j] = n_busy[i] * s
        d[j] = tp[j] - n_tp[i]
    delta = pairwise_sum(d, np.int64(0), n)
    if delta != 0.0:
        for j in range(n):
            n_tp[nodes[j]] = tp[j]
        tot[3] += delta
    return delta


@njit(**_JIT)
def account_update(nodes: np.ndarray, nout: np.ndarray, up: np.ndarray, now: float, t_acc: float, hot: bool,
                   tp_mode: int, slow: bool, sp_a: np.ndarray, sp_b: np.ndarray, sp_n: np.ndarray, nblk: np.ndarray,
                   n_hot: bool, caps: np.ndarray) -> tuple[float, float, np.ndarray, bool, bool]:
    """The end of ``GpuState._update_now`` for ``nodes`` in one call (after the thermal cap's publication and
    the air heat): ``_account`` (the accounts integrated to ``now`` from ``t_acc``, :func:`account_nodes` of
    ``nout``'s busy GPUs, capped GPUs and Σ speed with ``hot``), then the effective GPUs: ``tp_mode`` 1
    ``_refresh_tp`` (busy GPUs × the node's speed: the lower of ``sp_a`` and ``sp_b``, each empty for none,
    1 unless ``slow``, as ``Cluster.node_speed``, or ``sp_n`` per node of ``nodes`` when not empty; the change in
    numpy's sum order, written when not 0), 0 the
    busy GPUs themselves when they changed (every speed 1); then, with ``n_hot``, the nodes in service whose
    thermal speed (``nout[3]``) differs from ``caps``, written into ``caps``. Returns (the accounts' time, h;
    the change of effective GPUs to record (0: none); the nodes whose speed changed; whether one of them
    rose; whether some node is out of service). ``nblk``: the accounts, per node and the totals (rows ``A_*``)."""
    n = nodes.shape[0]
    n_busy, n_capped, n_spsum, n_tp = nblk[A_BUSY], nblk[A_CAPPED], nblk[A_SPSUM], nblk[A_TP]
    tot = nblk[A_TOT]  # (the four totals: indices 0–3 of the rows A_ACC, A_TOT)
    dt = now - t_acc
    if dt > 0:
        for k in range(4):
            nblk[A_ACC, k] += tot[k] * dt
        t_acc = now
    busy = nout[2]
    d_busy = account_nodes(nodes, busy, nout[4], nout[5], n_busy, n_capped, n_spsum, tot, hot)
    rec = 0.0
    if tp_mode == 1:
        rec = refresh_tp(nodes, slow, sp_a, sp_b, sp_n, n_busy, n_tp, tot)
    elif d_busy != 0.0:
        for j in range(n):
            n_tp[nodes[j]] = busy[j]
        tot[3] += d_busy
        rec = d_busy
    any_down = False
    for j in range(n):
        if not up[j]:
            any_down = True
    nch = 0
    rose = False
    if n_hot:
        for j in range(n):
            if up[j] and caps[nodes[j]] != nout[3, j]:
                nch += 1
    ch = np.empty(nch, dtype=np.int64)
    if nch:
        z = 0
        for j in range(n):
            if up[j] and caps[nodes[j]] != nout[3, j]:
                ch[z] = nodes[j]
                z += 1
        for j in range(n):
            if up[j] and caps[nodes[j]] != nout[3, j]:
                if caps[nodes[j]] < nout[3, j]:  # (np.count_nonzero(caps[ch] < new_sp), before the write)
                    rose = True
                caps[nodes[j]] = nout[3, j]
    return t_acc, rec, ch, rose, any_down


# ===================================================================================== fans (issue 42)
@njit(**_JIT)
def fan_nodes(idx: np.ndarray, util_s: float, util: np.ndarray, stated_s: float, inlet_c: np.ndarray,
              healthy: np.ndarray, short: bool, down: np.ndarray, all_up: bool, p: np.ndarray,
              node_w: np.ndarray, out: np.ndarray) -> tuple[float, float]:
    """``FanLaw.power_w``'s arithmetic for nodes ``idx`` at utilisation ``util`` (one per node; empty: the
    common ``util_s``, whose stated fans ``stated_s`` the caller has): the fan curve and cube law of
    :mod:`twin.physics.fans` (with ``short``: some node lacks fans, the general law by ``healthy``), the
    fans' power of each node into ``node_w`` (0 when down) and the simulated less the stated fans into
    ``out``. ``p``: the law's numbers (exhaust, exhaust − design inlet, min speed, fans a node, max W, the
    non-GPU load idle and busy, GPUs × (demand − idle), GPUs × idle, rated W, reference-inlet rise, full W).
    Returns the fastest fan speed (−1 with no node) and the fans' site power in numpy's sum order, W."""
    exh, k_c, smin, cnt, max_w, ng0, ng1, a_w, g0, rated, rise_ref, full_w = (
        p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9], p[10], p[11])
    top = -1.0
    for j in range(idx.shape[0]):
        i = idx[j]
        u = util_s if util.shape[0] == 0 else util[j]
        share = (u * a_w + g0 + (ng0 + (ng1 - ng0) * u)) / rated
        rise = exh - inlet_c[i]
        if not rise >= 1.0:  # np.maximum(rise, MIN_RISE_C)
            rise = rise if rise != rise else 1.0
        d = share * (k_c / rise)
        if not d >= smin:
            d = d if d != d else smin
        if short:
            h = healthy[i]
            s = (1.0 if d * cnt / h > 1.0 else d * cnt / h) if h > 0 else 0.0
            w = max_w * (h / cnt) * s * s * s
        else:
            s = 1.0 if d > 1.0 else d
            w = max_w * s * s * s
        if s > top:
            top = s
        stated = stated_s
        if util.shape[0] != 0:  # FanLaw.stated_w(u): all fans, at the reference inlet
            ds = share * (k_c / rise_ref)
            if not ds >= smin:
                ds = ds if ds != ds else smin
            ss = (1.0 if ds * cnt / cnt > 1.0 else ds * cnt / cnt) if cnt > 0 else 0.0
            stated = full_w * (cnt / cnt) * ss * ss * ss
        if all_up or down[i] == 0:
            node_w[i] = w
            out[j] = w - stated
        else:
            node_w[i] = 0.0
            out[j] = 0.0
    return top, pairwise_sum(node_w, np.int64(0), np.int64(node_w.shape[0]))


@njit(**_JIT)
def it_nodes(idx: np.ndarray, util: np.ndarray, cap: np.ndarray, gpus: float, idle_w: float, tdp_w: float,
             ng0_w: float, ng_slope_w: float, npw: np.ndarray) -> None:
    """``ITPower.refresh`` under caps: each node of ``idx`` draws
    :func:`twin.physics.power.node_it_power_w` at its utilisation ``util[i]`` and GPU cap ``cap[j]`` with the
    non-GPU load ``ng0_w + ng_slope_w·util`` (:func:`~twin.physics.power.non_gpu_power_w`), into ``npw``, W."""
    for j in range(idx.shape[0]):
        i = idx[j]
        u = util[i]
        d = u * (tdp_w - idle_w) + idle_w
        c = cap[j]
        npw[i] = (c if c < d or c != c else d) * gpus + (ng0_w + ng_slope_w * u)  # np.minimum


@njit(**_JIT)
def it_fans_nodes(idx: np.ndarray, util_all: np.ndarray, cap_a: np.ndarray, cap_b: np.ndarray, gpus: float,
                  idle_w: float, tdp_w: float, ng0_w: float, ng_slope_w: float, npw: np.ndarray, fans: bool,
                  util_s: float, common: bool, stated_s: float, inlet_c: np.ndarray, healthy: np.ndarray,
                  short: bool, down: np.ndarray, all_up: bool, p: np.ndarray, node_w: np.ndarray, site: bool
                  ) -> tuple[float, float, float]:
    """``ITPower.refresh`` under caps in one call: the nodes' tightest cap (``ITPower.min_cap``: the lower of
    ``cap_a`` and ``cap_b``, each empty for none), their power (:func:`it_nodes` at ``util_all``), and with
    ``fans`` the fans' share (:func:`fan_nodes` at the common ``util_s`` with its stated fans ``stated_s`` when
    ``common``, else at each node's ``util_all``) added to it (``npw[idx] += ...``: ``idx`` holds each node once, as
    every caller's does). Returns :func:`fan_nodes`' fastest speed and site total (−1 and 0 without fans), and
    with ``site`` the sum of all of ``npw`` after the writes in numpy's order (``np.add.reduce(npw)``: the IT
    power's site total when no node is out of service; nan without ``site``)."""
    n = idx.shape[0]
    cap = np.empty(n)
    for j in range(n):
        c = INF
        if cap_a.shape[0]:
            x = cap_a[idx[j]]
            if x < c or x != x:  # (kernels_events.minimum_at)
                c = x
        if cap_b.shape[0]:
            x = cap_b[idx[j]]
            if x < c or x != x:
                c = x
        cap[j] = c
    it_nodes(idx, util_all, cap, gpus, idle_w, tdp_w, ng0_w, ng_slope_w, npw)
    top, total = -1.0, 0.0
    if fans:
        ua = np.empty(0)
        if not common:
            ua = np.empty(n)
            for j in range(n):
                ua[j] = util_all[idx[j]]
        out = np.empty(n)
        top, total = fan_nodes(idx, util_s, ua, stated_s, inlet_c, healthy, short, down, all_up, p, node_w, out)
        for j in range(n):
            npw[idx[j]] += out[j]
    tot = pairwise_sum(npw, np.int64(0), npw.shape[0]) if site else math.nan
    return top, total, tot
