"""Time-to-train forecast (issue 12): training conversion, failure-free exactness, Daly's exact
expected time with hardware failures and hot spares, a lever that cannot help, pretrain-style
scenarios, bad input. The 405B forecast itself is not run here (only loaded)."""

from __future__ import annotations

import copy
import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml

from twin.cli import main
from twin.physics import training as tr
from twin.forecast.levers import _double_time_scale, locate_cause, lever_table, spares_lever
from twin.forecast.run import run_forecast, run_one
from twin.forecast.target import bound_h, select_job, target_of, with_horizon
from twin.physics import closed_forms as cf
from twin.scenario import load_dict
from twin.scenario.loader import load_scenario
from twin.validation.cases import daly_doc, t_interval

SCEN = Path(__file__).resolve().parent.parent / "scenarios"


def small_training_doc(mode: str = "sync") -> dict[str, Any]:
    """8 nodes of 8 GPUs (+2 spare nodes), no failing part, a 1 B-parameter model on 20 B tokens."""
    return {
        "name": "fc-small", "seed": 11, "horizon_days": 5,
        "cluster": {"racks": 1, "nodes_per_rack": 10, "node": {"gpus": 8, "parts": {}}},
        "workload": {
            "scheduler": {"policy": "fifo", "hot_spares": 2},
            "storage": {"write_gb_per_s": 0.1, "read_gb_per_s": 1.0},
            "jobs": [{"name": "llm", "gpus": 64,
                      "training": {"params_b": 1.0, "tokens_t": 0.02, "peak_tflops": 989.0, "mfu": 0.4},
                      "checkpoint": {"interval_h": 0.25, "mode": mode}}],
        },
    }


def write(path: Path, doc: Any) -> Path:
    path.write_text(doc if isinstance(doc, str) else yaml.safe_dump(doc, sort_keys=False))
    return path


# ---------------------------------------------------------------- conversion

def test_training_conversion() -> None:
    # 6·P·D / (G·peak·MFU) / 3600, computed here from the definition
    P, D, G, F, mfu = 405e9, 15.6e12, 16384, 989e12, 0.41
    assert tr.work_hours(405, 15.6, G, 989, mfu) == pytest.approx(6 * P * D / (G * F * mfu) / 3600, rel=1e-12)
    assert tr.training_flops(405, 15.6) == pytest.approx(3.79e25, rel=1e-3)  # Llama 3: 3.8e25 FLOPs
    assert tr.tokens_per_day(15.6, 48.0) == pytest.approx(7.8e12)
    assert tr.checkpoint_size_gb(405) == pytest.approx(6480.0)
    assert [tr.checkpoint_count(w, 0.25) for w in (0.1, 0.25, 1.0, 1.1)] == [1, 1, 4, 5]
    assert tr.checkpoint_count(5.0, None) == 0
    with pytest.raises(ValueError):
        tr.work_hours(1, 1, 8, 989, 1.5)


# ---------------------------------------------------------------- failure-free: exact

@pytest.mark.parametrize("mode", ["sync", "async"])
def test_failure_free_time_is_exact(tmp_path: Path, mode: str) -> None:
    doc = small_training_doc(mode)
    loaded = load_dict(doc)
    job = loaded.scenario.workload.jobs[0]
    work = 6 * 1e9 * 0.02e12 / (64 * 989e12 * 0.4) / 3600  # 1.316 h
    assert job.work_h == pytest.approx(work, rel=1e-12)
    size = 1e9 * 16 / 1e9  # 16 bytes per parameter (default), GB
    assert job.checkpoint.size_gb == pytest.approx(size)
    w = size / 0.1 / 3600  # write hours at 0.1 GB/s (160 s)
    n = math.ceil(work / 0.25)  # a checkpoint every 0.25 h of progress and a final one
    assert n == 6
    pause = w if mode == "sync" else 0.1 * w  # async stalls async_fraction (default 0.1) of the write
    expected = work + (n - 1) * pause + w  # the final checkpoint is always written in full
    res = run_forecast(loaded, 2, levers=[], folder=tmp_path / "f", report=False)
    t = res.rows["time_to_train_h"].to_numpy()
    assert np.all(res.rows["completed"] == 1)
    np.testing.assert_allclose(t, expected, rtol=1e-12)
    assert res.target.failure_free_h == pytest.approx(expected, rel=1e-12)
    assert res.rows["checkpoints"].tolist() == [n, n]
    assert res.distribution["tokens_per_day_expected"] == pytest.approx(0.02e12 / (expected / 24), rel=1e-12)
    assert np.all(np.abs(res.rows["residual_h"]) < 1e-12)


# ---------------------------------------------------------------- Daly's exact expected time

def test_mean_time_matches_daly_exact_with_hardware_failures_and_hot_spares() -> None:
    """Exponential node_down failures (hardware only), 16 hot spares for an 8-node job (repaired
    within 1 h): the job never waits for nodes, so its completion time follows Daly (2006):
    T_w = M·e^(R/M)·(e^((τ+δ)/M) − 1)·T_s/τ, with M the job MTBF, τ at the Daly optimum."""
    n, node_mtbf, delta, R, spares = 8, 16.0, 0.1, 0.2, 16
    M = node_mtbf / n
    tau = float(cf.daly_interval_h(delta, M))
    work = round(24.0 / tau) * tau  # a multiple of τ, as the formula assumes
    ref = float(cf.daly_expected_wall_time_h(work, tau, delta, R, M))
    doc = daly_doc(n, node_mtbf, work, tau, delta, R, 20 * ref)
    doc["name"] = "fc-daly-hardware"
    doc["seed"] = 2024
    doc["cluster"]["nodes_per_rack"] = n + spares
    doc["cluster"]["node"]["parts"] = {"board": {"count": 1, "effect": "node_down", "failure": {"mtbf_h": node_mtbf},
                                                 "repair": {"time": {"dist": "fixed", "value_h": 1.0}}}}
    doc["maintenance"] = {"detection": {"dist": "fixed", "value_h": 0.0}, "crews": {"t": {"count": 8}}}
    doc["workload"]["scheduler"]["hot_spares"] = spares
    loaded = load_dict(doc)
    idx = select_job(loaded.scenario, None)
    target = target_of(loaded.scenario, idx)
    base = with_horizon(loaded, bound_h(target, 20.0))
    reps = 150
    rows = [run_one(base.scenario, i, target.name, base.hash) for i in range(reps)]
    walls = np.array([r["time_to_train_h"] for r in rows])
    assert all(r["completed"] == 1.0 for r in rows)
    assert sum(r["requeue_h"] + r["queueing_h"] for r in rows) == 0.0  # spares were ample
    assert all(set(k for k in r if k.startswith("interruptions.") and k != "interruptions.unplanned")
               <= {"interruptions.board"} for r in rows)
    m, lo, hi = t_interval(walls, 0.99)
    assert lo <= ref <= hi, (m, lo, hi, ref)
    # the days-lost accounting adds up to the time to train in every replication
    assert max(abs(r["residual_h"]) for r in rows) < 1e-9


def test_fabric_slowdown_is_charged_to_the_network(tmp_path: Path) -> None:
    """Spine failures halve the bandwidth of a job whose all-reduce (0.875 s ideal) is just hidden
    by 0.9 s of overlap: the job slows, is never interrupted, and all the extra time is network."""
    doc = {
        "name": "fc-net", "seed": 5, "horizon_days": 5,
        "cluster": {"racks": 2, "nodes_per_rack": 4, "node": {"gpus": 8, "parts": {}}},
        "network": {"rails": 8, "nodes_per_leaf": 4, "spines": 2, "link_bandwidth_gbps": 400,
                    "optic": {"failure": {"mtbf_h": 1e12}}, "leaf": {"failure": {"mtbf_h": 1e12}},
                    "spine": {"failure": {"mtbf_h": 20.0},
                              "repair": {"hot_swap": True, "time": {"dist": "fixed", "value_h": 5}}},
                    "link_flaps_per_link_per_year": 0.0},
        "maintenance": {"detection": {"dist": "fixed", "value_h": 0.0}},
        "workload": {"scheduler": {"hot_spares": 0},
                     "jobs": [{"name": "j", "gpus": 64, "work_h": 40,
                               "step": {"t_compute_s": 1.0, "grad_gb": 200, "overlap": 0.9}}]},
    }
    res = run_forecast(load_dict(doc), 3, levers=[], folder=tmp_path / "f", report=False)
    r = res.rows
    assert (r["interruptions"] == 0).all() and (r["throttling_h"].abs() < 1e-9).all()  # float noise only
    extra = r["time_to_train_h"] - r["work_h"]
    assert (extra > 1.0).all()
    np.testing.assert_allclose(r["network_h"], extra, rtol=0, atol=1e-9)


# ---------------------------------------------------------------- levers

def transient_only_doc() -> dict[str, Any]:
    doc = small_training_doc()
    doc["cluster"]["node"]["parts"] = {"software": {"count": 1, "effect": "transient", "failure": {"mtbf_h": 10.0}}}
    doc["workload"]["restart"] = {"detection_h": 0.02, "reschedule_h": 0.02, "warmup_h": 0.01}
    doc["workload"]["storage"]["write_gb_per_s"] = 1.0
    return doc


def test_hot_spares_save_exactly_zero_when_no_hardware_fails(tmp_path: Path) -> None:
    loaded = load_dict(transient_only_doc())
    res = run_forecast(loaded, 6, levers=["spares"], spares=3, folder=tmp_path / "f", report=False)
    (lever, rows), = res.levers
    assert lever.loaded is not None and lever.loaded.scenario.workload.scheduler.hot_spares == 2 + 10
    base_t = res.rows["time_to_train_h"].to_numpy()
    assert res.rows["interruptions"].sum() > 0  # the job is interrupted, but only by transients
    np.testing.assert_array_equal(rows["time_to_train_h"].to_numpy(), base_t)
    t = res.lever_table.iloc[0]
    assert t.saved_days == 0.0 and t.saved_ci_low == 0.0 and t.saved_ci_high == 0.0


def test_identical_lever_scenario_saves_zero_and_cli_writes_report(tmp_path: Path, capsys) -> None:
    base = write(tmp_path / "base.yaml", transient_only_doc())
    same = write(tmp_path / "same.yaml", "extends: base.yaml\nname: fc-same\nseed: 99\n")  # seed is replaced
    rc = main(["forecast", str(base), "--reps", "3", "--results", str(tmp_path / "r"), "--levers", "daly",
               "--lever-scenario", f"same={same}", "--quiet"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "time to train" in out and "what-if levers" in out
    folder = next((tmp_path / "r" / "fc-small").iterdir())
    assert (folder / "report.html").is_file() and (folder / "report.md").is_file()
    html = (folder / "report.html").read_text()
    assert "data:image/png;base64" in html and "What-if levers" in html
    import pandas as pd

    table = pd.read_parquet(folder / "levers.parquet").set_index("key")
    assert table.loc["scenario-same", "saved_days"] == 0.0
    assert table.loc["daly", "reps"] == 3


def test_halve_lever_locates_failure_specs() -> None:
    doc = load_scenario(SCEN / "pretrain-16k.yaml").resolved
    assert locate_cause(doc, "gpu") == ["cluster.node.parts.gpu.failure"]
    assert locate_cause(doc, "leaf") == ["network.leaf.failure"]
    assert locate_cause(doc, "repair:psu") == ["cluster.node.parts.psu.failure"]
    assert locate_cause(doc, "link_flap") == ["network.link_flaps_per_link_per_year"]
    assert locate_cause(doc, "thermal_trip") == []
    f = {"dist": "weibull", "shape": 3.0, "scale_h": 10.0}
    assert _double_time_scale(f) == "scale_h" and f["scale_h"] == 20.0
    with pytest.raises(ValueError):
        _double_time_scale({"dist": "empirical", "file": "x.csv"})


def test_lever_table_pairs_by_replication() -> None:
    import pandas as pd

    from twin.forecast.levers import Lever

    base = pd.DataFrame({"replication": [0, 1, 2], "time_to_train_h": [48.0, 72.0, 96.0]})
    lev = pd.DataFrame({"replication": [2, 0, 1], "time_to_train_h": [72.0, 24.0, 48.0]})
    t = lever_table(base, [(Lever("x", "x", "", None), lev)]).iloc[0]
    # aligned on replication, not row order: every run is one day faster
    assert t.saved_days == pytest.approx(1.0)
    assert t.saved_ci_low == pytest.approx(1.0) and t.saved_ci_high == pytest.approx(1.0)
    assert t.mean_days == pytest.approx(2.0) and t.reps == 3 and t.pairs == 3
    # a baseline run not done within the bound leaves its pair out, and the note says so
    base.loc[2, "time_to_train_h"] = math.inf
    t = lever_table(base, [(Lever("x", "x", "", None), lev)]).iloc[0]
    assert t.pairs == 2 and t.saved_days == pytest.approx(1.0) and "1 of 3 pairs left out" in t.note


# ---------------------------------------------------------------- pretrain-style scenarios

@pytest.mark.parametrize("name", ["pretrain-16k.yaml", "forecast-405b.yaml"])
def test_pretrain_scenarios_leave_room_for_hot_spares(name: str) -> None:
    loaded = load_scenario(SCEN / name)
    sc = loaded.scenario
    idx = select_job(sc, None)
    job = sc.workload.jobs[idx]
    nodes = -(-job.gpus // sc.cluster.node.gpus)
    spares = sc.workload.scheduler.hot_spares
    assert sc.cluster.n_nodes * sc.cluster.node.gpus > job.gpus  # nodes beyond the job's GPU count
    assert spares >= 1 and sc.cluster.n_nodes - spares >= nodes
    # the spares lever builds a valid, larger scenario (not run here)
    target = target_of(sc, idx)
    lev = spares_lever(with_horizon(loaded, bound_h(target, 10)), target, 32, 10)
    assert lev.loaded is not None, lev.note
    assert lev.loaded.scenario.workload.scheduler.hot_spares == spares + 32


def test_forecast_405b_scenario_figures() -> None:
    """The forecast job's work comes from its layout (issue 28 item 6) in the published phases (issue 50):
    per segment, tokens / (B·s) steps × the physics step time of Llama 3 405B on its layout, evaluated here
    directly with twin.physics.parallel (the 16K-GPU layout at 4 K and 8 K with the batch ramp, Table 4's
    long-context layout tp 8, cp 16, pp 16, dp 8 at 131,072 tokens); the derived MFU at 16 M-token batches
    is the paper's 41 % within the validation band (±2 points)."""
    from twin.physics import parallel as par

    sc = load_scenario(SCEN / "forecast-405b.yaml").scenario
    idx = select_job(sc, None)
    job = sc.workload.jobs[idx]
    assert job.gpus == 16384 and job.training is not None
    llama = dict(layers=126, hidden=16384, heads=128, kv_heads=8, ffn_hidden=53248, gated_mlp=True,
                 vocab=128256, tied_embeddings=False)
    layout = par.Layout(tp=8, pp=16, dp=128, interleave=8, dp_collective="rs_ag", zero_stage=3, dp_overlap=1.0,
                        pp_overlap=1.0, selective_recompute=True)
    long = par.Layout(tp=8, cp=16, pp=16, dp=8, interleave=8, dp_collective="rs_ag", zero_stage=3, dp_overlap=1.0,
                      pp_overlap=1.0, cp_collective="all_gather", selective_recompute=True)
    segments = [(0.252, 4096, 1024, layout), (2.618, 8192, 1024, layout), (11.93, 8192, 2048, layout),
                (0.8, 131072, 128, long)]
    work_h = 0.0
    for tokens, seq, batch, lay in segments:
        shape = par.ModelShape(seq_len=seq, global_batch=batch, **llama)
        step_s = par.step_breakdown(shape, lay, par.Interconnect(), 989e12, 0.59).total_s
        work_h += tokens * 1e12 / (batch * seq) * step_s / 3600
    assert sum(t for t, *_ in segments) == pytest.approx(15.6)
    assert job.work_h == pytest.approx(work_h, rel=1e-12)
    assert [seg.label for seg in job.phase_segments()] == ["pretrain-4k", "pretrain-8k.0", "pretrain-8k.1",
                                                           "long-context"]
    shape = par.ModelShape(seq_len=8192, global_batch=2048, **llama)
    step_s = par.step_breakdown(shape, layout, par.Interconnect(), 989e12, 0.59).total_s
    mfu = par.mfu(par.model_flops_per_step(shape), step_s, 16384, 989e12)
    assert job.training.mfu == pytest.approx(mfu, rel=1e-12) and abs(mfu - 0.41) <= 0.02
    assert job.training.peak_tflops == 989.0
    assert 70 * 24 < job.work_h < 85 * 24
    assert job.checkpoint.size_gb == pytest.approx(405 * 16)
    assert job.checkpoint.size_gb / sc.workload.storage.write_gb_per_s / 3600 < job.checkpoint.interval_h


# ---------------------------------------------------------------- bad input

def _job_yaml(job: dict[str, Any], storage: dict[str, Any] | None = None) -> dict[str, Any]:
    doc = small_training_doc()
    doc["workload"]["jobs"] = [job]
    if storage is not None:
        doc["workload"]["storage"] = storage
    return doc


TRAIN = {"params_b": 1.0, "tokens_t": 0.02, "peak_tflops": 989.0, "mfu": 0.4}
LAYOUT_STEP = {"model": {"layers": 8, "hidden": 1024, "seq_len": 1024, "vocab": 8000, "global_batch": 64},
               "layout": {"tp": 8, "pp": 1, "dp": 8}}


@pytest.mark.parametrize("job,storage,needle", [
    ({"name": "j", "gpus": 64, "training": {**TRAIN, "mfu": 1.5}}, None, "workload.jobs.0.training.mfu"),
    ({"name": "j", "gpus": 64, "training": {**TRAIN, "mfu": 0}}, None, "workload.jobs.0.training.mfu"),
    ({"name": "j", "gpus": 64, "training": {**TRAIN, "tokens_t": 0}}, None, "workload.jobs.0.training.tokens_t"),
    ({"name": "j", "gpus": 64, "training": {**TRAIN, "params_b": 405}, "checkpoint": {"interval_h": 0.5}},
     {"write_gb_per_s": 1.0}, "workload.jobs.0.checkpoint.size_gb: a 6480 GB checkpoint takes 1.8 h"),
    ({"name": "j", "gpus": 64, "work_h": 3, "checkpoint": {"interval_h": 0.5, "write_h": 0.5}}, None,
     "workload.jobs.0.checkpoint.write_h"),
    ({"name": "j", "gpus": 64, "work_h": 3, "training": TRAIN}, None, "workload.jobs.0.work_h: give either"),
    ({"name": "j", "gpus": 64}, None, "workload.jobs.0.work_h: give either work_h"),
    ({"name": "j", "gpus": 64, "training": {"params_b": 1.0, "tokens_t": 0.02, "mfu": 0.4}}, None,
     "workload.jobs.0.training.peak_tflops: required without a step.layout"),
    ({"name": "j", "gpus": 64, "training": TRAIN, "step": LAYOUT_STEP}, None,
     "workload.jobs.0.training.mfu: derived from step.layout"),
])
def test_bad_training_input(tmp_path: Path, capsys, job: dict[str, Any], storage: Any, needle: str) -> None:
    p = write(tmp_path / "bad.yaml", _job_yaml(job, storage))
    assert main(["run", str(p), "--results", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert str(p) in err and needle in err, err


@pytest.mark.parametrize("args,needle", [
    (["--reps", "1"], "--reps"),
    (["--levers", "daly,magic"], "--levers"),
    (["--job", "nope"], "--job: no job named 'nope'"),
    (["--start-date", "soon"], "--start-date"),
    (["--lever-scenario", "broken"], "--lever-scenario"),
    # the limits count every variant's replications, and the cluster a lever builds
    (["--reps", "30000"], "--reps: 120,000 replications"),  # baseline + 3 levers
    (["--levers", "spares", "--lever-spares", "100000"], "--lever-spares: 100000"),
])
def test_bad_forecast_arguments(tmp_path: Path, capsys, args: list[str], needle: str) -> None:
    p = write(tmp_path / "s.yaml", small_training_doc())
    assert main(["forecast", str(p), "--results", str(tmp_path / "r"), "--quiet", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and needle in err, err


def test_forecast_needs_a_job(tmp_path: Path, capsys) -> None:
    doc = copy.deepcopy(small_training_doc())
    del doc["workload"]["jobs"]
    p = write(tmp_path / "s.yaml", doc)
    assert main(["forecast", str(p), "--results", str(tmp_path / "r"), "--quiet"]) == 2
    assert "workload.jobs" in capsys.readouterr().err


def test_local_workers_and_dask_give_the_serial_rows(tmp_path: Path) -> None:
    """A forecast's replications are the same on every backend: serial, 2 local processes, and a
    Dask LocalCluster (``--dask local``), including a lever variant on the same connection."""
    pytest.importorskip("distributed")
    loaded = load_dict(transient_only_doc())
    runs = {}
    for name, kw in {"serial": {}, "pool": {"workers": 2}, "dask": {"workers": 2, "dask": "local"}}.items():
        res = run_forecast(loaded, 4, levers=["spares"], spares=3, folder=tmp_path / name, report=False, **kw)
        runs[name] = res
        assert json.loads((tmp_path / name / "run.json").read_text())["backend"] == {
            "serial": "serial", "pool": "local", "dask": "dask"}[name]
    for name in ("pool", "dask"):
        pd.testing.assert_frame_equal(runs[name].rows, runs["serial"].rows, check_exact=True)
        pd.testing.assert_frame_equal(runs[name].levers[0][1], runs["serial"].levers[0][1], check_exact=True)


def test_rerun_resumes_only_rows_of_this_twin_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A rerun reuses the stored replications, but not those another twin version made."""
    import twin

    loaded = load_dict(transient_only_doc())
    said: list[str] = []
    monkeypatch.setattr(twin, "__version__", "0.0.old")
    old = run_forecast(loaded, 3, levers=[], folder=tmp_path / "f", report=False)
    monkeypatch.undo()
    assert set(old.rows["twin_version"]) == {"0.0.old"}
    new = run_forecast(loaded, 3, levers=[], folder=tmp_path / "f", report=False, echo=said.append)
    assert set(new.rows["twin_version"]) == {twin.__version__} and new.computed == 3
    assert any("3 stored replication(s)" in s and "another twin version" in s for s in said), said
    said.clear()
    again = run_forecast(loaded, 3, levers=[], folder=tmp_path / "f", report=False, echo=said.append)
    assert not any("another twin version" in s for s in said) and again.computed == 0
    pd.testing.assert_frame_equal(again.rows, new.rows, check_exact=True)


def test_forecast_takes_the_folder_lock_and_a_stale_one_over(tmp_path: Path) -> None:
    """A forecast holds its results folder's lock as Monte Carlo does (issue 22): a lock left by a
    killed run (its process has ended) is taken over with a note, and released at the end."""
    import json
    import platform
    import subprocess
    import sys

    import twin.experiment.store as store

    folder = tmp_path / "f"
    lock = store.lock_path(folder)
    lock.parent.mkdir(parents=True, exist_ok=True)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    lock.write_text(json.dumps({"pid": dead.pid, "host": platform.node(), "heartbeat": time.time(), "token": "old"}))
    said: list[str] = []
    run_forecast(load_dict(small_training_doc()), 2, levers=[], folder=folder, report=False, echo=said.append)
    assert any(s.startswith(f"note: took over the lock of {folder}") for s in said), said
    assert not lock.exists()


def test_forecast_tables_print_days_in_the_catalogue_format(tmp_path: Path, capsys) -> None:
    """Days print as the metric catalogue prints them (significant digits, a true minus), and the report's
    tables name their columns for people. Failed at twin 0.6.0: two fixed decimals turned a loss of
    0.0045 days into '0.00 days' and a lever's −0.0004 days into '-0.00 days', and the report's loss table
    showed its raw columns (bucket, kind, 95 % CI low)."""
    import pandas as pd

    from twin.report.metrics import format_value

    base = write(tmp_path / "base.yaml", transient_only_doc())
    rc = main(["forecast", str(base), "--reps", "3", "--results", str(tmp_path / "r"), "--levers", "daly", "--quiet"])
    out = capsys.readouterr().out
    assert rc == 0, out
    folder = next((tmp_path / "r" / "fc-small").iterdir())
    md = (folder / "report.md").read_text()
    sw = float(pd.read_parquet(folder / "losses.parquet").set_index("bucket").loc["software", "mean_days"])
    assert 0 < sw < 0.005, "the loss must be small enough that two decimals hid it, for the test to bite"
    for text in (out, md):
        assert "0.00 days" not in text and "-0.00" not in text
        assert f"software {format_value('forecast.days', sw)}" in text
    for raw in ("| bucket", "| kind", "95 % CI low", "mean_days", "saved_days", "requeue_days"):
        assert raw not in md, raw
    assert "days lost (mean per run)" in md and "days saved" in md

def test_training_with_a_layout_takes_its_work_from_the_step_model() -> None:
    """A training block with a step layout: work_h = D/(B·s) steps × the step time, MFU and peak derived;
    the resolved scenario (with the derived values) loads again unchanged."""
    doc = small_training_doc()
    doc["workload"]["jobs"] = [{"name": "j", "gpus": 64, "step": LAYOUT_STEP,
                                "training": {"params_b": 1.0, "tokens_t": 0.02}}]
    loaded = load_dict(doc)
    job = loaded.scenario.workload.jobs[0]
    t = job.step.breakdown().total_s
    assert job.work_h == pytest.approx(0.02e12 / (64 * 1024) * t / 3600, rel=1e-12)
    assert job.training.peak_tflops == 989.0 and 0.0 < job.training.mfu < 1.0
    again = load_dict(loaded.resolved).scenario.workload.jobs[0]
    assert again.work_h == job.work_h and again.training.mfu == job.training.mfu


def test_forecast_stores_replications_in_chunks_as_monte_carlo(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A forecast's rows are stored as Monte Carlo stores them (twin/experiment/rows.py): chunks while
    it runs, one file per variant when it is done (before: one file per replication, 2 × 12 here);
    the rows are those of each replication run on its own; a folder of the older one-file-per-
    replication layout is resumed without computing, then merged."""
    from twin.experiment.rows import FLUSH_ENV
    from twin.experiment.runner import assemble, write_row
    from twin.forecast.run import rep_dir_of

    monkeypatch.setenv(FLUSH_ENV, "5")  # chunks 1 and 2 while the 12 replications run, merged into 3
    loaded = load_dict(transient_only_doc())
    folder = tmp_path / "f"
    res = run_forecast(loaded, 12, levers=["spares"], spares=3, folder=folder, report=False)
    files = sorted(p.relative_to(folder).as_posix() for p in (folder / "reps").rglob("*") if p.is_file())
    assert files == ["reps/baseline/chunk-00003.parquet", "reps/spares/chunk-00003.parquet"], files
    alone = assemble(run_one(res.base.scenario, i, res.target.name, res.base.hash) for i in range(12))
    pd.testing.assert_frame_equal(res.rows, alone, check_exact=True)

    # the layout of older versions: one row per file
    from twin.experiment.rows import read_rows

    rep_dir = rep_dir_of(folder, "baseline")
    (chunk,) = rep_dir.glob("chunk-*.parquet")
    for row in read_rows(chunk):
        write_row(rep_dir / f"rep-{int(row['replication']):05d}.parquet", row)
    chunk.unlink()
    again = run_forecast(loaded, 12, levers=["spares"], spares=3, folder=folder, report=False)
    assert again.computed == 0
    pd.testing.assert_frame_equal(again.rows, res.rows, check_exact=True)
    assert [p.name for p in rep_dir.iterdir()] == ["chunk-00001.parquet"]
