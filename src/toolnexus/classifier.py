"""``create_classifier``: the classifier, its metric events, and the per-state evaluate.

Batches, streams and bound states live in ``batch.py``, which never imports this module back: it
drives any object with ``prepare``, ``reserve`` and ``evaluate_prepared`` (``batch.Evaluator``).
The styles (seed 004: ``systemone``, ``llm``, ``custom``, ``static``) live in ``styles.py``; the
one option list, checked when built, is ``options.ClassifierOptions``.

A classifier interprets; it never authorises. Its output is a reading of intent inside a
boundary, never the boundary: numeric limits, permission checks and allowlists stay in code.
"""

from __future__ import annotations

import contextlib
import functools
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
from typing import Any, ParamSpec, TypeVar

from .batch import BoundState, BoundStates, StateResult, evaluate_batch, evaluate_stream
from .config import BatchOptions
from .decision import Decision
from .defaults import DEFAULT_BATCH_CONCURRENCY
from .errors import ClassifierError, ConfigError
from .options import ClassifierOptions, Metric, RecordedDecision, option_names
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
P = ParamSpec("P")


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
    flags = []
    if any(getattr(a, "near_uniform", False) for a in decision.answers.values()):
        flags.append("near-uniform")
    if not decision.calibrated:
        flags.append("uncalibrated")
    return flags


def _endpoint_of(style: Style) -> str:
    """The request URL as configured (credentials hidden, ``${NAME}`` unexpanded): what
    ``server.address`` and ``url.full`` are taken from; empty for styles that send nothing."""
    endpoint = getattr(style, "endpoint", None)
    path = getattr(style, "path", "systemone")
    return f"{endpoint}/{path}" if isinstance(endpoint, str) else ""


_OPTION_NAMES = frozenset(option_names())


def _takes_options(
    options: Callable[P, ClassifierOptions],
) -> Callable[[Callable[[ClassifierOptions], Classifier]], Callable[P, Classifier]]:
    """``create_classifier``'s signature IS ``ClassifierOptions``'s: keyword-only, typed, one
    list (mypy checks callers against it; ``inspect.signature`` and editors show it). The
    wrapper only turns an unknown option into a ConfigError naming the known ones."""

    def decorate(build: Callable[[ClassifierOptions], Classifier]) -> Callable[P, Classifier]:
        @functools.wraps(build)
        def create(*args: P.args, **kwargs: P.kwargs) -> Classifier:
            if args:
                raise ConfigError("classifier: create_classifier takes keyword options only")
            unknown = sorted(set(kwargs) - _OPTION_NAMES)
            if unknown:
                raise ConfigError(
                    f"classifier: unknown option {unknown[0]!r}; known options: "
                    + ", ".join(sorted(_OPTION_NAMES))
                )
            return build(options(*args, **kwargs))

        signature = inspect.signature(options)
        create.__dict__["__signature__"] = signature.replace(return_annotation="Classifier")
        return create

    return decorate


@_takes_options(ClassifierOptions)
def create_classifier(options: ClassifierOptions) -> Classifier:
    """Build a classifier. Every option is keyword-only and mirrors seed 004's
    ``create-classifier``; an unknown option, an unknown style, a value of the wrong kind and a
    style missing its required option are rejected HERE rather than at the first call.

    Style:

    - ``style``: "systemone" (default, the System One wire) | "llm" (deprecated, kept working) |
      "custom" | "static".
    - ``backend``: a row of ``BACKENDS``, "typesafe" (default) | "openrouter" | "cloudflare" |
      "vercel" | "custom"; it presets ``base_url`` + ``model`` + ``api_key_env`` as a unit, and
      an explicit option still wins. "custom" requires ``base_url`` and ``supports``.
    - ``supports``: ``{"images": bool}``, overriding the backend row's image column.

    Endpoint and credential:

    - ``base_url``: default the backend row's (``https://api.typesafe.ai/v1``). For the typesafe
      backend, ``$TYPESAFE_BASE_URL`` (the official SDK's variable: a host root, to which
      ``/v1`` is appended, as the SDK does) is used when no ``base_url`` is given. ``${NAME}``
      expands at call time; errors name it unexpanded.
    - ``model``: default "jev-latest" (the floating alias: pin it once thresholds are tuned).
    - ``api_key_env``: the NAME of the environment variable holding the key, never a value; read
      at call time and never logged. Default "TYPESAFE_API_KEY".
    - ``headers``: extra request headers; values expand ``${NAME}`` at call time, never logged.

    Transport (the seed names keep working; they become one ``RetryPolicy`` and one
    ``Timeout``, which the style and the transport receive unchanged):

    - ``timeout``: seconds ONE request may take (a number or a ``Timeout``), default 10;
      ``timeout_ms``: the same bound in milliseconds, seed 004's spelling (give one of the two).
    - ``retries``: the transient-failure budget, default 2; 0 means exactly one attempt.
    - ``retry_base_ms``: the backoff base, default 500: the wait is ``base * 2**attempt`` ms
      with no jitter, and a ``Retry-After`` in delay-seconds form wins.
    - ``retryable_statuses``: extra statuses ADDED to 408/429/500/502/503/504/529 (it can only
      widen); network errors are always retryable.
    - ``on_error``: ``on_error(ErrorInfo) -> "retry" | "fail"``, run on every failed attempt,
      with the final say (still bounded by ``retries``).
    - ``transport``: an httpx async transport (``httpx.MockTransport`` in tests) instead of the
      default aiohttp pool; ``http_client``: a ready ``httpx.AsyncClient`` the host closes.

    Body and observation:

    - ``request_params``: extra top-level body keys, shallow-merged after the classifier's own;
      a param wins on collision. ``body_transform``: runs last on the assembled body; its
      return value is sent.
    - ``on_metric``: the metric sink, "classifier.evaluate" events and the degenerate-criteria
      "classifier.warning"; a sink that raises is ignored.
    - ``cache``: opt-in, any object with ``get(key) -> str | None`` and ``set(key, value)``;
      systemone style only (see ``memory_cache``, ``SqliteCache``).
    - ``image_limits``: the image limits checked before any request (an ``ImageLimits`` or a
      mapping of its fields); default seed 004's byte limits.
    - ``telemetry``: OpenTelemetry spans and metrics (the ``otel`` extra, ``telemetry.py``):
      None (default) records when the host already imported OpenTelemetry or set ``OTEL_*``
      exporters with the SDK installed; True / False switch it on / off; or a ready
      ``Telemetry`` on the host's own providers. ``on_metric`` events are unchanged by it.

    Per style:

    - ``evaluate`` (style "custom", required): ``(state, questions) -> Decision | body``, sync
      or async; a sync one runs on a thread pool sized to the batch's concurrency. Every wire
      option is ignored.
    - ``decisions`` (style "static", required): ``RecordedDecision``s, or mappings with
      ``state``, ``questions`` and ``response`` (or the ``answers`` shorthand).
    - ``client``, ``llm_base_url``, ``llm_model``, ``llm_api_key_env`` (style "llm"): a ready
      chat client, or the chat endpoint (default https://api.openai.com/v1), its model
      (required without a ``ChatClient``) and the NAME of its key's variable (OPENAI_API_KEY).

    Recalibration (issue 24):

    - ``calibration``: the path of a file ``toolnexus report --fit-calibration`` wrote; read
      here. Each decision then carries ``recalibrated`` answers beside the wire's (never
      changed) and ``calibration_sha256``; a map fitted for another question set, model, style
      or pack size is refused with one line naming both.
    """
    return Classifier(options)


def static_classifier(
    decisions: Iterable[RecordedDecision | Mapping[str, Any]], **options: Any
) -> Classifier:
    """A static classifier from recorded decisions in ONE call: what a hermetic test wants.
    Entries carry ``response`` or the ``answers`` shorthand; ``options`` merge in (e.g. model)."""
    return create_classifier(style="static", decisions=list(decisions), **options)
