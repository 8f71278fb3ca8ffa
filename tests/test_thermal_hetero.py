"""Heterogeneous GPUs (issue 23 item 1): per-GPU R spread, chassis preheat, rack-height and recirculation
inlet offsets; each GPU's values from its own stream; a job's compute speed is its slowest GPU's; silent
slowdown crossings (``twin.model.cooling.lazy``) agree with the eager path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

from twin.validation.framework import IDENTICAL_GPU_SETS
from twin.model.cooling.component import Thermal
from twin.model.cooling.lazy import LazyCrossings
from twin.model.cooling.replay import DeferredReplay
from twin.model.workload import RUNNING
from twin.scenario.loader import load_scenario
from twin.sim import Model, run_replication

from test_thermal import assert_same_results, lazy_and_direct  # noqa: E402  (tests/ is on sys.path)

SCEN = Path(__file__).resolve().parent.parent / "scenarios"
OFFSETS = ["cooling.air.slot_preheat_c=2", "cooling.air.rack_rise_c=1.5", "cooling.air.recirculation_c=0.5"]
THERMAL_SOURCE = "thermal"  # the cooling component's speed source (twin/model/cooling/component.py)
CRAH_LOSS = ("cooling.inject=[{part: crah, index: 0, at_h: 30}, {part: crah, index: 1, at_h: 30},"
             " {part: fan, index: 3, at_h: 10}]")


def _thermal(model: Model) -> Thermal:
    th = model.by_section["cooling"]
    assert isinstance(th, Thermal)
    return th


def _true_speeds(th: Thermal) -> np.ndarray:
    """Each GPU's speed now: a silent crossing that is due has taken effect though not yet settled."""
    a = th.arrays
    sp = a.speed.copy()
    if th.lazy.silent_on:
        due = th.lazy.silent & (a.t_next <= th.engine.now)
        sp[due] = a.x_sp[due]
    return sp


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(r_sigma=st.floats(0.0, 0.1), preheat=st.floats(0.0, 3.0), rack=st.floats(0.0, 2.0),
       recirc=st.floats(0.0, 1.0), supply=st.floats(22.0, 26.0), arrivals=st.floats(0.2, 3.0),
       seed=st.integers(1, 10_000))
# a zone short of cooling in the third day: the operator caps nodes 64-101 to 0.43 while their GPUs run at full speed
@example(r_sigma=0.0, preheat=0.0, rack=0.0, recirc=0.0, supply=22.0, arrivals=1.0, seed=1398)
def test_job_speed_is_the_minimum_over_its_gpus(r_sigma: float, preheat: float, rack: float, recirc: float,
                                                supply: float, arrivals: float, seed: int) -> None:
    """Property: at probe times spread over the run, every running job's compute-speed input (the engine's
    minimum over its nodes, which the step-time model takes) equals the minimum over its GPUs' speeds and the
    other speed sources' caps (the operator's caps of a zone short of cooling, issue 42), the thermal source's
    own minimum equals the GPUs', and its rate is the rate at that speed; the GPUs' speeds come from their own
    R and inlet, not the node's."""
    sets = ["horizon_days=3", f"seed={seed}", f"cooling.gpu.r_sigma={r_sigma}", f"cooling.air.slot_preheat_c={preheat}",
            f"cooling.air.rack_rise_c={rack}", f"cooling.air.recirculation_c={recirc}", f"cooling.air.supply_c={supply}",
            f"workload.synthetic.arrival_rate_per_h={arrivals}"]
    model = Model(load_scenario(SCEN / "air.yaml", sets).scenario)
    th = _thermal(model)
    wl = model.by_section["workload"]
    eng = model.engine
    checked: list[int] = []

    def probe() -> None:
        sp = _true_speeds(th)
        for job in list(wl.allocated.values()):
            if job.state != RUNNING or not len(job.nodes):
                continue
            nodes = np.asarray(job.nodes, dtype=np.int64)
            gpu_min = float(sp[th.gpu.gpus(nodes)].min())
            caps = model.cluster.speed_caps
            assert float(caps[THERMAL_SOURCE][nodes].min()) == gpu_min
            others = [float(arr[nodes].min()) for name, arr in caps.items() if name != THERMAL_SOURCE]
            assert model.cluster.min_speed(job.nodes) == min([gpu_min, *others])
            assert job.rate == pytest.approx(wl._compute_rate(job), rel=1e-12)
            checked.append(1)

    for k in range(1, 144):  # every half hour, plus a little, so probes fall inside warm-up transients too
        eng.call_at(k * 0.5 + 0.0031 * (k % 7), probe)
    model.run()
    assert checked


def test_slowest_gpu_paces_the_job() -> None:
    """With a spread the 768-GPU job runs at its slowest GPU's speed, not the mean: a straggler (the marginal
    GPU air design of air-marginal.yaml: the typical one of air.yaml does not throttle)."""
    model = Model(load_scenario(SCEN / "air-marginal.yaml", ["horizon_days=1", "cooling.gpu.r_sigma=0.05",
                                                             *OFFSETS]).scenario)
    th = _thermal(model)
    wl = model.by_section["workload"]
    seen: list[tuple[float, float]] = []

    def probe() -> None:
        sp = _true_speeds(th)
        for job in wl.allocated.values():
            if job.state == RUNNING and len(job.nodes) >= 64:
                g = sp[th.gpu.gpus(np.asarray(job.nodes, dtype=np.int64))]
                seen.append((model.cluster.min_speed(job.nodes), float(g.mean())))

    model.engine.call_at(12.3, probe)
    model.run()
    assert seen
    pace, mean = seen[0]
    assert pace < 0.97 and pace < mean - 0.01  # (the spread makes stragglers; a mean would hide them)


def _draws(sets: list[str], path: Path = SCEN / "air.yaml") -> tuple[Any, Any, list[str]]:
    model = Model(load_scenario(path, sets).scenario)
    th = _thermal(model)
    cl = model.cluster
    return th.arrays.rspread.copy(), th.arrays.toff.copy(), [cl.node_path(i) for i in range(cl.n_nodes)]


def test_per_gpu_draws_are_common_random_numbers() -> None:
    """Each GPU's R factor and each node's recirculation come from streams of their own paths: adding racks,
    removing the fabric or the cooling units' redundancy leaves every existing GPU's values bit-identical."""
    base = ["horizon_days=1", "cooling.gpu.r_sigma=0.05", "cooling.air.recirculation_c=0.7"]
    r0, o0, paths0 = _draws(base)
    n0 = len(paths0)
    variants = [
        ["cluster.racks=48"],  # more nodes (baseline.yaml has 32 racks): the first racks keep their paths
        ["network=null"],  # no fabric components
        ["cooling.air.crah.count=5", "maintenance.crews.technicians.count=5"],
    ]
    for extra in variants:
        r1, o1, paths1 = _draws(base + extra)
        assert paths1[:n0] == paths0
        g0 = len(r0)
        np.testing.assert_array_equal(r1[:g0], r0)  # bit for bit
        np.testing.assert_array_equal(o1[:g0], o0)
    # and the draws do differ between GPUs and with the seed (a stream per GPU, not one value)
    assert len(np.unique(r0)) == len(r0)
    r2, _, _ = _draws(base + ["seed=7"])
    assert not np.array_equal(r2, r0)


def test_inlet_offsets_by_slot_rack_and_recirculation() -> None:
    """The downstream half of a node's GPUs sees the chassis preheat; the top node of a rack the full rack
    rise; recirculation is a non-negative per-node offset."""
    model = Model(load_scenario(SCEN / "air.yaml", ["horizon_days=1", "cooling.air.slot_preheat_c=2",
                                                    "cooling.air.rack_rise_c=1.5",
                                                    "cooling.air.recirculation_c=0"]).scenario)
    th = _thermal(model)
    g, npr = th.params.gpus_per_node, model.cluster.nodes_per_rack
    off = th.arrays.toff.reshape(th.params.n_nodes, g)
    assert th.params.units_per_node == g
    np.testing.assert_allclose(off[0], [0.0] * (g // 2) + [2.0] * (g - g // 2))
    np.testing.assert_allclose(off[npr - 1], [1.5] * (g // 2) + [3.5] * (g - g // 2))
    rec = Model(load_scenario(SCEN / "air.yaml", ["horizon_days=1", "cooling.air.recirculation_c=1",
                                                  "cooling.air.slot_preheat_c=0", "cooling.air.rack_rise_c=0"]).scenario)
    o = _thermal(rec).arrays.toff.reshape(-1, g)
    assert (o >= 0).all() and np.ptp(o[:, 0]) > 0 and (o == o[:, :1]).all()  # per node, the same for its GPUs
    assert o[:, 0].mean() == pytest.approx(1.0, rel=0.25)


def test_identical_gpus_keep_one_unit_per_node() -> None:
    """Without a spread or offsets (and offsets in a liquid hall do nothing) a node is one thermal unit; the
    bundled air hall has them by default (issue 23), one unit per GPU."""
    th = _thermal(Model(load_scenario(SCEN / "air.yaml", ["horizon_days=1", *IDENTICAL_GPU_SETS]).scenario))
    assert th.params.units_per_node == 1 and th.arrays.toff is None
    th = _thermal(Model(load_scenario(SCEN / "liquid.yaml", ["horizon_days=1", "cooling.gpu.r_sigma=0"]).scenario))
    assert th.params.units_per_node == 1 and th.arrays.toff is None
    th = _thermal(Model(load_scenario(SCEN / "air.yaml", ["horizon_days=1"]).scenario))
    assert th.params.units_per_node == th.params.gpus_per_node and th.arrays.toff is not None and th.arrays.rspread.std() > 0.0


def test_silent_crossings_equal_the_eager_path_with_offsets() -> None:
    """Silent crossings (untraced nodes) against every crossing an event (every node traced), with a spread,
    chassis/rack/recirculation offsets, a CRAH loss and a fan loss; and the silent path saves events (the
    marginal GPU air design of air-marginal.yaml, which throttles)."""
    lazy, direct = lazy_and_direct(SCEN / "air-marginal.yaml", ["horizon_days=3", "cooling.gpu.r_sigma=0.03",
                                                                *OFFSETS, CRAH_LOSS])
    assert lazy.metrics["thermal.throttled_gpu_hours"] > 0
    assert lazy.metrics["thermal.mean_speed"] < 0.999
    assert_same_results(lazy, direct)
    assert lazy.events_processed < 0.5 * direct.events_processed


def test_cells_of_per_gpu_units_equal_the_direct_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Liquid with an R spread: cool nodes' load changes are logged; a job's nodes replay as a cell of
    per-GPU units (powers by level, the last segments' temperatures), against every load change direct."""
    calls: list[int] = []
    orig = DeferredReplay._replay_cell_units

    def spy(self: DeferredReplay, *a: Any) -> None:
        calls.append(1)
        orig(self, *a)

    monkeypatch.setattr(DeferredReplay, "_replay_cell_units", spy)
    lazy, direct = lazy_and_direct(SCEN / "liquid.yaml", [
        "horizon_days=8", "cooling.gpu.r_sigma=0.05",
        "cooling.inject=[{part: cdu, index: 0, at_h: 150}, {part: cdu, index: 1, at_h: 150}]"])
    assert calls  # the cell path was taken
    assert lazy.metrics["thermal.trips"] > 0  # the loop's lost flow: throttling and trips on the direct path
    assert_same_results(lazy, direct)


def test_pace_wakeups_and_traced_nodes_outside_their_window_equal_the_eager_path(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The heterogeneity defaults of issue 23 (R spread 0.05, chassis, rack and recirculation offsets), a CRAH and
    a fan loss: a wake-up at a crossing that lowers a job's pace settles it in closed form (``lazy.settle``)
    instead of a direct update of its node, and a traced node's crossings may be silent outside its trace
    window; both against every crossing an event and every load change direct (every node traced all along),
    to 1e-9 in every metric and table."""
    calls: list[int] = []
    orig = LazyCrossings.settled  # (every settling outside an update ends there: lazy.settle, the wake-up's)

    def spy(self: LazyCrossings, n_sil: int, tmax: float, nodes: Any, new_caps: Any, it_caps: Any, tp_t: Any,
            tp_dv: Any, ts: Any, *args: Any) -> None:
        calls.append(len(ts) - n_sil)  # crossings settled that were not silent (ts: one per unit settled)
        orig(self, n_sil, tmax, nodes, new_caps, it_caps, tp_t, tp_dv, ts, *args)

    monkeypatch.setattr(LazyCrossings, "settled", spy)
    # r_air 0.1: the former hot hall (baseline's GPUs draw 650 W in training since twin 0.7, 83.8 C at 0.092)
    sets = ["horizon_days=6", "cooling.gpu.r_sigma=0.05", "cooling.air.slot_preheat_c=2", "cooling.air.rack_rise_c=1",
            "cooling.air.recirculation_c=0.5", "cooling.gpu.r_air_c_per_w=0.1", CRAH_LOSS]
    lazy = run_replication(load_scenario(SCEN / "air.yaml", [*sets, "cooling.trace={nodes: [0, 5], from_h: 40, to_h: 60}"]
                                         ).scenario)
    assert sum(calls) > 0  # wake-ups took the closed form
    every = ",".join(str(i) for i in range(128))
    direct = run_replication(load_scenario(
        SCEN / "air.yaml", [*sets, f"cooling.trace={{nodes: [{every}], from_h: 0, to_h: 100000}}"]).scenario)
    assert lazy.metrics["thermal.throttled_gpu_hours"] > 0 and lazy.metrics["thermal.mean_speed"] < 0.99
    assert_same_results(lazy, direct)
    tr = lazy.tables["thermal_trace"]
    assert set(tr["node"].unique()) == {0, 5} and tr["time_h"].between(40, 60).all()
    assert lazy.events_processed < 0.5 * direct.events_processed


def test_peak_walks_follow_only_the_units_that_may_pass_the_peak(monkeypatch: pytest.MonkeyPatch) -> None:
    """The replay's peak walks follow only the units that may pass the peak so far: a cell's
    (``DeferredReplay._replay_cell_units``) those whose temperature at the cell's first entry or highest steady
    state comes within ``_PEAK_MARGIN_C`` of it; the pairs' (``_replay_units``) the unit of the highest steady state
    first, then the hot units whose start or highest steady state comes that close to the peak it reached. The peak
    after each cell and each pairs' replay (some of them raising it) and the results are those of following every
    (hot) unit, bit for bit."""
    import twin.kernels_replay as KR

    followed: dict[str, list[int]] = {"cell": [], "pairs": []}
    peaks: dict[str, list[tuple[float, float]]] = {"cell": [], "pairs": []}
    orig_cell, orig_pairs = KR.peak_cell, KR.peak_pairs
    orig_cell_units, orig_units = DeferredReplay._replay_cell_units, DeferredReplay._replay_units

    def spy_cell(x: Any, *a: Any) -> float:
        followed["cell"].append(len(x))
        return float(orig_cell(x, *a))

    def spy_pairs(x: Any, s0: Any, c0: Any, *a: Any) -> float:
        followed["pairs"].append(int(c0.sum()))
        return float(orig_pairs(x, s0, c0, *a))

    def spy_cell_units(self: DeferredReplay, *a: Any) -> None:
        before = self.gpu.tpeak_c
        orig_cell_units(self, *a)
        peaks["cell"].append((before, self.gpu.tpeak_c))

    def spy_units(self: DeferredReplay, *a: Any) -> None:
        before = self.gpu.tpeak_c
        orig_units(self, *a)
        peaks["pairs"].append((before, self.gpu.tpeak_c))

    monkeypatch.setattr(KR, "peak_cell", spy_cell)
    monkeypatch.setattr(KR, "peak_pairs", spy_pairs)
    monkeypatch.setattr(DeferredReplay, "_replay_cell_units", spy_cell_units)
    monkeypatch.setattr(DeferredReplay, "_replay_units", spy_units)
    sets = ["horizon_days=20"]
    some = run_replication(load_scenario(SCEN / "liquid.yaml", sets).scenario)
    n_some = {k: sum(v) for k, v in followed.items()}
    peaks_some = {k: list(v) for k, v in peaks.items()}
    for v in (*followed.values(), *peaks.values()):
        v.clear()
    monkeypatch.setattr(DeferredReplay, "_PEAK_MARGIN_C", float("inf"))  # every (hot) unit followed, as before
    every = run_replication(load_scenario(SCEN / "liquid.yaml", sets).scenario)
    for k in ("cell", "pairs"):
        assert 0 < n_some[k] < sum(followed[k]), k  # the walks were taken, over fewer units
        assert any(after > before for before, after in peaks[k]), k  # a walk raised the peak
        assert peaks_some[k] == peaks[k], k
    assert some.metrics == every.metrics
    for name, df in every.tables.items():
        assert some.tables[name].equals(df), name
