"""Rack density and floor space (issue 42, item 2): the supported power per rack of each cooling option, the
racks and white space of the cluster and their capital (building per m², distribution per kW) in ``cost.*``
and in the capital ``twin decide``'s payback compares, all by hand in a deterministic case; a rack above its
option's limit is an advisory."""

from __future__ import annotations

import copy
import math
from typing import Any

import pytest

from twin.model.costs import annuity_factor, capital_items, capital_purchase
from twin.scenario import load_dict
from twin.scenario.advice import rack_advice
from twin.scenario.density import floor_plan
from twin.sim import run_replication

NEVER = {"dist": "fixed", "value_h": 1.0e9}


def doc(ctype: str, npr: int = 4, racks: int = 2) -> dict[str, Any]:
    """``racks`` racks of ``npr`` DGX-class nodes (10.2 kW nameplate, 8U), one air zone of four CRAH units
    and/or one loop of two CDUs, default prices, a day."""
    cool: dict[str, Any] = {"type": ctype}
    if ctype in ("air", "hybrid"):
        cool["air"] = {"zones": 1, "crah": {"count": 4, "required": 3, "capacity_kw": 200, "failure": NEVER},
                       "fan_part": None}
    if ctype in ("liquid", "hybrid"):
        cool["liquid"] = {"loops": 1, "cdu": {"failure": NEVER, "pumps": {"failure": NEVER}}, "leak": None}
    return {"name": f"density-{ctype}", "seed": 1, "horizon_days": 1.0,
            "cluster": {"racks": racks, "nodes_per_rack": npr, "node": {"gpus": 8, "parts": {}}},
            "maintenance": {"crews": {"crew": {"count": 1, "shift": "24x7"}}},
            "workload": {"jobs": []}, "cooling": cool, "costs": {}}


def items(sc: Any) -> dict[str, Any]:
    return {i.item: i for i in capital_items(sc) if i.group == "building"}


def test_floor_space_and_its_capital_by_hand() -> None:
    """Air: 2 racks × 2.5 m² + 4 CRAH units × 5 m² = 25 m²; liquid (30 % of the heat still on air: the CRAH
    units stay): + 2 CDUs × 3 m² = 31 m². Distribution: 8 nodes × 10.2 kW = 81.6 kW at USD 250/kW."""
    air = load_dict(doc("air")).scenario
    liq = load_dict(doc("liquid")).scenario
    fa, fl = floor_plan(air), floor_plan(liq)
    assert fa["white_space_m2"] == pytest.approx(2 * 2.5 + 4 * 5.0)
    assert fl["white_space_m2"] == pytest.approx(2 * 2.5 + 4 * 5.0 + 2 * 3.0)
    assert fa["rack_kw"] == pytest.approx(4 * 10.2) and fa["it_kw"] == pytest.approx(8 * 10.2)
    # supported density: air 41 kW (4 nodes of 10.2 kW fit), liquid 132 kW (12 fit): racks at the limit
    assert fa["rack_limit_kw"] == 41.0 and fl["rack_limit_kw"] == 132.0
    assert fa["racks_at_limit"] == 2.0 and fl["racks_at_limit"] == 1.0  # ceil(8/4), ceil(8/12)
    # ... and the rack's U space caps it: 42U holds five 8U nodes
    u = copy.deepcopy(doc("liquid"))
    u["cluster"]["rack"] = {"u_space": 42}
    assert floor_plan(load_dict(u).scenario)["racks_at_limit"] == 2.0  # ceil(8/5)
    b = items(air)
    assert b["white space"].quantity == pytest.approx(25.0) and b["white space"].unit_price == 5000.0
    assert b["electrical distribution"].quantity == pytest.approx(81.6)
    assert b["electrical distribution"].unit_price == 250.0
    # in the purchase price (the payback's extra capital) and amortised in cost.capital.building
    cheap = copy.deepcopy(doc("air"))
    cheap["costs"] = {"capital": {"white_space_per_m2": 0.0, "distribution_per_kw": 0.0}}
    assert capital_purchase(air) - capital_purchase(load_dict(cheap).scenario) == pytest.approx(
        25.0 * 5000.0 + 81.6 * 250.0)
    res = run_replication(air)
    m = res.metrics
    crf = annuity_factor(0.08, 15.0)  # default discount rate and facility amortisation
    assert m["cost.capital.building"] == pytest.approx((25.0 * 5000.0 + 81.6 * 250.0) * crf / 365.0, rel=1e-12)
    assert m["density.white_space_m2"] == 25.0 and m["density.rack_limit_kw"] == 41.0
    assert m["density.racks_at_limit"] == 2.0 and m["density.rack_kw"] == pytest.approx(40.8)
    lines = res.tables["costs"]
    assert set(lines.loc[lines.group == "building", "item"]) == {"white space", "electrical distribution"}


def test_rack_over_its_options_limit_is_an_advisory() -> None:
    """Eight 10.2 kW nodes (81.6 kW) in a rack: above an air hall's 41 kW, within a liquid hall's 132 kW."""
    air = load_dict(doc("air", npr=8, racks=1)).scenario
    adv = rack_advice(air)
    assert len(adv) == 1 and adv[0].field == "cluster.nodes_per_rack"
    assert "81.6 kW" in adv[0].text and "41 kW" in adv[0].text and "cooling.density.air_rack_kw" in adv[0].text
    assert rack_advice(load_dict(doc("liquid", npr=8, racks=1)).scenario) == []
    hyb = load_dict(doc("hybrid", npr=8, racks=1)).scenario  # 75 kW: over
    assert len(rack_advice(hyb)) == 1 and "cooling.density.hybrid_rack_kw" in rack_advice(hyb)[0].text
    # a limit given in the scenario wins over the option's
    given = copy.deepcopy(doc("liquid", npr=8, racks=1))
    given["cluster"]["rack"] = {"power_limit_kw": 60}
    adv = rack_advice(load_dict(given).scenario)
    assert len(adv) == 1 and "cluster.rack.power_limit_kw" in adv[0].text
    # no cooling section: no option, no limit
    none = copy.deepcopy(doc("air", npr=8, racks=1))
    del none["cooling"]
    sc = load_dict(none).scenario
    assert rack_advice(sc) == [] and math.isnan(floor_plan(sc)["rack_limit_kw"])
