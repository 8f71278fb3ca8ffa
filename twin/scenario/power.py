"""Power section of the scenario: node PSUs on feeds, and per feed utility → UPS → generator →
switchboard → PDUs → racks (model.md §5).

Written in a scenario as::

    power:
      topology: split            # n | n+1 | 2n | split (see TOPOLOGIES)
      psu_part: psu              # the node part (effect redundant) whose units are the PSUs
      psu_feeds: round_robin     # PSU slot i -> feeds[i % len(feeds)], or an explicit list per slot
      capacity_w: 3300
      utility: {outages_per_year: 2, duration: {dist: lognormal, mean_h: 1, sigma: 1.2}}
      ups: {ride_through_min: 10, recharge_h: 8}
      generator: {start_delay_s: 10, start_failure_prob: 0.01}
      inject: [{feed: A, at_h: 1000, duration_h: 4}]     # stress test: scheduled utility outages

Every element of the chain (UPS, generator, switchboard, PDU) fails and is repaired through the
same engine, crews and spares as node parts (``failure: null``: never fails). ``ups: null`` or
``generator: null`` removes that element from every feed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field, model_validator

from twin.scenario.base import Dist, Part, PosHours, PosInt, Repair, Strict
from twin.scenario.defaults import moved, over_default
from twin.scenario.distributions import Exponential, Fixed, Lognormal
from twin.scenario.grid import Grid
from twin.scenario.recovery import BlockLoad, Oversubscription, Recovery
from twin.scenario.units import FacilityUnit, Visits

if TYPE_CHECKING:  # pragma: no cover
    from twin.scenario.schema import Scenario

NonNeg = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Pos = Annotated[float, Field(gt=0, allow_inf_nan=False)]
Prob = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]

TOPOLOGIES: dict[str, dict[str, Any]] = {
    # Plain data: the feeds of each preset and the PSU property the preset promises (checked).
    "n": {
        "feeds": ["A"],
        "check": "exact",
        "about": "one feed; PSUs exactly `required` (no spare PSU): any PSU loss caps or stops the node",
    },
    "n+1": {
        "feeds": ["A"],
        "check": "spare",
        "about": "one feed; at least one PSU beyond `required`: survives a PSU failure at full power",
    },
    "2n": {
        "feeds": ["A", "B"],
        "check": "each_feed",
        "about": "feeds A and B; each feed's PSUs alone meet `required`: survives a feed loss at full power",
    },
    "split": {
        "feeds": ["A", "B"],
        "check": "none",
        "about": "feeds A and B, PSUs split (DGX H100 class 4+2 as 3/3): a feed loss leaves the node "
                 "power-capped, not down (model.md §5)",
    },
}


class ElementRepair(Strict):
    """Repair of a site-level power unit (no node is drained; no burn-in)."""

    time: Dist = Field(
        default_factory=lambda: Fixed(value_h=8.0),
        description="Hands-on repair time once a crew and a spare are there, hours (assumption: 8 h fixed).",
    )
    crew: str | None = Field(None, description="Crew pool that repairs this unit (default: the first pool).")


def _generator_repair() -> ElementRepair:
    return ElementRepair(time=Fixed(value_h=12.0))


def _pdu_repair() -> ElementRepair:
    return ElementRepair(time=Fixed(value_h=2.0))


class ElementMaintenance(Visits):
    """Scheduled maintenance of one unit type, one feed at a time (concurrent maintenance)."""

    mode: Literal["isolate", "bypass", "live"] | None = Field(
        None, description="isolate: the feed below the unit is de-energised for the work (with N the load under it "
                          "is drained, a planned interruption, and returns reboot_h after; with 2N the other feed "
                          "carries it); bypass: the unit is out of service and the feed stays on utility, exposed "
                          "(a UPS on maintenance bypass: an outage reaches the load at once; a generator cannot "
                          "start); live: energised work (thermography, live inspection), the unit stays in service "
                          "(only a switching error can drop the load). A UPS with a spare power module, or a generator "
                          "plant with a spare set (count > required), in bypass mode is serviced one module at a time: "
                          "the module is out, the others carry the load, nothing is bypassed. Default: bypass for the "
                          "generator, isolate otherwise.")
    switching_error_prob: Prob = Field(
        0.0, description="Probability that the switching of a visit goes wrong and drops the load the switching "
                         "touches: the feed worked on (bypass, live), or the feed that carries its load while it is "
                         "isolated (2N: the other feed; with one feed the load is drained anyway). Assumption: no "
                         "published rate per operation (human error plays a role in about two-thirds of outages, "
                         "Uptime UII 140, sources-next §6); range 0.001–0.02. One draw per visit.")
    switching_restore_min: NonNeg = Field(
        30.0, description="Minutes from a switching error to the load back on its feed (assumption: 30 min, range "
                          "10–120 min).")


class Element(FacilityUnit):
    """A unit of the feed chain that fails and is repaired (its units on feeds A and B are a common-cause
    group; for PDUs, the two PDUs of the same racks)."""

    failure: Dist | None = Field(
        None, description="Time to failure, hours; null: the unit never fails."
    )
    repair: ElementRepair = Field(default_factory=ElementRepair)
    dispatch_priority: int | None = Field(
        None, description="Crew dispatch priority (lower first). Default: PDU and switchboard 0, UPS and generator 2."
    )
    maintenance: ElementMaintenance | None = Field(
        None, description="Scheduled maintenance of this unit on every feed, one feed at a time (PDUs: one PDU at a "
                          "time; isolated, its racks lose that feed for the visit); null: none.")
    latent_test_interval_h: PosHours | None = Field(
        None, description="Failures are silent (unmonitored): found at the next periodic test (every this many hours "
                          "from time 0) or when a demand finds it, and only then repaired. null: detected as usual.")
    test_duration_h: NonNeg = Field(
        0.0, description="Hours a periodic test takes each unit out of service, the units of the type tested one "
                         "after the other (a unit found failed goes to repair instead). 0: tests take no time "
                         "(assumption when set: 0.5–4 h, e.g. a generator load test 1–2 h, NFPA 110 monthly 30 min).")


class Utility(Strict):
    """Utility (grid) outages: an alternating renewal process, up times exponential."""

    outages_per_year: NonNeg = Field(
        2.0, description="Mean utility outages per year (assumption; not in sources.md). 0: no outages."
    )
    duration: Dist = Field(
        default_factory=lambda: Lognormal(mean_h=1.0, sigma=1.2),
        description="Outage duration, hours (assumption: lognormal, mean 1 h, sigma 1.2: mostly short, a long tail).",
    )
    shared: bool = Field(
        True,
        description="true: one utility service for the site, an outage hits every feed at once (assumption: "
                    "A and B from one substation); false: each feed has its own, independent utility.",
    )


class Standby(Element):
    """A standby unit of the feed chain (UPS, generator), whose failures may be silent."""

    latent_test_interval_h: PosHours | None = Field(
        None, description="Failures are silent (standby, unmonitored): found at the next periodic test (every this "
                          "many hours from time 0, e.g. a monthly load test: 730) or when an outage calls on the "
                          "unit, and only then repaired. null: detected as usual. For the generator this is in "
                          "addition to start_failure_prob (a unit that is up may still fail to start).")


def _module_repair() -> ElementRepair:
    return ElementRepair(time=Fixed(value_h=4.0))


class UPSModules(FacilityUnit):
    """A modular UPS: ``count`` power modules in parallel, of which ``required`` carry the feed's load
    (``twin.model.ups_modules``). N is count = required, N+1 count = required + 1; 2N is two feeds
    (topology 2n) each with its own UPS of ``required`` modules, 2(N+1) the same with a spare module each.
    Its modules are one common-cause group per UPS."""

    count: PosInt = Field(description="Power modules in the UPS (n).")
    required: PosInt = Field(description="Modules that carry the design load (k); fewer working modules is a "
                                         "shortfall: the UPS transfers its load to the static bypass.")
    failure: Dist = Field(
        default_factory=lambda: Exponential(mean_h=100000.0),
        description="Time to failure of one module, hours (assumption: MTBF 100,000 h, range 50,000–250,000 h; "
                    "the module MTBF of the Powerkinetics N+1 example, sources-next §12: no vendor figure found).")
    repair: Annotated[ElementRepair, over_default(_module_repair)] = Field(
        default_factory=_module_repair,
        description="Repair of a module: a hot-swap from spares (assumption: 4 h fixed, range 1–24 h).")
    dispatch_priority: int | None = Field(None, description="Crew dispatch priority (lower first). Default 2.")

    @model_validator(mode="after")
    def _check_k(self) -> "UPSModules":
        if self.required > self.count:
            raise ValueError(f"@required: must be <= count ({self.count}), got {self.required}")
        return self


class StaticBypass(Strict):
    """The UPS's static bypass: on a module shortfall it transfers the load to the UPS input (utility or
    generator), where it runs without conditioning or battery (an outage then reaches it at once)."""

    failure_to_transfer_prob: Prob = Field(
        0.0, description="Probability that the transfer to bypass fails and the load drops (assumption: no "
                         "published rate, sources-next §6 'static bypass transfer failure: —'; range 0–0.05; UPS "
                         "are in 42 % of impactful power outages, Uptime 2025). Drawn at each module shortfall.")
    manual_bypass_min: NonNeg = Field(
        15.0, description="Minutes from a dropped load to an operator closing the bypass by hand, the load back on "
                          "the UPS input (assumption: 15 min, range 5–60 min).")


class UPSFault(Strict):
    """UPS faults that drop the load (an inverter, control or output fault that does not transfer cleanly)."""

    per_year: NonNeg = Field(
        0.02, description="Faults per UPS per year that drop the load it feeds (assumption: 0.02, range 0.005–0.1; "
                          "no published per-UPS rate was found: UPS are in 42 % of impactful power outages, Uptime "
                          "2025, sources-next §6). The load returns after bypass.manual_bypass_min on the bypass.")
    repair_h: Pos = Field(
        8.0, description="Hours from the fault to the UPS back online; meanwhile the load runs on bypass, exposed "
                         "(assumption: 8 h, range 2–48 h).")


class UPS(Standby):
    ride_through_min: NonNeg = Field(
        10.0, description="Minutes the full battery carries its rated (full) load (assumption: a 10-minute UPS)."
    )
    recharge_h: Pos = Field(8.0, description="Hours to recharge from empty to full, linear (assumption).")
    efficiency: Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)] = Field(
        0.95, description="Output/input power in double conversion (assumption); losses = load·(1/eff − 1)."
    )
    capacity_kw: Pos | None = Field(
        None,
        description="Rated output, kW; ride-through scales as rated/actual load. Default: the full demand "
                    "(GPUs at TDP + non-GPU load) of every node with a PSU on the feed, i.e. sized for the "
                    "whole load it may carry.",
    )
    failure: Dist | None = Field(
        default_factory=lambda: Exponential(mean_h=250000.0),
        description="Time to failure, hours (assumption: MTBF 250,000 h). A failed UPS is bypassed: "
                    "the feed stays live on utility, but an outage reaches the load at once.",
    )
    modules: UPSModules | None = Field(
        None, description="The UPS as n power modules of which k carry the load (N, N+1: count vs required); "
                          "null: one block that fails as a whole (``failure``).")
    bypass: StaticBypass = Field(default_factory=StaticBypass, description="The static bypass (module shortfalls).")
    fault: UPSFault | None = Field(None, description="UPS faults that drop the load; null: none.")


def _set_repair() -> ElementRepair:
    return ElementRepair(time=Fixed(value_h=12.0))


class GeneratorSets(FacilityUnit):
    """The generator plant of a feed as ``count`` sets in parallel, of which ``required`` carry the feed's
    load (``twin.model.generator_modules``): N is count = required, N+1 count = required + 1; 2N is two
    feeds (topology 2n), each with a plant of ``required`` sets. Each set draws its own start on a demand
    (``generator.start_failure_prob``); the plant carries the feed when ``required`` sets start. Its sets
    are one common-cause group per plant; silent failures are found by the generator's periodic test
    (``generator.latent_test_interval_h``, ``test_duration_h`` per set) or by a demand."""

    count: PosInt = Field(description="Generator sets in the plant of each feed (n).")
    required: PosInt = Field(description="Sets that carry the feed's design load (k); fewer running: the plant "
                                         "trips and the feed loses its input.")
    failure: Dist = Field(
        default_factory=lambda: Exponential(mean_h=50000.0),
        description="Time to failure of one set on standby (calendar time), hours (assumption: MTBF 50,000 h as "
                    "the single generator's, range 20,000–100,000 h; no published standby rate per set was found).")
    run_failure_per_h: NonNeg = Field(
        0.00157, description="Failures per hour of a running set (fail-to-run), 1/h: 0.00157, NREL REopt ERP "
                             "defaults (sources-next §6). 0: a running set does not fail.")
    repair: Annotated[ElementRepair, over_default(_set_repair)] = Field(
        default_factory=_set_repair,
        description="Repair of one set (assumption: 12 h fixed as the single generator's, range 4–72 h).")
    dispatch_priority: int | None = Field(None, description="Crew dispatch priority (lower first). Default 2.")

    @model_validator(mode="after")
    def _check_k(self) -> "GeneratorSets":
        if self.required > self.count:
            raise ValueError(f"@required: must be <= count ({self.count}), got {self.required}")
        return self


class Generator(Standby):
    start_delay_s: NonNeg = Field(
        10.0, description="Seconds from utility loss to the generator carrying the load (assumption).",
    )
    start_failure_prob: Prob = Field(
        0.01, description="Probability that the generator fails to start on an outage (assumption). A failed "
                          "start is not retried: the feed is dead once the UPS is empty, until utility returns.",
    )
    failure: Dist | None = Field(
        default_factory=lambda: Exponential(mean_h=50000.0),
        description="Time to failure (standby, calendar time), hours (assumption: MTBF 50,000 h). While failed "
                    "it cannot start; failing while running drops the input of the feed.",
    )
    repair: Annotated[ElementRepair, over_default(_generator_repair)] = Field(
        default_factory=_generator_repair,
        description="Repair (assumption: 12 h fixed).",
    )
    block_load: BlockLoad | None = Field(
        None, description="Block-load acceptance: a transfer step above max_step_frac of the rating trips the "
                          "generator; null: it picks up any step (today's model).")
    modules: GeneratorSets | None = Field(
        None, description="The generator plant as n sets of which k carry the load (N, N+1: count vs required), "
                          "each set drawing its own start (start_failure_prob is then per set: 0.0066 per demand, "
                          "NREL REopt ERP defaults, sources-next §6); null: one generator. With sets, ``failure`` "
                          "is the plant's common part (paralleling switchgear, controls): null to model the sets "
                          "alone.")


class ATS(Strict):
    """The automatic transfer switch of each feed, between utility and generator (issue 24)."""

    failure_to_transfer_prob: Prob = Field(
        0.0, description="Probability that the switch fails to transfer the feed to its running generator on an "
                         "outage (assumption: no published rate was found; transfer switches are in 36 % of the "
                         "impactful power outages of Uptime's 2025 analysis, sources-realism §4; a `twin "
                         "sensitivity` factor). The feed stays on its UPS, then is dead, until a manual transfer.")
    manual_transfer_min: NonNeg = Field(
        15.0, description="Minutes from a failed transfer to an operator transferring the feed by hand "
                          "(assumption; a `twin sensitivity` factor).")


class Switchboard(Element):
    """The feed's distribution below the UPS (switchboard, transformer): a single point of the feed."""

    failure: Dist | None = Field(
        default_factory=lambda: Exponential(mean_h=500000.0),
        description="Time to failure, hours (assumption: MTBF 500,000 h). Failed: the whole feed is dead.",
    )


class PDU(Element):
    count: Annotated[int, Field(ge=1)] | None = Field(
        None, description="PDUs per feed; racks are split evenly, rack r on PDU floor(r·count/racks). "
                          "Default: one per rack per feed."
    )
    failure: Dist | None = Field(
        default_factory=lambda: Exponential(mean_h=300000.0),
        description="Time to failure, hours (assumption: MTBF 300,000 h). Failed: the PSUs of its racks on its "
                    "feed lose power.",
    )
    repair: Annotated[ElementRepair, over_default(_pdu_repair)] = Field(
        default_factory=_pdu_repair,
        description="Repair (assumption: 2 h fixed).",
    )


class Inject(Strict):
    """A scheduled utility outage of one feed (stress tests; counted like any other outage)."""

    feed: str
    at_h: NonNeg
    duration_h: Pos


class Power(Strict):
    topology: Literal["n", "n+1", "2n", "split"] = Field(
        "split", description="Feed layout preset (TOPOLOGIES in twin/scenario/power.py); default the DGX-class split."
    )
    psu_part: str = Field("psu", description="Name of the node part (effect redundant) that is the PSUs.")
    psu_feeds: Literal["round_robin"] | list[str] = Field(
        "round_robin",
        description="Feed of each PSU slot: round_robin puts slot i on feeds[i % len(feeds)]; or one feed name "
                    "per slot.",
    )
    capacity_w: Pos = Field(3300.0, description="Output of one PSU, W (DGX H100: 3.3 kW, sources.md).")
    reboot_h: NonNeg = Field(
        0.1, description="A node that lost power returns this long after power is back, hours (assumption: 6 min)."
    )
    site_cap_w: Pos | None = Field(
        None, description="Site IT power limit, W: above it every GPU is capped to the same power (water-filling, "
                          "not below cluster.node.gpu.min_w, in node pools each node's own). null: no limit."
    )
    utility: Utility = Field(default_factory=Utility)
    ups: UPS | None = Field(default_factory=UPS, description="UPS of each feed; null: none.")
    generator: Generator | None = Field(default_factory=Generator, description="Generator of each feed; null: none.")
    ats: ATS | None = Field(None, description="Transfer switch of each feed (needs a generator); null: every "
                                              "transfer succeeds.")
    switchboard: Switchboard = Field(default_factory=Switchboard)
    pdu: PDU = Field(default_factory=PDU)
    inject: list[Inject] = Field(
        default_factory=list, description="Scheduled utility outages per feed (stress-test feature)."
    )
    recovery: Recovery | None = Field(
        default_factory=Recovery,
        description="Staged restart after a hall-wide power loss (every feed dead at once): facility, fabric, "
                    "storage, then node batches. On by default (a hall does not return in reboot_h); null: nodes "
                    "return reboot_h after power, as before issue 48.")
    oversubscription: Oversubscription | None = Field(
        None, description="IT load above one feed's capacity while both feeds are up, capped when one is lost "
                          "(topologies with two feeds); null: not oversubscribed.")
    grid: Grid | None = Field(None, description="Grid events: demand-response requests and scheduled outages; "
                                                "null: none beyond utility.outages_per_year.")

    @model_validator(mode="before")
    @classmethod
    def _moved(cls, data: Any) -> Any:
        return moved(data, "power", {"non_gpu_w": "cluster.node.non_gpu_w", "gpu_tdp_w": "cluster.node.gpu.tdp_w",
                                     "gpu_idle_w": "cluster.node.gpu.idle_w", "gpu_min_w": "cluster.node.gpu.min_w",
                                     "speed_alpha": "cluster.node.gpu.speed_alpha"})

    @model_validator(mode="after")
    def _check(self) -> "Power":
        feeds = self.feeds
        if self.ats is not None and self.generator is None:
            raise ValueError("@ats: a transfer switch needs a generator to transfer to (set generator or ats: null)")
        if isinstance(self.psu_feeds, list):
            for i, f in enumerate(self.psu_feeds):
                if f not in feeds:
                    raise ValueError(f"@psu_feeds.{i}: unknown feed {f!r}; topology {self.topology!r} has {feeds}")
        if self.oversubscription is not None and len(feeds) < 2:
            raise ValueError(f"@oversubscription: needs two feeds (topology 2n or split), topology is {self.topology!r}")
        for i, inj in enumerate(self.inject):
            if inj.feed not in feeds:
                raise ValueError(f"@inject.{i}.feed: unknown feed {inj.feed!r}; topology {self.topology!r} has {feeds}")
        return self

    @property
    def feeds(self) -> list[str]:
        return list(TOPOLOGIES[self.topology]["feeds"])

    def slot_feeds(self, count: int) -> list[str]:
        """Feed name of each of the ``count`` PSU slots of a node."""
        if self.psu_feeds == "round_robin":
            f = self.feeds
            return [f[i % len(f)] for i in range(count)]
        return list(self.psu_feeds)

    def maintenance_mode(self, name: str) -> str:
        """The maintenance mode of unit type ``name`` (its default when not set)."""
        mt = self.elements()[name].maintenance
        assert mt is not None
        return mt.mode or ("bypass" if name == "generator" else "isolate")

    def pdu_count(self, racks: int) -> int:
        return self.pdu.count if self.pdu.count is not None else racks

    def check_against(self, sc: "Scenario") -> None:
        """Cross-checks against the cluster (called from Scenario validation)."""
        parts = sc.cluster.node.parts
        if self.psu_part not in parts:
            raise ValueError(f"@power.psu_part: no node part {self.psu_part!r}; parts: {sorted(parts)}")
        psu = parts[self.psu_part]
        where = f"cluster.node.parts.{self.psu_part}"
        if psu.effect != "redundant":
            raise ValueError(f"@{where}.effect: the PSU part must have effect 'redundant', got {psu.effect!r}")
        n, req, run = psu.count, int(psu.required or psu.count), psu.fail_below
        if isinstance(self.psu_feeds, list) and len(self.psu_feeds) != n:
            raise ValueError(f"@power.psu_feeds: must list one feed per PSU ({n}), got {len(self.psu_feeds)}")
        slots = self.slot_feeds(n)
        per_feed = {f: slots.count(f) for f in self.feeds}
        check = TOPOLOGIES[self.topology]["check"]
        if check == "exact" and n != req:
            raise ValueError(f"@power.topology: 'n' means exactly `required` PSUs ({req}); {where}.count is {n} "
                             f"(use 'n+1')")
        if check == "spare" and n < req + 1:
            raise ValueError(f"@power.topology: 'n+1' needs count >= required + 1 ({req + 1}); {where}.count is {n}")
        if check == "each_feed":
            short = {f: k for f, k in per_feed.items() if k < req}
            if short:
                raise ValueError(f"@power.topology: '2n' needs each feed's PSUs alone to meet required ({req}); "
                                 f"PSUs per feed: {per_feed} (use 'split')")
        floor = 0.0  # the site's power with every GPU at its min_w, W
        for k, (a, b, node) in enumerate(sc.cluster.node_pools()):  # each pool's node (cluster.pools), else one
            whose = "the node's" if k == 0 else f"the node's of cluster.pools.{k - 1}"
            gpus = node.gpus
            full = node.non_gpu_w + gpus * node.gpu.tdp_w
            if req * self.capacity_w < full:
                raise ValueError(f"@power.capacity_w: `required` PSUs ({req}) × capacity_w must cover {whose} full "
                                 f"demand ({full:g} W), got {req * self.capacity_w:g} W")
            least = node.non_gpu_w + gpus * node.gpu.min_w
            if run * self.capacity_w < least:
                what = "the node" if k == 0 else f"the node of cluster.pools.{k - 1}"
                raise ValueError(f"@power.capacity_w: the minimum PSUs to run ({run}) × capacity_w must cover {what} "
                                 f"at minimum GPU power ({least:g} W), got {run * self.capacity_w:g} W")
            floor += (b - a) * least
        racks = sc.cluster.racks
        for name, el in self.elements().items():
            mt = el.maintenance
            if mt is None:
                continue
            if name == "pdu" and mt.mode == "bypass":
                raise ValueError("@power.pdu.maintenance.mode: a PDU has no bypass; use isolate (its racks lose the "
                                 "feed for the visit) or live")
            if name == "generator" and mt.mode == "isolate":
                raise ValueError("@power.generator.maintenance.mode: a generator is maintained out of service "
                                 "(bypass); isolate de-energises a feed (UPS, switchboard)")
            if name == "switchboard" and mt.mode == "bypass":
                raise ValueError("@power.switchboard.maintenance.mode: a switchboard has no bypass; use isolate")
            if name == "generator" and mt.mode == "live":
                raise ValueError("@power.generator.maintenance.mode: a generator is maintained out of service (bypass)")
            units = len(self.feeds) * (self.pdu_count(racks) if name == "pdu" else 1)
            if mt.duration_h >= mt.interval_h / units:
                raise ValueError(f"@power.{name}.maintenance.duration_h: must be < interval_h / {units} units "
                                 f"({mt.interval_h / units:g}) so one unit is maintained at a time, "
                                 f"got {mt.duration_h:g}")
        for name, el in self.elements().items():
            units = len(self.feeds) * (self.pdu_count(racks) if name == "pdu" else 1)
            if isinstance(el, Generator) and el.modules is not None:
                units = len(self.feeds) * el.modules.count  # each set is tested in turn
            if el.test_duration_h and (el.latent_test_interval_h is None
                                       or units * el.test_duration_h >= el.latent_test_interval_h):
                raise ValueError(f"@power.{name}.test_duration_h: needs latent_test_interval_h, longer than its "
                                 f"{units} units tested one after the other ({units} × {el.test_duration_h:g} h)")
        if self.pdu_count(racks) > racks:
            raise ValueError(f"@power.pdu.count: must be <= racks ({racks}), got {self.pdu_count(racks)}")
        pools = list(sc.maintenance.crews)
        for name, el in self.elements().items():
            if el.repair.crew is not None and el.repair.crew not in pools:
                raise ValueError(f"@power.{name}.repair.crew: unknown crew pool {el.repair.crew!r}; allowed: {pools}")
        mods = self.ups.modules if self.ups is not None else None
        if mods is not None and mods.repair.crew is not None and mods.repair.crew not in pools:
            raise ValueError(f"@power.ups.modules.repair.crew: unknown crew pool {mods.repair.crew!r}; allowed: {pools}")
        sets = self.generator.modules if self.generator is not None else None
        if sets is not None and sets.repair.crew is not None and sets.repair.crew not in pools:
            raise ValueError(f"@power.generator.modules.repair.crew: unknown crew pool {sets.repair.crew!r}; "
                             f"allowed: {pools}")
        rec = self.recovery
        for name in (rec.power_cycle_failure_prob if rec is not None else {}):
            if name not in parts:
                raise ValueError(f"@power.recovery.power_cycle_failure_prob.{name}: no node part {name!r}; parts: "
                                 f"{sorted(parts)}")
        if self.site_cap_w is not None:
            if self.site_cap_w < floor:
                at = "cluster.node.gpu.min_w" if not sc.cluster.pools else "its pool's min_w (cluster.pools)"
                raise ValueError(f"@power.site_cap_w: below the site's power with every GPU at {at} "
                                 f"({floor:g} W), got {self.site_cap_w:g}")

    # ---- site-level parts ------------------------------------------------------------------
    def elements(self) -> dict[str, Element]:
        """The chain's unit types present in the scenario, by part name."""
        out: dict[str, Element] = {}
        if self.ups is not None:
            out["ups"] = self.ups
        if self.generator is not None:
            out["generator"] = self.generator
        out["switchboard"] = self.switchboard
        out["pdu"] = self.pdu
        return out

    def element_part(self, name: str, count: int) -> "Part":
        """The Part spec of unit type ``name`` (``count`` units on the site)."""
        el = self.elements()[name]
        assert el.failure is not None, f"{name} never fails: it has no part"
        prio = el.dispatch_priority if el.dispatch_priority is not None else (0 if name in ("pdu", "switchboard") else 2)
        return Part(
            count=count,
            effect="node_down" if name in ("pdu", "switchboard") else "redundant",
            failure=el.failure,
            repair=Repair(hot_swap=True, time=el.repair.time, burn_in_h=0.0, crew=el.repair.crew),
            dispatch_priority=prio,
            common_cause_beta=el.common_cause_beta,
            latent_test_interval_h=el.latent_test_interval_h,
        )

    def facility_parts(self) -> dict[str, "Part"]:
        """Part specs of the units that fail (``failure`` not null), for spares and crews. Counts are
        per feed for UPS, generator and switchboard; PDUs are counted once the racks are known (the
        model builds them), so the PDU entry here has count 1 per feed."""
        n_feeds = len(self.feeds)
        out = {}
        for name, el in self.elements().items():
            if el.failure is None:
                continue
            out[name] = self.element_part(name, n_feeds)
        if self.ups is not None and self.ups.modules is not None:
            out["ups_module"] = self.module_part(n_feeds * self.ups.modules.count)
        if self.generator is not None and self.generator.modules is not None:
            out["generator_set"] = self.generator_set_part(n_feeds * self.generator.modules.count)
        return out

    def generator_set_part(self, count: int) -> "Part":
        """The Part spec of the generator sets (``count`` on the site)."""
        assert self.generator is not None and self.generator.modules is not None
        m = self.generator.modules
        return Part(count=count, effect="redundant", failure=m.failure,
                    repair=Repair(hot_swap=True, time=m.repair.time, burn_in_h=0.0, crew=m.repair.crew),
                    dispatch_priority=2 if m.dispatch_priority is None else m.dispatch_priority,
                    common_cause_beta=m.common_cause_beta,
                    latent_test_interval_h=self.generator.latent_test_interval_h)

    def module_part(self, count: int) -> "Part":
        """The Part spec of the UPS power modules (``count`` on the site)."""
        assert self.ups is not None and self.ups.modules is not None
        m = self.ups.modules
        return Part(count=count, effect="redundant", failure=m.failure,
                    repair=Repair(hot_swap=True, time=m.repair.time, burn_in_h=0.0, crew=m.repair.crew),
                    dispatch_priority=2 if m.dispatch_priority is None else m.dispatch_priority,
                    common_cause_beta=m.common_cause_beta)
