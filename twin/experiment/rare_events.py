"""Named events for ``twin rare``: predicates on one finished replication (a :class:`twin.sim.Model`).

A registry: :func:`register` adds an event (its name, what it means, its parameters with defaults);
``twin rare --event NAME --param KEY=VALUE`` picks one. Every predicate reads only the run's records
(node intervals, the workload's interruptions, the metrics), never its random streams, so it does not
change what the replication draws.

The power events read the power chain's feed states (``PowerChain.feed_rows``: a feed is ``dead``
when nothing powers its PSUs); the cooling event reads the chiller plant's capacity and heat at each
of its events (``Plant.rows``; a load change between them is not followed, as in the plant itself).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

from twin.errors import InputError

if TYPE_CHECKING:
    from twin.sim import Model

Params = Mapping[str, Any]


@dataclass(frozen=True)
class Event:
    """A named event: ``fn(model, params)`` is True when it happened in the replication."""

    name: str
    doc: str
    params: dict[str, tuple[Any, str]] = field(default_factory=dict)
    """Parameter -> (default, meaning with unit)."""
    fn: Callable[["Model", Params], bool] = lambda m, p: False


EVENTS: dict[str, Event] = {}
"""The registry, by name."""


def register(name: str, doc: str, params: dict[str, tuple[Any, str]] | None = None
             ) -> Callable[[Callable[["Model", Params], bool]], Callable[["Model", Params], bool]]:
    """Decorator: register ``fn(model, params) -> bool`` as event ``name``."""
    def deco(fn: Callable[["Model", Params], bool]) -> Callable[["Model", Params], bool]:
        if name in EVENTS:
            raise ValueError(f"event {name!r} is already registered")
        EVENTS[name] = Event(name, doc, dict(params or {}), fn)
        return fn
    return deco


def resolve(name: str, given: Mapping[str, str]) -> dict[str, Any]:
    """The event's parameters: defaults, overridden by ``given`` (text, converted to the default's type).
    Unknown event or parameter, or a value of the wrong type: InputError naming it."""
    ev = EVENTS.get(name)
    if ev is None:
        raise InputError("--event", name, "unknown event; known: " + ", ".join(sorted(EVENTS)))
    out: dict[str, Any] = {k: d for k, (d, _) in ev.params.items()}
    for k, text in given.items():
        if k not in ev.params:
            raise InputError("--param", k, f"event {name!r} has no such parameter; it has: "
                             + (", ".join(ev.params) or "none"))
        kind = type(ev.params[k][0])
        try:
            out[k] = kind(text)
        except ValueError:
            raise InputError("--param", f"{k}={text}", f"must be a {kind.__name__}") from None
    return out


def _longest_overlap(intervals: Iterable[tuple[float, float]], need: int, min_h: float) -> bool:
    """True when at least ``need`` of the (start_h, end_h) intervals overlap for longer than ``min_h``
    hours at a stretch (a sweep: at equal times an interval ends before another starts)."""
    ivs = list(intervals)
    marks = sorted([(s, 1) for s, _ in ivs] + [(e, -1) for _, e in ivs], key=lambda x: (x[0], x[1]))
    count = 0
    since = None
    for t, d in marks:
        count += d
        if count >= need and since is None:
            since = t
        elif count < need and since is not None:
            if t - since > min_h:
                return True
            since = None
    return False


def _down(model: "Model") -> list[tuple[int, float, float]]:
    return [(n, s, e) for n, s, e, st, _ in model.recorder.interval_records() if st == "down" and e > s]


@register("nodes_down", "at least `nodes` nodes down at the same time for longer than `min_h` hours",
          {"nodes": (0, "nodes down together (0: every node of the cluster)"),
           "min_h": (0.0, "shortest stretch that counts, hours (0: any)")})
def nodes_down(model: "Model", p: Params) -> bool:
    n_nodes = model.cluster.n_nodes
    need = int(p["nodes"]) or n_nodes
    if need > n_nodes:
        raise InputError("--param", f"nodes={need}", f"the cluster has {n_nodes} nodes")
    return _longest_overlap(((s, e) for _, s, e in _down(model)), need, float(p["min_h"]))


@register("group_down", "every node of one of `groups` equal blocks of racks down together for longer than "
          "`min_h` hours (blocks as zones and feeds are laid out: groups = the zone or feed count; "
          "0: each rack)",
          {"groups": (0, "contiguous blocks of racks (0: one per rack; 1: the whole hall)"),
           "min_h": (0.0, "shortest stretch that counts, hours (0: any)")})
def group_down(model: "Model", p: Params) -> bool:
    from twin.model.cluster import node_blocks

    cl = model.cluster
    groups = int(p["groups"]) or cl.racks
    if groups > cl.racks:
        raise InputError("--param", f"groups={groups}", f"the cluster has {cl.racks} racks")
    down = _down(model)
    for lo, hi in node_blocks(cl.racks, groups, cl.nodes_per_rack):
        ivs = [(s, e) for n, s, e in down if lo <= n < hi]
        if len(ivs) >= hi - lo and _longest_overlap(ivs, hi - lo, float(p["min_h"])):
            return True
    return False


@register("job_loss", "a job loses more than `hours` of progress (restart and lost work) in one interruption "
          "(`total` 0) or in total over the horizon (`total` 1); needs a workload section",
          {"hours": (24.0, "progress lost, hours"), "total": (0, "0: in one interruption; 1: summed per job")})
def job_loss(model: "Model", p: Params) -> bool:
    wl = model.by_section.get("workload")
    if wl is None:
        raise InputError("--event", "job_loss", "the scenario has no workload section")
    x = float(p["hours"])
    if int(p["total"]):
        per: dict[Any, float] = {}
        for jid, _name, _t, _cause, _planned, lost, *_ in wl.interruptions:
            per[jid] = per.get(jid, 0.0) + float(lost)
        return any(v > x for v in per.values())
    return any(float(r[5]) > x for r in wl.interruptions)


@register("metric_above", "a replication metric (twin explain --list) above `value`: e.g. "
          "metric=node_down_hours value=100",
          {"metric": ("", "metric name"), "value": (0.0, "threshold, in the metric's unit (strictly above)")})
def metric_above(model: "Model", p: Params) -> bool:
    name = str(p["metric"])
    metrics = model.result(tables=False).metrics
    if name not in metrics:
        raise InputError("--param", f"metric={name}", "no such metric in this scenario's replication; some: "
                         + ", ".join(sorted(metrics)[:12]))
    return bool(metrics[name] > float(p["value"]))


def _all_dead(model: "Model", planned: bool) -> list[tuple[float, float]]:
    """The stretches (start_h, end_h) during which every feed of the power chain is dead at once, merged;
    unless ``planned``, a stretch in which every dead feed is dead for a planned maintenance (an isolated
    feed, cause ``maintenance``) does not count."""
    import numpy as np

    ch = model.by_section.get("power")
    if ch is None:
        raise InputError("--event", "power", "the scenario has no power section")
    per: list[list[tuple[float, float, bool]]] = [[] for _ in ch.feeds]
    for feed, s, e, state, cause in ch.feed_rows:
        if state == "dead" and e > s:
            per[ch.feeds.index(feed)].append((s, e, cause == "maintenance"))
    if any(not p for p in per):
        return []
    cuts = np.unique(np.array([t for p in per for s, e, _ in p for t in (s, e)]))
    if len(cuts) < 2:
        return []
    mid = (cuts[:-1] + cuts[1:]) / 2
    lost = np.ones(len(mid), dtype=bool)
    unplanned = np.zeros(len(mid), dtype=bool)
    for p in per:
        p.sort()
        st = np.array([s for s, _, _ in p])
        en = np.array([e for _, e, _ in p])
        pl = np.array([x for _, _, x in p])
        j = np.searchsorted(st, mid, side="right") - 1
        inside = (j >= 0) & (mid < en[np.maximum(j, 0)])
        lost &= inside
        unplanned |= inside & ~pl[np.maximum(j, 0)]
    if not planned:
        lost &= unplanned
    out: list[tuple[float, float]] = []
    for i in np.flatnonzero(lost):
        a, b = float(cuts[i]), float(cuts[i + 1])
        if out and out[-1][1] == a:
            out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out


def _autonomy_h(model: "Model", min_h: float) -> float:
    if min_h >= 0:
        return min_h
    ups = model.sc.power.ups if model.sc.power is not None else None
    return ups.ride_through_min / 60.0 if ups is not None else 0.0


@register("site_power_lost", "the hall loses its IT load (every feed dead at once: no PSU powered) for longer "
          "than `min_h` hours at a stretch; unplanned unless `planned` 1 (a drain of an isolated feed for a "
          "maintenance alone does not count); needs a power section",
          {"min_h": (-1.0, "shortest stretch that counts, hours (-1: the UPS autonomy, ride_through_min)"),
           "planned": (0, "1: a planned maintenance drain counts too")})
def site_power_lost(model: "Model", p: Params) -> bool:
    x = _autonomy_h(model, float(p["min_h"]))
    return any(e - s > x for s, e in _all_dead(model, bool(int(p["planned"]))))


@register("feeds_lost", "both (every) feeds of a 2N chain dead together for longer than `min_h` hours; "
          "unplanned unless `planned` 1; needs two feeds",
          {"min_h": (0.0, "shortest stretch that counts, hours (0: any)"),
           "planned": (0, "1: a planned maintenance drain counts too")})
def feeds_lost(model: "Model", p: Params) -> bool:
    ch = model.by_section.get("power")
    if ch is not None and len(ch.feeds) < 2:
        raise InputError("--event", "feeds_lost", "the power chain has one feed (topology n); use site_power_lost")
    x = float(p["min_h"])
    return any(e - s > x for s, e in _all_dead(model, bool(int(p["planned"]))))


@register("cooling_short", "the chiller plant's running capacity below the heat load for longer than `min_h` "
          "hours at a stretch (as the plant reads them at its events); needs a cooling.plant section",
          {"min_h": (0.0, "shortest stretch that counts, hours (0: any)")})
def cooling_short(model: "Model", p: Params) -> bool:
    plant = model.by_section.get("plant")
    if plant is None:
        raise InputError("--event", "cooling_short", "the scenario has no chiller plant (cooling.plant)")
    x = float(p["min_h"])
    since = None
    for t, _x, _tgt, heat_kw, run_kw, _run in [*plant.rows, (model.sc.horizon_h, 0.0, 0.0, 0.0, 0.0, 0.0)]:
        if since is not None and t - since > x:
            return True
        short = run_kw < heat_kw
        if short and since is None:
            since = t
        elif not short:
            since = None
    return False
