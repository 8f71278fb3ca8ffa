"""What the log readers share: opening (plain or gzip) text files, time zones and time stamps.

Times are kept as POSIX seconds (float, UTC); a time stamp without an offset is read in the time
zone given by ``--tz`` (an IANA name such as ``Europe/Berlin``; default UTC).
"""

from __future__ import annotations

import gzip
import io
import os
from collections.abc import Iterator
from datetime import datetime, timezone, tzinfo
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from twin.errors import InputError


def zone(name: str | None) -> tzinfo:
    """The time zone named ``name`` (IANA, e.g. ``America/Chicago``; ``UTC`` or None: UTC)."""
    if name is None or name.upper() in ("UTC", "Z"):
        return timezone.utc
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise InputError("--tz", name, "is not a time zone name (an IANA name such as UTC, Europe/Berlin, "
                         "America/Chicago)") from None


def open_text(path: str | os.PathLike[str]) -> io.TextIOBase:
    """A text stream of ``path`` (``.gz`` decompressed on the fly), UTF-8 with undecodable bytes
    replaced (kernel logs carry odd bytes), or an InputError naming the file."""
    p = Path(path)
    if not p.exists():
        raise InputError(str(path), "", "file not found")
    if not p.is_file():
        raise InputError(str(path), "", "not a regular file")
    try:
        if p.suffix == ".gz":
            return io.TextIOWrapper(gzip.open(p, "rb"), encoding="utf-8", errors="replace", newline="")
        return open(p, encoding="utf-8-sig", errors="replace", newline="")
    except OSError as exc:
        raise InputError(str(path), "", f"cannot open: {exc.strerror or exc}") from None


def lines(path: str | os.PathLike[str]) -> Iterator[tuple[int, str]]:
    """``(line_number, text without the line end)`` of every line, 1-based, streamed."""
    with open_text(path) as fh:
        try:
            for n, raw in enumerate(fh, 1):
                yield n, raw.rstrip("\r\n")
        except (OSError, EOFError) as exc:  # a truncated .gz
            raise InputError(str(path), "", f"cannot read: {exc}") from None


def parse_iso(text: str, tz: tzinfo) -> float:
    """POSIX seconds of an ISO 8601 time stamp (``2024-01-15T10:23:45``, with or without an offset
    or fraction); a stamp without an offset is in ``tz``. Raises ValueError."""
    t = text.strip()
    if t.endswith("Z"):
        t = t[:-1] + "+00:00"
    d = datetime.fromisoformat(t)
    if d.tzinfo is None:
        d = d.replace(tzinfo=tz)
    return d.timestamp()


def iso_utc(seconds: float) -> str:
    """``2024-01-15T10:23:45Z`` for POSIX seconds (for reports)."""
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def sniff(path: str | os.PathLike[str]) -> str:
    """The format of a log by its first non-blank line: ``sacct`` (a ``JobID|...`` header),
    ``tickets`` (a CSV header: a comma and no ``|``) or ``kernel`` (anything else: kernel-log lines)."""
    for _n, text in lines(path):
        s = text.strip()
        if not s or s.startswith("#"):
            continue
        if s.split("|", 1)[0].strip().lower() == "jobid":
            return "sacct"
        if "," in s and "|" not in s and "NVRM" not in s and ":" not in s.split(",", 1)[0]:
            return "tickets"
        return "kernel"
    raise InputError(str(path), "", "empty file")
