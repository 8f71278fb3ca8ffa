"""Load a scenario: YAML (safe_load only) → ``extends`` → ``--set`` overrides → schema.

Every problem with the input raises :class:`twin.errors.InputError` naming the file, the field
path and what is allowed. Nothing here catches a broad exception.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from twin.errors import InputError
from twin.scenario.distributions import Empirical, load_empirical
from twin.scenario.schema import Scenario

MAX_FILE_BYTES = 1_000_000
"""Largest scenario file accepted (bytes); scenarios are small, data goes in CSV files."""
MAX_EXPANDED_NODES = 200_000
"""Largest YAML document after alias expansion (nodes): guards against alias bombs."""
MAX_EXTENDS_DEPTH = 16


@dataclass(frozen=True)
class Loaded:
    """A validated scenario with where it came from and its content hash."""

    scenario: Scenario
    source: Path
    resolved: dict[str, Any]
    hash: str
    base_dir: Path = Path(".")
    """Folder that relative ``file:`` paths in ``resolved`` are relative to."""


def _expanded_size(node: yaml.Node, memo: dict[int, int], limit: int) -> int:
    key = id(node)
    if key in memo:
        return memo[key]
    memo[key] = limit + 1  # a node that contains itself (recursive alias) counts as too large
    size = 1
    if isinstance(node, yaml.SequenceNode):
        for child in node.value:
            size += _expanded_size(child, memo, limit)
            if size > limit:
                break
    elif isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            size += _expanded_size(k, memo, limit) + _expanded_size(v, memo, limit)
            if size > limit:
                break
    memo[key] = size
    return size


def read_yaml(path: Path) -> dict[str, Any]:
    """Read one YAML mapping safely: size limit, alias-bomb guard, ``safe_load`` semantics."""
    src = str(path)
    if not path.is_file():
        raise InputError(src, "", "file not found")
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise InputError(src, "", f"file is {size} bytes; scenario files are limited to {MAX_FILE_BYTES} bytes")
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(src, "", f"not UTF-8 text (byte {exc.start})") from None
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            raise InputError(src, "", "empty file; a scenario is a YAML mapping")
        if _expanded_size(node, {}, MAX_EXPANDED_NODES) > MAX_EXPANDED_NODES:
            raise InputError(
                src, "", f"document expands to more than {MAX_EXPANDED_NODES} nodes (YAML alias bomb?)"
            )
        data = loader.construct_document(node)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(src, where, f"invalid YAML: {problem}") from None
    finally:
        loader.dispose()
    if not isinstance(data, dict):
        raise InputError(src, "", f"a scenario is a YAML mapping, got {type(data).__name__}")
    for k in data:
        if not isinstance(k, str):
            raise InputError(src, str(k), "keys must be strings")
    return data


def deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """Mappings merge key by key; anything else (lists, scalars) in ``over`` replaces, and so
    does a distribution mapping (one with ``dist`` or ``mtbf_h``)."""
    out = copy.deepcopy(base)
    for k, v in over.items():
        if isinstance(v, dict) and ("dist" in v or "mtbf_h" in v):
            out[k] = copy.deepcopy(v)  # a distribution is replaced whole, never merged field by field
        elif isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = deep_merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def _rebase_files(doc: Any, from_dir: Path, to_dir: Path) -> Any:
    """Rewrite every ``file:`` value so it is relative to the top scenario's folder."""
    if isinstance(doc, dict):
        out = {}
        for k, v in doc.items():
            if k == "file" and isinstance(v, str) and not os.path.isabs(v):
                out[k] = os.path.relpath((from_dir / v).resolve(), to_dir.resolve())
            else:
                out[k] = _rebase_files(v, from_dir, to_dir)
        return out
    if isinstance(doc, list):
        return [_rebase_files(v, from_dir, to_dir) for v in doc]
    return doc


def _load_chain(path: Path, top_dir: Path, seen: tuple[Path, ...]) -> dict[str, Any]:
    real = path.resolve()
    if real in seen:
        chain = " -> ".join(p.name for p in seen + (real,))
        raise InputError(str(seen[0]), "extends", f"cyclic extends: {chain}")
    if len(seen) >= MAX_EXTENDS_DEPTH:
        raise InputError(str(path), "extends", f"extends chain deeper than {MAX_EXTENDS_DEPTH}")
    doc = read_yaml(path)
    doc = _rebase_files(doc, path.parent, top_dir)
    parent = doc.pop("extends", None)
    if parent is None:
        return doc
    if not isinstance(parent, str) or not parent:
        raise InputError(str(path), "extends", "must be the path of a base scenario file (string)")
    parent_path = (path.parent / parent)
    if not parent_path.is_file():
        raise InputError(str(path), "extends", f"base scenario not found: {parent}")
    base = _load_chain(parent_path, top_dir, seen + (real,))
    return deep_merge(base, doc)


def parse_set(expr: str) -> tuple[list[str], Any]:
    """Parse one ``--set path.to.key=value`` (value is YAML: numbers, lists, mappings)."""
    if "=" not in expr:
        raise InputError("--set", expr, "expected path.to.key=value")
    path, _, value = expr.partition("=")
    keys = path.strip().split(".")
    if not path.strip() or any(not k for k in keys):
        raise InputError("--set", expr, "empty key in path")
    try:
        parsed = yaml.safe_load(value) if value.strip() else ""
    except yaml.YAMLError:
        raise InputError("--set", expr, "value is not valid YAML") from None
    return keys, parsed


def apply_set(doc: dict[str, Any], expr: str) -> dict[str, Any]:
    """Apply one ``--set`` to a raw scenario mapping. Intermediate keys must exist or be new mappings;
    a path through a scalar is an error. Unknown keys are caught by the schema."""
    keys, value = parse_set(expr)
    out = copy.deepcopy(doc)
    cur: Any = out
    for i, k in enumerate(keys[:-1]):
        if isinstance(cur, list):
            if not k.isdigit() or int(k) >= len(cur):
                raise InputError("--set", expr, f"{'.'.join(keys[: i + 1])}: no list item {k}")
            cur = cur[int(k)]
            continue
        if not isinstance(cur, dict):
            raise InputError("--set", expr, f"{'.'.join(keys[:i])} is not a mapping")
        if k not in cur or cur[k] is None:
            cur[k] = {}
        cur = cur[k]
    last = keys[-1]
    if isinstance(cur, list):
        if not last.isdigit() or int(last) >= len(cur):
            raise InputError("--set", expr, f"no list item {last}")
        cur[int(last)] = value
    elif isinstance(cur, dict):
        cur[last] = value
    else:
        raise InputError("--set", expr, f"{'.'.join(keys[:-1])} is not a mapping")
    return out


_DIST_TAGS = {"exponential", "weibull", "lognormal", "fixed", "empirical"}
"""Discriminator tags pydantic inserts in error locations of distribution unions."""


def format_validation_error(exc: ValidationError) -> tuple[str, str]:
    """First error of a pydantic ValidationError as (field path, message)."""
    errs = exc.errors(include_url=False)
    err = errs[0]
    loc = [str(x) for x in err["loc"] if str(x) not in _DIST_TAGS]
    # drop discriminator tags pydantic inserts for unions (e.g. 'exponential')
    msg = str(err["msg"])
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    if msg.startswith("@"):
        field, _, rest = msg[1:].partition(": ")
        if field.startswith(("maintenance.", "cluster.", "workload.")):
            loc = field.split(".")
        else:
            loc = loc + field.split(".")
        msg = rest
    elif err["type"] in ("union_tag_invalid",):
        ctx = err.get("ctx", {})
        msg = f"unknown distribution {ctx.get('tag')!r}; allowed: {ctx.get('expected_tags')}"
    elif err["type"] == "extra_forbidden":
        msg = "unknown key (not allowed here; check the spelling)"
    elif err["type"] == "missing":
        msg = "required field is missing"
    else:
        inp = err.get("input")
        if not isinstance(inp, (dict, list)):
            shown = repr(inp)
            if len(shown) > 60:
                shown = shown[:57] + "..."
            msg = f"{msg}, got {shown}"
    if len(errs) > 1:
        msg += f" (+{len(errs) - 1} more errors)"
    return ".".join(loc), msg


def validate_doc(doc: dict[str, Any], source: str) -> Scenario:
    try:
        return Scenario.model_validate(doc)
    except ValidationError as exc:
        field, msg = format_validation_error(exc)
        raise InputError(source, field, msg) from None
    except RecursionError:
        raise InputError(source, "", "document is nested too deeply") from None


def scenario_hash(resolved: dict[str, Any]) -> str:
    """SHA-256 (first 12 hex digits) of the canonical JSON of the resolved scenario."""
    blob = json.dumps(resolved, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def _bind_files(sc: Scenario, top_dir: Path, source: str) -> None:
    """Load the data files the scenario refers to (empirical distributions)."""

    def visit(obj: Any) -> None:
        if isinstance(obj, Empirical):
            obj.bind(load_empirical(top_dir / obj.file))
            return
        if hasattr(obj, "__pydantic_fields__"):
            for name in type(obj).model_fields:
                visit(getattr(obj, name))
        elif isinstance(obj, dict):
            for v in obj.values():
                visit(v)
        elif isinstance(obj, list):
            for v in obj:
                visit(v)

    visit(sc)
    wl = sc.workload
    if wl is not None and wl.trace is not None:
        from twin.model.workload import read_trace

        wl.trace.bind(read_trace(top_dir / wl.trace.file, sc.cluster.node.gpus,
                                 sc.cluster.n_nodes - wl.scheduler.hot_spares))


def load_scenario(path: str | os.PathLike[str], overrides: list[str] | None = None) -> Loaded:
    """Load, merge, override and validate a scenario file."""
    p = Path(path)
    if not p.is_file():
        raise InputError(str(p), "", "scenario file not found")
    doc = _load_chain(p, p.parent, ())
    for expr in overrides or []:
        try:
            doc = apply_set(doc, expr)
        except InputError as exc:  # name the scenario file as well as the --set expression
            raise InputError(str(p), f"--set {expr}", exc.message) from None
    sc = validate_doc(doc, str(p) + (" (with --set)" if overrides else ""))
    _bind_files(sc, p.parent, str(p))
    resolved = sc.model_dump(mode="json")
    return Loaded(scenario=sc, source=p, resolved=resolved, hash=scenario_hash(resolved), base_dir=p.parent)


def load_dict(doc: dict[str, Any], source: str = "<scenario>", base_dir: Path | None = None) -> Loaded:
    """Validate an in-memory scenario mapping (tests, notebooks, sweeps)."""
    sc = validate_doc(copy.deepcopy(doc), source)
    _bind_files(sc, base_dir or Path("."), source)
    resolved = sc.model_dump(mode="json")
    return Loaded(scenario=sc, source=Path(source), resolved=resolved, hash=scenario_hash(resolved),
                  base_dir=base_dir or Path("."))
