"""Temperature-accelerated ageing (model.md §2): parts listed under ``cooling.ageing`` age at
AF = 2^((T − T_ref)/doubling_c) times their reference rate, T their GPU's steady state or the node's
inlet; this room owns their failure clock (the population's AF = 1 schedule is cancelled)."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from twin.model.cooling.common import _EPS_H, INF
from twin.model.cooling.state import CoolingState
from twin.physics import thermal as phys


class Ageing(CoolingState):
    """Room of the cooling component: ageing clocks of the accelerated part populations (a mixin of
    ``Thermal``)."""

    def _init_ageing(self) -> None:
        """One record per aged population: its parts' node (and GPU unit), effective age and failure time."""
        u, g = self.u, self.g
        self.aged: list[dict[str, Any]] = []
        if self.on:
            for name, ag in self.spec.ageing.items():
                pop = self.parts[name]
                per = pop.per_node
                idx = np.arange(pop.n)
                self.aged.append({
                    "pop": pop, "spec": ag, "per": per, "node": idx // per,
                    "gpu": (idx // per) * u + ((idx % per) % g) * u // g if per == g else None,
                    "age": np.zeros(pop.n), "t": np.zeros(pop.n), "af": np.ones(pop.n),
                    "tfail": np.full(pop.n, INF), "life": np.zeros(pop.n),
                })
        self._age_wake_t = INF
        self._age_gen = 0

    def _start_ageing(self) -> None:
        for a in self.aged:
            pop = a["pop"]
            a["life"][:] = pop.life_h
            for i in range(pop.n):  # the population scheduled AF = 1 failures: cancel them, we own the clock
                pop.reschedule(i, INF)

    def _age_temps(self, a: dict[str, Any], pidx: NDArray[np.int64]) -> NDArray[np.float64]:
        spec = a["spec"]
        nodes = a["node"][pidx]
        if spec.temperature == "inlet":
            return self.inlet[nodes]
        if a["gpu"] is not None:
            return self.tss[a["gpu"][pidx]]
        return self.tss.reshape(-1, self.u)[nodes].max(axis=1)

    def _age_update(self, nodes: NDArray[np.int64], only: list[dict[str, Any]] | None = None) -> None:
        now = self.engine.now
        m = INF
        for a in only or self.aged:
            per = a["per"]
            pidx = (nodes[:, None] * per + np.arange(per)).ravel()
            pop = a["pop"]
            healthy = pop.healthy[pidx]
            af_old = a["af"][pidx]
            a["age"][pidx] += af_old * (now - a["t"][pidx])
            a["t"][pidx] = now
            af = np.asarray(phys.acceleration_factor(self._age_temps(a, pidx), a["spec"].t_ref_c,
                                                     a["spec"].doubling_c), dtype=np.float64)
            a["af"][pidx] = af
            tf = np.asarray(phys.accelerated_failure_time_h(now, a["age"][pidx], a["life"][pidx], af))
            tf = np.where(healthy, tf, INF)
            a["tfail"][pidx] = tf
            m = min(m, float(tf.min()))
        if m < self._age_wake_t:
            self._schedule_age(m)

    def _schedule_age(self, t: float) -> None:
        if t >= self.H:
            return
        self._age_gen += 1
        self._age_wake_t = t
        gen = self._age_gen
        self.engine.call_at(t, lambda: self._age_wake(gen))

    def _age_wake(self, gen: int) -> None:
        if gen != self._age_gen:
            return
        self._age_wake_t = INF
        now = self.engine.now
        m = INF
        for a in self.aged:
            due = np.flatnonzero(a["tfail"] <= now + _EPS_H)
            for i in due.tolist():
                a["tfail"][i] = INF
                a["pop"].reschedule(i, now)  # fails now through the population's own path
            m = min(m, float(a["tfail"].min()))
        if m < self._age_wake_t:
            self._schedule_age(m)

    def _aged_of(self, pop: Any) -> dict[str, Any] | None:
        for a in self.aged:
            if a["pop"] is pop:
                return a
        return None

    def _on_part_failed(self, pop: Any, idx: int) -> None:
        a = self._aged_of(pop)
        if a is not None:
            now = self.engine.now
            a["age"][idx] += a["af"][idx] * (now - a["t"][idx])
            a["t"][idx] = now
            a["tfail"][idx] = INF

    def _on_part_restored(self, pop: Any, idx: int) -> None:
        a = self._aged_of(pop)
        if a is None:
            return
        now = self.engine.now
        a["life"][idx] = pop.life_h[idx]
        pop.reschedule(idx, INF)  # cancel the population's AF = 1 schedule of the fresh part
        a["age"][idx] = 0.0
        a["t"][idx] = now
        node = np.array([idx // a["per"]], dtype=np.int64)
        self._age_update(node, only=[a])
