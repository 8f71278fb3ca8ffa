"""The decision summary (issue 30, item 1): its rule, and sentences that agree with the tables."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats as st

from twin.experiment import stats
from twin.experiment.summary import options_summary, rank_options, resolve_objectives
from twin.report.summary import payback_sentences, sentences

ROOT = Path(__file__).resolve().parent.parent


def _table(values: np.ndarray, metric: str = "cost.per_useful_gpu_hour") -> pd.DataFrame:
    return pd.DataFrame({"replication": np.arange(len(values)), metric: values,
                         "goodput.down": 0.01 + 0.001 * np.arange(len(values)), "goodput.lost": 0.02})


def _diffs(mean: float, n: int = 10) -> np.ndarray:
    """n values with exactly this mean and sample SD √n (so s/√n = 1)."""
    z = np.linspace(-1, 1, n)
    z = (z - z.mean()) / z.std(ddof=1)
    return mean + np.sqrt(n) * z


def test_clear_difference_is_recommended_and_is_the_winner() -> None:
    base = np.linspace(2.0, 2.5, 12)
    tabs = {"A": _table(base), "B": _table(base - 0.1)}
    e = options_summary(tabs, ["cost.per_useful_gpu_hour"], "A")[0]
    assert e["recommended"] == "B"
    w = stats.winners(tabs, ["cost.per_useful_gpu_hour"])
    assert w.winner.iloc[0] == e["recommended"] and bool(w.clear.iloc[0])
    text = " ".join(sum(sentences({"kind": "compare", "currency": "USD", "objectives": [e]}), []))
    assert "Recommended: B" in text and "−0.1 USD" in text
    assert "What drives it (B − A" not in text or "goodput" in text  # drivers only from mechanisms that differ


def test_no_difference_says_how_many_replications_would_resolve_it() -> None:
    a = np.full(10, 100.0)
    tabs = {"A": _table(a), "B": _table(a + _diffs(1.0))}  # t·s/√n = 2.26 > 1: not resolved
    e = rank_options({k: v.set_index("replication") for k, v in tabs.items()}, "cost.per_useful_gpu_hour")
    e["replications"] = 10
    assert e["recommended"] is None
    need = e["replications_needed"]
    s = float(np.std(_diffs(1.0), ddof=1))
    assert need > 10 and st.t.ppf(0.975, need - 1) * s / np.sqrt(need) <= 1.0 + 1e-9
    assert st.t.ppf(0.975, need - 2) * s / np.sqrt(need - 1) > 1.0 - 0.02  # not far more than needed
    text = " ".join(sum(sentences({"kind": "compare", "currency": "USD", "objectives": [e]}), []))
    assert "No difference at this number of replications (10)" in text
    assert f"About {need:,} replications ({need - 10:,} more)" in text
    assert "Recommended" not in text


def test_bonferroni_beyond_two_options() -> None:
    """A lead whose 95 % interval against B excludes zero but whose 97.5 % interval (two pairs) does
    not is recommended between two options and not among three."""
    a = np.full(10, 100.0)
    lead = a - _diffs(2.5)  # lower cost is better; |mean| 2.5 between t(.975, 9) = 2.26 and t(.9875, 9) = 2.69
    two = {"A": _table(a), "L": _table(lead)}
    three = {**two, "C": _table(a + 50.0)}
    idx = {k: v.set_index("replication") for k, v in two.items()}
    assert rank_options(idx, "cost.per_useful_gpu_hour")["recommended"] == "L"
    idx3 = {k: v.set_index("replication") for k, v in three.items()}
    r3 = rank_options(idx3, "cost.per_useful_gpu_hour")
    assert r3["lead"] == "L" and r3["recommended"] is None and r3["level"] == pytest.approx(0.975)


def test_identical_options_are_no_difference_without_a_replication_count() -> None:
    a = np.linspace(1, 2, 6)
    e = rank_options({"A": _table(a).set_index("replication"), "B": _table(a).set_index("replication")},
                     "cost.per_useful_gpu_hour")
    e["replications"] = 6
    text = " ".join(sum(sentences({"kind": "compare", "objectives": [e]}), []))
    assert e["recommended"] is None and "No difference" in text and "replications (" not in text


def _pb(k: float, b: float, years: float | str) -> dict:
    return {"option": "liquid", "against": "air", "currency": "USD", "extra_capital": k, "annual_net_benefit": b,
            "annual_net_benefit_ci_low": b - 10, "annual_net_benefit_ci_high": b + 10, "payback_years": years,
            "payback_years_ci_low": years, "payback_years_ci_high": "never", "discount_rate": 0.08,
            "tariff_multiplier_breakeven": 1.5, "energy_price_breakeven_per_kwh": 0.15, "energy_price_per_kwh": 0.1}


@pytest.mark.parametrize("k,b,years", [(1e6, -5e4, "never"), (1e6, 0.0, "never"), (1e6, 1e3, "never")])
def test_a_net_benefit_too_small_never_reads_pays_back(k: float, b: float, years: str) -> None:
    text = " ".join(payback_sentences(_pb(k, b, years), "USD", True))
    assert "Payback: never" in text
    assert not re.search(r"repays|pays back in|pays for itself", text)
    if b <= 0:
        assert "never: net benefit ≤ 0" in text


def test_positive_net_benefit_pays_back_in_years() -> None:
    text = " ".join(payback_sentences(_pb(1e6, 2e5, 5.6), "USD", True))
    assert "repays it in 5.6 years" in text and "1 M USD more capital" in text
    assert "energy price of 0.15 USD/kWh" in text


def test_objective_falls_back_without_costs_and_refuses_a_neutral_metric() -> None:
    from twin.errors import InputError

    assert resolve_objectives(None, ["goodput", "node_availability"]) == (["goodput"], ["no_costs:goodput"])
    with pytest.raises(InputError, match="no better direction"):
        resolve_objectives(["utilisation"], ["utilisation"])
    with pytest.raises(InputError, match="no such metric"):
        resolve_objectives(["cost.total"], ["goodput"])


SCI = re.compile(r"(?<![\w/.])\d+(\.\d+)?[eE][+-]?\d+\b")
RAW = ("node_availability", "fleet_capacity_availability", "cost.total", "cost.per_useful_gpu_hour", "energy.it_kwh",
       "ettr.max_job", "useful_gpu_hours", "node_down_hours", "payback_years", " inf ")


def test_bundled_comparison_reads_as_sentences_and_numbers(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """air vs liquid (docs/decisions/air-or-liquid.md) at a small size: the terminal and the report open with
    the summary, the recommendation is the clear winner of the objective in the stored tables, and
    no money, energy, hours or count prints in scientific notation or under its raw key."""
    from twin import cli

    code = cli.main(["compare", str(ROOT / "scenarios/air.yaml"), str(ROOT / "scenarios/liquid.yaml"),
                     "--set", "horizon_days=20", "--reps", "3", "--results", str(tmp_path), "--quiet"])
    out = capsys.readouterr().out
    assert code == 0
    assert out.index("decision summary") < out.index("paired differences")
    folder = next((tmp_path / "compare").iterdir())
    md = (folder / "report.md").read_text()
    assert md.index("## Decision summary") < md.index("## Variants")
    win = pd.read_parquet(folder / "winners.parquet").set_index("metric").loc["cost.per_useful_gpu_hour"]
    m = re.search(r"Recommended: (\w+)", md)
    if bool(win.clear):
        assert m is not None and m.group(1) == win.winner
    else:
        assert m is None and "No difference at this number of replications" in md
    for text in (out, md):
        for line in text.splitlines():
            if "hash" in line or line.startswith("![") or str(tmp_path) in line:
                continue
            assert not SCI.search(line), line
            for k in RAW:
                assert k not in line, (k, line)


def test_breakeven_table_says_never_instead_of_inf() -> None:
    """It showed 'payback years inf [inf, inf]' and named under 'repays' an option whose net benefit
    was negative."""
    from twin.report.cost_figures import breakeven_rows

    be = pd.DataFrame([{"variant": "liquid", "reference": "air", "currency": "USD", "n": 5.0,
                        "extra_capital": 913_600.0, "capital_heavier": "variant", "annual_net_benefit": -3107.0,
                        "annual_net_benefit_ci_low": -3114.0, "annual_net_benefit_ci_high": -3101.0,
                        "value_per_useful_gpu_hour": 2.0, "discount_rate": 0.08, "payback_years": float("inf"),
                        "payback_years_ci_low": float("inf"), "payback_years_ci_high": float("inf"),
                        "tariff_multiplier_breakeven": 3.43, "energy_price_breakeven_per_kwh": 0.343}])
    t = breakeven_rows(be)
    cells = " | ".join(str(v) for v in t.iloc[0])
    assert "repays" not in " ".join(t.columns)
    assert t.payback.iloc[0] == "never: net benefit of liquid ≤ 0"
    assert "inf" not in cells and "e+" not in cells
    assert t["more capital"].iloc[0] == "liquid" and "913.6 k USD" in cells


def test_forecast_waterfall_starts_at_zero_and_summary_recommends_only_a_clear_lever() -> None:
    """The waterfall's axis started near the ideal, so a 5-day loss looked 2.5 × a 66-day ideal bar."""
    import matplotlib.pyplot as plt

    from twin.forecast.report import fig_waterfall, summary_sentences

    wf = pd.DataFrame({"step": ["ideal", "gpu", "expected"], "kind": ["ideal", "failure", "total"],
                       "days": [66.0, 5.0, 71.0], "start": [0.0, 66.0, 0.0], "end": [66.0, 71.0, 71.0]})
    fig = fig_waterfall(wf)
    assert fig.axes[0].get_ylim()[0] == 0.0
    plt.close(fig)
    dist = {"mean_days": 71.0, "mean_ci_low": 70.0, "mean_ci_high": 72.0, "replications": 10, "ideal_days": 66.0}
    loss = pd.DataFrame({"bucket": ["gpu", "checkpoints"], "mean_days": [5.0, 1.0]})
    levers = pd.DataFrame({"lever": ["spares", "crews"], "saved_days": [2.0, 0.5], "saved_ci_low": [1.5, -0.5],
                           "saved_ci_high": [2.5, 1.5]})
    text = " ".join(sum(summary_sentences(dist, loss, levers), []))
    assert "Recommended lever: spares" in text and "gpu 5 days" in text  # the catalogue format of days
    levers.loc[0, ["saved_ci_low", "saved_ci_high"]] = [-0.1, 4.1]
    text = " ".join(sum(summary_sentences(dist, loss, levers), []))
    assert "Recommended lever" not in text and "No lever clearly saves time" in text


def test_drivers_name_each_lost_gpu_hour_once() -> None:
    """The mechanism buckets partition the losses; the coarse buckets and the raw breakdowns by cause
    overlap them, so a summary names only the former when they exist (else the coarse ones)."""
    from twin.experiment.summary import mechanisms

    cols = ["goodput", "goodput.useful", "goodput.lost", "goodput.idle", "goodput.down.gpu", "goodput.lost.hbm",
            "goodput.slowdown.thermal", "goodput.mechanism.idle", "goodput.mechanism.failure.hbm", "cost.total"]
    assert mechanisms(cols, "goodput") == ["goodput.mechanism.idle", "goodput.mechanism.failure.hbm"]
    old = [c for c in cols if not c.startswith("goodput.mechanism.")]
    assert mechanisms(old, "goodput") == ["goodput.lost", "goodput.idle"]


def test_sweep_with_no_feasible_point_exits_1_and_says_so(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """A constrained sweep whose points all miss the target is a failed check (exit 1) whose summary says
    nothing qualifies. Failed at twin 0.6.0 with exit 2, "--objective: cost.total: no such metric in the
    results; available: " (empty): the summary resolved the objective on the columns of no point."""
    from twin import cli

    code = cli.main(["sweep", str(ROOT / "scenarios/baseline.yaml"), "--param", "maintenance.crews.technicians.count=1,2",
                     "--objective", "cost.total", "--constraint", "node_availability>=1.5", "--reps", "2",
                     "--set", "horizon_days=2", "--results", str(tmp_path), "--quiet"])
    captured = capsys.readouterr()
    assert code == 1, captured.err
    assert "no grid point meets the constraints" in captured.out + captured.err
    (folder,) = (tmp_path / "baseline").glob("sweep-*")
    md = (folder / "report.md").read_text()
    assert "No point meets node_availability>=1.5 at the stated confidence" in md


def test_a_tie_at_the_top_does_not_call_the_options_it_beats_the_same() -> None:
    """Two options identical in every replication and a third worse by a constant (N and N+1 against
    split and 2N power: the switchboard's yearly visit drains every node of one-feed chains). Failed at
    twin 0.6.0: 'node availability is the same for A, B, C, D in every one of the 4 replications',
    although the paired table showed C and D lower by 0.0925 points in every replication."""
    top = np.array([0.9995, 0.9993, 0.9996, 0.9994])
    low = top - 0.000925
    tabs = {"A": _table(top, "node_availability"), "B": _table(top.copy(), "node_availability"),
            "C": _table(low, "node_availability"), "D": _table(low.copy(), "node_availability")}
    e = rank_options({k: v.set_index("replication") for k, v in tabs.items()}, "node_availability")
    e["replications"] = 4
    text = " ".join(sum(sentences({"kind": "compare", "objectives": [e]}), []))
    assert e["recommended"] is None and e["all_identical"]
    assert "identical for A, B in every one of the 4 replications" in text, text
    assert "C, D" not in text and "Both are better than C" in text and "; D (" in text, text
