"""Limits and exit codes that cost trust (issue 39, items 4–6).

4. The event estimate bounds each part population's failures by a renewal bound computed from its
   distributions (twin.limits.renewals_per_unit), not from the mean life alone: a heavy-tailed life
   that renews almost at once after each repair is refused before work, and a replication stops at a
   hard event bound (``--max-events``, default 10 × the estimate) with exit 2 naming the population.
5. Bad input or environment that used to be an internal error (exit 3) is exit 2 with one line.
6. ``--reps``/``--max-reps``, ``--workers``, a full disk, a FIFO trace, ``--results ''``, ``twin fit``'s
   part names and the HTML of ``fit.md``.
"""

from __future__ import annotations

import copy
import errno
import io
import os
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest
import yaml

from twin import cli, limits
from twin.limits import EVENTS_PER_FAILURE, MAX_REPLICATIONS, estimate_events, expected_failures
from twin.scenario.loader import load_dict, load_scenario

ROOT = Path(__file__).resolve().parents[1]
BASELINE = ROOT / "scenarios" / "baseline.yaml"

SPIN: dict[str, Any] = {
    "name": "spin", "seed": 3, "horizon_days": 5,
    "cluster": {"racks": 1, "nodes_per_rack": 2, "node": {"gpus": 8, "parts": {
        "gpu": {"count": 8, "failure": {"mtbf_h": 500000}, "repair": {"time": {"dist": "fixed", "value_h": 2}}},
        # a heavy tail (allowed: sigma <= 10): a mean of 100,000 h and a median of 1.5e-3 h
        "glitch": {"count": 4, "effect": "transient",
                   "failure": {"dist": "lognormal", "mean_h": 100000, "sigma": 6}}}}},
    "maintenance": {"crews": {"technicians": {"count": 1}}},
}
"""Two nodes for five days, whose glitch part renews almost at once: ~200 events where the mean life
predicts 0.01 failures."""


def spin(**changes: Any) -> dict[str, Any]:
    d = copy.deepcopy(SPIN)
    d.update(changes)
    return d


def write_yaml(path: Path, doc: Any) -> Path:
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def run_cli(argv: list[str]) -> tuple[int, list[str], str]:
    """``twin.cli.main`` with stdout and stderr captured: (exit code, stderr lines, stdout)."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = cli.main(argv)
    return code, err.getvalue().splitlines(), out.getvalue()


@pytest.fixture(autouse=True)
def _logs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Tracebacks of internal errors go here: every test checks none was saved (exit 2, not a bug)."""
    logs = tmp_path / "logs"
    monkeypatch.setenv("TWIN_LOG_DIR", str(logs))
    return logs


def one_error(code: int, lines: list[str], logs: Path, *words: str) -> str:
    """Exit 2, exactly one ``error:`` line holding ``words``, no traceback saved."""
    assert code == 2, (code, lines)
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    for w in words:
        assert w in lines[0], (w, lines[0])
    assert not logs.exists(), "an internal error's traceback was saved"
    return lines[0]


def _old_estimate(sc: Any) -> float:
    """The estimate before issue 39: 10 × units × horizon / mean life (no jobs in these scenarios)."""
    return EVENTS_PER_FAILURE * sum(units * sc.horizon_h / part.failure.mean()
                                    for _, units, part in limits.populations(sc))


# ====================================================================== item 4: the event estimate

def test_the_mean_life_underestimated_a_heavy_tail_200_fold_and_the_renewal_bound_bounds_it() -> None:
    from twin.sim import run_replication

    ld = load_dict(spin())
    sc = ld.scenario
    res = run_replication(sc, 0, ld.hash)
    assert res.events_processed >= 200 * _old_estimate(sc), (res.events_processed, _old_estimate(sc))
    est = estimate_events(sc)
    assert est >= res.events_processed, (est, res.events_processed)
    assert est <= 100 * res.events_processed  # a bound, not a refusal of everything


def test_the_renewal_bound_holds_against_simulated_counts_and_is_tight_for_an_exponential() -> None:
    """Mean failures over replications ≤ the bound (with 3 standard errors of allowance), and the
    exponential's bound within 1.5× of the simulated mean (its failures, without queueing for crews,
    are a Poisson count slowed only by the repairs)."""
    import statistics

    from twin.sim import run_replication

    doc = spin(horizon_days=10)
    doc["cluster"]["node"]["parts"]["gpu"]["failure"] = {"mtbf_h": 200}
    doc["cluster"]["node"]["parts"]["fan"] = {"count": 2, "required": 1, "effect": "redundant",
                                              "failure": {"dist": "weibull", "shape": 0.5, "scale_h": 100},
                                              "repair": {"hot_swap": True, "time": {"dist": "fixed", "value_h": 1}}}
    doc["maintenance"]["crews"]["technicians"]["count"] = 40  # no queue: the bound's cycle is the real one
    ld = load_dict(doc)
    bound = dict(expected_failures(ld.scenario))
    reps = [run_replication(ld.scenario, r, ld.hash, tables=False) for r in range(8)]
    for part in ("gpu", "glitch", "fan"):
        counts = [r.metrics[f"failures.{part}"] for r in reps]
        mean, se = statistics.mean(counts), statistics.stdev(counts) / len(counts) ** 0.5
        b = bound[f"cluster.node.parts.{part}"]
        assert mean <= b + 3 * se, (part, mean, se, b)
        assert mean > 0, part
    gpu = statistics.mean(r.metrics["failures.gpu"] for r in reps)
    assert bound["cluster.node.parts.gpu"] <= 1.5 * gpu, (bound["cluster.node.parts.gpu"], gpu)
    assert all(estimate_events(ld.scenario) >= r.events_processed for r in reps)


def test_a_heavy_tailed_part_of_the_baseline_is_refused_by_dry_run() -> None:
    """The issue's case: baseline for 30 days with the transient part's life a lognormal of σ = 10 was
    estimated at 6.7e3 events and passed --dry-run; its renewals are billions of events."""
    lognormal = "{dist: lognormal, mean_h: 42130, sigma: 10}"
    args = ["run", str(BASELINE), "--set", "horizon_days=30", "--set",
            f"cluster.node.parts.software.failure={lognormal}", "--dry-run"]
    sc = load_scenario(BASELINE, args[3:6:2]).scenario
    assert _old_estimate(sc) < 2e4
    code, lines, _ = run_cli(args)
    assert code == 2 and len(lines) == 1, lines
    assert "estimated events" in lines[0] and "cluster.node.parts.software" in lines[0] and "--force" in lines[0]
    # 100,000 nodes for a year with the GPU's life a lognormal of σ = 10 (a repaired part)
    code, lines, _ = run_cli(["run", str(BASELINE), "--set", "cluster.racks=25000", "--set",
                              "cluster.node.parts.gpu.failure={dist: lognormal, mean_h: 111756, sigma: 10}",
                              "--dry-run"])
    assert code == 2 and "estimated events" in lines[0] and "cluster.node.parts.gpu" in lines[0], lines


@pytest.mark.parametrize("command", [["run"], ["montecarlo", "--reps", "2", "--no-report"]])
def test_the_hard_event_bound_stops_a_run_with_exit_2_naming_the_part(tmp_path: Path, _logs: Path,
                                                                      command: list[str]) -> None:
    s = write_yaml(tmp_path / "spin.yaml", spin())
    code, lines, _ = run_cli([command[0], str(s), *command[1:], "--max-events", "50",
                              "--results", str(tmp_path / "r"), "--quiet"])
    line = one_error(code, lines, _logs, str(s), "events", "50 events", "--max-events 50",
                     "cluster.node.parts.glitch")
    assert "failed 50 times" in line or "failed 49 times" in line, line


def test_the_default_hard_bound_is_a_multiple_of_the_estimate(tmp_path: Path, _logs: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Without --max-events the bound is EVENT_BOUND_FACTOR × the estimate, at least EVENT_BOUND_MIN
    (made small here so that the run is short: the model reads them from twin.limits)."""
    sc = load_dict(spin()).scenario
    assert limits.event_bound(sc) == max(limits.EVENT_BOUND_MIN, int(limits.EVENT_BOUND_FACTOR * estimate_events(sc)))
    monkeypatch.setattr(limits, "EVENT_BOUND_MIN", 10)
    monkeypatch.setattr(limits, "EVENT_BOUND_FACTOR", 0.01)
    s = write_yaml(tmp_path / "spin.yaml", spin())
    code, lines, _ = run_cli(["run", str(s), "--results", str(tmp_path / "r"), "--quiet"])
    one_error(code, lines, _logs, "the hard bound of", "× the estimate", "cluster.node.parts.glitch")


def test_max_events_is_an_option_of_every_simulating_command() -> None:
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for name in ("run", "montecarlo", "compare", "sweep", "sensitivity", "forecast"):
        assert any(a.dest == "max_events" for a in sub.choices[name]._actions), name  # type: ignore[attr-defined]


# ====================================================================== item 5: exit 2, not 3

LIFETIMES = "part,component_id,start_h,end_h,failed\n"


@pytest.mark.parametrize("value,words", [("1e300", ["end_h", "1e+07 h"]), ("1e-300", ["end_h", "1e-06 h"])])
def test_fit_of_absurd_lifetimes_is_exit_2(tmp_path: Path, _logs: Path, value: str, words: list[str]) -> None:
    csv = tmp_path / "lives.csv"
    csv.write_text(LIFETIMES + f"gpu,a,0,{value},1\ngpu,b,0,200,1\ngpu,c,0,300,1\ngpu,d,0,100,1\ngpu,e,0,50,0\n")
    code, lines, _ = run_cli(["fit", str(csv), "--out", str(tmp_path / "fit")])
    one_error(code, lines, _logs, str(csv), "row 1", *words)


def _trace_scenario(tmp_path: Path, trace: str = "trace.csv") -> Path:
    doc = spin()
    del doc["cluster"]["node"]["parts"]["glitch"]
    doc["workload"] = {"trace": {"file": trace}}
    return write_yaml(tmp_path / "traced.yaml", doc)


def test_trace_with_an_unterminated_quote_is_exit_2(tmp_path: Path, _logs: Path) -> None:
    (tmp_path / "trace.csv").write_text('submit_h,gpus,duration_h,name\n0,8,10,"abc\n1,8,10,x\n')
    code, lines, _ = run_cli(["run", str(_trace_scenario(tmp_path)), "--dry-run"])
    one_error(code, lines, _logs, "trace.csv", "quoted cell is never closed")


def _stored_montecarlo(tmp_path: Path) -> tuple[Path, Path]:
    s = write_yaml(tmp_path / "spin.yaml", spin())
    code, lines, _ = run_cli(["montecarlo", str(s), "--reps", "3", "--results", str(tmp_path / "r"), "--quiet",
                              "--no-report"])
    assert code == 0, lines
    folder = next((tmp_path / "r" / "spin").glob("mc-*"))
    return s, folder


def test_a_damaged_chunk_on_resume_is_exit_2(tmp_path: Path, _logs: Path) -> None:
    s, folder = _stored_montecarlo(tmp_path)
    (folder / "COMPLETE").unlink()
    chunk = next((folder / "reps").glob("chunk-*.parquet"))
    chunk.write_bytes(chunk.read_bytes()[:100])  # truncated (a copy cut short)
    code, lines, _ = run_cli(["montecarlo", str(s), "--reps", "3", "--results", str(tmp_path / "r"), "--quiet",
                              "--no-report"])
    one_error(code, lines, _logs, str(chunk), "damaged", "--overwrite")


def test_a_damaged_final_table_is_exit_2_and_a_deleted_one_is_rebuilt(tmp_path: Path, _logs: Path) -> None:
    s, folder = _stored_montecarlo(tmp_path)
    argv = ["montecarlo", str(s), "--reps", "3", "--results", str(tmp_path / "r"), "--quiet", "--no-report"]
    (folder / "replications.parquet").write_text("garbage")
    code, lines, _ = run_cli(argv)
    one_error(code, lines, _logs, "replications.parquet", "damaged")
    (folder / "replications.parquet").unlink()
    code, lines, out = run_cli(argv)
    assert code == 0 and "0 computed, 3 reused" in out, (lines, out)


@pytest.mark.parametrize("command", [["run"], ["montecarlo", "--reps", "2", "--no-report"]])
def test_a_file_where_the_results_folder_should_be_is_exit_2(tmp_path: Path, _logs: Path,
                                                             command: list[str]) -> None:
    s = write_yaml(tmp_path / "spin.yaml", spin())
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "spin").write_text("a file")
    code, lines, _ = run_cli([command[0], str(s), *command[1:], "--results", str(tmp_path / "r"), "--quiet"])
    one_error(code, lines, _logs, str(tmp_path / "r" / "spin"), "is a file")


@pytest.mark.parametrize("command", [["run"], ["montecarlo", "--reps", "2", "--no-report"]])
def test_a_label_that_is_not_utf8_is_exit_2(tmp_path: Path, _logs: Path, command: list[str]) -> None:
    s = write_yaml(tmp_path / "spin.yaml", spin())
    label = b"\xff\xfe".decode("utf-8", "surrogateescape")  # as Python receives such bytes in sys.argv
    code, lines, _ = run_cli([command[0], str(s), *command[1:], "--results", str(tmp_path / "r"), "--quiet",
                              "--label", label])
    one_error(code, lines, _logs, "--label", "UTF-8")


# ====================================================================== item 6

def test_reps_above_the_default_max_reps_are_accepted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--reps 20,000 without --max-reps: no refusal through a --max-reps the user never passed (the
    experiment itself is replaced: only the checks before it are under test)."""
    import twin.experiment.runner as runner

    seen: dict[str, int] = {}

    def fake(loaded: Any, reps: int, *a: Any, max_reps: int = 0, **k: Any) -> Any:
        seen.update(reps=reps, max_reps=max_reps)
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "run_experiment", fake)
    s = write_yaml(tmp_path / "spin.yaml", spin())
    code, lines, _ = run_cli(["montecarlo", str(s), "--reps", "20000", "--results", str(tmp_path / "r"), "--quiet"])
    assert code == 130 and seen == {"reps": 20000, "max_reps": 20000}, (code, lines, seen)


@pytest.mark.parametrize("extra,option", [
    (["--reps", str(MAX_REPLICATIONS + 1)], "--reps"),
    (["--reps", "5", "--target-ci", "node_availability=0.001", "--max-reps", str(MAX_REPLICATIONS + 1)],
     "--max-reps"),
])
def test_the_replication_limit_names_the_option_that_set_it(tmp_path: Path, _logs: Path, extra: list[str],
                                                            option: str) -> None:
    s = write_yaml(tmp_path / "spin.yaml", spin())
    code, lines, _ = run_cli(["montecarlo", str(s), *extra, "--results", str(tmp_path / "r"), "--quiet"])
    one_error(code, lines, _logs, f": {option}: ", f"{MAX_REPLICATIONS:,}", "--force")


@pytest.mark.parametrize("command", [["montecarlo", "{s}"], ["compare", "{s}", "{s}"], ["forecast", "{s}"]])
def test_workers_beyond_4_per_core_are_refused(tmp_path: Path, _logs: Path, monkeypatch: pytest.MonkeyPatch,
                                               command: list[str]) -> None:
    monkeypatch.setattr(limits, "usable_cpus", lambda: 2)
    s = write_yaml(tmp_path / "spin.yaml", spin(workload={"jobs": [{"name": "j", "gpus": 8, "work_h": 10}]}))
    argv = [a.replace("{s}", str(s)) for a in command]
    code, lines, _ = run_cli([*argv, "--reps", "2", "--workers", "1000", "--results", str(tmp_path / "r")])
    one_error(code, lines, _logs, "--workers", "1000", "2 CPU cores", "(8 worker processes)", "--force")
    assert not (tmp_path / "r").exists()


def test_a_full_disk_while_drawing_a_figure_names_the_file(tmp_path: Path, _logs: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from matplotlib.figure import Figure

    def no_space(self: Any, *a: Any, **k: Any) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # as write(2) gives it: no file named

    monkeypatch.setattr(Figure, "savefig", no_space)
    s = write_yaml(tmp_path / "spin.yaml", spin())
    code, lines, _ = run_cli(["run", str(s), "--results", str(tmp_path / "r"), "--quiet"])
    line = one_error(code, lines, _logs, "No space left on device", str(tmp_path / "r"))
    assert ".png" in line, line


def test_a_fifo_as_trace_file_says_what_it_is(tmp_path: Path, _logs: Path) -> None:
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this system")
    os.mkfifo(tmp_path / "trace.csv")
    code, lines, _ = run_cli(["run", str(_trace_scenario(tmp_path)), "--dry-run"])
    line = one_error(code, lines, _logs, "workload.trace.file", "named pipe (FIFO)", "regular file")
    assert "not found" not in line


def test_an_empty_results_folder_name_is_refused(tmp_path: Path, _logs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    s = write_yaml(tmp_path / "spin.yaml", spin())
    code, lines, _ = run_cli(["run", str(s), "--results", "", "--quiet"])
    one_error(code, lines, _logs, "--results", "empty")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["spin.yaml"]


def test_fit_refuses_part_names_the_schema_refuses(tmp_path: Path, _logs: Path) -> None:
    csv = tmp_path / "lives.csv"
    csv.write_text(LIFETIMES + "".join(f"<b>gpu</b>,{c},0,{t},1\n" for c, t in zip("abcd", (100, 200, 300, 400))))
    code, lines, _ = run_cli(["fit", str(csv), "--out", str(tmp_path / "fit")])
    one_error(code, lines, _logs, str(csv), "row 1, column part", "letters, digits and _")
    code, lines, _ = run_cli(["fit", str(csv), "--parts", "gpu-1", "--out", str(tmp_path / "fit")])
    assert code == 2 and "--parts" in lines[0] and "letters, digits and _" in lines[0], lines


def test_fit_md_escapes_html_from_the_user(tmp_path: Path) -> None:
    folder = tmp_path / "<script>x"
    folder.mkdir()
    csv = folder / "lives.csv"
    csv.write_text(LIFETIMES + "".join(f"gpu,{c},0,{t},1\n" for c, t in zip("abcdefgh", range(100, 900, 100))))
    code, lines, _ = run_cli(["fit", str(csv), "--out", str(tmp_path / "fit")])
    assert code == 0, lines
    md = (tmp_path / "fit" / "fit.md").read_text()
    outside_code = "".join(md.split("`")[0::2])  # text outside code spans (shown as is, HTML not read there)
    assert "<script>" not in outside_code and "&lt;script&gt;" in outside_code


@pytest.mark.parametrize("rate", ["1e308", "1e300"])
def test_an_absurd_arrival_rate_is_refused_in_one_line(rate: str, _logs: Path) -> None:
    """A synthetic arrival rate whose job count over the horizon overflows to infinity (1e308 per hour × 72 h, found
    by the fuzz test) or is merely absurd is refused before work with exit 2, not an OverflowError (exit 3)."""
    code, lines, _ = run_cli(["run", str(BASELINE), "--set", "horizon_days=3", "--set",
                              f"workload.synthetic.arrival_rate_per_h={rate}", "--dry-run"])
    line = one_error(code, lines, _logs, str(BASELINE), "workload", "jobs are submitted", "--force")
    assert ("infinitely many" in line) == (rate == "1e308"), line
