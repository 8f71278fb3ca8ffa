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
  has a fan, its room is below ``max_inlet_c``, its GPUs would not trip at P_min, and its air zone
  could carry every node in service, those rebooting and this one at full load (so restarts never
  overload a zone).
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
* **Energy**: IT power is piecewise constant between events (``engine.it_power``, the shared
  ``twin.model.power.ITPower``, recorder level ``site_power_w``); facility energy is its exact
  integral with hourly ambient (COP, free cooling), fan/pump power and UPS/transformer losses,
  computed at the end over the merged breakpoints.
* **Cost**: load changes of *cool* nodes (no GPU could reach slowdown even at full power under their
  current inlet and R) cannot throttle or trip them; they are logged and replayed in one vectorised
  batch (``_flush_log``) before anything else thermal happens to those nodes, so a job's checkpoint
  pause costs a few list appends (plus, while an air zone cannot carry all its nodes at full load,
  their heat, which moves that zone's room at once). A cool node going down or coming back (with no
  tripped node waiting for room) is logged the same way. The replay solves the first-order
  recurrence once per *cell* of nodes that saw the same entries (a job's nodes), and per (node,
  entry) pair for the rest. Everything else goes through ``_update`` (one vector operation over the
  nodes' GPUs). Tests check the paths agree.
* **Thermal units**: with identical GPUs (``r_sigma`` 0) one array element stands for a node's g GPUs
  (same equations, g times fewer elements); with a spread, one element per GPU.
"""

from __future__ import annotations

import bisect

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy.special import ndtri

from twin import rng
from twin.errors import InputError
from twin.model.engine import Topic
from twin.model.parts import FacilityParts
from twin.model.power import ITPower
from twin.physics import thermal as phys

if TYPE_CHECKING:  # pragma: no cover
    from twin.sim import Model

INF = math.inf
TRIP = "thermal_trip"
ASHRAE_RECOMMENDED_MAX_C = 27.0  # ASHRAE recommended inlet 18–27 °C (sources.md)
_EPS_C = 1e-6  # temperature tolerance at a crossing, °C
_EPS_H = 1e-12  # time tolerance for due crossings, hours
_HIST_MAX_C = 160


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
        self._env = eng.env
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
        # thermal units: one per GPU when GPUs differ (r_sigma > 0), else one per node standing for its
        # g identical GPUs (same equations, g times fewer array elements); w GPUs per unit
        self.u = u = g if c.gpu.r_sigma > 0 else 1
        self.w = float(g // u)
        self.G = n * u
        self._ar = np.arange(u)
        self._all = np.arange(n, dtype=np.int64)
        self.speed_caps = eng.speed_cap("thermal") if self.on else np.ones(n)
        gp, gpw = c.gpu, sc.cluster.node.gpu  # thermal figures, power figures (declared once, cluster.node)
        self.idle_w = float(gpw.idle_w)
        self.tdp_w = gpw.tdp_w
        self.pmin_w = gpw.min_w
        self.slow_c = gp.slowdown_c
        self.shut_c = gp.shutdown_c
        self.alpha = gpw.speed_alpha
        self.C = gp.c_j_per_c
        self.non_gpu_w = sc.cluster.node.non_gpu_w
        self.max_inlet_c = c.node.max_inlet_c
        self.reboot_h = c.node.reboot_h
        H = eng.horizon_h
        self.H = H
        self.n_hours = int(math.ceil(H)) + 1
        if c.ambient.csv is not None and c.ambient.csv._values is None:
            raise InputError("scenario", "cooling.ambient.csv.file",
                             "the ambient CSV was not loaded (load the scenario with twin.scenario.load_scenario)")
        self.ambient_h = c.ambient.hourly_c(self.n_hours)

        # ---- IT power: one source of truth, shared with the power chain (twin.model.power.ITPower) ----
        it = getattr(eng, "it_power", None)
        if it is None:
            it = ITPower(eng, cl, g, self.idle_w, self.tdp_w, self.non_gpu_w)
            eng.it_power = it  # type: ignore[attr-defined]
        self.it = it
        self._it_caps = it.cap_of("thermal")  # read here; written through it.set_cap
        self._pcap = np.full(self.cluster.n_nodes, INF)  # per node: the power-chain GPU cap (W) last applied
        self._n_pcap = 0  # nodes with a finite one
        self._in_update = 0  # depth of _update calls (a NODE_SPEED inside one waits for its end)
        self._speed_later: list[NDArray[np.int64]] = []

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
            # capacity factor of the CRAH units in each hour (derating above the design ambient)
            self._derate_h: list[float] = np.maximum(0.0, 1.0 - a.derate_per_c * np.maximum(
                0.0, self.ambient_h - a.design_ambient_c)).tolist()
            self._crah_w = self.crah_healthy * a.crah.capacity_kw * 1000.0  # healthy capacity before derating, W
            self.z_cap = self._crah_w * self._derate_at(0.0)
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
            digs = rng.path_digests(f"{cl.node_path(i // u)}.gpu{i % u}#thermal_r" for i in range(G))
            unif = eng.streams.uniforms(digs, np.zeros(G, dtype=np.int64))
            self.rspread = np.exp(gp.r_sigma * ndtri(unif))
        self.rbase = base_r * self.rspread
        self.rfactor = np.ones(n)  # node multiplier of R: fans (air) or no-flow (liquid)
        self.inlet = np.empty(n)  # GPU inlet (held air supply, or coolant supply), °C
        if self.gpu_on_liquid:
            assert self.liquid is not None
            self.inlet[:] = self.liquid.supply_c
        else:
            assert self.air is not None
            self.inlet[:] = self.air.supply_c
        tin0 = np.repeat(self.inlet, u)
        R0 = self.rbase.copy()
        self.T = tin0 + self.idle_w * R0
        self.t0 = np.zeros(G)
        self.tss = self.T.copy()
        self.tau = R0 * self.C
        self.engaged = np.zeros(G, dtype=bool)
        self.speed = np.ones(G)
        self.gon = np.ones(G, dtype=bool)  # GPU powered during [t0, now]
        self.t_next = np.full(G, INF)
        self.kind = np.zeros(G, dtype=np.int8)  # 1 slowdown crossing, 2 shutdown crossing
        self._wake_t = INF
        self._wake_gen = 0
        self._n_hot = 0  # > 0 while some unit may be capped, engaged or heading for a crossing
        self._acc_hot = False
        self._tp_hot = False
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
        self._tp_t: list[float] = [0.0]  # effective GPUs: times of changes, h (not in order: see _replay_log)
        self._tp_dv: list[float] = [0.0]  # … and the changes

        # ---- trips ---------------------------------------------------------------------------------
        self.tripped: dict[int, tuple[float, str]] = {}
        self._tripped_order: list[int] = []  # the keys of tripped, kept sorted (restart checks go in node order)
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
                    "gpu": (idx // per) * u + ((idx % per) % g) * u // g if per == g else None,
                    "age": np.zeros(pop.n), "t": np.zeros(pop.n), "af": np.ones(pop.n),
                    "tfail": np.full(pop.n, INF), "life": np.zeros(pop.n),
                })
        self._age_wake_t = INF
        self._age_gen = 0

        # ---- deferred load changes of cool nodes ---------------------------------------------------
        # A node is *cool* when even full power cannot take any of its GPUs to the slowdown temperature
        # under its current inlet and R, and it is neither traced nor ageing-accelerated. Its load changes
        # then cannot throttle or trip it, so they are only logged (time, nodes, utilisations) and replayed
        # in one vectorised batch (histogram, GPU state, busy and throughput integrals) before anything
        # else thermal happens. Only their heat is applied at once, while some air zone cannot carry all
        # its nodes at full load (that zone's room moves with it).
        self.rmax_n = self.rbase.reshape(n, u).max(axis=1)
        self._tdp_rmax = self.tdp_w * self.rmax_n  # the first product of _set_cool's test, node-wise
        self.cool = np.zeros(n, dtype=bool)
        self._n_warm = n
        # The log: per entry its time (h), its nodes (the published array itself: NODE_LOAD arrays are never
        # changed after publishing) and their common utilisation; for a cool node's change of service (a
        # one-node entry) whether it came up; with a second speed source (the power model's caps), the
        # nodes' speeds at the logged time (a speed change flushes the log only after the cap moved).
        # Joined into per-(node, entry) arrays at the flush.
        self._log_t: list[float] = []
        self._log_nodes: list[NDArray[np.int64]] = []
        self._log_util: list[float] = []
        self._log_up: dict[int, bool] = {}  # entries that are a node's change of service: up or not
        self._log_sp: dict[int, NDArray[np.float64]] = {}
        # arrays of load changes split into warm and cool nodes, by id: (array, its cool flags, warm, cool)
        self._split: dict[int, tuple[Any, NDArray[np.bool_], NDArray[np.int64], NDArray[np.int64]]] = {}
        self._nd_dtype = np.int16 if n < 2**15 else np.int64  # int16 keys sort by radix
        self._tracing = self.trace_from <= 0.0 < self.trace_to
        self._multi_speed = False  # set in start()
        if self.air is not None:
            full = self._air_heat_w(self.tdp_w, 1.0)  # a node at full load
            self.z_full = np.array([(e - s) * full for s, e in self.zones], dtype=np.float64)
            self.z_slack = self.z_full <= self.z_cap
        self._n_short = 0 if self.air is None else int(np.count_nonzero(~self.z_slack))  # zones without slack

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
        # a second speed source (the power model's caps; sources are made while the models are built)
        self._multi_speed = len(eng.speed_caps) > 1
        for a in self.aged:
            pop = a["pop"]
            a["life"][:] = pop.life_h
            for i in range(pop.n):  # the population scheduled AF = 1 failures: cancel them, we own the clock
                pop.reschedule(i, INF)
        self._update(np.arange(self.N))
        self._set_cool(self._all)
        traced = np.flatnonzero(self.trace_mask)
        if len(traced):  # traced nodes take the full path (one row per update) inside the window only
            if 0.0 < self.trace_from < self.H:
                eng.call_at(self.trace_from, lambda: self._set_tracing(True, traced))
            if 0.0 < self.trace_to < self.H:
                eng.call_at(self.trace_to, lambda: self._set_tracing(False, traced))
        if self.air is not None:
            for z in range(len(self.zones)):
                self._retarget(z)
            # hourly capacity changes: only at hours where the derating factor changes
            a = self.air
            f = np.maximum(0.0, 1.0 - a.derate_per_c * np.maximum(0.0, self.ambient_h - a.design_ambient_c))
            self._hours = [int(k) for k in np.flatnonzero(f[1:] != f[:-1]) + 1 if k < self.H]
            self._f_hours = f[self._hours]  # the capacity factor from each of those hours on
            self._hour_gen = 0
            self._schedule_hour(0)

    def finish(self) -> None:
        if not self.on:
            return
        self._flush_log()
        H = self.H
        self._integrate(H)
        self._flush_histogram(H)
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
        return (nodes[:, None] * self.u + self._ar).ravel()

    def _update(self, nodes: NDArray[np.int64]) -> None:
        """:meth:`_update_now`; a change of power-chain caps it sets off (its thermal cap moves the site
        cap, whose speeds come back as NODE_SPEED) is taken after it, not inside it."""
        self._in_update += 1
        try:
            self._update_now(nodes)
        finally:
            self._in_update -= 1
        if not self._in_update and self._speed_later:
            later = self._speed_later
            self._speed_later = []
            self._on_speed(later[0] if len(later) == 1 else np.unique(np.concatenate(later)))

    def _update_now(self, nodes: NDArray[np.int64]) -> None:
        """Bring the GPUs of ``nodes`` to now and apply their current power, inlet and R (one vector op).
        (A caller that changed what makes nodes cool, their inlet, R, zone slack or tracing, recomputes
        their flags after it: ``_set_cool``.)

        A contiguous run of nodes (a packed job, a zone, a loop) is addressed by slices; the common case
        where no GPU of the set is near its slowdown temperature takes a short path without caps.
        """
        n = len(nodes)
        if not n:
            return
        self._flush_for(nodes)
        now = self.engine.now
        g = self.g
        u = self.u
        n0 = int(nodes[0])
        n1 = int(nodes[-1])
        if n1 - n0 + 1 == n:
            nsl: Any = slice(n0, n1 + 1)
            gsl: Any = slice(n0 * u, (n1 + 1) * u)
            nodes = self._all[nsl]
        else:
            nsl = nodes
            gsl = self._gpus(nodes)
        # temperature now, from the last state; GPU-hours by steady-state temperature (τ ≪ intervals)
        tss_old = self.tss[gsl]
        dt_h = now - self.t0[gsl]
        T = tss_old + (self.T[gsl] - tss_old) * np.exp(dt_h * -3600.0 / self.tau[gsl])
        bins = np.minimum(np.maximum(tss_old, 0.0), _HIST_MAX_C - 1).astype(np.intp)  # = np.clip (no NaN)
        self.hist += np.bincount(bins, weights=dt_h * self.gon[gsl], minlength=_HIST_MAX_C) * self.w
        # new conditions
        up_n = self.cluster.down_count[nsl] == 0
        util = self.engine.node_util[nsl]
        pd_n = (self.idle_w + (self.tdp_w - self.idle_w) * util) * up_n
        # what the GPUs draw before any thermal cap: their demand, or less under a power-chain cap (a site
        # cap, a lost PSU or feed); the thermal cap, if it binds, is below this, and speeds are relative
        # to the demand (so the engine's lower of the thermal and power speeds is the node's speed)
        draw_n = pd_n
        if self._n_pcap or self.it.others_capped("thermal"):
            pc = self.it.min_cap(nodes, exclude="thermal")
            self._n_pcap += int(np.isfinite(pc).sum()) - int(np.isfinite(self._pcap[nsl]).sum())
            self._pcap[nsl] = pc
            draw_n = np.minimum(pd_n, pc)
        if u == 1:
            R = self.rbase[gsl] * self.rfactor[nsl]
            tin = self.inlet[nsl]
            pd, draw = pd_n, draw_n
            self.gon[gsl] = up_n
        else:
            R = self.rbase[gsl] * np.repeat(self.rfactor[nsl], u)
            tin = np.repeat(self.inlet[nsl], u)
            pd = np.repeat(pd_n, u)
            draw = pd if draw_n is pd_n else np.repeat(draw_n, u)
            self.gon[gsl] = np.repeat(up_n, u)
        tss = tin + draw * R
        need = tss > self.slow_c
        self.T[gsl] = T
        self.t0[gsl] = now
        self.tau[gsl] = R * self.C
        caps = self.speed_caps
        busy_n = (up_n & (util > 0.0)) * float(g)
        # (np.count_nonzero: the cheapest any() of a small boolean array)
        short = not np.count_nonzero(need) and not np.count_nonzero(self.engaged[gsl])
        if short:
            # short path: every GPU runs at its demand, speed 1, no crossing ahead
            self.tss[gsl] = tss
            if self._n_hot:
                self.t_next[gsl] = INF
                self.speed[gsl] = 1.0
            P = draw
            sp_n: Any = 1.0
            capped_n = 0.0
            spsum_n = busy_n
            it_caps: Any = INF
            tmax = float(T.max())
        else:
            self._n_hot += 1
            engage = need & (self.engaged[gsl] | (T >= self.slow_c - _EPS_C))
            P = np.where(engage, np.minimum(phys.power_cap_w(pd, tin, R, self.slow_c, self.pmin_w), draw), draw)
            capped = engage & (P < draw)
            speed = np.where(capped, phys.speed_fraction(P, pd, self.idle_w, self.alpha), 1.0)
            tss = tin + P * R
            tau = R * self.C
            # next crossing: slowdown for free GPUs heading above it, shutdown for capped ones settling above it
            t_cross = np.full(len(tss), INF)
            kind = np.zeros(len(tss), dtype=np.int8)
            free_up = need & ~engage
            if free_up.any():
                t_cross[free_up] = phys.crossing_time_s(T[free_up], tss[free_up], self.slow_c, tau[free_up])
                kind[free_up] = 1
            hot = engage & (tss > self.shut_c)
            if hot.any():
                ts = np.asarray(phys.crossing_time_s(T[hot], tss[hot], self.shut_c, tau[hot]), dtype=np.float64)
                t_cross[hot] = np.where(T[hot] >= self.shut_c - _EPS_C, 0.0, ts)
                kind[hot] = 2
            t_next = now + t_cross / 3600.0
            self.tss[gsl] = tss
            self.engaged[gsl] = engage
            self.speed[gsl] = speed
            self.t_next[gsl] = t_next
            self.kind[gsl] = kind
            sp_n = speed.reshape(-1, u).min(axis=1)
            capped_g = capped.reshape(-1, u)
            busy_g = (busy_n > 0)[:, None]
            capped_n = (busy_g & capped_g).sum(axis=1) * self.w
            spsum_n = np.where(busy_g, speed.reshape(-1, u), 0.0).sum(axis=1) * self.w
            # the node's thermal cap as the per-GPU mean of its powers: exact for the node's total while the
            # thermal cap is the tightest (a stated approximation when PSU caps bind on the same node)
            it_caps = np.where(capped_g.any(axis=1), P.reshape(-1, u).mean(axis=1), INF)
            tmax = float(T.max())
            m = float(t_next.min())
            if m < self._wake_t:
                self._schedule_wake(m)
        if tmax > self.tpeak_c:
            self.tpeak_c = tmax
        # IT power (the shared ITPower) when the thermal cap of these nodes changed
        if self._n_hot and np.any(self._it_caps[nsl] != it_caps):
            self.it.set_cap("thermal", nodes, it_caps)
        # air-zone heat: demanded power of the nodes in service
        if self.air is not None:
            self._zone_heat(nsl, nodes, self._air_heat_w(draw_n, up_n))
        self._account(nsl, nodes, busy_n, capped_n, spsum_n)
        if self.aged:
            self._age_update(nodes)
        if self.trace_from <= now <= self.trace_to and np.count_nonzero(self.trace_mask[nsl]):
            self._trace(nodes, T, P, pd, tin, R)
        # the node's speed is its slowest GPU's (nodes in service only; a down node keeps its last cap)
        if self._n_hot:
            changed = up_n & (caps[nsl] != sp_n)
            if np.count_nonzero(changed):
                ch = nodes[changed]
                caps[ch] = sp_n[changed] if not isinstance(sp_n, float) else sp_n
                self.engine.bus.publish(Topic.NODE_SPEED, ch)
            if short and self._n_hot_check():
                self._n_hot = 0

    def _flush_for(self, nodes: NDArray[np.int64] | slice) -> None:
        """Replay the log if it may hold changes of ``nodes`` (indices or a slice), before their state or
        conditions change. Only cool nodes are logged, and a node turns warm only through ``_set_cool``
        after such a call (or after a full flush): so the log is replayed when one of ``nodes`` is cool,
        and otherwise left alone (a traced node, or a warm zone, does not replay everybody else's log)."""
        if self._log_t and np.count_nonzero(self.cool[nodes]):
            self._flush_log()

    def _zone_heat(self, nsl: Any, nodes: NDArray[np.int64], heat: Any) -> None:
        """Set the air heat (W) of ``nodes`` (``nsl``: the same as indices or a slice) and move the room
        of every zone among theirs that cannot carry all its nodes at full load."""
        self.node_air_w[nsl] = heat
        if isinstance(nsl, slice):  # zone_of does not decrease with the node index
            z0, z1 = int(self.zone_of[nsl.start]), int(self.zone_of[nsl.stop - 1])
        else:
            zl = self.zone_of[nodes]
            z0, z1 = int(zl.min()), int(zl.max())
        for z in range(z0, z1 + 1):
            if self.z_slack[z]:
                continue  # could carry all its nodes at full load: its heat cannot move the room
            s, e = self.zones[z]
            q = float(self.node_air_w[s:e].sum())
            if q != self.z_q[z]:
                self.z_q[z] = q
                self._retarget(z)

    def _air_heat_w(self, gpu_w: Any, up: Any) -> Any:
        """Heat (W) nodes give their air zone: non-GPU power, plus the GPUs' in an air-cooled hall, of the
        nodes in service (``gpu_w``: power per GPU, W; ``up``: in service)."""
        return (self.non_gpu_w + (gpu_w * self.g if self.type == "air" else 0.0)) * up

    def _logged_heat(self, nodes: NDArray[np.int64], util: float, move: bool = True) -> None:
        """The air heat of logged (cool) nodes at their load change or change of service, applied at once
        while some zone cannot carry its full load (their GPUs' state waits for the replay); ``move``
        False: only set it (the rest of their load change comes next)."""
        up = self.cluster.down_count[nodes] == 0
        pd = (self.idle_w + (self.tdp_w - self.idle_w) * util) * up  # (as _update computes it)
        heat = self._air_heat_w(pd, up)
        if move:
            self._zone_heat(nodes, nodes, heat)
        else:
            self.node_air_w[nodes] = heat

    def _n_hot_check(self) -> bool:
        """True when no unit anywhere is engaged, capped or heading for a crossing (short paths suffice)."""
        return (not self.engaged.any() and not np.isfinite(self.t_next).any() and not self.n_capped.any()
                and bool((self.speed_caps == 1.0).all()) and bool(np.isinf(self._it_caps).all()))

    def _set_tracing(self, on: bool, traced: NDArray[np.int64]) -> None:
        self._flush_for(traced)
        self._tracing = on
        if on:
            self._update(traced)  # a first row at the window start
        self._set_cool(traced)

    def _set_cool(self, nodes: NDArray[np.int64] | slice) -> None:
        """Recompute the cool flag of ``nodes`` (indices or a slice; see the constructor) and the count of
        warm nodes."""
        ok = self.inlet[nodes] + self._tdp_rmax[nodes] * self.rfactor[nodes] < self.slow_c
        ok &= ~np.isfinite(self._pcap[nodes])  # under a power-chain cap: followed directly
        if self._tracing:
            ok &= ~self.trace_mask[nodes]
        if self.aged:
            ok[:] = False
        self.cool[nodes] = ok
        self._n_warm = self.N - int(np.count_nonzero(self.cool))

    def _flush_log(self) -> None:
        """Replay the logged load changes of cool nodes in one vectorised batch.

        Between flushes a cool node's power, inlet, R and up state change only at its logged times, so
        its GPUs follow exact first-order segments: the temperature histogram gets each segment's
        GPU-hours at its steady state, and the temperature after the last change solves the linear
        recurrence T_i = a_i·T_(i−1) + (1 − a_i)·T_ss,(i−1), a_i = e^(−Δt_i/τ), in closed form
        (T_last = A·T_0 + Σ_i (1 − a_i)·T_ss,(i−1)·Π_(j>i) a_j, products as sums of logs ≤ 0). The
        site totals (busy GPUs, Σ speed, effective GPUs) change by the logged steps, integrated exactly.

        Two ways to the same result (up to rounding): nodes that see exactly the same entries — the nodes
        of a job's array logged at each checkpoint pause, split where job arrays overlap — that stayed in
        service and share one R and inlet form a *cell*: after each node's first segment they all see
        the same segments, so the recurrence is solved once per cell (``_replay_cell``, cost per entry).
        Every other (node, entry) pair is replayed per pair (``_replay_pairs``). Busy counts are whole
        numbers of GPUs, so their per-entry changes add up exactly in any order. The peak temperature is
        the direct path's: the hottest temperature at any logged time (a first-order segment is hottest at
        one of its ends), followed only while some steady state lies above the peak so far.
        """
        if not self._log_t:
            return
        log_t, log_u, arrs, ups, sps = self._log_t, self._log_util, self._log_nodes, self._log_up, self._log_sp
        self._log_t, self._log_nodes, self._log_util = [], [], []
        self._log_up, self._log_sp = {}, {}
        K = len(log_t)
        step = self._CHUNK
        if K <= step:
            self._replay_log(np.array(log_t), np.array(log_u), arrs, ups, sps)
            return
        # a long log in consecutive chunks (the same result up to rounding; more nodes make cells in a
        # shorter stretch of time, where fewer of them also ran a small job or went down)
        up_i, sp_i = sorted(ups), sorted(sps)
        for c0 in range(0, K, step):
            c1 = min(K, c0 + step)
            cu = {i - c0: ups[i] for i in up_i[bisect.bisect_left(up_i, c0):bisect.bisect_left(up_i, c1)]}
            cs = {i - c0: sps[i] for i in sp_i[bisect.bisect_left(sp_i, c0):bisect.bisect_left(sp_i, c1)]}
            self._replay_log(np.array(log_t[c0:c1]), np.array(log_u[c0:c1]), arrs[c0:c1], cu, cs)

    _CHUNK = 2048  # log entries replayed together at most (cost; results: rounding)

    def _replay_log(self, tk: NDArray[np.float64], ut: NDArray[np.float64], arrs: list[NDArray[np.int64]],
                    ups: dict[int, bool], sps: dict[int, NDArray[np.float64]]) -> None:
        """Replay log entries at times ``tk`` (h, ascending) with utilisations ``ut`` over the node arrays
        ``arrs``; ``ups``: the entries that are a node's change of service (up or not), ``sps``: the nodes'
        speeds where logged, by entry index (see ``_flush_log``). A node's service between its own changes
        is the last change's, or at the first entry its state when the log began (``gon``): every change of
        service of a logged (cool) node is logged or replays the log first."""
        k = len(tk)
        lens = np.fromiter(map(len, arrs), dtype=np.int64, count=k)  # pairs of each entry (≥ 1)
        pos = lens.cumsum() - lens  # each entry's first pair
        # every (node, entry) pair in time order; changes of service and speeds per pair where logged
        nd = np.concatenate(arrs, dtype=self._nd_dtype, casting="unsafe")  # (node numbers fit the type)
        pe = np.arange(k, dtype=np.int32).repeat(lens)
        M = len(nd)
        st: NDArray[np.int8] | None = None  # per pair: 1 / 0 a change to up / down, −1 a load change
        if ups:
            st = np.full(M, -1, dtype=np.int8)
            st[pos[np.fromiter(ups, dtype=np.int64, count=len(ups))]] = np.fromiter(
                ups.values(), dtype=np.int8, count=len(ups))  # (single-node entries)
        sp: NDArray[np.float64] | None = None  # None: no speed logged (a single speed source)
        if sps:  # entries logged before a second speed source existed were all at speed 1
            sp = np.ones(M)
            for i, a in sps.items():
                sp[pos[i]:pos[i] + lens[i]] = a
        dbusy_k = np.zeros(k)  # change of busy GPUs at each entry
        several_speeds = self._multi_speed
        cells: list[tuple[NDArray[np.int64], NDArray[np.int64]]] = []
        if self.u == 1 and not several_speeds:
            cells, in_cell = self._cells(arrs, lens, nd, pe)
            if cells:
                keep = ~in_cell[nd]
                nd, pe = nd[keep], pe[keep]
                st = st[keep] if st is not None else None
        dtp_k = None
        if len(nd):
            dtp_k = self._replay_pairs(tk, ut, nd, pe, st, sp, dbusy_k, several_speeds)
        for entries, nodes in cells:
            self._replay_cell(tk[entries], ut[entries], nodes, entries, dbusy_k)
        # ---- site totals and their integrals. The integrals may already run past some entries (the direct
        # path integrates up to its own events without flushing logs of other nodes): each entry's change
        # counts from its time to the end, the totals before it over the rest.
        tot, acc = self._tot, self._acc
        t_end = max(self._t_acc, float(tk[-1]))
        held = t_end - tk  # how long each entry's change has held by t_end (≥ 0)
        span = t_end - self._t_acc
        db = float(dbusy_k.sum())  # whole numbers: exact
        ib = float((dbusy_k * held).sum())
        dtp_k = dtp_k if dtp_k is not None else dbusy_k  # every speed 1: effective GPUs = busy GPUs
        acc[0] += tot[0] * span + ib
        if tot[1] != 0.0:  # else the addend is ±0 and leaves acc[1] (≥ +0) unchanged
            acc[1] += tot[1] * span
        acc[2] += tot[2] * span + ib
        acc[3] += tot[3] * span + float((dtp_k * held).sum())
        tot[0] += db
        tot[2] += db
        tot[3] += float(dtp_k.sum())
        self._t_acc = t_end
        self._tp_t.extend(tk.tolist())
        self._tp_dv.extend(dtp_k.tolist())

    _CELL_MIN_PAIRS = 256  # a cell must stand for at least this many (node, entry) pairs (cost; results: rounding)

    def _cells(self, arrs: list[NDArray[np.int64]], lens: NDArray[np.int64], nd: NDArray[Any],
               pe: NDArray[np.int32]) -> tuple[list[tuple[NDArray[np.int64], NDArray[np.int64]]], NDArray[np.bool_]]:
        """The cells of the log (see ``_flush_log``), as (entries ascending, nodes), and a mask of their nodes.

        Only node arrays logged at least twice with at least 8 nodes (a job's array at its checkpoint
        pauses) make cells: a node in one of those and nowhere else, in service at all its entries, is
        grouped with the nodes in exactly the same such arrays; the rest go pair by pair."""
        k = len(arrs)
        N = self.N
        in_cell = np.zeros(N, dtype=bool)
        big_i = np.flatnonzero(lens >= 8)
        if len(big_i) < 2:
            return [], in_cell
        # the entries of each array logged at least twice (by identity), arrays in the order they were
        # first logged (a dict for a short log, one unique for a long one: the same groups)
        if len(big_i) <= 64:
            by_id: dict[int, list[int]] = {}
            for i in big_i.tolist():
                by_id.setdefault(id(arrs[i]), []).append(i)
            big = [np.array(e, dtype=np.int64) for e in by_id.values() if len(e) >= 2]
        else:
            ids = np.fromiter(map(id, map(arrs.__getitem__, big_i.tolist())), dtype=np.uint64, count=len(big_i))
            _, first, inv, cnt = np.unique(ids, return_index=True, return_inverse=True, return_counts=True)
            per_array = np.split(big_i[inv.reshape(-1).argsort(kind="stable")], cnt.cumsum()[:-1].tolist())
            big = [per_array[a] for a in first.argsort().tolist() if cnt[a] >= 2]
        if not big:
            return [], in_cell
        big_entry = np.zeros(k, dtype=bool)
        W = (len(big) + 63) // 64
        sig = np.zeros((N, W), dtype=np.uint64)  # bit j: the node is in big array j
        for j, e in enumerate(big):
            big_entry[e] = True
            sig[arrs[int(e[0])], j >> 6] |= np.uint64(1 << (j & 63))  # (an array holds each node once)
        other = ~self.gon  # out of service when the log began (one unit per node here) ...
        other[nd[~big_entry[pe]]] = True  # ... or in another entry (changes of service are single-node entries)
        cand = np.flatnonzero(sig.any(axis=1) & ~other)
        if not len(cand):
            return [], in_cell
        if W == 1:  # (a 1-d unique is several times faster than unique rows)
            k1, inv, cnt = np.unique(sig[cand, 0], return_inverse=True, return_counts=True)
            keys = k1[:, None]
        else:
            keys, inv, cnt = np.unique(sig[cand], axis=0, return_inverse=True, return_counts=True)
        members = cand[inv.reshape(-1).argsort(kind="stable")]
        ends = cnt.cumsum()
        R = self.rbase[members] * self.rfactor[members]
        tin = self.inlet[members]
        cells = []
        for c in range(len(keys)):
            s, e = int(ends[c] - cnt[c]), int(ends[c])
            js = [64 * w + b for w, word in enumerate(keys[c].tolist()) for b in range(64) if word >> b & 1]
            n_entries = sum(len(big[j]) for j in js)
            if (e - s) * n_entries < self._CELL_MIN_PAIRS:
                continue
            if np.count_nonzero(R[s:e] != R[s]) or np.count_nonzero(tin[s:e] != tin[s]):
                continue
            entries = big[js[0]] if len(js) == 1 else np.sort(np.concatenate([big[j] for j in js]))
            nodes = members[s:e]
            cells.append((entries, nodes))
            in_cell[nodes] = True
        return cells, in_cell

    def _replay_cell(self, t: NDArray[np.float64], U: NDArray[np.float64], nodes: NDArray[np.int64],
                     entries: NDArray[np.int64], dbusy_k: NDArray[np.float64]) -> None:
        """Replay one cell (see ``_flush_log``): times ``t`` (h) and utilisations ``U`` of its entries
        ``entries`` (ascending) over ``nodes``, one thermal unit per node, all in service; adds the cell's
        changes of busy GPUs to ``dbusy_k``."""
        n = len(nodes)
        g = self.g
        i0 = int(nodes[0])
        R = float(self.rbase[i0] * self.rfactor[i0])
        tin = float(self.inlet[i0])
        tss = tin + (self.idle_w + (self.tdp_w - self.idle_w) * U) * R  # steady state after each entry
        k_s = -3600.0 / (R * self.C)  # log of the decay per hour
        # each node's first segment: from its own state to the cell's first entry
        tss0 = self.tss[nodes]
        dur0 = t[0] - self.t0[nodes]
        lg0 = dur0 * k_s
        T = np.exp(lg0) * self.T[nodes] - np.expm1(lg0) * tss0
        T1max = float(T.max())  # the hottest node at the first entry
        bins = [tss0]
        wts = [dur0 * self.gon[nodes]]
        lg = np.empty(0)
        if len(t) > 1:  # the segments all its nodes share
            dur = t[1:] - t[:-1]
            lg = dur * k_s
            after = lg[::-1].cumsum()[::-1]  # Σ of the logs from each segment to the last
            G = float(after[0])
            after -= lg  # … after each segment
            S = float((-np.expm1(lg) * tss[:-1] * np.exp(after)).sum())
            T = np.exp(G) * T + S
            bins.append(tss[:-1])
            wts.append(dur * float(n))
        b_all = np.concatenate(bins)
        self.hist += np.bincount(np.clip(b_all, 0.0, _HIST_MAX_C - 1).astype(np.intp),
                                 weights=np.concatenate(wts), minlength=_HIST_MAX_C) * self.w
        self.T[nodes] = T
        self.t0[nodes] = t[-1]
        self.tss[nodes] = tss[-1]
        self.gon[nodes] = True
        # busy GPUs: every node in service, busy while its utilisation is above 0
        b = (U > 0.0).astype(np.float64)
        d = np.empty(len(t))
        d[0] = g * (n * b[0] - np.count_nonzero(self.n_busy[nodes]))
        d[1:] = (g * n) * (b[1:] - b[:-1])
        dbusy_k[entries] += d
        busy_last = g * b[-1]
        self.n_busy[nodes] = busy_last
        self.n_spsum[nodes] = busy_last
        self.n_tp[nodes] = busy_last
        # peak: a first-order segment is hottest at one of its ends, so the peak is the hottest temperature
        # at the entries' times; looked for only when some steady state could exceed the peak so far
        # (temperatures never exceed the larger of where they start and their steady states)
        if float(b_all.max()) > self.tpeak_c:
            # the nodes' temperatures at each entry are one increasing affine map of their temperature at
            # the first, so the hottest node stays the hottest: follow it
            x = peak = T1max
            for a_j, c_j, ts_j in zip(np.exp(lg).tolist(), (-np.expm1(lg)).tolist(), tss[:-1].tolist()):
                x = a_j * x + c_j * ts_j
                if x > peak:
                    peak = x
            if peak > self.tpeak_c:
                self.tpeak_c = peak

    def _replay_pairs(self, tk: NDArray[np.float64], ut: NDArray[np.float64], nd: NDArray[Any],
                      pe: NDArray[np.int32], st: NDArray[np.int8] | None, sp: NDArray[np.float64] | None,
                      dbusy_k: NDArray[np.float64], several_speeds: bool) -> NDArray[np.float64] | None:
        """Replay (node ``nd``, entry ``pe``) pairs (in entry order) grouped by node in time order, with
        their changes of service ``st`` (see ``_replay_log``) and speeds ``sp``; add their changes of busy GPUs to
        ``dbusy_k``. With several speed sources, return the change of effective GPUs at each entry."""
        g, u = self.g, self.u
        k = len(tk)
        M = len(nd)
        # ---- group the pairs by node, stable in time (int16 keys: radix sort)
        # (array methods rather than the np.* wrappers throughout: the same operations, less call overhead)
        o = nd.argsort(kind="stable")
        per_node = np.bincount(nd, minlength=self.N)
        nodes_g = per_node.nonzero()[0]  # the logged nodes, ascending (the groups' order)
        cnt = per_node[nodes_g]
        ends = cnt.cumsum()
        start = ends - cnt  # first pair of each node's group
        lastpos = ends - 1  # last pair of each node's group
        eid_s = pe[o]  # entry of each grouped pair
        t_s = tk[eid_s]
        u_s = ut[eid_s]
        # in service after each pair: its own change of service, else the node's last one before it, else its
        # state when the log began (None: every node in service throughout)
        gon0 = self.gon[nodes_g * u]
        up_s: NDArray[np.bool_] | None = None
        if st is not None or not gon0.all():
            ar = np.arange(M)
            st_s = st[o] if st is not None else np.full(M, -1, dtype=np.int8)
            src = np.where(st_s >= 0, ar, 0)
            src[start] = start  # a node's first pair starts its own run
            src = np.maximum.accumulate(src)  # the last change (or first pair) of the pair's node
            st_src = st_s[src]
            up_s = np.where(st_src >= 0, st_src == 1, gon0.repeat(cnt)[src])
        # ---- busy GPUs: per pair busy or not; n_busy holds 0 or g for every node (see _account)
        b_s = u_s > 0.0
        if up_s is not None:
            b_s &= up_s
        pb = np.empty(M, dtype=bool)  # busy before the pair: the node's previous pair, or its state
        pb[1:] = b_s[:-1]
        pb[start] = self.n_busy[nodes_g] > 0.0
        d = b_s.view(np.int8) - pb.view(np.int8)
        dbusy_k += np.bincount(eid_s, weights=d, minlength=k) * float(g)
        busy_last = b_s[lastpos] * float(g)
        out = None
        if several_speeds:  # speeds other than 1: effective GPUs change by the busy change × speed
            # each pair at its node's speed when it was logged (all 1 if no second source was there yet)
            sp_s = sp[o] if sp is not None else np.ones(M)
            out = np.bincount(eid_s, weights=d * (float(g) * sp_s), minlength=k)
            self.n_tp[nodes_g] = busy_last * sp_s[lastpos]
        else:
            self.n_tp[nodes_g] = busy_last
        self.n_busy[nodes_g] = busy_last
        self.n_spsum[nodes_g] = busy_last
        # ---- per unit: histogram and state
        if u == 1:
            t_u, u_u, up_u = t_s, u_s, up_s
            cnt_u, start_u, last_u, g0 = cnt, start, lastpos, nodes_g
            R_g = (self.rbase * self.rfactor)[g0]
            tin_g = self.inlet[g0]
        else:  # each node's pairs repeated for its units, grouped by unit (stable: in time order)
            gx = (nd[o].astype(np.int64)[:, None] * u + self._ar).ravel()
            ou = np.argsort(gx, kind="stable")
            t_u, u_u = np.repeat(t_s, u)[ou], np.repeat(u_s, u)[ou]
            up_u = np.repeat(up_s, u)[ou] if up_s is not None else None
            cnt_u = np.repeat(cnt, u)
            last_u = cnt_u.cumsum() - 1
            start_u = last_u + 1 - cnt_u
            g0 = (nodes_g[:, None] * u + self._ar).ravel()
            R_g = (self.rbase * np.repeat(self.rfactor, u))[g0]
            tin_g = np.repeat(self.inlet, u)[g0]
        Mu = len(t_u)
        # R and inlet are constant over the log (every change of them flushes first). One value for all the
        # logged units is used as a scalar: x·R is the same product for a scalar as for equal elements.
        R: Any = R_g[0] if not np.count_nonzero(R_g != R_g[0]) else R_g.repeat(cnt_u)
        tin: Any = tin_g[0] if not np.count_nonzero(tin_g != tin_g[0]) else tin_g.repeat(cnt_u)
        pdem = self.idle_w + (self.tdp_w - self.idle_w) * u_u
        tss_new = tin + (pdem * up_u if up_u is not None else pdem) * R  # × True would be × 1.0
        prev_tss = np.empty(Mu)
        prev_tss[1:] = tss_new[:-1]
        prev_tss[start_u] = self.tss[g0]
        dur = np.empty(Mu)  # t_u − the unit's previous time
        np.subtract(t_u[1:], t_u[:-1], out=dur[1:])
        dur[start_u] = t_u[start_u] - self.t0[g0]
        on0 = self.gon[g0]
        if up_u is None and on0.all():
            wts = dur  # powered throughout: dur × True = dur
        else:
            prev_on = np.empty(Mu, dtype=bool)
            if up_u is None:
                prev_on[1:] = True
            else:
                prev_on[1:] = up_u[:-1]
            prev_on[start_u] = on0
            wts = dur * prev_on
        lo, hi = float(prev_tss.min()), float(prev_tss.max())  # the clip changes nothing when within range
        bins = prev_tss if 0.0 <= lo and hi < _HIST_MAX_C else np.clip(prev_tss, 0.0, _HIST_MAX_C - 1)
        self.hist += np.bincount(bins.astype(np.intp), weights=wts, minlength=_HIST_MAX_C) * self.w
        lg = dur * -3600.0
        lg /= R * self.C
        csum = lg.cumsum()
        base = csum[start_u] - lg[start_u]
        P = np.subtract(csum, base.repeat(cnt_u), out=csum)  # Σ of logs from the group's first entry to this one
        G = P[last_u]
        contrib = np.expm1(lg)  # −expm1(lg) · T_ss,prev · e^(G − P), in place
        np.negative(contrib, out=contrib)
        contrib *= prev_tss
        decay = G.repeat(cnt_u)
        decay -= P
        contrib *= np.exp(decay, out=decay)
        T0 = self.T[g0]
        T_last = np.exp(G) * T0 + np.add.reduceat(contrib, start_u)
        self.T[g0] = T_last
        self.t0[g0] = t_u[last_u]
        self.tss[g0] = tss_new[last_u]
        self.gon[g0] = up_u[last_u] if up_u is not None else True
        # peak: the hottest temperature at the pairs' times (a first-order segment is hottest at one of its
        # ends), followed only for units with a steady state above the peak so far (temperatures never
        # exceed the larger of where they start and their steady states)
        if hi > self.tpeak_c:
            hot = np.maximum.reduceat(prev_tss, start_u) > self.tpeak_c
            s0, c0, x = start_u[hot], cnt_u[hot], T0[hot]
            a_all, c_all = np.exp(lg), -np.expm1(lg)
            peak = -INF
            for j in range(int(c0.max())):  # the j-th pair of every such unit at once
                act = c0 > j
                idx = s0[act] + j
                x[act] = a_all[idx] * x[act] + c_all[idx] * prev_tss[idx]
                peak = max(peak, float(x[act].max()))
            if peak > self.tpeak_c:
                self.tpeak_c = peak
        return out

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
            shut_nodes = np.unique(due[kinds == 2] // self.u)
            slow_nodes = np.setdiff1d(np.unique(due[kinds == 1] // self.u), shut_nodes)
            if len(slow_nodes):
                self._update(slow_nodes)
            for node in shut_nodes.tolist():
                if self.cluster.is_up(node):
                    self._trip(node, "gpu_shutdown")
        m = float(self.t_next.min())
        if m < self._wake_t:
            self._schedule_wake(m)

    def _flush_histogram(self, t_h: float) -> None:
        dt_h = t_h - self.t0
        self.hist += np.bincount(np.clip(self.tss, 0.0, _HIST_MAX_C - 1).astype(np.intp),
                                 weights=dt_h * self.gon, minlength=_HIST_MAX_C) * self.w
        self.t0[:] = t_h
        self.T[:] = self.tss + (self.T - self.tss) * np.exp(dt_h * -3600.0 / self.tau)
        self.tpeak_c = max(self.tpeak_c, float(self.T.max()))

    def _trace(self, nodes: NDArray[np.int64], T: NDArray[np.float64], P: NDArray[np.float64],
               pd: NDArray[np.float64], tin: NDArray[np.float64], R: NDArray[np.float64]) -> None:
        gi = self._gpus(nodes)
        sel = np.repeat(self.trace_mask[nodes], self.u)
        k = int(sel.sum())
        rows = np.column_stack([np.full(k, self.engine.now), (gi[sel] // self.u).astype(float),
                                (gi[sel] % self.u).astype(float), T[sel], self.tss[gi[sel]], self.tau[gi[sel]],
                                P[sel], pd[sel], tin[sel], R[sel], self.speed[gi[sel]]])
        self.trace_rows.append(rows)

    # =================================================================================== accounting
    def _integrate(self, now: float) -> None:
        dt = now - self._t_acc
        if dt > 0:
            self._acc += self._tot * dt
            self._t_acc = now

    def _account(self, nsl: Any, nodes: NDArray[np.int64], busy: Any, capped: Any, spsum: Any) -> None:
        self._integrate(self.engine.now)
        tot = self._tot
        d_busy = float((busy - self.n_busy[nsl]).sum())
        tot[0] += d_busy
        self.n_busy[nsl] = busy
        if self._n_hot or self._acc_hot:
            self._acc_hot = bool(self._n_hot)
            tot[1] += float((capped - self.n_capped[nsl]).sum())
            tot[2] += float((spsum - self.n_spsum[nsl]).sum())
            self.n_capped[nsl] = capped
            self.n_spsum[nsl] = spsum
        else:
            tot[2] += d_busy
            self.n_spsum[nsl] = spsum
        if self._multi_speed or self._n_hot or self._tp_hot:
            self._tp_hot = bool(self._n_hot) or self._multi_speed
            self._refresh_tp(nodes)
        elif d_busy != 0.0:  # every speed is 1: effective GPUs = busy GPUs
            self.n_tp[nsl] = busy
            self._tot[3] += d_busy
            self._tp_record(d_busy)

    def _refresh_tp(self, nodes: NDArray[np.int64]) -> None:
        """Effective GPUs (GPUs computing × their node's speed over all sources) for the throughput series."""
        tp = self.n_busy[nodes] * self.engine.node_speed(nodes)
        delta = float((tp - self.n_tp[nodes]).sum())
        if delta != 0.0:
            self._integrate(self.engine.now)
            self.n_tp[nodes] = tp
            self._tot[3] += delta
            self._tp_record(delta)

    def _tp_record(self, delta: float) -> None:
        self._tp_t.append(self.engine.now)
        self._tp_dv.append(delta)

    # =================================================================================== bus handlers
    def _on_load(self, nodes: NDArray[np.int64], util: float) -> None:
        """Load change of ``nodes``: its cool nodes logged (replayed by ``_flush_log``), the others applied.

        ``util`` is the nodes' new common utilisation (Topic.NODE_LOAD). The log keeps the array ``nodes``
        itself (publishers never change it afterwards) and ``util`` (and the nodes' speeds when a second
        source caps them); whether the nodes are in service follows from their own logged changes.
        """
        n = len(nodes)
        if self._n_warm:
            cool = self.cool[nodes]
            k = np.count_nonzero(cool)
            if k != n:
                if not k:
                    self._update(np.asarray(nodes, dtype=np.int64))
                    return
                # some cool, some not (a job with a traced node, or across a warm and a slack zone): the
                # warm ones now, the cool ones logged; the split is kept per array while the flags hold,
                # so the cool part is the same array at each change (a cell for the replay)
                sp = self._split.get(id(nodes))
                if sp is None or sp[0] is not nodes or not np.array_equal(sp[1], cool):
                    if len(self._split) > 1024:
                        self._split.clear()
                    sp = self._split[id(nodes)] = (nodes, cool, np.asarray(nodes[~cool], dtype=np.int64),
                                                   nodes[cool])
                if self._n_short:  # the cool nodes' heat first: the warm ones' update moves the rooms
                    self._logged_heat(sp[3], util, move=False)
                self._update(sp[2])
                nodes = sp[3]
        if not n:
            return  # nothing changed
        log_t = self._log_t
        log_t.append(self._env._now)
        self._log_nodes.append(nodes)
        self._log_util.append(util)  # = engine.node_util[nodes]: the publisher gave them all this value
        if self._multi_speed:  # speeds other than 1 possible: keep them as they are now
            self._log_sp[len(log_t) - 1] = self.engine.node_speed(nodes)
        if self._n_short:  # some air zone cannot carry its full load: its heat moves its room now
            self._logged_heat(nodes, util)

    def _on_speed(self, nodes: NDArray[np.int64]) -> None:
        nodes = np.asarray(nodes, dtype=np.int64)
        if self._in_update:
            self._speed_later.append(nodes)  # (publishers never change the array afterwards)
            return
        self._flush_for(nodes)
        if self._n_pcap or self.it.others_capped("thermal"):
            # a power-chain cap changed what these GPUs draw: their temperatures follow it (directly: a
            # node under such a cap is not cool, see _set_cool); thermal's own speed changes leave it as is
            pc = self.it.min_cap(nodes, exclude="thermal")
            moved = nodes[pc != self._pcap[nodes]]
            if len(moved):
                self._update(moved)
                self._set_cool(moved)
        self._refresh_tp(nodes)

    def _log_state(self, node: int) -> None:
        """Log a cool node's change of service (down or up) like a load change: its utilisation and down
        count now (the replay powers its GPUs off while it is down)."""
        nodes = np.array([node], dtype=np.int64)
        self._log_up[len(self._log_t)] = bool(self.cluster.down_count[node] == 0)
        self._log_t.append(self._env._now)
        self._log_nodes.append(nodes)
        self._log_util.append(float(self.engine.node_util[node]))
        if self._multi_speed:
            self._log_sp[len(self._log_t) - 1] = self.engine.node_speed(nodes)
        if self._n_short:
            self._logged_heat(nodes, float(self.engine.node_util[node]))

    def _on_down(self, node: int, cause: str) -> None:
        if self.cool[node] and not self.tripped:  # nothing to restart, nothing thermal can change now
            self._log_state(node)
            return
        self._update(np.array([node], dtype=np.int64))
        self._try_restarts()

    def _on_up(self, node: int, cause: str) -> None:
        reason = self._instant_trip_reason(node)
        if reason is not None:
            self._trip(node, reason)
            return
        if self.cool[node]:
            self._log_state(node)
            return
        self._update(np.array([node], dtype=np.int64))

    def _on_group(self, node: int, part: str, healthy: int) -> None:
        if part != self.fan_part:
            return
        self._flush_for(slice(node, node + 1))
        self.fans_h[node] = healthy
        if not self.gpu_on_liquid:
            self.rfactor[node] = self.fans_req / healthy if 0 < healthy < self.fans_req else 1.0
        if healthy == 0 and self.cluster.is_up(node) and node not in self.tripped:
            self._trip(node, "no_fan")
            return
        self._update(np.array([node], dtype=np.int64))
        self._set_cool(slice(node, node + 1))
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
        bisect.insort(self._tripped_order, node)
        self.cluster.add_down(node, TRIP)

    def _node_full_air_w(self, node: int) -> float:
        return float(self._air_heat_w(self.tdp_w, 1.0))

    def _cooling_ok(self, node: int) -> bool:
        """Could ``node`` run again: flow, fans, room below the inlet limit, no trip at P_min, zone headroom."""
        return self._cooling_check(node)[0]

    def _cooling_check(self, node: int) -> tuple[bool, bool]:
        """(``_cooling_ok``, whether a False came from a zone-wide condition: the zone's supply air at the
        inlet limit, or no headroom for one more node at full load; these hold for every node of the zone
        at this instant, and admitting nodes only tightens them)."""
        if self.fan_part is not None and self.fans_h[node] == 0:
            return False, False
        if self.liquid is not None and self.gpu_on_liquid and not self.loop_flow[self.loop_of[node]]:
            return False, False
        # the node's hottest GPU: max over its GPUs of R_base·fan factor = (max R_base)·fan factor, exactly
        # (rounding is monotonic, and the factor is positive)
        r = float(self.rmax_n[node] * self.rfactor[node])
        if self.inlet[node] + self.pmin_w * r >= self.shut_c:
            return False, False
        if self.air is not None:
            z = int(self.zone_of[node])
            if self._supply_now(z) >= self.max_inlet_c:
                return False, True
            if not self.z_slack[z]:
                # admit only if the zone could carry every node in service, those rebooting and this one at
                # full load, so restarts never overload a zone (the workload may load them at once)
                s, e = self.zones[z]
                n_up = int(np.count_nonzero(self.cluster.down_count[s:e] == 0))
                full = self._node_full_air_w(node)
                if n_up * full + self.z_reserved[z] + full > self._zone_cap_w(z):
                    return False, True
        return True, False

    def _try_restarts(self) -> None:
        """Schedule a reboot of every tripped node whose cooling would hold now, in node order.

        Once a node of an air zone fails a zone-wide condition, the zone's later nodes are skipped: they
        would fail it too (the same supply air and headroom, and admissions only use headroom up). This
        keeps a hall with one badly overloaded zone from re-checking each of its tripped nodes at every
        event."""
        if not self.tripped:
            return
        order = self._tripped_order  # not changed by this loop (admitting only schedules a reboot)
        i = 0
        while i < len(order):
            node = order[i]
            i += 1
            if node in self.pending:
                continue
            ok, zone_wide = self._cooling_check(node)
            if not ok:
                if zone_wide:  # skip the rest of the zone (a contiguous node range, so a run of `order`)
                    i = bisect.bisect_left(order, self.zones[int(self.zone_of[node])][1], i)
                continue
            self._admit_reboot(node)

    def _admit_reboot(self, node: int) -> None:
        """Schedule the reboot of tripped ``node`` in ``reboot_h``, reserving its full-load heat in its zone."""
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
        del self._tripped_order[bisect.bisect_left(self._tripped_order, node)]
        self.trip_rows.append((node, start, self.engine.now, reason))
        self.cluster.remove_down(node, TRIP)
        self._try_restarts()

    # =================================================================================== air zones
    def _derate_at(self, t_h: float) -> float:
        """Capacity factor of the CRAH units at time ``t_h`` (derating above the design ambient), the
        value max(0, 1 − derate_per_c·max(0, ambient − design_ambient_c)) of the hour, precomputed."""
        return self._derate_h[min(int(math.floor(t_h + 1e-9)), self.n_hours - 1)]

    def _set_caps(self) -> None:
        """Healthy capacity of each zone now; a zone that lost its slack gets its heat recomputed (a zone is
        slack when it could carry all its nodes at full load; while it is, its nodes' heat is not kept)."""
        self.z_cap = self._crah_w * self._derate_at(self.engine.now)
        slack = self.z_full <= self.z_cap
        changed = slack != self.z_slack
        if not np.count_nonzero(changed):
            return
        self.z_slack = slack
        self._n_short = int(np.count_nonzero(~slack))
        for z in np.flatnonzero(changed & ~slack).tolist():
            # the zone's heat matters again: recompute it from the nodes' state now
            s, e = self.zones[z]
            up = self.cluster.down_count[s:e] == 0
            pd = self.idle_w + (self.tdp_w - self.idle_w) * self.engine.node_util[s:e]
            self.node_air_w[s:e] = self._air_heat_w(pd, up)
            self.z_q[z] = float(self.node_air_w[s:e].sum())

    def _zone_cap_w(self, z: int) -> float:
        return float(self.z_cap[z])

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
        s, e = self.zones[z]
        self._flush_for(slice(s, e))
        self._zone_account(z, self.engine.now)
        self.z_held[z] = new_h
        nodes = np.arange(s, e, dtype=np.int64)
        if not self.gpu_on_liquid:
            self.inlet[s:e] = new_h
            self._update(nodes)
            self._set_cool(slice(s, e))
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
        self._crah_w = self.crah_healthy * self.air.crah.capacity_kw * 1000.0
        self._set_caps()
        if self.on:
            self._retarget(z)
            self._try_restarts()
            self._schedule_hour(bisect.bisect_left(self._hours, self.engine.now))  # (quiet may have ended)

    def _quiet(self) -> bool:
        """Every air zone could carry all its nodes at full load and holds its supply temperature: then an
        hourly capacity change matters only if it takes some zone's slack (restarts in a slack zone do not
        depend on its capacity, and no room is in a transient to retarget)."""
        assert self.air is not None
        return bool(self.z_slack.all()) and bool((self.z_tgt == self.air.supply_c).all())

    def _schedule_hour(self, i: int) -> None:
        """Schedule the hourly capacity change ``self._hours[i]``; while the hall is quiet, the first one
        from there that takes some zone's slack instead (the ones before it would change nothing)."""
        hours = self._hours
        if i < len(hours) and self._quiet():
            f = self._f_hours[i:]
            short = (self.z_full[:, None] > self._crah_w[:, None] * f[None, :]).any(axis=0)  # = not slack
            i = i + int(short.argmax()) if short.any() else len(hours)
        self._hour_i = i
        self._hour_gen += 1
        if i < len(hours):
            gen = self._hour_gen
            self.engine.call_at(float(hours[i]), lambda: self._hour(gen))

    def _hour(self, gen: int) -> None:
        """Ambient change at an hour where the capacity derating of the air zones changes."""
        if gen != self._hour_gen:
            return  # rescheduled (a CRAH unit failed or came back)
        self._set_caps()
        assert self.air is not None
        for z in range(len(self.zones)):
            if not self.z_slack[z] or self.z_tgt[z] != self.air.supply_c:
                self._retarget(z)
        self._try_restarts()
        self._schedule_hour(self._hour_i + 1)

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
        self._flush_for(slice(s, e))
        gp = self.spec.gpu
        self.rfactor[s:e] = 1.0 if flow else gp.r_no_flow_c_per_w / gp.r_cold_plate_c_per_w
        self._update(np.arange(s, e, dtype=np.int64))
        self._set_cool(slice(s, e))
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
        return self.tss.reshape(-1, self.u)[nodes].max(axis=1)

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
        tl = tl.astype({"time_h": "float64", "index": "int64", "supply_c": "float64", "target_c": "float64",
                        "load_kw": "float64", "capacity_kw": "float64"})  # typed even when empty
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
        trips = trips.astype({"node": np.int32, "start_h": "float64", "end_h": "float64"})  # typed even when empty
        trips["path"] = pd.Series([self.cluster.node_path(int(n)) for n in trips["node"]], dtype="str")
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
        if tot > 0:  # the 1 °C bin's middle, never above the hottest temperature reached
            cdf = np.cumsum(hist) / tot
            for q in (50, 95, 99):
                m[f"thermal.gpu_temp_p{q}_c"] = min(float(np.searchsorted(cdf, q / 100.0) + 0.5), float(self.tpeak_c))
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
        order = np.argsort(np.asarray(self._tp_t), kind="stable")  # (replayed logs come late)
        t = np.asarray(self._tp_t)[order]
        v = np.cumsum(np.asarray(self._tp_dv)[order])  # effective GPUs from each time on (the last at a time)
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
        self.it.energy_kwh()  # brings the ITPower's level up to date
        ts, it = rec.level_series("site_power_w")  # ITPower: site IT power, W
        ts2, up = rec.level_series("nodes_up")
        bp = np.union1d(np.union1d(ts[ts < H], ts2[ts2 < H]), np.arange(0.0, H, 1.0))
        ends = np.append(bp[1:], H)
        dur = ends - bp
        it_v = it[np.searchsorted(ts, bp, side="right") - 1]
        gpu_v = it_v - self.non_gpu_w * up[np.searchsorted(ts2, bp, side="right") - 1]  # down nodes draw 0
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


__all__ = ["Thermal"]
