"""Server fans in node power (issue 42): the fans' state and power per node, and the component that moves it.

:class:`FanLaw` is the fans' state (each node's healthy fans and inlet air) and the fan curve of
:mod:`twin.physics.fans`; the shared IT power (:class:`twin.model.it_power.ITPower`) owns one when fans are
modelled and adds its power to each node's, so that node power, IT energy, PUE, the power chain's loads and
the energy cost all carry the fans. The node's non-GPU load as stated includes its fans (at full speed at
full load with the default ``reference_inlet_c``: the nameplate convention, ``cluster.node.fans``), so the
fans add to it their simulated power less the stated one (:meth:`FanLaw.stated_w`).

The fans' speed follows the node's *demanded* load (its utilisation, uncapped) and its zone's held inlet air:
a fan control runs the fans hard when the GPUs are hot, so a thermal or power cap does not slow them
(assumption; it also keeps fan power independent of the thermal model's silent crossings).

:class:`Fans` is the component (built with a cooling section and ``cluster.node.fans.enabled``): it listens
on the bus to the fan part's redundant group (``Topic.GROUP``: a failed fan speeds the others up at once,
before the thermal model's fan factor warms the GPUs, which acts only below ``required`` fans) and to the air
zones' held inlet (``Topic.ZONE_INLET``), sets the fans' state through the law's methods (``FanLaw.set_healthy``,
``set_inlet``) and has the IT power refresh those nodes. It
reports the fans' energy (``energy.server_fans_kwh``) and their fastest speed (``fans.peak_speed``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from twin.model.component import BuildContext, Component, Metrics, ResultsSoFar, Tables
from twin.model.engine import Topic
from twin.model.fan_law import FanLaw, fan_law
from twin.model.it_power import IT_POWER

if TYPE_CHECKING:  # pragma: no cover
    from twin.scenario.schema import Scenario

class Fans(Component):
    """Component of the server fans (see the module docstring)."""

    name = "fans"
    requires = (IT_POWER,)

    @classmethod
    def wanted(cls, sc: "Scenario") -> bool:
        return sc.cooling is not None and sc.cluster.node.fans.enabled

    @classmethod
    def build(cls, ctx: BuildContext) -> "Fans":
        return cls(ctx)

    def __init__(self, ctx: BuildContext) -> None:
        self.it = ctx.service(IT_POWER)
        law = self.it.fans
        assert law is not None, "the IT power models no fans"
        self.law = law
        bus = ctx.engine.bus
        if law.part is not None:
            bus.subscribe(Topic.GROUP, self._on_group)
        bus.subscribe(Topic.ZONE_INLET, self._on_inlet)

    def _on_group(self, node: int, part: str, healthy: int) -> None:
        if part != self.law.part:
            return
        self.law.set_healthy(node, healthy)
        self.it.refresh(np.array([node], dtype=np.int64))

    def _on_inlet(self, start: int, stop: int, held_c: float) -> None:
        if self.law.set_inlet(start, stop, held_c):
            self.it.refresh(np.arange(start, stop, dtype=np.int64))

    def finish(self) -> None:
        self.law.energy_kwh()

    def results(self, so_far: ResultsSoFar) -> tuple[Metrics, Tables]:
        return {"energy.server_fans_kwh": self.law.energy_kwh(), "fans.peak_speed": self.law.peak_speed}, {}


__all__ = ["FanLaw", "Fans", "fan_law"]
