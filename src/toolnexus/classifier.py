"""``create_classifier``: the styles, metric events, and the per-state evaluate.

Batches, streams and bound states live in ``batch.py``, which never imports this module back: it
drives any object with ``prepare`` and ``evaluate_prepared`` (``batch.Evaluator``).

A classifier interprets; it never authorises. Its output is a reading of intent inside a
boundary, never the boundary: numeric limits, permission checks and allowlists stay in code.

Styles (seed 004): ``systemone`` (default, the HTTP wire, ``systemone.py``), ``llm`` (deprecated,
kept working, ``llm.py``), ``custom`` (the host's own function) and ``static`` (recorded
decisions: what CI runs, no network, no credential).
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import re
import time
from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Iterable,
    Mapping,
    Sequence,
)
from typing import Any, Protocol, TypeVar

from .assets import LiftedState, lift_with_questions
from .batch import BoundState, BoundStates, StateResult, evaluate_batch, evaluate_stream
from .canonical import QUESTIONS_DIGEST, canonical_json, questions_sha256, sha256_hex
from .decision import Decision, parse_decision
from .defaults import (
    DEFAULT_BATCH_CONCURRENCY,
)
from .errors import ClassifierError, ConfigError, HostBackendError, StaticMiss
from .images import ImageLimits
from .options import (
    STYLES,
    ClassifierOptions,
    CustomEvaluate,
    Metric,
    RecordedDecision,
)
from .questions import (
    ChoiceQuestion,
    Question,
    check_limits,
    degenerate_criteria,
    normalize_questions,
    questions_to_wire,
)
from .state import check_state
from .validation import Checked, validate_decision

__all__ = [
    "METRIC_EVALUATE",
    "METRIC_WARNING",
    "Classifier",
    "create_classifier",
    "static_classifier",
]

#: The ``event`` value of the per-evaluation metric.
METRIC_EVALUATE = "classifier.evaluate"
#: The ``event`` value of the degenerate-criteria warning; it carries ``question``.
METRIC_WARNING = "classifier.warning"

K = TypeVar("K")


class Style(Protocol):
    """What a style provides to the classifier."""

    name: str

    async def decide(self, state: Any, questions: dict[str, Question]) -> Decision | Checked:
        """The decision; ``Checked`` when the style already ran ``validate_decision`` on it."""
        ...

    async def aclose(self) -> None: ...


class _CustomStyle:
    name = "custom"

    def __init__(self, fn: CustomEvaluate) -> None:
        self._fn = fn

    async def decide(self, state: Any, questions: dict[str, Question]) -> Decision:
        try:
            result = self._fn(state, questions)
            if inspect.isawaitable(result):
                result = await result
        except ClassifierError:
            raise
        except Exception as e:
            raise HostBackendError(
                f"classifier: custom evaluate failed: {type(e).__name__}: {e}"
            ) from e
        if isinstance(result, Decision):
            return result
        if isinstance(result, Mapping):
            return parse_decision(result, questions)
        raise HostBackendError(
            "classifier: custom evaluate returned "
            f"{type(result).__name__}, expected a Decision or a response body"
        )

    async def aclose(self) -> None:
        return None


def _static_key(
    questions: Mapping[str, Question], state: Any, assets: Mapping[str, Any] | None = None
) -> str:
    # Keyed on the canonical question set AND the canonical state: decisions.json's three
    # entries share one question payload and differ only in state. Images add each one's
    # sha256 under its placeholder (omitted when there are none: old keys are unchanged).
    keyed: dict[str, Any] = {"questions": questions_to_wire(questions), "state": state}
    if assets:
        keyed["assets"] = dict(assets)
    return sha256_hex(canonical_json(keyed))


def _lifted(state: Any, questions: dict[str, Question]) -> LiftedState:
    return lift_with_questions(state, questions)


def _preview(state: Any, width: int = 60) -> str:
    text = state if isinstance(state, str) else canonical_json(state).decode("utf-8")
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


class _StaticStyle:
    name = "static"

    def __init__(self, decisions: Iterable[RecordedDecision | Mapping[str, Any]]) -> None:
        self._entries: dict[str, tuple[dict[str, Question], Any]] = {}
        for i, entry in enumerate(decisions):
            if isinstance(entry, Mapping):
                if "state" not in entry or "questions" not in entry:
                    raise ConfigError(
                        f"classifier: static decision {i} needs 'state' and 'questions'"
                    )
                entry = RecordedDecision(
                    state=entry["state"],
                    questions=entry["questions"],
                    response=entry.get("response"),
                    answers=entry.get("answers"),
                    assets=entry.get("assets"),
                )
            if not isinstance(entry, RecordedDecision):
                raise ConfigError(
                    f"classifier: static decision {i} must be a RecordedDecision or a mapping"
                )
            qs = normalize_questions(entry.questions)
            if entry.response is not None:
                body = entry.response
            elif entry.answers is not None:
                body = {"model": "static", "answers": dict(entry.answers)}
            else:
                raise ConfigError(f"classifier: static decision {i} needs 'response' or 'answers'")
            lifted = _lifted(entry.state, qs)
            assets = {**lifted.key_assets(), **dict(entry.assets or {})}
            self._entries[_static_key(qs, lifted.state, assets)] = (qs, body)

    def __len__(self) -> int:
        return len(self._entries)

    async def decide(self, state: Any, questions: dict[str, Question]) -> Decision:
        lifted = _lifted(state, questions)
        hit = self._entries.get(_static_key(questions, lifted.state, lifted.key_assets()))
        if hit is None:
            digest = questions_sha256(questions)
            preview = _preview(lifted.state)
            raise StaticMiss(
                "classifier: static: no recorded decision for state "
                f"{preview!r} with {QUESTIONS_DIGEST} {digest[:12]}; "
                "record one for this exact state and question set",
                questions_sha256=digest,
                state_preview=preview,
            )
        qs, body = hit
        if isinstance(body, bytes | bytearray | str):
            return Decision.from_json(body, qs)
        return parse_decision(body, qs)

    async def aclose(self) -> None:
        return None


#: A timeout past a day is a typo (or ``inf``/``nan``), not a plan: the event loop's timers
#: overflow on inf and nan compares false with everything.
_MAX_TIMEOUT = 86_400.0
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _validate_values(opts: ClassifierOptions) -> None:
    """Options of the wrong kind are ConfigErrors now, never a TypeError at the first request.
    An ``api_key_env`` that is not a variable name is refused WITHOUT quoting it: a key pasted
    there by mistake must not reach a message or a repr."""
    for name in ("api_key_env", "llm_api_key_env"):
        value = getattr(opts, name)
        if value is not None and not (isinstance(value, str) and _ENV_NAME.fullmatch(value)):
            raise ConfigError(
                f"classifier: {name} takes the NAME of an environment variable (letters, digits "
                "and _, like TYPESAFE_API_KEY); the value given is not one, and is not shown in "
                "case it is a key"
            )
    for name in ("base_url", "model", "llm_base_url", "llm_model"):
        value = getattr(opts, name)
        if value is not None and not isinstance(value, str):
            raise ConfigError(f"classifier: {name} must be a string, got {type(value).__name__}")
    for name in ("headers", "supports", "request_params"):
        value = getattr(opts, name)
        if value is not None and not isinstance(value, Mapping):
            raise ConfigError(f"classifier: {name} must be a mapping, got {type(value).__name__}")
    base = opts.retry_base_ms
    if base is not None and (isinstance(base, bool) or not isinstance(base, int) or base < 0):
        raise ConfigError(
            f"classifier: retry_base_ms must be a whole number of milliseconds >= 0, got {base!r}"
        )
    decisions = opts.decisions
    if decisions is not None and (
        isinstance(decisions, str | bytes | Mapping) or not isinstance(decisions, Iterable)
    ):
        raise ConfigError(
            "classifier: decisions must be a list of RecordedDecision (or recorded mappings), "
            f"got {type(decisions).__name__}"
        )
    if not isinstance(opts.retryable_statuses, Iterable):
        raise ConfigError(
            "classifier: retryable_statuses must be a list of HTTP statuses, got "
            f"{type(opts.retryable_statuses).__name__}"
        )


def _validate_options(opts: ClassifierOptions) -> None:
    if opts.style not in STYLES:
        raise ConfigError(
            f"classifier: unknown style {opts.style!r}: use one of {', '.join(STYLES)}"
        )
    if opts.style == "custom" and not callable(opts.evaluate):
        raise ConfigError("classifier: style 'custom' requires evaluate=<callable>")
    if opts.style == "static" and opts.decisions is None:
        raise ConfigError("classifier: style 'static' requires decisions=[RecordedDecision, ...]")
    _validate_values(opts)
    if isinstance(opts.retries, bool) or not isinstance(opts.retries, int) or opts.retries < 0:
        raise ConfigError(f"classifier: retries must be a whole number >= 0, got {opts.retries!r}")
    if (
        isinstance(opts.timeout, bool)
        or not isinstance(opts.timeout, int | float)
        or not 0 < opts.timeout < _MAX_TIMEOUT
    ):
        raise ConfigError(
            "classifier: timeout must be a number of seconds above 0 and below "
            f"{_MAX_TIMEOUT:g}, got {opts.timeout!r}"
        )
    for s in opts.retryable_statuses:
        if isinstance(s, bool) or not isinstance(s, int) or not 100 <= s <= 599:
            raise ConfigError(f"classifier: retryable_statuses holds {s!r}, not an HTTP status")
    ImageLimits.of(opts.image_limits)
    if opts.on_metric is not None and not callable(opts.on_metric):
        raise ConfigError("classifier: on_metric must be callable")
    if opts.cache is not None and not (
        callable(getattr(opts.cache, "get", None)) and callable(getattr(opts.cache, "set", None))
    ):
        raise ConfigError("classifier: cache must have get(key) and set(key, value)")


def _make_style(opts: ClassifierOptions) -> Style:
    if opts.style == "custom":
        assert opts.evaluate is not None
        return _CustomStyle(opts.evaluate)
    if opts.style == "static":
        assert opts.decisions is not None
        return _StaticStyle(opts.decisions)
    if opts.style == "llm":
        from .llm import LlmStyle  # imported lazily: httpx is not a start-up cost

        return LlmStyle(
            llm_model=opts.llm_model,
            llm_base_url=opts.llm_base_url,
            llm_api_key_env=opts.llm_api_key_env,
            client=opts.client,
            timeout=opts.timeout,
            retries=opts.retries,
            retry_base_ms=opts.retry_base_ms,
            retryable_statuses=opts.retryable_statuses,
            on_error=opts.on_error,
            transport=opts.transport,
            image_limits=opts.image_limits,
        )
    from .systemone import SystemOneStyle

    return SystemOneStyle(
        backend=opts.backend,
        base_url=opts.base_url,
        model=opts.model,
        api_key_env=opts.api_key_env,
        supports=opts.supports,
        headers=opts.headers,
        timeout=opts.timeout,
        retries=opts.retries,
        retry_base_ms=opts.retry_base_ms,
        retryable_statuses=opts.retryable_statuses,
        on_error=opts.on_error,
        transport=opts.transport,
        http_client=opts.http_client,
        request_params=opts.request_params,
        body_transform=opts.body_transform,
        cache=opts.cache,
        image_limits=opts.image_limits,
    )


class Classifier:
    """A state plus typed questions in, a Decision out. Build one with ``create_classifier``.

    Use ``async with`` (or ``await aclose()``) to release the HTTP connection pool.
    """

    def __init__(self, options: ClassifierOptions) -> None:
        _validate_options(options)
        self.options = options
        self._style: Style = _make_style(options)
        # A backend row may set the model (openrouter: "typesafe/jev-1.13"); the style knows.
        self.model: str = getattr(self._style, "model", None) or options.resolved_model
        self._warned: set[str] = set()

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
        return decision

    async def evaluate_batch(
        self,
        states: Sequence[Any],
        questions: Mapping[str, Any],
        concurrency: int = DEFAULT_BATCH_CONCURRENCY,
    ) -> list[Decision]:
        """The same questions over many states, at most ``concurrency`` in flight, decisions
        IN STATE ORDER. FAIL CLOSED: any failure raises a BatchError naming the LOWEST failing
        state's index, and no decisions are returned. No states is an error; nothing is sent."""
        return await evaluate_batch(self, states, questions, concurrency)

    def evaluate_stream(
        self,
        states: Iterable[tuple[K, Any]] | AsyncIterable[tuple[K, Any]],
        questions: Mapping[str, Any],
        concurrency: int = DEFAULT_BATCH_CONCURRENCY,
    ) -> AsyncIterator[tuple[K, StateResult]]:
        """``(id, StateResult)`` for each ``(id, state)``, IN COMPLETION ORDER, as each finishes.

        For inputs too large to hold: ``states`` is pulled lazily (a sync or async iterable),
        at most ``concurrency`` evaluations are in flight, and at most ``concurrency`` finished
        results wait for the consumer, so memory does not grow with the number of states.
        Per-state results as in ``states(...).evaluate``: the reply is validated FAIL-CLOSED, an
        invalid state is an error result with nothing sent, and one failure never fails the
        stream. A question-set error is raised once, before any request (at the first
        ``__anext__``). Closing the iterator early (``aclose``, ``break``) cancels the
        evaluations still in flight.
        """
        return evaluate_stream(self, states, questions, concurrency)

    def state(self, value: Any) -> BoundState:
        """Bind a state. A VALUE, not a session: nothing is sent until ``evaluate``."""
        return BoundState(self, value)

    def states(self, values: Iterable[Any]) -> BoundStates:
        """Bind a batch of states. See ``BoundStates.evaluate``."""
        if isinstance(values, str | bytes | Mapping) or not isinstance(values, Iterable):
            raise ConfigError(
                "classifier: states() takes an iterable of states (a list), got "
                f"{type(values).__name__}"
            )
        return BoundStates(self, list(values))


_OPTION_NAMES = frozenset(f.name for f in dataclasses.fields(ClassifierOptions))


def create_classifier(**options: Any) -> Classifier:
    """Build a classifier. Options mirror seed 004's ``create-classifier`` (see
    ``ClassifierOptions``). An unknown option, an unknown style and a style missing its
    required option are rejected HERE rather than at the first call."""
    unknown = sorted(set(options) - _OPTION_NAMES)
    if unknown:
        raise ConfigError(
            f"classifier: unknown option {unknown[0]!r}; known options: "
            + ", ".join(sorted(_OPTION_NAMES))
        )
    return Classifier(ClassifierOptions(**options))


def static_classifier(
    decisions: Iterable[RecordedDecision | Mapping[str, Any]], **options: Any
) -> Classifier:
    """A static classifier from recorded decisions in ONE call: what a hermetic test wants.
    Entries carry ``response`` or the ``answers`` shorthand; ``options`` merge in (e.g. model)."""
    return create_classifier(style="static", decisions=list(decisions), **options)
