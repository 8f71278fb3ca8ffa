"""Advisories (twin.scenario.advice): closed-form flags a scenario's own numbers raise before it is
simulated, printed by `twin run` (and --dry-run) and `twin montecarlo` and kept in summary.json."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.stats import poisson
from scipy.stats import t as t_dist

from twin import cli
from twin.physics import checkpoints as pcf
from twin.physics import closed_forms as cf
from twin.scenario.advice import (
    CYCLE_SERVICE_LEVEL,
    ETTR_LOSS,
    advise,
    crew_advice,
    job_interruption_rates_per_h,
    repair_units,
    spares_advice,
)
from twin.scenario.loader import load_dict, load_scenario
from twin.sim import run_replication
from twin.validation.reliability import base_doc

ROOT = Path(__file__).resolve().parents[1]
PRETRAIN = ROOT / "scenarios" / "pretrain-16k.yaml"
BASELINE = ROOT / "scenarios" / "baseline.yaml"
# pretrain-16k's spares as first bundled: bought (no RMA), reorder points below the lead-time demand
OLD_SPARES = ["maintenance.spares.gpu.reorder_point=32", "maintenance.spares.hbm.reorder_point=16",
              "maintenance.spares.psu.reorder_point=16", "maintenance.spares.gpu.rma_turnaround_days=null",
              "maintenance.spares.hbm.rma_turnaround_days=null"]


def test_spares_below_the_cycle_service_level_are_flagged_with_a_suggestion() -> None:
    """Bought spares (no RMA: the PSU) are judged by their reorder point against Poisson lead-time
    demand; a GPU pool without RMA the same way, with the ladder's replacement share 1 − s₁."""
    sc = load_scenario(PRETRAIN, OLD_SPARES).scenario
    flags = {a.field: a.text for a in spares_advice(sc)}
    assert set(flags) == {"maintenance.spares.gpu.reorder_point", "maintenance.spares.psu.reorder_point"}
    gpu = sc.cluster.node.parts["gpu"]
    s1 = gpu.repair.ladder.remediate_success
    assert s1 == 0.5  # the bundled ladder (assumption): half the GPU faults clear with a reset
    lead = gpu.count * sc.cluster.n_nodes / gpu.failure.mean() * (1 - s1) * 14 * 24  # replacements in 14 days
    text = flags["maintenance.spares.gpu.reorder_point"]
    level = poisson.cdf(32, lead)
    assert 32 > lead and level < CYCLE_SERVICE_LEVEL
    assert f"mean demand of {lead:.1f} over" in text and f"{1 - level:.0%} of replenishment cycles run out" in text
    assert f"reorder_point {int(poisson.ppf(CYCLE_SERVICE_LEVEL, lead))} gives a 95% service level" in text
    # PSU: 16 against 14 in its 7-day lead time is above the mean but short of 95 %
    psu = sc.cluster.node.parts["psu"]
    lead_psu = psu.count * sc.cluster.n_nodes / psu.failure.mean() * 7 * 24
    level = poisson.cdf(16, lead_psu)
    assert 16 > lead_psu and level < CYCLE_SERVICE_LEVEL
    assert f"{1 - level:.0%} of replenishment cycles run out" in flags["maintenance.spares.psu.reorder_point"]
    # the bundled scenario's reorder points and rotable pools raise no spares flag
    assert not spares_advice(load_scenario(PRETRAIN).scenario)


def test_a_rotable_pool_is_judged_by_its_stock_over_the_rma_turnaround() -> None:
    """With every replaced part returning through RMA no order is placed: the stock circulates and
    Palm's theorem gives the share of replacements that find a spare, P(Poisson(λ(1 − s₁)T) ≤ S − 1)."""
    sc = load_scenario(PRETRAIN, ["maintenance.spares.gpu.stock=24"]).scenario
    flags = {a.field: a.text for a in spares_advice(sc)}
    gpu, sp = sc.cluster.node.parts["gpu"], sc.maintenance.spares["gpu"]
    assert sp.rma_turnaround_days == 14 and sp.rma_return_share == 1
    demand = gpu.count * sc.cluster.n_nodes / gpu.failure.mean() * (1 - gpu.repair.ladder.remediate_success) * 14 * 24
    assert poisson.cdf(23, demand) < CYCLE_SERVICE_LEVEL
    assert "maintenance.spares.gpu.stock" in flags and "RMA turnaround" in flags["maintenance.spares.gpu.stock"]
    assert f"stock {int(poisson.ppf(CYCLE_SERVICE_LEVEL, demand)) + 1} gives" in flags["maintenance.spares.gpu.stock"]


def test_spares_advice_fires_for_the_baseline() -> None:
    """The baseline's bought PSU spares run out in 6 % of replenishment cycles: flagged at the 95 %
    cycle service level (nothing was flagged while the check was "below the mean lead-time demand").
    Its GPU and HBM pools return through RMA and, with half the faults cleared by a reset, are
    within the level."""
    sc = load_scenario(BASELINE).scenario
    flags = {a.field for a in spares_advice(sc)}
    assert flags == {"maintenance.spares.psu.reorder_point"}
    psu, sp = sc.cluster.node.parts["psu"], sc.maintenance.spares["psu"]
    lead = psu.count * sc.cluster.n_nodes / psu.failure.mean() * sp.lead_time_days * 24
    assert sp.reorder_point >= lead and poisson.cdf(sp.reorder_point, lead) < CYCLE_SERVICE_LEVEL
    # at the suggested reorder point nothing is flagged
    fixed = load_scenario(BASELINE, [f"maintenance.spares.psu.reorder_point={int(poisson.ppf(0.95, lead))}"])
    assert not spares_advice(fixed.scenario)


def _group_doc(count: int, required: int, mtbf_h: float, mttr_h: float, crews: int) -> dict[str, Any]:
    """One node whose only part is a k-of-n group (exponential lives and repairs, hot swap, no
    burn-in, no detection delay), ``crews`` technicians 24x7."""
    return base_doc(f"{required}-of-{count}", 200.0, {
        "unit": {"count": count, "required": required, "effect": "redundant",
                 "failure": {"dist": "exponential", "mean_h": mtbf_h},
                 "repair": {"hot_swap": True, "burn_in_h": 0, "time": {"dist": "exponential", "mean_h": mttr_h}}}},
        crews=crews)


def test_crew_advice_follows_the_finite_source_chain_for_a_4_of_6_group() -> None:
    """6 units failing every 4 h, repaired in 1 h by one technician: 1.5 technicians of work are
    offered, which M/M/1 calls an unbounded queue; the finite-source chain M/M/1//6 holds at most 6
    units and keeps the technician busy 88 % of the time. The advisory quotes the chain, and the
    simulated crew matches it (and not M/M/1's 100 %)."""
    sc = load_dict(_group_doc(6, 4, 4.0, 1.0, 1)).scenario
    q = cf.machine_repair(6, 0.25, 1.0, 1)
    (flag,) = crew_advice(sc)
    assert flag.field == "maintenance.crews.crew.count"
    assert "grow without bound" not in flag.text and "M/M/1//6" in flag.text
    assert f"waits {q.mean_wait_h:.3g} h for a technician" in flag.text
    assert f"{q.mean_waiting:.2f} repairs waiting, technicians busy {q.utilisation:.0%}" in flag.text
    assert f"about {q.mean_down:,.0f} of 6 are down" in flag.text
    util = np.array([run_replication(sc, rep).metrics["crew_utilisation.crew"] for rep in range(6)])
    half = t_dist.ppf(0.9995, len(util) - 1) * util.std(ddof=1) / math.sqrt(len(util))
    assert abs(util.mean() - q.utilisation) < half + 0.01, (util, q)
    assert util.mean() + half < 0.97  # the infinite-source queue would keep the technician always busy


def test_no_crew_advice_where_no_repair_can_wait() -> None:
    """A 2-of-4 group with 4 technicians: each failed unit has its own technician (c >= N), so no
    repair waits, however much work is offered (4 × 1.5 h / 1 h = 6 technicians of work)."""
    sc = load_dict(_group_doc(4, 2, 1.0, 1.5, 4)).scenario
    assert cf.machine_repair(4, 1.0, 1 / 1.5, 4).mean_waiting == 0.0
    assert not crew_advice(sc)
    # with 2 technicians repairs wait 0.73 h on average, less than the 1.5 h repair: not flagged; with
    # one they wait 3.5 h: flagged with the chain's numbers
    assert cf.machine_repair(4, 1.0, 1 / 1.5, 2).mean_wait_h < 1.5
    assert not crew_advice(load_dict(_group_doc(4, 2, 1.0, 1.5, 2)).scenario)
    (flag,) = crew_advice(load_dict(_group_doc(4, 2, 1.0, 1.5, 1)).scenario)
    q = cf.machine_repair(4, 1.0, 1 / 1.5, 1)
    assert q.mean_wait_h >= 1.5 and f"waits {q.mean_wait_h:.3g} h" in flag.text


def test_crew_flag_follows_the_chain_for_a_large_cluster() -> None:
    """For the baseline's thousands of units the chain is M/M/c with the same load (the effective
    number of units is large); the flag is raised exactly when the chain's mean wait for a
    technician reaches the hands-on time (24x7), or the time a repair holds one (business hours)."""
    sc = load_scenario(BASELINE).scenario
    assert not crew_advice(sc)  # 2 technicians, 24x7, far more than the load
    gpu = sc.cluster.node.parts["gpu"]
    heavy = load_scenario(BASELINE, [f"cluster.node.parts.gpu.failure.mean_h={gpu.failure.mean() / 100!r}"]).scenario
    units = repair_units(heavy)
    lam_total = sum(r for _, r, _ in units.values())
    n_eff = round(lam_total ** 2 / sum(r * r / n for n, r, _ in units.values()))
    load = sum(r * p.repair.time.mean() for _, r, p in units.values())
    hands_on = load / lam_total
    assert n_eff > 100
    for count, shift in ((math.floor(load), "24x7"), (math.ceil(load), "24x7"), (math.ceil(load) + 1, "24x7"),
                         (math.ceil(load) + 1, "business")):
        f = 1.0 if shift == "24x7" else 45 / 168
        q = cf.machine_repair(n_eff, lam_total / n_eff, f / hands_on, count)
        sets = [f"cluster.node.parts.gpu.failure.mean_h={gpu.failure.mean() / 100!r}",
                f"maintenance.crews.technicians.count={count}", f"maintenance.crews.technicians.shift={shift}"]
        flags = crew_advice(load_scenario(BASELINE, sets).scenario)
        assert bool(flags) == (q.mean_wait_h >= hands_on / f), (count, shift, q)
        if flags:
            assert f"{load:.2f} technicians of work" in flags[0].text
    # M/M/c as the limit: the same load on a million units
    big = cf.machine_repair(10**6, 3.0e-6, 1.0, 4)
    assert big.mean_wait_h == pytest.approx(cf.erlang_c_mean_wait_h(3.0, 1.0, 4), rel=1e-4)


def _parts(sc: Any, extra_crash_rate_per_h: float = 0.0) -> tuple[float, Any, str, str, str]:
    """(the optimum interval for job 0 of ``sc`` at its hardware rate plus ``extra_crash_rate_per_h``
    as crashes and its SDC rate as rollbacks, the ETTR function, and the advice's optimum, job and tail
    texts built by hand): Daly's without SDC, else twin.physics.checkpoints' with the retention and the latency."""
    wl = sc.workload
    job = wl.jobs[0]
    ck = job.checkpoint
    nodes = job.gpus // sc.cluster.node.gpus
    rows = job_interruption_rates_per_h(sc, nodes)
    hw = sum(r for _, effect, r in rows if effect not in ("rollback", "straggler"))
    sdc = sum(r for _, effect, r in rows if effect == "rollback")
    crash = hw + extra_crash_rate_per_h
    M = 1.0 / (crash + sdc)
    delta = ck.size_gb / wl.storage.write_gb_per_s / 3600
    R = (wl.restart.detection_h + wl.restart.reschedule_h + ck.size_gb / wl.storage.read_gb_per_s / 3600
         + job.gpus * wl.restart.init_s_per_rank / 3600 + wl.restart.warmup_h)
    lat = [sc.health.sdc.detection.value_h] if sdc > 0 else [0.0]
    ret = ck.retention
    tau = pcf.optimal_interval_h(delta, R, crash, sdc, lat, ret.keep_last, ret.persistent_every_h)

    def ettr(t: float) -> float:
        return pcf.ettr(t, delta, R, crash, sdc, lat, ret.keep_last, ret.persistent_every_h)

    name = "ETTR" if sdc > 0 else "Daly's ETTR"
    opt = f"the optimum {tau:.3g} h with SDC rollbacks" if sdc > 0 else f"Daly's optimum {tau:.3g} h"
    head = f"for job {job.name!r} ({nodes} nodes: interruptions every {M:.3g} h"
    tail = f"): {name} {ettr(ck.interval_h):.3f} here, {ettr(tau):.3f} at the optimum"
    return tau, ettr, opt, head, tail


def test_checkpoint_flag_follows_the_optimum() -> None:
    """pretrain-16k (SDC on): the advised interval is the numeric optimum of twin.physics.checkpoints
    with its retention and 1 h latency, longer than Daly's (the rolling set must span the latency); at
    that interval or 1.5 × it nothing is flagged."""
    sc = load_scenario(PRETRAIN).scenario
    tau, ettr, opt, head, tail = _parts(sc)
    (flag,) = [a for a in advise(sc) if a.field == "workload.jobs.0.checkpoint.interval_h"]
    assert flag.text.startswith(f"0.5 h is {0.5 / tau:.2g} × {opt}") and head in flag.text, flag.text
    assert flag.text.endswith(tail), flag.text
    assert ettr(tau) - ettr(0.5) >= ETTR_LOSS
    rows = job_interruption_rates_per_h(sc, 2048)
    daly = float(cf.daly_interval_h(5.0 / 3600, 1.0 / sum(r for _, _, r in rows)))
    assert tau > daly and f"Daly's {daly:.3g} h" in flag.text and "does not apply" in flag.text
    assert 10 * (tau + 5.0 / 3600) >= 1.0  # the 10 kept checkpoints span the 1 h latency
    for t in (tau, 1.5 * tau):
        near = load_scenario(PRETRAIN, [f"workload.jobs.0.checkpoint.interval_h={t!r}"]).scenario
        assert not [a for a in advise(near) if "checkpoint" in a.field]


def test_checkpoint_advice_counts_sdc_rollbacks_at_their_closed_form_rate() -> None:
    """A scenario whose SDC rate dominates: the SDC rollbacks are counted at n·p/gap and the advised
    interval is the SDC-aware optimum (its expected cost with the 0.1 h latency and the retention)."""
    sets = ["health.sdc.defective_share=0.05", "health.sdc.corruption.mean_h=100.0", "health.sdc.detection.value_h=0.1"]
    sc = load_scenario(PRETRAIN, sets).scenario
    nodes = sc.workload.jobs[0].gpus // sc.cluster.node.gpus
    rows = {src: (effect, r) for src, effect, r in job_interruption_rates_per_h(sc, nodes)}
    sdc = nodes * 0.05 / 100.0  # about 3 × the hardware's rate
    assert rows["sdc"] == ("rollback", pytest.approx(sdc))
    tau, _, opt, head, tail = _parts(sc)
    hw_tau = _parts(load_scenario(PRETRAIN, ["health.sdc.defective_share=0.0"]).scenario)[0]
    assert tau < 0.6 * hw_tau  # the SDC rate moves the optimum
    (flag,) = [a for a in advise(sc) if a.field == "workload.jobs.0.checkpoint.interval_h"]
    assert opt in flag.text and head in flag.text and flag.text.endswith(tail), flag.text
    assert "SDC rollbacks 76 % of them" in flag.text and "detected 0.1 h later" in flag.text
    slow = load_scenario(PRETRAIN, [*sets, "health.sdc.detection.value_h=0.3"]).scenario
    (slow_flag,) = [a for a in advise(slow) if a.field == "workload.jobs.0.checkpoint.interval_h"]
    assert slow_flag.text != flag.text and "detected 0.3 h later" in slow_flag.text


def test_checkpoint_advice_counts_straggler_swaps_and_drains() -> None:
    """pretrain-16k's degraded part (hot-swapped, policy keep) never restarts the job; policy swap
    restarts it at every failure, keep without hot swap at every replacement (1 − s₁ of failures)."""
    sc = load_scenario(PRETRAIN).scenario
    nodes = sc.workload.jobs[0].gpus // sc.cluster.node.gpus
    assert "slow" not in {src for src, _, _ in job_interruption_rates_per_h(sc, nodes)}
    fast = ["cluster.node.parts.slow.failure.mtbf_h=500.0"]
    swap = load_scenario(PRETRAIN, [*fast, "health.stragglers.policy=swap"]).scenario
    rows = {src: (effect, r) for src, effect, r in job_interruption_rates_per_h(swap, nodes)}
    assert rows["slow"] == ("straggler", pytest.approx(nodes / 500.0))
    tau, _, opt, head, tail = _parts(swap, nodes / 500.0)
    assert tau < 0.5 * _parts(sc)[0]
    (flag,) = [a for a in advise(swap) if a.field == "workload.jobs.0.checkpoint.interval_h"]
    assert opt in flag.text and head in flag.text and flag.text.endswith(tail), flag.text
    assert "straggler restarts" in flag.text
    drain = load_scenario(PRETRAIN, [*fast, "cluster.node.parts.slow.repair.hot_swap=false",
                                     "cluster.node.parts.slow.repair.ladder.remediate_success=0.25"]).scenario
    rows = {src: (effect, r) for src, effect, r in job_interruption_rates_per_h(drain, nodes)}
    assert rows["slow"] == ("straggler", pytest.approx(nodes * 0.75 / 500.0))


def test_checkpoint_advice_without_health_rates_is_hardware_only() -> None:
    """No SDC and no degraded parts: the rates, interval and text are Daly's for the hardware alone."""
    sc = load_scenario(PRETRAIN, ["health.sdc.defective_share=0.0"]).scenario
    nodes = sc.workload.jobs[0].gpus // sc.cluster.node.gpus
    assert not [e for _, e, _ in job_interruption_rates_per_h(sc, nodes) if e in ("rollback", "straggler")]
    tau, _, opt, head, tail = _parts(sc)
    rows = job_interruption_rates_per_h(sc, nodes)
    assert tau == float(cf.daly_interval_h(5.0 / 3600, 1.0 / sum(r for _, _, r in rows)))
    (flag,) = [a for a in advise(sc) if a.field == "workload.jobs.0.checkpoint.interval_h"]
    assert opt in flag.text and head + ", checkpoint pause" in flag.text and flag.text.endswith(tail)
    assert "SDC" not in flag.text and "latency" not in flag.text


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
    assert [a.split(":")[1].strip() for a in advice] == [  # hbm's 16 suffices once resets clear half its faults
        "maintenance.spares.gpu.reorder_point", "maintenance.spares.psu.reorder_point",
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
        assert "Advisories" in text and "maintenance.spares.psu.reorder_point" in text


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


# ---- issue 23 item 6: rack power and U space

def test_a_rack_over_its_power_limit_or_u_space_is_advised() -> None:
    from pathlib import Path

    from twin.scenario import load_scenario
    from twin.scenario.advice import rack_advice

    base = Path(__file__).resolve().parent.parent / "scenarios" / "baseline.yaml"
    dgx = ["cluster.node.nameplate_w=10200", "cluster.node.u_height=8"]
    eight = load_scenario(base, dgx + ["cluster.nodes_per_rack=8", "cluster.rack={power_limit_kw: 41, u_space: 48}"])
    adv = [str(a) for a in rack_advice(eight.scenario)]
    assert len(adv) == 2
    assert "81.6 kW per rack" in adv[0] and "41 kW" in adv[0] and "4 fit" in adv[0]
    assert "64U" in adv[1] and "48U" in adv[1] and "6 fit" in adv[1]
    four = load_scenario(base, dgx + ["cluster.racks=32", "cluster.nodes_per_rack=4", "cluster.rack={power_limit_kw: 41, u_space: 48}"])
    assert rack_advice(four.scenario) == []
    unset = load_scenario(base, dgx + ["cluster.nodes_per_rack=8", "cluster.rack={}"])
    assert rack_advice(unset.scenario) == []  # no limits given: nothing checked


def test_an_async_checkpoint_that_never_pauses_is_advised_its_write_time_not_a_division_by_zero() -> None:
    """A pause of 0 (asynchronous, async_fraction 0) made Daly's interval 0 and the advice divided by it
    (a fuzz test found it); the optimum of a free checkpoint is below its write time, where the next
    asynchronous checkpoint could not start, so the advice names the write time."""
    from twin.scenario.advice import checkpoint_advice

    sc = load_scenario(PRETRAIN, ["workload.jobs.0.checkpoint.mode=async",
                                 "workload.jobs.0.checkpoint.async_fraction=0"]).scenario
    job = sc.workload.jobs[0]
    nodes = math.ceil(job.gpus / sc.cluster.node.gpus)
    st = sc.workload.storage
    write = job.checkpoint.write_time_h(st.write_gb_per_s, 1, nodes, st.node_write_gb_per_s)
    (adv,) = [a for a in checkpoint_advice(sc) if "interval_h" in str(a)]
    assert f"its write time {write:.3g} h" in str(adv) and "checkpoint pause 0 s" in str(adv)
