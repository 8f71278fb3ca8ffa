"""Experiment reports: one self-contained HTML file (static figures embedded as base64 PNG,
interactive Plotly charts with plotly.js inline once, inline CSS, nothing fetched: it opens offline)
and a Markdown twin that links PNG figures in ``figures/``.

Built only from what an experiment stored (parquet and json), so ``twin report RESULTS_DIR``
rebuilds it at any time. Kinds (``experiment.json`` → ``kind``): montecarlo, compare, sweep,
sensitivity. Every report opens with the decision summary (``decision-summary.json``, written by
the experiment: :mod:`twin.experiment.summary`; sentences from :mod:`twin.report.summary`); tables
and figures name metrics by their catalogue label with units (:mod:`twin.report.metrics`), grouped
(availability, throughput, thermal, power, network, energy, cost). A warning is shown when
replications were made by different twin versions.
"""

from __future__ import annotations

import base64
import contextlib
import html
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from twin.errors import InputError  # noqa: E402
from twin.report.figures import pareto_bars  # noqa: E402
from twin.report import metrics as catalogue  # noqa: E402
from twin.report.numbers import fmt  # noqa: E402
from twin.report.stored import read_json as _read_json, read_table as _read_table  # noqa: E402
from twin.atomic import save_figure  # noqa: E402

HEADLINE = ("node_availability", "fleet_capacity_availability", "goodput", "useful_gpu_hours", "ettr.max_job",
            "failures", "node_down_hours", "interruptions", "stockouts", "energy.it_kwh", "pue", "pue.flat",
            "energy.facility_kwh", "cost.total", "cost.per_useful_gpu_hour")
"""Metrics shown first (those a scenario reports)."""
DIST_METRICS = ("node_availability", "goodput")

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2em auto;max-width:1100px;
color:#222;line-height:1.4;padding:0 1em}
h1{font-size:1.6em;border-bottom:2px solid #444}h2{font-size:1.25em;margin-top:1.6em;border-bottom:1px solid #bbb}
table{border-collapse:collapse;font-size:.85em;margin:.6em 0}
th,td{border:1px solid #ccc;padding:3px 7px;text-align:right}
th{background:#f0f0f0}td:first-child,th:first-child{text-align:left}
img{max-width:100%;height:auto;border:1px solid #ddd;margin:.4em 0}
.warn{background:#fff3cd;border:1px solid #e0b000;padding:.5em 1em}.muted{color:#666;font-size:.85em}
code{background:#f4f4f4;padding:0 3px}
#decision-summary{background:#eef5ee;border:1px solid #6a6;border-radius:4px;padding:.4em 1em;margin:.8em 0}
#decision-summary h2{margin-top:.3em;border:none}#decision-summary p{margin:.45em 0}
.chart{width:100%;margin:.4em 0}
details{margin:.8em 0}details>summary{font-size:1.25em;font-weight:bold;cursor:pointer;margin-top:1.2em;
border-bottom:1px solid #bbb}details>summary .muted{font-weight:normal}
"""


@dataclass
class Doc:
    """A report being built: blocks rendered both to HTML and to Markdown."""

    title: str
    figdir: Path
    html: list[str] = field(default_factory=list)
    md: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    charts: int = 0
    """Interactive charts so far (plotly.js is written inline with the first)."""

    def summary(self, paragraphs: Sequence[Sequence[str]]) -> None:
        """The decision summary box (``id="decision-summary"``); call it before any other block."""
        if not paragraphs:
            return
        body = "".join(f"<p>{html.escape(' '.join(p))}</p>" for p in paragraphs)
        self.html.append(f'<section id="decision-summary"><h2>Decision summary</h2>{body}</section>')
        self.md += ["## Decision summary", ""]
        for p in paragraphs:
            self.md += [" ".join(p), ""]

    def chart(self, fig: Any, name: str, alt: str, png: "plt.Figure | None" = None) -> None:
        """An interactive Plotly chart in the HTML (hover, zoom); in the Markdown the static ``png``
        (a matplotlib figure saved as figures/<name>.png), when given."""
        from twin.report.interactive import to_div

        self.charts += 1
        div = to_div(fig, f"chart-{self.charts}", first=self.charts == 1)
        self.html.append(f'<div class="chart" role="img" aria-label="{html.escape(alt)}">{div}</div>')
        if png is not None:
            self.figdir.mkdir(parents=True, exist_ok=True)
            png.tight_layout()
            save_figure(png, self.figdir / f"{name}.png", dpi=100)
            plt.close(png)
            self.md += [f"![{alt}](figures/{name}.png)", ""]

    @contextlib.contextmanager
    def details(self, title: str, note: str = "") -> Iterator[None]:
        """A collapsed section (HTML ``<details>``, opened by a click) for long tables; in the Markdown
        an ordinary section. ``note``: a short word on what it holds, shown beside the title."""
        extra = f' <span class="muted">{html.escape(note)}</span>' if note else ""
        self.html.append(f"<details><summary>{html.escape(title)}{extra}</summary>")
        self.md += [f"## {title}", ""]
        try:
            yield
        finally:
            self.html.append("</details>")

    def h2(self, text: str) -> None:
        self.html.append(f"<h2>{html.escape(text)}</h2>")
        self.md += [f"## {text}", ""]

    def h3(self, text: str) -> None:
        self.html.append(f"<h3>{html.escape(text)}</h3>")
        self.md += [f"### {text}", ""]

    def p(self, text: str, cls: str = "") -> None:
        c = f' class="{cls}"' if cls else ""
        self.html.append(f"<p{c}>{html.escape(text)}</p>")
        self.md += [text, ""]

    def bullets(self, items: Sequence[str]) -> None:
        self.html.append("<ul>" + "".join(f"<li>{html.escape(i)}</li>" for i in items) + "</ul>")
        self.md += [f"- {i}" for i in items] + [""]

    def warn(self, text: str) -> None:
        self.warnings.append(text)
        self.html.append(f'<p class="warn">⚠ {html.escape(text)}</p>')
        self.md += [f"> **Warning:** {text}", ""]

    def table(self, df: pd.DataFrame) -> None:
        cells = df.astype(object).map(_cell) if hasattr(df, "map") else df.astype(object).applymap(_cell)
        head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(v)}</td>" for v in row) + "</tr>"
                       for row in cells.itertuples(index=False))
        self.html.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
        self.md.append("| " + " | ".join(str(c) for c in df.columns) + " |")
        self.md.append("|" + "---|" * len(df.columns))
        for row in cells.itertuples(index=False):
            self.md.append("| " + " | ".join(v.replace("|", "\\|") for v in row) + " |")
        self.md.append("")

    def figure(self, fig: "plt.Figure", name: str, alt: str) -> None:
        self.figdir.mkdir(parents=True, exist_ok=True)
        path = self.figdir / name
        fig.tight_layout()
        save_figure(fig, path, dpi=100)
        plt.close(fig)
        data = base64.b64encode(path.read_bytes()).decode("ascii")
        self.html.append(f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">')
        self.md += [f"![{alt}](figures/{name})", ""]

    def render_html(self) -> str:
        return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                f"<title>{html.escape(self.title)}</title><style>{CSS}</style></head><body>"
                f"<h1>{html.escape(self.title)}</h1>\n" + "\n".join(self.html) + "\n</body></html>\n")

    def render_md(self) -> str:
        return f"# {self.title}\n\n" + "\n".join(self.md) + "\n"


def _cell(v: Any) -> str:
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        return fmt(float(v))
    return str(v)


def ordered_metrics(metrics: Sequence[str]) -> list[str]:
    present = [m for m in HEADLINE if m in metrics]
    return present or sorted(metrics)


def version_warning(tables: dict[str, pd.DataFrame]) -> str | None:
    """A warning text when the replications were made by more than one twin version."""
    seen: dict[str, set[str]] = {}
    for lab, t in tables.items():
        if "twin_version" in t.columns:
            for v in t["twin_version"].astype(str).unique():
                seen.setdefault(v, set()).add(lab)
    if len(seen) > 1:
        parts = [f"{v} ({', '.join(sorted(labs))})" for v, labs in sorted(seen.items())]
        return ("replications from different twin versions are mixed: " + "; ".join(parts) +
                "; rerun with --overwrite for a consistent set")
    return None


def _summary_rows(summ: pd.DataFrame, metrics: Sequence[str], currency: str = "") -> pd.DataFrame:
    """Mean, interval and quantiles per metric, labelled and formatted by the catalogue."""
    s = summ.set_index("metric")
    rows = []
    for m in metrics:
        if m not in s.index:
            continue
        r = s.loc[m]

        def f(x: float) -> str:
            return catalogue.format_value(m, x, currency)

        rows.append({"metric": catalogue.label(m), "n": int(r["n"]), "mean": f(r["mean"]),
                     "95 % CI": catalogue.format_interval(m, r["ci_low"], r["ci_high"], currency),
                     "std": catalogue.format_value(m, r["std"], currency, delta=True).lstrip("+"),
                     "p5": f(r["p5"]), "p50": f(r["p50"]), "p95": f(r["p95"]),
                     "p50 95 % CI": catalogue.format_interval(m, r["p50_ci_low"], r["p50_ci_high"], currency)})
    return pd.DataFrame(rows)


def main_metrics(keys: Sequence[str]) -> list[str]:
    """The metrics of the grouped tables: catalogued by their exact key (not a per-part or per-cause
    pattern), not the size of the run."""
    out = []
    for k in keys:
        m = catalogue.find(k)
        if m is not None and "*" not in m.key and m.group != "scale":
            out.append(k)
    return out


def metric_groups(summaries: dict[str, pd.DataFrame], keys: Sequence[str]) -> list[tuple[str, list[str]]]:
    """The catalogue groups of the ``keys`` some option reports a mean of, each with its metrics."""
    idx = {k: s.set_index("metric") for k, s in summaries.items()}
    return catalogue.by_group([k for k in keys if any(k in i.index and i.loc[k, "mean"] == i.loc[k, "mean"]
                                                      for i in idx.values())])


def grouped_tables(doc: "Doc", summaries: dict[str, pd.DataFrame], paired: pd.DataFrame | None, reference: str,
                   currency: str, keys: Sequence[str]) -> list[tuple[str, list[str]]]:
    """One table per catalogue group: each option's mean with its 95 % CI and, with ``paired``, each
    option's paired difference to the reference. Returns the groups and their metrics."""
    idx = {k: s.set_index("metric") for k, s in summaries.items()}
    groups = metric_groups(summaries, keys)
    for g, ms in groups:
        rows = []
        for m in ms:
            row: dict[str, str] = {"metric": catalogue.label_with_unit(m, currency, table=True)}
            for k, i in idx.items():
                if m in i.index:
                    r = i.loc[m]
                    row[k] = (f"{catalogue.format_value(m, r['mean'], currency)} "
                              f"{catalogue.format_interval(m, r['ci_low'], r['ci_high'], currency)}")
                else:
                    row[k] = "–"
            if paired is not None:
                for k in summaries:
                    if k == reference:
                        continue
                    d = paired[(paired.metric == m) & (paired.variant == k)]
                    row[f"Δ {k} − {reference}"] = (
                        f"{catalogue.format_value(m, d['diff'].iloc[0], currency, True)} "
                        f"{catalogue.format_interval(m, d.ci_low.iloc[0], d.ci_high.iloc[0], currency, True)}"
                        if len(d) else "–")
            rows.append(row)
        doc.h3(f"{g.capitalize()}")
        doc.table(pd.DataFrame(rows))
    return groups


# ------------------------------------------------------------------------------- figures

def _axis(metric: str, currency: str = "") -> str:
    """Axis title of a metric: its label and unit (a fraction in %)."""
    return catalogue.label_with_unit(metric, currency)


def _scale(metric: str) -> float:
    """Plot a fraction in percent."""
    m = catalogue.find(metric)
    return 100.0 if m is not None and m.fmt == "percent" else 1.0


def fig_hist_ecdf(values: dict[str, np.ndarray], metric: str, currency: str = "") -> "plt.Figure":
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.4))
    k = _scale(metric)
    for lab, v in values.items():
        v = v[np.isfinite(v)] * k
        if not len(v):
            continue
        a1.hist(v, bins=min(30, max(5, len(v) // 3)), alpha=0.55, label=lab)
        xs = np.sort(v)
        a2.step(xs, np.arange(1, len(xs) + 1) / len(xs), where="post", label=lab)
    for ax in (a1, a2):
        ax.tick_params(axis="x", labelrotation=30, labelsize=8)
        ax.ticklabel_format(axis="x", style="plain", useOffset=False)
        ax.set_xlabel(_axis(metric, currency))
    a1.set_ylabel("replications")
    a1.set_title(f"Histogram of {catalogue.label(metric)}")
    a2.set_ylabel("fraction of replications ≤ x")
    a2.set_title(f"ECDF of {catalogue.label(metric)}")
    if len(values) > 1:
        a2.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.02, 0.5), frameon=False)
    return fig


def fig_failure_pareto(summ: pd.DataFrame) -> "plt.Figure | None":
    d = summ[summ.metric.str.startswith("failures.")].copy()
    if not len(d):
        return None
    d["part"] = d.metric.str.slice(len("failures.")).str.replace("_", " ")
    d = d.sort_values("mean", ascending=False)
    fig, ax = plt.subplots(figsize=(max(6.0, 0.55 * len(d) + 2.5), 4.0))
    err = np.vstack([d["mean"] - d["ci_low"], d["ci_high"] - d["mean"]])
    pareto_bars(ax, d["part"], d["mean"].to_numpy(), yerr=np.nan_to_num(err))
    ax.set_ylabel("failures per replication (mean)")
    ax.set_title("Failures by part type (Pareto, mean with 95 % CI)")
    return fig


def fig_goodput_breakdown(summ: pd.DataFrame) -> "plt.Figure | None":
    d = summ[summ.metric.str.fullmatch(r"goodput\.[a-z_]+")]  # the breakdown, not its finer buckets
    if not len(d):
        return None
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(d) + 1.2))
    labels = [catalogue.label(m) for m in d.metric]
    err = np.vstack([d["mean"] - d["ci_low"], d["ci_high"] - d["mean"]])
    ax.barh(labels, 100 * d["mean"], xerr=100 * np.nan_to_num(err), capsize=3, color="tab:blue")
    ax.invert_yaxis()
    ax.set_xlim(left=0)
    ax.set_xlabel("% of installed GPU-hours (mean, 95 % CI)")
    ax.set_title("Where the installed GPU-hours went")
    return fig


def fig_forest(paired: pd.DataFrame, metrics: Sequence[str], group: str = "", currency: str = "",
               unit: str | None = None) -> "plt.Figure | None":
    """Static forest plot of one group (for the Markdown report): Δ as % of the reference's mean, 95 % CI
    (``unit``: Δ in that unit, for temperatures)."""
    from twin.report.interactive import forest_rows

    d = forest_rows(paired, metrics, currency, absolute=unit is not None)
    d = d[np.isfinite(d.rel.to_numpy(dtype=float))]
    if not len(d):
        return None
    labels = list(dict.fromkeys(d.label))
    variants = list(dict.fromkeys(d.variant))
    fig, ax = plt.subplots(figsize=(9, 0.42 * len(labels) * max(1, len(variants)) ** 0.5 + 1.4))
    y0 = np.arange(len(labels))
    for j, (v, g) in enumerate(d.groupby("variant", sort=False)):
        off = (j - (len(variants) - 1) / 2) * 0.18
        y = np.array([labels.index(lb) for lb in g.label]) + off
        err = np.vstack([g.rel - g.rel_low, g.rel_high - g.rel])
        ax.errorbar(g.rel, y, xerr=np.nan_to_num(err), fmt="o", capsize=3, label=str(v))
    ax.axvline(0, color="k", lw=0.8)
    ax.set_yticks(y0)
    ax.set_yticklabels(labels, fontsize=8)
    ax.set_ylim(len(labels) - 0.5, -0.5)
    ref = str(paired.reference.iloc[0]) if len(paired) else ""
    ax.set_xlabel(f"Δ, {unit} (paired, 95 % CI)" if unit is not None else f"Δ as % of {ref}'s mean (paired, 95 % CI)")
    ax.set_title(f"{group}: paired difference vs {ref}", fontsize=10)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False, title="variant")
    return fig


def fig_sweep(tidy: pd.DataFrame, params: Sequence[str], metric: str, currency: str = "") -> "plt.Figure | None":
    d = tidy[tidy.metric == metric]
    if not len(d):
        return None
    x = params[0]
    others = list(params[1:])
    k = _scale(metric)
    fig, ax = plt.subplots(figsize=(7, 3.6))
    groups = d.groupby(others, sort=True) if others else [((), d)]
    numeric = pd.api.types.is_numeric_dtype(d[x])
    for key, g in groups:
        g = g.sort_values(x) if numeric else g
        xs = g[x].to_numpy() if numeric else np.arange(len(g))
        lab = ", ".join(f"{o}={kk}" for o, kk in zip(others, key if isinstance(key, tuple) else (key,))) or metric
        line, = ax.plot(xs, k * g["mean"], "o-", label=lab)
        ax.fill_between(xs, k * g["ci_low"].astype(float), k * g["ci_high"].astype(float), alpha=0.2,
                        color=line.get_color())
        if not numeric:
            ax.set_xticks(xs)
            ax.set_xticklabels(g[x].astype(str))
    ax.ticklabel_format(axis="y", style="plain", useOffset=False)
    ax.set_xlabel(x)
    ax.set_ylabel(_axis(metric, currency))
    ax.set_title(f"{catalogue.label(metric)} (mean, 95 % CI band)")
    if others:
        ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.02, 0.5), frameon=False)
    return fig


def fig_tornado(ranking: pd.DataFrame, metric: str, top: int = 20, currency: str = "") -> "plt.Figure | None":
    d = ranking[ranking.metric == metric].sort_values("rank").head(top)
    if not len(d):
        return None
    k = _scale(metric)
    fig, ax = plt.subplots(figsize=(8, 0.42 * len(d) + 1.3))
    y = np.arange(len(d))
    ax.barh(y, k * d["delta_low"], color="tab:blue", alpha=0.8, label="low")
    ax.barh(y, k * d["delta_high"], color="tab:orange", alpha=0.8, label="high")
    for yy, (lo, lo1, lo2, hi, hi1, hi2) in zip(y, k * d[["delta_low", "delta_low_ci_low", "delta_low_ci_high",
                                                         "delta_high", "delta_high_ci_low",
                                                         "delta_high_ci_high"]].to_numpy(dtype=float)):
        ax.plot([lo1, lo2], [yy + 0.15, yy + 0.15], "k-", lw=1)
        ax.plot([hi1, hi2], [yy - 0.15, yy - 0.15], "k-", lw=1)
    ax.set_yticks(y)
    ax.set_yticklabels([f"{f} ({lo} / {hi})" for f, lo, hi in zip(d.factor, d.low, d.high)], fontsize=8)
    ax.invert_yaxis()
    ax.axvline(0, color="k", lw=0.8)
    unit = catalogue.unit_label(metric, currency)
    unit = "percentage points" if unit == "%" else unit
    ax.set_xlabel(f"Δ {catalogue.label(metric)} vs baseline ({unit}; paired, CRN; black: 95 % CI)")
    ax.set_title(f"Tornado: Δ {catalogue.label(metric)}")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    return fig


# ------------------------------------------------------------------------------- sections

def _currency(folder: Path) -> str:
    from twin.report.cost_figures import currency_of

    return currency_of(folder)


def _montecarlo(doc: Doc, folder: Path, meta: dict[str, Any]) -> None:
    summary = _read_json(folder / "summary.json")
    table = _read_table(folder / "replications.parquet")
    summ = _read_table(folder / "summary.parquet")
    cur = _currency(folder)
    w = version_warning({meta["scenario"]: table})
    if w:
        doc.warn(w)
    doc.h2("Scenario")
    doc.bullets([
        f"scenario {summary['scenario']}, hash {summary['scenario_hash']}, seed {summary['seed']}",
        f"horizon {summary.get('horizon_days', float('nan')):g} days, {summary.get('nodes')} nodes, "
        f"{summary.get('gpus')} GPUs",
        f"{summary['replications']} replications "
        f"(SeedSequence({summary['seed']}) children 0..{summary['replications'] - 1})",
        "intervals: 95 % Student-t for means (cut to the values a metric can take); "
        f"{summary.get('quantile_intervals', 'percentile bootstrap')} for quantiles",
        "versions: " + ", ".join(f"{k} {v}" for k, v in sorted(summary.get("versions", {}).items())),
    ])
    if summary.get("target_ci"):
        doc.p(f"target half-widths {summary['target_ci']}: " + ("met" if summary.get("target_met") else "NOT met"))
    if summary.get("advice"):
        doc.h2("Advisories")
        doc.p("What the scenario's own numbers imply in closed form (twin.scenario.advice); they change no "
              "result:")
        doc.bullets(list(summary["advice"]))
    doc.h2("Metrics by group (mean, 95 % CI)")
    grouped_tables(doc, {meta["scenario"]: summ}, None, meta["scenario"], cur, main_metrics(list(summ.metric)))
    doc.h2("Distributions over replications")
    from twin.report.interactive import ecdf

    for m in DIST_METRICS:
        if m in table.columns:
            v = {meta["scenario"]: table[m].to_numpy(dtype=float)}
            doc.chart(ecdf(v, m, cur), f"dist_{m}", f"histogram and ECDF of {catalogue.label(m)}",
                      fig_hist_ecdf(v, m, cur))
    fig = fig_failure_pareto(summ)
    if fig is not None:
        doc.h2("Failures")
        doc.figure(fig, "failure_pareto.png", "failure Pareto")
    fig = fig_goodput_breakdown(summ)
    if fig is not None:
        doc.h2("Goodput breakdown")
        doc.figure(fig, "goodput_breakdown.png", "goodput breakdown")
    from twin.report import cost_figures  # cost section (issue 9): only when the scenario has costs

    cost_figures.montecarlo_section(doc, meta["scenario"], summ, folder)
    rows = _summary_rows(summ, [m for _, ms in catalogue.by_group(list(summ.metric)) for m in ms], cur)
    with doc.details("All metrics", f"({len(rows)} rows; click to open)"):
        doc.table(rows)


def _compare(doc: Doc, folder: Path, meta: dict[str, Any]) -> None:
    summ = _read_table(folder / "summaries.parquet")
    paired = _read_table(folder / "paired.parquet")
    win = _read_table(folder / "winners.parquet")
    labels = [v["label"] for v in meta["variants"]]
    tables = {}
    for v in meta["variants"]:
        p = (folder / v["folder"]) / "replications.parquet"
        if p.is_file():
            tables[v["label"]] = _read_table(p)
        else:
            doc.warn(f"replications of {v['label']} not found at {p}; distributions are left out")
    cur = _currency(folder / meta["variants"][0]["folder"])
    w = version_warning(tables)
    if w:
        doc.warn(w)
    ref = meta["reference"]
    keys = main_metrics(list(summ.metric.unique()))
    per_option = {k: summ[summ.variant == k] for k in labels}
    groups = metric_groups(per_option, keys)
    from twin.report.forest_section import forest_section

    dec = folder / "decision-summary.json"
    forest_section(doc, paired, groups, ref, cur, fig_forest, _read_json(dec) if dec.is_file() else None)
    from twin.report import cost_figures  # cost breakdown and break-even (issue 9), when present

    cost_figures.compare_section(doc, folder, summ, labels)
    from twin.report.interactive import ecdf

    shown = False
    for m in DIST_METRICS:
        if tables and all(m in t.columns for t in tables.values()):
            if not shown:
                doc.h2("Distributions over replications")
                shown = True
            v = {k: t[m].to_numpy(dtype=float) for k, t in tables.items()}
            doc.chart(ecdf(v, m, cur), f"dist_{m}", f"histogram and ECDF of {catalogue.label(m)}",
                      fig_hist_ecdf(v, m, cur))
    doc.h2("Variants")
    doc.p(meta.get("crn", ""))
    for n in meta.get("notes", [])[1:]:
        doc.p(n.strip())
    doc.table(pd.DataFrame([{"variant": v["label"], "scenario": v["scenario"], "hash": v["scenario_hash"],
                             "file": v["source"]} for v in meta["variants"]]))
    wk = win[win.metric.isin(keys)]
    with doc.details("Winners", f"({len(wk)} metrics; click to open)"):
        doc.p("Best mean per metric with a preferred direction; margin is the paired difference to the runner-up "
              "(clear when its 95 % CI excludes zero).")
        doc.table(pd.DataFrame({
            "metric": [catalogue.label_with_unit(m, cur, table=True) for m in wk.metric], "better": wk.better,
            "winner": wk.winner,
            "winner mean": [catalogue.format_value(m, x, cur) for m, x in zip(wk.metric, wk.winner_mean)],
            "runner-up": wk.runner_up,
            "margin": [catalogue.format_value(m, x, cur, True) for m, x in zip(wk.metric, wk.margin)],
            "95 % CI": [catalogue.format_interval(m, a, b, cur, True)
                        for m, a, b in zip(wk.metric, wk.margin_ci_low, wk.margin_ci_high)],
            "clear": wk.clear}))
    with doc.details(f"Metrics by group: mean (95 % CI) and paired difference vs {ref}",
                     f"({sum(len(ms) for _, ms in groups)} metrics in {len(groups)} tables; click to open)"):
        doc.p("Paired per replication under common random numbers; a fraction's difference is in percentage "
              "points (pp).")
        grouped_tables(doc, per_option, paired, ref, cur, keys)
    order = {m: i for i, (_, ms) in enumerate(catalogue.by_group(list(paired.metric.unique()))) for m in ms}
    pt = paired.assign(_o=paired.metric.map(order)).sort_values(["_o", "metric"], kind="stable")
    with doc.details(f"All paired differences vs {ref}", f"({len(pt)} rows; click to open)"):
        doc.table(pd.DataFrame({
            "metric": [catalogue.label_with_unit(m, cur, table=True) for m in pt.metric], "variant": pt.variant,
            "Δ mean": [catalogue.format_value(m, x, cur, True) for m, x in zip(pt.metric, pt["diff"])],
            "95 % CI": [catalogue.format_interval(m, a, b, cur, True)
                        for m, a, b in zip(pt.metric, pt.ci_low, pt.ci_high)],
            "variance reduction": pt.variance_reduction,
            "half-width CRN": [catalogue.format_value(m, (b - a) / 2, cur, True).lstrip("+")
                               for m, a, b in zip(pt.metric, pt.ci_low, pt.ci_high)],
            "half-width independent": [catalogue.format_value(m, x, cur, True).lstrip("+")
                                       for m, x in zip(pt.metric, pt.independent_half_width)]}))


def _warn_mixed_versions(doc: Doc, folder: Path, subfolders: dict[str, str]) -> None:
    """Warn when the replications of an experiment's sub-experiments come from different versions."""
    tables = {}
    for label, sub in subfolders.items():
        p = folder / sub / "replications.parquet"
        if p.is_file():
            tables[label] = _read_table(p, columns=["twin_version"])
    w = version_warning(tables)
    if w:
        doc.warn(w)


def _sweep(doc: Doc, folder: Path, meta: dict[str, Any]) -> None:
    tidy = _read_table(folder / "sweep.parquet")
    params = [p["path"] for p in meta["params"]]
    _warn_mixed_versions(doc, folder, {f"point {pt['point']}": pt["folder"] for pt in meta["points"]})
    cur = _currency(folder / meta["points"][0]["folder"]) if meta.get("points") else ""
    doc.h2("Sweep")
    doc.bullets([f"scenario {meta['scenario']} (hash {meta['scenario_hash']}), seed {meta['seed']} at every point "
                 "(common random numbers)", f"{meta['replications']} replications per point",
                 *[f"{p['path']} ∈ {{{', '.join(p['values'])}}}" for p in meta["params"]],
                 *([f"--set {s}" for s in meta.get("set", [])])])
    ms = ordered_metrics(list(tidy.metric.unique()))
    doc.h2("Curves")
    from twin.report.interactive import sweep_curve

    for m in ms:
        fig = fig_sweep(tidy, params, m, cur)
        if fig is not None:
            doc.chart(sweep_curve(tidy, params, m, cur), f"sweep_{m}", f"sweep of {catalogue.label(m)}", fig)
    from twin.report import cost_figures  # decision, frontier, cost breakdown (issue 9), when present

    cost_figures.sweep_section(doc, folder, meta, tidy)
    t = tidy[tidy.metric.isin(ms)]
    out = t[["point", *params]].copy()
    out["metric"] = [catalogue.label_with_unit(m, cur, table=True) for m in t.metric]
    for c in ("mean", "p5", "p50", "p95"):
        out[c] = [catalogue.format_value(m, x, cur) for m, x in zip(t.metric, t[c])]
    out.insert(out.columns.get_loc("p5"), "95 % CI",
               [catalogue.format_interval(m, a, b, cur) for m, a, b in zip(t.metric, t.ci_low, t.ci_high)])
    with doc.details("Table", f"({len(out)} rows; click to open)"):
        doc.table(out)


def _sensitivity(doc: Doc, folder: Path, meta: dict[str, Any]) -> None:
    ranking = _read_table(folder / "ranking.parquet")
    _warn_mixed_versions(doc, folder, {"baseline": meta["baseline_folder"],
                                       **{f"{v['factor']}:{v['level']}": v["folder"] for v in meta["variants"]}})
    cur = _currency(folder / meta["baseline_folder"])
    doc.h2("Sensitivity")
    doc.bullets([f"scenario {meta['scenario']} (hash {meta['scenario_hash']}), seed {meta['seed']}; one factor at "
                 "a time, low and high, paired against the baseline under common random numbers",
                 f"{meta['replications']} replications per variant",
                 *([f"--factor {meta['factor']:g}: failure means (MTBF, Weibull scale) and repair-time means "
                    f"scaled by 1/{meta['factor']:g} and {meta['factor']:g}"] if meta.get("factor") else [])])
    for m in meta["metrics"]:
        fig = fig_tornado(ranking, m, currency=cur)
        if fig is not None:
            from twin.report.interactive import tornado

            doc.h2(f"Tornado: Δ {catalogue.label(m)}")
            doc.chart(tornado(ranking, m, cur), f"tornado_{m}", f"tornado of {catalogue.label(m)}", fig)
            d = ranking[ranking.metric == m]

            def f(x: float) -> str:
                return catalogue.format_value(m, x, cur, True)

            doc.table(pd.DataFrame({
                "rank": d["rank"], "factor": d.factor, "low": d.low, "high": d.high, "Δ low": [f(x) for x in d.delta_low],
                "Δ low 95 % CI": [catalogue.format_interval(m, a, b, cur, True)
                                  for a, b in zip(d.delta_low_ci_low, d.delta_low_ci_high)],
                "Δ high": [f(x) for x in d.delta_high],
                "Δ high 95 % CI": [catalogue.format_interval(m, a, b, cur, True)
                                   for a, b in zip(d.delta_high_ci_low, d.delta_high_ci_high)],
                "swing": [f(x).lstrip("+") for x in d.swing]}))


SECTIONS = {"montecarlo": _montecarlo, "compare": _compare, "sweep": _sweep, "sensitivity": _sensitivity}

read_json = _read_json
read_table = _read_table


def read_kind(folder: Path | str) -> str:
    """The kind of the experiment stored in ``folder``, after the checks of :func:`build_report`
    (bad input, exit 2, when the folder is missing, damaged or incomplete)."""
    return str(_checked(Path(folder))["kind"])


def _checked(folder: Path) -> dict[str, Any]:
    if not folder.is_dir():
        raise InputError(str(folder), "", "results folder not found")
    meta = _read_json(folder / "experiment.json")
    kind = meta.get("kind")
    if kind == "forecast":
        raise InputError(str(folder), "", "a forecast's report is written by 'twin forecast': run the same command "
                         "again (its stored replications are reused)")
    if kind == "decide":  # twin decide (issue 46): its own report, twin.report.uncertain
        return meta
    if kind not in SECTIONS:
        raise InputError(str(folder / "experiment.json"), "kind", f"unknown experiment kind {kind!r}; "
                         f"allowed: {sorted(SECTIONS)}")
    if kind == "montecarlo" and not (folder / "COMPLETE").is_file():
        raise InputError(str(folder), "", "the Monte Carlo is not complete (no COMPLETE marker); run the same "
                         "command again to resume it first")
    return meta


def build_report(folder: Path | str) -> tuple[Path, Path, list[str]]:
    """Write ``report.html`` and ``report.md`` (+ ``figures/``) in an experiment folder: the decision
    summary first (from ``decision-summary.json`` when the experiment wrote one), then the sections.

    Returns (html path, markdown path, warnings)."""
    folder = Path(folder)
    meta = _checked(folder)
    kind = meta["kind"]
    if kind == "decide":
        raise InputError(str(folder), "", "a twin decide folder's report is built by twin.report.uncertain "
                         "(twin report FOLDER does it)")
    if kind == "compare":
        title = "Comparison: " + " vs ".join(v["label"] for v in meta.get("variants", []))
    else:
        word = {"montecarlo": "Monte Carlo", "sweep": "Sweep", "sensitivity": "Sensitivity"}[kind]
        title = f"{word}: {meta.get('scenario')}"
    doc = Doc(title, folder / "figures")
    if (folder / "decision-summary.json").is_file():
        from twin.report.summary import sentences

        doc.summary(sentences(_read_json(folder / "decision-summary.json")))
    SECTIONS[kind](doc, folder, meta)
    from twin import __version__
    from twin.atomic import atomic_write_text

    doc.p(f"Report built by twin {__version__} from the stored tables in {folder}.", cls="muted")
    h = folder / "report.html"
    m = folder / "report.md"
    atomic_write_text(h, doc.render_html())
    atomic_write_text(m, doc.render_md())
    return h, m, doc.warnings
