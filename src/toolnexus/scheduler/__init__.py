"""One scheduler for every request of a run (issue 19): when a request may be sent.

- :mod:`.admission`: the typed interface (:class:`Admission`, :class:`Outcome`, :class:`Chain`)
  that the run's limiter, a limiter shared across workers and a spend budget implement;
- :mod:`.limiter`: slow start, AIMD, run-wide Retry-After, the ``--rate`` cap;
- :mod:`.failfast`: which failures are systematic, and stopping the run on them;
- :mod:`.tokens`: the token estimate (an upper bound for limits, a central one for spend);
- :mod:`.run`: :class:`Scheduler`, the ``async with scheduler.admit(...)`` form a batch uses.

Pure of HTTP: nothing here imports httpx or aiohttp.
"""

from __future__ import annotations

from ..core.errors import (
    RunStopped,
    StopKind,
)
from .admission import (
    Admission,
    Chain,
    Outcome,
    OutcomeKind,
    Ticket,
)
from .failfast import FailFast, outcome_of, retry_after_seconds
from .limiter import (
    Clock,
    MonotonicClock,
    RunLimiter,
    Window,
)
from .pace import TokenBucket
from .run import Scheduler, Settled, Slot
from .tokens import (
    CONTEXT_TOKENS,
    STATE_AND_QUESTION_TOKENS,
    TokenEstimate,
    estimate_tokens,
    limit_violation,
)

__all__ = [
    "CONTEXT_TOKENS",
    "STATE_AND_QUESTION_TOKENS",
    "Admission",
    "Chain",
    "Clock",
    "FailFast",
    "MonotonicClock",
    "Outcome",
    "OutcomeKind",
    "RunLimiter",
    "RunStopped",
    "Scheduler",
    "Settled",
    "Slot",
    "StopKind",
    "Ticket",
    "TokenBucket",
    "TokenEstimate",
    "Window",
    "estimate_tokens",
    "limit_violation",
    "outcome_of",
    "retry_after_seconds",
]
