"""Example logs with a known truth: simulate a scenario with the twin and write its history in the
formats clusters keep — ``sacct --parsable2`` (``sacct.txt``), a central syslog of kernel lines with
XIDs (``kernel.log``) and a repair-ticket CSV (``tickets.csv``) — so ``twin calibrate`` can be checked
against the parameters that made them (``python -m twin.calibrate.synth SCENARIO OUT_DIR``).

What is written, from the replication's tables:

* node ``i`` is host ``node{i:03d}``; time 0 is ``ORIGIN`` (a Monday, as the twin's clock); times UTC;
* every ``fail`` of a node part ``gpu`` is an XID 79 line, of ``hbm`` an XID 48, 95 or 64 (in turn),
  on the GPU's PCI address (``PCI_ADDRESSES``, a DGX H100's), with a storm of repeats a few seconds
  apart now and then; kernel noise around them: application XIDs (13, 31, 43), contained ECC (94),
  row-remap events (63), an XID the table does not know (62) and lines that are not XIDs;
* every job of the ``jobs`` table is an allocation line with ``.batch``, ``.extern`` and ``.0`` steps;
  an interrupted job has a ``NODE_FAIL`` attempt ending at each interruption and is requeued under the
  same JobID (``sacct --duplicates``); a job still running at the horizon ends ``Unknown``; the failed
  node is in the NodeList of the attempt it ended (the twin does not record placements: the other
  nodes are chosen by position); a few finished jobs are marked ``FAILED``, ``TIMEOUT`` or
  ``CANCELLED by 1000`` (not hardware);
* every repair ticket is a row ``node, start (failure), end (back in service), cause, part,
  work_start, work_end (hands-on work of a replacement; empty for a remediation by reset)``.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from twin.calibrate.xid import xid_line

ORIGIN = datetime(2026, 1, 5, tzinfo=timezone.utc)
"""Simulated time 0 (a Monday 00:00 UTC)."""
PCI_ADDRESSES = ("0000:18:00", "0000:2a:00", "0000:3a:00", "0000:5d:00", "0000:9a:00", "0000:ab:00",
                 "0000:ba:00", "0000:db:00")
"""GPU PCI addresses of a DGX H100 (GPU 0..7)."""
_TEXT = {79: "GPU has fallen off the bus.",
         48: "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 0.",
         95: "Uncontained: FBHUB. RST: Yes, D-RST: No",
         64: "Row Remapper Error: (0x0000000a7b1c0000) - All reserved rows for bank are remapped",
         13: "Graphics SM Warp Exception on (GPC 1, TPC 0, SM 0): Out Of Range Address",
         31: "Ch 00000008, intr 10000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f_2a000000.",
         43: "Ch 00000010",
         94: "Contained: SM (0x1). RST: No, D-RST: No",
         63: "Row Remapper: New row (0x0000000ab3e00000) marked for remapping, reset gpu to activate.",
         62: "Internal micro-controller halt"}


def host(i: int) -> str:
    """Host name of node ``i``."""
    return f"node{i:03d}"


def stamp(t_h: float) -> str:
    """``YYYY-MM-DDThh:mm:ss`` (UTC, no offset) of simulated hour ``t_h``."""
    return (ORIGIN + timedelta(hours=float(t_h))).strftime("%Y-%m-%dT%H:%M:%S")


def _secs(t_h: float) -> float:
    return ORIGIN.timestamp() + t_h * 3600.0


@dataclass
class History:
    """The files written and what a calibration needs to read them."""

    sacct: Path
    kernel: Path
    tickets: Path
    nodes: str
    year: int
    start: str
    end: str


def write_history(tables: dict[str, pd.DataFrame], n_nodes: int, horizon_h: float, out: Path, seed: int = 0,
                  noise_per_node_day: float = 0.05, not_hardware: frozenset[str] = frozenset({"sdc"})) -> History:
    """Write ``sacct.txt``, ``kernel.log`` and ``tickets.csv`` under ``out`` from one replication's
    tables (``events``, ``jobs``, ``tickets``). Interruptions whose cause is in ``not_hardware`` (the
    transient parts, silent data corruption) end their attempt ``FAILED``, the others ``NODE_FAIL``."""
    import hostlist

    rng = np.random.default_rng(seed)
    out.mkdir(parents=True, exist_ok=True)
    ev = tables["events"]
    fails = ev[ev["kind"] == "fail"]
    paths = fails["path"].astype(str)
    part = paths.str.extract(r"\.node\d+\.([A-Za-z_]+?)(\d+)$")
    fails = fails.assign(part=part[0], slot=pd.to_numeric(part[1]))
    fails = fails[fails["part"].notna() & fails["node"].notna()]
    fails = fails[fails["node"].astype(int) >= 0]

    # ---- kernel log -------------------------------------------------------------------------
    lines: list[tuple[float, str]] = [(0.0, f"{ORIGIN.strftime('%b')} {ORIGIN.day:2d} 00:00:00 {host(0)} kernel: "
                                       "Linux version 6.8.0-45-generic (buildd@lcy02-amd64-075)")]
    hbm_xids = (48, 95, 64)
    k_hbm = 0
    for t, node, p, slot in zip(fails["time_h"], fails["node"], fails["part"], fails["slot"]):
        if p == "gpu":
            xid = 79
        elif p == "hbm":
            xid = hbm_xids[k_hbm % 3]
            k_hbm += 1
        else:
            continue
        pci = PCI_ADDRESSES[int(slot) % len(PCI_ADDRESSES)]
        ts = _secs(float(t))
        lines.append((ts, xid_line(ts, host(int(node)), pci, xid, _TEXT[xid], pid=int(rng.integers(1000, 60000)))))
        for r in range(int(rng.integers(0, 4))):  # a storm: the driver repeats the XID until the reset
            tr = ts + 5.0 * (r + 1)
            lines.append((tr, xid_line(tr, host(int(node)), pci, xid, _TEXT[xid], pid=0)))
    n_noise = int(rng.poisson(noise_per_node_day * n_nodes * horizon_h / 24.0))
    for _ in range(n_noise):
        ts = _secs(float(rng.uniform(0, horizon_h)))
        h = host(int(rng.integers(n_nodes)))
        xid = int(rng.choice([13, 31, 43, 94, 63, 62, 0]))
        if xid == 0:
            lines.append((ts, xid_line(ts, h, "x", 0, "").split(" NVRM")[0].split(" kernel:")[0]
                          + " kernel: mlx5_core 0000:ab:00.0 mlx5_5: Port: 1 Link ACTIVE"))
        else:
            lines.append((ts, xid_line(ts, h, PCI_ADDRESSES[int(rng.integers(8))], xid, _TEXT[xid],
                                       pid=int(rng.integers(1000, 60000)))))
    end_dt = ORIGIN + timedelta(hours=horizon_h)
    lines.append((_secs(horizon_h), f"{end_dt.strftime('%b')} {end_dt.day:2d} {end_dt.strftime('%H:%M:%S')} "
                  f"{host(0)} kernel: systemd-journald[812]: Received client request to flush runtime journal."))
    lines.sort(key=lambda x: x[0])
    kernel = out / "kernel.log"
    kernel.write_text("".join(text + "\n" for _t, text in lines), encoding="utf-8")

    # ---- sacct ------------------------------------------------------------------------------
    jobs = tables["jobs"]
    jrows = jobs[jobs["record"] == "job"]
    ints = jobs[(jobs["record"] == "interruption") & ~jobs["planned"].astype(bool)]
    fail_node = {(round(float(t), 6), str(p)): int(n) for t, p, n in zip(fails["time_h"], fails["part"], fails["node"])}
    by_job: dict[int, list[tuple[float, int | None, str]]] = {}
    for jid, t, cause in zip(ints["job"], ints["time_h"], ints["cause"]):
        state = "FAILED" if str(cause) in not_hardware else "NODE_FAIL"
        by_job.setdefault(int(jid), []).append((float(t), fail_node.get((round(float(t), 6), str(cause))), state))
    head = "JobID|JobName|Partition|Account|Submit|Start|End|Elapsed|State|NNodes|NodeList|AllocTRES|ExitCode"
    rows = [head]

    def nodelist(nodes: int, jid: int, must: int | None) -> str:
        first = (jid * 7) % n_nodes
        chosen = [(first + k) % n_nodes for k in range(min(nodes, n_nodes))]
        if must is not None and must not in chosen:
            chosen[-1] = must
        return str(hostlist.collect_hostlist([host(i) for i in chosen]))

    def elapsed(a: float, b: float) -> str:
        s = int(round((b - a) * 3600))
        d, s = divmod(s, 86400)
        return (f"{d}-" if d else "") + f"{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"

    for jid, name, gpus, nodes, sub, start, end, done in zip(jrows["job"], jrows["name"], jrows["gpus"],
                                                              jrows["nodes"], jrows["submit_h"],
                                                              jrows["first_start_h"], jrows["end_h"], jrows["done"]):
        jid, nodes, gpus = int(jid), int(nodes), int(gpus)
        tres = f"billing={gpus * 16},cpu={gpus * 16},gres/gpu={gpus},mem={nodes * 2000}G,node={nodes}"
        if start is None or (isinstance(start, float) and math.isnan(start)):
            rows.append(f"{jid}|{name}|gpu|ml|{stamp(sub)}|Unknown|Unknown|00:00:00|PENDING|{nodes}|None assigned||0:0")
            continue
        attempts: list[tuple[float, float | None, str, int | None]] = []
        a = float(start)
        for t, node, st in sorted(by_job.get(jid, []), key=lambda x: x[0]):
            attempts.append((a, t, st, node))
            a = t
        if bool(done):
            u = rng.random()
            state = ("FAILED" if u < 0.03 else "TIMEOUT" if u < 0.04 else "CANCELLED by 1000" if u < 0.05
                     else "COMPLETED")
            attempts.append((a, float(end), state, None))
        else:
            attempts.append((a, None, "RUNNING", None))
        for a0, a1, state, must in attempts:
            nl = nodelist(nodes, jid, must)
            e_txt = stamp(a1) if a1 is not None else "Unknown"
            el = elapsed(a0, a1 if a1 is not None else horizon_h)
            code = "0:0" if state in ("COMPLETED", "NODE_FAIL", "RUNNING") else "1:0"
            rows.append(f"{jid}|{name}|gpu|ml|{stamp(sub)}|{stamp(a0)}|{e_txt}|{el}|{state}|{nodes}|{nl}|{tres}|{code}")
            first = hostlist.expand_hostlist(nl)[0]
            step_state = "CANCELLED" if state.startswith(("NODE_FAIL", "CANCELLED", "TIMEOUT")) else state.split()[0]
            rows.append(f"{jid}.batch|batch||ml|{stamp(a0)}|{stamp(a0)}|{e_txt}|{el}|{step_state}|1|{first}|"
                        f"cpu=16,gres/gpu={min(gpus, 8)},mem=2000G,node=1|{code}")
            rows.append(f"{jid}.extern|extern||ml|{stamp(a0)}|{stamp(a0)}|{e_txt}|{el}|{step_state}|{nodes}|{nl}|"
                        f"billing={gpus * 16},cpu={gpus * 16},gres/gpu={gpus},mem={nodes * 2000}G,node={nodes}|0:0")
            rows.append(f"{jid}.0|python|||{stamp(a0)}|{stamp(a0)}|{e_txt}|{el}|{step_state}|{nodes}|{nl}|"
                        f"cpu={gpus * 16},gres/gpu={gpus},mem={nodes * 2000}G,node={nodes}|{code}")
    sacct = out / "sacct.txt"
    sacct.write_text("\n".join(rows) + "\n", encoding="utf-8")

    # ---- tickets ----------------------------------------------------------------------------
    tk = tables["tickets"]
    trows = ["node,start,end,cause,part,work_start,work_end"]
    for node, p, fail_h, back_h, start_h, end_h, rung, done in zip(tk["node"], tk["part"], tk["fail_h"], tk["back_h"],
                                                                   tk["start_h"], tk["end_h"], tk["rung"], tk["done"]):
        if node is None or pd.isna(node) or int(node) < 0:  # a fabric or site unit: no node
            continue
        end_txt = stamp(back_h) if bool(done) and not pd.isna(back_h) else ""
        hands = int(rung) >= 2 and not pd.isna(start_h) and not pd.isna(end_h) and bool(done)
        work = f"{stamp(start_h)},{stamp(end_h)}" if hands else ","
        trows.append(f"{host(int(node))},{stamp(fail_h)},{end_txt},hardware,{p},{work}")
    tickets = out / "tickets.csv"
    tickets.write_text("\n".join(trows) + "\n", encoding="utf-8")
    return History(sacct, kernel, tickets, hostlist.collect_hostlist([host(i) for i in range(n_nodes)]),
                   ORIGIN.year, stamp(0.0), stamp(horizon_h))


def simulate_history(scenario: str | Path, out: Path, replication: int = 0, overrides: list[str] | None = None
                     ) -> History:
    """Run one replication of ``scenario`` and write its history under ``out``."""
    from twin.scenario.loader import load_scenario
    from twin.sim import run_replication

    sc = load_scenario(str(scenario), overrides or []).scenario
    res = run_replication(sc, replication)
    return write_history(dict(res.tables), sc.cluster.n_nodes, sc.horizon_h, out, seed=sc.seed + replication,
                         not_hardware=not_hardware(sc))


def not_hardware(sc: Any) -> frozenset[str]:
    """Interruption causes Slurm would not call NODE_FAIL: the scenario's transient node parts (a
    software fault crashes the job, the node stays up) and silent data corruption."""
    return frozenset({p for p, spec in sc.cluster.node.parts.items() if spec.effect == "transient"} | {"sdc"})


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m twin.calibrate.synth", description=__doc__.split("\n\n")[0])
    p.add_argument("scenario")
    p.add_argument("out")
    p.add_argument("--replication", type=int, default=0)
    p.add_argument("--set", dest="overrides", action="append", default=[])
    a = p.parse_args(argv)
    h = simulate_history(a.scenario, Path(a.out), a.replication, a.overrides)
    print(f"wrote {h.sacct}, {h.kernel}, {h.tickets}\n"
          f"twin calibrate {h.sacct} {h.kernel} {h.tickets} --year {h.year} --nodes '{h.nodes}' "
          f"--start {h.start} --end {h.end} --base {a.scenario} --out OUT")
    return 0


if __name__ == "__main__":
    sys.exit(main())
