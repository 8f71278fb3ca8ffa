"""The engine's one timer abstraction (issue 21 item 4): set, cancel, reschedule."""

from __future__ import annotations

import math

from twin.model.engine import Engine
from twin.observe.recorder import Recorder


def engine() -> Engine:
    return Engine(1, 0, 100.0, Recorder())


def test_set_fires_once_at_its_time() -> None:
    eng = engine()
    seen: list[float] = []
    t = eng.timer(lambda: seen.append(eng.now))
    t.set(3.0)
    assert t.pending and t.due_h == 3.0
    eng.env.run(until=100.0)
    assert seen == [3.0]
    assert not t.pending and math.isnan(t.due_h)


def test_a_cancelled_timer_never_fires() -> None:
    eng = engine()
    seen: list[float] = []
    t = eng.timer(lambda: seen.append(eng.now))
    t.set(5.0)
    eng.call_at(2.0, t.cancel)
    eng.env.run(until=100.0)
    assert seen == []
    assert not t.pending
    t.cancel()  # cancelling an idle timer is a no-op


def test_reschedule_later_and_earlier_fires_only_at_the_last_time() -> None:
    eng = engine()
    seen: list[float] = []
    a = eng.timer(lambda: seen.append(eng.now))
    a.set(5.0)
    a.reschedule(8.0)  # later: the call at 5 h is superseded
    b = eng.timer(lambda: seen.append(-eng.now))
    b.set(9.0)
    eng.call_at(1.0, lambda: b.reschedule(4.0))  # earlier, from inside the run
    eng.env.run(until=100.0)
    assert seen == [-4.0, 8.0]


def test_set_from_its_own_callback_and_with_another_function() -> None:
    eng = engine()
    seen: list[tuple[str, float]] = []
    t = eng.timer()

    def tick() -> None:
        seen.append(("tick", eng.now))
        if eng.now < 3.0:
            t.set(eng.now + 1.0)  # re-arm from the callback: runs again
        else:
            t.set(eng.now + 1.0, lambda: seen.append(("tock", eng.now)))

    t.set(1.0, tick)
    t.set(0.5 - 10.0)  # a time in the past runs now, and supersedes the call at 1 h... with tick
    eng.env.run(until=100.0)
    assert seen == [("tick", 0.0), ("tick", 1.0), ("tick", 2.0), ("tick", 3.0), ("tock", 4.0)]


def test_batch_timer_calls_once_per_batch_with_the_items_still_armed() -> None:
    """One call per batch; an item cancelled (or moved to a later batch) is left out of its old call;
    a batch with no armed item calls nothing."""
    import numpy as np
    import simpy

    from twin.model.engine import BatchTimer

    class _Eng:  # the two attributes a BatchTimer uses
        def __init__(self) -> None:
            self.env = simpy.Environment()

        def call_at(self, t_h: float, fn):  # type: ignore[no-untyped-def]
            ev = self.env.timeout(max(0.0, t_h - self.env.now))
            ev.callbacks.append(lambda _e: fn())
            return ev

    eng = _Eng()
    calls: list[tuple[float, list[int]]] = []
    bt = BatchTimer(eng, 6, lambda items: calls.append((eng.env.now, items.tolist())))  # type: ignore[arg-type]
    bt.set(np.array([0, 1, 2]), 1.0)
    bt.set(np.array([3, 4]), 2.0)
    bt.cancel(1)  # 1 leaves the first batch
    bt.set(np.array([2]), 3.0)  # 2 moves to a later call
    bt.cancel(np.array([3, 4]))  # the second batch is empty: no call
    eng.env.run(until=10.0)
    assert calls == [(1.0, [0]), (3.0, [2])]


def test_a_timer_with_a_priority_comes_first_among_its_instant_s_ordinary_calls() -> None:
    """Timers at the default priority run in the order they were set, as ``call_at``; a timer with a
    lower priority (the trace's submissions, 0.5) runs before the ordinary calls of its instant even
    when set after them."""
    eng = engine()
    seen: list[str] = []
    eng.call_at(4.0, lambda: seen.append("call"))
    ordinary = eng.timer(lambda: seen.append("ordinary"))
    ordinary.set(4.0)
    early = eng.timer(lambda: seen.append("early"), priority=0.5)
    early.set(4.0)
    eng.env.run(until=100.0)
    assert seen == ["early", "call", "ordinary"]


def test_item_timer_keeps_one_pending_call_per_item() -> None:
    """ItemTimer (a part population's failure times): each item fires once at its last armed time; a
    re-armed item's earlier call and a cancelled item's call never run; items are independent; an item
    re-armed from its own callback fires again."""
    eng = engine()
    seen: list[tuple[int, float]] = []

    def fire(i: int) -> None:
        seen.append((i, eng.now))
        if i == 3 and eng.now < 50.0:
            t.set(3, 60.0)

    t = eng.item_timer(5, fire)
    t.set(0, 10.0)
    t.set(1, 20.0)
    t.set(1, 5.0)    # earlier: the call at 20 is void
    t.set(2, 7.0)
    t.cancel(2)      # never fires
    t.set(3, 30.0)
    t.set(4, 40.0)
    eng.call_at(35.0, lambda: t.set(4, 45.0))   # moved later from elsewhere
    t.cancel(0)
    t.set(0, 12.0)   # re-armed after a cancel
    eng.env.run(until=100.0)
    assert seen == [(1, 5.0), (0, 12.0), (3, 30.0), (4, 45.0), (3, 60.0)]
    t.cancel(1)      # cancelling a fired item is a no-op
