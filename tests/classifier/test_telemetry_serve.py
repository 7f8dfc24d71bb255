"""OpenTelemetry hooked into the classifier and the transport (issue 23 item 3), exported to the
SDK's in-memory exporters, against ``toolnexus serve`` with scripted faults."""

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

from serving import run_with
from toolnexus import create_classifier, memory_cache
from toolnexus.evaluate.telemetry import Telemetry
from toolnexus.serve import ServeOptions, Server
from toolnexus.serve.script import ScriptedReply, ScriptedRequest

KEY = "sk-Tq7wX2pLv9Rk4Yb8Nc3MhZ"
SECRET_STATE = "the-state-text-Q9f3"
QUESTIONS = {"urgent": {"type": "noul", "instructions": "the ticket-question-text-W7x1 holds"}}


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


def _fail_first(n: int, status: int = 503) -> Any:
    """A script: the first ``n`` requests answer ``status``, then the synthetic model."""
    seen = [0]

    def script(req: ScriptedRequest) -> ScriptedReply | None:
        seen[0] += 1
        if seen[0] <= n:
            return ScriptedReply(status, b'{"detail": "busy"}', {"retry-after-ms": "0"})
        return None

    return script


def _evaluate(
    telemetry: Telemetry, script: Any, states: list[str], *, cache: Any = None, **kw: Any
) -> list[Any]:
    async def scenario(server: Server) -> list[Any]:
        async with create_classifier(
            base_url=f"{server.url.replace('http://', f'http://user:{KEY}@')}/v1",
            telemetry=telemetry,
            cache=cache,
            retry_base_ms=1,
            **kw,
        ) as classifier:
            return [await classifier.evaluate(s, QUESTIONS) for s in states]

    return run_with(ServeOptions(synthetic=True, script=script), scenario)


def _points(reader: InMemoryMetricReader) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    data = reader.get_metrics_data()
    for rm in data.resource_metrics if data else ():
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                out[m.name] = list(m.data.data_points)
    return out


def test_one_evaluate_span_with_one_child_per_http_attempt_and_its_resend_count(
    otel: Any,
) -> None:
    """'one child span per HTTP attempt with http.request.resend_count, the status and the
    request id'; the waits between them are events of the evaluate span."""
    telemetry, spans, reader = otel
    (decision,) = _evaluate(telemetry, _fail_first(2), [SECRET_STATE])
    finished = spans.get_finished_spans()
    (evaluate,) = [s for s in finished if s.name.startswith("systemone ")]
    attempts = [s for s in finished if s.name == "POST"]
    assert evaluate.name == "systemone jev-latest" and evaluate.kind is SpanKind.CLIENT
    assert evaluate.attributes["gen_ai.response.model"] == decision.model
    assert evaluate.attributes["gen_ai.usage.input_tokens"] == decision.usage.input_tokens
    assert evaluate.attributes["server.address"] == "127.0.0.1"
    flags = list(evaluate.attributes.get("toolnexus.flags", ()))
    assert flags == ([] if decision.calibrated else ["uncalibrated"])
    assert [a.attributes["http.request.resend_count"] for a in attempts] == [0, 1, 2]
    assert [a.attributes["http.response.status_code"] for a in attempts] == [503, 503, 200]
    assert all(a.attributes.get("toolnexus.request_id") for a in attempts)
    assert all(
        a.parent is not None and a.parent.span_id == evaluate.context.span_id for a in attempts
    )
    waits = [e for e in evaluate.events if e.name == "toolnexus.retry_wait"]
    assert [e.attributes["http.request.resend_count"] for e in waits] == [1, 2]
    points = _points(reader)
    (duration,) = points["gen_ai.client.operation.duration"]
    assert duration.count == 1 and duration.sum > 0
    tokens = {p.attributes["gen_ai.token.type"]: p.sum for p in points["gen_ai.client.token.usage"]}
    assert tokens == {
        "input": decision.usage.input_tokens,
        "output": decision.usage.output_tokens,
    }


def test_a_failed_evaluate_sets_error_type(otel: Any) -> None:
    telemetry, spans, _ = otel
    with pytest.raises(Exception, match="HTTP 400"):
        _evaluate(telemetry, _fail_first(1, 400), [SECRET_STATE])
    (evaluate,) = [s for s in spans.get_finished_spans() if s.name.startswith("systemone ")]
    assert evaluate.attributes["error.type"] == "HTTPStatusError"


def test_token_metrics_exclude_cached_answers(otel: Any) -> None:
    """'gen_ai.client.token.usage (input/output, billable tokens only: a cached answer is not
    billable)'."""
    telemetry, spans, reader = otel
    first, again = _evaluate(telemetry, None, [SECRET_STATE, SECRET_STATE], cache=memory_cache())
    assert again.cached and not first.cached
    tokens = {
        p.attributes["gen_ai.token.type"]: p for p in _points(reader)["gen_ai.client.token.usage"]
    }
    assert tokens["input"].count == 1 and tokens["input"].sum == first.usage.input_tokens
    cached = [s for s in spans.get_finished_spans() if s.attributes.get("toolnexus.cached") is True]
    assert len(cached) == 1


def test_nothing_of_the_state_questions_key_or_url_credentials_in_any_exported_data(
    otel: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """'no state, question text, answer or header in any span, event or metric by default';
    'credentials ... never in server.address or url.full'."""
    monkeypatch.setenv("GATEWAY_TOKEN", KEY)
    telemetry, spans, reader = otel
    _evaluate(telemetry, _fail_first(1), [SECRET_STATE], headers={"X-Gateway": "${GATEWAY_TOKEN}"})
    exported = (
        json.dumps([json.loads(s.to_json()) for s in spans.get_finished_spans()])
        + reader.get_metrics_data().to_json()
    )
    for secret in (KEY, KEY[4:12], SECRET_STATE, "ticket-question-text", "user:", "Bearer"):
        assert secret not in exported, secret
    assert "url.full" in exported and "127.0.0.1" in exported


def test_off_means_no_span(otel: Any) -> None:
    _, spans, _ = otel
    _evaluate(False, None, [SECRET_STATE])  # type: ignore[arg-type]
    assert spans.get_finished_spans() == ()


@pytest.mark.parametrize(
    ("code", "imported"),
    [
        pytest.param(
            "import toolnexus; toolnexus.create_classifier()", False, id="installed-unused"
        ),
        pytest.param(
            "import opentelemetry.trace, toolnexus; "
            "c = toolnexus.create_classifier(); assert c.pipeline.telemetry is not None",
            True,
            id="host-imported-it",
        ),
        pytest.param(
            "import toolnexus; c = toolnexus.create_classifier(telemetry=False)",
            False,
            id="switched-off",
        ),
    ],
)
def test_opentelemetry_is_imported_only_when_in_use(code: str, imported: bool) -> None:
    """'imported only when the host has already imported OpenTelemetry or telemetry is switched
    on, never merely because it is installed'."""
    env = {"PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-c", f"{code}; import sys; print('opentelemetry' in sys.modules)"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    assert out.stdout.strip() == str(imported)


def test_a_packed_requests_spans_are_linked_from_each_state_and_its_usage_recorded_once(
    otel: Any,
) -> None:
    """'a packed request's HTTP spans are linked from each of its states' spans, and its usage
    is recorded once per request, not once per state' (with evaluate_pack, against serve)."""
    from toolnexus.evaluate.packed import evaluate_pack

    telemetry, spans, reader = otel
    states = [f"{SECRET_STATE} {i}" for i in range(3)]

    async def scenario(server: Server) -> Any:
        async with create_classifier(
            base_url=f"{server.url}/v1", telemetry=telemetry, retry_base_ms=1
        ) as classifier:
            return await evaluate_pack(classifier.pipeline, states, classifier.prepare(QUESTIONS))

    outcome = run_with(ServeOptions(synthetic=True, script=_fail_first(1)), scenario)
    (request,) = outcome.requests
    finished = spans.get_finished_spans()
    (packed,) = [s for s in finished if s.attributes.get("toolnexus.pack") == 3 and not s.links]
    attempts = [s for s in finished if s.name == "POST"]
    assert [a.attributes["http.request.resend_count"] for a in attempts] == [0, 1]
    assert all(
        a.parent is not None and a.parent.span_id == packed.context.span_id for a in attempts
    )
    per_state = [s for s in finished if s.links]
    assert len(per_state) == 3
    assert all(s.links[0].context.span_id == packed.context.span_id for s in per_state)
    tokens = {
        p.attributes["gen_ai.token.type"]: p for p in _points(reader)["gen_ai.client.token.usage"]
    }
    assert tokens["input"].count == 1 and tokens["input"].sum == request.usage.input_tokens
    assert sum(s.attributes["gen_ai.usage.input_tokens"] for s in per_state) == (
        request.usage.input_tokens
    )


class _CountingTracer:
    """A no-op tracer (the API's) that counts the spans asked of it."""

    def __init__(self) -> None:
        from opentelemetry.trace import NoOpTracer

        self.started = 0
        self._tracer = NoOpTracer()

    def start_span(self, *args: Any, **kwargs: Any) -> Any:
        self.started += 1
        return self._tracer.start_span(*args, **kwargs)


def _noop_tracer_provider(tracer: _CountingTracer) -> Any:
    from opentelemetry.trace import NoOpTracerProvider

    class Provider(NoOpTracerProvider):
        def get_tracer(self, *args: Any, **kwargs: Any) -> Any:
            return tracer

    return Provider()


@pytest.mark.parametrize(
    ("tracing", "metering", "spans_asked", "durations"),
    [
        pytest.param("noop", "noop", 0, 0, id="both-noop-nothing-asked"),
        pytest.param("noop", "sdk", 2, 2, id="noop-tracer-sdk-meter-records"),
        pytest.param("sdk", "noop", 0, 0, id="sdk-tracer-noop-meter-records"),
    ],
)
def test_installed_but_unused_telemetry_asks_the_no_op_providers_nothing(
    tracing: str, metering: str, spans_asked: int, durations: int
) -> None:
    """Issue 45 (speed): 'OpenTelemetry installed but unused <= 1.02x'. On the API's no-op
    providers an evaluate makes no span and records no metric (what they would drop anyway);
    one real provider on either side and every evaluate records as before."""
    from opentelemetry.metrics import NoOpMeterProvider

    counting = _CountingTracer()
    spans, reader = InMemorySpanExporter(), InMemoryMetricReader()
    sdk_tracer = TracerProvider()
    sdk_tracer.add_span_processor(SimpleSpanProcessor(spans))
    sdk_meter = MeterProvider(metric_readers=[reader])
    telemetry = Telemetry(
        tracer_provider=_noop_tracer_provider(counting) if tracing == "noop" else sdk_tracer,
        meter_provider=NoOpMeterProvider() if metering == "noop" else sdk_meter,
    )
    assert telemetry.quiet() is (tracing == metering == "noop")
    decisions = _evaluate(telemetry, None, [SECRET_STATE, "another state"])
    assert len(decisions) == 2
    assert counting.started == spans_asked
    points = _points(reader).get("gen_ai.client.operation.duration", [])
    assert sum(p.count for p in points) == durations
    exported = [s for s in spans.get_finished_spans() if s.name.startswith("systemone ")]
    assert len(exported) == (2 if tracing == "sdk" else 0)
    sdk_meter.shutdown()
    sdk_tracer.shutdown()


def test_on_the_global_proxies_telemetry_is_quiet_until_the_host_sets_a_provider() -> None:
    """Issue 45 (speed): imported, no SDK: quiet, decided per evaluate in two identity checks,
    so a provider the host sets after the classifier was made is recorded on from then on."""
    code = (
        "from opentelemetry import metrics, trace\n"
        "from opentelemetry.sdk.metrics import MeterProvider\n"
        "from opentelemetry.sdk.trace import TracerProvider\n"
        "from toolnexus.evaluate.telemetry import Telemetry\n"
        "a, b = Telemetry(), Telemetry()\n"
        "before = (a.quiet(), b.quiet())\n"
        "metrics.set_meter_provider(MeterProvider())\n"
        "after_meter = a.quiet()\n"
        "trace.set_tracer_provider(TracerProvider())\n"
        "print(before, after_meter, b.quiet(), Telemetry().quiet())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.split("\n")[0] == "(True, True) False False False"


def test_a_hosts_own_telemetry_object_without_quiet_still_records(otel: Any) -> None:
    """``telemetry=`` takes any object with ``evaluate``; one without ``Telemetry.quiet``
    (issue 45 speed's check) is never taken for quiet and records every evaluate."""
    telemetry, spans, _ = otel

    class Own:
        def __init__(self) -> None:
            self.evaluated = 0

        def evaluate(self, **kwargs: Any) -> Any:
            self.evaluated += 1
            return telemetry.evaluate(**kwargs)

    own = Own()
    _evaluate(own, None, [SECRET_STATE])  # type: ignore[arg-type]
    assert own.evaluated == 1
    assert [s.name for s in spans.get_finished_spans() if s.name.startswith("systemone ")] == [
        "systemone jev-latest"
    ]
