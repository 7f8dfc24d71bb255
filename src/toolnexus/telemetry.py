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
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

__all__ = [
    "CAPTURE_CONTENT_ENV",
    "DURATION_BUCKETS",
    "INSTALL_HINT",
    "OPERATION",
    "TOKEN_BUCKETS",
    "AttemptSpan",
    "EvaluateSpan",
    "Telemetry",
    "endpoint_attributes",
    "sdk_installed",
    "wanted",
]

INSTALL_HINT = "pip install 'toolnexus-classifier[otel]'"
#: ``gen_ai.operation.name``: a custom name, since no well-known value fits a classifier.
OPERATION = "systemone"
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


def endpoint_attributes(url: str) -> dict[str, Any]:
    """``server.address`` / ``server.port`` / ``url.full`` of an endpoint URL, without userinfo,
    query or fragment (a key may sit in any of them). Pass the unexpanded template for
    ``url.full``: an expanded ``${NAME}`` is a secret."""
    parts = urlsplit(url)
    attrs: dict[str, Any] = {}
    if not parts.scheme:
        return attrs  # a custom or static style: no endpoint to name
    if parts.hostname:
        attrs["server.address"] = parts.hostname
    try:
        port = parts.port
    except ValueError:
        port = None
    if port is None and parts.scheme in ("http", "https"):
        port = 443 if parts.scheme == "https" else 80
    if port is not None:
        attrs["server.port"] = port
    host = parts.hostname or ""
    shown_port = f":{parts.port}" if _safe_port(parts) else ""
    attrs["url.full"] = f"{parts.scheme}://{host}{shown_port}{parts.path}"
    return attrs


def _safe_port(parts: Any) -> bool:
    try:
        return parts.port is not None
    except ValueError:
        return False


def _capture_content(environ: Mapping[str, str]) -> bool:
    return environ.get(CAPTURE_CONTENT_ENV, "").strip().lower() == "true"


@dataclass
class AttemptSpan:
    """One HTTP attempt's span; :meth:`response` records what came back."""

    span: Any

    def response(self, status: int, request_id: str | None = None) -> None:
        self.span.set_attribute("http.response.status_code", status)
        if request_id:
            self.span.set_attribute("toolnexus.request_id", request_id)
        if status >= 400:
            self.span.set_attribute("error.type", str(status))
            self._error()

    def failed(self, kind: str) -> None:
        """No HTTP answer: ``kind`` is the transport's own words (``timeout``, ...)."""
        self.span.set_attribute("error.type", kind)
        self._error()

    def _error(self) -> None:
        from opentelemetry.trace import Status, StatusCode

        self.span.set_status(Status(StatusCode.ERROR))


@dataclass
class EvaluateSpan:
    """One evaluate's span and what it reports when it ends."""

    telemetry: Telemetry
    span: Any
    attributes: dict[str, Any]
    started: float
    error_type: str | None = None
    response_model: str | None = None
    attempts: int = field(default=0)

    @contextlib.contextmanager
    def attempt(self) -> Iterator[AttemptSpan]:
        """A child span for one HTTP attempt; the first has resend count 0."""
        with self.telemetry.attempt_span(self.span, self.attempts, self.attributes) as span:
            self.attempts += 1
            yield span

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
            self.telemetry.record_tokens(
                self.attributes, response_model, input_tokens, output_tokens
            )

    def observer(self) -> _AttemptSpans:
        """The transport hook (``transport/observe.py``) that turns this evaluate's HTTP
        attempts into child spans and its waits into span events."""
        return _AttemptSpans(self)

    def failed(self, error: BaseException) -> None:
        self.error_type = type(error).__name__
        self.span.set_attribute("error.type", self.error_type)
        from opentelemetry.trace import Status, StatusCode

        self.span.set_status(Status(StatusCode.ERROR))

    def content(self, **values: str) -> None:
        """State, questions or answers as span attributes, only with the content-capture
        switch on; ``values`` must already be scrubbed of credentials."""
        if self.telemetry.capture_content:
            for name, value in values.items():
                self.span.set_attribute(f"toolnexus.{name}", value)


class _AttemptWatch:
    """One attempt span, opened when the transport starts the attempt, closed at its end."""

    def __init__(self, ev: EvaluateSpan) -> None:
        self._span = AttemptSpan(ev.telemetry.start_attempt(ev.span, ev.attempts, ev.attributes))
        ev.attempts += 1

    def response(self, status: int, request_id: str | None) -> None:
        self._span.response(status, request_id)

    def failed(self, kind: str) -> None:
        self._span.failed(kind)

    def end(self) -> None:
        self._span.span.end()


@dataclass
class _AttemptSpans:
    """An evaluate's :class:`~.transport.observe.AttemptObserver`."""

    ev: EvaluateSpan

    def attempt(self, resend_count: int) -> _AttemptWatch:
        return _AttemptWatch(self.ev)

    def waited(self, seconds: float, resend_count: int) -> None:
        self.ev.span.add_event(
            "toolnexus.retry_wait",
            {"toolnexus.wait_seconds": seconds, "http.request.resend_count": resend_count},
        )


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
            from .errors import ConfigError

            raise ConfigError(
                f"classifier: telemetry needs opentelemetry-api: {INSTALL_HINT}"
            ) from None
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
        self._bases: dict[tuple[str, str], dict[str, Any]] = {}

    def _base(self, model: str, endpoint: str) -> dict[str, Any]:
        """The attributes every span and metric of ``model`` at ``endpoint`` shares, built
        once per pair (a classifier asks one model at one endpoint: parsing the URL for each
        evaluate was a measured share of the per-request cost). Callers copy, never mutate."""
        key = (model, endpoint)
        base = self._bases.get(key)
        if base is None:
            base = {
                "gen_ai.operation.name": OPERATION,
                "gen_ai.provider.name": self.provider_name,
                "gen_ai.request.model": model,
                **endpoint_attributes(endpoint),
            }
            if len(self._bases) < 64:
                self._bases[key] = base
        return base

    @contextlib.contextmanager
    def evaluate(
        self,
        *,
        model: str,
        endpoint: str,
        questions: int,
        pack: int = 1,
        links: Sequence[Any] = (),
        operation: bool = True,
    ) -> Iterator[EvaluateSpan]:
        """The span of one evaluate (one state). ``links``: span contexts of the packed
        request that carried it. ``operation=False`` records no operation duration (a packed
        request's own span: its states' evaluates are the operations)."""
        from opentelemetry.trace import Link, SpanKind

        attrs = self._base(model, endpoint)
        span_attrs = {**attrs, "toolnexus.questions": questions, "toolnexus.pack": pack}
        with self.tracer.start_as_current_span(
            f"{OPERATION} {model}",
            kind=SpanKind.CLIENT,
            attributes=span_attrs,
            links=[Link(c) for c in links],
            record_exception=False,
        ) as span:
            ev = EvaluateSpan(self, span, attrs, time.perf_counter())
            try:
                yield ev
            except BaseException as error:
                ev.failed(error)
                raise
            finally:
                if operation:
                    self._record_duration(ev)

    def _record_duration(self, ev: EvaluateSpan) -> None:
        attrs = {k: v for k, v in ev.attributes.items() if k != "url.full"}
        if ev.response_model is not None:
            attrs["gen_ai.response.model"] = ev.response_model
        if ev.error_type is not None:
            attrs["error.type"] = ev.error_type
        self.duration.record(time.perf_counter() - ev.started, attributes=attrs)

    def record_tokens(
        self, attrs: Mapping[str, Any], response_model: str, input_tokens: int, output_tokens: int
    ) -> None:
        """Billable tokens of one request (never of a cached answer)."""
        base = {k: v for k, v in attrs.items() if k != "url.full"}
        base["gen_ai.response.model"] = response_model
        self.tokens.record(input_tokens, attributes={**base, "gen_ai.token.type": "input"})
        self.tokens.record(output_tokens, attributes={**base, "gen_ai.token.type": "output"})

    def start_attempt(self, parent: Any, resend_count: int, attrs: Mapping[str, Any]) -> Any:
        """Start one HTTP attempt's span under ``parent`` (the caller ends it). It is not made
        the current span: nothing runs inside it but the send, and attaching a context per
        attempt was a measured share of the per-request cost."""
        from opentelemetry import trace
        from opentelemetry.trace import SpanKind

        span_attrs = {
            "http.request.method": "POST",
            "http.request.resend_count": resend_count,
            **{k: v for k, v in attrs.items() if k.startswith(("server.", "url."))},
        }
        return self.tracer.start_span(
            "POST",
            context=trace.set_span_in_context(parent),
            kind=SpanKind.CLIENT,
            attributes=span_attrs,
            record_exception=False,
        )

    @contextlib.contextmanager
    def attempt_span(
        self, parent: Any, resend_count: int, attrs: Mapping[str, Any]
    ) -> Iterator[AttemptSpan]:
        span = self.start_attempt(parent, resend_count, attrs)
        try:
            yield AttemptSpan(span)
        finally:
            span.end()

    @contextlib.contextmanager
    def packed_request(self, *, model: str, endpoint: str, states: int) -> Iterator[EvaluateSpan]:
        """The span of one packed request: its attempts are children, each state's evaluate
        span links to it (``.span.get_span_context()``), and its usage is recorded here once."""
        with self.evaluate(
            model=model, endpoint=endpoint, questions=0, pack=states, operation=False
        ) as ev:
            yield ev
