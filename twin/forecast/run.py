"""Run a training job to completion, replication by replication, and account for every hour.

Horizon: a forecast replication runs the scenario with its horizon set to a bound,
``H_max = submit_h + factor × failure-free time`` (``factor`` 10 by default, ``--max-horizon-factor``;
at most the schema's 36,500 days), and stops at the event where the job completes: simulated time
beyond the completion costs nothing. A replication whose job is not done at ``H_max`` is reported
as censored (completion ≥ H_max) and the forecast says so. Because every random draw is a function
of (seed, replication, component path, draw index) alone, the horizon does not change the sample
path up to completion.

Accounting: a bus observer (:class:`twin.forecast.observer.JobObserver`, a model component subscribed to JOB, NODE_SPEED and FABRIC,
after the workload) reads the job's own counters at every state change and attributes each change
to what was in force since the previous one. With T the time to train (completion − submission):

    T = work + lost + restart + requeue + checkpoint + slowdown + queue
    (run = made + slowdown, made = work + lost; wall = queue + run + checkpoint + restart)

- lost work, restart time and the queue wait after an interruption (no spare node) are charged to
  the interruption's cause (the part name, ``planned``, ``link_flap``, ``power:<cause>`` ...: the
  jobs table's interruption causes); a restart interrupted again is charged to the first cause
  until the new interruption;
- the initial queue wait (before the first start) is ``queueing``;
- slowdown (run time minus progress made) is split between throttling (GPU speed caps: thermal,
  power) and network (degraded fabric bandwidth) in proportion to the progress each alone would
  cost, 1 − r(speed, ideal bandwidth) and 1 − r(full speed, current bandwidth), with r the
  step-time model's progress rate. The step-time model couples them (model.md §6), so this split
  is an attribution; their sum is exact.

The residual of the identity is reported per replication (``residual_h``, ~1e-9 h).
"""

from __future__ import annotations

import gc
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd

import twin
from twin.errors import InputError
from twin.forecast.target import DEFAULT_BOUND_FACTOR, Target, bound_h, select_job, target_of, with_horizon
from twin.forecast.observer import JobObserver, observer_for
from twin.scenario.loader import Loaded, load_dict
from twin.scenario.schema import Scenario


# ---------------------------------------------------------------- one replication

def run_one(sc: Scenario, replication: int, job_name: str, scenario_hash: str = "",
            source: str = "") -> dict[str, Any]:
    """Run replication ``replication`` of ``sc`` until job ``job_name`` completes (or the
    scenario's horizon, the bound); return one row: identity columns and metrics (hours)."""
    from twin.sim import COMPONENTS, GC_EVENTS, Model

    model = Model(sc, replication, scenario_hash, components=(*COMPONENTS, observer_for(job_name)), source=source)
    obs = model.by_section[JobObserver.name]
    assert isinstance(obs, JobObserver)
    env = model.engine.env
    H = sc.horizon_h
    step = env.step
    n = 0
    bound = model.max_events
    while not obs.done and env.peek() < H:
        step()
        n += 1
        if n >= bound:
            model.stop_at_bound(n)
    job = obs.job
    row: dict[str, Any] = {
        "replication": int(replication), "seed": int(sc.seed), "scenario": sc.name,
        "scenario_hash": scenario_hash, "twin_version": twin.__version__, "events_processed": int(n),
    }
    m: dict[str, float] = {"horizon_bound_h": H}
    if job is None:
        raise InputError(sc.name, "workload.jobs", f"job {job_name!r} was never submitted before the horizon")
    m["work_h"] = float(job.spec.work_h)
    m["submit_h"] = float(job.spec.submit_h)
    m["completed"] = 1.0 if obs.done else 0.0
    m["end_h"] = float(job.acct.end_h) if obs.done else math.nan
    T = float(job.acct.end_h - job.spec.submit_h) if obs.done else math.nan
    m["time_to_train_h"] = T
    lost, count = obs.lost_by()
    causes = sorted(set(lost) | set(obs.restart_by) | set(obs.requeue_by))
    total_cause = 0.0
    for c in causes:
        lo, rs, rq = lost.get(c, 0.0), obs.restart_by.get(c, 0.0), obs.requeue_by.get(c, 0.0)
        m[f"lost.{c}_h"] = lo
        m[f"restart.{c}_h"] = rs
        m[f"requeue.{c}_h"] = rq
        m[f"cause.{c}_h"] = lo + rs + rq
        m[f"interruptions.{c}"] = float(count.get(c, 0))
        total_cause += lo + rs + rq
    m["failures_h"] = total_cause
    m["lost_h"] = float(sum(lost.values()))
    m["restart_h"] = float(sum(obs.restart_by.values()))
    m["requeue_h"] = float(sum(obs.requeue_by.values()))
    m["interruptions"] = float(sum(count.values()))
    m["interruptions.unplanned"] = float(sum(k for c, k in count.items() if not c.startswith("planned")))
    m["checkpoint_h"] = obs.checkpoint_h
    m["throttling_h"] = obs.throttle_h
    m["network_h"] = obs.network_h
    m["queueing_h"] = obs.queue_h
    m["checkpoints"] = float(job.acct.checkpoints)
    # time the job held nodes: the exposure for its MTBF estimate
    m["exposure_h"] = float(job.acct.run_h + job.acct.ckpt_h + job.acct.restart_h)
    parts = job.spec.work_h + total_cause + obs.checkpoint_h + obs.throttle_h + obs.network_h + obs.queue_h
    m["residual_h"] = T - parts if obs.done else math.nan
    row.update({k: float(v) for k, v in m.items()})
    del model, obs
    if n > GC_EVENTS:  # SimPy leaves cyclic garbage (as twin.sim.run_replication)
        gc.collect()
    return row


# ---------------------------------------------------------------- replications of one variant

def forecast_batch(payload: Mapping[str, Any], indices: list[int],
                   kill: tuple[int, str] | None = None) -> list[tuple[dict[str, Any], float]]:
    """Worker task (the forecast's counterpart of twin.experiment.runner.run_batch): re-validate the
    payload's scenario and run replications ``indices`` of the job ``payload["job"]`` to completion;
    (row, wall seconds) each."""
    from twin.experiment.runner import check_same_scenario
    from twin.limits import max_events_scope

    loaded = load_dict(payload["resolved"], payload["source"], Path(payload["base_dir"]))
    check_same_scenario(payload, loaded)  # a data file changed during the run is the user's environment
    out = []
    gc.freeze()
    try:
        for i in indices:
            t0 = time.perf_counter()
            with max_events_scope(payload.get("max_events")):
                row = run_one(loaded.scenario, i, payload["job"], loaded.hash, str(loaded.source))
            out.append((row, time.perf_counter() - t0))
    finally:
        gc.unfreeze()
    return out


def run_reps(loaded: Loaded, reps: int, job_name: str, rep_dir: Path, backend: Any,
             on_row: Callable[[dict[str, Any]], None] | None = None,
             echo: Callable[[str], None] = lambda s: None) -> pd.DataFrame:
    """Replications 0..reps−1 of ``loaded`` (horizon already set to the bound) on ``backend``
    (twin.experiment.runner.make_backend: serial, local processes or Dask, through the same driver
    as Monte Carlo). Rows are stored in ``rep_dir`` in chunks as Monte Carlo stores them
    (:class:`twin.experiment.rows.RowStore`: every 1,000 rows or 30 s, and when the run stops), merged
    into one file when the variant is complete; stored rows of the same scenario hash and twin version
    are reused (also the one-file-per-replication ``rep-00007.parquet`` of older versions), so an
    interrupted forecast resumes. Returns the rows sorted by replication (the same rows on every
    backend: the draws depend on the replication only)."""
    from twin.experiment.rows import RowStore
    from twin.experiment.runner import assemble, drive, payload_of

    store = RowStore(rep_dir.parent, loaded.hash, rows_dir=rep_dir)
    stale = len([i for i in store.load_version(twin.__version__) if i < reps])
    rows = store.rows
    if stale:
        echo(f"note: {stale} stored replication(s) in {rep_dir} were made by another twin version; recomputing "
             f"them with twin {twin.__version__}")
    todo = [i for i in range(reps) if i not in rows]

    def keep(row: dict[str, Any]) -> None:
        store.add(row)
        if on_row is not None:
            on_row(row)

    if todo:
        try:
            drive(backend, {**payload_of(loaded), "job": job_name}, todo, keep, None, echo, task=forecast_batch)
        except BaseException:
            try:
                store.flush()  # keep what finished (a full disk may refuse it too: the first error is raised)
            except OSError:
                pass
            raise
    store.compact()
    return assemble(rows[i] for i in range(reps))


def rep_dir_of(folder: Path, key: str) -> Path:
    return folder / "reps" / key


# ---------------------------------------------------------------- the forecast

@dataclass
class ForecastResult:
    """A finished forecast: the baseline rows, each lever's rows, and the summaries."""

    folder: Path
    base: Loaded
    target: Target
    rows: pd.DataFrame
    levers: list[tuple[Any, pd.DataFrame | None]]
    distribution: dict[str, Any]
    losses: pd.DataFrame
    waterfall: pd.DataFrame
    lever_table: pd.DataFrame
    report: tuple[Path, Path] | None
    wall_s: float
    computed: int
    notes: list[str]
    phases: list[dict[str, Any]] | None = None
    """Per phase segment of a phased job (twin/forecast/phases.py): GPUs, tokens, failure-free and mean days."""


def _variants(variant: Callable[[str, Loaded], pd.DataFrame], base: Loaded, target: Target, *,
              lever_names: Sequence[str], cluster_levers: Sequence[tuple[str, str, Any]],
              bound_factor: float) -> tuple[pd.DataFrame, list[Any], list[tuple[Any, Any]]]:
    """Run the baseline, build the levers that need its rows and run each lever: (baseline rows,
    levers, (lever, rows)). ``cluster_levers``: those built before (:func:`_cluster_levers`)."""
    from twin.forecast import levers as lv

    rows = variant("baseline", base)
    prebuilt = {option: lever for option, _, lever in cluster_levers}
    built: list[Any] = []
    for name in lever_names:
        if name == "daly":
            built.append(lv.daly_lever(base, target, rows, bound_factor))
        elif name == "spares":
            built.append(prebuilt["--lever-spares"])
        elif name == "halve-top":
            built.append(lv.halve_lever(base, target, rows, bound_factor))
    built += [lever for option, _, lever in cluster_levers if option == "--lever-scenario"]
    results: list[tuple[Any, pd.DataFrame | None]] = []
    for lever in built:
        results.append((lever, variant(lever.key, lever.loaded) if lever.loaded is not None else None))
    return rows, built, results


def _cluster_levers(base: Loaded, target: Target, lever_names: Sequence[str], spares: int | None,
                    lever_scenarios: Sequence[tuple[str, str]], sets: Sequence[str],
                    bound_factor: float) -> list[tuple[str, str, Any]]:
    """The levers that build another cluster without the baseline's rows (more spares, another
    scenario), as (option, its value, lever): built once, checked against the limits before any work."""
    from twin.forecast import levers as lv

    built = []
    if "spares" in lever_names:
        n = spares or lv.default_spares(base)
        built.append(("--lever-spares", str(n), lv.spares_lever(base, target, n, bound_factor)))
    for lab, path in lever_scenarios:
        built.append(("--lever-scenario", f"{lab}={path}", lv.scenario_lever(lab, path, sets, base, target,
                                                                             bound_factor)))
    return built


def _check_limits(base: Loaded, reps: int, variants: int, cluster_levers: Sequence[tuple[str, str, Any]],
                  force: bool) -> None:
    """The limits of :mod:`twin.limits` over the whole forecast: every variant's replications count, and
    the levers that build another cluster are checked as built."""
    from twin.limits import check_limits

    check_limits(base, reps=reps * variants, force=force)
    for option, value, lever in cluster_levers:
        if lever.loaded is not None:
            try:
                check_limits(lever.loaded, reps=reps, force=force)
            except InputError as exc:
                raise InputError(option, value, f"the lever's scenario: {exc.field}: {exc.message}") from None


def forecast_folder(results_root: Path | str, loaded: Loaded, label: str | None = None) -> Path:
    """``<results>/<scenario>/forecast-<hash>-s<seed>`` (or ``<results>/<scenario>/<label>``)."""
    from twin.experiment.runner import check_label

    if label is not None:
        check_label(label)
    sc = loaded.scenario
    return Path(results_root) / sc.name / (label or f"forecast-{loaded.hash}-s{sc.seed}")


def _prepare(folder: Path, loaded: Loaded, overwrite: bool) -> None:
    import json
    import shutil

    if folder.exists() and not folder.is_dir():
        raise InputError(str(folder), "", "exists and is not a folder")
    if folder.exists() and overwrite:
        shutil.rmtree(folder)
    elif folder.exists() and any(folder.iterdir()):
        try:
            meta = json.loads((folder / "experiment.json").read_text())
        except (OSError, ValueError):
            meta = {}
        if meta.get("kind") != "forecast" or meta.get("scenario_hash") != loaded.hash:
            raise InputError(str(folder), "--label", "folder holds other results (not a forecast of this scenario); "
                             "choose another --label or use --overwrite")
    from twin.atomic import make_dirs

    make_dirs(folder)


def run_forecast(loaded: Loaded, reps: int, *, job: str | None = None, levers: Sequence[str] | None = None,
                 spares: int | None = None, lever_scenarios: Sequence[tuple[str, str]] = (),
                 sets: Sequence[str] = (), results_root: Path | str = "results", label: str | None = None,
                 folder: Path | str | None = None, overwrite: bool = False, workers: int = 1,
                 bound_factor: float = DEFAULT_BOUND_FACTOR, start_date: str | None = None, report: bool = True,
                 echo: Callable[[str], None] | None = None, dask: str | None = None,
                 force: bool = False) -> ForecastResult:
    """Forecast the time to train of one job of ``loaded``: ``reps`` replications run to completion,
    then each lever under common random numbers; store everything in the forecast folder and
    (``report``) write report.html / report.md. Rerunning resumes: stored replications of the same
    variant scenario are reused. ``dask``: a scheduler address, or 'local' for a LocalCluster of
    ``workers`` processes (one connection for every variant). Before any work, the baseline and the
    levers that change the cluster (spares, other scenarios) are held to :mod:`twin.limits`, with
    every variant's replications counted (``force``: skip the limits)."""
    import datetime as dt

    from twin.atomic import atomic_write_parquet
    from twin.experiment.store import versions, write_json
    from twin.forecast import levers as lv
    from twin.forecast import report as rp

    say = echo or (lambda s: None)
    t_start = time.perf_counter()
    if reps < 2:
        raise InputError("--reps", str(reps), "a forecast needs at least 2 replications")
    if workers < 1:
        raise InputError("--workers", str(workers), "must be >= 1")
    if not (math.isfinite(bound_factor) and bound_factor > 1):
        raise InputError("--max-horizon-factor", str(bound_factor), "must be a number > 1")
    if spares is not None and spares < 1:
        raise InputError("--lever-spares", str(spares), "must be >= 1")
    if start_date is not None:
        try:
            dt.date.fromisoformat(start_date)
        except ValueError:
            raise InputError("--start-date", start_date, "expected a date YYYY-MM-DD") from None
    lever_names = list(lv.LEVERS) if levers is None else list(levers)
    sc = loaded.scenario
    index = select_job(sc, job, str(loaded.source))
    segs = None
    notes: list[str] = []
    assert sc.workload is not None
    if sc.workload.jobs[index].phases is not None:
        from twin.forecast import phases as ph

        segs, target = ph.phased(loaded, index, bound_factor)
        notes.append(f"phased: {len(segs)} segments ({', '.join(lab for lab, _, _ in segs)}) run one after another, "
                     "each on its own GPUs with its own failures and a fresh cluster (parts under repair, spare stock "
                     "and the queue are not carried from one phase to the next)")
    else:
        target = target_of(sc, index)
    H = bound_h(target, bound_factor)
    base = with_horizon(loaded, H)
    cluster_levers = _cluster_levers(base, target, lever_names, spares, lever_scenarios, sets, bound_factor)
    _check_limits(base, reps, (1 + len(lever_names) + len(lever_scenarios)) * (len(segs) if segs else 1),
                  cluster_levers, force)
    if start_date is not None:  # every date of the forecast lies within the horizon bound
        try:
            dt.date.fromisoformat(start_date) + dt.timedelta(days=H / 24.0)
        except OverflowError:
            raise InputError("--start-date", start_date, f"too late: the forecast's dates (up to {H / 24.0:.0f} "
                             "days after it) would pass the year 9999") from None
    folder = Path(folder) if folder is not None else forecast_folder(results_root, loaded, label)
    from twin.experiment.store import folder_lock

    with folder_lock(folder, say):  # a second identical forecast waits, then reuses the stored replications
        _prepare(folder, loaded, overwrite)
        meta = {"kind": "forecast", "scenario": sc.name, "scenario_hash": loaded.hash, "seed": sc.seed,
                "source": str(loaded.source), "job": target.name, "replications": reps, "bound_factor": bound_factor,
                "horizon_bound_days": H / 24.0, "levers": lever_names, "lever_spares": spares,
                "lever_scenarios": [f"{a}={b}" for a, b in lever_scenarios], "set": list(sets),
                "versions": versions()}
        if segs:
            meta["phases"] = [lab for lab, _, _ in segs]
        write_json(folder / "experiment.json", meta)
        computed = 0

        def count(_row: dict[str, Any]) -> None:
            nonlocal computed
            computed += 1

        from twin.experiment.runner import make_backend, shut

        backend = make_backend(workers, dask)  # one for the baseline and every lever

        def variant(key: str, ld: Loaded) -> pd.DataFrame:
            t0 = time.perf_counter()
            before = computed
            rows = run_reps(ld, reps, target.name, rep_dir_of(folder, key), backend, count, say)
            say(f"  {key}: {reps} replications ({computed - before} computed) in {time.perf_counter() - t0:.1f} s")
            return rows

        say(f"forecast of {target.name} in {sc.name}: {reps} replications, horizon bound {H / 24:.1f} days")

        def run_variant(key: str, ld: Loaded) -> pd.DataFrame:
            if segs:   # the baseline and every lever, phase by phase (a lever's scenario keeps the phases)
                from twin.forecast.phases import phased, run_phased

                return run_phased(segs if key == "baseline" else phased(ld, index, bound_factor)[0], variant, key)
            return variant(key, ld)

        try:
            rows, built, results = _variants(run_variant, base, target, lever_names=lever_names,
                                             cluster_levers=cluster_levers, bound_factor=bound_factor)
        except BaseException:
            shut(backend, error=True)
            raise
        shut(backend, error=False)
        dist = rp.distribution(rows, target, start_date)
        loss = rp.losses(rows)
        wf = rp.waterfall(rows, target, loss)
        table = lv.lever_table(rows, results)
        phase_rows = None
        if segs:
            from twin.forecast.phases import phase_table

            phase_rows = phase_table(rows, segs)
        if dist["censored"]:
            notes.append(f"warning: {dist['censored']} of {reps} replications did not finish within the horizon bound "
                         f"({H / 24:.1f} days = {bound_factor:g} × failure-free): quantiles are lower bounds and the "
                         f"mean leaves them out; raise --max-horizon-factor")
        resid = np.nanmax(np.abs(rows["residual_h"].to_numpy(dtype=float))) if len(rows) else 0.0
        if np.isfinite(resid) and resid > 1e-6 * max(1.0, target.failure_free_h):
            notes.append(f"warning: the days-lost accounting leaves a residual of {resid:.3g} h in some replication")
        tidy = pd.concat([rows.assign(variant="baseline")] +
                         [r.assign(variant=lever.key) for lever, r in results if r is not None], ignore_index=True)
        atomic_write_parquet(folder / "forecast.parquet", tidy)
        atomic_write_parquet(folder / "losses.parquet", loss)
        atomic_write_parquet(folder / "waterfall.parquet", wf)
        atomic_write_parquet(folder / "levers.parquet", table)
        write_json(folder / "summary.json", {**meta, "distribution": dist, "losses": loss.to_dict("records"),
                                             "waterfall": wf.to_dict("records"), "levers_table": table.to_dict("records"),
                                             "notes": notes, **({"phases_table": phase_rows} if phase_rows else {})})
        rep_paths = None
        if report:
            curves = {"baseline": rows["time_to_train_h"].to_numpy(dtype=float) / 24.0}
            for lever, r in results:
                if r is not None:
                    curves[lever.label] = r["time_to_train_h"].to_numpy(dtype=float) / 24.0
            rep_paths = rp.write_report(folder, meta, dist, loss, wf, table, curves, notes, phase_rows)
        wall = time.perf_counter() - t_start
        write_json(folder / "run.json", {"wall_s": wall, "computed": computed, "workers": workers,
                                         "backend": "dask" if dask is not None else ("local" if workers > 1 else "serial"),
                                         "python": sys.executable})
        return ForecastResult(folder, base, target, rows, results, dist, loss, wf, table, rep_paths, wall, computed, notes,
                              phase_rows)
