"""Interactive charts of the HTML reports (issue 30, item 4), made with Plotly: hover values, zoom
and pan, written into the report itself (plotly.js inline once per page, nothing fetched), so the
report stays one file that opens offline. Markdown reports keep static PNGs (matplotlib).

Forest plots put every metric of a group on one relative scale: the paired difference as a percent
of the reference option's mean, with the absolute difference, its interval and both means in the
hover; timelines are step lines over days.
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


def forest_rows(paired: pd.DataFrame, metrics: Sequence[str], currency: str) -> pd.DataFrame:
    """One row per (metric, variant): Δ and its interval as % of the reference mean, and the hover
    text with absolute values."""
    rows = []
    for m in metrics:
        for r in paired[paired.metric == m].itertuples(index=False):
            rel = _relative(r.diff, r.mean_a)
            rows.append({
                "metric": m, "label": label(m), "variant": r.variant, "rel": rel,
                "rel_low": _relative(r.ci_low, r.mean_a), "rel_high": _relative(r.ci_high, r.mean_a),
                "hover": (f"<b>{label(m)}</b><br>{r.variant} − {r.reference}: "
                          f"{format_value(m, r.diff, currency, delta=True)} "
                          f"{format_interval(m, r.ci_low, r.ci_high, currency, True)}<br>"
                          f"{r.reference}: {format_value(m, r.mean_a, currency)}; {r.variant}: "
                          f"{format_value(m, r.mean_b, currency)}<br>relative: "
                          + (f"{plain(rel, 3, True)} %" if math.isfinite(rel) else "– (reference mean 0)")),
            })
    return pd.DataFrame(rows, columns=["metric", "label", "variant", "rel", "rel_low", "rel_high", "hover"])


def forest(paired: pd.DataFrame, metrics: Sequence[str], group: str, reference: str, currency: str) -> Any | None:
    """Forest plot of one group: Δ as % of the reference mean (95 % CI), one colour per variant."""
    import plotly.graph_objects as go

    d = forest_rows(paired, metrics, currency)
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
    fig.update_layout(
        title=dict(text=f"{group}: paired difference vs {reference} (% of {reference}'s mean, 95 % CI)", x=0),
        xaxis_title=f"Δ as % of {reference}'s mean (hover: absolute values)", font=FONT,
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


__all__ = ["CONFIG", "forest", "forest_rows", "timeline", "to_div"]
