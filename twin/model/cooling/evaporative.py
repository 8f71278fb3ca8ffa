"""Evaporative (adiabatic) air units (sources-realism §9; equations in ``twin.physics.evaporative``).

With ``cooling.air.evaporative`` the air units supply outside air cooled by wetted pads instead of
chilled air: the *base* supply of every air zone, the temperature it holds while its capacity covers
the heat, is max(set point, T_wb + (1 − ε)(T_db − T_wb)) in each hour while the water supply works,
max(set point, T_db) while it is down (dry operation). The air room (``air``) takes the base from
here in place of its constant ``supply_c``: a change of the base (an hour boundary, or the water
supply failing or coming back) retargets each zone's supply, which relaxes with the room's time
constant and moves the held inlet the GPUs see, so a failed water supply on a hot afternoon makes the
GPUs hotter through the same path as a CRAH failure.

The water supply is one facility part (``water_supply``), failed and repaired through the repair
crews like a CRAH unit. Water and WUE are integrated in the energy room over the same breakpoints as
facility energy, with the water supply's state changes among them.
"""

from __future__ import annotations

import bisect
import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from twin.model.cooling.state import CoolingState
from twin.model.parts import FacilityParts
from twin.physics import evaporative as ev


class EvaporativeAir(CoolingState):
    """Room of the cooling component: evaporative air units and their water supply (a mixin of
    ``Thermal``)."""

    def _init_evap(self, fac_specs: dict[str, Any]) -> None:
        """The hourly base supply in wet and dry operation and the water supply part (no-op without
        ``cooling.air.evaporative``)."""
        a = self.air
        self.evap = a.evaporative if a is not None else None
        self._base_h: list[float] | None = None
        self._water_changes: list[tuple[float, bool]] = []  # (time h, water supply works from then)
        if self.evap is None or a is None:
            return
        e = self.evap
        self.wet_bulb_h = self.spec.ambient.hourly_wet_bulb_c(self.n_hours)
        self._wet_base_h = ev.supply_c(self.ambient_h, self.wet_bulb_h, e.effectiveness, a.supply_c, True)
        self._dry_base_h = ev.supply_c(self.ambient_h, self.wet_bulb_h, e.effectiveness, a.supply_c, False)
        self._wet_base_l: list[float] = self._wet_base_h.tolist()
        self._dry_base_l: list[float] = self._dry_base_h.tolist()
        self._base_h = self._wet_base_l
        self.water_ok = True
        self.water = FacilityParts(self.engine, "water_supply", ["cooling.water_supply"], fac_specs["water_supply"])
        self.engine.bus.subscribe(self.water.changed, self._on_water)
        self._facility["water_supply"] = self.water

    def _base_supply_c(self, t_h: float) -> float:
        """Supply temperature (°C) the air zones hold at time ``t_h`` while their capacity covers the heat:
        ``supply_c``, or with evaporative units the hour's wet or dry base."""
        b = self._base_h
        if b is None:
            assert self.air is not None
            return self.air.supply_c
        return b[min(int(math.floor(t_h + 1e-9)), self.n_hours - 1)]

    def _base_change_hours(self) -> NDArray[np.int64]:
        """Hours (≥ 1) at which the wet or the dry base supply differs from the hour before (empty
        without evaporative units)."""
        if self._base_h is None:
            return np.zeros(0, dtype=np.int64)
        w, d = self._wet_base_h, self._dry_base_h
        return np.flatnonzero((w[1:] != w[:-1]) | (d[1:] != d[:-1])).astype(np.int64) + 1

    def _on_water(self, idx: int, healthy: bool) -> None:
        """The water supply failed (the units run dry) or came back: every zone's base supply changes."""
        self.water_ok = healthy
        self._water_changes.append((self.engine.now, healthy))
        self._base_h = self._wet_base_l if healthy else self._dry_base_l
        if not self.on:
            return
        for z in range(len(self.zones)):
            self._retarget(z)
        self._try_restarts()
        self._schedule_hour(bisect.bisect_left(self._hours, self.engine.now))

    def _water_breaks_h(self) -> NDArray[np.float64]:
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
        e, a = self.evap, self.air
        assert e is not None and a is not None
        hour = np.minimum(bp.astype(np.int64), self.n_hours - 1)
        t_db = self.ambient_h[hour]
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
