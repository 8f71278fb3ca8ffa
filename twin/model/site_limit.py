"""A limit on site IT power held by capping every GPU to the same power (water-filling), for a component
that caps the site for a while: oversubscription after a feed loss (``twin.model.oversubscription``), a
demand-response request (``twin.model.grid``).

One GPU cap source on the shared IT power (``twin.model.it_power.ITPower``) and one speed-cap source of
the same name: while a limit is set, every load change re-solves the cap (the largest c with the powered
nodes' non-GPU load + GPUs × Σ min(their draw under the other sources' caps, c) ≤ limit, floored at
``cluster.node.gpu.min_w``), and the nodes' speed is model.md §3's law at that cap. With per-GPU caps
(heterogeneous thermal units) the fill runs over GPUs against those caps, as the power chain's site cap does.
In a hall of node pools of other power figures (``cluster.pools``) each node's cap is max(c, its pool's min_w)
and its speed its own pool's law at that cap (``twin.model.power_figures``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from twin.model.engine import Engine
from twin.model.power_figures import pool_figures
from twin.physics.power import site_gpu_cap_w
from twin.physics.thermal import speed_fraction

if TYPE_CHECKING:  # pragma: no cover
    from twin.model.cluster import Cluster
    from twin.model.it_power import ITPower
    from twin.scenario.schema import Scenario


class SiteLimit:
    """Holds site IT power at ``limit_w`` (W) while set (see the module docstring)."""

    def __init__(self, engine: Engine, cluster: "Cluster", it: "ITPower", sc: "Scenario", source: str) -> None:
        self.engine = engine
        self.it = it
        self.source = source
        node = sc.cluster.node
        self.g = node.gpus
        self.tdp_w = node.gpu.demand_w
        self.idle_w = node.gpu.idle_w
        self.min_w = node.gpu.min_w
        self.alpha = node.gpu.speed_alpha
        self.figs = pool_figures(sc)  # node pools of other power figures: each node's own (cluster.pools)
        self.limit_w: float | None = None
        self.short = False  # the limit is below the site's power with every GPU at min_w
        self.on_h = 0.0  # hours a limit was set
        self.short_h = 0.0  # hours the limit could not be met
        self._t = engine.now
        self._in = False
        self._speed_src = cluster.speed_source(source)
        self.speed = self._speed_src.caps
        it.cap_of(source)
        it.watch(self.settle, self._after)

    def settle(self) -> None:
        """Account the hours with a limit up to now."""
        now = self.engine.now
        if self.limit_w is not None:
            self.on_h += now - self._t
            if self.short:
                self.short_h += now - self._t
        self._t = now

    def set(self, limit_w: float | None) -> None:
        """Hold site IT power at ``limit_w`` (W) from now; None: no limit (the caps lifted)."""
        self.settle()
        self.limit_w = limit_w
        self.it.need_exact(self.source, limit_w is not None)
        if limit_w is None:
            self.short = False
            self.it.set_cap(self.source, None, np.inf)
            self._publish(np.inf)
        else:
            self._apply()

    def _after(self, idx: NDArray[np.int64]) -> None:
        if self.limit_w is not None and not self._in:
            self._apply()

    def _apply(self) -> None:
        assert self.limit_w is not None
        self._in = True
        try:
            it = self.it
            nodes = np.arange(len(it.node_power_w))
            on = it.cluster.down_count == 0
            fixed = float(it.non_gpu_w_of(nodes)[on].sum())
            if self.figs is not None:  # node pools of other power figures: each GPU floored at its pool's min_w
                assert not it.unit_caps  # (per-GPU caps come from cooling, refused with such pools)
                x = np.minimum(it.gpu_demand_w(nodes), it.min_cap(nodes, exclude=self.source))
                caps, self.short = self.figs.site_cap(x, on, self.g, fixed, self.limit_w)
                it.set_cap(self.source, None, caps)
                self._publish(caps)
                return
            if not it.unit_caps:
                x = np.minimum(it.gpu_demand_w(nodes), it.min_cap(nodes, exclude=self.source))[on]
                c = site_gpu_cap_w(x, self.g, fixed, self.limit_w)
            else:
                # per-GPU caps (heterogeneous thermal units): water-fill over GPUs against them, not against their
                # source's node cap, which is the mean of its GPUs' powers and so moves with this cap (as the power
                # chain's site cap does, issue 23): filling against it would never settle
                xn = it.gpu_demand_w(nodes)
                for name, arr in it.caps.items():
                    if name != self.source and name not in it.unit_caps:
                        np.minimum(xn, arr, out=xn)
                xg = np.repeat(xn[:, None], self.g, axis=1)
                for arr in it.unit_caps.values():
                    np.minimum(xg, arr, out=xg)
                c = site_gpu_cap_w(xg[on], 1.0, fixed, self.limit_w)
            self.short = bool(c < self.min_w)
            c = max(c, self.min_w)
            it.set_cap(self.source, None, c)
            self._publish(c)
        finally:
            self._in = False

    def _publish(self, cap_w: float | NDArray[np.float64]) -> None:
        if self.figs is not None:  # node pools: each node's speed by its own pool's law
            s_n = self.figs.speed(np.broadcast_to(np.asarray(cap_w, dtype=np.float64), self.speed.shape).copy())
            moved = np.flatnonzero(self.speed != s_n)
            if len(moved):
                self.speed[moved] = s_n[moved]
                self._speed_src.changed(moved)
            return
        assert isinstance(cap_w, float)
        s = 1.0 if not np.isfinite(cap_w) else float(speed_fraction(cap_w, self.tdp_w, self.idle_w, self.alpha))
        changed = np.flatnonzero(self.speed != s)
        if len(changed):
            self.speed[:] = s
            self._speed_src.changed(changed)


__all__ = ["SiteLimit"]
