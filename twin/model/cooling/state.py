"""The state of the cooling component in one place: each attribute under the room that creates it (in
its ``_init_<room>``) and chiefly writes it, and the methods one room calls on another.

Declarations only: the rooms' mixins inherit ``CoolingState`` so that a type checker sees the one object
they make together; at run time the class is empty (annotations without values, the method stubs
under ``TYPE_CHECKING``), so it adds nothing to an attribute lookup.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:  # pragma: no cover
    import simpy

    from twin.model.cluster import Cluster, SpeedSource
    from twin.model.component import BuildContext
    from twin.model.engine import Engine, Timer
    from twin.model.parts import FacilityParts, PartPopulation
    from twin.model.repair import RepairShop
    from twin.model.it_power import ITPower
    from twin.scenario.cooling import Air, Cooling, Liquid
    from twin.scenario.schema import Scenario


class CoolingState:
    """Attributes and cross-room methods of ``Thermal`` (see the module docstring)."""

    # ---- component (Thermal.__init__): its build context, parameters every room reads, the power-chain link
    ctx: BuildContext
    parts: Mapping[str, PartPopulation]  # the node part populations (ctx.parts)
    shop: RepairShop
    _facility: dict[str, FacilityParts]  # the site-level populations this component owns (facility_parts)
    engine: Engine
    _env: simpy.Environment
    cluster: Cluster
    sc: Scenario
    spec: Cooling
    on: bool  # temperatures modelled (cooling.thermal)
    type: str  # "air", "liquid" or "hybrid"
    N: int  # nodes
    g: int  # GPUs per node
    u: int  # thermal units per node (g with an R spread, else 1)
    w: float  # GPUs per unit
    G: int  # units
    _ar: NDArray[np.int64]
    _all: NDArray[np.int64]
    speed_src: SpeedSource  # the 'thermal' speed-cap source (its writer's handle: caps, changed)
    speed_caps: NDArray[np.float64]  # its caps per node (speed_src.caps)
    idle_w: float
    tdp_w: float
    pmin_w: float
    slow_c: float
    shut_c: float
    alpha: float
    C: float  # J/°C
    non_gpu_w: float  # at full utilisation
    non_gpu_idle_w: float  # at zero utilisation (= non_gpu_w: constant)
    max_inlet_c: float
    reboot_h: float
    H: float  # horizon, h
    n_hours: int
    ambient_h: NDArray[np.float64]
    it: ITPower
    _it_caps: NDArray[np.float64]
    _pcap: NDArray[np.float64]
    _n_pcap: int
    _in_update: int
    _speed_later: list[NDArray[np.int64]]
    air: Air | None
    liquid: Liquid | None
    gpu_on_liquid: bool
    timeline: list[tuple[float, str, int, float, float, float, float]]
    _multi_speed: bool
    _ucap: NDArray[np.float64] | None  # per-GPU thermal caps for a site cap's water-filling (ITPower.unit_cap)

    # ---- evaporative (EvaporativeAir._init_evap): base supply of the air zones, water supply
    evap: Any  # twin.scenario.cooling.Evaporative | None
    _base_h: list[float] | None
    _water_changes: list[tuple[float, bool]]
    wet_bulb_h: NDArray[np.float64]
    _wet_base_h: NDArray[np.float64]
    _dry_base_h: NDArray[np.float64]
    water_ok: bool
    water: FacilityParts
    modes: Any  # twin.model.cooling.humidity.Modes: hourly supply state and mode with and without water
    _hum_af_cur: float  # humidity factor on the X-factor now (1 outside the envelope's humidity excursions)
    _hum_out: list[NDArray[np.bool_]] | None

    # ---- gpu (GpuState._init_gpu, _init_trace): unit state, accounting, trace
    rspread: NDArray[np.float64]
    rbase: NDArray[np.float64]
    noff: NDArray[np.float64] | None  # per node: inlet air above its zone's held supply, °C (air halls; None: 0)
    toff: NDArray[np.float64] | None  # per unit: inlet offset above its node's inlet, °C (air halls; None: 0)
    toff_max_n: NDArray[np.float64]  # per node: the largest of its units' offsets, °C
    rfactor: NDArray[np.float64]  # per node: fans (air) or no flow (liquid) multiply R
    inlet: NDArray[np.float64]  # per node, °C
    T: NDArray[np.float64]
    t0: NDArray[np.float64]
    tss: NDArray[np.float64]
    tau: NDArray[np.float64]
    engaged: NDArray[np.bool_]
    speed: NDArray[np.float64]
    gon: NDArray[np.bool_]
    t_next: NDArray[np.float64]
    _uidx: NDArray[np.int64]
    _heat_mode: int
    _heat_share: float
    _ng_w: float
    _now1: NDArray[np.float64]
    kind: NDArray[np.int8]
    _wake_t: float
    _wake_timer: Timer
    _n_hot: int
    _acc_hot: bool
    _tp_hot: bool
    hist: NDArray[np.float64]
    tpeak_c: float
    n_busy: NDArray[np.float64]
    n_capped: NDArray[np.float64]
    n_spsum: NDArray[np.float64]
    n_tp: NDArray[np.float64]
    _tot: NDArray[np.float64]
    _acc: NDArray[np.float64]
    _t_acc: float
    _tp_t: list[float]
    _tp_dv: list[float]
    trace_mask: NDArray[np.bool_]
    trace_from: float
    trace_to: float
    trace_rows: list[NDArray[np.float64]]

    # ---- lazy (LazyCrossings._init_lazy, _start_lazy): silent slowdown crossings of per-GPU units
    _silent_on: bool
    _n_silent: int
    _rose: bool
    silent: NDArray[np.bool_]
    t_due: NDArray[np.float64]
    _gid: NDArray[np.int64]
    _gid_of: dict[int, tuple[NDArray[np.int64], int]]
    _groups: dict[int, NDArray[np.int64]]
    _next_gid: int
    _pw_t: list[NDArray[np.float64]]
    _pw_dv: list[NDArray[np.float64]]
    x_P: NDArray[np.float64]
    x_sp: NDArray[np.float64]
    x_tss: NDArray[np.float64]
    x_ok: NDArray[np.bool_]
    x_cap: NDArray[np.float64] | None
    _oth_caps: list[NDArray[np.float64]]
    _oth_n: NDArray[np.float64]
    pw: NDArray[np.float64]
    _traced_u: NDArray[np.bool_] | None
    _settled_sp: list[NDArray[np.int64]]

    # ---- trips (Trips._init_trips)
    tripped: dict[int, tuple[float, str]]
    _tripped_order: list[int]
    pending: dict[int, Timer]
    trip_rows: list[tuple[int, float, float, str]]
    trip_inlet_n: NDArray[np.float64] | None  # per node: the zone supply at which its inlet reaches max_inlet_c, °C
    z_trip_levels: list[NDArray[np.float64]]  # per air zone: its nodes' distinct trip supplies, increasing, °C

    _reserved_w: dict[int, float]

    # ---- response (OperatorResponse._init_response): the operator's caps and drains (cooling.response)
    op_cap_w: NDArray[np.float64]  # per node: the operator's GPU cap, W (inf: none)
    _resp_on: bool

    # ---- air (AirRooms._init_air, _init_fans, _start_air)
    zones: list[tuple[int, int]]
    zone_of: NDArray[np.int64]
    crah_healthy: NDArray[np.int64]
    _derate_h: list[float]
    _crah_w: NDArray[Any]  # W
    z_cap: NDArray[Any]  # W
    z_S0: NDArray[np.float64]
    z_ta: NDArray[np.float64]
    z_tgt: NDArray[np.float64]
    z_held: NDArray[np.float64]
    z_step_timer: list[Timer]
    z_trip_timer: list[Timer]
    z_q: NDArray[np.float64]
    z_reserved: NDArray[np.float64]
    z_last: NDArray[np.float64]
    z_hot_node_h: float
    z_over_h: float
    z_over_since: NDArray[np.float64]
    r_room: float
    crah: FacilityParts
    node_air_w: NDArray[np.float64]
    fan_part: str | None
    fans_h: NDArray[np.int64]
    fans_req: int
    _hours: list[int]
    _f_hours: NDArray[np.float64]
    _hour_timer: Timer
    _hour_i: int

    # ---- liquid (LiquidLoops._init_liquid)
    loops: list[tuple[int, int]]
    loop_of: NDArray[np.int64]
    cdu_ok: NDArray[np.bool_]
    pumps_ok: NDArray[np.int64]
    loop_flow: NDArray[np.bool_]
    loop_noflow_since: NDArray[np.float64]
    noflow_h: float
    cdu: FacilityParts
    pump: FacilityParts
    leak: FacilityParts

    air_share: float | None  # (AirRooms._init_air) share of node heat on air under heat capture, else None

    # ---- ageing (Ageing._init_ageing)
    aged: list[dict[str, Any]]  # laws on the GPU's temperature or GPU inlet (updated with the GPUs)
    aged_air: list[dict[str, Any]]  # the X-factor on the node's inlet air (updated at held-supply changes)
    _age_timer: Any  # twin.model.engine.Timer of the next aged failure

    # ---- replay (DeferredReplay._init_replay): cool flags, the log, zones' full-load heat
    rmax_n: NDArray[np.float64]
    _tdp_rmax: NDArray[np.float64]
    cool: NDArray[np.bool_]
    _n_warm: int
    _log_t: list[float]
    _log_nodes: list[NDArray[np.int64]]
    _log_util: list[float]
    _log_up: dict[int, bool]
    _log_sp: dict[int, NDArray[np.float64]]
    _split: dict[int, tuple[Any, NDArray[np.bool_], NDArray[np.int64], NDArray[np.int64]]]
    _nd_dtype: Any  # np.int16 or np.int64
    _tracing: bool
    z_full: NDArray[np.float64]
    z_slack: NDArray[np.bool_]
    _n_short: int

    if TYPE_CHECKING:  # the methods one room calls on another (defined in the room named)
        def _update(self, nodes: NDArray[np.int64]) -> None:  # gpu
            raise NotImplementedError

        def _set_cool(self, nodes: NDArray[np.int64] | slice) -> None:  # replay
            raise NotImplementedError

        def _flush_for(self, nodes: NDArray[np.int64] | slice) -> None:  # replay
            raise NotImplementedError

        def _trip(self, node: int, reason: str) -> None:  # trips
            raise NotImplementedError

        def _try_restarts(self) -> None:  # trips
            raise NotImplementedError

        def _air_heat_w(self, gpu_w: Any, up: Any) -> Any:  # air
            raise NotImplementedError

        def _zone_heat(self, nsl: Any, nodes: NDArray[np.int64], heat: Any) -> None:  # air
            raise NotImplementedError

        def _supply_now(self, z: int) -> float:  # air
            raise NotImplementedError

        def _zone_cap_w(self, z: int) -> float:  # air
            raise NotImplementedError

        def _retarget(self, z: int) -> None:  # air
            raise NotImplementedError

        def _schedule_hour(self, i: int) -> None:  # air
            raise NotImplementedError

        def _shortfall(self, z: int, tgt_c: float) -> None:  # response
            raise NotImplementedError

        def _resp_replan(self) -> None:  # response
            raise NotImplementedError

        def _admit_budget_w(self, z: int) -> float:  # response
            raise NotImplementedError

        def _base_supply_c(self, t_h: float) -> float:  # evaporative
            raise NotImplementedError

        def _base_change_hours(self) -> NDArray[np.int64]:  # evaporative
            raise NotImplementedError

        def _water_breaks_h(self) -> NDArray[np.float64]:  # evaporative
            raise NotImplementedError

        def _evap_metrics(self, bp: NDArray[np.float64], dur: NDArray[np.float64], air_heat_w: NDArray[np.float64],
                          it_kwh: float) -> dict[str, float]:  # evaporative
            raise NotImplementedError

        def _evap_energy(self, bp: NDArray[np.float64], dur: NDArray[np.float64], air_heat_w: NDArray[np.float64],
                         it_kwh: float) -> tuple[NDArray[np.float64] | None, dict[str, float]]:
            raise NotImplementedError  # evaporative

        def _humidity_hour(self) -> None:  # evaporative
            raise NotImplementedError

        def _schedule_wake(self, t: float) -> None:  # gpu
            raise NotImplementedError

        def _gpus(self, nodes: NDArray[np.int64]) -> NDArray[np.int64]:  # gpu
            raise NotImplementedError

        def _integrate(self, now: float) -> None:  # gpu
            raise NotImplementedError

        def _plan(self, nodes: NDArray[np.int64]) -> None:  # lazy
            raise NotImplementedError

        def _group(self, nodes: NDArray[np.int64]) -> None:  # lazy
            raise NotImplementedError

        def _settle_in(self, gsl: Any, now: float) -> None:  # lazy
            raise NotImplementedError

        def _other_speeds(self, nodes: Any) -> NDArray[np.float64]:  # lazy
            raise NotImplementedError

        def _wake_at_due(self) -> None:  # lazy
            raise NotImplementedError

        def _settle(self, idx: NDArray[np.int64], now: float) -> None:  # lazy
            raise NotImplementedError

        def _trace_units(self, on: bool) -> None:  # lazy
            raise NotImplementedError

        def _air_node_offsets_c(self) -> NDArray[np.float64] | None:  # air
            raise NotImplementedError

        def _air_inlet_offsets_c(self) -> NDArray[np.float64] | None:  # air
            raise NotImplementedError

        def _age_update(self, nodes: NDArray[np.int64], only: list[dict[str, Any]] | None = None) -> None:  # ageing
            raise NotImplementedError

        def _age_air_update(self, nodes: NDArray[np.int64]) -> None:  # ageing
            raise NotImplementedError
