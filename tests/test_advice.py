"""Advisories (twin.scenario.advice): closed-form flags a scenario's own numbers raise before it is
simulated, printed by `twin run` (and --dry-run) and `twin montecarlo` and kept in summary.json."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from twin import cli
from twin.physics import closed_forms as cf
from twin.scenario.advice import ETTR_LOSS, advise, crew_advice, job_interruption_rates_per_h, spares_advice
from twin.scenario.loader import load_scenario

ROOT = Path(__file__).resolve().parents[1]
PRETRAIN = ROOT / "scenarios" / "pretrain-16k.yaml"
BASELINE = ROOT / "scenarios" / "baseline.yaml"
# pretrain-16k's spares as first bundled: reorder points below the lead-time demand
OLD_SPARES = ["maintenance.spares.gpu.reorder_point=32", "maintenance.spares.hbm.reorder_point=16",
              "maintenance.spares.psu.reorder_point=16"]


def test_spares_below_lead_time_demand_are_flagged_with_a_suggestion() -> None:
    sc = load_scenario(PRETRAIN, OLD_SPARES).scenario
    flags = {a.field: a.text for a in spares_advice(sc)}
    assert set(flags) == {"maintenance.spares.gpu.reorder_point", "maintenance.spares.hbm.reorder_point"}
    gpu = sc.cluster.node.parts["gpu"]
    lead = gpu.count * sc.cluster.n_nodes / gpu.failure.mean() * 14 * 24  # GPUs failing in 14 days
    assert f"({lead:.1f} = " in flags["maintenance.spares.gpu.reorder_point"]
    assert f"about {math.ceil(lead + 2.33 * math.sqrt(lead))} gives" in flags["maintenance.spares.gpu.reorder_point"]
    # PSU: 16 against 14 in its 7-day lead time is not flagged; the bundled scenario raises no spares flag
    assert not spares_advice(load_scenario(PRETRAIN).scenario)


def test_crew_flag_is_the_queue_stability_condition() -> None:
    """Flagged exactly when the offered load Σ rate × mean hands-on time reaches the technicians on
    shift (24x7: count; business hours: count × 45/168)."""
    sc = load_scenario(BASELINE).scenario
    load = sum(p.count * sc.cluster.n_nodes / p.failure.mean() * p.repair.time.mean()
               for p in sc.cluster.node.parts.values() if p.effect != "transient")
    net = sc.network
    if net is not None:
        c = net.counts(sc.cluster.n_nodes)
        for name, units in (("optic", c["optics"]), ("leaf", c["leaves"]), ("spine", c["spines"])):
            fp = getattr(net, name)
            load += units / fp.failure.mean() * fp.repair.time.mean()
    assert not crew_advice(sc)  # 2 technicians, 24x7, far more than the load
    # make the GPUs fail 100x as often: the same arithmetic decides
    gpu = sc.cluster.node.parts["gpu"]
    extra = gpu.count * sc.cluster.n_nodes * gpu.repair.time.mean() * (100 - 1) / gpu.failure.mean()
    heavy = load + extra
    for count, shift, capacity in ((math.floor(heavy), "24x7", math.floor(heavy)),
                                   (math.ceil(heavy), "24x7", math.ceil(heavy)),
                                   (math.ceil(heavy), "business", math.ceil(heavy) * 45 / 168)):
        sets = [f"cluster.node.parts.gpu.failure.mean_h={gpu.failure.mean() / 100!r}",
                f"maintenance.crews.technicians.count={count}", f"maintenance.crews.technicians.shift={shift}"]
        flags = crew_advice(load_scenario(BASELINE, sets).scenario)
        assert bool(flags) == (heavy >= capacity), (count, shift, heavy, capacity)
        if flags:
            assert f"{heavy:.2f} technicians of work" in flags[0].text


def test_checkpoint_flag_follows_daly() -> None:
    sc = load_scenario(PRETRAIN).scenario
    wl = sc.workload
    job = wl.jobs[0]
    nodes = job.gpus // sc.cluster.node.gpus
    M = 1.0 / sum(r for _, _, r in job_interruption_rates_per_h(sc, nodes))
    delta = job.checkpoint.size_gb / wl.storage.write_gb_per_s / 3600
    R = (wl.restart.detection_h + wl.restart.reschedule_h + job.checkpoint.size_gb / wl.storage.read_gb_per_s / 3600
         + wl.restart.warmup_h)
    tau_d = float(cf.daly_interval_h(delta, M))

    def ettr(tau: float) -> float:
        return tau / float(cf.daly_expected_wall_time_h(tau, tau, delta, R, M))

    (flag,) = [a for a in advise(sc) if a.field == "workload.jobs.0.checkpoint.interval_h"]
    assert f"{ettr(0.5):.3f} here, {ettr(tau_d):.3f} at the optimum" in flag.text
    assert ettr(tau_d) - ettr(0.5) >= ETTR_LOSS
    # at Daly's interval, or near enough that the loss is below a point, nothing is flagged
    for tau in (tau_d, 1.5 * tau_d):
        near = load_scenario(PRETRAIN, [f"workload.jobs.0.checkpoint.interval_h={tau!r}"]).scenario
        assert not [a for a in advise(near) if "checkpoint" in a.field]


def test_job_interruption_rates_count_node_parts_and_fabric() -> None:
    sc = load_scenario(PRETRAIN).scenario
    rows = {src: r for src, _, r in job_interruption_rates_per_h(sc, 100)}
    parts = sc.cluster.node.parts
    assert rows["gpu"] == pytest.approx(100 * parts["gpu"].count / parts["gpu"].failure.mean())
    assert "psu" not in rows and "fan" not in rows  # redundant: a node stops only after several failures
    net = sc.network
    assert rows["leaf"] == pytest.approx(math.ceil(100 / net.nodes_per_leaf) * net.rails / net.leaf.failure.mean())
    # a one-node job does not use the compute fabric: neither cut links nor flaps interrupt it (as in the
    # workload model), so the advice does not count them
    one = {src for src, _, _ in job_interruption_rates_per_h(sc, 1)}
    assert "gpu" in one and not one & {"link_flap", "leaf", "optic (node links)", "trunk_flap"}


def test_cli_prints_advice_and_keeps_it_in_the_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["run", str(PRETRAIN), *[x for s in OLD_SPARES for x in ("--set", s)]]
    assert cli.main([*args, "--dry-run"]) == 0
    out = capsys.readouterr().out
    advice = [line for line in out.splitlines() if line.startswith("advice: ")]
    assert [a.split(":")[1].strip() for a in advice] == [
        "maintenance.spares.gpu.reorder_point", "maintenance.spares.hbm.reorder_point",
        "workload.jobs.0.checkpoint.interval_h"]
    assert cli.main([*args, "--results", str(tmp_path), "--quiet", "--set", "horizon_days=2"]) == 0
    (folder,) = (tmp_path / "pretrain-16k").iterdir()
    summary = json.loads((folder / "summary.json").read_text())
    assert [a.split(":")[0] for a in summary["advice"]] == [a.split(":")[1].strip() for a in advice]


def test_reports_show_the_advisories(tmp_path: Path) -> None:
    """summary.md of a run and the Monte-Carlo HTML/Markdown report list them."""
    from twin.experiment.runner import run_experiment
    from twin.report.html import build_report

    sets = [*OLD_SPARES, "horizon_days=2"]
    assert cli.main(["run", str(PRETRAIN), "--results", str(tmp_path / "run"), "--quiet",
                     *[x for s in sets for x in ("--set", s)]]) == 0
    (folder,) = (tmp_path / "run" / "pretrain-16k").iterdir()
    md = (folder / "summary.md").read_text()
    assert "## Advisories" in md and "maintenance.spares.gpu.reorder_point" in md
    ld = load_scenario(PRETRAIN, sets)
    res = run_experiment(ld, 2, folder=tmp_path / "mc", progress=False, echo=lambda s: None)
    html, mdr, _ = build_report(res.folder)
    for text in (html.read_text(), mdr.read_text()):
        assert "Advisories" in text and "maintenance.spares.hbm.reorder_point" in text


def test_checkpoint_advice_uses_the_pause_of_an_async_checkpoint() -> None:
    """An asynchronous checkpoint stalls the job for async_fraction of its write (as the model and the
    forecast's daly lever): Daly's δ is that pause, not the write."""
    big = ["workload.jobs.0.checkpoint.size_gb=1000000"]  # a 1,000 s write
    sync = [a for a in advise(load_scenario(PRETRAIN, big).scenario) if "checkpoint" in a.field]
    asy = load_scenario(PRETRAIN, [*big, "workload.jobs.0.checkpoint.mode=async"]).scenario
    ck = asy.workload.jobs[0].checkpoint
    flags = [a for a in advise(asy) if "checkpoint" in a.field]
    assert sync and "checkpoint pause 1e+03 s" in sync[0].text
    pause = ck.async_fraction * 1000.0
    assert not flags or f"checkpoint pause {pause:.3g} s" in flags[0].text
    assert not flags or flags[0].text != sync[0].text
