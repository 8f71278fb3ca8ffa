"""Input errors that list everything and suggest a fix, and advisories for unit slips (issue 30 item 7).

- every error of a scenario is listed, one ``error:`` line each (not the first and "+N more");
- an unknown key gets the nearest valid key at its place (``mtbf: unknown key; did you mean mtbf_h?``);
- a value that looks like a unit slip (a horizon of thousands of days, a temperature in kelvin or
  Fahrenheit, kilowatts in a watt field, hours in a days field) is an advisory on a valid scenario
  and a ``hint:`` after the errors of an invalid one, and no bundled scenario raises one.
"""

from __future__ import annotations

import copy
import pickle
from pathlib import Path
from typing import Any

import pytest
import yaml

from twin import cli
from twin.errors import InputError, InputErrors
from twin.scenario.advice import advice_lines, advise, unit_slip_advice
from twin.scenario.field_errors import keys_at
from twin.scenario.loader import load_dict, load_scenario
from twin.scenario.slips import slip, unit_slips

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = sorted((ROOT / "scenarios").glob("*.yaml"))

TINY: dict[str, Any] = {
    "name": "tiny", "seed": 3, "horizon_days": 5,
    "cluster": {"racks": 1, "nodes_per_rack": 2, "node": {"gpus": 8, "parts": {
        "gpu": {"count": 8, "failure": {"mtbf_h": 5000}, "repair": {"time": {"dist": "fixed", "value_h": 2}}}}}},
    "maintenance": {"crews": {"technicians": {"count": 1}}},
}


def tiny() -> dict[str, Any]:
    return copy.deepcopy(TINY)


def write(path: Path, doc: Any) -> Path:
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str], str]:
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, err.splitlines(), out


# ------------------------------------------------------------------ every error, one line each

def three_mistakes() -> dict[str, Any]:
    doc = tiny()
    doc["cluster"]["racks"] = -2  # out of range
    doc["cluster"]["node"]["parts"]["gpu"]["failure"] = {"mtbf": 5000}  # misspelt key
    doc["maintenance"]["crews"]["technicians"]["shift"] = "nights"  # not an allowed value
    return doc


def test_every_error_of_a_file_with_three_mistakes_is_listed(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path / "three.yaml", three_mistakes())
    code, lines, out = run(["run", str(path), "--results", str(tmp_path / "r"), "--quiet"], capsys)
    assert code == 2 and out == ""
    assert len(lines) == 3, lines
    assert all(x.startswith(f"error: {path}: ") for x in lines), lines
    fields = {x[len(f"error: {path}: "):].split(": ")[0] for x in lines}
    assert fields == {"cluster.racks", "cluster.node.parts.gpu.failure.mtbf", "maintenance.crews.technicians.shift"}
    assert not any("more error" in x for x in lines)
    by_field = {x[len(f"error: {path}: "):].split(": ")[0]: x for x in lines}
    assert "got -2" in by_field["cluster.racks"]
    assert "did you mean mtbf_h?" in by_field["cluster.node.parts.gpu.failure.mtbf"]
    assert "'nights'" in by_field["maintenance.crews.technicians.shift"]
    assert not (tmp_path / "r").exists()


def test_the_exception_carries_every_error_and_survives_pickling() -> None:
    with pytest.raises(InputErrors) as info:
        load_dict(three_mistakes(), "<three>")
    exc = info.value
    assert len(exc.lines()) == 3 and len(str(exc).splitlines()) == 3
    assert exc.field == exc.errors[0].field and exc.one_line() == exc.lines()[0]  # the first, for code reading one
    again = pickle.loads(pickle.dumps(exc))  # an error raised in a worker reaches the parent whole
    assert isinstance(again, InputErrors) and again.lines() == exc.lines()
    # a single error stays a plain InputError with its one line
    doc = tiny()
    doc["cluster"]["racks"] = 0
    with pytest.raises(InputError) as one:
        load_dict(doc, "<one>")
    assert not isinstance(one.value, InputErrors) and one.value.lines() == [one.value.one_line()]


def test_a_bool_count_is_refused_on_count_alone() -> None:
    """`count: true` was also reported on `required`, a field the user never set (a bool is an int to
    Python, so the default k-of-n copied it)."""
    doc = tiny()
    doc["cluster"]["node"]["parts"]["gpu"]["count"] = True
    with pytest.raises(InputError) as info:
        load_dict(doc, "<bool>")
    assert info.value.lines() == ["<bool>: cluster.node.parts.gpu.count: Input should be a valid integer, got True"]


# ------------------------------------------------------------------ the nearest valid key

@pytest.mark.parametrize("where,key,suggested", [
    (("cluster", "node", "parts", "gpu", "failure"), "mtbf", "mtbf_h"),  # the distribution shorthand
    (("cluster", "node", "parts", "gpu", "failure", "weibull"), "scale", "scale_h"),  # inside a tagged union
    (("cluster", "node", "gpu"), "tdpw", "tdp_w"),
    (("cluster",), "raks", "racks"),  # ("rack" is a key since issue 23: cluster.rack)
    ((), "horizon_day", "horizon_days"),
    ((), "HorizonDays", "horizon_days"),  # case and separators
    (("maintenance", "crews", "technicians"), "shifts", "shift"),
    (("maintenance", "spares", "gpu"), "leadtime_days", "lead_time_days"),
    (("workload", "jobs", 0, "checkpoint"), "interval", "interval_h"),
])
def test_a_misspelt_key_gets_its_suggestion(where: tuple[Any, ...], key: str, suggested: str) -> None:
    assert suggested in keys_at(where)
    doc: dict[str, Any] = tiny()
    doc["workload"] = {"jobs": [{"name": "j", "gpus": 8, "work_h": 10}]}
    doc["maintenance"]["spares"] = {"gpu": {"stock": 1}}
    cur: Any = doc
    for k in where:
        if k == "weibull":
            cur.clear()
            cur.update({"dist": "weibull", "shape": 1.0, "scale_h": 100})
            continue
        cur = cur[k] if isinstance(cur, list) else cur.setdefault(k, {})
    cur[key] = 1
    if key == "mtbf":
        cur.pop("mtbf_h")
    with pytest.raises(InputError) as info:
        load_dict(doc, "<typo>")
    shown = ".".join(str(k) for k in where if k != "weibull")
    line = next(x for x in info.value.lines() if f": {shown + '.' if shown else ''}{key}: " in x)
    assert line.endswith(f"unknown key; did you mean {suggested}?"), line


def test_an_unknown_key_far_from_any_lists_the_keys_allowed_there() -> None:
    doc = tiny()
    doc["maintenance"]["crews"]["technicians"]["zzzzqqq"] = 1
    with pytest.raises(InputError) as info:
        load_dict(doc, "<far>")
    assert "unknown key; allowed here: count, shift" in info.value.one_line(), info.value.one_line()


# ------------------------------------------------------------------ unit slips

SLIPS = [
    ("horizon_days=2160", "horizon_days", "2160 h is 90 days"),
    ("cooling.air.design_ambient_c=104", "cooling.air.design_ambient_c", "104 °F is 40.0 °C"),
    ("cooling.ambient.mean_c=150", "cooling.ambient.mean_c", "above 100 °C"),
    ("cluster.node.non_gpu_idle_w=1.6", "cluster.node.non_gpu_idle_w", "1.6 kW is 1600 W"),  # below non_gpu_w
    ("maintenance.spares.gpu.lead_time_days=336", "maintenance.spares.gpu.lead_time_days", "336 h is 14 days"),
    ("cooling.air.crah.capacity_kw=200000000", "cooling.air.crah.capacity_kw", "200000 kW"),
]


@pytest.mark.parametrize("override,field,text", SLIPS, ids=[s[1] for s in SLIPS])
def test_each_unit_slip_advisory_fires_on_a_slip(override: str, field: str, text: str) -> None:
    base = ROOT / "scenarios" / "air.yaml"
    assert not unit_slip_advice(load_scenario(base).scenario)
    sc = load_scenario(base, [override]).scenario
    flags = {a.field: a.text for a in unit_slip_advice(sc)}
    assert set(flags) == {field}, flags
    assert text in flags[field], flags[field]
    assert f"advice: {field}: " in "\n".join(advice_lines(sc))  # printed with the other advisories


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.name for p in SCENARIOS])
def test_unit_slip_advisories_stay_quiet_on_the_bundled_scenarios(path: Path) -> None:
    loaded = load_scenario(path)
    assert unit_slip_advice(loaded.scenario) == []
    assert unit_slips(loaded.resolved) == []


@pytest.mark.parametrize("field,value", [
    ("horizon_days", 365), ("horizon_days", 999), ("horizon_days", 1e7),  # hours beyond any horizon: no guess
    ("maintenance.spares.gpu.lead_time_days", 14), ("maintenance.spares.gpu.lead_time_days", 250),  # not ×24
    ("cooling.air.supply_c", 35), ("cooling.gpu.shutdown_c", 110),  # a junction limit may pass 100 °C
    ("cooling.ambient.seasonal_amplitude_c", 150), ("cooling.ageing.doubling_c", 120),  # differences
    ("cluster.node.gpu.tdp_w", 700), ("cluster.node.gpu.idle_w", 0), ("cooling.gpu.r_air_c_per_w", 0.075),
    ("costs.capital.chiller_per_kw", 5e6), ("cooling.air.crah.capacity_kw", 200), ("horizon_days", True),
])
def test_plausible_values_are_not_slips(field: str, value: Any) -> None:
    assert slip(field, value) is None


def test_a_slip_that_makes_the_scenario_invalid_is_a_hint_after_the_errors(tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """A TDP in kilowatts is refused on idle_w (must be < tdp_w), a field the user never set: the hint
    names tdp_w and what was probably meant. A kelvin temperature refused by its bound says so on its
    own line."""
    path = write(tmp_path / "kw.yaml", tiny())
    code, lines, _ = run(["run", str(path), "--dry-run", "--set", "cluster.node.gpu.tdp_w=0.7"], capsys)
    assert code == 2
    assert lines[0].startswith(f"error: {path} (with --set): cluster.node.gpu.idle_w: must be < tdp_w"), lines
    assert lines[1:] == [f"hint: {path} (with --set): cluster.node.gpu.tdp_w: 0.7 W is below 10 W; if kilowatts "
                         "were meant, 0.7 kW is 700 W (tdp_w: 700); the unit is watts"], lines
    air = ROOT / "scenarios" / "air.yaml"
    code, lines, _ = run(["run", str(air), "--dry-run", "--set", "cooling.air.supply_c=295"], capsys)
    assert code == 2 and len(lines) == 1, lines
    assert "cooling.air.supply_c: Input should be less than or equal to 200, got 295" in lines[0]
    assert "if kelvin was meant, 295 K is 21.85 °C" in lines[0]


def test_dry_run_prints_a_slip_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path / "h.yaml", tiny())
    code, lines, out = run(["run", str(path), "--dry-run", "--set", "horizon_days=2160"], capsys)
    assert code == 0, lines
    slips = [x for x in out.splitlines() if x.startswith("advice: horizon_days:")]
    assert len(slips) == 1 and "2160 h is 90 days" in slips[0], out
    assert [a.field for a in advise(load_scenario(path, ["horizon_days=2160"]).scenario)].count("horizon_days") == 1
