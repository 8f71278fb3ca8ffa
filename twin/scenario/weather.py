"""Hourly weather files for ``cooling.ambient.csv`` (issue 42): EnergyPlus EPW and NSRDB TMY3 beside the
project's own CSV (``temp_c``, optional ``wet_bulb_c``), giving dry-bulb, dew point, station pressure and
the wet-bulb derived from them at that pressure (``twin.physics.psychro``).

* **EPW** (EnergyPlus Auxiliary Programs, "EnergyPlus Weather File (EPW) Data Dictionary"): 8 header lines
  (LOCATION, DESIGN CONDITIONS, TYPICAL/EXTREME PERIODS, GROUND TEMPERATURES, HOLIDAYS/DAYLIGHT SAVINGS,
  COMMENTS 1, COMMENTS 2, DATA PERIODS), then one comma-separated row per hour: year, month, day, hour
  (1-24), minute, data source flags, dry-bulb °C (missing 99.9), dew point °C (missing 99.9), relative
  humidity % (missing 999), station pressure Pa (missing 999999), then radiation, wind, ... (35 fields).
  LOCATION's 10th field is the elevation, m.
* **TMY3** (NSRDB, Wilcox and Marion 2008, NREL/TP-581-43156): line 1 the site (USAF id, name, state,
  time zone, latitude, longitude, elevation m), line 2 the column names, then one row per hour ending at
  the time given; read by name: ``Dry-bulb (C)``, ``Dew-point (C)``, ``Pressure (mbar)`` (missing -9900).

Rows are read as they stream from the file (``csv.reader``), one hour each from time 0 (1 January 00:00),
and repeat past the file's end. pvlib has readers for both (``pvlib.iotools.read_epw``/``read_tmy3``) but
pulls in a large stack for four columns; these readers are small and name the file and line of a bad row.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from twin.errors import InputError

F = NDArray[np.float64]
WeatherFormat = Literal["auto", "twin", "epw", "tmy3"]
EPW_HEADER_LINES = 8
_EPW_MISSING = {6: 99.9, 7: 99.9, 9: 999999.0}  # field index (0-based) -> the spec's missing value
_TMY3_COLS = {"dry": "Dry-bulb (C)", "dew": "Dew-point (C)", "pressure": "Pressure (mbar)"}
_TMY3_MISSING = -9900.0


@dataclass
class Weather:
    """Hourly weather of a site: dry-bulb, dew point (°C), station pressure (Pa), wet-bulb (°C) and the
    file's site name and elevation (m)."""

    dry_c: F
    dew_c: F
    pressure_pa: F
    wet_c: F
    site: str
    elevation_m: float


def detect_format(path: Path) -> Literal["twin", "epw", "tmy3"]:
    """The weather format of ``path`` from its first two lines: EPW starts with ``LOCATION,``; TMY3 has
    the site on line 1 and ``Date (MM/DD/YYYY)`` opening line 2; anything else is the project's CSV."""
    with path.open(encoding="utf-8", errors="replace", newline="") as fh:
        first, second = fh.readline(), fh.readline()
    if first.upper().startswith("LOCATION,"):
        return "epw"
    if second.startswith("Date (MM/DD/YYYY)"):
        return "tmy3"
    return "twin"


def _num(src: str, line: int, text: str, what: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise InputError(src, f"line {line}", f"{what} is not a number: {text!r}") from None
    if not math.isfinite(v):
        raise InputError(src, f"line {line}", f"{what} is not a finite number: {text!r}")
    return v


def _check(src: str, line: int, dry: float, dew: float, p_pa: float) -> None:
    if not -70.0 < dry < 70.0:
        raise InputError(src, f"line {line}", f"dry-bulb must be in (-70, 70) °C, got {dry:g}")
    if not -70.0 < dew < 70.0:
        raise InputError(src, f"line {line}", f"dew point must be in (-70, 70) °C, got {dew:g}")
    if not 31000.0 < p_pa < 120000.0:
        raise InputError(src, f"line {line}", f"station pressure must be in (31,000, 120,000) Pa, got {p_pa:g}")


def _finish(src: str, dry: list[float], dew: list[float], p: list[float], site: str, elev: float) -> Weather:
    from twin.physics import psychro

    if not dry:
        raise InputError(src, "", "weather file has no hourly rows")
    d, dp, pp = (np.asarray(x, dtype=np.float64) for x in (dry, dew, p))
    dp = np.minimum(dp, d)  # a dew point above the dry-bulb by rounding is saturated air
    return Weather(d, dp, pp, psychro.wet_bulb_c(d, dp, pp), site, elev)


def read_epw(path: Path) -> Weather:
    """Dry-bulb, dew point and station pressure of every hourly row of an EPW file (see the module
    docstring); the wet-bulb from them. A malformed row: :class:`InputError` naming the file and line."""
    src = str(path)
    dry: list[float] = []
    dew: list[float] = []
    p: list[float] = []
    site, elev = "", math.nan
    with path.open(encoding="utf-8", errors="replace", newline="") as fh:
        for n, row in enumerate(csv.reader(fh), start=1):
            if n == 1:
                if not row or row[0].strip().upper() != "LOCATION" or len(row) < 10:
                    raise InputError(src, "line 1", "an EPW file starts with LOCATION,city,state,country,source,"
                                     "WMO,latitude,longitude,time zone,elevation")
                site = ", ".join(x.strip() for x in row[1:4] if x.strip())
                elev = _num(src, 1, row[9], "elevation (LOCATION field 10)")
                continue
            if n == EPW_HEADER_LINES and row and row[0].strip().upper() == "DATA PERIODS":
                per_hour = _num(src, n, row[2] if len(row) > 2 else "", "records per hour (DATA PERIODS field 3)")
                if per_hour != 1:
                    raise InputError(src, f"line {n}", f"only hourly EPW files are read (1 record per hour), got "
                                     f"{per_hour:g} records per hour")
            if n <= EPW_HEADER_LINES or not "".join(row).strip():
                continue
            if len(row) < 10:
                raise InputError(src, f"line {n}", f"an EPW data row has 35 fields (at least the first 10 are "
                                 f"read: date, time, flags, dry-bulb, dew point, RH, pressure), got {len(row)}")
            vals = []
            for k, what in ((6, "dry-bulb (field 7)"), (7, "dew point (field 8)"), (9, "station pressure (field 10)")):
                v = _num(src, n, row[k], what)
                if v == _EPW_MISSING[k]:
                    raise InputError(src, f"line {n}", f"{what} is missing ({row[k].strip()}); fill the gap first")
                vals.append(v)
            _check(src, n, vals[0], vals[1], vals[2])
            dry.append(vals[0])
            dew.append(vals[1])
            p.append(vals[2])
    return _finish(src, dry, dew, p, site, elev)


def read_tmy3(path: Path) -> Weather:
    """Dry-bulb, dew point and pressure of every hourly row of an NSRDB TMY3 CSV (see the module
    docstring); the wet-bulb from them. A malformed row: :class:`InputError` naming the file and line."""
    src = str(path)
    dry: list[float] = []
    dew: list[float] = []
    p: list[float] = []
    site, elev = "", math.nan
    cols: dict[str, int] = {}
    with path.open(encoding="utf-8", errors="replace", newline="") as fh:
        for n, row in enumerate(csv.reader(fh), start=1):
            if n == 1:
                if len(row) < 7:
                    raise InputError(src, "line 1", "a TMY3 file starts with the site: USAF id, name, state, time "
                                     "zone, latitude, longitude, elevation")
                site = ", ".join(x.strip() for x in row[1:3] if x.strip())
                elev = _num(src, 1, row[6], "elevation (field 7)")
                continue
            if n == 2:
                head = [c.strip() for c in row]
                for key, name in _TMY3_COLS.items():
                    if name not in head:
                        raise InputError(src, "line 2", f"a TMY3 header has the column {name!r}")
                    cols[key] = head.index(name)
                continue
            if not "".join(row).strip():
                continue
            vals = []
            for key in ("dry", "dew", "pressure"):
                k = cols[key]
                if k >= len(row):
                    raise InputError(src, f"line {n}", f"row has {len(row)} fields, no {_TMY3_COLS[key]!r} "
                                     f"(column {k + 1})")
                v = _num(src, n, row[k], _TMY3_COLS[key])
                if v == _TMY3_MISSING:
                    raise InputError(src, f"line {n}", f"{_TMY3_COLS[key]} is missing (-9900); fill the gap first")
                vals.append(v)
            _check(src, n, vals[0], vals[1], vals[2] * 100.0)
            dry.append(vals[0])
            dew.append(vals[1])
            p.append(vals[2] * 100.0)
    return _finish(src, dry, dew, p, site, elev)


def read_weather(path: Path, fmt: WeatherFormat) -> Weather | None:
    """The weather of an EPW or TMY3 file (``fmt`` auto: detected); None for the project's own CSV."""
    kind = detect_format(path) if fmt == "auto" else fmt
    if kind == "epw":
        return read_epw(path)
    if kind == "tmy3":
        return read_tmy3(path)
    return None
