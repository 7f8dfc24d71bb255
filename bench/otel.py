"""What OpenTelemetry costs a client (issue 23): per-request client CPU with OpenTelemetry
configured (the SDK, a span processor and a metric reader on in-memory exporters) beside the
same run without it, and, with OpenTelemetry installed but unused, start-up and per-request CPU
against the same process where ``telemetry=False`` (and the module not imported).

Against ``toolnexus serve --synthetic`` in its own process (its CPU is not counted), at
concurrency 16. CPU is ``time.process_time`` of this process. Targets: configured <= 1.3x;
installed but unused <= 1.02x and ``opentelemetry`` not in ``sys.modules``. Start-up is
``import toolnexus; create_classifier()`` in a fresh interpreter, best of several. It asserts
nothing: the figures depend on the machine.

The target row is the one this bench has always measured: ``SimpleSpanProcessor`` (each span
exported as it ends, on the caller's thread). ``BatchSpanProcessor``, what production uses, is
printed beside it. An in-memory exporter keeps every span, and the collector's passes over that
growing heap are a real share of the cost: every exporter is emptied before each measured run,
so each run carries its own spans only, whatever ran before it (as the first round always did).

The SDK's floor: the SDK calls one request makes, replayed bare (no toolnexus code) with the
attributes toolnexus exported for a real request, the cheapest way the SDK offers (every
attribute given at start, the attempt span never made current): per request in a loop, and
after each request of a run without OpenTelemetry (the ``on_metric`` hook), where it pays what
the real run pays for sharing the process with the client. What the configured run costs beyond
that second figure is toolnexus's own. A last row is a host that imported OpenTelemetry without
configuring an SDK: toolnexus records, on the API's no-op providers.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from _common import QUESTIONS, states

REQUESTS = 3000
ROUNDS = 3
CONCURRENCY = 16
#: Every in-memory span exporter made here, emptied before each measured run (module docstring).
_EXPORTERS: list[Any] = []
#: The tracer provider of each configured ``Telemetry`` (by id), flushed at the end of its own
#: run: a BatchSpanProcessor's thread would otherwise export a run's spans during the next
#: row's run, on that row's CPU (it showed as "API imported, no SDK" 1.09x with nothing to do).
_PROVIDERS: dict[int, Any] = {}


def _run(base_url: str, telemetry: Any) -> float:
    """One batch; client CPU milliseconds per request."""
    from toolnexus import create_classifier

    async def go() -> None:
        async with create_classifier(base_url=base_url, telemetry=telemetry) as judge:
            decisions = await judge.evaluate_batch(states(REQUESTS), QUESTIONS, CONCURRENCY)
            assert len(decisions) == REQUESTS

    _empty()
    cpu0 = time.process_time()
    asyncio.run(go())
    provider = _PROVIDERS.get(id(telemetry))
    if provider is not None:
        provider.force_flush()  # this run's spans, on this run's CPU
    return (time.process_time() - cpu0) / REQUESTS * 1000


def _empty() -> None:
    for exporter in _EXPORTERS:
        exporter.clear()


def _run_hooked(base_url: str, on_metric: Callable[[Any], None]) -> float:
    """One batch without OpenTelemetry, ``on_metric`` told of every event; ms per request."""
    from toolnexus import create_classifier

    async def go() -> None:
        async with create_classifier(
            base_url=base_url, telemetry=False, on_metric=on_metric
        ) as judge:
            decisions = await judge.evaluate_batch(states(REQUESTS), QUESTIONS, CONCURRENCY)
            assert len(decisions) == REQUESTS

    _empty()
    cpu0 = time.process_time()
    asyncio.run(go())
    return (time.process_time() - cpu0) / REQUESTS * 1000


def _configured(processor: str = "simple") -> Any:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from toolnexus.evaluate.telemetry import Telemetry

    tracer_provider = TracerProvider()
    kind = SimpleSpanProcessor if processor == "simple" else BatchSpanProcessor
    _EXPORTERS.append(InMemorySpanExporter())
    tracer_provider.add_span_processor(kind(_EXPORTERS[-1]))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    telemetry = Telemetry(tracer_provider=tracer_provider, meter_provider=meter_provider)
    _PROVIDERS[id(telemetry)] = tracer_provider
    return telemetry


def _api_only() -> Any:
    """What a host that imported OpenTelemetry without configuring an SDK gets: toolnexus
    records (:func:`toolnexus.evaluate.telemetry.wanted`) on the API's no-op providers."""
    from opentelemetry.metrics import NoOpMeterProvider
    from opentelemetry.trace import NoOpTracerProvider

    from toolnexus.evaluate.telemetry import Telemetry

    return Telemetry(tracer_provider=NoOpTracerProvider(), meter_provider=NoOpMeterProvider())


def _exported(base_url: str) -> tuple[Any, Any, list[tuple[str, float, dict[str, Any]]]]:
    """What toolnexus exports for one request: its evaluate span, its attempt span, and its
    metric points (instrument name, value, attributes)."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from toolnexus import create_classifier
    from toolnexus.evaluate.telemetry import Telemetry

    spans, reader = InMemorySpanExporter(), InMemoryMetricReader()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    telemetry = Telemetry(
        tracer_provider=tracer_provider, meter_provider=MeterProvider(metric_readers=[reader])
    )

    async def go() -> None:
        async with create_classifier(base_url=base_url, telemetry=telemetry) as judge:
            await judge.evaluate(states(1)[0], QUESTIONS)

    asyncio.run(go())
    attempt, evaluate = sorted(spans.get_finished_spans(), key=lambda s: s.name != "POST")
    points = [
        (m.name, p.sum, dict(p.attributes))
        for rm in reader.get_metrics_data().resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
        for p in m.data.data_points
    ]
    assert len(points) == 3, points
    return evaluate, attempt, points


def _bare(telemetry: Any, exported: Any) -> Callable[..., None]:
    """One request's SDK calls with ``exported``'s names and attributes, on ``telemetry``'s
    SDK tracer and instruments, with nothing of toolnexus on the call path."""
    from opentelemetry.trace import SpanKind, set_span_in_context

    evaluate, attempt, points = exported
    tracer = telemetry.tracer  # the SDK's own tracer and instruments, used bare
    instruments = {i.name: i for i in (telemetry.duration, telemetry.tokens)}
    records = [(instruments[name].record, value, attrs) for name, value, attrs in points]
    ev_name, ev_attrs = evaluate.name, dict(evaluate.attributes)
    http_attrs = dict(attempt.attributes)
    client = SpanKind.CLIENT

    def one(_event: Any = None) -> None:
        with tracer.start_as_current_span(
            ev_name, kind=client, attributes=ev_attrs, record_exception=False
        ) as span:
            tracer.start_span(
                "POST",
                context=set_span_in_context(span),
                kind=client,
                attributes=http_attrs,
                record_exception=False,
            ).end()
            for record, value, attrs in records:
                record(value, attributes=attrs)

    return one


def _floor_loop(one: Callable[[], None]) -> float:
    """CPU milliseconds of ``one()``, per call, called REQUESTS times in a row."""
    _empty()
    cpu0 = time.process_time()
    for _ in range(REQUESTS):
        one()
    return (time.process_time() - cpu0) / REQUESTS * 1000


def _startup(code: str, rounds: int = 7) -> float:
    """Best wall milliseconds of ``python -c code`` (a fresh interpreter each time)."""
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        best = min(best, time.perf_counter() - t0)
    return best * 1000


UNUSED_CHILD = """\
import sys, time, asyncio
sys.path.insert(0, "bench")
from otel import _run
base, mode = sys.argv[1], sys.argv[2]
best = min(_run(base, None if mode == "default" else False) for _ in range({rounds}))
print(best, "opentelemetry" in sys.modules)
"""


def _unused(base_url: str, mode: str) -> tuple[float, bool]:
    """Per-request CPU in a fresh process where nothing imported OpenTelemetry: ``default`` is
    ``telemetry=None`` (installed, not in use), ``off`` is ``telemetry=False``."""
    out = subprocess.run(
        [sys.executable, "-c", UNUSED_CHILD.format(rounds=ROUNDS), base_url, mode],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    return float(out[0]), out[1] == "True"


def main() -> None:
    server = subprocess.Popen(
        [sys.executable, "-m", "toolnexus", "serve", "--synthetic", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert server.stdout is not None
        base_url = server.stdout.readline().strip() + "/v1"
        print(f"{REQUESTS} requests, concurrency {CONCURRENCY}, best of {ROUNDS}", flush=True)
        _run(base_url, False)  # warm the server and the imports
        default, imported = _unused(base_url, "default")
        off_unused, _ = _unused(base_url, "off")
        telemetry, batched, api_only = _configured(), _configured("batch"), _api_only()
        exported = _exported(base_url)
        bare = _bare(_configured(), exported)
        hooked = _bare(_configured(), exported)

        def evaluate_only(event: Any) -> None:
            if event["event"] == "classifier.evaluate":
                hooked()

        cpu: dict[str, list[float]] = {k: [] for k in ("off", "on", "batch", "loop", "flow", "api")}
        for _ in range(ROUNDS):
            cpu["off"].append(_run(base_url, False))
            cpu["on"].append(_run(base_url, telemetry))
            cpu["batch"].append(_run(base_url, batched))
            cpu["loop"].append(_floor_loop(bare))
            cpu["flow"].append(_run_hooked(base_url, evaluate_only))
            cpu["api"].append(_run(base_url, api_only))
        off, on, batch, loop, flow, api = (min(cpu[k]) for k in cpu)
        print(f"without OpenTelemetry   {off:6.3f} ms/request")
        print(
            f"SDK + in-memory export  {on:6.3f} ms/request  {on / off:.2f}x (target <= 1.3x; "
            "SimpleSpanProcessor)"
        )
        print(f"  BatchSpanProcessor    {batch:6.3f} ms/request  {batch / off:.2f}x")
        print(
            f"SDK floor, bare calls   {loop:6.3f} ms/request in a loop: "
            f"{(off + loop) / off:.2f}x with the client's own"
        )
        print(
            f"  after each request    {flow:6.3f} ms/request  {flow / off:.2f}x; toolnexus's "
            f"own share {on - flow:+.3f} ms/request"
        )
        print(f"API imported, no SDK    {api:6.3f} ms/request  {api / off:.2f}x (no-op providers)")
        print(
            f"installed, unused       {default:6.3f} ms/request  {default / off_unused:.2f}x of "
            f"telemetry=False in the same kind of process (target <= 1.02x); "
            f"opentelemetry imported: {imported}"
        )
        plain = _startup("import toolnexus; toolnexus.create_classifier(telemetry=False)")
        unused = _startup("import toolnexus; toolnexus.create_classifier()")
        print(
            f"start-up, installed but unused {unused:.1f} ms vs switched off {plain:.1f} ms: "
            f"{unused / plain:.2f}x (target <= 1.02x)",
            flush=True,
        )
    finally:
        server.terminate()
        server.wait(10)


if __name__ == "__main__":
    main()
