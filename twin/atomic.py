"""Atomic file writes, the project's one implementation: write to a temporary name in the same
folder, then ``os.replace`` it onto the final name, so a killed process never leaves a partial file
under the final name. A results folder is built under a hidden temporary name beside its final
place and renamed into place when every file is written (:func:`atomic_folder`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd


def name_path(exc: OSError, path: str | os.PathLike[str]) -> None:
    """Give an ``OSError`` raised while writing ``path`` that file's name when the system gave it
    none (a ``write`` or ``fsync`` that runs out of space names no file), so the one-line error of
    an environment problem (:func:`twin.errors.environment_problem`) can say which file it was."""
    if exc.filename is None:
        exc.filename = str(path)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; on success move it onto ``path``.

    The temporary file is removed if the body raises (an interrupt included). An ``OSError`` is
    given the final path's name when the system named no file (:func:`name_path`).
    """
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        os.close(fd)
    except OSError as exc:
        name_path(exc, target)
        raise
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.replace(tmp_path, target)
    except OSError as exc:
        name_path(exc, target)
        raise
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Atomically replace ``path`` with ``text`` (UTF-8), flushed to disk before the rename."""
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())


def atomic_write_parquet(path: str | os.PathLike[str], df: "pd.DataFrame") -> None:
    """Atomically replace ``path`` with ``df`` as Parquet (without the index)."""
    with atomic_path(path) as tmp:
        df.to_parquet(tmp, index=False)


def atomic_write_text_new(path: str | os.PathLike[str], text: str) -> bool:
    """Atomically create ``path`` with ``text``; never overwrite an existing file.

    Returns False (and writes nothing) when ``path`` already exists. Uses a hard link from
    the temporary file, which fails if the target exists, so a file created concurrently
    is not clobbered either.
    """
    target = Path(path)
    if target.exists():
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    tmp_path = Path(tmp)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        try:
            os.link(tmp_path, target)
        except FileExistsError:
            return False
        except OSError:
            # Filesystem without hard links: fall back to check-then-replace.
            if target.exists():
                return False
            os.replace(tmp_path, target)
        return True
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


@contextlib.contextmanager
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
