"""Which fitted model the calibrated scenario writes for a part (its lifetimes or repair times): the
lowest-AIC model whose parameters the scenario schema accepts (shared by the scenario's lines and its
``uncertainty:`` section)."""

from __future__ import annotations

import math

import numpy as np

from twin.fit import distributions
from twin.fit.mle import ModelFit, PartFit


_BOUNDS = {"shape": (0.1, 100.0), "sigma": (1e-9, 10.0)}
"""The scenario schema's bounds of the shape parameters (twin/scenario/distributions.py)."""


def usable(pf: PartFit, allow_fixed: bool = False) -> tuple[dict[str, object], ModelFit | None]:
    """The scenario spec of a fit: with ``allow_fixed`` (repair times), ``{dist: fixed, value_h}`` when
    two or more closed durations are all the same (no spread to fit: the MLE of a shape runs off to
    infinity); else the lowest-AIC model whose parameters the schema accepts, with that model."""
    done = pf.durations_h[pf.failed]
    if allow_fixed and done.size >= 2 and float(np.ptp(done)) <= 1e-6 * float(np.mean(done)):
        return {"dist": "fixed", "value_h": float(distributions.round_sig(float(np.mean(done)), 4))}, None
    for dist in sorted(pf.models, key=lambda d: pf.models[d].aic):
        m = pf.models[dist]
        if all(_BOUNDS.get(k, (0.0, math.inf))[0] <= v <= _BOUNDS.get(k, (0.0, math.inf))[1]
               for k, v in m.params.items()):
            return m.spec(), m
    m = pf.models.get("exponential") or next(iter(pf.models.values()))
    return m.spec(), m
