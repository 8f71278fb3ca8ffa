"""Jobs with a model shape and a parallel layout (issue 28): bad layouts are one-line input errors,
`twin run` shows what limits each layout job's step, and the step evaluation is cached."""

from __future__ import annotations

from pathlib import Path

import numpy as np
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
    after = next(x for x in text.splitlines() if x.startswith("step train-768"))  # the run-time limiter
    assert "failure-free" in after and "mean" in after and "limited by tp" in after


def test_the_run_time_limiter_integrates_the_step_the_job_had() -> None:
    """The step_breakdown table: shares sum to 1; a job throttled to speed 0.5 for its whole run has
    the throttle share and mean step of the step-time model at speed 0.5 (the fabric made perfect: no
    NIC, optic, switch or flap failures, so its bandwidth share stays 1)."""
    from twin.model.workload import Workload
    from twin.sim import Model

    sc = load_scenario(FABRIC, ["horizon_days=2", "network.optic.failure.mtbf_h=1e15",
                                "network.spine.failure.mtbf_h=1e15", "network.leaf.failure.mtbf_h=1e15",
                                "network.link_flaps_per_link_per_year=0", "cluster.node.parts.nic.failure.mtbf_h=1e15",
                                "workload.synthetic=null"]).scenario
    m = Model(sc, 0)
    wl = next(c for c in m.components if isinstance(c, Workload))
    nodes = np.arange(sc.cluster.n_nodes)

    src = m.cluster.speed_source("test")

    def throttle() -> None:
        src.caps[:] = 0.5
        src.changed(nodes)

    m.engine.call_at(0.0, throttle)
    m.run()
    res = m.result()
    row = res.tables["step_breakdown"].iloc[0]
    shares = [row[f"share_{c}"] for c in ("compute", "tp", "pp", "bubble", "dp", "compress", "throttle", "cp", "ep")]
    assert sum(shares) == pytest.approx(1.0, abs=1e-12)
    job = wl.jobs[0]
    want = job.step.breakdown(nic_gbit_s=job.bd_nic, speed=0.5)
    assert row.mean_step_s == pytest.approx(want.total_s, rel=1e-9)
    assert row.share_throttle == pytest.approx(want.throttle_s / want.total_s, rel=1e-9) and row.share_throttle > 0
    assert res.metrics["step.share.throttle"] == pytest.approx(row.share_throttle, rel=1e-12)


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
