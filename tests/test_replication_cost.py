"""Cheap replications (issue 31): a Monte-Carlo worker's replication builds no table it does not
read, yet reports exactly the metrics of a full replication; ``repair: none`` (a part never
repaired) follows the k-of-n formula."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from twin.scenario import load_dict, load_scenario
from twin.sim import LazyTables, run_replication


def k_of_n(horizon_days: float = 1 / 24, repair: Any = "none", mean_h: float = 15.0) -> dict[str, Any]:
    """AvailSim4's rare-event example: one node whose 4 units must keep 2 working, exponential lives."""
    return {"name": "two-of-four", "seed": 3, "horizon_days": horizon_days,
            "cluster": {"racks": 1, "nodes_per_rack": 1, "node": {"gpus": 1, "parts": {
                "unit": {"count": 4, "required": 2, "effect": "redundant",
                         "failure": {"dist": "exponential", "mean_h": mean_h}, "repair": repair}}}},
            "maintenance": {"detection": {"dist": "fixed", "value_h": 0}, "crews": {"t": {"count": 4}}}}


def _same_metrics(a: dict[str, float], b: dict[str, float]) -> None:
    assert a.keys() == b.keys()
    for k in a:
        assert (a[k] == b[k]) or (math.isnan(a[k]) and math.isnan(b[k])), (k, a[k], b[k])


ROOT = Path(__file__).resolve().parents[1]
CASES = [(p.stem, str(p), {"horizon_days": 20}) for p in sorted((ROOT / "scenarios").glob("*.yaml"))] + [
    ("k-of-n repaired", None, {}),
    ("k-of-n ladder", None, {"ladder": True}),
]


def _ladder_doc() -> dict[str, Any]:
    """Many tickets of every kind in a small system: remediation, escalation, few spares with an RMA
    (stock-outs), a business-hours crew (waits), node-down and redundant parts."""
    doc = k_of_n(horizon_days=120, mean_h=40, repair={
        "time": {"dist": "lognormal", "mean_h": 6, "sigma": 0.5},
        "ladder": {"remediate_success": 0.3, "replace_success": 0.8}})
    doc["cluster"]["nodes_per_rack"] = 4
    doc["cluster"]["node"]["parts"]["board"] = {"failure": {"dist": "weibull", "shape": 1.3, "scale_h": 300},
                                                "repair": {"burn_in_h": 2}}
    doc["maintenance"]["crews"] = {"t": {"count": 1, "shift": "business"}}
    doc["maintenance"]["spares"] = {"unit": {"stock": 1, "lead_time_days": 5, "rma_turnaround_days": 3}}
    return doc


@pytest.mark.parametrize("name,path,override", CASES, ids=[c[0] for c in CASES])
def test_metrics_without_tables_are_those_of_a_full_replication(name: str, path: str | None,
                                                                 override: dict[str, Any]) -> None:
    """The metrics a Monte-Carlo worker takes from the records (no tables) are those of the tables,
    bit for bit, on every bundled scenario and two small systems with many tickets."""
    if path is None and override.get("ladder"):
        sc = load_dict(_ladder_doc()).scenario
    elif path is None:  # repaired units, many failures and tickets
        sc = load_dict(k_of_n(horizon_days=30, repair={"time": {"dist": "exponential", "mean_h": 5}})).scenario
    else:
        ld = load_scenario(path)
        sc = load_dict({**ld.resolved, **override}, str(ld.source), Path(ld.source).parent).scenario  # its files
    for rep in (0, 1):
        full = run_replication(sc, rep)
        lean = run_replication(sc, rep, tables=False)
        _same_metrics(lean.metrics, full.metrics)
        if override.get("ladder"):  # the case exercises what it is meant to
            tk = full.tables["tickets"]
            assert set(tk["rung"]) >= {1, 2, 3} and tk["stockout"].any() and len(tk) > 50
            assert full.metrics["node_down_hours"] > 0 and "rma.sent.unit" in full.metrics
        assert isinstance(lean.tables, LazyTables) and not isinstance(full.tables, LazyTables)
        assert list(lean.tables) == list(full.tables)  # the same names, in the same order
        for t in full.tables:  # built on demand, the same tables
            pd.testing.assert_frame_equal(lean.tables[t], full.tables[t], check_exact=True)


def test_lazy_tables_build_each_table_once_and_only_when_read() -> None:
    calls: list[str] = []

    def make(name: str) -> Any:
        return lambda: calls.append(name) or pd.DataFrame({"x": [len(calls)]})

    t = LazyTables({"a": make("a"), "b": make("b")})
    assert calls == [] and list(t) == ["a", "b"] and len(t) == 2
    first = t["b"]
    assert calls == ["b"] and t["b"] is first
    t["c"] = pd.DataFrame({"y": [1]})
    assert list(t.built()) == ["a", "b", "c"] and calls == ["b", "a"]


def test_repair_none_is_a_policy_and_its_shorthand() -> None:
    sc = load_dict(k_of_n()).scenario
    assert sc.cluster.node.parts["unit"].repair.policy == "none"
    sc2 = load_dict(k_of_n(repair={"policy": "none"})).scenario
    assert sc2.cluster.node.parts["unit"].repair == sc.cluster.node.parts["unit"].repair
    assert load_dict(k_of_n(repair={})).scenario.cluster.node.parts["unit"].repair.policy == "repair"


def test_a_unit_never_repaired_stays_failed_and_opens_no_ticket() -> None:
    sc = load_dict(k_of_n(horizon_days=100)).scenario  # 2,400 h: every unit fails (mean 15 h)
    res = run_replication(sc, 0)
    assert res.metrics["failures"] == 4.0
    assert len(res.tables["tickets"]) == 0
    iv = res.tables["node_intervals"]
    # the node goes down at the third failure and stays down to the horizon
    fails = np.sort(res.tables["events"].query("kind == 'fail'")["time_h"].to_numpy())
    assert len(iv) == 1 and iv["end_h"].iloc[0] == sc.horizon_h
    assert iv["start_h"].iloc[0] == fails[2]


def test_no_repair_failure_probability_is_the_k_of_n_formula() -> None:
    """Theory: with no repair, the 2-of-4 group has failed by t when 3 or 4 units have,
    P = 4p³(1 − p) + p⁴, p = 1 − exp(−t / MTTF). At t = 10 h, MTTF 15 h: P = 0.2526. A model that
    repaired units (the default repair of 4 h) would give about 0.01."""
    t_h, mttf_h, n = 10.0, 15.0, 600
    p = 1 - math.exp(-t_h / mttf_h)
    want = 4 * p**3 * (1 - p) + p**4
    sc = load_dict(k_of_n(horizon_days=t_h / 24)).scenario
    down = [run_replication(sc, i, tables=False).metrics["node_down_hours"] > 0 for i in range(n)]
    got = float(np.mean(down))
    sd = math.sqrt(want * (1 - want) / n)
    assert abs(got - want) < 4 * sd, (got, want, sd)


# ----------------------------------------------------------------------------- chunked storage

def _repaired(days: float = 60) -> dict[str, Any]:
    """A 2-of-4 group with repairs: metrics that some replications report and others do not."""
    return k_of_n(horizon_days=days, repair={"time": {"dist": "exponential", "mean_h": 5}}, mean_h=300)


def test_chunks_read_back_rows_exactly_absent_metrics_included(tmp_path: Path) -> None:
    from twin.experiment.rows import read_rows, write_rows

    rows = [{"replication": 0, "seed": 1, "scenario": "s", "scenario_hash": "h", "twin_version": "v",
             "events_processed": 3, "a": 1.5, "b": float("nan")},
            {"replication": 1, "seed": 1, "scenario": "s", "scenario_hash": "h", "twin_version": "v",
             "events_processed": 4, "c": 0.1 + 0.2}]
    write_rows(tmp_path / "x.parquet", rows)
    back = read_rows(tmp_path / "x.parquet")
    assert back[1] == rows[1] and back[0].keys() == rows[0].keys() and math.isnan(back[0]["b"])
    assert back[0]["a"] == 1.5


def test_chunked_table_and_summary_are_those_of_one_file_per_replication(tmp_path: Path) -> None:
    """The final tables are identical whether the rows were stored in chunks (now) or one file per
    replication (the storage before issue 31, still read): the same rows, assembled alike."""
    from twin.experiment.runner import payload_of, prepare_folder, run_batch, run_experiment, write_row

    ld = load_dict(_repaired())
    n = 24
    chunked = run_experiment(ld, n, folder=tmp_path / "chunked", progress=False, echo=lambda s: None)
    assert chunked.computed == n
    keys = [set(r) for r, _ in run_batch(payload_of(ld), list(range(n)))]
    assert len({frozenset(k) for k in keys}) > 1  # some metrics are absent from some replications
    old = tmp_path / "old"
    prepare_folder(old, ld, overwrite=False)
    for row, _ in run_batch(payload_of(ld), list(range(n))):
        write_row(old / "reps" / f"rep-{int(row['replication']):05d}.parquet", row)
    resumed = run_experiment(ld, n, folder=old, progress=False, echo=lambda s: None)
    assert resumed.computed == 0 and not resumed.reused
    pd.testing.assert_frame_equal(resumed.replications, chunked.replications, check_exact=True)
    pd.testing.assert_frame_equal(resumed.summary, chunked.summary, check_exact=True)
    assert [p.name for p in (old / "reps").iterdir()] == ["chunk-00001.parquet"]  # one chunk replaces them


def test_a_run_interrupted_mid_way_resumes_to_the_identical_table(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from twin.experiment import rows as rows_mod
    from twin.experiment.rows import FLUSH_ENV, stored_replications
    from twin.experiment.runner import run_experiment

    ld = load_dict(_repaired())
    n = 20
    ref = run_experiment(ld, n, folder=tmp_path / "ref", progress=False, echo=lambda s: None)
    monkeypatch.setenv(FLUSH_ENV, "3")
    add = rows_mod.RowStore.add
    seen = []

    def add_then_stop(self: Any, row: dict[str, Any]) -> None:
        add(self, row)
        seen.append(row)
        if len(seen) == 8:
            raise KeyboardInterrupt

    monkeypatch.setattr(rows_mod.RowStore, "add", add_then_stop)
    folder = tmp_path / "mc"
    with pytest.raises(KeyboardInterrupt):
        run_experiment(ld, n, folder=folder, progress=False, echo=lambda s: None)
    assert stored_replications(folder) == set(range(8))  # 2 chunks of 3, and the 2 waiting, flushed on Ctrl-C
    assert len(list((folder / "reps").glob("chunk-*.parquet"))) == 3
    assert not (folder / "COMPLETE").exists()
    monkeypatch.setattr(rows_mod.RowStore, "add", add)
    res = run_experiment(ld, n, folder=folder, progress=False, echo=lambda s: None)
    assert res.computed == n - 8
    pd.testing.assert_frame_equal(res.replications, ref.replications, check_exact=True)
    pd.testing.assert_frame_equal(res.summary, ref.summary, check_exact=True)
    # a larger request then reuses the complete table's rows, a smaller one keeps the rest
    more = run_experiment(ld, n + 4, folder=folder, progress=False, echo=lambda s: None)
    assert more.computed == 4
    fewer = run_experiment(ld, 10, folder=folder, progress=False, echo=lambda s: None)
    assert fewer.computed == 0 and stored_replications(folder) == set(range(n + 4))
    ten = run_experiment(ld, 10, folder=tmp_path / "ten", progress=False, echo=lambda s: None)
    pd.testing.assert_frame_equal(fewer.replications, ten.replications, check_exact=True)


def test_thousands_of_replications_leave_a_handful_of_files(tmp_path: Path) -> None:
    """Issue 31: 10,000 replications of the 2-of-4 example wrote 10,000 files; chunks of 1,000 rows are
    written as the run goes and merged into one at the end (2,500 here)."""
    from twin.experiment.rows import RowStore
    from twin.experiment.runner import run_experiment

    flushed: list[int] = []
    flush = RowStore.flush

    def counting(self: Any) -> None:
        flushed.append(len(self._waiting))
        flush(self)

    folder = tmp_path / "mc"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(RowStore, "flush", counting)
        res = run_experiment(load_dict(k_of_n()), 2500, folder=folder, progress=False, echo=lambda s: None)
    assert len(res.replications) == 2500
    assert [n for n in flushed if n] == [1000, 1000, 2500]  # two full chunks, then the merge of all rows
    files = [p for p in folder.rglob("*") if p.is_file()]
    assert len(files) <= 10, files
    assert [p.name for p in (folder / "reps").iterdir()] == ["chunk-00003.parquet"]


def test_a_worker_validates_a_scenario_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from twin.experiment import runner

    ld = load_dict(k_of_n())
    calls = []
    real = runner.load_dict
    monkeypatch.setattr(runner, "load_dict", lambda *a, **k: calls.append(1) or real(*a, **k))
    monkeypatch.setattr(runner, "_WORKER_LOADED", {})
    p = runner.payload_of(ld)
    a = runner.run_batch(p, [0, 1]) + runner.run_batch(p, [2])
    assert len(calls) == 1 and [r["replication"] for r, _ in a] == [0, 1, 2]
    runner.run_batch(runner.payload_of(load_dict(k_of_n(mean_h=16))), [0])
    assert len(calls) == 2  # another scenario: validated


def test_statistics_without_scipy_stats_are_its_numbers() -> None:
    """twin.experiment.stats takes the t quantile and the binomial cdf from scipy.special (importing
    scipy.stats cost every command ~0.6 s of start-up): the numbers scipy.stats gives, bit for bit."""
    from scipy import stats as st

    from twin.experiment import stats as ts

    for dof in (1, 2, 3, 5.5, 19, 1e3, 1e9, math.inf, 0, -1, math.nan):
        for p in (0.975, 0.5 + ts.LEVEL / 2, 0.995):
            a, b = float(ts._t_ppf(dof, p)), float(st.t.ppf(p, dof))
            assert a == b or (math.isnan(a) and math.isnan(b)), (dof, p, a, b)
    rng = np.random.default_rng(5)
    for n in list(range(1, 40)) + [100, 1000, 10_000]:
        for q in (*ts.QUANTILES, *rng.uniform(0, 1, 3)):
            k = np.arange(n, dtype=np.float64)
            np.testing.assert_array_equal(ts._binom_cdf(k, n, q), st.binom.cdf(np.arange(n), n, q))


def test_palm_stockout_share_is_scipy_stats_poisson_sf() -> None:
    """closed_forms.palm_stockout_share computes poisson.sf without importing scipy.stats: its numbers."""
    from scipy import stats as st

    from twin.physics import closed_forms as cf

    for lam in (0.0, 1e-6, 0.01, 0.3):
        for lead in (0.0, 24.0, 168.0, 2000.0):
            for stock in (0, 1, 2, 3, 7, 40):
                want = float(st.poisson.sf(stock - 1.0, lam * lead))
                assert cf.palm_stockout_share(lam, lead, stock) == want, (lam, lead, stock)
    stock = np.array([0, 1, 2, 5, 10])
    np.testing.assert_array_equal(cf.palm_stockout_share(0.02, 100.0, stock), st.poisson.sf(stock - 1.0, 2.0))
    assert math.isnan(cf.palm_stockout_share(-0.01, 100.0, 2)) and math.isnan(float(st.poisson.sf(1.0, -1.0)))
