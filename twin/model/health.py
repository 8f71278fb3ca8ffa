"""Not all nodes are equal (issue 26): frailty and quarantine of lemon nodes, stragglers, silent data
corruption and infant mortality of replaced parts (the scenario's ``health`` section,
:mod:`twin.scenario.health`, and parts with effect ``degraded``).

* Frailty: each node's Z ~ Gamma(1/v, v), from the node's stream ``<node path>#frailty``, multiplies
  the hazard of its parts (:func:`twin.model.parts.frail_u`), set before the first lives are drawn.
* Quarantine: ``k`` part failures of a node within the window take it out (down reason
  ``quarantine``) for a deep repair; then its frailty is 1 and its healthy parts' lives are redrawn.
* Degraded parts: while failed, the node's speed cap ``degraded`` (``cluster.speed_source``) is the lowest
  speed drawn for its failed degraded parts; the job runs at its slowest node's pace (the workload's
  rate). ``detection_h`` later the straggler is flagged; policy ``swap`` drains it (down reason
  ``straggler:<part>``) until the part is restored.
* Silent data corruption: defective nodes corrupt at the times of a renewal process; a corruption on a
  node of a running job is detected a latency later, when the job rolls back (the JOBS service) and
  the node is tested (down reason ``sdc_test``), unless the job restarted meanwhile from a checkpoint
  captured before the corruption (any interruption or an earlier rollback): its state no longer holds the
  corruption, whose detection then costs nothing (counted in ``sdc.discarded``).
* Infant mortality: a part replaced by a technician is defective with probability q and then fails
  after its early life, if that is shorter than its drawn life.
"""

from __future__ import annotations

import functools
import math
from collections import deque
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from scipy.special import gammaincinv

from twin import rng
from twin.model.component import JOBS, BuildContext, Component, Jobs, ResultsSoFar
from twin.model.causes import QUARANTINE, SDC, SDC_TEST, DownCause
from twin.model.engine import Timer
from twin.model.parts import PART_FAILED, PART_REPLACED, PART_RESTORED, PartPopulation
from twin.scenario.distributions import Fixed

if TYPE_CHECKING:  # pragma: no cover
    from twin.scenario.schema import Scenario

SPEED_SOURCE = "degraded"
"""The engine's speed-cap source of degraded parts."""

SDC_CAUSE = SDC
"""Interruption cause of an SDC rollback (the jobs table)."""


def node_digests(n_nodes: int, nodes_per_rack: int, purpose: str) -> np.ndarray:
    """Digests of the node streams ``<node path>#<purpose>`` of every node, in node order."""
    from twin.model.cluster import node_path

    return rng.path_digests(f"{node_path(i, nodes_per_rack)}#{purpose}" for i in range(n_nodes))


def gamma_frailty(u: np.ndarray, variance: float) -> np.ndarray:
    """Gamma(shape 1/v, scale v) by its inverse CDF at ``u`` (mean 1, variance v); 1 when v = 0."""
    if variance <= 0:
        return np.ones_like(u)
    out: np.ndarray = np.maximum(gammaincinv(1.0 / variance, u) * variance, 1e-300)
    return out


class NodeHealth(Component):
    """The node-health mechanisms of the module docstring (one component, all nodes)."""

    name = "health"
    uses = (JOBS,)

    @classmethod
    def wanted(cls, sc: Scenario) -> bool:
        return sc.health is not None or any(p.effect == "degraded" for p in sc.cluster.node.parts.values())

    @classmethod
    def build(cls, ctx: BuildContext) -> NodeHealth:
        return cls(ctx)

    def __init__(self, ctx: BuildContext) -> None:
        from twin.scenario.health import Health

        self.engine = ctx.engine
        self.cluster = ctx.cluster
        self.parts = ctx.parts
        self.shop = ctx.shop
        self.jobs: Jobs | None = ctx.optional(JOBS)
        self.spec = ctx.sc.health if ctx.sc.health is not None else Health()
        cl = self.cluster
        n = cl.n_nodes
        self._stream_key = self.engine.streams.key
        # frailty: drawn now, before the parts draw their first lives (Model starts them after the build)
        self.frailty = np.ones(n)
        fr = self.spec.frailty
        if fr is not None and fr.variance > 0:
            u = self.engine.streams.uniforms(node_digests(n, cl.nodes_per_rack, "frailty"), 0)
            self.frailty = gamma_frailty(u, fr.variance)
            for name, pop in self.parts.items():
                if fr.parts is None or name in fr.parts:
                    pop.frailty = self.frailty.copy()
        self._digests: dict[str, np.ndarray] = {}
        self._node_digest: dict[tuple[str, int], int] = {}  # (purpose, node): one node's digest (_u)
        bus = self.engine.bus
        # quarantine and lemons (with a frailty and no quarantine, lemons are counted by the default
        # trigger, no node taken out)
        from twin.scenario.health import Quarantine

        q = self.spec.quarantine
        if q is None and fr is not None:
            q = Quarantine(enabled=False)
        self._trigger = q
        self._recent: dict[int, deque[float]] = {}
        self.lemons: set[int] = set()
        self.quarantines = 0
        self._quarantined = np.zeros(n, dtype=bool)
        self._q_count = np.zeros(n, dtype=np.int64)
        if q is not None:
            bus.subscribe(PART_FAILED, self._count_failure)
        # degraded parts and stragglers
        self.degraded = {name: pop for name, pop in self.parts.items() if pop.spec.effect == "degraded"}
        self._speeds: dict[int, dict[tuple[str, int], float]] = {}
        self._straggler: dict[tuple[str, int], Timer] = {}
        self._drained: set[tuple[str, int]] = set()
        self.straggler_episodes = 0
        self.straggler_swaps = 0
        self._slow_since: dict[int, tuple[float, float]] = {}  # node -> (since h, speed)
        self.straggler_node_h = 0.0
        self.speed_lost_node_h = 0.0
        if self.degraded:
            self._speed = ctx.cluster.speed_source(SPEED_SOURCE)
            self._cap = self._speed.caps
            bus.subscribe(PART_FAILED, self._on_failed)
            bus.subscribe(PART_RESTORED, self._on_restored)
        # silent data corruption
        self.sdc_corruptions = 0
        self.sdc_harmless = 0
        self.sdc_discarded = 0
        self.sdc_rollbacks = 0
        self.sdc_lost_gpu_h = 0.0
        self.sdc_lost_h: list[float] = []
        self.sdc_found = 0
        self._sdc_k = np.zeros(n, dtype=np.int64)
        self._sdc_timers: dict[int, Timer] = {}
        self.defective = np.zeros(n, dtype=bool)
        sdc = self.spec.sdc
        if sdc is not None and sdc.defective_share > 0:
            u = self.engine.streams.uniforms(self._node_digests("sdc_defect"), 0)
            self.defective = u < sdc.defective_share
        # infant mortality of replacements
        self.infant_defects = 0
        if self.spec.infant_mortality is not None:
            bus.subscribe(PART_REPLACED, self._on_replaced)

    # ---- draws ------------------------------------------------------------------------------------
    def _node_digests(self, purpose: str) -> np.ndarray:
        d = self._digests.get(purpose)
        if d is None:
            d = self._digests[purpose] = node_digests(self.cluster.n_nodes, self.cluster.nodes_per_rack, purpose)
        return d

    def _u(self, node: int, purpose: str, k: int) -> float:
        """Uniform ``k`` of the node's stream ``<node path>#<purpose>``: the node's digest alone (a dict of those
        asked, ``node_digests(...)[node]``'s number) where no draw of every node made the purpose's array."""
        d = self._digests.get(purpose)
        if d is not None:
            return rng.uniform1(self._stream_key, int(d[node]), k)
        key = (purpose, node)
        dg = self._node_digest.get(key)
        if dg is None:
            from twin.model.cluster import node_path

            dg = self._node_digest[key] = rng.path_digest(f"{node_path(node, self.cluster.nodes_per_rack)}#{purpose}")
        return rng.uniform1(self._stream_key, dg, k)

    def _draw(self, dist: Any, node: int, purpose: str, k: int) -> float:
        if isinstance(dist, Fixed):
            return dist.value_h
        return float(dist.sample1(self._u(node, purpose, k)))  # (= float(dist.sample(np.array([u]))[0]))

    def down_causes(self) -> dict[str, str]:
        return {DownCause.straggler(name).label: name for name in self.degraded}

    # ---- start --------------------------------------------------------------------------------------
    def start(self) -> None:
        for node in np.flatnonzero(self.defective).tolist():
            timer = self._sdc_timers[node] = self.engine.timer(functools.partial(self._corrupt, node))
            self._next_corruption(node, timer)

    # ---- quarantine ---------------------------------------------------------------------------------
    def _count_failure(self, pop: Any, idx: int) -> None:
        node = pop.node_of(idx)
        if node < 0 or not isinstance(pop, PartPopulation):
            return
        q = self._trigger
        assert q is not None
        now = self.engine.now
        recent = self._recent.setdefault(node, deque())
        recent.append(now)
        window_h = q.window_days * 24.0
        while recent and recent[0] <= now - window_h:
            recent.popleft()
        if len(recent) < q.failures or self._quarantined[node]:
            return
        recent.clear()
        self.lemons.add(node)
        if not q.enabled:
            return
        self.quarantines += 1
        self._quarantined[node] = True
        k = int(self._q_count[node])
        self._q_count[node] = k + 1
        deep_h = self._draw(q.deep_repair, node, "deep_repair", k)
        self.engine.recorder.event(now, "quarantine", self.cluster.node_path(node), node, deep_h)
        self.cluster.add_down(node, QUARANTINE)
        self.engine.calls(self._deep_repaired).at(now + deep_h, node)

    def _deep_repaired(self, node: int) -> None:
        self._quarantined[node] = False
        self.frailty[node] = 1.0
        for pop in self.parts.values():
            if pop.frailty is not None:
                pop.frailty[node] = 1.0
                for idx in range(node * pop.per_node, (node + 1) * pop.per_node):
                    if pop.healthy[idx]:
                        pop.redraw(idx)
        self.cluster.remove_down(node, QUARANTINE)

    # ---- degraded parts and stragglers -----------------------------------------------------------
    def _on_failed(self, pop: Any, idx: int) -> None:
        if pop.spec.effect != "degraded" or pop.name not in self.degraded:
            return
        node = pop.node_of(idx)
        sp = pop.spec.speed
        k = int(pop.repairs[idx])
        s = sp.low + (sp.high - sp.low) * pop.uniform(idx, "speed", k)
        self._speeds.setdefault(node, {})[(pop.name, idx)] = s
        self.straggler_episodes += 1
        self.engine.recorder.event(self.engine.now, "degraded", pop.path(idx), node, s)
        self._set_speed(node)
        st = self.spec.stragglers
        key = (pop.name, idx)
        timer = self._straggler.get(key)
        if timer is None:
            timer = self._straggler[key] = self.engine.timer()
        timer.set(self.engine.now + st.detection_h, lambda: self._detected(pop, idx))

    def _detected(self, pop: PartPopulation, idx: int) -> None:
        node = pop.node_of(idx)
        if self.spec.stragglers.policy == "swap":
            self.straggler_swaps += 1
            self._drained.add((pop.name, idx))
            self.cluster.add_down(node, DownCause.straggler(pop.name))

    def _on_restored(self, pop: Any, idx: int) -> None:
        if pop.name not in self.degraded:
            return
        node = pop.node_of(idx)
        key = (pop.name, idx)
        self._speeds.get(node, {}).pop(key, None)
        timer = self._straggler.get(key)
        if timer is not None:
            timer.cancel()
        self._set_speed(node)
        if key in self._drained:
            self._drained.discard(key)
            self.cluster.remove_down(node, DownCause.straggler(pop.name))

    def _set_speed(self, node: int) -> None:
        speeds = self._speeds.get(node)
        s = min(speeds.values()) if speeds else 1.0
        now = self.engine.now
        prev = self._slow_since.pop(node, None)
        if prev is not None:
            since, old = prev
            self.straggler_node_h += now - since
            self.speed_lost_node_h += (1.0 - old) * (now - since)
        if s < 1.0:
            self._slow_since[node] = (now, s)
        if self._cap[node] != s:
            self._cap[node] = s
            self._speed.changed(np.array([node], dtype=np.int64))

    # ---- silent data corruption -------------------------------------------------------------------
    def _next_corruption(self, node: int, timer: Timer) -> None:
        sdc = self.spec.sdc
        assert sdc is not None
        k = int(self._sdc_k[node])
        self._sdc_k[node] = k + 1
        timer.set(self.engine.now + self._draw(sdc.corruption, node, "sdc_gap", k))

    def _corrupt(self, node: int) -> None:
        sdc = self.spec.sdc
        assert sdc is not None
        now = self.engine.now
        self.sdc_corruptions += 1
        jid = self.jobs.job_on(node) if self.jobs is not None and self.cluster.is_up(node) else -1
        self.engine.recorder.event(now, "corrupt", self.cluster.node_path(node), node, float(jid))
        if jid < 0:
            self.sdc_harmless += 1
        else:
            latency = self._draw(sdc.detection, node, "sdc_detect", int(self._sdc_k[node]) - 1)
            self.engine.calls(self._sdc_detected).at(now + latency, node, jid, now)
        self._next_corruption(node, self._sdc_timers[node])

    def _sdc_detected(self, node: int, jid: int, corrupt_h: float) -> None:
        sdc = self.spec.sdc
        assert sdc is not None and self.jobs is not None
        now = self.engine.now
        if self.jobs.discarded(jid, corrupt_h):  # a restart since discarded the corrupt state: nothing to do
            self.sdc_discarded += 1
            self.engine.recorder.event(now, "discarded", self.cluster.node_path(node), node, float(jid))
            return
        back = self.jobs.rollback(jid, corrupt_h, node, SDC_CAUSE)
        if back is None:
            return
        lost, gpus = back
        self.sdc_rollbacks += 1
        self.sdc_lost_h.append(lost)
        self.sdc_lost_gpu_h += lost * gpus
        self.engine.recorder.event(now, "rollback", self.cluster.node_path(node), node, lost)
        # the node is tested (out of service); the test finds the defect with probability test_finds
        k = int(self.sdc_rollbacks)
        found = self._u(node, "sdc_test", k) < sdc.test_finds
        self.cluster.add_down(node, SDC_TEST)
        self.engine.calls(self._tested).at(now + sdc.test_h, node, found)

    def _tested(self, node: int, found: bool) -> None:
        if found and self.defective[node]:
            self.sdc_found += 1
            self.defective[node] = False
            self._sdc_timers[node].cancel()
        self.cluster.remove_down(node, SDC_TEST)

    # ---- infant mortality -------------------------------------------------------------------------
    def _on_replaced(self, pop: Any, idx: int) -> None:
        im = self.spec.infant_mortality
        if im is None or not isinstance(pop, PartPopulation):
            return
        k = int(pop.repairs[idx])
        if pop.uniform(idx, "infant", k) >= im.share:
            return
        self.infant_defects += 1
        life = im.early_life.sample1(pop.uniform(idx, "early", k))
        pop.shorten(idx, life)

    # ---- results --------------------------------------------------------------------------------------
    def finish(self) -> None:
        for node in list(self._slow_since):
            since, s = self._slow_since.pop(node)
            dt = self.engine.horizon_h - since
            self.straggler_node_h += dt
            self.speed_lost_node_h += (1.0 - s) * dt

    def results(self, so_far: ResultsSoFar) -> tuple[dict[str, float], dict[str, pd.DataFrame]]:
        m: dict[str, float] = {}
        sp = self.spec
        if sp.frailty is not None or sp.quarantine is not None:
            m["health.lemons"] = float(len(self.lemons))
            down = so_far.tables["node_intervals"]
            down = down[down["state"] == "down"]
            hours = (down["end_h"] - down["start_h"]).to_numpy()
            total = float(hours.sum())
            on_lemon = float(hours[down["node"].isin(sorted(self.lemons)).to_numpy()].sum())
            m["health.lemon_down_share"] = on_lemon / total if total > 0 else math.nan
            m["health.quarantines"] = float(self.quarantines)
            m["health.frailty_max"] = float(self.frailty.max()) if len(self.frailty) else math.nan
        if self.degraded:
            m["stragglers.episodes"] = float(self.straggler_episodes)
            m["stragglers.swaps"] = float(self.straggler_swaps)
            m["stragglers.node_hours"] = self.straggler_node_h
            m["stragglers.speed_lost_node_hours"] = self.speed_lost_node_h
        if sp.sdc is not None:
            m["sdc.defective_nodes"] = float(np.count_nonzero(self.defective) + self.sdc_found)
            m["sdc.corruptions"] = float(self.sdc_corruptions)
            m["sdc.harmless"] = float(self.sdc_harmless)
            m["sdc.discarded"] = float(self.sdc_discarded)
            m["sdc.rollbacks"] = float(self.sdc_rollbacks)
            m["sdc.lost_gpu_hours"] = self.sdc_lost_gpu_h
            m["sdc.found_by_test"] = float(self.sdc_found)
        if sp.infant_mortality is not None:
            m["health.infant_defects"] = float(self.infant_defects)
        return m, {}
