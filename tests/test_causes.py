"""Typed down causes (issue 40 item 4): a DownCause carries its kind, the part and planned or not; its label is
what the tables write; causes are interned (one object per kind and part)."""

from __future__ import annotations

import pickle

import pytest

from twin.model.causes import PLANNED, THERMAL_TRIP, CauseKind, DownCause
from twin.model.power import DOWN_CAUSES


def test_labels_are_the_tables_strings() -> None:
    assert DownCause.part_failed("gpu").label == "gpu"
    assert DownCause.common("psu").label == "ccf:psu"
    assert DownCause.repair("gpu").label == "repair:gpu"
    assert DownCause.power("utility").label == "power:utility"
    assert DownCause.straggler("gpu").label == "straggler:gpu"
    assert PLANNED.label == "planned" and DownCause.planned_drain("crah").label == "planned:crah_maintenance"
    assert THERMAL_TRIP.label == "thermal_trip" and str(THERMAL_TRIP) == "thermal_trip"


def test_kind_part_and_planned_are_read_not_parsed() -> None:
    c = DownCause.planned_drain("power")
    assert (c.kind, c.part, c.planned) == (CauseKind.PLANNED, "power", True)
    assert not DownCause.power("psu").planned and DownCause.power("psu").part == "psu"
    assert DownCause.from_label("planned:power_maintenance") is c
    assert DownCause.from_label("never made") is None


def test_interned_immutable_and_pickled_to_the_same_object() -> None:
    assert DownCause.repair("nic") is DownCause.of(CauseKind.REPAIR, "nic")
    assert pickle.loads(pickle.dumps(DownCause.repair("nic"))) is DownCause.repair("nic")
    with pytest.raises(AttributeError):
        DownCause.repair("nic").part = "gpu"
    assert sorted([DownCause.power("ups"), PLANNED, DownCause.part_failed("gpu")]) == [
        DownCause.part_failed("gpu"), PLANNED, DownCause.power("ups")]


def test_power_codes_map_to_causes() -> None:
    """The power chain's cause codes index a tuple of causes (no ``CAUSES[code - 1]`` strings)."""
    from twin.model.power import _MAINT, _PSU, CAUSES

    assert DOWN_CAUSES[_PSU] is DownCause.power("psu")
    assert DOWN_CAUSES[_MAINT].planned and DOWN_CAUSES[_MAINT].label == "planned:power_maintenance"
    assert len(DOWN_CAUSES) == len(CAUSES) + 1
