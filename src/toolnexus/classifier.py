"""The classifier, its metric events, and the per-state evaluate (``factory.create_classifier``
builds one).

Batches, streams and bound states live in ``batch.py``, which never imports this module back: it
drives any object with ``prepare``, ``reserve`` and ``evaluate_prepared`` (``batch.Evaluator``).
The styles (seed 004: ``systemone``, ``llm``, ``custom``, ``static``) live in ``styles.py``; the
one option list, checked when built, is ``options.ClassifierOptions``.

A classifier interprets; it never authorises. Its output is a reading of intent inside a
boundary, never the boundary: numeric limits, permission checks and allowlists stay in code.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Iterable,
    Mapping,
    Sequence,
)
from typing import Any, TypeVar

from .batch import BoundState, BoundStates, StateResult, evaluate_batch, evaluate_stream
from .config import BatchOptions
from .consistency import consistency_flags
from .decision import Decision
from .defaults import DEFAULT_BATCH_CONCURRENCY
from .errors import ClassifierError, ConfigError
from .options import ClassifierOptions, Metric
from .questions import (
    ChoiceQuestion,
    Question,
    check_limits,
    degenerate_criteria,
    normalize_questions,
)
from .state import check_state
from .styles import CustomStyle, Style, make_style
from .transport.observe import observing
from .validation import FLAGS, Checked, validate_decision

__all__ = [
    "METRIC_EVALUATE",
    "METRIC_WARNING",
    "Classifier",
]

#: The ``event`` value of the per-evaluation metric.
METRIC_EVALUATE = "classifier.evaluate"
#: The ``event`` value of the degenerate-criteria warning; it carries ``question``.
METRIC_WARNING = "classifier.warning"

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
        self._style: Style = make_style(options)
        # A backend row may set the model (openrouter: "typesafe/jev-1.13"); the style knows.
        self.model: str = getattr(self._style, "model", None) or options.resolved_model
        self._warned: set[str] = set()
        self._telemetry = _telemetry_for(options)
        self._endpoint = _endpoint_of(self._style)
        # calibration=FILE: read and checked here, so a bad file fails at build, not per call
        self._calibration: Any = None
        self._digest: tuple[Any, str] | None = None
        if options.calibration is not None:
            from .calibration.maps import load_calibration

            self._calibration = load_calibration(options.calibration)

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
        await self._style.aclose()

    def _emit(self, event: Metric) -> None:
        if self.options.on_metric is not None:
            # A metrics sink observes; it never decides. One that raises is ignored, so the
            # outcome of an evaluate is the same with or without it (issue 9).
            with contextlib.suppress(Exception):
                self.options.on_metric(event)

    def reserve(self, options: BatchOptions) -> None:
        """Make room for ``options.concurrency`` evaluations at once: a synchronous custom
        evaluate gets that many threads. Every batch entry point calls it before it starts."""
        if isinstance(self._style, CustomStyle):
            self._style.reserve(options.concurrency)

    def prepare(self, questions: Mapping[str, Any]) -> dict[str, Question]:
        """Normalise a question set and enforce the limits; no request is sent. Degenerate
        criteria are reported once per key per classifier through ``on_metric``."""
        qs = normalize_questions(questions, wire=False)
        check_limits(qs)
        for key in sorted(qs):
            q = qs[key]
            if key in self._warned or not isinstance(q, ChoiceQuestion):
                continue
            reason = degenerate_criteria(q.criteria)
            if reason is not None:
                self._warned.add(key)
                self._emit(
                    {
                        "event": METRIC_WARNING,
                        "style": self.style,
                        "question": key,
                        "warning": (
                            f'question "{key}": degenerate choice criteria: {reason}; the '
                            "model ranks such options at chance. Describe what picking each "
                            "option would mean."
                        ),
                    }
                )
        return qs

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
        if self._telemetry is None:
            return await self._evaluate_prepared(state, qs, fail_closed)
        with self._telemetry.evaluate(
            model=self.model, endpoint=self._endpoint, questions=len(qs)
        ) as span:
            with observing(span.observer()):
                decision = await self._evaluate_prepared(state, qs, fail_closed)
            span.decided(
                response_model=decision.model,
                input_tokens=decision.usage.input_tokens,
                output_tokens=decision.usage.output_tokens,
                cached=decision.cached,
                flags=_flags(decision),
            )
            return decision

    async def _evaluate_prepared(
        self, state: Any, qs: dict[str, Question], fail_closed: bool
    ) -> Decision:
        start = time.perf_counter()
        event: Metric = {"event": METRIC_EVALUATE, "style": self.style, "model": self.model}
        try:
            made = await self._style.decide(state, qs)
            if isinstance(made, Checked):
                decision, invalid = made.decision, made.invalid
            else:
                decision = made
                invalid = validate_decision(qs, decision) if fail_closed else None
            if fail_closed and invalid is not None:
                event["model"] = decision.model
                raise invalid
        except ClassifierError as e:
            event.update(
                status="error",
                ms=round((time.perf_counter() - start) * 1000, 3),
                input_tokens=0,
                output_tokens=0,
                error=str(e),
            )
            self._emit(event)
            raise
        event.update(
            model=decision.model,
            status="ok",
            ms=round((time.perf_counter() - start) * 1000, 3),
            input_tokens=decision.usage.input_tokens,
            output_tokens=decision.usage.output_tokens,
            cached=decision.cached,
            calibrated=decision.calibrated,
        )
        if decision.usage.cost is not None:
            event["cost"] = decision.usage.cost
        self._emit(event)
        if self._calibration is not None:
            decision = self._recalibrate(decision, qs)
        return decision

    def _recalibrate(self, decision: Decision, qs: dict[str, Question]) -> Decision:
        """``calibration=FILE``: the recalibrated answers beside the wire's."""
        from .calibration.apply import recalibrate_decision
        from .canonical import questions_sha256

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
        return await evaluate_batch(self, states, questions, batch_options(concurrency, options))

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
        return evaluate_stream(self, states, questions, batch_options(concurrency, options))

    def state(self, value: Any) -> BoundState:
        """Bind a state. A VALUE, not a session: nothing is sent until ``evaluate``."""
        return BoundState(self, value)

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
        return BoundStates(self, list(values), batch_options(concurrency, options))


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


def _telemetry_for(options: ClassifierOptions) -> Any:
    """The classifier's ``Telemetry``, or None. ``telemetry.py`` imports OpenTelemetry only
    when it builds one, so an installed but unused OpenTelemetry is never imported."""
    value = options.telemetry
    if value is not None and not isinstance(value, bool):
        return value
    from .telemetry import Telemetry, wanted

    if not wanted(value):
        return None
    if value is None:
        try:
            return Telemetry(provider_name=options.backend)
        except ConfigError:
            return None  # asked by the environment alone: no opentelemetry-api, no telemetry
    return Telemetry(provider_name=options.backend)


def _flags(decision: Decision) -> list[str]:
    """The flags a decision carries by itself (``validation.FLAGS`` names; ``uncertain``
    depends on the caller's thresholds and ``invalid`` on validation, so neither is here)."""
    found = set()
    if any(getattr(a, "near_uniform", False) for a in decision.answers.values()):
        found.add("near-uniform")
    if not decision.calibrated:
        found.add("uncalibrated")
    for answer in decision.answers.values():
        found.update(consistency_flags(answer, calibrated=decision.calibrated))
    if not decision.usage.reported:
        found.add("usage-missing")
    return [f for f in FLAGS if f in found]


def _endpoint_of(style: Style) -> str:
    """The request URL as configured (credentials hidden, ``${NAME}`` unexpanded): what
    ``server.address`` and ``url.full`` are taken from; empty for styles that send nothing."""
    endpoint = getattr(style, "endpoint", None)
    path = getattr(style, "path", "systemone")
    return f"{endpoint}/{path}" if isinstance(endpoint, str) else ""
