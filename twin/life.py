"""The life of a hall (issue 52): a scenario with a ``timeline`` run stage by stage, and its life-cycle costs.

:mod:`twin.scenario.timeline` builds the stages (each a plain scenario: the steps so far applied, its own
horizon and seed, the installation drains of its step); :func:`run_life` simulates each with the unchanged
model (:func:`twin.sim.run_replication`) and adds them up into one replication's metrics:

* **costs**: ``cost.total`` = Σ stages' ``cost.total`` (each stage pays the annuity of what it holds for
  its own duration, energy, repairs, labour, holding, water: :mod:`twin.model.costs`) + Σ steps' capital.
  A step's capital (``step.<name>.capital``) is its works (``capital``) + the write-off of the nodes it
  replaces − their resale + their disposal. The write-off is what the replaced nodes still owe of their
  annuity: purchase × (1 − (1 + r)^−(n − a)) / (1 − (1 + r)^−n) for a node aged a years of its n-year
  amortisation at rate r ((n − a)/n at r = 0; 0 once paid off): replacing a node early costs the
  payments it no longer serves. Plant a step removes (a cooling or power capital item the stage after holds
  less of than the stage before: a retrofit's chiller capacity, CRAH units) is written off the same way,
  the oldest lots first at their own age and amortisation years, less ``plant_resale_share`` of its
  purchase price (``step_plant_writeoff.<name>``, ``step_plant_resale.<name>``). Equipment still serving at
  the end of the life owes nothing more (as in
  a one-year run, the annuity covers the years used). ``cost.per_useful_gpu_hour`` is the life's
  ``cost.total`` over its ``useful_gpu_hours``; ``stage_*.<k>`` and ``step_*.<name>`` give each part;
* **other metrics**: counts, hours, energies and costs are summed over the stages (:func:`_rule`),
  maxima and peaks are the largest stage's, the hall as built (``cost.capital_purchase``, ``density.*``) the
  last stage's, and the rest (shares, means, temperatures) are the stages'
  means weighted by their installed GPU-hours (``gpus_installed`` and ``nodes`` by their hours); ``goodput`` and ``pue`` are recomputed from the sums;
* **headroom**: ``headroom_<check>.<k>`` (capacity − load, kW or m², negative a shortfall) for every stage
  and ``headroom_min.<check>`` over the life (:mod:`twin.scenario.headroom`).

Tables, when asked for, are each stage's with a ``stage`` column and the stage's start (``stage_start_h``),
plus ``life`` (one row per stage and per step) and ``headroom``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pandas as pd

from twin.scenario.timeline import rack_types
from twin.units import DAYS_PER_YEAR, HOURS_PER_DAY

if TYPE_CHECKING:  # pragma: no cover
    from twin.scenario.schema import Scenario

SUM_HEADS = ("cost.", "energy.", "failures", "interruptions", "jobs_", "stockouts", "installation.", "ccf_",
             "thermal.trips", "repair.replaced", "repair.remediated", "repair.escalated", "rma.sent",
             "spares_scrapped", "sdc.corruptions", "sdc.rollbacks", "sdc.discarded", "sdc.found_by_test",
             "sdc.harmless", "response.actions", "storage.outages", "storage.jobs_stopped", "network.link_flaps",
             "plant.maintenance_windows", "plant.power_stops", "leak.", "water.", "horizon_h")
"""Metrics summed over the stages (besides names with ``_hours``, ``_kwh`` or ``_l`` in them)."""
LAST = ("cost.capital_purchase", "density.")
"""Metrics of what the hall is at the end of its life: the last stage's (the purchase price of the hall as
built then, its density and floor)."""
TIME_WEIGHTED = ("gpus_installed", "nodes")
"""Means weighted by the stages' hours (the others by their installed GPU-hours)."""
_SUMMED = re.compile(r"(_hours|_kwh|_l|_m3)(\.|$)")


STAGE_METRICS = {"cost.total": "stage_cost", "useful_gpu_hours": "stage_useful_gpu_hours",
                 "cost.per_useful_gpu_hour": "stage_cost_per_useful_gpu_hour", "cost.capital": "stage_capital",
                 "cost.energy": "stage_energy_cost", "energy.facility_kwh": "stage_facility_kwh",
                 "thermal.throttled_gpu_hours": "stage_throttled_gpu_hours",
                 "thermal.speed_loss_gpu_hours": "stage_speed_loss_gpu_hours", "gpus_installed": "stage_gpus",
                 "goodput": "stage_goodput"}
"""Each stage's own figures, as ``<name>.<k>`` (k = 0 before the first step)."""
STEP_KEYS = ("works", "nodes_replaced", "writeoff", "resale", "disposal", "plant_removed", "plant_writeoff",
             "plant_resale", "capital", "purchase", "install_node_hours")
"""Each step's figures, as ``step_<key>.<step name>``."""


def _rule(name: str) -> str:
    """How a stage metric adds up over the life: ``sum``, ``max`` or ``mean`` (GPU-hour weighted)."""
    if name in ("cost.per_useful_gpu_hour", "goodput", "pue"):
        return "recomputed"
    if name.startswith(LAST):
        return "last"
    if "peak" in name or re.search(r"(^|[._])max([._]|$)", name):
        return "max"
    if name.startswith(SUM_HEADS) or _SUMMED.search(name):
        return "sum"
    return "mean"


def remaining_share(rate: float, years: float, age_years: float) -> float:
    """Share of a purchase its annuity still owes after ``age_years`` of ``years`` at ``rate``."""
    left = years - age_years
    if left <= 0:
        return 0.0
    if rate == 0:
        return left / years
    return float((1.0 - (1.0 + rate) ** (-left)) / (1.0 - (1.0 + rate) ** (-years)))


@dataclass
class Lot:
    """Nodes bought together: how many, on which day, at what price each (node and its PSUs)."""

    nodes: int
    day: float
    price: float


PLANT_GROUPS = ("cooling", "power")
"""Capital groups (:func:`twin.model.costs.capital_items`) whose equipment a step can remove (a retrofit's
chiller capacity, CRAH units): written off when a stage holds less of an item than the stage before."""


@dataclass
class PlantLot:
    """Plant bought together: a quantity of one capital item (units or kW), its day, unit price and
    amortisation years."""

    quantity: float
    day: float
    price: float
    years: float


def _plant(sc: "Scenario") -> dict[tuple[str, str], Any]:
    from twin.model.costs import capital_items

    return {(i.group, i.item): i for i in capital_items(sc) if i.group in PLANT_GROUPS}


def plant_change(lots: dict[tuple[str, str], list[PlantLot]], cur: "Scenario", day: float,
                 rate: float) -> tuple[float, float]:
    """Update the plant ``lots`` for the stage ``cur`` from ``day``: an item the stage holds more of is a new
    lot; one it holds less of is removed, the oldest lots first. Returns (purchase price of the plant
    removed, its write-off: Σ removed × price × :func:`remaining_share` at the lot's age)."""
    items = _plant(cur)
    removed = writeoff = 0.0
    for key in sorted(set(lots) | set(items)):
        have = lots.setdefault(key, [])
        held = sum(lot.quantity for lot in have)
        item = items.get(key)
        want = float(item.quantity) if item is not None else 0.0
        if item is not None and want > held * (1 + 1e-9) + 1e-9:
            have.append(PlantLot(want - held, day, float(item.unit_price), float(item.years)))
        elif want < held * (1 - 1e-9) - 1e-9:
            drop = held - want
            while drop > 1e-9 and have:
                lot = have[0]
                q = min(drop, lot.quantity)
                removed += q * lot.price
                writeoff += q * lot.price * remaining_share(rate, lot.years, (day - lot.day) / DAYS_PER_YEAR)
                lot.quantity -= q
                drop -= q
                if lot.quantity <= 1e-9:
                    have.pop(0)
    return removed, writeoff


def step_capital(sc: "Scenario") -> list[dict[str, Any]]:
    """Per step of ``sc.timeline``: its works, the nodes it replaces, their write-off, resale and
    disposal, its capital (see the module docstring) and the purchase price it adds to the hall."""
    from twin.model.costs import capital_purchase, node_replacement_price

    tl = sc.timeline
    assert tl is not None
    stages = tl.stages
    out = []
    costs = stages[0].costs
    lots = [Lot(stages[0].cluster.n_nodes, 0.0, node_replacement_price(stages[0]) if costs is not None else 0.0)]
    plant: dict[tuple[str, str], list[PlantLot]] = {}
    if costs is not None:
        plant = {k: [PlantLot(float(i.quantity), 0.0, float(i.unit_price), float(i.years))]
                 for k, i in _plant(stages[0]).items()}
    racks: list[list[Lot]] | None = None  # per rack, its nodes' lots (a hall of node pools: cluster.pools)
    for j, step in enumerate(tl.reached(sc.horizon_days)):
        prev, cur = stages[j], stages[j + 1]
        replaced = 0
        writeoff = 0.0
        price = node_replacement_price(cur) if cur.costs is not None else 0.0
        if racks is None and (prev.cluster.pools or cur.cluster.pools):  # from here, the lots of each rack
            npr = prev.cluster.nodes_per_rack
            racks = [[Lot(npr, lot.day, lot.price)] for lot in lots for _ in range(lot.nodes // npr)]
            if prev.cluster.pools:  # the pools from day 0 (a step's lots are per rack already)
                racks = [[Lot(npr, 0.0, _price(prev, t))] for t in rack_types(prev)]
        if racks is not None:
            replaced, writeoff = _rack_change(racks, prev, cur, step.day)
        elif cur.cluster.node.type != prev.cluster.node.type:  # a new generation replaces every node
            c = prev.costs
            for lot in lots:
                replaced += lot.nodes
                if c is not None:
                    age = (step.day - lot.day) / DAYS_PER_YEAR
                    writeoff += lot.nodes * lot.price * remaining_share(c.discount_rate, c.amortisation_years, age)
            lots = [Lot(cur.cluster.n_nodes, step.day, price)]
        elif cur.cluster.n_nodes > prev.cluster.n_nodes:
            lots.append(Lot(cur.cluster.n_nodes - prev.cluster.n_nodes, step.day, price))
        has_costs = cur.costs is not None
        resale = replaced * step.resale_per_node if has_costs else 0.0
        disposal = replaced * step.disposal_per_node if has_costs else 0.0
        works = step.capital if has_costs else 0.0
        removed = plant_off = 0.0
        if has_costs and cur.costs is not None:
            removed, plant_off = plant_change(plant, cur, step.day, cur.costs.discount_rate)
        plant_resale = removed * step.plant_resale_share
        inst = cur.installation
        out.append({
            "step": step.name, "day": step.day, "works": works, "nodes_replaced": float(replaced),
            "writeoff": writeoff, "resale": resale, "disposal": disposal, "plant_removed": removed,
            "plant_writeoff": plant_off, "plant_resale": plant_resale,
            "capital": works + writeoff - resale + disposal + plant_off - plant_resale,
            "purchase": (capital_purchase(cur) - capital_purchase(prev)) if has_costs else 0.0,
            "install_node_hours": inst.node_hours(cur.horizon_h) if inst is not None else 0.0,
        })
    return out


def _price(sc: "Scenario", node_type: str) -> float:
    """Price of one node of ``node_type`` in ``sc`` (``capital.node`` and its PSUs), 0 without costs."""
    from twin.model.costs import psu_part

    c = sc.costs
    if c is None:
        return 0.0
    psu = psu_part(sc)
    return float(c.capital.node[node_type] + (sc.cluster.node.parts[psu].count * c.capital.psu if psu else 0.0))


def _rack_change(racks: list[list[Lot]], prev: "Scenario", cur: "Scenario", day: float) -> tuple[int, float]:
    """Update the per-rack ``racks`` lots for stage ``cur`` from ``day``: a rack whose node type changes is
    replaced (its lots written off at their age), an added rack is a new lot. Returns (nodes replaced, their
    write-off)."""
    c = prev.costs
    before, after = rack_types(prev), rack_types(cur)
    npr = cur.cluster.nodes_per_rack
    replaced, writeoff = 0, 0.0
    for r, t in enumerate(after):
        if r >= len(before):
            racks.append([Lot(npr, day, _price(cur, t))])
        elif t != before[r]:
            for lot in racks[r]:
                replaced += lot.nodes
                if c is not None:
                    age = (day - lot.day) / DAYS_PER_YEAR
                    writeoff += lot.nodes * lot.price * remaining_share(c.discount_rate, c.amortisation_years, age)
            racks[r] = [Lot(npr, day, _price(cur, t))]
        elif npr > sum(lot.nodes for lot in racks[r]):
            racks[r].append(Lot(npr - sum(lot.nodes for lot in racks[r]), day, _price(cur, t)))
    return replaced, writeoff


def carried_ages(prev: "Scenario", cur: "Scenario", ages: dict[str, tuple[Any, Any]]) -> dict[str, tuple[Any, Any]]:
    """The part ages stage ``cur`` starts with, from ``prev``'s at its end (``ReplicationResult.part_ages_h``).

    A node part keeps its units' ages when the node type, ``nodes_per_rack``, the part's count and its failure
    distribution are unchanged (nodes keep their indices; the nodes of added racks come after and are new);
    a rack part likewise (count and distribution, racks keep their indices); a site unit (CRAH, CDU, chiller,
    feed unit...) when its population has the same number of units and distribution (the model checks). A
    new node type, a part given a new distribution or count, or a site population resized start new."""
    import numpy as np

    out: dict[str, tuple[Any, Any]] = {}
    pn, cn = prev.cluster.node, cur.cluster.node
    same_nodes = pn.type == cn.type and prev.cluster.nodes_per_rack == cur.cluster.nodes_per_rack
    if prev.cluster.pools or cur.cluster.pools:  # node pools: a node part's units keep their ages on the racks
        return _pooled_ages(prev, cur, ages)     # whose node type stays
    for name, (age, failure) in ages.items():
        if name in pn.parts or name in prev.cluster.rack_parts:
            node = name in pn.parts
            old = pn.parts[name] if node else prev.cluster.rack_parts[name]
            new = cn.parts.get(name) if node else cur.cluster.rack_parts.get(name)
            if new is None or new.count != old.count or new.failure != old.failure or (node and not same_nodes):
                continue
            n = (cur.cluster.n_nodes if node else cur.cluster.racks) * new.count
            if n < len(age):
                continue
            out[name] = (np.concatenate([age, np.zeros(n - len(age))]), failure)
        else:
            out[name] = (age, failure)
    return out


def _pooled_ages(prev: "Scenario", cur: "Scenario", ages: dict[str, tuple[Any, Any]]) -> dict[str, tuple[Any, Any]]:
    """:func:`carried_ages` for halls of node pools: a node part's unit keeps its age when its rack keeps its node
    type and the part keeps its count and its failure law there; the units of a replaced or added rack start new
    (age 0); rack parts and site units as :func:`carried_ages` (a hall without pools on either side)."""
    import numpy as np

    npr = prev.cluster.nodes_per_rack
    if npr != cur.cluster.nodes_per_rack:
        return {}
    before, after = rack_types(prev), rack_types(cur)
    out: dict[str, tuple[Any, Any]] = {}
    for name, (age, failure) in ages.items():
        if name not in prev.cluster.node.parts:
            if name in prev.cluster.rack_parts:
                old, new = prev.cluster.rack_parts[name], cur.cluster.rack_parts.get(name)
                if new is None or new.count != old.count or new.failure != old.failure or len(age) > cur.cluster.racks * new.count:
                    continue
                out[name] = (np.concatenate([age, np.zeros(cur.cluster.racks * new.count - len(age))]), failure)
            else:
                out[name] = (age, failure)
            continue
        if name not in cur.cluster.node.parts or cur.cluster.node.parts[name].count != prev.cluster.node.parts[name].count:
            continue
        per = cur.cluster.node.parts[name].count * npr  # units per rack
        law_before = {node.type: node.parts[name].failure for _, _, node in prev.cluster.node_pools()}
        law_after = {node.type: node.parts[name].failure for _, _, node in cur.cluster.node_pools()}
        new_age = np.zeros(len(after) * per)
        for r, t in enumerate(after):
            if r < len(before) and before[r] == t and law_before[t] == law_after[t]:
                new_age[r * per:(r + 1) * per] = age[r * per:(r + 1) * per]
        out[name] = (new_age, failure)
    return out


def combine(results: list[Any], stages: list["Scenario"]) -> dict[str, float]:
    """The life's metrics from its stages' (see the module docstring; without the step costs)."""
    weights = [s.cluster.n_nodes * s.cluster.node.gpus * s.horizon_h for s in stages]  # installed GPU-hours
    total_w = sum(weights)
    names: list[str] = []
    for r in results:
        names += [n for n in r.metrics if n not in names]
    out: dict[str, float] = {}
    for name in names:
        ws_of = [s.horizon_h for s in stages] if name in TIME_WEIGHTED else weights
        vals = [(r.metrics[name], w) for r, w in zip(results, ws_of) if name in r.metrics]
        rule = _rule(name)
        if rule == "sum":
            out[name] = float(sum(v for v, _ in vals))
        elif rule == "max":
            out[name] = float(max(v for v, _ in vals))
        elif rule == "last":
            out[name] = float(results[-1].metrics.get(name, math.nan))
        elif rule == "mean":
            ws = sum(w for _, w in vals)
            out[name] = float(sum(v * w for v, w in vals) / ws) if ws > 0 else math.nan
    useful = out.get("useful_gpu_hours")
    if useful is not None:
        out["goodput"] = useful / total_w if total_w > 0 else math.nan
    fac, it = out.get("energy.facility_kwh"), out.get("energy.it_kwh")
    if fac is not None and it:
        out["pue"] = fac / it
    return out


@dataclass
class Life:
    """What :func:`run_life` gives :func:`twin.sim.run_replication` to make its result from."""

    metrics: dict[str, float]
    tables: dict[str, pd.DataFrame]
    timings_s: dict[str, float]
    events_processed: int


def run_life(sc: "Scenario", replication: int, scenario_hash: str, run: Callable[..., Any],
             tables: bool = True, source: str = "") -> Life:
    """Run every stage of ``sc.timeline`` (``run``: :func:`twin.sim.run_replication`, which returns a
    ``ReplicationResult``) and add them up."""
    tl = sc.timeline
    assert tl is not None
    stages = tl.stages
    results: list[Any] = []
    carry: dict[str, tuple[Any, Any]] | None = None
    for k, st in enumerate(stages):
        r = run(st, replication, scenario_hash, tables=tables, source=source, ages_h=carry,
                end_ages=k + 1 < len(stages))
        results.append(r)
        if k + 1 < len(stages):
            carry = carried_ages(st, stages[k + 1], r.part_ages_h or {})
    m = combine(results, stages)
    steps = step_capital(sc)
    bounds = tl.bounds_days(sc.horizon_days)
    rows: list[dict[str, Any]] = []
    for k, (r, (d0, d1)) in enumerate(zip(results, bounds)):
        for key, name in STAGE_METRICS.items():
            if key in r.metrics:
                m[f"{name}.{k}"] = float(r.metrics[key])
        rows.append({"kind": "stage", "name": str(k), "day": d0, "end_day": d1,
                     "cost": float(r.metrics.get("cost.total", math.nan)),
                     "useful_gpu_hours": float(r.metrics.get("useful_gpu_hours", math.nan))})
    for s in steps:
        for key in STEP_KEYS:
            m[f"step_{key}.{s['step']}"] = float(s[key])
        rows.append({"kind": "step", "name": s["step"], "day": s["day"], "end_day": s["day"], "cost": s["capital"],
                     "useful_gpu_hours": 0.0})
    if "cost.total" in m:
        m["cost.stages"] = float(sum(r.metrics["cost.total"] for r in results))
        m["cost.steps"] = float(sum(s["capital"] for s in steps))
        m["cost.total"] = m["cost.stages"] + m["cost.steps"]
        useful = m.get("useful_gpu_hours", math.nan)
        m["cost.per_useful_gpu_hour"] = m["cost.total"] / useful if useful and useful > 0 else math.nan
    heads = []
    lows: dict[str, float] = {}
    for k, found in enumerate(tl.headroom):
        for what, cap, load, unit in found:
            m[f"headroom_{what}.{k}"] = cap - load
            lows[what] = min(lows.get(what, math.inf), cap - load)
            heads.append({"stage": k, "day": bounds[k][0], "check": what, "capacity": cap, "load": load,
                          "headroom": cap - load, "unit": unit})
    for what, v in lows.items():
        m[f"headroom_min.{what}"] = v
    m["life.stages"] = float(len(stages))
    out: dict[str, pd.DataFrame] = {}
    if tables:
        for k, (r, (d0, _)) in enumerate(zip(results, bounds)):
            for name, df in r.tables.items():
                part = df.assign(stage=k, stage_start_h=d0 * HOURS_PER_DAY)
                out[name] = part if name not in out else pd.concat([out[name], part], ignore_index=True)
    out["life"] = pd.DataFrame(rows, columns=["kind", "name", "day", "end_day", "cost", "useful_gpu_hours"])
    out["headroom"] = pd.DataFrame(heads, columns=["stage", "day", "check", "capacity", "load", "headroom", "unit"])
    timings: dict[str, float] = {}
    for r in results:
        for key, v in r.timings_s.items():
            timings[key] = timings.get(key, 0.0) + v
    return Life(metrics=m, tables=out, timings_s=timings, events_processed=sum(r.events_processed for r in results))


__all__ = ["Life", "Lot", "PlantLot", "carried_ages", "combine", "plant_change", "remaining_share", "run_life", "step_capital"]
