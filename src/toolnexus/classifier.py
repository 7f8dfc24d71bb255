"""``create_classifier``: the styles, metric events, and the per-state evaluate.

Batches, streams and bound states live in ``batch.py`` and load on first use.

A classifier interprets; it never authorises. Its output is a reading of intent inside a
boundary, never the boundary: numeric limits, permission checks and allowlists stay in code.

Styles (seed 004): ``systemone`` (default, the HTTP wire, ``systemone.py``), ``llm`` (deprecated,
kept working, ``llm.py``), ``custom`` (the host's own function) and ``static`` (recorded
decisions: what CI runs, no network, no credential).
"""

from __future__ import annotations

import dataclasses
import inspect
import time
from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Callable,
    Iterable,
    Mapping,
    Sequence,
)
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from .canonical import canonical_json, canonical_request, sha256_hex
from .decision import Decision, parse_decision
from .defaults import (
    DEFAULT_BATCH_CONCURRENCY,
    DEFAULT_MODEL,
    DEFAULT_RETRIES,
    DEFAULT_RETRY_BASE_MS,
    DEFAULT_TIMEOUT,
)
from .errors import ClassifierError, ConfigError, HostBackendError, InvalidState, StaticMiss
from .images import Image, ImageLimits, LiftedState, StateWithImages, lift_images
from .options import OnError
from .questions import (
    ChoiceQuestion,
    Question,
    check_limits,
    degenerate_criteria,
    normalize_questions,
    questions_to_wire,
)
from .validation import validate_decision

if TYPE_CHECKING:
    # batch.py imports asyncio, which costs ~45 ms of CLI start-up; it loads when a batch runs.
    from .batch import BoundState, BoundStates, StateResult

__all__ = [
    "METRIC_EVALUATE",
    "METRIC_WARNING",
    "STYLES",
    "Classifier",
    "ClassifierOptions",
    "RecordedDecision",
    "create_classifier",
    "static_classifier",
]

#: The four styles; "systemone" is the default, "static" is what CI runs, "llm" is deprecated.
STYLES = ("systemone", "llm", "custom", "static")
#: The ``event`` value of the per-evaluation metric.
METRIC_EVALUATE = "classifier.evaluate"
#: The ``event`` value of the degenerate-criteria warning; it carries ``question``.
METRIC_WARNING = "classifier.warning"

K = TypeVar("K")
Metric = dict[str, Any]
OnMetric = Callable[[Metric], object]
CustomEvaluate = Callable[[Any, dict[str, Question]], Any]


@dataclass(frozen=True)
class RecordedDecision:
    """One entry of the static corpus: a state, its question set, and the response body the
    backend gave (``response``: a parsed object, or bytes/str of JSON). ``answers`` is the
    shorthand for a body that is only its answers.

    Images: ``state`` may hold ``Image`` objects or image parts (lifted as the systemone style
    lifts them), or be the state AS SENT with its placeholders plus ``assets``, the map
    ``{placeholder: {"type": "image", "sha256": <hex>}}`` that a recording file stores instead
    of image bytes. Either way the entry matches on the images' sha256, never on their bytes."""

    state: Any
    questions: Mapping[str, Any]
    response: Any = None
    answers: Mapping[str, Any] | None = None
    assets: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class ClassifierOptions:
    """Every option of seed 004's ``create-classifier``, in Python spelling.

    Secrets: ``api_key_env`` is the NAME of an environment variable, read at call time and never
    logged; ``headers`` values expand ``${NAME}`` at call time and are never logged either.
    ``retries=0`` means exactly one attempt, no retry at all; unset means 2.
    """

    style: str = "systemone"
    backend: str = "typesafe"
    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    # Header values may hold a literal credential: they never appear in a repr.
    headers: Mapping[str, str] | None = field(default=None, repr=False)
    timeout: float = DEFAULT_TIMEOUT
    transport: Any = None
    http_client: Any = None
    retries: int = DEFAULT_RETRIES
    retry_base_ms: int = DEFAULT_RETRY_BASE_MS
    retryable_statuses: Sequence[int] = ()
    on_error: OnError | None = None
    request_params: Mapping[str, Any] | None = None
    body_transform: Callable[[dict[str, Any]], Any] | None = None
    on_metric: OnMetric | None = None
    client: Any = None
    evaluate: CustomEvaluate | None = None
    decisions: Sequence[RecordedDecision | Mapping[str, Any]] | None = None
    supports: Mapping[str, bool] | None = None
    #: The image limits checked before any request (``ImageLimits`` or a mapping of its fields);
    #: unset means seed 004's byte limits and the proposed side limits.
    image_limits: Any = None
    cache: Any = None
    llm_base_url: str | None = None
    llm_model: str | None = None
    llm_api_key_env: str | None = None

    @property
    def resolved_model(self) -> str:
        if self.style == "llm":
            # The llm style asks its chat endpoint for llm_model: naming "jev-latest" in its
            # metric events and repr would be a lie. "llm" when a ready chat client picks it.
            return self.llm_model or "llm"
        return self.model or DEFAULT_MODEL


class Style(Protocol):
    """What a style provides to the classifier."""

    name: str

    async def decide(self, state: Any, questions: dict[str, Question]) -> Decision: ...

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
    text = ""
    if isinstance(state, StateWithImages):
        text = canonical_json(questions_to_wire(questions)).decode("utf-8")
    return lift_images(state, text)


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
            digest = sha256_hex(canonical_request("", questions))
            preview = _preview(lifted.state)
            raise StaticMiss(
                "classifier: static: no recorded decision for state "
                f"{preview!r} with question set sha256 {digest[:12]}; "
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


def check_state(state: Any) -> None:
    """A state is a string, an object or an array (the wire rejects anything else with 422),
    or an ``Image`` (sent as its placeholder string), or a ``with_images(...)`` of those."""
    if isinstance(state, StateWithImages):
        state = state.state
    if isinstance(state, Image):
        return
    if isinstance(state, bool) or not isinstance(state, str | Mapping | list | tuple):
        kind = "null" if state is None else type(state).__name__
        raise InvalidState(
            f"classifier: a state must be a string, an object or an array, got {kind}"
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
    if isinstance(opts.retries, bool) or not isinstance(opts.retries, int) or opts.retries < 0:
        raise ConfigError(f"classifier: retries must be a whole number >= 0, got {opts.retries!r}")
    if (
        isinstance(opts.timeout, bool)
        or not isinstance(opts.timeout, int | float)
        or opts.timeout <= 0
    ):
        raise ConfigError(
            f"classifier: timeout must be a positive number of seconds, got {opts.timeout!r}"
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

        return LlmStyle(opts)
    from .systemone import SystemOneStyle

    return SystemOneStyle(opts)


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
            self.options.on_metric(event)

    def prepare(self, questions: Mapping[str, Any]) -> dict[str, Question]:
        """Normalise a question set and enforce the limits; no request is sent. Degenerate
        criteria are reported once per key per classifier through ``on_metric``."""
        qs = normalize_questions(questions)
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
            decision = await self._style.decide(state, qs)
            if fail_closed:
                invalid = validate_decision(qs, decision)
                if invalid is not None:
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
        from .batch import evaluate_batch

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
        from .batch import evaluate_stream

        return evaluate_stream(self, states, questions, concurrency)

    def state(self, value: Any) -> BoundState:
        """Bind a state. A VALUE, not a session: nothing is sent until ``evaluate``."""
        from .batch import BoundState

        return BoundState(self, value)

    def states(self, values: Iterable[Any]) -> BoundStates:
        """Bind a batch of states. See ``BoundStates.evaluate``."""
        from .batch import BoundStates

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
