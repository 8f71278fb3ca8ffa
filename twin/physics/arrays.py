"""The array conventions shared by the physics modules: every function takes floats or arrays
(anything :func:`numpy.asarray` accepts) and returns a float for scalar input, an array otherwise."""

from __future__ import annotations

from typing import Any, Union

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatOrArray = Union[float, NDArray[np.float64]]


def as_f64(x: ArrayLike) -> NDArray[np.float64]:
    """``x`` as a float64 array (no copy when it already is one)."""
    return np.asarray(x, dtype=np.float64)


def float_or_array(x: ArrayLike) -> FloatOrArray:
    """Return a 0-d result as a float, anything else as an array."""
    a: NDArray[Any] = np.asarray(x)  # the dtype as computed (a comparison gives booleans)
    return float(a) if a.ndim == 0 else a
