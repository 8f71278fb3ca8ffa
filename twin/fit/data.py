"""Field data for ``twin fit``: component lifetimes and event logs.

Two CSV formats are accepted (UTF-8, header row, ``#`` comment lines and blank lines are
skipped and not counted; extra columns are ignored):

``lifetimes``
    ``part, component_id, start_h, end_h, failed[, category]`` — one row per component life.
    ``start_h`` is the install / observation start and ``end_h`` the failure time (``failed``
    = 1) or the end of observation (``failed`` = 0, right-censored), both in hours from a
    common origin.

``events``
    ``part, component_id, time_h, event`` with ``event`` in ``install | fail | replace``.
    Lives are derived per (part, component_id), see :func:`lifetimes_from_events`.

Every error is an :class:`~twin.errors.InputError` naming the file, the 1-based data row
and the column.
"""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from twin.errors import InputError
from twin import atomic

LIFETIME_COLUMNS: tuple[str, ...] = ("part", "component_id", "start_h", "end_h", "failed")
LIFETIME_OPTIONAL: tuple[str, ...] = ("category",)
EVENT_COLUMNS: tuple[str, ...] = ("part", "component_id", "time_h", "event")
EVENT_NAMES: tuple[str, ...] = ("install", "fail", "replace")

MAX_TIME_H = 1e7
"""Largest time a field-data CSV may hold, hours (~1,140 years: beyond any observation of hardware;
a value like 1e300 is a unit or export error, and the fits overflow on it)."""
MIN_LIFETIME_H = 1e-6
"""Shortest failed life, hours (3.6 ms: below the resolution of any failure log; 1e-300 is an
export error, and the fits overflow on it)."""

_TRUE = {"1", "1.0", "true", "yes", "y", "t"}
_FALSE = {"0", "0.0", "false", "no", "n", "f"}


@dataclass(frozen=True)
class Lifetime:
    """One component life: installed at ``start_h``, failed or censored at ``end_h``."""

    part: str
    component_id: str
    start_h: float
    end_h: float
    failed: bool
    category: str | None = None
    row: int | None = None  # data row it came from (for event logs: the closing event)

    @property
    def duration_h(self) -> float:
        return self.end_h - self.start_h


def _where(row: int, column: str) -> str:
    return f"row {row}, column {column}"


def _records(path: Path, required: Sequence[str]) -> Iterator[tuple[int, dict[str, str]]]:
    """Yield ``(data_row, {column: value})`` with header checked and values stripped."""
    source = str(path)
    if not path.exists():
        raise InputError(source, "", "file not found")
    if not path.is_file():
        raise InputError(source, "", "not a regular file")
    try:
        fh = path.open(newline="", encoding="utf-8-sig")
    except OSError as exc:  # permission problems and the like are the user's to fix
        raise InputError(source, "", f"cannot open: {exc.strerror or exc}") from exc
    with fh:
        lines = (line for line in fh if not line.lstrip().startswith("#"))
        reader = csv.reader(lines)
        try:
            header = next(reader)
            while not any(cell.strip() for cell in header):
                header = next(reader)
        except StopIteration:
            raise InputError(source, "header", "empty file; expected a header row with columns "
                             + ", ".join(required)) from None
        except csv.Error as exc:
            raise InputError(source, "header", f"malformed CSV: {exc}") from None
        except UnicodeDecodeError as exc:
            raise InputError(source, "", f"not UTF-8 text ({exc.reason})") from None
        names = [h.strip().lower() for h in header]
        dupes = sorted({n for n in names if names.count(n) > 1 and n})
        if dupes:
            raise InputError(source, "header", f"duplicate column(s) {', '.join(dupes)}")
        missing = [c for c in required if c not in names]
        if missing:
            raise InputError(
                source, "header",
                f"missing column(s) {', '.join(missing)}; found {', '.join(n for n in names if n) or 'none'}; "
                f"expected {', '.join(required)}",
            )
        data_row = 0
        try:
            for cells in reader:
                if not any(cell.strip() for cell in cells):
                    continue
                data_row += 1
                if len(cells) > len(names) and any(c.strip() for c in cells[len(names):]):
                    raise InputError(source, f"row {data_row}",
                                     f"{len(cells)} fields but the header has {len(names)} columns")
                values = {n: (cells[i].strip() if i < len(cells) else "") for i, n in enumerate(names) if n}
                yield data_row, values
        except csv.Error as exc:
            raise InputError(source, f"row {data_row + 1}", f"malformed CSV: {exc}") from None
        except UnicodeDecodeError as exc:
            raise InputError(source, f"row {data_row + 1}", f"not UTF-8 text ({exc.reason})") from None
        if data_row == 0:
            raise InputError(source, "", "no data rows after the header")


def _text(source: str, row: int, values: dict[str, str], column: str) -> str:
    value = values.get(column, "")
    if value == "":
        raise InputError(source, _where(row, column), "empty value")
    return value


def _hours(source: str, row: int, values: dict[str, str], column: str) -> float:
    raw = _text(source, row, values, column)
    try:
        value = float(raw)
    except ValueError:
        raise InputError(source, _where(row, column), f"{raw!r} is not a number (hours)") from None
    if not math.isfinite(value):
        raise InputError(source, _where(row, column), f"{raw!r} is not a finite number (hours)")
    if value < 0:
        raise InputError(source, _where(row, column), f"negative time {raw}; times are hours >= 0")
    if value > MAX_TIME_H:
        raise InputError(source, _where(row, column), f"{raw} hours is beyond the largest time allowed, "
                                                      f"{MAX_TIME_H:.0e} h (~1,140 years); times are hours")
    return value


def _check_life(source: str, row: int, column: str, start: float, end: float, label: str = "") -> None:
    """A failed life must last at least :data:`MIN_LIFETIME_H`."""
    if 0 < end - start < MIN_LIFETIME_H:
        raise InputError(source, _where(row, column), f"{label}fails {end - start:.3g} h after its install, below the "
                                                      f"shortest lifetime allowed, {MIN_LIFETIME_H:g} h (3.6 ms); "
                                                      "times are hours")


def _flag(source: str, row: int, values: dict[str, str], column: str) -> bool:
    raw = _text(source, row, values, column)
    low = raw.lower()
    if low in _TRUE:
        return True
    if low in _FALSE:
        return False
    raise InputError(source, _where(row, column),
                     f"{raw!r} is not 0 or 1 (1 = failure, 0 = right-censored)")


def _part(source: str, row: int, values: dict[str, str], parts: Sequence[str] | None) -> str:
    from twin.scenario.base import PART_NAME_RULE, valid_part_name

    part = _text(source, row, values, "part")
    if not valid_part_name(part):  # the fitted part goes into a scenario: the schema's rule
        raise InputError(source, _where(row, "part"), f"{part!r} is not a part name of a scenario: {PART_NAME_RULE}")
    if parts is not None and part not in parts:
        raise InputError(source, _where(row, "part"),
                         f"unknown part type {part!r}; --parts allows {', '.join(parts)}")
    return part


def parse_parts(text: str | None) -> list[str] | None:
    """Parse ``--parts gpu,psu`` into a list (None when not given)."""
    if text is None:
        return None
    from twin.scenario.base import PART_NAME_RULE, valid_part_name

    parts = [p.strip() for p in text.split(",")]
    if not parts or any(p == "" for p in parts):
        raise InputError("--parts", "", f"{text!r}: expected a comma-separated list of part types, e.g. gpu,psu")
    bad = [p for p in parts if not valid_part_name(p)]
    if bad:
        raise InputError("--parts", "", f"{', '.join(map(repr, bad))}: not a part name of a scenario: {PART_NAME_RULE}")
    dupes = sorted({p for p in parts if parts.count(p) > 1})
    if dupes:
        raise InputError("--parts", "", f"duplicate part type(s) {', '.join(dupes)}")
    return parts


def read_lifetimes_csv(path: str | os.PathLike[str], parts: Sequence[str] | None = None) -> list[Lifetime]:
    """Read a lifetimes CSV. ``parts`` (if given) is the allowed set of part types."""
    p = Path(path)
    source = str(path)
    out: list[Lifetime] = []
    for row, values in _records(p, LIFETIME_COLUMNS):
        part = _part(source, row, values, parts)
        component_id = _text(source, row, values, "component_id")
        start = _hours(source, row, values, "start_h")
        end = _hours(source, row, values, "end_h")
        failed = _flag(source, row, values, "failed")
        if end < start:
            what = "failure before install" if failed else "end of observation before its start"
            raise InputError(source, _where(row, "end_h"), f"{what}: end_h {end:g} < start_h {start:g}")
        if failed and end == start:
            raise InputError(source, _where(row, "end_h"),
                             f"failure at the install time (end_h = start_h = {end:g}); lifetimes must be > 0")
        if failed:
            _check_life(source, row, "end_h", start, end)
        category = values.get("category") or None
        out.append(Lifetime(part, component_id, start, end, failed, category, row))
    _check_parts_present(source, out, parts)
    return out


def _check_parts_present(source: str, lives: Sequence[Lifetime], parts: Sequence[str] | None) -> None:
    if parts is None:
        return
    seen = {life.part for life in lives}
    absent = [p for p in parts if p not in seen]
    if absent:
        raise InputError("--parts", "", f"part type(s) {', '.join(absent)} do not occur in {source}")


@dataclass(frozen=True)
class Event:
    part: str
    component_id: str
    time_h: float
    event: str
    row: int


def read_event_log_csv(
    path: str | os.PathLike[str],
    parts: Sequence[str] | None = None,
    observation_end_h: float | None = None,
) -> list[Lifetime]:
    """Read an event-log CSV and derive lifetimes (see :func:`lifetimes_from_events`)."""
    p = Path(path)
    source = str(path)
    events: list[Event] = []
    for row, values in _records(p, EVENT_COLUMNS):
        part = _part(source, row, values, parts)
        component_id = _text(source, row, values, "component_id")
        time_h = _hours(source, row, values, "time_h")
        name = _text(source, row, values, "event").lower()
        if name not in EVENT_NAMES:
            raise InputError(source, _where(row, "event"),
                             f"unknown event {values['event']!r}; expected one of {', '.join(EVENT_NAMES)}")
        events.append(Event(part, component_id, time_h, name, row))
    lives = lifetimes_from_events(events, source=source, observation_end_h=observation_end_h)
    _check_parts_present(source, lives, parts)
    return lives


def lifetimes_from_events(
    events: Iterable[Event],
    source: str = "<events>",
    observation_end_h: float | None = None,
) -> list[Lifetime]:
    """Derive component lives from an event log (events in file order).

    Per (part, component_id), times must be non-decreasing in file order. Rules:

    * ``install`` opens a life. Installing a component that is already installed (and has
      not failed) is an error: use ``replace`` for a swap.
    * ``fail`` closes the open life as a failure and — the replacement being assumed
      immediate — opens a new life at the same time. A ``fail`` with no earlier event for
      the component is an error (its install time is unknown).
    * ``replace`` right after a ``fail`` (or an ``install`` right after a ``fail``) moves the
      start of the new life to the replacement time. Otherwise ``replace`` closes the open
      life as censored (preventive removal) and opens a new one; on a component with no
      earlier events it acts as ``install``.
    * The last open life is right-censored at ``observation_end_h`` (default: the latest
      ``time_h`` in the log). Zero-length censored lives carry no information and are
      dropped.
    """
    events = list(events)
    if not events:
        raise InputError(source, "", "no events")
    last_time = max(e.time_h for e in events)
    if observation_end_h is None:
        end_of_log = last_time
    else:
        end_of_log = float(observation_end_h)
        if not math.isfinite(end_of_log) or end_of_log < 0:
            raise InputError("--observation-end-h", "", f"{observation_end_h!r} must be a finite number of hours >= 0")
        if end_of_log < last_time:
            late = max(events, key=lambda e: e.time_h)
            raise InputError("--observation-end-h", "",
                             f"{end_of_log:g} is before the event at {source} row {late.row} (time_h {late.time_h:g})")

    # state per component: (start_h, provisional, last_time, last_row)
    state: dict[tuple[str, str], tuple[float | None, bool, float, int]] = {}
    lives: list[Lifetime] = []
    for e in events:
        key = (e.part, e.component_id)
        label = f"{e.part}/{e.component_id}"
        if key in state:
            start, provisional, prev_time, prev_row = state[key]
            if e.time_h < prev_time:
                raise InputError(source, _where(e.row, "time_h"),
                                 f"event log not monotonic for {label}: time_h {e.time_h:g} is before "
                                 f"{prev_time:g} at row {prev_row}")
        else:
            start, provisional = None, False
        if e.event == "install":
            if start is not None and not provisional:
                raise InputError(source, _where(e.row, "event"),
                                 f"install of {label} which is already installed since time_h {start:g}; "
                                 "use 'replace' for a swap")
            start, provisional = e.time_h, False
        elif e.event == "fail":
            if start is None:
                raise InputError(source, _where(e.row, "event"),
                                 f"fail of {label} before any install (its install time is unknown)")
            if e.time_h == start:
                raise InputError(source, _where(e.row, "time_h"),
                                 f"{label} fails at its install time {start:g}; lifetimes must be > 0")
            _check_life(source, e.row, "time_h", start, e.time_h, f"{label} ")
            lives.append(Lifetime(e.part, e.component_id, start, e.time_h, True, None, e.row))
            start, provisional = e.time_h, True
        else:  # replace
            if start is not None and not provisional and e.time_h > start:
                lives.append(Lifetime(e.part, e.component_id, start, e.time_h, False, None, e.row))
            start, provisional = e.time_h, False
        state[key] = (start, provisional, e.time_h, e.row)

    for (part, component_id), (start, _prov, _t, row) in state.items():
        if start is not None and end_of_log > start:
            lives.append(Lifetime(part, component_id, start, end_of_log, False, None, row))
    return lives


def by_part(lives: Iterable[Lifetime]) -> dict[str, list[Lifetime]]:
    """Group lives by part type, in order of first appearance."""
    out: dict[str, list[Lifetime]] = {}
    for life in lives:
        out.setdefault(life.part, []).append(life)
    return out


def format_hours(value: float) -> str:
    """Compact decimal text for an hour value in CSV output."""
    return f"{value:.6f}".rstrip("0").rstrip(".") if value != int(value) else str(int(value))


def lifetimes_csv_text(lives: Iterable[Lifetime], header_comment: str | None = None) -> str:
    """Render lives in the ``lifetimes`` CSV format (with a ``category`` column)."""
    import io

    buf = io.StringIO()
    if header_comment:
        for line in header_comment.splitlines():
            buf.write(f"# {line}\n")
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([*LIFETIME_COLUMNS, *LIFETIME_OPTIONAL])
    for life in lives:
        writer.writerow([life.part, life.component_id, format_hours(life.start_h), format_hours(life.end_h),
                         1 if life.failed else 0, life.category or ""])
    return buf.getvalue()


def write_lifetimes_csv(path: str | os.PathLike[str], lives: Iterable[Lifetime],
                        header_comment: str | None = None) -> None:
    """Atomically write lives in the ``lifetimes`` CSV format."""
    atomic.atomic_write_text(path, lifetimes_csv_text(lives, header_comment))
