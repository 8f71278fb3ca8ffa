"""Cheap replications (issue 31): a Monte-Carlo worker's replication builds no table it does not
read, yet reports exactly the metrics of a full replication; ``repair: none`` (a part never
repaired) follows the k-of-n formula."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest

from twin.scenario import load_dict, load_scenario
from twin.sim import LazyTables, run_replication


def k_of_n(horizon_days: float = 1 / 24, repair: Any = "none", mean_h: float = 15.0) -> dict[str, Any]:
    """AvailSim4's rare-event example: one node whose 4 units must keep 2 working, exponential lives."""
    return {"name": "two-of-four", "seed": 3, "horizon_days": horizon_days,
            "cluster": {"racks": 1, "nodes_per_rack": 1, "node": {"gpus": 1, "parts": {
                "unit": {"count": 4, "required": 2, "effect": "redundant",
                         "failure": {"dist": "exponential", "mean_h": mean_h}, "repair": repair}}}},
            "maintenance": {"detection": {"dist": "fixed", "value_h": 0}, "crews": {"t": {"count": 4}}}}


def _same_metrics(a: dict[str, float], b: dict[str, float]) -> None:
    assert a.keys() == b.keys()
    for k in a:
        assert (a[k] == b[k]) or (math.isnan(a[k]) and math.isnan(b[k])), (k, a[k], b[k])


CASES = [
    ("baseline", "scenarios/baseline.yaml", {"horizon_days": 20}),
    ("mixed-1k", "scenarios/mixed-1k.yaml", {"horizon_days": 10}),
    ("k-of-n repaired", None, {}),
]


@pytest.mark.parametrize("name,path,override", CASES, ids=[c[0] for c in CASES])
def test_metrics_without_tables_are_those_of_a_full_replication(name: str, path: str | None,
                                                                 override: dict[str, Any]) -> None:
    if path is None:  # repaired units, many failures and tickets: the pandas path of the metrics
        sc = load_dict(k_of_n(horizon_days=30, repair={"time": {"dist": "exponential", "mean_h": 5}})).scenario
    else:
        ld = load_scenario(path)
        sc = load_dict({**ld.resolved, **override}, str(ld.source)).scenario
    for rep in (0, 1):
        full = run_replication(sc, rep)
        lean = run_replication(sc, rep, tables=False)
        _same_metrics(lean.metrics, full.metrics)
        assert isinstance(lean.tables, LazyTables) and not isinstance(full.tables, LazyTables)
        assert list(lean.tables) == list(full.tables)  # the same names, in the same order
        for t in full.tables:  # built on demand, the same tables
            pd.testing.assert_frame_equal(lean.tables[t], full.tables[t], check_exact=True)


def test_lazy_tables_build_each_table_once_and_only_when_read() -> None:
    calls: list[str] = []

    def make(name: str) -> Any:
        return lambda: calls.append(name) or pd.DataFrame({"x": [len(calls)]})

    t = LazyTables({"a": make("a"), "b": make("b")})
    assert calls == [] and list(t) == ["a", "b"] and len(t) == 2
    first = t["b"]
    assert calls == ["b"] and t["b"] is first
    t["c"] = pd.DataFrame({"y": [1]})
    assert list(t.built()) == ["a", "b", "c"] and calls == ["b", "a"]


def test_repair_none_is_a_policy_and_its_shorthand() -> None:
    sc = load_dict(k_of_n()).scenario
    assert sc.cluster.node.parts["unit"].repair.policy == "none"
    sc2 = load_dict(k_of_n(repair={"policy": "none"})).scenario
    assert sc2.cluster.node.parts["unit"].repair == sc.cluster.node.parts["unit"].repair
    assert load_dict(k_of_n(repair={})).scenario.cluster.node.parts["unit"].repair.policy == "repair"


def test_a_unit_never_repaired_stays_failed_and_opens_no_ticket() -> None:
    sc = load_dict(k_of_n(horizon_days=100)).scenario  # 2,400 h: every unit fails (mean 15 h)
    res = run_replication(sc, 0)
    assert res.metrics["failures"] == 4.0
    assert len(res.tables["tickets"]) == 0
    iv = res.tables["node_intervals"]
    # the node goes down at the third failure and stays down to the horizon
    fails = np.sort(res.tables["events"].query("kind == 'fail'")["time_h"].to_numpy())
    assert len(iv) == 1 and iv["end_h"].iloc[0] == sc.horizon_h
    assert iv["start_h"].iloc[0] == fails[2]


def test_no_repair_failure_probability_is_the_k_of_n_formula() -> None:
    """Theory: with no repair, the 2-of-4 group has failed by t when 3 or 4 units have,
    P = 4p³(1 − p) + p⁴, p = 1 − exp(−t / MTTF). At t = 10 h, MTTF 15 h: P = 0.2526. A model that
    repaired units (the default repair of 4 h) would give about 0.01."""
    t_h, mttf_h, n = 10.0, 15.0, 600
    p = 1 - math.exp(-t_h / mttf_h)
    want = 4 * p**3 * (1 - p) + p**4
    sc = load_dict(k_of_n(horizon_days=t_h / 24)).scenario
    down = [run_replication(sc, i, tables=False).metrics["node_down_hours"] > 0 for i in range(n)]
    got = float(np.mean(down))
    sd = math.sqrt(want * (1 - want) / n)
    assert abs(got - want) < 4 * sd, (got, want, sd)
