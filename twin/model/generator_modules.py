"""Generator sets, k of n (issue 43 item 1): per feed, a generator plant of ``n`` sets in parallel of which
``k`` carry the load (N, N+1 and 2N as a facilities buyer means them). Part of the power chain
(``twin.model.power``), which asks here whether the plant can start and carry its feed and is told when
that changes.

* The sets are a facility part population (``generator_set``, paths ``power.feed<X>.generator.set<jj>``):
  standby lifetimes from each set's stream (calendar time), repairs through the crews and spares, one
  common-cause group per plant, silent failures found by the generator's periodic test
  (``latent_test_interval_h``) or when an outage calls on the plant.
* **Start on demand**: every available set (working, not out for maintenance) draws its start (one
  uniform of stream ``power.feed<X>.generator.set<jj>#start`` per demand of that set): it fails to start
  with ``generator.start_failure_prob``. The plant carries the feed when at least ``k`` sets start.
* **Fail to run**: a running set fails at ``modules.run_failure_per_h`` (exponential, stream
  ``...set<jj>#run``, one draw per run); it goes to repair like any failure. Fewer than ``k`` running sets:
  the plant trips (the chain drops the feed's input and tries a restart of the available sets).
* **Maintenance** of a plant with a spare set (``count > required``, mode bypass) services one set at a
  time: the set is out, the others remain available (:meth:`GeneratorModules.maintain`).

Times are hours.
"""

from __future__ import annotations

import functools
import math
from typing import Callable

from twin.model.engine import Engine
from twin.model.parts import FacilityParts
from twin.scenario.power import Power


class GeneratorModules:
    """The generator sets of every feed (see the module docstring). ``settle()`` is called before any state
    changes, ``changed(f)`` after the plant of feed ``f`` gained or lost sets."""

    def __init__(self, engine: Engine, spec: Power, settle: Callable[[], None],
                 changed: Callable[[int], None]) -> None:
        gen = spec.generator
        assert gen is not None and gen.modules is not None
        m = gen.modules
        self.engine = engine
        self.feeds = spec.feeds
        n_feeds = self.n_feeds = len(self.feeds)
        self.n_mod = m.count
        self.k = m.required
        self.start_failure_prob = gen.start_failure_prob
        self.run_rate_per_h = m.run_failure_per_h
        self._settle = settle
        self._changed = changed
        paths = [f"power.feed{x}.generator.set{j:02d}" for x in self.feeds for j in range(self.n_mod)]
        groups = [list(range(f * self.n_mod, (f + 1) * self.n_mod)) for f in range(n_feeds)]
        self.parts = FacilityParts(engine, "generator_set", paths, spec.generator_set_part(len(paths)), groups=groups)
        engine.bus.subscribe(self.parts.changed, self._on_set)
        self.working = [self.n_mod] * n_feeds
        """Per feed: sets not failed (a set out for its periodic test counts as failed meanwhile)."""
        self.maint_out = [0] * n_feeds
        """Per feed: sets out of service for a maintenance visit."""
        self.running: list[set[int]] = [set() for _ in range(n_feeds)]
        """Per feed: the sets that started on the current demand and still run."""
        n_all = n_feeds * self.n_mod
        self._start_k = [0] * n_all
        self._run_k = [0] * n_all
        self._run_timers = [engine.timer(functools.partial(self._run_failure, i)) for i in range(n_all)]
        # accounting
        self.demands = 0
        self.set_start_failures = 0
        self.plant_start_failures = 0
        """Demands on which fewer than ``k`` sets started."""
        self.run_failures = 0
        self.trips = 0
        """Plants that lost their ``k`` running sets while carrying their feed."""
        self.short_h = 0.0
        """Feed-hours with fewer than ``k`` sets available (working and not out for maintenance), h."""
        self._short_since: list[float | None] = [None] * n_feeds

    def finish(self, now_h: float) -> None:
        """Count the shortfalls still open at the horizon ``now_h``."""
        for f in range(self.n_feeds):
            t0 = self._short_since[f]
            if t0 is not None:
                self.short_h += now_h - t0
                self._short_since[f] = now_h

    def _account(self, f: int) -> None:
        """Open or close feed ``f``'s shortfall (fewer than ``k`` sets available) at now."""
        now = self.engine.now
        t0 = self._short_since[f]
        if t0 is None and not self.available(f):
            self._short_since[f] = now
        elif t0 is not None and self.available(f):
            self.short_h += now - t0
            self._short_since[f] = None

    def available(self, f: int) -> bool:
        """The plant of feed ``f`` has at least ``k`` sets working and in service (it can be started)."""
        return self.working[f] - self.maint_out[f] >= self.k

    def carrying(self, f: int) -> bool:
        """At least ``k`` of feed ``f``'s sets run now."""
        return len(self.running[f]) >= self.k

    def start(self, f: int) -> bool:
        """A demand on the plant of feed ``f``: every available set draws its start; True when at least ``k``
        started (they run from now, each with its fail-to-run clock)."""
        self.stop(f)
        self.demands += 1
        base = f * self.n_mod
        healthy = self.parts.healthy
        out = self.maint_out[f]
        started: list[int] = []
        self.called(f)
        for i in range(base, base + self.n_mod):
            if not healthy[i]:
                continue
            if out > 0:  # the sets out for maintenance are the first working ones
                out -= 1
                continue
            k = self._start_k[i]
            self._start_k[i] = k + 1
            if self.engine.streams.scalar(self.parts.path(i) + "#start", k) < self.start_failure_prob:
                self.set_start_failures += 1
                continue
            started.append(i)
        if len(started) < self.k:
            self.plant_start_failures += 1
            return False
        for i in started:
            self.running[f].add(i)
            if self.run_rate_per_h > 0.0:
                k = self._run_k[i]
                self._run_k[i] = k + 1
                u = self.engine.streams.scalar(self.parts.path(i) + "#run", k)
                self._run_timers[i].set(self.engine.now - math.log1p(-u) / self.run_rate_per_h)
        return True

    def called(self, f: int) -> None:
        """An outage calls on the plant of feed ``f``: the silent failures of its sets show."""
        for i in range(f * self.n_mod, (f + 1) * self.n_mod):
            self.parts.found(i, "demand")

    def stop(self, f: int) -> None:
        """The plant of feed ``f`` stops (utility back, tripped or taken out): no set runs."""
        for i in self.running[f]:
            self._run_timers[i].cancel()
        self.running[f].clear()

    def maintain(self, f: int, out: bool) -> None:
        """A maintenance visit takes one of feed ``f``'s sets out of service (``out``) or returns it."""
        self._settle()
        self.maint_out[f] += 1 if out else -1
        if out and self.running[f]:  # the serviced set is not one that runs: an idle one is taken if any
            idle = self.working[f] - len(self.running[f])
            if idle <= 0:
                i = max(self.running[f])
                self.running[f].discard(i)
                self._run_timers[i].cancel()
        self._account(f)
        self._changed(f)

    def _run_failure(self, i: int) -> None:
        """Running set ``i`` fails to run: it fails, seen at once (a set that stops under load is no silent
        failure: its repair starts now, not at the next periodic test)."""
        self.run_failures += 1
        self.parts.fail_now(i)
        self.parts.found(i, "demand")

    def _on_set(self, idx: int, ok: bool) -> None:
        self._settle()
        f = idx // self.n_mod
        self.working[f] += 1 if ok else -1
        if not ok and idx in self.running[f]:
            self.running[f].discard(idx)
            self._run_timers[idx].cancel()
            if len(self.running[f]) < self.k:
                self.trips += 1
                self.engine.recorder.event(self.engine.now, "generator_trip", f"power.feed{self.feeds[f]}.generator",
                                           -1, float(len(self.running[f])))
        self._account(f)
        self._changed(f)


__all__ = ["GeneratorModules"]
