"""The uncertainty: section and twin decide (issue 46): validation, draws keyed by path,
reproducible and resumable studies on a tiny scenario."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from twin.cli import main
from twin.errors import InputError, InputErrors
from twin.scenario import load_dict, load_scenario
from twin.scenario.uncertainty import Uncertainty, check_against, design, overrides, union_keys

ROOT = Path(__file__).resolve().parents[1]


def tiny(name: str = "one_crew", crews: int = 1, days: float = 20) -> dict[str, Any]:
    return {
        "name": name, "seed": 1, "horizon_days": days,
        "cluster": {"racks": 1, "nodes_per_rack": 4, "node": {"gpus": 8, "parts": {
            "gpu": {"failure": {"mtbf_h": 200}, "repair": {"time": {"dist": "exponential", "mean_h": 20}}}}}},
        "maintenance": {"detection": {"dist": "fixed", "value_h": 0}, "crews": {"technicians": {"count": crews}}},
        "uncertainty": {"inputs": {
            "cluster.node.parts.gpu.failure.mtbf_h": {"dist": "uniform", "low": 100, "high": 400, "source": "assumption"},
            "cluster.node.parts.gpu.repair.time.mean_h": {"dist": "triangular", "low": 5, "mode": 20, "high": 60,
                                                          "source": "assumption"}}},
    }


def write(path: Path, doc: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_the_section_is_not_part_of_the_scenario_or_its_hash() -> None:
    with_unc = load_dict(tiny())
    doc = tiny()
    del doc["uncertainty"]
    assert load_dict(doc).hash == with_unc.hash
    assert "uncertainty" not in with_unc.resolved
    assert with_unc.scenario.uncertainty is not None


def test_every_bad_path_is_named_at_once() -> None:
    doc = tiny()
    doc["uncertainty"]["inputs"]["cluster.node.partz.gpu.failure.mtbf_h"] = {"dist": "uniform", "low": 1, "high": 2,
                                                                            "source": "assumption"}
    doc["uncertainty"]["inputs"]["cluster.node.type"] = {"dist": "uniform", "low": 1, "high": 2, "source": "assumption"}
    doc["uncertainty"]["groups"] = {"g": {"maintenance.crews.technicians.count": {
        "dist": "choice", "values": [1, 2], "source": "assumption"}, "horizon_dayz": {
        "dist": "uniform", "low": 1, "high": 2, "source": "assumption"}}}
    loaded = load_dict(doc, "s.yaml")  # other commands ignore the section; twin decide checks its paths
    with pytest.raises(InputErrors) as exc:
        check_against(loaded.scenario.uncertainty, loaded.scenario.model_dump(mode="json"), doc, "s.yaml")
    text = "\n".join(exc.value.lines())
    assert "uncertainty.inputs.cluster.node.partz.gpu.failure.mtbf_h: not a field of this scenario: no key 'partz'" in text
    assert "uncertainty.inputs.cluster.node.type: the field holds \"dgx-h100\", not a number" in text
    assert "uncertainty.groups.g.horizon_dayz: not a field" in text
    assert "technicians" not in text  # a choice over an existing field is fine


@pytest.mark.parametrize("spec, says", [
    ({"dist": "uniform", "low": 2, "high": 1, "source": "assumption"}, "must be > low"),
    ({"dist": "uniform", "low": 1, "high": 2}, "source"),
    ({"dist": "normal", "mean": 1, "sd": 1, "source": "x"}, "low"),
    ({"dist": "gamma", "source": "x"}, "gamma"),
    ({"dist": "choice", "values": [1, 2], "weights": [1], "source": "x"}, "one weight per value"),
])
def test_distribution_errors_name_their_field(spec: dict[str, Any], says: str) -> None:
    doc = tiny()
    doc["uncertainty"]["inputs"]["cluster.node.parts.gpu.failure.mtbf_h"] = spec
    with pytest.raises(InputError) as exc:
        load_dict(doc, "s.yaml")
    assert "uncertainty.inputs" in str(exc.value) and says in str(exc.value)


def test_distributions_map_quantiles() -> None:
    u = Uncertainty.model_validate({"inputs": {
        "a": {"dist": "lognormal", "median": 10, "sigma": 0.5, "low": 5, "high": 40, "source": "x"},
        "b": {"dist": "beta", "alpha": 2, "beta": 2, "low": 10, "high": 20, "source": "x"},
        "c": {"dist": "normal", "mean": 0, "sd": 1, "low": -1, "high": 3, "source": "x"},
        "d": {"dist": "choice", "values": ["x", "y", "z"], "weights": [1, 1, 2], "source": "x"}}})
    a, b, c, d = (u.inputs[k] for k in "abcd")
    assert a.ppf(np.array([0.0, 1.0])).tolist() == [5.0, 40.0]
    assert b.ppf(np.array([0.5]))[0] == pytest.approx(15.0)
    lo, hi = c.ends()
    assert (lo, hi) == (-1.0, 3.0)
    assert [d.values[i] for i in d.index(np.array([0.1, 0.4, 0.6, 0.99]))] == ["x", "y", "z", "z"]
    from scipy.stats import truncnorm

    assert c.ppf(np.array([0.3]))[0] == pytest.approx(truncnorm.ppf(0.3, -1, 3))


def test_a_path_in_several_options_gets_the_same_draw_and_others_keep_theirs() -> None:
    a = Uncertainty.model_validate({"inputs": {"x.p": {"dist": "uniform", "low": 0, "high": 1, "source": "s"},
                                               "x.q": {"dist": "uniform", "low": 0, "high": 10, "source": "s"}}})
    b = Uncertainty.model_validate({"inputs": {"x.q": {"dist": "uniform", "low": 0, "high": 10, "source": "s"}},
                                    "groups": {"g": {"x.r": {"dist": "uniform", "low": 0, "high": 1, "source": "s"},
                                                     "x.s": {"dist": "uniform", "low": 0, "high": 1, "source": "s",
                                                             "opposite": True}}}})
    keys = union_keys([a, b, None])
    assert keys == ["g", "x.p", "x.q"]
    U = design(8, len(keys), 5)
    res = {"x": {"p": 0.5, "q": 1.0, "r": 0.5, "s": 0.5}}
    for row in U:
        sa = dict(e.split("=") for e in overrides(a, keys, row, res))
        sb = dict(e.split("=") for e in overrides(b, keys, row, res))
        assert sa["x.q"] == sb["x.q"] and "x.p" not in sb and "x.r" not in sa
        assert float(sb["x.r"]) == pytest.approx(1 - float(sb["x.s"]))
    assert np.array_equal(design(16, 3, 5)[:8], U)  # Sobol' draws are a prefix-stable sequence
    assert not np.array_equal(design(8, 3, 6), U)
    assert design(8, 3, 5, "lhs").shape == (8, 3)


def test_an_integer_field_gets_integers() -> None:
    u = Uncertainty.model_validate({"inputs": {"m.c.t.count": {"dist": "uniform", "low": 1, "high": 4, "source": "s"}}})
    sets = [overrides(u, ["m.c.t.count"], np.array([x]), {"m": {"c": {"t": {"count": 2}}}})[0] for x in (0.0, 0.4, 0.99)]
    assert sets == ["m.c.t.count=1", "m.c.t.count=2", "m.c.t.count=4"]


def _run(tmp: Path, results: str, *extra: str, code: int = 0) -> Path:
    """A 16-draw study of the two tiny options; the option files in one folder for every run (the
    tables record their paths), the results in ``tmp/results``."""
    src = tmp.parent / "decide-options"
    src.mkdir(exist_ok=True)
    a = write(src / "a.yaml", tiny())
    b = write(src / "b.yaml", tiny("two_crews", 2))
    assert main(["decide", str(a), str(b), "--objective", "node_availability", "--draws", "16", "--reps", "2",
                 "--results", str(tmp / results), "--label", "study", "--no-report", *extra]) == code
    return tmp / results / "decide" / "study"


TABLES = ["draws.parquet", "objective.parquet", "options.parquet", "inputs.parquet", "difference.parquet",
          "decision.json", "experiment.json", "options/0/replications.parquet", "options/1/replications.parquet"]


def _same(a: Path, b: Path) -> None:
    for t in TABLES:
        assert (a / t).read_bytes() == (b / t).read_bytes(), t


@pytest.fixture(scope="module")
def serial(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _run(tmp_path_factory.mktemp("dec"), "serial")


def test_decide_serial_and_parallel_give_identical_tables(serial: Path, tmp_path: Path) -> None:
    import pandas as pd

    obj = pd.read_parquet(serial / "objective.parquet")
    assert len(obj) == 16 * 2 * 2
    opts = pd.read_parquet(serial / "options.parquet").set_index("option")
    assert opts.loc["two_crews", "expected"] > opts.loc["one_crew", "expected"]  # a second crew helps on average
    assert abs(opts.p_best.sum() - 1) < 1e-12
    par = _run(tmp_path, "par", "--workers", "2")
    _same(serial, par)


def test_decide_resumes_byte_identical(serial: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    from twin.experiment.rows import RowStore

    real_add = RowStore.add
    seen = {"n": 0}

    def add(self: RowStore, row: dict[str, Any]) -> None:
        real_add(self, row)
        seen["n"] += 1
        if seen["n"] == 25:
            self.flush()
            raise KeyboardInterrupt

    monkeypatch.setattr(RowStore, "add", add)
    folder = _run(tmp_path, "resume", code=130)  # interrupted: the finished runs are kept
    assert "run the same command again to resume" in capsys.readouterr().err
    from twin.experiment.rows import stored_replications

    kept = [len(stored_replications(folder / "options" / str(k))) for k in (0, 1)]
    assert 0 < sum(kept) < 64 and not (folder / "decision.json").exists()
    monkeypatch.setattr(RowStore, "add", real_add)
    _run(tmp_path, "resume")
    _same(serial, folder)


def test_decide_without_uncertainty_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = tiny()
    del doc["uncertainty"]
    a = write(tmp_path / "a.yaml", doc)
    b = write(tmp_path / "b.yaml", {**copy.deepcopy(doc), "name": "b"})
    assert main(["decide", str(a), str(b), "--results", str(tmp_path / "r")]) == 2
    assert "no option declares an uncertainty" in capsys.readouterr().err


def test_a_key_declared_differently_in_two_options_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = tiny("two_crews", 2)
    other["uncertainty"]["inputs"]["cluster.node.parts.gpu.failure.mtbf_h"]["high"] = 500
    a, b = write(tmp_path / "a.yaml", tiny()), write(tmp_path / "b.yaml", other)
    assert main(["decide", str(a), str(b), "--results", str(tmp_path / "r")]) == 2
    assert "declared differently" in capsys.readouterr().err


def test_report_opens_with_the_decision_summary(serial: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(serial)]) == 0
    html = (serial / "report.html").read_text()
    md = (serial / "report.md").read_text()
    assert html.index("Decision summary") < html.index("<h2>Options</h2>")
    assert "Plotly.newPlot" in html and "<script src=" not in html  # interactive, plotly.js inline: offline
    assert md.split("\n")[2] == "## Decision summary"
    assert "of the plausible worlds" in md and "| option | P(best) |" in md


DECISIONS = {
    "cooling": ["air", "liquid", "evaporative"],
    "spares": ["baseline"],
    "power": ["power-dgx-split", "power-n", "power-n1", "power-2n"],
}


@pytest.mark.parametrize("name", sorted(DECISIONS))
def test_bundled_decision_scenarios_declare_valid_uncertainty(name: str) -> None:
    """Every option of each bundled decision declares inputs with sources, a key shared by options has
    one distribution, and the ends of every range make a valid scenario (load_options checks both)."""
    from twin.experiment.uncertain import Option, check_ends, load_options
    from twin.scenario.loader import merged_document

    paths = [str(ROOT / "scenarios" / f"{s}.yaml") for s in DECISIONS[name]]
    if len(paths) > 1:
        options, _ = load_options(paths, [])
    else:
        ld = load_scenario(paths[0])
        doc = merged_document(paths[0])
        doc.pop("uncertainty")
        options = [Option("baseline", paths[0], ld, doc, ld.scenario.uncertainty)]
        check_ends(options[0])
    for o in options:
        assert o.unc is not None and len(o.unc.keys()) >= 4
        for d in o.unc.fields().values():
            assert d.source.strip()


def test_decision_1_declares_the_gpu_spread_and_the_energy_price() -> None:
    """The assumptions the cooling decision's page says it turns on have ranges (issue 46)."""
    for s in ("air", "liquid", "evaporative"):
        unc = load_scenario(ROOT / "scenarios" / f"{s}.yaml").scenario.uncertainty
        assert unc is not None
        assert {"cooling.gpu.r_sigma", "costs.energy.price_per_kwh"} <= set(unc.fields())
    assert "cooling.air.slot_preheat_c" in load_scenario(ROOT / "scenarios" / "air.yaml").scenario.uncertainty.fields()


def test_target_ci_doubles_the_draws_and_reuses_the_finished_ones(serial: Path, tmp_path: Path) -> None:
    """A target the cap cannot reach: 16 draws, then 32, then exit 1; the first 16 draws are those of
    the 16-draw study (a Sobol' sequence grows without changing its points) and its runs are reused."""
    import json

    import pandas as pd

    folder = _run(tmp_path, "grow", "--target-ci", "0.001", "--max-draws", "32", code=1)
    meta = json.loads((folder / "experiment.json").read_text())
    assert meta["draws"] == 32 and meta["target_met"] is False
    big = pd.read_parquet(folder / "objective.parquet")
    small = pd.read_parquet(serial / "objective.parquet")
    got = big[big.draw < 16].reset_index(drop=True)
    assert got.equals(small)
    assert pd.read_parquet(folder / "draws.parquet").iloc[:16].reset_index(drop=True).equals(
        pd.read_parquet(serial / "draws.parquet"))


def test_a_set_fixes_an_uncertain_input(tmp_path: Path) -> None:
    from twin.experiment.uncertain import load_options

    a, b = write(tmp_path / "a.yaml", tiny()), write(tmp_path / "b.yaml", tiny("two_crews", 2))
    opts, _ = load_options([str(a), str(b)], ["cluster.node.parts.gpu.failure.mtbf_h=300"])
    for o in opts:
        assert o.unc is not None and list(o.unc.fields()) == ["cluster.node.parts.gpu.repair.time.mean_h"]


def test_latin_hypercube_design(tmp_path: Path) -> None:
    import json

    import pandas as pd

    folder = _run(tmp_path, "lhs", "--design", "lhs")
    assert json.loads((folder / "experiment.json").read_text())["design"] == "lhs"
    u = pd.read_parquet(folder / "draws.parquet")["u:cluster.node.parts.gpu.failure.mtbf_h"].to_numpy()
    assert sorted((u * 16).astype(int).tolist()) == list(range(16))  # one draw in each sixteenth


def test_decide_on_dask_gives_identical_tables(serial: Path, tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    folder = _run(tmp_path, "dask", "--dask", "local", "--workers", "2")
    _same(serial, folder)


def test_decide_refuses_a_path_its_set_removes_while_run_ignores_the_section(tmp_path: Path,
                                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """A ``--set`` that removes the field an ``uncertainty:`` path names: ``twin decide`` (the section's
    only reader) refuses it with exit 2 naming the file and the path; ``twin run`` ignores the section."""
    a, b = write(tmp_path / "a.yaml", tiny("a")), write(tmp_path / "b.yaml", tiny("b", crews=2))
    cut = "cluster.node.parts={host: {failure: {mtbf_h: 500}}}"
    assert main(["decide", str(a), str(b), "--set", cut, "--results", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert f"{a}: uncertainty.inputs.cluster.node.parts.gpu.failure.mtbf_h: not a field of this scenario" in err
    assert main(["run", str(a), "--set", cut, "--set", "horizon_days=2", "--quiet",
                 "--results", str(tmp_path / "run")]) == 0


def test_saltelli_design_adds_total_indices_and_decides_on_its_independent_rows(tmp_path: Path) -> None:
    """``--design saltelli``: N = 8 base points of 2 inputs give 8 × 4 draws; the decision statistics
    are those of the 16 independent rows alone, and the inputs table gains Sobol' S1 and ST."""
    import json

    import pandas as pd

    from twin.experiment.value_of_information import analyse
    from twin.scenario.uncertainty import saltelli_base_rows

    src = tmp_path / "opts"
    src.mkdir()
    a, b = write(src / "a.yaml", tiny()), write(src / "b.yaml", tiny("two_crews", 2))
    assert main(["decide", str(a), str(b), "--objective", "node_availability", "--draws", "8", "--reps", "2",
                 "--design", "saltelli", "--results", str(tmp_path / "r"), "--label", "s", "--no-report"]) == 0
    folder = tmp_path / "r" / "decide" / "s"
    meta = json.loads((folder / "experiment.json").read_text())
    assert (meta["draws"], meta["decision_draws"], meta["runs"]) == (32, 16, 32 * 2 * 2)
    U = pd.read_parquet(folder / "draws.parquet").filter(like="u:").to_numpy()
    obj = pd.read_parquet(folder / "objective.parquet")
    Y = np.stack([obj[obj.option == o].sort_values("index").objective.to_numpy().reshape(32, 2)
                  for o in ("one_crew", "two_crews")], axis=1)
    base = saltelli_base_rows(32, 2)
    dec = analyse(Y[base], U[base], ["one_crew", "two_crews"], list(meta["keys"]), "max", seed=1)
    opts = pd.read_parquet(folder / "options.parquet").set_index("option")
    assert np.allclose(opts.loc[:, "expected"].to_numpy(), dec.options_table.set_index("option")["expected"].to_numpy())
    inputs = pd.read_parquet(folder / "inputs.parquet")
    assert {"sobol_s1", "sobol_st", "sobol_st_low", "sobol_st_high"} <= set(inputs.columns)
    assert len(pd.read_parquet(folder / "difference.parquet")) == 32


@pytest.mark.parametrize("extra, says", [(["--draws", "4"], "at least 8 base points"),
                                         (["--draws", "16", "--target-ci", "0.05"], "needs --design sobol")])
def test_saltelli_design_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str],
                                   says: str) -> None:
    a, b = write(tmp_path / "a.yaml", tiny()), write(tmp_path / "b.yaml", tiny("two_crews", 2))
    assert main(["decide", str(a), str(b), "--design", "saltelli", "--results", str(tmp_path / "r"),
                 "--no-report", *extra]) == 2
    assert says in capsys.readouterr().err
