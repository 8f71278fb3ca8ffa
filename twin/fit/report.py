"""Outputs of ``twin fit``: YAML fragment, derived scenario file, ``fit.md`` and figures.

All files are written atomically (temporary name in the same folder, then ``os.replace``).
"""

from __future__ import annotations

import datetime as _dt
import math
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import yaml

from twin import atomic
from twin.fit import distributions
from twin.fit.mle import ModelFit, PartFit, kaplan_meier

CI_METHOD = (
    "95 % Wald intervals from the observed information: numerical (central-difference) Hessian "
    "of the right-censored log-likelihood (scipy logpdf of failures + logsf of censored lives) "
    "on the log-parameter scale, so intervals are positive and asymmetric; the Weibull mean uses "
    "the delta method"
)


def fmt(x: float, digits: int = 4) -> str:
    """Human-readable number with ``digits`` significant figures."""
    if x is None or not math.isfinite(x):
        return "n/a"
    if x != 0 and (abs(x) >= 1e7 or abs(x) < 1e-3):
        return f"{x:.{digits - 1}e}"
    return f"{distributions.round_sig(x, digits):.10g}"


def fmt_ci(ci: tuple[float, float]) -> str:
    return f"[{fmt(ci[0])}, {fmt(ci[1])}]"


def model_text(m: ModelFit) -> str:
    """``weibull shape 1.9 [1.5, 2.4] scale_h 5.2e4 [...]``."""
    return " ".join([m.dist] + [f"{p} {fmt(m.params[p])} {fmt_ci(m.ci[p])}" for p in distributions.PARAMS[m.dist]])


def summary_line(pf: PartFit) -> str:
    """One-line description of a part's fit (used in YAML comments)."""
    others = sorted((d for d in pf.models if d != pf.best), key=pf.delta_aic)
    delta = ", ".join(f"{d} +{pf.delta_aic(d):.1f}" for d in others)
    m = pf.chosen
    text = (f"{pf.part} n={pf.n} failures={pf.failures} censored={pf.censored}; {model_text(m)}; "
            f"AIC {m.aic:.1f}")
    if delta:
        text += f" ({delta})"
    return text + f"; BIC {m.bic:.1f}"


def _today(today: _dt.date | None) -> str:
    return (today or _dt.date.today()).isoformat()


def _comment_block(fits: Sequence[PartFit], source: str | None, today: _dt.date | None) -> str:
    lines = []
    for i, pf in enumerate(fits):
        prefix = f"fitted by twin fit on {_today(today)}: " if i == 0 else "  "
        lines.append(prefix + summary_line(pf))
    if source:
        lines.append(f"source: {source}")
    for pf in fits:
        lines.extend(f"warning: {w}" for w in pf.warnings)
    return "".join(f"# {' '.join(line.split())}\n" for line in lines)


def failure_specs(fits: Sequence[PartFit]) -> dict[str, dict[str, object]]:
    """``{part: {failure: {dist: ..., <params>}}}`` of the AIC-chosen models."""
    return {pf.part: {"failure": pf.chosen.spec()} for pf in fits}


def _dump(data: Mapping[str, object]) -> str:
    # flow style only for the innermost (scalar-only) mappings: failure: {dist: ..., ...}
    return yaml.safe_dump(dict(data), sort_keys=False, default_flow_style=None, width=10_000)


def yaml_fragment(fits: Sequence[PartFit], source: str | None = None, today: _dt.date | None = None) -> str:
    """YAML fragment ``parts: {<part>: {failure: {...}}}`` preceded by comment lines."""
    return _comment_block(fits, source, today) + _dump({"parts": failure_specs(fits)})


def relative_base(base: str | os.PathLike[str], into: str | os.PathLike[str]) -> str:
    """Path of ``base`` relative to the folder of ``into`` (POSIX separators)."""
    into_dir = Path(os.path.abspath(into)).parent
    rel = os.path.relpath(os.path.abspath(base), into_dir)
    return Path(rel).as_posix()


def scenario_text(fits: Sequence[PartFit], base: str | os.PathLike[str], into: str | os.PathLike[str],
                  source: str | None = None, today: _dt.date | None = None,
                  rack_parts: Sequence[str] = ()) -> str:
    """A new scenario that ``extends`` ``base`` and overrides the fitted parts' failure laws: under
    ``cluster.rack_parts`` for the names in ``rack_parts`` (the base's rack parts), else under
    ``cluster.node.parts``."""
    specs = failure_specs(fits)
    cluster: dict[str, object] = {}
    node = {k: v for k, v in specs.items() if k not in rack_parts}
    rack = {k: v for k, v in specs.items() if k in rack_parts}
    if node:
        cluster["node"] = {"parts": node}
    if rack:
        cluster["rack_parts"] = rack
    doc = {"extends": relative_base(base, into), "cluster": cluster}
    return _comment_block(fits, source, today) + _dump(doc)


def _safe_name(part: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", part) or "part"


def figure_names(part: str) -> tuple[str, str]:
    stem = _safe_name(part)
    return f"{stem}-weibull-plot.png", f"{stem}-survival.png"


def markdown(fits: Sequence[PartFit], source: str | None, fmt_name: str, today: _dt.date | None = None,
             figures: bool = True) -> str:
    """The ``fit.md`` report: summary, per-part parameter tables, figures, warnings."""
    # the user's text: never raw HTML in the report (a code span shows its text as is, without a backtick)
    code = str(source).replace("`", "'")
    out = [f"# twin fit: {_md(source) if source else 'field data'}", ""]
    out.append(f"Fitted on {_today(today)} by `twin fit` from `{code}` (format `{fmt_name}`). "
               "Maximum likelihood with right censoring (`scipy.stats` `fit` on `CensoredData`, location 0). "
               f"Confidence intervals: {CI_METHOD}. Model chosen by the smallest AIC (2k − 2 ln L); "
               "BIC = k ln n − 2 ln L with n = lives.")
    out += ["", "## Summary", "",
            "| part | lives | failures | censored | chosen | parameters [95 % CI] | mean_h [95 % CI] |",
            "|---|---:|---:|---:|---|---|---|"]
    for pf in fits:
        m = pf.chosen
        params = "; ".join(f"{p} {fmt(m.params[p])} {fmt_ci(m.ci[p])}" for p in distributions.PARAMS[m.dist])
        out.append(f"| {pf.part} | {pf.n} | {pf.failures} | {pf.censored} | {m.dist} | {params} | "
                   f"{fmt(m.mean_h)} {fmt_ci(m.mean_ci)} |")
    for pf in fits:
        out += ["", f"## {pf.part}", "",
                "| model | parameters [95 % CI] | mean_h [95 % CI] | ln L | AIC | ΔAIC | BIC |",
                "|---|---|---|---:|---:|---:|---:|"]
        for dist in sorted(pf.models, key=lambda d: pf.models[d].aic):
            m = pf.models[dist]
            params = "; ".join(f"{p} {fmt(m.params[p])} {fmt_ci(m.ci[p])}" for p in distributions.PARAMS[dist])
            mark = " (chosen)" if dist == pf.best else ""
            out.append(f"| {dist}{mark} | {params} | {fmt(m.mean_h)} {fmt_ci(m.mean_ci)} | {m.loglik:.2f} | "
                       f"{m.aic:.2f} | {pf.delta_aic(dist):.2f} | {m.bic:.2f} |")
        spec = _dump({"failure": pf.chosen.spec()}).strip()
        out += ["", f"Scenario spec: `{spec}`"]
        if figures:
            wb, sv = figure_names(pf.part)
            out += ["", f"![Weibull probability plot of {pf.part}]({wb})", "",
                    f"![Kaplan–Meier vs fitted survival of {pf.part}]({sv})"]
    notes = [w for pf in fits for w in pf.warnings]
    if notes:
        out += ["", "## Warnings", ""] + [f"- {_md(w)}" for w in notes]
    return "\n".join(out) + "\n"


def _md(text: str) -> str:
    """Text for the Markdown report with HTML's special characters escaped (a file name or a message
    may hold ``<script>``; Markdown passes raw HTML through)."""
    import html

    return html.escape(str(text), quote=False)


def text_table(fits: Sequence[PartFit]) -> str:
    """Plain-text parameter table for the terminal."""
    rows = [("part", "n", "fail", "cens", "model", "parameters [95% CI]", "mean_h [95% CI]", "AIC", "dAIC", "BIC")]
    for pf in fits:
        for dist in sorted(pf.models, key=lambda d: pf.models[d].aic):
            m = pf.models[dist]
            params = "; ".join(f"{p} {fmt(m.params[p])} {fmt_ci(m.ci[p])}" for p in distributions.PARAMS[dist])
            rows.append((pf.part, str(pf.n), str(pf.failures), str(pf.censored),
                         dist + (" *" if dist == pf.best else ""), params,
                         f"{fmt(m.mean_h)} {fmt_ci(m.mean_ci)}", f"{m.aic:.1f}", f"{pf.delta_aic(dist):.1f}",
                         f"{m.bic:.1f}"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    return "\n".join(lines) + "\n* = chosen by AIC\n"


# ---------------------------------------------------------------------------------- figures

def _km_plotting(pf: PartFit) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    t, s = kaplan_meier(pf.durations_h, pf.failed)
    s_before = np.concatenate([[1.0], s[:-1]])
    return t, s, (s + s_before) / 2.0


def _save(fig, path: Path) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    with atomic.atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=110)


def weibull_plot(pf: PartFit, path: str | os.PathLike[str]) -> None:
    """Weibull probability plot: ln(−ln S) vs ln t at failure times (Kaplan–Meier midpoint
    plotting positions) with every fitted model; the Weibull fit is a straight line."""
    from matplotlib.figure import Figure

    t, _s, s_mid = _km_plotting(pf)
    fig = Figure(figsize=(6.4, 4.8))
    ax = fig.add_subplot()
    ok = (s_mid > 0) & (s_mid < 1) & (t > 0)
    ax.plot(t[ok], np.log(-np.log(s_mid[ok])), "o", ms=4, color="black", label="Kaplan–Meier (failures)")
    lo = max(float(np.min(pf.durations_h[pf.durations_h > 0])) * 0.5, 1e-9)
    hi = float(np.max(pf.durations_h)) * 3.0
    grid = np.geomspace(lo, hi, 200)
    for dist, m in sorted(pf.models.items()):
        with np.errstate(all="ignore"):
            y = np.log(-m.frozen().logsf(grid))
        chosen = dist == pf.best
        ax.plot(grid, y, lw=2.4 if chosen else 1.2, ls="-" if chosen else "--",
                label=f"{dist}{' (chosen)' if chosen else ''}")
    ax.set_xscale("log")
    probs = [0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99]
    ticks = [math.log(-math.log(1 - p)) for p in probs]
    ymin = min(ticks[0], float(np.nanmin(np.log(-np.log(s_mid[ok])))) if ok.any() else ticks[0]) - 0.3
    ax.set_ylim(ymin, ticks[-1] + 0.3)
    ax.set_yticks(ticks, [f"{p:g}" for p in probs])
    ax.set_xlabel("age at failure (h)")
    ax.set_ylabel("fraction failed F(t), Weibull scale")
    ax.set_title(f"{pf.part}: Weibull probability plot (n={pf.n}, failures={pf.failures})")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    _save(fig, Path(path))


def survival_plot(pf: PartFit, path: str | os.PathLike[str]) -> None:
    """Kaplan–Meier survival (with its 95 % band and censoring marks) vs fitted survival curves."""
    from matplotlib.figure import Figure
    from scipy import stats

    from twin.fit.mle import censored_data

    res = stats.ecdf(censored_data(pf.durations_h, pf.failed))
    t = np.asarray(res.sf.quantiles, dtype=float)
    s = np.asarray(res.sf.probabilities, dtype=float)
    fig = Figure(figsize=(6.4, 4.8))
    ax = fig.add_subplot()
    tt = np.concatenate([[0.0], t])
    ax.step(tt, np.concatenate([[1.0], s]), where="post", color="black", lw=1.6, label="Kaplan–Meier")
    with np.errstate(all="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            ci = res.sf.confidence_interval(0.95)
        lo_b = np.nan_to_num(np.asarray(ci.low.probabilities, dtype=float), nan=0.0)
        hi_b = np.nan_to_num(np.asarray(ci.high.probabilities, dtype=float), nan=1.0)
    ax.fill_between(tt, np.concatenate([[1.0], lo_b]), np.concatenate([[1.0], hi_b]), step="post",
                    color="grey", alpha=0.25, label="KM 95 % band")
    cens = pf.durations_h[~pf.failed]
    if cens.size:
        idx = np.searchsorted(t, cens, side="right") - 1
        s_c = np.where(idx >= 0, s[np.clip(idx, 0, None)], 1.0)
        ax.plot(cens, s_c, "|", color="black", ms=6, alpha=0.5, label="censored")
    hi = float(np.max(pf.durations_h)) * 1.05
    grid = np.linspace(0.0, hi, 300)
    for dist, m in sorted(pf.models.items()):
        chosen = dist == pf.best
        ax.plot(grid, m.frozen().sf(grid), lw=2.4 if chosen else 1.2, ls="-" if chosen else "--",
                label=f"{dist}{' (chosen)' if chosen else ''}")
    ax.set_ylim(0.0, 1.02)
    ax.set_xlim(0.0, hi)
    ax.set_xlabel("age (h)")
    ax.set_ylabel("survival S(t)")
    ax.set_title(f"{pf.part}: fitted vs Kaplan–Meier (censored={pf.censored})")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower left", fontsize=8)
    fig.tight_layout()
    _save(fig, Path(path))


def write_report(fits: Sequence[PartFit], out_dir: str | os.PathLike[str], source: str | None,
                 fmt_name: str = "lifetimes", today: _dt.date | None = None, figures: bool = True) -> dict[str, Path]:
    """Write ``fit.yaml``, ``fit.md`` and (optionally) the PNG figures into ``out_dir``."""
    out = Path(out_dir)
    atomic.make_dirs(out)
    written: dict[str, Path] = {}
    if figures:
        for pf in fits:
            wb, sv = figure_names(pf.part)
            weibull_plot(pf, out / wb)
            survival_plot(pf, out / sv)
            written[f"{pf.part}:weibull-plot"] = out / wb
            written[f"{pf.part}:survival"] = out / sv
    atomic.atomic_write_text(out / "fit.yaml", yaml_fragment(fits, source, today))
    written["fit.yaml"] = out / "fit.yaml"
    atomic.atomic_write_text(out / "fit.md", markdown(fits, source, fmt_name, today, figures))
    written["fit.md"] = out / "fit.md"
    return written
