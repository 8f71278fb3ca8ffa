"""Not all nodes are equal (issue 26, sources-realism.md §5, §6): lemon nodes (a per-node frailty of
failure rates and a quarantine for repeat offenders), infant mortality of replaced parts, stragglers
(parts with effect ``degraded`` slow their node; a policy after detection) and silent data corruption
(a defective node corrupts the state of the job it runs; the job rolls back to a checkpoint written
before the corruption). The section ``health`` of a scenario; absent, every node is as the others
and every failure a clean crash.

Units are in field names: ``_h`` hours, ``_days`` days.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from twin.scenario.base import Dist, Probability, Strict
from twin.scenario.distributions import Exponential, Fixed, Weibull

NonNegH = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class Frailty(Strict):
    """A per-node multiplier Z of the failure rates of its parts (proportional hazards: a part's
    survival S(t) becomes S(t)^Z), gamma-distributed with mean 1 and variance ``variance`` (shape 1/v,
    scale v), drawn once per node and replication from the node's own stream (common random numbers:
    the same node is the same lemon in every variant of a comparison). With exponential lives, a node's
    failure count over a horizon is then negative binomial: variance m + m²v."""

    variance: Annotated[float, Field(ge=0, le=100, allow_inf_nan=False)] = Field(
        0.5, description="v, the variance of the frailty (0: every node alike). Assumption: no published "
                         "count of lemon nodes was found (Kokolis et al. 2025 name lemon-node detection as a "
                         "mitigation without counts, sources-realism.md §5); a factor of twin sensitivity "
                         "(--param health.frailty.variance=0,1).")
    parts: list[str] | None = Field(
        None, description="Node parts whose rates the frailty multiplies (default: every node part).")


class Quarantine(Strict):
    """A node with ``failures`` part failures (any node part but transient faults) within
    ``window_days`` leaves service for a deep repair of ``deep_repair`` (no technician held: a vendor
    or diagnostics bench), after which its frailty is 1 (the defect found and fixed: assumption) and its
    parts' lives are drawn afresh. A node that reaches the trigger is counted as a lemon (with a frailty
    and no quarantine section, by the default trigger: 3 failures in 30 days)."""

    failures: Annotated[int, Field(ge=2, le=100)] = Field(
        3, description="k: failures within the window that quarantine a node (assumption).")
    window_days: Annotated[float, Field(gt=0, allow_inf_nan=False)] = Field(
        30.0, description="The sliding window, days (assumption).")
    enabled: bool = Field(True, description="False: count lemons by the trigger but take no node out.")
    deep_repair: Dist = Field(
        default_factory=lambda: Fixed(value_h=72.0),
        description="Time of the deep repair, hours (assumption: three days of diagnostics and part swaps).")


class Stragglers(Strict):
    """What happens when a part with effect ``degraded`` slows a node: the job on it runs at its slowest
    node's pace; ``detection_h`` after the slowdown began a straggler detector flags the node, and the
    policy acts: ``keep`` runs on slow until the part's repair (which drains the node unless it is
    hot-swapped); ``swap`` drains the node at once, so its job restarts from its last checkpoint on a
    hot spare (or waits for nodes) and the node stays out until repaired."""

    detection_h: NonNegH = Field(
        0.25, description="d: delay from a slowdown to its detection, hours (assumption; FALCON detects "
                          "fail-slows in the tens of seconds to minutes with > 99 % accuracy, "
                          "sources-realism.md §6).")
    policy: Literal["keep", "swap"] = Field(
        "keep", description="keep: run slow until repaired; swap: drain the straggler after detection.")


class SilentCorruption(Strict):
    """Silent data corruption: each node is defective with probability ``defective_share`` (drawn from
    its own stream); a defective node corrupts the state of the job it runs at the times of a renewal
    process with gaps ``corruption``. ``detection`` after a corruption the job rolls back to its last
    checkpoint written (captured) before the corruption, losing the progress since (possibly several
    checkpoints), and restarts; the node leaves service for ``test_h`` of testing, which finds the defect
    with probability ``test_finds`` (found: the node is repaired, no longer defective). A corruption on a
    node that runs no job is harmless. Expected corruptions per node-hour: share / mean gap."""

    defective_share: Probability = Field(
        0.001, description="p: share of defective nodes (about 1 in 1,000 devices: Dixit et al. 2022, "
                           "secondary; 'a few mercurial cores per several thousand machines': Hochschild et "
                           "al. 2021; sources-realism.md §5).")
    corruption: Dist = Field(
        default_factory=lambda: Exponential(mean_h=442.368),
        description="Time between corruptions on a defective node, hours. Default: mean 442.4 h, so that p × "
                    "rate is the Llama 3 snapshot's 6 SDC interruptions per 2,654,208 node-hours (one per "
                    "442,368 node-h) with p = 0.001 (the rate split into p and r is an assumption).")
    detection: Dist = Field(
        default_factory=lambda: Fixed(value_h=1.0),
        description="Latency from a corruption to its detection (a loss spike, a checksum mismatch), hours "
                    "(assumption: 1 h).")
    test_h: Annotated[float, Field(gt=0, allow_inf_nan=False)] = Field(
        24.0, description="The node's quarantine for testing after a detection, hours (assumption).")
    test_finds: Probability = Field(
        0.5, description="Probability that the test finds the defect (assumption: mercurial cores are "
                         "intermittent, Hochschild et al. 2021).")


class InfantMortality(Strict):
    """Maintenance-induced early failures: a part replaced by a technician (rung 2 of the repair ladder)
    is defective with probability ``share`` and then fails after ``early_life`` (a decreasing hazard
    by default) unless its normal life is shorter. A failure during the burn-in is caught there (the node
    is not in service: no job is hit). An assumption: no source gives infant mortality after repair
    (sources-realism.md §5, NOT FOUND)."""

    share: Probability = Field(0.02, description="q: share of replacements that are defective (assumption).")
    early_life: Dist = Field(
        default_factory=lambda: Weibull(shape=0.5, scale_h=12.0),
        description="Time to failure of a defective replacement, hours (assumption: Weibull shape 0.5, a "
                    "decreasing hazard, scale 12 h: mean 24 h).")


class Health(Strict):
    """Lemon nodes, stragglers, silent data corruption and infant mortality (the module docstring)."""

    frailty: Frailty | None = Field(None, description="Per-node frailty of failure rates (none: nodes alike).")
    quarantine: Quarantine | None = Field(None, description="Quarantine of repeat offenders (none: never).")
    stragglers: Stragglers = Field(default_factory=lambda: Stragglers(),
                                   description="Detection and policy for nodes slowed by a degraded part.")
    sdc: SilentCorruption | None = Field(None, description="Silent data corruption (none: off).")
    infant_mortality: InfantMortality | None = Field(None, description="Early failures of replaced parts.")

    @model_validator(mode="after")
    def _check(self) -> "Health":
        if self.frailty is not None and self.frailty.parts is not None and len(set(self.frailty.parts)) != len(
                self.frailty.parts):
            raise ValueError("@frailty.parts: a part is listed twice")
        return self

