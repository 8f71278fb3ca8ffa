"""Interrupts that are never lost (issue 51, item 6).

Python runs a signal handler between bytecodes of whatever code is running, and an exception raised
there is *ignored* when that code is a finalizer, a ``WeakKeyDictionary`` removal callback or a gc
callback ("Exception ignored in ..."): a Ctrl-C raised from such a spot would be lost and the run
would go on to its end. So the handlers installed by the command line (:func:`install`) first record
the signal in :data:`PENDING`, a module-level list, and the places that run for long check it:

* the event loop (:meth:`twin.sim.Model.run`) after every event, inside :func:`loop`: while a loop
  runs, the handler only records (the loop raises at the next event boundary, never inside a
  callback);
* the experiment drivers between replications and while they wait for workers (:func:`check`).

Outside a loop the handler also raises :class:`KeyboardInterrupt` at once, as Python's own handler
does (so an interrupt during loading or writing acts immediately); should that raise be swallowed,
the record stays and the next check raises. A delivered interrupt is consumed (:func:`check`
clears the record); the command line's top level clears it too (:func:`clear`) when it reports the
interrupt, so nothing stale reaches a later run in the same process.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

PENDING: list[int] = []
"""Signal numbers received and not yet delivered as :class:`KeyboardInterrupt` (empty: none)."""

_loops = [0]
"""How many checked loops are running (in this thread of control); while > 0 the handler only records."""


def _name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def handler(signum: int, frame: FrameType | None) -> None:
    """Signal handler: record the interrupt; outside a checked loop also raise it at once."""
    PENDING.append(signum)
    if not _loops[0]:
        raise KeyboardInterrupt(_name(signum))


def check() -> None:
    """Raise :class:`KeyboardInterrupt` if an interrupt was recorded and not delivered (and consume it)."""
    if PENDING:
        signum = PENDING[0]
        PENDING.clear()
        raise KeyboardInterrupt(_name(signum))


def clear() -> None:
    """Forget a recorded interrupt (the command line's top level, once it has reported it)."""
    PENDING.clear()


@contextmanager
def loop() -> Iterator[list[int]]:
    """A loop that checks :data:`PENDING` itself (``if pending: check()`` per step, cheap: the
    truth of a list). Yields that list. On leaving, a record not yet delivered is raised. Outside the
    main thread (a thread-pool worker) it yields an empty list of its own: Python runs signal handlers
    in the main thread only, so the interrupt is the main thread's to raise, not a worker task's."""
    if threading.current_thread() is not threading.main_thread():
        yield []
        return
    _loops[0] += 1
    try:
        yield PENDING
    finally:
        _loops[0] -= 1
    check()  # after the decrement: a signal from here on raises from the handler itself


def install(signals: tuple[int, ...] = (signal.SIGINT,)) -> None:
    """Install :func:`handler` for ``signals`` (main thread only, as for any Python signal handler)."""
    for s in signals:
        signal.signal(s, handler)
