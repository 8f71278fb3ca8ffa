"""Example GPU telemetry with a known truth, written in the formats of :mod:`twin.calibrate.telemetry`:
``nvidia-smi --format=csv`` (one file per node), dcgm-exporter scrapes in the text exposition format,
a Prometheus range-query JSON and an inlet CSV.

Two sources of samples (both a frame ``time_s, host, index, uuid, serial, temp_c, power_w, sm_mhz,
reasons, inlet_c``):

* :func:`twin_samples` — the twin's own GPUs: a replication of a scenario traced on every GPU
  (``cooling.trace``), sampled every ``interval_s`` on its piecewise-exponential temperature
  (T(t) = T_ss + (T_0 − T_ss)·exp(−Δt/τ) between the trace's rows); the per-GPU resistances are
  those the replication drew (the trace's ``r_c_per_w``); a sample of a GPU whose power is below its
  demand is thermally capped (reasons ``0x20``, SW thermal slowdown), an idle one ``0x1``;
* :func:`lognormal_samples` — a fleet drawn directly (for the round-trip tests): R_i = R_med·exp(σ·z_i),
  node inlets and a chassis preheat, power in phases between idle and training, Gaussian noise.

Temperatures are written as nvidia-smi and DCGM print them: whole degrees.
``python -m twin.calibrate.telemetry_synth SCENARIO OUT_DIR`` writes the twin's.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from twin.calibrate.synth import ORIGIN, host

COLUMNS = ["time_s", "host", "index", "uuid", "serial", "temp_c", "power_w", "sm_mhz", "reasons", "inlet_c"]
NVSMI_HEADER = ("timestamp, index, serial, temperature.gpu, power.draw [W], clocks.sm [MHz], "
                "clocks_event_reasons.active")
BOOST_MHZ = 1980.0
"""H100 SXM maximum SM clock, MHz (what an unthrottled busy GPU reports)."""


def _uuid(h: str, i: int) -> str:
    import hashlib

    d = hashlib.blake2b(f"{h}.gpu{i}".encode(), digest_size=16).hexdigest()
    return f"GPU-{d[:8]}-{d[8:12]}-{d[12:16]}-{d[16:20]}-{d[20:32]}"


def _serial(h: str, i: int) -> str:
    return str(1650000000000 + (int.from_bytes(h.encode()[-3:], "big") % 100000) * 10 + i)


def lognormal_samples(n_nodes: int = 16, gpus: int = 8, r_med: float = 0.075, r_sigma: float = 0.05,
                      days: float = 1.0, interval_s: float = 300.0, seed: int = 0, supply_c: float = 22.0,
                      preheat_c: float = 2.0, noise_c: float = 0.5, idle_w: float = 70.0, busy_w: float = 700.0,
                      slowdown_c: float = 89.0) -> tuple[pd.DataFrame, np.ndarray]:
    """Samples of a directly drawn fleet (see the module doc) and the true R of each GPU (node-major)."""
    rng = np.random.default_rng(seed)
    n_gpus = n_nodes * gpus
    r = r_med * np.exp(r_sigma * rng.standard_normal(n_gpus))
    node_in = supply_c + rng.exponential(0.5, n_nodes)
    slot = np.where(np.arange(gpus) >= gpus // 2, preheat_c, 0.0)
    tin_g = (node_in[:, None] + slot[None, :]).ravel()
    times = np.arange(0.0, days * 86400.0, interval_s)
    # power: per node, phases of 10-120 min at idle or a load level (a job uses all of a node's GPUs)
    power = np.empty((len(times), n_nodes))
    for n in range(n_nodes):
        t = 0.0
        while t < times[-1] + interval_s:
            dur = rng.uniform(600, 7200)
            level = idle_w if rng.random() < 0.25 else rng.uniform(0.55, 1.0) * busy_w
            m = (times >= t) & (times < t + dur)
            power[m, n] = level
            t += dur
    P = np.repeat(power, gpus, axis=1) * rng.uniform(0.97, 1.03, size=(len(times), n_gpus))
    cap = (slowdown_c - tin_g[None, :]) / r[None, :]
    capped = P > cap
    P = np.minimum(P, cap)
    T = tin_g[None, :] + r[None, :] * P + rng.normal(0.0, noise_c, size=P.shape)
    hosts = np.array([host(n) for n in range(n_nodes)])
    reasons = np.where(capped, 0x20, np.where(P < idle_w * 1.2, 0x1, 0x0))
    frame = pd.DataFrame({
        "time_s": np.repeat(ORIGIN.timestamp() + times, n_gpus),
        "host": np.tile(np.repeat(hosts, gpus), len(times)),
        "index": np.tile(np.tile(np.arange(gpus), n_nodes), len(times)),
        "temp_c": T.ravel(), "power_w": P.ravel(),
        "sm_mhz": np.where(capped, BOOST_MHZ * 0.85, np.where(P < idle_w * 1.2, 345.0, BOOST_MHZ)).ravel(),
        "reasons": reasons.ravel(),
        "inlet_c": np.tile(np.repeat(node_in, gpus), len(times))})
    frame["uuid"] = [_uuid(h, i) for h, i in zip(frame["host"], frame["index"])]
    frame["serial"] = [_serial(h, i) for h, i in zip(frame["host"], frame["index"])]
    return frame[COLUMNS], r


def trace_overrides(n_nodes: int, horizon_h: float) -> list[str]:
    """``--set`` overrides that trace every GPU over the whole horizon (``cooling.trace``: an output; the
    same events, the metrics equal but for the last digit or two of floating-point rounding)."""
    return [f"cooling.trace.nodes={list(range(n_nodes))}", "cooling.trace.from_h=0", f"cooling.trace.to_h={horizon_h}"]


def sample_trace(trace: pd.DataFrame, horizon_h: float, interval_s: float, idle_w: float,
                 origin_s: float = ORIGIN.timestamp()) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Telemetry samples of every traced GPU every ``interval_s`` (see the module doc) and the truth per
    GPU (``host, index, r_c_per_w, inlet_c``: its median resistance and inlet over the trace)."""
    tr = trace.sort_values(["node", "gpu", "time_h"], kind="stable")
    times_h = np.arange(0.0, horizon_h, interval_s / 3600.0)
    parts = []
    truth = []
    for (node, gpu), grp in tr.groupby(["node", "gpu"], sort=True):
        t = grp["time_h"].to_numpy()
        i = np.searchsorted(t, times_h, side="right") - 1
        ok = i >= 0
        i = i[ok]
        dt_s = (times_h[ok] - t[i]) * 3600.0
        tss = grp["tss_c"].to_numpy()[i]
        T = tss + (grp["temp_c"].to_numpy()[i] - tss) * np.exp(-dt_s / grp["tau_s"].to_numpy()[i])
        P = grp["power_w"].to_numpy()[i]
        demand_w = grp["demand_w"].to_numpy()[i]
        capped = P < demand_w - 0.5
        idle = P <= idle_w + 0.5
        h = host(int(node))
        parts.append(pd.DataFrame({
            "time_s": origin_s + times_h[ok] * 3600.0, "host": h, "index": int(gpu),
            "temp_c": T, "power_w": P,
            "sm_mhz": np.where(idle, 345.0, BOOST_MHZ * grp["speed"].to_numpy()[i]),
            "reasons": np.where(capped, 0x20, np.where(idle, 0x1, 0x0)),
            "inlet_c": grp["inlet_c"].to_numpy()[i], "uuid": _uuid(h, int(gpu)), "serial": _serial(h, int(gpu))}))
        truth.append((h, int(gpu), float(np.median(grp["r_c_per_w"])), float(np.median(grp["inlet_c"]))))
    frame = pd.concat(parts, ignore_index=True).sort_values(["time_s", "host", "index"], kind="stable")
    # the node's inlet reading: its first (upstream) GPU's inlet
    node_in = frame[frame["index"] == 0].set_index(["time_s", "host"])["inlet_c"]
    frame["inlet_c"] = node_in.reindex(pd.MultiIndex.from_arrays([frame["time_s"], frame["host"]])).to_numpy()
    return frame[COLUMNS].reset_index(drop=True), pd.DataFrame(truth, columns=["host", "index", "r_c_per_w",
                                                                                "inlet_c"])


def twin_samples(scenario: str | Path, replication: int = 0, interval_s: float = 300.0,
                 overrides: list[str] | None = None) -> tuple[pd.DataFrame, pd.DataFrame, Any]:
    """Samples of every GPU of one replication of ``scenario`` (see the module doc), the truth per GPU
    (``host, index, r_c_per_w, inlet_c, offset_c``: the resistance the replication drew, its inlet and
    that inlet above its node's first GPU's) and the loaded scenario."""
    from twin.scenario.loader import load_scenario
    from twin.sim import run_replication

    sc0 = load_scenario(str(scenario), overrides or []).scenario
    sc = load_scenario(str(scenario), (overrides or []) + trace_overrides(sc0.cluster.n_nodes, sc0.horizon_h)
                       ).scenario
    res = run_replication(sc, replication)
    frame, tru = sample_trace(res.tables["thermal_trace"], sc.horizon_h, interval_s, float(sc.cluster.node.gpu.idle_w))
    tru["offset_c"] = tru["inlet_c"] - tru.groupby("host")["inlet_c"].transform("first")
    return frame, tru, sc


def feed(frame: pd.DataFrame, tel: Any) -> None:
    """Add samples to a :class:`~twin.calibrate.telemetry.Telemetry` as the readers would from the
    written files (temperatures in whole degrees, power to 0.01 W)."""
    for h, i, u, t, T, P, r in zip(frame["host"], frame["index"], frame["uuid"], frame["time_s"],
                                   frame["temp_c"], frame["power_w"], frame["reasons"]):
        tel.add(tel.gpu(str(h), str(int(i)), str(u)), float(t), float(round(float(T))), round(float(P), 2), int(r))


def _nvsmi_time(t_s: float) -> str:
    return datetime.fromtimestamp(t_s, timezone.utc).strftime("%Y/%m/%d %H:%M:%S.%f")[:-3]


def write_nvidia_smi(frame: pd.DataFrame, out: Path) -> list[Path]:
    """One ``<host>.csv`` per node as ``nvidia-smi --query-gpu=... --format=csv -l`` prints it."""
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for h, grp in frame.groupby("host", sort=True):
        rows = [NVSMI_HEADER]
        for t, i, s, T, P, f, r in zip(grp["time_s"], grp["index"], grp["serial"], grp["temp_c"], grp["power_w"],
                                       grp["sm_mhz"], grp["reasons"]):
            rows.append(f"{_nvsmi_time(float(t))}, {int(i)}, {s}, {int(round(float(T)))}, {float(P):.2f} W, "
                        f"{int(round(float(f)))} MHz, 0x{int(r):016X}")
        p = out / f"{h}.csv"
        p.write_text("\n".join(rows) + "\n", encoding="utf-8")
        paths.append(p)
    return paths


def _labels(h: str, i: int, uuid: str) -> str:
    return (f'gpu="{i}",UUID="{uuid}",pci_bus_id="00000000:{0x18 + 16 * i:02X}:00.0",device="nvidia{i}",'
            f'modelName="NVIDIA H100 80GB HBM3",Hostname="{h}"')


_HELP = {"DCGM_FI_DEV_SM_CLOCK": ("gauge", "SM clock frequency (in MHz)."),
         "DCGM_FI_DEV_GPU_TEMP": ("gauge", "GPU temperature (in C)."),
         "DCGM_FI_DEV_POWER_USAGE": ("gauge", "Power draw (in W)."),
         "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS": ("gauge", "Current clock throttle reasons.")}
_COLS = {"DCGM_FI_DEV_SM_CLOCK": "sm_mhz", "DCGM_FI_DEV_GPU_TEMP": "temp_c", "DCGM_FI_DEV_POWER_USAGE": "power_w",
         "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS": "reasons"}


def _value(col: str, v: float) -> str:
    if col == "temp_c":
        return str(int(round(v)))
    if col in ("sm_mhz", "reasons"):
        return str(int(round(v)))
    return f"{v:.3f}"


def write_exposition(frame: pd.DataFrame, path: Path) -> Path:
    """dcgm-exporter scrapes, one per sample time, each sample line with its time stamp (ms)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        for t, grp in frame.groupby("time_s", sort=True):
            ms = int(round(float(t) * 1000))
            for metric, col in _COLS.items():
                kind, text = _HELP[metric]
                fh.write(f"# HELP {metric} {text}\n# TYPE {metric} {kind}\n")
                for h, i, u, v in zip(grp["host"], grp["index"], grp["uuid"], grp[col]):
                    fh.write(f"{metric}{{{_labels(str(h), int(i), str(u))}}} {_value(col, float(v))} {ms}\n")
    return path


def write_prometheus_json(frame: pd.DataFrame, path: Path) -> Path:
    """The JSON of a Prometheus ``/api/v1/query_range`` of the four DCGM metrics."""
    result = []
    for metric, col in _COLS.items():
        for (h, i, u), grp in frame.groupby(["host", "index", "uuid"], sort=True):
            labels = {"__name__": metric, "Hostname": str(h), "UUID": str(u), "gpu": str(int(i)),
                      "instance": f"{h}:9400", "job": "dcgm-exporter", "modelName": "NVIDIA H100 80GB HBM3"}
            result.append({"metric": labels, "values": [[round(float(t), 3), _value(col, float(v))]
                                                         for t, v in zip(grp["time_s"], grp[col])]})
    doc = {"status": "success", "data": {"resultType": "matrix", "result": result}}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, separators=(",", ":")), encoding="utf-8")
    return path


def write_inlet(frame: pd.DataFrame, path: Path) -> Path:
    """``node,time,inlet_c`` of each node at each sample time (one decimal, as a BMC reports it)."""
    f = frame[frame["index"] == 0]
    rows = ["node,time,inlet_c"] + [
        f"{h},{datetime.fromtimestamp(float(t), timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')},{float(c):.1f}"
        for t, h, c in zip(f["time_s"], f["host"], f["inlet_c"])]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m twin.calibrate.telemetry_synth", description=__doc__.split("\n\n")[0])
    p.add_argument("scenario")
    p.add_argument("out")
    p.add_argument("--replication", type=int, default=0)
    p.add_argument("--interval-s", dest="interval_s", type=float, default=300.0)
    p.add_argument("--set", dest="overrides", action="append", default=[])
    p.add_argument("--all-formats", action="store_true",
                   help="every node in every format (default: nvidia-smi for the first half of the nodes, a "
                        "Prometheus range query of DCGM metrics for the rest, as a mixed fleet keeps them)")
    a = p.parse_args(argv)
    out = Path(a.out)
    frame, truth, _sc = twin_samples(a.scenario, a.replication, a.interval_s, a.overrides)
    hosts = sorted(set(frame["host"]))
    half = set(hosts[: (len(hosts) + 1) // 2])
    if a.all_formats:
        smi, dcgm = frame, frame
        write_exposition(frame, out / "dcgm-scrapes.prom")
    else:
        smi, dcgm = frame[frame["host"].isin(half)], frame[~frame["host"].isin(half)]
    write_nvidia_smi(smi, out / "nvidia-smi")
    if len(dcgm):
        write_prometheus_json(dcgm, out / "dcgm-query-range.json")
    write_inlet(frame, out / "inlet.csv")
    truth.to_csv(out / "truth.csv", index=False)
    print(f"wrote under {out}: nvidia-smi/<host>.csv, dcgm-query-range.json"
          + (", dcgm-scrapes.prom" if a.all_formats else "") + ", inlet.csv and truth.csv (the resistance each GPU "
          "drew)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
