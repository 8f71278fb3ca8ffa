"""What a path the user gave is, when it is not a file the twin can read.

A scenario, its ``extends`` base and its data files must be regular files: a folder, a named pipe
(FIFO) or a device such as ``/dev/zero`` is bad input, reported as what it is rather than as
"not found" (reading a FIFO or a device could block or never end).
"""

from __future__ import annotations

import errno
import stat
from pathlib import Path

from twin.errors import InputError

_KINDS = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


FILE_KINDS = (("trace.file", "trace file"), ("ambient.csv.file", "ambient temperature file"),
              ("time_of_use.file", "time-of-use price file"), ("grid.file", "grid event file"))
"""What a scenario's ``file:`` field holds, by the end of its path (every other ``file:`` is an empirical
distribution's)."""


def file_kind(field: str) -> str:
    """The kind of data file the scenario field ``field`` names, for its messages ("trace file", ...)."""
    return next((kind for suffix, kind in FILE_KINDS if field.endswith(suffix)), "empirical distribution file")


def file_problem(path: Path, what: str) -> str | None:
    """None if ``path`` is a regular file (symlinks followed); else why it is not, naming ``what``
    was expected ("scenario file", "time-of-use price file", ...). Errors other than a missing path
    (a folder without search permission) propagate as OSError."""
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            return f"{what} not found"
        if exc.errno == errno.ELOOP:
            return f"not a regular file (a loop of symbolic links); give a {what}"
        raise
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return f"is a folder, not a {what}"
    kind = next((f": {name}" for test, name in _KINDS if test(mode)), "")
    return f"not a regular file{kind}; give a {what}"


def require_file(path: Path, what: str, source: str | None = None, field: str = "") -> None:
    """Raise :class:`InputError` (exit 2, one line) unless ``path`` is a regular file. The error
    names ``source`` (default: the path itself) and ``field``."""
    problem = file_problem(path, what)
    if problem is not None:
        raise InputError(str(path) if source is None else source, field, problem)
