"""``twin warm-cache``: compile the kernels a scenario uses into the JIT cache, ahead of the runs that need them.

The first run of a thermal hall after installing a version of twin compiles its numba kernels (about 19 s of CPU
on a 2-core machine, ``benchmarks/README.md``, issue 41 item 2); every later process loads them from the cache
(:mod:`twin.kernels`). This command pays that once, where it suits the user: in an image's build step, on a
cluster's shared home before a Monte-Carlo or Dask campaign, in a CI job's setup. It runs each scenario for a
short horizon in process, writes no results, and reports how many kernels it compiled into the cache (exit 0). Registered by :func:`twin.cli.build_parser`.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from twin.console import echo as _echo
from twin.errors import EXIT_OK, InputError

DEFAULT_DAYS = 2.0


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "warm-cache", help="compile the kernels scenarios use into the JIT cache (no results written)",
        description="Runs each scenario for a short horizon in process (no results written), so the numba kernels "
                    "it uses are compiled into the JIT cache once per installed version (the cache folder: "
                    "twin/__pycache__ when the package is writable, else ~/.cache/twin/numba-<version>; "
                    "NUMBA_CACHE_DIR wins). Prints the cache folder and how many kernels it compiled.")
    p.add_argument("scenarios", nargs="+", type=Path, metavar="SCENARIO", help="scenario YAML files")
    p.add_argument("--days", type=float, default=DEFAULT_DAYS,
                   help=f"simulated days per scenario (default {DEFAULT_DAYS:g}; more than 0, at most 366)")
    p.set_defaults(func=cmd_warm_cache)


def cached_kernels(folder: str) -> dict[str, int]:
    """The index files of twin's compiled kernels in numba's cache ``folder`` (one per kernel), with their
    modification times, ns."""
    d = Path(folder)
    return {f.name: f.stat().st_mtime_ns for f in d.glob("kernels*.nbi")} if d.is_dir() else {}


def cache_folder() -> str:
    """Where numba writes twin's compiled kernels (as numba read it when first imported)."""
    import twin.kernels  # (sets NUMBA_CACHE_DIR before numba reads it)
    from numba import config

    return str(getattr(config, "CACHE_DIR", "") or Path(twin.kernels.__file__).resolve().parent / "__pycache__")


def cmd_warm_cache(args: argparse.Namespace) -> int:
    from twin.limits import check_limits
    from twin.scenario.loader import load_scenario
    from twin.sim import Model

    if not (args.days > 0 and args.days <= 366):
        raise InputError("twin warm-cache", "--days", f"must be > 0 and <= 366, got {args.days:g}")
    folder = cache_folder()
    loaded = [load_scenario(path, [f"horizon_days={args.days!r}"]) for path in args.scenarios]  # all checked first
    for lo in loaded:
        check_limits(lo, reps=1, force=False)
    before = cached_kernels(folder)
    cpu0 = time.process_time()
    for path, lo in zip(args.scenarios, loaded):
        t0 = time.process_time()
        Model(lo.scenario).run()
        _echo(f"{path}: {args.days:g} days simulated, {time.process_time() - t0:.1f} s of CPU")
    from numba import config

    if getattr(config, "DISABLE_JIT", 0):
        _echo("the JIT is disabled (NUMBA_DISABLE_JIT): no kernel is compiled, nothing cached")
        return EXIT_OK
    after = cached_kernels(folder)
    new = [name for name, mtime in after.items() if before.get(name) != mtime]
    cpu = time.process_time() - cpu0
    if new:
        _echo(f"compiled {len(new)} kernels into {folder} ({cpu:.1f} s of CPU in all); later processes of "
              f"this version load them from there")
    else:
        _echo(f"nothing to compile: every kernel these scenarios use is already in {folder}")
    return EXIT_OK
