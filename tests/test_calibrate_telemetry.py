"""GPU telemetry for ``twin calibrate`` (issue 45): the readers on text in the tools' formats (the
samples under scenarios/examples/telemetry/samples follow nvidia-smi's and dcgm-exporter's documented
output), bad lines (exit 2 with the file and the line), and the thermal fits' round trip from known
per-GPU resistances."""

from __future__ import annotations

import math
import shutil
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest

from twin import cli
from twin.calibrate.common import sniff
from twin.calibrate.telemetry import (Telemetry, read_exposition, read_inlet, read_nvidia_smi,
                                      read_prometheus_json)
from twin.calibrate.telemetry_synth import lognormal_samples, write_exposition, write_nvidia_smi, \
    write_prometheus_json
from twin.calibrate.thermal_fit import fit_thermal
from twin.errors import InputError

UTC = timezone.utc
ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "scenarios" / "examples" / "telemetry" / "samples"
T0 = datetime(2024, 5, 1, 12, tzinfo=UTC).timestamp()


def test_nvidia_smi_sample_units_na_and_masks(tmp_path: Path) -> None:
    p = shutil.copy(SAMPLES / "nvidia-smi-query.csv", tmp_path / "gpu017.csv")
    assert sniff(p) == "nvidia-smi"
    tel = Telemetry()
    read_nvidia_smi(p, UTC, tel)
    assert sorted(tel.gpus) == ["gpu017:0", "gpu017:1", "gpu017:2"]  # the host from the file name
    g0, g1, g2 = (tel.gpus[f"gpu017:{i}"] for i in range(3))
    assert g0.points == [(512.34, 64.0, pytest.approx(math.nan, nan_ok=True)),
                         (518.9, 65.0, pytest.approx(math.nan, nan_ok=True))]
    assert g0.first_s == pytest.approx(T0 + 0.123) and g0.serial == "1654922001234"
    assert (g1.thermal, g1.with_reasons) == (2, 2)  # 0x20 SW thermal, 0x60 SW + HW thermal
    assert (g0.thermal, g0.with_reasons) == (0, 2)
    assert g2.samples == 1 and g2.with_temp == 0 and g2.with_reasons == 0 and not g2.points  # [N/A] cells
    assert tel.thermal_share() == (2, 4)


def test_nvidia_smi_noheader_nounits_and_pdsh_prefix(tmp_path: Path) -> None:
    p = tmp_path / "all.csv"
    p.write_text("n1: 2024/05/01 12:00:00.000, 0, 123, 60, 500.00, 1980, 0x0000000000000001\n"
                 "n2: 2024/05/01 12:00:00.000, 0, 124, 61, 505.00, 1980, 0x0000000000000040\n", encoding="utf-8")
    tel = Telemetry()
    read_nvidia_smi(p, UTC, tel)
    assert sorted(tel.gpus) == ["n1:0", "n2:0"] and tel.gpus["n2:0"].thermal == 1
    assert tel.gpus["n1:0"].points[0][:2] == (500.0, 60.0)


@pytest.mark.parametrize("line,field", [
    ("2024/05/01 12:00:00.000, 0, 1, 60, 5x0 W, 1980 MHz, 0x0", "power.draw"),
    ("2024/05/01 12:00:00.000, 0, 1, 60, 500 W, 1980 MHz", "the header has 7"),
    ("2024/13/01 12:00:00.000, 0, 1, 60, 500 W, 1980 MHz, 0x0", "timestamp"),
    ("2024/05/01 12:00:00.000, 0, 1, 60, 500 W, 1980 MHz, 0xZZ", "clocks_event_reasons"),
])
def test_nvidia_smi_malformed_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str,
                                         field: str) -> None:
    p = tmp_path / "n1.csv"
    p.write_text((SAMPLES / "nvidia-smi-query.csv").read_text(encoding="utf-8") + line + "\n", encoding="utf-8")
    code = cli.main(["calibrate", str(p), "--base", str(ROOT / "scenarios" / "examples" / "telemetry" / "cluster.yaml"),
                     "--out", str(tmp_path / "out"), "--reps", "0"])
    err = capsys.readouterr().err
    assert code == 2 and f"{p}: line 7" in err and field in err, err
    assert not (tmp_path / "out").exists()


def test_dcgm_exposition_sample_timestamps_and_scrape_time(tmp_path: Path) -> None:
    p = SAMPLES / "dcgm-exporter.prom"
    assert sniff(p) == "dcgm-text"
    tel = Telemetry()
    read_exposition(p, UTC, tel)
    g0, g1 = tel.gpus["gpu017:0"], tel.gpus["gpu017:1"]
    assert g0.points == [(512.34, 64.0, pytest.approx(math.nan, nan_ok=True)),
                         (518.9, 65.0, pytest.approx(math.nan, nan_ok=True))]
    assert (g0.first_s, g0.last_s) == (T0, T0 + 60)  # ms time stamps, then a '# time' scrape
    assert g1.samples == 1 and g1.thermal == 1  # GPU 1 missing from the second scrape
    assert g0.serial.startswith("GPU-604ac76c")


def test_dcgm_exposition_malformed_and_unlabelled(tmp_path: Path) -> None:
    p = tmp_path / "d.prom"
    p.write_text('# time 1714564800\nDCGM_FI_DEV_GPU_TEMP{gpu="0",Hostname="a"} 64\nDCGM_FI_DEV_GPU_TEMP{gpu="0" 64\n',
                 encoding="utf-8")
    with pytest.raises(InputError, match=r"d.prom: line 3: not a sample"):
        read_exposition(p, UTC, Telemetry())
    p.write_text('DCGM_FI_DEV_GPU_TEMP{gpu="0",Hostname="a"} 64\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"line 1: a sample without a time stamp"):
        read_exposition(p, UTC, Telemetry())
    p.write_text('DCGM_FI_DEV_GPU_TEMP{UUID="x"} 64 1714564800000\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"line 1: DCGM_FI_DEV_GPU_TEMP without the labels gpu and Hostname"):
        read_exposition(p, UTC, Telemetry())


def test_prometheus_json_sample_and_counter_reset(tmp_path: Path) -> None:
    p = SAMPLES / "dcgm-query-range.json"
    assert sniff(p) == "dcgm-json"
    tel = Telemetry()
    read_prometheus_json(p, tel)
    g0, g1 = tel.gpus["gpu017:0"], tel.gpus["gpu017:1"]
    assert [pt[:2] for pt in g0.points] == [(512.34, 64.0), (518.9, 65.0)]
    assert (g0.thermal, g0.with_reasons) == (1, 2)
    # the violation counter: +30 s in the first minute, then a reset (39e6 -> 6e6 µs): 6 s in the second
    assert g1.violation_s == pytest.approx(36.0) and g1.violation_span_s == pytest.approx(120.0)
    assert g1.samples == 1 and g1.with_temp == 1 and not g1.points  # temperature without power: no fit point
    hot, tot = tel.thermal_share()
    assert hot == pytest.approx(1 + 36 / 60) and tot == pytest.approx(2 + 2)


def test_prometheus_json_malformed(tmp_path: Path) -> None:
    p = tmp_path / "q.json"
    p.write_text('{"status":"success",\n"data":{"result":[\n{"metric":{}, "values":[[1, "2"]]},\n]}}', encoding="utf-8")
    with pytest.raises(InputError, match=r"q.json: line 4: not JSON"):
        read_prometheus_json(p, Telemetry())
    p.write_text('{"data":{"result":[{"metric":{"__name__":"DCGM_FI_DEV_GPU_TEMP","gpu":"0","Hostname":"a"},'
                 '"values":[[1714564800, "hot"]]}]}}', encoding="utf-8")
    with pytest.raises(InputError, match=r"data.result\[0\].values\[0\]: 'hot' is not a number"):
        read_prometheus_json(p, Telemetry())


def test_inlet_csv_joins_samples(tmp_path: Path) -> None:
    assert sniff(SAMPLES / "inlet.csv") == "inlet"
    inlet = read_inlet([str(SAMPLES / "inlet.csv")], UTC)
    tel = Telemetry(inlet)
    read_exposition(SAMPLES / "dcgm-exporter.prom", UTC, tel)
    assert [pt[2] for pt in tel.gpus["gpu017:0"].points] == [24.5, 24.7]  # the latest reading before each
    bad = tmp_path / "i.csv"
    bad.write_text("node,time,inlet_c\ngpu017,yesterday,24\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"i.csv: line 2, time"):
        read_inlet([str(bad)], UTC)


def _fit(tmp: Path, seed: int, fmt: str = "nvidia-smi", n_nodes: int = 16):
    frame, r = lognormal_samples(n_nodes=n_nodes, seed=seed)
    tel = Telemetry()
    if fmt == "nvidia-smi":
        for p in write_nvidia_smi(frame, tmp):
            read_nvidia_smi(p, UTC, tel)
    elif fmt == "json":
        read_prometheus_json(write_prometheus_json(frame, tmp / "q.json"), tel)
    else:
        read_exposition(write_exposition(frame, tmp / "s.prom"), UTC, tel)
    return fit_thermal(tel), r


def test_round_trip_one_seed(tmp_path: Path) -> None:
    th, r = _fit(tmp_path, 3)
    assert abs(th.r_median_c_per_w / 0.075 - 1) < 0.03
    assert th.r_sigma_ci[0] <= 0.05 <= th.r_sigma_ci[1]
    assert th.preheat_c is not None and abs(th.preheat_c - 2.0) < 0.25  # the chassis preheat drawn
    assert not th.outliers and len(th.gpus) == 128


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_round_trip_dcgm_formats(tmp_path: Path, fmt: str) -> None:
    th, _r = _fit(tmp_path, 5, fmt, n_nodes=4)
    assert abs(th.r_median_c_per_w / 0.075 - 1) < 0.03 and len(th.gpus) == 32


def test_outlier_gpu_is_listed(tmp_path: Path) -> None:
    frame, _r = lognormal_samples(n_nodes=8, seed=2)
    m = (frame["host"] == "node003") & (frame["index"] == 5)  # a dried thermal interface: R + 40 %
    frame.loc[m, "temp_c"] = frame.loc[m, "inlet_c"] + 2.0 + (frame.loc[m, "temp_c"] - frame.loc[m, "inlet_c"] - 2.0) * 1.4
    tel = Telemetry()
    for p in write_nvidia_smi(frame, tmp_path):
        read_nvidia_smi(p, UTC, tel)
    th = fit_thermal(tel)
    assert [f.key for f in th.outliers] == ["node003:5"] and th.outliers[0].z > 3.5


@pytest.mark.slow
def test_round_trip_coverage_40_seeds(tmp_path: Path) -> None:
    """Median within 3 % of the truth and r_sigma inside its 95 % interval in >= 85 % of 40 seeds."""
    med_ok = sig_ok = 0
    for seed in range(40):
        th, _r = _fit(tmp_path / str(seed), seed)
        med_ok += abs(th.r_median_c_per_w / 0.075 - 1) < 0.03
        sig_ok += th.r_sigma_ci[0] <= 0.05 <= th.r_sigma_ci[1]
    assert med_ok >= 34 and sig_ok >= 34, (med_ok, sig_ok)
    assert np.isfinite(med_ok)


def test_memory_is_bounded_by_the_gpus_not_the_samples() -> None:
    """A long series keeps RESERVOIR points per GPU (a uniform sample) and exact counts."""
    from twin.calibrate.telemetry import RESERVOIR

    tel = Telemetry()
    g = tel.gpu("n1", "0")
    rng = np.random.default_rng(0)
    n = 20 * RESERVOIR
    for k in range(n):
        p = 100.0 + 600.0 * k / n  # power rising over the series
        tel.add(g, T0 + 60.0 * k, float(round(25 + 0.08 * p + rng.normal(0, 0.5))), p, 0x20 if k % 4 == 0 else 0)
    assert len(g.points) == RESERVOIR and g.samples == n and g.thermal == n // 4
    powers_kept = np.array([pt[0] for pt in g.points])
    assert 350 < powers_kept.mean() < 450  # a uniform sample over the series (its first points average 115 W)
    assert tel.hist.sum() == pytest.approx(n)


def test_too_little_telemetry_to_fit_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = shutil.copy(SAMPLES / "nvidia-smi-query.csv", tmp_path / "gpu017.csv")
    code = cli.main(["calibrate", str(p), "--base", str(ROOT / "scenarios" / "examples" / "telemetry" / "cluster.yaml"),
                     "--out", str(tmp_path / "out"), "--reps", "0"])
    err = capsys.readouterr().err
    assert code == 2 and "0 GPUs with a fit (needs 3)" in err and "gpu017:0: 2 points" in err, err
    assert not (tmp_path / "out").exists()
