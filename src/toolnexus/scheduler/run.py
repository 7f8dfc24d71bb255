"""The scheduler a batch loop talks to: ``async with scheduler.admit(...) as slot``.

::

    scheduler = Scheduler.for_run(concurrency=16, rate_per_minute=None)
    async with scheduler.admit(lambda: estimate_tokens(body)) as slot:
        try:
            decision = await send(body)
        except ClassifierError as e:
            settled = await slot.settle(outcome=outcome_of(e))
            if settled.requeue:           # a 429: back to the queue, not an error record
                queue.put_back(item)      # the next admit() waits until settled.not_before
            else:
                write_error(item, e)
        else:
            await slot.settle(usage=decision.usage, outcome=Outcome.success())

``admit`` raises :class:`~.admission.RunStopped` once the run stops (fail fast, a budget); the
requests already admitted finish and are settled as usual. ``settle`` releases the ticket at
once. A slot left unsettled is settled on exit: as the classified error when the body raised
one (and the error goes on), else as not sent.

A batch hands its scheduler down explicitly, as an argument (issue 30 item 3: no context
variable): ``batch.evaluate_group(..., scheduler=)`` -> ``RequestPipeline.evaluate_prepared``
(or ``packed.evaluate_pack``) -> the style's ``decide`` -> the one place a request is sent,
``transport.SystemOneTransport.exchange(..., scheduler=)``. So every request of every style
that speaks HTTP, a packed one included, is admitted exactly where it is sent, with its own
bytes' estimate, and a request outside a batch (a single ``evaluate``: no scheduler) is not
admitted at all.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from ..core import ClassifierUsage, ConfigError, RunStopped, Surface
from .admission import (
    Admission,
    Chain,
    Outcome,
    OutcomeKind,
    Ticket,
)
from .failfast import DEFAULT_THRESHOLD, FailFast, outcome_of
from .limiter import (
    DEFAULT_PATIENCE,
    DEFAULT_SLOW_START,
    Clock,
    MonotonicClock,
    RunLimiter,
)
from .pace import TokenBucket
from .tokens import TokenEstimate

__all__ = ["Scheduler", "Settled", "Slot"]


@dataclass(frozen=True)
class Settled:
    """What the caller does next with a settled request: ``requeue`` it (a 429: the run waits
    until ``not_before`` on the scheduler's clock, so re-submitting at once is right)."""

    requeue: bool
    not_before: float | None = None


class Slot:
    """One admitted request; :meth:`settle` it once with what the server charged."""

    def __init__(self, scheduler: Scheduler, ticket: Ticket) -> None:
        self.ticket = ticket
        self._scheduler = scheduler
        self.outcome: Outcome | None = None

    async def settle(self, *, outcome: Outcome, usage: ClassifierUsage | None = None) -> Settled:
        """Release the ticket now (the slot is free before the caller writes its record) and
        say whether to re-submit the request."""
        if self.outcome is not None:
            raise ConfigError("classifier: a scheduler slot is settled once")
        self.outcome = outcome
        await self._scheduler.admission.release(self.ticket, usage or ClassifierUsage(), outcome)
        if outcome.kind is OutcomeKind.RATE_LIMITED:
            return Settled(True, self._scheduler.not_before())
        return Settled(False)


class Scheduler:
    """An admission chain plus the clock it runs on and the tickets it numbers."""

    def __init__(self, admission: Admission, clock: Clock | None = None) -> None:
        self.admission = admission
        self.clock: Clock = clock or MonotonicClock()
        self._ids = itertools.count()
        self.stopped: RunStopped | None = None
        #: The run's own limiter, when the chain has one: it knows when the run may send again.
        self.limiter: RunLimiter | None = None
        #: Called with a state and ``tokens.limit_violation``'s phrase before a request of that
        #: state alone is sent over the wire's token limits (``BatchOptions.on_over_limit``).
        self.on_over_limit: Callable[[Any, str], None] | None = None

    def not_before(self) -> float:
        """When the next admission can happen at the earliest, on this scheduler's clock."""
        now = self.clock.now()
        return now if self.limiter is None else max(now, self.limiter.window.paused_until)

    @classmethod
    def for_run(
        cls,
        *,
        concurrency: int,
        rate_per_minute: float | None = None,
        token_rate: float | None = None,
        slow_start: int = DEFAULT_SLOW_START,
        fail_fast: int = DEFAULT_THRESHOLD,
        extra: Sequence[Admission] = (),
        clock: Clock | None = None,
        patience: float = DEFAULT_PATIENCE,
        surface: Surface = "library",
    ) -> Scheduler:
        """The run's scheduler: its limiter (which waits), then fail fast, then ``extra``
        members that refuse (a budget). ``rate_per_minute`` is ``--rate`` (requests per
        minute, as the CLI and the account's published limit count them); ``token_rate`` is
        estimated input tokens per second (the account's other limit); ``patience`` the seconds
        a storm of 429/503/529 is ridden out without a success (``limiter``); ``surface`` whose
        words a stop speaks (``failures.Surface``)."""
        clock = clock or MonotonicClock()
        rate = None if rate_per_minute is None else rate_per_minute / 60
        limiter = RunLimiter(
            concurrency,
            slow_start=slow_start,
            rate=rate,
            token_rate=token_rate,
            clock=clock,
            patience=patience,
            surface=surface,
        )
        if rate is not None:
            # ``--rate`` spaces requests evenly, as it did before the scheduler: a cap the user
            # sets is a promise about every interval, so no one-second burst on top of it.
            limiter.window.rate = TokenBucket(rate, burst=1.0)
        scheduler = cls(Chain([limiter, FailFast(fail_fast), *extra]), clock)
        scheduler.limiter = limiter
        return scheduler

    @asynccontextmanager
    async def admit(
        self, estimate: TokenEstimate | Callable[[], TokenEstimate]
    ) -> AsyncIterator[Slot]:
        """Wait until a request with ``estimate`` (or the function that makes it, called only
        if a member asks: see :class:`~.admission.Ticket`) may be sent; raise RunStopped if
        never."""
        ticket = Ticket(next(self._ids), estimate)
        try:
            await self.admission.acquire(ticket)
        except RunStopped as stop:
            self.stopped = self.stopped or stop
            raise
        slot = Slot(self, ticket)
        try:
            yield slot
        except BaseException as error:
            if slot.outcome is None:
                outcome = outcome_of(error) if isinstance(error, Exception) else Outcome.not_sent()
                await slot.settle(outcome=outcome)
            raise
        if slot.outcome is None:
            await slot.settle(outcome=Outcome.not_sent())
