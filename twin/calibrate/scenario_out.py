"""The calibrated scenario: a new file that ``extends`` the base with every fitted value, each on its own
line with a comment naming its source file, its sample size and its interval; the logged quantities
that are not parameters (job interruption rates, lemon nodes) follow as comments."""

from __future__ import annotations

import os
from pathlib import Path


from twin.calibrate.common import iso_utc
from twin.calibrate.gather import Calibration
from twin.calibrate.thermal_fit import thermal_logged, thermal_yaml
from twin.calibrate.uncertainty_out import base_groups, uncertainty_yaml
from twin.fit import distributions
from twin.fit.mle import ModelFit
from twin.calibrate.model_choice import usable
from twin.fit.report import fmt, fmt_ci, relative_base


def _flow(spec: dict[str, object]) -> str:
    return "{" + ", ".join(f"{k}: {v}" for k, v in spec.items()) + "}"


def _names(source: str) -> str:
    return ", ".join(Path(s.strip()).name for s in source.split(","))


def _cis(m: ModelFit, level: float) -> str:
    return "; ".join(f"{p} {fmt(m.params[p])} {fmt_ci(m.ci[p])}" for p in distributions.PARAMS[m.dist]) + \
        f" ({level:.0%} intervals)"


def _fitted(cal: Calibration) -> str:
    what = []
    if cal.parts or cal.repairs or cal.frailty is not None:
        what.append("the part lifetimes, repair times and node frailty")
    if cal.thermal is not None and cal.thermal_target[0]:
        what.append("the GPUs' thermal resistance and its spread")
    return " and ".join(what) or "nothing"


def scenario_yaml(cal: Calibration, base_name: str, base_parts: set[str], base_path: str | os.PathLike[str],
                  into: str | os.PathLike[str]) -> str:
    """The text of the calibrated scenario written at ``into`` (``base_parts``: the base's node parts;
    fits of other parts are reported, not written)."""
    lv = cal.level
    out = [f"# Calibrated by twin calibrate from the logs of {len(cal.nodes)} nodes over {iso_utc(cal.t0_s)} .. "
           f"{iso_utc(cal.t1_s)} ({cal.days:.1f} days).",
           "# Every value below is fitted; its comment names the source file, the sample size and the interval.",
           "# The rest is the base scenario's.",
           f"extends: {relative_base(base_path, into)}",
           f"name: {base_name}-calibrated",
           "description: >-",
           f"  {base_name} with {_fitted(cal)} fitted to the logs of "
           f"{iso_utc(cal.t0_s)[:10]} .. {iso_utc(cal.t1_s)[:10]} (twin calibrate)."]
    parts = sorted(p for p, r in cal.parts.items() if r.in_base and r.fit is not None)
    repairs = sorted(p for p, r in cal.repairs.items() if r.fit is not None and p in base_parts)
    if parts or repairs:
        out += ["cluster:", "  node:", "    parts:"]
        for p in sorted(set(parts) | set(repairs)):
            out.append(f"      {p}:")
            if p in parts:
                r = cal.parts[p]
                assert r.fit is not None
                spec, m = usable(r.fit)
                what = "" if m is None else f"; {_cis(m, lv)}" + (
                    "" if m.dist == "exponential" else f"; mean_h {fmt(m.mean_h)} {fmt_ci(m.mean_ci)}") + \
                    "; chosen by AIC"
                out.append(f"        failure: {_flow(spec)}   # {_names(r.source)}: {r.failures} failures in "
                           f"{r.units} units over {cal.days:.1f} days{what}")
            if p in repairs:
                rr = cal.repairs[p]
                assert rr.fit is not None
                spec, m = usable(rr.fit, allow_fixed=True)
                what = ("hands-on repair (work_end - work_start)" if rr.kind == "repair" else
                        "whole outage (end - start: includes detection and waits, an overestimate)")
                ci = f"; {_cis(m, lv)}" if m is not None else "; every one the same length"
                out += ["        repair:",
                        f"          time: {_flow(spec)}   # {_names(rr.source)}: {rr.fit.n} tickets, {what}{ci}"]
    if cal.frailty is not None:
        f = cal.frailty
        out += ["health:",
                f"  frailty: {{variance: {fmt(f.variance)}}}   "
                f"# {_names(', '.join(sorted(set(cal.failures['source']))))}:"
                f" {f.failures} part failures on {f.nodes} nodes; profile-likelihood {lv:.0%} interval "
                f"{fmt_ci(f.ci)}"]
    if cal.thermal is not None:
        out += thermal_yaml(cal.thermal, cal.thermal_target)
    out += uncertainty_yaml(cal, base_parts, base_groups(base_path))
    out += ["", "# Logged, not parameters (the calibration report compares the simulation with them):"]
    if cal.jobs is not None:
        j = cal.jobs.interruptions
        lo, hi = j.ci
        out.append(f"#   job interruptions (NODE_FAIL) per 1,000 node-days: {fmt(1000 * j.value)} "
                   f"[{fmt(1000 * lo)}, {fmt(1000 * hi)}] ({_names(cal.job_source)}: {j.count} over "
                   f"{fmt(j.exposure)} node-days)")
        for size, (rate, n) in cal.jobs.by_size.items():
            lo, hi = rate.ci
            mttf = fmt(1 / rate.value) if rate.count else "n/a (no interruption)"
            out.append(f"#   job MTTF, {size} nodes: {mttf} h [{fmt(1 / hi) if hi else 'n/a'}, "
                       f"{fmt(1 / lo) if lo else 'inf'}] ({rate.count} interruptions in {fmt(rate.exposure)} "
                       "job-hours, "
                       f"{n} attempts)")
    if cal.frailty is not None:
        lem = cal.frailty.lemons
        out.append(f"#   lemon nodes (Benjamini-Hochberg, FDR {cal.frailty.fdr:g}): "
                   + (", ".join(f"{h} ({k} failures, q {q:.2g})" for h, k, q in lem) if lem else "none"))
    if cal.thermal is not None:
        out += thermal_logged(cal.thermal)
    for note in cal.notes:
        out.append(f"#   note: {note}")
    return "\n".join(out) + "\n"

