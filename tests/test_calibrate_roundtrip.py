"""Round trips of ``twin calibrate`` (issue 44): simulate a known scenario, write its history as sacct,
kernel-log XID and ticket files (twin.calibrate.synth), read and fit them, and recover the parameters
within their intervals; the posterior-predictive check flags a base with twice the true GPU failure
rate and passes the true one."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from twin import cli
from twin.calibrate.common import parse_iso, zone
from twin.calibrate.gather import Calibration, calibrate
from twin.calibrate.sacct import read_sacct
from twin.calibrate.synth import History, write_history
from twin.calibrate.tickets import read_tickets
from twin.calibrate.xid import XidTable, read_xids
from twin.scenario.loader import load_scenario
from twin.sim import run_replication

UTC = zone("UTC")

TRUTH: dict[str, Any] = {
    "name": "roundtrip", "seed": 20261204, "horizon_days": 120,
    "cluster": {"racks": 8, "nodes_per_rack": 4, "node": {"gpus": 8, "parts": {
        "gpu": {"count": 1, "per": "gpu", "effect": "node_down",
                "failure": {"dist": "weibull", "shape": 1.5, "scale_h": 7000},
                "repair": {"time": {"dist": "lognormal", "mean_h": 4, "sigma": 0.5}}},
        "hbm": {"count": 1, "per": "gpu", "effect": "node_down", "failure": {"mtbf_h": 40000},
                "repair": {"time": {"dist": "lognormal", "mean_h": 4, "sigma": 0.5}}},
        "host": {"count": 1, "effect": "node_down", "failure": {"mtbf_h": 10000},
                 "repair": {"time": {"dist": "lognormal", "mean_h": 6, "sigma": 0.7}}}}}},
    "health": {"frailty": {"variance": 0.5}},
    "maintenance": {"crews": {"technicians": {"count": 4, "shift": "24x7"}}},
    "workload": {"scheduler": {"policy": "backfill"}, "synthetic": {
        "arrival_rate_per_h": 1.0, "gpus": {"values": [8, 16, 32], "weights": [60, 30, 10]},
        "work": {"dist": "lognormal", "mean_h": 6, "sigma": 1.0},
        "checkpoint": {"interval_h": 2, "size_gb": 50, "mode": "async"}}},
}


def history(tmp: Path, doc: dict[str, Any], replication: int) -> tuple[Any, History]:
    (tmp / "truth.yaml").write_text(yaml.safe_dump(doc), encoding="utf-8")
    sc = load_scenario(str(tmp / "truth.yaml"), []).scenario
    res = run_replication(sc, replication)
    h = write_history(dict(res.tables), sc.cluster.n_nodes, sc.horizon_h, tmp / f"logs{replication}",
                      seed=replication)
    return sc, h


def fit_history(sc: Any, h: History) -> Calibration:
    import hostlist

    return calibrate(sc, [read_sacct(h.sacct, UTC)], read_xids([h.kernel], UTC, h.year), XidTable(),
                     [read_tickets(h.tickets, UTC)], hostlist.expand_hostlist(h.nodes), parse_iso(h.start, UTC),
                     parse_iso(h.end, UTC))


def expected_failures_per_node_day(doc: dict[str, Any], n: int = 100_000, seed: int = 1) -> float:
    """Monte Carlo of the truth: node_down part failures per node-day over the horizon, with the
    gamma frailty and renewals after a repair (the twin's model, drawn independently of it)."""
    rng = np.random.default_rng(seed)
    T = doc["horizon_days"] * 24.0
    v = doc.get("health", {}).get("frailty", {}).get("variance", 0.0)
    total = 0.0
    for spec in doc["cluster"]["node"]["parts"].values():
        per = doc["cluster"]["node"]["gpus"] if spec.get("per") == "gpu" else spec["count"]
        z = rng.gamma(1 / v, v, n) if v > 0 else np.ones(n)
        f = spec["failure"]
        k, scale = (f["shape"], f["scale_h"]) if f.get("dist") == "weibull" else (1.0, f["mtbf_h"])
        t = np.zeros(n)
        count = np.zeros(n)
        alive = np.ones(n, dtype=bool)
        while alive.any():  # S(t)^Z of a Weibull is a Weibull of scale * Z^(-1/k)
            life = scale * z[alive] ** (-1.0 / k) * rng.weibull(k, alive.sum())
            t[alive] += life
            hit = alive.copy()
            hit[alive] = t[alive] <= T
            count[hit] += 1
            t[hit] += spec["repair"]["time"]["mean_h"]
            alive = hit & (t < T)
        total += per * count.mean()
    return total / (T / 24.0)


def covered(cal: Calibration, doc: dict[str, Any], job_truth: float) -> dict[str, bool]:
    """Whether each fitted parameter's interval holds the truth."""
    parts = doc["cluster"]["node"]["parts"]
    gpu = cal.parts["gpu"].fit
    assert gpu is not None
    wb = gpu.models["weibull"]
    out = {
        "gpu shape": wb.ci["shape"][0] <= parts["gpu"]["failure"]["shape"] <= wb.ci["shape"][1],
        "gpu scale_h": wb.ci["scale_h"][0] <= parts["gpu"]["failure"]["scale_h"] <= wb.ci["scale_h"][1],
    }
    for p in ("hbm", "host"):
        fit = cal.parts[p].fit
        ex = fit.models["exponential"] if fit is not None else None
        truth = parts[p]["failure"]["mtbf_h"]
        out[f"{p} mtbf_h"] = ex is not None and ex.ci["mean_h"][0] <= truth <= ex.ci["mean_h"][1]
    assert cal.frailty is not None and cal.jobs is not None
    lo, hi = cal.frailty.ci
    out["frailty variance"] = lo <= doc["health"]["frailty"]["variance"] <= hi
    jlo, jhi = cal.jobs.interruptions.ci
    out["job interruptions per node-day"] = jlo <= job_truth <= jhi
    return out


def test_round_trip_recovers_the_parameters(tmp_path: Path) -> None:
    sc, h = history(tmp_path, TRUTH, 0)
    cal = fit_history(sc, h)
    job_truth = expected_failures_per_node_day(TRUTH)
    cov = covered(cal, TRUTH, job_truth)
    assert all(cov.values()), cov
    # the counts the files carry are the simulation's, one for one
    assert cal.parts["gpu"].units == 256 and cal.parts["host"].units == 32
    assert cal.jobs is not None and set(cal.jobs.by_cause) <= {"gpu", "hbm", "host"}
    assert cal.xid is not None and cal.xid.storm_lines > 0 and 62 in cal.xid.unknown


@pytest.mark.slow
def test_round_trip_interval_coverage_over_40_seeds(tmp_path: Path) -> None:
    """Over 40 replications the 95 % intervals cover the truth at least 85 % of the time."""
    job_truth = expected_failures_per_node_day(TRUTH)
    hits: dict[str, int] = {}
    for r in range(40):
        sc, h = history(tmp_path, TRUTH, r)
        for k, ok in covered(fit_history(sc, h), TRUTH, job_truth).items():
            hits[k] = hits.get(k, 0) + int(ok)
    shares = {k: v / 40 for k, v in hits.items()}
    print("coverage of the 95 % intervals over 40 seeds:", shares)
    assert all(s >= 0.85 for s in shares.values()), shares


CHECK: dict[str, Any] = {
    "name": "check", "seed": 11, "horizon_days": 90,
    "cluster": {"racks": 8, "nodes_per_rack": 4, "node": {"gpus": 8, "parts": {
        "gpu": {"count": 1, "per": "gpu", "effect": "node_down", "failure": {"mtbf_h": 5000},
                "repair": {"time": {"dist": "lognormal", "mean_h": 4, "sigma": 0.5}}},
        "host": {"count": 1, "effect": "node_down", "failure": {"mtbf_h": 10000},
                 "repair": {"time": {"dist": "lognormal", "mean_h": 6, "sigma": 0.5}}}}}},
    "maintenance": {"crews": {"technicians": {"count": 4, "shift": "24x7"}}},
    "workload": {"scheduler": {"policy": "backfill"}, "synthetic": {
        "arrival_rate_per_h": 0.5, "gpus": {"values": [8, 16, 32], "weights": [60, 30, 10]},
        "work": {"dist": "lognormal", "mean_h": 6, "sigma": 1.0},
        "checkpoint": {"interval_h": 2, "size_gb": 50, "mode": "async"}}},
}


def test_check_flags_a_base_with_twice_the_gpu_failure_rate(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    _sc, h = history(tmp_path, CHECK, 5)
    wrong = {**CHECK, "cluster": yaml.safe_load(yaml.safe_dump(CHECK["cluster"]))}
    wrong["cluster"]["node"]["parts"]["gpu"]["failure"] = {"mtbf_h": 2500}
    (tmp_path / "wrong.yaml").write_text(yaml.safe_dump(wrong), encoding="utf-8")
    args = [str(h.sacct), str(h.kernel), str(h.tickets), "--year", str(h.year), "--nodes", h.nodes, "--start",
            h.start, "--end", h.end, "--reps", "12", "--check", "base"]
    code_right = cli.main(["calibrate", *args, "--base", "truth.yaml", "--out", "right"])
    code_wrong = cli.main(["calibrate", *args, "--base", "wrong.yaml", "--out", "wrong"])
    out = capsys.readouterr().out
    assert code_right == 0 and code_wrong == 1, out
    right_md = (tmp_path / "right" / "report.md").read_text()
    wrong_md = (tmp_path / "wrong" / "report.md").read_text()
    assert "**inconsistent**" not in right_md
    gpu_row = next(line for line in wrong_md.splitlines()
                   if line.startswith("| part failures per 1,000 node-days: gpu"))
    assert gpu_row.endswith("**inconsistent** |")
    # the calibrated scenario extends the base and carries the fitted GPU MTBF with its comment
    text = (tmp_path / "wrong" / "calibrated.yaml").read_text()
    assert "extends: ../wrong.yaml" in text and "kernel.log:" in text and "failures in 256 units" in text
    cal = load_scenario(str(tmp_path / "wrong" / "calibrated.yaml"), []).scenario
    mtbf = cal.cluster.node.parts["gpu"].failure.mean()
    assert 3500 < mtbf < 7000 and not math.isclose(mtbf, 2500)
