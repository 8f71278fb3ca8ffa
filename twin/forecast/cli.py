"""``twin forecast SCENARIO --reps N``: the time-to-train distribution of a job, days lost by cause,
and what-if levers under common random numbers. Registered by :func:`twin.cli.build_parser`
through :func:`add_parser`. Exit codes: 0 ok, 2 bad input, 130 interrupted (stored replications
are kept; the same command resumes)."""

from __future__ import annotations

import argparse
import math
from typing import Callable

from twin.errors import EXIT_OK
from twin.forecast.target import DEFAULT_BOUND_FACTOR


from twin.console import echo as _echo, note as _note  # noqa: E402


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "forecast", help="time-to-train forecast of a job: completion-date distribution, days lost by cause, levers",
        description="Runs the job to completion in every replication (horizon bound: --max-horizon-factor × the "
                    "failure-free time), reports mean and P10/P50/P90 of the time to train with 95 % intervals, "
                    "the days lost by cause, and what-if levers under common random numbers.")
    p.add_argument("scenario", help="scenario YAML file")
    p.add_argument("--reps", type=int, default=20, metavar="N", help="replications per variant (default 20)")
    p.add_argument("--job", help="name of the job to follow (default: the job with a training block, else the largest)")
    p.add_argument("--levers", default=None, metavar="LIST",
                   help="comma-separated built-in levers: daly, spares, halve-top (default: all); 'none' for none")
    p.add_argument("--lever-spares", dest="lever_spares", type=int, default=None, metavar="N",
                   help="hot spares the spares lever adds (rounded up to whole racks; default: the scenario's "
                        "hot spares, at least one rack)")
    p.add_argument("--lever-scenario", dest="lever_scenario", action="append", default=[], metavar="LABEL=PATH",
                   help="a what-if scenario file holding the same job (e.g. extends the forecast scenario with "
                        "liquid cooling); repeatable")
    p.add_argument("--max-horizon-factor", dest="bound_factor", type=float, default=DEFAULT_BOUND_FACTOR,
                   metavar="F", help=f"stop a replication at F × the failure-free time (default {DEFAULT_BOUND_FACTOR:g})")
    p.add_argument("--start-date", dest="start_date", metavar="YYYY-MM-DD",
                   help="calendar date of simulated time 0: quantiles are also printed as dates")
    p.add_argument("--workers", type=int, default=1, metavar="K", help="local worker processes (default 1)")
    p.add_argument("--dask", metavar="ADDRESS",
                   help="run on a Dask cluster: scheduler address (tcp://host:8786) or 'local' for a "
                        "LocalCluster of --workers processes")
    p.add_argument("--results", default="results", help="results root folder (default: results)")
    p.add_argument("--label", help="results folder name (default forecast-<hash>-s<seed>)")
    p.add_argument("--overwrite", action="store_true", help="recompute even if stored replications exist")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE",
                   help="override a scenario field (also applied to --lever-scenario files)")
    p.add_argument("--no-report", dest="no_report", action="store_true", help="skip report.html / report.md")
    p.add_argument("--search-layouts", dest="search_layouts", type=int, nargs="?", const=5, default=None,
                   metavar="K", help="print the K (default 5) fastest memory-feasible layouts of the job's size "
                                     "(needs step.model and step.layout with hbm_gb) and stop")
    p.add_argument("--quiet", action="store_true", help="no per-variant progress lines")
    from twin.limits import add_guard_args

    add_guard_args(p)
    p.set_defaults(func=cmd_forecast)


def _f(x: float, nd: int = 1) -> str:
    return "–" if x is None or not math.isfinite(x) else f"{x:.{nd}f}"


def _table(rows: list[list[str]], header: list[str], echo: Callable[[str], None]) -> None:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    echo("  " + "  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(header, widths))))
    for r in rows:
        echo("  " + "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))))


def print_forecast(res: object, echo: Callable[[str], None] = _echo) -> None:
    """The distribution, the days lost by cause and the lever table, as text."""
    d = res.distribution  # type: ignore[attr-defined]
    sc = res.base.scenario  # type: ignore[attr-defined]
    t = res.target  # type: ignore[attr-defined]
    echo(f"{sc.name}: job {t.name}, {t.gpus:,} GPUs ({t.nodes:,} nodes), seed {sc.seed}, "
         f"{d['replications']} replications, {res.wall_s:.1f} s")  # type: ignore[attr-defined]
    import textwrap

    from twin.forecast.report import (FLOP_CONVENTION, SIX_PD, days, days_interval, ideal_label, mean_interval,
                                      quantile_interval, summary_sentences)

    echo("decision summary")
    for para in summary_sentences(d, res.losses, res.lever_table):  # type: ignore[attr-defined]
        echo(textwrap.fill(" ".join(para), width=110, initial_indent="  ", subsequent_indent="    "))
    echo("")
    if t.tokens_t is not None:
        echo(f"  {t.params_b:g} B parameters x {t.tokens_t:g} T tokens; tokens/day "
             f"{d['tokens_per_day_ideal'] / 1e9:.1f} B ideal, {d['tokens_per_day_expected'] / 1e9:.1f} B expected")
    ideal = ideal_label(d)
    rows = [[ideal, days(d["ideal_days"], True), ""],
            ["failure-free (+ checkpoints)", days(d["failure_free_days"], True), ""],
            ["mean", days(d["mean_days"], True), mean_interval(d)]]
    for k in ("p10", "p50", "p90"):
        if f"{k}_days" in d:
            rows.append([k.upper(), days(d[f"{k}_days"], True), quantile_interval(d, k)])
    six_pd = d.get("ideal_basis") == "layout" and "six_pd_days" in d
    if six_pd:
        rows.insert(1, [SIX_PD, days(d["six_pd_days"], True), ""])
    header = ["time to train", "days", "95 % CI"]
    if "start_date" in d:
        keys = (["ideal_date"] + ([""] if six_pd else [])
                + ["failure_free_date", "mean_date", "p10_date", "p50_date", "p90_date"])
        for r, k in zip(rows, keys):
            r.append(d.get(k, ""))
        header.append(f"date (t0 {d['start_date']})")
    _table(rows, header, echo)
    if t.tokens_t is not None:
        echo(textwrap.fill(FLOP_CONVENTION, width=110, initial_indent="  ", subsequent_indent="    "))
    if d["censored"]:
        echo(f"  warning: {d['censored']} replications censored at the horizon bound (quantiles are lower bounds)")
    phases = getattr(res, "phases", None)
    if phases:
        echo("\nphases (each on its own GPUs; failure-free and mean days, interruptions per run)")
        _table([[p["phase"], f"{p['gpus']:,}", _f(p["tokens_t"], 3), days(p["failure_free_days"], True),
                 days(p["mean_days"], True), _f(p["interruptions"], 1)] for p in phases],
               ["phase", "GPUs", "tokens T", "failure-free days", "mean days", "interruptions"], echo)
    echo("\ndays lost per run, by cause (mean, 95 % CI)")
    loss = res.losses  # type: ignore[attr-defined]
    lr = []
    for r in loss.itertuples(index=False):
        if r.kind in ("failure", "planned"):
            extra = f"lost {days(r.lost_days, True)} + restarts {days(r.restart_days, True)} + requeue " \
                    f"{days(r.requeue_days, True)}; {_f(r.interruptions, 1)} interruptions"
        else:
            extra = ""
        lr.append([r.bucket, days(r.mean_days, True), days_interval(r.ci_low, r.ci_high), extra])
    _table(lr, ["cause", "days", "95 % CI", "of which"], echo)
    table = res.lever_table  # type: ignore[attr-defined]
    if len(table):
        echo("\nwhat-if levers (common random numbers; saved = baseline - lever, paired)")
        rows = [[r.lever, days(r.mean_days, True), days(r.p90_days, True),
                 days(r.saved_days, True, "forecast.days_saved"), days_interval(r.saved_ci_low, r.saved_ci_high),
                 "; ".join(x for x in (r.change, r.note) if x)]
                for r in table.itertuples(index=False)]
        _table(rows, ["lever", "mean days", "P90 days", "days saved", "95 % CI", "change"], echo)
    for n in res.notes:  # type: ignore[attr-defined]
        _note(n)


def cmd_forecast(args: argparse.Namespace) -> int:
    from twin.forecast.levers import parse_lever_scenarios, parse_levers
    from twin.forecast.run import run_forecast
    from twin.scenario.loader import load_scenario

    from twin.limits import check_workers

    check_workers(args.workers, args.dask, args.force)
    levers = parse_levers(args.levers)
    scen = parse_lever_scenarios(args.lever_scenario)
    loaded = load_scenario(args.scenario, args.overrides)
    if args.search_layouts is not None:
        return print_layout_search(loaded.scenario, args.job, args.search_layouts, str(args.scenario))
    res = run_forecast(loaded, args.reps, job=args.job, levers=levers, spares=args.lever_spares,
                       lever_scenarios=scen, sets=args.overrides, results_root=args.results, label=args.label,
                       overwrite=args.overwrite, workers=args.workers, bound_factor=args.bound_factor,
                       start_date=args.start_date, report=not args.no_report,
                       echo=None if args.quiet else _note, dask=args.dask, force=args.force)
    print_forecast(res)
    _echo(f"results: {res.folder}")
    if res.report is not None:
        _echo(f"report: {res.report[0]}")
    return EXIT_OK


def print_layout_search(sc: object, job: str | None, k: int, source: str,
                        echo: Callable[[str], None] = _echo) -> int:
    """The ``k`` fastest memory-feasible layouts of the forecast job's size (twin/physics/layouts.py), with
    the job's own layout marked; InputError (exit 2) when the job has no step layout with ``hbm_gb``."""
    from twin.errors import InputError
    from twin.forecast.target import select_job
    from twin.physics.layouts import search_layouts

    idx = select_job(sc, job, source)  # type: ignore[arg-type]
    j = sc.workload.jobs[idx]  # type: ignore[attr-defined]
    lay = j.step.layout
    if j.step.model is None or lay is None or lay.hbm_gb is None:
        raise InputError(source, f"workload.jobs.{idx}.step.layout.hbm_gb",
                         "a layout search needs step.model and step.layout with hbm_gb (GPU memory, GB)")
    if k < 1:
        raise InputError(source, "--search-layouts", "must be >= 1")
    base = lay.physics()
    cands = search_layouts(j.step.model.physics(), j.gpus, base, lay.interconnect(), lay.effective_peak_flops(),
                           lay.eta_k, lay.hbm_gb, lay.reserve_gb, lay.optimizer_bytes)
    own = j.step.breakdown().total_s
    echo(f"job {j.name}: {j.gpus:,} GPUs, its layout tp {lay.tp}, pp {lay.pp}, dp {lay.dp}, v {lay.interleave}: "
         f"{own:.3f} s per step, {j.step.memory().total_gb:.1f} GB of {lay.hbm_gb:g} GB")
    echo(f"fastest memory-feasible layouts ({len(cands)} feasible; step model of twin/physics/parallel.py):")
    for c in cands[:k]:
        mark = "  (the job's)" if (c.layout.tp, c.layout.pp, c.layout.interleave, c.layout.zero, c.mode) == (
            lay.tp, lay.pp, lay.interleave, base.zero, lay.recompute_mode) else ""
        echo(f"  {c.describe()}{mark}")
    return EXIT_OK
