"""The shared storage (issue 29; docs/guide/storage.md): data stalls, checkpoint contention, the storage
system as a failing component, its outputs. Deterministic cases to 1e-9; the statistical one (k of n
servers) is the validation case ``storage_k_of_n`` (twin/validation/storage.py), run quick here."""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from twin.model.causes import DownCause
from twin.cli import main as twin_main
from twin.errors import InputError
from twin.physics import storage as phys
from twin.scenario import load_scenario
from twin.scenario.loader import load_dict
from twin.sim import Model, run_replication
from twin.validation import storage as vs
from twin.validation.framework import TEST_CONFIDENCE, Settings

from judging import assert_judged

ROOT = Path(__file__).resolve().parent.parent
QUICK = Settings(quick=True, confidence=TEST_CONFIDENCE)  # the suite's error budget (tests/judging.py)


def _mech_sum(m: dict[str, float]) -> float:
    return m["goodput"] + sum(v for k, v in m.items() if k.startswith("goodput.mechanism."))


# ---- equations ---------------------------------------------------------------------------------------

def test_water_fill_is_max_min_fair() -> None:
    assert phys.water_fill(100.0, [10.0, 20.0]) == math.inf  # everyone gets its demand
    lvl = phys.water_fill(100.0, [16.0, 160.0])
    assert lvl == pytest.approx(84.0, rel=1e-12)
    demands = [5.0, 30.0, 60.0, 90.0]
    lvl = phys.water_fill(120.0, demands)
    assert sum(min(d, lvl) for d in demands) == pytest.approx(120.0, rel=1e-12)
    assert lvl == pytest.approx(42.5, rel=1e-12) and demands[1] < lvl <= demands[2]
    # elastic streams (checkpoint reads) take the level: one read next to a small and a large demand
    lvl = phys.water_fill(100.0, [10.0, 200.0], elastic=1)
    assert lvl == pytest.approx(45.0, rel=1e-12)
    assert phys.water_fill(100.0, [], elastic=4) == 25.0  # today's equal share R / readers
    with pytest.raises(ValueError):
        phys.water_fill(-1.0, [1.0])


def test_progress_rate_is_share_over_demand_when_demand_exceeds_share() -> None:
    assert phys.data_limited_rate(1.0, 160.0, 84.0) == pytest.approx(84.0 / 160.0, rel=1e-15)
    assert phys.data_limited_rate(0.7, 10.0, 3.0) == pytest.approx(0.3, rel=1e-15)  # data-bound below compute
    assert phys.data_limited_rate(0.7, 10.0, 8.0) == 0.7  # compute-bound: data keeps up
    r = 0.8123456789
    assert phys.data_limited_rate(r, 3.3, 3.3 * r) == r  # exactly: getting its demand costs no last bit
    assert phys.data_limited_rate(r, 0.0, 0.0) == r


def test_capacity_servers_and_cache() -> None:
    assert phys.data_capacity_gb_per_s(100.0, 50.0, 100.0, 0.0) == 100.0
    assert phys.data_capacity_gb_per_s(100.0, 50.0, 100.0, 75.0) == 50.0  # writes count at most W
    assert phys.data_capacity_gb_per_s(100.0, 50.0, 150.0, 50.0) == 100.0  # independent directions
    assert phys.servers_bandwidth_share(10, 10, 8) == 1.0
    assert phys.servers_bandwidth_share(9, 10, 8) == 0.9
    assert phys.servers_bandwidth_share(7, 10, 8) == 0.0
    assert phys.cache_hit_ratio(0.9, None, None, 4) == 0.9
    assert phys.cache_hit_ratio(0.9, 100.0, 800.0, 4) == pytest.approx(0.45)
    assert phys.cache_hit_ratio(0.9, 100.0, 200.0, 4) == 0.9
    assert phys.token_read_mb_per_s_per_gpu(4.0, 1.0, 1000.0, 1000) == pytest.approx(4e12 / 3.6e6 / 1000 / 1e6)


# ---- deterministic cases -------------------------------------------------------------------------------

def test_data_stall_case_passes_to_1e_9_and_excludes_wrong_models() -> None:
    (r,) = vs.data_stall(QUICK)
    assert r.passed and all(r.invariants.values()), r.invariants
    assert abs(r.mean - r.reference) <= 1e-9 * r.reference
    assert all(r.excludes(v) for v in r.wrong.values())


def test_data_stall_case_fails_with_a_wrong_bandwidth() -> None:
    """The check can fail: the same case on 120 GB/s ends earlier than the 100 GB/s reference."""
    def faster(doc: dict[str, Any]) -> dict[str, Any]:
        d = copy.deepcopy(doc)
        d["workload"]["storage"]["read_gb_per_s"] = 120.0
        return d

    (r,) = vs.data_stall(Settings(quick=True, mutate=faster))
    assert not r.passed


def test_metadata_outage_stops_exactly_the_jobs_that_read_or_write_for_its_duration() -> None:
    out = vs.metadata_outage(QUICK)
    assert len(out) == 4
    for r in out:
        assert r.passed, (r.quantity, r.mean, r.reference, r.invariants)
        assert all(r.excludes(v) for v in r.wrong.values()), r.quantity
    assert all(out[0].invariants.values()) and len(out[0].invariants) == 5


def test_outage_case_fails_when_the_outage_is_longer() -> None:
    def longer(doc: dict[str, Any]) -> dict[str, Any]:
        d = copy.deepcopy(doc)
        d["storage"]["metadata"]["repair"]["time"]["value_h"] = 6.0
        return d

    out = vs.metadata_outage(Settings(quick=True, mutate=longer))
    assert not out[0].passed


def test_failed_async_write_is_retried_after_the_outage() -> None:
    """An async write under way when the storage fails is lost and written again when it returns: the
    job runs on (it does not wait), its checkpoint is saved one write time after the outage."""
    doc = vs.storage_doc("async-retry", 1, 24.0, [
        {"name": "a", "gpus": 8, "work_h": 100.0,
         "checkpoint": {"interval_h": 9.8, "write_h": 0.5, "mode": "async", "async_fraction": 0.1}}],
        storage={"metadata": {"failure": {"dist": "fixed", "value_h": 10.0},
                              "repair": {"time": {"dist": "fixed", "value_h": 5.0}}}})
    for horizon_h, saved in ((15.4, 0.0), (15.6, 9.8)):
        d = copy.deepcopy(doc)
        d["horizon_days"] = horizon_h / 24.0
        model = Model(load_dict(d).scenario)
        model.run()
        job = model.by_section["workload"].jobs[0]
        assert job.saved_h == pytest.approx(saved, abs=1e-12), horizon_h
        assert job.storage_stops == 1 and job.blocked_h == 0.0  # it ran on: not stopped
    res = run_replication(load_dict(doc).scenario)
    assert res.metrics["storage.jobs_stopped"] == 1.0 and res.metrics["goodput.mechanism.storage_outage"] == 0.0


def test_a_restart_still_reading_waits_for_the_storage_one_in_warm_up_goes_on() -> None:
    """Two jobs crash (transient faults) just before a 5 h outage at 30 h: the one still to read its
    checkpoint (crash at 29.9 h, read due at 30.05–30.06 h) waits and restarts over at 35 h; the one in its
    warm-up at 30 h (crash at 29.8 h, read done at 29.96 h) is not touched."""
    from twin.model.engine import Topic

    doc = vs.storage_doc("restart-outage", 2, 60.0, [
        {"name": n, "gpus": 8, "work_h": 100.0, "checkpoint": {"interval_h": 10.0, "size_gb": 3600.0, "write_h": 0.1}}
        for n in ("a", "b")],
        storage={"metadata": {"failure": {"dist": "fixed", "value_h": 30.0},
                              "repair": {"time": {"dist": "fixed", "value_h": 5.0}}}})
    model = Model(load_dict(doc).scenario)
    wl = model.by_section["workload"]
    bus = model.engine.bus
    model.engine.call_at(29.9, lambda: bus.publish(Topic.TRANSIENT, int(wl.jobs[0].nodes[0]), DownCause.part_failed("test")))
    model.engine.call_at(29.8, lambda: bus.publish(Topic.TRANSIENT, int(wl.jobs[1].nodes[0]), DownCause.part_failed("test")))
    model.run()
    a, b = wl.jobs
    restart_h = 0.05 + 0.1 + 3600.0 / 100.0 / 3600.0 + 0.1
    assert a.storage_stops == 1 and a.blocked_h == pytest.approx(5.0, abs=1e-9)
    assert a.restart_h == pytest.approx(0.1 + restart_h, abs=1e-9)  # 29.9 -> 30, then the whole restart again
    assert b.storage_stops == 0 and b.blocked_h == 0.0 and b.restart_h == pytest.approx(restart_h, abs=1e-9)


# ---- coupling: a storage server lost -> less bandwidth -> a slower job -> lower goodput ------------------

def _coupling(lose_server: bool) -> tuple[dict[str, float], Any]:
    doc = vs.storage_doc("coupling", 4, 200.0, [
        {"name": "j", "gpus": 32, "work_h": 1000.0, "data": {"read_mb_per_s_per_gpu": 90.0 * 1000 / 32}}],
        storage={"servers": {"count": 4, "required": 2, "failure": {"mtbf_h": 1e15},
                             "repair": {"time": {"dist": "fixed", "value_h": 20.0}}}})
    model = Model(load_dict(doc).scenario)
    if lose_server:
        pop = model.facility["storage_server"]
        model.engine.call_at(10.0, lambda: pop.fail_now(0))
    model.run()
    res = model.result()
    return res.metrics, res.tables["jobs"]


def test_storage_server_loss_slows_data_jobs_and_lowers_goodput() -> None:
    """100 GB/s on 4 servers, one lost at 10 h for 20 h (no detection delay, a fixed 20 h repair): 75 GB/s
    for a job reading 90 GB/s, which runs at 75/90 for those 20 h (share / demand): by the 200 h horizon it
    has made (1 − 75/90)·20 h less progress, and goodput falls by exactly those GPU-hours over the installed
    ones."""
    m0, j0 = _coupling(False)
    m1, j1 = _coupling(True)
    kept0 = float(j0[j0.record == "job"].kept_h.iloc[0])
    kept1 = float(j1[j1.record == "job"].kept_h.iloc[0])
    assert kept0 == pytest.approx(200.0, abs=1e-9)
    stall_h = (1 - 75.0 / 90.0) * 20.0
    assert kept1 == pytest.approx(200.0 - stall_h, abs=1e-9)
    installed = 4 * 8 * 200.0
    assert m1["storage.data_stall_gpu_hours"] == pytest.approx(32 * stall_h, rel=1e-9)
    assert m1["goodput.mechanism.data_stall"] == pytest.approx(32 * stall_h / installed, rel=1e-9)
    assert m0["goodput"] - m1["goodput"] == pytest.approx(32 * stall_h / installed, rel=1e-9)
    assert m1["failures.storage_server"] == 1.0 and m1["storage.downtime_h"] == 0.0  # 3 of 4 >= 2: no outage
    assert m0["storage.data_stall_gpu_hours"] == 0.0
    assert abs(_mech_sum(m1) - 1) < 1e-9 and abs(_mech_sum(m0) - 1) < 1e-9
    # bandwidth in use: 90 GB/s while all servers are up, 75 while one is out
    assert m1["storage.bandwidth_gb_per_s.peak"] == pytest.approx(90.0)
    assert m1["storage.bandwidth_gb_per_s.mean"] == pytest.approx((90.0 * 180.0 + 75.0 * 20.0) / 200.0)


# ---- statistical: k of n servers ----------------------------------------------------------------------

def test_storage_server_availability_against_k_of_n_quick() -> None:
    """k-of-n storage servers against the birth–death chain, within ±0.35 of the reference at the suite's
    level (the quick run: ±0.31), the far wrong models (two crews, ...) excluded."""
    (r,) = vs.servers_k_of_n(QUICK)
    assert_judged(r, 0.35)


def test_validation_registry_has_the_storage_cases() -> None:
    from twin.validation.cases import CASES

    assert {"storage_data_stall", "storage_outage", "storage_k_of_n"} <= set(CASES)


# ---- bundled scenarios -------------------------------------------------------------------------------

def test_multimodal_storage_is_the_bottleneck_and_the_buckets_sum_to_one() -> None:
    sc = load_scenario(ROOT / "scenarios" / "multimodal.yaml", []).scenario
    res = run_replication(sc, 1)  # replication 1 has a metadata outage
    m = res.metrics
    assert m["goodput.mechanism.data_stall"] > 0.05  # storage is the bottleneck
    assert m["storage.outages"] >= 1 and m["goodput.mechanism.storage_outage"] > 0
    assert m["storage.jobs_stopped"] >= 1
    assert abs(_mech_sum(m) - 1) < 1e-9
    coarse = ("useful", "lost", "checkpoint", "restart", "slowdown", "down", "idle", "storage_wait")
    assert abs(sum(m[f"goodput.{k}"] for k in coarse) - 1) < 1e-9
    sj = res.tables["storage_jobs"]
    assert set(sj.name) == {"vlm-512", "image-256"}
    assert float(sj.data_stall_gpu_hours.sum()) == pytest.approx(m["storage.data_stall_gpu_hours"])
    assert m["storage.bandwidth_gb_per_s.peak"] <= 100.0 + 1e-9  # never above the read bandwidth
    assert 0 < m["storage.bandwidth_gb_per_s.mean"] <= m["storage.bandwidth_gb_per_s.peak"]


@pytest.mark.parametrize("option", ["multimodal-fast-storage", "multimodal-cache"])
def test_storage_options_remove_the_data_stall(option: str) -> None:
    base = run_replication(load_scenario(ROOT / "scenarios" / "multimodal.yaml", []).scenario, 0).metrics
    opt = run_replication(load_scenario(ROOT / "scenarios" / f"{option}.yaml", []).scenario, 0).metrics
    assert opt["goodput.mechanism.data_stall"] < 0.1 * base["goodput.mechanism.data_stall"]
    assert opt["goodput"] > base["goodput"]


def test_twin_compare_runs_the_storage_options(tmp_path: Path) -> None:
    s = [str(ROOT / "scenarios" / f"{n}.yaml") for n in ("multimodal", "multimodal-fast-storage")]
    assert twin_main(["compare", *s, "--reps", "2", "--results", str(tmp_path), "--quiet", "--no-report",
                      "--set", "horizon_days=10"]) == 0


@pytest.mark.parametrize("name", ["pretrain-16k", "baseline", "mixed-1k", "forecast-405b"])
def test_text_llm_scenarios_declare_a_near_zero_data_demand(name: str) -> None:
    """The bundled text-LLM scenarios say what their jobs read (a few bytes per token): near zero, never
    a stall."""
    ld = load_scenario(ROOT / "scenarios" / f"{name}.yaml", ["horizon_days=5"])
    wl = ld.scenario.workload
    assert wl is not None
    datas = [j.data for j in wl.jobs] + ([wl.synthetic.data] if wl.synthetic is not None else [])
    assert datas and all(d is not None and 0 < d.demand_mb_per_s_per_gpu < 1.0 for d in datas)
    m = run_replication(ld.scenario, 0).metrics
    assert m["storage.data_jobs"] >= 1 and m["storage.data_stall_gpu_hours"] == 0.0


# ---- input -----------------------------------------------------------------------------------------------

def _doc(**data: Any) -> dict[str, Any]:
    return vs.storage_doc("bad", 1, 24.0, [{"name": "j", "gpus": 8, "work_h": 10.0, "data": data}])


@pytest.mark.parametrize("data, where", [
    ({"read_mb_per_s_per_gpu": 10.0, "bytes_per_token": 4.0}, r"workload\.jobs\.0\.data"),
    ({"bytes_per_sample": 1e6}, r"workload\.jobs\.0\.data\.bytes_per_sample"),
    ({"bytes_per_token": 4.0}, r"workload\.jobs\.0\.data\.bytes_per_token"),
    ({"read_mb_per_s_per_gpu": -1.0}, r"workload\.jobs\.0\.data\.read_mb_per_s_per_gpu"),
])
def test_bad_data_demand_names_the_field(data: dict[str, Any], where: str) -> None:
    with pytest.raises(InputError, match=where):
        load_dict(_doc(**data))


def test_bad_servers_name_the_field() -> None:
    doc = _doc(read_mb_per_s_per_gpu=1.0)
    doc["storage"] = {"servers": {"count": 4, "required": 5}}
    with pytest.raises(InputError, match=r"storage\.servers\.required"):
        load_dict(doc)


def test_derived_demand_and_resolved_scenario_round_trip() -> None:
    ld = load_dict(_doc(bytes_per_sample=2e6, samples_per_s_per_gpu=10.0))
    d = ld.scenario.workload.jobs[0].data  # type: ignore[union-attr]
    assert d is not None and d.read_mb_per_s_per_gpu == pytest.approx(20.0)
    again = load_dict(ld.scenario.model_dump(mode="json"))
    assert again.scenario == ld.scenario


def test_sensitivity_factors_apply() -> None:
    """The assumption defaults are `twin sensitivity --param` factors: their paths override."""
    ld = load_scenario(ROOT / "scenarios" / "multimodal.yaml",
                       ["storage.cache.hit_ratio=0.9", "storage.total_gb_per_s=150",
                        "storage.servers.failure={mean_h: 10000}"])
    st = ld.scenario.storage
    assert st is not None and st.cache.hit_ratio == 0.9 and st.total_gb_per_s == 150.0
    assert np.isclose(st.servers.failure.mean_h, 10000.0)  # type: ignore[union-attr]


def test_headline_shows_storage_rows_only_when_not_zero() -> None:
    from twin.experiment.single import headline_rows

    base = {"goodput": 0.5, "storage.data_stall_gpu_hours": 0.0, "storage.downtime_h": 0.0, "storage.jobs_stopped": 0.0}
    assert [label for label, _ in headline_rows(base)] == ["goodput (useful / installed GPU-h)"]
    rows = dict(headline_rows({**base, "storage.data_stall_gpu_hours": 1234.0, "storage.downtime_h": 2.25,
                               "storage.jobs_stopped": 2.0}))
    assert rows["data-stall GPU-hours"] == "1,234" and rows["storage downtime (h)"] == "2.25"
    assert rows["jobs stopped by storage outages"] == "2"


def test_storage_servers_are_bought_and_their_repairs_priced() -> None:
    """The servers are capital (30 cost three times 10) and a repair of a storage unit is priced: no silent zero."""
    caps = {}
    for name in ("multimodal", "multimodal-fast-storage"):
        m = run_replication(load_scenario(ROOT / "scenarios" / f"{name}.yaml", ["horizon_days=5"]).scenario, 0).metrics
        caps[name] = m["cost.capital.storage"]
    assert caps["multimodal-fast-storage"] == pytest.approx(3 * caps["multimodal"], rel=1e-12) and caps["multimodal"] > 0
    doc = _doc(read_mb_per_s_per_gpu=1.0)
    doc["storage"] = {"servers": {"count": 4, "required": 2}}
    doc["costs"] = {"parts": {"storage_server": 1.0}}
    assert load_dict(doc).scenario.costs.parts["storage_server"] == 1.0  # type: ignore[union-attr]
    doc["costs"] = {"parts": {"storage_servr": 1.0}}
    with pytest.raises(InputError, match=r"costs\.parts\.storage_servr"):
        load_dict(doc)


def test_io_levels_follow_servers_availability_and_writes_through_their_memo() -> None:
    """The data capacity and the writes' bandwidth in use are kept per (server share, availability, writes'
    sum) (``Storage._io_memo``): after every transfer and server change they equal the formula on the state
    then, including keys seen before with another share or availability between."""
    from twin.model.component import STORAGE

    doc = vs.storage_doc("memo", 4, 10.0, [{"name": "j", "gpus": 32, "work_h": 1000.0}],
                         storage={"servers": {"count": 4, "required": 2, "failure": {"mtbf_h": 1e15},
                                              "repair": {"time": {"dist": "fixed", "value_h": 20.0}}}})
    st = Model(load_dict(doc).scenario).services[STORAGE]
    st.data_share(99, 1.0)  # a data stream, so the level is recomputed
    rng = np.random.default_rng(3)
    up = [True] * 4
    for step in range(300):
        r = rng.random()
        if r < 0.2:
            i = int(rng.integers(4))
            up[i] = not up[i]
            st._on_unit("storage_server", i, up[i])
        elif r < 0.6:
            st.transfer_begins(int(rng.integers(3)), bool(rng.random() < 0.7), float(rng.choice([25.0, 50.0, 100.0])))
        else:
            st.transfer_ends(int(rng.integers(3)), bool(rng.random() < 0.7))
        ws = sum(st._writes.values())
        want = (phys.data_capacity_gb_per_s(st.read_gb_per_s, st.write_gb_per_s, st.total_gb_per_s, ws)
                if st.available else 0.0)
        assert (st._cap, st._w_in_use) == (want, min(st.write_gb_per_s, ws)), step
        assert st._cap == st.data_capacity_gb_per_s()
    assert 2 <= len(st._io_memo) < 300  # keys were reused


@pytest.mark.parametrize("name, overrides", [("pretrain-16k", ["horizon_days=10"]), ("multimodal", [])])
def test_a_demand_ended_before_a_checkpoint_write_changes_the_storage_once(
        name: str, overrides: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A checkpoint start ends the job's data demand and begins its write at one instant; with no other data
    stream the storage takes both changes in the write's update (``Storage.data_share``'s ``transfer_next``).
    The run is the same, metric for metric and table for table (the bandwidth's peak and mean included), as
    with a storage update after each change, and it makes fewer updates (``multimodal``: several data jobs,
    where the shortcut applies only when the last stream ends)."""

    n1, n0 = _same_run_fewer_updates(monkeypatch, name, overrides, "data_share",
                                     lambda share: lambda self, jid, d, transfer_next=False: share(self, jid, d))
    assert n1 < n0


@pytest.mark.parametrize("name, overrides", [("pretrain-16k", ["horizon_days=10"]), ("multimodal", [])])
def test_a_write_ended_before_a_data_demand_changes_the_storage_once(
        name: str, overrides: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A checkpoint written ends its write and sets the job's data demand again at one instant; with no other
    data stream the storage takes both changes in the demand's update (``Storage.transfer_ends``'s
    ``share_next``). The run is the same, metric for metric and table for table (the bandwidth's peak and mean
    included), as with a storage update after each change, and it makes fewer updates (``multimodal``: its data
    jobs overlap, another stream always reads when a write ends, and the shortcut does not apply)."""

    n1, n0 = _same_run_fewer_updates(
        monkeypatch, name, overrides, "transfer_ends",
        lambda ends: lambda self, jid, write, share_next=False: ends(self, jid, write))
    assert n1 < n0 if name == "pretrain-16k" else n1 == n0


def _same_run_fewer_updates(monkeypatch: pytest.MonkeyPatch, name: str, overrides: list[str], method: str,
                            plain: Any) -> tuple[int, int]:
    """Run scenario ``name`` with ``Storage.<method>``'s shortcut and without it (``plain(original)`` in its place),
    assert the two runs identical (events, every metric, every table; a positive bandwidth peak), and return the
    storage updates (``Storage._changed`` calls) with and without."""
    from twin.model.storage import Storage

    def run(shortcut: bool) -> tuple[Any, int, int]:
        calls = [0]
        changed = Storage._changed

        def counted(self: Storage) -> None:
            calls[0] += 1
            changed(self)

        original = getattr(Storage, method)
        with monkeypatch.context() as mp:
            mp.setattr(Storage, "_changed", counted)
            if not shortcut:
                mp.setattr(Storage, method, plain(original))
            sc = load_scenario(ROOT / "scenarios" / f"{name}.yaml", overrides).scenario
            model = Model(sc, 0)
            model.run()
            return model.result(), model.events, calls[0]

    r1, ev1, n1 = run(True)
    r0, ev0, n0 = run(False)
    assert ev1 == ev0
    assert r1.metrics.keys() == r0.metrics.keys()
    for k, v in r0.metrics.items():
        assert r1.metrics[k] == v or (v != v and r1.metrics[k] != r1.metrics[k]), k
    assert r1.tables.keys() == r0.tables.keys()
    for k, t in r0.tables.items():
        assert r1.tables[k].equals(t), k
    assert r0.metrics["storage.bandwidth_gb_per_s.peak"] > 0
    return n1, n0
