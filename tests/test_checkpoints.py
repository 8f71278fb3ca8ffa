"""Checkpoint retention, SDC rollbacks and the checkpoint optimum (issue 39, items 1-3).

The deterministic cases run one job on one defective node (plus a hot spare) with fixed corruption
times, a fixed detection latency and sync checkpoints of fixed write time, so that the checkpoint
schedule, the kept checkpoints and the progress lost are computed here by hand.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from twin.model.checkpoints import History, Lineage
from twin.physics import checkpoints as pcf
from twin.scenario import load_dict
from twin.scenario.advice import advise, checkpoint_optimum, job_interruption_rates_per_h
from twin.scenario.loader import load_scenario
from twin.sim import run_replication

PRETRAIN = "scenarios/pretrain-16k.yaml"
I_H, W_H = 0.5, 0.05  # checkpoint interval (progress) and write time, hours
RESTART_H = 0.05 + 0.1 + 0.05 + 0.1  # detection + reschedule + read + warm-up


def sdc_doc(gap_h: float, latency_h: float, horizon_h: float, keep_last: int, every_h: float | None,
            parts: dict[str, Any] | None = None) -> dict[str, Any]:
    """One job on node 0 (defective, corrupting every ``gap_h`` hours) and a hot spare."""
    return {
        "name": "retention", "seed": 1, "horizon_days": horizon_h / 24.0,
        "cluster": {"racks": 1, "nodes_per_rack": 2, "node": {"gpus": 8, "parts": parts or {}}},
        "workload": {"scheduler": {"policy": "fifo", "hot_spares": 1},
                     "restart": {"detection_h": 0.05, "reschedule_h": 0.1, "warmup_h": 0.1, "read_h": 0.05},
                     "jobs": [{"name": "job", "gpus": 8, "work_h": 10 * horizon_h,
                               "checkpoint": {"interval_h": I_H, "write_h": W_H, "mode": "sync",
                                              "retention": {"keep_last": keep_last,
                                                            "persistent_every_h": every_h}}}]},
        "health": {"sdc": {"defective_share": 1.0, "corruption": {"dist": "fixed", "value_h": gap_h},
                           "detection": {"dist": "fixed", "value_h": latency_h}, "test_h": 0.5,
                           "test_finds": 0.0}},
    }


def run(doc: dict[str, Any]) -> Any:
    return run_replication(load_dict(doc, source="test").scenario, 0)


def schedule(until_h: float, start_h: float = 0.0, progress0: float = 0.0) -> list[tuple[float, float, float]]:
    """Checkpoints of a job running at full speed from ``start_h`` with progress ``progress0``:
    (capture h, completion h, progress saved), the j-th captured after j intervals of progress."""
    out, j = [], 1
    while True:
        cap = start_h + j * I_H + (j - 1) * W_H
        if cap + W_H > until_h:
            return out
        out.append((cap, cap + W_H, progress0 + j * I_H))
        j += 1


def progress_at(t_h: float, start_h: float = 0.0, progress0: float = 0.0) -> float:
    """Progress at ``t_h`` of the same job (sync pauses of ``W_H`` after every ``I_H``)."""
    d = t_h - start_h
    n = math.floor(d / (I_H + W_H))
    return progress0 + n * I_H + min(d - n * (I_H + W_H), I_H)


def kept_by_hand(done: list[tuple[float, float, float]], keep_last: int, every_h: float | None) -> list[tuple]:
    """The retention rule written out: the last ``keep_last`` completed, plus the first to leave them and
    then any leaving them captured ``every_h`` after the last one kept."""
    rolling: list[tuple] = []
    kept: list[tuple] = []
    for c in done:
        rolling.append(c)
        if len(rolling) > keep_last:
            old = rolling.pop(0)
            if every_h is not None and (not kept or old[0] >= kept[-1][0] + every_h):
                kept.append(old)
    return kept + rolling


# ---- item 1: retention -----------------------------------------------------------------------------

@pytest.mark.parametrize("keep_last, every_h", [(3, 2.0), (20, 2.0), (3, None)])
def test_rollback_returns_to_the_newest_kept_checkpoint_before_the_corruption(keep_last: int,
                                                                             every_h: float | None) -> None:
    """A corruption at 7.3 h detected 6 h later (about 11 checkpoints later): the job rolls back to the
    newest checkpoint it kept (rolling set or persistent) captured before 7.3 h, or to the start. With
    today's 8 kept checkpoints and no persistent ones the loss was the whole run in each case."""
    c, L = 7.3, 6.0
    res = run(sdc_doc(c, L, c + L + 0.2, keep_last, every_h))
    t = c + L
    done = [x for x in schedule(t) if x[1] <= t]
    kept = kept_by_hand(done, keep_last, every_h)
    before = [x for x in kept if x[0] < c]
    target = before[-1][2] if before else 0.0
    want = progress_at(t) - target
    jobs = res.tables["jobs"]
    rows = jobs[(jobs.record == "interruption") & (jobs.cause == "sdc")]
    assert len(rows) == 1
    assert float(rows.lost_h.iloc[0]) == pytest.approx(want, abs=1e-9)
    assert res.metrics["sdc.rollbacks"] == 1.0
    if keep_last == 20:  # the rolling set reaches back past the corruption: the checkpoint just before it
        assert target == progress_at(c) // I_H * I_H
    elif every_h is not None:  # a persistent checkpoint at most 2 h (+ an interval) before the corruption
        assert progress_at(c) - every_h - I_H <= target < progress_at(c)
    else:  # nothing kept before the corruption: back to the start (as today with any retention)
        assert want == pytest.approx(progress_at(t))


def test_history_keeps_the_rolling_set_and_persistent_checkpoints() -> None:
    h = History(3, 1.0)
    for k in range(10):
        h.add(0.375 * k, float(k))  # captures every 0.375 h
    # rolling: the last 3 (k 7, 8, 9); left it: k 0..6 at 0, 0.375, ..., 2.25 h: kept 0, 1.125 (k 3), 2.25 (k 6)
    assert list(h.rolling) == [(2.625, 7.0), (3.0, 8.0), (3.375, 9.0)]
    assert h.kept == [(0.0, 0.0), (1.125, 3.0), (2.25, 6.0)]
    assert h.drop_from(2.7) == (2.625, 7.0)
    assert h.drop_from(2.0) == (1.125, 3.0) and not h.rolling
    assert h.drop_from(0.0) is None and len(h) == 0


def test_lineage_forgets_the_spans_a_restart_discarded() -> None:
    lin = Lineage()
    assert lin.holds(3.0)
    lin.restore(2.0, 5.0)  # at 5 h back to a checkpoint captured at 2 h: (2, 5) is gone
    assert lin.holds(1.0) and lin.holds(2.0) and not lin.holds(3.0) and lin.holds(6.0)
    lin.restore(5.5, 7.0)
    assert lin.holds(1.0) and not lin.holds(3.0) and lin.holds(5.2) and not lin.holds(6.0) and lin.holds(7.5)
    lin.restore(None, 8.0)
    assert not lin.holds(1.0) and not lin.holds(7.5) and lin.holds(8.0)


# ---- item 2: a corruption whose state is gone --------------------------------------------------------

def test_detection_after_an_earlier_rollback_costs_nothing() -> None:
    """Corruptions at 3 h and 6 h, each detected 5 h later. The rollback at 8 h returns to the checkpoint
    captured at 2.75 h (before the first corruption): the state computed at 6 h is gone with it, so the
    detection at 11 h costs nothing (today: a second rollback discarding the clean progress since 8 h)."""
    gap, L = 3.0, 5.0
    res = run(sdc_doc(gap, L, 11.5, 30, 1.0))
    jobs = res.tables["jobs"]
    rows = jobs[(jobs.record == "interruption") & (jobs.cause == "sdc")]
    done = [x for x in schedule(8.0) if x[1] <= 8.0]
    target = [x for x in done if x[0] < 3.0][-1][2]
    assert target == 2.5  # captured at 2.75 h
    first = progress_at(8.0) - target
    assert len(rows) == 1 and float(rows.lost_h.iloc[0]) == pytest.approx(first, abs=1e-9)
    assert res.metrics["sdc.rollbacks"] == 1.0 and res.metrics["sdc.discarded"] == 1.0
    job = jobs[jobs.record == "job"].iloc[0]
    assert float(job.lost_h) == pytest.approx(first, abs=1e-9)
    # after the restart at 8 h (0.3 h) the job ran on clean to 11.5 h
    assert float(job.kept_h) == pytest.approx(progress_at(11.5, 8.0 + RESTART_H, target), abs=1e-9)


def test_detection_after_a_failure_restart_costs_nothing() -> None:
    """A corruption at 5 h, detected at 6 h; a transient fault at 5.3 h restarts the job from its newest
    checkpoint, captured at 4.9 h, before the corruption: the restart discarded the corrupt state, so the
    detection costs nothing (today: a rollback losing the progress made since the restart)."""
    gap, L, fault_h = 5.0, 1.0, 5.3
    part = {"xid": {"effect": "transient", "failure": {"dist": "fixed", "value_h": fault_h}}}
    res = run(sdc_doc(gap, L, 7.0, 10, 1.0, parts=part))
    jobs = res.tables["jobs"]
    ints = jobs[jobs.record == "interruption"]
    assert list(ints.cause.astype(str)) == ["xid"]
    newest = [x for x in schedule(fault_h) if x[1] <= fault_h][-1]
    assert newest[0] == pytest.approx(4.9)  # captured before the corruption
    assert float(ints.lost_h.iloc[0]) == pytest.approx(progress_at(fault_h) - newest[2], abs=1e-9)
    assert res.metrics["sdc.discarded"] == 1.0 and res.metrics["sdc.rollbacks"] == 0.0


# ---- item 1: the optimum and the advice --------------------------------------------------------------

OPT_ARGS = dict(pause_h=5.0 / 3600, restart_h=0.25, crash_rate_per_h=0.32, sdc_rate_per_h=0.0045,
                latency_h=[1.0], keep_last=10, persistent_every_h=1.0)


@pytest.mark.parametrize("over", [{}, {"persistent_every_h": None}, {"latency_h": [0.3, 1.0, 2.5]},
                                  {"keep_last": 3, "sdc_rate_per_h": 0.05}])
def test_optimum_matches_a_brute_force_minimisation(over: dict[str, Any]) -> None:
    a = {**OPT_ARGS, **over}
    tau = pcf.optimal_interval_h(**a)
    lo, hi = pcf.search_bounds_h(a["pause_h"], a["crash_rate_per_h"], a["sdc_rate_per_h"], a["latency_h"])
    grid = np.geomspace(lo, hi, 100_000)
    rest = {k: v for k, v in a.items()}
    costs = np.array([pcf.wall_per_work(t, **rest) for t in grid])
    best = float(costs.min())
    assert pcf.wall_per_work(tau, **rest) <= best * (1 + 1e-9)


def test_optimum_without_sdc_is_daly() -> None:
    from twin.physics import closed_forms as cf

    a = {**OPT_ARGS, "sdc_rate_per_h": 0.0}
    assert pcf.optimal_interval_h(**a) == float(cf.daly_interval_h(a["pause_h"], 1 / a["crash_rate_per_h"]))


def test_sdc_loss_by_hand() -> None:
    """L = 1 h, checkpoints every 0.3 h: 3 or 4 fall in the latency; K = 4: the one before is kept when
    3 fall (probability 2/3: b < 0.2 h), else a persistent one (every 1 h: spacing 4 × 0.3 = 1.2 h)."""
    got = pcf.sdc_rollback_loss_h(0.3, 1.0, 4, 1.0)
    f = 1.0 / 0.3 - 3
    assert got == pytest.approx(1.0 + (1 - f) ** 2 * 0.3 / 2 + f * 1.2 / 2)
    assert pcf.sdc_rollback_loss_h(0.3, 1.0, 6, 1.0) == pytest.approx(1.15)
    assert pcf.sdc_rollback_loss_h(0.3, 1.0, 3, 1.0) == pytest.approx(1.6)
    assert pcf.sdc_rollback_loss_h(0.3, 1.0, 3, None) == math.inf


def _pretrain_small(interval_h: float) -> dict[str, Any]:
    """A pretrain-16k-like job, small and fast: 64 nodes, crashes every ~3 h and SDC ~20 % of the
    interruptions with pretrain-16k's 1 h detection latency, its 5 s checkpoint pause and restart."""
    return {
        "name": "small-pretrain", "seed": 7, "horizon_days": 60,
        "cluster": {"racks": 17, "nodes_per_rack": 4, "node": {"gpus": 8, "parts": {
            "gpu": {"effect": "node_down", "count": 1, "failure": {"mtbf_h": 64 * 3.2},
                    "repair": {"time": {"dist": "fixed", "value_h": 2.0}}}}}},
        "maintenance": {"crews": {"t": {"count": 8, "shift": "24x7"}}},
        "workload": {"scheduler": {"policy": "fifo", "hot_spares": 4},
                     "restart": {"detection_h": 0.05, "reschedule_h": 0.1, "warmup_h": 0.1, "read_h": 0.0014},
                     "jobs": [{"name": "pretrain", "gpus": 512, "work_h": 5000,
                               "checkpoint": {"interval_h": interval_h, "write_h": 5.0 / 3600, "mode": "sync"}}]},
        "health": {"sdc": {"defective_share": 0.25, "corruption": {"dist": "exponential", "mean_h": 200.0},
                           "detection": {"dist": "fixed", "value_h": 1.0}, "test_h": 24, "test_finds": 0.5}},
    }


def test_simulated_ettr_at_the_new_advice_is_not_worse_than_at_daly() -> None:
    """On a small pretrain-16k-like job the advised interval (the optimum with the SDC latency and the
    retention) simulates an ETTR at least as good as Daly's interval for the same rates, over the same
    seeds (common random numbers)."""
    sc = load_dict(_pretrain_small(0.5), source="test").scenario
    job = sc.workload.jobs[0]

    rows = job_interruption_rates_per_h(sc, 64)
    sdc = sum(r for _, e, r in rows if e == "rollback")
    crash = sum(r for _, e, r in rows) - sdc
    R = 0.05 + 0.1 + 0.0014 + 0.1
    opt = checkpoint_optimum(job.checkpoint, 5.0 / 3600, R, crash, sdc, sc.health.sdc.detection)
    daly = opt.daly_h()
    assert opt.interval_h > daly  # the rolling set must span the latency: longer than Daly's

    def ettr(tau: float) -> float:
        out = []
        for rep in range(3):
            r = run_replication(load_dict(_pretrain_small(tau), source="test").scenario, rep)
            jobs = r.tables["jobs"]
            out.append(float(jobs[jobs.record == "job"].ettr.iloc[0]))
        return float(np.mean(out))

    assert ettr(opt.interval_h) >= ettr(daly) - 1e-9


def test_retention_shorter_than_the_latency_is_advised() -> None:
    """keep_last × the interval below the SDC detection latency: an advisory on keep_last; a rolling
    set that spans it: none."""
    short = load_scenario(PRETRAIN, ["workload.jobs.0.checkpoint.interval_h=0.09"]).scenario
    (a,) = [x for x in advise(short) if x.field == "workload.jobs.0.checkpoint.retention.keep_last"]
    assert "less than the 1 h SDC detection latency" in a.text and "keep_last 12" in a.text, a.text
    none = load_scenario(PRETRAIN, ["workload.jobs.0.checkpoint.interval_h=0.09",
                                    "workload.jobs.0.checkpoint.retention.persistent_every_h=null"]).scenario
    (b,) = [x for x in advise(none) if x.field.endswith("retention.keep_last")]
    assert "to the start of the job" in b.text
    ok = load_scenario(PRETRAIN, ["workload.jobs.0.checkpoint.interval_h=0.12"]).scenario
    assert not [x for x in advise(ok) if x.field.endswith("retention.keep_last")]
    # the synthetic jobs' shared checkpoint spec (baseline.yaml: every 2 h, async) is checked too
    base = "scenarios/baseline.yaml"
    assert not [x for x in advise(load_scenario(base).scenario) if x.field.endswith("retention.keep_last")]
    syn = load_scenario(base, ["workload.synthetic.checkpoint.interval_h=0.05"]).scenario
    (c,) = [x for x in advise(syn) if x.field == "workload.synthetic.checkpoint.retention.keep_last"]
    assert c.text.startswith("every synthetic job keeps its last 10 checkpoints"), c.text


# ---- item 3: fail-slow is not the power cap ------------------------------------------------------------

def test_fail_slow_is_its_own_mechanism() -> None:
    """A degraded part (fail-slow) and no power section: the slowdown is reported as fail_slow, none of
    it as the power cap, and goodput with the buckets still sums to 1."""
    doc = {
        "name": "failslow", "seed": 3, "horizon_days": 10,
        "cluster": {"racks": 1, "nodes_per_rack": 3, "node": {"gpus": 8, "parts": {
            "slow": {"effect": "degraded", "speed": {"low": 0.5, "high": 0.5}, "failure": {"mtbf_h": 60.0},
                     "repair": {"hot_swap": True, "time": {"dist": "fixed", "value_h": 5.0}}}}}},
        "maintenance": {"crews": {"t": {"count": 4, "shift": "24x7"}}},
        "workload": {"scheduler": {"policy": "fifo", "hot_spares": 1},
                     "jobs": [{"name": "job", "gpus": 16, "work_h": 1000,
                               "checkpoint": {"interval_h": 1.0, "write_h": 0.0, "mode": "sync"}}]},
    }
    res = run(doc)
    m = res.metrics
    assert m["goodput.mechanism.fail_slow"] > 0.01
    assert m["goodput.mechanism.power_cap"] == 0.0 and m["goodput.slowdown.power"] == 0.0
    assert m["goodput.slowdown.fail_slow"] == m["goodput.mechanism.fail_slow"]
    mech = sum(v for k, v in m.items() if k.startswith("goodput.mechanism."))
    assert m["goodput"] + mech == pytest.approx(1.0, abs=1e-9)


def test_forecast_lever_takes_the_sdc_aware_optimum() -> None:
    """The forecast's checkpoint lever, given baseline rows with SDC rollbacks, sets the interval to the
    optimum of twin.physics.checkpoints for the observed rates (not Daly's); without rollbacks, Daly's."""
    import pandas as pd

    from twin.forecast.levers import daly_lever
    from twin.forecast.target import target_of
    from twin.physics import closed_forms as cf

    # (the 3.2 s write without the scenario's fixed 30 s: a short pause, so the kept checkpoints span less
    # than the detection latency at Daly's interval)
    base = load_scenario("scenarios/forecast-405b.yaml", ["workload.jobs.0.checkpoint.overhead_s=0"])
    target = target_of(base.scenario, 0)
    rows = pd.DataFrame({"interruptions.unplanned": [30.0, 34.0], "interruptions.sdc": [1.0, 0.0],
                         "exposure_h": [100.0, 100.0]})
    lever = daly_lever(base, target, rows, 10.0)
    ck = base.scenario.workload.jobs[0].checkpoint
    wl = base.scenario.workload
    R = wl.restart.detection_h + wl.restart.reschedule_h + ck.size_gb / wl.storage.read_gb_per_s / 3600 \
        + 16384 * wl.restart.init_s_per_rank / 3600 + wl.restart.warmup_h
    want = pcf.optimal_interval_h(target.write_h, R, 63.0 / 200.0, 1.0 / 200.0, [1.0], 10, 1.0)
    assert lever.loaded is not None and lever.label == "checkpoint at the optimum"
    assert lever.loaded.scenario.workload.jobs[0].checkpoint.interval_h == want
    daly = float(cf.daly_interval_h(target.write_h, 200.0 / 64.0))
    assert want > 1.2 * daly and "Daly's" in lever.change and "does not apply" in lever.change
    plain = daly_lever(base, target, rows.assign(**{"interruptions.sdc": [0.0, 0.0]}), 10.0)
    assert plain.loaded is not None and plain.loaded.scenario.workload.jobs[0].checkpoint.interval_h == daly


@pytest.mark.parametrize("fraction", [0.0, 0.01])
def test_forecast_lever_floors_an_async_interval_at_its_write_time(fraction: float) -> None:
    """An asynchronous checkpoint cannot start before the previous one is written: the forecast's lever
    proposes at least the write time. With ``async_fraction`` 0 (no pause) the optimum is the write time
    itself (it used to say "nothing to optimise"); with a small stalled share, Daly's interval for the
    pause is shorter than the write (checked here) and the lever floors it, saying so."""
    import pandas as pd

    from twin.forecast.levers import checkpoint_pause_h, daly_lever
    from twin.forecast.target import target_of
    from twin.physics import closed_forms as cf

    base = load_scenario("scenarios/forecast-405b.yaml", ["workload.jobs.0.checkpoint.mode=async",
                                                          f"workload.jobs.0.checkpoint.async_fraction={fraction}"])
    target = target_of(base.scenario, 0)
    rows = pd.DataFrame({"interruptions.unplanned": [300.0, 340.0], "exposure_h": [100.0, 100.0]})
    M = 200.0 / 640.0
    delta = fraction * target.write_h
    daly = float(cf.daly_interval_h(delta, M)) if delta > 0 else 0.0
    assert daly < target.write_h  # the case the floor is for
    lever = daly_lever(base, target, rows, 10.0)
    assert lever.loaded is not None, lever.note
    assert lever.loaded.scenario.workload.jobs[0].checkpoint.interval_h == math.nextafter(target.write_h, math.inf)
    assert "floored at the asynchronous write time" in lever.change
    # a synchronous checkpoint is not floored: Daly's interval for its (whole) pause
    sync = load_scenario("scenarios/forecast-405b.yaml")
    st = target_of(sync.scenario, 0)
    plain = daly_lever(sync, st, rows, 10.0)
    assert plain.loaded is not None
    pause = checkpoint_pause_h(sync, st)
    assert plain.loaded.scenario.workload.jobs[0].checkpoint.interval_h == float(cf.daly_interval_h(pause, M))
    assert "floored" not in plain.change
