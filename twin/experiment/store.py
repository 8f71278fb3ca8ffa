"""Results folders: their names, the versions and the JSON they record. Every file and folder is
written atomically (:mod:`twin.atomic`), so a killed run never leaves a complete-looking folder.
"""

from __future__ import annotations

import json
import math
import platform
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import twin
from twin.atomic import atomic_write_text
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
