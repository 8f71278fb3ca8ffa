"""``report.md`` of ``twin calibrate``: what was read, every fit with its interval, and the
posterior-predictive check of each scenario run."""

from __future__ import annotations

from pathlib import Path

from twin.calibrate.check import CheckResult
from twin.calibrate.common import iso_utc
from twin.calibrate.gather import Calibration
from twin.calibrate.scenario_out import usable
from twin.fit import distributions
from twin.fit.report import fmt, fmt_ci


def _name(p: str) -> str:
    return Path(p).name


def _check_table(res: CheckResult, title: str) -> list[str]:
    bad = len(res.inconsistent)
    out = ["", f"## {title}", "",
           f"`{res.scenario}` simulated over the logged period, {res.reps} replications. Each interval is the "
           f"prediction interval of one new history (mean ± t·s·√(1 + 1/R)) at the Bonferroni level 1 − "
           f"{res.alpha:g}/{len(res.rows)}: all rows hold jointly with probability ≥ {1 - res.alpha:.0%}. "
           f"**{len(res.rows) - bad} of {len(res.rows)} rows consistent.**", "",
           "| quantity | logged | simulated mean | joint interval | |", "|---|---:|---:|---|---|"]
    for r in res.rows:
        out.append(f"| {r.name} | {fmt(r.logged)} | {fmt(r.sim_mean)} | [{fmt(r.lo)}, {fmt(r.hi)}] | "
                   f"{'consistent' if r.consistent else '**inconsistent**'} |")
    return out


def markdown(cal: Calibration, scenario_file: str, checks: list[tuple[str, CheckResult]]) -> str:
    """The report's text."""
    lv = f"{cal.level:.0%}"
    out = ["# twin calibrate", "",
           f"Logs of **{len(cal.nodes)} nodes** over {iso_utc(cal.t0_s)} .. {iso_utc(cal.t1_s)} "
           f"(**{cal.days:.2f} days**, {fmt(cal.node_days)} node-days). Calibrated scenario: `{scenario_file}`.",
           "", "## Logs read", "", "| file | format | lines | records |", "|---|---|---:|---|"]
    for s in cal.sacct:
        states = ", ".join(f"{k} {v}" for k, v in sorted(s.states.items()))
        out.append(f"| {_name(s.source)} | sacct | {s.lines} | {len(s.attempts)} job attempts ({states}); "
                   f"{s.steps} steps aggregated; {s.pending} never started |")
    if cal.xid is not None:
        x = cal.xid
        by = ", ".join(f"{k} ×{v}" for k, v in sorted(x.lines_by_xid.items()))
        out.append(f"| {', '.join(sorted({_name(str(p)) for p in x.events['source']})) or 'kernel logs'} | kernel "
                   f"log | {x.lines} | XID lines {by}; {x.storm_lines} storm lines collapsed; {len(x.events)} events;"
                   f" unknown XIDs: {', '.join(f'{k} ×{v}' for k, v in sorted(x.unknown.items())) or 'none'} |")
    for t in cal.tickets:
        out.append(f"| {_name(t.source)} | tickets | {len(t.tickets)} | causes "
                   f"{', '.join(f'{k} {v}' for k, v in sorted(t.causes.items()))} |")
    if cal.xid is not None and cal.xid_table is not None:
        ev = cal.xid.events
        out += ["", f"XID events by category (table: {cal.xid_table.source}):", "",
                "| XID | meaning | part | category | events |", "|---:|---|---|---|---:|"]
        for xid, n in ev.groupby("xid").size().items():
            part, cat, meaning = cal.xid_table.entries[int(xid)]
            out.append(f"| {xid} | {meaning} | {part or '—'} | {cat} | {n} |")
    out += ["", "## Part lifetimes", "",
            f"Censored maximum-likelihood fits (`twin fit`), {lv} intervals; the model chosen by AIC.", "",
            "| part | source | units | failures | chosen | parameters | mean_h | in the scenario |",
            "|---|---|---:|---:|---|---|---|---|"]
    for p, r in sorted(cal.parts.items()):
        if r.fit is None:
            out.append(f"| {p} | {_name(r.source)} | {r.units} | 0 | — | — | — | no |")
            continue
        _spec, chosen = usable(r.fit)
        m = chosen if chosen is not None else r.fit.chosen
        params = "; ".join(f"{k} {fmt(m.params[k])} {fmt_ci(m.ci[k])}" for k in distributions.PARAMS[m.dist])
        out.append(f"| {p} | {', '.join(_name(s) for s in r.source.split(', '))} | {r.units} | {r.failures} | "
                   f"{m.dist} | {params} | {fmt(m.mean_h)} {fmt_ci(m.mean_ci)} | {'yes' if r.in_base else 'no'} |")
    if cal.frailty is not None:
        f = cal.frailty
        out += ["", "## Node frailty and lemon nodes", "",
                f"Gamma frailty variance **{fmt(f.variance)}** {fmt_ci(f.ci)} (negative binomial maximum likelihood, "
                f"profile-likelihood {lv} interval) from {f.failures} part failures on {f.nodes} nodes, "
                f"{fmt(1000 * f.rate_per_node_day)} per 1,000 node-days. Lemon nodes (Poisson upper tail at the "
                f"fleet rate, Benjamini–Hochberg at FDR {f.fdr:g}): "
                + (", ".join(f"{h} ({k} failures, q = {q:.2g})" for h, k, q in f.lemons) if f.lemons else "none")
                + "."]
    if cal.jobs is not None:
        j = cal.jobs
        lo, hi = j.interruptions.ci
        out += ["", "## Job interruptions", "",
                f"{j.interruptions.count} hardware interruptions (NODE_FAIL) over {fmt(j.interruptions.exposure)} "
                f"node-days of jobs: **{fmt(1000 * j.interruptions.value)} per 1,000 node-days** "
                f"[{fmt(1000 * lo)}, {fmt(1000 * hi)}] (exact Poisson {lv}). By cause: "
                + (", ".join(f"{k} {v}" for k, v in sorted(j.by_cause.items())) or "none") + ". Job states (counted,"
                " only NODE_FAIL taken as hardware): " + ", ".join(f"{k} {v}" for k, v in sorted(j.states.items()))
                + ".", "", "| job size (nodes) | attempts | job-hours | interruptions | job MTTF (h) |",
                "|---|---:|---:|---:|---|"]
        for size, (rate, n) in j.by_size.items():
            rlo, rhi = rate.ci
            mttf = f"{fmt(1 / rate.value)} [{fmt(1 / rhi)}, {fmt(1 / rlo) if rlo else 'inf'}]" if rate.count else \
                f"> {fmt(1 / rhi)} (none)"
            out.append(f"| {size} | {n} | {fmt(rate.exposure)} | {rate.count} | {mttf} |")
    if cal.repairs:
        out += ["", "## Repair times", "", "| part or cause | tickets | closed | mean outage (h) | fitted | model |",
                "|---|---:|---:|---:|---|---|"]
        for p, rr in sorted(cal.repairs.items()):
            model = "—"
            if rr.fit is not None:
                spec, rm = usable(rr.fit, allow_fixed=True)
                model = f"fixed {spec['value_h']} h (every one the same)" if rm is None else f"{rm.dist} " + "; ".join(
                    f"{k} {fmt(rm.params[k])} {fmt_ci(rm.ci[k])}" for k in distributions.PARAMS[rm.dist])
            out.append(f"| {p} | {rr.tickets} | {rr.closed} | {fmt(rr.outage_mean_h)} | {rr.kind} | {model} |")
    if cal.thermal is not None:
        from twin.calibrate.thermal_fit import thermal_markdown

        out += thermal_markdown(cal.thermal, cal.thermal_target)
    for title, res in checks:
        out += _check_table(res, title)
    if cal.notes:
        out += ["", "## Notes", ""] + [f"- {n}" for n in cal.notes]
    return "\n".join(out) + "\n"
