"""Issue 50: phased forecasts, context parallelism, mixture-of-experts, precision, and bad input in the
new fields. Hand computations in the tests; small scenarios, few replications."""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from twin.cli import main
from twin.forecast.run import run_forecast
from twin.model.causes import DownCause
from twin.physics import parallel as par
from twin.physics.memory import memory_breakdown
from twin.scenario import load_dict

NVL = 450e9 * 0.6     # the default interconnect's effective NVLink bytes/s
NIC = 400e9 / 8 * 0.9  # and NIC bytes/s


def phased_doc(parts: dict[str, Any] | None = None) -> dict[str, Any]:
    """8 nodes of 8 GPUs (+2 spares), a 1 B-class model with a layout, two phases: 64 GPUs, then 32 GPUs at
    twice the sequence length."""
    return {
        "name": "phased", "seed": 5, "horizon_days": 5,
        "cluster": {"racks": 1, "nodes_per_rack": 10, "node": {"gpus": 8, "parts": parts or {}}},
        "workload": {
            "scheduler": {"policy": "fifo", "hot_spares": 2},
            "storage": {"write_gb_per_s": 1.0, "read_gb_per_s": 1.0},
            "jobs": [{"name": "llm", "gpus": 64, "training": {"params_b": 1.0, "tokens_t": 0.02},
                      "checkpoint": {"interval_h": 0.25},
                      "step": {"model": {"layers": 16, "hidden": 2048, "heads": 16, "seq_len": 2048,
                                         "vocab": 32000, "global_batch": 64},
                               "layout": {"tp": 8, "dp": 8, "eta_k": 0.5}},
                      "phases": [{"name": "a", "tokens_t": 0.01},
                                 {"name": "b", "tokens_t": 0.01, "gpus": 32, "seq_len": 4096, "global_batch": 32,
                                  "layout": {"dp": 4}}]}],
        },
    }


def alone(doc: dict[str, Any], phase: int) -> dict[str, Any]:
    """The scenario with the job replaced by phase ``phase`` alone (no phases)."""
    d = copy.deepcopy(doc)
    j = d["workload"]["jobs"][0]
    ph = j.pop("phases")[phase]
    j["gpus"] = ph.get("gpus", j["gpus"])
    j["training"]["tokens_t"] = ph["tokens_t"]
    for k in ("seq_len", "global_batch"):
        if k in ph:
            j["step"]["model"][k] = ph[k]
    j["step"]["layout"].update(ph.get("layout", {}))
    return d


def test_phased_forecast_is_the_sum_of_its_phases_failure_free(tmp_path: Path) -> None:
    doc = phased_doc()
    res = run_forecast(load_dict(doc), 2, levers=[], results_root=tmp_path, report=True)
    assert "Phases" in res.report[1].read_text() and "| b |" in res.report[1].read_text()
    got = res.rows["time_to_train_h"].to_numpy()
    sums = 0.0
    for k, label in enumerate(("a", "b")):
        one = run_forecast(load_dict(alone(doc, k)), 2, levers=[], results_root=tmp_path / label, report=False)
        t = one.rows["time_to_train_h"].to_numpy()
        assert res.rows[f"phase.{label}.time_to_train_h"].to_numpy() == pytest.approx(t, rel=1e-12)
        assert t[0] == pytest.approx(one.target.failure_free_h, rel=1e-9)
        sums = sums + t
    assert got == pytest.approx(sums, rel=1e-12)
    assert res.target.failure_free_h == pytest.approx(float(sums[0]), rel=1e-9)
    assert [p["gpus"] for p in res.phases] == [64, 32]
    # the job's own work (twin run) is the phases' summed ideal hours
    job = load_dict(doc).scenario.workload.jobs[0]
    assert job.work_h == pytest.approx(res.target.work_h, rel=1e-12)


def test_phase_failures_follow_its_job_size(tmp_path: Path) -> None:
    # a part failing every 5 h per node: phase a holds 8 nodes, phase b 4; both run long enough for dozens
    parts = {"gpu": {"count": 1, "failure": {"mtbf_h": 5.0}, "repair": {"hot_swap": True, "time": {"dist": "fixed", "value_h": 0.5}}}}
    doc = phased_doc(parts)
    j = doc["workload"]["jobs"][0]
    j["training"]["tokens_t"] = 0.2
    j["phases"][0]["tokens_t"] = 0.1
    j["phases"][1]["tokens_t"] = 0.1
    res = run_forecast(load_dict(doc), 6, levers=[], results_root=tmp_path, report=False)
    rows = res.rows
    rate = {lab: rows[f"phase.{lab}.interruptions"].sum() / rows[f"phase.{lab}.time_to_train_h"].sum()
            for lab in ("a", "b")}
    assert rows["phase.b.interruptions"].sum() > 40
    assert 1.4 < rate["a"] / rate["b"] < 2.8      # 8 nodes against 4: twice the rate per hour


def test_context_parallel_traffic_by_hand() -> None:
    shape = par.ModelShape(layers=8, hidden=4096, heads=32, kv_heads=8, seq_len=8192, vocab=32000, global_batch=4)
    ic = par.Interconnect()
    # tp 2 × cp 4 = 8 GPUs: the cp group on NVLink; all-gather: everything exposed
    lay = par.Layout(tp=2, cp=4, dp=4, cp_collective="all_gather")
    kv = 2 * (8192 / 4) * 1 * (4096 * 8 / 32 / 2) * 2          # K and V chunk, bytes
    t_chunk = kv / NVL + 1e-6
    c = par.cp_step_s(shape, lay, ic, 989e12 * 0.5)
    assert c.bytes == pytest.approx(3 * 3 * kv)                # cp − 1 = 3 steps: 1 chunk forward, 2 backward
    assert c.exposed_s == pytest.approx(9 * t_chunk)
    m = lay.microbatches(shape)
    b = par.step_breakdown(shape, lay, ic, 989e12, 0.5)
    assert b.cp_s == pytest.approx(m * 8 * 9 * t_chunk)
    # ring on NVLink: each step hidden behind its block's attention (4·(s/cp)²·h/tp FLOPs forward)
    ring = par.cp_step_s(shape, par.Layout(tp=2, cp=4, dp=4), ic, 989e12 * 0.5)
    block = 4 * 2048 ** 2 * 4096 / 2 / (989e12 * 0.5)
    assert block > 2 * t_chunk and ring.exposed_s == 0.0 and ring.total_s == pytest.approx(9 * t_chunk)
    # tp 8 × cp 16 spans domains: the NIC; ring exposes max(0, chunk − block) per step (forward) and twice that
    lay2 = par.Layout(tp=8, cp=16, dp=1)
    kv2 = 2 * (8192 / 16) * (1024 / 8) * 2
    t2 = kv2 / NIC + 2e-6
    block2 = 4 * 512 ** 2 * 4096 / 8 / (989e12 * 0.5)
    r2 = par.cp_step_s(shape, lay2, ic, 989e12 * 0.5)
    assert r2.exposed_s == pytest.approx(15 * (max(0, t2 - block2) + max(0, 2 * t2 - 2 * block2)))
    # compute and memory: the sequence is split over cp
    assert par.stage_flops_per_step(shape, lay) == pytest.approx(
        par.stage_flops_per_step(shape, par.Layout(tp=2, dp=4)) / 4)
    one = memory_breakdown(shape, par.Layout(tp=2, dp=4), "selective", 0.0)
    four = memory_breakdown(shape, lay, "selective", 0.0)
    assert four.activations_gb == pytest.approx(one.activations_gb / 4)


def deepseek_v3(seq: int = 4096, batch: int = 1024) -> par.ModelShape:
    mo = par.MoE(experts=256, top_k=8, expert_ffn=2048, shared_experts=1, dense_layers=3)
    return par.ModelShape(layers=61, hidden=7168, heads=128, kv_heads=128, ffn_hidden=18432, gated_mlp=True,
                          vocab=129280, tied_embeddings=False, seq_len=seq, global_batch=batch, moe=mo)


def test_moe_parameters_and_all_to_all_by_hand() -> None:
    ds = deepseek_v3()
    h, pe = 7168, 3 * 7168 * 2048
    attn = 4 * h * h
    total = 3 * (attn + 3 * h * 18432) + 58 * (attn + h * 256 + 257 * pe) + 2 * 129280 * h
    active = 3 * (attn + 3 * h * 18432) + 58 * (attn + h * 256 + 9 * pe) + 2 * 129280 * h
    assert par.params_count(ds) == pytest.approx(total)
    assert par.active_params_count(ds) == pytest.approx(active)
    assert par.params_count(ds) / 1e9 == pytest.approx(671, rel=0.02)        # DeepSeek-V3: 671 B total
    assert par.active_params_count(ds) / 1e9 == pytest.approx(37, rel=0.06)  # and 37 B active (MLA approximated)
    ic = par.Interconnect()
    # ep 8 in one NVLink domain: S·7/8 over NVLink, 4 all-to-alls per MoE layer and microbatch
    lay = par.Layout(pp=1, dp=32, ep=8)
    S = 1 * 4096 * 8 * 1.0 * h * 2
    t8 = S * 7 / 8 / NVL + 1e-6
    m = lay.microbatches(ds)
    b = par.step_breakdown(ds, lay, ic, 989e12, 0.5)
    assert b.ep_s == pytest.approx(m * 4 * 58 * t8)
    # ep 16 over two domains: the NIC carries half of S, NVLink 7/16, at once; capacity factor 1.25 on bytes
    ds2 = par.ModelShape(**{**ds.__dict__, "moe": par.MoE(256, 8, 2048, 1, 3, capacity_factor=1.25)})
    lay16 = par.Layout(pp=1, dp=32, ep=16, ep_overlap=0.5)
    S2 = S * 1.25
    t16 = max(S2 * 7 / 16 / NVL, S2 / 2 / NIC) + 1e-6 + 2e-6
    b16 = par.step_breakdown(ds2, lay16, ic, 989e12, 0.5)
    assert b16.ep_s == pytest.approx(m * 4 * 58 * t16 * 0.5)
    # the capacity factor pads the routed experts' FLOPs; model FLOPs (MFU) count the active weights only
    assert par.hardware_flops_per_step(ds2, False) > par.model_flops_per_step(ds2) == pytest.approx(
        par.model_flops_per_step(ds))
    # experts split over ep in memory
    m8 = memory_breakdown(ds, par.Layout(dp=32, ep=8), "selective", 0.0)
    m16 = memory_breakdown(ds, par.Layout(dp=32, ep=16), "selective", 0.0)
    ex = ds.expert_params() * 2 / 1e9
    assert m8.weights_gb - m16.weights_gb == pytest.approx(ex / 8 - ex / 16)


def test_fp8_precision_runs_its_share_at_the_fp8_peak() -> None:
    peak = par.effective_peak_flops(989e12, 1979e12, 0.8)
    assert peak == pytest.approx(1 / (0.8 / 1979e12 + 0.2 / 989e12))
    doc = phased_doc()
    j = doc["workload"]["jobs"][0]
    del j["phases"]
    bf = load_dict(doc).scenario.workload.jobs[0].step.breakdown()
    j["step"]["layout"].update({"precision": "fp8", "fp8_share": 0.8})
    f8 = load_dict(doc).scenario.workload.jobs[0].step.breakdown()
    assert f8.compute_s == pytest.approx(bf.compute_s * 989e12 / peak)


@pytest.mark.parametrize("edit, path", [
    (lambda j: j["phases"][1]["layout"].update({"dp": 3}), "workload.jobs.0.phases.1.global_batch"),
    (lambda j: j["phases"][1]["layout"].update({"dp": 2}), "workload.jobs.0.phases.1.layout"),
    (lambda j: j["phases"][1]["layout"].update({"cp": 0}), "workload.jobs.0.phases.1.layout.cp"),
    (lambda j: j["phases"][1]["layout"].update({"bogus": 1}), "workload.jobs.0.phases.1.layout.bogus"),
    (lambda j: j["phases"][0].update({"tokens_t": 0.02}), "workload.jobs.0.phases"),
    (lambda j: j["phases"][0].update({"ramp": [{"tokens_t": 0.005, "global_batch": 32}]}),
     "workload.jobs.0.phases.0.ramp"),
    (lambda j: j["step"]["layout"].update({"precision": "fp4"}), "workload.jobs.0.step.layout.precision"),
    (lambda j: j["step"]["layout"].update({"ep": 2}), "workload.jobs.0.step.layout.ep"),
    (lambda j: j["step"]["model"].update({"moe": {"experts": 4, "top_k": 8, "expert_ffn": 64}}),
     "workload.jobs.0.step.model.moe.top_k"),
    (lambda j: j["step"]["model"].update({"moe": {"experts": 8, "top_k": 2, "expert_ffn": 64, "capacity_factor": 0.5}}),
     "workload.jobs.0.step.model.moe.capacity_factor"),
    (lambda j: j["phases"][1].update({"gpus": 128, "layout": {"dp": 16}}), "workload.jobs.0.phases.1.gpus"),
    (lambda j: j["checkpoint"].update({"overhead_s": -1}), "workload.jobs.0.checkpoint.overhead_s"),
    (lambda j: j["checkpoint"].update({"mode": "nvme"}), "workload.jobs.0.checkpoint.mode"),
    (lambda j: j["checkpoint"].update({"storage_every": 0}), "workload.jobs.0.checkpoint.storage_every"),
])
def test_bad_new_fields_exit_2_naming_the_field(tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: Any,
                                                path: str) -> None:
    doc = phased_doc()
    edit(doc["workload"]["jobs"][0])
    _check_exit_2(tmp_path, capsys, doc, path)


@pytest.mark.parametrize("section, value, path", [
    ("storage", {"write_gb_per_s": 1.0, "node_write_gb_per_s": 0}, "workload.storage.node_write_gb_per_s"),
    ("restart", {"init_s_per_rank": -0.1}, "workload.restart.init_s_per_rank"),
])
def test_bad_scale_fields_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], section: str, value: Any,
                                 path: str) -> None:
    doc = phased_doc()
    doc["workload"][section] = value
    _check_exit_2(tmp_path, capsys, doc, path)


def _check_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], doc: dict[str, Any], path: str) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text(yaml.safe_dump(doc, sort_keys=False))
    assert main(["forecast", str(f), "--reps", "2", "--results", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert path in err and "Traceback" not in err
    assert len([ln for ln in err.splitlines() if path in ln]) == 1


def test_ramp_splits_a_phase_into_segments(tmp_path: Path) -> None:
    doc = phased_doc()
    j = doc["workload"]["jobs"][0]
    j["phases"][0] = {"name": "a", "tokens_t": 0.01, "ramp": [{"tokens_t": 0.004, "global_batch": 32},
                                                              {"tokens_t": 0.006, "global_batch": 64}]}
    res = run_forecast(load_dict(doc), 2, levers=[], results_root=tmp_path, report=False)
    assert [p["phase"] for p in res.phases] == ["a.0", "a.1", "b"]
    assert sum(p["failure_free_days"] for p in res.phases) * 24 == pytest.approx(res.target.failure_free_h)
    assert not math.isnan(res.rows["time_to_train_h"].iloc[0])


# ---------------------------------------------------------------- checkpoints and restarts at scale

def test_checkpoint_time_capped_by_front_end_plus_overhead(tmp_path: Path) -> None:
    doc = phased_doc()
    j = doc["workload"]["jobs"][0]
    del j["phases"]
    doc["workload"]["storage"] = {"write_gb_per_s": 2000.0, "read_gb_per_s": 2000.0, "node_write_gb_per_s": 0.5}
    j["checkpoint"] = {"interval_h": 0.25, "overhead_s": 20.0}
    loaded = load_dict(doc)
    res = run_forecast(loaded, 2, levers=[], results_root=tmp_path, report=False)
    size = 16.0                                   # 1 B parameters × 16 bytes
    write_h = (size / min(2000.0, 8 * 0.5) + 20.0) / 3600.0   # 8 writer nodes × 0.5 GB/s, not 2,000 GB/s
    assert res.target.write_h == pytest.approx(write_h, rel=1e-12)
    n = math.ceil(res.target.work_h / 0.25)
    assert res.rows["checkpoint_h"].iloc[0] == pytest.approx(n * write_h, rel=1e-9)
    # without the per-node cap: the aggregate bandwidth and the overhead
    doc["workload"]["storage"].pop("node_write_gb_per_s")
    t = run_forecast(load_dict(doc), 2, levers=[], results_root=tmp_path / "nocap", report=False).target
    assert t.write_h == pytest.approx((size / 2000.0 + 20.0) / 3600.0, rel=1e-12)


def test_restart_grows_with_ranks() -> None:
    from twin.scenario.workload import Restart

    rs = Restart(detection_h=0.05, reschedule_h=0.1, warmup_h=0.1, init_s_per_rank=0.01)
    assert rs.restart_h(0.02, 16384) == pytest.approx(0.05 + 0.1 + 0.02 + 16384 * 0.01 / 3600 + 0.1)
    assert rs.restart_h(0.02, 16384) - rs.restart_h(0.02, 1024) == pytest.approx(15360 * 0.01 / 3600)


def test_peer_checkpoint_lost_only_when_both_holders_fail() -> None:
    import numpy as np

    from twin.model.checkpoints import peer_copy_lost, peer_partner

    holders = np.array([10, 11, 12, 13])
    assert [peer_partner(i, 4) for i in range(4)] == [1, 0, 3, 2]
    assert not peer_copy_lost(holders, [10])              # 11 still holds 10's shard
    assert not peer_copy_lost(holders, [10, 12])          # different pairs
    assert not peer_copy_lost(holders, [10, 14])          # 14 joined later: holds no shard
    assert peer_copy_lost(holders, [10, 11])              # both holders of a shard
    assert peer_copy_lost(holders, [13, 99, 12])
    assert peer_copy_lost(np.array([1, 2, 3]), [3, 2])    # an odd last node copies to the one before
    assert not peer_copy_lost(np.array([1, 2, 3]), [3, 1])
    assert peer_copy_lost(np.array([7]), [7])             # one node: no copy


def test_peer_checkpoint_in_the_workload(tmp_path: Path) -> None:
    # every node fails every 5 h: the peer job restarts from its neighbour's memory (short reads) and falls
    # back to the last drained checkpoint only when two partners fail between checkpoints
    parts = {"gpu": {"count": 1, "failure": {"mtbf_h": 5.0}, "repair": {"hot_swap": True, "time": {"dist": "fixed", "value_h": 0.5}}}}
    doc = phased_doc(parts)
    j = doc["workload"]["jobs"][0]
    del j["phases"]
    j["checkpoint"] = {"interval_h": 0.1, "mode": "peer", "peer_gb_per_s": 1.0, "storage_every": 5}
    loaded = load_dict(doc)
    ck = loaded.scenario.workload.jobs[0].checkpoint
    assert ck.write_time_h(1.0, 1, 8) == pytest.approx(16.0 / 8 / 1.0 / 3600)
    res = run_forecast(loaded, 2, levers=[], results_root=tmp_path, report=False)
    assert (res.rows["completed"] == 1).all() and (res.rows["interruptions"] > 0).all()
    assert np.abs(res.rows["residual_h"]).max() < 1e-6


def test_levers_run_phase_by_phase(tmp_path: Path) -> None:
    parts = {"gpu": {"count": 1, "failure": {"mtbf_h": 5.0}, "repair": {"hot_swap": True, "time": {"dist": "fixed", "value_h": 0.5}}}}
    res = run_forecast(load_dict(phased_doc(parts)), 2, levers=["halve-top"], results_root=tmp_path, report=False)
    (lever, rows), = res.levers
    assert rows is not None and {"phase.a.time_to_train_h", "phase.b.time_to_train_h"} <= set(rows.columns)
    assert rows["time_to_train_h"].to_numpy() == pytest.approx(
        (rows["phase.a.time_to_train_h"] + rows["phase.b.time_to_train_h"]).to_numpy())
    assert (tmp_path / "phased").exists() and any(p.name.startswith(f"{lever.key}-phase-")
                                                  for p in next((tmp_path / "phased").iterdir()).glob("reps/*"))


def test_peer_checkpoint_falls_back_only_when_both_holders_fail() -> None:
    """Deterministic: no part fails by itself; nodes are taken from the job by hand. A loss of one holder
    (or of holders of different shards) restarts from the peer copy; the loss of both holders of a shard
    falls back to the last checkpoint drained to the storage."""
    from twin.sim import Model

    doc = phased_doc()
    j = doc["workload"]["jobs"][0]
    del j["phases"]
    j["checkpoint"] = {"interval_h": 0.1, "mode": "peer", "peer_gb_per_s": 1.0, "storage_every": 3}
    model = Model(load_dict(doc).scenario, 0)
    env = model.engine.env
    wl = model.by_section["workload"]
    while env.peek() < 0.75:
        env.step()
    job = wl.jobs[0]
    assert job.peer_count == 7 and job.stored_h < job.saved_h   # 7 peer checkpoints, the 6th drained
    saved, stored = job.saved_h, job.stored_h
    holders = job.peer_holders.copy()
    gpu_lost = DownCause.part_failed("gpu")  # a node lost to a GPU failure
    wl._on_node_lost(int(holders[0]), gpu_lost)
    assert not job.from_storage and job.progress_h == saved
    wl._on_node_lost(int(holders[2]), gpu_lost)                     # another pair: still one holder each
    assert not job.from_storage and job.progress_h == saved
    wl._on_node_lost(int(holders[1]), gpu_lost)                     # 0's partner: both holders of shard 0
    assert job.from_storage and job.progress_h == stored
    lost = [r.lost_h for r in wl.interruptions]
    assert sum(lost) == pytest.approx(job.acct.lost_h)
