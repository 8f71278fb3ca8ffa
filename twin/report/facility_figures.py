"""Facility figures (issue 24; Agg backend, PNG): downtime and interruptions by cause with common-cause
and maintenance apart, the chilled-water loop over time, and cooling units out of service by cause.
They read only recorded tables and metrics.

``figures(result, folder)`` writes, when the run has a power chain or a cooling plant:

- ``downtime_by_class.png``: node-hours down by class of cause (component failures, common cause,
  power, thermal trips, maintenance, repair drains) and job interruptions by cause, planned apart;
- ``plant_loop.png``: the loop's offset above its set point (the exact first-order curve between the
  plant's events) and the running chillers' capacity against the heat;
- ``cooling_out_of_service.png``: unit-hours the cooling units were out by cause (no power or
  restarting, scheduled maintenance, common-cause failures).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from twin.atomic import save_figure  # noqa: E402

CLASSES = ("failure", "common cause", "power", "thermal", "maintenance", "repair drain")
"""Classes of node-down causes, in drawing order."""
_COLOURS = {"failure": "tab:gray", "common cause": "tab:purple", "power": "tab:red", "thermal": "tab:orange",
            "maintenance": "tab:blue", "repair drain": "tab:olive"}


def cause_class(cause: str) -> str:
    """The class of a node-down cause: ``ccf:<part>`` common cause, ``power:*`` power, ``thermal_trip``
    and ``cooling_drain`` (a node drained for a cooling shortfall) thermal, ``planned:*`` maintenance,
    ``repair:<part>`` a drain for a repair, anything else (a part's own failure, a leak) failure."""
    if cause.startswith("ccf:"):
        return "common cause"
    if cause.startswith("power:"):
        return "power"
    if cause in ("thermal_trip", "cooling_drain"):
        return "thermal"
    if cause.startswith("planned:"):
        return "maintenance"
    if cause.startswith("repair:"):
        return "repair drain"
    return "failure"


def downtime_by_class(intervals: pd.DataFrame) -> pd.Series:
    """Node-hours down by class of cause (index: :data:`CLASSES`)."""
    down = intervals[intervals["state"] == "down"]
    h = (down["end_h"] - down["start_h"]).groupby(down["cause"].astype(str).map(cause_class)).sum()
    return pd.Series([float(h.get(c, 0.0)) for c in CLASSES], index=list(CLASSES))


def _save(fig: Any, path: Path) -> str:
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)
    return path.name


def downtime_figure(intervals: pd.DataFrame, metrics: Mapping[str, float], path: Path) -> str:
    by_class = downtime_by_class(intervals)
    inter = {k.split(".", 1)[1]: v for k, v in metrics.items()
             if k.startswith("interruptions.") and k not in ("interruptions.planned", "interruptions.unplanned") and v}
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.4))
    a1.barh(list(CLASSES), by_class.to_numpy(), color=[_COLOURS[c] for c in CLASSES])
    for i, h in enumerate(by_class.to_numpy()):
        a1.annotate(f" {h:,.1f}", (h, i), va="center", fontsize=8)
    a1.invert_yaxis()
    a1.set_xlabel("node-hours down")
    a1.set_title("Downtime by class of cause")
    names = sorted(inter, key=lambda c: (not c.startswith("planned:"), -inter[c]))[:12]
    cols = [_COLOURS[cause_class(c)] if c != "thermal_trip" else _COLOURS["thermal"] for c in names]
    a2.barh(names, [inter[c] for c in names], color=cols)
    a2.invert_yaxis()
    a2.set_xlabel("job interruptions")
    a2.set_title("Interruptions by cause (planned first)")
    a2.tick_params(axis="y", labelsize=7)
    return _save(fig, path)


def loop_curve(tl: pd.DataFrame, horizon_h: float, points: int = 32) -> tuple[np.ndarray, np.ndarray]:
    """The loop's offset (°C) on a grid inside each segment between the plant's events: the exact
    first-order curve x(t) = x_ss + (x0 − x_ss)·e^(−(t − t0)/τ)."""
    ts, xs = [], []
    t = tl["time_h"].to_numpy()
    ends = np.append(t[1:], horizon_h)
    for (t0, x0, tgt, tau), t1 in zip(tl[["time_h", "offset_c", "target_c", "tau_min"]].to_numpy(), ends):
        if t1 <= t0:
            continue
        grid = np.linspace(t0, t1, points) if x0 != tgt else np.array([t0, t1])
        ts.append(grid)
        xs.append(tgt + (x0 - tgt) * np.exp(-(grid - t0) * 60.0 / tau))
    if not ts:
        return np.zeros(0), np.zeros(0)
    return np.concatenate(ts), np.concatenate(xs)


def plant_figure(tl: pd.DataFrame, horizon_h: float, path: Path) -> str:
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(9, 4.6), sharex=True)
    t, x = loop_curve(tl, horizon_h)
    a1.plot(t / 24.0, x, color="tab:blue", lw=1)
    a1.set_ylabel("loop above set point (°C)")
    a1.set_title("Chilled-water loop: rises while the chillers fall short (stopped, failed, in maintenance)")
    a2.step(tl["time_h"] / 24.0, tl["capacity_kw"], where="post", color="tab:green", label="running capacity")
    a2.step(tl["time_h"] / 24.0, tl["heat_kw"], where="post", color="tab:red", label="heat, taken at the plant's events")
    a2.set_ylabel("kW")
    a2.set_xlabel("day")
    a2.legend(fontsize=7, loc="lower left")
    return _save(fig, path)


def out_of_service_figure(metrics: Mapping[str, float], path: Path) -> str:
    kinds = [k for k in ("chiller", "crah", "cdu") if f"plant.power_off_unit_hours.{k}" in metrics]
    power = [metrics[f"plant.power_off_unit_hours.{k}"] for k in kinds]
    ccf = [metrics.get(f"ccf_unit_hours.{k}", 0.0) for k in kinds]
    maint = float(metrics.get("plant.maintenance_hours", 0.0))
    fig, ax = plt.subplots(figsize=(6.5, 3.2))
    y = np.arange(len(kinds))
    ax.barh(y - 0.2, power, height=0.4, color="tab:red", label="no power or restarting")
    ax.barh(y + 0.2, ccf, height=0.4, color="tab:purple", label="common-cause failure")
    ax.set_yticks(y, kinds)
    ax.invert_yaxis()
    ax.set_xlabel("unit-hours out of service")
    ax.set_title(f"Cooling units out by cause (scheduled maintenance: {maint:,.0f} unit-h)")
    ax.legend(fontsize=7)
    return _save(fig, path)


def figures(result: Any, folder: Path) -> list[str]:
    """Write the facility figures of ``result`` into ``folder``; return the file names written (none
    without a power chain or a cooling plant)."""
    tables, metrics = result.tables, result.metrics
    has_plant = "plant_timeline" in tables
    if "power_feeds" not in tables and not has_plant:
        return []
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    H = float(metrics.get("horizon_h", 0.0))
    out = [downtime_figure(tables["node_intervals"], metrics, folder / "downtime_by_class.png")]
    if has_plant:
        tl = tables["plant_timeline"]
        if len(tl):
            out.append(plant_figure(tl, H, folder / "plant_loop.png"))
        out.append(out_of_service_figure(metrics, folder / "cooling_out_of_service.png"))
    return out
