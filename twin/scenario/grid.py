"""Grid events (issue 48 item 3): utility outages and demand-response requests, from a rate or a file;
the section ``power.grid`` (``twin.model.grid``).

Written in a scenario as::

    power:
      grid:
        demand_response: {per_year: 12, duration: {dist: fixed, value_h: 2}, reduce_kw: 20}
        dr_price_per_kwh: 0.5
        file: grid_events.csv

The file (relative to the scenario) lists events, one a row, after the header ``kind,start_h,duration_h,kw``:
``outage`` (a site-wide utility outage: every feed, as ``power.inject`` does for one; ``kw`` empty) or
``demand_response`` (reduce site IT power by ``kw`` kW for ``duration_h`` from ``start_h``). Rows in any
order; blank lines skipped.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Annotated

from pydantic import Field, PrivateAttr

from twin.errors import InputError
from twin.scenario.base import Dist, Strict
from twin.scenario.distributions import Fixed

NonNeg = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Pos = Annotated[float, Field(gt=0, allow_inf_nan=False)]

GridEvent = tuple[str, float, float, float]
"""(kind, start_h, duration_h, kw): kind ``outage`` or ``demand_response``."""

HEADER = ["kind", "start_h", "duration_h", "kw"]
KINDS = ("outage", "demand_response")


def load_grid_csv(path: Path) -> list[GridEvent]:
    """Read a grid-event file (see the module docstring). Every error raises :class:`InputError` naming
    the file and its line."""
    from twin.scenario.files import require_file

    src = str(path)
    require_file(path, "grid event file", field="power.grid.file")
    with path.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh))
    lines = [(i, [c.strip() for c in r]) for i, r in enumerate(rows, start=1) if r and "".join(r).strip()]
    if not lines:
        raise InputError(src, "", "grid event file is empty; header kind,start_h,duration_h,kw expected")
    hrow, head = lines[0]
    if head != HEADER:
        raise InputError(f"{src}:{hrow}", "", f"header must be {','.join(HEADER)!r}, got {','.join(head)!r}")
    out: list[GridEvent] = []
    for i, r in lines[1:]:
        where = f"{src}:{i}"
        if len(r) != 4:
            raise InputError(where, "", f"expected 4 columns ({','.join(HEADER)}), got {len(r)}")
        kind = r[0]
        if kind not in KINDS:
            raise InputError(where, "kind", f"must be one of {', '.join(KINDS)}, got {kind!r}")
        vals = []
        for name, text in zip(HEADER[1:3], r[1:3]):
            try:
                v = float(text)
            except ValueError:
                raise InputError(where, name, f"is not a number: {text!r}") from None
            if not math.isfinite(v) or v < 0 or (name == "duration_h" and v == 0):
                raise InputError(where, name, f"must be a finite number {'> 0' if name == 'duration_h' else '>= 0'}"
                                              f", got {text}")
            vals.append(v)
        kw = 0.0
        if kind == "demand_response":
            try:
                kw = float(r[3])
            except ValueError:
                raise InputError(where, "kw", f"a demand_response needs the kW to shed, a number > 0, got {r[3]!r}") \
                    from None
            if not (math.isfinite(kw) and kw > 0):
                raise InputError(where, "kw", f"must be a finite number > 0, got {r[3]}")
        elif r[3]:
            raise InputError(where, "kw", f"an outage takes no kW (leave it empty), got {r[3]!r}")
        out.append((kind, vals[0], vals[1], kw))
    return sorted(out, key=lambda e: (e[1], e[0]))


class DemandResponse(Strict):
    """Demand-response requests at a rate: each asks the site to reduce its IT power by ``reduce_kw`` for a
    duration; the site honours it by capping every GPU (water-filling) to its power at the request's start
    less ``reduce_kw``, and is paid ``power.grid.dr_price_per_kwh`` for the energy shed."""

    per_year: NonNeg = Field(
        0.0, description="Requests per year, a Poisson process (stream power.grid#dr_arrival). Assumption of the "
                         "scenario: programmes call 5–50 events a year (recalled, not checked); 0: none.")
    duration: Dist = Field(
        default_factory=lambda: Fixed(value_h=2.0),
        description="Duration of a request, hours (assumption: 2 h fixed, range 1–6 h; stream power.grid#dr_duration).")
    reduce_kw: Pos = Field(description="IT power shed per request, kW (the scenario's contract: no default).")


class Grid(Strict):
    """Grid events: demand-response requests at a rate, and scheduled utility outages and requests from a file."""

    demand_response: DemandResponse | None = Field(None, description="Requests at a rate; null: none.")
    dr_price_per_kwh: NonNeg = Field(
        0.0, description="Payment per kWh shed for an honoured demand-response request (rate or file), in the "
                         "scenario's currency (assumption of the scenario: 0.1–2 per kWh for event-based "
                         "programmes, recalled, not checked; 0: no payment).")
    file: str | None = Field(
        None, description="CSV of scheduled grid events, relative to the scenario file: header "
                          "kind,start_h,duration_h,kw; kind outage (every feed loses its utility) or demand_response "
                          "(reduce IT power by kw for duration_h). null: none.")
    _events: list[GridEvent] = PrivateAttr(default_factory=list)

    def bind_files(self, base_dir: Path) -> None:
        """Read the event file (the loader calls this with the top scenario's folder)."""
        if self.file is not None:
            self._events = load_grid_csv(Path(base_dir) / self.file)

    @property
    def events(self) -> list[GridEvent]:
        """The file's events in time order (empty without a file)."""
        return list(self._events)

    @property
    def active(self) -> bool:
        dr = self.demand_response
        return bool(self._events) or (dr is not None and dr.per_year > 0)


__all__ = ["DemandResponse", "Grid", "GridEvent", "load_grid_csv"]
