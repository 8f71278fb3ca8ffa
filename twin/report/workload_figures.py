"""Workload figures: Gantt of the largest job with its interruptions; goodput breakdown."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt  # noqa: E402
from twin.atomic import save_figure  # noqa: E402

BREAKDOWN = ["useful", "lost", "checkpoint", "restart", "slowdown", "idle", "down"]


def figures(res: Any, folder: Path) -> list[str]:
    """Write job_timeline.png and goodput_breakdown.png when the run has a workload."""
    jobs = res.tables.get("jobs")
    if jobs is None or not len(jobs):
        return []
    out = []
    jr = jobs[jobs.record == "job"]
    big = jr.sort_values(["gpus", "job"], ascending=[False, True]).iloc[0]
    ints = jobs[(jobs.record == "interruption") & (jobs.job == big.job)]
    H = float(res.metrics["horizon_h"])
    fig, ax = plt.subplots(figsize=(9, 2.6))
    start = float(big.first_start_h) if big.first_start_h == big.first_start_h else 0.0
    end = float(big.end_h) if big.end_h == big.end_h else H
    ax.broken_barh([(start / 24, (end - start) / 24)], (0.3, 0.4), color="tab:green", alpha=0.6)
    colors = {True: "tab:blue", False: "tab:red"}
    for planned, grp in ints.groupby("planned"):
        ax.vlines(grp.time_h / 24, 0.2, 0.8, color=colors[bool(planned)], lw=0.8,
                  label="planned interruption" if planned else "unplanned interruption")
    ax.set_yticks([0.5], [f"{big['name']} ({int(big.gpus)} GPUs)"])
    ax.set_xlabel("day")
    ax.set_xlim(0, H / 24)
    ax.set_title(f"Largest job: {len(ints)} interruptions, ETTR {float(big.ettr):.3f}")
    if len(ints):
        ax.legend(loc="upper right", fontsize=7)
    fig.tight_layout()
    save_figure(fig, folder / "job_timeline.png", dpi=110)
    plt.close(fig)
    out.append("job_timeline.png")

    vals = [res.metrics.get(f"goodput.{k}", 0.0) for k in BREAKDOWN]
    fig, ax = plt.subplots(figsize=(7, 3.0))
    left = 0.0
    for k, v in zip(BREAKDOWN, vals):
        ax.barh([0], [100 * v], left=[left], label=f"{k} {100 * v:.1f}%")
        left += 100 * v
    ax.set_xlim(0, 100)
    ax.set_yticks([])
    ax.set_xlabel("% of installed GPU-hours")
    ax.set_title("Goodput breakdown")
    ax.legend(ncol=4, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.45))
    fig.tight_layout()
    save_figure(fig, folder / "goodput_breakdown.png", dpi=110)
    plt.close(fig)
    out.append("goodput_breakdown.png")
    return out
