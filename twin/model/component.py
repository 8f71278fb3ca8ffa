"""The component contract: what every model component declares and implements.

A component (the network, the power chain, cooling, the workload, costs, rack parts, the shared IT
power...) is a subclass of :class:`Component`. It declares

* ``name``: its path (the scenario section it models, e.g. ``"power"``);
* ``provides``: the :class:`Service` keys it offers to other components (the component object
  itself is the service, unless :meth:`Component.service` says otherwise);
* ``requires``: services it cannot be built without; ``uses``: services it takes when present;
* ``wanted(sc)``: whether the scenario asks for it; a provider with ``on_demand = True`` is built
  only when a wanted component requires one of its services;

and implements ``build(ctx)`` (reads the scenario and the services it declared, from a
:class:`BuildContext`), ``start()``, ``finish()`` and ``results(so_far)``. Site-level part populations
and the down causes it attributes to a part are returned by ``facility_parts()`` and
``down_causes()``: :mod:`twin.sim` registers them, components never write into the model.

:mod:`twin.sim` orders the components so that every provider is built before its consumers, and
checks before anything is built or run that every required service has exactly one provider;
otherwise it raises :class:`ContractError` (a bug in the component set, not bad input: exit 3).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar

import numpy as np
import pandas as pd
from numpy.typing import NDArray

if TYPE_CHECKING:  # pragma: no cover
    from twin.model.causes import DownCause
    from twin.model.cluster import Cluster
    from twin.model.engine import Engine
    from twin.model.parts import FacilityParts, PartPopulation
    from twin.model.repair import RepairShop
    from twin.observe.recorder import Recorder
    from twin.scenario.schema import Scenario

T = TypeVar("T")

Metrics = dict[str, float]
Tables = dict[str, pd.DataFrame]


class ContractError(Exception):
    """The component set breaks the contract: a required service without a provider, a service with
    two providers, a dependency cycle, a service asked for without being declared, a facility part
    or metric registered twice. A bug (internal error, exit 3), raised at build, before ``env.run``."""


class Service(Generic[T]):
    """A typed key for one service: ``ctx.service(FABRIC)`` is a :class:`Fabric`."""

    __slots__ = ("doc", "name")

    def __init__(self, name: str, doc: str) -> None:
        self.name = name
        self.doc = doc

    def __repr__(self) -> str:
        return f"Service({self.name!r})"


class Fabric(Protocol):
    """What the compute fabric offers its consumers (the workload): placement and bandwidth."""

    node_group: NDArray[np.int64]
    """Leaf group of each node."""

    def job_bandwidth_gbps(self, nodes: NDArray[np.int64]) -> tuple[float, float]:
        """(ideal, current) per-node bandwidth of a job on ``nodes``, Gbit/s."""
        ...

    def pack(self, pool: Sequence[int] | NDArray[np.int64], k: int) -> list[int]:
        """``k`` nodes of ``pool`` placed in as few leaf groups as possible."""
        ...

    def spans_groups(self, nodes: NDArray[np.int64]) -> bool:
        """True when ``nodes`` are in more than one leaf group."""
        ...


class Jobs(Protocol):
    """What the workload offers the node-health model: which job a node runs, and a rollback."""

    def job_on(self, node: int) -> int:
        """Id of the job holding ``node`` now, or -1."""
        ...

    def rollback(self, jid: int, before_h: float, node: int, cause: DownCause) -> tuple[float, int] | None:
        """Roll job ``jid`` back to its last checkpoint captured before ``before_h`` (its state since is
        corrupt) and restart it without ``node`` if it holds it; returns (the progress lost in ideal
        hours, the job's GPUs), None when the job is done or gone."""
        ...

    def discarded(self, jid: int, at_h: float) -> bool:
        """Whether job ``jid`` no longer holds the state it computed at ``at_h`` (it restarted since from
        a checkpoint captured before then): a corruption then is gone with that state."""
        ...


class StorageService(Protocol):
    """What the shared storage offers the workload (twin.model.storage.Storage): its bandwidths now, its
    availability, the checkpoint transfers it carries and the training-data shares."""

    available: bool
    """False during an outage (metadata service down, or fewer servers up than needed)."""

    @property
    def write_gb_per_s(self) -> float:
        """Checkpoint write bandwidth now (the servers up), GB/s."""
        ...

    @property
    def read_gb_per_s(self) -> float:
        """Checkpoint read bandwidth now (the servers up), GB/s."""
        ...

    def transfer_begins(self, jid: int, write: bool, gb_per_s: float) -> None:
        """Job ``jid`` starts a checkpoint write (or read) at ``gb_per_s``."""
        ...

    def transfer_ends(self, jid: int, write: bool, share_next: bool = False) -> None:
        """Job ``jid``'s checkpoint write (or read) ended or failed; ``share_next``: the caller sets its data
        demand next (:meth:`data_share`), at this instant (the service may then take both changes at once)."""
        ...

    def data_share(self, jid: int, demand_gb_per_s: float, transfer_next: bool = False) -> float:
        """Set job ``jid``'s training-data demand now (GB/s; 0: it reads nothing now) and return its share;
        ``transfer_next``: the caller begins or ends a checkpoint transfer next, at this instant (the service may
        then take both changes' consequences at once)."""
        ...

    def data_cache_hit(self, nodes: int, dataset_gb: float | None) -> float:
        """Share of a job's reads on ``nodes`` nodes its node caches serve."""
        ...


FABRIC: Service[Fabric] = Service(
    "fabric", "the compute fabric: bandwidth, leaf groups and placement (twin.model.network.Network)")

JOBS: Service[Jobs] = Service(
    "jobs", "the job a node runs and the rollback of a job to an earlier checkpoint (twin.model.workload.Workload)")

STORAGE: Service[StorageService] = Service(
    "storage", "the shared storage: bandwidths, availability, checkpoint transfers and data shares "
               "(twin.model.storage.Storage)")

SERVICES: tuple[Service[Any], ...] = (FABRIC, JOBS, STORAGE)
"""The services declared here, with their protocols; ``IT_POWER`` is declared with its provider
(:mod:`twin.model.it_power`: no type-only cycle). docs/architecture.md lists them all."""


@dataclass(frozen=True)
class BuildContext:
    """What a component's build step receives: the scenario, the shared core of the replication and
    the services it declared (``service`` / ``optional``). ``facility`` is a read-only view of the
    site-level populations registered so far (all of them by the time ``start()`` runs)."""

    sc: Scenario
    engine: Engine
    cluster: Cluster
    parts: Mapping[str, PartPopulation]
    shop: RepairShop
    recorder: Recorder
    facility: Mapping[str, FacilityParts]
    component: type[Component]
    _services: Mapping[Service[Any], object] = field(repr=False)

    def service(self, key: Service[T]) -> T:
        """The provider of a service this component ``requires``."""
        if key not in self.component.requires:
            raise ContractError(f"component {self.component.name!r} asked for service {key.name!r} "
                                "without declaring it in requires")
        return self._services[key]  # type: ignore[return-value]  # Service[T] keys hold T (sim checks)

    def optional(self, key: Service[T]) -> T | None:
        """The provider of a service this component ``uses``, or None when nothing provides it."""
        if key not in self.component.uses:
            raise ContractError(f"component {self.component.name!r} asked for service {key.name!r} "
                                "without declaring it in uses")
        return self._services.get(key)  # type: ignore[return-value]


@dataclass(frozen=True)
class ResultsSoFar:
    """The metrics and tables of the core and of the components before this one (read-only)."""

    metrics: Mapping[str, float]
    tables: Mapping[str, pd.DataFrame]


class Component:
    """Base class of the model components (see the module docstring for the contract)."""

    name: ClassVar[str]
    provides: ClassVar[tuple[Service[Any], ...]] = ()
    requires: ClassVar[tuple[Service[Any], ...]] = ()
    uses: ClassVar[tuple[Service[Any], ...]] = ()
    on_demand: ClassVar[bool] = False
    """True for a provider built only when a wanted component requires its service."""

    @classmethod
    def wanted(cls, sc: Scenario) -> bool:
        """True when the scenario asks for this component (on-demand providers: False)."""
        raise NotImplementedError(f"{cls.__name__}.wanted")

    @classmethod
    def build(cls, ctx: BuildContext) -> Component:
        """Build the component: read the scenario, take the declared services, subscribe to the bus."""
        raise NotImplementedError(f"{cls.__name__}.build")

    def service(self, key: Service[Any]) -> object:
        """The object that provides ``key`` (one of ``provides``): the component itself by default."""
        return self

    def facility_parts(self) -> Mapping[str, FacilityParts]:
        """Site-level part populations this component owns, by part name (started and summarised
        with the node parts)."""
        return {}

    def down_causes(self) -> Mapping[str, str]:
        """Causes of node-down intervals this component attributes to a part: cause label → part name (a
        part's own name and ``repair:<part>`` belong to it without being listed)."""
        return {}

    def start(self) -> None:
        """Schedule the component's first events (after every component is built)."""

    def finish(self) -> None:
        """Close open accounts at the horizon."""

    def results(self, so_far: ResultsSoFar) -> tuple[Metrics, Tables]:
        """The component's own metrics and tables; ``so_far`` holds those of the core and of the
        components before it. A key already in ``so_far`` is a :class:`ContractError`."""
        return {}, {}


__all__ = ["FABRIC", "JOBS", "SERVICES", "STORAGE", "BuildContext", "Component", "ContractError", "Fabric", "Jobs",
           "Metrics", "ResultsSoFar", "Service", "StorageService", "Tables"]
