"""Batches, streams and bound states (seed 004 ``evaluate-batch``, ``state``, ``states``).

The public entry points: :func:`evaluate_batch` (fail closed on the lowest failing index),
``BoundState`` / ``BoundStates`` (``classifier.state(v)``, ``classifier.states(vs)``) and, from
``batchstream``, :func:`evaluate_stream`. Every entry point takes its batch options as one
``config.BatchOptions``, checked when it was built, and calls ``reserve`` with it before anything
runs. The requests themselves (the run's one scheduler, the plan, the worker loop) are
``batchgroups``. When the scheduler stops the run (``RunStopped``), ``evaluate_batch`` raises the
stop, ``states(...)`` gives the finished results and, for every state not sent, an error result
holding the stop, and ``evaluate_stream`` yields what finished, then raises the stop.
``asyncio`` is imported inside the functions that run a batch: it is ~45 ms of start-up that
``import toolnexus`` and a CLI command like ``check-criteria`` never need
(``tests/cli/test_cli_start.py`` measures the import set).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..config import BatchOptions
from ..core import BatchError, ClassifierError, ConfigError, Decision, RunStopped, check_state
from .batchgroups import (
    Evaluator,
    StateResult,
    run_outcomes,
    run_states,
)

__all__ = [
    "BoundState",
    "BoundStates",
    "evaluate_batch",
]


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
    # Bare outcomes, not a StateResult per state (issue 32 pack CPU): the decisions are what
    # this returns, and every object kept per state until the end is one more for the
    # collector to walk.
    results = await run_outcomes(classifier, states, qs, options, fail_closed=False)
    failed = [i for i, r in enumerate(results) if isinstance(r, ClassifierError)]
    if failed:  # one pass over the results; the errors alone are looked at again
        errors = [results[i] for i in failed]
        stop = next((e for e in errors if isinstance(e, RunStopped)), None)
        if stop is not None:
            # The run stopped: the stop says why (and what to do), which no one state's error
            # does.
            raise RunStopped(stop.message, stop.kind)
        error = errors[0]
        assert isinstance(error, ClassifierError)
        raise BatchError(f"classifier: state {failed[0]}: {error.detail}", failed[0], error)
    return results  # type: ignore[return-value]  # every error raised above


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
