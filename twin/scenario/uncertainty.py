"""The ``uncertainty:`` section of a scenario (issue 46): which inputs are not known, and how.

A scenario names field paths (the same dotted paths as ``--set``) and gives each a distribution
with its ``source``::

    uncertainty:
      inputs:
        cluster.node.gpu.speed_alpha: {dist: uniform, low: 0.3, high: 1.0, source: assumption}
        costs.energy.price_per_kwh: {dist: triangular, low: 0.06, mode: 0.09, high: 0.15,
                                     source: "EIA industrial price range 2023-2025"}
      groups:                       # one draw sets several fields (perfectly rank-correlated)
        crah_reliability:
          cooling.air.crah.failure.mtbf_h: {dist: lognormal, median: 50000, sigma: 0.5,
                                            low: 20000, high: 150000, source: assumption}
          cooling.plant.chillers.failure.mtbf_h: {dist: lognormal, median: 20000, sigma: 0.5,
                                                  low: 8000, high: 60000, source: assumption}

Distributions (``dist``): ``uniform`` (low, high), ``triangular`` (low, mode, high), ``normal``
(mean, sd, truncated to [low, high]), ``lognormal`` (median, sigma of the log, truncated to [low,
high]), ``beta`` (alpha, beta on [low, high], default [0, 1]) and ``choice`` (values, optional
weights). ``source`` is required: a citation, ``assumption``, or ``fit: <file or command>`` for a
value fitted by ``twin calibrate`` / ``twin fit``. A field whose value is an integer (in the
resolved scenario) gets its draws rounded to the nearest integer.

The section describes the scenario, it does not change it: it is left out of the resolved scenario
and of its hash (a scenario with and without ``uncertainty:`` runs the same), and only ``twin
decide`` reads it. Its paths are checked against the validated scenario: every path must lead to an
existing number (``choice``: an existing value) in the document as written or, for a default it
does not write, in the resolved scenario (errors listed all at once, with their paths); ``twin
decide`` also checks that the distributions' ends make valid scenarios. A draw is applied to the
document as written, exactly as ``--set`` is (so ``failure.mtbf_h`` of a shorthand
``failure: {mtbf_h: ...}`` is a valid path, and so is ``failure.mean_h`` of the resolved form).

**Draws** (:func:`design`): every uncertain input (a path, or a group's name) is one dimension of
a scrambled Sobol' sequence (or a Latin hypercube), the dimensions in the sorted order of the keys
of every option together; draw d is point d of that sequence, scrambled with a stream derived
from the seed (``SeedSequence(seed, spawn_key=(0x46,))``). So a key declared in several options
gets the same value in each draw, and Sobol' draws 0..D−1 are the same whatever D (a design that
grows keeps its draws). Each uniform coordinate u is mapped by the inverse CDF of the input's
distribution (a group's members all at the same u, or 1 − u with ``opposite: true``).
"""

from __future__ import annotations

import json
import math
from typing import Annotated, Any, Literal, Union

import numpy as np
from pydantic import Field, model_validator

from twin.scenario.base import Strict

Finite = Annotated[float, Field(allow_inf_nan=False)]
Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]
LOW = "Lowest value, in the field's unit."
HIGH = "Highest value, in the field's unit."
SOURCE_DESCRIPTION = ("Where the range comes from: a citation, 'assumption', or 'fit: <file or command>' "
                      "(a calibration fit).")
SPAWN_KEY = 0x46
"""Spawn key of the draws' stream under the scenario seed (issue 46)."""


class _Input(Strict):
    source: str = Field(min_length=1, description=SOURCE_DESCRIPTION)
    opposite: bool = Field(False, description="In a group: take the quantile 1 − u (falls as the others rise).")

    def ppf(self, u: np.ndarray) -> np.ndarray:  # pragma: no cover - every subclass overrides it
        raise NotImplementedError

    def ends(self) -> tuple[Any, Any]:
        """The smallest and the largest value this input can take."""
        v = self.ppf(np.array([0.0, 1.0]))
        return float(v[0]), float(v[1])


class Uniform(_Input):
    dist: Literal["uniform"] = Field(description="Every value in [low, high] alike.")
    low: Finite = Field(description=LOW)
    high: Finite = Field(description=HIGH)

    @model_validator(mode="after")
    def _check(self) -> "Uniform":
        if not self.low < self.high:
            raise ValueError(f"@high: must be > low ({self.low:g}), got {self.high:g}")
        return self

    def ppf(self, u: np.ndarray) -> np.ndarray:
        return self.low + u * (self.high - self.low)


class Triangular(_Input):
    dist: Literal["triangular"] = Field(description="Triangular on [low, high], most likely at mode.")
    low: Finite = Field(description=LOW)
    mode: Finite = Field(description="Most likely value.")
    high: Finite = Field(description=HIGH)

    @model_validator(mode="after")
    def _check(self) -> "Triangular":
        if not (self.low <= self.mode <= self.high and self.low < self.high):
            raise ValueError(f"@mode: need low <= mode <= high and low < high, got {self.low:g}, {self.mode:g}, "
                             f"{self.high:g}")
        return self

    def ppf(self, u: np.ndarray) -> np.ndarray:
        from scipy.stats import triang

        w = self.high - self.low
        return np.asarray(triang.ppf(u, (self.mode - self.low) / w, loc=self.low, scale=w), dtype=float)


class Normal(_Input):
    dist: Literal["normal"] = Field(description="Normal truncated to [low, high].")
    mean: Finite = Field(description="Mean before truncation, in the field's unit.")
    sd: Positive = Field(description="Standard deviation before truncation, in the field's unit.")
    low: Finite = Field(description="Lower bound (the normal is truncated to [low, high]).")
    high: Finite = Field(description="Upper bound.")

    @model_validator(mode="after")
    def _check(self) -> "Normal":
        if not self.low < self.high:
            raise ValueError(f"@high: must be > low ({self.low:g}), got {self.high:g}")
        return self

    def ppf(self, u: np.ndarray) -> np.ndarray:
        from scipy.stats import truncnorm

        a, b = (self.low - self.mean) / self.sd, (self.high - self.mean) / self.sd
        return np.clip(truncnorm.ppf(u, a, b, loc=self.mean, scale=self.sd), self.low, self.high)


class LogNormal(_Input):
    dist: Literal["lognormal"] = Field(description="Lognormal truncated to [low, high].")
    median: Positive = Field(description="Median before truncation, in the field's unit.")
    sigma: Positive = Field(description="Standard deviation of the natural log.")
    low: Positive = Field(description="Lower bound (truncated to [low, high]).")
    high: Positive = Field(description="Upper bound.")

    @model_validator(mode="after")
    def _check(self) -> "LogNormal":
        if not self.low < self.high:
            raise ValueError(f"@high: must be > low ({self.low:g}), got {self.high:g}")
        return self

    def ppf(self, u: np.ndarray) -> np.ndarray:
        from scipy.stats import truncnorm

        m = math.log(self.median)
        a, b = (math.log(self.low) - m) / self.sigma, (math.log(self.high) - m) / self.sigma
        return np.clip(np.exp(truncnorm.ppf(u, a, b, loc=m, scale=self.sigma)), self.low, self.high)


class Beta(_Input):
    dist: Literal["beta"] = Field(description="Beta(alpha, beta) scaled to [low, high].")
    alpha: Positive = Field(description="Shape α.")
    beta: Positive = Field(description="Shape β.")
    low: Finite = Field(0.0, description=LOW)
    high: Finite = Field(1.0, description=HIGH)

    @model_validator(mode="after")
    def _check(self) -> "Beta":
        if not self.low < self.high:
            raise ValueError(f"@high: must be > low ({self.low:g}), got {self.high:g}")
        return self

    def ppf(self, u: np.ndarray) -> np.ndarray:
        from scipy.stats import beta

        return np.asarray(beta.ppf(u, self.alpha, self.beta, loc=self.low, scale=self.high - self.low), dtype=float)


class Choice(_Input):
    dist: Literal["choice"] = Field(description="One of the listed values.")
    values: list[Any] = Field(min_length=2, description="The values it can take (any YAML value of the field).")
    weights: list[Positive] | None = Field(None, description="Relative weights (default: equal).")

    @model_validator(mode="after")
    def _check(self) -> "Choice":
        if self.weights is not None and len(self.weights) != len(self.values):
            raise ValueError(f"@weights: give one weight per value ({len(self.values)}), got {len(self.weights)}")
        return self

    def index(self, u: np.ndarray) -> np.ndarray:
        w = np.asarray(self.weights if self.weights is not None else [1.0] * len(self.values), dtype=float)
        cum = np.cumsum(w) / w.sum()
        return np.minimum(np.searchsorted(cum, u, side="right"), len(self.values) - 1)

    def ppf(self, u: np.ndarray) -> np.ndarray:
        """The chosen value's index (as a float; :meth:`value_at` gives the value)."""
        return self.index(u).astype(float)

    def ends(self) -> tuple[Any, Any]:
        return self.values[0], self.values[-1]


InputDist = Annotated[Union[Uniform, Triangular, Normal, LogNormal, Beta, Choice], Field(discriminator="dist")]


class Uncertainty(Strict):
    """Uncertain inputs of a scenario (issue 46; module docstring): ``inputs`` one draw each,
    ``groups`` one draw for all of a group's fields."""

    inputs: dict[str, InputDist] = Field(default_factory=dict, description="Field path -> its distribution (null: not "
                                    "uncertain here, removing an input inherited through `extends`).")
    groups: dict[str, dict[str, InputDist]] = Field(
        default_factory=dict, description="Group name -> {field path: distribution}: one draw sets them all.")

    @model_validator(mode="before")
    @classmethod
    def _removed(cls, data: Any) -> Any:
        """``path: null`` (in ``inputs`` or a group) removes what ``extends`` brought; an empty group goes."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        if isinstance(data.get("inputs"), dict):
            data["inputs"] = {k: v for k, v in data["inputs"].items() if v is not None}
        if isinstance(data.get("groups"), dict):
            groups = {}
            for g, m in data["groups"].items():
                if isinstance(m, dict):
                    m = {k: v for k, v in m.items() if v is not None}
                    if not m:
                        continue
                if m is not None:
                    groups[g] = m
            data["groups"] = groups
        return data

    @model_validator(mode="after")
    def _check(self) -> "Uncertainty":
        seen: dict[str, str] = {}
        for name, members in self.groups.items():
            if "." in name or not name:
                raise ValueError(f"@groups.{name}: a group name is one word (no '.')")
            if not members:
                raise ValueError(f"@groups.{name}: a group needs at least one field")
            for path in members:
                if path in self.inputs or path in seen:
                    raise ValueError(f"@groups.{name}.{path}: the path is declared twice "
                                     f"({'inputs' if path in self.inputs else 'group ' + seen[path]})")
                seen[path] = name
        return self

    def keys(self) -> dict[str, dict[str, Any]]:
        """{key: {path: distribution}}: one key per draw dimension (a path, or a group's name)."""
        out: dict[str, dict[str, Any]] = {p: {p: d} for p, d in self.inputs.items()}
        out.update({g: dict(m) for g, m in self.groups.items()})
        return out

    def fields(self) -> dict[str, Any]:
        """{path: distribution} of every uncertain field."""
        return {p: d for m in self.keys().values() for p, d in m.items()}


# ---------------------------------------------------------------- paths against the scenario

def _lookup(doc: Any, path: str) -> tuple[bool, Any, str]:
    """(found, value, why not) of a dotted path in a resolved scenario."""
    cur = doc
    keys = path.split(".")
    for i, k in enumerate(keys):
        where = ".".join(keys[:i]) or "the scenario"
        if isinstance(cur, list):
            if not k.isdigit() or int(k) >= len(cur):
                return False, None, f"{where} is a list of {len(cur)}: no item {k}"
            cur = cur[int(k)]
        elif isinstance(cur, dict):
            if k not in cur:
                near = sorted(cur)
                shown = ", ".join(near[:12]) + (" ..." if len(near) > 12 else "")
                return False, None, f"no key {k!r} in {where}; allowed: {shown}"
            cur = cur[k]
            if cur is None and i < len(keys) - 1:
                return False, None, f"{'.'.join(keys[:i + 1])} is not set in this scenario (null)"
        else:
            return False, None, f"{where} is a value, not a section"
    return True, cur, ""


def fixed_value(path: str, raw: Any, resolved: Any) -> tuple[bool, Any, str]:
    """(found, value, why not) of a path in the resolved scenario or else in the scenario document as
    written (``raw``: a shorthand such as ``failure: {mtbf_h: ...}`` that the resolved form renames).
    A draw is applied to the document as written, as ``--set`` is; its type follows the value found
    here (an integer field gets integers)."""
    found, value, why = _lookup(resolved, path)
    if found or not isinstance(raw, dict):
        return found, value, why
    found2, value2, _ = _lookup(raw, path)
    return (True, value2, "") if found2 else (False, None, why)


def problems(unc: Uncertainty, resolved: dict[str, Any], raw: Any = None) -> list[tuple[str, str]]:
    """Every path that does not lead to a value of its kind, as (uncertainty field path, message)."""
    out = []
    for key, members in unc.keys().items():
        for path, d in members.items():
            where = f"uncertainty.inputs.{path}" if key == path and path in unc.inputs else f"uncertainty.groups.{key}.{path}"
            found, value, why = fixed_value(path, raw, resolved)
            if not found:
                out.append((where, f"not a field of this scenario: {why}"))
            elif not isinstance(d, Choice) and (isinstance(value, bool) or not isinstance(value, (int, float))):
                out.append((where, f"the field holds {json.dumps(value)[:60]}, not a number: use dist: choice"))
    return out


def check_against(unc: Uncertainty, resolved: dict[str, Any], raw: Any = None, source: str = "<scenario>") -> None:
    """Raise :class:`~twin.errors.InputErrors` listing every path that leads nowhere, all at once, each
    named ``source: uncertainty.…``. Called by ``twin decide`` on each option as loaded with its ``--set``
    overrides; other commands ignore the section, so a ``--set`` that removes a field an inherited
    ``uncertainty:`` path names (``cluster.node.parts={...}``) does not stop ``twin run``."""
    from twin.errors import InputError, InputErrors

    bad = problems(unc, resolved, raw)
    if bad:
        raise InputErrors([InputError(source, where, msg) for where, msg in bad])


# ---------------------------------------------------------------- draws

def value_at(d: Any, u: float, fixed: Any) -> Any:
    """The value of a field with distribution ``d`` at quantile ``u`` (``fixed`` is the field's value
    in the scenario: an integer field gets an integer)."""
    uu = 1.0 - u if d.opposite else u
    if isinstance(d, Choice):
        return d.values[int(d.index(np.array([uu]))[0])]
    v = float(d.ppf(np.array([uu]))[0])
    if isinstance(fixed, int) and not isinstance(fixed, bool):
        return int(round(v))
    return v


def design(n: int, dims: int, seed: int, kind: str = "sobol") -> np.ndarray:
    """(n, dims) uniforms in [0, 1): points 0..n−1 of a scrambled Sobol' sequence (``sobol``: a
    prefix of the same sequence for any n) or a Latin hypercube (``lhs``), scrambled by a stream
    derived from ``seed``; ``saltelli``: Saltelli's design for Sobol' indices on n base points,
    n·(dims + 2) rows in SALib's layout (:func:`saltelli_base_rows`). No dimension: an (n, 0) array."""
    from scipy.stats import qmc

    if dims == 0:
        return np.zeros((n, 0))
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(SPAWN_KEY,)))
    if kind == "saltelli":
        from SALib.sample import sobol as saltelli

        problem = {"num_vars": dims, "names": [f"u{i}" for i in range(dims)], "bounds": [[0.0, 1.0]] * dims}
        return np.asarray(saltelli.sample(problem, n, calc_second_order=False, scramble=True, seed=rng))
    if kind == "sobol":
        import warnings

        sampler = qmc.Sobol(d=dims, scramble=True, seed=rng)
        with warnings.catch_warnings():  # n not a power of 2 loses balance properties, not validity
            warnings.simplefilter("ignore", UserWarning)
            return np.asarray(sampler.random(n))
    if kind == "lhs":
        return np.asarray(qmc.LatinHypercube(d=dims, seed=rng).random(n))
    raise ValueError(f"unknown design {kind!r}")


def saltelli_base_rows(rows: int, dims: int) -> np.ndarray:
    """Indices of the independent rows (the A and B matrices) of a Saltelli design of ``rows`` rows in
    ``dims`` dimensions: SALib lays base point j out as A_j, AB_1j … AB_dj, B_j (first order only)."""
    step = dims + 2
    j = np.arange(rows // step) * step
    return np.sort(np.concatenate([j, j + dims + 1]))


def union_keys(sections: list[Uncertainty | None]) -> list[str]:
    """The sorted union of every option's keys: one draw dimension each."""
    return sorted({k for s in sections if s is not None for k in s.keys()})


def overrides(unc: Uncertainty | None, keys: list[str], u_row: np.ndarray, resolved: dict[str, Any],
              raw: Any = None) -> list[str]:
    """The ``--set`` expressions of one draw for one option (``u_row``: the draw's uniforms in the order
    of ``keys``; ``raw`` and ``resolved`` the option's document and resolved scenario, for the fixed
    values' types); keys this option does not declare are left at its fixed values."""
    if unc is None:
        return []
    out = []
    mine = unc.keys()
    for j, key in enumerate(keys):
        for path, d in mine.get(key, {}).items():
            fixed = fixed_value(path, raw, resolved)[1]
            out.append(f"{path}={json.dumps(value_at(d, float(u_row[j]), fixed))}")
    return out


__all__ = ["Uncertainty", "check_against", "design", "overrides", "problems", "saltelli_base_rows", "union_keys",
           "value_at"]
