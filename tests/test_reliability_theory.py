"""The simulator against the reliability closed forms of model.md §9.

The scenarios and estimators live in :mod:`twin.validation.reliability` (implemented once, shared
with ``twin validate``); these tests call them. Each case states a scenario whose steady state has a
known closed form, runs R replications with fixed seeds, and checks that the analytic value lies
inside a t-based 99 % confidence interval of the replication estimates, with warm-up discarded (or
shown negligible by an invariant of the case). Each test also asserts that plausible *wrong* models
(``CaseResult.wrong``) lie outside the interval, so a pass means something. The CI-sized variants
run in a few seconds each; the ``slow`` variants use the full settings (``pytest -m slow``).
"""

from __future__ import annotations

import copy

import pytest

from twin.physics import closed_forms as cf
from twin.validation.framework import TEST_CONFIDENCE, CaseResult, Settings

from judging import assert_judged
from twin.validation.reliability import common_cause, k_of_n, one_of_two, palm_spares, single_part, standby_test

CONF = TEST_CONFIDENCE  # the suite's error budget (tests/judging.py)
QUICK = Settings(quick=True, confidence=CONF)
FULL = Settings(quick=False, confidence=CONF)
BROKEN_CONF = 0.99
"""Level of the intervals that must reject a broken model (power, not a correct model's false failure)."""
MODES = [pytest.param(QUICK, id="quick"), pytest.param(FULL, id="full", marks=pytest.mark.slow)]


def assert_strong_pass(r: CaseResult, s: Settings, max_rel_half_width: float = 0.35,
                       within_noise: tuple[str, ...] = (), resolves: bool = True) -> None:
    """The reference lies in the interval (at most ``max_rel_half_width`` × the reference on each side),
    every invariant held, and the wrong models are excluded: in the quick mode those two half-widths or
    more away (tests/judging.py), in the full mode every one but those named ``within_noise`` (as
    docs/validation.md records them)."""
    print(f"{r.quantity}: {r.mean:.5f} in [{r.ci_low:.5f}, {r.ci_high:.5f}], reference {r.reference:.5f}")
    assert_judged(r, max_rel_half_width, resolves or not s.quick)
    if not s.quick:
        for name, value in r.wrong.items():
            assert r.excludes(value) or name in within_noise, (name, value, r)


# ---- one repairable part: A = MTBF / (MTBF + MTTR) ---------------------------------------------

@pytest.mark.parametrize("s", MODES)
def test_single_repairable_part(s: Settings) -> None:
    (r,) = single_part(s)
    assert r.reference == pytest.approx(10.0 / 12.0, rel=1e-15)
    # a model that forgot the repair time would claim A = 1; one that doubled it, M/(M+2R)
    assert sorted(r.wrong.values()) == pytest.approx([10.0 / 14.0, 1.0], rel=1e-15)
    assert_strong_pass(r, s)


def test_single_part_fails_when_repairs_take_twice_as_long() -> None:
    def double_repairs(doc: dict) -> dict:
        d = copy.deepcopy(doc)
        d["cluster"]["node"]["parts"]["board"]["repair"]["time"]["mean_h"] *= 2
        return d

    (r,) = single_part(Settings(quick=True, confidence=BROKEN_CONF, mutate=double_repairs))
    assert not r.passed and r.excludes(r.reference)


# ---- k-out-of-n with r dedicated crews -----------------------------------------------------------

@pytest.mark.parametrize("s", MODES)
def test_k_out_of_n_with_r_crews(s: Settings) -> None:
    """4-of-6 redundant units (no min_to_run: the node is down while fewer than 4 work),
    exponential failures λ and repairs μ, one and two crews 24x7, hot swap, no detection; the other
    crew count is far outside the interval."""
    res = k_of_n(s)
    assert len(res) == 2
    for r, crews, lam in zip(res, (1, 2), (0.1, 0.2)):
        assert r.reference == pytest.approx(1 - cf.k_of_n_availability(6, 4, lam, 1.0, crews), rel=1e-15)
        assert 0.01 < r.reference < 0.5  # measurable
        assert_strong_pass(r, s)


@pytest.mark.parametrize("s", MODES)
def test_one_of_two_one_and_two_crews(s: Settings) -> None:
    one, two = one_of_two(s)
    lam, mu = 0.2, 1.0
    assert one.reference == pytest.approx(1 - cf.one_of_two_one_crew(lam, mu), rel=1e-12)
    assert two.reference == pytest.approx(1 - cf.k_of_n_availability(2, 1, lam, mu, 2), rel=1e-12)
    # two crews would halve the time with both down (and one crew double it): well outside
    assert_strong_pass(one, s)
    assert_strong_pass(two, s)


# ---- spares: Palm's theorem ----------------------------------------------------------------------

@pytest.mark.parametrize("s", MODES)
def test_palm_stockout_share(s: Settings) -> None:
    """Share of failures finding no spare = P(Poisson(λL) ≥ S), with the reference range allowing the
    fleet-rate loss (see the case's docstring); one more or one fewer spare is clearly excluded."""
    (r,) = palm_spares(s)
    assert r.ref_low is not None and r.ref_low < r.reference
    assert r.reference == pytest.approx(cf.palm_stockout_share(0.5, 4.0, 3), rel=1e-12)
    assert 0.2 < r.reference < 0.5
    assert_strong_pass(r, s)


# ---- common-cause failures: 1-of-2 with a β-factor (issue 24) ------------------------------------

@pytest.mark.parametrize("s", MODES)
def test_one_of_two_with_common_cause_failures(s: Settings) -> None:
    """U = [βρ + (2 − β)ρ²]/[1 + 2ρ + (2 − β)ρ²] (0.06504 at λ = 0.2, μ = 1, β = 0.1); independent
    failures (0.05405), the common event counted per unit and two crews are excluded."""
    (r,) = common_cause(s)
    assert r.reference == pytest.approx(0.0650406504, rel=1e-9)
    assert r.wrong["independent failures (β = 0)"] == pytest.approx(0.0540540541, rel=1e-9)
    assert_strong_pass(r, s)


def test_common_cause_case_fails_without_common_events() -> None:
    def no_beta(doc: dict) -> dict:
        d = copy.deepcopy(doc)
        d["cluster"]["node"]["parts"]["psu"]["common_cause_beta"] = 0.0
        return d

    (r,) = common_cause(Settings(quick=True, confidence=BROKEN_CONF, mutate=no_beta))
    assert not r.passed and r.excludes(r.reference)


# ---- latent failures: a periodically tested standby unit (issue 24) -------------------------------

@pytest.mark.parametrize("s", MODES)
def test_periodically_tested_standby_unit(s: Settings) -> None:
    """U = 1 − (1 − e^(−λT))/(λT) = 0.04837 at λT = 0.1 with instant repair; with repair D the chain
    at the tests. The quick run tells apart the grossly wrong models; the full one also the λT/2 + λD
    approximation."""
    zero, rep = standby_test(s)
    assert zero.reference == pytest.approx(0.0483741804, rel=1e-9)
    assert rep.reference > zero.reference + 0.5 * 0.001 * 20  # about λD more
    for r in (zero, rep):
        # the λT/2 + λD approximation with D = 0 lies within the noise even in the full run (recorded)
        # (the quick run resolves no wrong model of the D = 20 h unit at the suite's level: the full run does)
        assert_strong_pass(r, s, 0.35, within_noise=("λT/2 + λD (the rare-event approximation)",) if r is zero else (),
                           resolves=r is zero)


def test_standby_case_fails_when_tests_are_half_as_frequent() -> None:
    def rarer_tests(doc: dict) -> dict:
        d = copy.deepcopy(doc)
        d["power"]["generator"]["latent_test_interval_h"] *= 2
        return d

    for r in standby_test(Settings(quick=True, confidence=BROKEN_CONF, mutate=rarer_tests)):
        assert not r.passed and r.excludes(r.reference)
