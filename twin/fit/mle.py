"""Maximum-likelihood fits of lifetime distributions to right-censored data.

Estimation uses ``scipy.stats``: each family's ``fit`` on a :class:`scipy.stats.CensoredData`
with ``floc=0`` (failures are exact observations, censored lives contribute their survival
function). The optimiser is scipy's own Nelder–Mead (``scipy.optimize.fmin``) with tighter
tolerances than ``fit``'s default; times are divided by their median before fitting so the
optimiser works on numbers near 1.

Confidence intervals (default 95 %) are Wald intervals from the observed information: the
Hessian of the negative log-likelihood (``logpdf`` of failures + ``logsf`` of censored
lives, from scipy) is taken by central finite differences at the MLE with respect to the
*logarithms* of the twin parameters; intervals ``exp(log θ ± z·se)`` are therefore positive
and asymmetric. The interval of the mean of a Weibull fit uses the delta method on the same
log scale.

Model selection: smallest AIC = 2k − 2 ln L; BIC = k ln n − 2 ln L is reported with n = the
number of lives (failed + censored).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import optimize, stats

from twin.fit import distributions

#: Below this many failures a part's fit gets a warning.
FEW_FAILURES = 5
#: Below this many failures only the exponential (one parameter) is fitted.
MIN_FAILURES_TWO_PARAM = 3


@dataclass
class ModelFit:
    """One distribution fitted to one part's lives."""

    dist: str
    params: dict[str, float]
    ci: dict[str, tuple[float, float]]
    mean_h: float
    mean_ci: tuple[float, float]
    loglik: float
    k: int
    n: int
    aic: float
    bic: float
    level: float = 0.95
    warnings: list[str] = field(default_factory=list)

    def spec(self, digits: int = 4) -> dict[str, object]:
        """The scenario distribution spec ``{dist: ..., <params>}``."""
        return distributions.spec(self.dist, self.params, digits)

    def frozen(self):
        return distributions.frozen(self.dist, self.params)


@dataclass
class PartFit:
    """All models fitted to one part type, with the AIC choice."""

    part: str
    durations_h: np.ndarray
    failed: np.ndarray
    models: dict[str, ModelFit]
    best: str
    warnings: list[str] = field(default_factory=list)

    @property
    def n(self) -> int:
        return int(self.durations_h.size)

    @property
    def failures(self) -> int:
        return int(self.failed.sum())

    @property
    def censored(self) -> int:
        return self.n - self.failures

    @property
    def chosen(self) -> ModelFit:
        return self.models[self.best]

    def delta_aic(self, dist: str) -> float:
        return self.models[dist].aic - self.chosen.aic


def censored_data(durations_h: np.ndarray, failed: np.ndarray) -> stats.CensoredData:
    """``CensoredData`` with failures as exact values and the rest right-censored."""
    d = np.asarray(durations_h, dtype=float)
    f = np.asarray(failed, dtype=bool)
    return stats.CensoredData(uncensored=d[f], right=d[~f])


def loglik(dist: str, params: Mapping[str, float], durations_h: np.ndarray, failed: np.ndarray) -> float:
    """Right-censored log-likelihood: Σ logpdf(failures) + Σ logsf(censored)."""
    d = np.asarray(durations_h, dtype=float)
    f = np.asarray(failed, dtype=bool)
    rv = distributions.frozen(dist, params)
    with np.errstate(all="ignore"):
        value = float(np.sum(rv.logpdf(d[f])) + np.sum(rv.logsf(d[~f])))
    return value if not math.isnan(value) else -math.inf


class _TightFmin:
    """scipy's Nelder–Mead with tight tolerances; remembers whether it converged."""

    def __init__(self) -> None:
        self.converged = True

    def __call__(self, func, x0, args=(), disp=0):
        xopt, _fopt, _it, _nfev, warnflag = optimize.fmin(
            func, x0, args=args, disp=0, xtol=1e-9, ftol=1e-11, maxiter=20000, maxfun=20000,
            full_output=True,
        )
        self.converged = warnflag == 0
        return xopt


# Hour-valued parameters get divided by the time scale; dimensionless ones don't.
_HOURS = {"mean_h", "scale_h"}


def _to_theta(dist: str, params: Mapping[str, float], scale: float) -> np.ndarray:
    return np.array([math.log(params[p] / scale if p in _HOURS else params[p]) for p in distributions.PARAMS[dist]])


def _from_theta(dist: str, theta: np.ndarray, scale: float) -> dict[str, float]:
    return {p: math.exp(t) * (scale if p in _HOURS else 1.0) for p, t in zip(distributions.PARAMS[dist], theta)}


def _hessian(fun, x: np.ndarray, h: float = 1e-3) -> np.ndarray:
    """Central finite-difference Hessian of ``fun`` at ``x``."""
    k = x.size
    H = np.empty((k, k))
    f0 = fun(x)
    for i in range(k):
        ei = np.zeros(k)
        ei[i] = h
        H[i, i] = (fun(x + ei) - 2.0 * f0 + fun(x - ei)) / (h * h)
        for j in range(i + 1, k):
            ej = np.zeros(k)
            ej[j] = h
            H[i, j] = H[j, i] = (
                fun(x + ei + ej) - fun(x + ei - ej) - fun(x - ei + ej) + fun(x - ei - ej)
            ) / (4.0 * h * h)
    return H


def _gradient(fun, x: np.ndarray, h: float = 1e-5) -> np.ndarray:
    g = np.empty(x.size)
    for i in range(x.size):
        e = np.zeros(x.size)
        e[i] = h
        g[i] = (fun(x + e) - fun(x - e)) / (2.0 * h)
    return g


def fit_model(dist: str, durations_h: Sequence[float] | np.ndarray, failed: Sequence[bool] | np.ndarray,
              level: float = 0.95) -> ModelFit:
    """Fit one distribution by maximum likelihood with right censoring.

    ``durations_h`` are lifetimes (failure) or observation lengths (censored) in hours,
    ``failed`` the matching flags. Needs at least one failure and positive durations for
    failures.
    """
    if dist not in distributions.PARAMS:
        raise ValueError(f"unknown distribution {dist!r}")
    d = np.asarray(durations_h, dtype=float)
    f = np.asarray(failed, dtype=bool)
    if d.shape != f.shape or d.ndim != 1:
        raise ValueError("durations_h and failed must be 1-d and of equal length")
    if not f.any():
        raise ValueError("at least one failure is needed to fit a lifetime distribution")
    if np.any(d[f] <= 0) or np.any(d < 0):
        raise ValueError("failure lifetimes must be > 0 and censoring times >= 0")

    scale = float(np.median(d[d > 0]))
    data = censored_data(d / scale, f)
    family = distributions.SCIPY_FAMILY[dist]
    optimizer = _TightFmin()
    notes: list[str] = []
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        fitted = family.fit(data, floc=0, optimizer=optimizer)
    shape_args, fscale = tuple(fitted[:-2]), float(fitted[-1])
    try:
        params_unit = distributions.from_scipy(dist, shape_args, fscale)
    except OverflowError:
        raise FloatingPointError(f"{dist}: fit produced parameters beyond floating point ({shape_args}, "
                                 f"scale {fscale:g})") from None
    if not optimizer.converged:
        notes.append(f"{dist}: optimiser hit its iteration limit; estimates may be inaccurate")
    if not all(math.isfinite(v) and v > 0 for v in params_unit.values()):
        raise FloatingPointError(f"{dist}: fit produced invalid parameters {params_unit}")
    params = {p: v * scale if p in _HOURS else v for p, v in params_unit.items()}

    # Observed information on the log-parameter scale (normalised time units).
    d_unit, theta_hat = d / scale, _to_theta(dist, params, scale)

    def nll(theta: np.ndarray) -> float:
        return -loglik(dist, _from_theta(dist, theta, 1.0), d_unit, f)

    def log_mean(theta: np.ndarray) -> float:
        return math.log(distributions.mean_h(dist, _from_theta(dist, theta, 1.0)))

    z = float(stats.norm.ppf(0.5 + level / 2.0))
    ci: dict[str, tuple[float, float]] = {}
    try:
        mean = distributions.mean_h(dist, params)
    except OverflowError:
        raise FloatingPointError(f"{dist}: the fitted mean overflows floating point ({params})") from None
    mean_ci = (math.nan, math.nan)
    with np.errstate(all="ignore"):
        H = _hessian(nll, theta_hat)
    cov = None
    if np.all(np.isfinite(H)):
        try:
            eig = np.linalg.eigvalsh(H)
            if eig.min() > 0:
                cov = np.linalg.inv(H)
        except np.linalg.LinAlgError:
            cov = None
    if cov is None:
        notes.append(f"{dist}: observed information not positive definite; no confidence intervals")
        for p in distributions.PARAMS[dist]:
            ci[p] = (math.nan, math.nan)
    else:
        se = np.sqrt(np.diag(cov))
        for i, p in enumerate(distributions.PARAMS[dist]):
            unit = scale if p in _HOURS else 1.0
            ci[p] = (math.exp(theta_hat[i] - z * se[i]) * unit, math.exp(theta_hat[i] + z * se[i]) * unit)
        g = _gradient(log_mean, theta_hat)
        se_mean = math.sqrt(max(float(g @ cov @ g), 0.0))
        mean_ci = (mean * math.exp(-z * se_mean), mean * math.exp(z * se_mean))

    ll = loglik(dist, params, d, f)
    k = len(distributions.PARAMS[dist])
    n = int(d.size)
    return ModelFit(dist=dist, params=params, ci=ci, mean_h=mean, mean_ci=mean_ci, loglik=ll, k=k, n=n,
                    aic=2 * k - 2 * ll, bic=k * math.log(n) - 2 * ll, level=level, warnings=notes)


def fit_part(part: str, durations_h: Sequence[float] | np.ndarray, failed: Sequence[bool] | np.ndarray,
             dists: Sequence[str] = distributions.DISTS, level: float = 0.95) -> PartFit:
    """Fit every distribution in ``dists`` and choose by AIC."""
    d = np.asarray(durations_h, dtype=float)
    f = np.asarray(failed, dtype=bool)
    failures = int(f.sum())
    if failures == 0:
        raise ValueError(f"part {part!r} has no failures")
    notes: list[str] = []
    if failures < FEW_FAILURES:
        notes.append(f"{part}: only {failures} failure(s) in {d.size} lives; "
                     "intervals are wide and the model choice is unreliable")
    use = list(dists)
    if failures < MIN_FAILURES_TWO_PARAM:
        two = [x for x in use if len(distributions.PARAMS[x]) > 1]
        if two:
            notes.append(f"{part}: fewer than {MIN_FAILURES_TWO_PARAM} failures; fitted exponential only")
        use = [x for x in use if len(distributions.PARAMS[x]) == 1]
    models: dict[str, ModelFit] = {}
    for dist in use:
        try:
            m = fit_model(dist, d, f, level)
        except FloatingPointError as exc:
            notes.append(str(exc))
            continue
        if not math.isfinite(m.loglik):
            notes.append(f"{part}: {dist} fit has a non-finite log-likelihood; skipped")
            continue
        notes.extend(f"{part}: {w}" for w in m.warnings)
        models[dist] = m
    if not models:
        raise FloatingPointError(f"part {part!r}: no distribution could be fitted")
    best = min(models, key=lambda k: models[k].aic)
    return PartFit(part=part, durations_h=d, failed=f, models=models, best=best, warnings=notes)


def kaplan_meier(durations_h: np.ndarray, failed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Kaplan–Meier survival estimate via ``scipy.stats.ecdf`` on censored data.

    Returns ``(times, survival)`` at the distinct failure times.
    """
    res = stats.ecdf(censored_data(durations_h, failed))
    return np.asarray(res.sf.quantiles, dtype=float), np.asarray(res.sf.probabilities, dtype=float)
