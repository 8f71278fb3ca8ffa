"""The fits of ``twin calibrate`` (issue 44) on data with a known truth: exact Poisson intervals, part
lives with censoring, gamma frailty (negative binomial) with its profile-likelihood interval, lemon
nodes under Benjamini-Hochberg, job rates by size and cause, repair times."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from twin.calibrate.check import Row, compare
from twin.calibrate.fits import (attribute_causes, fit_frailty, job_rates, part_lives, poisson_ci, repair_fit,
                                 size_class)


def test_poisson_interval_known_values() -> None:
    assert poisson_ci(0) == (0.0, pytest.approx(3.6889, abs=1e-4))
    lo, hi = poisson_ci(10)
    assert lo == pytest.approx(4.7954, abs=1e-4) and hi == pytest.approx(18.3904, abs=1e-4)


def test_part_lives_split_at_failures_and_censor_the_rest() -> None:
    h = 3600.0
    d, f = part_lives({"a": [10 * h, 30 * h], "b": [5 * h, 500 * h]}, units_total=5, t0_s=0.0, t1_s=100 * h)
    assert list(zip(d.tolist(), f.tolist())) == [(10.0, True), (20.0, True), (70.0, False), (5.0, True), (95.0, False),
                                                 (100.0, False), (100.0, False), (100.0, False)]


def test_frailty_interval_coverage_and_the_poisson_boundary() -> None:
    rng = np.random.default_rng(7)
    nodes = [f"n{i}" for i in range(64)]
    expo = np.full(64, 100.0)
    hits = 0
    for _ in range(40):
        z = rng.gamma(2.0, 0.5, 64)  # variance 0.5
        counts = rng.poisson(z * 0.04 * expo)
        fr = fit_frailty(nodes, counts, expo)
        hits += fr.ci[0] <= 0.5 <= fr.ci[1]
    assert hits / 40 >= 0.85
    flat = fit_frailty(nodes, rng.poisson(4.0, 64), expo)
    assert flat.ci[0] == 0.0 and flat.variance < 0.2  # Poisson counts: v = 0 inside the interval


def test_lemon_nodes_under_bh() -> None:
    rng = np.random.default_rng(3)
    counts = rng.poisson(2.0, 100)
    counts[17] = 14
    fr = fit_frailty([f"n{i:03d}" for i in range(100)], counts, np.full(100, 30.0), fdr=0.05)
    assert [h for h, _k, _q in fr.lemons] == ["n017"]
    assert fr.lemons[0][1] == 14 and fr.lemons[0][2] <= 0.05


def attempts(rows: list[tuple[str, float, float, str, int, str]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["job", "start_s", "end_s", "state", "nodes", "nodelist"])


def test_job_rates_by_size_and_cause_with_running_jobs_censored() -> None:
    h = 3600.0
    a = attempts([("1", 0, 10 * h, "NODE_FAIL", 2, "g[1-2]"), ("1", 10 * h, 20 * h, "COMPLETED", 2, "g[3-4]"),
                  ("2", 0, math.nan, "RUNNING", 1, "g5"), ("3", 0, 5 * h, "TIMEOUT", 4, "g[5-8]")])
    ev = pd.DataFrame({"time_s": [10 * h - 60], "host": ["g2"], "part": ["gpu"]})
    causes = attribute_causes(a, ev, 900.0)
    assert list(causes) == ["gpu", "", "", ""]
    j = job_rates(a, 48 * h, causes)
    assert j.interruptions.count == 1
    assert j.interruptions.exposure == pytest.approx((2 * 20 + 48 + 4 * 5) / 24.0)  # the running job to 48 h
    assert j.by_size["2-3"][0].count == 1 and j.by_size["2-3"][0].exposure == pytest.approx(20.0)
    assert j.by_size["1"][0].exposure == pytest.approx(48.0) and j.by_cause == {"gpu": 1}
    assert j.states["TIMEOUT"] == 1  # counted, not an interruption
    far = attribute_causes(a, ev.assign(time_s=[0.0]), 900.0)
    assert far.iloc[0] == "unattributed"
    assert list(size_class(np.array([1, 2, 3, 4, 7, 8, 100]))) == ["1", "2-3", "2-3", "4-7", "4-7", "8-15", "64-127"]


def test_repair_fit_hands_on_or_outage() -> None:
    rng = np.random.default_rng(5)
    n = 300
    start = rng.uniform(0, 1e7, n)
    wait = rng.exponential(2 * 3600, n)
    work = rng.lognormal(math.log(4.0) - 0.125, 0.5, n) * 3600
    t = pd.DataFrame({"start_s": start, "work_start_s": start + wait, "end_s": start + wait + work})
    fit, kind = repair_fit("gpu", t, 2e7)
    assert kind == "repair" and fit is not None
    m = fit.models["lognormal"]
    assert m.ci["mean_h"][0] <= 4.0 <= m.ci["mean_h"][1]
    fit2, kind2 = repair_fit("gpu", t.assign(work_start_s=math.nan), 2e7)
    assert kind2 == "outage" and fit2 is not None and fit2.models["lognormal"].mean_h > 5.0


def test_bonferroni_prediction_interval() -> None:
    sims = [{"x": float(v)} for v in (9, 10, 11, 10, 10, 9, 11, 10, 10, 10)]
    res = compare({"x": 10.5}, sims, alpha=0.05)
    (row,) = res.rows
    assert isinstance(row, Row) and row.consistent and row.sim_mean == pytest.approx(10.0)
    assert not compare({"x": 14.0}, sims).rows[0].consistent
    # more rows: each interval wider (Bonferroni)
    wide = compare({"x": 10.5, "y": 1.0, "z": 1.0}, [{**s, "y": 1.0, "z": 1.0} for s in sims]).rows[0]
    assert wide.hi - wide.lo > row.hi - row.lo
