"""Calibration feeds the decision under uncertainty (issue 46, item 4): ``twin calibrate`` writes
each fitted value's interval as an ``uncertainty:`` distribution, and ``twin decide --inputs`` puts
measured inputs in place of the options' assumed ranges."""

from __future__ import annotations

import copy
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy.stats import triang

from twin.calibrate.uncertainty_out import distribution
from twin.cli import main
from twin.errors import InputError
from twin.experiment.uncertain import load_options
from twin.scenario import load_scenario
from twin.scenario.uncertainty import LogNormal, Triangular, check_against

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "scenarios" / "examples" / "calibrate"


@pytest.mark.parametrize("lo, hi, level", [(44130.0, 101800.0, 0.95), (25960.0, 1309000.0, 0.95),
                                           (0.2566, 0.6465, 0.9)])
def test_a_fitted_interval_becomes_a_lognormal_with_that_interval(lo: float, hi: float, level: float) -> None:
    """Estimate at the interval's geometric centre: the distribution's central ``level`` quantiles are the
    interval (the ±4σ truncation moves them by < 1e-3); a normal of the same half-width (the wrong
    model for a positive quantity's skewed interval) would not put its quantiles there."""
    est = math.sqrt(lo * hi)
    d = distribution(est, (lo, hi), level, "fit: x")
    assert d is not None and d["dist"] == "lognormal"
    ln = LogNormal.model_validate(d)
    q = ln.ppf(np.array([(1 - level) / 2, (1 + level) / 2]))
    assert q[0] == pytest.approx(lo, rel=2e-3) and q[1] == pytest.approx(hi, rel=2e-3)
    # a normal of the same width centred on the estimate misses the interval's ends by more than 5 %
    assert abs((est - (hi - lo) / 2) - lo) > 0.05 * lo


@pytest.mark.parametrize("est", [0.0, 0.1])
def test_an_interval_from_zero_becomes_a_triangle_leaving_the_tail_above(est: float) -> None:
    d = distribution(est, (0.0, 0.39), 0.95, "fit: x")
    assert d is not None and d["dist"] == "triangular" and d["low"] == 0 and d["mode"] == est
    Triangular.model_validate(d)
    top = d["high"]
    assert 1 - triang.cdf(0.39, est / top, 0, top) == pytest.approx(0.025, abs=5e-4)


def test_nothing_is_written_for_an_interval_without_width() -> None:
    assert distribution(5.0, (5.0, 5.0), 0.95, "x") is None
    assert distribution(float("nan"), (1.0, 2.0), 0.95, "x") is None


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cal") / "example"
    code = main(["calibrate", str(EXAMPLE / "sacct.txt.gz"), str(EXAMPLE / "kernel.log.gz"), str(EXAMPLE / "tickets.csv"),
                 "--year", "2026", "--nodes", "node[000-127]", "--base", str(ROOT / "scenarios" / "baseline.yaml"),
                 "--out", str(out), "--reps", "2"])
    assert code in (0, 1)  # 1: a check row at 2 replications may be inconsistent
    return out / "calibrated.yaml"


def test_the_calibrated_scenario_states_its_fits_as_uncertain_inputs(calibrated: Path) -> None:
    text = calibrated.read_text(encoding="utf-8")
    doc = yaml.safe_load(text)
    inputs = doc["uncertainty"]["inputs"]
    # the GPU MTBF written with its interval in the comment: the same interval is the input's 95 % range
    m = re.search(r"failure: \{dist: exponential, mean_h: ([0-9.]+)\}.*mean_h [0-9.]+ \[([0-9.]+), ([0-9.]+)\]", text)
    assert m is not None
    est, lo, hi = (float(g) for g in m.groups())
    gpu = LogNormal.model_validate(inputs["cluster.node.parts.gpu.failure.mean_h"])
    assert gpu.median == est and gpu.source.startswith("fit: ")
    q = gpu.ppf(np.array([0.025, 0.975]))
    assert q[0] == pytest.approx(lo, rel=0.01) and q[1] == pytest.approx(hi, rel=0.01)
    # frailty 0 [0, 0.39]: a triangle from zero
    assert inputs["health.frailty.variance"]["dist"] == "triangular"
    # every path leads to a number of the scenario as loaded (what twin decide checks)
    loaded = load_scenario(str(calibrated))
    assert loaded.scenario.uncertainty is not None
    check_against(loaded.scenario.uncertainty, loaded.scenario.model_dump(mode="json"), doc, str(calibrated))


def tiny(name: str, crews: int) -> dict[str, Any]:
    return {
        "name": name, "seed": 1, "horizon_days": 20,
        "cluster": {"racks": 1, "nodes_per_rack": 4, "node": {"gpus": 8, "parts": {
            "gpu": {"failure": {"mtbf_h": 200}, "repair": {"time": {"dist": "exponential", "mean_h": 20}}}}}},
        "maintenance": {"detection": {"dist": "fixed", "value_h": 0}, "crews": {"technicians": {"count": crews}}},
        "uncertainty": {"inputs": {
            "cluster.node.parts.gpu.failure.mtbf_h": {"dist": "uniform", "low": 100, "high": 400,
                                                      "source": "assumption"}}},
    }


MEASURED = {"uncertainty": {"inputs": {"cluster.node.parts.gpu.failure.mtbf_h": {
    "dist": "lognormal", "median": 250, "sigma": 0.05, "low": 200, "high": 300, "source": "fit: logs"}}}}


def _write(path: Path, doc: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def test_measured_inputs_replace_the_assumed_range_in_every_option(tmp_path: Path) -> None:
    a, b = _write(tmp_path / "a.yaml", tiny("a", 1)), _write(tmp_path / "b.yaml", tiny("b", 2))
    only_a = tiny("c", 1)
    del only_a["uncertainty"]  # an option without the input gets the measured one too (the field exists)
    c = _write(tmp_path / "c.yaml", only_a)
    meas = _write(tmp_path / "measured.yaml", MEASURED)
    opts, notes = load_options([str(a), str(b), str(c)], [], str(meas))
    for o in opts:
        assert o.unc is not None
        d = o.unc.inputs["cluster.node.parts.gpu.failure.mtbf_h"]
        assert d.dist == "lognormal" and d.source == "fit: logs"
    assert any(n.startswith(f"measured inputs from {meas}") for n in notes)
    before, _ = load_options([str(a), str(b)], [])
    assert before[0].unc is not None and before[0].unc.inputs["cluster.node.parts.gpu.failure.mtbf_h"].dist == "uniform"
    # a --set fixes it whatever the file says: here nothing is left to draw
    with pytest.raises(InputError, match="nothing to draw"):
        load_options([str(a), str(b)], ["cluster.node.parts.gpu.failure.mtbf_h=300"], str(meas))


def test_decide_with_measured_inputs_draws_inside_their_range(tmp_path: Path) -> None:
    a, b = _write(tmp_path / "a.yaml", tiny("a", 1)), _write(tmp_path / "b.yaml", tiny("b", 2))
    meas = _write(tmp_path / "measured.yaml", MEASURED)
    assert main(["decide", str(a), str(b), "--objective", "node_availability", "--draws", "16", "--reps", "2",
                 "--results", str(tmp_path / "res"), "--label", "m", "--no-report", "--quiet",
                 "--inputs", str(meas)]) == 0
    draws = pd.read_parquet(tmp_path / "res" / "decide" / "m" / "draws.parquet")
    x = draws["cluster.node.parts.gpu.failure.mtbf_h"].to_numpy(dtype=float)
    assert (x >= 200).all() and (x <= 300).all() and x.std() > 0  # the assumed range was 100..400


@pytest.mark.parametrize("doc, says", [
    ({"uncertainty": {"inputs": {"cluster.node.parts.fan.failure.mtbf_h": {
        "dist": "uniform", "low": 1, "high": 2, "source": "fit: x"}}}}, "not a field of any option"),
    ({"name": "x"}, "needs a file with an uncertainty: section"),
    ({"uncertainty": {"groups": {"g": {"cluster.node.parts.gpu.failure.mtbf_h": copy.deepcopy(
        MEASURED["uncertainty"]["inputs"]["cluster.node.parts.gpu.failure.mtbf_h"])}}}}, "measured inputs"),
])
def test_bad_inputs_file_names_the_file(tmp_path: Path, doc: dict[str, Any], says: str,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    a, b = _write(tmp_path / "a.yaml", tiny("a", 1)), _write(tmp_path / "b.yaml", tiny("b", 2))
    meas = _write(tmp_path / "measured.yaml", doc)
    with pytest.raises(InputError):
        load_options([str(a), str(b)], [], str(meas))
    assert main(["decide", str(a), str(b), "--draws", "16", "--reps", "2", "--results", str(tmp_path / "r"),
                 "--inputs", str(meas)]) == 2
    err = capsys.readouterr().err
    assert str(meas) in err and says in err
