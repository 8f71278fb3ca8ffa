"""Compiled kernels of the per-GPU thermal units (issue 41): the units brought to now, their steady states,
caps, speeds and next crossings, the settling of silent crossings, the walk of a group's crossings, the
accounting, and the fused update of a set of nodes that runs these in one call (:func:`update_nodes`).

At each load change of a warm node and each change of a job's pace the cooling model brings 8 to 768
per-GPU thermal units to now, applies their new power, inlet and R, caps the ones heading above the
slowdown temperature and finds each unit's next crossing. As numpy that was 60–100 calls of ~2 µs fixed
cost each; here each step is a plain loop compiled by numba (``@njit(cache=True)``), and the steps of one
update of a set of nodes run in one compiled call.

The equations are those of :mod:`twin.physics.thermal` (scalar forms below, each pinned to its physics
function in ``tests/test_kernels.py``); sums over a node's units follow numpy's pairwise order
(:func:`pairwise_sum`), so the per-node totals are numpy's bit for bit. ``exp``, ``log`` and ``pow`` are
the C library's, where numpy uses its SIMD forms: results can differ from the numpy path in the last bit.

A module of its own beside :mod:`twin.kernels` (which keeps the JIT cache's folder and the fans' and IT
power's kernels) under the same rules: numba's on-disk cache keys a function on its own file, so no kernel
here calls a compiled function of another module (an edit there would not recompile it here: a helper both
need, :func:`pairwise_sum`, is written in each); it imports :mod:`twin.kernels` first only for the cache
folder that module sets before numba is imported. The kernels also run as plain Python
(``NUMBA_DISABLE_JIT=1``: a CI step runs ``tests/test_kernels.py`` and ``tests/test_kernels_units.py`` that
way).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from twin import kernels as _kernels  # noqa: F401  (sets NUMBA_CACHE_DIR before numba compiles anything here)

INF = math.inf
_EPS_C = 1e-6  # temperature tolerance at a crossing, °C (twin.model.cooling.common)
_HIST_MAX_C = 160  # histogram bins, 1 °C each (twin.model.cooling.common)

# rows of the units' float state block (``CoolingArrays.ublk``: (N_ROWS, n_units + pad), each per-unit name of
# ``twin.model.cooling.arrays`` a contiguous view of its row): one argument for eleven in the fused calls
R_T, R_TSS, R_T0, R_TAU, R_SPEED, R_NEXT, R_DUE, R_XP, R_XSP, R_XTSS, R_PW = range(11)
N_ROWS = 11
A_BUSY, A_CAPPED, A_SPSUM, A_TP, A_ACC, A_TOT = range(6)  # rows of the accounts' block (CoolingArrays.nblk)
B_GON, B_ENG, B_SILENT, B_XOK = range(4)  # rows of the units' bool block (CoolingArrays.bblk)

_JIT = {"cache": True, "error_model": "numpy", "nogil": True}  # numpy's float semantics: x/0 = inf, 0/0 = nan


# ===================================================================================== physics, scalar
@njit(**_JIT)
def steady_c(inlet_c: float, power_w: float, r_c_per_w: float) -> float:  # pragma: no cover (compiled)
    """Steady-state temperature T_in + P·R, °C (``physics.thermal.steady_state_c``)."""
    return inlet_c + power_w * r_c_per_w


@njit(**_JIT)
def tau_s(r_c_per_w: float, c_j_per_c: float) -> float:
    """Time constant R·C, s (``physics.thermal.tau_s``)."""
    return r_c_per_w * c_j_per_c


@njit(**_JIT)
def step_c(t_c: float, tss_c: float, dt_h: float, tau: float) -> float:
    """Temperature (°C) ``dt_h`` hours after ``t_c`` toward ``tss_c`` with time constant ``tau`` (s)
    (``physics.thermal.temperature_c`` at t = 3600·dt_h)."""
    return tss_c + (t_c - tss_c) * math.exp(dt_h * -3600.0 / tau)


@njit(**_JIT)
def power_cap_w(demand_w: float, inlet_c: float, r_c_per_w: float, slowdown_c: float, p_min_w: float) -> float:
    """Thermally allowed power, W: the demand if its steady state is at most ``slowdown_c``, else
    max(P_min, (slowdown_c − T_in)/R), never above the demand (``physics.thermal.power_cap_w``)."""
    if inlet_c + demand_w * r_c_per_w <= slowdown_c:
        return demand_w
    c = (slowdown_c - inlet_c) / r_c_per_w
    c = p_min_w if p_min_w > c or c != c else c  # np.maximum (nan propagates)
    return c if c < demand_w or c != c else demand_w  # np.minimum


@njit(**_JIT)
def capped_speed(cap_w: float, demand_w: float, idle_w: float, alpha: float) -> float:
    """Speed of a GPU capped at ``cap_w`` below its demand: min(1, clip((P_cap − P_idle)/(P_d − P_idle))^α),
    0 at or below idle (``physics.thermal.speed_fraction`` where cap < demand)."""
    if cap_w <= idle_w:
        return 0.0
    r = (cap_w - idle_w) / (demand_w - idle_w)
    if r < 0.0:
        r = 0.0
    elif r > 1.0:
        r = 1.0
    s = r ** alpha
    return 1.0 if s > 1.0 else s


@njit(**_JIT)
def crossing_time_s(t0_c: float, tss_c: float, threshold_c: float, tau: float) -> float:
    """Seconds until the step response from ``t0_c`` toward ``tss_c`` reaches ``threshold_c``:
    τ·ln((T0 − T_ss)/(T_x − T_ss)) when T_x lies strictly between them, else inf
    (``physics.thermal.crossing_time_s``)."""
    if (t0_c < threshold_c < tss_c) or (tss_c < threshold_c < t0_c):
        return tau * math.log((t0_c - tss_c) / (threshold_c - tss_c))
    return INF

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
def reduceat_sum(a: np.ndarray, start: int, n: int) -> float:
    """Σ a[start:start + n] in the order of ``np.add.reduceat`` (the first element, plus the pairwise sum
    of the rest)."""
    if n <= 1:
        return a[start]
    return a[start] + pairwise_sum(a, start + 1, n - 1)


# ===================================================================================== GPU units
@njit(**_JIT)
def advance_units(gi: np.ndarray, to_h: np.ndarray, T: np.ndarray, tss: np.ndarray, t0: np.ndarray,
                  tau: np.ndarray, gon: np.ndarray, hist: np.ndarray, w: float) -> float:
    """Bring units ``gi`` from their last update ``t0`` to ``to_h[k]`` (hours; one time for all if
    ``to_h`` has one element): T to its value then, t0 to it, and their GPU-hours since t0 (× ``w``) into
    ``hist`` by steady-state temperature (bins of 1 °C, clipped; powered units only). Returns the
    highest temperature reached (−inf for no unit)."""
    tmp = np.zeros(hist.shape[0])
    one = to_h.shape[0] == 1
    tmax = -INF
    top = hist.shape[0] - 1.0
    for k in range(gi.shape[0]):
        i = gi[k]
        t = to_h[0] if one else to_h[k]
        dt = t - t0[i]
        s = tss[i]
        b = s if s > 0.0 else 0.0
        b = b if b < top else top
        tmp[int(b)] += dt * (1.0 if gon[i] else 0.0)
        x = step_c(T[i], s, dt, tau[i])
        T[i] = x
        t0[i] = t
        if x > tmax:
            tmax = x
    for b in range(hist.shape[0]):
        hist[b] += tmp[b] * w
    return tmax


@njit(**_JIT)
def update_units(nodes: np.ndarray, u: int, g: float, w: float, now: float, up: np.ndarray, util: np.ndarray,
                 pc: np.ndarray, rfactor: np.ndarray, inlet: np.ndarray, rbase: np.ndarray, toff: np.ndarray,
                 idle_w: float, tdp_w: float, c_j_per_c: float, slow_c: float, shut_c: float, pmin_w: float,
                 alpha: float, T: np.ndarray, tss: np.ndarray, tau: np.ndarray, gon: np.ndarray,
                 engaged: np.ndarray, speed: np.ndarray, t_next: np.ndarray, kind: np.ndarray, hot: bool,
                 ucap: np.ndarray, silent_on: bool, x_cap: np.ndarray, x_P: np.ndarray, x_sp: np.ndarray,
                 x_tss: np.ndarray, x_ok: np.ndarray, pw: np.ndarray, t_due: np.ndarray, traced: np.ndarray,
                 heat: int, ng_w: float, ng_idle_w: float, air_share: float, pf: np.ndarray, nout: np.ndarray,
                 uout: np.ndarray) -> tuple[bool, float]:
    """Apply the current power, inlet and R to the units of ``nodes`` (already brought to now by
    :func:`advance_units`), for ``GpuState._update_now``: steady states, time
    constants and, where some unit would settle above the slowdown temperature or is engaged, the caps,
    speeds, next crossings and (``silent_on``) what each free unit will be after its crossing (the stash
    read by ``twin.model.cooling.lazy``).

    Per node ``up`` (in service), ``util``, ``pc`` (power-chain cap per GPU, W; empty: none),
    ``rfactor``, ``inlet``; per unit ``rbase`` and ``toff`` (inlet offsets, °C; empty: none); ``ucap``,
    ``x_cap`` and ``traced`` empty when the model has none. ``hot``: some unit anywhere may be engaged.
    ``heat`` (0: no air zone) the heat the nodes give their air zone (``AirRooms.air_heat_w`` at their draw):
    1 GPUs in the air, 2 not, 3 a share ``air_share`` of the node's heat (heat capture); non-GPU load
    ``ng_w`` at full utilisation, ``ng_idle_w`` idle. ``pf`` (node pools of other power figures, issue 52;
    shape (6, 0): none) gives each node its own ``idle_w``, ``tdp_w``, ``pmin_w``, ``alpha``, ``ng_w`` and
    ``ng_idle_w`` in its rows 0-5 (``CoolingParams.figs``), in place of the scalars.
    Writes per node into ``nout`` rows: demand per GPU, draw per GPU, busy GPUs, speed, capped busy
    GPUs (× w), Σ speed of busy GPUs (× w), thermal cap per GPU (inf: none), air heat (W); per unit into ``uout``
    rows: power, demand, inlet, R (its last row is scratch). With two rows only (no trace row to write), the
    first is the power where some unit needs capping (its node's mean cap reads it) and the others are not
    written: the second loop recomputes R and the inlet as the first did (the same operations: the same values).
    Returns (short: no unit needs capping, the earliest next crossing, h).
    """
    n = nodes.shape[0]
    has_pc = pc.shape[0] > 0
    has_toff = toff.shape[0] > 0
    has_pf = pf.shape[1] > 0
    pd_n = nout[0]
    draw_n = nout[1]
    busy_n = nout[2]
    iw, tw, nw, niw = idle_w, tdp_w, ng_w, ng_idle_w  # this node's figures (its pool's with pf)
    for j in range(n):
        nd = nodes[j]
        if has_pf:
            iw, tw, nw, niw = pf[0, nd], pf[1, nd], pf[4, nd], pf[5, nd]
        d = (iw + (tw - iw) * util[j]) * (1.0 if up[j] else 0.0)
        pd_n[j] = d
        if has_pc:
            c = pc[j]
            draw_n[j] = c if c < d or c != c else d
        else:
            draw_n[j] = d
        busy_n[j] = g if (up[j] and util[j] > 0.0) else 0.0
        if heat:
            gw = draw_n[j]
            ng = nw
            if niw != nw:
                x = (gw - iw) / (tw - iw)
                x = 0.0 if x < 0.0 else (1.0 if x > 1.0 else x)
                ng = niw + (nw - niw) * x
            upf = 1.0 if up[j] else 0.0
            if heat == 3:
                nout[7, j] = air_share * (ng + gw * g) * upf
            else:
                nout[7, j] = (ng + (gw * g if heat == 1 else 0.0)) * upf
    rows = uout.shape[0] == 5  # the trace's rows wanted (else only the power and the scratch row)
    Pu = uout[0]
    tssu = uout[uout.shape[0] - 1]
    need_any = False
    for j in range(n):
        nd = nodes[j]
        for k in range(u):
            i = nd * u + k
            q = j * u + k
            R = rbase[i] * rfactor[nd]
            tin = inlet[nd]
            if has_toff:
                tin = tin + toff[i]
            if rows:
                uout[3, q] = R
                uout[2, q] = tin
                uout[1, q] = pd_n[j]
                Pu[q] = draw_n[j]
            gon[i] = up[j]
            tau[i] = tau_s(R, c_j_per_c)
            s = steady_c(tin, draw_n[j], R)
            tssu[q] = s
            if s > slow_c:
                need_any = True
    if not need_any:  # short path: every unit at its demand, speed 1, no crossing ahead
        for j in range(n):
            nd = nodes[j]
            nout[3, j] = 1.0
            nout[4, j] = 0.0
            nout[5, j] = busy_n[j]
            nout[6, j] = INF
            for k in range(u):
                i = nd * u + k
                tss[i] = tssu[j * u + k]
                if ucap.shape[0]:
                    ucap[i] = INF
                if hot:
                    engaged[i] = False
                    t_next[i] = INF
                    speed[i] = 1.0
                    if silent_on:
                        t_due[i] = INF
        return True, INF
    tmin = INF
    spd = np.empty(u)
    pm, al = pmin_w, alpha
    for j in range(n):
        nd = nodes[j]
        if has_pf:
            iw, pm, al = pf[0, nd], pf[2, nd], pf[3, nd]
        sp_min = INF
        ncap = 0
        any_capped = False
        for k in range(u):
            i = nd * u + k
            q = j * u + k
            R = rbase[i] * rfactor[nd]  # (as the first loop: the same value)
            tin = inlet[nd]
            if has_toff:
                tin = tin + toff[i]
            pd = pd_n[j]
            draw = draw_n[j]
            Ti = T[i]
            need = tssu[q] > slow_c
            eng = need and (engaged[i] or Ti >= slow_c - _EPS_C)
            pcap = power_cap_w(pd, tin, R, slow_c, pm)
            xP = pcap if pcap < draw or pcap != pcap else draw
            if ucap.shape[0]:
                ucap[i] = pcap if eng else INF
            P = xP if eng else draw
            capped = eng and P < draw
            xsp = capped_speed(xP, pd, iw, al) if xP < draw else 1.0  # (read only where xP < draw)
            sp = xsp if capped else 1.0
            s = steady_c(tin, P, R)
            ta = tau[i]
            tc = INF
            kd = 0
            free_up = need and not eng
            if free_up:
                tc = ta * math.log((Ti - s) / (slow_c - s))  # (T < slowdown < T_ss: the crossing exists)
                kd = 1
            elif eng and s > shut_c:
                tc = 0.0 if Ti >= shut_c - _EPS_C else crossing_time_s(Ti, s, shut_c, ta)
                kd = 2
            tn = now + tc / 3600.0
            if silent_on:
                if x_cap.shape[0]:
                    x_cap[i] = pcap
                xt = steady_c(tin, xP, R)
                x_P[i] = xP
                x_sp[i] = xsp if xP < draw else 1.0
                x_tss[i] = xt
                x_ok[i] = free_up and xt <= shut_c and not (traced.shape[0] and traced[i])
                pw[i] = P
                t_due[i] = tn
            tss[i] = s
            engaged[i] = eng
            speed[i] = sp
            t_next[i] = tn
            kind[i] = kd
            if tn < tmin:
                tmin = tn
            Pu[q] = P
            if sp < sp_min:
                sp_min = sp
            if capped:
                any_capped = True
                if busy_n[j] > 0.0:
                    ncap += 1
            spd[k] = sp if busy_n[j] > 0.0 else 0.0
        nout[3, j] = sp_min
        nout[4, j] = ncap * w
        nout[5, j] = pairwise_sum(spd, np.int64(0), u) * w
        nout[6, j] = pairwise_sum(Pu, j * u, u) / u if any_capped else INF
    return False, tmin


@njit(**_JIT)
def settle_units(idx: np.ndarray, now: float, u: int, w: float, ublk: np.ndarray, bblk: np.ndarray, hist: np.ndarray,
                 kind: np.ndarray, x_cap: np.ndarray, ucap: np.ndarray, nblk: np.ndarray, caps: np.ndarray,
                 oth_n: np.ndarray) -> tuple[float, int, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                             np.ndarray, np.ndarray, float, float]:
    """Units ``idx`` crossed their slowdown temperature silently at t_x = ``t_next`` ≤ ``now``: they take
    their stashed capped state from t_x, and what the crossings changed over [t_x, now) is added to the
    integrals in closed form (``LazyCrossings.settle``, which does the rest: publications and series).

    ``ublk``, ``bblk``: the units' float and bool state (rows ``R_*``, ``B_*``; with silent crossings on).
    ``x_cap`` and ``ucap`` are empty without per-GPU caps, ``oth_n`` empty without other speed sources.
    Updates in place the units' state, the histogram, and in the accounts' block ``nblk`` (rows ``A_*``) per node
    the capped and speed sums and effective GPUs and ``acc`` / ``tot`` (indices 1–3). Returns (highest
    temperature, silent flags cleared, the nodes in order, their new thermal speeds, their thermal caps per GPU
    (inf: none), the times and changes of effective GPUs, the crossing times and power changes per unit in
    ``idx`` order (W), Σ change × held time (Wh), Σ change (W))."""
    T, tss, t0, tau, speed, t_next = ublk[R_T], ublk[R_TSS], ublk[R_T0], ublk[R_TAU], ublk[R_SPEED], ublk[R_NEXT]
    t_due, x_tss, x_sp, x_P, pw = ublk[R_DUE], ublk[R_XTSS], ublk[R_XSP], ublk[R_XP], ublk[R_PW]
    gon, engaged, silent = bblk[B_GON], bblk[B_ENG], bblk[B_SILENT]
    n_busy, n_capped, n_spsum, n_tp = nblk[A_BUSY], nblk[A_CAPPED], nblk[A_SPSUM], nblk[A_TP]
    acc, tot = nblk[A_ACC], nblk[A_TOT]  # (the four totals: indices 0–3 of their rows)
    m = idx.shape[0]
    ts = np.empty(m)
    for k in range(m):
        ts[k] = t_next[idx[k]]
    tmax = advance_units(idx, ts, T, tss, t0, tau, gon, hist, w)
    has_xcap = x_cap.shape[0] > 0
    capped = np.empty(m, dtype=np.bool_)
    dP = np.empty(m)
    held = np.empty(m)
    n_sil = 0
    for k in range(m):
        i = idx[k]
        tss[i] = x_tss[i]
        engaged[i] = True
        if has_xcap:
            ucap[i] = x_cap[i]
        speed[i] = x_sp[i]
        xp = x_P[i]
        capped[k] = xp < pw[i]
        dP[k] = (xp - pw[i]) * w
        pw[i] = xp
        t_next[i] = INF
        t_due[i] = INF
        kind[i] = 0
        if silent[i]:
            n_sil += 1
        silent[i] = False
        held[k] = now - ts[k]
    # in node order, each node's crossings in time order (np.lexsort((ts, node)))
    o = np.arange(m)
    nd_o = np.empty(m, dtype=np.int64)
    grouped = True  # idx's nodes in order (the usual case): each node's few crossings sorted by time in place
    for k in range(1, m):
        if idx[k] // u < idx[k - 1] // u:
            grouped = False
    if grouped:
        lo = 0
        for k in range(m):
            if k and idx[k] // u != idx[k - 1] // u:
                lo = k
            j = k
            while j > lo and ts[k] < ts[o[j - 1]]:  # (stable insertion)
                o[j] = o[j - 1]
                j -= 1
            o[j] = k
    else:
        o1 = argsort_stable(ts)
        nd_f = np.empty(m)  # the nodes as float keys (exact below 2**53: the same order; one compiled sort)
        for k in range(m):
            nd_f[k] = idx[o1[k]] // u
        o2 = argsort_stable(nd_f)
        for k in range(m):
            o[k] = o1[o2[k]]
    for k in range(m):
        nd_o[k] = idx[o[k]] // u
    last = np.ones(m, dtype=np.bool_)
    for k in range(m - 1):
        last[k] = nd_o[k + 1] != nd_o[k]
    ng = 0
    for k in range(m):
        if last[k]:
            ng += 1
    nodes = np.empty(ng, dtype=np.int64)
    first = np.empty(ng, dtype=np.int64)
    dcap = np.empty(m)
    dsp = np.empty(m)
    a1 = np.empty(m)
    a2 = np.empty(m)
    after = np.empty(m)
    d = np.empty(m)
    has_oth = oth_n.shape[0] > 0
    gj = 0
    start = 0
    cm = INF
    prev_after = 0.0
    for k in range(m):
        j = o[k]
        nk = nd_o[k]
        if k == 0 or last[k - 1]:
            start = k
            cm = INF
        nb = n_busy[nk]
        bz = 1.0 if nb > 0.0 else 0.0
        dcap[k] = (1.0 if (nb > 0.0 and capped[j]) else 0.0) * w
        dsp[k] = bz * (w * (x_sp[idx[j]] - 1.0))
        a1[k] = dcap[k] * held[j]
        a2[k] = dsp[k] * held[j]
        xs = x_sp[idx[j]]
        if xs < cm:
            cm = xs
        old = caps[nk]
        aft = cm if cm < old else old
        after[k] = aft
        bef = old if k == start else prev_after
        prev_after = aft
        if has_oth:
            ot = oth_n[nk]
            d[k] = nb * ((aft if aft < ot else ot) - (bef if bef < ot else ot))
        else:
            d[k] = nb * (aft - bef)
        if last[k]:
            nodes[gj] = nk
            first[gj] = start
            gj += 1
    acc[1] += pairwise_sum(a1, np.int64(0), m)
    acc[2] += pairwise_sum(a2, np.int64(0), m)
    tot[1] += pairwise_sum(dcap, np.int64(0), m)
    tot[2] += pairwise_sum(dsp, np.int64(0), m)
    new_caps = np.empty(ng)
    for q in range(ng):
        s0 = first[q]
        cnt = (first[q + 1] if q + 1 < ng else m) - s0
        n_capped[nodes[q]] += reduceat_sum(dcap, s0, cnt)
        n_spsum[nodes[q]] += reduceat_sum(dsp, s0, cnt)
        new_caps[q] = after[s0 + cnt - 1]
    nnz = 0
    for k in range(m):
        if d[k] != 0.0:
            nnz += 1
    tp_t = np.empty(nnz)
    tp_dv = np.empty(nnz)
    if nnz:
        dh = np.empty(nnz)
        z = 0
        for k in range(m):
            if d[k] != 0.0:
                tp_t[z] = ts[o[k]]
                tp_dv[z] = d[k]
                dh[z] = d[k] * held[o[k]]
                z += 1
        acc[3] += pairwise_sum(dh, np.int64(0), np.int64(nnz))
        tp = np.empty(ng)
        dtp = np.empty(ng)
        for q in range(ng):
            sp = new_caps[q]
            if has_oth and oth_n[nodes[q]] < sp:
                sp = oth_n[nodes[q]]
            tp[q] = n_busy[nodes[q]] * sp
            dtp[q] = tp[q] - n_tp[nodes[q]]
        tot[3] += pairwise_sum(dtp, np.int64(0), np.int64(ng))
        for q in range(ng):
            n_tp[nodes[q]] = tp[q]
    # the nodes' thermal caps (the per-GPU mean of their powers where some unit is slowed)
    it_caps = np.empty(ng)
    for q in range(ng):
        b = nodes[q] * u
        slowed = False
        for k in range(u):
            if speed[b + k] < 1.0:
                slowed = True
        it_caps[q] = pairwise_sum(pw, b, u) / u if slowed else INF
    a3 = np.empty(m)
    for k in range(m):
        a3[k] = dP[k] * held[k]
    return (tmax, n_sil, nodes, new_caps, it_caps, tp_t, tp_dv, ts, dP, pairwise_sum(a3, np.int64(0), m),
            pairwise_sum(dP, np.int64(0), m))


@njit(**_JIT)
def silent_due(gi: np.ndarray, due_h: float, silent: np.ndarray, t_next: np.ndarray, clear_rest: bool
               ) -> tuple[np.ndarray, int]:
    """The units of ``gi`` whose silent crossing is due by ``due_h`` (h), in ``gi``'s order; with
    ``clear_rest``, the silent flags of the others among ``gi`` are cleared (their node is being updated:
    re-planned from its new state). Returns (the due units, the number of flags cleared)."""
    nd = 0
    for k in range(gi.shape[0]):
        i = gi[k]
        if silent[i] and t_next[i] <= due_h:
            nd += 1
    idx = np.empty(nd, dtype=np.int64)
    z = 0
    cleared = 0
    for k in range(gi.shape[0]):
        i = gi[k]
        if silent[i]:
            if t_next[i] <= due_h:
                idx[z] = i
                z += 1
            elif clear_rest:
                silent[i] = False
                cleared += 1
    return idx, cleared


# ===================================================================================== one update, fused
@njit(**_JIT)
def update_nodes(nodes: np.ndarray, now: float, eps_h: float, settle: bool, t_acc: float,
                 down: np.ndarray, node_util: np.ndarray, u: int, g: float, w: float, pc: np.ndarray,
                 rfactor: np.ndarray, inlet: np.ndarray, rbase: np.ndarray, toff: np.ndarray, prm: np.ndarray,
                 ublk: np.ndarray, bblk: np.ndarray, hist: np.ndarray, kind: np.ndarray, hot: bool, ucap: np.ndarray,
                 silent_on: bool, x_cap: np.ndarray, traced: np.ndarray, heat: int, nblk: np.ndarray, caps: np.ndarray,
                 oth_n: np.ndarray, it_caps: np.ndarray, pf: np.ndarray, nout: np.ndarray, uout: np.ndarray,
                 up: np.ndarray) -> tuple[float, int, int, float, np.ndarray, int, int, float, float, bool, float, bool]:
    """``GpuState._update_now``'s unit work in one call: with ``settle``, the silent crossings of the units of
    ``nodes`` (``gi``, node by node: ``kernels_events.unit_indices``, built here) due by ``now + eps_h`` are settled (:func:`silent_due` clearing the others'
    flags, the accounts integrated to now from ``t_acc`` as ``GpuState.integrate``, :func:`settle_units` and
    the write of the speeds they changed into ``caps`` as ``kernels_events.put_changed_at``); then
    :func:`advance_units` to ``now`` and :func:`update_units` with per node ``up`` (``down == 0``) and
    ``util`` gathered from ``down`` and ``node_util``. ``ublk``, ``bblk``, ``nblk``: the units' float and bool state
    and the accounts (rows ``R_*``, ``B_*``, ``A_*``). ``prm``: idle W, demand W, C J/°C, slowdown °C,
    shutdown °C, lowest cap W, α, non-GPU W at full and idle utilisation, air share; ``pf``: each node's own
    power figures in a hall of node pools (:func:`update_units`; shape (6, 0): none). The same kernels in the
    same order as the calls they replace, so the results are theirs bit for bit.

    Writes per node ``up`` (in service) into ``up[:len(nodes)]``. Returns (the accounts' time, h; silent flags
    cleared; silent crossings settled; the highest temperature reached; of the settling, in one array (one
    array to box, not five: :func:`unpack_settled` splits it): the times and changes of effective GPUs (``ntp``
    each), the crossing times and power changes (W; ``m`` each) and the nodes whose speed it changed (as
    floats, exact); ``ntp``; ``m``; Σ change × held time (Wh); Σ change (W); short (no unit needs capping);
    the earliest next crossing, h; whether some node's thermal cap per GPU (``nout[6]``) differs from
    ``it_caps``)."""
    T, tss, t0, tau, speed, t_next = ublk[R_T], ublk[R_TSS], ublk[R_T0], ublk[R_TAU], ublk[R_SPEED], ublk[R_NEXT]
    x_P, x_sp, x_tss, pw, t_due = ublk[R_XP], ublk[R_XSP], ublk[R_XTSS], ublk[R_PW], ublk[R_DUE]  # (read only with silent_on)
    gon, engaged, silent, x_ok = bblk[B_GON], bblk[B_ENG], bblk[B_SILENT], bblk[B_XOK]  # (x_ok: only with silent_on)
    tmax = -INF
    cleared = 0
    n_sil = 0
    e_wh = 0.0
    dP_sum = 0.0
    ntp = 0
    m = 0
    res = np.empty(0)
    n = nodes.shape[0]
    gi = np.empty(n * u, dtype=np.int64)  # the units of nodes, node by node
    for j in range(n):
        for k in range(u):
            gi[j * u + k] = nodes[j] * u + k
    if settle:
        idx, cleared = silent_due(gi, now + eps_h, silent, t_next, settle)  # (settle: True, not a literal)
        if idx.shape[0]:
            dt = now - t_acc
            if dt > 0:
                for k in range(4):  # (nblk's rows A_ACC, A_TOT: the four totals)
                    nblk[A_ACC, k] += nblk[A_TOT, k] * dt
                t_acc = now
            tmax, n_sil, snodes, new_caps, _, tp_t, tp_dv, ts, dP, e_wh, dP_sum = settle_units(
                idx, now, u, w, ublk, bblk, hist, kind, x_cap, ucap, nblk, caps, oth_n)
            nch = 0
            for j in range(snodes.shape[0]):
                if caps[snodes[j]] != new_caps[j]:
                    nch += 1
            ntp = tp_t.shape[0]
            m = ts.shape[0]
            res = np.empty(2 * ntp + 2 * m + nch)
            for k in range(ntp):
                res[k] = tp_t[k]
                res[ntp + k] = tp_dv[k]
            z = 2 * ntp
            for k in range(m):
                res[z + k] = ts[k]
                res[z + m + k] = dP[k]
            if nch:
                z += 2 * m
                for j in range(snodes.shape[0]):
                    if caps[snodes[j]] != new_caps[j]:
                        res[z] = snodes[j]
                        z += 1
                for j in range(snodes.shape[0]):
                    caps[snodes[j]] = new_caps[j]
    to_h = np.empty(1)
    to_h[0] = now
    t2 = advance_units(gi, to_h, T, tss, t0, tau, gon, hist, w)
    if t2 > tmax:
        tmax = t2
    util = np.empty(n)
    for j in range(n):
        up[j] = down[nodes[j]] == 0
        util[j] = node_util[nodes[j]]
    short, t_min = update_units(nodes, u, g, w, now, up, util, pc, rfactor, inlet, rbase, toff, prm[0], prm[1],
                                prm[2], prm[3], prm[4], prm[5], prm[6], T, tss, tau, gon, engaged, speed, t_next,
                                kind, hot, ucap, silent_on, x_cap, x_P, x_sp, x_tss, x_ok, pw, t_due, traced, heat,
                                prm[7], prm[8], prm[9], pf, nout, uout)
    ne = False
    for j in range(n):
        if it_caps[nodes[j]] != nout[6, j]:
            ne = True
            break
    return (t_acc, cleared, n_sil, tmax, res, ntp, m, e_wh, dP_sum, short, t_min, ne)


@njit(**_JIT)
def wake_units(now: float, eps_h: float, silent_on: bool, t_acc: float, u: int, w: float, ublk: np.ndarray,
               bblk: np.ndarray, hist: np.ndarray, kind: np.ndarray, x_cap: np.ndarray, ucap: np.ndarray,
               nblk: np.ndarray, caps: np.ndarray, oth_n: np.ndarray
               ) -> tuple[np.ndarray, float, int, float, np.ndarray, int, int, int, float, float]:
    """``GpuState._wake``'s split and quick path in one call: the units whose crossing is due by ``now + eps_h``
    (``np.flatnonzero(t_due <= now + eps_h)``); with ``silent_on``, those heading for a slowdown crossing that
    may be silent (``kind == 1`` and ``x_ok``: the quick ones) take their stashed state now as
    ``LazyCrossings.settle`` does (``ublk``, ``bblk``, ``nblk``: the units' float and bool state and the accounts,
    rows ``R_*``, ``B_*``, ``A_*``; ``t_next`` at most ``now``, the accounts integrated from ``t_acc``,
    :func:`settle_units`). Returns (the other due units; the accounts' time, h; then, for the quick ones (none:
    0 and an empty array): :func:`settle_units`' silent flags cleared and highest temperature, its seven arrays
    in one (one array to box: the nodes as floats, exact, their new speeds and thermal caps, ``ng`` each, the
    times and changes of effective GPUs, ``ntp`` each, the crossing times and power changes, ``m`` each), ``ng``,
    ``ntp``, ``m``, Σ change × held time (Wh) and Σ change (W))."""
    t_next = ublk[R_NEXT]
    t_due = ublk[R_DUE] if silent_on else t_next  # (the same array while silent crossings are off)
    x_ok = bblk[B_XOK]  # (read only with silent_on)
    nd = nq = 0
    lim = now + eps_h
    for i in range(kind.shape[0]):  # (the units: ublk's rows are padded)
        if t_due[i] <= lim:
            nd += 1
            if silent_on and kind[i] == 1 and x_ok[i]:
                nq += 1
    rest = np.empty(nd - nq, dtype=np.int64)
    q = np.empty(nq, dtype=np.int64)
    a = b = 0
    if nd:
        for i in range(kind.shape[0]):  # (the units: ublk's rows are padded)
            if t_due[i] <= lim:
                if silent_on and kind[i] == 1 and x_ok[i]:
                    q[a] = i
                    a += 1
                else:
                    rest[b] = i
                    b += 1
    if nq == 0:
        return (rest, t_acc, 0, -INF, np.empty(0), 0, 0, 0, 0.0, 0.0)
    for k in range(nq):
        i = q[k]
        x = t_next[i]
        t_next[i] = x if x < now or x != x else now  # np.minimum(t_next[q], now)
    dt = now - t_acc
    if dt > 0:
        for k in range(4):  # (nblk's rows A_ACC, A_TOT: the four totals)
            nblk[A_ACC, k] += nblk[A_TOT, k] * dt
        t_acc = now
    tmax, n_sil, nodes, new_caps, it_caps, tp_t, tp_dv, ts, dP, e_wh, dP_sum = settle_units(
        q, now, u, w, ublk, bblk, hist, kind, x_cap, ucap, nblk, caps, oth_n)
    ng, ntp, m = nodes.shape[0], tp_t.shape[0], ts.shape[0]
    res = np.empty(3 * ng + 2 * ntp + 2 * m)
    for k in range(ng):
        res[k] = nodes[k]
        res[ng + k] = new_caps[k]
        res[2 * ng + k] = it_caps[k]
    z = 3 * ng
    for k in range(ntp):
        res[z + k] = tp_t[k]
        res[z + ntp + k] = tp_dv[k]
    z += 2 * ntp
    for k in range(m):
        res[z + k] = ts[k]
        res[z + m + k] = dP[k]
    return (rest, t_acc, n_sil, tmax, res, ng, ntp, m, e_wh, dP_sum)
