"""Issue 47: the importance-sampling estimator (twin.experiment.rare_math) on the models the simulator
runs, sampled here in numpy with the same change of measure (exponential lives at θ times their rate,
the likelihood ratio from the failure count and the exposure), against closed forms."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.linalg import expm

from twin.experiment import rare_math

MTTF_H = 15.0


def truth_2of4(t_h: float = 1.0) -> float:
    p = 1 - math.exp(-t_h / MTTF_H)
    return 4 * p**3 * (1 - p) + p**4


def sample_2of4(n: int, theta: float, seed: int, t_h: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """AvailSim4's 2-of-4 example (no repair): the group fails when 3 of its 4 units have."""
    lam = 1 / MTTF_H
    life = np.random.default_rng(seed).exponential(1 / (theta * lam), size=(n, 4))
    failed = life < t_h
    n_fail = failed.sum(axis=1)
    exposure = np.minimum(life, t_h).sum(axis=1)
    return n_fail >= 3, np.asarray(rare_math.log_likelihood_ratio(n_fail, exposure, lam, theta))


def test_2of4_value_matches_availsim4() -> None:
    assert truth_2of4() == pytest.approx(0.0010211, abs=5e-8)


def test_likelihood_ratio_is_the_product_of_exponential_densities() -> None:
    lam, th = 0.3, 4.0
    ages, cens = np.array([0.5, 1.2]), np.array([2.0])
    direct = np.prod(lam * np.exp(-lam * ages) / (th * lam * np.exp(-th * lam * ages))) * \
        np.prod(np.exp(-lam * cens) / np.exp(-th * lam * cens))
    got = rare_math.log_likelihood_ratio(2, ages.sum() + cens.sum(), lam, th)
    assert math.exp(got) == pytest.approx(direct, rel=1e-12)
    with pytest.raises(ValueError):
        rare_math.log_likelihood_ratio(1, 1.0, lam, 0.0)


def test_2of4_intervals_cover_over_200_seeds() -> None:
    """At least 92 % of the nominal 95 % intervals cover P = 0.0010211 (200 fixed seeds)."""
    want = truth_2of4()
    theta = rare_math.auto_theta(4 / MTTF_H, 1.0)
    cover = 0
    for seed in range(200):
        hit, lw = sample_2of4(1000, theta, seed)
        e = rare_math.estimate(hit, lw)
        cover += e.ci_low <= want <= e.ci_high
    assert cover >= 184, cover


def test_unbiased_for_any_theta() -> None:
    """The mean does not depend on θ (only the variance does): θ = 3, 11, 30 all agree with the truth."""
    want = truth_2of4()
    for theta in (3.0, 11.0, 30.0):
        hit, lw = sample_2of4(200_000, theta, 7)
        e = rare_math.estimate(hit, lw)
        assert abs(e.p - want) < 4 * e.std_error, (theta, e.p, want, e.std_error)


# ------------------------------------------------------------------- repairable 1-of-2 pair

LAM, MU, H = 5e-4, 0.5, 2.0  # failure rate 1/h (MTTF 2,000 h), repair rate 1/h (mean 2 h), horizon h


def truth_pair() -> float:
    """P(both units down at some time within H): the Markov chain (both up, one down, both down absorbing)."""
    q = np.array([[-2 * LAM, 2 * LAM, 0.0], [MU, -(MU + LAM), LAM], [0.0, 0.0, 0.0]])
    return float(expm(q * H)[0, 2])


def sample_pair(n: int, theta: float, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The pair with exponential repair, lives at θλ: (hit, log weight, events per replication)."""
    g = np.random.default_rng(seed)
    t = np.zeros(n)
    up = np.full(n, 2)
    hit = np.zeros(n, dtype=bool)
    n_fail = np.zeros(n)
    expo = np.zeros(n)
    events = np.zeros(n)
    active = np.ones(n, dtype=bool)
    while active.any():
        idx = np.flatnonzero(active)
        two = up[idx] == 2
        rate = np.where(two, 2 * theta * LAM, theta * LAM + MU)
        dt = g.exponential(1 / rate)
        end = np.minimum(t[idx] + dt, H)
        expo[idx] += up[idx] * (end - t[idx])
        done = t[idx] + dt >= H
        t[idx] = end
        go = idx[~done]
        events[go] += 1
        is_fail = np.where(up[go] == 2, True, g.random(len(go)) < theta * LAM / (theta * LAM + MU))
        n_fail[go[is_fail]] += 1
        up[go[is_fail]] -= 1
        up[go[~is_fail]] += 1
        hit[go[up[go] == 0]] = True
        active[idx[done]] = False
        active[go[up[go] == 0]] = False
    return hit, np.asarray(rare_math.log_likelihood_ratio(n_fail, expo, LAM, theta)), events + 1


def test_pair_probability_is_about_one_in_a_million() -> None:
    assert 3e-7 < truth_pair() < 3e-6


def _pair_theta() -> float:
    return rare_math.auto_theta(2 * LAM, H, 3.0)


def test_pair_reaches_10pc_with_a_hundredth_of_plain_mc_work() -> None:
    """10 % relative half-width; work-normalised variance (variance × work per replication, the work
    counted in events) at most 1/100 of plain Monte Carlo's p(1 − p) × its work per replication."""
    want = truth_pair()
    hit, lw, ev = sample_pair(20_000, _pair_theta(), 1)
    _, _, ev_plain = sample_pair(20_000, 1.0, 2)
    e = rare_math.estimate(hit, lw, ev, float(ev_plain.mean()))
    assert e.rel_half_width <= 0.10, e
    assert e.ci_low <= want <= e.ci_high
    assert e.wnv <= e.plain_wnv / 100, e


def test_pair_intervals_cover_over_100_seeds() -> None:
    want = truth_pair()
    cover = sum(
        (lambda e: e.ci_low <= want <= e.ci_high)(rare_math.estimate(*sample_pair(3000, _pair_theta(), 100 + s)[:2]))
        for s in range(100))
    assert cover >= 90, cover


def test_not_rare_agrees_with_plain_mc() -> None:
    """p ≈ 0.1 (the 2-of-4 group over 5.8 h): the biased estimate and plain Monte Carlo agree within
    their intervals."""
    t_h = 5.8
    assert 0.08 < truth_2of4(t_h) < 0.13
    hit, lw = sample_2of4(20_000, 2.0, 11, t_h)
    e = rare_math.estimate(hit, lw)
    plain, _ = sample_2of4(20_000, 1.0, 12, t_h)
    p, lo, hi = rare_math.plain_interval(int(plain.sum()), len(plain))
    assert abs(e.p - p) < 1.96 * math.hypot(e.std_error, math.sqrt(p * (1 - p) / len(plain)))
    assert lo <= truth_2of4(t_h) <= hi and e.ci_low <= truth_2of4(t_h) <= e.ci_high


def test_estimate_reports_ess_and_rejects_bad_input() -> None:
    e = rare_math.estimate([True, False, True, False], np.log([0.5, 9.0, 0.5, 1.0]), 2.0, 1.0)
    assert e.p == pytest.approx(0.25) and e.ess == pytest.approx(2.0) and e.hits == 2
    assert e.wnv == pytest.approx(e.var_per_rep * 2.0)
    with pytest.raises(ValueError):
        rare_math.estimate([True], [0.0])
