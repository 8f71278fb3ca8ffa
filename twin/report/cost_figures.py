"""Cost figures and report sections (issue 9): cost breakdown per run / variant / grid point, the
cost–constraint frontier of a sweep, and the break-even table of a comparison.

They read only stored tables: the ``costs`` table of one replication, experiment summaries
(``cost.*`` metrics), ``breakeven.parquet`` and ``decision.parquet``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Mapping, Sequence

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from twin.report import metrics as catalogue
from twin.report.numbers import fmt as _fmt

PARTS = [("cost.capital.compute", "capital: compute"), ("cost.capital.cooling", "capital: cooling"),
         ("cost.capital.power", "capital: power"), ("cost.capital.network", "capital: network"),
         ("cost.capital.storage", "capital: storage"), ("cost.capital.spares", "capital: spares"),
         ("cost.energy", "energy"), ("cost.repair_parts", "repair parts"), ("cost.labour", "labour"), ("cost.spares_holding", "spares holding"),
         ("cost.water", "water")]
"""Stacked segments of a cost breakdown, in drawing order (they add up to cost.total)."""
COLOURS = ["#4c72b0", "#64b5cd", "#8172b2", "#55a868", "#bcbd22", "#8c8c8c", "#dd8452", "#c44e52", "#937860",
           "#da8bc3", "#17becf"]
assert len(COLOURS) == len(PARTS)  # (zip would drop a segment)


def _save(fig: "plt.Figure", path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# --------------------------------------------------------------------------- one replication

def figures(res: Any, folder: Path) -> list[str]:
    """Write cost_breakdown.png (amount per cost line over the horizon) when the run has costs."""
    df = res.tables.get("costs")
    if df is None or not len(df):
        return []
    d = df.copy()
    d["label"] = [f"{c}: {g}" if c == "capital" else c for c, g in zip(d.category, d.group)]
    agg = d.groupby("label", sort=False)["amount"].sum()
    cur = str(d["currency"].iloc[0]) if "currency" in d.columns else ""
    sc = getattr(res, "scenario", "")
    fig, ax = plt.subplots(figsize=(8, 0.4 * len(agg) + 1.4))
    ax.barh(agg.index, agg.to_numpy() / 1e6, color="tab:blue")
    ax.invert_yaxis()
    total = float(d["amount"].sum())
    per = res.metrics.get("cost.per_useful_gpu_hour", math.nan)
    ax.set_xlabel(f"million {cur or 'currency units'} over the horizon (capital amortised)")
    ax.set_title(f"Cost breakdown {sc} ({cur or 'currency units'}): total {total / 1e6:.3g} M; per useful GPU-hour "
                 + (f"{per:.3g}" if per == per else "–"), fontsize=9)
    folder.mkdir(parents=True, exist_ok=True)
    _save(fig, folder / "cost_breakdown.png")
    return ["cost_breakdown.png"]


# --------------------------------------------------------------------------- experiments

def fig_cost_breakdown(summaries: Mapping[str, pd.DataFrame], currency: str = "USD") -> "plt.Figure | None":
    """Stacked bars of mean cost lines per variant (or grid point), the 95 % CI of cost.total as an
    error bar, and the mean cost per useful GPU-hour as a label. ``summaries``: label → summary table
    (metric, mean, ci_low, ci_high)."""
    labs = [k for k, s in summaries.items() if "cost.total" in set(s.metric)]
    if not labs:
        return None
    fig, ax = plt.subplots(figsize=(10, 0.55 * len(labs) + 1.8))
    y = np.arange(len(labs))
    left = np.zeros(len(labs))
    for (m, name), col in zip(PARTS, COLOURS):
        vals = []
        for k in labs:
            s = summaries[k].set_index("metric")
            vals.append(float(s.loc[m, "mean"]) if m in s.index else 0.0)
        v = np.asarray(vals) / 1e6
        if np.any(v > 0):
            ax.barh(y, v, left=left, color=col, label=name)
            left += v
    for i, k in enumerate(labs):
        s = summaries[k].set_index("metric")
        t = s.loc["cost.total"]
        lo, hi = float(t["ci_low"]), float(t["ci_high"])
        end = max(left[i], hi / 1e6) if math.isfinite(hi) else left[i]
        if math.isfinite(lo) and math.isfinite(hi):
            ax.errorbar([float(t["mean"]) / 1e6], [i], xerr=[[(float(t["mean"]) - lo) / 1e6], [(hi - float(t["mean"])) / 1e6]],
                        fmt="none", ecolor="k", capsize=3)
        per = float(s.loc["cost.per_useful_gpu_hour", "mean"]) if "cost.per_useful_gpu_hour" in s.index else math.nan
        if math.isfinite(per):
            ax.text(end, i, f"  {per:.3g} per useful GPU-h", va="center", fontsize=7)
    ax.set_yticks(y)
    ax.set_yticklabels(labs)
    ax.invert_yaxis()
    ax.set_xlabel(f"million {currency or 'currency units'} over the horizon (mean; capital amortised; "
                  "black: 95 % CI of the total)")
    ax.set_title(f"Cost breakdown ({currency or 'currency units'})")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    ax.set_xlim(0, max(left.max(), 1e-9) * 1.3)
    return fig


def pareto_front(cost: np.ndarray, merit: np.ndarray, higher_better: bool = True) -> np.ndarray:
    """Indices of the non-dominated points (lower cost, better merit), sorted by cost."""
    sgn = 1.0 if higher_better else -1.0
    order = np.lexsort((-sgn * merit, cost))
    out, best = [], -math.inf
    for i in order:
        if not (math.isfinite(cost[i]) and math.isfinite(merit[i])):
            continue
        if sgn * merit[i] > best:
            out.append(int(i))
            best = sgn * merit[i]
    return np.asarray(out, dtype=np.int64)


def fig_frontier(decision: pd.DataFrame, tidy: pd.DataFrame, objective: str, constraint: str,
                 threshold: float | None, op: str = ">=") -> "plt.Figure | None":
    """Cost (objective) against the constrained metric per grid point, 95 % CIs both ways, the
    threshold, the Pareto frontier and the chosen point."""
    o = tidy[tidy.metric == objective].set_index("point")
    c = tidy[tidy.metric == constraint].set_index("point")
    pts = [p for p in decision.point if p in o.index and p in c.index]
    if not pts:
        return None
    d = decision.set_index("point").loc[pts]
    x, y = c.loc[pts, "mean"].to_numpy(float), o.loc[pts, "mean"].to_numpy(float)
    xe = np.nan_to_num(np.vstack([x - c.loc[pts, "ci_low"].to_numpy(float), c.loc[pts, "ci_high"].to_numpy(float) - x]))
    ye = np.nan_to_num(np.vstack([y - o.loc[pts, "ci_low"].to_numpy(float), o.loc[pts, "ci_high"].to_numpy(float) - y]))
    feas = d["feasible"].to_numpy(bool)
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    ax.errorbar(x[feas], y[feas], xerr=xe[:, feas], yerr=ye[:, feas], fmt="o", color="tab:blue", capsize=3,
                label="meets the constraints")
    ax.errorbar(x[~feas], y[~feas], xerr=xe[:, ~feas], yerr=ye[:, ~feas], fmt="o", color="0.6", capsize=3,
                label="does not")
    front = pareto_front(y if catalogue.direction(objective) <= 0 else -y, x, higher_better=(op == ">="))
    if len(front) > 1:
        ax.step(x[front], y[front], where="pre" if op == ">=" else "post", color="tab:green", lw=1, label="frontier")
    for xi, yi, p in zip(x, y, pts):
        ax.annotate(str(p), (xi, yi), textcoords="offset points", xytext=(4, 4), fontsize=7)
    ch = d["chosen"].to_numpy(bool)
    if ch.any():
        ax.plot(x[ch], y[ch], "*", color="tab:red", ms=16, label="chosen")
    if threshold is not None:
        ax.axvline(threshold, color="k", ls="--", lw=0.8, label=f"{constraint} {op} {threshold:g}")
    from twin.report.metrics import label, label_with_unit

    ax.set_xlabel(f"{label_with_unit(constraint)} (mean, 95 % CI)")
    ax.set_ylabel(f"{label_with_unit(objective)} (mean, 95 % CI)")
    ax.set_title(f"{label(objective)} against {label(constraint)} per grid point")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.02, 0.5), frameon=False)
    return fig


# --------------------------------------------------------------------------- report sections

def currency_of(folder: Path) -> str:
    """``costs.currency`` of the resolved scenario stored in a Monte-Carlo folder ('' when unknown)."""
    import yaml

    p = Path(folder) / "scenario.resolved.yaml"
    if not p.is_file():
        return ""
    doc = yaml.safe_load(p.read_text())
    c = doc.get("costs") if isinstance(doc, dict) else None
    return str(c.get("currency", "")) if isinstance(c, dict) else ""


def montecarlo_section(doc: Any, label: str, summ: pd.DataFrame, folder: Path | None = None) -> None:
    """Cost breakdown of one Monte Carlo (nothing when it has no costs)."""
    fig = fig_cost_breakdown({label: summ}, currency_of(folder) if folder is not None else "")
    if fig is None:
        return
    doc.h2("Cost")
    doc.figure(fig, "cost_breakdown.png", "cost breakdown")
    s = summ[summ.metric.str.startswith("cost.")]
    doc.table(pd.DataFrame({"metric": s.metric, "mean": s["mean"],
                            "95 % CI": [f"[{_fmt(a)}, {_fmt(b)}]" for a, b in zip(s.ci_low, s.ci_high)]}))


def compare_section(doc: Any, folder: Path, summ: pd.DataFrame, labels: list[str]) -> None:
    """Cost breakdown per variant and the break-even table (nothing without costs)."""
    p = folder / "breakeven.parquet"
    be = pd.read_parquet(p) if p.is_file() else None
    cur = str(be.currency.iloc[0]) if be is not None and len(be) else ""
    fig = fig_cost_breakdown({k: summ[summ.variant == k] for k in labels}, cur)
    if fig is None:
        return
    doc.h2("Cost and break-even")
    doc.figure(fig, "cost_breakdown.png", "cost breakdown per variant")
    if be is None or not len(be):
        return
    r0 = be.iloc[0]
    doc.p(f"Against {r0.reference}, in {r0.currency}: Δ capital is the purchase price difference; the net "
          f"benefit per year (of the variant against {r0.reference}) is the value of the extra useful GPU-hours (at {_fmt(r0.value_per_useful_gpu_hour)} "
          "each) plus the operating savings (energy, repair parts, labour, spares holding), paired per "
          f"replication; the option with more capital pays it back, discounted at {_fmt(r0.discount_rate)}: "
          "n = −ln(1 − r·K/b)/ln(1 + r) years, never when its net benefit is ≤ 0 (or r·K/b ≥ 1). "
          "The break-even energy price makes both options' cost net of the value of useful GPU-hours equal "
          "(capital amortised; a multiple of the tariff, shown as the reference's mean price per kWh).")
    doc.table(breakeven_rows(be))


def _years(x: float) -> str:
    x = float(x)
    if x == math.inf:
        return "never"
    return "–" if not math.isfinite(x) else f"{x:.3g}"


def payback_text(r: Any) -> str:
    """Who pays back what, in words: the option with more capital repays it in n years, or never
    (its net benefit ≤ 0, or below the interest on its extra capital); no extra capital: nothing to repay."""
    if not (r.extra_capital == r.extra_capital) or r.extra_capital == 0:
        return "no extra capital"
    heavier = r.variant if r.capital_heavier == "variant" else r.reference
    b = float(r.annual_net_benefit) * (1 if r.capital_heavier == "variant" else -1)
    if not b > 0:
        return f"never: net benefit of {heavier} ≤ 0"
    if float(r.payback_years) == math.inf:
        return f"never: {heavier}'s net benefit is below the interest on its extra capital"
    return f"{heavier} in {_years(r.payback_years)} years"


def breakeven_rows(be: pd.DataFrame) -> pd.DataFrame:
    """The break-even table for people: money in the currency with k/M, the payback in words
    ("never: net benefit ≤ 0" rather than inf), its interval with "never" for an end never repaid."""
    from twin.report.metrics import format_interval, format_value

    cur = str(be.currency.iloc[0]) if len(be) else ""

    def money(x: float, delta: bool = False) -> str:
        return format_value("cost.total", float(x), cur, delta)

    rows = []
    for r in be.itertuples(index=False):
        heavier = r.variant if r.capital_heavier == "variant" else r.reference
        lo, hi = _years(r.payback_years_ci_low), _years(r.payback_years_ci_high)
        finite = math.isfinite(float(r.payback_years))
        rows.append({
            "variant": r.variant, f"Δ capital vs {r.reference}": money(r.extra_capital, True),
            "net benefit / year": money(r.annual_net_benefit, True),
            "95 % CI": format_interval("cost.total", r.annual_net_benefit_ci_low, r.annual_net_benefit_ci_high, cur,
                                       True),
            "more capital": heavier if r.extra_capital != 0 else "–",
            "payback": payback_text(r),
            "payback 95 % CI (years)": f"[{lo}, {hi}]" if finite or lo != "never" else "–",
            f"break-even price ({cur}/kWh)": _fmt(float(r.energy_price_breakeven_per_kwh))})
    return pd.DataFrame(rows)


def decision_rows(dec: pd.DataFrame, params: Sequence[str], currency: str = "") -> pd.DataFrame:
    """A sweep's decision table (``decision.parquet``) for people: the metrics by their catalogue labels
    with units and values in their formats (``twin.report.metrics``); the parquet keeps raw keys."""
    obj = str(dec.objective.iloc[0]) if len(dec) else ""
    out = pd.DataFrame({"point": dec.point.astype(int)})
    for p in params:
        if p in dec.columns:
            out[p] = [_fmt(v) if isinstance(v, float) else str(v) for v in dec[p]]
    out[f"mean {catalogue.label_with_unit(obj, currency, table=True)}"] = [
        catalogue.format_value(obj, x, currency) for x in dec.objective_mean]
    out["95 % CI"] = [catalogue.format_interval(obj, a, b, currency)
                      for a, b in zip(dec.objective_ci_low, dec.objective_ci_high)]
    for c in dec.columns:
        for side in ("lower", "upper"):
            if c.endswith(f"_{side}_bound"):
                m = c[: -len(f"_{side}_bound")]
                out[f"{catalogue.label_with_unit(m, currency, table=True)}: {side} bound"] = [
                    catalogue.format_value(m, x, currency) for x in dec[c]]
    out["feasible"] = ["yes" if f else "no" for f in dec.feasible]
    out["chosen"] = ["<==" if c else "" for c in dec.chosen]
    return out


def sweep_section(doc: Any, folder: Path, meta: dict[str, Any], tidy: pd.DataFrame) -> None:
    """Decision (cheapest feasible point), frontier and cost breakdown per point of a sweep."""
    dm = meta.get("decision")
    p = folder / "decision.parquet"
    if dm and p.is_file():
        dec = pd.read_parquet(p)
        doc.h2("Decision")
        chosen = dm.get("chosen_point")
        best = "Largest" if dm.get("sense") == "max" else "Smallest"
        doc.p(f"{best} mean {catalogue.label(dm['objective'])} among the grid points where "
              + (" and ".join(dm["constraints"]) or "(no constraint)")
              + f" holds at confidence {dm['confidence']:g} (one-sided bound of the mean: mean ∓ t·s/√n). Chosen: "
              + (f"point {chosen}." if chosen is not None else "none (no point qualifies)."))
        cons = dm["constraints"]
        if cons:
            first = cons[0]
            op = ">=" if ">=" in first else "<="
            metric, thr = first.split(op)
            fig = fig_frontier(dec, tidy, dm["objective"], metric.strip(), float(thr), op)
            if fig is not None:
                doc.figure(fig, "frontier.png", "cost frontier")
        doc.table(decision_rows(dec, [p["path"] for p in meta.get("params", [])],
                                currency_of(folder / meta["points"][0]["folder"]) if meta.get("points") else ""))
    per = {f"point {k}": g for k, g in tidy.groupby("point", sort=True)}
    pts = meta.get("points") or []
    fig = fig_cost_breakdown(per, currency_of(folder / pts[0]["folder"]) if pts else "")
    if fig is not None:
        doc.h2("Cost breakdown per grid point")
        doc.figure(fig, "cost_breakdown.png", "cost breakdown per grid point")


__all__ = ["breakeven_rows", "compare_section", "payback_text", "fig_cost_breakdown", "fig_frontier", "figures", "montecarlo_section",
           "pareto_front", "sweep_section"]
