"""README's Decision 1 under uncertainty on 2 local workers (issue 46, full run only).

``twin decide scenarios/air.yaml scenarios/liquid.yaml scenarios/evaporative.yaml --draws 32 --reps 2
--workers 2`` (192 year-runs of the 1,024-GPU halls, 28 uncertain inputs) into a fresh results folder,
and its analysis. Reported:

- ``decide.wall_s``: wall seconds of the whole study, analysis included (information: it depends on
  the machine);
- ``decide.runs`` and ``decide.cpu_per_run_s``: CPU seconds (this process and its reaped workers)
  per run;
- ``decide.cpu_over_wall``: those CPU seconds over the wall time, the cores the study kept busy
  (target ≥ 1.6 of 2: the experiment driver's batching and the analysis leave the cores little idle
  time; it stays meaningful when other jobs share the machine, where the wall time does not);
- ``decide.analysis_s``: wall seconds of the analysis alone (P(best), EVPI, EVPPI, shares) on the
  stored runs, measured by a second call that computes nothing.

``python -m benchmarks.bench_decide [--draws D]`` runs it alone.
"""

from __future__ import annotations

import argparse
import json
import resource
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OPTIONS = [str(ROOT / "scenarios" / f"{n}.yaml") for n in ("air", "liquid", "evaporative")]


def _cpu_s() -> float:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def run(draws: int = 32, reps: int = 2, workers: int = 2) -> dict[str, float]:
    from twin.experiment.uncertain import run_decide

    with tempfile.TemporaryDirectory() as tmp:
        c0, t0 = _cpu_s(), time.perf_counter()
        res = run_decide(OPTIONS, objective="cost.per_useful_gpu_hour", draws=draws, reps=reps, workers=workers,
                         results_root=tmp, label="bench", echo=lambda s: None)
        wall, cpu = time.perf_counter() - t0, _cpu_s() - c0
        t1 = time.perf_counter()
        again = run_decide(OPTIONS, objective="cost.per_useful_gpu_hour", draws=draws, reps=reps, workers=workers,
                           results_root=tmp, label="bench", echo=lambda s: None)
        analysis = time.perf_counter() - t1
        assert again.computed == 0 and again.decision.recommended == res.decision.recommended
    runs = draws * reps * len(OPTIONS)
    return {"decide.wall_s": wall, "decide.runs": float(runs), "decide.cpu_per_run_s": cpu / runs,
            "decide.cpu_over_wall": cpu / wall, "decide.analysis_s": analysis}


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_decide")
    ap.add_argument("--draws", type=int, default=32)
    ap.add_argument("--reps", type=int, default=2)
    a = ap.parse_args()
    print(json.dumps(run(a.draws, a.reps), indent=2))


if __name__ == "__main__":
    main()
