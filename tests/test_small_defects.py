"""Small defects found by hostile use (issue 22, item 7): a cluster without part types, prices that
overflow, paths that are not regular files."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest

from twin import cli
from twin.scenario.costs import MAX_COST_INPUT

ROOT = Path(__file__).resolve().parents[1]
BASELINE = ROOT / "scenarios" / "baseline.yaml"


def _sets(*exprs: str) -> list[str]:
    return [x for e in exprs for x in ("--set", e)]


def test_a_cluster_without_part_types_runs(tmp_path: Path) -> None:
    """`parts: {}` is valid input (hardware that never fails: a what-if that isolates the workload or
    the facility); with no fabric either, the parts table is empty and keeps its columns, and the
    failure Pareto draws no bars (it raised KeyError 'failures', exit 3)."""
    sets = _sets("cluster.node.parts={}", "maintenance.spares={}", "network=null", "horizon_days=5")
    assert cli.main(["run", str(BASELINE), "--results", str(tmp_path), "--quiet", *sets]) == 0
    (folder,) = (tmp_path / "baseline").iterdir()
    assert (folder / "figures" / "failure_pareto.png").is_file()
    parts = pd.read_parquet(folder / "parts.parquet")
    assert len(parts) == 0 and "failures" in parts.columns


def test_run_replication_parts_table_keeps_its_columns() -> None:
    from twin.scenario.loader import load_scenario
    from twin.sim import PART_COLUMNS, run_replication

    sc = load_scenario(BASELINE, ["cluster.node.parts={}", "maintenance.spares={}", "network=null",
                                  "horizon_days=1", "workload=null"]).scenario
    res = run_replication(sc)
    assert tuple(res.tables["parts"].columns) == PART_COLUMNS and res.metrics["failures"] == 0


@pytest.mark.parametrize("field", ["costs.energy.price_per_kwh", "costs.capital.optic", "costs.parts.gpu",
                                   "costs.labour.rate_per_hour"])
def test_a_price_beyond_the_bound_is_bad_input(field: str, capsys: pytest.CaptureFixture[str]) -> None:
    """1e308 overflowed to a total cost of inf with a numpy RuntimeWarning; now it is refused (exit 2,
    one line naming the field and the bound)."""
    assert cli.main(["run", str(BASELINE), "--dry-run", *_sets(f"{field}=1e308")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and field in err and "less than or equal to" in err


def test_prices_at_the_bound_give_finite_costs(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                               recwarn: pytest.WarningsRecorder) -> None:
    bound = f"{MAX_COST_INPUT!r}"
    sets = _sets(*(f"{f}={bound}" for f in ("costs.energy.price_per_kwh", "costs.capital.optic", "costs.parts.gpu",
                                            "costs.labour.rate_per_hour", "costs.value_per_useful_gpu_hour")),
                 "horizon_days=2")
    assert cli.main(["run", str(BASELINE), "--results", str(tmp_path), "--quiet", *sets]) == 0
    out = capsys.readouterr().out
    assert "inf" not in out.split("total cost over the horizon")[1].splitlines()[0]
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


def test_a_time_of_use_price_beyond_the_bound_is_bad_input(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    tou = tmp_path / "tou.csv"
    tou.write_text("hour_of_week,price_per_kwh\n" + "".join(f"{h},{1e300 if h == 3 else 0.1}\n" for h in range(168)))
    assert cli.main(["run", str(BASELINE), "--dry-run", *_sets(f"costs.energy.time_of_use.file={tou}")]) == 2
    err = capsys.readouterr().err
    assert "row 5" in err and "price_per_kwh must be a finite number in [0, 1e+15]" in err


@pytest.mark.parametrize("kind", ["fifo", "device", "folder", "missing"])
def test_a_scenario_that_is_not_a_regular_file_says_what_it_is(kind: str, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """A FIFO or /dev/zero was reported as "not found"; now it is named for what it is (exit 2, one
    line, and the FIFO is never opened: opening it would block)."""
    path = {"device": Path("/dev/zero"), "folder": tmp_path, "missing": tmp_path / "nope.yaml"}.get(kind)
    if path is None:
        path = tmp_path / "scenario.yaml"
        os.mkfifo(path)
    assert cli.main(["run", str(path), "--dry-run"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(path) in err
    want = {"fifo": "not a regular file: a named pipe (FIFO); give a scenario file",
            "device": "not a regular file: a character device; give a scenario file",
            "folder": "is a folder, not a scenario file", "missing": "scenario file not found"}[kind]
    assert err.endswith(want), err


def test_extends_and_data_files_that_are_not_regular_files(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    os.mkfifo(tmp_path / "scenario.yaml")
    top = tmp_path / "top.yaml"
    top.write_text("extends: scenario.yaml\n")
    assert cli.main(["run", str(top), "--dry-run"]) == 2
    assert "extends: scenario.yaml: not a regular file: a named pipe (FIFO)" in capsys.readouterr().err
    assert cli.main(["run", str(BASELINE), "--dry-run", *_sets("costs.energy.time_of_use.file=/dev/zero")]) == 2
    assert "/dev/zero: not a regular file: a character device; give a time-of-use price file" in capsys.readouterr().err


@pytest.mark.parametrize("shared", [True, False])
def test_utility_outages_count_a_site_wide_outage_once(shared: bool) -> None:
    """A shared utility's outage takes both feeds of a 2N chain off utility at once: one outage,
    two feed outages (power.utility_outages counted 8 for 4 site-wide outages). Independent
    utilities: one outage per feed."""
    from twin.scenario.loader import load_scenario
    from twin.sim import run_replication

    sc = load_scenario(ROOT / "scenarios" / "power-2n.yaml",
                       ["horizon_days=730", "workload=null", "power.utility.outages_per_year=4",
                        f"power.utility.shared={str(shared).lower()}"]).scenario
    res = run_replication(sc)
    rows = res.tables["power_outages"]
    m = res.metrics
    assert m["power.feed_outages"] == len(rows) > 4
    if shared:
        assert set(rows.feed) == {"A", "B"} and rows.groupby("start_h").size().eq(2).all()
        assert m["power.utility_outages"] == rows.start_h.nunique() == len(rows) / 2
    else:
        assert m["power.utility_outages"] == len(rows)
