"""Common causes across equipment (issue 43 item 2): hazard zones and common-cause groups spanning unit
types, over the site's facility part populations (the scenario's ``hazards`` section,
``twin.scenario.hazards``).

Each zone event kind and each group is a Poisson process of its own (exponential gaps, stream
``hazards.<zone>/<event>`` or ``hazards.<group>``, draw k = the event's index). An event fails every
working unit it covers: a zone's units, or a group's members, for one repair of ``repair_h``
(:meth:`twin.model.parts.FacilityParts.knock_out`); a group with repair ``own`` fails them through the
populations' own failure path instead (a ticket each, repaired by the crews). Units already failed are
left as they are. What a failed unit does to the load is its owner's (the power chain, the cooling
plant), reacting to the population's change as to any failure: nothing here calls another component.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Mapping

import numpy as np

from twin import rng
from twin.errors import InputError
from twin.model.component import BuildContext, Component, Metrics, ResultsSoFar, Tables
from twin.model.parts import FacilityParts
from twin.scenario.hazards import Hazards as HazardsSpec
from twin.units import HOURS_PER_YEAR

if TYPE_CHECKING:  # pragma: no cover
    from twin.scenario.schema import Scenario

Unit = tuple[FacilityParts, int]


def matching_units(facility: Mapping[str, FacilityParts], member: str) -> list[Unit]:
    """Units whose path is ``member`` or starts with ``member`` and a dot, in population then unit order."""
    out = []
    for pop in facility.values():
        for i in range(pop.n):
            p = pop.path(i)
            if p == member or p.startswith(member + "."):
                out.append((pop, i))
    return out


class HazardProcess:
    """One Poisson process of common events over a set of units."""

    def __init__(self, key: str, where: str, members: list[str], per_year: float | None, beta: float | None,
                 repair_h: float | None) -> None:
        self.key = key
        self.where = where
        self.members = members
        self.per_year = per_year
        self.beta = beta
        self.repair_h = repair_h  # None: each unit its own ticket
        self.units: list[Unit] = []
        self.mean_h = math.inf
        self.events = 0
        self.units_failed = 0


class Hazards(Component):
    """Hazard zones and cross-type common-cause groups (see the module docstring)."""

    name = "hazards"

    @classmethod
    def wanted(cls, sc: "Scenario") -> bool:
        return sc.hazards is not None and sc.hazards.active

    @classmethod
    def build(cls, ctx: BuildContext) -> "Hazards":
        return cls(ctx)

    def __init__(self, ctx: BuildContext) -> None:
        self.engine = ctx.engine
        self.facility = ctx.facility  # a live view: every population is registered by start()
        spec = ctx.sc.hazards
        assert isinstance(spec, HazardsSpec)
        self.procs: list[HazardProcess] = []
        for z, zone in spec.zones.items():
            for e, ev in zone.events.items():
                self.procs.append(HazardProcess(f"{z}/{e}", f"hazards.zones.{z}.units", list(zone.units),
                                                ev.per_year, None, ev.repair_h))
        for g, grp in spec.groups.items():
            self.procs.append(HazardProcess(g, f"hazards.groups.{g}.units", list(grp.units), grp.per_year, grp.beta,
                                            grp.repair_h if grp.repair == "common" else None))

    def start(self) -> None:
        for p in self.procs:
            seen: set[tuple[str, int]] = set()
            for j, m in enumerate(p.members):
                found = matching_units(self.facility, m)
                if not found:
                    paths = sorted({pop.path(0).rsplit(".", 1)[0] for pop in self.facility.values() if pop.n})
                    raise InputError("scenario", f"{p.where}.{j}", f"no facility unit has path {m!r} or one under it; "
                                     f"units are under e.g. {paths[:8]}")
                for pop, i in found:
                    if (pop.name, i) not in seen:
                        seen.add((pop.name, i))
                        p.units.append((pop, i))
            if p.beta is not None:
                if len(p.units) < 2:
                    raise InputError("scenario", p.where, "a common-cause group needs at least two units")
                least = min(1.0 / pop.spec.failure.mean() for pop, _ in p.units)  # the smallest member rate, 1/h
                p.mean_h = 1.0 / (p.beta * least)
            elif p.per_year:
                p.mean_h = HOURS_PER_YEAR / p.per_year
            self._next(p, 0, 0.0)

    def _next(self, p: HazardProcess, k: int, after_h: float) -> None:
        if not math.isfinite(p.mean_h):
            return
        u = self.engine.streams.scalar(f"hazards.{p.key}", k)
        t = after_h + float(rng.exponential_from_u(np.array([u]), p.mean_h)[0])
        if t < self.engine.horizon_h:
            self.engine.calls(self._event).at(t, p, k)

    def _event(self, p: HazardProcess, k: int) -> None:
        eng = self.engine
        hit = 0
        for pop, i in p.units:
            if p.repair_h is not None:
                hit += pop.knock_out(i, p.repair_h)
            elif pop.healthy[i]:
                pop.fail_now(i)
                hit += 1
        eng.recorder.event(eng.now, "hazard", f"hazards.{p.key}", -1, float(hit))
        if hit:
            p.events += 1
            p.units_failed += hit
        self._next(p, k + 1, eng.now)

    def results(self, so_far: ResultsSoFar) -> tuple[Metrics, Tables]:
        m: dict[str, float] = {"hazards.events": float(sum(p.events for p in self.procs)),
                               "hazards.units_failed": float(sum(p.units_failed for p in self.procs))}
        for p in self.procs:
            m[f"hazards.events.{p.key}"] = float(p.events)
        return m, {}


__all__ = ["Hazards", "matching_units"]
