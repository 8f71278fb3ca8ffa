"""Schema bases of facility units (issue 40 item 5), shared by the power and cooling sections: a unit type
that fails and is repaired with a common-cause factor (:class:`FacilityUnit`: the power chain's UPS,
generator, switchboard and PDUs), a k-of-n group of such units (:class:`UnitGroup`: CRAH units, CDUs,
pumps, chillers), and the schedule of their maintenance visits (:class:`Visits`: the power units', the
plant's chillers, CRAH units and CDUs). The model side is ``twin.model.facility_units``.

Each section keeps its own defaults (with their sources) and what its group is; the field names, their
paths in a scenario and the checks' messages are the ones each section had.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, model_validator

from twin.scenario.base import Beta, Dist, PosHours, PosInt, Repair, Strict
from twin.scenario.distributions import Exponential

Pos = Annotated[float, Field(gt=0, allow_inf_nan=False)]
NonNeg = Annotated[float, Field(ge=0, allow_inf_nan=False)]


def check_beta(beta: float, failure: Any) -> None:
    """A β-factor splits a constant rate λ: refused (at ``common_cause_beta``) unless the failure is exponential."""
    if beta > 0 and failure is not None and not isinstance(failure, Exponential):
        raise ValueError(f"@common_cause_beta: needs an exponential failure distribution (the β-factor splits a "
                         f"constant rate λ), got {failure.dist!r}")


class FacilityUnit(Strict):
    """A facility unit type that fails and is repaired through the crews, its units in common-cause groups
    (the section says which units form a group)."""

    common_cause_beta: Beta = Field(
        0.0, description="β-factor of common-cause failures of the units' group (the section says which units "
                         "form one): each unit fails alone at (1 − β)λ, a common event at βλ fails every working "
                         "one (exponential failure only). 0: independent (assumption when set: 1–10 % commonly "
                         "quoted, IEC 62061 ≤ 2 %).")

    @model_validator(mode="after")
    def _check(self) -> "FacilityUnit":
        check_beta(self.common_cause_beta, getattr(self, "failure", None))
        return self


class UnitGroup(FacilityUnit):
    """A k-of-n group of facility units: ``count`` units, of which ``required`` carry the design load.
    A section gives the defaults of its own units (count, required, failure, repair)."""

    count: PosInt
    required: PosInt
    failure: Dist
    repair: Repair
    latent_test_interval_h: PosHours | None = Field(
        None, description="Failures are silent (no alarm: a standby unit, an unmonitored fault): found at the next "
                          "periodic test (every this many hours from time 0) and only then repaired. null: detected "
                          "as usual (maintenance.detection). Assumption when set: monthly to quarterly, 730–2,190 h "
                          "(no published test interval of cooling units was found, sources-realism §10).")
    test_duration_h: NonNeg = Field(
        0.0, description="Hours a periodic test takes each working unit out of service (it delivers nothing "
                         "meanwhile), the units of the kind tested one after the other; a unit found failed goes to "
                         "repair instead. 0: tests take no time (assumption when set: 0.5–4 h).")

    @model_validator(mode="after")
    def _check(self) -> "UnitGroup":
        if self.required > self.count:
            raise ValueError(f"@required: must be <= count ({self.count}), got {self.required}")
        check_beta(self.common_cause_beta, self.failure)
        if self.test_duration_h and self.latent_test_interval_h is None:
            raise ValueError("@test_duration_h: needs latent_test_interval_h (the periodic test it lasts)")
        return self

    def check_tests(self, where: str, units: int) -> None:
        """The ``units`` units of this kind (every group's) are tested one after the other: refused (at
        ``where``.test_duration_h) unless that fits in one test interval."""
        if self.test_duration_h and self.latent_test_interval_h is not None and \
                units * self.test_duration_h >= self.latent_test_interval_h:
            raise ValueError(f"@{where}.test_duration_h: its {units} units tested one after the other "
                             f"({units} × {self.test_duration_h:g} h) must fit in latent_test_interval_h "
                             f"({self.latent_test_interval_h:g} h)")


class Visits(Strict):
    """Scheduled maintenance of one kind of facility unit, one unit at a time: unit i of n first visited
    at offset + i·interval/n (default offset: half of interval/n, so the n first visits sit mid-slot,
    evenly over the first interval), then every interval (``twin.model.facility_units.MaintenanceRota``)."""

    interval_h: Pos = Field(
        8760.0, description="Hours between visits to one unit (a power unit: the unit of one feed). Default yearly: "
                            "NFPA 70B asks it of electrical equipment at least every 12 months; UPS contracts have "
                            "1–2 visits a year (8760 or 4380); for cooling units an assumption (sources-realism §10).")
    duration_h: Pos = Field(
        8.0, description="Hours each visit takes the unit out (assumption: 8 h, range 4–24 h; no published "
                         "window durations were found, sources-realism §10).")
    offset_h: NonNeg | None = Field(
        None, description="Time of the first visit (unit 0; a power unit: feed A's), hours; unit i of n follows "
                          "i·interval/n later. Default: interval/(2n), the n units' first visits evenly over the first "
                          "interval at the middle of their slots (one unit: half an interval; two feeds of a yearly "
                          "visit: 2,190 h and 6,570 h).")

    def first_visit_h(self, unit: int, units: int) -> float:
        """Hours to the first visit of unit ``unit`` of ``units`` (see ``offset_h``)."""
        return first_visit_h(self.interval_h, self.offset_h, unit, units)


def first_visit_h(interval_h: float, offset_h: float | None, unit: int, units: int) -> float:
    """Hours to the first visit of unit ``unit`` of ``units`` visited every ``interval_h``, one at a time:
    ``offset_h`` + unit·interval/units, the offset by default interval/(2·units) (mid-slot)."""
    first = offset_h if offset_h is not None else interval_h / (2.0 * units)
    return first + unit * interval_h / units


__all__ = ["FacilityUnit", "UnitGroup", "Visits", "check_beta", "first_visit_h"]
