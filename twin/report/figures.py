"""Matplotlib figures of one replication (Agg backend, PNG)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from twin.atomic import save_figure  # noqa: E402


def _save(fig: "plt.Figure", path: Path) -> None:
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)


def capacity_over_time(capacity: pd.DataFrame, n_nodes: int, horizon_h: float, path: Path) -> None:
    fig, ax = plt.subplots(figsize=(8, 3))
    t = np.append(capacity["time_h"].to_numpy(), horizon_h) / 24.0
    v = np.append(capacity["nodes_up"].to_numpy(), capacity["nodes_up"].to_numpy()[-1]) / n_nodes
    ax.step(t, 100 * v, where="post", lw=0.8)
    ax.set_xlabel("day")
    ax.set_ylabel("fleet capacity (% nodes up)")
    ax.set_xlim(0, horizon_h / 24.0)
    ax.set_title("Fleet capacity over time")
    _save(fig, path)


def pareto_bars(ax: "plt.Axes", labels: Any, values: Any, yerr: Any = None) -> None:
    """Bars sorted by the caller, with the cumulative-share line on a second axis."""
    ax.bar(labels, values, yerr=yerr, capsize=3 if yerr is not None else 0, color="tab:red")
    ax.tick_params(axis="x", labelrotation=35, labelsize=8)  # part names do not overlap
    for t in ax.get_xticklabels():
        t.set_horizontalalignment("right")
    total = float(np.sum(values))
    if total > 0:
        ax2 = ax.twinx()
        ax2.plot(labels, 100 * np.cumsum(values) / total, "k.-")
        ax2.set_ylabel("cumulative %")
        ax2.set_ylim(0, 105)


def failure_pareto(parts: pd.DataFrame, path: Path) -> None:
    df = parts.sort_values("failures", ascending=False)
    fig, ax = plt.subplots(figsize=(7, 3.5))
    pareto_bars(ax, df["part"], df["failures"].to_numpy())
    ax.set_ylabel("failures")
    ax.set_title("Failures by part type (Pareto)")
    _save(fig, path)


def repair_breakdown(tickets: pd.DataFrame, path: Path) -> None:
    fig, ax = plt.subplots(figsize=(7, 3.5))
    if len(tickets):
        g = tickets.assign(
            detection=tickets.detected_h - tickets.fail_h,
            waiting_for_parts=tickets.spare_h - tickets.detected_h,
            waiting_for_crew=tickets.start_h - tickets.spare_h,
            repairing=tickets.end_h - tickets.start_h,
            burn_in=tickets.back_h - tickets.end_h,
        ).groupby("part")[["detection", "waiting_for_parts", "waiting_for_crew", "repairing", "burn_in"]].mean()
        bottom = np.zeros(len(g))
        for col in g.columns:
            ax.bar(g.index, g[col], bottom=bottom, label=col.replace("_", " "))
            bottom += g[col].to_numpy()
        ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    ax.set_ylabel("mean hours per repair")
    ax.set_title("Repair time breakdown")
    _save(fig, path)
