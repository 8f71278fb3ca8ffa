"""The simulator against the reliability closed forms of model.md §9.

Each test states a scenario whose steady state has a known closed form, runs R replications
with fixed seeds, and checks that the analytic value lies inside a t-based 99 % confidence
interval of the replication estimates. Warm-up is discarded (or shown negligible) so that the
estimator targets the steady-state quantity. Each test also asserts that a plausible *wrong*
model lies outside the interval where the run is long enough to tell them apart, so a pass means
something. The CI-sized variants run in a few seconds each; the ``slow`` variants use more
replications (``pytest -m slow``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from twin.physics import closed_forms as cf
from twin.scenario.loader import load_dict
from twin.sim import run_replication

CONF = 0.99


def t_interval(x: np.ndarray, conf: float = CONF) -> tuple[float, float]:
    """Mean and half-width of the t-based confidence interval of the replication means."""
    x = np.asarray(x, dtype=float)
    r = len(x)
    assert r >= 3
    half = stats.t.ppf(0.5 + conf / 2, r - 1) * x.std(ddof=1) / math.sqrt(r)
    return float(x.mean()), float(half)


def down_fraction(intervals: pd.DataFrame, node: int, start_h: float, end_h: float) -> float:
    """Share of [start_h, end_h) that ``node`` spent down (intervals clipped to the window)."""
    d = intervals[(intervals["state"] == "down") & (intervals["node"] == node)]
    s = np.maximum(d["start_h"].to_numpy(), start_h)
    e = np.minimum(d["end_h"].to_numpy(), end_h)
    return float(np.clip(e - s, 0.0, None).sum() / (end_h - start_h))


def base_doc(name: str, seed: int, days: float, parts: dict[str, Any], crews: int = 1,
             racks: int = 1, nodes_per_rack: int = 1, spares: dict[str, Any] | None = None) -> dict:
    doc: dict[str, Any] = {
        "name": name,
        "seed": seed,
        "horizon_days": days,
        "cluster": {"racks": racks, "nodes_per_rack": nodes_per_rack, "node": {"gpus": 8, "parts": parts}},
        "maintenance": {
            "detection": {"dist": "fixed", "value_h": 0},
            "crews": {"crew": {"count": crews, "shift": "24x7"}},
        },
    }
    if spares:
        doc["maintenance"]["spares"] = spares
    return doc


# ---- one repairable part: A = MTBF / (MTBF + MTTR) ---------------------------------------------

@pytest.mark.parametrize("reps,days", [(10, 250), pytest.param(40, 1000, marks=pytest.mark.slow)])
def test_single_repairable_part(reps: int, days: float) -> None:
    mtbf, mttr = 10.0, 2.0  # hours; short so that a run sees hundreds of cycles
    doc = base_doc("single-part", 101, days, {
        "board": {"count": 1, "effect": "node_down",
                  "failure": {"dist": "exponential", "mean_h": mtbf},
                  "repair": {"hot_swap": False, "burn_in_h": 0,
                             "time": {"dist": "exponential", "mean_h": mttr}}},
    })
    sc = load_dict(doc).scenario
    H = sc.horizon_h
    avail = []
    n_fail = 0
    for rep in range(reps):
        res = run_replication(sc, rep)
        avail.append(res.metrics["node_availability"])
        n_fail += res.metrics["failures"]
        t = res.tables["tickets"]
        t = t[t["done"]]  # tickets still open at the horizon have no end yet
        # the whole downtime is the repair: no detection, no queue, no spare wait, no burn-in
        assert (t["start_h"] == t["fail_h"]).all() and (t["back_h"] == t["end_h"]).all()
    assert n_fail > 100 * reps
    expected = cf.availability_single(mtbf, mttr)
    mean, half = t_interval(np.array(avail))
    # the run starts up: the exact expected time average over [0, H] of the two-state chain is
    # A + (1 − A)(1 − e^{−(λ+μ)H})/((λ+μ)H); that offset must be negligible against the CI
    s = 1 / mtbf + 1 / mttr
    offset = (1 - expected) * (1 - math.exp(-s * H)) / (s * H)
    assert offset < 0.05 * half
    print(f"mean {mean:.5f} ± {half:.5f}, expected {expected:.5f}")
    assert abs(mean - expected) <= half, (mean, half, expected)
    # a model that forgot the repair time would claim A = 1; one that doubled it, M/(M+2R)
    assert abs(mean - cf.availability_single(mtbf, 2 * mttr)) > half


# ---- k-out-of-n with r dedicated crews -----------------------------------------------------------

def _group_doc(n: int, k: int, crews: int, lam: float, mu: float, days: float, seed: int) -> dict:
    return base_doc(f"k-of-n-{k}-{n}-r{crews}", seed, days, {
        "psu": {"count": n, "required": k, "effect": "redundant",
                "failure": {"dist": "exponential", "mean_h": 1 / lam},
                "repair": {"hot_swap": True, "burn_in_h": 0,
                           "time": {"dist": "exponential", "mean_h": 1 / mu}}},
    }, crews=crews)


def _group_unavailability(doc: dict, reps: int, warmup_h: float) -> np.ndarray:
    sc = load_dict(doc).scenario
    H = sc.horizon_h
    out = []
    for rep in range(reps):
        res = run_replication(sc, rep)
        t = res.tables["tickets"]
        assert not t["drained"].any()  # hot swap: the node is never drained for the repair
        out.append(down_fraction(res.tables["node_intervals"], 0, warmup_h, H))
    return np.array(out)


@pytest.mark.parametrize(
    "crews,lam,reps,days",
    [
        (1, 0.1, 10, 90),
        (2, 0.2, 8, 60),
        pytest.param(1, 0.1, 40, 180, marks=pytest.mark.slow),
        pytest.param(2, 0.2, 40, 180, marks=pytest.mark.slow),
    ],
)
def test_k_out_of_n_with_r_crews(crews: int, lam: float, reps: int, days: float) -> None:
    """4-of-6 redundant PSUs (no min_to_run: the node is down while fewer than 4 work),
    exponential failures λ and repairs μ, ``crews`` technicians 24x7, hot swap, no detection."""
    n, k, mu = 6, 4, 1.0
    # warm-up: many mean repair times, so the start (all six healthy) is forgotten
    u = _group_unavailability(_group_doc(n, k, crews, lam, mu, days, seed=7000 + crews), reps, warmup_h=48.0)
    expected = 1 - cf.k_of_n_availability(n, k, lam, mu, crews)
    mean, half = t_interval(u)
    assert 0.01 < expected < 0.5  # measurable
    print(f"mean {mean:.5f} ± {half:.5f}, expected {expected:.5f}")
    assert abs(mean - expected) <= half, (mean, half, expected)
    # the other crew count is far outside the interval
    other = 1 - cf.k_of_n_availability(n, k, lam, mu, 3 - crews)
    assert abs(mean - other) > half


@pytest.mark.parametrize("reps,days", [(10, 100), pytest.param(40, 400, marks=pytest.mark.slow)])
def test_one_of_two_one_crew(reps: int, days: float) -> None:
    lam, mu = 0.2, 1.0
    expected = 1 - cf.one_of_two_one_crew(lam, mu)
    assert expected == pytest.approx(1 - cf.k_of_n_availability(2, 1, lam, mu, 1), rel=1e-12)
    u = _group_unavailability(_group_doc(2, 1, 1, lam, mu, days, seed=8080), reps, warmup_h=48.0)
    mean, half = t_interval(u)
    print(f"mean {mean:.5f} ± {half:.5f}, expected {expected:.5f}")
    assert abs(mean - expected) <= half, (mean, half, expected)
    # two crews would halve the time with both down: well outside the interval
    assert abs(mean - (1 - cf.k_of_n_availability(2, 1, lam, mu, 2))) > half


# ---- spares: Palm's theorem ----------------------------------------------------------------------

@pytest.mark.parametrize("reps,hours", [(10, 2000), pytest.param(40, 5000, marks=pytest.mark.slow)])
def test_palm_stockout_share(reps: int, hours: float) -> None:
    """Many nodes, one node_down part each, (S−1, S) spares with lead time L: the share of
    failures that find no spare on the shelf is P(Poisson(λL) ≥ S).

    Counted from the events table over [L, H): outstanding orders at t ≥ L are exactly the
    orders of (t − L, t], so the window starts in steady state; events (unlike tickets) include
    failures whose repair is still open at the horizon."""
    n_nodes, fleet_rate, S = 50_000, 0.5, 3  # λ_fleet 0.5 /h
    part_mtbf = n_nodes / fleet_rate
    lead_days = 4.0 / 24.0
    repair_h = 0.1
    doc = base_doc("palm", 4242, hours / 24.0, {
        "board": {"count": 1, "effect": "node_down",
                  "failure": {"dist": "exponential", "mean_h": part_mtbf},
                  "repair": {"hot_swap": False, "time": {"dist": "fixed", "value_h": repair_h}}},
    }, crews=50, racks=500, nodes_per_rack=100,
        spares={"board": {"stock": S, "reorder_point": S - 1, "reorder_qty": 1, "lead_time_days": lead_days}})
    sc = load_dict(doc).scenario
    L = lead_days * 24.0  # exactly as the engine computes it
    H = sc.horizon_h
    expected = cf.palm_stockout_share(fleet_rate, L, S)
    assert 0.2 < expected < 0.5

    fails, outs = [], []
    for rep in range(reps):
        res = run_replication(sc, rep)
        ev = res.tables["events"]
        f_all = ev[ev["kind"] == "fail"]
        s_all = ev[ev["kind"] == "stockout"]
        # the engine's own metric is the same count over the whole horizon
        assert res.metrics["stockout_share.board"] == pytest.approx(len(s_all) / len(f_all), rel=1e-12)
        fails.append(int((f_all["time_h"] >= L).sum()))
        outs.append(int((s_all["time_h"] >= L).sum()))
    f = np.array(fails, dtype=float)
    s = np.array(outs, dtype=float)
    # pooled share (ratio estimator) with its replication-level (delta-method) t interval: this
    # accounts for the positive correlation of stock-outs within a replication, which a plain
    # binomial bound on the pooled count would ignore
    share = s.sum() / f.sum()
    resid = s - share * f
    se = math.sqrt(resid.var(ddof=1) / reps) / f.mean()
    half = stats.t.ppf(0.5 + CONF / 2, reps - 1) * se
    # Palm assumes a constant fleet failure rate; here a failed part cannot fail again until it is
    # replaced, so the fleet rate is λ·(1 − D/N) with D the parts down: those in repair (Poisson
    # with mean λ·repair, 50 crews never queue) plus backorders max(0, O − S), O ≤ Poisson(λL).
    # D ≤ 30 but with probability < 1e-20 at any time, so the exact share lies in
    # [palm(λ·(1 − 30/N)), palm(λ)]: accept a confidence interval that meets this range, and
    # check that the range is small against the interval.
    d_max = 30
    assert stats.poisson.sf(d_max - S, fleet_rate * (L + repair_h)) < 1e-20
    lower = cf.palm_stockout_share(fleet_rate * (1 - d_max / n_nodes), L, S)
    assert expected - lower < 0.1 * half
    assert f.sum() > 0.4 * fleet_rate * (H - L) * reps
    print(f"share {share:.5f} ± {half:.5f}, expected {expected:.5f} (rate-loss floor {lower:.5f})")
    assert lower - half <= share <= expected + half, (share, half, lower, expected)
    # one more or one fewer spare is clearly distinguishable
    assert abs(share - cf.palm_stockout_share(fleet_rate, L, S + 1)) > half
    assert abs(share - cf.palm_stockout_share(fleet_rate, L, S - 1)) > half
