"""The server fans' state (issue 42): each node's healthy fans and inlet air and the fan curve of
:mod:`twin.physics.fans` (:class:`FanLaw`), owned by the shared IT power (:class:`twin.model.it_power.ITPower`)
when fans are modelled; the component that moves it is :class:`twin.model.fans.Fans`. Its own module (issue 40):
the IT power needs the state, the fans component needs the IT power's service key, and neither imports the
other's module back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from twin import kernels_lazy
from twin.physics.fans import MIN_RISE_C, fan_demand, fan_speed, node_fan_power_w

# the compiled kernels, imported at their first use (twin.kernels_lazy: a run without them imports no numba)
kernels = kernels_lazy.module("twin.kernels", globals(), "kernels")

_EF = np.empty(0)  # no per-node utilisation: the kernel takes the common one

if TYPE_CHECKING:  # pragma: no cover
    from twin.model.cluster import Cluster
    from twin.model.engine import Engine
    from twin.scenario.schema import Scenario


class FanLaw:
    """The fans of every node: healthy count, inlet air and power (W), with the fan curve's parameters.

    ``power_w(idx, util)`` gives the fans' power of nodes ``idx`` at utilisation ``util`` (a float or one
    per node) and records it (``node_w``, the site total and its energy); down nodes draw nothing."""

    def __init__(self, engine: "Engine", cluster: "Cluster", sc: "Scenario") -> None:
        node = sc.cluster.node
        f = node.fans
        cool = sc.cooling
        assert cool is not None and node.non_gpu_idle_w is not None
        self.engine = engine
        self._env = engine.env
        self.cluster = cluster
        self.full_w = f.full_w(node.non_gpu_idle_w, node.rated_w)
        """Fans' power at full speed of the node type as rated (taken out of the non-GPU load), W."""
        self.liquid = cool.type in ("liquid", "hybrid")
        self.max_w = self.full_w * (f.residual_share if self.liquid else 1.0)
        """Fans' power at full speed of the nodes in this hall (residual fans on liquid), W."""
        self.rated_w = float(node.rated_w)
        self.min_speed, self.design_inlet_c, self.exhaust_c = f.min_speed, f.design_inlet_c, f.exhaust_c
        self.reference_inlet_c = f.reference_inlet_c if f.reference_inlet_c is not None else f.design_inlet_c
        n = cluster.n_nodes
        self.part = f.part if f.part is not None and f.part in node.parts else None
        self.count = int(node.parts[self.part].count) if self.part is not None else 1
        self.healthy = np.full(n, self.count, dtype=np.float64)
        self.n_short = 0
        """Nodes with fewer than all their fans (:meth:`set_healthy`)."""
        start_c = cool.air.supply_c if cool.air is not None else f.design_inlet_c
        self.inlet_c = np.full(n, float(start_c))
        """Inlet air of each node's fans, °C: its air zone's held supply (the design inlet without air)."""
        g = node.gpus
        self._a_w = g * (node.gpu.demand_w - node.gpu.idle_w)  # demanded node power = util·a + b(util)
        self._g_idle_w = g * node.gpu.idle_w
        assert node.non_gpu_idle_w is not None
        self._ng_idle_w: float = node.non_gpu_idle_w  # the non-GPU load as stated (its fans included)
        self._ng_busy_w: float = node.non_gpu_w
        self.node_w = np.zeros(n)
        """Fans' power of each node, W (0 while it is down)."""
        self.total_w = 0.0
        self.energy_wh = 0.0
        self.peak_speed = 0.0
        self._t = engine.now
        self._k_c = self.exhaust_c - self.design_inlet_c
        self._stated: dict[float, float] = {}
        rise_ref = max(self.exhaust_c - self.reference_inlet_c, MIN_RISE_C)  # (fan_demand's np.maximum)
        self._p = np.array([self.exhaust_c, self._k_c, self.min_speed, self.count, self.max_w, self._ng_idle_w,
                            self._ng_busy_w, self._a_w, self._g_idle_w, self.rated_w, rise_ref, self.full_w],
                           dtype=np.float64)
        """The fan law's numbers for the compiled kernel (``twin.kernels.fan_nodes``)."""
        self.law_numbers = self._p
        """The same, for the IT power's compiled refresh (``twin.kernels.it_fans_nodes``)."""
        self.pooled = pool_fan_numbers(sc, self.liquid)
        """Node pools of other power figures (``cluster.pools``): per node its GPUs' span and idle draw, non-GPU
        load idle and busy, nameplate, fans at full speed as rated and in this hall, W (rows 0-6); None: the
        scalars above for every node (the compiled path)."""

    def set_healthy(self, node: int, healthy: int) -> None:
        """``node`` now has ``healthy`` working fans (the fan part's redundant group, ``Topic.GROUP``)."""
        self.n_short += int(healthy < self.count) - int(self.healthy[node] < self.count)
        self.healthy[node] = healthy

    def set_inlet(self, start: int, stop: int, held_c: float) -> bool:
        """Nodes ``start``..``stop``-1 (an air zone) take in air at ``held_c``, °C (``Topic.ZONE_INLET``);
        False if they did already (nothing changed)."""
        if self.inlet_c[start] == held_c and self.inlet_c[stop - 1] == held_c:
            return False
        self.inlet_c[start:stop] = held_c
        return True

    def _share(self, util: float | NDArray[np.float64], idx: NDArray[np.int64] | None = None
               ) -> float | NDArray[np.float64]:
        """The node's demanded power at utilisation ``util`` (its non-GPU load as stated) over its nameplate (of
        the nodes ``idx``, each by its pool's figures, in a hall of node pools)."""
        if self.pooled is not None and idx is not None:
            a_w, g_idle_w, ng_idle_w, ng_busy_w, rated_w = (self.pooled[k][idx] for k in range(5))
            return np.asarray((util * a_w + g_idle_w + (ng_idle_w + (ng_busy_w - ng_idle_w) * util)) / rated_w,
                              dtype=np.float64)
        ng = self._ng_idle_w + (self._ng_busy_w - self._ng_idle_w) * util
        return (util * self._a_w + self._g_idle_w + ng) / self.rated_w

    def _demand(self, idx: NDArray[np.int64], util: float | NDArray[np.float64]) -> NDArray[np.float64]:
        """Flow the fans of ``idx`` need (:func:`~twin.physics.fans.fan_demand`) at utilisation ``util``, at
        their inlet."""
        return np.asarray(fan_demand(self._share(util, idx), self.inlet_c[idx], self.design_inlet_c, self.exhaust_c,
                                     self.min_speed), dtype=np.float64)

    def stated_w(self, util: float | NDArray[np.float64], idx: NDArray[np.int64] | None = None
                 ) -> float | NDArray[np.float64]:
        """Fans' power (W) inside the stated non-GPU load at utilisation ``util``: the rated node's fans, all
        working, at the fan curve's speed for ``reference_inlet_c`` (of the nodes ``idx``, each its pool's node
        as rated, in a hall of node pools)."""
        d = fan_demand(self._share(util, idx), self.reference_inlet_c, self.design_inlet_c, self.exhaust_c,
                       self.min_speed)
        full_w: float | NDArray[np.float64] = self.full_w
        if self.pooled is not None and idx is not None:
            full_w = self.pooled[5][idx]
        return node_fan_power_w(d, self.count, self.count, full_w)

    def delta_w(self, idx: NDArray[np.int64], util: float | NDArray[np.float64]) -> NDArray[np.float64]:
        """Simulated fans less the stated ones (W) of nodes ``idx`` at utilisation ``util``, were they up
        (records nothing): what the fans add to the stated node power."""
        max_w = self.max_w if self.pooled is None else self.pooled[6][idx]
        w = node_fan_power_w(self._demand(idx, util), self.count, self.healthy[idx], max_w)
        return np.asarray(w, dtype=np.float64) - self.stated_w(util, idx)

    def _power_pooled_w(self, idx: NDArray[np.int64], util: float | NDArray[np.float64]) -> NDArray[np.float64]:
        """:meth:`power_w` in a hall of node pools of other power figures: the same fan curve and cube law in
        numpy, each node by its pool's figures (``_pn``)."""
        now = self.engine.env._now  # the fans' energy to now first (as prepare)
        if now > self._t:
            self.energy_wh += self.total_w * (now - self._t)
            self._t = now
        idx = np.asarray(idx, dtype=np.int64)
        d = self._demand(idx, util)
        h = self.healthy[idx]
        s = np.asarray(fan_speed(d, self.count, h), dtype=np.float64)
        assert self.pooled is not None
        w = np.asarray(node_fan_power_w(d, self.count, h, self.pooled[6][idx]), dtype=np.float64)
        up = self.cluster.down_count[idx] == 0
        if len(s) and float(s.max()) > self.peak_speed:
            self.peak_speed = float(s.max())
        self.node_w[idx] = np.where(up, w, 0.0)
        self.total_w = float(self.node_w.sum())
        return np.where(up, w - self.stated_w(util, idx), 0.0)

    def power_w(self, idx: NDArray[np.int64], util: float | NDArray[np.float64]) -> NDArray[np.float64]:
        """Simulated fans less the stated ones (W) of nodes ``idx`` at utilisation ``util`` (what the fans add to
        the stated node power; 0 for a down node); records the fans' power (energy up to now first).

        On the hot path (every refresh of the IT power): the fan curve and the cube law of
        :mod:`twin.physics.fans` as one compiled loop (:func:`twin.kernels.fan_nodes`: the same floating-point
        operations, the site total in numpy's order), the stated fans of a common utilisation cached."""
        if self.pooled is not None:
            return self._power_pooled_w(idx, util)
        util_s, util_a, stated = self.prepare(util)
        cl = self.cluster
        idx = np.asarray(idx, dtype=np.int64)
        out = np.empty(len(idx))
        top, self.total_w = kernels.fan_nodes(idx, util_s, util_a, stated, self.inlet_c, self.healthy,
                                              bool(self.n_short), cl.down_count, cl.n_up == cl.n_nodes,
                                              self._p, self.node_w, out)
        if top > self.peak_speed:
            self.peak_speed = top
        return out

    def prepare(self, util: float | NDArray[np.float64]) -> tuple[float, NDArray[np.float64], float]:
        """Before the fans' kernel: their energy up to now, and ``util`` as the kernel takes it (the common
        utilisation, the per-node one (empty for a common one), the stated fans of a common one)."""
        now = self._env._now
        if now > self._t:
            self.energy_wh += self.total_w * (now - self._t)
            self._t = now
        if type(util) is np.ndarray and util.ndim:  # the per-node one (the IT power's refresh under caps)
            return 0.0, np.asarray(util, dtype=np.float64), 0.0
        if not isinstance(util, float) and np.ndim(util) == 0:  # (an int or a 0-d array: the common one)
            util = float(util)
        if isinstance(util, float):
            got = self._stated.get(util)
            if got is None:
                got = self._stated[util] = float(self.stated_w(util))
            return util, _EF, got
        return 0.0, np.asarray(util, dtype=np.float64), 0.0

    def prepare_common(self, util: float | None) -> tuple[float, float]:
        """:meth:`prepare` for the IT power's compiled refresh: the fans' energy up to now, and for a common
        utilisation ``util`` it and its stated fans; None (each node's own utilisation): (0.0, 0.0)."""
        now = self._env._now
        t = self._t
        if now > t:
            self.energy_wh += self.total_w * (now - t)
            self._t = now
        if util is None:
            return 0.0, 0.0
        if type(util) is not float:  # (an int, a numpy scalar: prepare's conversions)
            util_s, _, stated = self.prepare(util)
            return util_s, stated
        got = self._stated.get(util)
        if got is None:
            got = self._stated[util] = float(self.stated_w(util))
        return util, got

    def energy_kwh(self) -> float:
        """Fans' energy from time 0 to now, kWh (exact: their power is piecewise constant)."""
        now = self.engine.env.now
        if now > self._t:
            self.energy_wh += self.total_w * (now - self._t)
            self._t = now
        return self.energy_wh / 1000.0


def pool_fan_numbers(sc: "Scenario", liquid: bool) -> NDArray[np.float64] | None:
    """Per node (columns) the fan law's node figures in a hall of node pools whose figures differ (``FanLaw._pn``:
    GPUs × (demand − idle), GPUs × idle, non-GPU load idle and busy, nameplate, fans at full speed as rated and
    in this hall, W); None without pools, or when every pool's figures are the hall's node's."""
    cl = sc.cluster
    if not cl.pools:
        return None
    f, g = cl.node.fans, cl.node.gpus
    rows = []
    for a, b, node in cl.node_pools():
        ng0 = float(node.non_gpu_idle_w)  # type: ignore[arg-type]  # resolved
        full_w = f.full_w(ng0, node.rated_w)
        rows.append((a, b, (g * (node.gpu.demand_w - node.gpu.idle_w), g * node.gpu.idle_w, ng0,
                            float(node.non_gpu_w), float(node.rated_w), full_w,
                            full_w * (f.residual_share if liquid else 1.0))))
    if all(r[2] == rows[0][2] for r in rows):
        return None
    out = np.empty((7, cl.n_nodes))
    for a, b, figs in rows:
        out[:, a:b] = np.asarray(figs, dtype=np.float64)[:, None]
    return out


def fan_law(engine: "Engine", cluster: "Cluster", sc: "Scenario") -> FanLaw | None:
    """The fans' state for the IT power when fans are modelled (a cooling section, fans enabled), else None."""
    if sc.cooling is None or not sc.cluster.node.fans.enabled:
        return None
    return FanLaw(engine, cluster, sc)


__all__ = ["FanLaw", "fan_law", "pool_fan_numbers"]
