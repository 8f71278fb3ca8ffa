"""Experiment reports: one self-contained HTML file (figures embedded as base64 PNG, inline CSS,
no JavaScript, nothing fetched) and a Markdown twin that links the same figures in ``figures/``.

Built only from what an experiment stored (parquet and json), so ``twin report RESULTS_DIR``
rebuilds it at any time. Kinds (``experiment.json`` → ``kind``): montecarlo, compare, sweep,
sensitivity. A warning is shown when replications were made by different twin versions.
"""

from __future__ import annotations

import base64
import html
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pyarrow as pa  # noqa: E402

from twin.errors import InputError  # noqa: E402
from twin.report.figures import pareto_bars  # noqa: E402
from twin.report.numbers import fmt  # noqa: E402

HEADLINE = ("node_availability", "fleet_capacity_availability", "goodput", "useful_gpu_hours", "ettr.max_job",
            "failures", "node_down_hours", "interruptions", "stockouts", "energy.it_kwh", "pue",
            "cost.total", "cost.per_useful_gpu_hour")
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
"""


@dataclass
class Doc:
    """A report being built: blocks rendered both to HTML and to Markdown."""

    title: str
    figdir: Path
    html: list[str] = field(default_factory=list)
    md: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def h2(self, text: str) -> None:
        self.html.append(f"<h2>{html.escape(text)}</h2>")
        self.md += [f"## {text}", ""]

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
        fig.savefig(path, dpi=100)
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


def _read_json(path: Path) -> dict[str, Any]:
    """A stored JSON mapping of an experiment folder; a missing or damaged one is bad input (exit 2)."""
    if not path.is_file():
        raise InputError(str(path.parent), "", f"not an experiment results folder (no {path.name})")
    try:
        obj = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(str(path), "", f"damaged: not valid JSON ({exc}); recompute the experiment") from None
    if not isinstance(obj, dict):
        raise InputError(str(path), "", f"damaged: a mapping expected, got {type(obj).__name__}; recompute the "
                         "experiment")
    return obj


def _read_table(path: Path, columns: list[str] | None = None) -> pd.DataFrame:
    """A stored Parquet table of an experiment folder; a missing or damaged one is bad input (exit 2)."""
    if not path.is_file():
        raise InputError(str(path.parent), "", f"incomplete or damaged experiment folder: {path.name} is missing; "
                         "recompute the experiment")
    try:
        return pd.read_parquet(path, columns=columns)
    except (pa.ArrowException, OSError) as exc:
        raise InputError(str(path), "", f"damaged: not a readable Parquet table ({exc}); recompute the "
                         "experiment") from None


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


def _summary_rows(summ: pd.DataFrame, metrics: Sequence[str]) -> pd.DataFrame:
    s = summ.set_index("metric")
    rows = []
    for m in metrics:
        if m not in s.index:
            continue
        r = s.loc[m]
        rows.append({"metric": m, "n": int(r["n"]), "mean": r["mean"],
                     "95 % CI": f"[{fmt(r['ci_low'])}, {fmt(r['ci_high'])}]", "std": r["std"],
                     "p5": r["p5"], "p50": r["p50"], "p95": r["p95"],
                     "p50 95 % CI": f"[{fmt(r['p50_ci_low'])}, {fmt(r['p50_ci_high'])}]"})
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------- figures

def fig_hist_ecdf(values: dict[str, np.ndarray], metric: str) -> "plt.Figure":
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.4))
    for lab, v in values.items():
        v = v[np.isfinite(v)]
        if not len(v):
            continue
        a1.hist(v, bins=min(30, max(5, len(v) // 3)), alpha=0.55, label=lab)
        xs = np.sort(v)
        a2.step(xs, np.arange(1, len(xs) + 1) / len(xs), where="post", label=lab)
    for ax in (a1, a2):
        ax.tick_params(axis="x", labelrotation=30, labelsize=8)
    a1.set_xlabel(metric)
    a1.set_ylabel("replications")
    a1.set_title(f"Histogram of {metric}")
    a2.set_xlabel(metric)
    a2.set_ylabel("fraction ≤ x")
    a2.set_title(f"ECDF of {metric}")
    if len(values) > 1:
        a1.legend(fontsize=7)
        a2.legend(fontsize=7)
    return fig


def fig_failure_pareto(summ: pd.DataFrame) -> "plt.Figure | None":
    d = summ[summ.metric.str.startswith("failures.")].copy()
    if not len(d):
        return None
    d["part"] = d.metric.str.slice(len("failures."))
    d = d.sort_values("mean", ascending=False)
    fig, ax = plt.subplots(figsize=(8, 3.6))
    err = np.vstack([d["mean"] - d["ci_low"], d["ci_high"] - d["mean"]])
    pareto_bars(ax, d["part"], d["mean"].to_numpy(), yerr=np.nan_to_num(err))
    ax.set_ylabel("mean failures per replication")
    ax.set_title("Failures by part type (Pareto, mean with 95 % CI)")
    return fig


def fig_goodput_breakdown(summ: pd.DataFrame) -> "plt.Figure | None":
    d = summ[summ.metric.str.fullmatch(r"goodput\.[a-z_]+")]  # the breakdown, not its finer buckets
    if not len(d):
        return None
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(d) + 1.2))
    labels = d.metric.str.slice(len("goodput."))
    err = np.vstack([d["mean"] - d["ci_low"], d["ci_high"] - d["mean"]])
    ax.barh(labels, 100 * d["mean"], xerr=100 * np.nan_to_num(err), capsize=3, color="tab:blue")
    ax.invert_yaxis()
    ax.set_xlabel("% of installed GPU-hours (mean, 95 % CI)")
    ax.set_title("Where the installed GPU-hours went")
    return fig


def fig_forest(paired: pd.DataFrame, metrics: Sequence[str]) -> "plt.Figure | None":
    ms = [m for m in metrics if m in set(paired.metric)]
    if not ms:
        return None
    variants = list(dict.fromkeys(paired.variant))
    fig, axes = plt.subplots(len(ms), 1, figsize=(8, 0.55 * len(variants) * len(ms) + 0.9 * len(ms)), squeeze=False)
    for ax, m in zip(axes[:, 0], ms):
        d = paired[paired.metric == m].set_index("variant").reindex(variants)
        y = np.arange(len(variants))
        err = np.vstack([d["diff"] - d["ci_low"], d["ci_high"] - d["diff"]])
        ax.errorbar(d["diff"], y, xerr=np.nan_to_num(err), fmt="o", capsize=4, color="tab:blue")
        ax.axvline(0, color="k", lw=0.8)
        ax.set_yticks(y)
        ax.set_yticklabels(variants)
        ax.set_ylim(len(variants) - 0.5, -0.5)
        ax.set_title(f"Δ {m} vs {paired.reference.iloc[0]} (paired, 95 % CI)", fontsize=9)
    return fig


def fig_sweep(tidy: pd.DataFrame, params: Sequence[str], metric: str) -> "plt.Figure | None":
    d = tidy[tidy.metric == metric]
    if not len(d):
        return None
    x = params[0]
    others = list(params[1:])
    fig, ax = plt.subplots(figsize=(7, 3.6))
    groups = d.groupby(others, sort=True) if others else [((), d)]
    numeric = pd.api.types.is_numeric_dtype(d[x])
    for key, g in groups:
        g = g.sort_values(x) if numeric else g
        xs = g[x].to_numpy() if numeric else np.arange(len(g))
        lab = ", ".join(f"{o}={k}" for o, k in zip(others, key if isinstance(key, tuple) else (key,))) or metric
        line, = ax.plot(xs, g["mean"], "o-", label=lab)
        ax.fill_between(xs, g["ci_low"].astype(float), g["ci_high"].astype(float), alpha=0.2, color=line.get_color())
        if not numeric:
            ax.set_xticks(xs)
            ax.set_xticklabels(g[x].astype(str))
    ax.set_xlabel(x)
    ax.set_ylabel(metric)
    ax.set_title(f"{metric} (mean, 95 % CI band)")
    if others:
        ax.legend(fontsize=7)
    return fig


def fig_tornado(ranking: pd.DataFrame, metric: str, top: int = 20) -> "plt.Figure | None":
    d = ranking[ranking.metric == metric].sort_values("rank").head(top)
    if not len(d):
        return None
    fig, ax = plt.subplots(figsize=(8, 0.42 * len(d) + 1.3))
    y = np.arange(len(d))
    ax.barh(y, d["delta_low"], color="tab:blue", alpha=0.8, label="low")
    ax.barh(y, d["delta_high"], color="tab:orange", alpha=0.8, label="high")
    for yy, (lo, lo1, lo2, hi, hi1, hi2) in zip(y, d[["delta_low", "delta_low_ci_low", "delta_low_ci_high",
                                                     "delta_high", "delta_high_ci_low",
                                                     "delta_high_ci_high"]].to_numpy(dtype=float)):
        ax.plot([lo1, lo2], [yy + 0.15, yy + 0.15], "k-", lw=1)
        ax.plot([hi1, hi2], [yy - 0.15, yy - 0.15], "k-", lw=1)
    ax.set_yticks(y)
    ax.set_yticklabels([f"{f} ({lo} / {hi})" for f, lo, hi in zip(d.factor, d.low, d.high)], fontsize=8)
    ax.invert_yaxis()
    ax.axvline(0, color="k", lw=0.8)
    ax.set_xlabel(f"Δ {metric} vs baseline (paired, CRN; black: 95 % CI)")
    ax.set_title(f"Tornado: Δ {metric}")
    ax.legend(fontsize=7)
    return fig


# ------------------------------------------------------------------------------- sections

def _montecarlo(doc: Doc, folder: Path, meta: dict[str, Any]) -> None:
    summary = _read_json(folder / "summary.json")
    table = _read_table(folder / "replications.parquet")
    summ = _read_table(folder / "summary.parquet")
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
    doc.h2("Headline metrics")
    doc.table(_summary_rows(summ, ordered_metrics(list(summ.metric))))
    doc.h2("Distributions over replications")
    for m in DIST_METRICS:
        if m in table.columns:
            doc.figure(fig_hist_ecdf({meta["scenario"]: table[m].to_numpy(dtype=float)}, m), f"dist_{m}.png",
                       f"histogram and ECDF of {m}")
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
    doc.h2("All metrics")
    doc.table(_summary_rows(summ, list(summ.metric)))


def _compare(doc: Doc, folder: Path, meta: dict[str, Any]) -> None:
    summ = _read_table(folder / "summaries.parquet")
    paired = _read_table(folder / "paired.parquet")
    win = _read_table(folder / "winners.parquet")
    tables = {}
    for v in meta["variants"]:
        p = (folder / v["folder"]) / "replications.parquet"
        if p.is_file():
            tables[v["label"]] = _read_table(p)
        else:
            doc.warn(f"replications of {v['label']} not found at {p}; distributions are left out")
    w = version_warning(tables)
    if w:
        doc.warn(w)
    doc.h2("Variants")
    doc.p(meta.get("crn", ""))
    for n in meta.get("notes", [])[1:]:
        doc.p(n.strip())
    doc.table(pd.DataFrame([{"variant": v["label"], "scenario": v["scenario"], "hash": v["scenario_hash"],
                             "file": v["source"]} for v in meta["variants"]]))
    ms = ordered_metrics(list(summ.metric.unique()))
    doc.h2("Headline metrics per variant")
    rows = []
    for m in ms:
        for lab in [v["label"] for v in meta["variants"]]:
            r = summ[(summ.variant == lab) & (summ.metric == m)]
            if len(r):
                r = r.iloc[0]
                rows.append({"metric": m, "variant": lab, "mean": r["mean"],
                             "95 % CI": f"[{fmt(r['ci_low'])}, {fmt(r['ci_high'])}]",
                             "p5": r["p5"], "p50": r["p50"], "p95": r["p95"]})
    doc.table(pd.DataFrame(rows))
    doc.h2(f"Paired differences vs {meta['reference']}")
    fig = fig_forest(paired, ms)
    if fig is not None:
        doc.figure(fig, "forest.png", "forest plot of paired differences")
    pt = paired[paired.metric.isin(ms)]
    pt = pt.assign(_o=pt.metric.map({m: i for i, m in enumerate(ms)})).sort_values(["_o"], kind="stable")
    doc.table(pd.DataFrame({"metric": pt.metric, "variant": pt.variant, "Δ mean": pt["diff"],
                            "95 % CI": [f"[{fmt(a)}, {fmt(b)}]" for a, b in zip(pt.ci_low, pt.ci_high)],
                            "variance reduction": pt.variance_reduction,
                            "half-width CRN": (pt.ci_high - pt.ci_low) / 2,
                            "half-width independent": pt.independent_half_width}))
    doc.h2("Winners")
    doc.p("Best mean per metric with a preferred direction; margin is the paired difference to the runner-up "
          "(clear when its 95 % CI excludes zero).")
    doc.table(win)
    from twin.report import cost_figures  # cost breakdown and break-even (issue 9), when present

    cost_figures.compare_section(doc, folder, summ, [v["label"] for v in meta["variants"]])
    for m in DIST_METRICS:
        if tables and all(m in t.columns for t in tables.values()):
            doc.figure(fig_hist_ecdf({k: t[m].to_numpy(dtype=float) for k, t in tables.items()}, m),
                       f"dist_{m}.png", f"histogram and ECDF of {m}")


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
    doc.h2("Sweep")
    doc.bullets([f"scenario {meta['scenario']} (hash {meta['scenario_hash']}), seed {meta['seed']} at every point "
                 "(common random numbers)", f"{meta['replications']} replications per point",
                 *[f"{p['path']} ∈ {{{', '.join(p['values'])}}}" for p in meta["params"]],
                 *([f"--set {s}" for s in meta.get("set", [])])])
    ms = ordered_metrics(list(tidy.metric.unique()))
    doc.h2("Curves")
    for m in ms:
        fig = fig_sweep(tidy, params, m)
        if fig is not None:
            doc.figure(fig, f"sweep_{m}.png", f"sweep of {m}")
    from twin.report import cost_figures  # decision, frontier, cost breakdown (issue 9), when present

    cost_figures.sweep_section(doc, folder, meta, tidy)
    doc.h2("Table")
    t = tidy[tidy.metric.isin(ms)]
    out = t[["point", *params, "metric", "mean"]].copy()
    out["95 % CI"] = [f"[{fmt(a)}, {fmt(b)}]" for a, b in zip(t.ci_low, t.ci_high)]
    doc.table(pd.concat([out, t[["p5", "p50", "p95"]]], axis=1))


def _sensitivity(doc: Doc, folder: Path, meta: dict[str, Any]) -> None:
    ranking = _read_table(folder / "ranking.parquet")
    _warn_mixed_versions(doc, folder, {"baseline": meta["baseline_folder"],
                                       **{f"{v['factor']}:{v['level']}": v["folder"] for v in meta["variants"]}})
    doc.h2("Sensitivity")
    doc.bullets([f"scenario {meta['scenario']} (hash {meta['scenario_hash']}), seed {meta['seed']}; one factor at "
                 "a time, low and high, paired against the baseline under common random numbers",
                 f"{meta['replications']} replications per variant",
                 *([f"--factor {meta['factor']:g}: failure means (MTBF, Weibull scale) and repair-time means "
                    f"scaled by 1/{meta['factor']:g} and {meta['factor']:g}"] if meta.get("factor") else [])])
    for m in meta["metrics"]:
        fig = fig_tornado(ranking, m)
        if fig is not None:
            doc.h2(f"Tornado: Δ {m}")
            doc.figure(fig, f"tornado_{m}.png", f"tornado of {m}")
            d = ranking[ranking.metric == m]
            doc.table(pd.DataFrame({
                "rank": d["rank"], "factor": d.factor, "low": d.low, "high": d.high, "Δ low": d.delta_low,
                "Δ low 95 % CI": [f"[{fmt(a)}, {fmt(b)}]" for a, b in zip(d.delta_low_ci_low, d.delta_low_ci_high)],
                "Δ high": d.delta_high,
                "Δ high 95 % CI": [f"[{fmt(a)}, {fmt(b)}]" for a, b in zip(d.delta_high_ci_low, d.delta_high_ci_high)],
                "swing": d.swing}))


SECTIONS = {"montecarlo": _montecarlo, "compare": _compare, "sweep": _sweep, "sensitivity": _sensitivity}


def build_report(folder: Path | str) -> tuple[Path, Path, list[str]]:
    """Write ``report.html`` and ``report.md`` (+ ``figures/``) in an experiment folder.

    Returns (html path, markdown path, warnings)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(str(folder), "", "results folder not found")
    meta = _read_json(folder / "experiment.json")
    kind = meta.get("kind")
    if kind == "forecast":
        raise InputError(str(folder), "", "a forecast's report is written by 'twin forecast': run the same command "
                         "again (its stored replications are reused)")
    if kind not in SECTIONS:
        raise InputError(str(folder / "experiment.json"), "kind", f"unknown experiment kind {kind!r}; "
                         f"allowed: {sorted(SECTIONS)}")
    if kind == "montecarlo" and not (folder / "COMPLETE").is_file():
        raise InputError(str(folder), "", "the Monte Carlo is not complete (no COMPLETE marker); run the same "
                         "command again to resume it first")
    if kind == "compare":
        title = "Comparison: " + " vs ".join(v["label"] for v in meta.get("variants", []))
    else:
        word = {"montecarlo": "Monte Carlo", "sweep": "Sweep", "sensitivity": "Sensitivity"}[kind]
        title = f"{word}: {meta.get('scenario')}"
    doc = Doc(title, folder / "figures")
    SECTIONS[kind](doc, folder, meta)
    from twin import __version__
    from twin.atomic import atomic_write_text

    doc.p(f"Report built by twin {__version__} from the stored tables in {folder}.", cls="muted")
    h = folder / "report.html"
    m = folder / "report.md"
    atomic_write_text(h, doc.render_html())
    atomic_write_text(m, doc.render_md())
    return h, m, doc.warnings
