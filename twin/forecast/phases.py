"""A phased training job in ``twin forecast`` (issue 50 item 1): each segment of the job's phases
(twin/scenario/phases.py: a phase, or one step of its batch ramp) is forecast as a job of its own, on its
own GPUs, for its own tokens at its own step time, and the times to train add up replication by
replication.

Segment k runs the scenario with the followed job replaced by the segment (``gpus``, ``training.tokens_t``,
``step.model`` and ``step.layout``), so its failures are drawn for the segment's job size; it runs with the
scenario's seed for the first segment and a seed derived from (seed, k) for the others (independent
failure histories). Every segment starts from a fresh cluster: parts under repair, the spares' stock
and the queue are not carried from one phase to the next (what a phased forecast leaves out). Without
failures the phased time to train is the sum of the segments' failure-free times exactly.

A replication's row is the sum of its segments' rows (hours, counts), with ``completed`` the least of
theirs and per-segment columns ``phase.<label>.time_to_train_h`` and ``phase.<label>.interruptions``.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any, Callable

import numpy as np
import pandas as pd

from twin.forecast.target import Target, bound_h, target_of, with_horizon
from twin.scenario.loader import Loaded, load_dict

ID_COLUMNS = ("replication", "seed", "scenario", "scenario_hash", "twin_version")


def segment_seed(seed: int, k: int) -> int:
    """The seed of segment ``k``: the scenario's for k = 0, else one derived from (seed, k)."""
    if k == 0:
        return int(seed)
    return int(np.random.SeedSequence([int(seed), int(k)]).generate_state(1)[0])


def segment_loadeds(loaded: Loaded, index: int) -> list[tuple[str, Loaded]]:
    """(label, the scenario with job ``index`` replaced by the segment) for each segment of its phases."""
    sc = loaded.scenario
    assert sc.workload is not None
    job = sc.workload.jobs[index]
    out: list[tuple[str, Loaded]] = []
    for k, seg in enumerate(job.phase_segments()):
        doc = copy.deepcopy(loaded.resolved)
        jd = doc["workload"]["jobs"][index]
        jd.pop("phases", None)
        jd.pop("work_h", None)
        jd["gpus"] = seg.gpus
        tr = jd["training"]
        tr["tokens_t"] = seg.tokens_t
        tr.pop("mfu", None)
        tr.pop("peak_tflops", None)
        jd["step"] = seg.step.model_dump()
        if jd.get("elastic") and "replica_nodes" in jd["elastic"]:
            jd["elastic"].pop("replica_nodes")
        if jd.get("data") and jd["data"].get("bytes_per_token") is not None:
            jd["data"].pop("read_mb_per_s_per_gpu", None)
        doc["seed"] = segment_seed(sc.seed, k)
        doc["name"] = sc.name
        out.append((seg.label, load_dict(doc, str(loaded.source), loaded.base_dir)))
    return out


def combined_target(targets: list[Target]) -> Target:
    """The phased job's figures: summed work and failure-free hours and tokens; the largest segment's GPUs."""
    first = targets[0]
    big = max(targets, key=lambda t: t.gpus)
    tokens = sum(t.tokens_t or 0.0 for t in targets) if first.tokens_t is not None else None
    return replace(first, gpus=big.gpus, nodes=big.nodes, work_h=sum(t.work_h for t in targets),
                   failure_free_h=sum(t.failure_free_h for t in targets), tokens_t=tokens, six_pd_h=None)


def sum_rows(parts: list[tuple[str, pd.DataFrame]]) -> pd.DataFrame:
    """Replication-wise sum of the segments' rows (module text)."""
    first = parts[0][1].set_index("replication")
    ids = first[[c for c in ID_COLUMNS if c != "replication" and c in first.columns]]
    num = [p.set_index("replication").drop(columns=[c for c in ID_COLUMNS if c in p.columns], errors="ignore")
           for _, p in parts]
    total = num[0].copy()
    for p in num[1:]:
        total = total.add(p, fill_value=0.0)
    total = total.fillna(0.0)
    total["completed"] = pd.concat([p["completed"] for p in num], axis=1).min(axis=1)
    total["submit_h"] = num[0]["submit_h"]
    total["end_h"] = np.where(total["completed"] > 0, total["submit_h"] + total["time_to_train_h"], np.nan)
    for (label, _), p in zip(parts, num):
        total[f"phase.{label}.time_to_train_h"] = p["time_to_train_h"]
        total[f"phase.{label}.interruptions"] = p["interruptions"]
    out = pd.concat([ids, total], axis=1).reset_index()
    return out.sort_values("replication").reset_index(drop=True)


def phased(loaded: Loaded, index: int, bound_factor: float) -> tuple[list[tuple[str, Loaded, Target]], Target]:
    """The segments, each re-validated with its own horizon bound, and the phased job's target."""
    segs = []
    for label, ld in segment_loadeds(loaded, index):
        t = target_of(ld.scenario, index)
        segs.append((label, with_horizon(ld, bound_h(t, bound_factor)), t))
    return segs, combined_target([t for _, _, t in segs])


def run_phased(segs: list[tuple[str, Loaded, Target]], variant: Callable[[str, Loaded], pd.DataFrame],
               key: str = "baseline") -> pd.DataFrame:
    """Run every segment of variant ``key`` (``variant(key-phase-label, loaded)``: its replications) and sum
    them per replication."""
    parts = [(label, variant(f"{key}-phase-{label}", ld)) for label, ld, _ in segs]
    return sum_rows(parts)


def phase_table(rows: pd.DataFrame, segs: list[tuple[str, Any, Target]]) -> list[dict[str, Any]]:
    """Per segment: GPUs, tokens, failure-free days and the mean days and interruptions of the forecast."""
    out = []
    for label, _, t in segs:
        col = f"phase.{label}.time_to_train_h"
        out.append({"phase": label, "gpus": t.gpus, "tokens_t": t.tokens_t, "failure_free_days": t.failure_free_h / 24,
                    "mean_days": float(rows[col].mean()) / 24.0 if col in rows else float("nan"),
                    "interruptions": float(rows[f"phase.{label}.interruptions"].mean())
                    if f"phase.{label}.interruptions" in rows else float("nan")})
    return out
