"""One code path (issue 8 §4): 'the unit tests with httpx.MockTransport and the loopback
integration tests exercise the same retry loop the default transport uses'.

Each scenario runs twice: on the default aiohttp adapter against a real server on 127.0.0.1
(tests/loopback.py), and on httpx.MockTransport answering the same faults with the same bytes.
The retry loop's observable behaviour (what on_error sees, what is raised, the retry-count header
on each attempt) must be identical: only the adapter differs.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from loopback import Fault, Loopback, synthesize
from toolnexus import ClassifierError, create_classifier
from toolnexus.config import (
    ErrorInfo,
    Verdict,
)
from toolnexus.transport.aiohttp_adapter import AiohttpAdapter
from toolnexus.transport.httpx_adapter import HttpxAdapter
from toolnexus.transport.retry import RETRY_COUNT_HEADER

QUESTIONS: dict[str, Any] = {"refund": {"type": "noul", "instructions": "Is a refund requested?"}}
STATE = {"ticket": 7, "message": "charged twice"}


@dataclass
class Outcome:
    infos: list[ErrorInfo] = field(default_factory=list)
    error: str | None = None
    error_type: str | None = None
    retry_counts: list[str | None] = field(default_factory=list)
    adapter: str = ""


def _request_id(raw: bytes) -> str:
    # The loopback's own rule, so both wires answer with identical headers.
    return "req_loopback_" + hashlib.sha256(raw).hexdigest()[:8]


def _mock_handler(faults: list[Fault], seen: list[httpx.Request]) -> Callable[..., Any]:
    queue = list(faults)

    async def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        fault = queue.pop(0) if queue else None
        if fault is None:
            raw = json.dumps(synthesize(json.loads(request.content))).encode("utf-8")
            return httpx.Response(200, content=raw, headers={"x-typesafe-request-id": "r"})
        if fault.kind == "http":
            headers = {"x-typesafe-request-id": _request_id(fault.body)}
            if fault.retry_after is not None:
                headers["Retry-After"] = fault.retry_after
            return httpx.Response(fault.status, content=fault.body, headers=headers)
        if fault.kind == "reset":
            try:
                raise ConnectionResetError(104, "Connection reset by peer")
            except ConnectionResetError as e:
                raise httpx.ReadError("reset") from e
        if fault.kind == "stall":
            await asyncio.sleep(fault.seconds)
        raise AssertionError(f"fault {fault.kind} is not emulated here")

    return handler


def _run(server: Loopback, wire: str, faults: list[Fault], **options: Any) -> Outcome:
    out = Outcome()

    def on_error(info: ErrorInfo) -> Verdict:
        out.infos.append(info)
        return "retry" if info.retryable else "fail"

    async def go(base_url: str, transport: Any) -> None:
        async with create_classifier(
            base_url=base_url, transport=transport, on_error=on_error, retry_base_ms=1, **options
        ) as c:
            out.adapter = type(c.pipeline.style.transport._adapter).__name__  # type: ignore[attr-defined]
            try:
                await c.evaluate(STATE, QUESTIONS)
            except ClassifierError as e:
                out.error, out.error_type = str(e), type(e).__name__

    if wire == "loopback":
        server.headers.clear()
        server.push(*faults)
        asyncio.run(go(server.base_url, None))
        out.retry_counts = [h.get(RETRY_COUNT_HEADER.lower()) for h in server.headers]
    else:
        # The same base URL, so messages compare byte for byte; nothing reaches the server.
        total, seen = server.total, list[httpx.Request]()
        asyncio.run(go(server.base_url, httpx.MockTransport(_mock_handler(faults, seen))))
        out.retry_counts = [r.headers.get(RETRY_COUNT_HEADER) for r in seen]
        assert server.total == total
    return out


SCENARIOS = [
    pytest.param([Fault.http(503, retry_after="0")], {}, id="retry-after-then-ok"),
    pytest.param([Fault.reset()], {}, id="reset-then-ok"),
    pytest.param([Fault.http(400, body={"detail": "bad state"})], {}, id="terminal-400"),
    pytest.param([Fault.http(500)] * 3, {"retries": 2}, id="budget-exhausted"),
    # The stall ends only when the server stops: past the timeout whatever the machine's speed.
    pytest.param([Fault.stall(600)], {"timeout": 0.2, "retries": 0}, id="timeout"),
]


@pytest.mark.parametrize(("faults", "options"), SCENARIOS)
def test_both_adapters_run_the_same_retry_loop(
    faults: list[Fault], options: dict[str, Any]
) -> None:
    with Loopback() as server:
        live = _run(server, "loopback", faults, **options)
        mock = _run(server, "mock", faults, **options)
    assert live.adapter == AiohttpAdapter.__name__ and mock.adapter == HttpxAdapter.__name__
    assert live.infos == mock.infos and live.infos
    assert (live.error_type, live.error) == (mock.error_type, mock.error)
    assert live.retry_counts == mock.retry_counts
    assert live.retry_counts == [None] + [str(i) for i in range(1, len(live.retry_counts))]


def test_the_kinds_seen_are_the_documented_ones() -> None:
    """ErrorInfo.kind for each fault, on the default adapter."""
    with Loopback() as server:
        reset = _run(server, "loopback", [Fault.reset()]).infos
        got = _run(server, "loopback", [Fault.http(429, retry_after="0")]).infos
    assert [i.kind for i in reset] == ["connection reset"]
    assert [(i.kind, i.status, i.retry_after, i.wait) for i in got] == [
        ("http status", 429, "0", 0.0)
    ]
