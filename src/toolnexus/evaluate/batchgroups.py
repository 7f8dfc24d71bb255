"""A batch's requests (seed 004 ``evaluate-batch``): the run's scheduler, the plan of its
requests, the one call site every request is sent through, and the worker loop of a list batch.

Everything here goes through the per-state evaluate of ``pipeline.py`` (the ``RequestPipeline``
the classifier hands down; this module never imports ``classifier``), so every style batches
the same way. A fixed pool of ``concurrency`` workers pulls states, so memory holds one task per
worker, never one per state.

One scheduler per batch (issue 19): the run's ``scheduler.Scheduler`` (built by
:func:`scheduler_for` from the options: slow start, AIMD, Retry-After, ``rate``, fail fast, then
``options.admission``) is handed down explicitly, an argument from :func:`evaluate_group` to the
transport (never a context variable), which admits every request through it where it is sent.
When it stops the run (``RunStopped``: a failure every request would repeat, a budget), no
worker takes another state; what was sent finishes.
"""

from __future__ import annotations

import collections
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

from ..config import BatchOptions
from ..core import ClassifierError, Decision, Question
from ..core import observe as probe
from ..scheduler import Scheduler
from .pipeline import RequestPipeline

if TYPE_CHECKING:
    from .packplan import Planned

__all__ = [
    "Evaluator",
    "StateOutcome",
    "StateResult",
    "evaluate_group",
    "plan",
    "run_outcomes",
    "run_states",
    "scheduler_for",
]


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
        surface=options.surface,
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

    if options.pack == 1 or classifier.systemone is None:  # another style asks one by one
        groups = [Planned([i]) for i in range(len(states))]
    else:
        from .packplan import plan_requests

        groups = plan_requests(
            states, qs, options.pack, model=classifier.model, image_limits=classifier.image_limits
        )
    if probe.observer is not None:
        probe.observer("plan.groups", groups)
    return groups


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
    got = await _group_outcomes(
        classifier, states, qs, fail_closed=fail_closed, planned=planned, scheduler=scheduler
    )
    if probe.observer is not None:
        for i in range(len(got)):
            probe.observer("batch.state_result", i)
    return [
        StateResult(error=r) if isinstance(r, ClassifierError) else StateResult(decision=r)
        for r in got
    ]


#: One state's outcome as the packed path makes it: its decision, or its error.
StateOutcome: TypeAlias = "Decision | ClassifierError"


async def _group_outcomes(
    classifier: Evaluator,
    states: Sequence[Any],
    qs: dict[str, Question],
    *,
    fail_closed: bool,
    planned: Planned | None,
    scheduler: Scheduler | None,
) -> list[StateOutcome]:
    """:func:`evaluate_group`'s results as bare outcomes: what ``evaluate_batch`` keeps, so a
    packed run holds no ``StateResult`` per state until its end (issue 32 pack CPU: one more
    object per state for the collector to walk, and a list built per pack)."""
    if len(states) == 1:
        try:
            d = await classifier.evaluate_prepared(
                states[0], qs, fail_closed=fail_closed, scheduler=scheduler
            )
        except ClassifierError as e:
            return [e]
        return [d]
    from .packed import evaluate_pack

    outcome = await evaluate_pack(
        classifier, states, qs, fail_closed=fail_closed, planned=planned, scheduler=scheduler
    )
    return outcome.results


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
    got = await run_outcomes(classifier, states, qs, options, fail_closed=fail_closed)
    if probe.observer is not None:
        for i in range(len(got)):
            probe.observer("batch.state_result", i)
    return [
        StateResult(error=r) if isinstance(r, ClassifierError) else StateResult(decision=r)
        for r in got
    ]


async def run_outcomes(
    classifier: Evaluator,
    states: Sequence[Any],
    qs: dict[str, Question],
    options: BatchOptions,
    *,
    fail_closed: bool,
) -> list[StateOutcome]:
    """:func:`run_states` with each result as its bare decision or error (``evaluate_batch``
    needs no ``StateResult`` per state); a state not sent holds the run's stop."""
    import asyncio

    classifier.reserve(options)
    scheduler = scheduler_for(options)
    groups = plan(classifier, states, qs, options)
    results: list[StateOutcome | None] = [None] * len(states)
    # Popped as they are sent: a planned pack is let go once sent, not kept until the run ends.
    pending = collections.deque(groups)
    del groups
    decided = 0

    async def worker() -> None:
        nonlocal decided
        while pending:
            group = pending.popleft()
            if scheduler.stopped is not None:
                break
            got = await _group_outcomes(
                classifier,
                [states[i] for i in group.indices],
                qs,
                fail_closed=fail_closed,
                planned=group,
                scheduler=scheduler,
            )
            for i, r in zip(group.indices, got, strict=True):
                results[i] = r
            decided += len(got)

    workers = min(options.concurrency, len(pending))
    tasks = [asyncio.create_task(worker()) for _ in range(workers)]
    try:
        await asyncio.gather(*tasks)
    finally:
        for t in tasks:
            t.cancel()
    stop = scheduler.stopped
    if stop is None:
        # Only a stop skips states. Counted, not ``None not in results``: that compares None
        # with every decision, a Python-level ``__eq__`` call per state (issue 32 pack CPU).
        assert decided == len(results)
        return results  # type: ignore[return-value]  # no None left, checked above
    return [r if r is not None else stop for r in results]
