"""The cooling plant fed by the power chain (issue 24): chillers and the chilled-water loop, the power
path of every cooling unit, scheduled maintenance of chillers, CRAH units and CDUs, shared
infrastructure. A component of its own (``plant``, the scenario's ``cooling.plant``); it talks to the
power chain and to the cooling rooms only through the bus:

* it listens to ``Topic.FEED`` (a power feed's mode). A unit on the feed's UPS runs while the feed is
  live; one off UPS stops when the utility is lost (mode ``ups`` or ``dead``) and runs again
  ``restart_s`` after the feed's input is back (the generator carries it, or the utility). Each unit's
  reaction is a zero-delay event after the power chain's, never a call back into it.
* it publishes ``Topic.COOLING_UNIT`` for CRAH units and CDUs it takes out of service (power lost or
  restarting, maintenance, their row's branch failed) and gives back; the rooms count that with the
  unit's own failures (``cooling.powered``).
* it publishes ``Topic.PLANT_SUPPLY``: the loop's offset above its set point, held on a grid of
  ``loop.step_c`` and switched at the exact crossing times, which the rooms add to their air and
  coolant supply.
* it publishes ``Topic.COOLING_LOAD``: the rated input of the units running on each feed's UPS output,
  which the UPS carries on battery.
* a maintenance visit with ``when_short: drain`` that finds no working spare in the unit's group (the
  others healthy and in service fewer than ``required``) drains the nodes the unit cools through the
  cluster (down cause ``planned:<kind>_maintenance``, a planned interruption for the workload) before
  taking the unit out, and gives them back ``cooling.node.reboot_h`` after the unit returns: the power
  chain's drain for an isolated feed, on the cooling side. Decided at the visit's start for the visit.

The loop (``twin.physics.chilled_water``): its offset x relaxes first-order (τ = ``loop.tau_min``)
toward max(0, Q − Q_cap)·R with Q_cap the running chillers' capacity and Q the site's IT power (kW),
read at the plant's events, at each step of the held offset and, while the running capacity is below
the site's full IT load or the loop is above its set point, at every node going down or up (a
retarget with an unchanged Q leaves the trajectory as it was: the first-order response has no
memory). Not followed between those: a job's load change during a shortfall. Between the plant's
events the offset is a closed form; its maximum is at an event.
"""

from __future__ import annotations

import functools
import math
import pandas as pd

from twin.model.cluster import node_blocks
from twin.model.causes import DownCause
from twin.model.component import BuildContext, Component, ResultsSoFar
from twin.model.it_power import IT_POWER
from twin.model.engine import Timer, Topic
from twin.model.facility_units import Load, MaintenanceAccount, MaintenanceRota, spare_without
from twin.model.parts import FacilityParts
from twin.physics import chilled_water as cw
from twin.scenario.plant import UnitPower
from twin.scenario.schema import Scenario

KINDS = ("chiller", "crah", "cdu")
_LIVE_INPUT = ("utility", "generator")


class _Units:
    """The units of one kind: feed, power path, and what keeps each out of service (plain lists: tens of
    units at most)."""

    def __init__(self, kind: str, n: int, power: UnitPower, feeds: list[str], unit_w: float, spare: bool) -> None:
        self.kind = kind
        self.n = n
        self.on_ups = power.on_ups
        self.restart_h = power.restart_s / 3600.0
        names = feeds if power.feeds == "round_robin" else list(power.feeds)
        self.feed: list[str | None] = [names[i % len(names)] if names else None for i in range(n)]
        # dual-fed: the other feed of the unit's transfer switch (the next one in the power section)
        self.alt: list[str | None] = [feeds[(feeds.index(f) + 1) % len(feeds)] if power.dual_fed and f else None
                                      for f in self.feed]
        self.on_alt = [False] * n  # on the other feed now
        self.ats_draws = [0] * n  # transfers attempted per unit (its stream's counter)
        self.stuck = [False] * n  # its switch failed to transfer: it waits for the feed it is on
        self.transfers = 0
        self.transfer_failures = 0
        self.unit_w = unit_w  # rated input while running, W (the UPS carries it when on_ups)
        self.spare = spare  # the unit's group has more units than it needs
        self.group_size = 1  # units per group (every chiller; a zone's CRAH units; a loop's CDUs)
        self.required = 1  # units a group needs
        self.nodes: list[tuple[int, int]] = []  # per group: the nodes it cools, [start, end)
        self.power_off = [False] * n  # unpowered, or restarting after power came back
        self.maint = [False] * n
        self.shared = [0] * n  # failed shared parts that feed the unit
        self.off = [False] * n  # last published state
        self.off_since = [math.nan] * n  # start of the current power-off (accounting)
        self.power_off_h = 0.0
        self.stops = 0


class Plant(Component):
    """Component for ``cooling.plant`` (see the module docstring)."""

    name = "plant"
    requires = (IT_POWER,)

    @classmethod
    def wanted(cls, sc: Scenario) -> bool:
        return sc.cooling is not None and sc.cooling.plant is not None

    @classmethod
    def build(cls, ctx: BuildContext) -> Plant:
        return cls(ctx)

    def __init__(self, ctx: BuildContext) -> None:
        self.engine = eng = ctx.engine
        sc = ctx.sc
        c = sc.cooling
        assert c is not None and c.plant is not None
        self.spec = p = c.plant
        self.H = sc.horizon_h
        self.it = ctx.service(IT_POWER)
        feeds = sc.power.feeds if sc.power is not None else []
        self.feed_mode = {x: "utility" for x in feeds}
        ch = p.chillers
        assert ch.capacity_kw is not None and p.loop.volume_m3 is not None
        self.cap_kw = ch.capacity_kw
        full_w = sc.cluster.full_power_w()
        self.units: dict[str, _Units] = {
            "chiller": _Units("chiller", ch.count, ch.power, feeds, 1000.0 * ch.capacity_kw / c.energy.chiller_cop,
                              ch.count > ch.required)}
        self.zones = c.air.zones if c.air is not None else 0
        if c.air is not None:
            k = c.air.crah.count
            self.units["crah"] = _Units("crah", self.zones * k, p.crah_power, feeds,
                                        1000.0 * c.air.crah.capacity_kw * c.air.fan_kw_per_kw, k > c.air.crah.required)
        self.loops = c.liquid.loops if c.liquid is not None else 0
        if c.liquid is not None:
            d = c.liquid.cdu
            self.units["cdu"] = _Units("cdu", self.loops * d.count, p.cdu_power, feeds,
                                       full_w / self.loops / d.required * c.liquid.pump_kw_per_kw, d.count > d.required)
        # ---- groups: the units that stand in for each other and the nodes they cool (drain on maintenance)
        cl = sc.cluster
        chu = self.units["chiller"]
        chu.group_size, chu.required, chu.nodes = ch.count, ch.required, [(0, cl.n_nodes)]
        if c.air is not None:
            cu = self.units["crah"]
            cu.group_size, cu.required = c.air.crah.count, c.air.crah.required
            cu.nodes = node_blocks(cl.racks, self.zones, cl.nodes_per_rack)
        if c.liquid is not None:
            du = self.units["cdu"]
            du.group_size, du.required = c.liquid.cdu.count, c.liquid.cdu.required
            du.nodes = node_blocks(cl.racks, self.loops, cl.nodes_per_rack)
            self.pumps_required = c.liquid.cdu.pumps.required
            self.pumps_per_cdu = c.liquid.cdu.pumps.count
        self.cluster = ctx.cluster
        self.facility = ctx.facility  # the rooms' CRAH, CDU and pump populations (read: is a spare working?)
        self.reboot_h = c.node.reboot_h
        self.restart_timers = {kind: [eng.timer() for _ in range(u.n)] for kind, u in self.units.items()}
        self.ats_prob = sc.power.ats.failure_to_transfer_prob if sc.power is not None and sc.power.ats else 0.0
        self._feed_timer = eng.timer(self._apply_feeds)  # the units' reaction to feed changes, just after them
        # ---- parts: chillers (one common-cause group), shared infrastructure; repaired by the crews
        fac = c.facility_parts()
        self._facility: dict[str, FacilityParts] = {}
        self.chiller_ok = [True] * ch.count
        self.chillers = FacilityParts(eng, "chiller", [f"cooling.plant.chiller{i}" for i in range(ch.count)],
                                      fac["chiller"])
        eng.bus.subscribe(self.chillers.changed, self._on_chiller)
        self._facility["chiller"] = self.chillers
        self.chillers.test_duration_h = ch.test_duration_h  # periodic tests take a working unit out (issue 43)
        sh = p.shared
        for name in ("facility_water", "controls"):  # a failure of either stops every chiller
            if getattr(sh, name) is not None:
                fp = self._facility[name] = FacilityParts(eng, name, [f"cooling.plant.{name}"], fac[name])
                eng.bus.subscribe(fp.changed, self._every_chiller)
        if sh.row_branch is not None:
            paths = [f"cooling.plant.branch.zone{z}" for z in range(self.zones)]
            paths += [f"cooling.plant.branch.loop{lp}" for lp in range(self.loops)]
            fp = self._facility["row_branch"] = FacilityParts(eng, "row_branch", paths, fac["row_branch"],
                                                              groups=[[i] for i in range(len(paths))])
            eng.bus.subscribe(fp.changed, self._on_branch)
        # ---- the loop
        self.tau_s = p.loop.tau_min * 60.0
        self.r_c_per_kw = cw.loop_r_c_per_kw(p.loop.tau_min, p.loop.volume_m3)
        self.x0 = 0.0  # offset at the last retarget, °C
        self.ta = 0.0  # time of the last retarget, h
        self.tgt = 0.0  # offset the loop relaxes toward, °C
        self.held = 0.0  # offset the rooms see, °C
        self.heat_kw = 0.0
        self.run_kw = ch.count * ch.capacity_kw
        self.x_max = 0.0
        self.short_since = math.nan
        self.short_h = 0.0
        self.rows: list[tuple[float, float, float, float, float, float]] = []
        self._step_timer: Timer = eng.timer()
        self._heat_timer: Timer = eng.timer(self._retarget)  # re-read the heat after a node change
        self.full_kw = full_w / 1000.0
        # ---- scheduled maintenance, one unit of a kind at a time (twin.model.facility_units)
        self.maint = MaintenanceAccount()
        self.rotas: dict[str, MaintenanceRota] = {
            kind: MaintenanceRota(eng, kind, mt, self.units[kind].n, self.maint, self._unit_path, self._maint_out,
                                  self._maint_back, self._maint_after)
            for kind, mt in p.maintenance.items()}
        self._load_w: dict[str, float] = {x: 0.0 for x in feeds}
        eng.bus.subscribe(Topic.FEED, self._on_feed)
        eng.bus.subscribe(Topic.NODE_DOWN, self._on_node)
        eng.bus.subscribe(Topic.NODE_UP, self._on_node)

    # ---- component contract -------------------------------------------------------------------
    def facility_parts(self) -> dict[str, FacilityParts]:
        return dict(self._facility)

    def start(self) -> None:
        for rota in self.rotas.values():
            rota.start()
        self._publish_loads()

    def finish(self) -> None:
        now = self.engine.now
        self._retarget()  # records the offset reached
        if not math.isnan(self.short_since):
            self.short_h += now - self.short_since
            self.short_since = math.nan
        self.maint.close_all(now)
        for u in self.units.values():
            for i in range(u.n):
                if not math.isnan(u.off_since[i]):
                    u.power_off_h += now - u.off_since[i]
                    u.off_since[i] = math.nan

    # ---- power -----------------------------------------------------------------------------------
    def _on_feed(self, feed: str, mode: str) -> None:
        self.feed_mode[feed] = mode
        self._feed_timer.set(self.engine.now)  # after the power chain's update of this instant

    def _powered(self, u: _Units, i: int) -> bool:
        f = u.alt[i] if u.on_alt[i] else u.feed[i]
        if f is None:
            return True
        mode = self.feed_mode[f]
        return mode != "dead" if u.on_ups else mode in _LIVE_INPUT

    def _transfer(self, u: _Units, i: int) -> bool:
        """A dual-fed unit whose feed died moves to its other feed if that one is live: True when it did
        (a break: it restarts), False when the other is dead too or the switch failed to transfer (draw
        ``transfers`` of the unit's stream ``cooling.plant.<kind><i>.ats#transfer``)."""
        other = u.feed[i] if u.on_alt[i] else u.alt[i]
        assert other is not None
        mode = self.feed_mode[other]
        if u.stuck[i] or not (mode != "dead" if u.on_ups else mode in _LIVE_INPUT):
            return False
        k = u.ats_draws[i]
        u.ats_draws[i] += 1
        if self.ats_prob > 0.0 and self.engine.streams.scalar(f"cooling.plant.{u.kind}{i}.ats#transfer", k) < self.ats_prob:
            u.stuck[i] = True
            u.transfer_failures += 1
            self.engine.recorder.event(self.engine.now, "transfer_failed", f"cooling.plant.{u.kind}{i}")
            return False
        u.transfers += 1
        u.on_alt[i] = not u.on_alt[i]
        return True

    def _apply_feeds(self) -> None:
        now = self.engine.now
        for kind, u in self.units.items():
            for i in range(u.n):
                powered = self._powered(u, i)
                if not powered and u.alt[i] is not None and self._transfer(u, i):
                    # the transfer is a break: the unit stops and restarts on its other feed
                    self.restart_timers[kind][i].cancel()
                    if not u.power_off[i]:
                        u.power_off[i] = True
                        u.stops += 1
                        u.off_since[i] = now
                        self._changed(u, i)
                    powered = True
                timer = self.restart_timers[kind][i]
                if powered:
                    u.stuck[i] = False
                if not powered:
                    timer.cancel()
                    if not u.power_off[i]:
                        u.power_off[i] = True
                        u.stops += 1
                        u.off_since[i] = now
                        self._changed(u, i)
                elif u.power_off[i] and not timer.pending:
                    if u.restart_h > 0.0:
                        timer.set(now + u.restart_h, functools.partial(self._restarted, u, i))
                    else:
                        self._restarted(u, i)

    def _restarted(self, u: _Units, i: int) -> None:
        u.power_off[i] = False
        u.power_off_h += self.engine.now - u.off_since[i]
        u.off_since[i] = math.nan
        self.engine.recorder.event(self.engine.now, "restarted", f"cooling.plant.{u.kind}{i}")
        self._changed(u, i)

    def _changed(self, u: _Units, i: int) -> None:
        off = u.power_off[i] or u.maint[i] or u.shared[i] > 0
        if off == u.off[i]:
            return
        u.off[i] = off
        if u.kind == "chiller":
            self._retarget()
        else:
            self.engine.bus.publish(Topic.COOLING_UNIT, u.kind, i, off)
        if u.on_ups and u.feed[i] is not None:
            self._publish_loads()

    def _publish_loads(self) -> None:
        """The rated input (W) of the units running on each feed's UPS output, published when it changed."""
        loads = dict.fromkeys(self._load_w, 0.0)
        for kind, u in self.units.items():
            if not u.on_ups:
                continue
            for i in range(u.n):
                f = u.alt[i] if u.on_alt[i] else u.feed[i]
                if f is not None and not u.off[i] and (kind != "chiller" or self.chiller_ok[i]):
                    loads[f] += u.unit_w
        for f, w in loads.items():
            if w != self._load_w[f]:
                self._load_w[f] = w
                self.engine.bus.publish(Topic.COOLING_LOAD, f, w)

    # ---- parts ---------------------------------------------------------------------------------------
    def _on_chiller(self, idx: int, healthy: bool) -> None:
        self.chiller_ok[idx] = healthy
        self._retarget()
        if self.units["chiller"].on_ups:
            self._publish_loads()

    def _shared(self, kind: str, idx: range, ok: bool) -> None:
        u = self.units[kind]
        for i in idx:
            u.shared[i] += -1 if ok else 1
            self._changed(u, i)

    def _every_chiller(self, idx: int, ok: bool) -> None:
        self._shared("chiller", range(self.units["chiller"].n), ok)

    def _on_branch(self, idx: int, ok: bool) -> None:
        if idx < self.zones:
            k = self.units["crah"].n // self.zones
            self._shared("crah", range(idx * k, (idx + 1) * k), ok)
        else:
            lp = idx - self.zones
            k = self.units["cdu"].n // self.loops
            self._shared("cdu", range(lp * k, (lp + 1) * k), ok)

    # ---- maintenance (one unit at a time: facility_units.MaintenanceRota) ---------------------------
    def _maint_out(self, kind: str, i: int) -> Load:
        """A visit takes unit ``i`` of ``kind`` out; with ``when_short: drain`` and no working spare in its
        group, the nodes it cools go first (the rooms never see it short)."""
        mt = self.spec.maintenance[kind]  # type: ignore[index]
        u = self.units[kind]
        eng = self.engine
        drained = mt.when_short == "drain" and not self._spare_now(u, i)
        if drained:  # the load goes first, then the unit: the rooms never see it short
            s, e = u.nodes[i // u.group_size]
            self.maint.drains += 1
            self.maint.drained_node_h += (e - s) * (min(eng.now + mt.duration_h + self.reboot_h, self.H) - eng.now)
            cause = DownCause.planned_drain(kind)
            for node in range(s, e):
                self.cluster.add_down(node, cause)
        u.maint[i] = True
        self._changed(u, i)
        # drained: the load under the unit is down; a spare: the group stays up without its margin; N: short
        return "drained" if drained else "exposed" if u.spare else "short"

    def _maint_back(self, kind: str, i: int) -> None:
        self.units[kind].maint[i] = False

    def _unit_path(self, kind: str, i: int) -> str:
        return f"cooling.plant.{kind}{i}"

    def _maint_after(self, kind: str, i: int, out: bool) -> None:
        """After a visit's end is recorded (``out`` False): the unit delivers again; drained nodes return
        reboot_h later. (Its start needs nothing more: ``_maint_out`` did it all.)"""
        if out:
            return
        u = self.units[kind]
        self._changed(u, i)
        if self.rotas[kind].load[i] == "drained":
            s, e = u.nodes[i // u.group_size]
            cause = DownCause.planned_drain(kind)
            if self.reboot_h > 0.0:
                self.engine.calls(self._undrain).at(self.engine.now + self.reboot_h, s, e, cause)
            else:
                self._undrain(s, e, cause)

    def _undrain(self, s: int, e: int, cause: DownCause) -> None:
        for node in range(s, e):
            self.cluster.remove_down(node, cause)

    def _spare_now(self, u: _Units, i: int) -> bool:
        """The group of unit ``i`` keeps ``required`` units delivering without it now: the others that are
        healthy (their part population; a CDU with enough healthy pumps) and in service."""
        g = i // u.group_size
        if u.kind == "chiller":
            ok = self.chiller_ok
        else:
            healthy = self.facility[u.kind].healthy
            ok = [bool(x) for x in healthy]
            if u.kind == "cdu":
                pumps = self.facility["cdu_pump"].healthy
                k = self.pumps_per_cdu
                ok = [ok[j] and int(pumps[j * k:(j + 1) * k].sum()) >= self.pumps_required for j in range(u.n)]
        serving = [ok[j] and not u.off[j] for j in range(u.n)]
        return spare_without(serving, range(g * u.group_size, (g + 1) * u.group_size), i, u.required)

    # ---- the loop -------------------------------------------------------------------------------------
    def offset_now_c(self) -> float:
        """The loop's exact offset above its set point now, °C."""
        return cw.loop_offset_c((self.engine.now - self.ta) * 3600.0, self.x0, self.tgt, self.tau_s)

    def _retarget(self) -> None:
        """Capacity or heat changed: restart the loop's trajectory from where it is now."""
        now = self.engine.now
        u = self.units["chiller"]
        run = sum(1 for i in range(u.n) if self.chiller_ok[i] and not u.off[i])
        self.run_kw = run * self.cap_kw
        self.heat_kw = self.it.total_w() / 1000.0
        short = self.run_kw < self.heat_kw
        if short and math.isnan(self.short_since):
            self.short_since = now
        elif not short and not math.isnan(self.short_since):
            self.short_h += now - self.short_since
            self.short_since = math.nan
        x = self.offset_now_c()
        self.x_max = max(self.x_max, x)
        tgt = cw.loop_target_c(self.heat_kw, self.run_kw, self.r_c_per_kw)
        self.x0, self.ta, self.tgt = x, now, tgt
        self.rows.append((now, x, tgt, self.heat_kw, self.run_kw, float(run)))
        self._plan_step()

    def _plan_step(self) -> None:
        """Schedule the next switch of the held offset (nearest level on a grid of step_c), as the air
        zones hold their inlet (``cooling.air``)."""
        h, tgt = self.held, self.tgt
        if h == tgt:
            self._step_timer.cancel()
            return
        d = self.spec.loop.step_c
        sgn = 1.0 if tgt > h else -1.0
        if abs(tgt - h) <= d:
            x, new_h = 0.5 * (h + tgt), tgt
        else:
            x, new_h = h + sgn * 0.5 * d, h + sgn * d
        now = self.engine.now
        if (self.offset_now_c() - x) * sgn >= 0.0:
            t = now
        else:
            t = self.ta + cw.loop_crossing_s(self.x0, tgt, x, self.tau_s) / 3600.0
            if not math.isfinite(t):
                t = now
        self._step_timer.set(t, lambda: self._step(new_h))

    def _step(self, new_h: float) -> None:
        self.held = new_h
        self.engine.bus.publish(Topic.PLANT_SUPPLY, new_h)
        self._retarget()  # the heat may have moved (nodes tripped or came back): plans the next step

    def _on_node(self, node: int, cause: DownCause) -> None:
        """A node went down or up: while the plant could fall short (or the loop is warm) the heat matters;
        re-read it just after this instant's changes."""
        if self.run_kw < self.full_kw or self.tgt > 0.0 or self.x0 > 0.0:
            self._heat_timer.set(self.engine.now)

    # ---- results -------------------------------------------------------------------------------------
    def results(self, so_far: ResultsSoFar) -> tuple[dict[str, float], dict[str, pd.DataFrame]]:
        m: dict[str, float] = {}
        m["plant.loop_offset_max_c"] = self.x_max
        m["plant.capacity_short_hours"] = self.short_h
        for kind, u in self.units.items():
            m[f"plant.power_stops.{kind}"] = float(u.stops)
            m[f"plant.power_off_unit_hours.{kind}"] = u.power_off_h
            if any(a is not None for a in u.alt):
                m[f"plant.transfers.{kind}"] = float(u.transfers)
                m[f"plant.transfer_failures.{kind}"] = float(u.transfer_failures)
        if self.spec.maintenance:
            mt = self.maint
            m["plant.maintenance_windows"] = float(mt.windows)
            m["plant.maintenance_hours"] = mt.hours
            m["plant.maintenance_exposure_hours"] = mt.exposure_h
            m["plant.maintenance_short_hours"] = mt.short_h
            if any(w.when_short == "drain" for w in self.spec.maintenance.values()):
                m["plant.maintenance_drains"] = float(mt.drains)
                m["plant.maintenance_drained_hours"] = mt.drained_h
                m["plant.maintenance_drained_node_hours"] = mt.drained_node_h
        tl = pd.DataFrame(self.rows, columns=["time_h", "offset_c", "target_c", "heat_kw", "capacity_kw",
                                              "chillers_running"]).astype("float64").astype({"chillers_running": "int64"})
        tl["tau_min"] = self.spec.loop.tau_min  # x(t) = target + (offset − target)·e^(−(t − time)/τ) to the next row
        return m, {"plant_timeline": tl}


__all__ = ["Plant", "KINDS"]
