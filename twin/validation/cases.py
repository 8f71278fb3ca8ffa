"""Validation cases: the simulator against closed forms (model.md §9).

Each case is implemented once, here, and called both by the tests and by ``twin validate``.
A case builds a small scenario, runs replications with fixed seeds, and compares the simulated
mean (with a t confidence interval at the level the caller asks for) with a reference value
computed in code from the formula. ``mutate`` lets a test break the model on purpose
(e.g. double repair times) to prove the check can fail.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
from scipy import stats

from twin.physics import closed_forms as cf
from twin.scenario import load_dict
from twin.sim import run_replication

Doc = dict[str, Any]
Mutate = Callable[[Doc], Doc]


@dataclass
class CaseResult:
    """One checked quantity of a validation case."""

    case: str
    quantity: str
    reference: float
    mean: float
    ci_low: float
    ci_high: float
    replications: int
    confidence: float
    passed: bool
    note: str = ""
    samples: list[float] = field(default_factory=list, repr=False)


@dataclass
class Settings:
    quick: bool = True
    confidence: float = 0.99
    """Confidence level of each interval; ``twin validate`` sets it for the family-wise rate."""
    seed: int = 12345
    replications: int | None = None
    mutate: Mutate | None = None


def t_interval(x: np.ndarray, confidence: float) -> tuple[float, float, float]:
    """Mean and two-sided t confidence interval of the mean of ``x``."""
    x = np.asarray(x, dtype=float)
    n = len(x)
    m = float(x.mean())
    if n < 2:
        return m, -math.inf, math.inf
    half = float(stats.t.ppf(0.5 + confidence / 2, n - 1) * x.std(ddof=1) / math.sqrt(n))
    return m, m - half, m + half


def ratio_interval(num: np.ndarray, den: np.ndarray, confidence: float) -> tuple[float, float, float]:
    """Ratio of means sum(num)/sum(den) with a delta-method (Fieller-free) t interval."""
    num = np.asarray(num, float)
    den = np.asarray(den, float)
    n = len(num)
    r = float(num.sum() / den.sum())
    resid = num - r * den
    se = float(resid.std(ddof=1) / (math.sqrt(n) * den.mean()))
    half = float(stats.t.ppf(0.5 + confidence / 2, n - 1) * se)
    return r, r - half, r + half


def _run(doc: Doc, reps: int, settings: Settings, first_rep: int = 0) -> list[Any]:
    d = copy.deepcopy(doc)
    d.setdefault("seed", settings.seed)
    if settings.mutate is not None:
        d = settings.mutate(d)
    sc = load_dict(d, source=f"validation:{d['name']}").scenario
    return [run_replication(sc, r) for r in range(first_rep, first_rep + reps)]


def _result(case: str, quantity: str, ref: float, est: tuple[float, float, float], n: int, s: Settings,
            note: str = "", samples: list[float] | None = None) -> CaseResult:
    m, lo, hi = est
    return CaseResult(case, quantity, ref, m, lo, hi, n, s.confidence, bool(lo <= ref <= hi), note,
                      samples or [])


# ---- workload cases ---------------------------------------------------------------------------

def erlang_c(s: Settings) -> list[CaseResult]:
    """M/M/c queue: single-node jobs, Poisson arrivals, exponential work, FIFO, no failures or
    checkpoints; mean wait of jobs submitted after a warm-up and before a cool-down vs Erlang C."""
    c, lam, mu = 4, 3.0, 1.0
    H = 1500.0 if s.quick else 6000.0
    warm, cool = 100.0, 50.0
    reps = s.replications or (12 if s.quick else 40)
    doc: Doc = {
        "name": "validation-erlang-c",
        "horizon_days": H / 24.0,
        "cluster": {"racks": 1, "nodes_per_rack": c, "node": {"gpus": 8, "parts": {}}},
        "workload": {
            "scheduler": {"policy": "fifo", "hot_spares": 0},
            "synthetic": {"arrival_rate_per_h": lam, "gpus": {"values": [8]},
                          "work": {"dist": "exponential", "mean_h": 1.0 / mu}},
        },
    }
    waits = []
    for res in _run(doc, reps, s):
        j = res.tables["jobs"]
        j = j[(j.record == "job") & (j.submit_h >= warm) & (j.submit_h <= H - cool)]
        waits.append(float(j.queue_wait_h.mean()))
    ref = cf.erlang_c_mean_wait_h(lam, mu, c)
    return [_result("mmc_queue", f"mean wait, M/M/{c} ρ={lam / (c * mu):.2f} (h)", ref,
                    t_interval(np.array(waits), s.confidence), reps, s, "Erlang C", waits)]


def daly_doc(n_nodes: int, node_mtbf_h: float, work_h: float, interval_h: float, write_h: float,
             restart_h: float, horizon_h: float) -> Doc:
    """One job on all ``n_nodes`` nodes, exponential transient faults per node, fixed checkpoint
    write and restart times."""
    return {
        "name": "validation-daly",
        "horizon_days": horizon_h / 24.0,
        "cluster": {"racks": 1, "nodes_per_rack": n_nodes, "node": {"gpus": 8, "parts": {
            "fault": {"count": 1, "effect": "transient", "failure": {"mtbf_h": node_mtbf_h}}}}},
        "workload": {
            "scheduler": {"policy": "fifo", "hot_spares": 0},
            "restart": {"detection_h": 0.0, "reschedule_h": 0.0, "warmup_h": 0.0, "read_h": restart_h},
            "jobs": [{"name": "job", "gpus": 8 * n_nodes, "work_h": work_h,
                      "checkpoint": {"interval_h": interval_h, "write_h": write_h, "mode": "sync"}}],
        },
    }


def daly_checkpoint(s: Settings) -> list[CaseResult]:
    """Checkpoint efficiency T_s / mean(T_w) against Daly's (2006) exact expected wall time,
    at three intervals around the Daly optimum under common random numbers (quick) or seven
    spanning 0.5–2 × the optimum (full)."""
    n, node_mtbf = 8, 16.0  # job MTBF M = 2 h
    M = node_mtbf / n
    delta, R = 0.1, 0.2
    opt = float(cf.daly_interval_h(delta, M))
    factors = [0.75, 1.0, 1.5] if s.quick else [0.5, 0.625, 0.75, 1.0, 1.25, 1.5, 2.0]
    reps = s.replications or (150 if s.quick else 400)
    out = []
    for f in factors:
        tau = opt * f
        k = max(1, round(24.0 / tau))
        work = k * tau  # a multiple of the interval, as the formula assumes
        ref_tw = float(cf.daly_expected_wall_time_h(work, tau, delta, R, M))
        horizon = 20 * ref_tw
        walls = []
        for res in _run(daly_doc(n, node_mtbf, work, tau, delta, R, horizon), reps, s):
            j = res.tables["jobs"]
            row = j[j.record == "job"].iloc[0]
            assert bool(row.done), "validation job did not finish within the horizon"
            walls.append(float(row.end_h - row.first_start_h))
        w = np.array(walls)
        # efficiency T_s / mean(T_w): interval by transforming the t interval of mean(T_w)
        m, lo, hi = t_interval(w, s.confidence)
        est = (work / m, work / hi, work / lo)
        out.append(_result("checkpoint_daly", f"efficiency at τ = {f:g} × Daly optimum ({tau:.3f} h)",
                           work / ref_tw, est, reps, s, f"M={M} h, δ={delta} h, R={R} h", list(work / w)))
    return out


def interruption_rate(s: Settings) -> list[CaseResult]:
    """Interruptions of an N-node job per hour equal N × the per-node failure rate."""
    node_mtbf = 500.0
    H = 2000.0 if s.quick else 8000.0
    reps = s.replications or (8 if s.quick else 20)
    out = []
    for n in (1, 4, 16):
        spares = max(4, n)
        doc: Doc = {
            "name": "validation-interrupts",
            "horizon_days": H / 24.0,
            "cluster": {"racks": 1, "nodes_per_rack": n + spares, "node": {"gpus": 8, "parts": {
                "board": {"count": 1, "effect": "node_down", "failure": {"mtbf_h": node_mtbf},
                          "repair": {"time": {"dist": "fixed", "value_h": 1.0}}}}}},
            "maintenance": {"detection": {"dist": "fixed", "value_h": 0.0},
                            "crews": {"t": {"count": 8}}},
            "workload": {
                "scheduler": {"policy": "fifo", "hot_spares": spares},
                "restart": {"detection_h": 0.0, "reschedule_h": 0.0, "warmup_h": 0.0, "read_h": 0.01},
                "jobs": [{"name": "job", "gpus": 8 * n, "work_h": 10 * H}],
            },
        }
        rates = []
        for res in _run(doc, reps, s):
            j = res.tables["jobs"]
            rates.append(float((j.record == "interruption").sum()) / H)
        ref = float(cf.job_interruption_rate_per_h(n, 1.0 / node_mtbf))
        out.append(_result("job_interruptions", f"interruptions per hour, {n}-node job", ref,
                           t_interval(np.array(rates), s.confidence), reps, s, "N × r_node", rates))
    return out


CASES: dict[str, Callable[[Settings], list[CaseResult]]] = {
    "mmc_queue": erlang_c,
    "checkpoint_daly": daly_checkpoint,
    "job_interruptions": interruption_rate,
}
