"""Issue 19 item 4, the admission interface: a typed protocol that the run's limiter, a global
limiter and a spend budget implement, chained; and the ``async with scheduler.admit(...)`` form a
batch loop uses. Time is a fake clock: nothing sleeps."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import pytest

from toolnexus.core.answers import ClassifierUsage
from toolnexus.core.errors import ConfigError, HTTPStatusError
from toolnexus.scheduler import (
    Admission,
    Chain,
    Outcome,
    OutcomeKind,
    RunLimiter,
    RunStopped,
    Scheduler,
    Ticket,
    TokenEstimate,
)


class FakeClock:
    """A clock whose sleep advances time at once (one waiter at a time in these tests)."""

    def __init__(self) -> None:
        self.t = 0.0
        self.slept: list[float] = []

    def now(self) -> float:
        return self.t

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.t += seconds
        await asyncio.sleep(0)


@dataclass
class ToyBudget:
    """A spend cap as issue 23 describes it: reserve the estimate on admission, settle the
    charge on release; refuse when the next request would not fit."""

    cap_tokens: int
    spent: int = 0
    reserved: dict[int, int] = field(default_factory=dict)

    async def acquire(self, ticket: Ticket) -> None:
        need = ticket.estimate.central
        if self.spent + sum(self.reserved.values()) + need > self.cap_tokens:
            raise RunStopped(
                f"classifier: --max-tokens {self.cap_tokens} reached: {self.spent} spent",
                "budget",
            )
        self.reserved[ticket.id] = need

    async def release(self, ticket: Ticket, usage: ClassifierUsage, outcome: Outcome) -> None:
        self.reserved.pop(ticket.id)
        self.spent += usage.input_tokens


def test_the_members_implement_the_protocol() -> None:
    members: list[Admission] = [RunLimiter(4), ToyBudget(10), Chain([])]
    assert all(callable(m.acquire) and callable(m.release) for m in members)


def test_a_budget_plugged_in_stops_admissions_without_touching_the_limiter() -> None:
    """'show with a test that a toy budget plugged in stops admissions when spend would pass a
    cap, without touching the limiter'."""
    clock = FakeClock()
    budget = ToyBudget(cap_tokens=1000)
    scheduler = Scheduler.for_run(concurrency=4, extra=[budget], clock=clock)
    limiter = scheduler.admission.members[0]  # type: ignore[attr-defined]
    estimate = TokenEstimate(central=300, upper=400)
    done = 0

    async def go() -> RunStopped:
        nonlocal done
        while True:
            try:
                async with scheduler.admit(estimate) as slot:
                    await slot.settle(outcome=Outcome.success(), usage=ClassifierUsage(310, 5))
                    done += 1
            except RunStopped as stop:
                return stop

    stop = asyncio.run(go())
    assert done == 3 and budget.spent == 930  # a fourth (930 + 300) would pass 1000
    assert stop.kind == "budget" and "1000" in str(stop)
    assert isinstance(limiter, RunLimiter)
    assert limiter.window.in_flight == 0  # the refused ticket gave its slot back
    assert scheduler.stopped is stop


def test_a_chain_releases_what_it_admitted_when_a_later_member_refuses() -> None:
    seen: list[tuple[str, OutcomeKind]] = []

    class Recorder:
        async def acquire(self, ticket: Ticket) -> None:
            seen.append(("acquire", OutcomeKind.SUCCESS))

        async def release(self, ticket: Ticket, usage: ClassifierUsage, outcome: Outcome) -> None:
            seen.append(("release", outcome.kind))

    chain = Chain([Recorder(), ToyBudget(cap_tokens=0)])
    with pytest.raises(RunStopped):
        asyncio.run(chain.acquire(Ticket(0, TokenEstimate(1, 1))))
    assert seen == [("acquire", OutcomeKind.SUCCESS), ("release", OutcomeKind.NOT_SENT)]


def test_a_429_settles_as_requeue_and_the_next_admission_waits_for_retry_after() -> None:
    """'a 429 in a batch goes back to the queue ... rather than becoming an error'; the run
    waits out Retry-After before admitting anything."""
    clock = FakeClock()
    scheduler = Scheduler.for_run(concurrency=8, clock=clock)
    estimate = TokenEstimate(10, 20)

    async def go() -> tuple[bool, float | None]:
        async with scheduler.admit(estimate) as slot:
            await slot.settle(outcome=Outcome.success())
        async with scheduler.admit(estimate) as slot:
            settled = await slot.settle(outcome=Outcome.rate_limited(2.0))
        async with scheduler.admit(estimate) as slot:
            await slot.settle(outcome=Outcome.success())
        return settled.requeue, settled.not_before

    requeue, not_before = asyncio.run(go())
    assert requeue and not_before == 2.0
    assert clock.slept == [2.0] and clock.t == 2.0


def test_an_error_raised_in_the_slot_is_classified_and_reraised() -> None:
    clock = FakeClock()
    scheduler = Scheduler.for_run(concurrency=2, clock=clock)
    error = HTTPStatusError("classifier: HTTP 429", status=429, endpoint="e", retry_after="1")

    async def go() -> None:
        async with scheduler.admit(TokenEstimate(1, 1)):
            raise error

    with pytest.raises(HTTPStatusError):
        asyncio.run(go())
    limiter = scheduler.admission.members[0]  # type: ignore[attr-defined]
    assert limiter.window.paused_until == 1.0 and limiter.window.in_flight == 0


def test_a_slot_is_settled_once() -> None:
    async def go() -> None:
        async with Scheduler.for_run(concurrency=1, clock=FakeClock()).admit(
            TokenEstimate(1, 1)
        ) as slot:
            await slot.settle(outcome=Outcome.success())
            await slot.settle(outcome=Outcome.success())

    with pytest.raises(ConfigError, match="settled once"):
        asyncio.run(go())


def test_waiters_for_a_slot_wake_when_one_is_released() -> None:
    """Slow start: the third request waits (no sleep) until one of the first two is settled."""
    clock = FakeClock()
    scheduler = Scheduler.for_run(concurrency=8, clock=clock)
    order: list[str] = []

    async def request(name: str, hold: asyncio.Event | None) -> None:
        async with scheduler.admit(TokenEstimate(1, 1)) as slot:
            order.append(name)
            if hold is not None:
                await hold.wait()
            await slot.settle(outcome=Outcome.failed("HTTP 500"))

    async def go() -> None:
        hold = asyncio.Event()
        tasks = [asyncio.create_task(request(n, hold)) for n in ("a", "b", "c")]
        for _ in range(5):
            await asyncio.sleep(0)
        assert order == ["a", "b"]
        hold.set()
        await asyncio.gather(*tasks)

    asyncio.run(go())
    assert order == ["a", "b", "c"] and clock.slept == []


def test_a_429_without_retry_after_is_requeued_for_the_limiters_own_backoff() -> None:
    clock = FakeClock()
    scheduler = Scheduler.for_run(concurrency=4, clock=clock)

    async def go() -> float | None:
        async with scheduler.admit(TokenEstimate(1, 1)) as slot:
            return (await slot.settle(outcome=Outcome.rate_limited(None))).not_before

    assert asyncio.run(go()) == 0.5  # the official SDK's first backoff


def test_settle_frees_the_slot_before_the_context_exits() -> None:
    """A settled request's slot serves the next one while the caller still writes its record."""
    scheduler = Scheduler.for_run(concurrency=1, clock=FakeClock())

    async def go() -> None:
        async with scheduler.admit(TokenEstimate(1, 1)) as first:
            await first.settle(outcome=Outcome.success())
            async with scheduler.admit(TokenEstimate(1, 1)) as second:
                await second.settle(outcome=Outcome.success())

    asyncio.run(go())  # with concurrency 1, a slot held until exit would deadlock here


def test_rate_cap_makes_admission_wait_on_the_clock() -> None:
    """'--rate stays as a hard cap': 120/min is one request every half second, evenly spaced
    as the CLI's --rate always spaced them (no burst): the second and the third each wait."""
    clock = FakeClock()
    scheduler = Scheduler.for_run(concurrency=8, slow_start=8, rate_per_minute=120, clock=clock)

    async def go() -> None:
        for _ in range(3):
            async with scheduler.admit(TokenEstimate(1, 1)) as slot:
                await slot.settle(outcome=Outcome.success())

    asyncio.run(go())
    assert clock.slept == [pytest.approx(0.5), pytest.approx(0.5)]


@pytest.mark.parametrize(
    ("token_rate", "budget", "estimated"),
    [
        pytest.param(None, False, 0, id="no-token-rate-no-budget-never-estimates"),
        pytest.param(1e9, False, 3, id="a-token-rate-estimates-each-once"),
        pytest.param(None, True, 3, id="a-budget-estimates-each-once"),
    ],
)
def test_a_request_is_estimated_only_when_a_member_reads_the_estimate(
    token_rate: float | None, budget: bool, estimated: int
) -> None:
    """Ticket: "given as a function, the estimate is made when a member first reads it, once:
    a run with neither a token rate nor a budget never estimates a body" (every batch request
    is admitted, and estimating its body was a sixth of the client's CPU beyond the floor)."""
    made: list[int] = []

    def estimate() -> TokenEstimate:
        made.append(1)
        return TokenEstimate(10, 20)

    extra = [ToyBudget(cap_tokens=10**9)] if budget else []
    scheduler = Scheduler.for_run(
        concurrency=4, slow_start=4, token_rate=token_rate, extra=extra, clock=FakeClock()
    )

    async def go() -> list[Ticket]:
        tickets = []
        for _ in range(3):
            async with scheduler.admit(estimate) as slot:
                tickets.append(slot.ticket)
                await slot.settle(outcome=Outcome.success())
        return tickets

    tickets = asyncio.run(go())
    assert len(made) == estimated
    assert all(t.estimated == bool(estimated) for t in tickets)
    assert "not yet made" in repr(tickets[0]) or "central=10" in repr(tickets[0])


def test_a_ticket_given_an_estimate_holds_it() -> None:
    ticket = Ticket(7, TokenEstimate(3, 5))
    assert ticket.estimated and ticket.estimate == TokenEstimate(3, 5)
    assert repr(ticket) == "Ticket(id=7, estimate=TokenEstimate(central=3, upper=5))"
