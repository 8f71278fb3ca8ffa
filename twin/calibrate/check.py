"""The posterior-predictive check: run a scenario over the logged period and compare what it simulates
with what the logs say.

Each quantity is computed the same way from the logs and from every replication's tables:

* part failures per 1,000 node-days, by part (kernel logs and tickets; the ``parts`` table);
* job interruptions per 1,000 node-days of jobs, in all and by cause (``NODE_FAIL`` attempts with the
  cause of the failure found on their nodes; the ``jobs`` table's unplanned interruptions but those of
  transient faults and silent data corruption, which Slurm reports as ``FAILED``; a simulated cause the
  logs name no failure of, such as a fabric switch, counts as unattributed);
* job interruptions per 1,000 job-hours by job size (shown as the job MTTF, its inverse);
* the mean outage of a repair ticket, by part (end − start; the ``tickets`` table's back − fail).
  Tickets without a part (a cause such as ``maintenance``) are reported, not compared;
* with GPU telemetry: the share of GPU-time with a thermal clock event, that share among the *loaded*
  samples (power at least half the logged fleet's 99th percentile) and the loaded samples' temperature
  quantiles (p10, p50, p90: where the spread between GPUs shows). The simulated side is telemetry too:
  each replication traces every GPU (``cooling.trace``, an output) and is sampled at the logged
  interval, in whole degrees, through the same accumulator as the logs.

Over R replications the simulated values have mean m and standard deviation s; a logged value y is
consistent when it lies in the prediction interval m ± t(R−1, 1 − α/(2K))·s·√(1 + 1/R) — a new
observation's interval — where K is the number of rows: by Bonferroni the K intervals hold jointly
with probability ≥ 1 − α. The scenario is the one the logs were fitted to (the data are used twice:
a conservative check).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from twin.calibrate.fits import size_class
from twin.calibrate.gather import Calibration

Quantities = dict[str, float]


@dataclass
class Row:
    """One compared quantity."""

    name: str
    logged: float
    sim_mean: float
    lo: float
    hi: float
    show: Callable[[float], float] | None = None

    @property
    def consistent(self) -> bool:
        return bool(self.lo - 1e-9 <= self.logged <= self.hi + 1e-9)


def logged_quantities(cal: Calibration) -> Quantities:
    """The quantities of the logs (see the module doc)."""
    q: Quantities = {}
    nd = cal.node_days
    for p, r in sorted(cal.parts.items()):
        q[f"part failures per 1,000 node-days: {p}"] = 1000.0 * r.failures / nd
    if cal.jobs is not None:
        j = cal.jobs
        q["job interruptions per 1,000 node-days: all"] = 1000.0 * j.interruptions.value
        for cause, n in sorted(j.by_cause.items()):
            q[f"job interruptions per 1,000 node-days: {cause}"] = 1000.0 * n / j.interruptions.exposure
        for size, (rate, _n) in j.by_size.items():
            q[f"job interruptions per 1,000 job-hours: {size} nodes"] = 1000.0 * rate.value
    for p, rr in sorted(cal.repairs.items()):
        if rr.closed and p in cal.parts:  # a part's tickets; a cause without a part has no simulated twin
            q[f"repair outage mean (h): {p}"] = rr.outage_mean_h
    if cal.thermal is not None and cal.telemetry is not None:
        q.update(telemetry_quantities(cal.telemetry, cal.thermal.loaded_w, tuple(cal.thermal.loaded_quantiles)))
    return q


THROTTLE_ROW = "GPU-time with a thermal clock event (%)"
LOADED_THROTTLE_ROW = "loaded GPU-time with a thermal clock event (%)"
LOADED_TEMP_ROW = "temperature of the loaded samples (°C):"


def telemetry_quantities(tel: Any, loaded_w: float, quantiles: tuple[float, ...]) -> Quantities:
    """The telemetry's compared quantities from a :class:`~twin.calibrate.telemetry.Telemetry` (the logged
    one, or one fed with a replication's simulated samples): the share of GPU-time with a thermal clock
    event, that share among the loaded samples (power ≥ ``loaded_w``) and their temperature quantiles."""
    q: Quantities = {}
    hot, tot = tel.thermal_share()
    if tot > 0:
        q[THROTTLE_ROW] = 100.0 * hot / tot
    share, temps = tel.loaded(loaded_w, quantiles)
    if not math.isnan(share):
        q[LOADED_THROTTLE_ROW] = 100.0 * share
    for qq, v in temps.items():
        q[f"{LOADED_TEMP_ROW} p{round(100 * qq)}"] = v
    return q


def simulated_telemetry(res: Any, sc: Any, interval_s: float) -> Any:
    """A :class:`~twin.calibrate.telemetry.Telemetry` of one replication traced on every GPU, sampled every
    ``interval_s`` as the logged telemetry was (:func:`twin.calibrate.telemetry_synth.sample_trace`)."""
    from twin.calibrate.telemetry import Telemetry
    from twin.calibrate.telemetry_synth import feed, sample_trace

    tel = Telemetry()
    frame, _truth = sample_trace(res.tables["thermal_trace"], sc.horizon_h, interval_s,
                                 float(sc.cluster.node.gpu.idle_w))
    feed(frame, tel)
    return tel


def simulated_quantities(tables: dict[str, pd.DataFrame], n_nodes: int, horizon_h: float,
                         keys: list[str], not_hardware: frozenset[str] = frozenset()) -> Quantities:
    """The same quantities from one replication's tables (``parts``, ``jobs``, ``tickets``);
    interruptions with a cause in ``not_hardware`` (Slurm: FAILED, not NODE_FAIL) are left out."""
    q: Quantities = {}
    nd = n_nodes * horizon_h / 24.0
    parts = tables["parts"].set_index("part")["failures"] if "parts" in tables else pd.Series(dtype=float)
    jobs = tables.get("jobs")
    jn = None
    if jobs is not None and len(jobs):
        jr = jobs[(jobs["record"] == "job") & jobs["first_start_h"].notna()]
        end = jr["end_h"].fillna(horizon_h).clip(upper=horizon_h).to_numpy(dtype=float)
        hours = np.clip(end - jr["first_start_h"].to_numpy(dtype=float), 0.0, None)
        nodes = jr["nodes"].to_numpy(dtype=float)
        jn = float(np.sum(hours * nodes) / 24.0)
        ints = jobs[(jobs["record"] == "interruption") & ~jobs["planned"].astype(bool)
                    & ~jobs["cause"].astype(str).isin(list(not_hardware))]
        size_of = dict(zip(jr["job"].astype(int), size_class(jr["nodes"].to_numpy(dtype=int))))
        hours_by = pd.Series(hours).groupby(size_class(jr["nodes"].to_numpy(dtype=int))).sum()
        int_size = pd.Series([size_of.get(int(j), "") for j in ints["job"]], dtype=object)
        named = {k.partition(": ")[2] for k in keys if k.startswith("job interruptions per 1,000 node-days")}
        named -= {"all", "unattributed"}
        # a cause the logs cannot name (no part failure on the job's nodes at its end) is unattributed
        int_cause = np.array([c if c in named else "unattributed" for c in ints["cause"].astype(str)], dtype=object)
    tk = tables.get("tickets")
    for key in keys:
        group, _, label = key.partition(": ")
        if group.startswith("part failures"):
            q[key] = 1000.0 * float(parts.get(label, 0.0)) / nd
        elif group.startswith("job interruptions per 1,000 node-days"):
            if jn is None or jn <= 0:
                q[key] = math.nan
            elif label == "all":
                q[key] = 1000.0 * len(int_cause) / jn
            else:
                q[key] = 1000.0 * float(np.sum(int_cause == label)) / jn
        elif group.startswith("job interruptions per 1,000 job-hours"):
            size = label.removesuffix(" nodes")
            h = float(hours_by.get(size, 0.0)) if jn is not None else 0.0
            q[key] = 1000.0 * float(np.sum(int_size.to_numpy() == size)) / h if h > 0 else math.nan
        elif group.startswith("repair outage"):
            if tk is None or not len(tk):
                q[key] = math.nan
                continue
            done = tk[(tk["part"].astype(str) == label) & tk["done"].astype(bool)]
            q[key] = float((done["back_h"] - done["fail_h"]).mean()) if len(done) else math.nan
    return q


@dataclass
class CheckResult:
    """The rows of one scenario's check."""

    scenario: str
    reps: int
    alpha: float
    rows: list[Row]

    @property
    def inconsistent(self) -> list[Row]:
        return [r for r in self.rows if not r.consistent]


def compare(logged: Quantities, sims: list[Quantities], alpha: float = 0.05, scenario: str = "") -> CheckResult:
    """Bonferroni-joint prediction intervals of every logged quantity from the replications ``sims``."""
    keys = [k for k in logged if not math.isnan(logged[k])]
    R = len(sims)
    n_keys = max(len(keys), 1)
    t = float(stats.t.ppf(1.0 - alpha / (2 * n_keys), max(R - 1, 1)))
    rows = []
    for k in keys:
        x = np.array([s.get(k, math.nan) for s in sims], dtype=float)
        x = x[~np.isnan(x)]
        if x.size == 0:
            x = np.zeros(1)
        m = float(x.mean())
        sd = float(x.std(ddof=1)) if x.size > 1 else 0.0
        half = t * sd * math.sqrt(1.0 + 1.0 / x.size)
        rows.append(Row(k, logged[k], m, max(m - half, 0.0), m + half))
    return CheckResult(scenario, R, alpha, rows)


def run_check(scenario_path: str, cal: Calibration, reps: int, alpha: float = 0.05,
              progress: Callable[[int], None] | None = None) -> CheckResult:
    """Simulate ``scenario_path`` over the logged period ``reps`` times and compare (see the module doc)."""
    from twin.calibrate.synth import not_hardware
    from twin.scenario.loader import load_scenario
    from twin.sim import run_replication

    sets = [f"horizon_days={cal.days!r}"]
    thermal = cal.thermal is not None and cal.telemetry is not None
    if thermal:  # every GPU traced, to sample its telemetry as the logged one was
        from twin.calibrate.telemetry_synth import trace_overrides

        sc0 = load_scenario(scenario_path, sets).scenario
        if sc0.cooling is None or not sc0.cooling.thermal:
            thermal = False
        else:
            sets += trace_overrides(sc0.cluster.n_nodes, sc0.horizon_h)
    sc = load_scenario(scenario_path, sets).scenario
    logged = logged_quantities(cal)
    if not thermal:  # a scenario without a thermal model simulates no telemetry: its rows are not compared
        logged = {k: v for k, v in logged.items()
                  if k not in (THROTTLE_ROW, LOADED_THROTTLE_ROW) and not k.startswith(LOADED_TEMP_ROW)}
    keys = list(logged)
    sims = []
    for r in range(reps):
        res = run_replication(sc, r)
        tables = dict(res.tables)
        q = simulated_quantities(tables, sc.cluster.n_nodes, sc.horizon_h, keys, not_hardware(sc))
        if thermal:
            assert cal.thermal is not None
            q.update(telemetry_quantities(simulated_telemetry(res, sc, cal.thermal.interval_s), cal.thermal.loaded_w,
                                          tuple(cal.thermal.loaded_quantiles)))
        sims.append(q)
        if progress is not None:
            progress(r + 1)
    return compare(logged, sims, alpha, scenario_path)
