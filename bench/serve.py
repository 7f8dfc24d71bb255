"""``toolnexus serve --synthetic`` under toolnexus's batch client, beside the floor.

The client is toolnexus's ``evaluate_batch`` at 64 requests in flight (per-request latency from
its ``classifier.evaluate`` metric events). It runs against two servers, each in its own
process: ``toolnexus serve --synthetic --port 0`` (parsing, validating and synthesizing every
request, writing its access log to a discarded stderr), and the floor, a minimal aiohttp.web
handler that answers every POST with one precomputed body. Prints requests per second and
p50/p99 latency for each, and serve's share of the floor's requests per second (target: at
least 0.7x), and each server's CPU milliseconds per request (from ``/proc``), which shows
whether serve could ever be the bottleneck of ``bench/batch.py``. Both rounds run twice,
alternating, and the better of each is kept: the machine may be shared. It asserts nothing
about time.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _common import QUESTIONS, states
from toolnexus import create_classifier
from toolnexus.serve import synthesize

REPO = Path(__file__).resolve().parents[1]
#: states a case sends; ``TOOLNEXUS_BENCH_STATES`` sets another (an A/B of two commits ran
#: 20,000: at 3,000 a case lasts about a second and one round's ratio moved by 25%)
STATES = int(os.environ.get("TOOLNEXUS_BENCH_STATES", "3000"))
CONCURRENCY = 64


def floor_main() -> None:
    """The floor: answer every POST with one fixed body; print the base URL; serve until stdin
    closes."""
    from aiohttp import web

    body = json.dumps(
        synthesize({"model": "jev-latest", "questions": QUESTIONS, "state": states(1)[0]})
    ).encode("utf-8")

    async def handle(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(body=body, content_type="application/json",
                            headers={"x-typesafe-request-id": "req_floor"})  # fmt: skip

    async def serve() -> None:
        app = web.Application()
        app.router.add_post("/{tail:.*}", handle)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        print(f"http://127.0.0.1:{port}", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
        await runner.cleanup()

    asyncio.run(serve())


def start(kind: str) -> tuple[subprocess.Popen[str], str]:
    if kind == "floor":
        cmd = [sys.executable, __file__, "--floor"]
    else:
        cmd = [str(REPO / ".venv" / "bin" / "toolnexus"), "serve", "--synthetic", "--port", "0"]
        if not os.path.exists(cmd[0]):
            cmd = [sys.executable, "-m", "toolnexus", "serve", "--synthetic", "--port", "0"]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)  # fmt: skip
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


def stop(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGTERM)
    if proc.stdin is not None:
        proc.stdin.close()
    proc.wait(30)


async def batch(url: str, n: int) -> tuple[float, list[float]]:
    latencies: list[float] = []

    def on_metric(event: dict[str, Any]) -> None:
        if event.get("event") == "classifier.evaluate":
            latencies.append(float(event["ms"]))

    async with create_classifier(base_url=f"{url}/v1", on_metric=on_metric,
                                 api_key_env="BENCH_NO_KEY") as judge:  # fmt: skip
        start_time = time.perf_counter()
        decisions = await judge.evaluate_batch(states(n), QUESTIONS, CONCURRENCY)
        wall = time.perf_counter() - start_time
    assert len(decisions) == n
    return wall, latencies


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process (Linux ``/proc``), or NaN elsewhere."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return math.nan
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(kind: str) -> tuple[float, float, float, float]:
    """Requests per second, p50 and p99 latency (ms), and the server's CPU ms per request:
    the one figure another process's load barely moves."""
    proc, url = start(kind)
    try:
        asyncio.run(batch(url, 300))  # warm the server, the pool and the imports
        cpu0 = cpu_seconds(proc.pid)
        wall, latencies = asyncio.run(batch(url, STATES))
        cpu = cpu_seconds(proc.pid) - cpu0
    finally:
        stop(proc)
    cuts = statistics.quantiles(latencies, n=100)
    return STATES / wall, cuts[49], cuts[98], cpu / STATES * 1000


def main() -> None:
    print(f"{STATES} states through evaluate_batch, {CONCURRENCY} in flight; each server in its "
          "own process", flush=True)  # fmt: skip
    best: dict[str, tuple[float, float, float, float]] = {}
    for _ in range(2):
        for kind in ("floor", "serve"):
            got = measure(kind)
            if kind not in best or got[0] > best[kind][0]:
                best[kind] = got
    labels = {"floor": "floor (fixed-body aiohttp.web)", "serve": "toolnexus serve --synthetic"}
    for kind, (rps, p50, p99, cpu) in best.items():
        print(
            f"{labels[kind]:32} {rps:8.0f} req/s  p50 {p50:6.1f} ms  p99 {p99:6.1f} ms  "
            f"server cpu {cpu:5.2f} ms/request"
        )
    ratio = best["serve"][0] / best["floor"][0]
    print(f"serve / floor requests per second: {ratio:.2f}x (target >= 0.7x)")


if __name__ == "__main__":
    if "--floor" in sys.argv[1:]:
        floor_main()
    else:
        main()
