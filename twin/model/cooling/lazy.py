"""Silent slowdown crossings (issue 23, performance): with one thermal unit per GPU, a GPU reaching its
slowdown temperature is an event only where it can change a job's pace.

A job's progress depends only on its slowest GPU (the engine's speed of a job is the minimum over its
nodes, a node's thermal speed its slowest GPU's). When an update leaves some free GPUs heading above the
slowdown temperature, each will, at its crossing time t_x, cap its power at P_x and slow to s_x; all of
that is known at the update (the stash: ``x_P``, ``x_sp``, ``x_tss``, ``x_ok``, written by
``twin.kernels_units.update_units``). The crossings of a *group* (the nodes a job's load change was
published for, ``Topic.NODE_LOAD``: the job's nodes) are walked in time order from the group's slowest
published speed: a crossing whose s_x is below every speed the group has by then lowers the job's pace
and stays an event (the wake-up; there the unit takes its stashed state in closed form, ``settle`` with no
held time, not a direct update of its node); every other one is *silent* (``plan``). A silent crossing
changes nothing anyone reads before its node's next update: the job's pace is already at or below s_x.
It is settled when its node is next updated, its group re-planned, or at the end (``settle``): the unit
takes its capped state from t_x on, and what the eager wake-up would have changed at t_x is added for
[t_x, now) in closed form: the temperature histogram, the throttled-GPU and speed integrals, the
effective-GPU series (changes recorded at t_x), the site IT energy (and a correction series merged into
the ``site_power_w`` level at the end, so energy, PUE and cost read the exact piecewise-constant power).

So events are due where a job's pace, a unit's state (a cooling unit, a load, an inlet step) or a trip
changes, and the cost of a load change grows with the pace changes it causes, not with its GPUs.

Taken only where nothing else reads a node's power or a GPU's temperature between events: not with
ageing on the GPU's temperature, not while a reader needs exact node power (``ITPower.need_exact``: the power
chain's site cap, and its feed loads while a feed is on battery or a UPS is out; when the first such reader
comes, every due silent crossing is settled and the pending ones become events again, ``_on_exact``), and
not for traced nodes inside their trace window (their rows are the eager path's there); otherwise every
crossing is an event, as with identical GPUs. A second speed source (the power chain's PSU and site caps)
leaves the walk as it is (a crossing at or above the group's slowest thermal speed cannot lower the job's
pace, whatever the other source's speeds); the effective-GPU series then counts each node at the lower of
its thermal and other speeds, and a node whose other speed changes has its due crossings settled first
(``GpuState.on_speed``). ``tests/test_thermal_perf.py``, ``tests/test_thermal_hetero.py`` and
``tests/test_thermal_lazy_power.py`` check the two paths agree (every node traced against untraced).
"""

from __future__ import annotations

import math

from typing import Any, TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from twin import kernels_lazy
from twin.model.cooling.common import _EPS_H, INF
from twin.model.cooling.arrays import B_SILENT, B_XOK, R_DUE, R_PW, R_XP, R_XSP, R_XTSS, CoolingArrays, CoolingParams

if TYPE_CHECKING:  # pragma: no cover
    from twin.model.cooling.ports import AgeingPort, GpuPort, ReplayPort
    from twin.model.cluster import Cluster
    from twin.model.engine import Engine
    from twin.model.it_power import ITPower

# the compiled kernels, imported at their first use (twin.kernels_lazy: a run without them imports no numba)
kernels_events = kernels_lazy.module("twin.kernels_events", globals(), "kernels_events")
kernels_units = kernels_lazy.module("twin.kernels_units", globals(), "kernels_units")



_EF = np.empty(0)  # an empty float array: the kernels' "none" for an optional array


class LazyCrossings:
    """Room of the cooling component: silent slowdown crossings of per-GPU units."""

    ageing: AgeingPort  # wired by Thermal
    gpu: GpuPort  # wired by Thermal
    replay: ReplayPort  # wired by Thermal

    def __init__(self, params: CoolingParams, arrays: CoolingArrays, engine: Engine, cluster: Cluster,
                 it: ITPower) -> None:
        a, p = arrays, params
        self.params = params
        self.arrays = arrays
        self.engine = engine
        self.cluster = cluster
        self.it = it
        n_units, n = p.n_units, p.n_nodes
        self.silent_on = False  # decided in start(): see start
        self.rose = False  # since the last plan, an update raised a published speed or took a node out of service
        self.n_silent = 0
        self.silent = a.bblk[B_SILENT, :n_units]  # the unit's pending slowdown crossing is silent (a row of the block)
        a.t_due = a.t_next  # the wake-up's times: t_next less the silent crossings (the same array while off)
        a.gid = np.full(n, -1, dtype=np.int64)  # per node: its group (-1: none yet)
        self._gid_of: dict[int, tuple[NDArray[np.int64], int]] = {}  # id(published array) -> (array, group)
        self._groups: dict[int, NDArray[np.int64]] = {}
        self._next_gid = 0
        self.settled_sp: list[NDArray[np.int64]] = []  # nodes whose speed a settling inside an update changed
        # site power corrections: times (h) and changes (W), in the order kept, the first _pw_n of two buffers grown
        # by doubling (one copy each at the end, not a list of ~30,000 small arrays a year to join and free)
        self._pw_t: NDArray[np.float64] = np.empty(0)
        self._pw_dv: NDArray[np.float64] = np.empty(0)
        self._pw_n = 0

    def start(self) -> None:
        """Silent crossings with one unit per GPU and no ageing on GPU temperature, any speed sources (module
        docstring); while a reader needs exact node power they stay events (``_on_exact``, ``plan``)."""
        p = self.params
        self.silent_on = p.units_per_node > 1 and not self.ageing.aged
        if not self.silent_on:
            return
        n_units = p.n_units
        # the other speed sources' arrays (the power chain's): effective GPUs count a node at its lowest speed
        self.oth_caps = [a for a in self.cluster.speed_caps.values() if a is not self.arrays.speed_caps]
        # per node, the lowest of those speeds as of its last NODE_SPEED (on_speed; a source that started
        # first may have published already)
        self.arrays.oth_n = self.other_speeds(p.all_nodes)
        self.arrays.x_cap = np.full(n_units, INF) if self.gpu.ucap is not None else None  # thermal cap after the crossing, W
        self.it.watch_exact(self._on_exact)
        a = self.arrays  # (the float stash: views of rows of the units' block, arrays.R_*)
        a.t_due = a.ublk[R_DUE, :n_units]
        a.t_due[:] = a.t_next
        a.x_P = a.ublk[R_XP, :n_units]  # W per GPU after the unit's slowdown crossing
        a.x_P[:] = 0.0
        a.x_sp = a.ublk[R_XSP, :n_units]  # speed after it
        a.x_sp[:] = 1.0
        a.x_tss = a.ublk[R_XTSS, :n_units]  # steady state after it, °C
        a.x_tss[:] = 0.0
        a.x_ok = a.bblk[B_XOK, :n_units]  # may be silent (a slowdown crossing, no shutdown after it, untraced)
        a.x_ok[:] = False
        a.pw = a.ublk[R_PW, :n_units]  # power per GPU now (W), kept where units may cross silently
        a.pw[:] = 0.0
        self.traced_u: NDArray[np.bool_] | None = None  # units whose crossings stay events: those of traced nodes while tracing
        self.trace_units(self.replay.tracing)
        # plan_one's arguments that stay the same objects from here on (bound once: fewer lookups per plan)
        self._pa = ((a.gid, p.units_per_node),
                    (a.t_next, a.kind, self.silent, self.cluster.down_count, a.speed_caps, a.x_sp, a.x_ok, a.t_due))

    def trace_units(self, on: bool) -> None:
        """Tracing turns ``on`` or off: a traced node's crossings are events only inside the trace window (its
        rows are the eager path's there); outside it they may be silent like any other's. (Turning on, the
        caller updates the traced nodes next, which re-stashes and re-plans their crossings.)"""
        a, p = self.arrays, self.params
        if self.silent_on:
            self.traced_u = np.repeat(a.trace_mask, p.units_per_node) if on and a.trace_mask.any() else None

    # ------------------------------------------------------------------------------------ groups
    def group(self, nodes: NDArray[np.int64]) -> None:
        """A load change was published for ``nodes`` (a job's nodes): they form a group."""
        e = self._gid_of.get(id(nodes))
        if e is None or e[0] is not nodes:
            if len(self._groups) > 4096:  # forget groups no node belongs to any more
                live = set(np.unique(self.arrays.gid).tolist())
                self._groups = {g: a for g, a in self._groups.items() if g in live}
                self._gid_of = {k: v for k, v in self._gid_of.items() if v[1] in live}
            gid = self._next_gid
            self._next_gid += 1
            self._gid_of[id(nodes)] = (nodes, gid)
            self._groups[gid] = nodes
        else:
            gid = e[1]
        self.arrays.gid[nodes] = gid

    # ------------------------------------------------------------------------------------ planning
    def plan(self, nodes: NDArray[np.int64]) -> None:
        """After an update of ``nodes``: settle the due silent crossings of their groups, decide which pending
        crossings of those groups are silent, and schedule the wake-up at the first that is not."""
        a, p = self.arrays, self.params
        now = self.engine.env._now
        if self.it.exact:  # a reader needs exact node power: every crossing stays an event
            self.wake_at_due()
            return
        g0 = int(a.gid[nodes[0]])
        pa0, pa1 = self._pa  # ((gid_of, u), (t_next, kind, silent, down, caps, x_sp, x_ok, t_due))
        rose = self.rose
        if g0 >= 0 and not (self.n_silent and rose):  # the common case: one group, nothing to settle first,
            keep = now + _EPS_H if self.n_silent else -INF  # then the wake-up, in one compiled call
            one, d, m = kernels_events.plan_one(nodes, self._groups[g0], g0, *pa0, keep, *pa1, True)
            if one:  # (else: nodes of several groups, below)
                self.rose = False
                self.n_silent += d
                if m < self.gpu.wake_t:  # (wake_at_due)
                    self.gpu.schedule_wake(m)
                return
        self.rose = False
        # (compiled: not np.count_nonzero(a.gid[nodes] != g0))
        gl = [g0] if kernels_events.all_eq_at(a.gid, nodes, g0) else np.unique(a.gid[nodes]).tolist()
        m = math.nan  # (none planned yet)
        for gid in gl:
            if gid < 0:
                continue  # not in a group: every crossing stays an event
            arr = self._groups[gid]
            # due silent crossings rest on the group's published speeds staying as low as they were: settled
            # before one rose (or a node left service); while speeds only fell they may wait (the walk
            # reads published speeds, which a due crossing would only lower: it finds fewer silent, never more)
            if self.n_silent and rose:  # (settle_in of the units of the group's nodes still in it, in one call)
                idx, cleared = kernels_events.group_due(arr, gid, a.gid, p.units_per_node, now + _EPS_H, self.silent,
                                                        a.t_next, bool(self.gpu.in_update))
                self.n_silent -= cleared
                if len(idx):
                    self.settle(idx, now)
            keep = now + _EPS_H if self.n_silent and not rose else -INF  # due silent ones not settled stay
            _, d, m = kernels_events.plan_one(arr, arr, gid, *pa0, keep, *pa1, False)
            self.n_silent += d  # (kernels_events.plan_group, and the earliest t_due after it)
        if m == m:  # the wake-up at the earliest t_due after the last group's plan
            if m < self.gpu.wake_t:
                self.gpu.schedule_wake(m)
        else:
            self.wake_at_due()

    def wake_at_due(self) -> None:
        """Schedule the wake-up at the earliest crossing that is an event, if earlier than the one pending."""
        m = float(self.arrays.t_due.min())
        if m < self.gpu.wake_t:
            self.gpu.schedule_wake(m)

    def other_speeds(self, nodes: Any) -> NDArray[np.float64]:
        """The lowest speed of ``nodes`` over the speed sources other than thermal (1 with none)."""
        out = np.ones(len(nodes))
        for a in self.oth_caps:
            np.minimum(out, a[nodes], out=out)
        return out

    # ------------------------------------------------------------------------------------ settling
    def settle_in(self, gsl: Any, now: float) -> None:
        """Settle the silent crossings of units ``gsl`` (a slice or indices) due by ``now``; the others lose
        their silent flag only through the caller's update or plan."""
        gi = self.arrays.uidx[gsl] if isinstance(gsl, slice) else gsl
        idx, cleared = kernels_units.silent_due(gi, now + _EPS_H, self.silent, self.arrays.t_next, bool(self.gpu.in_update))
        self.n_silent -= cleared  # (being updated: re-planned from their new state)
        if len(idx):
            self.settle(idx, now)

    def settled_in(self, cleared: int, n_sil: int, sres: NDArray[np.float64], ntp: int, m: int, e_wh: float,
                   dP_sum: float, now: float) -> None:
        """What :meth:`settle_in` and :meth:`settle` do after their arithmetic, for the settling that an update
        did inside its compiled call (``twin.kernels_units.update_nodes``): ``cleared`` flags cleared and
        ``n_sil`` crossings settled; ``sres`` its results as one array: the ``ntp`` effective GPUs' changes (times,
        then values), the ``m`` site power's corrections (times, then changes) and the nodes whose speed changed
        (as floats, exact; published once by the update)."""
        self.n_silent -= cleared + n_sil
        if ntp:
            self._record_tp(sres[:ntp], sres[ntp:2 * ntp])
        z = 2 * ntp + m
        self._record_steps(sres, 2 * ntp, sres, z, m, e_wh, dP_sum, now)
        z += m
        if len(sres) > z:
            self.settled_sp.append(sres[z:].astype(np.int64))

    def _record_tp(self, tp_t: NDArray[np.float64], tp_dv: NDArray[np.float64]) -> None:
        """Keep the effective GPUs' changes at t_x of settled crossings (a node's speed steps down at a new low)."""
        if len(tp_t):
            a = self.arrays
            a.tp_t.extend(tp_t.tolist())
            a.tp_dv.extend(tp_dv.tolist())

    def _record_steps(self, st: NDArray[np.float64], ot: int, sv: NDArray[np.float64], ov: int, m: int, e_wh: float,
                      dP_sum: float, now: float) -> None:
        """Keep the IT power's changes of settled crossings over [t_x, now) in closed form: their energy, Wh, and
        W steps, the ``m`` times ``st[ot:]`` and changes ``sv[ov:]`` (slices of a kernel's results, not cut here),
        undone at ``now`` (merged into the site power level at the end); written in one compiled call
        (``kernels_events.put_steps``) when some change is nonzero."""
        k = self._pw_n
        end = k + m + 1
        if end > len(self._pw_t):  # (grown by doubling, before the call: it writes only within the buffers)
            cap = max(2 * len(self._pw_t), end, 1024)
            t, v = np.empty(cap), np.empty(cap)
            t[:k] = self._pw_t[:k]
            v[:k] = self._pw_dv[:k]
            self._pw_t, self._pw_dv = t, v
        end = kernels_events.put_steps(self._pw_t, self._pw_dv, k, st, ot, sv, ov, m, now, -dP_sum)
        if end >= 0:  # (np.count_nonzero of the changes: else nothing written)
            self.it.energy_wh += e_wh
            self._pw_n = end

    def settle(self, idx: NDArray[np.int64], now: float) -> None:
        """Units ``idx`` crossed their slowdown temperature silently at t_x = t_next ≤ ``now``: give them their
        capped state from t_x and add what the crossings changed over [t_x, now) (module docstring; the
        arithmetic is ``twin.kernels_units.settle_units``)."""
        a, p = self.arrays, self.params
        self.gpu.integrate(now)
        tmax, n_sil, nodes, new_caps, it_caps, tp_t, tp_dv, ts, dP, e_wh, dP_sum = kernels_units.settle_units(
            idx, now, p.units_per_node, p.gpus_per_unit, a.ublk, a.bblk, a.hist, a.kind,
            _EF if a.x_cap is None else a.x_cap, _EF if self.gpu.ucap is None else self.gpu.ucap, a.nblk, a.speed_caps,
            a.oth_n if self.oth_caps else _EF)
        self.settled(n_sil, tmax, nodes, new_caps, it_caps, tp_t, tp_dv, ts, dP, e_wh, dP_sum, now)

    def settled(self, n_sil: int, tmax: float, nodes: NDArray[np.int64], new_caps: NDArray[np.float64],
                it_caps: NDArray[np.float64], tp_t: NDArray[np.float64], tp_dv: NDArray[np.float64],
                ts: NDArray[np.float64], dP: NDArray[np.float64], e_wh: float, dP_sum: float, now: float) -> None:
        """What :meth:`settle` does after its arithmetic (``twin.kernels_units.settle_units``'s results): the
        counts, the effective GPUs' series, the IT power and its corrections, the speeds and their publication
        (also after ``GpuState._wake``'s compiled call, ``twin.kernels_units.wake_units``)."""
        a = self.arrays
        self.n_silent -= n_sil  # (a wake-up settles crossings that are not silent)
        if tmax > self.gpu.tpeak_c:
            self.gpu.tpeak_c = tmax
        self._record_tp(tp_t, tp_dv)
        # IT power: the nodes' thermal caps from now (inside an update of these nodes, it sets them itself)
        if not self.gpu.in_update:
            self.it.set_cap("thermal", nodes, it_caps)
        self._record_steps(ts, 0, dP, 0, len(ts), e_wh, dP_sum, now)
        caps = a.speed_caps
        changed = kernels_events.put_changed_at(caps, nodes, new_caps)  # (nodes[caps[nodes] != new_caps], then written)
        if len(changed):
            if self.gpu.in_update:  # published once by the update, with its own changes (the same time)
                self.settled_sp.append(changed)
            else:
                self.gpu.speed_src.changed(changed)

    def _on_exact(self, on: bool) -> None:
        """A reader needs exact node power from now (``on``; ``ITPower.need_exact``): settle every due silent
        crossing and make the pending ones events again. (Off: the next plans find silent crossings again.)"""
        if not on or not self.n_silent:
            return
        now = self.engine.now
        idx = np.flatnonzero(self.silent & (self.arrays.t_next <= now + _EPS_H))
        if len(idx):
            self.settle(idx, now)
        rest = np.flatnonzero(self.silent)
        if len(rest):
            self.silent[rest] = False
            self.n_silent -= len(rest)
            self.arrays.t_due[rest] = self.arrays.t_next[rest]
        self.wake_at_due()

    def finish(self, H: float) -> None:
        """At the horizon: settle every silent crossing due by ``H`` and merge the site power corrections into
        the recorder's ``site_power_w`` level (exact piecewise-constant IT power for energy, PUE and costs)."""
        if not self.silent_on:
            return
        idx = np.flatnonzero(self.silent & (self.arrays.t_next <= H + _EPS_H))
        if len(idx):
            self.settle(idx, H)
        n = self._pw_n
        if not n:
            return
        ts_l, vs_l = self.engine.recorder.levels["site_power_w"]
        ct = self._pw_t[:n]  # (the corrections in the order kept: np.concatenate of the steps as recorded)
        cv = self._pw_dv[:n]
        o = np.argsort(ct, kind="stable")
        ct, cv = ct[o], np.cumsum(cv[o])
        # (np.union1d of the two time lists, and at each the level's and the correction's last values at or
        # before it by np.searchsorted: one merge pass, compiled)
        tt, vv = kernels_events.merge_level(np.asarray(ts_l, dtype=np.float64), np.asarray(vs_l, dtype=np.float64),
                                            ct, cv)
        ts_l[:] = tt.tolist()
        vs_l[:] = vv.tolist()
        self._pw_t, self._pw_dv, self._pw_n = np.empty(0), np.empty(0), 0
