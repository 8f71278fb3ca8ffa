"""The operator's response to a cooling shortfall (issue 42 item 6): the ``cooling.response`` section.

Units are in field names (``_h`` hours, ``_c`` °C).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from twin.scenario.base import Strict


class Response(Strict):
    """What the operator does when an air zone cannot carry its load: its room would settle at a supply
    temperature at which nodes trip on their inlet limit (CRAH units lost, capacity derated on a hot
    afternoon). ``response_h`` after the shortfall begins (the room heading for a trip, or a node tripped),
    the operator plans the zone's heat to a budget: the CRAH capacity left plus what the room carries while
    its supply stays ``inlet_margin_c`` below the lowest trip supply of the zone's nodes. Then

    * ``cap``: every node of the zone gets the same GPU power cap (the highest whose full-load heat fits
      the budget and, in an air-cooled hall, at which the zone's hottest GPU does not throttle in the room
      that heat makes; at least the GPUs' minimum power), through the IT power's cap and a speed cap
      (source ``operator``): jobs slow down instead of losing nodes, and tripped nodes come back capped;
    * ``drain``: the fewest nodes are taken out of service (cause ``cooling_drain``; tripped ones first,
      then from the end of the zone) so that the rest fit the budget at full load, without throttling;
    * ``none``: nothing (a tripped node returns only once its zone could carry all its nodes at full load,
      which in a summer with units lost may be never).

    While a response is in force the plan follows every change of the zone's capacity at once (the
    operator's plan covers the day's derating, assumption), and ends when the zone could carry all its
    nodes uncapped within the budget."""

    policy: Literal["none", "cap", "drain"] = Field(
        "cap", description="The operator's response: cap GPU power evenly across the zone (default: what "
                           "operators of training halls do, capping keeps every node and job running and costs "
                           "speed, not nodes), drain the fewest nodes, or none (nodes trip and stay tripped "
                           "while the zone cannot carry its full load).")
    response_h: Annotated[float, Field(ge=0, le=168, allow_inf_nan=False)] = Field(
        0.5, description="Time from the shortfall (a zone heading for an inlet trip, or a node tripped) to the "
                         "operator's plan, hours (assumption: 0.5 h, range 0.1–2 h for a staffed hall with "
                         "monitoring alarms and a power-capping tool).")
    inlet_margin_c: Annotated[float, Field(ge=0, le=50, allow_inf_nan=False)] = Field(
        2.0, description="How far below the lowest trip supply of the zone's nodes the operator keeps the room, "
                         "°C (assumption: 2 °C, range 1–5 °C). A margin of max_inlet_c − supply_c or more keeps "
                         "the heat within the CRAH capacity left.")


__all__ = ["Response"]
