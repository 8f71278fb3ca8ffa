"""``twin validate``: the simulator against closed forms and published field data.

Registered by :func:`twin.cli.build_parser` through :func:`add_parser`. Exit codes: 0 every checked
quantity passed, 1 a case failed, 2 bad input (unknown case, bad option).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Callable, Sequence

from twin.errors import EXIT_CHECK_FAILED, EXIT_OK, InputError
from twin.limits import FORCE_HINT, MAX_REPLICATIONS

DEFAULT_OUT = "results/validation"


from twin.console import echo as _echo, note as _note  # noqa: E402


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "validate", help="run the validation suite: closed forms and published field data",
        description="Runs every validation case (or those named with --case), prints one row per checked "
                    "quantity (reference, simulated mean, 95 % interval, verdict) and writes report.md, "
                    "report.html and results.json into OUT/<quick|full>/. Verdicts use Bonferroni-corrected "
                    "intervals over all checked quantities, so a correct model passes the whole suite at "
                    "least 99 % of the time. Exit code 1 if any case fails.")
    p.add_argument("--quick", action="store_true", help="CI-sized settings (fewer replications, shorter runs)")
    p.add_argument("--case", dest="cases", nargs="+", action="extend", default=[], metavar="NAME",
                   help="run only these cases (repeatable); see the list in `twin validate --list`")
    p.add_argument("--list", action="store_true", help="list the cases and exit")
    p.add_argument("--sweep", action="store_true",
                   help="with one --case: show the interval shrinking around the reference as replications grow")
    p.add_argument("--out", default=DEFAULT_OUT, metavar="DIR",
                   help=f"reports go to DIR/<quick|full>/ (default {DEFAULT_OUT})")
    p.add_argument("--reps", type=int, default=None, metavar="N",
                   help="replications per statistical quantity (default: each case's quick or full count)")
    p.add_argument("--seed", type=int, default=12345, help="root seed (default 12345)")
    p.add_argument("--workers", type=int, default=None, metavar="K",
                   help="worker processes for cases (default: min(2, CPUs))")
    p.add_argument("--force", action="store_true",
                   help=f"run even with --reps beyond the limit of {MAX_REPLICATIONS:,} (twin.limits)")
    p.set_defaults(func=cmd_validate)


def cmd_validate(args: argparse.Namespace) -> int:
    from twin.validation.cases import CASES

    if args.list:
        for name, fn in CASES.items():
            text = " ".join((fn.__doc__ or "").split())
            first = text.split(". ")[0].rstrip(".")
            _echo(f"{name:22s} {first[:110] + ('…' if len(first) > 110 else '')}")
        return EXIT_OK
    if args.reps is not None and args.reps < 3:
        raise InputError("twin validate", "--reps", f"must be >= 3 (a t interval needs replications), got {args.reps}")
    if args.reps is not None and args.reps > MAX_REPLICATIONS and not args.force:
        raise InputError("twin validate", "--reps", f"{args.reps:,} replications per quantity exceed the limit of "
                                                    f"{MAX_REPLICATIONS:,}; {FORCE_HINT}")
    if args.workers is not None:
        from twin.limits import check_workers

        check_workers(args.workers, force=args.force, source="twin validate: --workers")
    if args.sweep and len(args.cases) != 1:
        raise InputError("twin validate", "--sweep", "needs exactly one --case NAME")
    return validate(args.cases, quick=args.quick, out=Path(args.out), reps=args.reps, seed=args.seed,
                    sweep=args.sweep, workers=args.workers)


def validate(cases: Sequence[str] = (), quick: bool = False, out: Path | str = DEFAULT_OUT, reps: int | None = None,
             seed: int = 12345, sweep: bool = False, workers: int | None = None,
             mutate: Callable[[dict], dict] | None = None, echo: Callable[[str], None] = _echo) -> int:
    """What ``twin validate`` does, as a function (``mutate`` lets tests break the model on purpose);
    returns the exit code."""
    from twin.validation.framework import Settings
    from twin.validation.report import summary_line, sweep_table, text_table, write_report, write_sweep
    from twin.validation.suite import check_names, run_suite
    from twin.validation.suite import sweep as sweep_rows

    names = check_names(cases)
    mode = "quick" if quick else "full"
    settings = Settings(quick=quick, seed=seed, replications=reps, mutate=mutate)
    out = Path(out)
    folder = out / mode if not cases else out / f"{mode}-{'+'.join(names)}"[:120]
    _note(f"twin validate ({mode}): {len(names)} case(s)")
    suite = run_suite(names, settings, workers, echo=_note)
    if sweep:
        rows_ = sweep_rows(suite.results)
        if not rows_:
            echo(f"{names[0]} is deterministic: its answer does not depend on replications")
        else:
            echo(sweep_table(rows_).to_string(index=False))
            path = write_sweep(names[0], rows_, out / mode / f"sweep-{names[0]}")
            echo(f"sweep report: {path / 'report.html'}")
    echo(text_table(suite))
    echo(summary_line(suite))
    path = write_report(suite, folder, f"twin validate ({mode})")
    echo(f"report: {path / 'report.html'}  (Markdown: {path / 'report.md'})")
    if suite.failed:
        for r in suite.failed:
            bad = r.failed_invariants()
            why = f"invariant failed: {'; '.join(bad)}" if bad else (
                f"reference {r.reference:.6g} outside [{r.ci_low:.6g}, {r.ci_high:.6g}]")
            _note(f"FAIL {r.case}: {r.quantity}: {why}")
        return EXIT_CHECK_FAILED
    return EXIT_OK
