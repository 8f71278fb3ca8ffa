"""The repair ladder, vendor RMA, crews by skill and dispatch by impact (issue 25).

The statistical and deterministic checks are `twin validate` cases (twin.validation.reliability:
repair_ladder, rma_palm, dispatch_impact), called here; the rest are direct checks of the model."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest

from twin.model.causes import THERMAL_TRIP
from twin.errors import InputError
from twin.physics import closed_forms as cf
from twin.scenario import load_dict, load_scenario
from twin.sim import Model, run_replication
from twin.validation.framework import TEST_CONFIDENCE, Settings
from twin.validation.reliability import dispatch_impact, ladder_doc, repair_ladder, rma_palm

CONF = TEST_CONFIDENCE  # the suite's error budget (tests/judging.py)
QUICK = Settings(quick=True, confidence=CONF)


def _strong(results: list) -> None:
    for r in results:
        assert not r.failed_invariants(), (r.quantity, r.failed_invariants())
        assert r.passed, r
        assert r.wrong and all(r.excludes(v) for v in r.wrong.values()), r


def test_ladder_closed_form() -> None:
    assert cf.ladder_rung_probabilities([0.4, 0.8]) == pytest.approx([0.4, 0.48, 0.12], abs=1e-15)
    assert cf.ladder_mean_downtime_h([0.4, 0.8], [0.5, 6.5, 18.5]) == pytest.approx(0.2 + 3.12 + 2.22, abs=1e-12)
    assert cf.ladder_mean_downtime_h([0.0, 1.0], [1.0, 7.0, 99.0]) == 7.0  # no ladder: every failure replaced


def test_repair_ladder_downtime_and_spares() -> None:
    _strong(repair_ladder(QUICK))


def test_repair_ladder_fails_when_the_remediation_share_is_wrong() -> None:
    def no_remediation(doc: dict) -> dict:
        d = copy.deepcopy(doc)
        d["cluster"]["node"]["parts"]["board"]["repair"]["ladder"]["remediate_success"] = 0.2
        return d

    res = repair_ladder(Settings(quick=True, confidence=0.99, mutate=no_remediation))  # power: a broken model
    assert not any(r.passed for r in res)


def test_rma_pool_is_palm() -> None:
    _strong(rma_palm(QUICK))


def test_dispatch_by_impact_with_ageing() -> None:
    res = dispatch_impact(QUICK)
    assert len(res) == 3
    _strong(res)


def test_no_ladder_is_every_failure_replaced_without_new_draws() -> None:
    """s₁ = 0 (the default) sends every failure to a technician and draws nothing for the ladder: the
    tickets are those of a scenario that spells the default ladder out."""
    doc = ladder_doc("no-ladder", 500.0, 200, 2000.0, 0.0, 1.0)
    a = run_replication(load_dict(doc).scenario, 0).tables["tickets"]
    d = copy.deepcopy(doc)
    del d["cluster"]["node"]["parts"]["board"]["repair"]["ladder"]
    b = run_replication(load_dict(d).scenario, 0).tables["tickets"]
    assert len(a) > 20 and (a["rung"][a["done"]] == 2).all()
    assert a.equals(b)
    assert (a["remediated_h"] == a["detected_h"]).all()


def test_rma_pipeline_level_and_scrapped_parts_are_reordered() -> None:
    """Half the RMA parts are scrapped: they are reordered through (s, Q); the pipeline level steps with
    each RMA sent and returned; a remediated failure takes no spare."""
    doc = ladder_doc("rma-scrap", 2000.0, 1000, 20000.0, 0.5, 1.0,
                     spares={"board": {"stock": 4, "reorder_point": 3, "reorder_qty": 1, "lead_time_days": 2,
                                       "rma_turnaround_days": 3, "rma_return_share": 0.5}})
    m = Model(load_dict(doc).scenario, 0)
    m.run()
    res = m.result()
    inv = m.shop.inventories["board"]
    t = res.tables["tickets"]
    taken = int(((t["rung"] != 1) & t["remediated_h"].notna()).sum())
    assert inv.demands == taken and inv.rma_sent + inv.scrapped == taken
    assert 0.3 < inv.rma_sent / taken < 0.7 and inv.orders >= inv.scrapped - 1
    assert res.metrics["rma.sent.board"] == inv.rma_sent == int(t["rma"].sum())
    ts, vs = m.recorder.level_series("rma_at_vendor.board")
    assert vs.min() == 0 and vs.max() >= 1 and np.all(np.abs(np.diff(vs)) <= 1)
    assert res.metrics["repair.remediated"] > 0 and res.metrics["repair.replaced"] > 0
    parts = res.tables["parts"].set_index("part")
    assert parts.loc["board", "remediated"] == res.metrics["repair.remediated"]


def test_a_cdu_cooling_a_loop_is_dispatched_by_the_gpus_it_returns() -> None:
    """Both CDUs of loop 0 fail (cdu-failure): their tickets' impact is the GPUs of the loop's nodes that
    tripped, read from the cluster's state, and they go to the facilities pool."""
    sc = load_scenario("scenarios/cdu-failure.yaml", ["horizon_days=12"]).scenario
    res = run_replication(sc, 0)
    t = res.tables["tickets"]
    cdu = t[(t["part"] == "cdu") & (t["fail_h"] == 200.0)]
    assert len(cdu) == 2 and set(cdu["crew_pool"]) == {"facilities"}
    # loop 0 cools 64 nodes; the tickets are dispatched once the nodes have tripped (up to 512 GPUs)
    assert cdu["impact_gpus"].max() > 8 and cdu["impact_gpus"].max() <= 64 * 8
    assert "crew_utilisation.facilities" in res.metrics


def test_bad_ladder_and_rma_input_is_one_clear_error() -> None:
    doc = ladder_doc("bad", 100.0, 100, 1000.0, 1.5, 1.0)
    with pytest.raises(InputError) as exc:
        load_dict(doc, "s.yaml")
    assert "remediate_success" in str(exc.value) and "\n" not in str(exc.value)
    doc = ladder_doc("bad", 100.0, 100, 1000.0, 0.5, 1.0,
                     spares={"board": {"stock": 1, "rma_turnaround_days": -1}})
    with pytest.raises(InputError) as exc:
        load_dict(doc, "s.yaml")
    assert "rma_turnaround_days" in str(exc.value)


def test_cooling_unit_scopes_in_a_hybrid_hall() -> None:
    """Hybrid cooling has both air zones (3 CRAH units each) and coolant loops (2 CDUs of 2 pumps each):
    every unit's scope is its own zone or loop (a scope bound late to the other section's counts would
    name the wrong nodes or none)."""
    sc = load_scenario("scenarios/hybrid.yaml", ["horizon_days=1"]).scenario
    m = Model(sc, 0)
    fac = m.facility
    zones = [(0, 64), (64, 128)]
    for i in range(6):
        assert tuple(fac["crah"].scope(i)) == tuple(range(*zones[i // 3]))
    for i in range(4):
        assert tuple(fac["cdu"].scope(i)) == tuple(range(*zones[i // 2]))
    for i in range(8):
        assert tuple(fac["cdu_pump"].scope(i)) == tuple(range(*zones[i // 4]))
    assert tuple(fac["leak"].scope(5)) == (5,)
    assert fac["crah"].causes == fac["cdu"].causes == frozenset({THERMAL_TRIP})


def _two_boards() -> dict:
    """Two nodes, fixed times: boards fail at 100 h (4 h swap, 1 h burn-in, one technician: the second
    board waits 4 h), GPUs at 150 h (a reset clears every fault in 0.5 h, rung 1), detection 0.25 h;
    the second node's second board failure (208.25 h) is on the technician's bench at the horizon."""
    return {"name": "two-boards", "seed": 1, "horizon_days": 210 / 24,
            "cluster": {"racks": 1, "nodes_per_rack": 2, "node": {"gpus": 8, "parts": {
                "board": {"failure": {"dist": "fixed", "value_h": 100.0},
                          "repair": {"time": {"dist": "fixed", "value_h": 4.0}, "burn_in_h": 1.0}},
                "gpu": {"failure": {"dist": "fixed", "value_h": 150.0},
                        "repair": {"ladder": {"remediate_success": 1.0,
                                              "remediate_time": {"dist": "fixed", "value_h": 0.5}}}}}}},
            "maintenance": {"detection": {"dist": "fixed", "value_h": 0.25}, "crews": {"t": {"count": 1}}}}


def test_repair_metrics_are_the_hand_computed_means_of_a_small_ticket_log() -> None:
    """twin.model.repair.repair_metrics, the one path for full and metrics-only replications, against
    the ticket log of :func:`_two_boards` worked out by hand: phase means over the tickets that reached
    the phase (NaN left out), rung counts of done tickets, the crew's busy share of its shift."""
    res = run_replication(load_dict(_two_boards()).scenario, 0)
    tk = res.tables["tickets"]
    nan = float("nan")
    want_log = [  # part, node, fail, detected, remediated, spare, start, end, back, rung, done
        ("board", 0, 100.0, 100.25, 100.25, 100.25, 100.25, 104.25, 105.25, 2, True),
        ("board", 1, 100.0, 100.25, 100.25, 100.25, 104.25, 108.25, 109.25, 2, True),  # waits 4 h for the technician
        ("gpu", 0, 150.0, 150.25, 150.75, 150.75, 150.75, 150.75, 150.75, 1, True),
        ("gpu", 1, 150.0, 150.25, 150.75, 150.75, 150.75, 150.75, 150.75, 1, True),
        ("board", 0, 204.25, 204.5, 204.5, 204.5, 204.5, 208.5, 209.5, 2, True),  # 100 h after its swap ended
        ("board", 1, 208.25, 208.5, 208.5, 208.5, 208.5, nan, nan, 0, False),  # open at the horizon (210 h)
    ]
    cols = ["part", "node", "fail_h", "detected_h", "remediated_h", "spare_h", "start_h", "end_h", "back_h", "rung",
            "done"]
    got_log = [tuple(r) for r in tk[cols].itertuples(index=False)]
    assert len(got_log) == len(want_log)
    for got, want in zip(got_log, want_log):
        assert all(g == w or (g != g and w != w) for g, w in zip(got, want)), (got, want)
    m = res.metrics
    assert m["repair.wait_detect_h"] == 0.25
    assert m["repair.remediation_h"] == pytest.approx(1.0 / 6.0, rel=1e-15)  # two 0.5 h resets among six tickets
    assert m["repair.wait_spare_h"] == 0.0  # no inventory: a spare is always there
    assert m["repair.wait_crew_h"] == 1.0  # (0 + 4 + 0 + 0) / 4 technician tickets
    assert m["repair.wait_crew_h.node"] == 1.0 and "repair.wait_crew_h.none" not in m  # every board: 8 GPUs
    assert m["repair.hands_on_h"] == 4.0  # the open ticket's hands-on time is unknown (NaN): left out
    assert m["repair.escalation_h"] == 0.0 and m["repair.burn_in_h"] == 1.0
    assert (m["repair.remediated"], m["repair.replaced"], m["repair.escalated"]) == (2.0, 3.0, 0.0)  # done only
    assert m["crew_utilisation.t"] == pytest.approx(12.0 / 210.0, rel=1e-15)  # three finished 4 h swaps
    parts = res.tables["parts"].set_index("part")
    assert (parts.loc["board", "replaced"], parts.loc["board", "remediated"]) == (2 + 1, 0)
    assert (parts.loc["gpu", "remediated"], parts.loc["gpu", "replaced"]) == (2, 0)
    # a metrics-only replication (a Monte-Carlo worker) reports the same, from the same function
    lean = run_replication(load_dict(_two_boards()).scenario, 0, tables=False).metrics
    assert {k: v for k, v in lean.items() if k.startswith(("repair.", "crew_"))} == {
        k: v for k, v in m.items() if k.startswith(("repair.", "crew_"))}


def test_full_and_metrics_only_replications_take_repair_metrics_from_one_function(monkeypatch) -> None:
    """One path (the style guide: no two code paths that do the same job): a full replication and a
    Monte-Carlo worker's (no tables) both call twin.model.repair.repair_metrics on the ticket records."""
    import twin.sim

    calls: list[int] = []
    real = twin.sim.repair_metrics

    def spy(shop, records, *args):  # type: ignore[no-untyped-def]
        calls.append(len(records))
        return real(shop, records, *args)

    monkeypatch.setattr(twin.sim, "repair_metrics", spy)
    sc = load_dict(_two_boards()).scenario
    run_replication(sc, 0)
    run_replication(sc, 0, tables=False)
    assert calls == [6, 6]


def test_repair_metrics_of_a_ladder_log_with_escalations_and_stockouts() -> None:
    """The repair metrics of a log with every kind of ticket (remediation, escalation, RMA, stock-outs, a
    business-hours crew, an open ticket) against the same means computed row by row in plain Python."""
    doc = {"name": "ladder-log", "seed": 3, "horizon_days": 120,
           "cluster": {"racks": 1, "nodes_per_rack": 4, "node": {"gpus": 1, "parts": {
               "unit": {"count": 4, "required": 2, "effect": "redundant",
                        "failure": {"dist": "exponential", "mean_h": 40.0},
                        "repair": {"time": {"dist": "lognormal", "mean_h": 6, "sigma": 0.5},
                                   "ladder": {"remediate_success": 0.3, "replace_success": 0.8}}},
               "board": {"failure": {"dist": "weibull", "shape": 1.3, "scale_h": 300}, "repair": {"burn_in_h": 2}}}}},
           "maintenance": {"detection": {"dist": "fixed", "value_h": 0}, "crews": {"t": {"count": 1, "shift": "business"}},
                           "spares": {"unit": {"stock": 1, "lead_time_days": 5, "rma_turnaround_days": 3}}}}
    res = run_replication(load_dict(doc).scenario, 0)
    rows = res.tables["tickets"].to_dict("records")
    assert {r["rung"] for r in rows} >= {1, 2, 3} and any(r["stockout"] for r in rows) and len(rows) > 50

    def mean(values: list[float]) -> float:
        kept = [v for v in values if v == v]
        return math.fsum(kept) / len(kept) if kept else math.nan

    tech = [r for r in rows if r["rung"] != 1]
    want = {
        "repair.wait_detect_h": mean([r["detected_h"] - r["fail_h"] for r in rows]),
        "repair.remediation_h": mean([r["remediated_h"] - r["detected_h"] for r in rows]),
        "repair.wait_spare_h": mean([r["spare_h"] - r["remediated_h"] for r in tech]),
        "repair.wait_crew_h": mean([r["start_h"] - r["spare_h"] for r in tech]),
        "repair.hands_on_h": mean([r["end_h"] - r["start_h"] for r in tech]),
        "repair.escalation_h": mean([r["fixed_h"] - r["end_h"] for r in tech]),
        "repair.burn_in_h": mean([r["back_h"] - r["fixed_h"] for r in tech]),
        "repair.remediated": float(sum(r["done"] and r["rung"] == 1 for r in rows)),
        "repair.replaced": float(sum(r["done"] and r["rung"] == 2 for r in rows)),
        "repair.escalated": float(sum(r["done"] and r["rung"] == 3 for r in rows)),
    }
    for cls, test in (("none", lambda g: g <= 0), ("node", lambda g: 0 < g <= 1), ("multi", lambda g: g > 1)):
        waits = [r["start_h"] - r["spare_h"] for r in tech if r["impact_gpus"] == r["impact_gpus"] and test(r["impact_gpus"])]
        if [w for w in waits if w == w]:
            want[f"repair.wait_crew_h.{cls}"] = mean(waits)
    got = {k: v for k, v in res.metrics.items() if k.startswith("repair.")}
    assert got.keys() == want.keys()
    for k, v in want.items():
        assert got[k] == pytest.approx(v, rel=1e-12, abs=1e-12), k
    assert want["repair.wait_spare_h"] > 0 and want["repair.escalation_h"] > 0  # stock-outs and escalations counted
