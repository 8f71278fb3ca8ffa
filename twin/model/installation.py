"""Installation work (issue 52): the drains of a timeline's step (``installation``, written into the stage
after the step by :mod:`twin.scenario.timeline`, or given by hand).

Each window takes its nodes down for its duration as a planned drain (``DownCause.planned_drain
("installation")``, label ``planned:installation_maintenance``: the workload sees a planned interruption,
IT power, cooling and the power chain see the nodes out), and returns them at its end. The drained
node-hours within the horizon are ``Σ nodes × duration`` (``installation.node_hours``), exactly what the
cluster records under that cause when nothing else holds the nodes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from twin.model.causes import DownCause
from twin.model.component import BuildContext, Component, Metrics, ResultsSoFar, Tables

if TYPE_CHECKING:  # pragma: no cover
    from twin.scenario.schema import Scenario

INSTALLATION = DownCause.planned_drain("installation")


class Installation(Component):
    """Drains nodes for the windows of ``installation`` (see the module docstring)."""

    name = "installation"

    @classmethod
    def wanted(cls, sc: "Scenario") -> bool:
        return sc.installation is not None and bool(sc.installation.windows)

    @classmethod
    def build(cls, ctx: BuildContext) -> "Installation":
        return cls(ctx)

    def __init__(self, ctx: BuildContext) -> None:
        self.engine = ctx.engine
        self.cluster = ctx.cluster
        spec = ctx.sc.installation
        assert spec is not None
        self.spec = spec
        self._begins = ctx.engine.calls(self._begin)
        self._ends = ctx.engine.calls(self._end)

    def start(self) -> None:
        for w in self.spec.windows:
            if w.start_h < self.engine.horizon_h:
                self._begins.at(w.start_h, w.first_node, w.nodes, w.duration_h)

    def _begin(self, first: int, nodes: int, duration_h: float) -> None:
        for node in range(first, first + nodes):
            self.cluster.add_down(node, INSTALLATION)
        self._ends.at(self.engine.now + duration_h, first, nodes)

    def _end(self, first: int, nodes: int) -> None:
        for node in range(first, first + nodes):
            self.cluster.remove_down(node, INSTALLATION)

    def results(self, so_far: ResultsSoFar) -> tuple[Metrics, Tables]:
        return {"installation.node_hours": self.spec.node_hours(self.engine.horizon_h),
                "installation.windows": float(len(self.spec.windows))}, {}


__all__ = ["INSTALLATION", "Installation"]
