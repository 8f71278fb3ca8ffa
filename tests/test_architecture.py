"""Arrows one way (issue 21, item 3): the imports of ``twin/`` form no cycle and never go up a floor.

The floors, lowest first (docs/architecture.md: cli → experiment → sim → model
→ physics; the scenario below the model; observe fed by the model; reports read recorded tables only).
A module may import modules of its own floor and of the floors below it, never above:

 0. base        ``twin`` (the package: its version), ``twin.errors``, ``twin.console``, ``twin.rng``,
                ``twin.units`` (units, calendar constants, the crews' working calendar), ``twin.atomic``
                (atomic file writes), ``twin.interrupt`` (the interrupt flag the loops check)
 1. physics     ``twin.physics``: pure equations, no SimPy, no scenario
 2. scenario    ``twin.scenario``, ``twin.limits``: the schema, loading, bounds and advisories on a
                validated scenario
 3. observe     ``twin.observe``: the recorder the model writes into
 4. model       ``twin.model``: SimPy components
 5. sim         ``twin.sim``: builds the component tree and runs one replication
 6. report      ``twin.report``: tables and figures of recorded results; besides the floor rule a
                report imports only the base floor and other report modules (it reads recorded tables,
                never the scenario, the model or an experiment)
 7. experiment  ``twin.experiment``: replications, sweeps, comparisons, the results store
 8. studies     ``twin.forecast``, ``twin.fit``, ``twin.calibrate``, ``twin.validation``: built on experiments
 9. cli         ``twin.cli``, every ``twin.<package>.cli``, ``twin.docs``, ``twin.notebooks``: commands

What counts as an import: every ``import`` and ``from ... import`` statement anywhere in a module
(module level and inside functions, the lazy imports included), read with :mod:`ast`, except those
under ``if TYPE_CHECKING:``: annotations only, never executed, so they make no runtime arrow (a
section module naming ``Scenario`` in a signature). ``from pkg import name`` is an arrow to the
submodule ``pkg.name`` when there is one, else to ``pkg``; importing a submodule draws no arrow to its
parent package's ``__init__``.

A new module must be given a floor here (an unplaced module fails the test).
"""

from __future__ import annotations

import ast
import fnmatch
from pathlib import Path


ROOT = Path(__file__).resolve().parent.parent / "twin"

FLOORS: list[tuple[str, list[str]]] = [  # lowest first
    ("base", ["twin", "twin.errors", "twin.console", "twin.rng", "twin.units", "twin.atomic", "twin.interrupt"]),
    ("physics", ["twin.physics", "twin.physics.*", "twin.kernels", "twin.kernels_*"]),  # (kernels: compiled forms of the physics)
    ("scenario", ["twin.scenario", "twin.scenario.*", "twin.limits"]),
    ("observe", ["twin.observe", "twin.observe.*"]),
    ("model", ["twin.model", "twin.model.*"]),
    ("sim", ["twin.sim", "twin.life"]),
    ("report", ["twin.report", "twin.report.*"]),
    ("experiment", ["twin.experiment", "twin.experiment.*"]),
    ("studies", ["twin.forecast", "twin.forecast.*", "twin.fit", "twin.fit.*", "twin.calibrate",
                 "twin.calibrate.*", "twin.validation", "twin.validation.*"]),
    ("cli", ["twin.cli", "twin.*.cli", "twin.docs", "twin.notebooks", "twin.warm_cache"]),
]
"""Floor of each module: the first pattern that matches, searched from the top floor down (so
``twin.experiment.cli`` is on the cli floor, not the experiment floor)."""

READS_RECORDED_ONLY = {"report": {"base", "report"}}
"""Floors whose modules may import only these floors (besides the floor order)."""

ALLOWED: dict[tuple[str, str], str] = {
    # (importer, imported): "owner: why it is still here". Must be empty when issue 21 is done; an entry
    # that no longer matches an offending import fails the test (so it is removed with the import).
}


def modules(root: Path, package: str) -> dict[str, Path]:
    """Dotted name -> file of every module under ``root`` (a package named ``package``)."""
    out = {}
    for p in sorted(root.rglob("*.py")):
        parts = [package, *p.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _import_nodes(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement of ``tree`` but those in the body of ``if TYPE_CHECKING:``."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def imports(root: Path, package: str) -> dict[str, dict[str, int]]:
    """importer -> {imported module: first line} for the runtime imports within ``package``."""
    mods = modules(root, package)

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, dict[str, int]] = {m: {} for m in mods}
    for mod, path in mods.items():
        here = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for node in _import_nodes(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                if node.level:
                    base = here.split(".")[: len(here.split(".")) - node.level + 1]
                    src = ".".join(base + ([node.module] if node.module else []))
                else:
                    src = node.module or ""
                for a in node.names:
                    sub = f"{src}.{a.name}"
                    targets.append(sub if sub in mods else src)
            for t in targets:
                if t == package or t.startswith(package + "."):
                    r = resolve(t)
                    if r is not None and r != mod:
                        graph[mod].setdefault(r, node.lineno)
    return graph


def floor_of(mod: str, floors: list[tuple[str, list[str]]] = FLOORS) -> int | None:
    for i in range(len(floors) - 1, -1, -1):
        if any(fnmatch.fnmatchcase(mod, pat) for pat in floors[i][1]):
            return i
    return None


def violations(graph: dict[str, dict[str, int]], floors: list[tuple[str, list[str]]] = FLOORS,
               only: dict[str, set[str]] = READS_RECORDED_ONLY) -> dict[tuple[str, str], str]:
    """(importer, imported) -> what is wrong, for every import that goes up a floor or out of the
    floors an ``only`` floor may read."""
    names = [f[0] for f in floors]
    out = {}
    for a, targets in graph.items():
        fa = floor_of(a, floors)
        for b, line in targets.items():
            fb = floor_of(b, floors)
            if fa is None or fb is None:
                continue  # reported by test_every_module_has_a_floor
            if fb > fa:
                out[(a, b)] = f"line {line}: floor {names[fa]} imports floor {names[fb]} (upward)"
            elif names[fa] in only and names[fb] not in only[names[fa]]:
                out[(a, b)] = f"line {line}: {names[fa]} may import only {sorted(only[names[fa]])}, not {names[fb]}"
    return out


def cycles(graph: dict[str, dict[str, int]], skip: set[tuple[str, str]] = frozenset()) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), ``skip`` edges left out."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, {}):
            if (v, w) in skip:
                continue
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return out


def _cycle_text(graph: dict[str, dict[str, int]], comp: list[str]) -> str:
    inside = set(comp)
    return "; ".join(f"{a} -> {b} (line {graph[a][b]})" for a in comp for b in graph[a] if b in inside)


GRAPH = imports(ROOT, "twin")


def test_every_module_has_a_floor() -> None:
    assert [m for m in GRAPH if floor_of(m) is None] == []


def test_no_import_goes_up_a_floor() -> None:
    bad = violations(GRAPH)
    unexpected = {k: v for k, v in bad.items() if k not in ALLOWED}
    assert unexpected == {}, "\n".join(f"{a} -> {b}: {why}" for (a, b), why in sorted(unexpected.items()))


def test_no_import_cycle() -> None:
    found = cycles(GRAPH, skip=set(ALLOWED))
    assert found == [], "\n".join(_cycle_text(GRAPH, c) for c in found)


def test_allow_list_has_no_stale_entry() -> None:
    """An allowed exception is removed with the import it excused."""
    bad = violations(GRAPH)
    in_cycle = {(a, b) for c in cycles(GRAPH) for a in c for b in GRAPH[a] if b in c}
    stale = [k for k in ALLOWED if k not in bad and k not in in_cycle]
    assert stale == []


def test_allow_list_is_empty() -> None:
    assert ALLOWED == {}


def test_the_checker_finds_what_it_must(tmp_path: Path) -> None:
    """The walker sees function-level and relative imports, ignores TYPE_CHECKING ones, and the checks
    report an upward import, a read outside an ``only`` floor and a cycle."""
    pkg = tmp_path / "pk"
    (pkg / "low").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "low" / "__init__.py").write_text("")
    (pkg / "low" / "a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pk import top\n"
        "def f():\n    from . import b\n")
    (pkg / "low" / "b.py").write_text("import pk.low.a\n")
    (pkg / "mid.py").write_text("from pk.low import a\n")
    (pkg / "top.py").write_text("x = 1\n")
    (pkg / "low" / "c.py").write_text("def g():\n    import pk.top\n")
    floors = [("low", ["pk", "pk.low", "pk.low.*"]), ("mid", ["pk.mid"]), ("top", ["pk.top"])]
    g = imports(pkg, "pk")
    assert g["pk.low.a"] == {"pk.low.b": 5}  # the function-level relative import, not the TYPE_CHECKING one
    assert g["pk.low.b"] == {"pk.low.a": 1}
    assert g["pk.mid"] == {"pk.low.a": 1}
    assert set(violations(g, floors, {})) == {("pk.low.c", "pk.top")}
    assert set(violations(g, floors, {"mid": {"mid"}})) == {("pk.low.c", "pk.top"), ("pk.mid", "pk.low.a")}
    assert cycles(g) == [["pk.low.a", "pk.low.b"]]
    assert cycles(g, skip={("pk.low.b", "pk.low.a")}) == []


def test_one_atomic_writer() -> None:
    """Files are renamed into place by twin/atomic.py alone (issue 21 item 5: one implementation)."""
    users = sorted(str(p.relative_to(ROOT.parent)) for p in ROOT.rglob("*.py")
                   if p.name != "atomic.py" or p.parent != ROOT
                   if any(s in p.read_text(encoding="utf-8") for s in ("os.replace(", "mkstemp(", "mkdtemp(")))
    assert users == []


ONE_DEFINITION = ("Calendar", "Strict", "Dist", "FloatOrArray", "as_f64", "float_or_array", "checkpoint_write_h",
                  "write_time_h", "atomic_path", "atomic_write_text", "atomic_write_parquet", "atomic_folder",
                  "SECONDS_PER_HOUR", "HOURS_PER_DAY", "DAYS_PER_WEEK", "HOURS_PER_WEEK", "DAYS_PER_YEAR",
                  "HOURS_PER_YEAR", "HOURS_PER_MONTH", "MAX_HORIZON_DAYS")
"""Names that are defined once in twin/ (issue 21 item 5); importing them (``as`` another name too)
is not a definition."""


def definitions(root: Path, package: str) -> dict[str, list[str]]:
    """Name -> modules that define it: a function or class (at any depth) or a module-level assignment."""
    out: dict[str, list[str]] = {}
    for mod, path in modules(root, package).items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        names = [n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
        for node in tree.body:
            targets = node.targets if isinstance(node, ast.Assign) else (
                [node.target] if isinstance(node, ast.AnnAssign) else [])
            names += [t.id for t in targets if isinstance(t, ast.Name)]
        for name in names:
            out.setdefault(name, []).append(mod)
    return out


def test_one_definition_of_each_thing() -> None:
    defs = definitions(ROOT, "twin")
    twice = {n: defs[n] for n in ONE_DEFINITION if len(defs.get(n, [])) > 1}
    assert twice == {}
    assert [n for n in ONE_DEFINITION if n not in defs] == []  # a renamed thing is renamed here too
    physics = {m for n in ("_f", "_out") for m in defs.get(n, []) if m.startswith("twin.physics")}
    assert physics == set()  # the array helpers live in twin.physics.arrays under their own names


MAX_MODULE_LINES = 800
"""Rooms stay small (the developers' standards; issue 40): no module in ``twin/`` over 800 lines."""


def module_sizes(root: Path) -> dict[str, int]:
    """Lines of every ``.py`` file under ``root``, by path relative to it."""
    return {str(p.relative_to(root)): len(p.read_text().splitlines()) for p in sorted(root.rglob("*.py"))}


def test_no_module_over_800_lines() -> None:
    over = {name: n for name, n in module_sizes(ROOT).items() if n > MAX_MODULE_LINES}
    assert over == {}, f"modules over {MAX_MODULE_LINES} lines: {over}"


def test_module_size_check_finds_a_big_module(tmp_path: Path) -> None:
    (tmp_path / "small.py").write_text("x = 1\n" * MAX_MODULE_LINES)
    (tmp_path / "big.py").write_text("x = 1\n" * (MAX_MODULE_LINES + 1))
    over = {n: k for n, k in module_sizes(tmp_path).items() if k > MAX_MODULE_LINES}
    assert over == {"big.py": MAX_MODULE_LINES + 1}


# ---- the bus: typed topics only (issue 40 item 3) ------------------------------------------------------

BUS_VERBS = ("publish", "subscribe", "handlers")


def channel_names(root: Path) -> set[str]:
    """Names bound to a ``Channel(...)`` anywhere under ``root``: module constants (``JOB``), the attributes
    of ``Topic`` (``NODE_DOWN``) and instance attributes (``self.changed = Channel(...)``)."""
    out: set[str] = set()
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Call):
                f = node.value.func
                if (f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else "") != "Channel":
                    continue
                for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    if isinstance(t, ast.Name):
                        out.add(t.id)
                    elif isinstance(t, ast.Attribute):
                        out.add(t.attr)
    return out


def untyped_bus_calls(root: Path) -> list[str]:
    """Every ``.publish``/``.subscribe``/``.handlers`` call under ``root`` whose topic (first argument) is not a
    typed channel: a string, an f-string, or a name no ``Channel(...)`` is bound to."""
    names = channel_names(root)
    bad = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in BUS_VERBS):
                continue
            arg = node.args[0] if node.args else None
            name = arg.id if isinstance(arg, ast.Name) else arg.attr if isinstance(arg, ast.Attribute) else None
            if name not in names:
                bad.append(f"{path.relative_to(root)}:{node.lineno}: {node.func.attr}({ast.unparse(arg) if arg else ''})")
    return bad


def test_every_bus_call_names_a_typed_channel() -> None:
    """The bus carries typed messages only: each topic is a ``Channel[payload]`` (mypy checks publishers and
    subscribers against it), never a bare string."""
    assert untyped_bus_calls(ROOT) == []


def test_bus_is_typed() -> None:
    """``Bus.publish`` and ``Bus.subscribe`` take a ``Channel`` and its payload, not ``str, *Any``."""
    from twin.model.engine import Bus

    ann = Bus.publish.__annotations__
    assert ann["topic"] == "Channel[Unpack[Ts]]" and ann["args"] == "Unpack[Ts]"
    assert Bus.subscribe.__annotations__["fn"] == "Callable[[Unpack[Ts]], None]"


def test_the_bus_check_finds_an_untyped_publish(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(
        "X: Channel[int] = Channel('x', '')\nclass C:\n    def __init__(self):\n        self.changed = Channel('c', '')\n"
        "def f(bus, c):\n    bus.publish(X, 1)\n    bus.subscribe(c.changed, print)\n"
        "    bus.publish('node_down', 1)\n    bus.publish(f'{c}', 1)\n    bus.handlers(Y)\n")
    assert [b.split(": ", 1)[1] for b in untyped_bus_calls(tmp_path)] == [
        "publish('node_down')", "publish(f'{c}')", "handlers(Y)"]


# ---- components meet through the bus, the cluster and declared services (issue 40 item 3) ---------------

MODEL = "twin.model"


def component_classes(root: Path, package: str) -> dict[str, str]:
    """Class name -> module of every subclass (at any depth) of ``Component`` under ``root``."""
    trees = {m: ast.parse(p.read_text(encoding="utf-8"), str(p)) for m, p in modules(root, package).items()}
    found: dict[str, str] = {}
    names = {"Component"}
    grew = True
    while grew:
        grew = False
        for mod, tree in trees.items():
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef) and node.name not in names and any(
                        (b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute) else "") in names
                        for b in node.bases):
                    names.add(node.name)
                    found[node.name] = mod
                    grew = True
    return found


def component_reaches(root: Path, package: str, model: str) -> list[str]:
    """Runtime imports, in the model, of another module's component class (a component taking hold of
    another to call it; its package's ``__init__`` exporting it is not one), and reads of the component
    list (``by_section``, ``components``) in the model."""
    comps = component_classes(root, package)
    bad = []
    for mod, path in modules(root, package).items():
        if not (mod == model or mod.startswith(model + ".")):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in _import_nodes(tree):
            if isinstance(node, ast.ImportFrom):
                for a in node.names:
                    owner = comps.get(a.name)
                    if owner is not None and owner != mod and not owner.startswith(mod + "."):
                        bad.append(f"{mod}:{node.lineno}: imports component {a.name} ({owner})")
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in ("by_section", "components"):
                bad.append(f"{mod}:{node.lineno}: reads .{node.attr}")
    return bad


def test_no_component_calls_another() -> None:
    """A model component reaches another only through the bus, the cluster's methods and the services it
    declares (``ctx.service``): it never imports another component's class nor walks the component list."""
    assert component_reaches(ROOT, "twin", MODEL) == []


def test_the_component_check_finds_a_direct_call(tmp_path: Path) -> None:
    pkg = tmp_path / "pk"
    (pkg / "model" / "cool").mkdir(parents=True)
    for p in (pkg, pkg / "model", pkg / "model" / "cool"):
        (p / "__init__.py").write_text("")
    (pkg / "model" / "component.py").write_text("class Component: ...\n")
    (pkg / "model" / "power.py").write_text("from pk.model.component import Component\nclass Power(Component): ...\n")
    (pkg / "model" / "cool" / "__init__.py").write_text("from pk.model.cool.room import Room\n")
    (pkg / "model" / "cool" / "room.py").write_text(
        "from pk.model.component import Component\nclass Room(Component):\n"
        "    def build(self, ctx):\n        from pk.model.power import Power\n        ctx.by_section['x']\n")
    assert component_reaches(pkg, "pk", "pk.model") == [
        "pk.model.cool.room:4: imports component Power (pk.model.power)", "pk.model.cool.room:5: reads .by_section"]


COOLING = "twin.model.cooling"


def inherited_rooms(root: Path, package: str, cooling: str) -> list[str]:
    """Classes of the cooling package that take their behaviour or state by inheritance (issue 40 item 2: its
    rooms are objects with explicit constructor arguments, composed by the component): every base but the
    component contract (``Component``) and a protocol (``Protocol``, the rooms' ports) is reported."""
    bad = []
    for mod, path in modules(root, package).items():
        if not (mod == cooling or mod.startswith(cooling + ".")):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.ClassDef):
                for b in node.bases:
                    name = b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute) else ast.unparse(b)
                    if name not in ("Component", "Protocol"):
                        bad.append(f"{mod}:{node.lineno}: {node.name}({name})")
    return bad


def test_cooling_rooms_are_composed_not_inherited() -> None:
    assert inherited_rooms(ROOT, "twin", COOLING) == []


def test_the_composition_check_finds_a_mixin(tmp_path: Path) -> None:
    pkg = tmp_path / "pk"
    (pkg / "model" / "cool").mkdir(parents=True)
    for p in (pkg, pkg / "model", pkg / "model" / "cool"):
        (p / "__init__.py").write_text("")
    (pkg / "model" / "cool" / "rooms.py").write_text(
        "from typing import Protocol\nclass State: ...\nclass Air(State): ...\nclass Port(Protocol): ...\n"
        "class Thermal(Component, Air): ...\n")
    assert inherited_rooms(pkg, "pk", "pk.model.cool") == [
        "pk.model.cool.rooms:3: Air(State)", "pk.model.cool.rooms:5: Thermal(Air)"]


def test_no_type_only_cycle_in_the_model() -> None:
    """No cycle through the model's imports, those under ``if TYPE_CHECKING:`` counted too (issue 40: the
    component contract and the IT power named each other for types only)."""
    mods = modules(ROOT, "twin")
    graph = {m: {t: 0 for t in ts} for m, ts in imports(ROOT, "twin").items()}
    for mod, path in mods.items():  # add the annotation-only arrows
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for a in node.names:
                    t = f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in mods else node.module
                    while t and t not in mods:
                        t = t.rpartition(".")[0]
                    if t and t != mod:
                        graph[mod].setdefault(t, node.lineno)
    found = [c for c in cycles(graph) if any(m == MODEL or m.startswith(MODEL + ".") for m in c)]
    assert found == [], "\n".join(_cycle_text(graph, c) for c in found)


# ---- named timers in the model (issue 40 item 4) ---------------------------------------------------------

def raw_schedules(root: Path, package: str, model: str) -> list[str]:
    """Calls of ``call_at`` (the engine's primitive) in the model outside the engine: the model schedules
    through named timers (``Timer``, ``BatchTimer``, ``Calls``: a method and typed arguments, no lambda)."""
    bad = []
    for mod, path in modules(root, package).items():
        if not (mod == model or mod.startswith(model + ".")) or mod == f"{model}.engine":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "call_at":
                bad.append(f"{mod}:{node.lineno}")
    return bad


def test_no_raw_call_at_in_the_model() -> None:
    assert raw_schedules(ROOT, "twin", MODEL) == []


def test_the_timer_check_finds_a_raw_call_at(tmp_path: Path) -> None:
    pkg = tmp_path / "pk"
    (pkg / "model").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "model" / "__init__.py").write_text("")
    (pkg / "model" / "engine.py").write_text("def call_at(t, fn): ...\ndef f(e): e.call_at(1.0, f)\n")
    (pkg / "model" / "a.py").write_text("def f(eng):\n    eng.calls(f).at(1.0)\n    eng.call_at(2.0, lambda: f(eng))\n")
    assert raw_schedules(pkg, "pk", "pk.model") == ["pk.model.a:3"]


CLUSTER_REASONS = ("add_down", "remove_down", "add_cut", "remove_cut")


def string_causes(root: Path, package: str, model: str) -> list[str]:
    """Down or cut reasons given to the cluster as strings (a literal or an f-string) in the model: a reason
    is a typed ``DownCause`` (its kind, part and planned or not), never a string to parse later."""
    bad = []
    for mod, path in modules(root, package).items():
        if not (mod == model or mod.startswith(model + ".")):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in CLUSTER_REASONS and len(node.args) == 2
                    and isinstance(node.args[1], (ast.Constant, ast.JoinedStr))):
                bad.append(f"{mod}:{node.lineno}")
    return bad


def test_no_string_cause_in_the_model() -> None:
    assert string_causes(ROOT, "twin", MODEL) == []


def test_the_cause_check_finds_a_string(tmp_path: Path) -> None:
    pkg = tmp_path / "pk"
    (pkg / "model").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "model" / "__init__.py").write_text("")
    (pkg / "model" / "a.py").write_text("def f(cl, c, p):\n    cl.add_down(1, c)\n    cl.add_down(1, 'planned')\n"
                                        "    cl.remove_cut(1, f'repair:{p}')\n")
    assert string_causes(pkg, "pk", "pk.model") == ["pk.model.a:3", "pk.model.a:4"]
