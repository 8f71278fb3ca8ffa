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


# --- item 8: one report names every problem of a scenario -----------------------------------------------------

BAD_IN_ONE_ROUND = """\
name: bad
horizon_days: 30
cluster:
  racks: 2
  nodes_per_rack: 4
  node:
    gpus: 8
    parts:
      gpu: {count: 8, failure: {mtbf_h: 5000}, repair: {time: {dist: fixed, value_h: 2}, crew: techs}}
maintenance:
  crews:
    technicians: {count: 1, shift: allday}
  detection: {dist: fixed, value_h: -1}
workload:
  jobs:
    - {name: big, gpus: 512, work_h: 100, checkpoint: {interval_h: 2, size_gb: 10, mode: sync}}
  storage: {write_gb_per_s: 100, read_gb_per_s: 200, bogus: 1}
cooling:
  type: air
  ambient: {csv: {file: nowhere.csv}}
"""


def test_schema_errors_and_the_checks_across_fields_in_one_report(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Three schema errors, a crew pool no one provides, a job larger than the cluster and a missing
    data file: all six in the first report (they took four rounds of fixing), each with its path, and
    a hint naming what the checks across fields ran without."""
    path = tmp_path / "bad.yaml"
    path.write_text(BAD_IN_ONE_ROUND)
    assert main(["run", str(path), "--dry-run"]) == 2
    err = capsys.readouterr().err.splitlines()
    errors = [x for x in err if x.startswith("error: ")]
    fields = [x.split(": ")[2] for x in errors]
    assert fields == ["maintenance.detection.value_h", "maintenance.crews.technicians.shift", "workload.storage.bogus",
                      "cluster.node.parts.gpu.repair.crew", "workload.jobs.0.gpus", "cooling.ambient.csv.file"], err
    assert "needs 64 nodes but only 8 are schedulable" in errors[4]
    (hint,) = [x for x in err if x.startswith("hint: ")]
    assert "cluster.node.parts.gpu.repair.crew, workload.jobs.0.gpus: found by checks across fields" in hint
    assert "maintenance.detection" in hint and "workload.storage.bogus" in hint
    # fixed, the same file has exactly the problems that report named beyond the schema's
    fixed = BAD_IN_ONE_ROUND.replace("shift: allday", "shift: 24x7").replace("value_h: -1", "value_h: 1")
    path.write_text(fixed.replace(", bogus: 1", "").replace("  ambient: {csv: {file: nowhere.csv}}\n", ""))
    assert main(["run", str(path), "--dry-run"]) == 2
    again = [x.split(": ")[2] for x in capsys.readouterr().err.splitlines() if x.startswith("error: ")]
    assert again == ["cluster.node.parts.gpu.repair.crew", "workload.jobs.0.gpus"]


def test_a_value_left_out_does_not_invent_an_error_in_its_own_object(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A PSU count beyond its bound, left out for the second round, would make ``required: 4`` exceed
    the default count of 1: not reported (it is an effect of leaving the count out)."""
    bad = ROOT / "tests" / "data" / "bad" / "part-count-beyond-bound.yaml"
    assert main(["run", str(bad), "--dry-run"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "cluster.node.parts.psu.count" in err[0], err


# --- item 11: the comparison report ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cooling_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """air, evaporative and liquid on a small cluster: evaporative equals air on availability in every
    replication, liquid's GPUs run ~25 °C cooler, the fabric is the same for all three."""
    root = tmp_path_factory.mktemp("cooling")
    sc = [str(ROOT / "scenarios" / f"{x}.yaml") for x in ("air", "evaporative", "liquid")]
    assert main(["compare", *sc, *SMALL, "--set", "horizon_days=10", "--reps", "2", "--results", str(root),
                 "--quiet"]) == 0
    (folder,) = (root / "compare").iterdir()
    return (folder / "report.html").read_text(), folder


def _charts(text: str) -> list[tuple[str, str]]:
    """(title, the chart's Plotly call) of every interactive chart of a report."""
    out = []
    for chunk in text.split('<div class="chart"')[1:]:
        i = chunk.index("Plotly.newPlot(")
        call = chunk[i:chunk.index("</script>", i)]
        title = re.search(r'"title":\{"text":"([^"]*)"', call)
        out.append((json.loads(f'"{title.group(1)}"') if title else "", call))
    return out


def test_report_opens_with_the_summary_and_forest_plots_and_collapses_long_tables(
        cooling_report: tuple[str, Path]) -> None:
    text, _ = cooling_report
    summary, forest = text.index('id="decision-summary"'), text.index("<h2>Forest plots by group</h2>")
    first_table = text.index("<table")
    assert summary < forest < first_table  # the forest plots came after ~5,800 px of tables
    for title in ("Winners", "Metrics by group", "All paired differences"):
        assert re.search(rf"<details><summary>{title}", text), title
    # every table with more than 12 rows is inside a collapsed section
    depth, pos = 0, 0
    for m in re.finditer(r"<details>|</details>|<table>.*?</table>", text, re.S):
        if m.group(0) == "<details>":
            depth += 1
        elif m.group(0) == "</details>":
            depth -= 1
        elif m.group(0).count("<tr>") > 13:
            assert depth > 0, m.group(0)[:200]
        pos = m.end()
    assert pos > 0


def test_report_shows_temperature_differences_in_degrees_never_percent(cooling_report: tuple[str, Path]) -> None:
    text, _ = cooling_report
    charts = _charts(text)
    temps = [(t, c) for t, c in charts if "GPU temperature" in c]
    assert temps, [t for t, _ in charts]
    for title, call in temps:
        assert "°C" in title and "% of" not in title, title
        assert "relative:" not in call and "% of" not in call
    for title, call in charts:  # and no percent-scale panel holds a temperature
        if "% of" in title:
            assert "GPU temperature" not in call, title


def test_report_omits_an_all_zero_panel_and_explains_identical_options(cooling_report: tuple[str, Path]) -> None:
    import pandas as pd

    from twin.report.metrics import find

    text, folder = cooling_report
    paired = pd.read_parquet(folder / "paired.parquet")
    net = paired[[(find(m) is not None and find(m).group == "network") for m in paired.metric]]  # type: ignore[union-attr]
    assert len(net) and (net[["diff", "ci_low", "ci_high"]].to_numpy() == 0).all()  # the case: all zeros
    titles = [t for t, _ in _charts(text)]
    assert not any(t.startswith("network") for t in titles), titles
    assert "Network: every metric is identical for every option in every replication (no panel)." in text
    avail = paired[(paired.variant == "evaporative") & (paired.metric == "node_availability")].iloc[0]
    assert avail["diff"] == 0 and avail.std_diff == 0
    assert re.search(r"evaporative is identical to air in every replication on \d+ metrics: [^<]*node availability"
                     r"|Availability: ([^<]*node availability|every metric is) identical for every option", text)
    why = re.search(r"Why identical: under common random numbers [^<]*", text)
    assert why is not None and "evaporative differs from air in cooling.air.evaporative" in why.group(0)
