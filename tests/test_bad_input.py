"""Bad input through the command line: exit code 2 and exactly one line on stderr naming the
file and the field; a bug is exit code 3 with a saved traceback; ``extends`` and ``--set`` work."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml

from twin import cli
from twin.scenario.loader import load_scenario

TINY: dict[str, Any] = {
    "name": "tiny",
    "seed": 1,
    "horizon_days": 20,
    "cluster": {
        "racks": 1,
        "nodes_per_rack": 2,
        "node": {
            "gpus": 8,
            "parts": {
                "gpu": {"count": 8, "effect": "node_down", "failure": {"mtbf_h": 50_000},
                        "repair": {"time": {"dist": "fixed", "value_h": 2}}},
                "psu": {"count": 6, "required": 4, "effect": "redundant", "failure": {"mtbf_h": 100_000},
                        "repair": {"hot_swap": True}},
            },
        },
    },
    "maintenance": {
        "detection": {"dist": "fixed", "value_h": 0.25},
        "crews": {"technicians": {"count": 2, "shift": "24x7"}},
        "spares": {"gpu": {"stock": 2, "lead_time_days": 7}},
    },
}


def tiny() -> dict[str, Any]:
    return copy.deepcopy(TINY)


def write(path: Path, doc: Any) -> Path:
    path.write_text(doc if isinstance(doc, str) else yaml.safe_dump(doc, sort_keys=False))
    return path


def mutate(fn: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    d = tiny()
    fn(d)
    return d


def _set(*keys_value: Any) -> Callable[[dict[str, Any]], None]:
    *keys, value = keys_value

    def f(d: dict[str, Any]) -> None:
        cur = d
        for k in keys[:-1]:
            cur = cur[k]
        cur[keys[-1]] = value

    return f


def _del(*keys: str) -> Callable[[dict[str, Any]], None]:
    def f(d: dict[str, Any]) -> None:
        cur = d
        for k in keys[:-1]:
            cur = cur[k]
        del cur[keys[-1]]

    return f


PARTS = ("cluster", "node", "parts")

# (id, document or text, --set overrides, field path the line must name, words it must contain)
CASES: list[tuple[str, Any, list[str], str, list[str]]] = [
    ("wrong-type-horizon", mutate(_set("horizon_days", "a year")), [], "horizon_days", ["number"]),
    ("wrong-type-count", mutate(_set(*PARTS, "gpu", "count", "eight")), [], "cluster.node.parts.gpu.count", []),
    ("wrong-type-hot-swap", mutate(_set(*PARTS, "psu", "repair", "hot_swap", "sometimes")), [],
     "cluster.node.parts.psu.repair.hot_swap", []),
    # no silent conversions between YAML's types (strict validation): true is not 1 day, "5" not 5,
    # "off" and 0 not false, false not a stock of 0
    ("bool-horizon", mutate(_set("horizon_days", True)), [], "horizon_days", ["got True"]),
    ("string-horizon", mutate(_set("horizon_days", "5")), [], "horizon_days", ["got '5'"]),
    ("string-bool", mutate(_set(*PARTS, "psu", "repair", "hot_swap", "off")), [],
     "cluster.node.parts.psu.repair.hot_swap", ["got 'off'"]),
    ("int-bool", mutate(_set(*PARTS, "psu", "repair", "hot_swap", 0)), [],
     "cluster.node.parts.psu.repair.hot_swap", ["got 0"]),
    ("bool-stock", mutate(_set("maintenance", "spares", "gpu", "stock", False)), [],
     "maintenance.spares.gpu.stock", ["got False"]),
    ("set-bool-count", tiny(), ["cluster.node.parts.gpu.count=true"], "cluster.node.parts.gpu.count", ["got True"]),
    ("negative-burn-in", mutate(_set(*PARTS, "gpu", "repair", "burn_in_h", -1)), [],
     "cluster.node.parts.gpu.repair.burn_in_h", ["-1"]),
    ("negative-lead-time", mutate(_set("maintenance", "spares", "gpu", "lead_time_days", -3)), [],
     "maintenance.spares.gpu.lead_time_days", ["-3"]),
    ("negative-mtbf", mutate(_set(*PARTS, "gpu", "failure", {"mtbf_h": -10})), [],
     "cluster.node.parts.gpu.failure", ["-10"]),
    ("negative-horizon", mutate(_set("horizon_days", -5)), [], "horizon_days", ["-5"]),
    ("required-gt-count", mutate(_set(*PARTS, "psu", "required", 7)), [],
     "cluster.node.parts.psu.required", ["cluster.node.parts.psu.required: must be <= count (6), got 7"]),
    ("min-to-run-gt-required", mutate(_set(*PARTS, "psu", "min_to_run", 5)), [],
     "cluster.node.parts.psu.min_to_run", ["required (4)"]),
    ("unknown-key", mutate(_set("maintenance", "crews", "technicians", "shifts", "24x7")), [],
     "maintenance.crews.technicians.shifts", ["unknown key"]),
    ("unknown-top-key", mutate(_set("horizon_dayz", 3)), [], "horizon_dayz", ["unknown key"]),
    ("unknown-distribution", mutate(_set(*PARTS, "gpu", "failure", {"dist": "gamma", "mean_h": 5})), [],
     "cluster.node.parts.gpu.failure", ["gamma", "exponential"]),
    ("missing-field", mutate(_del("cluster", "racks")), [], "cluster.racks", ["missing"]),
    ("missing-failure", mutate(_del(*PARTS, "gpu", "failure")), [], "cluster.node.parts.gpu.failure", ["missing"]),
    ("unknown-crew-pool", mutate(_set(*PARTS, "gpu", "repair", "crew", "nightshift")), [],
     "cluster.node.parts.gpu.repair.crew", ["nightshift", "technicians"]),
    ("spares-unknown-part", mutate(_set("maintenance", "spares", "dimm", {"stock": 1})), [],
     "maintenance.spares.dimm", ["no such part"]),
    ("business-shift-ends-before-start",
     mutate(_set("maintenance", "crews", "technicians", {"shift": "business", "start_hour": 17, "end_hour": 8})),
     [], "maintenance.crews.technicians.end_hour", []),
    ("not-a-mapping", "- just\n- a list\n", [], "", ["mapping", "list"]),
    ("scalar-document", "42\n", [], "", ["mapping"]),
    ("empty-file", "", [], "", ["empty"]),
    ("invalid-yaml", "name: tiny\ncluster: {racks: [1, 2\n", [], "line", ["invalid YAML"]),
    ("bad-indentation", "name: tiny\n  seed: 1\n cluster: 3\n", [], "line", ["invalid YAML"]),
    ("set-not-a-number", tiny(), ["cluster.node.parts.gpu.count=abc"], "cluster.node.parts.gpu.count", ["abc"]),
    ("set-unknown-key", tiny(), ["cluster.node.partz.gpu.count=3"], "cluster.node.partz", ["unknown key"]),
]


def run_main(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str], str]:
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, err.splitlines(), out


@pytest.mark.parametrize("case_id,doc,overrides,field,words", CASES, ids=[c[0] for c in CASES])
def test_bad_scenario_exit_2_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                      case_id: str, doc: Any, overrides: list[str], field: str,
                                      words: list[str]) -> None:
    path = write(tmp_path / f"{case_id}.yaml", doc)
    argv = ["run", str(path), "--results", str(tmp_path / "results"), "--quiet"]
    for o in overrides:
        argv += ["--set", o]
    code, lines, _ = run_main(argv, capsys)
    assert code == 2, lines
    assert len(lines) == 1, lines
    line = lines[0]
    assert str(path) in line, line
    if field:
        assert field in line, line
    for w in words:
        assert w in line, line
    assert not (tmp_path / "results").exists()  # nothing written


def test_required_gt_count_message_exact(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path / "s.yaml", mutate(_set(*PARTS, "psu", "required", 7)))
    code, lines, _ = run_main(["run", str(path), "--results", str(tmp_path)], capsys)
    assert code == 2
    assert lines == [f"error: {path}: cluster.node.parts.psu.required: must be <= count (6), got 7"]


def test_missing_scenario_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.yaml"
    code, lines, _ = run_main(["run", str(missing), "--results", str(tmp_path)], capsys)
    assert code == 2 and len(lines) == 1
    assert str(missing) in lines[0] and "not found" in lines[0]


def test_missing_extends_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    child = write(tmp_path / "child.yaml", {"extends": "no-such-base.yaml", "horizon_days": 3})
    code, lines, _ = run_main(["run", str(child), "--results", str(tmp_path / "r")], capsys)
    assert code == 2 and len(lines) == 1, lines
    assert str(child) in lines[0] and "extends" in lines[0] and "no-such-base.yaml" in lines[0]


def test_cyclic_extends(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = write(tmp_path / "a.yaml", {"extends": "b.yaml", **tiny()})
    write(tmp_path / "b.yaml", {"extends": "a.yaml", "horizon_days": 3})
    code, lines, _ = run_main(["run", str(a), "--results", str(tmp_path / "r")], capsys)
    assert code == 2 and len(lines) == 1, lines
    assert str(a) in lines[0] and "extends" in lines[0] and "cyclic" in lines[0]
    # a file that extends itself
    s = write(tmp_path / "self.yaml", {"extends": "self.yaml", **tiny()})
    code, lines, _ = run_main(["run", str(s), "--results", str(tmp_path / "r")], capsys)
    assert code == 2 and len(lines) == 1 and "cyclic" in lines[0]


@pytest.mark.parametrize("expr,field", [
    ("seed.value=3", "seed"),  # through a scalar
    ("cluster.racks.x=3", "cluster.racks"),
    ("cluster.node.parts.gpu", "cluster.node.parts.gpu"),  # no '='
    ("cluster..racks=3", "cluster..racks"),  # empty key
])
def test_bad_set_path(tmp_path: Path, capsys: pytest.CaptureFixture[str], expr: str, field: str) -> None:
    """A --set that cannot be applied: the line names the --set expression (the input at fault)
    and the path."""
    path = write(tmp_path / "s.yaml", tiny())
    code, lines, _ = run_main(["run", str(path), "--results", str(tmp_path / "r"), "--set", expr], capsys)
    assert code == 2 and len(lines) == 1, lines
    assert "--set" in lines[0] and field in lines[0], lines[0]


def test_python_tag_is_not_executed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    marker = tmp_path / "PWNED"
    text = (
        f'name: !!python/object/apply:os.system ["touch {marker}"]\n'
        "cluster: {racks: 1, nodes_per_rack: 1, node: {parts: {gpu: {failure: {mtbf_h: 10}}}}}\n"
    )
    path = write(tmp_path / "evil.yaml", text)
    code, lines, _ = run_main(["run", str(path), "--results", str(tmp_path / "r")], capsys)
    assert code == 2 and len(lines) == 1, lines
    assert str(path) in lines[0] and "line 1" in lines[0]
    assert not marker.exists()
    # also as the whole document and through --set
    path2 = write(tmp_path / "evil2.yaml", f'!!python/object/apply:os.system ["touch {marker}"]\n')
    code, lines, _ = run_main(["run", str(path2), "--results", str(tmp_path / "r")], capsys)
    assert code == 2 and len(lines) == 1 and not marker.exists()
    ok = write(tmp_path / "ok.yaml", tiny())
    code, lines, _ = run_main(["run", str(ok), "--results", str(tmp_path / "r"),
                               "--set", f'name=!!python/object/apply:os.system ["touch {marker}"]'], capsys)
    assert code == 2 and len(lines) == 1 and not marker.exists()


def test_yaml_alias_bomb_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines_ = ['a: &a ["x","x","x","x","x","x","x","x","x","x"]']
    for i in range(1, 9):
        prev = chr(ord("a") + i - 1)
        cur = chr(ord("a") + i)
        lines_.append(f"{cur}: &{cur} [" + ",".join([f"*{prev}"] * 10) + "]")
    path = write(tmp_path / "bomb.yaml", "\n".join(lines_) + "\n")
    code, lines, _ = run_main(["run", str(path), "--results", str(tmp_path / "r")], capsys)
    assert code == 2 and len(lines) == 1 and str(path) in lines[0]


def test_missing_empirical_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = mutate(_set(*PARTS, "gpu", "repair", "time", {"dist": "empirical", "file": "data/none.csv"}))
    path = write(tmp_path / "s.yaml", doc)
    code, lines, _ = run_main(["run", str(path), "--results", str(tmp_path / "r")], capsys)
    assert code == 2 and len(lines) == 1, lines
    assert "none.csv" in lines[0] and "not found" in lines[0]


def test_empirical_times_to_failure_all_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """All-zero empirical failure times fail a part again at once without end (an internal error in the
    advice before): refused like a fixed 0, naming the field; zero repair times stay allowed."""
    (tmp_path / "zeros.csv").write_text("hours\n0\n0\n")
    doc = mutate(_set(*PARTS, "gpu", "failure", {"dist": "empirical", "file": "zeros.csv"}))
    path = write(tmp_path / "s.yaml", doc)
    code, lines, _ = run_main(["run", str(path), "--results", str(tmp_path / "r"), "--force"], capsys)
    assert code == 2 and len(lines) == 1, lines
    assert "cluster.node.parts.gpu.failure" in lines[0] and "zeros.csv" in lines[0]
    doc = mutate(_set(*PARTS, "gpu", "repair", "time", {"dist": "empirical", "file": "zeros.csv"}))
    code, lines, _ = run_main(["run", str(write(tmp_path / "s.yaml", doc)), "--dry-run"], capsys)
    assert code == 0, lines


def test_unknown_command_line_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path / "s.yaml", tiny())
    code, lines, _ = run_main(["run", str(path), "--no-such-option"], capsys)
    assert code == 2 and len(lines) == 1 and "--no-such-option" in lines[0]


@pytest.mark.parametrize("argv,field", [
    (["run", "{s}", "--replication", "-1"], "--replication"),
    (["run", "{s}", "--results", "{s}"], "--results"),  # a file, not a folder
    (["montecarlo", "{s}", "--reps", "2", "--results", "/proc/no-such-folder"], "--results"),
    (["montecarlo", "{s}", "--reps", "2", "--dask", "bogus://host:1", "--results", "{tmp}"], "--dask"),
])
def test_bad_command_line_values_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str],
                                        field: str) -> None:
    """Values of options that were internal errors (exit 3) before: one line naming the option, exit 2."""
    path = write(tmp_path / "s.yaml", tiny())
    args = [a.format(s=path, tmp=tmp_path / "r") for a in argv]
    code, lines, _ = run_main(args, capsys)
    assert code == 2 and len(lines) == 1 and field in lines[0], lines


def test_exponent_numbers_are_numbers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """PyYAML (YAML 1.1) reads 1e5 and 1.0e5 as strings, which strict validation refused (the README's
    own example); they are numbers (YAML 1.2). A quoted "1e5" is still a string, refused."""
    from twin.scenario.loader import safe_load_text

    assert safe_load_text("a: 1e5\nb: 1.0e5\nc: 2E-3\nd: 12") == {"a": 1e5, "b": 1e5, "c": 2e-3, "d": 12}
    doc = tiny()
    doc["cluster"]["node"]["parts"]["gpu"]["failure"] = {"mtbf_h": "MTBF"}
    text = yaml.safe_dump(doc, sort_keys=False).replace("MTBF", "1e5")
    path = tmp_path / "s.yaml"
    path.write_text(text)
    code, lines, _ = run_main(["run", str(path), "--dry-run"], capsys)
    assert code == 0, lines
    path.write_text(text.replace("1e5", '"1e5"'))
    code, lines, _ = run_main(["run", str(path), "--dry-run"], capsys)
    assert code == 2 and "got '1e5'" in lines[0], lines


def test_a_folder_given_as_scenario(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, lines, _ = run_main(["run", str(tmp_path)], capsys)
    assert code == 2 and lines == [f"error: {tmp_path}: is a folder, not a scenario file"]


@pytest.mark.parametrize("command", ["run", "schema", "fit", "montecarlo", "compare", "sweep", "sensitivity",
                                     "report", "validate", "forecast"])
def test_help_texts_print_percent_signs_once(capsys: pytest.CaptureFixture[str], command: str) -> None:
    assert cli.main([command, "--help"]) == 0
    out = capsys.readouterr().out
    assert "usage: twin" in out and "%%" not in out


def test_dry_run_creates_no_results_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path / "s.yaml", tiny())
    code, _, _ = run_main(["run", str(path), "--dry-run", "--results", str(tmp_path / "new" / "root")], capsys)
    assert code == 0 and not (tmp_path / "new").exists()


def test_closed_output_pipe_is_not_an_internal_error(capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """`twin schema | head -c 10`: the reader went away; exit 130 (stopped), no 'internal error'."""
    import builtins

    real_print = builtins.print

    def closed(*a: Any, **k: Any) -> None:
        if k.get("file") is None:
            raise BrokenPipeError(32, "Broken pipe")
        real_print(*a, **k)

    monkeypatch.setattr(builtins, "print", closed)
    code, lines, _ = run_main(["schema"], capsys)
    assert code == 130 and lines == ["interrupted: output closed"]


# ---- a bug is not bad input --------------------------------------------------------------------

def test_internal_error_exit_3_with_traceback(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    import twin.sim

    def boom(self: Any, progress: Any = None) -> None:
        raise RuntimeError("simulated bug for the test")

    monkeypatch.setattr(twin.sim.Model, "run", boom)
    logs = tmp_path / "logs"
    monkeypatch.setenv("TWIN_LOG_DIR", str(logs))
    path = write(tmp_path / "s.yaml", tiny())
    code, lines, _ = run_main(["run", str(path), "--results", str(tmp_path / "r"), "--quiet"], capsys)
    assert code == 3
    assert len(lines) == 1, lines
    assert "internal error" in lines[0] and "RuntimeError" in lines[0]
    m = re.search(r"traceback saved to (.+?)\)?$", lines[0])
    assert m, lines[0]
    log = Path(m.group(1))
    assert log.is_file() and log.parent == logs
    text = log.read_text()
    assert "Traceback" in text and "simulated bug for the test" in text
    assert not (tmp_path / "r" / "tiny").exists() or not any((tmp_path / "r" / "tiny").iterdir())


# ---- extends and --set work ------------------------------------------------------------------

def test_extends_inherits_and_set_overrides(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base_dir = tmp_path / "base"
    (base_dir / "data").mkdir(parents=True)
    (base_dir / "data" / "repair.csv").write_text("hours\n1.0\n2.0\n3.0\n")
    base = tiny()
    base["cluster"]["node"]["parts"]["gpu"]["repair"]["time"] = {"dist": "empirical", "file": "data/repair.csv"}
    write(base_dir / "base.yaml", base)
    child = write(tmp_path / "child.yaml", {
        "extends": "base/base.yaml",
        "name": "child",
        "cluster": {"racks": 3},  # one field of a nested mapping
    })
    loaded = load_scenario(child)
    sc = loaded.scenario
    assert sc.name == "child"
    assert sc.cluster.racks == 3
    assert sc.cluster.nodes_per_rack == 2  # inherited beside the overridden field
    assert sc.horizon_days == 20 and sc.seed == 1
    assert set(sc.cluster.node.parts) == {"gpu", "psu"}
    assert sc.cluster.node.parts["psu"].required == 4
    assert sc.maintenance.spares["gpu"].stock == 2
    # the base's data file is found relative to the base
    assert sc.cluster.node.parts["gpu"].repair.time.mean() == pytest.approx(2.0)

    over = load_scenario(child, ["maintenance.crews.technicians.count=5", "seed=99", "cluster.node.parts.psu.required=5"])
    assert over.scenario.maintenance.crews["technicians"].count == 5
    assert over.scenario.seed == 99
    assert over.scenario.cluster.node.parts["psu"].required == 5
    assert over.scenario.cluster.racks == 3
    assert over.hash != loaded.hash

    # and through the command line
    res = tmp_path / "results"
    code, lines, out = run_main(["run", str(child), "--results", str(res), "--quiet", "--set", "seed=99"], capsys)
    assert code == 0, lines
    summaries = list((res / "child").glob("*/summary.json"))
    assert len(summaries) == 1
    meta = json.loads(summaries[0].read_text())
    assert meta["seed"] == 99 and meta["scenario_hash"] == load_scenario(child, ["seed=99"]).hash
    resolved = yaml.safe_load((summaries[0].parent / "scenario.resolved.yaml").read_text())
    assert resolved["seed"] == 99 and resolved["cluster"]["racks"] == 3 and resolved["cluster"]["nodes_per_rack"] == 2
    assert "extends" not in resolved


def test_missing_weather_file_names_the_scenario_and_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A bundled scenario copied without its data folder (the fuzz test's case: air-golden's TMY3 year): exit 2,
    one line naming the scenario file first, then the field and the missing file (it used to name only the data
    file, so the line did not say which scenario or field asked for it)."""
    scenarios = Path(__file__).resolve().parents[1] / "scenarios"
    for name in ("air-golden.yaml", "air.yaml", "baseline.yaml"):  # (its extends chain)
        (tmp_path / name).write_text((scenarios / name).read_text())
    path = tmp_path / "air-golden.yaml"
    code, lines, _ = run_main(["run", str(path), "--results", str(tmp_path / "r"), "--dry-run"], capsys)
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].startswith(f"error: {path}: cooling.ambient.csv.file: {tmp_path}/data/weather/"), lines
    assert lines[0].endswith("ambient temperature file not found"), lines
