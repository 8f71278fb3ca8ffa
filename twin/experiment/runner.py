"""Monte-Carlo experiments: replications 0..N−1 of one scenario, stored as they finish.

Replication i draws from the Philox key of ``SeedSequence(seed)`` child i (:mod:`twin.rng`), so
replications are independent, each is a pure function of (resolved scenario, i), and variants
that share the seed get common random numbers for free. Nothing here depends on which process
ran a replication or in which order they finished: the final table is sorted by replication.

Backends (one code path, :func:`drive`, feeds them):

- serial (``workers=1``): in this process;
- local pool (``workers>1``): ``concurrent.futures.ProcessPoolExecutor`` with the ``fork``
  context on Linux; short replications are batched (a task aims at ≥ 0.5 s, at most
  :data:`MAX_BATCH` replications, see ``shared/design/performance.md``); a worker that dies breaks
  the pool: the replications it had in flight are reported and retried once in a new pool;
- Dask (``dask_address``): ``dask.distributed.Client(address)``, or ``"local"`` for a
  ``LocalCluster(processes=True)`` of ``workers`` single-threaded workers.

Workers receive the scenario as its resolved dict + hash (plus the folder its data files are
relative to) and re-validate it with :func:`twin.scenario.load_dict`, once per process
(:func:`loaded_in_worker`); a hash mismatch is a bug. A replication builds no table (only its
metrics are kept: ``run_replication(tables=False)``), so a small system's costs a fraction of a
millisecond.

Folder (``results/<scenario>/mc-<hash>-s<seed>`` or ``--label``)::

    experiment.json          what this folder holds (scenario, hash, seed, versions)
    scenario.resolved.yaml
    reps/chunk-00001.parquet rows of finished replications, a chunk every 1,000 rows or 30 s and when
                             the run stops (:mod:`twin.experiment.rows`); merged into one at the end
    replications.parquet     all requested replications, sorted by replication
    summary.parquet, summary.json
    run.json                 wall time, backend (not part of the results)
    COMPLETE                 written last: {"replications": N, ...}

A rerun of the same command reuses a COMPLETE folder, or resumes an incomplete one by computing
only the missing replications. ``overwrite`` deletes the folder first.
"""

from __future__ import annotations

import gc
import json
import math
import os
import signal
import sys
import threading
import time
from collections import Counter, deque
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor
from concurrent.futures import wait as futures_wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

import pandas as pd

import twin
from twin.errors import EnvironmentProblem, InputError
from twin import interrupt
from twin.experiment import stats
from twin.atomic import atomic_write_parquet
from twin.experiment.mc_folder import _read_json as _read_json  # re-exported for its users (rare)
from twin.experiment.mc_folder import assemble as assemble
from twin.experiment.mc_folder import prepare_folder as prepare_folder
from twin.experiment.mc_folder import read_row as read_row
from twin.experiment.mc_folder import write_row as write_row
from twin.experiment.mc_folder import _request, load_complete, summary_json
from twin.experiment.rows import RowStore
from twin.experiment.store import check_label as check_label  # re-exported for compare and sweep
from twin.experiment.store import folder_lock, write_json
from twin.limits import max_events_override, max_events_scope
from twin.scenario.loader import Loaded, _file_values, data_file_digests, load_dict

TASK_TARGET_S = 0.5
"""A pool task should take about this long: shorter replications are batched."""
MAX_BATCH = 1000
"""At most this many replications in one pool task (a batch's rows come back together)."""
KILL_ENV = "TWIN_TEST_KILL_REPLICATION"
"""Test-only hook (see :func:`_test_kill_hook`)."""
DEFAULT_MAX_REPS = 10_000


class WorkerLost(RuntimeError):
    """A replication's worker died twice: not retried again (an internal error, exit 3)."""


@dataclass
class ExperimentResult:
    folder: Path
    loaded: Loaded
    replications: pd.DataFrame
    summary: pd.DataFrame
    reused: bool = False
    computed: int = 0
    target_met: bool | None = None
    wall_s: float = 0.0
    notes: list[str] = field(default_factory=list)


def experiment_folder(results_root: Path | str, loaded: Loaded, label: str | None = None) -> Path:
    """``<results>/<scenario>/mc-<hash>-s<seed>`` (or ``<results>/<scenario>/<label>``)."""
    sc = loaded.scenario
    if label is not None:
        check_label(label)
    return Path(results_root) / sc.name / (label or f"mc-{loaded.hash}-s{sc.seed}")


def payload_of(loaded: Loaded) -> dict[str, Any]:
    """What a worker needs: plain data only (resolved dict, hash, base folder of data files; the data
    files' digests and the twin version, so a worker that validates to another hash can say why)."""
    return {"resolved": loaded.resolved, "hash": loaded.hash, "source": str(loaded.source),
            "base_dir": str(Path(loaded.source).parent.resolve()), "data_files": dict(loaded.data_files),
            "twin_version": twin.__version__, "max_events": max_events_override()}


# ---------------------------------------------------------------- worker side

def _test_kill_hook(index: int, kill: tuple[int, str] | None) -> None:
    """TEST ONLY. When the parent ran with ``TWIN_TEST_KILL_REPLICATION=<i>``, the pool worker
    about to run replication i exits abruptly (``os._exit(1)``) the first time only: the first
    worker to create the marker file (O_EXCL) dies, later attempts find it and carry on. Never
    active in serial runs (it would kill the command itself) or without the variable."""
    if kill is None or index != kill[0]:
        return
    try:
        fd = os.open(kill[1], os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        return
    os.close(fd)
    os._exit(1)


def replication_row(res: Any) -> dict[str, Any]:
    """One row of the replications table from a :class:`twin.sim.ReplicationResult`."""
    row: dict[str, Any] = {
        "replication": int(res.replication), "seed": int(res.seed), "scenario": str(res.scenario),
        "scenario_hash": str(res.scenario_hash), "twin_version": twin.__version__,
        "events_processed": int(res.events_processed),
    }
    for k in sorted(res.metrics):
        row[k] = float(res.metrics[k])
    return row


def run_batch(payload: Mapping[str, Any], indices: list[int],
              kill: tuple[int, str] | None = None) -> list[tuple[dict[str, Any], float]]:
    """Run replications ``indices`` of the payload's scenario; returns (row, wall seconds) each.

    This is the task every backend runs (serial calls it in-process)."""
    from twin.sim import run_replication

    loaded = loaded_in_worker(payload)
    out = []
    # run_replication collects garbage after each model (SimPy leaves cycles). A full collection
    # walks every tracked object of the process (~70-100 ms with pandas/scipy loaded, longer than
    # a small replication): freezing the heap that exists now limits it to the replication's own
    # objects. gc.freeze/unfreeze are O(1); unfreezing keeps long-lived processes (Dask workers,
    # notebooks) collecting normally afterwards.
    gc.freeze()
    try:
        for i in indices:
            _test_kill_hook(i, kill)
            t0 = time.perf_counter()
            with max_events_scope(payload.get("max_events")):
                res = run_replication(loaded.scenario, i, loaded.hash, tables=False, source=str(loaded.source))
            row = replication_row(res)
            del res
            out.append((row, time.perf_counter() - t0))
    finally:
        gc.unfreeze()
    return out


_WORKER_LOADED: dict[str, Loaded] = {}
"""The scenarios this process validated for its tasks, by payload (see :func:`loaded_in_worker`)."""
_WORKER_LOADED_MAX = 8


def loaded_in_worker(payload: Mapping[str, Any]) -> Loaded:
    """The validated scenario of a task's payload, validated once per process: a worker's later
    batches of the same run (and serial runs, one replication per call) reuse it. The key is the
    whole payload (resolved dict, hash, source, data-file digests, version), so a payload that
    differs in anything is validated afresh, and checked (:func:`check_same_scenario`). The data
    files are hashed again at every call: one that changed since is validated afresh, and named."""
    key = json.dumps(payload, sort_keys=True, default=str)
    loaded = _WORKER_LOADED.get(key)
    if loaded is not None and loaded.data_files and not _same_files(payload, loaded):
        del _WORKER_LOADED[key]
        loaded = None
    if loaded is None:
        loaded = load_dict(payload["resolved"], payload["source"], Path(payload["base_dir"]))
        check_same_scenario(payload, loaded)
        if len(_WORKER_LOADED) >= _WORKER_LOADED_MAX:
            _WORKER_LOADED.pop(next(iter(_WORKER_LOADED)))
        _WORKER_LOADED[key] = loaded
    return loaded


def _same_files(payload: Mapping[str, Any], loaded: Loaded) -> bool:
    try:
        return data_file_digests(payload["resolved"], Path(payload["base_dir"])) == loaded.data_files
    except OSError:  # gone or unreadable: validating afresh says so
        return False


def check_same_scenario(payload: Mapping[str, Any], loaded: Loaded) -> None:
    """In a worker: the scenario it validated (``loaded``) must have the run's hash. A data file
    that changed since the run read it, or a worker running another twin version, is the
    environment (:class:`EnvironmentProblem`, exit 2, naming the file or the versions); any other
    mismatch is a bug (RuntimeError, exit 3)."""
    if loaded.hash == payload["hash"]:
        return
    started = payload.get("data_files") or {}
    for fld, value in _file_values(payload["resolved"]):
        if started.get(fld) != loaded.data_files.get(fld):
            path = Path(payload["base_dir"]) / value
            raise EnvironmentProblem(str(path), fld, "the file changed while the run was using it (its contents "
                                     "are part of the scenario hash); rerun when it no longer changes")
    version = payload.get("twin_version", twin.__version__)
    if version != twin.__version__:
        raise EnvironmentProblem(str(payload["source"]), "", f"a worker runs twin {twin.__version__}, this run twin "
                                 f"{version}: install the same twin on the client and every worker")
    raise RuntimeError(f"the worker validates the scenario to hash {loaded.hash}, the client to {payload['hash']}, "
                       f"with the same data files and twin {twin.__version__}")


def _watch_parent(parent: int) -> None:
    while True:
        time.sleep(0.5)
        if os.getppid() != parent:
            os._exit(1)


def _worker_init(parent: int) -> None:
    """Pool worker start: Ctrl-C is the parent's business (it stops the pool), and a worker whose
    parent was killed (SIGKILL) exits instead of lingering as an orphan."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True, name="twin-parent-watch").start()


# ---------------------------------------------------------------- backends

class _Serial:
    name = "serial"
    lost_errors: tuple[type[BaseException], ...] = ()

    def __init__(self) -> None:
        self.workers = 1


class _Pool:
    name = "local"
    lost_errors: tuple[type[BaseException], ...] = (BrokenProcessPool,)

    def __init__(self, workers: int) -> None:
        import multiprocessing

        self.workers = workers
        self.ctx = multiprocessing.get_context("fork") if sys.platform.startswith("linux") else None
        self.ex = self._new()

    def _new(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(self.workers, mp_context=self.ctx, initializer=_worker_init,
                                   initargs=(os.getpid(),))

    def submit(self, task: Callable[..., Any], *args: Any) -> Future[Any]:
        return self.ex.submit(task, *args)

    def wait(self, futures: Iterable[Future[Any]], timeout: float) -> set[Future[Any]]:
        done, _ = futures_wait(list(futures), timeout=timeout, return_when=FIRST_COMPLETED)
        return set(done)

    def result(self, f: Future[Any]) -> Any:
        return f.result()

    def restart(self) -> None:
        self.ex.shutdown(wait=False, cancel_futures=True)
        self.ex = self._new()

    def abort(self) -> None:
        """Stop now: cancel queued tasks and terminate the workers (running replications are lost;
        finished ones are already stored).

        The worker processes are read before ``shutdown``, which forgets them (it sets
        ``_processes`` to None: reading them afterwards terminated nothing, and the interpreter
        then waited at exit for the running replications). Python >= 3.14's ``terminate_workers``
        copies them itself and shuts down, so it is called instead of ``shutdown``, not after it. The
        result pipe's write end is closed once the workers are gone (see the comment below)."""
        ex = self.ex
        terminate = getattr(ex, "terminate_workers", None)  # Python >= 3.14
        if terminate is not None:
            terminate()
            return
        procs = list((getattr(ex, "_processes", None) or {}).values())
        results = getattr(ex, "_result_queue", None)
        ex.shutdown(wait=False, cancel_futures=True)
        for p in procs:
            if p.is_alive():
                p.terminate()
        deadline = time.monotonic() + 1.0  # one grace period for all of them, then SIGKILL
        for p in procs:
            p.join(timeout=max(0.0, deadline - time.monotonic()))
        for p in procs:
            if p.is_alive():
                p.kill()
                p.join(timeout=5)
        # A worker killed while sending its result leaves half a message in the result pipe, and the
        # pool's manager thread then waits in recv() for the rest, which no one will send: the
        # interpreter hung at exit joining that thread. With every worker gone, closing this process's
        # own write end lets that recv() see end-of-file, and the manager thread ends.
        writer = getattr(results, "_writer", None)
        if writer is not None and not any(p.is_alive() for p in procs):
            try:
                writer.close()
            except OSError:
                pass

    def close(self) -> None:
        self.ex.shutdown(wait=True)


@dataclass(frozen=True)
class WorkerWait:
    """How long a run waits for a Dask worker: with none connected for ``seconds`` (from the
    start, or after the last one left) the run stops with an :class:`EnvironmentProblem` (exit 2),
    unless ``forever`` (``--wait-for-workers``), when it says once that it waits and waits."""

    seconds: float = 60.0
    forever: bool = False


DEFAULT_WORKER_WAIT = WorkerWait()
_WORKER_WAIT: ContextVar[WorkerWait] = ContextVar("twin_worker_wait", default=DEFAULT_WORKER_WAIT)


@contextmanager
def worker_wait(seconds: float = DEFAULT_WORKER_WAIT.seconds, forever: bool = False) -> Iterator[None]:
    """Within this block, Dask backends made by :func:`make_backend` wait ``seconds`` for a worker
    (or ``forever``). The command line sets it from ``--worker-wait-s`` and ``--wait-for-workers``
    around a command, so the experiment functions between (compare, sweep, forecast) need not pass it."""
    if not (math.isfinite(seconds) and seconds > 0):
        raise InputError("--worker-wait-s", str(seconds), "must be a positive number of seconds")
    token = _WORKER_WAIT.set(WorkerWait(float(seconds), bool(forever)))
    try:
        yield
    finally:
        _WORKER_WAIT.reset(token)


class _Dask:
    name = "dask"
    CHECK_EVERY_S = 1.0
    """How often a running experiment asks the scheduler how many workers it has (one round trip)."""

    def __init__(self, address: str, workers: int, wait: WorkerWait | None = None,
                 echo: Callable[[str], None] | None = None) -> None:
        try:
            import distributed
        except ImportError:
            raise InputError("--dask", address, "Dask is not installed: pip install 'twin[dask]'") from None
        self.distributed = distributed
        self.lost_errors = (distributed.KilledWorker,)
        self.address = address
        self.wait_for = wait or _WORKER_WAIT.get()
        self.echo = echo or (lambda s: print(s, file=sys.stderr, flush=True))
        self.cluster = None
        self.futures: list[Any] = []
        if address == "local":
            import logging

            self.cluster = distributed.LocalCluster(n_workers=max(1, workers), threads_per_worker=1,
                                                    processes=True, dashboard_address=None,
                                                    silence_logs=logging.ERROR)
            self.client = distributed.Client(self.cluster)
        else:
            from distributed.comm.addressing import parse_address
            from distributed.comm.registry import backends

            scheme = parse_address(address)[0]
            if scheme not in backends:
                raise InputError("--dask", address, f"unknown address scheme {scheme!r}; use 'local' or "
                                 f"<scheme>://host:port with a scheme of {', '.join(sorted(backends))}")
            try:
                self.client = distributed.Client(address, timeout="10s")
            except (OSError, TimeoutError) as exc:
                raise InputError("--dask", address, f"cannot connect to the Dask scheduler: {exc}") from None
        self.workers = 1
        self._no_worker_since: float | None = None
        self._said_waiting = False
        self._checked = -math.inf
        try:
            while not self._have_workers(time.monotonic()):
                time.sleep(0.2)
        except BaseException:
            self.abort()
            raise

    def _threads(self) -> int:
        """Worker threads the scheduler has now (a round trip to it)."""
        return int(self.client.scheduler_info(n_workers=0).get("total_threads", 0))

    def _have_workers(self, now: float) -> bool:
        """Ask the scheduler; True when it has a worker. Without one for longer than the stated
        wait, raise :class:`EnvironmentProblem` (or say once that the run waits, with ``forever``)."""
        self._checked = now
        n = self._threads()
        if n > 0:
            self.workers = n
            if self._said_waiting:
                self.echo(f"a Dask worker joined {self.address}; running")
            self._no_worker_since = None
            self._said_waiting = False
            return True
        if self._no_worker_since is None:
            self._no_worker_since = now
        waited = now - self._no_worker_since
        if self.wait_for.forever:
            if not self._said_waiting:
                self.echo(f"waiting for a Dask worker to join {self.address} (--wait-for-workers; Ctrl-C stops)")
                self._said_waiting = True
            return False
        if waited >= self.wait_for.seconds:
            raise EnvironmentProblem("--dask", self.address,
                                     f"the scheduler has had no worker for {self.wait_for.seconds:g} s; start workers "
                                     f"(dask worker {self.address}), or wait longer with --worker-wait-s S or "
                                     f"--wait-for-workers")
        return False

    def check_workers(self) -> None:
        """Between waits of a running experiment: stop (exit 2) when the scheduler has had no
        worker for the stated time (every worker left or died), at most one round trip a second."""
        now = time.monotonic()
        if now - self._checked >= self.CHECK_EVERY_S:
            self._have_workers(now)

    def submit(self, task: Callable[..., Any], *args: Any) -> Any:
        f = self.client.submit(task, *args, pure=False)
        self.futures.append(f)
        return f

    def wait(self, futures: Iterable[Any], timeout: float) -> set[Any]:
        fs = list(futures)
        try:
            done, _ = self.distributed.wait(fs, timeout=timeout, return_when="FIRST_COMPLETED")
        except TimeoutError:
            return set()
        return set(done)

    def result(self, f: Any) -> Any:
        return f.result()

    def restart(self) -> None:
        pass

    def abort(self) -> None:
        """Stop now. Tasks not started are cancelled on the scheduler. A LocalCluster made for this
        run has its worker processes closed at once (half a second's grace, then killed), not after
        the default graceful close that waits for running replications. Workers of a scheduler given
        by address are not this run's to kill: a replication already running there finishes on its
        worker and its result is dropped."""
        try:
            if self.futures:
                self.client.cancel(self.futures, force=True)
            self.client.close()
        finally:
            if self.cluster is not None:
                cluster = self.cluster
                nannies = list(cluster.workers.values())

                async def close_now() -> None:
                    import asyncio

                    await asyncio.gather(*[n.close(timeout=0.5, reason="twin-abort") for n in nannies],
                                         return_exceptions=True)

                try:
                    cluster.sync(close_now)
                finally:
                    cluster.close()

    def close(self) -> None:
        try:
            self.client.close()
        finally:
            if self.cluster is not None:
                self.cluster.close()


def make_backend(workers: int, dask_address: str | None = None, wait: WorkerWait | None = None,
                 echo: Callable[[str], None] | None = None) -> Any:
    """The backend of a run: a Dask cluster (``dask_address``: a scheduler, or 'local' for a
    LocalCluster of ``workers`` processes; bad input names ``--dask``; ``wait`` defaults to the
    :func:`worker_wait` in force), else a local pool of ``workers`` processes, else serial. Pool and
    Dask backends are closed with ``close()`` (or ``abort()`` on an error or interrupt)."""
    if dask_address:
        return _Dask(dask_address, workers, wait, echo)
    if workers > 1:
        return _Pool(workers)
    return _Serial()


def shut(backend: Any, error: bool) -> None:
    """Release a backend: ``abort()`` after an error or interrupt (queued work is dropped, workers
    stop), else ``close()``."""
    if backend is None or isinstance(backend, _Serial):
        return
    if error:
        backend.abort()
    else:
        backend.close()


def drive(backend: Any, payload: Mapping[str, Any], todo: list[int], on_row: Callable[[dict[str, Any]], None],
          kill: tuple[int, str] | None, echo: Callable[[str], None],
          task: Callable[..., list[tuple[dict[str, Any], float]]] = run_batch) -> None:
    """Run replications ``todo`` on ``backend``, calling ``on_row`` as each batch finishes.

    ``task(payload, indices, kill)`` runs in the workers and returns (row, wall seconds) per
    replication (:func:`run_batch` for Monte Carlo; the forecast passes its own). Batches adapt to
    the replication time; a worker that dies has its replications retried once."""
    timed = [0.0, 0]  # seconds and count of the replications timed so far

    def per_rep_s() -> float | None:
        return timed[0] / timed[1] if timed[1] else None

    if isinstance(backend, _Serial):  # batches too: a task's set-up is paid once per batch
        pos = 0
        while pos < len(todo):
            per = per_rep_s()
            k = 1 if per is None else max(1, min(int(TASK_TARGET_S / max(per, 1e-6)), MAX_BATCH))
            for row, wall in task(payload, todo[pos:pos + k]):
                timed[0] += wall
                timed[1] += 1
                on_row(row)
                interrupt.check()  # between replications: an interrupt a callback swallowed stops here
            pos += k
        return
    queue = deque(todo)
    pending: dict[Any, list[int]] = {}
    lost = Counter[int]()
    in_flight = 2 * backend.workers

    def batch_size() -> int:
        per = per_rep_s()
        if per is None:
            return 1
        tail = max(1, math.ceil(len(queue) / (2 * backend.workers)))
        k: int = max(1, min(int(TASK_TARGET_S / max(per, 1e-6)), tail, MAX_BATCH))
        return k

    check_workers = getattr(backend, "check_workers", None)
    while queue or pending:
        interrupt.check()  # every wait (0.5 s at most): an interrupt a callback swallowed stops here
        if check_workers is not None:
            check_workers()
        pool_gone = False
        while queue and len(pending) < in_flight:
            k = batch_size()
            idx = [queue.popleft() for _ in range(min(k, len(queue)))]
            try:
                pending[backend.submit(task, dict(payload), idx, kill)] = idx
            except backend.lost_errors:  # the pool broke since the last wait: not this batch's fault
                queue.extendleft(reversed(idx))
                pool_gone = True
                break
        done = backend.wait(pending, timeout=0.5) if pending and not pool_gone else set()
        broken: list[int] = []
        for f in sorted(done, key=lambda f: pending[f][0]):
            idx = pending.pop(f)
            try:
                rows = backend.result(f)
            except backend.lost_errors:
                broken += idx
                pool_gone = isinstance(backend, _Pool)
                continue
            for row, wall in rows:
                timed[0] += wall
                timed[1] += 1
                on_row(row)
        if pool_gone:
            # the whole pool is gone: everything still in flight failed with it (or finished first)
            futures_wait(list(pending), timeout=10)
            for f in sorted(pending, key=lambda f: pending[f][0]):
                idx = pending[f]
                if f.done() and not f.cancelled() and f.exception() is None:
                    for row, wall in f.result():
                        on_row(row)
                else:
                    broken += idx
            pending.clear()
        if broken:
            broken.sort()
            for i in broken:
                lost[i] += 1
            twice = [i for i in broken if lost[i] > 1]
            if twice:
                raise WorkerLost(f"a worker died again while running replications {twice}; not retrying")
            echo(f"warning: a worker process died while replications {broken} were in flight; "
                 f"retrying them once" + (" in a new pool" if isinstance(backend, _Pool) else ""))
            queue.extendleft(reversed(broken))
        if pool_gone:
            backend.restart()


# ---------------------------------------------------------------- progress

def _progress_bar(total: int, done: int, label: str) -> Any:
    from rich.console import Console
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TextColumn,
                               TimeRemainingColumn)
    from rich.text import Text

    class Rate(ProgressColumn):
        def render(self, task: Any) -> Text:
            s = task.speed
            return Text(f"{s:.2f} rep/s" if s else "  - rep/s")

    bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), Rate(),
                   TextColumn("ETA"), TimeRemainingColumn(), console=Console(stderr=True), transient=True)
    bar.start()
    task = bar.add_task(label, total=total, completed=done)
    return bar, task


# ---------------------------------------------------------------- the experiment

def run_experiment(loaded: Loaded, reps: int, workers: int = 1, dask_address: str | None = None,
                   folder: Path | str | None = None, overwrite: bool = False,
                   target_ci: Mapping[str, float] | None = None, progress: bool = True,
                   max_reps: int = DEFAULT_MAX_REPS, echo: Callable[[str], None] | None = None,
                   results_root: Path | str = "results") -> ExperimentResult:
    """Run (or reuse, or resume) replications 0..reps−1 of ``loaded`` into ``folder``.

    With ``target_ci`` ({metric: half-width}) more replications are added, in stages decided only
    by the replications already in the table (so a resumed run takes the same stages), until every
    95 % t-interval half-width is at most its target or ``max_reps`` is reached.

    Ctrl-C stops the workers at once, keeps every stored replication, prints how to resume and
    re-raises KeyboardInterrupt.

    The folder is locked while the run writes it (:func:`twin.experiment.store.folder_lock`): an
    identical run started meanwhile waits, then reuses the complete folder."""
    say = echo or (lambda s: print(s, file=sys.stderr, flush=True))
    if reps < 2:
        raise InputError("--reps", str(reps), "a Monte Carlo needs at least 2 replications")
    if workers < 1:
        raise InputError("--workers", str(workers), "must be >= 1")
    if target_ci:
        for m, h in target_ci.items():
            if not (isinstance(h, (int, float)) and math.isfinite(h) and h > 0):
                raise InputError("--target-ci", m, f"half-width must be a positive number, got {h!r}")
        if max_reps < reps:
            raise InputError("--max-reps", str(max_reps), f"must be >= --reps ({reps})")
    t_start = time.perf_counter()
    folder = Path(folder) if folder is not None else experiment_folder(results_root, loaded)
    if folder.exists() and not folder.is_dir():
        raise InputError(str(folder), "", "exists and is not a folder")
    with folder_lock(folder, say):
        return _run_locked(loaded, reps, workers, dask_address, folder, overwrite, target_ci, progress, max_reps,
                           say, t_start)


def _run_locked(loaded: Loaded, reps: int, workers: int, dask_address: str | None, folder: Path, overwrite: bool,
                target_ci: Mapping[str, float] | None, progress: bool, max_reps: int, say: Callable[[str], None],
                t_start: float) -> ExperimentResult:
    """:func:`run_experiment` once it holds the folder's lock."""
    note = prepare_folder(folder, loaded, overwrite)
    if note:
        say(note)
    request = _request(reps, target_ci, max_reps)

    prev = load_complete(folder)
    if prev is not None:
        table, summ, done = prev
        if all(done.get(k) == v for k, v in request.items()) and done.get("scenario_hash") == loaded.hash:
            return ExperimentResult(folder, loaded, table, summ, reused=True, computed=0,
                                    target_met=done.get("target_met"), wall_s=time.perf_counter() - t_start)
    (folder / "COMPLETE").unlink(missing_ok=True)

    store = RowStore(folder, loaded.hash)
    rows = store.load()

    kill: tuple[int, str] | None = None
    if os.environ.get(KILL_ENV, "").strip().isdigit():
        k = int(os.environ[KILL_ENV])
        kill = (k, str((folder / f".test-kill-{k}.marker").resolve()))

    backend: Any = None
    bar = None
    computed = 0
    payload = payload_of(loaded)
    n_target = reps
    target_met: bool | None = None
    try:
        while True:
            todo = [i for i in range(n_target) if i not in rows]
            if todo:
                if backend is None:
                    backend = make_backend(workers, dask_address, echo=say)
                if progress and sys.stderr.isatty() and bar is None:
                    bar = _progress_bar(n_target, n_target - len(todo), loaded.scenario.name)
                elif bar is not None:
                    bar[0].update(bar[1], total=n_target, completed=n_target - len(todo))

                def on_row(row: dict[str, Any]) -> None:
                    nonlocal computed
                    store.add(row)
                    computed += 1
                    if bar is not None:
                        bar[0].advance(bar[1])

                drive(backend, payload, todo, on_row, kill, say)
            table = assemble(rows[i] for i in range(n_target))
            if not target_ci:
                break
            for m in target_ci:
                if m not in table.columns:
                    raise InputError("--target-ci", m,
                                     "no such metric; available: " + ", ".join(stats.metric_columns(table)))
            need = max(stats.replications_needed(table[m].to_numpy(), h, cap=max_reps + 1)
                       for m, h in target_ci.items())
            target_met, n_target = stats.next_stage(need, n_target, max_reps)
            if target_met is not None:
                break
    except KeyboardInterrupt:
        shut(backend, error=True)
        backend = None
        if bar is not None:
            bar[0].stop()
            bar = None
        store.flush()
        stored = len(store.stored)
        print(f"\ninterrupted: {stored} finished replications are kept in {folder / 'reps'}; "
              f"run the same command again to resume (only the missing ones are computed){_command_hint()}",
              file=sys.stderr, flush=True)
        raise
    except BaseException:
        shut(backend, error=True)
        backend = None
        try:
            store.flush()  # keep what finished (a full disk may refuse it too: the first error is the one raised)
        except OSError:
            pass
        raise
    finally:
        if bar is not None:
            bar[0].stop()
        shut(backend, error=False)
    mixed = sorted(set(table["twin_version"].astype(str)))
    notes = []
    if len(mixed) > 1:
        notes.append(f"warning: replications from different twin versions are mixed: {', '.join(mixed)} "
                     f"(use --overwrite to recompute them all with {twin.__version__})")
        say(notes[-1])
    summ = stats.summarise(table)
    atomic_write_parquet(folder / "replications.parquet", table)
    store.compact()
    atomic_write_parquet(folder / "summary.parquet", summ)
    write_json(folder / "summary.json", summary_json(loaded, table, summ, target_ci, target_met))
    wall = time.perf_counter() - t_start
    write_json(folder / "run.json", {"wall_s": wall, "computed": computed,
                                     "backend": "dask" if dask_address else ("local" if workers > 1 else "serial"),
                                     "workers": workers, "python": sys.executable})
    write_json(folder / "COMPLETE", {"replications": int(len(table)), "scenario_hash": loaded.hash,
                                     "target_met": target_met, **request})
    return ExperimentResult(folder, loaded, table, summ, reused=False, computed=computed, target_met=target_met,
                            wall_s=wall, notes=notes)


def _command_hint() -> str:
    """``: twin montecarlo ...`` when running as the twin command, else nothing."""
    import shlex

    prog = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else ""
    if prog not in ("twin", "cli.py", "__main__.py") or len(sys.argv) < 2:
        return ""
    return ":\n  twin " + " ".join(shlex.quote(a) for a in sys.argv[1:])


def with_seed(loaded: Loaded, seed: int) -> Loaded:
    """The same scenario with another seed (re-validated; its hash changes with the seed)."""
    if loaded.scenario.seed == seed:
        return loaded
    doc = dict(loaded.resolved)
    doc["seed"] = int(seed)
    return load_dict(doc, str(loaded.source), Path(loaded.source).parent)
