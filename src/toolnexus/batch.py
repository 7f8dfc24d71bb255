"""Batches, streams and bound states (seed 004 ``evaluate-batch``, ``state``, ``states``).

Everything here goes through the per-state evaluate of ``classifier.py``, so every style
batches the same way. A fixed pool of ``concurrency`` workers pulls states, so memory holds one
task per worker, never one per state. ``asyncio`` is imported inside the functions that run a
batch: it is ~45 ms of start-up that ``import toolnexus`` and a CLI command like
``check-criteria`` never need (``tests/test_cli_start.py`` measures the import set).
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
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from .decision import Decision
from .defaults import DEFAULT_BATCH_CONCURRENCY
from .errors import BatchError, ClassifierError, ConfigError
from .questions import Question
from .state import check_state

if TYPE_CHECKING:
    import asyncio

__all__ = [
    "BoundState",
    "BoundStates",
    "Evaluator",
    "StateResult",
    "evaluate_batch",
    "evaluate_stream",
]

K = TypeVar("K")


class Evaluator(Protocol):
    """What a batch drives: a ``Classifier``, seen through the two methods it needs. A protocol
    rather than an import, so ``classifier.py`` imports this module and not the other way round."""

    def prepare(self, questions: Mapping[str, Any]) -> dict[str, Question]:
        """The normalised question set, limits checked; nothing sent."""
        ...

    async def evaluate_prepared(
        self, state: Any, qs: dict[str, Question], *, fail_closed: bool = False
    ) -> Decision:
        """One decision for an already-checked state and a prepared question set."""
        ...


@dataclass(frozen=True)
class StateResult:
    """One state's outcome in ``states(...).evaluate``: exactly one of decision / error."""

    decision: Decision | None = None
    error: ClassifierError | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


#: The accepted ``concurrency`` range. Above it a value is a typo, not a plan: the connection
#: pool holds 100 sockets, and a worker per unit of 99999999999 once ran a machine out of memory.
MIN_CONCURRENCY = 1
MAX_CONCURRENCY = 1000


def _check_concurrency(concurrency: int) -> None:
    if (
        isinstance(concurrency, bool)
        or not isinstance(concurrency, int)
        or not MIN_CONCURRENCY <= concurrency <= MAX_CONCURRENCY
    ):
        raise ConfigError(
            f"classifier: concurrency takes {MIN_CONCURRENCY}..{MAX_CONCURRENCY}, "
            f"got {concurrency!r}"
        )


async def run_states(
    classifier: Evaluator,
    states: Sequence[Any],
    qs: dict[str, Question],
    concurrency: int,
    *,
    fail_closed: bool,
) -> list[StateResult]:
    """Every state through the per-state evaluate, at most ``concurrency`` in flight, one
    result per state in state order. Per-state failures are results, never raised."""
    import asyncio

    results: list[StateResult] = [StateResult()] * len(states)
    next_index = iter(range(len(states)))

    async def worker() -> None:
        for i in next_index:
            try:
                d = await classifier.evaluate_prepared(states[i], qs, fail_closed=fail_closed)
                results[i] = StateResult(decision=d)
            except ClassifierError as e:
                results[i] = StateResult(error=e)

    await asyncio.gather(*(worker() for _ in range(min(concurrency, len(states)))))
    return results


async def evaluate_batch(
    classifier: Evaluator,
    states: Sequence[Any],
    questions: Mapping[str, Any],
    concurrency: int = DEFAULT_BATCH_CONCURRENCY,
) -> list[Decision]:
    """See ``Classifier.evaluate_batch``: fail closed on the LOWEST failing index."""
    if isinstance(states, str | bytes | Mapping) or not isinstance(states, Iterable):
        raise ConfigError(
            f"classifier: evaluate_batch takes a list of states, got {type(states).__name__}"
        )
    states = list(states)
    if not states:
        raise ConfigError("classifier: evaluate_batch: no states to evaluate")
    _check_concurrency(concurrency)
    qs = classifier.prepare(questions)
    for i, s in enumerate(states):
        try:
            check_state(s)
        except ClassifierError as e:
            raise BatchError(f"classifier: state {i}: {e.detail}", i, e) from None
    results = await run_states(classifier, states, qs, concurrency, fail_closed=False)
    decisions: list[Decision] = []
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
    concurrency: int = DEFAULT_BATCH_CONCURRENCY,
) -> AsyncIterator[tuple[K, StateResult]]:
    """See ``Classifier.evaluate_stream``."""
    import asyncio

    _check_concurrency(concurrency)
    qs = classifier.prepare(questions)
    source = _pull(states)
    done: asyncio.Queue[tuple[K, StateResult] | None] = asyncio.Queue(maxsize=concurrency)
    failed: list[Exception] = []
    workers: list[asyncio.Task[None]] = []
    idle = 0

    def spawn() -> None:
        workers.append(asyncio.create_task(worker()))

    async def worker() -> None:
        # Workers are started one at a time, each time every running worker has taken a state,
        # so their number is bounded by the states actually pending, never by ``concurrency``.
        nonlocal idle
        # No sentinel on cancellation: the queue may be full and nobody is reading.
        try:
            while True:
                idle += 1
                item = await source()
                idle -= 1
                if item is None:
                    break
                if idle == 0 and len(workers) < concurrency:
                    spawn()
                key, value = item
                try:
                    check_state(value)
                    d = await classifier.evaluate_prepared(value, qs, fail_closed=True)
                    result = StateResult(decision=d)
                except ClassifierError as e:
                    result = StateResult(error=e)
                await done.put((key, result))
        except Exception as e:  # from the SOURCE iterable: re-raised to the consumer
            failed.append(e)
        await done.put(None)

    spawn()
    finished = 0
    try:
        while finished < len(workers):
            got = await done.get()
            if got is None:
                finished += 1
                if failed:
                    raise failed[0]
                continue
            yield got
    finally:
        for w in workers:
            w.cancel()
        await asyncio.gather(*workers, return_exceptions=True)


def _pull(
    states: Iterable[tuple[K, Any]] | AsyncIterable[tuple[K, Any]],
) -> Callable[[], Awaitable[tuple[K, Any] | None]]:
    """One ``next item or None`` coroutine shared by every worker of ``evaluate_stream``.
    An async iterator is guarded by a lock: two workers may not await ``__anext__`` at once."""
    if isinstance(states, AsyncIterable):
        import asyncio

        ait = aiter(states)
        lock = asyncio.Lock()

        async def next_async() -> tuple[K, Any] | None:
            async with lock:
                try:
                    return await anext(ait)
                except StopAsyncIteration:
                    return None

        return next_async
    it = iter(states)

    async def next_sync() -> tuple[K, Any] | None:
        return next(it, None)

    return next_sync


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
    """``classifier.states(vs)``: per-state results in order; one failure never fails the batch."""

    classifier: Evaluator
    values: list[Any] = field(default_factory=list)

    async def evaluate(
        self, concurrency: int = DEFAULT_BATCH_CONCURRENCY, **questions: Any
    ) -> list[StateResult]:
        """One ``StateResult`` per state, in state order. A question-set error is raised once
        before any request; no states gives ``[]``."""
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
            self.classifier, [self.values[i] for i in good], qs, concurrency, fail_closed=True
        )
        by_index = dict(zip(good, ran, strict=True))
        for i in range(len(self.values)):
            results.append(by_index[i] if i in by_index else StateResult(error=bad[i]))
        return results
