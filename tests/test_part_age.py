"""Parts that are not new at the start (issue 52): the first lifetime of a unit aged a is its residual life
given survival to a, P(R > t) = S(a + t) / S(a); exponential parts are memoryless; a timeline carries each
unit's age across its stages."""

from __future__ import annotations

import copy
import math
from typing import Any

import numpy as np
import pytest
from scipy import special, stats

from twin.model.parts import aged_sample
from twin.scenario.distributions import Exponential, Lognormal, Weibull
from twin.scenario.loader import load_dict
from twin.sim import run_replication

SHAPE, SCALE_H = 3.0, 1000.0
NEVER_REPAIRED = {"time": {"dist": "fixed", "value_h": 1e6}}


def hall(failure: dict[str, Any], age_h: float, horizon_h: float, nodes: int = 2000) -> dict[str, Any]:
    return {"name": "aged", "seed": 11, "horizon_days": horizon_h / 24.0,
            "cluster": {"racks": nodes // 50, "nodes_per_rack": 50, "node": {
                "parts": {"fan": {"failure": failure, "initial_age_h": age_h, "repair": NEVER_REPAIRED}}}},
            "maintenance": {"crews": {"technicians": {"count": 5, "shift": "24x7"}}}}


def weibull_survival(t_h: float) -> float:
    return math.exp(-((t_h / SCALE_H) ** SHAPE))


@pytest.mark.parametrize("age_h, t_h", [(800.0, 240.0), (1500.0, 48.0)])
def test_aged_weibull_parts_fail_as_the_conditional_residual_life(age_h: float, t_h: float) -> None:
    """Failures within t of 2,000 parts aged a (never repaired within t: one life each) against the closed
    form N (1 − S(a + t)/S(a)), a binomial count: within 4.5 standard deviations; 'restart as new', N (1 − S(t)),
    lies far outside that band."""
    n = 2000
    sc = load_dict(hall({"dist": "weibull", "shape": SHAPE, "scale_h": SCALE_H}, age_h, t_h, n)).scenario
    got = run_replication(sc, 0, tables=False).metrics["failures.fan"]
    p = 1.0 - weibull_survival(age_h + t_h) / weibull_survival(age_h)
    sd = math.sqrt(n * p * (1 - p))
    assert abs(got - n * p) < 4.5 * sd, (got, n * p, sd)
    p_new = 1.0 - weibull_survival(t_h)
    assert abs(n * p_new - n * p) > 12 * sd  # the test tells the two models apart


def test_the_residual_life_sampler_matches_the_closed_forms() -> None:
    """Mean residual life of a Weibull at age a, m(a) = ∫_a^∞ S / S(a) = η Γ(1 + 1/k) Q(1/k, (a/η)^k)
    e^((a/η)^k) (Q the regularised upper incomplete gamma function), and the distribution of the residual life (Kolmogorov-Smirnov against S(a + t)/S(a)),
    with and without a frailty z (survival S^z); a lognormal through its CDF."""
    u = stats.qmc.Sobol(1, seed=3).random(2**14)[:, 0]
    u = np.clip(u, 1e-12, 1 - 1e-12)
    w = Weibull(shape=SHAPE, scale_h=SCALE_H)
    for a in (0.0, 500.0, 1200.0):
        x = (a / SCALE_H) ** SHAPE
        mrl = SCALE_H * math.gamma(1.0 + 1.0 / SHAPE) * special.gammaincc(1.0 / SHAPE, x) * math.exp(x)
        r = aged_sample(w, u, None, np.full(len(u), a))
        assert r.min() >= 0.0
        assert r.mean() == pytest.approx(mrl, rel=2e-3)
        cdf = lambda t: 1.0 - np.exp(-(((a + t) / SCALE_H) ** SHAPE - x))  # noqa: E731
        assert stats.kstest(r, cdf).statistic < 2e-3
    z = np.full(len(u), 2.0)
    r = aged_sample(w, u, z, np.full(len(u), 800.0))
    x = (800.0 / SCALE_H) ** SHAPE
    assert stats.kstest(r, lambda t: 1.0 - np.exp(-2.0 * (((800.0 + t) / SCALE_H) ** SHAPE - x))).statistic < 2e-3
    ln = Lognormal(mean_h=1000.0, sigma=0.8)
    r = aged_sample(ln, u, None, np.full(len(u), 700.0))
    fa = ln.cdf(700.0)
    assert stats.kstest(r, lambda t: (np.vectorize(ln.cdf)(700.0 + t) - fa) / (1 - fa)).statistic < 2e-3
    e = Exponential(mean_h=500.0)
    assert np.array_equal(aged_sample(e, u, None, np.full(len(u), 900.0)), e.sample(u))  # memoryless


def test_an_aged_exponential_part_draws_exactly_what_a_new_one_does() -> None:
    fail = {"dist": "exponential", "mean_h": 2000.0}
    new = run_replication(load_dict(hall(fail, 0.0, 240.0, 200)).scenario, 0, tables=False).metrics
    old = run_replication(load_dict(hall(fail, 50000.0, 240.0, 200)).scenario, 0, tables=False).metrics
    assert new["failures.fan"] > 0 and old == new


def test_a_timeline_carries_each_parts_age_into_the_next_stage() -> None:
    """A Weibull part (shape 5, scale 300 h), never repaired: 2,000 nodes for 240 h, then 500 nodes more
    for 120 h. In stage 1 the survivors of stage 0 are 240 h old, its failed parts were replaced at the step
    (new), the added nodes' parts are new: the expected failures are closed forms given stage 0's count; a
    hall restarted as new would fail about 1 % of its parts."""
    k, eta = 5.0, 300.0
    d = hall({"dist": "weibull", "shape": k, "scale_h": eta}, 0.0, 360.0)
    d["timeline"] = {"steps": [{"name": "grow", "day": 10, "add_racks": 10}]}
    sc = load_dict(d).scenario
    old, new = sc.timeline.stages
    m = run_replication(sc, 0, tables=False).metrics
    f0 = run_replication(old, 0, tables=False).metrics["failures.fan"]  # stage 0: the scenario cut at the step
    s = lambda t: math.exp(-((t / eta) ** k))  # noqa: E731
    p_old = 1.0 - s(360.0) / s(240.0)   # a survivor aged 240 h failing within 120 h
    p_new = 1.0 - s(120.0)              # a new part failing within 120 h
    n0, n1 = old.cluster.n_nodes, new.cluster.n_nodes
    mean = (n0 - f0) * p_old + (f0 + n1 - n0) * p_new
    var = (n0 - f0) * p_old * (1 - p_old) + (f0 + n1 - n0) * p_new * (1 - p_new)
    f1 = m["failures.fan"] - f0
    assert abs(f1 - mean) < 4.5 * math.sqrt(var), (f1, mean)
    assert f1 > 10 * n1 * p_new  # not restarted as new
    # a new node type starts every part new: stage 1 is then the stage's scenario on its own
    d2 = copy.deepcopy(d)
    d2["timeline"]["steps"][0]["set"] = {"cluster.node.type": "dgx-b200"}
    sc2 = load_dict(d2).scenario
    m2 = run_replication(sc2, 0, tables=False).metrics
    alone1 = run_replication(sc2.timeline.stages[1], 0, tables=False).metrics["failures.fan"]
    assert m2["failures.fan"] == f0 + alone1
