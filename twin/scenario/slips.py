"""Values that look like a unit slip: valid numbers in the wrong unit, found by the unit in the field's name.

A scenario's units are in its field names (``_days``, ``_c``, ``_w``, ``_kw``); a number given in
another unit is often still valid and silently describes another datacenter: ``horizon_days: 2160``
meant as hours is six years, ``tdp_w: 0.7`` meant as kilowatts is a 0.7 W GPU. These checks walk a
scenario document (raw, or a validated scenario's dump) and say, for each value that looks like a
slip, what it reads as and what was probably meant. They are advisories on a valid scenario
(:func:`twin.scenario.advice.unit_slip_advice`) and hints after the errors of an invalid one
(the kilowatt TDP is refused on ``idle_w``, a field the user never set; the hint names ``tdp_w``).
They never change a value.
"""

from __future__ import annotations

import math
from typing import Any

from twin.limits import MAX_HORIZON_DAYS  # a number of hours beyond 24 × this is no horizon in any unit
from twin.units import HOURS_PER_DAY

HORIZON_SLIP_DAYS = 1000.0
"""A horizon of this many days (2.7 years) or more is flagged when, read as hours, it is a valid
horizon: ``horizon_days: 2160`` is most likely 90 days given in hours."""
DAYS_SLIP_DAYS = 240.0
"""Any other ``_days`` field is flagged from this many days (eight months) when it is a whole
multiple of 24: ``lead_time_days: 336`` is most likely 14 days given in hours."""
TEMPERATURE_SLIP_C = 100.0
"""An absolute temperature above this (water boils) is flagged: kelvin (300 K = 26.85 °C) or
Fahrenheit (104 °F = 40 °C) given as Celsius."""
JUNCTION_SLIP_C = 125.0
"""GPU junction limits and part reference temperatures may legitimately exceed 100 °C (a few
accelerators throttle near 105-110 °C); they are flagged above this instead."""
JUNCTION_FIELDS = ("slowdown_c", "shutdown_c", "t_ref_c")
TEMPERATURE_DIFFERENCE_MARKERS = ("amplitude", "approach", "doubling", "step", "delta", "rise", "margin",
                                  "hysteresis")
"""A ``_c`` field whose name holds one of these is a temperature difference, not a temperature."""
WATT_SLIP_W = 10.0
"""A power in watts (``_w``) below this, above zero, is flagged: no GPU, node or supply of a datacenter
draws or delivers under 10 W, so it is most likely kilowatts (0.7 for a 700 W GPU)."""
KILOWATT_SLIP_KW = 1e6
"""A power in kilowatts (``_kw``) of this (1 GW) or more is flagged: most likely watts."""
KELVIN_OFFSET = 273.15


def _number(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    x = float(v)
    return x if math.isfinite(x) else None


def slip(field: str, value: Any) -> str | None:
    """What ``value`` of the field named ``field`` (a dotted path; its last part carries the unit)
    reads as, and what was probably meant, when it looks like a unit slip; else None."""
    x = _number(value)
    if x is None:
        return None
    name = field.rsplit(".", 1)[-1]
    if "_per_" in name or name.endswith("_per_c"):  # a rate or a price (r_air_c_per_w, chiller_per_kw)
        return None
    if name == "horizon_days":
        if HORIZON_SLIP_DAYS <= x <= MAX_HORIZON_DAYS * HOURS_PER_DAY:
            return (f"{x:g} days is {x / 365:.1f} years; if hours were meant, {x:g} h is "
                    f"{x / HOURS_PER_DAY:.4g} days (horizon_days: {x / HOURS_PER_DAY:.4g})")
        return None
    if name.endswith("_days"):
        if x >= DAYS_SLIP_DAYS and x % HOURS_PER_DAY == 0:
            return (f"{x:g} days ({x / 365:.1f} years) is a whole multiple of 24; if hours were meant, "
                    f"{x:g} h is {x / HOURS_PER_DAY:g} days ({name}: {x / HOURS_PER_DAY:g})")
        return None
    if name.endswith("_c"):
        if any(m in name for m in TEMPERATURE_DIFFERENCE_MARKERS):
            return None
        limit = JUNCTION_SLIP_C if name in JUNCTION_FIELDS else TEMPERATURE_SLIP_C
        if x <= limit:
            return None
        text = f"{x:g} °C is above {limit:g} °C"
        if 223.15 <= x <= 373.15:  # -50 to 100 °C in kelvin
            return f"{text}; if kelvin was meant, {x:g} K is {x - KELVIN_OFFSET:.2f} °C ({name}: {x - KELVIN_OFFSET:.4g})"
        if x <= 250:  # up to 121 °C in Fahrenheit
            c = (x - 32) / 1.8
            return f"{text}; if Fahrenheit was meant, {x:g} °F is {c:.1f} °C ({name}: {c:.4g})"
        return f"{text}, which no datacenter temperature reaches; the unit is °C"
    if name.endswith("_w"):
        if 0 < x < WATT_SLIP_W:
            return (f"{x:g} W is below {WATT_SLIP_W:g} W; if kilowatts were meant, {x:g} kW is {x * 1000:g} W "
                    f"({name}: {x * 1000:g}); the unit is watts")
        return None
    if name.endswith("_kw"):
        if x >= KILOWATT_SLIP_KW:
            return (f"{x:g} kW is {x / 1e6:g} GW; if watts were meant, {x:g} W is {x / 1000:g} kW "
                    f"({name}: {x / 1000:g}); the unit is kilowatts")
        return None
    return None


def unit_slips(doc: Any, where: str = "") -> list[tuple[str, str]]:
    """(field path, text) of every value in ``doc`` (nested mappings and lists) that looks like a
    unit slip (:func:`slip`), in document order."""
    out: list[tuple[str, str]] = []
    stack: list[tuple[Any, str]] = [(doc, where)]
    while stack:
        obj, path = stack.pop()
        if isinstance(obj, dict):
            stack.extend(reversed([(v, f"{path}.{k}" if path else str(k)) for k, v in obj.items()]))
        elif isinstance(obj, (list, tuple)):
            stack.extend(reversed([(v, f"{path}.{i}") for i, v in enumerate(obj)]))
        elif path:
            text = slip(path, obj)
            if text is not None:
                out.append((path, text))
    return out
