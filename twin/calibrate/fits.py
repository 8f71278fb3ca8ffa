"""Fits of what the logs say, each with its interval (default 95 %):

* part lifetimes with right censoring: :func:`part_lives` builds one life per unit and failure and
  hands them to ``twin fit``'s maximum-likelihood fits (:func:`twin.fit.mle.fit_part`);
* per-node frailty: failure counts per node, negative binomial with variance m + m²v (the gamma
  frailty of ``health.frailty``), v by maximum likelihood with a profile-likelihood interval; lemon
  nodes are those whose count is improbable at the fleet rate (Poisson upper tail), flagged under
  Benjamini–Hochberg false-discovery-rate control (``scipy.stats.false_discovery_control``);
* job interruptions (``NODE_FAIL``) per 1,000 node-days and job MTTF by job size (nodes), with exact
  Poisson (chi-square) intervals, as Meta's reliability paper states them (Kokolis et al. 2025);
* repair times by part from the tickets (censored: open tickets), by the same lifetime fits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import optimize, stats

from twin.fit.mle import PartFit, fit_part

SIZE_EDGES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
"""Lower edges of the job-size classes in nodes (1, 2–3, 4–7, ...)."""


def poisson_ci(k: int, level: float = 0.95) -> tuple[float, float]:
    """Exact (Garwood) interval of a Poisson mean from a count ``k``."""
    a = 1.0 - level
    lo = 0.0 if k == 0 else float(stats.chi2.ppf(a / 2, 2 * k) / 2)
    hi = float(stats.chi2.ppf(1 - a / 2, 2 * k + 2) / 2)
    return lo, hi


@dataclass
class Rate:
    """A count over an exposure: ``count`` events in ``exposure`` units, the rate and its interval."""

    count: int
    exposure: float
    level: float = 0.95

    @property
    def value(self) -> float:
        return self.count / self.exposure if self.exposure > 0 else math.nan

    @property
    def ci(self) -> tuple[float, float]:
        lo, hi = poisson_ci(self.count, self.level)
        return (lo / self.exposure, hi / self.exposure) if self.exposure > 0 else (math.nan, math.nan)


def part_lives(failures_s: dict[str, list[float]], units_total: int, t0_s: float, t1_s: float
               ) -> tuple[np.ndarray, np.ndarray]:
    """Lives (hours) and failure flags of one part type: each unit with failures (key: its id, value:
    its failure times) lives from ``t0_s`` to its first failure, from each failure to the next (the
    replacement starts at the failure: repairs are short beside lives), and from its last failure to
    ``t1_s`` (censored); the ``units_total - len(failures_s)`` units without a failure are censored at
    ``t1_s - t0_s``. Failures outside the window are ignored."""
    d: list[float] = []
    f: list[bool] = []
    for times in failures_s.values():
        prev = t0_s
        for t in sorted(x for x in times if t0_s <= x <= t1_s):
            if t > prev:
                d.append((t - prev) / 3600.0)
                f.append(True)
            prev = t
        if t1_s > prev:
            d.append((t1_s - prev) / 3600.0)
            f.append(False)
    quiet = max(units_total - len(failures_s), 0)
    dur = np.r_[np.asarray(d, dtype=float), np.full(quiet, (t1_s - t0_s) / 3600.0)]
    failed = np.r_[np.asarray(f, dtype=bool), np.zeros(quiet, dtype=bool)]
    return dur, failed


def fit_lives(part: str, durations_h: np.ndarray, failed: np.ndarray, level: float = 0.95) -> PartFit | None:
    """``twin fit``'s censored fits (exponential, Weibull, lognormal; AIC choice), or None without
    failures."""
    if not failed.any():
        return None
    return fit_part(part, durations_h, failed, level=level)


@dataclass
class FrailtyFit:
    """Gamma frailty of node failure rates from per-node counts."""

    variance: float
    ci: tuple[float, float]
    rate_per_node_day: float
    nodes: int
    failures: int
    lemons: list[tuple[str, int, float]] = field(default_factory=list)
    """(node, failures, BH-adjusted p-value) of the nodes flagged at the FDR level."""
    fdr: float = 0.05
    level: float = 0.95


def _nb_loglik(counts: np.ndarray, mu: np.ndarray, v: float) -> float:
    if v <= 1e-12:
        return float(np.sum(stats.poisson.logpmf(counts, mu)))
    r = 1.0 / v
    return float(np.sum(stats.nbinom.logpmf(counts, r, r / (r + mu))))


def fit_frailty(nodes: list[str], counts: np.ndarray, exposure_days: np.ndarray, level: float = 0.95,
                fdr: float = 0.05, v_max: float = 100.0) -> FrailtyFit:
    """Maximum-likelihood frailty variance v of per-node failure ``counts`` over ``exposure_days``
    (negative binomial, mean λ·E, variance m + m²v; v = 0 is Poisson) with the profile-likelihood
    interval {v : 2(ℓ̂ − ℓ_p(v)) ≤ χ²₁(level)}, and the lemon nodes under BH control at ``fdr``."""
    k = np.asarray(counts, dtype=float)
    e = np.asarray(exposure_days, dtype=float)
    total = float(k.sum())
    lam0 = total / float(e.sum()) if total > 0 else 1e-9

    def profile(v: float) -> tuple[float, float]:
        if total == 0:
            return 0.0, lam0
        res = optimize.minimize_scalar(lambda ll: -_nb_loglik(k, math.exp(ll) * e, v),
                                       bounds=(math.log(lam0) - 5, math.log(lam0) + 5), method="bounded",
                                       options={"xatol": 1e-10})
        return -float(res.fun), math.exp(float(res.x))

    res = optimize.minimize_scalar(lambda lv: -profile(math.exp(lv))[0], bounds=(math.log(1e-6), math.log(v_max)),
                                   method="bounded", options={"xatol": 1e-8})
    v_hat = math.exp(float(res.x))
    l_hat = profile(v_hat)[0]
    l0 = profile(0.0)[0]
    if l0 >= l_hat:
        v_hat, l_hat = 0.0, l0
    cut = float(stats.chi2.ppf(level, 1)) / 2.0

    def gap(v: float) -> float:
        return l_hat - profile(v)[0] - cut

    lo = 0.0 if gap(0.0) <= 0 else float(optimize.brentq(gap, 0.0, max(v_hat, 1e-9)))
    hi = v_max if gap(v_max) <= 0 else float(optimize.brentq(gap, max(v_hat, 1e-9), v_max))
    lam = total / float(e.sum()) if e.sum() > 0 else math.nan
    lemons: list[tuple[str, int, float]] = []
    if total > 0 and len(k) > 1:
        p = stats.poisson.sf(k - 1, lam * e)
        adj = stats.false_discovery_control(p, method="bh")
        lemons = [(nodes[i], int(k[i]), float(adj[i])) for i in np.argsort(adj, kind="stable") if adj[i] <= fdr]
    return FrailtyFit(variance=v_hat, ci=(lo, hi), rate_per_node_day=lam, nodes=len(k), failures=int(total),
                      lemons=lemons, fdr=fdr, level=level)


def size_class(nodes: np.ndarray) -> np.ndarray:
    """Labels of job-size classes by nodes (``1``, ``2-3``, ``4-7``, ...)."""
    edges = np.asarray(SIZE_EDGES)
    i = np.searchsorted(edges, np.asarray(nodes), side="right") - 1
    labels = [f"{a}" if b - a == 1 else f"{a}-{b - 1}" for a, b in zip(SIZE_EDGES, SIZE_EDGES[1:] + (8192,))]
    return np.asarray(labels, dtype=object)[np.clip(i, 0, len(labels) - 1)]


@dataclass
class JobRates:
    """Job interruptions from accounting."""

    interruptions: Rate
    """Hardware interruptions (NODE_FAIL) per node-day of jobs."""
    by_size: dict[str, tuple[Rate, int]]
    """Per size class: interruptions per job-hour, and the class's attempts."""
    by_cause: dict[str, int]
    states: dict[str, int]


def job_rates(attempts: pd.DataFrame, end_s: float, causes: pd.Series | None = None,
              level: float = 0.95) -> JobRates:
    """Interruptions per node-day and per job-hour by size class; running attempts are censored at
    ``end_s``. ``causes`` (index-aligned with ``attempts``) names the cause of each NODE_FAIL."""
    a = attempts
    end = a["end_s"].fillna(end_s).clip(upper=end_s).to_numpy()
    hours = np.clip(end - a["start_s"].to_numpy(), 0.0, None) / 3600.0
    nf = (a["state"].astype(str) == "NODE_FAIL").to_numpy()
    nd = float(np.sum(hours * a["nodes"].to_numpy()) / 24.0)
    classes = size_class(a["nodes"].to_numpy())
    by_size: dict[str, tuple[Rate, int]] = {}
    for c in sorted(set(classes), key=lambda s: int(str(s).split("-")[0])):
        m = classes == c
        by_size[str(c)] = (Rate(int(nf[m].sum()), float(hours[m].sum()), level), int(m.sum()))
    by_cause: dict[str, int] = {}
    if causes is not None:
        by_cause = {str(k): int(v) for k, v in causes[nf].value_counts().items()}
    states = {str(k): int(v) for k, v in a["state"].astype(str).value_counts().items()}
    return JobRates(Rate(int(nf.sum()), nd, level), by_size, by_cause, states)


def attribute_causes(attempts: pd.DataFrame, events: pd.DataFrame, tolerance_s: float) -> pd.Series:
    """The cause of each NODE_FAIL attempt: the part of the hardware failure (``events``: ``time_s,
    host, part``) on one of its nodes nearest its end within ``tolerance_s``, else ``unattributed``;
    empty for other attempts."""
    import hostlist

    by_host: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for host, grp in events.sort_values("time_s").groupby("host", sort=False):
        by_host[str(host)] = (grp["time_s"].to_numpy(), grp["part"].astype(str).to_numpy())
    out = np.full(len(attempts), "", dtype=object)
    nf = np.flatnonzero((attempts["state"].astype(str) == "NODE_FAIL").to_numpy())
    ends = attempts["end_s"].to_numpy()
    lists = attempts["nodelist"].to_numpy()
    for i in nf:
        best, cause = tolerance_s, "unattributed"
        for h in hostlist.expand_hostlist(str(lists[i])):
            if h not in by_host:
                continue
            t, parts = by_host[h]
            j = int(np.searchsorted(t, ends[i]))
            for jj in (j - 1, j):
                if 0 <= jj < len(t) and abs(t[jj] - ends[i]) <= best:
                    best, cause = abs(t[jj] - ends[i]), str(parts[jj])
        out[i] = cause
    return pd.Series(out, index=attempts.index)


def repair_fit(part: str, tickets: pd.DataFrame, end_s: float, level: float = 0.95) -> tuple[PartFit | None, str]:
    """Repair times of ``part``'s tickets: hands-on (``work_end - work_start``, or ``end - work_start``
    without a work end) of the tickets with a work start when any has one (tickets closed without
    hands-on work, such as a reset, are then left out: the twin's ``repair.time`` is the replacement's),
    else the outage (``end - start``); open ones censored at ``end_s``. Returns the fit (None without
    a closed one) and which duration it is (``repair`` or ``outage``)."""
    t = tickets
    hands_on = bool(t["work_start_s"].notna().any())
    if hands_on:
        t = t[t["work_start_s"].notna() | t["end_s"].isna()]
        begin = t["work_start_s"].fillna(t["start_s"]).to_numpy()
        stop = t["work_end_s"].fillna(t["end_s"]) if "work_end_s" in t else t["end_s"]
    else:
        begin = t["start_s"].to_numpy()
        stop = t["end_s"]
    closed = stop.notna().to_numpy()
    dur = (stop.fillna(end_s).to_numpy() - begin) / 3600.0
    ok = dur > 0
    kind = "repair" if hands_on else "outage"
    if not closed[ok].any():
        return None, kind
    return fit_part(part, dur[ok], closed[ok], level=level), kind
