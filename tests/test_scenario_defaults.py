"""A partial section keeps the rest of its field's own default (twin.scenario.defaults).

Fields whose default differs from its model's class defaults (a PDU's 2 h repair, a generator's 12 h,
an optic's 1 h hot swap, a CDU's hot-swapped repair, a leak's 8 h) must not fall back to the class
defaults when a scenario names only part of them (``pdu: {repair: {crew: electrical}}`` gave 8 h).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from twin.scenario.distributions import Fixed, Lognormal
from twin.scenario.loader import load_dict

SCEN = Path(__file__).resolve().parents[1] / "scenarios"


def baseline(**sections: Any) -> dict[str, Any]:
    doc = yaml.safe_load((SCEN / "baseline.yaml").read_text())
    doc.update(sections)
    return doc


CREWS = {"technicians": {"count": 2}, "electrical": {"count": 1}}


def with_crews(doc: dict[str, Any]) -> dict[str, Any]:
    doc["maintenance"] = {**doc.get("maintenance", {}), "crews": CREWS}
    return doc


def test_power_elements_keep_their_own_repair_time_when_only_the_crew_is_given() -> None:
    crew = {"repair": {"crew": "electrical"}}
    power = {"topology": "n+1", "ups": crew, "generator": crew, "switchboard": crew, "pdu": crew}
    p = load_dict(with_crews(baseline(power=power))).scenario.power
    assert p is not None
    assert (p.pdu.repair.time, p.generator.repair.time) == (Fixed(value_h=2.0), Fixed(value_h=12.0))
    assert (p.ups.repair.time, p.switchboard.repair.time) == (Fixed(value_h=8.0), Fixed(value_h=8.0))
    assert {p.ups.repair.crew, p.generator.repair.crew, p.switchboard.repair.crew, p.pdu.repair.crew} == {"electrical"}
    # a time given replaces the default whole
    power["pdu"] = {"repair": {"time": {"dist": "lognormal", "mean_h": 3, "sigma": 0.5}}}
    p = load_dict(with_crews(baseline(power=power))).scenario.power
    assert p is not None and p.pdu.repair.time == Lognormal(mean_h=3.0, sigma=0.5) and p.pdu.repair.crew is None


def test_fabric_parts_keep_their_own_repair_when_part_of_them_is_given() -> None:
    net = yaml.safe_load((SCEN / "baseline.yaml").read_text())["network"]
    for k in ("optic", "leaf", "spine"):
        del net[k]
    net["optic"] = {"failure": {"mtbf_h": 100000}}  # the repair: the optic's default (1 h hot swap)
    net["leaf"] = {"repair": {"crew": "technicians"}}  # the failure and repair time: the switch's default
    n = load_dict(baseline(network=net)).scenario.network
    assert n is not None
    assert n.optic.repair.hot_swap and n.optic.repair.time == Fixed(value_h=1.0)
    assert n.optic.failure.mean() == 100000.0
    assert n.leaf.repair.hot_swap and n.leaf.repair.time == Fixed(value_h=4.0) and n.leaf.repair.crew == "technicians"
    assert n.leaf.failure == n.spine.failure  # (the switch default)
    # a partial repair of the optic merges into the optic's default repair, not the fabric part's
    net["optic"] = {"repair": {"crew": "technicians"}}
    n = load_dict(baseline(network=net)).scenario.network
    assert n is not None and n.optic.repair.time == Fixed(value_h=1.0) and n.optic.repair.crew == "technicians"


@pytest.mark.parametrize("unit", ["cdu", "pumps", "leak"])
def test_cooling_units_keep_their_own_repair(unit: str) -> None:
    liquid: dict[str, Any] = {"cdu": {"repair": {"crew": "technicians"}}} if unit == "cdu" else (
        {"cdu": {"pumps": {"repair": {"crew": "technicians"}}}} if unit == "pumps" else
        {"leak": {"repair": {"crew": "technicians"}}})
    c = load_dict(baseline(cooling={"type": "liquid", "liquid": liquid})).scenario.cooling
    assert c is not None and c.liquid is not None
    r = c.liquid.cdu.repair if unit == "cdu" else c.liquid.cdu.pumps.repair if unit == "pumps" else c.liquid.leak.repair
    assert r.crew == "technicians"
    if unit == "leak":
        assert r.time == Fixed(value_h=8.0) and not r.hot_swap
    else:
        assert r.time == Fixed(value_h=4.0) and r.hot_swap


def test_a_wrong_key_in_a_partial_section_is_still_refused() -> None:
    from twin.errors import InputError

    power = {"topology": "n+1", "pdu": {"repair": {"crew": "electrical", "tme": 3}}}
    with pytest.raises(InputError, match=r"power\.pdu\.repair\.tme"):
        load_dict(with_crews(baseline(power=power)))
