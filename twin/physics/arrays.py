"""The array conventions shared by the physics modules: every function takes floats or arrays
(anything :func:`numpy.asarray` accepts) and returns a float for scalar input, an array otherwise."""

from __future__ import annotations

from typing import Union

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatOrArray = Union[float, NDArray[np.float64]]


def as_f64(x: ArrayLike) -> NDArray[np.float64]:
    """``x`` as a float64 array (no copy when it already is one)."""
    return np.asarray(x, dtype=np.float64)


def float_or_array(x: NDArray) -> FloatOrArray:
    """Return a 0-d result as a float, anything else as an array."""
    x = np.asarray(x)
    return float(x) if x.ndim == 0 else x
