"""Closed forms the simulator must reproduce (model.md §9).

Rates are per hour and times in hours unless a name says otherwise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import gammaln, logsumexp, pdtrc

from twin.physics.arrays import FloatOrArray, as_f64 as _f, float_or_array as _out

__all__ = [
    "availability_single",
    "k_of_n_availability",
    "one_of_two_one_crew",
    "erlang_c_probability",
    "erlang_c_mean_wait_h",
    "MachineRepair",
    "machine_repair",
    "young_interval_h",
    "daly_interval_h",
    "daly_expected_wall_time_h",
    "palm_stockout_share",
    "job_interruption_rate_per_h",
    "ladder_rung_probabilities",
    "ladder_mean_downtime_h",
]


def availability_single(mtbf_h: ArrayLike, mttr_h: ArrayLike) -> FloatOrArray:
    """Steady-state availability of one repairable part: MTBF/(MTBF + MTTR) (hours)."""
    m = _f(mtbf_h)
    return _out(m / (m + _f(mttr_h)))


def k_of_n_availability(
    n: int, k: int, fail_rate_per_h: float, repair_rate_per_h: float, crews: int
) -> float:
    """Availability of a k-out-of-n group with ``crews`` dedicated repair crews.

    Birth–death chain on i = units down: failure rate (n − i)·λ (units keep failing while the
    group is down), repair rate min(i, r)·μ. With ρ = λ/μ,
    p_i ∝ C(n,i)·ρ^i·i!/(min(i,r)!·r^max(i−r,0)) and A = Σ_{i≤n−k} p_i / Σ_{i≤n} p_i.
    Computed in log space, so large n is fine.
    """
    n, k, r = int(n), int(k), int(crews)
    if not (1 <= k <= n):
        raise ValueError("need 1 <= k <= n")
    if r < 1:
        raise ValueError("crews must be >= 1")
    lam, mu = float(fail_rate_per_h), float(repair_rate_per_h)
    if lam < 0 or mu <= 0:
        raise ValueError("need fail rate >= 0 and repair rate > 0")
    if lam == 0.0:
        return 1.0
    i = np.arange(n + 1, dtype=np.float64)
    log_rho = math.log(lam / mu)
    log_p = (
        gammaln(n + 1) - gammaln(n - i + 1)  # C(n,i)·i! = n!/(n−i)!
        + i * log_rho
        - gammaln(np.minimum(i, r) + 1)
        - np.maximum(i - r, 0) * math.log(r)
    )
    return float(np.exp(logsumexp(log_p[: n - k + 1]) - logsumexp(log_p)))


def one_of_two_one_crew(lam: ArrayLike, mu: ArrayLike) -> FloatOrArray:
    """1-out-of-2 availability with one crew: (μ² + 2λμ)/(μ² + 2λμ + 2λ²) (rates per hour)."""
    lam_, mu_ = _f(lam), _f(mu)
    num = mu_**2 + 2 * lam_ * mu_
    return _out(num / (num + 2 * lam_**2))


def one_of_two_beta_unavailability(lam: ArrayLike, mu: ArrayLike, beta: ArrayLike) -> FloatOrArray:
    """Unavailability of 1-out-of-2 with β-factor common-cause failures and one crew (rates per hour).

    Each unit fails alone at (1 − β)λ; a common event at βλ fails every working unit; one crew repairs
    at μ. The chain 2 → 1 at 2(1 − β)λ, 2 → 0 at βλ, 1 → 0 at λ, repairs at μ gives, with ρ = λ/μ,
    U = [βρ + (2 − β)ρ²] / [1 + 2ρ + (2 − β)ρ²] (β = 0: the independent 2ρ²/(1 + 2ρ + 2ρ²))."""
    rho = _f(lam) / _f(mu)
    b = _f(beta)
    num = b * rho + (2.0 - b) * rho**2
    return _out(num / (1.0 + 2.0 * rho + (2.0 - b) * rho**2))


def tested_standby_unavailability(lam: ArrayLike, test_interval_h: ArrayLike,
                                  repair_h: ArrayLike = 0.0) -> FloatOrArray:
    """Mean unavailability of a standby unit whose failures (rate ``lam`` per hour) are latent until a
    periodic test every ``test_interval_h`` hours (tests at T, 2T, ..., instant, no demands).

    With instant repair, U = 1 − (1 − e^(−λT))/(λT) (not the approximation λT/2). With a fixed repair
    time D ≤ T after a test finds the unit failed (the unit renews at the test + D, tests keep their
    schedule), the state at the tests is a two-state chain: from "up" the unit fails before the next test
    with a = 1 − e^(−λT), from "found failed" with b = 1 − e^(−λ(T − D)); π_failed = a/(1 + a − b), and
    the down time of a test interval is T − a/λ from "up" and T − b/λ from "found failed" (the repair
    D included). U adds about λD to the instant-repair value."""
    lam_, T, D = _f(lam), _f(test_interval_h), _f(repair_h)  # noqa: N806 (the repair time D of the docstring)
    if np.any(D > T) or np.any(D < 0):
        raise ValueError("repair_h must lie in [0, test_interval_h]")
    a = -np.expm1(-lam_ * T)
    b = -np.expm1(-lam_ * (T - D))
    p_f = a / (1.0 + a - b)
    down = (1.0 - p_f) * (T - a / lam_) + p_f * (T - b / lam_)
    return _out(down / T)


def _check_stable(arrival_rate: float, service_rate: float, servers: int) -> float:
    c = int(servers)
    if c < 1:
        raise ValueError("servers must be >= 1")
    if arrival_rate < 0 or service_rate <= 0:
        raise ValueError("need arrival rate >= 0 and service rate > 0")
    a = arrival_rate / service_rate
    if a >= c:
        raise ValueError(f"unstable queue: offered load {a:g} >= {c} servers")
    return a


def erlang_c_probability(arrival_rate: float, service_rate: float, servers: int) -> float:
    """Erlang C: probability that an arriving job waits in an M/M/c queue.

    Rates in any common unit (per hour in the twin). Computed via the Erlang B recursion
    B_k = a·B_{k−1}/(k + a·B_{k−1}), C = B_c/(1 − ρ(1 − B_c)) with a = λ/μ, ρ = a/c.
    ValueError if the queue is unstable (a ≥ c).
    """
    a = _check_stable(float(arrival_rate), float(service_rate), servers)
    c = int(servers)
    b = 1.0
    for kk in range(1, c + 1):
        b = a * b / (kk + a * b)
    rho = a / c
    return b / (1.0 - rho * (1.0 - b))


def erlang_c_mean_wait_h(arrival_rate_per_h: float, service_rate_per_h: float, servers: int) -> float:
    """Mean queueing wait (hours) in M/M/c: C(c, a)/(c·μ − λ). ValueError if unstable."""
    pc = erlang_c_probability(arrival_rate_per_h, service_rate_per_h, servers)
    return pc / (int(servers) * float(service_rate_per_h) - float(arrival_rate_per_h))


@dataclass(frozen=True)
class MachineRepair:
    """Steady state of the finite-source (machine-repair) queue M/M/c//N."""

    mean_down: float
    """L: units failed on average (waiting for a server or being repaired)."""
    mean_waiting: float
    """L_q: failed units waiting for a free server."""
    mean_busy: float
    """Servers busy on average (= units in repair)."""
    utilisation: float
    """mean_busy / c."""
    throughput_per_h: float
    """Failures (= repairs) per hour: λ·(N − L) = μ·mean_busy."""
    mean_wait_h: float
    """W_q: mean wait of a failed unit for a server, hours (Little: L_q / throughput)."""


def _machine_repair_log_terms(lo: int, hi: int, n: int, log_rho: float, c: int) -> NDArray[np.float64]:
    i = np.arange(lo, hi + 1, dtype=np.float64)
    terms: NDArray[np.float64] = (gammaln(n + 1) - gammaln(n - i + 1) + i * log_rho
                                  - gammaln(np.minimum(i, c) + 1) - np.maximum(i - c, 0) * math.log(c))
    return terms


def machine_repair(n_units: int, fail_rate_per_h: float, repair_rate_per_h: float, servers: int) -> MachineRepair:
    """The finite-source queue M/M/c//N: ``n_units`` units, each failing at ``fail_rate_per_h`` λ
    while it works (a failed unit does not fail again), ``servers`` c repairers each repairing at
    ``repair_rate_per_h`` μ. Birth–death chain on i = units down, birth (N − i)·λ, death min(i, c)·μ:

        p_i ∝ N!/(N − i)! · ρ^i / (i! for i ≤ c, c!·c^(i−c) for i > c),  ρ = λ/μ,

    always stable (at most N units down), unlike M/M/c, which it approaches as N → ∞ with N·λ fixed.
    The terms are unimodal (p_(i+1)/p_i decreases in i), so they are summed over a window around
    the mode that grows until its end terms are below e^-60 of the largest (the mass left out is
    then below N·e^-60 relative: any N up to 10^9 gives a relative error below 10^-17).
    """
    n, c = int(n_units), int(servers)
    lam, mu = float(fail_rate_per_h), float(repair_rate_per_h)
    if n < 1 or c < 1:
        raise ValueError("need n_units >= 1 and servers >= 1")
    if not (lam >= 0 and mu > 0 and math.isfinite(lam) and math.isfinite(mu)):
        raise ValueError("need fail rate >= 0 and repair rate > 0 (finite)")
    if lam == 0.0:
        return MachineRepair(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    rho = lam / mu
    # the mode: the first i with p_(i+1)/p_i = (N − i)·ρ / min(i + 1, c) < 1 (a decreasing ratio)
    a, b = 0, n
    while a < b:
        mid = (a + b) // 2
        if (n - mid) * rho < min(mid + 1, c):
            b = mid
        else:
            a = mid + 1
    mode, width = a, 64
    while True:
        lo, hi = max(0, mode - width), min(n, mode + width)
        logp = _machine_repair_log_terms(lo, hi, n, math.log(rho), c)
        top = float(logp.max())
        if (lo == 0 or logp[0] < top - 60) and (hi == n or logp[-1] < top - 60):
            break
        width *= 4
    p = np.exp(logp - top)
    p /= p.sum()
    i = np.arange(lo, hi + 1, dtype=np.float64)
    down = float((i * p).sum())
    busy = float((np.minimum(i, c) * p).sum())
    waiting = max(down - busy, 0.0)
    through = mu * busy
    return MachineRepair(down, waiting, busy, busy / c, through, waiting / through if through > 0 else 0.0)


def young_interval_h(delta_h: ArrayLike, mtbf_h: ArrayLike) -> FloatOrArray:
    """Young's checkpoint interval √(2δM), hours (δ checkpoint write time, M MTBF)."""
    return _out(np.sqrt(2.0 * _f(delta_h) * _f(mtbf_h)))


def daly_interval_h(delta_h: ArrayLike, mtbf_h: ArrayLike) -> FloatOrArray:
    """Daly's higher-order checkpoint interval, hours.

    τ = √(2δM)·[1 + ⅓(δ/2M)^½ + (1/9)(δ/2M)] − δ for δ < 2M, τ = M otherwise.
    """
    d, m = np.broadcast_arrays(_f(delta_h), _f(mtbf_h))
    x = d / (2.0 * m)
    tau = np.sqrt(2.0 * d * m) * (1.0 + np.sqrt(x) / 3.0 + x / 9.0) - d
    return _out(np.where(d < 2.0 * m, tau, m))


def daly_expected_wall_time_h(
    work_h: ArrayLike, interval_h: ArrayLike, checkpoint_h: ArrayLike, restart_h: ArrayLike,
    mtbf_h: ArrayLike,
) -> FloatOrArray:
    """Daly (2006) exact expected wall time, hours, for ``work_h`` of work with exponential failures.

    T_w = M·e^(R/M)·(e^((τ+δ)/M) − 1)·T_s/τ with τ the interval, δ the checkpoint time, R the
    restart time, M the MTBF. Assumes failures strike during checkpoints and restarts too and
    T_s a multiple of τ. Efficiency is T_s/T_w.
    """
    m, tau = _f(mtbf_h), _f(interval_h)
    return _out(
        m * np.exp(_f(restart_h) / m) * np.expm1((tau + _f(checkpoint_h)) / m) * _f(work_h) / tau
    )


def palm_stockout_share(failure_rate_per_h: ArrayLike, lead_time_h: ArrayLike, stock: ArrayLike) -> FloatOrArray:
    """Share of failures finding no spare under an (S−1, S) policy (Palm's theorem).

    Outstanding orders are Poisson(λL); returns P(Poisson(λL) ≥ S) = poisson.sf(S − 1, λL).
    """
    mean = _f(failure_rate_per_h) * _f(lead_time_h)
    k = _f(stock) - 1.0
    # scipy.stats.poisson.sf's own steps (1 below the support, pdtrc of the floor on it, NaN for a
    # negative or NaN mean), without importing scipy.stats: ~0.3 s of every twin command's start
    with np.errstate(invalid="ignore"):
        sf = np.where(k < 0, 1.0, pdtrc(np.floor(np.maximum(k, 0.0)), mean))
    return _out(np.where((mean >= 0) & ~np.isnan(k), sf, np.nan))


def job_interruption_rate_per_h(n_nodes: ArrayLike, node_rate_per_h: ArrayLike) -> FloatOrArray:
    """Interruption rate (per hour) of an N-node job: N·r_node."""
    return _out(_f(n_nodes) * _f(node_rate_per_h))


def ladder_rung_probabilities(successes: list[float]) -> list[float]:
    """Unconditional probabilities of ending on each rung of a repair ladder whose rung i clears the
    fault with conditional probability sᵢ (the last rung always clears it): p₁ = s₁,
    p₂ = (1 − s₁)s₂, ..., p_last = Π(1 − sᵢ)."""
    out, rest = [], 1.0
    for s in successes:
        out.append(rest * s)
        rest *= 1.0 - s
    return out + [rest]


def ladder_mean_downtime_h(successes: list[float], rung_times_h: list[float]) -> float:
    """Mean downtime per failure Σ pᵢ·Tᵢ, with pᵢ from :func:`ladder_rung_probabilities` and Tᵢ the
    cumulative time (hours) of a failure that ends on rung i (every rung before it included), when no
    ticket waits for a crew or a spare."""
    p = ladder_rung_probabilities(successes)
    if len(rung_times_h) != len(p):
        raise ValueError(f"need {len(p)} cumulative rung times, got {len(rung_times_h)}")
    return float(sum(pi * ti for pi, ti in zip(p, rung_times_h)))
