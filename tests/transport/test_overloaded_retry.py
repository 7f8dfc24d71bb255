"""Issue 32's open design question, decided: in a batch, a 503 or 529 WITHOUT ``Retry-After``
is retried by its own request after ``retry_base_ms`` doubling (system-one-wire.md: "The
official SDK retries 408, 429 and 5xx twice with backoff 0.5 s to 5 s"), and becomes a
run-wide storm (a pause, a halved window, the patience) only once its ``retries`` are spent. A
429, and a 503/529 that says how long, go to the run's scheduler at once, as before.

``httpx.MockTransport`` and a simulated clock: the transport's sleeps are recorded, the
scheduler's pauses advance the clock; nothing waits."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from toolnexus.config import RetryPolicy
from toolnexus.scheduler import Scheduler
from toolnexus.transport import SystemOneTransport

OK = b'{"model": "m", "answers": {}}'


class SimClock:
    def __init__(self) -> None:
        self.t = 0.0

    def now(self) -> float:
        return self.t

    async def sleep(self, seconds: float) -> None:
        self.t += seconds
        await asyncio.sleep(0)


def _run(replies: list[httpx.Response]) -> tuple[list[float], list[str | None], Scheduler, float]:
    """One request through a batch's scheduler against ``replies`` in order: the transport's
    own sleeps, each attempt's retry-count header, the scheduler, and the simulated time."""
    clock = SimClock()
    scheduler = Scheduler.for_run(concurrency=8, clock=clock)
    slept: list[float] = []
    counts: list[str | None] = []
    pending = list(replies)

    def handler(request: httpx.Request) -> httpx.Response:
        counts.append(request.headers.get("X-TypeSafe-Retry-Count"))
        return pending.pop(0)

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    transport = SystemOneTransport(
        base_url="http://127.0.0.1:9/v1",
        api_key_env="TOOLNEXUS_TEST_NO_KEY",
        transport=httpx.MockTransport(handler),
        retry=RetryPolicy(retries=2, base=0.25),
        sleep=sleep,
    )

    async def go() -> None:
        reply = await transport.post("systemone", b"{}", scheduler=scheduler)
        assert reply.status == 200
        await transport.aclose()

    asyncio.run(go())
    assert not pending
    return slept, counts, scheduler, clock.t


def _status(code: int, **headers: str) -> httpx.Response:
    return httpx.Response(code, headers=headers, content=b'{"detail": "overloaded"}')


@pytest.mark.parametrize("code", [pytest.param(503, id="503"), pytest.param(529, id="529")])
def test_an_overloaded_reply_without_a_wait_is_retried_by_its_own_request(code: int) -> None:
    """The SDK's per-request backoff: the run is neither paused nor cut for one refusal."""
    slept, counts, scheduler, elapsed = _run([_status(code), httpx.Response(200, content=OK)])
    assert slept == [0.25]  # retry_base_ms, by the transport
    assert counts == [None, "1"]  # labelled as a retry, like any 5xx
    assert scheduler.limiter is not None
    window = scheduler.limiter.window
    assert window.throttled == 0 and window.paused_until == float("-inf")
    assert window.pace is None  # the learned pace is not slowed by it either
    assert elapsed == 0.0  # no run-wide wait


def test_one_that_outlasts_the_retries_becomes_a_run_wide_storm() -> None:
    """Issue 32 item 2: an outage of 503s is still ridden out within the patience."""
    replies = [_status(503), _status(503), _status(503), httpx.Response(200, content=OK)]
    slept, counts, scheduler, elapsed = _run(replies)
    assert slept == [0.25, 0.5]  # the request's own retries first...
    assert counts == [None, "1", "2", None]  # ...then re-admitted by the scheduler, afresh
    assert scheduler.limiter is not None and scheduler.limiter.window.throttled == 1
    assert elapsed == pytest.approx(0.5)  # the SDK's first run-wide wait (no Retry-After)


@pytest.mark.parametrize(
    "reply",
    [
        pytest.param(_status(429), id="429-no-retry-after"),
        pytest.param(_status(503, **{"Retry-After": "1"}), id="503-retry-after"),
        pytest.param(_status(529, **{"retry-after-ms": "1000"}), id="529-retry-after-ms"),
    ],
)
def test_a_limit_or_a_stated_wait_goes_to_the_run_at_once(reply: Any) -> None:
    """Unchanged: the account's limit, or a service that says how long it is away."""
    slept, counts, scheduler, elapsed = _run([reply, httpx.Response(200, content=OK)])
    assert slept == []  # never slept on by the request
    assert counts == [None, None]
    assert scheduler.limiter is not None and scheduler.limiter.window.throttled == 1
    assert elapsed >= 0.5
