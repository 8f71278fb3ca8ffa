"""Costs section of the scenario: prices, amortisation and energy tariff (issue 9).

Written in a scenario as::

    costs:
      currency: USD
      amortisation_years: 5            # IT equipment (nodes, PSUs, fabric, spares)
      facility_amortisation_years: 15  # cooling and power plant (null: amortisation_years)
      discount_rate: 0.08              # in [0, 1): annuity factor, see twin/model/costs.py
      value_per_useful_gpu_hour: 2.0   # for break-even (twin compare), not a cost
      capital: {node: {dgx-h100: 300000}, psu: 1000, crah: 80000, ...}
      parts: {gpu: 25000, ...}          # price of the part replaced in one repair (and of a spare)
      spares: {holding_rate_per_year: 0.25}
      labour: {rate_per_hour: 100, pools: {electrical: 150}}
      energy: {price_per_kwh: 0.10, time_of_use: {file: data/tou.csv}, pue: 1.55}
      water_per_m3: 3.0                # site water of evaporative cooling (cost.water)

Every price is in ``currency`` and must be ≥ 0 and ≤ :data:`MAX_COST_INPUT`; every default is an assumption (no price is in
``shared/design/sources.md``) except where a source is named. The time-of-use CSV is read when the
scenario is loaded (:meth:`TimeOfUse.bind_files`, called by the loader for every section that has
it); its errors name the file and the row.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Annotated, Any

import numpy as np
from numpy.typing import NDArray
from pydantic import AfterValidator, BeforeValidator, Field, PrivateAttr, ValidationInfo, model_validator

from twin.scenario.base import Strict as _Strict
from twin.scenario.defaults import moved
from twin.scenario.plant import PART_NAMES as PLANT_PART_NAMES
from twin.units import HOURS_PER_WEEK

MAX_COST_INPUT = 1e15
"""Upper bound of every number of the costs section (prices, rates, powers, years) and of a
time-of-use price. 10^15 is above any real price in any currency (a billion-dollar item in the
currency with the smallest unit is about 4×10^13 of it) and keeps every product of a price and a
quantity the limits allow (twin.limits) finite in float64: a price such as 1e308 overflowed to a
total cost of ``inf``."""

NonNeg = Annotated[float, Field(ge=0, le=MAX_COST_INPUT, allow_inf_nan=False)]
Pos = Annotated[float, Field(gt=0, le=MAX_COST_INPUT, allow_inf_nan=False)]



def _default_parts() -> dict[str, float]:
    # Price of the unit replaced in one repair (and of one spare on the shelf), USD. All assumptions
    # (order of magnitude of 2024 street prices); a repaired part type not listed must be priced in costs.parts.
    return {
        "gpu": 25000.0,       # one H100 SXM module (assumption)
        "hbm": 25000.0,       # HBM faults are fixed by a GPU module swap (as in baseline.yaml)
        "host": 3000.0,       # board/CPU/DIMM/SSD part (assumption)
        "nic": 1500.0,        # ConnectX-7 adapter (assumption)
        "psu": 1000.0,        # 3.3 kW PSU (assumption)
        "fan": 150.0,         # server fan module (assumption)
        "optic": 800.0,       # 400G transceiver (assumption)
        "leaf": 35000.0,      # whole switch replaced (assumption)
        "spine": 35000.0,
        "crah": 2000.0,       # CRAH repair kit: fan motor, controller (assumption)
        "cdu": 5000.0,        # CDU repair kit (assumption)
        "cdu_pump": 3000.0,   # one pump (assumption)
        "leak": 1000.0,       # fittings and hose (assumption)
        "loop_leak": 5000.0,  # CDU or manifold leak: seals, hose, coolant refill and treatment (assumption, range 2,000-20,000)
        "water_supply": 2000.0,  # evaporative units' water supply: pump, valve, treatment part (assumption)
        "ups": 5000.0,        # UPS module or battery string (assumption)
        "ups_module": 8000.0,  # one UPS power module, ~100-250 kW class (assumption, range 4,000-20,000)
        "generator": 5000.0,  # starter, controller (assumption)
        "generator_set": 5000.0,  # one generator set's repair: starter, controller, injectors (assumption, range 2,000-20,000)
        "switchboard": 10000.0,  # breaker (assumption)
        "pdu": 1000.0,        # rack PDU (assumption)
        "storage_server": 5000.0,    # drives or a board of one storage server (assumption)
        "storage_metadata": 5000.0,  # metadata server part (assumption)
    }


def _over_defaults(v: Any) -> Any:
    """Given part prices override the defaults key by key (so a scenario names only what it changes)."""
    return {**_default_parts(), **v} if isinstance(v, dict) else v


class Capital(_Strict):
    """Purchase prices of what is installed (quantities come from the scenario itself)."""

    node: dict[str, NonNeg] = Field(
        default_factory=lambda: {"dgx-h100": 300000.0},
        description="Price of one node by cluster.node.type, excluding its PSUs (priced by `psu`) "
                    "(assumption: DGX H100 about USD 300k).")
    psu: NonNeg = Field(1000.0, description="One PSU of the node part power.psu_part (or `psu`) (assumption).")
    crah: NonNeg = Field(80000.0, description="One CRAH unit (assumption: ~230 kW unit).")
    cdu: NonNeg = Field(150000.0, description="One CDU including its pumps (assumption).")
    chiller_per_kw: NonNeg = Field(
        500.0, description="Chiller plant per kW of air-cooled IT capacity (assumption).")
    evaporative_per_kw: NonNeg = Field(
        150.0, description="Evaporative media, pumps and water treatment per kW of air-cooled IT capacity, in place "
                           "of the chiller plant when cooling.air.evaporative is set (assumption).")
    dry_cooler_per_kw: NonNeg = Field(
        250.0, description="Dry coolers with trim chilling per kW of liquid-cooled IT capacity (assumption: warm "
                           "water rejects most heat without a chiller).")
    liquid_per_node: NonNeg = Field(
        10000.0, description="Cold plates, manifolds and hoses per node with liquid-cooled GPUs (assumption).")
    ups_per_kw: NonNeg = Field(
        300.0, description="UPS per kW of rated output, batteries included (assumption: USD 300/kW, range 200–600). "
                           "A modular UPS (power.ups.modules) is bought for count/required times its rating: N+1 "
                           "modules of k cost (k + 1)/k; 2N buys a UPS per feed. For scale, a whole data centre "
                           "costs USD 10.7 M per MW in 2025 (JLL, sources-next §4).")
    generator_per_kw: NonNeg = Field(
        400.0, description="Standby generator per kW, sized like its feed's UPS (assumption: USD 400/kW, range "
                           "250–800; one generator per feed, so 2N buys two). A plant of sets (power.generator.modules) is bought for "
                           "count/required times that rating: N+1 sets of k cost (k + 1)/k.")
    switchboard: NonNeg = Field(
        150000.0, description="One feed's switchboard and transformer (assumption: USD 150,000, range 75,000–300,000 "
                              "for about 1–2 MW; 2N buys one per feed).")
    pdu: NonNeg = Field(5000.0, description="One PDU (assumption: USD 5,000, range 2,000–10,000).")
    white_space_per_m2: NonNeg = Field(
        5000.0, description="Building per m² of white space the racks and cooling units take (cooling.density): "
                            "shell, raised floor or slab, fire suppression, lighting; the plant is priced apart "
                            "(assumption: no price per m² of white space was found, sources-next §4; USD 5,000/m² "
                            "is about a third of a whole data centre's USD 10.7 M per MW, JLL 2025, at 1 kW/m²; "
                            "range 2,500–10,000).")
    distribution_per_kw: NonNeg = Field(
        250.0, description="Electrical distribution per kW of IT nameplate, from the switchboards to the racks: "
                           "busways, panels, cabling (assumption: USD 250/kW, range 150–600; switchboards, UPS and "
                           "PDUs are priced apart).")
    optic: NonNeg = Field(800.0, description="One 400G optical transceiver (assumption).")
    leaf: NonNeg = Field(35000.0, description="One leaf switch, 64-port NDR class (assumption).")
    spine: NonNeg = Field(35000.0, description="One spine switch (assumption: same model as a leaf).")
    storage_server: NonNeg = Field(
        100000.0, description="One storage server with its drives, when storage.servers is given (assumption: an "
                              "NVMe storage server, order of magnitude).")


class SparesCost(_Strict):
    holding_rate_per_year: NonNeg = Field(
        0.25, description="Holding cost of one spare per year as a fraction of its price (assumption: 20–30 % "
                          "inventory carrying cost).")


class Labour(_Strict):
    rate_per_hour: NonNeg = Field(
        100.0, description="Loaded cost of one technician per on-shift hour (assumption).")
    pools: dict[str, NonNeg] = Field(
        default_factory=dict, description="Per crew pool rate overrides, keyed by maintenance.crews name.")


def load_tou_csv(path: Path) -> tuple[str, NDArray[np.float64]]:
    """Read a time-of-use tariff. Returns (``"hour_of_week"`` or ``"hour"``, prices per kWh).

    Header required: ``hour_of_week,price_per_kwh`` (exactly the 168 hours 0..167 of a week that
    starts Monday 00:00, simulated time 0) or ``hour,price_per_kwh`` (hours 0, 1, …, N−1 of the run;
    the series repeats past its end). Rows must be in hour order without gaps or repeats; blank lines
    are skipped. Every error raises :class:`~twin.errors.InputError` naming the file and the row."""
    from twin.errors import InputError
    from twin.scenario.files import require_file

    src = str(path)
    require_file(path, "time-of-use price file")
    with path.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh))
    lines = [(i, [c.strip() for c in r]) for i, r in enumerate(rows, start=1) if r and "".join(r).strip()]
    if not lines:
        raise InputError(src, "", "time-of-use price file is empty")
    hrow, head = lines[0]
    if len(head) < 2 or head[0] not in ("hour_of_week", "hour") or head[1] != "price_per_kwh":
        raise InputError(src, f"row {hrow}", "header must be 'hour_of_week,price_per_kwh' or "
                                             f"'hour,price_per_kwh', got {','.join(head)!r}")
    kind = head[0]
    prices: list[float] = []
    for i, r in lines[1:]:
        if len(r) < 2:
            raise InputError(src, f"row {i}", f"expected two columns ({kind}, price_per_kwh), got {r!r}")
        try:
            h = float(r[0])
        except ValueError:
            raise InputError(src, f"row {i}", f"{kind} is not a number: {r[0]!r}") from None
        want = len(prices)
        if h != want:
            what = "gap" if h > want else "repeat or out of order"
            raise InputError(src, f"row {i}", f"{kind} must be {want} (rows in hour order, no gaps), got {r[0]} "
                                              f"({what})")
        try:
            p = float(r[1])
        except ValueError:
            raise InputError(src, f"row {i}", f"price_per_kwh is not a number: {r[1]!r}") from None
        if not (math.isfinite(p) and 0 <= p <= MAX_COST_INPUT):
            raise InputError(src, f"row {i}", f"price_per_kwh must be a finite number in [0, {MAX_COST_INPUT:g}], "
                                              f"got {r[1]}")
        prices.append(p)
        if kind == "hour_of_week" and len(prices) > HOURS_PER_WEEK:
            raise InputError(src, f"row {i}", f"hour_of_week runs 0..{HOURS_PER_WEEK - 1}, got {r[0]}")
    if not prices:
        raise InputError(src, "", "time-of-use price file has no rows after its header")
    if kind == "hour_of_week" and len(prices) != HOURS_PER_WEEK:
        raise InputError(src, f"row {lines[-1][0] + 1}", f"hour_of_week {len(prices)} missing: the file must "
                                                         f"give all {HOURS_PER_WEEK} hours 0..{HOURS_PER_WEEK - 1}")
    return kind, np.asarray(prices, dtype=np.float64)


class TimeOfUse(_Strict):
    """An hourly tariff from a CSV (see :func:`load_tou_csv`); replaces the flat price."""

    file: str = Field(description="CSV path, relative to the scenario file.")
    _kind: str | None = PrivateAttr(default=None)
    _prices: NDArray[np.float64] | None = PrivateAttr(default=None)

    def bind_files(self, base_dir: Path) -> None:
        """Read the CSV (the loader calls this with the top scenario's folder)."""
        self._kind, self._prices = load_tou_csv(Path(base_dir) / self.file)

    @property
    def bound(self) -> bool:
        return self._prices is not None

    def hourly(self, hours: NDArray[np.int64]) -> NDArray[np.float64]:
        """Price per kWh of each simulated hour index (hour 0 = Monday 00:00–01:00)."""
        assert self._prices is not None, "time-of-use CSV used before its file was loaded"
        return self._prices[np.asarray(hours, dtype=np.int64) % len(self._prices)]


class EnergyCost(_Strict):
    price_per_kwh: NonNeg = Field(
        0.10, description="Flat price of facility energy per kWh (assumption: industrial tariff).")
    time_of_use: TimeOfUse | None = Field(None, description="Hourly tariff; replaces price_per_kwh when given.")
    pue: Annotated[float, Field(ge=1, le=5, allow_inf_nan=False)] = Field(
        1.55, description="Facility/IT power ratio used when the scenario has no cooling section (Uptime "
                          "Institute industry average 1.55–1.59, sources.md).")

    @model_validator(mode="before")
    @classmethod
    def _moved(cls, data: Any) -> Any:
        return moved(data, "costs.energy", {"gpu_tdp_w": "cluster.node.gpu.tdp_w",
                                            "non_gpu_w": "cluster.node.non_gpu_w"})


class Costs(_Strict):
    currency: str = Field("USD", min_length=1, max_length=8, description="Currency of every price.")
    amortisation_years: Pos = Field(
        5.0, description="Amortisation period of IT equipment (nodes, PSUs, fabric, initial spares), years "
                         "(assumption: 5-year depreciation).")
    facility_amortisation_years: Pos | None = Field(
        15.0, description="Amortisation period of cooling and power plant, years (assumption: 15). null: "
                          "amortisation_years.")
    discount_rate: Annotated[float, Field(ge=0, lt=1, allow_inf_nan=False)] = Field(
        0.08, description="Annual discount rate r in [0, 1) of the annuity factor (assumption: 8 % cost of capital).")
    value_per_useful_gpu_hour: NonNeg = Field(
        2.0, description="Value of one useful GPU-hour, used by the break-even of twin compare, not a cost "
                         "(assumption: H100 rental about USD 2 per GPU-hour).")
    capital: Capital = Field(default_factory=Capital)
    parts: Annotated[dict[str, NonNeg], BeforeValidator(_over_defaults)] = Field(
        default_factory=_default_parts,
        description="Price of the part replaced in one repair and of one spare, by part type, merged over the "
                    "defaults (assumptions); every repaired part type must have a price here or in the defaults.")
    spares: SparesCost = Field(default_factory=SparesCost)
    labour: Labour = Field(default_factory=Labour)
    energy: EnergyCost = Field(default_factory=EnergyCost)
    water_per_m3: NonNeg = Field(
        3.0, description="Price of one m³ of site water drawn by evaporative cooling (cooling.air.evaporative: "
                         "evaporated plus blowdown, metric water.site_l), priced as cost.water (assumption: no "
                         "sourced price; a utility water-plus-sewer tariff is a few USD per m³, and blowdown pays "
                         "sewer charges, so 3.0 is a round middle value; a `twin sensitivity` factor: --param "
                         "costs.water_per_m3=1,6). Halls without evaporative cooling use no water.")

    @property
    def plant_years(self) -> float:
        return self.facility_amortisation_years if self.facility_amortisation_years is not None \
            else self.amortisation_years

    def bind_files(self, base_dir: Path) -> None:
        """Read the data files of the section (the time-of-use CSV)."""
        if self.energy.time_of_use is not None:
            self.energy.time_of_use.bind_files(base_dir)


def _part_names(data: dict[str, Any]) -> set[str]:
    cluster = data.get("cluster")
    names = set(cluster.node.parts) | set(cluster.rack_parts) if cluster is not None else set()
    for section in ("cooling", "power", "network", "storage"):
        sub = data.get(section)
        if sub is not None and hasattr(sub, "facility_parts"):
            names |= set(sub.facility_parts())
    return names


def _repaired_names(data: dict[str, Any]) -> list[tuple[str, str]]:
    """(part, where) of every part type whose failures are repaired (transient faults are not)."""
    out = []
    cluster = data.get("cluster")
    if cluster is not None:
        out += [(k, f"cluster.node.parts.{k}") for k, p in cluster.node.parts.items() if p.effect != "transient"]
        out += [(k, f"cluster.rack_parts.{k}") for k in cluster.rack_parts]
    for section in ("cooling", "power", "network", "storage"):
        sub = data.get(section)
        if sub is not None and hasattr(sub, "facility_parts"):
            out += [(k, section) for k, p in sub.facility_parts().items() if p.effect != "transient"]
    return out


def _check(costs: Costs | None, info: ValidationInfo) -> Costs | None:
    """Cross-checks against the sections validated before ``costs``."""
    if costs is None:
        return costs
    data = info.data
    cluster = data.get("cluster")
    if cluster is not None and cluster.node.type not in costs.capital.node:
        raise ValueError(f"@capital.node: no price for node type {cluster.node.type!r} (cluster.node.type); "
                         f"priced: {sorted(costs.capital.node)}")
    for k, pool in enumerate(cluster.pools if cluster is not None else []):
        t = pool.node.type
        if t is not None and t not in costs.capital.node:
            raise ValueError(f"@capital.node: no price for node type {t!r} (cluster.pools.{k}.node.type); "
                             f"priced: {sorted(costs.capital.node)}")
    names = _part_names(data) | set(_default_parts()) | set(PLANT_PART_NAMES)
    for k in costs.parts:  # catches misspelt part names (the defaults name parts of every section)
        if k not in names:
            raise ValueError(f"@parts.{k}: no such part; known parts: {sorted(names)}")
    for k, where in _repaired_names(data):  # every repair is priced: no silent zero
        if k not in costs.parts:
            raise ValueError(f"@parts: no price for part {k!r} ({where}), whose repairs the cost model counts; "
                             f"add costs.parts.{k} (USD per unit replaced)")
    mt = data.get("maintenance")
    if mt is not None:
        for k in mt.spares:
            if k not in costs.parts:
                raise ValueError(f"@parts: no price for spare part {k!r} (maintenance.spares.{k} stocks it)")
        for k in costs.labour.pools:
            if k not in mt.crews:
                raise ValueError(f"@labour.pools.{k}: unknown crew pool; allowed: {sorted(mt.crews)}")
    return costs


CostsSection = Annotated[Costs | None, AfterValidator(_check)]
"""The scenario field type: :class:`Costs` checked against the cluster, maintenance and plant."""

__all__ = ["Costs", "CostsSection", "TimeOfUse", "load_tou_csv"]
