"""Repair tickets / node events as CSV: one row per node outage, with a header row whose column
names are given by options (``--ticket-column KEY=NAME``; the default name of each key is the key)::

    node,start,end,cause,part,work_start
    gpu017,2024-03-02T04:11:00,2024-03-02T09:40:00,hardware,gpu,2024-03-02T06:05:00
    gpu033,2024-03-05T22:00:00,,hardware,host,

``node`` (a host name), ``start`` (the outage began) and ``end`` (the repair ended; empty: still open,
censored at the end of the observation) are required; ``cause`` (a category such as ``hardware``,
``software``, ``maintenance``), ``part`` (the part type replaced), ``work_start`` and ``work_end``
(hands-on work began and ended; then ``work_end - work_start``, or ``end - work_start`` without a
work end, is the repair time proper) are read when their columns exist. Times
are ISO 8601, in ``--tz`` without an offset. ``#`` lines and blank lines are skipped.
"""

from __future__ import annotations

import csv
import math
import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import tzinfo
from typing import Any

import numpy as np
import pandas as pd

from twin.calibrate.common import open_text, parse_iso
from twin.errors import InputError

KEYS = ("node", "start", "end", "cause", "part", "work_start", "work_end")
REQUIRED = ("node", "start", "end")


@dataclass
class TicketLog:
    """Tickets of one file."""

    source: str
    tickets: pd.DataFrame
    """``node``, ``start_s``, ``end_s`` (NaN: open), ``work_start_s``, ``work_end_s`` (NaN: not given), ``cause``,
    ``part``
    (empty: not given), ``line``."""
    causes: Counter[str] = field(default_factory=Counter)

    @property
    def first_s(self) -> float:
        return float(self.tickets["start_s"].min()) if len(self.tickets) else math.nan

    @property
    def last_s(self) -> float:
        t = self.tickets
        if not len(t):
            return math.nan
        return float(np.nanmax(np.r_[t["start_s"].to_numpy(), t["end_s"].to_numpy()]))


def parse_columns(specs: list[str] | None) -> dict[str, str]:
    """``KEY=NAME`` options → {key: column name}; unset keys keep their own name."""
    out = {k: k for k in KEYS}
    for spec in specs or []:
        key, sep, name = spec.partition("=")
        if not sep or not name.strip():
            raise InputError("--ticket-column", spec, "expected KEY=NAME, e.g. node=hostname")
        if key.strip() not in KEYS:
            raise InputError("--ticket-column", spec, f"unknown key {key.strip()!r}; keys: {', '.join(KEYS)}")
        out[key.strip()] = name.strip()
    return out


def read_tickets(path: str | os.PathLike[str], tz: tzinfo, columns: dict[str, str] | None = None) -> TicketLog:
    """Read a ticket CSV (see the module doc), streamed row by row."""
    source = str(path)
    names = columns or {k: k for k in KEYS}
    cols: dict[str, list[Any]] = {k: [] for k in ("node", "start_s", "end_s", "work_start_s", "work_end_s", "cause",
                                                  "part", "line")}
    log = TicketLog(source=source, tickets=pd.DataFrame())
    with open_text(path) as fh:
        numbered = ((n, line) for n, line in enumerate(fh, 1) if line.strip() and not line.lstrip().startswith("#"))
        header_line: int | None = None
        idx: dict[str, int] = {}
        line_no = 0

        def rows() -> Iterator[str]:
            nonlocal line_no
            for n, line in numbered:
                line_no = n
                yield line

        reader = csv.reader(rows())
        try:
            for cells in reader:
                n = line_no
                if header_line is None:
                    header_line = n
                    head = [c.strip() for c in cells]
                    missing = [f"{k} (column {names[k]!r})" for k in REQUIRED if names[k] not in head]
                    if missing:
                        raise InputError(source, f"line {n}, header", f"missing {', '.join(missing)}; found "
                                         f"{', '.join(head) or 'nothing'} (name columns with --ticket-column KEY=NAME)")
                    idx = {k: head.index(names[k]) for k in KEYS if names[k] in head}
                    continue
                if len(cells) < len(idx) or max(idx.values()) >= len(cells):
                    raise InputError(source, f"line {n}", f"{len(cells)} fields, fewer than the header's")
                node = cells[idx["node"]].strip()
                if not node:
                    raise InputError(source, f"line {n}, field {names['node']}", "empty node name")
                vals = {}
                for k in ("start", "end", "work_start", "work_end"):
                    text = cells[idx[k]].strip() if k in idx else ""
                    if text == "":
                        if k == "start":
                            raise InputError(source, f"line {n}, field {names[k]}", "empty; the outage's start "
                                             "is required")
                        vals[k] = math.nan
                        continue
                    try:
                        vals[k] = parse_iso(text, tz)
                    except ValueError:
                        raise InputError(source, f"line {n}, field {names[k]}",
                                         f"{text!r} is not an ISO 8601 time (YYYY-MM-DDThh:mm:ss)") from None
                if not math.isnan(vals["end"]) and vals["end"] < vals["start"]:
                    raise InputError(source, f"line {n}, field {names['end']}", "before the start")
                for k in ("work_start", "work_end"):
                    w = vals[k]
                    if not math.isnan(w) and (w < vals["start"] or (not math.isnan(vals["end"]) and w > vals["end"])):
                        raise InputError(source, f"line {n}, field {names[k]}", "outside start..end")
                ws, we = vals["work_start"], vals["work_end"]
                if not math.isnan(we) and (math.isnan(ws) or we < ws):
                    raise InputError(source, f"line {n}, field {names['work_end']}", "without a work start or "
                                     "before it")
                cause = cells[idx["cause"]].strip() if "cause" in idx else ""
                part = cells[idx["part"]].strip() if "part" in idx else ""
                for k, v in zip(cols, (node, vals["start"], vals["end"], ws, we, cause, part, n)):
                    cols[k].append(v)
                log.causes[cause or "(none)"] += 1
        except csv.Error as exc:
            raise InputError(source, f"line {line_no}", f"malformed CSV: {exc}") from None
    if header_line is None:
        raise InputError(source, "", "empty file; expected a header row with columns "
                         + ", ".join(names[k] for k in REQUIRED))
    log.tickets = pd.DataFrame({
        "node": pd.Series(cols["node"], dtype=str),
        "start_s": np.asarray(cols["start_s"], dtype=float),
        "end_s": np.asarray(cols["end_s"], dtype=float),
        "work_start_s": np.asarray(cols["work_start_s"], dtype=float),
        "work_end_s": np.asarray(cols["work_end_s"], dtype=float),
        "cause": pd.Series(cols["cause"], dtype=str),
        "part": pd.Series(cols["part"], dtype=str),
        "line": np.asarray(cols["line"], dtype=np.int64),
    })
    return log
