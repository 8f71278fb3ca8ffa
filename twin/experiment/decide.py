"""Decisions from stored replications (issue 9): break-even between two options, and the cheapest
grid point of a sweep that meets stated constraints at a stated confidence.

Analysis only: everything here reads finished replication tables (one row per replication,
metrics as columns) or a sweep's tidy summary; nothing runs a simulation.

**Break-even (twin compare)**, variant B against the reference A, paired per replication i under
common random numbers, in the reference's currency, with v = ``costs.value_per_useful_gpu_hour``,
r = ``costs.discount_rate`` and T = horizon in years (365 days), all of the reference scenario:

* extra capital ΔK = purchase price of B − of A (``cost.capital_purchase``, not amortised);
* annual net operating benefit of B: b_i = [v·(U_B − U_A) − (O_B − O_A)] / T, with U the useful
  GPU-hours (0 without a workload) and O the operating cost over the horizon (energy + repair
  parts + labour + spares holding + water); b̄ with its 95 % Student-t interval;
* payback: the option with more capital repays its extra capital K = |ΔK| out of its benefit b'
  (b' = b̄ if B has more capital, −b̄ otherwise) in n years, the discounted payback
  n = −ln(1 − r·K/b') / ln(1 + r) (K/b' at r = 0); ∞ when b' ≤ 0 or r·K/b' ≥ 1 (never repaid);
  0 when K = 0. n is decreasing in b', so the interval of n is n at the interval ends of b';
* break-even energy price: with every tariff multiplied by k, the two options have the same cost
  net of the value of their useful GPU-hours, N_X + k·E_X − v·U_X (N = ``cost.total`` − energy,
  capital amortised, E = energy cost at the scenario's tariff), at
  k* = mean(ΔN − v·ΔU) / mean(E_A − E_B); shown as the price k*·(E_A / kWh_A), the reference's
  mean price per kWh scaled (the flat price itself when the tariff is flat). No interval (a ratio
  of means); NaN when the energy costs are equal or k* < 0 (no positive price makes them equal).

**Cheapest feasible point (twin sweep --objective … --constraint …)**: a constraint
``metric >= x`` holds at confidence c when the one-sided lower confidence bound of the metric's
mean, mean − t_{c, n−1}·s/√n, is ≥ x (``<=``: the upper bound mean + t_{c, n−1}·s/√n ≤ x); the
chosen point has the smallest mean objective among the points where every constraint holds (ties:
the lowest point index). A point with fewer than two finite replications of a constrained metric
does not qualify.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pandas as pd
from scipy import stats as _st

from twin.errors import InputError
from twin.experiment import stats
from twin.report import metrics as catalogue
from twin.units import DAYS_PER_YEAR

OPERATING = ("cost.energy", "cost.repair_parts", "cost.labour", "cost.spares_holding", "cost.water")
"""Operating cost metrics (over the horizon) that the payback compares."""
BREAKEVEN_COLUMNS = [
    "variant", "reference", "currency", "n", "extra_capital", "capital_heavier", "annual_net_benefit",
    "annual_net_benefit_ci_low", "annual_net_benefit_ci_high", "value_per_useful_gpu_hour", "discount_rate",
    "payback_years", "payback_years_ci_low", "payback_years_ci_high", "tariff_multiplier_breakeven",
    "energy_price_breakeven_per_kwh",
]


def payback_years(extra_capital: float, annual_benefit: float, rate: float) -> float:
    """Discounted payback of ``extra_capital`` ≥ 0 repaid by a constant ``annual_benefit`` at ``rate``:
    −ln(1 − r·K/b)/ln(1 + r) with K the capital, K/b at r = 0; 0 when K = 0; inf when never repaid."""
    capital, b, r = float(extra_capital), float(annual_benefit), float(rate)
    if not (math.isfinite(capital) and math.isfinite(b)):
        return math.nan
    if capital <= 0:
        return 0.0
    if b <= 0:
        return math.inf
    if r == 0:
        return capital / b
    x = r * capital / b
    if x >= 1:
        return math.inf
    return -math.log1p(-x) / math.log1p(r)


def _col(df: pd.DataFrame, m: str) -> np.ndarray:
    return df[m].to_numpy(dtype=np.float64) if m in df.columns else np.full(len(df), np.nan)


def breakeven(ref: pd.DataFrame, other: pd.DataFrame, value: float, rate: float, years: float) -> dict[str, float]:
    """Break-even of ``other`` (B) against ``ref`` (A) from their replication tables (see the module
    docstring). Tables are aligned on ``replication``."""
    a = ref.set_index("replication").sort_index()
    b = other.set_index("replication").sort_index()
    idx = a.index.intersection(b.index)
    a, b = a.loc[idx], b.loc[idx]
    ua = np.nan_to_num(_col(a, "useful_gpu_hours"), nan=0.0)
    ub = np.nan_to_num(_col(b, "useful_gpu_hours"), nan=0.0)
    oa = sum(_col(a, m) for m in OPERATING)
    ob = sum(_col(b, m) for m in OPERATING)
    benefit = (value * (ub - ua) - (ob - oa)) / years
    mean, lo, hi = stats.t_interval(benefit)
    if len(benefit) > 1 and np.all(benefit == benefit[0]):
        lo = hi = mean
    dk = float(np.nanmean(_col(b, "cost.capital_purchase") - _col(a, "cost.capital_purchase")))
    if dk >= 0:
        heavier, capital, bb, blo, bhi = "variant", dk, mean, lo, hi
    else:
        heavier, capital, bb, blo, bhi = "reference", -dk, -mean, -hi, -lo
    ea, eb = _col(a, "cost.energy"), _col(b, "cost.energy")
    na = _col(a, "cost.total") - ea - value * ua
    nb = _col(b, "cost.total") - eb - value * ub
    de = float(np.nanmean(ea - eb))
    k = float(np.nanmean(nb - na)) / de if de != 0 else math.nan
    if not (k >= 0):
        k = math.nan
    kwh = float(np.nanmean(_col(a, "cost.energy_kwh")))
    mean_price = float(np.nanmean(ea)) / kwh if kwh > 0 else math.nan
    return {
        "n": float(len(idx)), "extra_capital": dk, "capital_heavier": heavier,  # type: ignore[dict-item]
        "annual_net_benefit": mean, "annual_net_benefit_ci_low": lo, "annual_net_benefit_ci_high": hi,
        "payback_years": payback_years(capital, bb, rate),
        "payback_years_ci_low": payback_years(capital, bhi, rate) if math.isfinite(bhi) else math.nan,
        "payback_years_ci_high": payback_years(capital, blo, rate) if math.isfinite(blo) else math.nan,
        "tariff_multiplier_breakeven": k, "energy_price_breakeven_per_kwh": k * mean_price,
    }


def breakeven_table(labels: Sequence[str], tables: Sequence[pd.DataFrame], loadeds: Sequence[Any]) -> pd.DataFrame:
    """One row per variant against the first (the reference); empty when the reference has no
    ``costs`` section or a table lacks the cost metrics. Value, rate, horizon and currency are the
    reference scenario's."""
    sc = loadeds[0].scenario
    c = getattr(sc, "costs", None)
    rows: list[dict[str, Any]] = []
    if c is None or any("cost.total" not in t.columns for t in tables):
        return pd.DataFrame(rows, columns=BREAKEVEN_COLUMNS)
    years = sc.horizon_days / DAYS_PER_YEAR
    for lab, t in zip(labels[1:], tables[1:]):
        r = breakeven(tables[0], t, c.value_per_useful_gpu_hour, c.discount_rate, years)
        rows.append({"variant": lab, "reference": labels[0], "currency": c.currency,
                     "value_per_useful_gpu_hour": c.value_per_useful_gpu_hour, "discount_rate": c.discount_rate,
                     **r})
    return pd.DataFrame(rows, columns=BREAKEVEN_COLUMNS)


# ------------------------------------------------------------------------- sweep objective

@dataclass(frozen=True)
class Constraint:
    metric: str
    op: str
    threshold: float

    def __str__(self) -> str:
        return f"{self.metric}{self.op}{self.threshold:.12g}"


_CONSTRAINT = re.compile(r"^\s*([A-Za-z0-9_.\-]+)\s*(>=|<=)\s*([^\s]+)\s*$")


def parse_constraint(expr: str) -> Constraint:
    """``metric>=value`` or ``metric<=value``."""
    m = _CONSTRAINT.match(expr)
    if m is None:
        raise InputError("--constraint", expr, "expected METRIC>=VALUE or METRIC<=VALUE, e.g. node_availability>=0.995")
    try:
        x = float(m.group(3))
    except ValueError:
        raise InputError("--constraint", expr, f"threshold is not a number: {m.group(3)!r}") from None
    if not math.isfinite(x):
        raise InputError("--constraint", expr, "threshold must be a finite number")
    return Constraint(m.group(1), m.group(2), x)


def check_confidence(confidence: float) -> None:
    if not (math.isfinite(confidence) and 0.5 <= confidence < 1):
        raise InputError("--confidence", str(confidence), "must be in [0.5, 1), e.g. 0.95")


def confidence_bound(mean: float, std: float, n: int, confidence: float, side: str,
                     bounds: tuple[float, float] = (-math.inf, math.inf)) -> float:
    """One-sided bound of a mean: mean ∓ t_{c, n−1}·s/√n (``side`` 'lower' or 'upper'); NaN for n < 2.

    A sample with no spread (the same value v in all n replications: no stock-outs in any, say) makes
    the t-bound v itself, a certainty no finite sample gives. Then the bound is distribution-free: with
    confidence c at most a share p = 1 − (1 − c)^(1/n) of replications differ from v, so the mean is at
    least (1 − p)·v + p·low and at most (1 − p)·v + p·high over the metric's range ``bounds``."""
    if n < 2 or not math.isfinite(mean):
        return math.nan
    if not (std > 0):
        p = 1.0 - (1.0 - confidence) ** (1.0 / n)
        end = bounds[0] if side == "lower" else bounds[1]
        return mean if end == mean else (1.0 - p) * mean + p * end
    h = float(_st.t.ppf(confidence, n - 1)) * std / math.sqrt(n)
    return mean - h if side == "lower" else mean + h


def sense_of(objective: str) -> str:
    """"max" for a higher-is-better metric, "min" for a lower-is-better one (the metric catalogue);
    an InputError for a metric with no better direction."""
    d = catalogue.direction(objective)
    if d == 0:
        raise InputError("--objective", objective, "has no better direction (neither higher nor lower is better); "
                         "choose a metric with one (twin explain --list)")
    return "max" if d > 0 else "min"


def choose(tidy: pd.DataFrame, params: Sequence[str], objective: str, constraints: Sequence[Constraint],
           confidence: float) -> tuple[pd.DataFrame, int | None]:
    """Decision table of a sweep (one row per point) and the chosen point (None when no point qualifies).

    ``tidy`` has one row per (point, metric) with n, mean, std, ci_low, ci_high (twin sweep's
    ``sweep.parquet``). With k constraints each bound is at 1 − (1 − confidence)/k (Bonferroni), so a
    feasible point meets all of them jointly at ``confidence``. The chosen point has the best mean
    objective in the catalogue's direction: the largest for a higher-is-better metric (goodput,
    availability), the smallest for a lower-is-better one (cost); a metric with no better direction is
    refused."""
    check_confidence(confidence)
    each = 1.0 - (1.0 - confidence) / max(1, len(constraints))
    have = set(tidy.metric)
    for m in [objective, *[c.metric for c in constraints]]:
        if m not in have:
            raise InputError("--objective" if m == objective else "--constraint", m,
                             "no such metric in the sweep; available: " + ", ".join(sorted(have)))
    sense = sense_of(objective)
    rows = []
    for pt, g in tidy.groupby("point", sort=True):
        s = g.set_index("metric")
        o = s.loc[objective]
        row: dict[str, Any] = {"point": int(pt)}
        for p in params:
            row[p] = g[p].iloc[0]
        row.update({"objective": objective, "objective_mean": float(o["mean"]),
                    "objective_ci_low": float(o["ci_low"]), "objective_ci_high": float(o["ci_high"])})
        ok_all = math.isfinite(float(o["mean"]))
        for c in constraints:
            r = s.loc[c.metric]
            side = "lower" if c.op == ">=" else "upper"
            bnd = confidence_bound(float(r["mean"]), float(r["std"]), int(r["n"]), each, side,
                                   stats.metric_range(c.metric))
            ok = bool(math.isfinite(bnd) and (bnd >= c.threshold if c.op == ">=" else bnd <= c.threshold))
            row[f"{c.metric}_mean"] = float(r["mean"])
            row[f"{c.metric}_{side}_bound"] = bnd
            row[f"{c.metric}_ok"] = ok
            ok_all = ok_all and ok
        row["feasible"] = ok_all
        rows.append(row)
    df = pd.DataFrame(rows)
    feas = df[df.feasible]
    chosen = None
    if len(feas):
        best = feas.assign(_key=feas.objective_mean if sense == "min" else -feas.objective_mean)
        chosen = int(best.sort_values(["_key", "point"], kind="stable").iloc[0]["point"])
    df["chosen"] = df.point == chosen if chosen is not None else False
    return df, chosen


__all__ = ["Constraint", "breakeven", "breakeven_table", "choose", "confidence_bound", "parse_constraint",
           "payback_years", "sense_of"]
