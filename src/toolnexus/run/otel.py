"""A run under OpenTelemetry (issue 23; a ``RunConfig`` field since issue 30 item 1): one
parent span for the run, the per-state spans (``telemetry.py``, from the classifier) under it,
flushed however the run ends (its end, Ctrl-C, SIGTERM, an error).

It is on with ``RunConfig(otel=True)`` (``batch --otel``), under ``opentelemetry-instrument``
(which imports OpenTelemetry and configures the SDK before the program starts), or with
``OTEL_*`` exporter settings and the SDK installed (:func:`toolnexus.evaluate.telemetry.wanted`).
Otherwise nothing of OpenTelemetry is imported: OpenTelemetry stays an optional extra, and
importing ``toolnexus.run`` never imports it. When no SDK is configured yet, the SDK's own
configurator builds one from the ``OTEL_*`` settings (exporters, sampler, resource), as
``opentelemetry-instrument`` would.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from ..core import RunError

__all__ = ["RunSpan", "prepare_telemetry", "run_telemetry"]


class RunSpan:
    """The run's span, or nothing when telemetry is off."""

    def __init__(self, span: Any = None) -> None:
        self.span = span

    def summary(self, summary: Any) -> None:
        """The run's counts as ``toolnexus.batch.*`` attributes (never an id or a state)."""
        if self.span is None:
            return
        for name in ("states", "ok", "failed", "cached", "skipped", "input_tokens"):
            self.span.set_attribute(f"toolnexus.batch.{name}", getattr(summary, name))
        self.span.set_attribute("toolnexus.batch.output_tokens", summary.output_tokens)
        if summary.budget_exceeded:
            self.span.set_attribute("toolnexus.batch.budget_exceeded", True)


def _configured(trace: Any) -> bool:
    """Whether the host (``opentelemetry-instrument``, a sitecustomize) set a real provider."""
    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


def _configure_sdk() -> Any:
    """Build the SDK's providers from the ``OTEL_*`` settings; the tracer provider, to flush."""
    try:
        from opentelemetry.sdk._configuration import _OTelSDKConfigurator
    except ImportError:
        from ..evaluate import INSTALL_HINT

        raise RunError(
            f"--otel needs opentelemetry-sdk and an exporter: {INSTALL_HINT} opentelemetry-sdk"
        ) from None
    try:
        # The SDK's own configurator: what opentelemetry-instrument runs (OTEL_TRACES_EXPORTER,
        # OTEL_METRICS_EXPORTER, OTEL_EXPORTER_OTLP_*, OTEL_SERVICE_NAME, ...).
        _OTelSDKConfigurator().configure()  # type: ignore[no-untyped-call]  # SDK: untyped
    except Exception as e:
        raise RunError(
            f"--otel: the OpenTelemetry SDK could not be configured from the OTEL_* settings "
            f"({type(e).__name__}: {e}); set OTEL_TRACES_EXPORTER (console, otlp with "
            "opentelemetry-exporter-otlp installed, or none)"
        ) from None
    from opentelemetry import trace

    return trace.get_tracer_provider()


def _flush() -> None:
    from opentelemetry import metrics, trace

    for provider in (trace.get_tracer_provider(), metrics.get_meter_provider()):
        flush = getattr(provider, "force_flush", None)
        if callable(flush):
            with contextlib.suppress(Exception):
                flush()


def prepare_telemetry(flag: bool) -> Any:
    """OpenTelemetry's ``trace`` module, the SDK configured, when telemetry is on (module
    docstring); None when it is off. ``flag`` (``otel=True``) without the API or the SDK is
    one line naming the extra (a ``RunError``, exit 2). ``batch`` calls it before anything
    else, as ever; a second call finds the SDK configured and does nothing more."""
    from ..evaluate import wanted

    if not wanted(True if flag else None):
        return None
    try:
        from opentelemetry import trace
    except ImportError:
        if not flag:
            return None  # asked by the environment alone, without the API: stay quiet
        from ..evaluate import INSTALL_HINT

        raise RunError(f"--otel needs opentelemetry-api: {INSTALL_HINT}") from None
    if not _configured(trace):
        _configure_sdk()
    return trace


@contextlib.contextmanager
def run_telemetry(flag: bool) -> Iterator[RunSpan]:
    """The run's span when telemetry is on (module docstring), flushed however the run ends."""
    trace = prepare_telemetry(flag)
    if trace is None:
        yield RunSpan()
        return
    tracer = trace.get_tracer("toolnexus")
    try:
        with tracer.start_as_current_span(
            "toolnexus batch", attributes={"gen_ai.operation.name": "systemone"}
        ) as span:
            yield RunSpan(span)
    finally:
        _flush()
