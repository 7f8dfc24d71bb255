"""The request pipeline: one state and a prepared question set in, one decision out, its metric
event emitted (issue 30 item 3: "the classifier hands down a small public request-pipeline
object (style, metric emitter, model, limits); the metric event is built by one function").

Calls go one way: the public :class:`~toolnexus.classifier.client.Classifier` builds a
:class:`RequestPipeline` and hands it down to ``batch`` and ``packed``, which drive it and
never reach back into the classifier (no private attribute read, no ``getattr``). The per-state
evaluate and every ``classifier.evaluate`` metric event (alone, or per state of a packed
request: :func:`evaluate_event`) are built here. ``calibration=FILE`` reaches the pipeline as a
``recalibrate`` function the classifier loads, so this rank never imports ``calibration/``.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..config import BatchOptions
from ..config.options import ClassifierOptions, Metric
from ..core import (
    FLAGS,
    Checked,
    ClassifierError,
    ConfigError,
    Decision,
    ImageLimits,
    Question,
    check_limits,
    consistency_flags,
    degenerate_criteria,
    normalize_questions,
    registry,
    validate_decision,
)
from ..styles import CustomStyle, Style, SystemOneStyle, make_style
from ..transport import observing

if TYPE_CHECKING:
    from ..scheduler import Scheduler

__all__ = [
    "METRIC_EVALUATE",
    "METRIC_WARNING",
    "Recalibrate",
    "RequestPipeline",
    "evaluate_event",
]

#: The ``event`` value of the per-evaluation metric.
METRIC_EVALUATE = "classifier.evaluate"
#: The ``event`` value of the degenerate-criteria warning; it carries ``question``.
METRIC_WARNING = "classifier.warning"

#: ``calibration=FILE``: the recalibrated answers beside the wire's, for one decision.
Recalibrate = Callable[[Decision, dict[str, Question]], Decision]


def evaluate_event(
    style: str,
    model: str,
    started: float,
    *,
    decision: Decision | None = None,
    error: ClassifierError | None = None,
    packed: int | None = None,
) -> Metric:
    """THE ``classifier.evaluate`` metric event: of ``decision`` (``status`` ok), or of
    ``error`` (``status`` error, no tokens), ``ms`` since ``perf_counter()`` was ``started``;
    ``packed``: the size of the packed request that answered it (absent when asked alone)."""
    event: Metric = {"event": METRIC_EVALUATE, "style": style, "model": model}
    ms = round((time.perf_counter() - started) * 1000, 3)
    if decision is None:
        event.update(status="error", ms=ms, input_tokens=0, output_tokens=0, error=str(error))
        return event
    event.update(
        model=decision.model,
        status="ok",
        ms=ms,
        input_tokens=decision.usage.input_tokens,
        output_tokens=decision.usage.output_tokens,
        cached=decision.cached,
        calibrated=decision.calibrated,
    )
    if packed is not None:
        event["packed"] = packed
    if decision.usage.cost is not None:
        event["cost"] = decision.usage.cost
    return event


class RequestPipeline:
    """What answers one request for a classifier: its ``style`` (the object that sends),
    ``style_name``, ``model``, ``image_limits``, the metric emitter (:meth:`emit`) and its
    telemetry. ``batch`` and ``packed`` take this, never the classifier."""

    def __init__(
        self, options: ClassifierOptions, *, recalibrate: Recalibrate | None = None
    ) -> None:
        self.options = options  # checked when it was built
        self.style: Style = make_style(options)
        self.style_name: str = options.style
        # A backend row may set the model (openrouter: "typesafe/jev-1.13"); the style knows.
        self.model: str = getattr(self.style, "model", None) or options.resolved_model
        self.image_limits = ImageLimits.of(options.image_limits)
        self.telemetry = _telemetry_for(options)
        #: ``Telemetry.quiet`` (nothing recorded could reach an exporter: no span is made); a
        #: host's own object that only has ``evaluate`` (what ``telemetry=`` accepts) records
        self._quiet: Callable[[], bool] | None = getattr(self.telemetry, "quiet", None)
        self.endpoint = _endpoint_of(self.style)
        self.recalibrate = recalibrate
        self._warned: set[str] = set()

    def __repr__(self) -> str:
        return f"RequestPipeline(style={self.style_name!r}, model={self.model!r})"

    @property
    def systemone(self) -> SystemOneStyle | None:
        """The System One style this pipeline asks through (a pack goes in one request), or
        None for any other style (asked state by state)."""
        return self.style if isinstance(self.style, SystemOneStyle) else None

    def emit(self, event: Metric) -> None:
        if self.options.on_metric is not None:
            # A metrics sink observes; it never decides. One that raises is ignored, so the
            # outcome of an evaluate is the same with or without it (issue 9).
            with contextlib.suppress(Exception):
                self.options.on_metric(event)

    def reserve(self, options: BatchOptions) -> None:
        """Make room for ``options.concurrency`` evaluations at once: a synchronous custom
        evaluate gets that many threads. Every batch entry point calls it before it starts."""
        if isinstance(self.style, CustomStyle):
            self.style.reserve(options.concurrency)

    def prepare(self, questions: Mapping[str, Any]) -> dict[str, Question]:
        """Normalise a question set and enforce the limits; no request is sent. Degenerate
        criteria are reported once per key per classifier through ``on_metric``."""
        qs = normalize_questions(questions, wire=False)
        check_limits(qs)
        for key in sorted(qs):
            q = qs[key]
            qtype = registry.of_question(q)
            offered = qtype.offers(q) if qtype is not None else None
            if key in self._warned or offered is None:  # only options can be degenerate
                continue
            reason = degenerate_criteria(offered)
            if reason is not None:
                self._warned.add(key)
                self.emit(
                    {
                        "event": METRIC_WARNING,
                        "style": self.style_name,
                        "question": key,
                        "warning": (
                            f'question "{key}": degenerate choice criteria: {reason}; the '
                            "model ranks such options at chance. Describe what picking each "
                            "option would mean."
                        ),
                    }
                )
        return qs

    async def evaluate_prepared(
        self,
        state: Any,
        qs: dict[str, Question],
        *,
        fail_closed: bool = False,
        scheduler: Scheduler | None = None,
    ) -> Decision:
        """One decision for an already-checked state and a prepared question set; in a batch,
        every request it sends is admitted by the run's ``scheduler`` (handed to the style)."""
        made = await self.evaluate_checked(state, qs, fail_closed=fail_closed, scheduler=scheduler)
        return made.decision if isinstance(made, Checked) else made

    async def evaluate_checked(
        self,
        state: Any,
        qs: dict[str, Question],
        *,
        fail_closed: bool = False,
        scheduler: Scheduler | None = None,
    ) -> Decision | Checked:
        """:meth:`evaluate_prepared`, with ``validate_decision``'s verdict when one was reached
        on the way (a style that validates to decide what to cache, the llm style, or
        ``fail_closed``): a caller that builds the record passes it on
        (``records.decision.record(validated=...)``), so the decision is validated once."""
        telemetry, quiet = self.telemetry, self._quiet
        if telemetry is None or (quiet is not None and quiet()):
            return await self._evaluate_prepared(state, qs, fail_closed, scheduler)
        with telemetry.evaluate(
            model=self.model, endpoint=self.endpoint, questions=len(qs)
        ) as span:
            with observing(span.observer()):
                made = await self._evaluate_prepared(state, qs, fail_closed, scheduler)
            decision = made.decision if isinstance(made, Checked) else made
            span.decided(
                response_model=decision.model,
                input_tokens=decision.usage.input_tokens,
                output_tokens=decision.usage.output_tokens,
                cached=decision.cached,
                flags=_flags(decision),
            )
            return made

    async def _evaluate_prepared(
        self, state: Any, qs: dict[str, Question], fail_closed: bool, scheduler: Scheduler | None
    ) -> Decision | Checked:
        start = time.perf_counter()
        model = self.model
        try:
            made = await self.style.decide(state, qs, scheduler)
            if isinstance(made, Checked):
                decision, invalid = made.decision, made.invalid
                checked: bool = True
            else:
                decision = made
                checked = fail_closed
                invalid = validate_decision(qs, decision) if fail_closed else None
            if fail_closed and invalid is not None:
                model = decision.model
                raise invalid
        except ClassifierError as e:
            self.emit(evaluate_event(self.style_name, model, start, error=e))
            raise
        self.emit(evaluate_event(self.style_name, model, start, decision=decision))
        if self.recalibrate is not None:
            # The recalibrated answers sit beside the wire's: the verdict on the wire's holds.
            decision = self.recalibrate(decision, qs)
        if not checked:
            return decision
        if isinstance(made, Checked) and made.decision is decision:
            return made
        return Checked(decision, invalid)


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
