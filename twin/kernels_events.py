"""Compiled kernels for the bookkeeping around the thermal kernels at each event (issue 41, scope item 3):
the IT power's caps and the comparisons of per-node arrays that decide what an update changed.

Each replaces a sequence of numpy calls on a gathered copy (``a[idx] != v``, ``np.isfinite(a[idx]).sum()``,
``a[idx] = v``: ~1–2 µs of fixed cost each, on 1 to a few hundred nodes) by one plain loop compiled by numba
(``@njit(cache=True)``), with the same comparisons and the same writes in the same order, so results are
identical. Only paths that already run compiled code call them (a hall with thermal, fans or caps): a run
without any pays no numba start-up for them.

A second module beside :mod:`twin.kernels` (near the 800-line cap), under the same rules: numba's on-disk
cache keys a function on its own file, so no kernel here calls a compiled function of another module (an
edit there would not recompile it here: each module's kernels are self-contained, and a helper both need
is written in each). It imports :mod:`twin.kernels` first only for the cache folder that module sets
before numba is imported. Indices are the model's own (in range, as numpy would check). The kernels also
run as plain Python (``NUMBA_DISABLE_JIT=1``: a CI step runs ``tests/test_kernels_events.py`` that way).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from twin import kernels as _kernels  # noqa: F401  (sets NUMBA_CACHE_DIR before numba compiles anything here)

_JIT = {"cache": True, "error_model": "numpy", "nogil": True}


@njit(**_JIT)
def any_ne_at(a: np.ndarray, idx: np.ndarray, v: np.ndarray) -> bool:
    """``bool(np.any(a[idx] != v))``."""
    for j in range(idx.shape[0]):
        if a[idx[j]] != v[j]:
            return True
    return False


@njit(**_JIT)
def put_finite_delta(a: np.ndarray, idx: np.ndarray, v: np.ndarray) -> int:
    """``a[idx] = v``, returning how many more of ``a[idx]`` are finite after than before
    (``np.isfinite(a[idx]).sum()`` after the write less before it: an index given twice counts twice)."""
    n = idx.shape[0]
    before = 0
    for j in range(n):
        if math.isfinite(a[idx[j]]):
            before += 1
    for j in range(n):
        a[idx[j]] = v[j]
    after = 0
    for j in range(n):
        if math.isfinite(a[idx[j]]):
            after += 1
    return after - before


@njit(**_JIT)
def put_changed_at(a: np.ndarray, idx: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``ch = idx[a[idx] != v]``, then ``a[idx] = v`` when ``ch`` is not empty; returns ``ch`` (in the order of
    ``idx``)."""
    n = idx.shape[0]
    mask = np.empty(n, dtype=np.bool_)
    k = 0
    for j in range(n):
        d = a[idx[j]] != v[j]
        mask[j] = d
        if d:
            k += 1
    ch = np.empty(k, dtype=idx.dtype)
    if k:
        k = 0
        for j in range(n):
            if mask[j]:
                ch[k] = idx[j]
                k += 1
        for j in range(n):
            a[idx[j]] = v[j]
    return ch


@njit(**_JIT)
def minimum_at(out: np.ndarray, a: np.ndarray, idx: np.ndarray) -> None:
    """``np.minimum(out, a[idx], out=out)`` without the gathered copy (a NaN of either side wins, as numpy's;
    of two equal values ``out`` keeps its own, the convention of :func:`twin.kernels.it_nodes`)."""
    for j in range(idx.shape[0]):
        x = a[idx[j]]
        if x < out[j] or x != x:
            out[j] = x


@njit(**_JIT)
def unit_indices(nodes: np.ndarray, u: int) -> np.ndarray:
    """The thermal units of ``nodes`` (``u`` a node, node-major): ``(nodes[:, None] * u + np.arange(u)).ravel()``."""
    out = np.empty(nodes.shape[0] * u, dtype=np.int64)
    for j in range(nodes.shape[0]):
        b = nodes[j] * u
        for k in range(u):
            out[j * u + k] = b + k
    return out


def sorted_union(arrays: list[np.ndarray]) -> np.ndarray:
    """``np.unique(np.concatenate(arrays))`` for integer arrays of one dtype (``np.union1d`` of two): the nodes
    a few settled crossings changed. Not compiled: a handful of node indices is cheapest as a Python set
    (~2 µs against ~10 µs for numpy's sort); above 64 indices, numpy's."""
    if sum(len(a) for a in arrays) > 64:
        return np.unique(np.concatenate(arrays))
    s: set[int] = set()
    for a in arrays:
        s.update(a.tolist())
    return np.array(sorted(s), dtype=arrays[0].dtype)
