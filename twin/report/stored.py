"""Reading a results folder's stored JSON and Parquet files, with the errors of a damaged folder (bad
input, exit 2). Apart from :mod:`twin.report.html` so that commands that only read a folder (the
decision summary of every ``twin montecarlo``) do not import matplotlib's pyplot (~0.25 s)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa

from twin.errors import InputError


def read_json(path: Path) -> dict[str, Any]:
    """A stored JSON mapping of an experiment folder; a missing or damaged one is bad input (exit 2)."""
    if not path.is_file():
        raise InputError(str(path.parent), "", f"not an experiment results folder (no {path.name})")
    try:
        obj = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(str(path), "", f"damaged: not valid JSON ({exc}); recompute the experiment") from None
    if not isinstance(obj, dict):
        raise InputError(str(path), "", f"damaged: a mapping expected, got {type(obj).__name__}; recompute the "
                         "experiment")
    return obj


def read_table(path: Path, columns: list[str] | None = None) -> pd.DataFrame:
    """A stored Parquet table of an experiment folder; a missing or damaged one is bad input (exit 2)."""
    if not path.is_file():
        raise InputError(str(path.parent), "", f"incomplete or damaged experiment folder: {path.name} is missing; "
                         "recompute the experiment")
    try:
        return pd.read_parquet(path, columns=columns)
    except (pa.ArrowException, OSError) as exc:
        raise InputError(str(path), "", f"damaged: not a readable Parquet table ({exc}); recompute the "
                         "experiment") from None
