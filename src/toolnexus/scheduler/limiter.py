"""The run's own limiter: slow start, AIMD concurrency, a learned pace, run-wide Retry-After,
patience, a hard rate cap.

:class:`Window` is the state machine, driven by explicit times so tests (and a simulated server)
step it without sleeping; :class:`RunLimiter` is the :class:`~.admission.Admission` member that
waits on it with an injectable :class:`Clock`.

- **Slow start**: until the first success at most ``slow_start`` requests (default 2) are in
  flight. Two, not one: one request alone cannot tell a slow server from a dead one, and a wrong
  key then costs at most ``slow_start - 1`` requests beyond fail fast's threshold (3 + 1 = 4,
  under issue 19's "at most 5 requests before the run stops"). After the first success the
  window opens as TCP's slow start does, one slot per success (doubling every round trip), up
  to the configured concurrency or the first 429: jumping straight to 64 sends a whole window
  into an exhausted bucket (in the simulation, 4x the 429s at concurrency 256 for no gain).
- **Riding the limit** (AIMD, as TCP and the ``typesafe-jev`` client do): a 429 halves the
  window (never below 1) and pauses every admission until its ``Retry-After`` has passed (the
  SDK's schedule, 0.5 s doubling to 5 s, when the server sent none); each success adds
  ``1 / window``, about one slot per window of successes. Only a request admitted after the last
  cut can cut or pause again: a burst of 429s from one window of requests is one signal, not
  many (each later reply's whole-second ``Retry-After`` would otherwise push the pause on by
  its own arrival time, idling the run past the moment the server has tokens again).
- **Pacing by rate** (issue 32 item 1): concurrency alone keeps probing over a limit (one
  request in flight asks for 10 a second at 100 ms of latency), so a run drew 0.3 to 2 429s per
  success. A cutting 429 sets (or lowers) a learned pace, a token bucket of a quarter second of
  burst, a little under what the server accepted lately; successes raise it slowly; requests are
  released at the pace, with the window as an upper bound (:mod:`.pace`). A 429 whose body names
  the token limit teaches a token pace from the accepted requests' ``usage`` instead of the
  request pace, and requests are released by both. A 429 that gives its limit's figure (the
  API's "... 1200 requests per minute.") sets that pace from the figure at once (``pace``). In
  the simulation of the issue's regime: 0.006 to 0.014 429s per success at 1.0x the limit
  (``tests/scheduler/test_scheduler_pace.py``, ``tests/scheduler/test_scheduler_token_pace.py``,
  ``tests/scheduler/test_scheduler_named_figure.py``).
- **Patience** (issue 32 item 2): a storm of 429s (and of 503s and 529s, which a batch hands
  to the scheduler the same way) is ridden out for up to ``patience`` seconds (default 60,
  ``--patience``) counted from the last success, or from the run's first admission. Past it,
  with no success in between, the run stops (``RunStopped``, systematic: exit 4, ``--resume``)
  instead of re-sending forever; a pause the server asks for that would end past the patience
  stops it at once, since no request could be sent in time. (It used to stop after 4 run-wide
  waits, about 4 s of a 6-second blackout with ``Retry-After: 1``.)
- **``rate``** requests per second (and ``token_rate`` estimated input tokens per second, the
  account's other published limit) are hard caps, as token buckets whose burst is one second
  (a batch's ``--rate`` has none: ``Scheduler.for_run``).
"""

from __future__ import annotations

import asyncio
import math
import time
from dataclasses import dataclass, field
from typing import Protocol

from ..core import (
    DEFAULT_BATCH_PATIENCE,
    ClassifierUsage,
    ConfigError,
    RunStopped,
    Surface,
    stop_advice,
)
from .admission import Outcome, OutcomeKind, Ticket
from .pace import Pace, TokenBucket

__all__ = [
    "DEFAULT_PATIENCE",
    "DEFAULT_SLOW_START",
    "Clock",
    "MonotonicClock",
    "RunLimiter",
    "Window",
]

DEFAULT_SLOW_START = 2
#: Seconds a storm of 429/503/529 is ridden out without one success before the run stops.
DEFAULT_PATIENCE = DEFAULT_BATCH_PATIENCE
#: The official SDK's backoff when a 429 carries no Retry-After: 0.5 s doubling, capped at 5 s.
NO_RETRY_AFTER_BASE = 0.5
NO_RETRY_AFTER_CAP = 5.0


class Clock(Protocol):
    """Time as the limiter sees it: tests pass a fake one that advances without sleeping."""

    def now(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


class MonotonicClock:
    """The real clock: ``time.monotonic`` and ``asyncio.sleep``."""

    def now(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


@dataclass
class Window:
    """The AIMD state of one run; every method takes the current time."""

    max_concurrency: int
    slow_start: int = DEFAULT_SLOW_START
    decrease: float = 0.5
    rate: TokenBucket | None = None
    token_rate: TokenBucket | None = None
    window: float = field(init=False)
    in_flight: int = field(default=0, init=False)
    opened: bool = field(default=False, init=False)
    paused_until: float = field(default=float("-inf"), init=False)
    #: Tickets admitted after this id may cut the window again.
    cut_after: int = field(default=-1, init=False)
    last_admitted: int = field(default=-1, init=False)
    #: Every 429 of the run (reported beside the server's count), and those since the last
    #: success (the no-Retry-After backoff doubles on them).
    throttled: int = field(default=0, init=False)
    consecutive_429s: int = field(default=0, init=False)
    #: run-wide waits (cuts) since the last success: the run is in a storm while above 0
    waits_since_success: int = field(default=0, init=False)
    #: seconds a storm is ridden out (see the module docstring)
    patience: float = DEFAULT_PATIENCE
    #: whose words the stop speaks (``failures.Surface``, issue 43 item 7)
    surface: Surface = "library"
    #: the last success, or the first admission: where the patience is counted from
    last_progress: float | None = field(default=None, init=False)
    #: what the storm's last reply was (``HTTP 429``), for the stop's message
    storm_signature: str = field(default="", init=False)
    #: the learned sustainable request and token rates (None until a 429: see ``pace``)
    learned: Pace = field(default_factory=Pace, init=False)

    def __post_init__(self) -> None:
        if self.max_concurrency < 1 or self.slow_start < 1:
            raise ConfigError("classifier: concurrency and slow start must be at least 1")
        if not 0 < self.patience < math.inf:
            raise ConfigError(
                f"classifier: patience takes a number of seconds above 0, got {self.patience!r}"
            )
        if not 0 < self.decrease < 1:
            raise ConfigError("classifier: the decrease factor must be between 0 and 1")
        self.window = float(min(self.slow_start, self.max_concurrency))

    @property
    def allowed(self) -> int:
        """Requests that may be in flight now: within [1, max_concurrency], always."""
        cap = max(1, min(self.max_concurrency, math.floor(self.window)))
        return cap if self.opened else min(cap, self.slow_start)

    def ready_at(self, now: float, tokens: int = 0) -> float | None:
        """When a request may be admitted: ``now`` (or earlier) when it may now, a later time to
        wait for, or None while every allowed slot is in flight (wait for a release)."""
        if self.in_flight >= self.allowed:
            return None
        at = self.learned.ready_at(max(now, self.paused_until), tokens)
        if self.rate is not None:
            at = max(at, self.rate.ready_at(at))
        if self.token_rate is not None and tokens:
            at = max(at, self.token_rate.ready_at(at, tokens))
        return at

    def out_of_patience(self, now: float) -> str | None:
        """Why the run stops now (a storm outlasted the patience), or None."""
        if self.last_progress is None:
            self.last_progress = now
        if self.waits_since_success == 0:
            return None
        deadline = self.last_progress + self.patience
        if now < deadline and self.paused_until <= deadline:
            return None
        return (
            f"classifier: stopped scheduling: no success for {self.patience:g} s of "
            f"{self.storm_signature or 'HTTP 429'} replies (the patience; "
            f"{self.waits_since_success} run-wide waits); the server or the account's limit lets "
            f"nothing through (a spent quota, an outage?): {stop_advice('storm', self.surface)}"
        )

    def admit(self, now: float, ticket_id: int, tokens: int = 0) -> None:
        self.in_flight += 1
        self.last_admitted = max(self.last_admitted, ticket_id)
        self.learned.admit(now, ticket_id, tokens)
        if self.rate is not None:
            self.rate.take(now)
        if self.token_rate is not None and tokens:
            self.token_rate.take(now, tokens)

    def settle(
        self, now: float, ticket_id: int, outcome: Outcome, billed: int | None = None
    ) -> None:
        """``ticket_id``'s outcome; ``billed`` is a success's ``usage.input_tokens`` (None: not
        reported), which the token pace learns from."""
        self.in_flight = max(0, self.in_flight - 1)
        if outcome.kind is OutcomeKind.SUCCESS:
            self.consecutive_429s = 0
            self.waits_since_success = 0
            self.last_progress = now
            self.opened = True
            self.learned.accept(now, ticket_id, billed)
            # Exponential opening (one slot per success, doubling per round) until the first
            # 429; additive (one slot per round) after it.
            step = 1.0 if self.throttled == 0 else 1.0 / self.window
            self.window = min(float(self.max_concurrency), self.window + step)
        elif outcome.kind is OutcomeKind.RATE_LIMITED:
            # Not refunded, though the server charged it nothing: a refund would re-send the
            # refused requests at once into the bucket that just refused them, each 429 a new
            # cut (against serve at 3,000/min a run sank to 0.45x the limit that way).
            self.learned.charged.pop(ticket_id, None)
            self.throttled += 1
            self.storm_signature = outcome.signature
            wait = outcome.retry_after
            if wait is None:
                wait = min(NO_RETRY_AFTER_CAP, NO_RETRY_AFTER_BASE * 2**self.consecutive_429s)
            self.consecutive_429s += 1
            if ticket_id > self.cut_after:
                if outcome.retry_after != 0:
                    # "Retry-After: 0" is a server saying "again, now": a transient refusal,
                    # not a limit with a rate to learn. Learning from it ratcheted the pace
                    # down 5% a cut against a server refusing 1 request in 10 at random
                    # (tests/cli/test_images_cli.py's 20% faults: 0.4 s became minutes).
                    self.learned.slow(now, outcome.limit, outcome.limit_rate)
                self.waits_since_success += 1
                self.paused_until = max(self.paused_until, now + max(0.0, wait))
                self.window = max(1.0, self.window * self.decrease)
                self.cut_after = self.last_admitted
        elif outcome.kind is OutcomeKind.NOT_SENT:
            self.learned.refund(ticket_id)
        else:
            # A failure may have been billed: what the token pace charged it stays charged.
            self.learned.charged.pop(ticket_id, None)

    @property
    def pace(self) -> TokenBucket | None:
        """The learned request pace (None until a 429 of the request limit)."""
        return self.learned.requests

    @property
    def token_pace(self) -> TokenBucket | None:
        """The learned token pace (None until a 429 that names the token limit)."""
        return self.learned.tokens


class RunLimiter:
    """The run's limiter as an admission member: waits on a :class:`Window` with a clock."""

    def __init__(
        self,
        max_concurrency: int,
        *,
        slow_start: int = DEFAULT_SLOW_START,
        rate: float | None = None,
        token_rate: float | None = None,
        clock: Clock | None = None,
        patience: float = DEFAULT_PATIENCE,
        surface: Surface = "library",
    ) -> None:
        self.window = Window(
            max_concurrency,
            slow_start=slow_start,
            patience=patience,
            surface=surface,
            rate=TokenBucket(rate) if rate is not None else None,
            token_rate=TokenBucket(token_rate) if token_rate is not None else None,
        )
        self.clock: Clock = clock or MonotonicClock()
        self._changed: asyncio.Event | None = None

    def _event(self) -> asyncio.Event:
        if self._changed is None:
            self._changed = asyncio.Event()
        return self._changed

    async def acquire(self, ticket: Ticket) -> None:
        window = self.window
        while True:
            # The account's tokens-per-second limit bills what is charged: the central estimate
            # (made only once there is such a limit, a hard one or a learned one).
            counted = window.token_rate is not None or window.token_pace is not None
            tokens = ticket.estimate.central if counted else 0
            now = self.clock.now()
            why = self.window.out_of_patience(now)
            if why is not None:
                raise RunStopped(why, "systematic")
            at = self.window.ready_at(now, tokens)
            if at is None:
                await self._event().wait()
            elif at > now:
                await self.clock.sleep(at - now)
            else:
                self.window.admit(now, ticket.id, tokens)
                return

    async def release(self, ticket: Ticket, usage: ClassifierUsage, outcome: Outcome) -> None:
        billed = usage.input_tokens if usage.reported and usage.input_tokens else None
        self.window.settle(self.clock.now(), ticket.id, outcome, billed)
        # Wake every waiter to re-check; a fresh event for the next round of waiting.
        event, self._changed = self._event(), None
        event.set()
