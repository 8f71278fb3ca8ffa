"""Rare-event estimation by importance sampling: the maths alone (no SimPy, no scenario).

Method: **failure biasing by exponential rate scaling** (an exponential change of measure). The parts
chosen for biasing fail at θ times their rate (their exponential mean divided by θ); every replication
carries the likelihood ratio of its path under the true model against the biased one, and the estimate
of P(event) is the mean of 1{event}·w over the biased replications (Heidelberger, "Fast simulation of
rare events in queueing and reliability models", ACM TOMACS 5(1), 1995, §3).

For an exponential lifetime of rate λ drawn at rate θλ, a life that ends in a failure at age a has the
ratio f(a)/f_θ(a) = e^(−λa)·λ / (e^(−θλa)·θλ), a life censored at age c (the horizon, or still running)
has S(c)/S_θ(c) = e^((θ−1)λc). Over a whole replication the product depends only on the number of
failures N and the exposure E (unit-hours at risk, i.e. healthy, summed over the biased units):

    log w = Σ_parts [ −N·log θ + (θ − 1)·λ·E ]

so the simulator needs to report N and E per biased part type, not the individual lives.

Assumptions (where it is valid):

- the biased parts' lifetimes are exponential (constant hazard), drawn once per life and renewed as
  good as new; nothing else moves a drawn failure time (ageing, node health frailty, injected failures);
- every other random quantity (repairs, detection, other parts) keeps its true distribution, so its
  ratio is 1;
- the biased model can produce every path the true one can (θ > 0: absolute continuity holds).

Then E_θ[1{A}·w] = P(A) exactly: unbiased by construction, for any θ > 0. θ only changes the variance.
It is *not* valid for Weibull, lognormal or empirical lives (their ratio would need every age, and
scaling a Weibull's rate is not a change of its scale alone); those parts are not biased and keep their
true distribution. Efficiency: the weight's variance grows like exp((θ − 1)²·λ·E) when many units
accumulate exposure, so bias only the few parts the event needs, over horizons where the biased
failure count stays small (a handful); a long horizon with many units needs splitting or a
regenerative method instead (not implemented).

Confidence interval: the normal (CLT) interval of the weighted mean, mean ± z·s/√n. The effective
sample size is Kish's (Σw)²/Σw² over the replications that hit the event.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import ndtri

LEVEL = 0.95
"""Confidence level of the intervals."""


def log_likelihood_ratio(failures: ArrayLike, exposure_h: ArrayLike, rate_per_h: ArrayLike,
                         theta: float) -> np.ndarray | float:
    """log of the likelihood ratio (true over biased) of exponential lives drawn at ``theta`` × their
    rate ``rate_per_h`` (1/h): ``failures`` lives ended in a failure, over ``exposure_h`` unit-hours at
    risk. Broadcasts; sum it over part types for a replication's log weight."""
    if not theta > 0:
        raise ValueError(f"bias factor must be > 0, got {theta}")
    n = np.asarray(failures, dtype=np.float64)
    e = np.asarray(exposure_h, dtype=np.float64)
    lam = np.asarray(rate_per_h, dtype=np.float64)
    out = -n * math.log(theta) + (theta - 1.0) * lam * e
    return float(out) if np.ndim(out) == 0 else out


def auto_theta(total_rate_per_h: float, horizon_h: float, aim_failures: float = 3.0) -> float:
    """A bias factor that makes the biased parts fail ``aim_failures`` times on average over the horizon
    (their total rate ``total_rate_per_h``, 1/h, over ``horizon_h`` hours), never below 1 (no bias)."""
    expected = total_rate_per_h * horizon_h
    if not expected > 0:
        return 1.0
    return max(1.0, aim_failures / expected)


@dataclass(frozen=True)
class RareEstimate:
    """An importance-sampling estimate of P(event) and what it cost."""

    replications: int
    hits: int
    """Replications in which the event happened (under the biased model)."""
    p: float
    """Estimated probability (the mean of 1{event}·w)."""
    std_error: float
    ci_low: float
    ci_high: float
    rel_half_width: float
    """Half-width of the interval over the estimate (inf with no hit)."""
    ess: float
    """Kish's effective sample size of the hits' weights, (Σw)²/Σw²."""
    var_per_rep: float
    """Sample variance of 1{event}·w: the variance of one replication's estimate."""
    cpu_s_per_rep: float
    """CPU seconds per biased replication (measured)."""
    wnv: float
    """Work-normalised variance: var_per_rep × cpu_s_per_rep."""
    plain_cpu_s_per_rep: float
    """CPU seconds per plain (unbiased) replication (measured)."""
    plain_wnv: float
    """Plain Monte Carlo's at the same p: p(1 − p) × plain_cpu_s_per_rep."""
    gain: float
    """plain_wnv / wnv: how many times less CPU the estimator needs for the same interval."""
    plain_reps_same_ci: float
    """Replications plain Monte Carlo would need for the same half-width: p(1 − p)/std_error²."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def estimate(hit: ArrayLike, log_w: ArrayLike, cpu_s: ArrayLike | float = float("nan"),
             plain_cpu_s_per_rep: float = float("nan"), level: float = LEVEL) -> RareEstimate:
    """The estimate from biased replications: ``hit`` (event happened, bool), ``log_w`` (the log
    likelihood ratio of each replication), ``cpu_s`` (CPU seconds of each, or their mean) and the
    measured CPU seconds of a plain replication."""
    h = np.asarray(hit, dtype=bool)
    lw = np.asarray(log_w, dtype=np.float64)
    if h.shape != lw.shape or h.ndim != 1:
        raise ValueError("hit and log_w must be 1-d arrays of the same length")
    n = len(h)
    if n < 2:
        raise ValueError("an estimate needs at least 2 replications")
    y = np.where(h, np.exp(np.where(h, lw, 0.0)), 0.0)
    p = float(y.mean())
    var = float(y.var(ddof=1))
    se = math.sqrt(var / n)
    z = float(ndtri(0.5 + level / 2))
    lo, hi = max(0.0, p - z * se), p + z * se
    wh = y[h]
    ess = float(wh.sum() ** 2 / np.sum(wh * wh)) if len(wh) else 0.0
    cpu = float(np.mean(np.asarray(cpu_s, dtype=np.float64)))
    wnv = var * cpu
    plain = p * (1 - p) * plain_cpu_s_per_rep
    return RareEstimate(
        replications=n, hits=int(h.sum()), p=p, std_error=se, ci_low=lo, ci_high=hi,
        rel_half_width=z * se / p if p > 0 else float("inf"), ess=ess, var_per_rep=var, cpu_s_per_rep=cpu,
        wnv=wnv, plain_cpu_s_per_rep=float(plain_cpu_s_per_rep), plain_wnv=plain,
        gain=plain / wnv if wnv > 0 else float("nan"),
        plain_reps_same_ci=p * (1 - p) / (se * se) if se > 0 else float("nan"))


def plain_interval(hits: int, n: int, level: float = LEVEL) -> tuple[float, float, float]:
    """Plain Monte Carlo's estimate and its Wilson score interval: (p̂, low, high)."""
    if n < 1:
        raise ValueError("n must be >= 1")
    z = float(ndtri(0.5 + level / 2))
    p = hits / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    r = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return p, max(0.0, c - r), min(1.0, c + r)
