"""Leaks that cost (issue 42 item 5): what an undetected leak destroys, the detection that isolates a
rack before damage, and the CDU or manifold leak that takes a whole coolant loop down. Sub-sections of
``cooling.liquid.leak`` (:class:`twin.scenario.cooling.Leak`).

No published rate of liquid-cooling leaks or of their damage was found (sources-next.md §5): every
default here is an assumption, with the range a study should sweep in its description. Units are in
field names (``_h`` hours).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from twin.scenario.base import Dist, Probability, Repair, Strict
from twin.scenario.defaults import over_default
from twin.scenario.distributions import Exponential, Fixed

NonNegH = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class LeakDamage(Strict):
    """Damage of an undetected leak: each node it takes down (the leaking node and its ``neighbours``) is
    destroyed with ``probability``; a destroyed node is replaced (its node and PSU capital bought again,
    the ``repair_parts`` line ``node destroyed by a leak`` of ``cost.*``) and stays down at least
    ``replace_h`` from the leak (longer than the leak's own repair when it takes longer)."""

    probability: Probability = Field(
        0.1, description="Probability that a node an undetected leak takes down is destroyed (assumption: no "
                         "published rate, sources-next.md §5; range 0–0.5: a drip on a cold-plate fitting usually "
                         "wets one tray, a spray onto powered boards destroys them).")
    replace_h: NonNegH = Field(
        72.0, description="Time from the leak until a destroyed node is replaced and back in service, hours "
                          "(assumption: range 24–336 h, a spare node on site to a vendor delivery).")


class LeakDetection(Strict):
    """Leak detection (rope sensors, drip trays, the rack manifold's pressure drop) with automatic isolation
    valves: with ``probability`` a leak is detected before it does damage and its whole rack is isolated
    (every node of the rack down, none destroyed, until the leak is repaired); otherwise the leak takes its
    node and ``neighbours`` down and does its damage (``damage``)."""

    probability: Probability = Field(
        0.9, description="Probability that a leak is detected and its rack isolated before damage (assumption: "
                         "no published figure; range 0.5–0.99 for sensing cable under every rack manifold with "
                         "automatic valves).")


def _loop_leak_repair() -> Repair:
    return Repair(time=Fixed(value_h=24.0))


class LoopLeak(Strict):
    """A CDU or manifold leak: the loop is isolated and drained, and every node it cools goes down until the
    leak is repaired (cause ``loop_leak``); one unit per coolant loop (facility part ``loop_leak``, paths
    ``cooling.loop<i>.leak``)."""

    failure: Dist = Field(default_factory=lambda: Exponential(mean_h=1.0e6),
                          description="Time to a CDU or manifold leak per loop (assumption: MTBF 1,000,000 "
                                      "loop-hours, range 200,000–5,000,000; no published rate, sources-next.md §5).")
    repair: Annotated[Repair, over_default(_loop_leak_repair)] = Field(
        default_factory=_loop_leak_repair,
        description="Repair of a loop leak: fix, refill, bleed and pressure-test the loop (default 24 h, "
                    "assumption: range 8–72 h).")


__all__ = ["LeakDamage", "LeakDetection", "LoopLeak"]
