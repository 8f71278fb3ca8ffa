"""Run validation cases (in parallel worker processes when allowed) and judge them as a family.

``run_suite`` runs the named cases, then re-judges every checked quantity at the Bonferroni level
1 − α/m over all m checked quantities of the run, so that a correct model passes the whole suite
with probability at least 1 − α (α = 0.01). ``sweep`` shows one case's intervals over growing
prefixes of its replications.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Callable, Sequence

from twin.errors import InputError
from twin.validation.framework import FAMILY_ALPHA, CaseResult, Settings, judge_family

COST = {"checkpoint_daly": 16.0, "mmc_queue": 7.0, "no_starvation": 7.0, "llama3_54day": 6.0, "repair_ladder": 6.0,
        "rma_palm": 4.0, "palm_spares": 2.5, "k_of_n": 1.5, "frailty_negbin": 5.0}
"""Rough relative cost of the quick cases (seconds on the reference machine): heavy ones start first."""


@dataclass
class SuiteResult:
    """A judged run: results at the family level, its per-interval confidence, timings per case."""

    results: list[CaseResult]
    confidence: float
    alpha: float
    settings: Settings
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def checked(self) -> int:
        return sum(1 for r in self.results if r.check)

    @property
    def failed(self) -> list[CaseResult]:
        return [r for r in self.results if r.check and not r.passed]

    @property
    def passed(self) -> bool:
        return not self.failed

    @property
    def wrong_models(self) -> tuple[int, int]:
        """(excluded, named): the plausible wrong models the checked quantities name, and how many of
        them their verdict intervals exclude (the suite's power to tell a wrong model apart)."""
        named = [(r, v) for r in self.results if r.check for v in r.wrong.values()]
        return sum(1 for r, v in named if r.excludes(v)), len(named)

    @property
    def naive_beaten(self) -> tuple[int, int]:
        """(beaten, named): the checked rows that name a naive predictor, and how many of them the model's
        prediction is closer to the reference than (issue 49: a validation that discriminates)."""
        named = [r for r in self.results if r.check and r.naive is not None]
        return sum(1 for r in named if r.beats_naive), len(named)


def check_names(names: Sequence[str] | None) -> list[str]:
    """Case names in suite order (all when ``names`` is empty); InputError for an unknown name."""
    from twin.validation.cases import CASES

    if not names:
        return list(CASES)
    unknown = [n for n in names if n not in CASES]
    if unknown:
        raise InputError("twin validate", "--case", f"unknown case {unknown[0]!r}; allowed: {', '.join(CASES)}")
    return [n for n in CASES if n in set(names)]


def run_case(name: str, settings: Settings) -> tuple[str, list[CaseResult], float]:
    """One case by name: (name, its results at ``settings.confidence``, seconds)."""
    from twin.validation.cases import CASES

    t0 = time.perf_counter()
    out = CASES[name](settings)
    return name, out, time.perf_counter() - t0


def default_workers() -> int:
    return max(1, min(2, os.cpu_count() or 1))


def run_cases(names: Sequence[str], settings: Settings, workers: int | None = None,
              echo: Callable[[str], None] | None = None) -> tuple[list[CaseResult], dict[str, float]]:
    """Run cases; worker processes (fork) when ``workers`` > 1, no ``mutate`` is set (functions made
    in tests need not pickle) and there is more than one case. Results come back in suite order."""
    names = list(names)
    workers = default_workers() if workers is None else max(1, int(workers))
    done: dict[str, tuple[list[CaseResult], float]] = {}
    parallel = workers > 1 and settings.mutate is None and len(names) > 1 and "fork" in mp.get_all_start_methods()
    if parallel:
        order = sorted(names, key=lambda n: -COST.get(n, 1.0))
        with ProcessPoolExecutor(max_workers=min(workers, len(names)), mp_context=mp.get_context("fork")) as ex:
            futures = [ex.submit(run_case, n, settings) for n in order]
            for fu in futures:
                name, res, sec = fu.result()
                done[name] = (res, sec)
                if echo:
                    echo(f"  {name}: {len(res)} quantities, {sec:.1f} s")
    else:
        for n in names:
            name, res, sec = run_case(n, settings)
            done[name] = (res, sec)
            if echo:
                echo(f"  {name}: {len(res)} quantities, {sec:.1f} s")
    results = [r for n in names for r in done[n][0]]
    return results, {n: done[n][1] for n in names}


def run_suite(names: Sequence[str] | None = None, settings: Settings | None = None, workers: int | None = None,
              alpha: float = FAMILY_ALPHA, echo: Callable[[str], None] | None = None) -> SuiteResult:
    """Run the named cases (all by default) and judge them at the Bonferroni level over the run."""
    s = settings or Settings()
    names = check_names(names)
    results, seconds = run_cases(names, s, workers, echo)
    judged, conf = judge_family(results, alpha)
    return SuiteResult(judged, conf, alpha, s, seconds)


SWEEP_CONFIDENCE = 0.95


def sweep_points(n: int) -> list[int]:
    """Replication counts 3, 5, 10, 20, 40, ... up to n (always ending at n)."""
    pts = [k for k in (3, 5, 10, 20, 40, 80, 160, 320, 640, 1280, 2560) if k < n]
    return pts + [n]


@dataclass
class SweepRow:
    quantity: str
    replications: int
    reference: float
    mean: float
    ci_low: float
    ci_high: float

    @property
    def half_width(self) -> float:
        return (self.ci_high - self.ci_low) / 2

    @property
    def covers(self) -> bool:
        return self.ci_low <= self.reference <= self.ci_high


def sweep(results: list[CaseResult], confidence: float = SWEEP_CONFIDENCE) -> list[SweepRow]:
    """Each result over growing prefixes of its replications, at ``confidence``."""
    rows = []
    for r in results:
        if r.estimate is None or r.estimate.kind == "exact":
            continue
        base = replace(r, confidence=confidence)
        for k in sweep_points(r.estimate.n):
            h = base.head(k)
            rows.append(SweepRow(r.quantity, k, h.reference, h.mean, h.ci_low, h.ci_high))
    return rows
