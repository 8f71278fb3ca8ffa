"""Scheduled mechanisms that a scenario's horizon hides (issue 39, item 7).

Some mechanisms of a scenario run on a schedule with a period: the maintenance windows of the power
chain's units (``power.<unit>.maintenance``: the first visit at ``offset_h``, by default half an
interval ÷ feeds, the next feed's an interval ÷ feeds later) and of the cooling units
(``cooling.plant.maintenance.<kind>``, staggered over the units the same way), the periodic tests that
find silent failures (``latent_test_interval_h``: every this many hours from time 0), the rolling
planned drains (``maintenance.planned``: from ``start_day`` every ``every_days``) and the outdoor
temperature's seasonal cycle (``cooling.ambient``: a year, hottest on ``seasonal_peak_day``).

A horizon shorter than such a period sees part of the cycle, or none of it: with yearly UPS
maintenance first due at 4,380 h, a 90-day (2,160 h) horizon holds no window at all, so every
replication of every option is free of it and a comparison of two options that differ in how they
ride through maintenance finds no difference, at any number of replications. :func:`hidden` lists
each such mechanism with what the horizon holds of it and the horizon that would hold one full
period; the advisories (:mod:`twin.scenario.advice`) print them, and the decision summary
(:mod:`twin.experiment.summary`) never says that more replications will not separate two options
when one of them is listed. Closed form from the scenario alone: nothing is simulated.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from twin.scenario.units import first_visit_h
from twin.units import HOURS_PER_DAY, HOURS_PER_YEAR

if TYPE_CHECKING:  # pragma: no cover
    from twin.scenario.schema import Scenario


@dataclass(frozen=True)
class Hidden:
    """A scheduled mechanism the horizon does not hold in full.

    ``field``: the scenario field that sets its period; ``what``: what it is, a plural noun phrase;
    ``period_h``: its period, hours; ``first_h``: when it first acts, hours from time 0;
    ``none_seen``: True when nothing of it falls within the horizon."""

    field: str
    what: str
    period_h: float
    first_h: float
    none_seen: bool
    period_text: str = ""
    """How the period is given, when not as ``field = period``."""

    @property
    def needed_days(self) -> int:
        """The shortest horizon, whole days, that holds one period of it and its first action."""
        return math.ceil(max(self.period_h, self.first_h + 1.0) / HOURS_PER_DAY)

    def text(self, horizon_h: float) -> str:
        """One line: what the horizon holds of the mechanism and what would hold it."""
        if self.period_text:  # the seasons: the horizon misses the hottest of them
            seen = "the hottest season falls outside it"
            about = "it"
        elif self.none_seen:
            seen = f"none falls within it (the first at {_hours(self.first_h)})"
            about = "them"
        else:
            seen = f"only part of a period falls within it (the first at {_hours(self.first_h)})"
            about = "the rest"
        period = self.period_text or f"{self.field} = {_hours(self.period_h)}"
        return (f"the horizon ({_days(horizon_h)}) is shorter than the period of the {self.what} ({period}): {seen}, so the results say nothing about {about} and more replications "
                f"cannot show {about}; horizon_days of at least {self.needed_days:,} holds one period")


_NAMES = {"ups": "UPS", "crah": "CRAH", "cdu": "CDU"}


def _hours(h: float) -> str:
    days = h / HOURS_PER_DAY
    return f"{h:,.0f} h = {days:,.4g} days" if h >= 48 else f"{h:,.4g} h"


def _days(h: float) -> str:
    return f"{h / HOURS_PER_DAY:,.4g} days"


def _staggered(field: str, what: str, interval_h: float, offset_h: float | None, horizon_h: float,
               units: int) -> Hidden | None:
    """A schedule of ``units`` units visited every ``interval_h``, the first at ``offset_h`` (default
    interval/(2·units)) and the others staggered over one interval after it."""
    first = first_visit_h(interval_h, offset_h, 0, units)
    if horizon_h >= interval_h and first < horizon_h:
        return None
    return Hidden(field, what, interval_h, first, first >= horizon_h)


def _cooling_units(cooling: Any, kind: str) -> int:
    """Units of cooling ``kind`` the plant's maintenance visits in turn (chillers; CRAH units of every zone;
    CDUs of every loop)."""
    if kind == "chiller":
        return int(cooling.plant.chillers.count)
    if kind == "crah":
        return int(cooling.air.zones * cooling.air.crah.count)
    return int(cooling.liquid.loops * cooling.liquid.cdu.count)


def hidden(sc: "Scenario") -> list[Hidden]:
    """Every scheduled mechanism of ``sc`` whose period the horizon does not hold (see the module
    docstring), in the order of the scenario's sections."""
    H = sc.horizon_h
    out: list[Hidden] = []

    def latent(field: str, what: str, interval_h: float | None) -> None:
        if interval_h is not None and interval_h > H:  # tests at k·interval from time 0
            out.append(Hidden(field, what, interval_h, interval_h, True))

    for name, part in sc.cluster.node.parts.items():
        latent(f"cluster.node.parts.{name}.latent_test_interval_h", f"periodic tests of the {name} parts",
               part.latent_test_interval_h)
    for name, part in sc.cluster.rack_parts.items():
        latent(f"cluster.rack_parts.{name}.latent_test_interval_h", f"periodic tests of the {name} parts",
               part.latent_test_interval_h)
    planned = sc.maintenance.planned
    if planned is not None:
        every_h, start_h = planned.every_days * HOURS_PER_DAY, planned.start_day * HOURS_PER_DAY
        if start_h >= H or every_h > H:
            out.append(Hidden("maintenance.planned.every_days", "planned drain waves", every_h, start_h, start_h >= H))
    power = sc.power
    if power is not None:
        for name, el in power.elements().items():
            mt = el.maintenance
            if mt is not None:
                h = _staggered(f"power.{name}.maintenance.interval_h", f"{_NAMES.get(name, name)} maintenance windows", mt.interval_h,
                               mt.offset_h, H, len(power.feeds) * (power.pdu_count(sc.cluster.racks) if name == "pdu" else 1))
                if h is not None:
                    out.append(h)
            latent(f"power.{name}.latent_test_interval_h", f"periodic tests of the {_NAMES.get(name, name)}",
                   getattr(el, "latent_test_interval_h", None))
    cooling = sc.cooling
    if cooling is not None:
        plant = getattr(cooling, "plant", None)
        for kind, umt in (plant.maintenance.items() if plant is not None else ()):
            h = _staggered(f"cooling.plant.maintenance.{kind}.interval_h", f"{_NAMES.get(kind, kind)} maintenance windows",
                           umt.interval_h, umt.offset_h, H, _cooling_units(cooling, kind))
            if h is not None:
                out.append(h)
        amb = cooling.ambient
        if amb.csv is None and amb.seasonal_amplitude_c > 0 and H < HOURS_PER_YEAR:
            peak_h = amb.seasonal_peak_day * HOURS_PER_DAY
            if peak_h >= H:  # the hottest season lies beyond the horizon
                out.append(Hidden("cooling.ambient.seasonal_peak_day", "outdoor temperature's seasons", HOURS_PER_YEAR,
                                  peak_h, True, f"a year; the hottest day is day {amb.seasonal_peak_day:g}, "
                                  "cooling.ambient.seasonal_peak_day"))
    return out


def hidden_lines(sc: "Scenario") -> list[tuple[str, str]]:
    """(field, one line) per hidden mechanism, as the advisories and the decision summary give them."""
    return [(h.field, h.text(sc.horizon_h)) for h in hidden(sc)]


def hidden_records(sc: "Scenario") -> list[dict[str, Any]]:
    """Plain-data form of :func:`hidden` for a stored decision summary: field, what, the horizon and
    the horizon that holds one period (days), and the advisory's line."""
    return [{"field": h.field, "what": h.what, "horizon_days": sc.horizon_days, "needed_days": h.needed_days,
             "text": h.text(sc.horizon_h)} for h in hidden(sc)]


def hidden_from_resolved(doc: Any) -> list[dict[str, Any]]:
    """:func:`hidden_records` of a stored ``scenario.resolved.yaml`` document (empty when it no longer
    validates, e.g. written by another version: the summary then makes no claim about it)."""
    from pydantic import ValidationError

    from twin.scenario.schema import Scenario

    if not isinstance(doc, dict):
        return []
    try:
        sc = Scenario.model_validate(doc)
    except (ValidationError, ValueError, TypeError):
        return []
    return hidden_records(sc)


__all__ = ["Hidden", "hidden", "hidden_from_resolved", "hidden_lines", "hidden_records"]
