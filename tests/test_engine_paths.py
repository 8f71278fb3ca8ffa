"""The engine's fast paths keep their contracts (issue 10): scheduled callbacks, the cluster's
down-node list, and IT power through the scalar load path equals the per-node formula."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from twin.model.causes import DownCause
from twin.model.engine import Topic
from twin.model import it_power as it_power_mod
from twin.model.it_power import IT_POWER
from twin.physics.power import node_it_power_w, non_gpu_power_w
from twin.scenario import load_scenario
from twin.sim import Model

ROOT = Path(__file__).resolve().parent.parent


TEST, OTHER = DownCause.part_failed("test"), DownCause.part_failed("other")

def _model() -> Model:
    return Model(load_scenario(ROOT / "scenarios" / "baseline.yaml", ["horizon_days=1"]).scenario, 0)


def test_call_at_runs_in_time_order_and_clamps_the_past() -> None:
    m = _model()
    eng = m.engine
    seen: list[tuple[str, float]] = []
    eng.call_at(2.0, lambda: seen.append(("b", eng.now)))
    eng.call_at(1.0, lambda: seen.append(("a", eng.now)))
    eng.env.run(until=1.5)
    eng.call_at(0.5, lambda: seen.append(("past", eng.now)))  # in the past: runs now
    eng.env.run(until=3.0)
    assert seen == [("a", 1.0), ("past", 1.5), ("b", 2.0)]
    assert isinstance(eng.now, float)


def test_down_nodes_follow_add_and_remove() -> None:
    m = _model()
    cl = m.cluster
    assert cl.down_nodes().tolist() == []
    cl.add_down(5, TEST)
    cl.add_down(2, TEST)
    cl.add_down(5, OTHER)
    assert cl.down_nodes().tolist() == [2, 5]
    cl.remove_down(5, TEST)
    assert cl.down_nodes().tolist() == [2, 5]  # still down for "other"
    cl.remove_down(5, OTHER)
    assert cl.down_nodes().tolist() == [2]


def test_set_load_publishes_exactly_when_some_node_changes() -> None:
    """``set_load`` remembers the array it last wrote (every node of it at one load): the same array again
    publishes only for another load, and a write of another array in between (overlapping nodes) makes it
    compare the nodes again, as it does for any other array."""
    m = _model()
    cl = m.cluster
    seen: list[tuple[list[int], float]] = []
    m.engine.bus.subscribe(Topic.NODE_LOAD, lambda nodes, util: seen.append((nodes.tolist(), util)))
    a, b = np.arange(0, 8), np.arange(4, 12)
    for nodes, util in [(a, 0.5), (a, 0.5), (a, 1.0), (b, 1.0), (b, 0.25), (a, 1.0), (a, 1.0), (b, 0.25),
                        (np.arange(4, 8), 0.25), (np.arange(8, 12), 0.5), (b, 0.25), (b, 0.0), (a, 0.0)]:
        want_pub = bool(np.count_nonzero(cl.node_util[nodes] != util))
        before = cl.node_util.copy()
        n = len(seen)
        cl.set_load(nodes, util)
        assert (len(seen) == n + 1) == want_pub, (nodes, util)
        before[nodes] = util
        assert np.array_equal(cl.node_util, before)


@pytest.mark.parametrize("few_down", [256, 0], ids=["down-list", "down-mask"])
def test_scalar_load_path_gives_the_per_node_power_and_zero_for_down_nodes(monkeypatch, few_down: int) -> None:
    """Both ways of zeroing down nodes (the cluster's list while few are down, a mask of the refreshed
    nodes when many are) give the per-node formula."""
    monkeypatch.setattr(it_power_mod, "_FEW_DOWN", few_down)
    m = _model()
    it = m.services[IT_POWER]
    cl = m.cluster
    cl.add_down(3, TEST)
    nodes = np.arange(0, 8)
    cl.set_load(nodes, 0.75)  # writes the load and publishes NODE_LOAD
    u = np.full(8, 0.7513)  # the non-GPU load follows utilisation (baseline.yaml, issue 23): the same operations
    cl.set_load(nodes, 0.7513)
    want = node_it_power_w(u, np.inf, it.gpus, it.idle_w, it.tdp_w, non_gpu_power_w(u, it.non_gpu_idle_w, it.non_gpu_w))
    want[3] = 0.0
    assert np.array_equal(it.node_power_w[nodes], want)
    assert it.total_w() == float(it.node_power_w.sum())


def test_deferred_load_writes_read_as_the_per_node_formula(monkeypatch) -> None:
    """A job-wide load toggle to a state seen before knows the site total and defers writing the nodes' power
    (``ITPower._pending``): ``node_power_w`` read at any point, after nodes go down and up in between, another
    array's load change or a full refresh, is the per-node formula at the cluster's loads with the down nodes
    at 0, and the site total its sum."""
    from twin.model import cluster as cluster_mod

    monkeypatch.setattr(it_power_mod, "MASK_NODES", 4)  # (this hall's job-wide arrays through masks too)
    monkeypatch.setattr(cluster_mod, "MASK_NODES", 4)
    m = _model()
    it = m.services[IT_POWER]
    cl = m.cluster

    def want() -> np.ndarray:
        u = cl.node_util.copy()
        w = node_it_power_w(u, np.inf, it.gpus, it.idle_w, it.tdp_w, non_gpu_power_w(u, it.non_gpu_idle_w, it.non_gpu_w))
        w[cl.down_nodes()] = 0.0
        return np.asarray(w)

    job, other = np.arange(0, 16), np.arange(16, 24)
    cl.add_down(3, TEST)
    cl.add_down(40, TEST)
    steps: list[tuple[str, object, float]] = [
        ("load", job, 1.0), ("load", job, 0.0), ("load", job, 1.0), ("load", job, 0.0), ("load", job, 1.0),
        ("down", 5, 0.0), ("load", job, 0.0), ("load", job, 1.0), ("load", job, 0.0), ("load", job, 1.0),
        ("up", 5, 0.0), ("load", job, 0.0), ("load", job, 1.0), ("load", other, 0.5), ("load", job, 0.0),
        ("load", job, 1.0), ("load", job, 0.0), ("refresh", None, 0.0), ("load", job, 1.0), ("load", job, 0.0),
        ("load", job, 1.0), ("up", 3, 0.0), ("load", job, 0.0), ("load", job, 1.0), ("load", job, 0.0)]
    deferred = 0
    for i, (kind, arg, util) in enumerate(steps):
        if kind == "load":
            cl.set_load(arg, util)  # type: ignore[arg-type]
        elif kind == "down":
            cl.add_down(arg, TEST)  # type: ignore[arg-type]
        elif kind == "up":
            cl.remove_down(arg, TEST)  # type: ignore[arg-type]
        else:
            it.refresh()
        deferred += it._pending is not None
        if i % 3 == 2 or i == len(steps) - 1:  # read now and then: the deferred write lands when read
            assert np.array_equal(it.node_power_w, want()), (i, kind)
            assert it.total_w() == float(it.node_power_w.sum())
    assert deferred >= 6  # the deferred path ran


def test_deferred_load_writes_read_through_every_reader(monkeypatch) -> None:
    """A load written again to the array written last is deferred (``Cluster._stale``) and made when read: the
    cluster's ``node_util``, its ``util_read`` (the kernels') and the engine's ``node_util`` all read every
    write made so far, whichever reads first, and a write of another array lands the deferred one first."""
    from twin.model import cluster as cluster_mod

    monkeypatch.setattr(cluster_mod, "MASK_NODES", 16)  # (a written through a mask, b by its indices)
    m = _model()
    cl, eng = m.cluster, m.engine
    a, b = np.arange(0, 100), np.arange(90, 102)  # (b overlaps a)
    want = np.zeros(cl.n_nodes)
    deferred = 0
    readers = [lambda: cl.node_util, lambda: cl.util_read, lambda: eng.node_util]
    for i, (nodes, util) in enumerate([(a, 1.0), (a, 0.0), (a, 1.0), (a, 0.0), (b, 0.5), (b, 1.0), (b, 0.0),
                                       (a, 1.0), (a, 0.0), (a, 0.25), (b, 0.75), (a, 1.0), (a, 0.0)]):
        cl.set_load(nodes, util)
        want[nodes] = util
        deferred += cl._stale
        if i % 2:  # read now and then, by each reader in turn: the deferred writes land when read
            assert np.array_equal(readers[i % 3](), want), i
    assert deferred >= 4  # the deferred path ran
    assert np.array_equal(eng.node_util, want) and not eng.node_util.flags.writeable


def test_every_it_power_publication_of_a_failing_job_is_the_per_node_formula(monkeypatch) -> None:
    """A job-wide job with failures and repairs (pretrain-16k, 6 days): at every IT power publication the
    total is the node array's sum and the array the per-node formula at the cluster's loads with the down
    nodes at 0, through all the shortcuts (the deferred toggles, a node gone down after its job's refresh
    keeping the total, the shared masks), each of which runs here."""
    sc = load_scenario(ROOT / "scenarios" / "pretrain-16k.yaml", ["horizon_days=6"]).scenario
    seen = {"checks": 0, "deferred": 0, "kept": 0}
    orig_publish = it_power_mod.ITPower._publish
    orig_on_node = it_power_mod.ITPower._on_node

    def publish(self, total: float, idx: np.ndarray) -> None:
        seen["deferred"] += self._pending is not None
        orig_publish(self, total, idx)
        cl = self.cluster
        u = cl.node_util.copy()
        want = node_it_power_w(u, np.inf, self.gpus, self.idle_w, self.tdp_w,
                               non_gpu_power_w(u, self.non_gpu_idle_w, self.non_gpu_w))
        want[cl.down_count != 0] = 0.0
        assert np.array_equal(self.node_power_w, want)
        assert total == float(self.node_power_w.sum())
        seen["checks"] += 1

    def on_node(self, node: int, cause: DownCause) -> None:
        memo = self._memo
        seen["kept"] += bool(self.cluster.down_count[node] and memo is not None and memo.down is self.cluster.down_nodes())
        orig_on_node(self, node, cause)

    monkeypatch.setattr(it_power_mod.ITPower, "_publish", publish)
    monkeypatch.setattr(it_power_mod.ITPower, "_on_node", on_node)
    Model(sc, 0).run()
    assert seen["checks"] > 300 and seen["deferred"] > 100 and seen["kept"] > 5, seen
