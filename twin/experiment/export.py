"""``twin export FOLDER``: the result tables of a results folder as CSV files, for spreadsheets.

Every command stores its tables as Parquet (typed, compact, what pandas, Arrow and DuckDB read); a
spreadsheet opens CSV. This command converts the tables of one results folder, a ``twin run`` folder
or an experiment folder (Monte Carlo, compare, sweep, sensitivity, forecast), into one CSV file each:
``<table>.csv`` under ``FOLDER/csv`` (or ``--out DIR``). The columns and values are the Parquet
table's: raw keys (``node_availability``), raw values (a fraction, not a percent; money in the
scenario's currency; full precision), UTF-8, comma-separated, a header row, no index.

Each file is written to a temporary name in the destination folder and renamed onto its final name
when complete, so a reader never sees half a file and an interrupted export leaves the previous
files whole. A text cell that starts with ``=``, ``+``, ``@``, a tab or a carriage return is written
with a leading apostrophe, so a spreadsheet shows it as text instead of evaluating it as a formula
(a scenario or option name is user input). A table with more rows than a spreadsheet opens
(1,048,576 with the header) is written whole, with a warning.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

from twin.errors import EXIT_OK, InputError

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

SPREADSHEET_ROWS = 1_048_576
"""Rows of a sheet in Excel and LibreOffice Calc (header included)."""
_FORMULA_START = ("=", "+", "@", "\t", "\r")


def _text_safe(df: "pd.DataFrame") -> "pd.DataFrame":
    """``df`` with every text cell that a spreadsheet would read as a formula prefixed by ``'``."""
    import pandas as pd

    out = df.copy()
    for c in out.columns:
        col = out[c]
        if col.dtype == object or isinstance(col.dtype, pd.StringDtype):
            out[c] = [("'" + v) if isinstance(v, str) and v.startswith(_FORMULA_START) else v for v in col]
    return out


def result_tables(folder: Path) -> list[Path]:
    """The Parquet tables of a results folder (its own, not its sub-folders'), sorted by name."""
    if not folder.is_dir():
        raise InputError("twin export", str(folder), "not a folder; give a results folder of twin run, montecarlo, "
                         "compare, sweep, sensitivity or forecast")
    if not ((folder / "summary.json").is_file() or (folder / "experiment.json").is_file()):
        raise InputError("twin export", str(folder), "not a twin results folder (it has neither summary.json nor "
                         "experiment.json)")
    tables = sorted(folder.glob("*.parquet"))
    if not tables:
        raise InputError("twin export", str(folder), "holds no result tables (*.parquet)")
    return tables


def export_csv(folder: Path | str, out: Path | str | None = None, names: Sequence[str] = (),
               echo: Callable[[str], None] | None = None) -> list[tuple[Path, int]]:
    """Write each table of ``folder`` (or only those named in ``names``, without ``.parquet``) as CSV
    into ``out`` (default ``folder/csv``), each file atomically. Returns (CSV path, rows) per table;
    ``echo`` receives a warning for a table longer than a spreadsheet opens."""
    from twin.atomic import atomic_path
    from twin.report.stored import read_table

    folder = Path(folder)
    tables = result_tables(folder)
    if names:
        have = {t.stem: t for t in tables}
        unknown = [n for n in names if n not in have]
        if unknown:
            raise InputError("--table", ", ".join(unknown), f"no such table in {folder}; tables: "
                             + ", ".join(sorted(have)))
        tables = [have[n] for n in dict.fromkeys(names)]
    dest = Path(out) if out is not None else folder / "csv"
    if dest.exists() and not dest.is_dir():
        raise InputError("--out", str(dest), "is not a folder")
    written = []
    for t in tables:
        df = _text_safe(read_table(t))
        target = dest / f"{t.stem}.csv"
        with atomic_path(target) as tmp:
            df.to_csv(tmp, index=False, encoding="utf-8", lineterminator="\n")
        if echo is not None and len(df) + 1 > SPREADSHEET_ROWS:
            echo(f"warning: {target}: {len(df):,} rows, more than a spreadsheet opens ({SPREADSHEET_ROWS - 1:,} "
                 "below its header); read it with pandas or DuckDB, or filter the Parquet table")
        written.append((target, len(df)))
    return written


def cmd_export(args: argparse.Namespace) -> int:
    from twin.console import echo, note

    for path, rows in export_csv(args.folder, args.out, args.tables, note):
        echo(f"csv: {path} ({rows:,} rows)")
    return EXIT_OK


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "export", help="write the result tables of a results folder as CSV (for spreadsheets)",
        description="Convert the Parquet tables of a results folder (twin run, montecarlo, compare, sweep, "
                    "sensitivity or forecast) into one CSV file each, <table>.csv in FOLDER/csv or --out DIR: raw "
                    "keys and values, UTF-8, a header row; each file written atomically.")
    p.add_argument("folder", help="a results folder (the one a command printed after 'results:')")
    p.add_argument("--out", metavar="DIR", help="where to write the CSV files (default: FOLDER/csv)")
    p.add_argument("--table", dest="tables", action="append", default=[], metavar="NAME",
                   help="export only this table (its name without .parquet, e.g. summaries); repeatable")
    p.set_defaults(func=cmd_export)


__all__ = ["SPREADSHEET_ROWS", "add_parser", "cmd_export", "export_csv", "result_tables"]
