"""Issue 49: the forecast's label and FLOP convention, step-time fixes (causal attention, the slowest
pipeline stage, the data-parallel overlap window, ZeRO stages) and memory feasibility, each against a
hand computation."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from twin.cli import main
from twin.forecast.target import select_job, target_of
from twin.scenario import load_dict
from twin.scenario.loader import load_scenario

SCEN = Path(__file__).resolve().parent.parent / "scenarios"


def _small_layout_doc() -> dict[str, Any]:
    from tests.test_forecast import small_training_doc

    doc = copy.deepcopy(small_training_doc())
    doc["workload"]["jobs"] = [{
        "name": "j", "gpus": 64, "training": {"params_b": 1.0, "tokens_t": 0.02},
        "step": {"model": {"layers": 8, "hidden": 1024, "seq_len": 1024, "vocab": 8000, "global_batch": 64},
                 "layout": {"tp": 8, "pp": 1, "dp": 8}}}]
    return doc


# ---------------------------------------------------------------- 1. the forecast's label

def test_forecast_405b_ideal_is_labelled_steps_times_step_time_with_6pd_beside() -> None:
    """forecast-405b's work is steps × step time (its layout), not 6PD/(GPUs × peak × MFU): the target says
    so, and carries the true 6PD figure at the derived MFU, computed here by hand."""
    sc = load_scenario(SCEN / "forecast-405b.yaml").scenario
    idx = select_job(sc, None)
    t = target_of(sc, idx)
    job = sc.workload.jobs[idx]
    assert t.basis == "layout"
    six_pd_h = 6 * 405e9 * 15.6e12 / (16384 * 989e12 * job.training.mfu) / 3600
    assert t.six_pd_h == pytest.approx(six_pd_h, rel=1e-12)
    # the two differ: the step model counts attention and the logits stage, 6PD does not
    assert abs(t.six_pd_h - t.work_h) / t.work_h > 0.02


def test_forecast_prints_what_the_ideal_is_and_the_flop_convention(tmp_path: Path, capsys) -> None:
    path = tmp_path / "fc.yaml"
    path.write_text(yaml.safe_dump(_small_layout_doc()))
    rc = main(["forecast", str(path), "--reps", "2", "--results", str(tmp_path / "r"), "--levers", "none",
               "--quiet", "--no-report"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "ideal: steps × step time of the layout" in out
    assert "6PD / (GPUs × peak × MFU) at the layout's MFU" in out
    assert "FLOP convention" in out
    assert "ideal 6PD/(GPUs x peak x MFU)" not in out


def test_a_job_without_layout_keeps_the_6pd_label() -> None:
    from tests.test_forecast import small_training_doc

    sc = load_dict(small_training_doc()).scenario
    t = target_of(sc, select_job(sc, None))
    assert t.basis == "6PD" and t.six_pd_h == pytest.approx(t.work_h, rel=1e-12)
