"""The transport's internal attempt hook (issue 23: "the spans come from an internal hook at the
transport ... where attempts and waits are known") and issue 17 item 14's message rule."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from test_transport import ENDPOINT, OK_BODY, make, scripted, status

from toolnexus.core.errors import HTTPStatusError, TransportError
from toolnexus.transport.observe import observers, observing


@dataclass
class Watch:
    log: list[Any]
    n: int

    def response(self, status: int, request_id: str | None) -> None:
        self.log.append(("response", self.n, status, request_id))

    def failed(self, kind: str) -> None:
        self.log.append(("failed", self.n, kind))

    def end(self) -> None:
        self.log.append(("end", self.n))


@dataclass
class Observer:
    log: list[Any] = field(default_factory=list)

    def attempt(self, resend_count: int) -> Watch:
        self.log.append(("attempt", resend_count))
        return Watch(self.log, resend_count)

    def waited(self, seconds: float, resend_count: int) -> None:
        self.log.append(("wait", seconds, resend_count))


def _post_observed(t: Any, observer: Observer) -> Any:
    async def go() -> Any:
        try:
            with observing(observer):
                return await t.post("systemone", b"{}")
        finally:
            await t.aclose()

    return asyncio.run(go())


def test_every_attempt_and_every_wait_is_told_in_order() -> None:
    handler, _ = scripted(
        status(503, {"detail": "busy"}, **{"x-typesafe-request-id": "r-1"}),
        httpx.ConnectError("refused"),
        httpx.Response(200, content=OK_BODY, headers={"x-typesafe-request-id": "r-3"}),
    )
    t, sleep = make(handler)
    observer = Observer()
    _post_observed(t, observer)
    assert observer.log == [
        ("attempt", 0),
        ("response", 0, 503, "r-1"),
        ("end", 0),
        ("wait", sleep.delays[0], 1),
        ("attempt", 1),
        ("failed", 1, "network error"),
        ("end", 1),
        ("wait", sleep.delays[1], 2),
        ("attempt", 2),
        ("response", 2, 200, "r-3"),
        ("end", 2),
    ]


def test_observers_belong_to_the_task_that_set_them() -> None:
    """Concurrent evaluates share one transport; each sees only its own attempts."""
    handler, _ = scripted(httpx.Response(200, content=OK_BODY))
    t, _ = make(handler)
    a, b = Observer(), Observer()

    async def one(observer: Observer | None) -> None:
        if observer is None:
            await t.post("systemone", b"{}")
            return
        with observing(observer):
            await t.post("systemone", b"{}")

    async def go() -> None:
        await asyncio.gather(one(a), one(b), one(None))
        await t.aclose()

    asyncio.run(go())
    assert a.log == [("attempt", 0), ("response", 0, 200, None), ("end", 0)]
    assert b.log == a.log
    assert observers() == ()


def test_a_cancelled_attempt_still_ends() -> None:
    started = asyncio.Event()

    async def stall(request: httpx.Request) -> httpx.Response:
        started.set()
        await asyncio.sleep(3600)
        raise AssertionError("not reached")

    t, _ = make(stall)  # type: ignore[arg-type]
    observer = Observer()

    async def go() -> None:
        with observing(observer):
            task = asyncio.create_task(t.post("systemone", b"{}"))
            await started.wait()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        await t.aclose()

    asyncio.run(go())
    assert observer.log == [("attempt", 0), ("end", 0)]


@pytest.mark.parametrize(
    ("responses", "retries", "suffix"),
    [
        pytest.param([status(503, {"detail": "busy"})], 2, " (after 3 attempts)", id="retried-503"),
        pytest.param(
            [status(500, {"detail": "busy"}), status(429, {"detail": "busy"})],
            1,
            " (after 2 attempts)",
            id="retried-then-429",
        ),
        pytest.param([status(400, {"detail": "busy"})], 2, "", id="terminal-400-sent-once"),
    ],
)
def test_http_status_failures_say_after_how_many_attempts_as_network_errors_do(
    responses: list[httpx.Response], retries: int, suffix: str
) -> None:
    """Issue 17 item 14: 'HTTP-status failures never say "(after N attempts)" as network errors
    do'. A terminal status is sent once and says nothing of attempts."""
    handler, _ = scripted(*responses)
    t, _ = make(handler, retries=retries)
    with pytest.raises(HTTPStatusError) as info:
        asyncio.run(t.post("systemone", b"{}"))
    code = responses[-1].status_code
    assert str(info.value) == f"classifier: POST {ENDPOINT}: HTTP {code}: busy{suffix}"
    assert info.value.attempts == (retries + 1 if suffix else 1)


def test_the_attempts_come_before_the_request_id_like_the_network_form() -> None:
    handler, _ = scripted(status(503, {"detail": "busy"}, **{"x-typesafe-request-id": "r-9"}))
    t, _ = make(handler, retries=1)
    with pytest.raises(HTTPStatusError) as info:
        asyncio.run(t.post("systemone", b"{}"))
    assert str(info.value).endswith("HTTP 503: busy (after 2 attempts) (request id r-9)")
    handler, _ = scripted(httpx.ConnectError("refused"))
    t, _ = make(handler, retries=1)
    with pytest.raises(TransportError) as network:
        asyncio.run(t.post("systemone", b"{}"))
    assert str(network.value).endswith(": network error (after 2 attempts)")
