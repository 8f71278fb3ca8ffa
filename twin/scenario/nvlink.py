"""NVLink domains of the cluster (``cluster.nvlink``): the scheduling unit of tensor parallelism.

Without this block every node is its own NVLink domain (an HGX/DGX node: 8 GPUs on NVSwitch). With it,
``domain_nodes`` consecutive nodes of a rack form one domain (GB200 NVL72: 18 compute trays of 4 GPUs
and 9 NVLink switch trays in one rack), a job's tensor-parallel groups are placed inside one domain, and
the rack part named by ``switch_part`` (a ``redundant`` rack part: the switch trays) scales the
domain's NVLink bandwidth by the share of its units that work, down to the part's ``min_to_run``
(below it the rack's nodes are down, as for any redundant rack part). See docs/guide/parallelism.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from pydantic import Field

from twin.scenario.base import PosInt, Strict
from twin.scenario.defaults import derive

if TYPE_CHECKING:  # pragma: no cover
    from twin.scenario.schema import Cluster
    from twin.scenario.workload import Job


class NVLinkDomains(Strict):
    """Rack-scale NVLink domains (sources-realism.md §7 and §12)."""

    domain_nodes: PosInt | None = Field(
        None, description="Consecutive nodes of a rack per NVLink domain; must divide nodes_per_rack (default: "
                          "the whole rack, as GB200 NVL72: 18 compute trays).")
    gbyte_s_per_gpu: Annotated[float, Field(gt=0, allow_inf_nan=False)] = Field(
        900.0, description="NVLink bandwidth per GPU per direction inside a domain, GB/s (GB200 NVLink 5: 1.8 TB/s "
                           "bidirectional, NVIDIA GB200 NVL72 page, secondary; 72 x 1.8 = 130 TB/s per rack). A "
                           "job's step.layout.nvlink_gbyte_s defaults to it.")
    switch_part: str | None = Field(
        None, description="Name of the rack part (cluster.rack_parts, effect redundant) whose units are the "
                          "domain's NVLink switch trays: with h of its n units working the domain's NVLink "
                          "bandwidth is h/n of gbyte_s_per_gpu (assumption: every GPU's links are spread evenly "
                          "over the switch trays, as NVL72's 18 links per GPU over 9 trays); below the part's "
                          "min_to_run (else required) the rack is down. Needs domain_nodes = nodes_per_rack. "
                          "null: the domain's bandwidth never changes.")

    def check_against(self, cluster: "Cluster") -> None:
        """Derive ``domain_nodes``; check it against the racks and ``switch_part`` against the rack parts."""
        npr = cluster.nodes_per_rack
        if self.domain_nodes is None:
            derive(self, domain_nodes=npr)
        dn = self.domain_nodes
        assert dn is not None
        if npr % dn:
            raise ValueError(f"@nvlink.domain_nodes: {dn} must divide nodes_per_rack ({npr}): a domain never spans "
                             f"racks")
        sp = self.switch_part
        if sp is not None:
            part = cluster.rack_parts.get(sp)
            if part is None:
                raise ValueError(f"@nvlink.switch_part: no rack part {sp!r}; allowed: {sorted(cluster.rack_parts)}")
            if part.effect != "redundant":
                raise ValueError(f"@nvlink.switch_part: rack part {sp!r} must have effect redundant (k-of-n switch "
                                 f"trays), got {part.effect!r}")
            if dn != npr:
                raise ValueError(f"@nvlink.switch_part: the switch trays serve a rack: domain_nodes must equal "
                                 f"nodes_per_rack ({npr}), got {dn}")

    def domain_gpus(self, gpus_per_node: int) -> int:
        """GPUs in one domain."""
        assert self.domain_nodes is not None
        return self.domain_nodes * gpus_per_node


def check_job_layout(where: str, job: "Job", nvlink: NVLinkDomains | None, gpus_per_node: int) -> None:
    """A job's layout against the cluster's NVLink domains: its ``nvlink_domain_gpus`` and ``nvlink_gbyte_s``
    default to the declared domain's; its tensor-parallel groups must fit a domain (tp divides the domain)
    and, in a rack-scale domain, be whole nodes. Without ``cluster.nvlink`` each node is a domain, so tp is
    at most the node's GPUs. A job whose training block derives its work from the layout is derived again
    when a default changed here."""
    lay = job.step.layout
    if lay is None:
        return
    changed = False
    if nvlink is not None:
        dom = nvlink.domain_gpus(gpus_per_node)
        if "nvlink_domain_gpus" not in lay.model_fields_set and lay.nvlink_domain_gpus != dom:
            derive(lay, nvlink_domain_gpus=dom)
            changed = True
        if "nvlink_gbyte_s" not in lay.model_fields_set and lay.nvlink_gbyte_s != nvlink.gbyte_s_per_gpu:
            derive(lay, nvlink_gbyte_s=nvlink.gbyte_s_per_gpu)
            changed = True
        if dom % lay.nvlink_domain_gpus:
            raise ValueError(f"@{where}.step.layout.nvlink_domain_gpus: {lay.nvlink_domain_gpus} must divide the "
                             f"cluster's NVLink domain ({dom} GPUs: cluster.nvlink)")
        if lay.tp > gpus_per_node and lay.tp % gpus_per_node:
            raise ValueError(f"@{where}.step.layout.tp: a tensor-parallel group larger than a node must be whole "
                             f"{gpus_per_node}-GPU nodes, got tp {lay.tp}")
        if lay.tp > gpus_per_node and job.elastic is not None:
            raise ValueError(f"@{where}.elastic: an elastic job whose tensor-parallel groups span nodes (tp {lay.tp} "
                             f"> {gpus_per_node} GPUs per node) in NVLink domains is not modelled; use a rigid job")
    elif lay.tp > gpus_per_node:
        raise ValueError(f"@{where}.step.layout.tp: {lay.tp} is more than a node's {gpus_per_node} GPUs: without "
                         f"cluster.nvlink each node is its own NVLink domain and a tensor-parallel group never "
                         f"spans domains")
    if lay.nvlink_domain_gpus % lay.tp:
        raise ValueError(f"@{where}.step.layout.tp: must divide nvlink_domain_gpus ({lay.nvlink_domain_gpus}): a "
                         f"tensor-parallel group never spans NVLink domains")
    if changed and job.training is not None:
        derive(job, work_h=None)
        derive(job.training, mfu=None, peak_tflops=None)
        job._derive_training()
