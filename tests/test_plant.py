"""The cooling plant fed by the power chain (issue 24): chillers and the chilled-water loop, the power
path of cooling units, transfer switches, cooling maintenance, shared infrastructure, and the coupling
utility outage → chillers restart → GPUs hotter → throttling → lower goodput."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from twin.errors import InputError
from twin.scenario import load_dict
from twin.model.cooling.component import Thermal
from twin.sim import Model, run_replication
from twin.validation.framework import Settings, identical_gpus
from twin.validation.physical import NEVER, _psu_part, quiet_power_section
from twin.validation.plant import ats_transfer, cdu_maintenance, plant_transfer, transfer_doc


def _passed_and_excludes(results: list[Any]) -> None:
    for r in results:
        assert r.passed, r
        assert all(v for v in r.invariants.values()), r.invariants
        assert all(r.excludes(v) for v in r.wrong.values()), (r.quantity, r.wrong)


def test_transfer_with_chillers_off_ups_follows_the_loop_closed_form_and_on_ups_no_rise() -> None:
    res = plant_transfer(Settings())
    _passed_and_excludes(res)
    off, steps, on = res
    assert off.reference > 1.0 and on.reference == 0.0


def test_ats_failure_to_transfer_is_exact() -> None:
    res = ats_transfer(Settings())
    _passed_and_excludes(res)
    assert res[0].reference > 0 and res[1].reference == 0.0


def test_cdu_maintenance_n_loses_flow_for_the_window_and_n1_stays_up() -> None:
    res = cdu_maintenance(Settings())
    _passed_and_excludes(res)
    assert res[0].reference == 24.0 and res[1].reference == 0.0
    assert res[2].reference == pytest.approx(3 * 2 * (8.0 + 0.1), abs=1e-12) and res[3].reference == 0.0


def _coupling_doc(on_ups: bool) -> dict[str, Any]:
    return {"name": "coupling", "horizon_days": 0.5, "seed": 1,
            # server fans off: the plant's heat is the nodes' stated power (fans: tests/test_fans.py)
            "cluster": {"racks": 1, "nodes_per_rack": 4, "node": {"gpus": 8, "parts": {"psu": _psu_part()},
                                                                  "fans": {"enabled": False}}},
            "maintenance": {"detection": {"dist": "fixed", "value_h": 0}, "crews": {"crew": {"count": 1}}},
            "workload": {"jobs": [{"name": "train", "gpus": 32, "work_h": 1000.0, "submit_h": 0.0}]},
            "power": quiet_power_section(inject=[{"feed": "A", "at_h": 2.0, "duration_h": 1.0}]),
            # identical GPUs (issue 23's spread off): any throttling comes from the outage alone
            "cooling": identical_gpus({"type": "air", "air": {"zones": 1, "supply_c": 22.0, "fan_part": None,
                                                              "crah": {"count": 2, "required": 1, "capacity_kw": 100.0,
                                                                       "failure": NEVER}},
                                       "gpu": {"r_air_c_per_w": 0.092},
                                       "plant": {"chillers": {"count": 2, "required": 1, "failure": NEVER,
                                                              "power": {"on_ups": on_ups, "restart_s": 300}},
                                                 "crah_power": {"on_ups": True}}})}


def test_coupling_outage_restarts_chillers_heats_gpus_throttles_and_costs_goodput() -> None:
    off = run_replication(load_dict(_coupling_doc(False)).scenario, 0).metrics
    on = run_replication(load_dict(_coupling_doc(True)).scenario, 0).metrics
    assert off["plant.power_stops.chiller"] == 2 and on["plant.power_stops.chiller"] == 0
    assert off["plant.loop_offset_max_c"] > 5.0 and on["plant.loop_offset_max_c"] == 0.0
    # each chiller off for the generator's start delay plus its restart
    assert off["plant.power_off_unit_hours.chiller"] == pytest.approx(2 * (10.0 + 300.0) / 3600.0, rel=1e-12)
    assert off["thermal.gpu_temp_max_c"] > on["thermal.gpu_temp_max_c"]
    assert off["thermal.throttled_gpu_hours"] > 0.0 == on["thermal.throttled_gpu_hours"]
    assert off["goodput.mechanism.thermal_slowdown"] > 0.0 == on["goodput.mechanism.thermal_slowdown"]
    assert off["goodput"] < on["goodput"]


def test_no_plant_no_plant_metrics() -> None:
    doc = _coupling_doc(True)
    del doc["cooling"]["plant"]
    m = run_replication(load_dict(doc).scenario, 0).metrics
    assert not [k for k in m if k.startswith("plant.")]


def test_cooling_on_ups_shortens_the_ride_through() -> None:
    """The UPS carries the chillers on battery: with them on it, it empties sooner, by exactly the load
    ratio (IT + CRAH fans + chillers' rated input) / (IT + CRAH fans) (the CRAH units are on UPS in both)."""
    def down_start(on_ups: bool) -> float:
        doc = transfer_doc(on_ups, 2.0, 2.0, 300.0, 10.0, 1.0, 30.0, 0.5)
        doc["power"]["generator"] = None
        doc["name"] = f"ride-{on_ups}"
        res = run_replication(load_dict(doc).scenario, 0)
        iv = res.tables["node_intervals"]
        return float(iv[(iv["state"] == "down") & (iv["start_h"] >= 2.0)]["start_h"].min()) - 2.0
    it_w = 4 * (4600.0 + 8 * 100.0)
    it_w += 2 * 100_000.0 * 0.05  # two CRAH units of 100 kW at the default fan power 0.05 kW/kW
    chiller_w = 2 * 50_000.0 / 5.0  # capacity / default COP, two chillers running
    assert down_start(True) == pytest.approx(down_start(False) * it_w / (it_w + chiller_w), rel=1e-9)


def test_crah_failing_while_unpowered_is_counted_once() -> None:
    """A CRAH unit that fails while the plant holds it off (no power) comes back only when both are over."""
    doc = _coupling_doc(True)
    doc["cooling"]["plant"]["crah_power"] = {"on_ups": False, "restart_s": 600}
    doc["cooling"]["air"]["crah"]["repair"] = {"hot_swap": True, "time": {"dist": "fixed", "value_h": 0.05}}
    doc["cooling"]["inject"] = [{"part": "crah", "index": 0, "at_h": 2.01}]
    model = Model(load_dict(doc).scenario, 0)
    model.run()
    thermal = next(c for c in model.components if isinstance(c, Thermal))
    assert int(thermal.air_rooms.crah_healthy[0]) == 2  # both back: nothing counted twice or lost
    res = model.result(True)
    tl = res.tables["cooling_timeline"]
    z = tl[(tl["unit"] == "zone") & (tl["time_h"] >= 2.0)]
    assert float(z["capacity_kw"].min()) == 0.0  # both units off (no power) during the restart
    tk = res.tables["tickets"]
    assert len(tk[tk["part"].astype(str) == "crah"]) == 1  # the injected failure was repaired


def test_shared_facility_water_failure_stops_every_chiller_and_is_repaired_by_the_crews() -> None:
    doc = _coupling_doc(True)
    doc["cooling"]["plant"]["shared"] = {"facility_water": {"failure": NEVER,
                                                            "repair": {"time": {"dist": "fixed", "value_h": 0.2}}}}
    doc["cooling"]["inject"] = [{"part": "facility_water", "index": 0, "at_h": 1.0}]
    res = run_replication(load_dict(doc).scenario, 0)
    m = res.metrics
    assert m["plant.loop_offset_max_c"] > 1.0
    # short from the failure until the repair 0.2 h later, or until every node has tripped (no heat left:
    # the plant re-reads the heat when nodes go down while it is short)
    assert m["thermal.trips"] == 4
    tl = res.tables["plant_timeline"]
    last_trip = float(res.tables["thermal_trips"]["start_h"].max())
    assert m["plant.capacity_short_hours"] == pytest.approx(last_trip - 1.0, rel=1e-9)
    assert float(tl.loc[(tl.time_h > 1.0) & (tl.time_h < 1.2), "heat_kw"].min()) == 0.0
    tk = res.tables["tickets"]
    assert "facility_water" in set(tk["part"].astype(str))


def test_row_branch_failure_takes_its_zones_crah_units() -> None:
    doc = _coupling_doc(True)
    doc["cooling"]["plant"]["shared"] = {"row_branch": {"failure": NEVER}}
    doc["cooling"]["inject"] = [{"part": "row_branch", "index": 0, "at_h": 1.0}]
    res = run_replication(load_dict(doc).scenario, 0)
    tl = res.tables["cooling_timeline"]
    z = tl[(tl["unit"] == "zone") & (tl["time_h"] >= 1.0)]
    assert float(z["capacity_kw"].iloc[0]) == 0.0
    assert res.metrics["cooling.zone_over_capacity_hours"] == pytest.approx(8.0, rel=1e-9)  # the default repair
    assert res.metrics["thermal.throttled_gpu_hours"] > 0  # the zone heats: the marginal GPUs throttle


def test_plant_feed_names_are_checked() -> None:
    doc = copy.deepcopy(_coupling_doc(True))
    doc["cooling"]["plant"]["chillers"]["power"]["feeds"] = ["B"]
    with pytest.raises(InputError, match=r"cooling\.plant\.chillers\.power\.feeds\.0"):
        load_dict(doc)


def test_ats_needs_a_generator() -> None:
    doc = _coupling_doc(True)
    doc["power"]["generator"] = None
    doc["power"]["ats"] = {"failure_to_transfer_prob": 0.1}
    with pytest.raises(InputError, match=r"power\.ats"):
        load_dict(doc)


def _dual_doc(dual: bool, prob: float = 0.0) -> dict[str, Any]:
    """Two feeds (2N), feed A's switchboard isolated for maintenance at 10 h for 8 h; two chillers (one
    needed), one on each feed, off UPS, restart 300 s."""
    doc = _coupling_doc(True)
    doc["horizon_days"] = 1.0
    psu = {**_psu_part(), "count": 8, "required": 4}
    doc["cluster"]["node"]["parts"]["psu"] = psu
    doc["power"] = quiet_power_section("2n", switchboard={"failure": None, "maintenance": {
        "interval_h": 1000.0, "duration_h": 8.0, "offset_h": 10.0}})
    if prob:
        doc["power"]["ats"] = {"failure_to_transfer_prob": prob}
    doc["cooling"]["plant"]["chillers"]["power"] = {"on_ups": False, "restart_s": 300, "dual_fed": dual}
    return doc


def test_dual_fed_chiller_transfers_to_the_other_feed_and_restarts() -> None:
    single = run_replication(load_dict(_dual_doc(False)).scenario, 0).metrics
    dual = run_replication(load_dict(_dual_doc(True)).scenario, 0).metrics
    # single-fed: chiller 0 (feed A) is off for the whole window and its restart; the other carries the load
    assert single["plant.power_off_unit_hours.chiller"] == pytest.approx(8.0 + 300.0 / 3600.0, rel=1e-12)
    assert "plant.transfers.chiller" not in single
    # dual-fed: it moves to feed B at once and is back after its restart; it stays there
    assert dual["plant.transfers.chiller"] == 1.0 and dual["plant.transfer_failures.chiller"] == 0.0
    assert dual["plant.power_off_unit_hours.chiller"] == pytest.approx(300.0 / 3600.0, rel=1e-12)


def test_dual_fed_transfer_that_fails_waits_for_its_feed() -> None:
    m = run_replication(load_dict(_dual_doc(True, prob=1.0)).scenario, 0).metrics
    assert m["plant.transfers.chiller"] == 0.0 and m["plant.transfer_failures.chiller"] == 1.0
    assert m["plant.power_off_unit_hours.chiller"] == pytest.approx(8.0 + 300.0 / 3600.0, rel=1e-12)


def test_dual_fed_needs_two_feeds() -> None:
    doc = _coupling_doc(True)
    doc["cooling"]["plant"]["chillers"]["power"]["dual_fed"] = True
    with pytest.raises(InputError, match=r"cooling\.plant\.chillers\.power\.dual_fed"):
        load_dict(doc)


def test_facility_figures_and_downtime_classes(tmp_path: Any) -> None:
    from twin.report.facility_figures import cause_class, downtime_by_class, figures, loop_curve

    assert [cause_class(c) for c in ("ccf:crah", "power:utility", "thermal_trip", "planned:power_maintenance",
                                     "repair:gpu", "gpu")] == ["common cause", "power", "thermal", "maintenance",
                                                                "repair drain", "failure"]
    res = run_replication(load_dict(_coupling_doc(False)).scenario, 0)
    by = downtime_by_class(res.tables["node_intervals"])
    iv = res.tables["node_intervals"]
    assert by.sum() == pytest.approx(float((iv.end_h - iv.start_h)[iv.state == "down"].sum()))
    t, x = loop_curve(res.tables["plant_timeline"], 12.0)
    assert x.max() == pytest.approx(res.metrics["plant.loop_offset_max_c"], rel=1e-12)  # the peak is an event
    names = figures(res, tmp_path)
    assert names == ["downtime_by_class.png", "plant_loop.png", "cooling_out_of_service.png"]
    assert all((tmp_path / n).stat().st_size > 1000 for n in names)


# ---- cooling maintenance with when_short: drain (issue 24 item 3) ---------------------------------------
def _drain_doc(kind: str, count: int, required: int, when_short: str | None = "drain", reboot_h: float = 0.1,
               cooling_inject: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Two air zones (or two coolant loops) of two racks × 2 nodes each, nothing failing at random; one
    kind of unit on a maintenance schedule every 100 h for 6 h, first visit at 5 h; 240 h (every drain ends
    before the horizon)."""
    mt: dict[str, Any] = {"interval_h": 100.0, "duration_h": 6.0, "offset_h": 5.0}
    if when_short is not None:
        mt["when_short"] = when_short
    group = {"count": count, "required": required, "failure": NEVER}
    plant: dict[str, Any] = {"chillers": {"failure": NEVER, **(group if kind == "chiller" else {})},
                             "maintenance": {kind: mt}}
    repair = {"hot_swap": True, "time": {"dist": "fixed", "value_h": 50.0}}
    if kind == "cdu":
        cooling: dict[str, Any] = {"type": "liquid", "thermal": False, "liquid": {
            "loops": 2, "capture_fraction": None, "leak": None,
            "cdu": {**group, "repair": repair, "pumps": {"failure": NEVER}}}}
    else:
        cooling = {"type": "air", "thermal": False, "air": {
            "zones": 2, "fan_part": None,
            "crah": {**(group if kind == "crah" else {"count": 2, "required": 1, "failure": NEVER}),
                     "repair": repair}}}
    cooling["plant"] = plant
    cooling["node"] = {"reboot_h": reboot_h}
    if cooling_inject:
        cooling["inject"] = cooling_inject
    return {"name": f"drain-{kind}", "horizon_days": 10.0, "seed": 3,
            "cluster": {"racks": 4, "nodes_per_rack": 2, "node": {"gpus": 8, "parts": {}}},
            "maintenance": {"detection": {"dist": "fixed", "value_h": 0}, "crews": {"crew": {"count": 1}}},
            "cooling": cooling}


def _down(res: Any) -> Any:
    iv = res.tables["node_intervals"]
    return iv[iv["state"] == "down"]


@pytest.mark.parametrize("kind,nodes_per_visit", [("crah", 4), ("cdu", 4), ("chiller", 8)])
def test_drain_with_n_loses_exactly_nodes_times_duration_plus_reboot_per_visit(kind: str, nodes_per_visit: int) -> None:
    """With N (count = required) every visit drains the nodes the unit cools (a zone, a loop, the whole
    hall for a chiller): nodes × (duration + reboot_h) per visit, to 1e-9, as planned maintenance."""
    res = run_replication(load_dict(_drain_doc(kind, 2, 2, reboot_h=0.25)).scenario, 0)
    m = res.metrics
    visits = m["plant.maintenance_windows"]
    # unit i of u visited at 5 + i·100/u + j·100 < 240
    units = 2 if kind == "chiller" else 4
    assert visits == sum(1 for i in range(units) for j in range(3) if 5.0 + i * 100.0 / units + j * 100.0 < 240.0)
    down = _down(res)
    lost = float((down["end_h"] - down["start_h"]).sum())
    assert lost == pytest.approx(visits * nodes_per_visit * (6.0 + 0.25), abs=1e-9)
    assert set(down["cause"].astype(str)) == {f"planned:{kind}_maintenance"}
    assert m["plant.maintenance_drains"] == visits
    assert m["plant.maintenance_drained_node_hours"] == pytest.approx(lost, abs=1e-9)
    assert m["plant.maintenance_drained_hours"] == pytest.approx(visits * 6.0, abs=1e-9)
    assert m["plant.maintenance_short_hours"] == 0.0 == m["plant.maintenance_exposure_hours"]
    # each drain covers exactly the unit's nodes, from the visit's start to duration + reboot_h after
    first = down[down["start_h"] == down["start_h"].min()]
    assert len(first) == nodes_per_visit and (first["end_h"] - first["start_h"]).tolist() == pytest.approx(
        [6.25] * nodes_per_visit, abs=1e-12)
    if kind != "chiller":  # unit 0 cools zone/loop 0: nodes 0-3
        assert sorted(first["node"].tolist()) == [0, 1, 2, 3]


@pytest.mark.parametrize("kind", ["crah", "cdu", "chiller"])
def test_drain_with_a_working_spare_drains_nothing_and_counts_exposure(kind: str) -> None:
    res = run_replication(load_dict(_drain_doc(kind, 2, 1)).scenario, 0)
    m = res.metrics
    assert len(_down(res)) == 0
    assert m["plant.maintenance_drains"] == 0.0 == m["plant.maintenance_drained_node_hours"]
    assert m["plant.maintenance_exposure_hours"] == pytest.approx(m["plant.maintenance_windows"] * 6.0, abs=1e-9)


@pytest.mark.parametrize("kind", ["crah", "cdu"])
def test_drain_when_the_spare_has_failed_at_the_visit(kind: str) -> None:
    """N+1 by design, but unit 1 of group 0 failed (injected at 2 h, 50 h repair) when unit 0's visit
    starts at 5 h: that visit drains group 0's nodes; the later ones, with the spare repaired, do not."""
    res = run_replication(load_dict(_drain_doc(kind, 2, 1, cooling_inject=[
        {"part": kind, "index": 1, "at_h": 2.0}])).scenario, 0)
    m = res.metrics
    down = _down(res)
    drained = down[down["cause"].astype(str) == f"planned:{kind}_maintenance"]
    assert m["plant.maintenance_drains"] == 1.0
    assert sorted(drained["node"].tolist()) == [0, 1, 2, 3]
    assert drained["start_h"].tolist() == pytest.approx([5.0] * 4, abs=1e-12)
    assert float((drained["end_h"] - drained["start_h"]).sum()) == pytest.approx(4 * (6.0 + 0.1), abs=1e-9)
    assert m["plant.maintenance_exposure_hours"] == pytest.approx((m["plant.maintenance_windows"] - 1) * 6.0,
                                                                  abs=1e-9)


def test_run_short_is_the_default_and_drains_nothing() -> None:
    """Without when_short the N group runs short for the window as before: no node down, no drain metrics."""
    for ws in (None, "run_short"):
        res = run_replication(load_dict(_drain_doc("crah", 2, 2, when_short=ws)).scenario, 0)
        m = res.metrics
        assert len(_down(res)) == 0
        assert m["plant.maintenance_short_hours"] == pytest.approx(m["plant.maintenance_windows"] * 6.0, abs=1e-9)
        assert not [k for k in m if "drain" in k]


def test_drain_is_a_planned_interruption_for_the_job_on_the_nodes() -> None:
    doc = _drain_doc("crah", 2, 2)
    doc["workload"] = {"jobs": [{"name": "train", "gpus": 64, "work_h": 10000.0, "submit_h": 0.0}]}
    m = run_replication(load_dict(doc).scenario, 0).metrics
    assert m["interruptions.planned"] == m["plant.maintenance_drains"] > 0
    assert m["interruptions.unplanned"] == 0.0
