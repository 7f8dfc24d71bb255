"""The HTTP side of ``toolnexus serve``: routes, answer sources, lifecycle.

Routes: ``POST /v1/systemone`` and ``GET /v1/models`` (the official SDK's host-root base URL),
the same under ``/systemone`` and ``/models`` (toolnexus's ``/v1`` base URL: hand a toolnexus
client ``{url}/v1``), and ``GET /_stats`` (see :class:`~toolnexus.serve.middleware.Stats`).
Every answer carries ``x-typesafe-request-id``. Faults, the key check, the limits, request ids,
the access log and the stats are middlewares (``middleware.py``); the handlers here only
answer. Why aiohttp.web: already a runtime dependency (the default client transport), one event
loop serves thousands of keep-alive connections, and a reset fault needs the raw socket, which
it exposes.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import os
import random
import time
from collections import Counter, deque
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import ParamSpec

import aiohttp
from aiohttp import web

from ..core import ClassifierError
from .faults import Fault
from .limits import Limits
from .middleware import EXCHANGE, Exchange, Stats, json_response, middlewares, request_id
from .options import ServeOptions
from .proxy import Upstream, record_exchange
from .replay import QUESTION_SET_DIGEST, ReplayIndex
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


class Server:
    """One ``toolnexus serve`` server. ``async with Server(options) as server:`` binds it and
    ``server.url`` is its host-root URL (``http://127.0.0.1:PORT``).

    Test hooks (library use): :meth:`push` queues faults for the next API requests;
    ``fault_hook(raw_body, headers)`` may return a fault for a request; ``on_request(raw_body,
    headers)`` sees each API request as it arrives (headers with lower-case names);
    ``request_ids(answer_body)`` makes request ids predictable; ``clock`` (seconds, default
    ``time.monotonic``) drives the limits' buckets. ``stats`` counts requests by (route,
    outcome); ``traffic`` is everything ``GET /_stats`` reports; ``in_flight`` the requests
    being served.

    Misbehaving on purpose: ``script`` (also ``ServeOptions.script``) receives each API request
    that no fault took, that passed the key check and the limits, as a :class:`ScriptedRequest`
    (body after zstd decoding, headers, bearer key), and returns a :class:`ScriptedReply` (any
    status, headers and body bytes, optionally gzip, or a lying ``Content-Encoding``) or
    ``None`` for the normal answer. Scripted replies keep ``x-typesafe-request-id`` unless they
    set their own, are counted in ``stats`` as outcome ``scripted``, and are logged like any
    other (no Authorization, no body)."""

    def __init__(
        self, options: ServeOptions, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        options.check()
        self.options = options
        self.url = ""
        self.port = 0
        self.traffic = Stats()
        self.stats: Counter[tuple[str, str]] = self.traffic.routes
        self.in_flight = 0
        self.limits: Limits = options.limits(clock)
        self.clock = clock
        #: the blackouts and rate changes of ``--blackout`` / ``--rate-change``, timed from start
        self.storm = options.storm()
        self.started = clock()
        self.fault_hook: Callable[[bytes, Mapping[str, str]], Fault | None] | None = None
        self.on_request: Callable[[bytes, Mapping[str, str]], None] | None = None
        #: derive each answer's request id from its body bytes (default: random ids)
        self.request_ids: Callable[[bytes], str] | None = None
        #: a reply per API request, or None for the normal answer (see the class docstring)
        self.script: Script | None = options.script
        self.stopping = asyncio.Event()
        self._queue: deque[Fault] = deque()
        self._rng = random.Random(options.seed)
        self._faults = options.fault_list()
        self._replay: ReplayIndex | None = None
        if isinstance(options.replay, ReplayIndex):
            self._replay = options.replay
        elif options.replay is not None:
            self._replay = ReplayIndex.load(options.replay)
        self._upstream = Upstream(options.proxy) if options.proxy is not None else None
        self._runner: web.AppRunner | None = None

    @property
    def mode(self) -> str:
        """``replay``, ``synthetic`` or ``proxy`` and any limits, for the start-up line (never a
        credential)."""
        if self._replay is not None:
            mode = f"replay ({len(self._replay)} recordings from {self._replay.directory})"
        elif self._upstream is not None:
            record = f", recording into {self.options.record}" if self.options.record else ""
            mode = f"proxy to {self._upstream.shown}{record}"
        else:
            mode = f"synthetic (seed {self.options.seed})"
        limits = [x for x in (self.options.rate_limit, self.options.token_limit) if x is not None]
        return mode + (f", limits per key {' and '.join(limits)}" if limits else "")

    def push(self, *faults: Fault) -> None:
        """Fault the next ``len(faults)`` API requests, in arrival order."""
        self._queue.extend(faults)

    def next_fault(self, raw: bytes, headers: Mapping[str, str]) -> Fault | None:
        """The fault for this request: queued first, then a blackout's, then the hook's, then
        a draw. A scheduled rate change takes effect here, before the limits see the request."""
        if self._queue:
            return self._queue.popleft()
        if self.storm.active:
            elapsed = self.clock() - self.started
            rate = self.storm.rate_at(elapsed)
            if rate is not None:
                self.limits.set_requests_per_second(rate)
            fault = self.storm.fault_at(elapsed)
            if fault is not None:
                return fault
        if self.fault_hook is not None:
            fault = self.fault_hook(raw, headers)
            if fault is not None:
                return fault
        rate = self.options.fault_rate
        if rate > 0 and self._rng.random() < rate:
            return self._rng.choice(self._faults)
        return None

    # --- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> str:
        """Bind and serve; return the URL. ``OSError`` when the address cannot be bound. A
        storm's times count from here."""
        self.started = self.clock()
        key = None
        if self.options.require_key_env is not None:
            key = os.environ.get(self.options.require_key_env, "")
        app = web.Application(
            client_max_size=self.options.max_body_bytes + 1, middlewares=middlewares(self, key)
        )
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
        self.port = self._runner.addresses[0][1]
        host = self.options.host
        shown = f"[{host}]" if ":" in host else host
        self.url = f"http://{shown}:{self.port}"
        return self.url

    async def stop(self) -> None:
        """Stop accepting, end stalls, let in-flight requests finish, close."""
        self.stopping.set()
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

    # --- handlers ----------------------------------------------------------------------------

    async def _not_found(self, request: web.Request) -> web.Response:
        request[EXCHANGE].outcome = "not_found"
        return json_response(404, {"detail": "Not Found"})

    async def _stats(self, request: web.Request) -> web.Response:
        body = self.traffic.body(self.in_flight)
        return json_response(200, body, {"x-typesafe-request-id": request_id()})

    async def _models(self, request: web.Request) -> web.StreamResponse:
        ex = request[EXCHANGE]
        scripted = self._scripted(request, ex) if self.script is not None else None
        if scripted is not None:
            return scripted
        if self._upstream is not None:
            return await self._proxy(request, ex)
        return json_response(200, {"models": list(MODELS)})

    async def _systemone(self, request: web.Request) -> web.StreamResponse:
        ex = request[EXCHANGE]
        scripted = self._scripted(request, ex) if self.script is not None else None
        if scripted is not None:
            return scripted
        if self._upstream is not None:
            return await self._proxy(request, ex)
        answer = self._local(request, ex)
        self.traffic.charge(answer)
        return json_response(200, answer)

    # --- answer sources ----------------------------------------------------------------------

    def _scripted(self, request: web.Request, ex: Exchange) -> web.Response | None:
        assert self.script is not None and ex.endpoint is not None
        body = ex.raw
        if request.headers.get("Content-Encoding", "").strip().lower() == "zstd":
            decompress = zstd_decompressor()
            if decompress is not None:
                body = decompress(ex.raw, self.options.max_body_bytes)
        reply: ScriptedReply | None = self.script(
            ScriptedRequest(
                body=body,
                headers=request.headers,
                endpoint=ex.endpoint,
                elapsed=self.clock() - self.started,
            )
        )
        if reply is None:
            return None
        data, headers = reply.wire()
        names = {k.lower() for k in headers}
        if "content-type" not in names:
            headers["Content-Type"] = "application/json"
        ex.outcome = "scripted"
        return web.Response(status=reply.status, body=data, headers=headers)

    def wire(self, request: web.Request, exchange: Exchange) -> WireRequest:
        """The request's body as a :class:`WireRequest`, parsed once per request; a
        :class:`Reject` (4xx) when the API would refuse it."""
        if exchange.wire is None:
            exchange.wire = read_request(
                exchange.raw,
                content_type=request.headers.get("Content-Type", "application/json"),
                content_encoding=request.headers.get("Content-Encoding", ""),
                max_body_bytes=self.options.max_body_bytes,
                allow_unknown_types=self._replay is None or self.options.replay_fallback_synthetic,
            )
        return exchange.wire

    def _local(self, request: web.Request, ex: Exchange) -> Mapping[str, object]:
        wire = self.wire(request, ex)
        if self._replay is not None:
            hit = self._replay.find(wire)
            if hit is not None:
                return hit
            if not self.options.replay_fallback_synthetic:
                miss = self._replay.miss(wire)
                ex.note = f"{QUESTION_SET_DIGEST} {miss.body['questions_sha256'][:12]}"
                raise miss
        body = synthesize(
            {"model": wire.model, "questions": wire.questions, "state": wire.state},
            seed=self.options.seed,
            state_key=wire.state_key(),
            images=len(wire.images),
            key_of=wire.key_of,
        )
        if self.options.cost_per_mtok:
            # As a gateway reports it: usage.cost in USD for the tokens billed.
            usage = body["usage"]
            tokens = usage["input_tokens"] + usage["output_tokens"]
            usage["cost"] = round(tokens * self.options.cost_per_mtok / 1_000_000, 12)
        return body

    async def _proxy(self, request: web.Request, ex: Exchange) -> web.StreamResponse:
        assert self._upstream is not None and ex.endpoint is not None
        endpoint = ex.endpoint
        body = ex.raw if request.method == "POST" else None
        try:
            status, data, headers = await self._upstream.forward(
                request.method, endpoint, request.headers, body
            )
        except (aiohttp.ClientError, TimeoutError) as e:
            where = self._upstream.url(endpoint, shown=True)
            raise Reject(
                502,
                {"detail": f"proxy: no answer from {where} ({type(e).__name__})"},
                "proxy_error",
            ) from None
        ex.outcome = f"proxied:{status}"
        if status == 200 and endpoint == "systemone" and self.options.record is not None:
            ex.outcome += self._record(request, ex, data)
        return web.Response(status=status, body=data, headers=headers)

    def _record(self, request: web.Request, ex: Exchange, data: bytes) -> str:
        assert self._upstream is not None and self.options.record is not None
        try:
            wire = self.wire(request, ex)
            endpoint = self._upstream.url("systemone", shown=True)
            secrets = self._upstream.secrets(request.headers.get("Authorization"))
            record_exchange(self.options.record, endpoint, wire, data, secrets)
        except (Reject, ClassifierError) as e:
            detail = e.detail if isinstance(e, ClassifierError) else f"HTTP {e.status}"
            return f" not-recorded({' '.join(detail.split())[:120]})"
        return " recorded"


P = ParamSpec("P")


def _taking(
    make: Callable[P, ServeOptions],
) -> Callable[
    [Callable[[ServeOptions], AbstractAsyncContextManager[str]]],
    Callable[P, AbstractAsyncContextManager[str]],
]:
    """Give a function of a :class:`ServeOptions` the options' own keyword signature, so the
    field list is written once (in ``options.py``) and mypy checks every call."""

    def decorate(
        run: Callable[[ServeOptions], AbstractAsyncContextManager[str]],
    ) -> Callable[P, AbstractAsyncContextManager[str]]:
        @functools.wraps(run)
        def call(*args: P.args, **kwargs: P.kwargs) -> AbstractAsyncContextManager[str]:
            return run(make(*args, **kwargs))

        # help(serve) and inspect show the fields, not ``options``.
        call.__signature__ = inspect.signature(make)  # type: ignore[attr-defined]
        return call

    return decorate


@_taking(ServeOptions)
@contextlib.asynccontextmanager
async def serve(options: ServeOptions) -> AsyncIterator[str]:
    """A local System One server for a test suite: ``async with serve(synthetic=True) as url:``.

    Takes exactly :class:`ServeOptions`' fields, by keyword (the CLI's flags are the same
    fields: ``faults`` as ``"429,503,reset"`` or :class:`Fault` objects, ``rate_limit`` as
    ``"1200/min"``, ``script`` as on :class:`Server`, for replies no option describes).
    ``url`` is the host root (``http://127.0.0.1:PORT``): the official SDK takes it as its
    ``base_url``; a toolnexus classifier takes ``f"{url}/v1"``. Stopped, with in-flight
    requests finished, when the block exits. Raises ``ConfigError`` for options that cannot
    work and ``OSError`` when the address cannot be bound.
    """
    async with Server(options) as server:
        yield server.url
