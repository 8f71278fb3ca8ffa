"""Figures of the power chain (Agg backend, PNG): feed states over time, site IT power over time,
and power-caused downtime by cause. They read only recorded tables."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from twin.atomic import save_figure  # noqa: E402

STATE_COLOURS = {"utility": "tab:green", "ups": "gold", "generator": "tab:orange", "dead": "tab:red"}
"""Feed state colours, in drawing order (later states drawn over earlier ones at a year's scale)."""


def _save(fig: "plt.Figure", path: Path) -> None:
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)


def feed_timeline(feeds: pd.DataFrame, horizon_h: float, path: Path) -> None:
    """One lane per feed (days on x), coloured by state: on utility, on generator, on UPS battery,
    dead. Short states (minutes on UPS) are drawn at least one pixel wide."""
    names = sorted(feeds["feed"].astype(str).unique())
    fig, ax = plt.subplots(figsize=(9, 1.0 + 0.6 * max(1, len(names))))
    for lane, name in enumerate(names):
        d = feeds[feeds["feed"].astype(str) == name]
        for state, colour in STATE_COLOURS.items():
            s = d[d["state"].astype(str) == state]
            if not len(s):
                continue
            spans = list(zip(s["start_h"] / 24.0, (s["end_h"] - s["start_h"]) / 24.0))
            ax.broken_barh(spans, (lane - 0.35, 0.7), facecolors=colour, edgecolors=colour,
                           linewidth=0.0 if state == "utility" else 1.0)
    ax.set_yticks(range(len(names)))
    ax.set_yticklabels([f"feed {n}" for n in names])
    ax.set_xlim(0, horizon_h / 24.0)
    ax.set_xlabel("day")
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in STATE_COLOURS.values()]
    ax.legend(handles, ["utility", "UPS battery", "generator", "dead"], fontsize=7,
              loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    ax.set_title("Feed states over time")
    _save(fig, path)


def site_power(site: pd.DataFrame, horizon_h: float, path: Path, zoom_h: float = 48.0) -> None:
    """Site IT power (MW) as a step function: the whole horizon with its peak and time-weighted
    mean, and a zoom on the ``zoom_h`` hours around the largest single step (checkpoint swings)."""
    t = site["time_h"].to_numpy()
    v = site["it_power_w"].to_numpy() / 1e6
    fig, axes = plt.subplots(2, 1, figsize=(9, 5))
    if len(t):
        tt = np.append(t, horizon_h)
        vv = np.append(v, v[-1])
        ends = np.minimum(np.append(t[1:], horizon_h), horizon_h)
        mean = float(np.sum((ends - np.minimum(t, horizon_h)) * v) / horizon_h)
        ax = axes[0]
        ax.step(tt / 24.0, vv, where="post", lw=0.5, color="tab:blue")
        ax.axhline(v.max(), color="tab:red", lw=0.8, ls="--", label=f"peak {v.max():.3f} MW")
        ax.axhline(mean, color="k", lw=0.8, ls=":", label=f"mean {mean:.3f} MW")
        ax.legend(fontsize=7, loc="lower right")
        ax.set_xlim(0, horizon_h / 24.0)
        ax.set_xlabel("day")
        j = int(np.argmax(np.abs(np.diff(v)))) + 1 if len(v) > 1 else 0
        a = max(0.0, min(t[j] - zoom_h / 2, horizon_h - zoom_h))
        b = min(horizon_h, a + zoom_h)
        ax = axes[1]
        ax.step(tt, vv, where="post", lw=0.8, color="tab:blue")
        ax.set_xlim(a, b)
        ax.set_xlabel("hour")
        ax.set_title(f"zoom: {b - a:g} h around the largest step ({abs(v[j] - v[j - 1]) if j else 0.0:.3f} MW)",
                     fontsize=9)
    for ax in axes:
        ax.set_ylabel("site IT power (MW)")
    axes[0].set_title("Site IT power over time")
    _save(fig, path)


def downtime_by_cause(downtime: pd.DataFrame, path: Path) -> None:
    """Bar chart of power-caused node-hours down, by cause."""
    fig, ax = plt.subplots(figsize=(6, 3.2))
    causes = downtime["cause"].astype(str).tolist()
    hours = downtime["node_hours"].to_numpy()
    ax.bar(causes, hours, color="tab:red")
    for i, h in enumerate(hours):
        ax.annotate(f"{h:,.1f}", (i, h), ha="center", va="bottom", fontsize=8)
    ax.set_ylabel("node-hours down")
    ax.set_title("Power-caused downtime by cause")
    _save(fig, path)


def figures(result: Any, folder: Path) -> list[str]:
    """Write the power figures of one replication result into ``folder``; returns the file names
    written (none when the run had no power section)."""
    tables = result.tables
    if "power_feeds" not in tables:
        return []
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    horizon_h = float(result.metrics.get("horizon_h", tables["power_feeds"]["end_h"].max()))
    written = []
    feed_timeline(tables["power_feeds"], horizon_h, folder / "power_feeds.png")
    written.append("power_feeds.png")
    if "power_site" in tables:
        site_power(tables["power_site"], horizon_h, folder / "power_site.png")
        written.append("power_site.png")
    if "power_downtime" in tables:
        downtime_by_cause(tables["power_downtime"], folder / "power_downtime.png")
        written.append("power_downtime.png")
    return written
