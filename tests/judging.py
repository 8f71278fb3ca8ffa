"""How the tests judge a statistical validation result (issue 51, items 2 and 3).

One family-wise error budget for the whole pytest suite (docs/validation.md, "Error budget"): every
statistical interval a quick test judges is at :data:`TEST_CONFIDENCE` = 1 − 0.01/100 (Bonferroni over
at most :data:`twin.validation.framework.TEST_INTERVALS` = 100 intervals on distinct random draws). The
tests that call a validation case with the quick settings and the suite's root seed judge the very draws
of the ``twin validate --quick`` rows, so they add no draw; the others are listed in
:data:`OTHER_DRAWS`, and ``tests/test_validation.py::test_quick_suite_passes_and_writes_reports``
adds both up.

A result is judged by :func:`assert_judged`: the reference lies in the interval at that level, the
interval is no wider than the test states (relative half-width), every invariant held, the result
names at least one wrong model, and every named wrong model that lies at least :data:`FAR` half-widths
from the reference (a difference the design resolves on any draw, not just this one) is excluded.
"""

from __future__ import annotations

from twin.validation.framework import FAMILY_ALPHA, TEST_CONFIDENCE, TEST_INTERVALS, CaseResult, Settings

QUICK = Settings(quick=True, confidence=TEST_CONFIDENCE)
"""The quick settings at the suite's level: the draws of the ``twin validate --quick`` rows."""

FAR = 2.0
"""A wrong model this many half-widths from the reference is excluded on a re-roll of the seeds except
with probability below Φ(−z) ≈ 5e-5 (z ≈ 3.9 at the suite's level): its exclusion is asserted."""

OTHER_DRAWS: dict[str, tuple[int, float]] = {
    "test_validation.py::test_references_follow_their_parameters (single part, MTTR 1 h)": (1, 1e-4),
    "test_validation.py::test_sweep_interval_shrinks_around_the_reference (40 replications)": (1, 1e-4),
    "test_validation.py::test_poisson_prediction_interval_covers (miss rate < 10 % + 4 sd)": (1, 3.2e-5),
    "test_workload.py::test_theory_case_quick (M/M/4 with 24, interruptions with 16 replications)": (4, 1e-4),
    "test_racks.py::test_rack_part_availability_matches_the_closed_form": (1, 1e-4),
    "test_coupling.py (Palm downtime, the hetero and the dry evaporative hall's throttled share)": (3, 1e-4),
    "test_network.py (link and trunk flap counts, Poisson; their spread, chi-squared)": (4, 1e-4),
    "test_power.py (generator start failures, binomial test)": (1, 1e-4),
    "test_rng.py (two Kolmogorov-Smirnov tests, a normal bound on the mean)": (3, 1e-4),
    "test_fit.py (coverage counts of 60 fits, two binomial bounds)": (2, 5e-5),
    "test_fit.py (fitted intervals covering the truth: AIC, exponential data, lognormal mean and sigma)": (4, 1e-4),
    "test_fit_roundtrip.py (the round trip's Weibull shape and scale)": (2, 1e-4),
    "test_replication_cost.py (no-repair failure probability within 4 sd)": (1, 6.3e-5),
}
"""Statistical checks the quick tests make on draws other than the quick suite's rows (other parameters,
other replication counts, tests with their own seeded scenarios): (how many, the false-failure
probability of each). Not counted: checks that must reject a broken model (power, not a correct model's
false failure), checks on fixed data files (tests/data: no seed to re-roll), and the slow tests (a run
of ``-m slow`` has its own budget: the full suite's Bonferroni level)."""


def other_draws() -> float:
    """The summed false-failure probability of :data:`OTHER_DRAWS`."""
    return sum(n * a for n, a in OTHER_DRAWS.values())


def budget(quick_statistical_rows: int, quick_row_confidence: float) -> float:
    """Upper bound (union bound) on the probability that a correct model fails a statistical test of the
    quick suite on a re-roll of every seed: the ``twin validate --quick`` rows at the narrower of their
    level and the tests' (the tests that call a case with the quick settings judge those very draws),
    plus the other draws."""
    return quick_statistical_rows * (1.0 - min(quick_row_confidence, TEST_CONFIDENCE)) + other_draws()


def half_width(r: CaseResult) -> float:
    return (r.ci_high - r.ci_low) / 2.0


def assert_judged(r: CaseResult, max_rel_half_width: float, resolves: bool = True) -> None:
    """The reference in the interval, the interval at most ``max_rel_half_width`` × |reference| wide on
    each side, every invariant held, a wrong model named, and every far one excluded (at least one, unless
    ``resolves`` is False: a quick run too small to resolve any, whose exclusions the slow full run checks)."""
    assert r.confidence >= TEST_CONFIDENCE, (r.quantity, r.confidence)
    assert not r.failed_invariants(), (r.quantity, r.failed_invariants())
    assert r.passed, (r.quantity, r.reference, r.mean, r.ci_low, r.ci_high)
    h = half_width(r)
    assert h <= max_rel_half_width * abs(r.reference), (r.quantity, h / abs(r.reference), max_rel_half_width)
    assert r.wrong, f"{r.quantity}: a statistical check must name a wrong model it can tell apart"
    far = {k: v for k, v in r.wrong.items() if abs(v - r.reference) >= FAR * h}
    assert far or not resolves, (r.quantity, r.reference, h, r.wrong)
    for name, value in far.items():
        assert r.excludes(value), (r.quantity, name, value, r.ci_low, r.ci_high)


__all__ = ["FAMILY_ALPHA", "FAR", "OTHER_DRAWS", "QUICK", "TEST_CONFIDENCE", "TEST_INTERVALS", "assert_judged",
           "budget", "half_width", "other_draws"]
