"""Electric chiller COP as a function of part load and condenser temperature: the DOE-2 / EnergyPlus
``Chiller:Electric:EIR`` model (EnergyPlus Engineering Reference, "Electric Chiller Model Based on
Condenser Entering Temperature").

Pure functions, no clock; floats or numpy arrays.

* available capacity  Q_avail = Q_ref · CAPFT(T_chw, T_cond), CAPFT biquadratic;
* part-load ratio     PLR = Q / Q_avail, held at ``min_plr`` below it (the chiller cycles there: same COP)
  and at 1 above it;
* electric power      P = Q_avail · EIR_ref · EIRFT(T_chw, T_cond) · EIRFPLR(PLR), EIR_ref = 1/COP_ref,
  EIRFT biquadratic, EIRFPLR quadratic;
* so COP = Q/P = COP_ref · PLR / (EIRFT · EIRFPLR(PLR)).

A biquadratic is a + b·x + c·x² + d·y + e·y² + f·x·y (x the leaving chilled-water, y the entering condenser
temperature, °C); temperatures are held inside the curve's validity range, as EnergyPlus does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["biquadratic", "quadratic", "cop"]


def biquadratic(c: Sequence[float], x: Any, y: Any) -> Any:
    """a + b·x + c·x² + d·y + e·y² + f·x·y with ``c`` = (a, b, c, d, e, f)."""
    return c[0] + c[1] * x + c[2] * x * x + c[3] * y + c[4] * y * y + c[5] * x * y


def quadratic(c: Sequence[float], x: Any) -> Any:
    """a + b·x + c·x² with ``c`` = (a, b, c)."""
    return c[0] + c[1] * x + c[2] * x * x


def cop(load_w: Any, t_cond_c: Any, t_chw_c: float, capacity_w: float, cop_ref: float, cap_ft: Sequence[float],
        eir_ft: Sequence[float], eir_fplr: Sequence[float], min_plr: float, t_cond_range_c: tuple[float, float],
        t_chw_range_c: tuple[float, float]) -> Any:
    """COP (heat W per electrical W) of a chiller of reference ``capacity_w`` and ``cop_ref`` removing
    ``load_w`` with condenser entering water at ``t_cond_c`` and chilled water leaving at ``t_chw_c`` (°C),
    on the EIR curves ``cap_ft``, ``eir_ft`` (biquadratic) and ``eir_fplr`` (quadratic)."""
    tc = np.clip(t_cond_c, *t_cond_range_c)
    tw = float(np.clip(t_chw_c, *t_chw_range_c))
    avail = capacity_w * np.maximum(biquadratic(cap_ft, tw, tc), 1e-6)
    plr = np.clip(np.asarray(load_w, dtype=np.float64) / avail, min_plr, 1.0)
    return cop_ref * plr / (biquadratic(eir_ft, tw, tc) * quadratic(eir_fplr, plr))
