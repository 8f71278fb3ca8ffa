"""``twin sensitivity --assumptions``: a screen of every value the scenario takes on assumption
(issue 46: "every assumption that twin sensitivity finds to move its decision's objective by more
than its paired CI has a range").

An *assumption* here is a real-valued field of the loaded scenario whose schema description says
``assumption`` (the project's rule: every default has a published source or says so). Integer fields
are left out: they are counts (CRAHs, technicians, spares, checkpoints kept), the design a decision
chooses between, not values nobody measured. Each assumption becomes a one-at-a-time factor between
two values:

* the range its description states (``range 0.05–0.15``, ``range 25 to 35``; thousands separators
  allowed) when the field's value lies inside it;
* otherwise ×½ and ×2 of its value (integers rounded; a field at 0 has no scale and is left out).

Either end the schema refuses (a probability above 1, a count below its minimum) is replaced by the
value itself, so that level repeats the baseline (Δ = 0, said in the factor's label). The screen then
names the assumptions whose paired difference on a metric excludes 0 at 95 % at either end
(:func:`decisive`) and, of those, the ones the scenario's ``uncertainty:`` section gives no range
(:func:`without_range`): the values a decision under uncertainty would treat as known although they
move the answer.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any, Iterator

import pandas as pd
from pydantic import BaseModel

from twin.errors import InputError
from twin.scenario.loader import Loaded, load_scenario

_RANGE = re.compile(r"range[s]?:?\s+(-?\d[\d,]*(?:\.\d+)?)\s*(?:–|-|to)\s*(-?\d[\d,]*(?:\.\d+)?)", re.I)


@dataclass(frozen=True)
class Assumption:
    path: str
    """The field's ``--set`` path."""
    value: float
    low: float
    high: float
    stated: bool
    """True when the range is the one the schema description states, False for ×½ and ×2."""


def _num(s: str) -> float:
    return float(s.replace(",", ""))


def _fields(model: Any, path: str) -> Iterator[tuple[str, Any, str]]:
    """(path, value, description) of every scalar field under ``model``, depth first."""
    if isinstance(model, BaseModel):
        for name, f in type(model).model_fields.items():
            p = f"{path}.{name}" if path else name
            v = getattr(model, name)
            if isinstance(v, (BaseModel, dict, list)):
                yield from _fields(v, p)
            else:
                yield p, v, f.description or ""
    elif isinstance(model, dict):
        for k, v in model.items():
            yield from _fields(v, f"{path}.{k}")
    elif isinstance(model, list):
        for i, v in enumerate(model):
            yield from _fields(v, f"{path}.{i}")


def assumptions(loaded: Loaded) -> list[Assumption]:
    """Every numeric field of ``loaded`` taken on assumption, with its screening range (module
    docstring), in the schema's order; the ``uncertainty:`` section itself is not screened."""
    out = []
    for path, v, desc in _fields(loaded.scenario, ""):
        if path.startswith("uncertainty.") or not isinstance(v, float):  # counts are choices (module docstring)
            continue
        if "assumption" not in desc.lower() or not math.isfinite(v):
            continue
        m = _RANGE.search(desc)
        lo_hi = (_num(m.group(1)), _num(m.group(2))) if m else None
        if lo_hi is not None and lo_hi[0] < lo_hi[1] and lo_hi[0] <= v <= lo_hi[1]:
            lo, hi, stated = lo_hi[0], lo_hi[1], True
        elif v != 0:
            lo, hi, stated = sorted((v / 2, v * 2)) + [False]  # type: ignore[assignment]
        else:
            continue
        out.append(Assumption(path, v, float(lo), float(hi), bool(stated)))
    return out


def _valid(scenario: str, sets: list[str], path: str, value: Any) -> bool:
    try:
        load_scenario(scenario, sets + [f"{path}={json.dumps(value)}"])
    except InputError:
        return False
    return True


def param_exprs(scenario: str, sets: list[str], loaded: Loaded) -> tuple[list[str], list[str]]:
    """``--param PATH=LOW,HIGH`` expressions of every assumption of ``loaded`` (an end the schema
    refuses replaced by the value itself), and notes of what was replaced."""
    exprs, notes = [], []
    for a in assumptions(loaded):
        ends: list[float] = []
        for end in (a.low, a.high):
            val = end
            if not _valid(scenario, sets, a.path, val):
                notes.append(f"{a.path}: {val:g} is refused by the schema; that end stays at {a.value:g}")
                val = a.value
            ends.append(val)
        if ends[0] == ends[1] == a.value:
            notes.append(f"{a.path}: no valid end differs from its value {a.value:g}; left out")
            continue
        exprs.append(f"{a.path}={json.dumps(ends[0])},{json.dumps(ends[1])}")
    return exprs, notes


def decisive(ranking: pd.DataFrame, metric: str) -> list[str]:
    """Factors whose paired difference on ``metric`` excludes 0 at 95 % at either end (the sensitivity
    ranking's columns ``delta_{low,high}_ci_{low,high}``)."""
    d = ranking[ranking.metric == metric]
    hit = ((d.delta_low_ci_low > 0) | (d.delta_low_ci_high < 0) | (d.delta_high_ci_low > 0)
           | (d.delta_high_ci_high < 0))
    return [str(f) for f in d.factor[hit]]


def without_range(factors: list[str], loaded: Loaded) -> list[str]:
    """Of ``factors`` (field paths), the ones the scenario's ``uncertainty:`` section does not declare."""
    unc = loaded.scenario.uncertainty
    declared = set(unc.fields()) if unc is not None else set()
    return [f for f in factors if f not in declared]


__all__ = ["Assumption", "assumptions", "decisive", "param_exprs", "without_range"]
