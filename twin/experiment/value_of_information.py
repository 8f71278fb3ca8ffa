"""Decisions under uncertain inputs (issue 46): probability each option is best, expected loss,
the expected value of perfect information (EVPI, EVPPI per input), variance shares and flip
points, from D draws of the inputs × K options × R inner replications. Pure functions of arrays:
nothing here runs a simulation (twin.experiment.uncertain does).

Notation: θ the uncertain inputs (as the uniforms u ∈ [0, 1]^P of the design: every input's value
is a monotone function of its u), Y[d, k, r] the objective of option k in draw d, replication r;
NB = Y for a higher-is-better objective and −Y for a lower-is-better one (the net benefit, larger
is better, in the objective's unit); μ_k(θ) = E[NB_k | θ] the option's expected net benefit in
the world θ (the replication noise averaged out).

**The problem with inner means.** With R replications the inner mean m_dk = μ_k(θ_d) + ε_dk is
noisy. Near a flip point (where two μ's cross) the noisy means pick the wrong option, and
``mean_d max_k m_dk`` overstates ``E[max_k μ_k]``: the naive EVPI is biased upwards, by about
E[max(Δ + ε, 0)] − E[max(Δ, 0)] for two options, large when R is small (tests show > 40 %).

**The estimator: a Gaussian-process metamodel of the paired differences.** For each option k
against the first (the reference), Δ_k(θ) = μ_k(θ) − μ_0(θ) is regressed on θ by Gaussian-process
regression (a squared-exponential kernel with one length scale per input, plus a constant; its
hyper-parameters by maximum marginal likelihood, L-BFGS-B). The nugget (observation noise) is at
least the replication noise of the inner mean difference, estimated from the replications
(pooled within-draw variance of the paired per-replication differences / R), so the fit does not
follow the noise; paired differences under common random numbers make that noise small. The
posterior mean Δ̂_k(θ_d) at every draw replaces the noisy means:

* P(best)_k = (1/D) Σ_d 1[k = argmax_j Δ̂_j(θ_d)] (Δ̂_0 = 0);
* expected loss (regret) of choosing k: (1/D) Σ_d [max_j Δ̂_j(θ_d) − Δ̂_k(θ_d)];
* EVPI = (1/D) Σ_d max_j Δ̂_j(θ_d) − max_j (1/D) Σ_d Δ̂_j(θ_d) (the loss of the Bayes choice);
* EVPPI of input i (Strong, Oakley & Brennan 2014, regression-based): the same with Δ̂ replaced by
  a one-input Gaussian process of the observed Δ_k on θ_i alone (E[Δ_k | θ_i]).

Intervals (level 95 %): B = 400 joint samples, each a draw of the metamodel from its posterior at the
D points (the uncertainty left by the replication noise and the finite draws) evaluated on a
bootstrap resample of the draws (the outer sampling): percentiles of the statistic. The expected
objective of each option is the mean of the inner means over draws with its Student-t interval
(unbiased: the noise averages out).

The recommendation is the Bayes rule: the option with the best expected objective (equivalently
the smallest expected loss) under the stated input distributions. Its P(best) says how often it is
right in the plausible worlds; it need not be the most probable winner.

**What the decision rests on**: the first-order variance share S1 of each input in the per-draw
paired difference (recommended − runner-up), by SALib's given-data estimator of its ``delta``
analysis (Plischke, Borgonovo & Smith 2013: the draws are binned along each input, so any design
serves), with SALib's bootstrap interval; the delta moment-independent measure (Borgonovo 2007,
bias-balanced) beside it. (RBD-FAST, the other given-data method, was tried and rejected: on
scrambled Sobol' draws it aliases, giving 0.66 for an input whose share is 0.2 at D = 128.) The share of replication noise in the same variance is the pooled inner-noise variance over the
variance of the per-draw differences; the rest is the inputs'. Flip points: where the one-input
metamodel of the difference (recommended − runner-up) changes sign along the input's range, counting
only sign changes it resolves (|difference| ≥ its posterior SD on both sides: :func:`resolved_flips`).

**Saltelli's design** (``twin decide --design saltelli``, N base points, N·(P + 2) draws): the decision
statistics above use its 2N independent rows (the A and B matrices); :func:`sobol_indices` adds the
first-order and total Sobol' indices of the paired difference from every row (Saltelli 2010's
estimators as SALib implements them), which need no binning and see interactions (ST − S1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd
from scipy import optimize
from scipy import stats as _st
from scipy.linalg import cho_factor, cho_solve

LEVEL = 0.95
SAMPLES = 400
"""Joint posterior × bootstrap samples of the intervals."""
MIN_DRAWS_SHARES = 32
"""Fewer draws give no variance shares (SALib's binning needs about 10 draws a bin)."""
FIT_POINTS = 256
"""The hyper-parameters are fitted on at most this many draws (evenly spaced in draw order: a Sobol'
prefix stays space-filling); the posterior then uses every draw. Keeps a fit O(256³) per step."""
CONSTANT_VAR = 1.0
"""Prior variance of the constant term of the GP (standardised units)."""


# ---------------------------------------------------------------------- Gaussian process

@dataclass
class GP:
    """A fitted Gaussian process on standardised y: predictions in the original unit."""

    X: np.ndarray
    y0: float
    scale: float
    length: np.ndarray
    amp: float
    nugget: float
    alpha: np.ndarray = field(repr=False)
    chol: Any = field(repr=False)

    def _k(self, A: np.ndarray, B: np.ndarray) -> np.ndarray:
        d2 = (((A[:, None, :] - B[None, :, :]) / self.length) ** 2).sum(axis=2)
        k: np.ndarray = self.amp * np.exp(-0.5 * d2) + CONSTANT_VAR
        return k

    def mean_at(self, Xn: np.ndarray) -> np.ndarray:
        """Posterior mean of the regression function at the points ``Xn`` (n, P)."""
        if self.scale == 0:
            return np.full(len(Xn), self.y0)
        mean: np.ndarray = self.y0 + self.scale * (self._k(np.atleast_2d(Xn), self.X) @ self.alpha)
        return mean

    def sd_at(self, Xn: np.ndarray) -> np.ndarray:
        """Posterior standard deviation of the regression function at the points ``Xn`` (n, P)."""
        Xn = np.atleast_2d(Xn)
        if self.scale == 0:
            return np.zeros(len(Xn))
        kx = self._k(Xn, self.X)
        var = self.amp + CONSTANT_VAR - np.einsum("ij,ji->i", kx, cho_solve(self.chol, kx.T))
        sd: np.ndarray = self.scale * np.sqrt(np.maximum(var, 0.0))
        return sd

    def posterior(self) -> tuple[np.ndarray, np.ndarray]:
        """(mean, covariance) of the regression function at the training points."""
        n = len(self.X)
        if self.scale == 0:
            return np.full(n, self.y0), np.zeros((n, n))
        Kf = self._k(self.X, self.X)
        mean = self.y0 + self.scale * (Kf @ self.alpha)
        cov = Kf - Kf @ cho_solve(self.chol, Kf)
        return mean, self.scale ** 2 * 0.5 * (cov + cov.T)


def fit_gp(X: np.ndarray, y: np.ndarray, noise_floor: float = 0.0) -> GP:
    """Gaussian-process regression of ``y`` (n,) on ``X`` (n, P), inputs in [0, 1]: squared-exponential
    kernel with one length scale per input plus a constant; nugget = ``noise_floor`` (the known
    observation-noise variance, in y's unit²) + a free extra ≥ 0; hyper-parameters maximise the
    marginal likelihood (L-BFGS-B from two starts, on at most :data:`FIT_POINTS` of the points)."""
    X = np.asarray(X, dtype=float).reshape(len(y), -1)
    y = np.asarray(y, dtype=float)
    n, p = X.shape
    y0, s = float(np.mean(y)), float(np.std(y))
    if not s > 0 or n < 3:
        return GP(X, y0, 0.0, np.ones(p), 0.0, 0.0, np.zeros(n), None)
    z_all = (y - y0) / s
    floor = max(noise_floor / s ** 2, 1e-8)
    sub = np.unique(np.linspace(0, n - 1, min(n, FIT_POINTS)).round().astype(int))
    Xs, z = X[sub], z_all[sub]
    m = len(sub)
    diff2 = (Xs[:, None, :] - Xs[None, :, :]) ** 2

    def parts(theta: np.ndarray) -> tuple[np.ndarray, float, float]:
        ell = np.exp(theta[:p])
        return ell, float(np.exp(theta[p])), floor + float(np.exp(theta[p + 1]))

    def nll(theta: np.ndarray) -> tuple[float, np.ndarray]:
        """Negative log marginal likelihood and its gradient (Rasmussen & Williams 2006, eq. 5.9)."""
        ell, amp, nug = parts(theta)
        E = np.exp(-0.5 * (diff2 / ell ** 2).sum(axis=2))
        K = amp * E + CONSTANT_VAR + nug * np.eye(m)
        try:
            c = cho_factor(K, lower=True)
        except np.linalg.LinAlgError:
            return 1e25, np.zeros(p + 2)
        a = cho_solve(c, z)
        W = cho_solve(c, np.eye(m)) - np.outer(a, a)
        g = np.empty(p + 2)
        AE = amp * E
        for i in range(p):
            g[i] = 0.5 * float(np.sum(W * AE * diff2[:, :, i])) / ell[i] ** 2
        g[p] = 0.5 * float(np.sum(W * AE))
        g[p + 1] = 0.5 * float(np.trace(W)) * (nug - floor)
        return float(0.5 * z @ a + np.log(np.diag(c[0])).sum()), g

    bounds = [(math.log(0.03), math.log(30.0))] * p + [(math.log(1e-4), math.log(100.0)), (math.log(1e-9), math.log(10.0))]
    best = None
    for ell0, nug0 in ((0.3, 0.1), (1.0, 0.01)):
        x0 = np.array([math.log(ell0)] * p + [0.0, math.log(nug0)])
        r = optimize.minimize(nll, x0, jac=True, method="L-BFGS-B", bounds=bounds)
        if best is None or r.fun < best.fun:
            best = r
    assert best is not None
    ell, amp, nug = parts(best.x)
    gp = GP(X, y0, s, ell, amp, nug, np.zeros(n), None)
    K = gp._k(X, X) + (nug + 1e-10) * np.eye(n)
    c = cho_factor(K, lower=True)
    gp.alpha, gp.chol = cho_solve(c, z_all), c
    return gp


def _sampler(mean: np.ndarray, cov: np.ndarray) -> Callable[[np.random.Generator], np.ndarray]:
    w, V = np.linalg.eigh(cov)
    root = V * np.sqrt(np.clip(w, 0.0, None))
    return lambda rng: mean + root @ rng.standard_normal(len(mean))


# ---------------------------------------------------------------------- the decision statistics

def _stats(F: np.ndarray) -> tuple[np.ndarray, float, np.ndarray]:
    """(P(best) per option, EVPI, expected loss per option) of net benefits F (D, K)."""
    best = F.argmax(axis=1)
    pb = np.bincount(best, minlength=F.shape[1]) / len(F)
    mx = F.max(axis=1)
    loss = (mx[:, None] - F).mean(axis=0)
    evpi = float(mx.mean() - F.mean(axis=0).max())
    return pb, evpi, loss


def _interval(samples: np.ndarray, level: float = LEVEL) -> tuple[np.ndarray, np.ndarray]:
    a = (1 - level) / 2
    return np.quantile(samples, a, axis=0), np.quantile(samples, 1 - a, axis=0)


def mean_interval(m: np.ndarray, level: float = LEVEL) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean over the draws (axis 0) of per-draw inner means ``m`` (D, K) and its Student-t interval
    (unbiased: the replication noise averages out): (mean, low, high), each (K,)."""
    D = len(m)
    mean = m.mean(axis=0)
    half = float(_st.t.ppf(0.5 + level / 2, D - 1)) * m.std(axis=0, ddof=1) / math.sqrt(D)
    return mean, mean - half, mean + half


def inner_noise(NB: np.ndarray) -> np.ndarray:
    """Pooled variance of the inner mean of each option's paired difference to the first, per
    option (K,), from (D, K, R) net benefits: mean over draws of the within-draw variance of the
    per-replication differences, / R (0 for the first, or with one replication)."""
    D, K, R = NB.shape
    if R < 2:
        return np.zeros(K)
    d = NB - NB[:, :1, :]
    var: np.ndarray = d.var(axis=2, ddof=1).mean(axis=0) / R
    return var


@dataclass
class Decision:
    """What :func:`analyse` finds (module docstring); tables are pandas frames, values in the
    objective's unit (net benefit: larger is better; ``sense`` says how the objective reads)."""

    options: list[str]
    inputs: list[str]
    sense: str
    draws: int
    replications: int
    options_table: pd.DataFrame
    """option, expected (objective), ci_low, ci_high, p_best, p_best_low, p_best_high, p_best_naive,
    expected_loss, expected_loss_low, expected_loss_high."""
    recommended: str
    runner_up: str
    evpi: float
    evpi_low: float
    evpi_high: float
    evpi_naive: float
    inputs_table: pd.DataFrame
    """input, evppi, evppi_low, evppi_high, s1, s1_low, s1_high, delta, delta_low, delta_high, flip_u."""
    noise_share: float
    rule: str = ("the option with the best expected objective over the input distributions (the Bayes "
                 "decision: the smallest expected loss)")
    difference: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    """Per-draw inner-mean difference, recommended − runner-up, in the objective's unit (signed so that
    > 0 favours the recommended option)."""

    def evppi_of(self, name: str) -> float:
        """EVPPI of one input, in the objective's unit."""
        return float(self.inputs_table.set_index("input").loc[name, "evppi"])


def analyse(Y: np.ndarray, U: np.ndarray, options: Sequence[str], inputs: Sequence[str], sense: str,
            seed: int = 0, samples: int = SAMPLES, level: float = LEVEL, evppi: bool = True,
            indices: bool = True) -> Decision:
    """The decision statistics of objective values ``Y`` (D, K, R) at input uniforms ``U`` (D, P)
    (module docstring). ``sense`` 'min' or 'max'; ``seed`` seeds the interval samples only."""
    Y = np.asarray(Y, dtype=float)
    U = np.asarray(U, dtype=float).reshape(len(Y), -1)
    D, K, R = Y.shape
    if K < 2 or D < 4:
        raise ValueError("need at least two options and four draws")
    sign = 1.0 if sense == "max" else -1.0
    NB = sign * Y
    m = NB.mean(axis=2)
    noise = inner_noise(NB)
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(0x46, 1)))
    F = np.zeros((D, K))
    draws_of: list[Callable[[np.random.Generator], np.ndarray]] = [lambda r: np.zeros(D)]
    for k in range(1, K):
        gp = fit_gp(U, m[:, k] - m[:, 0], float(noise[k]))
        mu, cov = gp.posterior()
        F[:, k] = mu
        draws_of.append(_sampler(mu, cov))
    pb, evpi, loss = _stats(F)
    pb_s, evpi_s, loss_s = np.zeros((samples, K)), np.zeros(samples), np.zeros((samples, K))
    for b in range(samples):
        idx = rng.integers(0, D, D)
        Fb = np.column_stack([f(rng) for f in draws_of])[idx]
        pb_s[b], evpi_s[b], loss_s[b] = _stats(Fb)
    pb_lo, pb_hi = _interval(pb_s, level)
    l_lo, l_hi = _interval(loss_s, level)
    e_lo, e_hi = _interval(evpi_s, level)
    pb_naive, evpi_naive, _ = _stats(m)
    means, m_lo, m_hi = mean_interval(m, level)
    rec = int(np.argmax(means))
    others = [k for k in range(K) if k != rec]
    ru = max(others, key=lambda k: (means[k], -k))
    opt = pd.DataFrame({
        "option": list(options), "expected": sign * means,
        "ci_low": sign * (m_lo if sign > 0 else m_hi), "ci_high": sign * (m_hi if sign > 0 else m_lo),
        "p_best": pb, "p_best_low": pb_lo, "p_best_high": pb_hi, "p_best_naive": pb_naive,
        "expected_loss": loss, "expected_loss_low": l_lo, "expected_loss_high": l_hi})
    diff = m[:, rec] - m[:, ru]
    rows = []
    noise_rr = float(np.mean((NB[:, rec, :] - NB[:, ru, :]).var(axis=1, ddof=1)) / R) if R > 1 else 0.0
    var_diff = float(np.var(diff, ddof=1))
    sh = _shares(U, diff, seed) if indices else None
    for i, name in enumerate(inputs):
        row: dict[str, Any] = {"input": name}
        if evppi:
            row.update(_evppi(U[:, i], m, noise, rng, samples, level, rec, ru))
        if sh is not None:
            row.update({"s1": sh["s1"][i], "s1_low": sh["s1"][i] - sh["s1_conf"][i],
                        "s1_high": sh["s1"][i] + sh["s1_conf"][i], "delta": sh["delta"][i],
                        "delta_low": sh["delta"][i] - sh["delta_conf"][i], "delta_high": sh["delta"][i] + sh["delta_conf"][i]})
        rows.append(row)
    tab = pd.DataFrame(rows)
    return Decision(list(options), list(inputs), sense, D, R, opt, options[rec], options[ru], evpi,
                    float(e_lo), float(e_hi), evpi_naive, tab,
                    min(1.0, noise_rr / var_diff) if var_diff > 0 else (1.0 if noise_rr > 0 else 0.0),
                    difference=diff)


def _evppi(x: np.ndarray, m: np.ndarray, noise: np.ndarray, rng: np.random.Generator, samples: int, level: float,
           rec: int, ru: int) -> dict[str, Any]:
    """EVPPI of one input (regression of each paired difference on it alone), its interval, and the
    flip points (u where the fitted difference recommended − runner-up changes sign)."""
    D, K = m.shape
    X = x.reshape(-1, 1)
    G = np.zeros((D, K))
    draws_of: list[Callable[[np.random.Generator], np.ndarray]] = [lambda r: np.zeros(D)]
    grid = np.linspace(0.0, 1.0, 201).reshape(-1, 1)
    curve = np.zeros((201, K))
    var = np.zeros((201, K))
    for k in range(1, K):
        gp = fit_gp(X, m[:, k] - m[:, 0], float(noise[k]))
        mu, cov = gp.posterior()
        G[:, k] = mu
        curve[:, k] = gp.mean_at(grid)
        var[:, k] = gp.sd_at(grid) ** 2
        draws_of.append(_sampler(mu, cov))
    _, val, _ = _stats(G)
    s = np.zeros(samples)
    for b in range(samples):
        idx = rng.integers(0, D, D)
        s[b] = _stats(np.column_stack([f(rng) for f in draws_of])[idx])[1]
    lo, hi = _interval(s, level)
    g = curve[:, rec] - curve[:, ru]
    flips = resolved_flips(grid[:, 0], g, np.sqrt(var[:, rec] + var[:, ru]))
    return {"evppi": max(0.0, val), "evppi_low": max(0.0, float(lo)), "evppi_high": max(0.0, float(hi)),
            "flip_u": flips}


def resolved_flips(x: np.ndarray, g: np.ndarray, sd: np.ndarray) -> list[float]:
    """Where the sign of the fitted difference ``g`` (on the grid ``x``) changes *as the metamodel resolves
    it*: a point is resolved when |g| ≥ its posterior SD ``sd`` (the two fits' independent SDs combined);
    a flip is reported between two resolved points of opposite signs, at the zero crossing of ``g``
    between them (the one nearest the middle when ``g`` wiggles around zero in between). A dip of the
    curve below zero that stays within its own uncertainty is not a flip (it used to be reported as two
    crossings a few grid steps apart)."""
    out: list[float] = []
    last = -1  # index of the last resolved point
    for j in range(len(g)):
        if abs(g[j]) < sd[j] or g[j] == 0:
            continue
        if last >= 0 and np.sign(g[j]) != np.sign(g[last]):
            cross = [i for i in range(last, j) if g[i] * g[i + 1] <= 0 and g[i] != g[i + 1]]
            mid = 0.5 * (x[last] + x[j])
            at = [float(x[i] + (x[i + 1] - x[i]) * g[i] / (g[i] - g[i + 1])) for i in cross] or [mid]
            out.append(min(at, key=lambda v: abs(v - mid)))
        last = j
    return out


def _problem(P: int) -> dict[str, Any]:
    return {"num_vars": P, "names": [f"x{i}" for i in range(P)], "bounds": [[0.0, 1.0]] * P}


def _shares(U: np.ndarray, y: np.ndarray, seed: int) -> dict[str, np.ndarray] | None:
    """First-order variance shares S1 (given-data estimator) and Borgonovo's delta (balanced) of each
    input, with their bootstrap half-widths, by SALib's ``delta`` analysis; None with fewer than
    :data:`MIN_DRAWS_SHARES` draws or no spread."""
    import contextlib
    import io
    import warnings

    from SALib.analyze import delta

    D, P = U.shape
    if D < MIN_DRAWS_SHARES or not np.std(y) > 0:
        return None
    with warnings.catch_warnings(record=True), contextlib.redirect_stdout(io.StringIO()), \
            contextlib.redirect_stderr(io.StringIO()):  # SALib prints and warns bin notices: kept out of the output
        warnings.simplefilter("ignore")
        # SALib draws from numpy's global generator, seeded only by a truthy seed (0 is not): seed it here
        # for any seed, and put its state back afterwards
        state = np.random.get_state()
        np.random.seed(int(np.random.SeedSequence(seed, spawn_key=(0x46, 2)).generate_state(1)[0]))
        try:
            r = delta.analyze(_problem(P), U, y, num_resamples=100, conf_level=LEVEL, seed=None, method="all")
        finally:
            np.random.set_state(state)
    return {k: np.asarray(r[v], dtype=float) for k, v in (("s1", "S1"), ("s1_conf", "S1_conf"),
                                                            ("delta", "delta_balanced"),
                                                            ("delta_conf", "delta_balanced_conf"))}


def sobol_indices(U: np.ndarray, y: np.ndarray, seed: int, level: float = LEVEL) -> dict[str, np.ndarray] | None:
    """First-order and total Sobol' indices (S1, ST) of each input with their bootstrap half-widths, by
    SALib's Saltelli/Jansen estimators (``SALib.analyze.sobol``, first order only) on a Saltelli design
    ``U`` (rows in SALib's layout: :func:`twin.scenario.uncertainty.design` with ``saltelli``) and the
    output ``y`` of every row; None without spread. The bootstrap draws from a stream of ``seed``."""
    import warnings

    from SALib.analyze import sobol

    U = np.asarray(U, dtype=float)
    y = np.asarray(y, dtype=float)
    if not np.std(y) > 0:
        return None
    boot_seed = int(np.random.SeedSequence(seed, spawn_key=(0x46, 3)).generate_state(1)[0]) | 1  # truthy
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = sobol.analyze(_problem(U.shape[1]), y, calc_second_order=False, num_resamples=200, conf_level=level,
                          seed=boot_seed)
    return {k: np.asarray(r[v], dtype=float) for k, v in (("s1", "S1"), ("s1_conf", "S1_conf"), ("st", "ST"),
                                                            ("st_conf", "ST_conf"))}


def probability_half_width(dec: Decision) -> float:
    """Half-width of the recommended option's P(best) interval (what ``--target-ci`` bounds)."""
    r = dec.options_table.set_index("option").loc[dec.recommended]
    return float(r["p_best_high"] - r["p_best_low"]) / 2


__all__ = ["Decision", "GP", "analyse", "fit_gp", "inner_noise", "probability_half_width", "sobol_indices"]
