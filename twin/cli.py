"""The ``twin`` command. Exit codes: 0 ok, 1 a check failed, 2 bad input or the environment (a full
disk, a permission, no Dask worker: :mod:`twin.errors`), 3 internal error (traceback saved under
``<--results>/logs``), 130 interrupted."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Callable, Sequence

from twin.errors import EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_INTERRUPTED, InputError, environment_problem
from twin.limits import int_at_least


class _ArgParser(argparse.ArgumentParser):
    """argparse that raises InputError (exit 2, one line) instead of printing usage and exiting."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise InputError("twin", self.prog.replace("twin ", "") if self.prog != "twin" else "arguments", message)


from twin.console import echo as _echo  # noqa: E402


nonneg_int = int_at_least(0)
"""argparse type: an integer ≥ 0."""


def positive_seconds(text: str) -> float:
    """argparse type: a finite number of seconds > 0."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (v > 0 and v != float("inf")):
        raise argparse.ArgumentTypeError(f"{text} must be a positive, finite number of seconds")
    return v


def _add_worker_wait_args(sub: argparse._SubParsersAction) -> None:
    """Every command that takes ``--dask`` also takes how long to wait for a Dask worker."""
    for p in dict.fromkeys(sub.choices.values()):
        if any(a.dest == "dask" for a in p._actions):
            p.add_argument("--worker-wait-s", dest="worker_wait_s", type=positive_seconds, default=60.0, metavar="S",
                           help="with --dask: stop (exit 2) when the scheduler has had no worker for S seconds, at "
                                "the start or after the last one left (default 60)")
            p.add_argument("--wait-for-workers", dest="wait_for_workers", action="store_true",
                           help="with --dask: wait for workers however long it takes, instead")


def check_results_root(root: str) -> None:
    """Refuse a ``--results`` folder that is a file or cannot be written or created, leaving nothing
    behind (a run that then refuses its scenario, or a dry run, writes nothing): a missing folder is
    probed by creating and removing its first missing component."""
    if not root.strip():
        raise InputError("--results", repr(root), "an empty folder name: give a folder (--results . for the current "
                                                  "one)")
    from twin.experiment.store import check_utf8

    check_utf8("--results", root)
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
    from twin.console import note
    from twin.experiment.store import folder_lock, run_folder

    sc = loaded.scenario
    folder = run_folder(Path(args.results), sc.name, loaded.hash, sc.seed, args.label, args.replication)
    with folder_lock(folder, note):  # an identical run started meanwhile waits, then finds the results up to date
        return run_command(loaded, Path(args.results), args.label, args.overwrite, args.replication, show, _echo,
                           lifetimes=args.lifetimes)


def step_lines(sc: Any) -> list[str]:
    """'step: JOB ...' for each job with a parallel layout: its step time at full health, by
    component, and what limits it (twin/physics/parallel.py)."""
    from twin.physics.jobrate import parallel_breakdown

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


def cmd_explain(args: argparse.Namespace) -> int:
    """``twin explain METRIC``: what a metric means (the catalogue, twin/report/metric_entries.py) and how it is
    computed (twin/report/explain.py)."""
    from twin.report import metrics as catalogue
    from twin.report.explain import METRICS, explain_lines, nearest

    if args.list or args.metric is None:
        if args.metric is None and not args.list:
            raise InputError("twin explain", "METRIC", "give a metric name (e.g. goodput), or --list for all of them")
        width = max(len(d.name) for d in METRICS)
        for d in METRICS:
            entry = catalogue.find(d.name)
            _echo(f"{d.name:<{width}}  {entry.meaning if entry is not None else d.computed}")
        return 0
    try:
        lines = explain_lines(args.metric)
    except KeyError:
        near = nearest(args.metric)
        hint = f"did you mean {', '.join(near)}?" if near else "no metric is near it"
        raise InputError("twin explain", args.metric, f"unknown metric; {hint} (twin explain --list shows every "
                                                       "metric)") from None
    for line in lines:
        _echo(line)
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    from twin.scenario.schema import scenario_json_schema

    print(json.dumps(scenario_json_schema(), indent=2))
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {}

EPILOG = """\
examples:
  twin run scenarios/baseline.yaml                    one replication: summary table and results/baseline/...
  twin run scenarios/air.yaml --set horizon_days=30 --dry-run
                                                      check a scenario, its files and limits; simulate nothing
  twin montecarlo scenarios/baseline.yaml --reps 200 --workers 2
  twin compare scenarios/air.yaml scenarios/liquid.yaml --reps 100 --workers 2
  twin sweep scenarios/baseline.yaml --param maintenance.crews.technicians.count=1,2,4 --reps 20
  twin forecast scenarios/forecast-405b.yaml --reps 50 --workers 2
  twin export results/compare/cmp-<hash>-s<seed>      the result tables as CSV files (for spreadsheets)
  twin explain goodput                                what a metric means and how it is computed
  twin COMMAND --help                                 the options of one command

exit codes (every command):
  0    ok
  1    a check failed (twin validate; a --target-ci not reached; no sweep point meets the constraints)
  2    bad input or environment: one line per problem naming the file, the field and what is allowed
       (also a full disk, a permission, no Dask worker)
  3    internal error (a bug): one line and the path of the saved traceback
  130  interrupted (Ctrl-C or SIGTERM); completed replications stay stored

-v/--verbose (any command, before or after it): the resolved scenario (path, extends chain, --set,
hash, data files, load time), the wall and CPU time, peak memory and exit code at the end, and the
traceback of an internal error on stderr as well as in its file.
"""


def _add_verbose(p: argparse.ArgumentParser, top: bool) -> None:
    """``-v``/``--verbose`` on the top parser and every command (a command's own does not reset the
    top one's count: its default is suppressed)."""
    p.add_argument("-v", "--verbose", action="count", default=0 if top else argparse.SUPPRESS,
                   help="say more about the command's workings on stderr: the resolved scenario and its hash, "
                        "timings, peak memory, an internal error's traceback")


def build_parser() -> argparse.ArgumentParser:
    parser = _ArgParser(prog="twin", description="Discrete-event digital twin of AI-training datacenters.",
                        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    from twin import __version__

    parser.add_argument("--version", action="version", version=f"twin {__version__}")
    _add_verbose(parser, top=True)
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

    p = sub.add_parser("explain", help="what a metric means and how it is computed (twin explain goodput)",
                       description="What a metric of summary.json (and of an experiment's summaries.parquet) "
                                   "means, its unit and how it is computed. A family of metrics with a suffix "
                                   "(failures.<part>, power.down_node_hours.<cause>) is explained for any member.")
    p.add_argument("metric", nargs="?", help="a metric name, e.g. goodput, failures.gpu, thermal.gpu_temp_p95_c")
    p.add_argument("--list", action="store_true", help="list every metric (and family) with what it means")
    p.set_defaults(func=cmd_explain)

    for mod in ("twin.fit.cli", "twin.calibrate.cli", "twin.experiment.cli", "twin.experiment.export",
                "twin.experiment.decide_cli", "twin.validation.cli", "twin.forecast.cli", "twin.experiment.rare_cli",
                "twin.warm_cache"):
        try:
            m = __import__(mod, fromlist=["add_parser"])
        except ModuleNotFoundError as exc:
            if exc.name != mod:
                raise
            continue
        m.add_parser(sub)
    _add_worker_wait_args(sub)
    for command in dict.fromkeys(sub.choices.values()):
        _add_verbose(command, top=False)
    return parser


def log_dir(results_root: str | None) -> Path:
    """Where an internal error's traceback goes: ``$TWIN_LOG_DIR``, else ``logs`` under the
    results folder of the command (``--results``), else ``results/logs``."""
    env = os.environ.get("TWIN_LOG_DIR")
    if env:
        return Path(env)
    return Path(results_root or "results") / "logs"


def _save_traceback(results_root: str | None) -> Path:
    text = traceback.format_exc()
    name = f"twin-error-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}.log"
    try:
        base = log_dir(results_root)
        base.mkdir(parents=True, exist_ok=True)
        (base / name).write_text(text)
        return base / name
    except OSError:  # the results folder cannot take it (full, read-only): the system's temporary folder
        import tempfile

        path = Path(tempfile.gettempdir()) / name
        path.write_text(text)
        return path


def _run(args: argparse.Namespace) -> int:
    """The command, inside the scopes its options set (allowed paths, the Dask worker wait)."""
    from contextlib import ExitStack

    with ExitStack() as scopes:
        if getattr(args, "allow_paths", None):
            from twin.scenario.loader import allowed_paths

            scopes.enter_context(allowed_paths(args.allow_paths))
        if getattr(args, "max_events", None) is not None:
            from twin.limits import max_events_scope

            scopes.enter_context(max_events_scope(args.max_events))
        if getattr(args, "dask", None):
            from twin.experiment.runner import worker_wait

            scopes.enter_context(worker_wait(args.worker_wait_s, args.wait_for_workers))
        return int(args.func(args))


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code (the console script passes it to ``sys.exit``)."""
    args_list = list(argv) if argv is not None else sys.argv[1:]
    if args_list == ["--version"]:  # answer without importing the subcommands' dependencies
        from twin import __version__

        print(f"twin {__version__}")
        return 0
    # the command line draws files only (notebooks keep their inline backend): Agg, chosen through
    # MPLBACKEND when matplotlib is not imported yet, so that commands that draw nothing never import it
    # (only for this command: a caller's later child processes, such as a notebook kernel started by the
    # same process, keep the backend they would have had)
    before = os.environ.get("MPLBACKEND")
    if "matplotlib" in sys.modules:
        sys.modules["matplotlib"].use("Agg")
    else:
        os.environ["MPLBACKEND"] = "Agg"
    from twin.console import reset_verbosity

    started, cpu_started = time.perf_counter(), time.process_time()
    state: dict[str, Any] = {}
    try:
        code = _main(args_list, state)
    finally:
        if before is None:
            os.environ.pop("MPLBACKEND", None)
        else:
            os.environ["MPLBACKEND"] = before
    if "verbosity" in state:
        from twin.console import detail

        detail(f"exit {code} after {time.perf_counter() - started:.2f} s wall, "
               f"{time.process_time() - cpu_started:.2f} s CPU in this process{_peak_memory()}")
        reset_verbosity(state["verbosity"])
    return code


def _peak_memory() -> str:
    """', peak memory N MB' of this process and its finished children (Unix), else ''."""
    try:
        import resource
    except ImportError:  # Windows
        return ""
    scale = 1 if sys.platform == "darwin" else 1024  # ru_maxrss: bytes on macOS, kilobytes on Linux
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * scale
    text = f", peak memory {own / 1e6:,.0f} MB"
    return text + (f" (largest worker {kids / 1e6:,.0f} MB)" if kids else "")


def _main(args_list: list[str], state: dict[str, Any]) -> int:
    """Parse and run; ``state`` receives the verbosity token once ``-v`` is known."""
    from twin.console import set_verbosity

    results_root: str | None = None
    verbose = 0
    try:
        parser = build_parser()
        args = parser.parse_args(args_list)
        verbose = int(getattr(args, "verbose", 0))
        if verbose:
            from twin import __version__
            from twin.console import detail

            state["verbosity"] = set_verbosity(verbose)
            detail(f"twin {__version__}, python {sys.version.split()[0]}, in {Path.cwd()}: twin {' '.join(args_list)}")
        results_root = getattr(args, "results", None)
        if results_root is not None:
            check_results_root(results_root)
        return _run(args)
    except InputError as exc:  # every problem found, one line each, then what may explain them
        for line in exc.lines():
            print(f"error: {line}", file=sys.stderr)
        for line in exc.hints():
            print(f"hint: {line}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        from twin import interrupt

        interrupt.clear()  # reported: nothing stale for a later command in the same process
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
    except OSError as exc:  # the environment (full disk, permissions: ENVIRONMENT_ERRNOS) or a bug
        if exc.filename is None and results_root is not None:  # a write deep in a library named no file
            exc.filename = f"a file under --results {results_root}"
        env = environment_problem(exc)
        if env is None:
            return _internal_error(exc, results_root, verbose)
        print(f"error: {env.one_line()}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception as exc:  # a bug: keep it distinct from bad input, with its traceback saved
        return _internal_error(exc, results_root, verbose)


def _internal_error(exc: BaseException, results_root: str | None, verbose: int = 0) -> int:
    log = _save_traceback(results_root)
    if verbose:  # the traceback on stderr too, before the one line that ends the output
        print(traceback.format_exc().rstrip(), file=sys.stderr)
    print(f"internal error: {type(exc).__name__}: {exc} (traceback saved to {log})", file=sys.stderr)
    return EXIT_INTERNAL


def entry() -> None:
    """Console-script entry. Ctrl-C must always stop a run cleanly (exit 130), even when the shell
    that started us ignores SIGINT (a background job of a non-interactive shell inherits SIG_IGN,
    and Python then never installs its KeyboardInterrupt handler). SIGTERM (``kill``, a batch
    scheduler's time limit) stops it the same way: completed replications stay stored, exit 130."""
    import signal

    from twin import interrupt

    # the handler records the interrupt for the event loop and the drivers to raise between events
    # (twin.interrupt: a raise inside a finalizer or a weakref callback would be lost) and raises at
    # once outside them
    interrupt.install((signal.SIGINT,))
    main_pid = os.getpid()

    def on_term(signum: int, frame: Any) -> None:
        if os.getpid() != main_pid:  # a forked worker inherited this handler: end as SIGTERM would
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
            return
        interrupt.handler(signum, frame)

    signal.signal(signal.SIGTERM, on_term)
    sys.exit(main())


if __name__ == "__main__":
    entry()
