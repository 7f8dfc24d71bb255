"""The admission interface: what every limit on sending a request implements. Pure (no I/O).

A batch loop asks before each request and reports after it::

    ticket = Ticket(id=..., estimate=lambda: estimate_tokens(body))
    await admission.acquire(ticket)          # waits, or raises RunStopped
    ... send ...
    await admission.release(ticket, usage, Outcome.success())

Three kinds of member implement :class:`Admission`: the run's own limiter (slow start, AIMD,
Retry-After, ``--rate``), a limiter shared by processes or Ray workers (a remote actor behind the
same two calls, which is why both are ``async``), and a spend budget (reserve the estimate on
acquire, settle the charge on release). :class:`Chain` composes them, so a later issue adds a
member without touching the batch loop. :class:`~.run.Scheduler` wraps a chain in the
``async with scheduler.admit(...)`` form.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

from ..core import ClassifierUsage
from .tokens import TokenEstimate

__all__ = [
    "Admission",
    "Chain",
    "Outcome",
    "OutcomeKind",
    "Ticket",
]


class OutcomeKind(Enum):
    """How one admitted request ended, as the admission members need to know it."""

    #: A 2xx answer: the limiter opens up, the budget charges the usage.
    SUCCESS = "success"
    #: A 429: the whole run waits and slows down; the caller re-submits the request.
    RATE_LIMITED = "rate_limited"
    #: A failure of this request only (a 5xx or timeout after its retries, a 4xx about its own
    #: body): counted neither as the account's limit nor as a reason to stop the run.
    FAILED = "failed"
    #: A failure every request of the run would repeat (401, 403, 402, an unknown model, a
    #: connection refused after the retries): enough of them in a row stop the run.
    SYSTEMATIC = "systematic"
    #: Admitted but never sent (a later member refused it, the caller was cancelled).
    NOT_SENT = "not_sent"


@dataclass(frozen=True)
class Outcome:
    """One request's outcome. Build it with the class methods.

    ``retry_after`` (seconds) is the server's ``retry-after-ms`` / ``Retry-After`` on a 429, or
    None when it sent neither. ``cause`` is a one-line, secret-free description (the error's own
    message); ``signature`` is what "failed the same way" compares (``HTTP 401``), since two
    failures' lines differ by request id. ``limit`` is the limit a 429's body names
    (``"tokens"`` or ``"requests"``; empty when it names none): the limiter learns that one's
    pace. ``limit_rate`` is that limit's figure a second when the body gives it ("1200 requests
    per minute": 20.0), which the pace takes as the server's word on the sustainable rate."""

    kind: OutcomeKind
    retry_after: float | None = None
    cause: str = ""
    signature: str = ""
    limit: str = ""
    limit_rate: float | None = None

    @classmethod
    def success(cls) -> Outcome:
        return cls(OutcomeKind.SUCCESS)

    @classmethod
    def rate_limited(
        cls, retry_after: float | None, limit: str = "", limit_rate: float | None = None
    ) -> Outcome:
        return cls(
            OutcomeKind.RATE_LIMITED,
            retry_after=retry_after,
            signature="HTTP 429",
            limit=limit,
            limit_rate=limit_rate,
        )

    @classmethod
    def failed(cls, cause: str) -> Outcome:
        return cls(OutcomeKind.FAILED, cause=cause)

    @classmethod
    def systematic(cls, cause: str, signature: str) -> Outcome:
        return cls(OutcomeKind.SYSTEMATIC, cause=cause, signature=signature)

    @classmethod
    def not_sent(cls) -> Outcome:
        return cls(OutcomeKind.NOT_SENT)


class Ticket:
    """One admission: ``id`` is unique within the scheduler that made it (a shared limiter keys
    it with its worker); ``estimate`` is the request's input tokens (upper for limits, central
    for spend). Given as a function, the estimate is made when a member first reads it, once:
    a run with neither a token rate nor a budget never estimates a body."""

    __slots__ = ("_estimate", "_estimate_of", "id")

    def __init__(self, id: int, estimate: TokenEstimate | Callable[[], TokenEstimate]) -> None:
        self.id = id
        if isinstance(estimate, TokenEstimate):
            self._estimate: TokenEstimate | None = estimate
            self._estimate_of: Callable[[], TokenEstimate] | None = None
        else:
            self._estimate, self._estimate_of = None, estimate

    @property
    def estimate(self) -> TokenEstimate:
        if self._estimate is None:
            assert self._estimate_of is not None, "a ticket holds an estimate or its function"
            self._estimate, self._estimate_of = self._estimate_of(), None
        return self._estimate

    @property
    def estimated(self) -> bool:
        """Whether the estimate was made (a test's window on the laziness)."""
        return self._estimate is not None

    def __repr__(self) -> str:
        shown = repr(self._estimate) if self._estimate is not None else "not yet made"
        return f"Ticket(id={self.id}, estimate={shown})"


class Admission(Protocol):
    """A limit on sending requests. Both calls may wait (a remote limiter is an RPC).

    ``acquire`` returns once ``ticket`` may be sent, or raises :class:`RunStopped`. Every
    acquired ticket is released exactly once, with the usage the server charged (zero when not
    sent) and the outcome; a ticket whose ``acquire`` raised is never released."""

    async def acquire(self, ticket: Ticket) -> None: ...

    async def release(self, ticket: Ticket, usage: ClassifierUsage, outcome: Outcome) -> None: ...


class Chain:
    """Several admission members acting as one: a ticket is admitted when every member admits
    it, in order; released by every member, in reverse order.

    Put members that WAIT (a limiter) before members that REFUSE (fail fast, a budget): a budget
    that reserved spend for a ticket still queued behind the limiter would refuse others for
    money nobody is spending yet. When a member refuses, the members that had admitted the
    ticket release it as not sent, so a refusal costs no slot and no spend."""

    def __init__(self, members: Sequence[Admission]) -> None:
        self.members = tuple(members)

    async def acquire(self, ticket: Ticket) -> None:
        admitted: list[Admission] = []
        try:
            for member in self.members:
                await member.acquire(ticket)
                admitted.append(member)
        except BaseException:
            for member in reversed(admitted):
                await member.release(ticket, ClassifierUsage(), Outcome.not_sent())
            raise

    async def release(self, ticket: Ticket, usage: ClassifierUsage, outcome: Outcome) -> None:
        for member in reversed(self.members):
            await member.release(ticket, usage, outcome)
