"""Load a scenario: YAML (safe_load only) → ``extends`` → ``--set`` overrides → schema.

Every problem with the input raises :class:`twin.errors.InputError` naming the file, the field
path and what is allowed. Nothing here catches a broad exception.
"""

from __future__ import annotations

import codecs
import csv
import copy
import hashlib
import json
import os
import re
import time
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from dataclasses import field as dc_field
from pathlib import Path
from typing import Any, Iterator, Sequence

import yaml
from pydantic import ValidationError

from twin.console import detail, verbosity
from twin.errors import InputError, InputErrors
from twin.scenario.distributions import Empirical, load_empirical
from twin.scenario.field_errors import _bad_number, format_error, format_validation_errors
from twin.scenario.files import file_kind, file_problem, require_file
from twin.scenario.rounds import later_errors, split_errors, with_more
from twin.scenario.schema import Scenario
from twin.scenario.slips import unit_slips

MAX_FILE_BYTES = 1_000_000
"""Largest scenario file accepted (bytes); scenarios are small, data goes in CSV files."""
MAX_EXPANDED_NODES = 200_000
"""Largest YAML document after alias expansion (nodes): guards against alias bombs."""
MAX_EXTENDS_DEPTH = 16
MAX_DEPTH = 50
"""Deepest nesting of mappings and lists accepted (a scenario needs about 8 levels)."""
MAX_DATA_FILE_BYTES = 200_000_000
"""Largest data file (trace, empirical, ambient CSV) accepted, bytes."""
MAX_DATA_LINE_CHARS = csv.field_size_limit()
"""Longest row of a data file, characters: the csv module's field limit (131,072 by default)."""


@dataclass(frozen=True)
class Loaded:
    """A validated scenario with where it came from and its content hash."""

    scenario: Scenario
    source: Path
    resolved: dict[str, Any]
    hash: str
    base_dir: Path = Path(".")
    """Folder that relative ``file:`` paths in ``resolved`` are relative to."""
    data_files: dict[str, str] = dc_field(default_factory=dict)
    """SHA-256 of each data file the scenario reads, by the field path of its ``file:`` (part of
    ``hash``: editing a data file makes another scenario, so stored results are not reused)."""


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


def _checked_scalar(construct: Any) -> Any:
    """Wrap a scalar constructor so a value it cannot convert (``!!int abc``, a 5,000-digit int, the
    date 2020-13-45) is a YAML error with its position, not a ValueError from deep inside PyYAML."""

    def wrapped(loader: "_SafeLoader", node: yaml.Node) -> Any:
        kind = str(node.tag).rsplit(":", 1)[-1]
        shown = repr(node.value) if len(str(node.value)) <= 40 else repr(str(node.value)[:37] + "...")
        try:
            if kind == "timestamp" and not loader.timestamp_regexp.match(loader.construct_scalar(node)):
                raise ValueError("not a date or time")  # explicit !!timestamp on any text
            return construct(loader, node)
        except (ValueError, OverflowError, IndexError, KeyError) as exc:  # '' → IndexError, !!bool x → KeyError
            why = str(exc).split(";")[0] if isinstance(exc, (ValueError, OverflowError)) else f"not a valid {kind}"
            raise yaml.constructor.ConstructorError(None, None, f"cannot read {shown} as {kind}: {why}",
                                                    node.start_mark) from None

    return wrapped


class _SafeLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` (no Python tags, so nothing can execute) that also refuses nesting deeper
    than :data:`MAX_DEPTH`, duplicate keys, and scalars its constructors cannot convert."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:  # type: ignore[override]
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise yaml.composer.ComposerError(
                    None, None, f"nested deeper than {MAX_DEPTH} levels", self.peek_event().start_mark
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> Any:  # type: ignore[override]
        if isinstance(node, yaml.MappingNode):
            seen: set[Any] = set()
            for key_node, _ in node.value:
                if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=False)
                try:
                    dup = key in seen
                except TypeError:  # unhashable: the base class reports it
                    continue
                if dup:
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping", node.start_mark, f"duplicate key {key!r}",
                        key_node.start_mark
                    )
                seen.add(key)
        return super().construct_mapping(node, deep=deep)


# YAML 1.2 floats in exponent form (1e5, 1.0e5, 2E-3): PyYAML follows YAML 1.1, which needs a dot and a
# signed exponent, and loads them as strings, which strict validation then refuses. After the built-in
# resolvers (so integers stay integers); a quoted "1e5" stays a string.
_SafeLoader.add_implicit_resolver("tag:yaml.org,2002:float",
                                  re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
                                  list("-+0123456789"))

for _tag, _fn in (("int", yaml.SafeLoader.construct_yaml_int), ("float", yaml.SafeLoader.construct_yaml_float),
                  ("bool", yaml.SafeLoader.construct_yaml_bool),
                  ("timestamp", yaml.SafeLoader.construct_yaml_timestamp)):
    _SafeLoader.add_constructor(f"tag:yaml.org,2002:{_tag}", _checked_scalar(_fn))


def _shape_problem(doc: Any) -> str | None:
    """Why an in-memory document is too deep or too big (after alias expansion), or None.
    Iterative: a cyclic or 10,000-level document cannot exhaust the stack here."""
    stack: list[tuple[Any, int]] = [(doc, 1)]
    count = 0
    while stack:
        obj, depth = stack.pop()
        count += 1
        if count > MAX_EXPANDED_NODES:
            return f"document expands to more than {MAX_EXPANDED_NODES} nodes (YAML alias bomb?)"
        if depth > MAX_DEPTH:
            return f"document is nested deeper than {MAX_DEPTH} levels (or refers to itself)"
        if isinstance(obj, dict):
            stack.extend((v, depth + 1) for v in obj.values())
        elif isinstance(obj, (list, tuple, set, frozenset)):
            stack.extend((v, depth + 1) for v in obj)
    return None


def _yaml_error(src: str, exc: yaml.YAMLError) -> InputError:
    mark = getattr(exc, "problem_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    if isinstance(exc, yaml.reader.ReaderError):  # a control character: no line/column, a position
        where = f"character {exc.position + 1}"
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    return InputError(src, where, f"invalid YAML: {problem}")


def safe_load_text(text: str, src: str = "<text>") -> Any:
    """Parse one YAML document with the guards of :func:`read_yaml` (depth, alias expansion,
    duplicate keys, safe tags only); any problem is an InputError naming ``src``."""
    try:
        loader = _SafeLoader(text)
    except yaml.YAMLError as exc:  # the reader refuses control characters at once
        raise _yaml_error(src, exc) from None
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if _expanded_size(node, {}, MAX_EXPANDED_NODES) > MAX_EXPANDED_NODES:
            raise InputError(
                src, "", f"document expands to more than {MAX_EXPANDED_NODES} nodes (YAML alias bomb?)"
            )
        data = loader.construct_document(node)
    except yaml.YAMLError as exc:
        raise _yaml_error(src, exc) from None
    finally:
        loader.dispose()
    problem = _shape_problem(data)
    if problem:
        raise InputError(src, "", problem)
    return data


def read_yaml(path: Path) -> dict[str, Any]:
    """Read one YAML mapping safely: size limit, alias-bomb and depth guards, ``safe_load`` semantics."""
    src = str(path)
    require_file(path, "scenario file")
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise InputError(src, "", f"file is {size} bytes; scenario files are limited to {MAX_FILE_BYTES} bytes")
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(src, "", f"not UTF-8 text (byte {exc.start})") from None
    data = safe_load_text(text, src)
    if data is None:
        raise InputError(src, "", "empty file; a scenario is a YAML mapping")
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


# ------------------------------------------------------------------------------ path rules
#
# Paths in a scenario (``extends``, every ``file:``) are relative to the file that names them and
# must stay inside an allowed folder: the top scenario's folder, the project (the git work tree
# holding the current directory, else the current directory; and the git work tree holding the
# scenario), or a folder given on the command line with ``--allow-path``. A ``file:`` value given
# with ``--set`` comes from the command line and may point anywhere. Symlinks are followed first.

_ALLOWED: ContextVar[tuple[Path, ...]] = ContextVar("twin_allowed_paths", default=())
MAX_PATH_CHARS = 4096


@contextmanager
def allowed_paths(dirs: Sequence[str | os.PathLike[str]]) -> Iterator[None]:
    """Within the block, scenario paths may also point into ``dirs`` (the CLI's ``--allow-path``)."""
    token = _ALLOWED.set(_ALLOWED.get() + tuple(Path(d).resolve() for d in dirs))
    try:
        yield
    finally:
        _ALLOWED.reset(token)


def _git_root(start: Path) -> Path | None:
    for d in (start, *start.parents):
        if (d / ".git").exists():
            return d
    return None


def _allowed_roots(scenario: Path, allow: Sequence[str | os.PathLike[str]] = ()) -> tuple[Path, ...]:
    top = scenario.parent.resolve()
    cwd = Path.cwd().resolve()
    roots = [top, _git_root(cwd) or cwd]
    repo = _git_root(top)
    if repo is not None:
        roots.append(repo)
    roots += [Path(d).resolve() for d in allow]
    roots += list(_ALLOWED.get())
    return tuple(dict.fromkeys(roots))


def _path_value(value: Any, src: str, field: str) -> str:
    """A path string from a scenario: non-empty, no NUL, not absurdly long."""
    if not isinstance(value, str) or not value.strip():
        raise InputError(src, field, "must be a file path (non-empty string)")
    if "\x00" in value or len(value) > MAX_PATH_CHARS:
        raise InputError(src, field, f"not a usable file path: {value[:60]!r}")
    return value


def _check_inside(target: Path, roots: tuple[Path, ...], src: str, field: str, given: str) -> None:
    real = target.resolve()
    if any(real == r or real.is_relative_to(r) for r in roots):
        return
    shown = ", ".join(str(r) for r in roots[:3])
    how = "--allow-path DIR" if field == "extends" else f"--allow-path DIR, or give the file with --set {field}=PATH"
    raise InputError(src, field, f"path {given!r} leads to {real}, outside the scenario's folder and the project "
                                 f"({shown}); allow its folder with {how}")


def _rebase_files(doc: Any, from_dir: Path, to_dir: Path, src: str = "", where: str = "") -> Any:
    """Rewrite every ``file:`` value so it is relative to the top scenario's folder."""
    if isinstance(doc, dict):
        out = {}
        for k, v in doc.items():
            field = f"{where}.{k}" if where else str(k)
            if k == "file" and isinstance(v, str):
                v = _path_value(v, src, field)
                out[k] = v if os.path.isabs(v) else os.path.relpath((from_dir / v).resolve(), to_dir.resolve())
            else:
                out[k] = _rebase_files(v, from_dir, to_dir, src, field)
        return out
    if isinstance(doc, list):
        return [_rebase_files(v, from_dir, to_dir, src, f"{where}.{i}") for i, v in enumerate(doc)]
    return doc


def _file_values(doc: Any, where: str = "") -> Iterator[tuple[str, str]]:
    """(field path, value) of every string ``file:`` in a document."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            field = f"{where}.{k}" if where else str(k)
            if k == "file" and isinstance(v, str):
                yield field, v
            else:
                yield from _file_values(v, field)
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _file_values(v, f"{where}.{i}")


def _load_chain(path: Path, top_dir: Path, seen: tuple[Path, ...],
                roots: tuple[Path, ...] | None = None, chain: list[Path] | None = None) -> dict[str, Any]:
    """The merged document of ``path`` and its ``extends`` bases; ``chain`` (if given) receives the
    resolved path of every file read, the scenario first."""
    real = path.resolve()
    if real in seen:
        cycle = " -> ".join(p.name for p in seen + (real,))
        raise InputError(str(seen[0]), "extends", f"cyclic extends: {cycle}")
    if len(seen) >= MAX_EXTENDS_DEPTH:
        raise InputError(str(path), "extends", f"extends chain deeper than {MAX_EXTENDS_DEPTH}")
    doc = read_yaml(path)
    if chain is not None:
        chain.append(real)
    doc = _rebase_files(doc, path.parent, top_dir, str(path))
    parent = doc.pop("extends", None)
    if parent is None:
        return doc
    if not isinstance(parent, str) or not parent:
        raise InputError(str(path), "extends", "must be the path of a base scenario file (string)")
    _path_value(parent, str(path), "extends")
    parent_path = (path.parent / parent)
    if roots is not None:
        _check_inside(parent_path, roots, str(path), "extends", parent)
    problem = file_problem(parent_path, "base scenario file")
    if problem is not None:
        raise InputError(str(path), "extends", f"base scenario not found: {parent}" if problem.endswith("not found")
                         else f"{parent}: {problem}")
    base = _load_chain(parent_path, top_dir, seen + (real,), roots, chain)
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
        parsed = safe_load_text(value, "--set") if value.strip() else ""
    except InputError as exc:
        raise InputError("--set", expr, f"value is not valid YAML ({exc.message})") from None
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


def validate_doc(doc: dict[str, Any], source: str) -> Scenario:
    bad = _bad_number(doc)
    if bad is not None:
        raise InputError(source, *bad)
    try:  # strict: YAML gives every type its own form, so true is not 1, "5" is not 5, "off" is not False
        return Scenario.model_validate(doc, strict=True)
    except ValidationError as exc:
        errors = [InputError(source, field, msg) for field, msg in format_validation_errors(exc)]
        later, left_out = later_errors(doc, split_errors(exc.errors(include_url=False)),  # twin/scenario/rounds.py
                                       lambda d: Scenario.model_validate(d, strict=True), format_error)
        errors += [InputError(source, field, msg) for field, msg in later]
        named = {e.field for e in errors}  # a slip already named on its own error line needs no hint
        hints = [f"{source}: {field}: {text}"
                 for field, text in unit_slips(doc) if field not in named] + [
            f"{source}: {', '.join(f for f, _ in later)}: found by checks across fields run with "
            f"{', '.join(left_out)} left out (defaults in their place); fixing those may change them" for _ in left_out[:1]]
        raise (errors[0] if len(errors) == 1 and not hints else InputErrors(errors, hints)) from None
    except RecursionError:
        raise InputError(source, "", "document is nested too deeply") from None


def _resolved(sc: Scenario, source: str) -> dict[str, Any]:
    """The validated scenario as plain data. A value a validator derived from huge inputs (work
    hours from parameters × tokens, say) can overflow to infinity: refused here, naming it."""
    resolved = sc.model_dump(mode="json")
    bad = _bad_number(resolved)
    if bad is not None:
        raise InputError(source, bad[0], f"derived value is not finite ({bad[1].split('got ')[-1]}); are the inputs "
                                         f"it is computed from absurdly large?")
    return resolved


def scenario_hash(resolved: dict[str, Any], data_files: dict[str, str] | None = None) -> str:
    """SHA-256 (first 12 hex digits) of the canonical JSON of the resolved scenario and, when it
    reads data files, of their contents' digests (:func:`data_file_digests`): the same file name with
    other contents is another scenario."""
    doc: Any = resolved if not data_files else {"scenario": resolved, "data_files": data_files}
    blob = json.dumps(doc, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def data_file_digests(resolved: dict[str, Any], base_dir: Path) -> dict[str, str]:
    """SHA-256 (hex) of the bytes of every data file the resolved scenario names (``file:`` fields,
    relative to ``base_dir``), by field path."""
    out = {}
    for fld, value in _file_values(resolved):
        out[fld] = hashlib.sha256((base_dir / value).read_bytes()).hexdigest()
    return out


def _loaded(sc: Scenario, source: Path, resolved: dict[str, Any], base_dir: Path) -> Loaded:
    files = data_file_digests(resolved, base_dir)
    return Loaded(scenario=sc, source=source, resolved=resolved, hash=scenario_hash(resolved, files),
                  base_dir=base_dir, data_files=files)


def _bind_files(sc: Scenario, top_dir: Path, source: str) -> None:
    """Load the data files the scenario refers to (empirical distributions). An empirical time to
    failure must have a mean above 0 (as a fixed one must be above 0: all zeros fail the part again
    at once, without end)."""

    def visit(obj: Any, path: str) -> None:
        if isinstance(obj, Empirical):
            obj.bind(load_empirical(top_dir / obj.file))
            if path.rsplit(".", 1)[-1] == "failure" and not obj.mean() > 0:
                raise InputError(source, path, f"the times to failure in {obj.file} are all 0 h: an empirical "
                                 "time to failure must have a mean > 0 h")
            return
        if hasattr(obj, "bind_files"):  # a section that reads its own data files (costs.energy.time_of_use)
            obj.bind_files(top_dir)
            return
        if hasattr(obj, "__pydantic_fields__"):
            for name in type(obj).model_fields:
                visit(getattr(obj, name), f"{path}.{name}" if path else name)
        elif isinstance(obj, dict):
            for k, v in obj.items():
                visit(v, f"{path}.{k}")
        elif isinstance(obj, list):
            for i, v in enumerate(obj):
                visit(v, f"{path}[{i}]")

    visit(sc, "")
    cl = getattr(sc, "cooling", None)
    if cl is not None and cl.ambient.csv is not None:
        from twin.scenario.cooling import bind_ambient_csv

        bind_ambient_csv(cl, top_dir)
    wl = sc.workload
    if wl is not None and wl.trace is not None:
        from twin.scenario.pools import job_pool_rooms
        from twin.scenario.trace import read_trace

        rooms = job_pool_rooms(sc.cluster, wl.scheduler.hot_spares)  # (a row larger than its pool is refused)
        room = rooms.get(wl.trace.pool or "", sc.cluster.n_nodes - wl.scheduler.hot_spares)
        wl.trace.bind(read_trace(top_dir / wl.trace.file, sc.cluster.node.gpus, room, pools=rooms))
    cooling = getattr(sc, "cooling", None)
    if cooling is not None and cooling.ambient.csv is not None and cooling.ambient.csv._values is None:
        from twin.scenario.cooling import bind_ambient_csv

        bind_ambient_csv(cooling, top_dir)
    if sc.timeline is not None:  # each stage of a timeline reads the same files (twin/scenario/timeline.py)
        for stage in sc.timeline.stages:
            _bind_files(stage, top_dir, source)


def _check_data_file(path: Path) -> None:
    """A data file the scenario names must be UTF-8 text without NUL characters, at most
    :data:`MAX_DATA_FILE_BYTES`, with rows of at most :data:`MAX_DATA_LINE_CHARS` characters (the
    csv module's field limit: a longer row is not data of any kind the twin reads); the reader of
    each kind of file checks its rows. A missing file is reported by :func:`_check_files`."""
    if not path.is_file():
        return
    src = str(path)
    size = path.stat().st_size
    if size > MAX_DATA_FILE_BYTES:
        raise InputError(src, "", f"file is {size} bytes; data files are limited to {MAX_DATA_FILE_BYTES} bytes")
    dec = codecs.getincrementaldecoder("utf-8")()
    row = 1
    line_chars = 0  # characters of the current row so far (rows span chunks)
    with path.open("rb") as fh:
        while True:
            chunk = fh.read(1 << 20)
            try:
                text = dec.decode(chunk, final=not chunk)
            except UnicodeDecodeError as exc:
                r = row + chunk[: exc.start].count(b"\n")
                raise InputError(src, f"row {r}", "not UTF-8 text (is it a binary file?)") from None
            if "\x00" in text:
                r = row + text[: text.index("\x00")].count("\n")
                raise InputError(src, f"row {r}", "contains a NUL character (is it a binary file?)")
            lines = text.split("\n")
            for j, part in enumerate(lines):
                n = line_chars + len(part) if j == 0 else len(part)
                if n > MAX_DATA_LINE_CHARS:
                    raise InputError(src, f"row {row + j}", f"a row of more than {MAX_DATA_LINE_CHARS:,} characters "
                                                           "(is it a data file of the kind expected?)")
            line_chars = line_chars + len(lines[0]) if len(lines) == 1 else len(lines[-1])
            row += text.count("\n")
            if not chunk:
                return


def _check_files(doc: dict[str, Any], base_dir: Path, src: str, roots: tuple[Path, ...] | None,
                 trusted: set[str] = frozenset()) -> None:  # type: ignore[assignment]
    """Every ``file:`` of a validated document: inside the allowed folders (unless given on the
    command line, ``trusted``), a regular file (a missing one named with the scenario and its field, not
    by the data file's path alone) and readable text."""
    for field, value in _file_values(doc):
        _path_value(value, src, field)
        target = base_dir / value
        if roots is not None and value not in trusted:
            _check_inside(target, roots, src, field, value)
        problem = file_problem(target, file_kind(field))
        if problem is not None:  # named with the scenario and its field, then the data file's path
            raise InputError(src, field, f"{target}: {problem}")
        _check_data_file(target)


def _set_file_values(expr: str) -> set[str]:
    """The ``file:`` paths a ``--set`` gives (they come from the command line: any folder)."""
    keys, value = parse_set(expr)
    out = {v for _, v in _file_values(value)}
    if keys[-1] == "file" and isinstance(value, str):
        out.add(value)
    return out


def merged_document(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The scenario document of ``path`` after its ``extends`` chain is merged, not validated (for
    tools that write a scenario extending it, such as ``twin fit --into``)."""
    p = Path(path)
    require_file(p, "scenario file")
    return _load_chain(p, p.parent, (), _allowed_roots(p))


def load_scenario(path: str | os.PathLike[str], overrides: list[str] | None = None,
                  allow: Sequence[str | os.PathLike[str]] = ()) -> Loaded:
    """Load, merge, override and validate a scenario file. Paths in it must stay inside the
    scenario's folder, the project, ``allow`` or :func:`allowed_paths` (see the path rules above)."""
    started = time.perf_counter()
    p = Path(path)
    require_file(p, "scenario file")
    roots = _allowed_roots(p, allow)
    chain: list[Path] = []
    doc = _load_chain(p, p.parent, (), roots, chain)
    trusted: set[str] = set()
    for expr in overrides or []:
        try:
            doc = apply_set(doc, expr)
            trusted |= _set_file_values(expr)
        except InputError as exc:  # name the scenario file as well as the --set expression
            raise InputError(str(p), f"--set {expr}", exc.message) from None
    src = str(p) + (" (with --set)" if overrides else "")
    try:
        sc = validate_doc(doc, src)
    except InputError as exc:  # a data file's problem in the same report (twin/scenario/rounds.py)
        raise with_more(exc, lambda: _check_files(doc, p.parent, src, roots, trusted), _file_values(doc), p.parent,
                        src) from None
    _check_files(doc, p.parent, src, roots, trusted)
    _bind_files(sc, p.parent, str(p))
    resolved = _resolved(sc, src)
    loaded = _loaded(sc, p, resolved, p.parent)
    if verbosity():
        bases = f", extends {' -> '.join(str(c) for c in chain[1:])}" if len(chain) > 1 else ""
        sets = f", --set {' '.join(overrides)}" if overrides else ""
        files = f", data files {', '.join(f'{k}={v[:12]}' for k, v in loaded.data_files.items())}" if loaded.data_files else ""
        detail(f"scenario {p} = {chain[0]}{bases}{sets}: hash {loaded.hash}, seed {sc.seed}, "
               f"{sc.horizon_days:g} days, {sc.cluster.n_nodes} nodes{files} (loaded in {time.perf_counter() - started:.2f} s)")
    return loaded


def load_dict(doc: dict[str, Any], source: str = "<scenario>", base_dir: Path | None = None) -> Loaded:
    """Validate an in-memory scenario mapping (tests, notebooks, sweeps). The caller is trusted
    with paths: ``file:`` values are relative to ``base_dir`` and may point anywhere."""
    if not isinstance(doc, dict):
        raise InputError(source, "", f"a scenario is a mapping, got {type(doc).__name__}")
    problem = _shape_problem(doc)
    if problem:
        raise InputError(source, "", problem)
    doc = copy.deepcopy(doc)
    sc = validate_doc(doc, source)
    _check_files(doc, base_dir or Path("."), source, None)
    _bind_files(sc, base_dir or Path("."), source)
    resolved = _resolved(sc, source)
    return _loaded(sc, Path(source), resolved, base_dir or Path("."))
