"""Interactive charts of the HTML reports (issue 30, item 4), made with Plotly: hover values, zoom
and pan, written into the report itself (plotly.js inline once per page, nothing fetched), so the
report stays one file that opens offline. Markdown reports keep static PNGs (matplotlib).

Forest plots put every metric of a group on one relative scale: the paired difference as a percent
of the reference option's mean, with the absolute difference, its interval and both means in the
hover; temperatures get a panel of their own in °C (a percent of a Celsius value means nothing);
timelines are step lines over days.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from twin.report.metrics import format_interval, format_value, label, plain

CONFIG = {"displaylogo": False, "responsive": True, "modeBarButtonsToRemove": ["sendDataToCloud"]}
"""Plotly config of every chart (no link to the Plotly cloud)."""
FONT = dict(family="system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif", size=12)


def to_div(fig: Any, div_id: str, first: bool) -> str:
    """A chart as an HTML fragment; plotly.js is included inline with the ``first`` chart of a page."""
    return str(fig.to_html(full_html=False, include_plotlyjs=bool(first), div_id=div_id, config=CONFIG))


def _relative(diff: float, ref: float) -> float:
    return 100.0 * diff / abs(ref) if ref and math.isfinite(ref) and math.isfinite(diff) else math.nan


def forest_rows(paired: pd.DataFrame, metrics: Sequence[str], currency: str, absolute: bool = False) -> pd.DataFrame:
    """One row per (metric, variant): Δ and its interval as % of the reference mean (``absolute``:
    in the metric's own unit, for a temperature, whose percent of a °C value means nothing), and the
    hover text with absolute values."""
    rows = []
    for m in metrics:
        for r in paired[paired.metric == m].itertuples(index=False):
            if absolute:
                rel, lo, hi = float(r.diff), float(r.ci_low), float(r.ci_high)
                tail = ""
            else:
                rel, lo, hi = _relative(r.diff, r.mean_a), _relative(r.ci_low, r.mean_a), _relative(r.ci_high, r.mean_a)
                tail = "<br>relative: " + (f"{plain(rel, 3, True)} %" if math.isfinite(rel) else "– (reference mean 0)")
            rows.append({
                "metric": m, "label": label(m), "variant": r.variant, "rel": rel, "rel_low": lo, "rel_high": hi,
                "hover": (f"<b>{label(m)}</b><br>{r.variant} − {r.reference}: "
                          f"{format_value(m, r.diff, currency, delta=True)} "
                          f"{format_interval(m, r.ci_low, r.ci_high, currency, True)}<br>"
                          f"{r.reference}: {format_value(m, r.mean_a, currency)}; {r.variant}: "
                          f"{format_value(m, r.mean_b, currency)}" + tail),
            })
    return pd.DataFrame(rows, columns=["metric", "label", "variant", "rel", "rel_low", "rel_high", "hover"])


def forest(paired: pd.DataFrame, metrics: Sequence[str], group: str, reference: str, currency: str,
           unit: str | None = None) -> Any | None:
    """Forest plot of one group: Δ as % of the reference mean (95 % CI), one colour per variant; with
    ``unit`` (``°C``) Δ in that unit instead (temperatures: a percent of a Celsius value means nothing)."""
    import plotly.graph_objects as go

    d = forest_rows(paired, metrics, currency, absolute=unit is not None)
    d = d[np.isfinite(d.rel.to_numpy(dtype=float))]
    if not len(d):
        return None
    fig = go.Figure()
    labels = list(dict.fromkeys(d.label))
    for v, g in d.groupby("variant", sort=False):
        fig.add_trace(go.Scatter(
            x=g.rel, y=g.label, mode="markers", name=str(v), marker=dict(size=9),
            error_x=dict(type="data", symmetric=False, array=(g.rel_high - g.rel).fillna(0),
                         arrayminus=(g.rel - g.rel_low).fillna(0), thickness=1.5, width=5),
            hovertext=g.hover, hoverinfo="text"))
    fig.add_vline(x=0, line_width=1, line_color="black")
    scale = f"{unit}" if unit is not None else f"% of {reference}'s mean"
    fig.update_layout(
        title=dict(text=f"{group}: paired difference vs {reference} ({scale}, 95 % CI)", x=0),
        xaxis_title=(f"Δ, {unit}" if unit is not None else f"Δ as % of {reference}'s mean")
        + " (hover: absolute values)", font=FONT,
        yaxis=dict(categoryorder="array", categoryarray=labels[::-1], automargin=True),
        height=140 + 34 * len(labels), margin=dict(l=10, r=10, t=50, b=45), hovermode="closest",
        legend=dict(title="variant", orientation="v", x=1.02, y=1), template="plotly_white")
    return fig


def timeline(series: Mapping[str, tuple[np.ndarray, np.ndarray]], title: str, y_title: str,
             hover_unit: str = "", step: bool = True) -> Any:
    """Lines over days: ``series`` name → (days, values); step lines (a level holds until the next change)."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for name, (x, y) in series.items():
        fig.add_trace(go.Scatter(x=x, y=y, mode="lines", name=name, line=dict(shape="hv" if step else "linear", width=1.4),
                                 hovertemplate=f"day %{{x:.2f}}<br>%{{y:,.4~f}} {hover_unit}<extra>{name}</extra>"))
    fig.update_layout(title=dict(text=title, x=0), xaxis_title="day", yaxis_title=y_title, font=FONT, height=330,
                      margin=dict(l=10, r=10, t=50, b=45), hovermode="x unified", template="plotly_white",
                      legend=dict(orientation="v", x=1.02, y=1), showlegend=len(series) > 1)
    fig.update_yaxes(automargin=True, tickformat=",~r")
    return fig


def _k(metric: str) -> float:
    from twin.report.metrics import find

    m = find(metric)
    return 100.0 if m is not None and m.fmt == "percent" else 1.0


def _axis(metric: str, currency: str) -> str:
    from twin.report.metrics import label_with_unit

    return label_with_unit(metric, currency)


def ecdf(values: Mapping[str, np.ndarray], metric: str, currency: str) -> Any:
    """Empirical CDF over replications, one line per option; hover gives the value as the catalogue prints it."""
    import plotly.graph_objects as go

    fig = go.Figure()
    k = _k(metric)
    for lab, v in values.items():
        v = np.sort(np.asarray(v, dtype=float)[np.isfinite(v)])
        if not len(v):
            continue
        frac = np.arange(1, len(v) + 1) / len(v)
        fig.add_trace(go.Scatter(x=k * v, y=frac, mode="lines+markers", name=str(lab), line=dict(shape="hv"),
                                 hovertext=[f"{lab}: {format_value(metric, x, currency)}; {plain(100 * f, 3)} % of "
                                            "replications at or below" for x, f in zip(v, frac)],
                                 hoverinfo="text"))
    fig.update_layout(title=dict(text=f"ECDF of {label(metric)} over replications", x=0), xaxis_title=_axis(metric, currency),
                      yaxis_title="fraction of replications ≤ x", font=FONT, height=330, template="plotly_white",
                      margin=dict(l=10, r=10, t=50, b=45), legend=dict(x=1.02, y=1), showlegend=len(values) > 1)
    fig.update_xaxes(tickformat=",~r")
    return fig


def sweep_curve(tidy: pd.DataFrame, params: Sequence[str], metric: str, currency: str) -> Any | None:
    """Mean and 95 % CI of a metric over the first swept parameter, one line per value of the others."""
    import plotly.graph_objects as go

    d = tidy[tidy.metric == metric]
    if not len(d):
        return None
    x, others = params[0], list(params[1:])
    k = _k(metric)
    fig = go.Figure()
    groups = d.groupby(others, sort=True) if others else [((), d)]
    for key, g in groups:
        g = g.sort_values(x) if pd.api.types.is_numeric_dtype(g[x]) else g
        name = ", ".join(f"{o}={v}" for o, v in zip(others, key if isinstance(key, tuple) else (key,))) or label(metric)
        fig.add_trace(go.Scatter(
            x=[str(v) for v in g[x]] if not pd.api.types.is_numeric_dtype(g[x]) else g[x], y=k * g["mean"],
            mode="lines+markers", name=name,
            error_y=dict(type="data", symmetric=False, array=(k * (g.ci_high - g["mean"])).fillna(0),
                         arrayminus=(k * (g["mean"] - g.ci_low)).fillna(0)),
            hovertext=[f"point {p}: {format_value(metric, m, currency)} "
                       f"{format_interval(metric, lo, hi, currency)}" for p, m, lo, hi in
                       zip(g.point, g["mean"], g.ci_low, g.ci_high)], hoverinfo="text"))
    fig.update_layout(title=dict(text=f"{label(metric)} (mean, 95 % CI)", x=0), xaxis_title=x,
                      yaxis_title=_axis(metric, currency), font=FONT, height=330, template="plotly_white",
                      margin=dict(l=10, r=10, t=50, b=45), legend=dict(x=1.02, y=1), showlegend=bool(others))
    fig.update_yaxes(tickformat=",~r")
    return fig


def tornado(ranking: pd.DataFrame, metric: str, currency: str, top: int = 20) -> Any | None:
    """Δ of the metric at each factor's low and high value against the baseline, ranked by swing."""
    import plotly.graph_objects as go

    d = ranking[ranking.metric == metric].sort_values("rank").head(top)
    if not len(d):
        return None
    k = _k(metric)
    names = [f"{f} ({lo} / {hi})" for f, lo, hi in zip(d.factor, d.low, d.high)]
    fig = go.Figure()
    for lvl, col in (("low", "#4c72b0"), ("high", "#dd8452")):
        v, a, b = d[f"delta_{lvl}"], d[f"delta_{lvl}_ci_low"], d[f"delta_{lvl}_ci_high"]
        fig.add_trace(go.Bar(
            y=names, x=k * v, orientation="h", name=lvl, marker_color=col,
            error_x=dict(type="data", symmetric=False, array=(k * (b - v)).fillna(0), arrayminus=(k * (v - a)).fillna(0)),
            hovertext=[f"{n} at {lvl}: Δ {format_value(metric, x, currency, True)} "
                       f"{format_interval(metric, lo, hi, currency, True)}" for n, x, lo, hi in zip(names, v, a, b)],
            hoverinfo="text"))
    unit = "percentage points" if _k(metric) == 100.0 else (_axis(metric, currency))
    fig.update_layout(title=dict(text=f"Tornado: Δ {label(metric)} vs baseline (paired, 95 % CI)", x=0),
                      xaxis_title=f"Δ {label(metric)} ({unit})" if _k(metric) == 100.0 else f"Δ {unit}",
                      barmode="overlay", font=FONT, height=150 + 30 * len(d), template="plotly_white",
                      yaxis=dict(autorange="reversed", automargin=True), margin=dict(l=10, r=10, t=50, b=45),
                      legend=dict(x=1.02, y=1))
    return fig


__all__ = ["CONFIG", "ecdf", "forest", "forest_rows", "sweep_curve", "timeline", "to_div", "tornado"]
