"""The workload's result tables and metrics (``jobs``, ``queue_by_size``, ``advisories``,
``storage_jobs``, ``elastic``, ``step_breakdown``; goodput by mechanism), read from the job records."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from twin.model.causes import CauseKind, DownCause
from twin.model.component import ResultsSoFar
from twin.model.workload.base import WorkloadBase
from twin.model.workload.jobs import DONE, QUEUED, STEP_COLUMNS, STEP_COMPONENTS, Job
from twin.physics.jobrate import parallel_breakdown


def jobs_table(wl: WorkloadBase, H: float) -> pd.DataFrame:
    """The ``jobs`` table: a row per job, then a row per interruption. Built by columns from the
    job records (a trace can bring a million jobs: no dict or tuple per row)."""
    jl = wl.jobs
    n = len(jl)
    ints = wl.interruptions
    k = len(ints)

    def col(get: Any, dtype: Any = float) -> np.ndarray:
        return np.fromiter((get(j) for j in jl), dtype=dtype, count=n)

    def ettr(j: Job) -> float:
        end = j.acct.end_h if j.state == DONE else H
        wall = end - j.acct.first_start_h if not math.isnan(j.acct.first_start_h) else 0.0
        return j.progress_h / wall if wall > 0 else math.nan

    nan_k = np.full(k, math.nan)
    i_col = list(zip(*ints)) if k else [()] * 7  # jid, name, time, cause, planned, lost, nodes

    def floats(get: Any, at_interruptions: Any = None) -> np.ndarray:
        tail = nan_k if at_interruptions is None else np.asarray(at_interruptions, dtype=float)
        return np.concatenate((col(get), tail))

    def integers(get: Any, at_interruptions: Any = None) -> Any:
        vals = np.concatenate((col(get, np.int64), np.asarray(at_interruptions if at_interruptions is not None
                                                              else np.zeros(k), dtype=np.int64)))
        mask = np.zeros(n + k, dtype=bool)
        if at_interruptions is None:
            mask[n:] = True
        return pd.arrays.IntegerArray(vals, mask)

    names = np.empty(n + k, dtype=object)
    names[:n] = [j.spec.name for j in jl]
    names[n:] = i_col[1]
    cause = np.empty(n + k, dtype=object)
    cause[:n] = ""
    cause[n:] = [c.label for c in i_col[3]]
    data: dict[str, Any] = {
        "record": pd.Categorical.from_codes(np.r_[np.zeros(n, np.int8), np.ones(k, np.int8)],
                                            categories=["job", "interruption"]),
        "job": integers(lambda j: j.spec.jid, i_col[0]),
        "name": names,
        "gpus": integers(lambda j: j.spec.gpus),
        "nodes": integers(lambda j: j.spec.nodes_needed, i_col[6]),
        "work_h": floats(lambda j: j.spec.work_h),
        "submit_h": floats(lambda j: j.spec.submit_h),
        "first_start_h": floats(lambda j: j.acct.first_start_h),
        "end_h": floats(lambda j: j.acct.end_h),
        "done": np.concatenate((col(lambda j: j.state == DONE, bool), np.zeros(k, dtype=bool))),
        "kept_h": floats(lambda j: j.progress_h),
        "lost_h": floats(lambda j: j.acct.lost_h, i_col[5]),
        "made_h": floats(lambda j: j.acct.made_h),
        "run_h": floats(lambda j: j.acct.run_h),
        "checkpoint_h": floats(lambda j: j.acct.ckpt_h),
        "restart_h": floats(lambda j: j.acct.restart_h),
        "queue_wait_h": floats(lambda j: j.acct.wait_h),
        "interruptions": integers(lambda j: j.acct.interruptions),
        "planned_interruptions": integers(lambda j: j.acct.planned_interruptions),
        "checkpoints": integers(lambda j: j.acct.checkpoints),
        "ettr": floats(ettr),
        "time_h": np.concatenate((np.full(n, math.nan), np.asarray(i_col[2], dtype=float))),
        "cause": cause,
        "planned": np.concatenate((np.zeros(n, dtype=bool), np.asarray(i_col[4], dtype=bool))),
    }
    return pd.DataFrame(data, columns=JOB_COLUMNS)

def results(wl: WorkloadBase, so_far: ResultsSoFar) -> tuple[dict[str, float], dict[str, pd.DataFrame]]:
    H = wl.engine.horizon_h
    installed = wl.cluster.n_nodes * wl.gpn * H
    jobs = jobs_table(wl, H)
    jr = [j for j in wl.jobs]
    useful = sum(j.progress_h * j.spec.gpus for j in jr)
    lost = sum(j.acct.lost_h * j.spec.gpus for j in jr)
    made = sum(j.acct.made_h * j.spec.gpus for j in jr)
    run = sum(j.acct.run_h * j.spec.gpus for j in jr)
    ck = sum(j.acct.ckpt_h * j.spec.gpus for j in jr)
    rs = sum(j.acct.restart_h * j.spec.gpus for j in jr)
    rc = sum(j.acct.reconfig_h * j.spec.gpus for j in jr) if wl._has_elastic else 0.0
    blocked = sum(j.acct.blocked_h * j.spec.gpus for j in jr) if wl.storage is not None else 0.0
    down = wl.model.recorder.state_hours("down") * wl.gpn
    slow = run - made
    idle = installed - down - run - ck - rs - rc - blocked
    m: dict[str, float] = {
        "useful_gpu_hours": useful,
        "goodput": useful / installed,
        "goodput.useful": useful / installed,
        "goodput.lost": lost / installed,
        "goodput.checkpoint": ck / installed,
        "goodput.restart": rs / installed,
        "goodput.slowdown": slow / installed,
        "goodput.down": down / installed,
        "goodput.idle": idle / installed,
        "utilisation": (run + ck + rs + rc + blocked) / installed,
        "jobs_submitted": float(len(jr)),
        "jobs_completed": float(sum(j.state == DONE for j in jr)),
        "interruptions": float(len(wl.interruptions)),
        "interruptions.planned": float(sum(1 for r in wl.interruptions if r.planned)),
        "interruptions.unplanned": float(sum(1 for r in wl.interruptions if not r.planned)),
        "lost_gpu_hours": lost,
        "checkpoint_gpu_hours": ck,
        "restart_gpu_hours": rs,
    }
    causes: dict[str, int] = {}
    for r in wl.interruptions:
        causes[r.cause.label] = causes.get(r.cause.label, 0) + 1
    for c, k in sorted(causes.items()):
        m[f"interruptions.{c}"] = float(k)
    m.update(goodput_by_mechanism(wl, jr, installed, idle, ck, rs, rc, blocked))
    warm = wl.spec.warmup_h
    waits = [j.acct.wait_h for j in jr if j.spec.submit_h >= warm and not math.isnan(j.acct.first_start_h)]
    m["queue_wait_h.mean"] = float(np.mean(waits)) if waits else math.nan
    m["queue_wait_h.jobs"] = float(len(waits))
    if jr:
        big = max(jr, key=lambda j: (j.spec.gpus, -j.spec.jid))
        row = jobs[(jobs.record == "job") & (jobs.job == big.spec.jid)].iloc[0]
        m["ettr.max_job"] = float(row.ettr)
        m["max_job.kept_h"] = big.progress_h
        m["max_job.interruptions"] = float(big.acct.interruptions)
    by_size = queue_by_size(jr, warm)
    for row in by_size.itertuples():
        m[f"queue_wait_h.mean.nodes_le_{row.nodes_max}"] = float(row.mean_wait_h)
    m["starvation.advisories"] = float(len(wl.advisories))
    m["starvation.unreserved_h"] = max((j.acct.unreserved_h for j in jr), default=0.0)
    adv = pd.DataFrame(wl.advisories, columns=ADVISORY_COLUMNS).astype(
        {"time_h": float, "job": "int64", "name": object, "nodes": "int64", "usable_nodes": "int64",
         "waited_h": float, "unreserved_h": float, "text": object})
    tables = {"jobs": jobs, "queue_by_size": by_size, "advisories": adv}
    if wl.storage is not None:
        sj = storage_jobs(jr)
        tables["storage_jobs"] = sj
        m["storage.data_stall_gpu_hours"] = float(sj["data_stall_gpu_hours"].sum())
        m["storage.outage_gpu_hours"] = float(sj["outage_gpu_hours"].sum())
        m["storage.jobs_stopped"] = float((sj["storage_stops"] > 0).sum())
        m["storage.data_jobs"] = float((sj["read_gb_per_s"] > 0).sum())
        m["goodput.storage_wait"] = blocked / installed
    if wl._has_elastic:
        el = pd.DataFrame(wl.elastic_events, columns=ELASTIC_COLUMNS).astype(
            {"time_h": float, "job": "int64", "name": object, "event": object, "cause": object,
             "replicas_before": "int64", "replicas_after": "int64", "replicas_full": "int64",
             "reconfigure_h": float})
        tables["elastic"] = el
        m["goodput.reconfigure"] = rc / installed
        m["reconfigure_gpu_hours"] = rc
        for kind in ("start", "shrink", "swap", "grow"):
            m[f"elastic.{kind}s"] = float((el.event == kind).sum())
        m["elastic.reduced_hours"] = sum(j.acct.reduced_h for j in jr)
        m["elastic.kept_gpu_hours"] = sum(j.acct.kept_h * j.spec.gpus for j in jr)
    laid = [j for j in jr if j.acct.bd_acc is not None and j.acct.bd_acc.sum() > 0]
    if laid:
        steps = step_table(laid)
        tables["step_breakdown"] = steps
        w = steps.gpus * steps.run_h
        for c in STEP_COMPONENTS:
            m[f"step.share.{c}"] = float((steps[f"share_{c}"] * w).sum() / w.sum())
        m["step.mean_s"] = float((steps.mean_step_s * w).sum() / w.sum())
        m["step.ideal_s"] = float((steps.ideal_step_s * w).sum() / w.sum())
    return m, tables

def step_table(laid: list[Job]) -> pd.DataFrame:
    """The run-time limiter of each layout job that ran: its failure-free step time, its mean step
    time over its running hours, each component's share of it (thermal and power throttling in
    ``throttle``, a degraded fabric or NVLink in ``dp``, ``pp`` and ``tp``) and the largest
    non-compute component (``compute`` when there is none)."""
    rows = []
    for j in laid:
        acc = j.acct.bd_acc
        assert acc is not None
        hours = float(acc.sum())
        shares = acc / hours
        lay = j.spec.step.layout
        assert lay is not None
        other = {c: float(v) for c, v in zip(STEP_COMPONENTS, shares) if c != "compute"}
        best = max(other, key=lambda c: other[c])
        limiter = best if other[best] > 0.0 else "compute"
        ideal = parallel_breakdown(j.spec.step, 1.0, j.bd_nic, 1.0).total_s
        rows.append([j.spec.jid, j.spec.name, j.spec.gpus, lay.tp, lay.pp, lay.dp, ideal, j.acct.step_acc / hours, hours,
                     *shares.tolist(), limiter])
    return pd.DataFrame(rows, columns=STEP_COLUMNS).astype(
        {"job": "int64", "name": object, "gpus": "int64", "tp": "int64", "pp": "int64", "dp": "int64",
         "limiter": object})

def queue_by_size(jr: list[Job], warm: float) -> pd.DataFrame:
    """Queue wait by job size (nodes in power-of-two classes 1, 2, 3-4, 5-8, ...), of jobs submitted
    after the warm-up: the mean, 95th percentile and largest wait of those that started, and the
    jobs still queued at the horizon with the longest wait so far (a starved job shows there)."""
    sizes = np.fromiter((j.spec.nodes_needed for j in jr if j.spec.submit_h >= warm), dtype=np.int64)
    waits = np.fromiter((j.acct.wait_h for j in jr if j.spec.submit_h >= warm), dtype=float)
    started = np.fromiter((not math.isnan(j.acct.first_start_h) for j in jr if j.spec.submit_h >= warm), dtype=bool)
    queued = np.fromiter((j.state == QUEUED and not j.started_once for j in jr if j.spec.submit_h >= warm), dtype=bool)
    cls = np.ceil(np.log2(np.maximum(sizes, 1))).astype(np.int64) if len(sizes) else sizes
    rows = []
    for k in np.unique(cls).tolist():
        sel = cls == k
        w = waits[sel & started]
        q = waits[sel & queued]
        rows.append((1 if k == 0 else 2 ** (k - 1) + 1, 2 ** k, int(sel.sum()), int(len(w)),
                     float(w.mean()) if len(w) else math.nan, float(np.percentile(w, 95)) if len(w) else math.nan,
                     float(w.max()) if len(w) else math.nan, int(len(q)), float(q.max()) if len(q) else math.nan))
    return pd.DataFrame(rows, columns=QUEUE_BY_SIZE_COLUMNS).astype(
        {"nodes_min": "int64", "nodes_max": "int64", "jobs": "int64", "started": "int64", "mean_wait_h": float,
         "p95_wait_h": float, "max_wait_h": float, "still_queued": "int64", "longest_queued_h": float})

def storage_jobs(jr: list[Job]) -> pd.DataFrame:
    """Per job that reads training data or was stopped by a storage outage: its demand, its data-stall
    and outage hours and GPU-hours, and the outages that stopped it."""
    rows = [(j.spec.jid, j.spec.name, j.spec.gpus, j.spec.data_gbs, j.acct.slow_data_h, j.acct.slow_data_h * j.spec.gpus,
             j.acct.slow_outage_h + j.acct.blocked_h, (j.acct.slow_outage_h + j.acct.blocked_h) * j.spec.gpus, j.acct.storage_stops)
            for j in jr if j.spec.data_gbs or j.acct.storage_stops or j.acct.blocked_h or j.acct.slow_outage_h]
    return pd.DataFrame(rows, columns=STORAGE_JOB_COLUMNS).astype(
        {"job": "int64", "name": object, "gpus": "int64", "read_gb_per_s": float, "data_stall_h": float,
         "data_stall_gpu_hours": float, "outage_h": float, "outage_gpu_hours": float, "storage_stops": "int64"})

def goodput_by_mechanism(wl: WorkloadBase, jr: list[Job], installed: float, idle: float, ck: float,
                          rs: float, rc: float = 0.0, blocked: float = 0.0) -> dict[str, float]:
    """Installed GPU-hours not turned into kept progress, by the mechanism that cost them, each from its
    own events, as shares of the installed GPU-hours (``goodput`` + the ``goodput.mechanism.*``
    buckets = 1, no residual):

    * slowdown (running time at a rate below 1): split by the sequential rule of ``_compute_rate``
      into ``thermal_slowdown``, ``fail_slow`` (parts with effect ``degraded``), ``power_cap`` and
      ``fabric_slowdown``;
    * node-down time (the recorder's down intervals, by the cause that took the node down) and work
      lost at interruptions (by the interruption's cause), by cause: ``thermal_trip``,
      ``power_outage`` (``power:*``), ``maintenance`` (``planned*``), ``failure.<part>`` for each node
      part (``repair:<part>`` drains included), ``failure.other`` for any other cause (rack, fabric,
      leaks, link flaps, burn-in); nodes drained for a cooling shortfall (``cooling_drain``) count under
      ``thermal_trip``;
    * ``checkpoint``, ``restart`` (all restarts), ``reconfigure`` (elastic jobs' pauses to reshape; with
      elastic jobs only) and ``idle`` (installed, up and not in a job);
    * with the storage service: ``data_stall`` (running time lost to a data share below the demand) and
      ``storage_outage`` (running time of data-reading jobs stalled, and checkpoint writes and restarts
      waiting, during storage outages).

    ``goodput.slowdown.{thermal,fail_slow,power,fabric}``, ``goodput.down.<cause>`` and ``goodput.lost.<cause>``
    give the raw parts."""
    node_parts = list(wl.sc.cluster.node.parts)

    def mech(cause: DownCause) -> str:
        if cause.kind in (CauseKind.THERMAL_TRIP, CauseKind.COOLING_DRAIN):  # (the operator drained it for cooling)
            return "thermal_trip"
        if cause.kind is CauseKind.POWER:
            return "power_outage"
        if cause.planned:
            return "maintenance"
        part = cause.part if cause.kind is CauseKind.REPAIR else cause.label  # a part failed, or drained for it
        return f"failure.{part}" if part in node_parts else "failure.other"

    def recorded(label: str) -> DownCause:
        c = DownCause.from_label(label)  # every recorded cause was made in this process (a look-up, no parse)
        assert c is not None, f"a recorded down cause no model made: {label!r}"
        return c

    out: dict[str, float] = {}
    buckets = {k: 0.0 for k in ("thermal_slowdown", "fail_slow", "power_cap", "fabric_slowdown", "thermal_trip",
                                "power_outage", "maintenance", *(f"failure.{p}" for p in node_parts),
                                "failure.other")}
    if wl.domains is not None:  # NVLink domains: switch trays down, placements in small blocks
        sn = sum(j.acct.slow_nvlink_h * j.spec.gpus for j in jr)
        sl = sum(j.acct.slow_place_h * j.spec.gpus for j in jr)
        out["goodput.slowdown.nvlink"] = sn / installed
        out["goodput.slowdown.placement"] = sl / installed
        buckets["nvlink_slowdown"] = sn
        buckets["placement"] = sl
    st = sum(j.acct.slow_thermal_h * j.spec.gpus for j in jr)
    sfs = sum(j.acct.slow_failslow_h * j.spec.gpus for j in jr)
    sp = sum(j.acct.slow_power_h * j.spec.gpus for j in jr)
    sf = sum(j.acct.slow_fabric_h * j.spec.gpus for j in jr)
    out["goodput.slowdown.thermal"] = st / installed
    out["goodput.slowdown.fail_slow"] = sfs / installed
    out["goodput.slowdown.power"] = sp / installed
    out["goodput.slowdown.fabric"] = sf / installed
    buckets["thermal_slowdown"] += st
    buckets["fail_slow"] += sfs
    buckets["power_cap"] += sp
    buckets["fabric_slowdown"] += sf
    if wl.storage is not None:
        sd = sum(j.acct.slow_data_h * j.spec.gpus for j in jr)
        so = sum(j.acct.slow_outage_h * j.spec.gpus for j in jr)
        out["goodput.slowdown.data"] = sd / installed
        out["goodput.slowdown.storage_outage"] = so / installed
        buckets["data_stall"] = sd
        buckets["storage_outage"] = so + blocked
    for cause, h in sorted(wl.model.recorder.state_hours_by_cause("down").items()):
        g = h * wl.gpn
        out[f"goodput.down.{cause}"] = g / installed
        buckets[mech(recorded(cause))] += g
    gpus = {j.spec.jid: j.spec.gpus for j in jr}
    lost: dict[DownCause, float] = {}
    for jid, _name, _t, why, _planned, lost_h, _n in wl.interruptions:
        lost[why] = lost.get(why, 0.0) + lost_h * gpus[jid]
    for why, g in sorted(lost.items()):
        out[f"goodput.lost.{why.label}"] = g / installed
        buckets[mech(why)] += g
    buckets["checkpoint"] = ck
    buckets["restart"] = rs
    if wl._has_elastic:
        buckets["reconfigure"] = rc
    buckets["idle"] = idle
    for k, v in buckets.items():
        out[f"goodput.mechanism.{k}"] = v / installed
    return out


JOB_COLUMNS = [
    "record", "job", "name", "gpus", "nodes", "work_h", "submit_h", "first_start_h", "end_h", "done", "kept_h",
    "lost_h", "made_h", "run_h", "checkpoint_h", "restart_h", "queue_wait_h", "interruptions",
    "planned_interruptions", "checkpoints", "ettr", "time_h", "cause", "planned",
]


QUEUE_BY_SIZE_COLUMNS = ["nodes_min", "nodes_max", "jobs", "started", "mean_wait_h", "p95_wait_h", "max_wait_h",
                         "still_queued", "longest_queued_h"]
ELASTIC_COLUMNS = ["time_h", "job", "name", "event", "cause", "replicas_before", "replicas_after", "replicas_full",
                   "reconfigure_h"]
STORAGE_JOB_COLUMNS = ["job", "name", "gpus", "read_gb_per_s", "data_stall_h", "data_stall_gpu_hours", "outage_h",
                       "outage_gpu_hours", "storage_stops"]
ADVISORY_COLUMNS = ["time_h", "job", "name", "nodes", "usable_nodes", "waited_h", "unreserved_h", "text"]
