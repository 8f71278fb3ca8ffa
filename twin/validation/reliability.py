"""Reliability cases (model.md §9): one repairable part, k-out-of-n with r crews, 1-of-2 with one
and two crews, rack parts in series, spares by Palm's theorem.

Each case states a scenario whose steady state has a known closed form, runs replications with
fixed seeds and compares the estimate with the closed form. Warm-up is discarded (or shown
negligible, as an invariant) so the estimator targets the steady-state quantity. Each result lists
plausible *wrong* models (``CaseResult.wrong``): the tests assert that a 99 % interval excludes them,
and ``twin validate`` counts how many its verdict intervals (at the Bonferroni level over the suite)
exclude, so a pass says how much it means. The full suite excludes every one (a slow test asserts
it); ``--quick`` runs few replications and is a smoke check that cannot tell some apart.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from twin.physics import closed_forms as cf
from twin.validation.framework import (CaseResult, Doc, Exact, Ratio, Settings, TMean, bonferroni_confidence,
                                       load_case_doc, result)
from twin.sim import run_replication


def down_fraction(intervals: pd.DataFrame, node: int, start_h: float, end_h: float) -> float:
    """Share of [start_h, end_h) that ``node`` spent down (intervals clipped to the window)."""
    d = intervals[(intervals["state"] == "down") & (intervals["node"] == node)]
    s = np.maximum(d["start_h"].to_numpy(), start_h)
    e = np.minimum(d["end_h"].to_numpy(), end_h)
    return float(np.clip(e - s, 0.0, None).sum() / (end_h - start_h))


def base_doc(name: str, days: float, parts: dict[str, Any], crews: int = 1, racks: int = 1,
             nodes_per_rack: int = 1, spares: dict[str, Any] | None = None) -> Doc:
    """A cluster of identical nodes with ``parts``, no detection delay, ``crews`` technicians 24x7."""
    doc: Doc = {
        "name": name,
        "horizon_days": days,
        "cluster": {"racks": racks, "nodes_per_rack": nodes_per_rack, "node": {"gpus": 8, "parts": parts}},
        "maintenance": {
            "detection": {"dist": "fixed", "value_h": 0},
            "crews": {"crew": {"count": crews, "shift": "24x7"}},
        },
    }
    if spares:
        doc["maintenance"]["spares"] = spares
    return doc


# ---- one repairable part: A = MTBF / (MTBF + MTTR) ---------------------------------------------

def single_part(s: Settings, mtbf_h: float = 10.0, mttr_h: float = 2.0) -> list[CaseResult]:
    """One node with one node_down part, exponential failures (``mtbf_h``) and repairs (``mttr_h``),
    no detection, queue, spare wait or burn-in: node availability against MTBF/(MTBF + MTTR).

    The run starts with the part new: the exact expected time average over [0, H] of the two-state
    chain is A + (1 − A)(1 − e^{−(λ+μ)H})/((λ+μ)H); an invariant checks that this offset is below
    5 % of the interval half-width (so the steady-state formula is the right reference)."""
    reps = s.reps(10, 40)
    days = 250.0 if s.quick else 1000.0
    doc = base_doc("single-part", days, {
        "board": {"count": 1, "effect": "node_down",
                  "failure": {"dist": "exponential", "mean_h": mtbf_h},
                  "repair": {"hot_swap": False, "burn_in_h": 0,
                             "time": {"dist": "exponential", "mean_h": mttr_h}}},
    })
    sc = load_case_doc(doc, s)
    H = sc.horizon_h
    avail = []
    n_fail = 0.0
    pure_repair = True
    for rep in range(reps):
        res = run_replication(sc, rep)
        avail.append(res.metrics["node_availability"])
        n_fail += res.metrics["failures"]
        t = res.tables["tickets"]
        t = t[t["done"]]  # tickets still open at the horizon have no end yet
        # the whole downtime is the repair: no detection, no queue, no spare wait, no burn-in
        pure_repair &= bool((t["start_h"] == t["fail_h"]).all() and (t["back_h"] == t["end_h"]).all())
    expected = float(cf.availability_single(mtbf_h, mttr_h))
    est = TMean(np.array(avail))
    _, lo, hi = est.interval(s.confidence)
    srate = 1 / mtbf_h + 1 / mttr_h
    offset = (1 - expected) * (1 - math.exp(-srate * H)) / (srate * H)
    return [result(
        "single_part", f"availability, MTBF {mtbf_h:g} h, MTTR {mttr_h:g} h", expected, est, s,
        "A = MTBF/(MTBF + MTTR)",
        wrong={"repair time doubled: MTBF/(MTBF + 2·MTTR)": float(cf.availability_single(mtbf_h, 2 * mttr_h)),
               "repair time forgotten: A = 1": 1.0},
        invariants={"downtime is the repair alone": pure_repair,
                    "over 100 failures per replication": n_fail > 100 * reps,
                    "start-up offset < 5 % of the half-width": offset < 0.05 * (hi - lo) / 2})]


# ---- k-out-of-n with r dedicated crews -----------------------------------------------------------

def group_doc(n: int, k: int, crews: int, lam: float, mu: float, days: float) -> Doc:
    """One node whose only part is a redundant group of n units needing k (no min_to_run: the node is
    down while fewer than k work); exponential failures λ and repairs μ, hot swap."""
    return base_doc(f"k-of-n-{k}-{n}-r{crews}", days, {
        "psu": {"count": n, "required": k, "effect": "redundant",
                "failure": {"dist": "exponential", "mean_h": 1 / lam},
                "repair": {"hot_swap": True, "burn_in_h": 0,
                           "time": {"dist": "exponential", "mean_h": 1 / mu}}},
    }, crews=crews)


def group_unavailability(doc: Doc, reps: int, warmup_h: float, s: Settings) -> tuple[np.ndarray, bool]:
    """Per replication, the node's down share after ``warmup_h``; and whether no repair drained it."""
    sc = load_case_doc(doc, s)
    H = sc.horizon_h
    out = []
    never_drained = True
    for rep in range(reps):
        res = run_replication(sc, rep)
        never_drained &= not bool(res.tables["tickets"]["drained"].any())
        out.append(down_fraction(res.tables["node_intervals"], 0, warmup_h, H))
    return np.array(out), never_drained


def _k_of_n_one(s: Settings, n: int, k: int, crews: int, lam: float, mu: float, reps: int, days: float,
                other_crews: int | None = None, case: str = "k_of_n") -> CaseResult:
    warm = 48.0  # many mean repair times: the start (all units healthy) is forgotten
    u, never_drained = group_unavailability(group_doc(n, k, crews, lam, mu, days), reps, warm, s)
    expected = 1 - cf.k_of_n_availability(n, k, lam, mu, crews)
    wrong = {}
    if other_crews is not None:
        wrong[f"{other_crews} crew(s) instead of {crews}"] = 1 - cf.k_of_n_availability(n, k, lam, mu, other_crews)
    return result(case, f"unavailability, {k}-of-{n}, {crews} crew(s), λ={lam:g}/h, μ={mu:g}/h", expected,
                  TMean(u), s, f"birth–death chain, warm-up {warm:g} h discarded", wrong=wrong,
                  invariants={"hot swap: the node is never drained": never_drained,
                              "measurable: 0.001 < U < 0.5": 0.001 < expected < 0.5})


def k_of_n(s: Settings) -> list[CaseResult]:
    """4-of-6 redundant units (PSU-like) with one and with two crews, against the birth–death chain
    p_i ∝ C(n,i)·ρ^i·i!/(min(i,r)!·r^max(i−r,0)); the other crew count is a wrong model."""
    if s.quick:
        plan = [(1, 0.1, s.reps(10, 40), 90.0), (2, 0.2, s.reps(8, 40), 60.0)]
    else:
        plan = [(1, 0.1, s.reps(40, 40), 180.0), (2, 0.2, s.reps(40, 40), 180.0)]
    return [_k_of_n_one(s, 6, 4, crews, lam, 1.0, reps, days, other_crews=3 - crews)
            for crews, lam, reps, days in plan]


def one_of_two(s: Settings) -> list[CaseResult]:
    """1-of-2 with one crew, against (μ² + 2λμ)/(μ² + 2λμ + 2λ²), and with two crews (the chain with
    r = 2); each excludes the other crew count."""
    lam, mu = 0.2, 1.0
    reps = s.reps(10, 40)
    days = 100.0 if s.quick else 400.0
    one = _k_of_n_one(s, 2, 1, 1, lam, mu, reps, days, other_crews=2, case="one_of_two")
    closed = 1 - float(cf.one_of_two_one_crew(lam, mu))
    one.invariants["closed form equals the chain with r = 1"] = abs(closed - one.reference) < 1e-12
    one.passed = one.passed and one.invariants["closed form equals the chain with r = 1"]
    two = _k_of_n_one(s, 2, 1, 2, lam, mu, reps, days, other_crews=1, case="one_of_two")
    return [one, two]


# ---- a rack behind parts in series (an NVLink domain's switch trays) -----------------------------

def rack_series(s: Settings, units: int = 9, mtbf_h: float = 300.0, detect_h: float = 0.5,
                repair_h: float = 4.0) -> list[CaseResult]:
    """Nodes behind ``units`` rack parts in series (``cluster.rack_parts``, effect node_down: the
    switch trays of an NVLink domain), each an independent repairable unit (exponential failures,
    fixed detection and repair, ample crews: no queue; a unit keeps ageing while its rack is down):
    node availability = A_u^units with A_u = MTBF/(MTBF + detection + repair).

    Measured after a warm-up of 3 unit cycles (every unit starts new and up, not in the steady-state
    mix); every node of a rack shares its rack's downtime (an invariant)."""
    reps = s.reps(10, 40)
    days = 150.0 if s.quick else 600.0
    racks, npr = 8, 2
    doc = base_doc("rack-series", days, {"gpu": {"count": 8, "failure": {"mtbf_h": 1e15}}}, crews=64,
                   racks=racks, nodes_per_rack=npr)
    doc["cluster"]["rack_parts"] = {"tray": {
        "count": units, "effect": "node_down", "failure": {"dist": "exponential", "mean_h": mtbf_h},
        "repair": {"time": {"dist": "fixed", "value_h": repair_h}}}}
    doc["maintenance"]["detection"] = {"dist": "fixed", "value_h": detect_h}
    sc = load_case_doc(doc, s)
    H = sc.horizon_h
    cycle = mtbf_h + detect_h + repair_h
    warm = 3 * cycle
    avail, shared, causes = [], True, set()
    for rep in range(reps):
        res = run_replication(sc, rep)
        iv = res.tables["node_intervals"]
        causes |= set(iv.loc[iv["state"] == "down", "cause"].astype(str))
        down = np.array([down_fraction(iv, n, warm, H) for n in range(racks * npr)])
        shared &= bool(np.all(down.reshape(racks, npr) == down.reshape(racks, npr)[:, :1]))
        avail.append(1.0 - float(down.mean()))
    a_unit = float(cf.availability_single(mtbf_h, detect_h + repair_h))
    return [result(
        "rack_series", f"node availability, {units} rack parts in series, MTBF {mtbf_h:g} h, "
        f"down {detect_h + repair_h:g} h", a_unit ** units, TMean(np.array(avail)), s,
        "A = A_u^n, A_u = MTBF/(MTBF + MTTR) (independent units in series)",
        wrong={"one unit per rack: A_u": a_unit,
               "detection forgotten": float(cf.availability_single(mtbf_h, repair_h)) ** units,
               "units stop ageing while the rack is down: 1/(1 + n·MTTR/MTBF)":
                   1.0 / (1.0 + units * (detect_h + repair_h) / mtbf_h)},
        invariants={"nodes of a rack share its downtime": shared,
                    "every outage is a rack part's": causes <= {"tray"},
                    "over 200 unit failures per replication after the warm-up":
                        racks * units * (H - warm) / cycle > 200})]


# ---- spares: Palm's theorem ----------------------------------------------------------------------

def palm_spares(s: Settings) -> list[CaseResult]:
    """Many nodes, one node_down part each, (S−1, S) spares with lead time L: the share of failures
    that find no spare on the shelf is P(Poisson(λL) ≥ S).

    Counted from the events table over [L, H): outstanding orders at t ≥ L are exactly the orders
    of (t − L, t], so the window starts in steady state; events (unlike tickets) include failures
    whose repair is still open at the horizon. The pooled share is a ratio estimator with its
    replication-level (delta-method) interval, which accounts for the positive correlation of
    stock-outs within a replication.

    Palm assumes a constant fleet failure rate; here a failed part cannot fail again until it is
    replaced, so the fleet rate is λ·(1 − D/N) with D the parts down: those in repair (Poisson with
    mean λ·repair, 50 crews never queue) plus backorders max(0, O − S), O ≤ Poisson(λL). D ≤ 30
    except with probability < 1e-20, so the exact share lies in [palm(λ·(1 − 30/N)), palm(λ)]: the
    reference is that range (invariant: it is narrow against the interval)."""
    reps = s.reps(10, 40)
    hours = 2000.0 if s.quick else 5000.0
    n_nodes, fleet_rate, S = 50_000, 0.5, 3  # λ_fleet 0.5 /h
    part_mtbf = n_nodes / fleet_rate
    lead_days = 4.0 / 24.0
    repair_h = 0.1
    doc = base_doc("palm", hours / 24.0, {
        "board": {"count": 1, "effect": "node_down",
                  "failure": {"dist": "exponential", "mean_h": part_mtbf},
                  "repair": {"hot_swap": False, "time": {"dist": "fixed", "value_h": repair_h}}},
    }, crews=50, racks=500, nodes_per_rack=100,
        spares={"board": {"stock": S, "reorder_point": S - 1, "reorder_qty": 1, "lead_time_days": lead_days}})
    sc = load_case_doc(doc, s)
    L = lead_days * 24.0  # noqa: N806 (Palm's lead time L); exactly as the engine computes it
    H = sc.horizon_h
    expected = float(cf.palm_stockout_share(fleet_rate, L, S))
    fails, outs = [], []
    metric_agrees = True
    for rep in range(reps):
        res = run_replication(sc, rep)
        ev = res.tables["events"]
        f_all = ev[ev["kind"] == "fail"]
        s_all = ev[ev["kind"] == "stockout"]
        # the engine's own metric is the same count over the whole horizon
        metric_agrees &= bool(abs(res.metrics["stockout_share.board"] - len(s_all) / len(f_all)) < 1e-12)
        fails.append(int((f_all["time_h"] >= L).sum()))
        outs.append(int((s_all["time_h"] >= L).sum()))
    f = np.array(fails, dtype=float)
    o = np.array(outs, dtype=float)
    est = Ratio(o, f)
    _, lo, hi = est.interval(s.confidence)
    d_max = 30
    lower = float(cf.palm_stockout_share(fleet_rate * (1 - d_max / n_nodes), L, S))
    return [result(
        "palm_spares", f"stock-out share, S={S}, λL={fleet_rate * L:g}", expected, est, s,
        "P(Poisson(λL) ≥ S); reference range allows the fleet-rate loss", ref_low=lower,
        wrong={f"one more spare (S={S + 1})": float(cf.palm_stockout_share(fleet_rate, L, S + 1)),
               f"one fewer spare (S={S - 1})": float(cf.palm_stockout_share(fleet_rate, L, S - 1))},
        invariants={"engine metric equals the event count": metric_agrees,
                    "D ≤ 30 except with probability < 1e-20":
                        float(stats.poisson.sf(d_max - S, fleet_rate * (L + repair_h))) < 1e-20,
                    "rate-loss range < 10 % of the half-width": expected - lower < 0.1 * (hi - lo) / 2,
                    "failures in the window ≥ 40 % of λ(H − L)": f.sum() > 0.4 * fleet_rate * (H - L) * reps,
                    "measurable: 0.2 < share < 0.5": 0.2 < expected < 0.5})]


# ---- the repair ladder: remediation, replacement, escalation --------------------------------------

LADDER = {"s1": 0.4, "s2": 0.8, "detect_h": 0.25, "remediate_h": 0.25, "repair_h": 4.0, "escalate_h": 12.0,
          "burn_in_h": 2.0}
"""The ladder case's parameters (hours; s₁, s₂ conditional success shares of remediation and replacement)."""


HALF_WIDTH_CONFIDENCE = bonferroni_confidence(50)
"""Level at which the ladder and RMA cases check their half-width (≤ 5 % of the reference): the suite's
Bonferroni level for 50 checked quantities (the suite has fewer, so its own level is lower)."""


def _hw_ok(est: Ratio, ref: float) -> bool:
    _, lo, hi = est.interval(HALF_WIDTH_CONFIDENCE)
    return (hi - lo) / 2 <= 0.05 * ref


def ladder_doc(name: str, hours: float, n_nodes: int, part_mtbf_h: float, s1: float, s2: float,
               spares: dict[str, Any] | None = None, crews: int = 50, remediate_h: float = 0.25,
               repair_h: float = 4.0, escalate_h: float = 12.0, burn_in_h: float = 2.0,
               detect_h: float = 0.25) -> Doc:
    """Nodes with one node_down part ``board`` (exponential failures) and a repair ladder of fixed times."""
    doc = base_doc(name, hours / 24.0, {
        "board": {"count": 1, "effect": "node_down",
                  "failure": {"dist": "exponential", "mean_h": part_mtbf_h},
                  "repair": {"time": {"dist": "fixed", "value_h": repair_h}, "burn_in_h": burn_in_h,
                             "ladder": {"remediate_success": s1, "replace_success": s2,
                                        "remediate_time": {"dist": "fixed", "value_h": remediate_h},
                                        "escalate_time": {"dist": "fixed", "value_h": escalate_h}}}},
    }, crews=crews, racks=n_nodes // 100, nodes_per_rack=100, spares=spares)
    doc["maintenance"]["detection"] = {"dist": "fixed", "value_h": detect_h}
    return doc


def repair_ladder(s: Settings) -> list[CaseResult]:
    """A repair ladder with crews and spares enough that no ticket waits: the mean downtime per failure
    is Σ pᵢTᵢ with unconditional rung probabilities p₁ = s₁, p₂ = (1 − s₁)s₂, p₃ = (1 − s₁)(1 − s₂)
    and cumulative rung times T₁ = d + r, T₂ = d + r + h + b, T₃ = d + r + h + e + b (detection,
    remediation, hands-on, escalation, burn-in; no burn-in after a remediation); the spares consumed per
    failure are p_replace = 1 − s₁ (a replacement takes one, an escalation no second one).

    Counted over the tickets of failures before H − T₃ (all of them finished: no censoring). Per failure
    the downtime has sd ≈ 5.5 h around 5.54 h; 12 replications of ~2,400 failures (quick) give a
    half-width near 3 % of the reference at the suite's Bonferroni level, 40 (full) about 1 %; the spares
    share (binomial sd 0.49) about 3 % and 1 % of 0.6. An invariant checks the 5 % bound at the case's level."""
    p = LADDER
    reps = s.reps(12, 40)
    hours, n_nodes, mtbf = 6000.0, 2000, 5000.0  # 0.4 failures per hour
    doc = ladder_doc("repair-ladder", hours, n_nodes, mtbf, p["s1"], p["s2"],
                     spares={"board": {"stock": 100000, "reorder_point": 0, "lead_time_days": 1}},
                     remediate_h=p["remediate_h"], repair_h=p["repair_h"], escalate_h=p["escalate_h"],
                     burn_in_h=p["burn_in_h"], detect_h=p["detect_h"])
    sc = load_case_doc(doc, s)
    d, r, h, e, b = p["detect_h"], p["remediate_h"], p["repair_h"], p["escalate_h"], p["burn_in_h"]
    times = [d + r, d + r + h + b, d + r + h + e + b]
    cut = sc.horizon_h - times[-1] - 1.0
    down, count, taken, fails = [], [], [], []
    no_wait, all_done, node_down_matches = True, True, True
    for rep in range(reps):
        res = run_replication(sc, rep)
        t = res.tables["tickets"]
        t = t[t["fail_h"] < cut]
        all_done &= bool(t["done"].all())
        no_wait &= bool(((t["spare_h"] == t["remediated_h"]) & (t["start_h"] == t["spare_h"])).all())
        down.append(float((t["back_h"] - t["fail_h"]).sum()))
        count.append(float(len(t)))
        # spares: every failure of the whole run against every spare demand of it
        fails.append(res.metrics["failures.board"])
        taken.append(float(res.tables["parts"].set_index("part").loc["board", "spare_demands"]))
        node_down_matches &= bool(abs(res.metrics["node_down_hours.board"]
                                      - float((res.tables["node_intervals"].eval("end_h - start_h")).sum())) < 1e-6)
    s1, s2 = p["s1"], p["s2"]
    ref = float(cf.ladder_mean_downtime_h([s1, s2], times))
    est = Ratio(np.array(down), np.array(count))
    spare_est = Ratio(np.array(taken), np.array(fails))
    p_rep = 1 - s1
    return [
        result("repair_ladder", f"mean downtime per failure, s₁={s1:g}, s₂={s2:g} (h)", ref, est, s,
               "Σ pᵢTᵢ, p = (s₁, (1−s₁)s₂, (1−s₁)(1−s₂)), cumulative rung times",
               wrong={"no ladder: every failure replaced": times[1],
                      "conditional shares as unconditional: Σ sᵢTᵢ": s1 * times[0] + s2 * times[1] + (1 - s2) * times[2],
                      "rung times not cumulative": (s1 * times[0] + (1 - s1) * s2 * (h + b)
                                                    + (1 - s1) * (1 - s2) * (e + b))},
               invariants={"no ticket waited for a crew or a spare": no_wait,
                           "every counted ticket finished": all_done,
                           "node-down hours are the board's": node_down_matches,
                           "half-width ≤ 5 % of the reference at the suite's level": _hw_ok(est, ref)}),
        result("repair_ladder", f"spares consumed per failure, s₁={s1:g}", p_rep, spare_est, s,
               "p_replace = 1 − s₁",
               wrong={"a spare per failure": 1.0, "a second spare per escalation": p_rep + (1 - s1) * (1 - s2)},
               invariants={"half-width ≤ 5 % of the reference at the suite's level": _hw_ok(spare_est, p_rep)}),
    ]


def rma_palm(s: Settings) -> list[CaseResult]:
    """Vendor RMA as Palm's theorem: stock S, no orders (every replaced part returns refurbished), a
    fleet replacement rate λ·p_replace (p_replace = 1 − s₁) and a turnaround L (the RMA is opened when a
    replacement takes a spare, found or backordered, and the unit returns L later): the share of
    replacements that find no spare is P(Poisson(λ·p_replace·L) ≥ S).

    Counted over [L, H) like :func:`palm_spares` (the pipeline then holds exactly the RMAs of the last
    L), with the same reference range for the fleet-rate loss of parts down."""
    reps = s.reps(20, 40)
    hours = 2000.0 if s.quick else 5000.0
    n_nodes, fleet_rate, S, s1 = 50_000, 2.0, 3, 0.5
    rate = fleet_rate * (1 - s1)
    turn_days, repair_h = 2.0 / 24.0, 0.1
    doc = ladder_doc("rma-palm", hours, n_nodes, n_nodes / fleet_rate, s1, 1.0,
                     spares={"board": {"stock": S, "reorder_point": S - 1, "reorder_qty": 1, "lead_time_days": 1000,
                                       "rma_turnaround_days": turn_days}},
                     remediate_h=0.05, repair_h=repair_h, burn_in_h=0.0, detect_h=0.0)
    sc = load_case_doc(doc, s)
    loop = turn_days * 24.0  # exactly as the engine computes it
    H = sc.horizon_h
    expected = float(cf.palm_stockout_share(rate, loop, S))
    takes, outs = [], []
    no_orders, pipeline_ok = True, True
    for rep in range(reps):
        res = run_replication(sc, rep)
        t = res.tables["tickets"]
        took = t[(t["rung"] != 1) & t["remediated_h"].notna()]
        ev = res.tables["events"]
        so = ev[ev["kind"] == "stockout"]
        takes.append(int((took["remediated_h"] >= loop).sum()))
        outs.append(int((so["time_h"] >= loop).sum()))
        no_orders &= res.metrics["spares_scrapped.board"] == 0
        # Little's law on the RMA pipeline: mean units at the vendor ≈ RMA rate × L (information invariant)
        pipeline_ok &= abs(res.metrics["rma.at_vendor_mean.board"] - res.metrics["rma.sent.board"] / H * turn_days * 24) < 0.2
    est = Ratio(np.array(outs, dtype=float), np.array(takes, dtype=float))
    _, lo, hi = est.interval(s.confidence)
    d_max = 30
    lower = float(cf.palm_stockout_share(rate * (1 - d_max / n_nodes), loop, S))
    return [result(
        "rma_palm", f"share of replacements finding no spare, S={S}, λpL={rate * loop:g}", expected, est, s,
        "P(Poisson(λ·p_replace·L) ≥ S); reference range allows the fleet-rate loss", ref_low=lower,
        wrong={"remediated failures take a spare too: λL": float(cf.palm_stockout_share(fleet_rate, loop, S)),
               f"one more spare (S={S + 1})": float(cf.palm_stockout_share(rate, loop, S + 1)),
               f"one fewer spare (S={S - 1})": float(cf.palm_stockout_share(rate, loop, S - 1))},
        invariants={"no part scrapped, no order placed": no_orders,
                    "RMA pipeline: mean at the vendor = sent rate × L (±0.2)": pipeline_ok,
                    "rate-loss range < 10 % of the half-width": expected - lower < 0.1 * (hi - lo) / 2,
                    "replacements in the window ≥ 40 % of λp(H − L)":
                        sum(takes) > 0.4 * rate * (H - loop) * reps,
                    "measurable: 0.2 < share < 0.5": 0.2 < expected < 0.5,
                    "half-width ≤ 5 % of the reference at the suite's level": _hw_ok(est, expected)})]


# ---- dispatch by impact, with ageing (deterministic) ------------------------------------------------

def dispatch_doc(ageing_h: float) -> Doc:
    """One rack of 4 nodes, one technician: a PSU (6 of which 4 needed: a failure costs no GPU), a board
    (node_down: 8 GPUs) and a rack tray (node_down for the whole rack: 32 GPUs), none failing on its own."""
    never = {"dist": "fixed", "value_h": 1e9}
    doc = base_doc("dispatch", 2.0, {
        "psu": {"count": 6, "required": 4, "effect": "redundant", "failure": never,
                "repair": {"hot_swap": True, "time": {"dist": "fixed", "value_h": 1.0}}},
        "board": {"count": 1, "effect": "node_down", "failure": never,
                  "repair": {"time": {"dist": "fixed", "value_h": 4.0}}},
    }, crews=1, nodes_per_rack=4)
    doc["cluster"]["rack_parts"] = {"tray": {"count": 1, "effect": "node_down", "failure": never,
                                             "repair": {"time": {"dist": "fixed", "value_h": 2.0}}}}
    doc["maintenance"]["dispatch"] = {"ageing_h": ageing_h}
    return doc


def _dispatch_run(s: Settings, ageing_h: float) -> pd.DataFrame:
    """Inject: PSU of node 0 at 0 (the technician busy 0–1), PSU of node 1 at 0.2 (0 GPUs), board of
    node 2 at 0.3 (8 GPUs), the tray at 0.4 (32 GPUs), boards of nodes 0, 1, 3 at 0.5 (8 GPUs each)."""
    from twin.sim import Model

    sc = load_case_doc(dispatch_doc(ageing_h), s)
    m = Model(sc, 0)
    psu, board, tray = m.parts["psu"], m.parts["board"], m.facility["tray"]
    psu.reschedule(0, 0.0)
    psu.reschedule(6, 0.2)
    board.reschedule(2, 0.3)
    tray.reschedule(0, 0.4)
    for node in (0, 1, 3):
        board.reschedule(node, 0.5)
    m.run()
    return m.result().tables["tickets"].set_index("path")


def dispatch_impact(s: Settings) -> list[CaseResult]:
    """Dispatch by impact, deterministic (to 1e-9): with one technician busy until 1 h, a queued rack
    tray (32 GPUs) is served before a board (8 GPUs) queued earlier and before a PSU (0 GPUs) queued
    earlier still. With ageing A = 5 h the PSU's ticket, queued at 0.2 h, ages at 5.2 h while the board
    of node 2 (3–7 h) is in progress and is served next at 7 h: a wait of 6.8 h, within the stated bound
    A + the longest repair in progress (4 h); without ageing it waits behind three more boards (18.8 h)."""
    late = _dispatch_run(s, 1000.0)
    aged = _dispatch_run(s, 5.0)
    tray, board2, psu1 = "hall.rack00.tray0", "hall.rack00.node002.board0", "hall.rack00.node001.psu0"
    impacts_ok = (late.loc[tray, "impact_gpus"] == 32 and late.loc[board2, "impact_gpus"] == 8
                  and late.loc[psu1, "impact_gpus"] == 0)
    out = [
        result("dispatch_impact", "start of the tray's repair (32 GPUs) queued after a board and a PSU (h)", 1.0,
               Exact(float(late.loc[tray, "start_h"]), 1e-9), s, "served first when the technician frees at 1 h",
               wrong={"FIFO: after the PSU (1 h) and the board (4 h)": 6.0},
               invariants={"impacts read from the state: 32, 8, 0 GPUs": impacts_ok}, sample="exact"),
        result("dispatch_impact", "start of the board's repair (8 GPUs) queued before the tray (h)", 3.0,
               Exact(float(late.loc[board2, "start_h"]), 1e-9), s, "after the tray (1–3 h)",
               wrong={"FIFO: after the PSU": 2.0}, sample="exact"),
    ]
    A, longest = 5.0, 4.0  # noqa: N806 (the ageing A of the case's text)
    wait = float(aged.loc[psu1, "start_h"] - aged.loc[psu1, "spare_h"])
    no_age = float(late.loc[psu1, "start_h"] - late.loc[psu1, "spare_h"])
    out.append(result(
        "dispatch_impact", f"wait of a 0-GPU ticket with ageing A = {A:g} h behind a stream of 8-GPU tickets (h)",
        7.0 - 0.2, Exact(wait, 1e-9), s, "ages at 5.2 h, served when the repair in progress ends (7 h)",
        wrong={"no ageing: after every board": no_age, "ageing pre-empts the repair in progress": A},
        invariants={"wait ≤ A + the longest repair in progress": wait <= A + longest,
                    "without ageing it waits longer than the bound": no_age > A + longest},
        sample="exact"))
    return out


# ---- common-cause failures: 1-of-2 with a β-factor -------------------------------------------

def _beta_chain_unavailability(lam: float, mu: float, beta: float, crews: int, common_rate: float) -> float:
    """Unavailability of 1-of-2 with units failing alone at (1 − β)λ, a common event at ``common_rate``
    failing every working unit, and ``crews`` crews (the 3-state chain solved numerically): the
    reference's own chain, and its wrong variants."""
    q = np.zeros((3, 3))  # state = units failed
    q[0, 1] = 2 * (1 - beta) * lam
    q[0, 2] = common_rate
    q[1, 2] = (1 - beta) * lam + common_rate
    q[1, 0] = mu
    q[2, 1] = min(2, crews) * mu
    np.fill_diagonal(q, -q.sum(axis=1))
    a = np.vstack([q.T, np.ones(3)])
    p = np.linalg.lstsq(a, np.array([0.0, 0.0, 0.0, 1.0]), rcond=None)[0]
    return float(p[2])


def common_cause(s: Settings) -> list[CaseResult]:
    """1-of-2 redundant units with β-factor common-cause failures and one crew (each failed unit its
    own ticket), against U = [βρ + (2 − β)ρ²]/[1 + 2ρ + (2 − β)ρ²] (λ = 0.2/h, μ = 1/h, β = 0.1:
    0.06504). Wrong models: independent failures (β = 0: 0.05405), the common event at 2βλ (counted
    per unit), two crews."""
    lam, mu, beta = 0.2, 1.0, 0.1
    reps = s.reps(10, 40)
    days = 100.0 if s.quick else 400.0
    doc = group_doc(2, 1, 1, lam, mu, days)
    doc["name"] = "common-cause-1-of-2"
    doc["cluster"]["node"]["parts"]["psu"]["common_cause_beta"] = beta
    warm = 48.0
    sc = load_case_doc(doc, s)
    H = sc.horizon_h
    u, ccf_share, both = [], [], True
    for rep in range(reps):
        res = run_replication(sc, rep)
        u.append(down_fraction(res.tables["node_intervals"], 0, warm, H))
        m = res.metrics
        ccf_share.append(m.get("ccf_failures.psu", 0.0) / m["failures.psu"])
        t = res.tables["tickets"]
        both &= bool(len(t) == 0 or len(t) <= m["failures.psu"])
    expected = float(cf.one_of_two_beta_unavailability(lam, mu, beta))
    chain = _beta_chain_unavailability(lam, mu, beta, 1, beta * lam)
    return [result(
        "common_cause", f"unavailability, 1-of-2, β = {beta:g}, one crew, λ={lam:g}/h, μ={mu:g}/h", expected,
        TMean(np.array(u)), s, f"β-factor chain, warm-up {warm:g} h discarded",
        wrong={"independent failures (β = 0)": float(cf.one_of_two_beta_unavailability(lam, mu, 0.0)),
               "common event at 2βλ (counted per unit)": _beta_chain_unavailability(lam, mu, beta, 1, 2 * beta * lam),
               "two crews": _beta_chain_unavailability(lam, mu, beta, 2, beta * lam)},
        invariants={"closed form equals the chain": abs(chain - expected) < 1e-12,
                    "a ticket per failed unit at most": both,
                    "common events fail units (share of failures > 5 %)": float(np.mean(ccf_share)) > 0.05})]


# ---- latent failures: a periodically tested standby unit --------------------------------------

def standby_doc(name: str, mtbf_h: float, test_h: float, repair_h: float, days: float) -> Doc:
    """One node on feed A (topology n) whose only failing unit is the generator, a standby unit whose
    failures are latent until a periodic test; no utility outages (no demands), one crew 24x7."""
    doc = base_doc(name, days, {
        "psu": {"count": 2, "required": 2, "effect": "redundant", "failure": {"dist": "fixed", "value_h": 1e15},
                "repair": {"hot_swap": True}},
    })
    doc["power"] = {
        "topology": "n", "capacity_w": 6000,
        "utility": {"outages_per_year": 0},
        "ups": {"failure": None}, "switchboard": {"failure": None}, "pdu": {"failure": None},
        "generator": {"failure": {"dist": "exponential", "mean_h": mtbf_h}, "latent_test_interval_h": test_h,
                      "repair": {"time": {"dist": "fixed", "value_h": repair_h}}},
    }
    return doc


def unit_down_fraction(tickets: pd.DataFrame, part: str, start_h: float, end_h: float) -> float:
    """Share of [start_h, end_h) that units of ``part`` spent failed, from their tickets (failure to
    return; a ticket open at the horizon runs to its end). Meaningful for one unit of the part."""
    t = tickets[tickets["part"] == part]
    back = t["back_h"].to_numpy(dtype=float)
    back = np.where(np.isnan(back), end_h, back)
    s_ = np.maximum(t["fail_h"].to_numpy(dtype=float), start_h)
    e_ = np.minimum(back, end_h)
    return float(np.clip(e_ - s_, 0.0, None).sum() / (end_h - start_h))


def standby_test(s: Settings) -> list[CaseResult]:
    """A standby unit (generator) with latent failures at λ, tested every T (λT = 0.1), no demands:
    with instant test and repair U = 1 − (1 − e^(−λT))/(λT) = 0.04837 (not λT/2 = 0.05); with a fixed
    repair D = 0.2T after a test finds it failed, the two-state chain at the tests (about λD more).
    The first 10 test intervals are discarded (the chain starts "up", not in its stationary mix)."""
    mtbf, T = 1000.0, 100.0
    reps = s.reps(10, 40)
    days = 3000.0 if s.quick else 20000.0
    out = []
    for D in (0.0, 20.0):  # noqa: N806 (the repair time D of the docstring)
        doc = standby_doc(f"standby-test-D{D:g}", mtbf, T, D, days)
        sc = load_case_doc(doc, s)
        H = sc.horizon_h
        warm = 10 * T
        u, at_test, demand, fails = [], 0.0, 0.0, 0.0
        for rep in range(reps):
            res = run_replication(sc, rep)
            u.append(unit_down_fraction(res.tables["tickets"], "generator", warm, H))
            at_test += res.metrics["latent_found_test.generator"]
            demand += res.metrics["latent_found_demand.generator"]
            fails += res.metrics["failures.generator"]
        lam = 1.0 / mtbf
        expected = float(cf.tested_standby_unavailability(lam, T, D))
        wrong = {"λT/2 + λD (the rare-event approximation)": lam * T / 2 + lam * D}
        if D > 0:
            wrong["repair time forgotten"] = float(cf.tested_standby_unavailability(lam, T, 0.0))
        else:
            wrong["failures detected at once: U = 0"] = 0.0
        out.append(result(
            "standby_test", f"unavailability, standby unit, λT = {lam * T:g}, repair D = {D:g} h", expected,
            TMean(np.array(u)), s, "periodic test, latent failures, warm-up 10 tests",
            wrong=wrong,
            invariants={"no demands: every latent failure found at a test": demand == 0 and at_test > 0,
                        "every failure found (bar those after the last test)": fails - at_test <= reps,
                        "over 50 failures per replication": fails > 50 * reps}))
    return out
