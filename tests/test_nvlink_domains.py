"""NVLink domains as scheduling units (cluster.nvlink; issue 28 item 5): a tensor-parallel group never
spans a domain (property test over random job mixes, failures and replacements); a failed switch tray
slows exactly the jobs in its domain by what the step-time model predicts; below the trays' threshold
the domain is down and its jobs are interrupted; bad declarations are one-line errors; the bundled
NVL72 scenario runs and prints its run-time limiter."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

from twin.model.causes import DownCause
from twin import cli
from twin.errors import InputError
from twin.model.workload import Workload, parallel_rate
from twin.model.workload.jobs import JOB
from twin.scenario.loader import load_dict, load_scenario
from twin.sim import Model

ROOT = Path(__file__).resolve().parents[1]
NEVER = {"mtbf_h": 1e15}
SHAPE = {"layers": 8, "hidden": 1024, "heads": 16, "seq_len": 512, "vocab": 8000, "global_batch": 64}


def doc(racks: int, npr: int, gpn: int, jobs: list[dict[str, Any]], domain_nodes: int | None = None,
        gpu_mtbf_h: float = 1e15, trays: dict[str, Any] | None = None, days: float = 2.0) -> dict[str, Any]:
    nv: dict[str, Any] = {"gbyte_s_per_gpu": 900.0}
    if domain_nodes is not None:
        nv["domain_nodes"] = domain_nodes
    rack_parts: dict[str, Any] = {}
    if trays is not None:
        rack_parts["nvswitch"] = trays
        nv["switch_part"] = "nvswitch"
    return {
        "name": "domains", "seed": 11, "horizon_days": days,
        "cluster": {"racks": racks, "nodes_per_rack": npr, "rack_parts": rack_parts, "nvlink": nv,
                    "node": {"gpus": gpn, "parts": {
                        "gpu": {"count": 1, "per": "gpu", "failure": {"mtbf_h": gpu_mtbf_h},
                                "repair": {"time": {"dist": "fixed", "value_h": 3.0}}}}}},
        "maintenance": {"detection": {"dist": "fixed", "value_h": 0.1},
                        "crews": {"techs": {"count": 4, "shift": "24x7"}}},
        "workload": {"scheduler": {"policy": "backfill", "hot_spares": 0}, "jobs": jobs},
    }


def layout_job(name: str, gpn: int, tp: int, pp: int, dp: int, work_h: float, submit_h: float = 0.0) -> dict[str, Any]:
    return {"name": name, "gpus": tp * pp * dp, "work_h": work_h, "submit_h": submit_h,
            "checkpoint": {"interval_h": 1.0, "write_h": 0.01},
            "step": {"model": {**SHAPE, "global_batch": 8 * dp}, "layout": {"tp": tp, "pp": pp, "dp": dp}}}


def tp_groups_in_one_domain(nodes: np.ndarray, tp: int, gpn: int, domain_nodes: int) -> bool:
    """Ranks tp innermost over the job's sorted nodes (gpn GPUs each): every tp group in one domain."""
    gpu_domain = np.repeat(np.sort(nodes) // domain_nodes, gpn)
    groups = gpu_domain.reshape(-1, tp)
    return bool((groups == groups[:, :1]).all())


@hs.composite
def job_mixes(draw: Any) -> tuple[int, int, int, int, list[dict[str, Any]]]:
    gpn = draw(hs.sampled_from([2, 4]))
    domain_nodes = draw(hs.sampled_from([4, 6, 8]))
    racks = draw(hs.integers(2, 4))
    npr = domain_nodes * draw(hs.integers(1, 2))
    n_nodes = racks * npr
    jobs = []
    for i in range(draw(hs.integers(1, 6))):
        k = draw(hs.sampled_from([d for d in (1, 2, 3, 4) if domain_nodes % d == 0]))  # tp = k nodes
        tp = k * gpn if k > 1 else draw(hs.sampled_from([1, gpn]))
        pp = draw(hs.integers(1, 2))
        max_dp = max(1, n_nodes * gpn // (tp * pp * 2))
        dp = draw(hs.integers(1, max(1, min(max_dp, 6))))
        work = draw(hs.floats(2.0, 30.0))
        jobs.append(layout_job(f"j{i}", gpn, tp, pp, dp, work, submit_h=draw(hs.floats(0.0, 10.0))))
    return racks, npr, gpn, domain_nodes, jobs


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(job_mixes())
def test_a_tp_group_never_spans_a_domain(mix: tuple[int, int, int, int, list[dict[str, Any]]]) -> None:
    """Random job mixes on random domains, with GPU failures (MTBF 200 h per GPU: nodes are lost and
    replaced while jobs run): at every job state change every allocated job's tp groups are each in one
    domain, and its nodes in every domain are whole units."""
    racks, npr, gpn, dn, jobs = mix
    sc = load_dict(doc(racks, npr, gpn, jobs, domain_nodes=dn, gpu_mtbf_h=200.0)).scenario
    m = Model(sc, 0)
    wl = next(c for c in m.components if isinstance(c, Workload))
    checked = [0]

    def check(_job: Any) -> None:
        for job in wl.allocated.values():
            lay = job.step.layout
            if not len(job.nodes) or lay.tp <= gpn:
                continue
            assert tp_groups_in_one_domain(job.nodes, lay.tp, gpn, dn), (job.name, job.nodes.tolist(), lay.tp)
            assert (np.bincount(job.nodes // dn) % (lay.tp // gpn) == 0).all()
            assert len(set(job.nodes.tolist())) == len(job.nodes) and (wl.owner[job.nodes] == job.jid).all()
            checked[0] += 1

    m.engine.bus.subscribe(JOB, check)
    m.run()
    assert m.result().metrics["goodput"] >= 0.0


def test_the_property_holds_in_a_mix_where_replacements_and_fragmentation_happen() -> None:
    """A fixed case of the property test that exercises the paths it guards (not left to chance):
    3 domains of 4 two-GPU nodes: job a (tp 4: 2-node units, 4 nodes) packed in domain 0, job b (tp 2,
    3 nodes) in domain 1, job c (tp 4, 2 nodes) in domain 2, free nodes 7, 10, 11. Node 0 of job a goes
    down: domain 0 has no free node to complete its unit, so the unit's other node (3) is given up and
    a whole unit (10, 11) taken in domain 2: never one node across two domains."""
    jobs = [layout_job("a", 2, 4, 1, 2, 50.0), layout_job("b", 2, 2, 1, 3, 50.0),
            layout_job("c", 2, 4, 1, 1, 50.0)]
    sc = load_dict(doc(3, 4, 2, jobs)).scenario
    m = Model(sc, 0)
    wl = next(c for c in m.components if isinstance(c, Workload))
    snaps: dict[str, list[int]] = {}
    m.engine.call_at(1.0, lambda: snaps.setdefault("before", wl._by_id[1].nodes.tolist()))
    m.engine.call_at(2.0, lambda: m.cluster.add_down(int(wl._by_id[1].nodes[0]), DownCause.part_failed("test")))
    m.engine.call_at(3.0, lambda: snaps.setdefault("after", wl._by_id[1].nodes.tolist()))
    m.run()
    before, after = snaps["before"], snaps["after"]
    assert len({n // 4 for n in before}) == 1  # one domain (packed)
    assert len(after) == 4 and before[0] not in after
    assert tp_groups_in_one_domain(np.array(after), 4, 2, 4)
    # its lost node's partner was given up (no free node in its domain): two units, in two domains
    assert sorted(np.bincount(np.array(after) // 4, minlength=3).tolist()) == [0, 2, 2]


def _switch_tray_case() -> tuple[Model, Workload]:
    trays = {"count": 4, "required": 4, "min_to_run": 2, "effect": "redundant", "failure": NEVER,
             "repair": {"hot_swap": True, "time": {"dist": "fixed", "value_h": 5.0}}}
    jobs = [layout_job("a", 4, 8, 2, 2, 1e4), layout_job("b", 4, 8, 2, 2, 1e4)]  # 8 nodes each: one rack each
    for j in jobs:
        j["checkpoint"] = {}  # running throughout: the slowdown accrues over the whole repair
    sc = load_dict(doc(2, 8, 4, jobs, trays=trays, days=1.0)).scenario
    m = Model(sc, 0)
    return m, next(c for c in m.components if isinstance(c, Workload))


def test_a_failed_switch_tray_slows_exactly_the_jobs_of_its_domain() -> None:
    """A tray of rack 0 (1 of 4) fails at 2 h: job a (rack 0) runs at the step-time model's rate with 3/4
    of the NVLink bandwidth, job b (rack 1) is untouched; after the repair (detection 0.1 h + 5 h) both
    run at full rate; the lost running time is the nvlink slowdown bucket."""
    m, wl = _switch_tray_case()
    seen: dict[str, tuple[float, float]] = {}

    def look(key: str) -> None:
        a, b = wl._by_id[1], wl._by_id[2]
        seen[key] = (a.rate, b.rate)

    pop = m.facility["nvswitch"]
    m.engine.call_at(1.0, lambda: look("healthy"))
    m.engine.call_at(2.0, lambda: pop.fail_now(0))  # unit 0: rack 0
    m.engine.call_at(3.0, lambda: look("tray down"))
    m.engine.call_at(8.0, lambda: look("repaired"))
    m.run()
    a = wl._by_id[1]
    assert int(a.nodes.max()) < 8  # job a on rack 0
    st = a.step
    nic = st.layout.nic_gbit_s
    want = parallel_rate(st, 1.0, nic, 1.0, 32, 0.75)
    assert want == (st.breakdown().total_s / st.breakdown(nvlink_share=0.75).total_s)  # the physics, again
    assert 0.0 < want < 1.0
    assert seen["healthy"] == (1.0, 1.0)
    assert seen["tray down"][0] == pytest.approx(want, rel=1e-12) and seen["tray down"][1] == 1.0
    assert seen["repaired"] == (1.0, 1.0)
    res = m.result()
    gpus_h = 32 * (1.0 - want) * 5.1  # job a's GPUs × rate lost × the hours the tray was down
    installed = 64 * 24.0
    assert res.metrics["goodput.slowdown.nvlink"] == pytest.approx(gpus_h / installed, rel=1e-9)
    assert res.metrics["goodput.mechanism.nvlink_slowdown"] == res.metrics["goodput.slowdown.nvlink"]
    assert res.metrics["goodput.slowdown.placement"] == 0.0
    sb = res.tables["step_breakdown"].set_index("name")
    assert sb.loc["a", "mean_step_s"] > sb.loc["b", "mean_step_s"] == pytest.approx(st.breakdown().total_s)


def test_below_the_trays_threshold_the_domain_is_down_and_its_jobs_interrupted() -> None:
    m, wl = _switch_tray_case()
    pop = m.facility["nvswitch"]
    down: list[bool] = []
    m.engine.call_at(2.0, lambda: pop.fail_now(0))
    m.engine.call_at(2.5, lambda: pop.fail_now(1))
    m.engine.call_at(2.6, lambda: pop.fail_now(2))  # 1 of 4 left, below min_to_run 2
    m.engine.call_at(3.0, lambda: down.append(not m.cluster.is_up(0)))
    m.run()
    jt = m.result().tables["jobs"]
    ints = jt[jt.record == "interruption"]
    assert down == [True]
    assert ints.cause.tolist() == ["nvswitch"] and ints.name.tolist() == ["a"]


@pytest.mark.parametrize("patch,needle", [
    ({"domain_nodes": 3}, "cluster.nvlink.domain_nodes"),
    ({"switch_part": "nvswtich"}, "cluster.nvlink.switch_part"),
    ({"domain_nodes": 4, "switch_part": "nvswitch"}, "domain_nodes must equal nodes_per_rack"),
])
def test_bad_domains_are_one_clear_error(patch: dict[str, Any], needle: str) -> None:
    trays = {"count": 4, "required": 4, "min_to_run": 2, "effect": "redundant", "failure": NEVER}
    d = doc(2, 8, 4, [layout_job("a", 4, 8, 1, 1, 10.0)], trays=trays)
    d["cluster"]["nvlink"].update(patch)
    with pytest.raises(InputError) as e:
        load_dict(d)
    assert needle in str(e.value)


def test_tp_spanning_nodes_needs_domains() -> None:
    d = doc(2, 8, 4, [layout_job("a", 4, 8, 1, 1, 10.0)])
    del d["cluster"]["nvlink"]
    with pytest.raises(InputError) as e:
        load_dict(d)
    assert "workload.jobs.0.step.layout.tp" in str(e.value) and "own NVLink domain" in str(e.value)
    d = doc(2, 8, 4, [layout_job("a", 4, 12, 1, 1, 10.0)])  # 3 trays per group: divides no 32-GPU domain
    with pytest.raises(InputError) as e:
        load_dict(d)
    assert "step.layout.tp" in str(e.value)


def test_scenarios_without_domains_schedule_as_before() -> None:
    """No cluster.nvlink: no Domains object, every job's unit is 1 (the scheduler's paths unchanged)."""
    sc = load_scenario(ROOT / "scenarios" / "fabric-stress.yaml", ["horizon_days=1"]).scenario
    m = Model(sc, 0)
    wl = next(c for c in m.components if isinstance(c, Workload))
    assert wl.domains is None and all(j.unit == 1 for j in wl.jobs)


def test_nvl72_scenario_runs_and_prints_its_limiter(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["run", str(ROOT / "scenarios" / "nvl72.yaml"), "--set", "horizon_days=10",
                     "--results", str(tmp_path), "--quiet"])
    out = capsys.readouterr().out
    assert code == 0
    line = next(x for x in out.splitlines() if x.startswith("step gpt-175b"))
    assert "tp 8 × pp 3 × dp 24" in line and "compute" in line and "limited by tp" in line
    sc = load_scenario(ROOT / "scenarios" / "nvl72.yaml").scenario
    lay = sc.workload.jobs[0].step.layout
    assert lay.nvlink_domain_gpus == 72 and lay.nvlink_gbyte_s == 900.0  # from cluster.nvlink
    per_rack_kw = sc.cluster.nodes_per_rack * sc.cluster.node.full_power_w / 1e3
    assert 120.0 <= per_rack_kw <= 132.0


def test_the_step_is_evaluated_once_per_state_of_its_inputs() -> None:
    """On nvl72 (30 days: failures, replacements, switch trays) the step model runs once per distinct
    (speed, NIC, share, NVLink block, NVLink share) of the job, not per event: a handful of
    evaluations for thousands of events."""
    from twin.model.workload import parallel_breakdown

    sc = load_scenario(ROOT / "scenarios" / "nvl72.yaml", ["horizon_days=30"]).scenario
    parallel_breakdown.cache_clear()
    m = Model(sc, 0)
    m.run()
    events = m.result().events_processed
    info = parallel_breakdown.cache_info()
    assert events > 1000 and info.misses <= 10 and info.hits > info.misses, (events, info)
