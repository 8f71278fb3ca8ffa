"""Printing for the command line: results to stdout, notes and warnings to stderr."""

from __future__ import annotations

import sys
from contextvars import ContextVar, Token


def echo(msg: str) -> None:
    """A line of results (stdout)."""
    print(msg, flush=True)


def note(msg: str) -> None:
    """A note or warning (stderr), kept apart from results."""
    print(msg, file=sys.stderr, flush=True)


_VERBOSE: ContextVar[int] = ContextVar("twin_verbose", default=0)
"""How many ``-v`` the command was given (0: quiet about its workings); set by the CLI for the command."""


def verbosity() -> int:
    """The ``-v`` count of the running command (0 outside the CLI)."""
    return _VERBOSE.get()


def set_verbosity(level: int) -> Token[int]:
    """Set the ``-v`` count for what runs next in this context; reset it with the returned token."""
    return _VERBOSE.set(level)


def reset_verbosity(token: Token[int]) -> None:
    _VERBOSE.reset(token)


def detail(msg: str) -> None:
    """A line about the command's workings (stderr), printed only with ``--verbose``/``-v``."""
    if _VERBOSE.get():
        print(f"verbose: {msg}", file=sys.stderr, flush=True)
