"""The ``cooling.plant`` section (issue 24): chillers (or dry coolers) and the chilled-water loop, the
power path of every cooling unit (which feed, on UPS or not, restart time), scheduled maintenance of
chillers, CRAH units and CDUs, and shared-infrastructure parts (facility water, controls, a row's
branch) whose failure takes everything they feed.

Units are in field names (``_s`` seconds, ``_h`` hours, ``_min`` minutes, ``_kw`` kW, ``_m3`` m³, ``_c``
°C). Every default has a source (sources-realism §4, §10) or says "assumption".
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field

from twin.scenario.base import Dist, Part, Repair, Strict
from twin.scenario.defaults import derive
from twin.scenario.units import UnitGroup, Visits
from twin.scenario.distributions import Exponential, Fixed

if TYPE_CHECKING:  # pragma: no cover
    from twin.scenario.schema import Scenario

Pos = Annotated[float, Field(gt=0, allow_inf_nan=False)]
NonNeg = Annotated[float, Field(ge=0, allow_inf_nan=False)]
PosInt = Annotated[int, Field(ge=1)]

PART_NAMES = ("chiller", "facility_water", "controls", "row_branch")
"""The part names of the plant's units (known to the cost section even when the cooling section failed)."""

LITRES_PER_KW = 5.0
"""Default loop water per kW of chiller capacity, litres (assumption: the 3–10 US gallons per ton rule
of thumb for chilled-water loop volume, about 3–11 L/kW)."""


def _chiller_repair() -> Repair:
    return Repair(hot_swap=True, time=Fixed(value_h=24.0))


def _shared_repair() -> Repair:
    return Repair(hot_swap=True, time=Fixed(value_h=8.0))


class UnitPower(Strict):
    """Power path of one kind of cooling unit: its feed, whether the UPS carries it, its restart."""

    feeds: Literal["round_robin"] | list[str] = Field(
        "round_robin", description="Feed of each unit (names of power feeds, cycled over the units), or round_robin over "
                                   "the power section's feeds. Without a power section units never lose power.")
    on_ups: bool = Field(
        False, description="true: on the feed's UPS (runs while the feed is live); false: on the feed's "
                           "mechanical bus after the UPS (stops when the utility is lost and runs again only "
                           "once the generator carries the feed or the utility is back, after restart_s).")
    dual_fed: bool = Field(
        False, description="true: the unit sits behind a transfer switch fed from its feed and the next one (two "
                           "feeds needed): when the feed it is on dies and the other is live it transfers, a break "
                           "after which it restarts (restart_s), failing to transfer with power.ats's probability "
                           "(then it waits for its feed); it stays on the other feed afterwards (retransfer not "
                           "modelled). false: single-fed.")
    restart_s: NonNeg = Field(
        30.0, description="Seconds from power back to the unit delivering again (assumption; a `twin "
                          "sensitivity` factor).")


class UnitMaintenance(Visits):
    """Scheduled maintenance of one kind of cooling unit, one unit at a time (staggered)."""

    when_short: Literal["run_short", "drain"] = Field(
        "run_short", description="What a visit does when the unit's group has no working spare at its start "
                                 "(decided then, for the whole visit): run_short, the group runs short for the "
                                 "window (the thermal model sees less capacity); drain, the nodes the unit cools "
                                 "(a CRAH unit's air zone, a CDU's loop, every node for a chiller) are drained as "
                                 "planned maintenance (down cause planned:<kind>_maintenance, a planned "
                                 "interruption) and return cooling.node.reboot_h after the visit. A group with a "
                                 "working spare stays up, exposed, either way. Default run_short (assumption: "
                                 "no source says how operators schedule a visit without a spare; drain is the "
                                 "cautious policy, compare both).")


class Chillers(UnitGroup):
    """Chillers or dry coolers of the plant (k of n, all of them one common-cause group), cooling the
    chilled-water loop."""

    count: PosInt = Field(3, description="Chillers (assumption: N+1 with N = 2).")
    required: PosInt = Field(2, description="Chillers needed for the design load (assumption).")
    capacity_kw: Pos | None = Field(
        None, description="Cooling capacity of one chiller, kW (default: the cluster's full IT power / required).")
    failure: Dist = Field(default_factory=lambda: Exponential(mean_h=20000.0),
                          description="Time to failure of one chiller (assumption: MTBF 20,000 h).")
    repair: Repair = Field(default_factory=_chiller_repair,
                           description="Repair of one chiller (assumption: 24 h hands-on).")
    power: UnitPower = Field(
        default_factory=lambda: UnitPower(restart_s=300.0),
        description="Power path of the chillers (default: off UPS, restart 300 s: assumption within the 45 s – "
                    "30 min of the sources (Trane RTAE ≥ 45 s to first compressor, Opengate 2–3 min, Rackspace "
                    "2007 about 30 min; sources-realism §4); a `twin sensitivity` factor).")


class Loop(Strict):
    """The chilled-water loop: first-order thermal inertia (twin.physics.chilled_water)."""

    volume_m3: Pos | None = Field(
        None, description="Water in the loop (and any thermal storage), m³ (default: 5 L per kW of chiller "
                          "capacity, assumption from the 3–10 US gal/ton rule of thumb).")
    tau_min: Pos = Field(
        30.0, description="Time constant of the loop's first-order response, minutes (assumption: the loop "
                          "warms at heat/C at first and levels off at heat·τ/C; a `twin sensitivity` factor).")
    step_c: Annotated[float, Field(gt=0, le=0.5, allow_inf_nan=False)] = Field(
        0.5, description="The rooms see the loop's offset above its set point on a grid of this step, switched at "
                         "the exact crossing times (never more than step/2 off), °C.")


class SharedPart(Strict):
    """A shared-infrastructure part whose failure takes everything it feeds (repaired by the crews)."""

    failure: Dist = Field(description="Time to failure, hours.")
    repair: Repair = Field(default_factory=_shared_repair, description="Repair (default: 8 h hands-on, assumption).")


class Shared(Strict):
    """Shared infrastructure (issue 24 item 1); each null: not modelled."""

    facility_water: SharedPart | None = Field(
        None, description="The facility (condenser) water loop: its failure stops every chiller's heat rejection.")
    controls: SharedPart | None = Field(
        None, description="Plant controls / BMS: its failure stops every chiller (CRAH units and CDUs run on "
                          "local control: assumption).")
    row_branch: SharedPart | None = Field(
        None, description="A row's chilled-water branch, one per air zone and per liquid loop: its failure takes "
                          "every CRAH unit of the zone, or every CDU of the loop.")


class Plant(Strict):
    """The cooling plant fed by the power chain (issue 24)."""

    chillers: Chillers = Field(default_factory=Chillers, description="Chillers or dry coolers.")
    loop: Loop = Field(default_factory=Loop, description="The chilled-water loop.")
    crah_power: UnitPower = Field(
        default_factory=UnitPower, description="Power path of the CRAH units (default: off UPS, fans back 30 s "
                                               "after power: assumption).")
    cdu_power: UnitPower = Field(
        default_factory=lambda: UnitPower(on_ups=True),
        description="Power path of the CDUs and their pumps (default: on UPS, as Schneider WP179 advises for "
                    "pumps; restart 30 s: assumption).")
    maintenance: dict[Literal["chiller", "crah", "cdu"], UnitMaintenance] = Field(
        default_factory=dict, description="Scheduled maintenance per unit kind; none by default. A unit in "
                                          "maintenance delivers nothing: with a spare the group stays up, exposed; "
                                          "without one it runs short for the window or drains the load it "
                                          "cools (when_short).")
    shared: Shared = Field(default_factory=Shared, description="Shared-infrastructure parts.")

    def part_specs(self) -> dict[str, Part]:
        """Part specs of the plant's units (names a spare pool or a crew may use)."""
        c = self.chillers
        out = {"chiller": Part(count=c.count, required=c.required, effect="redundant", failure=c.failure,
                               repair=c.repair, common_cause_beta=c.common_cause_beta,
                               latent_test_interval_h=c.latent_test_interval_h)}
        for name in ("facility_water", "controls", "row_branch"):
            sp: SharedPart | None = getattr(self.shared, name)
            if sp is not None:
                out[name] = Part(count=1, effect="node_down", failure=sp.failure, repair=sp.repair)
        return out

    def check_against(self, sc: "Scenario") -> None:
        """Cross-checks against the power section and the cluster (called from Scenario validation)."""
        feeds = sc.power.feeds if sc.power is not None else []
        self.chillers.check_tests("cooling.plant.chillers", self.chillers.count)
        for name in ("crah_power", "cdu_power"):
            self._check_feeds(f"cooling.plant.{name}.feeds", getattr(self, name), feeds)
        self._check_feeds("cooling.plant.chillers.power.feeds", self.chillers.power, feeds)
        c = sc.cooling
        assert c is not None
        if "crah" in self.maintenance and c.air is None:
            raise ValueError("@cooling.plant.maintenance.crah: the hall has no CRAH units (no air plant)")
        if "cdu" in self.maintenance and c.liquid is None:
            raise ValueError("@cooling.plant.maintenance.cdu: the hall has no CDUs (no liquid plant)")
        if self.chillers.capacity_kw is None:
            full_kw = sc.cluster.full_power_w() / 1000.0  # every node at full power (each pool's own)
            derive(self.chillers, capacity_kw=full_kw / self.chillers.required)
        if self.loop.volume_m3 is None:
            cap = self.chillers.capacity_kw
            assert cap is not None
            derive(self.loop, volume_m3=LITRES_PER_KW / 1000.0 * cap * self.chillers.count)

    @staticmethod
    def _check_feeds(where: str, p: UnitPower, feeds: list[str]) -> None:
        if p.dual_fed and len(feeds) < 2:
            raise ValueError(f"@{where.rsplit('.', 1)[0]}.dual_fed: needs two power feeds, the scenario has "
                             f"{len(feeds)}")
        if p.feeds == "round_robin":
            return
        if not feeds:
            raise ValueError(f"@{where}: names feeds but the scenario has no power section (use round_robin)")
        for i, x in enumerate(p.feeds):
            if x not in feeds:
                raise ValueError(f"@{where}.{i}: no power feed {x!r}; feeds: {feeds}")
