"""Atomic file writes, the project's one implementation: write to a temporary name in the same
folder, then ``os.replace`` it onto the final name, so a killed process never leaves a partial file
under the final name. A results folder is built under a hidden temporary name beside its final
place and renamed into place when every file is written (:func:`atomic_folder`).

Files and folders are created with the modes an ordinary ``open`` or ``mkdir`` gives (0666 and 0777
less the user's umask: 0644 and 0755 for the usual umask 022), so a team sharing a results folder can
read them. ``tempfile.mkstemp``/``mkdtemp`` would make them 0600/0700, private to their owner; here the
temporary names are created with ``O_CREAT | O_EXCL`` (never an existing file) and the kernel applies
the umask, so no process-wide umask is read or changed.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd


def make_dirs(path: str | os.PathLike[str]) -> None:
    """``mkdir -p``; a file where the folder or one of its parents should be is bad input (exit 2) naming
    that file, not a FileExistsError (exit 3)."""
    p = Path(path)
    try:
        p.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        blocker = next((q for q in (p, *p.parents) if q.exists() and not q.is_dir()), None)
        if blocker is None:
            raise
        from twin.errors import InputError

        raise InputError(str(blocker), "", f"is a file, where the folder {p} should be: move it away, or choose "
                                           "another --results folder (or --label, --out)") from None


def name_path(exc: OSError, path: str | os.PathLike[str]) -> None:
    """Give an ``OSError`` raised while writing ``path`` that file's name when the system gave it
    none (a ``write`` or ``fsync`` that runs out of space names no file), so the one-line error of
    an environment problem (:func:`twin.errors.environment_problem`) can say which file it was."""
    if exc.filename is None:
        exc.filename = str(path)


_TEMP_ATTEMPTS = 100
"""Random temporary names tried before giving up (as ``tempfile`` does; a clash is already rare)."""


def _temp_name(folder: Path, final_name: str) -> Path:
    """A hidden temporary name beside ``final_name`` in ``folder`` (random, not simulation randomness)."""
    return folder / f".{final_name}.{secrets.token_hex(4)}.tmp"


def create_temp_file(folder: Path, final_name: str) -> Path:
    """Create a new, empty temporary file for ``final_name`` in ``folder`` with mode 0666 less the
    umask (``tempfile.mkstemp`` would give 0600) and return its path."""
    for _ in range(_TEMP_ATTEMPTS):
        tmp = _temp_name(folder, final_name)
        try:
            fd = os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666)
        except FileExistsError:
            continue
        os.close(fd)
        return tmp
    raise FileExistsError(f"no free temporary name for {final_name} in {folder} after {_TEMP_ATTEMPTS} tries")


def create_temp_folder(folder: Path, final_name: str) -> Path:
    """Create a new, empty temporary folder for ``final_name`` in ``folder`` with mode 0777 less the
    umask (``tempfile.mkdtemp`` would give 0700) and return its path."""
    for _ in range(_TEMP_ATTEMPTS):
        tmp = _temp_name(folder, final_name)
        try:
            os.mkdir(tmp, 0o777)
        except FileExistsError:
            continue
        return tmp
    raise FileExistsError(f"no free temporary name for {final_name} in {folder} after {_TEMP_ATTEMPTS} tries")


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; on success move it onto ``path``.

    The temporary file is removed if the body raises (an interrupt included). An ``OSError`` is
    given the final path's name when the system named no file (:func:`name_path`).
    """
    target = Path(path)
    try:
        make_dirs(target.parent)
        tmp_path = create_temp_file(target.parent, target.name)
    except OSError as exc:
        name_path(exc, target)
        raise
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


def save_figure(fig: Any, path: str | os.PathLike[str], **kwargs: Any) -> None:
    """``fig.savefig`` atomically (the format from the file's suffix), so a full disk names the figure
    (:func:`name_path`) and never leaves half a PNG under its name."""
    target = Path(path)
    with atomic_path(target) as tmp:
        fig.savefig(tmp, format=target.suffix.lstrip(".") or "png", **kwargs)


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
    make_dirs(target.parent)
    tmp_path = create_temp_file(target.parent, target.name)
    try:
        with open(tmp_path, "w", encoding="utf-8") as fh:
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
    make_dirs(final.parent)
    tmp = create_temp_folder(final.parent, final.name)
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
