"""The risks 2N is bought for (issue 43): a modular UPS (k of n modules with repair, its static bypass,
UPS faults that drop the load), against the birth–death chain and hand-computed times."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from scipy import stats

from tests.test_power import run, scenario

MOD_FAIL_H, MOD_REPAIR_H = 100.0, 20.0


def _modules(count: int, required: int, **over: Any) -> dict[str, Any]:
    return {"modules": {"count": count, "required": required,
                        "failure": {"dist": "exponential", "mean_h": MOD_FAIL_H},
                        "repair": {"time": {"dist": "exponential", "mean_h": MOD_REPAIR_H}}}, **over}


def availability_birth_death(n: int, k: int, lam: float, mu: float, crews: int) -> float:
    """Steady-state probability that at least ``k`` of ``n`` modules work: the birth–death chain on the
    number failed j, failing at (n − j)λ and repaired at min(j, crews)·μ."""
    p = [1.0]
    for j in range(n):
        p.append(p[-1] * (n - j) * lam / (min(j + 1, crews) * mu))
    pi = np.array(p) / sum(p)
    return float(pi[: n - k + 1].sum())


def test_k_of_n_ups_with_repair_matches_the_birth_death_chain() -> None:
    """3 modules, 2 required, one crew: the fraction of time the UPS has its k modules, over 8 paired
    years, within a 99.9 % t-interval of the chain's availability; the wrong models are outside it."""
    n, k, lam, mu = 3, 2, 1 / MOD_FAIL_H, 1 / MOD_REPAIR_H
    days, reps = 400.0, 8
    avail = []
    for r in range(reps):
        res = run(scenario("n", days=days, seed=11, ups=_modules(n, k)), r)
        avail.append(1.0 - res.metrics["power.ups_short_hours"] / (days * 24))
    a = np.array(avail)
    half = stats.t.ppf(0.9995, reps - 1) * a.std(ddof=1) / np.sqrt(reps)
    lo, hi = a.mean() - half, a.mean() + half
    exact = availability_birth_death(n, k, lam, mu, crews=1)
    assert lo <= exact <= hi, (exact, lo, hi)
    wrong = {
        "no repair": 0.0,
        "independent of k (k = n)": availability_birth_death(n, n, lam, mu, 1),
        "independent of k (k = 1)": availability_birth_death(n, 1, lam, mu, 1),
        "a crew per module (binomial)": availability_birth_death(n, k, lam, mu, crews=n),
    }
    for name, v in wrong.items():
        assert not lo <= v <= hi, (name, v, lo, hi)


def _fixed_modules(p_fail: float, fail_h: float = 100.0) -> dict[str, Any]:
    return {"modules": {"count": 2, "required": 2, "failure": {"dist": "fixed", "value_h": fail_h},
                        "repair": {"time": {"dist": "fixed", "value_h": 4.0}}},
            "bypass": {"failure_to_transfer_prob": p_fail, "manual_bypass_min": 15.0}}


def test_bypass_that_always_fails_drops_the_load_at_the_first_shortfall() -> None:
    """N modules (2 of 2), each failing at 100 h: the first shortfall is at 100 h; a bypass that fails
    with probability 1 drops every node of the single feed from 100 h to 100 h + 15 min + reboot_h."""
    res = run(scenario("n", days=5.0, ups=_fixed_modules(1.0)))
    iv = res.tables["node_intervals"]
    down = iv[iv["state"] == "down"]
    assert sorted(down["node"].tolist()) == [0, 1, 2, 3]
    assert set(down["cause"].astype(str)) == {"power:ups"}
    assert np.allclose(down["start_h"], 100.0) and np.allclose(down["end_h"], 100.0 + 0.25 + 0.1)
    m = res.metrics
    assert m["power.ups_shortfalls"] == 1 and m["power.ups_bypass_failures"] == 1
    assert m["power.down_node_hours.ups"] == pytest.approx(4 * 0.35)
    # a bypass that always transfers keeps the load up (on raw utility, exposed)
    ok = run(scenario("n", days=5.0, ups=_fixed_modules(0.0)))
    assert ok.metrics["power.down_node_hours"] == 0.0 and ok.metrics["power.ups_shortfalls"] == 1


def test_2n_with_identical_module_failures_drops_both_feeds() -> None:
    """2N does not protect against a common mode: both feeds' modules fail at 100 h (fixed lifetimes), both
    transfers to bypass fail, and every node is down for 15 min + reboot_h, cause ``power:ups``."""
    res = run(scenario("2n", days=5.0, ups=_fixed_modules(1.0)))
    m = res.metrics
    assert m["power.ups_bypass_failures"] == 2
    assert m["power.down_node_hours.ups"] == pytest.approx(4 * 0.35)


def test_ups_fault_drops_the_load_for_the_manual_bypass_time() -> None:
    """Faults at 50 a year over 100 days (a single-block UPS with no modules): each fault drops the feed
    for manual_bypass_min, so the feed's dead hours are faults × 15 min exactly; counted within Poisson."""
    res = run(scenario("n", days=100.0, ups={"fault": {"per_year": 50.0, "repair_h": 8.0}}))
    m = res.metrics
    assert m["power.feed_dead_hours"] == pytest.approx(m["power.ups_faults"] * 0.25)
    assert m["power.down_node_hours.ups"] == pytest.approx(m["power.ups_faults"] * 4 * 0.35)
    lam = 50.0 * 100 / 365
    assert stats.poisson.ppf(0.0005, lam) <= m["power.ups_faults"] <= stats.poisson.ppf(0.9995, lam)


# ---- common causes across equipment (issue 43 item 2) -----------------------------------------------

NEVER_FAILS = {"dist": "fixed", "value_h": 1e9}


def _hazard_doc(hazards: dict[str, Any], days: float = 400.0, **units: Any) -> dict[str, Any]:
    over = {"ups": {"failure": NEVER_FAILS, "repair": {"time": {"dist": "fixed", "value_h": 3.0}}},
            "generator": {"failure": NEVER_FAILS, "repair": {"time": {"dist": "fixed", "value_h": 5.0}}},
            "switchboard": {"failure": NEVER_FAILS}}
    for k, v in units.items():
        over[k] = {**over[k], **v}
    doc = scenario("2n", days=days, crews=4, **over)
    doc["hazards"] = hazards
    return doc


def _fails(res: Any) -> Any:
    ev = res.tables["events"]
    return ev[ev["kind"].astype(str) == "fail"]


def test_hazard_zone_takes_down_exactly_its_units_for_the_repair_time() -> None:
    """An arc flash in electrical room A (feed A's UPS and generator) at 20 a year: every event fails
    exactly those two units at its time, and both come back exactly repair_h later (no ticket)."""
    doc = _hazard_doc({"zones": {"room_a": {"units": ["power.feedA.ups", "power.feedA.generator"],
                                            "events": {"arc_flash": {"per_year": 20.0, "repair_h": 48.0}}}}}, days=100)
    res = run(doc)
    ev = res.tables["events"]
    hz = ev[ev["kind"].astype(str) == "hazard"]
    fails = _fails(res)
    assert len(hz) >= 2
    assert set(fails["path"].astype(str)) == {"power.feedA.ups", "power.feedA.generator"}
    ends = ev[ev["kind"].astype(str) == "common_repair_end"]
    for t in hz[hz["value"] > 0]["time_h"]:
        at = fails[np.isclose(fails["time_h"], t)]
        assert sorted(at["path"].astype(str)) == ["power.feedA.generator", "power.feedA.ups"]
        back = ends[np.isclose(ends["time_h"], t + 48.0)]
        assert sorted(back["path"].astype(str)) == ["power.feedA.generator", "power.feedA.ups"]
    assert res.tables["tickets"].empty or not set(res.tables["tickets"]["part"]) & {"ups", "generator"}
    m = res.metrics
    assert m["hazards.events.room_a/arc_flash"] == len(hz[hz["value"] > 0])
    assert m["hazards.units_failed"] == 2 * m["hazards.events"]


@pytest.mark.parametrize("repair", ["own", "common"])
@pytest.mark.parametrize("rate", ["per_year", "beta"])
def test_common_group_across_two_types_fails_both_together_at_its_rate(repair: str, rate: str) -> None:
    """A group of feed A's UPS and feed B's generator (two unit types): its common events fail both at the
    same instant, their number within the Poisson interval of the common rate, given directly (8 a year)
    or as β × the smallest member rate (UPS MTBF 1,000 h, generator 2,000 h, β = 0.5: a mean of 4,000 h),
    under both repair semantics (one repair for the event, or a ticket each)."""
    grp: dict[str, Any] = {"units": ["power.feedA.ups", "power.feedB.generator"], "repair": repair}
    days = 400.0
    if rate == "per_year":
        grp["per_year"] = 8.0
        mean_h = 8760 / 8.0
        units: dict[str, Any] = {}
    else:
        grp["beta"] = 0.5
        mean_h = 1.0 / (0.5 * (1 / 2000.0))  # β × the smallest rate (MTBF 2,000 h): 4,000 h
        units = {"ups": {"failure": {"dist": "exponential", "mean_h": 1000.0}},
                 "generator": {"failure": {"dist": "exponential", "mean_h": 2000.0}}}
    if repair == "common":
        grp["repair_h"] = 6.0
    res = run(_hazard_doc({"groups": {"ab": grp}}, days=days, **units))
    m = res.metrics
    lam = days * 24 / mean_h
    assert stats.poisson.ppf(0.0005, lam) <= m["hazards.events.ab"] <= stats.poisson.ppf(0.9995, lam)
    ev = res.tables["events"]
    hz = ev[(ev["kind"].astype(str) == "hazard") & (ev["value"] == 2)]
    assert len(hz) >= 1
    fails = _fails(res)
    for t in hz["time_h"]:
        at = fails[np.isclose(fails["time_h"], t)]
        assert sorted(at["path"].astype(str)) == ["power.feedA.ups", "power.feedB.generator"]
    ends = ev[ev["kind"].astype(str) == "common_repair_end"]
    t = res.tables["tickets"]
    if repair == "common":  # one repair: both back repair_h after the event, no ticket for it
        for t0 in hz["time_h"]:
            assert len(ends[np.isclose(ends["time_h"], t0 + 6.0)]) == 2
        assert len(t[t["part"].isin(["ups", "generator"])]) == m["failures.ups"] + m["failures.generator"] - \
            m["hazards.units_failed"]
    else:  # each its own ticket, repaired by the crews (UPS 3 h, generator 5 h after the event)
        assert ends.empty
        assert len(t[t["part"].isin(["ups", "generator"])]) == m["failures.ups"] + m["failures.generator"]


# ---- maintenance that can go wrong (issue 43 item 3) ------------------------------------------------

def _visit(mode: str, p: float) -> dict[str, Any]:
    return {"maintenance": {"interval_h": 1000.0, "duration_h": 8.0, "offset_h": 100.0, "mode": mode,
                            "switching_error_prob": p, "switching_restore_min": 30.0}}


@pytest.mark.parametrize("topology,mode", [("n", "bypass"), ("n", "live"), ("2n", "isolate")])
def test_switching_error_with_probability_one_drops_the_feed_at_the_first_window(topology: str, mode: str) -> None:
    """At the first UPS visit (100 h) the switching goes wrong: the load it touches drops for 30 min. With N
    (bypass or live work) that is feed A; with 2N isolating feed A it is feed B, which carries the load, so
    every node is down from 100 h to 100.5 h + reboot_h either way, cause ``power:switching``."""
    res = run(scenario(topology, days=20.0, ups=_visit(mode, 1.0)))
    iv = res.tables["node_intervals"]
    down = iv[iv["state"] == "down"]
    assert sorted(down["node"].tolist()) == [0, 1, 2, 3]
    assert set(down["cause"].astype(str)) == {"power:switching"}
    assert np.allclose(down["start_h"], 100.0) and np.allclose(down["end_h"], 100.5 + 0.1)
    assert res.metrics["power.switching_errors"] == 1  # the next visit (2N: feed B at 600 h) is past the horizon
    ok = run(scenario(topology, days=20.0, ups=_visit(mode, 0.0)))
    assert ok.metrics["power.down_node_hours"] == 0.0


def unavailability_tested(lam: float, T: float, tau: float) -> float:
    """Mean unavailability of a unit whose failures are silent, found by a test every ``T`` hours that takes
    a working unit out for ``tau`` (repair instant): per test cycle, the unit found failed (probability
    1 − e^(−λT)) is renewed and down from its failure to the next test; the unit found working is out for
    tau and then down from its failure (not before tau) to the next test. Without tau this is the textbook
    1 − (1 − e^(−λT))/(λT)."""
    from scipy.integrate import quad

    pa = math.exp(-lam * T)
    latent = T - (1 - math.exp(-lam * T)) / lam  # E[time failed in a cycle], renewed at its start
    tested = (tau + (1 - math.exp(-lam * tau)) * (T - tau)
              + quad(lambda s: lam * math.exp(-lam * s) * (T - s), tau, T)[0])
    return (pa * tested + (1 - pa) * latent) / T


def test_tested_standby_switchboard_matches_the_test_interval_formula_with_test_duration() -> None:
    """Switchboards (a non-UPS unit) failing silently (MTBF 1,000 h), tested every 500 h, each test taking a
    working switchboard out for 100 h (feed A's, then feed B's): the fraction of time a feed is dead, over
    4 × 2,000 days and both feeds, within a 99.9 % t-interval of the formula with the test duration; the
    textbook formula without it and the test time alone are outside."""
    lam, T, tau, days, reps = 1 / 1000.0, 500.0, 100.0, 2000.0, 4
    sb = {"failure": {"dist": "exponential", "mean_h": 1000.0}, "latent_test_interval_h": T,
          "test_duration_h": tau, "repair": {"time": {"dist": "fixed", "value_h": 0.001}}}
    u = []
    for r in range(reps):
        res = run(scenario("2n", days=days, crews=4, switchboard=sb), r)
        u.append(res.metrics["power.feed_dead_hours"] / (2 * days * 24))
    a = np.array(u)
    half = stats.t.ppf(0.9995, reps - 1) * a.std(ddof=1) / np.sqrt(reps)
    lo, hi = a.mean() - half, a.mean() + half
    assert lo <= unavailability_tested(lam, T, tau) <= hi, (unavailability_tested(lam, T, tau), lo, hi)
    textbook = 1 - (1 - math.exp(-lam * T)) / (lam * T)
    for wrong in (textbook, tau / T):
        assert not lo <= wrong <= hi, (wrong, lo, hi)


@pytest.mark.parametrize("hazards,field", [
    ({"zones": {"room": {"units": ["power.feedC"], "events": {"fire": {"per_year": 1, "repair_h": 10}}}}},
     "hazards.zones.room.units.0"),
    ({"groups": {"g": {"units": ["power.feedA.ups", "power.feedB.ups"], "per_year": 1, "beta": 0.1}}},
     "hazards.groups.g.per_year"),
    ({"groups": {"g": {"units": ["power.feedA.ups", "power.feedB.ups"], "per_year": 1, "repair": "common"}}},
     "hazards.groups.g.repair_h"),
])
def test_bad_hazards_are_one_line_with_their_path(hazards: dict[str, Any], field: str, tmp_path: Any,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    import yaml

    from twin import cli

    doc = _hazard_doc(hazards, days=1.0)
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(doc))
    code = cli.main(["run", str(path), "--results", str(tmp_path / "out")])
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert code == 2 and len(err) == 1 and field in err[0], err


def test_module_population_is_started_once() -> None:
    """Each module's first lifetime is one draw (a population started twice would race two lifetimes)."""
    from twin.scenario.loader import load_dict
    from twin.sim import Model

    m = Model(load_dict(scenario("n", days=10.0, ups=_modules(3, 2))).scenario, 0)
    assert m.facility["ups_module"].draws.tolist() == [1, 1, 1]
