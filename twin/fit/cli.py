"""``twin fit``: calibrate part failure distributions from field data.

The lead's main CLI calls :func:`add_parser` on its subparsers and dispatches to
:func:`run`; :class:`~twin.errors.InputError` raised here becomes exit code 2.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from twin import atomic
from twin.errors import EXIT_OK, InputError


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register the ``fit`` subcommand on an argparse subparsers object."""
    p = subparsers.add_parser(
        "fit",
        help="fit part failure distributions (exponential/Weibull/lognormal) to field lifetimes",
        description=(
            "Maximum-likelihood fit of exponential, Weibull and lognormal lifetime distributions per part "
            "type, with right censoring and 95 % confidence intervals; model chosen by AIC. Writes fit.yaml "
            "(scenario fragment), fit.md and figures to --out, and optionally a new scenario file (--into) "
            "that extends --base."
        ),
    )
    p.add_argument("csv", help="field data CSV (see --format)")
    p.add_argument("--format", dest="format", choices=("lifetimes", "events"), default="lifetimes",
                   help="lifetimes: part,component_id,start_h,end_h,failed[,category]; "
                        "events: part,component_id,time_h,event (install|fail|replace). Default: lifetimes")
    p.add_argument("--parts", metavar="PART,...",
                   help="comma-separated part types to fit; any other part type in the CSV is an error")
    p.add_argument("--out", metavar="DIR", help="report folder (default: results/fit/<csv stem>)")
    p.add_argument("--into", metavar="PATH", help="write a NEW scenario file extending --base with the fitted parts")
    p.add_argument("--base", metavar="PATH", help="base scenario that the --into file extends")
    p.add_argument("--observation-end-h", dest="observation_end_h", type=float, metavar="HOURS",
                   help="(events format) censor open lives at this time instead of the log's last event")
    p.set_defaults(func=run)
    return p


def _check_destinations(args: argparse.Namespace) -> None:
    into, base = getattr(args, "into", None), getattr(args, "base", None)
    if into is None and base is not None:
        raise InputError("--base", "", "only used with --into PATH")
    if into is None:
        return
    if base is None:
        raise InputError("--into", "", "needs --base PATH (the scenario the new file extends)")
    if Path(into).exists():
        raise InputError(into, "", "already exists; twin fit refuses to overwrite a scenario, choose a new name")
    if not Path(base).is_file():
        raise InputError("--base", "", f"{base}: scenario file not found")
    if Path(into).resolve() == Path(base).resolve():
        raise InputError("--into", "", "must differ from --base")


def run(args: argparse.Namespace) -> int:
    """Run ``twin fit``; returns an exit code. Bad input raises :class:`InputError`."""
    # imported here, not at the top: the fits need scipy.stats, which building the parser of every
    # twin command should not import
    from twin.fit.api import fit_lifetimes, read_lives
    from twin.fit.data import parse_parts
    from twin.fit.report import scenario_text, text_table, write_report

    csv_path = str(args.csv)
    fmt_name = getattr(args, "format", None) or "lifetimes"
    parts = parse_parts(getattr(args, "parts", None))
    obs_end = getattr(args, "observation_end_h", None)
    if obs_end is not None:
        if fmt_name != "events":
            raise InputError("--observation-end-h", "", "only applies to --format events")
        if not (math.isfinite(obs_end) and obs_end >= 0):
            raise InputError("--observation-end-h", "", f"{obs_end!r} must be a finite number of hours >= 0")
    _check_destinations(args)
    out_dir = Path(args.out) if getattr(args, "out", None) else Path("results") / "fit" / Path(csv_path).stem
    if out_dir.exists() and not out_dir.is_dir():
        raise InputError("--out", "", f"{out_dir} exists and is not a folder")

    lives = read_lives(csv_path, fmt_name, parts=parts, observation_end_h=obs_end)
    try:
        fits, skipped = fit_lifetimes(lives, parts=parts)
    except FloatingPointError as exc:  # every model of a part failed numerically (fit_part)
        raise InputError(csv_path, "", f"{exc}: the lifetimes span too many orders of magnitude to fit; check "
                                       "their unit (hours)") from None
    for note in skipped:
        print(f"twin fit: warning: {note}", file=sys.stderr)
    if not fits:
        raise InputError(csv_path, "failed", "no part type has any failure; nothing to fit")

    written = write_report(fits, out_dir, source=csv_path, fmt_name=fmt_name)
    if getattr(args, "into", None):
        from twin.scenario.loader import merged_document

        base_cluster = merged_document(args.base).get("cluster")
        racked = list((base_cluster.get("rack_parts") or {}) if isinstance(base_cluster, dict) else {})
        text = scenario_text(fits, args.base, args.into, source=csv_path, rack_parts=racked)
        if not atomic.atomic_write_text_new(args.into, text):
            raise InputError(args.into, "", "already exists; twin fit refuses to overwrite a scenario")
        written["scenario"] = Path(args.into)

    sys.stdout.write(text_table(fits))
    for pf in fits:
        for note in pf.warnings:
            print(f"twin fit: warning: {note}", file=sys.stderr)
    print(f"report: {written['fit.md']}")
    print(f"scenario fragment: {written['fit.yaml']}")
    if "scenario" in written:
        print(f"scenario: {written['scenario']}")
    return EXIT_OK
