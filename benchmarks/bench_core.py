"""Event cost against bare SimPy, scaling with GPU count, and the headline scenario."""

from __future__ import annotations

import functools
import json
import math
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import simpy

ROOT = Path(__file__).resolve().parent.parent


def bare_simpy_s_per_event(n_procs: int = 1000, events: int = 300_000) -> float:
    """Seconds per timeout event of ``n_procs`` SimPy processes looping on timeouts."""
    env = simpy.Environment()

    def proc(env: simpy.Environment, d: float):
        while True:
            yield env.timeout(d)

    for i in range(n_procs):
        env.process(proc(env, 1.0 + i * 1e-4))
    until = events / n_procs
    t0 = time.perf_counter()
    env.run(until=until)
    dt = time.perf_counter() - t0
    n = sum(int(until // (1.0 + i * 1e-4)) for i in range(n_procs))
    return dt / n


def model_loop(scenario: str, overrides: list[str] | None = None) -> dict[str, float]:
    """Build, loop and output times and events of one replication."""
    from twin.scenario import load_scenario
    from twin.sim import Model

    sc = load_scenario(ROOT / scenario, overrides or []).scenario
    model = Model(sc, 0)
    model.run()
    res = model.result()
    return {"build_s": model.build_s, "loop_s": model.loop_s, "output_s": model.output_s,
            "events": float(model.events), "events_processed": float(res.events_processed)}


def event_cost(reps: int) -> dict[str, float]:
    out: dict[str, float] = {}
    ref = statistics.median(bare_simpy_s_per_event() for _ in range(reps))
    out["bare_simpy_us_per_event"] = ref * 1e6
    for name in ("pretrain-16k", "mixed-1k"):
        runs = [model_loop(f"scenarios/{name}.yaml") for _ in range(reps)]
        loop = statistics.median(r["loop_s"] for r in runs)
        ev = runs[0]["events"]
        out[f"{name}.events"] = ev
        out[f"{name}.loop_s"] = loop
        # the first build in a process hashes every component path; later ones (every further
        # replication of a Monte Carlo) reuse the cached digests: report both, the median is the latter
        out[f"{name}.build_first_s"] = runs[0]["build_s"]
        out[f"{name}.build_s"] = statistics.median(r["build_s"] for r in runs)
        out[f"{name}.output_s"] = statistics.median(r["output_s"] for r in runs)
        out[f"{name}.event_cost_ratio"] = (loop / ev) / ref
        out[f"{name}.build_over_loop"] = out[f"{name}.build_s"] / loop
        out[f"{name}.output_over_loop"] = out[f"{name}.output_s"] / loop
    return out


_CHILD = """
import json, resource, sys, time
from twin.scenario import load_scenario
from twin.sim import Model
sc = load_scenario(sys.argv[1], sys.argv[2:]).scenario
t0 = time.perf_counter()
m = Model(sc, 0)
m.run()
r = m.result()
wall = time.perf_counter() - t0
print(json.dumps({"wall_s": wall, "loop_s": m.loop_s, "build_s": m.build_s, "events": m.events,
                  "peak_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""


@functools.cache
def _air_nodes_per_rack() -> int:
    """Nodes per rack of ``benchmarks/halls/air.yaml`` (the frozen copy of ``scenarios/air.yaml``: 4 DGX
    H100-class at twin 0.7.0's rack power limit)."""
    from twin.scenario import load_scenario

    return int(load_scenario(ROOT / "benchmarks/halls/air.yaml").scenario.cluster.nodes_per_rack)


def one_size(gpus: int, days: float = 30.0) -> dict[str, float]:
    """Run the air-cooled baseline (``benchmarks/halls/air.yaml``, frozen at twin 0.8.1: every node part,
    fabric, power model of the costs, thermal model of the hall) scaled to ``gpus`` GPUs (8 per node, 8 nodes per rack, one air
    zone per 64 nodes as in the scenario; its racks as many nodes as the scenario's) in a fresh process."""
    npr = _air_nodes_per_rack()
    racks = gpus // (8 * npr)
    zones = max(1, racks * npr // 64)
    args = [sys.executable, "-c", _CHILD, str(ROOT / "benchmarks/halls/air.yaml"),
            f"cluster.racks={racks}", f"cooling.air.zones={zones}", f"horizon_days={days}"]
    out = subprocess.run(args, capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def scaling(sizes: list[int]) -> dict[str, float]:
    out: dict[str, float] = {}
    walls = []
    for g in sizes:
        r = one_size(g)
        walls.append(r["wall_s"])
        out[f"scale.{g}.wall_s"] = r["wall_s"]
        out[f"scale.{g}.events"] = float(r["events"])
        out[f"scale.{g}.peak_rss_mib"] = r["peak_rss_kb"] / 1024
        out[f"scale.{g}.kib_per_gpu"] = r["peak_rss_kb"] / g
    slope = float(np.polyfit(np.log(sizes), np.log(walls), 1)[0])
    out["scale.exponent"] = slope
    return out


def headline() -> dict[str, float]:
    t0 = time.perf_counter()
    r = model_loop("scenarios/pretrain-16k.yaml")
    return {"headline.pretrain16k.wall_s": time.perf_counter() - t0, "headline.pretrain16k.events": r["events"]}


def scale_sizes(quick: bool) -> list[int]:
    return [1024, 2048, 8192] if quick else [1024, 8192, 65536, 131072]


def is_finite(x: float) -> bool:
    return isinstance(x, float) and math.isfinite(x)
