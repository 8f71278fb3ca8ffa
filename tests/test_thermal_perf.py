"""The deferred replay of cool nodes' load changes (``Thermal._flush_log``, issue 10) on the paths the
bundled scenarios and their golden fingerprints do not take: one thermal unit per GPU (``r_sigma`` > 0)
and node speeds capped by a second source (the power model). Each run is compared with the same run
where every node is traced for the whole horizon, which sends every load change through the direct
per-event path (``Thermal._update``)."""

from __future__ import annotations

from pathlib import Path

import yaml

from twin.scenario.loader import load_scenario
from twin.sim import Model

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
