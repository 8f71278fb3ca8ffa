"""Inlet offsets of an air hall (issue 23 item 1: rack-height rise, hot-aisle recirculation, chassis slot
preheat) act on what the node's inlet air drives, not only on the GPUs' temperatures: the heat ageing of
node parts (ASHRAE X-factor, and ``cooling.ageing`` on the inlet) and the platform inlet trip.

Deterministic: constant ambient and supply, so each part's acceleration factor and each node's trip
time are closed forms (the statistical MTBF check is the `twin validate` case ``heat_ageing_mtbf``)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from twin.validation.framework import identical_gpus
from twin.model.cooling.component import Thermal
from twin.scenario.loader import load_dict
from twin.sim import Model, run_replication

NPR = 4  # nodes per rack: rack-height offsets 0, 1/3, 2/3, 1 × rack_rise_c from the bottom node


def _xfactor(t_c: float) -> float:
    """ASHRAE TC9.9 X-factor between its points 15, 20, 45 °C (0.72, 1.00, 1.76), written here."""
    if t_c <= 20.0:
        return 0.72 + (t_c - 15.0) * (1.00 - 0.72) / 5.0
    return 1.00 + (t_c - 20.0) * (1.76 - 1.00) / 25.0


def _hall(air: dict[str, Any], cooling: dict[str, Any] | None = None, jobs: list[dict[str, Any]] | None = None,
          hours: float = 48.0) -> dict[str, Any]:
    """Two racks of ``NPR`` 8-GPU nodes in one air zone at a constant 10 °C ambient (no derating)."""
    return {
        "name": "offsets", "horizon_days": hours / 24.0,
        "cluster": {"racks": 2, "nodes_per_rack": NPR, "node": {"gpus": 8, "parts": {
            "board": {"failure": {"mtbf_h": 1.0e6}},
            "hbm": {"count": 1, "per": "gpu", "failure": {"mtbf_h": 1.0e6}},
            "psu": {"count": 2, "required": 1, "effect": "redundant", "failure": {"mtbf_h": 1.0e6}}}}},
        "maintenance": {"crews": {"crew": {"count": 8, "shift": "24x7"}}},
        "workload": {"scheduler": {"policy": "fifo", "hot_spares": 0}, "jobs": jobs or []},
        # identical GPUs and only the offsets a test sets (the defaults' spread and offsets off)
        "cooling": identical_gpus({"type": "air",
                                   "ambient": {"mean_c": 10.0, "seasonal_amplitude_c": 0.0, "diurnal_amplitude_c": 0.0},
                                   "air": {"fan_part": None, **air}, **(cooling or {})}),
    }


def _thermal(model: Model) -> Thermal:
    th = model.by_section["cooling"]
    assert isinstance(th, Thermal)
    return th


def _aged(th: Thermal, name: str) -> dict[str, Any]:
    recs = [a for a in th.ageing.aged + th.ageing.aged_air if a["pop"].name == name]
    assert len(recs) == 1
    return recs[0]


AGEING = {"heat_ageing": {"xfactor": {"enabled": True}},
          "ageing": {"psu": {"t_ref_c": 25.0, "doubling_c": 15.0, "temperature": "inlet"}}}


def test_node_parts_age_at_their_own_inlet_with_rack_rise_and_slot_preheat() -> None:
    """Supply 22 °C, rack rise 6 °C, chassis preheat 2 °C: a node part ages at the X-factor of its node's
    inlet (22 + 6·h/(NPR − 1), h its height in the rack), a part counted per GPU at its GPU's inlet (plus 2 °C
    in the downstream slots 4–7), a part aged on ``temperature: inlet`` at 2^((T_inlet − 25)/15)."""
    supply, rise, pre = 22.0, 6.0, 2.0
    model = Model(load_dict(_hall({"supply_c": supply, "rack_rise_c": rise, "slot_preheat_c": pre},
                                  AGEING)).scenario)
    th = _thermal(model)
    node_in = supply + rise * (np.arange(2 * NPR) % NPR) / (NPR - 1)
    board = _aged(th, "board")
    np.testing.assert_allclose(board["af"], [_xfactor(t) for t in node_in], rtol=1e-12)
    top = NPR - 1
    assert board["af"][top] == pytest.approx(_xfactor(28.0), rel=1e-12)  # the top node at the raised inlet
    assert board["af"][top] > board["af"][0] * 1.1
    hbm = _aged(th, "hbm")
    gpu_in = (node_in[:, None] + np.where(np.arange(8) >= 4, pre, 0.0)[None, :]).ravel()
    np.testing.assert_allclose(hbm["af"], [_xfactor(t) for t in gpu_in], rtol=1e-12)
    psu = _aged(th, "psu")
    np.testing.assert_allclose(psu["af"], np.repeat(2.0 ** ((node_in - 25.0) / 15.0), 2), rtol=1e-12)


def test_node_parts_age_at_their_recirculation_offset() -> None:
    """Recirculation (an exponential per node, its own stream) raises a node's part inlet like the rack rise."""
    model = Model(load_dict(_hall({"supply_c": 22.0, "recirculation_c": 1.5}, AGEING)).scenario)
    th = _thermal(model)
    noff = th.arrays.noff
    assert noff is not None and np.ptp(noff) > 0 and (noff >= 0).all()
    np.testing.assert_allclose(_aged(th, "board")["af"], [_xfactor(22.0 + o) for o in noff], rtol=1e-12)


def test_without_offsets_every_node_ages_at_the_supply() -> None:
    th = _thermal(Model(load_dict(_hall({"supply_c": 22.0}, AGEING)).scenario))
    assert th.arrays.noff is None
    np.testing.assert_allclose(_aged(th, "board")["af"], _xfactor(22.0), rtol=1e-12)


def _trips(res: Any) -> Any:
    return res.tables["thermal_trips"]


def test_nodes_whose_inlet_is_above_the_limit_trip_from_the_start() -> None:
    """Supply 27 °C and a 9 °C rack rise: inlets 27, 30, 33 and 36 °C up each rack, so only the top node of
    each rack is above the 35 °C limit; it trips at once and stays down (its inlet never falls below)."""
    res = run_replication(load_dict(_hall({"supply_c": 27.0, "rack_rise_c": 9.0})).scenario)
    tr = _trips(res)
    assert sorted(tr["node"].tolist()) == [NPR - 1, 2 * NPR - 1]
    assert (tr["reason"] == "inlet").all() and (tr["start_h"] == 0.0).all() and tr["end_h"].isna().all()
    assert res.metrics["thermal.trips.inlet"] == 2


def test_only_the_nodes_whose_inlet_crosses_the_limit_trip_when_the_room_warms() -> None:
    """A CRAH unit lost at 10 h warms the zone's supply from 24 °C toward its target
    S∞ = 24 + (Q − Q_cap)·R_room (about 30 °C); with a 6 °C rack rise the nodes' trip supplies are 35, 33,
    31 and 29 °C, so only the top nodes trip, at the exact crossing
    t = 10 h + τ·ln((S∞ − S0)/(S∞ − 29 °C)), and no other node does."""
    tau_min = 15.0
    air = {"supply_c": 24.0, "rack_rise_c": 6.0, "room_tau_min": tau_min, "r_room_c_per_kw": 0.2,
           "zones": 1,
           "crah": {"count": 2, "required": 1, "capacity_kw": 55.0, "failure": {"dist": "fixed", "value_h": 1.0e9},
                    "repair": {"time": {"dist": "fixed", "value_h": 1.0e4}}}}
    # no operator response (cooling.response): it would cap the zone at 10.5 h, before the 10.7 h crossing
    doc = _hall(air, {"inject": [{"part": "crah", "index": 0, "at_h": 10.0}], "response": {"policy": "none"}},
                jobs=[{"name": "load", "gpus": 64, "work_h": 1.0e6}])
    res = run_replication(load_dict(doc).scenario)
    tl = res.tables["cooling_timeline"]
    row = tl[(tl["unit"] == "zone") & (tl["time_h"] == 10.0)]
    assert len(row) == 1
    s0, tgt = float(row["supply_c"].iloc[0]), float(row["target_c"].iloc[0])
    assert 29.0 < tgt < 31.0 and s0 == pytest.approx(24.0)  # only the top nodes' trip supply is crossed
    t_trip = 10.0 + tau_min / 60.0 * math.log((tgt - s0) / (tgt - 29.0))
    tr = _trips(res)
    assert sorted(tr["node"].tolist()) == [NPR - 1, 2 * NPR - 1]
    assert (tr["reason"] == "inlet").all()
    np.testing.assert_allclose(tr["start_h"], t_trip, rtol=1e-9)


def test_a_plant_supply_jump_trips_the_nodes_it_lifts_above_the_limit_at_once() -> None:
    """The chilled-water offset (``Topic.PLANT_SUPPLY``) shifts a zone's supply at once: 24 → 31 °C with a 6 °C
    rack rise puts the two upper nodes of each rack (trip supplies 31 and 29 °C) at or above the limit now."""
    model = Model(load_dict(_hall({"supply_c": 24.0, "rack_rise_c": 6.0})).scenario)
    th = _thermal(model)
    env = model.engine.env
    th.link._on_plant_supply(7.0)
    while env.peek() <= env.now:  # the trips scheduled for now
        env.step()
    assert sorted(th.trips.tripped) == [2, 3, NPR + 2, NPR + 3]
    assert {r for _, r in th.trips.tripped.values()} == {"inlet"}


def test_inlet_hours_above_27c_count_each_nodes_own_inlet() -> None:
    """Supply 24 °C, rack rise 6 °C: inlets 24, 26, 28, 30 °C up each rack, so 4 of the 8 nodes are above the
    ASHRAE recommended 27 °C for the whole 48 h (192 node-hours); the supply alone is below it."""
    res = run_replication(load_dict(_hall({"supply_c": 24.0, "rack_rise_c": 6.0})).scenario)
    assert res.metrics["thermal.inlet_above_27c_node_hours"] == pytest.approx(4 * 48.0, rel=1e-12)
    assert len(_trips(res)) == 0


def test_one_gpu_nodes_take_their_rack_and_recirculation_offsets() -> None:
    """Nodes of one GPU (one thermal unit each, u = g = 1) heat their GPU from their own inlet: supply + rack
    rise × height + recirculation (before 0.8.0 their GPUs ignored the offsets). Steady state at full load
    T = T_in + P·R, read from the trace at the end of the run."""
    supply, rise, r = 22.0, 6.0, 0.075
    doc = _hall({"supply_c": supply, "rack_rise_c": rise, "recirculation_c": 0.4},
                {"gpu": {"r_air_c_per_w": r}, "trace": {"nodes": list(range(2 * NPR)), "from_h": 0, "to_h": 100}},
                jobs=[{"name": "all", "gpus": 2 * NPR, "work_h": 1000.0}], hours=6.0)
    doc["cluster"]["node"]["gpus"] = 1
    del doc["cluster"]["node"]["parts"]["hbm"]
    model = Model(load_dict(doc).scenario)
    th = _thermal(model)
    assert th.params.units_per_node == 1 and th.arrays.toff is not None
    model.run()
    tr = model.result().tables["thermal_trace"]
    last = tr.groupby("node").tail(1).sort_values("node")  # each node's last row: its GPU at full load
    assert len(last) == 2 * NPR
    rack_c = rise * (np.arange(2 * NPR) % NPR) / (NPR - 1)
    recirc_c = th.arrays.noff - rack_c  # each node's own exponential draw
    assert (recirc_c >= 0).all() and np.ptp(recirc_c) > 0
    node_in = supply + rack_c + recirc_c
    np.testing.assert_allclose(last["inlet_c"], node_in, rtol=1e-12)
    p_w = float(model.sc.cluster.node.gpu.demand_w)
    np.testing.assert_allclose(last["tss_c"], node_in + p_w * r, rtol=1e-12)
    assert (last["tss_c"] > supply + p_w * r + 1e-9).all()  # every GPU above what the bare supply would give
