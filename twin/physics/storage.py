"""Storage bandwidth: the shares of the training-data streams, the data stall of a step, the node-local
cache and the bandwidth of a k-of-n set of storage servers (docs/guide/storage.md).

Pure functions, no SimPy. Units: GB/s (10⁹ bytes per second) for bandwidth and demand; shares in [0, 1].

The model (twin.model.storage):

* the storage system has a read bandwidth ``R``, a write bandwidth ``W`` and a total ``T`` that reads and
  writes share (``T >= R + W``: independent directions), all proportional to the servers up;
* checkpoint writes and reads take their equal shares as before (``W/writers``, ``R/readers`` at the
  start of a transfer, not re-shared mid-transfer); the training-data streams of the running jobs and the
  checkpoint reads in progress share the read bandwidth that the checkpoint writes leave
  (:func:`data_capacity_gb_per_s`) max-min fairly (:func:`water_fill`): a job gets its whole demand, or
  the common level when its demand is above it (a checkpoint read counts as a stream that takes the
  level);
* data loading overlaps compute (prefetching), so a step takes the longer of its compute time and its
  data time: the progress rate is ``min(r, share / demand)`` with ``r`` the rate without data stall and
  ``demand`` the job's demand at full speed (:func:`data_limited_rate`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def water_fill(capacity: float, demands: Sequence[float], elastic: int = 0) -> float:
    """The max-min fair level of ``demands`` (GB/s) and of ``elastic`` streams that take all they are given
    (checkpoint reads) on ``capacity`` (GB/s): every stream with a demand gets ``min(demand, level)``, every
    elastic one the level; the level is the unique ``L`` with ``sum(min(d, L)) + elastic × L = capacity``,
    infinite when there is no elastic stream and the capacity covers every demand (no stream is limited)."""
    if capacity < 0 or math.isnan(capacity):
        raise ValueError(f"capacity must be >= 0, got {capacity}")
    if elastic < 0:
        raise ValueError(f"elastic must be >= 0, got {elastic}")
    if not elastic:
        total = 0.0
        for d in demands:
            total += d
        if total <= capacity:
            return math.inf
    left = capacity
    n = len(demands) + elastic
    for i, d in enumerate(sorted(demands)):
        fair = left / (n - i)
        if d >= fair:
            return fair
        left -= d
    return left / elastic if elastic else math.inf


def data_limited_rate(rate: float, demand_gb_per_s: float, share_gb_per_s: float) -> float:
    """Progress rate of a job whose data loading overlaps its compute: ``min(rate, share / demand)``,
    with ``rate`` its rate without data stall, ``demand_gb_per_s`` its read demand at full speed (rate 1)
    and ``share_gb_per_s`` the bandwidth it gets. A job without demand is never data-bound."""
    if demand_gb_per_s <= 0 or share_gb_per_s >= demand_gb_per_s * rate:
        return rate  # (exactly: a job that gets its demand is not slowed in its last bit)
    return min(rate, share_gb_per_s / demand_gb_per_s)


def data_capacity_gb_per_s(read_gb_per_s: float, write_gb_per_s: float, total_gb_per_s: float,
                           ckpt_write_gb_per_s: float) -> float:
    """Read bandwidth the training-data streams and the checkpoint reads share (GB/s): the read bandwidth
    ``read_gb_per_s``, or what the checkpoint writes in progress leave of the total ``total_gb_per_s``
    that reads and writes share, whichever is smaller; the writes count at most at the write bandwidth
    ``write_gb_per_s`` (an equal share taken at a write's start is not re-shared: the shares held may add
    up to more)."""
    w_used = min(write_gb_per_s, ckpt_write_gb_per_s)
    return max(0.0, min(read_gb_per_s, total_gb_per_s - w_used))


def cache_hit_ratio(hit_ratio: float, capacity_gb_per_node: float | None, dataset_gb: float | None,
                    nodes: int) -> float:
    """Share of a job's reads served by the node-local caches: ``hit_ratio`` (the hit ratio of a cache that
    holds the node's shard of the data set) times the share of the data set the job's ``nodes`` caches can
    hold, ``min(1, capacity × nodes / dataset)``; without a capacity or a data set size, ``hit_ratio``."""
    if hit_ratio <= 0:
        return 0.0
    if capacity_gb_per_node is None or dataset_gb is None or dataset_gb <= 0:
        return hit_ratio
    return hit_ratio * min(1.0, capacity_gb_per_node * nodes / dataset_gb)


def servers_bandwidth_share(up: int, count: int, required: int) -> float:
    """Share of the storage bandwidth available with ``up`` of ``count`` servers up: ``up / count`` while
    at least ``required`` (k of the k-of-n set: the erasure code's data shards) are up, else 0 (the data
    cannot be reconstructed: an outage)."""
    if not 0 <= up <= count or not 1 <= required <= count:
        raise ValueError(f"need 0 <= up <= count and 1 <= required <= count, got {up}, {count}, {required}")
    if up < required:
        return 0.0
    if up == count:
        return 1.0
    return up / count


def token_read_mb_per_s_per_gpu(bytes_per_token: float, tokens_t: float, work_h: float, gpus: int) -> float:
    """Read demand per GPU at full speed (MB/s) of a job that reads ``bytes_per_token`` for each of its
    ``tokens_t`` trillion training tokens over ``work_h`` ideal hours on ``gpus`` GPUs."""
    tokens_per_s = tokens_t * 1e12 / (work_h * 3600.0)
    return bytes_per_token * tokens_per_s / gpus / 1e6


__all__ = ["cache_hit_ratio", "data_capacity_gb_per_s", "data_limited_rate", "servers_bandwidth_share",
           "token_read_mb_per_s_per_gpu", "water_fill"]
