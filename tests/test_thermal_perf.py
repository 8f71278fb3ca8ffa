"""The deferred replay of cool nodes' load changes (``Thermal._flush_log``, issue 10) on the paths the
bundled scenarios and their golden fingerprints do not take: one thermal unit per GPU (``r_sigma`` > 0)
and node speeds capped by a second source (the power model). Each run is compared with the same run
where every node is traced for the whole horizon, which sends every load change through the direct
per-event path (``Thermal._update``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from twin.scenario.loader import load_scenario
from twin.model.thermal import Thermal
from twin.sim import Model, run_replication

from test_thermal import assert_same_results, lazy_and_direct  # noqa: E402  (tests/ is on sys.path)

SCEN = Path(__file__).resolve().parent.parent / "scenarios"
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
    """The power-n plant with the air-cooled hall of air.yaml; zone 0 loses three CRAH units at 100 h."""
    air = yaml.safe_load((SCEN / "air.yaml").read_text())
    doc = {"extends": str(SCEN / "power-n.yaml"), "name": "power-air", "cooling": air["cooling"]}
    path = tmp_path / "power-air.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path, ["horizon_days=20", CRAH_LOSS.replace("at_h: 30", "at_h: 100")]


def test_power_air_caps_speeds_from_two_sources(tmp_path: Path) -> None:
    """The premise of the next test: node speeds are the minimum of a power and a thermal cap."""
    path, sets = _power_air(tmp_path)
    assert sorted(Model(load_scenario(path, sets).scenario).engine.speed_caps) == ["power", "thermal"]


def test_deferred_replay_with_a_second_speed_source(tmp_path: Path) -> None:
    """The power model caps node speeds too: the replay takes each node's speed over all sources as it
    was when the load change was logged (a power speed change flushes the log only after its cap moved;
    replaying at the flush-time speed differed from the direct path by ~1e-6 effective GPU-hours)."""
    lazy, direct = lazy_and_direct(*_power_air(tmp_path))
    assert lazy.metrics["thermal.throttled_gpu_hours"] > 0
    assert_same_results(lazy, direct)


def _plain_cooling_ok(self, node: int) -> bool:
    """Thermal._cooling_ok as first written: each GPU's R, every condition checked for every node."""
    if self.fan_part is not None and self.fans_h[node] == 0:
        return False
    if self.liquid is not None and self.gpu_on_liquid and not self.loop_flow[self.loop_of[node]]:
        return False
    r = float((self.rbase[self._gpus(np.array([node]))] * self.rfactor[node]).max())
    if self.inlet[node] + self.pmin_w * r >= self.shut_c:
        return False
    if self.air is not None:
        z = int(self.zone_of[node])
        if self._supply_now(z) >= self.max_inlet_c:
            return False
        if not self.z_slack[z]:
            s, e = self.zones[z]
            n_up = int(np.count_nonzero(self.cluster.down_count[s:e] == 0))
            full = self._node_full_air_w(node)
            if n_up * full + self.z_reserved[z] + full > self._zone_cap_w(z):
                return False
    return True


def _plain_try_restarts(self) -> None:
    """Thermal._try_restarts as first written: every tripped node checked at every call."""
    if not self.tripped:
        return
    for node in sorted(self.tripped):
        if node in self.pending or not _plain_cooling_ok(self, node):
            continue
        self._reboot_token += 1
        tok = self._reboot_token
        self.pending[node] = tok
        if self.air is not None:
            self.z_reserved[self.zone_of[node]] += self._node_full_air_w(node)
        self.engine.call_at(self.engine.now + self.reboot_h, lambda n=node, t=tok: self._reboot_done(n, t))


def test_restart_checks_skip_a_closed_zone_without_changing_anything(monkeypatch) -> None:
    """A hall of 256 nodes in two zones sized for 64 each: most nodes trip and wait for headroom. The
    restart scan skips the rest of a zone once a zone-wide condition fails (issue 10: it made a
    131K-GPU hall with two zones take minutes); the run must equal the plain scan's exactly."""
    sets = ["cluster.racks=32", "horizon_days=4"]
    fast = run_replication(load_scenario(SCEN / "air.yaml", sets).scenario)
    assert fast.metrics["thermal.trips"] > 100
    with monkeypatch.context() as mp:
        mp.setattr(Thermal, "_try_restarts", _plain_try_restarts)
        plain = run_replication(load_scenario(SCEN / "air.yaml", sets).scenario)
    assert sorted(fast.metrics) == sorted(plain.metrics)
    assert pd.Series(fast.metrics).equals(pd.Series(plain.metrics))  # exact, NaN equal to NaN
    for name, table in plain.tables.items():
        pd.testing.assert_frame_equal(fast.tables[name], table, check_exact=True)
