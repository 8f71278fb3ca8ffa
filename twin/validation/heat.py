"""Heat and cooling cases (issue 23): failure rates that follow temperature (the ASHRAE X-factor on the
inlet, Arrhenius on the junction), the effective age carried over a temperature step, and the
deterministic plant equations (heat capture, evaporative supply and water).

The ageing cases hold temperatures constant (or step them once, at a job's start) so that the closed
forms are exact: at a constant AF the observed MTBF of an exponential part is MTBF_ref / AF; a Weibull
part (shape k ≥ 2, where carried age and a fresh draw differ) whose ageing rate steps from AF₁ to AF₂ at
t₁ fails by t with probability F(t) = 1 − exp(−((AF₁t₁ + AF₂(t − t₁))/η)^k).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from twin.validation.framework import CaseResult, Doc, Ratio, Settings, Share, identical_gpus, result, run_doc
from twin.validation.framework import NO_FANS

PARTS_PER_NODE = 64
K_EV_PER_K = 8.617e-5  # Boltzmann, NIST/SEMATECH e-Handbook §8.1.5.1


def _arrhenius(t_c: float, tref_c: float, ea_ev: float) -> float:
    """exp[(Ea/k)(1/T_ref − 1/T)], kelvin (written here, not taken from the simulator's physics)."""
    return math.exp(ea_ev / K_EV_PER_K * (1.0 / (tref_c + 273.15) - 1.0 / (t_c + 273.15)))


def _ageing_doc(name: str, hours: float, nodes: int, part: dict[str, Any], cooling: dict[str, Any],
                jobs: list[dict[str, Any]] | None = None) -> Doc:
    """``nodes`` nodes whose only part is a redundant group of ``PARTS_PER_NODE`` units needing 1 (the
    node stays up, so its load and temperature stay as set), a constant ambient, ample crews."""
    return {
        "name": name,
        "horizon_days": hours / 24.0,
        "cluster": {"racks": 1, "nodes_per_rack": nodes, "node": {"gpus": 8, "parts": {
            "unit": {"count": PARTS_PER_NODE, "required": 1, "effect": "redundant", **part}}}},
        "maintenance": {"detection": {"dist": "fixed", "value_h": 0.0},
                        "crews": {"crew": {"count": 64, "shift": "24x7"}}},
        "workload": {"scheduler": {"policy": "fifo", "hot_spares": 0}, "jobs": jobs or []},
        "cooling": identical_gpus({"ambient": {"mean_c": 10.0, "seasonal_amplitude_c": 0.0,
                                               "diurnal_amplitude_c": 0.0}, **cooling}),
    }


def _mtbf_case(s: Settings, key: str, label: str, cooling: dict[str, Any], af: float, note: str,
               jobs: list[dict[str, Any]] | None = None, wrong: dict[str, float] | None = None) -> CaseResult:
    """Observed MTBF (part-hours in service per failure) at a constant temperature vs MTBF_ref / AF (AF: the
    mean over the nodes when they differ, each node's parts in service alike)."""
    mtbf, repair_h = 200.0, 0.01
    nodes = 8
    hours = 1200.0
    reps = s.reps(12, 24)
    doc = _ageing_doc(f"validation-heat-mtbf-{key}", hours, nodes,
                      {"failure": {"dist": "exponential", "mean_h": mtbf},
                       "repair": {"hot_swap": True, "time": {"dist": "fixed", "value_h": repair_h}}}, cooling, jobs)
    exposure, count = [], []
    for res in run_doc(doc, reps, s):
        t = res.tables["tickets"]
        out = (t["back_h"].fillna(hours) - t["fail_h"]).clip(lower=0.0).sum()
        exposure.append(nodes * PARTS_PER_NODE * hours - float(out))
        count.append(float(res.metrics["failures.unit"]))
    est = Ratio(np.array(exposure), np.array(count))
    return result("heat_ageing_mtbf", f"MTBF at constant temperature, {label} (h)", mtbf / af, est, s,
                  f"MTBF_ref / AF, {note}",
                  wrong={"no acceleration: MTBF_ref": mtbf, "AF applied twice: MTBF_ref / AF²": mtbf / af ** 2,
                         **{k: mtbf / v for k, v in (wrong or {}).items()}})


def _xfactor(t_c: float) -> float:
    """ASHRAE X-factor between its points 20 °C → 1.00 and 45 °C → 1.76 (written here)."""
    return 1.00 + (t_c - 20.0) * (1.76 - 1.00) / (45.0 - 20.0)


def heat_ageing_mtbf(s: Settings) -> list[CaseResult]:
    """X-factor (air hall held at 30 °C, reference 20 °C), the X-factor up a rack (supply 22 °C and a 12 °C
    rack-height rise: node k of 8 at 22 + 12k/7 °C, the pooled MTBF is MTBF_ref over the nodes' mean AF) and
    Arrhenius (liquid hall, GPUs at full load, Ea 0.3 eV) at a constant temperature: observed MTBF =
    MTBF_ref / AF."""
    inlet = 30.0
    xf = _xfactor(inlet)
    air = {"type": "air", "air": {"supply_c": inlet, "fan_part": None},
           "heat_ageing": {"xfactor": {"enabled": True}}}
    supply, rise, nodes = 22.0, 12.0, 8  # (nodes: _mtbf_case's, one rack)
    node_in = [supply + rise * k / (nodes - 1) for k in range(nodes)]  # top node 34 °C: below the 35 °C trip
    xf_rack = sum(_xfactor(t) for t in node_in) / nodes
    rack = {"type": "air", "air": {"supply_c": supply, "rack_rise_c": rise, "fan_part": None},
            "heat_ageing": {"xfactor": {"enabled": True}}}
    # liquid: a job keeps the GPUs at TDP from t = 0, T_j = 35 + 700 × 0.04 = 63 °C
    tj, tref, ea = 35.0 + 700.0 * 0.04, 40.0, 0.3
    af = float(_arrhenius(tj, tref, ea))
    liquid = {"type": "liquid", "liquid": {"supply_c": 35.0, "leak": None},
              "heat_ageing": {"arrhenius": {"unit": {"activation_ev": ea, "t_ref_c": tref}}}}
    jobs = [{"name": "load", "gpus": 64, "work_h": 1.0e6}]
    return [
        _mtbf_case(s, "xfactor", "X-factor, inlet 30 °C", air, xf, f"AF = X(30 °C)/X(20 °C) = {xf:.4f}"),
        _mtbf_case(s, "xfactor-rack", "X-factor up a rack, inlets 22–34 °C", rack, xf_rack,
                   f"AF = mean over the nodes of X(22 + 12k/7 °C)/X(20 °C) = {xf_rack:.4f}",
                   wrong={"rack rise ignored: MTBF_ref / X(supply)": _xfactor(supply),
                          "every node at the top node's inlet": _xfactor(node_in[-1])}),
        _mtbf_case(s, "arrhenius", "Arrhenius, junction 63 °C", liquid, af,
                   f"AF = exp[(Ea/k)(1/T_ref − 1/T)] = {af:.4f}, Ea {ea} eV, T_ref {tref} °C", jobs),
    ]


def heat_ageing_step(s: Settings) -> list[CaseResult]:
    """Weibull parts (shape 3) on GPUs that are idle until a job starts at t₁ and at full load after:
    the share failed by t against F(t) = 1 − exp(−((AF₁t₁ + AF₂(t − t₁))/η)^k), with AF from Arrhenius on
    the junction temperature (idle 39 °C, busy 63 °C; Ea 0.7 eV, T_ref 39 °C so AF₁ = 1)."""
    k, eta = 3.0, 400.0
    t1 = 300.0
    idle_t, busy_t = 35.0 + 100.0 * 0.04, 35.0 + 700.0 * 0.04
    ea, tref = 0.7, idle_t
    af1 = float(_arrhenius(idle_t, tref, ea))
    af2 = float(_arrhenius(busy_t, tref, ea))
    nodes = 16
    reps = s.reps(8, 16)
    hours = 400.0
    doc = _ageing_doc("validation-heat-step", hours, nodes,
                      {"failure": {"dist": "weibull", "shape": k, "scale_h": eta},
                       "repair": {"hot_swap": True, "time": {"dist": "fixed", "value_h": 1.0e5}}},
                      {"type": "liquid", "liquid": {"supply_c": 35.0, "leak": None},
                       "heat_ageing": {"arrhenius": {"unit": {"activation_ev": ea, "t_ref_c": tref}}}},
                      [{"name": "load", "gpus": 8 * nodes, "work_h": 1.0e6, "submit_h": t1}])
    checks = (t1, 320.0, 330.0)
    first: list[np.ndarray] = []
    up = True  # no node went down before the last check (its job, and so the load, ran throughout)
    for res in run_doc(doc, reps, s):
        ev = res.tables["events"]
        up &= not bool(((ev["kind"] == "node_down") & (ev["time_h"] <= checks[-1])).any())
        f = ev[ev["kind"] == "fail"].groupby("path", observed=True)["time_h"].min()
        ft = np.full(nodes * PARTS_PER_NODE, math.inf)
        ft[: len(f)] = np.sort(f.to_numpy())
        first.append(ft)
    allf = np.concatenate(first)
    out = []
    for t in checks:
        age = af1 * min(t, t1) + af2 * max(0.0, t - t1)
        ref = 1.0 - math.exp(-((age / eta) ** k))
        if t > t1:  # survivors of t₁ restarted with a fresh life at AF₂
            s1 = math.exp(-((af1 * t1 / eta) ** k))
            fresh = 1.0 - s1 * math.exp(-((af2 * (t - t1) / eta) ** k))
        wrong = {}
        if t > t1:
            wrong["no acceleration: 1 − exp(−(t/η)^k)"] = 1.0 - math.exp(-((t / eta) ** k))
            wrong["a fresh draw at the step (age not carried)"] = fresh
        out.append(result("heat_ageing_step", f"share failed by {t:g} h (job from {t1:g} h)", ref,
                          Share(allf <= t), s, f"k = {k:g}, η = {eta:g} h, AF₁ = {af1:.3f}, AF₂ = {af2:.3f}",
                          wrong=wrong, invariants={"the load ran on every node until the last check": up}))
    return out


# ---- goodput by mechanism --------------------------------------------------------------------------

def goodput_bucket_errors(res: Any, gpus_per_node: int, node_parts: list[str]) -> dict[str, float]:
    """Largest absolute error (as a share of installed GPU-hours) of each identity the mechanism buckets
    of one replication must satisfy, each bucket recomputed from its own records: the down intervals
    (``node_intervals``, by the cause that began them) and the interruption rows of ``jobs`` (by cause)
    for trips and failures; the job rows for checkpoints, restarts and slowdown; and the sum
    goodput + Σ buckets = 1."""
    m = res.metrics
    j = res.tables["jobs"]
    jobs = j[j["record"] == "job"]
    ints = j[j["record"] == "interruption"]
    gpus = dict(zip(jobs["job"].astype(int), jobs["gpus"].astype(float)))
    installed = m["useful_gpu_hours"] / m["goodput"]
    iv = res.tables["node_intervals"]
    down = iv[iv["state"] == "down"]
    down_h = (down["end_h"] - down["start_h"]).groupby(down["cause"].astype(str)).sum()
    lost = (ints["lost_h"] * ints["job"].astype(int).map(gpus)).groupby(ints["cause"].astype(str)).sum()

    def from_log(causes: list[str]) -> float:
        g = sum(float(down_h.get(c, 0.0)) * gpus_per_node + float(lost.get(c, 0.0)) for c in causes)
        return g / installed

    mech = {k[len("goodput.mechanism."):]: v for k, v in m.items() if k.startswith("goodput.mechanism.")}
    err = {"goodput + buckets = 1": abs(m["goodput"] + sum(mech.values()) - 1.0),
           "thermal_trip": abs(mech["thermal_trip"] - from_log(["thermal_trip"])),
           "checkpoint": abs(mech["checkpoint"] - float((jobs["checkpoint_h"] * jobs["gpus"]).sum()) / installed),
           "restart": abs(mech["restart"] - float((jobs["restart_h"] * jobs["gpus"]).sum()) / installed),
           "slowdown": abs(mech["thermal_slowdown"] + mech["fail_slow"] + mech["power_cap"] + mech["fabric_slowdown"]
                           - float(((jobs["run_h"] - jobs["made_h"]) * jobs["gpus"]).sum()) / installed)}
    err["failures by part"] = max(abs(mech[f"failure.{p}"] - from_log([p, f"repair:{p}"])) for p in node_parts)
    return err


# ---- heat capture (deterministic) ---------------------------------------------------------------------

def heat_capture(s: Settings, f: float = 0.7, hours: float = 48.0) -> list[CaseResult]:
    """One liquid-cooled node at full load all the time with heat capture f: its air zone carries
    (1 − f) × node heat (the zone's load in ``cooling_timeline``, kept because the zone's one small unit
    cannot carry a node at full load), and with free cooling all the time the cooling energy is
    T × P × ((1 − f)·fan + f·pump)."""
    from twin.validation.framework import Exact

    non_gpu, tdp, gpus = 4600.0, 700.0, 8
    p_node = non_gpu + gpus * tdp
    fan, pump = 0.05, 0.02
    doc: Doc = {
        "name": "validation-heat-capture", "horizon_days": hours / 24.0,
        "cluster": {"racks": 1, "nodes_per_rack": 1, "node": {"gpus": gpus, "parts": {}, "fans": NO_FANS}},
        "workload": {"scheduler": {"policy": "fifo", "hot_spares": 0},
                     "jobs": [{"name": "load", "gpus": gpus, "work_h": 10 * hours}]},
        "cooling": {"type": "liquid",
                    "ambient": {"mean_c": 5.0, "seasonal_amplitude_c": 0.0, "diurnal_amplitude_c": 0.0},
                    "liquid": {"capture_fraction": f, "leak": None, "pump_kw_per_kw": pump,
                               "cdu": {"failure": {"dist": "fixed", "value_h": 1.0e9},
                                       "pumps": {"failure": {"dist": "fixed", "value_h": 1.0e9}}}},
                    "air": {"fan_part": None, "fan_kw_per_kw": fan, "r_room_c_per_kw": 1.0e-3,
                            "crah": {"count": 1, "required": 1, "capacity_kw": 1.0,
                                     "failure": {"dist": "fixed", "value_h": 1.0e9}}}},
    }
    res = run_doc(doc, 1, s)[0]
    tl = res.tables["cooling_timeline"]
    zone = tl[tl["unit"] == "zone"]
    load_kw = float(zone["load_kw"].iloc[-1]) if len(zone) else math.nan
    ref_air = (1.0 - f) * p_node / 1000.0
    ref_cool = hours * p_node * ((1.0 - f) * fan + f * pump) / 1000.0
    inv = {"the node ran at full load throughout": abs(res.metrics["energy.it_kwh"] - hours * p_node / 1000.0)
           < 1e-9 * hours * p_node}
    tol = 1e-9
    return [
        result("heat_capture", f"air load of a node at full load, f = {f:g} (kW)", ref_air,
               Exact(load_kw, tol * max(1.0, ref_air)), s, "(1 − f) × node heat", invariants=inv, sample="exact",
               wrong={"all node heat on liquid: 0": 0.0, "the non-GPU heat on air (hybrid split)": non_gpu / 1000.0}),
        result("heat_capture", "cooling energy with free cooling (kWh)", ref_cool,
               Exact(float(res.metrics["energy.cooling_kwh"]), tol * max(1.0, ref_cool)), s,
               "T·P·((1 − f)·fan + f·pump)", invariants=inv, sample="exact",
               wrong={"all heat on liquid": hours * p_node * pump / 1000.0}),
    ]


# ---- evaporative cooling (deterministic) ----------------------------------------------------------------

def evaporative_water(s: Settings, hours: float = 48.0) -> list[CaseResult]:
    """One air-cooled node at full load all the time with evaporative units, outside air at a constant
    30 °C dry-bulb and 20 °C wet-bulb, set point 20 °C, ε = 0.85: the zone holds T_wb + (1 − ε)(T_db − T_wb)
    = 21.5 °C (its target in ``cooling_timeline``), and the site water is
    P/ΔT_IT × (T_db − 21.5) × T / h_fg × (1 + blowdown), WUE that over the IT energy."""
    from twin.physics.evaporative import LATENT_HEAT_J_PER_KG
    from twin.validation.framework import Exact

    non_gpu, tdp, gpus = 4600.0, 700.0, 8
    p_node = non_gpu + gpus * tdp
    t_db, t_wb, eps, sp, rise, blow = 30.0, 20.0, 0.85, 20.0, 12.0, 0.25
    doc: Doc = {
        "name": "validation-evaporative", "horizon_days": hours / 24.0,
        "cluster": {"racks": 1, "nodes_per_rack": 1, "node": {"gpus": gpus, "parts": {}, "fans": NO_FANS}},
        "workload": {"scheduler": {"policy": "fifo", "hot_spares": 0},
                     "jobs": [{"name": "load", "gpus": gpus, "work_h": 10 * hours}]},
        "cooling": {"type": "air",
                    "ambient": {"mean_c": t_db, "seasonal_amplitude_c": 0.0, "diurnal_amplitude_c": 0.0,
                                "wet_bulb": {"depression_mean_c": t_db - t_wb, "depression_seasonal_amplitude_c": 0.0,
                                             "depression_diurnal_amplitude_c": 0.0}},
                    "node": {"max_inlet_c": 40.0},
                    "air": {"fan_part": None, "supply_c": sp,
                            "crah": {"failure": {"dist": "fixed", "value_h": 1.0e9}},
                            "evaporative": {"effectiveness": eps, "it_rise_c": rise, "blowdown_share": blow,
                                            "water_failure": {"dist": "fixed", "value_h": 1.0e9}}}},
    }
    res = run_doc(doc, 1, s)[0]
    tl = res.tables["cooling_timeline"]
    zone = tl[tl["unit"] == "zone"]
    supply = float(zone["target_c"].iloc[-1]) if len(zone) else math.nan
    ref_supply = t_wb + (1.0 - eps) * (t_db - t_wb)
    evap_j = p_node * (t_db - ref_supply) / rise * hours * 3600.0
    ref_water = evap_j / LATENT_HEAT_J_PER_KG * (1.0 + blow)
    it_kwh = hours * p_node / 1000.0
    m = res.metrics
    inv = {"the node ran at full load throughout": abs(m["energy.it_kwh"] - it_kwh) < 1e-9 * it_kwh}
    tol = 1e-9
    return [
        result("evaporative_water", "supply held by the evaporative units (°C)", ref_supply,
               Exact(supply, tol * max(1.0, ref_supply)), s, "max(set point, T_wb + (1 − ε)(T_db − T_wb))",
               invariants=inv, sample="exact", wrong={"supply at wet-bulb (ε = 1)": t_wb, "set point held": sp}),
        result("evaporative_water", "site water (L)", ref_water,
               Exact(float(m["water.site_l"]), tol * max(1.0, ref_water)), s,
               "P/ΔT_IT·(T_db − T_supply)·T/h_fg·(1 + blowdown)", invariants=inv, sample="exact",
               wrong={"no blowdown": ref_water / (1.0 + blow),
                      "all heat evaporated (cooling tower)": p_node * hours * 3600.0 / LATENT_HEAT_J_PER_KG
                      * (1.0 + blow)}),
        result("evaporative_water", "WUE (L/kWh)", ref_water / it_kwh,
               Exact(float(m["water.wue_l_per_kwh"]), tol * max(1.0, ref_water / it_kwh)), s,
               "site water / IT energy", invariants=inv, sample="exact",
               wrong={"per kWh of facility energy": ref_water / float(m["energy.facility_kwh"])}),
    ]
