"""The cross-cutting work of every answer, as aiohttp middlewares, outermost first:

1. :func:`observe` (every route but ``/_stats``): a request id, the :class:`Exchange` that the
   inner layers fill in, a refused request (:class:`Reject`) turned into its JSON answer, the
   ``x-typesafe-request-id`` header, the stats and the access-log line;
2. :func:`intake` (API routes): the body read under ``--max-body-bytes``, the ``on_request``
   test hook, ``--latency-ms``;
3. :func:`faults`: an injected fault (queued, hooked or drawn at ``--fault-rate``);
4. :func:`auth`: ``--require-key-env``'s key check, a 401 that echoes nothing;
5. :func:`limits`: ``--rate-limit`` / ``--token-limit`` per key, a 429 like the live API's.

Then the route's handler answers (``server.py``). Each layer reads what it needs from the
:class:`Host` (the server: options, hooks, counters), never from aiohttp's privates.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import secrets
import socket
import struct
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from ..core import printable
from .faults import Fault
from .limits import Limits, key_label
from .options import ServeOptions
from .rules import Reject
from .synthetic import input_tokens
from .wire import WireRequest

__all__ = [
    "API_ROUTES",
    "EXCHANGE",
    "Exchange",
    "Host",
    "Stats",
    "json_response",
    "middlewares",
    "request_id",
]

#: The API's routes (both base URLs) and the endpoint each one is.
API_ROUTES = {
    "/v1/systemone": "systemone",
    "/systemone": "systemone",
    "/v1/models": "models",
    "/models": "models",
}
STATS_ROUTE = "/_stats"
RID_HEADER = "x-typesafe-request-id"


def request_id() -> str:
    return "req_serve_" + secrets.token_hex(10)


@dataclass
class Exchange:
    """One request as the layers see it: its id, when it arrived, its endpoint (``None`` off
    the API), the bearer key it carried, its body, and how it ended (``outcome``, the stats'
    and the log's word; ``note``, more for the log line only)."""

    rid: str
    started: float
    endpoint: str | None
    key: str
    raw: bytes = b""
    headers: Mapping[str, str] = field(default_factory=dict)
    outcome: str = "answered"
    note: str = ""
    reset: bool = False
    wire: WireRequest | None = None


#: The token counts ``/_stats`` totals from the answers this server made.
_USAGE_FIELDS = ("input_tokens", "output_tokens")

EXCHANGE = web.RequestKey("toolnexus.serve.exchange", Exchange)


@dataclass
class Stats:
    """What ``GET /_stats`` reports: requests by (route, outcome), API answers by status, the
    429s the limits sent, requests and 429s per key (by :func:`key_label`), and the ``usage``
    this server's own answers charged (replay and synthetic; a proxied answer is upstream's)."""

    routes: Counter[tuple[str, str]] = field(default_factory=Counter)
    statuses: Counter[str] = field(default_factory=Counter)
    limited: Counter[str] = field(default_factory=Counter)
    keys: dict[str, Counter[str]] = field(default_factory=dict)
    usage: Counter[str] = field(default_factory=Counter)

    def charge(self, answer: Mapping[str, Any]) -> None:
        """Add an answer's ``usage`` token counts to the totals."""
        usage = answer.get("usage")
        if isinstance(usage, Mapping):
            for name in _USAGE_FIELDS:
                value = usage.get(name)
                if isinstance(value, int) and not isinstance(value, bool):
                    self.usage[name] += value

    def body(self, in_flight: int) -> dict[str, Any]:
        routes: dict[str, dict[str, int]] = {}
        for (route, outcome), n in sorted(self.routes.items()):
            routes.setdefault(route, {})[outcome] = n
        return {
            "total": sum(self.routes.values()),
            "in_flight": in_flight,
            "routes": routes,
            "statuses": dict(sorted(self.statuses.items())),
            "limited": {"requests": self.limited["requests"], "tokens": self.limited["tokens"]},
            "usage": {name: self.usage[name] for name in _USAGE_FIELDS},
            "keys": {
                label: {"requests": c["requests"], "limited": c["limited"]}
                for label, c in sorted(self.keys.items())
            },
        }


class Host(Protocol):
    """What the layers read from the server."""

    options: ServeOptions
    stats: Counter[tuple[str, str]]
    traffic: Stats
    in_flight: int
    limits: Limits
    fault_hook: Callable[[bytes, Mapping[str, str]], Fault | None] | None
    on_request: Callable[[bytes, Mapping[str, str]], None] | None
    request_ids: Callable[[bytes], str] | None
    stopping: asyncio.Event

    def next_fault(self, raw: bytes, headers: Mapping[str, str]) -> Fault | None: ...

    def wire(self, request: web.Request, exchange: Exchange) -> WireRequest: ...


def json_response(
    status: int, body: Any, headers: Mapping[str, str] | None = None, raw: bytes | None = None
) -> web.Response:
    data = raw if raw is not None else json.dumps(body, ensure_ascii=False).encode("utf-8")
    return web.Response(
        status=status, body=data, content_type="application/json", headers=dict(headers or {})
    )


def _bearer(request: web.Request) -> str:
    scheme, _, value = request.headers.get("Authorization", "").partition(" ")
    return value.strip() if scheme.lower() == "bearer" else ""


class _Log:
    """The access log: one line per request, one strftime per second (not per request)."""

    def __init__(self) -> None:
        self._second = -1
        self._stamp = ""

    def write(self, out: Any, request: web.Request, status: str, size: int, ex: Exchange) -> None:
        ms = (time.monotonic() - ex.started) * 1000
        now = int(time.time())
        if now != self._second:
            self._second = now
            self._stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))
        peer = request.remote or "-"
        note = f" {ex.note}" if ex.note else ""
        # The request line, the status and sizes only: never a header value, never a body.
        # The path is the client's and the request id may be an upstream's: shown, not obeyed.
        line = (
            f'{self._stamp} {peer} "{request.method} {printable(request.path)}" {status} '
            f"{size}B {ms:.1f}ms {printable(ex.rid)} {ex.outcome}{note}\n"
        )
        with contextlib.suppress(OSError, ValueError):
            out.write(line)
            out.flush()


def observe(host: Host) -> Middleware:
    log = _Log()

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        route = request.match_info.route.resource
        path = route.canonical if route is not None else ""
        if path == STATS_ROUTE:
            return await handler(request)
        endpoint = API_ROUTES.get(path)
        ex = Exchange(request_id(), time.monotonic(), endpoint, _bearer(request))
        request[EXCHANGE] = ex
        if endpoint is not None:
            host.in_flight += 1
        try:
            response = await handler(request)
        except Reject as e:
            response = json_response(e.status, e.body, e.headers)
            ex.outcome = e.outcome
        finally:
            if endpoint is not None:
                host.in_flight -= 1
        body = response.body if isinstance(response, web.Response) else None
        data = body if isinstance(body, bytes) else b""
        if RID_HEADER not in response.headers:
            hook = host.request_ids
            response.headers[RID_HEADER] = hook(data) if hook is not None else ex.rid
        ex.rid = response.headers[RID_HEADER]
        status = "-" if ex.reset else str(response.status)
        traffic = host.traffic
        host.stats[(f"{request.method} {request.path}", ex.outcome)] += 1
        if endpoint is not None:
            traffic.statuses[status] += 1
            counts = traffic.keys.setdefault(key_label(ex.key), Counter())
            counts["requests"] += 1
            if ex.outcome.startswith("limited:"):
                counts["limited"] += 1
        out = host.options.access_log
        if out is not None:
            log.write(out, request, status, 0 if ex.reset else len(data), ex)
        return response

    return middleware


def _api(request: web.Request) -> Exchange | None:
    """The exchange of an API request; ``None`` on every other route, which the API's layers
    pass straight through (checked inline: a wrapping coroutine per layer cost measurably)."""
    ex = request.get(EXCHANGE)
    return ex if ex is not None and ex.endpoint is not None else None


def intake(host: Host) -> Middleware:
    @web.middleware
    async def layer(request: web.Request, handler: Handler) -> web.StreamResponse:
        ex = _api(request)
        if ex is None:
            return await handler(request)
        if ex.endpoint == "systemone":
            ex.raw = await _read(request, host.options.max_body_bytes)
        # Lower-cased copies only for the test hooks: a measurable cost on every request.
        hooked = host.on_request is not None or host.fault_hook is not None
        ex.headers = (
            {k.lower(): v for k, v in request.headers.items()} if hooked else request.headers
        )
        if host.on_request is not None:
            host.on_request(ex.raw, ex.headers)
        if host.options.latency_ms:
            await asyncio.sleep(host.options.latency_ms / 1000)
        return await handler(request)

    return layer


def _too_large(detail: str) -> Reject:
    return Reject(413, {"detail": detail}, "too_large")


async def _read(request: web.Request, cap: int) -> bytes:
    declared = request.content_length
    if declared is not None and declared > cap:
        raise _too_large(
            f"Request body is {declared:,} bytes, over this server's limit of {cap:,} bytes "
            "(--max-body-bytes)."
        )
    if declared is not None:
        # Known and within the cap: one read (aiohttp's own cap, max_body_bytes + 1, cannot trip).
        return await request.read()
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.content.iter_any():
        size += len(chunk)
        if size > cap:
            raise _too_large(
                f"Request body is over this server's limit of {cap:,} bytes (--max-body-bytes)."
            )
        chunks.append(chunk)
    return b"".join(chunks)


def faults(host: Host) -> Middleware:
    @web.middleware
    async def layer(request: web.Request, handler: Handler) -> web.StreamResponse:
        ex = _api(request)
        if ex is None:
            return await handler(request)
        fault = host.next_fault(ex.raw, ex.headers)
        if fault is None:
            return await handler(request)
        if fault.kind == "reset":
            _reset(request)
            ex.reset, ex.outcome = True, "fault:reset"
            return web.Response(status=500)  # never sent: the connection is gone
        if fault.kind == "stall":
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(host.stopping.wait(), fault.seconds)
            return await handler(request)
        response = await _fault_response(request, fault, handler)
        ex.outcome = f"fault:{fault.status or fault.kind}"
        return response

    return layer


async def _fault_response(request: web.Request, fault: Fault, handler: Handler) -> web.Response:
    """The response of an HTTP-level fault (resets and stalls are handled by the caller)."""
    if fault.kind == "http":
        headers: dict[str, str] = {}
        if fault.retry_after is not None:
            headers["Retry-After"] = fault.retry_after
        if fault.retry_after_ms is not None:
            headers["retry-after-ms"] = fault.retry_after_ms
        return json_response(fault.status, None, headers, raw=fault.body)
    if fault.kind == "echo_auth":
        sent = request.headers.get("Authorization", "")
        return json_response(
            fault.status, {"error": {"type": "auth", "message": f"bad credential: {sent}"}}
        )
    if fault.kind == "truncated":
        whole = await handler(request)
        data = whole.body if isinstance(whole, web.Response) else None
        data = data if isinstance(data, bytes) else b""
        return json_response(200, None, raw=data[: len(data) // 2])
    if fault.kind == "not_json":
        return web.Response(
            status=200,
            body=b"<html><body>gateway says hi</body></html>",
            content_type="text/html",
        )
    raise AssertionError(f"unknown fault {fault.kind}")


def _reset(request: web.Request) -> None:
    transport = request.transport
    if transport is None:
        return
    sock = transport.get_extra_info("socket")
    if sock is not None:
        # SO_LINGER with a zero timeout makes close() send RST instead of FIN.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    transport.abort()


def auth(key: str) -> Middleware:
    want = f"Bearer {key}".encode()

    @web.middleware
    async def layer(request: web.Request, handler: Handler) -> web.StreamResponse:
        if _api(request) is not None:
            header = request.headers.get("Authorization", "")
            sent = header.encode("utf-8", "surrogateescape")
            if not hmac.compare_digest(sent, want):
                # Nothing of the request is echoed. The shape is jevcompat's reference server's
                # (detail.error_type), unverified against the live API (issue 33).
                message = "Invalid API key." if header else "Missing API key."
                detail = {"error_type": "authentication_error", "message": message}
                raise Reject(401, {"detail": detail}, "unauthorized")
        return await handler(request)

    return layer


def limits(host: Host) -> Middleware:
    @web.middleware
    async def layer(request: web.Request, handler: Handler) -> web.StreamResponse:
        ex = _api(request)
        if ex is None:
            return await handler(request)
        gate = host.limits
        tokens = 0
        if gate.counts_tokens and ex.endpoint == "systemone":
            with contextlib.suppress(Reject):  # an invalid request is refused by the handler
                wire = host.wire(request, ex)
                tokens = input_tokens(wire.state_key(), wire.questions, len(wire.images))
        refusal = gate.admit(ex.key, tokens)
        if refusal is None:
            return await handler(request)
        host.traffic.limited[refusal.limit] += 1
        raise Reject(429, refusal.body, f"limited:{refusal.limit}", refusal.headers)

    return layer


def middlewares(host: Host, key: str | None) -> list[Middleware]:
    """The layers in order, outermost first (see the module docstring). The key check and the
    limits are left out when there is no key to check and no limit to keep."""
    layers = [observe(host), intake(host), faults(host)]
    if key is not None:
        layers.append(auth(key))
    if host.limits.active:
        layers.append(limits(host))
    return layers
