"""What new users stumbled on (issue 39, items 7 to 12): a horizon that hides a scheduled mechanism,
validation that reports in one round, the guide's scenario excerpt, units and labels, the HTML report's
order and its temperature differences, and a CSV export of result tables."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from twin.scenario import load_scenario
from twin.scenario.advice import advise
from twin.scenario.loader import load_dict

ROOT = Path(__file__).resolve().parent.parent


# --- item 9: the guide's excerpt of baseline.yaml is the bundled file's ------------------------------------


def _guide_excerpt() -> dict[str, Any]:
    text = (ROOT / "docs" / "guide" / "scenarios.md").read_text()
    block = re.search(r"```yaml\n(name: baseline.*?)```", text, re.S)
    assert block is not None, "docs/guide/scenarios.md lost its excerpt of scenarios/baseline.yaml"
    doc = yaml.safe_load(block.group(1))
    assert isinstance(doc, dict)
    return doc


def _leaves(doc: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    if isinstance(doc, dict):
        return [leaf for k, v in doc.items() for leaf in _leaves(v, path + (str(k),))]
    return [(path, doc)]


def test_guide_excerpt_matches_baseline() -> None:
    """Every value the guide's excerpt shows is the bundled file's (the excerpt once showed 16 racks of
    8 nodes where the file has 32 of 4), and the excerpt, loaded as a scenario, raises no rack advisory."""
    excerpt = _guide_excerpt()
    base = yaml.safe_load((ROOT / "scenarios" / "baseline.yaml").read_text())
    for path, value in _leaves(excerpt):
        if path == ("workload",):  # "..." stands for the section, shown on its own page
            continue
        here: Any = base
        for key in path:
            assert isinstance(here, dict) and key in here, f"{'.'.join(path)} is not in scenarios/baseline.yaml"
            here = here[key]
        assert here == value, f"{'.'.join(path)}: the guide shows {value!r}, scenarios/baseline.yaml has {here!r}"
    excerpt.pop("workload")
    sc = load_dict(excerpt, "docs/guide/scenarios.md").scenario
    assert [a for a in advise(sc) if a.field.startswith("cluster.")] == []
    assert sc.cluster.n_nodes == load_scenario(ROOT / "scenarios" / "baseline.yaml").scenario.cluster.n_nodes
