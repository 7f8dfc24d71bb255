"""The public classifier (``factory.create_classifier`` builds one): the per-state evaluate, the
batches, streams and bound states of seed 004, over one :class:`~.pipeline.RequestPipeline`.

Calls go one way (issue 30 item 3): this module sits above ``batch``, ``packed`` and
``calibration/`` and hands them its pipeline (style, metric emitter, model, limits); they never
import it back nor read its attributes. The styles (seed 004: ``systemone``, ``llm``,
``custom``, ``static``) live in ``styles.py``; the one option list, checked when built, is
``options.ClassifierOptions``.

A classifier interprets; it never authorises. Its output is a reading of intent inside a
boundary, never the boundary: numeric limits, permission checks and allowlists stay in code.
"""

from __future__ import annotations

from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Iterable,
    Mapping,
    Sequence,
)
from typing import Any, TypeVar

from ..config import BatchOptions
from ..config.options import ClassifierOptions
from ..core import DEFAULT_BATCH_CONCURRENCY, ConfigError, Decision, Question, check_state
from ..evaluate import (
    BoundState,
    BoundStates,
    RequestPipeline,
    StateResult,
    evaluate_batch,
    evaluate_stream,
)

__all__ = [
    "Classifier",
]

K = TypeVar("K")


class Classifier:
    """A state plus typed questions in, a Decision out. Build one with ``create_classifier``.

    Use ``async with`` (or ``await aclose()``) to release the HTTP connection pool.
    """

    def __init__(self, options: ClassifierOptions) -> None:
        if not isinstance(options, ClassifierOptions):
            raise ConfigError(
                "classifier: Classifier takes ClassifierOptions (or use create_classifier(...)), "
                f"got {type(options).__name__}"
            )
        self.options = options  # checked when it was built
        # calibration=FILE: read and checked here, so a bad file fails at build, not per call
        self._calibration: Any = None
        self._digest: tuple[Any, str] | None = None
        if options.calibration is not None:
            from ..calibration import load_calibration

            self._calibration = load_calibration(options.calibration)
        recalibrate = self._recalibrate if self._calibration is not None else None
        #: What ``batch`` and ``packed`` drive: style, metric emitter, model, limits.
        self.pipeline = RequestPipeline(options, recalibrate=recalibrate)
        self.model: str = self.pipeline.model

    @property
    def style(self) -> str:
        return self.options.style

    def __repr__(self) -> str:
        return f"Classifier(style={self.style!r}, model={self.model!r})"

    async def __aenter__(self) -> Classifier:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the style's connections. Safe to call twice."""
        await self.pipeline.style.aclose()

    def reserve(self, options: BatchOptions) -> None:
        """Make room for ``options.concurrency`` evaluations at once (``RequestPipeline``)."""
        self.pipeline.reserve(options)

    def prepare(self, questions: Mapping[str, Any]) -> dict[str, Question]:
        """Normalise a question set and enforce the limits; no request is sent. Degenerate
        criteria are reported once per key per classifier through ``on_metric``."""
        return self.pipeline.prepare(questions)

    async def evaluate(self, state: Any, questions: Mapping[str, Any]) -> Decision:
        """One decision for ``state`` over ``questions``. No questions is an error; the limits
        are checked before anything is sent. A reply that fails ``validate_decision`` is still
        returned here (``state(v).evaluate`` fails closed on it)."""
        qs = self.prepare(questions)
        check_state(state)
        return await self.evaluate_prepared(state, qs)

    async def evaluate_prepared(
        self, state: Any, qs: dict[str, Question], *, fail_closed: bool = False
    ) -> Decision:
        """One decision for an already-checked state and a prepared question set."""
        return await self.pipeline.evaluate_prepared(state, qs, fail_closed=fail_closed)

    def _recalibrate(self, decision: Decision, qs: dict[str, Question]) -> Decision:
        """``calibration=FILE``: the recalibrated answers beside the wire's."""
        from ..calibration import recalibrate_decision
        from ..core import questions_sha256

        if self._digest is None or self._digest[0] is not qs:  # one digest per question set
            self._digest = (qs, questions_sha256(qs))
        return recalibrate_decision(self._calibration, decision, self._digest[1], self.style)

    async def evaluate_batch(
        self,
        states: Sequence[Any],
        questions: Mapping[str, Any],
        concurrency: int = DEFAULT_BATCH_CONCURRENCY,
        *,
        options: BatchOptions | None = None,
    ) -> list[Decision]:
        """The same questions over many states, at most ``concurrency`` in flight, decisions
        IN STATE ORDER. FAIL CLOSED: any failure raises a BatchError naming the LOWEST failing
        state's index, and no decisions are returned; a run stopped by its scheduler (a failure
        every request would repeat, a budget) raises the ``RunStopped``. No states is an error;
        nothing is sent. ``options``: every batch option at once (a ``BatchOptions``: rate,
        pack, admission), instead of ``concurrency``."""
        return await evaluate_batch(
            self.pipeline, states, questions, batch_options(concurrency, options)
        )

    def evaluate_stream(
        self,
        states: Iterable[tuple[K, Any]] | AsyncIterable[tuple[K, Any]],
        questions: Mapping[str, Any],
        concurrency: int = DEFAULT_BATCH_CONCURRENCY,
        *,
        options: BatchOptions | None = None,
    ) -> AsyncIterator[tuple[K, StateResult]]:
        """``(id, StateResult)`` for each ``(id, state)``, IN COMPLETION ORDER, as each finishes.

        For inputs too large to hold: ``states`` is pulled lazily (a sync or async iterable),
        at most ``concurrency`` evaluations are in flight, and at most ``concurrency`` finished
        results wait for the consumer, so memory does not grow with the number of states.
        Per-state results as in ``states(...).evaluate``: the reply is validated FAIL-CLOSED, an
        invalid state is an error result with nothing sent, and one failure never fails the
        stream. A question-set error is raised once, before any request (at the first
        ``__anext__``). Closing the iterator early (``aclose``, ``break``) cancels the
        evaluations still in flight. A run stopped by its scheduler yields what finished, then
        raises the ``RunStopped`` (the states not sent have no result). ``options`` as in
        ``evaluate_batch``.
        """
        return evaluate_stream(
            self.pipeline, states, questions, batch_options(concurrency, options)
        )

    def state(self, value: Any) -> BoundState:
        """Bind a state. A VALUE, not a session: nothing is sent until ``evaluate``."""
        return BoundState(self.pipeline, value)

    def states(
        self,
        values: Iterable[Any],
        *,
        concurrency: int = DEFAULT_BATCH_CONCURRENCY,
        options: BatchOptions | None = None,
    ) -> BoundStates:
        """Bind a batch of states and the batch options (``concurrency``: at most this many in
        flight; or ``options``, a ``BatchOptions``). ``.evaluate(**questions)`` then takes
        questions only, so any key is a question key. See ``BoundStates.evaluate``."""
        if isinstance(values, str | bytes | Mapping) or not isinstance(values, Iterable):
            raise ConfigError(
                "classifier: states() takes an iterable of states (a list), got "
                f"{type(values).__name__}"
            )
        return BoundStates(self.pipeline, list(values), batch_options(concurrency, options))


def batch_options(concurrency: int, options: BatchOptions | None) -> BatchOptions:
    """The batch options of a call that takes ``concurrency=`` or ``options=``."""
    if options is None:
        return BatchOptions(concurrency)
    if not isinstance(options, BatchOptions):
        raise ConfigError(f"classifier: options takes a BatchOptions, got {type(options).__name__}")
    if concurrency != DEFAULT_BATCH_CONCURRENCY and concurrency != options.concurrency:
        raise ConfigError(
            "classifier: give concurrency= or options=BatchOptions(concurrency=...), not both"
        )
    return options
