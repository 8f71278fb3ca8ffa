"""Benchmark: the coupling floor under issue 41's thermal targets.

What the rest of the model spends *reacting* to the thermal model, whatever the thermal model itself costs:
a thermal-on run of a hall records every output of the thermal model, i.e. each publication of its speed
caps (``SpeedSource.changed`` of the ``thermal`` source: the nodes and their caps) and each write of its GPU
power caps (``ITPower.set_cap("thermal", ...)``), at its simulated instant. The same hall with
``cooling.thermal: false`` is then run with those outputs replayed at their instants (one SimPy process, the
outputs of an instant applied together, in their recorded order): the workload re-rates the jobs, the cluster
keeps its speed bookkeeping, the IT power refreshes and the fans and the power chain follow, as in the
thermal-on run, but no temperature is computed (``tests/test_bench_floor.py``: the replayed run's thermal
slowdown is the thermal-on run's). Its loop time, less the replay's own event mechanics (the same process run
with the outputs not applied, ``null``), over the thermal-off loop is the **floor**: no implementation of the
thermal model that publishes the same outputs can make the thermal-on hall cheaper than that, so a target
ratio leaves the thermal model itself ``target − floor`` of the thermal-off loop, over its ``updates`` and
``wakes`` (its entry points: a load change, a zone or fan change, a crossing due). ``floor_with_kernels`` adds
the time the thermal-on run spends inside the thermal model's compiled kernels (:func:`kernel_s`: each kernel
called from Python timed, less the replayed run's own kernel time: the fans and the IT power under caps),
the ratio of a thermal model whose Python around its kernels cost nothing.

What the replay leaves out is counted as the thermal model's own cost: the energy of silent crossings, which
the thermal model settles into the IT power's accounts itself, heat-accelerated part ageing and thermal trips
(the replayed run's failures are the thermal-off run's). And the floor overstates the reaction by a little:
outputs the thermal-on run makes inside a load change's own event (before the job re-arms its timer once)
come in an event of their own here, so a running job re-arms once more (a cancelled timer SimPy still pops).
Not gated: it explains the targets (``benchmarks/README.md``). :func:`resolution` (not in the
benchmark run) replays the outputs as a thermal model with a speed resolution would publish them
(:func:`coarsen`): what fewer pace changes would save in the reaction and move in goodput. The halls
are issue 41's frozen copies (``benchmarks/halls/``).

    python benchmarks/bench_floor.py [--quick]
"""

from __future__ import annotations

import gc
import json
import statistics
import sys
import time
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from twin.model.cluster import SpeedSource  # noqa: E402
from twin.model.cooling.gpu import GpuState  # noqa: E402
from twin.model.it_power import IT_POWER, ITPower  # noqa: E402
from twin.scenario.loader import load_scenario  # noqa: E402
from twin.sim import Model  # noqa: E402
from twin.validation.framework import IDENTICAL_GPU_SETS  # noqa: E402

from benchmarks.bench_thermal import run_timed  # noqa: E402

HALLS = ROOT / "benchmarks" / "halls"

Output = tuple[int, "np.ndarray | None", np.ndarray]  # (0 speed caps / 1 IT power caps, nodes, values)


def record(path: Path, sets: list[str]) -> tuple[list[tuple[float, list[Output]]], dict[str, int]]:
    """Run the hall with thermal on and return the thermal model's outputs grouped by instant (h, in order) and
    their counts (``speed``: publications of speed caps, ``it_caps``: writes of power caps, ``instants``;
    ``updates`` and ``wakes``: the thermal model's entry points, ``GpuState.update`` and ``GpuState._wake``)."""
    out: list[tuple[float, list[Output]]] = []
    counts = {"speed": 0, "it_caps": 0, "updates": 0, "wakes": 0}
    sc = load_scenario(path, sets).scenario
    env: Any = None

    def put(item: Output) -> None:
        now = env._now
        if out and out[-1][0] == now:
            out[-1][1].append(item)
        else:
            out.append((now, [item]))

    changed, set_cap, update, wake = SpeedSource.changed, ITPower.set_cap, GpuState.update, GpuState._wake

    def rec_changed(self: SpeedSource, nodes: np.ndarray) -> None:
        if self.name == "thermal":
            counts["speed"] += 1
            put((0, np.array(nodes, dtype=np.int64), self.caps[nodes].copy()))
        changed(self, nodes)

    def rec_set_cap(self: ITPower, source: str, nodes: np.ndarray | None, cap_w: Any) -> None:
        if source == "thermal":
            counts["it_caps"] += 1
            put((1, None if nodes is None else np.array(nodes, dtype=np.int64), np.array(cap_w, dtype=np.float64)))
        set_cap(self, source, nodes, cap_w)

    def count(key: str, fn: Callable[..., None]) -> Callable[..., None]:
        def counted(*args: Any, **kw: Any) -> None:
            counts[key] += 1
            fn(*args, **kw)
        return counted

    patches = {(SpeedSource, "changed"): rec_changed, (ITPower, "set_cap"): rec_set_cap,
               (GpuState, "update"): count("updates", update), (GpuState, "_wake"): count("wakes", wake)}
    saved = {key: getattr(*key) for key in patches}
    try:
        for (cls, name), fn in patches.items():
            setattr(cls, name, fn)
        model = Model(sc)  # (built after the patches: the model binds some of these methods at build)
        env = model.engine.env
        model.run()
    finally:
        for (cls, name), fn in saved.items():
            setattr(cls, name, fn)
    counts["instants"] = len(out)
    return out, counts


def build(path: Path, sets: list[str], replay: list[tuple[float, list[Output]]] | None = None,
          apply: bool = True) -> Model:
    """The hall's model, built; with ``replay``, the recorded outputs replayed into it as it runs (``apply``
    False: the replay's events only, nothing applied)."""
    model = Model(load_scenario(path, sets).scenario)
    if replay is not None:
        env = model.engine.env
        if apply:  # (the null replay takes no speed source: the cluster's bookkeeping stays the thermal-off run's)
            src = model.cluster.speed_source("thermal")
            it = model.service(IT_POWER)
            assert it is not None, "a hall with cooling has an IT power"

        def proc() -> Generator[Any, None, None]:
            for t_h, items in replay:
                d = t_h - env._now
                if d > 0:
                    yield env.timeout(d)
                if apply:
                    for kind, nodes, vals in items:
                        if kind == 0:
                            assert nodes is not None
                            src.caps[nodes] = vals
                            src.changed(nodes)
                        else:
                            it.set_cap("thermal", nodes, vals)

        env.process(proc())
    return model


def _loop_s(path: Path, sets: list[str], replay: list[tuple[float, list[Output]]] | None = None,
            apply: bool = True) -> float:
    """Loop time (s) of :func:`build`'s model."""
    model = build(path, sets, replay, apply)
    loop, _ = run_timed(model)
    del model
    gc.collect()
    return loop


def kernel_s(path: Path, sets: list[str], replay: list[tuple[float, list[Output]]] | None = None) -> tuple[float, int]:
    """Seconds the hall (:func:`build`'s model) spends inside compiled kernels called from Python (``twin.kernels*``:
    their dispatch and arithmetic, timed around each call), and the number of those calls. Every compiled kernel
    the run calls is loaded in a warm-up first; the timers then replace each kernel in the modules that call it."""
    from numba.core.registry import CPUDispatcher

    _loop_s(path, sets + ["horizon_days=2"], replay)
    acc = [0.0, 0]
    clock = time.perf_counter

    def timed(fn: Any) -> Callable[..., Any]:
        def call(*args: Any) -> Any:
            t0 = clock()
            out = fn(*args)
            acc[0] += clock() - t0
            acc[1] += 1
            return out
        return call

    saved: list[tuple[dict[str, Any], str, Any]] = []
    wrappers: dict[int, Callable[..., Any]] = {}
    for name, mod in list(sys.modules.items()):
        if not name.startswith("twin.") or mod is None:
            continue
        ns = vars(mod)
        for key, val in list(ns.items()):
            if isinstance(val, CPUDispatcher):
                saved.append((ns, key, val))
                ns[key] = wrappers.setdefault(id(val), timed(val))
    try:
        _loop_s(path, sets, replay)
    finally:
        for ns, key, val in saved:
            ns[key] = val
    return acc[0], int(acc[1])


def hall_floor(path: Path, sets: list[str], reps: int, reference: list[str] | None = None) -> dict[str, Any]:
    """The floor of one hall: medians of ``reps`` interleaved runs of thermal on, off, the null replay and the
    replay; ``reference``: the sets of a thermal-on reference for the ratio (the R spread's identical GPUs),
    else thermal off."""
    outputs, counts = record(path, sets)
    off = sets + ["cooling.thermal=false"]
    variants: dict[str, Callable[[], float]] = {
        "on": lambda: _loop_s(path, sets),
        "off": lambda: _loop_s(path, off),
        "null": lambda: _loop_s(path, off, outputs, apply=False),
        "replay": lambda: _loop_s(path, off, outputs),
    }
    if reference is not None:
        variants["reference"] = lambda: _loop_s(path, reference)
    warm = ["horizon_days=2"]  # (each variant's kernels and caches loaded before any timed run)
    _loop_s(path, sets + warm)
    _loop_s(path, off + warm, outputs)
    times: dict[str, list[float]] = {k: [] for k in variants}
    for _ in range(reps):
        for name, fn in variants.items():
            times[name].append(fn())
    med = {k: statistics.median(v) for k, v in times.items()}
    ref = med.get("reference", med["off"])
    reaction = med["replay"] - med["null"]  # the rest of the model reacting to the outputs, s
    k_on, n_on = kernel_s(path, sets)
    k_replay, n_replay = kernel_s(path, off, outputs)
    own = med["on"] - med["off"] - reaction  # the thermal model's own cost, s
    kernels = k_on - k_replay  # of which inside its compiled kernels (dispatch and arithmetic), s
    return {"loop_s_median": med, **counts,
            "ratio": med["on"] / ref,
            "floor": (med["off"] + reaction) / ref,
            "floor_with_kernels": (med["off"] + reaction + kernels) / ref,
            "thermal_own_s": own,
            "thermal_kernels_s": kernels,
            "thermal_kernel_calls": n_on - n_replay,
            "reaction_s": reaction}


def coarsen(outputs: list[tuple[float, list[Output]]], step: float,
            n_nodes: int) -> tuple[list[tuple[float, list[Output]]], int]:
    """The recorded outputs as a thermal model with a speed resolution of ``step`` (a fraction of full speed)
    would publish them: each speed cap below 1 rounded down to a multiple of ``step``, and a publication whose
    nodes' rounded caps all stay as they were dropped (the power caps as recorded). Returns the outputs and the
    speed publications kept. An indication of what fewer pace changes would save and move, not a model: a
    thermal model with that resolution would also change its crossings and its power."""
    cur = np.ones(n_nodes)
    out: list[tuple[float, list[Output]]] = []
    kept = 0
    for t_h, items in outputs:
        new: list[Output] = []
        for kind, nodes, vals in items:
            if kind == 0:
                assert nodes is not None
                q = np.where(vals < 1.0, np.floor(vals / step) * step, 1.0)
                if np.array_equal(q, cur[nodes]):
                    continue
                cur[nodes] = q
                kept += 1
                new.append((kind, nodes, q))
            else:
                new.append((kind, nodes, vals))
        if new:
            out.append((t_h, new))
    return out, kept


def resolution(path: Path, sets: list[str], steps: list[float], reps: int = 3) -> dict[str, Any]:
    """What a speed resolution would save in the reaction and move in the results (:func:`coarsen`): per step (0:
    the outputs as recorded), the speed publications kept, the reaction's time (the replayed loop less the null
    replay's, medians of ``reps``) and the replayed run's goodput and thermal slowdown."""
    outputs, counts = record(path, sets)
    off = sets + ["cooling.thermal=false"]
    n_nodes = load_scenario(path, off).scenario.cluster.n_nodes
    _loop_s(path, off + ["horizon_days=2"], outputs)
    null = statistics.median(_loop_s(path, off, outputs, apply=False) for _ in range(reps))
    res: dict[str, Any] = {}
    for step in [0.0, *steps]:
        outs, kept = (outputs, counts["speed"]) if step == 0.0 else coarsen(outputs, step, n_nodes)
        loop = statistics.median(_loop_s(path, off, outs) for _ in range(reps))
        model = build(path, off, outs)
        model.run()
        met = model.result(tables=False).metrics
        res[f"{step:g}"] = {"speed_publications": kept, "reaction_s": loop - null, "goodput": met["goodput"],
                            "slowdown_thermal": met["goodput.slowdown.thermal"]}
    return res


def run(quick: bool = True) -> dict[str, Any]:
    """The floor of the air and N+1 power halls (a year; quick: 60 days), the R spread against identical GPUs,
    and (full run) the 16,384-GPU hall kept busy (90 days)."""
    days = 60 if quick else 365
    reps = 3
    horizon = [f"horizon_days={days}"]
    res = {
        "air": hall_floor(HALLS / "air.yaml", horizon, reps),
        "power": hall_floor(HALLS / "power-n1.yaml", horizon, reps),
        "rsigma": hall_floor(HALLS / "air.yaml", horizon + IDENTICAL_GPU_SETS[1:], reps,
                             reference=horizon + IDENTICAL_GPU_SETS),
    }
    if not quick:
        res["air16k"] = hall_floor(HALLS / "air-16k.yaml", [], reps)
    return {"horizon_days": days, "repetitions": reps, **res}


if __name__ == "__main__":
    print(json.dumps(run(quick="--quick" in sys.argv[1:]), indent=2))
