"""Thermal and energy figures of one replication (matplotlib Agg, PNG).

``figures(result, folder)`` writes, when the tables exist:

- ``thermal_week.png``: GPU temperature, power cap and speed of the traced nodes over the trace
  window (by default the week around the seasonal peak), with the inlet;
- ``pue_daily.png``: daily PUE over the horizon, with the daily mean outdoor temperature;
- ``throughput_ripple.png``: effective GPU-hours per hour of day (mean and range over days) against
  the ambient temperature by hour of day: the daily throughput ripple.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from twin.atomic import save_figure  # noqa: E402


def _save(fig: Any, path: Path) -> str:
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)
    return path.name


def trace_curve(rows: pd.DataFrame, points_per_segment: int = 24) -> tuple[np.ndarray, np.ndarray]:
    """Temperature (°C) of one traced GPU between its recorded updates, evaluated on the exact
    first-order response T(t) = T_ss + (T0 − T_ss)·e^(−(t − t0)/τ) of each segment (hours, °C)."""
    rows = rows.sort_values("time_h", kind="stable")
    t = rows["time_h"].to_numpy()
    ends = np.append(t[1:], t[-1])
    ts, temps = [], []
    for (t0, t1, T0, tss, tau) in zip(t, ends, rows["temp_c"], rows["tss_c"], rows["tau_s"]):
        # dense near the start of a segment, where the response moves (a few τ), then to its end
        fast = t0 + np.linspace(0.0, min(t1 - t0, 6.0 * tau / 3600.0), points_per_segment)
        grid = np.unique(np.append(fast, t1))
        ts.append(grid)
        temps.append(tss + (T0 - tss) * np.exp(-(grid - t0) * 3600.0 / tau))
    return np.concatenate(ts), np.concatenate(temps)


def thermal_week(trace: pd.DataFrame, path: Path) -> str:
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(9, 5), sharex=True)
    for (node, gpu), rows in trace.groupby(["node", "gpu"], sort=True):
        if gpu != 0:
            continue  # one GPU (unit) per node keeps the figure readable
        t, temp = trace_curve(rows)
        ax1.plot(t / 24.0, temp, lw=0.8, label=f"node {node} GPU temperature")
        r = rows.sort_values("time_h")
        ax1.step(r["time_h"] / 24.0, r["inlet_c"], where="post", lw=0.6, ls="--", label=f"node {node} inlet")
        ax2.step(r["time_h"] / 24.0, r["speed"], where="post", lw=0.8, label=f"node {node}")
    ax1.set_ylabel("°C")
    ax1.legend(fontsize=7, ncol=2)
    ax1.set_title("GPU temperature and inlet over the trace window")
    ax2.set_ylabel("GPU speed (fraction)")
    ax2.set_xlabel("day")
    ax2.set_ylim(0, 1.05)
    ax2.legend(fontsize=7)
    return _save(fig, path)


def pue_daily(daily: pd.DataFrame, path: Path) -> str:
    fig, ax = plt.subplots(figsize=(9, 3.2))
    ax.plot(daily["day"], daily["pue"], lw=0.9, color="tab:blue")
    ax.set_xlabel("day")
    ax.set_ylabel("PUE (daily)", color="tab:blue")
    ax2 = ax.twinx()
    ax2.plot(daily["day"], daily["ambient_mean_c"], lw=0.6, color="tab:red", alpha=0.6)
    ax2.set_ylabel("mean outdoor °C", color="tab:red")
    ax.set_title("PUE over time")
    return _save(fig, path)


def throughput_ripple(hourly: pd.DataFrame, path: Path) -> str:
    h = hourly.assign(hod=hourly["hour"] % 24)
    g = h.groupby("hod")["effective_gpu_hours"]
    mean = g.mean()
    fig, ax = plt.subplots(figsize=(7, 3.5))
    ax.plot(mean.index, mean.to_numpy(), "o-", ms=3, color="tab:green", label="mean over days")
    ax.fill_between(mean.index, g.min().to_numpy(), g.max().to_numpy(), color="tab:green", alpha=0.15,
                    label="range over days")
    ax.set_xlabel("hour of day")
    ax.set_ylabel("effective GPU-hours per hour")
    ax2 = ax.twinx()
    amb = h.groupby("hod")["ambient_c"].mean()
    ax2.plot(amb.index, amb.to_numpy(), lw=0.8, color="tab:red")
    ax2.set_ylabel("mean outdoor °C", color="tab:red")
    ax.legend(fontsize=7, loc="lower left")
    ax.set_title("Daily throughput ripple")
    return _save(fig, path)


def figures(result: Any, folder: Path) -> list[str]:
    """Write the thermal figures of ``result`` (a ReplicationResult) into ``folder``; return the file names
    written (only for tables that exist and are not empty)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tables = result.tables
    out: list[str] = []
    trace = tables.get("thermal_trace")
    if trace is not None and len(trace):
        out.append(thermal_week(trace, folder / "thermal_week.png"))
    daily = tables.get("pue_daily")
    if daily is not None and len(daily):
        out.append(pue_daily(daily, folder / "pue_daily.png"))
    hourly = tables.get("throughput_hourly")
    if hourly is not None and len(hourly) and float(hourly["effective_gpu_hours"].sum()) > 0:
        out.append(throughput_ripple(hourly, folder / "throughput_ripple.png"))
    return out
