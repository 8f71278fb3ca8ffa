"""The job queue as an index, so that a scheduling pass costs the same at a queue of 100 or 100,000.

Queue order is higher priority first, then earlier submission, then job id (``qkey``). The queue is
split into buckets by (priority, nodes needed); within a bucket each job has a slot in queue order,
and two segment trees over the slots (jobs never started / requeued jobs) hold each queued job's
remaining work (its lower bound on the backfill estimate) or +inf. One query — "the first job in
queue order that fits the free nodes and, unless it fits the nodes spare at the head's reservation,
has at most ``T`` hours of work left" — costs O(buckets × log slots) instead of a scan of the queue.

A short queue (at most ``SMALL_MAX`` jobs) is a plain list in queue order instead, scanned in order:
the scheduler of a busy cluster with a queue of a few jobs (the bundled scenarios: mostly 0 or 1)
then pays no bucket or tree upkeep. The index is built once the queue grows past ``SMALL_MAX`` and
dropped once it falls below ``SMALL_MIN`` (apart, so that a queue hovering at a bound does not
rebuild at every event); both modes answer every query the same (tested).

``ops`` counts the index's inner-loop steps (buckets visited, tree levels walked or updated, slots
rebuilt); the scheduler adds its own passes. It is a plain integer so that tests can count scheduler
operations per event (operations, not seconds).
"""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Iterator
from typing import Generic, Protocol, TypeVar


class QueuedJob(Protocol):
    """What the queue reads and keeps of a job (:class:`twin.model.workload.jobs.Job` has these fields):
    its order (priority, submission, id), its size, whether it was ever started, and the queue's own index
    fields (its slot in its bucket, its work left when queued, queued or not)."""

    @property
    def jid(self) -> int: ...

    @property
    def priority(self) -> int: ...

    @property
    def submit_h(self) -> float: ...

    @property
    def nodes_needed(self) -> int: ...

    started_once: bool
    qslot: int
    qlb: float
    queued: bool


Job = TypeVar("Job", bound=QueuedJob)
"""The job record a queue holds (the queue returns the records it was given)."""

INF = float("inf")
ANY = 1.7976931348623157e308
"""A threshold every queued job's remaining work meets (the largest float; free slots hold +inf)."""


SMALL_MAX = 32
"""Longest queue kept as a plain list; one more job builds the index."""
SMALL_MIN = 8
"""A queue in the index shorter than this goes back to a plain list."""


class MinTree:
    """Values at slots 0, 1, … (+inf when empty) with: set a value; the first slot whose value is ≤ T."""

    __slots__ = ("cap", "t")

    def __init__(self, values: list[float] | None = None) -> None:
        vals = values or []
        cap = 16
        while cap < len(vals):
            cap *= 2
        self.cap = cap
        t = array("d", [INF]) * (2 * cap)
        t[cap: cap + len(vals)] = array("d", vals)
        for p in range(cap - 1, 0, -1):
            a, b = t[2 * p], t[2 * p + 1]
            t[p] = min(b, a)
        self.t = t

    def grow(self, n: int) -> None:
        """Make room for slots 0 … n-1 (doubling)."""
        if n > self.cap:
            cap = self.cap
            while cap < n:
                cap *= 2
            vals = self.t[self.cap: 2 * self.cap].tolist()
            self.__init__(vals + [INF] * (cap - len(vals)))  # type: ignore[misc]

    def set(self, i: int, v: float) -> int:
        """Set slot ``i`` to ``v``; returns the tree levels walked."""
        t = self.t
        p = self.cap + i
        t[p] = v
        steps = 1
        p >>= 1
        while p:
            a, b = t[2 * p], t[2 * p + 1]
            m = min(b, a)
            steps += 1
            if t[p] == m:
                break
            t[p] = m
            p >>= 1
        return steps

    def first_le(self, limit: float) -> tuple[int, int]:
        """(the first slot whose value is ≤ ``limit`` or -1, tree levels walked)."""
        t = self.t
        if not t[1] <= limit:
            return -1, 1
        p, cap, steps = 1, self.cap, 1
        while p < cap:
            p *= 2
            if not t[p] <= limit:
                p += 1
            steps += 1
        return p - cap, steps


class _Bucket(Generic[Job]):
    """Queued jobs of one (priority, nodes needed): slots in queue order, two trees over them."""

    __slots__ = ("jobs", "keys", "new", "queued", "req")

    def __init__(self) -> None:
        self.keys: list[tuple[int, float, int]] = []
        self.jobs: list[Job] = []
        self.new = MinTree()  # jobs never started
        self.req = MinTree()  # requeued jobs (they may start on hot spares and restart)
        self.queued = 0


def queue_key(job: Job) -> tuple[int, float, int]:
    """Queue order: higher priority first, then earlier submission, then job id."""
    return (-job.priority, job.submit_h, job.jid)


class JobQueue(Generic[Job]):
    """The queued jobs, indexed by priority and size (see the module)."""

    def __init__(self, small_max: int = SMALL_MAX, small_min: int = SMALL_MIN) -> None:
        self.small_max = small_max
        self.small_min = small_min
        """The plain list's bounds (``SMALL_MAX``, ``SMALL_MIN``; 0, 0: always the index)."""
        self.buckets: dict[tuple[int, int], _Bucket[Job]] = {}
        self.live: dict[tuple[int, int], _Bucket[Job]] = {}  # buckets with a queued job
        self.small: list[Job] | None = [] if small_max > 0 else None
        """The queued jobs in queue order while the queue is short; None while the index holds them."""
        self.hidden: set[int] = set()  # ids of the jobs hidden for the pass (both modes)
        self.n = 0
        self.ops = 0
        """Inner-loop steps so far (see the module)."""

    def __len__(self) -> int:
        return self.n

    def _build_index(self) -> None:
        """The short queue's jobs into the index (its list is in queue order: each bucket appends)."""
        jobs = self.small
        assert jobs is not None
        self.small = None
        self.n = 0
        for job in jobs:
            self.add(job, job.qlb)
            if job.jid in self.hidden:
                self.hide(job)

    def _drop_index(self) -> None:
        """The index's queued jobs into a plain list in queue order; every job loses its slot."""
        queued = []
        for b in self.buckets.values():
            self.ops += len(b.jobs)
            for j in b.jobs:
                j.qslot = -1
                if j.queued:
                    queued.append(j)
        queued.sort(key=queue_key)
        self.buckets = {}
        self.live = {}
        self.small = queued

    def _rebuild(self, b: _Bucket[Job], extra: Job | None) -> None:
        """Slots anew for the bucket's queued jobs (and ``extra``) in queue order; others lose theirs."""
        keep = [j for j in b.jobs if j.qslot >= 0 and j.queued]
        for j in b.jobs:
            j.qslot = -1
        if extra is not None:
            keep.append(extra)
        keep.sort(key=queue_key)
        self.ops += len(b.jobs) + len(keep)
        b.jobs = keep
        b.keys = [queue_key(j) for j in keep]
        for i, j in enumerate(keep):
            j.qslot = i
        hid = self.hidden  # a job hidden for the pass stays hidden in its new slot
        b.new = MinTree([j.qlb if j.queued and not j.started_once and j.jid not in hid else INF for j in keep])
        b.req = MinTree([j.qlb if j.queued and j.started_once and j.jid not in hid else INF for j in keep])

    def add(self, job: Job, work_left_h: float) -> None:
        """Queue ``job`` with ``work_left_h`` hours of work left (≥ 0)."""
        small = self.small
        if small is not None:
            job.qlb = work_left_h
            job.queued = True
            bisect.insort(small, job, key=queue_key)
            self.ops += 1
            self.n += 1
            if self.n > self.small_max:
                self._build_index()
            return
        key = (job.priority, job.nodes_needed)
        b = self.buckets.get(key)
        if b is None:
            b = self.buckets[key] = _Bucket[Job]()
        job.qlb = work_left_h
        job.queued = True
        if job.qslot < 0:
            k = queue_key(job)
            if b.keys and k < b.keys[-1] or len(b.jobs) > 2 * b.queued + 64:
                self._rebuild(b, job)  # out of order (a requeued job, a tie), or compacting: new slots
            else:
                job.qslot = len(b.jobs)
                b.jobs.append(job)
                b.keys.append(k)
                b.new.grow(len(b.jobs))
                b.req.grow(len(b.jobs))
        self.ops += (b.req if job.started_once else b.new).set(job.qslot, work_left_h)
        b.queued += 1
        self.live[key] = b
        self.n += 1

    def remove(self, job: Job) -> None:
        """Take ``job`` out of the queue (it starts)."""
        small = self.small
        if small is not None:
            for i, j in enumerate(small):
                if j is job:
                    del small[i]
                    break
            else:
                raise ValueError(f"job {job.jid} is not queued")
            self.ops += i + 1
            job.queued = False
            self.n -= 1
            return
        key = (job.priority, job.nodes_needed)
        b = self.buckets[key]
        self.ops += (b.req if job.started_once else b.new).set(job.qslot, INF)
        job.queued = False
        b.queued -= 1
        if not b.queued:
            del self.live[key]
        self.n -= 1
        if self.n < self.small_min:
            self._drop_index()

    def hide(self, job: Job) -> None:
        """Leave ``job`` out of queries until :meth:`show` (skipped for the rest of a pass)."""
        self.hidden.add(job.jid)
        if self.small is not None:
            return
        b = self.buckets[(job.priority, job.nodes_needed)]
        self.ops += (b.req if job.started_once else b.new).set(job.qslot, INF)

    def show(self, job: Job) -> None:
        self.hidden.discard(job.jid)
        if self.small is not None or not job.queued:
            return
        b = self.buckets[(job.priority, job.nodes_needed)]
        self.ops += (b.req if job.started_once else b.new).set(job.qslot, job.qlb)

    def first(self, free: tuple[int, int], spare: tuple[int, int], extra: int, limit_h: float) -> Job | None:
        """The first queued job in queue order that fits and may start: it fits if it needs at most
        ``free`` nodes (``free[0]`` for one-node jobs, ``free[1]`` for multi-node jobs, which avoid cut
        nodes), a requeued job ``free + spare``; it may start if it needs at most ``extra`` nodes, or
        has at most ``limit_h`` hours of work left. ``first((big, big), (0, 0), big, ANY)`` is the
        head of the queue."""
        small = self.small
        if small is not None:
            hidden = self.hidden
            for i, job in enumerate(small):
                nn = job.nodes_needed
                k = 1 if nn > 1 else 0
                if (nn <= free[k] + (spare[k] if job.started_once else 0)
                        and job.qlb <= (ANY if nn <= extra else limit_h) and not (hidden and job.jid in hidden)):
                    self.ops += i + 1
                    return job
            self.ops += len(small)
            return None
        best: Job | None = None
        best_key: tuple[int, float, int] | None = None
        for (_, nn), b in self.live.items():
            self.ops += 1
            i = 1 if nn > 1 else 0
            f = free[i]
            lim = ANY if nn <= extra else limit_h
            s_new = s_req = -1
            if nn <= f:
                s_new, steps = b.new.first_le(lim)
                self.ops += steps
            if nn <= f + spare[i]:
                s_req, steps = b.req.first_le(lim)
                self.ops += steps
            s = s_new if s_req < 0 or 0 <= s_new < s_req else s_req
            if s < 0:
                continue
            key = b.keys[s]
            if best_key is None or key < best_key:
                best, best_key = b.jobs[s], key
        return best

    def jobs(self) -> Iterator[Job]:
        """Queued jobs in queue order (tests)."""
        if self.small is not None:
            return iter(list(self.small))
        out = [j for b in self.live.values() for j in b.jobs if j.queued]
        return iter(sorted(out, key=queue_key))


