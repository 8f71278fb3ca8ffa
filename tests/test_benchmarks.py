"""The benchmark gate logic (no timing here: performance is measured by benchmarks/, issue 10)."""

from __future__ import annotations

import json

from benchmarks.run import BASELINE, FULL_ONLY, TARGETS, gate, met


def test_gate_is_twice_the_target_when_the_recorded_run_meets_it() -> None:
    assert gate("x", 1.2, "le", {"x": 1.1}) == (2.4, "2x target")
    assert gate("x", 1.8, "ge", {"x": 1.9}) == (0.9, "2x target")
    assert gate("x", 1.2, "le", {}) == (2.4, "2x target")


def test_gate_follows_the_recorded_value_while_the_target_is_open() -> None:
    limit, why = gate("x", 3.0, "le", {"x": 14.0})
    assert limit == 28.0 and "not met" in why
    limit, why = gate("x", 3.0, "le", {"x": 5.8})  # near twice the target: no flaky gate at 6
    assert limit == 11.6
    limit, why = gate("x", 1.8, "ge", {"x": 1.2})
    assert limit == 0.6 and "not met" in why
    # never below twice the target
    for rec in (3.01, 4.0, 100.0):
        assert gate("x", 3.0, "le", {"x": rec})[0] >= 6.0


def test_met_directions() -> None:
    assert met(2.9, 3.0, "le") and not met(3.1, 3.0, "le")
    assert met(1.9, 1.8, "ge") and not met(1.7, 1.8, "ge")


def test_recorded_baseline_covers_the_quick_targets() -> None:
    """The committed baseline holds a quick run with every target metric the quick mode measures."""
    base = json.loads(BASELINE.read_text())
    quick = base["quick"]["results"]
    for metric, _, _ in TARGETS:
        if metric.startswith(FULL_ONLY):
            continue  # full run only
        assert metric in quick, metric
