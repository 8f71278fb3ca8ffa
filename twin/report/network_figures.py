"""Figures of the network fabric (Agg backend, PNG): fabric health over time and job
interruptions by network cause. They read only recorded tables."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from twin.atomic import save_figure  # noqa: E402

NETWORK_CAUSES = ("nic", "optic", "leaf", "link_flap")
"""Interruption causes that come from the fabric (``nic`` is the node part of that name)."""


def _steps(df: pd.DataFrame, series: str, horizon_h: float) -> tuple[np.ndarray, np.ndarray]:
    d = df[df["series"] == series].sort_values("time_h", kind="stable")
    t = np.append(d["time_h"].to_numpy(), horizon_h) / 24.0
    v = d["value"].to_numpy()
    v = np.append(v, v[-1]) if len(v) else np.zeros(1)
    return t, v


def fabric_health(health: pd.DataFrame, horizon_h: float, path: Path) -> None:
    """Three panels over time (days): bisection bandwidth in service (%), nodes cut off a rail,
    spines healthy and leaves down."""
    fig, axes = plt.subplots(3, 1, figsize=(8, 6), sharex=True)
    t, v = _steps(health, "bisection_fraction", horizon_h)
    axes[0].step(t, 100 * v, where="post", lw=0.8, color="tab:blue")
    axes[0].set_ylabel("bisection in\nservice (%)")
    t, v = _steps(health, "cut_nodes", horizon_h)
    axes[1].step(t, v, where="post", lw=0.8, color="tab:red")
    axes[1].set_ylabel("nodes cut\noff a rail")
    t, v = _steps(health, "spines_healthy", horizon_h)
    axes[2].step(t, v, where="post", lw=0.8, color="tab:green", label="spines healthy")
    t2, v2 = _steps(health, "leaves_down", horizon_h)
    axes[2].step(t2, v2, where="post", lw=0.8, color="tab:orange", label="leaves down")
    axes[2].set_ylabel("switches")
    axes[2].legend(fontsize=7, loc="center right")
    axes[2].set_xlabel("day")
    axes[2].set_xlim(0, horizon_h / 24.0)
    axes[0].set_title("Fabric health over time")
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)


def network_interruptions(jobs: pd.DataFrame, path: Path) -> None:
    """Bar chart of job interruptions by network cause."""
    rec = jobs[jobs["record"] == "interruption"]
    counts = [int((rec["cause"] == c).sum()) for c in NETWORK_CAUSES]
    fig, ax = plt.subplots(figsize=(6, 3.2))
    ax.bar(list(NETWORK_CAUSES), counts, color="tab:purple")
    for i, c in enumerate(counts):
        ax.annotate(str(c), (i, c), ha="center", va="bottom", fontsize=8)
    ax.set_ylabel("job interruptions")
    ax.set_title("Job interruptions by network cause")
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)


def figures(result: Any, folder: Path) -> list[str]:
    """Write the network figures of one replication result into ``folder``; returns the file
    names written (none when the run had no network)."""
    tables = result.tables
    if "fabric_health" not in tables:
        return []
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    horizon_h = float(result.metrics.get("horizon_h", tables["fabric_health"]["time_h"].max()))
    written = []
    fabric_health(tables["fabric_health"], horizon_h, folder / "fabric_health.png")
    written.append("fabric_health.png")
    jobs = tables.get("jobs")
    if jobs is not None and len(jobs):
        network_interruptions(jobs, folder / "network_interruptions.png")
        written.append("network_interruptions.png")
    return written
