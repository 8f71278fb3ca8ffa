"""Constraints in ``twin decide`` (issue 46, Decision 2 under uncertainty): how likely each option is
to meet targets such as ``node_availability>=0.998`` when the inputs are not known.

A constraint under uncertain inputs is a **chance constraint**: option k meets it in the world θ when
its *expected* metric given θ, c_k(θ) = E[C_k | θ] (the replication noise averaged out), is on the
right side of the bound; P_feasible(k) is the share of the plausible worlds where it meets every
constraint. An option is *admissible* when P_feasible ≥ the confidence (default 0.95: "meets the
target in at least 95 % of the plausible worlds"), and the decision is made among the admissible
options only (:mod:`twin.experiment.uncertain`).

The estimator, as for the objective (:mod:`twin.experiment.value_of_information`): the inner means
c̄_dk = c_k(θ_d) + ε_dk are noisy, and near the bound the noise would misclassify draws; so c_k(θ) is
regressed on the input uniforms by the same Gaussian-process metamodel (nugget at least the pooled
replication noise of the inner mean), and a draw is feasible when the posterior mean is. A metric
that does not vary between draws and replications (every run the same) is taken as it is. The
interval (95 %): B joint samples, each a draw of every metamodel from its posterior at the D points
evaluated on one bootstrap resample of the draws; percentiles of P_feasible.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import pandas as pd

from twin.experiment.decide import Constraint
from twin.experiment.value_of_information import LEVEL, SAMPLES, _interval, _sampler, fit_gp


Sampler = Callable[[np.random.Generator], np.ndarray]
"""One draw of an option's constraint metric at every world (a GP posterior, or the means themselves)."""


def _constant(y: np.ndarray) -> Sampler:
    return lambda r: y


def _meets(c: np.ndarray, con: Constraint) -> np.ndarray:
    return c >= con.threshold if con.op == ">=" else c <= con.threshold


def feasibility(C: Sequence[np.ndarray], constraints: Sequence[Constraint], U: np.ndarray, options: Sequence[str],
                seed: int = 0, samples: int = SAMPLES, level: float = LEVEL) -> pd.DataFrame:
    """P_feasible per option (module doc) from ``C[j]`` (D, K, R), the values of constraint ``j``'s metric,
    at input uniforms ``U`` (D, P). Columns: option, p_feasible, p_feasible_low, p_feasible_high and, per
    constraint, ``p:<constraint>`` (the share of worlds meeting that one alone)."""
    D, K, R = C[0].shape
    U = np.asarray(U, dtype=float).reshape(D, -1)
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(0x46, 3)))
    means: list[list[np.ndarray]] = []
    samplers: list[list[Sampler]] = []
    for Cj in C:
        m = Cj.mean(axis=2)
        row_means: list[np.ndarray] = []
        row_samplers: list[Sampler] = []
        for k in range(K):
            y = m[:, k]
            noise = float(Cj[:, k, :].var(axis=1, ddof=1).mean() / R) if R > 1 else 0.0
            if float(np.ptp(Cj[:, k, :])) <= 1e-12 * max(1.0, float(np.abs(y).max())) or U.shape[1] == 0:
                row_means.append(y)
                row_samplers.append(_constant(y))
                continue
            gp = fit_gp(U, y, noise)
            mu, cov = gp.posterior()
            row_means.append(mu)
            row_samplers.append(_sampler(mu, cov))
        means.append(row_means)
        samplers.append(row_samplers)

    def share(values: list[list[np.ndarray]], idx: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        ok_all = np.ones((D, K), dtype=bool)
        each = np.zeros((len(constraints), K))
        for j, con in enumerate(constraints):
            ok = np.column_stack([_meets(values[j][k], con) for k in range(K)])
            if idx is not None:
                ok = ok[idx]
            each[j] = ok.mean(axis=0)
            ok_all &= ok
        return ok_all.mean(axis=0), each

    p, each = share(means, None)
    ps = np.zeros((samples, K))
    for b in range(samples):
        idx: np.ndarray = np.asarray(rng.integers(0, D, D))
        drawn = [[f(rng) for f in row] for row in samplers]
        ps[b] = share(drawn, idx)[0]
    lo, hi = _interval(ps, level)
    out = pd.DataFrame({"option": list(options), "p_feasible": p, "p_feasible_low": lo, "p_feasible_high": hi})
    for j, con in enumerate(constraints):
        out[f"p:{con}"] = each[j]
    return out


def admissible(table: pd.DataFrame, confidence: float) -> list[int]:
    """Indices of the options whose P_feasible is at least ``confidence``."""
    return [i for i, p in enumerate(table["p_feasible"]) if p >= confidence - 1e-12]


__all__ = ["admissible", "feasibility"]
