"""GPU telemetry readers: temperature, power, SM clock and clock-event reasons per GPU over time, as
``nvidia-smi`` and DCGM (through Prometheus) keep them, and the inlet air of each node.

Every reader streams its file and hands each GPU sample to a :class:`Telemetry` accumulator, which
keeps per GPU a fixed-size reservoir of (power, temperature, inlet) points for the fits and exact
counts for the rest (samples, samples with a thermal clock event, a fleet histogram of temperature in
0.1 °C bins, a whole-degree reading spread evenly over the degree it rounds from): memory is bounded by the number of GPUs, not the length of the files. A malformed line
stops the command with an :class:`~twin.errors.InputError` naming the file and the line.

Formats:

* **nvidia-smi** (:func:`read_nvidia_smi`), ``nvidia-smi --query-gpu=timestamp,index,serial,
  temperature.gpu,power.draw,clocks.sm,clocks_event_reasons.active --format=csv -l 60``: a header
  naming the fields (units in brackets: ``power.draw [W]``; older drivers say
  ``clocks_throttle_reasons.active``), then one line per GPU and sample, cells separated by ``, ``:
  ``2024/05/01 12:00:00.123, 0, 1654922001234, 64, 512.34 W, 1980 MHz, 0x0000000000000020``.
  ``--format=csv,noheader,nounits`` is read too (the fields then in the order above). A cell such as
  ``[N/A]``, ``[Not Supported]`` or ``[GPU is lost]`` is a missing value. The host is the prefix
  ``host: `` that ``pdsh``/``clush`` put before each line when present, else the file's name up to its
  first dot (``gpu017.csv`` → ``gpu017``). Time stamps are in ``--tz``.
* **DCGM through Prometheus**: a range-query export (:func:`read_prometheus_json`, the JSON of
  ``/api/v1/query_range``: ``data.result[]`` each with ``metric`` labels ``__name__``, ``gpu``,
  ``UUID``, ``Hostname`` and ``values`` ``[[unix_s, "value"], ...]``), or a file of timestamped scrapes
  of dcgm-exporter in the text exposition format (:func:`read_exposition`: each sample line ends
  with its time stamp in milliseconds, as the format allows, or follows a comment ``# time <unix_s or
  ISO 8601>`` that dates the scrape). Metrics: ``DCGM_FI_DEV_GPU_TEMP`` (°C),
  ``DCGM_FI_DEV_POWER_USAGE`` (W), ``DCGM_FI_DEV_SM_CLOCK`` (MHz), ``DCGM_FI_DEV_CLOCK_THROTTLE_REASONS``
  or ``DCGM_FI_DEV_CLOCKS_EVENT_REASONS`` (the mask) and ``DCGM_FI_DEV_THERMAL_VIOLATION`` (a counter
  of µs spent in thermal slowdown; used for a GPU that reports no mask; a decrease is a counter reset,
  as Prometheus's ``increase()`` reads it). Other metrics are skipped.
* **Inlet** (:func:`read_inlet`): a CSV with a header ``node,time,inlet_c`` (e.g. from ``ipmitool
  sdr``), one row per node and reading; a GPU sample takes its node's latest reading at most
  ``INLET_MAX_AGE_S`` old.

A sample has a **thermal clock event** when its mask has ``SW_THERMAL_SLOWDOWN`` (0x20) or
``HW_THERMAL_SLOWDOWN`` (0x40) set (NVML's ``nvmlClocksEventReasons``).
"""

from __future__ import annotations

import json
import math
import os
import random
import re
from bisect import bisect_right
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from pathlib import Path

import numpy as np

from twin.calibrate.common import HOST_PREFIX as _PREFIX
from twin.calibrate.common import lines, open_text, parse_iso
from twin.errors import InputError

SW_THERMAL = 0x20
HW_THERMAL = 0x40
THERMAL_MASK = SW_THERMAL | HW_THERMAL
"""Clock-event reason bits of a thermal slowdown (NVML ``nvmlClocksEventReasonSwThermalSlowdown`` and
``...HwThermalSlowdown``)."""
RESERVOIR = 400
"""Points per GPU kept for the fits (a uniform random sample of its samples, reservoir sampling)."""
INLET_MAX_AGE_S = 900.0
"""A GPU sample uses its node's inlet reading at most this old (s)."""
_HIST_LO, _HIST_HI, _HIST_STEP = -20.0, 130.0, 0.1
POWER_STEP_W = 25.0
_POWER_BINS = 80
"""Samples are also counted by power in 25 W bins up to 2,000 W (the loaded samples' statistics)."""
LOADED_SHARE = 0.5
"""A sample is *loaded* when its power is at least this share of the fleet's 99th percentile of power."""

NVSMI_FIELDS = ("timestamp", "index", "serial", "temperature.gpu", "power.draw", "clocks.sm",
                "clocks_event_reasons.active")
"""The query's fields, in the order ``--format=csv,noheader`` prints them."""
_NVSMI_ALIASES = {"clocks_throttle_reasons.active": "clocks_event_reasons.active", "clocks.current.sm": "clocks.sm"}
"""Older drivers' names of the query's fields."""
_UNITS = {"power.draw": "W", "clocks.sm": "MHz"}
DCGM = {"DCGM_FI_DEV_GPU_TEMP": "temp_c", "DCGM_FI_DEV_POWER_USAGE": "power_w", "DCGM_FI_DEV_SM_CLOCK": "sm_mhz",
        "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS": "reasons", "DCGM_FI_DEV_CLOCKS_EVENT_REASONS": "reasons",
        "DCGM_FI_DEV_THERMAL_VIOLATION": "violation_us"}
"""DCGM fields read, and what each is."""


@dataclass
class GpuSeries:
    """What is kept of one GPU: exact counts and a reservoir of fit points."""

    host: str
    index: str
    serial: str = ""
    samples: int = 0
    with_temp: int = 0
    with_reasons: int = 0
    thermal: int = 0
    violation_s: float = 0.0
    violation_span_s: float = 0.0
    points: list[tuple[float, float, float]] = field(default_factory=list)
    """(power W, temperature °C, inlet °C or NaN)."""
    seen: int = 0
    """Points offered to the reservoir."""
    first_s: float = math.inf
    last_s: float = -math.inf
    _last_counter: tuple[float, float] | None = None


class Telemetry:
    """The accumulator every reader feeds (see the module doc). ``inlet``: per node, the sorted reading
    times (s) and values (°C) of :func:`read_inlet`."""

    def __init__(self, inlet: dict[str, tuple[list[float], list[float]]] | None = None, seed: int = 0,
                 reservoir: int = RESERVOIR) -> None:
        self.gpus: dict[str, GpuSeries] = {}
        self.inlet = inlet or {}
        self.rng = random.Random(seed)
        self.k = reservoir
        self.hist = np.zeros(int(round((_HIST_HI - _HIST_LO) / _HIST_STEP)), dtype=np.float64)
        self.by_power = np.zeros((_POWER_BINS, len(self.hist)), dtype=np.float64)
        """Temperature histogram (0.1 °C) of the samples with a power, by power bin."""
        self.events_by_power = np.zeros((_POWER_BINS, 2), dtype=np.int64)
        """Per power bin: samples with a reasons mask, and those with a thermal event."""
        self.sources: list[tuple[str, str, int, int]] = []
        """(file, format, lines, samples) of every file read."""
        self.missing = 0
        """Samples without a temperature or a power (``[N/A]`` cells, a series without the metric)."""

    # ---------------------------------------------------------------------------------------------
    def gpu(self, host: str, index: str, serial: str = "") -> GpuSeries:
        key = f"{host}:{index}"
        g = self.gpus.get(key)
        if g is None:
            g = self.gpus[key] = GpuSeries(host, index, serial)
        elif serial and not g.serial:
            g.serial = serial
        return g

    def inlet_at(self, host: str, t_s: float) -> float:
        s = self.inlet.get(host)
        if s is None:
            return math.nan
        i = bisect_right(s[0], t_s) - 1
        if i < 0 or t_s - s[0][i] > INLET_MAX_AGE_S:
            return math.nan
        return s[1][i]

    def add(self, g: GpuSeries, t_s: float, temp_c: float, power_w: float, reasons: int | None) -> None:
        """One sample of GPU ``g`` (NaN: missing; ``reasons`` None: no mask)."""
        g.samples += 1
        g.first_s = min(g.first_s, t_s)
        g.last_s = max(g.last_s, t_s)
        if reasons is not None:
            g.with_reasons += 1
            if reasons & THERMAL_MASK:
                g.thermal += 1
        if math.isnan(temp_c):
            self.missing += 1
            return
        g.with_temp += 1
        if temp_c == int(temp_c):  # whole degrees as nvidia-smi and DCGM print them: [T - 0.5, T + 0.5)
            sub = int(round(1.0 / _HIST_STEP))
            b = min(max(int(round((temp_c - 0.5 - _HIST_LO) / _HIST_STEP)), 0), len(self.hist) - sub)
            bins = slice(b, b + sub)
            w = 1.0 / sub
        else:
            b = min(max(int((temp_c - _HIST_LO) / _HIST_STEP + 1e-9), 0), len(self.hist) - 1)
            bins = slice(b, b + 1)
            w = 1.0
        self.hist[bins] += w
        if math.isnan(power_w):
            self.missing += 1
            return
        pb = min(max(int(power_w / POWER_STEP_W), 0), _POWER_BINS - 1)
        self.by_power[pb, bins] += w
        if reasons is not None:
            self.events_by_power[pb, 0] += 1
            self.events_by_power[pb, 1] += bool(reasons & THERMAL_MASK)
        pt = (power_w, temp_c, self.inlet_at(g.host, t_s))
        g.seen += 1
        if len(g.points) < self.k:
            g.points.append(pt)
        else:
            j = self.rng.randrange(g.seen)
            if j < self.k:
                g.points[j] = pt

    def add_violation(self, g: GpuSeries, t_s: float, counter_us: float) -> None:
        """A reading of the thermal-violation counter (µs): its increase since the previous reading (the
        new value after a reset) over the time between them."""
        prev = g._last_counter
        g._last_counter = (t_s, counter_us)
        if prev is None or t_s <= prev[0]:
            return
        inc = counter_us - prev[1] if counter_us >= prev[1] else counter_us
        g.violation_s += min(inc / 1e6, t_s - prev[0])
        g.violation_span_s += t_s - prev[0]

    # ---------------------------------------------------------------------------------------------
    @property
    def first_s(self) -> float:
        return min((g.first_s for g in self.gpus.values()), default=math.nan)

    @property
    def last_s(self) -> float:
        return max((g.last_s for g in self.gpus.values()), default=math.nan)

    @property
    def hosts(self) -> set[str]:
        return {g.host for g in self.gpus.values()}

    def thermal_share(self) -> tuple[float, float]:
        """(GPU-time with a thermal clock event, GPU-time observed) in samples (mask) plus, for GPUs
        without a mask, the violation counter's time in samples of the fleet's median sampling interval."""
        hot = 0.0
        tot = 0.0
        steps = [(g.last_s - g.first_s) / (g.samples - 1) for g in self.gpus.values() if g.samples > 1]
        dt = float(np.median(steps)) if steps and float(np.median(steps)) > 0 else 60.0
        for g in self.gpus.values():
            if g.with_reasons:
                hot += g.thermal
                tot += g.with_reasons
            elif g.violation_span_s > 0:
                hot += g.violation_s / dt
                tot += g.violation_span_s / dt
        return hot, tot

    def power_quantile(self, q: float) -> float:
        """The ``q`` quantile of the sampled power (W; 25 W bins, linear within a bin)."""
        return hist_quantile(self.by_power.sum(axis=1), 0.0, POWER_STEP_W, q)

    def loaded_threshold_w(self) -> float:
        """The power above which a sample counts as loaded (``LOADED_SHARE`` of the 99th percentile)."""
        return LOADED_SHARE * self.power_quantile(0.99)

    def loaded(self, threshold_w: float, quantiles: tuple[float, ...]) -> tuple[float, dict[float, float]]:
        """Of the samples at or above ``threshold_w`` (whole power bins from the one it falls in): the
        share with a thermal clock event (NaN without masks) and quantiles of their temperature (°C)."""
        k = min(max(int(threshold_w / POWER_STEP_W), 0), _POWER_BINS - 1)
        ev = self.events_by_power[k:].sum(axis=0)
        share = float(ev[1] / ev[0]) if ev[0] > 0 else math.nan
        h = self.by_power[k:].sum(axis=0)
        return share, {q: hist_quantile(h, _HIST_LO, _HIST_STEP, q) for q in quantiles}

    def temperature_quantile(self, q: float) -> float:
        """The ``q`` quantile of every sampled temperature (°C; a 0.1 °C histogram, linear within a bin)."""
        return hist_quantile(self.hist, _HIST_LO, _HIST_STEP, q)


def hist_quantile(counts: np.ndarray, lo: float, step: float, q: float) -> float:
    """Quantile ``q`` of a histogram with bins [lo + k·step, lo + (k+1)·step), uniform within a bin."""
    c = np.asarray(counts, dtype=float)
    tot = c.sum()
    if tot <= 0:
        return math.nan
    cdf = np.cumsum(c) / tot
    k = int(np.searchsorted(cdf, q, side="left"))
    below = cdf[k - 1] if k > 0 else 0.0
    frac = (q - below) / (c[k] / tot) if c[k] > 0 else 0.0
    return float(lo + (k + min(max(frac, 0.0), 1.0)) * step)


# ------------------------------------------------------------------------------------------ nvidia-smi
_MISSING = re.compile(r"^\[[^\]]*\]$")


def _cell(text: str, unit: str | None, source: str, where: str) -> float:
    t = text.strip()
    if not t or _MISSING.match(t) or t in ("N/A", "Not Supported"):
        return math.nan
    if unit and t.endswith(unit):
        t = t[: -len(unit)].strip()
    try:
        return float(t)
    except ValueError:
        raise InputError(source, where, f"{text.strip()!r} is not a number{' in ' + unit if unit else ''}"
                         ) from None


def _mask(text: str, source: str, where: str) -> int | None:
    t = text.strip()
    if not t or _MISSING.match(t) or t in ("N/A", "Not Supported"):
        return None
    try:
        return int(t, 16) if t.lower().startswith("0x") else int(float(t))
    except ValueError:
        raise InputError(source, where, f"{t!r} is not a reasons mask such as 0x0000000000000020") from None


def _nvsmi_time(text: str, tz: tzinfo) -> float:
    t = text.strip()
    for fmt in ("%Y/%m/%d %H:%M:%S.%f", "%Y/%m/%d %H:%M:%S"):
        try:
            return datetime.strptime(t, fmt).replace(tzinfo=tz).timestamp()
        except ValueError:
            continue
    return parse_iso(t, tz)


def _header(cells: list[str]) -> list[str] | None:
    names = [re.sub(r"\s*\[[^\]]*\]$", "", c.strip()) for c in cells]
    names = [_NVSMI_ALIASES.get(n, n) for n in names]
    return names if "timestamp" in names else None


def read_nvidia_smi(path: str | os.PathLike[str], tz: tzinfo, into: Telemetry, host: str | None = None) -> None:
    """Read an ``nvidia-smi --query-gpu ... --format=csv`` log into ``into`` (see the module doc)."""
    source = str(path)
    default_host = host or Path(path).name.split(".")[0]
    names: dict[str, list[str]] = {}
    n_lines = n_samples = 0
    for n, text in lines(path):
        n_lines = n
        s = text.strip()
        if not s or s.startswith("#"):
            continue
        h = default_host
        m = _PREFIX.match(s)
        if m and not re.match(r"^\d{4}/", s):
            h, s = m.group(1), s[m.end():]
        cells = [c.strip() for c in s.split(",")]
        head = _header(cells)
        if head is not None:
            missing = [f for f in ("timestamp", "index", "temperature.gpu", "power.draw") if f not in head]
            if missing:
                raise InputError(source, f"line {n}, header", f"missing {', '.join(missing)}; the query needs "
                                 "--query-gpu=" + ",".join(NVSMI_FIELDS))
            names[h] = head
            continue
        cols = names.get(h) or names.get(default_host) or list(NVSMI_FIELDS)
        if len(cells) != len(cols):
            raise InputError(source, f"line {n}", f"{len(cells)} fields, the header has {len(cols)} ("
                             + ", ".join(cols) + ")")
        row = dict(zip(cols, cells))
        try:
            t = _nvsmi_time(row["timestamp"], tz)
        except ValueError:
            raise InputError(source, f"line {n}, timestamp", f"{row['timestamp']!r} is not a time such as "
                             "2024/05/01 12:00:00.123") from None
        idx = row["index"]
        if not idx.isdigit():
            raise InputError(source, f"line {n}, index", f"{idx!r} is not a GPU index (0, 1, ...)")
        temp = _cell(row["temperature.gpu"], "C", source, f"line {n}, temperature.gpu")
        power = _cell(row["power.draw"], "W", source, f"line {n}, power.draw")
        if "clocks.sm" in row:
            _cell(row["clocks.sm"], "MHz", source, f"line {n}, clocks.sm")
        reasons = _mask(row["clocks_event_reasons.active"], source, f"line {n}, clocks_event_reasons.active") \
            if "clocks_event_reasons.active" in row else None
        serial = row.get("serial", "")
        g = into.gpu(h, idx, "" if _MISSING.match(serial or "") else serial)
        into.add(g, t, temp, power, reasons)
        n_samples += 1
    into.sources.append((source, "nvidia-smi", n_lines, n_samples))


# ------------------------------------------------------------------------------------------ DCGM
class _Joiner:
    """Joins DCGM series (one metric per line or series) into samples: per GPU the fields at one time."""

    def __init__(self, into: Telemetry, source: str) -> None:
        self.into = into
        self.source = source
        self.open: dict[str, tuple[float, dict[str, float]]] = {}
        self.samples = 0

    def put(self, labels: dict[str, str], metric: str, t_s: float, value: float, where: str) -> None:
        host = labels.get("Hostname") or labels.get("instance", "").split(":")[0]
        idx = labels.get("gpu")
        if not host or idx is None:
            raise InputError(self.source, where, f"{metric} without the labels gpu and Hostname (found "
                             f"{', '.join(sorted(labels)) or 'none'})")
        g = self.into.gpu(host, idx, labels.get("UUID", ""))
        what = DCGM[metric]
        if what == "violation_us":
            self.into.add_violation(g, t_s, value)
            return
        key = f"{host}:{idx}"
        cur = self.open.get(key)
        if cur is not None and cur[0] != t_s:
            self.flush(key)
            cur = None
        if cur is None:
            cur = self.open[key] = (t_s, {})
        cur[1][what] = value

    def flush(self, key: str | None = None) -> None:
        for k in ([key] if key is not None else list(self.open)):
            t_s, f = self.open.pop(k)
            g = self.into.gpus[k]
            if set(f) <= {"sm_mhz"}:
                continue
            r = f.get("reasons")
            self.into.add(g, t_s, f.get("temp_c", math.nan), f.get("power_w", math.nan),
                          None if r is None or math.isnan(r) else int(r))
            self.samples += 1


def _float(text: str, source: str, where: str) -> float:
    try:
        return float(text)
    except (TypeError, ValueError):
        raise InputError(source, where, f"{text!r} is not a number") from None


def read_prometheus_json(path: str | os.PathLike[str], into: Telemetry) -> None:
    """Read a Prometheus range-query export (``/api/v1/query_range`` JSON) of DCGM metrics. One document:
    it is parsed whole (a range query returns at most 11,000 points per series, which bounds it)."""
    source = str(path)
    with open_text(path) as fh:
        try:
            doc = json.load(fh)
        except json.JSONDecodeError as exc:
            raise InputError(source, f"line {exc.lineno}", f"not JSON: {exc.msg}") from None
    data = doc.get("data") if isinstance(doc, dict) else None
    if not isinstance(data, dict) or not isinstance(data.get("result"), list):
        raise InputError(source, "data.result", "missing: expected the JSON of /api/v1/query_range "
                         "({status, data: {resultType: matrix, result: [...]}})")
    j = _Joiner(into, source)
    series = []
    for i, res in enumerate(data["result"]):
        where = f"data.result[{i}]"
        if not isinstance(res, dict) or not isinstance(res.get("metric"), dict):
            raise InputError(source, where, "expected {metric: {labels}, values: [[t, value], ...]}")
        labels = {str(k): str(v) for k, v in res["metric"].items()}
        name = labels.get("__name__", "")
        if name not in DCGM:
            continue
        vals = res.get("values", [[*res["value"]]] if "value" in res else None)
        if not isinstance(vals, list):
            raise InputError(source, f"{where}.values", "missing: expected [[unix_s, \"value\"], ...]")
        pts = []
        for k, v in enumerate(vals):
            if not (isinstance(v, list) and len(v) == 2):
                raise InputError(source, f"{where}.values[{k}]", f"{v!r} is not [unix_s, \"value\"]")
            pts.append((_float(v[0], source, f"{where}.values[{k}]"), _float(v[1], source, f"{where}.values[{k}]")))
        series.append((labels, name, pts, where))
    # all fields of a GPU at one time together: points in time order over its series
    events = sorted(((t, s, k) for s, (_l, _n, pts, _w) in enumerate(series) for k, (t, _v) in enumerate(pts)))
    for t, s, k in events:
        labels, name, pts, where = series[s]
        j.put(labels, name, t, pts[k][1], f"{where}.values[{k}]")
    j.flush()
    into.sources.append((source, "prometheus-json", len(series), j.samples))


_TIME_COMMENT = re.compile(r"^#\s*time\s+(\S+)\s*$", re.I)


def read_exposition(path: str | os.PathLike[str], tz: tzinfo, into: Telemetry) -> None:
    """Read timestamped dcgm-exporter scrapes in the Prometheus text exposition format (see the module
    doc), each sample line parsed by prometheus-client's own parser."""
    from prometheus_client.parser import text_string_to_metric_families

    source = str(path)
    j = _Joiner(into, source)
    scrape_s: float | None = None
    n_lines = 0
    for n, text in lines(path):
        n_lines = n
        s = text.strip()
        if not s:
            continue
        if s.startswith("#"):
            m = _TIME_COMMENT.match(s)
            if m:
                v = m.group(1)
                try:
                    scrape_s = float(v) if re.fullmatch(r"\d+(\.\d*)?", v) else parse_iso(v, tz)
                except ValueError:
                    raise InputError(source, f"line {n}", f"{v!r} is not a time (unix seconds or ISO 8601)"
                                     ) from None
            continue
        name = s.split("{", 1)[0].split(" ", 1)[0]
        try:
            fams = list(text_string_to_metric_families(s + "\n"))
        except (ValueError, TypeError, IndexError) as exc:
            raise InputError(source, f"line {n}", f"not a sample of the text exposition format: {exc}") from None
        if name not in DCGM:
            continue
        for fam in fams:
            for smp in fam.samples:
                t = smp.timestamp
                if t is None:
                    if scrape_s is None:
                        raise InputError(source, f"line {n}", "a sample without a time stamp and no '# time ...' "
                                         "line before it")
                    t_s = scrape_s
                else:
                    t_s = float(t) / 1000.0 if float(t) > 1e11 else float(t)
                j.put(dict(smp.labels), name, t_s, float(smp.value), f"line {n}")
    j.flush()
    into.sources.append((source, "exposition", n_lines, j.samples))


# ------------------------------------------------------------------------------------------ inlet
def read_inlet(paths: list[str], tz: tzinfo) -> dict[str, tuple[list[float], list[float]]]:
    """Inlet readings per node from CSVs with the columns ``node, time, inlet_c`` (times ISO 8601 in
    ``tz``, or unix seconds): per node, sorted times (s) and values (°C)."""
    by: dict[str, list[tuple[float, float]]] = {}
    for path in paths:
        source = str(path)
        cols: list[str] | None = None
        for n, text in lines(path):
            s = text.strip()
            if not s or s.startswith("#"):
                continue
            cells = [c.strip() for c in s.split(",")]
            if cols is None:
                cols = [c.lower() for c in cells]
                missing = [c for c in ("node", "time", "inlet_c") if c not in cols]
                if missing:
                    raise InputError(source, f"line {n}, header", f"missing {', '.join(missing)}; expected "
                                     "node,time,inlet_c")
                continue
            if len(cells) != len(cols):
                raise InputError(source, f"line {n}", f"{len(cells)} fields, the header has {len(cols)}")
            row = dict(zip(cols, cells))
            v = row["time"]
            try:
                t = float(v) if re.fullmatch(r"\d+(\.\d*)?", v) else parse_iso(v, tz)
            except ValueError:
                raise InputError(source, f"line {n}, time", f"{v!r} is not a time (ISO 8601 or unix seconds)"
                                 ) from None
            c = _cell(row["inlet_c"], None, source, f"line {n}, inlet_c")
            if not math.isnan(c):
                by.setdefault(row["node"], []).append((t, c))
    out = {}
    for node, pts in by.items():
        pts.sort()
        out[node] = ([p[0] for p in pts], [p[1] for p in pts])
    return out
