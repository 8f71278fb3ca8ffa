"""The operator's response to a cooling shortfall (model.md §4, issue 42 item 6; ``cooling.response``).

An air zone *falls short* when its room heads for a supply temperature at which nodes trip on their
inlet limit: its target supply reaches the lowest trip supply of its nodes (``max_inlet_c`` less the
node's inlet offset). ``response_h`` later the operator plans the zone's heat to a **budget**

    Q_budget = Q_cap + max(0, T_trip,min − margin − S_base) / R_room

(the CRAH capacity left, plus the uncovered heat at which the room settles ``inlet_margin_c`` below the
lowest trip supply; S_base: the zone's supply set point and plant offset; R_room in °C/W here) and
either caps every node's GPUs at the highest power c whose full-load air heat fits, n·h(c) ≤ Q_budget,
and, in an air-cooled hall, at which the zone's hottest GPU (largest inlet offset and R) stays at or
below ``slowdown_c`` in the room that heat makes (a GPU that throttles runs slower than the cap; at least
the GPUs' minimum power; policy ``cap``), or drains the fewest nodes so that the rest fit both at full
power (policy ``drain``). h is the node's air heat (``AirRooms.air_heat_w``), affine in the GPU power. The cap acts
through the shared IT power (source ``operator``) and a speed cap of the same name (published on
``NODE_SPEED``): the GPUs draw less, the room's heat falls, the jobs slow by ((c − P_idle)/(P_d −
P_idle))^α, and the thermal model follows the capped draw as it follows a power-chain cap. Tripped nodes
are admitted back against the budget at their capped full-load heat (``trips``), so they return capped.

While a response is in force, every change of the zone's capacity (a CRAH unit failed or back, the
hourly derating) or of its supply (the evaporative base, the chilled-water offset) re-plans it at once; it
ends when all the zone's nodes fit the budget uncapped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import math

import numpy as np

from twin.model.causes import COOLING_DRAIN
from twin.model.cooling.common import INF
from twin.model.cooling.arrays import CoolingArrays, CoolingParams
from twin.physics.thermal import speed_fraction

DRAIN = COOLING_DRAIN  # the operator's drain: a down cause
"""Node-down cause of a node the operator drained for a cooling shortfall."""
SOURCE = "operator"
"""The IT power cap and speed cap source of the operator's GPU caps."""

if TYPE_CHECKING:  # pragma: no cover
    from twin.model.cooling.ports import AirPort, EvaporativePort, GpuPort, LazyPort, LinkPort, ReplayPort, TripsPort
    import pandas as pd

    from twin.model.cluster import Cluster
    from twin.model.engine import Engine
    from twin.model.it_power import ITPower



class OperatorResponse:
    """Room of the cooling component: the operator's caps or drains in a short air zone."""

    air_rooms: AirPort  # wired by Thermal
    evaporative: EvaporativePort  # wired by Thermal
    gpu: GpuPort  # wired by Thermal
    lazy: LazyPort  # wired by Thermal
    link: LinkPort  # wired by Thermal
    replay: ReplayPort  # wired by Thermal
    trips: TripsPort  # wired by Thermal

    def __init__(self, params: CoolingParams, arrays: CoolingArrays, engine: Engine, cluster: Cluster, it: ITPower) -> None:
        """The policy, the per-node operator cap and, with a policy, per-zone timers and accounts."""
        self.params = params
        self.arrays = arrays
        self.engine = engine
        self.cluster = cluster
        self.it = it
        r = self.params.spec.response
        self.arrays.op_cap_w = np.full(self.params.n_nodes, INF)  # per node: the operator's GPU cap, W (inf: none)
        self.enabled = bool(self.params.on and self.params.air is not None and r.policy != "none")
        self.resp_rows: list[tuple[float, int, str, float, int, float, float]] = []
        self._resp_nh = np.zeros(2)  # node-hours capped, drained
        if not self.enabled:
            return
        n_zones = len(self.arrays.zones)
        self._resp_timer = [self.engine.timer() for _ in range(n_zones)]
        self._resp_pending = np.zeros(n_zones, dtype=bool)
        self._resp_active = np.zeros(n_zones, dtype=bool)
        self._resp_seen = np.zeros(n_zones, dtype=bool)  # the operator has responded in the zone
        self._drained: list[list[int]] = [[] for _ in range(n_zones)]
        self._resp_t = np.zeros(n_zones)  # last accounting time per zone, h
        self._zone_cap_w = np.full(n_zones, INF)  # per zone: the operator's GPU cap, W (inf: none; op_cap_w its nodes')
        self._op_speed: np.ndarray | None = None  # the speed source, made at the first cap (_op_speed_array)

    # ------------------------------------------------------------------ the budget and the plan
    def _heat_budget_w(self, z: int) -> float:
        """Air heat (W) zone ``z`` may carry with its room ``inlet_margin_c`` below its lowest trip supply."""
        assert self.params.air is not None
        t_allow = float(self.trips.z_trip_levels[z][0]) - self.params.spec.response.inlet_margin_c
        base = self.evaporative.base_supply_c(self.engine.now) + self.link.plant_c
        return self.air_rooms.zone_cap_w(z) + max(0.0, t_allow - base) * 1000.0 / self.air_rooms.r_room

    def admit_budget_w(self, z: int) -> float:
        """Heat (W) against which tripped nodes of zone ``z`` are admitted back: once the operator has
        responded in the zone, its budget (with a relative 1e-9 for the rounding of n·h(c)); before, or
        with no policy, the zone's capacity (the zone must carry all its nodes at full load)."""
        if self.enabled and self._resp_seen[z]:
            return self._heat_budget_w(z) * (1.0 + 1e-9)
        return self.air_rooms.zone_cap_w(z)

    def _node_heat_w(self, gpu_w: float) -> float:
        return float(self.air_rooms.air_heat_w(gpu_w, 1.0))

    def _cap_for(self, z: int, budget_w: float) -> float | None:
        """The operator's even GPU cap (W) for zone ``z``: the highest c with (1) the zone's full-load air heat
        within the budget, n·h(c) ≤ Q_budget, and (2) in an air-cooled hall, the zone's hottest GPU (its
        largest inlet offset and R) at most at ``slowdown_c`` in the room that heat makes, S(c) + off + c·R ≤
        T_slow with S(c) = S_base + max(0, n·h(c) − Q_cap)·R_room (a GPU that would throttle runs slower than
        the cap: the operator caps below it instead). At least the GPUs' minimum power; inf when the
        uncapped nodes fit (1) and (2); None when GPU power does not reach the air."""
        s, e = self.arrays.zones[z]
        n = e - s
        if self.params.figs is not None:
            return self._cap_for_pooled(z, budget_w)
        a, b = self._node_heat_w(self.params.idle_w), self._node_heat_w(self.params.tdp_w)
        if b <= a:
            return None if n * b > budget_w else INF
        k = (b - a) / (self.params.tdp_w - self.params.idle_w)  # h(c) = a0 + k·c (affine in the GPU power)
        a0 = a - k * self.params.idle_w
        c = (budget_w / n - a0) / k  # (1)
        if not self.params.gpu_on_liquid:  # (2): the GPUs sit in the room's air
            assert self.params.air is not None
            base = self.evaporative.base_supply_c(self.engine.now) + self.link.plant_c
            off = float(self.arrays.toff_max_n[s:e].max())
            r = float((self.arrays.rmax_n[s:e] * self.arrays.rfactor[s:e]).max())
            cap, rho = self.air_rooms.zone_cap_w(z), self.air_rooms.r_room / 1000.0  # °C per W of uncovered heat
            c2 = (self.params.slow_c - base - off) / r  # the room at its set point
            if n * (a0 + k * c2) > cap:  # the room warms: S(c) rises with c
                c2 = (self.params.slow_c - base - off - (n * a0 - cap) * rho) / (n * k * rho + r)
            c = min(c, c2)
        if c >= self.params.tdp_w:
            return INF
        return max(c, float(self.params.pmin_w))

    def _cap_for_pooled(self, z: int, budget_w: float) -> float | None:
        """:meth:`_cap_for` in a hall of node pools of other power figures (``CoolingParams.figs``): one cap c per
        GPU over the zone, each node's GPUs held at min(max(c, its pool's lowest cap), its demand), its air heat
        h_i affine in its GPU power by its own figures; the highest c with (1) Σ h_i ≤ Q_budget and (2) every
        node's hottest GPU (its largest inlet offset and R) at most at ``slowdown_c`` in the room that heat makes,
        found by bisection (both sides rise with c). Returns c (each node's cap is max(c, its lowest cap)), at
        least the lowest of the zone's floors; inf when the uncapped nodes fit; None when GPU power does not
        reach the air."""
        p, arr = self.params, self.arrays
        assert p.figs is not None
        s, e = arr.zones[z]
        sl = slice(s, e)
        idle, tdp, pmin = p.figs[0][sl], p.figs[1][sl], p.figs[2][sl]
        a = np.asarray(self.air_rooms.air_heat_w(idle, 1.0, sl), dtype=np.float64)
        b = np.asarray(self.air_rooms.air_heat_w(tdp, 1.0, sl), dtype=np.float64)
        if np.all(b <= a):
            return None if float(b.sum()) > budget_w else INF
        k = (b - a) / (tdp - idle)
        a0 = a - k * idle
        air = not p.gpu_on_liquid
        base = cap = rho = 0.0
        off: float | np.ndarray = 0.0
        r: float | np.ndarray = 0.0
        if air:
            base = self.evaporative.base_supply_c(self.engine.now) + self.link.plant_c
            off, r = arr.toff_max_n[sl], arr.rmax_n[sl] * arr.rfactor[sl]
            cap, rho = self.air_rooms.zone_cap_w(z), self.air_rooms.r_room / 1000.0

        def fits(c: float) -> bool:
            x = np.minimum(np.maximum(c, pmin), tdp)
            heat = float((a0 + k * x).sum())
            if heat > budget_w:
                return False
            if air:
                room_c = base + max(0.0, heat - cap) * rho
                return bool(np.all(room_c + off + x * r <= p.slow_c))
            return True

        lo, hi = float(pmin.min()), float(tdp.max())
        if fits(hi):
            return INF
        if not fits(lo):
            return lo
        for _ in range(60):  # (relative width 2^-60 of the range: below a float's rounding of watts)
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if fits(mid) else (lo, mid)
        return lo

    def _node_caps_w(self, s: int, e: int, cap_w: float) -> float | np.ndarray:
        """Each node's operator cap (W) of nodes s..e-1 for the zone's cap ``cap_w``: the cap itself, or in a hall
        of node pools of other power figures max(cap, its pool's lowest cap)."""
        if self.params.figs is None or math.isinf(cap_w):
            return cap_w
        return np.asarray(np.maximum(cap_w, self.params.figs[2][s:e]), dtype=np.float64)

    def _full_heat_w(self, s: int, e: int) -> np.ndarray | float:
        """Air heat (W) of each node s..e-1 at full load (one number for all without node pools)."""
        p = self.params
        if p.figs is None:
            return self._node_heat_w(p.tdp_w)
        return np.asarray(self.air_rooms.air_heat_w(p.figs[1][s:e], 1.0, slice(s, e)), dtype=np.float64)

    def _keep_for(self, z: int, budget_w: float) -> int:
        """Nodes of zone ``z`` the operator keeps in service uncapped (policy drain): the most whose full-load
        heat fits the budget and, in an air-cooled hall, whose room leaves the hottest GPU at full power at
        most at ``slowdown_c`` (the room at its set point when no warmer room allows that)."""
        a, p = self.arrays, self.params
        s, e = a.zones[z]
        # (node pools of other power figures: the zone's hottest node's full-load heat and demand for every node,
        # a bound; the drain takes the zone's last nodes first, where a refreshed pool sits)
        full = float(np.max(self._full_heat_w(s, e)))
        tdp_w = p.tdp_w if p.figs is None else float(p.figs[1][s:e].max())
        keep = int(budget_w // full)
        if not p.gpu_on_liquid:
            base = self.evaporative.base_supply_c(self.engine.now) + self.link.plant_c
            off = float(a.toff_max_n[s:e].max())
            r = float((a.rmax_n[s:e] * a.rfactor[s:e]).max())
            room_c = max(0.0, p.slow_c - base - off - tdp_w * r)  # rise the hottest GPU allows, °C
            keep = min(keep, int((self.air_rooms.zone_cap_w(z) + room_c * 1000.0 / self.air_rooms.r_room) // full))
        return keep

    def shortfall(self, z: int, tgt_c: float) -> None:
        """Zone ``z``'s room now heads for ``tgt_c`` (°C): at a trip supply, the operator responds later."""
        if tgt_c < self.trips.z_trip_levels[z][0] or self._resp_pending[z] or self._resp_active[z]:
            return
        self._resp_pending[z] = True
        self._resp_timer[z].set(self.engine.now + self.params.spec.response.response_h, lambda: self._respond(z))

    def _respond(self, z: int) -> None:
        self._resp_pending[z] = False
        self._resp_seen[z] = True
        self._resp_plan(z)
        self.trips.try_restarts()  # tripped nodes now admitted against the budget (capped, if capped)

    def replan(self) -> None:
        """The zones' capacity changed: re-plan every zone under a response."""
        for z in np.flatnonzero(self._resp_active).tolist():
            self._resp_plan(z)

    def _resp_plan(self, z: int) -> None:
        """Plan zone ``z`` to its budget now: cap or drain, or end the response when its nodes fit uncapped."""
        s, e = self.arrays.zones[z]
        n = e - s
        budget = self._heat_budget_w(z)
        now = self.engine.now
        self._resp_account(z, now)
        policy = self.params.spec.response.policy
        full = self._full_heat_w(s, e)
        if (n * full if isinstance(full, float) else float(full.sum())) <= budget:
            if self._resp_active[z]:
                self._resp_apply(z, INF, [])
                self._resp_active[z] = False
                self.resp_rows.append((now, z, "end", math.inf, 0, budget / 1000.0, self.air_rooms.zone_cap_w(z) / 1000.0))
            return
        if policy == "cap":
            c = self._cap_for(z, budget)
            if c is None:  # the GPUs' heat goes to the liquid: a cap would not cool this air zone
                return
            if c != self._zone_cap_w[z]:  # a row per change of the plan
                self.resp_rows.append((now, z, "cap", c, 0, budget / 1000.0, self.air_rooms.zone_cap_w(z) / 1000.0))
            self._resp_apply(z, c, [])
        else:
            # the nodes drained already stay drained first (no churn of jobs), then tripped ones, then from the end
            k = n - self._keep_for(z, budget)
            old = self._drained[z]
            tripped = [i for i in range(s, e) if i in self.trips.tripped and i not in old]
            rest = [i for i in range(e - 1, s - 1, -1) if i not in self.trips.tripped and i not in old]
            drain = sorted((old + tripped + rest)[:k])
            if drain != old:
                self.resp_rows.append((now, z, "drain", math.inf, len(drain), budget / 1000.0,
                                       self.air_rooms.zone_cap_w(z) / 1000.0))
            self._resp_apply(z, INF, drain)
        self._resp_active[z] = True

    def _resp_apply(self, z: int, cap_w: float, drain: list[int]) -> None:
        """Set zone ``z``'s operator GPU cap (W, inf: none) and its drained nodes."""
        a, p = self.arrays, self.params
        s, e = a.zones[z]
        cl = self.cluster
        old = self._drained[z]
        for node in old:
            if node not in drain:
                cl.remove_down(node, DRAIN)
        for node in drain:
            if node not in old:
                cl.add_down(node, DRAIN)
        self._drained[z] = drain
        if self._zone_cap_w[z] != cap_w:
            nodes = np.arange(s, e, dtype=np.int64)
            speed = self._op_speed_array()
            self._zone_cap_w[z] = cap_w
            caps = self._node_caps_w(s, e, cap_w)
            a.op_cap_w[s:e] = caps
            self.it.set_cap(SOURCE, nodes, caps)
            if p.figs is not None and not math.isinf(cap_w):  # each node by its pool's speed law
                speed[s:e] = speed_fraction(caps, p.figs[1][s:e], p.figs[0][s:e], p.figs[3][s:e])
            else:
                speed[s:e] = 1.0 if math.isinf(cap_w) else float(speed_fraction(cap_w, p.tdp_w, p.idle_w, p.alpha))
            self._op_src.changed(nodes)
        self.trips.try_restarts()

    def _op_speed_array(self) -> np.ndarray:
        """The ``operator`` speed source, made at the first cap: until then the hall has the speed sources it
        had without a response (the deferred replay and the silent crossings keep their single-speed fast
        paths). The log is replayed first: entries logged before a second source existed were at speed 1."""
        if self._op_speed is None:
            self.replay.flush_log()
            self._op_src = self.cluster.speed_source(SOURCE)
            self._op_speed = self._op_src.caps
            self.gpu.multi_speed = True
            if self.lazy.silent_on:
                self.lazy.oth_caps.append(self._op_speed)
                self.gpu.rebind()  # (the thermal update takes the other sources' speeds: bound at the start)
        return self._op_speed

    # ------------------------------------------------------------------ accounts
    def _resp_account(self, z: int, now: float) -> None:
        s, e = self.arrays.zones[z]
        dt = now - self._resp_t[z]
        if dt > 0:
            if math.isfinite(self.arrays.op_cap_w[s]):
                self._resp_nh[0] += dt * (e - s)
            self._resp_nh[1] += dt * len(self._drained[z])
        self._resp_t[z] = now

    def results(self) -> tuple[dict[str, float], dict[str, pd.DataFrame]]:
        """Metrics ``response.*`` and the ``cooling_response`` table (one row per change of a zone's plan)."""
        import pandas as pd

        if self.enabled:
            for z in range(len(self.arrays.zones)):
                self._resp_account(z, self.params.horizon_h)
        m = {"response.actions": float(sum(1 for r in self.resp_rows if r[2] != "end")),
             "response.capped_node_hours": float(self._resp_nh[0]),
             "response.drained_node_hours": float(self._resp_nh[1])}
        df = pd.DataFrame(self.resp_rows, columns=["time_h", "zone", "action", "cap_w", "drained", "budget_kw",
                                                   "capacity_kw"])
        df = df.astype({"time_h": "float64", "zone": np.int32, "cap_w": "float64", "drained": np.int32,
                        "budget_kw": "float64", "capacity_kw": "float64"})
        df["action"] = pd.Categorical(df["action"], categories=["cap", "drain", "end"])
        return m, {"cooling_response": df}


__all__ = ["DRAIN", "SOURCE", "OperatorResponse"]
