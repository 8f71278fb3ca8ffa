"""Time distributions of the scenario (model.md §2), all in hours.

Written in a scenario as a mapping with ``dist``::

    {dist: exponential, mean_h: 50000}
    {dist: weibull, shape: 1.5, scale_h: 60000}
    {dist: lognormal, mean_h: 4, sigma: 0.8}     # mean_h arithmetic; sigma of the underlying normal
    {dist: fixed, value_h: 2}
    {dist: empirical, file: data/repair_times.csv}   # one column of hours, path relative to scenario

Shorthand: ``{mtbf_h: X}`` (or ``{mean_h: X}`` without ``dist``) is exponential with mean X.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any, Literal, Union

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr
from scipy.special import ndtri

from twin import rng

# the inverse CDFs' ufuncs, called on numpy scalars by ``sample1``: the same inner loops as on arrays
_f64, _log1p, _power, _exp, _log = np.float64, np.log1p, np.power, np.exp, np.log

Hours = Annotated[float, Field(gt=0, allow_inf_nan=False)]


def _pow(base: float, exponent: float) -> float:
    """``base ** exponent``, +inf where it overflows (a tiny Weibull scale at a long horizon)."""
    try:
        return base ** exponent
    except OverflowError:
        return math.inf


class _Dist(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    def sample(self, u: NDArray[np.float64]) -> NDArray[np.float64]:  # pragma: no cover - abstract
        raise NotImplementedError

    def sample1(self, u: float) -> float:
        """One draw at the uniform ``u``, hours: ``float(sample(np.array([u]))[0])``, bit for bit. The inverse
        CDFs override it with the same numpy ufuncs called on numpy scalars (the same inner loops as on a
        one-element array, SIMD ones included: Python's ``math`` may differ in the last digit), at a fifth of
        the cost of the array's calls (a scattered single draw of the event loop: a repair time, a lifetime)."""
        return float(self.sample(np.array([u]))[0])

    def mean(self) -> float:  # pragma: no cover - abstract
        """Mean, hours."""
        raise NotImplementedError

    def cdf(self, t_h: float) -> float:  # pragma: no cover - abstract
        """P(X <= t_h)."""
        raise NotImplementedError

    def mean_below(self, c_h: float) -> float:  # pragma: no cover - abstract
        """E[min(X, c_h)], hours: the mean truncated at ``c_h`` (the integral of the survival function
        from 0 to ``c_h``); finite however heavy the tail."""
        raise NotImplementedError

    def nbue(self) -> bool:
        """New better than used in expectation (exponential, Weibull of shape >= 1, fixed): the renewal
        function is then at most t / mean (Barlow and Proschan), so t / mean bounds the renewals."""
        return False


class Exponential(_Dist):
    dist: Literal["exponential"] = "exponential"
    mean_h: Hours

    def sample(self, u: NDArray[np.float64]) -> NDArray[np.float64]:
        return rng.exponential_from_u(u, self.mean_h)

    def sample1(self, u: float) -> float:
        return float(-self.mean_h * _log1p(_f64(-u)))  # (rng.exponential_from_u's operations on a scalar)

    def mean(self) -> float:
        return self.mean_h

    def cdf(self, t_h: float) -> float:
        return -math.expm1(-max(t_h, 0.0) / self.mean_h)

    def mean_below(self, c_h: float) -> float:
        return self.mean_h * self.cdf(c_h)  # m (1 - exp(-c/m))

    def nbue(self) -> bool:
        return True


class Weibull(_Dist):
    dist: Literal["weibull"] = "weibull"
    shape: Annotated[float, Field(ge=0.1, le=100, allow_inf_nan=False)] = Field(
        description="Weibull shape; 0.1–100 (below 0.1 the mean and the samples overflow: not a physical "
                    "lifetime, infant mortality is about 0.3–0.9).")
    scale_h: Hours

    def sample(self, u: NDArray[np.float64]) -> NDArray[np.float64]:
        return rng.weibull_from_u(u, self.shape, self.scale_h)

    def sample1(self, u: float) -> float:
        return float(self.scale_h * _power(-_log1p(_f64(-u)), 1.0 / self.shape))  # (rng.weibull_from_u's)

    def mean(self) -> float:
        return self.scale_h * math.gamma(1.0 + 1.0 / self.shape)

    def cdf(self, t_h: float) -> float:
        return -math.expm1(-_pow(max(t_h, 0.0) / self.scale_h, self.shape))

    def mean_below(self, c_h: float) -> float:
        from scipy import special

        # E[X; X < c] = scale Γ(1 + 1/k) P(1 + 1/k, (c/scale)^k), plus c P(X >= c)
        a = 1.0 + 1.0 / self.shape
        x = _pow(max(c_h, 0.0) / self.scale_h, self.shape)
        below = self.scale_h * math.exp(float(special.gammaln(a))) * float(special.gammainc(a, x))
        return below + c_h * math.exp(-x)

    def nbue(self) -> bool:
        return self.shape >= 1.0


class Lognormal(_Dist):
    dist: Literal["lognormal"] = "lognormal"
    mean_h: Hours
    sigma: Annotated[float, Field(gt=0, le=10, allow_inf_nan=False)]

    def sample(self, u: NDArray[np.float64]) -> NDArray[np.float64]:
        return rng.lognormal_from_u(u, self.mean_h, self.sigma)

    def sample1(self, u: float) -> float:
        sigma = self.sigma  # (rng.lognormal_from_u's operations on a scalar)
        return float(_exp((_log(self.mean_h) - 0.5 * sigma * sigma) + sigma * ndtri(_f64(u))))

    def mean(self) -> float:
        return self.mean_h

    def _mu(self) -> float:
        return math.log(self.mean_h) - self.sigma * self.sigma / 2.0

    def cdf(self, t_h: float) -> float:
        from scipy import special  # Φ (scipy.special.ndtr; scipy.stats would import scipy.optimize)

        return float(special.ndtr((math.log(t_h) - self._mu()) / self.sigma)) if t_h > 0 else 0.0

    def mean_below(self, c_h: float) -> float:
        from scipy import special

        if c_h <= 0:
            return 0.0
        # E[X; X < c] = mean Φ((ln c − μ − σ²) / σ), plus c P(X >= c) = c Φ(−(ln c − μ) / σ)
        z = (math.log(c_h) - self._mu()) / self.sigma
        below = self.mean_h * float(special.ndtr(z - self.sigma))
        return below + c_h * float(special.ndtr(-z))


class Fixed(_Dist):
    dist: Literal["fixed"] = "fixed"
    value_h: Annotated[float, Field(ge=0, allow_inf_nan=False)]

    def sample(self, u: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.full(np.shape(u), self.value_h)

    def sample1(self, u: float) -> float:
        return float(self.value_h)

    def mean(self) -> float:
        return self.value_h

    def cdf(self, t_h: float) -> float:
        return 1.0 if self.value_h <= t_h else 0.0

    def mean_below(self, c_h: float) -> float:
        return min(self.value_h, c_h)

    def nbue(self) -> bool:
        return True


class Empirical(_Dist):
    """Resampled from a CSV with one numeric column of hours (header optional)."""

    dist: Literal["empirical"] = "empirical"
    file: str
    _values: NDArray[np.float64] | None = PrivateAttr(default=None)

    def bind(self, values: NDArray[np.float64]) -> None:
        self._values = np.sort(np.asarray(values, dtype=np.float64))

    def sample(self, u: NDArray[np.float64]) -> NDArray[np.float64]:
        assert self._values is not None, "empirical distribution used before its file was loaded"
        return rng.empirical_from_u(u, self._values)

    def sample1(self, u: float) -> float:
        assert self._values is not None, "empirical distribution used before its file was loaded"
        n = len(self._values)  # (rng.empirical_from_u's: u·n truncated, as astype(int64) does for u >= 0)
        return float(self._values[min(int(u * n), n - 1)])

    def mean(self) -> float:
        assert self._values is not None
        return float(self._values.mean())

    def cdf(self, t_h: float) -> float:
        assert self._values is not None
        return float(np.searchsorted(self._values, t_h, side="right")) / len(self._values)

    def mean_below(self, c_h: float) -> float:
        assert self._values is not None
        return float(np.minimum(self._values, c_h).mean())


def _shorthand(value: Any) -> Any:
    if isinstance(value, dict) and "dist" not in value:
        if set(value) == {"mtbf_h"}:
            return {"dist": "exponential", "mean_h": value["mtbf_h"]}
        if set(value) == {"mean_h"}:
            return {"dist": "exponential", "mean_h": value["mean_h"]}
    return value


Distribution = Annotated[
    Union[Exponential, Weibull, Lognormal, Fixed, Empirical], Field(discriminator="dist")
]


def normalise_dist(value: Any) -> Any:
    """Before-validator that expands the ``mtbf_h`` shorthand."""
    return _shorthand(value)


def load_empirical(path: Path) -> NDArray[np.float64]:
    """Read an empirical CSV: one column of non-negative hours, optional header line."""
    from twin.errors import InputError
    from twin.scenario.files import require_file

    require_file(path, "empirical distribution file")
    vals: list[float] = []
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            s = line.strip().split(",")[0].strip()
            if not s:
                continue
            try:
                v = float(s)
            except ValueError:
                if lineno == 1:
                    continue  # header
                raise InputError(str(path), f"row {lineno}", f"not a number: {s!r}") from None
            if not math.isfinite(v) or v < 0:
                raise InputError(str(path), f"row {lineno}", f"hours must be finite and >= 0, got {s}")
            vals.append(v)
    if not vals:
        raise InputError(str(path), "", "empirical distribution file has no values")
    return np.asarray(vals)
