"""`twin run --lifetimes` writes the simulator's own part lives in the `twin fit` format, so a fit
can be checked against the known truth of the scenario."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import yaml

from twin.cli import main
from twin.fit.data import read_lifetimes_csv
from twin.fit.api import fit_lifetimes
from twin.validation.framework import TEST_CONFIDENCE


def test_run_writes_lifetimes_that_fit_recovers(tmp_path: Path) -> None:
    doc = {
        "name": "roundtrip", "seed": 7, "horizon_days": 3 * 365,
        "cluster": {"racks": 8, "nodes_per_rack": 8, "node": {"gpus": 8, "parts": {
            "gpu": {"count": 8, "failure": {"dist": "weibull", "shape": 2.0, "scale_h": 12000.0},
                    "repair": {"time": {"dist": "fixed", "value_h": 2}}},
        }}},
        "maintenance": {"crews": {"t": {"count": 8}}},
    }
    sc = tmp_path / "roundtrip.yaml"
    sc.write_text(yaml.safe_dump(doc))
    assert main(["run", str(sc), "--results", str(tmp_path / "r"), "--quiet", "--lifetimes"]) == 0
    (csv,) = list((tmp_path / "r").rglob("lifetimes.csv"))
    df = pd.read_csv(csv)
    assert list(df.columns) == ["part", "component_id", "start_h", "end_h", "failed"]
    events = pd.read_parquet(csv.parent / "events.parquet")
    assert int(df.failed.sum()) == int((events.kind == "fail").sum())
    assert (df.end_h > df.start_h).all() and df.end_h.max() <= 3 * 365 * 24
    lives = read_lifetimes_csv(csv)
    fits, _notes = fit_lifetimes(lives, ["gpu"], level=TEST_CONFIDENCE)  # the suite's level (tests/judging.py)
    (gpu,) = fits
    assert gpu.best == "weibull"  # shape 2 with hundreds of failures
    wb = gpu.models["weibull"]
    lo, hi = wb.ci["shape"]
    assert lo <= 2.0 <= hi
    lo, hi = wb.ci["scale_h"]
    assert lo <= 12000.0 <= hi


def test_lifetimes_include_rack_parts(tmp_path: Path) -> None:
    """Rack parts' lives are written too (component ids are their rack paths), one row per failure
    plus one censored life per unit healthy at the horizon."""
    doc = {
        "name": "racklives", "seed": 3, "horizon_days": 200,
        "cluster": {"racks": 4, "nodes_per_rack": 2, "node": {"gpus": 8, "parts": {
            "gpu": {"count": 8, "failure": {"mtbf_h": 50000.0}}}},
            "rack_parts": {"tray": {"count": 3, "failure": {"mtbf_h": 400.0},
                                    "repair": {"time": {"dist": "fixed", "value_h": 2}}}}},
        "maintenance": {"crews": {"t": {"count": 8}}},
    }
    sc = tmp_path / "racklives.yaml"
    sc.write_text(yaml.safe_dump(doc))
    assert main(["run", str(sc), "--results", str(tmp_path / "r"), "--quiet", "--lifetimes"]) == 0
    (csv,) = list((tmp_path / "r").rglob("lifetimes.csv"))
    df = pd.read_csv(csv)
    events = pd.read_parquet(csv.parent / "events.parquet")
    tray_fails = int(((events.kind == "fail") & events.path.astype(str).str.contains(r"\.tray\d+$")).sum())
    trays = df[df.part == "tray"]
    assert tray_fails > 50 and int(trays.failed.sum()) == tray_fails
    assert set(trays.component_id) == {f"hall.rack{r:02d}.tray{k}" for r in range(4) for k in range(3)}
    assert int(df.failed.sum()) == int((events.kind == "fail").sum())  # gpu and tray failures, nothing lost
    # fit them back into a scenario: the tray's law lands under cluster.rack_parts, where the base has it
    into = tmp_path / "fitted.yaml"
    assert main(["fit", str(csv), "--out", str(tmp_path / "fit"), "--into", str(into), "--base", str(sc)]) == 0
    fitted = yaml.safe_load(into.read_text())
    assert set(fitted["cluster"]["rack_parts"]) == {"tray"}
    assert "tray" not in fitted["cluster"].get("node", {}).get("parts", {})
    from twin.scenario.loader import load_scenario

    tray = load_scenario(into).scenario.cluster.rack_parts["tray"]
    assert tray.count == 3 and 300.0 < tray.failure.mean() < 530.0  # truth 400 h, ~300 failures
