"""A real System One server on 127.0.0.1, for integration tests and benches.

    with Loopback(latency=0.0) as server:
        classifier = create_classifier(base_url=server.base_url, retry_base_ms=1)
        ...
        server.push(Fault.http(429, retry_after="0"), Fault.reset())   # the next two requests
        server.count(body)                                             # requests seen for a body

``POST {base_url}/systemone`` answers from ``tests/fixtures/recordings-live/*.json`` when the
request's questions + state match a live capture, and otherwise with :func:`synthesize`:
deterministic, valid answers derived from the questions and the state, so any question set and
any number of states can be served (batches, benches) and a test can compute what it expects.

Faults (:class:`Fault`): an HTTP status with an optional ``Retry-After`` and body, a reset
connection (RST), a stall past the client's timeout, a truncated body, a non-JSON body, and a 401
whose body echoes the ``Authorization`` header (as gateways do). ``push`` queues faults for the
next requests in arrival order; ``fail_first_attempts`` faults the FIRST arrival of every body
whose digest falls in a fraction, so a retry of that body succeeds.

Why aiohttp.web in a background thread rather than the stdlib ThreadingHTTPServer: a latency of
20 ms at 16-way keep-alive concurrency is 16 sleeping coroutines here instead of 16 threads, the
server's CPU per request is far lower (the bench runs it in its own process, but on a 2-core
machine its CPU still competes with the client's), and a reset needs the raw socket, which
aiohttp exposes. aiohttp is already a runtime dependency, so nothing new is installed.

Run as a script (``python tests/loopback.py --latency-ms 20``) it prints its base URL on the first
line of stdout and serves until stdin closes: that is how ``bench/batch.py`` keeps the server's
CPU out of the client's measurement.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import socket
import struct
import sys
import threading
from collections import Counter, deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web

from paths import RECORDINGS_LIVE

__all__ = ["RECORDINGS_LIVE", "Fault", "Loopback", "body_digest", "recordings", "synthesize"]

#: What the server says answered when asked for the floating alias (as the live API does).
SERVED_FOR_LATEST = "jev-1.13.0"


def body_digest(body: bytes) -> str:
    """The key ``count`` uses: sha256 of the exact request bytes."""
    return hashlib.sha256(body).hexdigest()


def _content_key(questions: Any, state: Any) -> str:
    return json.dumps(
        {"questions": questions, "state": state},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )


def recordings(folder: Path = RECORDINGS_LIVE) -> list[dict[str, Any]]:
    """The live captures, each ``{"name", "request", "response"}`` (parsed JSON), sorted by name."""
    out = []
    for path in sorted(folder.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        out.append(
            {
                "name": path.stem,
                "request": json.loads(data["request_raw"]),
                "response": json.loads(data["response_raw"]),
            }
        )
    return out


def _h(*parts: Any) -> int:
    raw = json.dumps(parts, sort_keys=True, ensure_ascii=False).encode("utf-8")
    return int.from_bytes(hashlib.sha256(raw).digest()[:8], "big")


def synthesize(request: Mapping[str, Any]) -> dict[str, Any]:
    """A valid System One response body for any request ``{model, questions, state}``.

    Deterministic: each answer is derived from its question and the state, so two states get
    different answers and a test can compute the expected decision by calling this itself.
    Choice and score answers put probability 1.0 on one option, so they pass validate_decision.
    """
    state = request.get("state")
    answers: dict[str, Any] = {}
    for key, q in request["questions"].items():
        h = _h(q, state)
        qtype = q.get("type")
        if qtype == "noul":
            answers[key] = {"type": "noul", "noul": (h % 101) / 100}
        elif qtype == "choice":
            options = list(q["criteria"])
            pick = options[h % len(options)]
            answers[key] = {
                "type": "choice",
                "choice": pick,
                "confidence": 1.0,
                "probabilities": {o: (1.0 if o == pick else 0.0) for o in options},
            }
        elif qtype == "score":
            levels = q["criteria"]
            level = h % len(levels)
            answers[key] = {
                "type": "score",
                "score": float(level),
                "confidence": 1.0,
                "legend": {str(i): d for i, d in enumerate(levels)},
                "probabilities": {str(i): (1.0 if i == level else 0.0) for i in range(len(levels))},
            }
        else:
            answers[key] = {"type": qtype, "value": h % 7}
    model = request.get("model")
    return {
        "model": SERVED_FOR_LATEST if model == "jev-latest" else model,
        "answers": answers,
        "usage": {"input_tokens": 100 + len(answers), "output_tokens": 10 * len(answers)},
    }


@dataclass(frozen=True)
class Fault:
    """One injected failure. Build with the class methods, not the constructor."""

    kind: str
    status: int = 0
    retry_after: str | None = None
    body: bytes = b""
    seconds: float = 0.0

    @classmethod
    def http(cls, status: int, *, retry_after: str | None = None, body: Any = None) -> Fault:
        """Answer ``status`` (body: JSON-encoded unless bytes; default ``{"detail": ...}``)."""
        if body is None:
            body = {"detail": f"injected HTTP {status}"}
        raw = body if isinstance(body, bytes) else json.dumps(body).encode("utf-8")
        return cls("http", status=status, retry_after=retry_after, body=raw)

    @classmethod
    def reset(cls) -> Fault:
        """Abort the connection with a TCP RST before any response byte."""
        return cls("reset")

    @classmethod
    def stall(cls, seconds: float = 5.0) -> Fault:
        """Send nothing for ``seconds`` (ended early when the server stops), then answer."""
        return cls("stall", seconds=seconds)

    @classmethod
    def truncated(cls) -> Fault:
        """A 200 whose JSON body is cut in half (with an honest Content-Length)."""
        return cls("truncated")

    @classmethod
    def not_json(cls) -> Fault:
        """A 200 whose body is an HTML page."""
        return cls("not_json")

    @classmethod
    def echo_auth(cls, status: int = 401) -> Fault:
        """A 401/403 whose body echoes the Authorization header the client sent."""
        return cls("echo_auth", status=status)


class Loopback:
    """An HTTP/1.1 server on 127.0.0.1:<ephemeral>, in a background thread. Use as a context
    manager (or ``start()`` / ``stop()``). Counters are read after the client has finished."""

    def __init__(self, latency: float = 0.0, *, recordings_folder: Path = RECORDINGS_LIVE) -> None:
        self.latency = latency
        self.port = 0
        #: requests seen, per sha256 of the exact body bytes
        self.requests: Counter[str] = Counter()
        self.total = 0
        self.faults_injected = 0
        #: headers of the most recent requests (lower-case names), newest last
        self.headers: deque[dict[str, str]] = deque(maxlen=64)
        self._queue: deque[Fault] = deque()
        self._every: tuple[int, tuple[Fault, ...]] | None = None
        self._recorded: dict[str, dict[str, Any]] = {}
        if recordings_folder.is_dir():
            for r in recordings(recordings_folder):
                req = r["request"]
                self._recorded[_content_key(req["questions"], req["state"])] = r["response"]
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._failed: BaseException | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def push(self, *faults: Fault) -> None:
        """Fault the next ``len(faults)`` requests, in arrival order."""
        self._queue.extend(faults)

    def fail_first_attempts(self, every: int, faults: Iterable[Fault]) -> None:
        """Fault the first arrival of each body whose digest is 0 mod ``every`` (about 1 in
        ``every`` bodies), cycling through ``faults``; later arrivals of that body succeed."""
        self._every = (every, tuple(faults))

    def count(self, body: bytes) -> int:
        """How many requests carried exactly these bytes."""
        return self.requests[body_digest(body)]

    # --- lifecycle ------------------------------------------------------------------------

    def __enter__(self) -> Loopback:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="loopback", daemon=True)
        self._thread.start()
        if not self._ready.wait(10) or self._failed is not None:
            raise RuntimeError(f"loopback server did not start: {self._failed!r}")

    def stop(self) -> None:
        if self._loop is not None and self._stopping is not None:
            self._loop.call_soon_threadsafe(self._stopping.set)
        if self._thread is not None:
            self._thread.join(10)

    def _run(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as e:  # reported by start(), not lost in the thread
            self._failed = e
            self._ready.set()

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        app = web.Application()
        app.router.add_post("/{path:.*}", self._handle)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        server = site._server
        assert isinstance(server, asyncio.base_events.Server)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        await self._stopping.wait()
        await runner.cleanup()

    # --- answering ------------------------------------------------------------------------

    def _pick_fault(self, digest: str) -> Fault | None:
        if self._queue:
            return self._queue.popleft()
        if self._every is not None and self.requests[digest] == 1:
            every, faults = self._every
            n = int(digest[:12], 16)
            if n % every == 0:
                return faults[(n // every) % len(faults)]
        return None

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        digest = body_digest(body)
        self.requests[digest] += 1
        self.total += 1
        self.headers.append({k.lower(): v for k, v in request.headers.items()})
        if not request.path.endswith("/systemone"):
            return web.json_response({"detail": "Not Found"}, status=404)
        if self.latency:
            await asyncio.sleep(self.latency)
        fault = self._pick_fault(digest)
        if fault is not None:
            self.faults_injected += 1
            return await self._fault(request, fault, body)
        try:
            parsed = json.loads(body)
            key = _content_key(parsed["questions"], parsed["state"])
        except (ValueError, KeyError, TypeError):
            return web.json_response({"detail": "malformed request"}, status=400)
        answer = self._recorded.get(key)
        if answer is None:
            answer = synthesize(parsed)
        return self._json(200, json.dumps(answer).encode("utf-8"))

    @staticmethod
    def _json(status: int, raw: bytes, **headers: str) -> web.Response:
        headers["x-typesafe-request-id"] = "req_loopback_" + body_digest(raw)[:8]
        return web.Response(
            status=status, body=raw, content_type="application/json", headers=headers
        )

    async def _fault(self, request: web.Request, fault: Fault, body: bytes) -> web.StreamResponse:
        if fault.kind == "http":
            extra = {"Retry-After": fault.retry_after} if fault.retry_after is not None else {}
            return self._json(fault.status, fault.body, **extra)
        if fault.kind == "echo_auth":
            sent = request.headers.get("Authorization", "")
            raw = json.dumps({"error": {"type": "auth", "message": f"bad credential: {sent}"}})
            return self._json(fault.status, raw.encode("utf-8"))
        if fault.kind == "reset":
            transport = request.transport
            assert transport is not None
            sock = transport.get_extra_info("socket")
            # SO_LINGER with a zero timeout makes close() send RST instead of FIN.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            transport.abort()
            return web.Response(status=500)
        if fault.kind == "stall":
            assert self._stopping is not None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), fault.seconds)
            return self._json(200, json.dumps(synthesize(json.loads(body))).encode("utf-8"))
        if fault.kind == "truncated":
            raw = json.dumps(synthesize(json.loads(body))).encode("utf-8")
            return self._json(200, raw[: len(raw) // 2])
        if fault.kind == "not_json":
            return web.Response(status=200, body=b"<html><body>gateway says hi</body></html>")
        raise AssertionError(f"unknown fault {fault.kind}")


def main(argv: list[str]) -> None:
    """``python tests/loopback.py [--latency-ms N]``: print the base URL, serve until stdin
    closes."""
    latency_ms = float(argv[argv.index("--latency-ms") + 1]) if "--latency-ms" in argv else 0.0
    with Loopback(latency=latency_ms / 1000) as server:
        print(server.base_url, flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    main(sys.argv[1:])
