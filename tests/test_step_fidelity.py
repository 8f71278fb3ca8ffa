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


# ---------------------------------------------------------------- 2. step-time formulas

from twin.physics import memory as mem  # noqa: E402
from twin.physics import parallel as par  # noqa: E402


def tiny(layers: int = 4, batch: int = 4) -> par.ModelShape:
    # h 4, s 8, V 10, GPT layer: 12h² = 192 matmul weights
    return par.ModelShape(layers=layers, hidden=4, seq_len=8, vocab=10, global_batch=batch)


def test_causal_attention_halves_the_core_attention_flops() -> None:
    # per layer forward: 2·s·P = 2·8·192 = 3072; core attention 4·s²·h = 4·64·4 = 1024 (512 causal)
    layers, logits = par.forward_flops_per_sequence(tiny(2))
    assert layers == 2 * (3072 + 1024) and logits == 2 * 8 * 4 * 10
    layers_c, _ = par.forward_flops_per_sequence(tiny(2), causal=True)
    assert layers_c == 2 * (3072 + 512)
    # the MFU numerator follows the flag: B·3·(layers + logits)
    assert par.model_flops_per_step(tiny(2), causal=True) == 4 * 3 * (2 * 3584 + 640)


def test_the_slowest_pipeline_stage_with_the_logits_sets_the_compute() -> None:
    # 4 layers over pp 2: the last stage runs 2 layers and the logits; 4 sequences, 3 passes
    shape = tiny(4)
    lay = par.Layout(pp=2, microbatch=1)
    b = par.step_breakdown(shape, lay, par.Interconnect(), peak_flops=1e6, eta_k=1.0)
    stage = 4 * (3 * 2 * 4096 + 3 * 640)          # 105,984 FLOPs on the last stage's one GPU
    assert b.compute_s == pytest.approx(stage / 1e6, rel=1e-12)
    averaged = 4 * 3 * (4 * 4096 + 640) / 2        # the old figure, all compute over both GPUs
    assert b.compute_s > averaged / 1e6
    # the bubble is the slowest stage's: (p − 1)/m of its pipelined time (no tp, no sends exposed)
    assert b.bubble_s == pytest.approx(1 / 4 * (b.compute_s + b.pp_s), rel=1e-12)


def test_dp_overlap_window_is_the_last_microbatch_backward_and_the_drain() -> None:
    lay = par.Layout(dp=2, dp_overlap=1.0)
    # compute 3 s over 3 microbatches, bubble 0.4 s: the gradient collective hides behind
    # 1 s × 2/3 + 0.2 = 0.8667 s, the parameter gather behind 1 s × 1/3 + 0.2 = 0.5333 s
    assert par.dp_exposed_s(1.0, 0.5, 3.0, 3, 0.4, lay) == pytest.approx(1.0 - (2 / 3 + 0.2), rel=1e-12)
    assert par.dp_exposed_s(1.0, 0.6, 3.0, 3, 0.4, lay) == pytest.approx(1.0 - (2 / 3 + 0.2)
                                                                          + 0.6 - (1 / 3 + 0.2), rel=1e-12)
    # full recomputation: the backward is 3 of 4 passes
    rec = par.Layout(dp=2, dp_overlap=0.5, recompute=True)
    assert par.dp_exposed_s(1.0, 0.0, 4.0, 2, 0.0, rec) == pytest.approx(1.0 - 0.5 * 2.0 * 3 / 4, rel=1e-12)
    # end to end: a DDP step of m = 2 microbatches on a slow NIC, with dp_overlap 1
    shape = tiny(4, batch=4)
    ic = par.Interconnect(domain_gpus=1, nic_gbit_s=1e-4)
    b = par.step_breakdown(shape, par.Layout(dp=2, dp_overlap=1.0), ic, 1e6, 1.0)
    t_ar = par.tiered_collective_s("all_reduce", par.params_count(shape) * 4.0, 1, 2, ic)
    assert t_ar > b.compute_s / 2 * 2 / 3 > 0   # partly hidden, for the test to bite
    assert b.dp_s == pytest.approx(t_ar - b.compute_s / 2 * 2 / 3, rel=1e-12)


def test_zero3_gathers_the_parameters_once_more() -> None:
    shape = tiny(4, batch=4)
    ic = par.Interconnect()
    z1 = par.step_breakdown(shape, par.Layout(dp=2, dp_collective="rs_ag", zero_stage=1), ic, 1e6, 1.0)
    z3 = par.step_breakdown(shape, par.Layout(dp=2, dp_collective="rs_ag", zero_stage=3), ic, 1e6, 1.0)
    # one all-gather of the bf16 shard inside one NVLink domain of 2: (2 − 1)/2 · 2N / (450e9 · 0.6) + 1 µs
    n = 4 * 192 + 10 * 4
    ag = 0.5 * 2 * n / (450e9 * 0.6) + 1e-6
    assert z3.dp_s - z1.dp_s == pytest.approx(ag, rel=1e-9)
    assert par.Layout(dp=2, dp_collective="rs_ag").zero == 1 and par.Layout(dp=2).zero == 0
    with pytest.raises(ValueError, match="rs_ag"):
        par.Layout(dp=2, zero_stage=3)


# ---------------------------------------------------------------- 3. memory feasibility

L405 = dict(layers=126, hidden=16384, heads=128, kv_heads=8, ffn_hidden=53248, gated_mlp=True, vocab=128256,
            tied_embeddings=False, seq_len=8192)


def test_llama3_405b_published_layout_fits() -> None:
    """tp 8, pp 16, dp 128 on 16K GPUs, 8K sequence, bf16, FSDP (ZeRO-3, as Llama 3 §3.3.2 shards), attention
    scores not kept, on 80 GiB (85.9 GB) with a 5 GB reserve: computed by hand."""
    shape = par.ModelShape(global_batch=2048, **L405)
    lay = par.Layout(tp=8, pp=16, dp=128, interleave=8, dp_collective="rs_ag", zero_stage=3)
    mb = mem.check_fits(shape, lay, "selective", hbm_gb=85.9, reserve_gb=5.0)
    n = par.params_count(shape) / 128
    layer = 2 * 16384**2 + 2 * 16384 * 1024 + 3 * 16384 * 53248
    weights = 2 * n / 128 + 2 * layer / 8 * 2
    grads, opt = 4 * n / 128, 12 * n / 128
    sbh = 8192 * 16384
    per_layer = sbh * (2 + 1 + 1 + 2 * 8 / 128 + 1 + 1 + 3 * 53248 / 16384) * 2 / 8
    acts = 16 * (1 + 15 / (16 * 8)) * (126 / 16) * per_layer
    assert mb.stage == "first"
    assert mb.total_gb == pytest.approx((weights + grads + opt + acts) / 1e9 + 5.0, rel=1e-12)
    assert mb.total_gb < 85.9


def test_405b_replicated_on_every_gpu_is_refused_with_how_much(tmp_path: Path, capsys) -> None:
    from tests.test_forecast import small_training_doc

    doc = small_training_doc()
    doc["workload"]["jobs"] = [{
        "name": "j", "gpus": 64, "training": {"params_b": 405, "tokens_t": 0.02},
        "step": {"model": {**L405, "global_batch": 64}, "layout": {"tp": 1, "pp": 1, "dp": 64}}}]
    path = tmp_path / "rep.yaml"
    path.write_text(yaml.safe_dump(doc))
    # the check is on by default (hbm_gb 85.9, the H100's 80 GiB): twin run refuses it at load too
    assert main(["run", str(path), "--results", str(tmp_path / "run")]) == 2
    run_err = capsys.readouterr().err
    assert "does not fit in memory" in run_err and len(run_err.strip().splitlines()) == 1
    rc = main(["forecast", str(path), "--reps", "1", "--results", str(tmp_path / "r"), "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2
    # by hand: 2 + 4 + 12 bytes per parameter of the whole model, one sequence's activations and logits,
    # the 5 GB reserve
    shape = par.ModelShape(global_batch=64, **L405)
    n = par.params_count(shape)
    per_layer = 8192 * 16384 * (2 + 1 + 1 + 2 * 8 / 128 + 1 + 1 + 3 * 53248 / 16384) * 2
    total = (18 * n + 126 * per_layer + 8192 * 128256 * 4) / 1e9 + 5.0
    assert "workload.jobs.0.step.layout.hbm_gb" in err and "does not fit in memory" in err
    assert f"{total - 85.9:.1f} GB over" in err and "largest: optimizer" in err
    assert "Traceback" not in err


def test_selective_recompute_fits_where_no_recompute_does_not() -> None:
    """A 1.3 B GPT (24 layers, h 2048, 16 heads, s 2048, V 51,200) on dp 8, DDP: model state 18 bytes per
    parameter, 32·s·h bytes per layer kept with selective recompute, + 2·a·s² bytes of attention scores
    without, the fp32 logits; 29 GB of memory, no reserve."""
    shape = par.ModelShape(layers=24, hidden=2048, heads=16, seq_len=2048, vocab=51200, global_batch=8)
    lay = par.Layout(dp=8)
    n = 24 * 12 * 2048**2 + 51200 * 2048
    state = 18 * n
    sel = 24 * 32 * 2048 * 2048
    scores = 24 * 2 * 16 * 2048**2
    logits = 2048 * 51200 * 4
    fit = mem.check_fits(shape, lay, "selective", hbm_gb=29.0, reserve_gb=0.0)
    assert fit.total_gb == pytest.approx((state + sel + logits) / 1e9, rel=1e-12)
    over = (state + sel + scores + logits) / 1e9 - 29.0
    assert over > 0
    with pytest.raises(ValueError, match=rf"{over:.1f} GB over"):
        mem.check_fits(shape, lay, "none", hbm_gb=29.0, reserve_gb=0.0)
    # full recomputation keeps the layer inputs (2·s·h bytes each) and one layer's selective set
    full = mem.memory_breakdown(shape, lay, "full", reserve_gb=0.0)
    assert full.activations_gb == pytest.approx((24 * 2 * 2048**2 + 32 * 2048**2) / 1e9, rel=1e-12)


# ---------------------------------------------------------------- 4. layout search

def test_layout_search_returns_the_published_405b_layout_or_a_faster_feasible_one() -> None:
    from twin.physics.layouts import search_layouts

    shape = par.ModelShape(global_batch=2048, **L405)
    base = par.Layout(dp_collective="rs_ag", dp_overlap=1.0, pp_overlap=1.0)
    ic = par.Interconnect()
    cands = search_layouts(shape, 16384, base, ic, 989e12, 0.57, hbm_gb=85.9, reserve_gb=5.0)
    published = par.Layout(tp=8, pp=16, dp=128, interleave=8, dp_collective="rs_ag", zero_stage=3, dp_overlap=1.0,
                           pp_overlap=1.0, selective_recompute=True)
    t_pub = par.step_breakdown(shape, published, ic, 989e12, 0.57).total_s
    assert any(c.layout == published and c.mode == "selective" for c in cands)   # the published one is feasible
    best = cands[0]
    assert best.step_s <= t_pub
    assert [c.step_s for c in cands] == sorted(c.step_s for c in cands)
    for c in cands:   # every candidate fits and is a whole split of the job
        assert c.memory_gb <= 85.9 and c.layout.gpus == 16384
        mem.check_fits(shape, c.layout, c.mode, 85.9, 5.0)   # type: ignore[arg-type]
    # replicating the model (tp 1, pp 1) never fits
    assert not any(c.layout.tp == 1 and c.layout.pp == 1 for c in cands)


def test_forecast_search_layouts_prints_the_fastest_feasible(tmp_path: Path, capsys) -> None:
    doc = yaml.safe_load((SCEN / "forecast-405b.yaml").read_text())
    doc["extends"] = str(SCEN / "pretrain-16k.yaml")
    assert doc["workload"]["jobs"][0]["step"]["layout"]["hbm_gb"] == 85.9   # memory-checked at load
    path = tmp_path / "f.yaml"
    path.write_text(yaml.safe_dump(doc))
    rc = main(["forecast", str(path), "--search-layouts", "3"])
    out = capsys.readouterr().out
    assert rc == 0, out
    lines = [ln for ln in out.splitlines() if ln.startswith("  tp ")]
    assert len(lines) == 3
    assert "tp 8, pp 16, dp 128, v 8, ZeRO-3, recompute selective" in out
    # with the memory check turned off (hbm_gb null): exit 2, naming the field
    doc["workload"]["jobs"][0]["step"]["layout"]["hbm_gb"] = None
    path.write_text(yaml.safe_dump(doc))
    assert main(["forecast", str(path), "--search-layouts"]) == 2
    assert "step.layout.hbm_gb" in capsys.readouterr().err


# ---------------------------------------------------------------- 5. selective recompute and sequence parallelism

def test_selective_recompute_adds_one_core_attention_forward() -> None:
    # tiny(2): per layer forward 2·s·P = 3072 and core attention 4·s²·h = 1024 (512 causal); logits 640
    shape = tiny(2)
    plain = par.hardware_flops_per_step(shape, recompute=False)
    sel = par.hardware_flops_per_step(shape, recompute=False, selective=True)
    assert plain == 4 * (3 * 2 * (3072 + 1024) + 3 * 640)
    assert sel - plain == 4 * 2 * 1024                      # B × l × one more core-attention forward
    sel_c = par.hardware_flops_per_step(shape, recompute=False, causal=True, selective=True)
    assert sel_c == 4 * (3 * 2 * (3072 + 512) + 2 * 512 + 3 * 640)
    # full recomputation already recomputes everything: selective adds nothing then
    assert par.hardware_flops_per_step(shape, True, selective=True) == par.hardware_flops_per_step(shape, True)
    # a GPT shape: 72·B·s·l·h²·(1 + 2s/(9h) + V/(12·l·h)) (3 passes of 24·s·h² + 4·s²·h, one more 4·s²·h)
    gpt = par.ModelShape(layers=24, hidden=2048, heads=16, seq_len=2048, vocab=51200, global_batch=8)
    s, h, v, nl, b = 2048.0, 2048.0, 51200.0, 24.0, 8.0
    closed = 72 * b * s * nl * h * h * (1 + 2 * s / (9 * h) + v / (12 * nl * h))
    assert par.hardware_flops_per_step(gpt, False, selective=True) == pytest.approx(closed, rel=1e-12)
    # the model FLOPs (the MFU numerator) do not count the recomputation
    assert par.model_flops_per_step(gpt) == pytest.approx(72 * b * s * nl * h * h * (1 + s / (6 * h) + v / (12 * nl * h)),
                                                          rel=1e-12)


def test_flashattention2_recomputes_half_a_core_attention_forward() -> None:
    """attention_recompute_share 0.5 (FlashAttention-2: the backward recomputes QKᵀ, one of the forward's two
    s²-matmuls): half a core-attention forward more; 1 (Megatron-LM's selective recompute) a whole one; 0 none."""
    shape = tiny(2)                       # per layer 2·s·P = 3072, core attention 1024; logits 640; 4 sequences
    plain = par.hardware_flops_per_step(shape, recompute=False)
    half = par.hardware_flops_per_step(shape, recompute=False, selective=True, attention_share=0.5)
    assert half == 4 * (3 * 2 * (3072 + 1024) + 0.5 * 2 * 1024 + 3 * 640)
    assert half - plain == 4 * 2 * 512
    assert par.hardware_flops_per_step(shape, False, selective=True, attention_share=0.0) == plain
    # the slowest stage of a 2-stage pipeline: 2 of the 4 layers, 1e6 FLOP/s
    b = par.step_breakdown(tiny(4), par.Layout(pp=2, selective_recompute=True, attention_recompute_share=0.5),
                           par.Interconnect(), peak_flops=1e6, eta_k=1.0)
    assert b.compute_s == pytest.approx(4 * (2 * (3 * 4096 + 512) + 3 * 640) / 1e6, rel=1e-12)
    # the scenario field reaches the step model, and is a share
    from pydantic import ValidationError

    from twin.scenario.workload import LayoutSpec

    assert LayoutSpec().physics().attention_recompute_share == 1.0
    assert LayoutSpec(attention_recompute_share=0.5).physics().attention_recompute_share == 0.5
    with pytest.raises(ValidationError, match="attention_recompute_share"):
        LayoutSpec(attention_recompute_share=1.5)
    with pytest.raises(ValueError, match="attention_recompute_share"):
        par.Layout(attention_recompute_share=-0.1)


def test_selective_recompute_lengthens_the_slowest_stage() -> None:
    shape = tiny(4)
    lay = par.Layout(pp=2, selective_recompute=True)
    b = par.step_breakdown(shape, lay, par.Interconnect(), peak_flops=1e6, eta_k=1.0)
    # the last stage: 2 layers × (3 × 4096 + 1024) and 3 × 640 of logits, 4 sequences
    assert b.compute_s == pytest.approx(4 * (2 * (3 * 4096 + 1024) + 3 * 640) / 1e6, rel=1e-12)


def test_sequence_parallelism_splits_the_norm_and_gemm_inputs_over_tp() -> None:
    """tp 8, one 2,048-token sequence of a GPT layer (h 2048, 16 heads), selective: with sequence parallelism
    all 2 + 1 + 1 + 2 + 1 + 1 + 8 = 16 s·h elements are split over tp; without, the 2 norm inputs and the QKV
    and MLP inputs (4·s·h) are whole on every rank and only the other 12 are split."""
    shape = par.ModelShape(layers=24, hidden=2048, heads=16, seq_len=2048, vocab=51200, global_batch=8)
    sh = 2048 * 2048
    sp = mem.activation_bytes_per_layer(shape, par.Layout(tp=8, dp=1), "selective")
    no_sp = mem.activation_bytes_per_layer(shape, par.Layout(tp=8, dp=1, sequence_parallel=False), "selective")
    assert sp == pytest.approx(16 * sh * 2 / 8, rel=1e-12)
    assert no_sp == pytest.approx((4 * sh + 12 * sh / 8) * 2, rel=1e-12)
    # without recomputation the attention scores (a·s² per sequence) are split over tp either way
    none = mem.activation_bytes_per_layer(shape, par.Layout(tp=8, sequence_parallel=False), "none")
    assert none - no_sp == pytest.approx(16 * 2048**2 * 2 / 8, rel=1e-12)
    # full recomputation keeps each layer's input: whole on every rank without sequence parallelism
    assert mem.activation_bytes_per_layer(shape, par.Layout(tp=8, sequence_parallel=False), "full") == 2 * sh
    assert mem.activation_bytes_per_layer(shape, par.Layout(tp=8), "full") == 2 * sh / 8
    # and it changes no FLOPs and no step time
    ic = par.Interconnect()
    a = par.step_breakdown(shape, par.Layout(tp=8), ic, 312e12, 0.5).total_s
    assert par.step_breakdown(shape, par.Layout(tp=8, sequence_parallel=False), ic, 312e12, 0.5).total_s == a


def test_layout_selective_recompute_reaches_the_step_model() -> None:
    from twin.scenario.workload import LayoutSpec

    assert LayoutSpec().physics().selective_recompute is True
    assert LayoutSpec(selective_recompute=False).physics().selective_recompute is False
    assert LayoutSpec(sequence_parallel=False).physics().sequence_parallel is False


# ---------------------------------------------------------------- 6. NVLink in-switch reduction, per-operation efficiency

def test_nvls_all_reduce_moves_each_buffer_once() -> None:
    s_bytes = 1e9
    ring = par.Interconnect()
    nvls = par.Interconnect(nvls=True)
    bw = 450e9 * 0.6
    # ring inside 8 GPUs: 2·7/8·S/(B·η) + 14 µs; NVLS: S/(B·η) + 2 µs
    assert par.tiered_collective_s("all_reduce", s_bytes, 8, 1, ring) == pytest.approx(1.75 * s_bytes / bw + 14e-6,
                                                                                        rel=1e-12)
    assert par.tiered_collective_s("all_reduce", s_bytes, 8, 1, nvls) == pytest.approx(s_bytes / bw + 2e-6, rel=1e-12)
    # reduce-scatter and all-gather are not reductions in the switch: unchanged
    for op in ("reduce_scatter", "all_gather"):
        assert par.tiered_collective_s(op, s_bytes, 8, 1, nvls) == par.tiered_collective_s(op, s_bytes, 8, 1, ring)
    # across domains only the NVLink tier changes: 2 domains add 2·1/2·(S/8)/(50e9·0.9) + 2 µs either way
    nic = 2 * 0.5 * (s_bytes / 8) / (50e9 * 0.9) + 2 * 2e-6
    assert par.tiered_collective_s("all_reduce", s_bytes, 8, 2, nvls) == pytest.approx(s_bytes / bw + 2e-6 + nic,
                                                                                        rel=1e-12)


def test_per_operation_nvlink_efficiency_scales_its_bandwidth() -> None:
    ic = par.Interconnect(nvlink_op_eff=(1.0, 1.5, 0.8))
    bw = 450e9 * 0.6
    assert par.tiered_collective_s("reduce_scatter", 8e8, 8, 1, ic) == pytest.approx(7 / 8 * 8e8 / (bw * 1.5) + 7e-6,
                                                                                      rel=1e-12)
    assert par.tiered_collective_s("all_gather", 8e8, 8, 1, ic) == pytest.approx(7 / 8 * 8e8 / (bw * 0.8) + 7e-6,
                                                                                  rel=1e-12)
    with pytest.raises(ValueError, match="nvlink_op_eff"):
        par.Interconnect(nvlink_op_eff=(1.0, 0.0, 1.0))


def test_nvls_speeds_tp_only_without_sequence_parallelism() -> None:
    shape = par.ModelShape(layers=24, hidden=2048, heads=16, seq_len=2048, vocab=51200, global_batch=8)
    ring, nvls = par.Interconnect(), par.Interconnect(nvls=True)
    sp = par.Layout(tp=8)
    assert par.step_breakdown(shape, sp, nvls, 312e12, 0.5).tp_s == par.step_breakdown(shape, sp, ring, 312e12,
                                                                                         0.5).tp_s
    no_sp = par.Layout(tp=8, sequence_parallel=False)
    act = 2048 * 2048 * 2.0
    # 8 microbatches × 24 layers × 4 all-reduces of s·h·2 bytes in one domain
    want = 8 * 24 * 4 * (act / (450e9 * 0.6) + 2e-6)
    assert par.step_breakdown(shape, no_sp, nvls, 312e12, 0.5).tp_s == pytest.approx(want, rel=1e-12)
    # the schema passes both through
    from twin.scenario.workload import LayoutSpec

    ic = LayoutSpec(nvls=True, nvlink_op_eff={"reduce_scatter": 1.5}).interconnect()
    assert ic.nvls and ic.nvlink_op_eff == (1.0, 1.5, 1.0)


# ---------------------------------------------------------------- 7. MFU by each paper's FLOP convention

def test_a_published_mfu_converts_by_its_papers_convention() -> None:
    from twin.physics.flop_conventions import convert_mfu, flops_per_step

    # Llama 3 405B at 8K: PaLM's count per token 6·N_matmul + 12·l·h·s (+ the output layer's 6·h·V)
    shape = par.ModelShape(global_batch=2048, **L405)
    layer = 2 * 16384**2 + 2 * 16384 * 1024 + 3 * 16384 * 53248
    tokens = 2048 * 8192
    palm = tokens * (6 * (126 * layer + 16384 * 128256) + 12 * 126 * 16384 * 8192)
    six_n = tokens * 6 * (126 * layer + 2 * 16384 * 128256)
    assert flops_per_step(shape, "palm") == pytest.approx(palm, rel=1e-12)
    assert flops_per_step(shape, "6N") == pytest.approx(six_n, rel=1e-12)
    assert convert_mfu(0.41, shape, "palm", "6N") == pytest.approx(0.41 * six_n / palm, rel=1e-12)
    causal = tokens * (6 * (126 * layer + 16384 * 128256) + 6 * 126 * 16384 * 8192)
    assert convert_mfu(0.41, shape, "palm", "palm_causal") == pytest.approx(0.41 * causal / palm, rel=1e-12)
    # SC21's 1 T row (52 % of peak, eq. 3 with recomputation) as model FLOPs: 72/96 × (1 + s/6h + V/12lh)/(1 + s/6h +
    # V/16lh)
    gpt = par.ModelShape(layers=128, hidden=25600, heads=160, seq_len=2048, vocab=51200, global_batch=3072)
    s, h, v, nl = 2048, 25600, 51200, 128
    want = 0.52 * 72 * (1 + s / (6 * h) + v / (12 * nl * h)) / (96 * (1 + s / (6 * h) + v / (16 * nl * h)))
    assert convert_mfu(0.52, gpt, "megatron_sc21", "palm") == pytest.approx(want, rel=1e-12)
    with pytest.raises(ValueError, match="allowed"):
        flops_per_step(gpt, "hfu")   # type: ignore[arg-type]


def test_a_job_mfu_in_palm_convention_sizes_the_run_with_attention() -> None:
    from tests.test_forecast import small_training_doc

    doc = small_training_doc()
    model = {"layers": 8, "hidden": 1024, "seq_len": 4096, "vocab": 8000, "global_batch": 64}
    doc["workload"]["jobs"] = [{"name": "j", "gpus": 64, "step": {"model": model},
                                "training": {"params_b": 1.0, "tokens_t": 0.02, "peak_tflops": 989, "mfu": 0.4,
                                             "mfu_convention": "palm"}}]
    job = load_dict(doc).scenario.workload.jobs[0]
    per_token = 6 * (8 * 12 * 1024**2 + 1024 * 8000) + 12 * 8 * 1024 * 4096
    assert job.work_h == pytest.approx(0.02e12 * per_token / (64 * 989e12 * 0.4) / 3600, rel=1e-12)
    # 6N (the default): 6·P·D
    del doc["workload"]["jobs"][0]["training"]["mfu_convention"]
    job6 = load_dict(doc).scenario.workload.jobs[0]
    assert job6.work_h == pytest.approx(6 * 1e9 * 0.02e12 / (64 * 989e12 * 0.4) / 3600, rel=1e-12)
    # palm without a model: refused, naming the field
    doc["workload"]["jobs"][0]["training"]["mfu_convention"] = "palm"
    del doc["workload"]["jobs"][0]["step"]
    with pytest.raises(Exception, match="mfu_convention"):
        load_dict(doc)


def test_a_job_mfu_in_the_sc21_convention_is_declared_and_sizes_the_run_by_eq3() -> None:
    """training.mfu_convention megatron_sc21: a 'percent of peak' as Megatron-LM's Table 1 prints it (eq. 3, the
    recomputed forward counted) sizes the run by eq. 3's FLOPs, hand-computed here."""
    from tests.test_forecast import small_training_doc

    doc = small_training_doc()
    model = {"layers": 8, "hidden": 1024, "heads": 8, "seq_len": 2048, "vocab": 8000, "global_batch": 64}
    doc["workload"]["jobs"] = [{"name": "j", "gpus": 64, "step": {"model": model},
                                "training": {"params_b": 1.0, "tokens_t": 0.02, "peak_tflops": 312, "mfu": 0.5,
                                             "mfu_convention": "megatron_sc21"}}]
    job = load_dict(doc).scenario.workload.jobs[0]
    steps = 0.02e12 / (64 * 2048)
    b, s, nl, h, v = 64, 2048, 8, 1024, 8000
    eq3 = 96 * b * s * nl * h * h * (1 + s / (6 * h) + v / (16 * nl * h))
    assert job.work_h == pytest.approx(steps * eq3 / (64 * 312e12 * 0.5) / 3600, rel=1e-12)
    # the same utilisation read as PaLM's model FLOPs would give a shorter run: eq. 3 counts one more forward
    doc["workload"]["jobs"][0]["training"]["mfu_convention"] = "palm"
    assert load_dict(doc).scenario.workload.jobs[0].work_h < job.work_h
    # without a model it is refused, naming the field
    doc["workload"]["jobs"][0]["training"]["mfu_convention"] = "megatron_sc21"
    del doc["workload"]["jobs"][0]["step"]
    with pytest.raises(Exception, match="mfu_convention"):
        load_dict(doc)


# ---------------------------------------------------------------- 8. validation that discriminates

def test_out_of_sample_mfu_rows_name_their_naive_predictor_and_say_if_they_beat_it() -> None:
    from twin.validation.compute import llama3_mfu, megatron_sc21
    from twin.validation.framework import Settings

    s = Settings()
    llama = [r for r in llama3_mfu(s) if r.check]
    assert len(llama) == 2                                  # 16K GPUs at 8K, and the 131K long-context run
    for r in llama:
        assert r.sample == "out-of-sample" and r.naive == ("carry the calibration run's MFU over", 0.43)
        assert r.beats_naive and r.passed
        assert abs(r.mean - r.reference) < abs(0.43 - r.reference)
    # the long-context row: counted as 6N (attention left out) the MFU would be far off: a wrong model excluded
    long = next(r for r in llama if "131,072" in r.quantity)
    assert all(r_ex for r_ex in (long.excludes(v) for v in long.wrong.values()))
    # Megatron SC21: judged through the nine rows' mean absolute error, which beats the naive predictor's; the
    # 1 T row's naive predictor (52 %, the calibration row's) is exact there: information, said so, not beaten
    mega = megatron_sc21(s)
    judged = [r for r in mega if r.check]
    assert len(judged) == 1 and judged[0].beats_naive and judged[0].passed
    one_t = next(r for r in mega if "1008 B" in r.quantity)
    assert not one_t.check and one_t.naive is not None and one_t.naive[1] == 0.52 and one_t.reference == 0.52
    assert one_t.beats_naive is False and "cannot discriminate" in one_t.note


def test_a_judged_row_that_does_not_beat_its_naive_predictor_fails() -> None:
    from twin.validation.framework import Exact, Settings, result

    s = Settings()
    # within the ±3-point band, but the naive predictor is closer: the row fails, and says why
    r = result("c", "q", 0.50, Exact(0.52, 0.03), s, naive=("carry over", 0.505), sample="out-of-sample")
    assert not r.passed and r.beats_naive is False
    assert r.failed_invariants() == ["beats the naive predictor 'carry over'"]
    assert result("c", "q", 0.50, Exact(0.51, 0.03), s, naive=("carry over", 0.52)).passed
    # an information row is never judged, naive predictor or not
    assert result("c", "q", 0.50, Exact(0.52, 0.0), s, naive=("carry over", 0.5), check=False).passed


def test_summary_line_counts_the_naive_predictors_beaten(tmp_path: Path) -> None:
    from twin.validation.report import markdown_table, summary_line, text_table
    from twin.validation.suite import run_suite

    from twin.validation.framework import Settings

    suite = run_suite(["megatron_sc21", "llama3_mfu"], Settings(quick=True), workers=1)
    assert suite.naive_beaten == (3, 3) and suite.passed
    assert "naive predictors beaten: 3 of 3" in summary_line(suite)
    table = text_table(suite)
    assert "vs naive" in table and "NOT beaten" in table      # the 1 T information row says so
    md = markdown_table(suite)
    header = md.splitlines()[0]
    assert "| n | sample | verdict | vs naive |" in header
    row_1t = next(ln for ln in md.splitlines() if "1008 B" in ln)
    assert row_1t.endswith("| NOT beaten: carry the calibration row's share over 0.52 |")


# ---------------------------------------------------------------- 9. forecast intervals at few replications

def test_quantile_ends_the_runs_cannot_give_are_said_not_printed_as_0_or_a_dash(tmp_path: Path, capsys) -> None:
    import numpy as np

    from twin.experiment import stats
    from twin.forecast.report import runs_for_quantile_end

    # (1 − 0.1)ⁿ ≤ 0.025 from n = 36 (ln 0.025 / ln 0.9 = 35.01); 0.5ⁿ ≤ 0.025 from n = 6
    assert runs_for_quantile_end(0.1, upper=False) == 36 and runs_for_quantile_end(0.9, upper=True) == 36
    assert runs_for_quantile_end(0.5, upper=False) == 6 and runs_for_quantile_end(0.1, upper=True) == 2
    nan = (float("nan"), float("nan"))
    assert np.isnan(stats.quantile_ci(np.arange(35.0), [0.1], bounds=nan)[0, 0])
    assert np.isfinite(stats.quantile_ci(np.arange(36.0), [0.1], bounds=nan)[0, 0])
    path = tmp_path / "fc.yaml"
    path.write_text(yaml.safe_dump(_small_layout_doc()))
    rc = main(["forecast", str(path), "--reps", "4", "--results", str(tmp_path / "r"), "--levers", "none",
               "--no-report"])
    out = capsys.readouterr().out
    assert rc == 0, out
    rows = {ln.split()[0]: ln for ln in out.splitlines() if ln.strip().startswith(("P10", "P50", "P90", "mean"))}
    assert "(lower end needs ≥ 36 runs)" in rows["P10"] and "(upper end needs ≥ 36 runs)" in rows["P90"]
    assert "not estimable from 4 runs (needs ≥ 6)" in rows["P50"]
    for k in ("P10", "P50", "P90"):
        assert "–" not in rows[k] and "[0," not in rows[k] and "inf" not in rows[k]


# ---------------------------------------------------------------- 10. attention scores through memory (SC21)

def test_attention_scores_in_memory_cost_their_bytes_at_the_memory_bandwidth() -> None:
    # GPT 1.3 B-like: 8 sequences, dp 2, tp 2, pp 2 (12 of 24 layers on the last stage), 16 heads, s 2048
    shape = par.ModelShape(layers=24, hidden=2048, heads=16, seq_len=2048, vocab=51200, global_batch=8)
    lay = par.Layout(tp=2, pp=2, dp=2, score_bytes=45.0, hbm_bytes_s=1.8e12)
    elems = 8 / 2 * 24 / 2 * 16 / 2 * 2048 * 2048
    assert par.score_memory_s(shape, lay) == pytest.approx(elems * 45.0 / 1.8e12, rel=1e-12)
    ic = par.Interconnect()
    base = par.step_breakdown(shape, par.Layout(tp=2, pp=2, dp=2), ic, 312e12, 0.7)
    b = par.step_breakdown(shape, lay, ic, 312e12, 0.7)
    assert b.compute_s - base.compute_s == pytest.approx(elems * 45.0 / 1.8e12, rel=1e-9)
    with pytest.raises(ValueError, match="hbm_bytes_s"):
        par.Layout(score_bytes=45.0)


def test_sc21_small_rows_are_explained_by_the_scores_in_memory() -> None:
    """Every SC21 row whose published share differs from the calibration row's beats 'carry the 52 % over' once
    the scores' memory traffic is counted and each row runs its authors' layout (run_table_1.sh); the pipeline
    rows 39-310 B fall inside ±3 points; without the traffic the smallest model is over-predicted by more than
    15 points."""
    import dataclasses

    from twin.validation import compute as C
    from twin.validation.framework import Settings

    rows = C.read_megatron_table()
    info = [r for r in C.megatron_sc21(Settings()) if not r.check and r.naive is not None]
    assert len(info) == 9
    for r in info:
        assert -0.025 < r.mean - r.reference < 0.033, (r.quantity, r.mean)
        if r.reference != 0.52:
            assert r.beats_naive, r.quantity
        if any(f"{b} B" in r.quantity for b in ("39.1", "76.1", "145.6", "310.1")):
            assert abs(r.mean - r.reference) <= 0.03, (r.quantity, r.mean)
    cal = next(r for r in rows if r["role"] == "in-sample")
    small = rows[0]

    def flops_only(row: dict[str, Any], eta: float) -> float:
        shape, lay = C.megatron_setup(row)
        t = par.step_breakdown(shape, dataclasses.replace(lay, score_bytes=0.0), C.SELENE, C.A100_PEAK_FLOPS,
                               eta).total_s
        return par.mfu(C.megatron_paper_flops(row["batch"], 2048, row["layers"], row["hidden"], 51200), t,
                       row["gpus"], C.A100_PEAK_FLOPS)

    eta0 = C.tune_eta_k(lambda e: flops_only(cal, e), 0.52)
    assert flops_only(small, eta0) - 0.44 > 0.15


def test_llama_long_context_row_depends_on_the_attention_recompute_share_as_documented() -> None:
    """The Llama 3 case assumes a whole core-attention forward recomputed (Megatron-LM's selective recompute); with
    FlashAttention-2's half (η_k re-tuned) the 131K row would leave its ±2-point band: 40.9 % against 38 %, as
    PROVENANCE and docs/validation.md say."""
    import dataclasses

    from twin.validation import compute as C

    rows = C.read_llama_table4()

    def mfu(row: dict[str, Any], eta: float, share: float) -> float:
        shape, lay = C.llama_setup(row)
        lay = dataclasses.replace(lay, attention_recompute_share=share)
        t = par.step_breakdown(shape, lay, C.GRAND_TETON, C.H100_PEAK_FLOPS, eta).total_s
        return par.mfu(par.model_flops_per_step(shape), t, row["gpus"], C.H100_PEAK_FLOPS)

    assert C.llama_setup(rows[2])[1].attention_recompute_share == 1.0
    eta = C.tune_eta_k(lambda e: mfu(rows[0], e, 0.5), 0.43)
    assert round(eta, 4) == 0.5796
    assert round(mfu(rows[1], eta, 0.5), 3) == 0.407 and round(mfu(rows[2], eta, 0.5), 3) == 0.409
    assert abs(mfu(rows[2], eta, 0.5) - 0.38) > 0.02


def test_sc21_pp1_rows_over_the_band_are_within_the_score_traffic_assumptions() -> None:
    """The SC21 rows without pipeline parallelism still over the ±3 band (1.7 B, 3.6 B, 18.4 B: +3.05, +3.17,
    +3.02 points) come inside it at the low end of the stated range of the scores' memory-bandwidth efficiency
    (0.8 of 2,039 GB/s instead of 0.9, η_k re-tuned), as docs/validation.md says; the case keeps 0.9 (not tuned)."""
    import dataclasses

    from twin.validation import compute as C

    rows = C.read_megatron_table()
    cal = next(r for r in rows if r["role"] == "in-sample")

    def share(row: dict[str, Any], eta: float, eff: float) -> float:
        shape, lay = C.megatron_setup(row)
        lay = dataclasses.replace(lay, hbm_bytes_s=2039e9 * eff)
        t = par.step_breakdown(shape, lay, C.SELENE, C.A100_PEAK_FLOPS, eta).total_s
        return par.mfu(C.megatron_paper_flops(row["batch"], 2048, row["layers"], row["hidden"], 51200), t,
                       row["gpus"], C.A100_PEAK_FLOPS)

    assert C.A100_HBM_BYTES_S == 2039e9 * 0.9
    over = {}
    for eff in (0.9, 0.8):
        eta = C.tune_eta_k(lambda e: share(cal, e, eff), 0.52)
        over[eff] = {r["params_b"]: share(r, eta, eff) - r["percent_of_peak"] / 100 for r in rows if r is not cal}
    assert sorted(k for k, d in over[0.9].items() if abs(d) > 0.03) == [1.7, 3.6, 18.4]
    assert all(abs(d) <= 0.03 for d in over[0.8].values()), over[0.8]
