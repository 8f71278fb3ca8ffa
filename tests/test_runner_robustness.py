"""Robustness of the runners (issue 22, items 2, 3, 5 and 6): interrupts stop every parallel
backend's workers, a Dask scheduler without workers is reported instead of waited on forever,
environment problems (a full disk, a permission, a file changed during a run) are exit 2 with one
line, and a results folder is locked while a run writes it.

Nothing here measures speed: waits are polled up to generous bounds, so a loaded machine only makes
the tests slower, never wrong.
"""

from __future__ import annotations

import io
import os
import sys
import time
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
import yaml

from twin import cli
from twin.experiment.runner import _Pool


def _sleep_s(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def _alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie (Linux /proc; elsewhere: signal 0)."""
    stat = Path(f"/proc/{pid}/stat")
    if stat.parent.exists():
        try:
            text = stat.read_text()
        except OSError:
            return False
        return text[text.rindex(")") + 2:].split()[0] != "Z"
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _wait_until(cond, bound_s: float = 10.0) -> bool:  # type: ignore[no-untyped-def]
    t0 = time.monotonic()
    while not cond():
        if time.monotonic() - t0 > bound_s:
            return False
        time.sleep(0.05)
    return True


# ----------------------------------------------------------------------------- item 2: abort

@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork pool")
def test_pool_abort_terminates_running_workers() -> None:
    """Two 60 s tasks on a two-process pool; abort() must end both workers (not let them finish)."""
    pool = _Pool(2)
    futures = [pool.submit(_sleep_s, 60.0) for _ in range(2)]
    assert _wait_until(lambda: len(pool.ex._processes or {}) == 2 and all(f.running() for f in futures))
    pids = list(pool.ex._processes)
    assert all(_alive(p) for p in pids)
    pool.abort()
    assert _wait_until(lambda: not any(_alive(p) for p in pids)), [p for p in pids if _alive(p)]
    assert all(f.done() for f in futures)


def test_dask_local_cluster_abort_ends_its_worker_processes() -> None:
    """``--dask local``: the run's own LocalCluster; abort() ends its worker processes while they run
    60 s tasks (the default graceful close would wait for them)."""
    pytest.importorskip("distributed")
    from twin.experiment.runner import make_backend

    backend = make_backend(2, "local")
    try:
        futures = [backend.submit(time.sleep, 60.0) for _ in range(2)]
        assert _wait_until(lambda: sum(len(v) for v in backend.client.processing().values()) == 2, 30)
        pids = list(backend.client.run(os.getpid).values())
        assert len(pids) == 2 and all(_alive(p) for p in pids)
    except BaseException:
        backend.abort()
        raise
    backend.abort()
    assert _wait_until(lambda: not any(_alive(p) for p in pids)), [p for p in pids if _alive(p)]
    assert all(f.cancelled() or f.done() for f in futures)


# ----------------------------------------------------------------------------- item 3: no Dask worker

def _scenario(tmp_path: Path, days: float = 30, nodes: int = 4, name: str = "tiny") -> Path:
    doc = {
        "name": name, "seed": 1, "horizon_days": days,
        "cluster": {"racks": 1, "nodes_per_rack": nodes, "node": {"gpus": 8, "parts": {
            "gpu": {"failure": {"mtbf_h": 200}, "repair": {"time": {"dist": "exponential", "mean_h": 20}}},
        }}},
        "maintenance": {"detection": {"dist": "fixed", "value_h": 0}, "crews": {"technicians": {"count": 2}}},
    }
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def run_cli(argv: list[str]) -> tuple[int, list[str], str]:
    """``twin.cli.main`` with stdout and stderr captured: (exit code, stderr lines, stdout)."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = cli.main(argv)
    return code, err.getvalue().splitlines(), out.getvalue()


def test_dask_scheduler_without_workers_exits_2_within_the_stated_wait(tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    scen = _scenario(tmp_path)
    with distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=None, silence_logs=40) as cluster:
        t0 = time.monotonic()
        code, err, _ = run_cli(["montecarlo", str(scen), "--reps", "4", "--results", str(tmp_path / "res"), "--quiet",
                                "--no-report", "--dask", cluster.scheduler_address, "--worker-wait-s", "1"])
        waited_s = time.monotonic() - t0
    assert code == 2, err
    assert len(err) == 1, err
    assert err[0].startswith(f"error: --dask: {cluster.scheduler_address}: the scheduler has had no worker for 1 s")
    assert "--wait-for-workers" in err[0]
    assert waited_s >= 1.0  # it did wait the stated time before giving up (no upper bound: a loaded machine is slow)
    assert not list((tmp_path / "res").rglob("*.parquet"))


def _no_rows(payload: dict, indices: list[int], kill: object = None) -> list:  # type: ignore[type-arg]
    return []


def test_dask_run_stops_when_the_last_worker_leaves(tmp_path: Path) -> None:
    """The scheduler had a worker when the run started; it leaves; the run says so and stops
    (an EnvironmentProblem: exit 2 at the command line) after the stated wait."""
    distributed = pytest.importorskip("distributed")
    from twin.errors import EnvironmentProblem
    from twin.experiment.runner import WorkerWait, drive, make_backend

    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None,
                                  silence_logs=40) as cluster:
        said: list[str] = []
        backend = make_backend(1, cluster.scheduler_address, WorkerWait(1.0), said.append)
        try:
            assert backend.workers == 1
            cluster.scale(0)
            assert _wait_until(lambda: backend._threads() == 0, 30)
            with pytest.raises(EnvironmentProblem, match="no worker for 1 s"):
                drive(backend, {}, [0, 1, 2], lambda row: None, None, said.append, task=_no_rows)
        finally:
            backend.abort()


def test_wait_for_workers_says_so_once_and_waits_until_one_joins() -> None:
    distributed = pytest.importorskip("distributed")
    import threading

    from twin.experiment.runner import WorkerWait, make_backend

    with distributed.LocalCluster(n_workers=0, threads_per_worker=1, processes=False, dashboard_address=None,
                                  silence_logs=40) as cluster:
        said: list[str] = []

        def join_later() -> None:
            _wait_until(lambda: bool(said), 60)
            time.sleep(0.5)  # longer than the 0.1 s wait: without --wait-for-workers the run would have stopped
            cluster.scale(1)

        helper = threading.Thread(target=join_later, daemon=True)
        helper.start()
        backend = make_backend(1, cluster.scheduler_address, WorkerWait(0.1, forever=True), said.append)
        try:
            assert backend.workers == 1
            assert len(said) == 2 and said[0].startswith("waiting for a Dask worker"), said
            assert said[1].startswith("a Dask worker joined"), said
        finally:
            backend.abort()
        helper.join(10)
