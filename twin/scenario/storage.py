"""Storage section of the scenario: the shared storage system's total bandwidth, its node-local caches,
its servers (k of n) and metadata service as failing units; and a job's training-data read demand
(``workload.jobs[].data``, ``workload.synthetic.data``). docs/guide/storage.md; equations in
twin/physics/storage.py. The read and write bandwidths stay in ``workload.storage``.

Units are in field names: ``_gb_per_s`` GB/s (10⁹ bytes per second), ``_mb_per_s`` MB/s, ``_h`` hours.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, model_validator

from twin.scenario.base import Dist, Part, PosInt, Probability, Repair, Strict
from twin.scenario.defaults import derive, over_default
from twin.scenario.distributions import Exponential, Fixed

NonNeg = Annotated[float, Field(ge=0, allow_inf_nan=False)]
PosF = Annotated[float, Field(gt=0, allow_inf_nan=False)]


class DataLoading(Strict):
    """A job's training-data reads from the shared storage at full speed (rate 1); a slower job reads
    proportionally less. Give ``read_mb_per_s_per_gpu``, or ``bytes_per_sample`` with
    ``samples_per_s_per_gpu``, or ``bytes_per_token`` (a job with a ``training`` block: its tokens over its
    work). A text LLM reads a few bytes per token (near zero); vision, video and multimodal jobs read
    megabytes per sample (MLPerf Storage v1.0 average samples: 146.6 MB 3D U-Net, 114.7 KB ResNet-50,
    2.83 MB CosmoFlow; sources-realism.md §8)."""

    read_mb_per_s_per_gpu: NonNeg | None = Field(
        None, description="Read demand per GPU at full speed, MB/s (10⁶ bytes per second); derived from the "
                          "fields below when not given; 0: the job reads nothing.")
    bytes_per_sample: PosF | None = Field(None, description="Bytes read per training sample (with samples_per_s_per_gpu).")
    samples_per_s_per_gpu: PosF | None = Field(None, description="Samples per second per GPU at full speed.")
    bytes_per_token: NonNeg | None = Field(
        None, description="Bytes read per training token (a job with a training block: demand = bytes_per_token × "
                          "tokens_t / work_h; tokenised text: 2–4 bytes per token id).")
    dataset_gb: PosF | None = Field(
        None, description="Size of the job's data set, GB: with storage.cache.capacity_gb_per_node, the share of it "
                          "the job's node caches hold; null: it fits.")

    @model_validator(mode="after")
    def _one_way(self) -> "DataLoading":
        ways = [self.read_mb_per_s_per_gpu is not None, self.bytes_per_sample is not None or
                self.samples_per_s_per_gpu is not None, self.bytes_per_token is not None]
        if sum(ways) > 1 and not (ways[0] and self._derived_ok()):
            raise ValueError("@read_mb_per_s_per_gpu: give one of read_mb_per_s_per_gpu, bytes_per_sample with "
                             "samples_per_s_per_gpu, or bytes_per_token")
        if (self.bytes_per_sample is None) != (self.samples_per_s_per_gpu is None):
            raise ValueError("@bytes_per_sample: give bytes_per_sample and samples_per_s_per_gpu together")
        if self.bytes_per_sample is not None and self.samples_per_s_per_gpu is not None:
            mb = self.bytes_per_sample * self.samples_per_s_per_gpu / 1e6
            if self.read_mb_per_s_per_gpu is None:
                derive(self, read_mb_per_s_per_gpu=mb)
        return self

    def _derived_ok(self) -> bool:
        """A resolved scenario repeats a derived demand next to what it was derived from: accept exactly that."""
        if self.bytes_per_sample is not None and self.samples_per_s_per_gpu is not None:
            mb = self.bytes_per_sample * self.samples_per_s_per_gpu / 1e6
            return self.read_mb_per_s_per_gpu is not None and abs(self.read_mb_per_s_per_gpu - mb) <= 1e-9 * mb
        return self.bytes_per_token is not None  # checked against the training block by the job

    def resolve_tokens(self, where: str, tokens_t: float | None, work_h: float, gpus: int) -> None:
        """Derive ``read_mb_per_s_per_gpu`` from ``bytes_per_token`` and the job's training block."""
        from twin.physics.storage import token_read_mb_per_s_per_gpu

        if self.bytes_per_token is None:
            return
        if tokens_t is None:
            raise ValueError(f"@{where}.bytes_per_token: needs the job's training block (its tokens); give "
                             f"read_mb_per_s_per_gpu instead")
        mb = token_read_mb_per_s_per_gpu(self.bytes_per_token, tokens_t, work_h, gpus)
        if self.read_mb_per_s_per_gpu is None:
            derive(self, read_mb_per_s_per_gpu=mb)
        elif abs(self.read_mb_per_s_per_gpu - mb) > 1e-9 * max(mb, 1e-300):
            raise ValueError(f"@{where}.read_mb_per_s_per_gpu: give either it or bytes_per_token, not both")

    @property
    def demand_mb_per_s_per_gpu(self) -> float:
        """The resolved read demand per GPU at full speed, MB/s (0 when none was given)."""
        return self.read_mb_per_s_per_gpu or 0.0


class Cache(Strict):
    """Node-local caches of the training data (NVMe of each node)."""

    hit_ratio: Probability = Field(
        0.0, description="Share of a job's reads served by its nodes' caches when they hold its data set "
                         "(assumption: 0, no cache; a `twin sensitivity` factor: --param storage.cache.hit_ratio=0,0.9).")
    capacity_gb_per_node: PosF | None = Field(
        None, description="Cache capacity per node, GB; with a job's data.dataset_gb the hit ratio scales by "
                          "min(1, capacity × nodes / dataset). null: the data sets fit.")


def _server_failure() -> Exponential:
    return Exponential(mean_h=50_000.0)


def _metadata_failure() -> Exponential:
    return Exponential(mean_h=20_000.0)


def _repair_4h() -> Repair:
    return Repair(hot_swap=True, time=Fixed(value_h=4.0))


def _repair_2h() -> Repair:
    return Repair(hot_swap=True, time=Fixed(value_h=2.0))


class Servers(Strict):
    """The storage servers: a k-of-n set. With ``up`` of ``count`` up the bandwidths are ``up/count`` of
    theirs while ``up >= required``; below ``required`` the data cannot be read or written: an outage."""

    count: PosInt = Field(10, description="Storage servers (assumption: 10).")
    required: PosInt = Field(
        8, description="Servers needed to serve the data: k of the k-of-n set (assumption: an 8+2 erasure code).")
    failure: Dist = Field(default_factory=_server_failure,
                          description="Time to failure of one server, hours (assumption: exponential, mean 50,000 h; "
                                      "a `twin sensitivity` factor: --param 'storage.servers.failure={mean_h: "
                                      "10000}',...).")
    repair: Annotated[Repair, over_default(_repair_4h)] = Field(
        default_factory=_repair_4h, description="Repair of one server, hot-swapped by the crews (assumption: 4 h).")
    dispatch_priority: int | None = Field(None, description="Crew dispatch priority (lower first; default 1).")

    @model_validator(mode="after")
    def _k(self) -> "Servers":
        if self.required > self.count:
            raise ValueError(f"@required: must be <= count ({self.count}), got {self.required}")
        return self

    def part(self) -> Part:
        return Part(count=self.count, required=self.required, effect="redundant", failure=self.failure,
                    repair=self.repair, dispatch_priority=1 if self.dispatch_priority is None else self.dispatch_priority)


class Metadata(Strict):
    """The metadata service (file system namespace, object index): while fewer than ``required`` of its
    ``count`` units are up, no job can open a file: every job that reads or writes stops."""

    count: PosInt = Field(1, description="Metadata units (assumption: 1).")
    required: PosInt | None = Field(None, description="Units needed (default: count).")
    failure: Dist = Field(default_factory=_metadata_failure,
                          description="Time to failure of one unit, hours (assumption: exponential, mean 20,000 h; "
                                      "a `twin sensitivity` factor).")
    repair: Annotated[Repair, over_default(_repair_2h)] = Field(
        default_factory=_repair_2h, description="Repair (fail-over or restart) of one unit (assumption: 2 h).")
    dispatch_priority: int | None = Field(None, description="Crew dispatch priority (lower first; default 0).")

    @model_validator(mode="after")
    def _k(self) -> "Metadata":
        if self.required is None:
            derive(self, required=self.count)
        elif self.required > self.count:
            raise ValueError(f"@required: must be <= count ({self.count}), got {self.required}")
        return self

    def part(self) -> Part:
        return Part(count=self.count, required=self.required, effect="redundant", failure=self.failure,
                    repair=self.repair, dispatch_priority=0 if self.dispatch_priority is None else self.dispatch_priority)


class StorageSection(Strict):
    """The shared storage system (twin.model.storage). Its read and write bandwidths with every server up
    are ``workload.storage.read_gb_per_s`` and ``write_gb_per_s``; checkpoint transfers take equal shares
    of them as before, and the running jobs' training-data reads share what those leave."""

    total_gb_per_s: PosF | None = Field(
        None, description="Bandwidth that reads and writes share, GB/s: checkpoint writes take theirs from what the "
                          "data reads can use. null: workload.storage.read_gb_per_s (assumption: the servers move "
                          "their read bandwidth in all, so a checkpoint burst slows data loading; Llama 3's bursts "
                          "'periodically saturated' its storage fabric, sources-realism.md §8; a `twin sensitivity` "
                          "factor). read + write bandwidth or more: independent directions.")
    cache: Cache = Field(default_factory=Cache, description="Node-local data caches.")
    servers: Servers | None = Field(None, description="Storage servers as failing units (null: they never fail).")
    metadata: Metadata | None = Field(None, description="Metadata service as a failing unit (null: it never fails).")

    def facility_parts(self) -> dict[str, Part]:
        """Part specs of the units that fail, by name (``storage_server``, ``storage_metadata``)."""
        out = {}
        if self.servers is not None:
            out["storage_server"] = self.servers.part()
        if self.metadata is not None:
            out["storage_metadata"] = self.metadata.part()
        return out


__all__ = ["Cache", "DataLoading", "Metadata", "Servers", "StorageSection"]
