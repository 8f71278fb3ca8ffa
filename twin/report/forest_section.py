"""The forest plots of a comparison report (issue 39, item 11), right after the decision summary.

One panel per catalogue group: each option's paired difference to the reference, on one relative
scale (% of the reference's mean), temperatures in a panel of their own in °C (the percent of a
Celsius value means nothing: 5 °C is not "10 % less" than 50 °C in any physical sense). A metric that
is identical for every option in every replication (a paired difference of exactly zero, no spread)
is left out of its panel and named under it; a group of nothing but such metrics gets no panel, only
that sentence. An option identical to the reference on a metric in every replication is said so,
with why: under common random numbers each option draws the same failures, repairs and outages, so
a metric stays equal replication by replication unless what differs between the scenarios (the
fields of ``differs`` in ``decision-summary.json``) reaches it within the horizon.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import pandas as pd

from twin.report import metrics as catalogue

LISTED = 8
"""Metrics named one by one in a sentence; the rest are counted."""


def _names(ms: Sequence[str]) -> str:
    labels = [catalogue.label(m) for m in ms]
    more = len(labels) - LISTED
    return ", ".join(labels[:LISTED]) + (f" and {more} more" if more > 0 else "")


def identical(paired: pd.DataFrame, metric: str, variant: str | None = None) -> bool:
    """True when the paired difference of ``metric`` (of ``variant``, else of every variant) to the
    reference is exactly zero in every replication: mean, interval and spread all zero."""
    d = paired[paired.metric == metric]
    if variant is not None:
        d = d[d.variant == variant]
    if not len(d):
        return False
    cols = [c for c in ("diff", "ci_low", "ci_high", "std_diff") if c in d.columns]
    return bool((d[cols].to_numpy(dtype=float) == 0.0).all())


def is_temperature(metric: str) -> bool:
    m = catalogue.find(metric)
    return m is not None and m.fmt == "temperature_c"


def forest_section(doc: Any, paired: pd.DataFrame, groups: Sequence[tuple[str, list[str]]], reference: str,
                   currency: str, static: Callable[..., Any], decision: dict[str, Any] | None = None) -> None:
    """Write the section into ``doc`` (a :class:`twin.report.html.Doc`); ``static`` draws the
    Markdown twin's PNG of a panel (:func:`twin.report.html.fig_forest`)."""
    from twin.report.interactive import forest

    doc.h2("Forest plots by group")
    doc.p("Paired per replication under common random numbers: each panel puts a group's differences on one "
          f"relative scale (% of {reference}'s mean); temperatures are in their own panel, in °C (a percent of a "
          "Celsius value means nothing); hover for absolute values, drag to zoom. A metric identical for every "
          "option in every replication is left out of its panel and named below it.")
    variants = list(dict.fromkeys(paired.variant))
    everywhere: list[str] = []
    for g, ms in groups:
        same = [m for m in ms if identical(paired, m)]
        rest = [m for m in ms if m not in same]
        scaled = [m for m in rest if not is_temperature(m)]
        temps = [m for m in rest if is_temperature(m)]
        if scaled:
            fig = forest(paired, scaled, g, reference, currency)
            if fig is not None:
                doc.chart(fig, f"forest_{g}", f"forest plot of the {g} metrics", static(paired, scaled, g, currency))
        if temps:
            fig = forest(paired, temps, f"{g} temperatures", reference, currency, unit="°C")
            if fig is not None:
                doc.chart(fig, f"forest_{g}_temperatures", f"forest plot of the {g} temperatures in °C",
                          static(paired, temps, f"{g} temperatures", currency, unit="°C"))
        if same:
            everywhere += same
            doc.p(f"{g.capitalize()}: " + ("every metric is" if not rest else f"{_names(same)}:")
                  + " identical for every option in every replication" + (" (no panel)." if not rest else "."))
    per = {v: [m for _, ms in groups for m in ms if m not in everywhere and identical(paired, m, v)]
           for v in variants}
    lines = [f"{v} is identical to {reference} in every replication on {len(ms)} metric{'s' if len(ms) > 1 else ''}: "
             f"{_names(ms)}." for v, ms in per.items() if ms]
    if lines:
        doc.bullets(lines)
    if everywhere or lines:
        doc.p(why_identical(reference, [v for v in variants if per.get(v) or everywhere], decision or {}))


def why_identical(reference: str, variants: Sequence[str], decision: dict[str, Any]) -> str:
    """Why options can be identical in every replication: the same random draws, and what differs
    between their scenarios does not reach the metric within the horizon."""
    differs = decision.get("differs") or {}
    parts = []
    for v in variants:
        fields = differs.get(v) or []
        if fields:
            shown = ", ".join(fields[:4]) + (f" and {len(fields) - 4} more" if len(fields) > 4 else "")
            parts.append(f"{v} differs from {reference} in {shown}")
    hides = decision.get("horizon_hides") or []
    horizon = ""
    if hides:
        horizon = (f"; and the {catalogue.plain(float(hides[0]['horizon_days']), 4)}-day horizon hides "
                   + ", ".join(h["what"] for h in hides) + ", which might")
    return ("Why identical: under common random numbers every option draws the same failures, repairs and "
            "outages in a replication, so a metric stays equal replication by replication unless what differs "
            "between the options reaches it" + (" (" + "; ".join(parts) + ")" if parts else "")
            + ": these differences change none of the metrics named above within the horizon" + horizon + ".")


__all__ = ["forest_section", "identical", "is_temperature", "why_identical"]
