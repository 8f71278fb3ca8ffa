"""High-level entry points of ``twin fit`` (no CLI, no files except the input)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence

import numpy as np

from twin.errors import InputError
from twin.fit.data import Lifetime, by_part, read_event_log_csv, read_lifetimes_csv
from twin.fit.distributions import DISTS
from twin.fit.mle import PartFit, fit_part

FORMATS = ("lifetimes", "events")


def read_lives(path: str | os.PathLike[str], fmt: str = "lifetimes", parts: Sequence[str] | None = None,
               observation_end_h: float | None = None) -> list[Lifetime]:
    """Read field data in either format into component lives."""
    if fmt == "lifetimes":
        if observation_end_h is not None:
            raise InputError("--observation-end-h", "", "only applies to --format events")
        return read_lifetimes_csv(path, parts)
    if fmt == "events":
        return read_event_log_csv(path, parts, observation_end_h)
    raise InputError("--format", "", f"{fmt!r}; expected one of {', '.join(FORMATS)}")


def fit_lifetimes(lives: Iterable[Lifetime], parts: Sequence[str] | None = None,
                  dists: Sequence[str] = DISTS, level: float = 0.95) -> tuple[list[PartFit], list[str]]:
    """Fit each part type (in ``parts`` order, else order of appearance).

    Returns ``(fits, notes)``; parts without any failure are skipped with a note.
    """
    groups = by_part(lives)
    order = list(parts) if parts is not None else list(groups)
    fits: list[PartFit] = []
    notes: list[str] = []
    for part in order:
        group = groups.get(part, [])
        if not group:
            notes.append(f"{part}: no lives in the data; skipped")
            continue
        durations = np.array([life.duration_h for life in group], dtype=float)
        failed = np.array([life.failed for life in group], dtype=bool)
        if not failed.any():
            notes.append(f"{part}: no failures in {len(group)} lives; cannot fit a failure distribution, skipped")
            continue
        fits.append(fit_part(part, durations, failed, dists=dists, level=level))
    return fits, notes
