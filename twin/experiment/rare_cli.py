"""``twin rare SCENARIO --event NAME``: the probability of a rare event by importance sampling.

A command of its own rather than an option of ``twin montecarlo``: it runs a *biased* scenario, its
replications carry weights rather than metrics to summarise, and its answer is one probability with
its interval, effective sample size, relative error and the work-normalised variance against plain
Monte Carlo, none of which a Monte-Carlo summary has.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from twin.console import echo as _echo
from twin.console import note as _note
from twin.errors import InputError


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from twin.experiment import rare_events
    from twin.experiment.rare import AIM_FAILURES, PLAIN_REPS

    events = "; ".join(f"{e.name}: {e.doc} (" + ", ".join(f"{k}={d!r}" for k, (d, _) in e.params.items()) + ")"
                       for e in rare_events.EVENTS.values())
    p = subparsers.add_parser(
        "rare", help="probability of a rare named event by importance sampling (failure biasing), with its interval",
        description="Runs the scenario with the chosen node parts' exponential failure rates multiplied by a bias "
                    "factor and weights each replication by its likelihood ratio: an unbiased estimate of P(event) "
                    "with a 95%% interval, the effective sample size, the relative error and the gain in "
                    "work-normalised variance over plain Monte Carlo. Resumable; --workers or --dask like "
                    "montecarlo. Events: " + events.replace("%", "%%"))
    p.add_argument("scenario", help="scenario YAML file")
    p.add_argument("--event", required=True, choices=sorted(rare_events.EVENTS), help="the named event")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="a parameter of the event (see the events above); repeatable")
    p.add_argument("--bias-part", dest="bias_parts", action="append", default=[], metavar="PART",
                   help="a node part whose exponential failure rate is biased (default: every node part with an "
                        "exponential life); repeatable")
    p.add_argument("--bias-unit", dest="bias_units", action="append", default=[], metavar="NAME[=THETA]",
                   help="a quantity of the power chain to bias by THETA (default auto): lives (ups, generator, "
                        "switchboard, pdu, ups_module; exponential only, with their common-cause events), "
                        "arrivals (utility, ups_fault) or demand probabilities (generator_start, ats_transfer, "
                        "ups_bypass, switching); repeatable. With it, node parts are biased only if --bias-part names them")
    p.add_argument("--bias", default="auto", metavar="THETA",
                   help="failure-rate multiplier of the biased parts, or 'auto' (default): the biased parts fail "
                        "--aim-failures times on average over the horizon")
    p.add_argument("--aim-failures", dest="aim_failures", type=float, default=AIM_FAILURES, metavar="M",
                   help=f"for --bias auto: expected failures of the biased parts over the horizon (default {AIM_FAILURES:g})")
    p.add_argument("--reps", type=int, default=1000, metavar="N", help="biased replications (default 1000)")
    p.add_argument("--plain-reps", dest="plain_reps", type=int, default=PLAIN_REPS, metavar="N",
                   help=f"plain replications run to measure a plain one's CPU cost (default {PLAIN_REPS})")
    p.add_argument("--workers", type=int, default=1, metavar="K",
                   help="local worker processes (default 1: serial, in this process)")
    p.add_argument("--dask", metavar="ADDRESS",
                   help="run on a Dask cluster: scheduler address or 'local' for a LocalCluster of --workers")
    p.add_argument("--label", help="results folder name (default derived from the biased scenario and event)")
    p.add_argument("--results", default="results", help="results root folder (default: results)")
    p.add_argument("--overwrite", action="store_true", help="recompute even if stored replications exist")
    p.add_argument("--quiet", action="store_true", help="no progress notes")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE",
                   help="override a scenario field, e.g. --set horizon_days=1")
    p.set_defaults(func=cmd_rare)


def _params(items: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for it in items:
        key, sep, val = it.partition("=")
        if not sep or not key.strip():
            raise InputError("--param", it, "expected KEY=VALUE")
        out[key.strip()] = val.strip()
    return out


def _g(x: float) -> str:
    return f"{x:.4g}"


def cmd_rare(args: argparse.Namespace) -> int:
    from twin.experiment.rare import run_rare
    from twin.scenario.loader import load_scenario

    if args.bias == "auto":
        theta = None
    else:
        try:
            theta = float(args.bias)
        except ValueError:
            raise InputError("--bias", args.bias, "must be a positive number or 'auto'") from None
    loaded = load_scenario(args.scenario, args.overrides)
    folder = None
    if args.label:
        from twin.experiment.store import check_label

        check_label(args.label)
        folder = Path(args.results) / loaded.scenario.name / args.label
    from twin.experiment.rare_power import parse

    units = parse(args.bias_units) if args.bias_units else None
    res = run_rare(loaded, args.event, _params(args.param), args.reps, args.bias_parts or None, theta,
                   args.aim_failures, args.workers, args.dask, folder, args.overwrite, args.plain_reps,
                   echo=(lambda s: None) if args.quiet else _note, results_root=Path(args.results), units=units)
    e = res.estimate
    sc = loaded.scenario
    how = "reused the complete folder" if res.reused else f"{res.computed} computed"
    import textwrap

    what = " ".join([res.event, *(f"{k}={v}" for k, v in res.params.items())])
    cost = (f"Plain Monte Carlo would need about {_g(e.plain_reps_same_ci)} replications for the same interval; this "
            f"estimate's work-normalised variance is {_g(e.gain)} times smaller." if e.hits else
            "No biased replication hit the event: no interval yet (more replications, or bias what the event needs).")
    _echo("decision summary")
    _echo(textwrap.fill(f"P({what}) over the {_g(sc.horizon_h / 24)}-day horizon = {_g(e.p)}, 95 % CI "
                        f"[{_g(e.ci_low)}, {_g(e.ci_high)}], from {e.replications} biased replications (effective "
                        f"sample size {_g(e.ess)}, relative half-width {_g(e.rel_half_width)}). {cost}",
                        width=110, initial_indent="  ", subsequent_indent="    "))
    _echo("")
    _echo(f"{sc.name}  (hash {loaded.hash}, seed {sc.seed}): event {res.event} "
          + " ".join(f"{k}={v}" for k, v in res.params.items()))
    biased = ([f"parts {', '.join(res.bias.parts)} at theta = {_g(res.bias.theta)}"] if res.bias.parts else []) + [
        f"{u.kind} x{_g(u.theta)}" for u in res.bias.units]
    _echo(f"biased {'; '.join(biased)}; {e.replications} replications ({how}), {e.hits} hit the event")
    _echo(f"P(event) = {_g(e.p)}   95% CI [{_g(e.ci_low)}, {_g(e.ci_high)}]   relative half-width "
          f"{_g(e.rel_half_width)}   ESS {_g(e.ess)}")
    _echo(f"work-normalised variance {_g(e.wnv)} (var x CPU s per replication, {_g(e.cpu_s_per_rep * 1e3)} ms); "
          f"plain Monte Carlo p(1-p) x {_g(e.plain_cpu_s_per_rep * 1e3)} ms = {_g(e.plain_wnv)}: gain x{_g(e.gain)}; "
          f"plain MC would need {_g(e.plain_reps_same_ci)} replications for this interval")
    _echo(f"plain check: {res.plain_hits} hits in {res.plain_reps} unbiased replications")
    _echo(f"results: {res.folder}")
    return 0
