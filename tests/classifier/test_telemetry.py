"""OpenTelemetry spans and metrics (issue 23 item 3), with the SDK's in-memory exporters."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="platform: opentelemetry-sdk is not installed")

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from toolnexus.evaluate.telemetry import (
    CAPTURE_CONTENT_ENV,
    DURATION_BUCKETS,
    TOKEN_BUCKETS,
    Telemetry,
    wanted,
)
from toolnexus.evaluate.telemetry_attrs import endpoint_attributes

KEY = "sk-Zq8vX3pLw0Rt7Yb2Nc5MkQ"


@pytest.fixture
def otel() -> Iterator[tuple[Telemetry, InMemorySpanExporter, InMemoryMetricReader]]:
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    yield Telemetry(tracer_provider=tracer_provider, meter_provider=meter_provider), spans, reader
    meter_provider.shutdown()
    tracer_provider.shutdown()


def _metrics(reader: InMemoryMetricReader) -> dict[str, list[Any]]:
    data = reader.get_metrics_data()
    out: dict[str, list[Any]] = {}
    for rm in data.resource_metrics:
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                out[m.name] = list(m.data.data_points)
    return out


def test_one_span_per_evaluate_named_by_the_conventions_rule(otel: Any) -> None:
    telemetry, spans, reader = otel
    with telemetry.evaluate(
        model="jev-latest", endpoint="https://api.typesafe.ai/v1", questions=3
    ) as ev:
        with ev.attempt() as attempt:
            attempt.response(503, "r-1")
        with ev.attempt() as attempt:
            attempt.response(200, "r-2")
        ev.decided(response_model="jev-1.13.0", input_tokens=516, output_tokens=72, cached=False)
    finished = {s.name: s for s in spans.get_finished_spans()}
    span = finished["systemone jev-latest"]
    assert span.kind is SpanKind.CLIENT
    assert span.attributes["gen_ai.operation.name"] == "systemone"
    assert span.attributes["gen_ai.provider.name"] == "typesafe"
    assert span.attributes["gen_ai.request.model"] == "jev-latest"
    assert span.attributes["gen_ai.response.model"] == "jev-1.13.0"
    assert span.attributes["gen_ai.usage.input_tokens"] == 516
    assert span.attributes["server.address"] == "api.typesafe.ai"
    assert span.attributes["server.port"] == 443
    assert span.attributes["toolnexus.questions"] == 3
    attempts = [s for s in spans.get_finished_spans() if s.name == "POST"]
    assert [a.attributes["http.request.resend_count"] for a in attempts] == [0, 1]
    assert [a.attributes["http.response.status_code"] for a in attempts] == [503, 200]
    assert all(a.parent.span_id == span.context.span_id for a in attempts)
    metrics = _metrics(reader)
    (duration,) = metrics["gen_ai.client.operation.duration"]
    assert tuple(duration.explicit_bounds) == DURATION_BUCKETS
    tokens = metrics["gen_ai.client.token.usage"]
    assert tuple(tokens[0].explicit_bounds) == TOKEN_BUCKETS
    assert sorted((p.attributes["gen_ai.token.type"], p.sum) for p in tokens) == [
        ("input", 516),
        ("output", 72),
    ]


def test_a_cached_answer_is_not_billable(otel: Any) -> None:
    telemetry, _, reader = otel
    with telemetry.evaluate(model="m", endpoint="http://127.0.0.1:9/v1", questions=1) as ev:
        ev.decided(response_model="m", input_tokens=500, output_tokens=50, cached=True)
    assert "gen_ai.client.token.usage" not in _metrics(reader)


def test_a_failure_sets_error_type_on_the_span_and_the_duration(otel: Any) -> None:
    telemetry, spans, reader = otel
    with (
        pytest.raises(TimeoutError),
        telemetry.evaluate(model="m", endpoint="http://127.0.0.1:9/v1", questions=1),
    ):
        raise TimeoutError
    (span,) = spans.get_finished_spans()
    assert span.attributes["error.type"] == "TimeoutError"
    (duration,) = _metrics(reader)["gen_ai.client.operation.duration"]
    assert duration.attributes["error.type"] == "TimeoutError"


def test_a_packed_requests_usage_is_recorded_once_and_linked_from_each_state(otel: Any) -> None:
    telemetry, spans, reader = otel
    with telemetry.packed_request(model="m", endpoint="http://127.0.0.1:9/v1", states=3) as req:
        with req.attempt() as attempt:
            attempt.response(200, "r-9")
        req.decided(response_model="m", input_tokens=900, output_tokens=90, cached=False)
    link = req.span.get_span_context()
    for _ in range(3):
        with telemetry.evaluate(
            model="m", endpoint="http://127.0.0.1:9/v1", questions=2, pack=3, links=[link]
        ) as ev:
            ev.decided(
                response_model="m",
                input_tokens=300,
                output_tokens=30,
                cached=False,
                billed_here=False,
            )
    states = [s for s in spans.get_finished_spans() if s.attributes.get("toolnexus.pack") == 3]
    per_state = [s for s in states if s.attributes["toolnexus.questions"] == 2]
    assert len(per_state) == 3
    assert all(s.links[0].context.span_id == link.span_id for s in per_state)
    tokens = _metrics(reader)["gen_ai.client.token.usage"]
    assert sorted((p.attributes["gen_ai.token.type"], p.count, p.sum) for p in tokens) == [
        ("input", 1, 900),
        ("output", 1, 90),
    ]
    (duration,) = _metrics(reader)["gen_ai.client.operation.duration"]
    assert duration.count == 3  # the states are the operations, not the request


@pytest.mark.parametrize(
    "url",
    [
        pytest.param(f"https://user:{KEY}@api.example.test/v1", id="userinfo"),
        pytest.param(f"https://api.example.test/v1?key={KEY}", id="query"),
        pytest.param(f"https://u:{KEY.replace('-', '%2D')}@api.example.test/v1", id="pct"),
        pytest.param(f"https://api.example.test/v1#{KEY}", id="fragment"),
    ],
)
def test_no_credential_reaches_any_exported_data(otel: Any, url: str) -> None:
    telemetry, spans, reader = otel
    with telemetry.evaluate(model="m", endpoint=url, questions=1) as ev:
        ev.content(state="the state")  # content capture is off: nothing is added
        with ev.attempt() as attempt:
            attempt.response(401, "r-1")
        ev.decided(response_model="m", input_tokens=1, output_tokens=1, cached=False)
    exported = json.dumps(
        [s.to_json() for s in spans.get_finished_spans()] + [reader.get_metrics_data().to_json()]
    )
    for i in range(len(KEY) - 7):
        assert KEY[i : i + 8] not in exported
    assert "the state" not in exported
    assert endpoint_attributes(url)["url.full"] == "https://api.example.test/v1"


def test_content_is_recorded_only_with_the_conventions_switch() -> None:
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    telemetry = Telemetry(tracer_provider=provider, environ={CAPTURE_CONTENT_ENV: "true"})
    with telemetry.evaluate(model="m", endpoint="http://127.0.0.1:9/v1", questions=1) as ev:
        ev.content(state="the state")
    (span,) = spans.get_finished_spans()
    assert span.attributes["toolnexus.state"] == "the state"


def test_an_error_s_words_describe_its_status_only_with_the_content_switch() -> None:
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    telemetry = Telemetry(tracer_provider=provider, environ={CAPTURE_CONTENT_ENV: "true"})
    with (
        pytest.raises(TimeoutError),
        telemetry.evaluate(model="m", endpoint="http://127.0.0.1:9/v1", questions=1),
    ):
        raise TimeoutError("no answer")
    (span,) = spans.get_finished_spans()
    assert span.status.description == "TimeoutError: no answer"


def test_wanted_only_when_switched_on_or_already_imported() -> None:
    assert wanted(True, {}) and not wanted(False, {})
    assert wanted(None, {"OTEL_TRACES_EXPORTER": "otlp"})
    code = (
        "import sys; from toolnexus.evaluate.telemetry import wanted; "
        "print(wanted(None, {}), 'opentelemetry' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_the_evaluate_span_is_current_inside_so_the_hosts_own_spans_nest_under_it(
    otel: Any,
) -> None:
    """Made current by hand, not by the SDK's context manager: an HTTP library's own
    instrumentation inside an evaluate still makes its span a child of the evaluate's, and the
    metrics recorded inside take it as their exemplar; outside, the host's context is back."""
    from opentelemetry import trace

    telemetry, spans, reader = otel
    host = trace.get_current_span()
    with telemetry.evaluate(model="m", endpoint="http://127.0.0.1:9/v1", questions=1) as ev:
        assert trace.get_current_span() is ev.span
        telemetry.tracer.start_span("GET").end()  # what a library's instrumentation would do
        ev.decided(response_model="m", input_tokens=5, output_tokens=1, cached=False)
    assert trace.get_current_span() is host
    finished = {s.name: s for s in spans.get_finished_spans()}
    evaluate = finished["systemone m"]
    assert finished["GET"].parent is not None
    assert finished["GET"].parent.span_id == evaluate.context.span_id
    (duration,) = _metrics(reader)["gen_ai.client.operation.duration"]
    assert [e.span_id for e in duration.exemplars] == [evaluate.context.span_id]


@pytest.mark.parametrize(
    ("error", "description"),
    [
        pytest.param(TimeoutError("state: card 4242"), "TimeoutError", id="exc"),
        pytest.param(KeyboardInterrupt(), None, id="base-exception"),
    ],
)
def test_a_failure_sets_an_error_status_described_by_its_type_only(
    otel: Any, error: BaseException, description: str | None
) -> None:
    """'error.type on failure', an ERROR status, and 'no state, question text, answer or header
    in any span ... by default': the description is the Exception's type, never its words (a
    server's error message may quote the state); a BaseException gets none."""
    from opentelemetry.trace import StatusCode

    telemetry, spans, _ = otel
    with (
        pytest.raises(type(error)),
        telemetry.evaluate(model="m", endpoint="http://127.0.0.1:9/v1", questions=1),
    ):
        raise error
    (span,) = spans.get_finished_spans()
    assert span.status.status_code is StatusCode.ERROR
    assert span.status.description == description
    assert span.attributes["error.type"] == type(error).__name__


def test_a_span_the_sampler_drops_still_has_its_metrics_and_no_attempt_spans() -> None:
    """The metrics are 'gen_ai.client.operation.duration' and 'gen_ai.client.token.usage' for
    every operation, sampled or not; a dropped evaluate span gets no attempt spans (under
    parent-based sampling, the SDK's default, they would be dropped too)."""
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

    spans, reader = InMemorySpanExporter(), InMemoryMetricReader()
    provider = TracerProvider(sampler=ALWAYS_OFF)
    provider.add_span_processor(SimpleSpanProcessor(spans))
    telemetry = Telemetry(
        tracer_provider=provider, meter_provider=MeterProvider(metric_readers=[reader])
    )
    with telemetry.evaluate(model="m", endpoint="http://127.0.0.1:9/v1", questions=1) as ev:
        assert ev.observer().attempt(0) is None
        ev.decided(response_model="m", input_tokens=7, output_tokens=2, cached=False)
    assert spans.get_finished_spans() == ()
    metrics = _metrics(reader)
    assert [p.count for p in metrics["gen_ai.client.operation.duration"]] == [1]
    assert sorted(p.sum for p in metrics["gen_ai.client.token.usage"]) == [2, 7]
