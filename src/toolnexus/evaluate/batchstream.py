"""A batch as a stream (seed 004 ``evaluate-batch``, streamed): ``evaluate_stream``'s workers,
its queue of results and its pull of ``(id, state)`` pairs from a sync or async iterable.

Workers are started one at a time, as the states pending need them, up to ``concurrency``;
each sends what it took through ``batchgroups.evaluate_group`` under the run's one scheduler.
When the scheduler stops the run, ``evaluate_stream`` yields what finished, then raises the stop.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from ..config import BatchOptions
from ..core import ClassifierError, ConfigError, RunStopped, check_state
from ..scheduler import Scheduler
from .batchgroups import Evaluator, StateResult, evaluate_group, plan, scheduler_for
from .packing import PACK_CAP

if TYPE_CHECKING:
    import asyncio

__all__ = ["evaluate_stream"]

K = TypeVar("K")


def _refused(result: StateResult, scheduler: Scheduler) -> bool:
    """Whether ``result`` is the scheduler refusing to send (the run stopped), not a reply."""
    return isinstance(result.error, RunStopped) and scheduler.stopped is not None


async def evaluate_stream(
    classifier: Evaluator,
    states: Iterable[tuple[K, Any]] | AsyncIterable[tuple[K, Any]],
    questions: Mapping[str, Any],
    options: BatchOptions,
) -> AsyncIterator[tuple[K, StateResult]]:
    """See ``Classifier.evaluate_stream``."""
    import asyncio
    import contextlib

    loop = asyncio.get_running_loop()
    concurrency = options.concurrency
    qs = classifier.prepare(questions)
    classifier.reserve(options)
    scheduler = scheduler_for(options)
    # A worker pulls up to a pack's worth of states, then sends them as ``plan`` packs them.
    chunk = 1 if options.pack == 1 else PACK_CAP if options.pack == "auto" else options.pack
    source = _pull(states)
    done: asyncio.Queue[tuple[K, StateResult] | None] = asyncio.Queue(maxsize=concurrency)
    failed: list[Exception] = []
    workers: list[asyncio.Task[None]] = []
    idle = 0

    def spawn() -> None:
        workers.append(asyncio.create_task(worker()))

    # ``options.flush``: a pack is sent part-filled once its first state has waited that long.
    # The pull that was waiting stays pending for the next pack (cancelling it would cancel the
    # caller's async generator), so packs are taken one at a time, under ``taking``.
    flush = options.flush if chunk > 1 else None
    taking = asyncio.Lock()
    pending: list[asyncio.Future[tuple[K, Any] | None]] = []

    async def pull(deadline: float | None) -> tuple[K, Any] | None:
        if flush is None:
            return await source()
        if not pending:
            pending.append(asyncio.ensure_future(source()))
        timeout = None if deadline is None else max(0.0, deadline - loop.time())
        ready, _ = await asyncio.wait({pending[0]}, timeout=timeout)
        if not ready:
            raise _Late
        return pending.pop().result()

    async def take() -> list[tuple[K, Any]]:
        """Up to ``chunk`` valid states; an invalid one is its error result, nothing sent."""
        taken: list[tuple[K, Any]] = []
        deadline: float | None = None
        async with taking if flush is not None else contextlib.nullcontext():
            while len(taken) < chunk:
                try:
                    # Without a flush deadline the source is awaited directly: one coroutine
                    # fewer per state (issue 32: the stream's per-state CPU, ``toolnexus batch``).
                    item = await (source() if flush is None else pull(deadline))
                except _Late:
                    break
                if item is None:
                    break
                try:
                    check_state(item[1])
                except ClassifierError as e:
                    await done.put((item[0], StateResult(error=e)))
                    continue
                taken.append(item)
                if flush is not None and deadline is None:
                    deadline = loop.time() + flush
        return taken

    async def worker() -> None:
        # Workers are started one at a time, each time every running worker has taken a state,
        # so their number is bounded by the states actually pending, never by ``concurrency``.
        nonlocal idle
        # No sentinel on cancellation: the queue may be full and nobody is reading.
        try:
            while scheduler.stopped is None:
                idle += 1
                taken = await take()
                idle -= 1
                if not taken:
                    break
                if idle == 0 and len(workers) < concurrency:
                    spawn()
                values = [value for _, value in taken]
                for group in plan(classifier, values, qs, options):
                    got = await evaluate_group(
                        classifier,
                        [values[i] for i in group.indices],
                        qs,
                        fail_closed=True,
                        planned=group,
                        scheduler=scheduler,
                    )
                    for i, result in zip(group.indices, got, strict=True):
                        if not _refused(result, scheduler):  # not sent: no result (resume)
                            # ``put`` waits only while the queue is full; otherwise it is
                            # ``put_nowait`` behind a coroutine made for every state.
                            if done.full():
                                await done.put((taken[i][0], result))
                            else:
                                done.put_nowait((taken[i][0], result))
        except Exception as e:  # from the SOURCE iterable: re-raised to the consumer
            failed.append(e)
        await done.put(None)

    spawn()
    finished = 0
    try:
        while finished < len(workers):
            # ``get`` waits only while the queue is empty: a pack's results are taken without a
            # coroutine each.
            got = done.get_nowait() if not done.empty() else await done.get()
            if got is None:
                finished += 1
                if failed:
                    raise failed[0]
                continue
            yield got
        if scheduler.stopped is not None:
            raise RunStopped(scheduler.stopped.message, scheduler.stopped.kind)
    finally:
        running: list[asyncio.Future[Any]] = [*workers, *pending]
        for w in running:
            w.cancel()
        await asyncio.gather(*running, return_exceptions=True)


class _Late(Exception):
    """No state came before a part-filled pack's flush deadline (``BatchOptions.flush``)."""


def _pull(
    states: Iterable[tuple[K, Any]] | AsyncIterable[tuple[K, Any]],
) -> Callable[[], Awaitable[tuple[K, Any] | None]]:
    """One ``next item or None`` coroutine shared by every worker of ``evaluate_stream``.
    An async iterator is guarded by a lock: two workers may not await ``__anext__`` at once."""
    if isinstance(states, AsyncIterable):
        import asyncio

        ait = aiter(states)
        lock = asyncio.Lock()

        pulled = 0

        async def next_async() -> tuple[K, Any] | None:
            nonlocal pulled
            async with lock:
                try:
                    item = await anext(ait)
                except StopAsyncIteration:
                    return None
                pulled += 1
                return _pair(item, pulled - 1)

        return next_async
    it = iter(states)

    count = 0

    async def next_sync() -> tuple[K, Any] | None:
        nonlocal count
        item = next(it, _END)
        if item is _END:
            return None
        count += 1
        return _pair(item, count - 1)

    return next_sync


_END = object()


def _pair(item: Any, index: int) -> tuple[K, Any]:
    """``item`` when it is an ``(id, state)`` pair; else the ConfigError naming what
    ``evaluate_stream`` takes (issue 31 item 23: a bare string failed inside a worker with
    ``IndexError: string index out of range``)."""
    if isinstance(item, tuple) and len(item) == 2:
        return item
    shown = type(item).__name__ + (f" of {len(item)}" if isinstance(item, tuple) else "")
    raise ConfigError(
        f"classifier: evaluate_stream takes (id, state) pairs; item {index} is a {shown}, not "
        "a pair: pass enumerate(states) or zip(ids, states)"
    )
