"""One limit and one backoff for all Ray workers (issue 22 item 2): the limiter the actor holds,
driven on a virtual clock without Ray. The actor itself on a Ray instance is tested in
tests/engines/test_ray_dataset.py, the one file that starts Ray (one start per run, not one per
xdist worker that happens to take a Ray file)."""

from __future__ import annotations

import asyncio

import pytest

from toolnexus.ray.limiter import LimiterCore
from toolnexus.scheduler import Ticket, TokenEstimate


class VirtualClock:
    """Time moves only when someone sleeps: a waiter's sleep jumps the clock forward."""

    def __init__(self) -> None:
        self.t = 0.0

    def now(self) -> float:
        return self.t

    async def sleep(self, seconds: float) -> None:
        self.t += max(0.0, seconds)
        await asyncio.sleep(0)


def _ticket(i: int) -> Ticket:
    return Ticket(i, TokenEstimate(central=100, upper=150))


def test_the_rate_is_the_accounts_however_many_workers_ask() -> None:
    """120 requests/minute shared by two workers: 2 per second in all, not per worker."""
    clock = VirtualClock()
    core = LimiterCore(rate_per_minute=120, max_concurrency=64, clock=clock)

    async def go() -> list[float]:
        times: list[float] = []
        # The first success opens the slow start; then both workers ask 10 times each.
        await core.acquire("a", 0, 100, 150)
        await core.release("a", 0, "success", None, (1, 1))
        for i in range(1, 11):
            for worker in ("a", "b"):
                await core.acquire(worker, i, 100, 150)
                times.append(clock.now())
                await core.release(worker, i, "success", None, (1, 1))
        return times

    times = asyncio.run(go())
    # 21 requests at 2/s with a burst of one second (2 tokens): the last one near t = 9.5 s.
    assert times[-1] == pytest.approx((21 - 2) / 2, abs=0.01)


def test_a_429_on_one_worker_pauses_and_slows_every_worker() -> None:
    clock = VirtualClock()
    core = LimiterCore(rate_per_minute=None, max_concurrency=8, clock=clock)

    async def go() -> float:
        await core.acquire("a", 0, 1, 1)
        await core.release("a", 0, "success", None, (1, 1))
        before = core.stats()["allowed"]
        await core.acquire("a", 1, 1, 1)
        await core.release("a", 1, "rate_limited", 3.0, (0, 0))
        assert core.stats()["allowed"] < before  # multiplicative decrease, cluster-wide
        await core.acquire("b", 1, 1, 1)  # the other worker waits out the Retry-After
        return clock.now()

    assert asyncio.run(go()) == pytest.approx(3.0)


def test_a_dead_workers_tickets_come_back_when_their_lease_ends() -> None:
    clock = VirtualClock()
    core = LimiterCore(rate_per_minute=None, max_concurrency=1, lease_seconds=60, clock=clock)

    async def go() -> dict[str, object]:
        await core.acquire("a", 0, 1, 1)
        await core.release("a", 0, "success", None, (1, 1))
        await core.acquire("dead", 1, 1, 1)  # never released: its worker died
        clock.t += 61
        await core.acquire("b", 1, 1, 1)  # the lease ran out: the slot is free again
        await core.release("dead", 1, "success", None, (1, 1))  # too late: ignored
        return core.stats()

    stats = asyncio.run(go())
    assert stats["expired"] == 1
    assert stats["in_flight"] == 1


def test_every_test_that_needs_ray_is_in_the_one_file_that_starts_it() -> None:
    """``ray_session`` is module-scoped: a second file asking for it would start Ray a second
    time (5-8 s of the suite's CPU), on whichever xdist worker took that file."""
    import re
    from pathlib import Path

    asks = re.compile(r"\bray_session\s*:")  # a test's or fixture's parameter
    tests = Path(__file__).resolve().parents[1]
    users = sorted(
        p.relative_to(tests).as_posix()
        for p in tests.rglob("*.py")
        if p.name != "conftest.py" and asks.search(p.read_text(encoding="utf-8"))
    )
    assert users == ["engines/test_ray_dataset.py"]
