"""Long queues and big traces (issue 22 item 1): the scheduler's work per event does not grow with the
queue, it decides as the plain scan of the queue did, and traces are read in chunks."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from twin.errors import InputError
from twin.limits import MAX_JOBS, check_limits
from twin.model.workload import QUEUED, Job, JobSpec, Workload
from twin.scenario.loader import load_scenario
from twin.scenario.trace import read_trace
from twin.sim import Model, run_replication
from test_robustness import _cpu_s  # the test directory is on sys.path (pytest prepend mode)


def trace_scenario(tmp_path: Path, rows: pd.DataFrame, horizon_days: float = 5, parts: bool = False,
                   policy: str = "backfill", spares: int = 0, ckpt: dict | None = None) -> Path:
    rows.to_csv(tmp_path / "trace.csv", index=False)
    node: dict = {"gpus": 8, "parts": {}}
    if parts:
        node["parts"] = {
            "gpu": {"count": 8, "failure": {"mtbf_h": 2000}, "repair": {"time": {"dist": "fixed", "value_h": 3}}},
            "sw": {"count": 1, "effect": "transient", "failure": {"mtbf_h": 300}}}
    doc = {"name": "trace-scale", "seed": 5, "horizon_days": horizon_days,
           "cluster": {"racks": 2, "nodes_per_rack": 8, "node": node},
           "workload": {"scheduler": {"policy": policy, "hot_spares": spares},
                        "trace": {"file": "trace.csv", "checkpoint": ckpt or {}}}}
    p = tmp_path / "sc.yaml"
    p.write_text(yaml.safe_dump(doc))
    return p


def blocked_queue(n: int) -> pd.DataFrame:
    """An 8-node job running for 1,000 h, a 16-node head that must wait for it, then ``n`` jobs of
    1-4 nodes and three priorities that fit the 8 free nodes but are too long to backfill."""
    r = np.random.default_rng(1)
    sizes = r.choice([8, 16, 32], n)
    return pd.DataFrame({
        "submit_h": np.r_[0.0, 0.0, np.sort(r.uniform(0.0, 1.0, n))],
        "gpus": np.r_[64, 128, sizes],
        "duration_h": np.r_[1000.0, 10.0, r.uniform(2000.0, 5000.0, n)],
        "priority": np.r_[3, 3, r.choice([0, 1, 2], n)],  # the head first
    })


def ops_per_event(tmp_path: Path, n: int) -> tuple[int, int]:
    """Scheduler operations of one pass at a queue of ``n`` + 1 jobs, and the queue length."""
    sub = tmp_path / f"q{n}"
    sub.mkdir()
    loaded = load_scenario(trace_scenario(sub, blocked_queue(n)))
    model = Model(loaded.scenario, 0, loaded.hash)
    env = model.engine.env
    env.run(until=2.0)  # every row submitted
    wl: Workload = model.by_section["workload"]
    q = wl.queue
    assert len(q) == n + 1 and len(wl.allocated) == 1
    before = q.ops
    wl._on_node_up(0, "test")  # an event that asks the scheduler to look again: nothing can start
    return q.ops - before, len(q)


def test_scheduler_operations_per_event_do_not_grow_with_the_queue(tmp_path: Path) -> None:
    small, n_small = ops_per_event(tmp_path, 1_000)
    big, n_big = ops_per_event(tmp_path, 100_000)
    assert n_small == 1_001 and n_big == 100_001
    # a scan of the queue (before the index) did one step per queued job: 1,001 and 100,001
    assert 0 < small < 500 and big <= 3 * small, (small, big)


class ScanWorkload(Workload):
    """The scheduler as it was: a scan of the whole queue in order at every pass (the reference)."""

    def _schedule(self) -> None:
        if not len(self.queue):
            return
        shadow = None
        extra = 0
        head_ex = None  # the head's nodes outside its node pool (None: any node)
        for job in list(self.queue.jobs()):
            pool = self._free_for(job)  # (of its node pool: workload.jobs.<i>.pool, test_pools_jobs.py)
            if job.nodes_needed > len(pool):
                spares = self._spares_for(job)
                if len(spares):
                    pool = np.concatenate((pool, spares))
            if job.nodes_needed <= len(pool):
                if shadow is not None:
                    est_end = self._env._now + self._remaining_h(job, 1.0)
                    takes = job.nodes_needed  # (none of the head's nodes when its pool is another)
                    if head_ex is not None and job.spec.excl is not None and job.spec.excl[~head_ex].all():
                        takes = 0
                    if est_end > shadow and takes > extra:
                        continue
                    if est_end > shadow:
                        extra -= takes
                self._start(job, self._pick_nodes(job, job.nodes_needed, pool))
            else:
                if self.spec.scheduler.policy == "fifo":
                    self._note_unreserved(job if self._unbounded(job) else None)
                    return
                if shadow is None:
                    shadow, extra = self._reservation(job)
                    head_ex = job.spec.excl
                    self._note_unreserved(job if shadow is None else None)
                    if shadow is None:  # no bound from running jobs' ends: reserved at infinity
                        shadow = math.inf


@pytest.mark.parametrize("seed,policy,spares,mode", [(1, "backfill", 1, "async"), (2, "backfill", 0, "sync"),
                                                     (3, "fifo", 2, "async"), (4, "backfill", 2, "sync")])
def test_indexed_scheduler_decides_as_the_scan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int,
                                              policy: str, spares: int, mode: str) -> None:
    r = np.random.default_rng(seed)
    n = 600
    rows = pd.DataFrame({"submit_h": np.round(r.uniform(0, 200, n), 1),  # ties of submit times
                         "gpus": r.choice([8, 16, 24, 64, 96], n, p=[.4, .25, .15, .15, .05]),
                         "duration_h": np.round(r.lognormal(np.log(4), 1.0, n), 2),
                         "priority": r.choice([0, 0, 1, 3], n)})
    p = trace_scenario(tmp_path, rows, horizon_days=12, parts=True, policy=policy, spares=spares,
                       ckpt={"interval_h": 1.0, "size_gb": 300, "mode": mode})
    sc = load_scenario(p).scenario
    new = run_replication(sc, 0)
    from twin import sim
    from twin.model.workload import Workload

    monkeypatch.setattr(sim, "COMPONENTS", tuple(ScanWorkload if c is Workload else c for c in sim.COMPONENTS))
    old = run_replication(sc, 0)
    assert type(Model(sc, 0).by_section["workload"]) is ScanWorkload  # the reference did run
    pd.testing.assert_frame_equal(new.tables["jobs"], old.tables["jobs"], check_exact=True)
    assert new.metrics.keys() == old.metrics.keys()
    assert all(new.metrics[k] == old.metrics[k] or (math.isnan(new.metrics[k]) and math.isnan(old.metrics[k]))
               for k in new.metrics)
    jobs = new.tables["jobs"]
    assert jobs[jobs.record == "interruption"].shape[0] > 0 and (jobs.queue_wait_h > 1).any()


def test_trace_is_read_in_chunks_into_columns(tmp_path: Path) -> None:
    n = 2_345
    rows = pd.DataFrame({"submit_h": np.arange(n, 0, -1) / 10.0, "gpus": 8, "duration_h": 1.5, "name": "",
                         "priority": np.arange(n) % 3})
    rows.loc[7, "name"] = "seven"
    rows.to_csv(tmp_path / "t.csv", index=False)
    tr = read_trace(tmp_path / "t.csv", 8, 16, chunk_rows=1000)
    assert len(tr) == n and tr.gpus.dtype == np.int64 and tr.name(7) == "seven" and tr.name(8) == "trace00009"
    assert list(tr.order()[:2]) == [n - 1, n - 2]  # submission order, not file order
    # a bad row in a later chunk is named by its row in the file
    bad = rows.copy()
    bad.loc[2_100, "gpus"] = 0
    bad.to_csv(tmp_path / "b.csv", index=False)
    with pytest.raises(InputError, match="row 2101: gpus"):
        read_trace(tmp_path / "b.csv", 8, 16, chunk_rows=1000)


def test_unsorted_trace_submits_in_time_order_with_row_ids(tmp_path: Path) -> None:
    rows = pd.DataFrame({"submit_h": [5.0, 1.0, 5.0, 0.5], "gpus": [8, 8, 8, 8], "duration_h": [1.0] * 4})
    res = run_replication(load_scenario(trace_scenario(tmp_path, rows)).scenario, 0)
    j = res.tables["jobs"]
    j = j[j.record == "job"].set_index("name")
    assert list(j.loc[["trace00001", "trace00002", "trace00003", "trace00004"], "job"]) == [1, 2, 3, 4]
    assert list(j.loc[["trace00001", "trace00002", "trace00003", "trace00004"], "first_start_h"]) == [5.0, 1.0, 5.0, 0.5]


def test_limits_count_trace_jobs_and_their_checkpoints(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rows = pd.DataFrame({"submit_h": [0.0, 1.0, 200.0], "gpus": [8, 8, 8], "duration_h": [10.0, 10.0, 10.0]})
    p = trace_scenario(tmp_path, rows, horizon_days=5, ckpt={"interval_h": 1.0, "size_gb": 10, "mode": "async"})
    from twin.limits import estimate_events

    sc = load_scenario(p).scenario
    # two rows before the 120 h horizon: 2 × 10 + 3 events × 20 checkpoints
    assert estimate_events(sc) == pytest.approx(2 * 10 + 3 * 20)
    assert MAX_JOBS >= 1_000_000  # a million-row trace passes
    import twin.limits

    monkeypatch.setattr(twin.limits, "MAX_JOBS", 1)  # two rows inside the horizon: refused
    loaded = load_scenario(p)
    with pytest.raises(InputError, match="about 2 jobs .* above the limit of 1 "):
        check_limits(loaded, reps=1)
    check_limits(loaded, reps=1, force=True)
    assert math.isfinite(estimate_events(loaded.scenario))


def test_job_records_are_slotted() -> None:
    spec = JobSpec(1, "a", 8, 1, 1.0, 0.0, 0, None, None)  # type: ignore[arg-type]
    assert not any(hasattr(r, "__dict__") for r in (spec, Job(spec), Job(spec).acct))
    assert QUEUED == "queued"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="POSIX signals, /proc")
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_stops_a_long_trace_run(tmp_path: Path, sig: int) -> None:
    """SIGINT or SIGTERM to `twin run` of a long trace (100,000 rows over ten years on 16 nodes, a
    queue of tens of thousands: minutes of work) stops it with exit 130 and nothing written. (The
    bound is on the child's CPU after the signal, generous: it stops within about a second.)"""
    r = np.random.default_rng(3)
    n = 100_000
    rows = pd.DataFrame({"submit_h": np.sort(r.uniform(0, 87_600, n)).round(3), "gpus": r.choice([8, 16, 64], n),
                         "duration_h": r.lognormal(np.log(20), 1.0, n).round(3)})
    scen = trace_scenario(tmp_path, rows, horizon_days=3650, parts=True, spares=1,
                          ckpt={"interval_h": 2.0, "size_gb": 100, "mode": "async"})
    res = tmp_path / "r"
    cmd = [sys.executable, "-m", "twin.cli", "run", str(scen), "--results", str(res), "--quiet"]
    env = {**os.environ, "TWIN_LOG_DIR": str(tmp_path / "logs")}
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        t0 = time.monotonic()  # imports, the chunked read and the build take a few CPU seconds
        while _cpu_s(proc.pid) < 4.0 and proc.poll() is None and time.monotonic() - t0 < 120:
            time.sleep(0.1)
        assert proc.poll() is None, proc.communicate()
        cpu_before = _cpu_s(proc.pid)
        proc.send_signal(sig)
        # the child's own CPU from the signal to its exit (wait4's rusage): "promptly" in work done,
        # not in wall time a loaded machine stretches (the run has minutes of work left)
        _, status, usage = os.wait4(proc.pid, 0)
        cpu_after = usage.ru_utime + usage.ru_stime - cpu_before
        proc.returncode = os.waitstatus_to_exitcode(status)
        err = proc.stderr.read()  # type: ignore[union-attr]
    finally:
        if proc.returncode is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert cpu_after < 5.0, cpu_after
    assert "interrupted" in err and "Traceback" not in err, err
    assert not res.exists() or not [p for p in res.rglob("*") if p.is_file()]
