"""Benchmark: what the compiled kernels (twin/kernels.py, issue 41) add to a run's start-up.

Each figure is the CPU time (user + system) of a separate program in a fresh process, with numba's cache in a fresh temporary folder
(``NUMBA_CACHE_DIR``) for the "cold" runs and that folder again for the "cached" ones:

- ``startup.baseline_cold_s`` / ``baseline_cached_s``: ``twin run scenarios/baseline.yaml --quiet``
  (start-up and the year included; the baseline has no thermal model, so no kernel is compiled:
  what numba adds there is its import);
- ``startup.air_cold_s`` / ``air_cached_s``: the same for 30 days of the frozen air hall, where every
  kernel is compiled (cold) or loaded from the cache (cached); ``startup.compile_s`` is their
  difference (target: at most 3 s more than before the kernels);
- ``startup.numba_import_s``: ``import numba`` on top of numpy in a fresh interpreter (the cost every
  process pays, Monte-Carlo and Dask workers included; target ≤ 0.5 s).
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_CLI = "import sys; from twin.cli import main; sys.exit(main(sys.argv[1:]))"  # `twin`, this tree's package


def _run(args: list[str], cache: str) -> float:
    """CPU seconds (user + system) of the program ``args``: robust on a shared machine, where wall time
    is not."""
    env = dict(os.environ, NUMBA_CACHE_DIR=cache)
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(args, cwd=ROOT, env=env, check=True, capture_output=True)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def _twin_run(scenario: str, cache: str, sets: list[str]) -> float:
    with tempfile.TemporaryDirectory() as out:
        args = [sys.executable, "-c", _CLI, "run", scenario, "--quiet", "--results", out]
        for s in sets:
            args += ["--set", s]
        return _run(args, cache)


def run(reps: int = 3) -> dict[str, float]:
    """Medians of ``reps`` cold and cached runs (each cold run in its own fresh cache folder)."""
    out: dict[str, list[float]] = {k: [] for k in ("baseline_cold_s", "baseline_cached_s", "air_cold_s",
                                                   "air_cached_s", "numba_import_s")}
    air = str(ROOT / "benchmarks" / "halls" / "air.yaml")
    for _ in range(reps):
        with tempfile.TemporaryDirectory() as cache:
            out["baseline_cold_s"].append(_twin_run("scenarios/baseline.yaml", cache, []))
            out["baseline_cached_s"].append(_twin_run("scenarios/baseline.yaml", cache, []))
        with tempfile.TemporaryDirectory() as cache:
            out["air_cold_s"].append(_twin_run(air, cache, ["horizon_days=30"]))
            out["air_cached_s"].append(_twin_run(air, cache, ["horizon_days=30"]))
            t_np = _run([sys.executable, "-c", "import numpy"], cache)
            t_nb = _run([sys.executable, "-c", "import numpy, numba"], cache)
            out["numba_import_s"].append(t_nb - t_np)
    res = {f"startup.{k}": statistics.median(v) for k, v in out.items()}
    res["startup.compile_s"] = res["startup.air_cold_s"] - res["startup.air_cached_s"]
    return res


if __name__ == "__main__":
    for k, v in run().items():
        print(f"{k:32s} {v:8.3f}")
