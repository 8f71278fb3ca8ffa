"""Scheduled maintenance of the power chain's feed units (issues 24 and 43), one feed at a time
(:class:`twin.model.facility_units.MaintenanceRota`): what a visit does to its unit and its load, and the
switching that may go wrong. Part of the power chain component (``twin.model.power``): these functions
act on its state and are its rota hooks.

* ``isolate``: the feed below the unit is de-energised for the window (one feed: the load is drained).
* ``bypass``: the unit is out of service, the feed stays on utility (a UPS on maintenance bypass, a
  generator that cannot start). A UPS with a spare power module, or a generator plant with a spare set,
  is serviced one module at a time instead: the module is out, the others carry the load, nothing is
  bypassed (:func:`by_module`).
* ``live``: energised work; the unit stays in service.

Each visit draws its switching (stream ``power.feed<X>.<unit>#switching``): an error drops the load the
switching touches for ``switching_restore_min``. Times are hours.
"""

from __future__ import annotations

import functools
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from twin.model.engine import Engine
from twin.model.facility_units import Load, MaintenanceRota
from twin.model.generator_modules import GeneratorModules
from twin.model.ups_modules import UPSModules
from twin.scenario.power import Power


class PowerChain(Protocol):
    """What these functions read and change of the power chain (``twin.model.power.PowerChain``)."""

    engine: Engine
    spec: Power
    n_feeds: int
    K: int
    feeds: list[str]
    min_run: int
    node_pdu: NDArray[np.int64]
    slot_feed: NDArray[np.int64]
    pdu_ok: NDArray[np.bool_]
    pdu_out: NDArray[np.int64]
    pdu_drop: NDArray[np.int64]
    rotas: dict[str, MaintenanceRota]
    mods: UPSModules | None
    gens: GeneratorModules | None
    unit_up: dict[str, list[bool]]
    ups_ok: list[bool]
    isolated: list[int]
    switch_drop: list[int]
    trip_drop: list[int]
    switch_k: dict[tuple[str, int], int]
    switching_errors: int
    _feeds_active: bool

    def _settle(self) -> None: ...

    def _update(self) -> None: ...

    def _set_gen(self, f: int, ok: bool) -> None: ...

    def _set_ups(self, f: int) -> None: ...


def by_module(ch: PowerChain, name: str) -> bool:
    """A bypass-mode visit to unit ``name`` services one module at a time: a modular UPS with a spare power
    module, or a generator plant with a spare set."""
    mods = ch.mods if name == "ups" else ch.gens if name == "generator" else None
    return (mods is not None and mods.n_mod > mods.k and name in ch.rotas
            and ch.spec.maintenance_mode(name) == "bypass")


def bypassed(ch: PowerChain, name: str, f: int) -> bool:
    """Unit ``name`` of feed ``f`` is out of service for a bypass-mode maintenance now."""
    rota = ch.rotas.get(name)
    return (rota is not None and rota.on[f] and ch.spec.maintenance_mode(name) == "bypass"
            and not by_module(ch, name))


def gen_able(ch: PowerChain, f: int) -> bool:
    """The generator (plant) of feed ``f`` can run: not failed, not out for maintenance, enough sets."""
    return (ch.unit_up["generator"][f] and not bypassed(ch, "generator", f)
            and (ch.gens is None or ch.gens.available(f)))


def maint_out(ch: PowerChain, name: str, f: int) -> Load:
    """A visit takes unit ``name`` of feed ``f`` out (a PDU: unit ``f`` of feed ``f // K``): the feed isolated,
    the unit bypassed, or one module."""
    ch._settle()
    mode = ch.spec.maintenance_mode(name)
    if name == "pdu":
        if mode == "isolate":  # the PDU's racks lose this feed
            ch.pdu_out[f // ch.K, f % ch.K] += 1
        ch._feeds_active = True
        switching(ch, name, f, mode)
        return "exposed" if mode != "isolate" or ch.n_feeds > 1 else "drained"
    if mode == "isolate":
        ch.isolated[f] += 1
    elif mode == "live":
        pass  # energised work: the unit stays in service
    elif by_module(ch, name):
        mods = ch.mods if name == "ups" else ch.gens
        assert mods is not None
        mods.maintain(f, True)
    elif name == "ups":
        ch.ups_ok[f] = False
    elif name == "generator":
        ch._set_gen(f, False)
    ch._feeds_active = True
    switching(ch, name, f, mode)
    # the load stays up with a unit or a feed less (exposed), or an isolated single feed drains it
    return "exposed" if mode != "isolate" or ch.n_feeds > 1 else "drained"


def switching(ch: PowerChain, name: str, f: int, mode: str) -> None:
    """The switching of a visit to unit ``name`` of feed ``f`` may go wrong (one draw of stream
    ``power.feed<X>.<name>#switching``): it drops the load it touches, the feed worked on (bypass, live) or
    the feeds that carry it while it is isolated, for ``switching_restore_min``."""
    mt = ch.spec.elements()[name].maintenance
    assert mt is not None
    if mt.switching_error_prob <= 0.0:
        return
    k = ch.switch_k.get((name, f), 0)
    ch.switch_k[(name, f)] = k + 1
    if ch.engine.streams.scalar(f"{unit_path(ch, name, f)}#switching", k) >= mt.switching_error_prob:
        return
    ch.switching_errors += 1
    ch.engine.recorder.event(ch.engine.now, "switching_error", unit_path(ch, name, f))
    if name == "pdu":  # the same racks' PDU on the other feeds (isolate) or this one (live)
        j = f % ch.K
        pdus = [(g, j) for g in range(ch.n_feeds) if g != f // ch.K] if mode == "isolate" else [(f // ch.K, j)]
        for g, jj in pdus:
            ch.pdu_drop[g, jj] += 1
        ch.engine.calls(functools.partial(pdu_back, ch)).at(ch.engine.now + mt.switching_restore_min / 60.0, pdus)
        return
    hit = [g for g in range(ch.n_feeds) if g != f] if mode == "isolate" else [f]
    for g in hit:
        ch.switch_drop[g] += 1
    ch.engine.calls(functools.partial(switch_back, ch)).at(ch.engine.now + mt.switching_restore_min / 60.0, hit, None)


def switch_back(ch: PowerChain, feeds: list[int], drops: list[int] | None = None) -> None:
    """The load dropped on ``feeds`` (a switching error; ``drops``: another hold, an overload trip) is back."""
    ch._settle()
    for g in feeds:
        (ch.switch_drop if drops is None else drops)[g] -= 1
    ch._feeds_active = True
    ch._update()


def pdu_back(ch: PowerChain, pdus: list[tuple[int, int]]) -> None:
    """The PDUs ``pdus`` (feed, index) dropped by a visit's switching error are back."""
    ch._settle()
    for g, j in pdus:
        ch.pdu_drop[g, j] -= 1
    ch._update()


def pdu_cause(ch: PowerChain, h: NDArray[np.bool_], failed: int, switch: int, maint: int) -> NDArray[np.int64]:
    """Per node, the cause code when its healthy PSUs on working PDUs are too few while PDUs are out for a visit
    or dropped by its switching (``h``: healthy PSUs, node × slot): ``failed`` if the failed PDUs alone leave too
    few, else ``maint`` if those and the isolated ones do (a planned isolation), else ``switch`` (the error)."""
    def short(ok: NDArray[np.bool_]) -> NDArray[np.bool_]:
        return np.asarray((h & ok[:, ch.node_pdu].T[:, ch.slot_feed]).sum(axis=1) < ch.min_run)
    return np.where(short(ch.pdu_ok), failed, np.where(short(ch.pdu_ok & (ch.pdu_out == 0)), maint, switch))


def on_trip(ch: PowerChain, feed: str, restore_h: float) -> None:
    """The feed's breaker tripped on an overload (Topic.FEED_TRIP): its load is dead for ``restore_h``."""
    ch._settle()
    f = ch.feeds.index(feed)
    ch.trip_drop[f] += 1
    ch.engine.calls(functools.partial(switch_back, ch)).at(ch.engine.now + restore_h, [f], ch.trip_drop)
    ch._feeds_active = True
    ch._update()


def unit_path(ch: PowerChain, name: str, f: int) -> str:
    """Path of unit ``f`` of ``name`` (its feed's; a PDU: PDU ``f % K`` of feed ``f // K``)."""
    if name == "pdu":
        return f"power.feed{ch.feeds[f // ch.K]}.pdu{f % ch.K:02d}"
    return f"power.feed{ch.feeds[f]}.{name}"


def maint_after(ch: PowerChain, name: str, f: int, out: bool) -> None:
    ch._update()


def maint_back(ch: PowerChain, name: str, f: int) -> None:
    """The visit to unit ``name`` of feed ``f`` ends: the unit (or its module) is back in service."""
    ch._settle()
    mode = ch.spec.maintenance_mode(name)
    if name == "pdu":
        if mode == "isolate":
            ch.pdu_out[f // ch.K, f % ch.K] -= 1
    elif mode == "isolate":
        ch.isolated[f] -= 1
    elif mode == "live":
        pass
    elif by_module(ch, name):
        mods = ch.mods if name == "ups" else ch.gens
        assert mods is not None
        mods.maintain(f, False)
    elif name == "ups":
        ch._set_ups(f)
    elif name == "generator":
        ch._set_gen(f, gen_able(ch, f))
    ch._feeds_active = True


__all__ = ["bypassed", "by_module", "gen_able", "maint_after", "maint_back", "maint_out", "on_trip",
           "switch_back", "switching", "unit_path"]
