"""The coupling floor's replay (benchmarks/bench_floor.py, issue 41): replaying the thermal model's recorded
outputs into a thermal-off run reproduces what they do to the jobs, so the floor's loop is the reaction to
thermal's outputs and not something else. No timing here (performance is measured by benchmarks/)."""

from __future__ import annotations

import math

from benchmarks import bench_floor

AIR = bench_floor.HALLS / "air.yaml"
SETS = ["horizon_days=30"]
OFF = SETS + ["cooling.thermal=false"]


def _metrics(model: bench_floor.Model) -> dict[str, float]:
    model.run()
    return model.result(tables=False).metrics


def test_replayed_outputs_carry_the_thermal_slowdown_and_nothing_is_replayed_when_told_not_to() -> None:
    outputs, counts = bench_floor.record(AIR, SETS)
    # every output is counted and grouped by its instant, in time order
    assert counts["speed"] > 100 and counts["it_caps"] > 100
    assert sum(len(items) for _, items in outputs) == counts["speed"] + counts["it_caps"]
    assert counts["instants"] == len(outputs) and all(a[0] < b[0] for a, b in zip(outputs, outputs[1:]))
    assert counts["updates"] > 0 and counts["wakes"] > 0
    on = _metrics(bench_floor.build(AIR, SETS))
    replayed = _metrics(bench_floor.build(AIR, OFF, outputs))
    null = _metrics(bench_floor.build(AIR, OFF, outputs, apply=False))
    off = _metrics(bench_floor.build(AIR, OFF))
    assert on["goodput.slowdown.thermal"] > 0.01  # the marginal air hall throttles
    # the replay slows the jobs as the thermal model did (its failures are the thermal-off run's: no heat
    # ageing, hence the tolerance), where the thermal-off run and the null replay are not slowed at all
    assert math.isclose(replayed["goodput.slowdown.thermal"], on["goodput.slowdown.thermal"], rel_tol=0.03)
    assert off["goodput.slowdown.thermal"] == 0.0 and null["goodput.slowdown.thermal"] == 0.0
    # the null replay changes nothing in the model (its events only)
    assert null["goodput"] == off["goodput"] and null["energy.it_kwh"] == off["energy.it_kwh"]
