"""Every library batch path sends through the run's one scheduler (issue 19), against a real
``toolnexus serve`` on 127.0.0.1: a 429 goes back to the run's queue, slow start, fail fast.

Issue 19: "build one admission controller that every batch path (library
``evaluate_batch``/``evaluate_stream``/``states``, the CLI ``batch``, later the engine adapters)
sends through ... a test fails if a path bypasses it"."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from serving import HeldClock, refused_port, run_with
from toolnexus import BatchOptions, ClassifierUsage, HTTPStatusError, RunStopped, create_classifier
from toolnexus.classifier.client import Classifier
from toolnexus.config import ErrorInfo, Verdict
from toolnexus.scheduler import Outcome, OutcomeKind, Ticket
from toolnexus.serve import ServeOptions, Server
from toolnexus.serve.script import ScriptedReply, ScriptedRequest

QUESTIONS = {"refund": {"type": "noul", "instructions": "Is a refund requested?"}}
KEY_ENV = "WIRE_TEST_KEY"


class Counting:
    """An admission member that counts: what a limiter shared by workers or a budget sees."""

    def __init__(self) -> None:
        self.acquired = 0
        self.outcomes: list[OutcomeKind] = []
        self.in_flight = 0
        self.peak_before_success = 0

    async def acquire(self, ticket: Ticket) -> None:
        self.acquired += 1
        self.in_flight += 1
        if OutcomeKind.SUCCESS not in self.outcomes:
            self.peak_before_success = max(self.peak_before_success, self.in_flight)

    async def release(self, ticket: Ticket, usage: ClassifierUsage, outcome: Outcome) -> None:
        self.in_flight -= 1
        self.outcomes.append(outcome.kind)


def _states(n: int) -> list[str]:
    return [f"ticket {i}: I was charged twice" for i in range(n)]


async def _via_batch(c: Classifier, states: list[str], options: BatchOptions) -> int:
    return len(await c.evaluate_batch(states, QUESTIONS, options=options))


async def _via_states(c: Classifier, states: list[str], options: BatchOptions) -> int:
    results = await c.states(states, options=options).evaluate(**QUESTIONS)
    return sum(r.ok for r in results)


async def _via_stream(c: Classifier, states: list[str], options: BatchOptions) -> int:
    return sum(
        [r.ok async for _, r in c.evaluate_stream(enumerate(states), QUESTIONS, options=options)]
    )


ENTRY_POINTS = [
    pytest.param(_via_batch, id="evaluate_batch"),
    pytest.param(_via_states, id="states"),
    pytest.param(_via_stream, id="evaluate_stream"),
]
Entry = Callable[[Classifier, list[str], BatchOptions], Awaitable[int]]


def _stats(server: Server) -> dict[str, Any]:
    """What ``/_stats`` answers."""
    stats: dict[str, Any] = server.traffic.body(server.in_flight)
    return stats


def _serve(
    options: ServeOptions,
    scenario: Callable[[Server], Awaitable[Any]],
    limits_clock: Callable[[], float] | None = None,
) -> Any:
    """``scenario(server)``'s result and the API requests the server answered (/_stats)."""

    async def go(server: Server) -> Any:
        got = await scenario(server)
        return got, sum(_stats(server)["statuses"].values())

    return run_with(options, go, limits_clock=limits_clock)


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_every_entry_point_admits_every_request_through_the_one_scheduler(entry: Entry) -> None:
    """'every entry point (library and CLI) goes through the one scheduler (a test fails if a
    path bypasses it)': an extra admission member sees every request the server received."""
    counting = Counting()

    async def scenario(server: Server) -> int:
        async with create_classifier(base_url=server.url + "/v1") as c:
            options = BatchOptions(concurrency=8, admission=(counting,))
            return await entry(c, _states(30), options)

    ok, received = _serve(ServeOptions(synthetic=True), scenario)
    assert ok == 30
    assert received == 30
    assert counting.acquired == 30
    assert counting.outcomes.count(OutcomeKind.SUCCESS) == 30


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_a_429_goes_back_to_the_queue_never_an_error_at_concurrency_64(entry: Entry) -> None:
    """'In a batch, a 429 that outlasts a request's retry budget goes back to the run's queue
    instead of becoming an error record ... a batch at any --concurrency against a limited
    server finishes with no error record caused by 429'. ``retries=0``: before the scheduler,
    every 429 was an error."""
    counting = Counting()

    async def scenario(server: Server) -> tuple[int, int]:
        async with create_classifier(base_url=server.url + "/v1", retries=0) as c:
            options = BatchOptions(concurrency=64, admission=(counting,))
            ok = await entry(c, _states(160), options)
        return ok, _stats(server)["statuses"].get("429", 0)

    # 100 requests pass, the next 20 are refused whatever the machine's speed, then time runs.
    (ok, throttled), received = _serve(
        ServeOptions(synthetic=True, rate_limit="6000/min"), scenario, limits_clock=HeldClock(120)
    )
    assert ok == 160
    assert throttled >= 20, "the held clock refuses requests 101..120"
    assert counting.outcomes.count(OutcomeKind.RATE_LIMITED) == throttled
    assert received == 160 + throttled


def test_slow_start_keeps_two_in_flight_until_the_first_success() -> None:
    """'Until the first success a run keeps very few requests in flight (say how many)': 2. The
    server stalls every request, so no success comes: it sees exactly 2 of 64 allowed."""
    arrived: list[bytes] = []

    async def scenario(server: Server) -> int:
        server.on_request = lambda raw, _headers: arrived.append(raw)
        async with create_classifier(base_url=server.url + "/v1", timeout=600) as c:
            task = asyncio.ensure_future(c.evaluate_batch(_states(64), QUESTIONS, 64))
            while len(arrived) < 2:
                await asyncio.sleep(0.01)
            for _ in range(20):  # give a third request every chance to arrive
                await asyncio.sleep(0.01)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        return len(arrived)

    options = ServeOptions(synthetic=True, fault_rate=1.0, faults="stall", stall_seconds=600)
    assert run_with(options, scenario) == 2


def _reply(status: int, body: bytes = b"{}") -> Callable[[ScriptedRequest], ScriptedReply]:
    return lambda _req: ScriptedReply(status, body)


UNKNOWN_MODEL = b'{"detail": {"error_type": "api_usage_error", "message": "unknown model jev-0.0"}}'
STOPS = [
    pytest.param(_reply(403), "HTTP 403", id="403"),
    pytest.param(
        _reply(402, b'{"error": {"message": "insufficient funds"}}'), "HTTP 402", id="402"
    ),
    pytest.param(_reply(400, UNKNOWN_MODEL), "HTTP 400 api_usage_error", id="unknown-model"),
]


def _stopped(entry: Entry, options: ServeOptions, **create: Any) -> tuple[RunStopped, int, int]:
    """Run 300 states through ``entry`` until it stops; the stop, the results that finished and
    the requests the server received."""

    async def scenario(server: Server) -> tuple[RunStopped, int]:
        async with create_classifier(base_url=server.url + "/v1", **create) as c:
            with pytest.raises(RunStopped) as raised:
                await _via_batch(c, _states(300), BatchOptions(concurrency=64))
        return raised.value, 0

    (stop, finished), received = _serve(options, scenario)
    return stop, finished, received


@pytest.mark.parametrize(("script", "cause"), STOPS)
def test_a_run_stops_on_a_failure_every_request_would_repeat(
    script: Callable[[ScriptedRequest], ScriptedReply], cause: str
) -> None:
    """'When a run's first requests all fail the same non-transient way — 401, 403, 402 ..., the
    API's 400 api_usage_error for an unknown model (by the body's error_type) — the run stops
    scheduling with one line naming the cause': 300 states, at most 5 requests."""
    stop, _, received = _stopped(_via_batch, ServeOptions(synthetic=True, script=script))
    assert stop.kind == "systematic"
    assert f"({cause})" in stop.message and "\n" not in stop.message
    assert received <= 5


def test_a_wrong_key_stops_the_run_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    """The 401 of 'a wrong key against serve --require-key-env: at most 5 requests'."""
    monkeypatch.setenv(KEY_ENV, "the-right-key")
    monkeypatch.setenv("TYPESAFE_API_KEY", "a-wrong-key")
    stop, _, received = _stopped(_via_batch, ServeOptions(synthetic=True, require_key_env=KEY_ENV))
    assert "(HTTP 401)" in stop.message and "TYPESAFE_API_KEY" in stop.message
    assert "a-wrong-key" not in stop.message
    assert received <= 5


def test_credentials_in_the_base_url_are_named_by_a_401_not_the_key_variable() -> None:
    """'with --base-url credentials the hint names them, not TYPESAFE_API_KEY'."""

    async def scenario(server: Server) -> str:
        url = server.url.replace("http://", "http://user:s3cret@") + "/v1"
        async with create_classifier(base_url=url) as c:
            with pytest.raises(RunStopped) as raised:
                await c.evaluate_batch(_states(20), QUESTIONS)
        return raised.value.message

    message, _ = _serve(ServeOptions(synthetic=True, script=_reply(401)), scenario)
    assert "credentials (user:pass@) in the base URL" in message
    assert "TYPESAFE_API_KEY" not in message and "s3cret" not in message


def test_a_refused_connection_after_the_retries_stops_the_run() -> None:
    """'a connection refused after the retries' is systematic: nothing listens there."""

    async def go(port: int) -> RunStopped:
        async with create_classifier(base_url=f"http://127.0.0.1:{port}/v1", retry_base_ms=1) as c:
            with pytest.raises(RunStopped) as raised:
                await c.evaluate_batch(_states(300), QUESTIONS, 64)
        return raised.value

    with refused_port() as port:  # bound, not listening: refused, and no one else's meanwhile
        stop = asyncio.run(go(port))
    assert "(connection refused)" in stop.message and "\n" not in stop.message


def test_states_gives_the_finished_results_and_the_stop_for_the_rest() -> None:
    """``states(...)``: the requests that were sent keep their own error; every state not sent
    holds the RunStopped, so nothing is silently missing."""

    async def scenario(server: Server) -> list[Any]:
        async with create_classifier(base_url=server.url + "/v1") as c:
            return await c.states(_states(50), concurrency=16).evaluate(**QUESTIONS)

    results, received = _serve(ServeOptions(synthetic=True, script=_reply(403)), scenario)
    sent = [r for r in results if isinstance(r.error, HTTPStatusError)]
    refused = [r for r in results if isinstance(r.error, RunStopped)]
    assert len(sent) == received <= 5
    assert len(sent) + len(refused) == 50


def test_on_error_fail_on_a_429_still_makes_it_that_state_s_error() -> None:
    """'on_error returning "fail" still wins': a 429 it fails is an error, not a re-send."""
    seen: list[int] = []

    def script(req: ScriptedRequest) -> ScriptedReply | None:
        seen.append(1)
        if len(seen) == 1:
            return ScriptedReply(429, b"{}", headers={"retry-after-ms": "10"})
        return None

    def on_error(info: ErrorInfo) -> Verdict:
        return "fail" if info.status == 429 else "retry"

    async def scenario(server: Server) -> list[Any]:
        async with create_classifier(base_url=server.url + "/v1", on_error=on_error) as c:
            return await c.states(_states(6), concurrency=1).evaluate(**QUESTIONS)

    results, received = _serve(ServeOptions(synthetic=True, script=script), scenario)
    assert isinstance(results[0].error, HTTPStatusError) and results[0].error.status == 429
    assert all(r.ok for r in results[1:])
    assert received == 6


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_a_pack_is_one_ticket_and_one_request(entry: Entry) -> None:
    """Issue 20 through the one loop: ``pack=4`` sends 24 states as 6 packed requests, each
    admitted once (the estimate of its packed bytes), every state answered."""
    counting = Counting()

    async def scenario(server: Server) -> int:
        async with create_classifier(base_url=server.url + "/v1") as c:
            options = BatchOptions(concurrency=4, pack=4, admission=(counting,))
            return await entry(c, _states(24), options)

    ok, received = _serve(ServeOptions(synthetic=True), scenario)
    assert ok == 24
    assert received == counting.acquired == 6


class Cap:
    """A spend cap's shape (issue 23's ``Budget``): refuses every request after ``n``."""

    def __init__(self, n: int) -> None:
        self.n = n

    async def acquire(self, ticket: Ticket) -> None:
        if self.n == 0:
            raise RunStopped("classifier: --max-requests reached; raise it to go on", "budget")
        self.n -= 1

    async def release(self, ticket: Ticket, usage: ClassifierUsage, outcome: Outcome) -> None:
        return None


def test_a_budget_stop_flows_like_a_systematic_one() -> None:
    """'RunStopped(kind="budget") must flow like a systematic stop (stop scheduling, in-flight
    finish and are written)': 5 sent and decided, the other 35 hold the budget's stop."""

    async def scenario(server: Server) -> list[Any]:
        async with create_classifier(base_url=server.url + "/v1") as c:
            options = BatchOptions(concurrency=4, admission=(Cap(5),))
            return await c.states(_states(40), options=options).evaluate(**QUESTIONS)

    results, received = _serve(ServeOptions(synthetic=True), scenario)
    assert received == 5 == sum(r.ok for r in results)
    stops = [r.error for r in results if isinstance(r.error, RunStopped)]
    assert len(stops) == 35 and {s.kind for s in stops} == {"budget"}


def test_a_limit_that_never_lets_up_stops_the_run_instead_of_re_sending_forever() -> None:
    """A 429 goes back to the queue, but a server that answers nothing else (a spent quota)
    must not keep a batch re-sending forever: the run's patience without one success stops it
    (issue 32 item 2, "Patience as a duration"; a short patience here, 60 s by default)."""
    always = _reply(429)

    def script(req: ScriptedRequest) -> ScriptedReply:
        reply = always(req)
        reply.headers["retry-after-ms"] = "5"
        return reply

    async def scenario(server: Server) -> RunStopped:
        async with create_classifier(base_url=server.url + "/v1") as c:
            with pytest.raises(RunStopped) as raised:
                await c.evaluate_batch(
                    _states(40), QUESTIONS, options=BatchOptions(concurrency=16, patience=0.5)
                )
        return raised.value

    stop, received = _serve(ServeOptions(synthetic=True, script=script), scenario)
    assert "no success for 0.5 s of HTTP 429" in stop.message, stop.message
    assert stop.kind == "systematic" and received >= 1


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        pytest.param("rate", 0, "rate takes a number of requests per minute", id="rate-0"),
        pytest.param("rate", float("nan"), "rate takes", id="rate-nan"),
        pytest.param("rate", True, "rate takes", id="rate-bool"),
        pytest.param("pack", 0, "pack takes a whole number >= 1 or 'auto'", id="pack-0"),
        pytest.param("pack", "big", "pack takes", id="pack-text"),
        pytest.param("admission", (object(),), "has no acquire/release methods", id="member"),
        pytest.param("admission", "limiter", "admission takes a tuple", id="admission-text"),
    ],
)
def test_batch_options_are_checked_once_for_every_entry_point(
    field: str, value: Any, says: str
) -> None:
    """config.py: 'A value is checked when it is built, so everything that receives one trusts
    it': the scheduler's options are refused when the BatchOptions is built."""
    from toolnexus import ConfigError

    with pytest.raises(ConfigError, match=says):
        BatchOptions(**{field: value})


class Refusals:
    """An admission member that keeps each 429's outcome as the scheduler got it."""

    def __init__(self) -> None:
        self.refused: list[Outcome] = []

    async def acquire(self, ticket: Ticket) -> None:
        return None

    async def release(self, ticket: Ticket, usage: ClassifierUsage, outcome: Outcome) -> None:
        if outcome.kind is OutcomeKind.RATE_LIMITED:
            self.refused.append(outcome)


@pytest.mark.parametrize(
    ("limits", "limit", "figure", "states", "held"),
    [
        pytest.param({"rate_limit": "6000/min"}, "requests", 100.0, 160, 120, id="requests"),
        # 120 input tokens a request here: 40 pass the held bucket, the next 20 are refused
        pytest.param({"token_limit": "4800/s"}, "tokens", 4800.0, 80, 60, id="tokens"),
    ],
)
def test_a_429_from_serve_reaches_the_scheduler_with_its_limit_and_figure(
    limits: dict[str, str], limit: str, figure: float, states: int, held: int
) -> None:
    """Issue 32 item 1, end to end: serve's 429 body ("Rate limit exceeded: 6000 requests per
    minute.", as the API's) crosses the real transport and reaches every admission member as
    the limit it names and its figure a second, which the run's pace takes."""
    refusals = Refusals()

    async def scenario(server: Server) -> int:
        async with create_classifier(base_url=server.url + "/v1", retries=0) as c:
            options = BatchOptions(concurrency=64, admission=(refusals,))
            return await _via_batch(c, _states(states), options)

    serve = ServeOptions(synthetic=True, **limits)
    ok, _ = _serve(serve, scenario, limits_clock=HeldClock(held))
    assert ok == states
    assert refusals.refused, "the held clock refuses requests past the bucket"
    assert {(o.limit, o.limit_rate) for o in refusals.refused} == {(limit, figure)}
