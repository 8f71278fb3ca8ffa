"""The metric catalogue (issue 30, item 2): what every metric of a replication is called, its unit,
which way is better, its group and how a person reads it.

Every human-facing table and figure names a metric by its :func:`label` and prints its value with
:func:`format_value` (percent, k/M/G with the unit, money in the scenario's currency, hours, °C; never
scientific notation); machine outputs (parquet, JSON) keep the raw keys and values.

A metric is found by its exact key, or by a pattern whose ``*`` stands for one dotted suffix
(a part type, a cause, a crew pool): ``failures.*`` matches ``failures.gpu`` and labels it
"failures: gpu". A metric missing here fails ``tests/test_metric_catalogue.py``, which says which
:class:`Metric` line to add. ``python -m twin.docs`` writes ``docs/metrics-reference.md`` from it.
"""

from __future__ import annotations

import fnmatch
import math
from typing import Iterable, Sequence

from twin.report.metric_entries import CATALOGUE, FORMATS, GROUPS, Metric  # noqa: F401  (re-exported)

_EXACT = {m.key: m for m in CATALOGUE if "*" not in m.key}
_PATTERNS = sorted((m for m in CATALOGUE if "*" in m.key), key=lambda m: -len(m.key))
"""Longest pattern first, so ``thermal.trips.*`` wins over a shorter one."""


class UnknownMetric(KeyError):
    """A metric key the catalogue has no entry for."""


def find(key: str) -> Metric | None:
    """The catalogue entry of ``key`` (exact key first, then the longest matching pattern), or None.
    A pattern's ``*`` matches one dotted suffix without dots."""
    if key in _EXACT:
        return _EXACT[key]
    for m in _PATTERNS:
        if fnmatch.fnmatchcase(key, m.key) and "." not in key[len(m.key) - 1:]:
            return m
    return None


def lookup(key: str) -> Metric:
    """:func:`find` or :class:`UnknownMetric`."""
    m = find(key)
    if m is None:
        raise UnknownMetric(key)
    return m


def _suffix(key: str, m: Metric) -> str:
    return key[len(m.key) - 1:].replace("_", " ") if m.key.endswith("*") else ""


def label(key: str) -> str:
    """Human label of ``key`` ("failures: gpu"); the raw key when it is not catalogued."""
    m = find(key)
    return key if m is None else m.label.format(_suffix(key, m))


def unit_label(key: str, currency: str = "USD") -> str:
    """The unit a person reads (``%``, ``node-h``, ``kWh``, the currency …)."""
    m = find(key)
    if m is None:
        return ""
    if m.fmt == "money":
        return currency or "currency units"
    if m.fmt == "percent":
        return "%"
    return "" if m.unit == "ratio" else m.unit


SELF_SCALED = frozenset({"energy_kwh", "power_w", "power_kw", "ramp_w_per_h"})
"""Formats whose printed values carry a unit scaled to their size (kWh, MWh, GWh …): a table column of
them names no unit (it would be wrong for most rows), an axis of raw values does."""


def label_with_unit(key: str, currency: str = "USD", table: bool = False) -> str:
    """"node-hours down (node-h)"; a count keeps its bare label (its values carry the noun), and so
    does, with ``table`` (a column of values printed by :func:`format_value`), a metric whose values
    carry their own scaled unit (``IT energy``, its values 228.1 MWh or 17.29 GWh; an axis of raw
    values keeps ``(kWh)``)."""
    m = find(key)
    bare = m is not None and (m.fmt == "count" or (table and m.fmt in SELF_SCALED))
    u = unit_label(key, currency) if not bare else ""
    return f"{label(key)} ({u})" if u else label(key)


def direction(key: str) -> int:
    """+1 higher is better, −1 lower is better, 0 none (also for an uncatalogued key)."""
    m = find(key)
    return 0 if m is None else m.direction


def group(key: str) -> str:
    m = find(key)
    return "other" if m is None else m.group


def missing(keys: Iterable[str]) -> list[str]:
    """The keys the catalogue does not know, sorted."""
    return sorted({k for k in keys if find(k) is None})


def by_group(keys: Sequence[str]) -> list[tuple[str, list[str]]]:
    """``keys`` grouped in :data:`GROUPS` order (uncatalogued ones last, under ``other``), each
    group's keys in catalogue order then by name."""
    order = {m.key: i for i, m in enumerate(CATALOGUE)}
    out: dict[str, list[str]] = {}
    for k in keys:
        out.setdefault(group(k), []).append(k)

    def rank(k: str) -> tuple[int, str]:
        m = find(k)
        return (order[m.key] if m is not None else len(order), k)

    return [(g, sorted(out[g], key=rank)) for g in (*GROUPS, "other") if g in out]


# ------------------------------------------------------------------------------ numbers

_PREFIX = ((1e9, 1e9, "G"), (1e6, 1e6, "M"), (1e4, 1e3, "k"))
"""(from magnitude, divisor, prefix): 12,345 prints as 12.35 k, 1,234 as 1,234."""


def plain(x: float, sig: int = 4, signed: bool = False) -> str:
    """``x`` with ``sig`` significant digits, thousands separators and never an exponent (at most
    eight decimals: smaller magnitudes print as 0)."""
    if x is None or not isinstance(x, (int, float)) or math.isnan(x):
        return "–"
    if math.isinf(x):
        return ("+∞" if signed else "∞") if x > 0 else "−∞"
    if x == 0:
        return "0"
    a = abs(x)
    dec = min(8, max(0, sig - 1 - math.floor(math.log10(a))))
    s = f"{a:,.{dec}f}"
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    if s in ("0", ""):
        return "0"
    sign = "−" if x < 0 else ("+" if signed else "")
    return sign + s


def _scaled(x: float, unit: str, signed: bool, sig: int, prefixes: Sequence[tuple[float, float, str]] = _PREFIX,
            base_units: Sequence[str] | None = None) -> str:
    """``x`` in ``unit`` with a k/M/G multiplier (or the next of ``base_units``: kWh → MWh → GWh)."""
    if x is None or math.isnan(x) or math.isinf(x):
        return plain(x, sig, signed)
    a = abs(x)
    if base_units is not None:  # W, kW, MW, GW
        i = 0
        while i + 1 < len(base_units) and a >= 1000:
            a /= 1000
            x /= 1000
            i += 1
        return f"{plain(x, sig, signed)} {base_units[i]}".strip()
    for lim, f, p in prefixes:
        if a >= lim:
            return f"{plain(x / f, sig, signed)} {p} {unit}".strip()
    return f"{plain(x, sig, signed)} {unit}".strip()


def format_value(key: str, x: float, currency: str = "USD", delta: bool = False, sig: int = 4,
                 bare: bool = False) -> str:
    """``x`` of metric ``key`` as a person reads it: ``99.91 %``, ``12.35 failures``, ``1.73 M GPU-h``,
    ``17.29 GWh``, ``USD 1.4 M``, ``78.2 °C``. With ``delta`` the value is a difference: signed, and
    a fraction's difference in percentage points (``+0.12 pp``). An uncatalogued key prints as a
    plain number. ``bare``: without the unit where it is not bound to a multiplier (the ``%`` or
    ``pp``, the currency, a count's or hours' unit; kWh, W and °C stay), for the bounds of an
    interval next to a value that has it."""
    m = find(key)
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if bare and m is not None and m.fmt in ("percent", "money", "count", "hours", "days"):
        full = format_value(key, x, currency, delta, sig)
        unit = {"percent": "pp" if delta else "%", "money": currency or "currency units"}.get(m.fmt, m.unit)
        if m.fmt == "days":
            unit = "days"
        return full[: -len(unit)].rstrip() if unit and full.endswith(unit) else full
    x = float(x)
    if m is None:
        return plain(x, sig, delta)
    f = m.fmt
    if f == "percent":
        return f"{plain(100 * x, sig, delta)} {'pp' if delta else '%'}"
    if f == "money":
        cur = currency or "currency units"
        if math.isinf(x):
            return plain(x, sig, delta)
        a = abs(x)
        for lim, div, p in ((1e9, 1e9, "bn"), (1e6, 1e6, "M"), (1e4, 1e3, "k")):
            if a >= lim:
                return f"{plain(x / div, sig, delta)} {p} {cur}"
        return f"{plain(x, sig, delta)} {cur}"
    if f == "energy_kwh":
        return _scaled(x, "", delta, sig, base_units=("kWh", "MWh", "GWh", "TWh"))
    if f == "power_w":
        return _scaled(x, "", delta, sig, base_units=("W", "kW", "MW", "GW"))
    if f == "power_kw":
        return _scaled(x, "", delta, sig, base_units=("kW", "MW", "GW"))
    if f == "ramp_w_per_h":
        return _scaled(x, "", delta, sig, base_units=("W/h", "kW/h", "MW/h", "GW/h"))
    if f == "temperature_c":
        return f"{plain(x, sig, delta)} °C"
    if f == "ratio":
        return plain(x, sig, delta)
    if f == "days":
        return _scaled(x, "days", delta, sig)
    return _scaled(x, m.unit, delta, sig)


def format_interval(key: str, lo: float, hi: float, currency: str = "USD", delta: bool = False,
                    bare: bool = True) -> str:
    """``[lo, hi]`` in the metric's format (``bare``: without a unit that the value beside it shows)."""
    return f"[{format_value(key, lo, currency, delta, bare=bare)}, {format_value(key, hi, currency, delta, bare=bare)}]"


def catalogue_markdown() -> str:
    """``docs/metrics-reference.md``: every entry, grouped."""
    lines = ["# Metrics reference", "",
             "Generated from the metric catalogue (`twin/report/metric_entries.py`) by `python -m twin.docs`; do not",
             "edit by hand (a test checks it is up to date). Every human-facing table and figure names a metric",
             "by its label and prints it in its format; machine outputs (`*.parquet`, `*.json`) keep the key",
             "and the raw value (a percent is stored as a fraction, money in the scenario's currency). A `*` in",
             "a key stands for one suffix: a part type, a cause or a crew pool. Better: which way is better",
             "(`higher`, `lower`, or `–` when neither).", ""]
    for g in GROUPS:
        lines += [f"## {g}", "", "| key | label | unit | better | format | meaning |", "|---|---|---|---|---|---|"]
        for m in CATALOGUE:
            if m.group == g:
                better = {1: "higher", -1: "lower", 0: "–"}[m.direction]
                lines.append(f"| `{m.key}` | {m.label.replace('{}', '*part*')} | {m.unit} | {better} | {m.fmt} "
                             f"| {m.meaning} |")
        lines.append("")
    return "\n".join(lines)


__all__ = ["CATALOGUE", "FORMATS", "GROUPS", "Metric", "UnknownMetric", "by_group", "catalogue_markdown",
           "direction", "find", "format_interval", "format_value", "group", "label", "label_with_unit", "lookup",
           "SELF_SCALED",
           "missing", "plain", "unit_label"]
