"""The facility-unit model shared by the power chain and the cooling plant (issue 40 item 5):
maintenance visits one unit at a time, their accounting record, the k-of-n check, the part-population
base and the schema bases of facility unit sections."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest

from twin.errors import InputError
from twin.model.engine import Engine
from twin.model.facility_units import Load, MaintenanceAccount, MaintenanceRota, spare_without
from twin.model.parts import FacilityParts, PartPopulation, Population
from twin.observe.recorder import Recorder
from twin.scenario import load_scenario
from twin.scenario.cooling import Cdu, Crah, Pumps
from twin.scenario.plant import Chillers, UnitMaintenance
from twin.scenario.power import Element, ElementMaintenance
from twin.scenario.units import FacilityUnit, UnitGroup, Visits


@dataclass(frozen=True)
class _Window:
    interval_h: float
    duration_h: float
    offset_h: float | None = None


class _Owner:
    """Takes units out and puts them back, logging each hook with the time and the rota's state."""

    def __init__(self, engine: Engine, loads: dict[int, Load]) -> None:
        self.engine = engine
        self.loads = loads
        self.log: list[tuple[str, float, str, int]] = []
        self.rota: MaintenanceRota | None = None

    def path(self, kind: str, i: int) -> str:
        return f"site.{kind}{i}"

    def take_out(self, kind: str, i: int) -> Load:
        assert self.rota is not None and self.rota.on[i]
        self.log.append(("out", self.engine.now, kind, i))
        return self.loads[i]

    def put_back(self, kind: str, i: int) -> None:
        assert self.rota is not None and not self.rota.on[i]
        self.log.append(("back", self.engine.now, kind, i))

    def after(self, kind: str, i: int, out: bool) -> None:
        self.log.append(("after_out" if out else "after_back", self.engine.now, kind, i))


def _run(window: _Window, n: int, horizon_h: float, loads: dict[int, Load]) -> tuple[_Owner, MaintenanceAccount, Recorder]:
    rec = Recorder()
    eng = Engine(1, 0, horizon_h, rec)
    owner = _Owner(eng, loads)
    account = MaintenanceAccount()
    rota = MaintenanceRota(eng, "ups", window, n, account, owner.path, owner.take_out, owner.put_back, owner.after)
    owner.rota = rota
    rota.start()
    eng.env.run(until=horizon_h)
    account.close_all(eng.now)
    return owner, account, rec


def test_rota_visits_one_unit_at_a_time_staggered_over_the_interval() -> None:
    owner, account, _ = _run(_Window(interval_h=100.0, duration_h=10.0), 2, 230.0, {0: "exposed", 1: "short"})
    outs = [(t, i) for what, t, _, i in owner.log if what == "out"]
    # offset: interval/(2n), mid-slot (not half an interval, which put unit 1 of 2 at the end of the first interval)
    assert outs == [(25.0, 0), (75.0, 1), (125.0, 0), (175.0, 1), (225.0, 0)]
    backs = [(t, i) for what, t, _, i in owner.log if what == "back"]
    assert backs == [(35.0, 0), (85.0, 1), (135.0, 0), (185.0, 1)]  # the last window is open at the horizon
    assert account.windows == 5
    assert account.hours == pytest.approx(4 * 10.0 + 5.0)  # closed at 230 h: 5 h
    assert account.exposure_h == pytest.approx(25.0) and account.short_h == pytest.approx(20.0)
    assert account.drained_h == 0.0


def test_rota_hooks_run_in_order_and_record_the_window() -> None:
    owner, _, rec = _run(_Window(interval_h=1000.0, duration_h=8.0, offset_h=5.0), 1, 100.0, {0: "drained"})
    assert [what for what, *_ in owner.log] == ["out", "after_out", "back", "after_back"]
    ev = rec.events_table()
    rows = ev[ev["kind"].astype(str).str.startswith("maintenance")]
    assert list(rows["kind"].astype(str)) == ["maintenance_start", "maintenance_end"]
    assert list(rows["time_h"]) == [5.0, 13.0] and set(rows["path"].astype(str)) == {"site.ups0"}


def test_account_sorts_hours_by_how_the_load_stood() -> None:
    acc = MaintenanceAccount()
    acc.open("chiller", 0, 1.0, "drained")
    acc.open("crah", 3, 2.0, "exposed")
    acc.close("chiller", 0, 4.0)
    acc.close_all(10.0)
    assert (acc.windows, acc.hours, acc.drained_h, acc.exposure_h, acc.short_h) == (2, 11.0, 3.0, 8.0, 0.0)
    with pytest.raises(KeyError):
        acc.close("crah", 3, 11.0)  # closed already


def test_spare_without_counts_the_others_that_serve() -> None:
    ok = [True, False, True, True]
    assert spare_without(ok, range(4), 0, 2)  # units 2 and 3 carry it
    assert not spare_without(ok, range(4), 2, 3)
    assert not spare_without(ok, range(0, 2), 0, 1)  # its group is units 0 and 1: unit 1 is out


def test_both_population_kinds_share_one_base_instead_of_copies() -> None:
    for name in ("uniform", "draw_lifetimes", "start", "_schedule", "reschedule", "_renew", "_common_event",
                 "_hide", "found_event", "found", "_periodic_test"):
        assert name in vars(Population), name
        assert name not in vars(FacilityParts) and name not in vars(PartPopulation), name
    assert issubclass(FacilityParts, Population) and issubclass(PartPopulation, Population)


def test_unit_sections_share_the_schema_bases() -> None:
    assert all(issubclass(c, UnitGroup) for c in (Crah, Cdu, Pumps, Chillers))
    assert issubclass(Element, FacilityUnit)
    assert issubclass(ElementMaintenance, Visits) and issubclass(UnitMaintenance, Visits)


@pytest.mark.parametrize("key", ["power.ups", "cooling.plant.chillers", "cooling.air.crah"])
def test_beta_needs_an_exponential_failure_at_the_unit_s_own_path(key: str) -> None:
    sets = [f"{key}.common_cause_beta=0.1", f"{key}.failure={{dist: weibull, shape: 2, scale_h: 1000}}"]
    where = re.escape(f"{key}.common_cause_beta")
    with pytest.raises(InputError, match=where + r": needs an exponential failure distribution \(the β-factor splits a "
                                              r"constant rate λ\), got 'weibull'"):
        load_scenario("scenarios/air.yaml", sets)


@pytest.mark.parametrize("key", ["cooling.plant.chillers", "cooling.air.crah"])
def test_k_of_n_groups_keep_their_message(key: str) -> None:
    with pytest.raises(InputError, match=re.escape(f"{key}.required") + r": must be <= count \(\d\), got 9"):
        load_scenario("scenarios/air.yaml", [f"{key}.required=9"])
