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


def test_coarsen_drops_only_publications_whose_rounded_caps_do_not_move() -> None:
    import numpy as np

    n = np.array([0, 1], dtype=np.int64)
    outputs = [
        (1.0, [(0, n, np.array([0.953, 1.0]))]),  # node 0 capped from full speed: kept (0.95)
        (2.0, [(0, n, np.array([0.951, 1.0])), (1, n, np.array([600.0, np.inf]))]),  # same 1 % bin: dropped; power kept
        (3.0, [(0, n, np.array([0.949, 1.0]))]),  # crosses into 0.94: kept
        (4.0, [(0, n, np.array([1.0, 1.0]))]),  # lifted to full speed: kept (1.0 stays 1.0)
    ]
    out, kept = bench_floor.coarsen(outputs, 0.01, 2)
    assert kept == 3
    speeds = [(t, vals) for t, items in out for kind, _, vals in items if kind == 0]
    assert [t for t, _ in speeds] == [1.0, 3.0, 4.0]
    assert np.allclose(speeds[0][1], [0.95, 1.0]) and np.allclose(speeds[1][1], [0.94, 1.0])
    assert speeds[2][1].tolist() == [1.0, 1.0]
    assert [kind for t, items in out if t == 2.0 for kind, _, _ in items] == [1]  # the power cap write stays
