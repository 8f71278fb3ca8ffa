"""Humidity of the supply air of evaporative units and what the site does about it (issue 42 item 3):
the ASHRAE envelope the supply air must stay in, a trim chiller / mechanical mode, a yearly water cap and
the failures added by hours outside the envelope (``cooling.air.evaporative.humidity``).

The ASHRAE classes are those of the Thermal Guidelines for Data Processing Environments, 5th ed. (2021),
Table 2.1 (``../shared/design/sources-next.md`` §2). See docs/guide/weather.md.
"""

from __future__ import annotations

from typing import Annotated, Literal, NamedTuple

from pydantic import Field, model_validator

from twin.scenario.base import Strict


class Envelope(NamedTuple):
    """One ASHRAE class: dry-bulb range (°C), dew point range (°C), relative humidity range (0-1)."""

    t_min_c: float
    t_max_c: float
    dew_min_c: float
    dew_max_c: float
    rh_min: float
    rh_max: float


ASHRAE_2021: dict[str, Envelope] = {
    # ASHRAE Thermal Guidelines 5th ed. (2021) Table 2.1 (sources-next §2, read in the source: S). The
    # recommended RH limit is 70 % (50 % where gaseous pollutants are high: `recommended_rh_max`); the
    # recommended range has no low-RH limit beyond the −9 °C dew point.
    "recommended": Envelope(18.0, 27.0, -9.0, 15.0, 0.0, 0.70),
    "A1": Envelope(15.0, 32.0, -12.0, 17.0, 0.08, 0.80),
    "A2": Envelope(10.0, 35.0, -12.0, 21.0, 0.08, 0.80),
    "A3": Envelope(5.0, 40.0, -12.0, 24.0, 0.08, 0.85),
    "A4": Envelope(5.0, 45.0, -12.0, 24.0, 0.08, 0.90),
}


class EvaporativeHumidity(Strict):
    """Humidity envelope, trim chiller / mechanical mode and water cap of the evaporative units."""

    envelope: Literal["recommended", "A1", "A2", "A3", "A4"] = Field(
        "A1", description="ASHRAE class the supply (server inlet) air must stay in: dry-bulb, dew point and "
        "relative humidity ranges of the Thermal Guidelines 5th ed. (2021) Table 2.1 (recommended 18-27 °C, "
        "-9 to 15 °C dew point, RH <= 70 %; A1 15-32 °C, -12 °C DP & 8 % RH to 17 °C DP & 80 % RH; A2 10-35 °C, "
        "up to 21 °C DP & 80 %; A3 5-40 °C, up to 24 °C DP & 85 %; A4 5-45 °C, up to 24 °C DP & 90 %). A1 is an "
        "assumption (the class of enterprise servers; a DGX H100 allows 5-30 °C and 20-80 % RH; range: "
        "recommended to A3).")
    recommended_rh_max: Annotated[float, Field(ge=0.3, le=1.0, allow_inf_nan=False)] = Field(
        0.70, description="Upper RH limit of the recommended envelope, 0-1 (ASHRAE 2021: 0.70 where gaseous "
        "pollution is low, 0.50 where it is high).")
    mechanical: Literal["none", "chiller"] = Field(
        "none", description="none: no chiller, the supply floats above its set point and may leave the envelope "
        "(hours counted, failures added); chiller: a trim chiller cools the pads' air to the set point when "
        "they cannot, and the units switch to mechanical mode (pads off, return air recirculated through the "
        "chiller coil, which holds the envelope: an assumption) when the supply would leave the envelope, the "
        "outside air after the pads is hotter than the return air, or the water cap is reached. The chiller's "
        "COP is cooling.energy's; it does not fail (assumption: a redundant plant). Priced as a chiller plant for the "
        "whole air load (costs.capital.chiller_per_kw): mechanical mode carries it all.")
    water_cap_l_per_year: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = Field(
        None, description="Site water the units may draw in a calendar year (from each 8,760 h of the horizon), "
        "L; once reached, the pads stay dry until the year ends (mechanical or dry trim). Needs mechanical: "
        "chiller. null: no cap.")
    failure_factor: Annotated[float, Field(ge=1.0, le=10.0, allow_inf_nan=False)] = Field(
        1.5, description="Multiplier of the failure rate of the X-factor's node parts while the supply's humidity "
        "(dew point or RH) is outside the envelope (assumption: the ASHRAE X-factor depends on dry-bulb only; "
        "high humidity with pollutants corrodes and low humidity raises electrostatic discharge, no rate was "
        "found; range 1-3, 1 = no effect).")

    @model_validator(mode="after")
    def _check(self) -> "EvaporativeHumidity":
        if self.water_cap_l_per_year is not None and self.mechanical != "chiller":
            raise ValueError("@water_cap_l_per_year: a water cap needs mechanical: chiller (something must cool "
                             "once the pads stop); set mechanical: chiller or remove the cap")
        return self

    def limits(self) -> Envelope:
        """The envelope's ranges, with the recommended RH limit applied."""
        env = ASHRAE_2021[self.envelope]
        return env._replace(rh_max=self.recommended_rh_max) if self.envelope == "recommended" else env
