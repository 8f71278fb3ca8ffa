"""NVIDIA XID events from kernel-log lines, as syslog, journald and ``dmesg -T`` print them::

    Jan 15 10:23:45 gpu001 kernel: [1234567.890123] NVRM: Xid (PCI:0000:3b:00): 79, pid=2513, name=python, GPU has fallen off the bus.
    2024-01-15T10:23:45.123456+01:00 gpu001 kernel: NVRM: Xid (PCI:0000:3b:00): 48, pid=..., An uncorrectable double bit error (DBE) ...
    [Mon Jan 15 10:23:45 2024] NVRM: Xid (PCI:0000:3b:00): 79, pid=2513, name=python, GPU has fallen off the bus.

The host is the word after the time stamp (syslog, ``journalctl -o short``/``short-iso``/
``short-precise``; a network syslog's ``<PRI>`` and RFC 5424 version in front are skipped); ``dmesg -T`` lines carry none, so their host is the file name up to its first dot
(``gpu001.dmesg.txt`` → ``gpu001``). Syslog lines carry no year: ``--year`` gives the year of the
first line, and a month earlier than the line before starts the next year. Time stamps without an
offset are in ``--tz``. Lines without ``NVRM: Xid`` are skipped (a kernel log holds everything the
kernel says); an ``NVRM: Xid`` line whose prefix or XID cannot be read stops the read (exit 2).
``dmesg`` without ``-T`` (seconds since boot) cannot be placed in time: refused.

Each XID is mapped by :data:`XID_TABLE` (or the user's YAML, ``--xid-table``) to a part type and a
category: ``failure`` (ends the part's life), ``remediation`` (an automated repair: a row remap),
``reset`` (a GPU reset, firmware), ``warning``, ``contained`` (counted, no part) or ``application``
(the job's own error: excluded and counted). Storms — the same XID on the same GPU again within
``storm_window_s`` of its previous line — are collapsed to their first event (and counted). XIDs not
in the table are counted and reported, never silently dropped.
"""

from __future__ import annotations

import math
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone, tzinfo
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from twin.calibrate.common import lines, open_text, parse_iso
from twin.errors import InputError

CATEGORIES = ("failure", "remediation", "reset", "warning", "contained", "application")
"""What an XID means for the twin (see the module doc)."""

XID_TABLE: dict[int, tuple[str | None, str, str]] = {
    13: (None, "application", "Graphics engine exception"),
    31: (None, "application", "GPU memory page fault"),
    43: (None, "application", "GPU stopped processing"),
    45: (None, "application", "Preemptive cleanup, due to previous errors"),
    68: (None, "application", "NVDEC0 exception"),
    109: (None, "application", "Context switch timeout"),
    48: ("hbm", "failure", "Double-bit ECC error"),
    63: ("hbm", "remediation", "ECC page retirement or row-remap recording event"),
    64: ("hbm", "failure", "ECC page retirement or row-remap recording failure"),
    74: ("nvlink", "failure", "NVLink error"),
    79: ("gpu", "failure", "GPU has fallen off the bus"),
    92: ("hbm", "warning", "High single-bit ECC error rate"),
    94: (None, "contained", "Contained ECC error"),
    95: ("hbm", "failure", "Uncontained ECC error"),
    119: ("gpu", "reset", "GSP RPC timeout"),
    120: ("gpu", "reset", "GSP error"),
}
"""XID → (part type or None, category, meaning). Sources: NVIDIA's XID catalogue ("XID Errors",
docs.nvidia.com/deploy/xid-errors) and the driver's error names (``nverror.h``); the application set
(13, 31, 43, 45, 68, 109) is the one NVIDIA's Kubernetes DRA driver treats as non-fatal application
errors (../shared/design/sources-next.md §11). The mapping of each hardware XID to a twin part (79 →
``gpu``; 48, 64, 95 → ``hbm``; 74 → ``nvlink``) is this project's reading of the catalogue: an
assumption, overridable with ``--xid-table``."""

DEFAULT_STORM_WINDOW_S = 300.0
"""The same XID on the same GPU within this many seconds of its previous line is one event (assumption:
a failing GPU repeats its XID until it is reset; NVIDIA's catalogue gives no window)."""

_MONTHS = {m: i for i, m in enumerate(("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct",
                                        "Nov", "Dec"), 1)}
_SYSLOG = re.compile(r"^(?P<mon>[A-Z][a-z]{2}) +(?P<day>\d{1,2}) (?P<hms>\d\d:\d\d:\d\d(?:\.\d+)?) (?P<host>\S+) ")
_ISO = re.compile(r"^(?P<iso>\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?) (?P<host>\S+) ")
_DMESG_T = re.compile(r"^\[(?:[A-Z][a-z]{2} )?(?P<mon>[A-Z][a-z]{2}) +(?P<day>\d{1,2}) (?P<hms>\d\d:\d\d:\d\d)"
                      r"(?:[.,]\d+)? (?P<year>\d{4})\]")
_DMESG_RAW = re.compile(r"^\[\s*\d+\.\d+\]")
_XID = re.compile(r"NVRM: Xid \((?:PCI:)?(?P<pci>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?)\): "
                  r"(?P<xid>\d+)\b(?:, (?P<rest>.*))?")


@dataclass
class XidTable:
    """The XID mapping in use: built-in :data:`XID_TABLE` with the user's entries over it."""

    entries: dict[int, tuple[str | None, str, str]] = field(default_factory=lambda: dict(XID_TABLE))
    source: str = "built-in (NVIDIA XID catalogue, nverror.h)"


def load_table(path: str | os.PathLike[str] | None) -> XidTable:
    """The built-in table, overridden by a YAML mapping ``XID: {part: NAME or null, category: ...,
    meaning: TEXT}`` from ``path``."""
    table = XidTable()
    if path is None:
        return table
    from twin.scenario.loader import safe_load_text

    with open_text(path) as fh:
        doc = safe_load_text(fh.read(), str(path))
    if not isinstance(doc, dict):
        raise InputError(str(path), "", "expected a mapping XID: {part: ..., category: ...}")
    for key, val in doc.items():
        try:
            xid = int(key)
        except (TypeError, ValueError):
            raise InputError(str(path), str(key), "is not an XID number") from None
        if not isinstance(val, dict) or "category" not in val:
            raise InputError(str(path), str(key), "expected {part: NAME or null, category: "
                             f"{'|'.join(CATEGORIES)}, meaning: TEXT}}")
        unknown = sorted(set(val) - {"part", "category", "meaning"})
        if unknown:
            raise InputError(str(path), f"{key}.{unknown[0]}", "unknown key; allowed: part, category, meaning")
        cat = val["category"]
        if cat not in CATEGORIES:
            raise InputError(str(path), f"{key}.category", f"{cat!r}; allowed: {', '.join(CATEGORIES)}")
        part = val.get("part")
        if part is not None and not (isinstance(part, str) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", part)):
            raise InputError(str(path), f"{key}.part", f"{part!r} is not a part name")
        if cat == "failure" and part is None:
            raise InputError(str(path), f"{key}.part", "a failure needs the part that failed")
        table.entries[xid] = (part, cat, str(val.get("meaning", table.entries.get(xid, ("", "", ""))[2])))
    table.source = f"built-in, overridden by {path}"
    return table


@dataclass
class XidLog:
    """XID events of one or more kernel logs."""

    events: pd.DataFrame
    """After storm collapse: ``time_s`` (POSIX), ``host``, ``pci``, ``xid``, ``part`` (or None),
    ``category``, ``source``, ``line``."""
    lines_by_xid: Counter[int] = field(default_factory=Counter)
    """XID lines read, before collapsing storms."""
    storm_lines: int = 0
    """Lines folded into an earlier event of their storm."""
    unknown: Counter[int] = field(default_factory=Counter)
    """Events of XIDs not in the table (reported, not used)."""
    first_s: float = math.nan
    last_s: float = math.nan
    """The first and last time stamp of any line (the logs' window)."""
    lines: int = 0
    hosts: set[str] = field(default_factory=set)


class _Clock:
    """Time stamps of one file's lines: syslog years from ``--year`` with roll-over."""

    def __init__(self, source: str, year: int | None, tz: tzinfo) -> None:
        self.source, self.year, self.tz = source, year, tz
        self.last_month = 0

    def syslog(self, n: int, mon: str, day: str, hms: str) -> float:
        if self.year is None:
            raise InputError(self.source, f"line {n}", "syslog lines carry no year: give --year (the year of the "
                             "file's first line)")
        month = _MONTHS.get(mon)
        if month is None:
            raise InputError(self.source, f"line {n}, field time", f"{mon!r} is not a month")
        if month < self.last_month:
            self.year += 1
        self.last_month = month
        return self._at(n, self.year, month, day, hms)

    def _at(self, n: int, year: int, month: int, day: str, hms: str) -> float:
        try:
            h, mi, s = hms.split(":")
            sec = float(s)
            d = datetime(year, month, int(day), int(h), int(mi), int(sec), tzinfo=self.tz)
        except ValueError as exc:
            raise InputError(self.source, f"line {n}, field time", f"not a time ({exc})") from None
        return d.timestamp() + (sec - int(sec))

    def dmesg(self, n: int, mon: str, day: str, hms: str, year: str) -> float:
        month = _MONTHS.get(mon)
        if month is None:
            raise InputError(self.source, f"line {n}, field time", f"{mon!r} is not a month")
        return self._at(n, int(year), month, day, hms)


_PRI = re.compile(r"^<\d{1,3}>(?:1 )?")
"""An RFC 3164/5424 priority (and version) in front of the time stamp, as a network syslog sends it."""


def _stamp(clock: _Clock, n: int, text: str, file_host: str) -> tuple[float, str] | None:
    """(POSIX seconds, host) of a line's prefix, or None when the prefix is not one we know."""
    if text.startswith("<"):
        text = _PRI.sub("", text, count=1)
    m = _SYSLOG.match(text)
    if m:
        return clock.syslog(n, m["mon"], m["day"], m["hms"]), m["host"]
    m = _ISO.match(text)
    if m:
        try:
            return parse_iso(m["iso"].replace(" ", "T", 1), clock.tz), m["host"]
        except ValueError:
            raise InputError(clock.source, f"line {n}, field time", f"{m['iso']!r} is not a time") from None
    m = _DMESG_T.match(text)
    if m:
        return clock.dmesg(n, m["mon"], m["day"], m["hms"], m["year"]), file_host
    return None


def read_xids(paths: list[str | os.PathLike[str]], tz: tzinfo, year: int | None = None, table: XidTable | None = None,
              storm_window_s: float = DEFAULT_STORM_WINDOW_S) -> XidLog:
    """Read kernel logs (see the module doc), streamed; keeps only the collapsed events."""
    table = table or XidTable()
    cols: dict[str, list[Any]] = {k: [] for k in ("time_s", "host", "pci", "xid", "part", "category", "source",
                                                  "line")}
    out = XidLog(events=pd.DataFrame())
    first, last = math.inf, -math.inf
    for path in paths:
        source = str(path)
        file_host = Path(source).name.split(".", 1)[0]
        clock = _Clock(source, year, tz)
        last_seen: dict[tuple[str, str, int], float] = {}
        last_text: tuple[int, str] | None = None
        dated = False
        n = 0
        for n, text in lines(path):
            if not text:
                continue
            if "NVRM: Xid" not in text:
                if not dated:
                    st = _stamp(clock, n, text, file_host)
                    if st is not None:
                        first, dated = min(first, st[0]), True
                last_text = (n, text)
                continue
            last_text = None
            st = _stamp(clock, n, text, file_host)
            if st is None:
                if _DMESG_RAW.match(text):
                    raise InputError(source, f"line {n}, field time", "seconds since boot (dmesg without -T) cannot "
                                     "be placed in time: use dmesg -T, journalctl -k or the syslog file")
                raise InputError(source, f"line {n}, field prefix", "not a syslog (Mon DD hh:mm:ss HOST), ISO "
                                 "(YYYY-MM-DDThh:mm:ss HOST) or dmesg -T ([Day Mon DD hh:mm:ss YYYY]) line")
            t, host = st
            dated = True
            first, last = min(first, t), max(last, t)
            m = _XID.search(text)
            if m is None:
                raise InputError(source, f"line {n}, field Xid", "expected 'NVRM: Xid (PCI:DDDD:BB:DD): N, ...'")
            xid = int(m["xid"])
            pci = m["pci"].lower()
            out.lines_by_xid[xid] += 1
            out.hosts.add(host)
            key = (host, pci, xid)
            prev = last_seen.get(key)
            last_seen[key] = t
            if prev is not None and 0.0 <= t - prev <= storm_window_s:
                out.storm_lines += 1
                continue
            if xid not in table.entries:
                out.unknown[xid] += 1
                continue
            part, cat, _meaning = table.entries[xid]
            for k, v in zip(cols, (t, host, pci, xid, part, cat, source, n)):
                cols[k].append(v)
        out.lines += n
        if last_text is not None:
            st = _stamp(clock, last_text[0], last_text[1], file_host)
            if st is not None:
                last = max(last, st[0])
    out.first_s = first if math.isfinite(first) else math.nan
    out.last_s = last if math.isfinite(last) else math.nan
    out.events = pd.DataFrame({
        "time_s": np.asarray(cols["time_s"], dtype=float),
        "host": pd.Series(cols["host"], dtype=str),
        "pci": pd.Series(cols["pci"], dtype=str),
        "xid": np.asarray(cols["xid"], dtype=np.int64),
        "part": pd.Series(cols["part"], dtype=object),
        "category": pd.Series(cols["category"], dtype=str),
        "source": pd.Series(cols["source"], dtype=str),
        "line": np.asarray(cols["line"], dtype=np.int64),
    }).sort_values(["time_s", "host", "pci"], kind="stable").reset_index(drop=True)
    return out


def xid_line(t_s: float, host: str, pci: str, xid: int, text: str, style: str = "syslog", pid: int = 0) -> str:
    """One kernel-log line for an XID (the synthetic writer and the tests): ``style`` ``syslog``
    (``Jan 15 10:23:45 HOST kernel: NVRM: ...``, UTC), ``iso`` or ``dmesg`` (``dmesg -T``)."""
    d = datetime.fromtimestamp(t_s, timezone.utc)
    body = f"NVRM: Xid (PCI:{pci}): {xid}, pid={pid}, name=python, {text}"
    if style == "iso":
        return f"{d.strftime('%Y-%m-%dT%H:%M:%S.%f')}+00:00 {host} kernel: {body}"
    if style == "dmesg":
        return f"[{d.strftime('%a %b')} {d.day:2d} {d.strftime('%H:%M:%S %Y')}] {body}"
    return f"{d.strftime('%b')} {d.day:2d} {d.strftime('%H:%M:%S')} {host} kernel: [{t_s % 1e6:13.6f}] {body}"


def pci_index(events: pd.DataFrame) -> dict[tuple[str, str], int]:
    """A GPU number per (host, PCI address) seen: the address's rank among the host's addresses."""
    out: dict[tuple[str, str], int] = {}
    for host, grp in events.groupby("host", sort=True):
        for i, pci in enumerate(sorted(set(grp["pci"]))):
            out[(str(host), pci)] = i
    return out
