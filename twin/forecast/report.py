"""Forecast summaries and report: completion-date distribution, days lost by cause (waterfall from
ideal to expected), and the lever table, into ``report.html`` (self-contained, figures as base64
PNG) and ``report.md`` of the forecast folder, with the helpers of :mod:`twin.report.html`.

Everything here reads finished replication rows (hours) and reports days.
"""

from __future__ import annotations

import datetime as _dt
import math
from pathlib import Path
from typing import Any, Sequence

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from twin.experiment import stats  # noqa: E402
from twin.report.metrics import plain  # noqa: E402

QUANTILES = (0.1, 0.5, 0.9)
"""Quantiles of the completion-time distribution (P10, P50, P90)."""
TOP_CAUSES = 8
"""Causes shown one by one in the waterfall; the rest are summed as 'other failures'."""


def _days(rows: pd.DataFrame, col: str) -> np.ndarray:
    if col not in rows.columns:
        return np.zeros(len(rows))
    return np.nan_to_num(rows[col].to_numpy(dtype=float), nan=0.0) / 24.0


def completed(rows: pd.DataFrame) -> pd.DataFrame:
    return rows[rows["completed"] > 0.5]


def distribution(rows: pd.DataFrame, target: Any, start_date: str | None = None) -> dict[str, Any]:
    """Time to train (days): mean with 95 % t interval, P10/P50/P90 with order-statistic intervals, the
    failure-free ideal, tokens per day and GPU-hours. Censored replications (not done at the
    horizon bound) enter the quantiles at the bound (so those are lower bounds) and not the mean."""
    t = rows["time_to_train_h"].to_numpy(dtype=float) / 24.0
    bound = (rows["horizon_bound_h"].to_numpy(dtype=float) - rows["submit_h"].to_numpy(dtype=float)) / 24.0
    cens = ~np.isfinite(t)
    fin = t[~cens]
    qvals = np.where(cens, bound, t)
    # a run takes at least its ideal (T = work + non-negative losses): the mean's interval is cut there
    mean, lo, hi = stats.t_interval(fin, bounds=(target.work_h / 24.0, math.inf))
    out: dict[str, Any] = {
        "job": target.name, "gpus": target.gpus, "nodes": target.nodes,
        "replications": int(len(t)), "censored": int(cens.sum()),
        "ideal_days": target.work_h / 24.0, "ideal_basis": getattr(target, "basis", "work_h"),
        "failure_free_days": target.failure_free_h / 24.0,
        "checkpoint_overhead_failure_free_days": target.checkpoint_overhead_h / 24.0,
        "mean_days": mean, "mean_ci_low": lo, "mean_ci_high": hi,
        "std_days": float(fin.std(ddof=1)) if len(fin) > 1 else math.nan,
        "min_days": float(fin.min()) if len(fin) else math.nan,
        "max_days": float(fin.max()) if len(fin) else math.nan,
        "ideal_gpu_hours": target.gpus * target.work_h,
        "expected_gpu_hours": target.gpus * mean * 24.0 if math.isfinite(mean) else math.nan,
        "ettr": target.work_h / (mean * 24.0) if mean and math.isfinite(mean) else math.nan,
    }
    if len(qvals):
        q = np.quantile(qvals, QUANTILES)
        # an end the sample is too small for is NaN (said in words by quantile_interval), never 0 or inf
        qci = stats.quantile_ci(qvals, QUANTILES, bounds=(math.nan, math.nan))
        for p, v, (a, b) in zip(QUANTILES, q, qci):
            k = f"p{round(p * 100)}"
            out[f"{k}_days"], out[f"{k}_ci_low"], out[f"{k}_ci_high"] = float(v), float(a), float(b)
    if target.tokens_t is not None:
        out["tokens_t"] = target.tokens_t
        out["params_b"] = target.params_b
        if getattr(target, "six_pd_h", None) is not None:
            out["six_pd_days"] = target.six_pd_h / 24.0
        out["tokens_per_day_ideal"] = target.tokens_t * 1e12 / out["ideal_days"]
        out["tokens_per_day_expected"] = target.tokens_t * 1e12 / mean if math.isfinite(mean) else math.nan
    if start_date:
        d0 = _dt.date.fromisoformat(start_date)
        out["start_date"] = d0.isoformat()
        sub = target.submit_h / 24.0
        for k in ("ideal_days", "failure_free_days", "mean_days", "p10_days", "p50_days", "p90_days"):
            if k in out and math.isfinite(out[k]):
                out[k.replace("_days", "_date")] = (d0 + _dt.timedelta(days=sub + out[k])).isoformat()
    return out


def losses(rows: pd.DataFrame) -> pd.DataFrame:
    """Days lost per run by bucket (completed replications): checkpoints, each interruption cause
    (lost work + restart + requeue wait, also shown apart), throttling, network slowdown, the
    initial queue wait. Means with 95 % t intervals; largest causes first."""
    r = completed(rows)
    out = []

    def add(bucket: str, kind: str, vals: np.ndarray, **extra: float) -> None:
        m, lo, hi = stats.t_interval(vals, bounds=(0.0, math.inf)) if len(vals) else (math.nan, math.nan, math.nan)
        out.append({"bucket": bucket, "kind": kind, "mean_days": m, "ci_low": lo, "ci_high": hi, **extra})

    add("checkpoints", "checkpoint", _days(r, "checkpoint_h"))
    causes = [c[len("cause."):-2] for c in r.columns if c.startswith("cause.") and c.endswith("_h")]
    crow = []
    for c in causes:
        v = _days(r, f"cause.{c}_h")
        crow.append((float(v.mean()) if len(v) else 0.0, c, v))
    for _, c, v in sorted(crow, key=lambda x: (-x[0], x[1])):
        add(c, "planned" if c.startswith("planned") else "failure", v,
            lost_days=float(_days(r, f"lost.{c}_h").mean()) if len(r) else math.nan,
            restart_days=float(_days(r, f"restart.{c}_h").mean()) if len(r) else math.nan,
            requeue_days=float(_days(r, f"requeue.{c}_h").mean()) if len(r) else math.nan,
            interruptions=float(np.nan_to_num(r[f"interruptions.{c}"].to_numpy(dtype=float)).mean())
            if f"interruptions.{c}" in r.columns and len(r) else math.nan)
    add("throttling", "slowdown", _days(r, "throttling_h"))
    add("network slowdown", "slowdown", _days(r, "network_h"))
    add("queueing", "queue", _days(r, "queueing_h"))
    cols = ["bucket", "kind", "mean_days", "ci_low", "ci_high", "lost_days", "restart_days", "requeue_days",
            "interruptions"]
    return pd.DataFrame(out, columns=cols)


def waterfall(rows: pd.DataFrame, target: Any, loss: pd.DataFrame) -> pd.DataFrame:
    """Steps from the ideal (6PD / throughput) to the expected time to train (days): ideal, then
    each bucket's mean days, then the expected total (mean over completed replications; the
    buckets add up to it exactly, up to the per-replication residual)."""
    r = completed(rows)
    basis = getattr(target, "basis", "6PD" if target.tokens_t is not None else "work_h")
    steps = [({"layout": "ideal (steps × step time)", "6PD": "ideal (6PD / throughput)"}.get(basis, "ideal (work_h)"),
              target.work_h / 24.0,
              "ideal")]
    fails = loss[loss.kind.isin(["failure", "planned"])]
    top, rest = fails.iloc[:TOP_CAUSES], fails.iloc[TOP_CAUSES:]
    steps.append(("checkpoints", float(loss.loc[loss.bucket == "checkpoints", "mean_days"].iloc[0]), "checkpoint"))
    for b, d, k in zip(top.bucket, top.mean_days, top.kind):
        steps.append((f"{b}", float(d), k))
    if len(rest):
        steps.append((f"other causes ({len(rest)})", float(rest.mean_days.sum()), "failure"))
    for b in ("throttling", "network slowdown", "queueing"):
        steps.append((b, float(loss.loc[loss.bucket == b, "mean_days"].iloc[0]), "slowdown" if b != "queueing" else "queue"))
    expected = float((r["time_to_train_h"] / 24.0).mean()) if len(r) else math.nan
    out = []
    cum = 0.0
    for name, d, k in steps:
        d = 0.0 if not math.isfinite(d) else d
        out.append({"step": name, "kind": k, "days": d, "start": cum, "end": cum + d})
        cum += d
    out.append({"step": "expected time to train", "kind": "total", "days": expected, "start": 0.0, "end": expected})
    return pd.DataFrame(out)


# ---------------------------------------------------------------- figures

COLORS = {"ideal": "tab:green", "checkpoint": "tab:olive", "failure": "tab:red", "planned": "tab:purple",
          "slowdown": "tab:orange", "queue": "tab:brown", "total": "tab:blue"}


def fig_cdf(curves: dict[str, np.ndarray], dist: dict[str, Any]) -> "plt.Figure":
    """Empirical CDF of the time to train (days) per variant, with the ideal, the failure-free time
    and the baseline's P10/P50/P90."""
    fig, ax = plt.subplots(figsize=(9, 4))
    for i, (lab, v) in enumerate(curves.items()):
        v = np.sort(v[np.isfinite(v)])
        if not len(v):
            continue
        ax.step(np.r_[v[0], v], np.r_[0.0, np.arange(1, len(v) + 1) / len(v)], where="post", label=lab,
                lw=2.0 if i == 0 else 1.1)
    ax.axvline(dist["ideal_days"], color="tab:green", ls="--", lw=1, label="ideal (no failures, no checkpoints)")
    ax.axvline(dist["failure_free_days"], color="tab:olive", ls=":", lw=1, label="failure-free (with checkpoints)")
    for k in ("p10", "p50", "p90"):
        if f"{k}_days" in dist:
            ax.axhline(int(k[1:]) / 100, color="0.7", lw=0.6)
            ax.plot([dist[f"{k}_days"]], [int(k[1:]) / 100], "ko", ms=4)
            ax.annotate(f"{k.upper()} {dist[f'{k}_days']:.1f} d", (dist[f"{k}_days"], int(k[1:]) / 100),
                        textcoords="offset points", xytext=(6, -10), fontsize=8)
    ax.set_xlabel("time to train (days from submission)")
    ax.set_ylabel("fraction of runs finished")
    ax.set_ylim(0, 1.02)
    ax.set_title("Completion-time distribution (empirical CDF over replications)")
    ax.legend(fontsize=7, loc="upper left")
    return fig


def fig_waterfall(wf: pd.DataFrame) -> "plt.Figure":
    """Waterfall of days from the ideal to the expected time to train; the axis starts at zero, so bar
    heights compare (a 5-day loss is drawn 5/66 of a 66-day ideal, not 2.5 × it)."""
    fig, ax = plt.subplots(figsize=(10, 4.2))
    x = np.arange(len(wf))
    for i, r in enumerate(wf.itertuples(index=False)):
        bottom = 0.0 if r.kind in ("ideal", "total") else r.start
        ax.bar(i, r.days, bottom=bottom, color=COLORS.get(r.kind, "0.5"), edgecolor="k", lw=0.4)
        ax.annotate(f"{r.days:.2f}" if r.kind not in ("ideal", "total") else f"{r.days:.1f}",
                    (i, bottom + r.days), ha="center", va="bottom", fontsize=7)
    top = float(np.nanmax(wf["end"].to_numpy(dtype=float)))
    ax.set_ylim(0.0, top * 1.08 + 0.5)
    ax.set_xticks(x)
    ax.set_xticklabels(wf["step"], rotation=35, ha="right", fontsize=8)
    ax.set_ylabel("days from submission")
    ax.set_title("From ideal to expected time to train: mean days per cause")
    return fig


def fig_levers(table: pd.DataFrame) -> "plt.Figure | None":
    """Days each lever saves (paired, 95 % CI)."""
    t = table[np.isfinite(table["saved_days"].to_numpy(dtype=float))]
    if not len(t):
        return None
    fig, ax = plt.subplots(figsize=(8, 0.5 * len(t) + 1.3))
    y = np.arange(len(t))
    err = np.vstack([t.saved_days - t.saved_ci_low, t.saved_ci_high - t.saved_days])
    ax.barh(y, t.saved_days, xerr=np.nan_to_num(err), capsize=3, color="tab:blue")
    ax.axvline(0, color="k", lw=0.8)
    ax.set_yticks(y)
    ax.set_yticklabels(t.lever, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("days saved per run vs baseline (paired, common random numbers, 95 % CI)")
    ax.set_title("What-if levers")
    return fig


# ---------------------------------------------------------------- report

def days(x: Any, bare: bool = False, key: str = "forecast.days") -> str:
    """Days as the metric catalogue prints them ("77.93 days", "0.0412 days", "−0.0012 days"); ``bare``
    without the unit (a table column that names it, an interval beside a value)."""
    from twin.report.metrics import format_value

    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "–"
    return format_value(key, float(x), bare=bare)


def days_interval(lo: Any, hi: Any) -> str:
    """``[lo, hi]`` in days, bare."""
    return f"[{days(lo, True)}, {days(hi, True)}]"


def runs_for_quantile_end(q: float, upper: bool, level: float = 0.95) -> int:
    """Fewest runs for which the distribution-free interval of the ``q`` quantile has its lower (or
    ``upper``) end: (1 − q)ⁿ ≤ (1 − level)/2 for the lower, qⁿ ≤ (1 − level)/2 for the upper
    (twin/experiment/stats.py ``quantile_ci``). P10 and P90 at 95 %: 36 runs for their outer ends."""
    p = q if upper else 1.0 - q
    return max(1, math.ceil(math.log((1.0 - level) / 2.0) / math.log(p) - 1e-12))


def quantile_interval(dist: dict[str, Any], k: str) -> str:
    """The 95 % interval of quantile ``k`` ('p10', 'p50', 'p90') in words where the runs cannot give an end
    (issue 49): '≤ hi (lower end needs ≥ N runs)', '≥ lo (...)' or 'not estimable from n runs (...)'; never
    a bound of 0 or a dash."""
    lo, hi, n = dist[f"{k}_ci_low"], dist[f"{k}_ci_high"], int(dist["replications"])
    q = int(k[1:]) / 100.0
    ok_lo, ok_hi = math.isfinite(lo), math.isfinite(hi)
    if ok_lo and ok_hi:
        return days_interval(lo, hi)
    if ok_hi:
        return f"≤ {days(hi, True)} (lower end needs ≥ {runs_for_quantile_end(q, False)} runs)"
    if ok_lo:
        return f"≥ {days(lo, True)} (upper end needs ≥ {runs_for_quantile_end(q, True)} runs)"
    need = max(runs_for_quantile_end(q, False), runs_for_quantile_end(q, True))
    return f"not estimable from {n} run{'s' if n != 1 else ''} (needs ≥ {need})"


def mean_interval(dist: dict[str, Any]) -> str:
    """The 95 % t interval of the mean, or in words when fewer than 2 runs completed."""
    lo, hi = dist["mean_ci_low"], dist["mean_ci_high"]
    if math.isfinite(lo) and math.isfinite(hi):
        return days_interval(lo, hi)
    return "not estimable from fewer than 2 completed runs"


def summary_sentences(dist: dict[str, Any], loss: pd.DataFrame, table: pd.DataFrame) -> list[list[str]]:
    """The forecast's decision summary (issue 30): expected time to train, where the days go, and the
    lever to pull, recommended only when its paired interval of days saved excludes zero (each at
    1 − 0.05/k with k levers: Bonferroni), from the numbers of the distribution, loss and lever tables."""
    first = [f"Expected time to train: {days(dist['mean_days'])} (95 % CI "
             f"{mean_interval(dist)}, {dist['replications']} replications)"
             + (f"; P50 {days(dist['p50_days'])}, P90 {days(dist['p90_days'])}" if "p90_days" in dist else "")
             + f", against an ideal {days(dist['ideal_days'])}."]
    if "p90_date" in dist:
        first.append(f"Finished by {dist.get('p50_date', '–')} in half the runs and by {dist['p90_date']} in nine "
                     "out of ten.")
    paras = [first]
    lo = loss[np.isfinite(loss.mean_days.to_numpy(dtype=float)) & (loss.mean_days > 0)].sort_values(
        "mean_days", ascending=False).head(3)
    if len(lo):
        paras.append(["Where the days go (mean per run): " + "; ".join(
            f"{b} {days(d)}" for b, d in zip(lo.bucket, lo.mean_days)) + "."])
    t = table[np.isfinite(table["saved_days"].to_numpy(dtype=float))] if len(table) else table
    if not len(t):
        paras.append(["No what-if levers were requested (--lever), so there is no lever to recommend."])
        return paras
    k = len(t)
    best = t.sort_values("saved_days", ascending=False).iloc[0]
    d = best.saved_days
    sd = (best.saved_ci_high - best.saved_ci_low) / 2
    half = sd * (float(stats.half_width_factor(1 - 0.05 / k, dist["replications"])) /
                 float(stats.half_width_factor(0.95, dist["replications"]))) if k > 1 else sd
    lo_b, hi_b = d - half, d + half
    how = "95 % CI" if k == 1 else f"{100 - 5 / k:.4g} % CI, Bonferroni over {k} levers"
    if lo_b > 0:
        paras.append([f"Recommended lever: {best.lever}, which saves {days(d)} per run ({how} "
                      f"{days_interval(lo_b, hi_b)})."])
    else:
        paras.append([f"No lever clearly saves time at this number of replications ({dist['replications']}): the "
                      f"best, {best.lever}, saves {days(d)} per run ({how} {days_interval(lo_b, hi_b)}, which "
                      "includes zero)."])
    return paras


IDEAL_TRAINING = "ideal: 6PD / (GPUs × peak × MFU)"
IDEAL_LAYOUT = "ideal: steps × step time of the layout"
IDEAL_WORK = "ideal: work_h (no failures, no checkpoints)"
SIX_PD = "for reference: 6PD / (GPUs × peak × MFU) at the layout's MFU"
FLOP_CONVENTION = ("FLOP convention: MFU counts 6·N per token (N the matmul weights) plus the attention term "
                   "12·l·h·s (PaLM App. B, Megatron-LM), non-causal unless the layout sets causal (then 6·l·h·s); "
                   "the step time runs the hardware FLOPs of the slowest pipeline stage, recomputation included "
                   "(full: one more forward; selective, the default: the core attention once more).")


def ideal_label(dist: dict[str, Any]) -> str:
    """What the forecast's ideal is: steps × step time (a job with a layout), 6PD/(GPUs × peak × MFU)
    (training terms without a layout) or the given work_h."""
    basis = dist.get("ideal_basis", "6PD" if "tokens_t" in dist else "work_h")
    return {"layout": IDEAL_LAYOUT, "6PD": IDEAL_TRAINING}.get(basis, IDEAL_WORK)


def distribution_rows(dist: dict[str, Any]) -> pd.DataFrame:
    ideal = ideal_label(dist)
    rows = [{"quantity": ideal, "days": days(dist["ideal_days"], True), "95 % CI": ""},
            {"quantity": "failure-free (ideal + checkpoints)", "days": days(dist["failure_free_days"], True),
             "95 % CI": ""},
            {"quantity": "mean", "days": days(dist["mean_days"], True),
             "95 % CI": mean_interval(dist)}]
    for k in ("p10", "p50", "p90"):
        if f"{k}_days" in dist:
            rows.append({"quantity": k.upper(), "days": days(dist[f"{k}_days"], True),
                         "95 % CI": quantile_interval(dist, k)})
    if ideal == IDEAL_LAYOUT and "six_pd_days" in dist:
        rows.insert(1, {"quantity": SIX_PD, "days": days(dist["six_pd_days"], True), "95 % CI": ""})
    df = pd.DataFrame(rows)
    if "start_date" in dist:
        key = {ideal: "ideal_date", "failure-free (ideal + checkpoints)": "failure_free_date",
               "mean": "mean_date", "P10": "p10_date", "P50": "p50_date", "P90": "p90_date"}
        df["date"] = [dist.get(key.get(q, ""), "") for q in df.quantity]
    return df


def loss_rows(loss: pd.DataFrame) -> pd.DataFrame:
    """The days lost per run by cause, for people (days in the catalogue's format; the parquet keeps the raw)."""
    return pd.DataFrame({
        "cause": loss.bucket, "days lost (mean per run)": [days(x, True) for x in loss.mean_days],
        "95 % CI": [days_interval(a, b) for a, b in zip(loss.ci_low, loss.ci_high)],
        "of which lost work": [days(x, True) for x in loss.lost_days],
        "restarts": [days(x, True) for x in loss.restart_days],
        "requeue wait": [days(x, True) for x in loss.requeue_days],
        "interruptions per run": [plain(x, 4) if x == x else "–" for x in loss.interruptions]})


def lever_rows(table: pd.DataFrame) -> pd.DataFrame:
    """The what-if levers, for people (days in the catalogue's format)."""
    return pd.DataFrame({
        "lever": table.lever, "change": table.change, "mean days": [days(x, True) for x in table.mean_days],
        "P50 days": [days(x, True) for x in table.p50_days], "P90 days": [days(x, True) for x in table.p90_days],
        "days saved": [days(x, True, "forecast.days_saved") for x in table.saved_days],
        "95 % CI": [days_interval(a, b) for a, b in zip(table.saved_ci_low, table.saved_ci_high)],
        "variance reduction": [plain(x, 4) for x in table.variance_reduction], "note": table.note})


def write_report(folder: Path, meta: dict[str, Any], dist: dict[str, Any], loss: pd.DataFrame, wf: pd.DataFrame,
                 table: pd.DataFrame, curves: dict[str, np.ndarray], notes: Sequence[str] = (),
                 phases: Sequence[dict[str, Any]] | None = None) -> tuple[Path, Path]:
    """report.html and report.md (+ figures/) in ``folder``; ``phases``: a phased job's table per segment."""
    from twin import __version__
    from twin.atomic import atomic_write_text
    from twin.report.html import Doc

    doc = Doc(f"Time-to-train forecast: {meta['scenario']} / {dist['job']}", folder / "figures")
    doc.summary(summary_sentences(dist, loss, table))
    for n in notes:
        doc.warn(n) if n.startswith("warning") else doc.p(n)
    doc.h2("Run")
    items = [f"scenario {meta['scenario']} (hash {meta['scenario_hash']}), seed {meta['seed']}, "
             f"{dist['replications']} replications (SeedSequence children 0..{dist['replications'] - 1})",
             f"job {dist['job']}: {dist['gpus']:,} GPUs on {dist['nodes']:,} nodes",
             f"each replication runs until the job completes, at most {meta['bound_factor']:g} × the failure-free "
             f"time ({meta['horizon_bound_days']:.1f} days); censored: {dist['censored']}"]
    if "tokens_t" in dist:
        items.insert(1, f"{dist['params_b']:g} B parameters × {dist['tokens_t']:g} T tokens = "
                        f"{6 * dist['params_b'] * 1e9 * dist['tokens_t'] * 1e12:.3g} FLOPs (6·P·D)")
        items.append(FLOP_CONVENTION)
    doc.bullets(items)
    doc.h2("Completion-time distribution (days from submission)")
    doc.table(distribution_rows(dist))
    if phases:
        doc.h2("Phases (each on its own GPUs, run one after another)")
        doc.table(pd.DataFrame(list(phases)))
    extra = []
    if "tokens_per_day_ideal" in dist:
        extra.append(f"tokens per day: {dist['tokens_per_day_ideal'] / 1e9:.1f} B ideal, "
                     f"{dist['tokens_per_day_expected'] / 1e9:.1f} B expected")
    extra.append(f"GPU-hours: {dist['ideal_gpu_hours']:,.0f} ideal, {dist['expected_gpu_hours']:,.0f} expected "
                 f"(ETTR = ideal / expected time {dist['ettr']:.3f})")
    doc.bullets(extra)
    doc.figure(fig_cdf(curves, dist), "completion_cdf.png", "completion-time CDF")
    doc.h2("Where the days go: from ideal to expected")
    doc.figure(fig_waterfall(wf), "waterfall.png", "waterfall of days from ideal to expected")
    doc.p("Each interruption cause is charged its lost work (progress since the last checkpoint), its restart "
          "time and any queue wait for replacement nodes it caused. Slowdown is split between GPU throttling "
          "and network bandwidth in proportion to the progress each alone would cost (an attribution: the "
          "step-time model couples them).")
    doc.table(loss_rows(loss))
    doc.h2("What-if levers (common random numbers)")
    if len(table):
        fig = fig_levers(table)
        if fig is not None:
            doc.figure(fig, "levers.png", "days saved per lever")
        doc.table(lever_rows(table))
    else:
        doc.p("No levers were requested.")
    doc.p(f"Report built by twin {__version__} from the stored replications in {folder}.", cls="muted")
    h, m = folder / "report.html", folder / "report.md"
    atomic_write_text(h, doc.render_html())
    atomic_write_text(m, doc.render_md())
    return h, m
