"""The life of a hall as dated steps (``timeline``, issue 52): racks added, a new node generation, more
cooling or power, a retrofit from air to liquid.

Design: **stages**. A scenario with a timeline of K steps is K + 1 stages: stage 0 runs from day 0 to the
first step's day with the scenario as written; stage k runs from step k's day to the next step's (or the
horizon) with steps 1..k applied to the scenario's document, as a scenario of its own (validated like any
other, so a step that breaks the schema is refused with its field path). Each stage is simulated by the
unchanged model (:func:`twin.sim.run_replication` on the stage's scenario); :mod:`twin.life` runs them in
turn and adds them up. A growing cluster inside one run (nodes, parts, zones and the workload's pools
resized while events are pending) would touch every component; a stage is a plain scenario, correct by
construction and cheap to test. What crosses a stage boundary is stated, not implied:

* **carried**: the equipment (the document with the steps so far), the installed sizes that the schema
  would otherwise derive from the new load (:data:`PINNED`: a chiller plant or a UPS sized for the old
  load stays that size unless a step sets it), the purchase dates of the nodes (their remaining capital
  when a step replaces them, :mod:`twin.life`);
* **the parts' ages**: each unit's age at the end of a stage is its age at the start of the next (its first
  lifetime there is the residual life given that age, :func:`twin.model.parts.aged_sample`; exact for any
  lifetime distribution), carried per replication by :func:`twin.life.carried_ages` for the units that stay:
  a new node type, a part given a new distribution or count start new; a part failed at the step is
  replaced by it (new);
* **renewed**: the spares stock, the repair queue, the jobs (a stage
  starts with the workload's submissions afresh: the workload follows the cluster, and jobs sized in
  GPUs can be resized by a step's ``set``);
* each stage has its own seed (the scenario's for stage 0, a fixed function of it and k after), the same
  in every option of a comparison, so paired replications stay paired stage by stage.

Installation downtime: a step's ``install`` drains the racks it works on (the added ones, all of them, or
none) in waves of ``crews`` racks, ``hours_per_rack`` each, at the start of its stage (the ``installation``
section of the stage's scenario, :mod:`twin.model.installation`): exactly racks × nodes per rack ×
hours_per_rack node-hours.

The headroom of each stage (:mod:`twin.scenario.headroom`) is checked against the stage's load; with
``on_exceed: refuse`` a step that exceeds it is an input error naming the step and what runs out.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field, PrivateAttr, model_validator

from twin.scenario.base import NonNegInt, PosInt, Strict

if TYPE_CHECKING:  # pragma: no cover
    from twin.scenario.schema import Scenario

NonNegF = Annotated[float, Field(ge=0, allow_inf_nan=False)]

PINNED = ("cooling.plant.chillers.capacity_kw", "cooling.plant.loop.volume_m3", "power.ups.capacity_kw")
"""Sizes the schema derives from the load when not given: carried from the stage before unless the step
sets them (installed equipment does not grow by itself)."""

STAGE_SEED_STEP = 0x9E3779B97F4A7C15
"""Stage k's seed is (seed + k × this) mod 2⁶³: distinct streams per stage, the same in every option."""


class Install(Strict):
    """The installation work of a step: which racks are drained, for how long, how many at once."""

    racks: Literal["none", "added", "all", "replaced"] = Field(
        "none", description="Racks drained for the work: none (hot work: a CRAH, a chiller, a UPS module), added "
                            "(the step's new racks, out until installed), all (a refresh or a retrofit) or replaced "
                            "(the racks whose node type the step changes: a partial refresh through cluster.pools).")
    hours_per_rack: Annotated[float, Field(ge=0, le=720, allow_inf_nan=False)] = Field(
        24.0, description="Hours one crew takes for one rack: de-rack, rack, cable, burn-in (assumption: a day; "
                          "range 4–72 h).")
    crews: Annotated[int, Field(ge=1, le=1000)] = Field(
        2, description="Racks worked at once by the installer's crews (assumption: 2; range 1–16).")

    def windows_of(self, racks: list[int], nodes_per_rack: int) -> list[dict[str, Any]]:
        """Drain windows of the racks ``racks`` (sorted rack indices) in waves of ``crews`` racks: one window per
        run of adjacent racks in a wave."""
        out: list[dict[str, Any]] = []
        if self.hours_per_rack <= 0:
            return out
        for w in range(0, len(racks), self.crews):
            wave = racks[w:w + self.crews]
            runs: list[list[int]] = []
            for r in wave:
                if runs and runs[-1][-1] + 1 == r:
                    runs[-1].append(r)
                else:
                    runs.append([r])
            for run in runs:
                out.append({"start_h": (w // self.crews) * self.hours_per_rack, "first_node": run[0] * nodes_per_rack,
                            "nodes": len(run) * nodes_per_rack, "duration_h": self.hours_per_rack})
        return out

    def windows(self, first_rack: int, racks: int, nodes_per_rack: int) -> list[dict[str, Any]]:
        """Drain windows ``{start_h, first_node, nodes, duration_h}`` from the stage start: racks
        ``first_rack`` .. ``first_rack + racks − 1`` in waves of ``crews`` racks."""
        out = []
        if self.hours_per_rack <= 0:
            return out
        for w, r0 in enumerate(range(first_rack, first_rack + racks, self.crews)):
            n = min(self.crews, first_rack + racks - r0)
            out.append({"start_h": w * self.hours_per_rack, "first_node": r0 * nodes_per_rack,
                        "nodes": n * nodes_per_rack, "duration_h": self.hours_per_rack})
        return out


class Step(Strict):
    """One dated change of the hall."""

    name: str = Field(min_length=1, max_length=40, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$",
                      description="The step's name (reports, metrics ``step.<name>.*``).")
    day: Annotated[float, Field(gt=0, allow_inf_nan=False)] = Field(
        description="Day of the step from the start of the life; steps in increasing order, before the horizon.")
    add_racks: Annotated[int, Field(ge=0, le=10000)] = Field(
        0, description="Racks added (of cluster.nodes_per_rack nodes each, the node type of the step's stage).")
    set: dict[str, Any] = Field(
        default_factory=dict,
        description="Field paths of the scenario and their new values from this day (the form of `--set`, "
                    "lists by index): a new node generation (cluster.node.type, .gpus, .gpu.tdp_w, .nameplate_w, "
                    ".parts.<p>.failure, costs.capital.node.<type>), a CRAH (cooling.air.crah.count), chiller "
                    "capacity (cooling.plant.chillers.capacity_kw), a UPS module (power.ups.modules.count), a "
                    "retrofit (cooling.type: liquid with cooling.liquid), jobs resized (workload.jobs.0.gpus).")
    capital: NonNegF = Field(
        0.0, description="Cost of the work itself, in costs.currency, paid at the step: installation labour, "
                         "piping, a retrofit's works (assumption: 0; equipment the step adds is priced by the "
                         "stage's own capital lines).")
    resale_per_node: NonNegF = Field(
        0.0, description="What one replaced node fetches when the node type changes, in costs.currency (assumption: "
                         "0; used H100-class systems resold for a share of their price, range 0–50 % of it).")
    disposal_per_node: NonNegF = Field(
        0.0, description="Cost of removing and disposing of one replaced node, in costs.currency (assumption: 0; "
                         "range 0–2,000).")
    plant_resale_share: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)] = Field(
        0.0, description="Share of its purchase price that plant the step removes fetches (a cooling or power "
                         "capital item the stage after holds less of: a retrofit's chiller capacity, CRAH units); "
                         "the rest of what it still owes of its annuity is written off at the step (assumption: "
                         "0, removed plant is scrapped; range 0–0.2 for used chillers and CRAH units).")
    install: Install = Field(default_factory=Install, description="The racks drained for the work, and for how long.")
    jobs_follow: bool = Field(
        False, description="Resize the listed jobs (workload.jobs) with the cluster: each job's gpus × the stage's "
                           "GPUs / the stage before's, rounded down to whole nodes (at least one); false: jobs keep "
                           "their size unless `set` changes it.")


class Timeline(Strict):
    """Dated steps over the horizon (``horizon_days`` is the life of the hall): see the module docstring."""

    steps: Annotated[list[Step], Field(min_length=1, max_length=20)] = Field(
        description="The steps, in increasing day order; a step on or after horizon_days is not reached (the "
                    "stages stop at the horizon).")
    on_exceed: Literal["refuse", "run"] = Field(
        "run", description="A step whose load exceeds the headroom (cooling, power, rack limit, floor): refuse "
                           "(input error, exit 2, naming the step and what runs out by how much) or run it with "
                           "its consequences (throttling, capping, trips as the model has them).")
    hall_m2: NonNegF | None = Field(
        None, description="White space of the building, m², checked against the racks and cooling units of each "
                          "stage (cooling.density); null: not checked (assumption: a site's own figure).")
    base: dict[str, Any] | None = Field(
        None, description="The scenario document the steps apply to, written by the reader (leave it out).")

    _stages: list["Scenario"] = PrivateAttr(default_factory=list)
    _headroom: list[list[tuple[str, float, float, str]]] = PrivateAttr(default_factory=list)

    @model_validator(mode="after")
    def _order(self) -> "Timeline":
        days = [s.day for s in self.steps]
        for i in range(1, len(days)):
            if days[i] <= days[i - 1]:
                raise ValueError(f"@steps.{i}.day: steps must be in increasing day order: {days[i]:g} <= "
                                 f"{days[i - 1]:g}")
        names = [s.name for s in self.steps]
        for i, n in enumerate(names):
            if n in names[:i]:
                raise ValueError(f"@steps.{i}.name: {n!r} is used by an earlier step")
        return self

    @property
    def stages(self) -> list["Scenario"]:
        """The stages' scenarios (built when the scenario is validated)."""
        return self._stages

    @property
    def headroom(self) -> list[list[tuple[str, float, float, str]]]:
        """Per stage, the headroom checks (what, capacity, load, unit) of :func:`twin.scenario.headroom.checks`."""
        return self._headroom

    def reached(self, horizon_days: float) -> list[Step]:
        """The steps before the horizon (a shorter horizon, ``--set horizon_days=365``, runs the stages within
        it: the later steps are not reached)."""
        return [s for s in self.steps if s.day < horizon_days]

    def bounds_days(self, horizon_days: float) -> list[tuple[float, float]]:
        """(start, end) day of each stage within the horizon."""
        days = [0.0] + [s.day for s in self.reached(horizon_days)] + [horizon_days]
        return [(days[i], days[i + 1]) for i in range(len(days) - 1)]


def capture_base(data: Any) -> Any:
    """Keep the document as written (before any validator derives a value) as ``timeline.base``: each
    stage is the steps applied to it and validated afresh, so that what follows the node (rails, parts per
    GPU, training draw, room resistance) follows the new node."""
    if not isinstance(data, dict) or not isinstance(data.get("timeline"), dict) or "base" in data["timeline"]:
        return data
    base = {k: copy.deepcopy(v) for k, v in data.items() if k not in ("timeline", "uncertainty")}
    return {**data, "timeline": {**data["timeline"], "base": base}}


def _set_path(doc: dict[str, Any], path: str, value: Any, where: str) -> None:
    keys = path.split(".")
    cur: Any = doc
    for i, k in enumerate(keys[:-1]):
        if isinstance(cur, list):
            if not k.isdigit() or int(k) >= len(cur):
                raise ValueError(f"@{where}: {'.'.join(keys[:i + 1])}: no list item {k}")
            cur = cur[int(k)]
            continue
        if not isinstance(cur, dict):
            raise ValueError(f"@{where}: {'.'.join(keys[:i])} is not a mapping")
        if cur.get(k) is None:
            cur[k] = {}
        cur = cur[k]
    last = keys[-1]
    if isinstance(cur, list):
        if not last.isdigit() or int(last) >= len(cur):
            raise ValueError(f"@{where}: no list item {last}")
        cur[int(last)] = copy.deepcopy(value)
    elif isinstance(cur, dict):
        cur[last] = copy.deepcopy(value)
    else:
        raise ValueError(f"@{where}: {'.'.join(keys[:-1])} is not a mapping")


def _get(obj: Any, path: str) -> Any:
    for k in path.split("."):
        if obj is None:
            return None
        obj = getattr(obj, k, None)
    return obj


def stage_documents(tl: Timeline, seed: int, horizon_days: float,
                    resolved: list["Scenario"]) -> list[dict[str, Any]] | None:
    """The document of the next stage, given the stages ``resolved`` so far (stage k needs stage k − 1's
    resolved sizes): returns ``[doc]`` for stage ``len(resolved)``, None when every stage is built."""
    k = len(resolved)
    bounds = tl.bounds_days(horizon_days)
    if k >= len(bounds):
        return None
    assert tl.base is not None
    doc = copy.deepcopy(tl.base)
    for j, step in enumerate(tl.reached(horizon_days)[:k]):
        cl = doc.setdefault("cluster", {})
        if step.add_racks:
            racks = cl.get("racks")
            if type(racks) is not int:
                raise ValueError(f"@steps.{j}.add_racks: cluster.racks must be given as a whole number")
            cl["racks"] = racks + step.add_racks
        for path, value in step.set.items():
            if path.split(".")[0] in ("timeline", "horizon_days", "seed", "name"):
                raise ValueError(f"@steps.{j}.set.{path}: a step cannot set {path.split('.')[0]}")
            _set_path(doc, path, value, f"steps.{j}.set.{path}")
    if k >= 1:
        step = tl.steps[k - 1]
        prev = resolved[k - 1]
        if step.jobs_follow:
            _follow(doc, prev, k - 1)
        for path in PINNED:
            if any(path == p or path.startswith(p + ".") for p in step.set):
                continue  # the step sets it, or the section holding it
            old = _get(prev, path)
            if path == "power.ups.capacity_kw" and prev.power is not None and prev.power.ups is not None and old is None:
                old = prev.cluster.full_power_w() / 1000.0  # the UPS as sized (each pool's nodes at their own)
            section = path.rsplit(".", 1)[0]
            if old is None or _get_doc(doc, section) is None:
                continue
            _set_path(doc, path, float(old), f"steps.{k - 1}")
        npr = prev.cluster.nodes_per_rack
        new_npr = doc["cluster"].get("nodes_per_rack", npr)
        if step.add_racks and prev.cluster.pools and doc_rack_types(doc, prev.cluster.node.type) is not None:
            base_now = doc["cluster"]["racks"] - sum(p["racks"] for p in doc["cluster"].get("pools") or [])
            if base_now != prev.cluster.racks - sum(p.racks for p in prev.cluster.pools):
                raise ValueError(f"@steps.{k - 1}.add_racks: the hall has node pools (cluster.pools take its last "
                                 "racks): racks added to cluster.node would move them; allowed: add racks to a pool "
                                 "(add_racks with that pool's racks raised by as many, the last pool)")
        racks_now = doc["cluster"]["racks"]
        if step.install.racks == "added" and step.add_racks:
            wins = step.install.windows(racks_now - step.add_racks, step.add_racks, new_npr)
        elif step.install.racks == "all":
            wins = step.install.windows(0, racks_now, new_npr)
        elif step.install.racks == "replaced":
            wins = step.install.windows_of(replaced_racks(prev, doc), new_npr)
        else:
            wins = []
        if wins:
            doc["installation"] = {"step": step.name, "windows": wins}
    start, end = bounds[k]
    doc["horizon_days"] = end - start
    doc["seed"] = (seed + k * STAGE_SEED_STEP) % 2**63 if k else seed
    return [doc]


def rack_types(sc: "Scenario") -> list[str]:
    """The node type of each rack of ``sc`` (``cluster.node.type``, or its pool's: ``cluster.pools``)."""
    npr = sc.cluster.nodes_per_rack
    return [node.type for a, b, node in sc.cluster.node_pools() for _ in range(a // npr, b // npr)]


def doc_rack_types(doc: dict[str, Any], default_type: str) -> list[str] | None:
    """The node type of each rack of a stage's document, before it is validated (None when the cluster's racks
    or pools are not well formed: the stage's own validation says what is wrong); ``default_type``: the
    schema's default of ``cluster.node.type``."""
    cl = doc.get("cluster")
    if not isinstance(cl, dict) or type(cl.get("racks")) is not int:
        return None
    node = cl.get("node")
    base = node.get("type", default_type) if isinstance(node, dict) else None
    pools = cl.get("pools") or []
    if not isinstance(base, str) or not isinstance(pools, list):
        return None
    out: list[str] = []
    for p in pools:
        if not (isinstance(p, dict) and type(p.get("racks")) is int and isinstance(p.get("node"), dict)
                and isinstance(p["node"].get("type"), str)):
            return None
        out += [p["node"]["type"]] * p["racks"]
    if len(out) > cl["racks"]:
        return None
    return [base] * (cl["racks"] - len(out)) + out


def replaced_racks(prev: "Scenario", doc: dict[str, Any]) -> list[int]:
    """The racks of the stage before (``prev``) whose node type the stage's document ``doc`` changes."""
    now = doc_rack_types(doc, type(prev.cluster.node).model_fields["type"].default)
    if now is None:
        return []
    return [r for r, (a, b) in enumerate(zip(rack_types(prev), now)) if a != b]


def _follow(doc: dict[str, Any], prev: "Scenario", j: int) -> None:
    """Scale the listed jobs' GPUs by the cluster's growth from the stage before (``jobs_follow``)."""
    cl = doc.get("cluster", {})
    node = cl.get("node", {}) if isinstance(cl, dict) else {}
    racks, npr = cl.get("racks"), cl.get("nodes_per_rack", prev.cluster.nodes_per_rack)
    gpn = node.get("gpus", prev.cluster.node.gpus) if isinstance(node, dict) else prev.cluster.node.gpus
    if type(racks) is not int or type(npr) is not int or type(gpn) is not int:
        return  # the stage's own validation reports the cluster
    ratio = racks * npr * gpn / (prev.cluster.n_nodes * prev.cluster.node.gpus)
    jobs = (doc.get("workload") or {}).get("jobs")
    if not isinstance(jobs, list):
        raise ValueError(f"@steps.{j}.jobs_follow: the scenario lists no jobs (workload.jobs)")
    for i, job in enumerate(jobs):
        if isinstance(job, dict) and type(job.get("gpus")) is int:
            job["gpus"] = max(1, int(job["gpus"] * ratio // gpn)) * gpn


def _get_doc(doc: dict[str, Any], path: str) -> Any:
    cur: Any = doc
    for k in path.split("."):
        if not isinstance(cur, dict):
            return None
        cur = cur.get(k)
    return cur


class Window(Strict):
    """One drain of the installation work: ``nodes`` nodes from ``first_node`` out from ``start_h`` for
    ``duration_h`` hours (a planned drain, ``planned:installation``)."""

    start_h: NonNegF = Field(description="Start, hours from the start of the run.")
    first_node: NonNegInt = Field(description="First node drained (node index).")
    nodes: PosInt = Field(description="Nodes drained, from first_node.")
    duration_h: Annotated[float, Field(gt=0, allow_inf_nan=False)] = Field(description="Length of the drain, hours.")


class Installation(Strict):
    """Drains for installation work (written by a timeline into its stages, or given by hand): each window
    takes its nodes down as a planned drain for its duration."""

    step: str = Field("installation", description="What is installed (labels and metrics).")
    windows: list[Window] = Field(default_factory=list, description="The drains.")

    def check_against(self, sc: "Scenario") -> None:
        n = sc.cluster.n_nodes
        for i, w in enumerate(self.windows):
            if w.first_node + w.nodes > n:
                raise ValueError(f"@installation.windows.{i}: nodes {w.first_node}..{w.first_node + w.nodes - 1} "
                                 f"beyond the cluster's {n} nodes")

    def node_hours(self, horizon_h: float) -> float:
        """Node-hours drained within ``horizon_h``."""
        return float(sum(w.nodes * max(0.0, min(w.start_h + w.duration_h, horizon_h) - w.start_h)
                         for w in self.windows if w.start_h < horizon_h))



def build_stages(sc: "Scenario", model: type["Scenario"]) -> None:
    """Validate every stage of ``sc.timeline`` and check its headroom (a ValueError ``@timeline...`` names
    the step whose stage is wrong, or, with ``on_exceed: refuse``, what a step runs out of)."""
    from pydantic import ValidationError

    from twin.scenario.headroom import checks, shortfalls

    tl = sc.timeline
    assert tl is not None
    stages: list["Scenario"] = []
    heads: list[list[tuple[str, float, float, str]]] = []
    while True:
        try:
            docs = stage_documents(tl, sc.seed, sc.horizon_days, stages)
        except ValueError as exc:
            raise ValueError("@timeline." + str(exc).lstrip("@")) from None
        if docs is None:
            break
        k = len(stages)
        where = f"timeline.steps.{k - 1}" if k else "timeline"
        try:
            st = model.model_validate(docs[0], strict=True)
        except ValidationError as exc:
            err = exc.errors(include_url=False)[0]
            loc = ".".join(str(x) for x in err["loc"])
            msg = str(err["msg"]).removeprefix("Value error, ")
            if msg.startswith("@"):
                loc, _, msg = msg[1:].partition(": ")
            raise ValueError(f"@{where}: the stage from this step is not a valid scenario: {loc}: {msg}") from None
        stages.append(st)
        found = checks(st, tl.hall_m2)
        heads.append(found)
        short = shortfalls(found)
        if k and short and tl.on_exceed == "refuse":
            raise ValueError(f"@{where}: step {tl.steps[k - 1].name!r} exceeds the hall's headroom: "
                             f"{'; '.join(short)} (timeline.on_exceed: refuse)")
    tl._stages = stages
    tl._headroom = heads
