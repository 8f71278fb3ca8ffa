"""`twin warm-cache` (issue 41 item 2): the kernels a scenario uses compiled into the JIT cache ahead of the runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from twin.cli import main
from twin.warm_cache import cache_folder, cached_kernels

ROOT = Path(__file__).resolve().parents[1]


def test_a_thermal_hall_leaves_its_kernels_in_the_cache(capsys: pytest.CaptureFixture[str]) -> None:
    """After the command, the cache folder holds the air hall's update kernel, whether this process compiled it
    or found it there; the report names the folder and writes no results."""
    code = main(["warm-cache", str(ROOT / "scenarios" / "air.yaml"), "--days", "1"])
    out = capsys.readouterr().out
    assert code == 0
    folder = cache_folder()
    assert folder in out
    assert "1 days simulated" in out
    assert any(name.startswith("kernels_units.update_nodes-") for name in cached_kernels(folder))
    assert ("compiled" in out) != ("nothing to compile" in out)


def test_a_scenario_without_thermal_compiles_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    before = cached_kernels(cache_folder())
    assert main(["warm-cache", str(ROOT / "scenarios" / "baseline.yaml"), "--days", "1"]) == 0
    assert "nothing to compile" in capsys.readouterr().out
    assert cached_kernels(cache_folder()) == before


def test_cached_kernels_reads_index_files_only(tmp_path: Path) -> None:
    (tmp_path / "kernels_units.update_nodes-641.py311.nbi").write_bytes(b"")
    (tmp_path / "kernels_units.update_nodes-641.py311.1.nbc").write_bytes(b"")
    (tmp_path / "other.f-1.py311.nbi").write_bytes(b"")
    assert set(cached_kernels(str(tmp_path))) == {"kernels_units.update_nodes-641.py311.nbi"}
    assert cached_kernels(str(tmp_path / "missing")) == {}


@pytest.mark.parametrize("days", ["0", "-1", "nan", "400"])
def test_bad_days_is_a_one_line_input_error(days: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["warm-cache", str(ROOT / "scenarios" / "baseline.yaml"), "--days", days]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--days" in err[0] and "366" in err[0]


def test_a_missing_scenario_is_an_input_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["warm-cache", str(tmp_path / "nope.yaml")]) == 2
    assert "nope.yaml" in capsys.readouterr().err
