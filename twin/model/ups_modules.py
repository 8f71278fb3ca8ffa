"""Modular UPS and UPS faults (issue 43 item 1): per feed, a UPS of ``n`` power modules of which ``k``
carry the load, its static bypass, and faults that drop the load. Part of the power chain
(``twin.model.power``), which reads the state here and publishes what it does to the nodes.

* The modules are a facility part population (``ups_module``, paths ``power.feed<X>.ups.module<jj>``):
  lifetimes from each module's stream, repairs through the crews and spares, one common-cause group
  per UPS.
* **Maintenance** of a UPS with a spare module (``count > required``, mode bypass) services one module at
  a time: the module is out, the others carry the load (no bypass); :meth:`UPSModules.maintain`.
* **Shortfall**: fewer than ``k`` modules working (and not out for maintenance). The UPS transfers its load to the static bypass;
  the transfer fails with ``bypass.failure_to_transfer_prob`` (one uniform of stream
  ``power.feed<X>.ups#bypass`` per shortfall, draw k = the feed's shortfall index): the load drops
  (the feed is dead, cause ``power:ups``) until an operator closes the bypass ``manual_bypass_min``
  later. On bypass the UPS is out of service as a failed UPS is (no battery: an outage reaches the load
  at once). Back to ``k`` modules, the UPS is online again.
* **Fault**: at ``fault.per_year`` per UPS (exponential gaps, stream ``power.feed<X>.ups#fault``) a
  fault drops the load at once (a UPS already out of service, on bypass, is not hit); the load returns on
  the bypass after ``manual_bypass_min``, and the UPS is back online ``fault.repair_h`` after the fault.

States per feed: ``short`` (modules < k), ``faulted`` (between a fault and its repair), ``dropped``
(the load is down); ``online`` = not short and not faulted. Times are hours.
"""

from __future__ import annotations

import functools
from typing import Callable

import numpy as np

from twin import rng
from twin.model.engine import Engine
from twin.model.parts import FacilityParts
from twin.scenario.power import UPS, Power
from twin.units import HOURS_PER_YEAR


class UPSModules:
    """The modular UPS of every feed (see the module docstring). ``settle()`` is called before any state
    changes (the chain integrates to now), ``changed(f)`` after the state of feed ``f`` changed."""

    def __init__(self, engine: Engine, spec: Power, settle: Callable[[], None],
                 changed: Callable[[int], None]) -> None:
        ups = spec.ups
        assert ups is not None
        self.engine = engine
        self.ups: UPS = ups
        self.feeds = spec.feeds
        n_feeds = self.n_feeds = len(self.feeds)
        self._settle = settle
        self._changed = changed
        m = ups.modules
        self.n_mod = m.count if m is not None else 0
        self.k = m.required if m is not None else 0
        self.parts: FacilityParts | None = None
        if m is not None:
            paths = [f"power.feed{x}.ups.module{j:02d}" for x in self.feeds for j in range(self.n_mod)]
            groups = [list(range(f * self.n_mod, (f + 1) * self.n_mod)) for f in range(n_feeds)]
            self.parts = FacilityParts(engine, "ups_module", paths, spec.module_part(len(paths)), groups=groups)
            engine.bus.subscribe(self.parts.changed, self._on_module)
        self.working = [self.n_mod] * n_feeds
        self.maint_out = [0] * n_feeds
        """Per feed: modules out of service for a maintenance visit (N+1: serviced one at a time, no bypass)."""
        self.short = [False] * n_feeds
        self.faulted = [False] * n_feeds
        self.dropped = [False] * n_feeds
        self._manual = [engine.timer(functools.partial(self._manual_bypass, f)) for f in range(n_feeds)]
        self._fault_k = [0] * n_feeds
        self._bypass_k = [0] * n_feeds
        self._short_since = [0.0] * n_feeds
        self.in_service: Callable[[int], bool] = lambda f: True
        """Set by the chain: the UPS of feed ``f`` is in service (not failed as a whole, not on maintenance bypass)."""
        # accounting
        self.shortfalls = 0
        self.transfer_failures = 0
        self.faults = 0
        self.short_h = 0.0
        """Feed-hours with fewer than ``k`` modules working, h."""

    def online(self, f: int) -> bool:
        """The UPS of feed ``f`` conditions its load (enough modules, no fault)."""
        return not self.short[f] and not self.faulted[f]

    def start(self) -> None:
        """Start the fault processes (the modules' population is started with every facility population)."""
        if self.ups.fault is not None and self.ups.fault.per_year > 0:
            for f in range(self.n_feeds):
                self._next_fault(f, 0.0)

    def finish(self, now_h: float) -> None:
        for f in range(self.n_feeds):
            if self.short[f]:
                self.short_h += now_h - self._short_since[f]
                self._short_since[f] = now_h

    # ---- modules --------------------------------------------------------------------------------
    def _on_module(self, idx: int, ok: bool) -> None:
        self._settle()
        f = idx // self.n_mod
        self.working[f] += 1 if ok else -1
        self._reassess(f)
        self._changed(f)

    def maintain(self, f: int, out: bool) -> None:
        """A maintenance visit takes one of feed ``f``'s modules out of service (``out``) or returns it: the
        others carry the load (N+1: no bypass; a shortfall only if fewer than ``k`` remain)."""
        self._settle()
        self.maint_out[f] += 1 if out else -1
        self._reassess(f)
        self._changed(f)

    def _reassess(self, f: int) -> None:
        """Enter or leave a shortfall of feed ``f`` after its working or maintained modules changed."""
        avail = self.working[f] - self.maint_out[f]
        now = self.engine.now
        if not self.short[f] and avail < self.k:
            self.short[f] = True
            self._short_since[f] = now
            self.shortfalls += 1
            self.engine.recorder.event(now, "ups_shortfall", self._path(f), -1, float(avail))
            if not self.faulted[f]:
                self._transfer(f)
        elif self.short[f] and avail >= self.k:
            self.short[f] = False
            self.short_h += now - self._short_since[f]
            if not self.faulted[f]:
                self._restored(f)

    def _transfer(self, f: int) -> None:
        """Feed ``f``'s UPS transfers its load to the static bypass; it may fail and drop the load."""
        k = self._bypass_k[f]
        self._bypass_k[f] += 1
        u = self.engine.streams.scalar(self._path(f) + "#bypass", k)
        if u < self.ups.bypass.failure_to_transfer_prob:
            self.transfer_failures += 1
            self._drop(f, "bypass_failed")

    def _drop(self, f: int, kind: str) -> None:
        self.dropped[f] = True
        now = self.engine.now
        self.engine.recorder.event(now, kind, self._path(f))
        self._manual[f].set(now + self.ups.bypass.manual_bypass_min / 60.0)

    def _manual_bypass(self, f: int) -> None:
        if not self.dropped[f]:
            return
        self._settle()
        self.dropped[f] = False
        self.engine.recorder.event(self.engine.now, "manual_bypass", self._path(f))
        self._changed(f)

    def _restored(self, f: int) -> None:
        """The UPS of feed ``f`` is online again (a dropped load is picked up by it)."""
        self.dropped[f] = False
        self._manual[f].cancel()

    # ---- faults ---------------------------------------------------------------------------------
    def _next_fault(self, f: int, after_h: float) -> None:
        assert self.ups.fault is not None
        k = self._fault_k[f]
        self._fault_k[f] += 1
        u = self.engine.streams.scalar(self._path(f) + "#fault", k)
        t = after_h + float(rng.exponential_from_u(np.array([u]), HOURS_PER_YEAR / self.ups.fault.per_year)[0])
        if t < self.engine.horizon_h:
            self.engine.calls(self._fault).at(t, f)

    def _fault(self, f: int) -> None:
        """A fault of feed ``f``'s UPS (its arrival process continues), unless it is out of service (on
        bypass for a shortfall, a fault, a failure of the whole UPS or a maintenance: not hit)."""
        assert self.ups.fault is not None
        now = self.engine.now
        self._next_fault(f, now)
        if not self.online(f) or not self.in_service(f):
            return
        self._settle()
        self.faulted[f] = True
        self.faults += 1
        self._drop(f, "ups_fault")
        self.engine.calls(self._fault_repaired).at(now + self.ups.fault.repair_h, f)
        self._changed(f)

    def _fault_repaired(self, f: int) -> None:
        self._settle()
        self.faulted[f] = False
        if not self.short[f]:
            self._restored(f)
        self._changed(f)

    def _path(self, f: int) -> str:
        return f"power.feed{self.feeds[f]}.ups"


__all__ = ["UPSModules"]
