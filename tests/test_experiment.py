"""Monte-Carlo experiments (issue 7): backends agree bit for bit, interrupted runs resume to the
identical table, confidence intervals cover a closed form, comparisons under common random numbers.

Scenarios are tiny and built here; the whole file is meant to stay under a minute on 2 cores.
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy.stats import binom

from twin.cli import main as twin_main
from twin.errors import InputError
from twin.experiment import stats
from twin.experiment.compare import run_compare
from twin.experiment.rows import FLUSH_ENV, stored_replications
from twin.experiment.runner import KILL_ENV, experiment_folder, payload_of, run_batch, run_experiment, with_seed
from twin.scenario import load_dict, load_scenario

ROOT = Path(__file__).resolve().parents[1]


def tiny(seed: int = 1, crews: int = 2, nodes: int = 4, days: float = 60, mtbf_h: float = 200,
         repair_h: float = 20, name: str = "tiny") -> dict[str, Any]:
    """One rack, one exponential node-down part, exponential repair, no detection delay."""
    return {
        "name": name, "seed": seed, "horizon_days": days,
        "cluster": {"racks": 1, "nodes_per_rack": nodes, "node": {"gpus": 8, "parts": {
            "gpu": {"failure": {"mtbf_h": mtbf_h}, "repair": {"time": {"dist": "exponential", "mean_h": repair_h}}},
        }}},
        "maintenance": {"detection": {"dist": "fixed", "value_h": 0}, "crews": {"technicians": {"count": crews}}},
    }


def medium() -> dict[str, Any]:
    """About 0.3 s a replication (10 years of 16 nodes): long enough that a 20-replication run on a
    quiet machine is still going when the interrupt tests signal it."""
    return tiny(seed=3, nodes=16, days=3650, name="medium")


def write_yaml(path: Path, doc: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def tiny_serial(tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    ld = load_dict(tiny())
    res = run_experiment(ld, 12, folder=tmp_path_factory.mktemp("serial") / "mc", progress=False)
    return res.replications


@pytest.fixture(scope="module")
def medium_reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pd.DataFrame]:
    """An uninterrupted 20-replication run of the medium scenario (2 local workers)."""
    tmp = tmp_path_factory.mktemp("medium")
    scen = write_yaml(tmp / "medium.yaml", medium())
    res = run_experiment(load_scenario(scen), 20, workers=2, folder=tmp / "ref", progress=False)
    return scen, res.replications


# ----------------------------------------------------------------------------- backends agree

def test_serial_and_two_local_workers_are_bit_identical(tiny_serial: pd.DataFrame, tmp_path: Path) -> None:
    res = run_experiment(load_dict(tiny()), 12, workers=2, folder=tmp_path / "pool", progress=False)
    assert list(res.replications.replication) == list(range(12))
    pd.testing.assert_frame_equal(res.replications, tiny_serial, check_exact=True)
    stored = pd.read_parquet(tmp_path / "pool" / "replications.parquet")
    pd.testing.assert_frame_equal(stored, tiny_serial, check_exact=True)
    # replications are independent draws, not copies
    assert tiny_serial.node_availability.nunique() == 12


def test_dask_cluster_with_another_hash_seed_is_bit_identical(tiny_serial: pd.DataFrame, tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    assert os.environ.get("PYTHONHASHSEED") != "123"
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  env={"PYTHONHASHSEED": "123"}, silence_logs=40) as cluster:
        with distributed.Client(cluster) as client:
            seeds = client.run(lambda: os.environ.get("PYTHONHASHSEED"))
            assert set(seeds.values()) == {"123"}
            assert len(seeds) == 2
        res = run_experiment(load_dict(tiny()), 12, dask_address=cluster.scheduler_address,
                             folder=tmp_path / "dask", progress=False)
    pd.testing.assert_frame_equal(res.replications, tiny_serial, check_exact=True)


def test_folder_is_reused_extended_and_never_shared(tiny_serial: pd.DataFrame, tmp_path: Path) -> None:
    ld = load_dict(tiny())
    first = run_experiment(ld, 6, folder=tmp_path / "mc", progress=False)
    assert first.computed == 6 and not first.reused
    assert (tmp_path / "mc" / "COMPLETE").is_file()
    again = run_experiment(ld, 6, folder=tmp_path / "mc", progress=False)
    assert again.reused and again.computed == 0
    more = run_experiment(ld, 12, folder=tmp_path / "mc", progress=False)
    assert more.computed == 6  # 0..5 reused from reps/
    pd.testing.assert_frame_equal(more.replications, tiny_serial, check_exact=True)
    other = load_dict(tiny(crews=3))
    with pytest.raises(InputError, match="another scenario"):
        run_experiment(other, 6, folder=tmp_path / "mc", progress=False)
    assert experiment_folder("results", ld) != experiment_folder("results", other)
    assert experiment_folder("r", ld).name == f"mc-{ld.hash}-s1"
    ow = run_experiment(other, 4, folder=tmp_path / "mc", overwrite=True, progress=False)
    assert ow.computed == 4 and set(ow.replications.scenario_hash) == {other.hash}


def test_replications_of_another_twin_version_are_recomputed(tiny_serial: pd.DataFrame, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder made by another twin version is neither reused nor resumed: the model may have changed
    since (the version is bumped whenever results change)."""
    import twin

    ld = load_dict(tiny())
    said: list[str] = []
    monkeypatch.setattr(twin, "__version__", "0.0.old")
    old = run_experiment(ld, 6, folder=tmp_path / "mc", progress=False, echo=said.append)
    assert old.computed == 6 and set(old.replications.twin_version) == {"0.0.old"}
    monkeypatch.undo()
    new = run_experiment(ld, 8, folder=tmp_path / "mc", progress=False, echo=said.append)
    assert new.computed == 8 and not new.reused
    assert set(new.replications.twin_version) == {twin.__version__}
    assert any("0.0.old" in s and "recomputing" in s for s in said), said
    again = run_experiment(ld, 8, folder=tmp_path / "mc", progress=False, echo=said.append)
    assert again.reused and again.computed == 0
    pd.testing.assert_frame_equal(new.replications, tiny_serial.iloc[:8].reset_index(drop=True), check_exact=True)


def test_worker_killed_mid_run_is_retried_once(tiny_serial: pd.DataFrame, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KILL_ENV, "3")
    said: list[str] = []
    res = run_experiment(load_dict(tiny()), 12, workers=2, folder=tmp_path / "mc", progress=False,
                         echo=said.append)
    assert any("worker process died" in s and "3" in s for s in said), said
    assert (tmp_path / "mc" / ".test-kill-3.marker").is_file()
    pd.testing.assert_frame_equal(res.replications, tiny_serial, check_exact=True)


# ----------------------------------------------------------------------------- interruption

def _cli(scen: Path, results: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "twin.cli", "montecarlo", str(scen), "--reps", "20", "--results", str(results),
            "--quiet", "--no-report", *extra]


def _wait_for_reps(folder: Path, k: int, proc: subprocess.Popen, timeout: float = 120) -> None:
    """Wait until the run has stored ``k`` replications (the precondition of an interrupt test, not
    something it asserts: the bound is generous so a loaded machine only makes the test slower)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if len(stored_replications(folder)) >= k:
            return
        if proc.poll() is not None:
            pytest.fail(f"run ended before it could be interrupted: {proc.communicate()}")
        time.sleep(0.02)
    pytest.fail("no replications appeared")


def _live_in_group(pgid: int) -> list[int]:
    """Non-zombie processes of a process group (Linux /proc)."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if fields[0] != "Z" and int(fields[2]) == pgid:
            out.append(int(d.name))
    return out


def _assert_no_workers_left(proc: subprocess.Popen, within_s: float = 60) -> None:
    """No live process of the run's process group within ``within_s`` (the pool workers exit; a
    poll, so the generous bound costs nothing when they exit at once)."""
    t0 = time.monotonic()
    while _live_in_group(proc.pid) and time.monotonic() - t0 < within_s:
        time.sleep(0.05)
    assert not _live_in_group(proc.pid)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _env(tmp: Path) -> dict[str, str]:
    # chunks of 2 rows: 20 replications store some before the run is interrupted
    return {**os.environ, "TWIN_LOG_DIR": str(tmp / "logs"), FLUSH_ENV: "2"}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc and fork")
def test_sigkill_part_way_then_resume_gives_identical_table(medium_reference: tuple[Path, pd.DataFrame],
                                                            tmp_path: Path) -> None:
    scen, reference = medium_reference
    folder = experiment_folder(tmp_path / "res", load_scenario(scen))
    proc = subprocess.Popen(_cli(scen, tmp_path / "res", "--workers", "2"), cwd=tmp_path, env=_env(tmp_path),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        _wait_for_reps(folder, 4, proc)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        # the pool workers notice their parent is gone and exit (no orphans left computing)
        _assert_no_workers_left(proc)
    finally:
        _kill_group(proc)
    assert not (folder / "COMPLETE").exists()
    stored = len(stored_replications(folder))
    assert 4 <= stored < 20
    done = subprocess.run(_cli(scen, tmp_path / "res"), cwd=tmp_path, env=_env(tmp_path), capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert f"{20 - stored} computed, {stored} reused" in done.stdout
    final = pd.read_parquet(folder / "replications.parquet")
    pd.testing.assert_frame_equal(final, reference, check_exact=True)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc and fork")
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_sigint_exits_130_promptly_and_resumes(medium_reference: tuple[Path, pd.DataFrame], tmp_path: Path,
                                               sig: signal.Signals) -> None:
    scen, reference = medium_reference
    folder = experiment_folder(tmp_path / "res", load_scenario(scen))
    proc = subprocess.Popen(_cli(scen, tmp_path / "res", "--workers", "2"), cwd=tmp_path, env=_env(tmp_path),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        _wait_for_reps(folder, 3, proc)
        proc.send_signal(sig)
        # "promptly" is judged by work, not wall time a loaded machine stretches: the run stops with
        # replications left undone (stored < 20 below); the timeout only guards against a hang
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 130, err
        assert "run the same command again to resume" in err
        _assert_no_workers_left(proc)
    finally:
        _kill_group(proc)
    assert not (folder / "COMPLETE").exists()
    stored = len(stored_replications(folder))
    assert stored < 20
    res = run_experiment(load_scenario(scen), 20, workers=2, folder=folder, progress=False)
    assert res.computed == 20 - stored
    assert (folder / "COMPLETE").is_file()
    pd.testing.assert_frame_equal(res.replications, reference, check_exact=True)


# ----------------------------------------------------------------------------- statistics

def test_t_interval_covers_closed_form_availability_about_95_percent() -> None:
    """100 independent experiments of 3 replications each; the interval for node availability
    must cover the exact expectation in a binomial 99.9 % band around 95.

    One part, exponential life M and repair R, a crew per node, no delays: each node is a
    two-state Markov chain started up, whose expected up-fraction over [0, T] is
    A + (1 − A)(1 − e^(−sT))/(sT), A = M/(M + R), s = 1/M + 1/R (→ M/(M + R) as T grows).
    Replications of one seed are independent, so experiment j is replications 3j..3j+2."""
    M, R, days, n, k = 100.0, 10.0, 20.0, 3, 100
    ld = load_dict(tiny(seed=11, crews=4, mtbf_h=M, repair_h=R, days=days))
    T = days * 24
    A = M / (M + R)
    s = 1 / M + 1 / R
    expected = A + (1 - A) * (1 - math.exp(-s * T)) / (s * T)
    p = payload_of(ld)
    idx = list(range(n * k))
    with ProcessPoolExecutor(2) as ex:
        parts = list(ex.map(run_batch, [p, p], [idx[0::2], idx[1::2]]))
    rows = sorted((r for part in parts for r, _ in part), key=lambda r: r["replication"])
    a = np.array([r["node_availability"] for r in rows]).reshape(k, n)
    covered = 0
    for x in a:
        _, lo, hi = stats.t_interval(x)
        covered += lo <= expected <= hi
    lo_band, hi_band = binom.ppf(0.0005, k, 0.95), binom.ppf(0.9995, k, 0.95)
    assert lo_band <= covered <= hi_band, (covered, lo_band, hi_band)
    assert abs(a.mean() - expected) < 4 * a.std(ddof=1) / math.sqrt(a.size)


def test_stats_units() -> None:
    x = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    m, lo, hi = stats.t_interval(x)
    assert m == 3.0
    assert hi - m == pytest.approx(2.7764451051977987 * math.sqrt(2.5) / math.sqrt(5))
    n = stats.replications_needed(x, 0.5)
    assert stats.half_width(np.resize(x, n)) <= 0.5 * 1.01
    # replications that leave the metric undefined (NaN) do not count towards the target: 7 defined
    # values of 12 may not meet a target that 8 defined values would; one defined value never does
    y = np.array([0.0, 0.1, 0.2, 0.15, 0.05, 0.12, 0.2])
    m = stats.replications_needed(y, stats.half_width(y) * 0.97)
    assert m > len(y) and stats.replications_needed(np.concatenate([y, [np.nan] * 5]), stats.half_width(y) * 0.97) > 12
    assert stats.replications_needed(np.concatenate([y, [np.nan] * 5]), stats.half_width(y) * 1.01) == 12
    assert stats.replications_needed([1.0, np.nan, np.nan], 10.0) == 6
    assert stats.t_interval([1.0])[1] != stats.t_interval([1.0])[1]  # NaN with one value
    ci = stats.quantile_ci(np.arange(100.0))
    assert ci.shape == (3, 2) and np.all(ci[:, 0] <= ci[:, 1])
    # p50 of 100: ranks 40 and 61 (the binomial ranks), i.e. values 39 and 60
    assert tuple(ci[1]) == (39.0, 60.0)
    p = stats.paired([1.0, 2.0, 3.0], [1.5, 2.5, 3.5])
    assert p["diff"] == 0.5 and p["ci_low"] == pytest.approx(0.5) and p["variance_reduction"] == math.inf
    # a constant difference that float rounding of y − x leaves a spread of ~1e-17 (the power comparison's
    # node availability: one-feed chains drained 1,037 node-h a year in every replication) is constant, not
    # a variance reduction of 2e26 (twin 0.6.0 printed 198,588,901,870,644,013,249,331,200)
    a = np.array([0.9995137050377613, 0.9995066038273128, 0.9983755921776698, 0.9994142066213376])
    b = np.array([0.9985890475035147, 0.9985819462930663, 0.9974509346434232, 0.9984895490870911])
    assert np.ptp(b - a) > 0  # the rounding this case is about
    p = stats.paired(a, b)
    assert p["variance_reduction"] == math.inf and p["std_diff"] == 0
    # a real spread of one part in 1e12 is still a variance
    assert math.isfinite(stats.paired(a, a + 1e-12 * np.arange(4))["variance_reduction"])
    df = pd.DataFrame({"replication": [0, 1, 2], "m": [1.0, float("nan"), 3.0]})
    s = stats.summarise(df)
    assert s.loc[0, "n"] == 2 and s.loc[0, "mean"] == 2.0


def test_a_cause_a_replication_did_not_report_counts_zero() -> None:
    """Counts by cause (``interruptions.<cause>``, ``network.cut_node_hours.<cause>``) are reported only
    for the causes that occurred: over replications an absent cause is 0, not left out (a PDU cause seen
    in 2 of 10 replications averaged 2.5 instead of 0.5); any other absent metric stays undefined."""
    from twin.experiment.compare import compute
    from twin.experiment.runner import assemble

    ident = {"seed": 1, "scenario": "s", "scenario_hash": "h", "twin_version": "v", "events_processed": 1}
    rows = [{"replication": i, **ident, "interruptions": float(k), "queue_wait_h.mean": 1.0,
             **({"interruptions.power:pdu": float(k), "network.cut_node_hours.leaf": 3.0 * k} if k else {})}
            for i, k in enumerate([0, 0, 2, 0, 3])]
    rows[1].pop("queue_wait_h.mean")
    t = assemble(rows)
    assert t["interruptions.power:pdu"].tolist() == [0.0, 0.0, 2.0, 0.0, 3.0]
    assert t["network.cut_node_hours.leaf"].tolist() == [0.0, 0.0, 6.0, 0.0, 9.0]
    assert math.isnan(t["queue_wait_h.mean"][1])
    s = stats.summarise(t).set_index("metric")
    assert s.loc["interruptions.power:pdu", "mean"] == 1.0 and s.loc["interruptions.power:pdu", "n"] == 5
    assert s.loc["queue_wait_h.mean", "n"] == 4
    # a variant that never saw the cause: 0 in every replication, paired and judged like the others
    other = t.drop(columns=["interruptions.power:pdu", "network.cut_node_hours.leaf"])
    summ, paired, win = compute(["a", "b"], [t, other], [stats.summarise(t), stats.summarise(other)])
    pd_row = paired.set_index("metric").loc["interruptions.power:pdu"]
    assert (pd_row["mean_a"], pd_row["mean_b"], pd_row["diff"]) == (1.0, 0.0, -1.0)
    b_rows = summ[summ["variant"] == "b"].set_index("metric")
    assert b_rows.loc["interruptions.power:pdu", "mean"] == 0.0 and b_rows.loc["interruptions.power:pdu", "n"] == 5
    assert list(b_rows.index) == sorted(b_rows.index)
    w = win.set_index("metric")
    assert w.loc["interruptions.power:pdu", "winner"] == "b"
    assert w.loc["network.cut_node_hours.leaf", "winner"] == "b"  # fewer cut node-hours is better


def test_quantile_intervals_cover_at_least_their_level() -> None:
    """Order-statistic intervals of p5, p50, p95 from 20 replications cover the true quantile at least
    95 % of the time for skewed and symmetric data (the percentile bootstrap covered p5/p95 ~60 %)."""
    from scipy import stats as st

    gen = np.random.default_rng(7)
    trials = 2000
    for dist in (st.norm(), st.expon()):
        truth = dist.ppf(stats.QUANTILES)
        hits = np.zeros(3)
        for _ in range(trials):
            ci = stats.quantile_ci(dist.rvs(size=20, random_state=gen))
            hits += (ci[:, 0] <= truth) & (truth <= ci[:, 1])
        cover = hits / trials
        assert np.all(cover >= 0.94), (dist.dist.name, cover)  # ≥ 0.95 in theory; 2,000 trials: sd ≤ 0.005
    # too few values for a lower end of p5: the quantity's own bound (0 for a count), else -inf
    assert stats.quantile_ci(np.arange(20.0), bounds=(0.0, math.inf))[0, 0] == 0.0
    assert stats.quantile_ci(np.arange(20.0))[0, 0] == -math.inf


def test_interval_of_the_mean_is_cut_to_the_possible_values() -> None:
    """ETTR near 1 had a 95 % interval up to 1.0016, rare stock-outs one down to −1: an interval is cut
    to what the metric can take (fractions [0, 1], counts ≥ 0), other metrics are left alone."""
    x = [0.999, 1.0, 0.992, 1.0, 1.0, 0.99]
    t = pd.DataFrame({"replication": range(6), "ettr.max_job": x, "stockouts": [0, 0, 0, 0, 0, 5.0],
                      "thermal.gpu_temp_max_c": [0, 0, 0, 0, 0, 5.0]})
    s = stats.summarise(t).set_index("metric")
    m, lo, hi = stats.t_interval(x)
    assert hi > 1 and s.loc["ettr.max_job", "ci_high"] == 1.0 and s.loc["ettr.max_job", "ci_low"] == lo
    assert s.loc["ettr.max_job", "half_width"] == pytest.approx(hi - m)  # the t half-width, uncut
    assert s.loc["stockouts", "ci_low"] == 0.0 and s.loc["stockouts", "ci_high"] > 0
    assert s.loc["thermal.gpu_temp_max_c", "ci_low"] < 0  # a temperature has no such bound
    assert stats.metric_range("crew_utilisation.technicians") == (0.0, math.inf)  # may pass 1 (overtime)
    assert stats.metric_range("power.generator_start_failures") == (0.0, math.inf)
    assert stats.metric_range("pue") == (1.0, math.inf)
    assert stats.metric_range("thermal.gpu_temp_p99_c") == (-math.inf, math.inf)
    assert stats.t_interval([0.0, 0.0, 1.0], bounds=(0.0, math.inf))[1] == 0.0


def test_compare_target_ci_on_a_cause_one_variant_never_sees(tmp_path: Path) -> None:
    """--target-ci on interruptions.gpu when one variant's GPUs never fail (its replications report no
    such cause): 0 there, not a KeyError (exit 3 before)."""
    job = {"jobs": [{"name": "train", "gpus": 32, "work_h": 1e6}]}
    a = write_yaml(tmp_path / "a.yaml", {**tiny(days=20), "workload": job})
    b = write_yaml(tmp_path / "b.yaml", {**tiny(days=20, mtbf_h=1e12, name="b"), "workload": job})
    res = run_compare([str(a), str(b)], [], 3, results_root=tmp_path / "res", target_ci={"interruptions.gpu": 1e6},
                      progress=False, echo=lambda s: None)
    row = res.paired.set_index("metric").loc["interruptions.gpu"]
    assert res.target_met and row["mean_b"] == 0.0 and row["mean_a"] > 0


def test_no_winner_for_a_metric_undefined_in_a_variant() -> None:
    """A share of no demands is NaN in every replication of a variant: no winner (a winner was named
    from NaN means before, with a 'Mean of empty slice' warning)."""
    import warnings

    base = pd.DataFrame({"replication": [0, 1, 2], "failures": [3.0, 4.0, 5.0], "stockout_share.psu": [0.5, 0.0, 1.0]})
    undefined = base.assign(failures=[2.0, 3.0, 4.0], **{"stockout_share.psu": [math.nan] * 3})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        w = stats.winners({"a": base, "b": undefined}).set_index("metric")
    assert "stockout_share.psu" not in w.index and w.loc["failures", "winner"] == "b"


def test_target_ci_adds_replications_until_narrow_enough(tmp_path: Path) -> None:
    ld = load_dict(tiny())
    res = run_experiment(ld, 4, folder=tmp_path / "mc", target_ci={"node_availability": 0.012}, progress=False)
    assert res.target_met is True
    row = res.summary.set_index("metric").loc["node_availability"]
    assert row["half_width"] <= 0.012
    assert len(res.replications) > 4
    capped = run_experiment(ld, 4, folder=tmp_path / "mc2", target_ci={"node_availability": 1e-6}, max_reps=6,
                            progress=False)
    assert capped.target_met is False and len(capped.replications) == 6
    with pytest.raises(InputError, match="no such metric"):
        run_experiment(ld, 4, folder=tmp_path / "mc3", target_ci={"nope": 0.1}, progress=False)


# ----------------------------------------------------------------------------- compare (CRN)

def test_compare_identical_scenarios_gives_exactly_zero_differences(tmp_path: Path) -> None:
    a = write_yaml(tmp_path / "a.yaml", tiny())
    res = run_compare([str(a), str(a)], [], 6, results_root=tmp_path / "res", progress=False, echo=lambda s: None)
    assert res.labels == ["a#1", "a#2"]
    assert len(res.paired) > 5
    assert (res.paired["diff"] == 0).all()
    assert (res.paired.ci_low == 0).all() and (res.paired.ci_high == 0).all()
    assert len(res.winners) and (res.winners.winner == "(tie)").all() and not res.winners.clear.any()


def test_compare_better_variant_positive_difference_and_crn_reduces_variance(tmp_path: Path) -> None:
    a = write_yaml(tmp_path / "a.yaml", tiny(crews=1))
    b = write_yaml(tmp_path / "b.yaml", {**tiny(crews=4, seed=99), "name": "more_crews"})
    res = run_compare([str(a), str(b)], [], 10, results_root=tmp_path / "res", progress=False, echo=lambda s: None)
    assert "seed 1 of the first scenario" in res.notes[0] and "replaced by 1" in res.notes[1]
    row = res.paired.set_index("metric").loc["node_availability"]
    assert row["diff"] > 0 and row["ci_low"] > 0
    assert row["var_diff"] < row["var_a"] + row["var_b"]
    assert row["variance_reduction"] > 2
    w = res.winners.set_index("metric").loc["node_availability"]
    assert w.winner == "more_crews" and bool(w.clear)
    # the same variant with independent seeds: the difference is much noisier
    indep = run_experiment(with_seed(load_scenario(b), 99), 10, folder=tmp_path / "indep", progress=False)
    ref = res.results[0].replications.node_availability.to_numpy()
    crn_d = res.results[1].replications.node_availability.to_numpy() - ref
    ind_d = indep.replications.node_availability.to_numpy() - ref
    assert crn_d.var(ddof=1) < ind_d.var(ddof=1)


# ----------------------------------------------------------------------------- CLI

def test_cli_commands_and_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for cmd in ([], ["montecarlo"], ["compare"], ["sweep"], ["sensitivity"], ["report"]):
        assert twin_main([*cmd, "--help"]) == 0, cmd
    capsys.readouterr()
    a = write_yaml(tmp_path / "a.yaml", tiny(days=20))
    common = ["--results", str(tmp_path / "res"), "--quiet", "--no-report"]
    assert twin_main(["montecarlo", str(a), "--reps", "1", *common]) == 2
    assert twin_main(["montecarlo", str(a), "--reps", "3", "--target-ci", "node_availability", *common]) == 2
    assert twin_main(["montecarlo", str(a), "--reps", "3", *common]) == 0
    out = capsys.readouterr().out
    assert "node availability (%)" in out and "node_availability" not in out and "95 % CI" in out and "p95" in out
    assert twin_main(["montecarlo", str(a), "--reps", "3", "--target-ci", "node_availability=1e-9",
                      "--max-reps", "4", *common]) == 1
    assert twin_main(["sweep", str(a), "--param", "maintenance.crews.technicians.count=1,2", "--reps", "3",
                      "--label", "sw", *common]) == 0
    tidy = pd.read_parquet(tmp_path / "res" / "tiny" / "sw" / "sweep.parquet")
    assert {"point", "maintenance.crews.technicians.count", "metric", "mean", "ci_low", "ci_high"} <= set(tidy.columns)
    assert sorted(tidy["maintenance.crews.technicians.count"].unique()) == [1.0, 2.0]
    assert twin_main(["sensitivity", str(a), "--factor", "2", "--reps", "3", "--label", "sens", *common]) == 0
    ranking = pd.read_parquet(tmp_path / "res" / "tiny" / "sens" / "ranking.parquet")
    assert set(ranking.factor) == {"gpu.failure (mean_h)", "gpu.repair (mean_h)"}
    assert set(ranking.metric) == {"node_availability"}
    assert twin_main(["sensitivity", str(a), "--param", "x=1,2,3", "--reps", "3", *common]) == 2
    capsys.readouterr()
    # a swept path also fixed with --set (the sweep would silently win), a value that is not YAML: the
    # error names --param
    crew = "maintenance.crews.technicians.count"
    assert twin_main(["sweep", str(a), "--param", f"{crew}=1,2", "--confidence", "0.9", "--reps", "3", *common]) == 2
    assert "--confidence" in capsys.readouterr().err  # without a --constraint it would do nothing
    for extra in (["--param", f"{crew}=1,2", "--set", f"{crew}=3"], ["--param", "horizon_days=[1,2"]):
        assert twin_main(["sweep", str(a), *extra, "--reps", "3", *common]) == 2
        err = capsys.readouterr().err.splitlines()
        assert len(err) == 1 and err[0].startswith("error: --param: "), err
    assert twin_main(["compare", str(a), "--reps", "3", *common]) == 2
    assert twin_main(["report", str(tmp_path / "nowhere")]) == 2
    from twin.experiment import cli, runner

    assert cli.DEFAULT_MAX_REPS == runner.DEFAULT_MAX_REPS


def test_sequential_stage_rule() -> None:
    """stats.next_stage: met, out of replications, or the next count (at least n + 1, at most max)."""
    from twin.experiment.stats import next_stage

    assert next_stage(5, 10, 100) == (True, 10)
    assert next_stage(150, 100, 100) == (False, 100)
    assert next_stage(50, 10, 100) == (None, 50)
    assert next_stage(11, 10, 100) == (None, 11)
    assert next_stage(500, 10, 100) == (None, 100)
