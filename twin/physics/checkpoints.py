"""The checkpoint interval with silent data corruption and checkpoint retention (issue 39).

Daly's optimum (:func:`twin.physics.closed_forms.daly_interval_h`) assumes that an interruption loses
the work since the *last* checkpoint. A silent data corruption (SDC) does not: it is detected a latency
``L`` after it struck, and the job rolls back to the newest *retained* checkpoint captured *before* the
corruption. A job keeps its last ``K`` checkpoints (the rolling set) and, of those leaving the rolling
set, one every ``P`` hours (persistent: ``keep_checkpoint_every_n_hours`` of TensorFlow's
CheckpointManager). With a checkpoint every ``T = τ + δ`` wall hours (τ the interval of progress, δ the
pause) and ``L/T = m + f`` (m whole, f the fraction), the checkpoints captured between the corruption
and its detection number m or m + 1, so the one before the corruption is still in the rolling set when
m + 1 ≤ K − 1 always, when m = K − 1 with probability 1 − f, when m ≥ K never. A rollback then loses,
in wall hours of work to redo (the corruption's phase b uniform on [0, T)):

* the checkpoint before it retained: ``L + b`` (mean L + T/2);
* not retained: back to the newest persistent checkpoint before the corruption, ``L + u`` with u
  uniform on [0, S), S = ⌈P/T⌉·T the spacing of persistent checkpoints (mean L + S/2); without
  persistent checkpoints the whole run (infinite here).

So E[loss | L] = L + T/2 (m ≤ K − 2); L + (1 − f)²·T/2 + f·S/2 (m = K − 1); L + S/2 (m ≥ K), averaged
over the latency's distribution (given as samples). Shorter intervals make the rolling set span less
than the latency (then every SDC falls back to a persistent checkpoint): the expected cost is not convex
in τ and jumps at T = L/j, so Daly's closed form does not apply; the optimum is found numerically
(:func:`optimal_interval_h`).

The expected wall time per hour of work combines Daly's exact form for the crashes (rate λ_c, restart R:
``D(τ) = M·e^(R/M)·(e^((τ+δ)/M) − 1)/τ``, M = 1/λ_c) with SDC rollbacks (rate λ_s per wall hour, each
costing E[loss] + R of wall time, a share s = λ_s·(E[loss] + R) of all wall time): ``W(τ) = D(τ)/(1 − s)``
(infinite when s ≥ 1); ETTR = 1/W. Without SDC (λ_s = 0) this is Daly's, and the optimum is Daly's
interval. First-order in the SDC share: a crash during a rollback's redo, or a second corruption, is not
modelled. Hours throughout.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from twin.physics import closed_forms as cf

__all__ = ["sdc_rollback_loss_h", "wall_per_work", "ettr", "optimal_interval_h", "GRID_POINTS"]

GRID_POINTS = 400
"""Points of the logarithmic grid :func:`optimal_interval_h` searches before refining."""
MAX_JUMPS = 5000
"""At most this many jumps of the persistent checkpoints' spacing are added to the grid."""


def sdc_rollback_loss_h(period_h: float, latency_h: float | Sequence[float], keep_last: int,
                        persistent_every_h: float | None) -> float:
    """Expected wall hours of work an SDC rollback loses (the module docstring), for checkpoints every
    ``period_h`` wall hours (interval + pause), a detection latency (hours; several values: their mean
    loss, equally weighted), ``keep_last`` checkpoints in the rolling set and a persistent one every
    ``persistent_every_h`` hours (None: none, an unretained rollback loses everything: inf)."""
    T = float(period_h)
    lats = [float(latency_h)] if isinstance(latency_h, (int, float)) else [float(x) for x in latency_h]
    if not T > 0 or not lats:
        return math.inf
    S = math.inf if persistent_every_h is None else max(1, math.ceil(persistent_every_h / T - 1e-12)) * T
    total = 0.0
    for L in lats:  # noqa: N806 (the latency L of the module docstring)
        x = max(L, 0.0) / T
        m = math.floor(x)
        f = x - m
        if m <= keep_last - 2:
            loss = L + T / 2.0
        elif m == keep_last - 1:
            loss = L + (1.0 - f) ** 2 * T / 2.0 + (f * S / 2.0 if f > 0 else 0.0)
        else:
            loss = L + S / 2.0
        total += loss
    return total / len(lats)


def wall_per_work(interval_h: float, pause_h: float, restart_h: float, crash_rate_per_h: float,
                  sdc_rate_per_h: float, latency_h: float | Sequence[float], keep_last: int,
                  persistent_every_h: float | None) -> float:
    """Expected wall hours per hour of work, W(τ) = D(τ)/(1 − s) (the module docstring); inf when the
    SDC share s reaches 1 or the interval is not positive."""
    tau = float(interval_h)
    if not tau > 0:
        return math.inf
    if crash_rate_per_h > 0:
        d = float(cf.daly_expected_wall_time_h(1.0, tau, pause_h, restart_h, 1.0 / crash_rate_per_h))
    else:
        d = (tau + pause_h) / tau
    if sdc_rate_per_h <= 0:
        return d
    s = sdc_rate_per_h * (sdc_rollback_loss_h(tau + pause_h, latency_h, keep_last, persistent_every_h) + restart_h)
    return d / (1.0 - s) if s < 1.0 else math.inf


def ettr(interval_h: float, pause_h: float, restart_h: float, crash_rate_per_h: float, sdc_rate_per_h: float,
         latency_h: float | Sequence[float], keep_last: int, persistent_every_h: float | None) -> float:
    """Expected share of wall time turned into kept work, 1/W(τ) (0 when W is infinite)."""
    w = wall_per_work(interval_h, pause_h, restart_h, crash_rate_per_h, sdc_rate_per_h, latency_h, keep_last,
                      persistent_every_h)
    return 1.0 / w if math.isfinite(w) else 0.0


def search_bounds_h(pause_h: float, crash_rate_per_h: float, sdc_rate_per_h: float,
                    latency_h: float | Sequence[float]) -> tuple[float, float]:
    """The interval range :func:`optimal_interval_h` searches, hours: from 1/100 to 100 × Daly's
    optimum for all interruptions together, widened to twice the longest latency."""
    rate = crash_rate_per_h + sdc_rate_per_h
    lats = [float(latency_h)] if isinstance(latency_h, (int, float)) else [float(x) for x in latency_h]
    tau_d = float(cf.daly_interval_h(max(pause_h, 1e-9), 1.0 / rate)) if rate > 0 else 1.0
    lo = max(tau_d / 100.0, 1e-6)
    hi = max(100.0 * tau_d, 2.0 * max(lats, default=0.0), 2.0 * lo)
    return lo, hi


def optimal_interval_h(pause_h: float, restart_h: float, crash_rate_per_h: float, sdc_rate_per_h: float,
                       latency_h: float | Sequence[float], keep_last: int,
                       persistent_every_h: float | None) -> float:
    """The checkpoint interval (hours of progress) that minimises :func:`wall_per_work`.

    Without SDC (``sdc_rate_per_h`` 0) Daly's closed form. With it, numerically: a logarithmic grid
    of :data:`GRID_POINTS` over :func:`search_bounds_h`, the points just past each jump of the cost
    added (T = L/j, j = 1..K, where one checkpoint fewer falls in the latency; T = P/j, where the spacing
    of persistent checkpoints ⌈P/T⌉·T drops), then the best point refined by a bounded scalar search
    between its neighbours."""
    rate = crash_rate_per_h + sdc_rate_per_h
    if not rate > 0:
        return math.inf
    if sdc_rate_per_h <= 0:
        return float(cf.daly_interval_h(pause_h, 1.0 / crash_rate_per_h))
    from scipy.optimize import minimize_scalar

    def cost(tau: float) -> float:
        return wall_per_work(tau, pause_h, restart_h, crash_rate_per_h, sdc_rate_per_h, latency_h, keep_last,
                             persistent_every_h)

    lo, hi = search_bounds_h(pause_h, crash_rate_per_h, sdc_rate_per_h, latency_h)
    grid = list(np.geomspace(lo, hi, GRID_POINTS))
    lats = [float(latency_h)] if isinstance(latency_h, (int, float)) else [float(x) for x in latency_h]
    jumps = [L / j for L in lats for j in range(1, keep_last + 1)]  # one checkpoint fewer in the latency
    if persistent_every_h is not None:  # one checkpoint fewer between persistent ones (S = ⌈P/T⌉·T drops)
        P = persistent_every_h
        jumps += [P / j for j in range(1, min(MAX_JUMPS, math.ceil(P / lo) + 1) + 1)]
    for T in jumps:
        t = T * (1.0 + 1e-9) - pause_h
        if lo < t < hi:
            grid.append(t)
    grid.sort()
    costs = [cost(t) for t in grid]
    i = int(np.argmin(costs))
    best_t, best_c = grid[i], costs[i]
    a, b = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
    if b > a:
        res = minimize_scalar(cost, bounds=(a, b), method="bounded", options={"xatol": 1e-9 * b})
        if res.success and float(res.fun) < best_c:
            best_t = float(res.x)
    return float(best_t)
