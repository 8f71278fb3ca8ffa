"""The performance work changes no result: every bundled scenario's tables and metrics match the
fingerprints recorded before optimising (tests/golden_tables.py; issue 10)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import twin  # noqa: E402
from golden_tables import CASES, case_id, fingerprint_case, load  # noqa: E402

RECORDING = load()
RECORDED = RECORDING["cases"]


def test_every_case_has_a_recording() -> None:
    assert sorted(RECORDED) == sorted(case_id(*c) for c in CASES)


def test_recorded_with_this_twin_version() -> None:
    """Results are keyed on the twin version (stored results of another version are recomputed):
    the version is bumped with every recording of changed results, and re-recorded after a bump."""
    assert RECORDING["twin_version"] == twin.__version__, (
        f"fingerprints recorded with twin {RECORDING['twin_version']}, this is {twin.__version__}: "
        "python tests/golden_tables.py --record")


@pytest.mark.parametrize("case", CASES, ids=[case_id(*c) for c in CASES])
def test_tables_and_metrics_identical_to_golden(case: tuple[str, list[str], int]) -> None:
    want = RECORDED[case_id(*case)]
    got = fingerprint_case(*case)
    diffs: list[str] = []
    if got["events_processed"] != want["events_processed"]:
        # not a result, but a changed event count with identical tables is worth seeing
        print(f"events processed {want['events_processed']} -> {got['events_processed']}")
    for k in sorted(set(want["metrics"]) | set(got["metrics"])):
        a, b = want["metrics"].get(k), got["metrics"].get(k)
        if a != b:
            diffs.append(f"metric {k}: {a} -> {b}")
    for t in sorted(set(want["tables"]) | set(got["tables"])):
        a, b = want["tables"].get(t), got["tables"].get(t)
        if a is None or b is None:
            diffs.append(f"table {t}: {'missing' if b is None else 'new'}")
            continue
        if a["rows"] != b["rows"]:
            diffs.append(f"table {t}: rows {a['rows']} -> {b['rows']}")
        for c in sorted(set(a["columns"]) | set(b["columns"])):
            ca, cb = a["columns"].get(c), b["columns"].get(c)
            if ca != cb:
                diffs.append(f"table {t} column {c}: {ca} -> {cb}")
    assert not diffs, "\n".join(diffs[:40])


def test_fingerprints_notice_a_changed_result() -> None:
    """The comparison can fail: another seed of the same scenario does not match its recording."""
    name, overrides, rep = CASES[7]
    want = RECORDED[case_id(name, overrides, rep)]
    got = fingerprint_case(name, [*overrides, "seed=12345"], rep)
    assert got["tables"]["events"] != want["tables"]["events"]
    assert got["metrics"] != want["metrics"]


def test_record_refuses_changed_results_under_the_same_version(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    import golden_tables as gt

    monkeypatch.setattr(gt, "GOLDEN", tmp_path / "fingerprints.json")
    monkeypatch.setattr(gt, "CHANGELOG", tmp_path / "CHANGELOG.md")
    gt.CHANGELOG.write_text(f"# Changelog\n\n## {twin.__version__} — today\n")
    monkeypatch.setattr(gt, "CASES", [("x", [], 0)])
    monkeypatch.setattr(gt, "fingerprint_case", lambda *c: {"value": 1})
    gt.record()
    gt.record()  # the same results again: fine
    monkeypatch.setattr(gt, "fingerprint_case", lambda *c: {"value": 2})
    with pytest.raises(SystemExit, match="bump"):
        gt.record()
    assert json.loads(gt.GOLDEN.read_text())["cases"] == {"x rep=0": {"value": 1}}
    monkeypatch.setattr(gt, "fingerprint_case", lambda *c: {"value": 1 if c[0] == "x" else 5})
    monkeypatch.setattr(gt, "CASES", [("x", [], 0), ("y", [], 0)])
    gt.record()  # a new case is no change of results: recorded under the same version
    assert json.loads(gt.GOLDEN.read_text())["cases"] == {"x rep=0": {"value": 1}, "y rep=0": {"value": 5}}
    monkeypatch.setattr(gt, "CASES", [("x", [], 0)])
    monkeypatch.setattr(gt, "fingerprint_case", lambda *c: {"value": 2})
    monkeypatch.setattr(twin, "__version__", "99.0.0")
    with pytest.raises(SystemExit, match="no section '## 99.0.0"):  # a new version says what changed
        gt.record()
    gt.CHANGELOG.write_text(gt.CHANGELOG.read_text() + "\n## 99.0.0 — later\n")
    gt.record()
    assert json.loads(gt.GOLDEN.read_text()) == {"twin_version": "99.0.0", "cases": {"x rep=0": {"value": 2}}}


def test_this_version_has_a_changelog_section() -> None:
    from golden_tables import has_changelog_section

    assert has_changelog_section(twin.__version__)
