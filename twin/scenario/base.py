"""The pydantic bases shared by the scenario schema and its section modules: the strict model, a
part type and its repair (model.md §2). The sections (power, cooling, network, workload, costs) and
:mod:`twin.scenario.schema` import them from here, so the schema imports its sections at the top.

Units are in field names: ``_h`` hours.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from twin.scenario.distributions import Distribution, Exponential, Fixed, normalise_dist

Dist = Annotated[Distribution, BeforeValidator(normalise_dist)]
PosInt = Annotated[int, Field(ge=1)]
NonNegInt = Annotated[int, Field(ge=0)]
Beta = Annotated[float, Field(ge=0, lt=1, allow_inf_nan=False)]
PosHours = Annotated[float, Field(gt=0, allow_inf_nan=False)]


def valid_part_name(name: str) -> bool:
    """A part name of the scenario: letters, digits and ``_``, starting with a letter (it is a YAML key,
    a metric suffix ``failures.<part>`` and a path component of the results)."""
    return bool(name) and name.replace("_", "").isalnum() and name[0].isalpha()


PART_NAME_RULE = "letters, digits and _ only, starting with a letter"


class Strict(BaseModel):
    """Base of every scenario section: unknown keys are errors, and a validated scenario is frozen (a
    model reads it, never writes it). A value derived while validating is set once, by
    :func:`twin.scenario.defaults.derive`."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)


Probability = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]


class Ladder(Strict):
    """The repair ladder of one part type (model.md §2, sources-realism.md §5). Rung 1: automated
    remediation (reset, reboot, GPU row remap) right after detection, with no technician and no spare;
    it clears the fault with probability ``remediate_success`` (s₁). Rung 2, the rest: a technician of
    the part's pool replaces the part with a spare (the hands-on ``repair.time``); the replacement clears
    the fault with probability ``replace_success`` (s₂). Rung 3, the rest of those: escalation (a deep
    repair or a vendor field visit) of ``escalate_time`` with the node still out, no technician held and
    no second spare (the vendor brings its own parts), which always clears the fault. Unconditional rung
    probabilities: p₁ = s₁, p₂ = (1 − s₁)s₂, p₃ = (1 − s₁)(1 − s₂); a spare is used by p₂ + p₃ = 1 − s₁.
    A remediated part counts as renewed (as good as new, its next lifetime drawn afresh; assumption:
    for an exponential lifetime this is the same as keeping its age) and needs no burn-in. The default
    (s₁ = 0, s₂ = 1) is the model without a ladder: every failure is a replacement."""

    remediate_success: Probability = Field(
        0.0, description="s₁: share of failures cleared by automated remediation (reset, reboot, row remap) "
                         "without a technician or a spare (assumption: no source gives the reset-vs-replace "
                         "share, sources-realism.md §5; 0 = every failure is a replacement).")
    remediate_time: Dist = Field(
        default_factory=lambda: Fixed(value_h=0.25),
        description="Time of the automated remediation attempt, hours, taken whether or not it clears the "
                    "fault (assumption: 15 min for a reset and health check).")
    replace_success: Probability = Field(
        1.0, description="s₂: share of replacements that clear the fault; the rest escalate (assumption: 1).")
    escalate_time: Dist = Field(
        default_factory=lambda: Fixed(value_h=24.0),
        description="Time of an escalation (deep repair, vendor field visit) after a replacement that did not "
                    "clear the fault, hours; burn-in follows (assumption: 24 h, a next-day vendor visit).")


class Repair(Strict):
    """How a failed part is repaired (model.md §2). ``repair: none`` is short for ``{policy: none}``."""

    policy: Literal["repair", "none"] = Field(
        "repair", description="'repair': a failed unit is detected, and repaired by the ladder below; 'none': it "
                              "is never repaired and stays failed to the horizon (a mission without maintenance, "
                              "as in reliability studies: no ticket, no crew, no spare; the other fields are "
                              "unused).")
    hot_swap: bool = Field(
        False, description="Replaced with the node in service; otherwise the node is drained for the repair."
    )
    time: Dist = Field(
        default_factory=lambda: Fixed(value_h=4.0),
        description="Hands-on repair time once a crew and a spare are there (assumption: 4 h fixed).",
    )
    burn_in_h: Annotated[float, Field(ge=0, allow_inf_nan=False)] = Field(
        0.0, description="Burn-in after a repair before the node returns to service, hours."
    )
    crew: str | None = Field(None, description="Crew pool that repairs this part (default: the first pool).")
    ladder: Ladder = Field(default_factory=Ladder,
                           description="Remediation, replacement and escalation shares and times (default: every "
                                       "failure is a replacement).")

    @model_validator(mode="before")
    @classmethod
    def _none(cls, data: Any) -> Any:
        return {"policy": "none"} if data == "none" else data


def hot_swap_repair() -> Repair:
    """The default repair of a site or fabric unit: hot-swapped, the generic time (a field default)."""
    return Repair(hot_swap=True)


Effect = Literal["node_down", "redundant", "link_down", "transient", "degraded"]
Per = Literal["node", "gpu", "rail"]


class SpeedRange(Strict):
    """Speed of a node while a ``degraded`` part of it is failed: uniform in [low, high], drawn per event."""

    low: Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)] = Field(description="Lowest speed fraction.")
    high: Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)] = Field(description="Highest speed fraction.")

    @model_validator(mode="after")
    def _check(self) -> "SpeedRange":
        if self.high < self.low:
            raise ValueError(f"@high: must be >= low ({self.low:g}), got {self.high:g}")
        return self


class Part(Strict):
    """One part type of a node: ``count`` per node, of which ``required`` must work."""

    count: Annotated[int, Field(ge=1, le=1_000_000)] = Field(
        1, description="Units per node (node parts) or per site (facility units); at most 1,000,000 (a typo guard). "
                       "With ``per: gpu`` or ``per: rail``, units per GPU or per fabric rail of the node.")
    per: Per = Field(
        "node", description="What ``count`` is counted per, for node parts: node, gpu (HBM stacks, one per GPU) "
                            "or rail (NICs, one per rail of the compute fabric: network.rails, or the GPU count "
                            "without a network section). Resolved to units per node when the scenario is "
                            "validated, so the node's GPU count carries its per-GPU parts with it.")
    required: PosInt | None = Field(None, description="k of the k-of-n group (default: count).")
    min_to_run: PosInt | None = Field(
        None, description="Below `required` but at least this many: degraded; below it: failed."
    )
    effect: Effect = "node_down"
    failure: Dist
    repair: Repair = Field(default_factory=Repair)
    dispatch_priority: int | None = Field(
        None, description="Crew dispatch priority (lower first). Default: node-down 0, link 1, redundancy 2."
    )
    common_cause_beta: Beta = Field(
        0.0, description="β-factor of common-cause failures of the group (the units of one node; for site units, "
                         "the group their model defines): each unit fails alone at (1 − β)λ, and a common event at "
                         "βλ fails every working unit of the group, each with its own repair ticket. Needs an "
                         "exponential failure (λ = 1/mean_h). 0: independent failures. Assumption when set: "
                         "1–10 % is the commonly quoted range, IEC 62061 assumes ≤ 2 % (sources-realism §4).")
    initial_age_h: Annotated[float, Field(ge=0, le=1e6, allow_inf_nan=False)] = Field(
        0.0, description="Age of every unit at the start of the run, hours: its first lifetime is the residual "
                         "life given survival to this age (Weibull: closed form, a wear-out part nearer its end; "
                         "exponential: memoryless, unchanged); units installed during the run start new. A "
                         "timeline carries each unit's own age across its stages (docs/guide/timeline.md). "
                         "Default 0: new (assumption; a site's own figure, e.g. 26,280 h for 3-year-old fans).")
    latent_test_interval_h: PosHours | None = Field(
        None, description="The unit fails silently (standby or no telemetry): its failure is found at the next "
                          "periodic test (every this many hours from time 0), or when a demand finds it (a node "
                          "group that falls below `required`; a generator or UPS called on by an outage), and "
                          "only then is it repaired. null: failures are detected as usual (maintenance.detection).")
    speed: SpeedRange | None = Field(
        None, description="Effect ``degraded`` only (required there): the node runs at this speed fraction while "
                          "the part is failed (an HBM row remap, an NVLink lane down, a failing fan), drawn "
                          "uniformly per failure; the node stays in service, its job at its slowest node's pace "
                          "(twin/scenario/health.py, Stragglers).")

    @model_validator(mode="before")
    @classmethod
    def _default_required(cls, data: Any) -> Any:
        count = data.get("count", 1) if isinstance(data, dict) else None
        # a bool is an int to Python: `count: true` is refused on count alone, not also on a copied required
        if isinstance(data, dict) and data.get("required") is None and isinstance(count, int) and not isinstance(count, bool):
            data = {**data, "required": count}
        return data

    @model_validator(mode="after")
    def _check(self) -> "Part":
        if isinstance(self.failure, Fixed) and self.failure.value_h <= 0:
            raise ValueError("@failure: a fixed time to failure must be > 0 h (0 fails the part again at once), "
                             f"got {self.failure.value_h}")
        assert self.required is not None  # set by _default_required
        if self.per != "node":  # a node part counted per GPU or rail is resolved before this (Scenario._per_gpu)
            raise ValueError(f"@per: only a node part without k-of-n redundancy (no required, min_to_run or effect "
                             f"redundant) may be counted per {self.per}; a k-of-n group is counted per node")
        if self.required > self.count:
            raise ValueError(f"@required: must be <= count ({self.count}), got {self.required}")
        if self.min_to_run is not None:
            if self.min_to_run > self.required:
                raise ValueError(
                    f"@min_to_run: must be <= required ({self.required}), got {self.min_to_run}"
                )
        if self.common_cause_beta > 0 and not isinstance(self.failure, Exponential):
            raise ValueError(f"@common_cause_beta: needs an exponential failure distribution (the β-factor splits a "
                             f"constant rate λ), got {self.failure.dist!r}")
        if (self.effect == "degraded") != (self.speed is not None):
            raise ValueError("@speed: a part with effect 'degraded' needs a speed range {low, high}, and only it"
                             if self.effect == "degraded" else "@speed: only a part with effect 'degraded' has one")
        if self.effect != "redundant" and self.required != self.count and self.effect == "node_down":
            raise ValueError("@required: only effect 'redundant' parts may have required < count")
        return self

    @property
    def fail_below(self) -> int:
        """The node fails when fewer than this many of the group work."""
        assert self.required is not None
        return self.min_to_run if self.min_to_run is not None else self.required
