"""Issue 41 (layout41): what the per-GPU units' memory layout costs a compiled update, in isolation.

A stand-in of ``twin.kernels_units.update_nodes``' per-unit work (``advance_units`` then ``update_units``'
capped path: the same loads and stores of 15 float64 fields and 4 bool/int8 fields per unit, simplified
arithmetic) compiled four ways over the same values: 15 separate 1-D arrays (today), one ``(n_units, 15)``
C-contiguous array of records (a unit's fields in two cache lines), one ``(15, n_units + 24)`` block of
padded rows (each field still a contiguous row), and the separate-array kernel called on the record
array's strided columns and on the padded rows as 15 1-D views (the rows' memory, today's arguments). Each call timed warm (the same arrays again) and cold (a 32 MB write between
calls, as the Python between two load changes evicts the units' lines). Not part of ``python -m
benchmarks``; run ``python benchmarks/micro_unit_layout.py [n_units]`` (default 1,024: the air hall).
"""

from __future__ import annotations

import math
import sys
import time

import numpy as np
from numba import njit

(T_, TSS, T0, TAU, RB, TOFF, UCAP, XCAP, XP, XSP, XTSS, PW, TDUE, SPD, TNEXT) = range(15)
K = 15


@njit(cache=False, error_model="numpy")
def kern2d(gi, X, gon, eng, xok, kind, now, slow, c):  # type: ignore[no-untyped-def]  # pragma: no cover
    """The stand-in on a 2-D array indexed ``X[unit, field]`` (C: records; a transposed block: rows)."""
    tmin = math.inf
    for k in range(gi.shape[0]):
        i = gi[k]
        dt = now - X[i, T0]
        s = X[i, TSS]
        X[i, T_] = s + (X[i, T_] - s) * math.exp(dt * -3600.0 / X[i, TAU])
        X[i, T0] = now
    for k in range(gi.shape[0]):
        i = gi[k]
        R = X[i, RB] * 1.1
        tin = 25.0 + X[i, TOFF]
        gon[i] = True
        X[i, TAU] = R * c
        s = tin + 700.0 * R
        Ti = X[i, T_]
        e = s > slow and (eng[i] or Ti >= slow)
        pcap = (slow - tin) / R
        xP = pcap if pcap < 700.0 else 700.0
        X[i, UCAP] = pcap if e else math.inf
        P = xP if e else 700.0
        tc = math.inf
        if s > slow and not e:
            tc = X[i, TAU] * math.log((Ti - s) / (slow - s))
        tn = now + tc / 3600.0
        X[i, XCAP] = pcap
        X[i, XP] = xP
        X[i, XSP] = xP / 700.0
        X[i, XTSS] = tin + xP * R
        xok[i] = not e
        X[i, PW] = P
        X[i, TDUE] = tn
        X[i, TSS] = tin + P * R
        eng[i] = e
        X[i, SPD] = 1.0
        X[i, TNEXT] = tn
        kind[i] = 1
        if tn < tmin:
            tmin = tn
    return tmin


@njit(cache=False, error_model="numpy")
def kern1d(gi, T, tss, t0, tau, rb, toff, ucap, xcap, xp_, xsp, xtss, pw, tdue, spd, tnext,  # type: ignore[no-untyped-def]
           gon, eng, xok, kind, now, slow, c):  # pragma: no cover
    """The same stand-in on 15 separate 1-D arrays (today's layout)."""
    tmin = math.inf
    for k in range(gi.shape[0]):
        i = gi[k]
        dt = now - t0[i]
        s = tss[i]
        T[i] = s + (T[i] - s) * math.exp(dt * -3600.0 / tau[i])
        t0[i] = now
    for k in range(gi.shape[0]):
        i = gi[k]
        R = rb[i] * 1.1
        tin = 25.0 + toff[i]
        gon[i] = True
        tau[i] = R * c
        s = tin + 700.0 * R
        Ti = T[i]
        e = s > slow and (eng[i] or Ti >= slow)
        pcap = (slow - tin) / R
        xP = pcap if pcap < 700.0 else 700.0
        ucap[i] = pcap if e else math.inf
        P = xP if e else 700.0
        tc = math.inf
        if s > slow and not e:
            tc = tau[i] * math.log((Ti - s) / (slow - s))
        tn = now + tc / 3600.0
        xcap[i] = pcap
        xp_[i] = xP
        xsp[i] = xP / 700.0
        xtss[i] = tin + xP * R
        xok[i] = not e
        pw[i] = P
        tdue[i] = tn
        tss[i] = tin + P * R
        eng[i] = e
        spd[i] = 1.0
        tnext[i] = tn
        kind[i] = 1
        if tn < tmin:
            tmin = tn
    return tmin


def main(n: int) -> None:
    """Print µs per call (best of 5 rounds) for 8, 64 and 704 units, each layout warm and cold."""
    rng = np.random.default_rng(1)
    S = np.ones((K, n))
    S[T_], S[TSS], S[T0], S[TAU] = 40.0, 60.0, 0.0, 30.0
    S[RB] = rng.uniform(0.08, 0.1, n)
    S[TOFF] = rng.uniform(0.0, 2.0, n)
    rec = np.ascontiguousarray(S.T)  # (n, k): records
    rows = np.zeros((K, n + 24))  # (k, n + pad): padded rows (unpadded rows 2**k bytes apart share L1 sets)
    rows[:, :n] = S
    sep = [S[c].copy() for c in range(K)]
    cols = [rec[:, c] for c in range(K)]
    rviews = [rows[c, :n] for c in range(K)]  # the padded rows' memory, passed as 15 contiguous 1-D arrays
    gon, eng = np.ones(n, bool), np.zeros(n, bool)
    xok, kind = np.zeros(n, bool), np.zeros(n, np.int8)
    big = np.empty(4_000_000)
    calls = {
        "separate": lambda gi: kern1d(gi, *sep, gon, eng, xok, kind, 1.0, 80.0, 300.0),
        "records": lambda gi: kern2d(gi, rec, gon, eng, xok, kind, 1.0, 80.0, 300.0),
        "rows": lambda gi: kern2d(gi, rows[:, :n].T, gon, eng, xok, kind, 1.0, 80.0, 300.0),
        "row-views": lambda gi: kern1d(gi, *rviews, gon, eng, xok, kind, 1.0, 80.0, 300.0),
        "strided-cols": lambda gi: kern1d(gi, *cols, gon, eng, xok, kind, 1.0, 80.0, 300.0),
    }
    for nu in (8, 64, 704):
        gi = np.arange(n - nu - 8, n - 8, dtype=np.int64)
        out = []
        for name, f in calls.items():
            for cold in (False, True):
                reps = 300 if cold else 3000
                best = math.inf
                for _ in range(5):
                    tot = 0
                    for _ in range(reps):
                        if cold:
                            big[::8] += 1.0
                        t = time.perf_counter_ns()
                        f(gi)
                        tot += time.perf_counter_ns() - t
                    best = min(best, tot / reps / 1000.0)
                out.append(f"{name}/{'cold' if cold else 'warm'} {best:.2f}")
        print(f"{nu} units: " + ", ".join(out) + " µs", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1024)
