"""Build the component tree from a scenario, run one replication, return its record.

Arrows go one way: cli → experiment → sim → model → physics; observe is fed by the model.
"""

from __future__ import annotations

import gc
import re
import time
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, TypeVar, cast

import numpy as np
import pandas as pd

from twin import interrupt
from twin.model.cluster import Cluster
from twin.model.component import (
    BuildContext,
    Component,
    ContractError,
    ResultsSoFar,
    Service,
)
from twin.model.costs import Costs
from twin.model.engine import Engine
from twin.model.grid import Grid
from twin.model.hazards import Hazards
from twin.model.oversubscription import Oversubscription
from twin.model.recovery import Recovery
from twin.model.fans import Fans
from twin.model.health import NodeHealth
from twin.model.generations import Generations
from twin.model.installation import Installation
from twin.model.network import Network
from twin.model.parts import FacilityParts, PartPopulation
from twin.model.it_power import ITPower
from twin.model.power import PowerChain
from twin.model.racks import RackParts
from twin.model.storage import Storage
from twin.model.repair import TICKET_COLUMNS, RepairShop, bind_scopes, repair_metrics
from twin.model.cooling.chillers import Plant
from twin.model.cooling.component import Thermal
from twin.model.workload import Workload
from twin.observe.recorder import Recorder, time_weighted_mean
from twin.limits import event_bound, events_exceeded
from twin.scenario.schema import Scenario

T = TypeVar("T")


COMPONENTS: tuple[type[Component], ...] = (
    RackParts, Network, PowerChain, Recovery, Oversubscription, Grid, Thermal, Fans, Plant, Storage, Hazards,
    Generations, Workload, NodeHealth, Installation,
    Costs,  # last of the wanted ones: prices what the others recorded (results run in build order)
    ITPower,  # on demand: built just before the first component that requires it
)
"""The component registry. A component is built when its section is present (``wanted``); its
providers are built before it (see :func:`build_order`)."""


def build_order(registry: Sequence[type[Component]], sc: Scenario) -> list[type[Component]]:
    """The components of ``sc`` in build order: registry order, each preceded by the providers of the
    services it requires (and of those it uses, when built). Raises :class:`ContractError` when a
    required service has no provider, a service has two, or the requirements form a cycle."""
    chosen = [c for c in registry if c.wanted(sc)]
    providers: dict[Service[Any], list[type[Component]]] = {}
    for c in registry:
        if c in chosen or c.on_demand:
            for key in c.provides:
                providers.setdefault(key, []).append(c)
    for key, cs in providers.items():
        if len(cs) > 1:
            raise ContractError(f"service {key.name!r} has {len(cs)} providers "
                                f"({', '.join(repr(c.name) for c in cs)}): exactly one component may provide it")
    order: list[type[Component]] = []
    path: list[type[Component]] = []

    def visit(c: type[Component]) -> None:
        if c in order:
            return
        if c in path:
            cycle = " -> ".join(repr(x.name) for x in path[path.index(c):] + [c])
            raise ContractError(f"components require each other's services in a cycle: {cycle}")
        path.append(c)
        for key in c.requires:
            if key not in providers:
                idle = [x.name for x in registry if key in x.provides]
                known = (f" (provided by {', '.join(repr(n) for n in idle)}, not built for this scenario)"
                         if idle else "")
                raise ContractError(f"component {c.name!r} requires service {key.name!r}, which no component "
                                    f"provides{known}")
            visit(providers[key][0])
        for key in c.uses:
            ps = [p for p in providers.get(key, []) if p in chosen]
            if ps:
                visit(ps[0])
        path.pop()
        order.append(c)

    for c in chosen:
        visit(c)
    return order


GC_EVENTS = 200_000
"""Collect garbage after replications with more events than this (performance.md)."""

PART_COLUMNS = ("part", "effect", "installed", "failures", "node_down_hours", "observed_mtbf_h", "spare_demands",
                "stockouts", "remediated", "replaced", "escalated", "rma_sent")
"""Columns of the ``parts`` table: one row per part type (node, rack and facility parts, fabric units)."""


@dataclass
class ReplicationResult:
    """What one replication produced: flat scalar metrics and tidy tables."""

    scenario: str
    scenario_hash: str
    seed: int
    replication: int
    metrics: dict[str, float]
    tables: MutableMapping[str, pd.DataFrame]
    """By name; a :class:`LazyTables` (each built when read) from ``Model.result(tables=False)``."""
    timings_s: dict[str, float] = field(default_factory=dict)
    events_processed: int = 0
    part_ages_h: dict[str, tuple[np.ndarray, Any]] | None = None
    """With ``run_replication(..., end_ages=True)``: each part population's units' ages at the horizon, hours
    (:meth:`twin.model.parts.Population.end_ages_h`), and its failure distribution, by name (node, rack and
    site populations), which a timeline carries into its next stage."""


class LazyTables(MutableMapping[str, pd.DataFrame]):
    """A replication's tables by name, each built the first time it is read: a Monte-Carlo worker
    keeps only metrics, so the tables nobody reads (events, intervals, tickets: a pandas frame costs
    ~0.1 ms even empty) are never built. A builder runs at most once; keys keep their insertion order."""

    def __init__(self, builders: Mapping[str, Callable[[], pd.DataFrame]]) -> None:
        self._items: dict[str, pd.DataFrame | Callable[[], pd.DataFrame]] = dict(builders)

    def __getitem__(self, key: str) -> pd.DataFrame:
        v = self._items[key]
        if callable(v):
            v = self._items[key] = v()
        return v

    def __setitem__(self, key: str, value: pd.DataFrame) -> None:
        self._items[key] = value

    def __delitem__(self, key: str) -> None:
        del self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def built(self) -> dict[str, pd.DataFrame]:
        """Every table, built now, in insertion order."""
        return {k: self[k] for k in list(self._items)}


class Model:
    """One replication's component tree."""

    def __init__(self, sc: Scenario, replication: int = 0, scenario_hash: str = "",
                 components: Sequence[type[Component]] | None = None, source: str = "",
                 ages_h: Mapping[str, tuple[np.ndarray, Any]] | None = None) -> None:
        t0 = time.perf_counter()
        # the registry (default COMPONENTS); the services are checked here, before anything is built
        order = build_order(COMPONENTS if components is None else components, sc)
        self.sc = sc
        self.replication = replication
        self.scenario_hash = scenario_hash
        self.recorder = Recorder()
        self.engine = Engine(sc.seed, replication, sc.horizon_h, self.recorder)
        node = sc.cluster.node
        self.cluster = Cluster(self.engine, sc.cluster.racks, sc.cluster.nodes_per_rack, node.gpus)
        self.shop = RepairShop(self.engine, self.cluster, sc.maintenance)
        pools = sc.cluster.node_pools() if sc.cluster.pools else None  # node pools: each part's law per pool
        self.parts: dict[str, PartPopulation] = {
            name: PartPopulation(self.engine, self.cluster, name, spec, None if pools is None or all(
                p.parts[name].failure == spec.failure for _, _, p in pools) else [
                (a, b, p.parts[name].failure) for a, b, p in pools])
            for name, spec in node.parts.items()
        }
        self.facility: dict[str, FacilityParts] = {}
        """Site-level part populations registered by the components (``facility_parts``), by name."""
        self.down_cause_part: dict[str, str] = {}
        """Causes of node-down intervals that a component attributes to a part (``down_causes``), by
        cause (a part's own name and ``repair:<part>``, the drain for its repair, are its own without
        being listed here)."""
        self.services: dict[Service[Any], object] = {}
        """The provider of each service, by key (filled in build order)."""
        self.components: list[Component] = []
        self.by_section: dict[str, Any] = {}
        """Each built component by name."""
        facility = MappingProxyType(self.facility)
        for cls in order:
            comp = cls.build(BuildContext(sc, self.engine, self.cluster, self.parts, self.shop, self.recorder,
                                          facility, cls, self.services))
            self._register(comp)
            self.components.append(comp)
            self.by_section[cls.name] = comp
        self.shop.attach()  # after the components: the shop is the last subscriber to a failure
        bind_scopes(sc, self.cluster, self.facility)  # the cooling units' nodes, for dispatch by impact
        for name, (age, failure) in (ages_h or {}).items():  # units not new at the start (a timeline's parts)
            aged = self.parts.get(name) or self.facility.get(name)
            if aged is not None and len(age) == aged.n and aged.spec.failure == failure:  # the same units
                aged.age_h = np.asarray(age, dtype=np.float64) if np.any(age > 0) else None
        for pop in self.parts.values():
            pop.start()
        for fpop in self.facility.values():
            fpop.start()
        if sc.maintenance.planned is not None:
            from twin.model.maintenance import PlannedMaintenance

            self.planned = PlannedMaintenance(self.engine, self.cluster, sc.maintenance.planned)
            self.planned.start()
        for comp in self.components:
            comp.start()
        self.build_s = time.perf_counter() - t0
        self.events = 0
        self.max_events = event_bound(sc)
        """Events after which the run stops with exit 2 (:func:`twin.limits.event_bound`)."""
        self.source = source or f"scenario {sc.name}"
        """The scenario's file, for the message of a stopped run."""

    def stop_at_bound(self, events: int) -> None:
        """Raise the exit-2 error of a run stopped at :attr:`max_events` events, naming the cause."""
        failures = {name: int(pop.failures) for name, pop in list(self.parts.items()) + list(self.facility.items())}
        raise events_exceeded(self.sc, self.source, events, self.engine.now, failures)

    def service(self, key: Service[T]) -> T | None:
        """The provider of service ``key`` in this replication, or None when no component provides it."""
        return cast("T | None", self.services.get(key))

    def _register(self, comp: Component) -> None:
        """Take what a built component declares: its services, site-level parts and down causes."""
        for key in comp.provides:
            self.services[key] = comp.service(key)
        for name, pop in comp.facility_parts().items():
            if name in self.facility or name in self.parts:
                raise ContractError(f"component {comp.name!r} registers part {name!r}, which is already registered")
            self.facility[name] = pop
        for cause, part in comp.down_causes().items():
            if cause in self.down_cause_part:
                raise ContractError(f"component {comp.name!r} attributes down cause {cause!r}, already attributed")
            self.down_cause_part[cause] = part

    def run(self, progress: Callable[[float], None] | None = None) -> None:
        """Run to the horizon. ``progress(t_h)`` is called at 1 % steps of simulated time (UI only)."""
        env = self.engine.env
        H = self.sc.horizon_h
        t0 = time.perf_counter()
        # count processed events through SimPy's public step() loop, up to the hard bound; an interrupt
        # recorded by the command line's signal handler (twin.interrupt) is raised here, between events,
        # never lost
        n = 0
        bound = self.max_events
        step = env.step
        check = interrupt.check
        with interrupt.loop() as pending:
            if progress is None:
                while env.peek() < H:
                    step()
                    n += 1
                    if pending:
                        check()
                    if n >= bound:
                        self.stop_at_bound(n)
            else:
                marks = [H * i / 100 for i in range(1, 101)]
                mi = 0
                while env.peek() < H:
                    t = env.peek()
                    while mi < len(marks) and t >= marks[mi]:
                        progress(marks[mi])
                        mi += 1
                    step()
                    n += 1
                    if pending:
                        check()
                    if n >= bound:
                        self.stop_at_bound(n)
                progress(H)
        env.run(until=H)
        self.loop_s = time.perf_counter() - t0
        self.events = n
        self.cluster.finish()
        self.shop.finish()
        for comp in self.components:
            comp.finish()

    # ---- results ------------------------------------------------------------------------
    def lifetimes(self) -> pd.DataFrame:
        """Lives of every node part and rack part: ``part, component_id, start_h, end_h, failed``
        (the ``twin fit`` lifetimes format). A failure closes a life at its time; a part healthy at
        the horizon is censored there; a part still in repair at the horizon has no open life."""
        H = self.sc.horizon_h
        ev = self.recorder.events_table()
        fails = ev[ev["kind"] == "fail"]
        racked = {k: self.facility[k] for k in self.sc.cluster.rack_parts}
        pops: dict[str, PartPopulation | FacilityParts] = {**self.parts, **racked}

        def alt(names: Any) -> str:
            return "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True)) or "(?!)"

        # node parts: hall.rackNN.nodeNNN.<part><k>; rack parts: hall.rackNN.<part><k>
        paths = fails["path"].astype(str)
        parts_col = paths.str.extract(rf"\.node\d+\.({alt(self.parts)})\d+$")[0]
        parts_col = parts_col.fillna(paths.str.extract(rf"\.rack\d+\.({alt(racked)})\d+$")[0])
        keep = parts_col.notna()
        fails = fails[keep.to_numpy()]
        frames = [pd.DataFrame({
            "part": parts_col[keep].to_numpy(),
            "component_id": fails["path"].astype(str).to_numpy(),
            "start_h": (fails["time_h"] - fails["value"]).to_numpy(),
            "end_h": fails["time_h"].to_numpy(),
            "failed": np.ones(len(fails), dtype=np.int8),
        })]
        for name, pop in pops.items():
            ok = np.flatnonzero(pop.healthy)
            frames.append(pd.DataFrame({
                "part": name,
                "component_id": [pop.path(int(i)) for i in ok],
                "start_h": pop.install_h[ok],
                "end_h": H,
                "failed": np.zeros(len(ok), dtype=np.int8),
            }))
        out = pd.concat(frames, ignore_index=True)
        return out[out["end_h"] > out["start_h"]].sort_values(["part", "component_id", "start_h"],
                                                            kind="stable").reset_index(drop=True)

    def result(self, tables: bool = True) -> ReplicationResult:
        """Summarise the replication: its metrics and tables. With ``tables=False`` (a Monte-Carlo
        worker, which stores only metrics) the tables are built only when read (:class:`LazyTables`),
        and the core metrics are taken from the records, not from tables (the repair metrics by
        :func:`twin.model.repair.repair_metrics`, in both cases): the same metrics, bit for bit, at a
        fraction of a millisecond for a small system."""
        t0 = time.perf_counter()
        sc = self.sc
        H = sc.horizon_h
        rec = self.recorder
        n_nodes = self.cluster.n_nodes
        gpn = self.cluster.gpus_per_node
        out = LazyTables({
            "events": rec.events_table,
            "node_intervals": rec.intervals_table,
            "tickets": lambda: pd.DataFrame(rec.tickets, columns=TICKET_COLUMNS),
            "parts": lambda: pd.DataFrame(part_rows, columns=PART_COLUMNS),  # columns even without part types
            "capacity": lambda: pd.DataFrame({"time_h": ts, "nodes_up": vs.astype(np.int64)}),
        })
        if rec.has_intervals() and not tables:  # the same sums as the table's, without it
            recs = rec.interval_records()
            down_iv = [(s, e, c) for _, s, e, st, c in recs if st == "down"]
            cut_iv = [(s, e) for _, s, e, st, _ in recs if st == "cut"]
            down_d = np.array([e for _, e, _ in down_iv], dtype=np.float64) - np.array([s for s, _, _ in down_iv],
                                                                                       dtype=np.float64)
            down_h = float(np.sum(down_d))  # a float column's sum: numpy's pairwise sum
            cut_h = float(np.sum(np.array([e for _, e in cut_iv], dtype=np.float64)
                                 - np.array([s for s, _ in cut_iv], dtype=np.float64)))
            # by cause: pandas' grouped sum (its own summation), on the same values in the same order
            down_by_cause = (dict(pd.Series(down_d).groupby(np.array([c for _, _, c in down_iv], dtype=object))
                                  .sum().items()) if down_iv else {})
        elif rec.has_intervals():
            intervals = out["node_intervals"]
            down = intervals[intervals["state"] == "down"]
            down_h = float((down["end_h"] - down["start_h"]).sum())
            cut = intervals[intervals["state"] == "cut"]
            cut_h = float((cut["end_h"] - cut["start_h"]).sum())
            down_by_cause = dict((down["end_h"] - down["start_h"]).groupby(down["cause"].astype(str)).sum().items())
        else:  # what the tables give when empty: sums 0.0, no cause
            down_h = cut_h = 0.0
            down_by_cause = {}
        metrics: dict[str, float] = {
            "horizon_h": H,
            "nodes": float(n_nodes),
            "gpus_installed": float(n_nodes * gpn),
            "node_availability": 1.0 - down_h / (n_nodes * H),
        }
        ts, vs = rec.level_series("nodes_up")
        metrics["fleet_capacity_availability"] = time_weighted_mean(ts, vs, H) / n_nodes
        metrics["node_down_hours"] = down_h
        metrics["node_cut_hours"] = cut_h
        repair_m, rungs_by_part = repair_metrics(self.shop, rec.tickets, H, gpn, list(self.parts) + list(self.facility))
        part_rows: list[dict[str, Any]] = []
        total_fail = 0
        # node-hours down by the part that took the node down (an interval's cause is the first reason
        # of a down period, burn-in included): its failure, the drain for its repair, and what a model
        # attributes to it (a PSU shortfall, a failed PDU)
        owner = dict(self.down_cause_part)
        for name in list(self.parts) + list(self.facility):
            owner[name] = owner[f"repair:{name}"] = owner[f"ccf:{name}"] = name
        down_by_part: dict[str, float] = {}
        for cause, h in down_by_cause.items():
            part = owner.get(str(cause))
            if part is not None:
                down_by_part[part] = down_by_part.get(part, 0.0) + float(h)
        for name, pop in list(self.parts.items()) + list(self.facility.items()):
            dt = down_by_part.get(name, 0.0)
            part_h = pop.n * H
            inv = self.shop.inventories.get(name)
            part_rows.append({
                "part": name,
                "effect": pop.spec.effect,
                "installed": pop.n,
                "failures": pop.failures,
                "node_down_hours": dt,
                "observed_mtbf_h": part_h / pop.failures if pop.failures else float("inf"),
                "spare_demands": inv.demands if inv else 0,
                "stockouts": inv.stockouts if inv else 0,
                **rungs_by_part[name],
                "rma_sent": inv.rma_sent if inv else 0,
            })
            total_fail += pop.failures
            metrics[f"failures.{name}"] = float(pop.failures)
            metrics[f"node_down_hours.{name}"] = dt
            if pop.beta:  # common-cause failures (only where a β-factor is set)
                metrics[f"ccf_events.{name}"] = float(pop.ccf_events)
                metrics[f"ccf_failures.{name}"] = float(pop.ccf_failures)
                metrics[f"node_down_hours_ccf.{name}"] = float(down_by_cause.get(f"ccf:{name}", 0.0))
                if isinstance(pop, FacilityParts):
                    metrics[f"ccf_unit_hours.{name}"] = pop.ccf_unit_hours(H)
            if pop.test_h is not None:  # latent failures: found at a periodic test or by a demand
                metrics[f"latent_found_test.{name}"] = float(pop.latent_found_test)
                metrics[f"latent_found_demand.{name}"] = float(pop.latent_found_demand)
            if inv is not None:
                metrics[f"stockouts.{name}"] = float(inv.stockouts)
                metrics[f"stockout_share.{name}"] = inv.stockouts / inv.demands if inv.demands else float("nan")
        metrics["failures"] = float(total_fail)
        metrics["stockouts"] = float(sum(i.stockouts for i in self.shop.inventories.values()))
        metrics.update(repair_m)
        so_far = ResultsSoFar(MappingProxyType(metrics), MappingProxyType(out))
        for comp in self.components:
            # in build order: each component sees (read-only) the results of the core and of those before it
            m, t = comp.results(so_far)
            clash = sorted(metrics.keys() & m.keys()) + sorted(out.keys() & t.keys())
            if clash:
                raise ContractError(f"component {comp.name!r} reports {', '.join(clash[:5])}, already reported")
            metrics.update(m)
            out.update(t)
        result_tables: MutableMapping[str, pd.DataFrame] = out.built() if tables else out
        self.output_s = time.perf_counter() - t0
        return ReplicationResult(
            scenario=sc.name, scenario_hash=self.scenario_hash, seed=sc.seed, replication=self.replication,
            metrics=metrics, tables=result_tables,
            timings_s={"build": self.build_s, "loop": self.loop_s, "output": self.output_s},
            events_processed=self.events,
        )


def run_replication(sc: Scenario, replication: int = 0, scenario_hash: str = "",
                    progress: Callable[[float], None] | None = None,
                    lifetimes: bool = False, tables: bool = True, source: str = "",
                    ages_h: Mapping[str, tuple[np.ndarray, Any]] | None = None,
                    end_ages: bool = False) -> ReplicationResult:
    """Build, run and summarise one replication. Pure function of (scenario, replication).

    ``tables=False`` leaves the tables to be built when read (:meth:`Model.result`): a caller that
    keeps only the metrics (a Monte-Carlo worker) does not pay for them.

    ``lifetimes`` adds the table ``lifetimes``: every node part's lives (failed or censored at the
    horizon) in the column format ``twin fit`` reads, so fits can be checked against a known truth.

    ``ages_h`` gives part populations (by name) their units' ages at the start, hours, in place of their
    ``initial_age_h``, with the failure distribution they were drawn from (a population whose unit count or
    distribution differs starts as the scenario says); ``end_ages`` returns them at the horizon
    (``part_ages_h``): a timeline's stages carry them (:mod:`twin.life`).

    The run stops (:class:`~twin.errors.InputError`, exit 2, naming ``source`` and the cause) after
    :func:`twin.limits.event_bound` events.
    """
    if sc.timeline is not None:  # a hall's life: its stages in turn (twin/life.py)
        from twin.life import run_life

        life = run_life(sc, replication, scenario_hash, run_replication, tables=tables, source=source)
        return ReplicationResult(scenario=sc.name, scenario_hash=scenario_hash, seed=sc.seed, replication=replication,
                                 metrics=life.metrics, tables=life.tables, timings_s=life.timings_s,
                                 events_processed=life.events_processed)
    model = Model(sc, replication, scenario_hash, source=source, ages_h=ages_h)
    model.run(progress)
    res = model.result(tables)
    if end_ages:
        res.part_ages_h = {name: (pop.end_ages_h(), pop.spec.failure)
                           for name, pop in {**model.parts, **model.facility}.items()}
    if lifetimes:
        res.tables["lifetimes"] = model.lifetimes()
    heavy = model.events > GC_EVENTS
    del model
    if heavy:  # SimPy leaves cyclic garbage; a full collection costs ~0.1-0.2 s, worth it only after big runs
        gc.collect()
    return res
