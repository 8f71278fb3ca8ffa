"""Leaks that cost (issue 42 item 5): damage replaced in ``cost.*``, loop-wide leaks, detection that
isolates a rack before damage. Expected values are computed here from the scenario's own numbers."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from twin.scenario.loader import load_dict
from twin.sim import ReplicationResult, run_replication

NEVER = {"dist": "fixed", "value_h": 1.0e9}
DETECT_H = 0.25  # maintenance.detection below
PSU = {"count": 4, "required": 2, "effect": "redundant", "failure": NEVER}


def liquid_doc(hours: float, leak: dict[str, Any] | None, racks: int = 1, npr: int = 2, loops: int = 1,
               inject: list[dict[str, Any]] | None = None, costs: bool = False) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "name": "leaks", "seed": 11, "horizon_days": hours / 24.0,
        "cluster": {"racks": racks, "nodes_per_rack": npr, "node": {"gpus": 8, "parts": {"psu": PSU}}},
        "maintenance": {"detection": {"dist": "fixed", "value_h": DETECT_H},
                        "crews": {"crew": {"count": 4, "shift": "24x7"}}},
        "workload": {"jobs": []},
        "cooling": {"type": "liquid", "inject": inject or [],
                    "liquid": {"loops": loops, "cdu": {"failure": NEVER, "pumps": {"failure": NEVER}},
                               "leak": leak}},
    }
    if costs:
        doc["costs"] = {}
    return doc


def run(doc: dict[str, Any]) -> ReplicationResult:
    return run_replication(load_dict(doc).scenario)


def down_rows(res: ReplicationResult, cause: str) -> pd.DataFrame:
    iv = res.tables["node_intervals"]
    return iv[(iv.state == "down") & (iv.cause.astype(str) == cause)]


def test_leak_damage_replaces_destroyed_nodes_capital_in_costs() -> None:
    """A leak at 5 h on node 0 with one neighbour and damage probability 1 destroys nodes 0 and 1: each is
    bought again (node price + its PSUs) in ``cost.*`` and stays down until 5 h + replace_h (longer than the
    leak's repair)."""
    leak = {"failure": NEVER, "neighbours": 1, "repair": {"time": {"dist": "fixed", "value_h": 2.0}},
            "damage": {"probability": 1.0, "replace_h": 48.0}, "loop": None}
    doc = liquid_doc(200.0, leak, npr=3, costs=True, inject=[{"part": "leak", "index": 0, "at_h": 5.0}])
    res = run(doc)
    m = res.metrics
    sc = load_dict(doc).scenario
    assert sc.costs is not None
    node_price = sc.costs.capital.node[sc.cluster.node.type]
    psu = sc.cluster.node.parts.get("psu")
    assert psu is not None
    price = node_price + psu.count * sc.costs.capital.psu  # 4 PSUs bought again with each node
    assert m["leak.events"] == 1.0 and m["leak.nodes_destroyed"] == 2.0
    assert m["cost.leak_damage"] == pytest.approx(2 * price, rel=1e-12)
    lines = res.tables["costs"]
    row = lines[lines.item.str.startswith("node destroyed by a leak")]
    assert len(row) == 1 and row.quantity.iloc[0] == 2.0 and row.unit_price.iloc[0] == price
    assert row.category.iloc[0] == "repair_parts"
    # in repair_parts and so in the total: the same run without damage costs exactly 2 × price less
    leak_nd = {**leak, "damage": None}
    res0 = run(liquid_doc(200.0, leak_nd, npr=3, costs=True, inject=[{"part": "leak", "index": 0, "at_h": 5.0}]))
    # (less energy: the destroyed nodes stay down longer)
    other = m["cost.total"] - m["cost.energy"] - (res0.metrics["cost.total"] - res0.metrics["cost.energy"])
    assert other == pytest.approx(2 * price, rel=1e-9)
    assert m["cost.energy"] < res0.metrics["cost.energy"]
    dmg = res.tables["leak_damage"]
    assert sorted(dmg.node.tolist()) == [0, 1]
    assert np.allclose(dmg.time_h, 5.0) and np.allclose(dmg.back_h, 5.0 + 48.0)
    # the longer outage: down from the leak to the replacement (the leak's repair ends at 5 + 0.25 + 2);
    # node 2, below the neighbour reach, never down
    iv = res.tables["node_intervals"]
    down = iv[iv.state == "down"].sort_values("node")
    assert down.node.tolist() == [0, 1]
    assert np.allclose(down.start_h, 5.0) and np.allclose(down.end_h, 5.0 + 48.0)
    down0 = res0.tables["node_intervals"].query("state == 'down'")
    assert np.allclose(down0.end_h, 5.0 + DETECT_H + 2.0)


def test_loop_leak_takes_exactly_its_loop_down() -> None:
    """Two racks of 4 nodes in two loops: a leak of loop 1's CDU/manifold at 10 h takes nodes 4-7 (and
    only those) down until its repair (detection + 24 h default)."""
    leak = {"failure": NEVER, "loop": {"failure": NEVER}}
    res = run(liquid_doc(100.0, leak, racks=2, npr=4, loops=2,
                         inject=[{"part": "loop_leak", "index": 1, "at_h": 10.0}]))
    iv = res.tables["node_intervals"]
    down = iv[iv.state == "down"]
    assert sorted(down.node.tolist()) == [4, 5, 6, 7]
    assert set(down.cause.astype(str)) == {"loop_leak"}
    assert np.allclose(down.start_h, 10.0) and np.allclose(down.end_h, 10.0 + DETECT_H + 24.0)
    assert res.metrics["leak.loop_events"] == 1.0 and res.metrics["leak.events"] == 0.0


@pytest.mark.parametrize("p_detect", [1.0, 0.0])
def test_detection_isolates_the_rack_before_damage(p_detect: float) -> None:
    """Probability 1: every leak isolates its rack (all its nodes down, cause leak) and destroys nothing,
    even with damage probability 1; probability 0: the leak does its damage."""
    leak = {"failure": NEVER, "neighbours": 0, "repair": {"time": {"dist": "fixed", "value_h": 2.0}},
            "damage": {"probability": 1.0, "replace_h": 10.0}, "detection": {"probability": p_detect},
            "loop": None}
    res = run(liquid_doc(50.0, leak, racks=2, npr=4, inject=[{"part": "leak", "index": 5, "at_h": 3.0}]))
    m = res.metrics
    iv = res.tables["node_intervals"]
    down = iv[iv.state == "down"]
    if p_detect == 1.0:
        assert m["leak.detected"] == 1.0 and m["leak.nodes_destroyed"] == 0.0
        assert sorted(down.node.tolist()) == [4, 5, 6, 7]  # rack 1 isolated, rack 0 untouched
        assert np.allclose(down.end_h, 3.0 + DETECT_H + 2.0)
        assert len(res.tables["leak_damage"]) == 0
    else:
        assert m["leak.detected"] == 0.0 and m["leak.nodes_destroyed"] == 1.0
        assert down.node.tolist() == [5]
        assert np.allclose(down.end_h, 3.0 + 10.0)


def test_damage_and_detection_frequencies_follow_their_probabilities() -> None:
    """Many leaks (MTBF 200 h per node, 64 nodes, 2,000 h): the detected share and the destroyed share of
    the undetected leaks' nodes lie within binomial bounds of the given probabilities (each leak's draws
    come from its own streams)."""
    leak = {"failure": {"dist": "exponential", "mean_h": 200.0}, "neighbours": 0,
            "repair": {"time": {"dist": "fixed", "value_h": 1.0}},
            "damage": {"probability": 0.3, "replace_h": 5.0}, "detection": {"probability": 0.6}, "loop": None}
    res = run(liquid_doc(2000.0, leak, racks=8, npr=8))
    m = res.metrics
    n, det = int(m["leak.events"]), int(m["leak.detected"])
    assert n > 300
    lo, hi = stats.binom.ppf([1e-4, 1 - 1e-4], n, 0.6)
    assert lo <= det <= hi
    und = n - det
    destroyed = int(m["leak.nodes_destroyed"])  # a node down for damage is not destroyed again: at most
    lo, hi = stats.binom.ppf([1e-4, 1 - 1e-4], und, 0.3)
    assert destroyed <= hi and destroyed >= lo * 0.8  # a few leaks hit nodes already destroyed (rare here)


def test_leak_fields_bad_input_is_a_clean_error() -> None:
    from twin.errors import InputError

    leak = {"damage": {"probability": 1.5}}
    with pytest.raises(InputError) as e:
        load_dict(liquid_doc(10.0, leak))
    assert "cooling.liquid.leak.damage.probability" in str(e.value)
