"""N+1 as a facilities buyer means it (issue 43): generator sets k of n (standby failures with repair,
fail-to-start per set on demand, fail-to-run), and module-wise maintenance of an N+1 UPS or generator plant
without bypass, against the birth–death chain, the binomial and hand-computed outcomes."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from scipy import stats

from tests.test_power import run, scenario
from tests.test_power_risk import availability_birth_death

SET_FAIL_H, SET_REPAIR_H = 100.0, 20.0


def _sets(count: int, required: int, **over: Any) -> dict[str, Any]:
    sets = {"count": count, "required": required, "failure": {"dist": "exponential", "mean_h": SET_FAIL_H},
            "repair": {"time": {"dist": "exponential", "mean_h": SET_REPAIR_H}}, "run_failure_per_h": 0.0}
    return {"modules": {**sets, **over}}


def _t_interval(x: list[float], conf: float = 0.999) -> tuple[float, float]:
    a = np.array(x)
    half = stats.t.ppf(0.5 + conf / 2, len(a) - 1) * a.std(ddof=1) / np.sqrt(len(a))
    return float(a.mean() - half), float(a.mean() + half)


def test_k_of_n_generator_sets_with_repair_match_the_birth_death_chain() -> None:
    """3 sets, 2 required, one crew, no outages: the fraction of time the plant has its k sets, over 8
    paired years, within a 99.9 % t-interval of the chain's availability; the wrong models are outside."""
    n, k, lam, mu = 3, 2, 1 / SET_FAIL_H, 1 / SET_REPAIR_H
    days, reps = 400.0, 8
    avail = []
    for r in range(reps):
        res = run(scenario("n", days=days, seed=13, generator=_sets(n, k)), r)
        avail.append(1.0 - res.metrics["power.generator_short_hours"] / (days * 24))
    lo, hi = _t_interval(avail)
    exact = availability_birth_death(n, k, lam, mu, crews=1)
    assert lo <= exact <= hi, (exact, lo, hi)
    for name, v in {"k = n": availability_birth_death(n, n, lam, mu, 1),
                    "k = 1": availability_birth_death(n, 1, lam, mu, 1),
                    "a crew per set": availability_birth_death(n, k, lam, mu, crews=n)}.items():
        assert not lo <= v <= hi, (name, v, lo, hi)


def _outage_doc(sets: dict[str, Any], p_start: float, days: float, per_year: float, dur: dict[str, Any],
                **over: Any) -> dict[str, Any]:
    gen = {"start_failure_prob": p_start, "start_delay_s": 0.0, **sets}
    return scenario("n", days=days, seed=3, crews=4, generator=gen,
                    utility={"outages_per_year": per_year, "duration": dur}, **over)


def test_plant_fails_to_start_when_fewer_than_k_sets_start_on_demand() -> None:
    """Sets that never fail (3, 2 required), each failing to start with probability 0.2 per demand, 1,000
    outages a year for 200 days: the plant's start failures per demand within a 99.9 % binomial interval of
    P(Bin(3, 0.8) < 2) = 0.104; one generator (0.2), 1 of 3 (0.008) and 3 of 3 (0.488) outside."""
    never = {"failure": {"dist": "fixed", "value_h": 1e9}}
    res = run(_outage_doc(_sets(3, 2, **never), 0.2, 200.0, 1000.0, {"dist": "fixed", "value_h": 0.05}))
    m = res.metrics
    demands = m["power.feed_outages"]
    fails = m["power.generator_start_failures"]
    assert demands > 400
    assert m["power.generator_set_start_failures"] >= fails  # every plant failure is made of set failures
    p = stats.binom.cdf(1, 3, 0.8)
    assert p == pytest.approx(0.104)
    lo, hi = stats.binom.ppf([0.0005, 0.9995], int(demands), p)
    assert lo <= fails <= hi, (fails, lo, hi, demands)
    for wrong in (0.2, stats.binom.cdf(0, 3, 0.8), 1 - 0.8 ** 3):
        wlo, whi = stats.binom.ppf([0.0005, 0.9995], int(demands), wrong)
        assert not wlo <= fails <= whi, (wrong, fails)


def test_running_sets_fail_to_run_and_trip_the_plant() -> None:
    """2 of 2 sets, never failing on standby, each running set failing at 0.05 per hour; every outage lasts
    10 h: the plant trips in an outage with probability 1 − e^(−2 · 0.05 · 10) (the failed set is under
    repair for 20 h on average, so no restart), counted within a 99.9 % binomial interval; the trips drop the
    feed (cause power:feed or power:utility after the battery). The sets' failures are silent on standby
    (a test every 5,000 h), but a set that stops under load is seen at once: every run failure is found then."""
    sets = {**_sets(2, 2, failure={"dist": "fixed", "value_h": 1e9}, run_failure_per_h=0.05),
            "latent_test_interval_h": 5000.0}
    res = run(_outage_doc(sets, 0.0, 400.0, 100.0, {"dist": "fixed", "value_h": 10.0}))
    m = res.metrics
    outages = m["power.feed_outages"]
    starts = m["power.generator_starts"]
    assert outages > 60
    p = 1 - math.exp(-2 * 0.05 * 10.0)
    lo, hi = stats.binom.ppf([0.0005, 0.9995], int(starts), p)
    assert lo <= m["power.generator_trips"] <= hi, (m["power.generator_trips"], lo, hi, starts)
    assert m["power.generator_run_failures"] >= m["power.generator_trips"]
    assert m["latent_found_demand.generator_set"] == m["power.generator_run_failures"]
    # each run failure leaves the plant short for its repair (exponential, mean 20 h), not until a later demand
    # or test finds it (the next outage comes 88 h later on average)
    assert m["power.generator_short_hours"] / m["power.generator_run_failures"] < 30.0
    assert m["power.feed_dead_hours"] > 0.0
    # one set's clock, not two: outside
    wlo, whi = stats.binom.ppf([0.0005, 0.9995], int(starts), 1 - math.exp(-0.05 * 10.0))
    assert not wlo <= m["power.generator_trips"] <= whi


def _visit() -> dict[str, Any]:
    return {"maintenance": {"interval_h": 1000.0, "duration_h": 8.0, "offset_h": 100.0, "mode": "bypass"}}


@pytest.mark.parametrize("count,down", [(3, False), (2, True)])
def test_n1_ups_is_maintained_module_by_module_without_bypass(count: int, down: bool) -> None:
    """A UPS visit at 100–108 h and a utility outage injected at 102 h with no generator: with 3 modules of
    which 2 carry the load (N+1) one module is serviced and the UPS stays online, its battery carries the
    5 min outage (10 min ride-through at rated load); with 2 of 2 (N) the visit bypasses the UPS and the
    outage reaches the load at once, for all of its 5 min."""
    mods = {"modules": {"count": count, "required": 2, "failure": {"dist": "fixed", "value_h": 1e9}}}
    doc = scenario("n", days=10.0, ups={**_visit(), **mods}, generator=None,
                   inject=[{"feed": "A", "at_h": 102.0, "duration_h": 5 / 60}])
    res = run(doc)
    m = res.metrics
    assert m["power.maintenance_windows"] == 1
    assert m["power.ups_shortfalls"] == 0  # a module out for service is not a shortfall while k remain
    if down:
        assert m["power.feed_dead_hours"] == pytest.approx(5 / 60)
        assert m["power.down_node_hours"] > 0
    else:
        assert m["power.feed_dead_hours"] == 0.0 and m["power.down_node_hours"] == 0.0


@pytest.mark.parametrize("count,dead", [(2, False), (1, True)])
def test_n1_generator_plant_is_maintained_set_by_set(count: int, dead: bool) -> None:
    """A generator visit at 100–108 h and a 2 h utility outage at 102 h: with 2 sets of which 1 carries the
    load the other set starts and carries the feed; with 1 of 1 the plant is out and the feed is dead from
    the battery's end to the outage's (battery time + dead time = 2 h)."""
    sets = _sets(count, 1, failure={"dist": "fixed", "value_h": 1e9})
    gen = {**sets, **_visit()}
    res = run(scenario("n", days=10.0, generator=gen, inject=[{"feed": "A", "at_h": 102.0, "duration_h": 2.0}]))
    m = res.metrics
    assert m["power.maintenance_windows"] == 1
    if dead:
        assert 0.0 < m["power.feed_dead_hours"] < 2.0
        assert _battery_h(res) + m["power.feed_dead_hours"] == pytest.approx(2.0)  # no generator ever ran
    else:
        assert m["power.feed_dead_hours"] == 0.0 and m["power.generator_short_hours"] == 0.0


def test_silent_set_failure_is_found_by_the_outage_that_calls_on_it() -> None:
    """Sets that fail silently (monthly test) at a fixed 50 h: an outage at 60 h finds both failed (2 of 2
    needed), counts them as found on demand, and the feed is dead from the battery's end to the outage's."""
    sets = _sets(2, 2, failure={"dist": "fixed", "value_h": 50.0})
    gen = {**sets, "latent_test_interval_h": 730.0}
    res = run(scenario("n", days=5.0, generator=gen, inject=[{"feed": "A", "at_h": 60.0, "duration_h": 1.0}]))
    m = res.metrics
    assert m["latent_found_demand.generator_set"] == 2.0
    assert 0.0 < m["power.feed_dead_hours"] < 1.0
    assert _battery_h(res) + m["power.feed_dead_hours"] == pytest.approx(1.0)  # no set ran


def _battery_h(res: Any) -> float:
    fd = res.tables["power_feeds"]
    on = fd[fd["state"].astype(str) == "ups"]
    return float((on["end_h"] - on["start_h"]).sum())


def test_bad_generator_sets_are_one_line_with_their_path(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    import yaml

    from twin import cli

    doc = scenario("n", days=1.0, generator={"modules": {"count": 2, "required": 3}})
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(doc))
    code = cli.main(["run", str(path), "--results", str(tmp_path / "out")])
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert code == 2 and len(err) == 1 and "power.generator.modules.required" in err[0], err


# ---- latent failures and periodic tests of cooling units (issue 43 item 3) ----------------------------

def _liquid_doc(days: float, cdu: dict[str, Any], plant: dict[str, Any] | None = None, loops: int = 1) -> dict[str, Any]:
    never = {"dist": "fixed", "value_h": 1e9}
    return {
        "name": "tested-cdu", "seed": 17, "horizon_days": days,
        "cluster": {"racks": loops, "nodes_per_rack": 2, "node": {"gpus": 8, "parts": {}}},
        "maintenance": {"detection": {"dist": "fixed", "value_h": 0}, "crews": {"crew": {"count": 4}}},
        "cooling": {"type": "liquid", "thermal": False,
                    "liquid": {"capture_fraction": None, "leak": None, "loops": loops,
                               "cdu": {"required": 1, "pumps": {"failure": never}, **cdu}},
                    "plant": plant or {"chillers": {"failure": never}}},
    }


def test_tested_cdu_matches_the_test_interval_formula_with_test_duration() -> None:
    """One CDU per loop (a cooling unit) failing silently (MTBF 1,000 h), tested every 500 h, each test taking
    the working CDU out for 100 h (4 loops, tested one after the other): the loops' hours without flow, over
    6 × 2,000 days, within a 99.9 %
    t-interval of 1 − (1 − e^(−λT))/(λT) with the test duration added; the textbook formula without it and
    the test time alone are outside."""
    from tests.test_power_risk import unavailability_tested

    lam, T, tau, days, reps, loops = 1 / 1000.0, 500.0, 100.0, 2000.0, 6, 4
    cdu = {"count": 1, "failure": {"dist": "exponential", "mean_h": 1000.0}, "latent_test_interval_h": T,
           "test_duration_h": tau, "repair": {"time": {"dist": "fixed", "value_h": 0.001}}}
    u = []
    for r in range(reps):
        res = run(_liquid_doc(days, cdu, loops=loops), r)
        u.append(res.metrics["cooling.loop_no_flow_hours"] / (loops * days * 24))
        assert res.metrics["latent_found_test.cdu"] > 0
    lo, hi = _t_interval(u)
    exact = unavailability_tested(lam, T, tau)
    assert lo <= exact <= hi, (exact, lo, hi)
    for wrong in (1 - (1 - math.exp(-lam * T)) / (lam * T), tau / T):
        assert not lo <= wrong <= hi, (wrong, lo, hi)


@pytest.mark.parametrize("count,short", [(3, False), (2, True)])
def test_chiller_tests_take_each_working_chiller_out_in_turn(count: int, short: bool) -> None:
    """Chillers that never fail, tested every 100 h for 10 h each, one after the other, over 30 days: with
    3 of which 2 are needed a test costs no capacity; with 2 of 2 the plant is short for every test, exactly
    the tests begun × 10 h (the last one may be cut by the horizon)."""
    never = {"dist": "fixed", "value_h": 1e9}
    plant = {"chillers": {"count": count, "required": 2, "failure": never, "latent_test_interval_h": 100.0,
                          "test_duration_h": 10.0}}
    res = run(_liquid_doc(30.0, {"count": 2, "failure": never}, plant))
    ev = res.tables["events"]
    tests = ev[ev["kind"].astype(str) == "test_start"]
    assert set(tests["path"].astype(str)) == {f"cooling.plant.chiller{i}" for i in range(count)}
    H = 30.0 * 24
    expect = sum(1 for k in range(1, 8) for i in range(count) if k * 100.0 + i * 10.0 < H)
    assert len(tests) == expect
    short_h = res.metrics["plant.capacity_short_hours"]
    if short:
        assert short_h == pytest.approx(expect * 10.0)
    else:
        assert short_h == 0.0


def test_bad_cooling_tests_are_one_line_with_their_path(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    import yaml

    from twin import cli

    doc = _liquid_doc(1.0, {"count": 2, "latent_test_interval_h": 10.0, "test_duration_h": 6.0})
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(doc))
    code = cli.main(["run", str(path), "--results", str(tmp_path / "out")])
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert code == 2 and len(err) == 1 and "cooling.liquid.cdu.test_duration_h" in err[0], err


# ---- PDU maintenance and its switching (issue 43 item 3) --------------------------------------------

def _pdu_visit(p: float) -> dict[str, Any]:
    return {"maintenance": {"interval_h": 1000.0, "duration_h": 8.0, "offset_h": 100.0, "mode": "isolate",
                            "switching_error_prob": p, "switching_restore_min": 30.0}}


def _downs(res: Any) -> Any:
    iv = res.tables["node_intervals"]
    return iv[iv["state"] == "down"]


def test_pdu_visit_isolates_its_racks_feed_one_pdu_at_a_time() -> None:
    """Two racks, one PDU each per feed, visited one at a time every 1,000 h from 100 h: with one feed PDU 1
    follows at 600 h, past a 20-day horizon, and the visit drains rack 0's two nodes from 100 h to 108 h +
    reboot_h, a planned interruption; with 2N (four PDUs: A0 at 100 h, A1 at 350 h, the others past the
    horizon) feed B carries them and nothing goes down, two 8 h windows of exposure."""
    res = run(scenario("n", days=20.0, pdu=_pdu_visit(0.0)))
    down = _downs(res)
    assert sorted(down["node"].tolist()) == [0, 1]
    assert set(down["cause"].astype(str)) == {"planned:power_maintenance"}
    assert np.allclose(down["start_h"], 100.0) and np.allclose(down["end_h"], 108.1)
    assert res.metrics["power.maintenance_windows"] == 1
    two = run(scenario("2n", days=20.0, pdu=_pdu_visit(0.0)))
    assert two.metrics["power.down_node_hours"] == 0.0
    assert two.metrics["power.maintenance_windows"] == 2
    assert two.metrics["power.maintenance_exposure_hours"] == pytest.approx(16.0)


def test_pdu_switching_error_drops_the_racks_other_feed() -> None:
    """2N, PDU A0 isolated at 100 h and A1 at 350 h, each with a switching error of probability 1: the same
    racks' PDU on feed B drops for 30 min, so rack 0's nodes are down from 100 h to 100.5 h + reboot_h and
    rack 1's from 350 h, cause power:switching."""
    res = run(scenario("2n", days=20.0, pdu=_pdu_visit(1.0)))
    down = _downs(res).sort_values("node")
    assert down["node"].tolist() == [0, 1, 2, 3]
    assert set(down["cause"].astype(str)) == {"power:switching"}
    assert np.allclose(down["start_h"], [100.0, 100.0, 350.0, 350.0])
    assert np.allclose(down["end_h"], [100.6, 100.6, 350.6, 350.6])
    assert res.metrics["power.switching_errors"] == 2


def test_pdu_bypass_maintenance_is_refused_in_one_line(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    import yaml

    from twin import cli

    doc = scenario("n", days=1.0, pdu={"maintenance": {"mode": "bypass"}})
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(doc))
    code = cli.main(["run", str(path), "--results", str(tmp_path / "out")])
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert code == 2 and len(err) == 1 and "power.pdu.maintenance.mode" in err[0], err
