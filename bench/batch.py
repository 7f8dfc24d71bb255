"""2,000 states through ``evaluate_batch`` against a loopback server answering after 20 ms.

Prints, for each client, wall time, the ideal (2,000 x 20 ms / 16 = 2.5 s), their ratio, and the
client's CPU milliseconds per request (``time.process_time`` of THIS process; the server runs in
its own process so its CPU is not counted). Targets: wall <= 1.3x ideal, client CPU <= 1.0 ms per
request including canonical encoding, decoding and validation. It asserts nothing about time:
the figures depend on the machine, and the bench exists to choose the default transport.

Rows: toolnexus with its default transport; a bare aiohttp client posting precomputed bytes (the
floor: no encoding, no decoding); a bare ``httpx.AsyncClient`` on httpx's own transport; and
toolnexus forced onto httpx's own transport, which is what the default would cost without aiohttp.

Issue 45 (speed): "no slower in wall time than the official SDK in the same run". The last rows
run toolnexus and the official SDK (``typesafe_sdk.AsyncTypeSafeClient.system_one``, 16 workers
pulling states, as a user of the SDK would write it) alternately, ``ROUNDS`` times each, and
print the median of the per-round wall ratios: on a shared machine a neighbour's burst lands on
one round, not on all of them. Skipped when the SDK is not installed.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import aiohttp
import httpx

from _common import QUESTIONS, states
from toolnexus import create_classifier, validate_decision
from toolnexus.core.canonical import canonical_json

REPO = Path(__file__).resolve().parents[1]
STATES = 2000
LATENCY_MS = 20
CONCURRENCY = 16
IDEAL = STATES * LATENCY_MS / 1000 / CONCURRENCY
#: toolnexus / official SDK rounds, alternating (module docstring)
ROUNDS = 5


def measure(name: str, run: Callable[[], Awaitable[None]]) -> float:
    """Run once; print the row and return the wall seconds."""
    wall0, cpu0 = time.perf_counter(), time.process_time()
    asyncio.run(run())
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    print(
        f"{name:34} wall {wall:6.2f} s  ideal {IDEAL:.2f} s  ratio {wall / IDEAL:5.2f}x  "
        f"client cpu {cpu / STATES * 1000:5.2f} ms/request",
        flush=True,
    )
    return wall


async def official_sdk(base_url: str) -> None:
    """The official SDK's async client, ``CONCURRENCY`` workers pulling the same states (its
    own retry policy and connection pool; compression off, as the loopback reads JSON)."""
    from typesafe_sdk import AsyncTypeSafeClient

    root = base_url.removesuffix("/v1")  # the SDK appends /v1/systemone itself
    async with AsyncTypeSafeClient(api_key="sk-bench", base_url=root, compression=False) as sdk:
        pending = iter(states(STATES))
        answered = []

        async def worker() -> None:
            for state in pending:
                answered.append(await sdk.system_one(state, QUESTIONS, model="jev-latest"))

        await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
        assert len(answered) == STATES


def against_sdk(base_url: str) -> None:
    """toolnexus and the official SDK alternately, ``ROUNDS`` times: the median wall ratio."""
    try:
        import typesafe_sdk  # noqa: F401
    except ImportError:
        print("official SDK not installed: no toolnexus / SDK rows", flush=True)
        return
    ratios = []
    for _ in range(ROUNDS):
        ours = measure("toolnexus (default transport)", lambda: toolnexus_batch(base_url, None))
        theirs = measure("official SDK (typesafe_sdk)", lambda: official_sdk(base_url))
        ratios.append(ours / theirs)
    print(
        f"  toolnexus / official SDK wall, per round: {' '.join(f'{r:.2f}' for r in ratios)}; "
        f"median {statistics.median(ratios):.2f}x (target <= 1.0x)",
        flush=True,
    )


async def toolnexus_batch(base_url: str, transport: httpx.AsyncBaseTransport | None) -> None:
    async with create_classifier(base_url=base_url, transport=transport) as classifier:
        decisions = await classifier.evaluate_batch(states(STATES), QUESTIONS, CONCURRENCY)
        qs = classifier.prepare(QUESTIONS)
        # Validation is part of the per-request budget the issue sets.
        bad = [d for d in decisions if validate_decision(qs, d) is not None]
        assert len(decisions) == STATES and not bad


def precomputed_bodies() -> list[bytes]:
    return [
        canonical_json({"model": "jev-latest", "questions": QUESTIONS, "state": s})
        for s in states(STATES)
    ]


async def pump(bodies: list[bytes], post: Callable[[bytes], Awaitable[None]]) -> None:
    pending = iter(bodies)

    async def worker() -> None:
        for body in pending:
            await post(body)

    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))


async def bare_aiohttp(url: str, bodies: list[bytes]) -> None:
    async with aiohttp.ClientSession() as session:

        async def post(body: bytes) -> None:
            headers = {"Content-Type": "application/json"}
            async with session.post(url, data=body, headers=headers) as resp:
                json.loads(await resp.read())

        await pump(bodies, post)


async def bare_httpx(url: str, bodies: list[bytes]) -> None:
    async with httpx.AsyncClient() as client:

        async def post(body: bytes) -> None:
            resp = await client.post(
                url, content=body, headers={"Content-Type": "application/json"}
            )
            json.loads(resp.content)

        await pump(bodies, post)


def main() -> None:
    server = subprocess.Popen(
        [sys.executable, str(REPO / "tests" / "loopback.py"), "--latency-ms", str(LATENCY_MS)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        base_url = server.stdout.readline().strip()
        url = base_url + "/systemone"
        bodies = precomputed_bodies()
        print(
            f"{STATES} states, server latency {LATENCY_MS} ms, concurrency {CONCURRENCY}; "
            "server in its own process",
            flush=True,
        )
        asyncio.run(bare_aiohttp(url, bodies[:200]))  # warm the server and the imports
        measure("toolnexus (default transport)", lambda: toolnexus_batch(base_url, None))
        measure("bare aiohttp, precomputed bytes", lambda: bare_aiohttp(url, bodies))
        measure("bare httpx.AsyncClient", lambda: bare_httpx(url, bodies))
        measure(
            "toolnexus on httpx's own transport",
            lambda: toolnexus_batch(base_url, httpx.AsyncHTTPTransport()),
        )
        against_sdk(base_url)
    finally:
        if server.stdin is not None:
            server.stdin.close()
        server.wait(10)


if __name__ == "__main__":
    main()
