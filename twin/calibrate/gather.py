"""From the logs read to every fit of a calibration (:func:`calibrate`) and the logged quantities the
posterior-predictive check compares (:class:`Calibration`).

Which log says what:

* **Part failures** of the parts the XID table maps (``gpu``, ``hbm``, ``nvlink``) come from the
  kernel logs (one unit per GPU: host and PCI address) when any kernel log is given; every other part's
  failures come from the tickets' ``part`` column (a node's failures of a part with several units per
  node are spread over its units in turn). A ticket of an XID part is then used for its repair time
  only, so no failure counts twice.
* **Frailty and lemons**: the part failures per node over the window, every node of the inventory
  exposed for the whole window.
* **Job interruptions**: ``NODE_FAIL`` attempts of the accounting; each is given the cause of the
  part failure on one of its nodes nearest its end (within ``--match-window-s``).
* **Repair times**: the tickets, by part.

The window is ``--start`` .. ``--end`` if given, else the first to the last time stamp of any log;
the inventory is ``--nodes`` if given, else every host any log names.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from twin.calibrate.fits import (FrailtyFit, JobRates, attribute_causes, fit_frailty, fit_lives, job_rates,
                                 part_lives, repair_fit)
from twin.calibrate.sacct import SacctLog
from twin.calibrate.tickets import TicketLog
from twin.calibrate.xid import XidLog, XidTable
from twin.errors import InputError
from twin.fit.mle import PartFit


@dataclass
class PartResult:
    """One part type's failures and lifetime fit."""

    part: str
    source: str
    units: int
    failures: int
    fit: PartFit | None
    in_base: bool


@dataclass
class RepairResult:
    part: str
    source: str
    tickets: int
    kind: str
    fit: PartFit | None
    outage_mean_h: float
    closed: int


@dataclass
class Calibration:
    """Everything fitted, with the window and the inventory it rests on."""

    t0_s: float
    t1_s: float
    nodes: list[str]
    parts: dict[str, PartResult]
    failures: pd.DataFrame
    """Part failures used: ``time_s, host, unit, part, source``."""
    frailty: FrailtyFit | None
    jobs: JobRates | None
    job_source: str
    repairs: dict[str, RepairResult]
    xid: XidLog | None
    xid_table: XidTable | None
    sacct: list[SacctLog]
    tickets: list[TicketLog]
    notes: list[str] = field(default_factory=list)
    level: float = 0.95

    @property
    def days(self) -> float:
        return (self.t1_s - self.t0_s) / 86400.0

    @property
    def node_days(self) -> float:
        return len(self.nodes) * self.days


def _inventory(sacct: list[SacctLog], xid: XidLog | None, tickets: list[TicketLog]) -> list[str]:
    import hostlist

    hosts: set[str] = set()
    for s in sacct:
        for nl in pd.unique(s.attempts["nodelist"]):
            hosts.update(hostlist.expand_hostlist(str(nl)))
    if xid is not None:
        hosts |= xid.hosts
    for t in tickets:
        hosts.update(str(h) for h in pd.unique(t.tickets["node"]))
    return sorted(hosts)


def calibrate(base: Any, sacct: list[SacctLog], xid: XidLog | None, xid_table: XidTable | None,
              tickets: list[TicketLog], nodes: list[str] | None = None, start_s: float | None = None,
              end_s: float | None = None, match_window_s: float = 900.0, level: float = 0.95,
              fdr: float = 0.05) -> Calibration:
    """Every fit the logs allow against the ``base`` scenario (a :class:`~twin.scenario.schema.Scenario`)."""
    notes: list[str] = []
    firsts = [x for x in [s.first_s for s in sacct] + [t.first_s for t in tickets]
              + ([xid.first_s] if xid is not None else []) if not math.isnan(x)]
    lasts = [x for x in [s.last_s for s in sacct] + [t.last_s for t in tickets]
             + ([xid.last_s] if xid is not None else []) if not math.isnan(x)]
    t0 = start_s if start_s is not None else (min(firsts) if firsts else math.nan)
    t1 = end_s if end_s is not None else (max(lasts) if lasts else math.nan)
    if not (math.isfinite(t0) and math.isfinite(t1) and t1 > t0):
        raise InputError("logs", "", "no dated record: cannot tell the observed period (give --start and --end)")
    inventory = sorted(set(nodes)) if nodes else _inventory(sacct, xid, tickets)
    if not inventory:
        raise InputError("logs", "", "no node named in any log: give --nodes HOSTLIST")
    if not nodes:
        notes.append(f"the inventory is the {len(inventory)} hosts the logs name (no --nodes): a node that never "
                     "appears in a log is missing from every rate's denominator")
    n_nodes = len(inventory)
    if n_nodes != base.cluster.n_nodes:
        notes.append(f"the logs' inventory has {n_nodes} nodes, the base scenario {base.cluster.n_nodes}: rates are "
                     "per node and carry over; the cluster's size is the base's")
    base_parts = dict(base.cluster.node.parts)
    gpus = int(base.cluster.node.gpus)

    # ---- part failures ------------------------------------------------------------------------
    xid_parts = ({p for p, c, _ in xid_table.entries.values() if c == "failure" and p} if xid is not None and
                 xid_table is not None else set())
    rows: list[tuple[float, str, str, str, str]] = []
    if xid is not None:
        ev = xid.events
        fail = ev[(ev["category"] == "failure") & (ev["time_s"] >= t0) & (ev["time_s"] <= t1)]
        for t, h, pci, p, src in zip(fail["time_s"], fail["host"], fail["pci"], fail["part"], fail["source"]):
            rows.append((float(t), str(h), f"{h}:{pci}", str(p), str(src)))
    for tl in tickets:
        tk = tl.tickets
        use = tk[(tk["part"] != "") & ~tk["part"].isin(list(xid_parts)) & (tk["start_s"] >= t0) & (tk["start_s"] <= t1)]
        seen: Counter[tuple[str, str]] = Counter()
        for t, h, p in zip(use["start_s"], use["node"], use["part"]):
            per = base_parts[p].count if p in base_parts else 1
            k = seen[(h, p)] % per
            seen[(h, p)] += 1
            rows.append((float(t), str(h), f"{h}:{p}{k}", str(p), tl.source))
    failures = pd.DataFrame(rows, columns=["time_s", "host", "unit", "part", "source"])
    outside = sorted(set(failures["host"]) - set(inventory))
    if outside:
        raise InputError("--nodes", "", f"failures on nodes outside the inventory: {', '.join(outside[:5])}")
    parts: dict[str, PartResult] = {}
    for p, grp in failures.groupby("part", sort=True):
        p = str(p)
        per = base_parts[p].count if p in base_parts else (gpus if p in xid_parts else 1)
        units: dict[str, list[float]] = defaultdict(list)
        for u, t in zip(grp["unit"], grp["time_s"]):
            units[str(u)].append(float(t))
        d, f = part_lives(dict(units), n_nodes * per, t0, t1)
        srcs = ", ".join(sorted(set(grp["source"])))
        parts[p] = PartResult(p, srcs, n_nodes * per, int(f.sum()), fit_lives(p, d, f, level), p in base_parts)
        if p not in base_parts:
            notes.append(f"part {p!r} ({int(f.sum())} failures) is not a part of the base scenario: fitted and "
                         "reported, not written")
    for p in sorted(xid_parts & set(base_parts)):
        if xid is not None and p not in parts:
            d, f = part_lives({}, n_nodes * base_parts[p].count, t0, t1)
            parts[p] = PartResult(p, "kernel logs", n_nodes * base_parts[p].count, 0, None, True)
            notes.append(f"part {p!r}: no failure in the kernel logs over {len(d)} units; not fitted (a rate "
                         "below 1 / the units' total time)")

    # ---- frailty ----------------------------------------------------------------------------
    frailty = None
    if len(failures):
        per_node = failures.groupby("host").size()
        counts = np.array([int(per_node.get(h, 0)) for h in inventory])
        frailty = fit_frailty(inventory, counts, np.full(n_nodes, (t1 - t0) / 86400.0), level=level, fdr=fdr)

    # ---- jobs -------------------------------------------------------------------------------
    jobs = None
    job_source = ", ".join(s.source for s in sacct)
    if sacct:
        att = pd.concat([s.attempts for s in sacct], ignore_index=True)
        att = att[(att["start_s"] < t1) & (att["end_s"].fillna(t1) > t0)].reset_index(drop=True)
        att["start_s"] = att["start_s"].clip(lower=t0)
        causes = attribute_causes(att, failures, match_window_s)
        jobs = job_rates(att, t1, causes, level)
        nonhw = {k: v for k, v in jobs.states.items() if k not in ("NODE_FAIL", "COMPLETED", "RUNNING")}
        if nonhw:
            notes.append("job states counted, not taken as hardware: "
                         + ", ".join(f"{k} {v}" for k, v in sorted(nonhw.items())))

    # ---- repairs ----------------------------------------------------------------------------
    repairs: dict[str, RepairResult] = {}
    if tickets:
        tk = pd.concat([t.tickets for t in tickets], ignore_index=True)
        tk = tk[(tk["start_s"] >= t0) & (tk["start_s"] <= t1)]
        for p, grp in tk.groupby(tk["part"].where(tk["part"] != "", tk["cause"].where(tk["cause"] != "", "node")),
                                 sort=True):
            fit, kind = repair_fit(str(p), grp, t1, level)
            closed = grp[grp["end_s"].notna()]
            mean = float(((closed["end_s"] - closed["start_s"]) / 3600.0).mean()) if len(closed) else math.nan
            repairs[str(p)] = RepairResult(str(p), ", ".join(t.source for t in tickets), len(grp), kind, fit, mean,
                                           len(closed))
    if xid is not None and xid.unknown:
        notes.append("XIDs not in the table (counted, not used): "
                     + ", ".join(f"{x} ×{n}" for x, n in sorted(xid.unknown.items())))
    return Calibration(t0, t1, inventory, parts, failures, frailty, jobs, job_source, repairs, xid, xid_table,
                       sacct, tickets, notes, level)
