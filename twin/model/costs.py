"""Cost of ownership of one replication (issue 9), priced from what the other models recorded.

The component runs no process: it is built last (``COMPONENTS`` in :mod:`twin.sim`) and its
``results(so_far)`` receives the metrics and tables of the components before it.

Lines, all in ``costs.currency`` over the horizon of T = horizon_days / 365 years:

* **capital**: purchase price P of what the scenario installs (quantities below), amortised as an
  annuity and prorated to the horizon: ``P · CRF(r, n) · T`` with the capital recovery factor
  ``CRF(r, n) = r / (1 − (1 + r)^−n)`` (``1/n`` at r = 0), r = ``discount_rate``, n =
  ``amortisation_years`` (IT: nodes, PSUs, fabric, initial spares) or
  ``facility_amortisation_years`` (cooling and power plant). Quantities: nodes × node price by
  type; PSUs (node part ``power.psu_part`` or ``psu``) × count per node; cooling: CRAH units
  (zones × count), CDUs (loops × count, pumps included), chiller per kW of air-cooled IT capacity
  (evaporative units instead, plus a full-size trim chiller when ``humidity.mechanical`` is ``chiller``:
  mechanical mode carries the whole air load),
  dry coolers per kW of liquid-cooled IT capacity, cold-plate kit per liquid-cooled node (hybrid:
  GPU heat is liquid-cooled, the rest air-cooled); building (with a cooling section): white space (racks and
  cooling units on the floor, ``cooling.density``, :func:`twin.scenario.density.floor_plan`) per m² and
  electrical distribution per kW of IT nameplate; power: UPS kW and generator kW per feed (the
  UPS's ``capacity_kw``, else the full demand of every node, as the power model sizes it),
  switchboards (one per feed), PDUs; network: optics, leaves, spines (``Network.counts``);
  spares: the initial stock of every inventory × part price. IT capacity per node =
  non-GPU power + GPUs × TDP (from the cooling section, else power, else ``costs.energy``).
  A section the scenario does not have adds no capital.
* **energy**: facility energy priced hour by hour: ``Σ_segments P_IT · PUE · price · Δt``, exact
  for the piecewise-constant site IT power (recorder level ``site_power_w`` of the shared
  :class:`~twin.model.it_power.ITPower`, the ``it_power`` service), the hourly price (flat or
  time-of-use; hour 0 = Monday 00:00) and the PUE. With a
  cooling model the PUE of each simulated day is that day's facility/IT energy from its
  ``pue_daily`` table (so Σ = ``energy.facility_kwh`` exactly; within a day the cooling overhead is
  spread in proportion to IT power, an approximation when the tariff varies within the day);
  without one, the constant ``costs.energy.pue``.
* **repair parts**: completed replacements of each part type (tickets done at rung 2 or 3 of the repair
  ladder, less those whose swapped-out part returns through vendor RMA: under warranty, assumption) ×
  part price.
  A node destroyed by a leak (``leak.nodes_destroyed`` of the cooling component) is bought again:
  node price by type plus its PSUs, a line ``node destroyed by a leak`` (``cost.leak_damage``).
* **labour**: Σ pools technicians × on-shift hours in the horizon × rate.
* **spares holding**: ``holding_rate_per_year`` × part price × mean units on hand × T, the mean
  on hand time-weighted from the inventory's recorder level ``spares_on_hand.<part>`` (it falls
  with every spare taken and rises with every delivery).
* **water**: site water of the evaporative air units (``water.site_l`` of the cooling component:
  evaporated plus blowdown, over the horizon) in m³ × ``costs.water_per_m3``; zero for a hall
  without evaporative cooling (no ``water.site_l``: no row in the ``costs`` table).

``cost.total`` is their sum; ``cost.per_useful_gpu_hour`` = total / ``useful_gpu_hours`` (NaN
without a workload).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from twin.errors import InputError
from twin.model.component import BuildContext, Component, ResultsSoFar
from twin.model.it_power import IT_POWER
from twin.observe.recorder import time_weighted_mean
from twin.scenario.costs import Costs as CostsSpec
from twin.scenario.density import floor_plan
from twin.units import DAYS_PER_YEAR

LITRES_PER_M3 = 1000.0

if TYPE_CHECKING:  # pragma: no cover
    from twin.scenario.schema import Scenario

CATEGORIES = ("capital", "energy", "repair_parts", "labour", "spares_holding", "water")
"""Cost categories; ``cost.total`` is their sum."""
CAPITAL_GROUPS = ("compute", "cooling", "building", "power", "network", "storage", "spares")
LINE_COLUMNS = ["category", "group", "item", "quantity", "unit", "unit_price", "purchase", "amortisation_years",
                "amount", "currency"]


def annuity_factor(rate: float, years: float) -> float:
    """Capital recovery factor: the constant yearly payment that repays 1 over ``years`` at ``rate``,
    r / (1 − (1 + r)^−n); 1/n when r = 0."""
    if years <= 0:
        raise ValueError("years must be > 0")
    if rate == 0:
        return 1.0 / years
    factor: float = rate / (1.0 - (1.0 + rate) ** (-years))
    return factor


def horizon_years(sc: "Scenario") -> float:
    """The horizon in cost years (365 days)."""
    return sc.horizon_days / DAYS_PER_YEAR


@dataclass(frozen=True)
class CapitalItem:
    group: str
    item: str
    quantity: float
    unit: str
    unit_price: float
    years: float

    @property
    def purchase(self) -> float:
        return self.quantity * self.unit_price


def node_power_w(sc: "Scenario") -> tuple[float, float]:
    """(GPU W, non-GPU W) of one node at full load (cluster.node)."""
    node = sc.cluster.node
    return node.gpus * node.gpu.tdp_w, node.non_gpu_w


def psu_part(sc: "Scenario") -> str | None:
    name = sc.power.psu_part if sc.power is not None else "psu"
    return name if name in sc.cluster.node.parts else None


def capital_items(sc: "Scenario") -> list[CapitalItem]:
    """What the scenario installs, with quantities and purchase prices (see the module docstring)."""
    c = sc.costs
    assert c is not None
    cap = c.capital
    n = sc.cluster.n_nodes
    it_y, plant_y = c.amortisation_years, c.plant_years
    out = [CapitalItem("compute", f"node {sc.cluster.node.type}", n, "node", cap.node[sc.cluster.node.type], it_y)]
    if sc.cluster.pools:  # node pools: a line per node type, its own nodes (cluster.pools)
        out = [CapitalItem("compute", f"node {node.type}", b - a, "node", cap.node[node.type], it_y)
               for a, b, node in sc.cluster.node_pools()]
    psu = psu_part(sc)
    if psu is not None:
        out.append(CapitalItem("compute", "psu", n * sc.cluster.node.parts[psu].count, "unit", cap.psu, it_y))
    gpu_w, other_w = node_power_w(sc)
    if sc.cooling is not None:
        cool = sc.cooling
        if cool.air is not None:
            out.append(CapitalItem("cooling", "crah", cool.air.zones * cool.air.crah.count, "unit", cap.crah,
                                   plant_y))
        if cool.liquid is not None:
            out.append(CapitalItem("cooling", "cdu", cool.liquid.loops * cool.liquid.cdu.count, "unit", cap.cdu,
                                   plant_y))
            out.append(CapitalItem("cooling", "cold plates and manifolds", n, "node", cap.liquid_per_node,
                                   plant_y))
        t = cool.type
        air_kw = n * (gpu_w + other_w) / 1000.0 if t == "air" else (n * other_w / 1000.0 if t == "hybrid" else 0.0)
        liq_kw = n * (gpu_w + other_w) / 1000.0 if t == "liquid" else (n * gpu_w / 1000.0 if t == "hybrid" else 0.0)
        f = cool.liquid_share()
        if f is not None:  # heat capture: the liquid takes f of each node's heat, the air the rest
            air_kw, liq_kw = n * (gpu_w + other_w) * (1.0 - f) / 1000.0, n * (gpu_w + other_w) * f / 1000.0
        if air_kw > 0 and cool.air is not None and cool.air.evaporative is not None:  # no chiller
            out.append(CapitalItem("cooling", "evaporative units", air_kw, "kW IT", cap.evaporative_per_kw, plant_y))
            hum = cool.air.evaporative.humidity
            if hum is not None and hum.mechanical == "chiller":  # mechanical mode carries the whole air load
                out.append(CapitalItem("cooling", "trim chiller", air_kw, "kW IT", cap.chiller_per_kw, plant_y))
        elif air_kw > 0:
            out.append(CapitalItem("cooling", "chiller", air_kw, "kW IT", cap.chiller_per_kw, plant_y))
        if liq_kw > 0:
            out.append(CapitalItem("cooling", "dry cooler", liq_kw, "kW IT", cap.dry_cooler_per_kw, plant_y))
        fp = floor_plan(sc)  # the white space of racks and cooling units, the distribution per kW of nameplate
        out.append(CapitalItem("building", "white space", fp["white_space_m2"], "m2", cap.white_space_per_m2, plant_y))
        out.append(CapitalItem("building", "electrical distribution", fp["it_kw"], "kW IT", cap.distribution_per_kw,
                               plant_y))
    if sc.power is not None:
        pw = sc.power
        feeds = pw.feeds
        full_kw = sc.cluster.full_power_w() / 1000.0  # every node at full power (node pools: each its own)
        if psu is not None:
            slots = pw.slot_feeds(sc.cluster.node.parts[psu].count)
            per_feed = [full_kw if f in slots else 0.0 for f in feeds]
        else:  # pragma: no cover (the power section requires its PSU part)
            per_feed = [full_kw] * len(feeds)
        ups_kw = sum(pw.ups.capacity_kw if pw.ups is not None and pw.ups.capacity_kw else kw for kw in per_feed)
        if pw.ups is not None:  # a modular UPS is bought for count/required times its rating (N+1: a spare module)
            mods = pw.ups.modules
            bought_kw = ups_kw * (mods.count / mods.required if mods is not None else 1.0)
            out.append(CapitalItem("power", "ups", bought_kw, "kW", cap.ups_per_kw, plant_y))
        if pw.generator is not None:  # generator sets likewise: N+1 sets of k cost (k + 1)/k
            sets = pw.generator.modules
            gen_kw = ups_kw * (sets.count / sets.required if sets is not None else 1.0)
            out.append(CapitalItem("power", "generator", gen_kw, "kW", cap.generator_per_kw, plant_y))
        out.append(CapitalItem("power", "switchboard", len(feeds), "unit", cap.switchboard, plant_y))
        out.append(CapitalItem("power", "pdu", len(feeds) * pw.pdu_count(sc.cluster.racks), "unit", cap.pdu,
                               plant_y))
    if sc.network is not None:
        k = sc.network.counts(n)
        out.append(CapitalItem("network", "optic", k["optics"], "unit", cap.optic, it_y))
        out.append(CapitalItem("network", "leaf", k["leaves"], "unit", cap.leaf, it_y))
        out.append(CapitalItem("network", "spine", k["spines"], "unit", cap.spine, it_y))
    if sc.storage is not None and sc.storage.servers is not None:
        out.append(CapitalItem("storage", "storage_server", sc.storage.servers.count, "unit", cap.storage_server,
                               it_y))
    for part, sp in sc.maintenance.spares.items():
        out.append(CapitalItem("spares", f"initial stock {part}", sp.stock, "unit", c.parts[part], it_y))
    return out


LEAK_DAMAGE_ITEM = "node destroyed by a leak (node and PSUs)"


def node_replacement_price(sc: "Scenario", node_type: str | None = None) -> float:
    """Price of one node bought again (a leak destroyed it): ``capital.node`` of its type (``node_type``, default
    ``cluster.node.type``; a pool's with node pools) plus its PSUs."""
    c = sc.costs
    assert c is not None
    psu = psu_part(sc)
    n_psu = sc.cluster.node.parts[psu].count if psu is not None else 0
    return float(c.capital.node[sc.cluster.node.type if node_type is None else node_type] + n_psu * c.capital.psu)


def capital_purchase(sc: "Scenario") -> float:
    """Total purchase price of everything installed (not amortised), in the scenario's currency."""
    return float(sum(i.purchase for i in capital_items(sc)))


def energy_cost(ts: NDArray[np.float64], it_w: NDArray[np.float64], horizon_h: float,
                price_per_kwh: NDArray[np.float64] | float, pue: NDArray[np.float64] | float
                ) -> tuple[float, float, float]:
    """Exact energy bill of a piecewise-constant IT power.

    ``ts``, ``it_w``: the step function (W, right-continuous, from time 0); ``price_per_kwh``: a
    scalar or one price per simulated hour (index = floor(t)); ``pue``: a scalar or one factor per
    simulated day. Breakpoints are the steps and every whole hour, so each segment has one power,
    one price and one PUE. Returns (IT kWh, facility kWh, cost)."""
    H = float(horizon_h)
    if len(ts) == 0:
        return 0.0, 0.0, 0.0
    bp = np.union1d(ts[ts < H], np.arange(0.0, H, 1.0))
    dur = np.append(bp[1:], H) - bp
    idx = np.searchsorted(ts, bp, side="right") - 1
    p = np.where(idx >= 0, it_w[np.maximum(idx, 0)], 0.0)
    hour = np.floor(bp).astype(np.int64)
    price = price_per_kwh[hour] if np.ndim(price_per_kwh) else float(price_per_kwh)  # type: ignore[index]
    f = pue[np.minimum(hour // 24, len(pue) - 1)] if np.ndim(pue) else float(pue)  # type: ignore[index, arg-type]
    it_kwh = float((p * dur).sum()) / 1000.0
    fac = p * f * dur / 1000.0
    return it_kwh, float(fac.sum()), float((fac * price).sum())


class Costs(Component):
    """Component for the ``costs`` section: lines computed at the end of the replication from the
    metrics and tables of the components before it (it is the last of :data:`twin.sim.COMPONENTS`)."""

    name = "costs"
    requires = (IT_POWER,)

    @classmethod
    def wanted(cls, sc: Scenario) -> bool:
        return sc.costs is not None

    @classmethod
    def build(cls, ctx: BuildContext) -> Costs:
        return cls(ctx)

    def __init__(self, ctx: BuildContext) -> None:
        self.ctx = ctx
        sc = ctx.sc
        assert sc.costs is not None
        self.spec: CostsSpec = sc.costs
        tou = self.spec.energy.time_of_use
        if tou is not None and not tou.bound:
            raise InputError("scenario", "costs.energy.time_of_use.file",
                             "the time-of-use CSV was not loaded (load the scenario with twin.scenario.load_scenario)")
        self.it = ctx.service(IT_POWER)  # the shared IT power

    def finish(self) -> None:
        self.it.energy_kwh()

    # ------------------------------------------------------------------------------------
    def lines(self, metrics: Mapping[str, float], tables: Mapping[str, pd.DataFrame]) -> list[dict[str, Any]]:
        """Every cost line of the replication (rows of the ``costs`` table)."""
        model = self.ctx
        sc = model.sc
        c = self.spec
        H = sc.horizon_h
        T = horizon_years(sc)
        rows: list[dict[str, Any]] = []
        for it in capital_items(sc):
            amount = it.purchase * annuity_factor(c.discount_rate, it.years) * T
            rows.append({"category": "capital", "group": it.group, "item": it.item, "quantity": float(it.quantity),
                         "unit": it.unit, "unit_price": it.unit_price, "purchase": it.purchase,
                         "amortisation_years": it.years, "amount": amount})
        # energy
        ts, vs = model.recorder.level_series("site_power_w")
        tou = c.energy.time_of_use
        hours = int(math.ceil(H))
        price: NDArray[np.float64] | float = tou.hourly(np.arange(hours)) if tou is not None else c.energy.price_per_kwh
        daily = tables.get("pue_daily")
        if sc.cooling is not None and daily is not None and len(daily):
            it_d = daily["it_kwh"].to_numpy(dtype=np.float64)
            fac_d = daily["facility_kwh"].to_numpy(dtype=np.float64)
            pue: NDArray[np.float64] | float = np.where(it_d > 0, fac_d / np.where(it_d > 0, it_d, 1.0), 1.0)
            pue_src = "daily PUE of the cooling model"
        else:
            pue = c.energy.pue
            pue_src = f"PUE {c.energy.pue:g} (costs.energy.pue)"
        it_kwh, fac_kwh, e_cost = energy_cost(ts, vs, H, price, pue)
        rows.append({"category": "energy", "group": "energy", "item": f"facility energy ({pue_src}; "
                     + ("time-of-use tariff" if tou is not None else "flat tariff") + ")",
                     "quantity": fac_kwh, "unit": "kWh", "unit_price": e_cost / fac_kwh if fac_kwh > 0 else math.nan,
                     "purchase": math.nan, "amortisation_years": math.nan, "amount": e_cost})
        self._it_kwh, self._fac_kwh = it_kwh, fac_kwh
        dr = metrics.get("power.grid_dr_earnings")
        if dr:  # honoured demand-response requests are paid: a credit against the energy bill (twin.model.grid)
            shed = float(metrics["power.grid_dr_shed_kwh"])
            rows.append({"category": "energy", "group": "energy", "item": "demand-response payments (power.grid)",
                         "quantity": shed, "unit": "kWh shed", "unit_price": -float(dr) / shed,
                         "purchase": math.nan, "amortisation_years": math.nan, "amount": -float(dr)})
        # repair parts
        tk = tables.get("tickets")
        if tk is not None and len(tk):
            # a part bought per replacement (rung 2 or 3) whose swapped-out part did not come back through
            # vendor RMA (a refurbished return is under warranty: assumption); a remediation buys none
            done = tk[tk["done"].astype(bool) & (tk["rung"] >= 2) & ~tk["rma"].astype(bool)]
            counts = done.groupby(done["part"].astype(str)).size()
            for part, k in sorted(counts.items()):
                p = c.parts.get(part, 0.0)
                rows.append({"category": "repair_parts", "group": "repair_parts", "item": part, "quantity": float(k),
                             "unit": "repair", "unit_price": p, "purchase": math.nan, "amortisation_years": math.nan,
                             "amount": float(k) * p})
        # nodes destroyed by leaks: bought again (node and its PSUs), at the full price like a part
        destroyed = metrics.get("leak.nodes_destroyed")
        dmg = tables.get("leak_damage")
        if destroyed and sc.cluster.pools and dmg is not None:  # node pools: each node at its own type's price
            for a, b, node in sc.cluster.node_pools():
                k = int(((dmg["node"] >= a) & (dmg["node"] < b)).sum())
                if k:
                    p = node_replacement_price(sc, node.type)
                    rows.append({"category": "repair_parts", "group": "repair_parts",
                                 "item": f"{LEAK_DAMAGE_ITEM}, {node.type}", "quantity": float(k), "unit": "node",
                                 "unit_price": p, "purchase": math.nan, "amortisation_years": math.nan,
                                 "amount": float(k) * p})
        elif destroyed:
            p = node_replacement_price(sc)
            rows.append({"category": "repair_parts", "group": "repair_parts", "item": LEAK_DAMAGE_ITEM,
                         "quantity": float(destroyed), "unit": "node", "unit_price": p, "purchase": math.nan,
                         "amortisation_years": math.nan, "amount": float(destroyed) * p})
        # labour
        for name, pool in model.shop.crews.items():
            hours_on = pool.calendar.on_shift_hours(H) * pool.count
            rate = c.labour.pools.get(name, c.labour.rate_per_hour)
            rows.append({"category": "labour", "group": "labour", "item": name, "quantity": hours_on,
                         "unit": "technician-h", "unit_price": rate, "purchase": math.nan,
                         "amortisation_years": math.nan, "amount": hours_on * rate})
        # spares holding
        for part, sp in sc.maintenance.spares.items():
            lts, lvs = model.recorder.level_series(f"spares_on_hand.{part}")
            mean_on_hand = time_weighted_mean(lts, lvs, H) if len(lts) else float(sp.stock)
            unit = c.spares.holding_rate_per_year * c.parts[part]
            rows.append({"category": "spares_holding", "group": "spares_holding", "item": part,
                         "quantity": mean_on_hand * T, "unit": "unit-year", "unit_price": unit, "purchase": math.nan,
                         "amortisation_years": math.nan, "amount": mean_on_hand * T * unit})
        # water: the site water the evaporative room reported (L), priced per m³
        site_l = metrics.get("water.site_l")
        if site_l is not None:
            m3 = float(site_l) / LITRES_PER_M3
            rows.append({"category": "water", "group": "water", "item": "site water (evaporated + blowdown)",
                         "quantity": m3, "unit": "m3", "unit_price": c.water_per_m3, "purchase": math.nan,
                         "amortisation_years": math.nan, "amount": m3 * c.water_per_m3})
        return rows

    def results(self, so_far: ResultsSoFar) -> tuple[dict[str, float], dict[str, pd.DataFrame]]:
        rows = self.lines(so_far.metrics, so_far.tables)
        df = pd.DataFrame(rows, columns=LINE_COLUMNS).assign(currency=self.spec.currency)
        m: dict[str, float] = {}
        for cat in CATEGORIES:
            m[f"cost.{cat}"] = float(df.loc[df.category == cat, "amount"].sum())
        cap = df[df.category == "capital"]
        for g in CAPITAL_GROUPS:
            if (cap.group == g).any():
                m[f"cost.capital.{g}"] = float(cap.loc[cap.group == g, "amount"].sum())
        m["cost.capital_purchase"] = float(cap["purchase"].sum())
        if "leak.nodes_destroyed" in so_far.metrics:  # a hall whose leaks can destroy nodes
            m["cost.leak_damage"] = float(df.loc[df.item.astype(str).str.startswith(LEAK_DAMAGE_ITEM), "amount"].sum())
        if self.ctx.sc.cooling is not None:  # density and floor space of the cooling option (issue 42)
            fp = floor_plan(self.ctx.sc)
            for k in ("rack_kw", "rack_limit_kw", "racks_at_limit", "white_space_m2"):
                m[f"density.{k}"] = fp[k]
        m["cost.energy_kwh"] = self._fac_kwh
        if self.ctx.sc.cooling is None:  # no cooling model: the energy cost used a flat PUE, and outputs say so
            m["pue.flat"] = float(self.spec.energy.pue)
        m["cost.total"] = float(sum(m[f"cost.{cat}"] for cat in CATEGORIES))
        useful = so_far.metrics.get("useful_gpu_hours", math.nan)
        m["cost.per_useful_gpu_hour"] = m["cost.total"] / useful if useful and useful > 0 else math.nan
        return m, {"costs": df}


__all__ = ["LEAK_DAMAGE_ITEM", "Costs", "annuity_factor", "capital_items", "capital_purchase", "energy_cost",
           "horizon_years", "node_replacement_price"]
