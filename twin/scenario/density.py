"""Rack density and floor space of a cooling option (``cooling.density``, issue 42 item 2).

Each cooling option supports a power per rack (``air_rack_kw``, ``hybrid_rack_kw``, ``liquid_rack_kw``): it is
the rack's power limit (``cluster.rack.power_limit_kw``) when the scenario gives none, so a rack whose nodes'
nameplate exceeds it is an advisory (``twin run`` / ``twin check``), as the limits given are. The white space
the cluster takes is its racks and the cooling units on the floor (CRAH units, CDUs), each with its share of
aisles and clearances; ``twin.model.costs`` prices it (``costs.capital.white_space_per_m2``) with the
electrical distribution per kW of IT nameplate (``costs.capital.distribution_per_kw``). See
docs/guide/density.md.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Annotated

from pydantic import Field

from twin.scenario.base import Strict

if TYPE_CHECKING:  # pragma: no cover
    from twin.scenario.schema import Scenario

PosF = Annotated[float, Field(gt=0, allow_inf_nan=False)]
NonNegF = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class Density(Strict):
    """Supported power per rack of each cooling option and the floor area of racks and cooling units."""

    air_rack_kw: PosF = Field(
        41.0, description="Power per rack an air-cooled hall supports, kW (air-cooled DGX H100 racks of 4 systems, "
        "40.8 kW, NVIDIA SuperPOD guide, sources-realism §12; GPU racks run 40–130 kW, JLL 2025, sources-next §4).")
    hybrid_rack_kw: PosF = Field(
        75.0, description="Power per rack a hybrid hall (liquid for the GPUs, air for the rest) supports, kW "
        "(assumption: the top band, 55–75 kW, of rear-door heat exchangers, HPE/Motivair via coolnetpower, "
        "sources-next §4; range 55–100).")
    liquid_rack_kw: PosF = Field(
        132.0, description="Power per rack a direct-liquid hall supports, kW (GB200 NVL72 racks are about 120 kW "
        "on 132 kW of power shelves, sources-next §4; range 100–250, JLL's future racks).")
    rack_m2: PosF = Field(
        2.5, description="White space per rack, m²: its footprint (about 0.6 × 1.2 m) and its share of the cold and "
        "hot aisles (assumption: no published figure used; range 2.0–3.5).")
    crah_m2: NonNegF = Field(
        5.0, description="White space per CRAH unit on the floor, with its service clearance, m² (assumption, "
        "range 3–8).")
    cdu_m2: NonNegF = Field(
        3.0, description="White space per CDU on the floor, with its service clearance, m² (assumption, range 2–5).")

    def rack_kw(self, cooling_type: str) -> float:
        """Power per rack the option ``cooling_type`` (air, hybrid or liquid) supports, kW."""
        return {"air": self.air_rack_kw, "hybrid": self.hybrid_rack_kw, "liquid": self.liquid_rack_kw}[cooling_type]


def floor_plan(sc: "Scenario") -> dict[str, float]:
    """The cluster's density and floor space: ``rack_kw`` (nameplate per rack), ``rack_limit_kw`` (the rack's
    limit: given, else the cooling option's; NaN without either), ``racks``, ``racks_at_limit`` (racks the
    nodes need at that limit and in the rack's U space: the densest layout the option allows), ``it_kw`` (IT
    nameplate; with node pools the densest pool's rack and the nameplate summed over the pools), ``crah_units``, ``cdus`` and ``white_space_m2`` (racks and cooling units as built)."""
    cl = sc.cluster
    node = cl.node
    cool = sc.cooling
    dens = cool.density if cool is not None else Density.model_validate({})
    limit = cl.rack.power_limit_kw
    per_rack = math.inf
    rated_w = node.rated_w  # node pools (cluster.pools): the densest pool's rack, the nameplate summed over pools
    it_kw = cl.n_nodes * node.rated_w / 1000.0
    if cl.pools:
        rated_w = max(p.rated_w for _, _, p in cl.node_pools())
        it_kw = sum((b - a) * p.rated_w for a, b, p in cl.node_pools()) / 1000.0
    if limit is not None:
        per_rack = max(1.0, math.floor(limit * 1000.0 / rated_w))
    if cl.rack.u_space is not None:
        per_rack = min(per_rack, max(1, cl.rack.u_space // node.u_height))
    n = cl.n_nodes
    crah = cool.air.zones * cool.air.crah.count if cool is not None and cool.air is not None else 0
    cdus = cool.liquid.loops * cool.liquid.cdu.count if cool is not None and cool.liquid is not None else 0
    return {
        "rack_kw": cl.nodes_per_rack * rated_w / 1000.0,
        "rack_limit_kw": float(limit) if limit is not None else math.nan,
        "racks": float(cl.racks),
        "racks_at_limit": float(math.ceil(n / per_rack)) if math.isfinite(per_rack) else float(cl.racks),
        "it_kw": it_kw,
        "crah_units": float(crah),
        "cdus": float(cdus),
        "white_space_m2": cl.racks * dens.rack_m2 + crah * dens.crah_m2 + cdus * dens.cdu_m2,
    }


__all__ = ["Density", "floor_plan"]
