"""The scenario schema (pydantic v2). All defaults live here; every default is documented
in the field description with its source or marked as an assumption.

Units are in field names: ``_h`` hours, ``_days`` days, ``_w`` watts, ``_c`` degrees Celsius.
"""

from __future__ import annotations

from typing import Annotated, Any, Callable, Literal

from pydantic import Field, PrivateAttr, model_validator

from twin.scenario.base import Dist, NonNegInt, Part, PosInt, Probability, Strict, valid_part_name
from twin.scenario.defaults import derive
from twin.scenario.cooling import Cooling
from twin.scenario.costs import CostsSection
from twin.scenario.distributions import Fixed
from twin.scenario.fans import NodeFans
from twin.scenario.hazards import Hazards
from twin.scenario.health import Health
from twin.scenario.network import NetworkSection
from twin.scenario.nvlink import NVLinkDomains
from twin.scenario.pools import Pool, check_cluster_pools, pool_refusals, resolve_pool_node
from twin.scenario.power import Power
from twin.scenario.storage import StorageSection
from twin.scenario.timeline import Installation, Timeline, build_stages, capture_base
from twin.scenario.uncertainty import Uncertainty
from twin.scenario.workload import Workload
from twin.units import HOURS_PER_DAY


class GpuPower(Strict):
    """Electrical figures of one GPU: declared once, read by the power chain, the thermal model and costs."""

    tdp_w: Annotated[float, Field(gt=0, allow_inf_nan=False)] = Field(
        700.0, description="Board power at full utilisation, W (H100 SXM TDP 700 W, sources.md).")
    idle_w: Annotated[float, Field(ge=0, allow_inf_nan=False)] = Field(
        100.0, description="GPU power when idle, W (assumption, H100 class).")
    min_w: Annotated[float, Field(gt=0, allow_inf_nan=False)] = Field(
        200.0, description="Lowest power limit the GPU can be capped to, W (H100/H800 min 200 W, sources.md).")
    speed_alpha: Annotated[float, Field(gt=0, le=5, allow_inf_nan=False)] = Field(
        0.5, description="Exponent α of speed = ((P_cap − P_idle)/(P_d − P_idle))^α under a power cap, thermal "
                         "or electrical (assumption, model.md §3; no H100 curve was found: try 0.3–1 with "
                         "`twin sensitivity --param cluster.node.gpu.speed_alpha=0.3,1`).")
    train_w: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = Field(
        None, description="GPU draw at full training utilisation (the demand P_d), W; at most tdp_w. null: tdp_w "
                          "(e.g. 650 W with non_gpu_w 3200 W gives an 8×H100 node 8.4 kW in training: assumption). "
                          "An 8×H100 node peaked near 8.4 kW in training, 18 % below its 10.2 kW rating (Latif et "
                          "al. 2025, sources-realism §2); the GPU/non-GPU split of that draw is an assumption.")

    @model_validator(mode="after")
    def _check(self) -> "GpuPower":
        if self.idle_w >= self.tdp_w:
            raise ValueError(f"@idle_w: must be < tdp_w ({self.tdp_w:g}), got {self.idle_w:g}")
        if self.min_w > self.tdp_w:
            raise ValueError(f"@min_w: must be <= tdp_w ({self.tdp_w:g}), got {self.min_w:g}")
        if self.train_w is None:
            derive(self, train_w=self.tdp_w)
        elif not (self.idle_w < self.train_w <= self.tdp_w):
            raise ValueError(f"@train_w: must be > idle_w ({self.idle_w:g}) and <= tdp_w ({self.tdp_w:g}), "
                             f"got {self.train_w:g}")
        return self

    @property
    def demand_w(self) -> float:
        """GPU draw at full utilisation (``train_w``, resolved), W."""
        assert self.train_w is not None
        return self.train_w


class Node(Strict):
    type: str = Field("dgx-h100", description="Node type label (used in reports and costs).")
    gpus: PosInt = Field(8, description="GPUs per node (DGX H100: 8).")
    gpu: GpuPower = Field(default_factory=GpuPower, description="Power figures of each GPU (H100 SXM defaults).")
    non_gpu_w: Annotated[float, Field(ge=0, allow_inf_nan=False)] = Field(
        4600.0, description="Node load besides the GPUs (CPUs, memory, NVSwitch, NICs, fans) at full utilisation "
                            "while the node is up, W (derived: DGX H100 10.2 kW max system power − 8 × 700 W TDP, "
                            "sources.md; assumes the maximum is reached at full GPU TDP). With non_gpu_idle_w the "
                            "load follows utilisation between the two.")
    non_gpu_idle_w: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = Field(
        None, description="Node load besides the GPUs at zero utilisation while the node is up, W: the non-GPU load "
                          "is non_gpu_idle_w + (non_gpu_w − non_gpu_idle_w) × utilisation. null: non_gpu_w at any "
                          "utilisation (constant). No measured idle/busy split of an H100 node's non-GPU load was "
                          "found: an assumption when set (a `twin sensitivity` factor).")
    nameplate_w: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = Field(
        None, description="The node's rated maximum input power, W, which a rack's power budget must hold (DGX H100: "
                          "10.2 kW, sources-realism §2). null: non_gpu_w + gpus × gpu.tdp_w.")
    u_height: Annotated[int, Field(ge=1, le=60)] = Field(
        8, description="Rack units the node takes (DGX H100: 8U, sources-realism §12).")
    parts: dict[str, Part] = Field(description="Part types of the node, keyed by name.")
    peak_tflops: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = Field(
        None, description="Peak dense TFLOP/s per GPU (H100 SXM bf16: 989, sources.md; range 300-2,500), read only "
                          "to pace node pools of other generations (cluster.pools: each node at its peak over the "
                          "fastest pool's). null: not stated (pools must then not state one either).")
    fans: NodeFans = Field(default_factory=NodeFans, description="Server fans: power at full speed (inside "
                           "non_gpu_w), fan curve, residual fans on liquid (docs/guide/fans.md).")

    @property
    def full_power_w(self) -> float:
        """The node's demand with every GPU at TDP, W."""
        return self.non_gpu_w + self.gpus * self.gpu.tdp_w

    @property
    def rated_w(self) -> float:
        """The node's rated maximum input power (``nameplate_w``, else :attr:`full_power_w`), W."""
        return self.nameplate_w if self.nameplate_w is not None else self.full_power_w

    @model_validator(mode="after")
    def _names(self) -> "Node":
        if self.non_gpu_idle_w is None:
            derive(self, non_gpu_idle_w=self.non_gpu_w)
        elif self.non_gpu_idle_w > self.non_gpu_w:
            raise ValueError(f"@non_gpu_idle_w: must be <= non_gpu_w ({self.non_gpu_w:g}), got {self.non_gpu_idle_w:g}")
        assert self.non_gpu_idle_w is not None
        fm = self.fans.max_w
        if fm is not None and fm > self.non_gpu_idle_w:
            raise ValueError(f"@fans.max_w: the fans are part of the non-GPU load; must be <= non_gpu_idle_w "
                             f"({self.non_gpu_idle_w:g}), got {fm:g}")
        for name in self.parts:
            if not valid_part_name(name):
                raise ValueError(f"@parts: part name {name!r} must be letters, digits and _ only")
        return self


class Rack(Strict):
    """What one rack can hold: its power budget and its U space (advisories only: a rack over either is
    simulated as given, and `twin run` / `twin check` say so)."""

    power_limit_kw: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = Field(
        None, description="Power a rack may draw at the nodes' nameplate, kW (e.g. 41 for air-cooled DGX H100 racks "
        "of 4 systems, 40.8 kW, NVIDIA SuperPOD guide; 120–132 for an NVL72-class liquid rack, sources-realism §12). "
        "null: not checked.")
    u_space: Annotated[int, Field(ge=1, le=60)] | None = Field(
        None, description="Rack units available to nodes (e.g. 42 or 48). null: not checked.")


class Cluster(Strict):
    racks: PosInt = Field(description="Racks in the hall.")
    nodes_per_rack: PosInt = Field(description="Nodes in each rack.")
    node: Node
    rack: Rack = Field(default_factory=Rack, description="Power budget and U space of one rack (advisories when "
                       "nodes_per_rack nodes exceed them).")
    rack_parts: dict[str, Part] = Field(
        default_factory=dict,
        description="Part types shared by the nodes of a rack, keyed by name (``count`` per rack): an NVLink "
                    "domain's switch trays (GB200 NVL72), a rack power shelf, a rack manifold. Every node of the "
                    "rack is down while its group has failed: effect ``node_down``, any unit's failure; ``redundant``, "
                    "fewer than ``min_to_run`` (default ``required``) units working. Repaired through the same "
                    "crews and spares as node parts, without draining or burning in nodes (they are down with "
                    "the rack; ``burn_in_h`` must be 0).")
    nvlink: NVLinkDomains | None = Field(
        None, description="Rack-scale NVLink domains (GB200 NVL72): the scheduling unit of tensor parallelism and "
                          "their switch trays; null: each node is its own NVLink domain (docs/guide/parallelism.md).")
    pools: list[Pool] = Field(
        default_factory=list, description="Node pools: racks holding another node type, a second GPU generation "
                                          "(each the last `racks` racks, in the order listed; docs/guide/timeline.md). "
                                          "Empty: every rack holds cluster.node.")
    _pool_nodes: list[Node] | None = PrivateAttr(None)

    @model_validator(mode="after")
    def _rack_parts(self) -> "Cluster":
        for name, part in self.rack_parts.items():
            if not valid_part_name(name):
                raise ValueError(f"@rack_parts: part name {name!r} must be letters, digits and _ only")
            if name in self.node.parts:
                raise ValueError(f"@rack_parts.{name}: the name is taken by a node part (cluster.node.parts.{name})")
            if part.effect not in ("node_down", "redundant"):
                raise ValueError(f"@rack_parts.{name}.effect: a rack part takes the rack's nodes down: node_down or "
                                 f"redundant (k-of-n), got {part.effect!r}")
            if part.effect == "node_down" and part.min_to_run is not None:
                raise ValueError(f"@rack_parts.{name}.min_to_run: only a redundant (k-of-n) rack part has one; "
                                 "with effect node_down any failure takes the rack down")
            if part.repair.burn_in_h > 0:
                raise ValueError(f"@rack_parts.{name}.repair.burn_in_h: must be 0: a rack part's repair burns in "
                                 f"no node (they are down with the rack), got {part.repair.burn_in_h:g}")
        if self.nvlink is not None:
            self.nvlink.check_against(self)
        if self.pools:
            check_cluster_pools(self)
            if self.nvlink is not None:
                raise ValueError("@pools: rack-scale NVLink domains (cluster.nvlink) hold one node type; allowed: "
                                 "no pools with cluster.nvlink")
            nodes = [self.node]
            for k, pool in enumerate(self.pools):
                try:
                    nodes.append(resolve_pool_node(self.node, pool.node, Node, GpuPower))
                except ValueError as exc:
                    msg = str(exc)
                    raise ValueError(f"@pools.{k}.node.{msg[1:]}" if msg.startswith("@")
                                     else f"@pools.{k}.node: {msg}") from None
            peaks = [n.peak_tflops for n in nodes]
            if any(p is not None for p in peaks) and self.node.peak_tflops is None:
                raise ValueError("@node.peak_tflops: a pool states peak_tflops: state the hall's node's too, to pace "
                                 "the generations")
            self._pool_nodes = nodes
            for pool, node in zip(self.pools, nodes[1:]):  # each pool's figures as resolved: a resolved scenario
                g = node.gpu                               # re-validates to itself (train_w, non_gpu_idle_w...)
                derive(pool.node.gpu, tdp_w=g.tdp_w, idle_w=g.idle_w, min_w=g.min_w, train_w=g.train_w,
                       speed_alpha=g.speed_alpha)
                derive(pool.node, non_gpu_w=node.non_gpu_w, non_gpu_idle_w=node.non_gpu_idle_w,
                       nameplate_w=node.nameplate_w, peak_tflops=node.peak_tflops)
        return self

    @property
    def n_nodes(self) -> int:
        return self.racks * self.nodes_per_rack

    def pool_node(self, k: int) -> Node:
        """The node of pool ``k`` (0: ``cluster.node``; k >= 1: ``pools[k - 1]`` resolved)."""
        if k == 0:
            return self.node
        assert self._pool_nodes is not None
        return self._pool_nodes[k]

    def node_pools(self) -> list[tuple[int, int, Node]]:
        """Each pool's nodes [start, end) and node, pool 0 (``cluster.node``) first: one entry without pools."""
        npr = self.nodes_per_rack
        bounds = [self.racks - sum(p.racks for p in self.pools)]
        for p in self.pools:
            bounds.append(bounds[-1] + p.racks)
        starts = [0] + bounds[:-1]
        return [(a * npr, b * npr, self.pool_node(k)) for k, (a, b) in enumerate(zip(starts, bounds))]

    def generation_speed(self) -> list[float]:
        """Each pool's speed: its peak TFLOP/s over the fastest pool's (1.0 each when no peak is stated)."""
        peaks = [node.peak_tflops for _, _, node in self.node_pools()]
        if self.node.peak_tflops is None:
            return [1.0] * len(peaks)
        top = max(p if p is not None else self.node.peak_tflops for p in peaks)
        return [(p if p is not None else self.node.peak_tflops) / top for p in peaks]

    def full_power_w(self) -> float:
        """Every node at full power (non-GPU load + GPUs x TDP), summed over the pools, W."""
        if not self.pools:
            return self.n_nodes * self.node.full_power_w
        return float(sum((b - a) * node.full_power_w for a, b, node in self.node_pools()))


class Shift(Strict):
    """A crew pool and its working calendar. Simulated time 0 is Monday 00:00."""

    count: PosInt = Field(2, description="Technicians in the pool (assumption).")
    shift: Literal["24x7", "business"] = Field("24x7", description="24x7, or business hours on working days.")
    start_hour: Annotated[float, Field(ge=0, lt=24)] = Field(8.0, description="Business shift start, hour of day.")
    end_hour: Annotated[float, Field(gt=0, le=24)] = Field(17.0, description="Business shift end, hour of day.")
    workdays: list[Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"]] = Field(
        default_factory=lambda: ["mon", "tue", "wed", "thu", "fri"], description="Working days of the business shift."
    )

    @model_validator(mode="after")
    def _check(self) -> "Shift":
        if self.shift == "business":
            if self.end_hour <= self.start_hour:
                raise ValueError(f"@end_hour: must be > start_hour ({self.start_hour}), got {self.end_hour}")
            if not self.workdays:
                raise ValueError("@workdays: a business shift needs at least one working day")
        return self


class Spares(Strict):
    """Spare-part inventory of one part type with an (s, Q) reorder policy."""

    stock: NonNegInt = Field(description="Initial stock on hand.")
    reorder_point: NonNegInt | None = Field(None, description="Order when stock position <= this (default: stock - 1).")
    reorder_qty: PosInt = Field(1, description="Units per order.")
    lead_time_days: Annotated[float, Field(ge=0, allow_inf_nan=False)] = Field(14.0, description="Order lead time, days (assumption).")
    rma_turnaround_days: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = Field(
        None, description="Vendor RMA: the RMA of a replaced part is opened when its replacement takes a spare, and "
                          "a refurbished unit returns to stock this many calendar days later (source, "
                          "sources-realism.md §5: next business day with advance replacement, otherwise 3–14 business "
                          "days). Units at the vendor count as on order, so only scrapped parts trigger (s, Q) "
                          "orders. Stock logistics, not node downtime. None: no RMA, every replaced part is "
                          "scrapped and bought anew.")
    rma_return_share: Probability = Field(
        1.0, description="With rma_turnaround_days: share of RMA parts that come back refurbished; the rest are "
                         "scrapped (the inventory position falls and the (s, Q) policy orders new ones) "
                         "(assumption: 1). Unused without RMA.")


class Planned(Strict):
    """Rolling planned maintenance: every ``every_days`` the next ``batch_nodes`` nodes (cycling
    through the cluster in index order) are drained for ``duration_h`` (firmware, upgrades)."""

    every_days: Annotated[float, Field(gt=0, allow_inf_nan=False)] = Field(description="Days between waves.")
    batch_nodes: PosInt = Field(description="Nodes drained per wave.")
    duration_h: Annotated[float, Field(gt=0, allow_inf_nan=False)] = Field(description="Drain length, hours.")
    start_day: Annotated[float, Field(ge=0, allow_inf_nan=False)] = Field(0.0, description="First wave, day.")


class Dispatch(Strict):
    """Dispatch by impact: a free technician on shift takes, among the tickets waiting for its pool, first
    any ticket that has waited at least ``ageing_h`` (oldest first), else the one whose repair returns the
    most GPUs to service now (GPUs of the nodes out of service or cut off the fabric because of this unit,
    read from the cluster's state when the technician is free), then the part's ``dispatch_priority``, then
    the longest wait. So a ticket waits for a technician at most ``ageing_h`` plus the remaining repairs in
    progress plus the repairs of tickets that aged before it."""

    ageing_h: Annotated[float, Field(gt=0, allow_inf_nan=False)] = Field(
        24.0, description="Hours of waiting after which a ticket is served before any younger one, oldest "
                          "first (assumption: a day).")


class Maintenance(Strict):
    detection: Dist = Field(
        default_factory=lambda: Fixed(value_h=0.25),
        description="Delay from a failure to a repair ticket, hours (assumption: 15 min).",
    )
    crews: dict[str, Shift] = Field(
        default_factory=lambda: {"technicians": Shift()}, description="Crew pools, keyed by name."
    )
    spares: dict[str, Spares] = Field(
        default_factory=dict, description="Spare inventory per part type; a part type not listed has unlimited spares."
    )
    planned: Planned | None = Field(None, description="Rolling planned drains (counted as planned interruptions).")
    dispatch: Dispatch = Field(default_factory=lambda: Dispatch(), description="How a free technician picks the next ticket.")


class Scenario(Strict):
    name: str = Field(min_length=1, max_length=80, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$",
                      description="Scenario name: letters, digits, '_', '.', '-'; names the results folder.")
    description: str = Field("", description="Free text shown in reports.")
    seed: Annotated[int, Field(ge=0, lt=2**63)] = Field(
        0, description="Root seed (numpy SeedSequence); replication i uses child i.")
    horizon_days: Annotated[float, Field(gt=0, le=36500, allow_inf_nan=False)] = Field(
        365.0, description="Simulated time, days.")
    cluster: Cluster = Field(description="Racks, nodes and the node's parts.")
    maintenance: Maintenance = Field(default_factory=Maintenance, description="Detection, crews, spares, planned drains.")
    workload: Workload | None = Field(None, description="Jobs, scheduler, checkpointing (none: reliability only).")
    network: NetworkSection | None = None
    power: Power | None = None
    cooling: Cooling | None = None
    storage: StorageSection | None = Field(
        None, description="The shared storage system: total bandwidth, node caches, servers and metadata service "
                          "as failing units (twin/scenario/storage.py; none: defaults, nothing fails); costs prices its "
                          "servers and their repairs.")
    costs: CostsSection = None
    health: Health | None = Field(None, description="Lemon nodes, stragglers, silent data corruption, infant "
                                                    "mortality (twin/scenario/health.py; none: nodes alike).")
    hazards: Hazards | None = Field(None, description="Common causes across equipment: hazard zones and common-cause "
                                                      "groups spanning unit types (twin/scenario/hazards.py; none: "
                                                      "none).")
    timeline: Timeline | None = Field(
        None, description="The life of the hall as dated steps over horizon_days: racks added, a new node "
                          "generation, cooling or power added, a retrofit (twin/scenario/timeline.py, "
                          "docs/guide/timeline.md; none: one configuration for the whole horizon).")
    installation: Installation | None = Field(
        None, description="Drains for installation work, written by a timeline into the stage after its step "
                          "(twin/scenario/timeline.py; none: none).")
    uncertainty: Uncertainty | None = Field(
        None, exclude=True, description="Inputs that are not known: field paths -> distributions with their source "
                                        "(twin/scenario/uncertainty.py; read by twin decide only, which checks that every path "
                                        "leads to a field; not part of the resolved scenario or its hash).")

    @model_validator(mode="before")
    @classmethod
    def _per_gpu(cls, data: Any) -> Any:
        """Resolve what follows the node's GPU count: the fabric's rails (default one per GPU) and parts
        counted per GPU or per rail (to units per node, ``per: node``), so a resolved scenario
        re-validates to itself."""
        if not isinstance(data, dict):
            return data
        data = capture_base(data)  # the document as written, before anything is derived (a timeline's stages)
        cluster, net = data.get("cluster"), data.get("network")
        node = cluster.get("node") if isinstance(cluster, dict) else None
        if not isinstance(node, dict):
            return data
        gpus = node.get("gpus", Node.model_fields["gpus"].default)
        if type(gpus) is not int or gpus < 1:
            return data  # the field's own validation says what is wrong
        data = dict(data)
        rails = gpus
        if isinstance(net, dict):
            if net.get("rails") is None:
                data["network"] = {**net, "rails": gpus}
            rails = data["network"]["rails"]
        parts = node.get("parts")
        if type(rails) is not int or rails < 1:
            rails = gpus  # the network section's own validation reports its rails
        if isinstance(parts, dict):
            per_unit = {"gpu": gpus, "rail": rails}
            new = {}
            for name, part in parts.items():
                if (isinstance(part, dict) and part.get("per") in ("gpu", "rail") and type(part.get("count", 1)) is int
                        and part.get("required") is None and part.get("min_to_run") is None
                        and part.get("effect") != "redundant"):
                    part = {**part, "count": part.get("count", 1) * per_unit[part["per"]], "per": "node"}
                new[name] = part
            data["cluster"] = {**cluster, "node": {**node, "parts": new}}
        return data

    @model_validator(mode="after")
    def _cross(self) -> "Scenario":
        """Checks across sections, every one of them (each a ValueError ``@field: message``): one report
        names them all (:func:`twin.scenario.rounds.run_all`), not the first of them per round."""
        from twin.scenario.rounds import run_all

        pools = list(self.maintenance.crews)
        facility: dict[str, Any] = {}

        def crews() -> None:
            if not pools:
                raise ValueError("@maintenance.crews: at least one crew pool is needed")

        def part_crews(kind: str, parts: dict[str, Part]) -> Callable[[], None]:
            def check() -> None:
                for name, part in parts.items():
                    if pools and part.repair.crew is not None and part.repair.crew not in pools:
                        raise ValueError(f"@cluster.{kind}.{name}.repair.crew: unknown crew pool "
                                         f"{part.repair.crew!r}; allowed: {pools}")
            return check

        def facility_names() -> None:
            for section in ("cooling", "power", "network", "storage"):
                sub = getattr(self, section, None)
                if sub is not None and hasattr(sub, "facility_parts"):
                    for fname, fpart in sub.facility_parts().items():  # {name: Part}
                        facility[fname] = (section, fpart)
            for name in self.cluster.rack_parts:
                if name in facility:
                    raise ValueError(f"@cluster.rack_parts.{name}: the name is taken by a unit of the "
                                     f"{facility[name][0]} section")

        def spares() -> None:
            allowed = set(self.cluster.node.parts) | set(self.cluster.rack_parts) | set(facility)
            for name in self.maintenance.spares:
                if name not in allowed:
                    raise ValueError(f"@maintenance.spares.{name}: no such part; allowed: {sorted(allowed)}")

        def facility_crews() -> None:
            for name, (section, part) in facility.items():
                if pools and part.repair.crew is not None and part.repair.crew not in pools:
                    raise ValueError(f"@{section}: part {name!r} names unknown crew pool {part.repair.crew!r}; "
                                     f"allowed: {pools}")

        def frailty() -> None:
            if self.health is not None and self.health.frailty is not None and self.health.frailty.parts is not None:
                node_parts = list(self.cluster.node.parts)
                for name in self.health.frailty.parts:
                    if name not in node_parts:
                        raise ValueError(f"@health.frailty.parts: no node part {name!r}; allowed: {node_parts}")

        sections = [getattr(s, "check_against") for s in (self.power, self.cooling, self.workload, self.installation)
                    if s is not None]
        def pools_run() -> None:
            if self.cluster.pools:
                pool_refusals(self)

        run_all([crews, part_crews("node.parts", self.cluster.node.parts), pools_run,
                 part_crews("rack_parts", self.cluster.rack_parts), facility_names, spares, facility_crews, frailty,
                 *[lambda check=check: check(self) for check in sections]])
        if self.timeline is not None:
            build_stages(self, type(self))
        return self

    @property
    def horizon_h(self) -> float:
        return self.horizon_days * HOURS_PER_DAY


def scenario_json_schema() -> dict[str, Any]:
    """The scenario's JSON Schema (``twin schema``), with the defaults of fields whose default is built by
    a function (a section, a PDU's 2 h repair): pydantic leaves those out, the reader needs them."""
    from pydantic.json_schema import GenerateJsonSchema

    class _WithBuiltDefaults(GenerateJsonSchema):
        def default_schema(self, schema: Any) -> Any:
            if "default_factory" in schema and "default" not in schema and not schema.get("default_factory_takes_data"):
                schema = {**schema, "default": schema["default_factory"]()}
            return super().default_schema(schema)

    return Scenario.model_json_schema(schema_generator=_WithBuiltDefaults)
