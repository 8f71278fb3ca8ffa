"""`twin run --lifetimes` writes the simulator's own part lives in the `twin fit` format, so a fit
can be checked against the known truth of the scenario."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import yaml

from twin.cli import main
from twin.fit.data import read_lifetimes_csv
from twin.fit.api import fit_lifetimes


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
    fits, _notes = fit_lifetimes(lives, ["gpu"], level=0.99)  # one run: judge at 99 %
    (gpu,) = fits
    assert gpu.best == "weibull"  # shape 2 with hundreds of failures
    wb = gpu.models["weibull"]
    lo, hi = wb.ci["shape"]
    assert lo <= 2.0 <= hi
    lo, hi = wb.ci["scale_h"]
    assert lo <= 12000.0 <= hi
