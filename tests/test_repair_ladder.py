"""The repair ladder, vendor RMA, crews by skill and dispatch by impact (issue 25).

The statistical and deterministic checks are `twin validate` cases (twin.validation.reliability:
repair_ladder, rma_palm, dispatch_impact), called here; the rest are direct checks of the model."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from twin.errors import InputError
from twin.physics import closed_forms as cf
from twin.scenario import load_dict, load_scenario
from twin.sim import Model, run_replication
from twin.validation.framework import Settings
from twin.validation.reliability import dispatch_impact, ladder_doc, repair_ladder, rma_palm

CONF = 0.99
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

    res = repair_ladder(Settings(quick=True, confidence=CONF, mutate=no_remediation))
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
    assert fac["crah"].causes == fac["cdu"].causes == frozenset({"thermal_trip"})
