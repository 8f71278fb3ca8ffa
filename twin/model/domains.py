"""NVLink domains as scheduling units (``cluster.nvlink``; issue 28 item 5; docs/guide/parallelism.md).

A domain is ``domain_nodes`` consecutive nodes of a rack (GB200 NVL72: the 18 compute trays of a rack).
A job whose tensor-parallel groups span nodes (tp > GPUs per node) holds its nodes in *units* of
u = tp / GPUs-per-node nodes, each unit inside one domain: its nodes in every domain are a multiple of
u, so with its ranks placed tp innermost over its sorted nodes (Megatron-LM's and Llama 3's order)
every tp group lies in one domain. :meth:`Domains.usable`, :meth:`Domains.pick` and
:meth:`Domains.complete` keep that rule at start and at a node's replacement.

The step-time model sees two things of the placement: the *block* of GPUs its ranks tile inside
domains (:meth:`Domains.block_gpus`: the gcd of its GPUs per domain, at most the layout's domain; a
job spread thinly over domains sends its pipeline and data-parallel traffic over the NICs instead of
NVLink) and the NVLink bandwidth share of its domains (:meth:`Domains.nvlink_share`: the lowest).
The share follows the switch trays: the rack part ``switch_part`` publishes each change of its working
units on the bus (``Topic.RACK_PART``); with h of n units working the share is h/n; below the part's
threshold the rack part itself takes the rack's nodes down (``twin.model.racks``), so the jobs there
are interrupted. Each change of a domain's share is published as ``Topic.NVLINK`` (the workload
re-rates the jobs on that domain).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from twin.model.engine import Bus, Topic

if TYPE_CHECKING:  # pragma: no cover
    from twin.scenario.schema import Scenario


class Domains:
    """The cluster's NVLink domains: placement in whole units and each domain's NVLink share."""

    def __init__(self, sc: Scenario, bus: Bus) -> None:
        nv = sc.cluster.nvlink
        assert nv is not None and nv.domain_nodes is not None
        self.domain_nodes = nv.domain_nodes
        self.gpn = sc.cluster.node.gpus
        self.n_domains = sc.cluster.n_nodes // nv.domain_nodes
        self.share = np.ones(self.n_domains)
        """NVLink bandwidth share of each domain (working switch trays / trays)."""
        self._bus = bus
        self._switch = nv.switch_part
        if nv.switch_part is not None:
            self._trays = sc.cluster.rack_parts[nv.switch_part].count
            bus.subscribe(Topic.RACK_PART, self._on_rack_part)

    # ---- placement -------------------------------------------------------------------------
    def unit(self, tp: int) -> int:
        """Nodes per tensor-parallel group placement unit: tp / GPUs per node when tp spans nodes, else 1."""
        return tp // self.gpn if tp > self.gpn else 1

    def usable(self, pool: np.ndarray, u: int) -> int:
        """Nodes of ``pool`` a job of unit ``u`` can use: each domain's nodes rounded down to whole units."""
        if u == 1 or not len(pool):
            return len(pool)
        counts = np.bincount(pool // self.domain_nodes)
        return int((counts - counts % u).sum())

    def pick(self, pool: np.ndarray, k: int, u: int) -> list[int]:
        """``k`` nodes (a multiple of ``u``) of the sorted ``pool`` in whole units per domain: the fewest
        domains (the domains with the most usable nodes first, lower index on ties), the lowest nodes of
        each. The caller has checked ``usable(pool, u) >= k``."""
        dom = pool // self.domain_nodes
        counts = np.bincount(dom)
        usable = counts - counts % u
        out: list[int] = []
        for d in np.lexsort((np.arange(len(usable)), -usable)).tolist():
            if len(out) >= k or usable[d] == 0:
                break
            take = min(int(usable[d]), k - len(out))
            out += pool[dom == d][:take].tolist()
        assert len(out) == k, "pick called without enough usable nodes"
        return out

    def complete(self, keep: np.ndarray, need: int, pools: list[np.ndarray],
                 u: int) -> tuple[np.ndarray, np.ndarray] | None:
        """Nodes to add and to drop for a job of unit ``u`` that keeps ``keep`` after losing ``need``
        nodes: in each domain where its last unit is now incomplete, the missing nodes from that domain
        if there are enough, else its unit's remaining nodes there are dropped (and replaced with the
        rest); then whole units anywhere (the fewest domains). Nodes come from ``pools`` in order of
        preference (hot spares, then free nodes). None when there are not enough (the job is requeued)."""
        pool = np.concatenate(pools) if pools else np.zeros(0, dtype=np.int64)
        dn = self.domain_nodes
        kept = np.bincount(keep // dn, minlength=self.n_domains)
        short = (-kept) % u  # nodes missing to complete each domain's last unit
        taken: list[int] = []
        dropped: list[int] = []
        used = np.zeros(len(pool), dtype=bool)
        pdom = pool // dn
        for d in np.flatnonzero(short).tolist():
            cand = np.flatnonzero((pdom == d) & ~used)[: int(short[d])]
            if len(cand) == short[d]:
                used[cand] = True
                taken += pool[cand].tolist()
            else:  # not enough here: give up the incomplete unit (its highest kept nodes in the domain)
                mine = keep[keep // dn == d]
                dropped += mine[len(mine) - (u - int(short[d])):].tolist()
        rest = need + len(dropped) - len(taken)
        if rest:
            left = np.sort(pool[~used])
            if self.usable(left, u) < rest:
                return None
            taken += self.pick(left, rest, u)
        return np.array(taken, dtype=np.int64), np.array(dropped, dtype=np.int64)

    # ---- what the step-time model sees ---------------------------------------------------------
    def block_gpus(self, nodes: np.ndarray, layout_domain_gpus: int) -> int:
        """GPUs of the blocks the job's ranks tile inside domains: the gcd of its GPUs in each domain it
        uses and of the layout's domain (``layout_domain_gpus``)."""
        counts = np.bincount(nodes // self.domain_nodes)
        g = layout_domain_gpus
        for c in counts[counts > 0].tolist():
            g = math.gcd(g, c * self.gpn)
        return g

    def nvlink_share(self, nodes: np.ndarray) -> float:
        """The lowest NVLink share of the domains the job's nodes are in."""
        return float(self.share[nodes // self.domain_nodes].min())

    # ---- switch trays --------------------------------------------------------------------------
    def _on_rack_part(self, rack: int, part: str, healthy: int) -> None:
        """A rack part's working units in ``rack`` changed: the switch trays set the share of the rack's
        domain (domain_nodes = nodes_per_rack, checked by the schema)."""
        if part != self._switch:
            return
        share = healthy / self._trays
        if share != self.share[rack]:
            self.share[rack] = share
            self._bus.publish(Topic.NVLINK, rack)
