"""Robustness of the runners (issue 22, items 2, 3, 5 and 6): interrupts stop every parallel
backend's workers, a Dask scheduler without workers is reported instead of waited on forever,
environment problems (a full disk, a permission, a file changed during a run) are exit 2 with one
line, and a results folder is locked while a run writes it.

Nothing here measures speed: waits are polled up to generous bounds, so a loaded machine only makes
the tests slower, never wrong.
"""

from __future__ import annotations

import errno
import json
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


def _wait_until(cond, bound_s: float = 60.0) -> bool:  # type: ignore[no-untyped-def]
    """Poll ``cond`` until true (a generous bound: it returns as soon as ``cond`` holds)."""
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
    # the executor's management thread marks the futures of the killed workers after it sees them gone:
    # polled like every wait here (within 10 s, far before the 60 s tasks could have finished)
    assert _wait_until(lambda: all(f.done() for f in futures))


_HALF_SENT = """
import struct, sys, time
from twin.experiment.runner import _Pool
POOL = None
def half_sent():
    # a result cut short: the header promises 1000 bytes, then the worker waits to be killed
    POOL.ex._result_queue._writer._send(struct.pack("!i", 1000))
    time.sleep(300)
if __name__ == "__main__":
    POOL = _Pool(1)
    future = POOL.submit(half_sent)
    while not future.running():
        time.sleep(0.05)
    time.sleep(0.5)
    POOL.abort()
    print("aborted", flush=True)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork pool")
def test_pool_abort_with_a_result_half_sent_lets_the_interpreter_exit(tmp_path: Path) -> None:
    """A worker killed while sending its result (CI, 0.11.0: SIGTERM during a run printed
    'interrupted' and then hung at exit): the pool's manager thread waited in recv() for the rest of
    the message. After abort() the interpreter must exit; the timeout only guards against that hang."""
    import subprocess

    script = tmp_path / "half_sent.py"
    script.write_text(_HALF_SENT)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "aborted"


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


# ----------------------------------------------------------------------------- item 5: the environment

def _no_space(*args: object, **kwargs: object) -> None:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # as write(2) gives it: no file named


def test_full_disk_while_storing_a_replication_is_exit_2_one_line(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    import pyarrow.parquet as pq

    scen = _scenario(tmp_path)
    monkeypatch.setenv("TWIN_LOG_DIR", str(tmp_path / "logs"))
    monkeypatch.setattr(pq, "write_table", _no_space)
    monkeypatch.setenv("TWIN_TEST_FLUSH_REPS", "1")  # the first replication's row is stored at once
    code, err, _ = run_cli(["montecarlo", str(scen), "--reps", "2", "--results", str(tmp_path / "res"), "--quiet",
                            "--no-report"])
    assert code == 2, err
    assert len(err) == 1, err
    assert err[0].startswith("error: ") and "No space left on device" in err[0], err
    assert "chunk-00001.parquet" in err[0], err  # names the file it was writing
    assert not (tmp_path / "logs").exists()  # not a bug: no traceback saved


def test_full_disk_while_writing_run_results_is_exit_2_one_line(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    scen = _scenario(tmp_path)
    monkeypatch.setenv("TWIN_LOG_DIR", str(tmp_path / "logs"))
    monkeypatch.setattr(os, "fsync", _no_space)
    code, err, _ = run_cli(["run", str(scen), "--results", str(tmp_path / "res"), "--quiet"])
    assert code == 2, err
    assert len(err) == 1 and "No space left on device" in err[0] and str(tmp_path / "res") in err[0], err
    assert not (tmp_path / "logs").exists()


def test_unreadable_scenario_injected_eacces_is_exit_2_one_line(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """EACCES as the system gives it (injected: the tests may run as root, which reads anything)."""
    scen = _scenario(tmp_path)
    real = Path.read_bytes

    def read_bytes(self: Path) -> bytes:
        if self.name == scen.name:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(self))
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    monkeypatch.setenv("TWIN_LOG_DIR", str(tmp_path / "logs"))
    code, err, _ = run_cli(["run", str(scen), "--results", str(tmp_path / "res")])
    assert code == 2, err
    assert err == [f"error: {scen}: Permission denied (check the permissions of that path)"], err


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root reads a chmod 000 file")
def test_unreadable_scenario_chmod_000_is_exit_2_one_line(tmp_path: Path) -> None:
    scen = _scenario(tmp_path)
    scen.chmod(0)
    try:
        code, err, _ = run_cli(["run", str(scen), "--results", str(tmp_path / "res")])
    finally:
        scen.chmod(0o644)
    assert code == 2 and len(err) == 1 and "Permission denied" in err[0] and str(scen) in err[0], err


def test_an_internal_error_log_goes_under_the_results_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug (here an OSError whose errno is not the environment's) is exit 3; its traceback goes
    to <--results>/logs, not to results/logs in the working directory."""
    import twin.experiment.single as single

    def bug(*args: object, **kwargs: object) -> None:
        raise OSError(errno.EBADF, os.strerror(errno.EBADF))

    scen = _scenario(tmp_path)
    monkeypatch.delenv("TWIN_LOG_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(single, "write_results", bug)
    code, err, _ = run_cli(["run", str(scen), "--results", str(tmp_path / "elsewhere"), "--quiet"])
    assert code == 3, err
    logs = list((tmp_path / "elsewhere" / "logs").glob("twin-error-*.log"))
    assert len(logs) == 1 and "Bad file descriptor" in logs[0].read_text(), err
    assert str(logs[0]) in err[0]
    assert not (tmp_path / "results").exists()


def test_data_file_changed_during_a_run_is_named_exit_2(tmp_path: Path) -> None:
    """A worker re-reads the scenario's data files; one that changed since the run read it is named
    (an EnvironmentProblem that crosses the process boundary whole), not reported as a bug."""
    from concurrent.futures import ProcessPoolExecutor

    from twin.errors import EnvironmentProblem
    from twin.experiment.runner import payload_of, run_batch
    from twin.scenario import load_scenario

    (tmp_path / "repair.csv").write_text("hours\n10\n20\n30\n")
    scen = _scenario(tmp_path)
    doc = yaml.safe_load(scen.read_text())
    doc["cluster"]["node"]["parts"]["gpu"]["repair"]["time"] = {"dist": "empirical", "file": "repair.csv"}
    scen.write_text(yaml.safe_dump(doc, sort_keys=False))
    payload = payload_of(load_scenario(scen))
    assert run_batch(payload, [0])  # unchanged: runs
    (tmp_path / "repair.csv").write_text("hours\n10\n20\n31\n")
    with ProcessPoolExecutor(1) as ex:
        with pytest.raises(EnvironmentProblem) as info:
            ex.submit(run_batch, payload, [1]).result()
    line = info.value.one_line()
    assert line.startswith(f"{tmp_path / 'repair.csv'}: cluster.node.parts.gpu.repair.time.file: the file changed"), line


# ----------------------------------------------------------------------------- item 6: the folder lock

def _cli_argv(scen: Path, results: Path, reps: int) -> list[str]:
    return [sys.executable, "-m", "twin.cli", "montecarlo", str(scen), "--reps", str(reps), "--results", str(results),
            "--quiet", "--no-report"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SIGSTOP and /proc")
def test_two_identical_runs_one_computes_the_other_waits_and_reuses(tmp_path: Path) -> None:
    """Run A holds the lock; it is paused (SIGSTOP) so run B surely starts while A still writes;
    B says which run holds the folder and waits; A resumes and finishes; B reuses A's results. The
    final table is the one an undisturbed run gives."""
    import signal
    import subprocess

    import pandas as pd

    from twin.experiment.runner import experiment_folder, run_experiment
    from twin.experiment.store import lock_path
    from twin.scenario import load_scenario

    scen = _scenario(tmp_path, days=3650, nodes=16, name="medium")  # ~0.3 s a replication
    folder = experiment_folder(tmp_path / "res", load_scenario(scen))
    env = {**os.environ, "TWIN_LOG_DIR": str(tmp_path / "logs"), "PYTHONPATH": str(Path(__file__).parents[1]),
           "TWIN_TEST_FLUSH_REPS": "1"}  # a chunk per replication: A has stored one when it is paused
    a_err, b_err = tmp_path / "a.err", tmp_path / "b.err"
    with a_err.open("w") as ae, b_err.open("w") as be:
        a = subprocess.Popen(_cli_argv(scen, tmp_path / "res", 8), stdout=subprocess.PIPE, stderr=ae, text=True,
                             env=env, cwd=tmp_path)
        b = None
        try:
            assert _wait_until(lambda: lock_path(folder).is_file() and any((folder / "reps").glob("chunk-*.parquet"))
                               or a.poll() is not None, 120)
            assert a.poll() is None, a_err.read_text()
            a.send_signal(signal.SIGSTOP)  # A holds the lock and has work left
            b = subprocess.Popen(_cli_argv(scen, tmp_path / "res", 8), stdout=subprocess.PIPE, stderr=be, text=True,
                                 env=env, cwd=tmp_path)
            assert _wait_until(lambda: "waiting:" in b_err.read_text() or b.poll() is not None, 120), b_err.read_text()
            a.send_signal(signal.SIGCONT)
            a_out, _ = a.communicate(timeout=300)
            b_out, _ = b.communicate(timeout=300)
        finally:
            for p in (a, b):
                if p is not None and p.poll() is None:
                    p.kill()
                    p.wait()
    assert a.returncode == 0 and b.returncode == 0, (a_err.read_text(), b_err.read_text())
    waiting = [ln for ln in b_err.read_text().splitlines() if ln.startswith("waiting:")]
    assert len(waiting) == 1 and f"process {a.pid} on " in waiting[0], b_err.read_text()
    assert "8 computed, 0 reused" in a_out.splitlines()[0], a_out
    assert "reused the complete folder" in b_out.splitlines()[0], b_out
    assert a_out.splitlines()[1:] == b_out.splitlines()[1:]  # the same table printed
    assert not lock_path(folder).exists()
    alone = run_experiment(load_scenario(scen), 8, folder=tmp_path / "alone", progress=False)
    pd.testing.assert_frame_equal(pd.read_parquet(folder / "replications.parquet"), alone.replications,
                                  check_exact=True)


def _dead_pid() -> int:
    import subprocess

    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


@pytest.mark.parametrize("kind", ["pid-ended", "heartbeat-old"])
def test_a_stale_lock_is_taken_over(tmp_path: Path, kind: str) -> None:
    import json
    import platform

    import twin.experiment.store as store
    from twin.experiment.runner import run_experiment
    from twin.scenario import load_scenario

    folder = tmp_path / "res" / "mc"
    lock = store.lock_path(folder)
    lock.parent.mkdir(parents=True)
    now = time.time()
    if kind == "pid-ended":  # a run on this host killed a moment ago: its heartbeat is fresh, its process gone
        record = {"pid": _dead_pid(), "host": platform.node(), "heartbeat": now, "token": "old"}
    else:  # a run on another machine that stopped beating long ago (its process id means nothing here)
        record = {"pid": os.getpid(), "host": "another-host.invalid", "heartbeat": now - 2 * store.LOCK_STALE_S,
                  "token": "old"}
    lock.write_text(json.dumps(record))
    said: list[str] = []
    res = run_experiment(load_scenario(_scenario(tmp_path)), 2, folder=folder, progress=False, echo=said.append)
    assert res.computed == 2
    why = "has ended" if kind == "pid-ended" else "no heartbeat for"
    assert any(s.startswith(f"note: took over the lock of {folder}") and why in s for s in said), said
    assert not lock.exists()


def test_a_live_lock_is_not_taken_over(tmp_path: Path) -> None:
    """A lock with a live process and a fresh heartbeat is not taken over: a second holder (here a
    thread of the same process) says it waits, and gets the lock only once the first releases it."""
    import threading

    import twin.experiment.store as store

    folder = tmp_path / "res" / "mc"
    said: list[str] = []
    order: list[str] = []
    with store.folder_lock(folder, said.append):
        lock = store.lock_path(folder)
        assert lock.is_file()
        record = json.loads(lock.read_text())
        assert record["pid"] == os.getpid() and record["host"] and record["heartbeat"] <= time.time()

        def second() -> None:
            with store.folder_lock(folder, said.append, poll_s=0.05):
                order.append("second")

        t = threading.Thread(target=second)
        t.start()
        assert _wait_until(lambda: any(s.startswith("waiting:") for s in said), 30), said
        order.append("first")
    t.join(30)
    assert order == ["first", "second"]
    assert not any("took over" in s for s in said), said
    assert not store.lock_path(folder).exists()


def test_twin_run_holds_the_lock_of_its_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``twin run`` locks its results folder too: a stale lock on it is taken over (with the note) and
    released at the end."""
    import platform

    import twin.experiment.store as store
    from twin.scenario import load_scenario

    scen = _scenario(tmp_path)
    ld = load_scenario(scen)
    folder = store.run_folder(tmp_path / "res", ld.scenario.name, ld.hash, ld.scenario.seed, None)
    lock = store.lock_path(folder)
    lock.parent.mkdir(parents=True)
    lock.write_text(json.dumps({"pid": _dead_pid(), "host": platform.node(), "heartbeat": time.time()}))
    monkeypatch.setenv("TWIN_LOG_DIR", str(tmp_path / "logs"))
    code, err, _ = run_cli(["run", str(scen), "--results", str(tmp_path / "res"), "--quiet"])
    assert code == 0, err
    assert any(ln.startswith(f"note: took over the lock of {folder}") for ln in err), err
    assert (folder / "summary.json").is_file() and not lock.exists()
