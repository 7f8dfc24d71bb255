"""The HTTP side of ``toolnexus serve``: routes, faults, auth, the access log, lifecycle.

Routes: ``POST /v1/systemone`` and ``GET /v1/models`` (the official SDK's host-root base URL),
the same under ``/systemone`` and ``/models`` (toolnexus's ``/v1`` base URL: hand a toolnexus
client ``{url}/v1``), and ``GET /_stats`` (requests by route and outcome). Every answer carries
``x-typesafe-request-id``. Why aiohttp.web: already a runtime dependency (the default client
transport), one event loop serves thousands of keep-alive connections, and a reset fault needs
the raw socket, which it exposes.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import os
import random
import secrets
import socket
import struct
import time
from collections import Counter, deque
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import aiohttp
from aiohttp import web

from ..defaults import DEFAULT_SERVE_FAULTS
from ..errors import ClassifierError
from ..printable import printable
from .faults import DEFAULT_RETRY_AFTER_MS, Fault
from .options import DEFAULT_MAX_BODY_BYTES, ServeOptions
from .proxy import Upstream, record_exchange
from .replay import ReplayIndex
from .rules import Reject
from .script import Script, ScriptedReply, ScriptedRequest
from .synthetic import synthesize
from .wire import WireRequest, read_request, zstd_decompressor

__all__ = ["MODELS", "Server", "serve"]

#: What ``GET /v1/models`` lists (pinned ids such as ``jev-1.13.0`` are accepted unlisted).
MODELS = (
    {
        "name": "jev-latest",
        "description": "General-purpose System One model (floating alias, Jev 1.13 today).",
        "release_date": "2026-09-17",
    },
    {
        "name": "jev-preview",
        "description": "Preview model with image and box support (Jev 1.14, experimental).",
        "release_date": "2026-11-02",
    },
)


def _request_id() -> str:
    return "req_serve_" + secrets.token_hex(10)


class Server:
    """One ``toolnexus serve`` server. ``async with Server(options) as server:`` binds it and
    ``server.url`` is its host-root URL (``http://127.0.0.1:PORT``).

    Test hooks (library use): :meth:`push` queues faults for the next API requests;
    ``fault_hook(raw_body, headers)`` may return a fault for a request; ``on_request(raw_body,
    headers)`` sees each API request as it arrives (headers with lower-case names);
    ``request_ids(answer_body)`` makes request ids predictable. ``stats`` counts requests by
    (route, outcome), as ``GET /_stats`` reports them; ``in_flight`` the requests being served.

    Misbehaving on purpose: ``script`` (also ``ServeOptions.script``) receives each API request
    that no fault took and that passed the key check, as a :class:`ScriptedRequest` (body after
    zstd decoding, headers, bearer key), and returns a :class:`ScriptedReply` (any status,
    headers and body bytes, optionally gzip, or a lying ``Content-Encoding``) or ``None`` for
    the normal answer. Scripted replies keep ``x-typesafe-request-id`` unless they set their
    own, are counted in ``stats`` as outcome ``scripted``, and are logged like any other (no
    Authorization, no body)."""

    def __init__(self, options: ServeOptions) -> None:
        options.check()
        self.options = options
        self.url = ""
        self.port = 0
        self.stats: Counter[tuple[str, str]] = Counter()
        self.in_flight = 0
        self.fault_hook: Callable[[bytes, Mapping[str, str]], Fault | None] | None = None
        self.on_request: Callable[[bytes, Mapping[str, str]], None] | None = None
        #: derive each answer's request id from its body bytes (default: random ids)
        self.request_ids: Callable[[bytes], str] | None = None
        #: a reply per API request, or None for the normal answer (see the class docstring)
        self.script: Script | None = options.script
        self._queue: deque[Fault] = deque()
        self._stamp_second = -1
        self._stamp = ""
        self._rng = random.Random(options.seed)
        self._faults = options.fault_list()
        self._key: str | None = None
        self._replay: ReplayIndex | None = None
        if isinstance(options.replay, ReplayIndex):
            self._replay = options.replay
        elif options.replay is not None:
            self._replay = ReplayIndex.load(options.replay)
        self._upstream = Upstream(options.proxy) if options.proxy is not None else None
        self._runner: web.AppRunner | None = None
        self._stopping = asyncio.Event()

    @property
    def mode(self) -> str:
        """``replay``, ``synthetic`` or ``proxy``, for the start-up line."""
        if self._replay is not None:
            return f"replay ({len(self._replay)} recordings from {self._replay.directory})"
        if self._upstream is not None:
            record = f", recording into {self.options.record}" if self.options.record else ""
            return f"proxy to {self._upstream.shown}{record}"
        return f"synthetic (seed {self.options.seed})"

    def push(self, *faults: Fault) -> None:
        """Fault the next ``len(faults)`` API requests, in arrival order."""
        self._queue.extend(faults)

    # --- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> str:
        """Bind and serve; return the URL. ``OSError`` when the address cannot be bound."""
        if self.options.require_key_env is not None:
            self._key = os.environ.get(self.options.require_key_env, "")
        app = web.Application(client_max_size=self.options.max_body_bytes + 1)
        for prefix in ("/v1", ""):
            app.router.add_post(f"{prefix}/systemone", self._systemone)
            app.router.add_get(f"{prefix}/models", self._models)
        app.router.add_get("/_stats", self._stats)
        app.router.add_route("*", "/{tail:.*}", self._not_found)
        # Bodies arrive as sent (auto_decompress off): serve decodes zstd itself, so it can answer
        # 415 without a codec, cap the decompressed size, and forward the exact bytes to a proxy.
        self._runner = web.AppRunner(
            app, access_log=None, handle_signals=False, auto_decompress=False, shutdown_timeout=30.0
        )
        await self._runner.setup()
        if self._upstream is not None:
            await self._upstream.start()
        site = web.TCPSite(self._runner, self.options.host, self.options.port)
        try:
            await site.start()
        except BaseException:
            await self.stop()
            raise
        server = site._server
        assert isinstance(server, asyncio.base_events.Server)
        self.port = server.sockets[0].getsockname()[1]
        host = self.options.host
        shown = f"[{host}]" if ":" in host else host
        self.url = f"http://{shown}:{self.port}"
        return self.url

    async def stop(self) -> None:
        """Stop accepting, end stalls, let in-flight requests finish, close."""
        self._stopping.set()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._upstream is not None:
            await self._upstream.close()

    async def __aenter__(self) -> Server:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # --- helpers -----------------------------------------------------------------------------

    def _log(
        self, request: web.Request, status: str, size: int, started: float, rid: str, outcome: str
    ) -> None:
        self.stats[(f"{request.method} {request.path}", outcome)] += 1
        out = self.options.access_log
        if out is None:
            return
        ms = (time.monotonic() - started) * 1000
        now = int(time.time())
        if now != self._stamp_second:  # one strftime per second, not per request
            self._stamp_second = now
            self._stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))
        stamp = self._stamp
        peer = request.remote or "-"
        # The request line, the status and sizes only: never a header value, never a body.
        # The path is the client's and the request id may be an upstream's: shown, not obeyed.
        line = (
            f'{stamp} {peer} "{request.method} {printable(request.path)}" {status} {size}B '
            f"{ms:.1f}ms {printable(rid)} {outcome}\n"
        )
        with contextlib.suppress(OSError, ValueError):
            out.write(line)
            out.flush()

    def _json(
        self,
        status: int,
        body: Any,
        rid: str,
        headers: Mapping[str, str] | None = None,
        raw: bytes | None = None,
    ) -> web.Response:
        data = raw if raw is not None else json.dumps(body, ensure_ascii=False).encode("utf-8")
        if self.request_ids is not None:
            rid = self.request_ids(data)
        out = {"x-typesafe-request-id": rid, **(headers or {})}
        return web.Response(status=status, body=data, content_type="application/json", headers=out)

    def _answer(
        self, request: web.Request, response: web.Response, started: float, rid: str, outcome: str
    ) -> web.Response:
        size = len(response.body) if isinstance(response.body, bytes) else 0
        rid = response.headers.get("x-typesafe-request-id", rid)
        self._log(request, str(response.status), size, started, rid, outcome)
        return response

    async def _read(self, request: web.Request) -> bytes:
        cap = self.options.max_body_bytes
        declared = request.content_length
        if declared is not None and declared > cap:
            raise Reject(
                413,
                {
                    "detail": f"Request body is {declared:,} bytes, over this "
                    f"server's limit of {cap:,} bytes (--max-body-bytes)."
                },
                "too_large",
            )
        if declared is not None:
            # The length is known and within the cap: one read (aiohttp's own cap, set at
            # max_body_bytes + 1 in start(), cannot trip).
            return await request.read()
        chunks: list[bytes] = []
        size = 0
        async for chunk in request.content.iter_any():
            size += len(chunk)
            if size > cap:
                raise Reject(
                    413,
                    {
                        "detail": f"Request body is over this server's limit of "
                        f"{cap:,} bytes (--max-body-bytes)."
                    },
                    "too_large",
                )
            chunks.append(chunk)
        return b"".join(chunks)

    def _pick_fault(self, raw: bytes, headers: Mapping[str, str]) -> Fault | None:
        if self._queue:
            return self._queue.popleft()
        if self.fault_hook is not None:
            fault = self.fault_hook(raw, headers)
            if fault is not None:
                return fault
        rate = self.options.fault_rate
        if rate > 0 and self._rng.random() < rate:
            return self._rng.choice(self._faults)
        return None

    def _authorized(self, request: web.Request) -> bool:
        if self._key is None:
            return True
        sent = request.headers.get("Authorization", "")
        want = f"Bearer {self._key}"
        return hmac.compare_digest(sent.encode("utf-8"), want.encode("utf-8"))

    async def _stall(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopping.wait(), seconds)

    def _fault_response(
        self, request: web.Request, fault: Fault, rid: str, answer: Callable[[], bytes]
    ) -> web.Response:
        """The response of an HTTP-level fault (resets and stalls are handled by the caller)."""
        if fault.kind == "http":
            headers: dict[str, str] = {}
            if fault.retry_after is not None:
                headers["Retry-After"] = fault.retry_after
            if fault.retry_after_ms is not None:
                headers["retry-after-ms"] = fault.retry_after_ms
            return self._json(fault.status, None, rid, headers, raw=fault.body)
        if fault.kind == "echo_auth":
            sent = request.headers.get("Authorization", "")
            body = {"error": {"type": "auth", "message": f"bad credential: {sent}"}}
            return self._json(fault.status, body, rid)
        if fault.kind == "truncated":
            data = answer()
            return self._json(200, None, rid, raw=data[: len(data) // 2])
        if fault.kind == "not_json":
            return web.Response(
                status=200,
                body=b"<html><body>gateway says hi</body></html>",
                content_type="text/html",
                headers={"x-typesafe-request-id": rid},
            )
        raise AssertionError(f"unknown fault {fault.kind}")

    @staticmethod
    def _reset(request: web.Request) -> None:
        transport = request.transport
        if transport is None:
            return
        sock = transport.get_extra_info("socket")
        if sock is not None:
            # SO_LINGER with a zero timeout makes close() send RST instead of FIN.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        transport.abort()

    # --- handlers ----------------------------------------------------------------------------

    async def _not_found(self, request: web.Request) -> web.Response:
        rid = _request_id()
        started = time.monotonic()
        return self._answer(
            request, self._json(404, {"detail": "Not Found"}, rid), started, rid, "not_found"
        )

    async def _stats(self, request: web.Request) -> web.Response:
        routes: dict[str, dict[str, int]] = {}
        for (route, outcome), n in sorted(self.stats.items()):
            routes.setdefault(route, {})[outcome] = n
        body = {"total": sum(self.stats.values()), "in_flight": self.in_flight, "routes": routes}
        return self._json(200, body, _request_id())

    async def _models(self, request: web.Request) -> web.StreamResponse:
        return await self._api(request, "models")

    async def _systemone(self, request: web.Request) -> web.StreamResponse:
        return await self._api(request, "systemone")

    async def _api(self, request: web.Request, endpoint: str) -> web.StreamResponse:
        rid = _request_id()
        started = time.monotonic()
        self.in_flight += 1
        try:
            return await self._api_inner(request, endpoint, rid, started)
        except Reject as e:
            return self._answer(request, self._json(e.status, e.body, rid), started, rid, e.outcome)
        finally:
            self.in_flight -= 1

    async def _api_inner(
        self, request: web.Request, endpoint: str, rid: str, started: float
    ) -> web.StreamResponse:
        raw = await self._read(request) if endpoint == "systemone" else b""
        # Lower-cased copies only for the test hooks: a measurable cost on every request.
        headers: Mapping[str, str] = (
            {k.lower(): v for k, v in request.headers.items()}
            if self.on_request is not None or self.fault_hook is not None
            else request.headers
        )
        if self.on_request is not None:
            self.on_request(raw, headers)
        if self.options.latency_ms:
            await asyncio.sleep(self.options.latency_ms / 1000)
        fault = self._pick_fault(raw, headers)
        if fault is not None and fault.kind == "reset":
            self._reset(request)
            self._log(request, "-", 0, started, rid, "fault:reset")
            return web.Response(status=500)
        if fault is not None and fault.kind == "stall":
            await self._stall(fault.seconds)
            fault = None
        if fault is not None:

            def answer() -> bytes:
                return json.dumps(self._local(self._parse(request, raw))).encode("utf-8")

            response = self._fault_response(request, fault, rid, answer)
            label = str(fault.status) if fault.status else fault.kind
            size = len(response.body) if isinstance(response.body, bytes) else 0
            self._log(request, str(response.status), size, started, rid, f"fault:{label}")
            return response
        if not self._authorized(request):
            # Nothing of the request is echoed: not the header, not the key.
            raise Reject(401, {"detail": "Invalid or missing API key."}, "unauthorized")
        if self.script is not None:
            scripted = self._scripted(request, endpoint, raw, rid, started)
            if scripted is not None:
                return scripted
        if self._upstream is not None:
            return await self._proxy(request, endpoint, raw, rid, started)
        if endpoint == "models":
            return self._answer(
                request, self._json(200, {"models": list(MODELS)}, rid), started, rid, "answered"
            )
        body = self._local(self._parse(request, raw))
        return self._answer(request, self._json(200, body, rid), started, rid, "answered")

    def _scripted(
        self, request: web.Request, endpoint: str, raw: bytes, rid: str, started: float
    ) -> web.Response | None:
        assert self.script is not None
        body = raw
        if request.headers.get("Content-Encoding", "").strip().lower() == "zstd":
            decompress = zstd_decompressor()
            if decompress is not None:
                body = decompress(raw, self.options.max_body_bytes)
        reply: ScriptedReply | None = self.script(
            ScriptedRequest(body=body, headers=request.headers, endpoint=endpoint)
        )
        if reply is None:
            return None
        data, headers = reply.wire()
        names = {k.lower() for k in headers}
        if "content-type" not in names:
            headers["Content-Type"] = "application/json"
        if "x-typesafe-request-id" not in names:
            headers["x-typesafe-request-id"] = (
                self.request_ids(data) if self.request_ids is not None else rid
            )
        response = web.Response(status=reply.status, body=data, headers=headers)
        sent_rid = response.headers["x-typesafe-request-id"]
        return self._answer(request, response, started, sent_rid, "scripted")

    def _parse(self, request: web.Request, raw: bytes) -> WireRequest:
        return read_request(
            raw,
            content_type=request.headers.get("Content-Type", "application/json"),
            content_encoding=request.headers.get("Content-Encoding", ""),
            max_body_bytes=self.options.max_body_bytes,
            allow_unknown_types=self._replay is None or self.options.replay_fallback_synthetic,
        )

    def _local(self, wire: WireRequest) -> Mapping[str, Any]:
        if self._replay is not None:
            hit = self._replay.find(wire)
            if hit is not None or not self.options.replay_fallback_synthetic:
                return self._replay.answer(wire)
        return synthesize(
            {"model": wire.model, "questions": wire.questions, "state": wire.state},
            seed=self.options.seed,
            state_key=wire.state_key(),
            images=len(wire.images),
        )

    async def _proxy(
        self, request: web.Request, endpoint: str, raw: bytes, rid: str, started: float
    ) -> web.StreamResponse:
        assert self._upstream is not None
        body = raw if request.method == "POST" else None
        try:
            status, data, headers = await self._upstream.forward(
                request.method, endpoint, request.headers, body
            )
        except (aiohttp.ClientError, TimeoutError) as e:
            kind = type(e).__name__
            raise Reject(
                502,
                {
                    "detail": f"proxy: no answer from {self._upstream.url(endpoint, shown=True)} ({kind})"
                },
                "proxy_error",
            ) from None
        headers.setdefault("x-typesafe-request-id", rid)
        outcome = f"proxied:{status}"
        if status == 200 and endpoint == "systemone" and self.options.record is not None:
            outcome += self._record(request, raw, data)
        response = web.Response(status=status, body=data, headers=headers)
        upstream_rid = headers["x-typesafe-request-id"]
        return self._answer(request, response, started, upstream_rid, outcome)

    def _record(self, request: web.Request, raw: bytes, data: bytes) -> str:
        assert self._upstream is not None and self.options.record is not None
        try:
            wire = read_request(
                raw,
                content_type=request.headers.get("Content-Type", "application/json"),
                content_encoding=request.headers.get("Content-Encoding", ""),
                max_body_bytes=self.options.max_body_bytes,
                allow_unknown_types=True,
            )
            record_exchange(
                self.options.record, self._upstream.url("systemone", shown=True), wire, data
            )
        except (Reject, ClassifierError) as e:
            detail = e.detail if isinstance(e, ClassifierError) else f"HTTP {e.status}"
            return f" not-recorded({' '.join(detail.split())[:120]})"
        return " recorded"


@contextlib.asynccontextmanager
async def serve(
    *,
    replay: str | Path | None = None,
    synthetic: bool = False,
    proxy: str | None = None,
    record: str | Path | None = None,
    seed: int = 0,
    host: str = "127.0.0.1",
    port: int = 0,
    latency_ms: float = 0.0,
    fault_rate: float = 0.0,
    faults: str | Sequence[Fault] = DEFAULT_SERVE_FAULTS,
    retry_after_ms: int = DEFAULT_RETRY_AFTER_MS,
    require_key_env: str | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    access_log: IO[str] | None = None,
    script: Script | None = None,
) -> AsyncIterator[str]:
    """A local System One server for a test suite: ``async with serve(synthetic=True) as url:``.

    ``url`` is the host root (``http://127.0.0.1:PORT``): the official SDK takes it as its
    ``base_url``; a toolnexus classifier takes ``f"{url}/v1"``. Options mirror the CLI's flags
    (``faults`` as ``"429,503,reset"`` or :class:`Fault` objects; ``script`` as on
    :class:`Server`, for replies no option describes). Stopped, with in-flight
    requests finished, when the block exits. Raises ``ConfigError`` for options that cannot
    work and ``OSError`` when the address cannot be bound.
    """
    options = ServeOptions(
        replay=replay,
        synthetic=synthetic,
        proxy=proxy,
        record=record,
        seed=seed,
        host=host,
        port=port,
        latency_ms=latency_ms,
        fault_rate=fault_rate,
        faults=faults,
        retry_after_ms=retry_after_ms,
        require_key_env=require_key_env,
        max_body_bytes=max_body_bytes,
        access_log=access_log,
        script=script,
    )
    async with Server(options) as server:
        yield server.url
