"""Storage cases (issue 29; docs/guide/storage.md): the data stall of jobs whose read demand exceeds their
share (deterministic), a metadata outage stopping exactly the jobs that read or write during it
(deterministic), and the storage's availability with k of n servers against the birth–death chain
(statistical).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from twin.physics import closed_forms as cf
from twin.validation.framework import (CaseResult, Doc, Exact, Settings, TMean, bonferroni_confidence, result,
                                       run_doc)


def storage_doc(name: str, nodes: int, horizon_h: float, jobs: list[dict[str, Any]],
                storage: dict[str, Any] | None = None, read_gb_per_s: float = 100.0) -> Doc:
    """``nodes`` nodes of 8 GPUs without node parts, no detection delay, the given jobs and storage section."""
    doc: Doc = {
        "name": name,
        "horizon_days": horizon_h / 24.0,
        "cluster": {"racks": 1, "nodes_per_rack": nodes, "node": {"gpus": 8, "parts": {}}},
        "maintenance": {"detection": {"dist": "fixed", "value_h": 0.0}},
        "workload": {"scheduler": {"policy": "fifo", "hot_spares": 0},
                     "storage": {"read_gb_per_s": read_gb_per_s, "write_gb_per_s": 50.0}, "jobs": jobs},
    }
    if storage is not None:
        doc["storage"] = storage
    return doc


def _job_rows(res: Any) -> pd.DataFrame:
    j = res.tables["jobs"]
    return j[j.record == "job"].set_index("name")


# ---- a data stall: progress rate = share / demand ----------------------------------------------------

def data_stall(s: Settings) -> list[CaseResult]:
    """Two 16-GPU jobs of 100 ideal hours read 16 and 160 GB/s at full speed from a 100 GB/s storage, no
    failures, no checkpoints. Max-min fair shares: the small job gets its 16 GB/s (rate 1, ends at 100 h), the
    large one the 84 GB/s left (rate 84/160 = share/demand) until then, and all 100 GB/s after (rate 0.625):
    it ends at 100 + (100 − 52.5)/0.625 = 176 h."""
    R, d_small, d_large, work = 100.0, 16.0, 160.0, 100.0
    doc = storage_doc("validation-data-stall", 4, 400.0, [
        {"name": "small", "gpus": 16, "work_h": work, "data": {"read_mb_per_s_per_gpu": d_small * 1000 / 16}},
        {"name": "large", "gpus": 16, "work_h": work, "data": {"read_mb_per_s_per_gpu": d_large * 1000 / 16}},
    ], read_gb_per_s=R)
    res = run_doc(doc, 1, s)[0]
    rows = _job_rows(res)
    r1 = (R - d_small) / d_large
    ref = work + (work - r1 * work) / (R / d_large)
    got = float(rows.loc["large", "end_h"])
    sj = res.tables["storage_jobs"].set_index("name")
    stall_ref = (1 - r1) * work + (1 - R / d_large) * (ref - work)
    return [result("storage_data_stall", "end of a job reading 160 GB/s next to one reading 16 GB/s, 100 GB/s (h)",
                   ref, Exact(got, 1e-9 * ref), s, "by hand: max-min fair shares, rate = share / demand",
                   sample="exact",
                   wrong={"equal shares (50 GB/s each)": work + (work - 50.0 / d_large * work) / (R / d_large),
                          "no data stall": work,
                          "the other job's reads ignored (rate R / demand throughout)": work / (R / d_large)},
                   invariants={"the small job gets its demand: ends at 100 h":
                                   abs(float(rows.loc["small", "end_h"]) - work) < 1e-9,
                               "the data-stall hours are the running time lost": abs(
                                   float(sj.loc["large", "data_stall_h"]) - stall_ref) < 1e-9 * ref,
                               "goodput + mechanisms = 1": abs(res.metrics["goodput"] + sum(
                                   v for k, v in res.metrics.items() if k.startswith("goodput.mechanism.")) - 1) < 1e-9})]


# ---- a metadata outage stops exactly the jobs that read or write during it ----------------------------

OUTAGE = {"fail_h": 30.0, "repair_h": 5.0, "write_h": 0.5, "work_h": 50.0, "due_every_h": 32.0,
          "writing_every_h": 29.8, "horizon_h": 64.0}
"""The outage case: the metadata service fails at 30 h (a fixed lifetime: next at 65 h, after the horizon)
and is back 5 h later; jobs of 50 ideal hours; checkpoint writes take 0.5 h."""


def outage_doc() -> Doc:
    """Four 8-GPU jobs, one per node: ``reader`` reads data (1 MB/s per GPU, no checkpoint), ``idle_io``
    neither reads nor checkpoints, ``due`` checkpoints (sync) every 32 h of progress (due during the
    outage), ``writing`` every 29.8 h (its first write is under way when the outage begins)."""
    p = OUTAGE
    ck = {"mode": "sync", "write_h": p["write_h"]}
    w = p["work_h"]
    return storage_doc("validation-storage-outage", 4, p["horizon_h"], [
        {"name": "reader", "gpus": 8, "work_h": w, "data": {"read_mb_per_s_per_gpu": 1.0}},
        {"name": "idle_io", "gpus": 8, "work_h": w},
        {"name": "due", "gpus": 8, "work_h": w, "checkpoint": {"interval_h": p["due_every_h"], **ck}},
        {"name": "writing", "gpus": 8, "work_h": w, "checkpoint": {"interval_h": p["writing_every_h"], **ck}},
    ], storage={"metadata": {"failure": {"dist": "fixed", "value_h": p["fail_h"]},
                             "repair": {"time": {"dist": "fixed", "value_h": p["repair_h"]}}}})


def metadata_outage(s: Settings) -> list[CaseResult]:
    """A metadata outage of 5 h from 30 h stops exactly the jobs that read or write during it, for its
    duration (jobs of W = 50 ideal hours, writes of 0.5 h, each checkpointing job writing one checkpoint
    before its final one): the data reader stalls 30–35 h (ends at W + 5); the job that neither reads nor
    writes is not touched (ends at W); the job whose checkpoint falls due at 32 h waits to 35 h, then writes
    (ends at W + 2 × 0.5 + 3); the job writing since 29.8 h fails its write at 30 h, waits the whole outage
    and writes again from 35 h (ends at W + 2 × 0.5 + 0.2 + 5)."""
    p = OUTAGE
    t, d, w, W = p["fail_h"], p["repair_h"], p["write_h"], p["work_h"]  # noqa: N806 (the work W of the docstring)
    res = run_doc(outage_doc(), 1, s)[0]
    rows = _job_rows(res)
    sj = res.tables["storage_jobs"].set_index("name")
    stopped = {"reader": d, "due": t + d - p["due_every_h"], "writing": d}
    ends = {"reader": W + d, "idle_io": W, "due": W + 2 * w + stopped["due"],
            "writing": W + 2 * w + (t - p["writing_every_h"]) + d}
    out = []
    for name, ref in ends.items():
        got = float(rows.loc[name, "end_h"])
        wrong = ({"the failed write kept (not written again)": ref - w} if name == "writing" else
                 {"stopped for the whole outage": ref + d - stopped[name]} if name == "due" else
                 {"not stopped": W} if name == "reader" else {"stopped for the outage": W + d})
        out.append(result("storage_outage", f"end of job {name!r} with a 5 h metadata outage at 30 h (h)", ref,
                          Exact(got, 1e-9 * ref), s, "by hand: stopped for the outage if it reads or writes",
                          sample="exact", wrong=wrong))
    m = res.metrics
    gpus_h = 4 * 8 * p["horizon_h"]
    out[0].invariants.update({
        "the stopped jobs are exactly reader, due, writing": set(sj.index[sj["storage_stops"] > 0]) == set(stopped),
        "each stopped for its share of the outage": all(abs(float(sj.loc[n, "outage_h"]) - h) < 1e-9
                                                        for n, h in stopped.items()),
        "storage downtime = the outage": abs(m["storage.downtime_h"] - d) < 1e-12 and m["storage.outages"] == 1,
        "goodput + mechanisms = 1": abs(m["goodput"] + sum(v for k, v in m.items()
                                                           if k.startswith("goodput.mechanism.")) - 1) < 1e-9,
        "the outage bucket is the stopped GPU-hours": abs(
            m["goodput.mechanism.storage_outage"] * gpus_h - 8 * sum(stopped.values())) < 1e-9 * gpus_h,
    })
    out[0].passed = out[0].passed and all(out[0].invariants.values())
    return out


# ---- k of n storage servers: availability ---------------------------------------------------------------

def down_share(outages: pd.DataFrame, start_h: float, end_h: float) -> float:
    """Share of [start_h, end_h) inside the outages (start_h, end_h columns)."""
    s = np.maximum(outages["start_h"].to_numpy(), start_h)
    e = np.minimum(outages["end_h"].to_numpy(), end_h)
    return float(np.clip(e - s, 0.0, None).sum() / (end_h - start_h))


def servers_k_of_n(s: Settings) -> list[CaseResult]:
    """Six storage servers, four needed (exponential failures λ = 0.1/h, repairs μ = 1/h, one crew, no
    detection delay): the storage's unavailability (fewer than four up) after a warm-up of 48 h against the
    birth–death chain of k-of-n with r crews. Full: 40 replications of 420 days (half-width about 4.7 % of
    the reference at the Bonferroni level of 50 checks, an invariant); quick: 10 of 90."""
    n, k, lam, mu, crews = 6, 4, 0.1, 1.0, 1
    reps = s.reps(10, 40)
    days = 90.0 if s.quick else 420.0
    doc = storage_doc("validation-storage-k-of-n", 1, days * 24.0, [], storage={"servers": {
        "count": n, "required": k, "failure": {"dist": "exponential", "mean_h": 1 / lam},
        "repair": {"time": {"dist": "exponential", "mean_h": 1 / mu}}}})
    doc["maintenance"]["crews"] = {"crew": {"count": crews, "shift": "24x7"}}
    warm = 48.0
    u = []
    causes: set[str] = set()
    for res in run_doc(doc, reps, s):
        o = res.tables["storage_outages"]
        causes |= set(o["cause"].astype(str))
        u.append(down_share(o, warm, days * 24.0))
    ref = 1 - float(cf.k_of_n_availability(n, k, lam, mu, crews))
    est = TMean(np.array(u))
    _, lo, hi = est.interval(bonferroni_confidence(50))
    return [result("storage_k_of_n", f"storage unavailability, {k}-of-{n} servers, {crews} crew, λ={lam:g}/h, "
                   f"μ={mu:g}/h", ref, est, s, f"birth–death chain, warm-up {warm:g} h discarded",
                   wrong={"two crews": 1 - float(cf.k_of_n_availability(n, k, lam, mu, 2)),
                          "every server needed (6 of 6)": 1 - float(cf.k_of_n_availability(n, n, lam, mu, crews))},
                   invariants={"every outage is the servers'": causes <= {"storage_server"},
                               "half-width ≤ 5 % of the reference at 50 checks' Bonferroni level"
                               if not s.quick else "quick: half-width not checked": s.quick or (hi - lo) / 2 <= 0.05 * ref})]


__all__ = ["data_stall", "metadata_outage", "outage_doc", "servers_k_of_n", "storage_doc"]
