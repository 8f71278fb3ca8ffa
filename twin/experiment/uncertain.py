"""``twin decide A.yaml B.yaml ... --objective METRIC``: a decision under uncertain inputs (issue 46).

An outer loop of D draws of the inputs declared in the options' ``uncertainty:`` sections
(:mod:`twin.scenario.uncertainty`: scrambled Sobol' by default, a Latin hypercube with ``--design
lhs``; one dimension per key of the sorted union of every option's keys), the same draw applied to
every option (paired), and an inner loop of R replications under common random numbers: draw d,
replication r of every option is replication index i = d·R + r of the seed of the FIRST option
(its ``SeedSequence`` child i), so the options of a draw share their random numbers and the draws
their none (each draw's inner noise is independent of the others', which the estimators assume).
Cost: D × R × K replications (defaults D = 64, R = 2: 384 runs for three options).

Every (option, draw, replication) is one unit of one run of the experiment driver
(:func:`twin.experiment.runner.drive`: serial, local processes or Dask, batched, a lost worker's
units retried), whose rows are stored per option as they finish (:class:`RowStore`, chunks of
``options/<k>/reps``) keyed by i: a rerun computes only the missing units (resume), and a larger D
(``--target-ci`` doubling D, Sobol' draws being a prefix-stable sequence) reuses every finished
draw. A worker rebuilds a unit's scenario from its option's document (the scenario file merged,
with the ``--set`` overrides) and the draw's ``--set`` expressions, so a draw changes the scenario
exactly as ``--set`` would.

``--target-ci H``: after each stage, when the recommended option's P(best) interval is wider than
±H, D doubles (up to ``--max-draws``). The analysis is :mod:`twin.experiment.value_of_information`.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd

import twin
from twin.atomic import atomic_write_parquet
from twin.errors import InputError
from twin.experiment.store import check_label, folder_lock, versions, write_json
from twin.scenario.loader import Loaded, apply_set, load_dict, load_scenario, merged_document
from twin.scenario.uncertainty import (Uncertainty, check_against, design, fixed_value, overrides,
                                      saltelli_base_rows, union_keys, value_at)

DEFAULT_DRAWS = 64
"""D: outer draws of the inputs (a power of 2 keeps a Sobol' design balanced)."""
DEFAULT_REPS = 2
"""R: inner replications per draw and option (the estimators remove their noise; 2 lets them measure it)."""
DEFAULT_MAX_DRAWS = 1024
DESIGNS = ("sobol", "lhs", "saltelli")
"""Outer designs: scrambled Sobol' points, a Latin hypercube, or Saltelli's design for Sobol' indices
(``--draws`` N base points give N·(P + 2) draws)."""


@dataclass
class Option:
    label: str
    path: str
    loaded: Loaded
    doc: dict[str, Any]
    """The scenario document (merged ``extends`` chain, ``--set`` applied, the first option's seed)."""
    unc: Uncertainty | None


@dataclass
class DecideResult:
    folder: Path
    options: list[Option]
    keys: list[str]
    draws: int
    reps: int
    objective: str
    decision: Any
    """twin.experiment.value_of_information.Decision."""
    target_met: bool | None = None
    computed: int = 0
    notes: list[str] = field(default_factory=list)


def measured_inputs(path: str) -> Uncertainty:
    """The ``uncertainty:`` section written in ``path`` itself (``twin decide --inputs``: a calibrated
    scenario from ``twin calibrate``, or any YAML file with that section), not what it inherits: the
    inputs the file's data measured. Errors name the file."""
    from twin.scenario.loader import read_yaml

    p = Path(path)
    doc = read_yaml(p)  # the scenario reader's guards: size, alias bombs, depth, duplicate keys
    if not isinstance(doc, dict) or not isinstance(doc.get("uncertainty"), dict):
        raise InputError(str(p), "uncertainty", "--inputs needs a file with an uncertainty: section (twin calibrate "
                         "writes one in calibrated.yaml)")
    try:
        unc = Uncertainty.model_validate(doc["uncertainty"])
    except ValueError as exc:
        raise InputError(str(p), "uncertainty", str(exc).splitlines()[0]) from None
    if unc.groups:
        raise InputError(str(p), "uncertainty.groups", "--inputs takes measured inputs (uncertainty.inputs) only: a "
                         "group is an assumption of a scenario, declare it there")
    return unc


def _numeric(found: bool, value: Any) -> bool:
    return found and isinstance(value, (int, float)) and not isinstance(value, bool)


def with_measured(unc: Uncertainty | None, measured: Uncertainty, paths: set[str]) -> Uncertainty | None:
    """``unc`` with the measured distributions of ``paths`` in place of what it declares for them (a path
    it holds in a group leaves the group; the rest of the group keeps its draw)."""
    if not paths:
        return unc
    doc = unc.model_dump(mode="json") if unc is not None else {"inputs": {}, "groups": {}}
    doc["groups"] = {g: {k: v for k, v in m.items() if k not in paths} for g, m in doc["groups"].items()}
    doc["inputs"] = {**doc["inputs"], **{k: measured.inputs[k].model_dump(mode="json") for k in sorted(paths)}}
    return Uncertainty.model_validate(doc)


def load_options(paths: Sequence[str], sets: Sequence[str], inputs: str | None = None) -> tuple[list[Option], list[str]]:
    """Load every option with the ``--set`` overrides and the first one's seed; check that a key
    declared by several options has the same distribution in each. ``inputs``: a file whose
    ``uncertainty.inputs`` (measured, e.g. by ``twin calibrate``) replace the distributions of the same
    paths in every option where the path is a field (:func:`measured_inputs`)."""
    from twin.experiment.compare import variant_labels

    if len(paths) < 2:
        raise InputError("decide", "scenarios", "give at least two option files")
    loadeds = [load_scenario(p, list(sets)) for p in paths]
    seed = loadeds[0].scenario.seed
    labels = variant_labels(paths, loadeds)
    out = []
    notes = [f"common random numbers: draw d, replication r of every option is replication d·R + r of seed {seed} "
             f"(the first option's)"]
    fixed = {e.partition("=")[0].strip() for e in sets}
    measured = measured_inputs(inputs) if inputs is not None else None
    applied: dict[str, list[str]] = {}
    for lab, p, ld in zip(labels, paths, loadeds):
        doc = merged_document(p)
        for s in sets:
            doc = apply_set(doc, s)
        if ld.scenario.uncertainty is not None:  # every path must lead to a field of this option as loaded
            check_against(ld.scenario.uncertainty, ld.scenario.model_dump(mode="json"), doc, str(p))
        doc.pop("uncertainty", None)
        unc = ld.scenario.uncertainty
        if measured is not None:
            resolved = ld.scenario.model_dump(mode="json")
            here = {q for q in measured.inputs if q not in fixed and _numeric(*fixed_value(q, doc, resolved)[:2])}
            applied.update({q: applied.get(q, []) + [lab] for q in here})
            unc = with_measured(unc, measured, here)
        if ld.scenario.seed != seed:
            notes.append(f"  {p}: its seed {ld.scenario.seed} is replaced by {seed}")
        doc["seed"] = seed
        out.append(Option(lab, str(p), ld, doc, _without(unc, fixed)))
    if measured is not None:
        unused = sorted(q for q in measured.inputs if q not in applied and q not in fixed)
        if unused:
            raise InputError(str(inputs), f"uncertainty.inputs.{unused[0]}",
                             "not a field of any option: " + ", ".join(unused))
        notes.append(f"measured inputs from {inputs}: " + "; ".join(f"{q} in {', '.join(v)}"
                                                                     for q, v in sorted(applied.items())))
    if all(o.unc is None or not o.unc.keys() for o in out):
        raise InputError(str(paths[0]), "uncertainty", "no option declares an uncertainty: section: nothing to draw "
                         "(twin compare compares options with every input known)")
    first: dict[str, tuple[str, Any]] = {}
    for o in out:
        for key, members in (o.unc.keys() if o.unc else {}).items():
            spec = {p: d.model_dump(mode="json") for p, d in members.items()}
            if key in first and first[key][1] != spec:
                raise InputError(o.path, f"uncertainty: {key}", f"declared differently in {first[key][0]}: a key "
                                 "declared in several options gets the same draw, so it needs the same distribution")
            first.setdefault(key, (o.path, spec))
    for o in out:  # the ends of every distribution must make a valid scenario (the schema's ranges)
        check_ends(o)
    return out, notes


def _without(unc: Uncertainty | None, fixed: set[str]) -> Uncertainty | None:
    """The section less the fields a ``--set`` fixes (a ``--set`` of an uncertain path takes it as known)."""
    if unc is None or not fixed & set(unc.fields()):
        return unc
    doc = unc.model_dump(mode="json")
    doc["inputs"] = {k: v for k, v in doc["inputs"].items() if k not in fixed}
    doc["groups"] = {g: {k: v for k, v in m.items() if k not in fixed} for g, m in doc["groups"].items()}
    return Uncertainty.model_validate(doc)


def check_ends(opt: Option) -> None:
    """The option at every input's lowest and at every input's highest value validates (errors name the file
    and the ``--set`` of the draw)."""
    if opt.unc is None:
        return
    keys = sorted(opt.unc.keys())
    for u in (0.0, 1.0 - 1e-12):
        cell_loaded(opt, keys, np.full(len(keys), u))


def cell_doc(doc: Mapping[str, Any], unc: Uncertainty | None, keys: Sequence[str], u_row: np.ndarray,
             resolved: Mapping[str, Any]) -> dict[str, Any]:
    """The option's document with draw ``u_row`` applied (its ``--set`` expressions)."""
    out = copy.deepcopy(dict(doc))
    for expr in overrides(unc, list(keys), u_row, dict(resolved), doc):
        out = apply_set(out, expr)
    return out


def cell_loaded(opt: Option, keys: Sequence[str], u_row: np.ndarray) -> Loaded:
    sets = overrides(opt.unc, list(keys), u_row, opt.loaded.resolved, opt.doc)
    try:
        return load_dict(cell_doc(opt.doc, opt.unc, keys, u_row, opt.loaded.resolved), opt.path,
                         Path(opt.path).parent)
    except InputError as exc:
        raise InputError(opt.path, f"uncertainty draw --set {' '.join(sets)}",
                         f"the drawn values do not make a valid scenario: {exc.message}") from None


def study_key(opt: Option, keys: Sequence[str], kind: str, reps: int, draws: int) -> str:
    """Identity of an option's stored units: its scenario, the draws' design and R (D too for a Latin
    hypercube, which is not a prefix-stable sequence, and for Saltelli's design, whose row i depends on N)."""
    spec = {"hash": opt.loaded.hash, "seed": opt.doc["seed"], "keys": list(keys), "design": kind, "reps": reps,
            "draws": draws if kind != "sobol" else None,
            "unc": opt.unc.model_dump(mode="json") if opt.unc is not None else None}
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:12]


def decide_folder(results_root: Path | str, options: Sequence[Option], label: str | None, kind: str, reps: int) -> Path:
    if label is not None:
        check_label(label)
        return Path(results_root) / "decide" / label
    blob = "|".join([o.loaded.hash for o in options] + [kind, str(reps)] +
                    [json.dumps(o.unc.model_dump(mode="json"), sort_keys=True) if o.unc else "" for o in options])
    return Path(results_root) / "decide" / f"dec-{hashlib.sha256(blob.encode()).hexdigest()[:12]}-s{options[0].doc['seed']}"


# ---------------------------------------------------------------------- worker side

_CELLS: dict[str, Loaded] = {}
_CELLS_MAX = 32


def decide_batch(payload: Mapping[str, Any], indices: list[int], kill: Any = None) -> list[tuple[dict[str, Any], float]]:
    """Run units ``indices`` (g = i·K + k: option k, replication index i = d·R + r) of the payload's
    study; returns (row, wall seconds) each, the row keyed by i with ``_option`` = k."""
    import gc

    from twin.experiment.runner import replication_row
    from twin.sim import run_replication

    K, R = int(payload["K"]), int(payload["R"])
    keys = list(payload["keys"])
    out = []
    gc.freeze()
    try:
        for g in indices:
            k, i = g % K, g // K
            d = i // R
            opt = payload["options"][k]
            u_row = np.asarray(payload["U"][d], dtype=float)
            ck = f"{payload['study'][k]}:{d}"
            loaded = _CELLS.get(ck)
            if loaded is None:
                unc = Uncertainty.model_validate(opt["unc"]) if opt["unc"] is not None else None
                doc = cell_doc(opt["doc"], unc, keys, u_row, opt["resolved"])
                loaded = load_dict(doc, opt["source"], Path(opt["base_dir"]))
                if len(_CELLS) >= _CELLS_MAX:
                    _CELLS.pop(next(iter(_CELLS)))
                _CELLS[ck] = loaded
            t0 = time.perf_counter()
            res = run_replication(loaded.scenario, i, loaded.hash, tables=False)
            row = replication_row(res)
            row["scenario_hash"] = payload["study"][k]
            row["_option"] = k
            out.append((row, time.perf_counter() - t0))
    finally:
        gc.unfreeze()
    return out


# ---------------------------------------------------------------------- the study

def _payload(options: Sequence[Option], keys: Sequence[str], U: np.ndarray, reps: int, study: Sequence[str]) -> dict[str, Any]:
    return {"K": len(options), "R": reps, "keys": list(keys), "U": U.tolist(), "study": list(study),
            "options": [{"doc": o.doc, "unc": o.unc.model_dump(mode="json") if o.unc else None,
                         "resolved": o.loaded.resolved, "source": o.path,
                         "base_dir": str(Path(o.path).parent.resolve())} for o in options]}


def objective_of(options: Sequence[Option], objective: str | None) -> str:
    if objective:
        return objective
    return "cost.per_useful_gpu_hour" if all(o.loaded.scenario.costs is not None for o in options) else "goodput"


def draws_table(options: Sequence[Option], keys: Sequence[str], U: np.ndarray) -> pd.DataFrame:
    """One row per draw: the uniforms (``u:<key>``) and every field's drawn value (``<path>``)."""
    cols: dict[str, Any] = {"draw": np.arange(len(U), dtype=np.int64)}
    for j, key in enumerate(keys):
        cols[f"u:{key}"] = U[:, j]
    for j, key in enumerate(keys):
        opt = next(o for o in options if o.unc is not None and key in o.unc.keys())
        assert opt.unc is not None
        for path, d in opt.unc.keys()[key].items():
            fixed = _fixed(opt, path)
            vals = [value_at(d, float(u), fixed) for u in U[:, j]]
            cols[path] = vals if all(isinstance(v, (int, float)) for v in vals) else [json.dumps(v) for v in vals]
    return pd.DataFrame(cols)


def _fixed(opt: Option, path: str) -> Any:
    from twin.scenario.uncertainty import fixed_value

    return fixed_value(path, opt.doc, opt.loaded.resolved)[1]


def input_labels(options: Sequence[Option], keys: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Per key: its fields, distributions (as text), sources and the value at u for flip points."""
    out = {}
    for key in keys:
        opt = next(o for o in options if o.unc is not None and key in o.unc.keys())
        assert opt.unc is not None
        members = opt.unc.keys()[key]
        out[key] = {"fields": list(members), "sources": sorted({d.source for d in members.values()}),
                    "declared_by": [o.label for o in options if o.unc is not None and key in o.unc.keys()],
                    "dist": {p: d.model_dump(mode="json", exclude={"source", "opposite"}) for p, d in members.items()}}
    return out


def run_decide(paths: Sequence[str], sets: Sequence[str] = (), objective: str | None = None,
               draws: int = DEFAULT_DRAWS, reps: int = DEFAULT_REPS, kind: str = "sobol", workers: int = 1,
               dask_address: str | None = None, results_root: Path | str = "results", label: str | None = None,
               overwrite: bool = False, target_ci: float | None = None, max_draws: int = DEFAULT_MAX_DRAWS,
               echo: Callable[[str], None] = print, analysis_samples: int | None = None,
               inputs: str | None = None, constraints: Sequence[str] = (),
               confidence: float = 0.95) -> DecideResult:
    """Run (or resume) the study and write its folder (module docstring); returns the analysis."""
    from twin.experiment import decide as rule
    from twin.experiment.rows import RowStore
    from twin.experiment.runner import assemble, drive, make_backend, shut
    from twin.experiment.value_of_information import SAMPLES, analyse, probability_half_width

    if reps < 2:
        raise InputError("--reps", str(reps), "need at least 2 inner replications (the replication noise is measured "
                         "from them)")
    if kind not in DESIGNS:
        raise InputError("--design", kind, "allowed: " + ", ".join(DESIGNS))
    if kind == "saltelli" and draws < 8:
        raise InputError("--draws", str(draws), "need at least 8 base points with --design saltelli (2N = 16 "
                         "independent draws for the decision)")
    if kind != "saltelli" and draws < 16:
        raise InputError("--draws", str(draws), "need at least 16 draws")
    if target_ci is not None:
        if not (math.isfinite(target_ci) and 0 < target_ci < 0.5):
            raise InputError("--target-ci", str(target_ci), "a half-width of the probability, in (0, 0.5), e.g. 0.05")
        if kind != "sobol":
            raise InputError("--target-ci", str(target_ci), f"needs --design sobol (a {kind} design is not grown by "
                             "doubling)")
        if max_draws < draws:
            raise InputError("--max-draws", str(max_draws), f"must be >= --draws ({draws})")
    cons = [rule.parse_constraint(c) for c in constraints]
    if cons:
        rule.check_confidence(confidence)
    options, notes = load_options(paths, sets, inputs)
    objective = objective_of(options, objective)
    sense = rule.sense_of(objective)
    keys = union_keys([o.unc for o in options])
    K = len(options)
    folder = decide_folder(results_root, options, label, kind, reps)
    if folder.exists() and overwrite:
        import shutil

        shutil.rmtree(folder)
    folder.mkdir(parents=True, exist_ok=True)
    D = draws
    target_met: bool | None = None
    computed = 0
    with folder_lock(folder, echo):
        study = [study_key(o, keys, kind, reps, D) for o in options]
        stores = [RowStore(folder, study[k], rows_dir=folder / "options" / str(k) / "reps") for k in range(K)]
        for s in stores:
            s.load_version(twin.__version__)
        backend = None
        try:
            while True:
                U = design(D, len(keys), int(options[0].doc["seed"]), kind)
                n = len(U)
                todo = [i * K + k for i in range(n * reps) for k in range(K) if i not in stores[k].rows]
                if todo:
                    if backend is None:
                        backend = make_backend(workers, dask_address, echo=echo)
                    echo(f"decide: {len(todo)} of {n * reps * K} runs to compute ({n} draws × {reps} replications × "
                         f"{K} options)")

                    def on_row(row: dict[str, Any]) -> None:
                        nonlocal computed
                        stores[int(row.pop("_option"))].add(row)
                        computed += 1

                    drive(backend, _payload(options, keys, U, reps, study), todo, on_row, None, echo, task=decide_batch)
                tables = [assemble(stores[k].rows[i] for i in range(n * reps)) for k in range(K)]
                Y = _objective_array(tables, objective, n, reps, [o.label for o in options])
                if target_ci is None:
                    break
                dec = analyse(Y, U, [o.label for o in options], keys, sense, seed=int(options[0].doc["seed"]),
                              samples=analysis_samples or SAMPLES, evppi=False, indices=False)
                h = probability_half_width(dec)
                if h <= target_ci:
                    target_met = True
                    break
                if D * 2 > max_draws:
                    target_met = False
                    break
                echo(f"decide: P(best) of {dec.recommended} ±{h:.3f} > {target_ci:g}: doubling the draws to {D * 2}")
                D *= 2
        except BaseException as exc:
            shut(backend, error=True)
            backend = None
            for s in stores:
                try:
                    s.flush()
                except OSError:
                    pass
            if isinstance(exc, KeyboardInterrupt):
                kept = sum(len(s.stored) for s in stores)
                print(f"\ninterrupted: {kept} finished runs are kept in {folder / 'options'}; run the same command "
                      "again to resume (only the missing ones are computed)", file=sys.stderr, flush=True)
            raise
        finally:
            shut(backend, error=False)
        for s in stores:
            s.flush()
        dec = _decision(Y, U, options, keys, sense, tables, cons, confidence, reps, analysis_samples or SAMPLES, kind)
        _write(folder, options, keys, U, Y, tables, dec, objective, kind, reps, notes, target_ci, target_met,
               max_draws, study, cons, confidence)
        for s in stores:
            s.compact()
    return DecideResult(folder, options, keys, len(U), reps, objective, dec, target_met, computed, notes)


def _objective_array(tables: Sequence[pd.DataFrame], objective: str, D: int, R: int, labels: Sequence[str],
                     flag: str = "--objective") -> np.ndarray:
    Y = np.empty((D, len(tables), R))
    for k, t in enumerate(tables):
        if objective not in t.columns:
            from twin.experiment import stats

            raise InputError(flag, objective, f"no such metric in {labels[k]}; available: "
                             + ", ".join(stats.metric_columns(t)))
        v = t[objective].to_numpy(dtype=float)
        if not np.all(np.isfinite(v)):
            bad = int(np.flatnonzero(~np.isfinite(v))[0])
            raise InputError(flag, objective, f"not defined in {labels[k]}, draw {bad // R} replication "
                             f"{bad % R} (NaN); choose a metric every draw defines")
        Y[:, k, :] = v.reshape(D, R)
    return Y


def _decision(Y: np.ndarray, U: np.ndarray, options: Sequence[Option], keys: Sequence[str], sense: str,
              tables: Sequence[pd.DataFrame], cons: Sequence[Any], confidence: float, reps: int,
              samples: int, kind: str = "sobol") -> Any:
    """The analysis of every draw, or of a Saltelli design's independent rows with its Sobol' indices
    added (:func:`_saltelli`)."""
    if kind != "saltelli":
        return _decision_on(Y, U, options, keys, sense, tables, cons, confidence, reps, samples)
    base = saltelli_base_rows(len(U), len(keys))
    rows = (base[:, None] * reps + np.arange(reps)).ravel()
    dec = _decision_on(Y[base], U[base], options, keys, sense, [t.iloc[rows].reset_index(drop=True) for t in tables],
                       cons, confidence, reps, samples)
    return _saltelli(dec, Y, U, options, sense)


def _saltelli(dec: Any, Y: np.ndarray, U: np.ndarray, options: Sequence[Option], sense: str) -> Any:
    """Add the Sobol' indices (S1, ST) of the paired difference recommended − runner-up over every row of
    the design to the inputs table; the per-draw difference becomes every row's."""
    from twin.experiment.value_of_information import sobol_indices

    labels = [o.label for o in options]
    if not dec.recommended:
        return dec
    sign = 1.0 if sense == "max" else -1.0
    m = sign * Y.mean(axis=2)
    diff = m[:, labels.index(dec.recommended)] - m[:, labels.index(dec.runner_up)]
    dec.difference = diff
    sh = sobol_indices(U, diff, int(options[0].doc["seed"]))
    tab = dec.inputs_table
    for k in ("s1", "st"):
        val = sh[k] if sh is not None else np.full(len(tab), np.nan)
        conf = sh[k + "_conf"] if sh is not None else np.full(len(tab), np.nan)
        tab[f"sobol_{k}"], tab[f"sobol_{k}_low"], tab[f"sobol_{k}_high"] = val, val - conf, val + conf
    return dec


def _decision_on(Y: np.ndarray, U: np.ndarray, options: Sequence[Option], keys: Sequence[str], sense: str,
                 tables: Sequence[pd.DataFrame], cons: Sequence[Any], confidence: float, reps: int,
                 samples: int) -> Any:
    """The analysis (:func:`twin.experiment.value_of_information.analyse`); with constraints, among the
    options that meet them in at least ``confidence`` of the draws (:mod:`twin.experiment.feasibility`),
    its options table holding every option's P_feasible (NaN statistics for an option left out).
    ``recommended`` is empty when no option is admissible."""
    from twin.experiment.feasibility import admissible, feasibility
    from twin.experiment.value_of_information import analyse, mean_interval

    labels = [o.label for o in options]
    seed = int(options[0].doc["seed"])
    if not cons:
        return analyse(Y, U, labels, keys, sense, seed=seed, samples=samples)
    C = [_objective_array(tables, c.metric, len(Y), reps, labels, "--constraint") for c in cons]
    feas = feasibility(C, cons, U, labels, seed=seed, samples=samples)
    adm = admissible(feas, confidence)
    what = " and ".join(str(c) for c in cons)
    if len(adm) >= 2:
        dec = analyse(Y[:, adm, :], U, [labels[i] for i in adm], keys, sense, seed=seed, samples=samples)
        dec.rule = (f"among the options that meet {what} in at least {confidence:.0%} of the plausible worlds, "
                    "the one with the best expected objective (the Bayes decision among them)")
    else:
        dec = analyse(Y, U, labels, keys, sense, seed=seed, samples=samples)
        if adm:
            k = adm[0]
            dec.recommended = labels[k]
            if dec.runner_up == labels[k]:
                means = dec.options_table.set_index("option")["expected"]
                dec.runner_up = max((x for x in labels if x != labels[k]),
                                    key=lambda x: means[x] if sense == "max" else -means[x])
            dec.rule = (f"the only option that meets {what} in at least {confidence:.0%} of the plausible worlds "
                        "(the other statistics compare every option, for information)")
        else:
            dec.recommended = ""
            dec.rule = f"no option meets {what} in at least {confidence:.0%} of the plausible worlds"
    tab = feas.merge(dec.options_table, on="option", how="left")
    tab["admissible"] = [i in adm for i in range(len(labels))]
    mean, lo, hi = mean_interval(Y.mean(axis=2))  # every option's expected objective, left-out ones too
    gap = tab["expected"].isna().to_numpy()
    tab.loc[gap, "expected"] = mean[gap]
    tab.loc[gap, "ci_low"] = lo[gap]
    tab.loc[gap, "ci_high"] = hi[gap]
    dec.options_table = tab
    return dec


def _write(folder: Path, options: Sequence[Option], keys: Sequence[str], U: np.ndarray, Y: np.ndarray,
           tables: Sequence[pd.DataFrame], dec: Any, objective: str, kind: str, reps: int, notes: Sequence[str],
           target_ci: float | None, target_met: bool | None, max_draws: int, study: Sequence[str],
           constraints: Sequence[Any] = (), confidence: float = 0.95) -> None:
    """The study's tables (deterministic: the same seed gives the same bytes, serially or not)."""
    D = len(U)
    dt = draws_table(options, keys, U)
    atomic_write_parquet(folder / "draws.parquet", dt)
    rows = []
    for k, o in enumerate(options):
        for d in range(D):
            for r in range(reps):
                rows.append({"option": o.label, "draw": d, "replication": r, "index": d * reps + r,
                             "objective": float(Y[d, k, r])})
    atomic_write_parquet(folder / "objective.parquet", pd.DataFrame(rows))
    for k, t in enumerate(tables):
        atomic_write_parquet(folder / "options" / str(k) / "replications.parquet", t)
    atomic_write_parquet(folder / "options.parquet", dec.options_table)
    inputs = dec.inputs_table.copy()
    labels = input_labels(options, keys)
    flips = []
    for key, us in zip(inputs["input"], inputs.get("flip_u", [[]] * len(inputs))):
        opt = next(o for o in options if o.unc is not None and key in o.unc.keys())
        assert opt.unc is not None
        path, d = next(iter(opt.unc.keys()[key].items()))
        flips.append(json.dumps([value_at(d, float(u), _fixed(opt, path)) for u in us]))
    inputs["flip_values"] = flips
    if "flip_u" in inputs:
        inputs["flip_u"] = [json.dumps(list(v)) for v in inputs["flip_u"]]
    inputs["fields"] = [", ".join(labels[k]["fields"]) for k in inputs["input"]]
    inputs["source"] = ["; ".join(labels[k]["sources"]) for k in inputs["input"]]
    atomic_write_parquet(folder / "inputs.parquet", inputs)
    diff = pd.DataFrame({"draw": np.arange(D, dtype=np.int64), "difference": dec.difference})
    atomic_write_parquet(folder / "difference.parquet", diff)
    sign = 1.0 if dec.sense == "max" else -1.0
    write_json(folder / "experiment.json", {
        "kind": "decide", "objective": objective, "sense": dec.sense,
        "currency": options[0].loaded.scenario.costs.currency if options[0].loaded.scenario.costs else "", "seed": options[0].doc["seed"],
        "design": kind, "draws": D, "replications": reps, "runs": D * reps * len(options),
        "decision_draws": len(saltelli_base_rows(D, len(keys))) if kind == "saltelli" else D,
        "target_ci": target_ci, "target_met": target_met, "max_draws": max_draws if target_ci else None,
        "keys": list(keys), "inputs": labels, "notes": list(notes), "versions": versions(),
        "options": [{"label": o.label, "source": o.path, "scenario": o.loaded.scenario.name,
                     "scenario_hash": o.loaded.hash, "study": s, "folder": os.path.join("options", str(k))}
                    for k, (o, s) in enumerate(zip(options, study))],
    })
    write_json(folder / "decision.json", {
        "constraints": [str(c) for c in constraints], "confidence": confidence if constraints else None,
        "objective": objective, "sense": dec.sense, "recommended": dec.recommended, "runner_up": dec.runner_up,
        "rule": dec.rule, "evpi": dec.evpi, "evpi_low": dec.evpi_low, "evpi_high": dec.evpi_high,
        "evpi_naive": dec.evpi_naive, "noise_share": dec.noise_share,
        "draws": len(saltelli_base_rows(D, len(keys))) if kind == "saltelli" else D, "replications": reps,
        "difference_sign": f"per draw: (recommended − runner-up) net benefit, objective × {sign:g}",
        "options": dec.options_table.to_dict("records"),
    })


__all__ = ["DEFAULT_DRAWS", "DEFAULT_REPS", "DecideResult", "decide_batch", "load_options", "run_decide"]
