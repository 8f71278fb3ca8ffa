"""Rack parts (``cluster.rack_parts``): units shared by the nodes of a rack.

An NVLink domain's switch trays (GB200 NVL72: 18 compute trays and 9 NVSwitch trays per rack), a
rack power shelf or a rack manifold serve every node of their rack. Each part type has ``count``
units per rack, failing and repaired through the same streams, crews and spares as node parts
(:class:`~twin.model.parts.FacilityParts`, paths ``hall.rackNN.<name><k>``). While fewer than the
type's threshold units of a rack work (effect ``node_down``: all of them, any failure counts;
``redundant``: ``min_to_run``, default ``required``), every node of the rack is down with the part's name as cause (``cluster.add_down``): the workload interrupts the jobs
there, IT power and thermal see the nodes out of service, ``node_down_hours.<name>`` and
``interruptions.<name>`` count it. Repairs are hot: no node is drained or burnt in (the nodes are
down with the rack while the group has failed). Dispatch by impact counts the GPUs of the unit's rack
while the rack is down for this part type (its ``scope`` and cause); ties go by the part's dispatch
priority (default: 0 for node_down, 2 for redundant). Each change of a rack's working units is
published as ``Topic.RACK_PART`` (the NVLink domains' switch trays: ``twin.model.domains``).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import numpy as np

from twin.model.cluster import rack_path
from twin.model.component import BuildContext, Component
from twin.model.causes import DownCause
from twin.model.engine import Topic
from twin.model.parts import FacilityParts

if TYPE_CHECKING:  # pragma: no cover
    from twin.scenario.schema import Scenario


class RackParts(Component):
    """Every rack part type of the scenario: site-level populations (``facility_parts``)."""

    name = "rack_parts"

    @classmethod
    def wanted(cls, sc: Scenario) -> bool:
        return bool(sc.cluster.rack_parts)

    @classmethod
    def build(cls, ctx: BuildContext) -> RackParts:
        return cls(ctx)

    def __init__(self, ctx: BuildContext) -> None:
        self.cluster = cl = ctx.cluster
        self._rack_part_subs = ctx.engine.bus.handlers(Topic.RACK_PART)
        racks = cl.racks
        self.healthy: dict[str, np.ndarray] = {}
        self.fail_below: dict[str, int] = {}
        self.count: dict[str, int] = {}
        self.pops: dict[str, FacilityParts] = {}
        for name, spec in ctx.sc.cluster.rack_parts.items():
            paths = [f"{rack_path(r)}.{name}{k}" for r in range(racks) for k in range(spec.count)]
            self.healthy[name] = np.full(racks, spec.count, dtype=np.int64)
            # node_down: any unit's failure takes the rack down (as for a node part); redundant: k-of-n
            self.fail_below[name] = spec.count if spec.effect == "node_down" else spec.fail_below
            self.count[name] = spec.count
            pop = FacilityParts(ctx.engine, name, paths, spec)
            ctx.engine.bus.subscribe(pop.changed, functools.partial(self._on_change, name))
            npr, cnt = cl.nodes_per_rack, spec.count
            pop.scope = lambda idx, npr=npr, cnt=cnt: range((idx // cnt) * npr, (idx // cnt + 1) * npr)  # its rack
            if spec.dispatch_priority is None:  # like node parts: node-down 0, lost redundancy 2
                pop.priority = 0 if spec.effect == "node_down" else 2
            self.pops[name] = pop

    def facility_parts(self) -> dict[str, FacilityParts]:
        return dict(self.pops)

    def rack_down(self, name: str, idx: int) -> bool:
        """True while the rack of unit ``idx`` of ``name`` is down for that part type."""
        return int(self.healthy[name][idx // self.count[name]]) < self.fail_below[name]

    def _on_change(self, name: str, idx: int, healthy: bool) -> None:
        rack = idx // self.count[name]
        h = self.healthy[name]
        before = int(h[rack])
        after = before + (1 if healthy else -1)
        h[rack] = after
        for fn in self._rack_part_subs:  # = bus.publish(Topic.RACK_PART, rack, name, after): the NVLink domains
            fn(rack, name, after)
        k = self.fail_below[name]
        cl = self.cluster
        nodes = range(rack * cl.nodes_per_rack, (rack + 1) * cl.nodes_per_rack)
        if before >= k > after:  # the rack's group just failed
            for node in nodes:
                cl.add_down(node, DownCause.part_failed(name))
        elif after >= k > before:  # and is back
            for node in nodes:
                cl.remove_down(node, DownCause.part_failed(name))
