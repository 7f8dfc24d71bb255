"""One rate limit and one backoff for every Ray worker (issue 22): a named actor that holds the
account's limiter, and the admission member each worker's scheduler asks through it.

Ray Data's own HTTP processor applies its ``qps`` per worker and ignores ``Retry-After``; here the
account's limit lives in ONE place. The actor hosts a :class:`~.scheduler.RunLimiter` (the same
token bucket, AIMD window and run-wide pause a single process uses), so ``rate_per_minute`` is
the account's limit however many workers ask, and a 429 seen by one worker pauses and slows
every worker. :class:`SharedLimit` is the worker's side: an :class:`~.scheduler.Admission`
member whose two calls are calls on the actor, placed in the worker's chain beside its own
limiter (which keeps bounding that worker's concurrency).

A worker that dies holds its admitted tickets; each ticket is therefore a lease that the actor
releases as not sent after ``lease_seconds`` (longer than any request's timeout and retries), so a
dead worker's slots come back instead of shrinking the cluster's limit for ever.

The actor holds no secret: it sees ticket ids, token estimates, usage counts and outcomes.
ray is an optional extra, imported only when this module's functions are called.
"""

from __future__ import annotations

import itertools
import uuid
from dataclasses import dataclass
from typing import Any

from ..core import ClassifierUsage, ConfigError
from ..scheduler import (
    Clock,
    Outcome,
    OutcomeKind,
    RunLimiter,
    Ticket,
    TokenBucket,
    TokenEstimate,
)

__all__ = [
    "DEFAULT_LEASE_SECONDS",
    "INSTALL_HINT",
    "LimiterCore",
    "SharedLimit",
    "require_ray",
    "shared_limiter",
]

INSTALL_HINT = "pip install 'toolnexus-classifier[ray]'"
#: A ticket not released after this long is released as not sent (its worker is presumed dead).
DEFAULT_LEASE_SECONDS = 600.0


def require_ray() -> Any:
    """The ray module, or one line naming the extra that brings it."""
    try:
        import ray
    except ImportError:
        raise ConfigError(f"classifier: Ray Data runs need ray: {INSTALL_HINT}") from None
    return ray


@dataclass
class _Lease:
    ticket: Ticket
    expires: float


class LimiterCore:
    """What the actor holds: one :class:`RunLimiter` keyed by (worker, ticket) leases.

    Plain Python, so it is tested without Ray; the actor class only forwards to it."""

    def __init__(
        self,
        *,
        rate_per_minute: float | None,
        max_concurrency: int,
        token_rate: float | None = None,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
        clock: Clock | None = None,
        burst_seconds: float | None = None,
    ) -> None:
        if rate_per_minute is not None and rate_per_minute <= 0:
            raise ConfigError("classifier: rate_per_minute must be positive")
        self.limiter = RunLimiter(
            max_concurrency,
            rate=None if rate_per_minute is None else rate_per_minute / 60.0,
            token_rate=token_rate,
            clock=clock,
        )
        self.clock: Clock = self.limiter.clock
        if burst_seconds is not None and rate_per_minute is not None:
            # A bucket shallower than the server's (which holds one second): see shared_limiter.
            rate = rate_per_minute / 60.0
            self.limiter.window.rate = TokenBucket(rate, burst=max(1.0, rate * burst_seconds))
        self.lease_seconds = lease_seconds
        self._ids = itertools.count()
        self._leases: dict[tuple[str, int], _Lease] = {}
        self.admitted = 0
        self.expired = 0

    async def _expire(self) -> None:
        now = self.clock.now()
        for key, lease in list(self._leases.items()):
            if lease.expires <= now:
                del self._leases[key]
                self.expired += 1
                await self.limiter.release(lease.ticket, ClassifierUsage(), Outcome.not_sent())

    async def acquire(self, worker: str, ticket_id: int, central: int, upper: int) -> None:
        await self._expire()
        ticket = Ticket(next(self._ids), TokenEstimate(central=central, upper=upper))
        await self.limiter.acquire(ticket)
        self._leases[(worker, ticket_id)] = _Lease(ticket, self.clock.now() + self.lease_seconds)
        self.admitted += 1

    async def release(
        self,
        worker: str,
        ticket_id: int,
        kind: str,
        retry_after: float | None,
        tokens: tuple[int, int],
        limit: str = "",
        limit_rate: float | None = None,
    ) -> None:
        lease = self._leases.pop((worker, ticket_id), None)
        if lease is None:
            return  # expired already: its slot was given back then
        outcome = Outcome(
            OutcomeKind(kind), retry_after=retry_after, limit=limit, limit_rate=limit_rate
        )
        await self.limiter.release(lease.ticket, ClassifierUsage(*tokens), outcome)

    def stats(self) -> dict[str, Any]:
        window = self.limiter.window
        return {
            "admitted": self.admitted,
            "in_flight": window.in_flight,
            "allowed": window.allowed,
            "throttled": window.throttled,
            "expired": self.expired,
        }


def shared_limiter(
    name: str,
    *,
    rate_per_minute: float | None,
    max_concurrency: int,
    token_rate: float | None = None,
    lease_seconds: float = DEFAULT_LEASE_SECONDS,
    burst_seconds: float | None = None,
) -> Any:
    """The named limiter actor ``name`` (created on first use, found afterwards), asking for no
    CPU: an actor that holds one CPU would deadlock a small cluster (engines.md).

    ``burst_seconds``: how much of the rate the bucket saves (default one second, as the
    server's). Riding a limit with a bucket as deep as the server's leaves it no slack: after
    the first burst the server's bucket sits near empty, and the few milliseconds a request
    spends between the actor and the server decide whether it is answered or refused. A
    shallower bucket sends at the same rate and keeps the rest of the server's second as slack
    for that jitter."""
    ray = require_ray()

    @ray.remote(num_cpus=0)
    class ToolnexusLimiter:
        def __init__(self) -> None:
            self.core = LimiterCore(
                rate_per_minute=rate_per_minute,
                max_concurrency=max_concurrency,
                token_rate=token_rate,
                lease_seconds=lease_seconds,
                burst_seconds=burst_seconds,
            )

        async def acquire(self, worker: str, ticket_id: int, central: int, upper: int) -> None:
            await self.core.acquire(worker, ticket_id, central, upper)

        async def release(
            self,
            worker: str,
            ticket_id: int,
            kind: str,
            retry_after: float | None,
            tokens: tuple[int, int],
            limit: str = "",
            limit_rate: float | None = None,
        ) -> None:
            await self.core.release(worker, ticket_id, kind, retry_after, tokens, limit, limit_rate)

        async def stats(self) -> dict[str, Any]:
            return self.core.stats()

    # Owned by the driver that made it: it ends with the job, never outlives it.
    return ToolnexusLimiter.options(name=name, get_if_exists=True).remote()  # type: ignore[attr-defined]


class SharedLimit:
    """A worker's admission member backed by the shared limiter actor (see the module)."""

    def __init__(self, actor: Any, worker: str | None = None) -> None:
        self.actor = actor
        self.worker = worker or uuid.uuid4().hex

    async def acquire(self, ticket: Ticket) -> None:
        est = ticket.estimate
        await self.actor.acquire.remote(self.worker, ticket.id, est.central, est.upper)

    async def release(self, ticket: Ticket, usage: ClassifierUsage, outcome: Outcome) -> None:
        await self.actor.release.remote(
            self.worker,
            ticket.id,
            outcome.kind.value,
            outcome.retry_after,
            (usage.input_tokens, usage.output_tokens),
            outcome.limit,
            outcome.limit_rate,
        )
