"""Statistics of Monte-Carlo replications (model.md §8).

Everything here is analysis of finished replications, not simulation: it never touches the
counter-based streams of :mod:`twin.rng`; a summary is a pure function of its table.

- per metric: mean, std (ddof 1), 95 % Student-t interval of the mean, p5/p50/p95 with
  distribution-free order-statistic intervals;
- replications needed for a requested half-width of the t-interval;
- paired differences under common random numbers (CRN) with t-intervals, and the variance
  reduction of CRN over independent seeds, estimated as (var A + var B) / var(A − B): with
  independent seeds var(mean B − mean A) = (var A + var B)/n, with CRN it is var(A − B)/n.
"""

from __future__ import annotations

import math
from typing import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from scipy.special import stdtrit as _t_ppf  # what scipy.stats.t.ppf(p, dof) computes: stdtrit(dof, p)

try:  # what scipy.stats.binom.cdf computes, without importing scipy.stats (~0.6 s of every command's start)
    from scipy.special._ufuncs import _binom_cdf
except ImportError:  # pragma: no cover - another scipy layout: the public (slower to import) way
    def _binom_cdf(k: NDArray[np.float64], n: int, q: float) -> NDArray[np.float64]:
        from scipy import stats

        return np.asarray(stats.binom.cdf(k, n, q), dtype=np.float64)

LEVEL = 0.95
"""Confidence level of every interval."""
QUANTILES = (0.05, 0.50, 0.95)
QUANTILE_INTERVALS = "order statistics (distribution-free; binomial ranks)"
"""How the intervals of quantiles are made (:func:`quantile_ci`), as stated in summaries and reports."""
ID_COLUMNS = ("replication", "seed", "scenario", "scenario_hash", "twin_version", "events_processed")
"""Columns of a replications table that are not metrics."""


ZERO_WHEN_ABSENT = ("interruptions.", "network.cut_node_hours.")
"""Metric families counted by cause: a replication reports only the causes that occurred, so a cause
it does not report occurred zero times (for zero hours). Statistics over replications count it as 0;
any other metric a replication does not report is undefined there (NaN) and left out."""


def zero_when_absent(metric: str) -> bool:
    """True for a metric of a :data:`ZERO_WHEN_ABSENT` family (absent from a replication means 0)."""
    return metric.startswith(ZERO_WHEN_ABSENT)


def with_absent_zeros(tables: Mapping[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """The tables, each with every :data:`ZERO_WHEN_ABSENT` metric that any of them has (0 where a
    table lacks it, and in place of NaN): variants compared on the same causes."""
    cols = sorted({c for t in tables.values() for c in t.columns if zero_when_absent(c)})
    out = {}
    for k, t in tables.items():
        if any(c not in t.columns or t[c].isna().any() for c in cols):  # (else the table as it is)
            t = t.copy()
            for c in cols:
                t[c] = t[c].fillna(0.0) if c in t.columns else 0.0
        out[k] = t
    return out


_FRACTIONS = ("node_availability", "fleet_capacity_availability", "network.spine_availability",
              "network.bisection_fraction", "utilisation", "thermal.mean_speed", "goodput", "ettr.",
              "stockout_share.")
_NON_NEGATIVE = ("failures", "interruptions", "stockouts", "node_down_hours", "node_cut_hours", "network.", "power.",
                 "cooling.", "thermal.", "energy.", "cost.", "lost_gpu_hours", "checkpoint_gpu_hours",
                 "restart_gpu_hours", "useful_gpu_hours", "repair.", "queue_wait_h", "max_job.", "jobs_",
                 "crew_utilisation.", "horizon_h", "nodes", "gpus_installed", "events_processed", "rma.",
                 "spares_scrapped.")


def metric_range(metric: str) -> tuple[float, float]:
    """The values ``metric`` can take: [0, 1] for a fraction (availability, goodput and its shares,
    ETTR, utilisation of the installed GPUs, a stock-out share), [1, inf) for the PUE, unbounded for a
    temperature (``*_c``), [0, inf) for counts, hours, energy, power, costs and crew utilisation (hands-on
    over on-shift hours: a repair begun on shift may run past it), else unbounded."""
    if metric.startswith(_FRACTIONS):
        return 0.0, 1.0
    if metric == "pue":
        return 1.0, math.inf
    if metric.endswith("_c"):
        return -math.inf, math.inf
    if metric.startswith(_NON_NEGATIVE):
        return 0.0, math.inf
    return -math.inf, math.inf


def metric_columns(df: pd.DataFrame) -> list[str]:
    """The metric columns of a replications table (numeric, not identity columns), sorted."""
    return sorted(c for c in df.columns if c not in ID_COLUMNS and pd.api.types.is_numeric_dtype(df[c]))


def _clean(x: ArrayLike) -> NDArray[np.float64]:
    a = np.asarray(x, dtype=np.float64).ravel()
    return a[np.isfinite(a)]


def t_interval(x: ArrayLike, level: float = LEVEL,
               bounds: tuple[float, float] = (-math.inf, math.inf)) -> tuple[float, float, float]:
    """(mean, low, high) of the Student-t interval of the mean; NaN bounds when n < 2. ``bounds``: the
    values the quantity can take (see :func:`metric_range`); the interval is cut to them (the true mean
    lies there, so coverage is kept)."""
    a = _clean(x)
    n = len(a)
    if n == 0:
        return math.nan, math.nan, math.nan
    m = float(a.mean())
    if n < 2:
        return m, math.nan, math.nan
    h = half_width(a, level)
    return m, max(m - h, bounds[0]), min(m + h, bounds[1])


def half_width(x: ArrayLike, level: float = LEVEL) -> float:
    """Half-width t_{n−1, (1+level)/2} · s / √n of the t-interval (NaN when n < 2)."""
    a = _clean(x)
    n = len(a)
    if n < 2:
        return math.nan
    s = float(a.std(ddof=1))
    return float(_t_ppf(n - 1, 0.5 + level / 2)) * s / math.sqrt(n)


def half_width_factor(level: float, n: int) -> float:
    """t_{n−1, (1+level)/2}: a half-width at ``level`` is this times s/√n (NaN when n < 2)."""
    return float(_t_ppf(n - 1, 0.5 + level / 2)) if n >= 2 else math.nan


def next_stage(need: int, n: int, max_reps: int) -> tuple[bool | None, int]:
    """One step of the sequential procedure: with ``n`` replications done and ``need`` estimated,
    (True, n) when the target is met, (False, n) when ``max_reps`` is reached without it, else
    (None, the next replication count: at least n + 1, at most ``max_reps``)."""
    if need <= n:
        return True, n
    if n >= max_reps:
        return False, n
    return None, min(max_reps, max(need, n + 1))


def replications_needed(x: ArrayLike, target_half_width: float, level: float = LEVEL,
                        cap: int = 1_000_000) -> int:
    """Replications needed for t_{m−1}·s/√m ≤ target, where m counts the replications that define the
    metric (finite values of ``x``) and s is their sample standard deviation (the usual sequential-
    procedure estimate; s is re-estimated as replications are added). When some replications leave
    the metric undefined, the count is scaled by the share that define it. Returns ``len(x)`` (at
    least 2) when the target is met by the replications at hand, more when not; ``cap`` at most."""
    if not (target_half_width > 0):
        raise ValueError("target half-width must be > 0")
    n_all = len(np.asarray(x).ravel())
    a = _clean(x)
    n_fin = len(a)
    if n_fin < 2:  # no interval yet: twice the replications
        return min(max(2 * n_all, 2), cap)
    s = float(a.std(ddof=1))
    m = n_fin
    if s > 0.0:
        m = max(n_fin, math.ceil((1.959963984540054 * s / target_half_width) ** 2))
        while m < cap and float(_t_ppf(m - 1, 0.5 + level / 2)) * s / math.sqrt(m) > target_half_width:
            m += max(1, m // 100)
    if m <= n_fin:
        return max(n_all, 2)
    return min(math.ceil(m * n_all / n_fin), cap)


def quantile_ci(x: ArrayLike, qs: Sequence[float] = QUANTILES, level: float = LEVEL,
                bounds: tuple[float, float] = (-math.inf, math.inf)) -> NDArray[np.float64]:
    """Distribution-free intervals of the quantiles ``qs``: array of shape (len(qs), 2).

    With the sorted sample x_(1) ≤ … ≤ x_(n) and B ~ Binomial(n, q) the number of values below the
    true quantile ξ_q: x_(l) ≤ ξ_q unless B < l, and x_(u) ≥ ξ_q unless B ≥ u. The lower end is x_(l)
    for the largest l with P(B < l) ≤ α/2, the upper end x_(u) for the smallest u with P(B ≥ u) ≤ α/2,
    so the interval covers ξ_q with probability ≥ ``level`` whatever the distribution (a percentile
    bootstrap covered a p5 of 20 values only ~60 % of the time: its lower end cannot go below the
    sample's minimum, which is above the true p5 with probability 0.95²⁰). Where the sample is too
    small for such an end (P(B = 0) = (1 − q)ⁿ > α/2 for the lower), that end is the quantity's own
    bound from ``bounds`` (±inf when it has none)."""
    a = np.sort(_clean(x))
    n = len(a)
    out = np.full((len(qs), 2), np.nan)
    if n == 0:
        return out
    half = (1.0 - level) / 2
    for i, q in enumerate(qs):
        cdf = _binom_cdf(np.arange(n, dtype=np.float64), n, q)  # cdf[j] = P(B ≤ j) = P(B < j + 1)
        low = np.flatnonzero(cdf <= half)  # j = l − 1 with P(B < l) ≤ α/2
        high = np.flatnonzero(1.0 - cdf <= half)  # j = u − 1 with P(B ≥ u) ≤ α/2
        out[i, 0] = a[low[-1]] if len(low) else bounds[0]
        out[i, 1] = a[high[0]] if len(high) else bounds[1]
    return out


def summarise(df: pd.DataFrame, metrics: Iterable[str] | None = None, level: float = LEVEL) -> pd.DataFrame:
    """One row per metric: n, mean, std, ci_low, ci_high, half_width, p5/p50/p95 and their
    order-statistic intervals (``p5_ci_low`` …, :func:`quantile_ci`). Non-finite values (a metric a replication did not
    define) are left out of that metric's statistics and counted in ``n``. The interval of the mean
    is cut to the values the metric can take (:func:`metric_range`: the true mean lies there, so
    coverage is kept); ``half_width`` is the uncut t half-width."""
    rows = []
    for m in (list(metrics) if metrics is not None else metric_columns(df)):
        a = _clean(df[m].to_numpy(dtype=np.float64)) if m in df else np.array([])
        rng = metric_range(m)
        mean, lo, hi = t_interval(a, level, rng)
        row: dict[str, float | str | int] = {
            "metric": m, "n": int(len(a)), "mean": mean,
            "std": float(a.std(ddof=1)) if len(a) > 1 else math.nan,
            "ci_low": lo, "ci_high": hi, "half_width": half_width(a, level),
        }
        if len(a):
            qv = np.quantile(a, QUANTILES)
        else:
            qv = np.full(len(QUANTILES), np.nan)
        qci = quantile_ci(a, QUANTILES, level, rng)
        for q, v, (cl, ch) in zip(QUANTILES, qv, qci):
            name = f"p{round(q * 100)}"
            row[name] = float(v)
            row[f"{name}_ci_low"] = float(cl)
            row[f"{name}_ci_high"] = float(ch)
        rows.append(row)
    cols = ["metric", "n", "mean", "std", "ci_low", "ci_high", "half_width"]
    for q in QUANTILES:
        name = f"p{round(q * 100)}"
        cols += [name, f"{name}_ci_low", f"{name}_ci_high"]
    return pd.DataFrame(rows, columns=cols)


# ---------------------------------------------------------------- paired comparisons (CRN)

def paired(a: ArrayLike, b: ArrayLike, level: float = LEVEL) -> dict[str, float]:
    """Paired difference b − a of two aligned replication vectors (same replication indices).

    Returns n, mean_a, mean_b, diff (mean of b − a), ci_low, ci_high, std_diff, var_a, var_b,
    var_diff, and ``variance_reduction`` = (var a + var b) / var(b − a): how many times smaller
    the variance of the estimated difference is under CRN than with independent seeds (inf when
    the paired difference is constant and the variants vary, NaN when nothing varies)."""
    x = np.asarray(a, dtype=np.float64).ravel()
    y = np.asarray(b, dtype=np.float64).ravel()
    if x.shape != y.shape:
        raise ValueError("paired vectors must have the same length")
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    d = y - x
    n = len(d)
    mean, lo, hi = t_interval(d, level)
    va = float(x.var(ddof=1)) if n > 1 else math.nan
    vb = float(y.var(ddof=1)) if n > 1 else math.nan
    vd = float(d.var(ddof=1)) if n > 1 else math.nan
    if n > 1 and np.ptp(d) <= 16 * np.finfo(np.float64).eps * max(float(np.abs(x).max()), float(np.abs(y).max())):
        vd = 0.0  # a constant difference whose spread is float rounding of y - x, not variation
    if n > 1 and vd > 0:
        vr = (va + vb) / vd
    elif n > 1 and va + vb > 0:
        vr = math.inf
    else:
        vr = math.nan
    if n > 1 and np.all(d == 0):
        lo = hi = 0.0
    return {
        "n": float(n), "mean_a": float(x.mean()) if n else math.nan, "mean_b": float(y.mean()) if n else math.nan,
        "diff": mean, "ci_low": lo, "ci_high": hi, "std_diff": math.sqrt(vd) if vd == vd else math.nan,
        "var_a": va, "var_b": vb, "var_diff": vd, "variance_reduction": vr,
    }


def independent_diff_half_width(a: ArrayLike, b: ArrayLike, level: float = LEVEL) -> float:
    """Half-width of the Welch interval of mean b − mean a, as if the two samples were independent
    (what the comparison would cost without common random numbers)."""
    x, y = _clean(a), _clean(b)
    nx, ny = len(x), len(y)
    if nx < 2 or ny < 2:
        return math.nan
    vx, vy = x.var(ddof=1) / nx, y.var(ddof=1) / ny
    se2 = vx + vy
    if se2 == 0:
        return 0.0
    dof = se2 ** 2 / (vx ** 2 / (nx - 1) + vy ** 2 / (ny - 1))
    return float(_t_ppf(dof, 0.5 + level / 2) * math.sqrt(se2))


def paired_table(tables: Mapping[str, pd.DataFrame], reference: str, metrics: Iterable[str] | None = None,
                 level: float = LEVEL) -> pd.DataFrame:
    """Paired differences of every variant against ``reference`` for every metric.

    Tables are aligned on ``replication`` (inner join), never on row order; a cause counted in one
    table and not another counts 0 there (:data:`ZERO_WHEN_ABSENT`)."""
    tables = with_absent_zeros(tables)
    ref = tables[reference].set_index("replication").sort_index()
    rows = []
    ms = list(metrics) if metrics is not None else metric_columns(tables[reference])
    for name, df in tables.items():
        if name == reference:
            continue
        other = df.set_index("replication").sort_index()
        idx = ref.index.intersection(other.index)
        for m in ms:
            if m not in ref.columns or m not in other.columns:
                continue
            pr = paired(ref.loc[idx, m].to_numpy(), other.loc[idx, m].to_numpy(), level)
            r: dict[str, object] = {"variant": name, "reference": reference, "metric": m, **pr}
            r["independent_half_width"] = independent_diff_half_width(ref.loc[idx, m], other.loc[idx, m], level)
            rows.append(r)
    cols = ["variant", "reference", "metric", "n", "mean_a", "mean_b", "diff", "ci_low", "ci_high", "std_diff",
            "var_a", "var_b", "var_diff", "variance_reduction", "independent_half_width"]
    return pd.DataFrame(rows, columns=cols)


# ---------------------------------------------------------------- which way is better

def direction(metric: str) -> int:
    """+1 when larger is better, −1 when smaller is better, 0 when the metric has no preferred
    direction (utilisation, counts of installed hardware …) or is not in the metric catalogue
    (:mod:`twin.report.metrics`, the one place that says which way a metric is better)."""
    from twin.report.metrics import direction as _direction

    return _direction(metric)


TIE = "(tie)"
"""The winner of a metric whose best two variants have the same mean."""


def winners(tables: Mapping[str, pd.DataFrame], metrics: Iterable[str] | None = None,
            level: float = LEVEL) -> pd.DataFrame:
    """For every metric with a preferred direction: the variant with the best mean, the runner-up,
    and the paired difference best − runner-up with its interval; ``clear`` when that interval
    excludes zero (in the better direction). A metric undefined in every replication of some variant
    has no winner. When the best and the runner-up have the same mean
    (identical in every replication, say: no stock-outs in either), the winner is ``"(tie)"``."""
    tables = with_absent_zeros(tables)
    names = list(tables)
    first = tables[names[0]]
    ms = list(metrics) if metrics is not None else metric_columns(first)
    indexed = {k: v.set_index("replication").sort_index() for k, v in tables.items()}
    rows = []
    for m in ms:
        sgn = direction(m)
        if sgn == 0 or any(m not in t.columns for t in indexed.values()):
            continue
        vals = {k: _clean(t[m].to_numpy(dtype=np.float64)) for k, t in indexed.items()}
        if any(not len(v) for v in vals.values()):
            continue  # undefined in every replication of some variant (a share of no demands): no winner
        means = {k: float(v.mean()) for k, v in vals.items()}
        order = sorted(names, key=lambda k: (-sgn * means[k], names.index(k)))
        best, second = order[0], order[1] if len(order) > 1 else order[0]
        idx = indexed[best].index.intersection(indexed[second].index)
        p = paired(indexed[second].loc[idx, m].to_numpy(), indexed[best].loc[idx, m].to_numpy(), level)
        lo, hi = p["ci_low"], p["ci_high"]
        clear = bool((sgn > 0 and lo > 0) or (sgn < 0 and hi < 0))
        tie = second != best and means[best] == means[second]
        rows.append({"metric": m, "better": "higher" if sgn > 0 else "lower", "winner": TIE if tie else best,
                     "winner_mean": means[best], "runner_up": second, "margin": p["diff"],
                     "margin_ci_low": lo, "margin_ci_high": hi, "clear": clear})
    return pd.DataFrame(rows, columns=["metric", "better", "winner", "winner_mean", "runner_up", "margin",
                                       "margin_ci_low", "margin_ci_high", "clear"])
