"""``twin calibrate LOGS... --base SCENARIO --out DIR``: read the logs, fit, write a scenario that
extends the base with every fitted value and a report whose posterior-predictive check runs it over the
logged period. Exit 0 when every row of the check is consistent, 1 when one is not (the files are
written either way), 2 for bad input (a malformed line: the file, the line and the field; nothing is
written)."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from twin.errors import EXIT_CHECK_FAILED, EXIT_OK, InputError

FORMATS = ("sacct", "kernel", "tickets", "nvidia-smi", "dcgm-json", "dcgm-text", "inlet")
TELEMETRY = ("nvidia-smi", "dcgm-json", "dcgm-text")


def _positive(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (v > 0 and math.isfinite(v)):
        raise argparse.ArgumentTypeError(f"{text} must be a positive, finite number")
    return v


def _share(text: str) -> float:
    v = _positive(text)
    if v >= 1:
        raise argparse.ArgumentTypeError(f"{text} must be between 0 and 1")
    return v


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:  # type: ignore[type-arg]
    """Register ``calibrate`` on the ``twin`` subparsers."""
    p = subparsers.add_parser(
        "calibrate", help="a scenario of your cluster from its logs (sacct, kernel-log XIDs, repair tickets, "
                          "GPU telemetry)",
        description="Read Slurm accounting (sacct --parsable2), NVIDIA XID kernel-log lines (syslog, journald, "
                    "dmesg -T) and repair tickets (CSV); fit part lifetimes (censored), node frailty with lemon "
                    "nodes (Benjamini-Hochberg), job interruptions per 1,000 node-days and repair times, each with "
                    "its interval; from GPU telemetry (nvidia-smi CSV, DCGM through Prometheus, node inlet CSV) "
                    "the GPUs' thermal resistance, its spread and the thermal throttle rate; write DIR/calibrated.yaml (extends --base with every fitted value, each "
                    "commented with its source, sample size and interval) and DIR/report.md, whose "
                    "posterior-predictive check simulates the calibrated scenario over the logged period. "
                    "Exit 1 when a row of the check is inconsistent.")
    p.add_argument("logs", nargs="+", metavar="LOG",
                   help="log files, format sniffed from the first line (a JobID|... header: sacct; an nvidia-smi "
                        "--query-gpu CSV: nvidia-smi; JSON: dcgm-json; DCGM_FI_ metrics: dcgm-text; a node,time,inlet_c "
                        "header: inlet; another CSV header: tickets; else kernel log) or given as FORMAT:PATH with "
                        "FORMAT one of " + ", ".join(FORMATS) + "; .gz files are read as they are")
    p.add_argument("--base", required=True, metavar="SCENARIO", help="the scenario the calibrated one extends")
    p.add_argument("--out", required=True, metavar="DIR",
                   help="folder for calibrated.yaml, report.md and trace.csv (the logged jobs as a twin trace)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out folder")
    p.add_argument("--tz", default="UTC", metavar="ZONE",
                   help="time zone of time stamps without an offset (sacct, syslog, dmesg -T, tickets): an IANA "
                        "name such as Europe/Berlin (default UTC)")
    p.add_argument("--year", type=int, metavar="YYYY", help="year of the first line of syslog-format kernel logs "
                   "(their lines carry none; a later line in an earlier month is the next year)")
    p.add_argument("--nodes", metavar="HOSTLIST", help="the inventory, e.g. 'gpu[001-128]' (default: every host "
                   "a log names; a node that never appears would be missed)")
    p.add_argument("--start", metavar="TIME", help="start of the observation, ISO 8601 (default: the first time "
                   "stamp of any log)")
    p.add_argument("--end", metavar="TIME", help="end of the observation, ISO 8601 (default: the last time stamp)")
    p.add_argument("--xid-table", dest="xid_table", metavar="YAML",
                   help="XID mapping overrides: {XID: {part: NAME or null, category: failure|remediation|reset|"
                        "warning|contained|application, meaning: TEXT}}")
    p.add_argument("--storm-window-s", dest="storm_window_s", type=_positive, default=300.0, metavar="S",
                   help="the same XID on the same GPU within S seconds of its previous line is one event "
                        "(default 300)")
    p.add_argument("--match-window-s", dest="match_window_s", type=_positive, default=900.0, metavar="S",
                   help="a NODE_FAIL takes the cause of a part failure on its nodes within S seconds of its end "
                        "(default 900)")
    p.add_argument("--ticket-column", dest="ticket_columns", action="append", default=[], metavar="KEY=NAME",
                   help="the tickets' column for KEY (node, start, end, cause, part, work_start); default: the "
                        "key itself")
    p.add_argument("--reps", type=int, default=20, metavar="R",
                   help="replications of the check (default 20; 0: no check)")
    p.add_argument("--check", choices=("calibrated", "base", "both"), default="calibrated",
                   help="which scenario the check runs: the calibrated one (default), the base or both")
    p.add_argument("--level", type=_share, default=0.95, help="level of the fits' intervals (default 0.95)")
    p.add_argument("--alpha", type=_share, default=0.05,
                   help="the check's joint error rate: Bonferroni intervals at 1 - alpha/rows (default 0.05)")
    p.add_argument("--fdr", type=_share, default=0.05, help="false-discovery rate of the lemon nodes (default 0.05)")
    p.set_defaults(func=run)
    return p  # type: ignore[no-any-return]


def _split(arg: str) -> tuple[str | None, str]:
    head, sep, rest = arg.partition(":")
    if sep and head in FORMATS:
        return head, rest
    return None, arg


def run(args: argparse.Namespace) -> int:
    """Run ``twin calibrate``; returns the exit code. Writes ``calibrated.yaml``, ``report.md`` and,
    with accounting, ``trace.csv`` (the logged jobs in the twin's trace format)."""
    import hostlist
    import pandas as pd

    from twin import atomic
    from twin.calibrate.common import parse_iso, sniff, zone
    from twin.calibrate.gather import calibrate
    from twin.calibrate.sacct import read_sacct
    from twin.calibrate.tickets import parse_columns, read_tickets
    from twin.calibrate.xid import load_table, read_xids
    from twin.scenario.loader import load_scenario

    tz = zone(args.tz)
    if args.reps < 0:
        raise InputError("--reps", str(args.reps), "must be >= 0")
    out = Path(args.out)
    if out.exists() and not args.overwrite:
        raise InputError("--out", str(out), "exists; give --overwrite to replace it, or a new folder")
    if out.exists() and not out.is_dir():
        raise InputError("--out", str(out), "is not a folder")
    base = load_scenario(args.base, []).scenario
    if base.cluster.pools:
        raise InputError(str(args.base), "cluster.pools",
                         f"node pools ({', '.join(p.name for p in base.cluster.pools)}) are not calibrated: the "
                         "logs do not say which host is of which pool's type, and the fits go to cluster.node; "
                         "allowed: a base with one node type (calibrate each type's hosts with --nodes against a "
                         "base of that type, then copy the fits into the pool)")
    columns = parse_columns(args.ticket_columns)
    times = {}
    for opt in ("start", "end"):
        text = getattr(args, opt)
        if text is not None:
            try:
                times[opt] = parse_iso(text, tz)
            except ValueError:
                raise InputError(f"--{opt}", text, "is not an ISO 8601 time (YYYY-MM-DDThh:mm:ss)") from None
    nodes = None
    if args.nodes:
        try:
            nodes = hostlist.expand_hostlist(args.nodes)
        except hostlist.BadHostlist as exc:
            raise InputError("--nodes", args.nodes, f"is not a node list such as gpu[001-128] ({exc})") from None
    by_format: dict[str, list[str]] = {f: [] for f in FORMATS}
    for arg in args.logs:
        fmt, path = _split(arg)
        by_format[fmt or sniff(path)].append(path)
    telemetry = None
    if any(by_format[f] for f in TELEMETRY):
        from twin.calibrate.telemetry import Telemetry, read_exposition, read_inlet, read_nvidia_smi, \
            read_prometheus_json

        telemetry = Telemetry(read_inlet(by_format["inlet"], tz))
        for path in by_format["nvidia-smi"]:
            read_nvidia_smi(path, tz, telemetry)
        for path in by_format["dcgm-json"]:
            read_prometheus_json(path, telemetry)
        for path in by_format["dcgm-text"]:
            read_exposition(path, tz, telemetry)
        if not telemetry.gpus:
            raise InputError("telemetry", "", "no GPU sample in " + ", ".join(
                p for f in TELEMETRY for p in by_format[f]))
    elif by_format["inlet"]:
        raise InputError(by_format["inlet"][0], "", "an inlet series needs GPU telemetry (nvidia-smi or DCGM) too")
    table = load_table(args.xid_table) if by_format["kernel"] or args.xid_table else None
    sacct = [read_sacct(p, tz) for p in by_format["sacct"]]
    xid = read_xids(list(by_format["kernel"]), tz, args.year, table, args.storm_window_s) if by_format["kernel"] \
        else None
    tickets = [read_tickets(p, tz, columns) for p in by_format["tickets"]]
    cal = calibrate(base, sacct, xid, table, tickets, nodes, times.get("start"), times.get("end"),
                    args.match_window_s, args.level, args.fdr,
                    None if telemetry is None else (telemetry.first_s, telemetry.last_s, telemetry.hosts))
    if telemetry is not None:
        from twin.calibrate.thermal_fit import fit_thermal, target

        cal.thermal = fit_thermal(telemetry, args.level, slots=int(base.cluster.node.gpus))
        cal.thermal_target = target(base)
        cal.telemetry = telemetry
        cal.notes += cal.thermal.notes

    from twin.calibrate.check import run_check
    from twin.calibrate.report import markdown
    from twin.calibrate.scenario_out import scenario_yaml

    from twin.scenario.loader import allowed_paths

    failed = False
    with allowed_paths([Path(args.base).absolute().parent]), \
            atomic.atomic_folder(out.absolute(), overwrite=args.overwrite) as tmp:
        scen = tmp / "calibrated.yaml"
        scen.write_text(scenario_yaml(cal, base.name, set(base.cluster.node.parts), args.base, out / "calibrated.yaml"),
                        encoding="utf-8")
        load_scenario(str(scen), [])  # the file must load: a failure here is a bug (exit 3)
        checks = []
        if args.reps > 0:
            which = {"calibrated": [("calibrated", str(scen))], "base": [("base", args.base)],
                     "both": [("base", args.base), ("calibrated", str(scen))]}[args.check]
            for label, path in which:
                print(f"check: simulating the {label} scenario over {cal.days:.1f} days, {args.reps} replications",
                      file=sys.stderr)
                res = run_check(path, cal, args.reps, args.alpha)
                res.scenario = str(out / "calibrated.yaml") if label == "calibrated" else args.base
                checks.append((f"Check: the {label} scenario against the logs", res))
                if label == args.check or (args.check == "both" and label == "calibrated"):
                    failed = failed or bool(res.inconsistent)
        (tmp / "report.md").write_text(markdown(cal, str(out / "calibrated.yaml"), checks), encoding="utf-8")
        if sacct:
            from twin.calibrate.sacct import job_trace

            trace = job_trace(pd.concat([s.attempts for s in sacct], ignore_index=True), cal.t0_s, cal.t1_s,
                              int(base.cluster.node.gpus))
            (tmp / "trace.csv").write_text(trace.to_csv(index=False), encoding="utf-8")
    for p, r in sorted(cal.parts.items()):
        if r.fit is not None:
            m = r.fit.chosen
            print(f"{p}: {r.failures} failures in {r.units} units, {m.dist} "
                  + " ".join(f"{k}={v:.4g}" for k, v in m.params.items()))
    if cal.frailty is not None:
        f = cal.frailty
        print(f"frailty variance {f.variance:.3g} [{f.ci[0]:.3g}, {f.ci[1]:.3g}], lemon nodes: {len(f.lemons)}")
    if cal.thermal is not None:
        th = cal.thermal
        print(f"GPU thermal resistance: median {th.r_median_c_per_w:.4g} °C/W [{th.r_median_ci[0]:.4g}, "
              f"{th.r_median_ci[1]:.4g}], r_sigma {th.r_sigma:.3g} [{th.r_sigma_ci[0]:.3g}, {th.r_sigma_ci[1]:.3g}] "
              f"from {len(th.gpus)} GPUs; outliers: {len(th.outliers)}; thermal clock events "
              + ("not reported" if math.isnan(th.throttle_share) else f"{100 * th.throttle_share:.3g} % of GPU-time"))
    if cal.jobs is not None:
        j = cal.jobs.interruptions
        print(f"job interruptions: {1000 * j.value:.3g} per 1,000 node-days ({j.count} NODE_FAIL)")
    for title, res in checks:
        print(f"{title}: {len(res.rows) - len(res.inconsistent)} of {len(res.rows)} rows consistent"
              + ("" if not res.inconsistent else " (inconsistent: " + "; ".join(r.name for r in res.inconsistent)
                 + ")"))
    print(f"scenario: {out / 'calibrated.yaml'}")
    print(f"report: {out / 'report.md'}")
    if sacct:
        print(f"job trace: {out / 'trace.csv'} (workload.trace of the logged jobs)")
    return EXIT_CHECK_FAILED if failed else EXIT_OK
