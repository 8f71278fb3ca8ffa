"""``twin rare``: the probability of a rare named event by importance sampling through the simulator.

The scenario is run with the chosen node parts' exponential failure means divided by θ, and/or the
power chain's chosen quantities scaled by theirs (:mod:`twin.experiment.rare_power`: unit lives, arrivals,
demand probabilities): a biased scenario, validated like any other, with its own hash. Each replication
reports whether the event happened (:mod:`twin.experiment.rare_events`) and, per biased part type, its
failures and its exposure (unit-hours healthy), from which :mod:`twin.experiment.rare_math` gives the
likelihood ratio (the power chain's: :func:`twin.experiment.rare_power.log_weight`). Replications run through the Monte-Carlo machinery (:func:`twin.experiment.runner.drive`):
serial, a local pool or Dask, stored in chunks as they finish, resumed by rerunning the command.

A few plain (unbiased) replications are run in this process to measure the cost of a plain one, so
that the work-normalised variance compares like with like.

Folder ``results/<scenario>/rare-<biased hash>-<event digest>-s<seed>`` (or ``--label``)::

    experiment.json, scenario.resolved.yaml   the biased scenario (kind montecarlo)
    rare.config.json                          event, parameters, biased parts, θ, true rates
    reps/chunk-*.parquet                      rows as they finish
    replications.parquet                      rare.hit, rare.log_w, rare.cpu_s, failures and exposure
    rare.json                                 the estimate (p, interval, ESS, relative error, gain)
    COMPLETE
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd

import twin
from twin.atomic import atomic_write_parquet
from twin.errors import InputError
from twin.experiment import rare_events, rare_math, rare_power
from twin.experiment.rows import RowStore
from twin.experiment.runner import (
    _read_json, assemble, drive, loaded_in_worker, make_backend, payload_of, prepare_folder, shut,
)
from twin.experiment.store import check_label, folder_lock, write_json
from twin.scenario.loader import Loaded, load_dict

PLAIN_REPS = 20
"""Plain replications run to measure the cost of one (default of ``--plain-reps``)."""
AIM_FAILURES = 3.0
"""``--bias auto``: θ makes the biased parts fail this many times on average over the horizon."""


@dataclass(frozen=True)
class Bias:
    """Which node parts are biased, by how much, and their true rates (1/h)."""

    parts: tuple[str, ...]
    theta: float
    rates_per_h: dict[str, float]
    units: tuple[rare_power.UnitBias, ...] = ()
    """Biased facility units of the power chain (:mod:`twin.experiment.rare_power`), each with its θ."""


def choose_bias(loaded: Loaded, parts: Sequence[str] | None, theta: float | None,
                aim_failures: float = AIM_FAILURES, units: Mapping[str, float | None] | None = None) -> Bias:
    """The bias of ``parts`` (default: every node part with an exponential life, unless facility ``units``
    are biased) by ``theta`` (None: :func:`twin.experiment.rare_math.auto_theta`), and of the power chain's
    ``units`` (kind -> θ or None, :func:`twin.experiment.rare_power.choose`). Bad input (a part that is not
    a node part, not exponential, or has a common-cause β; a unit that cannot be biased): InputError."""
    sc = loaded.scenario
    unit_biases = tuple(rare_power.choose(loaded.resolved, sc.horizon_h, units, aim_failures)) if units else ()
    if unit_biases and not parts:
        return Bias((), 1.0, {}, unit_biases)
    node_parts = sc.cluster.node.parts
    names = list(parts) if parts else [n for n, s in node_parts.items() if s.failure.dist == "exponential"]
    if not names:
        raise InputError("--bias-part", "", "no node part with an exponential life to bias; name one")
    rates: dict[str, float] = {}
    total = 0.0
    for name in names:
        spec = node_parts.get(name)
        if spec is None:
            raise InputError("--bias-part", name, "not a node part of the scenario; node parts: "
                             + ", ".join(node_parts))
        if spec.failure.dist != "exponential":
            raise InputError("--bias-part", name, f"its life is {spec.failure.dist}: the likelihood ratio of a "
                             "rate scaling is exact for exponential lives only")
        if spec.common_cause_beta:
            raise InputError("--bias-part", name, "has a common-cause beta: not supported by the biasing")
        for k, pool in enumerate(sc.cluster.pools):  # one rate per part for the hall: not a pool's own law
            if name in pool.node.parts:
                raise InputError("--bias-part", name, f"node pool {pool.name!r} gives it its own failure law "
                                 f"(cluster.pools.{k}.node.parts.{name}): the biasing holds one rate per part")
        rates[name] = 1.0 / float(spec.failure.mean())
        total += rates[name] * spec.count * sc.cluster.n_nodes
    th = rare_math.auto_theta(total, sc.horizon_h, aim_failures) if theta is None else float(theta)
    if not (math.isfinite(th) and th > 0):
        raise InputError("--bias", str(theta), "must be a positive number or 'auto'")
    return Bias(tuple(names), th, rates, unit_biases)


def biased_scenario(loaded: Loaded, bias: Bias) -> Loaded:
    """The scenario with each biased part's exponential mean divided by θ and each biased facility quantity
    scaled by its θ (validated again)."""
    doc = rare_power.biased_doc(loaded.resolved, list(bias.units)) if bias.units else copy.deepcopy(loaded.resolved)
    for name in bias.parts:
        fail = doc["cluster"]["node"]["parts"][name]["failure"]
        fail["mean_h"] = float(fail["mean_h"]) / bias.theta
    return load_dict(doc, str(loaded.source), Path(loaded.source).parent)


def exposure(model: Any, name: str) -> tuple[int, float]:
    """(failures, unit-hours at risk) of node part ``name`` in a finished replication: the ages at its
    failures plus, for units healthy at the horizon, the age of their running life. Raises when
    another model moved a drawn life (ageing, health, an injection): the likelihood ratio would be wrong."""
    pop = model.parts[name]
    if pop.frailty is not None:
        raise InputError("--bias-part", name, "its node's health frailty scales its rate: not supported")
    if pop.moved:
        raise InputError("--bias-part", name, "another model moved its drawn failure times (ageing, health, "
                         "an injection): the likelihood ratio of a rate scaling does not hold")
    rec = model.recorder
    pat = re.compile(rf"\.node\d+\.{re.escape(name)}\d+$")
    ages = [v for k, path, v in zip(rec._kind, rec._path, rec._value) if k == "fail" and pat.search(path)]
    ok = pop.healthy
    open_h = float(np.sum(model.sc.horizon_h - pop.install_h[ok]))
    return len(ages), float(np.sum(ages)) + open_h


def run_rare_batch(payload: Mapping[str, Any], indices: list[int],
                   kill: tuple[int, str] | None = None) -> list[tuple[dict[str, Any], float]]:
    """The worker task (:func:`twin.experiment.runner.drive`): replications ``indices`` of the payload's
    (biased) scenario, each a row with the event, the log weight, CPU seconds, failures and exposure."""
    from twin.sim import Model

    loaded = loaded_in_worker({k: v for k, v in payload.items() if k != "rare"})
    cfg = payload["rare"]
    ev = rare_events.EVENTS[cfg["event"]]
    theta = float(cfg["theta"])
    out = []
    for i in indices:
        t0, c0 = time.perf_counter(), time.process_time()
        model = Model(loaded.scenario, i, loaded.hash)
        model.run()
        hit = bool(ev.fn(model, cfg["params"]))
        row: dict[str, Any] = {"replication": i, "seed": loaded.scenario.seed, "scenario": loaded.scenario.name,
                               "scenario_hash": loaded.hash, "twin_version": twin.__version__,
                               "events_processed": int(model.events)}
        log_w = 0.0
        for name, rate in cfg["rates_per_h"].items():
            n, e = exposure(model, name)
            log_w += float(rare_math.log_likelihood_ratio(n, e, rate, theta))
            row[f"rare.failures.{name}"] = float(n)
            row[f"rare.exposure_h.{name}"] = e
        log_w += rare_power.log_weight(model, cfg.get("units", []), row)
        del model
        row["rare.hit"] = float(hit)
        row["rare.log_w"] = log_w
        row["rare.cpu_s"] = time.process_time() - c0
        out.append((row, time.perf_counter() - t0))
    return out


@dataclass
class RareResult:
    folder: Path
    estimate: rare_math.RareEstimate
    bias: Bias
    event: str
    params: dict[str, Any]
    replications: pd.DataFrame
    plain_hits: int
    plain_reps: int
    reused: bool = False
    computed: int = 0


def _config(loaded: Loaded, event: str, params: Mapping[str, Any], bias: Bias) -> dict[str, Any]:
    out = {"event": event, "params": dict(params), "parts": list(bias.parts), "theta": bias.theta,
           "rates_per_h": dict(bias.rates_per_h), "scenario_hash": loaded.hash}
    if bias.units:  # (absent without facility biasing: the folders of node-part estimates keep their names)
        out["units"] = [b.as_dict() for b in bias.units]
    return out


def rare_folder(results_root: Path | str, loaded: Loaded, biased: Loaded, cfg: Mapping[str, Any],
                label: str | None = None) -> Path:
    """``<results>/<scenario>/rare-<biased hash>-<event digest>-s<seed>`` (or ``<label>``)."""
    if label is not None:
        check_label(label)
        return Path(results_root) / loaded.scenario.name / label
    digest = hashlib.blake2b(json.dumps(cfg, sort_keys=True).encode(), digest_size=4).hexdigest()
    return Path(results_root) / loaded.scenario.name / f"rare-{biased.hash}-{cfg['event']}-{digest}-s{loaded.scenario.seed}"


def run_rare(loaded: Loaded, event: str, params: Mapping[str, str], reps: int, parts: Sequence[str] | None = None,
             theta: float | None = None, aim_failures: float = AIM_FAILURES, workers: int = 1,
             dask_address: str | None = None, folder: Path | str | None = None, overwrite: bool = False,
             plain_reps: int = PLAIN_REPS, echo: Callable[[str], None] | None = None,
             results_root: Path | str = "results", units: Mapping[str, float | None] | None = None) -> RareResult:
    """Estimate P(``event``) over ``reps`` biased replications (reused or resumed from ``folder``); ``units``:
    the power chain's biased quantities (kind -> θ, None: automatic; :mod:`twin.experiment.rare_power`)."""
    say = echo or (lambda s: print(s, file=sys.stderr, flush=True))
    if reps < 2:
        raise InputError("--reps", str(reps), "an estimate needs at least 2 replications")
    if plain_reps < 1:
        raise InputError("--plain-reps", str(plain_reps), "at least 1 plain replication measures its cost")
    if workers < 1:
        raise InputError("--workers", str(workers), "must be >= 1")
    resolved = rare_events.resolve(event, params)
    bias = choose_bias(loaded, parts, theta, aim_failures, units)
    biased = biased_scenario(loaded, bias)
    cfg = _config(loaded, event, resolved, bias)
    folder = Path(folder) if folder is not None else rare_folder(results_root, loaded, biased, cfg)
    with folder_lock(folder, say):
        note = prepare_folder(folder, biased, overwrite)
        if note:
            say(note)
        stored_cfg = _read_json(folder / "rare.config.json")
        if stored_cfg is not None and stored_cfg != json.loads(json.dumps(cfg)):
            raise InputError(str(folder), "--label", "folder holds another rare-event estimate (event, parameters "
                             "or bias differ); choose another --label or use --overwrite")
        write_json(folder / "rare.config.json", cfg)
        done = _read_json(folder / "COMPLETE")
        if done is not None and done.get("replications") == reps:
            table = pd.read_parquet(folder / "replications.parquet")
            info = _read_json(folder / "rare.json") or {}
            est = rare_math.RareEstimate(**info["estimate"])
            return RareResult(folder, est, bias, event, resolved, table, int(info["plain_hits"]),
                              int(info["plain_reps"]), reused=True)
        (folder / "COMPLETE").unlink(missing_ok=True)
        store = RowStore(folder, biased.hash)
        rows = store.load()
        payload = {**payload_of(biased), "rare": cfg}
        todo = [i for i in range(reps) if i not in rows]
        computed = 0
        backend: Any = None
        try:
            if todo:
                backend = make_backend(workers, dask_address, echo=say)

                def on_row(row: dict[str, Any]) -> None:
                    nonlocal computed
                    store.add(row)
                    computed += 1

                drive(backend, payload, todo, on_row, None, say, task=run_rare_batch)
        except BaseException:
            shut(backend, error=True)
            backend = None
            store.flush()
            raise
        finally:
            shut(backend, error=False)
        table = assemble(rows[i] for i in range(reps))
        # plain replications (true scenario, θ = 1): the cost of one, measured here
        plain_cfg = {**cfg, "theta": 1.0, "units": []}
        plain = run_rare_batch({**payload_of(loaded), "rare": plain_cfg}, list(range(plain_reps)))
        plain_cpu = float(np.mean([r["rare.cpu_s"] for r, _ in plain]))
        plain_hits = int(sum(r["rare.hit"] for r, _ in plain))
        est = rare_math.estimate(table["rare.hit"].to_numpy() > 0, table["rare.log_w"].to_numpy(),
                                 table["rare.cpu_s"].to_numpy(), plain_cpu)
        atomic_write_parquet(folder / "replications.parquet", table)
        store.compact()
        write_json(folder / "rare.json", {"kind": "rare", "scenario": loaded.scenario.name,
                                          "scenario_hash": loaded.hash, "biased_hash": biased.hash, **cfg,
                                          "level": rare_math.LEVEL, "plain_reps": plain_reps,
                                          "plain_hits": plain_hits, "estimate": est.as_dict()})
        write_json(folder / "COMPLETE", {"replications": reps, "scenario_hash": biased.hash})
        return RareResult(folder, est, bias, event, resolved, table, plain_hits, plain_reps, computed=computed)
