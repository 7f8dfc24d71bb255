"""The one background event loop that every synchronous classifier of a process shares.

A sync call hands its coroutine to this loop and blocks the calling thread on the result, so it
works the same from a script, from a thread among many, and from inside a running event loop (a
notebook cell, a coroutine): the work never runs on the caller's loop, so it cannot deadlock it.

Why one shared loop and not one per classifier or per call: a classifier's connection pool is
bound to the loop that opened it, so one loop per process keeps one pool per classifier however
many threads call it, and costs one thread in all. ``asyncio.run`` per call would open a pool
per call and could not run inside a loop at all.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import contextvars
import os
import threading
import weakref
from collections import deque
from collections.abc import Callable, Coroutine
from typing import Any, Protocol, TypeVar

from ..core import ConfigError

__all__ = ["BackgroundLoop", "Closable", "background"]

T = TypeVar("T")

#: How long exit waits for open classifiers to close and the loop to stop: a far side that does
#: not answer a close must not hold the process open.
_EXIT_GRACE = 5.0


class Closable(Protocol):
    """What exit closes: a sync classifier, through the async close of its pool."""

    def _pool_closer(self) -> Coroutine[Any, Any, None]: ...


class BackgroundLoop:
    """An event loop on a daemon thread, started on first use (and again after a fork)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        #: the classifiers still open, closed at exit so a script that never closed its
        #: classifier exits quietly (no "Unclosed client session"); weak, so one dropped
        #: without close() is not kept alive by this list
        self._open: weakref.WeakSet[Closable] = weakref.WeakSet()
        #: callbacks handed over by calling threads, run in order by ``_drain`` on the loop
        self._inbox: deque[Callable[[], object]] = deque()
        self._inbox_lock = threading.Lock()
        self._drain_pending = False

    def _started(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                ready = threading.Event()

                def serve() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(ready.set)
                    loop.run_forever()

                thread = threading.Thread(target=serve, name="toolnexus-sync", daemon=True)
                thread.start()
                ready.wait()
                self._loop, self._thread = loop, thread
            return self._loop

    def _hand_over(self, loop: asyncio.AbstractEventLoop, callback: Callable[[], object]) -> None:
        """Run ``callback`` on the loop, after every callback handed over before it. Under load
        many calls share one wake-up of the loop (``call_soon_threadsafe`` writes to the
        loop's self-pipe on every call): measured, that write and the wake-up it causes were
        the largest part of a sync call's CPU beside the async one (bench/sync.py)."""
        self._inbox.append(callback)
        with self._inbox_lock:
            if self._drain_pending:
                return
            self._drain_pending = True
        loop.call_soon_threadsafe(self._drain)

    def _drain(self) -> None:
        with self._inbox_lock:
            self._drain_pending = False
        # A callback handed over after the flag was reset schedules a drain of its own.
        while self._inbox:
            self._inbox.popleft()()

    def on_loop_thread(self) -> bool:
        return self._thread is not None and threading.current_thread() is self._thread

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the background loop in a copy of the caller's contextvars and return
        its result, or raise its exception (the same object). If the calling thread is
        interrupted (Ctrl-C) the task is cancelled, and the interruption is raised once the
        cancellation has run: no request of this call is left in flight or started after."""
        if self.on_loop_thread():
            coro.close()
            raise ConfigError(
                "classifier: a toolnexus.sync call ran on the sync API's own background thread "
                "(inside a custom evaluate or an on_metric callback), where it would wait on "
                "itself; use the async API there"
            )
        loop = self._loop or self._started()  # the lock only while there is no loop yet
        context = contextvars.copy_context()
        # A bare lock, held until the task is done, is the cheapest hand-back there is (a
        # concurrent Future allocates a Condition and a waiter lock per call); its acquire is
        # interruptible by Ctrl-C like any lock's.
        finished = threading.Lock()
        finished.acquire()
        tasks: list[asyncio.Task[T]] = []

        def finish(_: object) -> None:
            finished.release()

        def start() -> None:
            tasks.append(loop.create_task(coro, context=context))
            tasks[0].add_done_callback(finish)

        # Inside the try: a Ctrl-C may land while the call is being handed over, and the loop
        # may already be running it (a fast call can even finish first).
        try:
            self._hand_over(loop, start)
            finished.acquire()
        except BaseException:
            if not (tasks and tasks[0].done()):
                # Ctrl-C (or SystemExit) in the caller while the task runs: cancel it and wait
                # for the cancellation to unwind (it closes the in-flight requests). A second
                # Ctrl-C stops the wait.
                def abandon() -> None:
                    # Runs on the loop after ``start`` if ``start`` was scheduled at all
                    # (callbacks run in order): no task means the interruption came first.
                    if tasks:
                        tasks[0].cancel()
                    else:
                        coro.close()
                        finished.release()

                self._hand_over(loop, abandon)
                finished.acquire()
            if tasks and tasks[0].done() and not tasks[0].cancelled():
                # It finished anyway: the interruption wins, and asyncio must not log the
                # result's exception as never retrieved.
                tasks[0].exception()
            raise
        return tasks[0].result()

    def run_soon(self, coro: Coroutine[Any, Any, object]) -> None:
        """Start ``coro`` without waiting for it. Only from the loop thread itself, where
        waiting would deadlock (a stream finalised by a collection that ran there)."""
        self._started().create_task(coro)

    def track(self, closable: Closable) -> None:
        with self._lock:
            self._open.add(closable)

    def untrack(self, closable: Closable) -> None:
        with self._lock:
            self._open.discard(closable)

    def shutdown(self) -> None:
        """At exit: close what is still open, stop the loop, join its thread, all bounded."""
        with self._lock:
            loop, thread, closers = self._loop, self._thread, list(self._open)
            self._open.clear()
        if loop is None or thread is None or not thread.is_alive():
            return

        async def close_all() -> None:
            await asyncio.gather(*(c._pool_closer() for c in closers), return_exceptions=True)

        # A close that does not finish in time is abandoned: exit must not hang on it.
        with contextlib.suppress(concurrent.futures.TimeoutError):
            asyncio.run_coroutine_threadsafe(close_all(), loop).result(_EXIT_GRACE)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(_EXIT_GRACE)
        if not thread.is_alive():
            loop.close()  # a stopped loop left open is a ResourceWarning at exit (-X dev)
        with self._lock:
            # A call after this (a close() from a late finaliser) starts a loop of its own, or
            # fails to at interpreter shutdown: it never waits on the stopped one.
            self._loop, self._thread = None, None

    def forget(self) -> None:
        """In a forked child: the parent's loop thread does not exist here; start afresh."""
        self._lock = threading.Lock()
        self._loop, self._thread, self._open = None, None, weakref.WeakSet()
        self._inbox, self._inbox_lock, self._drain_pending = deque(), threading.Lock(), False


#: The process's one background loop.
background = BackgroundLoop()
atexit.register(background.shutdown)
if hasattr(os, "register_at_fork"):  # not on Windows
    os.register_at_fork(after_in_child=background.forget)
