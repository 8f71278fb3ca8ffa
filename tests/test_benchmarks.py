"""The benchmark gate logic (no timing here: performance is measured by benchmarks/, issue 10)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from benchmarks.run import BASELINE, FULL_ONLY, TARGETS, gate, met


def test_gate_is_twice_the_target_when_the_recorded_run_meets_it() -> None:
    assert gate("x", 1.2, "le", {"x": 1.1}) == (2.4, "2x target")
    assert gate("x", 1.8, "ge", {"x": 1.9}) == (0.9, "2x target")
    assert gate("x", 1.2, "le", {}) == (2.4, "2x target")


def test_gate_follows_the_recorded_value_while_the_target_is_open() -> None:
    limit, why = gate("x", 3.0, "le", {"x": 14.0})
    assert limit == 28.0 and "not met" in why
    limit, why = gate("x", 3.0, "le", {"x": 5.8})  # near twice the target: no flaky gate at 6
    assert limit == 11.6
    limit, why = gate("x", 1.8, "ge", {"x": 1.2})
    assert limit == 0.6 and "not met" in why
    # never below twice the target
    for rec in (3.01, 4.0, 100.0):
        assert gate("x", 3.0, "le", {"x": rec})[0] >= 6.0


def test_met_directions() -> None:
    assert met(2.9, 3.0, "le") and not met(3.1, 3.0, "le")
    assert met(1.9, 1.8, "ge") and not met(1.7, 1.8, "ge")


def test_recorded_baseline_covers_the_quick_targets() -> None:
    """The committed baseline holds a quick run with every target metric the quick mode measures."""
    base = json.loads(BASELINE.read_text())
    quick = base["quick"]["results"]
    for metric, _, _ in TARGETS:
        if metric.startswith(FULL_ONLY):
            continue  # full run only
        assert metric in quick, metric


# ----------------------------------------------------------------------------- the peer (issue 31)

def test_peer_systems_are_valid_twin_scenarios_expressed_as_for_availsim4() -> None:
    """Each system is a valid scenario with crews for every unit, detection at once, unlimited spares
    (AvailSim4 has neither crews nor spares)."""
    from benchmarks import peers
    from twin.scenario import load_dict

    for s in peers.systems():
        sc = load_dict(peers.twin_scenario(s)).scenario
        units = sum(p.count for p in sc.cluster.node.parts.values()) * sc.cluster.n_nodes
        assert sum(c.count for c in sc.maintenance.crews.values()) >= units
        assert sc.maintenance.spares == {} and sc.maintenance.detection.mean() == 0
        assert sc.horizon_h == s.horizon_h and sc.cluster.n_nodes == s.nodes
        for u in s.units:
            part = sc.cluster.node.parts[u.name]
            assert (part.count, part.required) == (u.count, u.required)
            assert part.repair.policy == ("none" if u.repair_h is None else "repair")


def test_peer_workbooks_state_the_same_structure() -> None:
    from benchmarks import peers

    by = {s.name: s for s in peers.systems()}
    books = peers.availsim4_workbooks(by["128-node"], Path("/x"))
    arch = books["/x/system.xlsx"]["ARCHITECTURE"]
    assert arch[0] == peers.SYSTEM_SHEETS["ARCHITECTURE"]
    assert arch[1:] == [["cluster", "compound", 1, "node", "and", "none", "none"],
                        ["node", "compound", 128, "gpugroup,psugroup", "and", "none", "none"],
                        ["gpugroup", "compound", 1, "gpu", "8oo8", "none", "none"],
                        ["psugroup", "compound", 1, "psu", "4oo6", "none", "none"],
                        ["gpu", "basic", 8, "none", "none", "none", "none"],
                        ["psu", "basic", 6, "none", "none", "none", "none"]]
    books = peers.availsim4_workbooks(by["2-of-4"], Path("/x"))
    sheets = books["/x/system.xlsx"]
    assert sheets["ARCHITECTURE"][1] == ["node", "compound", 1, "unit", "2oo4", "none", "none"]
    mode = dict(zip(sheets["FAILURE_MODES"][0], sheets["FAILURE_MODES"][1]))
    assert (mode["FAILURE_LAW"], mode["FAILURE_PARAMETERS"]) == ("exp", "[15.0]")
    assert (mode["REPAIR_PARAMETERS"], mode["TYPE_OF_FAILURE"]) == ("[1000.0]", "blind")  # its example's
    sim = dict(zip(*books["/x/simulation.xlsx"]["SIMULATION"]))
    assert sim["MIN_NUMBER_OF_SIMULATION"] == sim["MAX_NUMBER_OF_SIMULATION"] == 10_000
    assert sim["SIMULATION_DURATION"] == 1.0
    p = 1 - math.exp(-1 / 15)
    assert by["2-of-4"].closed_form == pytest.approx(0.0010211, abs=1e-7)
    assert by["2-of-4"].closed_form == pytest.approx(4 * p**3 * (1 - p) + p**4, rel=1e-12)


def test_peer_estimate_reads_node_up_time_and_failures() -> None:
    from benchmarks import peers

    by = {s.name: s for s in peers.systems()}
    rows = [{"component": "NODE_0_1", "status": "RUNNING", "_MEAN_DURATION": 8000.0, "_MEAN_OCCURRENCES": 3},
            {"component": "NODE_0_1", "status": "DEGRADED", "_MEAN_DURATION": 700.0, "_MEAN_OCCURRENCES": 2},
            {"component": "NODE_0_1", "status": "UNDER_REPAIR", "_MEAN_DURATION": 60.0, "_MEAN_OCCURRENCES": 1},
            {"component": "UNIT_0_2", "status": "RUNNING", "_MEAN_DURATION": 8760.0, "_MEAN_OCCURRENCES": 1}]
    assert peers.availsim4_estimate({"RESULTS": rows}, by["4-of-6"]) == pytest.approx(8700 / 8760)
    failed = [{"component": "NODE_0_1", "status": "BLIND_FAILED", "_MEAN_DURATION": 0.0, "_MEAN_OCCURRENCES": 0.0004},
              {"component": "NODE_0_1", "status": "BLIND_FAILED", "_MEAN_DURATION": 0.0, "_MEAN_OCCURRENCES": 0.0005},
              {"component": "UNIT_0_2", "status": "BLIND_FAILED", "_MEAN_DURATION": 0.0, "_MEAN_OCCURRENCES": 0.07}]
    assert peers.availsim4_estimate({"RESULTS": failed}, by["2-of-4"]) == pytest.approx(0.0009)


def test_twin_never_imports_availsim4_nor_depends_on_it() -> None:
    """AvailSim4 is GPL-3: the benchmark runs it as a separate program; twin's code and its
    dependencies never name it."""
    root = Path(__file__).resolve().parents[1]
    assert not [p for p in (root / "twin").rglob("*.py") if "availsim4" in p.read_text(encoding="utf-8").lower()]
    assert "availsim4" not in (root / "pyproject.toml").read_text(encoding="utf-8").lower()
    peers_src = (root / "benchmarks" / "peers.py").read_text(encoding="utf-8")
    assert "import availsim4" not in peers_src and "from availsim4" not in peers_src


def test_peer_runs_twin_from_compiled_bytecode(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """twin's peer runs use a bytecode cache in the benchmark's folder, as AvailSim4's pip-installed
    environment has its modules compiled: a session's PYTHONDONTWRITEBYTECODE would otherwise make
    every twin run compile its modules (~0.2 s of each ~1 s run)."""
    from benchmarks import peers

    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    env = peers.twin_environment(tmp_path)
    assert "PYTHONDONTWRITEBYTECODE" not in env and env["PYTHONPYCACHEPREFIX"] == str(tmp_path / "pycache")


def test_frozen_benchmark_halls_are_valid_scenarios() -> None:
    """The thermal benchmark times frozen copies of the bundled halls (issue 41): they must still load
    under today's schema, and extend their own frozen baseline, not the bundled one."""
    from benchmarks.bench_thermal import HALLS
    from twin.scenario.loader import load_scenario

    for name in ("baseline", "air", "liquid", "power-n1"):
        path = HALLS / f"{name}.yaml"
        assert "FROZEN COPY" in path.read_text().splitlines()[0]
        load_scenario(path)
    for name in ("air", "liquid"):
        assert "extends: baseline.yaml" in (HALLS / f"{name}.yaml").read_text()
    assert "extends: air.yaml" in (HALLS / "power-n1.yaml").read_text()


# ----------------------------------------------------------------------------- same bits (refactors)

def test_same_bits_names_each_run_that_moved_and_nothing_else() -> None:
    from benchmarks.same_bits import compare

    run = {"metrics": "m1", "tables": {"jobs": "t1"}, "values": {"goodput": 0.5, "energy": 2.0}}
    a = {("s.yaml", 0): run, ("s.yaml", 1): run, ("bad.yaml", 0): {"error": "ScenarioError: x"}}
    assert compare(a, dict(a)) == []
    moved = {"metrics": "m2", "tables": {"jobs": "t2"}, "values": {"goodput": 0.5000000001, "energy": 2.0}}
    out = compare(a, {**a, ("s.yaml", 1): moved})
    assert len(out) == 1 and "s.yaml rep 1" in out[0] and "goodput" in out[0] and "energy" not in out[0]
    assert "jobs" in out[0]
    table_only = {**run, "tables": {"jobs": "t3"}}  # a table moved, no metric: still a difference
    assert len(compare(a, {**a, ("s.yaml", 0): table_only})) == 1
    refused = compare(a, {**a, ("bad.yaml", 0): run})  # refused by one tree, run by the other
    assert len(refused) == 1 and "bad.yaml" in refused[0] and "ScenarioError" in refused[0]
    assert len(compare(a, {k: v for k, v in a.items() if k != ("s.yaml", 1)})) == 1  # run by one tree only
