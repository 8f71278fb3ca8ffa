"""`twin run`: one replication of a scenario into a results folder."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from typing import Any, Callable

import yaml

import twin
from twin.errors import InputError
from twin.atomic import atomic_folder, atomic_write_parquet, atomic_write_text
from twin.experiment.store import run_folder, versions, write_json
from twin.report import figures
from twin.report.steps import limiter_lines
from twin.scenario.advice import advice_lines, advise
from twin.scenario.loader import Loaded
from twin.sim import ReplicationResult, run_replication

HEADLINE = [
    ("node_availability", "node availability", "{:.4%}"),
    ("fleet_capacity_availability", "fleet capacity availability", "{:.4%}"),
    ("failures", "hardware and transient failures", "{:.0f}"),
    ("node_down_hours", "node-hours down", "{:.1f}"),
    ("stockouts", "spare stock-outs", "{:.0f}"),
    ("goodput", "goodput (useful / installed GPU-h)", "{:.4%}"),
    ("useful_gpu_hours", "useful GPU-hours", "{:,.0f}"),
    ("ettr.max_job", "ETTR of the largest job", "{:.4f}"),
    ("interruptions", "job interruptions", "{:.0f}"),
    ("energy.it_kwh", "IT energy", "energy"),
    ("pue", "PUE", "{:.3f}"),
    ("pue.flat", "PUE", "{:.3f} (flat: no cooling section, costs.energy.pue)"),
    ("energy.facility_kwh", "site energy (IT + cooling + losses)", "energy"),
    ("thermal.throttled_gpu_hours", "throttled GPU-hours", "{:,.0f}"),
    ("power.capped_gpu_hours", "power-capped GPU-hours", "{:,.0f}"),
    ("storage.data_stall_gpu_hours", "data-stall GPU-hours", "{:,.0f}"),
    ("storage.downtime_h", "storage downtime (h)", "{:.2f}"),
    ("storage.jobs_stopped", "jobs stopped by storage outages", "{:.0f}"),
    ("cost.total", "total cost over the horizon", "{:,.0f} {cur}"),
    ("cost.per_useful_gpu_hour", "cost per useful GPU-hour", "{:.3f} {cur}"),
]
"""(metric, label, format): ``{cur}`` stands for the scenario's currency; ``energy`` scales kWh to MWh or
GWh (:func:`twin.report.metrics.format_value`)."""


IF_NONZERO = frozenset({"storage.data_stall_gpu_hours", "storage.downtime_h", "storage.jobs_stopped"})
"""Headline keys shown only when not zero (every workload reports them; most never stall on storage)."""


def headline_rows(metrics: dict[str, float], currency: str = "USD") -> list[tuple[str, str]]:
    """(label, value) of the headline metrics a run reports, money in ``currency``."""
    from twin.report.metrics import format_value

    rows = []
    for key, label, fmt in HEADLINE:
        if key in IF_NONZERO and not metrics.get(key):
            continue
        if key in metrics and metrics[key] == metrics[key]:
            x = metrics[key]
            rows.append((label, format_value(key, x) if fmt == "energy" else fmt.format(x, cur=currency).strip()))
    return rows


def currency_of(sc: Any) -> str:
    """The scenario's currency (``costs.currency``), empty without costs."""
    return sc.costs.currency if getattr(sc, "costs", None) is not None else ""


def _summary(folder: Path) -> dict[str, Any] | None:
    """The ``summary.json`` of the run stored in ``folder`` (None: no run of ours there)."""
    f = folder / "summary.json"
    if not f.is_file():
        return None
    try:
        data = json.loads(f.read_text())
    except (OSError, UnicodeDecodeError, ValueError):  # unreadable or not JSON: not a run folder of ours
        return None
    return data if isinstance(data, dict) else None


FIGURE_MODULES = [
    "twin.report.workload_figures",
    "twin.report.thermal_figures",
    "twin.report.power_figures",
    "twin.report.facility_figures",
    "twin.report.network_figures",
    "twin.report.cost_figures",
]


def summary_markdown(loaded: Loaded, res: ReplicationResult, extra_figures: list[str] | None = None,
                     advice: list[str] | None = None) -> str:
    """``summary.md``: the headline table, advisories (``advice``: their texts), parts, figures."""
    sc = loaded.scenario
    lines = [
        f"# {sc.name}: one replication",
        "",
        f"{sc.description}".strip(),
        "",
        f"- scenario hash `{loaded.hash}`, seed {sc.seed}, replication {res.replication}",
        f"- horizon {sc.horizon_days:g} days, {sc.cluster.n_nodes} nodes, {sc.cluster.n_nodes * sc.cluster.node.gpus} GPUs",
        f"- {res.events_processed} events; build {res.timings_s['build']:.2f} s, loop {res.timings_s['loop']:.2f} s",
        "",
        "| metric | value |",
        "|---|---|",
    ]
    lines += [f"| {a} | {b} |" for a, b in headline_rows(res.metrics, currency_of(sc))]
    warnings = run_warnings(res)
    if warnings:
        lines += ["", "## Warnings", "", "What this run found (the scheduler's starvation advisories):", ""] + [
            f"- {w}" for w in warnings]
    if advice:
        lines += ["", "## Advisories", "", "What the scenario's own numbers imply in closed form "
                  "(twin.scenario.advice); they change no result:", ""] + [f"- {a}" for a in advice]
    lines += ["", "## Parts", "", res.tables["parts"].to_markdown(index=False) if _has_tabulate() else
              res.tables["parts"].to_string(index=False), "",
              "![capacity](figures/capacity.png)", "", "![pareto](figures/failure_pareto.png)", "",
              "![repair](figures/repair_breakdown.png)", ""]
    for name in extra_figures or []:
        lines += [f"![{name}](figures/{name})", ""]
    return "\n".join(lines)


def run_warnings(res: ReplicationResult) -> list[str]:
    """What the run itself found worth a warning: the scheduler's starvation advisories (table
    ``advisories``: a job at the head of the queue with no bound on its start)."""
    adv = res.tables.get("advisories")
    return [] if adv is None else [f"at {t:.1f} h: {text}" for t, text in zip(adv.time_h, adv.text)]


def _has_tabulate() -> bool:
    try:
        import tabulate  # noqa: F401
    except ImportError:
        return False
    return True


def write_results(tmp: Path, loaded: Loaded, res: ReplicationResult) -> None:
    sc = loaded.scenario
    atomic_write_text(tmp / "scenario.resolved.yaml", yaml.safe_dump(loaded.resolved, sort_keys=False))
    for name, df in res.tables.items():
        if name == "lifetimes":  # the twin fit input format (CSV), for round trips
            atomic_write_text(tmp / "lifetimes.csv", df.to_csv(index=False))
            continue
        atomic_write_parquet(tmp / f"{name}.parquet", df)
    figs = tmp / "figures"
    figs.mkdir(exist_ok=True)
    figures.capacity_over_time(res.tables["capacity"], sc.cluster.n_nodes, sc.horizon_h, figs / "capacity.png")
    figures.failure_pareto(res.tables["parts"], figs / "failure_pareto.png")
    figures.repair_breakdown(res.tables["tickets"], figs / "repair_breakdown.png")
    extra = []
    for mod in FIGURE_MODULES:
        try:
            m = importlib.import_module(mod)
        except ModuleNotFoundError as exc:
            if exc.name != mod:
                raise
            continue
        extra.extend(m.figures(res, figs))
    advice = [str(a) for a in advise(loaded.scenario)]
    atomic_write_text(tmp / "summary.md", summary_markdown(loaded, res, extra, advice))
    meta: dict[str, Any] = {
        "scenario": sc.name,
        "scenario_hash": loaded.hash,
        "seed": sc.seed,
        "replication": res.replication,
        "versions": versions(),
        "events_processed": res.events_processed,
        "timings_s": res.timings_s,
        "metrics": res.metrics,
        "advice": advice,
        "warnings": run_warnings(res),
    }
    write_json(tmp / "summary.json", meta)  # written last


def run_command(loaded: Loaded, results_root: Path, label: str | None, overwrite: bool,
                replication: int, progress: bool, echo: Callable[[str], None],
                lifetimes: bool = False) -> int:
    sc = loaded.scenario
    folder = run_folder(results_root, sc.name, loaded.hash, sc.seed, label, replication)
    stored = _summary(folder) or {}  # the run already there, read once: scenario hash, replication, version
    h = str(stored["scenario_hash"]) if "scenario_hash" in stored else None
    if lifetimes and h == loaded.hash and not (folder / "lifetimes.csv").is_file():
        overwrite = True  # same scenario, but the lifetimes were not written last time
    if folder.exists() and not overwrite:
        if h != loaded.hash:
            raise InputError(str(folder), "--label",
                             f"folder holds results of another scenario (hash {h}); choose another label or --overwrite")
        rep = stored.get("replication")
        if rep != replication:
            raise InputError(str(folder), "--label", f"folder holds replication {rep} of this scenario, not "
                                                     f"{replication}; choose another label or --overwrite")
        made_by = (stored.get("versions") or {}).get("twin")
        if made_by == twin.__version__:
            echo(f"results are up to date: {folder} (use --overwrite to recompute)")
            for line in advice_lines(sc):
                echo(line)
            return 0
        echo(f"note: {folder} holds results made by twin {made_by}; recomputing them with twin {twin.__version__} "
             "(results of another version are never reused)")
    try:
        res = _simulate(loaded, replication, progress, lifetimes)
        with atomic_folder(folder, overwrite=True) as tmp:  # built aside, renamed into place when complete
            write_results(tmp, loaded, res)
    except KeyboardInterrupt:
        print(f"interrupted: nothing was written to {folder}; run the same command again to start the "
              f"replication over", file=sys.stderr, flush=True)
        raise
    echo(f"{sc.name}  (hash {loaded.hash}, seed {sc.seed}, {sc.horizon_days:g} days, "
         f"{sc.cluster.n_nodes} nodes, {res.events_processed} events, {sum(res.timings_s.values()):.2f} s)")
    rows = headline_rows(res.metrics, currency_of(sc))
    width = max(len(a) for a, _ in rows)
    for a, b in rows:
        echo(f"  {a:<{width}}  {b}")
    for line in limiter_lines(res.tables):
        echo(line)
    for w in run_warnings(res):
        echo(f"warning: {w}")
    for line in advice_lines(sc):
        echo(line)
    echo(f"results: {folder}")
    return 0


def _simulate(loaded: Loaded, replication: int, progress: bool, lifetimes: bool = False) -> ReplicationResult:
    sc = loaded.scenario
    if progress:
        from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

        with Progress(TextColumn("[bold]{task.description}"), BarColumn(),
                      TextColumn("day {task.completed:.0f}/{task.total:.0f}"), TimeRemainingColumn(),
                      transient=True) as bar:
            task = bar.add_task(sc.name, total=sc.horizon_days)
            res = run_replication(sc, replication, loaded.hash,
                                  progress=lambda t: bar.update(task, completed=t / 24.0), lifetimes=lifetimes,
                                  source=str(loaded.source))
    else:
        res = run_replication(sc, replication, loaded.hash, lifetimes=lifetimes, source=str(loaded.source))
    return res
