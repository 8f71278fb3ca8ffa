"""Workload: theory cases (shared with `twin validate`), conservation, coupling, bad input."""

from __future__ import annotations

import copy
import math
from dataclasses import replace

import numpy as np
import pytest

from twin.model.causes import DownCause
from twin.cli import main
from twin.scenario import load_dict
from twin.sim import run_replication
from twin.validation.cases import CASES, Settings

from judging import QUICK, assert_judged


@pytest.mark.parametrize("case,reps,max_rel_half_width", [
    ("mmc_queue", 24, [0.2]), ("no_starvation", None, [0.5]), ("job_interruptions", 16, [1.0, 0.4, 0.25])])
def test_theory_case_quick(case: str, reps: int | None, max_rel_half_width: list[float]) -> None:
    """Each number against its closed form within a stated interval at the suite's level (relative
    half-widths at most: M/M/4 wait ±0.2, behind a starving head ±0.5, interruptions of a 1-, 4- and
    16-node job ±1.0, ±0.4, ±0.25), excluding the named wrong models (M/M/1 at the same ρ; the held-down
    nodes counted; the hot spares' failures counted, one node's rate for N nodes). The queue and the
    interruptions run twice the quick replications so that their wrong models lie two half-widths away
    (an exclusion that holds on any draw, tests/judging.py)."""
    res = CASES[case](replace(QUICK, replications=reps) if reps else QUICK)
    assert len(res) == len(max_rel_half_width)
    for r, w in zip(res, max_rel_half_width):
        assert_judged(r, w)


def test_elastic_job_is_exact_and_excludes_its_wrong_models() -> None:
    """Deterministic (1e-9): the end of the elastic job by hand; no pause for the grow, the rigid job
    and (2-node replicas) a rate per node kept instead of whole replicas all lie outside."""
    res = CASES["elastic_job"](QUICK)
    assert len(res) == 2
    for r in res:
        assert r.passed and not r.failed_invariants(), r
        assert abs(r.mean - r.reference) <= 1e-9 * r.reference
        assert len(r.wrong) >= 2 and all(r.excludes(v) for v in r.wrong.values()), r.wrong


def test_backfill_goes_on_past_a_head_that_cannot_start() -> None:
    """A head job needing 5 nodes while only 4 are up (2 held down all the horizon) has no reservation:
    the one-node jobs behind it start at once (before: nothing started again), and an advisory names
    the head 24 h (``starvation_advisory_h``) after it became the head."""
    from twin.validation.cases import held_down_doc

    doc = held_down_doc("starve", 4, 2, 100.0)
    doc["workload"]["jobs"] = [{"name": "head", "gpus": 40, "work_h": 10.0, "submit_h": 1.0}] + [
        {"name": f"small{i}", "gpus": 8, "work_h": 3.0 + i, "submit_h": 2.0} for i in range(6)]
    res = run_replication(load_dict(doc).scenario, 0)
    j = res.tables["jobs"].set_index("name")
    assert math.isnan(j.loc["head", "first_start_h"])
    # four nodes: small0-3 start on submission, small4 when small0 ends (5 h), small5 when small1 ends (6 h)
    assert list(j.loc[[f"small{i}" for i in range(6)], "first_start_h"]) == [2.0, 2.0, 2.0, 2.0, 5.0, 6.0]
    adv = res.tables["advisories"]
    assert list(adv.name) == ["head"] and adv.time_h.iloc[0] == pytest.approx(25.0)
    assert adv.usable_nodes.iloc[0] == 4 and "no reservation" in adv.text.iloc[0]
    assert res.metrics["starvation.advisories"] == 1.0
    assert res.metrics["starvation.unreserved_h"] == pytest.approx(99.0)
    q = res.tables["queue_by_size"].set_index("nodes_max")
    assert q.loc[8, "still_queued"] == 1 and q.loc[8, "longest_queued_h"] == pytest.approx(99.0)
    assert q.loc[1, "started"] == 6 and q.loc[1, "mean_wait_h"] == pytest.approx((3.0 + 4.0) / 6)


def test_starvation_probe_reaches_the_available_share() -> None:
    """The issue's probe: air.yaml with 2 CRAH units of 2 required, 60 days, keeps ~80 of 128 nodes up and
    the 96-node job cannot get its nodes. Rigid: the small jobs no longer wait behind it (before: ~1,439 h)
    and an advisory names it; elastic (8-node replicas): it runs on the nodes that are up, and goodput is of
    the order of the available share (before: 2.8e-5)."""
    from twin.scenario.loader import load_scenario
    from twin.validation.framework import IDENTICAL_GPU_SETS

    probe = ["cooling.air.crah.count=2", "cooling.air.crah.required=2", "horizon_days=60",
             # nodes drawing their 10.2 kW nameplate, as before issue 23 (8.4 kW in training would fit the units)
             "cluster.node.gpu.train_w=700", "cluster.node.non_gpu_w=4600", "cluster.node.non_gpu_idle_w=4600",
             # and identical GPUs at the supply, as before (the hall; hot racks would trip more nodes)
             *IDENTICAL_GPU_SETS,
             # tripped nodes wait for the room (no operator cap bringing them back capped: tests/test_response.py)
             "cooling.response.policy=none"]
    rigid = run_replication(load_scenario("scenarios/air.yaml", probe).scenario, 0)
    q = rigid.tables["queue_by_size"].set_index("nodes_max")
    assert q.loc[1, "mean_wait_h"] < 1.0 and q.loc[1, "still_queued"] == 0
    assert list(rigid.tables["advisories"].name) == ["train-768"]
    el = run_replication(load_scenario("scenarios/air.yaml", probe + [
        "workload.jobs.0.elastic={replica_nodes: 8, min_replicas: 2}"]).scenario, 0)
    avail = el.metrics["node_availability"]
    assert 0.5 < avail < 0.75
    assert el.metrics["goodput"] > 0.5 * avail, (el.metrics["goodput"], avail)
    assert el.metrics["elastic.starts"] == 1.0 and el.metrics["elastic.kept_gpu_hours"] > 0


def test_daly_checkpoint_three_intervals_crn() -> None:
    """Efficiency against Daly's exact expected wall time at three intervals (quick: ±3 % at the suite's
    level, stated ±4 %); the first-order approximation is excluded where it lies two half-widths away."""
    res = CASES["checkpoint_daly"](QUICK)
    assert len(res) == 3
    for r in res:
        assert_judged(r, 0.04)


@pytest.mark.slow
def test_daly_curve_full() -> None:
    res = CASES["checkpoint_daly"](Settings(quick=False, confidence=1 - 0.01 / 7))
    assert all(r.passed for r in res), res
    taus = [float(r.quantity.split("(")[1].split(" h")[0]) for r in res]
    best = int(np.argmax([r.mean for r in res]))
    opt = int(np.argmax([r.reference for r in res]))
    assert abs(best - opt) <= 1, (taus, best, opt)


def test_broken_model_fails_interruption_case() -> None:
    def break_it(doc: dict) -> dict:
        d = copy.deepcopy(doc)
        d["cluster"]["node"]["parts"]["board"]["failure"] = {"mtbf_h": 250.0}  # twice the rate
        return d

    res = CASES["job_interruptions"](Settings(quick=True, mutate=break_it))
    assert not all(r.passed for r in res)


def small_doc(**wl: object) -> dict:
    doc = {
        "name": "wl-test", "seed": 3, "horizon_days": 20,
        "cluster": {"racks": 2, "nodes_per_rack": 4, "node": {"gpus": 8, "parts": {
            "gpu": {"count": 8, "failure": {"mtbf_h": 3000}, "repair": {"time": {"dist": "fixed", "value_h": 3}}},
            "sw": {"count": 1, "effect": "transient", "failure": {"mtbf_h": 400}}}}},
        "workload": {
            "scheduler": {"policy": "backfill", "hot_spares": 1},
            "jobs": [{"name": "big", "gpus": 40, "work_h": 300,
                      "checkpoint": {"interval_h": 1.5, "size_gb": 500, "mode": "sync"}}],
            "synthetic": {"arrival_rate_per_h": 0.8, "gpus": {"values": [8, 16]},
                          "work": {"dist": "exponential", "mean_h": 2}},
        },
    }
    doc["workload"].update(wl)
    return doc


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_work_conservation(seed: int, mode: str) -> None:
    doc = small_doc()
    doc["seed"] = seed
    doc["workload"]["jobs"][0]["checkpoint"]["mode"] = mode
    res = run_replication(load_dict(doc).scenario, 0)
    j = res.tables["jobs"]
    jobs = j[j.record == "job"]
    # every hour of progress made is either kept or lost
    assert np.allclose(jobs.made_h, jobs.kept_h + jobs.lost_h, rtol=1e-9, atol=1e-9)
    # never more work than asked
    assert (jobs.kept_h <= jobs.work_h * (1 + 1e-9)).all()
    assert (jobs[jobs.done].kept_h >= jobs[jobs.done].work_h * (1 - 1e-9)).all()
    # lost work per interruption sums to the jobs' lost work
    ints = j[j.record == "interruption"]
    assert math.isclose(ints.lost_h.sum(), jobs.lost_h.sum(), rel_tol=1e-9, abs_tol=1e-9)
    m = res.metrics
    parts = [m[f"goodput.{k}"] for k in ("useful", "lost", "checkpoint", "restart", "slowdown", "idle", "down")]
    assert math.isclose(sum(parts), 1.0, rel_tol=1e-9)
    assert all(p >= -1e-12 for p in parts), parts
    assert m["utilisation"] <= 1 + 1e-12
    assert m["useful_gpu_hours"] <= m["gpus_installed"] * m["horizon_h"]
    assert m["interruptions"] > 0


def test_checkpoint_costs_time_and_saves_work() -> None:
    """Without checkpoints an interruption loses all progress; with them only since the last one."""
    base = small_doc()
    base["workload"]["synthetic"] = None
    no_ck = copy.deepcopy(base)
    no_ck["workload"]["jobs"][0]["checkpoint"] = {}
    a = run_replication(load_dict(base).scenario, 0).tables["jobs"]
    b = run_replication(load_dict(no_ck).scenario, 0).tables["jobs"]
    ia, ib = a[a.record == "interruption"], b[b.record == "interruption"]
    assert (ia.lost_h <= 1.5 + 1e-9).all()
    assert ib.lost_h.max() > 1.5
    assert a[a.record == "job"].checkpoint_h.iloc[0] > 0
    assert b[b.record == "job"].checkpoint_h.iloc[0] == 0


def test_hot_spares_restart_without_waiting_for_repair() -> None:
    doc = small_doc()
    doc["workload"]["synthetic"] = None
    doc["cluster"]["node"]["parts"]["gpu"]["repair"]["time"] = {"dist": "fixed", "value_h": 100}
    doc["cluster"]["node"]["parts"]["gpu"]["failure"] = {"mtbf_h": 1000}
    doc["cluster"]["nodes_per_rack"] = 1  # node paths hall.rackNN.nodeNNN: the first 5 agree below
    no_spare = copy.deepcopy(doc)
    no_spare["cluster"]["racks"] = 5
    no_spare["workload"]["scheduler"]["hot_spares"] = 0
    with_spare = copy.deepcopy(doc)
    with_spare["cluster"]["racks"] = 8
    with_spare["workload"]["scheduler"]["hot_spares"] = 3
    a = run_replication(load_dict(with_spare).scenario, 0)
    b = run_replication(load_dict(no_spare).scenario, 0)
    ja, jb = a.tables["jobs"], b.tables["jobs"]
    assert (jb.record == "interruption").sum() > 0
    # without spares the 5-node job waits for every repair; with spares it restarts at once
    assert a.metrics["ettr.max_job"] > b.metrics["ettr.max_job"]
    assert ja[ja.record == "job"].queue_wait_h.iloc[0] < jb[jb.record == "job"].queue_wait_h.iloc[0]


def test_same_seed_identical_jobs_table() -> None:
    sc = load_dict(small_doc()).scenario
    a = run_replication(sc, 0).tables["jobs"]
    b = run_replication(sc, 0).tables["jobs"]
    assert a.equals(b)
    c = run_replication(sc, 1).tables["jobs"]
    assert not a.equals(c)


def test_speed_cap_slows_progress_exactly() -> None:
    """A speed cap published on the bus changes the job's progress rate (step-time model)."""
    from twin.sim import Model

    doc = small_doc()
    doc["cluster"]["node"]["parts"] = {}
    doc["workload"]["synthetic"] = None
    doc["workload"]["jobs"][0]["checkpoint"] = {}
    model = Model(load_dict(doc).scenario, 0)
    eng = model.engine

    src = model.cluster.speed_source("test")

    def cap() -> None:
        src.caps[[0]] = 0.5
        src.changed(np.array([0]))

    eng.call_at(100.0, cap)
    model.run()
    j = model.result().tables["jobs"]
    kept = j[j.record == "job"].kept_h.iloc[0]
    # full rate for 100 h, then half rate (slowest node sets the pace; compute-bound job)
    assert math.isclose(kept, 100 + 0.5 * (model.sc.horizon_h - 100), rel_tol=1e-12)


def write(tmp_path, text: str, name: str = "s.yaml"):
    p = tmp_path / name
    p.write_text(text)
    return p


BASE = """
name: bad
horizon_days: 10
cluster:
  racks: 1
  nodes_per_rack: 4
  node:
    gpus: 8
    parts:
      gpu: {count: 8, failure: {mtbf_h: 1000}}
"""


@pytest.mark.parametrize("workload,needle", [
    ("workload:\n  scheduler: {hot_spares: 1}\n  jobs: [{name: j, gpus: 32, work_h: 5}]",
     "workload.jobs.0.gpus: job 'j' needs 4 nodes but only 3 are schedulable"),
    ("workload:\n  jobs: [{name: j, gpus: 8, work_h: 5, checkpoint: {interval_h: 0}}]",
     "workload.jobs.0.checkpoint.interval_h"),
    ("workload:\n  jobs: [{name: j, gpus: 8, work_h: 5, checkpoint: {interval_h: -1}}]",
     "workload.jobs.0.checkpoint.interval_h"),
])
def test_bad_workload_input(tmp_path, capsys, workload: str, needle: str) -> None:
    p = write(tmp_path, BASE + workload)
    assert main(["run", str(p), "--results", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert str(p) in err and needle in err, err


@pytest.mark.parametrize("csv,needle", [
    ("submit_h,gpus\n0,8\n", "missing columns ['duration_h']"),
    ("submit_h,gpus,duration_h\n0,8,1\n-3,8,1\n", "row 2: submit_h"),
    ("submit_h,gpus,duration_h\n0,8,x\n", "row 1"),
    ("submit_h,gpus,duration_h\n0,64,1\n", "row 1: gpus"),
])
def test_bad_trace(tmp_path, capsys, csv: str, needle: str) -> None:
    (tmp_path / "trace.csv").write_text(csv)
    p = write(tmp_path, BASE + "workload:\n  trace: {file: trace.csv}\n")
    assert main(["run", str(p), "--results", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "trace.csv" in err and needle in err, err


def test_trace_runs(tmp_path) -> None:
    (tmp_path / "trace.csv").write_text("submit_h,gpus,duration_h,name\n0,8,5,a\n1,16,2,b\n2,32,1,c\n")
    p = write(tmp_path, BASE + "workload:\n  trace: {file: trace.csv}\n")
    assert main(["run", str(p), "--results", str(tmp_path / "r"), "--quiet"]) == 0


def test_planned_maintenance_counts_planned_interruptions() -> None:
    doc = small_doc()
    doc["cluster"]["node"]["parts"] = {}
    doc["workload"]["synthetic"] = None
    doc["maintenance"] = {"planned": {"every_days": 2, "batch_nodes": 2, "duration_h": 4, "start_day": 1}}
    res = run_replication(load_dict(doc).scenario, 0)
    j = res.tables["jobs"]
    ints = j[j.record == "interruption"]
    # waves at days 1, 3, ..., 19 (10 waves) cycling over 8 nodes; the 5-node job sits on nodes 0-4
    # until a drain moves it; every interruption is planned and caused by a drain
    assert len(ints) > 0 and ints.planned.all() and (ints.cause == "planned").all()
    assert res.metrics["interruptions.planned"] == len(ints)
    assert math.isclose(res.metrics["node_down_hours"], 10 * 2 * 4)


# ---- QA findings: checkpoints on shared storage, backfill estimates ------------------------------

def _qa_cluster(nodes: int, fail_at_h: float) -> dict:
    return {"racks": 1, "nodes_per_rack": nodes, "node": {"gpus": 8, "parts": {
        "sw": {"count": 1, "effect": "transient", "failure": {"dist": "fixed", "value_h": fail_at_h}}}}}


_RESTART = {"detection_h": 0.05, "reschedule_h": 0.1, "warmup_h": 0.1, "read_h": 0.05}


def test_async_write_in_flight_is_not_thrown_away_by_the_next_checkpoint() -> None:
    """Two jobs share 0.1 GB/s: each 324 GB async write takes 1.8 h, longer than the 1 h interval (alone:
    0.9 h). A checkpoint that falls due while the previous write is in flight waits for it; before, it
    discarded that write, nothing was ever saved, and the failure at 9 h lost all 7.7 h of progress."""
    ck = {"interval_h": 1, "size_gb": 324, "mode": "async", "async_fraction": 0.1}
    doc = {"name": "shared-async", "seed": 1, "horizon_days": 0.5, "cluster": _qa_cluster(2, 9.0),
           "workload": {"scheduler": {"policy": "fifo", "hot_spares": 0}, "restart": _RESTART,
                        "storage": {"write_gb_per_s": 0.1, "read_gb_per_s": 100},
                        "jobs": [{"name": n, "gpus": 8, "work_h": 20, "checkpoint": ck} for n in ("a", "b")]}}
    res = run_replication(load_dict(doc).scenario, 0)
    jobs = res.tables["jobs"]
    rows = jobs[jobs.record == "job"].set_index("name")
    # at most the progress since the last completed save: one interval plus two shared writes (3.6 h),
    # less the stalls
    assert (rows["lost_h"] <= 1.0 + 2 * 1.8).all() and (rows["lost_h"] > 0).all(), rows["lost_h"]
    assert (rows["checkpoints"] >= 4).all()


def test_backfill_counts_checkpoint_pauses_against_the_reservation() -> None:
    """H (all 4 nodes) can start at 10 h when L ends; S1 (1 node, 8 h of work, a 0.5 h sync write every
    hour: 12 h in all) must not be backfilled at 2 h on the estimate 8 h, which ran to 14 h and
    delayed H with no failure at all."""
    doc = {"name": "backfill-ckpt", "seed": 1, "horizon_days": 40 / 24, "cluster": _qa_cluster(4, 1e9),
           "workload": {"scheduler": {"policy": "backfill", "hot_spares": 0, "placement": "first_fit"},
                        "restart": _RESTART,
                        "jobs": [{"name": "L", "gpus": 16, "work_h": 10, "submit_h": 0},
                                 {"name": "H", "gpus": 32, "work_h": 5, "submit_h": 1},
                                 {"name": "S1", "gpus": 8, "work_h": 8, "submit_h": 2,
                                  "checkpoint": {"interval_h": 1, "write_h": 0.5}}]}}
    res = run_replication(load_dict(doc).scenario, 0)
    jobs = res.tables["jobs"]
    start = jobs[jobs.record == "job"].set_index("name")["first_start_h"]
    assert start["H"] == 10.0 and start["S1"] >= 10.0
    # a job that fits before the reservation, checkpoint pauses included, is still backfilled
    doc["workload"]["jobs"][2]["work_h"] = 5  # 5 h + 5 × 0.5 h = 7.5 h <= 8 h left before 10 h
    res = run_replication(load_dict(doc).scenario, 0)
    jobs = res.tables["jobs"]
    start = jobs[jobs.record == "job"].set_index("name")["first_start_h"]
    assert start["S1"] == 2.0 and start["H"] == 10.0


def test_a_requeued_job_restarts_on_idle_hot_spares() -> None:
    """A 2-node job on 4 nodes with 2 hot spares, GPUs failing every ~20 h, 5 h repairs: when it loses a
    node with no replacement it is requeued, and its healthy nodes and repaired ones top the spare pool
    up first. It must restart as soon as enough healthy idle nodes exist, spares included; before, it
    waited for the spare pool to fill and one node more (3.8 h and 5.9 h too long in this run)."""
    from twin.model.engine import Topic
    from twin.model.workload import QUEUED
    from twin.model.workload.jobs import JOB
    from twin.sim import Model

    doc = {"name": "spare-hoard", "seed": 1, "horizon_days": 2.5,
           "cluster": {"racks": 1, "nodes_per_rack": 4, "node": {"gpus": 8, "parts": {"gpu": {
               "count": 1, "effect": "node_down", "failure": {"mtbf_h": 20.0},
               "repair": {"time": {"dist": "fixed", "value_h": 5.0}}}}}},
           "workload": {"scheduler": {"policy": "fifo", "hot_spares": 2}, "restart": _RESTART,
                        "jobs": [{"name": "j", "gpus": 16, "work_h": 30,
                                  "checkpoint": {"interval_h": 2, "write_h": 0.1, "mode": "sync"}}]}}
    m = Model(load_dict(doc).scenario, 0)
    wl = m.by_section["workload"]
    queued, held_back = [], []

    def check(*_: object) -> None:  # after the workload's own handlers (subscribed first)
        job = wl.jobs[0]
        if job.state == QUEUED:
            queued.append(m.engine.now)
            if len(wl.free) + len(wl.spares) >= job.nodes_needed:
                held_back.append(m.engine.now)

    for topic in (Topic.NODE_UP, Topic.NODE_DOWN, JOB):
        m.engine.bus.subscribe(topic, check)
    m.run()
    assert queued, "the case must requeue the job for the test to bite"
    assert not held_back, held_back


def test_an_aborted_async_write_does_not_complete_the_next_one() -> None:
    """Review finding: after a crash aborts an async write, the restarted job writes the same progress
    again; the aborted write's callback (on its old schedule) completed the new write early, so the
    second crash lost ~1 h instead of ~2 h. Only the latest write may complete it."""
    from twin.model.engine import Topic
    from twin.sim import Model

    ck = {"interval_h": 1, "size_gb": 342, "mode": "async", "async_fraction": 0.1}  # 1.9 h shared by two
    doc = {"name": "stale-async", "seed": 1, "horizon_days": 0.5, "cluster": _qa_cluster(2, 1e9),
           "workload": {"scheduler": {"policy": "fifo", "hot_spares": 0},
                        "storage": {"write_gb_per_s": 0.1, "read_gb_per_s": 100},
                        "restart": {"detection_h": 0.0, "reschedule_h": 0.0, "warmup_h": 0.05, "read_h": 0.0},
                        "jobs": [{"name": n, "gpus": 8, "work_h": 10, "checkpoint": ck} for n in ("K", "J")]}}
    m = Model(load_dict(doc).scenario, 0)
    wl = m.by_section["workload"]
    def crash(cause: str) -> None:
        job = [j for j in wl.jobs if j.name == "J"][0]
        m.engine.bus.publish(Topic.TRANSIENT, int(job.nodes[0]), DownCause.part_failed(cause))

    for t, cause in ((1.2, "crash1"), (3.5, "crash2")):
        m.engine.call_at(t, lambda c=cause: crash(c))
    m.run()
    lost = {r[3].label: r[5] for r in wl.interruptions if r[1] == "J"}
    # crash2 at 3.5 h: the write of progress 1.0 restarted at ~2.25 h ends at ~4.15 h, so nothing newer
    # than the restart point is saved: ~2 h lost (it was ~1 h)
    assert lost["crash2"] > 1.8, lost


def test_backfill_counts_a_requeued_jobs_restart_and_running_jobs_progress() -> None:
    """Review finding: the backfill estimate of a requeued job left out its restart (5 h of warm-up
    here), and running jobs' ends were taken from progress not yet brought up to date; the requeued
    job was backfilled at 3 h, ran to 13 h and delayed the head job's reservation at 10 h."""
    from twin.sim import Model

    doc = {"name": "bf-requeue", "seed": 1, "horizon_days": 1, "cluster": _qa_cluster(4, 1e9),
           "workload": {"scheduler": {"policy": "backfill", "hot_spares": 0, "placement": "first_fit"},
                        "restart": {"detection_h": 0.0, "reschedule_h": 0.0, "warmup_h": 5.0, "read_h": 0.0},
                        "jobs": [{"name": "L", "gpus": 16, "work_h": 10, "submit_h": 0},
                                 {"name": "R", "gpus": 8, "work_h": 6, "submit_h": 0,
                                  "checkpoint": {"interval_h": 1, "write_h": 0.0}},
                                 {"name": "X", "gpus": 8, "work_h": 3, "submit_h": 0},
                                 {"name": "H", "gpus": 24, "work_h": 2, "submit_h": 1, "priority": 1}]}}
    m = Model(load_dict(doc).scenario, 0)
    m.engine.call_at(2.0, lambda: m.cluster.add_down(2, DownCause.part_failed("inj")))  # R's node, never back
    m.run()
    start = {j.name: j.first_start_h for j in m.by_section["workload"].jobs}
    end = {j.name: j.end_h for j in m.by_section["workload"].jobs}
    assert start["H"] == 10.0 and end["R"] > 10.0


def test_a_requeued_head_jobs_reservation_counts_the_hot_spares() -> None:
    """Review finding: a requeued job may restart on hot spares, but its backfill reservation counted
    free nodes only (80 h instead of 50 h here), so a 55 h job was backfilled at 7 h into the nodes it
    needed and it restarted only at 62 h. 7 nodes, 1 hot spare; H (4 nodes) loses node 0 at 5 h (the
    spare replaces it) and node 1 at 6 h (requeued); X and Y (1 node) end at 50 h and 80 h."""
    doc = {"name": "spares-resv", "seed": 1, "horizon_days": 10,
           "cluster": {"racks": 1, "nodes_per_rack": 7, "node": {"type": "dgx-h100", "gpus": 8, "parts": {
               "host": {"count": 1, "effect": "node_down", "failure": {"mtbf_h": 1e12},
                        "repair": {"time": {"dist": "fixed", "value_h": 1000}}}}}},
           "maintenance": {"detection": {"dist": "fixed", "value_h": 0.25},
                           "crews": {"technicians": {"count": 2, "shift": "24x7"}}},
           "workload": {"scheduler": {"policy": "backfill", "hot_spares": 1, "placement": "first_fit"},
                        "jobs": [{"name": "H", "gpus": 32, "work_h": 200}, {"name": "X", "gpus": 8, "work_h": 50},
                                 {"name": "Y", "gpus": 8, "work_h": 80},
                                 {"name": "Z", "gpus": 16, "work_h": 55, "submit_h": 7}]},
           "cooling": {"type": "liquid", "thermal": False,
                       "inject": [{"part": "host", "index": 0, "at_h": 5}, {"part": "host", "index": 1, "at_h": 6}]}}
    res = run_replication(load_dict(doc).scenario, 0)
    jobs = res.tables["jobs"]
    rows = jobs[jobs.record == "job"].set_index("name")
    assert rows.loc["H", "queue_wait_h"] == pytest.approx(44.0)  # requeued at 6 h, restarted at 50 h
    assert math.isnan(rows.loc["Z", "first_start_h"])  # not backfilled into H's nodes


def test_elastic_bad_input_and_replicas_from_the_layout() -> None:
    from twin.errors import InputError
    from twin.validation.cases import held_down_doc

    def load(job: dict) -> object:
        doc = held_down_doc("el", 8, 0, 10.0)
        doc["workload"]["jobs"] = [{"name": "j", "gpus": 64, "work_h": 5.0, **job}]
        return load_dict(doc).scenario

    with pytest.raises(InputError, match=r"workload.jobs.0.elastic.replica_nodes: 3 does not divide the job's 8"):
        load({"elastic": {"replica_nodes": 3}})
    with pytest.raises(InputError, match=r"workload.jobs.0.elastic.replica_nodes: give it"):
        load({"elastic": {}})
    with pytest.raises(InputError, match=r"workload.jobs.0.elastic.min_replicas: 5 is more than the job's 4"):
        load({"elastic": {"replica_nodes": 2, "min_replicas": 5}})
    sc = load({"elastic": {}, "step": {"model": {"layers": 8, "hidden": 1024, "seq_len": 1024, "vocab": 32000,
                                                 "global_batch": 64}, "layout": {"tp": 8, "pp": 2, "dp": 4}}})
    assert sc.workload.jobs[0].elastic.replica_nodes == 2  # tp 8 x pp 2 = 16 GPUs = 2 nodes


def test_twin_run_prints_the_starvation_advisory(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    import yaml

    from twin.validation.cases import held_down_doc

    doc = held_down_doc("starve-run", 4, 2, 60.0)
    doc["workload"]["jobs"] = [{"name": "big", "gpus": 40, "work_h": 10.0, "submit_h": 1.0}]
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(doc))
    assert main(["run", str(tmp_path / "s.yaml"), "--results", str(tmp_path / "r"), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "warning: at 25.0 h: job 'big' (id 1, 5 nodes) has waited 24.0 h" in out, out
    summary = json.loads(next((tmp_path / "r").rglob("summary.json")).read_text())
    assert len(summary["warnings"]) == 1 and "no reservation" in summary["warnings"][0]


def test_node_pool_first_is_the_first_of_its_listing() -> None:
    """``NodePool.first`` (a replacement's one node, without listing the pool) is ``nodes(exclude)[0]``, -1 when
    that listing is empty, with and without excluded nodes and for an empty pool."""
    from twin.model.workload.pools import NodePool

    gen = np.random.default_rng(41)
    for trial in range(300):
        n = int(gen.integers(1, 70))
        pool = NodePool(n)
        for node in np.flatnonzero(gen.random(n) < gen.random()).tolist():
            pool.add(node)
        ex = None if trial % 3 == 0 else gen.random(n) < gen.random()
        listed = pool.nodes(ex)
        assert pool.first(ex) == (int(listed[0]) if len(listed) else -1)


def test_a_restarts_node_array_is_at_its_remembered_load_after_a_swap(monkeypatch: pytest.MonkeyPatch) -> None:
    """An interrupted job's new node array (the kept nodes and a replacement) inherits the load memo of the array it
    replaces when its replacement is at that load (``Interruptions._interrupt``): the restart's load write is then
    not asked of the cluster. Every restart begun in 10 days of ``pretrain-16k`` (failures, spares swapped in)
    finds every node of its array at the remembered load in the cluster, and the memo carried over, not written."""
    from pathlib import Path

    from twin.model.workload.checkpointing import Checkpointing
    from twin.scenario import load_scenario
    from twin.sim import Model

    sc = load_scenario(Path(__file__).resolve().parent.parent / "scenarios" / "pretrain-16k.yaml",
                       ["horizon_days=10"]).scenario
    model = Model(sc, 0)
    seen = {"restarts": 0, "carried": 0}
    begin = Checkpointing._begin_restart

    def checked(self: Checkpointing, job: object) -> None:
        memo = job.load_memo  # type: ignore[attr-defined]
        nodes = job.nodes  # type: ignore[attr-defined]
        if memo is not None and memo[0] is nodes:
            seen["carried"] += 1
            assert np.all(self.cluster.node_util[nodes] == memo[1])
        seen["restarts"] += 1
        begin(self, job)  # type: ignore[arg-type]
        memo = job.load_memo  # type: ignore[attr-defined]
        assert memo is not None and memo[0] is job.nodes  # type: ignore[attr-defined]
        assert np.all(self.cluster.node_util[job.nodes] == memo[1])  # type: ignore[attr-defined]

    monkeypatch.setattr(Checkpointing, "_begin_restart", checked)
    model.run()
    assert seen["restarts"] > 20, seen
    assert seen["carried"] > seen["restarts"] // 2, seen
