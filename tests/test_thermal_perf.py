"""The thermal model's cheap paths (issue 10) against the plain ones: the deferred replay of cool
nodes' load changes (``DeferredReplay.flush_log``) against the same run with every node traced for the
whole horizon (every load change through the direct per-event path, ``GpuState.update``), on paths the
bundled scenarios and their golden fingerprints do not take (one thermal unit per GPU, a second speed
source, τ of an hour, warm and cool nodes in one job); the replay per cell against the replay per
pair and against the first-order equations in plain Python; the restart scan and the quiet hall's
hourly events against their plain versions."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
import pytest
import pandas as pd
import yaml

from twin.validation.framework import IDENTICAL_GPU_SETS
from twin.scenario.loader import load_scenario
from twin.model.cooling.air import AirRooms
from twin.model.cooling.component import Thermal
from twin.model.cooling.replay import DeferredReplay
from twin.model.cooling.trips import Trips
from twin.sim import Model, run_replication

from test_thermal import assert_same_results, lazy_and_direct  # noqa: E402  (tests/ is on sys.path)

SCEN = Path(__file__).resolve().parent.parent / "scenarios"
HOT_HALL = ["cluster.racks=16", "cluster.nodes_per_rack=8", "cluster.node.gpu.train_w=700",
            "cluster.node.non_gpu_w=4600", "cluster.node.non_gpu_idle_w=4600"]
"""The bundled hall as it was before issue 23 (16 racks of 8 nodes drawing the 10.2 kW nameplate in training):
the tests of code paths that need zones short of capacity, trips and PSU-budget caps keep it."""
# three of the four CRAH units of zone 0 fail at 30 h: the zone turns warm and nodes throttle and trip
CRAH_LOSS = ("cooling.inject=[{part: crah, index: 0, at_h: 30}, {part: crah, index: 1, at_h: 30},"
             " {part: crah, index: 2, at_h: 30}]")


def test_deferred_replay_with_one_unit_per_gpu() -> None:
    """``r_sigma`` > 0: eight thermal units per node, each with its own R; the replay expands each
    logged node to its units."""
    lazy, direct = lazy_and_direct(SCEN / "air.yaml", ["horizon_days=2", "cooling.gpu.r_sigma=0.05", CRAH_LOSS])
    assert len(lazy.tables["thermal_trace"]["gpu"].unique()) == 8  # per-GPU state, not one per node
    assert lazy.metrics["thermal.throttled_gpu_hours"] > 0
    assert_same_results(lazy, direct)


def _power_air(tmp_path: Path) -> tuple[Path, list[str]]:
    """The power-n plant with the air-cooled hall of air-marginal.yaml (air.yaml's hall with the marginal GPU air
    design, which throttles when the room warms; the typical design does not); zone 0 loses three CRAH units at
    100 h."""
    air = yaml.safe_load((SCEN / "air.yaml").read_text())
    air["cooling"]["gpu"].update(yaml.safe_load((SCEN / "air-marginal.yaml").read_text())["cooling"]["gpu"])
    doc = {"extends": str(SCEN / "power-n.yaml"), "name": "power-air", "cooling": air["cooling"],
           "maintenance": {"crews": air["maintenance"]["crews"]}}  # the CRAH units' facilities pool
    path = tmp_path / "power-air.yaml"
    path.write_text(yaml.safe_dump(doc))
    # and node 0 loses one of its four PSUs at 50 h: capped (power speed < 1) while still thermally cool
    return path, [*HOT_HALL, "horizon_days=20", *IDENTICAL_GPU_SETS,  # the replay of one unit per node
                  CRAH_LOSS.replace("at_h: 30", "at_h: 100").replace("]", ", {part: psu, index: 1, at_h: 50}]")]


def test_power_air_caps_speeds_from_two_sources(tmp_path: Path) -> None:
    """The premise of the next test: node speeds are the minimum of a power and a thermal cap."""
    path, sets = _power_air(tmp_path)
    assert sorted(Model(load_scenario(path, sets).scenario).cluster.speed_caps) == ["power", "thermal"]


def test_deferred_replay_with_a_second_speed_source(tmp_path: Path) -> None:
    """The power model caps node speeds too: the replay takes each node's speed over all sources as it
    was when the load change was logged (a power speed change flushes the log only after its cap moved;
    replaying at the flush-time speed differed from the direct path by ~1e-6 effective GPU-hours)."""
    lazy, direct = lazy_and_direct(*_power_air(tmp_path))
    assert lazy.metrics["thermal.throttled_gpu_hours"] > 0
    assert lazy.metrics["power.capped_gpu_hours"] > 0  # the PSU loss: speeds < 1 logged for cool nodes
    assert_same_results(lazy, direct)


def _plain_cooling_ok(self: Trips, node: int) -> bool:
    """Trips._cooling_ok as first written: each GPU's R, every condition checked for every node."""
    p, a = self.params, self.arrays
    if self.air_rooms.fan_part is not None and a.fans_h[node] == 0:
        return False
    if p.liquid is not None and p.gpu_on_liquid and not a.loop_flow[a.loop_of[node]]:
        return False
    u = p.units_per_node
    r = float((a.rbase[node * u:(node + 1) * u] * a.rfactor[node]).max())
    if a.inlet[node] + p.pmin_w * r >= p.shut_c:
        return False
    if p.air is not None:
        z = int(a.zone_of[node])
        if self.air_rooms.supply_now(z) >= p.max_inlet_c:
            return False
        if not a.z_slack[z]:
            s, e = a.zones[z]
            n_up = int(np.count_nonzero(self.cluster.down_count[s:e] == 0))
            full = self._node_full_air_w(node)
            if n_up * full + a.z_reserved[z] + full > self.response.admit_budget_w(z):  # (the operator's budget, if any)
                return False
    return True


def _plain_try_restarts(self: Trips) -> None:
    """Trips.try_restarts as first written: every tripped node checked at every call."""
    if not self.tripped:
        return
    for node in sorted(self.tripped):
        if node in self.pending or not _plain_cooling_ok(self, node):
            continue
        self._admit_reboot(node)


def test_restart_checks_skip_a_closed_zone_without_changing_anything(monkeypatch) -> None:
    """A hall of 256 nodes in two zones sized for 64 each: most nodes trip and wait for headroom. The
    restart scan skips the rest of a zone once a zone-wide condition fails (issue 10: it made a
    131K-GPU hall with two zones take minutes); the run must equal the plain scan's exactly."""
    sets = [*HOT_HALL, "cluster.racks=32", "horizon_days=4", *IDENTICAL_GPU_SETS]  # one unit per node
    fast = run_replication(load_scenario(SCEN / "air.yaml", sets).scenario)
    assert fast.metrics["thermal.trips"] > 100
    with monkeypatch.context() as mp:
        mp.setattr(Trips, "try_restarts", _plain_try_restarts)
        plain = run_replication(load_scenario(SCEN / "air.yaml", sets).scenario)
    assert sorted(fast.metrics) == sorted(plain.metrics)
    assert pd.Series(fast.metrics).equals(pd.Series(plain.metrics))  # exact, NaN equal to NaN
    for name, table in plain.tables.items():
        pd.testing.assert_frame_equal(fast.tables[name], table, check_exact=True)


@pytest.mark.parametrize("sets", [[], ["cooling.gpu.c_j_per_c=90000"]], ids=["tau-16s", "tau-1h"])
def test_cells_and_logged_outages_equal_the_direct_path(monkeypatch, sets: list[str]) -> None:
    """Nodes that saw the same logged load changes (a job's nodes at its checkpoint pauses) are replayed
    once per cell, and a cool node's outage is logged rather than applied at once (issue 10): the run
    equals the direct path (every node traced). With τ of an hour the temperatures' history stays in
    view (with seconds it decays to nothing between load changes): the peak temperature must still be
    the direct path's, the hottest temperature at any load change."""
    seen = {"cells": 0, "outages_logged": 0}
    replay_cell, log_state = DeferredReplay._replay_cell, DeferredReplay.log_state

    def spy_cell(self: DeferredReplay, *args: object) -> None:
        seen["cells"] += 1
        replay_cell(self, *args)

    def spy_state(self: DeferredReplay, node: int) -> None:
        seen["outages_logged"] += not self.cluster.is_up(node)
        log_state(self, node)

    with monkeypatch.context() as mp:
        mp.setattr(DeferredReplay, "_replay_cell", spy_cell)
        mp.setattr(DeferredReplay, "log_state", spy_state)
        lazy, direct = lazy_and_direct(SCEN / "liquid.yaml", ["horizon_days=60", *sets])
    assert seen["cells"] > 0 and seen["outages_logged"] > 0
    assert_same_results(lazy, direct)


def test_cells_equal_pairs_with_an_hour_long_time_constant(monkeypatch) -> None:
    """The replay per cell equals the replay per (node, entry) pair in short chunks, state included.
    A heat capacity that makes τ an hour keeps the temperatures' history in view."""
    sc = load_scenario(SCEN / "liquid.yaml", ["horizon_days=60", "cooling.gpu.c_j_per_c=90000"]).scenario
    cells = Model(sc)
    cells.run()
    with monkeypatch.context() as mp:
        mp.setattr(DeferredReplay, "_CELL_MIN_PAIRS", 10**9)  # every pair on its own ...
        mp.setattr(DeferredReplay, "_CHUNK", 16)  # ... in short chunks
        mp.setattr(DeferredReplay, "_replay_cell", None)  # (never called)
        pairs = Model(sc)
        pairs.run()
    assert_same_results(cells.result(), pairs.result())
    a, b = cells.by_section["cooling"], pairs.by_section["cooling"]
    for name in ("T", "tss", "t0", "hist", "acc", "tp_t", "tp_dv", "n_busy"):
        np.testing.assert_allclose(np.asarray(getattr(a.arrays, name)), np.asarray(getattr(b.arrays, name)), rtol=1e-9,
                                   atol=1e-9, err_msg=name)
    assert a.gpu.tpeak_c == pytest.approx(b.gpu.tpeak_c, rel=1e-12)


def _replay(sc: Any, log: list[tuple[float, NDArray[np.int64], float, bool | None]],
            state: dict[str, NDArray[Any]]) -> Thermal:
    """A freshly built model's thermal part, set to ``state`` (a run in progress), after replaying ``log``
    ((time h, nodes, utilisation, None for a load change or, for one node, whether it came up or went
    down) in time order) in one flush."""
    model = Model(sc)
    th = model.by_section["cooling"]
    for name, value in state.items():
        getattr(th.arrays, name)[:] = value
    replay = th.replay
    for i, (t, nodes, util, up) in enumerate(log):
        replay._log_t.append(t)
        replay._log_nodes.append(nodes)
        replay._log_util.append(util)
        if up is not None:
            replay._log_up[i] = up
    replay.flush_log()
    return th


@pytest.mark.parametrize("seed", range(4))
def test_replay_per_cell_equals_replay_per_pair_on_random_logs(monkeypatch, seed: int) -> None:
    """Unit test of the replay on logs no run has to produce: jobs of 8 to 40 nodes, overlapping
    (a node moved from one job to another), logged at random times minutes to hours apart (τ of 16 s
    to an hour), and in every other case single-node entries and outages; every node starting from its
    own temperature, steady state, update time and busy state. The replay per cell must leave the state
    of the replay per pair (up to rounding), peak temperature included."""
    rng = np.random.default_rng(seed)
    tau_s = float(rng.choice([16.0, 600.0, 3600.0]))
    sc = load_scenario(SCEN / "liquid.yaml", [f"cooling.gpu.c_j_per_c={tau_s / 0.04}",
                                              "cooling.gpu.r_sigma=0"]).scenario  # one unit per node
    n = sc.cluster.racks * sc.cluster.nodes_per_rack
    g = sc.cluster.node.gpus
    only_jobs = seed % 2 == 1  # then every node is in a cell: their peak alone counts
    state = {"T": rng.uniform(30.0, 45.0, n), "tss": rng.uniform(30.0, 45.0, n), "t0": rng.uniform(0.0, 1.0, n),
             "n_busy": g * rng.integers(0, 2, n).astype(np.float64),
             "gon": rng.random(n) > (0.0 if only_jobs else 0.05)}  # some nodes out of service to begin with
    up_now = state["gon"].copy()
    jobs = [np.arange(s, s + size, dtype=np.int64) for s, size in ((0, 40), (40, 8), (48, 24))]
    jobs.append(np.concatenate([jobs[0][1:], [100]]))  # job 0 after node 0 left it for node 100
    log = []
    t = 1.0
    for _ in range(300):
        t += float(rng.exponential(0.5)) * float(rng.integers(0, 2))  # some entries at the same time
        r = rng.random()
        util = float(rng.choice([0.0, 0.35, 1.0]))
        up = None
        if r < 0.8 or only_jobs:
            nodes = jobs[int(rng.integers(len(jobs)))]
        else:
            nodes = np.array([int(rng.integers(n))], dtype=np.int64)
            if r > 0.9:  # the node goes down or comes back (as DeferredReplay.log_state logs it)
                up = not bool(up_now[nodes[0]])
                up_now[nodes[0]] = up
        log.append((t, nodes, util, up))
    cells = _replay(sc, log, state)
    seen = {"cells": 0}
    replay_cell = DeferredReplay._replay_cell

    def spy_cell(self: DeferredReplay, *args: object) -> None:
        seen["cells"] += 1
        replay_cell(self, *args)

    monkeypatch.setattr(DeferredReplay, "_replay_cell", spy_cell)
    _replay(sc, log, state)
    assert seen["cells"] > 0  # the default replay did make cells
    monkeypatch.setattr(DeferredReplay, "_CELL_MIN_PAIRS", 10**9)
    seen["cells"] = 0
    pairs = _replay(sc, log, state)
    assert seen["cells"] == 0
    for name in ("T", "tss", "t0", "gon", "hist", "acc", "tot", "tp_t", "tp_dv", "n_busy", "n_tp"):
        np.testing.assert_allclose(np.asarray(getattr(cells.arrays, name), dtype=np.float64),
                                   np.asarray(getattr(pairs.arrays, name), dtype=np.float64), rtol=1e-11, atol=1e-9,
                                   err_msg=name)
    assert cells.gpu.tpeak_c == pytest.approx(pairs.gpu.tpeak_c, rel=1e-12)
    # and both against the first-order equations node by node, in plain Python: the temperature at each
    # entry, the peak (the hottest of those), the final temperature and steady state
    T, tss, t0 = state["T"].tolist(), state["tss"].tolist(), state["t0"].tolist()
    in_service = state["gon"].tolist()
    busy = state["n_busy"].tolist()
    ca, cp = cells.arrays, cells.params
    tau_h = [float(r) * cp.c_j_per_c / 3600.0 for r in ca.rbase * ca.rfactor]
    peak = -np.inf
    for t, nodes, util, up in log:
        for i in nodes.tolist():
            T[i] = tss[i] + (T[i] - tss[i]) * math.exp(-(t - t0[i]) / tau_h[i])
            peak = max(peak, T[i])
            if up is not None:
                in_service[i] = up
            p_w = (cp.idle_w + (cp.tdp_w - cp.idle_w) * util) * in_service[i]
            busy[i] = g * float(util > 0.0 and in_service[i])
            tss[i], t0[i] = float(ca.inlet[i] + p_w * ca.rbase[i] * ca.rfactor[i]), t
    logged = np.unique(np.concatenate([nodes for _, nodes, _, _ in log]))
    np.testing.assert_allclose(ca.T[logged], np.asarray(T)[logged], rtol=1e-9)
    np.testing.assert_allclose(ca.tss, np.asarray(tss), rtol=1e-12)
    assert ca.n_busy.tolist() == busy and pairs.arrays.n_busy.tolist() == busy
    assert ca.gon.tolist() == [bool(x) for x in in_service] == pairs.arrays.gon.tolist()
    assert cells.gpu.tpeak_c == pytest.approx(max(peak, float(Model(sc).by_section["cooling"].gpu.tpeak_c)), rel=1e-12)


def test_quiet_hall_skips_hourly_capacity_changes_without_changing_anything(monkeypatch) -> None:
    """While every air zone could carry its full load and holds its supply temperature, the hourly
    derating events are skipped up to the first one that takes some zone's slack (issue 10). A year of
    air.yaml (hot afternoons take a zone's slack; a CRAH unit lost on a summer morning, day 200 at 6:00,
    must bring back the hours before that afternoon) must equal, exactly, the run that processes every
    hour, with fewer events."""
    sets = ["horizon_days=365", "cooling.inject=[{part: crah, index: 0, at_h: 4806}]"]
    sc = load_scenario(SCEN / "air.yaml", sets).scenario
    quiet = Model(sc)
    quiet.run()
    with monkeypatch.context() as mp:
        mp.setattr(AirRooms, "_quiet", lambda self: False)
        every = Model(sc)
        every.run()
    assert every.events - quiet.events > 1000
    a, b = quiet.result(), every.result()
    assert a.metrics["cooling.zone_over_capacity_hours"] > 0  # zones did lose their slack
    assert pd.Series(a.metrics).equals(pd.Series(b.metrics))
    for name, table in b.tables.items():
        pd.testing.assert_frame_equal(a.tables[name], table, check_exact=True)


def test_a_room_moves_on_the_heat_of_every_node_in_service_now(monkeypatch) -> None:
    """Logged (cool) nodes in an air zone that cannot carry its full load have their heat applied at
    their load change; when a job has warm nodes too (the traced node of air.yaml's summer week), the
    cool ones' heat must be in place before the warm ones' update moves the room (issue 10). Checked
    at every move of such a room over a year: its heat equals its nodes' demanded power now."""
    worst = {"w": 0.0, "moves": 0}
    retarget = AirRooms.retarget

    def spy(self: AirRooms, z: int) -> None:
        p, a = self.params, self.arrays
        if not a.z_slack[z]:
            s, e = a.zones[z]
            up = self.cluster.down_count[s:e] == 0
            pd_w = p.idle_w + (p.tdp_w - p.idle_w) * self.engine.node_util[s:e]
            now_w = float(((p.non_gpu_w + p.gpus_per_node * pd_w) * up).sum())
            worst["w"] = max(worst["w"], abs(now_w - float(self.z_q[z])))
            worst["moves"] += 1
        retarget(self, z)

    monkeypatch.setattr(AirRooms, "retarget", spy)
    run_replication(load_scenario(SCEN / "air.yaml", [*HOT_HALL, "horizon_days=365"]).scenario)
    assert worst["moves"] > 100
    assert worst["w"] < 1e-6


@pytest.mark.parametrize("hall", ["air.yaml", "power-n1.yaml"])
def test_a_thermal_cap_that_moves_no_draw_skips_the_refresh_without_changing_anything(monkeypatch, hall: str) -> None:
    """A thermal cap set or lifted at a load change to idle moves no GPU's draw: the IT power, refreshed at that
    instant already, is not refreshed again (``ITPower._unmoved``, issue 41). 30 days of the air hall as frozen
    for the benchmark (twin 0.8.1's: marginal GPUs that throttle in every training run), and of the N+1 power hall
    (the power chain watches every refresh: skipped while its ``idle()`` says it would change nothing), must equal,
    exactly (every metric, every table, every node's power at the end), the run that refreshes at every cap change,
    the skip taken many times."""
    from twin.model.it_power import ITPower

    sc = load_scenario(SCEN.parent / "benchmarks" / "halls" / hall, ["horizon_days=30"]).scenario
    taken: list[bool] = []
    real = ITPower._unmoved

    def counted(self: ITPower, *args: Any) -> bool:
        r = real(self, *args)
        taken.append(r)
        return r

    with monkeypatch.context() as mp:
        mp.setattr(ITPower, "_unmoved", counted)
        skip = Model(sc)
        skip.run()
    with monkeypatch.context() as mp:
        mp.setattr(ITPower, "_unmoved", lambda self, *args: False)
        every = Model(sc)
        every.run()
    assert sum(taken) > 100 and not all(taken)  # the skip was taken, and refused where a draw moved
    assert skip.events == every.events
    ip_a = [c for c in skip.components if isinstance(c, ITPower)][0]
    ip_b = [c for c in every.components if isinstance(c, ITPower)][0]
    assert np.array_equal(ip_a.node_power_w, ip_b.node_power_w) and ip_a.energy_wh == ip_b.energy_wh
    a, b = skip.result(), every.result()
    assert pd.Series(a.metrics).equals(pd.Series(b.metrics))
    for name, table in b.tables.items():
        pd.testing.assert_frame_equal(a.tables[name], table, check_exact=True)
