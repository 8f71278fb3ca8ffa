"""The replication rows of a Monte-Carlo folder, stored in chunks as they arrive.

A run buffers finished replications' rows and writes them as one Parquet file per chunk
(``reps/chunk-00001.parquet``, ...; atomically, :mod:`twin.atomic`) every :data:`FLUSH_REPS` rows
or :data:`FLUSH_S` seconds, whichever comes first, and when it stops (Ctrl-C, an error). A killed
run loses at most the rows of one unflushed chunk; a rerun reads every stored row and computes only
the missing replications. When the run completes, its chunks are merged into one (10,000
replications leave 8 files in the folder, not 10,000; ``replications.parquet`` is the table of the
requested ones, the chunk keeps every row as it was made, for a later request to reuse).

Rows are read back exactly as they were made: a metric that a replication did not report is
stored as null and dropped again on reading (a NaN metric stays NaN), so the final table
(:func:`twin.experiment.mc_folder.assemble`) is the same whether its rows come from the workers,
chunks, or the older one-file-per-replication ``reps/rep-00007.parquet`` (still read).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from twin.atomic import atomic_path
from twin.errors import InputError

FLUSH_REPS = 1000
"""A chunk is written when this many rows wait."""
FLUSH_S = 30.0
"""... or when the oldest waiting row is this old (seconds)."""
FLUSH_ENV = "TWIN_TEST_FLUSH_REPS"
"""Test-only: a smaller :data:`FLUSH_REPS` for the runs of this process (interrupt tests need a chunk
on disk before their 20 replications are done)."""
ID_DTYPES = {"replication": "int64", "seed": "int64", "scenario": "str", "scenario_hash": "str",
             "twin_version": "str", "events_processed": "int64"}
"""The identity columns of a row, first in the table; every other column is a float metric."""


def write_rows(path: Path, rows: Sequence[Mapping[str, Any]]) -> None:
    """Rows as one Parquet file (identity columns, then metrics in name order; a metric a row did not
    report is null), written to a temporary name and renamed (a killed run never leaves a partial file
    under the final name)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    ids = list(ID_DTYPES)
    metrics = sorted({k for r in rows for k in r if k not in ID_DTYPES})
    fields = [pa.field(k, pa.int64() if ID_DTYPES[k] == "int64" else pa.string()) for k in ids]
    fields += [pa.field(k, pa.float64()) for k in metrics]
    cols = {k: [r[k] for r in rows] for k in ids}
    cols.update({k: [r.get(k) for r in rows] for k in metrics})
    table = pa.Table.from_pydict(cols, schema=pa.schema(fields))
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp)


def read_rows(path: Path) -> list[dict[str, Any]]:
    """The rows of a file written by :func:`write_rows` (or a replications table), each as it was
    made: null metrics (not reported) dropped."""
    return [{k: v for k, v in r.items() if v is not None or k in ID_DTYPES} for r in read_stored(path).to_pylist()]


def read_stored(path: Path, reader: Callable[[Path], Any] | None = None) -> Any:
    """A stored Parquet file of a results folder read by ``reader`` (default a pyarrow Table); a damaged
    one (truncated, not Parquet: a crash of the machine, a full disk while it was copied) is bad input,
    exit 2, naming it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from twin.errors import environment_problem

    try:
        return (reader or pq.read_table)(path)
    except (pa.ArrowException, OSError) as exc:
        if isinstance(exc, OSError) and environment_problem(exc) is not None:
            raise  # a permission or an I/O error: the environment's one-line error names it
        raise InputError(str(path), "", f"damaged: not a readable Parquet table ({str(exc).splitlines()[0]}); "
                                        f"delete it (what it held is then rebuilt or recomputed) or use --overwrite") from None


def flush_reps() -> int:
    v = os.environ.get(FLUSH_ENV, "").strip()
    return int(v) if v.isdigit() and int(v) > 0 else FLUSH_REPS


class RowStore:
    """The rows of one results folder: those stored (read once, :meth:`load`) and those waiting to be
    written (:meth:`add`, :meth:`flush`). One writer at a time (the folder's lock)."""

    def __init__(self, folder: Path, scenario_hash: str, every_reps: int | None = None,
                 every_s: float = FLUSH_S, rows_dir: Path | None = None) -> None:
        self.folder = folder
        self.dir = rows_dir if rows_dir is not None else folder / "reps"
        """Where the chunks are: ``folder/reps`` (a forecast keeps one such folder per variant)."""
        self.hash = scenario_hash
        self.every_reps = every_reps or flush_reps()
        self.every_s = every_s
        self.rows: dict[int, dict[str, Any]] = {}
        """Every row known: stored and waiting, by replication."""
        self.stored: set[int] = set()
        self._waiting: list[dict[str, Any]] = []
        self._since = 0.0
        self.chunks_written = 0

    # ---- reading --------------------------------------------------------------------------
    def sources(self) -> list[Path]:
        """The files that hold stored rows: chunks, and the one-row files of older twin versions."""
        if not self.dir.is_dir():
            return []
        return sorted(self.dir.glob("chunk-*.parquet")) + sorted(self.dir.glob("rep-*.parquet"))

    def load(self) -> dict[int, dict[str, Any]]:
        """Read every stored row (a replication stored twice must be the same row)."""
        for path in self.sources():
            for r in read_rows(path):
                i = r.get("replication")
                if str(r.get("scenario_hash")) != self.hash or not isinstance(i, int) or i < 0:
                    raise InputError(str(path), "", "replication rows of another scenario; use --overwrite")
                if i in self.rows and not _same_row(self.rows[i], r):
                    raise InputError(str(path), "", f"replication {i} is stored twice, differently; use --overwrite")
                self.rows[i] = r
                self.stored.add(i)
        return self.rows

    def load_version(self, version: str) -> set[int]:
        """Read the stored rows of this scenario made by twin ``version`` (a forecast's resume: rows of
        another scenario are ignored and rows of another version recomputed, so neither is kept, and
        :meth:`compact` drops them); returns the replications stored only by another version."""
        other: set[int] = set()
        for path in self.sources():
            for r in read_rows(path):
                i = r.get("replication")
                if str(r.get("scenario_hash")) != self.hash or not isinstance(i, int) or i < 0:
                    continue
                if str(r.get("twin_version")) != version:
                    other.add(i)
                    continue
                if i in self.rows and not _same_row(self.rows[i], r):
                    raise InputError(str(path), "", f"replication {i} is stored twice, differently; use --overwrite")
                self.rows[i] = r
                self.stored.add(i)
        return other - self.stored

    # ---- writing --------------------------------------------------------------------------
    def add(self, row: dict[str, Any]) -> None:
        """A new row; written with the next chunk (now, when this one fills it or is due)."""
        i = int(row["replication"])
        self.rows[i] = row
        if not self._waiting:
            self._since = time.monotonic()
        self._waiting.append(row)
        if len(self._waiting) >= self.every_reps or time.monotonic() - self._since >= self.every_s:
            self.flush()

    def flush(self) -> None:
        """Write the waiting rows as the next chunk."""
        if not self._waiting:
            return
        write_rows(self.dir / f"chunk-{self._next_chunk():05d}.parquet", self._waiting)
        self.stored.update(int(r["replication"]) for r in self._waiting)
        self._waiting = []
        self.chunks_written += 1

    def _next_chunk(self) -> int:
        seen = [int(p.stem[6:]) for p in self.dir.glob("chunk-*.parquet") if p.stem[6:].isdigit()] \
            if self.dir.is_dir() else []
        return max(seen, default=0) + 1

    def compact(self) -> None:
        """Once the run is complete: every row in one chunk, written before the chunks and one-row
        files it replaces are removed (a run killed in between leaves the same rows twice, which
        :meth:`load` accepts)."""
        old = sorted(self.dir.glob("chunk-*.parquet")) + sorted(self.dir.glob("rep-*.parquet")) \
            if self.dir.is_dir() else []
        if len(old) == 1 and not self._waiting and old[0].name.startswith("chunk-"):
            return
        self._waiting = [self.rows[i] for i in sorted(self.rows)]
        self.flush()  # a new chunk, not among ``old``
        for p in old:
            p.unlink(missing_ok=True)


def _same_row(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Rows equal, NaN equal to NaN; a metric absent in one may be NaN (or 0 for a count by cause) in
    a complete table read back, so only the metrics both hold are compared."""
    for k in a.keys() & b.keys():
        x, y = a[k], b[k]
        if x != y and not (isinstance(x, float) and isinstance(y, float) and x != x and y != y):
            return False
    return True


def stored_replications(folder: Path) -> set[int]:
    """The replications whose rows a results folder holds now (any scenario; for progress and tests)."""
    out: set[int] = set()
    for path in RowStore(folder, "").sources():
        try:
            out.update(int(r["replication"]) for r in read_rows(path))
        except FileNotFoundError:  # merged meanwhile: its rows are in the new chunk
            continue
    return out
