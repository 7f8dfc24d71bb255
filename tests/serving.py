"""Helpers for the serve tests: run ``toolnexus.serve`` for one coroutine, post raw bodies."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx

from toolnexus.serve import ServeOptions, Server


@contextmanager
def refused_port() -> Iterator[int]:
    """A port of 127.0.0.1 that refuses every connection for as long as the block runs: bound,
    never listening. A port bound and closed again to find a free one (what the tests of a
    refused connection did) is free for anyone until the connect: a server the other xdist
    worker starts on port 0 can be given it, and the "refused" connection is answered (issue
    45: "a test still depends on something outside itself"). Held bound, no one can take it,
    ``SO_REUSEADDR`` or not."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield int(s.getsockname()[1])


class HeldClock:
    """A clock for a server's limits that stands still for its first ``reads`` readings, then
    runs: pass it as ``limits_clock`` (the server's own clock is read at start-up too).

    ``Limits.admit`` reads it once per API request, so against a limit of capacity C
    requests C+1..``reads`` are refused whatever the client's speed, and the run then finishes
    at the real rate: a limit that binds by construction (issue 29 item 2: "send 120 requests
    against a 100-request bucket refilling 100/s: they are throttled only if all 120 go out
    within 0.2 s"). Safe to read from any thread."""

    def __init__(self, reads: int) -> None:
        self._reads = reads
        self._count = 0
        self._lock = threading.Lock()
        self._start = time.monotonic()

    def __call__(self) -> float:
        with self._lock:
            self._count += 1
            held = self._count <= self._reads
        # After the hold, far past 0: every bucket refills at once, then time runs.
        return 0.0 if held else 1e6 + time.monotonic() - self._start


def run_with(
    options: ServeOptions,
    scenario: Callable[[Server], Awaitable[Any]],
    clock: Callable[[], float] = time.monotonic,
    limits_clock: Callable[[], float] | None = None,
) -> Any:
    """Start a server with ``options`` (its limits on ``clock``, or on ``limits_clock`` alone
    when given), run ``scenario(server)``, stop it, return the result."""

    async def go() -> Any:
        async with Server(options, clock=clock) as server:
            if limits_clock is not None:
                server.limits.clock = limits_clock
            return await scenario(server)

    return asyncio.run(go())


async def post(
    url: str,
    body: Any,
    *,
    path: str = "/v1/systemone",
    headers: dict[str, str] | None = None,
) -> httpx.Response:
    """POST ``body`` (JSON-encoded unless bytes) and return the response."""
    raw = body if isinstance(body, bytes) else json.dumps(body).encode("utf-8")
    sent = {"Content-Type": "application/json", **(headers or {})}
    # verify=False: plain http only, and it skips loading a CA bundle (~50 ms a client).
    async with httpx.AsyncClient(timeout=10, verify=False, trust_env=False) as client:
        return await client.post(url + path, content=raw, headers=sent)


def multipart(request: dict[str, Any], images: list[bytes], boundary: str = "b0undary") -> bytes:
    """The official SDK's multipart body: a ``request`` part, then ``asset-N`` parts."""
    chunks = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="request"\r\n'
        "Content-Type: application/json\r\n\r\n".encode(),
        json.dumps(request).encode("utf-8"),
        b"\r\n",
    ]
    for i, data in enumerate(images):
        chunks += [
            f'--{boundary}\r\nContent-Disposition: form-data; name="asset-{i}"; '
            f'filename="asset-{i}"\r\nContent-Type: image/png\r\n\r\n'.encode(),
            data,
            b"\r\n",
        ]
    chunks.append(f"--{boundary}--\r\n".encode())
    return b"".join(chunks)


class ThreadedServer:
    """A :class:`Server` on its own event loop in a background thread, for synchronous clients
    (the official SDK's sync client blocks the calling thread)."""

    def __init__(
        self,
        options: ServeOptions,
        clock: Callable[[], float] = time.monotonic,
        limits_clock: Callable[[], float] | None = None,
    ) -> None:
        self.server = Server(options, clock=clock)
        if limits_clock is not None:
            self.server.limits.clock = limits_clock
        self.seen: list[dict[str, str]] = []
        self.server.on_request = lambda _raw, headers: self.seen.append(dict(headers))
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    @property
    def url(self) -> str:
        return self.server.url

    def __enter__(self) -> ThreadedServer:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self.server.start(), self._loop).result(10)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self.server.stop(), self._loop).result(30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()
