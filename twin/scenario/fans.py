"""Server fans of a node type (``cluster.node.fans``, issue 42): the cube law and the fan curve of
:mod:`twin.physics.fans`, and how the fans' power sits inside the node's power.

The node's nameplate (DGX H100: 10.2 kW) includes its fans at full speed, so ``non_gpu_w`` and
``non_gpu_idle_w`` include the fans too, as they run at ``reference_inlet_c`` (default: the design inlet, so
at full load at full speed): with a cooling section the model takes that fan power out of the non-GPU load
and adds the fans' power at their simulated speed (never more than ``max_w``). A liquid- or hybrid-cooled hall's nodes keep
only residual fans (``residual_share`` of ``max_w``). Without a cooling section fans are not modelled
(the non-GPU load keeps them at full speed, as before). See docs/guide/fans.md.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, model_validator

from twin.scenario.base import Strict

TempC = Annotated[float, Field(ge=-60, le=200, allow_inf_nan=False)]


class NodeFans(Strict):
    """Fans of one node type: power at full speed, fan curve, residual fans on liquid (all assumptions with
    ranges: no published fan power of a DGX/HGX H100 was found, sources-next §1)."""

    enabled: bool = Field(
        True, description="Model the fans' speed and power (with a cooling section). false: the non-GPU load "
        "keeps the fans at full speed, as a constant.")
    share: Annotated[float, Field(ge=0, le=0.5, allow_inf_nan=False)] = Field(
        0.10, description="Fans' power at full speed as a share of the node's nameplate (cluster.node.nameplate_w), "
        "used when max_w is null. Fans use 10–15 % or more of a server's power (Neudorfer, eWeek 2009, "
        "sources-next §1); 0.10 is an assumption for a DGX H100 (no figure found), range 0.05–0.15.")
    max_w: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = Field(
        None, description="Fans' power of one air-cooled node at full speed, W; part of non_gpu_w and of the "
        "nameplate, at most non_gpu_idle_w. null: share × nameplate, at most non_gpu_idle_w (DGX H100: 1,020 W).")
    min_speed: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)] = Field(
        0.3, description="Lowest speed the fan control runs the fans at, fraction of full speed (assumption, "
        "range 0.2–0.5).")
    design_inlet_c: TempC = Field(
        30.0, description="Inlet air at which the node at its nameplate power needs full fan speed, °C "
        "(assumption: the top of the DGX H100's 5–30 °C operating range, sources.md; range 25–35).")
    exhaust_c: TempC = Field(
        45.0, description="Exhaust temperature the fan control holds, °C: the flow is heat / (exhaust − inlet) "
        "(assumption: a 15 °C rise at the design point, within the 10–20 °C typical of servers; range 40–60).")
    reference_inlet_c: TempC | None = Field(
        None, description="Inlet air at which the node's non-GPU load (non_gpu_w, non_gpu_idle_w) was stated: it "
        "holds the fans at the fan curve's speed for that inlet, all fans working, at each utilisation, and the "
        "model puts the simulated fans in their place. null: design_inlet_c, the nameplate convention (at full "
        "load the fans at full speed, inside the 10.2 kW). A measured draw gives its own inlet (assumption when "
        "not reported).")
    residual_share: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)] = Field(
        0.25, description="Fans a liquid- or hybrid-cooled version of the node keeps (memory, NICs, drives, "
        "PSUs), their power at full speed as a share of max_w (assumption, range 0.1–0.4; a hybrid study "
        "recalled −10.2 % total power for direct-to-chip, sources-next §1, not confirmed).")
    part: str | None = Field(
        "fan", description="Node part (effect redundant) whose healthy count carries the flow: the remaining "
        "fans speed up by count/healthy (their power by (count/healthy)²) before the GPUs warm. null, or a "
        "node without the part: failures not tracked.")

    @model_validator(mode="after")
    def _check(self) -> "NodeFans":
        if self.exhaust_c <= self.design_inlet_c + 1.0:
            raise ValueError(f"@exhaust_c: must be > design_inlet_c + 1 ({self.design_inlet_c + 1.0:g}) °C, "
                             f"got {self.exhaust_c:g}")
        return self

    def full_w(self, non_gpu_idle_w: float, rated_w: float) -> float:
        """Fans' power at full speed, W (``max_w``, else ``share`` × ``rated_w``, at most ``non_gpu_idle_w``)."""
        if self.max_w is not None:
            return self.max_w
        return min(self.share * rated_w, non_gpu_idle_w)


__all__ = ["NodeFans"]
