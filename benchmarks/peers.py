"""`python -m benchmarks --peers`: twin side by side with AvailSim4 (CERN's availability simulator).

AvailSim4 is GPL-3: twin never imports it and does not depend on it. It is installed in its own
virtual environment (benchmarks/README.md says how) and run as a separate program through its own
command line, as twin is (``python -m twin montecarlo``). Its input is Excel workbooks; they are
written, and its result workbook read, by the small scripts below run with *its* interpreter (its
environment has openpyxl; twin's need not).

The same systems, expressed identically: exponential lives, fixed repair times, detection at once
(AvailSim4: detectable failures), crews at least as many as units and unlimited spares (AvailSim4
has neither crews nor spares), hot-swapped units of a k-of-n group (a unit is repaired while the
group runs, as in AvailSim4):

- ``one-part``: one unit, MTTF 1,000 h, repair 10 h, a year;
- ``4-of-6``: six units of which four must work, MTTF 2,000 h, repair 24 h, a year;
- ``128-node``: 128 nodes, each 8 GPUs in series (MTTF 50,000 h, repair 8 h) and 4-of-6 PSUs
  (MTTF 100,000 h, repair 4 h), a year;
- ``2-of-4``: AvailSim4's own rare-event example (its package's ``convergence_rare_event``): 2 of 4
  units required, MTTF 15 h, a horizon of 1 h, no repair (AvailSim4 states it as a fixed repair of
  1,000 h, which never ends within the hour; twin as ``repair: none``). P(failed) = 4p³(1 − p) + p⁴,
  p = 1 − e^(−1/15).

Compared: the mean node availability (the root's, for a one-node system; ``2-of-4``: the share of
replications failed at the horizon). Agreement: the difference of the two estimates within 3
standard errors (the per-replication standard deviation is twin's: the same system has the same
spread); each estimate is also shown against the closed form where there is one. Times: wall and
CPU seconds of each program (start-up included), 5 runs alternating twin and AvailSim4, medians.
"""

from __future__ import annotations

import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ENV = "AVAILSIM4"
"""AvailSim4's command (default: ``.venv-availsim4/bin/availsim4`` in the repository); the Python beside
it (``python`` in the same folder) writes and reads its workbooks."""
DEFAULT_VENV = Path(__file__).resolve().parent.parent / ".venv-availsim4"
RUNS = 5
TARGETS = {"2-of-4": 2.0, "128-node": 50.0}
"""Issue 31: AvailSim4's CPU time over twin's, at least (median of the alternating runs)."""


@dataclass(frozen=True)
class Unit:
    """A part type: ``count`` units of which ``required`` must work; exponential lives, fixed repair
    (``repair_h`` None: never repaired)."""

    name: str
    count: int
    required: int
    mttf_h: float
    repair_h: float | None


@dataclass(frozen=True)
class System:
    name: str
    nodes: int
    units: tuple[Unit, ...]
    horizon_h: float
    reps: int
    metric: str
    """"availability" (mean node availability) or "failed" (share of replications failed at the horizon)."""
    closed_form: float | None = None
    note: str = ""
    avs_repair_h: dict[str, float] = field(default_factory=dict)
    """AvailSim4's repair time of a unit twin never repairs (its example's 1,000 h)."""


def _p_2of4() -> float:
    p = 1 - math.exp(-1 / 15)
    return 4 * p**3 * (1 - p) + p**4


def _k_of_n_availability(k: int, n: int, mttf_h: float, repair_h: float) -> float:
    a = mttf_h / (mttf_h + repair_h)
    return sum(math.comb(n, j) * a**j * (1 - a) ** (n - j) for j in range(k, n + 1))


def systems(quick: bool = False) -> list[System]:
    year = 8760.0
    return [
        System("one-part", 1, (Unit("unit", 1, 1, 1000.0, 10.0),), year, 200 if quick else 1000, "availability",
               1000 / 1010, "closed form: steady state MTTF/(MTTF+MTTR)"),
        System("4-of-6", 1, (Unit("unit", 6, 4, 2000.0, 24.0),), year, 200 if quick else 1000, "availability",
               _k_of_n_availability(4, 6, 2000.0, 24.0), "closed form: steady state, independent units"),
        System("128-node", 128, (Unit("gpu", 8, 8, 50_000.0, 8.0), Unit("psu", 6, 4, 100_000.0, 4.0)), year,
               4 if quick else 20, "availability",
               (50_000 / 50_008) ** 8 * _k_of_n_availability(4, 6, 100_000.0, 4.0),
               "closed form: steady state, independent units"),
        System("2-of-4", 1, (Unit("unit", 4, 2, 15.0, None),), 1.0, 2_000 if quick else 10_000, "failed",
               _p_2of4(), "closed form: 4p³(1 − p) + p⁴", {"unit": 1000.0}),
    ]


# ---------------------------------------------------------------------------- twin side

def twin_scenario(s: System) -> dict[str, Any]:
    parts: dict[str, Any] = {}
    for u in s.units:
        spec: dict[str, Any] = {"count": u.count, "failure": {"dist": "exponential", "mean_h": u.mttf_h}}
        if u.required < u.count:
            spec.update(required=u.required, effect="redundant")
        spec["repair"] = "none" if u.repair_h is None else {
            "hot_swap": True, "time": {"dist": "fixed", "value_h": u.repair_h}}
        parts[u.name] = spec
    crews = max(1, s.nodes * sum(u.count for u in s.units))  # at least one technician per unit
    return {"name": f"peer-{s.name}", "seed": 1, "horizon_days": s.horizon_h / 24,
            "cluster": {"racks": 1, "nodes_per_rack": s.nodes,
                        "node": {"gpus": next((u.count for u in s.units if u.name == "gpu"), 1), "parts": parts}},
            "maintenance": {"detection": {"dist": "fixed", "value_h": 0}, "crews": {"tech": {"count": crews}}}}


def twin_estimate(folder: Path, s: System) -> tuple[float, float, int]:
    """(mean, per-replication standard deviation, replications) of the compared metric."""
    import pandas as pd

    tab = pd.read_parquet(folder / "replications.parquet")
    x = (tab["node_down_hours"] > 0).astype(float) if s.metric == "failed" else tab["node_availability"]
    return float(x.mean()), float(x.std(ddof=1)), len(tab)


# ---------------------------------------------------------------------------- AvailSim4 side

WRITE = r'''
import json, sys
from openpyxl import Workbook
spec = json.load(open(sys.argv[1]))
for path, sheets in spec.items():
    wb = Workbook()
    wb.remove(wb.active)
    for name, rows in sheets.items():
        ws = wb.create_sheet(name)
        for row in rows:
            ws.append(row)
    wb.save(path)
'''
"""Run with AvailSim4's Python: {workbook path: {sheet: rows}} as JSON -> workbooks."""

READ = r'''
import json, sys
from openpyxl import load_workbook
wb = load_workbook(sys.argv[1], read_only=True)
out = {}
for name in ("RESULTS", "RESULTS_ROOT_SUMMARY"):
    rows = list(wb[name].iter_rows(values_only=True))
    out[name] = [dict(zip(rows[0], r)) for r in rows[1:]]
json.dump(out, open(sys.argv[2], "w"))
'''
"""Run with AvailSim4's Python: its result workbook -> the two result sheets as JSON."""

SYSTEM_SHEETS = {
    "ARCHITECTURE": ["COMPONENT_NAME", "COMPONENT_TYPE", "COMPONENT_NUMBER", "CHILDREN_NAME", "CHILDREN_LOGIC",
                     "IN_MRU", "TRIGGER_MRU"],
    "FAILURE_MODES": ["FAILURE_MODE_NAME", "FAILURE_LAW", "FAILURE_PARAMETERS", "REPAIR_LAW", "REPAIR_PARAMETERS",
                      "TYPE_OF_FAILURE", "HELD_BEFORE_REPAIR", "INSPECTION_NAME", "PHASE_NAME",
                      "NEXT_PHASE_IF_FAILURE", "PHASE_CHANGE_TRIGGER", "HELD_AFTER_REPAIR"],
    "PHASES": ["PHASE_NAME", "PHASE_LAW", "PHASE_PARAMETERS", "NEXT_DEFAULT_PHASE", "FIRST_PHASE"],
    "FAILURE_MODE_ASSIGNMENTS": ["COMPONENT_NAME", "FAILURE_MODE_NAME"],
    "MRU": ["MRU_NAME", "MRU_LAW", "MRU_PARAMETERS", "MRU_SCHEDULE", "LOWEST_COMMON_ANCESTOR_SCOPE",
            "TRIGGERING_STATUS"],
    "INSPECTIONS": ["INSPECTION_NAME", "INSPECTION_PERIOD", "INSPECTION_DURATION"],
    "ROOT_CAUSE_ANALYSIS": ["TRIGGERING_COMPONENT_NAME", "TRIGGERED_BY_COMPONENT_STATUS", "TRIGGERED_IN_PHASE"],
    "PHASE_JUMP": ["TRIGGERING_COMPONENT_NAME", "TRIGGERED_BY_COMPONENT_STATUS", "FROM_PHASE", "TO_PHASE"],
}


def availsim4_workbooks(s: System, folder: Path) -> dict[str, dict[str, list[list[Any]]]]:
    """The system and simulation workbooks of ``s`` (as AvailSim4's examples lay them out): a cluster
    of ``nodes`` nodes (all required: the root is not compared), each node its groups (all required),
    every group k-of-n of its units; a unit never repaired by twin is blind (found by no one) with the
    example's 1,000 h repair."""
    arch: list[list[Any]] = []
    modes: list[list[Any]] = []
    assign: list[list[Any]] = []
    if s.nodes > 1:
        arch.append(["cluster", "compound", 1, "node", "and", "none", "none"])
    if len(s.units) == 1:  # the node is the group
        u = s.units[0]
        arch.append(["node", "compound", s.nodes, u.name, f"{u.required}oo{u.count}", "none", "none"])
    else:
        groups = [f"{u.name}group" for u in s.units]
        arch.append(["node", "compound", s.nodes, ",".join(groups), "and", "none", "none"])
        arch += [[g, "compound", 1, u.name, f"{u.required}oo{u.count}", "none", "none"] for u, g in zip(s.units, groups)]
    for u in s.units:
        arch.append([u.name, "basic", u.count, "none", "none", "none", "none"])
        repair_h = u.repair_h if u.repair_h is not None else s.avs_repair_h[u.name]
        kind = "detectable" if u.repair_h is not None else "blind"
        modes.append([f"{u.name}failure", "exp", f"[{u.mttf_h}]", "fix", f"[{repair_h}]", kind, "NEVER_HELD", "none",
                      "None", "None", "never", "never_held"])
        assign.append([u.name, f"{u.name}failure"])
    sheets = {k: [v] for k, v in SYSTEM_SHEETS.items()}
    sheets["ARCHITECTURE"] += arch
    sheets["FAILURE_MODES"] += modes
    sheets["FAILURE_MODE_ASSIGNMENTS"] += assign
    sim = {"SIMULATION": [["SIMULATION_TYPE", "MIN_NUMBER_OF_SIMULATION", "MAX_NUMBER_OF_SIMULATION",
                           "CONVERGENCE_MARGIN", "MAX_EXECUTION_TIME", "SEED", "DIAGNOSTICS", "SIMULATION_DURATION"],
                          ["MONTE_CARLO", s.reps, s.reps, 2, 10**7, 1, "['SUMMARY']", s.horizon_h]]}
    return {str(folder / "system.xlsx"): sheets, str(folder / "simulation.xlsx"): sim}


UP = ("RUNNING", "DEGRADED", "BLIND_DEGRADED")
"""AvailSim4 statuses in which a node is up."""


def availsim4_estimate(result: dict[str, Any], s: System) -> float:
    """The compared metric from AvailSim4's result sheets: a node's up time is the mean duration of
    its up statuses (rows per node and status, split by the failure that led there), averaged over
    the nodes; ``failed``: the mean occurrences of the node's failed status (each replication fails
    at most once without repair)."""
    rows = [r for r in result["RESULTS"] if str(r["component"]).startswith("NODE_")]
    if s.metric == "failed":
        return float(sum(r["_MEAN_OCCURRENCES"] for r in rows if r["status"] in ("FAILED", "BLIND_FAILED")))
    up = sum(r["_MEAN_DURATION"] for r in rows if r["status"] in UP)
    return float(up / s.horizon_h / s.nodes)


# ---------------------------------------------------------------------------- running

def availsim4_command() -> Path | None:
    """AvailSim4's command: ``$AVAILSIM4``, else the default virtual environment's, else None."""
    p = Path(os.environ[ENV]) if os.environ.get(ENV) else DEFAULT_VENV / "bin" / "availsim4"
    return p if p.is_file() and (p.parent / "python").is_file() else None


def twin_environment(work: Path) -> dict[str, str]:
    """The environment of twin's runs: bytecode compiled once, into a cache in the benchmark's temporary
    folder. AvailSim4 runs from its pip-installed environment, whose modules pip compiled at install
    time, as an installed twin's would be; a source checkout run with PYTHONDONTWRITEBYTECODE (as this
    project's sessions are) instead compiles twin's ~80 modules at every start (~0.2 s of CPU), which
    is not the program's cost."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
    return env


def _timed(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[float, float]:
    """Run a program; (wall s, CPU s of it and its children). Raises on failure."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:3])} ... exited {done.returncode}: {done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


@dataclass
class PeerResult:
    system: System
    twin: tuple[float, float, int]
    avs: float
    twin_wall: list[float] = field(default_factory=list)
    twin_cpu: list[float] = field(default_factory=list)
    avs_wall: list[float] = field(default_factory=list)
    avs_cpu: list[float] = field(default_factory=list)

    @property
    def agree(self) -> bool:
        mean, sd, n = self.twin
        return abs(mean - self.avs) <= 3 * sd * math.sqrt(1 / n + 1 / self.system.reps) + 1e-12

    def ratios(self) -> dict[str, float]:
        return {"cpu": statistics.median(self.avs_cpu) / statistics.median(self.twin_cpu),
                "wall": statistics.median(self.avs_wall) / statistics.median(self.twin_wall)}


def run_system(s: System, avs_command: Path, work: Path, runs: int = RUNS) -> PeerResult:
    import yaml

    avs_python = avs_command.parent / "python"

    d = work / s.name
    d.mkdir(parents=True)
    scen = d / "scenario.yaml"
    scen.write_text(yaml.safe_dump(twin_scenario(s), sort_keys=False))
    books = availsim4_workbooks(s, d)
    (d / "books.json").write_text(json.dumps(books))
    (d / "write.py").write_text(WRITE)
    (d / "read.py").write_text(READ)
    subprocess.run([str(avs_python), str(d / "write.py"), str(d / "books.json")], check=True, cwd=d)
    repo = Path(__file__).resolve().parent.parent
    env_py = [sys.executable, "-m", "twin.cli", "montecarlo", str(scen), "--reps", str(s.reps), "--results",
              str(d / "twin"), "--label", "peer", "--overwrite", "--quiet", "--no-report", "--workers", "1"]
    avs = [str(avs_command), "--system", str(d / "system.xlsx"), "--simulation",
           str(d / "simulation.xlsx"), "--output_folder", str(d / "avs")]
    res = PeerResult(s, (math.nan, math.nan, 0), math.nan)
    twin_env = twin_environment(work)
    _timed(env_py, repo, twin_env)  # untimed: compiles twin's bytecode once (see twin_environment)
    for _ in range(runs):  # alternating, so a change of the machine's load falls on both
        w, c = _timed(env_py, repo, twin_env)
        res.twin_wall.append(w)
        res.twin_cpu.append(c)
        for old in (d / "avs").glob("*"):
            old.unlink()
        w, c = _timed(avs, d)
        res.avs_wall.append(w)
        res.avs_cpu.append(c)
    res.twin = twin_estimate(d / "twin" / f"peer-{s.name}" / "peer", s)
    out = next((d / "avs").glob("simulation_result_*.xlsx"))
    subprocess.run([str(avs_python), str(d / "read.py"), str(out), str(d / "avs.json")], check=True, cwd=d)
    res.avs = availsim4_estimate(json.loads((d / "avs.json").read_text()), s)
    return res


def run(quick: bool = False, runs: int = RUNS, only: list[str] | None = None) -> tuple[dict[str, float], bool]:
    """Every system; prints a table. Returns the figures and whether every pair of estimates agrees."""
    py = availsim4_command()
    if py is None:
        raise SystemExit(f"AvailSim4 not found: set {ENV} to its command (availsim4 in its virtual environment), "
                         f"or install it in {DEFAULT_VENV} (benchmarks/README.md, 'Peers')")
    out: dict[str, float] = {}
    ok = True
    print(f"AvailSim4: {py}; {runs} alternating runs each, medians; twin 1 worker, AvailSim4 1 process")
    print(f"{'system':10s} {'reps':>6s} {'twin':>24s} {'AvailSim4':>10s} {'closed form':>12s} {'agree':>6s} "
          f"{'twin s (cpu)':>13s} {'AvS s (cpu)':>12s} {'ratio cpu':>10s} {'ratio wall':>10s}")
    with tempfile.TemporaryDirectory(prefix="bench-peers-") as tmp:
        for s in systems(quick):
            if only and s.name not in only:
                continue
            r = run_system(s, py, Path(tmp), runs)
            mean, sd, n = r.twin
            half = 1.96 * sd / math.sqrt(n)
            ratio = r.ratios()
            ok &= r.agree
            cf = f"{s.closed_form:.6g}" if s.closed_form is not None else "-"
            print(f"{s.name:10s} {s.reps:6d} {mean:12.6g} ± {half:9.2g} {r.avs:10.6g} {cf:>12s} "
                  f"{'yes' if r.agree else 'NO':>6s} {statistics.median(r.twin_cpu):13.2f} "
                  f"{statistics.median(r.avs_cpu):12.2f} {ratio['cpu']:10.1f} {ratio['wall']:10.1f}")
            key = f"peers.{s.name}"
            out.update({f"{key}.twin": mean, f"{key}.twin_halfwidth": half, f"{key}.availsim4": r.avs,
                        f"{key}.agree": float(r.agree), f"{key}.speedup_cpu": ratio["cpu"],
                        f"{key}.speedup_wall": ratio["wall"], f"{key}.twin_cpu_s": statistics.median(r.twin_cpu),
                        f"{key}.availsim4_cpu_s": statistics.median(r.avs_cpu)})
    print("ratio = AvailSim4 time / twin time (> 1: twin faster); agree = difference within 3 standard errors")
    return out, ok
