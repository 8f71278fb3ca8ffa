"""Thermal and cooling model (model.md §3, §4): per-GPU RC state, throttling, trips, the cooling plant,
ambient, energy and PUE, and optional temperature-accelerated ageing (§2).

Event-driven throughout: no time step.

* **GPU state** lives in arrays over all GPUs: the temperature ``T`` at the GPU's last update time
  ``t0``, the steady state ``tss`` and time constant ``tau`` of its current (constant) power, inlet
  and R, so T(t) = tss + (T − tss)·e^(−(t − t0)/tau) between events. An update of a set of nodes
  (a job's load change, a fan, a loop losing flow, a room step) is one vector operation over their
  GPUs; it schedules only the earliest threshold crossing of the whole cluster.
* **Throttling**: a GPU whose demanded power P_d would settle above ``slowdown_c`` runs at P_d until it
  reaches ``slowdown_c`` (a scheduled crossing), then caps its power at
  P_cap = max(P_min, (slowdown_c − T_in)/R) (``physics.thermal.power_cap_w``) and slows to
  ((P_cap − P_idle)/(P_d − P_idle))^α (``physics.thermal.speed_fraction``). The cap is released when
  P_d would settle at or below ``slowdown_c`` again. A capped GPU whose steady state at P_min lies
  above ``shutdown_c`` trips its node at the crossing time. A node's speed (the 'thermal' speed cap) is
  its slowest GPU's.
* **Trips** (cause ``thermal_trip`` on the cluster; reason ``gpu_shutdown``, ``inlet`` or ``no_fan`` in
  the trips table): a node comes back ``reboot_h`` after its cooling is restored: coolant flows, it
  has a fan, its room is below ``max_inlet_c``, its GPUs would not trip at P_min, and its air zone has
  spare capacity for its full-load heat (so restarts never overload a zone).
* **Air zones**: CRAH units hold the supply at ``supply_c`` while healthy capacity (derated above the
  design ambient) covers the heat; otherwise the supply relaxes first-order toward
  supply_c + (Q − Q_cap)·R_room with ``room_tau_min``. The supply seen by the GPUs is **quantised**:
  the held inlet is the nearest level of a ``inlet_step_c`` (≤ 0.5 °C) grid anchored at the last held
  value, switched at the exact time the actual supply crosses the midpoint (each switch an event), so
  the held inlet is never more than inlet_step_c/2 from the actual supply. The platform inlet trip
  uses the exact (unquantised) crossing of ``max_inlet_c``. The room's heat Q counts each running
  node's *demanded* power (thermal caps are not fed back into the room, which would couple the
  quantisation to itself; conservative).
* **Liquid loops**: a loop has flow while ``cdu.required`` of its CDUs are healthy and each of those has
  ``pumps.required`` healthy pumps; without flow its GPUs switch to ``r_no_flow_c_per_w``.
* **Energy**: IT power is piecewise constant between events (``ITPower``, the recorder level
  ``it_power_w``); facility energy is its exact integral with hourly ambient (COP, free cooling),
  fan/pump power and UPS/transformer losses, computed at the end over the merged breakpoints.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy.special import ndtri

from twin import rng
from twin.errors import InputError
from twin.model.engine import Engine, Topic
from twin.model.parts import FacilityParts
from twin.physics import power as ppower
from twin.physics import thermal as phys

if TYPE_CHECKING:  # pragma: no cover
    from twin.model.cluster import Cluster
    from twin.sim import Model

INF = math.inf
TRIP = "thermal_trip"
ASHRAE_RECOMMENDED_MAX_C = 27.0  # ASHRAE recommended inlet 18–27 °C (sources.md)
_EPS_C = 1e-6  # temperature tolerance at a crossing, °C
_EPS_H = 1e-12  # time tolerance for due crossings, hours
_HIST_MAX_C = 160


# =====================================================================================================
class ITPower:
    """Site IT power, the single source of truth (``engine.it_power``).

    ``node_power_w[n]`` is node n's electrical power, W: non-GPU load plus Σ over its GPUs of
    min(demand, tightest cap) while the node is up (``physics.power.node_it_power_w``), 0 while it is down
    (a stated assumption). Power sources register per-GPU caps with :meth:`gpu_cap_w` (W, ``inf`` = none)
    and call :meth:`refresh` for the nodes they changed; the object refreshes itself on NODE_LOAD,
    NODE_DOWN and NODE_UP. Every change is recorded as the recorder levels ``it_power_w`` and
    ``gpu_power_w`` (site totals, W), piecewise constant, so energy is an exact sum.
    """

    def __init__(self, engine: Engine, cluster: "Cluster", idle_w: float, tdp_w: float, non_gpu_w: float) -> None:
        self.engine = engine
        self.cluster = cluster
        self.gpus = cluster.gpus_per_node
        self.idle_w = idle_w
        self.tdp_w = tdp_w
        self.non_gpu_w = non_gpu_w
        n = cluster.n_nodes
        self.node_power_w: NDArray[np.float64] = np.zeros(n)
        self.node_gpu_w: NDArray[np.float64] = np.zeros(n)
        self._caps: dict[str, NDArray[np.float64]] = {}
        bus = engine.bus
        bus.subscribe(Topic.NODE_LOAD, self.refresh)
        bus.subscribe(Topic.NODE_DOWN, self._on_node)
        bus.subscribe(Topic.NODE_UP, self._on_node)
        self.refresh(np.arange(n))

    def gpu_cap_w(self, source: str) -> NDArray[np.float64]:
        """Writable per-GPU caps (nodes × GPUs, W) of ``source``; ``inf`` where it imposes none."""
        arr = self._caps.get(source)
        if arr is None:
            arr = self._caps[source] = np.full((self.cluster.n_nodes, self.gpus), INF)
        return arr

    def _on_node(self, node: int, cause: str) -> None:
        self.refresh(np.array([node]))

    def refresh(self, nodes: NDArray[np.int64]) -> None:
        """Recompute the power of ``nodes`` from utilisation, caps and up state; record the site totals."""
        util = self.engine.node_util[nodes]
        up = self.cluster.down_count[nodes] == 0
        if self._caps:
            caps = np.full((len(nodes), self.gpus), INF)
            for arr in self._caps.values():
                np.minimum(caps, arr[nodes], out=caps)
            gpu = np.asarray(ppower.node_it_power_w(util[:, None], caps, 1, self.idle_w, self.tdp_w, 0.0)).sum(axis=1)
        else:
            gpu = np.asarray(ppower.node_it_power_w(util, INF, self.gpus, self.idle_w, self.tdp_w, 0.0))
        self.node_gpu_w[nodes] = np.where(up, gpu, 0.0)
        self.node_power_w[nodes] = np.where(up, gpu + self.non_gpu_w, 0.0)
        now = self.engine.now
        rec = self.engine.recorder
        rec.level("it_power_w", now, float(self.node_power_w.sum()))
        rec.level("gpu_power_w", now, float(self.node_gpu_w.sum()))

    def total_w(self) -> float:
        """Site IT power now, W."""
        return float(self.node_power_w.sum())


# =====================================================================================================
def _blocks(racks: int, groups: int, nodes_per_rack: int) -> list[tuple[int, int]]:
    """Contiguous node ranges [start, end) of ``groups`` near-equal blocks of racks."""
    out = []
    for z in range(groups):
        r0 = (z * racks) // groups
        r1 = ((z + 1) * racks) // groups
        out.append((r0 * nodes_per_rack, r1 * nodes_per_rack))
    return out


class Thermal:
    """Component for the ``cooling`` section (see the module docstring)."""

    def __init__(self, model: "Model") -> None:
        self.model = model
        self.engine = eng = model.engine
        self.cluster = cl = model.cluster
        sc = model.sc
        self.sc = sc
        c = sc.cooling
        assert c is not None
        self.spec = c
        self.on = bool(c.thermal)
        self.type = c.type
        self.N = n = cl.n_nodes
        self.g = g = cl.gpus_per_node
        self.G = n * g
        self._ar = np.arange(g)
        gp = c.gpu
        self.idle_w = float(c.idle_w(sc))
        self.tdp_w = gp.tdp_w
        self.pmin_w = gp.p_min_w
        self.slow_c = gp.slowdown_c
        self.shut_c = gp.shutdown_c
        self.alpha = gp.alpha
        self.C = gp.c_j_per_c
        self.non_gpu_w = c.node.non_gpu_w
        self.max_inlet_c = c.node.max_inlet_c
        self.reboot_h = c.node.reboot_h
        H = eng.horizon_h
        self.H = H
        self.n_hours = int(math.ceil(H)) + 1
        if c.ambient.csv is not None and c.ambient.csv._values is None:
            raise InputError("scenario", "cooling.ambient.csv.file",
                             "the ambient CSV was not loaded (load the scenario with twin.scenario.load_scenario)")
        self.ambient_h = c.ambient.hourly_c(self.n_hours)

        # ---- IT power: one source of truth --------------------------------------------------------
        it = getattr(eng, "it_power", None)
        if it is None:
            it = ITPower(eng, cl, self.idle_w, self.tdp_w, self.non_gpu_w)
            eng.it_power = it  # type: ignore[attr-defined]
        self.it = it
        self._it_caps = it.gpu_cap_w("thermal") if hasattr(it, "gpu_cap_w") else None

        # ---- plant ---------------------------------------------------------------------------------
        self.air = c.air
        self.liquid = c.liquid
        self.gpu_on_liquid = self.type in ("liquid", "hybrid")
        fac_specs = c.facility_parts()
        racks, npr = cl.racks, cl.nodes_per_rack
        self.timeline: list[tuple[float, str, int, float, float, float, float]] = []
        if self.air is not None:
            a = self.air
            self.zones = _blocks(racks, a.zones, npr)
            self.zone_of = np.empty(n, dtype=np.int64)
            for z, (s, e) in enumerate(self.zones):
                self.zone_of[s:e] = z
            Z = a.zones
            self.crah_healthy = np.full(Z, a.crah.count, dtype=np.int64)
            self.z_S0 = np.full(Z, a.supply_c)
            self.z_ta = np.zeros(Z)
            self.z_tgt = np.full(Z, a.supply_c)
            self.z_held = np.full(Z, a.supply_c)
            self.z_gen = np.zeros(Z, dtype=np.int64)
            self.z_q = np.zeros(Z)
            self.z_reserved = np.zeros(Z)
            self.z_last = np.zeros(Z)
            self.z_hot_node_h = 0.0
            self.z_over_h = 0.0
            self.z_over_since = np.full(Z, np.nan)
            self.r_room = float(a.r_room_c_per_kw)  # type: ignore[arg-type]
            paths = [f"cooling.zone{z}.crah{k}" for z in range(Z) for k in range(a.crah.count)]
            self.crah = FacilityParts(eng, "crah", paths, fac_specs["crah"], self._on_crah, model.shop.on_failure)
            model.facility["crah"] = self.crah
            self.node_air_w = np.zeros(n)
        if self.liquid is not None:
            lq = self.liquid
            L = lq.loops
            self.loops = _blocks(racks, L, npr)
            self.loop_of = np.empty(n, dtype=np.int64)
            for lp, (s, e) in enumerate(self.loops):
                self.loop_of[s:e] = lp
            cnt, pc = lq.cdu.count, lq.cdu.pumps.count
            self.cdu_ok = np.ones(L * cnt, dtype=bool)
            self.pumps_ok = np.full(L * cnt, pc, dtype=np.int64)
            self.loop_flow = np.ones(L, dtype=bool)
            self.loop_noflow_since = np.full(L, np.nan)
            self.noflow_h = 0.0
            cpaths = [f"cooling.loop{lp}.cdu{k}" for lp in range(L) for k in range(cnt)]
            ppaths = [f"{p}.pump{j}" for p in cpaths for j in range(pc)]
            self.cdu = FacilityParts(eng, "cdu", cpaths, fac_specs["cdu"], self._on_cdu, model.shop.on_failure)
            self.pump = FacilityParts(eng, "cdu_pump", ppaths, fac_specs["cdu_pump"], self._on_pump,
                                      model.shop.on_failure)
            model.facility["cdu"] = self.cdu
            model.facility["cdu_pump"] = self.pump
            if lq.leak is not None:
                lpaths = [f"{cl.node_path(i)}.leak" for i in range(n)]
                self.leak = FacilityParts(eng, "leak", lpaths, fac_specs["leak"], self._on_leak,
                                          model.shop.on_failure)
                model.facility["leak"] = self.leak

        # ---- fans ----------------------------------------------------------------------------------
        self.fan_part = self.air.fan_part if self.air is not None else None
        self.fans_h = np.zeros(n, dtype=np.int64)
        self.fans_req = 1
        if self.fan_part is not None:
            fpop = model.parts[self.fan_part]
            self.fans_h[:] = fpop.spec.count
            self.fans_req = int(fpop.required)

        # ---- GPU state -----------------------------------------------------------------------------
        G = self.G
        base_r = gp.r_cold_plate_c_per_w if self.gpu_on_liquid else gp.r_air_c_per_w
        self.rspread = np.ones(G)
        if gp.r_sigma > 0:
            digs = rng.path_digests(f"{cl.node_path(i // g)}.gpu{i % g}#thermal_r" for i in range(G))
            u = eng.streams.uniforms(digs, np.zeros(G, dtype=np.int64))
            self.rspread = np.exp(gp.r_sigma * ndtri(u))
        self.rbase = base_r * self.rspread
        self.rfactor = np.ones(n)  # node multiplier of R: fans (air) or no-flow (liquid)
        self.inlet = np.empty(n)  # GPU inlet (held air supply, or coolant supply), °C
        if self.gpu_on_liquid:
            assert self.liquid is not None
            self.inlet[:] = self.liquid.supply_c
        else:
            assert self.air is not None
            self.inlet[:] = self.air.supply_c
        tin0 = np.repeat(self.inlet, g)
        R0 = self.rbase.copy()
        self.R = R0
        self.T = tin0 + self.idle_w * R0
        self.t0 = np.zeros(G)
        self.tss = self.T.copy()
        self.tau = R0 * self.C
        self.P = np.full(G, self.idle_w)
        self.Pd = np.full(G, self.idle_w)
        self.engaged = np.zeros(G, dtype=bool)
        self.speed = np.ones(G)
        self.gon = np.ones(G, dtype=bool)  # GPU powered during [t0, now]
        self.t_next = np.full(G, INF)
        self.kind = np.zeros(G, dtype=np.int8)  # 1 slowdown crossing, 2 shutdown crossing
        self._wake_t = INF
        self._wake_gen = 0
        self.hist = np.zeros(_HIST_MAX_C)
        self.tpeak_c = float(self.T.max())

        # ---- accounting ----------------------------------------------------------------------------
        self.n_busy = np.zeros(n)
        self.n_capped = np.zeros(n)
        self.n_spsum = np.zeros(n)
        self.n_tp = np.zeros(n)
        self._tot = np.zeros(4)  # busy GPUs, capped busy GPUs, Σ speed of busy GPUs, effective GPUs
        self._acc = np.zeros(4)
        self._t_acc = 0.0
        self._tp_t: list[float] = [0.0]
        self._tp_v: list[float] = [0.0]

        # ---- trips ---------------------------------------------------------------------------------
        self.tripped: dict[int, tuple[float, str]] = {}
        self.pending: dict[int, int] = {}
        self._reboot_token = 0
        self.trip_rows: list[tuple[int, float, float, str]] = []

        # ---- trace ---------------------------------------------------------------------------------
        tr = c.trace
        self.trace_mask = np.zeros(n, dtype=bool)
        self.trace_mask[[i for i in tr.nodes if i < n]] = True
        if tr.from_h is not None:
            t_from = tr.from_h
        elif c.ambient.csv is not None:
            t_from = 0.0
        else:
            t_from = max(0.0, (c.ambient.seasonal_peak_day - 3.5) * 24.0)
            if t_from + 168.0 > H:
                t_from = max(0.0, H - 168.0)
        self.trace_from = t_from
        self.trace_to = tr.to_h if tr.to_h is not None else t_from + 168.0
        self.trace_rows: list[NDArray[np.float64]] = []

        # ---- ageing --------------------------------------------------------------------------------
        self.aged: list[dict[str, Any]] = []
        if self.on:
            for name, ag in c.ageing.items():
                pop = model.parts[name]
                per = pop.per_node
                idx = np.arange(pop.n)
                self.aged.append({
                    "pop": pop, "spec": ag, "per": per, "node": idx // per,
                    "gpu": (idx // per) * g + (idx % per) % g if per == g else None,
                    "age": np.zeros(pop.n), "t": np.zeros(pop.n), "af": np.ones(pop.n),
                    "tfail": np.full(pop.n, INF), "life": np.zeros(pop.n),
                })
        self._age_wake_t = INF
        self._age_gen = 0

        # ---- subscriptions -------------------------------------------------------------------------
        if self.on:
            bus = eng.bus
            bus.subscribe(Topic.NODE_LOAD, self._on_load)
            bus.subscribe(Topic.NODE_DOWN, self._on_down)
            bus.subscribe(Topic.NODE_UP, self._on_up)
            bus.subscribe(Topic.NODE_SPEED, self._on_speed)
            if self.fan_part is not None:
                bus.subscribe(Topic.GROUP, self._on_group)
            if self.aged:
                bus.subscribe(Topic.PART_FAILED, self._on_part_failed)
                bus.subscribe(Topic.PART_RESTORED, self._on_part_restored)

    # =================================================================================== lifecycle
    def start(self) -> None:
        eng = self.engine
        for inj in self.spec.inject:
            pop = self.model.facility.get(inj.part)
            if pop is not None:
                eng.call_at(inj.at_h, lambda p=pop, i=inj.index: p.fail_now(i))
            else:
                npop = self.model.parts[inj.part]
                eng.call_at(inj.at_h, lambda p=npop, i=inj.index: p.reschedule(i, self.engine.now))
        if not self.on:
            return
        for a in self.aged:
            pop = a["pop"]
            a["life"][:] = pop.life_h
            for i in range(pop.n):  # the population scheduled AF = 1 failures: cancel them, we own the clock
                pop.reschedule(i, INF)
        self._update(np.arange(self.N))
        if self.air is not None:
            for z in range(len(self.zones)):
                self._retarget(z)
            if self.n_hours > 1:
                eng.call_at(1.0, lambda: self._hour(1))

    def finish(self) -> None:
        if not self.on:
            return
        H = self.H
        self._integrate(H)
        # flush temperature histogram to the horizon
        gi = np.arange(self.G)
        dt_s = (H - self.t0) * 3600.0
        decay = np.exp(-dt_s / self.tau)
        self._hist_add(gi, dt_s, self.T, self.tss, self.tau, decay)
        if self.air is not None:
            for z in range(len(self.zones)):
                self._zone_account(z, H)
                if not np.isnan(self.z_over_since[z]):
                    self.z_over_h += H - self.z_over_since[z]
                    self.z_over_since[z] = np.nan
        if self.liquid is not None:
            for lp in range(len(self.loops)):
                if not np.isnan(self.loop_noflow_since[lp]):
                    self.noflow_h += H - self.loop_noflow_since[lp]
                    self.loop_noflow_since[lp] = np.nan

    # =================================================================================== GPU core
    def _gpus(self, nodes: NDArray[np.int64]) -> NDArray[np.int64]:
        return (nodes[:, None] * self.g + self._ar).ravel()

    def _update(self, nodes: NDArray[np.int64]) -> None:
        """Bring the GPUs of ``nodes`` to now and apply their current power, inlet and R (one vector op)."""
        if not len(nodes):
            return
        now = self.engine.now
        g = self.g
        gi = self._gpus(nodes)
        # temperature now, from the last state
        tau_old = self.tau[gi]
        tss_old = self.tss[gi]
        T_old = self.T[gi]
        dt_s = (now - self.t0[gi]) * 3600.0
        decay = np.exp(-dt_s / tau_old)
        T = tss_old + (T_old - tss_old) * decay
        self._hist_add(gi, dt_s, T_old, tss_old, tau_old, decay)
        # new conditions
        up_n = self.cluster.down_count[nodes] == 0
        util = self.engine.node_util[nodes]
        pd_n = np.where(up_n, self.idle_w + (self.tdp_w - self.idle_w) * util, 0.0)
        pd = np.repeat(pd_n, g)
        up = np.repeat(up_n, g)
        R = self.rbase[gi] * np.repeat(self.rfactor[nodes], g)
        tin = np.repeat(self.inlet[nodes], g)
        need = tin + pd * R > self.slow_c
        engage = need & (self.engaged[gi] | (T >= self.slow_c - _EPS_C))
        P = np.where(engage, phys.power_cap_w(pd, tin, R, self.slow_c, self.pmin_w), pd)
        capped = engage & (P < pd)
        speed = np.where(capped, phys.speed_fraction(P, pd, self.idle_w, self.alpha), 1.0)
        tss = tin + P * R
        tau = R * self.C
        # next crossing: slowdown for free GPUs heading above it, shutdown for capped ones settling above it
        t_cross = np.full(len(gi), INF)
        kind = np.zeros(len(gi), dtype=np.int8)
        free_up = need & ~engage
        if free_up.any():
            t_cross[free_up] = phys.crossing_time_s(T[free_up], tss[free_up], self.slow_c, tau[free_up])
            kind[free_up] = 1
        hot = engage & (tss > self.shut_c)
        if hot.any():
            ts = np.asarray(phys.crossing_time_s(T[hot], tss[hot], self.shut_c, tau[hot]), dtype=np.float64)
            ts = np.where(T[hot] >= self.shut_c - _EPS_C, 0.0, ts)
            t_cross[hot] = ts
            kind[hot] = 2
        # write state
        self.T[gi] = T
        self.t0[gi] = now
        self.tss[gi] = tss
        self.tau[gi] = tau
        self.R[gi] = R
        self.P[gi] = P
        self.Pd[gi] = pd
        self.engaged[gi] = engage
        self.speed[gi] = speed
        self.gon[gi] = up
        t_next = now + t_cross / 3600.0
        self.t_next[gi] = t_next
        self.kind[gi] = kind
        tmax = float(T.max())
        if tmax > self.tpeak_c:
            self.tpeak_c = tmax
        # node speed cap (nodes in service only; a down node keeps its last cap)
        sp_n = speed.reshape(-1, g).min(axis=1)
        caps = self.engine.speed_cap("thermal")
        changed = up_n & (sp_n != caps[nodes])
        # IT power caps
        if self._it_caps is not None:
            new_caps = np.where(capped, P, INF).reshape(-1, g)
            if not np.array_equal(new_caps, self._it_caps[nodes]):
                self._it_caps[nodes] = new_caps
                self.it.refresh(nodes)
        # air-zone heat (demanded power of nodes in service)
        if self.air is not None:
            heat = np.where(up_n, self.non_gpu_w + (pd.reshape(-1, g).sum(axis=1) if self.type == "air" else 0.0), 0.0)
            self.node_air_w[nodes] = heat
            for z in np.unique(self.zone_of[nodes]).tolist():
                s, e = self.zones[z]
                q = float(self.node_air_w[s:e].sum())
                if q != self.z_q[z]:
                    self.z_q[z] = q
                    self._retarget(z)
        # accounting
        busy_g = (up & (pd > self.idle_w)).reshape(-1, g)
        self._account(nodes, busy_g.sum(axis=1).astype(np.float64),
                      (busy_g & capped.reshape(-1, g)).sum(axis=1).astype(np.float64),
                      np.where(busy_g, speed.reshape(-1, g), 0.0).sum(axis=1))
        if self.aged:
            self._age_update(nodes)
        if self.trace_mask[nodes].any() and self.trace_from <= now <= self.trace_to:
            self._trace(nodes, gi, T, tss, tau, P, pd, tin, R, speed)
        m = float(t_next.min())
        if m < self._wake_t:
            self._schedule_wake(m)
        if changed.any():
            ch = nodes[changed]
            caps[ch] = sp_n[changed]
            self.engine.bus.publish(Topic.NODE_SPEED, ch)

    def _schedule_wake(self, t: float) -> None:
        if t >= self.H:
            return
        self._wake_gen += 1
        self._wake_t = t
        gen = self._wake_gen
        self.engine.call_at(t, lambda: self._wake(gen))

    def _wake(self, gen: int) -> None:
        if gen != self._wake_gen:
            return
        self._wake_t = INF
        now = self.engine.now
        due = np.flatnonzero(self.t_next <= now + _EPS_H)
        if len(due):
            kinds = self.kind[due]
            self.t_next[due] = INF
            shut_nodes = np.unique(due[kinds == 2] // self.g)
            slow_nodes = np.setdiff1d(np.unique(due[kinds == 1] // self.g), shut_nodes)
            if len(slow_nodes):
                self._update(slow_nodes)
            for node in shut_nodes.tolist():
                if self.cluster.is_up(node):
                    self._trip(node, "gpu_shutdown")
        m = float(self.t_next.min())
        if m < self._wake_t:
            self._schedule_wake(m)

    def _hist_add(self, gi: NDArray[np.int64], dt_s: NDArray[np.float64], T0: NDArray[np.float64],
                  tss: NDArray[np.float64], tau: NDArray[np.float64], decay: NDArray[np.float64]) -> None:
        """GPU-hours of powered GPUs by their mean temperature over the interval just ended (1 °C bins)."""
        on = self.gon[gi] & (dt_s > 0)
        if not on.any():
            return
        d = dt_s[on]
        mean = tss[on] + (T0[on] - tss[on]) * tau[on] * (1.0 - decay[on]) / d
        b = np.clip(mean.astype(np.int64), 0, _HIST_MAX_C - 1)
        self.hist += np.bincount(b, weights=d / 3600.0, minlength=_HIST_MAX_C)

    def _trace(self, nodes: NDArray[np.int64], gi: NDArray[np.int64], T: NDArray[np.float64],
               tss: NDArray[np.float64], tau: NDArray[np.float64], P: NDArray[np.float64],
               pd: NDArray[np.float64], tin: NDArray[np.float64], R: NDArray[np.float64],
               speed: NDArray[np.float64]) -> None:
        sel = np.repeat(self.trace_mask[nodes], self.g)
        k = int(sel.sum())
        rows = np.column_stack([np.full(k, self.engine.now), (gi[sel] // self.g).astype(float),
                                (gi[sel] % self.g).astype(float), T[sel], tss[sel], tau[sel], P[sel], pd[sel],
                                tin[sel], R[sel], speed[sel]])
        self.trace_rows.append(rows)

    # =================================================================================== accounting
    def _integrate(self, now: float) -> None:
        dt = now - self._t_acc
        if dt > 0:
            self._acc += self._tot * dt
            self._t_acc = now

    def _account(self, nodes: NDArray[np.int64], busy: NDArray[np.float64], capped: NDArray[np.float64],
                 spsum: NDArray[np.float64]) -> None:
        self._integrate(self.engine.now)
        self._tot[0] += float((busy - self.n_busy[nodes]).sum())
        self._tot[1] += float((capped - self.n_capped[nodes]).sum())
        self._tot[2] += float((spsum - self.n_spsum[nodes]).sum())
        self.n_busy[nodes] = busy
        self.n_capped[nodes] = capped
        self.n_spsum[nodes] = spsum
        self._refresh_tp(nodes)

    def _refresh_tp(self, nodes: NDArray[np.int64]) -> None:
        """Effective GPUs (GPUs computing × their node's speed over all sources) for the throughput series."""
        tp = self.n_busy[nodes] * self.engine.node_speed(nodes)
        delta = float((tp - self.n_tp[nodes]).sum())
        if delta != 0.0:
            self._integrate(self.engine.now)
            self.n_tp[nodes] = tp
            self._tot[3] += delta
            now = self.engine.now
            if self._tp_t[-1] == now:
                self._tp_v[-1] = float(self._tot[3])
            else:
                self._tp_t.append(now)
                self._tp_v.append(float(self._tot[3]))

    # =================================================================================== bus handlers
    def _on_load(self, nodes: NDArray[np.int64]) -> None:
        self._update(np.asarray(nodes, dtype=np.int64))

    def _on_speed(self, nodes: NDArray[np.int64]) -> None:
        self._refresh_tp(np.asarray(nodes, dtype=np.int64))

    def _on_down(self, node: int, cause: str) -> None:
        self._update(np.array([node], dtype=np.int64))
        self._try_restarts()

    def _on_up(self, node: int, cause: str) -> None:
        reason = self._instant_trip_reason(node)
        if reason is not None:
            self._trip(node, reason)
            return
        self._update(np.array([node], dtype=np.int64))

    def _on_group(self, node: int, part: str, healthy: int) -> None:
        if part != self.fan_part:
            return
        self.fans_h[node] = healthy
        if not self.gpu_on_liquid:
            self.rfactor[node] = self.fans_req / healthy if 0 < healthy < self.fans_req else 1.0
        if healthy == 0 and self.cluster.is_up(node) and node not in self.tripped:
            self._trip(node, "no_fan")
            return
        self._update(np.array([node], dtype=np.int64))
        self._try_restarts()

    # =================================================================================== trips
    def _instant_trip_reason(self, node: int) -> str | None:
        if self.fan_part is not None and self.fans_h[node] == 0:
            return "no_fan"
        if self.air is not None and self._supply_now(int(self.zone_of[node])) >= self.max_inlet_c:
            return "inlet"
        return None

    def _trip(self, node: int, reason: str) -> None:
        if node in self.tripped:
            return
        self.tripped[node] = (self.engine.now, reason)
        self.cluster.add_down(node, TRIP)

    def _node_full_air_w(self, node: int) -> float:
        return self.non_gpu_w + (self.g * self.tdp_w if self.type == "air" else 0.0)

    def _cooling_ok(self, node: int) -> bool:
        """Could ``node`` run again: flow, fans, room below the inlet limit, no trip at P_min, zone headroom."""
        if self.fan_part is not None and self.fans_h[node] == 0:
            return False
        if self.liquid is not None and self.gpu_on_liquid and not self.loop_flow[self.loop_of[node]]:
            return False
        gi = self._gpus(np.array([node]))
        r = float((self.rbase[gi] * self.rfactor[node]).max())
        if self.inlet[node] + self.pmin_w * r >= self.shut_c:
            return False
        if self.air is not None:
            z = int(self.zone_of[node])
            if self._supply_now(z) >= self.max_inlet_c:
                return False
            if self.z_q[z] + self.z_reserved[z] + self._node_full_air_w(node) > self._zone_cap_w(z):
                return False
        return True

    def _try_restarts(self) -> None:
        if not self.tripped:
            return
        for node in sorted(self.tripped):
            if node in self.pending or not self._cooling_ok(node):
                continue
            self._reboot_token += 1
            tok = self._reboot_token
            self.pending[node] = tok
            if self.air is not None:
                self.z_reserved[self.zone_of[node]] += self._node_full_air_w(node)
            self.engine.call_at(self.engine.now + self.reboot_h, lambda n=node, t=tok: self._reboot_done(n, t))

    def _reboot_done(self, node: int, tok: int) -> None:
        if self.pending.get(node) != tok:
            return
        del self.pending[node]
        if self.air is not None:
            self.z_reserved[self.zone_of[node]] -= self._node_full_air_w(node)
        if not self._cooling_ok(node):
            self._try_restarts()
            return
        start, reason = self.tripped.pop(node)
        self.trip_rows.append((node, start, self.engine.now, reason))
        self.cluster.remove_down(node, TRIP)
        self._try_restarts()

    # =================================================================================== air zones
    def _derate(self) -> float:
        assert self.air is not None
        amb = float(self.ambient_h[min(int(math.floor(self.engine.now + 1e-9)), self.n_hours - 1)])
        return max(0.0, 1.0 - self.air.derate_per_c * max(0.0, amb - self.air.design_ambient_c))

    def _zone_cap_w(self, z: int) -> float:
        assert self.air is not None
        return float(self.crah_healthy[z]) * self.air.crah.capacity_kw * 1000.0 * self._derate()

    def _supply_now(self, z: int) -> float:
        assert self.air is not None
        dt_min = (self.engine.now - self.z_ta[z]) * 60.0
        return float(self.z_tgt[z] + (self.z_S0[z] - self.z_tgt[z]) * math.exp(-dt_min / self.air.room_tau_min))

    def _retarget(self, z: int) -> None:
        """The zone's heat or capacity changed: restart its supply trajectory from where it is now."""
        assert self.air is not None
        now = self.engine.now
        cap = self._zone_cap_w(z)
        q = float(self.z_q[z])
        over = q > cap
        if over and np.isnan(self.z_over_since[z]):
            self.z_over_since[z] = now
        elif not over and not np.isnan(self.z_over_since[z]):
            self.z_over_h += now - self.z_over_since[z]
            self.z_over_since[z] = np.nan
        tgt = self.air.supply_c + (q - cap) / 1000.0 * self.r_room if over else self.air.supply_c
        if tgt == self.z_tgt[z]:
            return
        self.z_S0[z] = self._supply_now(z)
        self.z_ta[z] = now
        self.z_tgt[z] = tgt
        self.z_gen[z] += 1
        self.timeline.append((now, "zone", z, float(self.z_S0[z]), tgt, q / 1000.0, cap / 1000.0))
        self._plan_step(z)
        # exact crossing of the platform inlet limit
        S0 = float(self.z_S0[z])
        if tgt > self.max_inlet_c > S0:
            t_min = float(phys.crossing_time_s(S0, tgt, self.max_inlet_c, self.air.room_tau_min))
            gen = int(self.z_gen[z])
            self.engine.call_at(now + t_min / 60.0, lambda: self._zone_inlet_trip(z, gen))

    def _plan_step(self, z: int) -> None:
        """Schedule the next switch of the held inlet (nearest level on a grid of inlet_step_c)."""
        assert self.air is not None
        h = float(self.z_held[z])
        tgt = float(self.z_tgt[z])
        if h == tgt:
            return
        d = self.air.inlet_step_c
        sgn = 1.0 if tgt > h else -1.0
        if abs(tgt - h) <= d:
            x, new_h = 0.5 * (h + tgt), tgt
        else:
            x, new_h = h + sgn * 0.5 * d, h + sgn * d
        S0 = float(self.z_S0[z])
        S = self._supply_now(z)
        if (S - x) * sgn >= 0.0:
            t_abs = self.engine.now
        else:
            t_min = float(phys.crossing_time_s(S0, tgt, x, self.air.room_tau_min))
            t_abs = float(self.z_ta[z]) + t_min / 60.0
            if not math.isfinite(t_abs):  # x not strictly between S0 and the target: already passed
                t_abs = self.engine.now
        gen = int(self.z_gen[z])
        self.engine.call_at(t_abs, lambda: self._zone_step(z, gen, new_h))

    def _zone_step(self, z: int, gen: int, new_h: float) -> None:
        if gen != self.z_gen[z]:
            return
        self._zone_account(z, self.engine.now)
        self.z_held[z] = new_h
        s, e = self.zones[z]
        nodes = np.arange(s, e, dtype=np.int64)
        if not self.gpu_on_liquid:
            self.inlet[s:e] = new_h
            self._update(nodes)
        self._plan_step(z)
        self._try_restarts()

    def _zone_account(self, z: int, now: float) -> None:
        """Node-hours with the (held) inlet above the ASHRAE recommended maximum."""
        s, e = self.zones[z]
        if self.z_held[z] > ASHRAE_RECOMMENDED_MAX_C:
            self.z_hot_node_h += (now - self.z_last[z]) * (e - s)
        self.z_last[z] = now

    def _zone_inlet_trip(self, z: int, gen: int) -> None:
        if gen != self.z_gen[z]:
            return
        s, e = self.zones[z]
        for node in range(s, e):
            if self.cluster.is_up(node):
                self._trip(node, "inlet")

    def _on_crah(self, idx: int, healthy: bool) -> None:
        assert self.air is not None
        z = idx // self.air.crah.count
        self.crah_healthy[z] += 1 if healthy else -1
        if self.on:
            self._retarget(z)
            self._try_restarts()

    def _hour(self, k: int) -> None:
        """Hourly ambient change: capacity derating of the air zones."""
        for z in range(len(self.zones)):
            self._retarget(z)
        self._try_restarts()
        if k + 1 < self.H:
            self.engine.call_at(float(k + 1), lambda: self._hour(k + 1))

    # =================================================================================== liquid loops
    def _loop_flow(self, lp: int) -> bool:
        assert self.liquid is not None
        d = self.liquid.cdu
        sl = slice(lp * d.count, (lp + 1) * d.count)
        delivering = self.cdu_ok[sl] & (self.pumps_ok[sl] >= d.pumps.required)
        return int(delivering.sum()) >= d.required

    def _loop_changed(self, lp: int) -> None:
        assert self.liquid is not None
        flow = self._loop_flow(lp)
        if flow == bool(self.loop_flow[lp]):
            return
        now = self.engine.now
        self.loop_flow[lp] = flow
        if not flow:
            self.loop_noflow_since[lp] = now
        elif not np.isnan(self.loop_noflow_since[lp]):
            self.noflow_h += now - self.loop_noflow_since[lp]
            self.loop_noflow_since[lp] = np.nan
        self.timeline.append((now, "loop", lp, float(flow), float(flow), math.nan, math.nan))
        if not self.on:
            return
        s, e = self.loops[lp]
        gp = self.spec.gpu
        self.rfactor[s:e] = 1.0 if flow else gp.r_no_flow_c_per_w / gp.r_cold_plate_c_per_w
        self._update(np.arange(s, e, dtype=np.int64))
        self._try_restarts()

    def _on_cdu(self, idx: int, healthy: bool) -> None:
        assert self.liquid is not None
        self.cdu_ok[idx] = healthy
        self._loop_changed(idx // self.liquid.cdu.count)

    def _on_pump(self, idx: int, healthy: bool) -> None:
        assert self.liquid is not None
        cdu = idx // self.liquid.cdu.pumps.count
        self.pumps_ok[cdu] += 1 if healthy else -1
        self._loop_changed(cdu // self.liquid.cdu.count)

    def _on_leak(self, idx: int, healthy: bool) -> None:
        assert self.liquid is not None and self.liquid.leak is not None
        npr = self.cluster.nodes_per_rack
        last = (idx // npr + 1) * npr
        nodes = range(idx, min(idx + 1 + self.liquid.leak.neighbours, last))
        for node in nodes:
            if healthy:
                self.cluster.remove_down(node, "leak")
            else:
                self.cluster.add_down(node, "leak")

    # =================================================================================== ageing
    def _age_temps(self, a: dict[str, Any], pidx: NDArray[np.int64]) -> NDArray[np.float64]:
        spec = a["spec"]
        nodes = a["node"][pidx]
        if spec.temperature == "inlet":
            return self.inlet[nodes]
        if a["gpu"] is not None:
            return self.tss[a["gpu"][pidx]]
        return self.tss.reshape(-1, self.g)[nodes].max(axis=1)

    def _age_update(self, nodes: NDArray[np.int64], only: list[dict[str, Any]] | None = None) -> None:
        now = self.engine.now
        m = INF
        for a in only or self.aged:
            per = a["per"]
            pidx = (nodes[:, None] * per + np.arange(per)).ravel()
            pop = a["pop"]
            healthy = pop.healthy[pidx]
            af_old = a["af"][pidx]
            a["age"][pidx] += af_old * (now - a["t"][pidx])
            a["t"][pidx] = now
            af = np.asarray(phys.acceleration_factor(self._age_temps(a, pidx), a["spec"].t_ref_c,
                                                     a["spec"].doubling_c), dtype=np.float64)
            a["af"][pidx] = af
            tf = np.asarray(phys.accelerated_failure_time_h(now, a["age"][pidx], a["life"][pidx], af))
            tf = np.where(healthy, tf, INF)
            a["tfail"][pidx] = tf
            m = min(m, float(tf.min()))
        if m < self._age_wake_t:
            self._schedule_age(m)

    def _schedule_age(self, t: float) -> None:
        if t >= self.H:
            return
        self._age_gen += 1
        self._age_wake_t = t
        gen = self._age_gen
        self.engine.call_at(t, lambda: self._age_wake(gen))

    def _age_wake(self, gen: int) -> None:
        if gen != self._age_gen:
            return
        self._age_wake_t = INF
        now = self.engine.now
        m = INF
        for a in self.aged:
            due = np.flatnonzero(a["tfail"] <= now + _EPS_H)
            for i in due.tolist():
                a["tfail"][i] = INF
                a["pop"].reschedule(i, now)  # fails now through the population's own path
            m = min(m, float(a["tfail"].min()))
        if m < self._age_wake_t:
            self._schedule_age(m)

    def _aged_of(self, pop: Any) -> dict[str, Any] | None:
        for a in self.aged:
            if a["pop"] is pop:
                return a
        return None

    def _on_part_failed(self, pop: Any, idx: int) -> None:
        a = self._aged_of(pop)
        if a is not None:
            now = self.engine.now
            a["age"][idx] += a["af"][idx] * (now - a["t"][idx])
            a["t"][idx] = now
            a["tfail"][idx] = INF

    def _on_part_restored(self, pop: Any, idx: int) -> None:
        a = self._aged_of(pop)
        if a is None:
            return
        now = self.engine.now
        a["life"][idx] = pop.life_h[idx]
        pop.reschedule(idx, INF)  # cancel the population's AF = 1 schedule of the fresh part
        a["age"][idx] = 0.0
        a["t"][idx] = now
        node = np.array([idx // a["per"]], dtype=np.int64)
        self._age_update(node, only=[a])

    # =================================================================================== results
    def results(self) -> tuple[dict[str, float], dict[str, pd.DataFrame]]:
        m: dict[str, float] = {}
        tables: dict[str, pd.DataFrame] = {}
        em, et = self._energy()
        m.update(em)
        tables.update(et)
        if self.air is not None:
            m["cooling.zone_over_capacity_hours"] = float(self.z_over_h)
        if self.liquid is not None:
            m["cooling.loop_no_flow_hours"] = float(self.noflow_h)
        tl = pd.DataFrame(self.timeline, columns=["time_h", "unit", "index", "supply_c", "target_c", "load_kw",
                                                  "capacity_kw"])
        tl["unit"] = pd.Categorical(tl["unit"], categories=["zone", "loop"])
        tables["cooling_timeline"] = tl
        if not self.on:
            return m, tables
        H = self.H
        busy_h, capped_h, spsum_h, _ = self._acc
        m["thermal.throttled_gpu_hours"] = float(capped_h)
        m["thermal.speed_loss_gpu_hours"] = float(busy_h - spsum_h)
        m["thermal.mean_speed"] = float(spsum_h / busy_h) if busy_h > 0 else math.nan
        rows = list(self.trip_rows) + [(n, s, math.nan, r) for n, (s, r) in sorted(self.tripped.items())]
        trips = pd.DataFrame(rows, columns=["node", "start_h", "end_h", "reason"])
        trips = trips.sort_values(["start_h", "node"], kind="stable").reset_index(drop=True)
        trips["node"] = trips["node"].astype(np.int32)
        trips["path"] = [self.cluster.node_path(int(n)) for n in trips["node"]]
        trips["reason"] = pd.Categorical(trips["reason"], categories=["gpu_shutdown", "inlet", "no_fan"])
        tables["thermal_trips"] = trips
        m["thermal.trips"] = float(len(trips))
        for r in ("gpu_shutdown", "inlet", "no_fan"):
            m[f"thermal.trips.{r}"] = float((trips["reason"] == r).sum())
        m["thermal.trip_node_hours"] = float((trips["end_h"].fillna(H) - trips["start_h"]).sum())
        if self.air is not None:
            m["thermal.inlet_above_27c_node_hours"] = float(self.z_hot_node_h)
        hist = self.hist
        tot = hist.sum()
        tables["gpu_temperature"] = pd.DataFrame({"temp_c": np.arange(_HIST_MAX_C, dtype=np.int32),
                                                  "gpu_hours": hist})
        if tot > 0:
            cdf = np.cumsum(hist) / tot
            for q in (50, 95, 99):
                m[f"thermal.gpu_temp_p{q}_c"] = float(np.searchsorted(cdf, q / 100.0) + 0.5)
        m["thermal.gpu_temp_max_c"] = float(self.tpeak_c)
        tables["thermal_trace"] = self._trace_table()
        tables["throughput_hourly"] = self._throughput_hourly()
        return m, tables

    def _trace_table(self) -> pd.DataFrame:
        cols = ["time_h", "node", "gpu", "temp_c", "tss_c", "tau_s", "power_w", "demand_w", "inlet_c",
                "r_c_per_w", "speed"]
        if not self.trace_rows:
            return pd.DataFrame({c: pd.Series(dtype=np.float64) for c in cols})
        arr = np.vstack(self.trace_rows)
        df = pd.DataFrame(arr, columns=cols)
        df["node"] = df["node"].astype(np.int32)
        df["gpu"] = df["gpu"].astype(np.int16)
        return df

    def _throughput_hourly(self) -> pd.DataFrame:
        """Per hour: effective GPU-hours (GPUs computing × node speed), and the hour's ambient."""
        H = self.H
        hours = int(math.ceil(H))
        t = np.asarray(self._tp_t)
        v = np.asarray(self._tp_v)
        edges = np.arange(hours + 1, dtype=np.float64)
        edges[-1] = H
        # integral of the step function up to each edge
        seg_end = np.append(t[1:], H)
        cum = np.concatenate([[0.0], np.cumsum(v * (seg_end - t))])
        k = np.clip(np.searchsorted(t, edges, side="right") - 1, 0, len(t) - 1)
        at_edge = cum[k] + v[k] * (edges - t[k])
        eff = np.diff(at_edge)
        return pd.DataFrame({"hour": np.arange(hours, dtype=np.int64), "ambient_c": self.ambient_h[:hours],
                             "effective_gpu_hours": eff})

    # =================================================================================== energy
    def _energy(self) -> tuple[dict[str, float], dict[str, pd.DataFrame]]:
        """Exact energy over the horizon from the piecewise-constant IT power and hourly ambient."""
        c = self.spec
        e = c.energy
        H = self.H
        rec = self.engine.recorder
        ts, it = rec.level_series("it_power_w")
        ts2, gpu = rec.level_series("gpu_power_w")
        if len(ts) == 0:
            ts, it, ts2, gpu = np.zeros(1), np.zeros(1), np.zeros(1), np.zeros(1)
        bp = np.union1d(ts[ts < H], np.arange(0.0, H, 1.0))
        ends = np.append(bp[1:], H)
        dur = ends - bp
        it_v = it[np.searchsorted(ts, bp, side="right") - 1]
        gpu_v = gpu[np.searchsorted(ts2, bp, side="right") - 1]
        amb = self.ambient_h[np.minimum(bp.astype(np.int64), self.n_hours - 1)]
        cop = np.maximum(e.cop_min, e.chiller_cop - e.cop_slope_per_c * (amb - e.cop_ref_c))
        if self.type == "air":
            air_heat, liq_heat = it_v, np.zeros_like(it_v)
        elif self.type == "liquid":
            air_heat, liq_heat = np.zeros_like(it_v), it_v
        else:
            air_heat, liq_heat = it_v - gpu_v, gpu_v
        cool = np.zeros_like(it_v)
        m: dict[str, float] = {}
        hours_free: dict[str, float] = {}
        if self.air is not None:
            free = amb <= self.air.supply_c - self.air.free_cooling_approach_c
            cool += air_heat * (self.air.fan_kw_per_kw + np.where(free, 0.0, 1.0 / cop))
            hours_free["air"] = float(dur[free].sum())
        if self.liquid is not None:
            free = amb <= self.liquid.supply_c - self.liquid.free_cooling_approach_c
            cool += liq_heat * (self.liquid.pump_kw_per_kw + np.where(free, 0.0, 1.0 / cop))
            hours_free["liquid"] = float(dur[free].sum())
        facility = (it_v / e.ups_efficiency + cool) / e.transformer_efficiency
        losses = facility - it_v - cool
        it_kwh = float((it_v * dur).sum()) / 1000.0
        cool_kwh = float((cool * dur).sum()) / 1000.0
        loss_kwh = float((losses * dur).sum()) / 1000.0
        fac_kwh = float((facility * dur).sum()) / 1000.0
        m["energy.it_kwh"] = it_kwh
        m["energy.cooling_kwh"] = cool_kwh
        m["energy.losses_kwh"] = loss_kwh
        m["energy.facility_kwh"] = fac_kwh
        m["pue"] = fac_kwh / it_kwh if it_kwh > 0 else math.nan
        pos = dur > 0
        m["energy.peak_it_kw"] = float(it_v[pos].max()) / 1000.0 if pos.any() else 0.0
        m["energy.peak_facility_kw"] = float(facility[pos].max()) / 1000.0 if pos.any() else 0.0
        for k, v in hours_free.items():
            m[f"energy.free_cooling_hours.{k}"] = v
        day = (bp // 24.0).astype(np.int64)
        nd = int(day.max()) + 1 if len(day) else 0

        def per_day(x: NDArray[np.float64]) -> NDArray[np.float64]:
            return np.bincount(day, weights=x * dur, minlength=nd) / 1000.0

        d_it, d_cool, d_loss, d_fac = per_day(it_v), per_day(cool), per_day(losses), per_day(facility)
        d_amb = np.bincount(day, weights=amb * dur, minlength=nd) / np.maximum(
            np.bincount(day, weights=dur, minlength=nd), 1e-300)
        with np.errstate(invalid="ignore", divide="ignore"):
            d_pue = np.where(d_it > 0, d_fac / d_it, np.nan)
        daily = pd.DataFrame({"day": np.arange(nd, dtype=np.int64), "ambient_mean_c": d_amb, "it_kwh": d_it,
                              "cooling_kwh": d_cool, "losses_kwh": d_loss, "facility_kwh": d_fac, "pue": d_pue})
        return m, {"pue_daily": daily}


__all__ = ["ITPower", "Thermal"]
