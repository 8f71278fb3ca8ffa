"""The ageing kernel (twin/kernels_ageing.py, issue 41) against the numpy update it replaced
(``Ageing.update`` of twin 0.16, restated below), bit for bit, on random parts: healthy or not, lives reached
or not, factors above and below 1. CI also runs this file with ``NUMBA_DISABLE_JIT=1`` (plain Python)."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from twin import kernels_ageing as KA
from twin.physics import thermal as phys

INF = math.inf


def _numpy_update(s: dict, pidx: np.ndarray, now: float, af: np.ndarray) -> float:  # the 0.16 code, on a state dict
    healthy = s["healthy"][pidx]
    af_old = s["af"][pidx]
    s["age"][pidx] += af_old * (now - s["t"][pidx])
    s["t"][pidx] = now
    s["af"][pidx] = af
    tf = np.asarray(phys.accelerated_failure_time_h(now, s["age"][pidx], s["life"][pidx], af))
    tf = np.where(healthy, tf, INF)
    s["tfail"][pidx] = tf
    return float(tf.min())


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), one=st.booleans())
def test_age_parts_is_the_numpy_update(seed: int, one: bool) -> None:
    rng = np.random.default_rng(seed)
    per = int(rng.integers(1, 9))
    n_nodes = int(rng.integers(1, 20))
    n = n_nodes * per
    nodes = np.array([int(rng.integers(0, n_nodes))]) if one else np.sort(
        rng.choice(n_nodes, int(rng.integers(1, n_nodes + 1)), replace=False))
    pidx = (nodes[:, None] * per + np.arange(per)).ravel().astype(np.int64)
    now = float(rng.uniform(0.0, 9000.0))
    state = {
        "healthy": rng.random(n) < 0.8,
        "af": rng.uniform(0.2, 4.0, n),
        "age": rng.uniform(0.0, 9000.0, n),
        "t": rng.uniform(0.0, now, n),
        "life": rng.uniform(0.0, 20000.0, n),  # (some already reached: failure now)
        "tfail": rng.uniform(0.0, 1e5, n),
    }
    af = rng.uniform(0.2, 4.0, len(pidx))
    a = {k: v.copy() for k, v in state.items()}
    b = {k: v.copy() for k, v in state.items()}
    want = _numpy_update(a, pidx, now, af)
    got = KA.age_parts(pidx, now, b["age"], b["t"], b["af"], af, b["life"], b["healthy"], b["tfail"])
    assert got == want
    for k in state:
        assert np.array_equal(a[k], b[k]), k


def test_age_parts_returns_nan_as_np_min_and_inf_for_no_healthy_part() -> None:
    one = np.ones(2)
    pidx = np.arange(2, dtype=np.int64)
    life = np.array([5.0, math.nan])
    assert math.isnan(KA.age_parts(pidx, 1.0, np.zeros(2), np.zeros(2), one.copy(), one, life, np.ones(2, dtype=bool),
                                   np.zeros(2)))
    assert KA.age_parts(pidx, 1.0, np.zeros(2), np.zeros(2), one.copy(), one, life, np.zeros(2, dtype=bool),
                        np.zeros(2)) == INF
