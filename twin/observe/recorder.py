"""Columnar recorder. Appending an event is a few list appends: no dict per event.

Tables produced (pandas, typed columns):
- ``events``: time_h, kind (category), path (category), node (Int32, missing for site-level
  components), value (float64, meaning per kind: see :data:`EVENT_VALUES`).
- ``node_intervals``: node, start_h, end_h, state ('down' or 'cut'), cause.
- ``tickets``: one row per repair.
- levels: step functions of time (e.g. nodes up), as (time_h, value) arrays.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

EVENT_VALUES = {
    "fail": "value = lifetime of the failed part, hours",
    "transient": "value = NaN",
    "node_down": "value = NaN (cause in path of the part or reason)",
    "node_up": "value = downtime just ended, hours",
    "stockout": "value = spares on hand (0)",
    "repair_done": "value = ticket time from failure to part restored, hours",
    "quarantine": "value = deep repair time of a quarantined lemon node, hours",
    "degraded": "value = speed fraction of the node while the degraded part is failed",
    "corrupt": "value = id of the job whose state the node corrupted (-1: none, harmless)",
    "rollback": "value = progress the job lost rolling back to a checkpoint before the corruption, ideal hours",
    "discarded": "value = id of the job whose corrupt state a restart had discarded before the detection (no cost)",
}


class Recorder:
    def __init__(self) -> None:
        self._t: list[float] = []
        self._kind: list[str] = []
        self._path: list[str] = []
        self._node: list[int] = []
        self._value: list[float] = []
        self._intervals: list[tuple[int, float, float, str, str]] = []
        self.tickets: list[tuple[Any, ...]] = []
        self.levels: dict[str, tuple[list[float], list[float]]] = {}
        self.counters: dict[str, float] = {}

    def event(self, t_h: float, kind: str, path: str, node: int = -1, value: float = float("nan")) -> None:
        self._t.append(t_h)
        self._kind.append(kind)
        self._path.append(path)
        self._node.append(node)
        self._value.append(value)

    def interval(self, node: int, start_h: float, end_h: float, state: str, cause: str) -> None:
        self._intervals.append((node, start_h, end_h, state, cause))

    def level(self, name: str, t_h: float, value: float) -> None:
        ts, vs = self.levels.setdefault(name, ([], []))
        if ts and ts[-1] == t_h:
            vs[-1] = value
        else:
            ts.append(t_h)
            vs.append(value)

    def count(self, name: str, by: float = 1.0) -> None:
        self.counters[name] = self.counters.get(name, 0.0) + by

    # ---- tables -------------------------------------------------------------------------
    def events_table(self) -> pd.DataFrame:
        node = pd.array(self._node, dtype="Int32")
        node[np.asarray(self._node) < 0] = pd.NA
        return pd.DataFrame(
            {
                "time_h": np.asarray(self._t, dtype=np.float64),
                "kind": pd.Categorical(self._kind),
                "path": pd.Categorical(self._path),
                "node": node,
                "value": np.asarray(self._value, dtype=np.float64),
            }
        )

    def intervals_table(self) -> pd.DataFrame:
        if self._intervals:
            n, s, e, st, c = zip(*self._intervals)
        else:
            n, s, e, st, c = (), (), (), (), ()
        return pd.DataFrame(
            {
                "node": np.asarray(n, dtype=np.int32),
                "start_h": np.asarray(s, dtype=np.float64),
                "end_h": np.asarray(e, dtype=np.float64),
                "state": pd.Categorical(st, categories=["down", "cut"]),
                "cause": pd.Categorical(c),
            }
        )

    def has_intervals(self) -> bool:
        """True when a node interval (down or cut) was recorded."""
        return bool(self._intervals)

    def interval_records(self) -> list[tuple[int, float, float, str, str]]:
        """The node intervals as recorded: (node, start_h, end_h, state, cause); read, never changed."""
        return self._intervals

    def state_hours(self, state: str) -> float:
        """Total node-hours spent in ``state`` ('down' or 'cut') over the closed intervals."""
        return float(sum(e - s for _, s, e, st, _ in self._intervals if st == state))

    def state_hours_by_cause(self, state: str) -> dict[str, float]:
        """Node-hours spent in ``state`` over the closed intervals, by the cause that began each interval
        (the reason that took the node out of service; later, overlapping reasons are not counted again)."""
        out: dict[str, float] = {}
        for _, s, e, st, cause in self._intervals:
            if st == state:
                out[cause] = out.get(cause, 0.0) + (e - s)
        return out

    def level_series(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        ts, vs = self.levels.get(name, ([], []))
        return np.asarray(ts, dtype=np.float64), np.asarray(vs, dtype=np.float64)


def time_weighted_mean(ts: np.ndarray, vs: np.ndarray, horizon_h: float) -> float:
    """Mean of a right-continuous step function over [0, horizon_h]."""
    if len(ts) == 0:
        return float("nan")
    ends = np.append(ts[1:], horizon_h)
    dur = np.clip(np.minimum(ends, horizon_h) - np.minimum(ts, horizon_h), 0, None)
    return float(np.sum(dur * vs) / horizon_h)
