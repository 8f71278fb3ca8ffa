"""After the lights go out, and the feed you paid for (issue 48): the staged restart after a hall-wide
power loss and cold power-cycle failures, oversubscription of a 2N hall with capping against the breaker's
trip curve, demand-response requests and grid outages from a file, and generator block loading; every
expected time or energy computed here from the scenario's numbers."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from scipy import stats

from tests.test_power import FULL_W, GPUS, NEVER, _bad, run, scenario
from twin.scenario.recovery import Oversubscription

T0, T = 10.0, 3.0
STAGES = {"facility_h": 0.5, "fabric_h": 0.25, "storage_h": 0.75, "node_batches": 4, "batch_h": 0.2}


def _down(res: Any) -> Any:
    iv = res.tables["node_intervals"]
    return iv[iv["state"] == "down"].sort_values("node")


# ---- item 1: the staged restart -------------------------------------------------------------------

@pytest.mark.parametrize("topology,feeds", [("n", ["A"]), ("2n", ["A", "B"])])
def test_hall_wide_loss_costs_each_batch_t_plus_its_stages(topology: str, feeds: list[str]) -> None:
    """No UPS, no generator: a loss of every feed for T hours holds node batch j (4 racks of 2 nodes, one rack a
    batch, in rack order) down exactly T + Σ_{i≤j} dᵢ, d = facility, fabric, storage, then one batch_h per
    batch; reboot_h (0.1) is shorter than the first batch's stages, so it does not show."""
    doc = scenario(topology, racks=4, nodes_per_rack=2, days=1.0, ups=None, generator=None, recovery=STAGES,
                   inject=[{"feed": f, "at_h": T0, "duration_h": T} for f in feeds])
    res = run(doc)
    d = _down(res)
    assert len(d) == 8
    base = STAGES["facility_h"] + STAGES["fabric_h"] + STAGES["storage_h"]
    batch = np.arange(8) // 2 + 1  # 4 racks of 2 nodes, one rack per batch
    np.testing.assert_allclose(d["start_h"], T0)
    np.testing.assert_allclose(d["end_h"] - d["start_h"], T + base + batch * STAGES["batch_h"], rtol=0, atol=1e-12)
    m = res.metrics
    assert m["power.hall_losses"] == 1
    assert m["power.restart_node_hours"] == pytest.approx(float((base + batch * STAGES["batch_h"]).sum()))


def test_default_restart_brings_the_last_batch_back_two_hours_after_power() -> None:
    """The defaults (facility 0.25 h, fabric 0.25 h, storage 0.5 h, 4 batches of 0.25 h) on 8 racks: two racks a
    batch, back 1.25, 1.5, 1.75 and 2 h after power returns; the scenario schema's default is this section."""
    from twin.scenario.power import Power

    assert Power().recovery is not None
    doc = scenario("n", racks=8, nodes_per_rack=1, days=1.0, ups=None, generator=None, recovery={},
                   inject=[{"feed": "A", "at_h": T0, "duration_h": T}])
    d = _down(run(doc))
    np.testing.assert_allclose(d["end_h"] - (T0 + T), np.repeat([1.25, 1.5, 1.75, 2.0], 2), rtol=0, atol=1e-12)


def test_partial_loss_keeps_reboot_h_and_recovery_null_restores_it() -> None:
    """One of two feeds lost (2N) is not a hall-wide loss: no restart, nothing down; and with recovery null a
    hall-wide loss costs T + reboot_h as before issue 48."""
    doc = scenario("2n", days=1.0, ups=None, generator=None, recovery=STAGES,
                   inject=[{"feed": "A", "at_h": T0, "duration_h": T}])
    res = run(doc)
    assert res.metrics["power.hall_losses"] == 0 and len(_down(res)) == 0
    old = run(scenario("n", days=1.0, ups=None, generator=None, recovery=None,
                       inject=[{"feed": "A", "at_h": T0, "duration_h": T}]))
    np.testing.assert_allclose(_down(old)["end_h"], T0 + T + 0.1)
    assert "power.hall_losses" not in old.metrics


def test_jobs_restart_after_their_nodes_return() -> None:
    """A job on every node is interrupted by the loss and runs again from the last batch's return."""
    doc = scenario("n", racks=2, nodes_per_rack=2, days=1.0, ups=None, generator=None, recovery=STAGES,
                   job_gpus=4 * GPUS, inject=[{"feed": "A", "at_h": T0, "duration_h": T}])
    res = run(doc)
    last = T0 + T + STAGES["facility_h"] + STAGES["fabric_h"] + STAGES["storage_h"] + 2 * STAGES["batch_h"]
    m = res.metrics
    assert m["interruptions"] >= 1
    site = res.tables["power_site"]
    # no IT power between the loss and the last batch back (the job needs every node), full power after
    during = site[(site.time_h >= T0) & (site.time_h < last)]
    assert (during.it_power_w <= 2 * FULL_W + 1e-6).all()  # at most the first batch idling
    after = site[site.time_h >= last]
    assert after.it_power_w.iloc[-1] == pytest.approx(4 * FULL_W)


def test_power_cycle_failures_are_p_times_units_in_expectation() -> None:
    """A part of one unit per node (a node-down board) failing with p = 0.2 at each cold power-up: over 5 hall
    losses of 100 nodes the failures are Binomial(500, 0.2), inside its 99.9 % interval, and each failed board
    holds its node down for its repair after the restart."""
    p, losses, n = 0.2, 5, 100
    doc = scenario("n", racks=10, nodes_per_rack=10, days=10.0, ups=None, generator=None, crews=200,
                   recovery={**STAGES, "power_cycle_failure_prob": {"board": p}},
                   inject=[{"feed": "A", "at_h": 20.0 + 40.0 * i, "duration_h": 1.0} for i in range(losses)])
    doc["cluster"]["node"]["parts"]["board"] = {
        "count": 1, "effect": "node_down", "failure": NEVER,
        "repair": {"hot_swap": True, "burn_in_h": 0, "time": {"dist": "fixed", "value_h": 5.0}}}
    res = run(doc)
    k = res.metrics["power.power_cycle_failures"]
    lo, hi = stats.binom.ppf(0.0005, losses * n, p), stats.binom.ppf(0.9995, losses * n, p)
    assert lo <= k <= hi, (k, lo, hi)
    assert res.metrics["power.hall_losses"] == losses
    ev = res.tables["events"]
    fails = ev[(ev["kind"].astype(str) == "fail") & ev["path"].astype(str).str.endswith("board0")]
    assert len(fails) == k
    # the same seed draws the same failures; another replication others
    assert run(doc).metrics["power.power_cycle_failures"] == k


# ---- item 2: oversubscription ---------------------------------------------------------------------

CAP_KW = 30.0  # one feed carries 30 kW; the hall's full load is 4 × 10.2 = 40.8 kW (overload 1.36)


def _oversub(latency_s: float, curve: list[dict[str, float]] | None = None, lost: list[str] | None = None,
             days: float = 1.0) -> Any:
    over: dict[str, Any] = {"feed_capacity_kw": CAP_KW, "capping_latency_s": latency_s}
    if curve is not None:
        over["trip_curve"] = curve
    doc = scenario("2n", days=days, ups=None, generator=None, recovery=STAGES, job_gpus=4 * GPUS,
                   oversubscription=over,
                   inject=[{"feed": f, "at_h": T0, "duration_h": T} for f in (lost or [])])
    return run(doc)


def _level_at(res: Any, t: float) -> float:
    site = res.tables["power_site"]
    return float(site[site.time_h <= t + 1e-12].it_power_w.iloc[-1])


def test_oversubscribed_both_feeds_up_no_capping() -> None:
    res = _oversub(5.0)
    m = res.metrics
    assert m["power.oversub_capped_hours"] == 0.0 and m["power.oversub_feed_losses"] == 0
    assert m["power.peak_w"] == pytest.approx(4 * FULL_W) and 4 * FULL_W > CAP_KW * 1000
    assert m["power.it_energy_kwh"] == pytest.approx(4 * FULL_W * 24 / 1000, rel=1e-9)


def test_oversubscribed_feed_loss_caps_to_the_remaining_capacity_within_the_latency() -> None:
    lat_s = 5.0
    res = _oversub(lat_s, lost=["A"])
    m = res.metrics
    assert m["power.oversub_feed_losses"] == 1 and m["power.oversub_trips"] == 0
    assert m["power.oversub_peak_overload"] == pytest.approx(4 * FULL_W / (CAP_KW * 1000))
    assert _level_at(res, T0 + 0.5 * lat_s / 3600) == pytest.approx(4 * FULL_W)  # uncapped within the latency
    assert _level_at(res, T0 + lat_s / 3600) == pytest.approx(CAP_KW * 1000, rel=1e-9)  # capped at the latency
    assert _level_at(res, T0 + T - 1e-6) == pytest.approx(CAP_KW * 1000, rel=1e-9)
    assert _level_at(res, T0 + T) == pytest.approx(4 * FULL_W)  # both feeds back: the cap lifted
    assert m["power.oversub_capped_hours"] == pytest.approx(T - lat_s / 3600, rel=1e-9)
    assert len(_down(res)) == 0 and m["power.hall_losses"] == 0


def test_capping_slower_than_the_trip_time_trips_the_surviving_feed() -> None:
    """Latency 60 s against a curve that trips at 1.36 × in 30 s: the surviving feed B trips 30 s after A is lost,
    the hall is lost (cause power:overload) and comes back in stages after trip_restore_min (30 min)."""
    curve = [{"overload": 1.1, "trip_s": 30.0}]
    res = _oversub(60.0, curve, lost=["A"])
    m = res.metrics
    assert m["power.oversub_trips"] == 1 and m["power.hall_losses"] == 1
    d = _down(res)
    assert len(d) == 4 and set(d["cause"].astype(str)) == {"power:overload"}
    np.testing.assert_allclose(d["start_h"], T0 + 30 / 3600)
    base = STAGES["facility_h"] + STAGES["fabric_h"] + STAGES["storage_h"]
    back = T0 + 30 / 3600 + 0.5 + base + np.array([1, 1, 2, 2]) * STAGES["batch_h"]  # 2 racks → batches 1, 2
    np.testing.assert_allclose(d["end_h"], back, rtol=0, atol=1e-9)
    # the same curve with a latency under the trip time does not trip
    assert _oversub(20.0, curve, lost=["A"]).metrics["power.oversub_trips"] == 0


def test_trip_curve_interpolates_log_log() -> None:
    o = Oversubscription(feed_capacity_kw=1.0, trip_curve=[{"overload": 1.2, "trip_s": 1000.0},
                                                           {"overload": 2.4, "trip_s": 10.0}])
    assert o.trip_s(1.19) == float("inf")
    assert o.trip_s(1.2) == pytest.approx(1000.0) and o.trip_s(2.4) == pytest.approx(10.0)
    assert o.trip_s(1.2 * 2 ** 0.5) == pytest.approx(100.0)  # half-way in log overload: half-way in log time
    assert o.trip_s(9.0) == 10.0


# ---- item 3: grid events --------------------------------------------------------------------------

def _grid_doc(tmp_path: Path, rows: str, **grid: Any) -> tuple[dict[str, Any], Path]:
    csv = tmp_path / "grid.csv"
    csv.write_text("kind,start_h,duration_h,kw\n" + rows)
    doc = scenario("n", days=1.0, job_gpus=4 * GPUS, grid={"file": csv.name, **grid})
    return doc, tmp_path


def _run_file(doc: dict[str, Any], base: Path) -> Any:
    from twin.scenario.loader import load_dict
    from twin.sim import run_replication

    return run_replication(load_dict(doc, base_dir=base).scenario, 0)


def test_demand_response_lowers_it_energy_by_x_times_t(tmp_path: Path) -> None:
    X, D = 12.0, 5.0
    doc, base = _grid_doc(tmp_path, f"demand_response,{T0},{D},{X}\n", dr_price_per_kwh=0.5)
    res = _run_file(doc, base)
    plain = copy.deepcopy(doc)
    del plain["power"]["grid"]
    ref = run(plain)
    m = res.metrics
    assert ref.metrics["power.it_energy_kwh"] - m["power.it_energy_kwh"] == pytest.approx(X * D, rel=1e-9)
    assert m["power.grid_dr_requests"] == 1 and m["power.grid_dr_hours"] == pytest.approx(D)
    assert m["power.grid_dr_earnings"] == pytest.approx(0.5 * X * D) and m["power.grid_dr_short_hours"] == 0
    assert _level_at(res, T0 + 1.0) == pytest.approx(4 * FULL_W - X * 1000, rel=1e-9)
    # what it cost: the job ran slower while capped
    assert m["max_job.kept_h"] < ref.metrics["max_job.kept_h"]


def test_demand_response_payment_is_a_credit_on_the_energy_bill(tmp_path: Path) -> None:
    X, D, price = 12.0, 5.0, 0.5
    doc, base = _grid_doc(tmp_path, f"demand_response,{T0},{D},{X}\n", dr_price_per_kwh=price)
    doc["costs"] = {}
    res = _run_file(doc, base)
    costs = res.tables["costs"]
    line = costs[costs["item"].astype(str).str.startswith("demand-response")]
    assert len(line) == 1 and float(line["amount"].iloc[0]) == pytest.approx(-price * X * D)
    energy = costs[costs["category"] == "energy"]["amount"].sum()
    assert res.metrics["cost.energy"] == pytest.approx(float(energy))


def test_grid_outage_from_a_file_takes_every_feed_off_utility(tmp_path: Path) -> None:
    doc, base = _grid_doc(tmp_path, f"outage,{T0},2,\n")
    res = _run_file(doc, base)
    m = res.metrics
    assert m["power.grid_outages"] == 1 and m["power.utility_outages"] == 1 and m["power.generator_starts"] == 1


def test_demand_response_at_a_rate_is_poisson() -> None:
    doc = scenario("n", days=365.0, grid={"demand_response": {"per_year": 40, "reduce_kw": 5,
                                                              "duration": {"dist": "fixed", "value_h": 2}}})
    m = run(doc).metrics
    k = m["power.grid_dr_requests"]
    assert stats.poisson.ppf(0.0005, 40) <= k <= stats.poisson.ppf(0.9995, 40)
    # requests that overlap hold one limit (their union of hours); the payment counts each request
    assert 0.8 * 2 * k <= m["power.grid_dr_hours"] <= 2 * k
    assert m["power.grid_dr_shed_kwh"] <= 5 * 2 * k and m["power.grid_dr_earnings"] == 0.0


# ---- item 4: generator block loading --------------------------------------------------------------

@pytest.mark.parametrize("steps,trips", [(1, True), (2, False)])
def test_block_load_above_the_limit_trips_the_generator_staged_does_not(steps: int, trips: bool) -> None:
    """One feed at full load (40.8 kW) on a generator rated at it, limit 0.5 of the rating: one step of 100 %
    trips it, and the feed runs on its 10-min UPS then is dead until the operator's restart (15 min after the
    trip); two steps of 50 % do not."""
    doc = scenario("n", days=1.0, job_gpus=4 * GPUS, recovery=None,
                   generator={"block_load": {"rating_kw": 4 * FULL_W / 1000, "max_step_frac": 0.5, "steps": steps}},
                   inject=[{"feed": "A", "at_h": T0, "duration_h": T}])
    res = run(doc)
    m = res.metrics
    assert m["power.generator_block_trips"] == (1 if trips else 0)
    d = _down(res)
    if not trips:
        assert len(d) == 0
        return
    start = T0 + 10 / 3600  # the generator's start delay: it trips on the transfer
    np.testing.assert_allclose(d["start_h"], T0 + 10 / 60)  # the UPS carries the full load for 10 min
    np.testing.assert_allclose(d["end_h"], start + 15 / 60 + 0.1)  # restarted by hand, then reboot_h
    assert set(d["cause"].astype(str)) == {"power:transfer"}


# ---- bad input -----------------------------------------------------------------------------------

@pytest.mark.parametrize("mutate,field", [
    (lambda d: d["power"].update(recovery={"node_batches": 0}), "power.recovery.node_batches"),
    (lambda d: d["power"].update(recovery={"batch_h": -1}), "power.recovery.batch_h"),
    (lambda d: d["power"].update(recovery={"power_cycle_failure_prob": {"gpu": 0.1}}),
     "power.recovery.power_cycle_failure_prob.gpu"),
    (lambda d: d["power"].update(recovery={"power_cycle_failure_prob": {"psu": 1.5}}),
     "power.recovery.power_cycle_failure_prob.psu"),
    (lambda d: d["power"].update(oversubscription={"feed_capacity_kw": 30, "trip_curve": [
        {"overload": 1.5, "trip_s": 10}, {"overload": 1.2, "trip_s": 5}]}), "power.oversubscription.trip_curve.1"),
    (lambda d: d["power"].update(oversubscription={"feed_capacity_kw": 30, "trip_curve": [
        {"overload": 0.9, "trip_s": 10}]}), "power.oversubscription.trip_curve.0.overload"),
    (lambda d: d["power"].update(oversubscription={"capping_latency_s": 5}), "power.oversubscription.feed_capacity_kw"),
    (lambda d: d["power"].update(topology="n", psu_feeds="round_robin", oversubscription={"feed_capacity_kw": 30}),
     "power.oversubscription"),
    (lambda d: d["power"]["generator"].update(block_load={"max_step_frac": 0}), "power.generator.block_load.max_step_frac"),
    (lambda d: d["power"].update(grid={"demand_response": {"per_year": 2}}), "power.grid.demand_response.reduce_kw"),
    (lambda d: d["power"].update(grid={"dr_price_per_kwh": -1}), "power.grid.dr_price_per_kwh"),
])
def test_bad_recovery_and_grid_input(mutate: Any, field: str, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    doc = copy.deepcopy(scenario("split"))
    mutate(doc)
    line = _bad(tmp_path, doc, capsys)
    assert field in line, line


@pytest.mark.parametrize("rows,where", [
    ("outage,10,2\n", "grid.csv:2"),
    ("flood,10,2,\n", "grid.csv:2: kind"),
    ("outage,10,2,\ndemand_response,x,1,5\n", "grid.csv:3: start_h"),
    ("demand_response,10,0,5\n", "grid.csv:2: duration_h"),
    ("demand_response,10,1,\n", "grid.csv:2: kw"),
    ("outage,10,1,5\n", "grid.csv:2: kw"),
])
def test_bad_grid_file_names_file_and_line(rows: str, where: str, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "grid.csv").write_text("kind,start_h,duration_h,kw\n" + rows)
    doc = scenario("n", grid={"file": "grid.csv"})
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    from twin import cli

    rc = cli.main(["run", str(path), "--results", str(tmp_path / "r")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1, err
    assert where in err[0], err[0]


def test_oversubscription_settles_with_per_gpu_thermal_caps() -> None:
    """The bundled 2N hall (air-cooled, GPUs that differ: per-GPU thermal caps) on 900 kW feeds, feed A lost (an
    8 h outage, its generator fails to start, its UPS runs empty): the cap water-fills over GPUs against the thermal units' caps (against their node cap it moved the cap
    that moved it without end: a RecursionError) and holds site IT power at the feed's capacity."""
    from twin.scenario.loader import load_scenario
    from twin.sim import run_replication

    root = Path(__file__).resolve().parents[1]
    sc = load_scenario(root / "scenarios" / "power-2n.yaml", [
        "horizon_days=2", "power.oversubscription={feed_capacity_kw: 900}", "power.ups.capacity_kw=900",
        "power.generator.start_failure_prob=1", "power.inject=[{feed: A, at_h: 20, duration_h: 8}]"]).scenario
    res = run_replication(sc, 0)
    m = res.metrics
    assert m["power.oversub_feed_losses"] == 1 and m["power.oversub_trips"] == 0
    feeds = res.tables["power_feeds"]
    dead = feeds[(feeds.feed == "A") & (feeds.state == "dead")]
    assert len(dead) == 1  # from the UPS running empty to utility back
    t0, t1 = float(dead.start_h.iloc[0]), float(dead.end_h.iloc[0])
    assert m["power.oversub_capped_hours"] == pytest.approx(t1 - t0 - 5 / 3600, rel=1e-9)
    site = res.tables["power_site"]
    during = site[(site.time_h >= t0 + 5 / 3600) & (site.time_h < t1)]
    assert len(during) and (during.it_power_w <= 900e3 * (1 + 1e-9)).all()


def test_missing_grid_file_is_one_line_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = scenario("n", grid={"file": "nowhere.csv"})
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    from twin import cli

    rc = cli.main(["run", str(path), "--results", str(tmp_path / "r")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1, err
    assert "nowhere.csv" in err[0] and "power.grid.file" in err[0], err[0]


def test_demand_response_during_an_oversubscribed_feed_loss_holds_the_tighter_limit(tmp_path: Path) -> None:
    """Two site limits at once settle: feed A lost at T0 caps the hall at 30 kW; a 5 kW request an hour later
    holds it at 30 − 5 = 25 kW (its start level less the request) for its hour, then the feed cap again. A request
    below the floor (every GPU at min_w: 4 × 4.6 kW + 32 × 200 W = 24.8 kW) is held there and counted short."""
    csv = tmp_path / "grid.csv"
    csv.write_text(f"kind,start_h,duration_h,kw\ndemand_response,{T0 + 1},1,5\ndemand_response,{T0 + 2.25},0.5,12\n")
    doc = scenario("2n", days=1.0, ups=None, generator=None, recovery=STAGES, job_gpus=4 * GPUS,
                   oversubscription={"feed_capacity_kw": CAP_KW}, grid={"file": csv.name},
                   inject=[{"feed": "A", "at_h": T0, "duration_h": T}])
    res = _run_file(doc, tmp_path)
    assert _level_at(res, T0 + 0.5) == pytest.approx(CAP_KW * 1000, rel=1e-9)
    assert _level_at(res, T0 + 1.5) == pytest.approx((CAP_KW - 5) * 1000, rel=1e-9)
    assert _level_at(res, T0 + 2.1) == pytest.approx(CAP_KW * 1000, rel=1e-9)
    assert _level_at(res, T0 + 2.5) == pytest.approx(4 * 4600.0 + 32 * 200.0, rel=1e-9)
    assert res.metrics["power.grid_dr_short_hours"] == pytest.approx(0.5)
    assert _level_at(res, T0 + T + 0.5) == pytest.approx(4 * FULL_W)
