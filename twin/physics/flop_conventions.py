"""FLOP conventions of published MFUs, and converting an MFU from one to another (issue 49).

Pure functions. An MFU is FLOPs per step / (step time × GPUs × peak); papers count the FLOPs differently,
so one measured step gives a different MFU under each count, and a published MFU is only comparable (or
usable to size a run) under the count it was published in. With the step time, GPUs and peak the same,
an MFU converts as ``mfu × F_to / F_from`` (:func:`convert_mfu`). Conventions (:data:`CONVENTIONS`):

* ``6N``: 6 FLOPs per parameter and token (Kaplan et al. 2020 §2.1), N all the parameters
  (:func:`twin.physics.parallel.params_count`): matrix multiplies only, no attention;
* ``palm``: 6·N + 12·l·h·s per token with N the matmul weights, the output layer included (Chowdhery et
  al. 2023, PaLM, App. B); the Llama 3 paper reports its MFU so (twin validate's ``llama3_mfu``);
  Korthikanti et al. 2022's "model FLOPs" are the same count;
* ``palm_causal``: the same with the attention term halved for the causal mask (6·N + 6·l·h·s; current
  Megatron-LM's count);
* ``megatron_sc21``: the hardware FLOPs of Narayanan et al. SC21 eq. 3, 96·B·s·l·h²·(1 + s/(6h) +
  V/(16·l·h)) per step: full activation recomputation counted (one more forward), attention non-causal.

>>> from twin.physics.parallel import ModelShape
>>> gpt = ModelShape(layers=128, hidden=25600, heads=160, seq_len=2048, vocab=51200, global_batch=3072)
>>> round(convert_mfu(0.52, gpt, "megatron_sc21", "palm"), 4)   # SC21's 1 T row as model FLOPs
0.3906
"""

from __future__ import annotations

from typing import Literal

from twin.physics import parallel as par

__all__ = ["CONVENTIONS", "Convention", "convert_mfu", "flops_per_step"]

Convention = Literal["6N", "palm", "palm_causal", "megatron_sc21"]
CONVENTIONS: dict[str, str] = {
    "6N": "6·N per token, N all parameters (Kaplan et al. 2020): no attention",
    "palm": "6·N + 12·l·h·s per token, N the matmul weights (PaLM App. B; Llama 3, Korthikanti et al. model FLOPs)",
    "palm_causal": "6·N + 6·l·h·s per token (attention halved for the causal mask; current Megatron-LM)",
    "megatron_sc21": "96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)) per step (Narayanan et al. SC21 eq. 3: full "
                     "recomputation counted)",
}


def flops_per_step(shape: par.ModelShape, convention: Convention) -> float:
    """FLOPs of one step of ``shape`` (B sequences of s tokens) under ``convention``."""
    if convention == "6N":
        return 6.0 * par.params_count(shape) * shape.global_batch * shape.seq_len
    if convention == "palm":
        return par.model_flops_per_step(shape, causal=False)
    if convention == "palm_causal":
        return par.model_flops_per_step(shape, causal=True)
    if convention == "megatron_sc21":
        return par.hardware_flops_per_step(shape, recompute=True)
    raise ValueError(f"unknown FLOP convention {convention!r}; allowed: {', '.join(CONVENTIONS)}")


def convert_mfu(mfu: float, shape: par.ModelShape, from_convention: Convention, to_convention: Convention) -> float:
    """The MFU ``mfu`` published under ``from_convention`` as it reads under ``to_convention`` (same step time,
    GPUs and peak): mfu × F_to / F_from."""
    if not 0.0 < mfu <= 1.0:
        raise ValueError(f"mfu must be in (0, 1], got {mfu}")
    return mfu * flops_per_step(shape, to_convention) / flops_per_step(shape, from_convention)
