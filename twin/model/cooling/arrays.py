"""What the rooms of the cooling component share: the parameters every room reads (``CoolingParams``, fixed
at build) and the per-unit, per-node, per-zone and per-loop arrays (``CoolingArrays``) that more than one
room reads or writes.

Each room is an object (``gpu.GpuState``, ``air.AirRooms``, ``trips.Trips``, ...) built by
``component.Thermal`` with the two records and what it needs of the model (engine, cluster, IT power,
facility part specs); a room's own state (its timers, accounts, logs) stays on the room. The arrays record
is filled as the rooms are built (each field's comment names the room that creates it) and, for the silent
crossings' stash, at the start; after that only ``z_cap`` and ``z_slack`` are replaced (at a change of an air
zone's capacity), the others change in place, so a hot path may bind an array, or the record, to a local.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from twin.scenario.pools import pool_heat_sink

if TYPE_CHECKING:  # pragma: no cover
    from twin.scenario.cooling import Air, Cooling, Liquid
    from twin.scenario.schema import Scenario

F = NDArray[np.float64]
I64 = NDArray[np.int64]

# rows of CoolingArrays.ublk, the units' float state in one block (as twin.kernels_units' R_* and N_ROWS, which
# the fused kernels index; tests/test_kernels_units.py pins the two equal): each name below a view of its row
R_T, R_TSS, R_T0, R_TAU, R_SPEED, R_NEXT, R_DUE, R_XP, R_XSP, R_XTSS, R_PW = range(11)
N_ROWS = 11
ROW_PAD = 8  # elements after each row (64 bytes: rows 2**k bytes apart would share the L1 cache's sets)
# rows of CoolingArrays.nblk, the accounts in one block (as twin.kernels' and twin.kernels_units' A_*, pinned equal):
# per node busy GPUs, capped busy GPUs, Σ speed, effective GPUs; the four site totals integrated and now (0–3)
A_BUSY, A_CAPPED, A_SPSUM, A_TP, A_ACC, A_TOT = range(6)
N_AROWS = 6
# rows of CoolingArrays.bblk, the units' bool state in one block (as twin.kernels_units' B_*, pinned equal)
B_GON, B_ENG, B_SILENT, B_XOK = range(4)
N_BROWS = 4
B = NDArray[np.bool_]


def _f() -> F:
    return np.zeros(0)


def _i() -> I64:
    return np.zeros(0, dtype=np.int64)


def _b() -> B:
    return np.zeros(0, dtype=bool)


@dataclass(frozen=True)
class CoolingParams:
    """The parameters every room reads (``Thermal`` sets them from the scenario; units in the names)."""

    sc: Scenario
    spec: Cooling  # the scenario's cooling section
    on: bool  # temperatures modelled (cooling.thermal)
    type: str  # "air", "liquid" or "hybrid"
    air: Air | None
    liquid: Liquid | None
    gpu_on_liquid: bool  # the GPUs sit on cold plates (liquid, hybrid)
    n_nodes: int
    gpus_per_node: int
    units_per_node: int  # thermal units per node: gpus_per_node when GPUs differ (an R spread, inlet offsets), else 1
    gpus_per_unit: float  # GPUs one thermal unit stands for
    n_units: int  # thermal units in all
    unit_range: I64  # arange(units_per_node)
    all_nodes: I64  # arange(n_nodes)
    idle_w: float  # GPU power at idle, W
    tdp_w: float  # GPU demand at full load, W
    pmin_w: float  # lowest GPU power cap, W
    slow_c: float  # GPU slowdown temperature, °C
    shut_c: float  # GPU shutdown temperature, °C
    alpha: float  # speed exponent of a capped GPU
    c_j_per_c: float  # GPU heat capacity, J/°C
    non_gpu_w: float  # non-GPU node power at full utilisation, W
    non_gpu_idle_w: float  # ... at zero utilisation (= non_gpu_w: constant), W
    max_inlet_c: float  # node inlet trip limit, °C
    reboot_h: float  # a tripped node's reboot, h
    horizon_h: float
    n_hours: int  # hours of the hourly series (ceil(horizon) + 1)
    ambient_h: F  # outdoor dry-bulb per hour, °C
    figs: F | None = None  # node pools of other power figures (cluster.pools): per node (rows) its GPU idle W, demand
    # at full load W, lowest cap W, speed exponent, non-GPU W at full and zero utilisation (shape (6, n_nodes),
    # C-contiguous: the kernels' `pf`); None: every node has the scalars above (no pools, or pools of the same figures)
    other: B | None = None  # per node: its figures differ from the scalars above (a pool's node; None: none do)


def pool_thermal(sc: Scenario) -> tuple[F | None, B | None]:
    """``CoolingParams.figs`` and ``.other`` of a hall of node pools (``cluster.pools``, issue 52): each node's
    own power figures, from its pool's node (``Cluster.node_pools``), when some pool's differ from
    ``cluster.node``'s (else None), and the nodes whose figures or GPU heat sink (``pool_heat_sink``) differ from
    the hall's (None when none do: every node takes the scalars, the hall's path unchanged)."""
    cl = sc.cluster
    if not cl.pools or sc.cooling is None:
        return None, None
    gp = sc.cooling.gpu
    hall_r = gp.r_cold_plate_c_per_w if sc.cooling.type in ("liquid", "hybrid") else gp.r_air_c_per_w
    sinks = pool_heat_sink(cl, "r_cold_plate_c_per_w" if sc.cooling.type in ("liquid", "hybrid") else
                           "r_air_c_per_w", hall_r)
    rows = []
    for (a, b, node), (_, _, r) in zip(cl.node_pools(), sinks):
        g = node.gpu
        rows.append((a, b, (float(g.idle_w), float(g.demand_w), float(g.min_w), float(g.speed_alpha),
                            float(node.non_gpu_w), float(node.non_gpu_idle_w)), r))  # type: ignore[arg-type]
    same_figs = all(r[2] == rows[0][2] for r in rows)
    if same_figs and all(r[3] == hall_r for r in rows):
        return None, None
    figs = np.empty((6, cl.n_nodes))
    other = np.zeros(cl.n_nodes, dtype=bool)
    for a, b, f, r in rows:
        figs[:, a:b] = np.asarray(f)[:, None]
        other[a:b] = f != rows[0][2] or r != hall_r  # (the deferred replay takes one R and the scalars: not these)
    return (None if same_figs else np.ascontiguousarray(figs)), other


@dataclass
class CoolingArrays:
    """Arrays several rooms share (module docstring). Per unit: ``n_units`` elements (node-major), per node:
    ``n_nodes``, per zone / loop: the air zones / liquid loops. Empty until their room is built."""

    # ---- GPU units (gpu.GpuState): the RC state between events, T(t) = tss + (T − tss)·e^(−(t − t0)/tau);
    # T, t0, tss, tau, speed, t_next and the stash's t_due, x_P, x_sp, x_tss and pw are views of ublk's rows
    ublk: F = field(default_factory=lambda: np.zeros((N_ROWS, 0)))  # (N_ROWS, n_units + ROW_PAD): one kernel argument
    T: F = field(default_factory=_f)  # temperature at t0, °C
    t0: F = field(default_factory=_f)  # last update, h
    tss: F = field(default_factory=_f)  # steady state of the current power, inlet and R, °C
    tau: F = field(default_factory=_f)  # time constant, s
    gon: B = field(default_factory=_b)  # GPU powered during [t0, now]
    bblk: B = field(default_factory=_b)  # the units' bool state: gon, engaged, and the silent crossings' silent, x_ok
    engaged: B = field(default_factory=_b)  # thermal cap engaged
    speed: F = field(default_factory=_f)  # speed fraction
    t_next: F = field(default_factory=_f)  # next threshold crossing, h (inf: none)
    kind: NDArray[np.int8] = field(default_factory=lambda: np.zeros(0, dtype=np.int8))  # 1 slowdown, 2 shutdown
    uidx: I64 = field(default_factory=_i)  # arange(n_units)
    rspread: F = field(default_factory=_f)  # per unit: its R over the nominal R
    rbase: F = field(default_factory=_f)  # per unit: its R before the node's factor, °C/W
    rfactor: F = field(default_factory=_f)  # per node: fans (air) or no flow (liquid) multiply R
    inlet: F = field(default_factory=_f)  # per node: GPU inlet (held air supply or coolant supply), °C
    noff: F | None = None  # per node: inlet air above its zone's held supply, °C (air halls; None: 0)
    toff: F | None = None  # per unit: inlet above its node's inlet, °C (air halls; None: 0)
    toff_max_n: F = field(default_factory=_f)  # per node: the largest of its units' offsets, °C
    hist: F = field(default_factory=_f)  # GPU-hours per 1 °C bin of steady-state temperature
    # ---- accounting (gpu.GpuState): per node busy GPUs, capped busy GPUs, Σ speed, effective GPUs, and the four
    # site totals, each a view of its row of one block (A_*: one argument for six in the fused kernels)
    nblk: F = field(default_factory=_f)
    n_busy: F = field(default_factory=_f)
    n_capped: F = field(default_factory=_f)
    n_spsum: F = field(default_factory=_f)
    n_tp: F = field(default_factory=_f)
    tot: F = field(default_factory=_f)  # the four site totals now
    acc: F = field(default_factory=_f)  # ... integrated to gpu.t_acc, GPU-hours
    tp_t: list[float] = field(default_factory=list)  # effective GPUs: times of changes, h (not in order)
    tp_dv: list[float] = field(default_factory=list)  # ... and the changes
    trace_mask: B = field(default_factory=_b)  # per node: traced
    # ---- caps (Thermal): the 'thermal' speed caps and IT power caps per node, the power-chain cap applied
    speed_caps: F = field(default_factory=_f)
    it_caps: F = field(default_factory=_f)
    pcap: F = field(default_factory=_f)  # per node: the power-chain GPU cap (W) last applied (inf: none)
    # ---- silent crossings (lazy.LazyCrossings, made by its start): the stash of the units' next slowdown crossing
    t_due: F = field(default_factory=_f)  # the wake-up's times: t_next less the silent ones (t_next itself until start)
    x_P: F = field(default_factory=_f)  # W per GPU after the crossing
    x_sp: F = field(default_factory=_f)  # speed after it
    x_tss: F = field(default_factory=_f)  # steady state after it, °C
    x_ok: B = field(default_factory=_b)  # may be silent
    x_cap: F | None = None  # thermal cap after it, W (per-GPU caps under a power chain)
    pw: F = field(default_factory=_f)  # power per GPU now, W
    gid: I64 = field(default_factory=_i)  # per node: its group (-1: none)
    oth_n: F = field(default_factory=_f)  # per node: its lowest speed over the other sources
    # ---- replay (replay.DeferredReplay)
    cool: B = field(default_factory=_b)  # per node: its load changes are logged, not applied
    rmax_n: F = field(default_factory=_f)  # per node: the largest rbase of its units
    # ---- air (air.AirRooms; z_cap and z_slack replaced when the capacity changes)
    zones: list[tuple[int, int]] = field(default_factory=list)  # node ranges [start, end)
    zone_of: I64 = field(default_factory=_i)  # per node
    z_cap: F = field(default_factory=_f)  # healthy capacity now, W
    z_full: F = field(default_factory=_f)  # heat of all the zone's nodes at full load, W (replay)
    z_slack: B = field(default_factory=_b)  # could carry all its nodes at full load
    z_held: F = field(default_factory=_f)  # held (quantised) supply, °C
    z_reserved: F = field(default_factory=_f)  # full-load heat of nodes admitted to reboot, W (trips)
    node_air_w: F = field(default_factory=_f)  # per node: heat to its zone, W
    fans_h: I64 = field(default_factory=_i)  # per node: healthy fans
    op_cap_w: F = field(default_factory=_f)  # per node: the operator's GPU cap, W (inf: none; response)
    # ---- liquid (liquid.LiquidLoops)
    loops: list[tuple[int, int]] = field(default_factory=list)  # node ranges [start, end)
    loop_of: I64 = field(default_factory=_i)  # per node
    loop_flow: B = field(default_factory=_b)  # per loop: coolant flows
    # ---- the cooling timeline rows (air zones and liquid loops)
    timeline: list[tuple[float, str, int, float, float, float, float]] = field(default_factory=list)
