"""Validation cases: the simulator against closed forms (model.md §9) and published field data.

Each case is implemented once, in this package, and called both by the tests and by
``twin validate``. A case builds a small scenario, runs replications with fixed seeds, and compares
the simulated mean (with an interval at the level the caller asks for) with a reference value
computed in code from the formula or the published table. ``Settings.mutate`` lets a test break the
model on purpose (e.g. double repair times) to prove the check can fail.

Modules: :mod:`.framework` (settings, estimates, results), :mod:`.reliability` (repairable parts,
k-of-n, spares), this module (workload: queue, checkpoints, interruptions), :mod:`.health` (frailty,
SDC rollback, stragglers), :mod:`.physical` (thermal, energy, UPS), :mod:`.compute` (collectives,
pipeline bubble, Megatron-LM and Llama 3 step times), :mod:`.field` (Llama 3, Meta research clusters). :data:`CASES` lists
them all in suite order.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from twin.physics import closed_forms as cf
from twin.validation.framework import (  # noqa: F401 - re-exported: the tests import them from here
    CaseResult,
    Doc,
    Estimate,
    Exact,
    Mutate,
    Ratio,
    Reciprocal,
    Settings,
    TMean,
    ratio_interval,
    result,
    run_doc,
    t_interval,
)


# ---- workload cases ---------------------------------------------------------------------------

def erlang_c(s: Settings) -> list[CaseResult]:
    """M/M/c queue: single-node jobs, Poisson arrivals, exponential work, FIFO, no failures or
    checkpoints; mean wait of jobs submitted after a warm-up and before a cool-down vs Erlang C."""
    c, lam, mu = 4, 3.0, 1.0
    H = 1500.0 if s.quick else 6000.0
    warm, cool = 100.0, 50.0
    reps = s.reps(12, 40)
    doc: Doc = {
        "name": "validation-erlang-c",
        "horizon_days": H / 24.0,
        "cluster": {"racks": 1, "nodes_per_rack": c, "node": {"gpus": 8, "parts": {}}},
        "workload": {
            "scheduler": {"policy": "fifo", "hot_spares": 0},
            "synthetic": {"arrival_rate_per_h": lam, "gpus": {"values": [8]},
                          "work": {"dist": "exponential", "mean_h": 1.0 / mu}},
        },
    }
    waits = []
    for res in run_doc(doc, reps, s):
        j = res.tables["jobs"]
        j = j[(j.record == "job") & (j.submit_h >= warm) & (j.submit_h <= H - cool)]
        waits.append(float(j.queue_wait_h.mean()))
    ref = cf.erlang_c_mean_wait_h(lam, mu, c)
    return [result("mmc_queue", f"mean wait, M/M/{c} ρ={lam / (c * mu):.2f} (h)", ref, TMean(np.array(waits)), s,
                   "Erlang C", wrong={"M/M/1 at the same ρ": (lam / (c * mu)) / (c * mu - lam)})]


def held_down_doc(name: str, usable: int, held: int, horizon_h: float) -> Doc:
    """A cluster of ``usable`` + ``held`` one-node-per-job nodes of 8 GPUs whose last ``held`` nodes are
    down for the whole horizon: a node part ``held`` that never fails by itself is failed at t = 0 by
    ``cooling.inject`` (the twin's scheduled failures; a liquid plant without temperatures or plant
    failures carries it) and takes 10⁹ h to repair. No other failures; the workload is the caller's."""
    never = {"mtbf_h": 1e15}
    return {
        "name": name,
        "horizon_days": horizon_h / 24.0,
        "cluster": {"racks": 1, "nodes_per_rack": usable + held, "node": {"gpus": 8, "parts": {
            "held": {"count": 1, "effect": "node_down", "failure": never,
                     "repair": {"time": {"dist": "fixed", "value_h": 1e9}}}}}},
        "cooling": {"type": "liquid", "thermal": False,
                    "liquid": {"leak": None, "cdu": {"failure": never, "pumps": {"failure": never}}},
                    "inject": [{"part": "held", "index": usable + i, "at_h": 0.0} for i in range(held)]},
        "maintenance": {"detection": {"dist": "fixed", "value_h": 0.0}},
        "workload": {"scheduler": {"policy": "backfill", "hot_spares": 0}},
    }


def no_starvation(s: Settings) -> list[CaseResult]:
    """Backfill never stops for a job that cannot start: c = 4 usable nodes (2 more held down for the
    whole horizon), a head job that needs c + 1 nodes (submitted at 1 h, after the nodes went down), and
    Poisson single-node jobs with exponential work at ρ = 0.75, no failures. The head's start has no bound
    (it is reserved at infinity), so the single-node jobs queue as M/M/c FIFO behind it: their mean wait
    (submitted after a warm-up, before a cool-down) vs Erlang C; the head's starvation advisory must be
    issued in every replication. Full: 40 replications of 6,000 h (half-width ≈ 4 % of the reference at
    the suite's Bonferroni level)."""
    c, held, lam, mu = 4, 2, 3.0, 1.0
    H = 1500.0 if s.quick else 6000.0
    warm, cool = 100.0, 50.0
    reps = s.reps(12, 40)
    doc = held_down_doc("validation-no-starvation", c, held, H)
    doc["workload"].update({
        "jobs": [{"name": "head", "gpus": 8 * (c + 1), "work_h": 10.0, "submit_h": 1.0}],
        "synthetic": {"arrival_rate_per_h": lam, "gpus": {"values": [8]},
                      "work": {"dist": "exponential", "mean_h": 1.0 / mu}},
    })
    waits, advised, never_started, held_down = [], [], [], []
    for res in run_doc(doc, reps, s):
        j = res.tables["jobs"]
        j = j[j.record == "job"]
        small = j[(j.name != "head") & (j.submit_h >= warm) & (j.submit_h <= H - cool)]
        waits.append(float(small.queue_wait_h.mean()))
        adv = res.tables["advisories"]
        advised.append(list(adv.name) == ["head"])
        never_started.append(bool(j[j.name == "head"].first_start_h.isna().all()))
        held_down.append(abs(res.metrics["node_availability"] - c / (c + held)) < 1e-9)
    ref = cf.erlang_c_mean_wait_h(lam, mu, c)
    return [result("no_starvation", f"mean wait of one-node jobs behind a head that cannot start, M/M/{c} "
                   f"ρ={lam / (c * mu):.2f} (h)", ref, TMean(np.array(waits)), s, "Erlang C on the usable nodes",
                   wrong={f"M/M/{c + held} (held-down nodes counted)": cf.erlang_c_mean_wait_h(lam, mu, c + held),
                          f"M/M/{c + 1} (one held-down node counted)": cf.erlang_c_mean_wait_h(lam, mu, c + 1)},
                   invariants={"the head job's starvation advisory is issued (and no other)": all(advised),
                               "the head job never starts": all(never_started),
                               "the held nodes stay down all the horizon": all(held_down)})]


def elastic_job(s: Settings) -> list[CaseResult]:
    """An elastic data-parallel job, deterministic: 32 GPUs on 4 nodes as R replicas of ``replica_nodes``
    nodes (1 or 2), 100 ideal hours of work, no checkpoints; node 3 fails at 10 h and is back at 30 h
    (a fixed 20 h repair); each change pauses it d = 0.5 h. By hand: full rate to 10 h; the replica with
    node 3 is lost, the job goes on with r = R − 1 replicas at rate r/R from 10 + d; it grows back at 30 h
    and runs at full rate from 30 + d, so it ends at 30 + d + (100 − 10 − (r/R)(20 − d)). The
    reconfiguration is paid once per change: d × (r/R + 1) × 32 GPU-hours; the throughput it kept while
    short is (r/R)(20 − d) × 32 GPU-hours."""
    d, t_fail, t_back, work = 0.5, 10.0, 30.0, 100.0
    out = []
    for rn in (1, 2):
        R = 4 // rn
        r = R - 1
        doc = held_down_doc(f"validation-elastic-{rn}", 4, 0, 200.0)
        doc["cluster"]["node"]["parts"]["held"]["repair"]["time"]["value_h"] = t_back - t_fail
        doc["cooling"]["inject"] = [{"part": "held", "index": 3, "at_h": t_fail}]
        doc["workload"]["jobs"] = [{"name": "elastic", "gpus": 32, "work_h": work,
                                    "elastic": {"replica_nodes": rn, "min_replicas": 1, "reconfigure_h": d}}]
        res = run_doc(doc, 1, s)[0]
        j = res.tables["jobs"]
        row = j[j.record == "job"].iloc[0]
        el = res.tables["elastic"]
        share = r / R
        ref_end = t_back + d + (work - t_fail - share * (t_back - t_fail - d))
        m = res.metrics
        out.append(result("elastic_job", f"end of the elastic job, {R} replicas of {rn} node(s), one lost 20 h (h)",
                          ref_end, Exact(float(row.end_h), 1e-9 * ref_end), s,
                          "by hand: throughput ∝ replicas, one pause per change", sample="exact",
                          wrong={"no pause for the grow": ref_end - d,
                                 "rigid, waiting for the replacement (restarts from zero at 30 h)": t_back + 0.25 + work,
                                 **({"rate as the nodes kept, not whole replicas": t_back + d + (
                                     work - t_fail - (3 / 4) * (t_back - t_fail - d))} if rn > 1 else {})},
                          invariants={
                              "one shrink at the failure and one grow at the return":
                                  list(zip(el.time_h, el.event, el.replicas_before, el.replicas_after))
                                  == [(t_fail, "shrink", R, r), (t_back, "grow", r, R)],
                              "the reconfiguration paid once per change":
                                  abs(m["reconfigure_gpu_hours"] - d * (share + 1.0) * 32) < 1e-9,
                              "the throughput kept while short":
                                  abs(m["elastic.kept_gpu_hours"] - share * (t_back - t_fail - d) * 32) < 1e-9,
                              "no progress lost, no interruption": float(row.lost_h) == 0.0
                                                                    and int(row.interruptions) == 0}))
    return out


def daly_doc(n_nodes: int, node_mtbf_h: float, work_h: float, interval_h: float, write_h: float,
             restart_h: float, horizon_h: float) -> Doc:
    """One job on all ``n_nodes`` nodes, exponential transient faults per node, fixed checkpoint
    write and restart times."""
    return {
        "name": "validation-daly",
        "horizon_days": horizon_h / 24.0,
        "cluster": {"racks": 1, "nodes_per_rack": n_nodes, "node": {"gpus": 8, "parts": {
            "fault": {"count": 1, "effect": "transient", "failure": {"mtbf_h": node_mtbf_h}}}}},
        "workload": {
            "scheduler": {"policy": "fifo", "hot_spares": 0},
            "restart": {"detection_h": 0.0, "reschedule_h": 0.0, "warmup_h": 0.0, "read_h": restart_h},
            "jobs": [{"name": "job", "gpus": 8 * n_nodes, "work_h": work_h,
                      "checkpoint": {"interval_h": interval_h, "write_h": write_h, "mode": "sync"}}],
        },
    }


def daly_checkpoint(s: Settings) -> list[CaseResult]:
    """Checkpoint efficiency T_s / mean(T_w) against Daly's (2006) exact expected wall time,
    at three intervals around the Daly optimum under common random numbers (quick) or seven
    spanning 0.5–2 × the optimum (full)."""
    n, node_mtbf = 8, 16.0  # job MTBF M = 2 h
    M = node_mtbf / n  # noqa: N806 (Daly's job MTBF M)
    delta, R = 0.1, 0.2
    opt = float(cf.daly_interval_h(delta, M))
    factors = [0.75, 1.0, 1.5] if s.quick else [0.5, 0.625, 0.75, 1.0, 1.25, 1.5, 2.0]
    reps = s.reps(150, 400)
    out = []
    for f in factors:
        tau = opt * f
        k = max(1, round(24.0 / tau))
        work = k * tau  # a multiple of the interval, as the formula assumes
        ref_tw = float(cf.daly_expected_wall_time_h(work, tau, delta, R, M))
        horizon = 20 * ref_tw
        walls = []
        done = []
        for res in run_doc(daly_doc(n, node_mtbf, work, tau, delta, R, horizon), reps, s):
            j = res.tables["jobs"]
            row = j[j.record == "job"].iloc[0]
            done.append(bool(row.done))
            walls.append(float(row.end_h - row.first_start_h) if bool(row.done) else horizon)
        w = np.array(walls)
        first_order = 1 - delta / tau - (tau / 2 + R) / M
        out.append(result("checkpoint_daly", f"efficiency at τ = {f:g} × Daly optimum ({tau:.3f} h)",
                          work / ref_tw, Reciprocal(w, work), s, f"M={M} h, δ={delta} h, R={R} h",
                          wrong={"first-order 1 − δ/τ − (τ/2 + R)/M": first_order},
                          invariants={"every job finished within the horizon": all(done)},
                          samples=list(work / w)))
    return out


def interruption_rate(s: Settings, node_mtbf_h: float = 500.0) -> list[CaseResult]:
    """Interruptions of an N-node job per hour equal N × the per-node failure rate."""
    H = 2000.0 if s.quick else 8000.0
    reps = s.reps(8, 20)
    out = []
    for n in (1, 4, 16):
        spares = max(4, n)
        doc: Doc = {
            "name": "validation-interrupts",
            "horizon_days": H / 24.0,
            "cluster": {"racks": 1, "nodes_per_rack": n + spares, "node": {"gpus": 8, "parts": {
                "board": {"count": 1, "effect": "node_down", "failure": {"mtbf_h": node_mtbf_h},
                          "repair": {"time": {"dist": "fixed", "value_h": 1.0}}}}}},
            "maintenance": {"detection": {"dist": "fixed", "value_h": 0.0},
                            "crews": {"t": {"count": 8}}},
            "workload": {
                "scheduler": {"policy": "fifo", "hot_spares": spares},
                "restart": {"detection_h": 0.0, "reschedule_h": 0.0, "warmup_h": 0.0, "read_h": 0.01},
                "jobs": [{"name": "job", "gpus": 8 * n, "work_h": 10 * H}],
            },
        }
        rates = []
        for res in run_doc(doc, reps, s):
            j = res.tables["jobs"]
            rates.append(float((j.record == "interruption").sum()) / H)
        ref = float(cf.job_interruption_rate_per_h(n, 1.0 / node_mtbf_h))
        wrong = {f"the {spares} hot spares' failures counted too: (N + spares)·r_node":
                 float(cf.job_interruption_rate_per_h(n + spares, 1.0 / node_mtbf_h))}
        if n > 1:
            wrong["one node's rate (not scaled by N)"] = 1.0 / node_mtbf_h
        out.append(result("job_interruptions", f"interruptions per hour, {n}-node job", ref,
                          TMean(np.array(rates)), s, "N × r_node", wrong=wrong))
    return out


# ---- the registry ------------------------------------------------------------------------------

def _registry() -> dict[str, Callable[[Settings], list[CaseResult]]]:
    from twin.validation import compute, field, health, heat, physical, plant, reliability, storage

    return {
        "single_part": reliability.single_part,
        "k_of_n": reliability.k_of_n,
        "one_of_two": reliability.one_of_two,
        "rack_series": reliability.rack_series,
        "palm_spares": reliability.palm_spares,
        "repair_ladder": reliability.repair_ladder,
        "rma_palm": reliability.rma_palm,
        "dispatch_impact": reliability.dispatch_impact,
        "common_cause": reliability.common_cause,
        "standby_test": reliability.standby_test,
        "mmc_queue": erlang_c,
        "no_starvation": no_starvation,
        "elastic_job": elastic_job,
        "checkpoint_daly": daly_checkpoint,
        "job_interruptions": interruption_rate,
        "frailty_negbin": health.frailty_negbin,
        "sdc_rollback": health.sdc_rollback,
        "straggler_policy": health.straggler_policy,
        "storage_data_stall": storage.data_stall,
        "storage_outage": storage.metadata_outage,
        "storage_k_of_n": storage.servers_k_of_n,
        "thermal_step": physical.thermal_step,
        "energy_constant_load": physical.energy_constant_load,
        "ups_ride_through": physical.ups_ride_through,
        "concurrent_maintenance": physical.concurrent_maintenance,
        "plant_transfer": plant.plant_transfer,
        "ats_transfer": plant.ats_transfer,
        "cdu_maintenance": plant.cdu_maintenance,
        "heat_ageing_mtbf": heat.heat_ageing_mtbf,
        "heat_ageing_step": heat.heat_ageing_step,
        "heat_capture": heat.heat_capture,
        "evaporative_water": heat.evaporative_water,
        "collective_tiers": compute.collective_tiers,
        "pipeline_bubble": compute.pipeline_bubble,
        "megatron_sc21": compute.megatron_sc21,
        "llama3_mfu": compute.llama3_mfu,
        "llama3_54day": field.llama3_54day,
        "meta_rsc": field.meta_rsc,
    }


CASES: dict[str, Callable[[Settings], list[CaseResult]]] = _registry()
"""Every validation case by name, in suite order: theory, physical, field."""
