"""Node pools: a hall of two (or more) GPU generations (``cluster.pools``, issue 52).

The racks of a hall hold ``cluster.node`` unless a pool gives them another node type: each pool takes the
last ``racks`` racks of the hall, the pools in the order listed after the racks of ``cluster.node`` (pool 0),
and states only what its node changes (:class:`PoolNode`): the type (its capital line), the GPUs' and the
node's power figures, its nameplate, its peak FLOP/s and the failure law of any node part. Everything else
is the hall's node's: the GPUs per node, the parts and their counts, repairs, U height and fans.

A pool's node is resolved as ``cluster.node`` as written with the pool's fields over it
(:func:`resolve_pool_node`) and validated as a node of its own. The model reads the pools through
:meth:`twin.scenario.schema.Cluster.node_pools`. The power chain and the site limits take each node's pool's
power figures (``twin.model.power_figures``), the thermal model and the server fans likewise
(``twin.model.cooling.arrays.pool_thermal``, ``twin.model.fan_law.pool_fan_numbers``); what still holds one node
type's figures refuses a pool that changes them (:func:`pool_refusals`), naming the field.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field, model_validator

from twin.scenario.base import Dist, PosInt, Strict

if TYPE_CHECKING:  # pragma: no cover
    from twin.scenario.schema import Cluster, Node, Scenario

PosW = Annotated[float, Field(gt=0, allow_inf_nan=False)]
NonNegW = Annotated[float, Field(ge=0, allow_inf_nan=False)]

POWER_FIELDS = ("gpu.idle_w", "gpu.train_w", "gpu.tdp_w", "gpu.min_w", "gpu.speed_alpha", "non_gpu_w",
                "non_gpu_idle_w", "nameplate_w")
"""The node power figures a pool may change: the power chain, the thermal model, the operator's cooling response
and the server fans take each node's pool's own; a hybrid hall's heat split holds one node type's and refuses a
pool that changes them (:func:`pool_refusals`)."""

HEAT_SINK = ("r_air_c_per_w", "r_cold_plate_c_per_w")
"""A pool's GPU heat sink (``cluster.pools.<k>.node.gpu``): read by the thermal model in place of
``cooling.gpu``'s (:func:`pool_heat_sink`), not a figure of the node."""

_NOT_POOLED = {
    "gpus": "the GPUs per node are the hall's (cluster.node.gpus): a job's GPUs, the fabric's rails and "
            "per-GPU parts follow them",
    "u_height": "a pool's node takes the hall's node's U height (cluster.node.u_height: the floor and rack "
                "checks hold one)",
    "fans": "the server fans are the hall's node's (cluster.node.fans)",
}


class PoolGpu(Strict):
    """The GPU power figures a pool changes (each null: the hall's node's, ``cluster.node.gpu``)."""

    tdp_w: PosW | None = Field(None, description="Board power at full utilisation, W (e.g. 1,000 for a DGX "
                               "B200-class GPU, NVIDIA DGX B200 user guide; range 700-1,200). null: cluster.node's.")
    idle_w: NonNegW | None = Field(None, description="GPU power when idle, W (assumption; range 60-200). "
                                   "null: cluster.node's.")
    min_w: PosW | None = Field(None, description="Lowest power cap, W (assumption: the generation's lowest "
                               "settable board power limit; range 100-400). null: cluster.node's.")
    train_w: PosW | None = Field(None, description="GPU draw at full training utilisation, W, at most tdp_w "
                                 "(assumption; range 0.8-1 x tdp_w). null: cluster.node's as written (set it "
                                 "with tdp_w when the hall's node sets train_w).")
    speed_alpha: Annotated[float, Field(gt=0, le=5, allow_inf_nan=False)] | None = Field(
        None, description="Speed exponent under a power cap (assumption, model.md §3; range 0.3-1). "
                          "null: cluster.node's.")
    r_air_c_per_w: PosW | None = Field(None, description="The pool's GPU heat sink in an air-cooled hall: "
                                       "junction-to-inlet thermal resistance, °C/W, read by the thermal model "
                                       "(e.g. 0.0525 for a 10U DGX B200-class heat sink keeping 76.5 °C at 1,000 W "
                                       "in a 24 °C room: assumption, range 0.04-0.09). null: cooling.gpu.r_air_c_per_w.")
    r_cold_plate_c_per_w: PosW | None = Field(None, description="The pool's GPU cold plate: junction-to-coolant "
                                              "thermal resistance with flow, °C/W, read by the thermal model in a "
                                              "liquid hall (assumption, range 0.02-0.05). null: "
                                              "cooling.gpu.r_cold_plate_c_per_w.")


class PoolPart(Strict):
    """A node part's failure law in a pool (its count, effect and repair are the hall's node's)."""

    failure: Dist = Field(description="Time to failure of the part in this pool's nodes (a new generation's "
                                      "GPU or HBM: e.g. an exponential of another mean_h; source or assumption "
                                      "as for cluster.node.parts.<p>.failure).")


class PoolNode(Strict):
    """What a pool's node changes from ``cluster.node`` (each null or absent: the hall's node's)."""

    type: str = Field(description="Node type label of the pool, another than cluster.node.type and the other "
                                  "pools' (its price: costs.capital.node.<type>; a rack whose type changes at a "
                                  "timeline step is a replaced rack).")
    gpu: PoolGpu = Field(default_factory=PoolGpu, description="The pool's GPU power figures.")
    non_gpu_w: NonNegW | None = Field(None, description="Node load besides the GPUs at full utilisation, W "
                                      "(e.g. 4,500 for a DGX B200-class node: assumption, range 3,000-6,000). "
                                      "null: cluster.node's.")
    non_gpu_idle_w: NonNegW | None = Field(None, description="Node load besides the GPUs at zero utilisation, W "
                                           "(assumption). null: cluster.node's as written, else non_gpu_w.")
    nameplate_w: PosW | None = Field(None, description="The pool node's rated maximum input power, W (DGX B200: "
                                     "14.3 kW, NVIDIA DGX B200 user guide; range 10-15 kW). null: cluster.node's "
                                     "as written, else non_gpu_w + gpus x gpu.tdp_w.")
    peak_tflops: PosW | None = Field(None, description="Peak dense TFLOP/s per GPU of the pool's generation (DGX "
                                     "B200 bf16 about 2,250, NVIDIA; range 989-2,500). A node runs at its peak "
                                     "over the fastest pool's (the `generation` speed cap): state the jobs' work "
                                     "at the fastest generation. null: cluster.node.peak_tflops.")
    parts: dict[str, PoolPart] = Field(default_factory=dict, description="Node parts whose failure law differs "
                                       "in this pool, by name (a name of cluster.node.parts).")

    @model_validator(mode="before")
    @classmethod
    def _not_pooled(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for key, why in _NOT_POOLED.items():
                if key in data:
                    raise ValueError(f"@{key}: a pool cannot change it: {why}")
        return data


class Pool(Strict):
    """A set of racks holding another node type (a second GPU generation): the last ``racks`` racks."""

    name: str = Field(min_length=1, max_length=40, pattern=r"^[A-Za-z][A-Za-z0-9_]*$",
                      description="The pool's name (letters, digits and _).")
    racks: PosInt = Field(description="Racks of the hall holding this pool's node: the last racks of the hall, "
                                      "the pools in the order listed after cluster.node's racks.")
    node: PoolNode = Field(description="What the pool's node changes from cluster.node (its type at least).")


def resolve_pool_node(base: Node, pool: PoolNode, node_cls: type[Node], gpu_cls: type[Any]) -> Node:
    """The pool's node: ``base`` as written (its derived values derived afresh) with the pool's fields over
    it, validated as a node. Raises ValueError (``@field: ...``) when the pool names an unknown part or the
    merged node is not valid."""
    given: dict[str, Any] = {k: getattr(base, k) for k in base.model_fields_set if k not in ("gpu", "parts")}
    for k in ("type", "non_gpu_w", "non_gpu_idle_w", "nameplate_w", "peak_tflops"):
        v = getattr(pool, k)
        if v is not None:
            given[k] = v
    gpu = base.gpu.model_dump(exclude_unset=True)
    gpu.update(pool.gpu.model_dump(exclude_none=True, exclude=set(HEAT_SINK)))  # (the heat sink: the cooling's)
    given["gpu"] = gpu_cls.model_validate(gpu)
    parts = dict(base.parts)
    for name, pp in pool.parts.items():
        if name not in parts:
            raise ValueError(f"@parts.{name}: no node part {name!r} in cluster.node.parts; allowed: {sorted(parts)}")
        parts[name] = type(parts[name]).model_validate({**parts[name].model_dump(exclude_unset=True),
                                                         "failure": pp.failure})
    given["parts"] = parts
    return node_cls.model_validate(given)


def changed_fields(base: Node, node: Node) -> list[str]:
    """The :data:`POWER_FIELDS` in which ``node`` differs from ``base`` (resolved values)."""
    out = []
    for f in POWER_FIELDS:
        a: Any = base
        b: Any = node
        for k in f.split("."):
            a, b = getattr(a, k), getattr(b, k)
        if f == "nameplate_w":
            a, b = base.rated_w, node.rated_w
        if a != b:
            out.append(f)
    return out


def pool_refusals(sc: Scenario) -> None:
    """Refuse what the model cannot run in a pooled hall: a pool that changes a power figure (``POWER_FIELDS``)
    in a hybrid hall (its air and liquid heat split holds one node type's figures; the power chain, the thermal
    model and the server fans take each pool's own), and a pool that changes the failure law of a
    part with common-cause failures or one the cooling model ages.
    Raises ValueError ``@cluster.pools.<k>.node.<field>: ...``."""
    cl = sc.cluster
    for k, pool in enumerate(cl.pools):
        node = cl.pool_node(k + 1)
        where = f"@cluster.pools.{k}.node"
        changed = changed_fields(cl.node, node)
        if changed and sc.cooling is not None and sc.cooling.type == "hybrid":
            raise ValueError(f"{where}.{changed[0]}: a pool that changes the node's power figures cannot run in a "
                             "hybrid hall (its air and liquid heat split the site's power by one node type's "
                             "non-GPU load; docs/guide/timeline.md, Limits); allowed: the same power figures as "
                             "cluster.node, or cooling.type air or liquid")
        aged: set[str] = set()
        if sc.cooling is not None and sc.cooling.thermal:
            aged |= set(sc.cooling.ageing) | set(sc.cooling.heat_ageing.arrhenius)
            xf = sc.cooling.heat_ageing.xfactor
            if xf.enabled and sc.cooling.air is not None:
                aged |= set(xf.parts) if xf.parts is not None else set(cl.node.parts)
        for name in pool.node.parts:
            if cl.node.parts[name].common_cause_beta > 0:
                raise ValueError(f"{where}.parts.{name}.failure: a part with common-cause failures "
                                 f"(common_cause_beta > 0) has one failure law for the hall; allowed: parts "
                                 "with common_cause_beta 0")
            if name in aged:
                raise ValueError(f"{where}.parts.{name}.failure: the cooling model ages this part with one failure "
                                 "law for the hall (cooling.ageing, cooling.heat_ageing); allowed: parts it "
                                 "does not age")


def pool_heat_sink(cluster: Cluster, name: str, hall_c_per_w: float) -> list[tuple[int, int, float]]:
    """Each pool's nodes [start, end) and its GPU heat sink's resistance ``name`` (one of :data:`HEAT_SINK`), °C/W:
    the pool's own where it states one, else ``hall_c_per_w`` (``cooling.gpu``'s)."""
    out = []
    for k, (a, b, _) in enumerate(cluster.node_pools()):
        r = getattr(cluster.pools[k - 1].node.gpu, name) if k else None
        out.append((a, b, float(hall_c_per_w if r is None else r)))
    return out


def check_cluster_pools(cluster: Cluster) -> None:
    """The pools fit the hall: names unique, at least one rack left to ``cluster.node``."""
    names = [p.name for p in cluster.pools]
    for k, name in enumerate(names):
        if name in names[:k]:
            raise ValueError(f"@pools.{k}.name: {name!r} is the name of another pool")
    types = [cluster.node.type] + [p.node.type for p in cluster.pools]
    for k, t in enumerate(types[1:]):
        if t in types[:k + 1]:
            raise ValueError(f"@pools.{k}.node.type: {t!r} is cluster.node's or another pool's type; a pool is "
                             "another node type: give it its own type")
    taken = sum(p.racks for p in cluster.pools)
    if taken >= cluster.racks:
        raise ValueError(f"@pools: the pools take {taken} racks of the hall's {cluster.racks}; cluster.node must "
                         "keep at least one rack (to replace every rack, set cluster.node)")


def job_pool_index(cluster: Cluster, name: str) -> int | None:
    """The pool a job's ``pool`` names (``workload.jobs.<i>.pool``, ``workload.synthetic.pool``,
    ``workload.trace.pool``): 0 for ``cluster.node.type``, k for ``cluster.pools[k - 1]``'s name or node type;
    None when no pool has that name or type."""
    if name == cluster.node.type:
        return 0
    for k, pool in enumerate(cluster.pools):
        if name in (pool.name, pool.node.type):
            return k + 1
    return None


def job_pool_names(cluster: Cluster) -> list[str]:
    """What a job's ``pool`` may name: ``cluster.node.type``, then each pool's name and node type."""
    out = [cluster.node.type]
    for pool in cluster.pools:
        out += [pool.name] if pool.name == pool.node.type else [pool.name, pool.node.type]
    return out


def job_pool_nodes(cluster: Cluster, name: str | None) -> tuple[int, int]:
    """The nodes [start, end) of the pool a job's ``pool`` names (the whole hall for null). Raises ValueError
    (no ``@`` path: the caller names the field) when no pool has that name or type."""
    if name is None:
        return 0, cluster.n_nodes
    k = job_pool_index(cluster, name)
    if k is None:
        raise ValueError(f"no node pool or node type {name!r} in this hall; allowed: {job_pool_names(cluster)} "
                         "or null (any node)")
    a, b, _ = cluster.node_pools()[k]
    return a, b


JOB_POOL_DOC = ("The node pool the job must run on, as a real mixed-generation cluster puts each GPU type in its own "
                "partition: cluster.node.type, or a pool's name or node type (cluster.pools). The scheduler starts "
                "it, replaces its failed nodes and grows it only on that pool's nodes, and counts only them in its "
                "fit test and backfill reservation; on the fastest pool's nodes it runs without the `generation` "
                "speed cap. null (default): any node (a job may span pools and runs at its slowest node's pace). A "
                "choice of the scenario's partitions, not a measured value: no source applies.")
"""The description of a job's ``pool`` (``workload.jobs.<i>``, ``workload.synthetic``, ``workload.trace``)."""


def check_job_pools(workload: Any, sc: Scenario) -> None:
    """Each job's ``pool`` names a pool of the hall, and the pool holds the job: its nodes (and its phases',
    and each size of the synthetic stream) at most the pool's nodes. Raises ValueError ``@workload.<...>.pool:
    ...`` or ``@workload.<...>.gpus: ...``."""
    cl = sc.cluster
    gpn = cl.node.gpus
    asks: list[tuple[str, str | None, list[tuple[str, int]]]] = []
    for i, job in enumerate(workload.jobs):
        sizes = [(f"workload.jobs.{i}.gpus", job.gpus)]
        sizes += [(f"workload.jobs.{i}.phases.{k}.gpus", ph.gpus) for k, ph in enumerate(job.phases or [])
                  if ph.gpus is not None]
        asks.append((f"workload.jobs.{i}", job.pool, sizes))
    if workload.synthetic is not None:
        asks.append(("workload.synthetic", workload.synthetic.pool,
                     [("workload.synthetic.gpus.values", v) for v in workload.synthetic.gpus.values]))
    if workload.trace is not None:
        asks.append(("workload.trace", workload.trace.pool, []))
    for where, name, sizes in asks:
        if name is None:
            continue
        try:
            a, b = job_pool_nodes(cl, name)
        except ValueError as e:
            raise ValueError(f"@{where}.pool: {e}") from None
        for path, gpus in sizes:
            need = -(-gpus // gpn)
            if need > b - a:
                raise ValueError(f"@{path}: {gpus} GPUs need {need} nodes but pool {name!r} ({where}.pool) has only "
                                 f"{b - a}; allowed: at most {(b - a) * gpn} GPUs, or another pool")


def job_pool_rooms(cluster: Cluster, hot_spares: int) -> dict[str, int]:
    """The nodes a job of each pool a ``pool`` may name can have (its pool's, at most the hall's schedulable
    nodes: all but ``hot_spares``), by name or type (:func:`job_pool_names`)."""
    bounds = cluster.node_pools()
    out = {}
    for name in job_pool_names(cluster):
        k = job_pool_index(cluster, name)
        assert k is not None
        out[name] = min(bounds[k][1] - bounds[k][0], cluster.n_nodes - hot_spares)
    return out
