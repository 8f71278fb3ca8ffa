"""Checkpoint pauses shorter than ``workload.min_load_pause_s`` (twin 0.8.0): the job stops, its nodes stay
busy for the facility models (no NODE_LOAD), and a load publication that changes no node's load is not made."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from twin.model.engine import Topic
from twin.scenario import load_dict
from twin.sim import Model


def _doc(mode: str, min_pause_s: float, write_s: float) -> dict[str, Any]:
    return {"name": "pauses", "horizon_days": 1.0, "seed": 3,
            "cluster": {"racks": 1, "nodes_per_rack": 2, "node": {"gpus": 8, "parts": {}}},
            "costs": {},  # (its facility energy: the IT energy at the flat PUE)
            "workload": {"min_load_pause_s": min_pause_s,
                         "jobs": [{"name": "j", "gpus": 16, "work_h": 10.0, "submit_h": 0.0,
                                   "checkpoint": {"interval_h": 1.0, "mode": mode, "async_fraction": 0.5,
                                                  "write_h": write_s / 3600.0}}]}}


def _run(doc: dict[str, Any]) -> tuple[Model, list[tuple[float, float]]]:
    model = Model(load_dict(doc).scenario)
    seen: list[tuple[float, float]] = []
    model.engine.bus.subscribe(Topic.NODE_LOAD, lambda nodes, util: seen.append((model.engine.now, util)))
    model.run()
    return model, seen


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_short_pause_stops_the_job_but_not_its_nodes(mode: str) -> None:
    stall_s = 0.8 * (1.0 if mode == "sync" else 0.5)  # below the 1 s default: the nodes stay busy
    short, seen_short = _run(_doc(mode, 1.0, 0.8))
    full, seen_full = _run(_doc(mode, 0.0, 0.8))
    # idled for every pause: start, 9 checkpoint pauses and their ends, the final write, 20 publications;
    # short pauses: the start and the final write only
    assert [u for _, u in seen_full].count(0.0) == 10 and [u for _, u in seen_full].count(1.0) == 10
    assert seen_short == [seen_full[0], seen_full[-1]]
    ms, mf = short.result(tables=False).metrics, full.result(tables=False).metrics
    # the job's own accounting does not change: it stops for each pause either way
    for k in ("useful_gpu_hours", "checkpoint_gpu_hours", "jobs_completed"):
        assert ms[k] == pytest.approx(mf[k], rel=1e-12), k
    assert ms["checkpoint_gpu_hours"] == pytest.approx(16 * (9 * stall_s + 0.8) / 3600.0, rel=1e-9)
    # the IT energy counts the short pauses at training power: more by the pauses × (busy − idle) node power
    node = short.sc.cluster.node
    busy_minus_idle_w = node.gpus * (node.gpu.demand_w - node.gpu.idle_w) + (node.non_gpu_w - node.non_gpu_idle_w)
    extra_kwh = 9 * stall_s / 3600.0 * 2 * busy_minus_idle_w / 1000.0 * short.sc.costs.energy.pue
    assert ms["cost.energy_kwh"] - mf["cost.energy_kwh"] == pytest.approx(extra_kwh, rel=1e-6)

def test_a_pause_at_the_threshold_idles_the_nodes() -> None:
    _, seen = _run(_doc("sync", 0.8, 0.8))  # not shorter than min_load_pause_s: idled
    assert [u for _, u in seen].count(0.0) == 10


def test_no_publication_without_a_change_of_load() -> None:
    _, seen = _run(_doc("sync", 0.0, 0.8))
    utils = np.array([u for _, u in seen])
    assert not np.any(utils[1:] == utils[:-1])  # the final write and the completion: one publication of 0
