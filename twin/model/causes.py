"""Why a node is out of service, cut off the fabric, or why a job was interrupted: a typed
:class:`DownCause` (its kind, the part or unit it names, planned or not) instead of strings such as
``"power:psu"`` parsed where they are read.

A cause is made by one of the named constructors (``DownCause.part_failed("gpu")``,
``DownCause.power("psu")``, ``DownCause.planned_drain("crah")``...) and interned: the same kind and part
give the same object, so causes compare and hash by identity (the cluster counts them per node on the
hot path). ``label`` is the cause as the tables and metrics write it (``gpu``, ``ccf:psu``, ``repair:gpu``,
``power:utility``, ``planned:crah_maintenance``, ``thermal_trip``...): the recorder, the tables and the
metric names take the label, never the object; ``DownCause.from_label`` finds a recorded cause again
(a look-up of causes made in this process, not a parse).
"""

from __future__ import annotations

import enum
from typing import ClassVar


class CauseKind(enum.Enum):
    """What took a node out, cut it or interrupted a job."""

    PART = "part"
    """A part or unit failed (a node part, a rack part, an optic or leaf cutting a node, a leak): ``part``."""
    COMMON = "ccf"
    """A common-cause event took a redundant group of ``part`` below its minimum."""
    REPAIR = "repair"
    """The node is drained for the repair of its ``part``."""
    BURN_IN = "burn_in"
    """The node runs its burn-in after a repair."""
    POWER = "power"
    """Power lost to the node; ``part`` is the power cause (psu, pdu, utility, generator_start, feed, ...)."""
    PLANNED = "planned"
    """A planned drain: a rolling maintenance wave (no part) or a unit's maintenance window (``part``: the unit
    kind, e.g. ``crah``, ``power``)."""
    THERMAL_TRIP = "thermal_trip"
    """A GPU of the node tripped on temperature."""
    COOLING_DRAIN = "cooling_drain"
    """The operator drained the node for a cooling shortfall."""
    LEAK_DAMAGE = "leak_damage"
    """A leak destroyed the node: out until its replacement is in service."""
    QUARANTINE = "quarantine"
    """The node-health model holds the node for a deep repair."""
    STRAGGLER = "straggler"
    """A node slowed by its degraded ``part`` is swapped out."""
    SDC = "sdc"
    """A silent data corruption was detected: the job rolls back."""
    SDC_TEST = "sdc_test"
    """The node is out for a test after a corruption."""
    LINK_FLAP = "link_flap"
    """A compute-fabric link of the node flapped."""
    TRUNK_FLAP = "trunk_flap"
    """An uplink of a leaf flapped."""


_PREFIXED = {CauseKind.COMMON: "ccf:", CauseKind.REPAIR: "repair:", CauseKind.POWER: "power:",
             CauseKind.STRAGGLER: "straggler:"}


class DownCause:
    """One cause (see the module docstring): ``kind``, ``part`` ("" when the kind names none), ``planned``
    (a planned drain: the workload counts a planned interruption) and ``label``. Interned: build it with
    :meth:`of` or a named constructor, never directly."""

    __slots__ = ("kind", "label", "part", "planned")

    _interned: ClassVar[dict[tuple[CauseKind, str], DownCause]] = {}
    _by_label: ClassVar[dict[str, DownCause]] = {}

    kind: CauseKind
    part: str
    planned: bool
    label: str

    @classmethod
    def of(cls, kind: CauseKind, part: str = "") -> DownCause:
        """The cause of ``kind`` naming ``part`` (the one object for this pair)."""
        key = (kind, part)
        c = cls._interned.get(key)
        if c is None:
            c = object.__new__(cls)
            c.kind = kind
            c.part = part
            c.planned = kind is CauseKind.PLANNED
            if kind is CauseKind.PART:
                c.label = part
            elif kind is CauseKind.PLANNED:
                c.label = f"planned:{part}_maintenance" if part else "planned"
            elif kind in _PREFIXED:
                c.label = _PREFIXED[kind] + part
            else:
                c.label = kind.value
            other = cls._by_label.setdefault(c.label, c)
            assert other is c, f"two causes write the label {c.label!r}: {other!r} and {c!r}"
            cls._interned[key] = c
        return c

    @classmethod
    def from_label(cls, label: str) -> DownCause | None:
        """The cause this process made whose label is ``label`` (a recorded cause), None if none."""
        return cls._by_label.get(label)

    # the named constructors
    @classmethod
    def part_failed(cls, part: str) -> DownCause:
        return cls.of(CauseKind.PART, part)

    @classmethod
    def common(cls, part: str) -> DownCause:
        return cls.of(CauseKind.COMMON, part)

    @classmethod
    def repair(cls, part: str) -> DownCause:
        return cls.of(CauseKind.REPAIR, part)

    @classmethod
    def power(cls, cause: str) -> DownCause:
        return cls.of(CauseKind.POWER, cause)

    @classmethod
    def planned_drain(cls, unit: str = "") -> DownCause:
        return cls.of(CauseKind.PLANNED, unit)

    @classmethod
    def straggler(cls, part: str) -> DownCause:
        return cls.of(CauseKind.STRAGGLER, part)

    def __setattr__(self, name: str, value: object) -> None:
        if hasattr(self, "label"):
            raise AttributeError("a DownCause is immutable")
        object.__setattr__(self, name, value)

    def __reduce__(self) -> tuple[object, tuple[CauseKind, str]]:
        return (DownCause.of, (self.kind, self.part))  # unpickled: the interned object again

    def __lt__(self, other: DownCause) -> bool:
        return self.label < other.label  # sorted as their labels (the tables' order)

    def __str__(self) -> str:
        return self.label

    def __repr__(self) -> str:
        return f"DownCause({self.kind.name}, {self.part!r})"


BURN_IN = DownCause.of(CauseKind.BURN_IN)
THERMAL_TRIP = DownCause.of(CauseKind.THERMAL_TRIP)
COOLING_DRAIN = DownCause.of(CauseKind.COOLING_DRAIN)
LEAK_DAMAGE = DownCause.of(CauseKind.LEAK_DAMAGE)
QUARANTINE = DownCause.of(CauseKind.QUARANTINE)
SDC = DownCause.of(CauseKind.SDC)
SDC_TEST = DownCause.of(CauseKind.SDC_TEST)
LINK_FLAP = DownCause.of(CauseKind.LINK_FLAP)
TRUNK_FLAP = DownCause.of(CauseKind.TRUNK_FLAP)
PLANNED = DownCause.planned_drain()

__all__ = ["BURN_IN", "COOLING_DRAIN", "LEAK_DAMAGE", "LINK_FLAP", "PLANNED", "QUARANTINE", "SDC", "SDC_TEST", "THERMAL_TRIP", "TRUNK_FLAP",
           "CauseKind", "DownCause"]
