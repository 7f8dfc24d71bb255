"""An account's limits, as ``toolnexus serve --rate-limit N/min --token-limit N/s`` enforces them.

The live API allows 1,200 requests a minute and 250,000 tokens a second per account and answers
a request over either with 429 and ``Retry-After`` (whole seconds; the official SDK prefers
``retry-after-ms``), with no quota headers (``../shared/reference/system-one-wire.md``). serve
does the same per key, a key being the ``Authorization`` bearer value (never logged: ``/_stats``
names it by :func:`key_label`).

Each limit is a token bucket: it holds at most one second of its rate (at least one request, so
a slow limit still admits anything) and refills continuously. A request is admitted when both
buckets hold its cost (one request; its :func:`~toolnexus.serve.synthetic.input_tokens`), and
then both are charged; otherwise it is refused whole and charged nothing. A request that costs
more tokens than the bucket can ever hold is admitted when the bucket is full and leaves it in
debt, so it is slowed, not refused for ever. The clock is injected, so tests need no sleeps.
Pure: no I/O.
"""

from __future__ import annotations

import hashlib
import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Limits", "Refusal", "TokenBucket", "key_label", "parse_rate", "rate_limit_body"]

_RATE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*/\s*(s|sec|second|min|minute)\s*")
_PER_SECOND = {"s": 1.0, "sec": 1.0, "second": 1.0, "min": 60.0, "minute": 60.0}
#: Buckets kept per key before the full ones (indistinguishable from new ones) are dropped.
_KEYS_KEPT = 10_000


def parse_rate(spec: str, flag: str, unit: str) -> float:
    """``"3000/min"`` or ``"50/s"`` as a rate per second; ``ValueError`` naming ``flag`` and the
    form it takes (``unit``, e.g. ``N/min``) otherwise."""
    m = _RATE.fullmatch(spec)
    rate = float(m.group(1)) / _PER_SECOND[m.group(2)] if m else 0.0
    if not math.isfinite(rate) or rate <= 0:
        raise ValueError(f"{flag} {spec!r} is not a rate above 0, such as {unit}")
    return rate


def rate_limit_body(limit: float, what: str) -> dict[str, str]:
    """The API's 429 body: ``{"detail": "Rate limit exceeded: 1200 requests per minute."}``."""
    shown = f"{limit:.0f}" if limit == int(limit) else f"{limit:g}"
    return {"detail": f"Rate limit exceeded: {shown} {what}."}


def key_label(bearer: str) -> str:
    """How ``/_stats`` names a key: the first 12 hex digits of the sha256 of the bearer value
    (``"none"`` when no key was sent), so a client can find its own row and nobody reads it."""
    if not bearer:
        return "none"
    return hashlib.sha256(bearer.encode("utf-8", "surrogatepass")).hexdigest()[:12]


@dataclass
class TokenBucket:
    """``capacity`` tokens at most, refilled at ``rate`` a second, read at ``now`` seconds."""

    rate: float
    capacity: float
    level: float
    stamp: float

    @classmethod
    def full(cls, rate: float, now: float) -> TokenBucket:
        """A bucket of one second of ``rate`` (at least 1), full at ``now``."""
        capacity = max(1.0, rate)
        return cls(rate, capacity, capacity, now)

    def _refill(self, now: float) -> None:
        if now > self.stamp:
            self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
            self.stamp = now

    def wait(self, cost: float, now: float) -> float:
        """Seconds until ``cost`` can be taken (0: now)."""
        self._refill(now)
        need = min(cost, self.capacity)
        # A hair of slack: 50 refills of 0.02 s must make one whole second, float or not.
        return 0.0 if self.level >= need - 1e-9 else (need - self.level) / self.rate

    def take(self, cost: float, now: float) -> None:
        """Charge ``cost`` (after :meth:`wait` said 0; the level may go below 0: debt)."""
        self._refill(now)
        self.level -= cost

    def retune(self, rate: float, now: float) -> None:
        """Refill at ``rate`` from ``now`` on, holding at most one second of it."""
        self._refill(now)
        self.rate, self.capacity = rate, max(1.0, rate)
        self.level = min(self.level, self.capacity)

    def is_full(self, now: float) -> bool:
        self._refill(now)
        return self.level >= self.capacity


@dataclass(frozen=True)
class Refusal:
    """A 429: which limit (``requests`` or ``tokens``), its body and its two headers."""

    limit: str
    body: dict[str, str]
    headers: dict[str, str]


class Limits:
    """Per-key buckets for a request rate and a token rate (either may be ``None``: unlimited).
    ``clock`` returns seconds (``time.monotonic``); tests pass their own."""

    def __init__(
        self,
        requests_per_second: float | None,
        tokens_per_second: float | None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.requests_per_second = requests_per_second
        self.tokens_per_second = tokens_per_second
        self.clock = clock
        self._buckets: dict[tuple[str, str], TokenBucket] = {}

    @property
    def active(self) -> bool:
        return self.requests_per_second is not None or self.tokens_per_second is not None

    @property
    def counts_tokens(self) -> bool:
        return self.tokens_per_second is not None

    def _bucket(self, key: str, kind: str, rate: float, now: float) -> TokenBucket:
        bucket = self._buckets.get((key, kind))
        if bucket is None:
            if len(self._buckets) >= _KEYS_KEPT:
                self._buckets = {k: b for k, b in self._buckets.items() if not b.is_full(now)}
            bucket = self._buckets[(key, kind)] = TokenBucket.full(rate, now)
        return bucket

    def set_requests_per_second(self, rate: float) -> None:
        """Change the request limit from now on (``--rate-change``): every key's bucket takes
        the new rate and holds at most one second of it."""
        if rate == self.requests_per_second:
            return
        self.requests_per_second = rate
        now = self.clock()
        for (_, kind), bucket in self._buckets.items():
            if kind == "requests":
                bucket.retune(rate, now)

    def admit(self, key: str, tokens: int = 0) -> Refusal | None:
        """Charge one request of ``tokens`` input tokens to ``key``, or say why not."""
        now = self.clock()
        wanted: list[tuple[TokenBucket, float, str, float]] = []
        if self.requests_per_second is not None:
            rate = self.requests_per_second
            wanted.append((self._bucket(key, "requests", rate, now), 1.0, "requests", rate))
        if self.tokens_per_second is not None:
            rate = self.tokens_per_second
            wanted.append((self._bucket(key, "tokens", rate, now), float(tokens), "tokens", rate))
        waits = [(bucket.wait(cost, now), kind, rate) for bucket, cost, kind, rate in wanted]
        longest = max(waits, default=(0.0, "", 0.0))
        if longest[0] > 0:
            seconds, kind, rate = longest
            body = (
                rate_limit_body(rate * 60, "requests per minute")
                if kind == "requests"
                else rate_limit_body(rate, "tokens per second")
            )
            ms = max(1, math.ceil(seconds * 1000))
            headers = {"Retry-After": str(math.ceil(ms / 1000)), "retry-after-ms": str(ms)}
            return Refusal(kind, body, headers)
        for bucket, cost, _, _ in wanted:
            bucket.take(cost, now)
        return None
