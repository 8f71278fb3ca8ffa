"""``twin sweep`` (a cartesian grid of ``--set`` overrides) and ``twin sensitivity`` (one factor
at a time, low and high, against the unchanged scenario).

Every grid point or variant is the scenario file loaded with the global ``--set`` overrides plus
its own, and runs as its own Monte Carlo (own folder, reused and resumed). The seed is not
changed, so all points share replication seeds: common random numbers across the sweep, and
sensitivity deltas are paired differences against the baseline.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import pandas as pd

from twin.errors import InputError
from twin.experiment import stats
from twin.experiment.runner import DEFAULT_MAX_REPS, ExperimentResult, check_label, experiment_folder, run_experiment
from twin.atomic import atomic_write_parquet, make_dirs
from twin.experiment.store import versions, write_json
from twin.report import metrics as catalogue
from twin.scenario.loader import Loaded, load_scenario, parse_set

TIDY_COLUMNS = ["metric", "n", "mean", "std", "ci_low", "ci_high", "half_width", "p5", "p50", "p95"]


@dataclass
class Param:
    path: str
    raw: list[str]
    values: list[Any]


def parse_param(expr: str, exactly: int | None = None) -> Param:
    """``a.b.c=4,6,8``: a dotted scenario path and comma-separated YAML values."""
    if "=" not in expr:
        raise InputError("--param", expr, "expected path.to.key=value1,value2,...")
    path, _, rest = expr.partition("=")
    path = path.strip()
    raw = [v.strip() for v in rest.split(",")]
    if not path or any(not k for k in path.split(".")):
        raise InputError("--param", expr, "empty key in path")
    if any(v == "" for v in raw):
        raise InputError("--param", expr, "empty value in the list")
    if exactly is not None and len(raw) != exactly:
        raise InputError("--param", expr, f"give exactly {exactly} values (low,high), got {len(raw)}")
    if len(set(raw)) != len(raw):
        raise InputError("--param", expr, "values repeat")
    try:
        values = [parse_set(f"{path}={v}")[1] for v in raw]
    except InputError as exc:  # (values are split on commas: a list or mapping cannot be swept)
        raise InputError("--param", expr, exc.message) from None
    return Param(path, raw, values)


def _column_values(values: list[Any]) -> list[Any]:
    """Parquet needs one type per column: numbers stay numbers, anything else becomes text."""
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return [float(v) for v in values]
    return [v if isinstance(v, str) else json.dumps(v) for v in values]


def _study_folder(results_root: Path | str, base: Any, label: str | None, kind: str, *parts: str) -> Path:
    """``<results>/<scenario>/<label>``, or ``<kind>-<digest of the base hash and parts>-s<seed>``."""
    if label is not None:
        check_label(label)
    folder: Path = Path(results_root) / base.scenario.name / (
        label or f"{kind}-{_digest(base.hash, *parts)}-s{base.scenario.seed}")
    return folder


def _digest(*parts: str) -> str:
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:12]


def _run_point(ld: Loaded, reps: int, opts: Mapping[str, Any], wiped: set[Path]) -> ExperimentResult:
    mc = experiment_folder(opts["results_root"], ld)
    ow = bool(opts["overwrite"]) and mc not in wiped
    wiped.add(mc)
    return run_experiment(ld, reps, opts["workers"], opts["dask_address"], mc, ow, opts.get("target_ci"),
                          opts["progress"], max_reps=opts.get("max_reps", DEFAULT_MAX_REPS), echo=opts["echo"])


def _options(workers: int, dask_address: str | None, results_root: Path | str, overwrite: bool,
             target_ci: Mapping[str, float] | None, max_reps: int, progress: bool,
             echo: Callable[[str], None]) -> dict[str, Any]:
    return {"workers": workers, "dask_address": dask_address, "results_root": results_root, "overwrite": overwrite,
            "target_ci": target_ci, "max_reps": max_reps, "progress": progress, "echo": echo}


# ---------------------------------------------------------------------------------- sweep

@dataclass
class SweepResult:
    folder: Path
    params: list[Param]
    points: pd.DataFrame
    tidy: pd.DataFrame
    results: list[ExperimentResult]
    base: Loaded
    decision: pd.DataFrame | None = None
    """With an objective: one row per point (twin.experiment.decide.choose), stored as decision.parquet."""
    chosen: int | None = None


def run_sweep(scenario: str, sets: Sequence[str], param_exprs: Sequence[str], reps: int, workers: int = 1,
              dask_address: str | None = None, results_root: Path | str = "results", label: str | None = None,
              overwrite: bool = False, target_ci: Mapping[str, float] | None = None,
              max_reps: int = DEFAULT_MAX_REPS, progress: bool = True,
              echo: Callable[[str], None] = print, objective: str | None = None,
              constraints: Sequence[str] = (), confidence: float = 0.95) -> SweepResult:
    """Run every grid point. With ``objective``: also the best point (largest mean of a
    higher-is-better objective, smallest of a lower-is-better one) whose ``constraints``
    (``metric>=x`` / ``metric<=x``) hold at ``confidence`` (twin.experiment.decide.choose)."""
    from twin.experiment import decide

    if not param_exprs:
        raise InputError("sweep", "--param", "give at least one --param path=v1,v2,...")
    cons = [decide.parse_constraint(c) for c in constraints]
    if cons and objective is None:
        raise InputError("sweep", "--constraint", "give --objective METRIC with --constraint")
    decide.check_confidence(confidence)
    if objective is not None and catalogue.find(objective) is not None:
        decide.sense_of(objective)  # a metric with no better direction is refused before any replication
    params = [parse_param(e) for e in param_exprs]
    paths = [p.path for p in params]
    if len(set(paths)) != len(paths):
        raise InputError("--param", paths[0], "each path may be swept by one --param only")
    fixed = {s.partition("=")[0].strip() for s in sets}
    for p in paths:
        if p in fixed:
            raise InputError("--param", p, "also given with --set, which the sweep would override: give it once")
    base = load_scenario(scenario, list(sets))
    grid = list(itertools.product(*[range(len(p.raw)) for p in params]))
    points = []
    for combo in grid:
        over = [f"{p.path}={p.raw[k]}" for p, k in zip(params, combo)]
        points.append((combo, load_scenario(scenario, list(sets) + over)))
    folder = _study_folder(results_root, base, label, "sweep", *param_exprs)
    opts = _options(workers, dask_address, results_root, overwrite, target_ci, max_reps, progress, echo)
    wiped: set[Path] = set()
    results = []
    prow, tidy = [], []
    for k, (combo, ld) in enumerate(points):
        echo(f"point {k} ({k + 1} of {len(points)}): " + ", ".join(f"{p.path}={p.raw[c]}" for p, c in zip(params, combo)))
        res = _run_point(ld, reps, opts, wiped)
        results.append(res)
        vals = {p.path: _column_values(p.values)[c] for p, c in zip(params, combo)}
        prow.append({"point": k, **vals, "scenario_hash": ld.hash, "replications": len(res.replications),
                     "folder": os.path.relpath(res.folder, folder)})
        s = res.summary[TIDY_COLUMNS]
        tidy.append(s.assign(point=k, **vals))
    points_df = pd.DataFrame(prow)
    tidy_df = pd.concat(tidy, ignore_index=True)
    tidy_df = tidy_df[["point"] + paths + TIDY_COLUMNS]
    make_dirs(folder)
    atomic_write_parquet(folder / "points.parquet", points_df)
    atomic_write_parquet(folder / "sweep.parquet", tidy_df)
    decision, chosen, dmeta = None, None, None
    if objective is not None:
        decision, chosen = decide.choose(tidy_df, paths, objective, cons, confidence)
        atomic_write_parquet(folder / "decision.parquet", decision)
        dmeta = {"objective": objective, "sense": decide.sense_of(objective), "constraints": [str(c) for c in cons],
                 "confidence": confidence, "chosen_point": chosen}
    elif (folder / "decision.parquet").is_file():  # left by an earlier run with an objective
        (folder / "decision.parquet").unlink()
    write_json(folder / "experiment.json", {
        "kind": "sweep", "scenario": base.scenario.name, "scenario_hash": base.hash, "seed": base.scenario.seed,
        "source": str(scenario), "set": list(sets), "params": [{"path": p.path, "values": p.raw} for p in params],
        "replications": reps, "target_ci": dict(target_ci) if target_ci else None, "versions": versions(),
        "points": points_df.to_dict("records"), "decision": dmeta,
    })
    from twin.experiment import summary

    summary.write(folder, [objective] if objective else None)
    return SweepResult(folder, params, points_df, tidy_df, results, base, decision, chosen)


# ---------------------------------------------------------------------------- sensitivity

@dataclass
class Factor:
    name: str
    low_label: str
    high_label: str
    low_set: str
    high_set: str


@dataclass
class SensitivityResult:
    folder: Path
    factors: list[Factor]
    deltas: pd.DataFrame
    ranking: pd.DataFrame
    base: Loaded
    metrics: list[str]
    results: dict[str, ExperimentResult] = field(default_factory=dict)


_SCALE_KEY = {"exponential": "mean_h", "lognormal": "mean_h", "weibull": "scale_h", "fixed": "value_h"}


def factor_overrides(loaded: Loaded, f: float) -> list[Factor]:
    """``--factor f``: for every node part, its failure distribution's mean (exponential and
    lognormal ``mean_h``, i.e. the MTBF; Weibull ``scale_h``; fixed ``value_h``) and its repair
    time's mean scaled by 1/f (low) and f (high). Empirical distributions and the repair of
    transient parts (which have none) are skipped. Each override replaces the whole
    distribution mapping, so shorthand (``mtbf_h``) in the file does not matter."""
    if not (math.isfinite(f) and f > 1):
        raise InputError("--factor", str(f), "must be a number > 1 (e.g. 2 for ×½ and ×2)")
    out = []
    parts = loaded.resolved["cluster"]["node"]["parts"]
    for name, part in parts.items():
        targets = [("failure", f"cluster.node.parts.{name}.failure", part["failure"])]
        if part.get("effect") != "transient":
            targets.append(("repair", f"cluster.node.parts.{name}.repair.time", part["repair"]["time"]))
        for what, path, dist in targets:
            key = _SCALE_KEY.get(dist.get("dist"))
            if key is None or not dist.get(key):
                continue
            lo, hi = dict(dist), dict(dist)
            lo[key] = dist[key] / f
            hi[key] = dist[key] * f
            out.append(Factor(f"{name}.{what} ({key})", f"×1/{f:g}", f"×{f:g}",
                              f"{path}={json.dumps(lo)}", f"{path}={json.dumps(hi)}"))
    return out


def sensitivity_metrics(columns: Sequence[str]) -> list[str]:
    """Δ goodput (``goodput`` if the scenario reports it, else ``node_availability``), Δ
    availability (``node_availability``) and, with costs, Δ cost per useful GPU-hour
    (``cost.per_useful_gpu_hour``: a price factor such as ``costs.water_per_m3`` moves only this one),
    without repeating one."""
    first = "goodput" if "goodput" in columns else "node_availability"
    out = [first]
    if "node_availability" in columns and "node_availability" not in out:
        out.append("node_availability")
    if "cost.per_useful_gpu_hour" in columns:
        out.append("cost.per_useful_gpu_hour")
    return [m for m in out if m in columns]


def run_sensitivity(scenario: str, sets: Sequence[str], param_exprs: Sequence[str], factor: float | None, reps: int,
                    workers: int = 1, dask_address: str | None = None, results_root: Path | str = "results",
                    label: str | None = None, overwrite: bool = False, target_ci: Mapping[str, float] | None = None,
                    max_reps: int = DEFAULT_MAX_REPS, progress: bool = True,
                    echo: Callable[[str], None] = print) -> SensitivityResult:
    base = load_scenario(scenario, list(sets))
    factors: list[Factor] = []
    for e in param_exprs:
        p = parse_param(e, exactly=2)
        factors.append(Factor(p.path, p.raw[0], p.raw[1], f"{p.path}={p.raw[0]}", f"{p.path}={p.raw[1]}"))
    if factor is not None:
        factors += factor_overrides(base, factor)
    if not factors:
        raise InputError("sensitivity", "--param", "give --param path=low,high and/or --factor F")
    names = [fa.name for fa in factors]
    if len(set(names)) != len(names):
        raise InputError("--param", names[0], "a factor is given twice")
    folder = _study_folder(results_root, base, label, "sens", *param_exprs, str(factor))
    opts = _options(workers, dask_address, results_root, overwrite, target_ci, max_reps, progress, echo)
    wiped: set[Path] = set()
    echo(f"baseline: {base.scenario.name} (hash {base.hash}); {len(factors)} factors x 2 levels, "
         f"common random numbers (seed {base.scenario.seed})")
    results = {"baseline": _run_point(base, reps, opts, wiped)}
    ref = results["baseline"].replications
    # a metric the baseline never reports a number for (the cost per useful GPU-hour without a workload) is left out
    metrics = [m for m in sensitivity_metrics(list(ref.columns)) if ref[m].notna().any()]
    rows = []
    variants = []
    for k, fa in enumerate(factors):
        for level, lab, expr in (("low", fa.low_label, fa.low_set), ("high", fa.high_label, fa.high_set)):
            ld = load_scenario(scenario, list(sets) + [expr])
            if ld.scenario.seed != base.scenario.seed:
                raise InputError("--param", fa.name, "a sensitivity factor may not change the seed")
            echo(f"factor {k + 1}/{len(factors)} {fa.name} {level} ({lab})")
            res = _run_point(ld, reps, opts, wiped)
            results[f"{fa.name}:{level}"] = res
            variants.append({"factor": fa.name, "level": level, "value": lab, "scenario_hash": ld.hash,
                             "folder": os.path.relpath(res.folder, folder)})
            pt = stats.paired_table({"baseline": ref, "v": res.replications}, "baseline", metrics)
            for r in pt.to_dict("records"):
                rows.append({"factor": fa.name, "level": level, "value": lab, "metric": r["metric"],
                             "n": r["n"], "baseline": r["mean_a"], "mean": r["mean_b"], "delta": r["diff"],
                             "ci_low": r["ci_low"], "ci_high": r["ci_high"]})
    deltas = pd.DataFrame(rows, columns=["factor", "level", "value", "metric", "n", "baseline", "mean", "delta",
                                         "ci_low", "ci_high"])
    ranking = rank(deltas, metrics)
    make_dirs(folder)
    atomic_write_parquet(folder / "deltas.parquet", deltas)
    atomic_write_parquet(folder / "ranking.parquet", ranking)
    write_json(folder / "experiment.json", {
        "kind": "sensitivity", "scenario": base.scenario.name, "scenario_hash": base.hash,
        "seed": base.scenario.seed, "source": str(scenario), "set": list(sets), "replications": reps,
        "factor": factor, "metrics": metrics, "target_ci": dict(target_ci) if target_ci else None,
        "baseline_folder": os.path.relpath(results["baseline"].folder, folder),
        "factors": [vars(fa) for fa in factors], "variants": variants, "versions": versions(),
    })
    from twin.experiment import summary

    summary.write(folder)
    return SensitivityResult(folder, factors, deltas, ranking, base, metrics, results)


def rank(deltas: pd.DataFrame, metrics: Sequence[str]) -> pd.DataFrame:
    """One row per (metric, factor): Δ low, Δ high and the swing |Δ high − Δ low|, ranked by swing
    (largest first) within each metric."""
    out = []
    for m in metrics:
        d = deltas[deltas.metric == m]
        for fa, g in d.groupby("factor", sort=False):
            lo = g[g.level == "low"].iloc[0]
            hi = g[g.level == "high"].iloc[0]
            out.append({"metric": m, "factor": fa, "low": lo.value, "high": hi.value,
                        "delta_low": lo.delta, "delta_low_ci_low": lo.ci_low, "delta_low_ci_high": lo.ci_high,
                        "delta_high": hi.delta, "delta_high_ci_low": hi.ci_low, "delta_high_ci_high": hi.ci_high,
                        "swing": abs(hi.delta - lo.delta)})
    df = pd.DataFrame(out, columns=["metric", "factor", "low", "high", "delta_low", "delta_low_ci_low",
                                    "delta_low_ci_high", "delta_high", "delta_high_ci_low", "delta_high_ci_high",
                                    "swing"])
    if len(df):
        df["rank"] = df.groupby("metric")["swing"].rank(ascending=False, method="first").astype(int)
        df = df.sort_values(["metric", "rank"], kind="stable").reset_index(drop=True)
    else:
        df["rank"] = pd.Series(dtype="int64")
    return df
