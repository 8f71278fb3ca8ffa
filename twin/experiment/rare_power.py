"""Failure biasing of the power chain's facility units for ``twin rare`` (issue 47): which quantities can be
biased, the biased scenario, and each replication's likelihood ratio read from the finished run.

Three kinds of random quantity, each with the likelihood ratio (true over biased) that is exact for it:

* **lives** (``ups``, ``generator``, ``switchboard``, ``pdu``, ``ups_module``): exponential lifetimes of a
  :class:`twin.model.parts.FacilityParts` population, their mean divided by θ. A unit's own failures
  run at (1 − β)λ and its common-cause group's events at βλ; both scale by θ. Own lives:
  ``−N·log θ + (θ − 1)(1 − β)λ·E`` with N the lives that ended in a failure (``life_failures``) and E the
  unit-hours the lives ran (to a failure of any kind, or the horizon); the β-group events are a
  Poisson process per group over the whole horizon: ``−M·log θ + (θ − 1)βλ·H·groups`` with M the
  events that arrived (``ccf_arrivals``, with or without a working unit to fail);
* **Poisson arrivals** (``utility``: outage arrivals, drawn after each outage ends; ``ups_fault``: UPS
  faults): the rate multiplied by θ, ``−N·log θ + (θ − 1)·r·E`` with E the time the arrival clock ran
  (for ``utility`` the up-time between outages, replayed from the counter-based streams);
* **Bernoulli demands** (``generator_start``: fail-to-start, restarts included; ``ats_transfer``: the
  transfer switch's failure to transfer; ``ups_bypass``: the static bypass's failure to transfer;
  ``switching``: a maintenance visit's switching error, every unit type): the probability p becomes
  q = θp (< 1), ``F·log(p/q) + (D − F)·log((1 − p)/(1 − q))`` over D demands of which F failed.

Every quantity not biased keeps its true distribution (ratio 1), so E_θ[1{A}·w] = P(A): unbiased by
construction. Refused (exit 2): a life that is not exponential (Weibull, lognormal, empirical, fixed:
a rate scaling is not a change of their law with a ratio from counts), θp ≥ 1, a rate or a
probability of 0 (nothing to bias), a unit that the scenario does not have. Not biased (they keep their
law): utility outage durations, hazard-zone events, grid outages, power-cycle failures at recovery,
repairs, cooling-plant units. A unit whose drawn failure time another model moved (ageing, an
injection) is refused at the end of the replication, as for node parts.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

from twin import rng
from twin.errors import InputError
from twin.units import HOURS_PER_YEAR

if TYPE_CHECKING:
    from twin.sim import Model

LIFE_UNITS = {"ups": ("ups",), "generator": ("generator",), "switchboard": ("switchboard",), "pdu": ("pdu",),
              "ups_module": ("ups", "modules")}
"""Unit population -> its section under ``power`` (failure, common_cause_beta)."""
POISSON = {"utility": (("utility", "outages_per_year"), "utility outage arrivals (per source), per year"),
           "ups_fault": (("ups", "fault", "per_year"), "UPS faults that drop the load (per UPS), per year")}
BERNOULLI = {"generator_start": (("generator", "start_failure_prob"), "a generator fails to start (or restart)"),
             "ats_transfer": (("ats", "failure_to_transfer_prob"), "the transfer switch fails to transfer"),
             "ups_bypass": (("ups", "bypass", "failure_to_transfer_prob"),
                            "the UPS's static bypass fails to transfer at a module shortfall")}
SWITCHING = "switching"
"""A maintenance visit's switching error (``power.<unit>.maintenance.switching_error_prob``, every unit type)."""
KINDS = (*LIFE_UNITS, *POISSON, *BERNOULLI, SWITCHING)
"""Everything ``--bias-unit`` accepts."""
AUTO_Q = 0.2
"""``--bias-unit NAME`` (no θ) for a demand: θ makes the biased probability this (never below the true one)."""


@dataclass(frozen=True)
class UnitBias:
    """One biased kind: θ and the true values the ratio needs."""

    kind: str
    theta: float
    law: str
    """``life``, ``poisson`` or ``bernoulli``."""
    true: dict[str, float]
    """life: ``rate_per_h`` (1/mean, both own and common-cause), ``beta``; poisson: ``rate_per_h``;
    bernoulli: ``p`` (switching: one ``p.<unit>`` per unit type with maintenance)."""

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "theta": self.theta, "law": self.law, "true": dict(self.true)}


def _get(doc: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    x: Any = doc
    for k in path:
        if not isinstance(x, Mapping) or x.get(k) is None:
            return None
        x = x[k]
    return x


def _theta(kind: str, given: float | None, auto: float) -> float:
    th = auto if given is None else float(given)
    if not (math.isfinite(th) and th > 0):
        raise InputError("--bias-unit", f"{kind}={given}", "θ must be a positive number")
    return th


def choose(resolved: Mapping[str, Any], horizon_h: float, wanted: Mapping[str, float | None],
           aim_failures: float) -> list[UnitBias]:
    """The biases of ``wanted`` (kind -> θ, None: automatic) on the scenario ``resolved`` (its resolved
    document). Automatic θ: lives and arrivals fail ``aim_failures`` times on average over the horizon
    (never below 1); demands fail with probability :data:`AUTO_Q`. Bad input: InputError."""
    power = resolved.get("power")
    if power is None:
        raise InputError("--bias-unit", ",".join(wanted), "the scenario has no power section")
    out = []
    for kind, given in wanted.items():
        if kind in LIFE_UNITS:
            sec = _get(power, LIFE_UNITS[kind])
            fail = _get(sec, ("failure",)) if sec is not None else None
            if fail is None:
                raise InputError("--bias-unit", kind, "the scenario's power chain has no such unit with a failure law")
            if fail.get("dist") != "exponential":
                raise InputError("--bias-unit", kind, f"its life is {fail.get('dist')}: the likelihood ratio of a "
                                 "rate scaling is exact for exponential lives only")
            rate = 1.0 / float(fail["mean_h"])
            beta = float(sec.get("common_cause_beta") or 0.0)
            n = _unit_count(resolved, kind)
            th = _theta(kind, given, max(1.0, aim_failures / (rate * n * horizon_h)))
            out.append(UnitBias(kind, th, "life", {"rate_per_h": rate, "beta": beta}))
        elif kind in POISSON:
            v = _get(power, POISSON[kind][0])
            if not v:
                raise InputError("--bias-unit", kind, f"power.{'.'.join(POISSON[kind][0])} is absent or 0: nothing to bias")
            rate = float(v) / HOURS_PER_YEAR
            th = _theta(kind, given, max(1.0, aim_failures / (rate * horizon_h)))
            out.append(UnitBias(kind, th, "poisson", {"rate_per_h": rate}))
        elif kind in BERNOULLI or kind == SWITCHING:
            if kind == SWITCHING:
                ps = {f"p.{u}": float(p) for u in ("ups", "generator", "switchboard", "pdu")
                      if (p := _get(power, (u, "maintenance", "switching_error_prob")))}
                where = "power.<unit>.maintenance.switching_error_prob"
            else:
                p = _get(power, BERNOULLI[kind][0])
                ps = {"p": float(p)} if p else {}
                where = "power." + ".".join(BERNOULLI[kind][0])
            if not ps:
                raise InputError("--bias-unit", kind, f"{where} is absent or 0: nothing to bias")
            th = _theta(kind, given, max(1.0, AUTO_Q / max(ps.values())))
            if th * max(ps.values()) >= 1.0:
                raise InputError("--bias-unit", f"{kind}={th:g}", f"θ × p must stay below 1 (p = {max(ps.values()):g})")
            out.append(UnitBias(kind, th, "bernoulli", ps))
        else:
            raise InputError("--bias-unit", kind, "not a biasable unit; one of: " + ", ".join(KINDS))
    return out


def _unit_count(resolved: Mapping[str, Any], kind: str) -> int:
    """Units of a life kind on the site (feeds × units per feed; PDUs: an upper bound, one per rack)."""
    power = resolved["power"]
    feeds = 2 if power.get("topology") == "2n" else 1
    if kind == "ups_module":
        return feeds * int(power["ups"]["modules"]["count"])
    if kind == "pdu":
        return feeds * int(power["pdu"].get("count") or resolved["cluster"]["racks"])
    return feeds


def biased_doc(resolved: Mapping[str, Any], biases: list[UnitBias]) -> dict[str, Any]:
    """A copy of the resolved scenario document with every biased quantity scaled by its θ."""
    doc = copy.deepcopy(dict(resolved))
    power = doc["power"]
    for b in biases:
        if b.law == "life":
            fail = _get(power, LIFE_UNITS[b.kind])["failure"]
            fail["mean_h"] = float(fail["mean_h"]) / b.theta
        else:
            paths = ([(u, "maintenance", "switching_error_prob") for u in (k[2:] for k in b.true)]
                     if b.kind == SWITCHING else [(POISSON | BERNOULLI)[b.kind][0]])
            for path in paths:
                sec = _get(power, path[:-1])
                sec[path[-1]] = float(sec[path[-1]]) * b.theta
    return doc


# ---- the likelihood ratio of a finished replication --------------------------------------------------
def _life(model: "Model", b: UnitBias, row: dict[str, Any]) -> float:
    pop = model.by_section["power"].units.get(b.kind)
    if pop is None:
        raise InputError("--bias-unit", b.kind, "the power chain built no such unit population")
    if pop.moved:
        raise InputError("--bias-unit", b.kind, "another model moved its drawn failure times (ageing, an injection): "
                         "the likelihood ratio of a rate scaling does not hold")
    rec = model.recorder
    paths = set(pop._paths)
    ages = [v for k, path, v in zip(rec._kind, rec._path, rec._value) if k == "fail" and path in paths]
    H = model.sc.horizon_h
    exposure_h = float(np.sum(ages)) + float(np.sum(H - pop.install_h[pop.healthy]))
    n, beta, lam, th = int(pop.life_failures), b.true["beta"], b.true["rate_per_h"], b.theta
    log_w = -n * math.log(th) + (th - 1.0) * (1.0 - beta) * lam * exposure_h
    row[f"rare.failures.{b.kind}"] = float(n)
    row[f"rare.exposure_h.{b.kind}"] = exposure_h
    if beta:
        m = int(pop.ccf_arrivals)
        log_w += -m * math.log(th) + (th - 1.0) * beta * lam * H * int(pop.n_groups)
        row[f"rare.ccf_events.{b.kind}"] = float(m)
    return log_w


def _utility_clock(model: "Model") -> tuple[int, float]:
    """(arrivals, hours the arrival clocks ran) of the utility outage sources, replayed from their streams
    exactly as ``PowerChain`` draws them (the next gap starts when an outage ends)."""
    ch = model.by_section["power"]
    spec = ch.spec.utility
    mean_h = HOURS_PER_YEAR / spec.outages_per_year
    H = model.sc.horizon_h
    streams = model.engine.streams
    n_all, clock_h = 0, 0.0
    for s, (path, _feeds) in enumerate(ch.sources):
        t, k = 0.0, 0
        while t < H:
            x = float(rng.exponential_from_u(np.array([streams.scalar(path + "#arrival", k)]), mean_h)[0])
            if t + x >= H:
                clock_h += H - t
                break
            clock_h += x
            d = float(spec.duration.sample(np.array([streams.scalar(path + "#duration", k)]))[0])
            t += x + d
            k += 1
        if k != ch.src_k[s]:
            raise InputError("--bias-unit", "utility", "the replayed outage arrivals differ from the run's: the power "
                             "chain draws them in another way now (twin.experiment.rare_power)")
        n_all += k
    return n_all, clock_h


def _poisson(model: "Model", b: UnitBias, row: dict[str, Any]) -> float:
    ch = model.by_section["power"]
    if b.kind == "utility":
        n, clock_h = _utility_clock(model)
    else:
        mods = ch.mods
        if mods is None:
            raise InputError("--bias-unit", b.kind, "the scenario's UPS has no fault process")
        n = sum(k - 1 for k in mods._fault_k)
        clock_h = model.sc.horizon_h * mods.n_feeds
    row[f"rare.failures.{b.kind}"] = float(n)
    row[f"rare.exposure_h.{b.kind}"] = clock_h
    return -n * math.log(b.theta) + (b.theta - 1.0) * b.true["rate_per_h"] * clock_h


def _bernoulli_terms(model: "Model", b: UnitBias) -> list[tuple[float, int, int]]:
    """(true p, demands, failures) of a demand kind in the finished run."""
    ch = model.by_section["power"]
    streams = model.engine.streams
    if b.kind == "generator_start":
        if ch.gens is not None:  # generator sets: every available set draws its own start per demand
            return [(b.true["p"], int(sum(ch.gens._start_k)), ch.gens.set_start_failures)]
        return [(b.true["p"], ch.gen_starts + ch.gen_start_failures, ch.gen_start_failures)]
    if b.kind == "ups_bypass":
        mods = ch.mods
        d = sum(mods._bypass_k) if mods is not None else 0
        return [(b.true["p"], d, mods.transfer_failures if mods is not None else 0)]
    if b.kind == "ats_transfer":
        q = ch.spec.ats.failure_to_transfer_prob
        d = f = 0
        for i, x in enumerate(ch.feeds):
            for k in range(ch.ats_k[i]):
                d += 1
                f += streams.scalar(f"power.feed{x}.ats#transfer", k) < q
        return [(b.true["p"], d, f)]
    from twin.model.power_maint import unit_path

    out = []
    for key, p in b.true.items():
        unit = key[2:]
        q = ch.spec.elements()[unit].maintenance.switching_error_prob
        d = f = 0
        for (name, fi), n in ch.switch_k.items():
            if name != unit:
                continue
            for k in range(n):
                d += 1
                f += streams.scalar(f"{unit_path(ch, name, fi)}#switching", k) < q
        out.append((p, d, f))
    return out


def log_weight(model: "Model", biases: list[Mapping[str, Any]], row: dict[str, Any]) -> float:
    """The log likelihood ratio (true over biased) of the facility biases ``biases`` (``UnitBias.as_dict``)
    over the finished replication ``model``; writes each kind's counts into ``row``."""
    if biases and "power" not in model.by_section:
        raise InputError("--bias-unit", biases[0]["kind"], "the scenario has no power chain")
    log_w = 0.0
    for d in biases:
        b = UnitBias(d["kind"], float(d["theta"]), d["law"], dict(d["true"]))
        if b.law == "life":
            log_w += _life(model, b, row)
        elif b.law == "poisson":
            log_w += _poisson(model, b, row)
        else:
            dem = fail = 0
            for p, n_d, n_f in _bernoulli_terms(model, b):
                q = b.theta * p
                log_w += n_f * math.log(p / q) + (n_d - n_f) * math.log((1.0 - p) / (1.0 - q))
                dem, fail = dem + n_d, fail + int(n_f)
            row[f"rare.demands.{b.kind}"] = float(dem)
            row[f"rare.failures.{b.kind}"] = float(fail)
    return log_w


def parse(items: list[str]) -> dict[str, float | None]:
    """``--bias-unit NAME[=THETA]`` items -> kind -> θ (None: automatic)."""
    out: dict[str, float | None] = {}
    for it in items:
        name, sep, val = it.partition("=")
        name = name.strip()
        if name not in KINDS:
            raise InputError("--bias-unit", it, "not a biasable unit; one of: " + ", ".join(KINDS))
        if not sep or val.strip() == "auto":
            out[name] = None
            continue
        try:
            out[name] = float(val)
        except ValueError:
            raise InputError("--bias-unit", it, "expected NAME or NAME=THETA (a positive number)") from None
    return out

