"""Crew calendars (model.md §2): business hours delay the start of a repair to the next shift.
Simulated time 0 h is Monday 00:00."""

from __future__ import annotations

import numpy as np
import pytest

from twin.units import Calendar
from twin.scenario.loader import load_dict
from twin.sim import run_replication

DAY_INDEX = {"mon": 0, "tue": 1, "wed": 2, "thu": 3, "fri": 4, "sat": 5, "sun": 6}


def h(day: int, hour: float, week: int = 0) -> float:
    """Simulated hours of ``day`` (0 = Monday) at ``hour``, in week ``week``."""
    return 168.0 * week + 24.0 * day + hour


# ---- the Calendar itself --------------------------------------------------------------------

def test_friday_evening_waits_until_monday_morning() -> None:
    cal = Calendar("business", 8.0, 17.0, ["mon", "tue", "wed", "thu", "fri"])
    assert cal.wait_h(h(4, 19.0)) == pytest.approx(61.0, abs=1e-12)
    assert cal.wait_h(h(4, 19.0, week=3)) == pytest.approx(61.0, abs=1e-9)


@pytest.mark.parametrize(
    "t,expected",
    [
        (h(0, 0.0), 8.0),  # Monday midnight
        (h(0, 7.5), 0.5),
        (h(0, 8.0), 0.0),  # shift start is on shift
        (h(2, 12.0), 0.0),
        (h(2, 16.999), 0.0),
        (h(2, 17.0), 15.0),  # shift end is off shift: next morning
        (h(4, 17.0), 63.0),  # Friday 17:00 -> Monday 08:00
        (h(5, 12.0), 44.0),  # Saturday noon
        (h(6, 23.0), 9.0),  # Sunday 23:00
        (h(6, 23.0, week=1), 9.0),
    ],
)
def test_business_calendar_waits(t: float, expected: float) -> None:
    cal = Calendar("business", 8.0, 17.0, ["mon", "tue", "wed", "thu", "fri"])
    assert cal.wait_h(t) == pytest.approx(expected, abs=1e-9)
    assert cal.on_shift(t) == (expected == 0.0)


def test_24x7_never_waits_and_custom_days() -> None:
    always = Calendar("24x7")
    assert all(always.wait_h(t) == 0.0 for t in np.linspace(0, 500, 97))
    assert always.on_shift_hours(100.0) == 100.0
    weekend = Calendar("business", 10.0, 14.0, ["sat", "sun"])
    assert weekend.wait_h(h(0, 9.0)) == pytest.approx(h(5, 10.0) - h(0, 9.0))
    assert weekend.wait_h(h(6, 13.5)) == 0.0
    assert weekend.wait_h(h(6, 14.0)) == pytest.approx(h(5, 10.0, week=1) - h(6, 14.0))
    assert Calendar("business").on_shift_hours(168.0) == pytest.approx(45.0)
    assert weekend.on_shift_hours(2 * 168.0) == pytest.approx(16.0)


# ---- an independent wait function from the same rules ----------------------------------------

def my_wait(t: float, start: float, end: float, workdays: list[str]) -> float:
    """Hours from t until a crew with this calendar is on shift: on shift on a working day in
    [start, end); otherwise the next working day's ``start`` (written without Calendar)."""
    days = {DAY_INDEX[d] for d in workdays}
    week_h = t % 168.0
    dow = int(week_h // 24.0)
    hod = week_h - 24.0 * dow
    if dow in days and start <= hod < end:
        return 0.0
    if dow in days and hod < start:
        return start - hod
    ahead = 24.0 - hod  # to next midnight
    d = (dow + 1) % 7
    while d not in days:
        ahead += 24.0
        d = (d + 1) % 7
    return ahead + start


@pytest.mark.parametrize(
    "start,end,workdays",
    [
        (8.0, 17.0, ["mon", "tue", "wed", "thu", "fri"]),
        (9.5, 13.0, ["tue", "thu", "sat"]),
    ],
)
def test_simulated_repairs_wait_for_the_shift(start: float, end: float, workdays: list[str]) -> None:
    doc = {
        "name": "shifts",
        "seed": 314,
        "horizon_days": 8 * 7,
        "cluster": {"racks": 10, "nodes_per_rack": 20, "node": {"gpus": 8, "parts": {
            "board": {"count": 1, "effect": "node_down", "failure": {"mtbf_h": 500},
                      "repair": {"hot_swap": False, "time": {"dist": "fixed", "value_h": 1.0}}},
        }}},
        "maintenance": {
            "detection": {"dist": "fixed", "value_h": 0},
            # many technicians: nobody queues for a crew, so the only wait is the calendar's
            "crews": {"day": {"count": 200, "shift": "business", "start_hour": start, "end_hour": end,
                              "workdays": workdays}},
        },
    }
    sc = load_dict(doc).scenario
    res = run_replication(sc, 0)
    t = res.tables["tickets"]
    t = t[t["done"]]
    assert len(t) > 200
    assert (t["spare_h"] == t["fail_h"]).all()  # no detection delay, unlimited spares
    assert (t["crew_h"] == t["start_h"]).all()  # a crew is taken on shift, with no queue
    waited = (t["start_h"] - t["spare_h"]).to_numpy()
    expected = np.array([my_wait(x, start, end, workdays) for x in t["spare_h"]])
    assert (expected > 0).sum() > 0.3 * len(t) and (expected == 0).sum() > 0  # both cases occur
    np.testing.assert_allclose(waited, expected, rtol=0, atol=1e-9)
    assert waited.mean() == pytest.approx(expected.mean(), abs=1e-9)
    assert res.metrics["repair.wait_crew_h"] == pytest.approx(expected.mean(), abs=1e-9)
    # every repair starts on shift
    assert all(my_wait(x, start, end, workdays) == 0.0 for x in t["start_h"])


def test_few_business_crews_queue_and_still_start_on_shift() -> None:
    """With one technician, tickets queue; each still starts on shift, never before its failure,
    and the technician does one repair at a time."""
    doc = {
        "name": "shifts-queue",
        "seed": 2718,
        "horizon_days": 6 * 7,
        "cluster": {"racks": 4, "nodes_per_rack": 10, "node": {"gpus": 8, "parts": {
            "board": {"count": 1, "effect": "node_down", "failure": {"mtbf_h": 500},
                      "repair": {"time": {"dist": "fixed", "value_h": 2.0}}},
        }}},
        "maintenance": {"detection": {"dist": "fixed", "value_h": 0},
                        "crews": {"solo": {"count": 1, "shift": "business"}}},
    }
    res = run_replication(load_dict(doc).scenario, 0)
    t = res.tables["tickets"]
    t = t[t["done"]].sort_values("start_h")
    assert len(t) > 20
    wd = ["mon", "tue", "wed", "thu", "fri"]
    assert all(my_wait(x, 8.0, 17.0, wd) == 0.0 for x in t["start_h"])
    assert (t["start_h"] >= t["fail_h"]).all()
    starts = t["start_h"].to_numpy()
    ends = t["end_h"].to_numpy()
    assert np.all(starts[1:] >= ends[:-1] - 1e-9)  # one at a time
