"""The ``twin`` command. Exit codes: 0 ok, 1 a check failed, 2 bad input, 3 internal error,
130 interrupted."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Callable, Sequence

from twin.errors import EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_INTERRUPTED, InputError


class _ArgParser(argparse.ArgumentParser):
    """argparse that raises InputError (exit 2, one line) instead of printing usage and exiting."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise InputError("twin", self.prog.replace("twin ", "") if self.prog != "twin" else "arguments", message)


from twin.console import echo as _echo  # noqa: E402


def nonneg_int(text: str) -> int:
    """argparse type: an integer ≥ 0."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"{v} must be >= 0")
    return v


def check_results_root(root: str) -> None:
    """Refuse a ``--results`` folder that is a file or cannot be written or created, leaving nothing
    behind (a run that then refuses its scenario, or a dry run, writes nothing): a missing folder is
    probed by creating and removing its first missing component."""
    p = Path(root).absolute()
    if p.exists():
        if not p.is_dir():
            raise InputError("--results", root, "is not a folder")
        if not os.access(p, os.W_OK | os.X_OK):
            raise InputError("--results", root, "the folder is not writable")
        return
    first = p
    while not first.parent.exists():
        first = first.parent
    if not first.parent.is_dir():
        raise InputError("--results", root, f"cannot be created: {first.parent} is not a folder")
    try:
        first.mkdir()
        first.rmdir()
    except OSError as exc:
        raise InputError("--results", root, f"cannot be created: {exc.strerror}") from None


def _add_scenario_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("scenario", help="scenario YAML file")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE",
                   help="override a scenario field, e.g. --set maintenance.crews.technicians.count=4")
    from twin.limits import add_guard_args

    add_guard_args(p)


def cmd_run(args: argparse.Namespace) -> int:
    from twin.experiment.single import run_command
    from twin.scenario.loader import load_scenario

    from twin.limits import check_limits, estimate_events

    loaded = load_scenario(args.scenario, args.overrides)
    check_limits(loaded, reps=1, force=args.force)
    if args.dry_run:
        sc = loaded.scenario
        _echo(f"ok: {sc.name} (hash {loaded.hash}, seed {sc.seed}, {sc.horizon_days:g} days, {sc.cluster.n_nodes} "
              f"nodes, about {estimate_events(sc):.3g} events); --dry-run: nothing simulated or written")
        from twin.scenario.advice import advice_lines

        for line in advice_lines(sc):
            _echo(line)
        return 0
    for line in step_lines(loaded.scenario):
        _echo(line)
    show = (not args.quiet) and sys.stderr.isatty()
    return run_command(loaded, Path(args.results), args.label, args.overwrite, args.replication, show, _echo,
                       lifetimes=args.lifetimes)


def step_lines(sc: Any) -> list[str]:
    """'step: JOB ...' for each job with a parallel layout: its step time at full health, by
    component, and what limits it (twin/physics/parallel.py)."""
    from twin.model.workload import parallel_breakdown

    out: list[str] = []
    if sc.workload is None:
        return out
    nic = None
    if sc.network is not None:
        nic = sc.network.rails * sc.network.link_bandwidth_gbps / sc.cluster.node.gpus
    for j in sc.workload.jobs:
        st = j.step
        if st.layout is None:
            continue
        b = parallel_breakdown(st, 1.0, nic if nic is not None else st.layout.nic_gbit_s, 1.0)
        lay = st.layout
        out.append(f"step: {j.name} (tp {lay.tp} × pp {lay.pp} × dp {lay.dp}, v {lay.interleave}): {b.describe()}")
    return out


def cmd_schema(args: argparse.Namespace) -> int:
    from twin.scenario.schema import scenario_json_schema

    print(json.dumps(scenario_json_schema(), indent=2))
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {}


def build_parser() -> argparse.ArgumentParser:
    parser = _ArgParser(prog="twin", description="Discrete-event digital twin of AI-training datacenters.")
    from twin import __version__

    parser.add_argument("--version", action="version", version=f"twin {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_ArgParser)

    p = sub.add_parser("run", help="run one replication of a scenario")
    _add_scenario_args(p)
    p.add_argument("--label", help="results folder name (default: <scenario hash>-s<seed>)")
    p.add_argument("--results", default="results", help="results root folder (default: results)")
    p.add_argument("--overwrite", action="store_true", help="recompute even if up-to-date results exist")
    p.add_argument("--replication", type=nonneg_int, default=0, help="replication index (default 0)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--lifetimes", action="store_true",
                   help="also write lifetimes.csv: every node and rack part's lives in the `twin fit` input format")
    p.add_argument("--dry-run", dest="dry_run", action="store_true",
                   help="check the scenario, its files and the limits, then stop (nothing simulated or written)")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("schema", help="print the scenario JSON Schema")
    p.set_defaults(func=cmd_schema)

    for mod in ("twin.fit.cli", "twin.experiment.cli", "twin.validation.cli", "twin.forecast.cli"):
        try:
            m = __import__(mod, fromlist=["add_parser"])
        except ModuleNotFoundError as exc:
            if exc.name != mod:
                raise
            continue
        m.add_parser(sub)
    return parser


def _save_traceback() -> Path:
    base = Path(os.environ.get("TWIN_LOG_DIR", "results/logs"))
    try:
        base.mkdir(parents=True, exist_ok=True)
    except OSError:
        import tempfile

        base = Path(tempfile.gettempdir())
    path = base / f"twin-error-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}.log"
    path.write_text(traceback.format_exc())
    return path


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code (the console script passes it to ``sys.exit``)."""
    args_list = list(argv) if argv is not None else sys.argv[1:]
    if args_list == ["--version"]:  # answer without importing the subcommands' dependencies
        from twin import __version__

        print(f"twin {__version__}")
        return 0
    import matplotlib

    matplotlib.use("Agg")  # the command line draws files only; notebooks keep their inline backend
    try:
        parser = build_parser()
        args = parser.parse_args(args_list)
        if getattr(args, "results", None) is not None:
            check_results_root(args.results)
        if getattr(args, "allow_paths", None):
            from twin.scenario.loader import allowed_paths

            with allowed_paths(args.allow_paths):
                return int(args.func(args))
        return int(args.func(args))
    except InputError as exc:
        print(f"error: {exc.one_line()}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # the reader of our output went away (`twin schema | head`): stop quietly
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        except (OSError, ValueError):
            pass
        print("interrupted: output closed", file=sys.stderr)
        return EXIT_INTERRUPTED
    except SystemExit as exc:  # --help / --version
        return int(exc.code or 0) if isinstance(exc.code, int) else 0
    except Exception as exc:  # a bug: keep it distinct from bad input, with its traceback saved
        log = _save_traceback()
        print(f"internal error: {type(exc).__name__}: {exc} (traceback saved to {log})", file=sys.stderr)
        return EXIT_INTERNAL


def entry() -> None:
    """Console-script entry. Ctrl-C must always stop a run cleanly (exit 130), even when the shell
    that started us ignores SIGINT (a background job of a non-interactive shell inherits SIG_IGN,
    and Python then never installs its KeyboardInterrupt handler). SIGTERM (``kill``, a batch
    scheduler's time limit) stops it the same way: completed replications stay stored, exit 130."""
    import signal

    signal.signal(signal.SIGINT, signal.default_int_handler)
    main_pid = os.getpid()

    def on_term(signum: int, frame: object) -> None:
        if os.getpid() != main_pid:  # a forked worker inherited this handler: end as SIGTERM would
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
            return
        raise KeyboardInterrupt("SIGTERM")

    signal.signal(signal.SIGTERM, on_term)
    sys.exit(main())


if __name__ == "__main__":
    entry()
