"""What OpenTelemetry costs a client (issue 23): per-request client CPU with OpenTelemetry
configured (the SDK, a span processor and a metric reader on in-memory exporters) beside the
same run without it, and, with OpenTelemetry installed but unused, start-up and per-request CPU
against the same process where ``telemetry=False`` (and the module not imported).

Against ``toolnexus serve --synthetic`` in its own process (its CPU is not counted), at
concurrency 16. CPU is ``time.process_time`` of this process. Targets: configured <= 1.3x;
installed but unused <= 1.02x and ``opentelemetry`` not in ``sys.modules``. Start-up is
``import toolnexus; create_classifier()`` in a fresh interpreter, best of several. It asserts
nothing: the figures depend on the machine.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from typing import Any

from _common import QUESTIONS, states

REQUESTS = 3000
ROUNDS = 3
CONCURRENCY = 16


def _run(base_url: str, telemetry: Any) -> float:
    """One batch; client CPU milliseconds per request."""
    from toolnexus import create_classifier

    async def go() -> None:
        async with create_classifier(base_url=base_url, telemetry=telemetry) as judge:
            decisions = await judge.evaluate_batch(states(REQUESTS), QUESTIONS, CONCURRENCY)
            assert len(decisions) == REQUESTS

    cpu0 = time.process_time()
    asyncio.run(go())
    return (time.process_time() - cpu0) / REQUESTS * 1000


def _configured() -> Any:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from toolnexus.telemetry import Telemetry

    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    return Telemetry(tracer_provider=tracer_provider, meter_provider=meter_provider)


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
        on = off_unused = default = 0.0
        imported = False
        cpu_off, cpu_on = [], []
        _run(base_url, False)  # warm the server and the imports
        default, imported = _unused(base_url, "default")
        off_unused, _ = _unused(base_url, "off")
        telemetry = _configured()
        for _ in range(ROUNDS):
            cpu_off.append(_run(base_url, False))
            cpu_on.append(_run(base_url, telemetry))
        on, off = min(cpu_on), min(cpu_off)
        print(f"without OpenTelemetry   {off:6.3f} ms/request")
        print(f"SDK + in-memory export  {on:6.3f} ms/request  {on / off:.2f}x (target <= 1.3x)")
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
