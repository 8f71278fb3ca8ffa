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
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy.special import ndtri

from twin import kernels, kernels_events, rng
from twin.model.cooling import fast
from twin.model.cooling.common import _EPS_H, _HIST_MAX_C, INF
from twin.model.cooling.state import CoolingState


_EF = np.empty(0)  # an empty float array: the kernels' "none" for an optional per-unit array
_EB = np.empty(0, dtype=bool)


class GpuState(CoolingState):
    """Room of the cooling component: GPU state, throttling and crossings, accounting (a mixin of
    ``Thermal``; the parameters it reads are set by ``Thermal.__init__``)."""

    def _init_gpu(self) -> None:
        """The units' thermal state at time 0 (idle power at the initial inlet), and the accounting."""
        c = self.spec
        gp = c.gpu
        cl = self.cluster
        n, u = self.N, self.u
        # ---- GPU state -----------------------------------------------------------------------------
        G = self.G
        base_r = gp.r_cold_plate_c_per_w if self.gpu_on_liquid else gp.r_air_c_per_w
        self.rspread = np.ones(G)
        if gp.r_sigma > 0:
            digs = rng.path_digests(f"{cl.node_path(i // u)}.gpu{i % u}#thermal_r" for i in range(G))
            unif = self.engine.streams.uniforms(digs, np.zeros(G, dtype=np.int64))
            self.rspread = np.exp(gp.r_sigma * ndtri(unif))
        self.rbase = base_r * self.rspread
        # per node, its inlet air above its zone's held supply: rack and recirculation offsets of an air hall
        # (issue 23; also read by the inlet trip and the ageing on inlet air); None: every node sees the supply
        self.noff = None if self.gpu_on_liquid else self._air_node_offsets_c()
        # per unit, its inlet above the node's (held supply or coolant): chassis, rack and recirculation
        # offsets of an air hall (issue 23); None: every unit sees its node's inlet
        self.toff: NDArray[np.float64] | None = None
        if not self.gpu_on_liquid and u == self.g:  # (u < g only when no offset is set: identical GPUs)
            self.toff = self._air_inlet_offsets_c()
        self.toff_max_n = np.zeros(n) if self.toff is None else self.toff.reshape(n, u).max(axis=1)
        self.rfactor = np.ones(n)  # node multiplier of R: fans (air) or no-flow (liquid)
        self.inlet = np.empty(n)  # GPU inlet (held air supply, or coolant supply), °C
        if self.gpu_on_liquid:
            assert self.liquid is not None
            self.inlet[:] = self.liquid.supply_c
        else:
            assert self.air is not None
            self.inlet[:] = self.air.supply_c
        tin0 = np.repeat(self.inlet, u)
        if self.toff is not None:
            tin0 = tin0 + self.toff
        R0 = self.rbase.copy()
        self.T = fast.steady_c(tin0, self.idle_w, R0)
        self.t0 = np.zeros(G)
        self.tss = self.T.copy()
        self.tau = fast.tau_s(R0, self.C)
        self.engaged = np.zeros(G, dtype=bool)
        self.speed = np.ones(G)
        self.gon = np.ones(G, dtype=bool)  # GPU powered during [t0, now]
        self.t_next = np.full(G, INF)
        # the air heat the kernel computes (Thermal._air_heat_w): 0 none, 1 GPUs in the air, 2 not, 3 a share
        self._heat_mode = 0 if self.air is None else (3 if self.air_share is not None else
                                                      (1 if self.type == "air" else 2))
        self._heat_share = float(self.air_share) if self._heat_mode == 3 else 1.0  # type: ignore[arg-type]
        self._ng_w = float(self.non_gpu_w)
        self._uidx = np.arange(G)  # unit indices (a slice of them: the kernels' unit list of a run of nodes)
        self._now1 = np.zeros(1)  # the time a kernel brings units to, h
        self.kind = np.zeros(G, dtype=np.int8)  # 1 slowdown crossing, 2 shutdown crossing
        self._wake_t = INF
        self._wake_timer = self.engine.timer(self._wake)
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

    def _init_trace(self) -> None:
        """The traced nodes and the trace window (default: the week around the seasonal peak)."""
        c = self.spec
        n, H = self.N, self.H
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

    def _start_trace(self) -> None:
        eng = self.engine
        traced = np.flatnonzero(self.trace_mask)
        if len(traced):  # traced nodes take the full path (one row per update) inside the window only
            if 0.0 < self.trace_from < self.H:
                eng.calls(self._set_tracing).at(self.trace_from, True, traced)
            if 0.0 < self.trace_to < self.H:
                eng.calls(self._set_tracing).at(self.trace_to, False, traced)

    def _gpus(self, nodes: NDArray[np.int64]) -> NDArray[np.int64]:
        return kernels_events.unit_indices(nodes, self.u)  # ((nodes[:, None] * u + arange(u)).ravel(), compiled)

    def _update(self, nodes: NDArray[np.int64]) -> None:
        """:meth:`_update_now`; a change of power-chain caps it sets off (its thermal cap moves the site
        cap, whose speeds come back as NODE_SPEED) is taken after it, not inside it."""
        self._in_update += 1
        try:
            self._update_now(nodes)
        finally:
            self._in_update -= 1
        if self._silent_on:
            if not self._in_update:
                self._plan(nodes)
            elif self.t_due.min() < self._wake_t:  # (inside another update: these crossings stay events)
                self._schedule_wake(float(self.t_due.min()))
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
        # The hot path (every load change of a warm node, every zone step, fan and loop change): the units'
        # work is two compiled kernels (twin.kernels.advance_units, update_units: the throttling branch,
        # taken only near the slowdown temperature, and the stash of lazy crossings are in the second).
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
        if self._n_silent:  # silent crossings of these units that are due: taken first; the others re-planned
            self._settle_in(gsl, now)
        # temperature now, from the last state; GPU-hours by steady-state temperature (τ ≪ intervals)
        gi = self._uidx[gsl] if isinstance(gsl, slice) else gsl
        self._now1[0] = now
        tmax = kernels.advance_units(gi, self._now1, self.T, self.tss, self.t0, self.tau, self.gon, self.hist, self.w)
        # new conditions: demand, what the GPUs draw before any thermal cap (their demand, or less under a
        # power-chain cap: a site cap, a lost PSU or feed; the thermal cap, if it binds, is below this, and
        # speeds are relative to the demand, so the engine's lower of the thermal and power speeds is the
        # node's speed), then steady states and, near the slowdown temperature, caps, speeds and crossings
        up_n = self.cluster.down_count[nsl] == 0
        util = self.engine.node_util[nsl]
        pc = _EF
        if self._n_pcap or self.it.others_capped("thermal"):
            pc = self.it.min_cap(nodes, exclude="thermal")
            self._n_pcap += int(np.isfinite(pc).sum()) - int(np.isfinite(self._pcap[nsl]).sum())
            self._pcap[nsl] = pc
        nout = np.empty((8, n))
        uout = np.empty((5, n * u))
        silent = self._silent_on
        short, t_min = kernels.update_units(
            nodes, u, float(g), self.w, now, up_n, util, pc, self.rfactor, self.inlet, self.rbase,
            _EF if self.toff is None else self.toff, self.idle_w, self.tdp_w, self.C, self.slow_c, self.shut_c,
            self.pmin_w, self.alpha, self.T, self.tss, self.tau, self.gon, self.engaged, self.speed, self.t_next,
            self.kind, bool(self._n_hot), _EF if self._ucap is None else self._ucap, silent,
            self.x_cap if silent and self.x_cap is not None else _EF, self.x_P if silent else _EF,
            self.x_sp if silent else _EF, self.x_tss if silent else _EF, self.x_ok if silent else _EB,
            self.pw if silent else _EF, self.t_due if silent else _EF,
            self._traced_u if silent and self._traced_u is not None else _EB, self._heat_mode,
            self._ng_w, self.non_gpu_idle_w, self._heat_share, nout, uout)
        busy_n = nout[2]
        sp_n, capped_n, spsum_n, it_caps = nout[3], nout[4], nout[5], nout[6]
        caps = self.speed_caps
        if not short:
            self._n_hot += 1
            if not silent and t_min < self._wake_t:  # (else _plan schedules it, once the silent ones are known)
                self._schedule_wake(t_min)
        if tmax > self.tpeak_c:
            self.tpeak_c = tmax
        # IT power (the shared ITPower) when the thermal cap of these nodes changed
        if self._n_hot and kernels_events.any_ne_at(self._it_caps, nodes, it_caps):  # (np.any(_it_caps[nsl] != ...))
            self.it.set_cap("thermal", nodes, it_caps)
        # air-zone heat: demanded power of the nodes in service
        if self.air is not None:
            self._zone_heat(nsl, nodes, nout[7])  # (the kernel's Thermal._air_heat_w(draw_n, up_n))
        self._account(nsl, nodes, busy_n, capped_n, spsum_n)
        if self.aged:
            self._age_update(nodes)
        if self.trace_from <= now <= self.trace_to and np.count_nonzero(self.trace_mask[nsl]):
            self._trace(nodes, self.T[gsl], uout[0], uout[1], uout[2], uout[3])
        # the node's speed is its slowest GPU's (nodes in service only; a down node keeps its last cap)
        if self._silent_on and (self._n_silent or self._rose) and np.count_nonzero(~up_n):
            self._rose = True  # a node leaving service leaves its group's slowest speeds (see lazy._plan)
        if self._n_hot:
            changed = up_n & (caps[nsl] != sp_n)
            settled = self._settled_sp  # speeds the silent crossings settled above changed (not yet published)
            if np.count_nonzero(changed):
                ch = nodes[changed]
                new_sp = sp_n[changed]
                if self._silent_on and np.count_nonzero(caps[ch] < new_sp):
                    self._rose = True  # a published speed rose (see lazy._plan)
                caps[ch] = new_sp
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

    def _n_hot_check(self) -> bool:
        """True when no unit anywhere is engaged, capped or heading for a crossing (short paths suffice)."""
        return (not self.engaged.any() and not np.isfinite(self.t_next).any() and not self.n_capped.any()
                and bool((self.speed_caps == 1.0).all()) and bool(np.isinf(self._it_caps).all()))

    def _set_tracing(self, on: bool, traced: NDArray[np.int64]) -> None:
        self._flush_for(traced)
        self._tracing = on
        self._trace_units(on)
        if on:
            self._update(traced)  # a first row at the window start
        self._set_cool(traced)

    def _schedule_wake(self, t: float) -> None:
        if t >= self.H:
            return
        self._wake_t = t
        self._wake_timer.set(t)

    def _wake(self) -> None:
        self._wake_t = INF
        now = self.engine.now
        due = np.flatnonzero(self.t_due <= now + _EPS_H)
        if len(due) and self._silent_on:
            # a slowdown crossing that lowers a job's pace (else it would be silent) and has no shutdown after
            # it: the unit takes its stashed capped state now, in closed form (lazy._settle), as a silent one
            # does later; nothing else of its node changed since its update, and its group's plan already
            # counted this crossing (its later crossings were walked from this one's speed)
            quick = (self.kind[due] == 1) & self.x_ok[due]
            if np.count_nonzero(quick):
                q = due[quick]
                self.t_next[q] = np.minimum(self.t_next[q], now)
                self._settle(q, now)
                due = due[~quick]
        if len(due):
            kinds = self.kind[due]
            self.t_next[due] = INF
            self.t_due[due] = INF
            shut_nodes = np.unique(due[kinds == 2] // self.u)
            slow_nodes = np.setdiff1d(np.unique(due[kinds == 1] // self.u), shut_nodes)
            if len(slow_nodes):
                self._update(slow_nodes)
            for node in shut_nodes.tolist():
                if self.cluster.is_up(node):
                    self._trip(node, "gpu_shutdown")
        self._wake_at_due()

    def _flush_histogram(self, t_h: float) -> None:
        dt_h = t_h - self.t0
        self.hist += np.bincount(np.clip(self.tss, 0.0, _HIST_MAX_C - 1).astype(np.intp),
                                 weights=dt_h * self.gon, minlength=_HIST_MAX_C) * self.w
        self.t0[:] = t_h
        self.T[:] = fast.step_c(self.T, self.tss, dt_h, self.tau)
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
        if self._silent_on and self._oth_caps:
            # another source's speed may have changed: due silent crossings settled at the speeds they held under
            # (lazy._settle reads _oth_n), then the nodes' other speeds from now
            if self._n_silent:
                self._settle_in(self._gpus(nodes), self.engine.now)
            self._oth_n[nodes] = self._other_speeds(nodes)
        self._refresh_tp(nodes)

    # =================================================================================== accounting
    def _integrate(self, now: float) -> None:
        dt = now - self._t_acc
        if dt > 0:
            self._acc += self._tot * dt
            self._t_acc = now

    def _account(self, nsl: Any, nodes: NDArray[np.int64], busy: Any, capped: Any, spsum: Any) -> None:
        self._integrate(self.engine.now)
        hot = bool(self._n_hot) or self._acc_hot
        if hot:
            self._acc_hot = bool(self._n_hot)
        d_busy = kernels.account_nodes(nodes, busy, capped, spsum, self.n_busy, self.n_capped, self.n_spsum,
                                       self._tot, hot)
        if self._multi_speed or self._n_hot or self._tp_hot:
            self._tp_hot = bool(self._n_hot) or self._multi_speed
            self._refresh_tp(nodes)
        elif d_busy != 0.0:  # every speed is 1: effective GPUs = busy GPUs
            self.n_tp[nsl] = busy
            self._tot[3] += d_busy
            self._tp_record(d_busy)

    def _refresh_tp(self, nodes: NDArray[np.int64]) -> None:
        """Effective GPUs (GPUs computing × their node's speed over all sources) for the throughput series."""
        tp = self.n_busy[nodes] * self.cluster.node_speed(nodes)
        delta = float((tp - self.n_tp[nodes]).sum())
        if delta != 0.0:
            self._integrate(self.engine.now)
            self.n_tp[nodes] = tp
            self._tot[3] += delta
            self._tp_record(delta)

    def _tp_record(self, delta: float) -> None:
        self._tp_t.append(self.engine.now)
        self._tp_dv.append(delta)

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
