"""Operating mode of evaporative air units hour by hour from the weather (issue 42 item 3): the supply
air's state after the pads (``twin.physics.psychro``), whether it stays in the ASHRAE envelope
(``cooling.air.evaporative.humidity``), and with a trim chiller the share of the air heat the chiller
removes. Pure functions of the hourly weather; the evaporative room (``evaporative.py``) holds the arrays
and the energy room integrates them with the IT power.

For each hour and each state of the water supply (index 0: water available, 1: pads dry):

* **no chiller** (``mechanical: none``, the behaviour before issue 42): supply max(set point, air leaving
  the pads or the outside air); the supply may float above the set point and leave the envelope;
* **chiller**: the units pick the first feasible of (a) pads on, the chiller trimming the pads' air to the
  set point, (b) pads off, outside air trimmed by the chiller, (c) mechanical mode: return air
  recirculated through the chiller coil (all of the air heat; the coil holds the envelope: an assumption).
  (a) and (b) are feasible while the set-point air is below the envelope's upper dew point and RH limits
  and the air to trim is cooler than the return air (set point + ΔT_IT); air too dry for the envelope
  stays outside it (no humidifier is modelled: an assumption); the chiller then removes the share (T_pad − set point)/ΔT_IT of
  the air heat (the air flow m·c_p = Q/ΔT_IT of ``twin.physics.evaporative``). The supply is the set point.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from twin.physics import psychro
from twin.scenario.humidity import Envelope

F = NDArray[np.float64]
B = NDArray[np.bool_]


@dataclass
class Modes:
    """Hourly arrays, shape (2, hours): [0] with water, [1] with dry pads."""

    supply_c: F  # base supply temperature the air zones hold, °C
    pad_c: F  # temperature the pads cool the outside air to (the outside air where nothing evaporates), °C
    chiller_share: F  # share of the air heat the chiller removes (0: none; 1: mechanical mode)
    mechanical: B  # mechanical mode (recirculation through the chiller)
    outside: B  # supply outside the envelope (any of dry-bulb, dew point, RH)
    humid_outside: B  # supply's dew point or RH outside the envelope
    dew_c: F  # supply dew point, °C
    rh: F  # supply relative humidity, 0-1


def in_envelope(t_c: F, dew_c: F, rh: F, env: Envelope) -> tuple[B, B, B]:
    """(dry-bulb inside, humidity above the low limits, humidity below the high limits) of supply air
    against one ASHRAE class."""
    temp_ok = (t_c >= env.t_min_c - 1e-9) & (t_c <= env.t_max_c + 1e-9)
    low_ok = (dew_c >= env.dew_min_c) & (rh >= env.rh_min)
    high_ok = (dew_c <= env.dew_max_c) & (rh <= env.rh_max)
    return temp_ok, low_ok, high_ok


def hourly_modes(t_db_c: F, t_wb_c: F, pressure_pa: F, effectiveness: float, setpoint_c: float, it_rise_c: float,
                 env: Envelope, chiller: bool) -> Modes:
    """The units' mode of each hour with water and with dry pads (see the module docstring)."""
    n = len(t_db_c)
    shape = (2, n)
    out = Modes(supply_c=np.zeros(shape), pad_c=np.zeros(shape), chiller_share=np.zeros(shape),
                mechanical=np.zeros(shape, dtype=bool), outside=np.zeros(shape, dtype=bool),
                humid_outside=np.zeros(shape, dtype=bool), dew_c=np.zeros(shape), rh=np.zeros(shape))
    dry_state = psychro.evaporative_state(t_db_c, t_wb_c, pressure_pa, effectiveness, setpoint_c, wet=False)
    for k, wet in enumerate((True, False)):
        st = dry_state if not wet else psychro.evaporative_state(t_db_c, t_wb_c, pressure_pa, effectiveness,
                                                                 setpoint_c, wet=True)
        pad = np.where(wet & (t_db_c > setpoint_c), st.t_c, t_db_c)  # pads stop at the set point
        if not chiller:
            temp_ok, low_ok, high_ok = in_envelope(st.t_c, st.dew_c, st.rh, env)
            out.supply_c[k], out.pad_c[k], out.dew_c[k], out.rh[k] = st.t_c, pad, st.dew_c, st.rh
            out.outside[k], out.humid_outside[k] = ~(temp_ok & low_ok & high_ok), ~(low_ok & high_ok)
            continue
        sp = np.full(n, setpoint_c)
        # candidates: pads on (with water), pads off; feasible while the set-point air is below the envelope's
        # upper humidity limits and the air to trim is cooler than the return air. Air too dry for the envelope
        # is not fixed by the chiller (no humidifier is modelled): it stays outside the envelope.
        cand = []
        for s, p in ((st, pad), (dry_state, t_db_c)) if wet else ((dry_state, t_db_c),):
            rh_sp = psychro.rel_hum(sp, s.w, pressure_pa)
            t_ok, low_ok, high_ok = in_envelope(sp, s.dew_c, rh_sp, env)
            cand.append((p, t_ok & high_ok & (p - setpoint_c < it_rise_c), s.dew_c, rh_sp, low_ok))
        pad_k = np.array(t_db_c, dtype=np.float64)
        dew_k = np.array(cand[-1][2])
        rh_k = np.array(cand[-1][3])
        low_k = np.ones(n, dtype=bool)
        done = np.zeros(n, dtype=bool)
        for p, ok, dew, rh, low in cand:
            take = ok & ~done
            pad_k[take], dew_k[take], rh_k[take], low_k[take] = p[take], dew[take], rh[take], low[take]
            done |= take
        mech = ~done  # mechanical mode: the coil holds the envelope (assumption)
        out.supply_c[k] = sp
        out.pad_c[k] = np.where(mech, t_db_c, pad_k)
        out.chiller_share[k] = np.where(mech, 1.0, np.clip((pad_k - setpoint_c) / it_rise_c, 0.0, 1.0))
        out.mechanical[k] = mech
        out.outside[k] = out.humid_outside[k] = ~mech & ~low_k
        out.dew_c[k], out.rh[k] = dew_k, rh_k  # in mechanical mode: the air it would have had (not reported)
    return out
