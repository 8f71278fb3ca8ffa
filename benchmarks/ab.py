"""`python -m benchmarks.ab REF_A REF_B [--reps 5] [--scenario NAME ...]`: is tree B slower than tree A?

A refactor must be no slower than the code it replaces (issue 21: median of 5 alternating runs of
main and the branch on ``pretrain-16k``, ``mixed-1k`` and ``air.yaml``, ratio at most 1.05). Each
run is a fresh interpreter with ``PYTHONPATH`` set to one source tree, so the two trees never share
imported modules; runs alternate A, B, A, B, ... so drifting machine load falls on both. The time
measured is the simulation loop of one replication (build and output excluded), as
``benchmarks.bench_core.model_loop`` measures it. Prints the median seconds of each tree and the
ratio B / A; exits 1 when a ratio exceeds ``--gate`` (default 1.05).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

SCENARIOS = ["pretrain-16k", "mixed-1k", "air"]

def loop_seconds(tree: Path, scenario: str) -> float:
    """Loop time of one replication of ``scenario`` with the twin package of ``tree``, s."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    code = (
        "import json, sys\n"
        "from benchmarks.bench_core import model_loop\n"
        "print(json.dumps(model_loop(f\"scenarios/{sys.argv[1]}.yaml\")))\n"
    )
    out = subprocess.run([sys.executable, "-c", code, scenario], env=env, cwd=tree, check=True,
                         capture_output=True, text=True).stdout
    return float(json.loads(out.strip().splitlines()[-1])["loop_s"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.ab", description=__doc__.split("\n")[0])
    ap.add_argument("tree_a", type=Path, help="source tree of the reference (e.g. a checkout of main)")
    ap.add_argument("tree_b", type=Path, help="source tree to judge (e.g. a branch's worktree)")
    ap.add_argument("--reps", type=int, default=5, help="alternating runs per tree (median taken)")
    ap.add_argument("--scenario", action="append", help="bundled scenario name (repeatable)")
    ap.add_argument("--gate", type=float, default=1.05, help="largest acceptable ratio B / A")
    args = ap.parse_args(argv)
    worst = 0.0
    for name in args.scenario or SCENARIOS:
        a: list[float] = []
        b: list[float] = []
        for _ in range(args.reps):
            a.append(loop_seconds(args.tree_a.resolve(), name))
            b.append(loop_seconds(args.tree_b.resolve(), name))
        ma, mb = statistics.median(a), statistics.median(b)
        worst = max(worst, mb / ma)
        print(f"{name:14s} A {ma:7.3f} s  B {mb:7.3f} s  B/A {mb / ma:5.3f}  (medians of {args.reps})")
    print(f"worst ratio {worst:.3f} (gate {args.gate})")
    return 0 if worst <= args.gate else 1


if __name__ == "__main__":
    sys.exit(main())
