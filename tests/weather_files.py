"""Writers of EPW files as the EnergyPlus Auxiliary Programs documentation ("EnergyPlus Weather File (EPW)
Data Dictionary") specifies them: 8 header lines, then 35 comma-separated fields per hour. Used for the
test EPW (tests/data/weather/golden-48h.epw: the first 48 hours of the bundled Golden, CO TMY3 file) and
for the bundled SYNTHETIC hot, humid year (scenarios/data/weather/synthetic-hot-humid.epw): both files are
checked against these writers by tests/test_weather.py, so they can be re-made with
``python tests/weather_files.py``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
TMY3 = ROOT / "scenarios" / "data" / "weather" / "tmy3-724666-golden-co.csv"
EPW_48H = ROOT / "tests" / "data" / "weather" / "golden-48h.epw"
HOT_HUMID = ROOT / "scenarios" / "data" / "weather" / "synthetic-hot-humid.epw"
# fields 11-35 of an hourly row: radiation, illuminance, wind, sky cover, visibility, ceiling, weather codes,
# precipitable water, aerosol depth, snow, albedo, rain: each at the data dictionary's "missing" value
_MISSING_TAIL = ("9999,9999,9999,9999,9999,9999,999999,999999,999999,9999,999,999,99,99,9999,99999,9,999999999,"
                 "999,.999,999,99,999,999,99")
_FLAGS = "?9?9?9?9E0?9?9?9?9?9?9?9?9?9?9?9?9?9?9*9*9?9?9?9"


def epw_text(location: str, comments: Sequence[str], year: int, dry_c: Sequence[float], dew_c: Sequence[float],
             rh_pct: Sequence[float], pressure_pa: Sequence[float]) -> str:
    """An EPW file: the LOCATION line ``location`` (city,state,country,source,WMO,lat,lon,tz,elevation), two
    comment lines, one data period from 1 January, and one row per hour (hour 1 = 00:00-01:00)."""
    days_in_month = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
    lines = [f"LOCATION,{location}", "DESIGN CONDITIONS,0", "TYPICAL/EXTREME PERIODS,0", "GROUND TEMPERATURES,0",
             "HOLIDAYS/DAYLIGHT SAVINGS,No,0,0,0", f"COMMENTS 1,{comments[0]}", f"COMMENTS 2,{comments[1]}",
             "DATA PERIODS,1,1,Data,Monday, 1/ 1,12/31"]
    month, day = 1, 1
    for k, (t, d, rh, p) in enumerate(zip(dry_c, dew_c, rh_pct, pressure_pa, strict=True)):
        hour = k % 24 + 1
        lines.append(f"{year},{month},{day},{hour},60,{_FLAGS},{t:.1f},{d:.1f},{rh:.0f},{p:.0f},{_MISSING_TAIL}")
        if hour == 24:
            day += 1
            if day > days_in_month[month - 1]:
                month, day = month % 12 + 1, 1
    return "\n".join(lines) + "\n"


def golden_48h_epw() -> str:
    """The first 48 hours of the Golden, CO TMY3 file written as an EPW (pressure mbar -> Pa)."""
    import csv

    rows = list(csv.reader(TMY3.open(encoding="utf-8")))
    site, head, data = rows[0], rows[1], rows[2:50]
    col = {name: head.index(name) for name in ("Dry-bulb (C)", "Dew-point (C)", "RHum (%)", "Pressure (mbar)")}
    loc = f"GOLDEN-NREL,CO,USA,TMY3 {site[0]} (first 48 h; written per the EPW data dictionary),{site[0]}," \
          f"{site[4]},{site[5]},{site[3]},{site[6]}"
    return epw_text(loc, ("Test file for twin's EPW reader: the first 48 hours of NSRDB TMY3 724666",
                          "Fields 11-35 at the data dictionary's missing values"), 1999,
                    [float(r[col["Dry-bulb (C)"]]) for r in data], [float(r[col["Dew-point (C)"]]) for r in data],
                    [float(r[col["RHum (%)"]]) for r in data], [100.0 * float(r[col["Pressure (mbar)"]]) for r in data])


def hot_humid_epw() -> str:
    """A SYNTHETIC hot, humid year (not measured weather): dry-bulb 27 °C mean, ±2 °C seasonal, ±4 °C daily
    (peak 15:00) plus AR(1) noise (σ 1 °C, ρ 0.9); dew point 21.5 °C mean, ±1.5 °C seasonal plus noise (σ 0.8),
    at least 0.3 °C below the dry-bulb; 100,900 Pa (a coastal site about 35 m up). Mean wet-bulb depression
    about 4 °C, as issue 42's hot, humid probe. Seeded: the file is reproducible."""
    rng = np.random.default_rng(42_2026)
    n = 8760
    t = np.arange(n) + 0.5
    season = np.cos(2 * np.pi * (t / 24.0 - 196.0) / 365.0)
    daily = np.cos(2 * np.pi * ((t % 24.0) - 15.0) / 24.0)
    noise = np.zeros(n)
    e = rng.normal(0.0, 1.0 * np.sqrt(1 - 0.9**2), n)
    for k in range(1, n):
        noise[k] = 0.9 * noise[k - 1] + e[k]
    dry = np.round(27.0 + 2.0 * season + 4.0 * daily + noise, 1)
    dew = np.round(np.minimum(21.5 + 1.5 * season + rng.normal(0.0, 0.8, n), dry - 0.3), 1)
    # RH from the Magnus formula (only field 9, informative: twin reads dry-bulb, dew point and pressure)
    rh = 100.0 * np.exp(17.62 * dew / (243.12 + dew) - 17.62 * dry / (243.12 + dry))
    return epw_text("SYNTHETIC-HOT-HUMID,,XX,SYNTHETIC (twin tests/weather_files.py; not measured),000000,"
                    "10.0,100.0,7.0,35.0",
                    ("SYNTHETIC weather generated for twin (issue 42): NOT a real site or a measured year",
                     "Mean 27 C dry-bulb, about 4 C wet-bulb depression; seeded, see tests/weather_files.py"),
                    2001, dry.tolist(), dew.tolist(), rh.tolist(), [100900.0] * n)


if __name__ == "__main__":  # pragma: no cover
    EPW_48H.write_text(golden_48h_epw(), encoding="utf-8")
    HOT_HUMID.write_text(hot_humid_epw(), encoding="utf-8")
