"""Recovery from a hall-wide power loss, oversubscription of a 2N hall and generator block loading
(issue 48 items 1, 2 and 4): sections of ``power`` (``twin.scenario.power``).

Written in a scenario as::

    power:
      topology: 2n
      recovery:                   # on by default: the staged restart after every feed was dead
        facility_h: 0.25          # cooling plant and building controls back before any IT
        fabric_h: 0.25            # switches booted, the subnet manager has swept the fabric
        storage_h: 0.5            # file-system servers up, journals replayed
        node_batches: 4           # nodes powered on in this many batches of racks
        batch_h: 0.25             # each batch: boot and health checks
        power_cycle_failure_prob: {psu: 0.01}   # per unit of a node part, at its cold power-up
      oversubscription:           # IT load above one feed's capacity while both feeds are up
        feed_capacity_kw: 60
        capping_latency_s: 5
        trip_curve: [{overload: 1.13, trip_s: 3600}, {overload: 2.0, trip_s: 30}]
      generator:
        block_load: {rating_kw: 80, max_step_frac: 0.5, steps: 2}

A node in batch j is back T + facility_h + fabric_h + storage_h + j × batch_h after a loss of T hours
(batches j = 1, 2, ...; and not before the chain's own ``reboot_h``).
"""

from __future__ import annotations

import math
from typing import Annotated, Any

from pydantic import Field, model_validator

from twin.scenario.base import PosInt, Strict

NonNeg = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Pos = Annotated[float, Field(gt=0, allow_inf_nan=False)]
Prob = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]
Frac = Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)]


class Recovery(Strict):
    """The staged restart of the hall after a hall-wide power loss (every feed dead at once):
    facility plant, fabric and storage one after the other, then the nodes in batches of racks
    (``twin.model.recovery``). Partial losses (one feed, a PDU) keep the chain's ``reboot_h``."""

    facility_h: NonNeg = Field(
        0.25, description="Hours from power back to the facility plant (chillers, pumps, CRAH units, building "
                          "controls) ready for IT load (assumption: 0.25 h, range 0.1–1 h; chiller restart after a "
                          "power loss is typically 5–20 min, no published hall-level figure found, sources-next §8).")
    fabric_h: NonNeg = Field(
        0.25, description="Hours after the facility stage for the network fabric: switches booted, the subnet "
                          "manager's sweep done (assumption: 0.25 h, range 0.1–1 h).")
    storage_h: NonNeg = Field(
        0.5, description="Hours after the fabric stage for the storage: file-system servers up, journals replayed, "
                         "targets mounted (assumption: 0.5 h, range 0.25–4 h).")
    node_batches: PosInt = Field(
        4, description="Nodes are powered on in this many batches of whole racks (near-equal numbers of racks, in "
                       "rack order; at most one batch per rack), one batch after the other (limits the inrush current "
                       "and the load step on a generator; assumption: 4, range 1–20).")
    batch_h: NonNeg = Field(
        0.25, description="Hours each node batch takes: power-on, boot and health checks (assumption: 0.25 h, "
                          "range 0.1–1 h). Batch j is back facility_h + fabric_h + storage_h + j × batch_h after "
                          "power returns.")
    power_cycle_failure_prob: dict[str, Prob] = Field(
        default_factory=dict,
        description="Per node part name, the probability that each of its units fails at the cold power-up of its "
                    "node (one draw per unit and loss, stream power.recovery.<part>#cycle); the failure goes to the "
                    "crews like any other. Empty by default: no published fraction was found (sources-next §8, "
                    "anecdotes only); assumption when set: 0.001–0.05 per unit (PSUs and fans first).")

    def batch_offsets_h(self) -> list[float]:
        """Hours from power back to the return of each node batch (1-based batch j at index j − 1)."""
        base = self.facility_h + self.fabric_h + self.storage_h
        return [base + j * self.batch_h for j in range(1, self.node_batches + 1)]


class TripPoint(Strict):
    overload: Annotated[float, Field(gt=1, allow_inf_nan=False)] = Field(
        description="Load over the breaker's rating (a ratio > 1).")
    trip_s: Pos = Field(description="Seconds the breaker carries that overload before it trips.")


def _default_curve() -> list[TripPoint]:
    return [TripPoint(overload=1.13, trip_s=3600.0), TripPoint(overload=1.45, trip_s=600.0),
            TripPoint(overload=2.0, trip_s=60.0), TripPoint(overload=5.0, trip_s=5.0)]


class Oversubscription(Strict):
    """IT load above one feed's capacity while both feeds of a 2N hall are up (``twin.model.oversubscription``).
    When a feed is lost the survivor carries every load: a cap holds site IT power at ``feed_capacity_kw``
    from ``capping_latency_s`` after the loss until both feeds are back; if the breaker's trip time at the
    overload of that moment is shorter than the latency, the surviving feed trips first and the hall is lost."""

    feed_capacity_kw: Pos = Field(
        description="What one feed (its UPS, switchboard, breaker) carries continuously, kW of IT load. Below the "
                    "hall's full IT load to oversubscribe (the scenario's own figure: no default).")
    capping_latency_s: NonNeg = Field(
        5.0, description="Seconds from a feed loss to every node capped (detection, controller, node power limits "
                         "applied). Assumption: 5 s, range 1–60 s (software power capping of the Dynamo kind acts "
                         "in seconds; recalled, not checked).")
    trip_curve: list[TripPoint] = Field(
        default_factory=_default_curve, min_length=1,
        description="The surviving breaker's trip curve: points (overload, trip_s), overload increasing and trip_s "
                    "decreasing; between points log-log interpolation, below the first point no trip, above the last "
                    "its trip_s. Assumption: 1.13 → 3,600 s, 1.45 → 600 s, 2 → 60 s, 5 → 5 s (shaped after the "
                    "conventional non-tripping 1.13 and tripping 1.45 × rated currents of thermal breakers, IEC "
                    "60898-1, recalled, not checked; a real curve is the breaker's datasheet).")
    trip_restore_min: NonNeg = Field(
        30.0, description="Minutes from a trip to the breaker closed again (load shed, reset; assumption: 30 min, "
                          "range 10–120 min).")

    @model_validator(mode="after")
    def _check_curve(self) -> "Oversubscription":
        for i in range(1, len(self.trip_curve)):
            a, b = self.trip_curve[i - 1], self.trip_curve[i]
            if not (b.overload > a.overload and b.trip_s <= a.trip_s):
                raise ValueError(f"@trip_curve.{i}: overload must increase and trip_s must not increase from the "
                                 f"point before ({a.overload:g}, {a.trip_s:g} s), got ({b.overload:g}, {b.trip_s:g} s)")
        return self

    def trip_s(self, overload: float) -> float:
        """Seconds the breaker carries ``overload`` (load / rating) before it trips; inf below the curve."""
        pts = self.trip_curve
        if overload < pts[0].overload:
            return math.inf
        for a, b in zip(pts, pts[1:]):
            if overload <= b.overload:
                w = (math.log(overload) - math.log(a.overload)) / (math.log(b.overload) - math.log(a.overload))
                return math.exp(math.log(a.trip_s) + w * (math.log(b.trip_s) - math.log(a.trip_s)))
        return pts[-1].trip_s


class BlockLoad(Strict):
    """A generator's block-load acceptance: a load step above ``max_step_frac`` of its rating trips it
    (its frequency and voltage fall outside their transient band); a staged transfer in ``steps`` equal
    steps avoids it."""

    rating_kw: Pos | None = Field(
        None, description="Generator rating, kW. Default: the UPS rating (power.ups.capacity_kw, else the full "
                          "demand of every node).")
    max_step_frac: Frac = Field(
        0.5, description="Largest load step the generator picks up without tripping, a fraction of its rating "
                         "(assumption: 0.5, range 0.3–1.0; no figure per ISO 8528-5 class found, an example "
                         "specification loads 0 → 50 → 80 → 100 %, sources-next §7).")
    steps: PosInt = Field(
        1, description="The transfer puts the feed's load on the generator in this many equal steps (1: all at "
                       "once; staged transfer: 2 or more, seconds apart, the UPS carrying the rest meanwhile).")
    restart_min: NonNeg = Field(
        15.0, description="Minutes from a block-load trip to an operator restarting the generator and transferring "
                          "the load in stages (assumption: 15 min, range 5–60 min); meanwhile the feed runs on its "
                          "UPS, then is dead.")


def block_trip_min(spec: Any, load_w: float, ups_rating_w: float) -> float | None:
    """Minutes until an operator restarts a generator that a transfer of ``load_w`` (W) trips, or None
    when it does not trip (no block-load limit, or each of its ``steps`` equal steps within
    ``max_step_frac`` × the rating, default ``ups_rating_w``). ``spec``: the scenario's ``power``."""
    gen = spec.generator
    bl = gen.block_load if gen is not None else None
    if bl is None:
        return None
    rating_w = bl.rating_kw * 1000.0 if bl.rating_kw is not None else ups_rating_w
    return bl.restart_min if load_w / bl.steps > bl.max_step_frac * rating_w else None


def has_block_load(spec: Any) -> bool:
    """The scenario's generators have a block-load limit (``power.generator.block_load``)."""
    return spec.generator is not None and spec.generator.block_load is not None


__all__ = ["BlockLoad", "Oversubscription", "Recovery", "TripPoint", "block_trip_min", "has_block_load"]
