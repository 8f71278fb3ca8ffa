"""Generate the scenario reference (docs/scenario-reference.md) from the schema itself, the output
tables reference (docs/outputs-reference.md) and the metrics reference (docs/metrics-reference.md,
from the metric catalogue :mod:`twin.report.metrics`).

Every field with its type, default and description (where defaults are sourced or marked as
assumptions). A test regenerates the file and fails if the committed copy differs.
Run ``python -m twin.docs`` to rewrite it.
"""

from __future__ import annotations

import sys
import types
import typing
from pathlib import Path
from typing import Any, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from twin.scenario.schema import Scenario

OUT = Path(__file__).resolve().parent.parent / "docs" / "scenario-reference.md"
OUT_OUTPUTS = Path(__file__).resolve().parent.parent / "docs" / "outputs-reference.md"
OUT_METRICS = Path(__file__).resolve().parent.parent / "docs" / "metrics-reference.md"
OUTPUT_SCENARIOS = ("air.yaml", "power-2n.yaml")
"""Scenarios whose short runs list every table a `twin run` can write (all models present)."""


def _models_in(tp: Any) -> list[type[BaseModel]]:
    out: list[type[BaseModel]] = []
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return [tp]
    for a in get_args(tp):
        out.extend(_models_in(a))
    return out


def _type_name(tp: Any) -> str:
    origin = get_origin(tp)
    if origin is typing.Annotated:
        return _type_name(get_args(tp)[0])
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_type_name(a) for a in get_args(tp))
    if origin is typing.Literal:
        return " | ".join(repr(a) for a in get_args(tp))
    if origin in (list, dict):
        return f"{origin.__name__}[{', '.join(_type_name(a) for a in get_args(tp))}]"
    if tp is type(None):
        return "null"
    if isinstance(tp, type):
        return tp.__name__
    return str(tp).replace("typing.", "")


def _default(f: FieldInfo) -> str:
    if f.default is not PydanticUndefined:
        d = f.default
        if isinstance(d, BaseModel):
            return "(see below)"
        return "`" + repr(d) + "`" if d is not None else "`null`"
    if f.default_factory is not None:
        try:
            d = f.default_factory()  # type: ignore[call-arg]
        except TypeError:
            return "(computed)"
        if isinstance(d, BaseModel):
            return "`" + repr(d.model_dump(mode="json")) + "`"
        return "`" + repr(d) + "`"
    return "**required**"


def _constraints(f: FieldInfo) -> str:
    parts = []
    for m in f.metadata:
        for key in ("gt", "ge", "lt", "le", "min_length", "max_length"):
            v = getattr(m, key, None)
            if v is not None:
                sym = {"gt": ">", "ge": "≥", "lt": "<", "le": "≤", "min_length": "len ≥", "max_length": "len ≤"}[key]
                parts.append(f"{sym} {v:.0e}" if isinstance(v, float) and v >= 1e6 else f"{sym} {v}")  # ≤ 1e+15
    return ", ".join(parts)


def render() -> str:
    lines = [
        "# Scenario reference",
        "",
        "Generated from the schema by `python -m twin.docs`; do not edit by hand (a test checks it is",
        "up to date). Units are in field names: `_h` hours, `_days` days, `_s` seconds, `_min` minutes,",
        "`_w` watts, `_kw` kilowatts, `_c` degrees Celsius, `_gbps` gigabits per second, `_gb` gigabytes.",
        "Defaults marked *assumption* are not from a published source; others cite theirs.",
        "",
    ]
    seen: set[type[BaseModel]] = set()
    queue: list[tuple[str, type[BaseModel]]] = [("(top level)", Scenario)]
    while queue:
        path, model = queue.pop(0)
        if model in seen:
            continue
        seen.add(model)
        doc = (model.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
        lines += [f"## `{model.__name__}` — {path}", ""]
        if doc:
            lines += [doc, ""]
        lines += ["| field | type | default | constraints | description |", "|---|---|---|---|---|"]
        for name, f in model.model_fields.items():
            desc = (f.description or "").replace("|", "\\|").replace("\n", " ")
            tname = _type_name(f.annotation).replace("|", "\\|")
            dflt = _default(f).replace("|", "\\|")
            lines.append(f"| `{name}` | {tname} | {dflt} | {_constraints(f)} | {desc} |")
            for sub in _models_in(f.annotation):
                if sub not in seen:
                    queue.append((f"{path.replace('(top level)', '').strip('.')}.{name}".strip("."), sub))
        lines.append("")
    return "\n".join(lines)


def render_outputs() -> str:
    """Every table of a `twin run` results folder with its columns and dtypes, from short runs of
    bundled scenarios that have every model section."""
    from twin.scenario import load_scenario
    from twin.sim import run_replication

    root = Path(__file__).resolve().parent.parent / "scenarios"
    tables: dict[str, dict[str, str]] = {}
    for name in OUTPUT_SCENARIOS:
        res = run_replication(load_scenario(root / name, ["horizon_days=3"]).scenario, 0)
        for t, df in res.tables.items():
            cols = tables.setdefault(t, {})
            for c, dt in df.dtypes.items():
                cols.setdefault(str(c), str(dt))
    lines = [
        "# Output tables reference",
        "",
        "Generated by `python -m twin.docs` from short runs of "
        + ", ".join(f"`scenarios/{n}`" for n in OUTPUT_SCENARIOS)
        + "; a test checks it is up to date. Each table is `<name>.parquet` in a `twin run` results",
        "folder; [Outputs of `twin run`](guide/outputs.md) and the model pages of the user guide say what",
        "the columns mean.",
        "",
    ]
    for t in sorted(tables):
        lines += [f"## `{t}.parquet`", "", "| column | dtype |", "|---|---|"]
        lines += [f"| `{c}` | {dt} |" for c, dt in tables[t].items()]
        lines.append("")
    return "\n".join(lines)


def render_metrics() -> str:
    """The metric catalogue (twin.report.metrics) as Markdown."""
    from twin.report.metrics import catalogue_markdown

    return catalogue_markdown()


def main() -> int:
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(render())
    OUT_OUTPUTS.write_text(render_outputs())
    OUT_METRICS.write_text(render_metrics())
    print(f"wrote {OUT}, {OUT_OUTPUTS} and {OUT_METRICS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
