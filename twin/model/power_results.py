"""The power chain's results (``twin.model.power.PowerChain.results``): its metrics and tables, read from
the chain's accounts at the horizon. A function of the chain, kept apart so the model stays readable."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from twin.scenario.recovery import has_block_load
from twin.observe.recorder import time_weighted_mean
from twin.physics.power import power_ramps

OUTAGE_COLUMNS = ["feed", "outage", "start_h", "end_h", "injected", "soc_start", "generator", "dead_h"]


def reported_causes(ch: Any, causes_all: tuple[str, ...]) -> tuple[list[str], bool]:
    """The down causes of the chain ``ch`` that can happen in its scenario (maintenance: when scheduled;
    transfer: with a transfer switch or a block-load limit; ups: with a modular UPS or faults; switching: with
    a switching error probability; overload: when oversubscribed), and whether switching errors can happen."""
    spec = ch.spec
    switching = any(el.maintenance is not None and el.maintenance.switching_error_prob > 0
                    for el in spec.elements().values())
    when = {"maintenance": bool(ch.rotas), "transfer": spec.ats is not None or has_block_load(spec),
            "ups": ch.mods is not None, "switching": switching, "overload": spec.oversubscription is not None}
    return [c for c in causes_all if when.get(c, True)], switching


def power_results(ch: Any, causes_all: tuple[str, ...]) -> tuple[dict[str, float], dict[str, pd.DataFrame]]:
    """Metrics and tables of the power chain ``ch`` (a ``twin.model.power.PowerChain``) at the horizon: the
    down hours of each cause that can happen (``reported_causes``; code = index in ``causes_all`` + 1)."""
    names, switching = reported_causes(ch, causes_all)
    codes = [causes_all.index(c) + 1 for c in names]
    H = ch.H
    rec = ch.engine.recorder
    energy_kwh = ch.it.energy_kwh()
    ts, vs = rec.level_series("site_power_w")
    m: dict[str, float] = {}
    m["power.down_node_hours"] = float(ch.down_node_h.sum())
    causes = [causes_all[k - 1] for k in codes]
    for k, c in zip(codes, causes):
        m[f"power.down_node_hours.{c}"] = float(ch.down_node_h[k])
    if ch.rotas:
        m["power.maintenance_windows"] = float(ch.maint.windows)
        m["power.maintenance_hours"] = ch.maint.hours
        m["power.maintenance_exposure_hours"] = ch.maint.exposure_h
    if switching:
        m["power.switching_errors"] = float(ch.switching_errors)
    if any(p.test_duration_h for p in ch.units.values()):
        m["power.test_unit_hours"] = float(sum(p.test_unit_h for p in ch.units.values()))
    m["power.capped_gpu_hours"] = ch.capped_gpu_h
    m["power.capped_node_hours"] = ch.capped_node_h
    if ch.site_cap_w is not None:
        m["power.site_capped_gpu_hours"] = ch.site_capped_gpu_h
        m["power.site_cap_exceeded_hours"] = ch.site_cap_short_h
    m["power.it_energy_kwh"] = energy_kwh
    normal_wh = ch.it.energy_wh - ch.feeds_loss_energy_wh  # every UPS healthy and on its input
    m["power.ups_loss_kwh"] = (ch.ups_loss_wh + (ch.loss_k * normal_wh if ch.has_ups else 0.0)) / 1000.0
    m["power.peak_w"] = float(vs.max()) if len(vs) else math.nan
    m["power.mean_w"] = time_weighted_mean(ts, vs, H)
    step, ramp = power_ramps(ts, vs, H, 1.0)
    m["power.max_step_w"] = step
    m["power.max_ramp_w_per_h"] = ramp
    outages = pd.DataFrame(ch.outage_rows, columns=OUTAGE_COLUMNS).astype(
        {"feed": "str", "outage": "int64", "start_h": "float64", "end_h": "float64", "injected": "bool",
         "soc_start": "float64", "generator": "str", "dead_h": "float64"})  # typed even when empty
    outages["reached_load"] = outages["dead_h"].astype(float) > 0
    m["power.utility_outages"] = float(ch.utility_outages)  # a site-wide outage once, not once per feed
    m["power.feed_outages"] = float(len(outages))  # one per feed an outage took off utility
    m["power.outages_reaching_load"] = float(outages["reached_load"].sum())
    m["power.generator_starts"] = float(ch.gen_starts)
    m["power.generator_start_failures"] = float(ch.gen_start_failures)
    if ch.spec.ats is not None:
        m["power.transfer_failures"] = float(ch.transfer_failures)
    if has_block_load(ch.spec):
        m["power.generator_block_trips"] = float(ch.block_trips)
    if ch.mods is not None:
        md = ch.mods
        m["power.ups_shortfalls"] = float(md.shortfalls)
        m["power.ups_short_hours"] = md.short_h
        m["power.ups_bypass_failures"] = float(md.transfer_failures)
        m["power.ups_faults"] = float(md.faults)
    if ch.gens is not None:
        g = ch.gens
        m["power.generator_short_hours"] = g.short_h
        m["power.generator_set_start_failures"] = float(g.set_start_failures)
        m["power.generator_run_failures"] = float(g.run_failures)
        m["power.generator_trips"] = float(g.trips)
    m["power.feed_dead_hours"] = float(sum(e - s for _, s, e, st, _ in ch.feed_rows if st == "dead"))
    feeds = pd.DataFrame(ch.feed_rows, columns=["feed", "start_h", "end_h", "state", "cause"])
    feeds["state"] = pd.Categorical(feeds["state"], categories=["utility", "ups", "generator", "dead"])
    tables = {
        "power_feeds": feeds,
        "power_outages": outages,
        "power_site": pd.DataFrame({"time_h": ts, "it_power_w": vs}),
        "power_downtime": pd.DataFrame({"cause": causes,
                                        "node_hours": [float(ch.down_node_h[k]) for k in codes]}),
    }
    return m, tables
