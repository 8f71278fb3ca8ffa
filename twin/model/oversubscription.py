"""Oversubscription of a two-feed hall (issue 48 item 2): IT load above one feed's capacity while both
feeds are up, with capping when one is lost (``power.oversubscription``).

While both feeds are live nothing is capped, whatever the load. When one feed goes dead and another is
live (``Topic.FEED``), the survivor carries every load: ``capping_latency_s`` later a cap holds site IT
power at ``feed_capacity_kw`` (``twin.model.site_limit.SiteLimit``, source ``power_oversub``) until
every feed is live again. The breaker of the survivor sees the overload r = IT power / capacity at the
loss; if its trip time at r (``trip_curve``) is shorter than the latency, it trips first: this
component publishes ``Topic.FEED_TRIP`` for the survivor, whose load is then dead for
``trip_restore_min`` (the power chain's cause ``power:overload``), a hall-wide loss when it was the last
feed (``twin.model.recovery``). The overload is read once, at the loss (the load is taken as constant over
the seconds of the latency). Only the bus couples it to the power chain.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from twin.model.it_power import IT_POWER
from twin.model.component import BuildContext, Component, Metrics, ResultsSoFar, Tables
from twin.model.engine import Topic
from twin.model.site_limit import SiteLimit

if TYPE_CHECKING:  # pragma: no cover
    from twin.scenario.schema import Scenario


class Oversubscription(Component):
    """Capping after a feed loss, and the breaker's trip when the cap comes too late."""

    name = "oversubscription"
    requires = (IT_POWER,)

    @classmethod
    def wanted(cls, sc: "Scenario") -> bool:
        return sc.power is not None and sc.power.oversubscription is not None

    @classmethod
    def build(cls, ctx: BuildContext) -> "Oversubscription":
        return cls(ctx)

    def __init__(self, ctx: BuildContext) -> None:
        self.engine = ctx.engine
        power = ctx.sc.power
        assert power is not None and power.oversubscription is not None
        self.spec = power.oversubscription
        self.capacity_w = self.spec.feed_capacity_kw * 1000.0
        self.it = ctx.service(IT_POWER)
        self.limit = SiteLimit(ctx.engine, ctx.cluster, self.it, ctx.sc, "power_oversub")
        self.live = {f: True for f in power.feeds}
        self.one_feed = False  # a feed is lost: the survivors carry every load (capped after the latency)
        self.gen = 0  # bumped when every feed is back: pending caps and trips of that loss are void
        self.losses = 0
        self.trips = 0
        self.peak_overload = 0.0
        ctx.engine.bus.subscribe(Topic.FEED, self._on_feed)

    def _on_feed(self, feed: str, mode: str) -> None:
        self.live[feed] = mode != "dead"
        eng = self.engine
        up = [f for f, ok in self.live.items() if ok]
        if len(up) == len(self.live):
            if self.one_feed:
                self.one_feed = False
                self.gen += 1
                self.limit.set(None)
            return
        if not up or self.one_feed:
            return
        self.one_feed = True
        self.losses += 1
        gen = self.gen
        r = self.it.total_w() / self.capacity_w
        self.peak_overload = max(self.peak_overload, r)
        trip_s = self.spec.trip_s(r)
        lat_s = self.spec.capping_latency_s
        eng.recorder.event(eng.now, "oversubscribed_feed_loss", f"power.feed{up[0]}", -1, r)
        if trip_s < lat_s:
            eng.calls(self._trip).at(eng.now + trip_s / 3600.0, up[0], gen)
        eng.calls(self._cap).at(eng.now + lat_s / 3600.0, gen)

    def _cap(self, gen: int) -> None:
        if gen == self.gen:
            self.limit.set(self.capacity_w)

    def _trip(self, feed: str, gen: int) -> None:
        if gen != self.gen or not self.live[feed]:
            return
        self.trips += 1
        eng = self.engine
        eng.recorder.event(eng.now, "breaker_trip", f"power.feed{feed}")
        eng.bus.publish(Topic.FEED_TRIP, feed, self.spec.trip_restore_min / 60.0)

    def finish(self) -> None:
        self.limit.settle()

    def results(self, so_far: ResultsSoFar) -> tuple[Metrics, Tables]:
        return {"power.oversub_feed_losses": float(self.losses), "power.oversub_trips": float(self.trips),
                "power.oversub_capped_hours": self.limit.on_h,
                "power.oversub_peak_overload": self.peak_overload}, {}


__all__ = ["Oversubscription"]
