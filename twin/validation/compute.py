"""Compute and interconnect cases: the step-time model of :mod:`twin.physics.parallel` against
independent constructions and published training runs (issue 28).

* ``collective_tiers`` (exact): the tiered all-reduce closed form against the time of the
  hierarchical ring schedule built step by step here (reduce-scatter inside each NVLink domain,
  ring all-reduce of the shards across domains, all-gather inside the domain).
* ``pipeline_bubble`` (exact): the bubble share (p − 1)/(v·m) against the makespan of the
  interleaved pipeline schedule simulated here as a dependency graph of microbatch chunks.
* ``megatron_sc21``: Narayanan et al. SC21 Table 1 (``data/megatron-sc21-table1.csv``, each row's
  microbatch, interleaving and DDP from the authors' ``examples/sc21/run_table_1.sh``): the kernel
  efficiency η_k is tuned on the 529.6 B row, the other nine rows are predicted and their mean absolute
  error judged (±3 points) against the naive predictor's (the 52 % carried over).
* ``llama3_mfu``: Llama 3 405B Table 4 (``data/llama3-405b-table4.csv``): η_k tuned on the
  8,192-GPU run, the 16,384-GPU run at 8K predicted (±2 points).

:data:`PROVENANCE` states for the two field cases what came from the source, what was tuned,
what was assumed and what is out-of-sample; the report prints it.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from scipy.optimize import brentq

from twin.physics import parallel as par
from twin.physics.flop_conventions import convert_mfu
from twin.validation.framework import CaseResult, Exact, Settings, result

DATA = Path(__file__).resolve().parent / "data"
MEGATRON_CSV = DATA / "megatron-sc21-table1.csv"
LLAMA_TABLE4_CSV = DATA / "llama3-405b-table4.csv"
REL_TOL = 1e-9

A100_PEAK_FLOPS = 312e12
"""A100 dense fp16/bf16 peak, FLOP/s (the peak Narayanan et al. use)."""
H100_PEAK_FLOPS = 989e12
"""H100 SXM dense bf16 peak, FLOP/s (NVIDIA datasheet, without sparsity)."""
SELENE = par.Interconnect(domain_gpus=8, nvlink_gbyte_s=300.0, nic_gbit_s=200.0)
"""DGX A100 on Selene: NVLink 3 (600 GB/s bidirectional = 300 per direction per GPU), one 200 Gb/s
HDR InfiniBand NIC per GPU (8 per node); efficiencies and latencies as Calculon's A100 system
(``systems/a100_80g.json``: 0.6 and 0.9, 1 and 2 µs)."""
GRAND_TETON = par.Interconnect(domain_gpus=8, nvlink_gbyte_s=450.0, nic_gbit_s=400.0)
"""Meta's H100 servers (Llama 3 §3.3.1): 8 GPUs on NVLink, 400 Gb/s RoCE per GPU; efficiencies as
Calculon's H100 system."""

SC21_SCORE_BYTES = 45.0
"""Bytes of memory traffic per attention-score element per step in Megatron-LM 2021 (counted here, fp16
scores, 2 bytes; the mask 1): forward 13 (QKᵀ writes 2; the fused scale-mask-softmax reads 2 and writes 2;
dropout reads 2, writes 2 and its mask 1; the attention over V reads 2), the recomputed forward 13 again,
backward 19 (dV reads 2; dP written 2; dropout's backward reads 2 + 1, writes 2; softmax's backward reads
2 + 2, writes 2; dQ and dK read dS 2 each). No FlashAttention in 2021: the scores go through memory."""
SC21_GRAD_BYTES = 2.0
"""Bytes per gradient element all-reduced in the SC21 runs: fp16. The scripts (``--fp16``) do not set
``--accumulate-allreduce-grads-in-fp32`` (off by default in Megatron-LM's ``megatron/arguments.py`` at the
scripts' commit de7dc40f88, 2021-08-10), so both DDP implementations reduce the fp16 model's gradients."""
TORCH_DDP_OVERLAP = 1.0
"""``dp_overlap`` of the rows run with ``--DDP-impl torch`` (PyTorch DistributedDataParallel launches its
bucketed all-reduces during the backward: Li et al., VLDB 2020; assumption that they hide fully behind it,
range 0.8-1: the last bucket cannot). Megatron-LM's ``local`` DDP all-reduces after the backward: 0."""
A100_HBM_BYTES_S = 2039e9 * 0.9
"""A100 80 GB SXM memory bandwidth, 2,039 GB/s (NVIDIA A100 datasheet), at 90 % for streaming
elementwise kernels (assumption, range 0.8-0.95)."""

MEGATRON_BAND = 0.03
LLAMA_BAND = 0.02

PROVENANCE: dict[str, dict[str, str]] = {
    "megatron_sc21": {
        "from the source": "Table 1 of Narayanan et al. (SC21): each row's shape (hidden, layers, heads), "
                           "tp, pp, GPUs, global batch and percent of peak; vocabulary 51,200, sequence "
                           "2,048; the paper's FLOP formula 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)) (full "
                           "activation recomputation), A100 peak 312 TFLOP/s. From the authors' scripts for "
                           "the table (Megatron-LM examples/sc21/run_table_1.sh, commit de7dc40f88): each "
                           "row's microbatch (16 at 1.7-7.5 B, 8, 4, 2, 2, then 1), interleaving (layers per "
                           "virtual stage 5, 5, 3 and 1 at 76 B, 145 B, 310 B and 530 B: v = 3, 2, 2, 3; none "
                           "elsewhere), DDP implementation (PyTorch's up to 18.4 B, Megatron's local one above) "
                           "and fp16 without fp32 gradient all-reduce.",
        "tuned to this data": "the kernel efficiency η_k, solved so that the 529.6 B row (tp 8, pp 35, v 3, "
                              "2,520 GPUs) reproduces its 52 % exactly: that row is IN-SAMPLE. It is the row "
                              "closest to the 1 T row in GEMM shape (h 20,480 vs 25,600), chosen before any "
                              "prediction was looked at, because η_k depends on GEMM size and the model "
                              "holds it constant.",
        "assumptions": "the attention scores go through memory (no FlashAttention in 2021): 45 bytes per score "
                       "element and step (counted: SC21_SCORE_BYTES) at 90 % of the A100's 2,039 GB/s, added to "
                       "the compute (issue 49); scatter/gather on, tp and pipeline communication exposed; PyTorch "
                       "DDP's gradient all-reduce hidden behind the backward (TORCH_DDP_OVERLAP), the local DDP's "
                       "exposed; dp ranks outermost; Selene as Calculon's A100 system (NVLink 300 GB/s per "
                       "direction, η 0.6; 200 Gb/s HDR per GPU, η 0.9).",
        "out-of-sample": "the other nine rows (1.7 B to 1 T), each predicted and shown; judged: their mean "
                         "absolute error, within ±3 points, against the naive predictor 'carry the calibration "
                         "row's 52 % over' (mean absolute error 5.9 points on the same rows), which the model must "
                         "beat. The 1 T row alone cannot discriminate (published 52 %, the calibration row's "
                         "figure: the naive predictor is exact there); it was the one judged row until issue 49 "
                         "and is kept as information. The rows' scripts (microbatch, interleaving, DDP) were "
                         "adopted in issue 49 as facts of the runs, not chosen: they move the pipeline rows "
                         "39-145 B inside ±3 points (they were +3.1 to +3.4 with microbatch 1 and no "
                         "interleaving) and the 1 T row from +0.8 to -2.2 (its run is not interleaved, the "
                         "calibration row's is). Still just outside ±3: the rows without pipeline parallelism, "
                         "1.7 B, 3.6 B and 18.4 B (+3.05, +3.17, +3.02 points; inside at the low end of the stated "
                         "memory-bandwidth range, see docs/validation.md), which is why the rows are not judged one "
                         "by one.",
    },
    "llama3_mfu": {
        "from the source": "Table 4 of the Llama 3 paper: tp 8, pp 16, dp 64 and 128, sequence 8,192, "
                           "batch per dp group 32 and 16 sequences, BF16 MFU 43 % and 41 %; the 405B shape "
                           "(126 layers, h 16,384, 128 heads, 8 KV heads, FFN 53,248, vocabulary 128,256; "
                           "§3.2 Table 3); bubble (PP − 1)/(V·M); no activation checkpointing; FSDP with "
                           "asynchronous prefetch and fp32 reduce-scatter; MFU as Chowdhery et al. count it "
                           "(6N + 12·l·h·s per token), peak 989 TFLOP/s.",
        "tuned to this data": "η_k, solved so that the 8,192-GPU run reproduces its 43 %: IN-SAMPLE.",
        "assumptions": "microbatch 1 sequence (so M = batch per dp group); V = 8 (derived: 126 layers plus "
                       "an embedding-only first and an output-only last chunk fill 16·V chunks evenly only "
                       "at V = 8); FSDP communication fully hidden behind compute (dp_overlap 1); tp "
                       "collectives exposed; pipeline sends asynchronous (pp_overlap 1); 400 Gb/s per "
                       "GPU, NVLink 450 GB/s, Calculon's efficiencies; the attention scores recomputed in the "
                       "backward (FlashAttention-style kernels; one more core-attention forward in the hardware "
                       "FLOPs, selective_recompute with attention_recompute_share 1: not in the MFU's model "
                       "FLOPs). The paper does not name its attention kernel: with FlashAttention-2's count (0.5 "
                       "of a forward, QKᵀ only) η_k would be 0.5796, the 8K prediction unchanged at 40.7 % and the "
                       "131K one 40.9 %, outside its ±2 band (computed in issue 49, not used to choose).",
        "out-of-sample": "the 16,384-GPU run at 8K sequence (published 41 %) and the long-context run (tp 8, cp 16, "
                         "pp 16, dp 8, 131,072 tokens, 16 sequences per dp group; published 38 %; keys and values "
                         "all-gathered, §3.3.2; added in issue 49 once context parallelism and the attention's "
                         "recomputation were modelled, its prediction first computed then), each judged within ±2 "
                         "points against the naive predictor 'carry the calibration run's 43 % over'. Attention is "
                         "counted non-causal in compute and in the MFU, as the η_k tuned at 8K.",
    },
}


# ---- tiered collectives: the schedule built step by step --------------------------------------

def hierarchical_ring_allreduce_s(nbytes: float, g: int, n_domains: int, nvl_bytes_s: float, nvl_lat_s: float,
                                  nic_bytes_s: float, nic_lat_s: float) -> float:
    """Time of the two-level ring all-reduce, summed step by step: g − 1 reduce-scatter steps in the
    domain, each sending one S/g chunk on NVLink; 2(N − 1) ring steps across domains on the S/g
    shard, each sending (S/g)/N on every GPU's NIC; g − 1 all-gather steps in the domain."""
    t = 0.0
    chunk = nbytes / g
    for _ in range(g - 1):  # reduce-scatter in the domain
        t += chunk / nvl_bytes_s + nvl_lat_s
    piece = chunk / n_domains
    for _ in range(2 * (n_domains - 1)):  # ring all-reduce of the shard across domains
        t += piece / nic_bytes_s + nic_lat_s
    for _ in range(g - 1):  # all-gather in the domain
        t += chunk / nvl_bytes_s + nvl_lat_s
    return t


def collective_tiers(s: Settings) -> list[CaseResult]:
    """The tiered all-reduce formula 2(g − 1)/g·S/(B_NVL·η_NVL) + 2(N − 1)/N·(S/g)/(B_NIC·η_NIC) +
    latencies against the hierarchical ring schedule summed step by step (H100: 8-GPU nodes and
    NVL72 racks; a spine lost halves the NIC tier)."""
    out = []
    configs = [("8 GPUs × 64 nodes, 1 GB", 8, 64, 1e9, 1.0), ("72 GPUs × 4 racks, 4 GB", 72, 4, 4e9, 1.0),
               ("8 GPUs × 128 nodes, 2 GB, half the NIC tier", 8, 128, 2e9, 0.5)]
    for label, g, n, nbytes, share in configs:
        ic = par.Interconnect(domain_gpus=g)
        got = par.tiered_collective_s("all_reduce", nbytes, g, n, ic, share)
        ref = hierarchical_ring_allreduce_s(nbytes, g, n, ic.nvlink_gbyte_s * 1e9 * ic.nvlink_eff, ic.nvlink_latency_s,
                                            ic.nic_gbit_s / 8 * 1e9 * ic.nic_eff * share, ic.nic_latency_s)
        flat_n = g * n
        flat = 2 * (flat_n - 1) / flat_n * nbytes / (ic.nic_gbit_s / 8 * 1e9 * ic.nic_eff * share)
        out.append(result("collective_tiers", f"all-reduce time, {label} (s)", ref,
                          Exact(got, REL_TOL * max(1.0, abs(ref))), s, "closed form vs ring schedule", sample="exact",
                          wrong={"flat ring of all GPUs on the NICs": flat}))
    return out


# ---- pipeline bubble: the schedule simulated ---------------------------------------------------

def pipeline_makespan(p: int, m: int, v: int, t_f: float, t_b: float) -> float:
    """Makespan of one step of an interleaved pipeline: p GPUs, m microbatches, v chunks per GPU
    (virtual stage k on GPU k mod p), a chunk's forward t_f/v and backward t_b/v. Each GPU runs its
    chunks in a fixed order (forwards chunk by chunk, then backwards in reverse), each operation as
    soon as its GPU is free and its input (the previous stage's forward, the next stage's
    backward) is done."""
    stages = p * v
    order = {d: [("f", i, c * p + d) for c in range(v) for i in range(m)]
             + [("b", i, c * p + d) for c in reversed(range(v)) for i in range(m)] for d in range(p)}
    end: dict[tuple[str, int, int], float] = {}
    free = [0.0] * p
    ptr = [0] * p
    left = 2 * m * stages
    while left:
        moved = False
        for d in range(p):
            while ptr[d] < len(order[d]):
                kind, i, k = order[d][ptr[d]]
                if kind == "f":
                    dep = ("f", i, k - 1) if k > 0 else None
                    dur = t_f / v
                else:
                    dep = ("b", i, k + 1) if k < stages - 1 else ("f", i, k)
                    dur = t_b / v
                if dep is not None and dep not in end:
                    break
                start = max(free[d], end[dep] if dep is not None else 0.0)
                end[(kind, i, k)] = free[d] = start + dur
                ptr[d] += 1
                left -= 1
                moved = True
        if not moved:  # pragma: no cover - the orders above never deadlock
            raise RuntimeError("pipeline schedule deadlocked")
    return max(free)


def pipeline_bubble(s: Settings) -> list[CaseResult]:
    """Pipeline bubble share (p − 1)/(v·m) against the simulated makespan of the interleaved
    schedule: (makespan − m·(t_f + t_b))/(m·(t_f + t_b))."""
    out = []
    for p, m, v in ((4, 8, 1), (8, 16, 2), (16, 32, 8)):
        t_f, t_b = 1.0, 2.0
        ideal = m * (t_f + t_b)
        sim = (pipeline_makespan(p, m, v, t_f, t_b) - ideal) / ideal
        got = par.bubble_fraction(p, m, v)
        out.append(result("pipeline_bubble", f"bubble share, p={p} m={m} v={v}", sim, Exact(got, REL_TOL), s,
                          "formula vs simulated schedule", sample="exact",
                          wrong={"(p − 1)/m, interleaving ignored": (p - 1) / m} if v > 1 else
                          {"p/m": p / m}))
    return out


# ---- Megatron-LM SC21 -----------------------------------------------------------------------------

def read_megatron_table(path: Path = MEGATRON_CSV) -> list[dict[str, Any]]:
    """Rows of the packaged Table 1 with numeric fields converted."""
    with path.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    for r in rows:
        for k in ("heads", "hidden", "layers", "tp", "pp", "gpus", "batch", "microbatch", "interleave"):
            r[k] = int(r[k])
        for k in ("params_b", "tflops_per_gpu", "percent_of_peak", "aggregate_pflops"):
            r[k] = float(r[k])
    return rows


def megatron_paper_flops(batch: int, seq: int, layers: int, hidden: int, vocab: int) -> float:
    """Narayanan et al. eq. 3: 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)) FLOPs per iteration."""
    h = float(hidden)
    return 96.0 * batch * seq * layers * h * h * (1.0 + seq / (6.0 * h) + vocab / (16.0 * layers * h))


def megatron_setup(row: dict[str, Any]) -> tuple[par.ModelShape, par.Layout]:
    """The shape and layout of a Table 1 row under the case's assumptions (see PROVENANCE)."""
    shape = par.ModelShape(layers=row["layers"], hidden=row["hidden"], heads=row["heads"], seq_len=2048,
                           vocab=51200, global_batch=row["batch"])
    layout = par.Layout(tp=row["tp"], pp=row["pp"], dp=row["gpus"] // (row["tp"] * row["pp"]),
                        microbatch=row["microbatch"], interleave=row["interleave"], recompute=True,
                        dp_collective="all_reduce", grad_bytes=SC21_GRAD_BYTES,
                        dp_overlap=TORCH_DDP_OVERLAP if row["ddp"] == "torch" else 0.0,
                        score_bytes=SC21_SCORE_BYTES, hbm_bytes_s=A100_HBM_BYTES_S)
    return shape, layout


def megatron_predicted_share(row: dict[str, Any], eta_k: float) -> float:
    """The row's predicted percent of peak (as a share), counted as the paper counts it (eq. 3)."""
    shape, layout = megatron_setup(row)
    t = par.step_breakdown(shape, layout, SELENE, A100_PEAK_FLOPS, eta_k).total_s
    flops = megatron_paper_flops(row["batch"], 2048, row["layers"], row["hidden"], 51200)
    return par.mfu(flops, t, row["gpus"], A100_PEAK_FLOPS)


def tune_eta_k(share: Any, target: float) -> float:
    """η_k in (0, 1] at which ``share(η_k)`` equals ``target`` (monotone in η_k; Brent's method)."""
    return float(brentq(lambda e: share(e) - target, 1e-3, 1.0, xtol=1e-14, rtol=1e-14))


def megatron_sc21(s: Settings) -> list[CaseResult]:
    """Megatron-LM (Narayanan et al. SC21) Table 1: η_k tuned on the 529.6 B row, the nine other rows (1.7 B
    to 1 T) predicted and shown; their mean absolute error judged within ±3 points against that of the naive
    predictor 'carry the calibration row's 52 % over'."""
    rows = read_megatron_table()
    cal = next(r for r in rows if r["role"] == "in-sample")
    targets = [r for r in rows if r["role"] == "out-of-sample"]
    eta = tune_eta_k(lambda e: megatron_predicted_share(cal, e), cal["percent_of_peak"] / 100.0)
    shape, _ = megatron_setup(cal)
    flops_ok = abs(par.hardware_flops_per_step(shape, True)
                   / megatron_paper_flops(cal["batch"], 2048, cal["layers"], cal["hidden"], 51200) - 1.0) < 1e-12
    out = [result("megatron_sc21", f"kernel efficiency η_k tuned on the {cal['params_b']:g} B row", eta,
                  Exact(eta, 0.0), s, "in-sample: tuned", check=False, sample="in-sample")]
    naive = cal["percent_of_peak"] / 100.0
    pub = [r["percent_of_peak"] / 100.0 for r in targets]
    pred = [megatron_predicted_share(r, eta) for r in targets]
    carry = ("carry the calibration row's share over", naive)
    out.append(result(
        "megatron_sc21", f"mean absolute error of the share of peak, the {len(targets)} other rows (1.7 B to 1 T)",
        0.0, Exact(_mae(pred, pub), MEGATRON_BAND), s, f"±{MEGATRON_BAND * 100:g} points; η_k {eta:.4f}",
        sample="out-of-sample", naive=("carry the calibration row's 52 % over: its mean absolute error",
                                       _mae([naive] * len(pub), pub)),
        invariants={"the step FLOPs equal the paper's eq. 3": flops_ok},
        wrong={"FLOPs alone (the scores' memory traffic left out, η_k re-tuned)": _mae_variant(rows, score=False),
               "bubble (p − 1)/(v·m) left out (η_k re-tuned)": _mae_variant(rows, bubble=False)}))
    for r, p in zip(targets, pred):
        exact = " (the naive predictor is exact here: cannot discriminate)" if r["percent_of_peak"] == \
            cal["percent_of_peak"] else ""
        out.append(result("megatron_sc21", f"share of peak, {r['params_b']:g} B on {r['gpus']:,} A100", r[
            "percent_of_peak"] / 100.0, Exact(p, 0.0), s, "information: judged through the mean absolute error"
                          + exact, check=False, sample="out-of-sample", naive=carry))
    return out


def _mae(pred: list[float], ref: list[float]) -> float:
    """Mean absolute error (shares)."""
    return sum(abs(p - r) for p, r in zip(pred, ref)) / len(ref)


def _mae_variant(rows: list[dict[str, Any]], score: bool = True, bubble: bool = True) -> float:
    """Mean absolute error of the out-of-sample rows of a wrong model of the case: the scores' memory traffic
    (``score``) or the bubble (``bubble``) left out, η_k re-tuned on the calibration row as the model's is."""
    import dataclasses

    def share(row: dict[str, Any], eta_k: float) -> float:
        shape, layout = megatron_setup(row)
        if not score:
            layout = dataclasses.replace(layout, score_bytes=0.0)
        b = par.step_breakdown(shape, layout, SELENE, A100_PEAK_FLOPS, eta_k)
        flops = megatron_paper_flops(row["batch"], 2048, row["layers"], row["hidden"], 51200)
        return par.mfu(flops, b.total_s - (0.0 if bubble else b.bubble_s), row["gpus"], A100_PEAK_FLOPS)

    cal = next(r for r in rows if r["role"] == "in-sample")
    eta = tune_eta_k(lambda e: share(cal, e), cal["percent_of_peak"] / 100.0)
    targets = [r for r in rows if r["role"] == "out-of-sample"]
    return _mae([share(r, eta) for r in targets], [r["percent_of_peak"] / 100.0 for r in targets])


# ---- Llama 3 405B -------------------------------------------------------------------------------------

LLAMA_405B: dict[str, Any] = {"layers": 126, "hidden": 16384, "heads": 128, "kv_heads": 8, "ffn_hidden": 53248,
                               "gated_mlp": True, "vocab": 128256, "tied_embeddings": False}
"""Llama 3 405B (Llama 3 paper Table 3; vocabulary 128,256 as released)."""
LLAMA_INTERLEAVE = 8


def read_llama_table4(path: Path = LLAMA_TABLE4_CSV) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    for r in rows:
        for k in ("gpus", "tp", "cp", "pp", "dp", "seq_len", "batch_per_dp", "tflops_per_gpu", "bf16_mfu_percent"):
            r[k] = int(r[k])
    return rows


def llama_setup(row: dict[str, Any]) -> tuple[par.ModelShape, par.Layout]:
    shape = par.ModelShape(seq_len=row["seq_len"], global_batch=row["batch_per_dp"] * row["dp"], **LLAMA_405B)
    layout = par.Layout(tp=row["tp"], pp=row["pp"], dp=row["dp"], cp=row["cp"], cp_collective="all_gather",
                        microbatch=1, interleave=LLAMA_INTERLEAVE, recompute=False, selective_recompute=True,
                        attention_recompute_share=1.0,
                        dp_collective="rs_ag", dp_overlap=1.0, pp_overlap=1.0)
    return shape, layout


def llama_predicted_mfu(row: dict[str, Any], eta_k: float) -> float:
    """The row's predicted MFU, counted as the paper counts it (model FLOPs, 6N + 12·l·h·s per token)."""
    shape, layout = llama_setup(row)
    t = par.step_breakdown(shape, layout, GRAND_TETON, H100_PEAK_FLOPS, eta_k).total_s
    return par.mfu(par.model_flops_per_step(shape), t, row["gpus"], H100_PEAK_FLOPS)


def llama3_mfu(s: Settings) -> list[CaseResult]:
    """Llama 3 405B (Dubey et al. 2024, Table 4): η_k tuned on the 8,192-GPU run (43 % MFU), the
    16,384-GPU run at 8K sequence (41 %) predicted within ±2 points."""
    rows = read_llama_table4()
    cal = next(r for r in rows if r["role"] == "in-sample")
    eta = tune_eta_k(lambda e: llama_predicted_mfu(cal, e), cal["bf16_mfu_percent"] / 100.0)
    carry = ("carry the calibration run's MFU over", cal["bf16_mfu_percent"] / 100.0)
    out = [result("llama3_mfu", f"kernel efficiency η_k tuned on {cal['gpus']:,} GPUs", eta, Exact(eta, 0.0), s,
                  "in-sample: tuned", check=False, sample="in-sample")]
    for target in (r for r in rows if r["role"] == "out-of-sample"):
        pred = llama_predicted_mfu(target, eta)
        shape, layout = llama_setup(target)
        no_v = par.Layout(**{**layout.__dict__, "interleave": 1})
        t_no_v = par.step_breakdown(shape, no_v, GRAND_TETON, H100_PEAK_FLOPS, eta).total_s
        wrong = {"no interleaving (v = 1)": par.mfu(par.model_flops_per_step(shape), t_no_v, target["gpus"],
                                                    H100_PEAK_FLOPS)}
        what = f"dp {target['dp']}, {target['seq_len'] // 1024}K sequence"
        if target["cp"] > 1:
            what = f"cp {target['cp']}, dp {target['dp']}, {target['seq_len']:,}-token sequence"
            wrong = {"the MFU counted as 6N (attention left out)": convert_mfu(pred, shape, "palm", "6N")}
        out.append(result("llama3_mfu", f"BF16 MFU, {target['gpus']:,} GPUs, {what}",
                          target["bf16_mfu_percent"] / 100.0, Exact(pred, LLAMA_BAND), s,
                          f"±{LLAMA_BAND * 100:g} points; η_k {eta:.4f}", sample="out-of-sample", wrong=wrong,
                          naive=carry))
    return out
