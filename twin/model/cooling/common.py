"""Constants and helpers shared by the rooms of the cooling package."""

from __future__ import annotations

import math

from twin.model.causes import THERMAL_TRIP

INF = math.inf
TRIP = THERMAL_TRIP  # a trip's down reason
ASHRAE_RECOMMENDED_MAX_C = 27.0  # ASHRAE recommended inlet 18–27 °C (sources.md)
_EPS_C = 1e-6  # temperature tolerance at a crossing, °C
_EPS_H = 1e-12  # time tolerance for due crossings, hours
_HIST_MAX_C = 160


def _blocks(racks: int, groups: int, nodes_per_rack: int) -> list[tuple[int, int]]:
    """Contiguous node ranges [start, end) of ``groups`` near-equal blocks of racks."""
    out = []
    for z in range(groups):
        r0 = (z * racks) // groups
        r1 = ((z + 1) * racks) // groups
        out.append((r0 * nodes_per_rack, r1 * nodes_per_rack))
    return out
