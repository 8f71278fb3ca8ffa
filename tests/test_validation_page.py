"""docs/validation.md records a `twin validate` run: its table must name every registered case, so a
case added to the registry without re-recording the page fails here."""

from __future__ import annotations

from pathlib import Path

from twin.validation.cases import CASES

PAGE = Path(__file__).resolve().parents[1] / "docs" / "validation.md"


def _table_cases() -> set[str]:
    rows = [ln for ln in PAGE.read_text(encoding="utf-8").splitlines() if ln.startswith("| ")]
    return {ln.split("|")[1].strip() for ln in rows} - {"case"}


def test_validation_page_table_has_every_registered_case() -> None:
    cases = _table_cases()
    missing = [c for c in CASES if c not in cases]
    unknown = sorted(cases - set(CASES))
    assert not missing, f"docs/validation.md: cases missing from the recorded table: {missing}"
    assert not unknown, f"docs/validation.md: table rows for unknown cases: {unknown}"

