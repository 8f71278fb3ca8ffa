"""The metric catalogue (issue 30, item 2): every metric is known, labelled and printed without
scientific notation; comparisons take their direction from it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from twin.experiment import stats
from twin.report import metrics as M

ROOT = Path(__file__).resolve().parent.parent
SCI = re.compile(r"\d[eE][+-]?\d")


def _golden_keys() -> set[str]:
    cases = json.loads((ROOT / "tests" / "golden" / "fingerprints.json").read_text())["cases"]
    return {k for c in cases.values() for k in c["metrics"]}


def test_every_recorded_metric_is_catalogued() -> None:
    """Every metric of the golden cases (every bundled model path) has an entry; the test of every
    bundled scenario (tests/test_docs.py) checks the metrics of the current code the same way."""
    gaps = M.missing(_golden_keys())
    assert not gaps, (f"metrics missing from the catalogue: {gaps}. Add Metric(key, label, unit, direction, group, "
                      "format, meaning) lines to CATALOGUE in twin/report/metric_entries.py, then `python -m twin.docs`")


def test_a_new_metric_fails_with_what_to_add() -> None:
    assert M.missing(["node_availability", "failures.gpu", "cooling.new_thing_h"]) == ["cooling.new_thing_h"]
    with pytest.raises(M.UnknownMetric):
        M.lookup("cooling.new_thing_h")


def test_patterns_match_one_suffix_only() -> None:
    assert M.label("failures.gpu") == "failures: gpu"
    assert M.label("thermal.trips.no_fan") == "thermal trips: no fan"
    assert M.find("failures.gpu.extra") is None
    assert M.label("goodput.useful") == "goodput: useful work" and M.direction("goodput.useful") == 1
    assert M.direction("goodput.down") == -1


@pytest.mark.parametrize("key", sorted(_golden_keys()))
def test_stats_direction_is_the_catalogue(key: str) -> None:
    assert stats.direction(key) == M.lookup(key).direction


def test_directions_that_keywords_got_wrong() -> None:
    """Guessing the direction from words in the key made lost speed better and free cooling worse."""
    assert stats.direction("thermal.speed_loss_gpu_hours") == -1
    assert stats.direction("energy.free_cooling_hours.air") == 1
    assert stats.direction("thermal.gpu_temp_p99_c") == -1
    assert stats.direction("power.utility_outages") == -1


@pytest.mark.parametrize("key,x,delta,want", [
    ("cost.total", 1.72851e7, False, "17.29 M USD"),
    ("cost.capital_purchase", -1.39992e6, True, "−1.4 M USD"),
    ("cost.per_useful_gpu_hour", 2.41349, False, "2.413 USD"),
    ("cost.capital_purchase", 913_600.0, True, "+913.6 k USD"),
    ("cost.labour", 12_345.0, False, "12.35 k USD"),
    ("useful_gpu_hours", 12_345.0, False, "12.35 k GPU-h"),
    ("node_availability", 0.999095, False, "99.91 %"),
    ("node_availability", -0.0012, True, "−0.12 pp"),
    ("energy.it_kwh", 1.7e7, False, "17 GWh"),
    ("useful_gpu_hours", 1234567.0, False, "1.235 M GPU-h"),
    ("failures.gpu", 12.35, False, "12.35 failures"),
    ("node_down_hours", 1234.0, False, "1,234 node-h"),
    ("power.peak_w", 2.3e6, False, "2.3 MW"),
    ("thermal.gpu_temp_max_c", 81.234, False, "81.23 °C"),
    ("pue", 1.2345, False, "1.234"),
])
def test_format_value(key: str, x: float, delta: bool, want: str) -> None:
    assert M.format_value(key, x, "USD", delta) == want


@pytest.mark.parametrize("x", [1e-12, 3.3e-7, 1.72851e7, 9.99e15, -4.2e9, 123456789.0])
def test_no_scientific_notation(x: float) -> None:
    for key in ("cost.total", "energy.it_kwh", "node_down_hours", "failures", "useful_gpu_hours", "pue"):
        for d in (False, True):
            s = M.format_value(key, x, "USD", d)
            assert not SCI.search(s), (key, x, s)


def test_every_group_is_in_the_reference() -> None:
    text = M.catalogue_markdown()
    for g in M.GROUPS:
        assert f"## {g}" in text
    assert "| `failures.*` |" in text
