"""``twin compare A.yaml B.yaml [C ...]``: variants under common random numbers.

Every variant runs replications 0..N−1 with the seed of the FIRST scenario (its own seed, if
different, is replaced and the output says so), so replication i of every variant draws the same
uniforms for every component path they share. Differences are paired per replication
(variant − first) with Student-t intervals; the variance reduction (var A + var B)/var(A − B) says
how much narrower these intervals are than with independent seeds.

Each variant's replications live in its own Monte-Carlo folder (reused and resumed like
``twin montecarlo``); the comparison folder (``results/compare/cmp-<digest>-s<seed>`` or
``--label``) holds experiment.json, summaries.parquet, paired.parquet and winners.parquet.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

import pandas as pd

from twin.errors import InputError
from twin.experiment import stats
from twin.experiment.runner import (DEFAULT_MAX_REPS, ExperimentResult, check_label, experiment_folder,
                                    run_experiment, with_seed)
from twin.atomic import atomic_write_parquet, make_dirs
from twin.experiment.store import versions, write_json
from twin.scenario.loader import Loaded, load_scenario


@dataclass
class CompareResult:
    folder: Path
    labels: list[str]
    loaded: list[Loaded]
    results: list[ExperimentResult]
    summaries: pd.DataFrame
    paired: pd.DataFrame
    winners: pd.DataFrame
    seed: int
    reps: int
    notes: list[str] = field(default_factory=list)
    target_met: bool | None = None
    breakeven: pd.DataFrame | None = None
    """Cost break-even of every variant vs the first (twin.experiment.decide); None without costs."""
    decision: dict | None = None  # type: ignore[type-arg]
    """The decision summary (twin.experiment.summary), as stored in decision-summary.json."""


def variant_labels(paths: Sequence[str], loadeds: Sequence[Loaded]) -> list[str]:
    """Scenario names, or file stems where names repeat, or ``#k`` suffixes as a last resort."""
    names = [ld.scenario.name for ld in loadeds]
    if len(set(names)) == len(names):
        return names
    stems = [Path(p).stem for p in paths]
    if len(set(stems)) == len(stems):
        return stems
    return [f"{s}#{k + 1}" for k, s in enumerate(stems)]


def load_variants(paths: Sequence[str], sets: Sequence[str]) -> tuple[list[Loaded], list[str]]:
    """Load every scenario with the ``--set`` overrides; give every variant the first one's seed."""
    if len(paths) < 2:
        raise InputError("compare", "scenarios", "give at least two scenario files")
    loaded = [load_scenario(p, list(sets)) for p in paths]
    seed = loaded[0].scenario.seed
    notes = [f"common random numbers: every variant uses seed {seed} of the first scenario "
             f"({loaded[0].scenario.name}) and the same replication indices"]
    out = [loaded[0]]
    for p, ld in zip(paths[1:], loaded[1:]):
        if ld.scenario.seed != seed:
            notes.append(f"  {p}: its seed {ld.scenario.seed} is replaced by {seed}")
        out.append(with_seed(ld, seed))
    return out, notes


def compare_folder(results_root: Path | str, loadeds: Sequence[Loaded], label: str | None) -> Path:
    if label is not None:
        check_label(label)
        return Path(results_root) / "compare" / label
    digest = hashlib.sha256("|".join(ld.hash for ld in loadeds).encode()).hexdigest()[:12]
    return Path(results_root) / "compare" / f"cmp-{digest}-s{loadeds[0].scenario.seed}"


def _with_rows(summary: pd.DataFrame, more: pd.DataFrame) -> pd.DataFrame:
    """A summary with more metric rows, in metric order."""
    if not len(more):
        return summary
    return pd.concat([summary, more], ignore_index=True).sort_values("metric", kind="stable", ignore_index=True)


def compute(labels: Sequence[str], tables: Sequence[pd.DataFrame],
            summaries: Sequence[pd.DataFrame]) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(summaries with a variant column, paired differences vs the first, winners). A cause counted in
    some variants and not others is 0 in those (:data:`stats.ZERO_WHEN_ABSENT`), summarised there too."""
    by = dict(zip(labels, tables))
    aligned = stats.with_absent_zeros(by)
    summaries = [_with_rows(s, stats.summarise(aligned[lab], sorted(set(aligned[lab].columns) - set(by[lab].columns))))
                 for lab, s in zip(labels, summaries)]
    summ = pd.concat([s.assign(variant=lab) for lab, s in zip(labels, summaries)], ignore_index=True)
    summ = summ[["variant"] + [c for c in summ.columns if c != "variant"]]
    paired = stats.paired_table(by, labels[0])
    win = stats.winners(by)
    return summ, paired, win


def run_compare(paths: Sequence[str], sets: Sequence[str], reps: int, workers: int = 1,
                dask_address: str | None = None, results_root: Path | str = "results", label: str | None = None,
                overwrite: bool = False, target_ci: Mapping[str, float] | None = None,
                max_reps: int = DEFAULT_MAX_REPS, progress: bool = True,
                echo: Callable[[str], None] = print, objectives: Sequence[str] | None = None) -> CompareResult:
    """Run (or reuse) every variant, then write the paired comparison and its decision summary
    (``decision-summary.json``, :mod:`twin.experiment.summary`; ``objectives`` default to the cost per
    useful GPU-hour).

    ``target_ci`` here is on the paired DIFFERENCE of a metric (every variant vs the first):
    replications are added to all variants together until every interval is narrow enough."""
    loadeds, notes = load_variants(paths, sets)
    labels = variant_labels(paths, loadeds)
    folder = compare_folder(results_root, loadeds, label)
    n = reps
    target_met: bool | None = None
    wiped: set[Path] = set()  # --overwrite recomputes each Monte-Carlo folder once, not per stage/variant
    while True:
        results = []
        for ld in loadeds:
            mc = experiment_folder(results_root, ld)
            ow = overwrite and mc not in wiped
            wiped.add(mc)
            results.append(run_experiment(ld, n, workers, dask_address, mc, ow, None, progress, echo=echo))
        if not target_ci:
            break
        need = n
        tabs = list(stats.with_absent_zeros({str(i): r.replications for i, r in enumerate(results)}).values())
        for m, h in target_ci.items():
            ref = tabs[0]
            for t in tabs:
                if m not in t.columns:
                    raise InputError("--target-ci", m, "no such metric in every variant; available: "
                                     + ", ".join(stats.metric_columns(t)))
            for t in tabs[1:]:
                d = t[m].to_numpy() - ref[m].to_numpy()
                need = max(need, stats.replications_needed(d, h, cap=max_reps + 1))
        target_met, n = stats.next_stage(need, n, max_reps)
        if target_met is not None:
            break
    summ, paired, win = compute(labels, [r.replications for r in results], [r.summary for r in results])
    make_dirs(folder)
    atomic_write_parquet(folder / "summaries.parquet", summ)
    atomic_write_parquet(folder / "paired.parquet", paired)
    atomic_write_parquet(folder / "winners.parquet", win)
    from twin.experiment.decide import breakeven_table  # cost decision (issue 9): payback, break-even price

    be = breakeven_table(labels, [r.replications for r in results], loadeds)
    if len(be):
        atomic_write_parquet(folder / "breakeven.parquet", be)
    elif (folder / "breakeven.parquet").is_file():  # left by an earlier comparison with costs
        (folder / "breakeven.parquet").unlink()
    write_json(folder / "experiment.json", {
        "kind": "compare", "reference": labels[0], "seed": loadeds[0].scenario.seed, "replications": n,
        "crn": notes[0], "notes": notes, "target_ci": dict(target_ci) if target_ci else None, "target_met": target_met,
        "variants": [{"label": lab, "scenario": ld.scenario.name, "scenario_hash": ld.hash, "source": str(p),
                      "folder": os.path.relpath(r.folder, folder)}
                     for lab, ld, p, r in zip(labels, loadeds, paths, results)],
        "versions": versions(),
    })
    from twin.experiment import summary

    decision = summary.write(folder, objectives)
    return CompareResult(folder, list(labels), loadeds, results, summ, paired, win, loadeds[0].scenario.seed, n,
                         notes, target_met, be if len(be) else None, decision)
