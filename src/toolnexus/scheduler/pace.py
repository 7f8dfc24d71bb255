"""What a run learns of the server's sustainable rates: requests and tokens a second. Pure.

A 429 is the only evidence of a limit, and the successes just before it are the only evidence of
what the limit lets through: so the first 429 that cuts (``limiter.Window``) sets a pace a little
(``PACE_BACKOFF``) under the rate of the successes of the last ``PACE_WINDOW`` seconds, each later
one lowers it the same way (never raises it), and each success raises it by ``PACE_GAIN`` of
what it carried (about 2 % of the rate a second, whatever the rate).

Two paces, as the account has two limits (``system-one-wire.md``: 1,200 requests a minute and
250,000 tokens a second): a 429 whose body names the token limit (``serve`` and the API say
"... tokens per second") teaches the **token** pace, from the ``usage.input_tokens`` of the
accepted requests; any other 429 teaches the request pace. Requests are released by both. The
token pace charges a request its central estimate when it is admitted (the bill is not known
yet) and settles the difference with the usage the server reports, so the pace is counted in
billed tokens whatever the estimate's error; a request that was never sent is refunded. One the
server refused (429) is not, though the server charged it nothing: refunded, it would go again at
once into the bucket that just refused it. When no accepted request reported
its usage there is no token rate to learn, and the 429 teaches the request pace instead.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

from ..errors import ConfigError

__all__ = [
    "PACE_BACKOFF",
    "PACE_BURST",
    "PACE_FLOOR",
    "PACE_GAIN",
    "PACE_WINDOW",
    "Pace",
    "TokenBucket",
]

#: The successes of this many seconds measure what the server accepts...
PACE_WINDOW = 2.0
#: ...a 429 sets the pace a little under it...
PACE_BACKOFF = 0.95
#: ...and each success adds this share of what it carried to the pace a second (0.02 requests a
#: second per request: about 2 % of the rate a second).
PACE_GAIN = 0.02
#: The request pace never goes under one request every 10 s (the patience decides when to stop).
PACE_FLOOR = 0.1
#: Seconds of the pace a run may save up and release at once.
PACE_BURST = 0.25


@dataclass
class TokenBucket:
    """``rate`` units per second, at most ``burst`` saved (default: one second of the rate).

    A cost larger than the burst is let through when the bucket is full (it goes negative), so a
    single large request is slowed, never refused forever."""

    rate: float
    burst: float = 0.0
    level: float = field(init=False, repr=False)
    last: float | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if not self.rate > 0 or not math.isfinite(self.rate):
            raise ConfigError(f"classifier: a rate must be a positive number, got {self.rate!r}")
        if self.burst <= 0:
            self.burst = max(1.0, self.rate)
        self.level = self.burst

    def _fill(self, now: float) -> None:
        if self.last is not None and now > self.last:
            self.level = min(self.burst, self.level + (now - self.last) * self.rate)
        self.last = now if self.last is None else max(self.last, now)

    def ready_at(self, now: float, cost: float = 1.0) -> float:
        """The earliest time ``cost`` can be taken (``now`` when it can be taken now)."""
        self._fill(now)
        need = min(cost, self.burst) - self.level
        return now if need <= 0 else now + need / self.rate

    def take(self, now: float, cost: float = 1.0) -> None:
        self._fill(now)
        self.level -= cost

    def give_back(self, cost: float) -> None:
        """Return ``cost`` taken earlier (never past the burst)."""
        self.level = min(self.burst, self.level + cost)


def _paced(bucket: TokenBucket | None, rate: float, floor: float) -> TokenBucket:
    # A short burst (PACE_BURST seconds of the rate): a release the event loop makes late (it was
    # decoding a reply, writing a record) is caught up, not lost; the server's own bucket holds a
    # whole second, so catching up never passes it.
    burst = max(floor, rate * PACE_BURST)
    if bucket is None:
        return TokenBucket(rate, burst=burst)
    bucket.rate, bucket.burst = rate, burst
    bucket.level = min(bucket.level, burst)
    return bucket


@dataclass
class Pace:
    """The learned request and token paces (None until a 429 teaches them)."""

    requests: TokenBucket | None = None
    tokens: TokenBucket | None = None
    #: (when, billed input tokens) of the successes of the last PACE_WINDOW seconds
    accepted: deque[tuple[float, int]] = field(default_factory=deque, repr=False)
    first_success: float | None = field(default=None, repr=False)
    #: tokens the token pace charged each ticket in flight, settled on release
    charged: dict[int, int] = field(default_factory=dict, repr=False)

    def ready_at(self, at: float, tokens: int) -> float:
        """The earliest time from ``at`` a request of ``tokens`` (central estimate) may go."""
        if self.requests is not None:
            at = max(at, self.requests.ready_at(at))
        if self.tokens is not None and tokens:
            at = max(at, self.tokens.ready_at(at, tokens))
        return at

    def admit(self, now: float, ticket_id: int, tokens: int) -> None:
        if self.requests is not None:
            self.requests.take(now)
        if self.tokens is not None and tokens:
            self.tokens.take(now, tokens)
            self.charged[ticket_id] = tokens

    def refund(self, ticket_id: int) -> None:
        """The ticket was never sent: give back what the token pace charged it."""
        charged = self.charged.pop(ticket_id, 0)
        if self.tokens is not None and charged:
            self.tokens.give_back(charged)

    def accept(self, now: float, ticket_id: int, billed: int | None) -> None:
        """A success that cost ``billed`` input tokens (None: not reported). Remember it, settle
        the token pace's charge with the bill, and let both paces climb slowly."""
        charged = self.charged.pop(ticket_id, 0)
        tokens = charged if billed is None else billed
        if self.tokens is not None and tokens != charged:
            self.tokens.level -= tokens - charged
        if self.first_success is None:
            self.first_success = now
        self.accepted.append((now, tokens))
        while self.accepted[0][0] < now - PACE_WINDOW:
            self.accepted.popleft()
        if self.requests is not None:
            self.requests = _paced(self.requests, self.requests.rate + PACE_GAIN, 1.0)
        if self.tokens is not None and tokens:
            self.tokens = _paced(self.tokens, self.tokens.rate + PACE_GAIN * tokens, 1.0)

    def slow(self, now: float, limit: str) -> None:
        """A 429 that cuts, about ``limit`` (``"tokens"``, or any other: requests): pace a
        little under what the server accepted lately. A 429 with no recent successes (a
        blackout) teaches nothing."""
        if self.first_success is None:
            return
        span = min(PACE_WINDOW, now - self.first_success)
        recent = [tokens for when, tokens in self.accepted if when >= now - PACE_WINDOW]
        if span <= 0 or len(recent) < 2:
            return
        if limit == "tokens" and sum(recent) > 0:
            measured = sum(recent) / span
            if self.tokens is not None:
                measured = min(measured, self.tokens.rate)
            self.tokens = _paced(self.tokens, PACE_BACKOFF * measured, 1.0)
            return
        measured = len(recent) / span
        if self.requests is not None:
            measured = min(measured, self.requests.rate)
        self.requests = _paced(self.requests, max(PACE_FLOOR, PACE_BACKOFF * measured), 1.0)
