"""Server fans (issue 42, item 1): the cube law and the fan curve against hand computations, a failed fan
speeding the others up (more power) before the GPUs warm, liquid nodes drawing less fan power at the same
load, and the nameplate convention (the fans' full-speed power leaves the non-GPU load, it is not added)."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest

from twin.physics.fans import fan_demand, fan_power_w, fan_speed, node_fan_power_w
from twin.scenario import load_dict
from twin.sim import Model

NEVER = {"dist": "fixed", "value_h": 1.0e9}
FAN = {"count": 6, "required": 5, "min_to_run": 1, "effect": "redundant", "failure": NEVER,
       "repair": {"hot_swap": True, "time": {"dist": "fixed", "value_h": 10.0}}}
"""Six fans, five needed for the nominal air flow (DGX-class: the thermal model's fan factor acts below five)."""
SUPPLY_C = 24.0
FULL_W = 1020.0  # 10 % of the 10.2 kW nameplate (cluster.node.fans.share)


def doc(ctype: str = "air", inject: list[dict[str, Any]] | None = None, hours: float = 6.0,
        supply_c: float = SUPPLY_C) -> dict[str, Any]:
    """One busy DGX-class node (8 × 700 W + 4,600 W = 10.2 kW, its nameplate) in a hall of ample cooling."""
    cool: dict[str, Any] = {"type": ctype, "gpu": {"r_sigma": 0.0},
                            "inject": inject or [], "trace": {"nodes": [0], "from_h": 0, "to_h": hours}}
    if ctype == "air":
        cool["air"] = {"zones": 1, "crah": {"count": 4, "required": 3, "capacity_kw": 30, "failure": NEVER},
                       "supply_c": supply_c, "fan_part": "fan", "design_ambient_c": 60, "rack_rise_c": 0,
                       "recirculation_c": 0, "slot_preheat_c": 0}
    else:
        cool["liquid"] = {"cdu": {"failure": NEVER, "pumps": {"failure": NEVER}}, "leak": None,
                          "capture_fraction": None}
    return {"name": f"fans-{ctype}", "seed": 3, "horizon_days": hours / 24.0,
            "cluster": {"racks": 1, "nodes_per_rack": 1, "node": {"gpus": 8, "parts": {"fan": FAN}}},
            "maintenance": {"detection": {"dist": "fixed", "value_h": 0.25},
                            "crews": {"crew": {"count": 1, "shift": "24x7"}}},
            "workload": {"jobs": [{"name": "all", "gpus": 8, "work_h": 1e6, "submit_h": 0.0}]},
            "cooling": cool}


def run(d: dict[str, Any]) -> Model:
    m = Model(load_dict(d).scenario, 0)
    m.run()
    return m


def power_at(m: Model, t_h: float) -> float:
    """Site IT power (W) from time ``t_h`` on (the recorder's step function)."""
    ts, vs = m.recorder.level_series("site_power_w")
    return float(vs[np.searchsorted(ts, t_h, side="right") - 1])


# ---- the laws, by hand --------------------------------------------------------------------------------

def test_cube_law_against_hand_computation() -> None:
    assert fan_power_w(0.5, 1000.0) == pytest.approx(125.0)  # 1000 × 0.5³
    assert fan_power_w(1.0, 1020.0) == pytest.approx(1020.0)
    assert fan_power_w(0.0, 1020.0) == 0.0
    assert np.allclose(fan_power_w(np.array([0.2, 0.8]), 500.0), [4.0, 256.0])
    # the fan curve: 82 % of nameplate heat at 24 °C inlet, full speed at 100 % and 30 °C, exhaust held at 45 °C
    assert fan_demand(0.82, 24.0, 30.0, 45.0, 0.3) == pytest.approx(0.82 * 15.0 / 21.0)
    assert fan_demand(0.1, 24.0, 30.0, 45.0, 0.3) == 0.3  # the control's minimum speed
    assert fan_demand(1.0, 50.0, 30.0, 45.0, 0.3) == pytest.approx(15.0)  # inlet above the exhaust: rise floored at 1 °C
    # five of six fans carry the flow: each at 6/5 of the speed, the node's power × (6/5)²
    assert fan_speed(0.5, 6, 5) == pytest.approx(0.6)
    assert node_fan_power_w(0.5, 6, 5, 1020.0) == pytest.approx(1020.0 * 5 / 6 * 0.6 ** 3)
    assert node_fan_power_w(0.5, 6, 5, 1020.0) / node_fan_power_w(0.5, 6, 6, 1020.0) == pytest.approx(1.44)
    assert fan_speed(0.9, 6, 4) == 1.0 and node_fan_power_w(0.9, 6, 4, 1020.0) == pytest.approx(680.0)
    assert node_fan_power_w(0.9, 6, 0, 1020.0) == 0.0


# ---- in the simulation: node power, the nameplate convention -------------------------------------------

def test_node_power_takes_the_fans_out_of_the_non_gpu_load() -> None:
    m = run(doc(hours=1.0))
    speed = 15.0 / (45.0 - SUPPLY_C)  # the node at its nameplate (share 1) with 24 °C inlet air
    fans_w = FULL_W * speed ** 3
    assert power_at(m, 0.5) == pytest.approx(10200.0 - FULL_W + fans_w, rel=1e-12)
    met = m.result(tables=False).metrics
    assert met["energy.server_fans_kwh"] == pytest.approx(fans_w * 1.0 / 1000.0, rel=1e-9)
    assert met["fans.peak_speed"] == pytest.approx(speed)
    # warmer inlet air, faster fans: the fan curve's inlet term, through the hall's supply
    warm = run(doc(hours=1.0, supply_c=27.0)).result(tables=False).metrics
    assert warm["energy.server_fans_kwh"] == pytest.approx(FULL_W * (15.0 / 18.0) ** 3 / 1000.0, rel=1e-9)
    # fans off: the non-GPU load keeps them at full speed (the nameplate)
    off = copy.deepcopy(doc(hours=1.0))
    off["cluster"]["node"]["fans"] = {"enabled": False}
    assert power_at(run(off), 0.5) == pytest.approx(10200.0)


# ---- coupling through the bus: a fan failure, then the GPUs ---------------------------------------------

def test_fan_failure_speeds_the_others_up_before_the_gpus_warm() -> None:
    """Fan 0 fails at 2 h: five fans left (the required count) carry the flow at 6/5 of the speed, their power
    × 1.44 at once, and the GPUs' temperature does not move; fan 1 fails at 3 h: four left, below the five
    needed, the fans run flat out and only then the GPUs' thermal resistance rises (fan factor 5/4)."""
    m = run(doc(inject=[{"part": "fan", "index": 0, "at_h": 2.0}, {"part": "fan", "index": 1, "at_h": 3.0}]))
    s0 = 15.0 / (45.0 - SUPPLY_C)
    before = power_at(m, 1.9)
    one_down = power_at(m, 2.0)
    two_down = power_at(m, 3.0)
    assert before == pytest.approx(10200.0 - FULL_W + FULL_W * s0 ** 3, rel=1e-12)
    assert one_down - before == pytest.approx(FULL_W * (5 / 6 * (6 / 5 * s0) ** 3 - s0 ** 3), rel=1e-9)
    assert one_down > before
    tr = m.result().tables["thermal_trace"]
    g0 = tr[(tr.node == 0) & (tr.gpu == 0)].sort_values("time_h", kind="stable")
    steady = g0[g0.time_h < 2.0].tss_c.iloc[-1]
    during = g0[(g0.time_h >= 2.0) & (g0.time_h < 3.0)]
    assert len(during) and (during.tss_c == steady).all() and (during.r_c_per_w == g0.r_c_per_w.iloc[0]).all()
    after = g0[g0.time_h >= 3.0]
    assert after.tss_c.iloc[0] > steady  # the GPUs warm only once the fans cannot keep up
    assert after.r_c_per_w.iloc[0] == pytest.approx(g0.r_c_per_w.iloc[0] * 5 / 4)
    # by then the fans are flat out: four of six at full speed (the GPUs' 700 W is unchanged below 89 °C)
    assert two_down - before == pytest.approx(FULL_W * (4 / 6) - FULL_W * s0 ** 3, rel=1e-9)


def test_liquid_nodes_draw_less_fan_power_at_the_same_load() -> None:
    air = run(doc(hours=2.0)).result(tables=False).metrics
    liq = run(doc("liquid", hours=2.0)).result(tables=False).metrics
    assert liq["energy.server_fans_kwh"] < air["energy.server_fans_kwh"]
    # residual fans: 25 % of the air node's, with no air plant their inlet is the design inlet (30 °C): full speed
    assert liq["energy.server_fans_kwh"] == pytest.approx(0.25 * FULL_W * 1.0 * 2.0 / 1000.0, rel=1e-9)
    # the same GPUs and the rest of the node: IT energy lower by the fans alone
    d_fans = air["energy.server_fans_kwh"] - liq["energy.server_fans_kwh"]
    assert air["energy.it_kwh"] - liq["energy.it_kwh"] == pytest.approx(d_fans, rel=1e-9)


def test_fans_larger_than_the_non_gpu_load_are_refused() -> None:
    from twin.errors import InputError

    d = doc()
    d["cluster"]["node"]["fans"] = {"max_w": 5000}
    with pytest.raises(InputError, match=r"cluster\.node\.fans\.max_w: .* must be <= non_gpu_idle_w \(4600\)"):
        load_dict(d)


def test_a_warming_room_speeds_the_fans_up_through_the_bus() -> None:
    """Every CRAH unit lost at 2 h: the zone's held inlet steps up (0.5 °C steps, Topic.ZONE_INLET) toward
    24 + 10.2 kW × R_room (R_room = 2 °C/min × 15 min / 90 kW) = 27.4 °C, and the node's fans follow the fan
    curve at each step. The GPUs stay far below their slowdown, so the site power's rise is the fans'."""
    crah = [{"part": "crah", "index": i, "at_h": 2.0} for i in range(4)]
    m = run(doc(inject=crah))
    res = m.result()
    assert res.metrics["thermal.trips"] == 0 and res.metrics["thermal.throttled_gpu_hours"] == 0
    top_c = SUPPLY_C + 10.2 * (2.0 * 15.0 / (3 * 30.0))
    before = power_at(m, 1.9)
    ts, vs = m.recorder.level_series("site_power_w")
    warm = [float(v) for t, v in zip(ts, vs) if t >= 2.0]
    assert len(warm) >= 7 and all(b > a for a, b in zip(warm, warm[1:]))  # faster at every step of the room
    fan = lambda t_c: FULL_W * (15.0 / (45.0 - t_c)) ** 3  # noqa: E731
    assert before == pytest.approx(10200.0 - FULL_W + fan(SUPPLY_C), rel=1e-12)
    assert warm[-1] == pytest.approx(10200.0 - FULL_W + fan(top_c), rel=1e-9)
    assert res.metrics["fans.peak_speed"] == pytest.approx(15.0 / (45.0 - top_c), rel=1e-9)
