"""Search the memory-feasible parallel layouts of a job size for the fastest step (issue 49).

Pure functions. Candidates: tp a divisor of the NVLink domain, pp a power of two up to the layer count,
dp = GPUs/(tp·cp·pp) dividing the global batch (microbatch 1; cp and ep the base layout's, ep dividing dp),
interleave v in {1, 2, 4, 8} with pp > 1
(the step model splits layers evenly, so a chunk may be a fractional number of layers, as 126 layers
over pp 16 × v 8 in the Llama 3 layout of forecast-405b.yaml),
ZeRO stage 1 or 3 and recompute selective or full; every other field (overlaps, bytes, causal) is the
base layout's. A candidate is kept when it fits in ``hbm_gb`` (:func:`twin.physics.memory.check_fits`);
the result is sorted by step time (ties: fewer pipeline stages, then less tp).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from twin.physics import memory as mem
from twin.physics.parallel import Interconnect, Layout, ModelShape, step_breakdown

__all__ = ["Candidate", "search_layouts"]


@dataclass(frozen=True)
class Candidate:
    """A feasible layout, its recompute mode, its step time (s) and its peak memory per GPU (GB)."""

    layout: Layout
    mode: str
    step_s: float
    memory_gb: float

    def describe(self) -> str:
        lay = self.layout
        return (f"tp {lay.tp}, pp {lay.pp}, dp {lay.dp}, v {lay.interleave}, ZeRO-{lay.zero}, recompute {self.mode}: "
                f"{self.step_s:.3f} s, {self.memory_gb:.1f} GB")


def search_layouts(shape: ModelShape, gpus: int, base: Layout, ic: Interconnect, peak_flops: float, eta_k: float,
                   hbm_gb: float, reserve_gb: float, optimizer_bytes: float = 12.0) -> list[Candidate]:
    """Every memory-feasible candidate layout of ``gpus`` GPUs (see the module text), fastest first."""
    out: list[Candidate] = []
    tps = [t for t in (1, 2, 4, 8, 16, 32, 64, 72) if t <= ic.domain_gpus and ic.domain_gpus % t == 0]
    pps = [p for p in (1, 2, 4, 8, 16, 32, 64, 128) if p <= shape.layers]
    for tp in tps:
        for pp in pps:
            if gpus % (tp * base.cp * pp):
                continue
            dp = gpus // (tp * base.cp * pp)
            if dp % base.ep:
                continue
            if shape.global_batch % dp:
                continue
            for v in ((1, 2, 4, 8) if pp > 1 else (1,)):
                for zero in ((1, 3) if dp > 1 else (0,)):
                    for mode in ("selective", "full"):
                        lay = dataclasses.replace(base, tp=tp, pp=pp, dp=dp, microbatch=1, interleave=v,
                                                  recompute=(mode == "full"), selective_recompute=True,
                                                  dp_collective="rs_ag" if zero else "all_reduce", zero_stage=zero)
                        try:
                            mb = mem.check_fits(shape, lay, mode, hbm_gb, reserve_gb,
                                                optimizer_bytes)
                        except ValueError:
                            continue
                        t = step_breakdown(shape, lay, ic, peak_flops, eta_k).total_s
                        out.append(Candidate(lay, mode, t, mb.total_gb))
    out.sort(key=lambda c: (c.step_s, c.layout.pp, c.layout.tp))
    return out
