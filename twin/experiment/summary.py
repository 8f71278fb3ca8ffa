"""The decision summary of an experiment (issue 30, item 1): per objective, which option to take,
by how much, what drives it, when it pays back and what would flip it, from the stored tables.

The numbers are computed here and stored as ``decision-summary.json`` in the experiment folder
(raw keys and values); :mod:`twin.report.summary` turns them into sentences for the terminal and
the top of every report. Nothing here runs a simulation.

**The rule (compare, sweep).** With k options and objective m (lower or higher better, from the
metric catalogue), the leading option L has the best mean. L is *recommended* only when its paired
difference against every other option (per replication, common random numbers) has a Student-t
interval that excludes zero in L's favour, each interval at level 1 − α/(k − 1) (Bonferroni over
the k − 1 pairs of L with the others; α = 0.05, so 95 % with two options). Otherwise the summary
says there is no difference at this number of replications and how many would resolve the
closest unresolved pair: the n at which t·s/√n ≤ |d̄| for its observed mean d̄ and paired SD s
(:func:`twin.experiment.stats.replications_needed`; none when d̄ = 0).

**What drives it.** The mechanism differences L − runner-up, largest first: every ``goodput.*``
bucket the tables hold (so finer breakdowns added by the model appear without a change here) and,
for a cost objective, the cost lines. **Payback and flip**: from the break-even table of a
comparison (:mod:`twin.experiment.decide`), for L against the reference (or, when L is the
reference, the runner-up against it).

**What the horizon hides.** ``horizon_hides`` lists the scheduled mechanisms (maintenance windows,
periodic tests, planned drains, the outdoor seasons) whose period an option's horizon does not hold
(:mod:`twin.scenario.horizon`): no replication sees them, so a zero difference is never read as one
that more replications would not change.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from twin.errors import InputError
from twin.experiment import stats
from twin.report import metrics as catalogue

ALPHA = 0.05
DEFAULT_OBJECTIVE = "cost.per_useful_gpu_hour"
FALLBACK_OBJECTIVES = ("goodput", "node_availability")
"""Used in turn when the default objective is not reported (a scenario without ``costs``)."""
COST_LINES = ("cost.capital", "cost.energy", "cost.labour", "cost.repair_parts", "cost.spares_holding",
              "cost.water")
DRIVERS = 3
"""Mechanism differences named in a summary."""
FILE = "decision-summary.json"


def resolve_objectives(requested: Sequence[str] | None, columns: Sequence[str]) -> tuple[list[str], list[str]]:
    """(objectives, notes). Requested ones must be reported and have a direction; with none, the
    default (cost per useful GPU-hour) or, without costs, the first fallback the tables report."""
    cols = set(columns)
    notes: list[str] = []
    if requested:
        out = []
        for m in requested:
            if m not in cols:
                raise InputError("--objective", m, "no such metric in the results; available: "
                                 + ", ".join(sorted(c for c in cols if catalogue.direction(c) != 0)))
            if catalogue.direction(m) == 0:
                raise InputError("--objective", m, "has no better direction (neither higher nor lower is better); "
                                 "choose a metric with one")
            if m not in out:
                out.append(m)
        return out, notes
    if DEFAULT_OBJECTIVE in cols:
        return [DEFAULT_OBJECTIVE], notes
    for m in FALLBACK_OBJECTIVES:
        if m in cols:
            notes.append(f"no_costs:{m}")
            return [m], notes
    return [], notes


def value_text(v: Any) -> str:
    """A swept parameter's value as a person reads it: a whole number without ``.0`` (4, not 4.0)."""
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e15:
        return str(int(v))
    return str(v)


def _finite(x: float) -> float | None:
    return float(x) if x is not None and math.isfinite(float(x)) else None


def _aligned(tables: Mapping[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    t = stats.with_absent_zeros(dict(tables))
    idx = None
    for v in t.values():
        i = pd.Index(v["replication"])
        idx = i if idx is None else idx.intersection(i)
    assert idx is not None
    return {k: v.set_index("replication").sort_index().loc[idx.sort_values()] for k, v in t.items()}


def _col(t: pd.DataFrame, m: str) -> np.ndarray:
    return t[m].to_numpy(dtype=np.float64) if m in t.columns else np.full(len(t), np.nan)


def _pair(a: pd.DataFrame, b: pd.DataFrame, m: str, level: float) -> dict[str, Any]:
    """Paired difference b − a of metric m."""
    p = stats.paired(_col(a, m), _col(b, m), level)
    return {"diff": p["diff"], "ci_low": p["ci_low"], "ci_high": p["ci_high"], "sd": p["std_diff"], "n": int(p["n"])}


def mechanisms(columns: Sequence[str], objective: str) -> list[str]:
    """The mechanism metrics a summary may name: the ``goodput.mechanism.*`` buckets (or, in tables
    without them, the coarse ``goodput.*`` buckets but useful work), which add up with goodput to 1,
    and the cost lines for a cost objective."""
    # the mechanism buckets partition the losses (with goodput they sum to 1); without them, the coarse
    # one-level buckets do. Never both, nor the raw breakdowns (goodput.down.<cause>, ...): they overlap.
    out = [c for c in columns if c.startswith("goodput.mechanism.") and catalogue.find(c)]
    if not out:
        out = [c for c in columns if c.startswith("goodput.") and c.count(".") == 1 and c != "goodput.useful"
               and catalogue.find(c)]
    if objective.startswith("cost."):
        out += [c for c in COST_LINES if c in columns]
    return out


def drivers(lead: pd.DataFrame, other: pd.DataFrame, objective: str, level: float = 1 - ALPHA) -> list[dict[str, Any]]:
    """The largest mechanism differences lead − other (absolute mean, largest first), at most
    :data:`DRIVERS`, each with its paired interval and whether it is in the lead's favour."""
    rows = []
    for m in mechanisms(list(lead.columns), objective):
        p = _pair(other, lead, m, level)
        if not (p["diff"] == p["diff"]) or p["diff"] == 0:
            continue
        rows.append({"metric": m, **p, "favours_lead": bool(catalogue.direction(m) * p["diff"] > 0)})
    rows.sort(key=lambda r: -abs(r["diff"]))
    good = [r for r in rows if not r["metric"].startswith("cost.")][:DRIVERS]
    cost = [r for r in rows if r["metric"].startswith("cost.")][:DRIVERS]
    return good + cost


def rank_options(tables: Mapping[str, pd.DataFrame], objective: str, alpha: float = ALPHA) -> dict[str, Any]:
    """The rule of the module docstring for one objective over aligned replication tables."""
    sgn = catalogue.direction(objective)
    names = list(tables)
    k = len(names)
    means = {n: float(np.nanmean(_col(t, objective))) if np.isfinite(_col(t, objective)).any() else math.nan
             for n, t in tables.items()}
    order = sorted(names, key=lambda n: (-(sgn * means[n]) if means[n] == means[n] else math.inf, names.index(n)))
    lead = order[0]
    level = 1.0 - alpha / max(1, k - 1)
    pairs = []
    for o in order[1:]:
        p = _pair(tables[o], tables[lead], objective, level)
        resolved = bool((sgn > 0 and p["ci_low"] > 0) or (sgn < 0 and p["ci_high"] < 0))
        need = None
        if not resolved and p["diff"] == p["diff"] and p["diff"] != 0 and p["sd"] == p["sd"]:
            d = _col(tables[lead], objective) - _col(tables[o], objective)
            need = int(stats.replications_needed(d, abs(p["diff"]), level, cap=10_000_000))
        pairs.append({"other": o, **p, "resolved": resolved, "replications_needed": need,
                      "identical": bool(p["n"] > 1 and p["sd"] == 0 and p["diff"] == 0)})
    recommended = lead if pairs and all(p["resolved"] for p in pairs) else None
    unresolved = [p for p in pairs if not p["resolved"]]
    needs = [p["replications_needed"] for p in unresolved if p["replications_needed"] is not None]
    return {"metric": objective, "direction": sgn, "means": means, "order": order, "lead": lead,
            "runner_up": order[1] if k > 1 else None, "level": level, "pairs_tested": k - 1,
            "pairs": pairs, "recommended": recommended,
            "replications_needed": max(needs) if needs and len(needs) == len(unresolved) else None,
            "all_identical": bool(unresolved) and all(p["identical"] for p in unresolved)}


def _years(x: float) -> float | str | None:
    """A payback in years for JSON: ``"never"`` for inf (never repaid), None for unknown (NaN)."""
    x = float(x)
    return "never" if x == math.inf else (x if math.isfinite(x) else None)


def payback(be: pd.DataFrame | None, lead: str, runner_up: str | None, reference: str) -> dict[str, Any] | None:
    """Payback and break-even of the lead against the reference (or of the runner-up against the
    reference when the lead is the reference), from a comparison's break-even table."""
    if be is None or not len(be) or runner_up is None:
        return None
    if lead == reference:
        option, against, sign = lead, runner_up, -1.0
        row = be[be.variant == runner_up]
    else:
        option, against, sign = lead, reference, 1.0
        row = be[be.variant == lead]
    if not len(row):
        return None
    r = row.iloc[0]
    lo, hi = sign * float(r.annual_net_benefit_ci_low), sign * float(r.annual_net_benefit_ci_high)
    heavier_is_option = (str(r.capital_heavier) == "variant") == (sign > 0)
    price = float(r.energy_price_breakeven_per_kwh)
    mult = float(r.tariff_multiplier_breakeven)
    return {
        "option": option, "against": against, "currency": str(r.currency),
        "extra_capital": sign * float(r.extra_capital), "annual_net_benefit": sign * float(r.annual_net_benefit),
        "annual_net_benefit_ci_low": min(lo, hi), "annual_net_benefit_ci_high": max(lo, hi),
        "heavier": option if heavier_is_option else against,
        "payback_years": _years(r.payback_years), "payback_years_ci_low": _years(r.payback_years_ci_low),
        "payback_years_ci_high": _years(r.payback_years_ci_high),
        "tariff_multiplier_breakeven": mult, "energy_price_breakeven_per_kwh": price,
        "energy_price_per_kwh": price / mult if mult and math.isfinite(mult) and mult > 0 else math.nan,
        "discount_rate": float(r.discount_rate),
    }


def options_summary(tables: Mapping[str, pd.DataFrame], objectives: Sequence[str], reference: str,
                    breakeven: pd.DataFrame | None = None, alpha: float = ALPHA) -> list[dict[str, Any]]:
    """One entry per objective over several options (compare, sweep)."""
    al = _aligned(tables)
    out = []
    for m in objectives:
        r = rank_options(al, m, alpha)
        if r["runner_up"] is not None:
            r["drivers"] = drivers(al[r["lead"]], al[r["runner_up"]], m)
        r["payback"] = payback(breakeven, r["lead"], r["runner_up"], reference)
        r["replications"] = int(len(next(iter(al.values()))))
        out.append(r)
    return out


def single_summary(table: pd.DataFrame, objectives: Sequence[str]) -> list[dict[str, Any]]:
    """One entry per objective of one option (a Monte Carlo): its mean and interval, and the largest
    losses of installed GPU-hours (the ``goodput.*`` buckets but useful work)."""
    out = []
    for m in objectives:
        mean, lo, hi = stats.t_interval(_col(table, m), bounds=stats.metric_range(m))
        losses: list[dict[str, Any]] = []
        for b in mechanisms(list(table.columns), m):
            if b.startswith("goodput."):
                bm, blo, bhi = stats.t_interval(_col(table, b), bounds=(0.0, 1.0))
                if bm == bm and bm > 0:
                    losses.append({"metric": b, "mean": bm, "ci_low": blo, "ci_high": bhi})
        losses.sort(key=lambda r: -r["mean"])
        out.append({"metric": m, "mean": mean, "ci_low": lo, "ci_high": hi, "replications": int(len(table)),
                    "losses": losses[:DRIVERS]})
    return out


# ------------------------------------------------------------------------------ from a results folder

def _read_json(path: Path) -> dict[str, Any]:
    """A stored JSON mapping; missing or damaged: bad input (exit 2), as for the report."""
    from twin.report.stored import read_json

    return read_json(path)


def _read_table(path: Path) -> pd.DataFrame:
    from twin.report.stored import read_table

    return read_table(path)


def _resolved(mc_folder: Path) -> Any:
    """The stored ``scenario.resolved.yaml`` of a Monte-Carlo folder, None when there is none."""
    import yaml

    p = mc_folder / "scenario.resolved.yaml"
    if not p.is_file():
        return None
    # a file twin wrote: libyaml's parser when present (the same document; ~30 ms less per summary)
    return yaml.load(p.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def _currency(mc_folder: Path) -> str:
    doc = _resolved(mc_folder)
    c = doc.get("costs") if isinstance(doc, dict) else None
    return str(c.get("currency", "")) if isinstance(c, dict) else ""


def _leaf_diff(a: Any, b: Any, path: str = "", depth: int = 4) -> list[str]:
    """Scenario fields (dotted, at most ``depth`` deep) whose values differ between documents a and b."""
    if isinstance(a, dict) and isinstance(b, dict) and depth > 0:
        out: list[str] = []
        for k in sorted(set(a) | set(b), key=str):
            if a.get(k) != b.get(k):
                sub = f"{path}.{k}" if path else str(k)
                out += _leaf_diff(a.get(k), b.get(k), sub, depth - 1) or [sub]
        return out
    return [] if a == b else [path]


def differences(labels: Sequence[str], folders: Sequence[Path]) -> dict[str, list[str]]:
    """Per option, the fields of its resolved scenario unlike the first option's (name and description
    left out), so that a summary can say what two tied options differ in."""
    docs = [_resolved(f) for f in folders]
    if not docs or not isinstance(docs[0], dict):
        return {}
    skip = {"name", "description"}
    return {lab: [f for f in _leaf_diff(docs[0], d) if f.split(".")[0] not in skip]
            for lab, d in zip(labels, docs) if isinstance(d, dict)}


def horizon_hides(folders: Sequence[Path]) -> list[dict[str, Any]]:
    """The scheduled mechanisms the horizon of any of these options hides (:mod:`twin.scenario.horizon`),
    once per field: a difference they would make cannot show at any number of replications."""
    from twin.scenario.horizon import hidden_from_resolved

    out: dict[str, dict[str, Any]] = {}
    for f in folders:
        for h in hidden_from_resolved(_resolved(f)):
            out.setdefault(h["field"], h)
    return list(out.values())


def build(folder: Path | str, objectives: Sequence[str] | None = None) -> dict[str, Any]:
    """The decision summary of the experiment stored in ``folder`` (montecarlo, compare, sweep or
    sensitivity), from its stored tables."""
    folder = Path(folder)
    meta = _read_json(folder / "experiment.json")
    kind = meta.get("kind")
    out: dict[str, Any] = {"kind": kind, "alpha": ALPHA}
    if kind == "montecarlo":
        t = _read_table(folder / "replications.parquet")
        objs, notes = resolve_objectives(objectives, list(t.columns))
        out.update(option=meta.get("scenario"), currency=_currency(folder), notes=notes,
                   objectives=single_summary(t, objs), horizon_hides=horizon_hides([folder]))
    elif kind in ("compare", "sweep"):
        if kind == "compare":
            labels = [v["label"] for v in meta["variants"]]
            subs = [folder / v["folder"] for v in meta["variants"]]
            reference = meta["reference"]
            p = folder / "breakeven.parquet"
            be = _read_table(p) if p.is_file() else None
        else:
            params = [p["path"] for p in meta["params"]]
            labels = ["point " + str(pt["point"]) + " (" + ", ".join(f"{p}={value_text(pt[p])}" for p in params) + ")"
                      for pt in meta["points"]]
            subs = [folder / pt["folder"] for pt in meta["points"]]
            reference, be = labels[0], None
            dm = meta.get("decision") or {}
            if objectives is None and dm.get("objective"):
                objectives = [dm["objective"]]
            dp = folder / "decision.parquet"
            if dm.get("constraints") and dp.is_file():  # only the points that meet the constraints compete
                feas = set(_read_table(dp).query("feasible").point.astype(int))
                keep = [i for i, pt in enumerate(meta["points"]) if int(pt["point"]) in feas]
                out["constraints"] = list(dm["constraints"])
                out["excluded"] = [labels[i] for i in range(len(labels)) if i not in keep]
                labels, subs = [labels[i] for i in keep], [subs[i] for i in keep]
        tables = {lab: _read_table(s / "replications.parquet") for lab, s in zip(labels, subs)}
        cols = sorted(set.intersection(*[set(t.columns) for t in tables.values()])) if tables else []
        if tables:
            objs, notes = resolve_objectives(objectives, cols)
        else:  # no sweep point meets the constraints: nothing competes, nothing to resolve the objective on
            objs, notes = [], ["no_feasible"]
        out.update(options=labels, reference=reference, currency=_currency(subs[0]) if subs else "", notes=notes,
                   horizon_hides=horizon_hides(subs), differs=differences(labels, subs))
        if len(tables) >= 2:
            out["objectives"] = options_summary(tables, objs, reference, be)
        elif len(tables) == 1:
            out["objectives"] = single_summary(next(iter(tables.values())), objs)
            out["single_option"] = labels[0]
        else:
            out["objectives"] = []
    elif kind == "sensitivity":
        ranking = _read_table(folder / "ranking.parquet")
        rows = []
        for m in meta["metrics"]:
            d = ranking[ranking.metric == m].sort_values("rank")
            if len(d):
                r = d.iloc[0]
                rows.append({"metric": m, "factor": str(r.factor), "low": str(r.low), "high": str(r.high),
                             "delta_low": float(r.delta_low), "delta_high": float(r.delta_high),
                             "delta_low_ci_low": float(r.delta_low_ci_low),
                             "delta_low_ci_high": float(r.delta_low_ci_high),
                             "delta_high_ci_low": float(r.delta_high_ci_low),
                             "delta_high_ci_high": float(r.delta_high_ci_high), "swing": float(r.swing),
                             "runner_up": str(d.iloc[1].factor) if len(d) > 1 else None,
                             "runner_up_swing": float(d.iloc[1].swing) if len(d) > 1 else None})
        out.update(scenario=meta.get("scenario"), factors=rows,
                   currency=_currency(folder / meta["baseline_folder"]),
                   horizon_hides=horizon_hides([folder / meta["baseline_folder"]]))
    else:
        raise InputError(str(folder / "experiment.json"), "kind", f"no decision summary for kind {kind!r}")
    return out


def write(folder: Path | str, objectives: Sequence[str] | None = None) -> dict[str, Any]:
    """:func:`build` and store it as ``decision-summary.json`` in ``folder``; returns it."""
    from twin.experiment.store import write_json

    d = build(folder, objectives)
    write_json(Path(folder) / FILE, d)
    return d


__all__ = ["ALPHA", "DEFAULT_OBJECTIVE", "FILE", "build", "drivers", "horizon_hides", "options_summary", "payback",
           "rank_options",
           "resolve_objectives", "single_summary", "write"]
