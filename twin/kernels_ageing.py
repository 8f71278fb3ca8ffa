"""Compiled kernel of the temperature-accelerated ageing's per-part update (issue 41).

``twin.model.cooling.ageing.Ageing.update`` re-rates the aged parts of some nodes at each change of their
temperature (a part restored, a zone's held supply, a GPU update when a law follows the GPU): each part's
effective age to now at its old factor, its new factor, and its failure time
(``twin.physics.thermal.accelerated_failure_time_h``), infinite for a part not healthy. As numpy that is ~15
calls on a gathered copy of one node's few parts (~1–2 µs of fixed cost each, more with cold caches, 211 times a
year in the liquid hall); :func:`age_parts` does it in one loop with the same operations in the same order, so
the results are identical (``tests/test_kernels_ageing.py`` pins it to the numpy sequence). The factors
themselves (the laws' ``np.interp``, ``np.exp``) stay numpy's.

A module of its own beside the other kernel modules, under the same rules: numba's on-disk cache keys a
function on its own file, so no kernel here calls a compiled function of another module; it imports
:mod:`twin.kernels` first only for the cache folder that module sets before numba is imported. Also runs as
plain Python (``NUMBA_DISABLE_JIT=1``: a CI step runs ``tests/test_kernels_ageing.py`` that way).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from twin import kernels as _kernels  # noqa: F401  (sets NUMBA_CACHE_DIR before numba compiles anything here)

_JIT = {"cache": True, "error_model": "numpy", "nogil": True}


@njit(**_JIT)
def age_parts(pidx: np.ndarray, now: float, age: np.ndarray, t: np.ndarray, af: np.ndarray, af_new: np.ndarray,
              life: np.ndarray, healthy: np.ndarray, tfail: np.ndarray) -> float:
    """Re-rate parts ``pidx`` (distinct) at ``now`` (h): each one's effective age grows by its old factor × the
    time since ``t`` (``age += af·(now − t)``), ``t`` becomes now and ``af`` its new factor ``af_new[j]``; its
    failure time is now + max(0, life − age)/af (``accelerated_failure_time_h``, numpy's maximum: a nan
    difference stays nan), or +inf if the part is not ``healthy``, written to ``tfail``. Returns the lowest
    failure time written (nan if one is nan, as ``np.min``; +inf for no part)."""
    lowest = math.inf
    nan = False
    for j in range(pidx.shape[0]):
        i = pidx[j]
        age[i] = age[i] + af[i] * (now - t[i])
        t[i] = now
        a = af_new[j]
        af[i] = a
        d = life[i] - age[i]
        tf = now + (0.0 if 0.0 >= d else d) / a
        if not healthy[i]:
            tf = math.inf
        tfail[i] = tf
        if tf != tf:
            nan = True
        elif tf < lowest:
            lowest = tf
    return math.nan if nan else lowest
