"""Atomic file writes: write to a temporary name in the same folder, then ``os.replace``."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; on success move it onto ``path``.

    The temporary file is removed if the body raises.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.replace(tmp_path, target)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def write_text(path: str | os.PathLike[str], text: str) -> None:
    """Atomically replace ``path`` with ``text`` (UTF-8): the project's one text writer."""
    from twin.experiment.store import atomic_write_text

    atomic_write_text(Path(path), text)


def write_text_new(path: str | os.PathLike[str], text: str) -> bool:
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
