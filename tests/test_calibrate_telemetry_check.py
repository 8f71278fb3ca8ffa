"""The predictive check of the GPU telemetry (issue 45): the bundled example telemetry (a replication of
scenarios/examples/telemetry/cluster.yaml that no replication of the check reuses) is fitted back, and the
check accepts the true spread of thermal resistance and flags three times the truth as inconsistent."""

from __future__ import annotations

import glob
from datetime import timezone
from pathlib import Path

import pandas as pd
import pytest

from twin import cli
from twin.calibrate.check import run_check
from twin.calibrate.gather import Calibration, calibrate
from twin.calibrate.telemetry import Telemetry, read_inlet, read_nvidia_smi, read_prometheus_json
from twin.calibrate.thermal_fit import fit_thermal, target
from twin.scenario.loader import load_scenario

ROOT = Path(__file__).resolve().parents[1]
EX = ROOT / "scenarios" / "examples" / "telemetry"


@pytest.fixture(scope="module")
def cal() -> Calibration:
    tel = Telemetry(read_inlet([str(EX / "inlet.csv.gz")], timezone.utc))
    for p in sorted(glob.glob(str(EX / "nvidia-smi" / "*.csv.gz"))):
        read_nvidia_smi(p, timezone.utc, tel)
    read_prometheus_json(EX / "dcgm-query-range.json.gz", tel)
    base = load_scenario(str(EX / "cluster.yaml"), []).scenario
    c = calibrate(base, [], None, None, [], None, None, None, telemetry=(tel.first_s, tel.last_s, tel.hosts))
    c.thermal, c.thermal_target, c.telemetry = fit_thermal(tel, slots=8), target(base), tel
    return c


def test_example_fits_back_the_truth(cal: Calibration) -> None:
    th = cal.thermal
    truth = pd.read_csv(EX / "truth.csv")  # the resistance each GPU of the replication drew
    assert len(th.gpus) >= 90 and not th.outliers
    assert th.r_median_ci[0] <= 0.092 * 1.03 and th.r_median_ci[1] >= 0.092 * 0.97
    assert abs(th.r_median_c_per_w / float(truth["r_c_per_w"].median()) - 1) < 0.03
    assert th.r_sigma_ci[0] <= 0.05 <= th.r_sigma_ci[1]
    assert th.preheat_c is not None and abs(th.preheat_c - 2.0) < 0.25
    assert 0 < th.throttle_share < th.loaded_throttle_share


def _scenario(tmp: Path, r_sigma: float) -> str:
    p = tmp / f"sigma-{r_sigma}.yaml"
    p.write_text(f"extends: {EX / 'cluster.yaml'}\nname: spread-{r_sigma}\ncooling:\n  type: air\n  gpu:\n"
                 f"    r_sigma: {r_sigma}\n", encoding="utf-8")
    return str(p)


def test_check_accepts_the_truth_and_flags_three_times_the_spread(cal: Calibration, tmp_path: Path) -> None:
    truth = run_check(_scenario(tmp_path, 0.05), cal, 5)
    assert len(truth.rows) >= 5 and not truth.inconsistent, [(r.name, r.logged, r.lo, r.hi) for r in truth.rows]
    wrong = run_check(_scenario(tmp_path, 0.15), cal, 5)
    bad = {r.name for r in wrong.inconsistent}
    assert any("loaded samples" in n and "p10" in n for n in bad), bad  # the coolest loaded GPUs run far cooler


def test_calibrate_cli_writes_the_thermal_values(cal: Calibration, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    files = sorted(glob.glob(str(EX / "nvidia-smi" / "*.csv.gz"))) + [str(EX / "dcgm-query-range.json.gz"),
                                                                      str(EX / "inlet.csv.gz")]
    code = cli.main(["calibrate", *files, "--base", str(EX / "cluster.yaml"), "--out", str(tmp_path / "o"),
                     "--reps", "2"])
    out = capsys.readouterr().out
    assert code in (0, 1) and "GPU thermal resistance: median 0.09" in out
    text = (tmp_path / "o" / "calibrated.yaml").read_text(encoding="utf-8")
    assert "r_air_c_per_w: 0.09" in text and "r_sigma: 0.0" in text and "slot_preheat_c: 2" in text
    sc = load_scenario(str(tmp_path / "o" / "calibrated.yaml"), []).scenario
    assert sc.cooling.gpu.r_sigma == pytest.approx(cal.thermal.r_sigma, abs=5e-4)
    assert sc.cooling.gpu.r_air_c_per_w == pytest.approx(cal.thermal.r_median_c_per_w, rel=1e-3)
    assert sc.cooling.air.zones == 1 and sc.cluster.n_nodes == 16  # the rest is the base's
    report = (tmp_path / "o" / "report.md").read_text(encoding="utf-8")
    assert "## GPU thermal resistance (telemetry)" in report and "temperature of the loaded samples" in report
