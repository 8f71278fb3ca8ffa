"""Phases of a training job (issue 50): a run as a sequence of stages, each with its own tokens,
sequence length, global batch (or a batch ramp), GPUs, layout and precision (``workload.jobs.N.phases``).

A phase changes the job's ``step.model`` (``seq_len``, ``global_batch``) and ``step.layout`` (any of its
fields: ``layout: {cp: 16, dp: 8}``) for its tokens; a ``ramp`` splits it into segments of their own global
batch. Each segment's step time comes from the parallel step-time model (twin/physics/parallel.py) and
its layout is checked as the job's is (tp × cp × pp × dp = the phase's GPUs, the batch, memory when
``hbm_gb`` is given). ``twin forecast`` runs each segment on its own GPUs and sums the times to train
(twin/forecast/phases.py); ``twin run`` runs the job as one, on the job's GPUs, for the phases' summed
work.
"""

from __future__ import annotations

from typing import Annotated, Any, Callable

from pydantic import Field, ValidationError, model_validator

from twin.scenario.base import Strict

PosF = Annotated[float, Field(gt=0, allow_inf_nan=False)]
PosInt = Annotated[int, Field(ge=1)]
PHASE_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$"


class RampStep(Strict):
    """One segment of a batch ramp: ``tokens_t`` trillion tokens at ``global_batch`` sequences per step."""

    tokens_t: PosF = Field(description="Tokens of this segment, trillions.")
    global_batch: PosInt = Field(description="Sequences per optimiser step in this segment.")


class Phase(Strict):
    """A stage of the job's training (module text). Fields left out are the job's."""

    name: str = Field(pattern=PHASE_NAME, description="Phase name (letters, digits, _ . -; up to 40 characters).")
    tokens_t: PosF = Field(description="Tokens of the phase, trillions; the phases' tokens sum to training.tokens_t.")
    seq_len: PosInt | None = Field(None, description="Tokens per sequence (null: the job's step.model.seq_len).")
    global_batch: PosInt | None = Field(None, description="Sequences per step (null: the job's, or the ramp's).")
    ramp: list[RampStep] | None = Field(
        None, min_length=1, description="A batch ramp: segments whose tokens sum to the phase's (instead of "
                                        "global_batch).")
    gpus: PosInt | None = Field(None, description="GPUs of the phase (null: the job's); its failures are drawn for "
                                                  "this size.")
    layout: dict[str, Any] = Field(
        default_factory=dict, description="Fields of the job's step.layout this phase changes (e.g. {cp: 16, dp: 8, "
                                          "cp_collective: all_gather}, {precision: fp8}).")

    @model_validator(mode="after")
    def _ramp(self) -> "Phase":
        if self.ramp is not None:
            if self.global_batch is not None:
                raise ValueError("@ramp: give global_batch or ramp, not both")
            total = sum(r.tokens_t for r in self.ramp)
            if abs(total - self.tokens_t) > 1e-9 * self.tokens_t:
                raise ValueError(f"@ramp: its segments' tokens sum to {total:g} T, not the phase's tokens_t "
                                 f"{self.tokens_t:g} T")
        return self


class Segment:
    """A run of constant step: phase ``phase`` (index ``index``), ``tokens_t`` trillion tokens on ``gpus``
    GPUs with ``step`` (a validated twin.scenario.workload.StepModel), its ``label`` 'name' or 'name.k' (ramp
    segment k)."""

    __slots__ = ("index", "phase", "label", "tokens_t", "gpus", "step")

    def __init__(self, index: int, phase: str, label: str, tokens_t: float, gpus: int, step: Any) -> None:
        self.index, self.phase, self.label, self.tokens_t, self.gpus, self.step = index, phase, label, tokens_t, gpus, step

    def work_h(self) -> float:
        """Ideal wall hours: tokens / (B·s) steps × the failure-free step time."""
        assert self.step.model is not None
        steps = self.tokens_t * 1e12 / (self.step.model.global_batch * self.step.model.seq_len)
        return steps * self.step.breakdown().total_s / 3600.0


def _first_error(exc: ValidationError, prefix: str) -> ValueError:
    """A ValidationError as one ``@prefix.loc: message`` ValueError (the loader names the field path)."""
    err = exc.errors()[0]
    msg = str(err["msg"])
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, "):]
    loc = ".".join(str(x) for x in err["loc"])
    if msg.startswith("@"):
        field, _, rest = msg[1:].partition(": ")
        if field.startswith("model."):   # a phase sets seq_len and global_batch at its top level
            field = field[len("model."):]
        return ValueError(f"@{prefix}.{field}: {rest}")
    if err["type"] == "extra_forbidden":
        msg = "unknown layout field"
    return ValueError(f"@{prefix}{'.' + loc if loc else ''}: {msg}")


def segments(phases: list[Phase], step: Any, gpus: int, step_model: Callable[..., Any]) -> list[Segment]:
    """The phases as segments of constant step, each with its StepModel (``step_model``: the class
    twin.scenario.workload.StepModel, which validates it) made from the job's ``step`` with the phase's
    changes; ValueError naming ``@phases.N...`` when a phase's layout or batch does not hold."""
    assert step.model is not None and step.layout is not None
    out: list[Segment] = []
    names = [p.name for p in phases]
    if len(set(names)) != len(names):
        raise ValueError("@phases: phase names must be unique")
    for i, ph in enumerate(phases):
        n = ph.gpus or gpus
        lay = {**step.layout.model_dump(), **ph.layout}
        parts = ([(ph.name, ph.tokens_t, ph.global_batch)] if ph.ramp is None else
                 [(f"{ph.name}.{k}", r.tokens_t, r.global_batch) for k, r in enumerate(ph.ramp)])
        for label, tokens, batch in parts:
            model = {**step.model.model_dump(), "seq_len": ph.seq_len or step.model.seq_len,
                     "global_batch": batch or step.model.global_batch}
            try:
                st = step_model(**{**step.model_dump(exclude={"model", "layout"}), "model": model, "layout": lay})
            except ValidationError as exc:
                raise _first_error(exc, f"phases.{i}") from None
            assert st.layout is not None
            if st.layout.gpus != n:
                raise ValueError(f"@phases.{i}.layout: tp × cp × pp × dp = {st.layout.gpus} must equal the phase's "
                                 f"gpus ({n})")
            out.append(Segment(i, ph.name, label, tokens, n, st))
    return out
