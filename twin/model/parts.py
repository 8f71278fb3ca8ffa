"""Part populations: every instance of one part type across the cluster, held in arrays.

No generator process per part: first lifetimes of a whole population are drawn in one
vectorised call, and only failures that fall inside the horizon are scheduled (one callback
each). A replaced part renews (as good as new) with its next draw ``k + 1``.

Two kinds share one base, :class:`Population` (lifetimes, renewal, common-cause groups, latent
failures): :class:`PartPopulation`, a node part (``count`` per node, its effect on the node), and
:class:`FacilityParts`, site units outside any node (CRAH units, CDUs, chillers, feed units, optics,
switches, storage servers...), whose owners subscribe to its ``changed`` channel.

A node part's failure is published as ``PART_FAILED``, a site unit's as ``UNIT_FAILED``: the repair shop
subscribes to both (twin.model.repair) and publishes ``PART_REPLACED`` when a technician's replacement
restores a unit.
"""

from __future__ import annotations

import abc
import functools
from typing import Any, Callable, Final, Iterable, Sequence

import numpy as np
import simpy

from twin import rng
from twin.model.causes import DownCause
from twin.model.cluster import Cluster, node_path
from twin.model.engine import Channel, Engine, Topic
from twin.scenario.base import Part
from twin.scenario.distributions import Exponential, Fixed, Weibull

ONE_BELOW = float(np.nextafter(1.0, 0.0))

DEFAULT_PRIORITY = {"node_down": 0, "link_down": 1, "redundant": 2, "transient": 3, "degraded": 2}


@functools.lru_cache(maxsize=64)
def _node_part_digests(racks: int, nodes_per_rack: int, name: str, per_node: int) -> np.ndarray:
    """Path digests of every part ``name`` of a cluster, in population order (= path(i)), read-only.

    A pure function of the layout, cached in the process: the replications of a Monte Carlo share
    it instead of hashing every component path again (the build of a large cluster is mostly this).
    """
    n_nodes = racks * nodes_per_rack
    node_paths = [node_path(node, nodes_per_rack) for node in range(n_nodes)]
    slots = [f".{name}{slot}" for slot in range(per_node)]
    out = rng.path_digests(np_ + sl for np_ in node_paths for sl in slots)
    out.flags.writeable = False
    return out


class Population(abc.ABC):
    """What every part population shares, node parts (:class:`PartPopulation`) and site units
    (:class:`FacilityParts`) alike: lifetimes from each unit's stream (renewal with draw ``k + 1``), their
    scheduling with a generation that invalidates stale failures, the units' age at the start (their first
    lifetime drawn from the residual life given that age, :func:`aged_sample`), common-cause groups (β-factor: each
    unit alone at (1 − β)λ, a common event of its group at βλ), latent failures found by a periodic
    test or a demand, and the counters the results read. A kind says where its units sit (``path``,
    ``node_of``, its common-cause groups) and what a failure or a repair does (``_fire``, ``restore``).
    """

    def __init__(self, engine: Engine, name: str, spec: Part, n: int, digest: np.ndarray, priority: int) -> None:
        self.engine = engine
        self.name = name
        self.spec = spec
        self.n = n
        self.priority = priority
        self.digest = digest  # stream digest of each unit's path
        self.draws = np.zeros(n, dtype=np.int64)  # draws made so far per part
        self.moved = 0
        """Failure times moved or redrawn by another model (ageing, injection, a deep repair): ``twin rare``'s
        likelihood ratio of a rate scaling holds only while 0."""
        self.healthy = np.ones(n, dtype=bool)
        self.install_h = np.zeros(n, dtype=np.float64)
        self.life_h = np.zeros(n, dtype=np.float64)
        age0 = float(getattr(spec, "initial_age_h", 0.0))
        self.age_h: np.ndarray | None = np.full(n, age0) if age0 > 0 else None
        """Age of each unit at the start of the run, hours (``initial_age_h``, or the ages a timeline carries
        from the stage before, set before :meth:`start`); None: every unit new."""
        self.failures = 0
        self.repairs = np.zeros(n, dtype=np.int64)
        # the common-cause process and the latent failures
        self.beta = float(spec.common_cause_beta)
        self._ccf_mean_h = spec.failure.mean() / self.beta if self.beta else float("inf")  # 1/(βλ), hours
        self._ccf_digests = np.zeros(0, dtype=np.uint64)
        self._in_ccf = False
        self._down_cause: dict[int, DownCause] = {}
        self.cause = DownCause.part_failed(name)
        """The down (or cut) reason of a failed unit: the part's name."""
        self._ccf_cause = DownCause.common(name)
        self.ccf_events = 0  # common events that failed at least one unit
        self.ccf_failures = 0  # units they failed
        self.ccf_arrivals = 0  # common events that arrived (with or without a working unit to fail)
        self.life_failures = 0  # failures that ended a drawn lifetime (not common, hazard or injected ones)
        self.test_h: float | None = spec.latent_test_interval_h
        self._hidden: dict[int, simpy.Event] = {}
        self.latent_found_test = 0
        self.latent_found_demand = 0
        self.test_duration_h = 0.0
        """Hours each periodic test takes a working unit out of service (set by the owner; 0: no time)."""
        self.test_unit_h = 0.0  # unit-hours out of service for tests
        self._in_test: set[int] = set()  # working units out of service for their test now
        self._fires = engine.item_timer(n, self._life_end)  # each unit's pending failure (one at a time)
        self._common = engine.calls(self._common_event)
        self._tests = engine.calls(self._periodic_test)
        self._unit_tests = engine.calls(self._test_unit)
        self._test_ends = engine.calls(self._test_end)

    # ---- where the units sit and what a failure does (each kind) --------------------------------
    @abc.abstractmethod
    def path(self, idx: int) -> str:
        """Component path of unit ``idx`` (its random streams and events)."""

    @abc.abstractmethod
    def node_of(self, idx: int) -> int:
        """Node of unit ``idx`` (-1: a site unit, in no node)."""

    @property
    @abc.abstractmethod
    def n_groups(self) -> int:
        """Common-cause groups."""

    @abc.abstractmethod
    def members(self, g: int) -> Sequence[int]:
        """Units of common-cause group ``g``."""

    @abc.abstractmethod
    def group_digests(self) -> np.ndarray:
        """One stream digest per group (its first unit's: the group's events use their own stream number)."""

    @abc.abstractmethod
    def _fire(self, idx: int) -> None:
        """Unit ``idx`` fails now, unless it is failed already."""

    @abc.abstractmethod
    def restore(self, idx: int) -> None:
        """The unit was replaced: healthy again, with a fresh lifetime from now."""

    def node_failed_by_group(self, node: int) -> bool:
        """True while ``node`` is down because too few of its units of this part work (site units: never)."""
        return False


    # ---- lifetimes ----------------------------------------------------------------------
    def uniform(self, idx: int, purpose: str, k: int) -> float:
        """Uniform number ``k`` of the part's stream ``purpose`` (twin.rng.STREAMS).

        A scattered single draw, made in plain Python (:func:`twin.rng.uniform1`): the same number
        as the array function gives for this part, at a twentieth of the cost of a numpy call."""
        return rng.uniform1(self.engine.streams.key, int(self.digest[idx]), k, rng.STREAMS[purpose])

    def draw_lifetimes(self, idx: np.ndarray, age_h: np.ndarray | None = None) -> np.ndarray:
        """Next lifetime (hours) of each part in ``idx``; advances their draw counters. With ``age_h`` (the
        units' ages, hours), their residual lives given that age (:func:`aged_sample`)."""
        if len(idx) == 1:
            i = int(idx[0])
            k = int(self.draws[i])
            self.draws[i] = k + 1
            out = self._sample(np.array([self.uniform(i, "fail", k)]), idx, None if age_h is None else age_h[idx])
        else:
            u = self.engine.streams.uniforms(self.digest[idx], self.draws[idx], rng.STREAMS["fail"])
            self.draws[idx] += 1
            out = self._sample(u, idx, None if age_h is None else age_h[idx])
        if self.beta:  # the unit's own failures at (1 − β)λ (exponential: the time scales by 1/(1 − β))
            out = out / (1.0 - self.beta)
        return out

    def _sample(self, u: np.ndarray, idx: np.ndarray, age_h: np.ndarray | None = None) -> np.ndarray:
        """Lifetimes (hours) of units ``idx`` at the uniforms ``u`` of their failure distribution's inverse
        CDF (node parts apply their node's frailty); residual lives given ``age_h`` when given."""
        if age_h is not None:
            return aged_sample(self.spec.failure, u, None, age_h)
        return self.spec.failure.sample(u)

    def _sample1(self, u: float, idx: int) -> float:
        """:meth:`_sample` of one unit ``idx`` at the uniform ``u``, as new: ``float(_sample(np.array([u]),
        np.array([idx]))[0])``, bit for bit, in numpy scalars (``Distribution.sample1``)."""
        return self.spec.failure.sample1(u)

    def start(self) -> None:
        """Draw every part's first lifetime at once and schedule those inside the horizon; start the
        groups' common-cause processes and the periodic tests of latent failures."""
        all_idx = np.arange(self.n)
        life = self.draw_lifetimes(all_idx, self.age_h)
        self.life_h[:] = life
        for i in np.flatnonzero(life < self.engine.horizon_h):
            self._schedule(int(i), float(life[i]))
        if self.beta:
            self._ccf_digests = self.group_digests()
            u = self.engine.streams.uniforms(self._ccf_digests, 0, rng.STREAMS["ccf"])
            first = rng.exponential_from_u(u, self._ccf_mean_h)
            for g in np.flatnonzero(first < self.engine.horizon_h):
                self._common.at(float(first[g]), int(g), 0)
        if self.test_h is not None and self.test_h < self.engine.horizon_h:
            self._tests.at(self.test_h)

    # ---- common-cause failures (β-factor) ---------------------------------------------------
    def _common_event(self, g: int, k: int) -> None:
        """Common event ``k`` of group ``g``: every working unit fails now; the next at rate βλ."""
        self.ccf_arrivals += 1
        hit = [i for i in self.members(g) if self.healthy[i]]
        if hit:
            self.ccf_events += 1
            self.ccf_failures += len(hit)
            self._in_ccf = True
            try:
                for i in hit:
                    self._fire(i)
            finally:
                self._in_ccf = False
        u = rng.uniform1(self.engine.streams.key, int(self._ccf_digests[g]), k + 1, rng.STREAMS["ccf"])
        t = self.engine.now + float(rng.exponential_from_u(np.array([u]), self._ccf_mean_h)[0])
        if t < self.engine.horizon_h:
            self._common.at(t, g, k + 1)

    # ---- latent failures ------------------------------------------------------------------------
    def _hide(self, idx: int) -> None:
        """A latent unit failed: its ticket waits (``found_event``) until a test or a demand finds it."""
        if self.test_h is not None:
            self._hidden[idx] = self.engine.env.event()

    def found_event(self, idx: int) -> simpy.Event | None:
        """The event a repair ticket waits for before it proceeds (repair hook): set while the unit's
        failure is latent (not yet found); None when the failure is detected as usual."""
        return self._hidden.get(idx)

    def found(self, idx: int, how: str) -> None:
        """The latent failure of unit ``idx`` is found now, ``how`` = "test" or "demand"."""
        ev = self._hidden.pop(idx, None)
        if ev is None:
            return
        if how == "test":
            self.latent_found_test += 1
        else:
            self.latent_found_demand += 1
        now = self.engine.now
        self.engine.recorder.event(now, f"latent_found_{how}", self.path(idx), self.node_of(idx),
                                   now - self.install_h[idx] - self.life_h[idx])
        ev.succeed()

    def _periodic_test(self) -> None:
        """Every unit is tested: a latent failure is found. With a test duration (an owner that sets
        ``test_duration_h`` and implements ``_out_for_test``) the units are tested one after the other, unit
        i at now + i·duration, a working unit out of service for the duration."""
        eng = self.engine
        if self.test_duration_h:
            for i in range(self.n):
                self._unit_tests.at(eng.now + i * self.test_duration_h, i)
        else:
            for idx in sorted(self._hidden):
                self.found(idx, "test")
        assert self.test_h is not None
        t = eng.now + self.test_h
        if t < eng.horizon_h:
            self._tests.at(t)

    def _test_unit(self, idx: int) -> None:
        if idx in self._hidden:
            self.found(idx, "test")
        elif self.healthy[idx]:
            self.engine.recorder.event(self.engine.now, "test_start", self.path(idx), -1, self.test_duration_h)
            self._in_test.add(idx)
            self._out_for_test(idx, True)
            self._test_ends.at(self.engine.now + self.test_duration_h, idx)

    def _test_end(self, idx: int) -> None:
        self.test_unit_h += self.test_duration_h
        if idx in self._in_test:  # (a unit that failed during its test left the test for its repair)
            self._in_test.discard(idx)
            self._out_for_test(idx, False)

    def _out_for_test(self, idx: int, out: bool) -> None:
        """Working unit ``idx`` goes out of service for its periodic test (``out``) or returns (a kind
        whose owner sets ``test_duration_h`` implements it)."""
        raise NotImplementedError(f"{type(self).__name__}: periodic tests with a duration")

    def _schedule(self, idx: int, t_h: float) -> None:
        """Unit ``idx`` fails at ``t_h`` (its pending failure cancelled; none beyond the horizon)."""
        if t_h >= self.engine.horizon_h:
            self._fires.cancel(idx)
            return
        self._fires.set(idx, t_h)

    def _life_end(self, idx: int) -> None:
        """A scheduled lifetime ends (the unit's armed failure: a failed unit has none): counted
        (``life_failures``, read by ``twin rare``'s likelihood ratio), then the failure itself."""
        if self.healthy[idx]:
            self.life_failures += 1
        self._fire(idx)

    def fail_now(self, idx: int) -> None:
        """Unit ``idx`` fails at the current time through its own failure path (a cold power cycle, a
        hazard event, stress scenarios and tests); nothing happens if it is not working."""
        self._fire(idx)

    def reschedule(self, idx: int, t_h: float) -> None:
        """Move a healthy part's failure to absolute time ``t_h`` (e.g. accelerated ageing)."""
        self.moved += 1
        self._schedule(idx, t_h)

    def reschedule_now(self, idx: int) -> None:
        """Move a healthy part's failure to now (an injected failure)."""
        self.reschedule(idx, self.engine.now)

    def end_ages_h(self) -> np.ndarray:
        """Age of each unit at the end of the run, hours (call after the run): a unit installed during the
        run is as old as the time since its installation, an original one adds its age at the start; a
        unit failed at the end is 0 (it is replaced before it serves again)."""
        age = self.engine.horizon_h - self.install_h
        if self.age_h is not None:
            age = age + np.where(self.install_h == 0.0, self.age_h, 0.0)
        return np.where(self.healthy, age, 0.0)

    def _renew(self, idx: int) -> None:
        now = self.engine.now
        self.install_h[idx] = now
        # = float(self.draw_lifetimes(np.array([idx]))[0]): the same draw, its counter advanced, in scalars
        k = int(self.draws[idx])
        self.draws[idx] = k + 1
        life = self._sample1(self.uniform(idx, "fail", k), idx)
        if self.beta:  # (draw_lifetimes' division, on the scalar)
            life = float(life / (1.0 - self.beta))
        self.life_h[idx] = life
        self._schedule(idx, now + life)



class PartPopulation(Population):
    """All instances of part type ``name`` (``count`` per node)."""

    def __init__(self, engine: Engine, cluster: Cluster, name: str, spec: Part,
                 pool_failures: Sequence[tuple[int, int, Any]] | None = None) -> None:
        self.cluster = cluster
        self.per_node = spec.count
        self.pool_failures = None if pool_failures is None else [
            (a * spec.count, b * spec.count, dist) for a, b, dist in pool_failures]
        """Node pools (``cluster.pools``) whose failure laws differ: (first unit, end unit, distribution) of
        each pool; None: every unit draws from ``spec.failure``."""
        priority = spec.dispatch_priority if spec.dispatch_priority is not None else DEFAULT_PRIORITY[spec.effect]
        super().__init__(engine, name, spec, cluster.n_nodes * spec.count,
                         _node_part_digests(cluster.racks, cluster.nodes_per_rack, name, spec.count), priority)
        self.fail_below = spec.fail_below
        self.required = int(spec.required or spec.count)
        self.healthy_per_node = np.full(cluster.n_nodes, spec.count, dtype=np.int32)
        self.frailty: np.ndarray | None = None
        """Per node, the multiplier Z of this part's failure rate (proportional hazards: survival S(t)^Z),
        set by the health component before the first draws (twin.model.health); None: 1 for every node."""

    def path(self, idx: int) -> str:
        node, slot = divmod(idx, self.per_node)
        return f"{self.cluster.node_path(node)}.{self.name}{slot}"

    def node_of(self, idx: int) -> int:
        return idx // self.per_node

    @property
    def n_groups(self) -> int:
        """Common-cause groups: the units of one node."""
        return self.cluster.n_nodes

    def members(self, g: int) -> Sequence[int]:
        """Units of common-cause group ``g`` (node ``g``)."""
        return range(g * self.per_node, (g + 1) * self.per_node)

    def group_digests(self) -> np.ndarray:
        """One stream digest per group (its first unit's: the group's events use their own stream number)."""
        return self.digest[:: self.per_node]

    def _sample(self, u: np.ndarray, idx: np.ndarray, age_h: np.ndarray | None = None) -> np.ndarray:
        """With a frailty Z of the part's node, the uniform u of the inverse CDF becomes 1 − (1 − u)^(1/Z):
        the same draw under a hazard Z times the part's (an exponential mean divided by Z); with ``age_h``,
        the residual lives given those ages (:func:`aged_sample`)."""
        if self.pool_failures is not None:
            return self._pooled_sample(u, idx, age_h)
        fr = self.frailty
        if age_h is not None:
            return aged_sample(self.spec.failure, u, None if fr is None else fr[idx // self.per_node], age_h)
        if fr is None:
            return self.spec.failure.sample(u)
        return frail_sample(self.spec.failure, u, fr[idx // self.per_node])

    def _sample1(self, u: float, idx: int) -> float:
        """:meth:`_sample` of one unit as new, in numpy scalars (the same operations: bit for bit)."""
        if self.pool_failures is not None:
            return float(self._pooled_sample(np.array([u]), np.array([idx]), None)[0])
        fr = self.frailty
        if fr is None:
            return self.spec.failure.sample1(u)
        return frail_sample1(self.spec.failure, u, fr[idx // self.per_node])

    def _pooled_sample(self, u: np.ndarray, idx: np.ndarray, age_h: np.ndarray | None) -> np.ndarray:
        """:meth:`_sample` in a hall of node pools: each unit from its node's pool's failure law."""
        assert self.pool_failures is not None
        fr = self.frailty
        out = np.empty(len(u))
        for a, b, dist in self.pool_failures:
            m = (idx >= a) & (idx < b)
            if not m.any():
                continue
            um, im = u[m], idx[m]
            if age_h is not None:
                out[m] = aged_sample(dist, um, None if fr is None else fr[im // self.per_node], age_h[m])
            elif fr is None:
                out[m] = dist.sample(um)
            else:
                out[m] = frail_sample(dist, um, fr[im // self.per_node])
        return out

    def redraw(self, idx: int) -> None:
        """A healthy part's life drawn afresh from now (after a deep repair of its node): the pending
        failure is cancelled and the part counts as installed now."""
        assert self.healthy[idx]
        self.moved += 1
        self._renew(idx)

    def shorten(self, idx: int, life_h: float) -> None:
        """The part just installed fails after ``life_h`` if that comes before its drawn life (an
        early failure of a defective replacement: infant mortality, twin.model.health)."""
        if life_h < self.life_h[idx]:
            self.life_h[idx] = life_h
            self.reschedule(idx, self.install_h[idx] + life_h)

    def _fire(self, idx: int) -> None:
        if not self.healthy[idx]:
            return
        self.failures += 1
        node = self.node_of(idx)
        now = self.engine.now
        self.engine.recorder.event(now, "fail", self.path(idx), node, now - self.install_h[idx])
        if self.spec.effect == "transient":
            self.engine.bus.publish(Topic.TRANSIENT, node, self.cause)
            self._renew(idx)
            return
        self.healthy[idx] = False
        self._fires.cancel(idx)
        self._hide(idx)
        before = int(self.healthy_per_node[node])
        self.healthy_per_node[node] = before - 1
        self._apply_effect(node, before, before - 1)
        self.engine.bus.publish(PART_FAILED, self, idx)  # the models first, the repair shop (subscribed last)

    def restore(self, idx: int) -> None:
        """The part was replaced: healthy again, with a fresh lifetime from now."""
        assert not self.healthy[idx]
        self.healthy[idx] = True
        self.repairs[idx] += 1
        node = self.node_of(idx)
        before = int(self.healthy_per_node[node])
        self.healthy_per_node[node] = before + 1
        self._renew(idx)
        self._apply_effect(node, before, before + 1)
        self.engine.bus.publish(PART_RESTORED, self, idx)

    # ---- effect on the node ---------------------------------------------------------------
    def _apply_effect(self, node: int, before: int, after: int) -> None:
        eff = self.spec.effect
        if eff == "node_down":
            # every failed part of the type is one down reason
            if after < before:
                self.cluster.add_down(node, self.cause)
            else:
                self.cluster.remove_down(node, self.cause)
        elif eff == "link_down":
            if after < before:
                self.cluster.add_cut(node, self.cause)
            else:
                self.cluster.remove_cut(node, self.cause)
        elif eff == "redundant":
            was_failed = before < self.fail_below
            now_failed = after < self.fail_below
            if now_failed and not was_failed:
                # a common event that took the group down is its own cause (reported apart)
                cause = self._ccf_cause if self._in_ccf else self.cause
                self._down_cause[node] = cause
                self.cluster.add_down(node, cause)
            elif was_failed and not now_failed:
                self.cluster.remove_down(node, self._down_cause.pop(node, self.cause))
            if self._hidden and after < before and after < int(self.required):
                # a demand: the group no longer meets `required`, every hidden failure in it is found
                for i in self.members(node):
                    self.found(i, "demand")
            self.engine.bus.publish(Topic.GROUP, node, self.name, after)

    def node_failed_by_group(self, node: int) -> bool:
        return bool(self.healthy_per_node[node] < self.fail_below)


PART_FAILED: Final[Channel[PartPopulation, int]] = Channel(
    "part_failed", "(population, idx) unit idx of a node part failed (after its effect on the node); the repair "
                   "shop, subscribed last, opens its ticket")
PART_RESTORED: Final[Channel[PartPopulation, int]] = Channel(
    "part_restored", "(population, idx) unit idx of a node part works again (replaced or repaired)")
UNIT_FAILED: Final[Channel[FacilityParts, int]] = Channel(
    "unit_failed", "(population, idx) site unit idx failed (after its owner heard of it on the population's "
                   "changed channel); the repair shop opens its ticket")
PART_REPLACED: Final[Channel[Population, int]] = Channel(
    "part_replaced", "(population, idx) a technician's replacement restored unit idx (repair ladder rung 2 or 3; "
                     "the repair shop): the node-health model's infant mortality")


def contiguous_groups(n: int, size: int) -> list[range]:
    """Common-cause groups of ``size`` consecutive units (a zone's CRAH units, a loop's CDUs)."""
    return [range(s, min(s + size, n)) for s in range(0, n, size)]


def frail_sample(dist: Any, u: np.ndarray, z: np.ndarray) -> np.ndarray:
    """Lifetimes at uniforms ``u`` under a hazard ``z`` times the distribution's (proportional hazards:
    survival S(t)^z, i.e. the inverse CDF at 1 − (1 − u)^(1/z)). Exact in closed form for the
    exponential (mean / z) and the Weibull (scale · z^(−1/shape)); otherwise the uniform is transformed
    (−expm1(log1p(−u)/z), kept below 1). A fixed time is unchanged (no hazard to scale)."""
    out: np.ndarray
    if isinstance(dist, Exponential):
        out = -dist.mean_h * np.log1p(-u) / z
    elif isinstance(dist, Weibull):
        out = dist.scale_h * np.power(z, -1.0 / dist.shape) * np.power(-np.log1p(-u), 1.0 / dist.shape)
    elif isinstance(dist, Fixed):
        out = dist.sample(u)
    else:
        out = dist.sample(np.minimum(-np.expm1(np.log1p(-u) / z), ONE_BELOW))
    return out


def frail_sample1(dist: Any, u: float, z: np.float64) -> float:
    """:func:`frail_sample` of one uniform ``u`` under the hazard multiplier ``z`` (a numpy scalar): the same
    ufuncs and operations on numpy scalars (the same inner loops as on arrays), so the same bits, ~5 × cheaper."""
    if isinstance(dist, Exponential):
        return float(-dist.mean_h * np.log1p(np.float64(-u)) / z)
    if isinstance(dist, Weibull):
        return float(dist.scale_h * np.power(z, -1.0 / dist.shape) * np.power(-np.log1p(np.float64(-u)),
                                                                              1.0 / dist.shape))
    if isinstance(dist, Fixed):
        return float(dist.sample1(u))
    return float(dist.sample1(float(np.minimum(-np.expm1(np.log1p(np.float64(-u)) / z), ONE_BELOW))))


def aged_sample(dist: Any, u: np.ndarray, z: np.ndarray | None, age_h: np.ndarray) -> np.ndarray:
    """Residual lifetimes (hours) at uniforms ``u`` of units aged ``age_h`` hours, under a hazard ``z`` times
    the distribution's (None: 1): R with P(R > r) = S_z(a + r) / S_z(a), S_z = S^z, the inverse of which is
    r = F⁻¹(F(a) + (1 − F(a)) u_z) − a with u_z = 1 − (1 − u)^(1/z) (:func:`frail_sample`'s uniform).

    * exponential: memoryless, the residual life is a new life (the same draw as at age 0);
    * Weibull (shape k, scale η): closed form, cumulative hazards add: ((a + r)/η)^k = (a/η)^k + x/z with
      x = −ln(1 − u), so r = a · expm1(ln(1 + x / (z (a/η)^k)) / k) (η (x/z)^(1/k) at a = 0);
    * fixed: max(value − a, 0) (a unit past its fixed life fails at once);
    * others (lognormal, empirical...): the inverse CDF above, through the distribution's ``cdf``.
    """
    zz = np.ones_like(u) if z is None else np.asarray(z, dtype=np.float64)
    a = np.broadcast_to(np.asarray(age_h, dtype=np.float64), u.shape)
    if isinstance(dist, Exponential) or not np.any(a > 0):
        return dist.sample(u) if z is None else frail_sample(dist, u, zz)
    out: np.ndarray
    if isinstance(dist, Weibull):
        x = -np.log1p(-u) / zz
        k, eta = dist.shape, dist.scale_h
        with np.errstate(divide="ignore", invalid="ignore"):
            ha = np.power(a / eta, k)
            older = a * np.expm1(np.log1p(x / ha) / k)
        out = np.where(ha > 0, older, eta * np.power(x, 1.0 / k))  # (a/η)^k underflows: as new
    elif isinstance(dist, Fixed):
        out = np.maximum(dist.sample(u) - a, 0.0)
    else:
        uz = u if z is None else -np.expm1(np.log1p(-u) / zz)
        fa = np.array([dist.cdf(float(v)) for v in a])
        out = np.maximum(dist.sample(np.minimum(fa + (1.0 - fa) * uz, ONE_BELOW)) - a, 0.0)
    return out


class FacilityParts(Population):
    """Site-level units (CRAH, CDU, pump, PDU, UPS, switch...) that fail and are repaired through
    the same engine, streams, crews and spares as node parts.

    The owning model subscribes to ``changed`` (``(idx, healthy)``: a unit failed, was restored, or went out
    for its test and came back) and reacts (recomputes capacity, cuts nodes...); a failure is published as
    ``UNIT_FAILED`` (the repair shop's). Units are not inside a node: repairs never drain a node (``node_of``
    is -1).
    """

    def __init__(self, engine: Engine, name: str, paths: list[str], spec: Part,
                 digests: np.ndarray | None = None, groups: Sequence[Sequence[int]] | None = None) -> None:
        super().__init__(engine, name, spec, len(paths),
                         rng.path_digests(paths) if digests is None else digests,  # digests: of paths, precomputed
                         spec.dispatch_priority if spec.dispatch_priority is not None else 0)
        self._paths = paths
        self.changed: Channel[int, bool] = Channel(
            f"{name}.changed", "(idx, healthy) a unit of this population failed or was restored, or went out for its "
                               "test (healthy False) and came back (the population)")
        """The population's own topic: its owner subscribes (``engine.bus.subscribe(pop.changed, fn)``)."""
        self._changed_subs = engine.bus.handlers(self.changed)
        self.scope: Callable[[int], Iterable[int]] | None = None
        """Nodes whose service unit ``idx``'s failure can take away (set by the owning model; none: no
        node). Dispatch by impact counts the GPUs of those out of service, or cut, for one of ``causes``."""
        self.causes: frozenset[DownCause] = frozenset({self.cause})
        self._groups: list[Sequence[int]] = [range(self.n)] if groups is None else list(groups)
        """Common-cause groups (default: every unit of the population in one group)."""
        self._ccf_since: dict[int, float] = {}  # units failed by a common event: since when, h
        self._ccf_unit_h = 0.0
        self._backs = engine.calls(self._back)  # a knocked-out unit's common repair ends

    def ccf_unit_hours(self, horizon_h: float) -> float:
        """Unit-hours the population's units spent failed by common-cause events, from the event to their
        repair (to ``horizon_h`` for those still failed): site units take no node down themselves, so their
        common-cause downtime is reported in unit-hours."""
        return self._ccf_unit_h + sum(horizon_h - t for t in self._ccf_since.values())

    def path(self, idx: int) -> str:
        return self._paths[idx]

    @property
    def n_groups(self) -> int:
        return len(self._groups)

    def members(self, g: int) -> Sequence[int]:
        return self._groups[g]

    def group_digests(self) -> np.ndarray:
        return np.array([self.digest[self._groups[g][0]] for g in range(len(self._groups))], dtype=np.uint64)

    def node_of(self, idx: int) -> int:
        return -1

    def _fire(self, idx: int) -> None:
        if not self.healthy[idx]:
            return
        self.failures += 1
        now = self.engine.now
        self.engine.recorder.event(now, "fail", self.path(idx), -1, now - self.install_h[idx])
        if self.spec.effect == "transient":
            self._on_change(idx, False)
            self._renew(idx)
            return
        self.healthy[idx] = False
        self._fires.cancel(idx)
        if self._in_ccf:
            self._ccf_since[idx] = now
        self._hide(idx)
        if idx in self._in_test:  # out for its test already: the owner has it out
            self._in_test.discard(idx)
        else:
            self._on_change(idx, False)
        self.engine.bus.publish(UNIT_FAILED, self, idx)

    def restore(self, idx: int) -> None:
        assert not self.healthy[idx]
        t0 = self._ccf_since.pop(idx, None)
        if t0 is not None:
            self._ccf_unit_h += self.engine.now - t0
        self.healthy[idx] = True
        self.repairs[idx] += 1
        self._renew(idx)
        self._on_change(idx, True)

    def _on_change(self, idx: int, healthy: bool) -> None:
        for fn in self._changed_subs:  # = bus.publish(self.changed, idx, healthy): the population owns the topic
            fn(idx, healthy)

    def _out_for_test(self, idx: int, out: bool) -> None:
        """Working unit ``idx`` goes out of service for its periodic test (``out``) or returns."""
        self._on_change(idx, not out)

    def knock_out(self, idx: int, repair_h: float) -> bool:
        """Unit ``idx`` fails now by a common event whose one repair brings it back ``repair_h``
        later, with no crew ticket of its own (a hazard zone's event, a common group's repair ``common``).
        False when the unit is not working (it stays as it is, its own repair under way)."""
        if not self.healthy[idx]:
            return False
        self.failures += 1
        now = self.engine.now
        self.engine.recorder.event(now, "fail", self.path(idx), -1, now - self.install_h[idx])
        self.healthy[idx] = False
        self._fires.cancel(idx)
        if idx in self._in_test:
            self._in_test.discard(idx)
        else:
            self._on_change(idx, False)
        self._backs.at(now + repair_h, idx)
        return True

    def _back(self, idx: int) -> None:
        self.engine.recorder.event(self.engine.now, "common_repair_end", self.path(idx), -1, 0.0)
        self.restore(idx)
