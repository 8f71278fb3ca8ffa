"""Leaks that cost (model.md §4, issue 42 item 5): node leaks with detection and damage, and loop-wide
(CDU or manifold) leaks.

A node leak (facility part ``leak``, one per node) is detected with ``leak.detection.probability``: its
rack is isolated (every node of the rack down, cause ``leak``) until the leak is repaired, and nothing
is destroyed. Undetected (or with no detection fitted) it takes its node and ``leak.neighbours`` nodes
after it in the rack down (cause ``leak``) until repaired, and each of them is destroyed with
``leak.damage.probability``: a destroyed node stays down (cause ``leak_damage``) until ``replace_h`` after
the leak, and the costs replace its node and PSUs (``leak.nodes_destroyed``, table ``leak_damage``).
A loop leak (facility part ``loop_leak``, one per loop) takes every node of its loop down (cause
``loop_leak``) until repaired.

The draws come from the leaking unit's own streams (``leak_detect``, ``leak_damage``: twin.rng.STREAMS),
numbered by the unit's leak count, so they depend only on (seed, replication, unit, leak number).
"""

from __future__ import annotations

from typing import Any, TYPE_CHECKING

import numpy as np

from twin import rng
from twin.model.causes import LEAK_DAMAGE, DownCause
from twin.model.cooling.arrays import CoolingArrays, CoolingParams
from twin.model.parts import FacilityParts

LEAK, DAMAGE, LOOP_LEAK = DownCause.part_failed("leak"), LEAK_DAMAGE, DownCause.part_failed("loop_leak")
"""Node-down causes of a node leak (or a detected leak's isolated rack), a destroyed node, a loop leak."""
_MAX_SPAN = 65
"""Damage draws per leak: the leaking node and at most 64 neighbours (``leak.neighbours`` ≤ 64)."""

if TYPE_CHECKING:  # pragma: no cover
    from twin.model.cluster import Cluster
    from twin.model.engine import Engine



class Leaks:
    """Room of the cooling component: node and loop leaks, their detection and damage."""

    def __init__(self, params: CoolingParams, arrays: CoolingArrays, engine: Engine, cluster: Cluster,
                 fac_specs: dict[str, Any], facility: dict[str, FacilityParts]) -> None:
        """The leak sensors of the nodes and of the loops (facility parts) and the damage accounts."""
        self.params = params
        self.arrays = arrays
        self.engine = engine
        self.cluster = cluster
        self._facility = facility
        if params.liquid is None or params.liquid.leak is None:
            return
        lq = self.params.liquid
        assert lq is not None and lq.leak is not None
        eng, cl = self.engine, self.cluster
        n = self.params.n_nodes
        lpaths = [f"{cl.node_path(i)}.leak" for i in range(n)]
        self.leak = FacilityParts(eng, "leak", lpaths, fac_specs["leak"])
        eng.bus.subscribe(self.leak.changed, self._on_leak)
        self._facility["leak"] = self.leak
        self._leak_k = np.zeros(n, dtype=np.int64)  # leaks of each node's unit so far (its draw number)
        self._leak_held: dict[int, list[int]] = {}  # a leaking unit: the nodes it holds down (cause leak)
        self.leak_events = 0
        self.leak_detected = 0
        self.damage_rows: list[tuple[float, int, float]] = []  # (time_h, node, back_h)
        self._destroyed_until = np.full(n, -np.inf)  # a destroyed node: when its replacement is in service
        if lq.leak.loop is not None:
            paths = [f"cooling.loop{lp}.leak" for lp in range(lq.loops)]
            self.loop_leak = FacilityParts(eng, "loop_leak", paths, fac_specs["loop_leak"])
            eng.bus.subscribe(self.loop_leak.changed, self._on_loop_leak)
            self._facility["loop_leak"] = self.loop_leak
        self.loop_leak_events = 0

    def _leak_u(self, idx: int, stream: str, k: int) -> float:
        return rng.uniform1(self.engine.streams.key, int(self.leak.digest[idx]), k, rng.STREAMS[stream])

    def _on_leak(self, idx: int, healthy: bool) -> None:
        """Node ``idx``'s leak unit failed (a leak) or was repaired."""
        assert self.params.liquid is not None and self.params.liquid.leak is not None
        cl = self.cluster
        if healthy:
            for node in self._leak_held.pop(idx, []):
                cl.remove_down(node, LEAK)
            return
        lk = self.params.liquid.leak
        npr = cl.nodes_per_rack
        rack0 = idx // npr * npr
        k = int(self._leak_k[idx])
        self._leak_k[idx] = k + 1
        self.leak_events += 1
        det = lk.detection
        if det is not None and self._leak_u(idx, "leak_detect", k) < det.probability:
            self.leak_detected += 1  # isolated in time: the whole rack down, nothing destroyed
            nodes = list(range(rack0, rack0 + npr))
        else:
            nodes = list(range(idx, min(idx + 1 + lk.neighbours, rack0 + npr)))
            if lk.damage is not None and lk.damage.probability > 0:
                self._damage(idx, k, nodes)
        self._leak_held[idx] = nodes
        for node in nodes:
            cl.add_down(node, LEAK)

    def _damage(self, idx: int, k: int, nodes: list[int]) -> None:
        """Each of ``nodes`` (taken down by leak ``k`` of unit ``idx``) is destroyed with the damage
        probability; a destroyed node is down until its replacement ``replace_h`` from now."""
        p = self.params
        assert p.liquid is not None and p.liquid.leak is not None and p.liquid.leak.damage is not None
        dmg = p.liquid.leak.damage
        now = self.engine.now
        for j, node in enumerate(nodes):
            if self._destroyed_until[node] > now:
                continue  # destroyed already, its replacement on its way
            if self._leak_u(idx, "leak_damage", k * _MAX_SPAN + j) >= dmg.probability:
                continue
            back = now + dmg.replace_h
            self._destroyed_until[node] = back
            self.damage_rows.append((now, node, back))
            self.cluster.add_down(node, DAMAGE)
            self.engine.calls(self._damage_repaired).at(back, node)

    def _damage_repaired(self, node: int) -> None:
        """The destroyed node's replacement is in service."""
        self.cluster.remove_down(node, DAMAGE)

    def _on_loop_leak(self, lp: int, healthy: bool) -> None:
        """Loop ``lp``'s CDU or manifold leaked (its nodes go down) or was repaired (they come back)."""
        s, e = self.arrays.loops[lp]
        if not healthy:
            self.loop_leak_events += 1
        for node in range(s, e):
            if healthy:
                self.cluster.remove_down(node, LOOP_LEAK)
            else:
                self.cluster.add_down(node, LOOP_LEAK)

    def results(self) -> tuple[dict[str, float], dict[str, Any]]:
        """Metrics ``leak.*`` and the ``leak_damage`` table (one row per destroyed node)."""
        import pandas as pd

        m = {"leak.events": float(self.leak_events), "leak.detected": float(self.leak_detected),
             "leak.nodes_destroyed": float(len(self.damage_rows)), "leak.loop_events": float(self.loop_leak_events)}
        df = pd.DataFrame(self.damage_rows, columns=["time_h", "node", "back_h"])
        df = df.astype({"time_h": "float64", "node": np.int32, "back_h": "float64"})
        df["path"] = pd.Series([self.cluster.node_path(int(i)) for i in df["node"]], dtype="str")
        return m, {"leak_damage": df}


__all__ = ["DAMAGE", "LEAK", "LOOP_LEAK", "Leaks"]
