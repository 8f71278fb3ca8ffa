"""Streamed reads of GPU telemetry for ``twin calibrate`` (issue 45): an nvidia-smi CSV of N lines read
within memory bounded by the GPUs, not the lines. A script, not a timed test:

    python -m benchmarks.bench_telemetry --lines 2000000 --gpus 64 [--dir /tmp/bench-telemetry]

writes ``nvidia-smi --query-gpu=timestamp,index,serial,temperature.gpu,power.draw,clocks.sm,
clocks_event_reasons.active --format=csv`` output of ``--gpus`` GPUs (one file, the GPUs of one host
numbered on), then reads it in a fresh process and prints the lines read per CPU-second and the reader's
peak resident memory above the interpreter's own (``ru_maxrss`` after the read minus before it), and
the same for a file a tenth as long: the two peaks should be alike."""

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
HEADER = ("timestamp, index, serial, temperature.gpu, power.draw [W], clocks.sm [MHz], "
          "clocks_event_reasons.active\n")


def write_nvidia_smi(path: Path, n_lines: int, gpus: int, seed: int = 1) -> None:
    """``n_lines`` sample lines of ``gpus`` GPUs, one sample of each every 60 s."""
    rng = np.random.default_rng(seed)
    r = 0.08 * np.exp(0.05 * rng.standard_normal(gpus))
    chunk = 100_000
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(HEADER)
        for first in range(0, n_lines, chunk):
            k = min(chunk, n_lines - first)
            i = first + np.arange(k)
            g = i % gpus
            p = rng.uniform(70, 700, k)
            t = np.rint(24 + r[g] * p + rng.normal(0, 0.5, k)).astype(int)
            out = []
            for ii, gg, pp, tt in zip(i.tolist(), g.tolist(), p.tolist(), t.tolist()):
                d = ORIGIN + timedelta(seconds=60.0 * (ii // gpus))
                mask = 0x20 if tt >= 89 else 0
                out.append(f"{d.strftime('%Y/%m/%d %H:%M:%S')}.000, {gg}, {1650000000000 + gg}, {tt}, {pp:.2f} W, "
                           f"1980 MHz, 0x{mask:016X}\n")
            fh.write("".join(out))


_READ = """
import json, resource, sys, time
from twin.calibrate.common import zone
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
import twin.calibrate.telemetry as T, twin.calibrate.thermal_fit, numpy, scipy.stats
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0, c0 = time.perf_counter(), time.process_time()
tel = T.Telemetry()
T.read_nvidia_smi(sys.argv[1], zone("UTC"), tel, host="h")
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"lines": tel.sources[0][2], "gpus": len(tel.gpus), "wall_s": wall, "cpu_s": cpu,
                  "rss_imports_mb": base / 1024, "rss_read_mb": (peak - base) / 1024}))
"""


def read_in_child(path: Path) -> dict[str, float]:
    """Read ``path`` in a fresh interpreter; its timings and memory."""
    out = subprocess.run([sys.executable, "-c", _READ, str(path)], check=True, capture_output=True, text=True)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.bench_telemetry", description=__doc__.split("\n\n")[0])
    p.add_argument("--lines", type=int, default=2_000_000)
    p.add_argument("--gpus", type=int, default=64)
    p.add_argument("--dir", default="/tmp/bench-telemetry")
    a = p.parse_args(argv)
    d = Path(a.dir)
    d.mkdir(parents=True, exist_ok=True)
    for n in (a.lines // 10, a.lines):
        path = d / f"nvidia-smi-{n}.csv"
        if not path.exists():
            t = time.perf_counter()
            write_nvidia_smi(path, n, a.gpus)
            print(f"wrote {path} ({path.stat().st_size / 1e6:.0f} MB) in {time.perf_counter() - t:.0f} s")
        r = read_in_child(path)
        print(f"nvidia-smi: {r['lines']:,} lines of {r['gpus']} GPUs in {r['wall_s']:.1f} s wall ({r['cpu_s']:.1f} s "
              f"CPU, {r['lines'] / r['cpu_s']:,.0f} lines per CPU-second); peak memory of the read "
              f"{r['rss_read_mb']:.0f} MB above the interpreter's {r['rss_imports_mb']:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
