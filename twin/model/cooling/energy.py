"""Energy and PUE (model.md §4): IT power is piecewise constant between events (the shared
``twin.model.power.ITPower``, recorder level ``site_power_w``); facility energy is its exact integral
with hourly ambient (chiller COP, free cooling), fan and pump power and UPS / transformer losses,
computed at the end over the merged breakpoints."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from twin.model.cooling.state import CoolingState
from twin.physics import plant


class EnergyPue(CoolingState):
    """Room of the cooling component: energy, cooling power and PUE over the horizon (a mixin of
    ``Thermal``)."""

    def _energy(self) -> tuple[dict[str, float], dict[str, pd.DataFrame]]:
        """Exact energy over the horizon from the piecewise-constant IT power and hourly ambient."""
        c = self.spec
        e = c.energy
        H = self.H
        rec = self.engine.recorder
        self.it.energy_kwh()  # brings the ITPower's level up to date
        ts, it = rec.level_series("site_power_w")  # ITPower: site IT power, W
        ts2, up = rec.level_series("nodes_up")
        bp = np.union1d(np.union1d(ts[ts < H], ts2[ts2 < H]), np.arange(0.0, H, 1.0))
        if self.evap is not None:  # the water supply's state changes (water and WUE)
            wb = self._water_breaks_h()
            bp = np.union1d(bp, wb[wb < H])
        ends = np.append(bp[1:], H)
        dur = ends - bp
        it_v = it[np.searchsorted(ts, bp, side="right") - 1]
        gpu_v = it_v - self.non_gpu_w * up[np.searchsorted(ts2, bp, side="right") - 1]  # down nodes draw 0
        amb = self.ambient_h[np.minimum(bp.astype(np.int64), self.n_hours - 1)]
        cop = plant.chiller_cop(amb, e.chiller_cop, e.cop_ref_c, e.cop_slope_per_c, e.cop_min)
        f = c.liquid_share()
        if f is not None and self.type != "air":  # heat capture: f of the node heat to liquid, the rest to air
            air_heat, liq_heat = (1.0 - f) * it_v, f * it_v
        elif self.type == "air":
            air_heat, liq_heat = it_v, np.zeros_like(it_v)
        elif self.type == "liquid":
            air_heat, liq_heat = np.zeros_like(it_v), it_v
        else:
            air_heat, liq_heat = it_v - gpu_v, gpu_v
        cool = np.zeros_like(it_v)
        m: dict[str, float] = {}
        hours_free: dict[str, float] = {}
        if self.air is not None:
            free = plant.free_cooling(amb, self.air.supply_c, self.air.free_cooling_approach_c)
            if self.evap is not None:  # evaporative units: no chiller, the supply floats instead
                free = np.ones_like(free)
            cool += plant.cooling_power_w(air_heat, self.air.fan_kw_per_kw, cop, free)
            hours_free["air"] = float(dur[free].sum())
        evap_m: dict[str, float] = {}
        if self.evap is not None:  # the trim chiller / mechanical mode (issue 42), water and the envelope
            chill, evap_m = self._evap_energy(bp, dur, air_heat, cop, float((it_v * dur).sum()) / 1000.0)
            cool += chill
            hours_free["air"] = evap_m.pop("energy.free_cooling_hours.air", hours_free["air"])
        if self.liquid is not None:
            free = plant.free_cooling(amb, self.liquid.supply_c, self.liquid.free_cooling_approach_c)
            cool += plant.cooling_power_w(liq_heat, self.liquid.pump_kw_per_kw, cop, free)
            hours_free["liquid"] = float(dur[free].sum())
        facility = plant.facility_power_w(it_v, cool, e.ups_efficiency, e.transformer_efficiency)
        losses = facility - it_v - cool
        it_kwh = float((it_v * dur).sum()) / 1000.0
        cool_kwh = float((cool * dur).sum()) / 1000.0
        loss_kwh = float((losses * dur).sum()) / 1000.0
        fac_kwh = float((facility * dur).sum()) / 1000.0
        m["energy.it_kwh"] = it_kwh
        m["energy.cooling_kwh"] = cool_kwh
        m["energy.losses_kwh"] = loss_kwh
        m["energy.facility_kwh"] = fac_kwh
        m["pue"] = fac_kwh / it_kwh if it_kwh > 0 else math.nan
        m.update(evap_m)
        pos = dur > 0
        m["energy.peak_it_kw"] = float(it_v[pos].max()) / 1000.0 if pos.any() else 0.0
        m["energy.peak_facility_kw"] = float(facility[pos].max()) / 1000.0 if pos.any() else 0.0
        for k, v in hours_free.items():
            m[f"energy.free_cooling_hours.{k}"] = v
        day = (bp // 24.0).astype(np.int64)
        nd = int(day.max()) + 1 if len(day) else 0

        def per_day(x: NDArray[np.float64]) -> NDArray[np.float64]:
            return np.bincount(day, weights=x * dur, minlength=nd) / 1000.0

        d_it, d_cool, d_loss, d_fac = per_day(it_v), per_day(cool), per_day(losses), per_day(facility)
        d_amb = np.bincount(day, weights=amb * dur, minlength=nd) / np.maximum(
            np.bincount(day, weights=dur, minlength=nd), 1e-300)
        with np.errstate(invalid="ignore", divide="ignore"):
            d_pue = np.where(d_it > 0, d_fac / d_it, np.nan)
        daily = pd.DataFrame({"day": np.arange(nd, dtype=np.int64), "ambient_mean_c": d_amb, "it_kwh": d_it,
                              "cooling_kwh": d_cool, "losses_kwh": d_loss, "facility_kwh": d_fac, "pue": d_pue})
        return m, {"pue_daily": daily}
