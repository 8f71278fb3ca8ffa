"""Temperature-accelerated ageing (model.md §2; sources-realism §3): a part's effective age grows at
AF times its reference rate and the part fails when it reaches its drawn life, so at a constant
temperature its MTBF is MTBF_ref / AF and a temperature change carries the age reached. This room owns
the failure clock of every aged population (the population's AF = 1 schedule is cancelled).

Three laws, one clock:

* ``cooling.ageing`` (per part): AF = 2^((T − T_ref)/doubling_c), T the GPU's steady state or the
  node's inlet (air or coolant);
* ``cooling.heat_ageing.arrhenius`` (per part, off by default): AF = exp[(Ea/k)(1/T_ref − 1/T)] on the
  GPU's steady-state junction temperature;
* ``cooling.heat_ageing.xfactor`` (every other hardware node part): AF = X(T_air)/X(T_ref), the ASHRAE
  X-factor of the node's inlet air (its zone's held supply plus the node's offsets). These records
  (``aged_air``) change only when a zone's held supply changes (``AirRooms._zone_step``), never on a load
  change, so they stay off the GPU hot path.

The inlet of a part (the X-factor's, and ``temperature: inlet``'s) in an air hall with inlet offsets
(issue 23): a part counted one per GPU (``per: gpu``; a node part whose count equals the GPU count, slot
k at GPU k) sees its GPU's own inlet, the supply plus the node's rack-height rise and recirculation plus
the chassis preheat of its slot; every other part sees its node's inlet, the supply plus the rack-height
rise and recirculation (the preheat is inside the chassis, downstream of the node's inlet).
"""

from __future__ import annotations

from typing import Any, TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from twin import kernels_lazy
from twin.model.cooling.common import _EPS_H, INF
from twin.model.cooling.arrays import CoolingArrays, CoolingParams
from twin.physics import heat_ageing as hx
from twin.physics import thermal as phys

if TYPE_CHECKING:  # pragma: no cover
    from twin.model.cooling.ports import EvaporativePort
    from collections.abc import Mapping
    from twin.model.engine import Engine
    from twin.model.parts import PartPopulation

# the compiled kernel, imported at its first use (twin.kernels_lazy: a run without ageing records imports no numba for it)
kernels_ageing = kernels_lazy.module("twin.kernels_ageing", globals(), "kernels_ageing")



class Ageing:
    """Room of the cooling component: ageing clocks of the accelerated part populations."""

    evaporative: EvaporativePort  # wired by Thermal

    def __init__(self, params: CoolingParams, arrays: CoolingArrays, engine: Engine,
                 parts: Mapping[str, PartPopulation]) -> None:
        """One record per aged population: its parts' node (and GPU unit), law, inlet offset, effective age
        and failure time. ``aged``: laws on the GPU's temperature or the GPU inlet (updated with the GPUs);
        ``aged_air``: the X-factor on the node's inlet air (updated when a zone's held supply changes)."""
        self.params = params
        self.arrays = arrays
        self.engine = engine
        self.parts = parts
        self.aged: list[dict[str, Any]] = []
        self.aged_air: list[dict[str, Any]] = []
        self._age_timer = self.engine.timer(self._age_wake)
        if not self.params.on:
            return
        spec = self.params.spec
        for name, ag in spec.ageing.items():
            self.aged.append(self._age_record(
                name, ag.temperature,
                lambda t, r=ag.t_ref_c, d=ag.doubling_c: phys.acceleration_factor(t, r, d)))
        for name, ar in spec.heat_ageing.arrhenius.items():
            self.aged.append(self._age_record(
                name, "gpu", lambda t, r=ar.t_ref_c, e=ar.activation_ev: hx.arrhenius_af(t, r, e)))
        xf = spec.heat_ageing.xfactor
        if xf.enabled and self.params.air is not None:
            taken = set(spec.ageing) | set(spec.heat_ageing.arrhenius)
            node_parts = self.params.sc.cluster.node.parts
            names = xf.parts if xf.parts is not None else [
                n for n, p in node_parts.items() if p.effect != "transient" and n not in taken]
            table = [(p[0], p[1]) for p in xf.table]
            xaf = hx.xfactor_af_of(xf.reference_inlet_c, table)  # (hx.xfactor_af, its table and reference once)
            for name in names:
                self.aged_air.append(self._age_record(
                    name, "air",  # × the humidity factor of evaporative units outside the envelope (issue 42)
                    lambda t, f=xaf: f(t) * self.evaporative.hum_af_cur))
        # every record's failure times as views of one array, in the order _age_wake takes them (aged, then
        # aged_air): a wake-up finds the due parts and the next failure in one pass each
        recs = self.aged + self.aged_air
        self._tfail = np.concatenate([a["tfail"] for a in recs]) if recs else np.empty(0)
        self._rec_end: list[int] = []
        o = 0
        for a in recs:
            n = len(a["tfail"])
            a["tfail"] = self._tfail[o:o + n]
            o += n
            self._rec_end.append(o)

    def _age_record(self, name: str, temperature: str, af_of: Any) -> dict[str, Any]:
        u, g = self.params.units_per_node, self.params.gpus_per_node
        pop = self.parts[name]
        per = pop.per_node
        idx = np.arange(pop.n)
        node = idx // per
        gpu = node * u + ((idx % per) % g) * u // g if per == g else None
        # the part's inlet above its zone's held supply (air or inlet laws; see the module docstring)
        off = None
        if temperature in ("air", "inlet"):
            if gpu is not None and self.arrays.toff is not None:  # one per GPU (u = g here): its GPU's own inlet
                off = self.arrays.toff[gpu]
            elif self.arrays.noff is not None:
                off = self.arrays.noff[node]
        return {
            "pop": pop, "temperature": temperature, "af_of": af_of, "per": per, "node": node, "gpu": gpu,
            "off": off, "age": np.zeros(pop.n), "t": np.zeros(pop.n), "af": np.ones(pop.n),
            "tfail": np.full(pop.n, INF), "life": np.zeros(pop.n),
        }

    def start(self) -> None:
        for a in self.aged + self.aged_air:
            pop = a["pop"]
            a["life"][:] = pop.life_h
            for i in range(pop.n):  # the population scheduled AF = 1 failures: cancel them, we own the clock
                pop.reschedule(i, INF)
        if self.aged_air:
            self.air_update(np.arange(self.params.n_nodes, dtype=np.int64))

    def _age_temps(self, a: dict[str, Any], pidx: NDArray[np.int64]) -> NDArray[np.float64]:
        nodes = a["node"][pidx]
        t: NDArray[np.float64]
        if a["temperature"] == "air":
            t_air = self.arrays.z_held[self.arrays.zone_of[nodes]]
            t = t_air if a["off"] is None else t_air + a["off"][pidx]
        elif a["temperature"] == "inlet":
            t = self.arrays.inlet[nodes] if a["off"] is None else self.arrays.inlet[nodes] + a["off"][pidx]
        elif a["gpu"] is not None:
            t = self.arrays.tss[a["gpu"][pidx]]
        else:
            t = self.arrays.tss.reshape(-1, self.params.units_per_node)[nodes].max(axis=1)
        return t

    def update(self, nodes: NDArray[np.int64], only: list[dict[str, Any]] | None = None) -> None:
        """Re-rate the aged parts of ``nodes`` (distinct) at their temperatures now (all records, or ``only``):
        effective ages to now at the old factors, the new factors and failure times, and the next wake-up."""
        now = self.engine.now
        m = INF
        n0 = int(nodes[0]) if len(nodes) == 1 else -1
        for a in self.aged if only is None else only:
            per = a["per"]
            # (one node, a part restored: its parts are a run of indices)
            pidx = np.arange(n0 * per, n0 * per + per) if n0 >= 0 else (nodes[:, None] * per + np.arange(per)).ravel()
            af = np.asarray(a["af_of"](self._age_temps(a, pidx)), dtype=np.float64)
            if af.shape != pidx.shape:
                af = np.broadcast_to(af, pidx.shape).copy()
            # each part's age to now at its old factor, its new factor and failure time (+inf unless healthy),
            # in one compiled loop (twin.kernels_ageing.age_parts: numpy's age += af·(now − t), af = new,
            # phys.accelerated_failure_time_h, np.where(healthy, tf, inf), tf.min() on the gathered parts)
            m = min(m, kernels_ageing.age_parts(pidx, now, a["age"], a["t"], a["af"], af, a["life"], a["pop"].healthy,
                                                a["tfail"]))
        if m < self._age_wake_t:
            self._schedule_age(m)

    @property
    def _age_wake_t(self) -> float:
        """Time (h) of the pending ageing wake-up, INF when none."""
        return self._age_timer.due_h if self._age_timer.pending else INF

    def _schedule_age(self, t: float) -> None:
        if t >= self.params.horizon_h:
            return
        self._age_timer.set(t)

    def _age_wake(self) -> None:
        now = self.engine.now
        m = INF
        tf = self._tfail  # (every record's, in record order: see the constructor)
        due = np.flatnonzero(tf <= now + _EPS_H).tolist()
        if due:
            recs = self.aged + self.aged_air
            j = 0
            for i in due:  # (in the order of the records, then of their parts)
                while i >= self._rec_end[j]:
                    j += 1
                tf[i] = INF
                first = self._rec_end[j] - len(recs[j]["tfail"])
                recs[j]["pop"].reschedule(i - first, now)  # fails now through the population's own path
        if len(tf):
            m = float(tf.min())
        if m < self._age_wake_t:
            self._schedule_age(m)

    def _aged_of(self, pop: Any) -> dict[str, Any] | None:
        for a in self.aged + self.aged_air:
            if a["pop"] is pop:
                return a
        return None

    def on_part_failed(self, pop: Any, idx: int) -> None:
        a = self._aged_of(pop)
        if a is not None:
            now = self.engine.now
            a["age"][idx] += a["af"][idx] * (now - a["t"][idx])
            a["t"][idx] = now
            a["tfail"][idx] = INF

    def on_part_restored(self, pop: Any, idx: int) -> None:
        a = self._aged_of(pop)
        if a is None:
            return
        now = self.engine.now
        a["life"][idx] = pop.life_h[idx]
        pop.reschedule(idx, INF)  # cancel the population's AF = 1 schedule of the fresh part
        a["age"][idx] = 0.0
        a["t"][idx] = now
        node = np.array([idx // a["per"]], dtype=np.int64)
        self.update(node, only=[a])

    def air_update(self, nodes: NDArray[np.int64]) -> None:
        """The held supply of ``nodes``' zone changed: re-rate their X-factor parts."""
        if self.aged_air:
            self.update(nodes, only=self.aged_air)
