"""Errors the user can fix (bad input, their environment) versus bugs.

`InputError` (and its kind `EnvironmentProblem`) is the only exception the CLI turns into the
one-line message and exit code 2, besides an `OSError` whose errno says the environment stopped
the run (:data:`ENVIRONMENT_ERRNOS`: a full disk, a permission, a read-only file system).
Everything else is a bug: exit code 3 and a saved traceback. No code may catch a broad
exception and re-raise it as `InputError`.
"""

from __future__ import annotations

import errno
from collections.abc import Sequence

EXIT_OK = 0
EXIT_CHECK_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130


class InputError(Exception):
    """Bad input: a file or a field of it, and what is allowed.

    Rendered as ``<source>: <field>: <message>`` on one line.
    """

    def __init__(self, source: str, field: str, message: str) -> None:
        self.source = _printable(str(source))
        self.field = _printable(str(field))
        self.message = _printable(" ".join(str(message).split()))
        super().__init__(self.one_line())

    def one_line(self) -> str:
        parts = [p for p in (self.source, self.field) if p]
        return ": ".join(parts + [self.message])

    def lines(self) -> list[str]:
        """Every problem, one line each (one here; several for :class:`InputErrors`)."""
        return [self.one_line()]

    def hints(self) -> list[str]:
        """Lines that may explain the problems (a value that looks like a unit slip), shown after them."""
        return []

    def __reduce__(self) -> tuple[type, tuple[str, str, str]]:
        """Pickle by the three parts (an error raised in a pool or Dask worker reaches the parent whole)."""
        return (type(self), (self.source, self.field, self.message))


class InputErrors(InputError):
    """Several problems of one input, all listed (a scenario with three mistakes names all three).

    ``source``, ``field`` and ``message`` are the first problem's, for code that reads one; the CLI
    prints :meth:`lines` (one ``error:`` line each) and then :meth:`hints` (``hint:`` lines).
    """

    def __init__(self, errors: Sequence[InputError], hints: Sequence[str] = ()) -> None:
        if not errors:
            raise ValueError("InputErrors needs at least one error")
        first = errors[0]
        self.errors = tuple(errors)
        self._hints = tuple(_printable(" ".join(str(h).split())) for h in hints)
        super().__init__(first.source, first.field, first.message)

    def lines(self) -> list[str]:
        return [e.one_line() for e in self.errors]

    def hints(self) -> list[str]:
        return list(self._hints)

    def __str__(self) -> str:
        return "\n".join(self.lines() + [f"hint: {h}" for h in self._hints])

    def __reduce__(self) -> tuple[type, tuple[tuple[InputError, ...], tuple[str, ...]]]:  # type: ignore[override]
        return (type(self), (self.errors, self._hints))


class EnvironmentProblem(InputError):
    """The user's environment stopped the run, not a bug: a full disk, a permission, a data file
    changed while the run read it, no Dask worker. Exit code 2, one line naming the path (or the
    option) and the cause."""


ENVIRONMENT_ERRNOS: dict[int, str] = {
    code: hint for code, hint in (
        (errno.ENOSPC, "free space on that disk or point --results elsewhere"),
        (getattr(errno, "EDQUOT", -1), "the disk quota is used up: free space or point --results elsewhere"),
        (errno.EFBIG, "the file system refuses a file this large"),
        (errno.EACCES, "check the permissions of that path"),
        (errno.EPERM, "check the permissions of that path"),
        (errno.EROFS, "the file system is read-only: point --results elsewhere"),
        (errno.EMFILE, "too many open files: raise the limit (ulimit -n) or use fewer workers"),
        (errno.ENFILE, "the system's open-file table is full"),
        (errno.EIO, "the storage device reported an input/output error"),
    ) if code >= 0
}
"""OSError numbers that are the user's environment, not a bug, with what to do about each."""


def environment_problem(exc: BaseException) -> EnvironmentProblem | None:
    """The one-line exit-2 error for an ``OSError`` whose errno is in :data:`ENVIRONMENT_ERRNOS`
    (naming the file it names, both files of a rename), else None (a bug: exit 3)."""
    if not isinstance(exc, OSError) or exc.errno not in ENVIRONMENT_ERRNOS:
        return None
    names = [str(f) for f in (exc.filename, exc.filename2) if f is not None]
    path = " -> ".join(names) if names else "(no file named by the system)"
    cause = exc.strerror or errno.errorcode.get(exc.errno, str(exc.errno))
    return EnvironmentProblem(path, "", f"{cause} ({ENVIRONMENT_ERRNOS[exc.errno]})")


def _printable(text: str) -> str:
    """Escape characters that are not printable (newlines, control characters, Unicode line and
    paragraph separators) so a message built from hostile input stays on one line."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)
