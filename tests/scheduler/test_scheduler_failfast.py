"""Issue 19 item 1, failing fast: which failures are systematic (classified by the body's
error_type, not only the status), and a run that stops after a few identical ones, with one
line naming the cause."""

from __future__ import annotations

import asyncio

import pytest
from test_scheduler_admission import FakeClock

from toolnexus.core.answers import ClassifierUsage
from toolnexus.core.errors import HTTPStatusError, TransportError
from toolnexus.scheduler import (
    FailFast,
    Outcome,
    OutcomeKind,
    RunStopped,
    Scheduler,
    estimate_tokens,
    outcome_of,
    retry_after_seconds,
)
from toolnexus.scheduler.admission import Ticket
from toolnexus.scheduler.failfast import DEFAULT_THRESHOLD
from toolnexus.scheduler.limiter import DEFAULT_SLOW_START

EP = "https://api.typesafe.ai/v1/systemone"
UNKNOWN_MODEL = '{"detail": {"error_type": "api_usage_error", "message": "Unknown model: jev-x"}}'


def _http(status: int, body: str = "", retry_after: str | None = None) -> HTTPStatusError:
    return HTTPStatusError(
        f"classifier: POST {EP}: HTTP {status}: something (request id r-{status})",
        status=status,
        endpoint=EP,
        request_id=f"r-{status}",
        body=body,
        retry_after=retry_after,
    )


def _refused() -> TransportError:
    return TransportError(
        f"classifier: POST {EP}: connection refused (after 3 attempts)",
        kind="connection refused",
        endpoint=EP,
        attempts=3,
    )


@pytest.mark.parametrize(
    ("error", "kind", "signature"),
    [
        pytest.param(_http(401), OutcomeKind.SYSTEMATIC, "HTTP 401", id="401-key"),
        pytest.param(_http(403), OutcomeKind.SYSTEMATIC, "HTTP 403", id="403-permission"),
        pytest.param(_http(402), OutcomeKind.SYSTEMATIC, "HTTP 402", id="402-gateway-funds"),
        pytest.param(
            _http(400, UNKNOWN_MODEL),
            OutcomeKind.SYSTEMATIC,
            "HTTP 400 api_usage_error",
            id="400-unknown-model",
        ),
        pytest.param(
            _http(400, '{"detail": "Too many score levels. Must have at most 10 levels."}'),
            OutcomeKind.FAILED,
            "",
            id="400-about-this-body",
        ),
        pytest.param(
            _http(400, '{"detail": {"error_type": "max_tokens_exceeded"}}'),
            OutcomeKind.FAILED,
            "",
            id="400-too-long-is-this-request",
        ),
        pytest.param(_http(422, "[]"), OutcomeKind.FAILED, "", id="422"),
        pytest.param(_http(500), OutcomeKind.FAILED, "", id="500-after-retries"),
        pytest.param(_http(429, retry_after="2"), OutcomeKind.RATE_LIMITED, "HTTP 429", id="429"),
        pytest.param(_refused(), OutcomeKind.SYSTEMATIC, "connection refused", id="refused"),
        pytest.param(
            TransportError("classifier: timeout", kind="timeout", endpoint=EP),
            OutcomeKind.SYSTEMATIC,
            "timeout",
            id="timeout-after-retries",  # issue 32 item 2: a hung server
        ),
        pytest.param(_http(404), OutcomeKind.SYSTEMATIC, "HTTP 404", id="404-no-such-endpoint"),
        pytest.param(_http(503), OutcomeKind.RATE_LIMITED, "HTTP 503", id="503-a-storm"),
        pytest.param(_http(529), OutcomeKind.RATE_LIMITED, "HTTP 529", id="529-a-storm"),
    ],
)
def test_failures_are_classified_by_status_and_error_type(
    error: Exception, kind: OutcomeKind, signature: str
) -> None:
    """'401, 403, 402 (a gateway's insufficient funds), the API's 400 api_usage_error for an
    unknown model (classify by the body's error_type, not only the status), a connection
    refused after the retries'."""
    outcome = outcome_of(error)
    assert (outcome.kind, outcome.signature) == (kind, signature)
    if kind is OutcomeKind.SYSTEMATIC:
        assert outcome.cause == str(error)


@pytest.mark.parametrize(
    ("retry_after", "retry_after_ms", "seconds"),
    [
        pytest.param("3", None, 3.0, id="seconds"),
        pytest.param("3", "250", 0.25, id="ms-wins"),
        pytest.param(None, "1500", 1.5, id="ms-only"),
        pytest.param("Wed, 21 Oct 2026 07:28:00 GMT", None, None, id="http-date"),
        pytest.param("-1", None, None, id="negative"),
        pytest.param(None, None, None, id="absent"),
    ],
)
def test_retry_after_ms_wins_over_retry_after(
    retry_after: str | None, retry_after_ms: str | None, seconds: float | None
) -> None:
    """'the SDK also honours retry-after-ms' (and it wins there)."""
    assert retry_after_seconds(retry_after, retry_after_ms) == seconds
    outcome = outcome_of(_http(429, retry_after=retry_after), retry_after_ms=retry_after_ms)
    assert outcome.retry_after == seconds


def _run(ff: FailFast, outcomes: list[Outcome]) -> None:
    async def go() -> None:
        for i, outcome in enumerate(outcomes):
            ticket = Ticket(i, estimate_tokens(b""))
            await ff.acquire(ticket)
            await ff.release(ticket, ClassifierUsage(), outcome)

    asyncio.run(go())


@pytest.mark.parametrize(
    ("outcomes", "stops"),
    [
        pytest.param([outcome_of(_http(401))] * 3, True, id="three-401s"),
        pytest.param([outcome_of(_http(401))] * 2, False, id="two-401s"),
        pytest.param(
            [outcome_of(_http(401)), outcome_of(_http(402)), outcome_of(_http(401))],
            False,
            id="not-the-same-way",
        ),
        pytest.param(
            [outcome_of(_http(401))] * 2 + [Outcome.success()] + [outcome_of(_http(401))] * 2,
            False,
            id="a-success-resets",
        ),
        pytest.param(
            [Outcome.success()] * 5 + [outcome_of(_http(402))] * 3, True, id="funds-gone-mid-run"
        ),
        pytest.param([outcome_of(_http(500))] * 10, False, id="transient-never-stops"),
    ],
)
def test_identical_systematic_failures_in_a_row_stop_the_run(
    outcomes: list[Outcome], stops: bool
) -> None:
    ff = FailFast()
    _run(ff, outcomes)
    assert (ff.stopped is not None) is stops


@pytest.mark.parametrize(
    ("error", "names"),
    [
        pytest.param(_http(401), "HTTP 401", id="wrong-key"),
        pytest.param(_http(403), "HTTP 403", id="forbidden"),
        pytest.param(_http(402), "HTTP 402", id="no-funds"),
        pytest.param(_http(400, UNKNOWN_MODEL), "api_usage_error", id="unknown-model"),
        pytest.param(_refused(), "connection refused", id="refused"),
        # Issue 32 item 2: "Consecutive timeouts, and a 404 on the endpoint itself ... stop the
        # run after the same 3 requests as a rejected key."
        pytest.param(
            TransportError(
                f"classifier: POST {EP}: no answer within 2 s", kind="timeout", endpoint=EP
            ),
            "timeout",
            id="hung-server",
        ),
        pytest.param(_http(404, '{"detail": "Not Found"}'), "HTTP 404", id="wrong-path"),
    ],
)
def test_a_systematic_failure_stops_a_run_of_300_within_5_requests(
    error: Exception, names: str
) -> None:
    """Bench target: 'a wrong key ... at most 5 requests before the run stops'; the stop is one
    line naming the cause, no further admissions, admitted ones finish."""
    clock = FakeClock()
    scheduler = Scheduler.for_run(concurrency=64, clock=clock)
    queue = list(range(300))
    sent: list[int] = []
    errors: list[BaseException] = []

    async def worker() -> None:
        while queue:
            item = queue.pop(0)
            try:
                async with scheduler.admit(estimate_tokens(b"{}")):
                    sent.append(item)
                    await asyncio.sleep(0)  # the request is in flight
                    raise error
            except RunStopped:
                queue.insert(0, item)  # not sent: written as not done, for --resume
                return
            except Exception as e:
                errors.append(e)

    async def go() -> None:
        await asyncio.gather(*(worker() for _ in range(64)))

    asyncio.run(go())
    # Three identical failures stop it; the slow start had at most one more in flight.
    assert len(sent) == DEFAULT_THRESHOLD + DEFAULT_SLOW_START - 1 == 4 <= 5
    assert len(errors) == len(sent)  # every admitted request finished
    assert len(queue) == 300 - len(sent)
    stop = scheduler.stopped
    assert stop is not None and stop.kind == "systematic"
    line = str(stop)
    assert "\n" not in line and names in line and line.startswith("classifier: stopped")
