"""GPU thermal state and its crossings (model.md §3): the per-unit RC state, throttling, the wake-up at
the earliest threshold crossing, the temperature histogram and trace, and the busy / capped / throughput
integrals.

GPU state lives in arrays over all thermal units: the temperature ``T`` at the unit's last update time
``t0``, the steady state ``tss`` and time constant ``tau`` of its current (constant) power, inlet and R,
so T(t) = tss + (T − tss)·e^(−(t − t0)/tau) between events. An update of a set of nodes is one vector
operation over their units (``_update_now``, the hot path); it schedules only the earliest threshold
crossing of the whole cluster (``_wake``).
"""

from __future__ import annotations

import math
from typing import Any, TYPE_CHECKING

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy.special import ndtri

from twin import kernels_lazy, rng
from twin.model.cooling import fast
from twin.model.cooling.common import _EPS_H, _HIST_MAX_C, INF
from twin.model.cooling.arrays import (A_ACC, A_BUSY, A_CAPPED, A_SPSUM, A_TOT, A_TP, B_ENG, B_GON, N_AROWS, N_BROWS,
                                      N_ROWS, R_NEXT, R_SPEED, R_T, R_T0, R_TAU, R_TSS, ROW_PAD, CoolingArrays,
                                      CoolingParams)
from twin.scenario.pools import pool_heat_sink

if TYPE_CHECKING:  # pragma: no cover
    from twin.model.cooling.ports import AgeingPort, AirPort, LazyPort, ReplayPort, TripsPort
    from twin.model.cluster import Cluster
    from twin.model.cluster import SpeedSource
    from twin.model.engine import Engine
    from twin.model.it_power import ITPower

# the compiled kernels, imported at their first use (twin.kernels_lazy: a run without them imports no numba)
kernels = kernels_lazy.module("twin.kernels", globals(), "kernels")
kernels_events = kernels_lazy.module("twin.kernels_events", globals(), "kernels_events")
kernels_units = kernels_lazy.module("twin.kernels_units", globals(), "kernels_units")



_EF = np.empty(0)  # an empty float array: the kernels' "none" for an optional per-unit array
_I64 = np.dtype(np.int64)  # (the node lists' dtype: an identity test)
_EB = np.empty(0, dtype=bool)


class GpuState:
    """Room of the cooling component: GPU state, throttling and crossings, accounting."""

    ageing: AgeingPort  # wired by Thermal
    lazy: LazyPort  # wired by Thermal
    replay: ReplayPort  # wired by Thermal
    trips: TripsPort  # wired by Thermal

    def __init__(self, params: CoolingParams, arrays: CoolingArrays, engine: Engine, cluster: Cluster, it: ITPower,
                 speed_src: SpeedSource, air_rooms: AirPort) -> None:
        """The units' thermal state at time 0 (idle power at the initial inlet), and the accounting."""
        a, p = arrays, params
        self.params = params
        self.arrays = arrays
        self.engine = engine
        self.cluster = cluster
        self.it = it
        self.speed_src = speed_src  # the 'thermal' speed caps' writer's handle
        self.air_rooms = air_rooms
        self.n_pcap = 0  # nodes with a finite power-chain cap (arrays.pcap)
        self.in_update = 0  # depth of update calls (a NODE_SPEED inside one waits for its end)
        self.speed_later: list[NDArray[np.int64]] = []
        self._env = engine.env
        # per (depth of update calls, nodes, trace rows) the update's scratch arrays (nout, uout, up_n), reused: an
        # update inside another (a zone step, a cap's watcher) takes its own; every element read is written first
        self._scr: dict[tuple[int, int, bool], tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_]]] = {}
        self._sp3: tuple[int, Any] = (-1, None)  # _speeds' arrays while the cluster's sources stay as many
        self._ua: tuple[tuple[Any, ...], ...] | None = None  # update_nodes' arguments fixed once started (bind_args)
        self.multi_speed = False  # a second speed source (set in start)
        self.ucap: NDArray[np.float64] | None = None  # per-GPU thermal caps for a site cap's water-filling (start)
        c = p.spec
        gp = c.gpu
        cl = self.cluster
        n, u = p.n_nodes, p.units_per_node
        # ---- GPU state -----------------------------------------------------------------------------
        n_units = p.n_units
        cl_spec = p.sc.cluster
        base_r = gp.r_cold_plate_c_per_w if p.gpu_on_liquid else gp.r_air_c_per_w
        a.rspread = np.ones(n_units)
        if gp.r_sigma > 0:
            digs = rng.path_digests(f"{cl.node_path(i // u)}.gpu{i % u}#thermal_r" for i in range(n_units))
            unif = self.engine.streams.uniforms(digs, np.zeros(n_units, dtype=np.int64))
            a.rspread = np.exp(gp.r_sigma * ndtri(unif))
        a.rbase = base_r * a.rspread
        if cl_spec.pools:  # node pools: each node's GPUs on their pool's heat sink (cluster.pools.<k>.node.gpu)
            rn = np.empty(n)
            name = "r_cold_plate_c_per_w" if p.gpu_on_liquid else "r_air_c_per_w"
            for s0, e0, r in pool_heat_sink(cl_spec, name, base_r):
                rn[s0:e0] = r
            if np.any(rn != base_r):
                a.rbase = np.repeat(rn, u) * a.rspread
        # per node, its inlet air above its zone's held supply: rack and recirculation offsets of an air hall
        # (issue 23; also read by the inlet trip and the ageing on inlet air); None: every node sees the supply
        a.noff = None if p.gpu_on_liquid else self.air_rooms.node_offsets_c()
        # per unit, its inlet above the node's (held supply or coolant): chassis, rack and recirculation
        # offsets of an air hall (issue 23); None: every unit sees its node's inlet
        a.toff = None
        if not p.gpu_on_liquid and u == p.gpus_per_node:  # (u < g only when no offset is set: identical GPUs)
            a.toff = self.air_rooms.inlet_offsets_c()
        a.toff_max_n = np.zeros(n) if a.toff is None else a.toff.reshape(n, u).max(axis=1)
        a.rfactor = np.ones(n)  # node multiplier of R: fans (air) or no-flow (liquid)
        a.inlet = np.empty(n)  # GPU inlet (held air supply, or coolant supply), °C
        if p.gpu_on_liquid:
            assert p.liquid is not None
            a.inlet[:] = p.liquid.supply_c
        else:
            assert p.air is not None
            a.inlet[:] = p.air.supply_c
        tin0 = np.repeat(a.inlet, u)
        if a.toff is not None:
            tin0 = tin0 + a.toff
        R0 = a.rbase.copy()
        # the units' float state in one block, each name a contiguous view of its row (arrays.R_*; the stash's
        # rows are taken by LazyCrossings.start), the padding never a unit's (t_next, t_due: inf)
        a.ublk = np.zeros((N_ROWS, n_units + ROW_PAD))
        a.ublk[:, n_units:] = INF
        a.T, a.t0, a.tss, a.tau = (a.ublk[r, :n_units] for r in (R_T, R_T0, R_TSS, R_TAU))
        a.speed, a.t_next = a.ublk[R_SPEED, :n_units], a.ublk[R_NEXT, :n_units]
        a.T[:] = fast.steady_c(tin0, p.idle_w if p.figs is None else np.repeat(p.figs[0], u), R0)
        a.tss[:] = a.T
        a.tau[:] = fast.tau_s(R0, p.c_j_per_c)
        # the units' bool state in one block, each name a view of its row (arrays.B_*; silent and x_ok are taken by
        # LazyCrossings)
        a.bblk = np.zeros((N_BROWS, n_units + ROW_PAD), dtype=bool)
        a.engaged = a.bblk[B_ENG, :n_units]
        a.speed[:] = 1.0
        a.gon = a.bblk[B_GON, :n_units]  # GPU powered during [t0, now]
        a.gon[:] = True
        a.t_next[:] = INF
        # the air heat the kernel computes (AirRooms.air_heat_w): 0 none, 1 GPUs in the air, 2 not, 3 a share
        self._heat_mode = 0 if p.air is None else (3 if self.air_rooms.air_share is not None else
                                                      (1 if p.type == "air" else 2))
        self._heat_share = float(self.air_rooms.air_share) if self._heat_mode == 3 else 1.0  # type: ignore[arg-type]
        self._ng_w = float(p.non_gpu_w)
        # the scalars of twin.kernels_units.update_nodes
        self._prm = np.array([p.idle_w, p.tdp_w, p.c_j_per_c, p.slow_c, p.shut_c, p.pmin_w, p.alpha, self._ng_w,
                              p.non_gpu_idle_w, self._heat_share], dtype=np.float64)
        # each node's own power figures in a hall of node pools (CoolingParams.figs; (6, 0): the scalars above)
        self._pf = p.figs if p.figs is not None else np.empty((6, 0))
        a.uidx = np.arange(n_units)  # unit indices (a slice of them: the kernels' unit list of a run of nodes)
        a.kind = np.zeros(n_units, dtype=np.int8)  # 1 slowdown crossing, 2 shutdown crossing
        self.wake_t = INF
        self._wake_timer = self.engine.timer(self._wake)
        self._n_hot = 0  # > 0 while some unit may be capped, engaged or heading for a crossing
        self._acc_hot = False
        self._tp_hot = False
        a.hist = np.zeros(_HIST_MAX_C)
        self.tpeak_c = float(a.T.max())

        # ---- accounting ----------------------------------------------------------------------------
        # per node and the site totals in one block, each name a contiguous view of its row (arrays.A_*)
        a.nblk = np.zeros((N_AROWS, max(n, 4) + ROW_PAD))
        a.n_busy, a.n_capped, a.n_spsum, a.n_tp = (a.nblk[r, :n] for r in (A_BUSY, A_CAPPED, A_SPSUM, A_TP))
        a.acc = a.nblk[A_ACC, :4]  # busy GPUs, capped busy GPUs, Σ speed of busy GPUs, effective GPUs: integrated (h)
        a.tot = a.nblk[A_TOT, :4]  # ... now
        self.t_acc = 0.0
        a.tp_t = [0.0]  # effective GPUs: times of changes, h (not in order: see _replay_log)
        a.tp_dv = [0.0]  # … and the changes
        self._init_trace()

    def _init_trace(self) -> None:
        """The traced nodes and the trace window (default: the week around the seasonal peak)."""
        c = self.params.spec
        n, H = self.params.n_nodes, self.params.horizon_h
        tr = c.trace
        self.arrays.trace_mask = np.zeros(n, dtype=bool)
        self.arrays.trace_mask[[i for i in tr.nodes if i < n]] = True
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

    def start_trace(self) -> None:
        eng = self.engine
        traced = np.flatnonzero(self.arrays.trace_mask)
        if len(traced):  # traced nodes take the full path (one row per update) inside the window only
            if 0.0 < self.trace_from < self.params.horizon_h:
                eng.calls(self._set_tracing).at(self.trace_from, True, traced)
            if 0.0 < self.trace_to < self.params.horizon_h:
                eng.calls(self._set_tracing).at(self.trace_to, False, traced)

    def gpus(self, nodes: NDArray[np.int64]) -> NDArray[np.int64]:
        units: NDArray[np.int64] = kernels_events.unit_indices(nodes, self.params.units_per_node)
        return units  # ((nodes[:, None] * u + arange(u)).ravel(), compiled)

    def update(self, nodes: NDArray[np.int64], flushed: bool = False) -> None:
        """:meth:`_update_now`; a change of power-chain caps it sets off (its thermal cap moves the site
        cap, whose speeds come back as NODE_SPEED) is taken after it, not inside it. ``flushed``: the caller
        knows no node of ``nodes`` is cool (the replay's log holds nothing of theirs)."""
        self.in_update += 1
        try:
            self._update_now(nodes, flushed)
        finally:
            self.in_update -= 1
        if self.lazy.silent_on:
            if not self.in_update:
                self.lazy.plan(nodes)
            elif self.arrays.t_due.min() < self.wake_t:  # (inside another update: these crossings stay events)
                self.schedule_wake(float(self.arrays.t_due.min()))
        if not self.in_update and self.speed_later:
            later = self.speed_later
            self.speed_later = []
            self.on_speed(later[0] if len(later) == 1 else np.unique(np.concatenate(later)))

    def _update_now(self, nodes: NDArray[np.int64], flushed: bool = False) -> None:
        """Bring the GPUs of ``nodes`` to now and apply their current power, inlet and R (one vector op).
        (A caller that changed what makes nodes cool, their inlet, R, zone slack or tracing, recomputes
        their flags after it: ``set_cool``.)

        A contiguous run of nodes (a packed job, a zone, a loop) is addressed by slices; the common case
        where no GPU of the set is near its slowdown temperature takes a short path without caps.
        """
        # The hot path (every load change of a warm node, every zone step, fan and loop change): the units'
        # work is two compiled kernels (twin.kernels_units.advance_units, update_units: the throttling branch,
        # taken only near the slowdown temperature, and the stash of lazy crossings are in the second).
        n = len(nodes)
        if not n:
            return
        if not flushed:
            self.replay.flush_for(nodes)
        a, p, lazy = self.arrays, self.params, self.lazy
        now = self._env._now
        u = p.units_per_node
        n0 = int(nodes[0])
        n1 = int(nodes[-1])
        if n1 - n0 + 1 == n:
            nsl: Any = slice(n0, n1 + 1)
            nodes = p.all_nodes[nsl]
        else:
            nsl = nodes
        # new conditions: demand, what the GPUs draw before any thermal cap (their demand, or less under a
        # power-chain cap: a site cap, a lost PSU or feed; the thermal cap, if it binds, is below this, and
        # speeds are relative to the demand, so the engine's lower of the thermal and power speeds is the
        # node's speed), then steady states and, near the slowdown temperature, caps, speeds and crossings
        pc = _EF
        if self.n_pcap or self.it.others_capped("thermal"):
            pc = self.it.min_cap(nodes, exclude="thermal")
            self.n_pcap += int(np.isfinite(pc).sum()) - int(np.isfinite(a.pcap[nsl]).sum())
            a.pcap[nsl] = pc
        trace = self.trace_from <= now <= self.trace_to and bool(np.count_nonzero(a.trace_mask[nsl]))
        key = (self.in_update, n, trace)
        scr = self._scr.get(key)
        if scr is None:  # (uout: the units' power, demand, inlet and R only for a trace row; up_n written by the
            if len(self._scr) > 512:  # kernel: an argument costs less than a returned array)
                self._scr.clear()
            scr = self._scr[key] = (np.empty((8, n)), np.empty((5 if trace else 2, n * u)), np.empty(n, dtype=np.bool_))
        nout, uout, up_n = scr
        silent = lazy.silent_on
        # one compiled call (twin.kernels_units.update_nodes): the due silent crossings of these units settled
        # first (lazy.settle_in: the others re-planned), the temperatures brought to now (GPU-hours by
        # steady-state temperature, τ ≪ intervals), then the new steady states, caps, speeds and crossings
        ua = self._ua if self._ua is not None else self.bind_args(False)
        (self.t_acc, cleared, n_sil, tmax, sres, ntp, m, e_wh, dP_sum, short, t_min,
         it_ne) = kernels_units.update_nodes(
            nodes, now, _EPS_H, lazy.n_silent > 0, self.t_acc, *ua[0], self.cluster.util_read, *ua[1], pc, *ua[2],
            self._n_hot > 0, *ua[3], lazy.traced_u if silent and lazy.traced_u is not None else _EB, *ua[4], nout, uout,
            up_n)
        if cleared or n_sil:  # (the settling's arrays come as one: tp_t, tp_dv, ts, dP, the nodes whose speed changed)
            lazy.settled_in(cleared, n_sil, sres, ntp, m, e_wh, dP_sum, now)
        if not short:
            self._n_hot += 1
            if not silent and t_min < self.wake_t:  # (else lazy.plan schedules it, once the silent ones are known)
                self.schedule_wake(t_min)
        if tmax > self.tpeak_c:
            self.tpeak_c = tmax
        # IT power (the shared ITPower) when the thermal cap of these nodes changed
        if self._n_hot and it_ne:  # (np.any(a.it_caps[nsl] != nout[6]))
            self.it.set_cap("thermal", nodes, nout[6])
        # air-zone heat: demanded power of the nodes in service
        if p.air is not None:
            self.air_rooms.zone_heat(nsl, nodes, nout[7])  # (the kernel's AirRooms.air_heat_w(draw_n, up_n))
        # the accounts (_account, _refresh_tp) and the node's speed, its slowest GPU's (nodes in service only;
        # a down node keeps its last cap), in one compiled call (twin.kernels.account_update)
        hot = bool(self._n_hot) or self._acc_hot
        if hot:
            self._acc_hot = bool(self._n_hot)
        tp_mode = 0
        if self.multi_speed or self._n_hot or self._tp_hot:
            self._tp_hot = bool(self._n_hot) or self.multi_speed
            tp_mode = 1
        sp_a, sp_b, sp_n = self._speeds(nodes) if tp_mode else (_EF, _EF, _EF)
        self.t_acc, d_tp, ch, rose, any_down = kernels.account_update(
            nodes, nout, up_n, now, self.t_acc, hot, tp_mode, self.cluster.slow, sp_a, sp_b, sp_n, a.nblk,
            bool(self._n_hot), a.speed_caps)
        if d_tp != 0.0:
            self._tp_record(d_tp)
        if self.ageing.aged:
            self.ageing.update(nodes)
        if trace:
            gsl = slice(n0 * u, (n1 + 1) * u) if isinstance(nsl, slice) else self.gpus(nodes)
            self._trace(nodes, a.T[gsl], uout[0], uout[1], uout[2], uout[3])
        if lazy.silent_on and (lazy.n_silent or lazy.rose) and any_down:
            lazy.rose = True  # a node leaving service leaves its group's slowest speeds (see lazy.plan)
        if self._n_hot:
            settled = lazy.settled_sp  # speeds the silent crossings settled above changed (not yet published)
            if len(ch):
                if lazy.silent_on and rose:
                    lazy.rose = True  # a published speed rose (see lazy.plan)
                if settled:
                    ch = kernels_events.sorted_union([ch, *settled])  # (np.union1d(ch, np.concatenate(settled)))
                    settled.clear()
                self.speed_src.changed(ch)
            elif settled:
                ch = kernels_events.sorted_union(settled)  # (np.unique(np.concatenate(settled)))
                settled.clear()
                self.speed_src.changed(ch)
            if short and self._n_hot_check():
                self._n_hot = 0

    def bind_args(self, keep: bool = True) -> tuple[tuple[Any, ...], ...]:
        """The arguments of ``twin.kernels_units.update_nodes`` that stay the same objects once the model started
        (the arrays made at construction, the silent crossings' stash and speed sources taken in ``start``), in the
        groups between the per-call ones; ``keep``: kept for every later update (``Thermal.start``, after
        ``LazyCrossings.start``)."""
        a, p, lazy = self.arrays, self.params, self.lazy
        silent = lazy.silent_on
        ucap = _EF if self.ucap is None else self.ucap
        x_cap = a.x_cap if silent and a.x_cap is not None else _EF
        oth = a.oth_n if silent and lazy.oth_caps else _EF
        ua = ((self.cluster.down_count,), (p.units_per_node, float(p.gpus_per_node), p.gpus_per_unit),
              (a.rfactor, a.inlet, a.rbase, _EF if a.toff is None else a.toff, self._prm, a.ublk, a.bblk, a.hist, a.kind),
              (ucap, silent, x_cap),
              (self._heat_mode, a.nblk, a.speed_caps, oth, a.it_caps, self._pf),
              (silent,),  # (and wake_units')
              (p.units_per_node, p.gpus_per_unit, a.ublk, a.bblk, a.hist, a.kind, x_cap, ucap, a.nblk, a.speed_caps, oth))
        if keep:
            self._ua = ua
        return ua

    def rebind(self) -> None:
        """What :meth:`bind_args` binds changed after the start (a speed source added mid-run, whose speeds the
        settling of silent crossings takes as ``oth_n``): bind the arguments again (nothing before the start)."""
        if self._ua is not None:
            self.bind_args()

    def _n_hot_check(self) -> bool:
        """True when no unit anywhere is engaged, capped or heading for a crossing (short paths suffice)."""
        a = self.arrays
        return bool(kernels_events.none_hot(a.engaged, a.t_next, a.n_capped, a.speed_caps, a.it_caps))

    def _set_tracing(self, on: bool, traced: NDArray[np.int64]) -> None:
        self.replay.flush_for(traced)
        self.replay.tracing = on
        self.lazy.trace_units(on)
        if on:
            self.update(traced)  # a first row at the window start
        self.replay.set_cool(traced)

    def schedule_wake(self, t: float) -> None:
        if t >= self.params.horizon_h:
            return
        self.wake_t = t
        self._wake_timer.set(t)

    def _wake(self) -> None:
        self.wake_t = INF
        now = self._env._now
        a, p, lazy = self.arrays, self.params, self.lazy
        # the due units (t_due ≤ now), and in the same compiled call (twin.kernels_units.wake_units) the quick
        # ones: a slowdown crossing that lowers a job's pace (else it would be silent) and has no shutdown after
        # it takes its stashed capped state now, in closed form (as lazy.settle), as a silent one does later;
        # nothing else of its node changed since its update, and its group's plan already counted this
        # crossing (its later crossings were walked from this one's speed)
        ua = self._ua if self._ua is not None else self.bind_args(False)
        due, self.t_acc, n_sil, tmax, sres, ng, ntp, m, e_wh, dP_sum = \
            kernels_units.wake_units(now, _EPS_H, *ua[5], self.t_acc, *ua[6])
        if ng:  # (the settling's arrays come as one: the nodes as floats, their speeds and caps, tp_t, tp_dv, ts, dP)
            z = 3 * ng + 2 * ntp
            lazy.settled(n_sil, tmax, sres[:ng].astype(np.int64), sres[ng:2 * ng], sres[2 * ng:3 * ng],
                         sres[3 * ng:3 * ng + ntp], sres[3 * ng + ntp:z], sres[z:z + m], sres[z + m:], e_wh, dP_sum, now)
        if len(due):
            kinds = a.kind[due]
            a.t_next[due] = INF
            a.t_due[due] = INF
            shut_nodes = np.unique(due[kinds == 2] // p.units_per_node)
            slow_nodes = np.setdiff1d(np.unique(due[kinds == 1] // p.units_per_node), shut_nodes)
            if len(slow_nodes):
                self.update(slow_nodes)
            for node in shut_nodes.tolist():
                if self.cluster.is_up(node):
                    self.trips.trip(node, "gpu_shutdown")
        lazy.wake_at_due()

    def flush_histogram(self, t_h: float) -> None:
        dt_h = t_h - self.arrays.t0
        self.arrays.hist += np.bincount(np.clip(self.arrays.tss, 0.0, _HIST_MAX_C - 1).astype(np.intp),
                                 weights=dt_h * self.arrays.gon, minlength=_HIST_MAX_C) * self.params.gpus_per_unit
        self.arrays.t0[:] = t_h
        self.arrays.T[:] = fast.step_c(self.arrays.T, self.arrays.tss, dt_h, self.arrays.tau)
        self.tpeak_c = max(self.tpeak_c, float(self.arrays.T.max()))

    def _trace(self, nodes: NDArray[np.int64], T: NDArray[np.float64], P: NDArray[np.float64],
               pd: NDArray[np.float64], tin: NDArray[np.float64], R: NDArray[np.float64]) -> None:
        a, u = self.arrays, self.params.units_per_node
        gi = self.gpus(nodes)
        tm = a.trace_mask[nodes]
        if np.count_nonzero(tm) < len(tm):  # (an update of traced nodes alone, the usual one, takes every unit)
            sel = np.repeat(tm, u)
            gi, T, P, pd, tin, R = gi[sel], T[sel], P[sel], pd[sel], tin[sel], R[sel]
        rows = np.empty((len(gi), 11))  # (np.column_stack of the columns, written in place)
        rows[:, 0] = self.engine.now
        rows[:, 1] = gi // u
        rows[:, 2] = gi % u
        rows[:, 3] = T
        rows[:, 4] = a.tss[gi]
        rows[:, 5] = a.tau[gi]
        rows[:, 6] = P
        rows[:, 7] = pd
        rows[:, 8] = tin
        rows[:, 9] = R
        rows[:, 10] = a.speed[gi]
        self.trace_rows.append(rows)

    def trace_table(self) -> pd.DataFrame:
        cols = ["time_h", "node", "gpu", "temp_c", "tss_c", "tau_s", "power_w", "demand_w", "inlet_c",
                "r_c_per_w", "speed"]
        if not self.trace_rows:
            return pd.DataFrame({c: pd.Series(dtype=np.float64) for c in cols})
        arr = np.vstack(self.trace_rows)
        df = pd.DataFrame(arr, columns=cols)
        df["node"] = df["node"].astype(np.int32)
        df["gpu"] = df["gpu"].astype(np.int16)
        return df

    def on_speed(self, nodes: NDArray[np.int64]) -> None:
        if type(nodes) is not np.ndarray or nodes.dtype is not _I64:  # (publishers' int64 arrays taken as they are)
            nodes = np.asarray(nodes, dtype=np.int64)
        if self.in_update:
            self.speed_later.append(nodes)  # (publishers never change the array afterwards)
            return
        self.replay.flush_for(nodes)
        if self.n_pcap or self.it.others_capped("thermal"):
            # a power-chain cap changed what these GPUs draw: their temperatures follow it (directly: a
            # node under such a cap is not cool, see set_cool); thermal's own speed changes leave it as is
            pc = self.it.min_cap(nodes, exclude="thermal")
            moved = nodes[pc != self.arrays.pcap[nodes]]
            if len(moved):
                self.update(moved)
                self.replay.set_cool(moved)
        if self.lazy.silent_on and self.lazy.oth_caps:
            # another source's speed may have changed: due silent crossings settled at the speeds they held under
            # (lazy.settle reads arrays.oth_n), then the nodes' other speeds from now
            if self.lazy.n_silent:
                u = self.params.units_per_node
                self.lazy.settle_in(slice(int(nodes[0]) * u, (int(nodes[0]) + 1) * u) if len(nodes) == 1
                                    else self.gpus(nodes), self.engine.now)
            oth = self.lazy.oth_caps
            if len(oth) == 1:  # (compiled: lazy.other_speeds of one source, written)
                kernels_events.put_min1_at(self.arrays.oth_n, nodes, oth[0])
            else:
                self.arrays.oth_n[nodes] = self.lazy.other_speeds(nodes)
        self._refresh_tp(nodes)

    # =================================================================================== accounting
    def integrate(self, now: float) -> None:
        dt = now - self.t_acc
        if dt > 0:
            self.arrays.acc += self.arrays.tot * dt
            self.t_acc = now

    def _refresh_tp(self, nodes: NDArray[np.int64]) -> None:
        """Effective GPUs (GPUs computing × their node's speed over all sources) for the throughput series
        (compiled: twin.kernels.refresh_tp)."""
        sp_a, sp_b, sp_n = self._speeds(nodes)
        a = self.arrays
        now = self.engine.now
        if now - self.t_acc > 0:  # (integrated only when the effective GPUs change: the kernel's sums see tot now)
            tot = a.tot.copy()
            delta = kernels.refresh_tp(nodes, self.cluster.slow, sp_a, sp_b, sp_n, a.n_busy, a.n_tp, tot)
            if delta != 0.0:
                self.integrate(now)
                a.tot[3] = tot[3]
                self._tp_record(delta)
            return
        delta = kernels.refresh_tp(nodes, self.cluster.slow, sp_a, sp_b, sp_n, a.n_busy, a.n_tp, a.tot)
        if delta != 0.0:
            self._tp_record(delta)

    def _speeds(self, nodes: NDArray[np.int64]) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """The speed sources' arrays as the kernels take them (``twin.kernels.refresh_tp``): up to two sources'
        arrays (empty for none), else the nodes' speeds (``Cluster.node_speed``)."""
        cl = self.cluster
        if not cl.slow:
            return _EF, _EF, _EF
        srcs = cl.speed_caps  # (sources are added, never removed or replaced: their arrays kept per count)
        k, sp3 = self._sp3
        if k != len(srcs):
            vals = list(srcs.values())
            sp3 = (vals[0], (vals[1] if len(vals) > 1 else _EF), _EF) if len(vals) <= 2 else None
            self._sp3 = (len(srcs), sp3)
        return sp3 if sp3 is not None else (_EF, _EF, cl.node_speed(nodes))

    def _tp_record(self, delta: float) -> None:
        self.arrays.tp_t.append(self.engine.now)
        self.arrays.tp_dv.append(delta)

    def throughput_hourly(self) -> pd.DataFrame:
        """Per hour: effective GPU-hours (GPUs computing × node speed), and the hour's ambient."""
        H = self.params.horizon_h
        hours = int(math.ceil(H))
        order = np.argsort(np.asarray(self.arrays.tp_t), kind="stable")  # (replayed logs come late)
        t = np.asarray(self.arrays.tp_t)[order]
        v = np.cumsum(np.asarray(self.arrays.tp_dv)[order])  # effective GPUs from each time on (the last at a time)
        edges = np.arange(hours + 1, dtype=np.float64)
        edges[-1] = H
        # integral of the step function up to each edge
        seg_end = np.append(t[1:], H)
        cum = np.concatenate([[0.0], np.cumsum(v * (seg_end - t))])
        k = np.clip(np.searchsorted(t, edges, side="right") - 1, 0, len(t) - 1)
        at_edge = cum[k] + v[k] * (edges - t[k])
        eff = np.diff(at_edge)
        return pd.DataFrame({"hour": np.arange(hours, dtype=np.int64), "ambient_c": self.params.ambient_h[:hours],
                             "effective_gpu_hours": eff})
