"""`twin run` end to end on the bundled baseline: the results folder, its typed tables, reuse of
up-to-date results, --overwrite, distinct folders per resolved scenario, label clashes;
`twin schema`; and the installed console script."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

import twin
from twin import cli
from twin.scenario.loader import load_scenario

ROOT = Path(__file__).resolve().parents[1]
BASELINE_REL = "scenarios/baseline.yaml"
TABLES = ("events", "node_intervals", "tickets", "parts", "capacity")


@pytest.fixture(scope="module")
def first_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """One baseline run shared by the tests below: (results root, run folder)."""
    results = tmp_path_factory.mktemp("results")
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        code = cli.main(["run", BASELINE_REL, "--results", str(results), "--quiet"])
    finally:
        os.chdir(cwd)
    assert code == 0
    loaded = load_scenario(ROOT / BASELINE_REL)
    folder = results / "baseline" / f"{loaded.hash}-s{loaded.scenario.seed}"
    assert folder.is_dir(), list(results.rglob("*"))
    return results, folder


def test_results_folder_contents(first_run: tuple[Path, Path]) -> None:
    results, folder = first_run
    for name in ("summary.json", "summary.md", "scenario.resolved.yaml"):
        assert (folder / name).is_file(), name
    for t in TABLES:
        assert (folder / f"{t}.parquet").is_file(), t
    pngs = sorted((folder / "figures").glob("*.png"))
    assert len(pngs) >= 3
    for p in pngs:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 1000
    # no temporary folders or files left behind
    assert not [p for p in (results / "baseline").iterdir() if p.name.startswith(".")]
    assert not [p for p in folder.rglob(".*")]

    meta = json.loads((folder / "summary.json").read_text())
    loaded = load_scenario(ROOT / BASELINE_REL)
    assert meta["scenario"] == "baseline"
    assert meta["scenario_hash"] == loaded.hash
    assert meta["seed"] == loaded.scenario.seed and meta["replication"] == 0
    assert 0.9 < meta["metrics"]["node_availability"] <= 1.0
    assert meta["versions"]["twin"] == twin.__version__

    resolved = yaml.safe_load((folder / "scenario.resolved.yaml").read_text())
    assert resolved == loaded.resolved

    ev = pd.read_parquet(folder / "events.parquet")
    assert str(ev["time_h"].dtype) == "float64"
    assert isinstance(ev["kind"].dtype, pd.CategoricalDtype)
    assert str(ev["node"].dtype) == "Int32"
    assert len(ev) > 100 and ev["time_h"].is_monotonic_increasing
    assert {"fail", "node_down", "node_up"} <= set(ev["kind"].cat.categories)
    assert ev["time_h"].between(0, loaded.scenario.horizon_h).all()

    ni = pd.read_parquet(folder / "node_intervals.parquet")
    assert (ni["end_h"] >= ni["start_h"]).all()
    tickets = pd.read_parquet(folder / "tickets.parquet")
    assert len(tickets) > 0
    assert (tickets["back_h"] >= tickets["fail_h"]).all()
    parts = pd.read_parquet(folder / "parts.parquet")
    assert set(loaded.scenario.cluster.node.parts) <= set(parts["part"])
    cap = pd.read_parquet(folder / "capacity.parquet")
    assert cap["nodes_up"].max() <= loaded.scenario.cluster.n_nodes


def test_second_call_is_up_to_date_then_overwrite(first_run: tuple[Path, Path], capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    results, folder = first_run
    monkeypatch.chdir(ROOT)
    before = {p: p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()}
    capsys.readouterr()
    code = cli.main(["run", BASELINE_REL, "--results", str(results), "--quiet"])
    out, err = capsys.readouterr()
    assert code == 0
    assert "up to date" in out and str(folder) in out
    after = {p: p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()}
    assert after == before  # nothing rewritten

    summary_ino = (folder / "summary.json").stat().st_ino
    code = cli.main(["run", BASELINE_REL, "--results", str(results), "--quiet", "--overwrite"])
    out, _ = capsys.readouterr()
    assert code == 0 and "up to date" not in out
    st = (folder / "summary.json").stat()
    assert st.st_mtime_ns > before[folder / "summary.json"]
    assert st.st_ino != summary_ino  # a fresh folder was moved into place
    # same scenario and seed: same numbers
    for t in ("events", "tickets"):
        assert pd.read_parquet(folder / f"{t}.parquet").shape[0] > 0
    assert not [p for p in (results / "baseline").iterdir() if p.name.startswith(".")]


def test_other_seed_other_folder_and_label_clash(first_run: tuple[Path, Path], tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    results, folder = first_run
    monkeypatch.chdir(ROOT)
    code = cli.main(["run", BASELINE_REL, "--results", str(results), "--quiet", "--set", "seed=777"])
    assert code == 0
    other = load_scenario(ROOT / BASELINE_REL, ["seed=777"])
    other_folder = results / "baseline" / f"{other.hash}-s777"
    assert other_folder.is_dir() and other_folder != folder
    assert json.loads((other_folder / "summary.json").read_text())["seed"] == 777

    own = tmp_path / "own"
    short = ["--set", "horizon_days=30"]  # a short run: only the folder logic is under test here
    code = cli.main(["run", BASELINE_REL, "--results", str(own), "--quiet", "--label", "mine", *short])
    assert code == 0
    labelled = own / "baseline" / "mine"
    assert (labelled / "summary.json").is_file()
    stamp = (labelled / "summary.json").stat().st_mtime_ns
    capsys.readouterr()
    # the label already holds another scenario's results: refuse, one line, nothing touched
    code = cli.main(["run", BASELINE_REL, "--results", str(own), "--quiet", "--label", "mine", *short,
                     "--set", "seed=778"])
    out, err = capsys.readouterr()
    assert code == 2
    lines = err.splitlines()
    assert len(lines) == 1 and "mine" in lines[0] and "--label" in lines[0], lines
    assert (labelled / "summary.json").stat().st_mtime_ns == stamp
    # the same scenario under its label is up to date
    code = cli.main(["run", BASELINE_REL, "--results", str(own), "--quiet", "--label", "mine", *short])
    out, _ = capsys.readouterr()
    assert code == 0 and "up to date" in out
    # a label is one folder name: it may not lead out of results/<scenario>/ and replace another folder
    victim = own / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("precious")
    for bad in ("../../victim", str(victim), "..", ".hidden"):
        code = cli.main(["run", BASELINE_REL, "--results", str(own), "--quiet", "--label", bad, *short, "--overwrite"])
        _, err = capsys.readouterr()
        assert code == 2 and len(err.splitlines()) == 1 and "--label" in err, (bad, err)
    assert (victim / "keep.txt").read_text() == "precious" and sorted(p.name for p in victim.iterdir()) == ["keep.txt"]


def test_schema_prints_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["schema"]) == 0
    out, err = capsys.readouterr()
    schema = json.loads(out)
    assert schema["type"] == "object"
    assert {"name", "cluster", "horizon_days", "maintenance"} <= set(schema["properties"])
    assert "cluster" in schema.get("required", [])
    # defaults built by a function are shown too (pydantic leaves them out): a PDU's own 2 h repair
    assert schema["$defs"]["PDU"]["properties"]["repair"]["default"]["time"] == {"dist": "fixed", "value_h": 2.0}
    assert schema["properties"]["maintenance"]["default"]["crews"]["technicians"]["count"] >= 1


def _console_script() -> list[str]:
    exe = Path(sys.executable).parent / "twin"
    if exe.is_file():
        return [str(exe)]
    found = shutil.which("twin")
    if found:
        return [found]
    return [sys.executable, "-m", "twin.cli"]


def test_console_script_version() -> None:
    proc = subprocess.run(_console_script() + ["--version"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"twin {twin.__version__}"
    # and the module form gives the same, with exit code 2 for a bad scenario path
    proc = subprocess.run([sys.executable, "-m", "twin.cli", "run", "no/such/file.yaml"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert len(proc.stderr.splitlines()) == 1 and "no/such/file.yaml" in proc.stderr


def test_edited_data_file_is_another_scenario(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A data file's contents are part of the scenario hash: after editing an empirical repair-time
    CSV, `twin run` recomputes (into another folder) instead of reporting the old results as up to
    date, and the hash records the file's digest."""
    (tmp_path / "repair.csv").write_text("hours\n1.0\n2.0\n3.0\n")
    scen = tmp_path / "s.yaml"
    scen.write_text(f"extends: {ROOT / BASELINE_REL}\nname: datafile\nhorizon_days: 30\n"
                    "cluster: {node: {parts: {gpu: {repair: {time: {dist: empirical, file: repair.csv}}}}}}\n")
    results = tmp_path / "results"
    args = ["run", str(scen), "--results", str(results), "--quiet", "--allow-path", str(ROOT)]
    first = load_scenario(scen, allow=[ROOT])
    assert list(first.data_files) == ["cluster.node.parts.gpu.repair.time.file"]
    assert cli.main(args) == 0
    capsys.readouterr()
    assert cli.main(args) == 0
    assert "up to date" in capsys.readouterr().out

    (tmp_path / "repair.csv").write_text("hours\n10.0\n20.0\n30.0\n")  # same name, other contents
    second = load_scenario(scen, allow=[ROOT])
    assert second.resolved == first.resolved and second.hash != first.hash
    assert cli.main(args) == 0
    assert "up to date" not in capsys.readouterr().out
    runs = {p.name: json.loads((p / "summary.json").read_text()) for p in (results / "datafile").iterdir()}
    assert set(runs) == {f"{first.hash}-s{first.scenario.seed}", f"{second.hash}-s{second.scenario.seed}"}
    mttr = {name: s["metrics"].get("repair.hands_on_h") for name, s in runs.items()}
    assert len(set(mttr.values())) == 2, mttr  # the two folders hold different results


def test_results_of_another_twin_version_are_recomputed(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """`twin run` reports results as up to date only when this twin version made them."""
    monkeypatch.chdir(ROOT)
    args = ["run", BASELINE_REL, "--results", str(tmp_path), "--quiet", "--set", "horizon_days=30"]
    monkeypatch.setattr(twin, "__version__", "0.0.old")
    assert cli.main(args) == 0
    monkeypatch.undo()
    monkeypatch.chdir(ROOT)
    (folder,) = (tmp_path / "baseline").iterdir()
    assert json.loads((folder / "summary.json").read_text())["versions"]["twin"] == "0.0.old"
    capsys.readouterr()
    assert cli.main(args) == 0
    out = capsys.readouterr().out
    assert "up to date" not in out and "0.0.old" in out and "recomputing" in out
    assert json.loads((folder / "summary.json").read_text())["versions"]["twin"] == twin.__version__
    assert cli.main(args) == 0
    assert "up to date" in capsys.readouterr().out


def test_another_replication_is_another_run(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """--replication 3 of an up-to-date scenario is computed into its own folder (it was reported as
    up to date with replication 0's numbers); a label holding another replication is refused."""
    monkeypatch.chdir(ROOT)
    args = ["run", BASELINE_REL, "--results", str(tmp_path), "--quiet", "--set", "horizon_days=30"]
    assert cli.main(args) == 0
    capsys.readouterr()
    assert cli.main([*args, "--replication", "3"]) == 0
    assert "up to date" not in capsys.readouterr().out
    folders = {p.name: json.loads((p / "summary.json").read_text())["replication"]
               for p in (tmp_path / "baseline").iterdir()}
    assert sorted(folders.values()) == [0, 3] and any(n.endswith("-r3") for n in folders)
    assert cli.main([*args, "--label", "mine"]) == 0
    capsys.readouterr()
    assert cli.main([*args, "--label", "mine", "--replication", "3"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "replication 0" in err[0], err
