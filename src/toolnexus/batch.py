"""Batches, streams and bound states (seed 004 ``evaluate-batch``, ``state``, ``states``).

Everything here goes through the per-state evaluate of ``pipeline.py`` (the ``RequestPipeline``
the classifier hands down; this module never imports ``classifier``), so every style batches
the same way. Every entry point takes its batch options as one ``config.BatchOptions``,
checked when it was built, and calls ``reserve`` with it before anything runs. A fixed pool of
``concurrency`` workers pulls states, so memory holds one task per worker, never one per state.

One scheduler per batch (issue 19): the run's ``scheduler.Scheduler`` (built by
:func:`scheduler_for` from the options: slow start, AIMD, Retry-After, ``rate``, fail fast, then
``options.admission``) is handed down explicitly, an argument from :func:`evaluate_group` to the
transport (never a context variable), which admits every request through it where it is sent.
When it stops the run (``RunStopped``: a failure every request would repeat, a budget), no
worker takes another state; what was sent finishes. Then ``evaluate_batch`` raises the stop,
``states(...)`` gives the finished results and, for every state not sent, an error result
holding the stop, and ``evaluate_stream`` yields what finished, then raises the stop.
``asyncio`` is imported inside the functions that run a batch: it is ~45 ms of start-up that
``import toolnexus`` and a CLI command like ``check-criteria`` never need
(``tests/test_cli_start.py`` measures the import set).
"""

from __future__ import annotations

from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Mapping,
    Sequence,
)
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

from .config import MAX_CONCURRENCY, MIN_CONCURRENCY, BatchOptions
from .decision import Decision
from .errors import BatchError, ClassifierError, ConfigError, RunStopped
from .packing import PACK_CAP
from .pipeline import RequestPipeline
from .questions import Question
from .scheduler import Scheduler
from .state import check_state

if TYPE_CHECKING:
    import asyncio

    from .packplan import Planned

__all__ = [
    "MAX_CONCURRENCY",
    "MIN_CONCURRENCY",
    "BoundState",
    "BoundStates",
    "Evaluator",
    "StateResult",
    "evaluate_batch",
    "evaluate_stream",
    "scheduler_for",
]

K = TypeVar("K")


#: What a batch drives: the classifier's request pipeline, handed down by ``Classifier`` (the
#: batch never sees the classifier itself: calls go one way, issue 30 item 3).
Evaluator: TypeAlias = RequestPipeline


@dataclass(frozen=True)
class StateResult:
    """One state's outcome in ``states(...).evaluate``: exactly one of decision / error."""

    decision: Decision | None = None
    error: ClassifierError | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def scheduler_for(options: BatchOptions) -> Scheduler:
    """The one scheduler of a batch run with ``options``: its own limiter and fail fast, then
    the options' extra admission members."""
    scheduler = Scheduler.for_run(
        concurrency=options.concurrency,
        rate_per_minute=options.rate,
        extra=options.admission,
        patience=options.patience,
    )
    scheduler.on_over_limit = options.on_over_limit
    return scheduler


def plan(
    classifier: Evaluator, states: Sequence[Any], qs: dict[str, Question], options: BatchOptions
) -> list[Planned]:
    """The requests for ``states``, as the positions each one asks: one state each at
    ``pack=1`` (or a style that does not pack), else ``packplan.plan_requests``' packs, each
    with the estimate the plan made of its body (the send reuses it)."""
    from .packplan import Planned

    if options.pack == 1:
        return [Planned([i]) for i in range(len(states))]
    from .packplan import plan_requests

    if classifier.systemone is None:  # another style asks state by state anyway
        return [Planned([i]) for i in range(len(states))]
    return plan_requests(
        states, qs, options.pack, model=classifier.model, image_limits=classifier.image_limits
    )


async def evaluate_group(
    classifier: Evaluator,
    states: Sequence[Any],
    qs: dict[str, Question],
    *,
    fail_closed: bool,
    planned: Planned | None = None,
    scheduler: Scheduler | None = None,
) -> list[StateResult]:
    """One request's states (one pack of :func:`plan`), one result each: THE call site every
    batch loop sends through. A group of one is exactly the per-state evaluate, byte for byte;
    a larger one is ``packed.evaluate_pack``'s one packed request. Neither is given a gate:
    they hand the run's ``scheduler`` down to the transport, which admits every request they
    send through it."""
    if len(states) == 1:
        try:
            d = await classifier.evaluate_prepared(
                states[0], qs, fail_closed=fail_closed, scheduler=scheduler
            )
        except ClassifierError as e:
            return [StateResult(error=e)]
        return [StateResult(decision=d)]
    from .packed import evaluate_pack

    outcome = await evaluate_pack(
        classifier, states, qs, fail_closed=fail_closed, planned=planned, scheduler=scheduler
    )
    return [
        StateResult(error=r) if isinstance(r, ClassifierError) else StateResult(decision=r)
        for r in outcome.results
    ]


def _refused(result: StateResult, scheduler: Scheduler) -> bool:
    """Whether ``result`` is the scheduler refusing to send (the run stopped), not a reply."""
    return isinstance(result.error, RunStopped) and scheduler.stopped is not None


async def run_states(
    classifier: Evaluator,
    states: Sequence[Any],
    qs: dict[str, Question],
    options: BatchOptions,
    *,
    fail_closed: bool,
) -> list[StateResult]:
    """Every state through :func:`evaluate_group`, under one scheduler, one result per state
    in state order. Per-state failures are results, never raised; once the run stops, every
    state not sent holds the stop. The one loop every list batch runs (``evaluate_batch``,
    ``states(...)``, and through them the engine adapters)."""
    import asyncio

    classifier.reserve(options)
    scheduler = scheduler_for(options)
    groups = plan(classifier, states, qs, options)
    results: list[StateResult | None] = [None] * len(states)
    pending = iter(groups)

    async def worker() -> None:
        for group in pending:
            if scheduler.stopped is not None:
                break
            got = await evaluate_group(
                classifier,
                [states[i] for i in group.indices],
                qs,
                fail_closed=fail_closed,
                planned=group,
                scheduler=scheduler,
            )
            for i, r in zip(group.indices, got, strict=True):
                results[i] = r

    workers = min(options.concurrency, len(groups))
    tasks = [asyncio.create_task(worker()) for _ in range(workers)]
    try:
        await asyncio.gather(*tasks)
    finally:
        for t in tasks:
            t.cancel()
    stop = scheduler.stopped
    assert stop is not None or all(r is not None for r in results)  # only a stop skips states
    return [r if r is not None else StateResult(error=stop) for r in results]


async def evaluate_batch(
    classifier: Evaluator,
    states: Sequence[Any],
    questions: Mapping[str, Any],
    options: BatchOptions,
) -> list[Decision]:
    """See ``Classifier.evaluate_batch``: fail closed on the LOWEST failing index."""
    if isinstance(states, str | bytes | Mapping) or not isinstance(states, Iterable):
        raise ConfigError(
            f"classifier: evaluate_batch takes a list of states, got {type(states).__name__}"
        )
    states = list(states)
    if not states:
        raise ConfigError("classifier: evaluate_batch: no states to evaluate")
    qs = classifier.prepare(questions)
    for i, s in enumerate(states):
        try:
            check_state(s)
        except ClassifierError as e:
            raise BatchError(f"classifier: state {i}: {e.detail}", i, e) from None
    results = await run_states(classifier, states, qs, options, fail_closed=False)
    decisions: list[Decision] = []
    if any(isinstance(r.error, RunStopped) for r in results):
        # The run stopped: the stop says why (and what to do), which no one state's error does.
        stop = next(r.error for r in results if isinstance(r.error, RunStopped))
        raise RunStopped(stop.message, stop.kind)
    for i, r in enumerate(results):
        if r.decision is None:
            error = r.error
            assert error is not None  # a StateResult holds exactly one of decision / error
            raise BatchError(f"classifier: state {i}: {error.detail}", i, error)
        decisions.append(r.decision)
    return decisions


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


@dataclass(frozen=True)
class BoundState:
    """``classifier.state(v)``: one state, evaluated with NAMED questions, validated FAIL-CLOSED."""

    classifier: Evaluator
    value: Any

    async def evaluate(self, **questions: Any) -> Decision:
        """One request with the named questions; an invalid reply is an error (and is reported
        on the metric event)."""
        qs = self.classifier.prepare(questions)
        check_state(self.value)
        return await self.classifier.evaluate_prepared(self.value, qs, fail_closed=True)


@dataclass(frozen=True)
class BoundStates:
    """``classifier.states(vs, concurrency=...)``: per-state results in order; one failure never
    fails the batch. The batch options are bound here, so ``evaluate`` takes questions only."""

    classifier: Evaluator
    values: list[Any] = field(default_factory=list)
    options: BatchOptions = field(default_factory=BatchOptions)

    async def evaluate(self, /, **questions: Any) -> list[StateResult]:
        """One ``StateResult`` per state, in state order, over the NAMED questions (any key is a
        question key, ``concurrency`` included). A question-set error is raised once before any
        request; no states gives ``[]``."""
        old = questions.get("concurrency")
        if isinstance(old, int) and not isinstance(old, bool):
            # The spelling before issue 16: say where the option went instead of "not a question".
            raise ConfigError(
                "classifier: states(...).evaluate takes questions only; bind the concurrency "
                f"with states(values, concurrency={old}) instead"
            )
        if not self.values:
            return []
        qs = self.classifier.prepare(questions)
        results: list[StateResult] = []
        bad: dict[int, ClassifierError] = {}
        for i, v in enumerate(self.values):
            try:
                check_state(v)
            except ClassifierError as e:
                bad[i] = e
        good = [i for i in range(len(self.values)) if i not in bad]
        ran = await run_states(
            self.classifier, [self.values[i] for i in good], qs, self.options, fail_closed=True
        )
        by_index = dict(zip(good, ran, strict=True))
        for i in range(len(self.values)):
            results.append(by_index[i] if i in by_index else StateResult(error=bad[i]))
        return results
