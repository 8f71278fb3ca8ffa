"""Rack parts (cluster.rack_parts): units shared by a rack's nodes (an NVLink domain's switch trays,
a power shelf). Coupling: a rack group's failure takes every node of the rack down and interrupts
its jobs; k-of-n groups; the availability of a rack part against the closed form; bad input."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from scipy import stats

from twin.errors import InputError
from twin.physics import closed_forms as cf
from twin.scenario.advice import job_interruption_rates_per_h
from twin.scenario.loader import load_dict
from twin.sim import Model
from twin.validation.framework import TEST_CONFIDENCE

NEVER = {"mtbf_h": 1e15}


def doc(rack_parts: dict[str, Any], racks: int = 4, npr: int = 2, days: float = 10.0,
        jobs: list[dict[str, Any]] | None = None, technicians: int = 8) -> dict[str, Any]:
    d: dict[str, Any] = {
        "name": "racks", "seed": 3, "horizon_days": days,
        "cluster": {"racks": racks, "nodes_per_rack": npr, "rack_parts": rack_parts,
                    "node": {"gpus": 4, "parts": {"gpu": {"count": 4, "failure": NEVER}}}},
        "maintenance": {"detection": {"dist": "fixed", "value_h": 0.5},
                        "crews": {"techs": {"count": technicians, "shift": "24x7"}}},
    }
    if jobs is not None:
        d["workload"] = {"scheduler": {"policy": "fifo", "hot_spares": 0}, "jobs": jobs}
    return d


def switch(count: int = 1, **kw: Any) -> dict[str, Any]:
    return {"count": count, "failure": NEVER, "repair": {"time": {"dist": "fixed", "value_h": 3.0}}, **kw}


def test_a_rack_part_failure_takes_the_rack_down_and_interrupts_its_jobs() -> None:
    """NVSwitch tray of rack 1 fails at 10 h: both nodes of rack 1 are down for detection (0.5 h) +
    repair (3 h); the job on racks 0-1 is interrupted (cause nvswitch), the job on racks 2-3 is not."""
    jobs = [{"name": "a", "gpus": 16, "work_h": 1e4}, {"name": "b", "gpus": 16, "work_h": 1e4}]
    m = Model(load_dict(doc({"nvswitch": switch()}, jobs=jobs)).scenario, 0)
    down: dict[float, list[int]] = {}
    m.engine.call_at(10.0, lambda: m.facility["nvswitch"].fail_now(1))  # unit 1 = rack 1 (one per rack)
    m.engine.call_at(11.0, lambda: down.setdefault(11.0, [n for n in range(8) if not m.cluster.is_up(n)]))
    m.engine.call_at(14.0, lambda: down.setdefault(14.0, [n for n in range(8) if not m.cluster.is_up(n)]))
    m.run()
    res = m.result()
    assert down == {11.0: [2, 3], 14.0: []}
    assert res.metrics["node_down_hours.nvswitch"] == pytest.approx(2 * 3.5)
    assert res.metrics["failures.nvswitch"] == 1.0
    jt = res.tables["jobs"]
    ints = jt[jt.record == "interruption"]
    assert ints.cause.tolist() == ["nvswitch"] and ints.name.tolist() == ["a"]
    t = res.tables["tickets"]
    assert t.part.tolist() == ["nvswitch"] and t.path.tolist() == ["hall.rack01.nvswitch0"]
    assert not t.drained.any()


def test_k_of_n_rack_group() -> None:
    """A power shelf of 3 units, 2 required: the rack goes down at the second failure and returns
    when one is repaired."""
    spec = switch(count=3, required=2, effect="redundant")
    spec["repair"] = {"time": {"dist": "fixed", "value_h": 10.0}}
    m = Model(load_dict(doc({"shelf": spec}, racks=2)).scenario, 0)
    pop = m.facility["shelf"]
    seen: list[tuple[float, bool]] = []

    def look() -> None:
        seen.append((m.engine.now, m.cluster.is_up(0)))

    m.engine.call_at(1.0, lambda: pop.fail_now(0))
    m.engine.call_at(2.0, look)  # one of three down: the rack runs
    m.engine.call_at(3.0, lambda: pop.fail_now(1))
    m.engine.call_at(4.0, look)  # two down: below the 2 required
    m.engine.call_at(12.0, look)  # the first is back at 1 + 0.5 + 10 = 11.5 h
    m.run()
    assert seen == [(2.0, True), (4.0, False), (12.0, True)]
    assert m.result().metrics["node_down_hours.shelf"] == pytest.approx(2 * (11.5 - 3.0))


def test_rack_part_availability_matches_the_closed_form() -> None:
    """One exponential unit per rack (MTBF 100 h), down for detection 0.5 h + repair 3 h with ample
    crews: node availability = MTBF / (MTBF + 3.5), within the 99.99 % t-interval of 8 replications
    (20,000 h each: the start-up bias, (1 − A)/((λ + μ)·T) ~ 1e-5, is far inside it)."""
    spec = {"count": 1, "failure": {"mtbf_h": 100.0}, "repair": {"time": {"dist": "fixed", "value_h": 3.0}}}
    sc = load_dict(doc({"nvswitch": spec}, racks=16, npr=1, days=20000 / 24)).scenario
    avail = np.array([_avail(sc, r) for r in range(8)])
    want = float(cf.availability_single(100.0, 3.5))
    # at the suite's level (tests/judging.py), a stated interval (±0.2 % of the reference), and the wrong
    # model "detection forgotten" (MTBF/(MTBF + 3 h)) excluded
    lo, hi = stats.t.interval(TEST_CONFIDENCE, len(avail) - 1, loc=avail.mean(),
                              scale=avail.std(ddof=1) / np.sqrt(len(avail)))
    assert lo <= want <= hi, (want, lo, hi)
    assert (hi - lo) / 2 < 2e-3 * want, (lo, hi)
    no_detection = float(cf.availability_single(100.0, 3.0))
    assert not lo <= no_detection <= hi, (no_detection, lo, hi)


def _avail(sc: Any, rep: int) -> float:
    m = Model(sc, rep)
    m.run()
    return m.result().metrics["node_availability"]


def test_job_interruption_rate_counts_the_racks_it_needs() -> None:
    spec = {"count": 9, "failure": {"mtbf_h": 90000.0}}
    sc = load_dict(doc({"nvswitch": spec}, racks=8, npr=18)).scenario
    rows = {src: r for src, _, r in job_interruption_rates_per_h(sc, 40)}  # 40 nodes: 3 racks of 18
    assert rows["nvswitch"] == pytest.approx(3 * 9 / 90000.0)
    shelf = load_dict(doc({"shelf": {**spec, "required": 7, "effect": "redundant"}}, racks=8, npr=18)).scenario
    assert "shelf" not in {src for src, _, _ in job_interruption_rates_per_h(shelf, 40)}  # k-of-n: left out


@pytest.mark.parametrize("rack_parts,extra,needle", [
    ({"nvswitch": {"count": 1, "effect": "transient", "failure": NEVER}}, {}, "cluster.rack_parts.nvswitch.effect"),
    ({"gpu": {"count": 1, "failure": NEVER}}, {}, "taken by a node part"),
    ({"nv-switch": {"count": 1, "failure": NEVER}}, {}, "letters, digits and _"),
    ({"nvswitch": {"count": 1, "failure": NEVER, "repair": {"crew": "elves"}}}, {}, "unknown crew pool"),
    ({"nvswitch": {"count": 1, "failure": NEVER}}, {"spares": {"nvswtich": {"stock": 1}}}, "maintenance.spares.nvswtich"),
    ({"tray": {"count": 3, "min_to_run": 1, "failure": NEVER}}, {}, "cluster.rack_parts.tray.min_to_run"),
    ({"tray": {"count": 1, "failure": NEVER, "repair": {"burn_in_h": 2}}}, {}, "cluster.rack_parts.tray.repair.burn_in_h"),
])
def test_bad_rack_parts_are_one_clear_error(rack_parts: dict[str, Any], extra: dict[str, Any], needle: str) -> None:
    d = doc(rack_parts)
    d["maintenance"].update(extra)
    with pytest.raises(InputError) as exc:
        load_dict(d, "s.yaml")
    assert needle in str(exc.value) and "\n" not in str(exc.value)


def test_tickets_of_a_downed_rack_are_dispatched_first() -> None:
    """A redundant shelf's ticket has no impact (it waits behind node-down work, tie-break priority 2)
    while its rack still runs, and the rack's GPUs once the rack is down; a node_down tray's is 0."""
    shelf = {"count": 3, "required": 2, "effect": "redundant", "failure": NEVER}
    m = Model(load_dict(doc({"shelf": shelf, "tray": switch()}, racks=2)).scenario, 0)
    pop, tray = m.facility["shelf"], m.facility["tray"]
    assert pop.priority == 2 and tray.priority == 0
    rack_gpus = m.cluster.nodes_per_rack * m.cluster.gpus_per_node
    pop.fail_now(0)
    assert m.shop.impact_gpus(pop, 0) == 0 and m.cluster.is_up(0)
    pop.fail_now(1)
    assert m.shop.impact_gpus(pop, 0) == m.shop.impact_gpus(pop, 1) == rack_gpus and not m.cluster.is_up(0)
    assert m.shop.impact_gpus(pop, 3) == 0  # rack 1 runs
    assert m.shop.impact_gpus(tray, 0) == 0  # the tray has not failed: the rack is down for the shelf only


def test_lifetimes_tell_node_parts_from_rack_parts() -> None:
    """A node part 'fan' with 12 units and a rack part 'fan1': hall.rack00.node000.fan11 is a fan."""
    d = doc({"fan1": {"count": 2, "failure": NEVER}})
    d["cluster"]["node"]["parts"]["fan"] = {"count": 12, "effect": "redundant", "required": 10, "failure": NEVER}
    m = Model(load_dict(d).scenario, 0)
    m.parts["fan"].reschedule(11, 1.0)  # unit 11 = node 0's 12th fan
    m.facility["fan1"].reschedule(1, 2.0)  # unit 1 = rack 0's second fan1
    m.run()
    lives = m.lifetimes()
    failed = lives[lives.failed == 1].set_index("component_id")["part"].to_dict()
    assert failed == {"hall.rack00.node000.fan11": "fan", "hall.rack00.fan11": "fan1"}
