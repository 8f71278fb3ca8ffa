"""Recovery from a hall-wide power loss (issue 48 item 1).

A hall-wide loss is every feed dead at once (``Topic.FEED``: mode ``dead`` on every feed: utility lost
beyond the ride-through without a generator, a tripped or isolated single feed, both feeds of 2N...).
When power returns on a feed (time T after the loss began), every node is held down with cause
``power:restart`` and released in stages (``power.recovery``): the facility plant, the fabric and the
storage one after the other, then the nodes in ``node_batches`` batches of whole racks (at most one batch
per rack; near-equal numbers of racks, in rack order), batch j back
T + facility_h + fabric_h + storage_h + j × batch_h (j = 1, 2, ...). The power chain's own hold ends
``reboot_h`` after power, under this one, so a node returns at the later of the two. At its batch's
power-up, each unit of a part in ``power_cycle_failure_prob`` fails with that probability (one uniform of
stream ``power.recovery.<part>#cycle`` per unit, draw k = loss index × units + unit): the failure takes
the part's own path (crews, spares), before the node is released. The workload restarts jobs when
their nodes return, as after any down. A new hall-wide loss during a restart cancels the releases not
yet done; the held nodes stay held until the next return.

This component only listens to the bus (``FEED``) and holds nodes through the cluster's down reasons:
it calls no other model component.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from twin.model.causes import DownCause
from twin.model.cluster import node_blocks
from twin.model.component import BuildContext, Component, Metrics, ResultsSoFar, Tables
from twin.model.engine import Topic

if TYPE_CHECKING:  # pragma: no cover
    from twin.scenario.schema import Scenario

CAUSE = DownCause.power("restart")
"""The down reason of a node held for the staged restart."""


class Recovery(Component):
    """The staged restart after a hall-wide power loss (see the module docstring)."""

    name = "recovery"

    @classmethod
    def wanted(cls, sc: "Scenario") -> bool:
        return sc.power is not None and sc.power.recovery is not None

    @classmethod
    def build(cls, ctx: BuildContext) -> "Recovery":
        return cls(ctx)

    def __init__(self, ctx: BuildContext) -> None:
        self.engine = ctx.engine
        self.cluster = cl = ctx.cluster
        power = ctx.sc.power
        assert power is not None and power.recovery is not None
        self.spec = power.recovery
        self.dead = {f: False for f in power.feeds}
        self.lost = False  # every feed is dead now
        self.held = np.zeros(cl.n_nodes, dtype=bool)
        self.gen = 0  # bumped by each loss: releases of an older restart are void
        racks = ctx.sc.cluster.racks  # at most one batch per rack
        self.batches = [np.arange(a, b) for a, b in node_blocks(racks, min(self.spec.node_batches, racks),
                                                                 cl.nodes_per_rack)]
        self.cycle = [(name, ctx.parts[name], p) for name, p in sorted(self.spec.power_cycle_failure_prob.items())
                      if p > 0]
        self.losses = 0
        self.restarts = 0
        self.cycle_failures = 0
        self.held_node_h = 0.0  # node-hours of the restart hold
        self._since = 0.0
        self._n_held = 0
        ctx.engine.bus.subscribe(Topic.FEED, self._on_feed)

    def _account(self) -> None:
        now = self.engine.now
        self.held_node_h += self._n_held * (now - self._since)
        self._since = now

    def _on_feed(self, feed: str, mode: str) -> None:
        self.dead[feed] = mode == "dead"
        if all(self.dead.values()):
            if not self.lost:
                self.lost = True
                self.losses += 1
                self.gen += 1  # releases of a restart in progress are cancelled: power is gone again
                self.engine.recorder.event(self.engine.now, "hall_power_lost", "power.recovery")
        elif self.lost:
            self.lost = False
            self._restart()

    def _restart(self) -> None:
        """Power is back after a hall-wide loss: hold every node, release the batches in stages."""
        eng = self.engine
        self._account()
        self.restarts += 1
        for i in np.flatnonzero(~self.held).tolist():
            self.cluster.add_down(i, CAUSE)
        self.held[:] = True
        self._n_held = len(self.held)
        gen, k = self.gen, self.restarts - 1
        eng.recorder.event(eng.now, "hall_restart", "power.recovery")
        for j, off in enumerate(self.spec.batch_offsets_h()[: len(self.batches)]):
            eng.calls(self._release).at(eng.now + off, j, gen, k)

    def _release(self, j: int, gen: int, k: int) -> None:
        if gen != self.gen:
            return
        self._account()
        nodes = self.batches[j]
        for name, pop, p in self.cycle:  # cold power-up: parts that fail now go to the crews
            per = pop.per_node
            for i in nodes.tolist():
                for s in range(per):
                    idx = i * per + s
                    if pop.healthy[idx] and self.engine.streams.scalar(f"power.recovery.{name}#cycle",
                                                                       k * pop.n + idx) < p:
                        self.cycle_failures += 1
                        pop.fail_now(idx)
        for i in nodes.tolist():
            if self.held[i]:
                self.held[i] = False
                self._n_held -= 1
                self.cluster.remove_down(i, CAUSE)

    def finish(self) -> None:
        self._account()

    def results(self, so_far: ResultsSoFar) -> tuple[Metrics, Tables]:
        m = {"power.hall_losses": float(self.losses), "power.restart_node_hours": self.held_node_h}
        if self.cycle:
            m["power.power_cycle_failures"] = float(self.cycle_failures)
        return m, {}


__all__ = ["CAUSE", "Recovery"]
