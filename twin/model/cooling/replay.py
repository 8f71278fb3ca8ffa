"""The deferred-load replay: load changes of *cool* nodes logged and replayed in one vectorised batch.

A node is *cool* when even full power cannot take any of its GPUs to the slowdown temperature under
its current inlet and R, and it is neither traced nor ageing-accelerated (nor under a power-chain cap).
Its load changes then cannot throttle or trip it, so they are only logged (time, nodes, utilisation)
and replayed in one vectorised batch (``flush_log``: histogram, GPU state, busy and throughput
integrals) before anything else thermal happens to those nodes, so a job's checkpoint pause costs a few
list appends (plus, while an air zone cannot carry all its nodes at full load, their heat, which moves
that zone's room at once). A cool node going down or coming back (with no tripped node waiting for
room) is logged the same way. The replay solves the first-order recurrence once per *cell* of nodes
that saw the same entries (a job's nodes, ``_replay_cell``), and per (node, entry) pair for the rest
(``_replay_pairs``). Everything else goes through ``GpuState.update``; tests check the paths agree.
"""

from __future__ import annotations

import bisect
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from numpy.typing import NDArray

from twin import kernels_lazy
from twin.model.cooling import fast
from twin.model.cooling.common import _HIST_MAX_C, INF
from twin.model.cooling.arrays import CoolingArrays, CoolingParams

if TYPE_CHECKING:  # pragma: no cover
    from twin.model.cooling.ports import AgeingPort, AirPort, GpuPort, LazyPort
    from twin.model.cluster import Cluster
    from twin.model.engine import Engine

# the compiled kernels, imported at their first use (twin.kernels_lazy: a run without them imports no numba)
kernels_events = kernels_lazy.module("twin.kernels_events", globals(), "kernels_events")
kernels_replay = kernels_lazy.module("twin.kernels_replay", globals(), "kernels_replay")

_EB = np.zeros(0, dtype=np.bool_)  # (no service flags: kernels_replay.replay_units' empty array)
_EI8 = np.zeros(0, dtype=np.int8)  # (no changes of service: kernels_replay.group_pairs' empty array)
_UNDERFLOW = -750.0  # e^x is +0 below −745.13 (half the least subnormal): a margin for any exp's last bit



class DeferredReplay:
    """Room of the cooling component: the log of cool nodes' load changes and its replay."""

    ageing: AgeingPort  # wired by Thermal
    lazy: LazyPort  # wired by Thermal

    def __init__(self, params: CoolingParams, arrays: CoolingArrays, engine: Engine, cluster: Cluster, gpu: GpuPort,
                 air_rooms: AirPort) -> None:
        """Cool flags (all warm until ``start``), the empty log and the zones' full-load heat."""
        a, p = arrays, params
        self.params = params
        self.arrays = arrays
        self.engine = engine
        self._env = engine.env
        self.cluster = cluster
        self.gpu = gpu
        self.air_rooms = air_rooms
        n, u = p.n_nodes, p.units_per_node
        a.rmax_n = a.rbase.reshape(n, u).max(axis=1)
        self._tdp_rmax = (p.tdp_w if p.figs is None else p.figs[1]) * a.rmax_n  # set_cool's first product, node-wise
        a.cool = np.zeros(n, dtype=bool)
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
        self._scratch = np.empty(0)  # _replay_units' per-unit-pair arrays, reused (see _SCRATCH_MAX)
        self.tracing = self.gpu.trace_from <= 0.0 < self.gpu.trace_to
        self.gpu.multi_speed = False  # set in start()
        self.gpu.ucap = None  # set in start()
        if p.air is not None:
            full = self.air_rooms.air_heat_w(p.tdp_w, 1.0)  # a node at full load
            a.z_full = np.array([(e - s) * full for s, e in a.zones], dtype=np.float64)
            if p.figs is not None:  # node pools of other power figures: each node at its own full load
                full_n = self.air_rooms.air_heat_w(p.figs[1], 1.0, slice(None))
                a.z_full = np.array([float(full_n[s:e].sum()) for s, e in a.zones], dtype=np.float64)
            a.z_slack = a.z_full <= a.z_cap
        self.n_short = 0 if p.air is None else int(np.count_nonzero(~a.z_slack))  # zones without slack

    def flush_for(self, nodes: NDArray[np.int64] | slice) -> None:
        """Replay the log if it may hold changes of ``nodes`` (indices or a slice), before their state or
        conditions change. Only cool nodes are logged, and a node turns warm only through ``set_cool``
        after such a call (or after a full flush): so the log is replayed when one of ``nodes`` is cool,
        and otherwise left alone (a traced node, or a warm zone, does not replay everybody else's log)."""
        if self._log_t and np.count_nonzero(self.arrays.cool[nodes]):
            self.flush_log()

    def set_cool(self, nodes: NDArray[np.int64] | slice) -> None:
        """Recompute the cool flag of ``nodes`` (indices or a slice; see the constructor) and the count of
        warm nodes."""
        a, p = self.arrays, self.params
        if a.toff is None:
            ok = a.inlet[nodes] + self._tdp_rmax[nodes] * a.rfactor[nodes] < p.slow_c
        else:  # (a bound: the hottest offset with the largest R; cool is a shortcut, warm always exact)
            ok = a.inlet[nodes] + a.toff_max_n[nodes] + self._tdp_rmax[nodes] * a.rfactor[nodes] < p.slow_c
        ok &= ~np.isfinite(a.pcap[nodes])  # under a power-chain cap: followed directly
        if p.other is not None:  # a pool's node of other power figures is followed directly (the replay takes the
            ok &= ~p.other[nodes]  # hall's scalar figures: twin.kernels_replay)
        if self.tracing:
            ok &= ~a.trace_mask[nodes]
        if self.ageing.aged:
            ok[:] = False
        if self.lazy.silent_on:  # a node turning warm joins a group only at its next load change (groups are not
            turned = a.cool[nodes] & ~ok  # kept while every node is cool): until then its crossings are events
            if np.count_nonzero(turned):
                idx = np.arange(p.n_nodes)[nodes][turned]
                a.gid[idx] = -1
        a.cool[nodes] = ok
        self._n_warm = p.n_nodes - int(np.count_nonzero(a.cool))

    def _logged_heat(self, nodes: NDArray[np.int64], util: float, move: bool = True) -> None:
        """The air heat of logged (cool) nodes at their load change or change of service, applied at once
        while some zone cannot carry its full load (their GPUs' state waits for the replay); ``move``
        False: only set it (the rest of their load change comes next)."""
        up = self.cluster.down_count[nodes] == 0
        pd = fast.demand_w(self.params.idle_w, self.params.tdp_w, util) * up  # (as update computes it)
        heat = self.air_rooms.air_heat_w(pd, up)
        if move:
            self.air_rooms.zone_heat(nodes, nodes, heat)
        else:
            self.arrays.node_air_w[nodes] = heat

    def on_load(self, nodes: NDArray[np.int64], util: float) -> None:
        """Load change of ``nodes``: its cool nodes logged (replayed by ``flush_log``), the others applied.

        ``util`` is the nodes' new common utilisation (Topic.NODE_LOAD). The log keeps the array ``nodes``
        itself (publishers never change it afterwards) and ``util`` (and the nodes' speeds when a second
        source caps them); whether the nodes are in service follows from their own logged changes.
        """
        if self._n_warm:
            n = len(nodes)
            if self.lazy.silent_on:  # (groups matter for warm nodes only; a cool one has no crossing)
                self.lazy.group(nodes)
            # the cool ones among nodes, and whether their flags are the split kept for this array (below) in
            # one compiled call (np.count_nonzero(cool[nodes]), np.array_equal)
            sp = self._split.get(id(nodes))
            k, same = kernels_events.cool_count(self.arrays.cool, np.asarray(nodes, dtype=np.int64),
                                                sp[1] if sp is not None and sp[0] is nodes else _EB)
            if k != n:
                if not k:  # (no node cool: flush_for would find none of theirs in the log)
                    self.gpu.update(np.asarray(nodes, dtype=np.int64), True)
                    return
                # some cool, some not (a job with a traced node, or across a warm and a slack zone): the
                # warm ones now, the cool ones logged; the split is kept per array while the flags hold,
                # so the cool part is the same array at each change (a cell for the replay)
                if sp is None or sp[0] is not nodes or not same:
                    cool = self.arrays.cool[nodes]
                    if len(self._split) > 1024:
                        self._split.clear()
                    sp = self._split[id(nodes)] = (nodes, cool, np.asarray(nodes[~cool], dtype=np.int64),
                                                   nodes[cool])
                if self.n_short:  # the cool nodes' heat first: the warm ones' update moves the rooms
                    self._logged_heat(sp[3], util, move=False)
                self.gpu.update(sp[2], True)  # (sp[2]: the warm ones, as cool_count just confirmed)
                nodes = sp[3]
            if not n:
                return  # nothing changed
        elif not len(nodes):  # (every node cool: the whole array is logged)
            return
        self._log_t.append(self._env._now)
        self._log_nodes.append(nodes)
        self._log_util.append(util)  # = engine.node_util[nodes]: the publisher gave them all this value
        if self.gpu.multi_speed:  # speeds other than 1 possible: keep them as they are now
            self._log_sp[len(self._log_t) - 1] = self.cluster.node_speed(nodes)
        if self.n_short:  # some air zone cannot carry its full load: its heat moves its room now
            self._logged_heat(nodes, util)

    def log_state(self, node: int) -> None:
        """Log a cool node's change of service (down or up) like a load change: its utilisation and down
        count now (the replay powers its GPUs off while it is down)."""
        nodes = np.array([node], dtype=np.int64)
        self._log_up[len(self._log_t)] = bool(self.cluster.down_count[node] == 0)
        self._log_t.append(self._env._now)
        self._log_nodes.append(nodes)
        self._log_util.append(float(self.engine.node_util[node]))
        if self.gpu.multi_speed:
            self._log_sp[len(self._log_t) - 1] = self.cluster.node_speed(nodes)
        if self.n_short:
            self._logged_heat(nodes, float(self.engine.node_util[node]))

    def flush_log(self) -> None:
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
        n_entries = len(log_t)
        step = self._CHUNK
        if n_entries <= step:
            self._replay_log(np.array(log_t), np.array(log_u), arrs, ups, sps)
            return
        # a long log in consecutive chunks (the same result up to rounding; more nodes make cells in a
        # shorter stretch of time, where fewer of them also ran a small job or went down)
        up_i, sp_i = sorted(ups), sorted(sps)
        for c0 in range(0, n_entries, step):
            c1 = min(n_entries, c0 + step)
            cu = {i - c0: ups[i] for i in up_i[bisect.bisect_left(up_i, c0):bisect.bisect_left(up_i, c1)]}
            cs = {i - c0: sps[i] for i in sp_i[bisect.bisect_left(sp_i, c0):bisect.bisect_left(sp_i, c1)]}
            self._replay_log(np.array(log_t[c0:c1]), np.array(log_u[c0:c1]), arrs[c0:c1], cu, cs)

    _CHUNK = 2048  # log entries replayed together at most (cost; results: rounding)
    _SCRATCH_MAX = 1 << 21  # the per-unit-pair arrays of _replay_units kept between flushes, elements at most (16 MiB)

    def _replay_log(self, tk: NDArray[np.float64], ut: NDArray[np.float64], arrs: list[NDArray[np.int64]],
                    ups: dict[int, bool], sps: dict[int, NDArray[np.float64]]) -> None:
        """Replay log entries at times ``tk`` (h, ascending) with utilisations ``ut`` over the node arrays
        ``arrs``; ``ups``: the entries that are a node's change of service (up or not), ``sps``: the nodes'
        speeds where logged, by entry index (see ``flush_log``). A node's service between its own changes
        is the last change's, or at the first entry its state when the log began (``gon``): every change of
        service of a logged (cool) node is logged or replays the log first."""
        k = len(tk)
        lens = np.fromiter(map(len, arrs), dtype=np.int64, count=k)  # pairs of each entry (≥ 1)
        pos = lens.cumsum() - lens  # each entry's first pair
        # every (node, entry) pair in time order; changes of service and speeds per pair where logged
        nd = np.concatenate(arrs, dtype=np.int64, casting="unsafe")
        pe = np.arange(k, dtype=np.int32).repeat(lens)
        n_pairs = len(nd)
        st: NDArray[np.int8] | None = None  # per pair: 1 / 0 a change to up / down, −1 a load change
        if ups:
            st = np.full(n_pairs, -1, dtype=np.int8)
            st[pos[np.fromiter(ups, dtype=np.int64, count=len(ups))]] = np.fromiter(
                ups.values(), dtype=np.int8, count=len(ups))  # (single-node entries)
        sp: NDArray[np.float64] | None = None  # None: no speed logged (a single speed source)
        if sps:  # entries logged before a second speed source existed were all at speed 1
            sp = np.ones(n_pairs)
            for i, a in sps.items():
                sp[pos[i]:pos[i] + lens[i]] = a
        dbusy_k = np.zeros(k)  # change of busy GPUs at each entry
        several_speeds = self.gpu.multi_speed
        cells: list[tuple[NDArray[np.int64], NDArray[np.int64]]] = []
        in_cell = _EB
        if not several_speeds:
            cells, in_cell = self._cells(arrs, lens, pos, nd)
            if not cells:
                in_cell = _EB
        dtp_k = self._replay_pairs(tk, ut, nd, pe, st, sp, in_cell, dbusy_k, several_speeds)
        for entries, nodes in cells:
            self._replay_cell(tk[entries], ut[entries], nodes, entries, dbusy_k)
        # ---- site totals and their integrals. The integrals may already run past some entries (the direct
        # path integrates up to its own events without flushing logs of other nodes): each entry's change
        # counts from its time to the end, the totals before it over the rest.
        tot, acc = self.arrays.tot, self.arrays.acc
        t_end = max(self.gpu.t_acc, float(tk[-1]))
        held = t_end - tk  # how long each entry's change has held by t_end (≥ 0)
        span = t_end - self.gpu.t_acc
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
        self.gpu.t_acc = t_end
        self.arrays.tp_t.extend(tk.tolist())
        self.arrays.tp_dv.extend(dtp_k.tolist())

    _CELL_MIN_PAIRS = 256  # a cell must stand for at least this many (node, entry) pairs (cost; results: rounding)

    def _cells(self, arrs: list[NDArray[np.int64]], lens: NDArray[np.int64], pos: NDArray[np.int64],
               nd: NDArray[np.int64]) -> tuple[list[tuple[NDArray[np.int64], NDArray[np.int64]]], NDArray[np.bool_]]:
        """The cells of the log (see ``flush_log``), as (entries ascending, nodes), and a mask of their nodes
        (``lens``, ``pos``: each entry's number of pairs and first pair in ``nd``, the logged nodes).

        Only node arrays logged at least twice with at least 8 nodes (a job's array at its checkpoint
        pauses) make cells: a node in one of those and nowhere else, in service at all its entries, is
        grouped with the nodes in exactly the same such arrays; the rest go pair by pair."""
        p = self.params
        k = len(arrs)
        n_nodes = p.n_nodes
        in_cell = np.zeros(n_nodes, dtype=bool)
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
            by_array = big_i[inv.reshape(-1).argsort(kind="stable")]  # (np.split of it at the arrays' ends)
            ends = cnt.cumsum().tolist()
            n_of = cnt.tolist()
            big = [by_array[ends[a] - n_of[a]:ends[a]] for a in first.argsort().tolist() if n_of[a] >= 2]
        if not big:
            return [], in_cell
        big_entry = np.zeros(k, dtype=bool)
        n_words = (len(big) + 63) // 64
        sig = np.zeros((n_nodes, n_words), dtype=np.uint64)  # bit j: the node is in big array j
        for j, ent in enumerate(big):
            big_entry[ent] = True
            sig[arrs[int(ent[0])], j >> 6] |= np.uint64(1 << (j & 63))  # (an array holds each node once)
        u = p.units_per_node
        other = ~self.arrays.gon if u == 1 else ~self.arrays.gon[::u]  # out of service when the log began (units of a node alike) ...
        # ... or in another entry (changes of service are single-node entries): other[nd[~big_entry[pe]]] = True, compiled
        kernels_replay.mark_entries(nd, pos, lens, big_entry, other)
        cand = np.flatnonzero(sig.any(axis=1) & ~other)
        if not len(cand):
            return [], in_cell
        if n_words == 1:  # (a 1-d unique is several times faster than unique rows)
            k1, inv, cnt = np.unique(sig[cand, 0], return_inverse=True, return_counts=True)
            keys = k1[:, None]
        else:
            keys, inv, cnt = np.unique(sig[cand], axis=0, return_inverse=True, return_counts=True)
        members = cand[inv.reshape(-1).argsort(kind="stable")]
        ends = cnt.cumsum()
        # one R and inlet per cell (u > 1: per node, its fan factor and inlet; the units' own R and offsets
        # are taken per unit by the cell replay)
        R = self.arrays.rbase[members] * self.arrays.rfactor[members] if u == 1 else self.arrays.rfactor[members]
        tin = self.arrays.inlet[members]
        cells = []
        for c in range(len(keys)):
            s, e = int(ends[c] - cnt[c]), int(ends[c])
            js = [64 * wi + b for wi, word in enumerate(keys[c].tolist()) for b in range(64) if word >> b & 1]
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

    def _replay_cell(self, t: NDArray[np.float64], util: NDArray[np.float64], nodes: NDArray[np.int64],
                     entries: NDArray[np.int64], dbusy_k: NDArray[np.float64]) -> None:
        """Replay one cell (see ``flush_log``): times ``t`` (h) and utilisations ``util`` of its entries
        ``entries`` (ascending) over ``nodes``, one thermal unit per node, all in service; adds the cell's
        changes of busy GPUs to ``dbusy_k``."""
        n = len(nodes)
        g = self.params.gpus_per_node
        if self.params.units_per_node > 1:
            self._replay_cell_units(t, util, nodes)
        else:
            self._replay_cell_thermal(t, util, nodes)
        # busy GPUs: every node in service, busy while its utilisation is above 0
        b = (util > 0.0).astype(np.float64)
        d = np.empty(len(t))
        d[0] = g * (n * b[0] - np.count_nonzero(self.arrays.n_busy[nodes]))
        d[1:] = (g * n) * (b[1:] - b[:-1])
        dbusy_k[entries] += d
        busy_last = g * b[-1]
        self.arrays.n_busy[nodes] = busy_last
        self.arrays.n_spsum[nodes] = busy_last
        self.arrays.n_tp[nodes] = busy_last

    def _replay_cell_thermal(self, t: NDArray[np.float64], util: NDArray[np.float64], nodes: NDArray[np.int64]) -> None:
        """The GPU state of a cell of one-unit nodes (see ``_replay_cell``): histogram, temperatures, peak."""
        a, p = self.arrays, self.params
        n = len(nodes)
        i0 = int(nodes[0])
        R = float(a.rbase[i0] * a.rfactor[i0])
        tin = float(a.inlet[i0])
        tss = fast.steady_c(tin, fast.demand_w(p.idle_w, p.tdp_w, util), R)  # steady state after each entry
        k_s = -3600.0 / (R * p.c_j_per_c)  # log of the decay per hour
        # each node's first segment: from its own state to the cell's first entry
        tss0 = a.tss[nodes]
        dur0 = t[0] - a.t0[nodes]
        lg0 = dur0 * k_s
        T = fast.step_log_c(a.T[nodes], tss0, lg0)
        T1max = float(T.max())  # the hottest node at the first entry
        bins = [tss0]
        wts = [dur0 * a.gon[nodes]]
        lg = np.empty(0)
        if len(t) > 1:  # the segments all its nodes share
            dur = t[1:] - t[:-1]
            lg = dur * k_s
            T = fast.shared_segments_c(T, tss[:-1], lg)
            bins.append(tss[:-1])
            wts.append(dur * float(n))
        b_all = np.concatenate(bins)
        a.hist += np.bincount(np.clip(b_all, 0.0, _HIST_MAX_C - 1).astype(np.intp),
                                 weights=np.concatenate(wts), minlength=_HIST_MAX_C) * p.gpus_per_unit
        a.T[nodes] = T
        a.t0[nodes] = t[-1]
        a.tss[nodes] = tss[-1]
        a.gon[nodes] = True
        # peak: a first-order segment is hottest at one of its ends, so the peak is the hottest temperature
        # at the entries' times; looked for only when some steady state could exceed the peak so far
        # (temperatures never exceed the larger of where they start and their steady states)
        if float(b_all.max()) > self.gpu.tpeak_c:
            # the nodes' temperatures at each entry are one increasing affine map of their temperature at
            # the first, so the hottest node stays the hottest: follow it
            x = peak = T1max
            for a_j, c_j, ts_j in zip(np.exp(lg).tolist(), (-np.expm1(lg)).tolist(), tss[:-1].tolist()):
                x = a_j * x + c_j * ts_j
                if x > peak:
                    peak = x
            if peak > self.gpu.tpeak_c:
                self.gpu.tpeak_c = peak

    _PEAK_ELEMS = 1 << 17  # decay factors computed at once when a cell's peak is followed (memory: 1 MiB)
    _PEAK_MARGIN_C = 1e-6  # a unit this far below the peak so far is not followed (≫ the walk's rounding)

    _FORGET = 40.0  # segments more than this many time constants before the end leave no trace in T (e^-40)

    def _replay_cell_units(self, t: NDArray[np.float64], util: NDArray[np.float64], nodes: NDArray[np.int64]) -> None:
        """The GPU state of a cell (see ``flush_log``) of nodes with one unit per GPU: the nodes share their
        entries, fan factor and inlet, each unit has its own R and inlet offset. The segments the cell
        shares have few distinct powers (its utilisations), so the histogram takes each unit's steady
        state at each power with the power's total time; the temperature after the last entry needs only
        the segments within ``_FORGET`` time constants of the end (earlier ones are weighted below e^-40,
        under the rounding of a temperature) unless they are all that recent; the peak is followed per
        unit over every segment only when some steady state could exceed it."""
        a, p = self.arrays, self.params
        w = p.gpus_per_unit
        gu = self.gpu.gpus(nodes)
        i0 = int(nodes[0])
        R = a.rbase[gu] * a.rfactor[i0]
        tin = np.full(len(gu), a.inlet[i0])
        if a.toff is not None:
            tin += a.toff[gu]
        tau = fast.tau_s(R, p.c_j_per_c)
        P = fast.demand_w(p.idle_w, p.tdp_w, util)  # per GPU after each entry (every node in service)
        # each unit's first segment: from its own state to the first entry
        tss0 = a.tss[gu]
        dur0 = t[0] - a.t0[gu]
        T = fast.step_c(a.T[gu], tss0, dur0, tau)
        T1max = float(T.max())
        bins = [tss0]
        wts = [dur0 * a.gon[gu]]
        n_entries = len(t)
        hi = float(tss0.max())
        if n_entries > 1:
            dur = t[1:] - t[:-1]
            lv, inv = np.unique(P[:-1], return_inverse=True)
            time_at = np.bincount(inv.reshape(-1), weights=dur, minlength=len(lv))  # time at each power
            tss_l = fast.steady_c(tin[:, None], lv[None, :], R[:, None])  # units × powers
            bins.append(tss_l.ravel())
            wts.append(np.tile(time_at, len(gu)))
            hi = max(hi, float(tss_l[:, -1].max()))
            # the temperature after the last entry: the shared segments from k0 on, per unit
            back = dur[::-1].cumsum()[::-1]  # time from each segment's start to the end, h
            far = np.flatnonzero(back * 3600.0 >= self._FORGET * float(tau.max()))
            k0 = int(far[-1]) if len(far) else 0
            x = T if k0 == 0 else fast.steady_c(tin, P[k0 - 1], R)  # (its weight is below e^-40 if k0 > 0)
            for k in range(k0, n_entries - 1):
                x = fast.step_c(x, fast.steady_c(tin, P[k], R), dur[k], tau)
            T = x
        b_all = np.concatenate(bins)
        a.hist += np.bincount(np.clip(b_all, 0.0, _HIST_MAX_C - 1).astype(np.intp),
                                 weights=np.concatenate(wts), minlength=_HIST_MAX_C) * w
        # peak: the hottest temperature at the entries' times (a first-order segment is hottest at one of its
        # ends), followed only when some steady state could exceed the peak so far
        if hi > self.gpu.tpeak_c:
            peak = T1max
            if n_entries > 1:  # each segment's step compiled (twin.kernels_replay.peak_cell), numpy's exponentials
                x = fast.step_c(a.T[gu], tss0, dur0, tau)
                # only the units that may pass the peak so far: a unit whose temperature at the first entry and
                # steady states all lie below it by a margin stays below it (each step is a weighted mean of
                # the two, up to a few ulps a step), so it adds no maximum above it, and nothing else of the
                # walk is kept (the exponentials are elementwise: the same for the units taken)
                hot = np.flatnonzero(np.maximum(x, tss_l[:, -1]) > self.gpu.tpeak_c - self._PEAK_MARGIN_C)
                if len(hot) < len(gu):
                    x, tin_h, R_h, tau_h = x[hot], tin[hot], R[hot], tau[hot]
                else:
                    tin_h, R_h, tau_h = tin, R, tau
                if len(hot):
                    rows = max(1, self._PEAK_ELEMS // len(hot))  # segments a block (its decay factors' memory)
                    for k in range(0, n_entries - 1, rows):
                        fac = np.exp(np.divide.outer(dur[k:k + rows] * -3600.0, tau_h))  # fast.step_c's factors
                        peak = kernels_replay.peak_cell(x, tin_h, R_h, P, fac, k, peak)
            if peak > self.gpu.tpeak_c:
                self.gpu.tpeak_c = peak
        a.T[gu] = T
        a.t0[gu] = t[-1]
        a.tss[gu] = fast.steady_c(tin, P[-1], R)
        a.gon[gu] = True

    def _replay_pairs(self, tk: NDArray[np.float64], ut: NDArray[np.float64], nd: NDArray[np.int64],
                      pe: NDArray[np.int32], st: NDArray[np.int8] | None, sp: NDArray[np.float64] | None,
                      in_cell: NDArray[np.bool_], dbusy_k: NDArray[np.float64],
                      several_speeds: bool) -> NDArray[np.float64] | None:
        """Replay the (node ``nd``, entry ``pe``) pairs (in entry order) of the nodes not in a cell (``in_cell``, per
        node; empty: none is) grouped by node in time order, with their changes of service ``st`` (see
        ``_replay_log``) and speeds ``sp``; add their changes of busy GPUs to ``dbusy_k``. With several speed sources,
        return the change of effective GPUs at each entry (None when every pair is in a cell)."""
        g, u = self.params.gpus_per_node, self.params.units_per_node
        k = len(tk)
        # ---- the pairs grouped by node, stable in time, their times, utilisations and service, and the busy GPUs
        # (per pair busy or not; n_busy holds 0 or g for every node, see _account) in one compiled call
        # (twin.kernels_replay.group_pairs: a counting sort where numpy took a mask, a stable argsort, bincounts and
        # the service's running maximum)
        o, nodes_g, cnt, start, t_s, u_s, up_a, has_up, d, busy_last = kernels_replay.group_pairs(
            nd, pe, _EI8 if st is None else st, st is not None, in_cell, self.params.n_nodes, tk, ut,
            self.arrays.gon, u, self.arrays.n_busy, float(g), dbusy_k)
        if not len(o):
            return None
        lastpos = start + cnt - 1  # last pair of each node's group
        up_s = up_a if has_up else None
        out: NDArray[np.float64] | None = None
        if several_speeds:  # speeds other than 1: effective GPUs change by the busy change × speed
            # each pair at its node's speed when it was logged (all 1 if no second source was there yet)
            sp_s = sp[o] if sp is not None else np.ones(len(o))
            out = cast(NDArray[np.float64], np.bincount(pe[o], weights=d * (float(g) * sp_s), minlength=k))
            self.arrays.n_tp[nodes_g] = busy_last * sp_s[lastpos]
        else:
            self.arrays.n_tp[nodes_g] = busy_last
        self.arrays.n_busy[nodes_g] = busy_last
        self.arrays.n_spsum[nodes_g] = busy_last
        self._replay_units(nodes_g, cnt, start, lastpos, t_s, u_s, up_s)
        return out

    def _replay_units(self, nodes_g: NDArray[np.int64], cnt: NDArray[np.int64], start: NDArray[np.int64],
                      lastpos: NDArray[np.int64],
                      t_s: NDArray[np.float64], u_s: NDArray[np.float64], up_s: NDArray[np.bool_] | None) -> None:
        """Per thermal unit, the second half of ``_replay_pairs``: the histogram, the closed-form temperature
        after each unit's last pair, and the peak. The pairs come grouped by node (``t_s``, ``u_s``,
        ``up_s``: time, utilisation and service after each pair; ``nodes_g`` the nodes,
        ``cnt``, ``start``, ``lastpos`` their groups' sizes, first and last pairs)."""
        a, p = self.arrays, self.params
        u = p.units_per_node
        if u == 1:
            cnt_u, start_u, g0 = cnt, start, nodes_g
            R_g = (a.rbase * a.rfactor)[g0]
            tin_g = a.inlet[g0]
        else:  # each node's pairs for each of its units, grouped by unit (in time order)
            cnt_u = np.repeat(cnt, u)
            start_u = cnt_u.cumsum() - cnt_u
            g0 = (nodes_g[:, None] * u + p.unit_range).ravel()
            R_g = (a.rbase * np.repeat(a.rfactor, u))[g0]
            tin_g = np.repeat(a.inlet, u)[g0]
            if a.toff is not None:
                tin_g += a.toff[g0]
        # compiled (twin.kernels_replay): steady states, histogram, log-decays, the units' last state; then
        # fast.grouped_segments_c's exponentials and segment sums in numpy (R and inlet are constant over the log:
        # every change of them flushes first)
        n_pairs_u = len(t_s) * u
        buf = self._scratch  # (reused from flush to flush up to _SCRATCH_MAX: fresh pages cost more than the kernel)
        if len(buf) < 3 * n_pairs_u:
            buf = np.empty(3 * n_pairs_u)
            if len(buf) <= self._SCRATCH_MAX:
                self._scratch = buf
        prev_tss, lg, decay = buf[:n_pairs_u], buf[n_pairs_u:2 * n_pairs_u], buf[2 * n_pairs_u:3 * n_pairs_u]
        log_g = np.empty(len(g0))  # each unit's summed log-decay over its pairs
        T0 = a.T[g0]
        tail = np.empty(n_pairs_u, dtype=np.int64)  # (only the pages of the positions written are touched)
        lo, hi, n_tail = kernels_replay.replay_units(
            t_s, u_s, _EB if up_s is None else up_s, up_s is not None, u, cnt, start, start_u, g0, R_g, tin_g,
            p.idle_w, p.tdp_w, p.c_j_per_c, p.gpus_per_unit, _HIST_MAX_C, a.tss, a.t0, a.gon, a.hist, prev_tss,
            lg, decay, log_g, _UNDERFLOW, tail)
        # each pair's term −expm1(lg)·prev_tss·e^decay: a pair whose decay to its unit's last pair is below
        # _UNDERFLOW (most of them: a log spans many time constants) has e^decay = +0 in any exp, so its term,
        # prev_tss × 0, is in decay already (the kernel); the exponentials are taken of the others only
        # (numpy's, elementwise), their terms written over their decays
        tail = tail[:n_tail]
        c = np.expm1(lg[tail])
        np.negative(c, out=c)
        c *= prev_tss[tail]
        c *= np.exp(decay[tail])
        decay[tail] = c
        a.T[g0] = np.exp(log_g) * T0 + np.add.reduceat(decay, start_u)
        # peak: the hottest temperature at the pairs' times (a first-order segment is hottest at one of its
        # ends), followed only for units with a steady state above the peak so far (temperatures never
        # exceed the larger of where they start and their steady states)
        if hi > self.gpu.tpeak_c:
            top = np.maximum.reduceat(prev_tss, start_u)  # each unit's highest steady state before its pairs
            hot = np.flatnonzero(top > self.gpu.tpeak_c)
            # the unit of the highest steady state first, alone; then only the hot units that may pass the peak it
            # reached (a unit's walk stays below the larger of its start and its steady states, up to a few ulps a
            # step: the margin), so the peak is the one of walking every hot unit
            j = hot[int(np.argmax(top[hot]))]
            peak = self._peak_pairs(hot[hot == j], start_u, cnt_u, T0, lg, prev_tss, -INF)
            bound = np.maximum(T0[hot], top[hot])
            rest = hot[(bound > max(self.gpu.tpeak_c, peak) - self._PEAK_MARGIN_C) & (hot != j)]
            if len(rest):
                peak = self._peak_pairs(rest, start_u, cnt_u, T0, lg, prev_tss, peak)
            if peak > self.gpu.tpeak_c:
                self.gpu.tpeak_c = peak

    @staticmethod
    def _peak_pairs(units: NDArray[np.int64], start_u: NDArray[np.int64], cnt_u: NDArray[np.int64],
                    T0: NDArray[np.float64], lg: NDArray[np.float64], prev_tss: NDArray[np.float64], peak: float) -> float:
        """The hottest temperature (°C) at the pairs' times of unit groups ``units`` (each from ``T0`` through its
        pairs ``start_u … start_u + cnt_u − 1``, decay logs ``lg`` and steady states ``prev_tss``), or ``peak`` if
        higher: their pairs gathered one unit after another, numpy's e^lg and −expm1(lg) of those (elementwise: the
        values of the whole array's), each unit's pairs in order (``twin.kernels_replay.peak_pairs``)."""
        s0, c0 = start_u[units], cnt_u[units]
        at = c0.cumsum() - c0  # each unit's first pair among the gathered ones
        pos = np.repeat(s0 - at, c0) + np.arange(int(c0.sum()))
        lg_h = lg[pos]
        return float(kernels_replay.peak_pairs(T0[units], at, c0, np.exp(lg_h), -np.expm1(lg_h), prev_tss[pos], peak))
