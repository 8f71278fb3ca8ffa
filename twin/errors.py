"""Errors the user can fix (bad input) versus bugs.

`InputError` is the only exception the CLI turns into the one-line message and exit code 2.
Everything else is a bug: exit code 3 and a saved traceback. No code may catch a broad
exception and re-raise it as `InputError`.
"""

from __future__ import annotations

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


def _printable(text: str) -> str:
    """Escape characters that are not printable (newlines, control characters, Unicode line and
    paragraph separators) so a message built from hostile input stays on one line."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)
