"""`python -m benchmarks.bench_rare`: what `twin rare` buys against plain Monte Carlo (issue 47).

Two systems with closed forms, each through the simulator (`twin.experiment.rare.run_rare`, serial):

- AvailSim4's 2-of-4 rare-event example (2 of 4 units, exponential MTTF 15 h, 1 h, no repair),
  P = 4p³(1 − p) + p⁴ = 0.0010211;
- a repairable 1-of-2 pair (MTTF 2,000 h, exponential repair of 2 h, hot-swapped), P(both down within
  2 h) from its Markov chain (≈ 7e-7).

Reported: the estimate and its interval, ESS, relative half-width, CPU per biased and per plain
replication (measured), the work-normalised variances and their ratio (the gain), and how many plain
replications the same interval would need.

`python -m benchmarks.bench_rare --peers [RUNS]`: also AvailSim4's importance splitting on its own 2-of-4
example (the workbooks its package ships for its test ``convergence_rare_event``: ``2oo4_system.xlsx``
and ``2oo4_restart_simulation.xlsx``, ``SPLITTING_MONTE_CARLO``, 1,000 simulations), run RUNS times
(default 10) with seeds 1..RUNS as its own program (AvailSim4 installed as for benchmarks/peers.py,
never imported): the variance of its estimates across the runs times its CPU per run is its
work-normalised variance. Its CPU per run is counted without its start-up (the CPU of the same
program on its plain Monte-Carlo workbook cut to one simulation), as twin's per replication is.
Its plain Monte Carlo (``10_000_MC_simulation.xlsx``, once) gives the CPU of its plain simulation.
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


SETSEED = r'''
import sys
from openpyxl import load_workbook
wb = load_workbook(sys.argv[1])
ws = wb["SIMULATION"]
head = [c.value for c in ws[1]]
if sys.argv[3] != "-":
    ws.cell(row=2, column=head.index("SEED") + 1, value=int(sys.argv[3]))
if sys.argv[4] != "-":
    for col in ("MIN_NUMBER_OF_SIMULATION", "MAX_NUMBER_OF_SIMULATION"):
        ws.cell(row=2, column=head.index(col) + 1, value=int(sys.argv[4]))
wb.save(sys.argv[2])
'''
"""Run with AvailSim4's Python: a copy of a simulation workbook with another SEED and/or simulation count."""

ESTIMATE = r'''
import glob, sys
from openpyxl import load_workbook
wb = load_workbook(glob.glob(sys.argv[1] + "/*.xlsx")[0], read_only=True)
rows = list(wb["RESULTS"].iter_rows(values_only=True))
head = rows[0]
print(sum(dict(zip(head, r))["_MEAN_OCCURRENCES"] for r in rows[1:]
          if r[0] == "DUMB_0_1" and r[2] in ("FAILED", "BLIND_FAILED")))
'''
"""Run with AvailSim4's Python: the system's failure probability from a result folder (the row its test reads:
component DUMB_0_1, status BLIND_FAILED, _MEAN_OCCURRENCES)."""


def availsim4_splitting(runs: int, work: Path) -> dict[str, Any] | None:
    """AvailSim4's splitting on its own 2-of-4 example, ``runs`` seeds: estimates, CPU per run (start-up
    removed) and its work-normalised variance; None without AvailSim4."""
    import subprocess

    from benchmarks.peers import _timed, availsim4_command

    cmd = availsim4_command()
    if cmd is None:
        return None
    py = str(cmd.parent / "python")
    where = subprocess.run([py, "-c", "import availsim4core, os; print(os.path.dirname(availsim4core.__file__))"],
                           capture_output=True, text=True, check=True).stdout.strip()
    inp = Path(where) / "test" / "E2E" / "input" / "convergence_rare_event"
    (work / "setseed.py").write_text(SETSEED)
    (work / "estimate.py").write_text(ESTIMATE)

    def run(sim: Path, name: str) -> tuple[float, float]:
        out = work / name
        _, cpu = _timed([str(cmd), "--system", str(inp / "2oo4_system.xlsx"), "--simulation", str(sim),
                         "--output_folder", str(out)], work)
        p = float(subprocess.run([py, str(work / "estimate.py"), str(out)], capture_output=True, text=True,
                                 check=True).stdout)
        return p, cpu

    one = work / "mc1.xlsx"
    subprocess.run([py, str(work / "setseed.py"), str(inp / "10_000_MC_simulation.xlsx"), str(one), "-", "1"], check=True)
    _, startup_cpu = run(one, "startup")
    mc_p, mc_cpu = run(inp / "10_000_MC_simulation.xlsx", "mc")
    est, cpu = [], []
    for seed in range(1, runs + 1):
        sim = work / f"split-{seed}.xlsx"
        subprocess.run([py, str(work / "setseed.py"), str(inp / "2oo4_restart_simulation.xlsx"), str(sim), str(seed), "-"],
                       check=True)
        p, c = run(sim, f"split-{seed}")
        est.append(p)
        cpu.append(c - startup_cpu)
    var = float(np.var(est, ddof=1))
    net = float(np.mean(cpu))
    return {"estimates": est, "mean": float(np.mean(est)), "sd": math.sqrt(var), "cpu_s": net, "startup_cpu_s": startup_cpu,
            "wnv": var * net, "mc_p": mc_p, "mc_cpu_per_sim_s": (mc_cpu - startup_cpu) / 10_000}


def peers(runs: int) -> int:
    from twin.experiment.rare import run_rare
    from twin.scenario.loader import load_dict

    truth = systems()[0][2]
    with tempfile.TemporaryDirectory() as tmp:
        a = availsim4_splitting(runs, Path(tmp))
        if a is None:
            print("AvailSim4 is not installed (.venv-availsim4 or $AVAILSIM4, see benchmarks/README.md)")
            return 2
        r = run_rare(load_dict(systems()[0][1]), "nodes_down", {}, 2000, folder=Path(tmp) / "twin", plain_reps=200,
                     echo=lambda s: None)
    e = r.estimate
    avs_plain_wnv = truth * (1 - truth) * a["mc_cpu_per_sim_s"]
    print(f"AvailSim4 splitting, {runs} runs of 1,000 simulations: mean {a['mean']:.4g} (sd across runs {a['sd']:.3g}; "
          f"truth {truth:.4g}); estimates " + ", ".join(f"{x:.4g}" for x in a["estimates"]))
    print(f"AvailSim4 CPU per run {a['cpu_s']:.3f} s without its start-up ({a['startup_cpu_s']:.2f} s); "
          f"work-normalised variance {a['wnv']:.3g}; its plain MC: {a['mc_cpu_per_sim_s'] * 1e3:.3f} ms per simulation, "
          f"p(1-p) x that = {avs_plain_wnv:.3g}: its splitting's gain over its own plain MC x{avs_plain_wnv / a['wnv']:.3g}")
    print(f"twin rare, 2000 replications: {e.p:.4g} [{e.ci_low:.4g}, {e.ci_high:.4g}], work-normalised variance "
          f"{e.wnv:.3g} (gain x{e.gain:.3g} over twin's plain MC)")
    print(f"twin's importance sampling against AvailSim4's splitting: work-normalised variance ratio "
          f"x{a['wnv'] / e.wnv:.3g} (AvailSim4's over twin's)")
    return 0


def main() -> int:
    if "--peers" in sys.argv:
        rest = sys.argv[sys.argv.index("--peers") + 1:]
        return peers(int(rest[0]) if rest else 10)
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
