"""OpenTelemetry spans and metrics for classifier calls (issue 23), optional.

Only ``opentelemetry-api`` is used (the ``otel`` extra): with no SDK configured by the host it
records nothing. It is imported only when telemetry is switched on (``telemetry=True``, the CLI's
``--otel`` or ``OTEL_*`` settings) or when the host has already imported OpenTelemetry
(:func:`wanted`), never merely because it is installed: it is often installed as someone else's
dependency, and start-up must not pay for it.

What is recorded follows the GenAI semantic conventions:

- one span per evaluate, kind CLIENT, named ``{gen_ai.operation.name} {gen_ai.request.model}``
  with the operation ``systemone`` (none of the well-known operation names fits a classifier),
  carrying ``gen_ai.provider.name``, ``gen_ai.request.model``, ``gen_ai.response.model``,
  ``gen_ai.usage.input_tokens`` / ``output_tokens``, ``server.address`` / ``server.port``,
  ``error.type`` on failure, and ``toolnexus.*`` attributes (question count, pack size, cache
  hit, flags);
- one child span per HTTP attempt (``POST``, CLIENT) with ``http.request.resend_count``, the
  status and the request id; a packed request's attempt spans belong to one request span that
  each state's span links to, and its usage is recorded once, on that request;
- the metrics ``gen_ai.client.operation.duration`` (seconds) and ``gen_ai.client.token.usage``
  (input and output, billable tokens only: a cached answer is not billable), with the
  conventions' bucket boundaries.

No state, question text, answer or header is in any span, event or metric unless the host opts
in with the conventions' content-capture switch (:data:`CAPTURE_CONTENT_ENV`); credentials are
scrubbed even then, and ``url.full`` / ``server.address`` never carry userinfo, a query string or
an expanded ``${NAME}``.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from .telemetry_attrs import (
    CACHED,
    Shape,
)

__all__ = [
    "CAPTURE_CONTENT_ENV",
    "DURATION_BUCKETS",
    "INSTALL_HINT",
    "TOKEN_BUCKETS",
    "AttemptSpan",
    "EvaluateSpan",
    "Telemetry",
    "sdk_installed",
    "wanted",
]

INSTALL_HINT = "pip install 'toolnexus-classifier[otel]'"
#: The conventions' content-capture switch: off unless the host sets it to ``true``.
CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
#: ``gen_ai.client.operation.duration`` bucket boundaries (seconds), from the conventions.
DURATION_BUCKETS = (
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
)  # fmt: skip
#: ``gen_ai.client.token.usage`` bucket boundaries, from the conventions.
TOKEN_BUCKETS = (
    1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864,
)  # fmt: skip
_SCOPE = "toolnexus"


#: The ``OTEL_*`` settings that say a host means to export (read only with the SDK installed).
_EXPORT_SETTINGS = (
    "OTEL_TRACES_EXPORTER",
    "OTEL_METRICS_EXPORTER",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
)


def wanted(explicit: bool | None = None, environ: Mapping[str, str] = os.environ) -> bool:
    """Whether to record: ``explicit`` when given; else when the host already imported
    OpenTelemetry, or configured an exporter through ``OTEL_*`` variables with the SDK
    installed. Nothing is imported to decide: an installed but unused OpenTelemetry costs
    nothing."""
    if explicit is not None:
        return explicit
    if "opentelemetry" in sys.modules:
        return True
    exporting = any(
        environ.get(n, "").strip().lower() not in ("", "none") for n in _EXPORT_SETTINGS
    )
    return exporting and sdk_installed()


def sdk_installed() -> bool:
    """Whether ``opentelemetry-sdk`` is installed, found without importing anything."""
    from importlib.util import find_spec

    spec = find_spec("opentelemetry")  # a top-level lookup imports nothing
    if spec is None or spec.submodule_search_locations is None:
        return False
    return any(os.path.isdir(os.path.join(p, "sdk")) for p in spec.submodule_search_locations)


def _capture_content(environ: Mapping[str, str]) -> bool:
    return environ.get(CAPTURE_CONTENT_ENV, "").strip().lower() == "true"


class AttemptSpan:
    """One HTTP attempt's span (also the transport's watch of it, ``observe.AttemptWatch``):
    :meth:`response` or :meth:`failed` records how it went, :meth:`end` ends it."""

    __slots__ = ("span",)

    def __init__(self, span: Any) -> None:
        self.span = span

    def response(self, status: int, request_id: str | None = None) -> None:
        attrs: dict[str, Any] = {"http.response.status_code": status}
        if request_id:
            attrs["toolnexus.request_id"] = request_id
        if status >= 400:
            attrs["error.type"] = str(status)
        self.span.set_attributes(attrs)  # one pass of the SDK's checks, not one per attribute
        if status >= 400:
            self._error()

    def failed(self, kind: str) -> None:
        """No HTTP answer: ``kind`` is the transport's own words (``timeout``, ...)."""
        self.span.set_attribute("error.type", kind)
        self._error()

    def end(self) -> None:
        self.span.end()

    def _error(self) -> None:
        from opentelemetry.trace import Status, StatusCode

        self.span.set_status(Status(StatusCode.ERROR))


class EvaluateSpan:
    """One evaluate's span, current while the code inside ``with`` runs
    (:meth:`Telemetry.evaluate`), and what it reports when it ends. A span the sampler did not
    record gets no attributes, events or attempt spans (under the SDK's parent-based sampling
    its children would not be recorded either); its metrics are recorded all the same."""

    __slots__ = (
        "_links",
        "_operation",
        "_pack",
        "_questions",
        "_token",
        "attempts",
        "context",
        "error_type",
        "recording",
        "response_model",
        "shape",
        "span",
        "started",
        "telemetry",
    )

    def __init__(
        self,
        telemetry: Telemetry,
        shape: Shape,
        questions: int,
        pack: int,
        links: Sequence[Any],
        operation: bool,
    ) -> None:
        self.telemetry, self.shape = telemetry, shape
        self._questions, self._pack, self._links, self._operation = (
            questions,
            pack,
            links,
            operation,
        )
        self.error_type: str | None = None
        self.response_model: str | None = None
        self.attempts = 0
        self.span: Any = None

    def __enter__(self) -> EvaluateSpan:
        api = self.telemetry.api
        self.span = self.telemetry.tracer.start_span(
            self.shape.name,
            kind=api.client,
            attributes=self.shape.start(self._questions, self._pack),
            links=[api.link(c) for c in self._links] if self._links else None,
            record_exception=False,
        )
        self.recording = self.span.is_recording()
        # Made current (an HTTP library's own instrumentation nests under it, and the metrics
        # recorded inside take it as their exemplar) by hand: the SDK's context-manager pair
        # (start_as_current_span, use_span) was a measured share of the per-request cost.
        self.context = api.in_context(self.span)
        self._token = api.attach(self.context)
        self.started = time.perf_counter()
        return self

    def __exit__(self, kind: Any, error: BaseException | None, tb: Any) -> None:
        try:
            if error is not None:
                self.failed(error)
            if self._operation:
                self.telemetry._record_duration(self)
        finally:
            self.telemetry.api.detach(self._token)
            self.span.end()

    @contextlib.contextmanager
    def attempt(self) -> Iterator[AttemptSpan]:
        """A child span for one HTTP attempt; the first has resend count 0."""
        span = self.telemetry.start_attempt(self)
        try:
            yield span
        finally:
            span.end()

    def decided(
        self,
        *,
        response_model: str,
        input_tokens: int,
        output_tokens: int,
        cached: bool,
        flags: Sequence[str] = (),
        billed_here: bool = True,
    ) -> None:
        """The evaluate answered. ``billed_here`` is False for a state of a packed request (its
        usage is recorded once, on the request) and for a cached answer (nothing was billed)."""
        self.response_model = response_model
        if self.recording:
            attrs: dict[str, Any] = {
                "gen_ai.response.model": response_model,
                "gen_ai.usage.input_tokens": input_tokens,
                "gen_ai.usage.output_tokens": output_tokens,
                "toolnexus.cached": cached,
            }
            if flags:
                attrs["toolnexus.flags"] = list(flags)
            self.span.set_attributes(attrs)
        if billed_here and not cached:
            self.telemetry.record_tokens(self.shape, response_model, input_tokens, output_tokens)

    def observer(self) -> _AttemptSpans:
        """The transport hook (``transport/observe.py``) that turns this evaluate's HTTP
        attempts into child spans and its waits into span events."""
        return _AttemptSpans(self)

    def failed(self, error: BaseException) -> None:
        """The evaluate raised ``error``: ``error.type`` and an ERROR status. Its description is
        the ``Exception``'s type; its words only with the content-capture switch on, since a
        server's error message may quote the state it was sent ("no state ... by default")."""
        from opentelemetry.trace import Status, StatusCode

        self.error_type = type(error).__name__
        self.span.set_attribute("error.type", self.error_type)
        words = None
        if isinstance(error, Exception):
            words = self.error_type
            if self.telemetry.capture_content:
                words = f"{self.error_type}: {error}"
        self.span.set_status(Status(StatusCode.ERROR, words))

    def content(self, **values: str) -> None:
        """State, questions or answers as span attributes, only with the content-capture
        switch on; ``values`` must already be scrubbed of credentials."""
        if self.telemetry.capture_content:
            for name, value in values.items():
                self.span.set_attribute(f"toolnexus.{name}", value)


class _AttemptSpans:
    """An evaluate's :class:`~.transport.observe.AttemptObserver`."""

    __slots__ = ("ev",)

    def __init__(self, ev: EvaluateSpan) -> None:
        self.ev = ev

    def attempt(self, resend_count: int) -> AttemptSpan | None:
        # ``ev.attempts``, not the transport's count: one evaluate may send more than once
        # (a throttled request is sent again by the scheduler), and its resends count on.
        return self.ev.telemetry.start_attempt(self.ev) if self.ev.recording else None

    def waited(self, seconds: float, resend_count: int) -> None:
        if self.ev.recording:
            self.ev.span.add_event(
                "toolnexus.retry_wait",
                {"toolnexus.wait_seconds": seconds, "http.request.resend_count": resend_count},
            )


class _Api:
    """The few OpenTelemetry API names the per-request path uses, looked up once."""

    __slots__ = ("attach", "client", "detach", "in_context", "link")

    def __init__(self) -> None:
        from opentelemetry import context, trace

        self.attach, self.detach = context.attach, context.detach
        self.in_context = trace.set_span_in_context
        self.link, self.client = trace.Link, trace.SpanKind.CLIENT


#: A side of :class:`Telemetry` (tracing, metrics) on a provider that records.
_LIVE = "live"
#: A side on a no-op provider, for good (the API's own, given or set as the global one).
_NOOP = "noop"


def _side(given: Any, current: Any, noop: type) -> Any:
    """How one side records: :data:`_NOOP`, :data:`_LIVE`, or, while the host has set no global
    provider, ``(current, proxy)``: quiet as long as ``current()`` is still ``proxy`` (the
    API's global proxy, which forwards to a provider set later). A global provider is set once
    (the API refuses to override it), so a side leaves that state at most once."""
    provider = current() if given is None else given
    if isinstance(provider, noop):
        return _NOOP
    if given is None and type(provider).__name__ in _PROXIES:
        return (current, provider)
    return _LIVE


#: The API's global proxy providers, by class name (the meter's is private to the API).
_PROXIES = frozenset({"ProxyTracerProvider", "_ProxyMeterProvider"})


class Telemetry:
    """Spans and metrics on the host's OpenTelemetry providers (the global ones by default)."""

    def __init__(
        self,
        *,
        tracer_provider: Any = None,
        meter_provider: Any = None,
        provider_name: str = "typesafe",
        environ: Mapping[str, str] = os.environ,
    ) -> None:
        try:
            from opentelemetry import metrics, trace
        except ImportError:
            from ..core import ConfigError

            raise ConfigError(
                f"classifier: telemetry needs opentelemetry-api: {INSTALL_HINT}"
            ) from None
        self.api = _Api()
        self.tracer = trace.get_tracer(_SCOPE, tracer_provider=tracer_provider)
        meter = metrics.get_meter(_SCOPE, meter_provider=meter_provider)
        self.duration = meter.create_histogram(
            "gen_ai.client.operation.duration",
            unit="s",
            description="GenAI operation duration",
            explicit_bucket_boundaries_advisory=list(DURATION_BUCKETS),
        )
        self.tokens = meter.create_histogram(
            "gen_ai.client.token.usage",
            unit="{token}",
            description="Measures number of input and output tokens used",
            explicit_bucket_boundaries_advisory=list(TOKEN_BUCKETS),
        )
        self.provider_name = provider_name
        self.capture_content = _capture_content(environ)
        self._shapes: dict[tuple[str, str], Shape] = {}
        # Decided once here (issue 45, speed): whether anything recorded can reach an exporter.
        sides = (
            _side(tracer_provider, trace.get_tracer_provider, trace.NoOpTracerProvider),
            _side(meter_provider, metrics.get_meter_provider, metrics.NoOpMeterProvider),
        )
        #: a side with a real provider: every evaluate records
        self._live = any(side is _LIVE for side in sides)
        #: the sides still on the API's global proxy: quiet until the host sets a provider
        self._waiting = tuple(side for side in sides if isinstance(side, tuple))

    def quiet(self) -> bool:
        """Whether nothing recorded now could reach an exporter: both providers are the API's
        no-op ones, or its global proxies while the host has set no provider (OpenTelemetry
        imported, no SDK). Then an evaluate makes no span and records no metric, which is
        what the no-op providers would have done with them, at no cost per request (issue
        45: installed but unused <= 1.02x). Asked per evaluate, in two identity checks: a
        host may set its providers after the classifier is made, and from then on it
        records."""
        if self._live:
            return False
        for current, proxy in self._waiting:
            if current() is not proxy:
                self._live = True
                return False
        return True

    def _shape(self, model: str, endpoint: str) -> Shape:
        shape = self._shapes.get((model, endpoint))
        if shape is None:
            shape = Shape(self.provider_name, model, endpoint)
            if len(self._shapes) < CACHED:
                self._shapes[(model, endpoint)] = shape
        return shape

    def evaluate(
        self,
        *,
        model: str,
        endpoint: str,
        questions: int,
        pack: int = 1,
        links: Sequence[Any] = (),
        operation: bool = True,
    ) -> EvaluateSpan:
        """The span of one evaluate (one state), for ``with``. ``links``: span contexts of the
        packed request that carried it. ``operation=False`` records no operation duration (a
        packed request's own span: its states' evaluates are the operations)."""
        return EvaluateSpan(self, self._shape(model, endpoint), questions, pack, links, operation)

    def _record_duration(self, ev: EvaluateSpan) -> None:
        if ev.error_type is None and ev.response_model is not None:
            attrs = ev.shape.metrics(ev.response_model)[0]
        else:
            attrs = dict(ev.shape.metric)
            if ev.response_model is not None:
                attrs["gen_ai.response.model"] = ev.response_model
            if ev.error_type is not None:
                attrs["error.type"] = ev.error_type
        self.duration.record(time.perf_counter() - ev.started, attributes=attrs)

    def record_tokens(
        self, shape: Shape, response_model: str, input_tokens: int, output_tokens: int
    ) -> None:
        """Billable tokens of one request (never of a cached answer)."""
        _, inputs, outputs = shape.metrics(response_model)
        self.tokens.record(input_tokens, attributes=inputs)
        self.tokens.record(output_tokens, attributes=outputs)

    def start_attempt(self, ev: EvaluateSpan) -> AttemptSpan:
        """Start the next HTTP attempt's span under ``ev`` (the caller ends it). It is not made
        the current span: nothing runs inside it but the send, and attaching a context per
        attempt was a measured share of the per-request cost."""
        attrs = {
            "http.request.method": "POST",
            "http.request.resend_count": ev.attempts,
            **ev.shape.http,
        }
        ev.attempts += 1
        return AttemptSpan(
            self.tracer.start_span(
                "POST",
                context=ev.context,
                kind=self.api.client,
                attributes=attrs,
                record_exception=False,
            )
        )

    def packed_request(self, *, model: str, endpoint: str, states: int) -> EvaluateSpan:
        """The span of one packed request, for ``with``: its attempts are children, each
        state's evaluate span links to it (``.span.get_span_context()``), and its usage is
        recorded here once."""
        return self.evaluate(
            model=model, endpoint=endpoint, questions=0, pack=states, operation=False
        )
