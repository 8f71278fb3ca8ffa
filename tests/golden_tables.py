"""Golden tables: fingerprints of every table and metric of the bundled scenarios (issue 10).

Performance work must change no result. ``python tests/golden_tables.py --record`` writes
``tests/golden/fingerprints.json`` from the current code (record it *before* optimising);
``tests/test_golden.py`` re-runs the same scenarios and seeds and compares, column by column. A
deliberate change of results is recorded under a new ``twin.__version__`` with a section in
``CHANGELOG.md`` (``record`` refuses otherwise), so that results stored by the old version are not
reused and users can read what changed.

A fingerprint is exact: SHA-256 over a column's canonical bytes (float64 bit patterns, int64,
or the UTF-8 strings), so a float that moved in its last bit counts as a change. Each float
column also keeps its sum, only to say how far a changed column moved.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden" / "fingerprints.json"
CHANGELOG = ROOT / "CHANGELOG.md"

CASES: list[tuple[str, list[str], int]] = [
    # (scenario, overrides, replication): every bundled model path, kept to ~10 s in all
    ("pretrain-16k", [], 0),
    ("mixed-1k", [], 0),
    ("baseline", ["horizon_days=120"], 1),
    ("lean-crew", ["horizon_days=120"], 0),
    ("air", ["horizon_days=120"], 0),
    ("liquid", ["horizon_days=120"], 0),
    ("hybrid", ["horizon_days=120"], 0),
    ("cdu-failure", [], 0),
    ("crah-failure", [], 0),
    ("fabric-stress", ["horizon_days=120"], 0),
    ("forecast-405b", [], 0),
    ("power-2n", ["horizon_days=120"], 0),
    ("power-dgx-split", ["horizon_days=120"], 0),
    ("power-n", ["horizon_days=120"], 0),
    ("power-n1", ["horizon_days=120"], 0),
    ("evaporative", ["horizon_days=120"], 0),
    ("nvl72", ["horizon_days=60"], 0),
    ("multimodal", [], 0),
    ("evaporative-humid", ["horizon_days=60"], 0),  # weather file, humidity envelope, trim chiller (issue 42)
    ("moe-deepseek-v3", [], 0),  # mixture-of-experts, context parallelism, FP8 (issue 50)
    # rack parts (node_down and k-of-n), oversubscribed leaves and trunk flaps (no bundled scenario has them)
    ("fabric-stress", ["horizon_days=120",
                       "cluster.rack_parts={tray: {count: 2, failure: {mtbf_h: 20000}}, shelf: {count: 3, required: 2, "
                       "effect: redundant, failure: {mtbf_h: 500}}}",
                       "network.uplinks_per_leaf=16", "network.trunk_flaps_per_link_per_year=0.5",
                       "costs.parts.tray=3000", "costs.parts.shelf=500"], 0),
]


def case_id(name: str, overrides: list[str], rep: int) -> str:
    return " ".join([name, *overrides, f"rep={rep}"])


def _column_bytes(s: pd.Series) -> tuple[bytes, float | None]:
    if isinstance(s.dtype, pd.CategoricalDtype) or s.dtype == object or pd.api.types.is_string_dtype(s.dtype):
        vals = ["\x00NA" if v is None or (isinstance(v, float) and np.isnan(v)) else str(v) for v in s.astype(object)]
        return "\x1f".join(vals).encode(), None
    if pd.api.types.is_bool_dtype(s.dtype):
        return s.astype(object).map(repr).str.cat(sep=",").encode(), None
    if pd.api.types.is_integer_dtype(s.dtype):
        arr = s.astype("Int64").fillna(-(2**62)).to_numpy(dtype=np.int64)
        return arr.tobytes(), None
    arr = s.to_numpy(dtype=np.float64, na_value=np.nan)
    arr = np.where(np.isnan(arr), np.nan, arr + 0.0)  # one NaN pattern, no negative zero
    finite = arr[np.isfinite(arr)]
    return arr.tobytes(), float(finite.sum()) if len(finite) else 0.0


def fingerprint_table(df: pd.DataFrame) -> dict[str, Any]:
    cols: dict[str, Any] = {}
    for c in df.columns:
        b, total = _column_bytes(df[c])
        cols[str(c)] = {"sha256": hashlib.sha256(b).hexdigest()[:32], **({"sum": total} if total is not None else {})}
    return {"rows": int(len(df)), "columns": cols}


def fingerprint_case(name: str, overrides: list[str], rep: int) -> dict[str, Any]:
    from twin.scenario import load_scenario
    from twin.sim import Model

    sc = load_scenario(ROOT / "scenarios" / f"{name}.yaml", overrides).scenario
    model = Model(sc, rep)
    model.run()
    res = model.result()
    metrics = {k: (repr(float(v)) if isinstance(v, (int, float, np.floating, np.integer)) else repr(v))
               for k, v in sorted(res.metrics.items())}
    return {"events_processed": int(res.events_processed), "metrics": metrics,
            "tables": {k: fingerprint_table(v) for k, v in sorted(res.tables.items())}}


def load() -> dict[str, Any]:
    """The recording: {"twin_version": the version it was recorded with, "cases": {case id: fingerprint}}."""
    return json.loads(GOLDEN.read_text())


def has_changelog_section(version: str) -> bool:
    """CHANGELOG.md has a ``## <version>`` heading (with or without text after it)."""
    return re.search(rf"^## {re.escape(version)}(\s|$)", CHANGELOG.read_text(), re.MULTILINE) is not None


def record() -> None:
    """Record the fingerprints of the current code. Changed results need a new ``twin.__version__``
    (stored results of the old version must not be reused): recording them under the version they
    were recorded with is refused."""
    import twin

    if not has_changelog_section(twin.__version__):
        sys.exit(f"{CHANGELOG.name} has no section '## {twin.__version__} ...': say what changed in this version")
    new = {case_id(*c): fingerprint_case(*c) for c in CASES}
    old = load() if GOLDEN.is_file() else None
    common = set(new) & set(old.get("cases", {})) if old is not None else set()
    changed = sorted(k for k in common if old["cases"][k] != new[k])  # type: ignore[index]  # new cases: not a change
    if old is not None and old.get("twin_version") == twin.__version__ and changed:
        sys.exit(f"results changed ({'; '.join(changed)}) but twin.__version__ is still {twin.__version__}: "
                 f"bump it in twin/__init__.py, say what changed in {CHANGELOG.name}, then record again")
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN.write_text(json.dumps({"twin_version": twin.__version__, "cases": new}, indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN}: {len(new)} cases, twin {twin.__version__}")


if __name__ == "__main__":
    if sys.argv[1:] != ["--record"]:
        sys.exit("usage: python tests/golden_tables.py --record")
    record()
