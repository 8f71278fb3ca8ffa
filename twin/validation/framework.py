"""The validation framework: settings, estimates with intervals at any confidence, case results.

A case (see :mod:`twin.validation.cases`) builds small scenarios, runs replications with fixed
seeds and returns one :class:`CaseResult` per checked quantity. Each result keeps its
:class:`Estimate` (the per-replication data, picklable), so the interval can be re-evaluated at
another confidence level: ``twin validate`` first runs every case, counts the checked quantities
m, then judges each at 1 − α/m (Bonferroni) so that a correct model passes the whole suite with
probability at least 1 − α. The same estimate restricted to its first k replications
(:meth:`Estimate.head`) gives ``--sweep`` its shrinking intervals without re-running anything.

A result passes when its interval meets the reference (a value, or a range
``[ref_low, reference]`` where the exact reference is bracketed) and every invariant of the case
held. Rows with ``check=False`` are information (e.g. a plausibility figure on a tuned input):
shown, never judged.
"""

from __future__ import annotations

import copy
import hashlib
import math
from dataclasses import dataclass, field, replace
from typing import Any, Callable

import numpy as np
from scipy import stats

from twin.scenario import load_dict
from twin.sim import ReplicationResult, run_replication

Doc = dict[str, Any]
Mutate = Callable[[Doc], Doc]

FAMILY_ALPHA = 0.01
"""Family-wise false-alarm rate of a whole ``twin validate`` run (the suite passes a correct model
with probability ≥ 99 %)."""


@dataclass
class Settings:
    """How a case runs: CI-sized (``quick``) or full, the confidence of each interval, the root seed,
    an optional replication count overriding the case's default, and ``mutate``, a function applied
    to every scenario document before it is loaded (tests use it to break the model on purpose)."""

    quick: bool = True
    confidence: float = 0.99
    """Confidence level of each interval; ``twin validate`` re-judges at 1 − α/m (Bonferroni)."""
    seed: int = 12345
    replications: int | None = None
    mutate: Mutate | None = None

    def reps(self, quick: int, full: int) -> int:
        """Replications: the override if given, else the case's quick or full default."""
        if self.replications is not None:
            return int(self.replications)
        return quick if self.quick else full


# ---- intervals --------------------------------------------------------------------------------

NO_FANS = {"enabled": False}
"""``cluster.node.fans`` of a case whose hand computation takes the node's stated power (the non-GPU load with
its fans as stated): server fans are checked on their own (tests/test_fans.py, issue 42)."""

IDENTICAL_GPU_SETS = ["cooling.gpu.r_sigma=0", "cooling.air.slot_preheat_c=0", "cooling.air.rack_rise_c=0",
                      "cooling.air.recirculation_c=0"]
"""``--set`` overrides for identical GPUs at their zone's supply in an air hall (see :func:`identical_gpus`;
in a liquid hall only the first, ``r_sigma``, applies: the others would add an air section)."""


def identical_gpus(cooling: dict[str, Any]) -> dict[str, Any]:
    """A copy of the ``cooling`` section with identical GPUs at their zone's supply: no spread of thermal
    resistance (``gpu.r_sigma`` 0) and, in an air hall, no chassis, rack or recirculation inlet offsets.
    For cases whose closed form is that of one GPU at a known inlet: the heterogeneity on by default
    (issue 23) is not what they check (``thermal_hetero`` and the offset tests check it). Values the
    section sets itself are kept."""
    c = copy.deepcopy(cooling)
    c["gpu"] = {"r_sigma": 0.0, **(c.get("gpu") or {})}
    if c.get("type", "air") == "air" or c.get("air") is not None:
        c["air"] = {"slot_preheat_c": 0.0, "rack_rise_c": 0.0, "recirculation_c": 0.0, **(c.get("air") or {})}
    return c


def t_interval(x: np.ndarray, confidence: float) -> tuple[float, float, float]:
    """Mean and two-sided t confidence interval of the mean of ``x``."""
    x = np.asarray(x, dtype=float)
    n = len(x)
    m = float(x.mean())
    if n < 2:
        return m, -math.inf, math.inf
    half = float(stats.t.ppf(0.5 + confidence / 2, n - 1) * x.std(ddof=1) / math.sqrt(n))
    return m, m - half, m + half


def _ratio_se(num: np.ndarray, den: np.ndarray) -> tuple[float, float]:
    """Ratio of sums r = Σnum/Σden and its delta-method standard error over replications."""
    n = len(num)
    r = float(num.sum() / den.sum())
    if n < 2:
        return r, math.inf
    resid = num - r * den
    return r, float(resid.std(ddof=1) / (math.sqrt(n) * den.mean()))


def ratio_interval(num: np.ndarray, den: np.ndarray, confidence: float) -> tuple[float, float, float]:
    """Ratio of means sum(num)/sum(den) with a delta-method (Fieller-free) t interval."""
    num = np.asarray(num, float)
    den = np.asarray(den, float)
    r, se = _ratio_se(num, den)
    half = float(stats.t.ppf(0.5 + confidence / 2, len(num) - 1) * se) if len(num) > 1 else math.inf
    return r, r - half, r + half


# ---- estimates: per-replication data that give an interval at any confidence -----------------

@dataclass
class Estimate:
    """Base: ``interval(confidence) -> (estimate, low, high)``; ``head(k)`` the same estimate over the
    first k replications; ``kind`` names the interval ('CI', 'PI' or 'exact')."""

    kind = "CI"

    def interval(self, confidence: float) -> tuple[float, float, float]:  # pragma: no cover - abstract
        raise NotImplementedError

    def head(self, k: int) -> "Estimate":  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def n(self) -> int:  # pragma: no cover - abstract
        raise NotImplementedError


@dataclass
class TMean(Estimate):
    """Mean of per-replication values ``x`` with its t interval."""

    x: np.ndarray

    def interval(self, confidence: float) -> tuple[float, float, float]:
        return t_interval(self.x, confidence)

    def head(self, k: int) -> "TMean":
        return TMean(self.x[:k])

    @property
    def n(self) -> int:
        return len(self.x)


@dataclass
class Ratio(Estimate):
    """Ratio of sums Σnum/Σden over replications (pooled rate or share), delta-method t interval."""

    num: np.ndarray
    den: np.ndarray

    def interval(self, confidence: float) -> tuple[float, float, float]:
        return ratio_interval(self.num, self.den, confidence)

    def head(self, k: int) -> "Ratio":
        return Ratio(self.num[:k], self.den[:k])

    @property
    def n(self) -> int:
        return len(self.num)


@dataclass
class Reciprocal(Estimate):
    """``scale / mean(x)`` with the interval transformed from the t interval of mean(x) (x > 0), e.g.
    efficiency T_s / mean(T_w)."""

    x: np.ndarray
    scale: float

    def interval(self, confidence: float) -> tuple[float, float, float]:
        m, lo, hi = t_interval(self.x, confidence)
        low = self.scale / hi if hi > 0 else 0.0
        high = self.scale / lo if lo > 0 else math.inf
        return self.scale / m, low, high

    def head(self, k: int) -> "Reciprocal":
        return Reciprocal(self.x[:k], self.scale)

    @property
    def n(self) -> int:
        return len(self.x)


@dataclass
class PoissonPI(Estimate):
    """Prediction interval for one new Poisson count whose mean the replications estimate.

    The mean μ of the per-replication counts has a t interval; a new count lies in
    [Poisson.ppf(a/2, μ_low), Poisson.ppf(1 − a/2, μ_high)] with a = (1 − confidence)/2 spent on
    each of the two uncertainties (union bound), so the coverage is at least ``confidence``."""

    counts: np.ndarray
    kind = "PI"

    def interval(self, confidence: float) -> tuple[float, float, float]:
        a = (1.0 - confidence) / 2.0
        m, lo, hi = t_interval(self.counts, 1.0 - a)
        lo = max(lo, 0.0)
        return m, float(stats.poisson.ppf(a / 2, lo)) if lo > 0 else 0.0, float(stats.poisson.ppf(1 - a / 2, hi))

    def head(self, k: int) -> "PoissonPI":
        return PoissonPI(self.counts[:k])

    @property
    def n(self) -> int:
        return len(self.counts)


@dataclass
class NegBinPI(Estimate):
    """Prediction interval for one new overdispersed count (a mixed Poisson: nodes with a frailty, a few
    defective nodes) with variance μ + c·μ², c given by the model (0: :class:`PoissonPI`).

    The mean μ of the per-replication counts has a t interval; a new count is negative binomial with
    that variance, within [NB.ppf(a/2, μ_low), NB.ppf(1 − a/2, μ_high)], a = (1 − confidence)/2 spent
    on each of the two uncertainties (union bound), as :class:`PoissonPI`."""

    counts: np.ndarray
    c: float = 0.0
    kind = "PI"

    def interval(self, confidence: float) -> tuple[float, float, float]:
        a = (1.0 - confidence) / 2.0
        m, lo, hi = t_interval(self.counts, 1.0 - a)
        lo = max(lo, 0.0)
        c = self.c

        def ppf(q: float, mu: float) -> float:
            if c <= 0:
                return float(stats.poisson.ppf(q, mu))
            return float(stats.nbinom.ppf(q, 1.0 / c, 1.0 / (1.0 + c * mu)))  # n = 1/c, p = n/(n + μ)

        return m, ppf(a / 2, lo) if lo > 0 else 0.0, ppf(1 - a / 2, hi)

    def head(self, k: int) -> "NegBinPI":
        return NegBinPI(self.counts[:k], self.c)

    @property
    def n(self) -> int:
        return len(self.counts)


@dataclass
class Share(Estimate):
    """Share of replications where a condition held (``hits`` of booleans), Clopper–Pearson interval."""

    hits: np.ndarray

    def interval(self, confidence: float) -> tuple[float, float, float]:
        n = len(self.hits)
        k = int(np.sum(self.hits))
        ci = stats.binomtest(k, n).proportion_ci(confidence_level=confidence, method="exact")
        return k / n, float(ci.low), float(ci.high)

    def head(self, k: int) -> "Share":
        return Share(self.hits[:k])

    @property
    def n(self) -> int:
        return len(self.hits)


@dataclass
class Calibrated(Estimate):
    """Σexposure/Σcount of a prediction run (a mean time between events), with an interval on the log
    scale that adds the relative standard error of the calibration run the reference came from:
    log(estimate/reference) has variance se_pred² + se_cal² (independent runs, delta method)."""

    exposure: np.ndarray
    count: np.ndarray
    cal_exposure: np.ndarray
    cal_count: np.ndarray
    scale: float = 1.0
    """reference = scale × Σcal_exposure/Σcal_count (e.g. N0/N: job MTTF at N predicted from N0)."""

    def reference(self) -> float:
        return self.scale * float(self.cal_exposure.sum() / self.cal_count.sum())

    def interval(self, confidence: float) -> tuple[float, float, float]:
        r, se = _ratio_se(self.exposure, self.count)
        rc, sec = _ratio_se(self.cal_exposure, self.cal_count)
        rel = math.hypot(se / r, sec / rc)
        df = min(len(self.count), len(self.cal_count)) - 1
        if df < 1:
            return r, -math.inf, math.inf
        h = float(stats.t.ppf(0.5 + confidence / 2, df) * rel)
        return r, r * math.exp(-h), r * math.exp(h)

    def head(self, k: int) -> "Calibrated":
        return Calibrated(self.exposure[:k], self.count[:k], self.cal_exposure[:k], self.cal_count[:k], self.scale)

    @property
    def n(self) -> int:
        return len(self.count)


@dataclass
class Banded(Estimate):
    """A mean time between events Σexposure/Σcount (delta-method t interval, as :class:`Ratio`), its
    interval widened by a stated relative ``band`` on each side, [low/(1 + band), high·(1 + band)]: for
    a published figure known only roughly (rounded, read off a plot), so agreement within the band counts
    as a pass and the band is part of what the verdict states."""

    exposure: np.ndarray
    count: np.ndarray
    band: float

    def interval(self, confidence: float) -> tuple[float, float, float]:
        m, lo, hi = ratio_interval(self.exposure, self.count, confidence)
        return m, lo / (1.0 + self.band), hi * (1.0 + self.band)

    def head(self, k: int) -> "Banded":
        return Banded(self.exposure[:k], self.count[:k], self.band)

    @property
    def n(self) -> int:
        return len(self.count)


@dataclass
class Exact(Estimate):
    """A deterministic simulated value, judged within a numerical tolerance ``tol`` (same units)."""

    value: float
    tol: float
    kind = "exact"

    def interval(self, confidence: float) -> tuple[float, float, float]:
        return self.value, self.value - self.tol, self.value + self.tol

    def head(self, k: int) -> "Exact":
        return self

    @property
    def n(self) -> int:
        return 1


# ---- results ------------------------------------------------------------------------------------

@dataclass
class CaseResult:
    """One checked quantity of a validation case."""

    case: str
    quantity: str
    reference: float
    mean: float
    ci_low: float
    ci_high: float
    replications: int
    confidence: float
    passed: bool
    note: str = ""
    samples: list[float] = field(default_factory=list, repr=False)
    estimate: Estimate | None = field(default=None, repr=False)
    ref_low: float | None = None
    """With it, the reference is the range [ref_low, reference] (an exact value known to lie there)."""
    check: bool = True
    """False: information only (shown, never judged, not counted in the Bonferroni m)."""
    wrong: dict[str, float] = field(default_factory=dict)
    """Plausible wrong models and their values: a useful check excludes them (tests assert it)."""
    invariants: dict[str, bool] = field(default_factory=dict)
    """Structural facts the case relies on (all must hold for a pass)."""
    sample: str = "theory"
    """'theory' (closed form), 'exact' (deterministic), 'in-sample' or 'out-of-sample' (field data)."""
    ref_text: str = ""
    """How to show the reference when it is not a plain number (e.g. '> 0.9')."""
    naive: tuple[str, float] | None = None
    """The naive predictor an out-of-sample row must beat (e.g. 'carry the calibration MFU over') and its
    value: the model beats it when its mean is strictly closer to the reference (:attr:`beats_naive`); a
    judged row passes only if it does (:func:`result` adds it to the invariants)."""

    @property
    def beats_naive(self) -> bool | None:
        """Whether the model's mean is strictly closer to the reference than the naive predictor (None
        without one)."""
        if self.naive is None:
            return None
        return abs(self.mean - self.reference) < abs(self.naive[1] - self.reference)

    @property
    def kind(self) -> str:
        return self.estimate.kind if self.estimate is not None else "CI"

    @property
    def verdict(self) -> str:
        if not self.check:
            return "info"
        return "pass" if self.passed else "FAIL"

    def at(self, confidence: float) -> "CaseResult":
        """The same result judged with its interval at ``confidence``."""
        if self.estimate is None:
            return self
        m, lo, hi = self.estimate.interval(confidence)
        return replace(self, mean=m, ci_low=lo, ci_high=hi, confidence=confidence,
                       passed=_judge(self.reference, self.ref_low, lo, hi, self.invariants, self.check))

    def head(self, k: int) -> "CaseResult":
        """The same result over the first ``k`` replications only (``--sweep``)."""
        assert self.estimate is not None
        est = self.estimate.head(k)
        m, lo, hi = est.interval(self.confidence)
        ref = est.reference() if isinstance(est, Calibrated) else self.reference
        return replace(self, estimate=est, reference=ref, mean=m, ci_low=lo, ci_high=hi, replications=est.n,
                       passed=_judge(ref, self.ref_low, lo, hi, self.invariants, self.check))

    def excludes(self, value: float) -> bool:
        """True if ``value`` lies outside this result's interval."""
        return not (self.ci_low <= value <= self.ci_high)

    def failed_invariants(self) -> list[str]:
        return [k for k, ok in self.invariants.items() if not ok]


def _judge(ref: float, ref_low: float | None, lo: float, hi: float, invariants: dict[str, bool],
           check: bool) -> bool:
    if not check:
        return True
    low = ref if ref_low is None else ref_low
    return bool(lo <= ref and hi >= low and all(invariants.values()))


def result(case: str, quantity: str, ref: float, est: Estimate, s: Settings, note: str = "", *,
           ref_low: float | None = None, check: bool = True, wrong: dict[str, float] | None = None,
           invariants: dict[str, bool] | None = None, sample: str = "theory",
           samples: list[float] | None = None, ref_text: str = "", naive: tuple[str, float] | None = None) -> CaseResult:
    """Build a CaseResult judged at ``s.confidence``."""
    m, lo, hi = est.interval(s.confidence)
    inv = {k: bool(v) for k, v in (invariants or {}).items()}
    if naive is not None and check:   # a judged row must beat its naive predictor (issue 49)
        inv[f"beats the naive predictor '{naive[0]}'"] = abs(m - float(ref)) < abs(naive[1] - float(ref))
    if samples is None:
        for name in ("x", "counts", "hits"):
            if hasattr(est, name):
                samples = [float(v) for v in getattr(est, name)]
                break
    return CaseResult(case, quantity, float(ref), m, lo, hi, est.n, s.confidence,
                      _judge(float(ref), ref_low, lo, hi, inv, check), note, samples or [], est, ref_low, check,
                      dict(wrong or {}), inv, sample, ref_text, naive)


# ---- running scenarios ----------------------------------------------------------------------------

def case_seed(root: int, name: str) -> int:
    """Seed of a case's scenario: the root seed plus a stable digest of the scenario's name, so
    different cases draw independent numbers (cases sharing part paths would otherwise share
    draws and err in the same direction) while one case's variants under one name keep common
    random numbers."""
    digest = int.from_bytes(hashlib.blake2b(name.encode("utf-8"), digest_size=4).digest(), "little")
    return (int(root) + digest) % 2**32


def load_case_doc(doc: Doc, s: Settings) -> Any:
    """Validate a case's scenario document (seeded by :func:`case_seed` unless it sets a seed, with the
    settings' ``mutate`` applied) into a Scenario."""
    d = copy.deepcopy(doc)
    d.setdefault("seed", case_seed(s.seed, str(d["name"])))
    if s.mutate is not None:
        d = s.mutate(d)
    return load_dict(d, source=f"validation:{d['name']}").scenario


def run_doc(doc: Doc, reps: int, s: Settings, first_rep: int = 0) -> list[ReplicationResult]:
    """Replications ``first_rep .. first_rep + reps − 1`` of a case's scenario document."""
    sc = load_case_doc(doc, s)
    return [run_replication(sc, r) for r in range(first_rep, first_rep + reps)]


def bonferroni_confidence(m: int, alpha: float = FAMILY_ALPHA) -> float:
    """Per-interval confidence so that m intervals all cover with probability ≥ 1 − alpha."""
    return 1.0 - alpha / max(1, int(m))


TEST_INTERVALS = 100
"""The pytest suite's statistical budget (issue 51): an upper bound on the statistical intervals its
quick (non-slow) tests judge on distinct random draws. Tests that call a case with the quick settings
and the suite's root seed judge the same draws as the ``twin validate --quick`` rows (one interval each);
the others are listed in ``tests/judging.py`` (``OTHER_DRAWS``), and a test checks that the union bound
over both stays below :data:`FAMILY_ALPHA`."""

TEST_CONFIDENCE = 1.0 - FAMILY_ALPHA / TEST_INTERVALS
"""Confidence of each statistical interval the tests judge (Bonferroni over :data:`TEST_INTERVALS`):
re-rolling every seed fails a correct model somewhere in the suite with probability at most 1 %."""


def judge_family(results: list[CaseResult], alpha: float = FAMILY_ALPHA) -> tuple[list[CaseResult], float]:
    """Re-judge every result at the Bonferroni level over the checked (``check=True``) quantities."""
    m = sum(1 for r in results if r.check)
    conf = bonferroni_confidence(m, alpha)
    return [r.at(conf) for r in results], conf
