"""The power chain's node-down causes (``twin.model.power``): each cause's code, its rank among a node's
dead feeds and the :class:`~twin.model.causes.DownCause` a node down for it is given."""

from __future__ import annotations

import numpy as np

from twin.model.causes import DownCause

CAUSES = ("psu", "pdu", "utility", "generator_start", "feed", "maintenance", "transfer", "ups", "switching", "overload")
"""Power down causes; code = index + 1 (0: not down). For a node's dead feeds the highest rank wins
(the code, except that a planned maintenance ranks below every unplanned cause and a failed transfer
ranks with a failed generator start); ``transfer`` also a generator tripped by its block load until restarted;
``ups``: a UPS that dropped its load (a fault or a failed transfer to bypass, ``twin.model.ups_modules``);
``switching``: a switching error of a maintenance visit; ``overload``: a breaker tripped (Topic.FEED_TRIP)."""
_PSU, _PDU, _UTILITY, _GEN_START, _FEED, _MAINT, _ATS, _UPS, _SWITCH, _TRIP = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10
_RANK = np.array([0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 0.5, 3.5, 4.5, 4.6, 4.7])
"""Rank of each code (index = code) among a node's dead feeds."""


DOWN_CAUSES: tuple[DownCause, ...] = (DownCause.power("none"), *(
    DownCause.planned_drain("power") if code == _MAINT else DownCause.power(c) for code, c in enumerate(CAUSES, 1)))
"""The node-down reason of each power cause code (index = code; code 0 is never a node's reason): a power
cause (``power:<cause>``), and for a planned maintenance that drained the load a planned drain
(``planned:power_maintenance``, a planned interruption for the workload)."""


_FEED_CAUSES = frozenset(DownCause.power(c) for c in CAUSES[2:])
"""The reasons a feed-level unit's failure can take nodes for (dispatch by impact): utility, generator_start,
feed, ... (``power:maintenance`` is never a node's reason: a drain for maintenance is a planned drain)."""


def cause_name(code: int) -> DownCause:
    """The node-down reason of power cause ``code`` (:data:`DOWN_CAUSES`)."""
    return DOWN_CAUSES[code]


__all__ = ["CAUSES", "DOWN_CAUSES", "cause_name"]
