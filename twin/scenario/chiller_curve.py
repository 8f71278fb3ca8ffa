"""Chiller COP by part load and condenser temperature (issue 42 item 4): ``cooling.energy.chiller_curve``,
the EnergyPlus ``Chiller:Electric:EIR`` curves of one published chiller (``twin.physics.chiller_curve``).

Default: "DOE-2 Centrifugal/5.50COP" of the EnergyPlus chiller dataset (Chillers.idf; the same record is
``Buildings.Fluid.Chillers.Data.ElectricEIR.DOE_2_Centrifugal_5_50COP`` of the Modelica Buildings
library): reference COP 5.5 at 6.67 °C leaving chilled water and 29.4 °C entering condenser water, curves
valid for 5-10 °C chilled water and 24-35 °C condenser water, minimum part load 0.1. See
docs/guide/weather.md.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, model_validator

from twin.scenario.base import Strict

Coef = Annotated[float, Field(allow_inf_nan=False)]


class ChillerCurve(Strict):
    """Water-cooled electric chiller on EIR curves; condenser water = outdoor wet-bulb + tower approach."""

    cop_ref: Annotated[float, Field(gt=0, le=15, allow_inf_nan=False)] = Field(
        5.5, description="COP at the reference conditions and full load (EnergyPlus Chillers.idf, DOE-2 "
        "Centrifugal/5.50COP).")
    chilled_water_c: Annotated[float, Field(ge=0, le=25, allow_inf_nan=False)] = Field(
        6.67, description="Leaving chilled-water temperature, °C (EnergyPlus Chillers.idf, DOE-2 Centrifugal/5.50COP: the "
        "curve's reference 6.67 °C; held in its 5-10 °C validity range when evaluated).")
    tower_approach_c: Annotated[float, Field(ge=0, le=15, allow_inf_nan=False)] = Field(
        3.9, description="Condenser water entering the chiller above the outdoor wet-bulb (cooling-tower "
        "approach), °C (assumption: 3.9 °C = 7 °F, a typical design approach; range 3-6 °C).")
    capacity_kw: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = Field(
        None, description="Reference capacity of the chiller plant (part load = load / capacity), kW. null: "
        "cooling.plant's chillers (capacity_kw x required), without a plant the cluster's nameplate IT power "
        "(assumption: the plant is sized for all IT heat; range 1-1.5x).")
    min_plr: Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False)] = Field(
        0.1, description="Minimum part-load ratio; below it the chiller cycles at this ratio's COP (Chillers.idf "
        "record: 0.1).")
    cap_ft: list[Coef] = Field(
        default_factory=lambda: [0.257896, 0.0389016, -0.00021708, 0.0468684, -0.00094284, -0.00034344],
        min_length=6, max_length=6, description="CAPFT biquadratic coefficients (a, b, c, d, e, f) in leaving "
        "chilled-water and entering condenser °C (Chillers.idf, DOE-2 Centrifugal/5.50COP).")
    eir_ft: list[Coef] = Field(
        default_factory=lambda: [0.933884, -0.058212, 0.00450036, 0.00243, 0.000486, -0.001215],
        min_length=6, max_length=6, description="EIRFT biquadratic coefficients (Chillers.idf, DOE-2 "
        "Centrifugal/5.50COP).")
    eir_fplr: list[Coef] = Field(
        default_factory=lambda: [0.222903, 0.313387, 0.46371], min_length=3, max_length=3,
        description="EIRFPLR quadratic coefficients in part-load ratio (Chillers.idf, DOE-2 Centrifugal/5.50COP).")
    condenser_range_c: list[Coef] = Field(
        default_factory=lambda: [24.0, 35.0], min_length=2, max_length=2,
        description="Validity range of the condenser temperature, °C: held inside it (Chillers.idf record).")
    chilled_water_range_c: list[Coef] = Field(
        default_factory=lambda: [5.0, 10.0], min_length=2, max_length=2,
        description="Validity range of the chilled-water temperature, °C (Chillers.idf record).")

    @model_validator(mode="after")
    def _check(self) -> "ChillerCurve":
        for name in ("condenser_range_c", "chilled_water_range_c"):
            lo, hi = getattr(self, name)
            if not lo < hi:
                raise ValueError(f"@{name}: give [low, high] with low < high, got {[lo, hi]}")
        return self
