"""Traces and long queues (issue 22): a million-row trace over a year through `twin run`, and the
scheduler's operations per event at queue lengths 1,000 and 100,000.

The trace is generated at run time (never committed): 1,000,000 jobs submitted uniformly over a year
to the 1,024-GPU baseline cluster (its own background jobs removed), 8/16/32 GPUs (70/20/10 %),
lognormal work (median 0.4 h, sigma 1): about 90 % of the GPU-hours, so the queue ebbs and grows.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent


def write_trace(path: Path, rows: int, horizon_h: float = 8760.0, seed: int = 11) -> None:
    """The synthetic trace of this module's docstring, ``rows`` rows, as CSV."""
    r = np.random.default_rng(seed)
    pd.DataFrame({"submit_h": np.sort(r.uniform(0.0, horizon_h, rows)).round(4),
                  "gpus": r.choice([8, 16, 32], rows, p=[0.7, 0.2, 0.1]),
                  "duration_h": np.maximum(0.01, r.lognormal(np.log(0.4), 1.0, rows)).round(4)}
                 ).to_csv(path, index=False)


_CHILD = """
import json, resource, sys, time
from twin.cli import main
t0 = time.perf_counter()
code = main(sys.argv[1:])
print(json.dumps({"code": code, "wall_s": time.perf_counter() - t0,
                  "peak_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""


def trace_run(rows: int = 1_000_000) -> dict[str, float]:
    """`twin run` (load with the chunked read, simulate, write every table and figure) of a year with
    a ``rows``-row trace, in a fresh process: wall time, peak RSS, events."""
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        write_trace(d / "trace.csv", rows)
        (d / "sc.yaml").write_text(
            f"extends: {ROOT / 'scenarios/baseline.yaml'}\nname: trace-{rows}\nhorizon_days: 365\n"
            "workload:\n  jobs: []\n  synthetic: null\n  trace: {file: trace.csv}\n")
        args = [sys.executable, "-c", _CHILD, "run", str(d / "sc.yaml"), "--results", str(d / "r"), "--quiet",
                "--allow-path", str(ROOT / "scenarios")]
        out = subprocess.run(args, capture_output=True, text=True, check=True, cwd=d)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        if r["code"] != 0:
            raise RuntimeError(f"twin run of the {rows}-row trace exited {r['code']}: {out.stderr[-2000:]}")
        (summary,) = (d / "r").glob("*/*/summary.json")
        events = json.loads(summary.read_text())["events_processed"]
    k = f"trace{rows // 1000}k"
    return {f"{k}.wall_s": r["wall_s"], f"{k}.peak_rss_mib": r["peak_rss_kb"] / 1024, f"{k}.events": float(events)}


def queue_ops() -> dict[str, float]:
    """Scheduler operations of one pass at a queue of 1,000 and of 100,000 jobs (the scenario of
    ``tests/test_trace_scale.py``: a blocked head, the rest too long to backfill), and their ratio."""
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        from test_trace_scale import ops_per_event
    finally:
        sys.path.pop(0)
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in (1_000, 100_000):
            t0 = time.perf_counter()
            ops, _ = ops_per_event(Path(tmp), n)
            out[f"queue.{n}.ops_per_event"] = float(ops)
            out[f"queue.{n}.build_s"] = time.perf_counter() - t0
    out["queue.ops_ratio_100k_1k"] = out["queue.100000.ops_per_event"] / out["queue.1000.ops_per_event"]
    return out
