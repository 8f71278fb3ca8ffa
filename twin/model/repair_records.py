"""The repair metrics of :func:`twin.model.repair.repair_metrics` from the ticket records themselves,
without a pandas table: a Monte-Carlo worker keeps only metrics, and the table's pandas operations
cost ~3 ms a replication whatever the number of tickets (issue 31: a small system's replication
must cost well under a millisecond).

The same numbers, bit for bit: means are numpy's pairwise sums over the same values in the same
order divided by their count, as pandas computes them (pinned by tests that compare both on
scenarios with remediation, escalation, RMA and stock-outs). ``repair_metrics`` stays the
definition; a metric added there and not here fails those tests.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from twin.model.repair import IMPACT_CLASSES, NAN, RUNGS, TICKET_COLUMNS, RepairShop, impact_class

_COL = {name: i for i, name in enumerate(TICKET_COLUMNS)}


def _mean(x: np.ndarray) -> float:
    """pandas' mean of a float column: NaN left out (NaN when nothing is left)."""
    nan = np.isnan(x)
    n = int(x.size - nan.sum())
    if n == 0:
        return NAN
    return float(np.where(nan, 0.0, x).sum() / n)


def repair_metrics_from_records(shop: RepairShop, records: Sequence[tuple[Any, ...]], horizon_h: float,
                                gpus_per_node: int, parts: list[str]) -> tuple[dict[str, float],
                                                                              dict[str, dict[str, int]]]:
    """:func:`twin.model.repair.repair_metrics` of the ticket ``records`` (``Recorder.tickets``)."""
    from twin.observe.recorder import time_weighted_mean

    m: dict[str, float] = {}
    for pool in shop.crews.values():
        shift_h = pool.calendar.on_shift_hours(horizon_h) * pool.count
        m[f"crew_utilisation.{pool.name}"] = pool.busy_h / shift_h if shift_h else NAN
    by_part: dict[str, dict[str, int]] = {p: {name: 0 for name in RUNGS.values()} for p in parts}
    if records:
        def col(name: str) -> np.ndarray:
            return np.array([r[_COL[name]] for r in records], dtype=np.float64)

        fail, detected, remediated = col("fail_h"), col("detected_h"), col("remediated_h")
        rung = [r[_COL["rung"]] for r in records]
        done = [bool(r[_COL["done"]]) for r in records]
        m["repair.wait_detect_h"] = _mean(detected - fail)
        m["repair.remediation_h"] = _mean(remediated - detected)
        rep = np.array([g != 1 for g in rung], dtype=bool)
        spare, start, end, fixed, back = (col(c)[rep] for c in ("spare_h", "start_h", "end_h", "fixed_h", "back_h"))
        m["repair.wait_spare_h"] = _mean(spare - remediated[rep])
        wait = start - spare
        m["repair.wait_crew_h"] = _mean(wait)
        m["repair.hands_on_h"] = _mean(end - start)
        m["repair.escalation_h"] = _mean(fixed - end)
        m["repair.burn_in_h"] = _mean(back - fixed)
        for r, name in RUNGS.items():
            m[f"repair.{name}"] = float(sum(1 for g, d in zip(rung, done) if d and g == r))
        cls = [impact_class(float(g), gpus_per_node) for g in col("impact_gpus")[rep]]
        for c in IMPACT_CLASSES:
            sel = wait[np.array([k == c for k in cls], dtype=bool)] if cls else wait[:0]
            sel = sel[~np.isnan(sel)]
            if len(sel):  # only a class that had tickets (a mean over none is undefined, not 0)
                m[f"repair.wait_crew_h.{c}"] = float(sel.sum() / len(sel))
        for rec, g, d in zip(records, rung, done):
            part = str(rec[_COL["part"]])
            if d and part in by_part and g in RUNGS:
                by_part[part][RUNGS[int(g)]] += 1
    else:
        m.update({f"repair.{name}": 0.0 for name in RUNGS.values()})
    for part, inv in shop.inventories.items():
        if inv.rma_h is None:
            continue
        ts, vs = shop.engine.recorder.level_series(f"rma_at_vendor.{part}")
        m[f"rma.sent.{part}"] = float(inv.rma_sent)
        m[f"rma.at_vendor_mean.{part}"] = time_weighted_mean(ts, vs, horizon_h)
        m[f"spares_scrapped.{part}"] = float(inv.scrapped)
    return m, by_part
