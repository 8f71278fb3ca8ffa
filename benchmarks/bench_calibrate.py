"""Streamed reads of ``twin calibrate`` (issue 44): a kernel log of N lines and a sacct file of M jobs
read within bounded memory. A script, not a timed test:

    python -m benchmarks.bench_calibrate --kernel-lines 10000000 --jobs 1000000 [--dir /tmp/bench-calibrate]

writes the two files (a syslog of kernel lines, 1 in 100 an XID with a storm of repeats now and then;
``sacct --parsable2`` with a job line and ``.batch``, ``.extern`` and ``.0`` steps per job, 1 in 200 a
NODE_FAIL), then reads each in a fresh process and prints the lines read per second and the reader's
peak resident memory above the interpreter's own (``ru_maxrss`` after the read minus before it)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

ORIGIN = datetime(2026, 1, 5, tzinfo=timezone.utc)


def write_kernel_log(path: Path, n_lines: int, n_hosts: int = 2048, seed: int = 1) -> None:
    """``n_lines`` syslog kernel lines over a year, time-ordered."""
    rng = np.random.default_rng(seed)
    span_s = 365 * 86400
    chunk = 200_000
    with open(path, "w", encoding="utf-8") as fh:
        done = 0
        while done < n_lines:
            k = min(chunk, n_lines - done)
            t = (done + np.arange(k)) * (span_s / n_lines)
            hosts = rng.integers(0, n_hosts, k)
            kind = rng.random(k)
            out = []
            for ti, h, u in zip(t, hosts, kind):
                d = ORIGIN + timedelta(seconds=float(ti))
                stamp = f"{d.strftime('%b')} {d.day:2d} {d.strftime('%H:%M:%S')} gpu{h:04d} kernel: "
                if u < 0.01:
                    xid = (79, 48, 13, 94, 63, 31)[int(u * 600) % 6]
                    out.append(f"{stamp}NVRM: Xid (PCI:0000:{int(u * 1e6) % 8 * 16 + 24:02x}:00): {xid}, pid=4242, "
                               "name=python, an XID message\n")
                else:
                    out.append(f"{stamp}mlx5_core 0000:ab:00.0 mlx5_5: Port: 1 Link ACTIVE\n")
            fh.write("".join(out))
            done += k


def write_sacct(path: Path, n_jobs: int, n_hosts: int = 2048, seed: int = 2) -> None:
    """``n_jobs`` jobs with three steps each over a year."""
    rng = np.random.default_rng(seed)
    chunk = 50_000
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("JobID|JobName|Submit|Start|End|State|NNodes|NodeList|AllocTRES|ExitCode\n")
        for first in range(0, n_jobs, chunk):
            k = min(chunk, n_jobs - first)
            starts = (first + np.arange(k)) * (365 * 86400 / n_jobs)
            nodes = rng.choice([1, 2, 4, 16], k, p=[0.6, 0.25, 0.1, 0.05])
            dur = rng.lognormal(np.log(4 * 3600), 1.0, k)
            fail = rng.random(k) < 0.005
            out = []
            for i in range(k):
                jid = first + i + 1
                s = ORIGIN + timedelta(seconds=float(starts[i]))
                e = s + timedelta(seconds=float(dur[i]))
                st, et = s.strftime("%Y-%m-%dT%H:%M:%S"), e.strftime("%Y-%m-%dT%H:%M:%S")
                h0 = int(rng.integers(0, n_hosts - 16))
                n = int(nodes[i])
                nl = f"gpu{h0:04d}" if n == 1 else f"gpu[{h0:04d}-{h0 + n - 1:04d}]"
                state = "NODE_FAIL" if fail[i] else "COMPLETED"
                tres = f"billing={8 * n},cpu={64 * n},gres/gpu={8 * n},mem={n}T,node={n}"
                out.append(f"{jid}|train|{st}|{st}|{et}|{state}|{n}|{nl}|{tres}|0:0\n")
                sub = "CANCELLED" if fail[i] else "COMPLETED"
                out.append(f"{jid}.batch|batch|{st}|{st}|{et}|{sub}|1|gpu{h0:04d}|cpu=64,gres/gpu=8,node=1|0:0\n")
                out.append(f"{jid}.extern|extern|{st}|{st}|{et}|{sub}|{n}|{nl}|{tres}|0:0\n")
                out.append(f"{jid}.0|python|{st}|{st}|{et}|{sub}|{n}|{nl}|{tres}|0:0\n")
            fh.write("".join(out))


_READ = """
import json, resource, sys, time
from twin.calibrate.common import zone
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
import twin.calibrate.sacct, twin.calibrate.xid, pandas, numpy, hostlist
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0, c0 = time.perf_counter(), time.process_time()
if sys.argv[1] == "kernel":
    log = twin.calibrate.xid.read_xids([sys.argv[2]], zone("UTC"), year=2026)
    lines, records = log.lines, len(log.events)
else:
    log = twin.calibrate.sacct.read_sacct(sys.argv[2], zone("UTC"))
    lines, records = log.lines, len(log.attempts)
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"lines": lines, "records": records, "wall_s": wall, "cpu_s": cpu,
                  "rss_imports_mb": base / 1024, "rss_read_mb": (peak - base) / 1024}))
"""


def read_in_child(kind: str, path: Path) -> dict[str, float]:
    """Read ``path`` in a fresh interpreter; its timings and memory."""
    out = subprocess.run([sys.executable, "-c", _READ, kind, str(path)], check=True, capture_output=True, text=True)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.bench_calibrate", description=__doc__.split("\n\n")[0])
    p.add_argument("--kernel-lines", type=int, default=10_000_000)
    p.add_argument("--jobs", type=int, default=1_000_000)
    p.add_argument("--dir", default="/tmp/bench-calibrate")
    a = p.parse_args(argv)
    d = Path(a.dir)
    d.mkdir(parents=True, exist_ok=True)
    kern, sacct = d / f"kernel-{a.kernel_lines}.log", d / f"sacct-{a.jobs}.txt"
    for path, writer, n in ((kern, write_kernel_log, a.kernel_lines), (sacct, write_sacct, a.jobs)):
        if not path.exists():
            t = time.perf_counter()
            writer(path, n)
            print(f"wrote {path} ({path.stat().st_size / 1e6:.0f} MB) in {time.perf_counter() - t:.0f} s")
    for kind, path in (("kernel", kern), ("sacct", sacct)):
        r = read_in_child(kind, path)
        print(f"{kind}: {r['lines']:,} lines -> {r['records']:,} records in {r['wall_s']:.1f} s wall "
              f"({r['cpu_s']:.1f} s CPU, {r['lines'] / r['cpu_s']:,.0f} lines per CPU-second); peak memory of the "
              f"read {r['rss_read_mb']:.0f} MB above the interpreter's {r['rss_imports_mb']:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
