"""Workload section of the scenario: jobs, scheduler, checkpoint/restart (model.md §7)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field, PrivateAttr, model_validator

from twin.physics import flop_conventions as _flops
from twin.physics import memory as _mem
from twin.physics import parallel as _par
from twin.physics import training as _training
from twin.scenario.base import Dist, Strict
from twin.scenario.defaults import derive, moved
from twin.scenario.storage import DataLoading
from twin.scenario.nvlink import check_job_layout
from twin.scenario.phases import Phase, segments
from twin.scenario.pools import JOB_POOL_DOC, check_job_pools
from twin.scenario.trace import TraceRows

if TYPE_CHECKING:  # pragma: no cover
    from twin.scenario.schema import Scenario

NonNegH = Annotated[float, Field(ge=0, allow_inf_nan=False)]
PosF = Annotated[float, Field(gt=0, allow_inf_nan=False)]


class Retention(Strict):
    """Which completed checkpoints a job keeps for rollbacks to a state before a silent data corruption
    (twin.model.checkpoints): its last ``keep_last`` (the rolling set) and, of those that leave the rolling
    set, the first one and then one whose state was captured at least ``persistent_every_h`` hours after
    the last one kept (persistent, kept to the job's end: TensorFlow CheckpointManager's ``max_to_keep`` and
    ``keep_checkpoint_every_n_hours``). An SDC rollback returns to the newest kept checkpoint captured before
    the corruption; when ``keep_last`` × the interval is shorter than the detection latency, that is a
    persistent one (`twin run` advises)."""

    keep_last: Annotated[int, Field(ge=1, le=1000)] = Field(
        10, description="K: the rolling set, the newest completed checkpoints kept, 1-1000 (default 10: NeMo's "
                        "example `save_top_k: 10`, sources-next.md section 10; common practice 2-20, assumption).")
    persistent_every_h: PosF | None = Field(
        1.0, description="P: hours between persistent checkpoints kept to the job's end, of those leaving the "
                         "rolling set (default 1 h: the hourly checkpoints of Huawei MindCluster's documentation, "
                         "sources-next.md section 10; range 0.25-24 h, assumption); null: none (a rollback past "
                         "the rolling set restarts the job from the beginning).")


class Checkpoint(Strict):
    interval_h: PosF | None = Field(
        None, description="Progress hours between checkpoints (reset by a restart); null: never checkpoint."
    )
    size_gb: NonNegH = Field(0.0, description="Checkpoint size, gigabytes (whole job).")
    mode: Literal["sync", "async", "peer"] = Field(
        "sync", description="sync: the job pauses for the write; async: it stalls async_fraction of it; peer: it pauses "
                            "while each node copies its shard into a neighbour's host memory (peer_gb_per_s), every "
                            "storage_every-th checkpoint drained to the storage in the background; an interruption that "
                            "takes both holders of a shard falls back to the last drained one (twin/model/checkpoints.py).")
    peer_gb_per_s: PosF = Field(
        25.0, description="peer: GB/s at which a node copies its shard to its neighbour's host memory (a 400 Gb/s NIC is "
                          "50 GB/s line rate; Gemini, SOSP'23, copies over the training network: assumption, range 5-50).")
    storage_every: PosInt = Field(
        10, description="peer: every this many peer checkpoints one is also drained to the storage, in the background "
                        "(no pause; assumption: the drain ends before the next is due; range 1-100).")
    async_fraction: Annotated[float, Field(ge=0, le=1)] = Field(
        0.1, description="Share of the write time an async checkpoint still stalls the job (assumption)."
    )
    write_h: NonNegH | None = Field(
        None, description="Fixed write time, hours; overrides size_gb / storage bandwidth (used by validation)."
    )
    overhead_s: NonNegH = Field(
        0.0, description="Fixed seconds added to every checkpoint write (serialisation, metadata, the barrier of all "
                         "ranks), whatever its size. Default 0; assumption where a scenario sets it (range 5-120 s).")
    writer_nodes: PosInt | None = Field(
        None, description="Nodes that write the checkpoint, each through its front-end link "
                          "(workload.storage.node_write_gb_per_s); null: all the job's nodes (every rank writes its shard, "
                          "as Megatron-LM's distributed checkpoint and PyTorch DCP do).")
    retention: Retention = Field(default_factory=lambda: Retention(),
                                 description="Checkpoints kept for rollbacks (silent data corruption).")

    def write_time_h(self, write_gb_per_s: float, writers: int = 1, nodes: int = 0,
                     node_gb_per_s: float | None = None) -> float:
        """Hours to write this checkpoint: ``write_h`` when given, else ``size_gb`` at min(the storage's write
        bandwidth ``write_gb_per_s`` (GB/s) shared by ``writers`` concurrent writers, the writer nodes (``writer_nodes``,
        else the job's ``nodes``) × the per-node front-end ``node_gb_per_s``), plus ``overhead_s``: the one
        definition, used by the schema's check, the workload model, the forecast and the advisories."""
        if self.write_h is not None:
            return self.write_h
        if self.mode == "peer":   # each node copies its shard to its neighbour: size / nodes at peer_gb_per_s
            return self.size_gb / max(1, self.writer_nodes or nodes) / self.peer_gb_per_s / 3600.0 + self.overhead_s / 3600.0
        return _training.checkpoint_write_h(self.size_gb, write_gb_per_s, writers, self.writer_nodes or nodes,
                                            node_gb_per_s, self.overhead_s)

    def pause_h(self, write_h: float) -> float:
        """Hours a (non-final) checkpoint of write time ``write_h`` pauses the job: all of it (sync, peer), or
        async_fraction of it (async)."""
        return self.async_fraction * write_h if self.mode == "async" else write_h


class Restart(Strict):
    """A job's restart after an interruption: detection, rescheduling, reading its checkpoint, initialising
    its ranks and the warm-up (:meth:`restart_h`)."""

    detection_h: NonNegH = Field(0.05, description="Time to detect a crashed job, hours (assumption: 3 min).")
    reschedule_h: NonNegH = Field(0.1, description="Time to reallocate nodes and relaunch, hours (assumption).")
    warmup_h: NonNegH = Field(0.1, description="Warm-up after loading the checkpoint, hours (assumption).")
    read_h: NonNegH | None = Field(
        None, description="Fixed checkpoint read time, hours; overrides size_gb / read bandwidth."
    )
    init_s_per_rank: NonNegH = Field(
        0.0, description="Launch and communicator initialisation, seconds per rank (GPU) of the job: a restart "
                         "term that grows with the job's size. Default 0; where a scenario sets it: NCCL "
                         "initialisation ~2.5 min above some thousands of GPUs (NVIDIA/nccl issue 1156) is ~0.01 s "
                         "per rank at 16K; MegaScale (NSDI'24) measured 1,047 s at >10K GPUs before its fixes "
                         "(~0.1 s/rank) and <30 s after (~0.003 s/rank): range 0.002-0.1 (sources-next.md §10).")

    def restart_h(self, read_h: float, ranks: int) -> float:
        """Hours of one restart: detection + rescheduling + the checkpoint read ``read_h`` (hours) + ``ranks`` ×
        init_s_per_rank + warm-up."""
        return self.detection_h + self.reschedule_h + read_h + ranks * self.init_s_per_rank / 3600.0 + self.warmup_h


Share = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]
PosInt = Annotated[int, Field(ge=1)]


class MoESpec(Strict):
    """Mixture-of-experts MLPs (twin/physics/moe.py): ``experts`` routed experts of width ``expert_ffn`` of
    which ``top_k`` are active per token, plus ``shared_experts``, in the layers after the first
    ``dense_layers``. DeepSeek-V3 (arXiv 2412.19437 §4.2): 256 routed experts of 2,048, top 8, 1 shared,
    the first 3 layers dense."""

    experts: PosInt = Field(description="Routed experts per MoE layer (DeepSeek-V3: 256).")
    top_k: PosInt = Field(description="Routed experts active per token (DeepSeek-V3: 8).")
    expert_ffn: PosInt = Field(description="MLP width of one expert (DeepSeek-V3: 2,048).")
    shared_experts: Annotated[int, Field(ge=0)] = Field(0, description="Experts every token passes through "
                                                                      "(DeepSeek-V3: 1).")
    dense_layers: Annotated[int, Field(ge=0)] = Field(0, description="First layers with a dense MLP of width "
                                                                    "ffn_hidden (DeepSeek-V3: 3).")
    capacity_factor: Annotated[float, Field(ge=1, le=16, allow_inf_nan=False)] = Field(
        1.0, description="Tokens an expert computes (padded) as a multiple of its average share, 1-16: the routed "
                         "FLOPs and all-to-all bytes scale by it (1: dropless and balanced, DeepSeek-V3's auxiliary-"
                         "loss-free balancing; Megatron-Core's moe_expert_capacity_factor, e.g. 1.0-2.0).")

    @model_validator(mode="after")
    def _k(self) -> "MoESpec":
        if self.top_k > self.experts:
            raise ValueError(f"@top_k: {self.top_k} is more than experts ({self.experts})")
        return self

    def physics(self) -> _par.MoE:
        return _par.MoE(**self.model_dump())


class ModelShapeSpec(Strict):
    """A decoder-only transformer and its global batch (twin/physics/parallel.py ``ModelShape``)."""

    layers: PosInt
    hidden: PosInt
    seq_len: PosInt = Field(description="Tokens per sequence.")
    vocab: PosInt
    global_batch: PosInt = Field(description="Sequences per optimiser step.")
    heads: Annotated[int, Field(ge=0)] = 0
    kv_heads: Annotated[int, Field(ge=0)] = Field(0, description="Key/value heads (grouped-query attention); 0: heads.")
    ffn_hidden: Annotated[int, Field(ge=0)] = Field(0, description="MLP width; 0: 4 × hidden.")
    gated_mlp: bool = Field(False, description="Three MLP matrices (SwiGLU) instead of two.")
    tied_embeddings: bool = True
    moe: MoESpec | None = Field(None, description="Mixture-of-experts MLPs (null: a dense model).")

    @model_validator(mode="after")
    def _moe(self) -> "ModelShapeSpec":
        if self.moe is not None and self.moe.dense_layers > self.layers:
            raise ValueError(f"@moe.dense_layers: {self.moe.dense_layers} is more than layers ({self.layers})")
        return self

    def physics(self) -> _par.ModelShape:
        """The shape as the step-time model takes it."""
        d = self.model_dump(exclude={"moe"})
        return _par.ModelShape(**d, moe=self.moe.physics() if self.moe is not None else None)


class NVLinkOpEff(Strict):
    """Multipliers of the NVLink tier's bandwidth (``nvlink_gbyte_s`` × ``nvlink_eff``) per collective operation
    (twin/physics/parallel.py ``Interconnect.nvlink_op_eff``)."""

    all_reduce: Annotated[float, Field(gt=0, le=2)] = Field(
        1.0, description="All-reduce (assumption: 1, the tier's one efficiency; range 0.7-1.5).")
    reduce_scatter: Annotated[float, Field(gt=0, le=2)] = Field(
        1.0, description="Reduce-scatter (assumption: 1; range 0.7-1.5: Calculon's H100 system, "
                         "systems/h100_80g_nvl8.json, gives reduce-scatter and all-gather 1.5 × the all-reduce's "
                         "bandwidth on NVSwitch).")
    all_gather: Annotated[float, Field(gt=0, le=2)] = Field(
        1.0, description="All-gather (assumption: 1; range 0.7-1.5, as reduce_scatter).")


class LayoutSpec(Strict):
    """A job's parallel layout and the kernel efficiency of its GPUs (twin/physics/parallel.py ``Layout``;
    Megatron-LM accounting, sources-realism.md §7). tp × cp × pp × dp must equal the job's GPUs; tp must
    divide the NVLink domain; ep must divide dp."""

    tp: PosInt = 1
    pp: PosInt = 1
    dp: PosInt = 1
    cp: PosInt = Field(1, description="Context-parallel GPUs per sequence (twin/physics/context_parallel.py; Llama 3 "
                                      "405B's long-context stage: 16, Table 4).")
    cp_collective: Literal["ring", "all_gather"] = Field(
        "ring", description="How the cp group exchanges keys and values: ring (ring attention, Megatron-Core: each "
                            "step hidden behind a block's attention) or all_gather (Llama 3 §3.3.2: gathered, exposed).")
    ep: PosInt = Field(1, description="Expert-parallel GPUs (a divisor of dp) over which a MoE model's routed experts "
                                      "are split (twin/physics/moe.py; DeepSeek-V3: 64).")
    ep_overlap: Share = Field(0.0, description="Share of the expert all-to-alls hidden behind compute (0: exposed, "
                                               "Megatron-Core without overlap; DeepSeek-V3's DualPipe hides nearly "
                                               "all: assumption, range 0-1).")
    precision: Literal["bf16", "fp8"] = Field(
        "bf16", description="Training precision: bf16, or fp8 (a share fp8_share of the FLOPs at the GPU's dense FP8 "
                            "peak fp8_peak_tflops, the rest at peak_tflops).")
    fp8_peak_tflops: PosF = Field(1979.0, description="Dense FP8 TFLOP/s per GPU (H100 SXM and H800: 1,979 without "
                                                      "sparsity, NVIDIA H100 datasheet).")
    fp8_share: Share = Field(
        0.9, description="With precision fp8, the share of the step's FLOPs that run in FP8 (the GEMMs of the linear "
                         "layers; attention, embeddings, norms and the logits stay in bf16 in DeepSeek-V3 §3.3.1): "
                         "assumption, range 0.7-0.97.")
    microbatch: PosInt = Field(1, description="Sequences per microbatch.")
    interleave: PosInt = Field(1, description="Model chunks per pipeline GPU (v).")
    recompute: bool = Field(False, description="Full activation recomputation (one more forward pass).")
    dp_collective: Literal["all_reduce", "rs_ag"] = Field(
        "all_reduce", description="all_reduce (DDP) or rs_ag (ZeRO/FSDP: reduce-scatter + all-gather).")
    dp_overlap: Share = Field(0.0, description="Share of compute time that hides data-parallel communication.")
    tp_overlap: Share = 0.0
    pp_overlap: Share = 0.0
    grad_bytes: PosF = Field(4.0, description="Bytes per gradient element reduced (4: fp32).")
    compression: Annotated[float, Field(gt=0, le=1)] = Field(
        1.0, description="Factor on data-parallel gradient bytes (gradient compression; 1: none).")
    compress_s_per_gb: NonNegH = Field(0.0, description="GPU seconds to compress one GB of gradients.")
    eta_k: Annotated[float, Field(gt=0, le=1)] = Field(
        0.5, description="Kernel efficiency: share of peak FLOP/s the GPUs reach (assumption; the Llama 3 "
                         "calibration of twin validate gives 0.59 on H100: 0.5865 with the slowest stage and the "
                         "core attention recomputed in the backward, 0.53 before issue 49; range 0.3-0.75).")
    peak_tflops: PosF = Field(989.0, description="Peak dense TFLOP/s per GPU (H100 SXM bf16: 989).")
    nvlink_domain_gpus: PosInt = Field(8, description="GPUs per NVLink domain (8: an HGX node).")
    nvlink_gbyte_s: PosF = Field(450.0, description="NVLink GB/s per GPU per direction (H100: 450).")
    nvlink_eff: Annotated[float, Field(gt=0, le=1)] = Field(0.6, description="NVLink tier efficiency (Calculon H100).")
    nic_eff: Annotated[float, Field(gt=0, le=1)] = Field(0.9, description="NIC tier efficiency (Calculon H100).")
    nvls: bool = Field(
        False, description="In-switch reduction on NVLink (NVLink SHARP, NCCL's NVLS algorithm since NCCL 2.17; an "
                           "all-reduce offload over NVLink only, NVIDIA/nccl issue 1031): an all-reduce inside an NVLink "
                           "domain moves each GPU's buffer once each way (bus factor 1 instead of 2(g − 1)/g). H100 "
                           "NVSwitch and GB200 NVLink Switch systems have it, A100 does not. Default false (assumption: "
                           "whether NCCL uses it depends on the driver, the fabric manager and NCCL_NVLS_ENABLE). With "
                           "sequence parallelism the tensor-parallel collectives are reduce-scatters and all-gathers, "
                           "which it does not speed up.")
    nvlink_op_eff: NVLinkOpEff = Field(default_factory=lambda: NVLinkOpEff(),
                                       description="Per-operation multipliers of the NVLink tier's bandwidth.")
    nic_gbit_s: PosF = Field(400.0, description="NIC Gbit/s per GPU when the scenario has no fabric.")
    causal: bool = Field(
        False, description="Count core attention (the s² FLOPs) at half for the causal mask, as current Megatron-LM "
                           "does. Default false: the non-causal count of Narayanan et al. (SC21), against which the "
                           "kernel efficiencies of twin validate are tuned.")
    zero_stage: Annotated[int, Field(ge=0, le=3)] = Field(
        0, description="ZeRO stage with dp_collective rs_ag: 1/2 (optimizer state, and gradients, sharded: one "
                       "reduce-scatter + one all-gather per step), 3 (FSDP: weights sharded too, gathered in forward "
                       "and backward: one more all-gather); 0: 1 with rs_ag, none with all_reduce.")
    selective_recompute: bool = Field(
        True, description="The attention scores (the s² activations) are not kept but recomputed in the backward "
                          "(Megatron-LM's selective recompute, Korthikanti et al. 2022 §5; FlashAttention never stores "
                          "them and recomputes them likewise): memory without the s² term, and attention_recompute_share "
                          "of one more forward of the core attention (4·s²·h FLOPs per layer and sequence, 2·s²·h "
                          "causal). Default true: every current large-model stack uses FlashAttention-style kernels "
                          "(assumption). Ignored with recompute (full).")
    attention_recompute_share: Share = Field(
        1.0, description="With selective_recompute, the share of the core attention's forward FLOPs computed once "
                         "more in the backward: 1 for Megatron-LM's selective recompute (QKᵀ, softmax and attention "
                         "over V recomputed, Korthikanti et al. 2022 §5), 0.5 for FlashAttention-2, whose backward "
                         "recomputes QKᵀ but not the attention over V (Dao-AILab/flash-attention "
                         "benchmarks/benchmark_flash_attention.py counts its backward as 2.5 forwards, against 2 "
                         "without recomputation). Default 1 (the kernel efficiencies of twin validate's Llama 3 case "
                         "are tuned with it); range 0.5-1.")
    sequence_parallel: bool = Field(
        True, description="Sequence parallelism with tp > 1 (Korthikanti et al. 2022 §4.2.2, Megatron-LM's default "
                          "with tp): the norms' and the column-parallel GEMMs' inputs are split over tp (false: those "
                          "4·s·b·h activations per layer are whole on every tp rank). Memory only: its reduce-scatter "
                          "+ all-gather move the all-reduce's bytes, and the norms it splits are elementwise, outside "
                          "the FLOP count.")
    score_bytes: NonNegH = Field(
        0.0, description="Bytes of memory traffic per attention-score element (a·s² per layer and sequence) over a "
                         "step, when the scores go through GPU memory (separate softmax, mask and dropout kernels: "
                         "Megatron-LM 2021, 45 counted in twin/validation/compute.py; range 20-60). Default 0: "
                         "FlashAttention-style kernels keep them on chip (assumption for current stacks).")
    hbm_gbyte_s: PosF = Field(
        3015.0, description="Effective GPU memory bandwidth for score_bytes, GB/s: H100 SXM 3,350 (NVIDIA H100 "
                            "datasheet) at 90 % for streaming kernels (assumption, range 80-95 %). Used only with "
                            "score_bytes > 0.")
    hbm_gb: PosF | None = Field(
        85.9, description="GPU memory, GB (10⁹ bytes), against which the layout is checked at load "
                          "(twin/physics/memory.py; an infeasible layout is refused, naming what does not fit and by "
                          "how much). Default 85.9: H100 SXM 80 GiB (NVIDIA H100 datasheet), the GPU of the default "
                          "peak_tflops; set it with another GPU (H200 141 GB, GB200 186 GB; range 40-288). null: not "
                          "checked (not advised: the step time of a layout that cannot run means nothing).")
    reserve_gb: NonNegH = Field(
        5.0, description="Memory not available to the model: CUDA context, NCCL buffers, allocator fragmentation, "
                         "GB (assumption, range 2-10).")
    optimizer_bytes: NonNegH = Field(
        12.0, description="Optimizer state bytes per parameter: fp32 master weights, Adam momentum and variance "
                          "(Rajbhandari et al. 2020, ZeRO §3.1, K = 12).")

    @property
    def recompute_mode(self) -> _mem.Recompute:
        """'full' (recompute), 'selective' or 'none': what the activations keep (twin/physics/memory.py)."""
        return "full" if self.recompute else ("selective" if self.selective_recompute else "none")

    @property
    def gpus(self) -> int:
        return self.tp * self.cp * self.pp * self.dp

    def effective_peak_flops(self) -> float:
        """Peak FLOP/s per GPU of the step at its precision: ``peak_tflops`` (bf16) or, with fp8, the harmonic
        mean by FLOPs of the FP8 and bf16 peaks (twin/physics/parallel.py ``effective_peak_flops``)."""
        if self.precision == "bf16":
            return self.peak_tflops * 1e12
        return _par.effective_peak_flops(self.peak_tflops * 1e12, self.fp8_peak_tflops * 1e12, self.fp8_share)

    def physics(self) -> _par.Layout:
        """The layout as the step-time model takes it."""
        return _par.Layout(tp=self.tp, pp=self.pp, dp=self.dp, cp=self.cp, cp_collective=self.cp_collective,
                           ep=self.ep, ep_overlap=self.ep_overlap, microbatch=self.microbatch,
                           interleave=self.interleave, recompute=self.recompute, dp_collective=self.dp_collective,
                           dp_overlap=self.dp_overlap, tp_overlap=self.tp_overlap, pp_overlap=self.pp_overlap,
                           grad_bytes=self.grad_bytes, compression=self.compression,
                           compress_s_per_gb=self.compress_s_per_gb, causal=self.causal, zero_stage=self.zero_stage,
                           selective_recompute=self.selective_recompute,
                           attention_recompute_share=self.attention_recompute_share,
                           sequence_parallel=self.sequence_parallel,
                           score_bytes=self.score_bytes, hbm_bytes_s=self.hbm_gbyte_s * 1e9)

    def interconnect(self, nic_gbit_s: float | None = None, domain_gpus: int = 0,
                     nvlink_share: float = 1.0) -> _par.Interconnect:
        """The two tiers the job sees: NVLink domains of ``domain_gpus`` GPUs (0: ``nvlink_domain_gpus``) at
        ``nvlink_share`` of ``nvlink_gbyte_s`` (a domain with failed switch trays), ``nic_gbit_s`` per GPU
        (None: the layout's)."""
        return _par.Interconnect(domain_gpus=domain_gpus or self.nvlink_domain_gpus,
                                 nvlink_gbyte_s=self.nvlink_gbyte_s * nvlink_share, nvlink_eff=self.nvlink_eff,
                                 nic_gbit_s=self.nic_gbit_s if nic_gbit_s is None else nic_gbit_s,
                                 nic_eff=self.nic_eff, nvls=self.nvls,
                                 nvlink_op_eff=(self.nvlink_op_eff.all_reduce, self.nvlink_op_eff.reduce_scatter,
                                                self.nvlink_op_eff.all_gather))


class StepModel(Strict):
    """Step-time model of model.md §6 for a job (defaults: compute-bound, assumption). With ``model`` and
    ``layout`` the step time comes from the 3D-parallel model instead (twin/physics/parallel.py) and
    t_compute_s, grad_gb and overlap are not used."""

    t_compute_s: PosF = 1.0
    grad_gb: NonNegH = Field(0.0, description="Gradient bytes all-reduced per step, gigabytes.")
    overlap: Annotated[float, Field(ge=0, le=1)] = 0.9
    hop_latency_s: NonNegH = 5e-6
    model: ModelShapeSpec | None = Field(None, description="Transformer shape and batch: with layout, the step "
                                                           "comes from them; alone, the shape that "
                                                           "training.mfu_convention palm counts attention with.")
    layout: LayoutSpec | None = Field(None, description="Parallel layout (with model).")

    @model_validator(mode="after")
    def _pair(self) -> "StepModel":
        if self.layout is not None and self.model is None:
            raise ValueError("@layout: give model and layout together (a model alone gives the shape for "
                             "training.mfu_convention)")
        if self.layout is not None and self.model is not None:
            lay, m = self.layout, self.model
            # (a domain left to its default is checked when the cluster's domains are known: check_against)
            if "nvlink_domain_gpus" in lay.model_fields_set and lay.nvlink_domain_gpus % lay.tp:
                raise ValueError(f"@layout.tp: must divide nvlink_domain_gpus ({lay.nvlink_domain_gpus}): a "
                                 f"tensor-parallel group never spans NVLink domains")
            if lay.dp % lay.ep:
                raise ValueError(f"@layout.ep: {lay.ep} must divide dp ({lay.dp})")
            if lay.ep > 1 and m.moe is None:
                raise ValueError("@layout.ep: expert parallelism needs model.moe")
            if m.global_batch % (lay.dp * lay.microbatch):
                raise ValueError(f"@model.global_batch: must be a multiple of dp × microbatch "
                                 f"({lay.dp * lay.microbatch})")
            if m.heads and m.kv_heads and m.heads % m.kv_heads:
                raise ValueError("@model.kv_heads: must divide heads")
            if lay.zero_stage and lay.dp_collective != "rs_ag":
                raise ValueError("@layout.zero_stage: ZeRO stages 1-3 need dp_collective rs_ag")
            if lay.nvlink_domain_gpus % lay.tp == 0:   # else after the cluster's domains are known
                self.check_memory("@layout.hbm_gb")
        return self

    def check_memory(self, where: str) -> None:
        """ValueError at ``where`` when the layout does not fit in ``hbm_gb`` (twin/physics/memory.py); nothing
        without a layout or with ``hbm_gb`` null."""
        lay, m = self.layout, self.model
        if lay is None or m is None or lay.hbm_gb is None:
            return
        try:
            _mem.check_fits(m.physics(), lay.physics(), lay.recompute_mode, lay.hbm_gb, lay.reserve_gb,
                            lay.optimizer_bytes)
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None

    def memory(self) -> _mem.MemoryBreakdown:
        """What one GPU of the layout holds at its peak (twin/physics/memory.py), GB."""
        assert self.model is not None and self.layout is not None
        lay = self.layout
        return _mem.memory_breakdown(self.model.physics(), lay.physics(), lay.recompute_mode,
                                     lay.reserve_gb, lay.optimizer_bytes)

    def breakdown(self, nic_gbit_s: float | None = None, speed: float = 1.0, nic_share: float = 1.0,
                  domain_gpus: int = 0, nvlink_share: float = 1.0) -> _par.StepBreakdown:
        """Step time of this model and layout by component (twin/physics/parallel.py ``step_breakdown``): at
        the slowest GPU's ``speed``, ``nic_gbit_s`` per GPU (None: the layout's) with the fabric's healthy
        share ``nic_share``, in NVLink domains of ``domain_gpus`` (0: the layout's) at ``nvlink_share`` of
        their bandwidth."""
        assert self.model is not None and self.layout is not None
        lay = self.layout
        ic = lay.interconnect(nic_gbit_s, domain_gpus, nvlink_share)
        return _par.step_breakdown(self.model.physics(), lay.physics(), ic, lay.effective_peak_flops(), lay.eta_k,
                                   speed, nic_share)


class Training(Strict):
    """A job's work in training terms (twin/physics/training.py): work_h = 6·P·D / (gpus × peak × MFU); with
    the job's ``step.model`` and ``step.layout`` instead work_h = D / (B·s) steps × the step time of the
    parallel model (twin/physics/parallel.py), and ``peak_tflops`` and ``mfu`` are derived from it."""

    params_b: PosF = Field(description="Model parameters, billions.")
    tokens_t: PosF = Field(description="Training tokens, trillions.")
    peak_tflops: PosF | None = Field(
        None, description="Peak dense throughput per GPU at the training precision, TFLOP/s (H100 SXM bf16: 989, "
                          "NVIDIA H100 datasheet, without sparsity). Required without a step.layout; with one, "
                          "derived from it (step.layout.peak_tflops).")
    mfu: Annotated[float, Field(gt=0, le=1)] | None = Field(
        None, description="Model FLOPs utilisation in (0, 1] (Llama 3 405B on 16,384 H100: 0.38-0.43, arXiv "
                          "2407.21783 Table 4). Required without a step.layout; with one, derived: the model FLOPs "
                          "of a step over its failure-free step time.")
    mfu_convention: Literal["6N", "palm", "palm_causal", "megatron_sc21"] | None = Field(
        None, description="The FLOP count mfu is given in (twin/physics/flop_conventions.py): 6N (6 per parameter and "
                          "token, Kaplan et al. 2020: no attention), palm (6N + 12·l·h·s per token, PaLM App. B: the "
                          "Llama 3 paper's MFU), palm_causal (6N + 6·l·h·s), megatron_sc21 (Narayanan et al. SC21 "
                          "eq. 3, 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)) per step: full recomputation counted, the "
                          "'percent of peak' of Megatron-LM's Table 1). work_h = steps × the step's FLOPs under it / "
                          "(gpus × peak × mfu); all but 6N need step.model (l, h, s, V). null: 6N without a "
                          "step.layout; with one, derived (palm, palm_causal with layout.causal).")
    checkpoint_bytes_per_param: PosF = Field(
        _training.DEFAULT_CHECKPOINT_BYTES_PER_PARAM,
        description="Checkpoint bytes per parameter; sets checkpoint.size_gb when size_gb is not given (assumption: 16, "
                    "the mixed-precision Adam model state of the ZeRO paper, Rajbhandari et al. 2020).")

    def six_pd_h(self, gpus: int) -> float:
        """6·P·D / (gpus × peak × mfu) / 3600 at this ``mfu`` whatever its convention: the figure a 6PD
        calculation gives (twin forecast prints it beside a layout's ideal)."""
        assert self.peak_tflops is not None and self.mfu is not None
        return _training.work_hours(self.params_b, self.tokens_t, gpus, self.peak_tflops, self.mfu)

    def work_h(self, gpus: int, model: "ModelShapeSpec | None" = None) -> float:
        """Ideal wall hours on ``gpus`` GPUs (from ``peak_tflops`` and ``mfu``, counted in ``mfu_convention``;
        palm and palm_causal take l, h and s from ``model``)."""
        assert self.peak_tflops is not None and self.mfu is not None
        conv = self.mfu_convention or "6N"
        if conv == "6N":
            return _training.work_hours(self.params_b, self.tokens_t, gpus, self.peak_tflops, self.mfu)
        assert model is not None
        shape = model.physics()
        steps = self.tokens_t * 1e12 / (shape.global_batch * shape.seq_len)
        flops = _flops.flops_per_step(shape, conv)
        return steps * flops / (gpus * self.peak_tflops * 1e12 * self.mfu) / 3600.0

    def layout_work_h(self, step: "StepModel", gpus: int) -> tuple[float, float]:
        """(ideal wall hours, MFU) from the step model: D/(B·s) steps of the failure-free step time (full
        speed, the layout's NIC bandwidth, healthy NVLink), MFU = model FLOPs per step / (step × gpus × peak)
        against the bf16 ``peak_tflops``, also with fp8; model FLOPs as PaLM counts them, the attention term
        halved with ``layout.causal`` (``mfu_convention`` palm or palm_causal)."""
        assert step.model is not None and step.layout is not None
        t = step.breakdown().total_s
        steps = self.tokens_t * 1e12 / (step.model.global_batch * step.model.seq_len)
        peak = step.layout.peak_tflops * 1e12
        flops = _par.model_flops_per_step(step.model.physics(), causal=step.layout.causal)
        return steps * t / 3600.0, _par.mfu(flops, t, gpus, peak)


class Elastic(Strict):
    """An elastic data-parallel job: ``replica_nodes``-node replicas of the model. When it loses nodes and no
    replacement is free it goes on with fewer whole replicas (at least ``min_replicas``), at a throughput
    proportional to its replicas, keeping its progress (the surviving replicas hold the whole model and
    optimiser state); it grows back when nodes are free; each change of its nodes pauses it for
    ``reconfigure_h``. A queued elastic job at the head of the queue starts with the whole replicas that fit
    (at least ``min_replicas``). Other crashes (transient faults, flaps) restart it from its checkpoint."""

    replica_nodes: PosInt | None = Field(
        None, description="Nodes per data-parallel replica; default from the job's step.layout: tp × pp GPUs over "
                          "the node's GPUs (one node when a node holds whole replicas).")
    min_replicas: PosInt = Field(1, description="Fewest replicas it runs on; below that it is requeued as a "
                                               "rigid job would be.")
    reconfigure_h: NonNegH = Field(
        0.05, description="Pause at each change of its nodes (shrink, swap, grow: rebuild the communicators, "
                          "re-shard the data, copy the state to new replicas), hours (assumption: 3 min).")

    def check(self, where: str, nodes: int, gpus_per_node: int, layout: "LayoutSpec | None") -> None:
        """Derive ``replica_nodes`` from ``layout`` when not given; check it divides the job's ``nodes``."""
        rn = self.replica_nodes
        if rn is None:
            if layout is None:
                raise ValueError(f"@{where}.replica_nodes: give it (or a step.layout to derive it from)")
            per = layout.tp * layout.cp * layout.pp
            if per % gpus_per_node and gpus_per_node % per:
                raise ValueError(f"@{where}.replica_nodes: a replica of tp × pp = {per} GPUs is not a whole number "
                                 f"of {gpus_per_node}-GPU nodes; give replica_nodes")
            rn = max(1, per // gpus_per_node)
            derive(self, replica_nodes=rn)
        if nodes % rn:
            raise ValueError(f"@{where}.replica_nodes: {rn} does not divide the job's {nodes} nodes")
        if self.min_replicas > nodes // rn:
            raise ValueError(f"@{where}.min_replicas: {self.min_replicas} is more than the job's {nodes // rn} "
                             f"replicas")


class Job(Strict):
    name: str = Field(min_length=1, max_length=80)
    gpus: Annotated[int, Field(ge=1)]
    work_h: PosF | None = Field(
        None, description="Work in ideal wall-clock hours at full speed on all its GPUs; give this or `training`.")
    training: Training | None = Field(
        None, description="Work in training terms (parameters, tokens, peak TFLOP/s, MFU); sets work_h.")
    submit_h: NonNegH = 0.0
    priority: int = Field(0, description="Higher runs first.")
    checkpoint: Checkpoint = Field(default_factory=Checkpoint)
    step: StepModel = Field(default_factory=StepModel)
    repeat: bool = Field(False, description="Resubmit the same job when it completes (keeps the machine busy).")
    elastic: Elastic | None = Field(None, description="Elastic data parallelism (null: a rigid job).")
    data: DataLoading | None = Field(None, description="Training-data reads from the shared storage "
                                                       "(twin/scenario/storage.py; null: none).")
    phases: list[Phase] | None = Field(
        None, min_length=1, description="Stages of the training run (twin/scenario/phases.py: tokens, sequence "
                                        "length, global batch or ramp, GPUs, layout and precision each); needs a "
                                        "training block, step.model and step.layout. null: one phase.")
    pool: str | None = Field(None, description=JOB_POOL_DOC)

    @model_validator(mode="after")
    def _work(self) -> "Job":
        lay = self.step.layout
        if lay is not None and lay.gpus != self.gpus:
            raise ValueError(f"@step.layout: tp × cp × pp × dp = {lay.gpus} must equal gpus ({self.gpus})")
        if self.phases is not None and (self.training is None or lay is None):
            raise ValueError("@phases: phases need a training block and step.model with step.layout")
        if self.training is None:
            if self.work_h is None:
                raise ValueError("@work_h: give either work_h (ideal hours) or a training block")
            if self.data is not None:
                self.data.resolve_tokens("data", None, self.work_h, self.gpus)
            return self
        self._derive_training()
        ck = self.checkpoint
        if "size_gb" not in ck.model_fields_set and ck.write_h is None:
            derive(ck, size_gb=_training.checkpoint_size_gb(self.training.params_b,
                                                            self.training.checkpoint_bytes_per_param))
        if self.data is not None:
            self.data.resolve_tokens("data", self.training.tokens_t, self.work_h, self.gpus)
        return self

    def _derive_training(self) -> None:
        """Set work_h from the training block: from its peak and MFU, or from the step model with a layout
        (then also its peak and MFU). A resolved scenario (model_dump) repeats the derived values: accepted
        when they agree."""
        t = self.training
        assert t is not None
        lay = self.step.layout
        if lay is None:
            for f in ("peak_tflops", "mfu"):
                if getattr(t, f) is None:
                    raise ValueError(f"@training.{f}: required without a step.layout (or give step.model and "
                                     f"step.layout to derive it)")
            if t.mfu_convention not in (None, "6N") and self.step.model is None:
                raise ValueError(f"@training.mfu_convention: {t.mfu_convention} counts attention: give step.model "
                                 "(layers, hidden, seq_len), or use 6N")
            derived = t.work_h(self.gpus, self.step.model)
        else:
            derived, mfu = t.layout_work_h(self.step, self.gpus)
            conv = "palm_causal" if lay.causal else "palm"
            if t.mfu_convention not in (None, conv):
                raise ValueError(f"@training.mfu_convention: derived from step.layout ({conv}) when the job has one; "
                                 f"leave it out (given {t.mfu_convention})")
            derive(t, mfu_convention=conv)
            if self.phases is not None:
                derived = self._phases_work_h(t.tokens_t)
            for f, v in (("peak_tflops", lay.peak_tflops), ("mfu", mfu)):
                given = getattr(t, f)
                if given is not None and abs(given - v) > 1e-9 * v:
                    raise ValueError(f"@training.{f}: derived from step.layout ({v:.6g}) when the job has one; "
                                     f"leave it out (given {given:g})")
                derive(t, **{f: v})
        # a resolved scenario (model_dump) repeats the derived value: accept exactly that
        if self.work_h is not None and abs(self.work_h - derived) > 1e-9 * derived:
            raise ValueError(f"@work_h: give either work_h or training, not both (training gives {derived:.6g} h, "
                             f"work_h is {self.work_h:g})")
        derive(self, work_h=derived)

    def _phases_work_h(self, tokens_t: float) -> float:
        """Ideal hours of the phases (each segment's tokens at its own step time); ValueError naming the
        phase's field when one does not hold or the phases' tokens do not sum to the training's."""
        assert self.phases is not None
        total = sum(p.tokens_t for p in self.phases)
        if abs(total - tokens_t) > 1e-9 * tokens_t:
            raise ValueError(f"@phases: the phases' tokens sum to {total:g} T, not training.tokens_t {tokens_t:g} T")
        return sum(seg.work_h() for seg in segments(self.phases, self.step, self.gpus, StepModel))

    def phase_segments(self) -> list:  # type: ignore[type-arg]
        """The job's phases as segments of constant step (twin/scenario/phases.py), [] without phases."""
        if self.phases is None:
            return []
        return segments(self.phases, self.step, self.gpus, StepModel)


class Choice(Strict):
    values: list[Annotated[int, Field(ge=1)]] = Field(min_length=1)
    weights: list[Annotated[float, Field(ge=0)]] | None = None

    @model_validator(mode="after")
    def _w(self) -> "Choice":
        if self.weights is not None:
            if len(self.weights) != len(self.values):
                raise ValueError(f"@weights: must have as many entries as values ({len(self.values)})")
            if sum(self.weights) <= 0:
                raise ValueError("@weights: must not all be zero")
        return self


class Synthetic(Strict):
    """Poisson arrivals of jobs with random GPU count and work."""

    arrival_rate_per_h: PosF
    gpus: Choice
    work: Dist = Field(description="Work per job, ideal hours.")
    start_h: NonNegH = 0.0
    checkpoint: Checkpoint = Field(default_factory=Checkpoint)
    priority: int = 0
    elastic: Elastic | None = Field(
        None, description="Elastic data parallelism for the jobs of at least two replicas whose nodes are a whole "
                          "number of replicas (replica_nodes required); null: rigid jobs.")
    data: DataLoading | None = Field(None, description="Training-data reads of every job (read_mb_per_s_per_gpu or "
                                                       "bytes_per_sample × samples_per_s_per_gpu; null: none).")
    pool: str | None = Field(None, description=JOB_POOL_DOC)

    @model_validator(mode="after")
    def _data(self) -> "Synthetic":
        if self.data is not None and self.data.bytes_per_token is not None:
            raise ValueError("@data.bytes_per_token: synthetic jobs have no training block; give "
                             "read_mb_per_s_per_gpu or bytes_per_sample with samples_per_s_per_gpu")
        return self


class Trace(Strict):
    """Jobs from a CSV with columns submit_h, gpus, duration_h (ideal work hours), optional name, priority, pool."""

    file: str
    checkpoint: Checkpoint = Field(default_factory=Checkpoint)
    pool: str | None = Field(None, description=JOB_POOL_DOC + " (Every row without a `pool` cell of its own: the CSV's optional "
                            "pool column names a row's pool, empty for this one.)")
    _rows: TraceRows | None = PrivateAttr(default=None)

    def bind(self, rows: TraceRows) -> None:
        self._rows = rows

    def rows(self) -> TraceRows:
        """The trace's rows as columns (read in chunks by :func:`twin.scenario.trace.read_trace`)."""
        assert self._rows is not None, "trace used before its file was loaded"
        return self._rows


class Storage(Strict):
    write_gb_per_s: PosF = Field(100.0, description="Aggregate checkpoint write bandwidth, GB/s (assumption).")
    read_gb_per_s: PosF = Field(200.0, description="Aggregate checkpoint read bandwidth, GB/s (assumption).")
    node_write_gb_per_s: PosF | None = Field(
        None, description="Per-node front-end bandwidth to the storage for writes, GB/s: a checkpoint writes at "
                          "most at writer nodes × this (DGX H100: two 400 Gb/s storage ports = 100 GB/s line rate; "
                          "assumption where a scenario sets it, range 10-100). null: no per-node limit.")
    node_read_gb_per_s: PosF | None = Field(
        None, description="Per-node front-end bandwidth for checkpoint reads, GB/s (null: no per-node limit).")

    def read_time_h(self, size_gb: float, nodes: int, readers: int = 1) -> float:
        """Hours to read ``size_gb``: size / min(read bandwidth shared by ``readers``, ``nodes`` × the per-node
        read bandwidth)."""
        bw = self.read_gb_per_s / max(1, readers)
        if self.node_read_gb_per_s is not None and nodes > 0:
            bw = min(bw, nodes * self.node_read_gb_per_s)
        return size_gb / bw / 3600.0


class Scheduler(Strict):
    policy: Literal["fifo", "backfill"] = "fifo"
    hot_spares: Annotated[int, Field(ge=0)] = Field(0, description="Nodes held idle and swapped in on failure.")
    placement: Literal["pack", "first_fit"] = Field("pack", description="pack: fewest racks/leaves first.")
    starvation_advisory_h: PosF = Field(
        24.0, description="An advisory names a job that has been the head of the queue this many hours in all with "
                          "no bound on its start (the nodes it needs are down, not held by running jobs), hours "
                          "(assumption: a day; changes no result).")


class Workload(Strict):
    scheduler: Scheduler = Field(default_factory=Scheduler)
    storage: Storage = Field(default_factory=Storage)
    restart: Restart = Field(default_factory=Restart)
    jobs: list[Job] = Field(default_factory=list)
    synthetic: Synthetic | None = None
    trace: Trace | None = None
    warmup_h: NonNegH = Field(0.0, description="Jobs submitted before this are excluded from queue statistics.")
    min_load_pause_s: NonNegH = Field(
        1.0, description="Shortest checkpoint pause (a sync write, an async write's stall) that idles the job's "
        "nodes for the facility models, seconds: a shorter one stops the job (no progress, goodput counts it) "
        "but the IT power, GPU temperatures and rooms see its nodes busy through it. A pause of d s cools an "
        "air-cooled GPU by at most 1 − e^(−d/τ) of its rise above the inlet (3 % for 1 s at τ = 30 s) and "
        "over-counts its energy by at most d × (training − idle power) per GPU; 0 idles the nodes for every pause "
        "(assumption: below what moves throttling; a `twin sensitivity` factor).")

    @model_validator(mode="before")
    @classmethod
    def _moved(cls, data: Any) -> Any:
        return moved(data, "workload", {"gpu_idle_w": "cluster.node.gpu.idle_w"})

    def check_against(self, sc: "Scenario") -> None:
        gpn = sc.cluster.node.gpus
        schedulable = sc.cluster.n_nodes - self.scheduler.hot_spares
        if schedulable < 1:
            raise ValueError(
                f"@workload.scheduler.hot_spares: must leave at least one schedulable node "
                f"(cluster has {sc.cluster.n_nodes}), got {self.scheduler.hot_spares}"
            )
        for i, job in enumerate(self.jobs):
            need = -(-job.gpus // gpn)
            if need > schedulable:
                raise ValueError(
                    f"@workload.jobs.{i}.gpus: job {job.name!r} needs {need} nodes but only {schedulable} "
                    f"are schedulable ({sc.cluster.n_nodes} nodes minus {self.scheduler.hot_spares} hot spares)"
                )
        for i, job in enumerate(self.jobs):
            for k, ph in enumerate(job.phases or []):
                if ph.gpus is not None and -(-ph.gpus // gpn) > schedulable:
                    raise ValueError(f"@workload.jobs.{i}.phases.{k}.gpus: phase {ph.name!r} needs {-(-ph.gpus // gpn)} "
                                     f"nodes but only {schedulable} are schedulable")
        if self.synthetic is not None:
            for v in self.synthetic.gpus.values:
                if -(-v // gpn) > schedulable:
                    raise ValueError(
                        f"@workload.synthetic.gpus.values: {v} GPUs exceed the {schedulable} schedulable nodes"
                    )
        for i, job in enumerate(self.jobs):
            if job.elastic is not None:
                job.elastic.check(f"workload.jobs.{i}.elastic", -(-job.gpus // gpn), gpn, job.step.layout)
        for i, job in enumerate(self.jobs):
            check_job_layout(f"workload.jobs.{i}", job, sc.cluster.nvlink, gpn)
            job.step.check_memory(f"@workload.jobs.{i}.step.layout.hbm_gb")   # (again, once tp is known to fit)
        check_job_pools(self, sc)
        syn_el = self.synthetic.elastic if self.synthetic is not None else None
        if syn_el is not None and syn_el.replica_nodes is None:
            raise ValueError("@workload.synthetic.elastic.replica_nodes: give it (synthetic jobs have no layout)")
        names = [j.name for j in self.jobs]
        if len(set(names)) != len(names):
            raise ValueError("@workload.jobs: job names must be unique")
        for i, job in enumerate(self.jobs):  # a checkpoint must be writable within its interval
            ck = job.checkpoint
            if ck.interval_h is None:
                continue
            w = ck.write_time_h(self.storage.write_gb_per_s, 1, -(-job.gpus // gpn), self.storage.node_write_gb_per_s)
            if w >= ck.interval_h:
                what = (f"write_h {w:g} h" if ck.write_h is not None else
                        f"a {ck.size_gb:g} GB checkpoint takes {w:.4g} h at {self.storage.write_gb_per_s:g} GB/s")
                raise ValueError(f"@workload.jobs.{i}.checkpoint.{'write_h' if ck.write_h is not None else 'size_gb'}: "
                                 f"{what}, not less than interval_h {ck.interval_h:g} h; use a longer interval or "
                                 f"faster storage (workload.storage.write_gb_per_s)")
