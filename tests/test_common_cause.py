"""Common-cause groups of site units (issue 24): a common event fails the working units of one group
only (a zone's CRAH units, a loop's CDUs), each with its own ticket; β needs an exponential failure."""

from __future__ import annotations

import pytest

from twin.errors import InputError
from twin.scenario import load_scenario
from twin.sim import run_replication


def _common_events(res, part: str) -> list[set[str]]:  # type: ignore[no-untyped-def]
    ev = res.tables["events"]
    f = ev[(ev["kind"] == "fail") & ev["path"].astype(str).str.contains(f".{part}", regex=False)]
    groups = f.groupby("time_h")["path"].apply(lambda p: {str(x).rsplit(".", 1)[0] for x in p})
    sizes = f.groupby("time_h").size()
    return [g for g, n in zip(groups, sizes) if n > 1]


@pytest.mark.parametrize("name,part,key", [("air", "crah", "cooling.air.crah"),
                                           ("liquid", "cdu", "cooling.liquid.cdu")])
def test_a_common_event_fails_the_units_of_one_group(name: str, part: str, key: str) -> None:
    sets = ["horizon_days=60", f"{key}.common_cause_beta=0.5", f"{key}.failure={{dist: exponential, mean_h: 200}}"]
    loaded = load_scenario(f"scenarios/{name}.yaml", sets)
    res = run_replication(loaded.scenario, 0, loaded.hash)
    m = res.metrics
    assert m[f"ccf_events.{part}"] >= 3
    multi = _common_events(res, part)
    assert multi and all(len(g) == 1 for g in multi)  # every multiple failure lies inside one zone / loop
    t = res.tables["tickets"]
    assert len(t[t["part"] == part]) == m[f"failures.{part}"]  # one ticket per failed unit


def test_beta_needs_an_exponential_failure() -> None:
    with pytest.raises(InputError, match=r"cooling\.air\.crah\.common_cause_beta: needs an exponential"):
        load_scenario("scenarios/air.yaml", ["cooling.air.crah.common_cause_beta=0.1",
                                             "cooling.air.crah.failure={dist: weibull, shape: 2, scale_h: 5e4}"])
    with pytest.raises(InputError, match=r"common_cause_beta"):
        load_scenario("scenarios/air.yaml", ["cooling.air.crah.common_cause_beta=1.0"])
