"""`python -m benchmarks [--quick] [--out FILE]`: a table of ratios measured in one run, and JSON.

Targets (issue 10): event cost ≤ 3 × bare SimPy; build and output each under the loop time;
scaling exponent ≤ 1.1; thermal on/off ≤ 1.2; 2-worker Monte Carlo ≥ 1.8 × serial.
`--quick` (CI) uses sizes up to 8K GPUs and fails only on a regression beyond 2 × a target.
"""

from __future__ import annotations

import argparse
import importlib
import json
import platform
import time
from pathlib import Path

from benchmarks import bench_core

# (metric, target, direction): "le" means the value must be <= target
TARGETS = [
    ("pretrain-16k.event_cost_ratio", 3.0, "le"),
    ("mixed-1k.event_cost_ratio", 3.0, "le"),
    ("scale.exponent", 1.1, "le"),
    ("thermal.on_off_ratio", 1.2, "le"),
    ("montecarlo.speedup_2_workers", 1.8, "ge"),
]


def _numeric(d: dict, prefix: str = "") -> dict[str, float]:
    """Flatten a benchmark's result to its numeric leaves (nested dicts joined with dots)."""
    out: dict[str, float] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_numeric(v, key + "."))
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            out[key] = float(v)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks")
    ap.add_argument("--quick", action="store_true", help="CI size; fail only on a 2x regression")
    ap.add_argument("--out", default="benchmarks/out/results.json")
    args = ap.parse_args(argv)
    reps = 3 if args.quick else 5
    res: dict[str, float] = {}
    t0 = time.perf_counter()
    res.update(bench_core.event_cost(reps))
    res.update(bench_core.scaling(bench_core.scale_sizes(args.quick)))
    if not args.quick:
        res.update(bench_core.headline())
    for mod in ("benchmarks.bench_thermal", "benchmarks.bench_montecarlo"):
        try:
            m = importlib.import_module(mod)
        except ModuleNotFoundError as exc:
            if exc.name != mod:
                raise
            continue
        out = m.run(args.quick)
        if mod.endswith("bench_thermal"):
            res["thermal.on_off_ratio"] = float(out["ratio"])
            out = {f"thermal.{k}": v for k, v in out.items()}
        res.update(_numeric(out))
    res["total_s"] = time.perf_counter() - t0
    failed = []
    print(f"{'metric':45s} {'value':>12s} {'target':>10s}  verdict")
    for k in sorted(res):
        tgt = next((t for t in TARGETS if t[0] == k), None)
        v = res[k]
        verdict = ""
        if tgt is not None:
            _, target, d = tgt
            ok = v <= target if d == "le" else v >= target
            limit = target * 2 if d == "le" else target / 2
            regress = v > limit if d == "le" else v < limit
            verdict = "ok" if ok else ("REGRESSION" if regress else "above target")
            if regress:
                failed.append(k)
            print(f"{k:45s} {v:12.4g} {('<=' if d == 'le' else '>=') + format(target, 'g'):>10s}  {verdict}")
        else:
            print(f"{k:45s} {v:12.4g}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"machine": platform.platform(), "python": platform.python_version(),
                               "date": time.strftime("%Y-%m-%d"), "quick": args.quick, "results": res},
                              indent=2))
    if failed:
        print("ratio regressions beyond 2x target:", ", ".join(failed))
        return 1
    return 0
