"""Silent slowdown crossings under a power chain (issue 31): per-GPU thermal units with a second speed source
(PSU and site caps) and a reader of node power (the feeds' loads on battery, the site cap's water-fill)
give the eager path's results, every crossing an event and every load change direct (every node traced all
along), to 1e-9 in every thermal, energy, cooling and power metric and in the tables."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from twin.model.cooling.component import Thermal
from twin.model.cooling.lazy import LazyCrossings
from twin.scenario.loader import load_scenario
from twin.sim import run_replication

from test_thermal import assert_same_results  # noqa: E402  (tests/ is on sys.path)

SCEN = Path(__file__).resolve().parents[1] / "scenarios"
EVERY = "cooling.trace={nodes: [" + ",".join(str(i) for i in range(128)) + "], from_h: 0, to_h: 100000}"
# the bundled heterogeneity (issue 23 defaults) in a hotter hall (r_air 0.1: most GPUs can throttle)
HOT = ["horizon_days=4", "cooling.gpu.r_air_c_per_w=0.1"]
# PSUs of 2,500 W: a node runs capped on 3 of its 5 (node 2 loses two at 20 h); power-n1.yaml's N+1 is its UPS
# modules (issue 43), so the fifth PSU is set here
PSU_CAP = ["power.topology=n+1", "cluster.node.parts.psu.count=5", "power.capacity_w=2500",
           "cooling.inject=[{part: psu, index: 10, at_h: 20}, {part: psu, index: 11, at_h: 20}]"]


def _same(lazy: Any, eager: Any) -> None:
    """``test_thermal.assert_same_results`` (thermal, energy, cooling metrics and tables), and the power chain's
    metrics and ETTR."""
    assert_same_results(lazy, eager)
    for k, v in eager.metrics.items():
        if k.startswith("power.") or k == "ettr":
            assert lazy.metrics[k] == pytest.approx(v, rel=1e-9, abs=1e-9), k


def _pair(path: Path, sets: list[str]) -> tuple[Any, Any]:
    lazy = run_replication(load_scenario(path, sets).scenario)
    eager = run_replication(load_scenario(path, [*sets, EVERY]).scenario)
    return lazy, eager


def test_psu_caps_and_a_battery_ride_through_equal_the_eager_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """N+1 PSUs of 2,500 W: two PSUs of node 2 fail (it runs capped on 3: a power speed below 1) and a utility outage whose
    generator fails to start puts the feed on battery for its 10 minutes (the power chain reads the feed loads
    at every load change: silent crossings are settled and stop) and then drops the hall; silent crossings
    resume after it."""
    flips: list[tuple[bool, int]] = []
    orig = LazyCrossings._on_exact

    def spy(self: LazyCrossings, on: bool) -> None:
        flips.append((on, self.n_silent))
        orig(self, on)

    monkeypatch.setattr(LazyCrossings, "_on_exact", spy)
    sets = [*HOT, *PSU_CAP, "power.inject=[{feed: A, at_h: 40, duration_h: 2}]", "power.generator.start_failure_prob=1"]
    lazy, eager = _pair(SCEN / "power-n1.yaml", sets)
    assert (True, 0) not in flips[:1] and any(on and n > 0 for on, n in flips)  # silent ones were settled
    assert any(not on for on, _ in flips)  # … and exact power was no longer needed after the outage
    assert lazy.metrics["power.capped_gpu_hours"] > 0  # node 2 ran capped on 3 PSUs
    assert lazy.metrics["thermal.throttled_gpu_hours"] > 0 and lazy.metrics["thermal.mean_speed"] < 0.99
    assert lazy.events_processed < 0.5 * eager.events_processed  # crossings were silent
    _same(lazy, eager)


def test_binding_site_cap_keeps_every_crossing_an_event(monkeypatch: pytest.MonkeyPatch) -> None:
    """A site cap water-fills over every GPU's thermal cap at every load change: no crossing may be silent, and
    the results are the eager path's."""
    silent: list[int] = []  # per settling (every path ends in settled or settled_in): the silent crossings among it
    orig, orig_in = LazyCrossings.settled, LazyCrossings.settled_in

    def spy(self: LazyCrossings, n_sil: int, *args: Any) -> None:
        silent.append(n_sil)
        orig(self, n_sil, *args)

    def spy_in(self: LazyCrossings, cleared: int, n_sil: int, *args: Any) -> None:
        silent.append(n_sil)
        orig_in(self, cleared, n_sil, *args)

    monkeypatch.setattr(LazyCrossings, "settled", spy)
    monkeypatch.setattr(LazyCrossings, "settled_in", spy_in)
    cap_w = 128 * (3200 + 8 * 450)  # baseline's node: 3,200 W non-GPU + 8 GPUs; binds in training
    sets = ["horizon_days=2", *HOT[1:], f"power.site_cap_w={cap_w}"]
    lazy, eager = _pair(SCEN / "power-n1.yaml", sets)
    assert lazy.metrics["power.site_capped_gpu_hours"] > 0
    assert lazy.metrics["thermal.throttled_gpu_hours"] > 0
    assert silent and not any(silent)  # crossings settled at their wake-ups, none silently
    _same(lazy, eager)


def test_effective_gpus_count_the_lower_of_thermal_and_power_speeds() -> None:
    """A node whose PSU cap slows it below its thermal speed: its effective GPUs (the throughput series) are
    its busy GPUs times the lower speed, with silent crossings settled or not."""
    from twin.sim import Model

    sets = [*HOT, *PSU_CAP]
    model = Model(load_scenario(SCEN / "power-n1.yaml", sets).scenario)
    model.run()
    th = model.by_section["cooling"]
    assert isinstance(th, Thermal) and th.lazy.silent_on and th.lazy.oth_caps
    speed = model.cluster.node_speed(np.arange(th.params.n_nodes))
    assert speed.min() < 1.0
    np.testing.assert_allclose(th.arrays.n_tp, th.arrays.n_busy * speed, rtol=1e-12, atol=1e-9)
