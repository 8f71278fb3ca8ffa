"""Robustness (issue 11): hostile scenario files, limits, path rules, interrupted runs, what a
results folder records.

- a corpus of hand-written bad scenarios in ``tests/data/bad`` (``expected.yaml`` says what each
  must give): exit code 2 and exactly one stderr line naming the file, the field and the problem;
- Hypothesis fuzzing of the loader (in-memory documents, YAML files through ``twin run``, random
  YAML text, and valid-but-odd scenarios actually simulated): every input loads into a valid
  scenario or gives the one-line error; never a traceback (exit 3), a hang (a per-example alarm)
  or code execution (a marker file);
- limits (:mod:`twin.limits`) refuse before any work and ``--force`` overrides them; a 100 MB
  file and an alias bomb are refused in well under 2 s;
- paths in scenarios stay in the scenario's folder or the project unless allowed on the command line;
- Ctrl-C during ``twin run`` exits 130 after less than a second of CPU and leaves no results folder.

Covered elsewhere, not repeated here: Ctrl-C, SIGKILL and resume of ``twin montecarlo`` and a
killed pool worker (tests/test_experiment.py: test_sigint_exits_130_promptly_and_resumes,
test_sigkill_part_way_then_resume_gives_identical_table, test_worker_killed_mid_run_is_retried_once);
``twin report`` warning about mixed twin versions (tests/test_report_html.py:
test_report_warns_when_twin_versions_are_mixed); ``twin run`` reuse and ``--overwrite`` of its own
folder (tests/test_run_cli.py).
"""

from __future__ import annotations

import copy
import io
import json
import math
import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import twin
from twin import cli
from twin.errors import InputError
from twin.limits import MAX_EVENTS, MAX_NODES, MAX_REPLICATIONS, check_limits, estimate_events
from twin.scenario.loader import MAX_FILE_BYTES, load_dict, load_scenario
from twin.scenario.schema import Scenario

ROOT = Path(__file__).resolve().parents[1]
BAD = ROOT / "tests" / "data" / "bad"
EXPECTED: dict[str, dict[str, str]] = yaml.safe_load((BAD / "expected.yaml").read_text(encoding="utf-8"))


def run_cli(argv: list[str]) -> tuple[int, list[str], str]:
    """``twin.cli.main`` with stdout and stderr captured: (exit code, stderr lines, stdout)."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = cli.main(argv)
    return code, err.getvalue().splitlines(), out.getvalue()


def write_yaml(path: Path, doc: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


TINY: dict[str, Any] = {
    "name": "tiny", "seed": 3, "horizon_days": 5,
    "cluster": {"racks": 1, "nodes_per_rack": 2, "node": {"gpus": 8, "parts": {
        "gpu": {"count": 8, "failure": {"mtbf_h": 5000}, "repair": {"time": {"dist": "fixed", "value_h": 2}}}}}},
    "maintenance": {"crews": {"technicians": {"count": 1}}},
}


def tiny(**changes: Any) -> dict[str, Any]:
    d = copy.deepcopy(TINY)
    d.update(changes)
    return d


# ================================================================== the hand-written corpus

def test_corpus_manifest_lists_every_bad_file() -> None:
    files = {p.name for p in BAD.glob("*.yaml")} - {"base.yaml", "expected.yaml"}
    assert files == set(EXPECTED), (files ^ set(EXPECTED))
    assert len(EXPECTED) >= 30
    for name, exp in EXPECTED.items():
        assert set(exp) <= {"field", "text", "names", "lines"} and exp["text"], name


def test_corpus_base_is_valid() -> None:
    ld = load_scenario(BAD / "base.yaml")
    assert ld.scenario.name == "bad-corpus-base"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_bad_corpus_file(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Exit 2, one line naming the file, the field and the expected text (or ``lines`` lines, each
    naming the file, the first the field and text, for a file with several mistakes: all are listed);
    nothing written, nothing executed. Run from an empty folder: the project is then that folder (and the repository that
    holds the corpus), so /etc is outside; a python tag would create ./PWNED there."""
    exp = EXPECTED[name]
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TWIN_LOG_DIR", str(tmp_path / "logs"))
    path = BAD / name
    code, lines, out = run_cli(["run", str(path), "--results", str(tmp_path / "results"), "--quiet"])
    assert code == 2, (code, lines)
    assert len(lines) == exp.get("lines", 1), lines
    line = lines[0]
    assert all(x.startswith("error: ") for x in lines), lines
    named = BAD / exp["names"] if exp.get("names") else path
    assert all(str(named) in x for x in lines), lines
    if exp["field"]:
        assert f": {exp['field']}" in line, line
    assert exp["text"] in line, line
    assert not (tmp_path / "results").exists()
    assert not (tmp_path / "PWNED").exists() and not (BAD / "PWNED").exists()
    assert out == ""


# ================================================================== fuzzing

SEED_DOC: dict[str, Any] = {
    "name": "fuzz", "seed": 7, "horizon_days": 3,
    "cluster": {"racks": 2, "nodes_per_rack": 4, "node": {"gpus": 8, "parts": {
        "gpu": {"count": 8, "effect": "node_down", "failure": {"dist": "weibull", "shape": 1.2, "scale_h": 60000},
                "repair": {"time": {"dist": "lognormal", "mean_h": 4, "sigma": 0.5}, "burn_in_h": 1}},
        "psu": {"count": 5, "required": 4, "min_to_run": 3, "effect": "redundant", "failure": {"mtbf_h": 150000},
                "repair": {"hot_swap": True, "time": {"dist": "fixed", "value_h": 0.5}}},
        "nic": {"count": 8, "effect": "link_down", "failure": {"mtbf_h": 3000000}},
        "software": {"count": 1, "effect": "transient", "failure": {"mtbf_h": 40000}},
    }}},
    "maintenance": {"detection": {"dist": "fixed", "value_h": 0.25},
                    "crews": {"technicians": {"count": 2, "shift": "24x7"},
                              "day": {"count": 1, "shift": "business", "start_hour": 8, "end_hour": 17}},
                    "spares": {"gpu": {"stock": 2, "reorder_point": 1, "reorder_qty": 2, "lead_time_days": 7}},
                    "planned": {"every_days": 2, "batch_nodes": 1, "duration_h": 2}},
    "workload": {"scheduler": {"policy": "backfill", "hot_spares": 1},
                 "jobs": [{"name": "train", "gpus": 32, "work_h": 1000,
                           "checkpoint": {"interval_h": 2.0, "size_gb": 100, "mode": "sync"}}],
                 "synthetic": {"arrival_rate_per_h": 0.2, "gpus": {"values": [8, 16], "weights": [3, 1]},
                               "work": {"dist": "lognormal", "mean_h": 3, "sigma": 1.0}}},
    "power": {"topology": "n+1", "psu_part": "psu", "capacity_w": 3300,
              "utility": {"outages_per_year": 2, "duration": {"dist": "lognormal", "mean_h": 1.0, "sigma": 1.2}}},
    "cooling": {"type": "liquid",
                "liquid": {"loops": 1, "cdu": {"count": 2, "required": 1, "failure": {"mtbf_h": 50000}}}},
    "network": {"link_flaps_per_link_per_year": 0.5},
}
"""A valid scenario with every section: the fuzzers mutate it."""

WORDS = ["exponential", "weibull", "fixed", "empirical", "lognormal", "24x7", "business", "redundant", "node_down",
         "link_down", "transient", "liquid", "air", "hybrid", "n+1", "2n", "technicians", "day", "gpu", "psu",
         "sync", "async", "backfill", "fifo", "file", "dist", "mtbf_h", "mean_h", "count", "extends", "../x.csv"]
ODD_NUMBERS = [math.nan, math.inf, -math.inf, 1e308, -1e308, 5e-324, -0.0, 0.0, 1e-300, 1e30, -1.0, 0.5, 1e19,
               2**63, 2**64, -2**63, 10**30, -10**30, 10**400, 0, 1, -1]
scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.sampled_from(ODD_NUMBERS),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=16), st.sampled_from(WORDS))
keys = st.one_of(st.text(max_size=12), st.sampled_from(WORDS))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(keys, inner, max_size=4)), max_leaves=10)


def _paths(doc: Any, pre: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [pre]
    if len(pre) < 12:
        if isinstance(doc, dict):
            for k, v in doc.items():
                out += _paths(v, pre + (k,))
        elif isinstance(doc, list):
            for i, v in enumerate(doc):
                out += _paths(v, pre + (i,))
    return out


def _nested(depth: int, as_list: bool) -> Any:
    v: Any = 1
    for _ in range(depth):
        v = [v] if as_list else {"a": v}
    return v


BUNDLED = [load_scenario(p).resolved for p in sorted((ROOT / "scenarios").glob("*.yaml"))]
"""The bundled scenarios with every default written out: mutations reach every field of every section."""


@st.composite
def mutated(draw: st.DrawFn, numbers_only: bool = False) -> dict[str, Any]:
    """SEED_DOC (or a bundled scenario, resolved) with 1–4 mutations: a value replaced by a random
    one, a key deleted, an extra key, a number scaled to zero/negative/huge/NaN, a key renamed, or
    a value nested thousands deep. ``numbers_only``: SEED_DOC, numbers changed only."""
    seed = SEED_DOC if numbers_only or draw(st.booleans()) else draw(st.sampled_from(BUNDLED))
    doc = copy.deepcopy(seed)
    ops = ["scale", "number"] if numbers_only else ["replace", "delete", "add", "scale", "rename", "deep", "number"]
    for _ in range(draw(st.integers(1, 4))):
        p = draw(st.sampled_from(_paths(doc)[1:]))
        parent: Any = doc
        for k in p[:-1]:
            parent = parent[k]
        last, cur = p[-1], parent[p[-1]]
        op = draw(st.sampled_from(ops))
        if op == "replace":
            parent[last] = draw(values)
        elif op == "delete":
            del parent[last]
        elif op == "add" and isinstance(cur, dict):
            cur[draw(keys)] = draw(values)
        elif op == "add" and isinstance(cur, list):
            cur.append(draw(values))
        elif op == "rename" and isinstance(parent, dict):
            parent[draw(keys)] = parent.pop(last)
        elif op == "deep":
            parent[last] = _nested(draw(st.integers(40, 3000)), draw(st.booleans()))
        elif isinstance(cur, (int, float)) and not isinstance(cur, bool):
            if op == "scale":
                f = draw(st.sampled_from([-1, 0, 1e-300, 1e-9, 1e-3, 1e3, 1e9, 1e300, 10**12]))
                try:
                    parent[last] = cur * f
                except OverflowError:
                    parent[last] = math.inf
            else:
                parent[last] = draw(st.sampled_from(ODD_NUMBERS))
    return doc


class Hang(BaseException):
    """Raised by the per-example alarm (a BaseException: the CLI's handlers must not swallow it)."""


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Fail an example that takes more than ``seconds`` of this process's CPU (a hang) instead of blocking
    CI. CPU time, not wall time (``ITIMER_PROF``): on a loaded machine a slow but finite example must not
    count as a hang (a wall-clock alarm once landed in a first ``import matplotlib`` under load and left
    the module half-imported for every later example)."""

    def on_alarm(signum: int, frame: Any) -> None:
        raise Hang(f"example took more than {seconds} s of CPU")

    old = signal.signal(signal.SIGPROF, on_alarm)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, old)


FUZZ = settings(deadline=None, database=None, suppress_health_check=list(HealthCheck))


@pytest.fixture(scope="module")
def fuzz_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    d = tmp_path_factory.mktemp("fuzz")
    old = os.environ.get("TWIN_LOG_DIR")
    os.environ["TWIN_LOG_DIR"] = str(d / "logs")
    # the modules a run imports, imported before any example's alarm is armed (an alarm inside a first import
    # would leave a module half-imported for the examples after it)
    assert run_cli(["run", str(write_yaml(d / "seed.yaml", SEED_DOC)), "--results", str(d / "results"),
                    "--dry-run"])[0] == 0
    try:
        yield d
    finally:
        if old is None:
            os.environ.pop("TWIN_LOG_DIR", None)
        else:
            os.environ["TWIN_LOG_DIR"] = old


def test_seed_doc_is_valid() -> None:
    ld = load_dict(SEED_DOC)
    check_limits(ld, reps=1)


def _one_line(exc: InputError) -> None:
    """Each problem (a scenario may have several, all listed) and each hint is one line."""
    for line in [exc.one_line(), *exc.lines(), *exc.hints()]:
        assert len(line.splitlines()) == 1 and line == line.strip(), repr(line)


def _error_lines(lines: list[str], path: Path) -> bool:
    """stderr of a refused scenario: one ``error:`` line per problem (all listed), then any ``hint:``
    lines, each naming the file and one line."""
    errors = [x for x in lines if x.startswith(f"error: {path}")]
    hints = lines[len(errors):]
    return bool(errors) and lines[:len(errors)] == errors and all(h.startswith(f"hint: {path}") for h in hints)


@settings(FUZZ, max_examples=150)
@given(doc=mutated())
def test_fuzz_load_dict(doc: dict[str, Any]) -> None:
    """In memory: a valid Scenario (then the limits may refuse it, as an InputError) or an InputError."""
    with deadline(10):
        try:
            ld = load_dict(doc, "<fuzz>")
        except InputError as exc:
            _one_line(exc)
            return
        assert isinstance(ld.scenario, Scenario) and len(ld.hash) == 12
        try:
            check_limits(ld, reps=10)
        except InputError as exc:
            _one_line(exc)


HOSTILE = [
    "!!python/object/apply:os.system [\"touch {marker}\"]",
    "!!python/object/apply:builtins.open [\"{marker}\", \"w\"]",
    "!!python/object/new:os.system [\"touch {marker}\"]",
    "!!python/name:os.system",
    "&a [*a, *a]", "*nowhere", "&x 3", "{<<: *x}", "!!binary zzz", "!!set {a, b}", "!!int 0xZZ", "!!float 1e",
    "2020-13-45", "9" * 4400, "\t", "\x00", "\u2028", "[" * 80, "? [a, b]\n: 1", "{a: 1, a: 2}", "'unterminated",
    "- - - -", ".nan", "-.inf", "1e999", "!!timestamp 2001-02-30", "!!timestamp garbage", "!!bool maybe", "!!int",
    "!!float ''", "!!str {a: 1}", "!!omap x", "!custom 1",
]


@st.composite
def yaml_texts(draw: st.DrawFn, marker: str) -> str:
    """YAML text of a mutated document, maybe with hostile snippets spliced into random lines."""
    doc = draw(mutated())
    try:
        text = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)
    except RecursionError:  # the emitter itself cannot write thousands of levels
        text = yaml.safe_dump(SEED_DOC, sort_keys=False)
    lines = text.splitlines()
    for _ in range(draw(st.integers(0, 3))):
        snippet = draw(st.sampled_from(HOSTILE)).replace("{marker}", marker)
        i = draw(st.integers(0, len(lines)))
        how = draw(st.sampled_from(["value", "line", "raw"]))
        if how == "value" and i < len(lines) and ":" in lines[i]:
            head = lines[i].split(":", 1)[0]
            lines[i] = f"{head}: {snippet}"
        elif how == "line":
            lines.insert(i, f"k{i}: {snippet}")
        else:
            lines.insert(i, snippet)
    return "\n".join(lines) + "\n"


@settings(FUZZ, max_examples=150)
@given(data=st.data())
def test_fuzz_yaml_file_through_twin_run(fuzz_dir: Path, data: st.DataObject) -> None:
    """A YAML file through `twin run --dry-run` (load, files, limits): exit 0 with an ok line, or
    exit 2 with one line per problem naming the file; never 3, never a hang, nothing executed."""
    marker = fuzz_dir / "PWNED"
    text = data.draw(yaml_texts(str(marker)))
    path = fuzz_dir / "s.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    with deadline(10):
        code, lines, out = run_cli(["run", str(path), "--results", str(fuzz_dir / "results"), "--dry-run"])
    assert not marker.exists(), "a python tag was executed"
    assert code in (0, 2), (code, lines)
    if code == 2:
        assert _error_lines(lines, path), lines
    else:
        assert out.startswith("ok: ") and lines == []
    assert not (fuzz_dir / "results").exists()


@settings(FUZZ, max_examples=100)
@given(text=st.one_of(st.text(max_size=300), st.binary(max_size=300)))
def test_fuzz_random_text_through_twin_run(fuzz_dir: Path, text: str | bytes) -> None:
    """Arbitrary text or bytes as a scenario file: exit 2 with one line per problem (or, improbably, 0)."""
    path = fuzz_dir / "t.yaml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
    with deadline(10):
        code, lines, _ = run_cli(["run", str(path), "--results", str(fuzz_dir / "results"), "--dry-run"])
    assert code in (0, 2), (code, lines)
    if code == 2:
        assert _error_lines(lines, path), lines


@settings(FUZZ, max_examples=20)
@given(doc=mutated(numbers_only=True))
def test_fuzz_odd_numbers_simulate_or_refuse(doc: dict[str, Any]) -> None:
    """Numbers set to zero, tiny, huge, negative or non-finite: the scenario is refused (schema or
    limits) or it simulates two days without an exception."""
    from twin.sim import run_replication

    doc["horizon_days"] = 2
    with deadline(20):
        try:
            ld = load_dict(doc, "<fuzz>")
            check_limits(ld, reps=1)
        except InputError as exc:
            _one_line(exc)
            return
        res = run_replication(ld.scenario, 0, ld.hash)
    assert 0.0 <= res.metrics["node_availability"] <= 1.0


def test_every_number_field_at_extremes() -> None:
    """Systematically, every numeric field of SEED_DOC and of the bundled scenarios (all defaults
    written out) set to 0, −1, 10^12 and 10^300, one at a time: refused with an InputError or
    accepted, quickly (this found a validator building a list as long as a PSU count, and work hours
    derived as parameters × tokens overflowing to infinity)."""
    fields = 0
    done: set[tuple[Any, ...]] = set()
    for base in [SEED_DOC, *BUNDLED]:
        for p in _paths(base)[1:]:
            parent: Any = base
            for k in p[:-1]:
                parent = parent[k]
            v = parent[p[-1]]
            key = tuple(k if isinstance(k, str) else 0 for k in p)
            if not isinstance(v, (int, float)) or isinstance(v, bool) or key in done:
                continue
            done.add(key)
            fields += 1
            for extreme in (0, -1, 10**12, 1e300):
                doc = copy.deepcopy(base)
                target: Any = doc
                for k in p[:-1]:
                    target = target[k]
                target[p[-1]] = extreme
                with deadline(5):
                    try:
                        check_limits(load_dict(doc, "<extreme>"), reps=1)
                    except InputError as exc:
                        _one_line(exc)
    assert fields > 100


def test_hostile_set_values_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--set values are YAML too: the same safe loader and guards."""
    monkeypatch.chdir(tmp_path)
    path = write_yaml(tmp_path / "s.yaml", tiny())
    for value in ['!!python/object/apply:os.system ["touch PWNED"]', "2020-13-45", "9" * 5000, "[" * 80,
                  "&a [*a]", "{a: 1, a: 2}"]:
        code, lines, _ = run_cli(["run", str(path), "--dry-run", "--set", f"description={value}"])
        assert code == 2 and len(lines) == 1, (value, lines)
        assert "--set description=" in lines[0] and str(path) in lines[0], lines[0]
    assert not (tmp_path / "PWNED").exists()


# ================================================================== limits

def test_limits_refuse_before_work_and_force_overrides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import twin.sim

    def no_simulation(*a: Any, **k: Any) -> None:
        raise AssertionError("the limits must refuse before any simulation")

    monkeypatch.setattr(twin.sim, "run_replication", no_simulation)
    monkeypatch.setattr("twin.experiment.single.run_replication", no_simulation)
    path = write_yaml(tmp_path / "s.yaml", tiny())
    big = ["--set", "cluster.racks=2000", "--set", "cluster.nodes_per_rack=64"]  # 128,000 nodes
    t0 = time.process_time()  # CPU seconds: a loaded machine cannot fail the bound
    code, lines, _ = run_cli(["run", str(path), "--results", str(tmp_path / "r"), *big])
    assert time.process_time() - t0 < 2
    assert code == 2 and len(lines) == 1, lines
    assert f"{MAX_NODES:,} nodes" in lines[0] and "--force" in lines[0] and ": cluster:" in lines[0]
    assert not (tmp_path / "r").exists()
    code, lines, out = run_cli(["run", str(path), "--results", str(tmp_path / "r"), *big, "--force", "--dry-run"])
    assert code == 0 and "128000 nodes" in out, (lines, out)
    # a unit slip (MTBF in hours written as 0.001) on a part that renews at once (transient: no repair
    # time bounds its renewals, as a repaired part's does, issue 39 item 4) is billions of events
    code, lines, _ = run_cli(["run", str(path), "--set", "cluster.node.parts.gpu.failure.mtbf_h=0.001",
                              "--set", "cluster.node.parts.gpu.effect=transient", "--set", "horizon_days=3650"])
    assert code == 2 and "estimated events" in lines[0] and "--force" in lines[0], lines


@pytest.mark.parametrize("argv,words", [
    (["montecarlo", "{s}", "--reps", str(MAX_REPLICATIONS + 1), "--max-reps", str(MAX_REPLICATIONS + 1)],
     ["--reps", f"{MAX_REPLICATIONS:,}", "--force"]),
    (["montecarlo", "{s}", "--reps", "5", "--target-ci", "node_availability=0.001", "--max-reps",
      str(MAX_REPLICATIONS + 1)], [": --max-reps: ", "--force"]),  # the option that set the count (issue 39)
    (["compare", "{s}", "{s}", "--reps", "5", "--set", "cluster.racks=200000"], ["cluster", "--force"]),
    (["sweep", "{s}", "--param", "cluster.racks=1,200000", "--reps", "5"], ["cluster", "--force"]),
    (["sensitivity", "{s}", "--param", "cluster.nodes_per_rack=2,200000", "--reps", "5"], ["cluster", "--force"]),
    (["sweep", "{s}", "--param", "seed=1,2", "--reps", str(MAX_REPLICATIONS // 2 + 1), "--max-reps",
      str(MAX_REPLICATIONS)], ["--reps", "--force"]),
])
def test_experiment_commands_check_limits_first(tmp_path: Path, argv: list[str], words: list[str]) -> None:
    s = write_yaml(tmp_path / "s.yaml", tiny())
    args = [a.replace("{s}", str(s)) for a in argv] + ["--results", str(tmp_path / "r"), "--quiet"]
    t0 = time.process_time()  # CPU seconds: a loaded machine cannot fail the bound
    code, lines, _ = run_cli(args)
    assert time.process_time() - t0 < 5
    assert code == 2 and len(lines) == 1, lines
    for w in words:
        assert w in lines[0], lines[0]
    assert not (tmp_path / "r").exists()


def test_forecast_checks_limits_first(tmp_path: Path) -> None:
    try:
        import twin.forecast.cli  # noqa: F401
    except ModuleNotFoundError:
        pytest.skip("no forecast command")
    s = write_yaml(tmp_path / "s.yaml", tiny(workload={"jobs": [{"name": "j", "gpus": 8, "work_h": 10}]}))
    code, lines, _ = run_cli(["forecast", str(s), "--reps", str(MAX_REPLICATIONS + 1),
                              "--results", str(tmp_path / "r")])
    assert code == 2 and len(lines) == 1 and "--reps" in lines[0] and "--force" in lines[0], lines
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("doc", [
    tiny(horizon_days=365, cluster={"racks": 1, "nodes_per_rack": 16, "node": {"parts": {
        "gpu": {"count": 8, "failure": {"mtbf_h": 2000}}}}}),
    {**SEED_DOC, "horizon_days": 30},
], ids=["failures", "all-sections"])
def test_event_estimate_is_the_right_order_of_magnitude(doc: dict[str, Any]) -> None:
    """The estimate guards against absurd inputs, so a factor of a few is fine; it must not be off
    by orders of magnitude (the bundled scenarios are within 1.3–1.8×: checkpoints count 2–3 events)."""
    from twin.sim import run_replication

    ld = load_dict(doc)
    est = estimate_events(ld.scenario)
    res = run_replication(ld.scenario, 0, ld.hash)
    assert res.events_processed > 100
    assert 1 / 3 <= est / res.events_processed <= 3, (est, res.events_processed)


def test_event_estimate_counts_failures_exactly_per_formula() -> None:
    """One part, exponential: 10 events × units × horizon / MTBF, and nothing else."""
    sc = load_dict(tiny(horizon_days=100)).scenario
    assert estimate_events(sc) == pytest.approx(10 * 16 * 2400 / 5000)
    assert MAX_EVENTS == 5e8


def test_100_mb_file_and_alias_bomb_refused_quickly(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    chunk = (b"# " + b"x" * 1021 + b"\n") * 1024  # 1 MiB of comment lines
    with big.open("wb") as fh:
        fh.write(b"name: big\n")
        for _ in range(100):
            fh.write(chunk)
    assert big.stat().st_size > 100_000_000
    t0 = time.process_time()  # CPU seconds: a loaded machine cannot fail the bound
    code, lines, _ = run_cli(["run", str(big), "--results", str(tmp_path / "r")])
    assert time.process_time() - t0 < 2
    assert code == 2 and len(lines) == 1, lines
    assert str(big) in lines[0] and f"limited to {MAX_FILE_BYTES} bytes" in lines[0]

    bomb = tmp_path / "bomb.yaml"
    rows = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 12):  # 10^12 strings if expanded
        p, c = chr(ord("a") + i - 1), chr(ord("a") + i)
        rows.append(f"{c}: &{c} [" + ",".join([f"*{p}"] * 10) + "]")
    bomb.write_text("\n".join(rows) + "\n")
    t0 = time.process_time()  # CPU seconds: a loaded machine cannot fail the bound
    code, lines, _ = run_cli(["run", str(bomb), "--results", str(tmp_path / "r")])
    assert time.process_time() - t0 < 2
    assert code == 2 and len(lines) == 1 and str(bomb) in lines[0] and "alias bomb" in lines[0], lines


# ================================================================== paths

def _split_project(tmp_path: Path) -> tuple[Path, Path]:
    """tmp/proj/scen/child.yaml and tmp/proj/shared/ (base, data): outside the scenario's folder,
    inside the project when the command runs from tmp/proj."""
    proj = tmp_path / "proj"
    shared = proj / "shared"
    (shared / "data").mkdir(parents=True)
    (shared / "data" / "repair.csv").write_text("hours\n1.0\n2.0\n3.0\n")
    (shared / "data" / "trace.csv").write_text("submit_h,gpus,duration_h\n0,8,10\n")
    (shared / "data" / "ambient.csv").write_text("temp_c\n" + "\n".join(str(10 + i % 7) for i in range(48)) + "\n")
    write_yaml(shared / "base.yaml", tiny())
    write_yaml(proj / "scen" / "child.yaml", {"extends": "../shared/base.yaml", "name": "child"})
    (tmp_path / "elsewhere").mkdir()
    return proj, shared


def test_extends_outside_the_folder_needs_the_project_or_allow_path(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    proj, shared = _split_project(tmp_path)
    child = proj / "scen" / "child.yaml"
    monkeypatch.chdir(proj)  # the project is the current directory (no git here)
    assert load_scenario(child).scenario.name == "child"
    monkeypatch.chdir(tmp_path / "elsewhere")
    code, lines, _ = run_cli(["run", str(child), "--dry-run"])
    assert code == 2 and len(lines) == 1, lines
    assert str(child) in lines[0] and ": extends:" in lines[0] and "outside" in lines[0] and "--allow-path" in lines[0]
    code, lines, out = run_cli(["run", str(child), "--dry-run", "--allow-path", str(shared)])
    assert code == 0 and out.startswith("ok: child"), lines


@pytest.mark.parametrize("field,csv,extra", [
    ("cluster.node.parts.gpu.repair.time", "repair.csv", {"dist": "empirical"}),
    ("workload.trace", "trace.csv", {}),
    ("cooling.ambient.csv", "ambient.csv", {}),
], ids=["empirical", "trace", "weather"])
def test_data_file_outside_needs_allow_path_or_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   field: str, csv: str, extra: dict[str, Any]) -> None:
    proj, shared = _split_project(tmp_path)
    monkeypatch.chdir(tmp_path / "elsewhere")
    doc = tiny()
    if field.startswith("cooling"):
        doc["cooling"] = {"type": "air", "air": {"fan_part": None}}
    target = doc
    keys = field.split(".")
    for k in keys[:-1]:
        target = target.setdefault(k, {})
    rel = os.path.relpath(shared / "data" / csv, proj / "scen")  # ../shared/data/<csv>
    target[keys[-1]] = {**extra, "file": rel}
    s = write_yaml(proj / "scen" / "s.yaml", doc)
    code, lines, _ = run_cli(["run", str(s), "--dry-run"])
    assert code == 2 and len(lines) == 1, lines
    assert f": {field}.file:" in lines[0] and "outside" in lines[0] and "--allow-path" in lines[0], lines[0]
    # allowed on the command line: --allow-path, or the file itself through --set
    code, lines, _ = run_cli(["run", str(s), "--dry-run", "--allow-path", str(shared / "data")])
    assert code == 0, lines
    code, lines, _ = run_cli(["run", str(s), "--dry-run", "--set", f"{field}.file={shared / 'data' / csv}"])
    assert code == 0, lines
    # and the file is really read (bound) when allowed
    loaded = load_scenario(s, allow=[shared])
    if field.startswith("cooling"):
        assert len(loaded.scenario.cooling.ambient.csv.values()) == 48
    elif field.startswith("workload"):
        assert len(loaded.scenario.workload.trace._rows) == 1
    else:
        assert loaded.scenario.cluster.node.parts["gpu"].repair.time.mean() == pytest.approx(2.0)


def test_symlink_pointing_outside_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    proj, shared = _split_project(tmp_path)
    monkeypatch.chdir(tmp_path / "elsewhere")
    scen = tmp_path / "elsewhere" / "scen"
    scen.mkdir()
    (scen / "repair.csv").symlink_to(shared / "data" / "repair.csv")
    s = write_yaml(scen / "s.yaml", tiny(cluster={**TINY["cluster"], "node": {"parts": {"gpu": {
        "failure": {"mtbf_h": 5000}, "repair": {"time": {"dist": "empirical", "file": "repair.csv"}}}}}}))
    code, lines, _ = run_cli(["run", str(s), "--dry-run"])
    assert code == 2 and "outside" in lines[0] and str(shared / "data" / "repair.csv") in lines[0], lines


def test_weather_csv_inside_the_folder_is_loaded_and_simulated(tmp_path: Path) -> None:
    """The ambient (weather) CSV is read by the loader; the thermal model uses it."""
    from twin.sim import run_replication

    (tmp_path / "ambient.csv").write_text("temp_c\n" + "\n".join("25" for _ in range(24)) + "\n")
    doc = tiny(cooling={"type": "air", "air": {"fan_part": None}, "ambient": {"csv": {"file": "ambient.csv"}}})
    ld = load_scenario(write_yaml(tmp_path / "s.yaml", doc))
    assert list(ld.scenario.cooling.ambient.csv.values()) == [25.0] * 24
    res = run_replication(ld.scenario, 0, ld.hash)
    assert 0 <= res.metrics["node_availability"] <= 1


@pytest.mark.parametrize("before", [0, (1 << 20) - 70_000], ids=["first-row", "across-a-read-chunk"])
def test_data_file_with_an_overlong_row_is_bad_input(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     before: int) -> None:
    """A data-file row longer than the csv module's field limit is bad input (exit 2, one line naming
    the file and the row), also when the row straddles the loader's 1 MiB read chunks; before, the
    trace reader failed with csv.Error as an internal error."""
    monkeypatch.setenv("TWIN_LOG_DIR", str(tmp_path / "logs"))
    short = "1,8,2\n"
    n_short = before // len(short)
    (tmp_path / "trace.csv").write_text("submit_h,gpus,duration_h\n" + short * n_short + "1,8," + "9" * 140_000 + "\n")
    doc = tiny(workload={"jobs": [], "trace": {"file": "trace.csv"}})
    code, lines, out = run_cli(["run", str(write_yaml(tmp_path / "s.yaml", doc)), "--results",
                                str(tmp_path / "r"), "--quiet"])
    assert code == 2, (code, lines)
    assert len(lines) == 1 and "trace.csv" in lines[0] and f"row {n_short + 2}" in lines[0], lines
    assert "131,072 characters" in lines[0]


def test_fit_file_with_an_overlong_header_is_bad_input(tmp_path: Path) -> None:
    (tmp_path / "life.csv").write_text("part," + "x" * 140_000 + "\n")
    code, lines, _ = run_cli(["fit", str(tmp_path / "life.csv")])
    assert code == 2 and len(lines) == 1 and "life.csv" in lines[0] and "header" in lines[0], lines


def test_run_never_overwrites_a_folder_without_overwrite(tmp_path: Path) -> None:
    """An existing folder under the run's name that twin did not write (a user's files, a corrupt
    summary.json) is refused untouched; --overwrite replaces it atomically."""
    s = write_yaml(tmp_path / "s.yaml", tiny())
    folder = tmp_path / "r" / "tiny" / "mine"
    folder.mkdir(parents=True)
    (folder / "notes.txt").write_text("last week's results")
    (folder / "summary.json").write_text("{not json")
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    code, lines, _ = run_cli(["run", str(s), "--results", str(tmp_path / "r"), "--label", "mine", "--quiet"])
    assert code == 2 and len(lines) == 1 and "--overwrite" in lines[0] and str(folder) in lines[0], lines
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    code, lines, _ = run_cli(["run", str(s), "--results", str(tmp_path / "r"), "--label", "mine", "--quiet",
                              "--overwrite"])
    assert code == 0, lines
    assert not (folder / "notes.txt").exists()
    assert json.loads((folder / "summary.json").read_text())["scenario"] == "tiny"
    assert not [p for p in folder.parent.iterdir() if p.name.startswith(".")]


# ================================================================== signals

LONG = tiny(name="long", horizon_days=36500, cluster={"racks": 8, "nodes_per_rack": 8, "node": {"parts": {
    "gpu": {"count": 8, "failure": {"mtbf_h": 500}, "repair": {"time": {"dist": "fixed", "value_h": 2}}}}}})
"""About a minute of event loop and a negligible build (no workload: its jobs are built up front)."""


def test_model_run_is_interruptible_promptly_every_time() -> None:
    """Issue 51, item 6: an interrupt is never lost. The command line's handler
    (:func:`twin.interrupt.handler`, here on a timer signal) lands at 30 random moments of Model.run
    of 100 years of a failure-heavy cluster (about 6 million events): every one stops the run part
    way, with little CPU spent after the signal. No gc callbacks are removed (a raise inside one, or
    inside a finalizer or a WeakKeyDictionary callback, used to be ignored by the interpreter: the
    handler only records while the event loop runs, and the loop raises at the next event)."""
    import random

    from twin import interrupt
    from twin.sim import Model

    sc = load_dict(LONG).scenario
    rng = random.Random(51)
    cpu_at_signal: list[float] = []

    def on_alarm(signum: int, frame: Any) -> None:
        cpu_at_signal.append(time.process_time())
        interrupt.handler(signum, frame)

    old = signal.signal(signal.SIGALRM, on_alarm)
    try:
        for trial in range(30):
            model = Model(sc, 0, "x")
            cpu_at_signal.clear()
            with pytest.raises(KeyboardInterrupt, match="SIGALRM"):  # armed inside: an early signal counts too
                signal.setitimer(signal.ITIMER_REAL, rng.uniform(0.001, 0.05))
                model.run()
            signal.setitimer(signal.ITIMER_REAL, 0)
            assert len(cpu_at_signal) == 1, trial
            assert time.process_time() - cpu_at_signal[0] < 0.5, trial  # CPU, not wall: a loaded machine cannot fail it
            assert model.engine.env.now < sc.horizon_h / 10, trial  # stopped part way, not at the end
            assert not interrupt.PENDING, trial  # delivered once, nothing left for the next run
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        interrupt.clear()


def test_interrupt_raised_inside_a_callback_is_not_lost() -> None:
    """The failure of CI (issue 51): a signal whose handler runs inside a weakref callback or a
    finalizer, where the interpreter ignores exceptions. Inside a checked loop the handler only
    records and the loop raises at its next step; outside one the handler's own raise is swallowed
    but the record stays, and the next check raises it. With Python's default handler the same
    interrupt is lost (shown first, so the test shows what it guards)."""
    import gc
    import weakref

    from twin import interrupt

    class Obj:
        pass

    def signal_in_callback() -> None:
        o = Obj()
        weakref.finalize(o, signal.raise_signal, signal.SIGALRM)  # the handler runs inside the callback
        del o
        gc.collect()

    ignored: list[type[BaseException] | None] = []
    old_hook = sys.unraisablehook
    sys.unraisablehook = lambda u: ignored.append(u.exc_type)  # the interpreter's "Exception ignored in"
    old = signal.signal(signal.SIGALRM, signal.default_int_handler)
    try:
        signal_in_callback()  # Python's own handler: the KeyboardInterrupt is ignored, the code goes on
        assert ignored == [KeyboardInterrupt]
        signal.signal(signal.SIGALRM, interrupt.handler)
        for inside_loop in (True, False):
            steps = 0
            with pytest.raises(KeyboardInterrupt, match="SIGALRM"):
                if inside_loop:
                    with interrupt.loop() as pending:
                        for steps in range(1, 1000):
                            if steps == 3:
                                signal_in_callback()
                            if pending:
                                interrupt.check()
                else:
                    signal_in_callback()  # the handler's raise is swallowed here ...
                    steps = 3
                    interrupt.check()  # ... and the record raises it at the next check
            assert steps == 3
            assert not interrupt.PENDING
        assert ignored == [KeyboardInterrupt, KeyboardInterrupt]  # the second: the swallowed raise outside a loop
    finally:
        sys.unraisablehook = old_hook
        signal.signal(signal.SIGALRM, old)
        interrupt.clear()


def test_a_loop_in_another_thread_leaves_the_interrupt_to_the_main_thread() -> None:
    """Signal handlers run in the main thread: a Model.run in a worker thread (a threaded backend) does not
    consume the record, so the main thread's driver raises it."""
    import threading

    from twin import interrupt

    seen: list[object] = []

    def worker() -> None:
        with interrupt.loop() as pending:
            seen.append(pending is interrupt.PENDING)

    interrupt.PENDING.append(signal.SIGINT)
    try:
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        assert seen == [False] and interrupt.PENDING == [signal.SIGINT]
        with pytest.raises(KeyboardInterrupt, match="SIGINT"):
            interrupt.check()
        assert not interrupt.PENDING
    finally:
        interrupt.clear()


def test_interrupt_while_writing_leaves_no_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C while the results are written: the temporary folder is removed, nothing under the
    final name, exit 130 with how to resume."""
    import twin.experiment.single as single

    real = single.write_results

    def interrupted(tmp: Path, loaded: Any, res: Any) -> None:
        real(tmp, loaded, res)
        assert (tmp / "summary.json").is_file()
        raise KeyboardInterrupt

    monkeypatch.setattr(single, "write_results", interrupted)
    s = write_yaml(tmp_path / "s.yaml", tiny())
    code, lines, _ = run_cli(["run", str(s), "--results", str(tmp_path / "r"), "--quiet"])
    assert code == 130
    assert any("run the same command again" in ln for ln in lines), lines
    parent = tmp_path / "r" / "tiny"
    assert not parent.exists() or list(parent.iterdir()) == []


def _cpu_s(pid: int) -> float:
    """CPU seconds (user + system) a process has used so far (Linux /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="POSIX signals, /proc")
def test_sigint_to_twin_run_exits_130_promptly(tmp_path: Path) -> None:
    """SIGINT to a `twin run` in its event loop (LONG: about a minute of work): exit 130 after less
    than a second of further CPU (measured from the child's own usage, so a loaded machine cannot
    fail it), a resume hint, no results folder and no temporary folder left."""
    res = tmp_path / "r"
    scen = write_yaml(tmp_path / "long.yaml", LONG)
    cmd = [sys.executable, "-m", "twin.cli", "run", str(scen), "--results", str(res), "--quiet"]
    env = {**os.environ, "TWIN_LOG_DIR": str(tmp_path / "logs")}
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # imports, load and build take about 1.5 s of CPU; at 3 s it has been in the event loop a while
        t0 = time.monotonic()
        while _cpu_s(proc.pid) < 3.0 and proc.poll() is None and time.monotonic() - t0 < 60:
            time.sleep(0.1)
        assert proc.poll() is None, proc.communicate()
        cpu_before = _cpu_s(proc.pid)
        proc.send_signal(signal.SIGINT)
        # the child's own CPU time from the signal to its exit (wait4's rusage): "promptly" measured in
        # work done, not in wall time a loaded machine stretches
        _, status, usage = os.wait4(proc.pid, 0)
        cpu_after = usage.ru_utime + usage.ru_stime - cpu_before
        proc.returncode = os.waitstatus_to_exitcode(status)
        err = proc.stderr.read()  # type: ignore[union-attr]
    finally:
        if proc.returncode is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert cpu_after < 1.0, cpu_after  # the event loop stops at once (the run has ~a minute of work left)
    assert "interrupted" in err and "run the same command again" in err, err
    assert "Traceback" not in err
    leftovers = list(res.rglob("*")) if res.exists() else []
    assert not [p for p in leftovers if p.is_file()], leftovers


# ================================================================== what a results folder records

def test_results_folders_record_versions_hash_and_seed(tmp_path: Path) -> None:
    from twin.experiment.store import versions

    expected = {"twin", "python", "numpy", "scipy", "simpy", "pandas", "pydantic", "pyarrow"}
    assert expected <= set(versions()) and versions()["twin"] == twin.__version__
    s = write_yaml(tmp_path / "s.yaml", tiny())
    ld = load_scenario(s)
    code, lines, _ = run_cli(["run", str(s), "--results", str(tmp_path / "r"), "--quiet"])
    assert code == 0, lines
    (summary,) = (tmp_path / "r" / "tiny").glob("*/summary.json")
    meta = json.loads(summary.read_text())
    assert meta["scenario_hash"] == ld.hash and meta["seed"] == 3
    assert expected <= set(meta["versions"]) and meta["versions"]["twin"] == twin.__version__
    assert meta["versions"]["python"] == ".".join(map(str, sys.version_info[:3]))
    assert yaml.safe_load((summary.parent / "scenario.resolved.yaml").read_text()) == ld.resolved

    code, lines, _ = run_cli(["montecarlo", str(s), "--reps", "2", "--results", str(tmp_path / "mc"), "--quiet",
                              "--no-report"])
    assert code == 0, lines
    (exp,) = (tmp_path / "mc" / "tiny").glob("*/experiment.json")
    for f in ("experiment.json", "summary.json"):
        m = json.loads((exp.parent / f).read_text())
        assert m["scenario_hash"] == ld.hash and m["seed"] == 3, f
        assert expected <= set(m["versions"]) and m["versions"]["twin"] == twin.__version__, f
    import pandas as pd

    reps = pd.read_parquet(exp.parent / "replications.parquet")
    assert set(reps["twin_version"]) == {twin.__version__} and set(reps["scenario_hash"]) == {ld.hash}
