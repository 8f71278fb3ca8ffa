"""Evaporative (adiabatic) air units (sources-realism §9; equations in ``twin.physics.evaporative``).

With ``cooling.air.evaporative`` the air units supply outside air cooled by wetted pads instead of
chilled air: the *base* supply of every air zone, the temperature it holds while its capacity covers
the heat, is max(set point, T_wb + (1 − ε)(T_db − T_wb)) in each hour while the water supply works,
max(set point, T_db) while it is down (dry operation). The air room (``air``) takes the base from
here in place of its constant ``supply_c``: a change of the base (an hour boundary, or the water
supply failing or coming back) retargets each zone's supply, which relaxes with the room's time
constant and moves the held inlet the GPUs see, so a failed water supply on a hot afternoon makes the
GPUs hotter through the same path as a CRAH failure.

Humidity (issue 42, ``humidity.py``): the supply air's dew point and RH after the pads against the
ASHRAE envelope of ``evaporative.humidity``. Without a chiller the hours whose humidity is outside it
multiply the X-factor of the node parts by ``failure_factor`` (an assumption: the X-factor depends on
dry-bulb only), through the ageing room at the hours that state changes; with a trim chiller the supply
is the set point and the chiller's share, the mechanical hours and the water cap are integrated here.

The water supply is one facility part (``water_supply``), failed and repaired through the repair
crews like a CRAH unit. Water and WUE are integrated in the energy room over the same breakpoints as
facility energy, with the water supply's state changes among them.
"""

from __future__ import annotations

import bisect
import math
from typing import Any, TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from twin.model.cooling import humidity as hum
from twin.model.cooling.arrays import CoolingArrays, CoolingParams
from twin.model.parts import FacilityParts
from twin.physics import evaporative as ev
from twin.units import HOURS_PER_YEAR

if TYPE_CHECKING:  # pragma: no cover
    from twin.model.cooling.ports import AgeingPort, AirPort, TripsPort
    from twin.model.engine import Engine



class EvaporativeAir:
    """Room of the cooling component: evaporative air units and their water supply."""

    ageing: AgeingPort  # wired by Thermal
    air_rooms: AirPort  # wired by Thermal
    trips: TripsPort  # wired by Thermal

    def __init__(self, params: CoolingParams, arrays: CoolingArrays, engine: Engine, fac_specs: dict[str, Any],
                 facility: dict[str, FacilityParts]) -> None:
        """The hourly base supply in wet and dry operation and the water supply part (no-op without
        ``cooling.air.evaporative``)."""
        p = params
        self.params = params
        self.arrays = arrays
        self.engine = engine
        self._facility = facility
        a = p.air
        self.evap = a.evaporative if a is not None else None
        self.base_h: list[float] | None = None
        self._water_changes: list[tuple[float, bool]] = []  # (time h, water supply works from then)
        self.hum_af_cur = 1.0  # humidity factor on the X-factor now (ageing room; 1 without evaporative units)
        self._hum_out: list[NDArray[np.bool_]] | None = None  # humidity outside the envelope per hour: wet, dry
        if self.evap is None or a is None:
            return
        e = self.evap
        h = e.humidity
        n = p.n_hours
        self.wet_bulb_h = p.spec.ambient.hourly_wet_bulb_c(n)
        self.modes = hum.hourly_modes(p.ambient_h, self.wet_bulb_h, p.spec.ambient.hourly_pressure_pa(n),
                                      e.effectiveness, a.supply_c, e.it_rise_c, h.limits(), h.mechanical == "chiller")
        if h.mechanical == "chiller":  # trim chiller / mechanical mode: the set point every hour
            self._wet_base_h, self._dry_base_h = self.modes.supply_c[0], self.modes.supply_c[1]
        else:
            self._wet_base_h = ev.supply_c(p.ambient_h, self.wet_bulb_h, e.effectiveness, a.supply_c, True)
            self._dry_base_h = ev.supply_c(p.ambient_h, self.wet_bulb_h, e.effectiveness, a.supply_c, False)
        if h.failure_factor != 1.0 and p.on:  # the water cap's dry hours are not seen here (integrated later)
            self._hum_out = [self.modes.humid_outside[0], self.modes.humid_outside[1]]
            self.hum_af_cur = h.failure_factor if self._hum_out[0][0] else 1.0
        self._wet_base_l: list[float] = self._wet_base_h.tolist()
        self._dry_base_l: list[float] = self._dry_base_h.tolist()
        self.base_h = self._wet_base_l
        self.water_ok = True
        self.water = FacilityParts(self.engine, "water_supply", ["cooling.water_supply"], fac_specs["water_supply"])
        self.engine.bus.subscribe(self.water.changed, self._on_water)
        self._facility["water_supply"] = self.water

    def base_supply_c(self, t_h: float) -> float:
        """Supply temperature (°C) the air zones hold at time ``t_h`` while their capacity covers the heat:
        ``supply_c``, or with evaporative units the hour's wet or dry base."""
        b = self.base_h
        if b is None:
            assert self.params.air is not None
            return self.params.air.supply_c
        return b[min(int(math.floor(t_h + 1e-9)), self.params.n_hours - 1)]

    def base_change_hours(self) -> NDArray[np.int64]:
        """Hours (≥ 1) at which the wet or the dry base supply differs from the hour before (empty
        without evaporative units)."""
        if self.base_h is None:
            return np.zeros(0, dtype=np.int64)
        w, d = self._wet_base_h, self._dry_base_h
        change = (w[1:] != w[:-1]) | (d[1:] != d[:-1])
        if self._hum_out is not None:  # + the hours the supply's humidity enters or leaves the envelope
            hw, hd = self._hum_out
            change |= (hw[1:] != hw[:-1]) | (hd[1:] != hd[:-1])
        return np.flatnonzero(change).astype(np.int64) + 1

    def humidity_hour(self) -> None:
        """At an hour boundary or a water supply change: re-rate the X-factor parts when the supply's
        humidity entered or left the envelope (no-op without the humidity failure factor)."""
        if self._hum_out is None:
            return
        assert self.evap is not None
        k = min(int(math.floor(self.engine.now + 1e-9)), self.params.n_hours - 1)
        f = self.evap.humidity.failure_factor if self._hum_out[0 if self.water_ok else 1][k] else 1.0
        if f != self.hum_af_cur:
            self.hum_af_cur = f
            if self.ageing.aged_air:
                self.ageing.air_update(self.params.all_nodes)

    def _on_water(self, idx: int, healthy: bool) -> None:
        """The water supply failed (the units run dry) or came back: every zone's base supply changes."""
        self.water_ok = healthy
        self._water_changes.append((self.engine.now, healthy))
        self.base_h = self._wet_base_l if healthy else self._dry_base_l
        if not self.params.on:
            return
        self.humidity_hour()
        for z in range(len(self.arrays.zones)):
            self.air_rooms.retarget(z)
        self.trips.try_restarts()
        self.air_rooms.schedule_hour(bisect.bisect_left(self.air_rooms.hours, self.engine.now))

    def water_breaks_h(self) -> NDArray[np.float64]:
        """Times (h) at which the water supply changed state (breakpoints of the water integral)."""
        return np.array([t for t, _ in self._water_changes], dtype=np.float64)

    def _water_ok_at(self, t_h: NDArray[np.float64]) -> NDArray[np.bool_]:
        """Whether the water supply worked on each interval starting at ``t_h`` (a change at t counts from t)."""
        ok = np.ones(len(t_h), dtype=bool)
        if not self._water_changes:
            return ok
        ts = np.array([t for t, _ in self._water_changes])
        st = np.array([s for _, s in self._water_changes], dtype=bool)
        k = np.searchsorted(ts, t_h, side="right") - 1
        ok[k >= 0] = st[k[k >= 0]]
        return ok

    def _evap_metrics(self, bp: NDArray[np.float64], dur: NDArray[np.float64], air_heat_w: NDArray[np.float64],
                      it_kwh: float) -> dict[str, float]:
        """Water, WUE and the hours of wet, dry and fallback operation over intervals starting at ``bp`` (h)
        of length ``dur`` (h) with air heat ``air_heat_w`` (W) and IT energy ``it_kwh``."""
        e, a = self.evap, self.params.air
        assert e is not None and a is not None
        hour = np.minimum(bp.astype(np.int64), self.params.n_hours - 1)
        t_db = self.params.ambient_h[hour]
        ok = self._water_ok_at(bp)
        supply = np.where(ok, self._wet_base_h[hour], self._dry_base_h[hour])
        q_evap = ev.evaporated_heat_w(air_heat_w, t_db, supply, e.it_rise_c)
        evap_j = float((q_evap * dur).sum()) * 3600.0
        water = float(ev.water_l(evap_j, e.blowdown_share))
        needs = t_db > a.supply_c  # outside air alone cannot hold the set point
        wet = needs & ok & (q_evap > 0)
        m = {
            "water.evaporated_l": evap_j / ev.LATENT_HEAT_J_PER_KG,
            "water.site_l": water,
            "water.wue_l_per_kwh": ev.wue_l_per_kwh(water, it_kwh),
            "cooling.evaporative.wet_hours": float(dur[wet].sum()),
            "cooling.evaporative.dry_hours": float(dur[~wet].sum()),
            "cooling.evaporative.fallback_hours": float(dur[needs & ~ok].sum()),
            "cooling.evaporative.above_setpoint_hours": float(dur[supply > a.supply_c].sum()),
        }
        return m

    def energy(self, bp: NDArray[np.float64], dur: NDArray[np.float64], air_heat_w: NDArray[np.float64],
                     it_kwh: float) -> tuple[NDArray[np.float64] | None, dict[str, float]]:
        """The share of the air heat the trim chiller removes (per interval starting at ``bp`` h, ``dur`` h
        long, air heat ``air_heat_w`` W; None without a chiller) and the evaporative metrics: water, WUE,
        the hours of each mode, outside the envelope and under the water cap (issue 42)."""
        e, a, md = self.evap, self.params.air, self.modes
        assert e is not None and a is not None
        hour = np.minimum(bp.astype(np.int64), self.params.n_hours - 1)
        ok = self._water_ok_at(bp)
        st = np.where(ok, 0, 1)
        h = e.humidity
        if h.mechanical == "none":  # the supply floats: water and hours as before issue 42, plus the envelope
            m = self._evap_metrics(bp, dur, air_heat_w, it_kwh)
            m.update(self._envelope_metrics(dur, md.outside[st, hour], md.humid_outside[st, hour], st, hour,
                                            np.ones(len(dur), dtype=bool)))
            return None, m
        t_db = self.params.ambient_h[hour]
        q_wet = np.where(ok, ev.evaporated_heat_w(air_heat_w, t_db, md.pad_c[0, hour], e.it_rise_c), 0.0)
        theta = np.ones_like(dur)  # share of each interval before the year's water cap is reached
        cap = h.water_cap_l_per_year
        if cap is not None:
            w_l = ev.water_l(q_wet * dur * 3600.0, e.blowdown_share)
            year = (bp // HOURS_PER_YEAR).astype(np.int64)
            for y in np.unique(year):
                i = np.flatnonzero(year == y)
                before = np.cumsum(w_l[i]) - w_l[i]
                theta[i] = np.where(w_l[i] > 0, np.clip((cap - before) / np.where(w_l[i] > 0, w_l[i], 1.0), 0, 1), 1)
        share = theta * md.chiller_share[st, hour] + (1 - theta) * md.chiller_share[1, hour]
        mech = theta * md.mechanical[st, hour] + (1 - theta) * md.mechanical[1, hour]
        trim_w = (md.chiller_share[st, hour] > 0) & ~md.mechanical[st, hour]
        trim_d = (md.chiller_share[1, hour] > 0) & ~md.mechanical[1, hour]
        free = theta * (md.chiller_share[st, hour] == 0) + (1 - theta) * (md.chiller_share[1, hour] == 0)
        evap_j = float((q_wet * theta * dur).sum()) * 3600.0
        water = float(ev.water_l(evap_j, e.blowdown_share))
        needs = t_db > a.supply_c
        wet = theta * ((q_wet > 0) & ~md.mechanical[st, hour])
        m = {
            "water.evaporated_l": evap_j / ev.LATENT_HEAT_J_PER_KG,
            "water.site_l": water,
            "water.wue_l_per_kwh": ev.wue_l_per_kwh(water, it_kwh),
            "cooling.evaporative.wet_hours": float((dur * wet).sum()),
            "cooling.evaporative.dry_hours": float((dur * (1 - wet)).sum()),
            "cooling.evaporative.fallback_hours": float(dur[needs & ~ok].sum()),
            "cooling.evaporative.above_setpoint_hours": 0.0,
            "cooling.evaporative.trim_hours": float((dur * (theta * trim_w + (1 - theta) * trim_d)).sum()),
            "cooling.evaporative.mechanical_hours": float((dur * mech).sum()),
            "cooling.evaporative.water_cap_hours": float((dur * (1 - theta)).sum()),
            "energy.free_cooling_hours.air": float((dur * free).sum()),
        }
        m.update(self._envelope_metrics(dur, md.outside[st, hour], md.humid_outside[st, hour], st, hour,
                                        ~md.mechanical[st, hour]))
        return share, m

    def _envelope_metrics(self, dur: NDArray[np.float64], outside: NDArray[np.bool_], humid: NDArray[np.bool_],
                          st: NDArray[np.int64], hour: NDArray[np.int64], air: NDArray[np.bool_]) -> dict[str, float]:
        """Hours outside the envelope (any, humidity) and the highest dew point and RH of the supply while
        it is outside air (``air``: not in mechanical mode)."""
        pos = (dur > 0) & air
        md = self.modes
        return {
            "cooling.evaporative.outside_envelope_hours": float(dur[outside].sum()),
            "cooling.evaporative.humidity_outside_envelope_hours": float(dur[humid].sum()),
            "cooling.evaporative.supply_dew_point_max_c": float(md.dew_c[st, hour][pos].max()) if pos.any() else math.nan,
            "cooling.evaporative.supply_rh_max": float(md.rh[st, hour][pos].max()) if pos.any() else math.nan,
        }
