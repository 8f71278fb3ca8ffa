"""``twin sensitivity --assumptions`` (issue 46): every value taken on assumption is screened between
its stated range, and an assumption that moves the decision's metric beyond its paired CI without a
range in the scenario's ``uncertainty:`` section fails the check."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from twin.cli import main
from twin.experiment.assumptions import _RANGE, assumptions, param_exprs
from twin.scenario import load_dict

from test_uncertainty_decide import tiny

SUCCESS = "cluster.node.parts.gpu.repair.ladder.replace_success"


@pytest.mark.parametrize("text, want", [("assumption, range 0.05–0.15.", (0.05, 0.15)),
                                        ("range 25 to 35 °C", (25, 35)),
                                        ("assumption; range 1,000-3,000 m", (1000, 3000))])
def test_stated_ranges_are_read(text: str, want: tuple[float, float]) -> None:
    m = _RANGE.search(text)
    assert m is not None
    assert (float(m.group(1).replace(",", "")), float(m.group(2).replace(",", ""))) == want


def test_screen_takes_stated_ranges_halves_and_doubles_and_leaves_counts_out() -> None:
    ld = load_dict(tiny(), "tiny.yaml")
    a = {x.path: x for x in assumptions(ld)}
    assert SUCCESS in a and not a[SUCCESS].stated and (a[SUCCESS].low, a[SUCCESS].high) == (0.5, 2.0)
    fans = a["cluster.node.fans.exhaust_c"]  # its description states "range 40–60"
    assert fans.stated and (fans.low, fans.high) == (40.0, 60.0)
    assert "maintenance.crews.technicians.count" not in a  # a count is the design's choice


def _screen(tmp: Path, doc: dict[str, Any], code: int, capsys: pytest.CaptureFixture[str]) -> str:
    tmp.mkdir(exist_ok=True)
    path = tmp / "t.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    assert main(["sensitivity", str(path), "--assumptions", "--check-ranges", "node_availability", "--reps", "4",
                 "--no-report", "--quiet", "--results", str(tmp / "r")]) == code
    return capsys.readouterr().out


def test_a_decisive_assumption_without_a_range_fails_the_check(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """Half the GPU replacements failing (0.5 against the assumed 1.0) costs availability beyond the
    paired CI; the fan fields, which do nothing without cooling, are screened and move nothing."""
    doc = tiny()
    doc["horizon_days"] = 60
    out = _screen(tmp_path, doc, 1, capsys)
    assert f"without a range in uncertainty: {SUCCESS}" in out
    assert "cluster.node.fans.share" not in out.split("beyond the paired 95 % CI:")[1]
    doc["uncertainty"]["inputs"][SUCCESS] = {"dist": "uniform", "low": 0.5, "high": 1.0, "source": "assumption"}
    out = _screen(tmp_path / "declared", doc, 0, capsys)
    assert "without a range in uncertainty: none" in out


def test_skip_ranged_screens_only_the_assumptions_without_a_range(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """--skip-ranged leaves the declared assumptions out of the screen (they pass the check whatever they
    move) and screens the rest; the verdict on the rest is the full screen's."""
    doc = tiny()
    doc["horizon_days"] = 60
    doc["uncertainty"]["inputs"][SUCCESS] = {"dist": "uniform", "low": 0.5, "high": 1.0, "source": "assumption"}
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    ld = load_dict(doc, str(path))
    n_all = len(assumptions(ld))
    argv = ["sensitivity", str(path), "--assumptions", "--skip-ranged", "--check-ranges", "node_availability",
            "--reps", "4", "--no-report", "--quiet", "--results", str(tmp_path / "r")]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert "1 with a range in uncertainty: are left out" in err
    assert f"{n_all - 1} fields taken on assumption are screened" in err
    assert SUCCESS not in out  # not screened: no tornado row, no verdict
    assert main(["sensitivity", str(path), "--skip-ranged", "--factor", "2"]) == 2
    assert "needs --assumptions" in capsys.readouterr().err


def test_schema_refused_ends_stay_at_the_value(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(tiny(), sort_keys=False))
    ld = load_dict(tiny(), str(path))
    exprs, notes = param_exprs(str(path), [], ld)
    assert f"{SUCCESS}=0.5,1.0" in exprs  # ×2 of 1.0 is refused: that end stays at 1.0
    assert any(n.startswith(f"{SUCCESS}: 2 is refused") for n in notes)


def test_check_ranges_needs_assumptions(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(tiny(), sort_keys=False))
    assert main(["sensitivity", str(path), "--check-ranges", "node_availability", "--factor", "2"]) == 2
    assert "needs --assumptions" in capsys.readouterr().err
