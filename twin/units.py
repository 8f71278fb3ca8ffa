"""Units of time and the calendar, named once (issue 21, item 5), and a crew's working calendar.

Simulated time is a float number of hours from 0 h = Monday 00:00 (no time zone, no leap days, no
daylight saving). Scenario inputs carry their unit in their name (``_h``, ``_days``,
``_per_year``); these constants convert between them.
"""

from __future__ import annotations

import math

SECONDS_PER_HOUR = 3600.0
HOURS_PER_DAY = 24.0
DAYS_PER_WEEK = 7
HOURS_PER_WEEK = 168
"""Hours of a week (the hour-of-week price table has exactly this many rows)."""
DAYS_PER_YEAR = 365.0
"""The twin's one year, 365 days. It converts every per-year input to a rate per hour (utility
outages, link and trunk flaps) and is the cost year (amortisation, holding, discounting) and the
period of the ambient temperature's seasonal cycle. Simulated time has no leap days, so a year of
365 simulated days makes a 365-day horizon exactly one year of every rate and every cost; the
0.07 % to a mean year of 365.25 days is far below the uncertainty of any per-year source figure."""
HOURS_PER_YEAR = DAYS_PER_YEAR * HOURS_PER_DAY
"""8,760 h."""
HOURS_PER_MONTH = HOURS_PER_YEAR / 12.0
"""730 h, a twelfth of the year: converts per-month failure rates (the fabric's) to per hour."""

_DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


class Calendar:
    """A crew's working calendar. Simulated time 0 h is Monday 00:00."""

    def __init__(self, shift: str, start_hour: float = 8.0, end_hour: float = 17.0,
                 workdays: list[str] | None = None) -> None:
        self.always = shift == "24x7"
        self.start_hour = start_hour
        self.end_hour = end_hour
        self.workdays = {(_DAYS.index(d)) for d in (workdays or _DAYS[:5])}

    def on_shift(self, t_h: float) -> bool:
        if self.always:
            return True
        day = int(math.floor(t_h / HOURS_PER_DAY))
        hour = t_h - HOURS_PER_DAY * day
        return (day % DAYS_PER_WEEK) in self.workdays and self.start_hour <= hour < self.end_hour

    def wait_h(self, t_h: float) -> float:
        """Hours from ``t_h`` until the crew is next on shift (0 if on shift now)."""
        if self.always or self.on_shift(t_h):
            return 0.0
        day = int(math.floor(t_h / HOURS_PER_DAY))
        for d in range(day, day + DAYS_PER_WEEK + 1):
            start = HOURS_PER_DAY * d + self.start_hour
            if (d % DAYS_PER_WEEK) in self.workdays and start >= t_h:
                return start - t_h
        raise AssertionError("calendar has no working day")  # prevented by the schema

    def on_shift_hours(self, horizon_h: float) -> float:
        """Working hours in [0, horizon_h)."""
        if self.always:
            return horizon_h
        total = 0.0
        days = int(math.ceil(horizon_h / HOURS_PER_DAY))
        for d in range(days):
            if (d % DAYS_PER_WEEK) in self.workdays:
                a = HOURS_PER_DAY * d + self.start_hour
                b = min(HOURS_PER_DAY * d + self.end_hour, horizon_h)
                total += max(0.0, b - a)
        return total
