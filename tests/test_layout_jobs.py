"""Jobs with a model shape and a parallel layout (issue 28): bad layouts are one-line input errors,
`twin run` shows what limits each layout job's step, and the step evaluation is cached."""

from __future__ import annotations

from pathlib import Path

import pytest

from twin import cli
from twin.model.workload import parallel_breakdown, parallel_rate
from twin.scenario.loader import load_scenario

FABRIC = Path(__file__).resolve().parents[1] / "scenarios" / "fabric-stress.yaml"


@pytest.mark.parametrize("override,field,words", [
    ("workload.jobs.0.step.layout.dp=12", "workload.jobs.0.step.layout", ["must equal gpus (768)"]),
    # (tp is checked against the NVLink domain once the cluster's domains are known: after the gpus check)
    ("workload.jobs.0.step.layout={tp: 3, pp: 4, dp: 64}", "workload.jobs.0.step.layout.tp", ["NVLink"]),
    ("workload.jobs.0.step.layout.nvlink_domain_gpus=12", "workload.jobs.0.step.layout.tp", ["NVLink"]),
    ("workload.jobs.0.step.model.global_batch=100", "workload.jobs.0.step.model.global_batch", ["multiple"]),
    ("workload.jobs.0.step.layout.dp_overlap=1.5", "workload.jobs.0.step.layout.dp_overlap", ["1.5"]),
])
def test_bad_layout_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], override: str,
                                       field: str, words: list[str]) -> None:
    code = cli.main(["run", str(FABRIC), "--set", override, "--results", str(tmp_path), "--quiet"])
    lines = capsys.readouterr().err.splitlines()
    assert code == 2 and len(lines) == 1, lines
    assert field in lines[0] and all(w in lines[0] for w in words), lines[0]


def test_run_shows_the_step_breakdown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["run", str(FABRIC), "--set", "horizon_days=2", "--results", str(tmp_path), "--quiet"])
    out = capsys.readouterr()
    text = out.out + out.err
    assert code == 0
    line = next(x for x in text.splitlines() if x.startswith("step: train-768"))
    assert "tp 8 × pp 4 × dp 24" in line and "compute" in line and "limited by tp" in line


def test_step_is_evaluated_once_per_input_state() -> None:
    st = load_scenario(FABRIC).scenario.workload.jobs[0].step
    parallel_breakdown.cache_clear()
    r1 = parallel_rate(st, 1.0, 400.0, 15 / 16)
    r2 = parallel_rate(st, 1.0, 400.0, 15 / 16)
    info = parallel_breakdown.cache_info()
    assert r1 == r2 < 1.0
    assert info.misses == 2 and info.hits == 2  # (actual, ideal) computed once, then reused
    assert parallel_rate(st, 1.0, 400.0, 1.0) == 1.0
    assert parallel_rate(st, 0.0, 400.0, 1.0) == 0.0
    assert parallel_rate(st, 1.0, 400.0, 0.0) == 0.0  # fabric cut: the dp all-reduce cannot finish
