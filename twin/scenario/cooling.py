"""Cooling section of the scenario: air, liquid or hybrid plant, GPU thermal parameters, ambient,
energy and optional temperature-accelerated ageing (model.md §2, §3, §4).

Units are in field names (``_c`` °C, ``_w`` W, ``_kw`` kW, ``_h`` hours, ``_min`` minutes,
``_c_per_w`` °C/W, ``_j_per_c`` J/°C). Every default is documented with its source in
``../shared/design/sources.md`` or marked as an assumption.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import numpy as np
from numpy.typing import NDArray
from pydantic import Field, PrivateAttr, model_validator

from twin.scenario.distributions import Exponential, Fixed
from twin.scenario.defaults import derive, moved, over_default
from twin.scenario.base import Dist, Part, Repair, Strict, hot_swap_repair
from twin.scenario.chiller_curve import ChillerCurve
from twin.scenario.humidity import EvaporativeHumidity
from twin.scenario.leaks import LeakDamage, LeakDetection, LoopLeak
from twin.scenario.density import Density
from twin.scenario.plant import Plant
from twin.scenario.response import Response
from twin.scenario.units import UnitGroup
from twin.units import DAYS_PER_YEAR

if TYPE_CHECKING:  # pragma: no cover
    from twin.scenario.schema import Scenario

PosF = Annotated[float, Field(gt=0, allow_inf_nan=False)]
NonNegF = Annotated[float, Field(ge=0, allow_inf_nan=False)]
TempC = Annotated[float, Field(ge=-60, le=200, allow_inf_nan=False)]
PosInt = Annotated[int, Field(ge=1)]
Fraction = Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)]


# --------------------------------------------------------------------------- GPU and node


class GpuThermal(Strict):
    """Lumped RC model of one GPU, C·dT/dt = P − (T − T_in)/R (model.md §3). H100 SXM defaults."""

    r_air_c_per_w: PosF = Field(
        0.075, description="Junction-to-inlet thermal resistance with air cooling, °C/W (assumption: about "
        "75 °C at 700 W with 22 °C inlet air, a typical air-cooled H100 SXM reading).")
    r_cold_plate_c_per_w: PosF = Field(
        0.04, description="Junction-to-coolant resistance on a cold plate with flow, °C/W (assumption: about "
        "63 °C at 700 W with 35 °C coolant).")
    r_no_flow_c_per_w: PosF = Field(
        0.35, description="Resistance of a cold-plate GPU whose loop lost flow, °C/W (assumption: "
        "throttles within seconds and trips within a minute or two at minimum power).")
    c_j_per_c: PosF = Field(
        400.0, description="Heat capacity of GPU, package and heat sink or cold plate, J/°C (assumption: τ = R·C of "
        "30 s in air, tens of seconds as model.md §3 says).")
    r_sigma: NonNegF = Field(
        0.05, description="Spread of R between GPUs: each GPU's R is multiplied by exp(σ·z), z standard normal "
        "from its own random stream (median-preserving); 0 = identical GPUs. Assumption: no measured spread of GPU "
        "thermal resistance was found; 0.05 gives about 2.4 °C (1σ) between GPUs at training power in air, and "
        "same-SKU GPUs differ in performance by 8 % on average, outliers 1.5× slower than the median (Sinha et "
        "al., arXiv 2208.11035 v3); a `twin sensitivity` factor.")
    slowdown_c: TempC = Field(89.0, description="Slowdown temperature: the GPU caps its power to stay below it, °C "
                              "(89 °C, sources.md).")
    shutdown_c: TempC = Field(92.0, description="Shutdown temperature: the node trips, °C (92 °C, sources.md).")
    @model_validator(mode="before")
    @classmethod
    def _moved(cls, data: Any) -> Any:
        return moved(data, "cooling.gpu", {"idle_w": "cluster.node.gpu.idle_w", "tdp_w": "cluster.node.gpu.tdp_w",
                                           "p_min_w": "cluster.node.gpu.min_w",
                                           "alpha": "cluster.node.gpu.speed_alpha"})

    @model_validator(mode="after")
    def _check(self) -> "GpuThermal":
        if self.shutdown_c <= self.slowdown_c:
            raise ValueError(f"@shutdown_c: must be > slowdown_c ({self.slowdown_c}), got {self.shutdown_c}")
        return self


class NodeThermal(Strict):
    """Node-level limits and load outside the GPUs."""

    max_inlet_c: TempC = Field(
        35.0, description="Platform inlet limit: the node trips when its inlet air exceeds it, °C (DGX H100 "
        "operating ambient up to 30 °C, sources.md, plus a 5 °C margin: assumption).")
    reboot_h: NonNegF = Field(
        0.25, description="Time from cooling restored to a tripped node back in service, hours (assumption).")

    @model_validator(mode="before")
    @classmethod
    def _moved(cls, data: Any) -> Any:
        return moved(data, "cooling.node", {"non_gpu_w": "cluster.node.non_gpu_w"})


# --------------------------------------------------------------------------- air


def _leak_repair() -> Repair:
    return Repair(time=Fixed(value_h=8.0))


class Crah(UnitGroup):
    """CRAH units of one air zone (k of n; a zone's units are a common-cause group)."""

    count: PosInt = Field(4, description="CRAH units per zone (assumption).")
    required: PosInt = Field(3, description="Units needed for the zone's design load (N+1 with 4: assumption).")
    capacity_kw: PosF = Field(200.0, description="Cooling capacity of one unit at or below the design ambient, kW "
                              "(assumption).")
    failure: Dist = Field(default_factory=lambda: Exponential(mean_h=50000.0),
                          description="Time to failure of one unit (assumption: MTBF 50,000 h).")
    repair: Annotated[Repair, over_default(hot_swap_repair)] = Field(
        default_factory=hot_swap_repair, description="Repair of one unit (default: 4 h hands-on, assumption).")


def _water_repair() -> Repair:
    return Repair(time=Fixed(value_h=12.0))


class Evaporative(Strict):
    """Direct evaporative (adiabatic) cooling of the outside air the air units supply (sources-realism §9):
    supply = max(supply_c, T_wb + (1 − ε)(T_db − T_wb)) while the pads are wetted, max(supply_c, T_db) in
    dry operation (the water supply failed); no chiller. See docs/guide/evaporative.md."""

    effectiveness: Annotated[float, Field(ge=0.5, le=1, allow_inf_nan=False)] = Field(
        0.85, description="Saturation effectiveness ε = (T_db − T_out)/(T_db − T_wb) of the pads (usually "
        "0.75–0.95, HVAC handbook Eq. 9.8.6, sources-realism §9; 0.85 is an assumption within that range, "
        "a `twin sensitivity` factor).")
    it_rise_c: PosF = Field(
        12.0, description="Air temperature rise across the IT equipment, °C: sets the air flow m·c_p = Q/ΔT that "
        "the pads cool, hence the water evaporated (assumption: 10–20 °C is typical of servers; a `twin "
        "sensitivity` factor).")
    blowdown_share: Annotated[float, Field(ge=0, le=5, allow_inf_nan=False)] = Field(
        0.25, description="Blowdown (bleed) water per litre evaporated (assumption: 0.25 = 5 cycles of "
        "concentration, 1/(cycles − 1); a `twin sensitivity` factor).")
    water_failure: Dist = Field(
        default_factory=lambda: Exponential(mean_h=8760.0),
        description="Time to a failure of the site's water supply to the pads (mains, pump, treatment) "
        "(assumption: one a year).")
    water_repair: Annotated[Repair, over_default(_water_repair)] = Field(
        default_factory=_water_repair, description="Repair of the water supply, through the repair crews "
        "(default 12 h, assumption); the units run dry meanwhile.")
    humidity: EvaporativeHumidity = Field(
        default_factory=EvaporativeHumidity, description="ASHRAE envelope of the supply air, trim chiller / "
        "mechanical mode, yearly water cap, failures added outside the envelope (docs/guide/weather.md).")


class Air(Strict):
    """Air cooling: zones of CRAH units hold the supply air; server fans move it (model.md §4)."""

    zones: PosInt = Field(1, description="Air zones; racks are split into contiguous, near-equal blocks.")
    crah: Crah = Field(default_factory=Crah, description="The CRAH units of each zone.")
    supply_c: TempC = Field(22.0, description="Supply (inlet) air temperature while capacity covers the load, °C "
                            "(inside ASHRAE recommended 18–27 °C, sources.md).")
    room_tau_min: PosF = Field(15.0, description="Room time constant after a capacity shortfall, minutes "
                               "(assumption).")
    r_room_c_per_kw: PosF | None = Field(
        None, description="Room rise per kW of uncovered heat at steady state, °C/kW. Default: derived so that "
        "losing all cooling at the design load (required × capacity_kw) heats the room at 2 °C/min at first "
        "(sources.md): 2 °C/min × room_tau_min / (required × capacity_kw).")
    inlet_step_c: Annotated[float, Field(gt=0, le=0.5, allow_inf_nan=False)] = Field(
        0.5, description="Quantum of the moving supply temperature seen by the GPUs, °C (≤ 0.5, model.md §3).")
    fan_part: str | None = Field(
        "fan", description="Node part (effect redundant) whose healthy count sets the airflow: below `required` "
        "healthy, R_air rises by required/healthy; none left trips the node. null: fans not modelled.")
    design_ambient_c: TempC = Field(30.0, description="Outdoor temperature above which capacity derates, °C "
                                    "(assumption).")
    derate_per_c: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)] = Field(
        0.02, description="Share of capacity lost per °C above the design ambient (assumption: 2 %/°C).")
    free_cooling_approach_c: NonNegF = Field(
        6.0, description="Free cooling (no chiller) while outdoor ≤ supply_c − approach, °C (assumption).")
    fan_kw_per_kw: NonNegF = Field(0.05, description="CRAH fan power per kW of heat removed (assumption).")
    # inlet heterogeneity (issue 23): offsets added to the held supply at each GPU, °C
    slot_preheat_c: NonNegF = Field(
        2.0, description="Preheat of the air along the chassis airflow: the GPUs downstream (the second half "
        "of a node's GPU slots, two rows along the airflow) see their inlet raised by this, °C (assumption: "
        "no measured °C spread between the GPUs of an HGX node was found; a `twin sensitivity` factor).")
    rack_rise_c: NonNegF = Field(
        1.0, description="Inlet rise from a rack's bottom node to its top node, linear in the node's height, °C "
        "(assumption: no measured bottom-versus-top °C delta was found; a `twin sensitivity` factor).")
    recirculation_c: NonNegF = Field(
        0.5, description="Mean of each node's hot-aisle recirculation, an exponential inlet offset drawn from the "
        "node's own random stream, °C (assumption; a `twin sensitivity` factor).")
    evaporative: Evaporative | None = Field(
        None, description="Direct evaporative (adiabatic) cooling of outside air instead of a chiller: the "
        "supply floats above supply_c when wet-bulb does not allow it (needs cooling.ambient.wet_bulb or a "
        "wet_bulb_c column in the ambient CSV). null: CRAH units with a chiller.")

    @model_validator(mode="after")
    def _check(self) -> "Air":
        if self.r_room_c_per_kw is None:
            derive(self, r_room_c_per_kw=2.0 * self.room_tau_min / (self.crah.required * self.crah.capacity_kw))
        return self


# --------------------------------------------------------------------------- liquid


class Pumps(UnitGroup):
    """Pumps of one CDU (N+1; a common-cause group)."""

    count: PosInt = Field(2, description="Pumps per CDU (N+1 with N = 1: assumption).")
    required: PosInt = Field(1, description="Pumps needed for full flow (assumption).")
    failure: Dist = Field(default_factory=lambda: Exponential(mean_h=40000.0),
                          description="Time to failure of one pump (assumption: MTBF 40,000 h).")
    repair: Annotated[Repair, over_default(hot_swap_repair)] = Field(
        default_factory=hot_swap_repair, description="Repair of one pump (default 4 h, assumption).")


class Cdu(UnitGroup):
    """Coolant distribution units of one loop (k of n; a loop's CDUs are a common-cause group); a CDU
    delivers flow while `pumps.required` of its pumps work."""

    count: PosInt = Field(2, description="CDUs per loop (assumption).")
    required: PosInt = Field(1, description="CDUs needed for full flow to the loop (N+1: assumption).")
    failure: Dist = Field(default_factory=lambda: Exponential(mean_h=50000.0),
                          description="Time to failure of one CDU (assumption: MTBF 50,000 h).")
    repair: Annotated[Repair, over_default(hot_swap_repair)] = Field(
        default_factory=hot_swap_repair, description="Repair of one CDU (default 4 h, assumption).")
    pumps: Pumps = Field(default_factory=Pumps, description="The pumps of each CDU.")


class Leak(Strict):
    """Coolant leaks: at a node (cold plate, quick disconnect: the node and ``neighbours`` go down until
    repaired, with ``damage`` unless ``detection`` isolates the rack first) and loop-wide (``loop``)."""

    failure: Dist = Field(default_factory=lambda: Exponential(mean_h=2.0e6),
                          description="Time to a leak per node (assumption: MTBF 2,000,000 node-hours).")
    repair: Annotated[Repair, over_default(_leak_repair)] = Field(
        default_factory=_leak_repair, description="Leak repair (default 8 h, assumption).")
    neighbours: Annotated[int, Field(ge=0, le=64)] = Field(
        0, description="Nodes below the leaking one in the same rack that also go down (assumption: 0).")
    damage: LeakDamage | None = Field(default_factory=LeakDamage, description="What an undetected leak destroys; "
                                      "null: nothing (the node is down for the repair only). On by default: no "
                                      "published rate, each value an assumption with its range (sources-next.md §5).")
    detection: LeakDetection | None = Field(None, description="Detection that isolates the rack before damage; "
                                            "null: none fitted (assumption: automatic rack valves are an option).")
    loop: LoopLeak | None = Field(default_factory=LoopLeak, description="CDU or manifold leaks that take a whole "
                                  "loop down; null: none. On by default (assumption: no published rate, "
                                  "sources-next.md §5; its MTBF and repair ranges in its fields).")


class Liquid(Strict):
    """Direct liquid cooling: loops of CDUs deliver coolant at `supply_c` (model.md §4)."""

    loops: PosInt = Field(1, description="Coolant loops; racks are split into contiguous, near-equal blocks.")
    cdu: Cdu = Field(default_factory=Cdu, description="The CDUs of each loop.")
    supply_c: TempC = Field(35.0, description="Coolant supply temperature, °C (warm water 30–40 °C, model.md §4; "
                            "35 °C assumption).")
    leak: Leak | None = Field(default_factory=Leak, description="Leak failures; null: none.")
    free_cooling_approach_c: NonNegF = Field(
        5.0, description="Free cooling (dry coolers, no chiller) while outdoor ≤ supply_c − approach, °C "
        "(assumption).")
    pump_kw_per_kw: NonNegF = Field(0.02, description="Pump power per kW of heat removed (assumption).")
    capture_fraction: Fraction | None = Field(
        0.7, description="Share f of each node's heat (GPUs and the rest) the liquid captures; the room's air "
        "units carry (1 − f) × node heat and can fail (an air plant is then part of a liquid hall: `air`, "
        "defaults when omitted). Direct-to-chip carried 61–75 % of the IT load in the Vertiv/NVIDIA hybrid study "
        "(sources-realism §11); 0.7 is an assumption within that range. null: liquid takes all node heat (type "
        "liquid) or the GPUs' (type hybrid).")


# --------------------------------------------------------------------------- ambient, energy


def load_ambient_csv(path: Path) -> NDArray[np.float64]:
    """Hourly outdoor temperatures (°C) from a CSV: column ``temp_c`` (or the first column), one row per
    hour from time 0. Errors name the file and the row."""
    from twin.errors import InputError
    from twin.scenario.files import require_file

    src = str(path)
    require_file(path, "ambient temperature file")
    vals: list[float] = []
    with path.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh))
    col = 0
    start = 0
    if rows and rows[0]:
        head = [c.strip() for c in rows[0]]
        try:
            float(head[0])
        except ValueError:
            start = 1
            col = head.index("temp_c") if "temp_c" in head else 0
    for i, row in enumerate(rows[start:], start=start + 1):
        if not row or not "".join(row).strip():
            continue
        try:
            v = float(row[col])
        except (ValueError, IndexError):
            raise InputError(src, f"row {i}", f"not a temperature: {row!r}") from None
        if not (math.isfinite(v) and -60.0 <= v <= 70.0):
            raise InputError(src, f"row {i}", f"outdoor temperature must be in [-60, 70] °C, got {v}")
        vals.append(v)
    if not vals:
        raise InputError(src, "", "ambient temperature file has no values")
    return np.asarray(vals, dtype=np.float64)


def load_wet_bulb_csv(path: Path, dry_c: NDArray[np.float64]) -> NDArray[np.float64] | None:
    """Hourly outdoor wet-bulb temperatures (°C) from the ambient CSV's ``wet_bulb_c`` column (None when it
    has none), each at most the row's dry-bulb ``dry_c`` (as :func:`load_ambient_csv` read it)."""
    from twin.errors import InputError

    src = str(path)
    with path.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh))
    if not rows or not rows[0]:
        return None
    head = [c.strip() for c in rows[0]]
    if "wet_bulb_c" not in head:
        return None
    col = head.index("wet_bulb_c")
    vals: list[float] = []
    for i, row in enumerate(rows[1:], start=2):
        if not row or not "".join(row).strip():
            continue
        try:
            v = float(row[col])
        except (ValueError, IndexError):
            raise InputError(src, f"row {i}", f"not a wet-bulb temperature: {row!r}") from None
        k = len(vals)
        if not (math.isfinite(v) and -60.0 <= v <= 70.0) or (k < len(dry_c) and v > dry_c[k]):
            raise InputError(src, f"row {i}", f"wet_bulb_c must be in [-60, 70] °C and at most the row's temp_c, "
                             f"got {v}")
        vals.append(v)
    return np.asarray(vals, dtype=np.float64)


def bind_ambient_csv(cooling: "Cooling", top_dir: Path) -> None:
    """Load the ambient CSV of ``cooling`` (dry-bulb, and wet-bulb when the file has it) relative to
    ``top_dir``; an evaporative plant needs the wet_bulb_c column (error naming the file)."""
    from twin.errors import InputError

    from twin.scenario.files import require_file
    from twin.scenario.weather import read_weather

    amb = cooling.ambient.csv
    assert amb is not None
    path = top_dir / amb.file
    require_file(path, "ambient temperature file")
    wx = read_weather(path, amb.format)  # EPW or TMY3 (issue 42): dry-bulb, dew point, pressure, wet-bulb
    if wx is not None:
        amb.bind(wx.dry_c, wx.wet_c, wx.dew_c, wx.pressure_pa)
        return
    dry = load_ambient_csv(path)
    wet = load_wet_bulb_csv(path, dry)
    if wet is not None and len(wet) != len(dry):
        raise InputError(str(path), "wet_bulb_c", f"give a wet-bulb on every row: {len(wet)} values for {len(dry)} "
                         "temperatures")
    if wet is None and ((cooling.air is not None and cooling.air.evaporative is not None)
                        or cooling.energy.chiller_curve is not None):
        raise InputError(str(path), "wet_bulb_c", "evaporative cooling (cooling.air.evaporative) and the chiller "
                         "curve (cooling.energy.chiller_curve) need a wet_bulb_c column, °C, one per hour")
    amb.bind(dry, wet)


class AmbientCsv(Strict):
    """Hourly outdoor weather series; repeats cyclically past its end (docs/guide/weather.md)."""

    file: str = Field(description="Weather file path (relative to the scenario file), one row per hour from "
                      "1 January 00:00: the project's CSV (column temp_c, dry-bulb; optional wet_bulb_c), an "
                      "EnergyPlus EPW or an NSRDB TMY3 CSV (dry-bulb, dew point, station pressure; wet-bulb "
                      "derived with PsychroLib at that pressure).")
    format: Literal["auto", "twin", "epw", "tmy3"] = Field(
        "auto", description="File format; auto: EPW if the first line starts with LOCATION, TMY3 if the second "
        "starts with 'Date (MM/DD/YYYY)', else the project's CSV.")
    _values: NDArray[np.float64] | None = PrivateAttr(default=None)
    _wet_bulb: NDArray[np.float64] | None = PrivateAttr(default=None)
    _dew: NDArray[np.float64] | None = PrivateAttr(default=None)
    _pressure: NDArray[np.float64] | None = PrivateAttr(default=None)

    def bind(self, values: NDArray[np.float64], wet_bulb: NDArray[np.float64] | None = None,
             dew_point: NDArray[np.float64] | None = None, pressure_pa: NDArray[np.float64] | None = None) -> None:
        self._values = np.asarray(values, dtype=np.float64)
        self._wet_bulb = None if wet_bulb is None else np.asarray(wet_bulb, dtype=np.float64)
        self._dew = None if dew_point is None else np.asarray(dew_point, dtype=np.float64)
        self._pressure = None if pressure_pa is None else np.asarray(pressure_pa, dtype=np.float64)

    def values(self) -> NDArray[np.float64]:
        assert self._values is not None, "ambient CSV used before its file was loaded"
        return self._values

    def wet_bulb(self) -> NDArray[np.float64] | None:
        """The wet_bulb_c column, None when the file has none."""
        return self._wet_bulb


class WetBulb(Strict):
    """Outdoor wet-bulb temperature as the dry-bulb less a wet-bulb depression that follows the same seasonal
    and daily sinusoids (depression largest on hot afternoons, when relative humidity is lowest). Used by
    evaporative cooling; a ``wet_bulb_c`` column of the ambient CSV replaces it."""

    depression_mean_c: NonNegF = Field(
        5.0, description="Annual mean of T_db − T_wb, °C (assumption: a temperate, moderately humid site; design "
        "wet-bulb data come from ASHRAE Fundamentals Ch. 14 for a real site; a `twin sensitivity` factor).")
    depression_seasonal_amplitude_c: NonNegF = Field(
        2.0, description="Seasonal half-swing of the depression, peaking with the dry-bulb, °C (assumption).")
    depression_diurnal_amplitude_c: NonNegF = Field(
        2.0, description="Daily half-swing of the depression, peaking with the dry-bulb, °C (assumption).")

    @model_validator(mode="after")
    def _check(self) -> "WetBulb":
        swing = self.depression_seasonal_amplitude_c + self.depression_diurnal_amplitude_c
        if swing > self.depression_mean_c:
            raise ValueError(f"@depression_mean_c: must be >= the two amplitudes' sum ({swing:g}) so that wet-bulb "
                             f"never exceeds dry-bulb, got {self.depression_mean_c:g}")
        return self


class Ambient(Strict):
    """Outdoor temperature: seasonal plus diurnal sinusoid, or an hourly CSV (piecewise constant per hour,
    model.md §4). Time 0 is Monday 1 January 00:00."""

    mean_c: TempC = Field(15.0, description="Annual mean outdoor temperature, °C (assumption: temperate site).")
    seasonal_amplitude_c: NonNegF = Field(10.0, description="Seasonal half-swing, °C (assumption).")
    seasonal_peak_day: Annotated[float, Field(ge=0, lt=366)] = Field(
        196.0, description="Day of year of the seasonal peak (196 = mid-July, assumption).")
    diurnal_amplitude_c: NonNegF = Field(5.0, description="Daily half-swing, °C (assumption).")
    diurnal_peak_hour: Annotated[float, Field(ge=0, lt=24)] = Field(
        15.0, description="Hour of day of the daily peak (assumption: 15:00).")
    csv: AmbientCsv | None = Field(None, description="Hourly series or weather file (EPW, TMY3); replaces the "
                                   "sinusoid when given.")
    elevation_m: Annotated[float, Field(ge=-500, le=5000, allow_inf_nan=False)] = Field(
        0.0, description="Site elevation for the standard-atmosphere pressure of the psychrometrics when the "
        "weather has no station pressure (sinusoid, the project's CSV), m (assumption: sea level; range 0-3,050 m, "
        "the highest elevation of ASHRAE's classes; an EPW or TMY3 file gives its own pressure).")
    wet_bulb: WetBulb = Field(default_factory=WetBulb, description="Outdoor wet-bulb (evaporative cooling only): "
                              "dry-bulb less a sinusoidal depression, or the CSV's wet_bulb_c column.")

    def _cycles(self, hours: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Seasonal and daily cosines (each in [−1, 1], 1 at its peak) at each hour's midpoint."""
        t = np.arange(hours, dtype=np.float64) + 0.5
        day = t / 24.0
        return (np.cos(2 * np.pi * (day - self.seasonal_peak_day) / DAYS_PER_YEAR),
                np.cos(2 * np.pi * ((t % 24.0) - self.diurnal_peak_hour) / 24.0))

    def hourly_c(self, hours: int) -> NDArray[np.float64]:
        """Outdoor temperature of each hour k in [0, hours): the sinusoid at the hour's midpoint, or the CSV."""
        if self.csv is not None:
            v = self.csv.values()
            return v[np.arange(hours) % len(v)]
        t = np.arange(hours, dtype=np.float64) + 0.5
        day = t / 24.0
        return (self.mean_c
                + self.seasonal_amplitude_c * np.cos(2 * np.pi * (day - self.seasonal_peak_day) / DAYS_PER_YEAR)
                + self.diurnal_amplitude_c * np.cos(2 * np.pi * ((t % 24.0) - self.diurnal_peak_hour) / 24.0))

    def hourly_wet_bulb_c(self, hours: int) -> NDArray[np.float64]:
        """Outdoor wet-bulb temperature of each hour k in [0, hours), °C: the CSV's wet_bulb_c column, else the
        dry-bulb of :meth:`hourly_c` less the depression sinusoid (never above the dry-bulb)."""
        if self.csv is not None:
            wb = self.csv.wet_bulb()
            if wb is None:
                raise ValueError("the ambient CSV has no wet_bulb_c column")
            return wb[np.arange(hours) % len(wb)]
        w = self.wet_bulb
        seasonal, daily = self._cycles(hours)
        dep = (w.depression_mean_c + w.depression_seasonal_amplitude_c * seasonal
               + w.depression_diurnal_amplitude_c * daily)
        return self.hourly_c(hours) - dep


    def hourly_pressure_pa(self, hours: int) -> NDArray[np.float64]:
        """Station pressure of each hour, Pa: the weather file's, else the standard atmosphere at elevation_m."""
        p = self.csv._pressure if self.csv is not None else None
        if p is not None:
            return p[np.arange(hours) % len(p)]
        from twin.physics.psychro import site_pressure_pa
        return np.full(hours, float(site_pressure_pa(self.elevation_m)))


class Energy(Strict):
    """Facility energy: chiller COP, electrical losses (model.md §4)."""

    chiller_cop: PosF = Field(5.0, description="Chiller COP at cop_ref_c outdoor, heat kW per electrical kW "
                              "(assumption).")
    cop_ref_c: TempC = Field(25.0, description="Outdoor temperature of the reference COP, °C (assumption).")
    cop_slope_per_c: NonNegF = Field(0.1, description="COP lost per °C warmer outdoors (assumption).")
    cop_min: PosF = Field(2.0, description="Lowest COP on the hottest hours (assumption).")
    chiller_curve: ChillerCurve | None = Field(
        None, description="COP by part load and condenser water (outdoor wet-bulb + approach) on EnergyPlus EIR "
        "curves, replacing the linear COP above (docs/guide/weather.md). null: the linear COP.")
    ups_efficiency: Fraction = Field(0.95, description="UPS efficiency on the IT load (assumption: double "
                                     "conversion 94–97 %). With a power section: the power chain's UPS "
                                     "(power.ups.efficiency, 1 without a UPS).")
    transformer_efficiency: Fraction = Field(0.985, description="Transformer efficiency on the whole facility "
                                             "load (assumption).")


# --------------------------------------------------------------------------- ageing, injection, trace


class Ageing(Strict):
    """Temperature-accelerated ageing of one node part type (model.md §2): effective age grows at
    AF(T) = 2^((T − t_ref_c)/doubling_c)."""

    t_ref_c: TempC = Field(description="Temperature at which the part's failure distribution holds, °C "
                           "(fans: 60 °C, sources.md).")
    doubling_c: PosF = Field(15.0, description="Warming that doubles the ageing rate, °C (fans: 15 °C, "
                             "sources.md).")
    temperature: Literal["gpu", "inlet"] = Field(
        "gpu", description="gpu: the steady-state temperature of the part's GPU (slot k → GPU k mod gpus; a "
        "node-wide part uses the node's hottest GPU); inlet: the node's inlet air or coolant.")


XFACTOR_TABLE: tuple[tuple[float, float], ...] = ((15.0, 0.72), (20.0, 1.00), (45.0, 1.76))
"""ASHRAE TC9.9 (2011) X-factor points (inlet °C, relative failure rate); the physics' ASHRAE_XFACTOR."""


class XFactor(Strict):
    """Failure rate of node parts relative to their inlet air: the ASHRAE TC9.9 X-factor (sources-realism
    §3), applied through each part's effective age (AF = X(T_inlet)/X(reference_inlet_c))."""

    enabled: bool = Field(
        True, description="Age every hardware node part (not listed under `ageing` or `heat_ageing.arrhenius`) at "
        "the X-factor of its node's inlet air. Needs an air plant (air or hybrid, or liquid with heat capture); "
        "with `thermal: false` or no air the factor is 1.")
    reference_inlet_c: TempC = Field(
        20.0, description="Inlet temperature at which the parts' configured failure distributions hold, °C (20 °C, "
        "the X-factor's reference, ASHRAE TC9.9 2011).")
    table: list[Annotated[list[Annotated[float, Field(allow_inf_nan=False)]], Field(min_length=2, max_length=2)]] = Field(
        default_factory=lambda: [list(p) for p in XFACTOR_TABLE],
        description="Points (inlet °C, relative failure rate), increasing in temperature: ASHRAE TC9.9 2011, 0.72 at "
        "15 °C, 1.00 at 20 °C, 1.76 at 45 °C (via The Green Grid 2017). Interpolated linearly between points and "
        "held at the end values outside them.")
    parts: list[str] | None = Field(
        None, description="Node parts aged by the X-factor; null: every hardware node part (transient faults never "
        "age) not aged otherwise.")

    @model_validator(mode="after")
    def _check(self) -> "XFactor":
        if len(self.table) < 2:
            raise ValueError(f"@table: give at least 2 points, got {len(self.table)}")
        for i, (t_c, x) in enumerate(self.table):
            if not (-60.0 <= t_c <= 200.0 and x > 0):
                raise ValueError(f"@table.{i}: give [inlet °C in -60..200, factor > 0], got {[t_c, x]}")
        for i in range(1, len(self.table)):
            if self.table[i][0] <= self.table[i - 1][0]:
                raise ValueError(f"@table.{i}: temperatures must increase, got {self.table[i][0]} after "
                                 f"{self.table[i - 1][0]}")
        return self


class ArrheniusPart(Strict):
    """Arrhenius ageing of one node part on its GPU's simulated junction temperature (steady state):
    AF = exp[(Ea/k)(1/T_ref − 1/T)] (NIST/SEMATECH e-Handbook §8.1.5.1)."""

    activation_ev: Annotated[float, Field(ge=0, le=3, allow_inf_nan=False)] = Field(
        description="Activation energy, eV (assumption: no field value for GPUs was found; 0.3–1.5 eV is typical, "
        "NIST/SEMATECH; 0 = no acceleration).")
    t_ref_c: TempC = Field(
        description="Junction temperature at which the part's configured failure distribution holds, °C.")


class HeatAgeing(Strict):
    """Heat that ages parts (sources-realism §3): the X-factor on the inlet for node parts, optionally
    Arrhenius on the junction temperature for named parts (GPU, HBM)."""

    xfactor: XFactor = Field(default_factory=XFactor, description="ASHRAE X-factor on the node's inlet air.")
    arrhenius: dict[str, ArrheniusPart] = Field(
        default_factory=dict, description="Arrhenius ageing on the GPU's junction temperature per node part name "
        "(slot k → GPU k mod gpus; a node-wide part uses the node's hottest GPU); none by default (no field "
        "source for GPUs: an assumption when set).")


class CoolingInject(Strict):
    """A scheduled failure for stress tests: part `part` number `index` fails at `at_h` (if healthy then)."""

    part: str = Field(min_length=1, description="A cooling facility part (crah, cdu, cdu_pump, leak) or a node part.")
    index: Annotated[int, Field(ge=0)] = Field(description="Index in the part's population (see its paths).")
    at_h: NonNegF = Field(description="Failure time, hours.")


class ThermalTrace(Strict):
    """Per-GPU temperature trace of a few nodes over a window (for figures and checks)."""

    nodes: list[Annotated[int, Field(ge=0)]] = Field(default_factory=lambda: [0], description="Nodes to trace.")
    from_h: NonNegF | None = Field(None, description="Window start, hours (default: the week around the "
                                   "seasonal peak, or the whole horizon if shorter).")
    to_h: NonNegF | None = Field(None, description="Window end, hours (default: from_h + 168).")


# --------------------------------------------------------------------------- the section


class Cooling(Strict):
    """The cooling plant and the thermal model (model.md §3, §4)."""

    type: Literal["air", "liquid", "hybrid"] = Field(
        description="air: CRAH zones and server fans; liquid: CDU loops take all node heat; hybrid: GPUs on "
        "liquid, the rest of the node on air.")
    thermal: bool = Field(
        True, description="false: keep the plant's parts, failures and repairs and the energy accounting, but "
        "model no temperatures (no throttling, no trips, no fan coupling, no ageing).")
    air: Air | None = Field(None, description="Air plant (type air or hybrid; defaults when omitted).")
    liquid: Liquid | None = Field(None, description="Liquid plant (type liquid or hybrid; defaults when omitted).")
    gpu: GpuThermal = Field(default_factory=GpuThermal, description="GPU RC model and limits (H100 SXM defaults).")
    node: NodeThermal = Field(default_factory=NodeThermal, description="Non-GPU load, inlet limit, reboot time.")
    ambient: Ambient = Field(default_factory=Ambient, description="Outdoor temperature (sinusoids or hourly CSV).")
    energy: Energy = Field(default_factory=Energy, description="Chiller COP and electrical losses.")
    ageing: dict[str, Ageing] = Field(default_factory=dict, description="Accelerated ageing per node part "
                                      "name; none by default.")
    heat_ageing: HeatAgeing = Field(default_factory=HeatAgeing, description="Failure rates that follow "
                                    "temperature: the X-factor on the inlet, Arrhenius on the junction.")
    response: Response = Field(default_factory=Response, description="The operator's response to a cooling "
                               "shortfall of an air zone: cap GPU power, drain nodes, or none (assumption: "
                               "'cap', what an operator with power capping does; its times and margins are "
                               "assumptions with ranges in its fields).")
    inject: list[CoolingInject] = Field(default_factory=list, description="Scheduled failures (stress scenarios).")
    density: Density = Field(default_factory=Density, description="Power per rack each cooling option supports (the "
                             "rack limit when cluster.rack gives none) and white space per rack and unit (issue 42; "
                             "each default's source, NVIDIA SuperPOD, JLL 2025, HPE/Motivair, or 'assumption' with "
                             "its range, in its fields, sources-next.md §4).")
    plant: Plant | None = Field(None, description="Chillers and the chilled-water loop fed by the power chain, the "
                                "power paths of the cooling units, their maintenance and shared infrastructure "
                                "(issue 24); null: the plant never fails and never loses power.")
    trace: ThermalTrace = Field(default_factory=ThermalTrace, description="Per-GPU temperature trace of a few "
                                "nodes over a window (table thermal_trace, figure thermal_week).")

    @model_validator(mode="after")
    def _check(self) -> "Cooling":
        uses_liquid = self.type in ("liquid", "hybrid")
        if uses_liquid and self.liquid is None:
            derive(self, liquid=Liquid())
        f = self.liquid.capture_fraction if self.liquid is not None else None
        uses_air = self.type in ("air", "hybrid") or (self.type == "liquid" and f is not None and f < 1.0)
        if uses_air and self.air is None:
            derive(self, air=Air())
        if not uses_air and self.air is not None:
            raise ValueError(f"@air: type {self.type!r} has no air plant; remove this section, use air/hybrid or "
                             "give liquid.capture_fraction < 1")
        if not uses_liquid and self.liquid is not None:
            raise ValueError(f"@liquid: type {self.type!r} has no liquid plant; remove this section or use "
                             "liquid/hybrid")
        g = self.gpu
        if self.air is not None:
            if self.air.supply_c >= g.shutdown_c:
                raise ValueError(f"@air.supply_c: must be < gpu.shutdown_c ({g.shutdown_c}), got {self.air.supply_c}")
            if self.air.supply_c >= self.node.max_inlet_c:
                raise ValueError(f"@air.supply_c: must be < node.max_inlet_c ({self.node.max_inlet_c}), "
                                 f"got {self.air.supply_c}")
        if self.liquid is not None and self.liquid.supply_c >= g.shutdown_c:
            raise ValueError(f"@liquid.supply_c: must be < gpu.shutdown_c ({g.shutdown_c}), "
                             f"got {self.liquid.supply_c}")
        names = set(self.facility_parts())
        for i, inj in enumerate(self.inject):
            if inj.part in names:
                n_units = self._facility_units(inj.part)
                if n_units is not None and inj.index >= n_units:
                    raise ValueError(f"@inject.{i}.index: {inj.part} has {n_units} units, got {inj.index}")
        if self.trace.from_h is not None and self.trace.to_h is not None and self.trace.to_h <= self.trace.from_h:
            raise ValueError(f"@trace.to_h: must be > from_h ({self.trace.from_h}), got {self.trace.to_h}")
        return self

    def check_against(self, sc: "Scenario") -> None:
        """Cross-checks against the cluster and the other sections (called from Scenario validation)."""
        parts = sc.cluster.node.parts
        racks = sc.cluster.racks
        n_nodes = sc.cluster.n_nodes
        if self.air is not None and "air" not in self.model_fields_set and self.air.fan_part not in parts:
            derive(self.air, fan_part=None)  # a derived air plant: fans modelled only if the node has the part
        if self.air is not None:
            if self.air.zones > racks:
                raise ValueError(f"@cooling.air.zones: must be <= racks ({racks}), got {self.air.zones}")
            fp = self.air.fan_part
            if fp is not None:
                if fp not in parts:
                    raise ValueError(f"@cooling.air.fan_part: no node part {fp!r}; parts: {sorted(parts)} "
                                     "(or null: fans not modelled)")
                if parts[fp].effect != "redundant":
                    raise ValueError(f"@cooling.air.fan_part: part {fp!r} must have effect 'redundant', "
                                     f"got {parts[fp].effect!r}")
        if sc.cluster.rack.power_limit_kw is None:  # the option's supported density (an advisory when exceeded)
            derive(sc.cluster.rack, power_limit_kw=self.density.rack_kw(self.type))
        if self.plant is not None:
            self.plant.check_against(sc)
        if self.liquid is not None and self.liquid.loops > racks:
            raise ValueError(f"@cooling.liquid.loops: must be <= racks ({racks}), got {self.liquid.loops}")
        if self.air is not None:  # periodic tests (issue 43): every unit of a kind in turn within an interval
            self.air.crah.check_tests("cooling.air.crah", self.air.zones * self.air.crah.count)
        if self.liquid is not None:
            d = self.liquid.cdu
            d.check_tests("cooling.liquid.cdu", self.liquid.loops * d.count)
            d.pumps.check_tests("cooling.liquid.cdu.pumps", self.liquid.loops * d.count * d.pumps.count)
        for i, node in enumerate(self.trace.nodes):
            if node >= n_nodes:
                raise ValueError(f"@cooling.trace.nodes.{i}: the cluster has {n_nodes} nodes, got {node}")
        for name in self.heat_ageing.arrhenius:
            if name not in parts:
                raise ValueError(f"@cooling.heat_ageing.arrhenius.{name}: no node part {name!r}; parts: {sorted(parts)}")
            if parts[name].effect == "transient":
                raise ValueError(f"@cooling.heat_ageing.arrhenius.{name}: transient faults do not age; choose a "
                                 "hardware part")
            if name in self.ageing:
                raise ValueError(f"@cooling.heat_ageing.arrhenius.{name}: part {name!r} is aged under cooling.ageing "
                                 "already; keep one")
        for i, name in enumerate(self.heat_ageing.xfactor.parts or []):
            if name not in parts:
                raise ValueError(f"@cooling.heat_ageing.xfactor.parts.{i}: no node part {name!r}; parts: "
                                 f"{sorted(parts)}")
            if parts[name].effect == "transient":
                raise ValueError(f"@cooling.heat_ageing.xfactor.parts.{i}: transient faults do not age; choose a "
                                 "hardware part")
        for name in self.ageing:
            if name not in parts:
                raise ValueError(f"@cooling.ageing.{name}: no node part {name!r}; parts: {sorted(parts)}")
            if parts[name].effect == "transient":
                raise ValueError(f"@cooling.ageing.{name}: transient faults do not age; choose a hardware part")
        fac = self.facility_parts()
        for i, inj in enumerate(self.inject):
            if inj.part in fac:
                units = self._facility_units(inj.part)
                units = n_nodes if units is None else units
            elif inj.part in parts:
                units = n_nodes * parts[inj.part].count
            else:
                raise ValueError(f"@cooling.inject.{i}.part: no part {inj.part!r}; allowed: "
                                 f"{sorted(set(fac) | set(parts))}")
            if inj.index >= units:
                raise ValueError(f"@cooling.inject.{i}.index: {inj.part} has {units} units, got {inj.index}")
        node = sc.cluster.node
        if (self.type == "hybrid" and self.liquid is not None and self.liquid.capture_fraction is None
                and node.non_gpu_idle_w != node.non_gpu_w):
            raise ValueError("@cooling.liquid.capture_fraction: a hybrid hall that splits the heat by kind (null) "
                             "needs a constant non-GPU load (cluster.node.non_gpu_idle_w = non_gpu_w); give a "
                             "capture fraction")
        pw = getattr(sc, "power", None)
        if pw is not None:
            # one UPS: the energy figures (facility energy, PUE, cost) use the power chain's, 1 without one
            ups = getattr(pw, "ups", None)
            eff = float(ups.efficiency) if ups is not None else 1.0
            if "ups_efficiency" not in self.energy.model_fields_set:
                derive(self.energy, ups_efficiency=eff)
            elif self.energy.ups_efficiency != eff:
                raise ValueError(f"@cooling.energy.ups_efficiency: with a power section the UPS is the power chain's "
                                 f"(power.ups.efficiency, or 1 without a UPS: {eff:g}); leave it out, got "
                                 f"{self.energy.ups_efficiency:g}")

    def liquid_share(self) -> float | None:
        """Share of each node's heat taken by liquid when the hall captures a fixed fraction
        (``liquid.capture_fraction``): 0 in an air hall; None for the split by kind (liquid: all node heat,
        hybrid: the GPUs' heat)."""
        if self.type == "air":
            return 0.0
        assert self.liquid is not None
        return self.liquid.capture_fraction

    def _facility_units(self, name: str) -> int | None:
        """Units in a facility population when known without the cluster (None for per-node parts)."""
        if name == "crah" and self.air is not None:
            return self.air.zones * self.air.crah.count
        if name == "cdu" and self.liquid is not None:
            return self.liquid.loops * self.liquid.cdu.count
        if name == "cdu_pump" and self.liquid is not None:
            return self.liquid.loops * self.liquid.cdu.count * self.liquid.cdu.pumps.count
        if name == "loop_leak" and self.liquid is not None:
            return self.liquid.loops
        if name == "water_supply" and self.air is not None and self.air.evaporative is not None:
            return 1
        return None

    def facility_parts(self) -> dict[str, Part]:
        """Part specs of the site-level cooling units, so spares and crews can name them."""
        out: dict[str, Part] = {}
        if self.air is not None:
            c = self.air.crah
            out["crah"] = Part(count=c.count, required=c.required, effect="redundant", failure=c.failure,
                               repair=c.repair, common_cause_beta=c.common_cause_beta,
                               latent_test_interval_h=c.latent_test_interval_h)
            ev = self.air.evaporative
            if ev is not None:  # the pads' water supply: the units run dry while it is down
                out["water_supply"] = Part(count=1, required=1, effect="redundant", failure=ev.water_failure,
                                           repair=ev.water_repair)
        if self.liquid is not None:
            d = self.liquid.cdu
            out["cdu"] = Part(count=d.count, required=d.required, effect="redundant", failure=d.failure,
                              repair=d.repair, common_cause_beta=d.common_cause_beta,
                              latent_test_interval_h=d.latent_test_interval_h)
            p = d.pumps
            out["cdu_pump"] = Part(count=p.count, required=p.required, effect="redundant", failure=p.failure,
                                   repair=p.repair, common_cause_beta=p.common_cause_beta,
                                   latent_test_interval_h=p.latent_test_interval_h)
            if self.liquid.leak is not None:
                lk = self.liquid.leak
                out["leak"] = Part(count=1, effect="node_down", failure=lk.failure, repair=lk.repair)
                if lk.loop is not None:  # one per loop: the nodes are taken down by the cooling model
                    out["loop_leak"] = Part(count=1, required=1, effect="redundant", failure=lk.loop.failure, repair=lk.loop.repair)
        if self.plant is not None:
            out.update(self.plant.part_specs())
        return out
