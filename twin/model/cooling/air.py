"""Air rooms and CRAH units (model.md §4), and node fans.

CRAH units hold a zone's supply at ``supply_c`` while healthy capacity (derated above the design
ambient) covers the heat; otherwise the supply relaxes first-order toward
supply_c + (Q − Q_cap)·R_room with ``room_tau_min``. The supply seen by the GPUs is **quantised**: the
held inlet is the nearest level of an ``inlet_step_c`` (≤ 0.5 °C) grid anchored at the last held value,
switched at the exact time the actual supply crosses the midpoint (each switch an event), so the held
inlet is never more than inlet_step_c/2 from the actual supply. The platform inlet trip uses the exact
(unquantised) crossing of ``max_inlet_c``. The room's heat Q counts each running node's *demanded*
power (thermal caps are not fed back into the room, which would couple the quantisation to itself;
conservative). A zone that could carry all its nodes at full load (*slack*) keeps no heat at all.
"""

from __future__ import annotations

import bisect
import math
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from numpy.typing import NDArray

from twin import rng
from twin.model.cooling import fast
from twin.model.cooling.common import ASHRAE_RECOMMENDED_MAX_C, _blocks
from twin.model.cooling.arrays import CoolingArrays, CoolingParams
from twin.model.engine import Topic
from twin.model.parts import FacilityParts, contiguous_groups
from twin.physics import plant

if TYPE_CHECKING:  # pragma: no cover
    from twin.model.cooling.ports import AgeingPort, EvaporativePort, GpuPort, LinkPort, ReplayPort, ResponsePort, TripsPort
    from collections.abc import Mapping
    from twin.model.cluster import Cluster
    from twin.model.engine import Engine
    from twin.model.parts import PartPopulation



class AirRooms:
    """Room of the cooling component: air zones, their CRAH units and the node fans."""

    ageing: AgeingPort  # wired by Thermal
    evaporative: EvaporativePort  # wired by Thermal
    gpu: GpuPort  # wired by Thermal
    replay: ReplayPort  # wired by Thermal
    response: ResponsePort  # wired by Thermal
    trips: TripsPort  # wired by Thermal

    def __init__(self, params: CoolingParams, arrays: CoolingArrays, engine: Engine, cluster: Cluster,
                 parts: Mapping[str, PartPopulation], link: LinkPort, fac_specs: dict[str, Any],
                 facility: dict[str, FacilityParts]) -> None:
        """Zones as near-equal blocks of racks, their CRAH units (facility parts) and room state."""
        self.params = params
        self.arrays = arrays
        self.engine = engine
        self.cluster = cluster
        self.parts = parts
        self.link = link
        self._facility = facility
        self.air_share: float | None = None  # share of node heat on air under heat capture, else None
        self.z_hot_node_h = 0.0
        self.z_over_h = 0.0
        self._init_fans()
        if params.air is None:
            return
        f = self.params.spec.liquid_share()
        self.air_share = None if f is None or self.params.type == "air" else 1.0 - f  # (1 − f) under heat capture
        a = self.params.air
        assert a is not None
        eng, cl = self.engine, self.cluster
        n = self.params.n_nodes
        self.arrays.zones = _blocks(cl.racks, a.zones, cl.nodes_per_rack)
        self.arrays.zone_of = np.empty(n, dtype=np.int64)
        for z, (s, e) in enumerate(self.arrays.zones):
            self.arrays.zone_of[s:e] = z
        n_zones = a.zones
        self.crah_healthy = np.full(n_zones, a.crah.count, dtype=np.int64)
        # capacity factor of the CRAH units in each hour (derating above the design ambient)
        self._derate_h: list[float] = plant.crah_capacity_factor(self.params.ambient_h, a.design_ambient_c,
                                                                 a.derate_per_c).tolist()
        # healthy capacity before derating, W
        self._crah_w = cast(NDArray[np.float64], self.crah_healthy * a.crah.capacity_kw * 1000.0)
        self.arrays.z_cap = self._crah_w * self._derate_at(0.0)
        self.z_S0 = np.full(n_zones, a.supply_c)
        self.z_ta = np.zeros(n_zones)
        self.z_tgt = np.full(n_zones, a.supply_c)
        self.arrays.z_held = np.full(n_zones, a.supply_c)
        # per zone: the next switch of the held inlet, and the crossing of the platform inlet limit
        # (a retarget cancels both)
        self.z_step_timer = [self.engine.timer() for _ in range(n_zones)]
        self.z_trip_timer = [self.engine.timer() for _ in range(n_zones)]
        self.z_q = np.zeros(n_zones)
        self.arrays.z_reserved = np.zeros(n_zones)
        self.z_last = np.zeros(n_zones)
        self.z_hot_node_h = 0.0
        self.z_over_h = 0.0
        self.z_over_since = np.full(n_zones, np.nan)
        self.r_room = float(a.r_room_c_per_kw)  # type: ignore[arg-type]
        paths = [f"cooling.zone{z}.crah{k}" for z in range(n_zones) for k in range(a.crah.count)]
        self.crah = FacilityParts(eng, "crah", paths, fac_specs["crah"],
                                  groups=contiguous_groups(len(paths), a.crah.count))  # common cause: a zone's units
        eng.bus.subscribe(self.crah.changed, self.link.gated("crah", self._on_crah))
        self._facility["crah"] = self.crah
        self.crah.test_duration_h = a.crah.test_duration_h  # periodic tests take a working unit out (issue 43)
        self.arrays.node_air_w = np.zeros(n)

    def _init_fans(self) -> None:
        """Healthy fans per node (air only; a node needs ``fans_req`` for its nominal R)."""
        self.fan_part = self.params.air.fan_part if self.params.air is not None else None
        self.arrays.fans_h = np.zeros(self.params.n_nodes, dtype=np.int64)
        self.fans_req = 1
        if self.fan_part is not None:
            fpop = self.parts[self.fan_part]
            self.arrays.fans_h[:] = fpop.spec.count
            self.fans_req = int(fpop.required)

    def node_offsets_c(self) -> NDArray[np.float64] | None:
        """Per node, the offset (°C) of its inlet air above the held supply of its zone (issue 23): the
        rack-height rise (linear from the bottom node, 0, to the top) and the node's hot-aisle
        recirculation (exponential, from its own stream). None when both are 0 or the hall is not an air
        hall (the offsets act on air-cooled halls only)."""
        a = self.params.air
        assert a is not None
        if self.params.type != "air" or not (a.rack_rise_c > 0 or a.recirculation_c > 0):
            return None
        cl = self.cluster
        n, npr = self.params.n_nodes, cl.nodes_per_rack
        node_c = np.zeros(n)
        if a.rack_rise_c > 0 and npr > 1:
            node_c += a.rack_rise_c * (np.arange(n) % npr) / (npr - 1)
        if a.recirculation_c > 0:
            digs = rng.path_digests(f"{cl.node_path(i)}#recirculation" for i in range(n))
            unif = self.engine.streams.uniforms(digs, np.zeros(n, dtype=np.int64))
            node_c += -a.recirculation_c * np.log1p(-unif)  # exponential of mean recirculation_c
        return node_c

    def inlet_offsets_c(self) -> NDArray[np.float64] | None:
        """Per GPU (node-major), the offset (°C) of its inlet above the held supply of its zone (issue 23):
        its node's offset (``noff``: rack-height rise and recirculation) and the chassis preheat of the
        downstream half of its GPU slots. None when all three are 0 (every GPU sees the held supply)."""
        a = self.params.air
        assert a is not None
        if not (a.slot_preheat_c > 0 or a.rack_rise_c > 0 or a.recirculation_c > 0):
            return None
        n, g = self.params.n_nodes, self.params.gpus_per_node
        node_c = self.arrays.noff if self.arrays.noff is not None else np.zeros(n)
        slot_c = np.where(np.arange(g) >= g // 2, a.slot_preheat_c, 0.0) if g > 1 else np.zeros(1)
        return (node_c[:, None] + slot_c[None, :]).ravel()

    def start(self) -> None:
        """Start every zone's supply trajectory and the hourly capacity changes."""
        for z in range(len(self.arrays.zones)):
            self.retarget(z)
        # hourly capacity changes: only at hours where the derating factor changes
        a = self.params.air
        assert a is not None
        f = plant.crah_capacity_factor(self.params.ambient_h, a.design_ambient_c, a.derate_per_c)
        change = np.union1d(np.flatnonzero(f[1:] != f[:-1]) + 1, self.evaporative.base_change_hours())  # + evaporative base
        self.hours = [int(k) for k in change if k < self.params.horizon_h]
        self._f_hours = f[self.hours]  # the capacity factor from each of those hours on
        self._hour_timer = self.engine.timer(self._hour)
        self.schedule_hour(0)
        if self.trips.trip_inlet_n is not None:  # nodes whose inlet is at the limit from the start trip at once
            for z in range(len(self.arrays.zones)):
                if self.z_S0[z] >= self.trips.z_trip_levels[z][0]:
                    self._plan_inlet_trip(z, jumped=True)

    def finish(self, H: float) -> None:
        """Close the zones' hot-inlet and over-capacity accounts at the horizon ``H`` (h)."""
        for z in range(len(self.arrays.zones)):
            self._zone_account(z, H)
            if not np.isnan(self.z_over_since[z]):
                self.z_over_h += H - self.z_over_since[z]
                self.z_over_since[z] = np.nan

    def zone_heat(self, nsl: Any, nodes: NDArray[np.int64], heat: Any) -> None:
        """Set the air heat (W) of ``nodes`` (``nsl``: the same as indices or a slice) and move the room
        of every zone among theirs that cannot carry all its nodes at full load."""
        self.arrays.node_air_w[nsl] = heat
        if not self.replay.n_short:  # every zone slack (the loop below would skip each): nothing moves a room
            return
        if isinstance(nsl, slice):  # zone_of does not decrease with the node index
            z0, z1 = int(self.arrays.zone_of[nsl.start]), int(self.arrays.zone_of[nsl.stop - 1])
        else:
            zl = self.arrays.zone_of[nodes]
            z0, z1 = int(zl.min()), int(zl.max())
        for z in range(z0, z1 + 1):
            if self.arrays.z_slack[z]:
                continue  # could carry all its nodes at full load: its heat cannot move the room
            s, e = self.arrays.zones[z]
            q = float(self.arrays.node_air_w[s:e].sum())
            if q != self.z_q[z]:
                self.z_q[z] = q
                self.retarget(z)

    def air_heat_w(self, gpu_w: Any, up: Any, nodes: Any = None) -> Any:
        """Heat (W) nodes give their air zone: non-GPU power, plus the GPUs' in an air-cooled hall, of the
        nodes in service (``gpu_w``: power per GPU, W; ``up``: in service). A non-GPU load that follows
        utilisation (``cluster.node.non_gpu_idle_w``) is taken at the utilisation of ``gpu_w`` (the GPUs'
        demand; under a power-chain cap, their capped draw, which gives a lower utilisation). ``nodes`` (indices
        or a slice) gives each node its pool's figures in a hall of node pools (``CoolingParams.figs``)."""
        p = self.params
        idle_w: Any = p.idle_w
        tdp_w: Any = p.tdp_w
        ng_w: Any = p.non_gpu_w
        ng_idle_w: Any = p.non_gpu_idle_w
        follows = ng_idle_w != ng_w
        if p.figs is not None and nodes is not None:
            idle_w, tdp_w, ng_w, ng_idle_w = (p.figs[k][nodes] for k in (0, 1, 4, 5))
            follows = True
        ng: Any = ng_w
        if follows:
            u = np.clip((gpu_w - idle_w) / (tdp_w - idle_w), 0.0, 1.0)
            ng = ng_idle_w + (ng_w - ng_idle_w) * u
        if self.air_share is not None:  # heat capture: the air carries (1 − f) of the node's heat
            return self.air_share * (ng + gpu_w * self.params.gpus_per_node) * up
        return (ng + (gpu_w * self.params.gpus_per_node if self.params.type == "air" else 0.0)) * up

    def figs_w(self, nodes: Any) -> tuple[Any, Any]:
        """The GPU idle draw and demand at full load (W) of ``nodes`` (indices or a slice): their pools' in a hall
        of node pools (``CoolingParams.figs``), else the hall's scalars."""
        p = self.params
        if p.figs is None:
            return p.idle_w, p.tdp_w
        return p.figs[0][nodes], p.figs[1][nodes]

    def _derate_at(self, t_h: float) -> float:
        """Capacity factor of the CRAH units at time ``t_h`` (derating above the design ambient), the
        value max(0, 1 − derate_per_c·max(0, ambient − design_ambient_c)) of the hour, precomputed."""
        return self._derate_h[min(int(math.floor(t_h + 1e-9)), self.params.n_hours - 1)]

    def _set_caps(self) -> None:
        """Healthy capacity of each zone now; a zone that lost its slack gets its heat recomputed (a zone is
        slack when it could carry all its nodes at full load; while it is, its nodes' heat is not kept)."""
        self.arrays.z_cap = self._crah_w * self._derate_at(self.engine.now)
        slack = self.arrays.z_full <= self.arrays.z_cap
        changed = slack != self.arrays.z_slack
        if not np.count_nonzero(changed):
            return
        self.arrays.z_slack = slack
        self.replay.n_short = int(np.count_nonzero(~slack))
        for z in np.flatnonzero(changed & ~slack).tolist():
            # the zone's heat matters again: recompute it from the nodes' state now
            s, e = self.arrays.zones[z]
            up = self.cluster.down_count[s:e] == 0
            pd = fast.demand_w(*self.figs_w(slice(s, e)), self.engine.node_util[s:e])
            self.arrays.node_air_w[s:e] = self.air_heat_w(pd, up, slice(s, e))
            self.z_q[z] = float(self.arrays.node_air_w[s:e].sum())

    def zone_cap_w(self, z: int) -> float:
        return float(self.arrays.z_cap[z])

    def supply_now(self, z: int) -> float:
        assert self.params.air is not None
        dt_min = (self.engine.now - self.z_ta[z]) * 60.0
        return float(fast.supply_c(self.z_S0[z], self.z_tgt[z], dt_min, self.params.air.room_tau_min))

    def retarget(self, z: int) -> None:
        """The zone's heat or capacity changed: restart its supply trajectory from where it is now."""
        assert self.params.air is not None
        now = self.engine.now
        cap = self.zone_cap_w(z)
        q = float(self.z_q[z])
        over = q > cap
        if over and np.isnan(self.z_over_since[z]):
            self.z_over_since[z] = now
        elif not over and not np.isnan(self.z_over_since[z]):
            self.z_over_h += now - self.z_over_since[z]
            self.z_over_since[z] = np.nan
        base_c = self.evaporative.base_supply_c(now) + self.link.plant_c  # plant_c: cooling.powered
        tgt = plant.room_target_c(base_c, q, cap, self.r_room)
        if tgt == self.z_tgt[z]:
            return
        if self.response.enabled:  # heading for an inlet trip: the operator responds (cooling.response)
            self.response.shortfall(z, tgt)
        self.z_S0[z] = self.supply_now(z)
        self.z_ta[z] = now
        self.z_tgt[z] = tgt
        self.z_step_timer[z].cancel()
        self.z_trip_timer[z].cancel()
        self.arrays.timeline.append((now, "zone", z, float(self.z_S0[z]), tgt, q / 1000.0, cap / 1000.0))
        self._plan_step(z)
        self._plan_inlet_trip(z)  # exact crossing of the platform inlet limit

    def _plan_inlet_trip(self, z: int, jumped: bool = False) -> None:
        """Schedule zone ``z``'s next inlet trip on its supply trajectory: the exact crossing of the lowest
        trip supply of its nodes (``max_inlet_c`` less the node's inlet offset, ``noff``) above the
        trajectory's start and below its target. ``jumped``: the supply has just jumped to the start (a
        plant offset), so the nodes whose trip supply it is at or above trip now."""
        assert self.params.air is not None
        lv = self.trips.z_trip_levels[z]
        S0 = float(self.z_S0[z])
        if jumped and S0 >= lv[0]:
            self.z_trip_timer[z].set(self.engine.now, lambda: self._zone_inlet_trip(z, S0))
            return
        self._plan_inlet_crossing(z, S0)

    def _plan_inlet_crossing(self, z: int, level_c: float) -> None:
        """Schedule the crossing of zone ``z``'s lowest trip supply above ``level_c`` (°C), if its supply's
        target is above it (on the trajectory from ``z_S0`` at ``z_ta``)."""
        assert self.params.air is not None
        lv = self.trips.z_trip_levels[z]
        i = int(np.searchsorted(lv, level_c, side="right"))
        tgt = float(self.z_tgt[z])
        if i < len(lv) and tgt > lv[i]:
            x = float(lv[i])
            t_min = fast.crossing_time_min(float(self.z_S0[z]), tgt, x, self.params.air.room_tau_min)
            self.z_trip_timer[z].set(float(self.z_ta[z]) + t_min / 60.0, lambda: self._zone_inlet_trip(z, x))

    def _plan_step(self, z: int) -> None:
        """Schedule the next switch of the held inlet (nearest level on a grid of inlet_step_c)."""
        assert self.params.air is not None
        h = float(self.arrays.z_held[z])
        tgt = float(self.z_tgt[z])
        if h == tgt:
            return
        d = self.params.air.inlet_step_c
        sgn = 1.0 if tgt > h else -1.0
        if abs(tgt - h) <= d:
            x, new_h = 0.5 * (h + tgt), tgt
        else:
            x, new_h = h + sgn * 0.5 * d, h + sgn * d
        S0 = float(self.z_S0[z])
        S = self.supply_now(z)
        if (S - x) * sgn >= 0.0:
            t_abs = self.engine.now
        else:
            t_min = fast.crossing_time_min(S0, tgt, x, self.params.air.room_tau_min)
            t_abs = float(self.z_ta[z]) + t_min / 60.0
            if not math.isfinite(t_abs):  # x not strictly between S0 and the target: already passed
                t_abs = self.engine.now
        self.z_step_timer[z].set(t_abs, lambda: self._zone_step(z, new_h))

    def _zone_step(self, z: int, new_h: float) -> None:
        s, e = self.arrays.zones[z]
        self.replay.flush_for(slice(s, e))
        self._zone_account(z, self.engine.now)
        self.arrays.z_held[z] = new_h
        nodes = np.arange(s, e, dtype=np.int64)
        if self.ageing.aged_air:
            self.ageing.air_update(nodes)
        if not self.params.gpu_on_liquid:
            self.arrays.inlet[s:e] = new_h
            self.gpu.update(nodes)
            self.replay.set_cool(slice(s, e))
        self._plan_step(z)
        self.trips.try_restarts()
        self.engine.bus.publish(Topic.ZONE_INLET, s, e, new_h)  # server fans (twin.model.fans)

    def _zone_account(self, z: int, now: float) -> None:
        """Node-hours with the (held) inlet above the ASHRAE recommended maximum: a node's inlet is the held
        supply plus its offsets (rack-height rise, recirculation) in an air hall with them."""
        s, e = self.arrays.zones[z]
        if self.arrays.noff is None:
            if self.arrays.z_held[z] > ASHRAE_RECOMMENDED_MAX_C:
                self.z_hot_node_h += (now - self.z_last[z]) * (e - s)
        else:
            hot = int(np.count_nonzero(self.arrays.z_held[z] + self.arrays.noff[s:e] > ASHRAE_RECOMMENDED_MAX_C))
            self.z_hot_node_h += (now - self.z_last[z]) * hot
        self.z_last[z] = now

    def _zone_inlet_trip(self, z: int, level_c: float) -> None:
        """Zone ``z``'s supply reached ``level_c`` (°C): trip its nodes in service whose inlet (supply plus
        offset) is then at the limit, and schedule the crossing of the next trip supply above it."""
        s, e = self.arrays.zones[z]
        th = self.trips.trip_inlet_n
        for node in range(s, e):
            if (th is None or th[node] <= level_c) and self.cluster.is_up(node):
                self.trips.trip(node, "inlet")
        if th is not None:  # (a trip may have retargeted the zone: the next crossing is on its trajectory now)
            self._plan_inlet_crossing(z, level_c)

    def _on_crah(self, idx: int, healthy: bool) -> None:
        assert self.params.air is not None
        z = idx // self.params.air.crah.count
        self.crah_healthy[z] += 1 if healthy else -1
        self._crah_w = cast(NDArray[np.float64], self.crah_healthy * self.params.air.crah.capacity_kw * 1000.0)
        self._set_caps()
        if self.params.on:
            if self.response.enabled:
                self.response.replan()
            self.retarget(z)
            self.trips.try_restarts()
            self.schedule_hour(bisect.bisect_left(self.hours, self.engine.now))  # (quiet may have ended)

    def _quiet(self) -> bool:
        """Every air zone could carry all its nodes at full load and holds its supply temperature: then an
        hourly capacity change matters only if it takes some zone's slack (restarts in a slack zone do not
        depend on its capacity, and no room is in a transient to retarget)."""
        a, p = self.arrays, self.params
        assert p.air is not None
        if self.evaporative.base_h is not None:  # evaporative units: the base supply itself changes at those hours
            return False
        return bool(a.z_slack.all()) and bool((self.z_tgt == p.air.supply_c + self.link.plant_c).all())

    def schedule_hour(self, i: int) -> None:
        """Schedule the hourly capacity change ``self.hours[i]``; while the hall is quiet, the first one
        from there that takes some zone's slack instead (the ones before it would change nothing)."""
        hours = self.hours
        if i < len(hours) and self._quiet():
            f = self._f_hours[i:]
            short = (self.arrays.z_full[:, None] > self._crah_w[:, None] * f[None, :]).any(axis=0)  # = not slack
            i = i + int(short.argmax()) if short.any() else len(hours)
        self._hour_i = i
        if i < len(hours):
            self._hour_timer.set(float(hours[i]))  # replaces a pending one (a CRAH unit failed or came back)
        else:
            self._hour_timer.cancel()

    def _hour(self) -> None:
        """Ambient change at an hour where the capacity derating of the air zones changes."""
        self._set_caps()
        self.evaporative.humidity_hour()  # evaporative units: humidity entered or left the envelope (issue 42)
        if self.response.enabled:
            self.response.replan()
        base = self.evaporative.base_supply_c(self.engine.now)  # supply_c, or the evaporative units' base of this hour
        for z in range(len(self.arrays.zones)):
            if not self.arrays.z_slack[z] or self.z_tgt[z] != base + self.link.plant_c:
                self.retarget(z)
        self.trips.try_restarts()
        self.schedule_hour(self._hour_i + 1)

    def shift_zone(self, z: int, delta: float) -> None:
        """Move zone ``z``'s supply trajectory (start, target, held inlet) by ``delta`` °C now."""
        a, p = self.arrays, self.params
        assert p.air is not None
        s, e = a.zones[z]
        now = self.engine.now
        self.replay.flush_for(slice(s, e))
        self._zone_account(z, now)
        s0 = self.supply_now(z) + delta
        self.z_S0[z] = s0
        self.z_ta[z] = now
        self.z_tgt[z] += delta
        a.z_held[z] += delta
        self.z_step_timer[z].cancel()
        self.z_trip_timer[z].cancel()
        tgt = float(self.z_tgt[z])
        a.timeline.append((now, "zone", z, s0, tgt, float(self.z_q[z]) / 1000.0, float(a.z_cap[z]) / 1000.0))
        nodes = np.arange(s, e, dtype=np.int64)
        if self.ageing.aged_air:
            self.ageing.air_update(nodes)
        if not p.gpu_on_liquid:
            a.inlet[s:e] = a.z_held[z]
            self.gpu.update(nodes)
            self.replay.set_cool(slice(s, e))
        self._plan_step(z)
        self._plan_inlet_trip(z, jumped=True)

    # =================================================================================== fans
    def on_group(self, node: int, part: str, healthy: int) -> None:
        if part != self.fan_part:
            return
        self.replay.flush_for(slice(node, node + 1))
        self.arrays.fans_h[node] = healthy
        if not self.params.gpu_on_liquid:
            self.arrays.rfactor[node] = plant.fan_r_factor(healthy, self.fans_req)
        if healthy == 0 and self.cluster.is_up(node) and node not in self.trips.tripped:
            self.trips.trip(node, "no_fan")
            return
        self.gpu.update(np.array([node], dtype=np.int64))
        self.replay.set_cool(slice(node, node + 1))
        self.trips.try_restarts()
