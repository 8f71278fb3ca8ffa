"""Named events for ``twin rare``: predicates on one finished replication (a :class:`twin.sim.Model`).

A registry: :func:`register` adds an event (its name, what it means, its parameters with defaults);
``twin rare --event NAME --param KEY=VALUE`` picks one. Every predicate reads only the run's records
(node intervals, the workload's interruptions, the metrics), never its random streams, so it does not
change what the replication draws.

Events that need the power-risk work (site power lost longer than T, a UPS dropping its load) and the
cooling-capacity event (capacity below the load longer than T) are not registered yet: today a UPS
never drops its load and cooling units do not record a capacity-below-load interval, so such events
could not happen (see docs/guide/rare-events.md).
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
