"""`python -m benchmarks.bench_rare`: what `twin rare` buys against plain Monte Carlo (issue 47).

Two systems with closed forms, each through the simulator (`twin.experiment.rare.run_rare`, serial):

- AvailSim4's 2-of-4 rare-event example (2 of 4 units, exponential MTTF 15 h, 1 h, no repair),
  P = 4p³(1 − p) + p⁴ = 0.0010211;
- a repairable 1-of-2 pair (MTTF 2,000 h, exponential repair of 2 h, hot-swapped), P(both down within
  2 h) from its Markov chain (≈ 7e-7).

Reported: the estimate and its interval, ESS, relative half-width, CPU per biased and per plain
replication (measured), the work-normalised variances and their ratio (the gain), and how many plain
replications the same interval would need. AvailSim4's importance splitting is not compared: AvailSim4 is
not installed in this repository's benchmark set-up (`.venv-availsim4`, benchmarks/peers.py); with it,
its `convergence_rare_event` example is the same 2-of-4 system.
"""

from __future__ import annotations

import math
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from scipy.linalg import expm


def _k_of_n(horizon_h: float, count: int, required: int, mttf_h: float, repair: Any) -> dict[str, Any]:
    unit: dict[str, Any] = {"count": count, "required": required, "effect": "redundant",
                            "failure": {"dist": "exponential", "mean_h": mttf_h}, "repair": repair}
    return {"name": f"{required}-of-{count}", "seed": 3, "horizon_days": horizon_h / 24,
            "cluster": {"racks": 1, "nodes_per_rack": 1, "node": {"gpus": 1, "parts": {"unit": unit}}},
            "maintenance": {"detection": {"dist": "fixed", "value_h": 0}, "crews": {"t": {"count": 4}}}}


def systems() -> list[tuple[str, dict[str, Any], float, int]]:
    p = 1 - math.exp(-1 / 15)
    lam, mu, h = 5e-4, 0.5, 2.0
    q = np.array([[-2 * lam, 2 * lam, 0.0], [mu, -(mu + lam), lam], [0.0, 0.0, 0.0]])
    pair = _k_of_n(h, 2, 1, 1 / lam, {"time": {"dist": "exponential", "mean_h": 1 / mu}, "hot_swap": True})
    return [("2-of-4 (AvailSim4 example)", _k_of_n(1.0, 4, 2, 15.0, "none"), 4 * p**3 * (1 - p) + p**4, 2000),
            ("1-of-2 pair with repair", pair, float(expm(q * h)[0, 2]), 4000)]


def main() -> int:
    from twin.experiment.rare import run_rare
    from twin.scenario.loader import load_dict

    print("| system | truth | estimate [95 % CI] | reps | ESS | rel. half-width | CPU ms biased / plain | "
          "gain (plain WNV / WNV) | plain reps for the same CI |")
    print("|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name, doc, truth, reps in systems():
            r = run_rare(load_dict(doc), "nodes_down", {}, reps, folder=Path(tmp) / name[:5], plain_reps=200,
                         echo=lambda s: None)
            e = r.estimate
            print(f"| {name} | {truth:.4g} | {e.p:.4g} [{e.ci_low:.4g}, {e.ci_high:.4g}] | {reps} | {e.ess:.0f} | "
                  f"{e.rel_half_width:.3f} | {e.cpu_s_per_rep * 1e3:.3f} / {e.plain_cpu_s_per_rep * 1e3:.3f} | "
                  f"{e.gain:.3g} | {e.plain_reps_same_ci:.3g} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
