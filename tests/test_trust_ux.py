"""What new users stumbled on (issue 39, items 7 to 12): a horizon that hides a scheduled mechanism,
validation that reports in one round, the guide's scenario excerpt, units and labels, the HTML report's
order and its temperature differences, and a CSV export of result tables."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from twin.cli import main
from twin.scenario import load_scenario
from twin.scenario.advice import advise
from twin.scenario.loader import load_dict

ROOT = Path(__file__).resolve().parent.parent


# --- item 9: the guide's excerpt of baseline.yaml is the bundled file's ------------------------------------


def _guide_excerpt() -> dict[str, Any]:
    text = (ROOT / "docs" / "guide" / "scenarios.md").read_text()
    block = re.search(r"```yaml\n(name: baseline.*?)```", text, re.S)
    assert block is not None, "docs/guide/scenarios.md lost its excerpt of scenarios/baseline.yaml"
    doc = yaml.safe_load(block.group(1))
    assert isinstance(doc, dict)
    return doc


def _leaves(doc: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    if isinstance(doc, dict):
        return [leaf for k, v in doc.items() for leaf in _leaves(v, path + (str(k),))]
    return [(path, doc)]


def test_guide_excerpt_matches_baseline() -> None:
    """Every value the guide's excerpt shows is the bundled file's (the excerpt once showed 16 racks of
    8 nodes where the file has 32 of 4), and the excerpt, loaded as a scenario, raises no rack advisory."""
    excerpt = _guide_excerpt()
    base = yaml.safe_load((ROOT / "scenarios" / "baseline.yaml").read_text())
    for path, value in _leaves(excerpt):
        if path == ("workload",):  # "..." stands for the section, shown on its own page
            continue
        here: Any = base
        for key in path:
            assert isinstance(here, dict) and key in here, f"{'.'.join(path)} is not in scenarios/baseline.yaml"
            here = here[key]
        assert here == value, f"{'.'.join(path)}: the guide shows {value!r}, scenarios/baseline.yaml has {here!r}"
    excerpt.pop("workload")
    sc = load_dict(excerpt, "docs/guide/scenarios.md").scenario
    assert [a for a in advise(sc) if a.field.startswith("cluster.")] == []
    assert sc.cluster.n_nodes == load_scenario(ROOT / "scenarios" / "baseline.yaml").scenario.cluster.n_nodes


# --- item 7: a horizon shorter than a scheduled mechanism's period ------------------------------------------

SMALL_POWER = ["--set", "horizon_days=90", "--set", "cluster.racks=2", "--set", "workload.jobs.0.gpus=32"]


def test_short_compare_of_power_scenarios_warns_that_the_horizon_hides_maintenance(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A 90-day compare of two power scenarios whose UPS, generator and switchboard are maintained
    yearly (first visit at 4,380 h) holds no maintenance window: the summary warns, and never claims
    that more replications would not separate the options."""
    sc = [str(ROOT / "scenarios" / f"power-{x}.yaml") for x in ("n", "n1")]
    code = main(["compare", *sc, *SMALL_POWER, "--reps", "3", "--results", str(tmp_path), "--quiet", "--no-report",
                 "--objective", "node_availability"])
    out = capsys.readouterr().out
    assert code == 0
    flat = " ".join(out.split())
    assert "Warning: the 90-day horizon is shorter than the period of the UPS maintenance windows" in flat
    assert "more replications are not expected" not in flat
    (folder,) = (tmp_path / "compare").iterdir()
    d = json.loads((folder / "decision-summary.json").read_text())
    fields = {h["field"] for h in d["horizon_hides"]}
    assert {"power.ups.maintenance.interval_h", "power.generator.maintenance.interval_h",
            "power.switchboard.maintenance.interval_h"} <= fields
    # the dry run of either scenario says so too, as an advisory naming the field
    assert main(["run", sc[0], *SMALL_POWER, "--dry-run"]) == 0
    adv = [x for x in capsys.readouterr().out.splitlines() if x.startswith("advice: power.ups.maintenance")]
    assert len(adv) == 1 and "none falls within it (the first at 4,380 h" in adv[0]


def test_a_zero_difference_over_a_hiding_horizon_is_not_called_final() -> None:
    """The sentence for a zero mean difference that is not identical in every replication: with a
    hidden mechanism it says a longer horizon may separate the options, not that nothing will."""
    from twin.report.summary import objective_paragraph

    e = {"metric": "node_availability", "direction": 1, "means": {"a": 0.99, "b": 0.99}, "replications": 5,
         "pairs_tested": 1, "level": 0.95, "lead": "a", "recommended": None, "all_identical": False,
         "replications_needed": None, "runner_up": "b",
         "pairs": [{"other": "b", "resolved": False, "diff": 0.0, "ci_low": -1e-4, "ci_high": 1e-4, "sd": 1e-4}]}
    hides = [{"field": "power.ups.maintenance.interval_h", "what": "UPS maintenance windows", "horizon_days": 90,
              "needed_days": 365, "text": "..."}]
    assert any("not expected to separate" in s for s in objective_paragraph(e, "USD"))
    text = " ".join(objective_paragraph(e, "USD", None, hides))
    assert "not expected to separate" not in text and "a longer horizon may" in text


def test_horizon_advice_only_when_the_horizon_is_shorter_than_the_period() -> None:
    from twin.scenario.horizon import hidden

    full = load_scenario(ROOT / "scenarios" / "power-n.yaml").scenario
    assert hidden(full) == []  # a year holds the yearly windows (the first at half a year)
    short = load_scenario(ROOT / "scenarios" / "power-n.yaml", ["horizon_days=200"]).scenario
    ups = [h for h in hidden(short) if h.field == "power.ups.maintenance.interval_h"]
    assert len(ups) == 1 and not ups[0].none_seen and ups[0].needed_days == 365  # the first (4,380 h) is inside
    late = load_scenario(ROOT / "scenarios" / "power-n.yaml", ["horizon_days=400", "power.ups.maintenance.offset_h=9700"])
    ups = [h for h in hidden(late.scenario) if h.field == "power.ups.maintenance.interval_h"]
    assert len(ups) == 1 and ups[0].none_seen  # longer than the interval, but the first visit is beyond it


# --- item 10: units and labels --------------------------------------------------------------------------------

SMALL = ["--set", "cluster.racks=2", "--set", "workload.jobs.0.gpus=32"]


def test_run_prints_costs_in_the_currency_and_the_pue_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = str(ROOT / "scenarios" / "baseline.yaml")
    assert main(["run", base, *SMALL, "--set", "horizon_days=3", "--results", str(tmp_path), "--quiet"]) == 0
    rows = {line[:38].strip(): line[38:].strip() for line in capsys.readouterr().out.splitlines()
            if line.startswith("  ")}
    assert rows["total cost over the horizon"].endswith(" USD")
    assert rows["cost per useful GPU-hour"].endswith(" USD")
    pue = [k for k in rows if k.startswith("PUE")]
    assert pue == ["PUE"] and rows["PUE"].count("flat") == 1 and rows["PUE"].count("no cooling section") == 1
    assert main(["run", base, *SMALL, "--set", "horizon_days=3", "--set", "costs.currency=EUR",
                 "--results", str(tmp_path), "--quiet"]) == 0
    assert "total cost over the horizon         " in (out := capsys.readouterr().out) and " EUR\n" in out


def test_energy_columns_name_no_unit_their_values_do_not_carry(capsys: pytest.CaptureFixture[str]) -> None:
    """The compare/montecarlo table printed 'IT energy (kWh)' over values of 17.29 GWh."""
    import pandas as pd

    from twin.experiment.cli import summary_table
    from twin.report.metrics import label_with_unit

    summ = pd.DataFrame({"metric": ["energy.it_kwh"], "mean": [1.729e7], "ci_low": [1.7e7], "ci_high": [1.75e7],
                         "p5": [1.7e7], "p50": [1.73e7], "p95": [1.75e7]})
    lines: list[str] = []
    summary_table(summ, ["energy.it_kwh"], lines.append, "USD")
    row = lines[1]
    assert "GWh" in row and "kWh" not in row, row
    assert label_with_unit("energy.it_kwh") == "IT energy (kWh)"  # an axis of raw values keeps its unit


def test_sweep_numbers_points_from_zero_everywhere_and_whole_numbers_print_whole(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from twin.experiment.summary import value_text

    base = str(ROOT / "scenarios" / "baseline.yaml")
    assert main(["sweep", base, *SMALL, "--set", "horizon_days=2", "--param", "maintenance.crews.technicians.count=1,2",
                 "--reps", "2", "--results", str(tmp_path), "--quiet", "--no-report"]) == 0
    cap = capsys.readouterr()
    progress = [x for x in (cap.out + cap.err).splitlines() if x.startswith("point ") and "of 2)" in x]
    assert [x.split(":")[0] for x in progress] == ["point 0 (1 of 2)", "point 1 (2 of 2)"]
    (folder,) = (tmp_path / "baseline").glob("sweep-*")
    d = json.loads((folder / "decision-summary.json").read_text())
    assert d["options"] == ["point 0 (maintenance.crews.technicians.count=1)",
                            "point 1 (maintenance.crews.technicians.count=2)"]
    assert value_text(4.0) == "4" and value_text(0.25) == "0.25" and value_text("x") == "x"


# --- item 12: CSV export of result tables ---------------------------------------------------------------------


def test_export_writes_every_table_as_csv_with_the_parquet_values(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import pandas as pd

    import twin.experiment.export as export

    base = str(ROOT / "scenarios" / "baseline.yaml")
    assert main(["run", base, *SMALL, "--set", "horizon_days=2", "--results",
                 str(tmp_path / "r"), "--quiet"]) == 0
    (run,) = [p for p in (tmp_path / "r").glob("*/*") if (p / "summary.json").is_file()]
    capsys.readouterr()
    assert main(["export", str(run)]) == 0
    out = capsys.readouterr().out
    tables = sorted(run.glob("*.parquet"))
    assert len(tables) >= 5 and out.count("csv: ") == len(tables)
    for t in tables:
        pq, csv = pd.read_parquet(t), pd.read_csv(run / "csv" / f"{t.stem}.csv")
        assert list(csv.columns) == list(pq.columns) and len(csv) == len(pq), t.stem
        for c in pq.columns:
            if pd.api.types.is_float_dtype(pq[c]):  # full precision: the same floats back
                assert ((csv[c] == pq[c]) | (csv[c].isna() & pq[c].isna())).all(), (t.stem, c)
    # only the tables asked for, elsewhere; a failure half-way leaves the earlier file whole and no temporary
    dest = tmp_path / "sheets"
    assert main(["export", str(run), "--table", "parts", "--out", str(dest)]) == 0
    assert sorted(p.name for p in dest.iterdir()) == ["parts.csv"]
    before = (dest / "parts.csv").read_bytes()
    real = pd.DataFrame.to_csv

    def broken(self: pd.DataFrame, path: Any, **kw: Any) -> None:
        real(self.head(1), path, **kw)  # half a file on disk, then the disk fills
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pd.DataFrame, "to_csv", broken)
    assert main(["export", str(run), "--table", "parts", "--out", str(dest)]) == 2
    assert (dest / "parts.csv").read_bytes() == before and sorted(p.name for p in dest.iterdir()) == ["parts.csv"]
    monkeypatch.undo()
    assert main(["export", str(tmp_path / "r")]) == 2  # not a results folder
    assert "not a twin results folder" in capsys.readouterr().err
    assert export.SPREADSHEET_ROWS == 1_048_576


def test_export_keeps_a_formula_like_name_as_text() -> None:
    import pandas as pd

    from twin.experiment.export import _text_safe

    df = pd.DataFrame({"variant": ["=HYPERLINK(\"x\")", "air", "+1", "-2", "@a"], "x": [1.0, 2.0, 3.0, 4.0, 5.0]})
    safe = _text_safe(df)
    assert list(safe.variant) == ["'=HYPERLINK(\"x\")", "air", "'+1", "-2", "'@a"]
    assert list(safe.x) == [1.0, 2.0, 3.0, 4.0, 5.0]
