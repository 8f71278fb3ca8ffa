"""Physical cases: thermal step response and crossing time (model.md §3), energy of a constant load
(§4), UPS ride-through and state of charge (§5).

These are deterministic: no failure is random (units never fail, outages are injected), so one
replication is the answer and the check is equality within a numerical tolerance
(:class:`~twin.validation.framework.Exact`). References are computed here from the scenario's
numbers with the closed forms of model.md, never by calling the simulator's own physics functions.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from twin.sim import run_replication
from twin.validation.framework import CaseResult, Doc, Exact, Settings, identical_gpus, load_case_doc, result
from twin.validation.framework import NO_FANS

NEVER = {"dist": "fixed", "value_h": 1.0e9}
"""A failure time beyond any horizon: the unit never fails."""
REL_TOL = 1e-9
"""Relative tolerance of the deterministic checks (float round-off of sums over events)."""


def _tol(ref: float) -> float:
    return REL_TOL * max(1.0, abs(ref))


# ---- thermal ------------------------------------------------------------------------------------

def thermal_doc(r_c_per_w: float, c_j_per_c: float, supply_c: float, short_s: float) -> Doc:
    """One air-cooled node (ample CRAH capacity, fans not modelled). A job of ``short_s`` seconds at
    1 h steps its GPUs from idle to full power and back; a long job from 2 h steps them up again and
    they settle above the slowdown temperature, so they cross it and cap their power."""
    return {
        "name": "validation-thermal-step",
        "horizon_days": 3.0 / 24.0,
        "cluster": {"racks": 1, "nodes_per_rack": 1, "node": {"gpus": 8, "parts": {}}},
        "workload": {"jobs": [{"name": "short", "gpus": 8, "work_h": short_s / 3600.0, "submit_h": 1.0},
                              {"name": "long", "gpus": 8, "work_h": 100.0, "submit_h": 2.0}]},
        "cooling": identical_gpus({
            "type": "air",
            "air": {"zones": 1, "crah": {"count": 2, "required": 1, "capacity_kw": 100.0, "failure": NEVER},
                    "supply_c": supply_c, "fan_part": None, "design_ambient_c": 60.0},
            "gpu": {"r_air_c_per_w": r_c_per_w, "c_j_per_c": c_j_per_c},
            "trace": {"nodes": [0], "from_h": 0.0, "to_h": 100.0},
        }),
    }


def thermal_step(s: Settings, r_c_per_w: float = 0.098, c_j_per_c: float = 400.0, supply_c: float = 22.0,
                 short_s: float = 60.0) -> list[CaseResult]:
    """First-order GPU response C·dT/dt = P − (T − T_in)/R to a power step (model.md §3).

    From idle (P_idle 100 W, T0 = T_in + P_idle·R) to full power (TDP 700 W, T_ss = T_in + P·R,
    τ = R·C): T(t) = T_ss + (T0 − T_ss)·e^(−t/τ), checked at the end of a ``short_s`` job (the
    simulator records the temperature there); the time to reach the slowdown temperature T_x
    (89 °C) is t_x = τ·ln((T0 − T_ss)/(T_x − T_ss)), checked against the recorded moment the GPU
    starts capping; then P_cap = (T_x − T_in)/R and speed ((P_cap − P_idle)/(P_d − P_idle))^α."""
    idle, tdp, slow, alpha = 100.0, 700.0, 89.0, 0.5  # GpuThermal / workload defaults (sources.md)
    doc = thermal_doc(r_c_per_w, c_j_per_c, supply_c, short_s)
    res = run_replication(load_case_doc(doc, s))
    tr = res.tables["thermal_trace"]
    tr = tr[(tr.node == 0) & (tr.gpu == 0)].sort_values("time_h", kind="stable")
    tau = r_c_per_w * c_j_per_c
    T0 = supply_c + idle * r_c_per_w
    Tss = supply_c + tdp * r_c_per_w
    T_short = Tss + (T0 - Tss) * math.exp(-short_s / tau)
    t_x = tau * math.log((T0 - Tss) / (slow - Tss))
    p_cap = (slow - supply_c) / r_c_per_w
    speed = ((p_cap - idle) / (tdp - idle)) ** alpha
    end_short = 1.0 + short_s / 3600.0
    at_end = tr[np.isclose(tr.time_h, end_short, rtol=0, atol=1e-9)]
    capped = tr[(tr.time_h >= 2.0) & (tr.speed < 1.0)]
    ok = len(at_end) > 0 and len(capped) > 0
    sim_T = float(at_end.temp_c.iloc[-1]) if len(at_end) else math.nan
    first = capped.iloc[0] if len(capped) else None
    sim_tx = float((first.time_h - 2.0) * 3600.0) if first is not None else math.nan
    sim_p = float(first.power_w) if first is not None else math.nan
    sim_speed = float(first.speed) if first is not None else math.nan
    inv = {"trace recorded the step end and the crossing": ok,
           "the short job ends before the crossing": short_s < t_x,
           "steady state above slowdown": Tss > slow}
    note = f"R={r_c_per_w:g} °C/W, C={c_j_per_c:g} J/°C, τ={tau:g} s, T_in={supply_c:g} °C"
    wrong_tau = {"τ = C/R instead of R·C": Tss + (T0 - Tss) * math.exp(-short_s * r_c_per_w / c_j_per_c)}
    return [
        result("thermal_step", f"GPU temperature {short_s:g} s after a 100→700 W step (°C)", T_short,
               Exact(sim_T, _tol(T_short)), s, note, invariants=inv, sample="exact", wrong=wrong_tau),
        result("thermal_step", f"time from idle to the {slow:g} °C slowdown (s)", t_x,
               Exact(sim_tx, 1e-6 * max(1.0, t_x)), s, "t_x = τ·ln((T0 − T_ss)/(T_x − T_ss))", invariants=inv,
               sample="exact", wrong={"linear heating at the initial rate": (slow - T0) * c_j_per_c / (tdp - idle)}),
        result("thermal_step", "capped power at the slowdown (W)", p_cap, Exact(sim_p, _tol(p_cap)), s,
               "P_cap = (T_x − T_in)/R", invariants=inv, sample="exact"),
        result("thermal_step", "speed while capped", speed, Exact(sim_speed, _tol(speed)), s,
               "((P_cap − P_idle)/(P_d − P_idle))^α, α = 0.5", invariants=inv, sample="exact"),
    ]


# ---- energy of a constant load ------------------------------------------------------------------

def quiet_power_section(topology: str = "n", **over: Any) -> dict[str, Any]:
    """A power chain (scenario ``power`` section) whose elements never fail, with no random outages:
    only what a case injects happens, and nodes return ``reboot_h`` after any power loss (no staged
    restart: ``recovery`` null, so a case's times are the chain's own). ``over`` replaces keys; a dict
    merges into a dict key."""
    sec: dict[str, Any] = {
        "topology": topology,
        "utility": {"outages_per_year": 0},
        "ups": {"ride_through_min": 10, "recharge_h": 8, "failure": None},
        "generator": {"start_delay_s": 10, "start_failure_prob": 0.0, "failure": None},
        "switchboard": {"failure": None},
        "pdu": {"failure": None},
        "reboot_h": 0.1,
        "recovery": None,
    }
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(sec.get(k), dict):
            sec[k] = {**sec[k], **v}
        else:
            sec[k] = v
    return sec


def _psu_part() -> dict[str, Any]:
    return {"count": 4, "required": 4, "min_to_run": 3, "effect": "redundant", "failure": NEVER,
            "repair": {"hot_swap": True, "burn_in_h": 0, "time": {"dist": "fixed", "value_h": 0.5}}}


def energy_constant_load(s: Settings, nodes: int = 2, hours: float = 240.0) -> list[CaseResult]:
    """``nodes`` nodes computing at full power for ``hours``: IT energy is exactly P·T with
    P = nodes × (non-GPU 4,600 W + 8 × 700 W), both in the power chain's and the thermal model's
    accounting; UPS losses are P·T·(1/η − 1) with η = 0.95 (scenario defaults)."""
    non_gpu, gpus, tdp, eff = 4600.0, 8, 700.0, 0.95
    doc: Doc = {
        "name": "validation-energy",
        "horizon_days": hours / 24.0,
        "cluster": {"racks": 1, "nodes_per_rack": nodes, "node": {"gpus": gpus, "parts": {"psu": _psu_part()}, "fans": NO_FANS}},
        "maintenance": {"detection": {"dist": "fixed", "value_h": 0}, "crews": {"crew": {"count": 1}}},
        "workload": {"jobs": [{"name": "all", "gpus": gpus * nodes, "work_h": 1e6, "submit_h": 0.0}]},
        "power": quiet_power_section(),
        "cooling": {"type": "air", "air": {"supply_c": 22.0, "fan_part": None,
                                           "crah": {"capacity_kw": 100.0, "failure": NEVER}}},
    }
    res = run_replication(load_case_doc(doc, s))
    m = res.metrics
    ref = nodes * (non_gpu + gpus * tdp) * hours / 1000.0
    inv = {"no throttling, capping or downtime": m.get("thermal.throttled_gpu_hours", 0.0) == 0.0
           and m.get("power.capped_gpu_hours", 0.0) == 0.0 and m["node_down_hours"] == 0.0}
    note = f"{nodes} nodes × {non_gpu + gpus * tdp:g} W × {hours:g} h"
    return [
        result("energy_constant_load", "IT energy, power chain (kWh)", ref,
               Exact(float(m.get("power.it_energy_kwh", math.nan)), _tol(ref)), s, note, invariants=inv,
               sample="exact", wrong={"GPUs at idle power": nodes * (non_gpu + gpus * 100.0) * hours / 1000.0}),
        result("energy_constant_load", "IT energy, thermal model (kWh)", ref,
               Exact(float(m.get("energy.it_kwh", math.nan)), _tol(ref)), s, note, invariants=inv, sample="exact"),
        result("energy_constant_load", "UPS losses (kWh)", ref * (1 / eff - 1),
               Exact(float(m.get("power.ups_loss_kwh", math.nan)), _tol(ref)), s, "P·T·(1/η − 1), η = 0.95",
               invariants=inv, sample="exact"),
    ]


# ---- UPS ride-through ---------------------------------------------------------------------------

def ups_ride_through(s: Settings, ride_through_min: float = 10.0, recharge_h: float = 8.0,
                     gap_h: float = 2.0) -> list[CaseResult]:
    """One feed, no generator, four idle nodes (a constant load below the UPS rating). A first
    utility outage outlasts the battery: the nodes go down SoC·ride_through·rated/actual after it
    starts (SoC 1). Power returns, the battery recharges linearly for ``gap_h`` (SoC = gap/recharge),
    and a second outage rides through for that fraction only (model.md §5)."""
    nodes, gpus, non_gpu, idle, tdp = 4, 8, 4600.0, 100.0, 700.0
    t1, d1, d2 = 10.0, 1.0, 1.0
    t2 = t1 + d1 + gap_h
    doc: Doc = {
        "name": "validation-ups",
        "horizon_days": 1.0,
        "cluster": {"racks": 2, "nodes_per_rack": nodes // 2,
                    "node": {"gpus": gpus, "parts": {"psu": _psu_part()}}},
        "maintenance": {"detection": {"dist": "fixed", "value_h": 0}, "crews": {"crew": {"count": 1}}},
        "power": quiet_power_section(generator=None, reboot_h=0.0,
                                     ups={"ride_through_min": ride_through_min, "recharge_h": recharge_h, "failure": None},
                                     inject=[{"feed": "A", "at_h": t1, "duration_h": d1},
                                             {"feed": "A", "at_h": t2, "duration_h": d2}]),
    }
    res = run_replication(load_case_doc(doc, s))
    iv = res.tables["node_intervals"]
    iv = iv[iv["state"] == "down"]
    # rated load (UPS default capacity): every node at full demand; actual: idle nodes
    load_fraction = (non_gpu + gpus * idle) / (non_gpu + gpus * tdp)
    full_ride_h = ride_through_min / 60.0 / load_fraction
    soc2 = min(1.0, gap_h / recharge_h)  # emptied by the first outage, then linear recharge
    first = iv[(iv.start_h >= t1) & (iv.start_h < t1 + d1)]
    second = iv[(iv.start_h >= t2) & (iv.start_h < t2 + d2)]
    sim1 = float((first.start_h.min() - t1) * 60.0) if len(first) else math.nan
    sim2 = float((second.start_h.min() - t2) * 60.0) if len(second) else math.nan
    inv = {"the first outage outlasts a full battery": d1 > full_ride_h,
           "every node goes down in both outages": len(first) == nodes and len(second) == nodes,
           "all nodes go down together": bool(len(first) and np.ptp(first.start_h) < 1e-12
                                              and len(second) and np.ptp(second.start_h) < 1e-12)}
    ref1 = full_ride_h * 60.0
    ref2 = soc2 * full_ride_h * 60.0
    return [
        result("ups_ride_through", "ride-through from a full battery (min)", ref1, Exact(sim1, 1e-6), s,
               f"ride_through × rated/actual = {ride_through_min:g} min / {load_fraction:.4f}", invariants=inv,
               sample="exact", wrong={"rated ride-through regardless of load": ride_through_min}),
        result("ups_ride_through", f"ride-through after {gap_h:g} h of recharge (min)", ref2, Exact(sim2, 1e-6), s,
               f"SoC = {gap_h:g}/{recharge_h:g} h × full ride-through", invariants=inv, sample="exact",
               wrong={"battery assumed full": ref1}),
    ]


def concurrent_maintenance(s: Settings, interval_h: float = 1000.0, duration_h: float = 8.0,
                           reboot_h: float = 0.1, hours: float = 3000.0) -> list[CaseResult]:
    """Scheduled UPS maintenance (isolate: the feed below it is de-energised) every ``interval_h`` for
    ``duration_h``, one feed at a time, nothing else failing. With N (one feed) the load is drained:
    each window loses exactly nodes × (duration + reboot_h) node-hours, as planned interruptions; with
    2N (each feed's PSUs alone meet the demand) none, the load runs exposed on the other feed."""
    nodes = 6
    out = []
    for topology, psus in (("n", 4), ("2n", 8)):
        psu = {**_psu_part(), "count": psus, "required": 4, "min_to_run": 3}
        doc: Doc = {
            "name": f"validation-maintenance-{topology}",
            "horizon_days": hours / 24.0,
            "cluster": {"racks": 2, "nodes_per_rack": nodes // 2, "node": {"gpus": 8, "parts": {"psu": psu}}},
            "maintenance": {"detection": {"dist": "fixed", "value_h": 0}, "crews": {"crew": {"count": 1}}},
            "power": quiet_power_section(topology, reboot_h=reboot_h, ups={"maintenance": {
                "interval_h": interval_h, "duration_h": duration_h, "mode": "isolate"}}),
        }
        res = run_replication(load_case_doc(doc, s))
        m = res.metrics
        windows = m["power.maintenance_windows"]
        lost = float(m["power.down_node_hours"])
        iv = res.tables["node_intervals"]
        causes = set(iv.loc[iv["state"] == "down", "cause"].astype(str))
        f = 1 if topology == "n" else 2
        first = interval_h / (2.0 * f)  # mid-slot: unit k of f at (k + 1/2)·interval/f
        expect_windows = sum(1 for k in range(f) for j in range(100)
                             if first + k * interval_h / f + j * interval_h < hours)
        ref = windows * nodes * (duration_h + reboot_h) if topology == "n" else 0.0
        inv = {"windows as scheduled (one feed at a time)": windows == expect_windows,
               "only planned maintenance takes nodes down": causes <= {"planned:power_maintenance"},
               "exposure: 2N runs on one feed for every window, N drains instead":
                   abs(m["power.maintenance_exposure_hours"] - (windows * duration_h if topology == "2n" else 0.0))
                   < 1e-9}
        wrong = ({"reboot forgotten: nodes × duration": windows * nodes * duration_h} if topology == "n" else
                 {"2N drained like N": windows / 2 * nodes * (duration_h + reboot_h)})
        out.append(result("concurrent_maintenance", f"node-hours lost to UPS maintenance, {topology.upper()}", ref,
                          Exact(lost, 1e-9), s, "nodes × (duration + reboot_h) per window with N; 0 with 2N",
                          invariants=inv, sample="exact", wrong=wrong))
    return out
