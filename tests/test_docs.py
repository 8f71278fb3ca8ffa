"""Documentation kept in sync with the code, and every bundled scenario loads and runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from twin.docs import OUT, OUT_METRICS, OUT_OUTPUTS, render, render_metrics, render_outputs
from twin.report.metrics import missing
from twin.scenario import load_scenario
from twin.sim import run_replication

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = sorted(p for p in (ROOT / "scenarios").glob("*.yaml"))


def test_scenario_reference_is_up_to_date() -> None:
    assert OUT.read_text() == render(), "docs/scenario-reference.md is stale: run `python -m twin.docs`"


def test_outputs_reference_is_up_to_date() -> None:
    assert OUT_OUTPUTS.read_text() == render_outputs(), "docs/outputs-reference.md is stale: run `python -m twin.docs`"


def test_metrics_reference_is_up_to_date() -> None:
    assert OUT_METRICS.read_text() == render_metrics(), "docs/metrics-reference.md is stale: run `python -m twin.docs`"


def test_every_schema_field_is_documented() -> None:
    text = render()
    assert "| `horizon_days` |" in text and "| `hot_spares` |" in text and "| `mtbf_h`" not in text


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_every_bundled_scenario_loads_and_runs_briefly(path: Path) -> None:
    loaded = load_scenario(path, ["horizon_days=3"])
    res = run_replication(loaded.scenario, 0, loaded.hash)
    assert 0.0 <= res.metrics["node_availability"] <= 1.0
    gaps = missing(res.metrics)  # every metric a report may show is in the catalogue (issue 30)
    assert not gaps, (f"{path.name} reports metrics the catalogue does not know: {gaps}. Add a line per metric (or "
                      "per pattern: 'failures.*' for a suffix) to CATALOGUE in twin/report/metric_entries.py: "
                      "Metric(key, label, unit, direction (+1 higher better, -1 lower, 0 none), group (one of "
                      "GROUPS), format (one of FORMATS), meaning); then run `python -m twin.docs`")
