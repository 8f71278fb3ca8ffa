"""The command line's own help (issue 30 item 6): `twin --help` with examples and exit codes,
`-v`/`--verbose` on every command, and `twin explain METRIC`."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from twin import cli
from twin.docs import OUTPUT_SCENARIOS
from twin.errors import EXIT_BAD_INPUT, EXIT_CHECK_FAILED, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_OK
from twin.report.explain import METRICS, explain_lines, lookup, nearest

ROOT = Path(__file__).resolve().parents[1]
TINY: dict[str, Any] = {
    "name": "tiny", "seed": 3, "horizon_days": 2,
    "cluster": {"racks": 1, "nodes_per_rack": 2, "node": {"gpus": 8, "parts": {
        "gpu": {"count": 8, "failure": {"mtbf_h": 5000}, "repair": {"time": {"dist": "fixed", "value_h": 2}}}}}},
    "maintenance": {"crews": {"technicians": {"count": 1}}},
}


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def commands() -> dict[str, argparse.ArgumentParser]:
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


# ------------------------------------------------------------------ --help

def test_help_has_examples_and_every_exit_code(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["--help"], capsys)
    assert code == 0
    assert "examples:" in out and "exit codes" in out
    examples = out.split("examples:")[1].split("exit codes")[0]
    assert len(re.findall(r"^  twin \w+", examples, re.M)) >= 6
    named = set(commands())
    for cmd in re.findall(r"^  twin (\w+)", examples, re.M):  # examples use real commands
        assert cmd in named or cmd == "COMMAND", cmd
    codes = out.split("exit codes")[1]
    for code_ in (EXIT_OK, EXIT_CHECK_FAILED, EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_INTERRUPTED):
        assert re.search(rf"^  {code_}\s+\S", codes, re.M), (code_, codes)
    assert "-v, --verbose" in out


def test_every_command_accepts_verbose(capsys: pytest.CaptureFixture[str]) -> None:
    for name, p in commands().items():
        flags = {s for a in p._actions for s in a.option_strings}
        assert {"-v", "--verbose"} <= flags, name
        code, out, _ = run([name, "--help"], capsys)
        assert code == 0 and "--verbose" in out, name
    # before or after the command
    ns = cli.build_parser().parse_args(["-v", "schema"])
    assert ns.verbose == 1
    ns = cli.build_parser().parse_args(["schema", "-vv"])
    assert ns.verbose == 2
    assert cli.build_parser().parse_args(["schema"]).verbose == 0


def test_verbose_says_the_resolved_scenario_and_timings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    s = tmp_path / "s.yaml"
    s.write_text(yaml.safe_dump(TINY))
    code, out, err = run(["run", str(s), "--dry-run"], capsys)
    assert code == 0 and "verbose:" not in err + out
    code, out, err = run(["run", str(s), "--dry-run", "--set", "seed=4", "-v"], capsys)
    assert code == 0, err
    lines = [x for x in err.splitlines() if x.startswith("verbose: ")]
    from twin.scenario.loader import load_scenario

    h = load_scenario(s, ["seed=4"]).hash
    assert any(f"scenario {s} = {s.resolve()}" in x and f"hash {h}" in x and "--set seed=4" in x for x in lines), lines
    assert re.match(r"verbose: exit 0 after [\d.]+ s wall, [\d.]+ s CPU", lines[-1]), lines
    assert "verbose:" not in out  # stdout keeps results only


def test_verbose_prints_an_internal_errors_traceback(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    def bug(args: argparse.Namespace) -> int:
        raise RuntimeError("a bug for the test")

    monkeypatch.setattr(cli, "cmd_schema", bug)
    monkeypatch.setenv("TWIN_LOG_DIR", str(tmp_path / "logs"))
    code, _, err = run(["schema"], capsys)
    assert code == EXIT_INTERNAL and "Traceback" not in err and "traceback saved to" in err
    code, _, err = run(["schema", "-v"], capsys)
    assert code == EXIT_INTERNAL
    assert "Traceback (most recent call last)" in err and "RuntimeError: a bug for the test" in err
    assert "traceback saved to" in err and "verbose: exit 3" in err


# ------------------------------------------------------------------ twin explain

def test_explain_a_metric_and_a_family_member(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["explain", "goodput"], capsys)
    assert code == 0
    # the label, unit, meaning, group and direction come from the catalogue; how it is computed from explain.py
    assert out.splitlines()[0] == "goodput: goodput" and "useful GPU-hours over installed GPU-hours" in out
    assert "unit:     %" in out and "group:    throughput (higher is better)" in out and "computed:" in out
    code, out, _ = run(["explain", "power.down_node_hours.utility"], capsys)
    assert code == 0 and "(one of power.down_node_hours.<cause>)" in out
    code, out, _ = run(["explain", "--list"], capsys)
    assert code == 0 and len(out.splitlines()) == len(METRICS)


def test_explain_an_unknown_metric_exits_2_with_the_nearest_names(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["explain", "failure.gpu"], capsys)
    assert code == EXIT_BAD_INPUT and out == ""
    (line,) = err.splitlines()
    assert line.startswith("error: twin explain: failure.gpu: unknown metric; did you mean failures.gpu"), line
    code, _, err = run(["explain", "node_avail"], capsys)
    assert code == EXIT_BAD_INPUT and "did you mean node_availability" in err
    code, _, err = run(["explain"], capsys)
    assert code == EXIT_BAD_INPUT and "--list" in err
    assert nearest("ettr") == ["ettr.max_job"]


def test_families_match_one_segment_and_exact_names_win() -> None:
    assert lookup("failures.gpu") is not None and lookup("failures.gpu").name == "failures.<part>"  # type: ignore[union-attr]
    assert lookup("failures").name == "failures"  # type: ignore[union-attr]
    assert lookup("interruptions.planned").name == "interruptions.planned"  # type: ignore[union-attr]
    assert lookup("failures.gpu.extra") is None and lookup("no_such_metric") is None
    with pytest.raises(KeyError):
        explain_lines("no_such_metric")


def test_every_recorded_metric_is_explained() -> None:
    """Short runs of the scenarios the outputs reference is generated from (every model section), and
    of the fabric stress case (per-cause network metrics): no metric without an explanation."""
    from twin.scenario import load_scenario
    from twin.sim import run_replication

    names: set[str] = set()
    for name in (*OUTPUT_SCENARIOS, "fabric-stress.yaml", "mixed-1k.yaml", "nvl72.yaml"):
        res = run_replication(load_scenario(ROOT / "scenarios" / name, ["horizon_days=2"]).scenario, 0)
        names |= set(res.metrics)
    assert len(names) > 100
    missing = sorted(n for n in names if lookup(n) is None)
    assert not missing, missing
    assert len({d.name for d in METRICS}) == len(METRICS)  # one entry per name
