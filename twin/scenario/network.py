"""Network section of the scenario: a rail-optimised two-tier fat tree (model.md §6).

The topology is a rule, not a listed graph. Nodes are numbered 0..N−1 (rack by rack); node ``n``
sits in *leaf group* ``g = n // nodes_per_leaf``. Each of the node's ``rails`` NICs is cabled to the
leaf switch of its rail in its group, so there are ``G = ceil(N / nodes_per_leaf)`` groups and
``G × rails`` leaves. Each leaf has ``U = uplinks_per_leaf`` uplinks (default ``nodes_per_leaf``:
non-blocking, 1:1; fewer: oversubscribed ``nodes_per_leaf : U``) spread evenly over the ``spines``
(``U / spines`` links from every leaf to every spine). Every link has ``optics_per_link``
transceivers (one at each end). Counts:

- leaves ``L = G·rails``; access links ``N·rails``; trunk links ``L·U`` (0 without spines); optics
  ``optics_per_link·(access + trunk)``.

NIC failures come from the node part ``nic`` (effect ``link_down``) when the node has one.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, Field, ValidationInfo, model_validator

from twin.scenario.defaults import over_default
from twin.scenario.distributions import Exponential
from twin.scenario.base import Dist, Part, Repair, hot_swap_repair
from twin.scenario.base import Strict as _Strict
from twin.units import HOURS_PER_MONTH



# Alibaba HPN (SIGCOMM 2024, §2.3; sources.md): NIC–ToR link failures 0.057 % of links per month,
# ToR crashes 0.051 % of switches per month.
LINK_MTBF_H = HOURS_PER_MONTH / 0.00057
"""Mean time between failures of one NIC–ToR link, hours (≈ 1.28 million)."""
SWITCH_MTBF_H = HOURS_PER_MONTH / 0.00051
"""Mean time between crashes of one ToR (leaf) switch, hours (≈ 1.43 million)."""


class FabricPart(_Strict):
    """Failure and repair of one kind of fabric unit (optic, leaf or spine switch)."""

    failure: Dist = Field(description="Time to failure of one unit, hours.")
    repair: Annotated[Repair, over_default(hot_swap_repair)] = Field(
        default_factory=hot_swap_repair, description="Repair of one unit; fabric units never drain a node.")
    dispatch_priority: int | None = Field(
        None, description="Crew dispatch priority (lower first). Default: leaf 0 (cuts a whole leaf group), "
                          "optic and spine 1 (assumption)."
    )


def _optic_default() -> FabricPart:
    return FabricPart(
        failure=Exponential(mean_h=round(2.0 * LINK_MTBF_H)),
        repair=Repair(hot_swap=True, time={"dist": "fixed", "value_h": 1.0}),  # type: ignore[arg-type]
    )


def _switch_default() -> FabricPart:
    return FabricPart(
        failure=Exponential(mean_h=round(SWITCH_MTBF_H)),
        repair=Repair(hot_swap=True, time={"dist": "fixed", "value_h": 4.0}),  # type: ignore[arg-type]
    )


class Network(_Strict):
    """Rail-optimised fat tree: topology, bandwidth and failures of the compute fabric."""

    rails: Annotated[int, Field(ge=1)] = Field(
        8, description="NICs per node used by the compute fabric, one rail each. Left out of a scenario: the node's "
                       "GPU count (one NIC per GPU, as the DGX H100's 8 single-port ConnectX-7, NVIDIA DGX H100/H200 "
                       "User Guide, Introduction); 8 only for a section built without a scenario. Must not exceed the "
                       "node part `nic` count when the node has that part (a `nic` part `per: rail` follows it)."
    )
    nodes_per_leaf: Annotated[int, Field(ge=1)] = Field(
        32, description="Nodes served by one leaf switch of a rail: a leaf group (assumption: a 32-node "
                        "scalable unit with one leaf per rail, as in NVIDIA's DGX SuperPOD design; 64-port "
                        "leaves with 32 down, 32 up)."
    )
    spines: Annotated[int, Field(ge=0)] = Field(
        16, description="Spine switches; each carries 1/spines of every leaf's uplinks, so it must divide "
                        "uplinks_per_leaf. 0 only for a single leaf group (assumption: 16, as for four "
                        "32-node units)."
    )
    uplinks_per_leaf: Annotated[int, Field(ge=1)] | None = Field(
        None, description="Links from each leaf to the spines (default: nodes_per_leaf, non-blocking 1:1). Fewer "
                          "oversubscribe the fabric nodes_per_leaf : uplinks_per_leaf: a job spanning several leaf "
                          "groups gets at most uplinks/nodes_per_leaf of its links' bandwidth (the same rule as "
                          "for failed uplinks); fewer trunk links and optics to buy."
    )
    link_bandwidth_gbps: Annotated[float, Field(gt=0, allow_inf_nan=False)] = Field(
        400.0, description="Bandwidth of one link, Gbit/s (ConnectX-7 NDR 400 Gb/s, same guide)."
    )
    optics_per_link: Annotated[int, Field(ge=0, le=2)] = Field(
        2, description="Optical transceivers per link, one at each end (model.md §6); 0 for copper."
    )
    optic: Annotated[FabricPart, over_default(_optic_default)] = Field(
        default_factory=_optic_default,
        description="One transceiver. Default exponential MTBF 2× the Alibaba HPN NIC–ToR link MTBF "
                    "(0.057 %/link/month, sources.md; two optics in series per link, all link failures "
                    "attributed to optics: assumption); hot-swapped in 1 h (assumption).",
    )
    leaf: Annotated[FabricPart, over_default(_switch_default)] = Field(
        default_factory=_switch_default,
        description="One leaf switch. Default exponential MTBF from Alibaba HPN ToR crashes "
                    "(0.051 %/switch/month, sources.md); replaced in 4 h (assumption).",
    )
    spine: Annotated[FabricPart, over_default(_switch_default)] = Field(
        default_factory=_switch_default,
        description="One spine switch. Default: same as a leaf (assumption: same switch model).",
    )
    link_flaps_per_link_per_year: Annotated[float, Field(ge=0, allow_inf_nan=False)] = Field(
        0.0074, description="Poisson rate of flaps of one node–leaf link (transient: the jobs on the node "
                            "crash, no repair). Default derived from Llama 3 Table 5: 35 'network "
                            "switch/cable' interruptions on 16,384 links in 54 days, less the 16.6 optic and "
                            "0.5 leaf failures the Alibaba rates predict there (attribution: assumption)."
    )
    trunk_flaps_per_link_per_year: Annotated[float, Field(ge=0, allow_inf_nan=False)] = Field(
        0.0, description="Poisson rate of flaps of one leaf–spine link. A flap crashes every job that spans "
                         "several leaf groups and has nodes under the link's leaf (ECMP spreads such a job's "
                         "cross-group traffic over all of its leaves' uplinks: assumption); jobs under one "
                         "leaf group do not cross the spines. Default 0 (off): the Llama 3 derivation of "
                         "link_flaps_per_link_per_year attributes every flap to node links."
    )

    @model_validator(mode="after")
    def _check(self) -> "Network":
        if self.uplinks_per_leaf is not None and self.uplinks_per_leaf > self.nodes_per_leaf:
            raise ValueError(f"@uplinks_per_leaf: at most nodes_per_leaf ({self.nodes_per_leaf}: non-blocking), "
                             f"got {self.uplinks_per_leaf}")
        if self.spines > 0 and self.uplinks % self.spines != 0:
            what = "uplinks_per_leaf" if self.uplinks_per_leaf is not None else "nodes_per_leaf"
            raise ValueError(
                f"@spines: must divide {what} ({self.uplinks}) so every leaf has the same "
                f"number of uplinks to each spine, got {self.spines}"
            )
        return self

    @property
    def uplinks(self) -> int:
        """Uplinks of each leaf: ``uplinks_per_leaf``, default ``nodes_per_leaf`` (non-blocking)."""
        return self.uplinks_per_leaf if self.uplinks_per_leaf is not None else self.nodes_per_leaf

    # ---- topology counts (the rule) -------------------------------------------------------
    def groups(self, n_nodes: int) -> int:
        """Leaf groups: ceil(n_nodes / nodes_per_leaf)."""
        return -(-n_nodes // self.nodes_per_leaf)

    def counts(self, n_nodes: int) -> dict[str, int]:
        """Topology sizes for ``n_nodes`` nodes: groups, leaves, spines, links, optics."""
        groups = self.groups(n_nodes)
        leaves = groups * self.rails
        access = n_nodes * self.rails
        trunk = leaves * self.uplinks if self.spines > 0 else 0
        return {
            "groups": groups,
            "leaves": leaves,
            "spines": self.spines,
            "access_links": access,
            "trunk_links": trunk,
            "links": access + trunk,
            "optics": self.optics_per_link * (access + trunk),
        }

    def facility_parts(self) -> dict[str, Part]:
        """Part specs of the fabric's site-level units, so spares and crews can name them."""
        out: dict[str, Part] = {}
        for name, fp, effect, prio in (
            ("optic", self.optic, "link_down", 1),
            ("leaf", self.leaf, "link_down", 0),
            ("spine", self.spine, "redundant", 1),
        ):
            out[name] = Part(
                count=1, effect=effect, failure=fp.failure, repair=fp.repair,
                dispatch_priority=fp.dispatch_priority if fp.dispatch_priority is not None else prio,
            )
        return out


def _check_cluster(net: Network | None, info: ValidationInfo) -> Network | None:
    """Cross-checks against the cluster section (validated before this field)."""
    cluster: Any = info.data.get("cluster")
    if net is None or cluster is None:
        return net
    nic = cluster.node.parts.get("nic")
    if nic is not None and net.rails > nic.count:
        raise ValueError(f"@rails: must be <= the node's nic count ({nic.count}), got {net.rails}")
    n = cluster.n_nodes
    groups = net.groups(n)
    if groups > 1 and net.spines == 0:
        raise ValueError(
            f"@spines: must be >= 1 when the fabric has more than one leaf group ({n} nodes / "
            f"{net.nodes_per_leaf} per leaf = {groups} groups), got 0"
        )
    return net


NetworkSection = Annotated[Network, AfterValidator(_check_cluster)]
"""The scenario field type: a :class:`Network` checked against the cluster it serves."""

__all__ = ["FabricPart", "Network", "NetworkSection"]
