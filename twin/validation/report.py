"""Validation report: the terminal table, Markdown and self-contained HTML (figures embedded as
base64 PNG), written atomically into one folder.

The table has one row per quantity: case, quantity, reference, simulated mean, its 95 % interval
(CI of the mean; for field counts the Poisson prediction interval; for deterministic cases the
numerical tolerance), the interval at the family-wise (Bonferroni) level the verdict uses, and the
verdict.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Sequence

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from twin.atomic import atomic_folder  # noqa: E402
from twin.experiment.store import clean_json, python_info, versions  # noqa: E402
from twin.report.html import Doc  # noqa: E402
from twin.validation.framework import CaseResult  # noqa: E402
from twin.validation.suite import SWEEP_CONFIDENCE, SuiteResult, SweepRow  # noqa: E402

DISPLAY_CONFIDENCE = 0.95


def num(x: float) -> str:
    """Five significant digits; en dash for NaN."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if math.isinf(x):
        return "∞" if x > 0 else "−∞"
    if x == 0:
        return "0"
    a = abs(x)
    if 1e-4 <= a < 1e6:
        s = f"{x:.5g}"
    else:
        s = f"{x:.4e}"
    return s


def _ref(r: CaseResult) -> str:
    if r.ref_text:
        return r.ref_text
    if r.ref_low is not None:
        return f"[{num(r.ref_low)}, {num(r.reference)}]"
    return num(r.reference)


def _interval(r: CaseResult) -> str:
    if r.kind == "exact":
        return f"± {num((r.ci_high - r.ci_low) / 2)}"
    return f"[{num(r.ci_low)}, {num(r.ci_high)}]"


def rows(suite: SuiteResult) -> pd.DataFrame:
    """The table as a DataFrame of strings (one row per quantity)."""
    out = []
    for r in suite.results:
        d = r.at(DISPLAY_CONFIDENCE)
        kind = {"CI": "CI", "PI": "PI", "exact": "tol"}[r.kind]
        out.append({
            "case": r.case,
            "quantity": r.quantity,
            "reference": _ref(r),
            "simulated mean": num(r.mean),
            "95 % interval": f"{_interval(d)} {kind}" if r.kind != "exact" else f"{_interval(d)} (tol)",
            "verdict interval": _interval(r) if r.check else "",
            "n": str(r.replications),
            "verdict": r.verdict,
            "vs naive": "" if r.naive is None else
                        f"{'beaten' if r.beats_naive else 'NOT beaten'}: {r.naive[0]} {num(r.naive[1])}",
        })
    return pd.DataFrame(out)


def text_table(suite: SuiteResult, columns: Sequence[str] = ("case", "quantity", "reference", "simulated mean",
                                                              "95 % interval", "verdict")) -> str:
    """A plain-text table for the terminal (with a 'vs naive' column when a row names a naive predictor)."""
    df = rows(suite)
    if "vs naive" not in columns and any(df["vs naive"]):
        columns = (*columns, "vs naive")
    df = df[list(columns)]
    widths = [max(len(c), *(len(v) for v in df[c])) for c in df.columns]
    line = "  ".join(c.ljust(w) for c, w in zip(df.columns, widths))
    out = [line, "  ".join("-" * w for w in widths)]
    for row in df.itertuples(index=False):
        out.append("  ".join(str(v).ljust(w) for v, w in zip(row, widths)))
    return "\n".join(out)


def summary_line(suite: SuiteResult) -> str:
    n_fail = len(suite.failed)
    verdict = "PASS" if suite.passed else f"FAIL ({n_fail} of {suite.checked})"
    excluded, named = suite.wrong_models
    weak = "" if excluded == named else (
        " (too few replications to tell the rest apart: run the full suite)" if suite.settings.quick else
        " (the rest are within the noise)")
    beaten, naive = suite.naive_beaten
    naive_text = f"; naive predictors beaten: {beaten} of {naive}" if naive else ""
    return (f"{verdict}: {suite.checked} checked quantities, each interval at {suite.confidence:.5f} "
            f"(Bonferroni, family-wise α = {suite.alpha:g}); {len(suite.results) - suite.checked} "
            f"information rows; wrong models excluded: {excluded} of {named}{weak}{naive_text}")


MARKDOWN_COLUMNS = ("case", "quantity", "reference", "simulated mean", "95 % interval", "n", "sample", "verdict",
                    "vs naive")
"""The columns of table.md, the table recorded in docs/validation.md: ``vs naive`` says for each row that names a
naive predictor whether the model beat it, and the predictor with its value (issue 49)."""


def markdown_table(suite: SuiteResult) -> str:
    """The table in Markdown (for docs/validation.md): the columns of :data:`MARKDOWN_COLUMNS`."""
    df = rows(suite)
    df["sample"] = [r.sample for r in suite.results]
    cols = list(MARKDOWN_COLUMNS)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for _, r in df.iterrows():
        lines.append("| " + " | ".join(str(r[c]).replace("|", "\\|") for c in cols) + " |")
    return "\n".join(lines)


# ---- figures --------------------------------------------------------------------------------------

def fig_case(results: list[CaseResult]) -> "plt.Figure | None":
    """Forest plot: each quantity's deviation from its reference, in % of the reference, with its 95 %
    interval (thick) and its verdict interval (thin)."""
    rs = [r for r in results if math.isfinite(r.reference) and r.reference != 0]
    if not rs:
        return None
    fig, ax = plt.subplots(figsize=(8.5, 0.55 * len(rs) + 1.2))
    for i, r in enumerate(rs):
        y = len(rs) - 1 - i
        ref = abs(r.reference)
        d = r.at(DISPLAY_CONFIDENCE)

        def rel(v: float) -> float:
            return 100.0 * (v - r.reference) / ref

        color = "0.5" if not r.check else ("tab:green" if r.passed else "tab:red")
        if r.ref_low is not None:
            ax.fill_betweenx([y - 0.3, y + 0.3], rel(r.ref_low), 0.0, color="0.85")
        if math.isfinite(r.ci_low) and math.isfinite(r.ci_high):
            ax.plot([rel(r.ci_low), rel(r.ci_high)], [y, y], color=color, lw=1)
        if math.isfinite(d.ci_low) and math.isfinite(d.ci_high):
            ax.plot([rel(d.ci_low), rel(d.ci_high)], [y, y], color=color, lw=4, alpha=0.6)
        ax.plot([rel(r.mean)], [y], "o", color=color)
    ax.axvline(0.0, color="k", lw=0.8)
    ax.set_yticks(range(len(rs)))
    ax.set_yticklabels([r.quantity[:70] for r in reversed(rs)], fontsize=7)
    ax.set_xlabel("simulated − reference, % of reference (thick: 95 %, thin: verdict level)")
    ax.set_title(rs[0].case)
    return fig


def fig_sweep(rows_: list[SweepRow], quantity: str) -> "plt.Figure":
    """Interval against replications (log scale) around the reference."""
    rs = [r for r in rows_ if r.quantity == quantity]
    k = np.array([r.replications for r in rs])
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    ax.fill_between(k, [r.ci_low for r in rs], [r.ci_high for r in rs], alpha=0.3, label=f"{SWEEP_CONFIDENCE:.0%} interval")
    ax.plot(k, [r.mean for r in rs], "o-", label="simulated mean")
    ax.plot(k, [r.reference for r in rs], "k--", label="reference")
    ax.set_xscale("log")
    ax.minorticks_off()
    ax.set_xticks(k)
    ax.set_xticklabels([str(int(v)) for v in k])
    ax.set_xlabel("replications")
    ax.set_title(quantity[:80], fontsize=9)
    ax.legend(fontsize=8)
    return fig


# ---- writing --------------------------------------------------------------------------------------

def _results_json(suite: SuiteResult) -> dict:
    return {
        "family_alpha": suite.alpha,
        "interval_confidence": suite.confidence,
        "checked": suite.checked,
        "passed": suite.passed,
        "quick": suite.settings.quick,
        "seed": suite.settings.seed,
        "replications_override": suite.settings.replications,
        "seconds": suite.seconds,
        "versions": versions(),
        "python": python_info(),
        "results": [{
            "case": r.case, "quantity": r.quantity, "reference": r.reference, "reference_low": r.ref_low,
            "reference_text": r.ref_text, "mean": r.mean, "ci_low": r.ci_low, "ci_high": r.ci_high,
            "ci95_low": r.at(DISPLAY_CONFIDENCE).ci_low, "ci95_high": r.at(DISPLAY_CONFIDENCE).ci_high,
            "interval": r.kind, "replications": r.replications, "check": r.check, "passed": r.passed,
            "verdict": r.verdict, "sample": r.sample, "note": r.note,
            "wrong_models_excluded": {k: r.excludes(v) for k, v in r.wrong.items()},
            "naive": None if r.naive is None else {"predictor": r.naive[0], "value": r.naive[1],
                                                   "beaten": r.beats_naive},
            "invariants": r.invariants,
        } for r in suite.results],
    }


def write_report(suite: SuiteResult, folder: Path, title: str) -> Path:
    """Write report.md, report.html (self-contained), table.md (the table alone, for docs/validation.md),
    results.json and figures/ into ``folder``,
    atomically (a temporary folder renamed into place)."""
    from twin.validation.cases import CASES
    from twin.validation.compute import PROVENANCE as COMPUTE_PROVENANCE
    from twin.validation.field import PROVENANCE as FIELD_PROVENANCE

    provenance = {**FIELD_PROVENANCE, **COMPUTE_PROVENANCE}

    with atomic_folder(folder, overwrite=True) as tmp:
        doc = Doc(title=title, figdir=tmp / "figures")
        doc.p(summary_line(suite))
        doc.p(f"Generated {time.strftime('%Y-%m-%d %H:%M:%S')} by twin {versions()['twin']} ({python_info()}); "
              f"seed {suite.settings.seed}; {'quick' if suite.settings.quick else 'full'} settings.", cls="muted")
        doc.table(rows(suite))
        doc.p("95 % interval: t confidence interval of the simulated mean (CI); for field counts the Poisson "
              "prediction interval of one new count (PI); for deterministic cases the numerical tolerance. "
              "Verdict: the reference (or reference range) lies in the interval at the Bonferroni level over "
              "all checked quantities, and every invariant of the case held. 'info' rows are not judged.")
        by_case: dict[str, list[CaseResult]] = {}
        for r in suite.results:
            by_case.setdefault(r.case, []).append(r)
        for case, rs in by_case.items():
            doc.h2(case)
            fn = CASES.get(case)
            if fn is not None and fn.__doc__:
                doc.p(" ".join(fn.__doc__.split()))
            if case in provenance:
                doc.bullets([f"{k}: {v}" for k, v in provenance[case].items()])
            notes = []
            for r in rs:
                bad = r.failed_invariants()
                if bad:
                    notes.append(f"{r.quantity}: invariant failed: {'; '.join(bad)}")
                for k, v in r.wrong.items():
                    notes.append(f"{r.quantity}: wrong model '{k}' = {num(v)} "
                                 f"{'excluded' if r.excludes(v) else 'NOT excluded'} by the verdict interval")
                if r.naive is not None:
                    name, v = r.naive
                    notes.append(f"{r.quantity}: naive predictor '{name}' = {num(v)} (off by "
                                 f"{num(abs(v - r.reference))}; the model by {num(abs(r.mean - r.reference))}): "
                                 f"{'beaten' if r.beats_naive else 'NOT beaten'}")
            if notes:
                doc.bullets(notes)
            fig = fig_case(rs)
            if fig is not None:
                doc.figure(fig, f"{case}.png", f"{case}: deviation from reference")
        (tmp / "report.html").write_text(doc.render_html(), encoding="utf-8")
        (tmp / "report.md").write_text(doc.render_md(), encoding="utf-8")
        (tmp / "table.md").write_text(markdown_table(suite) + "\n\n" + summary_line(suite) + "\n", encoding="utf-8")
        (tmp / "results.json").write_text(json.dumps(clean_json(_results_json(suite)), indent=2, default=float) + "\n",
                                          encoding="utf-8")
    return folder


def sweep_table(rows_: list[SweepRow]) -> pd.DataFrame:
    return pd.DataFrame([{
        "quantity": r.quantity, "replications": r.replications, "reference": num(r.reference),
        "simulated mean": num(r.mean), f"{SWEEP_CONFIDENCE:.0%} interval": f"[{num(r.ci_low)}, {num(r.ci_high)}]",
        "half-width": num(r.half_width), "covers": "yes" if r.covers else "no"} for r in rows_])


def write_sweep(case: str, rows_: list[SweepRow], folder: Path) -> Path:
    """Sweep report (table and one plot per quantity), atomically."""
    with atomic_folder(folder, overwrite=True) as tmp:
        doc = Doc(title=f"Validation sweep: {case}", figdir=tmp / "figures")
        doc.p(f"The {SWEEP_CONFIDENCE:.0%} interval over the first k replications, for growing k: it shrinks "
              "about as 1/√k around the reference when the model is right.")
        doc.table(sweep_table(rows_))
        for i, q in enumerate(dict.fromkeys(r.quantity for r in rows_)):
            doc.figure(fig_sweep(rows_, q), f"sweep-{i}.png", q)
        (tmp / "report.html").write_text(doc.render_html(), encoding="utf-8")
        (tmp / "report.md").write_text(doc.render_md(), encoding="utf-8")
    return folder
