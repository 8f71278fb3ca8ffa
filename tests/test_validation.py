"""`twin validate`: the quick suite passes through the CLI, references are computed in code, a
deliberately broken model fails, the sweep shrinks its interval, and the interval helpers cover."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from twin.cli import main
from twin.physics import closed_forms as cf
from twin.validation import physical, reliability
from twin.validation.cases import CASES, interruption_rate
from twin.validation.cli import validate
from twin.validation.field import PROVENANCE, published_group_counts, read_llama_table, tuned_mtbf_h
from twin.validation.framework import (
    FAMILY_ALPHA,
    TEST_CONFIDENCE,
    TEST_INTERVALS,
    PoissonPI,
    Settings,
    bonferroni_confidence,
    judge_family,
)
from twin.validation.suite import run_suite, sweep, sweep_points

from judging import QUICK, assert_judged, budget

QUICK_EXCLUDED_FLOOR = 113
"""Wrong models the ``twin validate --quick`` run excludes, as recorded in docs/validation.md (of
QUICK_NAMED): the CI floor of the suite's power. A change that lowers it fails CI; one that raises it
updates this number and the page."""
QUICK_NAMED = 118
FULL_WITHIN_NOISE = {("standby_test", "unavailability, standby unit, λT = 0.1, repair D = 0 h",
                      "λT/2 + λD (the rare-event approximation)"),
                     ("megatron_sc21", "mean absolute error of the share of peak, the 9 other rows (1.7 B to 1 T)",
                      "bubble (p − 1)/(v·m) left out (η_k re-tuned)")}
"""The named wrong models the full run does not exclude, as docs/validation.md records them: the standby unit's
rare-event approximation differs from the exact value by less than the full run resolves; SC21 Table 1 cannot
tell a model without the pipeline bubble apart once η_k is re-tuned (its mean absolute error is 1.8 points
against the model's 2.0)."""


def double_repair_times(doc: dict[str, Any]) -> dict[str, Any]:
    """The broken model: every repair takes twice as long (fixed, exponential or lognormal)."""
    d = copy.deepcopy(doc)

    def walk(x: Any) -> None:
        if isinstance(x, dict):
            rep = x.get("repair")
            if isinstance(rep, dict) and isinstance(rep.get("time"), dict):
                t = rep["time"]
                for k in ("mean_h", "value_h"):
                    if k in t:
                        t[k] = 2 * t[k]
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    walk(d)
    return d


# ---- the quick suite through the CLI ---------------------------------------------------------------

def test_quick_suite_passes_and_writes_reports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "--quick", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for col in ("case", "quantity", "reference", "simulated mean", "95 % interval", "verdict"):
        assert col in out
    assert "PASS" in out and "FAIL" not in out
    folder = tmp_path / "quick"
    html = (folder / "report.html").read_text()
    assert "data:image/png;base64," in html and "<script" not in html and "http" not in html.split("<body>")[1]
    assert (folder / "report.md").is_file() and (folder / "table.md").is_file()
    data = json.loads((folder / "results.json").read_text())
    assert data["passed"] is True
    cases = {r["case"] for r in data["results"]}
    assert cases == set(CASES)  # every case ran
    m = data["checked"]
    assert m == sum(r["check"] for r in data["results"]) and m >= 30
    # Bonferroni: each interval at 1 - 0.01/m, so a correct model passes the whole suite >= 99 %
    assert data["interval_confidence"] == pytest.approx(1 - 0.01 / m, rel=1e-12)
    for r in data["results"]:
        assert math.isfinite(r["mean"]), r
        assert r["verdict"] in ("pass", "info"), r
        if r["check"] and r["interval"] != "exact":
            # the verdict interval (family level) contains the 95 % one
            assert r["ci_low"] <= r["ci95_low"] and r["ci95_high"] <= r["ci_high"], r
    # field cases state what was tuned and what is out-of-sample; the tuned counts are in-sample
    llama = [r for r in data["results"] if r["case"] == "llama3_54day"]
    assert {r["sample"] for r in llama if r["check"]} == {"in-sample"}
    assert any(not r["check"] and r["sample"] == "out-of-sample" for r in llama)  # ETTR: information
    for case in ("llama3_54day", "meta_rsc"):
        assert set(PROVENANCE[case]) == {"from the source", "tuned to this data", "assumptions", "out-of-sample"}
        assert PROVENANCE[case]["tuned to this data"] in (folder / "report.md").read_text()
    # the summary line says how many of the named wrong models the verdict intervals exclude
    named = [(r, v) for r in data["results"] if r["check"] for v in r["wrong_models_excluded"].values()]
    excluded = sum(1 for _, v in named if v)
    assert f"wrong models excluded: {excluded} of {len(named)}" in out and len(named) >= 20
    # the CI floor of the suite's power (issue 51): as many exclusions as recorded, of as many named
    assert excluded >= QUICK_EXCLUDED_FLOOR and len(named) >= QUICK_NAMED, (excluded, len(named))
    # the suite's error budget: these rows plus the tests' other draws stay below 1 % (tests/judging.py)
    stat_rows = sum(1 for r in data["results"] if r["check"] and r["interval"] != "exact")
    assert budget(stat_rows, data["interval_confidence"]) < FAMILY_ALPHA, budget(stat_rows, data["interval_confidence"])


@pytest.mark.slow
def test_full_suite_excludes_every_wrong_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The power of `twin validate` (full): at its Bonferroni level every wrong model a case names lies
    outside its verdict interval (the quick suite may not: it is a smoke check)."""
    assert main(["validate", "--out", str(tmp_path), "--workers", "2"]) == 0
    data = json.loads((tmp_path / "full" / "results.json").read_text())
    named = {(r["case"], r["quantity"], k): ok for r in data["results"] if r["check"]
             for k, ok in r["wrong_models_excluded"].items()}
    # exactly what docs/validation.md records: every wrong model excluded but FULL_WITHIN_NOISE
    assert len(named) >= QUICK_NAMED
    assert {k for k, ok in named.items() if not ok} == FULL_WITHIN_NOISE, [k for k, ok in named.items() if not ok]


def test_unknown_case_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "--case", "nope", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--case" in err[0] and "single_part" in err[0]
    assert main(["validate", "--sweep", "--out", str(tmp_path)]) == 2  # --sweep needs one case
    capsys.readouterr()
    # a typo'd replication count is refused before any work, naming the limit and --force
    assert main(["validate", "--case", "single_part", "--reps", "10000000", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--reps" in err[0] and "100,000" in err[0] and "--force" in err[0], err
    assert not any(tmp_path.iterdir())


# ---- references are computed in code ------------------------------------------------------------------

def test_references_follow_their_parameters() -> None:
    """Each reference is the formula of the case's parameters, not a stored number: change a parameter
    and the reference moves to the formula's new value."""
    (a,) = reliability.single_part(QUICK, mtbf_h=10.0, mttr_h=2.0)
    (b,) = reliability.single_part(QUICK, mtbf_h=10.0, mttr_h=1.0)
    assert a.reference == pytest.approx(10 / 12) and b.reference == pytest.approx(10 / 11)
    assert a.passed and b.passed

    e1 = physical.energy_constant_load(QUICK, nodes=2, hours=240.0)
    e2 = physical.energy_constant_load(QUICK, nodes=3, hours=100.0)
    assert e1[0].reference == pytest.approx(2 * 10_200 * 240 / 1000) and e2[0].reference == pytest.approx(3060.0)
    assert all(r.passed for r in e1 + e2)

    t1 = physical.thermal_step(QUICK)
    t2 = physical.thermal_step(QUICK, r_c_per_w=0.11, c_j_per_c=300.0, supply_c=20.0)
    assert t1[1].reference != t2[1].reference
    tau = 0.11 * 300.0
    assert t2[1].reference == pytest.approx(tau * math.log((20 + 11 - 20 - 77) / (89 - 20 - 77)))
    assert all(r.passed for r in t1 + t2)

    u1 = physical.ups_ride_through(QUICK, gap_h=2.0)
    u2 = physical.ups_ride_through(QUICK, gap_h=4.0, ride_through_min=6.0)
    assert u2[1].reference == pytest.approx(u1[1].reference * 2 * 6 / 10)
    assert all(r.passed for r in u1 + u2)

    rates = interruption_rate(Settings(quick=True, confidence=0.99, replications=4), node_mtbf_h=250.0)
    assert [r.reference for r in rates] == pytest.approx([n / 250.0 for n in (1, 4, 16)])


def test_llama_references_come_from_the_packaged_table() -> None:
    rows = read_llama_table()
    counts = published_group_counts(rows)
    assert counts["total"] == 419 == sum(r["count"] for r in rows)
    assert counts["GPU"] == 148 + 72 + 19 + 17 + 6 + 6 and counts["software"] == 54 + 2 + 7
    # the derivation behind baseline.yaml: 21,233,664 GPU-hours / 190 GPU failures
    assert tuned_mtbf_h(rows, "gpu") == pytest.approx(16_384 * 54 * 24 / 190)


# ---- a deliberately broken model fails --------------------------------------------------------------------

def test_broken_model_fails_the_case_and_the_command(tmp_path: Path) -> None:
    (r,) = reliability.single_part(Settings(quick=True, confidence=0.99, mutate=double_repair_times))
    assert not r.passed and r.ci_high < r.reference  # availability clearly lower
    code = validate(["single_part", "one_of_two"], quick=True, out=tmp_path, mutate=double_repair_times,
                    echo=lambda _m: None)
    assert code == 1
    data = json.loads((tmp_path / "quick-single_part+one_of_two" / "results.json").read_text())
    assert data["passed"] is False and all(r["verdict"] == "FAIL" for r in data["results"])
    # the same cases unbroken pass
    # the same cases unbroken pass, judged at the suite's level (tests/judging.py: 3 intervals within its budget)
    unbroken = run_suite(["single_part", "one_of_two"], Settings(quick=True), alpha=3 * FAMILY_ALPHA / TEST_INTERVALS)
    assert unbroken.passed and unbroken.confidence == pytest.approx(TEST_CONFIDENCE)


# ---- sweep ------------------------------------------------------------------------------------------------

def test_sweep_interval_shrinks_around_the_reference(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "--quick", "--case", "single_part", "--sweep", "--reps", "40",
                 "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "half-width" in out
    assert (tmp_path / "quick" / "sweep-single_part" / "report.html").is_file()
    (r,) = reliability.single_part(Settings(quick=True, replications=40))
    rows = sweep([r])
    assert [x.replications for x in rows] == sweep_points(40) == [3, 5, 10, 20, 40]
    assert rows[-1].half_width < rows[0].half_width / 3  # about 1/sqrt(k)
    # one run: judge coverage at the suite's level (a 95 % interval misses 1 run in 20 by design)
    (last,) = [x for x in sweep([r], confidence=TEST_CONFIDENCE) if x.replications == 40]
    assert last.covers


# ---- the interval machinery ------------------------------------------------------------------------------

def test_bonferroni_level() -> None:
    assert bonferroni_confidence(25) == pytest.approx(0.9996)
    (r,) = reliability.single_part(Settings(quick=True, confidence=0.99))  # the mechanics: 0.99 widens to 0.9975
    judged, conf = judge_family([r, r, r, r])
    assert conf == pytest.approx(1 - 0.01 / 4)
    assert judged[0].ci_high - judged[0].ci_low > r.ci_high - r.ci_low


def test_poisson_prediction_interval_covers() -> None:
    """The PI of a new Poisson count, from replications estimating its mean, covers at least its level
    (checked against numpy draws; a test-only generator, not a model stream)."""
    g = np.random.default_rng(2024)
    mu, reps, trials, conf = 60.0, 8, 4000, 0.9
    miss = 0
    for _ in range(trials):
        _, lo, hi = PoissonPI(g.poisson(mu, reps).astype(float)).interval(conf)
        y = g.poisson(mu)
        miss += not (lo <= y <= hi)
    # binomial bound on the miss rate at the nominal 10 %: below 10 % + 4 sd (one-sided 3e-5: the suite's budget)
    assert miss / trials < 0.1 + 4 * math.sqrt(0.1 * 0.9 / trials)


def test_meta_reference_is_the_calibrated_scaling_law() -> None:
    res = CASES["meta_rsc"](QUICK)
    cal = {r.quantity.split(":")[0]: r for r in res if "per-node" in r.quantity}
    for r in res:
        if "MTTF" not in r.quantity or r.sample == "out-of-sample":
            continue
        cluster = r.quantity.split(":")[0]
        n = int(r.quantity.split("MTTF, ")[1].split(" nodes")[0])
        r_hat = cal[cluster].mean / 24_000.0  # per node-hour
        assert r.reference == pytest.approx(1.0 / (n * r_hat), rel=1e-12)
        assert r.passed and all(r.excludes(v) for v in r.wrong.values())
    assert cal["RSC-1"].reference == 6.50 and cal["RSC-2"].reference == 2.34
    assert cf.job_interruption_rate_per_h(512, 6.5 / 24_000) == pytest.approx(512 * 6.5 / 24_000)


def test_meta_job_size_is_judged_out_of_sample_against_the_published_mttf() -> None:
    """meta_rsc out of sample (issue 51, item 1): the node rate from the published 8-GPU MTTF (about 47
    days), the simulated 1,024-GPU job's MTTF against the published about 8 h within ±25 % plus the
    simulation's interval; the naive predictors (size-independent 1,128 h, the paper's own 1/(N·r_f) =
    28.8 h) are excluded. A model whose interruptions did not grow with the job (the 8-GPU rate for the
    whole job) fails it."""
    from twin.validation.field import META_BAND, meta_job_size

    r = meta_job_size(QUICK)
    assert r.sample == "out-of-sample" and r.check and r.reference == 8.0
    assert r.passed and not r.failed_invariants(), r
    assert r.wrong["size-independent: the 8-GPU MTTF"] == pytest.approx(47 * 24.0)
    assert r.wrong["1/(N·r_f), the paper's RSC-1 rate"] == pytest.approx(24_000 / (128 * 6.5))
    assert all(r.excludes(v) for v in r.wrong.values())
    assert r.ci_high / r.ci_low < (1 + META_BAND) ** 2 * 2.0  # a stated interval: the band and the noise

    def per_job_rate(doc: dict[str, Any]) -> dict[str, Any]:  # every part's rate divided by the job's nodes
        d = copy.deepcopy(doc)
        n = d["cluster"]["nodes_per_rack"]
        for part in d["cluster"]["node"]["parts"].values():
            part["failure"]["mtbf_h"] *= n
        d["horizon_days"] *= n
        return d

    broken = meta_job_size(Settings(quick=True, confidence=0.99, mutate=per_job_rate))
    assert not broken.passed and broken.ci_low > broken.reference * (1 + META_BAND)


def test_rack_series_is_independent_units_in_series() -> None:
    """Rack parts in series: the reference is A_u^n, the simulation passes and excludes the wrong
    models (one unit per rack, detection forgotten, units that stop ageing while the rack is down)."""
    (r,) = reliability.rack_series(QUICK)
    a_u = 300.0 / (300.0 + 0.5 + 4.0)
    assert r.reference == pytest.approx(a_u ** 9, rel=1e-12)
    assert len(r.wrong) == 3
    assert_judged(r, 0.02)  # ±0.9 % of the reference in the quick run; the far wrong models excluded
