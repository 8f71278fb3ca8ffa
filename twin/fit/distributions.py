"""Lifetime distributions in the twin's scenario parameterisation.

The twin's scenario files describe a failure distribution as a mapping with key ``dist``
plus its parameters:

* ``exponential: {mean_h}``
* ``weibull: {shape, scale_h}``  (two-parameter, location 0)
* ``lognormal: {mean_h, sigma}`` where ``mean_h`` is the arithmetic mean and ``sigma`` the
  standard deviation of the underlying normal, so ``mu = ln(mean_h) - sigma**2 / 2``.

This module converts between that form and frozen ``scipy.stats`` distributions.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from scipy import stats
from scipy.special import gammaln

DISTS: tuple[str, ...] = ("exponential", "weibull", "lognormal")

#: Parameter names of each distribution, in the order used by the fitter.
PARAMS: dict[str, tuple[str, ...]] = {
    "exponential": ("mean_h",),
    "weibull": ("shape", "scale_h"),
    "lognormal": ("mean_h", "sigma"),
}

#: scipy.stats family behind each distribution name.
SCIPY_FAMILY = {
    "exponential": stats.expon,
    "weibull": stats.weibull_min,
    "lognormal": stats.lognorm,
}


def _check(dist: str, params: Mapping[str, float]) -> None:
    if dist not in PARAMS:
        raise ValueError(f"unknown distribution {dist!r}; expected one of {', '.join(DISTS)}")
    missing = [p for p in PARAMS[dist] if p not in params]
    if missing:
        raise ValueError(f"{dist} needs parameters {', '.join(PARAMS[dist])}; missing {', '.join(missing)}")
    for name in PARAMS[dist]:
        value = float(params[name])
        if not (math.isfinite(value) and value > 0):
            raise ValueError(f"{dist} parameter {name} must be a positive finite number, got {value}")


def scipy_args(dist: str, params: Mapping[str, float]) -> tuple[tuple[float, ...], float]:
    """Return ``(shape_args, scale)`` of the scipy family (location is always 0)."""
    _check(dist, params)
    if dist == "exponential":
        return (), float(params["mean_h"])
    if dist == "weibull":
        return (float(params["shape"]),), float(params["scale_h"])
    sigma = float(params["sigma"])
    mu = math.log(float(params["mean_h"])) - sigma * sigma / 2.0
    return (sigma,), math.exp(mu)


def from_scipy(dist: str, shape_args: tuple[float, ...], scale: float) -> dict[str, float]:
    """Inverse of :func:`scipy_args`: scipy's ``(shapes..., loc=0, scale)`` → twin parameters."""
    if dist == "exponential":
        return {"mean_h": float(scale)}
    if dist == "weibull":
        return {"shape": float(shape_args[0]), "scale_h": float(scale)}
    if dist == "lognormal":
        sigma = float(shape_args[0])
        return {"mean_h": float(scale) * math.exp(sigma * sigma / 2.0), "sigma": sigma}
    raise ValueError(f"unknown distribution {dist!r}")


def frozen(dist: str, params: Mapping[str, float]):
    """A frozen ``scipy.stats`` distribution for ``dist`` with twin ``params``."""
    shape_args, scale = scipy_args(dist, params)
    return SCIPY_FAMILY[dist](*shape_args, loc=0.0, scale=scale)


def mean_h(dist: str, params: Mapping[str, float]) -> float:
    """Arithmetic mean lifetime in hours."""
    _check(dist, params)
    if dist == "weibull":
        shape = float(params["shape"])
        return float(params["scale_h"]) * math.exp(gammaln(1.0 + 1.0 / shape))
    return float(params["mean_h"])


def spec(dist: str, params: Mapping[str, float], digits: int = 4) -> dict[str, object]:
    """Distribution spec as written to scenario files: ``{dist: ..., <params>}``.

    Values are rounded to ``digits`` significant figures.
    """
    _check(dist, params)
    out: dict[str, object] = {"dist": dist}
    for name in PARAMS[dist]:
        out[name] = round_sig(float(params[name]), digits)
    return out


def round_sig(value: float, digits: int = 4) -> float:
    """Round to ``digits`` significant figures (returns a float)."""
    if value == 0 or not math.isfinite(value):
        return float(value)
    return float(f"{value:.{digits}g}")
