"""The compute fabric: a rail-optimised two-tier fat tree (model.md §6).

State lives in numpy arrays indexed by rule (see :mod:`twin.scenario.network`): node ``n`` is in
leaf group ``g = n // P``; leaf ``l = g·R + r`` serves rail ``r`` of group ``g``; access link
``a = n·R + r`` joins node ``n`` to leaf ``l``; trunk link ``t = l·U + j`` joins leaf ``l`` to spine
``j mod S`` (``P`` nodes per leaf, ``U`` uplinks per leaf (``P`` unless oversubscribed), ``R`` rails,
``S`` spines).

Failures go through :class:`~twin.model.parts.FacilityParts` (the same streams, crews and spares
as node parts); only failures inside the horizon are scheduled.

- An optic on an access link, or a leaf, cuts node(s) off a rail: ``cluster.add_cut(node,
  'optic' | 'leaf')`` (the workload interrupts multi-node jobs there and places none there).
- An optic on a trunk link takes that uplink down; a spine takes its ``U/S`` uplinks of every leaf
  down. A leaf's uplink share ``u_l = healthy uplinks / P`` (at most ``U/P``); a job that spans
  several leaf groups gets ``R × link_bandwidth × min over its groups' leaves of u_l`` per node (its
  ring runs at the pace of its slowest rail), a job under one leaf group the full
  ``R × link_bandwidth``. With
  spine failures only, ``u_l = (U/P)·healthy spines / S`` for every leaf. Every change is published as
  ``Topic.FABRIC``.
- Link flaps: each access link flaps as a Poisson process (rate per link per year); the flap
  times are drawn per link from the counter-based streams (vectorised at the start, one renewal
  per flap) and only those inside the horizon are scheduled. A flap of a link that is down (failed
  optic, failed leaf) is not a fault and is skipped. Each flap publishes
  ``Topic.LINK_FLAP(node, 'link_flap')``: the node's job crashes if it spans several nodes (a job on
  one node does not use the compute fabric, as a cut link does not stop it). Trunk links flap likewise when
  ``trunk_flaps_per_link_per_year`` is set (default 0): a flap of an uplink of leaf (g, r) publishes
  ``Topic.FABRIC_FLAP(g, 'trunk_flap')`` and crashes every job spanning several leaf groups with
  nodes in group g (ECMP spreads its cross-group traffic over all of its leaves' uplinks:
  assumption); a flap of a link whose optic, leaf or spine is down is skipped.

NIC failures are the node part ``nic`` (effect ``link_down``), handled by the part population.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from twin import rng
from twin.model.component import FABRIC, BuildContext, Component, ResultsSoFar
from twin.model.causes import LINK_FLAP, TRUNK_FLAP, DownCause
from twin.model.engine import Topic
from twin.model.parts import FacilityParts
from twin.observe.recorder import time_weighted_mean
from twin.units import HOURS_PER_YEAR

if TYPE_CHECKING:  # pragma: no cover
    from twin.scenario.schema import Scenario

LEVELS = ("bisection_fraction", "cut_nodes", "spines_healthy", "leaves_down")
"""Step functions recorded as ``network.<name>`` levels and returned in the ``fabric_health`` table."""


def leaf_path(rail: int, group: int) -> str:
    return f"net.rail{rail}.leaf{group:03d}"


def spine_path(spine: int) -> str:
    return f"net.spine{spine:03d}"


def access_link_path(node: int, rail: int) -> str:
    """Path of the link of ``node`` on ``rail`` (independent of the leaf size, so variants that
    regroup nodes keep each link's random draws)."""
    return f"net.rail{rail}.node{node:05d}"


def trunk_link_path(rail: int, group: int, j: int) -> str:
    return f"{leaf_path(rail, group)}.up{j:03d}"


@functools.lru_cache(maxsize=4)
def _fabric_paths(N: int, R: int, opl: int, G: int, U: int, T: int) -> tuple[list[str], NDArray[np.uint64], NDArray[np.uint64]]:
    """Optic paths (access links, then trunk links), their digests and the access links' flap-stream
    digests (read-only): a pure function of the topology, cached in the process so the replications
    of a Monte Carlo do not hash ~10^5–10^6 paths each. The strings are access_link_path /
    trunk_link_path + ".optic<e>", built from shared prefixes."""
    optic = [f".optic{e}" for e in range(opl)]
    access = [access_link_path(n, r) for n in range(N) for r in range(R)]
    opt_paths = [a + o for a in access for o in optic]
    if T:
        ups = [f".up{j:03d}" for j in range(U)]
        opt_paths += [lp + u + o for g in range(G) for r in range(R) for lp in (leaf_path(r, g),)
                      for u in ups for o in optic]
    opt = rng.path_digests(opt_paths)
    flap = rng.path_digests(a + "#flap" for a in access)
    opt.flags.writeable = False
    flap.flags.writeable = False
    return opt_paths, opt, flap


@functools.lru_cache(maxsize=4)
def _trunk_flap_digests(R: int, G: int, U: int) -> NDArray[np.uint64]:
    """Flap-stream digests of the trunk links in index order (t = (g·R + r)·U + j), read-only and cached
    like :func:`_fabric_paths`."""
    out = rng.path_digests(trunk_link_path(r, g, j) + "#flap" for g in range(G) for r in range(R) for j in range(U))
    out.flags.writeable = False
    return out


_LEAF = DownCause.part_failed("leaf")
_OPTIC = DownCause.part_failed("optic")


class _Flaps:
    """Poisson flaps of a set of links, one counter-based stream per link: every link's first flap is
    drawn at the start (vectorised), one renewal per flap; only flaps inside the horizon are
    scheduled. ``fire(link)`` applies a flap and returns False when the link is down (not a fault)."""

    def __init__(self, engine: Any, rate_h: float, digests: NDArray[np.uint64],
                 fire: Callable[[int], bool]) -> None:
        self.engine = engine
        self.rate_h = rate_h
        self.digests = digests if rate_h > 0 else np.zeros(0, dtype=np.uint64)
        self.k = np.zeros(len(self.digests), dtype=np.int64)
        self.fire = fire
        self._flaps = engine.calls(self._flap)
        self.fired = 0
        self.skipped = 0

    def _gaps(self, links: NDArray[np.int64]) -> NDArray[np.float64]:
        u = self.engine.streams.uniforms(self.digests[links], self.k[links])
        self.k[links] += 1
        return rng.exponential_from_u(u, 1.0 / self.rate_h)

    def _schedule(self, link: int, t_h: float) -> None:
        if t_h < self.engine.horizon_h:
            self._flaps.at(t_h, link)

    def _flap(self, link: int) -> None:
        if self.fire(link):
            self.fired += 1
        else:
            self.skipped += 1
        self._schedule(link, self.engine.now + float(self._gaps(np.array([link]))[0]))

    def start(self) -> None:
        if self.rate_h <= 0 or not len(self.digests):
            return
        first = self._gaps(np.arange(len(self.digests)))
        for i in np.flatnonzero(first < self.engine.horizon_h):
            self._schedule(int(i), float(first[i]))


class Network(Component):
    """The fabric component: topology state, failures, flaps, bandwidth and placement. Provides the
    ``fabric`` service (:class:`~twin.model.component.Fabric`)."""

    name = "network"
    provides = (FABRIC,)

    @classmethod
    def wanted(cls, sc: Scenario) -> bool:
        return sc.network is not None

    @classmethod
    def build(cls, ctx: BuildContext) -> Network:
        return cls(ctx)

    def __init__(self, ctx: BuildContext) -> None:
        spec = ctx.sc.network
        assert spec is not None
        self.spec = spec
        self.engine = eng = ctx.engine
        self.cluster = cl = ctx.cluster
        self.N = N = cl.n_nodes
        self.R = R = spec.rails
        self.P = P = spec.nodes_per_leaf
        self.U = U = spec.uplinks
        self.S = S = spec.spines
        self.opl = opl = spec.optics_per_link
        c = spec.counts(N)
        self.topology = c
        self.G = G = c["groups"]
        self.L = L = c["leaves"]
        self.A = A = c["access_links"]
        self.T = T = c["trunk_links"]
        self.node_group: NDArray[np.int64] = np.arange(N, dtype=np.int64) // P
        self.bw_node_gbps = R * spec.link_bandwidth_gbps
        # state
        self.leaf_ok = np.ones(L, dtype=bool)
        self.spine_ok = np.ones(S, dtype=bool)
        self.access_bad = np.zeros(A, dtype=np.int8)  # failed optics per access link
        self.trunk_bad = np.zeros(T, dtype=np.int8)  # failed optics per trunk link
        self.leaf_up = np.full(L, U if S > 0 else 0, dtype=np.int64)  # healthy uplinks per leaf
        self.group_frac = np.full(G, U / P if S > 0 else 1.0)  # min over the group's leaves of healthy uplinks / P
        self._full = bool((self.group_frac == 1.0).all())  # every group at 1.0 (kept where group_frac is written)
        self._spine_of_uplink = np.arange(U) % S if S > 0 else np.zeros(0, dtype=np.int64)
        self.n_cut = 0
        # failure populations (site-level units through the same crews and spares)
        parts = spec.facility_parts()
        opt_paths, opt_digests, flap_digests = _fabric_paths(N, R, opl, G, U, T)
        self.optics = FacilityParts(eng, "optic", opt_paths, parts["optic"], digests=opt_digests)
        self.leaves = FacilityParts(eng, "leaf", [leaf_path(r, g) for g in range(G) for r in range(R)], parts["leaf"])
        self.spines = FacilityParts(eng, "spine", [spine_path(s) for s in range(S)], parts["spine"])
        eng.bus.subscribe(self.optics.changed, self._on_optic)
        eng.bus.subscribe(self.leaves.changed, self._on_leaf)
        eng.bus.subscribe(self.spines.changed, self._on_spine)
        # dispatch by impact: an access optic cuts its node, a leaf its group's nodes (off one rail)
        self.optics.scope = lambda i: (((i // opl) // R,) if i // opl < A else ())
        self.leaves.scope = lambda i: self._group_nodes(i // R)
        # link flaps: one counter-based stream per link (access links; trunk links when their rate is set)
        self.access_flaps = _Flaps(eng, spec.link_flaps_per_link_per_year / HOURS_PER_YEAR, flap_digests,
                                   self._access_flap)
        trunk_rate_h = spec.trunk_flaps_per_link_per_year / HOURS_PER_YEAR
        self.trunk_flaps = _Flaps(eng, trunk_rate_h, _trunk_flap_digests(R, G, U) if trunk_rate_h > 0 and T
                                  else np.zeros(0, dtype=np.uint64), self._trunk_flap)
        eng.bus.subscribe(Topic.NODE_CUT, self._on_cut)
        eng.bus.subscribe(Topic.NODE_UNCUT, self._on_uncut)
        self._record_levels()

    # ---- interface used by the workload ---------------------------------------------------
    def job_bandwidth_gbps(self, nodes: NDArray[np.int64]) -> tuple[float, float]:
        """(ideal, current) bandwidth per node of a job on ``nodes``, Gbit/s.

        ideal = rails × link bandwidth; current = ideal × the smallest healthy-uplink share of the
        leaves of the job's groups when the job spans several leaf groups, else ideal (a job under
        one leaf does not cross the spines).
        """
        ideal = self.bw_node_gbps
        if len(nodes) < 2 or self._full:  # (every group's share 1.0: ideal × 1.0 is ideal, however many groups)
            return ideal, ideal
        g = self.node_group[nodes]
        if g.min() == g.max():
            return ideal, ideal
        return ideal, ideal * float(self.group_frac[g].min())

    def pack(self, pool: Sequence[int] | NDArray[np.int64], k: int) -> list[int]:
        """Choose ``k`` nodes of ``pool`` under the fewest leaf groups.

        Greedy: while no single remaining group can hold what is still needed, take the largest
        group whole; then take the smallest group that can (best fit, keeping big groups whole for
        big jobs). This reaches the minimum number of groups. Lowest node indices first in a group.
        """
        if k <= 0:
            return []
        if k > len(pool):
            raise ValueError(f"pack: {k} nodes requested from a pool of {len(pool)}")
        arr = np.array(pool, dtype=np.int64)
        arr.sort()
        g = self.node_group[arr]  # non-decreasing: groups are contiguous node ranges
        cnt = np.bincount(g, minlength=self.G)
        if self.G <= 64:  # few groups: a Python scan is cheaper than the array calls
            i, best = 0, len(arr) + 1
            for gi, c in enumerate(cnt.tolist()):
                if k <= c < best:
                    i, best = gi, c
        else:
            i = int(np.where(cnt >= k, cnt, len(arr) + 1).argmin())
        if cnt[i] >= k:  # one group holds the job: the smallest such, lowest group id on ties
            lo = int(g.searchsorted(i))
            packed: list[int] = arr[lo:lo + k].tolist()
            return packed
        start = np.flatnonzero(np.concatenate(([True], g[1:] != g[:-1])))
        counts = np.diff(np.append(start, len(arr)))
        uniq = g[start].tolist()
        cl = counts.tolist()
        st = start.tolist()
        remaining = list(range(len(uniq)))
        out: list[int] = []
        need = k
        while need > 0:
            fit = [i for i in remaining if cl[i] >= need]
            if fit:
                i = min(fit, key=lambda i: (cl[i], uniq[i]))
                out.extend(arr[st[i]:st[i] + need].tolist())
                break
            i = max(remaining, key=lambda i: (cl[i], -uniq[i]))
            out.extend(arr[st[i]:st[i] + cl[i]].tolist())
            need -= cl[i]
            remaining.remove(i)
        return out

    # ---- failure effects -----------------------------------------------------------------
    def _group_nodes(self, group: int) -> range:
        return range(group * self.P, min(self.N, (group + 1) * self.P))

    def _on_leaf(self, idx: int, healthy: bool) -> None:
        group = idx // self.R
        self.leaf_ok[idx] = healthy
        for node in self._group_nodes(group):
            if healthy:
                self.cluster.remove_cut(node, _LEAF)
            else:
                self.cluster.add_cut(node, _LEAF)
        self._record_levels()

    def _on_spine(self, idx: int, healthy: bool) -> None:
        self.spine_ok[idx] = healthy
        ok = (self.trunk_bad.reshape(self.L, self.U) == 0) & self.spine_ok[self._spine_of_uplink]
        self.leaf_up[:] = ok.sum(axis=1)
        self.group_frac[:] = self.leaf_up.reshape(self.G, self.R).min(axis=1) / self.P
        self._full = bool((self.group_frac == 1.0).all())
        self._record_levels()
        self.engine.bus.publish(Topic.FABRIC)

    def _on_optic(self, idx: int, healthy: bool) -> None:
        link = idx // self.opl
        step = -1 if healthy else 1
        if link < self.A:
            node = link // self.R
            self.access_bad[link] += step
            if healthy:
                self.cluster.remove_cut(node, _OPTIC)
            else:
                self.cluster.add_cut(node, _OPTIC)
            return
        t = link - self.A
        before = self.trunk_bad[t]
        self.trunk_bad[t] = before + step
        if (before == 0) == (self.trunk_bad[t] == 0):
            return  # the link's state did not change (its other optic was already down)
        leaf = t // self.U
        lo = leaf * self.U
        up = int(((self.trunk_bad[lo:lo + self.U] == 0) & self.spine_ok[self._spine_of_uplink]).sum())
        self.leaf_up[leaf] = up
        g = leaf // self.R
        self.group_frac[g] = self.leaf_up[g * self.R:(g + 1) * self.R].min() / self.P
        self._full = bool((self.group_frac == 1.0).all())
        self._record_levels()
        self.engine.bus.publish(Topic.FABRIC)

    def _on_cut(self, node: int, cause: DownCause) -> None:
        self.n_cut += 1
        self.engine.recorder.level("network.cut_nodes", self.engine.now, self.n_cut)

    def _on_uncut(self, node: int, cause: DownCause) -> None:
        self.n_cut -= 1
        self.engine.recorder.level("network.cut_nodes", self.engine.now, self.n_cut)

    # ---- link flaps ------------------------------------------------------------------------
    def _access_flap(self, link: int) -> bool:
        """Flap of access link ``link``: the multi-node job on its node crashes (False: the link is down,
        no fault)."""
        node, rail = divmod(link, self.R)
        if self.access_bad[link] != 0 or not self.leaf_ok[self.node_group[node] * self.R + rail]:
            return False
        self.engine.recorder.event(self.engine.now, "transient", access_link_path(node, rail), node)
        self.engine.bus.publish(Topic.LINK_FLAP, node, LINK_FLAP)
        return True

    def _trunk_flap(self, link: int) -> bool:
        """Flap of trunk link ``link`` (leaf l = link // U, uplink j): the jobs spanning several leaf
        groups with nodes in the leaf's group crash (False: the link, its leaf or its spine is down)."""
        leaf, j = divmod(link, self.U)
        if self.trunk_bad[link] != 0 or not self.leaf_ok[leaf] or not self.spine_ok[self._spine_of_uplink[j]]:
            return False
        group, rail = divmod(leaf, self.R)
        self.engine.recorder.event(self.engine.now, "transient", trunk_link_path(rail, group, j), -1)
        self.engine.bus.publish(Topic.FABRIC_FLAP, group, TRUNK_FLAP)
        return True

    def spans_groups(self, nodes: NDArray[np.int64]) -> bool:
        """True when ``nodes`` lie under more than one leaf group (their traffic crosses the spines)."""
        if len(nodes) < 2:
            return False
        g = self.node_group[nodes]
        return bool(g.min() != g.max())

    # ---- component protocol ----------------------------------------------------------------
    def bisection_fraction(self) -> float:
        """Share of the installed leaf-to-spine capacity in service (a failed leaf takes its uplinks with
        it); without spines, the share of leaves in service."""
        if self.S == 0:
            return float(self.leaf_ok.mean()) if self.L else 1.0
        return float((self.leaf_up * self.leaf_ok).sum() / (self.L * self.U))

    def _record_levels(self) -> None:
        rec = self.engine.recorder
        now = self.engine.now
        rec.level("network.bisection_fraction", now, self.bisection_fraction())
        rec.level("network.spines_healthy", now, float(self.spine_ok.sum()))
        rec.level("network.leaves_down", now, float(self.L - self.leaf_ok.sum()))
        rec.level("network.cut_nodes", now, float(self.n_cut))

    def facility_parts(self) -> dict[str, FacilityParts]:
        return {"optic": self.optics, "leaf": self.leaves, "spine": self.spines}

    def start(self) -> None:
        self.access_flaps.start()
        self.trunk_flaps.start()

    def results(self, so_far: ResultsSoFar) -> tuple[dict[str, float], dict[str, pd.DataFrame]]:
        H = self.engine.horizon_h
        rec = self.engine.recorder
        m: dict[str, float] = {f"network.{k}": float(v) for k, v in self.topology.items()}
        ts, vs = rec.level_series("network.bisection_fraction")
        m["network.bisection_fraction"] = time_weighted_mean(ts, vs, H)
        m["network.bisection_fraction.min"] = float(vs.min())
        if self.S > 0:
            ts_s, vs_s = rec.level_series("network.spines_healthy")
            m["network.spine_availability"] = time_weighted_mean(ts_s, vs_s, H) / self.S
        m["network.link_flaps"] = float(self.access_flaps.fired)
        m["network.link_flaps_skipped"] = float(self.access_flaps.skipped)
        if self.trunk_flaps.rate_h > 0:
            m["network.trunk_flaps"] = float(self.trunk_flaps.fired)
            m["network.trunk_flaps_skipped"] = float(self.trunk_flaps.skipped)
        iv = rec.intervals_table()
        cut = iv[iv["state"] == "cut"]
        hours = cut["end_h"] - cut["start_h"]
        m["network.cut_node_hours"] = float(hours.sum())
        for cause, h in hours.groupby(cut["cause"].astype(str)).sum().items():
            m[f"network.cut_node_hours.{cause}"] = float(h)
        rows = []
        for name in LEVELS:
            t, v = rec.level_series(f"network.{name}")
            rows.append(pd.DataFrame({"series": name, "time_h": t, "value": v}))
        health = pd.concat(rows, ignore_index=True)
        health["series"] = pd.Categorical(health["series"], categories=list(LEVELS))
        return m, {"fabric_health": health}
