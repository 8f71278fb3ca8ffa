"""Power chain and redundancy (model.md §5): node PSUs on feeds; per feed utility → UPS →
generator → switchboard → PDUs → racks; power capping; site power.

Event-driven throughout. Between events every input is constant, so the UPS state of charge
(SoC) moves linearly (down at load_fraction/ride_through, up at 1/recharge_h, clipped at 1) and
the time the battery runs empty is a closed form, scheduled as an event and moved when the load
changes. IT power is piecewise constant, so energy is an exact sum.

Feed state machine (one per feed, ``mode``):

- ``utility``: the utility is up; the UPS recharges linearly (also from a running generator).
- utility lost → the generator draws its start (one uniform of stream
  ``power.feed<X>.generator#start`` at k = the feed's outage index): it fails to start with
  probability ``start_failure_prob`` (no retry until utility returns), else it carries the feed
  ``start_delay_s`` later (mode ``generator``). A generator out of service (failed, under repair)
  cannot start; repaired during the outage it tries again (stream ``...generator#restart``); one
  that fails while running drops the feed's input.
- meanwhile ``ups``: the battery carries the feed for SoC × ride_through × rated/actual load;
  if it runs empty first (or is failed, i.e. bypassed, or absent) the feed is ``dead`` until the
  generator runs or utility returns.
- a failed switchboard kills the feed; a failed PDU kills its racks' PSUs on that feed.

A node's budget is (healthy PSUs on live feeds) × capacity_w; its load is shared evenly by those
PSUs. Below the node's full demand (GPUs at TDP + non-GPU load) its GPUs are capped at
(budget − non-GPU)/GPUs and its speed cap (source ``power``) is model.md §3's
((P_cap − P_idle)/(P_tdp − P_idle))^α: the speed it computes at when it computes, whatever its
load now. An optional site cap holds site IT power at ``site_cap_w`` by capping every GPU to the
same power (water-filling), re-solved at every load change; in a hall of node pools each node takes its own
pool's figures (``twin.model.power_figures``: its full demand, non-GPU load, min_w floor and speed law). Below the PSU group's minimum
(``min_to_run``, else ``required``) the node is down with cause ``power:<cause>``, where the cause
is the most local sufficient reason: ``psu`` if its healthy PSUs alone are too few, else ``pdu``
if those on working PDUs are too few, else its dead feeds' cause (``feed``: switchboard, UPS or
generator out of service; ``generator_start``: a failed start; ``utility``: an outage that
outlasted the ride-through before the generator took over, or with no generator). A node that
lost power returns ``reboot_h`` after power is back (after a hall-wide loss ``twin.model.recovery`` holds it longer).
"""

from __future__ import annotations

import functools
import math
from functools import partial
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from twin import rng
from twin.model.component import BuildContext, Component, ResultsSoFar
from twin.model.causes import DownCause
from twin.model.engine import Topic
from twin.model.facility_units import MaintenanceAccount, MaintenanceRota
from twin.model.it_power import IT_POWER
from twin.model.parts import FacilityParts
from twin.model.power_figures import pool_figures
from twin.model.power_results import power_results
from twin.scenario.recovery import block_trip_min
from twin.model.ups_modules import UPSModules
from twin.model.generator_modules import GeneratorModules
from twin.model import power_maint as pm
from twin.physics.power import power_ramps as power_ramps  # re-exported (tests, reports)
from twin.physics.power import site_gpu_cap_w
from twin.physics.thermal import speed_fraction
from twin.units import HOURS_PER_YEAR

if TYPE_CHECKING:  # pragma: no cover
    from twin.scenario.schema import Scenario

CAUSES = ("psu", "pdu", "utility", "generator_start", "feed", "maintenance", "transfer", "ups", "switching", "overload")
"""Power down causes; code = index + 1 (0: not down). For a node's dead feeds the highest rank wins
(the code, except that a planned maintenance ranks below every unplanned cause and a failed transfer
ranks with a failed generator start); ``transfer`` also a generator tripped by its block load until restarted;
``ups``: a UPS that dropped its load (a fault or a failed transfer to bypass, ``twin.model.ups_modules``);
``switching``: a switching error of a maintenance visit; ``overload``: a breaker tripped (Topic.FEED_TRIP)."""
_PSU, _PDU, _UTILITY, _GEN_START, _FEED, _MAINT, _ATS, _UPS, _SWITCH, _TRIP = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10
_RANK = np.array([0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 0.5, 3.5, 4.5, 4.6, 4.7])
"""Rank of each code (index = code) among a node's dead feeds."""
DOWN_CAUSES: tuple[DownCause, ...] = (DownCause.power("none"), *(
    DownCause.planned_drain("power") if code == _MAINT else DownCause.power(c) for code, c in enumerate(CAUSES, 1)))
"""The node-down reason of each cause code (index = code; 0 is never a reason): ``power:<cause>``, and for a
planned maintenance that drained the load ``planned:power_maintenance`` (a planned interruption)."""
_FEED_CAUSES = frozenset(DownCause.power(c) for c in CAUSES[2:])  # a feed unit's failure: dispatch by impact


class PowerChain(Component):
    """Feeds, their chains, node PSU budgets and power capping. Built from ``sc.power``."""

    name = "power"
    requires = (IT_POWER,)

    @classmethod
    def wanted(cls, sc: Scenario) -> bool:
        return sc.power is not None

    @classmethod
    def build(cls, ctx: BuildContext) -> PowerChain:
        return cls(ctx)

    def __init__(self, ctx: BuildContext) -> None:
        self.engine = eng = ctx.engine
        self.cluster = cl = ctx.cluster
        sc = ctx.sc
        spec = sc.power
        assert spec is not None
        self.spec = spec
        self.H = sc.horizon_h
        n = cl.n_nodes
        self.n = n
        self.g = sc.cluster.node.gpus
        pop = ctx.parts[spec.psu_part]
        P = pop.per_node
        self.psu_healthy = pop.healthy.reshape(n, P)  # a view: the part population updates it
        assert np.shares_memory(self.psu_healthy, pop.healthy)
        self.min_run = int(pop.fail_below)
        self.feeds = spec.feeds
        n_feeds = self.n_feeds = len(self.feeds)
        names = spec.slot_feeds(P)
        self.slot_feed = np.array([self.feeds.index(x) for x in names], dtype=np.int64)
        self.slot_masks = [self.slot_feed == f for f in range(n_feeds)]
        racks = sc.cluster.racks
        self.K = spec.pdu_count(racks)
        rack_pdu = (np.arange(racks) * self.K) // racks
        self.node_pdu = rack_pdu[np.arange(n) // sc.cluster.nodes_per_rack]
        node = sc.cluster.node
        self.idle_w = node.gpu.idle_w
        self.tdp_w = node.gpu.demand_w  # the GPU's demand at full load (train_w), P_d of the speed law
        self.min_w = node.gpu.min_w
        self.speed_alpha = node.gpu.speed_alpha
        self.non_gpu_w = node.non_gpu_w
        self.full_w = node.full_power_w
        self.figs = figs = pool_figures(sc)  # node pools of other power figures: each node's own (cluster.pools)
        # ---- feed state (per feed, Python lists: n_feeds is 1 or 2)
        ups, gen = spec.ups, spec.generator
        self.has_ups = ups is not None and ups.ride_through_min > 0
        self.has_gen = gen is not None
        self.rt_h = (ups.ride_through_min / 60.0) if ups is not None else 0.0
        self.recharge_h = ups.recharge_h if ups is not None else 1.0
        self.loss_k = (1.0 / ups.efficiency - 1.0) if ups is not None else 0.0
        self.util_out = [0] * n_feeds
        self.outage_idx = [0] * n_feeds
        self.restarts = [0] * n_feeds
        self.soc = [1.0] * n_feeds
        self.ups_ok = [self.has_ups] * n_feeds
        self.gen_ok = [self.has_gen] * n_feeds
        self.gen_state = ["off"] * n_feeds
        self.gen_timer = [eng.timer(functools.partial(self._gen_running, f)) for f in range(n_feeds)]  # start delay over
        self.sb_ok = [True] * n_feeds
        self.ats_k = [0] * n_feeds  # transfers drawn per feed (stream power.feed<X>.ats#transfer)
        self.ats_fail = [False] * n_feeds  # the pending transfer of the feed fails
        self.transfer_failures = 0
        self.cool_w = [0.0] * n_feeds  # load of the cooling units on the feed's UPS output (Topic.COOLING_LOAD), W
        # ---- scheduled maintenance (issue 24): per unit type, per feed, in the window now
        self.maint = MaintenanceAccount()
        self.rotas = {name: MaintenanceRota(eng, name, el.maintenance, n_feeds * (self.K if name == "pdu" else 1), self.maint,
                                            partial(pm.unit_path, self),
                                            partial(pm.maint_out, self), partial(pm.maint_back, self),
                                            partial(pm.maint_after, self))
                      for name, el in spec.elements().items() if el.maintenance is not None}
        self.unit_up = {"ups": [self.has_ups] * n_feeds, "generator": [self.has_gen] * n_feeds}  # not failed (repairs)
        self.isolated = [0] * n_feeds  # maintenance windows that de-energise the feed now
        self.switch_drop = [0] * n_feeds  # switching errors holding the feed's load down now
        self.trip_drop = [0] * n_feeds  # overload trips holding the feed's load down now (Topic.FEED_TRIP)
        self.block_trips = 0  # generators tripped by a block load (generator.block_load)
        self.switching_errors = 0
        self.switch_k: dict[tuple[str, int], int] = {}  # draws per (unit type, feed): stream ...<type>#switching
        self.pdu_ok = np.ones((n_feeds, self.K), dtype=bool)
        self.pdu_out = np.zeros((n_feeds, self.K), dtype=np.int64)  # PDUs isolated for a maintenance visit now
        self.pdu_drop = np.zeros((n_feeds, self.K), dtype=np.int64)  # PDUs dropped by a visit's switching error now
        self.input_live = [True] * n_feeds
        self.mode = ["utility"] * n_feeds
        self.feed_code = [0] * n_feeds
        self.empty_timer = [eng.timer(functools.partial(self._ups_empty, f)) for f in range(n_feeds)]  # battery runs empty
        self.feed_load_w = [0.0] * n_feeds
        self.feed_since = [0.0] * n_feeds
        self.feed_rows: list[tuple[str, float, float, str, str]] = []
        self.outage_rows: list[dict[str, object]] = []
        self.utility_outages = 0  # outage events that took at least one feed off utility (site-wide: once)
        self.open_outage: list[dict[str, object] | None] = [None] * n_feeds
        self._feeds_active = False  # any feed off utility, recharging, or in an outage
        # UPS rating (W): the full demand of every node (each slot list covers every node alike)
        self.ups_rating_w = (ups.capacity_kw * 1000.0 if ups is not None and ups.capacity_kw
                             else n * node.full_power_w if figs is None else figs.total_full_w)
        # ---- node state
        self.psus_live = np.full(n, P, dtype=np.int64)  # energised PSUs per node
        self.share = np.stack([np.full(n, m.sum() / P) for m in self.slot_masks], axis=1)
        self.pheld = np.zeros(n, dtype=bool)
        self.pcode = np.zeros(n, dtype=np.int64)
        self.rebooting = np.zeros(n, dtype=bool)
        self.reboot_timer = eng.batch_timer(n, self._reboot_done)  # nodes rebooting after power returned
        self.cause_nodes = np.zeros(len(CAUSES) + 1)
        self._n_pheld = 0
        self._n_cap = 0  # nodes with a finite power cap (node budget or site)
        # ---- accounting (integrated in _settle)
        self._t = eng.now
        self.down_node_h = np.zeros(len(CAUSES) + 1)
        self.capped_gpus = 0.0
        self.capped_gpu_h = 0.0
        self.site_capped_gpus = 0.0
        self.site_capped_gpu_h = 0.0
        self.capped_nodes = 0.0
        self.capped_node_h = 0.0
        self._ups_loss_w = 0.0
        self._loss_from_feeds = False  # UPS losses from per-feed loads (a UPS failed or on battery)
        self.ups_loss_wh = 0.0  # UPS losses while a UPS is failed or on battery (per-feed loads)
        self.feeds_loss_energy_wh = 0.0  # IT energy of those periods
        self.gen_starts = 0
        self.gen_start_failures = 0
        self.site_cap_short_h = 0.0  # time the site stayed above its cap with every GPU at minimum
        self._site_short = False
        self._in_site = False
        # ---- IT power (shared with the thermal/energy accounting)
        self.it = it = ctx.service(IT_POWER)
        self.cap_w = it.cap_of("power")
        self.site_cap_w = it.cap_of("power_site") if spec.site_cap_w is not None else None
        if self.site_cap_w is not None:  # the site cap water-fills over every GPU's caps at every load change
            it.need_exact("power.site_cap", True)
        self.speed_src = ctx.cluster.speed_source("power")
        self.speed = self.speed_src.caps
        it.watch(self._settle, self._after_load, self._idle)
        # ---- site-level units
        self.units: dict[str, FacilityParts] = {}
        for name, el in spec.elements().items():
            if el.failure is None:
                continue
            if name == "pdu":
                paths = [f"power.feed{x}.pdu{j:02d}" for x in self.feeds for j in range(self.K)]
                groups = [[f * self.K + j for f in range(n_feeds)] for j in range(self.K)]  # the PDUs of the same racks
            else:
                paths = [f"power.feed{x}.{name}" for x in self.feeds]
                groups = [list(range(n_feeds))]  # the unit of every feed (generator A and B)
            fp = FacilityParts(eng, name, paths, spec.element_part(name, len(paths)), groups=groups)
            eng.bus.subscribe(fp.changed, functools.partial(self._on_unit, name))
            fp.test_duration_h = el.test_duration_h
            # dispatch by impact: a PDU's nodes, or every node of a feed-level unit, out for a power cause
            if name == "pdu":
                fp.scope = lambda i: np.flatnonzero(self.node_pdu == i % self.K)
                fp.causes = frozenset({DOWN_CAUSES[_PDU]})
            else:
                fp.scope = lambda i: range(n)
                fp.causes = _FEED_CAUSES
            self.units[name] = fp
        # ---- utility sources: (stream path, feeds)
        if spec.utility.shared:
            self.sources = [("power.utility", list(range(n_feeds)))]
        else:
            self.sources = [(f"power.feed{x}.utility", [f]) for f, x in enumerate(self.feeds)]
        self.src_k = [0] * len(self.sources)
        # ---- the modular UPS and UPS faults (issue 43)
        self.mods: UPSModules | None = None
        if ups is not None and (ups.modules is not None or ups.fault is not None):
            self.mods = UPSModules(eng, spec, self._settle, self._ups_changed)
            self.mods.in_service = lambda f: self.unit_up["ups"][f] and not pm.bypassed(self, "ups", f)
            if self.mods.parts is not None:
                self.mods.parts.scope = lambda i: range(n)
                self.mods.parts.causes = _FEED_CAUSES
                self.units["ups_module"] = self.mods.parts
        # ---- the generator sets, k of n (issue 43)
        self.gens: GeneratorModules | None = None
        if gen is not None and gen.modules is not None:
            self.gens = GeneratorModules(eng, spec, self._settle, self._gens_changed)
            self.gens.parts.scope = lambda i: range(n)
            self.gens.parts.causes = _FEED_CAUSES
            self.gens.parts.test_duration_h = gen.test_duration_h
            self.units["generator_set"] = self.gens.parts
        eng.bus.subscribe(Topic.GROUP, self._on_group)
        eng.bus.subscribe(Topic.COOLING_LOAD, self._on_cooling_load)
        eng.bus.subscribe(Topic.FEED_TRIP, partial(pm.on_trip, self))
        eng.bus.subscribe(Topic.GRID_OUTAGE, lambda d: self._outage_begin(list(range(n_feeds)), d, True))

    # ---- component contract -------------------------------------------------------------------
    def facility_parts(self) -> dict[str, FacilityParts]:
        return dict(self.units)

    def down_causes(self) -> dict[str, str]:
        # a node down for too few PSUs counts against the PSU part, for a failed PDU against the PDUs
        return {DOWN_CAUSES[_PSU].label: self.spec.psu_part, DOWN_CAUSES[_PDU].label: "pdu"}

    def start(self) -> None:
        if self.spec.utility.outages_per_year > 0:
            for s in range(len(self.sources)):
                self._next_outage(s, 0.0)
        for rota in self.rotas.values():
            rota.start()
        if self.mods is not None:
            self.mods.start()
        for inj in self.spec.inject:
            f = self.feeds.index(inj.feed)
            if inj.at_h < self.H:
                self.engine.calls(self._outage_begin).at(inj.at_h, [f], inj.duration_h, True)
        self._update()

    def finish(self) -> None:
        self._settle()
        now = self.engine.now
        self.maint.close_all(now)
        if self.mods is not None:
            self.mods.finish(now)
        if self.gens is not None:
            self.gens.finish(now)
        for f in range(self.n_feeds):
            self._close_feed_row(f, now)
            row = self.open_outage[f]
            if row is not None:
                row["end_h"] = math.nan  # still in progress at the horizon
                self.outage_rows.append(row)
                self.open_outage[f] = None

    # ---- time integration ---------------------------------------------------------------------
    def _settle(self) -> None:
        """Integrate everything that moves between events from the last event to now."""
        now = self.engine.env.now
        dt = now - self._t
        if dt <= 0.0:
            return
        self._t = now
        if self._feeds_active:
            active = False
            for f in range(self.n_feeds):
                if self.mode[f] == "ups":
                    self.soc[f] = max(0.0, self.soc[f] - dt * self._drain_per_h(f))
                elif self.input_live[f] and self.ups_ok[f] and self.soc[f] < 1.0:
                    self.soc[f] = min(1.0, self.soc[f] + dt / self.recharge_h)
                row = self.open_outage[f]
                if row is not None and self.mode[f] == "dead":
                    row["dead_h"] = float(row["dead_h"]) + dt  # type: ignore[arg-type]
                active = active or self.mode[f] != "utility" or self.soc[f] < 1.0 or row is not None
            self._feeds_active = active
        if self._n_pheld:
            self.down_node_h += self.cause_nodes * dt
        if self._n_cap:
            self.capped_gpu_h += self.capped_gpus * dt
            self.site_capped_gpu_h += self.site_capped_gpus * dt
            self.capped_node_h += self.capped_nodes * dt
        if self._loss_from_feeds:  # else the loss is loss_k × IT energy: settled in results()
            self.ups_loss_wh += self._ups_loss_w * dt
            self.feeds_loss_energy_wh += self.it.total_w() * dt
        if self._site_short:
            self.site_cap_short_h += dt

    def _drain_per_h(self, f: int) -> float:
        """SoC lost per hour on battery: (load / rated load) / ride-through at rated load (h)."""
        return (self.feed_load_w[f] + self.cool_w[f]) / self.ups_rating_w / self.rt_h

    def _on_cooling_load(self, feed: str, load_w: float) -> None:
        """The cooling units on feed ``feed``'s UPS output now draw ``load_w`` (W): on battery it drains faster."""
        f = self.feeds.index(feed)
        if self.cool_w[f] == load_w:
            return
        self._settle()
        self.cool_w[f] = load_w
        if self.mode[f] == "ups":
            self._arm_empties()

    # ---- utility outages ---------------------------------------------------------------------
    def _next_outage(self, s: int, after_h: float) -> None:
        path = self.sources[s][0]
        k = self.src_k[s]
        u = self.engine.streams.scalar(path + "#arrival", k)
        t = after_h + float(rng.exponential_from_u(np.array([u]), HOURS_PER_YEAR / self.spec.utility.outages_per_year)[0])
        if t < self.H:
            self.engine.calls(self._source_outage).at(t, s)

    def _source_outage(self, s: int) -> None:
        path, feeds = self.sources[s]
        k = self.src_k[s]
        self.src_k[s] += 1
        u = self.engine.streams.scalar(path + "#duration", k)
        d = float(self.spec.utility.duration.sample(np.array([u]))[0])
        self._outage_begin(feeds, d, False)
        self._next_outage(s, self.engine.now + d)

    def _outage_begin(self, feeds: list[int], duration_h: float, injected: bool) -> None:
        self._settle()
        eng = self.engine
        if any(self.util_out[f] == 0 for f in feeds):
            self.utility_outages += 1  # one outage however many feeds it takes down
        for f in feeds:
            self.util_out[f] += 1
            if self.util_out[f] > 1:
                continue  # already out: overlapping outages are one
            k = self.outage_idx[f]
            self.outage_idx[f] += 1
            row: dict[str, object] = {"feed": self.feeds[f], "outage": k, "start_h": eng.now, "end_h": math.nan,
                                      "injected": injected, "soc_start": self.soc[f],
                                      "generator": "none", "dead_h": 0.0}
            self.open_outage[f] = row
            ups_units = self.units.get("ups")
            if ups_units is not None:
                ups_units.found(f, "demand")  # the outage calls on the UPS: a latent failure shows
            if self.has_gen:
                row["generator"] = self._start_generator(f, f"power.feed{self.feeds[f]}.generator#start", k)
            eng.recorder.event(eng.now, "utility_lost", f"power.feed{self.feeds[f]}", -1, duration_h)
        self._feeds_active = True
        eng.calls(self._outage_end).at(eng.now + duration_h, feeds)
        self._update()

    def _start_generator(self, f: int, stream: str, k: int) -> str:
        """Try to start the generator of feed ``f`` (draw ``k`` of ``stream``); returns what happened."""
        if not self.gen_ok[f]:
            self.gen_state[f] = "off"
            gen_units = self.units.get("generator")
            if gen_units is not None:
                gen_units.found(f, "demand")  # a start that finds it failed (latent or not)
            if self.gens is not None:
                self.gens.called(f)
            return "unavailable"
        gen = self.spec.generator
        assert gen is not None
        self.gen_timer[f].cancel()
        if (not self.gens.start(f)) if self.gens is not None else self.engine.streams.scalar(stream, k) < gen.start_failure_prob:
            self.gen_state[f] = "failed_start"
            self.gen_start_failures += 1
            self.engine.recorder.event(self.engine.now, "generator_start_failed", f"power.feed{self.feeds[f]}.generator")
            return "failed_start"
        self.gen_starts += 1
        ats = self.spec.ats
        if ats is not None:  # the transfer switch's draw for this start (its own stream: no other draw moves)
            k_ats = self.ats_k[f]
            self.ats_k[f] += 1
            u_ats = self.engine.streams.scalar(f"power.feed{self.feeds[f]}.ats#transfer", k_ats)
            self.ats_fail[f] = u_ats < ats.failure_to_transfer_prob
        if gen.start_delay_s <= 0.0:
            self._take_over(f)
        else:
            self.gen_state[f] = "starting"
            self.gen_timer[f].set(self.engine.now + gen.start_delay_s / 3600.0)
        return "started"

    def _gen_running(self, f: int) -> None:
        """The generator's start delay is over (state ``starting``), or an operator transferred the feed by
        hand after a failed transfer (``failed_transfer``)."""
        state = self.gen_state[f]
        if state not in ("starting", "failed_transfer"):  # (the timer is cancelled whenever it leaves them)
            return
        self._settle()
        if state == "starting":
            self._take_over(f)
        else:
            self.gen_state[f] = "running"
            self.engine.recorder.event(self.engine.now, "manual_transfer", f"power.feed{self.feeds[f]}.ats")
        self._update()

    def _take_over(self, f: int) -> None:
        """The running generator of feed ``f`` takes the load through its transfer switch, unless the switch
        fails to transfer (then an operator transfers by hand ``manual_transfer_min`` later)."""
        trip_min = block_trip_min(self.spec, self.it.node_power_w @ self.share[:, f] + self.cool_w[f], self.ups_rating_w)
        if not self.ats_fail[f] and trip_min is None:
            self.gen_state[f] = "running"
            return
        self.gen_state[f] = "failed_transfer"
        if trip_min is not None:  # the step is above the block-load limit: the generator trips, restarted by hand
            self.block_trips += 1
            self.engine.recorder.event(self.engine.now, "generator_block_trip", f"power.feed{self.feeds[f]}.generator")
            self.gen_timer[f].set(self.engine.now + trip_min / 60.0)
            return
        ats = self.spec.ats
        assert ats is not None
        self.ats_fail[f] = False
        self.transfer_failures += 1
        self.engine.recorder.event(self.engine.now, "transfer_failed", f"power.feed{self.feeds[f]}.ats")
        self.gen_timer[f].set(self.engine.now + ats.manual_transfer_min / 60.0)

    def _outage_end(self, feeds: list[int]) -> None:
        self._settle()
        eng = self.engine
        for f in feeds:
            self.util_out[f] -= 1
            if self.util_out[f] > 0:
                continue
            self.gen_state[f] = "off"
            self.gen_timer[f].cancel()
            if self.gens is not None:
                self.gens.stop(f)
            row = self.open_outage[f]
            if row is not None:
                row["end_h"] = eng.now
                self.outage_rows.append(row)
                self.open_outage[f] = None
            eng.recorder.event(eng.now, "utility_back", f"power.feed{self.feeds[f]}")
        self._update()

    # ---- unit failures and repairs --------------------------------------------------------------
    def _on_unit(self, name: str, idx: int, ok: bool) -> None:
        self._settle()
        if name == "pdu":
            self.pdu_ok[idx // self.K, idx % self.K] = ok
        elif name == "switchboard":
            self.sb_ok[idx] = ok
        elif name == "ups":
            self.unit_up["ups"][idx] = ok
            self._set_ups(idx)
        elif name == "generator":
            self.unit_up["generator"][idx] = ok
            self._set_gen(idx, pm.gen_able(self, idx))
        self._feeds_active = True
        self._update()

    def _set_ups(self, f: int) -> None:
        """The UPS of feed ``f`` carries its load (battery, conditioning) unless failed, bypassed for a
        maintenance, or on its static bypass (a module shortfall or a fault)."""
        self.ups_ok[f] = (self.unit_up["ups"][f] and not pm.bypassed(self, "ups", f)
                          and (self.mods is None or self.mods.online(f)))

    def _ups_changed(self, f: int) -> None:
        """The modular UPS of feed ``f`` changed state (after ``_settle``)."""
        self._set_ups(f)
        self._feeds_active = True
        self._update()

    def _set_gen(self, f: int, ok: bool) -> None:
        """The generator of feed ``f`` becomes able (``ok``) or unable to run (failure, repair, maintenance)."""
        self.gen_ok[f] = ok
        if not ok and self.gen_state[f] in ("starting", "running", "failed_transfer"):
            self.gen_state[f] = "off"
            self.gen_timer[f].cancel()
            if self.gens is not None:
                self.gens.stop(f)
        elif ok and self.util_out[f] > 0 and self.gen_state[f] == "off":
            k = self.restarts[f]
            self.restarts[f] += 1
            self._start_generator(f, f"power.feed{self.feeds[f]}.generator#restart", k)

    def _gens_changed(self, f: int) -> None:
        """The generator sets of feed ``f`` changed (after ``_settle``): a plant left with fewer than k running
        sets trips (then restarts if it can), one that gained or lost sets becomes able or unable to start."""
        assert self.gens is not None
        if self.gen_state[f] == "running" and not self.gens.carrying(f):
            self._set_gen(f, False)
        self._set_gen(f, pm.gen_able(self, f))
        self._feeds_active = True
        self._update()

    def _on_group(self, node: int, part: str, healthy: int) -> None:
        if part == self.spec.psu_part:
            self._settle()
            self._update()

    # ---- the supply side: feeds, PSU budgets, caps, downs --------------------------------------
    def _feed_states(self) -> None:
        now = self.engine.now
        for f in range(self.n_feeds):
            inp = self.util_out[f] == 0 or self.gen_state[f] == "running"
            self.input_live[f] = inp
            code = 0
            if not self.sb_ok[f]:
                mode, code = "dead", _FEED
            elif self.mods is not None and self.mods.dropped[f]:
                mode, code = "dead", _UPS
            elif self.switch_drop[f]:
                mode, code = "dead", _SWITCH
            elif self.trip_drop[f]:
                mode, code = "dead", _TRIP
            elif self.isolated[f]:
                mode, code = "dead", _MAINT
            elif inp:
                mode = "utility" if self.util_out[f] == 0 else "generator"
            elif self.ups_ok[f] and self.soc[f] > 0.0:
                mode = "ups"
            else:
                mode = "dead"
                if self.gen_state[f] == "failed_start":
                    code = _GEN_START
                elif self.gen_state[f] == "failed_transfer":
                    code = _ATS
                elif self.has_gen and not self.gen_ok[f]:
                    code = _FEED
                elif self.has_ups and not self.ups_ok[f]:
                    code = _FEED
                else:
                    code = _UTILITY
            if mode != self.mode[f] or code != self.feed_code[f]:
                self._close_feed_row(f, now)
                self.mode[f] = mode
                self.feed_code[f] = code
                self.feed_since[f] = now
                self.engine.recorder.event(now, f"feed_{mode}", f"power.feed{self.feeds[f]}")
                self.engine.bus.publish(Topic.FEED, self.feeds[f], mode)

    def _close_feed_row(self, f: int, now: float) -> None:
        if now > self.feed_since[f]:
            code = self.feed_code[f]
            self.feed_rows.append((self.feeds[f], self.feed_since[f], now, self.mode[f],
                                   CAUSES[code - 1] if code else ""))
            self.feed_since[f] = now

    def _update(self) -> None:
        """Recompute feeds, every node's live PSUs, budget, cap, speed and power-down state."""
        self._feed_states()
        # feed loads are read at every load change while a feed is on battery or a UPS is out (UPS losses, drain)
        self.it.need_exact("power.feeds", self.has_ups and ("ups" in self.mode or not all(self.ups_ok)))
        live = np.array([m != "dead" for m in self.mode])
        held = bool(self.pdu_out.any() or self.pdu_drop.any())  # PDUs out for a visit or its switching error
        pdu_up = self.pdu_ok & (self.pdu_out == 0) & (self.pdu_drop == 0) if held else self.pdu_ok
        pdu_nf = pdu_up[:, self.node_pdu].T  # (n, n_feeds): the node's PDU on feed f works
        reach_nf = pdu_nf & live[None, :]
        h = self.psu_healthy
        hp = h & pdu_nf[:, self.slot_feed]
        avail = h & reach_nf[:, self.slot_feed]
        live_n = avail.sum(axis=1)  # energised PSUs per node
        self.psus_live = live_n
        cnt = np.stack([avail[:, m].sum(axis=1) for m in self.slot_masks], axis=1)
        self.share = cnt / np.maximum(live_n, 1)[:, None]
        budget = live_n * self.spec.capacity_w
        if self.figs is None:
            capped = (live_n >= self.min_run) & (budget < self.full_w)
            new_cap = np.where(capped, (budget - self.non_gpu_w) / self.g, np.inf)
        else:  # node pools: each node against its own pool's full demand and non-GPU load
            capped = (live_n >= self.min_run) & (budget < self.figs.full_w)
            new_cap = np.where(capped, (budget - self.figs.non_gpu_w) / self.g, np.inf)
        # power-down state and its cause
        down = live_n < self.min_run
        hp_cnt = np.stack([hp[:, m].sum(axis=1) for m in self.slot_masks], axis=1)
        dead_code = np.where(live, 0, np.array(self.feed_code))
        if self.rotas:  # rank a planned maintenance below every unplanned cause
            cand = (hp_cnt > 0) * dead_code[None, :]
            feed_cause = np.take_along_axis(cand, _RANK[cand].argmax(axis=1)[:, None], axis=1)[:, 0]
        else:
            feed_cause = ((hp_cnt > 0) * dead_code[None, :]).max(axis=1)
        pdu_code = pm.pdu_cause(self, h, _PDU, _SWITCH, _MAINT) if held else _PDU
        code = np.where(h.sum(axis=1) < self.min_run, _PSU, np.where(hp.sum(axis=1) < self.min_run, pdu_code, feed_cause))
        code = np.where(down, np.maximum(code, 1), 0)  # a down node always has a cause
        self.it.set_cap("power", None, new_cap)  # → node power, feed loads, capped counts, UPS timers
        self._apply_downs(down, code)
        self._publish_speed()

    def _apply_downs(self, down: NDArray[np.bool_], code: NDArray[np.int64]) -> None:
        cl = self.cluster
        for i in np.flatnonzero(down & (~self.pheld | (self.pcode != code) | self.rebooting)).tolist():
            c = int(code[i])
            if self.rebooting[i]:
                self.rebooting[i] = False
                self.reboot_timer.cancel(i)
            if not self.pheld[i]:
                self.pheld[i] = True
                self.pcode[i] = c
                self._count_cause()
                cl.add_down(i, DOWN_CAUSES[c])
            elif self.pcode[i] != c:
                old = int(self.pcode[i])
                self.pcode[i] = c
                self._count_cause()
                cl.add_down(i, DOWN_CAUSES[c])  # new reason first: no spurious up
                cl.remove_down(i, DOWN_CAUSES[old])
        back = np.flatnonzero(~down & self.pheld & ~self.rebooting)
        if len(back):
            if self.spec.reboot_h > 0:
                self.rebooting[back] = True
                self.reboot_timer.set(back, self.engine.now + self.spec.reboot_h)
            else:
                self._release(back)

    def _release(self, nodes: NDArray[np.int64]) -> None:
        for i in nodes.tolist():
            c = int(self.pcode[i])
            self.pheld[i] = False
            self.rebooting[i] = False
            self.pcode[i] = 0
            self._count_cause()
            self.cluster.remove_down(i, DOWN_CAUSES[c])

    def _reboot_done(self, nodes: NDArray[np.int64]) -> None:
        """The reboot of ``nodes`` (those of a batch still rebooting) is over: they are back."""
        self._settle()
        self._release(nodes)

    def _count_cause(self) -> None:
        self.cause_nodes = np.bincount(self.pcode[self.pheld], minlength=len(CAUSES) + 1).astype(float)
        self._n_pheld = int(self.pheld.sum())

    def _publish_speed(self) -> None:
        cap = self.cap_w if self.site_cap_w is None else np.minimum(self.cap_w, self.site_cap_w)
        if self.figs is not None:  # node pools: each node by its own pool's law
            s = self.figs.speed(cap)
        else:
            s = np.ones(self.n)
            lim = np.isfinite(cap)
            if lim.any():
                s[lim] = speed_fraction(cap[lim], self.tdp_w, self.idle_w, self.speed_alpha)
        changed = np.flatnonzero(s != self.speed)
        if len(changed):
            self.speed[changed] = s[changed]
            self.speed_src.changed(changed)

    # ---- the load side ------------------------------------------------------------------------
    def _idle(self) -> bool:
        """Whether ``_settle()`` then ``_after_load(nodes)`` would change nothing now (the IT power's watch: a refresh
        that moves no node's power may then be skipped): settled to now, no site cap, no node under a power cap
        (``_n_cap`` 0, so the capped counts are 0 already), no feed on battery nor a UPS out (so no feed loads, no
        UPS timers, and ``_loss_from_feeds`` False already)."""
        return (self._t == self.engine.env._now and self.site_cap_w is None and not self._n_cap
                and not self._loss_from_feeds and not self.it.n_capped("power") and "ups" not in self.mode
                and all(self.ups_ok))

    def _after_load(self, idx: NDArray[np.int64]) -> None:
        """After IT power changed: UPS losses, feed loads and empty times, capped counts, site cap."""
        if self.site_cap_w is not None and not self._in_site:
            self._apply_site_cap()
            return  # _apply_site_cap refreshed every node, which came back here
        it = self.it
        self._n_cap = it.n_capped("power") + (it.n_capped("power_site") if self.site_cap_w is not None else 0)
        on_ups = "ups" in self.mode
        self._loss_from_feeds = on_ups or not all(self.ups_ok)
        if self._loss_from_feeds:
            loads = it.node_power_w @ self.share
            self.feed_load_w = loads.tolist()
            self._ups_loss_w = self.loss_k * sum(x for x, ok in zip(self.feed_load_w, self.ups_ok) if ok)
        if self._n_cap:
            all_nodes = np.arange(self.n)
            on = self.cluster.down_count == 0
            demand = it.gpu_demand_w(all_nodes)
            binds = on & (self.cap_w < demand)
            fin = np.isfinite(self.cap_w)
            if self.site_cap_w is not None:
                site_binds = on & (self.site_cap_w < np.minimum(demand, self.cap_w))
                self.site_capped_gpus = float(self.g * site_binds.sum())
                binds |= site_binds
                fin |= np.isfinite(self.site_cap_w)
            self.capped_gpus = float(self.g * binds.sum())
            self.capped_nodes = float((on & fin).sum())
        else:
            self.capped_gpus = self.site_capped_gpus = self.capped_nodes = 0.0
        if on_ups:
            self._arm_empties()

    def _apply_site_cap(self) -> None:
        assert self.site_cap_w is not None and self.spec.site_cap_w is not None
        self._in_site = True
        try:
            all_nodes = np.arange(self.n)
            on = self.cluster.down_count == 0
            it = self.it
            if self.figs is not None:  # node pools of other power figures: each GPU floored at its pool's min_w
                assert not it.unit_caps  # (per-GPU caps come from cooling, refused with such pools)
                fixed = float(it.non_gpu_w_of(all_nodes)[on].sum())
                x = np.minimum(it.gpu_demand_w(all_nodes), it.min_cap(all_nodes, exclude="power_site"))
                caps, self._site_short = self.figs.site_cap(x, on, self.g, fixed, self.spec.site_cap_w)
                self.it.set_cap("power_site", None, caps)
                self._publish_speed()
                return
            fixed = (self.non_gpu_w * on.sum() if it.non_gpu_idle_w == self.non_gpu_w
                     else float(it.non_gpu_w_of(all_nodes)[on].sum()))  # non-GPU load following utilisation
            if not it.unit_caps:
                x = np.minimum(it.gpu_demand_w(all_nodes), it.min_cap(all_nodes, exclude="power_site"))[on]
                c = site_gpu_cap_w(x, self.g, fixed, self.spec.site_cap_w)
            else:
                # per-GPU caps (heterogeneous thermal units): water-fill over GPUs. Their source's node cap is
                # the mean of its GPUs' powers, some of which are this site cap: filling against it would move
                # the cap that moves it, without end (issue 23); the per-GPU caps do not depend on it.
                xn = it.gpu_demand_w(all_nodes)
                for name, arr in it.caps.items():
                    if name != "power_site" and name not in it.unit_caps:
                        np.minimum(xn, arr, out=xn)
                xg = np.repeat(xn[:, None], self.g, axis=1)
                for arr in it.unit_caps.values():
                    np.minimum(xg, arr, out=xg)
                c = site_gpu_cap_w(xg[on], 1.0, fixed, self.spec.site_cap_w)
            self._site_short = bool(c < self.min_w)
            c = max(c, self.min_w)
            self.it.set_cap("power_site", None, c)
            self._publish_speed()
        finally:
            self._in_site = False

    def _arm_empties(self) -> None:
        for f in range(self.n_feeds):
            if self.mode[f] != "ups":
                continue
            rate = self._drain_per_h(f)
            if rate <= 0.0:
                self.empty_timer[f].cancel()
                continue
            self.empty_timer[f].set(self.engine.now + self.soc[f] / rate)

    def _ups_empty(self, f: int) -> None:
        if self.mode[f] != "ups":
            return
        self._settle()
        self.soc[f] = 0.0
        self.engine.recorder.event(self.engine.now, "ups_empty", f"power.feed{self.feeds[f]}.ups")
        self._update()

    # ---- results ------------------------------------------------------------------------------
    def results(self, so_far: ResultsSoFar) -> tuple[dict[str, float], dict[str, pd.DataFrame]]:
        return power_results(self, CAUSES)
