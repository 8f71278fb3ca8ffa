"""The report of ``twin decide`` (issue 46): the decision summary first, then the options'
probabilities and losses, what the decision rests on (a tornado of variance shares with their
intervals), the value of measuring each input, the flip points, and the paired difference per draw
against the two leading inputs. ``report.html`` (interactive Plotly charts, plotly.js inline: opens
offline) and ``report.md``, both built only from the stored tables of the folder.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from twin.report import metrics as catalogue


def _read(folder: Path) -> tuple[dict[str, Any], dict[str, Any], pd.DataFrame, pd.DataFrame]:
    from twin.errors import InputError

    try:
        meta = json.loads((folder / "experiment.json").read_text())
        dec = json.loads((folder / "decision.json").read_text())
        opts = pd.read_parquet(folder / "options.parquet")
        inputs = pd.read_parquet(folder / "inputs.parquet")
    except (OSError, ValueError) as exc:
        raise InputError(str(folder), "", f"not a complete twin decide folder ({exc})") from None
    return meta, dec, opts, inputs


def _pct(x: float) -> str:
    return f"{100 * x:.0f} %" if x == x else "n/a"


def _v(meta: dict[str, Any], x: float, delta: bool = True) -> str:
    return catalogue.format_value(meta["objective"], x, meta.get("currency") or "USD", delta=delta)


def _ranked(inputs: pd.DataFrame) -> pd.DataFrame:
    if "s1" in inputs and inputs.s1.notna().any():
        return inputs.sort_values(["s1", "input"], ascending=[False, True], kind="stable")
    return inputs


def summary_sentences(folder: Path | str) -> list[str]:
    """The decision summary as sentences (what the command prints and the report opens with)."""
    meta, dec, opts, inputs = _read(Path(folder))
    o = opts.set_index("option")
    rec, ru = dec["recommended"], dec["runner_up"]
    word = "best" if meta["sense"] == "max" else "lowest"
    obj = catalogue.label(meta["objective"])
    pre: list[str] = []
    if dec.get("constraints"):
        what = " and ".join(dec["constraints"])
        pre.append(f"Meeting {what} (the expected value in a plausible world): " + "; ".join(
            f"{x} in {_pct(row.p_feasible)} [{_pct(row.p_feasible_low)}, {_pct(row.p_feasible_high)}] of the worlds"
            for x, row in o.iterrows()) + f". Admissible: at least {_pct(dec['confidence'])}.")
        n_adm = int(opts["admissible"].sum())
        if not rec:
            return pre + [f"No option is admissible: {dec['rule']}. Widen the options or relax the targets."]
        if n_adm == 1:
            r = o.loc[rec]
            return pre + [f"{rec} is recommended as {dec['rule']}: expected {obj} {_v(meta, r.expected, False)}."]
    r = o.loc[rec]
    n = meta.get("decision_draws", meta["draws"])
    design = (f"; Saltelli's design of {meta['draws']} draws, of which these are its independent ones"
              if meta.get("design") == "saltelli" else "")
    out = pre + [f"{rec} has the {word} {obj} in {_pct(r.p_best)} [{_pct(r.p_best_low)}, {_pct(r.p_best_high)}] of the "
           f"plausible worlds ({n} draws of {len(meta['keys'])} uncertain inputs{design}, {meta['replications']} "
           f"replications each, {meta['runs']} runs); expected {obj} {_v(meta, r.expected, False)} against "
           f"{_v(meta, o.loc[ru].expected, False)} for {ru}. Recommended by the rule: {dec['rule']}."]
    rk = _ranked(inputs)
    if "s1" in rk and len(rk) and rk.s1.notna().any():
        lead = rk.iloc[0]
        second = f" and {rk.iloc[1].input} ({_pct(rk.iloc[1].s1)})" if len(rk) > 1 else ""
        out.append(f"The answer rests on {lead.input} ({_pct(lead.s1)} of the variance of the paired difference "
                   f"{rec} − {ru}){second}; replication noise is {_pct(dec['noise_share'])} of that variance.")
    if "sobol_st" in inputs and inputs.sobol_st.notna().any():
        top = inputs.sort_values(["sobol_st", "input"], ascending=[False, True], kind="stable").iloc[0]
        out.append(f"Saltelli's design: {top.input} has the largest total Sobol' index, {_pct(top.sobol_st)} "
                   f"[{_pct(max(0.0, top.sobol_st_low))}, {_pct(min(1.0, top.sobol_st_high))}] (its first-order "
                   f"index {_pct(top.sobol_s1)}; the rest is its interactions with other inputs).")
    if "evppi" in inputs and len(inputs):
        top = inputs.sort_values(["evppi", "input"], ascending=[False, True], kind="stable").iloc[0]
        out.append(f"Measure {top.input} first: knowing it before deciding is worth {_v(meta, top.evppi, False)} "
                   f"[{_v(meta, top.evppi_low, False)}, {_v(meta, top.evppi_high, False)}] of {obj} (EVPPI); "
                   f"knowing every input, {_v(meta, dec['evpi'], False)} [{_v(meta, dec['evpi_low'], False)}, "
                   f"{_v(meta, dec['evpi_high'], False)}] (EVPI; the naive estimate from the noisy inner means "
                   f"would say {_v(meta, dec['evpi_naive'], False)}).")
    flips = [(i, json.loads(f)) for i, f in zip(inputs.input, inputs.get("flip_values", [])) if json.loads(f)]
    if flips:
        out.append("The recommendation flips (" + rec + " vs " + ru + ") at " + "; ".join(
            f"{i} = {', '.join(f'{v:.4g}' if isinstance(v, float) else str(v) for v in vs)}" for i, vs in flips) + ".")
    return out


def options_frame(meta: dict[str, Any], opts: pd.DataFrame) -> pd.DataFrame:
    extra = {}
    if "p_feasible" in opts:
        extra["P(meets constraints)"] = [f"{_pct(p)} [{_pct(lo)}, {_pct(hi)}]" for p, lo, hi in
                                         zip(opts.p_feasible, opts.p_feasible_low, opts.p_feasible_high)]
    return pd.DataFrame({
        "option": opts.option, **extra,
        "P(best)": [f"{_pct(p)} [{_pct(lo)}, {_pct(hi)}]" for p, lo, hi in zip(opts.p_best, opts.p_best_low,
                                                                                opts.p_best_high)],
        "P(best), naive": [_pct(p) for p in opts.p_best_naive],
        "expected": [f"{_v(meta, m, False)} [{_v(meta, lo, False)}, {_v(meta, hi, False)}]"
                     for m, lo, hi in zip(opts.expected, opts.ci_low, opts.ci_high)],
        "expected loss": [f"{_v(meta, m, False)} [{_v(meta, lo, False)}, {_v(meta, hi, False)}]"
                          for m, lo, hi in zip(opts.expected_loss, opts.expected_loss_low, opts.expected_loss_high)],
    })


def inputs_frame(meta: dict[str, Any], inputs: pd.DataFrame, short: bool = False) -> pd.DataFrame:
    """The inputs' table (``short``: sources cut to 40 characters, for the terminal)."""
    rk = _ranked(inputs)
    src = [s if not short or len(s) <= 40 else s[:39] + "…" for s in rk.source]
    cols: dict[str, Any] = {"input": rk.input, "source": src}
    if "s1" in rk and rk.s1.notna().any():
        cols["variance share S1"] = [f"{_pct(s)} [{_pct(max(0.0, a))}, {_pct(min(1.0, b))}]"
                                     for s, a, b in zip(rk.s1, rk.s1_low, rk.s1_high)]
        cols["delta"] = [f"{d:.3f}" for d in rk.delta]
    if "sobol_st" in rk and rk.sobol_st.notna().any():
        for k, name in (("sobol_s1", "Sobol' S1"), ("sobol_st", "Sobol' ST")):
            cols[name] = [f"{_pct(s)} [{_pct(max(0.0, a))}, {_pct(min(1.0, b))}]"
                          for s, a, b in zip(rk[k], rk[k + "_low"], rk[k + "_high"])]
    if "evppi" in rk:
        cols["EVPPI"] = [f"{_v(meta, e, False)} [{_v(meta, a, False)}, {_v(meta, b, False)}]"
                         for e, a, b in zip(rk.evppi, rk.evppi_low, rk.evppi_high)]
    cols["flip points"] = [", ".join(f"{v:.4g}" if isinstance(v, float) else str(v) for v in json.loads(f)) or "none"
                           for f in rk.flip_values]
    return pd.DataFrame(cols)


def tables_text(folder: Path | str) -> list[str]:
    """The options' and the inputs' tables as text lines."""
    meta, dec, opts, inputs = _read(Path(folder))
    out = []
    for title, df in (("options", options_frame(meta, opts)), ("inputs (ranked by variance share)",
                                                               inputs_frame(meta, inputs, short=True))):
        out.append(title)
        w = [max(len(str(c)), *(len(str(v)) for v in df[c])) for c in df.columns]
        out.append("  " + "  ".join(str(c).ljust(x) for c, x in zip(df.columns, w)))
        for row in df.itertuples(index=False):
            out.append("  " + "  ".join(str(v).ljust(x) for v, x in zip(row, w)))
        out.append("")
    return out


def _tornado(inputs: pd.DataFrame) -> Any:
    import plotly.graph_objects as go

    rk = _ranked(inputs).iloc[::-1]
    fig = go.Figure(go.Bar(x=rk.s1, y=rk.input, orientation="h",
                           error_x=dict(type="data", symmetric=False, array=rk.s1_high - rk.s1,
                                        arrayminus=rk.s1 - rk.s1_low)))
    fig.update_layout(title="Variance share of the paired difference (first order, 95 % interval)",
                      xaxis_title="share of variance", template="plotly_white", height=120 + 28 * len(rk),
                      margin=dict(l=10, r=10, t=50, b=45))
    return fig


def _tornado_png(inputs: pd.DataFrame) -> Any:
    import matplotlib.pyplot as plt

    rk = _ranked(inputs).iloc[::-1]
    fig, ax = plt.subplots(figsize=(7, 1.2 + 0.35 * len(rk)))
    ax.barh(rk.input, rk.s1, xerr=[rk.s1 - rk.s1_low, rk.s1_high - rk.s1], color="#4a7ab0")
    ax.set_xlabel("first-order share of the variance of the paired difference")
    return fig


def _scatter_points(folder: Path, meta: dict[str, Any], inputs: pd.DataFrame) -> list[tuple[str, pd.Series, pd.Series]]:
    """(x label, x, paired difference) for the two leading inputs."""
    draws = pd.read_parquet(folder / "draws.parquet")
    diff = pd.read_parquet(folder / "difference.parquet")
    sign = 1.0 if meta["sense"] == "max" else -1.0
    out = []
    for key in list(_ranked(inputs).input[:2]):
        f = meta["inputs"][key]["fields"][0]
        out.append((f, draws[f] if f in draws and draws[f].dtype != object else draws[f"u:{key}"],
                    sign * diff.difference))
    return out


def _scatter_png(points: list[tuple[str, pd.Series, pd.Series]], title: str) -> Any:
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(points), figsize=(4.5 * len(points), 3.6), sharey=True, squeeze=False)
    for ax, (name, x, y) in zip(axes[0], points):
        ax.scatter(x, y, s=12)
        ax.axhline(0, ls=":", color="grey")
        ax.set_xlabel(name, fontsize=8)
    axes[0][0].set_ylabel(title, fontsize=8)
    return fig


def _scatter(folder: Path, meta: dict[str, Any], dec: dict[str, Any], inputs: pd.DataFrame) -> Any | None:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    draws = pd.read_parquet(folder / "draws.parquet")
    diff = pd.read_parquet(folder / "difference.parquet")
    lead = list(_ranked(inputs).input[:2])
    if not lead:
        return None
    fig = make_subplots(rows=1, cols=len(lead), shared_yaxes=True)
    sign = 1.0 if meta["sense"] == "max" else -1.0
    for j, key in enumerate(lead):
        fields = meta["inputs"][key]["fields"]
        x = draws[fields[0]] if fields[0] in draws else draws[f"u:{key}"]
        fig.add_trace(go.Scatter(x=x, y=sign * diff.difference, mode="markers", name=key,
                                 hovertext=[f"draw {d}" for d in diff.draw]), row=1, col=j + 1)
        fig.update_xaxes(title_text=fields[0], row=1, col=j + 1)
    fig.add_hline(y=0, line_dash="dot")
    fig.update_layout(title=f"Paired difference per draw, {dec['recommended']} − {dec['runner_up']} "
                            f"({catalogue.label(meta['objective'])}, inner mean)",
                      template="plotly_white", showlegend=False, margin=dict(l=10, r=10, t=50, b=45))
    return fig


def build_decide_report(folder: Path) -> tuple[Path, Path]:
    """Write report.html and report.md of a ``twin decide`` folder; returns their paths."""
    from twin import __version__
    from twin.atomic import atomic_write_text
    from twin.report.html import Doc

    meta, dec, opts, inputs = _read(folder)
    doc = Doc("Decision under uncertainty: " + " vs ".join(o["label"] for o in meta["options"]), folder / "figures")
    doc.summary([[s] for s in summary_sentences(folder)])
    doc.h2("Options")
    doc.p(f"Objective {catalogue.label_with_unit(meta['objective'], meta.get('currency') or 'USD')} "
          f"({'higher' if meta['sense'] == 'max' else 'lower'} is better). P(best): the share of the input draws in "
          "which the option's expected objective (replication noise removed by a Gaussian-process metamodel of the "
          "paired differences) is the best; naive: the same from the noisy inner means. Expected loss: the mean "
          "shortfall to the best option of each world. Intervals 95 % (posterior of the metamodel × bootstrap of "
          "the draws; the expected objective: Student t over the draws).")
    doc.table(options_frame(meta, opts))
    doc.h2("What the decision rests on")
    doc.p(f"Per input: its first-order share of the variance of the per-draw paired difference "
          f"{dec['recommended']} − {dec['runner_up']} (SALib, given data), Borgonovo's delta, the expected value of "
          f"knowing it before deciding (EVPPI) and the values where the recommendation flips. Replication noise: "
          f"{_pct(dec['noise_share'])} of the variance.")
    doc.table(inputs_frame(meta, inputs))
    if "s1" in inputs and inputs.s1.notna().any():
        doc.chart(_tornado(inputs), "tornado", "variance shares of the paired difference per input",
                  png=_tornado_png(inputs))
    sc = _scatter(folder, meta, dec, inputs)
    if sc is not None:
        doc.chart(sc, "scatter", "paired difference per draw against the leading inputs",
                  png=_scatter_png(_scatter_points(folder, meta, inputs),
                                   f"{dec['recommended']} − {dec['runner_up']}"))
    doc.h2("Inputs and their sources")
    doc.bullets([f"{k}: {', '.join(v['fields'])} ~ {json.dumps(v['dist'])}; source: {'; '.join(v['sources'])}; "
                 f"declared by {', '.join(v['declared_by'])}" for k, v in meta["inputs"].items()])
    doc.p(f"Report built by twin {__version__} from the stored tables in {folder}.", cls="muted")
    h, m = folder / "report.html", folder / "report.md"
    atomic_write_text(h, doc.render_html())
    atomic_write_text(m, doc.render_md())
    return h, m


__all__ = ["build_decide_report", "summary_sentences", "tables_text"]
