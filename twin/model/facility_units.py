"""Redundant facility units (issue 40 item 5): what the power chain's feed units (UPS, generator,
switchboard, ``twin.model.power``) and the cooling plant's units (chillers, CRAH units, CDUs,
``twin.model.cooling.chillers``) share, written once.

* Their failures are part populations (:class:`twin.model.parts.FacilityParts`): lifetimes from the
  unit's own random stream, common-cause groups (β-factor), latent failures, repairs by the crews.
* Their **k-of-n groups**: :func:`spare_without` says whether a group keeps ``required`` units
  delivering without one of them (a visit that finds no spare runs short or drains the load).
* Their **scheduled maintenance**: :class:`MaintenanceRota` visits the ``n`` units of one kind one at a
  time, unit i first at offset + i·interval/n (offset: interval/(2n) unless set, so the first visits sit
  evenly over the first interval), then every
  interval; each visit takes the unit out for ``duration_h``. What a visit does to the unit and its
  load is the owner's (a feed isolated or a unit bypassed; a cooling unit out, its nodes drained when
  no spare is left), given as hooks.
* The **accounting record** of those windows: :class:`MaintenanceAccount` (windows, unit-hours, and
  how the load stood through each window: exposed, short or drained).

Everything here is event-driven: a visit is two scheduled calls (its start books its end and the next
visit of the same unit). Times are hours.
"""

from __future__ import annotations

from typing import Callable, Literal, Protocol, Sequence

from twin.model.engine import Engine
from twin.scenario.units import first_visit_h

Load = Literal["exposed", "short", "drained"]
"""How the load under a unit stood through a maintenance window: ``exposed``, it stayed up without its
margin (a spare unit or a second feed carried it); ``short``, the group ran short of a unit for the
window; ``drained``, the load under the unit was taken down for the window (a planned interruption)."""


class Window(Protocol):
    """The schedule of a kind's visits (the scenario's maintenance section of that kind)."""

    @property
    def interval_h(self) -> float: ...

    @property
    def duration_h(self) -> float: ...

    @property
    def offset_h(self) -> float | None: ...


def spare_without(ok: Sequence[bool], members: Sequence[int], unit: int, required: int) -> bool:
    """True when the k-of-n group ``members`` keeps ``required`` units delivering without ``unit``: the
    others for which ``ok`` (healthy and in service) are at least ``required``."""
    return sum(1 for j in members if j != unit and ok[j]) >= required


class MaintenanceAccount:
    """The accounting record of one owner's maintenance windows (every kind it maintains): windows
    begun, unit-hours in maintenance, and those hours by how the load stood (:data:`Load`); drains
    and the node-hours they took, for an owner that drains nodes itself. A window still open at the
    horizon is closed there (:meth:`close_all`), in the order the windows began."""

    def __init__(self) -> None:
        self.windows = 0
        """Visits begun."""
        self.hours = 0.0
        """Unit-hours in maintenance, h."""
        self.exposure_h = 0.0
        """Of those, hours with the load up without its margin, h."""
        self.short_h = 0.0
        """Hours the unit's group ran short of a unit, h."""
        self.drained_h = 0.0
        """Hours the load under the unit was drained, h."""
        self.drains = 0
        """Visits that drained nodes (an owner that drains them counts here)."""
        self.drained_node_h = 0.0
        """Node-hours those drains took, to the horizon, h."""
        self._open: dict[tuple[str, int], tuple[float, Load]] = {}  # (kind, unit): start (h), load

    def open(self, kind: str, unit: int, now_h: float, load: Load) -> None:
        """A window of unit ``unit`` of ``kind`` begins at ``now_h`` with its load standing as ``load``."""
        self.windows += 1
        self._open[(kind, unit)] = (now_h, load)

    def close(self, kind: str, unit: int, now_h: float) -> None:
        """The window of unit ``unit`` of ``kind`` ends at ``now_h``: its hours are counted."""
        t0, load = self._open.pop((kind, unit))
        d_h = now_h - t0
        self.hours += d_h
        if load == "exposed":
            self.exposure_h += d_h
        elif load == "short":
            self.short_h += d_h
        else:
            self.drained_h += d_h

    def close_all(self, now_h: float) -> None:
        """Close every open window at ``now_h`` (the horizon)."""
        for kind, unit in list(self._open):
            self.close(kind, unit, now_h)


class MaintenanceRota:
    """Scheduled visits to the ``n`` units of one kind, one unit at a time (see the module docstring).

    The owner's hooks take the kind and the unit. A visit's start records ``maintenance_start`` (path
    ``path(kind, i)``, the window's duration), sets ``on[i]``, calls ``take_out(kind, i)`` (the owner
    takes the unit out; returns how its load stands, for the account), schedules the visit's end and the
    unit's next visit inside the horizon, then calls ``after(kind, i, True)``. Its end closes the window
    in the account, clears ``on[i]``, calls ``put_back(kind, i)``, records ``maintenance_end``, then
    calls ``after(kind, i, False)``. The hooks run in that order so an owner's reactions come where
    they did when each owner wrote this itself.
    """

    def __init__(self, engine: Engine, kind: str, window: Window, n: int, account: MaintenanceAccount,
                 path: Callable[[str, int], str], take_out: Callable[[str, int], Load],
                 put_back: Callable[[str, int], None], after: Callable[[str, int, bool], None] | None = None) -> None:
        self.engine = engine
        self.kind = kind
        self.window = window
        self.n = n
        self.account = account
        self.on = [False] * n
        """Per unit: in a maintenance window now."""
        self.load: list[Load | None] = [None] * n
        """Per unit: how its load stood in its current (or last) window (``take_out``'s answer)."""
        self._path = path
        self._take_out = take_out
        self._put_back = put_back
        self._after = after
        self._begins = engine.calls(self._begin)
        self._ends = engine.calls(self._end)

    def start(self) -> None:
        """Schedule every unit's first visit inside the horizon (unit i at offset + i·interval/n)."""
        horizon_h = self.engine.horizon_h
        for i in range(self.n):
            t = first_visit_h(self.window.interval_h, self.window.offset_h, i, self.n)
            if t < horizon_h:
                self._begins.at(t, i)

    def _begin(self, i: int) -> None:
        eng = self.engine
        w = self.window
        now = eng.now
        eng.recorder.event(now, "maintenance_start", self._path(self.kind, i), -1, w.duration_h)
        self.on[i] = True
        load = self.load[i] = self._take_out(self.kind, i)
        self.account.open(self.kind, i, now, load)
        self._ends.at(now + w.duration_h, i)
        if now + w.interval_h < eng.horizon_h:
            self._begins.at(now + w.interval_h, i)
        if self._after is not None:
            self._after(self.kind, i, True)

    def _end(self, i: int) -> None:
        eng = self.engine
        self.account.close(self.kind, i, eng.now)
        self.on[i] = False
        self._put_back(self.kind, i)
        eng.recorder.event(eng.now, "maintenance_end", self._path(self.kind, i))
        if self._after is not None:
            self._after(self.kind, i, False)


__all__ = ["Load", "MaintenanceAccount", "MaintenanceRota", "spare_without"]
