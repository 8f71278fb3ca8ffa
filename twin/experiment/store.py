"""Results folders: their names, the versions and the JSON they record, and the lock a run holds
while it writes one (:func:`folder_lock`), so two identical runs started together compute once.
Every file and folder is written atomically (:mod:`twin.atomic`), so a killed run never leaves a
complete-looking folder.
"""

from __future__ import annotations

import functools
import json
import math
import os
import platform
import sys
import threading
import time
import uuid
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Iterator

import twin
from twin.atomic import atomic_folder, atomic_write_parquet, atomic_write_text, atomic_write_text_new, make_dirs, name_path
from twin.errors import InputError

__all__ = ["atomic_folder", "atomic_write_parquet", "atomic_write_text", "name_path", "folder_lock", "lock_path",
           "run_folder", "versions", "write_json", "clean_json", "check_label", "python_info"]


def versions() -> dict[str, str]:
    """Versions that a result depends on (recorded in every results folder)."""
    return {"twin": twin.__version__, "python": platform.python_version(), **dict(_package_versions())}


@functools.lru_cache(maxsize=1)
def _package_versions() -> tuple[tuple[str, str], ...]:
    """The dependencies' versions, read once per process (each read parses a package's metadata: ~25 ms
    for the six, paid twice by every Monte-Carlo run before)."""
    out = []
    for pkg in ("numpy", "scipy", "simpy", "pandas", "pydantic", "pyarrow"):
        try:
            out.append((pkg, metadata.version(pkg)))
        except metadata.PackageNotFoundError:  # pragma: no cover - all are dependencies
            out.append((pkg, "absent"))
    return tuple(out)


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
    check_utf8("--label", label)


def check_utf8(option: str, text: str) -> None:
    """Refuse a name given on the command line that is not UTF-8 text (bytes the locale could not decode
    reach Python as surrogates, which no file written through pyarrow or as UTF-8 can carry)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(option, text, "not UTF-8 text: give a name of UTF-8 characters") from None


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


# ---------------------------------------------------------------- results-folder lock

LOCK_HEARTBEAT_S = 10.0
"""A lock's holder rewrites its heartbeat this often (seconds)."""
LOCK_STALE_S = 60.0
"""A lock whose heartbeat is older than this (seconds) is stale: its run was killed or its machine
stopped, and the next run takes it over."""


def lock_path(folder: Path) -> Path:
    """The lock of a results folder: a hidden file beside it (``.<name>.lock``), so replacing or
    emptying the folder itself never removes the lock."""
    return folder.parent / f".{folder.name}.lock"


def _read_lock(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # gone (released), or not a lock we can read
        return None
    return data if isinstance(data, dict) else None


def _holder(data: dict[str, Any]) -> str:
    started = data.get("started_utc", "?")
    return f"process {data.get('pid', '?')} on {data.get('host', '?')} (started {started})"


def _stale_reason(data: dict[str, Any], stale_s: float) -> str | None:
    """Why a lock no longer protects a run (None while its holder is alive): its process has ended
    (same host: the process id is checked) or its heartbeat is older than ``stale_s``."""
    pid = data.get("pid")
    if data.get("host") == platform.node() and isinstance(pid, int) and pid > 0:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return f"its process {pid} has ended"
        except PermissionError:  # alive, another user's
            pass
    beat = data.get("heartbeat")
    age = time.time() - beat if isinstance(beat, (int, float)) else math.inf
    if age > stale_s:
        return f"no heartbeat for {age:.0f} s" if math.isfinite(age) else "it records no heartbeat"
    return None


def _lock_record(token: str, started: float) -> dict[str, Any]:
    now = time.time()
    return {"pid": os.getpid(), "host": platform.node(), "token": token, "started": started,
            "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)), "heartbeat": now,
            "heartbeat_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))}


def _create_lock(path: Path, record: dict[str, Any]) -> bool:
    """Create the lock with its whole content, or return False if it exists: the record is written
    to a temporary file and hard-linked to the lock's name (``link`` never replaces a file), so a
    reader never sees a half-written lock."""
    return atomic_write_text_new(path, json.dumps(record, sort_keys=True) + "\n")


def _take_over(path: Path, seen: dict[str, Any], token: str) -> bool:
    """Remove a stale lock, only if it is still the one judged stale (another run may have taken
    it over and locked again meanwhile): it is renamed aside, checked, and put back if it is not."""
    aside = path.with_name(f"{path.name}.stale-{token}")
    try:
        os.rename(path, aside)
    except FileNotFoundError:
        return False
    if (_read_lock(aside) or {}).get("token") != seen.get("token"):
        try:
            os.link(aside, path)  # a fresh lock: put it back (never over a newer one)
        except FileExistsError:
            pass
        os.unlink(aside)
        return False
    os.unlink(aside)
    return True


@contextmanager
def folder_lock(folder: Path, echo: Callable[[str], None], stale_s: float = LOCK_STALE_S,
                heartbeat_s: float = LOCK_HEARTBEAT_S, poll_s: float = 0.25) -> Iterator[None]:
    """Hold the lock of results folder ``folder`` while a run writes it.

    The lock (:func:`lock_path`) records the process id, the host, the start and a heartbeat that a
    daemon thread renews every ``heartbeat_s`` seconds. A run that finds the folder locked says once
    which run holds it and waits (Ctrl-C stops it); when the lock is released it goes on, and then
    finds the results complete and reuses them. A stale lock (its process ended, on this host, or no
    heartbeat for ``stale_s`` seconds: a killed run) is taken over with a note. Released on leaving
    the block, whatever ends it."""
    path = lock_path(folder)
    make_dirs(path.parent)
    token = uuid.uuid4().hex
    started = time.time()
    said = False
    while not _create_lock(path, _lock_record(token, started)):
        seen = _read_lock(path)
        if seen is None:  # released between the two calls
            continue
        why = _stale_reason(seen, stale_s)
        if why is not None:
            if _take_over(path, seen, token):
                echo(f"note: took over the lock of {folder} held by {_holder(seen)}: {why}")
            continue
        if not said:
            echo(f"waiting: {folder} is being written by {_holder(seen)}; this run goes on when that one "
                 f"finishes (lock {path}; Ctrl-C stops waiting)")
            said = True
        time.sleep(poll_s)
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(heartbeat_s):
            if (_read_lock(path) or {}).get("token") != token:
                return  # taken over (this run was judged dead): leave the new holder's lock alone
            atomic_write_text(path, json.dumps(_lock_record(token, started), sort_keys=True) + "\n")

    thread = threading.Thread(target=beat, daemon=True, name="twin-lock-heartbeat")
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        if (_read_lock(path) or {}).get("token") == token:
            path.unlink(missing_ok=True)
