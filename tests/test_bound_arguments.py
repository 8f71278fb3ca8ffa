"""The thermal update binds its fixed arguments once the model started (``GpuState.bind_args``) and ``_speeds``
keeps the speed sources' arrays per count of sources (``_sp3``): both assume no array they hold is replaced
after the start. This checks the assumption on every kind of thermal hall at the end of a run, so a model that
starts reallocating one of those arrays fails here instead of updating stale arrays silently."""

from __future__ import annotations

from pathlib import Path

import pytest

from twin.scenario import load_scenario
from twin.sim import Model

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"


def _same_objects(a: object, b: object) -> bool:
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same_objects(x, y) for x, y in zip(a, b))
    return a is b or (not hasattr(a, "shape") and a == b)  # arrays by identity, flags and sizes by value


# (air-marginal and cdu-failure slow some node within 20 days: _sp3 holds one source; crah-failure two)
@pytest.mark.parametrize("hall", ["air.yaml", "air-marginal.yaml", "liquid.yaml", "hybrid.yaml", "power-n1.yaml",
                                  "cdu-failure.yaml", "crah-failure.yaml", "power-dgx-split.yaml", "evaporative.yaml"])
def test_bound_arguments_are_the_live_arrays_at_the_end_of_a_run(hall: str) -> None:
    sc = load_scenario(SCENARIOS / hall, ["horizon_days=20"]).scenario
    model = Model(sc, 0)
    model.run()
    gpu = model.by_section["cooling"].gpu
    assert gpu._ua is not None, "bound at the start"
    assert _same_objects(gpu._ua, gpu.bind_args(False))  # what binding now would take: the same arrays
    k, sp3 = gpu._sp3
    if hall in ("air-marginal.yaml", "cdu-failure.yaml", "crah-failure.yaml"):
        assert k >= 1 and sp3 is not None, "some node was slowed: the sources' arrays were taken"
    if k >= 0 and sp3 is not None:  # the speed sources' arrays kept: still the cluster's
        live = list(model.cluster.speed_caps.values())
        assert k == len(live) and all(x is y for x, y in zip(sp3, live))
