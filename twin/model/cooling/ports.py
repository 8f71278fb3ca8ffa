"""What each room of the cooling component offers the others: one protocol per room, naming the methods and
state another room may call or read (everything else on a room is its own).

A room holds its collaborators typed by these protocols (``component.Thermal`` hands it the rooms
themselves, which mypy checks against them there), so the room modules import only this module and
``arrays``, never each other: the coupling between rooms is written down here and has no import cycle.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:  # pragma: no cover
    from twin.model.cluster import SpeedSource
    from twin.scenario.cooling import Evaporative

F = NDArray[np.float64]
I64 = NDArray[np.int64]


class GpuPort(Protocol):
    """``gpu.GpuState``: the units' update, the wake-up, the accounting time and the peak."""

    in_update: int  # depth of update calls
    multi_speed: bool  # a second speed source
    speed_src: SpeedSource  # the 'thermal' speed caps' writer
    t_acc: float  # the integrals' time, h
    tpeak_c: float  # hottest GPU temperature so far, °C
    trace_from: float  # the trace window, h
    trace_to: float
    ucap: F | None  # per-GPU thermal caps for a site cap's water-filling
    wake_t: float  # the pending wake-up, h (inf: none)

    def gpus(self, nodes: I64) -> I64: ...

    def update(self, nodes: I64, flushed: bool = False) -> None: ...

    def integrate(self, now: float) -> None: ...

    def schedule_wake(self, t: float) -> None: ...

    def rebind(self) -> None: ...  # (the update's arguments bound at the start changed: a speed source added)


class LazyPort(Protocol):
    """``lazy.LazyCrossings``: silent crossings."""

    silent_on: bool
    n_silent: int
    rose: bool
    oth_caps: list[F]
    settled_sp: list[I64]
    traced_u: NDArray[np.bool_] | None
    silent: NDArray[np.bool_]

    def group(self, nodes: I64) -> None: ...

    def plan(self, nodes: I64) -> None: ...

    def settle(self, idx: I64, now: float) -> None: ...

    def settle_in(self, gsl: Any, now: float) -> None: ...

    def settled(self, n_sil: int, tmax: float, nodes: I64, new_caps: F, it_caps: F, tp_t: F, tp_dv: F, ts: F, dP: F,
                e_wh: float, dP_sum: float, now: float) -> None: ...

    def settled_in(self, cleared: int, n_sil: int, sres: F, ntp: int, m: int, e_wh: float, dP_sum: float,
                   now: float) -> None: ...

    def other_speeds(self, nodes: Any) -> F: ...

    def trace_units(self, on: bool) -> None: ...

    def wake_at_due(self) -> None: ...


class ReplayPort(Protocol):
    """``replay.DeferredReplay``: the log of cool nodes' load changes and their cool flags."""

    n_short: int  # air zones that cannot carry all their nodes at full load
    tracing: bool  # inside the trace window

    def flush_for(self, nodes: I64 | slice) -> None: ...

    def flush_log(self) -> None: ...

    def set_cool(self, nodes: I64 | slice) -> None: ...


class TripsPort(Protocol):
    """``trips.Trips``: trips and restarts."""

    tripped: dict[int, tuple[float, str]]
    trip_inlet_n: F | None
    z_trip_levels: list[F]

    def trip(self, node: int, reason: str) -> None: ...

    def try_restarts(self) -> None: ...


class AgeingPort(Protocol):
    """``ageing.Ageing``: the ageing clocks."""

    aged: list[dict[str, Any]]
    aged_air: list[dict[str, Any]]

    def update(self, nodes: I64, only: list[dict[str, Any]] | None = None) -> None: ...

    def air_update(self, nodes: I64) -> None: ...


class ResponsePort(Protocol):
    """``response.OperatorResponse``: the operator's response to a shortfall."""

    enabled: bool

    def admit_budget_w(self, z: int) -> float: ...

    def replan(self) -> None: ...

    def shortfall(self, z: int, tgt_c: float) -> None: ...


class LinkPort(Protocol):
    """``powered.PlantLink``: the plant's gate and supply offset."""

    plant_c: float

    def gated(self, kind: str, fn: Callable[[int, bool], None]) -> Callable[[int, bool], None]: ...


class EvaporativePort(Protocol):
    """``evaporative.EvaporativeAir``: the base supply, humidity and water."""

    evap: Evaporative | None
    base_h: list[float] | None
    hum_af_cur: float

    def base_supply_c(self, t_h: float) -> float: ...

    def base_change_hours(self) -> I64: ...

    def humidity_hour(self) -> None: ...

    def water_breaks_h(self) -> F: ...

    def energy(self, bp: F, dur: F, air_heat_w: F, it_kwh: float) -> tuple[F | None, dict[str, float]]: ...


class AirPort(Protocol):
    """``air.AirRooms``: the air zones' supply, heat and capacity, and the fans."""

    air_share: float | None
    fan_part: str | None
    hours: list[int]
    r_room: float
    z_tgt: F

    def air_heat_w(self, gpu_w: Any, up: Any, nodes: Any = None) -> Any: ...

    def figs_w(self, nodes: Any) -> tuple[Any, Any]: ...

    def node_offsets_c(self) -> F | None: ...

    def inlet_offsets_c(self) -> F | None: ...

    def supply_now(self, z: int) -> float: ...

    def zone_cap_w(self, z: int) -> float: ...

    def zone_heat(self, nsl: Any, nodes: I64, heat: Any) -> None: ...

    def retarget(self, z: int) -> None: ...

    def schedule_hour(self, i: int) -> None: ...

    def shift_zone(self, z: int, delta: float) -> None: ...
