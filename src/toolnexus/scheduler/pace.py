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

**The server's own figure.** The API's 429 says which limit it is *and its figure* ("Rate limit
exceeded: 1200 requests per minute."; ``serve`` says the same). The successes before the first
429 are the ramp-up: a short run (a 3,000/min pack-20 row lasts 5 s) spent its whole steady state
climbing back from a pace learned on them (0.94x the limit). So a 429 that gives its limit's
figure sets that pace ``PACE_NAMED_SHARE`` of the figure at once, and successes never raise it
past that share: nothing is learned by probing over a limit the server has stated. A later cut
at such a pace (several processes share the key, or the server counts otherwise) lowers it as
any cut does, a little under what the server accepted in the last ``PACE_WINDOW`` seconds (a
blackout with no recent success teaches nothing). Two processes on one key held 0.95-0.99x of
the limit that way; a rule that measured only since the pace was set, and started each cut's
burst empty, ratcheted them down to 0.4-0.5x. A 429 that gives a new
figure (the limit changed mid-run) sets the pace from the new one. A figure is believed only while
the run has not seen the server accept more than it could: over a window of ``span`` seconds a
one-second bucket lets through at most ``figure x (span + 1)``; past ``PACE_DISBELIEF`` of that,
the figure is wrong (a fault injector, a gateway naming another limit) and that figure is ignored
for the rest of the run, as a body naming none is.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

from ..core import ConfigError

__all__ = [
    "PACE_BACKOFF",
    "PACE_BURST",
    "PACE_DISBELIEF",
    "PACE_FLOOR",
    "PACE_GAIN",
    "PACE_NAMED_SHARE",
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
#: A 429 that gives its limit's figure sets the pace to this share of it (the rest absorbs a
#: release the event loop makes late and an estimate's error until the bill settles it).
PACE_NAMED_SHARE = 0.98
#: A figure is disbelieved once the server accepted more than this share over what a one-second
#: bucket of that figure lets through.
PACE_DISBELIEF = 1.05


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
    #: per limit (``"requests"``, ``"tokens"``): the figure a 429 gave and the pace is held to
    named: dict[str, float] = field(default_factory=dict, repr=False)
    #: per limit: figures the server was seen to exceed (never believed again this run)
    disbelieved: dict[str, set[float]] = field(default_factory=dict, repr=False)

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
            rate = self.requests.rate + PACE_GAIN
            if "requests" in self.named:
                rate = min(rate, max(self.requests.rate, PACE_NAMED_SHARE * self.named["requests"]))
            self.requests = _paced(self.requests, rate, 1.0)
        if self.tokens is not None and tokens:
            rate = self.tokens.rate + PACE_GAIN * tokens
            if "tokens" in self.named:
                rate = min(rate, max(self.tokens.rate, PACE_NAMED_SHARE * self.named["tokens"]))
            self.tokens = _paced(self.tokens, rate, 1.0)

    def _recent(self, now: float) -> tuple[float, list[int]]:
        """The last PACE_WINDOW seconds of successes (from the first one): their span in
        seconds and the billed tokens of each."""
        if self.first_success is None:
            return 0.0, []
        span = min(PACE_WINDOW, now - self.first_success)
        return span, [tokens for when, tokens in self.accepted if when >= now - PACE_WINDOW]

    def _believes(self, now: float, limit: str, figure: float) -> bool:
        """Whether ``figure`` (a second) can be the server's limit, given what it accepted."""
        if figure in self.disbelieved.get(limit, ()):
            return False
        span, recent = self._recent(now)
        got = sum(recent) if limit == "tokens" else len(recent)
        if got > PACE_DISBELIEF * figure * (span + 1.0):
            self.disbelieved.setdefault(limit, set()).add(figure)
            self.named.pop(limit, None)
            return False
        return True

    def _set_from_figure(self, now: float, limit: str, figure: float) -> None:
        """The first cut by a 429 that gave its limit's ``figure`` (believed), or a new figure:
        pace PACE_NAMED_SHARE of it, with an empty saved burst (the server just refused)."""
        pace = self.tokens if limit == "tokens" else self.requests
        floor = PACE_FLOOR if limit != "tokens" else 1.0
        bucket = _paced(pace, max(floor, PACE_NAMED_SHARE * figure), 1.0)
        bucket.level, bucket.last = 0.0, now
        self.named[limit] = figure
        if limit == "tokens":
            self.tokens = bucket
        else:
            self.requests = bucket

    def slow(self, now: float, limit: str, figure: float | None = None) -> None:
        """A 429 that cuts, about ``limit`` (``"tokens"``, or any other: requests), giving that
        limit's ``figure`` a second or None: pace a little under the figure (see the module),
        or under what the server accepted lately. A 429 with no recent successes (a blackout)
        that gives no figure teaches nothing."""
        kind = "tokens" if limit == "tokens" else "requests"
        if figure is not None and figure > 0 and self._believes(now, kind, figure):
            pace = self.tokens if kind == "tokens" else self.requests
            if pace is None or self.named.get(kind) != figure:
                self._set_from_figure(now, kind, figure)
                return
            # A later cut at the pace the figure set (another process on the key): as any
            # cut, below, which only ever lowers it (the figure stays its ceiling).
        span, recent = self._recent(now)
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
