"""The scheduler's queue (twin/model/jobqueue.py): a short queue is a plain list, a long one the index,
and both answer every query the same."""

from __future__ import annotations

import numpy as np

from twin.model.jobqueue import ANY, SMALL_MAX, SMALL_MIN, JobQueue
from twin.model.workload import Job, JobSpec


def _jobs(r: np.random.Generator, n: int) -> list[Job]:
    """``n`` jobs with ties of priority and submit time (queue order falls back to the id)."""
    return [Job(JobSpec(i + 1, f"j{i}", 8, int(r.choice([1, 2, 4, 8])), 1.0, float(r.integers(0, 5)),
                        int(r.choice([0, 0, 1, 3])), None, None))  # type: ignore[arg-type]
            for i in range(n)]


def test_short_and_long_queues_answer_as_the_index_alone() -> None:
    """Random adds, requeues, starts, hides and queries on a queue with the plain-list mode and on one
    that is always the index (bounds 0, 0): the same job (by id) for every query, the same queue order.
    The queue length crosses both bounds many times, so every switch of mode is exercised."""
    r = np.random.default_rng(7)
    n = 400
    a_jobs, b_jobs = _jobs(np.random.default_rng(1), n), _jobs(np.random.default_rng(1), n)
    qa, qb = JobQueue(), JobQueue(0, 0)
    queued: list[int] = []  # indices of queued jobs
    out: list[int] = []  # indices of jobs not queued that may come back (requeue)
    fresh = list(range(n))
    switches = 0
    was_small = True
    hidden: list[int] = []
    for step in range(20_000):
        u = r.random()
        target = 60 if (step // 700) % 2 else 4  # alternate long and short spells
        grow = len(queued) < target
        if grow and u < 0.8 and (fresh or out):
            if fresh and (u < 0.4 or not out):
                i = fresh.pop(0)
            else:  # a requeued job (it started before, so it may use hot spares)
                i = out.pop(int(r.integers(len(out))))
            w = float(r.uniform(0, 10))
            qa.add(a_jobs[i], w)
            qb.add(b_jobs[i], w)
            queued.append(i)
        elif not grow and queued and u < 0.8 and not hidden:  # a start (never of a hidden job, as in a pass)
            i = queued.pop(int(r.integers(len(queued))))
            qa.remove(a_jobs[i])
            qb.remove(b_jobs[i])
            a_jobs[i].started_once = b_jobs[i].started_once = True
            out.append(i)
        elif queued and u < 0.85:  # hide for a pass, or end the pass
            if hidden and r.random() < 0.5:
                for i in hidden:
                    qa.show(a_jobs[i])
                    qb.show(b_jobs[i])
                hidden = []
            else:
                i = queued[int(r.integers(len(queued)))]
                if i not in hidden:
                    qa.hide(a_jobs[i])
                    qb.hide(b_jobs[i])
                    hidden.append(i)
        free = (int(r.integers(0, 10)), int(r.integers(0, 10)))
        spare = (int(r.integers(0, 3)), int(r.integers(0, 3)))
        extra = int(r.integers(0, 9))
        limit = ANY if r.random() < 0.3 else float(r.uniform(0, 12))
        ja, jb = qa.first(free, spare, extra, limit), qb.first(free, spare, extra, limit)
        assert (ja and ja.jid) == (jb and jb.jid), step
        assert len(qa) == len(qb) == len(queued)
        if (qa.small is not None) != was_small:
            switches += 1
            was_small = qa.small is not None
    assert [j.jid for j in qa.jobs()] == [j.jid for j in qb.jobs()]
    assert switches >= 6, switches


def test_a_short_queue_keeps_no_index() -> None:
    """Up to SMALL_MAX queued jobs are a plain list (no buckets or trees to keep up); one more builds
    the index; falling below SMALL_MIN drops it, and every job then has no slot."""
    r = np.random.default_rng(3)
    jobs = _jobs(r, SMALL_MAX + 1)
    q = JobQueue()
    for j in jobs[:-1]:
        q.add(j, 1.0)
    assert q.small is not None and not q.buckets and all(j.qslot == -1 for j in jobs)
    assert [j.jid for j in q.jobs()] == [j.jid for j in sorted(jobs[:-1], key=lambda j: (-j.priority, j.submit_h, j.jid))]
    q.add(jobs[-1], 1.0)
    assert q.small is None and q.buckets and all(j.qslot >= 0 for j in jobs)
    for j in jobs[: len(jobs) - SMALL_MIN + 1]:
        q.remove(j)
    assert len(q) == SMALL_MIN - 1
    assert q.small is not None and not q.buckets and all(j.qslot == -1 for j in jobs)


def test_a_pass_over_a_short_queue_costs_a_few_operations() -> None:
    """The head of a queue of 3 jobs: one step of the list, not buckets and tree levels (the index
    walks at least 5 tree levels for one bucket)."""
    q = JobQueue()
    for j in _jobs(np.random.default_rng(4), 3):
        q.add(j, 1.0)
    before = q.ops
    assert q.first((100, 100), (0, 0), 100, ANY) is not None
    assert q.ops - before == 1
