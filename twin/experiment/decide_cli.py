"""``twin decide OPTION.yaml... --objective METRIC``: which option to choose when inputs are not known
(issue 46; :mod:`twin.experiment.uncertain` runs it, :mod:`twin.experiment.value_of_information`
analyses it, :mod:`twin.report.uncertain` reports it).

A command of its own rather than a mode of ``twin compare``: its design (D draws × R replications
× options), its outputs (probabilities, EVPI, variance shares) and its stopping rule (on a
probability, not on a mean difference) differ from a comparison's, and ``twin compare`` keeps its
meaning (every input known). Exit codes: 0 ok, 1 ``--target-ci`` not reached within
``--max-draws``, 2 bad input, 130 interrupted (finished runs are kept; the same command resumes).
"""

from __future__ import annotations

import argparse
import textwrap
from pathlib import Path

from twin.errors import EXIT_CHECK_FAILED, EXIT_OK


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from twin.experiment.uncertain import DEFAULT_DRAWS, DEFAULT_MAX_DRAWS, DEFAULT_REPS

    p = subparsers.add_parser(
        "decide", help="choose between options when inputs are uncertain: P(best), expected loss, EVPI, what "
                       "the decision rests on",
        description="Draws the inputs of the options' uncertainty: sections (scrambled Sobol'), runs every option "
                    "at every draw (paired) with R replications under common random numbers, and reports the "
                    "probability each option is best, the expected loss of each, the expected value of perfect "
                    "information (all inputs, and each alone), the variance shares of the paired difference and "
                    "the flip points. Cost: draws x reps x options runs.")
    p.add_argument("scenarios", nargs="+", help="two or more option scenario files; the first gives the seed")
    p.add_argument("--objective", metavar="METRIC",
                   help="what the decision optimises, in the metric's direction (default cost.per_useful_gpu_hour, "
                        "or goodput without costs)")
    p.add_argument("--draws", type=int, default=DEFAULT_DRAWS, metavar="D",
                   help=f"outer draws of the inputs (default {DEFAULT_DRAWS}; a power of 2 for Sobol')")
    p.add_argument("--reps", type=int, default=DEFAULT_REPS, metavar="R",
                   help=f"inner replications per draw and option (default {DEFAULT_REPS})")
    p.add_argument("--inputs", metavar="FILE",
                   help="measured inputs: the uncertainty.inputs of FILE (twin calibrate's calibrated.yaml) replace "
                        "the distributions of the same fields in every option where the field exists")
    p.add_argument("--constraint", dest="constraints", action="append", default=[], metavar="EXPR",
                   help="a target every chosen option must meet, METRIC>=VALUE or METRIC<=VALUE (repeatable): an option "
                        "is admissible when its expected metric meets every one in at least --confidence of the "
                        "plausible worlds, and the decision is made among the admissible options (exit 1 when none is)")
    p.add_argument("--confidence", type=float, default=0.95,
                   help="share of the plausible worlds in which an admissible option meets the constraints (default 0.95)")
    p.add_argument("--design", choices=("sobol", "lhs", "saltelli"), default="sobol",
                   help="scrambled Sobol' (default; grows with --target-ci), Latin hypercube, or Saltelli's design "
                        "for first-order and total Sobol' indices (--draws N base points: N x (inputs + 2) draws; "
                        "the decision uses its 2N independent ones)")
    p.add_argument("--target-ci", dest="target_ci", type=float, metavar="H",
                   help="double the draws until the recommended option's P(best) interval is at most ±H (e.g. 0.05)")
    p.add_argument("--max-draws", dest="max_draws", type=int, default=DEFAULT_MAX_DRAWS, metavar="D",
                   help=f"cap for --target-ci (default {DEFAULT_MAX_DRAWS})")
    p.add_argument("--workers", type=int, default=1, metavar="K", help="local worker processes (default 1: serial)")
    p.add_argument("--dask", metavar="ADDRESS", help="a Dask scheduler address, or 'local'")
    p.add_argument("--label", help="results folder name (default derived from the options' hashes and seed)")
    p.add_argument("--results", default="results", help="results root folder (default: results)")
    p.add_argument("--overwrite", action="store_true", help="recompute even if stored runs exist")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE",
                   help="override a scenario field in every option")
    p.add_argument("--no-report", dest="no_report", action="store_true", help="skip report.html / report.md")
    p.add_argument("--quiet", action="store_true", help="fewer notes")
    from twin.limits import add_guard_args

    add_guard_args(p)
    p.set_defaults(func=cmd_decide)


def cmd_decide(args: argparse.Namespace) -> int:
    from twin.console import echo, note
    from twin.errors import InputError
    from twin.experiment.uncertain import load_options, run_decide

    if args.workers < 1:
        raise InputError("--workers", str(args.workers), "must be >= 1")
    if not args.force:
        from twin.limits import check_limits

        from twin.scenario.uncertainty import union_keys

        opts, _ = load_options(args.scenarios, args.overrides, args.inputs)
        runs = (args.max_draws if args.target_ci else args.draws) * args.reps
        if args.design == "saltelli":
            runs *= len(union_keys([o.unc for o in opts])) + 2
        for o in opts:
            check_limits(o.loaded, reps=runs * len(opts), force=False)
    res = run_decide(args.scenarios, args.overrides, args.objective, args.draws, args.reps, args.design, args.workers,
                     args.dask, args.results, args.label, args.overwrite, args.target_ci, args.max_draws,
                     echo=(lambda s: None) if args.quiet else note, inputs=args.inputs,
                     constraints=args.constraints, confidence=args.confidence)
    from twin.report.uncertain import summary_sentences, tables_text

    echo("decision summary")
    for para in summary_sentences(res.folder):
        echo(textwrap.fill(para, width=110, initial_indent="  ", subsequent_indent="    "))
    echo("")
    for line in tables_text(res.folder):
        echo(line)
    echo(f"results: {res.folder}")
    if not args.no_report:
        from twin.report.uncertain import build_decide_report

        h, m = build_decide_report(Path(res.folder))
        echo(f"report: {h}")
    if not res.decision.recommended:
        note(f"check failed: {res.decision.rule}")
        return EXIT_CHECK_FAILED
    if args.target_ci is not None and res.target_met is False:
        note(f"check failed: P(best) half-width {args.target_ci:g} not reached within --max-draws {args.max_draws}")
        return EXIT_CHECK_FAILED
    return EXIT_OK
