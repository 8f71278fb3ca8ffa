"""A job keeps to its node pool (issue 52): ``workload.jobs.<i>.pool``, ``workload.synthetic.pool`` and
``workload.trace.pool`` name the node type a job's nodes must be of, as a Slurm partition of a mixed-generation
cluster. Each case is computed in the test from a hall of 4 old nodes (0-3, 989 TFLOP/s) and a pool ``b200`` of
new nodes (2x the peak: the old nodes carry a `generation` speed cap of 0.5)."""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml

from twin.cli import main
from twin.model.jobqueue import JobQueue
from twin.model.workload.jobs import JOB
from twin.scenario.loader import load_dict
from twin.sim import Model

NEVER = {"dist": "fixed", "value_h": 1e9}
OLD_NODES = {0, 1, 2, 3}


def hall(pool_racks: int = 1, jobs: list[dict[str, Any]] | None = None, policy: str = "backfill",
         pool_failure: dict[str, Any] | None = None) -> dict[str, Any]:
    """Two racks of 2 old nodes (cluster.node, type ``old``) and ``pool_racks`` racks of pool ``b200``."""
    new: dict[str, Any] = {"type": "new", "peak_tflops": 1978.0}
    if pool_failure is not None:
        new["parts"] = {"gpu": {"failure": pool_failure}}
    return {
        "name": "pool-jobs", "seed": 11, "horizon_days": 20,
        "cluster": {"racks": 2 + pool_racks, "nodes_per_rack": 2, "node": {
            "type": "old", "gpus": 8, "peak_tflops": 989.0, "gpu": {"tdp_w": 700.0, "idle_w": 100.0},
            "non_gpu_w": 3000.0,
            "parts": {"gpu": {"count": 1, "effect": "node_down", "failure": NEVER,
                              "repair": {"time": {"dist": "fixed", "value_h": 1.0}}}}},
            "pools": [{"name": "b200", "racks": pool_racks, "node": new}]},
        "maintenance": {"crews": {"technicians": {"count": 10, "shift": "24x7"}}},
        "workload": {"scheduler": {"policy": policy, "hot_spares": 0}, "jobs": jobs or []},
    }


def run(doc: dict[str, Any], queue: JobQueue[Any] | None = None) -> tuple[pd.DataFrame, dict[str, set[int]]]:
    """The jobs table and, per job name, every node it held at any of its state changes."""
    m = Model(load_dict(doc).scenario, 0)
    wl = m.by_section["workload"]
    if queue is not None:
        wl.queue = queue
    held: dict[str, set[int]] = {}

    def seen(job: Any) -> None:
        held.setdefault(job.spec.name, set()).update(job.nodes.tolist())

    m.engine.bus.subscribe(JOB, seen)
    m.run()
    jobs = m.result().tables["jobs"]
    return jobs[jobs.record == "job"].set_index("name"), held


# The backfill case: A holds both b200 nodes until 10 h; O1 (1 old node, 1.5 h of work at the old pace: 3 h)
# and O2 (1 old node, 50 h) leave 2 old nodes free; H (b200, 2 nodes) heads the queue from 0.1 h; Y (any node,
# 2 nodes, 3 h of work at full speed by the estimate) arrives at 0.3 h.
CASE = [
    {"name": "A", "gpus": 16, "work_h": 10.0, "pool": "b200"},
    {"name": "O1", "gpus": 8, "work_h": 1.5, "pool": "old"},
    {"name": "O2", "gpus": 8, "work_h": 25.0, "pool": "old"},
    {"name": "H", "gpus": 16, "work_h": 5.0, "pool": "new", "submit_h": 0.1},   # (by the pool's node type)
    {"name": "Y", "gpus": 16, "work_h": 3.0, "submit_h": 0.3},
]


@functools.cache
def case() -> tuple[pd.DataFrame, dict[str, set[int]]]:
    return run(hall(jobs=CASE))


def test_a_job_of_the_new_pool_runs_on_its_nodes_at_the_new_pace() -> None:
    """Excludes: the scheduler ignores the job's pool (A would be packed on old nodes 0-1 and run at half
    speed, 20 h), or the new nodes keep a `generation` cap (20 h)."""
    jobs, held = case()
    assert held["A"] == {4, 5}
    assert jobs.loc["A", "first_start_h"] == 0.0
    assert jobs.loc["A", "end_h"] == pytest.approx(10.0, rel=1e-12)   # 10 h of work at the new peak


def test_a_job_of_the_old_pool_runs_at_the_old_pace() -> None:
    """Excludes: an old-pool job placed on new nodes (1.5 h) or paced without its generation cap."""
    jobs, held = case()
    assert held["O1"] <= OLD_NODES and held["O2"] <= OLD_NODES
    assert jobs.loc["O1", "end_h"] == pytest.approx(1.5 / 0.5, rel=1e-12)   # 989 / 1978 of full speed
    assert jobs.loc["O2", "end_h"] == pytest.approx(25.0 / 0.5, rel=1e-12)


def test_a_job_waits_for_its_own_pool_while_the_other_is_free() -> None:
    """Excludes: the fit test counting every free node (H would start at 0.1 h on the two free old nodes)."""
    jobs, held = case()
    assert held["H"] == {4, 5}
    assert jobs.loc["H", "first_start_h"] == pytest.approx(10.0, rel=1e-12)   # when A gives the b200 nodes back
    assert jobs.loc["H", "end_h"] == pytest.approx(15.0, rel=1e-12)


def test_the_heads_reservation_counts_only_its_pool() -> None:
    """H's reservation is A's end (10 h), the b200 nodes spare then 0: Y ends by it by the estimate (0.3 + 3 h)
    and backfills at once. Excludes: a reservation counting every pool's nodes (2 free old nodes and O1's at
    3 h: reserved at 3 h with 1 node spare, so Y, 2 nodes ending after 3 h, would wait until O1 ends)."""
    jobs, held = case()
    assert jobs.loc["Y", "first_start_h"] == pytest.approx(0.3, rel=1e-12)
    assert held["Y"] <= OLD_NODES   # (the free nodes: any pool may be used)
    assert jobs.loc["Y", "end_h"] == pytest.approx(0.3 + 3.0 / 0.5, rel=1e-12)


def test_a_failed_nodes_replacement_comes_from_the_jobs_pool() -> None:
    """Pool b200 (4 nodes, 4-7) fails often; the job J (b200, 2 nodes) loses nodes and takes replacements while
    the old nodes 0-3 stay free. Excludes: a replacement ignoring the job's pool (it takes the lowest free
    ids, old nodes); also an elastic job's swap and growth (E, one-node replicas)."""
    jobs = [{"name": "J", "gpus": 16, "work_h": 200.0, "pool": "b200"}]
    doc = hall(pool_racks=2, jobs=jobs, pool_failure={"dist": "exponential", "mean_h": 60.0})
    table, held = run(doc)
    assert table.loc["J", "interruptions"] >= 3   # (the case must replace nodes for the test to bite)
    assert held["J"] <= {4, 5, 6, 7} and len(held["J"]) > 2
    doc["workload"]["jobs"] = [{"name": "E", "gpus": 24, "work_h": 200.0, "pool": "b200",
                                "elastic": {"replica_nodes": 1, "min_replicas": 1}}]
    table, held = run(doc)
    assert held["E"] <= {4, 5, 6, 7} and len(held["E"]) == 4   # (3 replicas: it swapped or grew in its pool)


def test_an_unrestricted_job_still_spans_both_generations() -> None:
    """The default (pool null): today's behaviour, a job of 6 nodes on both pools at the old pace. Excludes: a
    default that keeps to one pool (it could never start: 4 and 2 nodes)."""
    jobs, held = run(hall(jobs=[{"name": "S", "gpus": 48, "work_h": 10.0}]))
    assert held["S"] == {0, 1, 2, 3, 4, 5}
    assert jobs.loc["S", "end_h"] == pytest.approx(20.0, rel=1e-12)


def test_the_queue_index_passes_over_a_job_that_does_not_fit_its_pool() -> None:
    """The queue's index narrows by size over all free nodes; a b200 job it returns while only old nodes are free
    is hidden for the pass, and every later job still gets its chance. The same schedule with the index from the
    first job (JobQueue(0, 0)) as with the short queue's list. Excludes: a restricted job that blocks the pass
    (the old-pool jobs behind it would wait) or one started on nodes of another pool."""
    jobs = [{"name": "A", "gpus": 16, "work_h": 10.0, "pool": "b200"}]
    jobs += [{"name": f"b{k}", "gpus": 8, "work_h": 1.0, "pool": "b200", "submit_h": 0.1 + 0.01 * k}
             for k in range(3)]
    jobs += [{"name": f"o{k}", "gpus": 8, "work_h": 2.0, "pool": "old", "submit_h": 0.2 + 0.01 * k}
             for k in range(6)]
    listed, held = run(hall(jobs=jobs))
    indexed, held_ix = run(hall(jobs=jobs), JobQueue(0, 0))
    pd.testing.assert_frame_equal(listed, indexed)
    assert held == held_ix
    for k in range(3):
        assert held[f"b{k}"] <= {4, 5} and listed.loc[f"b{k}", "first_start_h"] >= 10.0
    # the old-pool jobs, 4 h each at the old pace, run 4 at a time from their submission
    starts = sorted(listed.loc[[f"o{k}" for k in range(6)], "first_start_h"])
    assert starts[:4] == pytest.approx([0.2, 0.21, 0.22, 0.23])
    assert starts[4:] == pytest.approx([4.2, 4.21])
    assert all(held[f"o{k}"] <= OLD_NODES for k in range(6))


def test_a_synthetic_stream_keeps_to_its_pool() -> None:
    """Excludes: the synthetic stream's pool not reaching its jobs."""
    doc = hall(jobs=[])
    doc["workload"]["synthetic"] = {"arrival_rate_per_h": 1.0, "gpus": {"values": [8, 16]},
                                    "work": {"dist": "fixed", "value_h": 2.0}, "pool": "b200"}
    doc["horizon_days"] = 2
    jobs, held = run(doc)
    assert len(jobs) > 10
    assert set().union(*held.values()) == {4, 5}


def bad(tmp_path: Path, capsys: pytest.CaptureFixture[str], doc: dict[str, Any]) -> str:
    p = tmp_path / "s.yaml"
    p.write_text(yaml.safe_dump(doc))
    assert main(["run", str(p), "--dry-run", "--results", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


def test_bad_pools_are_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = bad(tmp_path, capsys, hall(jobs=[{"name": "x", "gpus": 8, "work_h": 1.0, "pool": "h200"}]))
    assert "workload.jobs.0.pool" in err and "'h200'" in err and "b200" in err
    # more nodes than its pool has (3 > 2), though the hall has 6
    err = bad(tmp_path, capsys, hall(jobs=[{"name": "x", "gpus": 24, "work_h": 1.0, "pool": "b200"}]))
    assert "workload.jobs.0.gpus" in err and "pool 'b200'" in err and "only 2" in err
    doc = hall()
    doc["workload"]["synthetic"] = {"arrival_rate_per_h": 1.0, "gpus": {"values": [8, 40]},
                                    "work": {"dist": "fixed", "value_h": 2.0}, "pool": "old"}
    err = bad(tmp_path, capsys, doc)
    assert "workload.synthetic.gpus.values" in err and "only 4" in err


def test_a_timeline_step_sets_the_jobs_pool(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A step's `set` takes the new field by its dotted path; the pool must exist in the stage it applies to."""
    doc = hall(jobs=[{"name": "A", "gpus": 16, "work_h": 10.0}])
    doc["cluster"].pop("pools")
    doc["cluster"]["racks"] = 3
    step = {"name": "refresh", "day": 10, "set": {
        "cluster.pools": [{"name": "b200", "racks": 1, "node": {"type": "new", "peak_tflops": 1978.0}}],
        "workload.jobs.0.pool": "b200"}}
    doc["timeline"] = {"steps": [step]}
    sc = load_dict(copy.deepcopy(doc)).scenario
    assert sc.timeline is not None
    assert [s.workload.jobs[0].pool for s in sc.timeline.stages if s.workload is not None] == [None, "b200"]
    step["set"] = {"workload.jobs.0.pool": "b200"}   # no pool b200 in that stage
    err = bad(tmp_path, capsys, doc)
    assert "timeline.steps.0" in err and "workload.jobs.0.pool" in err


def test_a_pool_of_the_whole_hall_is_the_unrestricted_path() -> None:
    """A job naming cluster.node.type in a hall without pools takes the unrestricted path (no mask)."""
    doc = hall(jobs=[{"name": "A", "gpus": 16, "work_h": 10.0, "pool": "old"}])
    doc["cluster"].pop("pools")
    m = Model(load_dict(doc).scenario, 0)
    m.run()
    job = m.by_section["workload"].jobs[0]
    assert job.spec.pool == "old" and job.spec.excl is None
    mask = m.by_section["workload"]._excl_of("old")
    assert mask is None and np.all(job.nodes >= 0)


@pytest.mark.parametrize("seed,policy,spares", [(1, "backfill", 1), (2, "backfill", 0), (3, "fifo", 2)])
def test_the_indexed_scheduler_decides_as_the_scan_with_pools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              seed: int, policy: str, spares: int) -> None:
    """The scheduler through the queue's index decides as the plain scan of the queue in order
    (tests/test_trace_scale.py's reference, with each job's pool) in a hall of two pools of 8 nodes: a trace of
    600 jobs on the old pool, a synthetic stream on the new one and two jobs of any node, with failures.
    Excludes: a restricted job the index returns that does not fit its pool stopping or skewing the pass, a
    head's reservation or backfill that the scan would not make."""
    from test_trace_scale import ScanWorkload, trace_scenario

    from twin import sim
    from twin.model.workload import Workload
    from twin.scenario.loader import load_scenario
    from twin.sim import run_replication

    r = np.random.default_rng(seed)
    n = 600
    rows = pd.DataFrame({"submit_h": np.round(r.uniform(0, 200, n), 1),
                         "gpus": r.choice([8, 16, 24, 64], n, p=[.4, .25, .2, .15]),
                         "duration_h": np.round(r.lognormal(np.log(4), 1.0, n), 2),
                         "priority": r.choice([0, 0, 1, 3], n)})
    p = trace_scenario(tmp_path, rows, horizon_days=12, parts=True, policy=policy, spares=spares,
                       ckpt={"interval_h": 1.0, "size_gb": 300, "mode": "async"})
    doc = yaml.safe_load(p.read_text())
    doc["cluster"]["node"]["type"] = "old"
    doc["cluster"]["pools"] = [{"name": "b", "racks": 1, "node": {"type": "new"}}]
    wl = doc["workload"]
    wl["trace"]["pool"] = "old"
    wl["synthetic"] = {"arrival_rate_per_h": 1.0, "gpus": {"values": [8, 16, 48]},
                       "work": {"dist": "lognormal", "mean_h": 3.0, "sigma": 1.0}, "pool": "b", "priority": 1}
    wl["jobs"] = [{"name": f"any{k}", "gpus": 24, "work_h": 5.0, "repeat": True, "submit_h": 10.0 * k}
                  for k in range(2)]
    p.write_text(yaml.safe_dump(doc))
    sc = load_scenario(p).scenario
    new = run_replication(sc, 0)
    monkeypatch.setattr(sim, "COMPONENTS", tuple(ScanWorkload if c is Workload else c for c in sim.COMPONENTS))
    old = run_replication(sc, 0)
    pd.testing.assert_frame_equal(new.tables["jobs"], old.tables["jobs"], check_exact=True)
    jobs = new.tables["jobs"]
    assert jobs[jobs.record == "interruption"].shape[0] > 0 and (jobs.queue_wait_h > 1).any()


def test_a_trace_keeps_to_its_pool_and_a_row_larger_than_it_is_refused(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """Excludes: trace rows placed on any node, or a row larger than its pool accepted (it could never start)."""
    pd.DataFrame({"submit_h": [0.0, 0.5, 1.0], "gpus": [8, 16, 8], "duration_h": [2.0, 1.0, 1.0]}).to_csv(
        tmp_path / "t.csv", index=False)
    doc = hall()
    doc["workload"]["trace"] = {"file": "t.csv", "pool": "b200"}
    p = tmp_path / "s.yaml"
    p.write_text(yaml.safe_dump(doc))
    from twin.scenario.loader import load_scenario

    m = Model(load_scenario(p).scenario, 0)
    held: set[int] = set()
    m.engine.bus.subscribe(JOB, lambda job: held.update(job.nodes.tolist()))
    m.run()
    jobs = m.result().tables["jobs"]
    assert held == {4, 5}
    # the 16-GPU row waits for the first row's node (2 h at the new pace) though the old nodes are free; the third
    # (1 h from 1.0 h) backfills on the other b200 node, ending by that reservation
    assert jobs[jobs.record == "job"].first_start_h.tolist() == pytest.approx([0.0, 2.0, 1.0])
    pd.DataFrame({"submit_h": [0.0], "gpus": [24], "duration_h": [1.0]}).to_csv(tmp_path / "t.csv", index=False)
    assert main(["run", str(p), "--dry-run", "--results", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert "row 1: gpus" in err and len(err.splitlines()) == 1


def test_a_trace_rows_pool_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A trace's `pool` column gives each row's job its pool (empty: the trace's `pool`, here any node).
    Excludes: the column ignored (row 1 would take the lowest free nodes, old ones), a row's cell not checked
    against the hall's pools or its pool's size."""
    pd.DataFrame({"submit_h": [0.0, 0.0, 0.0], "gpus": [16, 8, 32], "duration_h": [2.0, 2.0, 2.0],
                  "pool": ["b200", "old", ""]}).to_csv(tmp_path / "t.csv", index=False)
    doc = hall(policy="fifo")
    doc["workload"]["scheduler"]["placement"] = "first_fit"
    doc["workload"]["trace"] = {"file": "t.csv"}
    p = tmp_path / "s.yaml"
    p.write_text(yaml.safe_dump(doc))
    from twin.scenario.loader import load_scenario

    m = Model(load_scenario(p).scenario, 0)
    held: dict[str, set[int]] = {}
    m.engine.bus.subscribe(JOB, lambda job: held.setdefault(job.spec.name, set()).update(job.nodes.tolist()))
    m.run()
    assert held["trace00001"] == {4, 5} and held["trace00002"] == {0}
    assert held["trace00003"] == {1, 2, 3, 4}   # any node: after row 1's b200 nodes return (fifo, first fit)
    for cells, what in ((["h200", "", ""], "row 1: pool"), (["old", "", "b200"], "row 3: gpus")):
        pd.DataFrame({"submit_h": [0.0] * 3, "gpus": [8, 8, 24], "duration_h": [1.0] * 3,
                      "pool": cells}).to_csv(tmp_path / "t.csv", index=False)
        assert main(["run", str(p), "--dry-run", "--results", str(tmp_path / "r")]) == 2
        err = capsys.readouterr().err.strip()
        assert what in err and len(err.splitlines()) == 1, err
