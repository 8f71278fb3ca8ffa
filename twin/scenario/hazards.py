"""Hazards section of the scenario (issue 43 item 2): common causes across equipment.

* **Zones** (a room, a row, an electrical room): named sets of facility units with events (fire, water,
  arc flash, control fault...) at a rate each; an event takes down every working unit of the zone for
  the event's repair time (one repair for the event: no crew ticket per unit).
* **Common-cause groups** spanning unit types (a UPS and a CRAH unit on one control system): a common
  event fails every working member at once, at a rate given directly (``per_year``) or as β × the
  smallest member rate (``beta``: the members' own failures stay as they are; the common rate is in
  addition). Repair ``own``: each failed unit its own ticket, through the crews (today's β-factor
  groups); ``common``: one repair for the event, every member back ``repair_h`` later (as CERN's reliability simulators model a common-cause event).

Units are named by the paths of facility part populations (``power.feedA.ups``, ``power.feedA.ups.module00``,
``cooling.crah00``...; ``twin run -v`` lists the failure paths in the events table): a member matches
a unit whose path is the member or starts with the member and a dot (``power.feedA`` is every unit of
feed A). Written as::

    hazards:
      zones:
        electrical_room_a:
          units: [power.feedA]
          events:
            arc_flash: {per_year: 0.002, repair_h: 168}
      groups:
        ups_crah_controls:
          units: [power.feedA.ups, cooling.crah00]
          beta: 0.05
          repair: common
          repair_h: 24
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from twin.scenario.base import Strict

NonNeg = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Pos = Annotated[float, Field(gt=0, allow_inf_nan=False)]
Members = Annotated[list[Annotated[str, Field(min_length=1)]], Field(min_length=1)]


class HazardEvent(Strict):
    """One kind of event of a zone."""

    per_year: NonNeg = Field(
        description="Events per year in the zone (no published rate per room was found, sources-next §5, §6: an "
                    "assumption of the scenario; e.g. an electrical-room arc flash 0.001–0.01, a fire 0.0005–0.005, "
                    "a water leak 0.01–0.1, a control fault 0.01–0.1).")
    repair_h: Pos = Field(
        description="Hours every unit the event took down stays down (one repair for the event; assumption of the "
                    "scenario: e.g. a fire or arc flash 168–2,000 h, a leak 8–72 h, a control fault 1–8 h).")


class Zone(Strict):
    units: Members = Field(description="Facility units of the zone: unit paths or path prefixes (see the section).")
    events: dict[str, HazardEvent] = Field(
        min_length=1, description="The zone's events by name (fire, water, arc_flash, control...).")


class CommonGroup(Strict):
    """A common-cause group spanning unit types."""

    units: Members = Field(description="Member units: unit paths or path prefixes (at least two units in all).")
    per_year: NonNeg | None = Field(
        None, description="Rate of the common event, per year (given directly). Exactly one of per_year and beta.")
    beta: Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)] | None = Field(
        None, description="Rate of the common event as β × the smallest member rate (1 / the mean of its failure "
                          "distribution), in addition to the members' own failures (assumption when set: 1–10 % "
                          "commonly quoted, IEC 62061 ≤ 2 %).")
    repair: Literal["own", "common"] = Field(
        "own", description="own: each failed member its own repair ticket through the crews; common: one repair for "
                           "the event, every member it failed back repair_h later (one repair for the common-cause event).")
    repair_h: Pos | None = Field(None, description="Repair time of the common event, hours (repair: common only).")

    @model_validator(mode="after")
    def _check(self) -> "CommonGroup":
        if (self.per_year is None) == (self.beta is None):
            raise ValueError("@per_year: give exactly one of per_year (the common rate) and beta (× the smallest "
                             "member rate)")
        if self.repair == "common" and self.repair_h is None:
            raise ValueError("@repair_h: repair: common needs the common event's repair_h")
        if self.repair == "own" and self.repair_h is not None:
            raise ValueError("@repair_h: only with repair: common (with own, each unit's repair is its own)")
        return self


class Hazards(Strict):
    zones: dict[str, Zone] = Field(default_factory=dict, description="Hazard zones by name.")
    groups: dict[str, CommonGroup] = Field(
        default_factory=dict, description="Common-cause groups across unit types by name.")

    @property
    def active(self) -> bool:
        return bool(self.zones or self.groups)


__all__ = ["CommonGroup", "HazardEvent", "Hazards", "Zone"]
