"""The shared storage system (docs/guide/storage.md; equations in twin/physics/storage.py).

One component, built with every workload, provides the ``STORAGE`` service: the checkpoint write and
read bandwidths now (``workload.storage`` bandwidths scaled by the servers up), its availability, the
checkpoint transfers in progress and the training-data shares of the running jobs.

* Checkpoint transfers keep the workload's equal shares (a write gets ``W/writers`` at its start, a read
  ``R/readers``; not re-shared mid-transfer). The training-data streams of the running jobs share the read
  bandwidth the writes leave (:func:`twin.physics.storage.data_capacity_gb_per_s`) max-min fairly with the
  checkpoint reads (:func:`twin.physics.storage.water_fill`); a change of the data level is published on
  ``Topic.STORAGE`` once per instant (a deferred call), so the workload re-rates its data-reading jobs.
* The servers (``storage_server``, a k-of-n set) and the metadata service (``storage_metadata``) are
  site-level units repaired by the crews (:class:`twin.model.parts.FacilityParts`). A lost server takes
  its share of the bandwidth; with fewer than ``required`` servers, or the metadata service down, the
  storage is unavailable: ``Topic.STORAGE`` is published at once with ``available`` False, and the
  workload stops every job that reads or writes until it is published True again.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

import pandas as pd

from twin.model.component import STORAGE, BuildContext, Component, ResultsSoFar
from twin.model.engine import Topic
from twin.model.parts import FacilityParts
from twin.physics import storage as phys
from twin.scenario.storage import StorageSection

if TYPE_CHECKING:  # pragma: no cover
    from twin.scenario.schema import Scenario

_INF = math.inf


class Storage(Component):
    """The shared storage: bandwidth, shares, failing servers and metadata service."""

    name = "storage"
    provides = (STORAGE,)

    @classmethod
    def wanted(cls, sc: Scenario) -> bool:
        return sc.workload is not None

    @classmethod
    def build(cls, ctx: BuildContext) -> Storage:
        return cls(ctx)

    def __init__(self, ctx: BuildContext) -> None:
        sc = ctx.sc
        assert sc.workload is not None
        self.engine = ctx.engine
        self._env = ctx.engine.env
        self.spec = sc.storage if sc.storage is not None else StorageSection()
        bw = sc.workload.storage
        self.write_full_gb_per_s = bw.write_gb_per_s
        self.read_full_gb_per_s = bw.read_gb_per_s
        self.total_full_gb_per_s = (self.spec.total_gb_per_s if self.spec.total_gb_per_s is not None
                                    else bw.read_gb_per_s)
        self.gpus_per_node = sc.cluster.node.gpus
        self.available = True
        self._share = 1.0  # bandwidth share of the servers up
        self._parts: dict[str, FacilityParts] = {}
        srv = self.spec.servers
        self.n_servers = srv.count if srv is not None else 0
        self.k_servers = srv.required if srv is not None else 0
        self.servers_up = self.n_servers
        md = self.spec.metadata
        self.n_meta = md.count if md is not None else 0
        self.k_meta = int(md.required or md.count) if md is not None else 0
        self.meta_up = self.n_meta
        for name, part in self.spec.facility_parts().items():
            paths = ([f"storage.server{i:02d}" for i in range(part.count)] if name == "storage_server"
                     else [f"storage.metadata{i}" for i in range(part.count)])
            fp = self._parts[name] = FacilityParts(ctx.engine, name, paths, part)
            ctx.engine.bus.subscribe(fp.changed, functools.partial(self._on_unit, name))
        # transfers and data streams in progress
        self._writes: dict[int, float] = {}
        # what the checkpoint transfers and the servers leave, recomputed only after they change (_io_dirty):
        # the data capacity, the writes' bandwidth in use and the reads' sum, GB/s
        self._io_dirty = True
        self._stale = False  # a transfer_ends(share_next=True) left its _changed to the data_share that follows
        self._cap = self._w_in_use = self._r_sum = 0.0
        self._io_memo: dict[tuple[float, bool, float], tuple[float, float]] = {}  # _io_levels by its arguments
        self._reads: dict[int, float] = {}
        self._demand: dict[int, float] = {}
        # Σ of the demands, kept as they change (O(1) per change; exact sums only where a stream is limited)
        self._demand_sum = 0.0
        self._level = math.inf
        self._published = math.inf  # the data level the workload last heard of
        self._notify = self.engine.timer(self._publish_level)
        # accounts
        self._last_t = 0.0
        self._used = 0.0  # GB/s in use now
        self.used_gb = 0.0  # integral of the bandwidth in use, GB/s × h
        self.peak_gb_per_s = 0.0
        self._down_since = math.nan
        self.downtime_h = 0.0
        self.outages: list[tuple[float, float, str]] = []  # (start h, end h, cause)
        self._cause = ""
        self._publish_subs = self.engine.bus.handlers(Topic.STORAGE)

    # ---- the STORAGE service ---------------------------------------------------------------
    @property
    def write_gb_per_s(self) -> float:
        """Checkpoint write bandwidth with the servers up now, GB/s (all up: exactly the scenario's)."""
        s = self._share
        return self.write_full_gb_per_s if s == 1.0 else self.write_full_gb_per_s * s

    @property
    def read_gb_per_s(self) -> float:
        """Checkpoint read bandwidth with the servers up now, GB/s."""
        s = self._share
        return self.read_full_gb_per_s if s == 1.0 else self.read_full_gb_per_s * s

    @property
    def total_gb_per_s(self) -> float:
        """Bandwidth reads and writes share, with the servers up now, GB/s."""
        s = self._share
        return self.total_full_gb_per_s if s == 1.0 else self.total_full_gb_per_s * s

    def transfer_begins(self, jid: int, write: bool, gb_per_s: float) -> None:
        now = self._env._now  # (= self._account(), inline on the event loop's path)
        if now > self._last_t:
            self.used_gb += self._used * (now - self._last_t)
        self._last_t = now
        (self._writes if write else self._reads)[jid] = gb_per_s
        self._io_dirty = True
        self._changed()

    def transfer_ends(self, jid: int, write: bool, share_next: bool = False) -> None:
        """Job ``jid``'s transfer ended. ``share_next``: the caller sets a data demand next (:meth:`data_share`),
        at this instant, before anything reads the storage (a checkpoint written or a restart done: its job runs
        again).

        With ``share_next`` and no data stream now, this change's :meth:`_changed` is left to that
        :meth:`data_share` (``_stale``): it would find the level infinite (no stream) and tell no one, and its
        bandwidth in use, the writes' and reads' left with no data share (``w + min(cap, r_sum + 0)``), at most
        the use after the demand is set (``w + min(cap, r_sum + data)`` with the same ``w``, ``cap`` and
        ``r_sum``, ``data >= 0``: IEEE addition of a non-negative number and ``min`` are monotone), so the peak
        cannot move, integrated over no time (:meth:`data_share` accounts at this instant again)."""
        now = self._env._now  # (= self._account(), inline on the event loop's path)
        if now > self._last_t:
            self.used_gb += self._used * (now - self._last_t)
        self._last_t = now
        (self._writes if write else self._reads).pop(jid, None)
        self._io_dirty = True
        if share_next and not self._demand:
            self._stale = True  # (the _changed owed: data_share makes it)
        else:
            self._changed()

    def data_share(self, jid: int, demand_gb_per_s: float, transfer_next: bool = False) -> float:
        """Set job ``jid``'s data demand (GB/s, 0: none now) and return its share, GB/s. ``transfer_next``: the
        caller begins or ends a checkpoint transfer next, at this instant, before anything reads the storage.

        With ``transfer_next``, a demand ended that leaves no data stream is not followed by its own
        :meth:`_changed`: that call would find the level infinite (no stream) and tell no one, and the
        bandwidth in use at most what it was (the same writes, reads and capacity with no data share: the
        peak cannot move), integrated over no time (the transfer's own ``_changed`` follows at this instant
        and sets the level and the use of the state after both changes)."""
        old = self._demand.get(jid, 0.0)
        if demand_gb_per_s != old:
            now = self._env._now  # (= self._account(), inline on the event loop's path)
            if now > self._last_t:
                self.used_gb += self._used * (now - self._last_t)
            self._last_t = now
            if demand_gb_per_s > 0:
                self._demand[jid] = demand_gb_per_s
            else:
                del self._demand[jid]
            self._demand_sum = self._demand_sum - old + demand_gb_per_s if self._demand else 0.0
            if not (transfer_next and not self._demand and not self._io_dirty):
                self._stale = False
                self._changed()
        elif self._stale:  # a transfer's change left to this call (transfer_ends' share_next) and no other since
            self._stale = False
            self._changed()
        if demand_gb_per_s <= 0:
            return 0.0
        return min(demand_gb_per_s, self._level)

    def data_cache_hit(self, nodes: int, dataset_gb: float | None) -> float:
        c = self.spec.cache
        return phys.cache_hit_ratio(c.hit_ratio, c.capacity_gb_per_node, dataset_gb, nodes)

    # ---- shares and accounts -----------------------------------------------------------------
    def data_capacity_gb_per_s(self) -> float:
        """Bandwidth the training-data streams share now, GB/s (0 in an outage)."""
        if not self.available:
            return 0.0
        return phys.data_capacity_gb_per_s(self.read_gb_per_s, self.write_gb_per_s, self.total_gb_per_s,
                                           sum(self._writes.values()))

    def _changed(self) -> None:
        """Recompute the data level; when it moved and some job reads data, tell the workload (once per
        instant, after the change under way has finished)."""
        if self._io_dirty:  # (data_capacity_gb_per_s and the writes' use, their bandwidths and sum taken once)
            self._io_dirty = False
            ws = sum(self._writes.values())
            key = (self._share, self.available, ws)
            got = self._io_memo.get(key)
            if got is None:
                got = self._io_memo[key] = self._io_levels(*key)
            self._cap, self._w_in_use = got
            self._r_sum = sum(self._reads.values())
        cap = self._cap
        demand = self._demand
        data = self._demand_sum
        if not demand or (not self._reads and data <= cap * (1.0 - 1e-9)):
            # no stream, or every demand met (the running sum is within far less than 1e-9 of the exact one): no
            # stream is limited, the level is infinite as water_fill would say, without its O(jobs) pass
            level = _INF
        else:
            level = phys.water_fill(cap, list(demand.values()), len(self._reads))
            if level != _INF:
                data = sum(min(x, level) for x in demand.values())
        # bandwidth in use (GB/s): the checkpoint writes (at most the write bandwidth), and the checkpoint reads
        # and data streams' shares (at most ``cap``, the read bandwidth the writes leave); nothing in an outage
        if self.available:
            r = self._r_sum + data
            used = self._w_in_use + (r if r < cap else cap)  # (= min(cap, r))
        else:
            used = 0.0
        self._used = used
        if self.peak_gb_per_s < used:
            self.peak_gb_per_s = used
        self._level = level
        if level != self._published and demand and not self._notify.pending:
            self._notify.set(self._env._now)

    def _io_levels(self, s: float, available: bool, ws: float) -> tuple[float, float]:
        """The data capacity and the writes' bandwidth in use (GB/s) with the servers' bandwidth share ``s``,
        the availability and the checkpoint writes' sum ``ws`` (GB/s): a function of these three alone, kept
        per key in ``_io_memo`` (a few keys: writes are equal shares of one bandwidth)."""
        if len(self._io_memo) >= 64:
            self._io_memo.clear()
        w = self.write_full_gb_per_s if s == 1.0 else self.write_full_gb_per_s * s
        if available:
            r = self.read_full_gb_per_s if s == 1.0 else self.read_full_gb_per_s * s
            tot = self.total_full_gb_per_s if s == 1.0 else self.total_full_gb_per_s * s
            cap = phys.data_capacity_gb_per_s(r, w, tot, ws)
        else:
            cap = 0.0
        return cap, min(w, ws)

    def _account(self) -> None:
        now = self._env._now
        dt = now - self._last_t
        if dt > 0:
            self.used_gb += self._used * dt
        self._last_t = now

    def _publish_level(self) -> None:
        """The deferred call: tell the workload when the data level moved since it last heard (a change
        undone within the instant is not news)."""
        if self._level != self._published:
            self._publish()

    def _publish(self) -> None:
        self._published = self._level
        avail = self.available
        for fn in self._publish_subs:  # = bus.publish(Topic.STORAGE, available)
            fn(avail)

    def _on_unit(self, name: str, idx: int, ok: bool) -> None:
        """A server or metadata unit failed (ok False) or was repaired: new bandwidth share, availability."""
        self._account()
        if name == "storage_server":
            self.servers_up += 1 if ok else -1
        else:
            self.meta_up += 1 if ok else -1
        was = self.available
        self._io_dirty = True
        self._share = (phys.servers_bandwidth_share(self.servers_up, self.n_servers, self.k_servers)
                       if self.n_servers else 1.0)
        self.available = self._share > 0.0 and self.meta_up >= self.k_meta
        now = self._env._now
        if was and not self.available:
            self._down_since = now
            self._cause = "storage_metadata" if self.meta_up < self.k_meta else "storage_server"
        elif self.available and not was:
            self.downtime_h += now - self._down_since
            self.outages.append((self._down_since, now, self._cause))
            self._down_since = math.nan
        self._changed()
        self._notify.cancel()
        self._publish()  # at once: the workload stops (or resumes) the jobs that read or write

    # ---- component protocol --------------------------------------------------------------------
    def facility_parts(self) -> Mapping[str, FacilityParts]:
        return self._parts

    def finish(self) -> None:
        self._account()
        if not self.available:
            now = self._env._now
            self.downtime_h += now - self._down_since
            self.outages.append((self._down_since, now, self._cause))
            self._down_since = now

    def results(self, so_far: ResultsSoFar) -> tuple[dict[str, float], dict[str, pd.DataFrame]]:
        H = self.engine.horizon_h
        m = {
            "storage.bandwidth_gb_per_s.mean": self.used_gb / H,
            "storage.bandwidth_gb_per_s.peak": self.peak_gb_per_s,
            "storage.downtime_h": self.downtime_h,
            "storage.availability": 1.0 - self.downtime_h / H,
            "storage.outages": float(len(self.outages)),
        }
        out = pd.DataFrame(self.outages, columns=["start_h", "end_h", "cause"]).astype(
            {"start_h": float, "end_h": float, "cause": object})
        return m, {"storage_outages": out}


__all__ = ["Storage"]
