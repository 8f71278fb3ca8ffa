"""Issue 47 end to end: ``twin rare`` through the simulator (biased scenario, event predicates,
exposure from the run's records, the Monte-Carlo runner), against closed forms."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import yaml

from test_rare_estimator import H, LAM, MU, truth_2of4, truth_pair
from test_replication_cost import k_of_n
from twin.cli import main
from twin.errors import InputError
from twin.experiment.rare import run_rare
from twin.scenario.loader import load_dict


def pair_doc() -> dict[str, Any]:
    """A 1-of-2 pair with exponential repair, hot-swapped (no drain, no other delay): the Markov chain of the estimator tests."""
    return k_of_n(horizon_days=H / 24, mean_h=1 / LAM, repair={"time": {"dist": "exponential", "mean_h": 1 / MU}}) | {
        "name": "pair"} | {"cluster": {"racks": 1, "nodes_per_rack": 1, "node": {"gpus": 1, "parts": {
            "unit": {"count": 2, "required": 1, "effect": "redundant",
                     "failure": {"dist": "exponential", "mean_h": 1 / LAM},
                     "repair": {"time": {"dist": "exponential", "mean_h": 1 / MU}, "hot_swap": True}}}}}}


def test_2of4_through_the_simulator(tmp_path: Path) -> None:
    res = run_rare(load_dict(k_of_n()), "nodes_down", {}, 600, folder=tmp_path / "r", plain_reps=20,
                   echo=lambda s: None)
    e = res.estimate
    assert e.ci_low <= truth_2of4() <= e.ci_high, e
    assert e.hits > 100 and e.ess > 50 and e.gain > 10
    assert res.bias.theta == pytest.approx(11.25)


def test_repairable_pair_through_the_simulator(tmp_path: Path) -> None:
    """P ≈ 1e-6 from the Markov chain: the interval covers it, 10 % relative half-width, and the
    work-normalised variance (measured CPU) is below 1/100 of plain Monte Carlo's."""
    want = truth_pair()
    res = run_rare(load_dict(pair_doc()), "nodes_down", {}, 4000, folder=tmp_path / "p", plain_reps=50,
                   echo=lambda s: None)
    e = res.estimate
    assert e.ci_low <= want <= e.ci_high, (e, want)
    assert e.rel_half_width <= 0.10, e
    assert e.wnv <= e.plain_wnv / 100, e


def test_not_rare_agrees_with_plain_replications(tmp_path: Path) -> None:
    """p ≈ 0.1: the weighted estimate and 1,500 plain replications of the simulator agree."""
    from twin.experiment.rare_math import plain_interval

    res = run_rare(load_dict(k_of_n(horizon_days=5.8 / 24)), "nodes_down", {}, 400, theta=2.0,
                   folder=tmp_path / "n", plain_reps=1500, echo=lambda s: None)
    e = res.estimate
    p, lo, hi = plain_interval(res.plain_hits, res.plain_reps)
    assert abs(e.p - p) < 1.96 * math.hypot(e.std_error, math.sqrt(p * (1 - p) / 1500)), (e, p)
    assert e.ci_low <= truth_2of4(5.8) <= e.ci_high and lo <= truth_2of4(5.8) <= hi


def test_resumes_and_reuses(tmp_path: Path) -> None:
    ld = load_dict(k_of_n())
    a = run_rare(ld, "nodes_down", {}, 40, folder=tmp_path / "f", plain_reps=2, echo=lambda s: None)
    again = run_rare(ld, "nodes_down", {}, 40, folder=tmp_path / "f", plain_reps=2, echo=lambda s: None)
    assert again.reused and again.estimate == a.estimate
    more = run_rare(ld, "nodes_down", {}, 60, folder=tmp_path / "f", plain_reps=2, echo=lambda s: None)
    assert more.computed == 20 and list(more.replications["rare.log_w"][:40]) == list(a.replications["rare.log_w"])
    with pytest.raises(InputError, match="another rare-event estimate"):
        run_rare(ld, "nodes_down", {"min_h": "0.5"}, 40, folder=tmp_path / "f", plain_reps=2, echo=lambda s: None)


def test_events_on_a_rack_layout(tmp_path: Path) -> None:
    """group_down and nodes_down read the node intervals: with 2 nodes, 'both nodes' is rarer than 'one'."""
    doc = k_of_n(horizon_days=3 / 24)
    doc["cluster"]["nodes_per_rack"] = 2
    ld = load_dict(doc)
    one = run_rare(ld, "nodes_down", {"nodes": "1"}, 300, folder=tmp_path / "1", plain_reps=2, echo=lambda s: None)
    both = run_rare(ld, "group_down", {"groups": "1"}, 300, folder=tmp_path / "2", plain_reps=2, aim_failures=6,
                    echo=lambda s: None)
    q = truth_2of4(3.0)
    for res, want in ((one, 1 - (1 - q) ** 2), (both, q * q)):
        assert res.estimate.ci_low <= want <= res.estimate.ci_high, (res.event, res.estimate, want)


def test_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sc = tmp_path / "k.yaml"
    sc.write_text(yaml.safe_dump(k_of_n()))
    argv = ["rare", str(sc), "--event", "nodes_down", "--reps", "50", "--plain-reps", "2", "--results", str(tmp_path)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "P(event) = " in out and "95% CI" in out and "ESS" in out and "gain" in out
    assert main(argv) == 0 and "reused" in capsys.readouterr().out
    assert main(["rare", str(sc), "--event", "nodes_down", "--param", "bogus=1"]) == 2
    assert "no such parameter" in capsys.readouterr().err
    assert main(["rare", str(sc), "--event", "nodes_down", "--bias", "-3"]) == 2
    doc = k_of_n()
    doc["cluster"]["node"]["parts"]["unit"]["failure"] = {"dist": "weibull", "shape": 1.5, "scale_h": 15}
    sc.write_text(yaml.safe_dump(doc))
    assert main(["rare", str(sc), "--event", "nodes_down", "--bias-part", "unit"]) == 2
    assert "exponential lives only" in capsys.readouterr().err
