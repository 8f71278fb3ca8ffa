"""Slurm accounting as ``sacct --parsable2`` prints it: a header line of field names and one
``|``-separated line per job, job step, array task or heterogeneous component, e.g.::

    JobID|JobName|Submit|Start|End|State|NNodes|NodeList|AllocTRES|ExitCode
    1234|train|2024-01-15T09:00:00|2024-01-15T09:00:05|2024-01-15T11:13:20|NODE_FAIL|4|gpu[001-004]|billing=32,cpu=32,gres/gpu=32,mem=1T,node=4|0:0
    1234.batch|batch|2024-01-15T09:00:05|2024-01-15T09:00:05|2024-01-15T11:13:20|CANCELLED|1|gpu001|cpu=8,mem=250G,node=1|0:15

(``sacct --parsable`` adds a trailing ``|``: accepted). Required fields: ``JobID, Start, End, State,
NNodes, NodeList``; ``JobName, Submit, AllocTRES`` are read when present, any other field is ignored.

* **Job steps** (``1234.batch``, ``1234.extern``, ``1234.0``) belong to their job: counted, never a
  job of their own. **Array tasks** (``1234_7``) are jobs of their own; a pending array record
  (``1234_[1-100]``) has not run. **Heterogeneous components** (``1234+0``, ``1234+1``) of one start
  form one job (nodes and GPUs added). A job printed again with another start (``sacct --duplicates``
  after a requeue) is another *attempt* of the same job.
* **States**: ``NODE_FAIL`` is a hardware interruption (Slurm's word for a node that failed under the
  job). ``FAILED, TIMEOUT, CANCELLED, PREEMPTED, REQUEUED, OUT_OF_MEMORY, DEADLINE, BOOT_FAIL`` are
  counted and reported, never taken as hardware (``CANCELLED by 1000`` is ``CANCELLED``).
* **Times** are the controller's local time, read in the zone given by ``--tz``. An ``End`` of
  ``Unknown`` or ``None`` (a running job) is censored at the end of the observation; a ``Start`` of
  ``Unknown``/``None`` (a pending job) has not run: counted, not an attempt.
* **NodeList** ranges (``gpu[001-004,010]``) are expanded by python-hostlist as Slurm does.
"""

from __future__ import annotations

import math
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import tzinfo
from typing import Any

import hostlist
import numpy as np
import pandas as pd

from twin.calibrate.common import lines, parse_iso
from twin.errors import InputError

REQUIRED = ("JobID", "Start", "End", "State", "NNodes", "NodeList")
OPTIONAL = ("JobName", "Submit", "AllocTRES")
STATES = ("BOOT_FAIL", "CANCELLED", "COMPLETED", "COMPLETING", "DEADLINE", "FAILED", "NODE_FAIL", "OUT_OF_MEMORY",
          "PENDING", "PREEMPTED", "RUNNING", "REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD", "RESIZING", "REVOKED",
          "SPECIAL_EXIT", "STOPPED", "SUSPENDED", "TIMEOUT")
"""Job states as ``sacct`` prints them (Slurm's ``sacct(1)``, JOB STATE CODES)."""
HARDWARE_STATES = ("NODE_FAIL",)
"""States that are a hardware interruption."""
UNSET = ("", "unknown", "none")
"""Time values of a time not (yet) reached."""

_CATEGORIES = ("name", "state", "nodelist")
"""Columns kept as categories: few distinct values among many jobs."""
CHUNK_ROWS = 100_000
"""Attempts gathered in Python lists before they become a frame."""
_JOBID = re.compile(r"^(?P<job>\d+)(?:_(?P<task>\d+|\[[^\]]*\]))?(?:\+(?P<het>\d+))?"
                    r"(?:\.(?P<step>batch|extern|interactive|\d+(?:\+\d+)?))?$")
_GPU_TRES = re.compile(r"(?:^|,)gres/gpu(?::[^=,]+)?=(\d+)")


@dataclass
class SacctLog:
    """One sacct file read: one row per job attempt (``attempts``), counts of the rest."""

    source: str
    attempts: pd.DataFrame
    """``job`` (str: ``1234``, ``1234_7``), ``name``, ``submit_s``, ``start_s``, ``end_s`` (NaN: still
    running, censored), ``state``, ``nodes`` (int), ``gpus`` (int), ``nodelist`` (str, Slurm ranges),
    ``line`` (of the job's record) — times in POSIX seconds."""
    states: Counter[str] = field(default_factory=Counter)
    """Attempts by state."""
    pending: int = 0
    """Records that never started (counted, not attempts)."""
    steps: int = 0
    """Job-step lines aggregated into their jobs."""
    lines: int = 0

    @property
    def first_s(self) -> float:
        a = self.attempts
        return float(a["start_s"].min()) if len(a) else math.nan

    @property
    def last_s(self) -> float:
        a = self.attempts
        return float(np.nanmax(a["end_s"].to_numpy())) if len(a) and a["end_s"].notna().any() else self.first_s


def _bad(source: str, n: int, name: str, message: str) -> InputError:
    return InputError(source, f"line {n}, field {name}", message)


def _time(source: str, n: int, name: str, text: str, tz: tzinfo) -> float:
    """POSIX seconds, or NaN for Unknown/None/empty."""
    if text.strip().lower() in UNSET:
        return math.nan
    try:
        return parse_iso(text, tz)
    except ValueError:
        raise _bad(source, n, name, f"{text!r} is not a time (YYYY-MM-DDThh:mm:ss, Unknown or None)") from None


def state_of(text: str) -> str | None:
    """The state word of a State field (``CANCELLED by 1000`` → ``CANCELLED``), or None if unknown."""
    word = text.strip().split(" ", 1)[0].upper()
    return word if word in STATES else None


def gpus_of(tres: str) -> int:
    """GPUs of an AllocTRES value (``gres/gpu=8``; typed ``gres/gpu:h100=8`` when no untyped one)."""
    found = _GPU_TRES.findall(tres)
    if not found:
        return 0
    plain = re.search(r"(?:^|,)gres/gpu=(\d+)", tres)
    return int(plain.group(1)) if plain else sum(int(x) for x in found)


def read_sacct(path: str | os.PathLike[str], tz: tzinfo) -> SacctLog:
    """Read a ``sacct --parsable2`` file (see the module doc). Streams the file; keeps one row per
    job attempt as columns."""
    source = str(path)
    header: list[str] | None = None
    idx: dict[str, int] = {}
    cols: dict[str, list[Any]] = {k: [] for k in ("job", "name", "submit_s", "start_s", "end_s", "state", "nodes",
                                             "gpus", "nodelist", "line")}
    log = SacctLog(source=source, attempts=pd.DataFrame())
    last_key: tuple[str, float] | None = None
    chunks: list[pd.DataFrame] = []
    n = 0
    for n, text in lines(path):
        if not text.strip():
            continue
        cells = text.split("|")
        if header is None:
            header = [c.strip() for c in cells]
            if header and header[-1] == "":
                header.pop()  # --parsable: a trailing |
            missing = [f for f in REQUIRED if f not in header]
            if missing:
                raise _bad(source, n, "header", f"missing {', '.join(missing)}; sacct --parsable2 with at least "
                           f"--format={','.join(REQUIRED)} (found {', '.join(header) or 'nothing'})")
            idx = {h: i for i, h in enumerate(header)}
            continue
        if len(cells) == len(header) + 1 and cells[-1] == "":
            cells.pop()
        if len(cells) != len(header):
            raise _bad(source, n, "JobID" if len(cells) < 2 else header[min(len(cells), len(header)) - 1],
                       f"{len(cells)} fields but the header has {len(header)}")
        m = _JOBID.match(cells[idx["JobID"]].strip())
        if m is None:
            raise _bad(source, n, "JobID", f"{cells[idx['JobID']]!r} is not a Slurm job ID (1234, 1234.batch, "
                       "1234_7, 1234+0)")
        state = state_of(cells[idx["State"]])
        if state is None:
            raise _bad(source, n, "State", f"{cells[idx['State']]!r} is not a job state ({', '.join(STATES)})")
        if m.group("step") is not None:
            log.steps += 1
            continue
        task = m.group("task")
        start = _time(source, n, "Start", cells[idx["Start"]], tz)
        end = _time(source, n, "End", cells[idx["End"]], tz)
        if (task is not None and task.startswith("[")) or math.isnan(start) or state == "PENDING":
            log.pending += 1
            continue
        if not math.isnan(end) and end < start:
            raise _bad(source, n, "End", f"{cells[idx['End']]} is before Start {cells[idx['Start']]}")
        try:
            nnodes = int(cells[idx["NNodes"]])
        except ValueError:
            raise _bad(source, n, "NNodes", f"{cells[idx['NNodes']]!r} is not a whole number") from None
        nodelist = cells[idx["NodeList"]].strip()
        try:
            hosts = hostlist.expand_hostlist(nodelist)
        except hostlist.BadHostlist as exc:
            raise _bad(source, n, "NodeList", f"{nodelist!r} is not a Slurm node list ({exc})") from None
        if len(hosts) != nnodes:
            raise _bad(source, n, "NodeList", f"{nodelist!r} names {len(hosts)} nodes but NNodes is {nnodes}")
        gpus = gpus_of(cells[idx["AllocTRES"]]) if "AllocTRES" in idx else 0
        job = m.group("job") + (f"_{task}" if task is not None else "")
        if m.group("het") is not None and last_key == (job, start):  # another component of the same job
            cols["nodes"][-1] += nnodes
            cols["gpus"][-1] += gpus
            cols["nodelist"][-1] = hostlist.collect_hostlist(hostlist.expand_hostlist(cols["nodelist"][-1]) + hosts)
            if state in HARDWARE_STATES:
                log.states[cols["state"][-1]] -= 1
                log.states[state] += 1
                cols["state"][-1] = state
            continue
        last_key = (job, start)
        if len(cols["job"]) >= CHUNK_ROWS:
            chunks.append(_frame(cols))
        cols["job"].append(job)
        cols["name"].append(cells[idx["JobName"]] if "JobName" in idx else "")
        cols["submit_s"].append(_time(source, n, "Submit", cells[idx["Submit"]], tz) if "Submit" in idx else start)
        cols["start_s"].append(start)
        cols["end_s"].append(end)
        cols["state"].append(state)
        cols["nodes"].append(nnodes)
        cols["gpus"].append(gpus)
        cols["nodelist"].append(nodelist)
        cols["line"].append(n)
        log.states[state] += 1
    if header is None:
        raise InputError(source, "", "empty file; expected a sacct --parsable2 header line (JobID|...)")
    log.lines = n
    chunks.append(_frame(cols))
    if len(chunks) == 1:
        log.attempts = chunks[0]
    else:  # keep the repeated strings (names, node lists, states) as categories across chunks
        from pandas.api.types import union_categoricals

        shared = {c: union_categoricals([ch[c] for ch in chunks]) for c in _CATEGORIES}
        log.attempts = pd.concat([ch.drop(columns=list(_CATEGORIES)) for ch in chunks], ignore_index=True)
        for c in _CATEGORIES:
            log.attempts[c] = shared[c]
        log.attempts = log.attempts[list(cols)]
    return log


def _frame(cols: dict[str, list[Any]]) -> pd.DataFrame:
    """The rows gathered so far as a frame; empties the lists (bounded memory)."""
    out = pd.DataFrame({
        "job": pd.Series(cols["job"], dtype=str),
        "name": pd.Categorical(cols["name"]),
        "submit_s": np.asarray(cols["submit_s"], dtype=float),
        "start_s": np.asarray(cols["start_s"], dtype=float),
        "end_s": np.asarray(cols["end_s"], dtype=float),
        "state": pd.Categorical(cols["state"]),
        "nodes": np.asarray(cols["nodes"], dtype=np.int64),
        "gpus": np.asarray(cols["gpus"], dtype=np.int64),
        "nodelist": pd.Categorical(cols["nodelist"]),
        "line": np.asarray(cols["line"], dtype=np.int64),
    })
    for v in cols.values():
        v.clear()
    return out


def node_days(attempts: pd.DataFrame, end_s: float) -> float:
    """Node-days of the attempts, running ones censored at ``end_s`` (POSIX seconds)."""
    end = attempts["end_s"].fillna(end_s).clip(upper=end_s).to_numpy()
    dur = np.clip(end - attempts["start_s"].to_numpy(), 0.0, None)
    return float(np.sum(dur * attempts["nodes"].to_numpy()) / 86400.0)


def job_trace(attempts: pd.DataFrame, t0_s: float, t1_s: float, gpus_per_node: int) -> pd.DataFrame:
    """The logged jobs as a twin trace (``name, submit_h, gpus, duration_h``; ``workload.trace``): one
    row per job submitted in the window, hours from ``t0_s``, its attempts' run time added (an upper
    bound of its ideal work when it was interrupted; a running job's time so far, to ``t1_s``), GPUs from
    AllocTRES, else its nodes × ``gpus_per_node``. Jobs that ran no time are left out."""
    a = attempts[(attempts["submit_s"] >= t0_s) & (attempts["submit_s"] < t1_s)]
    end = a["end_s"].fillna(t1_s).clip(upper=t1_s)
    run_h = np.clip(end.to_numpy() - a["start_s"].to_numpy(), 0.0, None) / 3600.0
    gpus = np.where(a["gpus"].to_numpy() > 0, a["gpus"].to_numpy(), a["nodes"].to_numpy() * gpus_per_node)
    df = pd.DataFrame({"job": a["job"].astype(str).to_numpy(), "submit_h": (a["submit_s"].to_numpy() - t0_s) / 3600.0,
                       "gpus": gpus, "duration_h": run_h})
    out = df.groupby("job", sort=False).agg(submit_h=("submit_h", "min"), gpus=("gpus", "max"),
                                            duration_h=("duration_h", "sum")).reset_index()
    out = out[out["duration_h"] > 0].sort_values("submit_h", kind="stable")
    return pd.DataFrame({"name": "job" + out["job"], "submit_h": out["submit_h"].round(6),
                         "gpus": out["gpus"].astype(np.int64), "duration_h": out["duration_h"].round(6)})
