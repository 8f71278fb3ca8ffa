"""Node health (issue 26): frailty, quarantine, stragglers, silent data corruption, infant mortality."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from twin.errors import InputError
from twin.model.health import gamma_frailty
from twin.model.parts import frail_sample
from twin.scenario import load_dict
from twin.scenario.distributions import Exponential, Lognormal, Weibull
from twin.sim import run_replication
from twin.validation.cases import CASES
from twin.validation.framework import TEST_CONFIDENCE, Settings

QUICK = Settings(quick=True, confidence=TEST_CONFIDENCE)  # the suite's error budget (tests/judging.py)


@pytest.mark.parametrize("case", ["frailty_negbin", "sdc_rollback", "straggler_policy"])
def test_health_case_passes(case: str) -> None:
    res = CASES[case](QUICK)
    assert res
    for r in res:
        assert r.passed, r
        for name, value in r.wrong.items():
            assert r.excludes(value), (r.quantity, name)


def test_frailty_case_fails_without_frailty() -> None:
    """The frailty check can fail: with the frailty switched off the counts are Poisson (v̂ ≈ 0)."""
    def off(doc: dict) -> dict:
        d = copy.deepcopy(doc)
        d["health"]["frailty"]["variance"] = 0.0
        return d

    res = CASES["frailty_negbin"](Settings(quick=True, replications=10, mutate=off))
    assert not res[0].passed


def test_sdc_case_fails_with_another_latency() -> None:
    """The exact case can fail: a simulated latency other than the one the closed form assumes."""
    def late(doc: dict) -> dict:
        d = copy.deepcopy(doc)
        d["health"]["sdc"]["detection"] = {"dist": "fixed", "value_h": 0.1}  # another latency: other loss
        return d

    res = CASES["sdc_rollback"](Settings(quick=True, mutate=late))
    assert not all(r.passed for r in res)


def test_proportional_hazards_sampling() -> None:
    u = np.linspace(0.01, 0.99, 99)
    z = np.full(99, 2.5)
    e = Exponential(mean_h=100.0)
    assert np.allclose(frail_sample(e, u, z), e.sample(u) / 2.5, rtol=1e-12)
    w = Weibull(shape=2.0, scale_h=100.0)
    # survival S(t)^z of a Weibull is a Weibull with scale · z^(-1/k)
    assert np.allclose(frail_sample(w, u, z), Weibull(shape=2.0, scale_h=100.0 * 2.5 ** -0.5).sample(u), rtol=1e-12)
    ln = Lognormal(mean_h=100.0, sigma=0.5)
    t = frail_sample(ln, u, z)
    from scipy import stats

    mu = np.log(100.0) - 0.125
    surv = stats.lognorm.sf(t, 0.5, scale=np.exp(mu))
    assert np.allclose(surv ** 2.5, 1 - u, rtol=1e-9)  # S_Z(t) = S(t)^z = 1 - u


def test_gamma_frailty_moments() -> None:
    u = (np.arange(200_000) + 0.5) / 200_000
    z = gamma_frailty(u, 0.5)
    assert abs(z.mean() - 1) < 1e-3 and abs(z.var() - 0.5) < 2e-3
    assert np.all(gamma_frailty(u[:5], 0.0) == 1.0)


def base_doc(**health: object) -> dict:
    return {
        "name": "health-test", "seed": 7, "horizon_days": 60,
        "cluster": {"racks": 2, "nodes_per_rack": 8, "node": {"gpus": 8, "parts": {
            "gpu": {"count": 8, "failure": {"mtbf_h": 8000},
                    "repair": {"time": {"dist": "fixed", "value_h": 3}, "burn_in_h": 2}},
            "slow": {"effect": "degraded", "speed": {"low": 0.5, "high": 0.8}, "failure": {"mtbf_h": 3000},
                     "repair": {"time": {"dist": "fixed", "value_h": 2}}}}}},
        "workload": {"scheduler": {"policy": "fifo", "hot_spares": 2},
                     "jobs": [{"name": "big", "gpus": 112, "work_h": 5000,
                               "checkpoint": {"interval_h": 1.0, "write_h": 0.02}}]},
        "health": health,
    }


def test_quarantine_takes_repeat_offenders_out() -> None:
    doc = base_doc(frailty={"variance": 2.0}, quarantine={"failures": 2, "window_days": 30})
    res = run_replication(load_dict(doc, source="t").scenario)
    m = res.metrics
    assert m["health.quarantines"] >= 1 and m["health.lemons"] >= 1
    iv = res.tables["node_intervals"]
    assert (iv["cause"] == "quarantine").any() or (res.tables["events"]["kind"] == "quarantine").sum() >= 1
    assert 0 < m["health.lemon_down_share"] <= 1
    # the same seed without a quarantine: no node taken out for it
    doc2 = base_doc(frailty={"variance": 2.0})
    m2 = run_replication(load_dict(doc2, source="t").scenario).metrics
    assert m2["health.quarantines"] == 0


def test_frailty_is_common_random_numbers() -> None:
    """The same node draws the same frailty whatever else changes (its own stream)."""
    from twin.sim import Model

    a = Model(load_dict(base_doc(frailty={"variance": 1.0}), source="t").scenario)
    doc = base_doc(frailty={"variance": 1.0})
    doc["cluster"]["node"]["parts"]["gpu"]["failure"] = {"mtbf_h": 4000}
    b = Model(load_dict(doc, source="t").scenario)
    fa = a.by_section["health"].frailty
    fb = b.by_section["health"].frailty
    assert np.array_equal(fa, fb) and fa.std() > 0.3


def test_straggler_swap_moves_slowdown_to_restarts() -> None:
    keep = run_replication(load_dict(base_doc(stragglers={"policy": "keep"}), source="t").scenario).metrics
    swap = run_replication(load_dict(base_doc(stragglers={"policy": "swap", "detection_h": 0.05}),
                                     source="t").scenario).metrics
    assert keep["stragglers.episodes"] == swap["stragglers.episodes"] > 0  # the same failures (CRN)
    assert swap["stragglers.swaps"] == swap["stragglers.episodes"] and keep["stragglers.swaps"] == 0
    assert swap.get("interruptions.straggler:slow", 0) > 0
    assert keep["stragglers.speed_lost_node_hours"] > 0


def test_infant_mortality_fails_replacements_early() -> None:
    doc = base_doc(infant_mortality={"share": 1.0, "early_life": {"dist": "fixed", "value_h": 1.0}})
    res = run_replication(load_dict(doc, source="t").scenario)
    ev = res.tables["events"]
    fails = ev[ev["kind"] == "fail"]
    n = res.metrics["health.infant_defects"]
    assert n > 0
    # every defective replacement fails 1 h after its restore (unless the horizon comes first)
    early = int(np.isclose(fails["value"], 1.0).sum())
    assert n - 2 * 16 <= early <= n
    # a GPU's early failure falls in its 2 h burn-in: caught there, no job is interrupted by it
    jobs = res.tables["jobs"]
    gpu_ints = int(((jobs.record == "interruption") & (jobs.cause == "gpu")).sum())
    gpu_fails = int(fails["path"].astype(str).str.contains(r"\.gpu\d+$").sum())
    assert gpu_ints < gpu_fails / 2


def test_bad_health_input() -> None:
    doc = base_doc(frailty={"variance": 1.0, "parts": ["nope"]})
    with pytest.raises(InputError, match="health.frailty.parts"):
        load_dict(doc, source="t")
    doc = base_doc()
    doc["cluster"]["node"]["parts"]["slow"].pop("speed")
    with pytest.raises(InputError, match="speed"):
        load_dict(doc, source="t")


def test_a_nodes_single_draw_uses_its_own_digest_as_the_node_array_would() -> None:
    """``NodeHealth._u`` hashes only the node it draws for (not every node of the purpose: ~2,000 paths at a
    16K-GPU hall's first SDC test), and draws the number of the purpose's node array, before and after that
    array exists."""
    from pathlib import Path

    from twin import rng
    from twin.model.health import node_digests
    from twin.scenario import load_scenario
    from twin.sim import Model

    sc = load_scenario(Path(__file__).resolve().parent.parent / "scenarios" / "pretrain-16k.yaml",
                       ["horizon_days=1"]).scenario
    h = Model(sc, 0).by_section["health"]
    cl = h.cluster
    for purpose in ("sdc_test", "speed", "straggler"):
        arr = node_digests(cl.n_nodes, cl.nodes_per_rack, purpose)
        for node in (0, 1, 517, cl.n_nodes - 1):
            for k in (0, 3):
                want = rng.uniform1(h._stream_key, int(arr[node]), k)
                assert h._u(node, purpose, k) == want
                h._node_digests(purpose)  # the purpose's array made: the same number from it
                assert h._u(node, purpose, k) == want
                h._digests.pop(purpose)
