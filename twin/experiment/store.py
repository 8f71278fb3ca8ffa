"""Results folders, written atomically.

A folder is built under a hidden temporary name beside its final place and renamed into place
only when every file is written, so a killed run never leaves a complete-looking folder. Single
files are written to a temporary name and ``os.replace``-d.
"""

from __future__ import annotations

import json
import math
import os
import platform
import shutil
import sys
import tempfile
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import Any, Iterator

import pandas as pd

import twin
from twin.errors import InputError


def versions() -> dict[str, str]:
    """Versions that a result depends on (recorded in every results folder)."""
    out = {"twin": twin.__version__, "python": platform.python_version()}
    for pkg in ("numpy", "scipy", "simpy", "pandas", "pydantic", "pyarrow"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:  # pragma: no cover - all are dependencies
            out[pkg] = "absent"
    return out


def _json_default(o: Any) -> Any:
    if hasattr(o, "item"):
        return o.item()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def clean_json(obj: Any) -> Any:
    """Replace non-finite floats with None (JSON has no NaN/inf)."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: clean_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean_json(v) for v in obj]
    return obj


def write_json(path: Path, obj: Any) -> None:
    atomic_write_text(path, json.dumps(clean_json(obj), indent=2, sort_keys=True, default=_json_default) + "\n")


def name_path(exc: OSError, path: Path | str) -> None:
    """Give an ``OSError`` raised while writing ``path`` that file's name when the system gave it
    none (a ``write`` or ``fsync`` that runs out of space names no file), so the one-line error of
    an environment problem (:func:`twin.errors.environment_problem`) can say which file it was."""
    if exc.filename is None:
        exc.filename = str(path)


def atomic_write_text(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        name_path(exc, path)
        raise
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            name_path(exc, path)
        raise


def atomic_write_parquet(path: Path, df: pd.DataFrame) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.close(fd)
    except OSError as exc:
        name_path(exc, path)
        raise
    try:
        df.to_parquet(tmp, index=False)
        os.replace(tmp, path)
    except BaseException as exc:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            name_path(exc, path)
        raise


@contextmanager
def atomic_folder(final: Path, overwrite: bool) -> Iterator[Path]:
    """Yield a temporary folder; on success it replaces ``final`` (only if ``overwrite`` when it
    exists). On any exception or interrupt the temporary folder is removed."""
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent))
    try:
        yield tmp
        if final.exists():
            if not overwrite:
                raise FileExistsError(f"{final} exists")
            old = final.parent / f".{final.name}.old-{os.getpid()}"
            os.replace(final, old)
            os.replace(tmp, final)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def check_label(label: str) -> None:
    """Refuse a ``--label`` that is not one plain folder name (it must not lead out of the results tree)."""
    if not label or label in (".", "..") or "/" in label or "\\" in label or label.startswith("."):
        raise InputError("--label", label, "a label is one folder name (no '/', not starting with '.')")


def run_folder(results_root: Path, scenario_name: str, scenario_hash: str, seed: int, label: str | None,
               replication: int = 0) -> Path:
    """``results/<scenario>/<label or hash-s<seed>[-r<replication>]>``: deterministic, distinct per
    resolved scenario and replication (replication 0 keeps the short name)."""
    if label is not None:
        check_label(label)
    leaf = label if label else f"{scenario_hash}-s{seed}" + (f"-r{replication}" if replication else "")
    return results_root / scenario_name / leaf


def python_info() -> str:
    return f"{sys.executable} ({platform.python_implementation()} {platform.python_version()})"
