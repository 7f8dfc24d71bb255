"""One limit and one backoff for all Ray workers (issue 22 item 2): the limiter the actor holds,
driven on a virtual clock without Ray, then the actor itself on the suite's one Ray instance."""

from __future__ import annotations

import asyncio

import pytest

from toolnexus.core.answers import ClassifierUsage
from toolnexus.ray.limiter import LimiterCore, SharedLimit
from toolnexus.scheduler import Outcome, Ticket, TokenEstimate


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


def test_the_shared_limit_on_one_ray_instance(ray_session: object) -> None:
    """The actor is named, costs no CPU, and two workers' members share it."""
    import sys

    import ray
    from ray import cloudpickle

    from toolnexus.ray.limiter import shared_limiter

    # Workers cannot import a test module: ship this one's functions by value.
    cloudpickle.register_pickle_by_value(sys.modules[__name__])

    actor = shared_limiter("toolnexus-test-limiter", rate_per_minute=6000, max_concurrency=4)
    again = shared_limiter("toolnexus-test-limiter", rate_per_minute=1, max_concurrency=1)

    @ray.remote(num_cpus=0)
    def worker(handle: object, name: str, n: int) -> int:
        member = SharedLimit(handle, name)

        async def go() -> int:
            for i in range(n):
                await member.acquire(_ticket(i))
                await member.release(_ticket(i), ClassifierUsage(1, 1), Outcome.success())
            return n

        return asyncio.run(go())

    done = ray.get([worker.remote(actor, "w1", 20), worker.remote(again, "w2", 20)])
    assert done == [20, 20]
    stats = ray.get(actor.stats.remote())
    assert stats["admitted"] == 40 and stats["in_flight"] == 0
    ray.kill(actor)
