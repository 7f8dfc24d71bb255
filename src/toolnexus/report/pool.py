"""Work of a report done side by side in forked processes, the results taken in order: the
chunks of a long run (:mod:`.reader`), then each question's metrics (:mod:`.finish`).

The task list and what each task computes never depend on how many processes run them, so a
report has the same digits on one CPU or many. A worker that dies (the OOM killer, a
``kill -9``) loses nothing: what is left is computed in the parent.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

__all__ = ["DEFAULT_JOBS_MAX", "default_jobs", "in_order"]

S = TypeVar("S")
T = TypeVar("T")
R = TypeVar("R")

#: The default ``jobs`` at most: past this, the parts that stay serial (reading the labels,
#: merging) dominate, and every worker touches its own copy of the labels' pages.
DEFAULT_JOBS_MAX = 8


def default_jobs() -> int:
    """One process per CPU this process may use, at most :data:`DEFAULT_JOBS_MAX`."""
    affinity = getattr(os, "sched_getaffinity", None)
    cpus = len(affinity(0)) if affinity else os.cpu_count() or 1
    return min(cpus, DEFAULT_JOBS_MAX)


def in_order(
    task: Callable[[S, T], R],
    items: Sequence[T],
    jobs: int | None,
    shared: S,
    meanwhile: Callable[[], object] | None = None,
) -> Iterator[R]:
    """``task(shared, item)`` for every item, in item order, in up to ``jobs`` processes
    (``None``: :func:`default_jobs`). ``task`` is a module-level function; ``shared`` (the
    labels, a counted run) reaches each worker once, as it starts, never with each item. With one
    job, and for what is left when a worker dies, a task runs in this process.
    ``meanwhile()`` runs here once the workers are started, while they work (what this
    process will need next, such as an import, off the serial path); never with one job."""
    jobs = min(jobs or default_jobs(), len(items))
    if jobs <= 1:
        for item in items:
            yield task(shared, item)
        return
    import multiprocessing
    from concurrent.futures import Future, ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    # fork: a worker starts in milliseconds and finds the labels (the first run's snapshots,
    # the counted run) already in its memory. Where fork is unsafe (macOS frameworks) or
    # missing, spawn sends them once per worker.
    context = multiprocessing.get_context("fork" if sys.platform == "linux" else "spawn")
    pool = ProcessPoolExecutor(jobs, mp_context=context, initializer=_start, initargs=(shared,))
    interrupted = True
    try:
        # The workers start at the first submit. A Ctrl-C that lands while they are forked
        # would be raised in an at-fork hook, where CPython prints and drops it, and the report
        # would run on: SIGINT waits until they are started (they inherit it blocked, and
        # ignore it), then the parent raises it here.
        with _sigint_held():
            futures: list[Future[R] | None] = [
                pool.submit(_in_worker, task, item) for item in items
            ]
        if meanwhile is not None:
            meanwhile()
        for i in range(len(items)):
            # Taken out of the list, so a used result is freed, not held to the end.
            future, futures[i] = futures[i], None
            assert future is not None, "each future is taken once"
            try:
                result = future.result()
            except BrokenProcessPool:
                # A worker died: what is left is computed here, with the same numbers; the
                # report does not fail for a lost helper.
                pool.shutdown(wait=False, cancel_futures=True)
                for item in items[i:]:
                    yield task(shared, item)
                interrupted = False
                return
            yield result
        interrupted = False
    finally:
        # Joined unless an error or a Ctrl-C is on its way out: a pool left to close by itself
        # can race CPython's exit hook, which then prints "Exception ignored ... Bad file
        # descriptor" as it wakes a manager thread whose pipe just closed (seen on 3.11). A
        # consumer that stops early (GeneratorExit) joins too: pending tasks are cancelled,
        # running ones are one task each.
        error = sys.exc_info()[1]
        joined = not interrupted or isinstance(error, GeneratorExit)
        pool.shutdown(wait=joined, cancel_futures=True)


@contextmanager
def _sigint_held() -> Iterator[None]:
    block = getattr(signal, "pthread_sigmask", None)
    if block is None:  # Windows: no signal masks, and spawn runs no at-fork hooks
        yield
        return
    previous = block(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        block(signal.SIG_SETMASK, previous)


#: What ``in_order``'s tasks share, in a worker: set once as it starts.
_shared: Any = None


def _start(shared: Any) -> None:
    # Ctrl-C reaches the whole process group: the parent answers it (exit 130) and closes the
    # pool; a worker finishes its task quietly instead of printing a traceback of its own.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    global _shared
    _shared = shared


def _in_worker(task: Callable[[Any, T], R], item: T) -> R:
    return task(_shared, item)
