"""Energy and PUE (model.md §4): IT power is piecewise constant between events (the shared
``twin.model.power.ITPower``, recorder level ``site_power_w``); facility energy is its exact integral
with hourly ambient (chiller COP, free cooling), fan and pump power and UPS / transformer losses,
computed at the end over the merged breakpoints."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from twin.model.cooling.arrays import CoolingParams
from twin.physics import chiller_curve, plant

if TYPE_CHECKING:  # pragma: no cover
    from twin.model.cooling.ports import EvaporativePort
    from twin.model.engine import Engine
    from twin.model.it_power import ITPower


class EnergyPue:
    """Room of the cooling component: energy, cooling power and PUE over the horizon."""

    evaporative: EvaporativePort  # wired by Thermal

    def __init__(self, params: CoolingParams, engine: Engine, it: ITPower) -> None:
        self.params = params
        self.engine = engine
        self.it = it

    def results(self) -> tuple[dict[str, float], dict[str, pd.DataFrame]]:
        """Exact energy over the horizon from the piecewise-constant IT power and hourly ambient."""
        c = self.params.spec
        e = c.energy
        H = self.params.horizon_h
        rec = self.engine.recorder
        self.it.energy_kwh()  # brings the ITPower's level up to date
        ts, it = rec.level_series("site_power_w")  # ITPower: site IT power, W
        ts2, up = rec.level_series("nodes_up")
        bp = np.union1d(np.union1d(ts[ts < H], ts2[ts2 < H]), np.arange(0.0, H, 1.0))
        if self.evaporative.evap is not None:  # the water supply's state changes (water and WUE)
            wb = self.evaporative.water_breaks_h()
            bp = np.union1d(bp, wb[wb < H])
        ends = np.append(bp[1:], H)
        dur = ends - bp
        it_v = it[np.searchsorted(ts, bp, side="right") - 1]
        gpu_v = it_v - self.params.non_gpu_w * up[np.searchsorted(ts2, bp, side="right") - 1]  # down nodes draw 0
        amb = self.params.ambient_h[np.minimum(bp.astype(np.int64), self.params.n_hours - 1)]
        cop = plant.chiller_cop(amb, e.chiller_cop, e.cop_ref_c, e.cop_slope_per_c, e.cop_min)
        f = c.liquid_share()
        if f is not None and self.params.type != "air":  # heat capture: f of the node heat to liquid, the rest to air
            air_heat, liq_heat = (1.0 - f) * it_v, f * it_v
        elif self.params.type == "air":
            air_heat, liq_heat = it_v, np.zeros_like(it_v)
        elif self.params.type == "liquid":
            air_heat, liq_heat = np.zeros_like(it_v), it_v
        else:
            air_heat, liq_heat = it_v - gpu_v, gpu_v
        cool = np.zeros_like(it_v)
        m: dict[str, float] = {}
        hours_free: dict[str, float] = {}
        free_air = free_liq = None
        if self.params.air is not None:
            free_air = plant.free_cooling(amb, self.params.air.supply_c, self.params.air.free_cooling_approach_c)
            if self.evaporative.evap is not None:  # evaporative units: no chiller but a trim chiller's share (issue 42)
                free_air = np.ones_like(free_air)
        if self.params.liquid is not None:
            free_liq = plant.free_cooling(amb, self.params.liquid.supply_c, self.params.liquid.free_cooling_approach_c)
        share, evap_m = (self.evaporative.energy(bp, dur, air_heat, float((it_v * dur).sum()) / 1000.0)
                         if self.evaporative.evap is not None else (None, {}))
        load = np.zeros_like(it_v)  # heat the chillers remove, W (chiller curve only)
        if e.chiller_curve is not None:  # COP by part load and condenser water (issue 42)
            if free_air is not None:
                load += np.where(free_air, 0.0, air_heat) + (0.0 if share is None else air_heat * share)
            if free_liq is not None:
                load += np.where(free_liq, 0.0, liq_heat)
            cop = self._curve_cop(bp, load)
        if self.params.air is not None:
            assert free_air is not None
            cool += plant.cooling_power_w(air_heat, self.params.air.fan_kw_per_kw, cop, free_air)
            hours_free["air"] = float(dur[free_air].sum())
            if share is not None:  # the evaporative units' trim chiller / mechanical mode
                chill = air_heat * share / cop
                cool += chill
                evap_m["cooling.evaporative.chiller_kwh"] = float((chill * dur).sum()) / 1000.0
                hours_free["air"] = evap_m.pop("energy.free_cooling_hours.air")
        if self.params.liquid is not None:
            assert free_liq is not None
            cool += plant.cooling_power_w(liq_heat, self.params.liquid.pump_kw_per_kw, cop, free_liq)
            hours_free["liquid"] = float(dur[free_liq].sum())
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
        if e.chiller_curve is not None:  # seasonal COP: heat chilled over the chiller's electrical energy
            elec = float((load / cop * dur).sum())
            m["energy.chiller_cop_seasonal"] = float((load * dur).sum()) / elec if elec > 0 else math.nan
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

    def _curve_cop(self, bp: NDArray[np.float64], load_w: NDArray[np.float64]) -> NDArray[np.float64]:
        """COP of the chiller on its EIR curves (``cooling.energy.chiller_curve``) for the chilled ``load_w``
        (W) of intervals starting at ``bp`` (h): condenser water = the hour's outdoor wet-bulb + approach."""
        cc = self.params.spec.energy.chiller_curve
        assert cc is not None
        if not hasattr(self, "_wet_bulb_all"):
            self._wet_bulb_all = self.params.spec.ambient.hourly_wet_bulb_c(self.params.n_hours)
        t_cond = self._wet_bulb_all[np.minimum(bp.astype(np.int64), self.params.n_hours - 1)] + cc.tower_approach_c
        ch = self.params.spec.plant.chillers if self.params.spec.plant is not None else None
        if cc.capacity_kw is not None:
            cap_w = cc.capacity_kw * 1000.0
        elif ch is not None and ch.capacity_kw is not None:  # the plant's chillers needed for the design load
            cap_w = ch.capacity_kw * ch.required * 1000.0
        else:  # the cluster's nameplate IT power
            cap_w = self.params.sc.cluster.full_power_w()
        return np.asarray(chiller_curve.cop(load_w, t_cond, cc.chilled_water_c, cap_w, cc.cop_ref, cc.cap_ft,
                                            cc.eir_ft, cc.eir_fplr, cc.min_plr,
                                            (cc.condenser_range_c[0], cc.condenser_range_c[1]),
                                            (cc.chilled_water_range_c[0], cc.chilled_water_range_c[1])), dtype=np.float64)
