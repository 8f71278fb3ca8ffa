"""IT power (model.md §5): one source of truth for each node's power (W), its GPU caps by source and
the exact energy integral; the provider of the ``it_power`` service that the power chain, the cooling
rooms and the costs require (:class:`ITPower`). Its own module: it knows no reader (the power chain,
``twin.model.power``, is one of them), so no type refers back.

IT power is piecewise constant between events, so the energy is an exact sum.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import numpy as np
from numpy.typing import NDArray

from twin import kernels_lazy
from twin.model.cluster import MASK_NODES
from twin.model.component import BuildContext, Component, Service
from twin.model.engine import Engine, Topic
from twin.model.fan_law import FanLaw, fan_law
from twin.physics.power import non_gpu_power_w

if TYPE_CHECKING:  # pragma: no cover
    from twin.model.causes import DownCause
    from twin.model.cluster import Cluster
    from twin.scenario.schema import Scenario

# the compiled kernels, imported at their first use (twin.kernels_lazy: a run without them imports no numba)
kernels = kernels_lazy.module("twin.kernels", globals(), "kernels")
cap_moves_draw = kernels_lazy.function("twin.kernels_events", "cap_moves_draw", globals())
minimum_at = kernels_lazy.function("twin.kernels_events", "minimum_at", globals())
put_finite_delta = kernels_lazy.function("twin.kernels_events", "put_finite_delta", globals())

_add_reduce = np.add.reduce
_FEW_DOWN = 256
"""Up to this many nodes out of service, ITPower zeroes them from the cluster's sorted list."""
_EF = np.empty(0)  # an empty float array: the kernels' "none"
_I64 = np.dtype(np.int64)


class _LoadMemo:
    """:meth:`ITPower._load_refresh`'s memo of the load refreshes of one node array in one down state (ended by any
    other refresh and any node going down or up)."""

    __slots__ = ("clean", "down", "mask", "nodes", "pending_w", "sums")

    def __init__(self, nodes: NDArray[np.int64], down: NDArray[np.int64] | None, util: float, total_w: float) -> None:
        self.nodes = nodes
        """The node array written (never changed once published)."""
        self.down = down
        """The cluster's down list of the state (the same object until a node goes down or up), None: none down."""
        self.sums: dict[float, float] = {util: total_w}
        """The site total (W) of each load of ``nodes`` seen in this state."""
        self.clean: bool | None = None
        """No down node among ``nodes`` (None: not found yet)."""
        self.mask: NDArray[np.bool_] | None = None
        """The boolean mask of ``nodes`` (made at the array's second write, above ``MASK_NODES`` nodes)."""
        self.pending_w = 0.0
        """The power of each node of ``nodes`` (W) whose write is deferred while this memo is ``ITPower._pending``."""


IT_POWER: Service[ITPower] = Service(
    "it_power", "per-node IT power (W), GPU caps by source and its exact energy (twin.model.it_power.ITPower)")
"""The IT power service key, declared with its provider (no type-only cycle with twin.model.component)."""


class ITPower(Component):
    """One source of truth for IT power: per-node power (W) and its exact energy integral.

    node power = node_it_power_w(util, tightest GPU cap, ...) while the node is up, 0 while it is
    down (assumption: a node out of service is powered off). A model that caps GPUs either calls
    ``set_cap(source, nodes, cap_w)`` (W per GPU, ``inf`` = no cap; refreshes those nodes), or
    writes the array from ``gpu_cap(source)`` and calls ``refresh(nodes)``. The object itself
    listens to NODE_LOAD / NODE_DOWN / NODE_UP. ``watch(before, after)`` registers callbacks run
    before a change (to integrate up to now) and after it (with the nodes). The recorder level
    ``site_power_w`` is this object's total (the recorder keeps one point per event time).
    The provider of the ``it_power`` service, built on demand (before the first component that
    requires it: power, cooling, costs) from ``cluster.node``'s power figures: one object shared by
    all of them.
    """

    name = "it_power"
    provides = (IT_POWER,)
    on_demand = True

    @classmethod
    def wanted(cls, sc: Scenario) -> bool:
        return False  # built only when a component requires it

    @classmethod
    def build(cls, ctx: BuildContext) -> ITPower:
        node = ctx.sc.cluster.node  # the GPU and node power figures, declared once
        fans = fan_law(ctx.engine, ctx.cluster, ctx.sc)  # server fans in place of those in the non-GPU load
        it = cls(ctx.engine, ctx.cluster, node.gpus, node.gpu.idle_w, node.gpu.demand_w, node.non_gpu_w,
                 node.non_gpu_idle_w, fans=fans)
        cl = ctx.sc.cluster
        if cl.pools and any((p.gpu.idle_w, p.gpu.demand_w, p.non_gpu_w, p.non_gpu_idle_w)
                            != (node.gpu.idle_w, node.gpu.demand_w, node.non_gpu_w, node.non_gpu_idle_w)
                            for _, _, p in cl.node_pools()):
            it.set_pools([(a, b, p.gpu.idle_w, p.gpu.demand_w, p.non_gpu_w, float(p.non_gpu_idle_w or 0.0))
                          for a, b, p in cl.node_pools()])
        return it

    def __init__(self, engine: Engine, cluster: "Cluster", gpus: int, idle_w: float, tdp_w: float,
                 non_gpu_w: float, non_gpu_idle_w: float | None = None, fans: FanLaw | None = None) -> None:
        self.engine = engine
        self.fans = fans
        """The server fans (``twin.model.fans``): each node's power adds their simulated power less the fans'
        power inside ``non_gpu_w`` as stated (``FanLaw.power_w``); None: not modelled (the stated load holds them)."""
        self.cluster = cluster
        self.gpus = gpus
        self._gpus_f = float(gpus)
        self.idle_w = idle_w
        self.tdp_w = tdp_w
        self.non_gpu_w = non_gpu_w
        """Non-GPU load at full utilisation, W (``cluster.node.non_gpu_w``)."""
        self.non_gpu_idle_w = non_gpu_w if non_gpu_idle_w is None else non_gpu_idle_w
        """Non-GPU load at zero utilisation, W; it follows utilisation linearly up to ``non_gpu_w``."""
        self._ng_slope_w = non_gpu_w - self.non_gpu_idle_w
        n = cluster.n_nodes
        self._npw = np.zeros(n)  # node_power_w's array (without the load write deferred: _pending)
        self._pending: _LoadMemo | None = None  # _load_refresh's deferred write: its memo (at its pending_w)
        self.caps: dict[str, NDArray[np.float64]] = {}
        self._n_finite: dict[str, int] = {}  # per source written through set_cap: nodes with a finite cap
        self._direct: set[str] = set()  # sources written directly (always taken into account)
        # the sources that take part in a refresh (those with a finite cap or written directly, in the order of caps)
        # and their cap arrays, listed again by _sources_changed
        self._live: list[str] = []
        self._srcs: list[NDArray[np.float64]] = []
        self._cap_a = self._cap_b = _EF  # the first two of _srcs as it_fans_nodes takes them (empty: none)
        self._one_call = False  # refresh takes the capped path in one compiled call (_capped_with_fans)
        self.unit_caps: dict[str, NDArray[np.float64]] = {}
        """Per-GPU caps (W, shape nodes × GPUs) of sources whose GPUs in one node differ (``unit_cap``)."""
        self.energy_wh = 0.0
        self._total = 0.0
        self._t = engine.now
        self._before: list[Callable[[], None]] = []
        self._after: list[Callable[[NDArray[np.int64]], None]] = []
        self._idle: list[Callable[[], bool] | None] = []  # per watcher: whether a repeat would change nothing for it
        self._exact: set[str] = set()  # readers that need every node's power exact at every event
        self._exact_watchers: list[Callable[[bool], None]] = []
        self._all = np.arange(n)
        self._env = engine.env
        self._uncapped = True  # no source has a finite cap: refresh takes its two-operation path
        self._a_w = gpus * (tdp_w - idle_w)  # node power = util·a + b without caps (node_it_power_w)
        self._b_w = non_gpu_w + gpus * idle_w
        self._g_idle_w = gpus * idle_w  # with a non-GPU load that follows utilisation: util·a + (ng(util) + this)
        self._level = engine.recorder.levels.setdefault("site_power_w", ([], []))
        self._ts, self._vs = self._level  # (its times and values)
        self._pooled = False  # node pools of other power figures (set_pools)
        self._memo: _LoadMemo | None = None  # _load_refresh's
        bus = engine.bus
        bus.subscribe(Topic.NODE_LOAD, self.refresh)
        bus.subscribe(Topic.NODE_DOWN, self._on_node)
        bus.subscribe(Topic.NODE_UP, self._on_node)
        self.refresh()

    @property
    def node_power_w(self) -> NDArray[np.float64]:
        """IT power of each node now, W (read it, do not write it; read it again after an event: the array is the
        same object, its values those of the latest refresh). A load change to a state seen since the last
        other change (:meth:`_load_refresh`: the job-wide toggles of a checkpoint cycle) knows the site total
        already and defers writing the nodes' power until the array is read here or refreshed otherwise."""
        if self._pending is not None:
            self._flush()
        return self._npw

    def _flush(self) -> None:
        """Write the load change :meth:`_load_refresh` deferred: its nodes at its power, then its memo's down nodes
        (the down list of the state it was deferred in: every refresh since flushed first) at zero."""
        memo = self._pending
        assert memo is not None
        self._pending = None
        npw = self._npw
        nodes = memo.nodes
        mask = memo.mask
        if mask is None and len(nodes) > MASK_NODES:
            mask = memo.mask = self.cluster.mask_of(nodes)
        npw[nodes if mask is None else mask] = memo.pending_w
        if memo.down is not None:  # (a no-op for the down nodes outside nodes: zero since they went down)
            npw[memo.down] = 0.0

    def set_pools(self, pools: list[tuple[int, int, float, float, float, float]]) -> None:
        """Node pools of other power figures (``cluster.pools``): per pool its nodes [a, b), GPU idle and
        training draw, non-GPU load busy and idle, W. From now each node draws its own pool's figures."""
        n = self.cluster.n_nodes
        self._pool_idle = np.empty(n)
        self._pool_span = np.empty(n)  # training draw − idle, W per GPU
        self._pool_ng0 = np.empty(n)
        self._pool_ngs = np.empty(n)  # non-GPU slope with utilisation, W
        for a, b, idle_w, demand_w, ng_w, ng_idle_w in pools:
            self._pool_idle[a:b] = idle_w
            self._pool_span[a:b] = demand_w - idle_w
            self._pool_ng0[a:b] = ng_idle_w
            self._pool_ngs[a:b] = ng_w - ng_idle_w
        self._pooled = True
        self._sources_changed()
        self.refresh()

    def _pooled_power(self, idx: NDArray[np.int64], util: float | None) -> NDArray[np.float64]:
        """The power of nodes ``idx`` from their pools' figures (caps included), W."""
        u: NDArray[np.float64] | float = self.engine.node_util[idx] if util is None else util
        d = u * self._pool_span[idx] + self._pool_idle[idx]
        if not self._uncapped:
            d = np.minimum(d, self.min_cap(np.asarray(idx, dtype=np.int64)))
        return np.asarray(d * self.gpus + (self._pool_ng0[idx] + self._pool_ngs[idx] * u), dtype=np.float64)

    def _array(self, source: str) -> NDArray[np.float64]:
        arr = self.caps.get(source)
        if arr is None:
            arr = self.caps[source] = np.full(self.cluster.n_nodes, np.inf)
            self._n_finite[source] = 0
            self._sources_changed()
        return arr

    def _sources_changed(self) -> None:
        """Which sources take part in a refresh may have changed (a new source, a direct one, a source's count of
        finite caps to or from 0): list them again (``_live``, their arrays ``_srcs``), and whether none does
        (``_uncapped``: refresh's formula without caps)."""
        n_finite, direct = self._n_finite, self._direct
        self._live = [name for name in self.caps if n_finite[name] or name in direct]
        srcs = self._srcs = [self.caps[name] for name in self._live]
        self._uncapped = not srcs
        self._cap_a = srcs[0] if srcs else _EF
        self._cap_b = srcs[1] if len(srcs) > 1 else _EF
        # the caps, the nodes' power and their fans in one compiled call (not with node pools or fans of node pools)
        self._one_call = bool(srcs) and len(srcs) <= 2 and not self._pooled and (
            self.fans is None or self.fans.pooled is None)

    def gpu_cap(self, source: str) -> NDArray[np.float64]:
        """Writable per-node GPU power cap (W) of ``source``, created at inf; call ``refresh(nodes)``
        after writing. (``set_cap`` does both and is cheaper: it lets ``refresh`` skip sources
        without a finite cap.)"""
        self._direct.add(source)
        arr = self._array(source)
        self._sources_changed()
        return arr

    def unit_cap(self, source: str) -> NDArray[np.float64]:
        """Writable per-GPU cap (W, nodes × GPUs, created at inf) of ``source``, for a source whose GPUs in one
        node have different caps (per-GPU thermal units). The source still sets its node cap (``set_cap``: the
        per-GPU mean of its GPUs' powers, which fixes the node's power); this array is what a site cap
        water-fills against (``PowerChain``), since that node cap depends on the site cap itself."""
        arr = self.unit_caps.get(source)
        if arr is None:
            arr = self.unit_caps[source] = np.full((self.cluster.n_nodes, self.gpus), np.inf)
        return arr

    def cap_of(self, source: str) -> NDArray[np.float64]:
        """The GPU cap array (W) of ``source`` for reading (write it with ``set_cap``)."""
        return self._array(source)

    def set_cap(self, source: str, nodes: NDArray[np.int64] | None, cap_w: NDArray[np.float64] | float) -> None:
        """Set the GPU cap (W) of ``nodes`` (all when None) for ``source`` and refresh their power (not when a
        refresh would change nothing: :meth:`_unmoved`)."""
        arr = self.caps.get(source)
        if arr is None:
            arr = self._array(source)
        unmoved = False
        was = self._n_finite[source]
        if nodes is not None and isinstance(cap_w, np.ndarray) and len(cap_w) == len(nodes):  # (compiled: a node's
            unmoved = self._unmoved(source, arr, nodes, cap_w)                                 # caps, thermal's)
            self._n_finite[source] = was + put_finite_delta(arr, nodes, cap_w)
        else:
            idx = self._all if nodes is None else nodes
            before = int(np.isfinite(arr[idx]).sum())
            arr[idx] = cap_w
            self._n_finite[source] = was + int(np.isfinite(arr[idx]).sum()) - before
        if (not was) != (not self._n_finite[source]):  # (a source with a finite cap now, or none any more)
            self._sources_changed()
        if unmoved and not self._uncapped:  # (uncapped now: refresh's other formula)
            return
        self.refresh(nodes)

    def _unmoved(self, source: str, arr: NDArray[np.float64], nodes: NDArray[np.int64],
                 cap_w: NDArray[np.float64]) -> bool:
        """Whether refreshing ``nodes`` after their caps of ``source`` (``arr``, before the write) become ``cap_w``
        would change nothing (a thermal cap set or lifted at a load change to idle: no cap binds an idle GPU).
        So when the IT power was refreshed at this instant already (its level's last point is now: no energy to
        integrate, the fans' neither, and the point would be rewritten with the same total), nothing else reacts
        to a refresh (no direct sources or pools, and each watcher's ``idle()`` says a refresh would change nothing
        for it: :meth:`watch`), it takes the capped path both before and after with at most one other source's
        caps, and no node's GPU draw moves (``kernels_events.cap_moves_draw``,
        as ``kernels.it_nodes`` computes it): every writer of a node's load, caps, service or fans refreshes it,
        so its power, its fans and the site total are what a refresh would compute again."""
        if self._direct or self._pooled or self._uncapped:
            return False
        ts = self._level[0]
        if not ts or ts[-1] != self._env._now:
            return False
        for idle in self._idle:
            if idle is None or not idle():
                return False
        other = _EF
        for name in self._live:  # (no direct source here: those with a finite cap)
            if name != source:
                if len(other):
                    return False  # (two others: refresh's general path)
                other = self.caps[name]
        return not cap_moves_draw(np.asarray(nodes, dtype=np.int64), self.cluster.util_read, arr,
                                  np.asarray(cap_w, dtype=np.float64), other, self.idle_w, self.tdp_w)

    def n_capped(self, source: str) -> int:
        """Nodes with a finite cap from ``source``."""
        if source in self._direct:
            return int(np.isfinite(self._array(source)).sum())
        return self._n_finite.get(source, 0)

    def others_capped(self, exclude: str) -> bool:
        """True when some source other than ``exclude`` may hold a finite cap (cheap: counters)."""
        live = self._live  # (called at every thermal update)
        return len(live) > 1 or (len(live) == 1 and live[0] != exclude)

    def min_cap(self, nodes: NDArray[np.int64], exclude: str | None = None) -> NDArray[np.float64]:
        """Tightest GPU cap (W) of ``nodes`` over all sources except ``exclude``."""
        out = np.full(len(nodes), np.inf)
        for name in self._live:  # (a source set only through set_cap with no finite cap: all inf)
            if name != exclude:
                minimum_at(out, self.caps[name], nodes)  # (compiled: np.minimum(out, arr[nodes], out=out))
        return out

    def non_gpu_w_of(self, nodes: NDArray[np.int64]) -> NDArray[np.float64]:
        """Non-GPU load (W) of ``nodes`` at their utilisation, were they up (their fans included)."""
        u = self.engine.node_util[nodes]
        if self._pooled:
            out = self._pool_ng0[nodes] + self._pool_ngs[nodes] * u
        else:
            out = np.asarray(non_gpu_power_w(u, self.non_gpu_idle_w, self.non_gpu_w), dtype=np.float64)
        if self.fans is not None:
            out = out + self.fans.delta_w(nodes, u)
        return out

    def gpu_demand_w(self, nodes: NDArray[np.int64]) -> NDArray[np.float64]:
        """Uncapped GPU power demand (W) of ``nodes`` at their utilisation."""
        if self._pooled:
            return self._pool_idle[nodes] + self._pool_span[nodes] * self.engine.node_util[nodes]
        return self.idle_w + (self.tdp_w - self.idle_w) * self.engine.node_util[nodes]

    def watch(self, before: Callable[[], None], after: Callable[[NDArray[np.int64]], None],
              idle: Callable[[], bool] | None = None) -> None:
        """Call ``before()`` before every refresh (to integrate up to now) and ``after(nodes)`` after it, with the
        nodes it wrote. ``idle()``, if given, tells whether ``before()`` then ``after(nodes)`` would change nothing
        now, whatever the nodes (no state, no event): True lets a refresh that moves no node's power, at an instant
        refreshed already, be skipped (:meth:`_unmoved`); without it such a refresh always runs."""
        self._before.append(before)
        self._after.append(after)
        self._idle.append(idle)

    @property
    def exact(self) -> bool:
        """True while some reader needs every node's power exact at every event (``need_exact``)."""
        return bool(self._exact)

    def need_exact(self, reader: str, on: bool) -> None:
        """``reader`` reads node power at events other than its own from now (``on``), or no longer.

        A source that defers power changes between events (thermal's silent crossings,
        ``twin.model.cooling.lazy``: their power is settled exactly, in closed form, at the node's next update)
        settles what it deferred when the first reader comes and defers nothing while any reader is there.
        The power chain is one: its feed loads while a feed is on battery or a UPS is out (UPS losses, battery
        drain), and its site cap (a water-fill over every GPU's caps at every load change)."""
        was = bool(self._exact)
        if on:
            self._exact.add(reader)
        else:
            self._exact.discard(reader)
        if bool(self._exact) != was:
            for fn in self._exact_watchers:
                fn(not was)

    def watch_exact(self, fn: Callable[[bool], None]) -> None:
        """Call ``fn(on)`` when exact node power becomes needed (True) or no longer (False)."""
        self._exact_watchers.append(fn)

    def _integrate(self) -> None:
        now = self.engine.env.now
        if now > self._t:
            self.energy_wh += self._total * (now - self._t)
            self._t = now

    def _on_node(self, node: int, cause: DownCause) -> None:
        if not (self._before or self._pooled or self.fans is not None or not self._uncapped):
            cl = self.cluster
            memo = self._memo
            if cl.down_count[node] and memo is not None and memo.down is cl.down_nodes():
                # a node gone down after a load refresh already made in this down state (its job's, at the
                # interruption): every down node, this one too, is at 0 there, so the refresh below would write
                # and zero it again and take the same sum; the total and the memo stand
                now = self._env._now
                if now > self._t:
                    self.energy_wh += self._total * (now - self._t)
                    self._t = now
                self._publish(self._total, np.array([node]))
                return
            # refresh's formula for one node at its load, in Python floats: the same operations (_load_refresh)
            self._load_refresh(np.array([node]), float(self.engine.node_util[node]))
            return
        self.refresh(np.array([node]))

    def _capped_with_fans(self, idx: NDArray[np.int64], util: float | None, npw: NDArray[np.float64],
                          all_up: bool) -> float:
        """``refresh``'s capped path for at most two sources with a cap (``_cap_a``, ``_cap_b``): the tightest cap
        (``min_cap``), the nodes' power and the fans' share (``FanLaw.power_w``) added, in one compiled call
        (:func:`twin.kernels.it_fans_nodes`: the same operations in the same order). Returns, when every node is
        in service (``all_up``: nothing to zero after it), the site total ``np.add.reduce(npw)`` summed in the
        same call, W; else nan."""
        e = _EF
        fans = self.fans
        cl = self.cluster
        if fans is None:
            out: float = kernels.it_fans_nodes(
                idx, cl.util_read, self._cap_a, self._cap_b, self._gpus_f, self.idle_w, self.tdp_w,
                self.non_gpu_idle_w, self._ng_slope_w, npw, False, 0.0, True, 0.0, e, e, False, cl.down_count, True, e,
                e, all_up)[2]
            return out
        util_s, stated = fans.prepare_common(util)  # (the fans' energy to now first)
        top, fans.total_w, site = kernels.it_fans_nodes(
            idx, cl.util_read, self._cap_a, self._cap_b, self._gpus_f, self.idle_w, self.tdp_w, self.non_gpu_idle_w,
            self._ng_slope_w, npw, True, util_s, util is not None, stated, fans.inlet_c, fans.healthy,
            bool(fans.n_short), cl.down_count, all_up, fans.law_numbers, fans.node_w, all_up)
        if top > fans.peak_speed:
            fans.peak_speed = top
        return float(site)

    def _refresh_start(self) -> None:
        """A refresh other than a repeated load write begins: the load refreshes' memo no longer holds, the deferred
        write goes first (the refresh writes on the state after it), the watchers settle, the energy is integrated
        to now (Wh)."""
        self._memo = None
        if self._pending is not None:
            self._flush()
        for fn in self._before:
            fn()
        now = self._env._now
        t = self._t
        if now > t:
            self.energy_wh += self._total * (now - t)
            self._t = now

    def refresh(self, nodes: NDArray[np.int64] | None = None, util: float | None = None) -> None:
        """Recompute the power of ``nodes`` (all when None) after a load, cap or state change;
        ``util``: the nodes' common utilisation when the caller knows it (a job's load change).

        The hot path of the event loop (every job's load change). Without any finite cap the node
        power is ``util·a + b`` with a = GPUs·(TDP − idle) and b = non-GPU + GPUs·idle, the same
        floating-point operations as :func:`node_it_power_w` (for a common ``util`` done once, in
        Python floats: the same IEEE multiply and add); the site total is the numpy sum of the node
        array (the same sum in the same order at every refresh, so it never drifts)."""
        if self._one_call:  # under caps: the caps, the nodes' power and their fans in one compiled call
            self._refresh_start()
            idx = self._all if nodes is None else nodes
            if type(idx) is not np.ndarray or idx.dtype is not _I64:
                idx = np.asarray(idx, dtype=np.int64)
            cl = self.cluster
            site = self._capped_with_fans(idx, util, self._npw, cl.n_up == cl.n_nodes)
            if site == site:  # (every node in service: the site total summed in the same call)
                self._publish(site, idx)
                return
            npw = self._npw  # (some node out of service: zeroed below)
        else:
            if util is not None and nodes is not None and not (
                    self._before or self._pooled or self.fans is not None or not self._uncapped):
                self._load_refresh(nodes, util)
                return
            self._refresh_start()
            idx = self._all if nodes is None else nodes
            npw = self._npw
            p: NDArray[np.float64] | float | None
            if self._pooled:  # node pools of other power figures (cluster.pools)
                p = self._pooled_power(idx, util)
            elif self._uncapped and self._ng_slope_w:  # the same operations as node_it_power_w with non_gpu_power_w
                if util is not None:
                    npw[idx] = util * self._a_w + ((self.non_gpu_idle_w + self._ng_slope_w * util) + self._g_idle_w)
                    p = None
                else:
                    u = self.engine.node_util[idx]
                    p = u * self._a_w + ((self.non_gpu_idle_w + self._ng_slope_w * u) + self._g_idle_w)
            elif self._uncapped:
                if util is not None:
                    npw[idx] = util * self._a_w + self._b_w
                    p = None
                else:
                    p = self.engine.node_util[idx] * self._a_w
                    p += self._b_w
            else:  # node_it_power_w with non_gpu_power_w, compiled (the same operations; + 0·util without a slope)
                # (more than two sources, or fans of node pools: the one-call path otherwise)
                idx = np.asarray(idx, dtype=np.int64)
                p = None
                kernels.it_nodes(idx, self.cluster.util_read, self.min_cap(idx), self._gpus_f, self.idle_w,
                                 self.tdp_w, self.non_gpu_idle_w, self._ng_slope_w, npw)
            if p is not None:
                npw[idx] = p
            if self.fans is not None:  # the fans at their speed in place of the stated ones (down: 0)
                npw[idx] += self.fans.power_w(idx, self.engine.node_util[idx] if util is None else util)
        cl = self.cluster
        n_down = cl.n_nodes - cl.n_up
        if n_down:  # a node out of service draws nothing
            if n_down <= _FEW_DOWN:  # zero every down node: a no-op outside idx, cheaper than finding them
                npw[cl.down_nodes()] = 0.0
            else:  # many down (a tripped hall): the cluster's list would be rebuilt at each transition
                d = cl.down_count[idx] != 0
                npw[idx[d]] = 0.0
        self._publish(float(_add_reduce(npw)), idx)  # = npw.sum(), without the method's wrapper

    def _load_refresh(self, nodes: NDArray[np.int64], util: float) -> None:
        """:meth:`refresh` of a load change (``nodes`` at ``util``, a NODE_LOAD publication) without caps, node
        pools, fans or watchers run before: the same writes, zeroing and site sum, where the site sum is taken
        again only for a state not seen since the last other change. While each refresh writes the same array
        ``nodes`` (never changed once published) and the same nodes are down (the cluster's down list, rebuilt
        at each change: the same object), the node array is the state before them with ``nodes`` at the last
        ``util``: its sum at each ``util`` is kept (``_memo``), as is whether a down node is among ``nodes``
        (else zeroing them is a no-op). Any other refresh, and any node going down or up, ends the memo.
        A state whose sum is kept is not written at all until the array is read (:attr:`node_power_w`) or another
        refresh comes (``_pending``, :meth:`_flush`): the same values then, nothing having changed since."""
        now = self._env._now
        t = self._t
        if now > t:
            self.energy_wh += self._total * (now - t)
            self._t = now
        # the same operations as node_it_power_w with non_gpu_power_w
        p = (util * self._a_w + ((self.non_gpu_idle_w + self._ng_slope_w * util) + self._g_idle_w) if self._ng_slope_w
             else util * self._a_w + self._b_w)
        memo = self._memo
        cl = self.cluster
        n_down = cl.n_nodes - cl.n_up
        if memo is not None and memo.nodes is nodes and n_down <= _FEW_DOWN:
            got = memo.sums.get(util)
            if got is not None and memo.down is (cl.down_nodes() if n_down else None):
                memo.pending_w = p  # a state seen since the memo began: its total known, its write deferred
                self._pending = memo
                self._publish(got, nodes)
                return
        if self._pending is not None:
            self._flush()
        npw = self._npw
        mask = None
        if memo is not None and memo.nodes is nodes and len(nodes) > MASK_NODES:  # the array written again: its mask
            mask = memo.mask
            if mask is None:
                mask = memo.mask = cl.mask_of(nodes)
            npw[mask] = p
        else:
            npw[nodes] = p
        if n_down > _FEW_DOWN:  # many down (a tripped hall): refresh's own test of the nodes, no memo
            self._memo = None
            d = cl.down_count[nodes] != 0
            npw[nodes[d]] = 0.0
            total = float(_add_reduce(npw))
        else:
            down = cl.down_nodes() if n_down else None
            if memo is not None and memo.nodes is nodes and memo.down is down:
                if n_down:
                    clean = memo.clean
                    if clean is None:  # (found at the memo's first use: most memos of a busy hall are used never)
                        # whether a down node is among nodes: the mask at the few down nodes, else their down counts
                        clean = memo.clean = not (mask[down].any() if mask is not None else cl.down_count[nodes].any())
                    if not clean:  # zero every down node: a no-op outside nodes
                        npw[down] = 0.0
                sums = memo.sums
                got = sums.get(util)
                if got is None:
                    got = sums[util] = float(_add_reduce(npw))
                total = got
            else:
                if n_down:
                    npw[down] = 0.0
                total = float(_add_reduce(npw))  # = npw.sum(), without the method's wrapper
                self._memo = _LoadMemo(nodes, down, util, total)
        self._publish(total, nodes)

    def _publish(self, total: float, idx: NDArray[np.int64]) -> None:
        """The end of every refresh: the site total ``total`` (W) kept, recorded as the level's point at this
        event time (one point per time: a later refresh at the same time rewrites it), and the watchers run
        after a refresh told which nodes ``idx`` it wrote."""
        self._total = total
        ts = self._ts  # recorder level site_power_w: one point per event time
        now = self._t
        if ts and ts[-1] == now:
            self._vs[-1] = total
        else:
            ts.append(now)
            self._vs.append(total)
        for after in self._after:
            after(idx)

    def total_w(self) -> float:
        """Site IT power now, W."""
        return self._total

    def energy_kwh(self) -> float:
        """IT energy from time 0 to now, kWh (exact: power is piecewise constant)."""
        self._integrate()
        return self.energy_wh / 1000.0



__all__ = ["IT_POWER", "ITPower"]
