"""Printing for the command line: results to stdout, notes and warnings to stderr."""

from __future__ import annotations

import sys


def echo(msg: str) -> None:
    """A line of results (stdout)."""
    print(msg, flush=True)


def note(msg: str) -> None:
    """A note or warning (stderr), kept apart from results."""
    print(msg, file=sys.stderr, flush=True)
