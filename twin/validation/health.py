"""Node-health cases (issue 26): gamma frailty against the negative binomial, the SDC rollback and the
straggler policies against their closed forms (twin/model/health.py).

* ``frailty_negbin``: N nodes with one exponential part that renews at once (a transient fault, no
  repair), frailty variance v: per-node failure counts over the horizon are negative binomial with
  variance m + m²v; the moment estimate v̂ = (s² − m̄)/m̄² of each replication has mean v (up to an
  O(1/N) bias, far inside the interval). Wrong model: no frailty (v = 0).
* ``sdc_rollback`` (exact): one job with sync checkpoints every I hours of progress (write time w),
  a node that corrupts its state at t_c, detected L later: the job loses the progress since the last
  checkpoint captured before t_c and completed by the detection, for L shorter and longer than I.
* ``straggler_policy`` (exact): one slowdown to speed s lasting D (detection and hot-swap repair of the
  degraded part) detected by the straggler detector after d: ``keep`` loses (1 − s)·D of progress,
  ``swap`` loses (1 − s)·d + the restart R + the progress since the last checkpoint at the swap.
"""

from __future__ import annotations

import math

import numpy as np

from twin.validation.framework import CaseResult, Doc, Exact, Settings, TMean, result, run_doc

REL_TOL = 1e-9


# ---- frailty ---------------------------------------------------------------------------------------

def frailty_doc(n_nodes: int, mtbf_h: float, horizon_h: float, variance: float) -> Doc:
    return {
        "name": "validation-frailty-negbin",
        "horizon_days": horizon_h / 24.0,
        "cluster": {"racks": 1, "nodes_per_rack": n_nodes, "node": {"gpus": 8, "parts": {
            "fault": {"count": 1, "effect": "transient", "failure": {"mtbf_h": mtbf_h}}}}},
        "health": {"frailty": {"variance": variance}},
    }


def node_counts(res: object, n_nodes: int) -> np.ndarray:
    """Failures per node in one replication (from the events table)."""
    ev = res.tables["events"]  # type: ignore[attr-defined]
    fails = ev[ev["kind"] == "fail"]
    return np.bincount(fails["node"].astype(int).to_numpy(), minlength=n_nodes)


def frailty_negbin(s: Settings) -> list[CaseResult]:
    """Mean over replications of v̂ = (s² − m̄)/m̄² against the frailty variance v (module docstring)."""
    v, m, n = 0.5, 8.0, 1000
    horizon_h = 2000.0
    reps = s.reps(40, 120)
    doc = frailty_doc(n, horizon_h / m, horizon_h, v)
    vhat, means = [], []
    for res in run_doc(doc, reps, s):
        c = node_counts(res, n).astype(float)
        mb, s2 = float(c.mean()), float(c.var(ddof=1))
        vhat.append((s2 - mb) / mb ** 2)
        means.append(mb)
    mean_ok = abs(float(np.mean(means)) / m - 1) < 0.05  # the frailty has mean 1: the mean count is unchanged
    return [result("frailty_negbin", f"frailty variance v̂ = (s² − m̄)/m̄², {n} nodes, m = {m:g}", v,
                   TMean(np.array(vhat)), s, "negative binomial counts: variance m + m²v",
                   wrong={"no frailty (Poisson counts)": 0.0, "v doubled": 2 * v},
                   invariants={"mean count per node ≈ m (frailty mean 1)": mean_ok})]


# ---- SDC rollback --------------------------------------------------------------------------------

def sdc_doc(corrupt_h: float, latency_h: float, interval_h: float, write_h: float, horizon_h: float) -> Doc:
    """One node and one hot spare; the job's node (node 0) is defective and corrupts at ``corrupt_h``."""
    return {
        "name": "validation-sdc-rollback",
        "horizon_days": horizon_h / 24.0,
        "cluster": {"racks": 1, "nodes_per_rack": 2, "node": {"gpus": 8, "parts": {}}},
        "workload": {"scheduler": {"policy": "fifo", "hot_spares": 1},
                     "restart": {"detection_h": 0.05, "reschedule_h": 0.1, "warmup_h": 0.1, "read_h": 0.05},
                     "jobs": [{"name": "job", "gpus": 8, "work_h": 10 * horizon_h,
                               "checkpoint": {"interval_h": interval_h, "write_h": write_h, "mode": "sync"}}]},
        "health": {"sdc": {"defective_share": 1.0, "corruption": {"dist": "fixed", "value_h": corrupt_h},
                           "detection": {"dist": "fixed", "value_h": latency_h}, "test_h": 1.0,
                           "test_finds": 1.0}},
    }


def sync_progress(t_h: float, interval_h: float, write_h: float) -> float:
    """Progress at ``t_h`` of a job started at 0 at full speed with a sync checkpoint after every
    ``interval_h`` of progress, each pausing it ``write_h``."""
    cycle = interval_h + write_h
    n = math.floor(t_h / cycle)
    return n * interval_h + min(t_h - n * cycle, interval_h)


def sdc_expected_lost(corrupt_h: float, latency_h: float, interval_h: float, write_h: float) -> tuple[float, float]:
    """(progress lost rolling back, the wrong answer 'since the last completed checkpoint')."""
    detect = corrupt_h + latency_h
    p = sync_progress(detect, interval_h, write_h)
    j = 0  # checkpoint j: captured at j·I + (j − 1)·w with progress j·I, completed at j·(I + w)
    while (j + 1) * interval_h + j * write_h < corrupt_h and (j + 1) * (interval_h + write_h) <= detect:
        j += 1
    last_done = math.floor(detect / (interval_h + write_h))
    return p - j * interval_h, p - last_done * interval_h


def sdc_rollback(s: Settings) -> list[CaseResult]:
    """Work lost to one SDC rollback, simulated (the jobs table's interruption row) vs the closed form,
    for a detection latency shorter and longer than the checkpoint interval."""
    interval_h, write_h = 2.0, 0.1
    out = []
    # short: a corruption just before a checkpoint's capture, detected after that checkpoint completed;
    # long: detected two checkpoints later
    for corrupt_h, latency_h in ((6.1, 0.5), (5.3, 4.7)):
        horizon_h = corrupt_h + latency_h + 0.5
        res = run_doc(sdc_doc(corrupt_h, latency_h, interval_h, write_h, horizon_h), 1, s)[0]
        j = res.tables["jobs"]
        rows = j[(j.record == "interruption") & (j.cause == "sdc")]
        lost = float(rows.lost_h.iloc[0]) if len(rows) == 1 else math.nan
        want, wrong = sdc_expected_lost(corrupt_h, latency_h, interval_h, write_h)
        out.append(result("sdc_rollback", f"progress lost, latency {latency_h:g} h vs interval {interval_h:g} h",
                          want, Exact(lost, REL_TOL * max(1.0, want)), s,
                          "since the last checkpoint captured before the corruption", sample="exact",
                          wrong={"since the last completed checkpoint": wrong} if abs(wrong - want) > 1e-6 else {},
                          invariants={"one SDC rollback": len(rows) == 1,
                                      "the node went to test": res.metrics.get("sdc.rollbacks") == 1.0}))
    return out


# ---- stragglers ---------------------------------------------------------------------------------

def straggler_doc(policy: str, seed: int, speed: float, detect_h: float, repair_h: float, d_h: float,
                  interval_h: float, horizon_h: float, mtbf_h: float) -> Doc:
    """A job on two nodes and one hot spare; a degraded part (exponential life ``mtbf_h``) hot-swapped
    ``detect_h`` + ``repair_h`` after it fails; sync checkpoints without write time (so the schedule
    of pauses does not depend on restarts)."""
    return {
        "name": "validation-straggler",
        "seed": seed,
        "horizon_days": horizon_h / 24.0,
        "cluster": {"racks": 1, "nodes_per_rack": 3, "node": {"gpus": 8, "parts": {
            "slow": {"effect": "degraded", "speed": {"low": speed, "high": speed},
                     "failure": {"mtbf_h": mtbf_h},
                     "repair": {"hot_swap": True, "time": {"dist": "fixed", "value_h": repair_h}}}}}},
        "maintenance": {"detection": {"dist": "fixed", "value_h": detect_h},
                        "crews": {"t": {"count": 4, "shift": "24x7"}}},
        "workload": {"scheduler": {"policy": "fifo", "hot_spares": 1},
                     "restart": {"detection_h": 0.05, "reschedule_h": 0.1, "warmup_h": 0.1, "read_h": 0.05},
                     "jobs": [{"name": "job", "gpus": 16, "work_h": 10 * horizon_h,
                               "checkpoint": {"interval_h": interval_h, "write_h": 0.0, "mode": "sync"}}]},
        "health": {"stragglers": {"detection_h": d_h, "policy": policy}},
    }


def straggler_policy(s: Settings) -> list[CaseResult]:
    """Progress deficit against the same seed with a slowdown to speed 1 (no episode), for keep and
    swap, and their paired difference, against the closed forms of the module docstring. The seed is
    the first from the suite's that gives exactly one degraded failure, on a node of the job, whose
    repair ends inside the horizon (the failure time t0 is read from the events: the closed forms are
    exact given it)."""
    speed, detect_h, repair_h, d_h, interval_h = 0.6, 0.25, 3.0, 0.5, 2.0
    horizon_h, mtbf_h = 20.0, 150.0
    restart_h = 0.05 + 0.1 + 0.05 + 0.1
    dur = detect_h + repair_h  # D: the slowdown lasts until the hot-swap repair ends

    def run(policy: str, seed: int, sp: float) -> tuple[float, dict[str, float], object]:
        doc = straggler_doc(policy, seed, sp, detect_h, repair_h, d_h, interval_h, horizon_h, mtbf_h)
        res = run_doc(doc, 1, s)[0]
        j = res.tables["jobs"]
        return float(j[j.record == "job"].kept_h.iloc[0]), res.metrics, res

    seed = s.seed
    for _ in range(200):
        _, mk, res = run("keep", seed, speed)
        ev = res.tables["events"]  # type: ignore[attr-defined]
        deg = ev[ev["kind"] == "degraded"]
        if len(deg) == 1 and int(deg["node"].iloc[0]) in (0, 1) and float(deg["time_h"].iloc[0]) + dur < horizon_h - 1:
            break
        seed += 1
    t0 = float(deg["time_h"].iloc[0])
    base, _, _ = run("keep", seed, 1.0)
    keep, mk, _ = run("keep", seed, speed)
    swap, ms, _ = run("swap", seed, speed)
    since = (t0 + speed * d_h) % interval_h  # progress since the last checkpoint at the swap (checkpoints at k·I)
    want_keep = (1 - speed) * dur
    want_swap = (1 - speed) * d_h + restart_h + since
    tol = REL_TOL * horizon_h
    inv = {"one episode each": mk.get("stragglers.episodes") == 1.0 and ms.get("stragglers.episodes") == 1.0,
           "swap drained the straggler once": ms.get("stragglers.swaps") == 1.0 and mk.get("stragglers.swaps") == 0.0}
    return [
        result("straggler_policy", "keep: progress lost (h)", want_keep, Exact(base - keep, tol), s,
               "(1 − s)·D", sample="exact", invariants=inv, wrong={"no slowdown": 0.0}),
        result("straggler_policy", "swap: progress lost (h)", want_swap, Exact(base - swap, tol), s,
               "(1 − s)·d + R + progress since the last checkpoint", sample="exact", invariants=inv,
               wrong={"swap without the lost progress": (1 - speed) * d_h + restart_h}),
        result("straggler_policy", "swap − keep: paired difference (h)", want_swap - want_keep,
               Exact(keep - swap, tol), s, "paired (same seed, common random numbers)", sample="exact",
               invariants=inv),
    ]
