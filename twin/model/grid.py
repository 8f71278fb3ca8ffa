"""Grid events (issue 48 item 3): demand-response requests and scheduled utility outages
(``power.grid``, ``twin.scenario.grid``).

A demand-response request of X kW for T hours, from the rate (``demand_response.per_year``: exponential
gaps on stream ``power.grid#dr_arrival``, durations on ``power.grid#dr_duration``, draw k = the request's
index) or from the file, is honoured by holding site IT power at P₀ − ΣX from its start, where P₀ is the
IT power when the first of the overlapping requests began and ΣX the kW of those still running
(``twin.model.site_limit.SiteLimit``, source ``grid``: every GPU capped to the same power, the jobs
slowed by model.md §3's law). With a steady load the IT energy falls by exactly X·T; what it costs in
goodput is the slowdown. Each request earns ``dr_price_per_kwh`` × X × T (its part before the horizon):
the contract's payment for the energy shed. A request the site cannot meet (below every GPU at its
minimum) is held at that floor and its hours counted (``power.grid_dr_short_hours``).

An ``outage`` row of the file publishes ``Topic.GRID_OUTAGE``: the power chain takes every feed off
utility for the row's duration, as it does for its own outages.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from twin import rng
from twin.model.it_power import IT_POWER
from twin.model.component import BuildContext, Component, Metrics, ResultsSoFar, Tables
from twin.model.engine import Topic
from twin.model.site_limit import SiteLimit
from twin.units import HOURS_PER_YEAR

if TYPE_CHECKING:  # pragma: no cover
    from twin.scenario.schema import Scenario


class Grid(Component):
    """Demand-response requests and scheduled grid outages (see the module docstring)."""

    name = "grid"
    requires = (IT_POWER,)

    @classmethod
    def wanted(cls, sc: "Scenario") -> bool:
        return sc.power is not None and sc.power.grid is not None and sc.power.grid.active

    @classmethod
    def build(cls, ctx: BuildContext) -> "Grid":
        return cls(ctx)

    def __init__(self, ctx: BuildContext) -> None:
        self.engine = ctx.engine
        power = ctx.sc.power
        assert power is not None and power.grid is not None
        self.spec = power.grid
        self.it = ctx.service(IT_POWER)
        self.limit = SiteLimit(ctx.engine, ctx.cluster, self.it, ctx.sc, "grid")
        self.running: list[float] = []  # kW of the requests running now
        self.base_w = 0.0  # IT power when the first running request began
        self.requests = 0
        self.shed_kwh = 0.0  # contracted: Σ X × T (before the horizon)
        self.outages = 0

    def start(self) -> None:
        eng = self.engine
        for kind, t, d, kw in self.spec.events:
            if t >= eng.horizon_h:
                continue
            if kind == "outage":
                eng.calls(self._outage).at(t, d)
            else:
                eng.calls(self._begin).at(t, kw, d)
        dr = self.spec.demand_response
        if dr is not None and dr.per_year > 0:
            self._next(0, 0.0)

    def _next(self, k: int, after_h: float) -> None:
        dr = self.spec.demand_response
        assert dr is not None
        u = self.engine.streams.scalar("power.grid#dr_arrival", k)
        t = after_h + float(rng.exponential_from_u(np.array([u]), HOURS_PER_YEAR / dr.per_year)[0])
        if t < self.engine.horizon_h:
            self.engine.calls(self._arrive).at(t, k)

    def _arrive(self, k: int) -> None:
        dr = self.spec.demand_response
        assert dr is not None
        u = self.engine.streams.scalar("power.grid#dr_duration", k)
        d = float(dr.duration.sample(np.array([u]))[0])
        self._begin(dr.reduce_kw, d)
        self._next(k + 1, self.engine.now)

    def _outage(self, duration_h: float) -> None:
        self.outages += 1
        self.engine.bus.publish(Topic.GRID_OUTAGE, duration_h)

    def _begin(self, kw: float, duration_h: float) -> None:
        eng = self.engine
        if not self.running:
            self.base_w = self.it.total_w()
        self.running.append(kw)
        self.requests += 1
        self.shed_kwh += kw * max(0.0, min(duration_h, eng.horizon_h - eng.now))
        eng.recorder.event(eng.now, "demand_response", "power.grid", -1, kw)
        self.limit.set(self.base_w - 1000.0 * sum(self.running))
        eng.calls(self._end).at(eng.now + duration_h, kw)

    def _end(self, kw: float) -> None:
        self.running.remove(kw)
        self.limit.set(self.base_w - 1000.0 * sum(self.running) if self.running else None)

    def finish(self) -> None:
        self.limit.settle()

    def results(self, so_far: ResultsSoFar) -> tuple[Metrics, Tables]:
        m = {"power.grid_dr_requests": float(self.requests), "power.grid_dr_hours": self.limit.on_h,
             "power.grid_dr_short_hours": self.limit.short_h, "power.grid_dr_shed_kwh": self.shed_kwh,
             "power.grid_dr_earnings": self.spec.dr_price_per_kwh * self.shed_kwh,
             "power.grid_outages": float(self.outages)}
        return m, {}


__all__ = ["Grid"]
