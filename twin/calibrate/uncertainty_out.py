"""The ``uncertainty:`` section of the calibrated scenario (issue 46, item 4: calibration feeds the
decision under uncertainty).

Every value ``twin calibrate`` writes is an estimate with an interval; the section states each as a
distribution that ``twin decide`` draws, with ``source: "fit: <files>"``, so a measured input enters
the decision with the width its data give it instead of an assumed range. An option file that
``extends`` the calibrated scenario inherits the section (it replaces, path by path, the assumed range
of the same field in the base: a distribution is replaced whole, never merged); ``twin decide
--inputs calibrated.yaml`` applies it to options that do not extend it.

The distribution of an estimate θ̂ with a ``level`` interval [lo, hi] (lo > 0):

* a **lognormal** with median θ̂ and σ = ln(hi/lo) / (2 z), z the normal quantile of the level: the
  interval's width on the log scale, which is how the fits' intervals behave (profile likelihood and
  bootstrap intervals of positive quantities are near-symmetric in log), truncated to
  [θ̂·e^(−4σ), θ̂·e^(4σ)] (a tail beyond 4σ has probability 6e-5: negligible);
* when the interval reaches zero (lo = 0: a frailty variance whose data do not exclude none, even an
  estimate of 0), a
  **triangular** on [0, hi'] with mode θ̂, hi' the point where a triangle with that mode leaves
  (1 − level)/2 above hi.

Parameters of one fit (a Weibull's shape and scale) are drawn independently: their correlation is
ignored, which widens the joint range (conservative for the decision, stated in the section).
"""

from __future__ import annotations

import math
from typing import Any

from scipy.stats import norm

from twin.calibrate.gather import Calibration
from twin.calibrate.model_choice import usable

TAIL_SIGMAS = 4.0
"""Truncation of the lognormal at ±4σ of the log (tail mass 6e-5 each side)."""


def _g(x: float) -> str:
    return f"{x:.4g}"


def distribution(estimate: float, ci: tuple[float, float], level: float, source: str) -> dict[str, Any] | None:
    """The ``uncertainty:`` distribution of an estimate and its interval (module doc), or None when the
    interval says nothing usable (not finite, or no width)."""
    lo, hi = float(ci[0]), float(ci[1])
    if not all(math.isfinite(v) for v in (estimate, lo, hi)) or estimate < 0 or hi <= lo or hi <= 0:
        return None
    if estimate == 0 and lo > 0:
        return None
    if lo > 0:
        z = float(norm.ppf(0.5 + level / 2))
        sigma = math.log(hi / lo) / (2 * z)
        if sigma <= 0:
            return None
        return {"dist": "lognormal", "median": float(_g(estimate)), "sigma": float(_g(sigma)),
                "low": float(_g(estimate * math.exp(-TAIL_SIGMAS * sigma))),
                "high": float(_g(estimate * math.exp(TAIL_SIGMAS * sigma))), "source": source}
    # triangular on [0, top] with mode m: P(X > hi) = (top - hi)^2 / (top (top - m)) = tail
    tail = (1 - level) / 2
    m = min(estimate, hi)
    # solve (top - hi)^2 = tail * top * (top - m) for top > hi
    a, b, c = 1 - tail, -2 * hi + tail * m, hi * hi
    disc = b * b - 4 * a * c
    if disc < 0:
        return None
    top = (-b + math.sqrt(disc)) / (2 * a)
    if not top > hi:
        return None
    return {"dist": "triangular", "low": 0.0, "mode": float(_g(m)), "high": float(_g(top)), "source": source}


def _flow(d: dict[str, Any]) -> str:
    return "{" + ", ".join(f"{k}: {v}" if k != "source" else f'source: "{v}"' for k, v in d.items()) + "}"


def entries(cal: Calibration, base_parts: set[str]) -> dict[str, dict[str, Any]]:
    """{field path: distribution} of every value the calibrated scenario writes with an interval."""
    lv = cal.level
    out: dict[str, dict[str, Any]] = {}

    def put(path: str, est: float, ci: tuple[float, float], src: str) -> None:
        d = distribution(est, ci, lv, f"fit: {src}, {lv:.0%} interval [{_g(ci[0])}, {_g(ci[1])}]")
        if d is not None:
            out[path] = d

    for p in sorted(q for q, r in cal.parts.items() if r.in_base and r.fit is not None):
        r = cal.parts[p]
        assert r.fit is not None
        spec, m = usable(r.fit)
        if m is not None:
            for name, ci in m.ci.items():
                if name in spec:
                    put(f"cluster.node.parts.{p}.failure.{name}", float(m.params[name]), ci,
                        f"{r.source} ({r.failures} failures in {r.units} units)")
    for p in sorted(q for q, r in cal.repairs.items() if r.fit is not None and q in base_parts):
        rr = cal.repairs[p]
        assert rr.fit is not None
        spec, m = usable(rr.fit, allow_fixed=True)
        if m is not None:
            for name, ci in m.ci.items():
                if name in spec:
                    put(f"cluster.node.parts.{p}.repair.time.{name}", float(m.params[name]), ci,
                        f"{rr.source} ({rr.fit.n} tickets)")
    if cal.frailty is not None:
        f = cal.frailty
        put("health.frailty.variance", f.variance, f.ci, f"{f.failures} part failures on {f.nodes} nodes")
    th, (ctype, field_name, air) = cal.thermal, cal.thermal_target
    if th is not None and ctype:
        src = f"GPU telemetry of {len(th.gpus) + len(th.outliers)} GPUs"
        put(f"cooling.gpu.{field_name}", th.r_median_c_per_w, th.r_median_ci, src)
        put("cooling.gpu.r_sigma", th.r_sigma, th.r_sigma_ci, src)
        if air and th.preheat_c is not None and th.preheat_ci is not None and th.preheat_c > 0:
            put("cooling.air.slot_preheat_c", th.preheat_c, th.preheat_ci, src)
    return out


def uncertainty_yaml(cal: Calibration, base_parts: set[str]) -> list[str]:
    """The ``uncertainty:`` lines of the calibrated scenario (none when nothing has an interval)."""
    found = entries(cal, base_parts)
    if not found:
        return []
    return ["# What the logs leave unknown: each fitted value as a distribution of its interval, for twin decide",
            "# (lognormal of the interval on the log scale; a fit's parameters drawn independently).",
            "uncertainty:", "  inputs:"] + [f"    {path}: {_flow(d)}" for path, d in found.items()]
