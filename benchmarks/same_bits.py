"""`python -m benchmarks.same_bits TREE_A TREE_B [--reps 2] [--set K=V ...] [--scenario GLOB ...]`: did a
refactor move any result?

The golden tables (``tests/test_golden.py``) pin 26 bundled cases at one replication each. A refactor that
claims to move nothing should also leave every other bundled scenario, replication and setting bit for bit the
same: this runs every scenario of ``TREE_B/scenarios`` (``*.yaml`` and ``examples/**``; the same files for both
trees, so only the code differs) with each tree's ``twin`` in a fresh interpreter (``PYTHONPATH`` set to the
tree; the two trees run side by side, nothing is timed), hashes each run's metrics and every result table, and
prints the runs whose metrics or tables differ, with the first metrics that moved. A scenario one tree refuses
(a field it does not know, or a ``--set`` that does not apply to it) is compared by its error. Exits 1 when a
run differs, 0 when every run is the same bits. ``--set`` overrides apply to every scenario (e.g. ``seed=7``,
``cooling.air.supply_c=27`` to stress the air halls; scenarios the setting does not fit fail alike in both).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

_WORKER = r'''
import glob, hashlib, json, sys
from pathlib import Path
from twin.scenario import load_scenario
from twin.sim import Model
root, reps, sets, pats = Path(sys.argv[1]), int(sys.argv[2]), json.loads(sys.argv[3]), json.loads(sys.argv[4])
files = sorted({f for p in pats for f in glob.glob(str(root / p), recursive=True)})
for f in files:
    for rep in range(reps):
        rec = {"file": str(Path(f).relative_to(root)), "rep": rep}
        try:
            model = Model(load_scenario(Path(f), sets).scenario, rep)
            model.run()
            res = model.result()
            met = dict(sorted(res.metrics.items()))
            rec["metrics"] = hashlib.sha256(json.dumps(met, sort_keys=True, default=repr).encode()).hexdigest()
            rec["tables"] = {k: hashlib.sha256(res.tables[k].to_csv().encode()).hexdigest() for k in sorted(res.tables)}
            rec["values"] = {k: (v if isinstance(v, (int, float, str)) else repr(v)) for k, v in met.items()}
        except Exception as e:  # (a refusal is compared like a result)
            rec["error"] = f"{type(e).__name__}: {e}"[:300]
        print(json.dumps(rec), flush=True)
'''

PATTERNS = ["scenarios/*.yaml", "scenarios/examples/**/*.yaml"]


def _start(tree: Path, root: Path, reps: int, sets: list[str], patterns: list[str]) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(tree))
    return subprocess.Popen([sys.executable, "-c", _WORKER, str(root), str(reps), json.dumps(sets), json.dumps(patterns)],
                            env=env, cwd=tree, stdout=subprocess.PIPE, text=True)


def compare(a: dict[tuple[str, int], dict[str, Any]], b: dict[tuple[str, int], dict[str, Any]]) -> list[str]:
    """Lines naming each run whose result differs between the two trees (empty: the same bits everywhere)."""
    out = []
    for key in sorted(set(a) | set(b)):
        x, y = a.get(key), b.get(key)
        if x is None or y is None:
            out.append(f"{key[0]} rep {key[1]}: run by one tree only")
            continue
        if x.get("error") or y.get("error"):
            if x.get("error") != y.get("error"):
                out.append(f"{key[0]} rep {key[1]}: {x.get('error', 'ran')} | {y.get('error', 'ran')}")
            continue
        if x["metrics"] == y["metrics"] and x["tables"] == y["tables"]:
            continue
        moved = sorted(m for m in set(x["values"]) | set(y["values"]) if x["values"].get(m) != y["values"].get(m))
        tabs = sorted(t for t in set(x["tables"]) | set(y["tables"]) if x["tables"].get(t) != y["tables"].get(t))
        first = "; ".join(f"{m} {x['values'].get(m)!r} -> {y['values'].get(m)!r}" for m in moved[:3])
        out.append(f"{key[0]} rep {key[1]}: {len(moved)} metrics ({first}), tables {', '.join(tabs) or 'none'}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.same_bits", description=__doc__.split("\n")[0])
    ap.add_argument("tree_a", type=Path, help="source tree of the reference (e.g. a worktree of the last version)")
    ap.add_argument("tree_b", type=Path, help="source tree to judge (its scenarios are run by both)")
    ap.add_argument("--reps", type=int, default=2, help="replications of each scenario (default 2)")
    ap.add_argument("--set", action="append", default=[], dest="sets", help="KEY=VALUE for every scenario")
    ap.add_argument("--scenario", action="append", dest="patterns",
                    help="glob under TREE_B (repeatable; default every bundled scenario and example)")
    args = ap.parse_args(argv)
    a_tree, b_tree = args.tree_a.resolve(), args.tree_b.resolve()
    patterns = args.patterns or PATTERNS
    procs = [_start(t, b_tree, args.reps, args.sets, patterns) for t in (a_tree, b_tree)]
    runs: list[dict[tuple[str, int], dict[str, Any]]] = []
    for p in procs:
        out, _ = p.communicate()
        if p.returncode:
            print(f"the worker of one tree failed (exit {p.returncode})", file=sys.stderr)
            return 2
        recs = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        runs.append({(r["file"], r["rep"]): r for r in recs})
    diffs = compare(*runs)
    n = len(set(runs[0]) | set(runs[1]))
    for line in diffs:
        print(line)
    print(f"{n - len(diffs)} of {n} runs the same bits ({len(diffs)} differ)")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
