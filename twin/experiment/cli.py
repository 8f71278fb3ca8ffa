"""``twin montecarlo | compare | sweep | sensitivity | report``.

Registered by :func:`twin.cli.build_parser` through :func:`add_parser`. Every command returns an
exit code: 0 ok, 1 a check failed (a ``--target-ci`` half-width not reached within
``--max-reps``), 2 bad input or the environment (:class:`~twin.errors.InputError`, a full disk,
no Dask worker for ``--worker-wait-s``), 130 interrupted (Ctrl-C; the finished replications are kept
and the same command resumes). Options shared with ``twin forecast`` that only concern the Dask
worker wait are added by :func:`twin.cli.build_parser`.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

from twin.errors import EXIT_CHECK_FAILED, EXIT_OK, InputError

if TYPE_CHECKING:  # keep `twin --help` and other commands from importing pandas
    import pandas as pd

DEFAULT_MAX_REPS = 10_000
"""Same as :data:`twin.experiment.runner.DEFAULT_MAX_REPS` (not imported: it pulls in pandas)."""

HEADLINE = ("node_availability", "fleet_capacity_availability", "goodput", "useful_gpu_hours", "ettr.max_job",
            "failures", "node_down_hours", "interruptions", "stockouts", "energy.it_kwh", "pue",
            "pue.flat", "energy.facility_kwh", "cost.total", "cost.per_useful_gpu_hour")


from twin.console import echo as _echo, note as _note  # noqa: E402


def _common(p: argparse.ArgumentParser, reps_default: int = 20) -> None:
    p.add_argument("--reps", type=int, default=reps_default, metavar="N",
                   help=f"replications (per variant / point; default {reps_default})")
    p.add_argument("--workers", type=int, default=1, metavar="K",
                   help="local worker processes (default 1: serial, in this process; at most 4 per CPU core "
                        "without --force)")
    p.add_argument("--dask", metavar="ADDRESS",
                   help="run on a Dask cluster: scheduler address (tcp://host:8786) or 'local' for a "
                        "LocalCluster of --workers processes")
    p.add_argument("--label", help="results folder name (default derived from the scenario hash and seed)")
    p.add_argument("--results", default="results", help="results root folder (default: results)")
    p.add_argument("--overwrite", action="store_true", help="recompute even if stored replications exist")
    p.add_argument("--target-ci", dest="target_ci", action="append", default=[], metavar="METRIC=HALFWIDTH",
                   help="add replications until the 95%% CI half-width of METRIC is at most HALFWIDTH "
                        "(compare: of the paired difference); repeatable")
    p.add_argument("--max-reps", dest="max_reps", type=int, default=None, metavar="N",
                   help=f"cap for --target-ci (default {DEFAULT_MAX_REPS:,}, or --reps when larger; at most "
                        "100,000 replications per command, twin.limits)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE",
                   help="override a scenario field (applied to every scenario), e.g. "
                        "--set maintenance.crews.technicians.count=4")
    p.add_argument("--all-metrics", dest="all_metrics", action="store_true",
                   help="print every metric, not only the headline ones")
    p.add_argument("--no-report", dest="no_report", action="store_true", help="skip report.html / report.md")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    from twin.limits import add_guard_args

    add_guard_args(p)


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "montecarlo", help="run N replications of a scenario: means, 95 %% CIs, quantiles",
        description="Replications 0..N-1 (SeedSequence(seed) children), stored one file per replication as "
                    "they finish; rerunning the same command reuses a complete folder or resumes an interrupted one.")
    p.add_argument("scenario", help="scenario YAML file")
    p.add_argument("--objective", dest="objectives", action="append", default=[], metavar="METRIC",
                   help="what the decision summary optimises (default cost.per_useful_gpu_hour, or goodput "
                        "without costs); repeatable")
    _common(p)
    p.set_defaults(func=cmd_montecarlo)

    p = subparsers.add_parser(
        "compare", help="compare scenarios under common random numbers (paired differences)",
        description="Every variant uses the seed of the FIRST scenario and the same replication indices; "
                    "differences are paired per replication against the first scenario.")
    p.add_argument("scenarios", nargs="+", help="two or more scenario YAML files; the first is the reference")
    p.add_argument("--objective", dest="objectives", action="append", default=[], metavar="METRIC",
                   help="what the decision summary optimises (default cost.per_useful_gpu_hour, or goodput "
                        "without costs); repeatable")
    _common(p)
    p.set_defaults(func=cmd_compare)

    p = subparsers.add_parser(
        "sweep", help="cartesian grid of --set overrides, each point a Monte Carlo",
        description="Example: twin sweep s.yaml --param maintenance.crews.technicians.count=1,2,4 --reps 20")
    p.add_argument("scenario", help="scenario YAML file")
    p.add_argument("--param", action="append", default=[], metavar="PATH=V1,V2,...",
                   help="a swept scenario field and its values (YAML each); repeatable: the grid is the product")
    p.add_argument("--objective", metavar="METRIC",
                   help="choose the grid point with the best mean METRIC (the smallest cost.total, the largest "
                        "goodput: the metric's direction, twin explain METRIC) among those that meet every "
                        "--constraint; exit 1 when none does")
    p.add_argument("--constraint", dest="constraints", action="append", default=[], metavar="METRIC>=X",
                   help="METRIC>=X or METRIC<=X, met when the one-sided confidence bound of the mean is on the "
                        "right side of X (e.g. 'node_availability>=0.995'); repeatable")
    p.add_argument("--confidence", type=float, default=None, metavar="C",
                   help="joint confidence of the --constraint bounds (default 0.95)")
    _common(p)
    p.set_defaults(func=cmd_sweep)

    p = subparsers.add_parser(
        "sensitivity", help="one-at-a-time low/high changes under CRN; tornado of Δ goodput, Δ availability "
             "and Δ cost per useful GPU-hour",
        description="Each factor is set to its low and its high value with everything else unchanged; "
                    "deltas are paired differences against the unchanged scenario.")
    p.add_argument("scenario", help="scenario YAML file")
    p.add_argument("--param", action="append", default=[], metavar="PATH=LOW,HIGH",
                   help="a factor and its low and high values; repeatable")
    p.add_argument("--factor", type=float, metavar="F",
                   help="also every part's failure mean (MTBF, Weibull scale) and repair-time mean ×1/F and ×F")
    p.add_argument("--assumptions", action="store_true",
                   help="also every numeric field the schema calls an assumption, between the range its description "
                        "states (else ×1/2 and ×2); lists the ones that move a metric beyond its paired 95 %% CI and "
                        "whether the scenario's uncertainty: section gives them a range")
    p.add_argument("--check-ranges", dest="check_ranges", metavar="METRIC",
                   help="with --assumptions: exit 1 when an assumption that moves METRIC beyond its paired CI has no "
                        "range in the scenario's uncertainty: section")
    p.add_argument("--skip-ranged", dest="skip_ranged", action="store_true",
                   help="with --assumptions: leave out the assumptions the uncertainty: section already gives a range "
                        "(they pass --check-ranges whatever they move), screening only the ones the check can fail on")
    _common(p)
    p.set_defaults(func=cmd_sensitivity)

    p = subparsers.add_parser("report", help="(re)build report.html and report.md of an experiment folder")
    p.add_argument("folder", help="an experiment results folder (montecarlo, compare, sweep or sensitivity)")
    p.add_argument("--objective", dest="objectives", action="append", default=[], metavar="METRIC",
                   help="what the decision summary optimises (default cost.per_useful_gpu_hour, or goodput "
                        "without costs); repeatable")
    p.set_defaults(func=cmd_report)


# ------------------------------------------------------------------------------ helpers

def parse_targets(exprs: Sequence[str]) -> dict[str, float]:
    out: dict[str, float] = {}
    for e in exprs:
        m, sep, v = e.partition("=")
        if not sep or not m.strip():
            raise InputError("--target-ci", e, "expected METRIC=HALFWIDTH, e.g. node_availability=0.0005")
        try:
            h = float(v)
        except ValueError:
            raise InputError("--target-ci", e, f"half-width is not a number: {v!r}") from None
        if not (math.isfinite(h) and h > 0):
            raise InputError("--target-ci", e, "half-width must be a positive number")
        out[m.strip()] = h
    return out


def _check(args: argparse.Namespace) -> None:
    if args.reps < 2:
        raise InputError("--reps", str(args.reps), "must be >= 2")
    from twin.limits import check_workers

    check_workers(args.workers, args.dask, args.force)
    if args.max_reps is None:  # not given: it cannot refuse the --reps given
        args.max_reps = max(DEFAULT_MAX_REPS, args.reps)
    elif args.max_reps < args.reps:
        raise InputError("--max-reps", str(args.max_reps), f"must be >= --reps ({args.reps})")


def _check_limits(args: argparse.Namespace, kind: str) -> None:
    """twin.limits before any work: every scenario the command will run (each variant, grid point
    or sensitivity level), with the total replications it may run (--max-reps with --target-ci)."""
    if args.force:
        return
    import itertools

    from twin.limits import check_limits
    from twin.scenario.loader import load_scenario

    sets = list(args.overrides)
    if kind == "compare":
        from twin.experiment.compare import load_variants

        points = load_variants(args.scenarios, sets)[0]
    elif kind == "sweep":
        from twin.experiment.sweep import parse_param

        params = [parse_param(e) for e in args.param]
        points = [load_scenario(args.scenario, sets + [f"{p.path}={p.raw[k]}" for p, k in zip(params, combo)])
                  for combo in itertools.product(*[range(len(p.raw)) for p in params])]
    elif kind == "sensitivity":
        from twin.experiment.sweep import factor_overrides, parse_param

        base = load_scenario(args.scenario, sets)
        exprs = []
        for e in args.param:
            p = parse_param(e, exactly=2)
            exprs += [f"{p.path}={p.raw[0]}", f"{p.path}={p.raw[1]}"]
        if args.factor is not None:
            exprs += [x for fa in factor_overrides(base, args.factor) for x in (fa.low_set, fa.high_set)]
        points = [base] + [load_scenario(args.scenario, sets + [x]) for x in exprs]
    else:
        points = [load_scenario(args.scenario, sets)]
    per_point = args.max_reps if args.target_ci else args.reps
    for ld in points:
        check_limits(ld, reps=per_point * len(points), force=False, reps_option="--max-reps" if args.target_ci
                     else "--reps")


def _progress(args: argparse.Namespace) -> bool:
    return not args.quiet and sys.stderr.isatty()


def _fmt(x: float) -> str:
    """A number without a metric: six significant digits, no exponent (twin.report.numbers.fmt)."""
    from twin.report.numbers import fmt

    return fmt(x)


def _v(m: str, x: float, delta: bool = False, cur: str = "") -> str:
    """A value of metric ``m`` as the catalogue prints it (twin.report.metrics)."""
    from twin.report.metrics import format_value

    return format_value(m, x, cur, delta)


def _ci(m: str, lo: float, hi: float, delta: bool = False, cur: str = "") -> str:
    from twin.report.metrics import format_interval

    return format_interval(m, lo, hi, cur, delta)


def _lab(m: str, cur: str = "") -> str:
    from twin.report.metrics import label_with_unit

    return label_with_unit(m, cur, table=True)


def shown_metrics(metrics: Sequence[str], all_metrics: bool, extra: Sequence[str] = ()) -> list[str]:
    if all_metrics:
        return sorted(metrics)
    out = [m for m in HEADLINE if m in metrics]
    out += [m for m in extra if m in metrics and m not in out]
    return out or sorted(metrics)


def print_table(rows: list[list[str]], header: list[str], echo: Callable[[str], None] = _echo) -> None:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    echo("  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(header, widths))))
    for r in rows:
        echo("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))))


def summary_table(summ: pd.DataFrame, metrics: Sequence[str], echo: Callable[[str], None] = _echo,
                  cur: str = "") -> None:
    """Mean, 95 % CI and quantiles per metric, labelled and formatted by the metric catalogue."""
    s = summ.set_index("metric")
    rows = []
    for m in metrics:
        if m in s.index:
            r = s.loc[m]
            rows.append([_lab(m, cur), _v(m, r["mean"], cur=cur), _ci(m, r["ci_low"], r["ci_high"], cur=cur),
                         _v(m, r["p5"], cur=cur), _v(m, r["p50"], cur=cur), _v(m, r["p95"], cur=cur)])
    print_table(rows, ["metric", "mean", "95 % CI", "p5", "p50", "p95"], echo)


def print_summary(decision: dict, echo: Callable[[str], None] = _echo) -> None:  # type: ignore[type-arg]
    """The decision summary's sentences (twin.report.summary), wrapped, before any table."""
    import textwrap

    from twin.report.summary import sentences

    paras = sentences(decision)
    if not paras:
        return
    echo("decision summary")
    for para in paras:
        echo(textwrap.fill(" ".join(para), width=110, initial_indent="  ", subsequent_indent="    "))
    echo("")


def _report(folder: Path, args: argparse.Namespace) -> None:
    if getattr(args, "no_report", False):
        return
    from twin.report.html import build_report

    h, _, warnings = build_report(folder)
    for w in warnings:
        _note(f"warning: {w}")
    _echo(f"report: {h}")


# ------------------------------------------------------------------------------ commands

def cmd_montecarlo(args: argparse.Namespace) -> int:
    from twin.experiment.runner import experiment_folder, run_experiment
    from twin.scenario.loader import load_scenario

    _check(args)
    targets = parse_targets(args.target_ci)
    loaded = load_scenario(args.scenario, args.overrides)
    if not args.force:
        from twin.limits import check_limits

        check_limits(loaded, reps=args.max_reps if targets else args.reps,
                     reps_option="--max-reps" if targets else "--reps")
    folder = experiment_folder(Path(args.results), loaded, args.label)
    res = run_experiment(loaded, args.reps, args.workers, args.dask, folder, args.overwrite, targets or None,
                         _progress(args), max_reps=args.max_reps, echo=_note)
    sc = loaded.scenario
    n = len(res.replications)
    how = ("reused the complete folder (use --overwrite to recompute)" if res.reused
           else f"{res.computed} computed, {n - res.computed} reused, {res.wall_s:.1f} s")
    _echo(f"{sc.name}  (hash {loaded.hash}, seed {sc.seed}, {n} replications: {how})")
    from twin.experiment import summary

    dsum = summary.write(res.folder, args.objectives or None)
    print_summary(dsum)
    summary_table(res.summary, shown_metrics(list(res.summary.metric), args.all_metrics, list(targets)),
                  cur=str(dsum.get("currency") or ""))
    from twin.scenario.advice import advice_lines

    for line in advice_lines(sc):
        _echo(line)
    _echo(f"results: {res.folder}")
    _report(res.folder, args)
    if targets and res.target_met is False:
        _note(f"check failed: the target half-width {targets} was not reached within --max-reps {args.max_reps}")
        return EXIT_CHECK_FAILED
    if targets:
        _echo(f"target half-width reached with {n} replications")
    return EXIT_OK


def cmd_compare(args: argparse.Namespace) -> int:
    from twin.experiment.compare import run_compare

    _check(args)
    targets = parse_targets(args.target_ci)
    _check_limits(args, "compare")
    res = run_compare(args.scenarios, args.overrides, args.reps, args.workers, args.dask, args.results, args.label,
                      args.overwrite, targets or None, args.max_reps, _progress(args), echo=_note,
                      objectives=args.objectives or None)
    for n in res.notes:
        _echo(n)
    _echo("")
    if res.decision is not None:
        print_summary(res.decision)
    ms = shown_metrics(list(res.summaries.metric.unique()), args.all_metrics, list(targets))
    for lab in res.labels:
        _echo(f"\n{lab}  ({res.reps} replications)")
        summary_table(res.summaries[res.summaries.variant == lab], ms, cur=(res.decision or {}).get("currency", ""))
    _echo(f"\npaired differences vs {res.labels[0]} (variant − {res.labels[0]}, same replications)")
    p = res.paired[res.paired.metric.isin(ms)]
    p = p.assign(_o=p.metric.map({m: i for i, m in enumerate(ms)})).sort_values(["_o"], kind="stable")
    cur = (res.decision or {}).get("currency", "")
    rows = [[_lab(m, cur), v, _v(m, d, True, cur), _ci(m, lo, hi, True, cur), _fmt(vr)]
            for m, v, d, lo, hi, vr in zip(p.metric, p.variant, p["diff"], p.ci_low, p.ci_high, p.variance_reduction)]
    print_table(rows, ["metric", "variant", "Δ mean", "95 % CI", "var. reduction"])
    _echo("\nwinners (best mean; margin = paired difference to the runner-up)")
    w = res.winners[res.winners.metric.isin(ms)]
    rows = [[_lab(m, cur), b, win, _v(m, mg, True, cur), _ci(m, lo, hi, True, cur), "yes" if c else "no"]
            for m, b, win, mg, lo, hi, c in zip(w.metric, w.better, w.winner, w.margin, w.margin_ci_low,
                                                 w.margin_ci_high, w.clear)]
    print_table(rows, ["metric", "better", "winner", "margin", "95 % CI", "clear"])
    if res.breakeven is not None:
        _print_breakeven(res.breakeven)
    _echo(f"results: {res.folder}")
    _report(res.folder, args)
    if targets and res.target_met is False:
        _note(f"check failed: the target half-width {targets} was not reached within --max-reps {args.max_reps}")
        return EXIT_CHECK_FAILED
    return EXIT_OK


def _print_breakeven(be: "pd.DataFrame") -> None:
    """Cost decision of every variant vs the reference (twin.experiment.decide)."""
    r0 = be.iloc[0]
    _echo(f"\ncost break-even vs {r0.reference} ({r0.currency}; a useful GPU-hour is worth "
          f"{_fmt(r0.value_per_useful_gpu_hour)}, discount rate {_fmt(r0.discount_rate)}; "
          "benefit = value of extra useful GPU-hours + operating savings, per year)")
    from twin.report.cost_figures import breakeven_rows

    t = breakeven_rows(be)
    print_table([[str(v) for v in row] for row in t.itertuples(index=False)], list(t.columns))


def _print_decision(res: object, cur: str = "") -> None:
    from twin.report.cost_figures import decision_rows

    d = getattr(res, "decision", None)
    if d is None:
        return
    from twin.experiment.decide import sense_of
    from twin.report.metrics import label

    obj = str(d.objective.iloc[0])
    best = "largest" if sense_of(obj) == "max" else "smallest"
    _echo(f"\ndecision: the {best} mean {label(obj)} among points meeting the constraints at the stated confidence")
    t = decision_rows(d, [p.path for p in getattr(res, "params", [])], cur)
    print_table([[str(v) for v in row] for row in t.itertuples(index=False)], list(t.columns))
    chosen = getattr(res, "chosen", None)
    _echo("chosen: " + (f"point {chosen}" if chosen is not None else "none: no grid point meets the constraints"))


def _points_met(results: Iterable[object]) -> bool:
    return all(getattr(r, "target_met", None) is not False for r in results)


def cmd_sweep(args: argparse.Namespace) -> int:
    from twin.experiment.sweep import run_sweep

    _check(args)
    if args.confidence is not None and not args.constraints:
        raise InputError("--confidence", str(args.confidence), "sets the confidence of --constraint bounds: give a "
                         "--constraint, or leave it out")
    targets = parse_targets(args.target_ci)
    _check_limits(args, "sweep")
    res = run_sweep(args.scenario, args.overrides, args.param, args.reps, args.workers, args.dask, args.results,
                    args.label, args.overwrite, targets or None, args.max_reps, _progress(args), echo=_note,
                    objective=args.objective, constraints=args.constraints,
                    confidence=0.95 if args.confidence is None else args.confidence)
    import json

    from twin.experiment.summary import FILE

    dsum = json.loads((res.folder / FILE).read_text())
    print_summary(dsum)
    cur = str(dsum.get("currency") or "")
    extra = list(targets) + ([args.objective] if args.objective else [])
    extra += [c.split(">=")[0].split("<=")[0].strip() for c in args.constraints]
    ms = shown_metrics(list(res.tidy.metric.unique()), args.all_metrics, extra)
    params = [p.path for p in res.params]
    t = res.tidy[res.tidy.metric.isin(ms)]
    rows = [[str(pt), *[_fmt(v) if isinstance(v, float) else str(v) for v in vals], _lab(m, cur), _v(m, mean, cur=cur),
             _ci(m, lo, hi, cur=cur), _v(m, p5, cur=cur), _v(m, p50, cur=cur), _v(m, p95, cur=cur)]
            for pt, *vals, m, mean, lo, hi, p5, p50, p95 in
            t[["point", *params, "metric", "mean", "ci_low", "ci_high", "p5", "p50", "p95"]].itertuples(index=False)]
    print_table(rows, ["point", *params, "metric", "mean", "95 % CI", "p5", "p50", "p95"])
    _print_decision(res, cur)
    _echo(f"results: {res.folder}")
    _report(res.folder, args)
    if targets and not _points_met(res.results):
        _note("check failed: a target half-width was not reached at some points within --max-reps")
        return EXIT_CHECK_FAILED
    if args.objective and res.chosen is None:
        _note("check failed: no grid point meets the constraints at the stated confidence")
        return EXIT_CHECK_FAILED
    return EXIT_OK


def cmd_sensitivity(args: argparse.Namespace) -> int:
    from twin.experiment.sweep import run_sensitivity

    _check(args)
    for flag, val in (("--check-ranges", args.check_ranges), ("--skip-ranged", args.skip_ranged)):
        if val and not args.assumptions:
            raise InputError(flag, str(val), "needs --assumptions")
    if args.assumptions:
        from twin.experiment.assumptions import param_exprs, without_range
        from twin.scenario.loader import load_scenario

        loaded = load_scenario(args.scenario, args.overrides)
        exprs, notes = param_exprs(args.scenario, list(args.overrides), loaded)
        if args.skip_ranged:
            bare = set(without_range([e.partition("=")[0] for e in exprs], loaded))
            ranged = len(exprs) - len(bare)
            exprs = [e for e in exprs if e.partition("=")[0] in bare]
            _note(f"assumptions: {ranged} with a range in uncertainty: are left out (--skip-ranged)")
        given = {e.partition("=")[0] for e in args.param}
        args.param = list(args.param) + [e for e in exprs if e.partition("=")[0] not in given]
        for n in notes:
            _note(f"assumptions: {n}")
        _note(f"assumptions: {len(exprs)} fields taken on assumption are screened")
        if not args.param and args.factor is None:  # --skip-ranged left nothing: every assumption has a range
            _echo("assumptions without a range in uncertainty: none (nothing to screen)")
            return EXIT_OK
    targets = parse_targets(args.target_ci)
    _check_limits(args, "sensitivity")
    res = run_sensitivity(args.scenario, args.overrides, args.param, args.factor, args.reps, args.workers, args.dask,
                          args.results, args.label, args.overwrite, targets or None, args.max_reps, _progress(args),
                          echo=_note)
    import json

    from twin.experiment.summary import FILE

    dsum = json.loads((res.folder / FILE).read_text())
    print_summary(dsum)
    cur = str(dsum.get("currency") or "")
    _echo(f"sensitivity of {res.base.scenario.name} (hash {res.base.hash}, seed {res.base.scenario.seed}; "
          f"common random numbers, paired Δ vs baseline)")
    for m in res.metrics:
        d = res.ranking[res.ranking.metric == m]
        _echo(f"\nΔ {_lab(m, cur)}, ranked by swing")
        rows = [[str(r), f, lo, hi, _v(m, dl, True, cur), _ci(m, a, b, True, cur), _v(m, dh, True, cur),
                 _ci(m, c, e, True, cur)]
                for r, f, lo, hi, dl, a, b, dh, c, e in zip(d["rank"], d.factor, d.low, d.high, d.delta_low,
                                                            d.delta_low_ci_low, d.delta_low_ci_high, d.delta_high,
                                                            d.delta_high_ci_low, d.delta_high_ci_high)]
        print_table(rows, ["rank", "factor", "low", "high", "Δ low", "95 % CI", "Δ high", "95 % CI"])
    _echo(f"results: {res.folder}")
    _report(res.folder, args)
    if targets and not _points_met(res.results.values()):
        _note("check failed: a target half-width was not reached for some variants within --max-reps")
        return EXIT_CHECK_FAILED
    if args.assumptions:
        return _screen(args, res)
    return EXIT_OK


def _screen(args: argparse.Namespace, res: Any) -> int:
    """The assumptions screen's verdict (:mod:`twin.experiment.assumptions`)."""
    from twin.experiment.assumptions import decisive, without_range

    if args.check_ranges and args.check_ranges not in res.metrics:
        raise InputError("--check-ranges", args.check_ranges, "not a metric of the screen; allowed: "
                         + ", ".join(res.metrics))
    failed = False
    for m in res.metrics:
        hits = decisive(res.ranking, m)
        bare = without_range(hits, res.base)
        _echo(f"\nassumptions that move {m} beyond the paired 95 % CI: {', '.join(hits) or 'none'}")
        if hits:
            _echo(f"  without a range in uncertainty: {', '.join(bare) or 'none'}")
        failed |= m == args.check_ranges and bool(bare)
    if failed:
        _note(f"check failed: an assumption that moves {args.check_ranges} has no range in uncertainty:")
        return EXIT_CHECK_FAILED
    return EXIT_OK


def cmd_report(args: argparse.Namespace) -> int:
    from twin.report.html import build_report, read_kind

    folder = Path(args.folder)
    if read_kind(folder) == "decide":  # twin decide (issue 46)
        from twin.report.uncertain import build_decide_report

        h, m = build_decide_report(folder)
        _echo(f"report: {h}\nmarkdown: {m}")
        return EXIT_OK
    if read_kind(folder) in ("montecarlo", "compare", "sweep", "sensitivity"):
        from twin.experiment import summary  # the summary is recomputed from the stored tables

        print_summary(summary.write(folder, args.objectives or None))
    h, m, warnings = build_report(folder)
    for w in warnings:
        _note(f"warning: {w}")
    _echo(f"report: {h}\nmarkdown: {m}")
    return EXIT_OK
