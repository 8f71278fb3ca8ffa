"""The run-time limiter of layout jobs (issue 28 item 6): what each job's step was spent on over its
running hours (the ``step_breakdown`` table of :mod:`twin.model.workload`), as lines for ``twin run``."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

COMPONENTS = ("compute", "tp", "pp", "bubble", "dp", "compress", "throttle", "cp", "ep")
"""The step's components in the table's ``share_<component>`` columns (twin.physics.parallel)."""

NAMES = {"compute": "compute", "tp": "tp", "pp": "pp sends", "bubble": "bubble", "dp": "exposed dp",
         "compress": "compression", "throttle": "throttling", "cp": "context-parallel K/V", "ep": "expert all-to-all"}


def limiter_lines(tables: Mapping[str, pd.DataFrame]) -> list[str]:
    """'step JOB: ideal X s, mean Y s over H h: compute a %, tp b %, ...; limited by L' per layout job
    ([] without the table): components below 0.05 % left out."""
    t = tables.get("step_breakdown")
    if t is None or not len(t):
        return []
    out = []
    for r in t.itertuples(index=False):
        parts = ", ".join(f"{NAMES[c]} {getattr(r, f'share_{c}'):.1%}" for c in COMPONENTS
                          if getattr(r, f"share_{c}") >= 0.0005)
        out.append(f"step {r.name} (tp {r.tp} × pp {r.pp} × dp {r.dp}): failure-free {r.ideal_step_s:.4g} s, "
                   f"mean {r.mean_step_s:.4g} s over {r.run_h:,.0f} running h: {parts}; limited by "
                   f"{NAMES[r.limiter]}")
    return out
