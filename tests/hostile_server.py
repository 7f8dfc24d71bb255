"""A System One server that misbehaves on purpose, on 127.0.0.1 port 0, for the hostile suite.

    with HostileServer() as server:
        server.answer = lambda req: Reply(200, body=b"bad credential: " + req.key.encode())
        ... POST {server.base_url}/systemone ...

``answer`` turns each request (its body, its headers and the key it carried) into a
:class:`Reply`: any status, any headers, any body bytes, optionally gzip-encoded with a
``Content-Encoding`` the body does not deserve. Unlike ``loopback.Loopback`` (a well-behaved
server with a few faults), nothing here is valid unless the test makes it so.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

__all__ = ["HostileServer", "Reply", "Request", "valid_answer"]


@dataclass(frozen=True)
class Request:
    """What the server received."""

    body: bytes
    headers: Mapping[str, str]

    @property
    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def key(self) -> str:
        """The bearer credential the client sent ('' when none)."""
        auth = self.headers.get("Authorization", "")
        return auth.removeprefix("Bearer ")


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    #: Send ``body`` gzip-compressed with ``Content-Encoding: gzip``.
    gzip: bool = False


def valid_answer(request: Any) -> dict[str, Any]:
    """A valid answer body for a parsed request: every question answered, one-hot."""
    answers: dict[str, Any] = {}
    for key, q in request["questions"].items():
        if q["type"] == "noul":
            answers[key] = {"type": "noul", "noul": 0.9}
        elif q["type"] == "choice":
            opts = list(q["criteria"])
            probs = {o: float(i == 0) for i, o in enumerate(opts)}
            answers[key] = {
                "type": "choice",
                "choice": opts[0],
                "probabilities": probs,
                "confidence": 0.9,
            }
        elif q["type"] == "score":
            n = len(q["criteria"])
            answers[key] = {
                "type": "score",
                "score": 0.0,
                "legend": {str(i): str(i) for i in range(n)},
                "probabilities": {str(i): float(i == 0) for i in range(n)},
                "confidence": 0.9,
            }
        else:
            answers[key] = {"type": q["type"]}
    return {
        "model": request["model"],
        "answers": answers,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }


def _default(req: Request) -> Reply:
    return Reply(200, json.dumps(valid_answer(req.json)).encode())


class HostileServer:
    """``answer`` decides every reply; ``seen`` keeps every request."""

    def __init__(self, answer: Callable[[Request], Reply] = _default) -> None:
        self.answer = answer
        self.seen: list[Request] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> HostileServer:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("hostile server did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    def _run(self) -> None:
        asyncio.run(self._serve())

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        app = web.Application(client_max_size=1 << 30)
        app.router.add_post("/v1/systemone", self._handle)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        server = site._server
        assert server is not None
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self._ready.set()
        await self._stop.wait()
        await runner.cleanup()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        req = Request(await request.read(), dict(request.headers))
        self.seen.append(req)
        reply = self.answer(req)
        body = gzip.compress(reply.body) if reply.gzip else reply.body
        headers = dict(reply.headers)
        if reply.gzip:
            headers["Content-Encoding"] = "gzip"
        headers.setdefault("Content-Type", "application/json")
        return web.Response(status=reply.status, body=body, headers=headers)
