"""What-if levers: the forecast re-run with one change at a time, under common random numbers.

Every lever is a variant of the baseline scenario with the baseline's seed and the same
replication indices, so replication i of a lever sees the same draws as replication i of the
baseline for every component path they share; the days a lever saves are paired differences
(baseline − lever) of the time to train, with Student-t intervals (twin.experiment.stats.paired).

Levers (``--levers``, comma-separated; default ``daly,spares,halve-top``):

- ``daly``: checkpoint interval at the Daly (2006) optimum τ = √(2δM)·[1 + ⅓(δ/2M)^½ + (1/9)(δ/2M)] − δ
  (twin.physics.closed_forms.daly_interval_h), δ the job's checkpoint pause and M its MTBF
  estimated from the baseline replications: M̂ = Σ time holding nodes / Σ unplanned interruptions.
  When the baseline had SDC rollbacks, Daly does not apply (a rollback returns to the newest kept
  checkpoint captured before the corruption, a detection latency earlier): the interval is the optimum
  of twin.physics.checkpoints for the observed crash and rollback rates, the scenario's detection
  latency and the job's checkpoint retention (labelled "checkpoint at the optimum").
- ``spares``: +N hot-spare nodes (``--lever-spares N``, default: as many as the scenario has, at
  least one rack), added as whole racks at the end of the hall (existing nodes keep their paths,
  hence their draws).
- ``halve-top``: the failure rate of the cause that cost the most days in the baseline, halved:
  the failure time scale of its part doubled (exponential mean, Weibull scale, lognormal mean,
  fixed value; with the same uniforms each failure comes twice as late), or the link-flap rate
  halved. Planned maintenance and causes without a failure distribution in the scenario
  (thermal trips) are skipped for the next cause.
- ``--lever-scenario LABEL=PATH``: another scenario file (e.g. ``extends: forecast-405b.yaml`` with
  liquid cooling or 2N power) that holds the same job; run with the baseline's seed.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pandas as pd

from twin.errors import InputError
from twin.experiment import stats
from twin.forecast.target import Target, bound_h, select_job, target_of, with_horizon
from twin.physics import closed_forms as cf
from twin.scenario.loader import Loaded, load_scenario

LEVERS = ("daly", "spares", "halve-top")
"""Built-in levers, in table order."""
SKIP_CAUSES = ("planned", "thermal_trip")
"""Causes that are not a failure rate to halve."""


@dataclass
class Lever:
    """One what-if variant: ``loaded`` is None when the lever does not apply (``note`` says why)."""

    key: str
    label: str
    change: str
    loaded: Loaded | None
    note: str = ""


def parse_levers(text: str | None) -> list[str]:
    """``daly,spares,halve-top`` → list; ``none`` or empty → []. InputError on unknown names."""
    if text is None:
        return list(LEVERS)
    names = [t.strip() for t in text.split(",") if t.strip()]
    if names in ([], ["none"]):
        return []
    bad = [n for n in names if n not in LEVERS]
    if bad:
        raise InputError("--levers", text, f"unknown lever(s) {bad}; allowed: {', '.join(LEVERS)} or none")
    return [n for n in LEVERS if n in names]


def parse_lever_scenarios(exprs: Sequence[str]) -> list[tuple[str, str]]:
    """``LABEL=PATH`` pairs; the label names the lever in the table."""
    out = []
    for e in exprs:
        lab, sep, path = e.partition("=")
        if not sep or not lab.strip() or not path.strip():
            raise InputError("--lever-scenario", e, "expected LABEL=PATH, e.g. liquid=scenarios/forecast-405b-liquid.yaml")
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", lab.strip()):
            raise InputError("--lever-scenario", e, "the label must be letters, digits, '_', '.', '-'")
        out.append((lab.strip(), path.strip()))
    if len({lab for lab, _ in out}) != len(out):
        raise InputError("--lever-scenario", ",".join(exprs), "labels must be unique")
    return out


def _col(df: pd.DataFrame, name: str) -> np.ndarray:
    if name not in df.columns:
        return np.zeros(len(df))
    return np.nan_to_num(df[name].to_numpy(dtype=float), nan=0.0)


def mtbf_estimate(rows: pd.DataFrame) -> tuple[float, float, float]:
    """(M̂, unplanned interruptions, exposure hours): the job's MTBF from replications, hours.
    M̂ = Σ exposure / Σ unplanned interruptions (inf when there were none)."""
    n = float(_col(rows, "interruptions.unplanned").sum())
    exp_h = float(_col(rows, "exposure_h").sum())
    return (exp_h / n if n > 0 else math.inf), n, exp_h


def checkpoint_pause_h(base: Loaded, target: Target) -> float:
    """The pause δ one intermediate checkpoint costs the job (async: the stalled share), hours."""
    assert base.scenario.workload is not None
    ck = base.scenario.workload.jobs[target.index].checkpoint
    return ck.pause_h(target.write_h)


def _variant(base: Loaded, target: Target, factor: float, edit: Any) -> Loaded:
    """Apply ``edit`` to the baseline's resolved mapping; horizon: the larger of the baseline's
    bound and the variant's own."""
    first = with_horizon(base, base.scenario.horizon_h, edit=edit)
    own = bound_h(target_of(first.scenario, target.index), factor)
    return first if own <= base.scenario.horizon_h else with_horizon(base, own, edit=edit)


def daly_lever(base: Loaded, target: Target, rows: pd.DataFrame, factor: float) -> Lever:
    """The checkpoint interval at the optimum for the baseline's observed interruption rates: Daly's
    without silent data corruption; with it, the optimum of :mod:`twin.physics.checkpoints` (SDC
    rollbacks to the newest kept checkpoint captured before the corruption, the scenario's detection
    latency and the job's retention), where Daly's interval does not apply. An asynchronous checkpoint's
    interval is at least its write time (the next one cannot start sooner), as in the scenario advice
    (:func:`twin.scenario.advice.checkpoint_optimum`): with a pause of 0 (``async_fraction`` 0) the optimum
    is then the write time itself."""
    from twin.scenario.advice import checkpoint_optimum

    mtbf_h, n, exp_h = mtbf_estimate(rows)
    delta = checkpoint_pause_h(base, target)
    old = "none" if target.interval_h is None else f"{target.interval_h:.4g} h"
    sc = base.scenario
    sdc = sc.health.sdc if sc.health is not None else None
    n_sdc = float(_col(rows, "interruptions.sdc").sum()) if sdc is not None else 0.0
    label = "checkpoint at the optimum" if n_sdc > 0 else "checkpoint at Daly optimum"
    if not math.isfinite(mtbf_h):
        return Lever("daly", label, "", None, "no unplanned interruption in the baseline: no MTBF to optimise for")
    assert sc.workload is not None
    ck = sc.workload.jobs[target.index].checkpoint
    # an asynchronous checkpoint's interval: longer than its write (the schema's rule: the write ends before the
    # next falls due), so at least the next float above the write time
    floor_h = math.nextafter(target.write_h, math.inf) if ck.mode == "async" else 0.0
    if delta <= 0 and not floor_h > 0:
        return Lever("daly", label, "", None, "checkpoints cost no time: nothing to optimise")
    floored = ""
    if n_sdc > 0:
        assert sdc is not None
        wl = sc.workload
        rs = wl.restart
        job = wl.jobs[target.index]
        read = rs.read_h if rs.read_h is not None else wl.storage.read_time_h(ck.size_gb, target.nodes)
        R = rs.restart_h(read, job.gpus)
        opt = checkpoint_optimum(ck, delta, R, (n - n_sdc) / exp_h, n_sdc / exp_h, sdc.detection, floor_h)
        tau = opt.interval_h
        if opt.floored:
            floored = f"; floored at the asynchronous write time, the optimum {opt.optimum_h:.4g} h being shorter"
        ret = ck.retention
        kept = f"one every {ret.persistent_every_h:g} h" if ret.persistent_every_h is not None else "no persistent"
        change = (f"checkpoint interval {old} → {tau:.4g} h (optimum with SDC rollbacks: δ = {delta * 3600:.3g} s, "
                  f"M̂ = {mtbf_h:.3g} h from {n:.0f} interruptions, {n_sdc:.0f} of them SDC rollbacks detected "
                  f"{sum(opt.latency_h) / len(opt.latency_h):.3g} h later, the last {ret.keep_last} checkpoints "
                  f"kept and {kept}; Daly's {opt.daly_h():.4g} h does not apply{floored})")
    else:
        daly = float(cf.daly_interval_h(delta, mtbf_h)) if delta > 0 else 0.0
        tau = max(daly, floor_h)
        if daly < floor_h:
            floored = (f"; floored at the asynchronous write time {floor_h:.4g} h, Daly's {daly:.4g} h being "
                       "shorter: the next checkpoint could not start sooner")
        change = (f"checkpoint interval {old} → {tau:.4g} h (Daly; δ = {delta * 3600:.3g} s, "
                  f"M̂ = {mtbf_h:.3g} h from {n:.0f} interruptions{floored})")

    def edit(doc: dict[str, Any]) -> None:
        doc["workload"]["jobs"][target.index]["checkpoint"]["interval_h"] = tau

    try:
        ld = _variant(base, target, factor, edit)
    except InputError as exc:
        return Lever("daly", label, change, None, f"not applicable: {exc.message}")
    return Lever("daly", label, change, ld)


def default_spares(base: Loaded) -> int:
    """Default N of the spares lever: the scenario's hot spares (double them), at least one rack."""
    sc = base.scenario
    assert sc.workload is not None
    return max(sc.workload.scheduler.hot_spares, sc.cluster.nodes_per_rack)


def spares_lever(base: Loaded, target: Target, n: int, factor: float) -> Lever:
    sc = base.scenario
    assert sc.workload is not None
    npr = sc.cluster.nodes_per_rack
    racks = -(-n // npr)
    add = racks * npr
    old = sc.workload.scheduler.hot_spares
    change = f"hot spares {old} → {old + add} (+{racks} rack{'s' if racks > 1 else ''} of {npr} nodes)"

    def edit(doc: dict[str, Any]) -> None:
        doc["cluster"]["racks"] = int(doc["cluster"]["racks"]) + racks
        doc["workload"]["scheduler"]["hot_spares"] = int(doc["workload"]["scheduler"]["hot_spares"]) + add

    try:
        ld = _variant(base, target, factor, edit)
    except InputError as exc:
        return Lever("spares", f"+{add} hot spares", change, None, f"not applicable: {exc.message}")
    return Lever("spares", f"+{add} hot spares", change, ld)


# ---------------------------------------------------------------- halve a failure rate

_ALIASES = {"cdu_pump": "pumps"}


def _find_failures(doc: Any, name: str, path: str = "") -> list[tuple[str, dict[str, Any]]]:
    """Every mapping under key ``name`` with a ``failure`` distribution, with its dotted path."""
    out: list[tuple[str, dict[str, Any]]] = []
    if isinstance(doc, dict):
        for k, v in doc.items():
            p = f"{path}.{k}" if path else str(k)
            if k == name and isinstance(v, dict) and isinstance(v.get("failure"), dict):
                out.append((p, v))
            else:
                out.extend(_find_failures(v, name, p))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out.extend(_find_failures(v, name, f"{path}.{i}"))
    return out


def _double_time_scale(f: dict[str, Any]) -> str:
    """Double a distribution's time scale in place; returns the changed key. ValueError if it cannot."""
    if "mtbf_h" in f:
        f["mtbf_h"] = 2 * float(f["mtbf_h"])
        return "mtbf_h"
    key = {"exponential": "mean_h", "lognormal": "mean_h", "weibull": "scale_h", "fixed": "value_h"}.get(
        str(f.get("dist", "exponential")))
    if key is None or key not in f:
        raise ValueError(f"a {f.get('dist')} distribution has no time scale to change")
    f[key] = 2 * float(f[key])
    return key


def locate_cause(doc: dict[str, Any], cause: str) -> list[str]:
    """Dotted paths of the failure specs behind an interruption cause (empty if none)."""
    name = cause.split(":", 1)[1] if cause.startswith(("power:", "repair:")) else cause
    if name == "link_flap":
        net = doc.get("network") or {}
        return ["network.link_flaps_per_link_per_year"] if net.get("link_flaps_per_link_per_year") else []
    name = _ALIASES.get(name, name)
    return [p + ".failure" for p, _ in _find_failures(doc, name)]


def cause_days(rows: pd.DataFrame) -> pd.Series:
    """Mean days lost per cause (lost work + restarts + requeue waits) over the completed replications,
    largest first: the same figures as the forecast's losses table (a censored replication's losses
    stop at the horizon bound)."""
    if "completed" in rows.columns:
        rows = rows[rows["completed"] > 0.5]
    cols = [c for c in rows.columns if c.startswith("cause.") and c.endswith("_h")]
    s = pd.Series({c[len("cause."):-2]: float(_col(rows, c).mean()) / 24.0 for c in cols}, dtype=float)
    return s.sort_values(ascending=False)


def halve_lever(base: Loaded, target: Target, rows: pd.DataFrame, factor: float) -> Lever:
    days = cause_days(rows)
    skipped = []
    for cause, d in days.items():
        if d <= 0:
            break
        if str(cause).startswith(SKIP_CAUSES):
            skipped.append(f"{cause} (not a failure rate)")
            continue
        paths = locate_cause(base.resolved, str(cause))
        if not paths:
            skipped.append(f"{cause} (no failure distribution in the scenario)")
            continue

        def edit(doc: dict[str, Any], cause: str = str(cause)) -> None:
            if cause == "link_flap":
                doc["network"]["link_flaps_per_link_per_year"] = doc["network"]["link_flaps_per_link_per_year"] / 2
                return
            name = cause.split(":", 1)[1] if cause.startswith(("power:", "repair:")) else cause
            for _, spec in _find_failures(doc, _ALIASES.get(name, name)):
                _double_time_scale(spec["failure"])

        change = (f"failure rate of {cause} halved ({', '.join(paths)}: time scale × 2); "
                  f"it cost {d:.3g} days per run in the baseline")
        if skipped:
            change += "; skipped " + ", ".join(skipped)
        try:
            ld = _variant(base, target, factor, edit)
        except (InputError, ValueError) as exc:
            skipped.append(f"{cause} ({getattr(exc, 'message', str(exc))})")
            continue
        return Lever(f"halve-{re.sub(r'[^A-Za-z0-9_.-]', '_', str(cause))}", f"½ failure rate of {cause}", change, ld)
    return Lever("halve-top", "½ failure rate of the top cause", "", None,
                 "no failure cause to halve" + (": skipped " + ", ".join(skipped) if skipped else ""))


def scenario_lever(label: str, path: str, sets: Sequence[str], base: Loaded, target: Target,
                   factor: float) -> Lever:
    """Another scenario file holding the same job, run with the baseline's seed (CRN)."""
    ld = load_scenario(path, list(sets))
    idx = select_job(ld.scenario, target.name, path)
    t = target_of(ld.scenario, idx)
    horizon = max(base.scenario.horizon_h, bound_h(t, factor))
    out = with_horizon(ld, horizon, seed=base.scenario.seed)
    change = f"scenario {path} ({ld.scenario.name}), seed {base.scenario.seed}"
    return Lever(f"scenario-{label}", label, change, out)


# ---------------------------------------------------------------- the table

def lever_table(base_rows: pd.DataFrame, levers: Sequence[tuple[Lever, pd.DataFrame | None]]) -> pd.DataFrame:
    """One row per lever: mean/P50/P90 time to train (days) and the paired days saved
    (baseline − lever) with its 95 % t interval and the CRN variance reduction. A pair in which either
    run was not done within the horizon bound is left out of the days saved; ``pairs`` counts those
    used and the note says how many were left out (they are mostly the slow baseline runs, so the
    days saved understate the lever then)."""
    base_t = base_rows.set_index("replication")["time_to_train_h"] / 24.0
    out = []
    for lv, rows in levers:
        r: dict[str, Any] = {"lever": lv.label, "key": lv.key, "change": lv.change, "note": lv.note, "reps": 0,
                             "mean_days": math.nan, "p50_days": math.nan, "p90_days": math.nan,
                             "saved_days": math.nan, "saved_ci_low": math.nan, "saved_ci_high": math.nan,
                             "variance_reduction": math.nan, "censored": 0, "pairs": 0}
        if rows is not None and len(rows):
            t = rows.set_index("replication")["time_to_train_h"] / 24.0
            idx = base_t.index.intersection(t.index)
            v = t.loc[idx].to_numpy(dtype=float)
            fin = v[np.isfinite(v)]
            r["reps"] = int(len(idx))
            r["censored"] = int(len(v) - len(fin))
            if len(fin):
                r["mean_days"] = float(fin.mean())
                r["p50_days"], r["p90_days"] = (float(x) for x in np.quantile(fin, [0.5, 0.9]))
            a, b = t.loc[idx].to_numpy(dtype=float), base_t.loc[idx].to_numpy(dtype=float)
            both = np.isfinite(a) & np.isfinite(b)
            r["pairs"] = int(both.sum())
            if r["pairs"] < len(idx):
                left = f"{len(idx) - r['pairs']} of {len(idx)} pairs left out of the days saved (a run not done " \
                       "within the horizon bound: raise --max-horizon-factor)"
                r["note"] = f"{r['note']}; {left}" if r["note"] else left
            p = stats.paired(a[both], b[both])
            r["saved_days"], r["saved_ci_low"], r["saved_ci_high"] = p["diff"], p["ci_low"], p["ci_high"]
            r["variance_reduction"] = p["variance_reduction"]
        out.append(r)
    return pd.DataFrame(out, columns=["lever", "key", "change", "reps", "mean_days", "p50_days", "p90_days",
                                      "saved_days", "saved_ci_low", "saved_ci_high", "variance_reduction",
                                      "censored", "pairs", "note"])
