"""Job traces: a CSV of jobs read in chunks into columns (no object per row).

A trace has the columns ``submit_h, gpus, duration_h`` (ideal work hours) and optionally ``name``,
``priority`` and ``pool`` (the node pool of the row's job, as ``workload.jobs.<i>.pool``; empty: the
trace's). :func:`read_trace` reads it ``CHUNK_ROWS`` rows at a time with pandas, checks every
row (errors name the file and the 1-based data row) and keeps the rows as numpy columns: about 33
bytes a row (plus the names when the file has them), so a million-row trace holds ~33 MB, not the
gigabytes of one Python object per row. The workload creates each job only when it is submitted
(:class:`twin.model.workload.Workload`), in submission order (``TraceRows.order``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from twin.errors import InputError

TRACE_COLUMNS = ("submit_h", "gpus", "duration_h")
"""Required columns."""
CHUNK_ROWS = 100_000
"""Rows read and checked at a time."""


@dataclass(frozen=True)
class TraceRows:
    """A checked trace as columns, rows in file order (row ``i`` is data row ``i + 1`` of the file)."""

    submit_h: np.ndarray
    """Submission times, hours (float64)."""
    gpus: np.ndarray
    """GPUs per job (int64)."""
    duration_h: np.ndarray
    """Ideal work per job, hours (float64)."""
    priority: np.ndarray
    """Priorities (int64; 0 where the file has none)."""
    names: np.ndarray | None
    """Job names (object), or None: then row ``i`` is named ``trace{i + 1:05d}``."""
    pool_codes: np.ndarray | None = None
    """Each row's node pool as an index into ``pool_names`` (int16; -1: the trace's ``pool``), or None: no
    ``pool`` column."""
    pool_names: tuple[str, ...] = ()
    """The pool names the ``pool`` column uses."""

    def pool(self, i: int, default: str | None) -> str | None:
        """Node pool of row ``i`` (0-based): its ``pool`` cell, else ``default`` (the trace's)."""
        if self.pool_codes is None or self.pool_codes[i] < 0:
            return default
        return self.pool_names[int(self.pool_codes[i])]

    def __len__(self) -> int:
        return len(self.submit_h)

    def name(self, i: int) -> str:
        """Name of row ``i`` (0-based): its ``name`` cell, else ``trace<1-based row>``."""
        if self.names is not None:
            v = self.names[i]
            if isinstance(v, str) and v:
                return v
        return f"trace{i + 1:05d}"

    def order(self) -> np.ndarray:
        """Row indices in submission order: by submit time, file order among equal times."""
        return np.argsort(self.submit_h, kind="stable")

    def rows(self) -> Iterator[tuple[str, int, float, float, int]]:
        """``(name, gpus, duration_h, submit_h, priority)`` per row in file order (tests, small traces)."""
        for i in range(len(self)):
            yield (self.name(i), int(self.gpus[i]), float(self.duration_h[i]), float(self.submit_h[i]),
                   int(self.priority[i]))


def _bad_row(src: str, first: int, mask: np.ndarray, field: str, what: str, values: pd.Series) -> None:
    if mask.any():
        k = int(np.flatnonzero(mask)[0])
        raise InputError(src, f"row {first + k}: {field}", f"{what}, got {values.iloc[k]}")


def _chunks(reader: Iterator[pd.DataFrame], src: str) -> Iterator[pd.DataFrame]:
    """The reader's chunks, a malformed line (more cells than the header) as an InputError."""
    try:
        yield from reader
    except pd.errors.ParserError as exc:
        raise InputError(src, "rows", f"not a CSV table: {_parser_message(exc)}") from None


def _parser_message(exc: Exception) -> str:
    """pandas' parser error in words: a quote never closed says so (pandas says "EOF inside string")."""
    text = str(exc).strip()
    if "EOF inside string" in text:
        return (f"a quoted cell is never closed ({text.split('C error: ')[-1]}); close the quote (\") or remove "
                "it: cells with commas are quoted, a quote inside a cell is doubled")
    return text


def read_trace(path: Path, gpus_per_node: int, schedulable_nodes: int, chunk_rows: int = CHUNK_ROWS,
               pools: dict[str, int] | None = None) -> TraceRows:
    """Read and check a job trace CSV in chunks of ``chunk_rows`` rows. Errors name the file and the
    1-based data row: a missing column, a cell that is not a number, a negative or infinite
    ``submit_h``, a ``duration_h`` not > 0, ``gpus`` < 1 or more GPUs than the schedulable nodes hold
    (those of the row's ``pool``: ``pools`` gives the nodes of each pool a cell may name; None: no pool
    may be named)."""
    src = str(path)
    from twin.scenario.files import file_problem

    problem = file_problem(path, "trace file")  # a FIFO or a device is said to be one, not "not found"
    if problem is not None:
        raise InputError(src, "workload.trace.file", problem)
    cols: dict[str, list[np.ndarray]] = {"submit_h": [], "gpus": [], "duration_h": [], "priority": [], "name": [],
                                         "pool": []}
    has_name = has_pool = False
    names = list(pools or {})
    try:  # the reader parses the header (and, with an unterminated quote, the whole file) at once
        reader = pd.read_csv(path, chunksize=chunk_rows, dtype=str, keep_default_na=False, encoding="utf-8")
    except pd.errors.EmptyDataError:
        raise InputError(src, "header", f"missing columns {list(TRACE_COLUMNS)}; required: {list(TRACE_COLUMNS)}") from None
    except pd.errors.ParserError as exc:
        raise InputError(src, "rows", f"not a CSV table: {_parser_message(exc)}") from None
    first = 1
    with reader:
        for chunk in _chunks(reader, src):
            if first == 1:
                missing = [c for c in TRACE_COLUMNS if c not in chunk.columns]
                if missing:
                    raise InputError(src, "header", f"missing columns {missing}; required: {list(TRACE_COLUMNS)}")
                has_name = "name" in chunk.columns
                has_pool = "pool" in chunk.columns
            n = len(chunk)
            sub_s, gpus_s, dur_s = chunk["submit_h"], chunk["gpus"], chunk["duration_h"]
            prio_s = chunk["priority"] if "priority" in chunk.columns else pd.Series([""] * n, index=chunk.index)
            sub = pd.to_numeric(sub_s.str.strip(), errors="coerce").to_numpy(float)
            dur = pd.to_numeric(dur_s.str.strip(), errors="coerce").to_numpy(float)
            gpus_f = pd.to_numeric(gpus_s.str.strip(), errors="coerce").to_numpy(float)
            prio_txt = prio_s.str.strip()
            prio_f = pd.to_numeric(prio_txt.where(prio_txt != "", "0"), errors="coerce").to_numpy(float)
            # not a number: unparsable, or an integer column holding a fraction (int() refused "1.5")
            bad = (np.isnan(sub) & ~sub_s.str.strip().str.lower().isin(["nan", "+nan", "-nan"]).to_numpy())
            bad |= np.isnan(dur) & ~dur_s.str.strip().str.lower().isin(["nan", "+nan", "-nan"]).to_numpy()
            bad |= ~np.isfinite(gpus_f) | (gpus_f != np.round(gpus_f)) | ~gpus_s.str.strip().str.fullmatch(r"[+-]?\d+").fillna(False).to_numpy(bool)
            bad |= ~np.isfinite(prio_f) | ~prio_txt.where(prio_txt != "", "0").str.fullmatch(r"[+-]?\d+").fillna(False).to_numpy(bool)
            if bad.any():
                k = int(np.flatnonzero(bad)[0])
                raise InputError(src, f"row {first + k}", f"not a number in {chunk.iloc[k].to_dict()}")
            _bad_row(src, first, ~(np.isfinite(sub) & (sub >= 0)), "submit_h", "must be a finite time >= 0", sub_s)
            _bad_row(src, first, ~(np.isfinite(dur) & (dur > 0)), "duration_h", "must be > 0", dur_s)
            gpus = gpus_f.astype(np.int64)
            _bad_row(src, first, gpus < 1, "gpus", "must be >= 1", gpus_s)
            need = -(-gpus // gpus_per_node)
            room = np.full(n, schedulable_nodes)
            if has_pool:
                cells = chunk["pool"].str.strip()
                unknown = (cells != "") & ~cells.isin(names)
                _bad_row(src, first, unknown.to_numpy(bool), "pool",
                         f"no node pool or node type of this hall; allowed: {names} or empty (the trace's)", cells)
                code = cells.map({p: k for k, p in enumerate(names)}).fillna(-1).to_numpy(np.int16)
                if pools:  # a row naming a pool: that pool's nodes (an empty cell: the trace's)
                    room = np.where(code >= 0, np.array([pools[p] for p in names])[np.maximum(code, 0)], room)
                cols["pool"].append(code)
            if (need > room).any():
                k = int(np.flatnonzero(need > room)[0])
                raise InputError(src, f"row {first + k}: gpus", f"{gpus[k]} GPUs need more than the "
                                                                f"{room[k]} schedulable nodes"
                                                                + (" of its pool" if room[k] < schedulable_nodes else ""))
            cols["submit_h"].append(sub)
            cols["duration_h"].append(dur)
            cols["gpus"].append(gpus)
            cols["priority"].append(prio_f.astype(np.int64))
            if has_name:
                cols["name"].append(chunk["name"].to_numpy(object))
            first += n
    if first == 1:  # a header and no rows: the columns are known only from the header line
        try:
            head = pd.read_csv(path, nrows=0, encoding="utf-8")
        except pd.errors.ParserError as exc:
            raise InputError(src, "header", f"not a CSV table: {_parser_message(exc)}") from None
        missing = [c for c in TRACE_COLUMNS if c not in head.columns]
        if missing:
            raise InputError(src, "header", f"missing columns {missing}; required: {list(TRACE_COLUMNS)}")

    def cat(name: str, dtype: type) -> np.ndarray:
        parts = cols[name]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)

    return TraceRows(cat("submit_h", float), cat("gpus", np.int64), cat("duration_h", float),
                     cat("priority", np.int64), cat("name", object) if has_name else None,
                     cat("pool", np.int16) if has_pool else None, tuple(names))


def trace_summary(rows: TraceRows, horizon_h: float, gpus_per_node: int) -> tuple[int, float, float]:
    """For the limits: rows submitted before ``horizon_h``, the sum of their work (hours) and of their
    work × nodes (node-hours)."""
    inside = rows.submit_h < horizon_h
    work = rows.duration_h[inside]
    nodes = -(-rows.gpus[inside] // gpus_per_node)
    return int(np.count_nonzero(inside)), float(work.sum()), float((work * nodes).sum())
