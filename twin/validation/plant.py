"""Plant cases (issue 24): a utility-to-generator transfer with the chillers off or on UPS, a transfer
switch that fails to transfer, and the maintenance of a CDU with and without a spare.

Deterministic: no unit fails at random, outages are injected, so one replication is the answer and
the check is equality within a numerical tolerance. References are computed here from the scenario's
numbers with the closed forms, never by calling the simulator's physics functions.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from twin.sim import run_replication
from twin.validation.framework import CaseResult, Doc, Exact, Settings, load_case_doc, result
from twin.validation.physical import NEVER, _psu_part, _tol, quiet_power_section
from twin.validation.framework import NO_FANS

WATER_KJ_PER_M3_C = 4186.0  # ρ·c_p of water, kJ/(m³·°C) (restated here: the reference does not import the model)


def transfer_doc(on_ups: bool, t1_h: float, outage_h: float, restart_s: float, start_delay_s: float,
                 volume_m3: float, tau_min: float, step_c: float) -> Doc:
    """Four idle nodes on one feed in an air hall with ample CRAH capacity (its zone is slack); two
    chillers (one needed) on the feed, off or on its UPS; one utility outage at ``t1_h``."""
    return {
        "name": f"validation-plant-transfer-{'ups' if on_ups else 'no-ups'}",
        "horizon_days": 1.0,
        "cluster": {"racks": 1, "nodes_per_rack": 4, "node": {"gpus": 8, "parts": {"psu": _psu_part()}, "fans": NO_FANS}},
        "maintenance": {"detection": {"dist": "fixed", "value_h": 0}, "crews": {"crew": {"count": 1}}},
        "power": quiet_power_section(generator={"start_delay_s": start_delay_s},
                                     inject=[{"feed": "A", "at_h": t1_h, "duration_h": outage_h}]),
        "cooling": {
            "type": "air",
            "air": {"zones": 1, "supply_c": 22.0, "fan_part": None,
                    "crah": {"count": 2, "required": 1, "capacity_kw": 100.0, "failure": NEVER}},
            "plant": {"chillers": {"count": 2, "required": 1, "capacity_kw": 50.0, "failure": NEVER,
                                   "power": {"on_ups": on_ups, "restart_s": restart_s}},
                      "loop": {"volume_m3": volume_m3, "tau_min": tau_min, "step_c": step_c},
                      "crah_power": {"on_ups": True}},
        },
    }


def plant_transfer(s: Settings, restart_s: float = 300.0, start_delay_s: float = 10.0, volume_m3: float = 0.5,
                   tau_min: float = 30.0, step_c: float = 0.5) -> list[CaseResult]:
    """Utility lost at t1: the chillers off UPS stop, the generator carries the feed ``start_delay_s``
    later, and the chillers deliver again ``restart_s`` after that. Meanwhile the loop's offset above its
    set point rises first-order, x(t) = x_ss·(1 − e^(−t/τ)), x_ss = Q·R, R = τ/C, C = ρc_p·V, Q the IT
    heat (idle nodes); it peaks at x(t_off), t_off = start_delay + restart. The rooms see it on a grid of
    ``step_c``: the zone's supply (a slack zone) steps to supply_c + j·step at the exact time the loop
    crosses (j − ½)·step, t_j = τ·ln(x_ss/(x_ss − (j − ½)·step)). With the chillers on UPS: no rise."""
    t1, outage_h = 2.0, 1.0
    nodes, gpus, non_gpu, idle, supply = 4, 8, 4600.0, 100.0, 22.0
    q_kw = nodes * (non_gpu + gpus * idle) / 1000.0
    tau_s = tau_min * 60.0
    r = tau_s / (WATER_KJ_PER_M3_C * volume_m3)
    x_ss = q_kw * r
    t_off = start_delay_s + restart_s
    peak = x_ss * (1.0 - math.exp(-t_off / tau_s))
    out = []
    for on_ups in (False, True):
        res = run_replication(load_case_doc(transfer_doc(on_ups, t1, outage_h, restart_s, start_delay_s, volume_m3,
                                                         tau_min, step_c), s))
        m = res.metrics
        tl = res.tables["cooling_timeline"]
        z = tl[(tl["unit"] == "zone") & (tl["time_h"] > t1 - 1e-12)]
        if on_ups:
            inv = {"no zone change after the outage": len(z) == 0,
                   "no chiller stopped": m["plant.power_stops.chiller"] == 0}
            out.append(result("plant_transfer", "loop rise with the chillers on UPS (°C)", 0.0,
                              Exact(float(m["plant.loop_offset_max_c"]), 1e-12), s, "the UPS carries the chillers",
                              invariants=inv, sample="exact", wrong={"off UPS": peak}))
            continue
        # the rising steps: before the restart, the loop crosses (j − ½)·step while x < peak
        n_up = int(math.floor(peak / step_c + 0.5))
        js = np.arange(1, n_up + 1)
        t_ref = t1 + tau_s * np.log(x_ss / (x_ss - (js - 0.5) * step_c)) / 3600.0
        rising = z.iloc[:n_up]
        t_sim = rising["time_h"].to_numpy()
        s_sim = rising["supply_c"].to_numpy()
        err_t = float(np.max(np.abs(t_sim - t_ref)) * 3600.0) if len(t_sim) == n_up else math.inf
        err_s = float(np.max(np.abs(s_sim - (supply + js * step_c)))) if len(s_sim) == n_up else math.inf
        later = z.iloc[n_up:]
        inv = {"two chillers stopped, once each": m["plant.power_stops.chiller"] == 2,
               f"{n_up} rising steps before the restart": len(t_sim) == n_up and bool((t_sim < t1 + t_off / 3600).all()),
               "room supply = supply_c + j·step at each step (°C, 1e-9)": err_s < 1e-9,
               "back to supply_c after the restart": len(later) > 0 and abs(float(later["supply_c"].iloc[-1]) - supply) < 1e-9,
               "the loop falls only after the restart": bool((later["time_h"] >= t1 + t_off / 3600 - 1e-12).all())}
        note = f"x_ss = Q·R = {q_kw:g} kW × {r:.4g} °C/kW; t_off = {t_off:g} s; τ = {tau_s:g} s"
        out.append(result("plant_transfer", "loop peak above set point, chillers off UPS (°C)", peak,
                          Exact(float(m["plant.loop_offset_max_c"]), _tol(peak)), s, note, invariants=inv,
                          sample="exact", wrong={"restart counted from the utility loss": x_ss * (
                              1.0 - math.exp(-restart_s / tau_s)),
                              "a tank without τ (linear rise)": q_kw * t_off / (WATER_KJ_PER_M3_C * volume_m3)}))
        out.append(result("plant_transfer", "largest error of the room's step times (s)", 0.0,
                          Exact(err_t, 1e-6), s, "t_j = τ·ln(x_ss/(x_ss − (j − ½)·step)) after the loss",
                          invariants=inv, sample="exact"))
    return out


def ats_doc(prob: float, ride_through_min: float, manual_min: float, reboot_h: float) -> Doc:
    return {
        "name": f"validation-ats-{prob:g}",
        "horizon_days": 1.0,
        "cluster": {"racks": 2, "nodes_per_rack": 2, "node": {"gpus": 8, "parts": {"psu": _psu_part()}}},
        "maintenance": {"detection": {"dist": "fixed", "value_h": 0}, "crews": {"crew": {"count": 1}}},
        "power": quiet_power_section(reboot_h=reboot_h, ups={"ride_through_min": ride_through_min},
                                     ats={"failure_to_transfer_prob": prob, "manual_transfer_min": manual_min},
                                     inject=[{"feed": "A", "at_h": 5.0, "duration_h": 2.0}]),
    }


def ats_transfer(s: Settings, ride_through_min: float = 5.0, manual_min: float = 30.0,
                 reboot_h: float = 0.1) -> list[CaseResult]:
    """A transfer switch that always fails to transfer (probability 1): the feed stays on its UPS, which
    empties after ride_through × rated/actual load, and is dead until the manual transfer
    ``manual_min`` after the generator came up; the nodes return ``reboot_h`` after. Lost node-hours =
    nodes × (start_delay + manual − ride + reboot). With probability 0: none."""
    nodes, gpus, non_gpu, idle, tdp = 4, 8, 4600.0, 100.0, 700.0
    start_delay_h = 10.0 / 3600.0
    ride_h = ride_through_min / 60.0 / ((non_gpu + gpus * idle) / (non_gpu + gpus * tdp))
    ref = nodes * (start_delay_h + manual_min / 60.0 - ride_h + reboot_h)
    out = []
    for prob in (1.0, 0.0):
        m = run_replication(load_case_doc(ats_doc(prob, ride_through_min, manual_min, reboot_h), s)).metrics
        lost = float(m["power.down_node_hours"])
        inv = {"failed transfers": m["power.transfer_failures"] == (1.0 if prob else 0.0),
               "every lost node-hour is the transfer's": abs(m["power.down_node_hours.transfer"] - lost) < 1e-12}
        exp = ref if prob else 0.0
        out.append(result("ats_transfer", f"node-hours lost, failure-to-transfer probability {prob:g}", exp,
                          Exact(lost, _tol(exp)), s, "nodes × (start delay + manual transfer − ride-through + reboot)",
                          invariants=inv, sample="exact",
                          wrong={"transfer assumed to succeed": 0.0} if prob else {"always fails": ref}))
    return out


def cdu_maintenance_doc(count: int, interval_h: float, duration_h: float, hours: float,
                        when_short: str | None = None, reboot_h: float = 0.1) -> Doc:
    mt: dict[str, Any] = {"interval_h": interval_h, "duration_h": duration_h}
    if when_short is not None:
        mt["when_short"] = when_short
    plant: dict[str, Any] = {"chillers": {"failure": NEVER}, "maintenance": {"cdu": mt}}
    cooling: dict[str, Any] = {"type": "liquid", "thermal": False,
                               "liquid": {"capture_fraction": None, "leak": None,
                                          "cdu": {"count": count, "required": 1, "failure": NEVER,
                                                  "pumps": {"failure": NEVER}}},
                               "plant": plant}
    if when_short is not None:
        cooling["node"] = {"reboot_h": reboot_h}
    return {
        "name": f"validation-cdu-maintenance-{count}" + (f"-{when_short}" if when_short else ""),
        "horizon_days": hours / 24.0,
        "cluster": {"racks": 1, "nodes_per_rack": 2, "node": {"gpus": 8, "parts": {}}},
        "maintenance": {"detection": {"dist": "fixed", "value_h": 0}, "crews": {"crew": {"count": 1}}},
        "cooling": cooling,
    }


def cdu_maintenance(s: Settings, interval_h: float = 1000.0, duration_h: float = 8.0,
                    hours: float = 3000.0, reboot_h: float = 0.1) -> list[CaseResult]:
    """Scheduled CDU maintenance every ``interval_h`` for ``duration_h``, one CDU at a time. With N (one
    CDU per loop) the loop has no flow for exactly each window; with N+1 (two, one needed) never, and
    every window counts as exposure. With ``when_short: drain`` and N the loop's nodes are drained
    instead: each visit loses exactly nodes × (duration + reboot_h) node-hours (cooling.node.reboot_h),
    as planned maintenance; with N+1 none."""
    out = []
    for count in (1, 2):
        m = run_replication(load_case_doc(cdu_maintenance_doc(count, interval_h, duration_h, hours), s)).metrics
        windows = m["plant.maintenance_windows"]
        expect = sum(1 for i in range(count) for j in range(100)
                     if (i + 0.5) * interval_h / count + j * interval_h < hours)
        ref = windows * duration_h if count == 1 else 0.0
        inv = {"windows as scheduled": windows == expect,
               "short (N) / exposed (N+1) hours": abs(m["plant.maintenance_short_hours"] - ref) < 1e-9 and abs(
                   m["plant.maintenance_exposure_hours"] - (windows * duration_h if count == 2 else 0.0)) < 1e-9}
        out.append(result("cdu_maintenance", f"loop hours without flow, {'N' if count == 1 else 'N+1'}", ref,
                          Exact(float(m["cooling.loop_no_flow_hours"]), 1e-9), s,
                          "windows × duration with N; 0 with a spare", invariants=inv, sample="exact",
                          wrong={"N+1 treated as N": windows * duration_h} if count == 2 else {"spare assumed": 0.0}))
    nodes = 2
    for count in (1, 2):
        res = run_replication(load_case_doc(cdu_maintenance_doc(count, interval_h, duration_h, hours, "drain",
                                                                reboot_h), s))
        m = res.metrics
        windows = m["plant.maintenance_windows"]
        iv = res.tables["node_intervals"]
        down = iv[iv["state"] == "down"]
        lost = float((down["end_h"] - down["start_h"]).sum())
        causes = set(down["cause"].astype(str))
        ref = windows * nodes * (duration_h + reboot_h) if count == 1 else 0.0
        inv = {"only the CDU's maintenance takes nodes down": causes <= {"planned:cdu_maintenance"},
               "every visit drains with N, none with N+1":
                   m["plant.maintenance_drains"] == (windows if count == 1 else 0.0),
               "the plant's drained node-hours are the cluster's": abs(m["plant.maintenance_drained_node_hours"]
                                                                        - lost) < 1e-9,
               "drained (N) / exposed (N+1) hours": abs(m["plant.maintenance_drained_hours"] - (
                   windows * duration_h if count == 1 else 0.0)) < 1e-9 and abs(
                   m["plant.maintenance_exposure_hours"] - (windows * duration_h if count == 2 else 0.0)) < 1e-9}
        wrong = ({"reboot forgotten: nodes × duration": windows * nodes * duration_h,
                  "ran short instead (no drain)": 0.0} if count == 1 else
                 {"N+1 drained like N": windows * nodes * (duration_h + reboot_h)})
        out.append(result("cdu_maintenance", f"node-hours drained, when_short: drain, {'N' if count == 1 else 'N+1'}",
                          ref, Exact(lost, 1e-9), s, "nodes × (duration + reboot_h) per visit with N; 0 with a spare",
                          invariants=inv, sample="exact", wrong=wrong))
    return out
