"""The headroom a hall leaves for its load (issue 52 item 2): closed forms from a scenario, nothing simulated.

Each check is (what, capacity, load, unit); headroom = capacity − load, a shortfall when negative. The load
is the design load the equipment is sized for, every node at full power (``cluster.node.full_power_w``:
non-GPU load + GPUs × TDP, as the schema sizes a derived chiller plant and UPS), or its nameplate for the
racks (``rated_w``):

* ``cooling_air_zone``: the largest air zone's CRAH units at their design count, ``required × capacity_kw``,
  against that zone's air heat: its nodes (zones are near-equal blocks of racks) × full power × the air's
  share (1 in an air hall, 1 − ``liquid.capture_fraction`` in a liquid hall with heat capture, the non-GPU
  share in a hybrid one). Above the design count the spare unit carries the rest (N+1 lost); above every
  unit's capacity the room warms and the GPUs throttle (the thermal model, when run);
* ``cooling_plant``: the chiller (or dry-cooler) plant's ``required × capacity_kw`` against the full IT
  load (as the schema sizes it when derived);
* ``power_ups``: a feed's UPS ``capacity_kw`` against the full demand of every node (each feed is sized
  to carry the whole load);
* ``rack_power``: the rack's power limit (``cluster.rack.power_limit_kw``) against its nodes' nameplate;
* ``floor``: the building's white space (``timeline.hall_m2``) against the racks and cooling units on
  the floor (:func:`twin.scenario.density.floor_plan`), m².
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from twin.scenario.density import floor_plan

if TYPE_CHECKING:  # pragma: no cover
    from twin.scenario.schema import Scenario

Check = tuple[str, float, float, str]
"""(what, capacity, load, unit)."""


def air_share(sc: "Scenario") -> float:
    """Share of a node's full power the room's air carries."""
    cool = sc.cooling
    if cool is None:
        return 1.0
    f = cool.liquid_share()
    if f is not None:
        return 1.0 - f
    if cool.type == "hybrid":
        node = sc.cluster.node
        return node.non_gpu_w / node.full_power_w
    return 0.0  # liquid, all node heat


def checks(sc: "Scenario", hall_m2: float | None = None) -> list[Check]:
    """The headroom checks that apply to ``sc`` (see the module docstring)."""
    cl = sc.cluster
    node = cl.node
    full_kw = node.full_power_w / 1000.0
    out: list[Check] = []
    cool = sc.cooling
    if cool is not None and cool.air is not None:
        a = cool.air
        largest = math.ceil(cl.racks / a.zones) * cl.nodes_per_rack
        out.append(("cooling_air_zone", a.crah.required * a.crah.capacity_kw, largest * full_kw * air_share(sc), "kW"))
    if cool is not None and cool.plant is not None and cool.plant.chillers.capacity_kw is not None:
        ch = cool.plant.chillers
        assert ch.capacity_kw is not None
        out.append(("cooling_plant", ch.required * ch.capacity_kw, cl.n_nodes * full_kw, "kW"))
    if sc.power is not None and sc.power.ups is not None and sc.power.ups.capacity_kw is not None:
        out.append(("power_ups", sc.power.ups.capacity_kw, cl.n_nodes * full_kw, "kW"))
    if cl.rack.power_limit_kw is not None:
        out.append(("rack_power", cl.rack.power_limit_kw, cl.nodes_per_rack * node.rated_w / 1000.0, "kW"))
    if hall_m2 is not None and cool is not None:
        out.append(("floor", hall_m2, floor_plan(sc)["white_space_m2"], "m2"))
    return pooled(sc, out) if cl.pools else out


def pooled(sc: "Scenario", found: list[Check]) -> list[Check]:
    """The loads of ``found`` (computed for ``cluster.node``) for a hall of node pools (``cluster.pools``): each
    node at its own pool's full power or nameplate; a zone's load the sum over its nodes, the racks' the largest
    pool's rack."""
    cl = sc.cluster
    full_kw = [0.0] * cl.n_nodes
    for a, b, node in cl.node_pools():
        full_kw[a:b] = [node.full_power_w / 1000.0] * (b - a)
    out: list[Check] = []
    for what, cap, load, unit in found:
        if what == "cooling_air_zone" and sc.cooling is not None and sc.cooling.air is not None:
            z, npr = sc.cooling.air.zones, cl.nodes_per_rack  # near-equal blocks of racks (the thermal model's)
            zones = [((k * cl.racks) // z * npr, ((k + 1) * cl.racks) // z * npr) for k in range(z)]
            load = max(sum(full_kw[a:b]) for a, b in zones) * air_share(sc)
        elif what in ("cooling_plant", "power_ups"):
            load = sum(full_kw)
        elif what == "rack_power":
            load = max(cl.nodes_per_rack * node.rated_w / 1000.0 for _, _, node in cl.node_pools())
        out.append((what, cap, load, unit))
    return out


def shortfalls(found: list[Check]) -> list[str]:
    """The checks whose load exceeds their capacity, each as one phrase."""
    return [f"{what} short by {load - cap:,.1f} {unit} ({load:,.1f} needed, {cap:,.1f} installed)"
            for what, cap, load, unit in found if load > cap + 1e-9]


__all__ = ["Check", "air_share", "checks", "shortfalls"]
