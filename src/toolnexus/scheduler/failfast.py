"""Failing fast: which failures every request of a run would repeat, and when they stop it.

:func:`outcome_of` turns the library's own errors into an :class:`~.admission.Outcome`. It
classifies by what the server said, not only the status: a 400 whose body says
``{"detail": {"error_type": "api_usage_error", ...}}`` is the API's answer for an unknown model,
and every request of the run names the same model; any other 400 is about that request's own
body. Systematic: 401, 403 (the key), 402 (a gateway's insufficient funds), the unknown model, a
404 (the endpoint itself does not exist: a wrong base path; the API answers an unknown model
with a 400), a connection refused and a timeout after the retries (nothing listens there, or a
hung server: issue 32 item 2). A 429 is the account's limit (its body may name which,
:func:`limit_named`, and often its figure, :func:`limit_figure`), and a 503 or 529 (overloaded)
is treated alike: the run waits and re-sends, within its patience (``limiter``). Everything else
(500, 502, 504, a 4xx about one body) is that request's own failure.

:class:`FailFast` is the admission member that stops the run once ``threshold`` (default 3)
requests in a row failed the same systematic way, with one line naming the cause. With the
limiter's slow start of 2 in flight, a wrong key costs at most 3 + 1 = 4 requests.
"""

from __future__ import annotations

import json
import re

from ..core import ClassifierUsage, ConfigError, HTTPStatusError, RunStopped, TransportError
from .admission import (
    Outcome,
    OutcomeKind,
    Ticket,
)

__all__ = [
    "DEFAULT_THRESHOLD",
    "STORM_STATUSES",
    "FailFast",
    "limit_figure",
    "outcome_of",
    "retry_after_seconds",
]

DEFAULT_THRESHOLD = 3
_SYSTEMATIC_STATUSES = {
    401: "authentication",
    402: "payment required",
    403: "permission",
    404: "no such endpoint",
}
#: Statuses of a storm: the run waits and re-sends, as on a 429 (an overloaded server).
STORM_STATUSES = frozenset({429, 503, 529})
#: ``error_type`` values that no request of the run can avoid (the model is the run's).
_SYSTEMATIC_ERROR_TYPES = frozenset({"api_usage_error"})
_DIGITS = re.compile(r"[0-9]+(\.[0-9]+)?", re.ASCII)
#: Which limit a 429's body names: serve and the API say "Rate limit exceeded: 250000 tokens per
#: second." or "... 1200 requests per minute."; OpenAI-style gateways "... tokens per min (TPM)".
_NAMED_LIMIT = re.compile(r"\b(tokens?|requests?)\s+per\s+(?:s|sec|second|m|min|minute)\b", re.I)
#: ...and the figure before it, when there is one: "250000 tokens per second", "1,200 requests
#: per minute", "30000 tokens per min".
_LIMIT_FIGURE = re.compile(
    r"(?<![\w.,])([0-9]{1,3}(?:,[0-9]{3})+|[0-9]+(?:\.[0-9]+)?)\s+(tokens?|requests?)\s+per\s+"
    r"(s|sec|second|m|min|minute)\b",
    re.I | re.ASCII,
)
#: A figure outside this range (units a second) is not believed: no account's limit is that.
_FIGURE_RANGE = (1e-3, 1e9)


def retry_after_seconds(retry_after: str | None, retry_after_ms: str | None = None) -> float | None:
    """The wait a 429 asks for: ``retry-after-ms`` wins over ``Retry-After`` (as the official
    SDK does); only non-negative numbers count (an HTTP date, garbage or a sign is None, and the
    limiter's own backoff applies)."""
    for value, scale in ((retry_after_ms, 0.001), (retry_after, 1.0)):
        if value is not None and _DIGITS.fullmatch(value.strip(" \t")):
            return float(value.strip(" \t")) * scale
    return None


def error_type(body: str) -> str | None:
    """The ``error_type`` of a ``{"detail": {"error_type": ...}}`` body (or a gateway's
    ``{"error": {"type": ...}}``), or None."""
    try:
        parsed = json.loads(body)
    except ValueError:
        return None
    if not isinstance(parsed, dict):
        return None
    for outer, inner in (("detail", "error_type"), ("error", "type")):
        nested = parsed.get(outer)
        if isinstance(nested, dict) and isinstance(nested.get(inner), str):
            return str(nested[inner])
    return None


def limit_named(body: str) -> str:
    """``"tokens"`` or ``"requests"``: the limit a 429's body names ("... tokens per second"),
    or ``""`` when it names neither (the limiter then slows the request pace)."""
    m = _NAMED_LIMIT.search(body[:2000])
    if m is None:
        return ""
    return "tokens" if m.group(1).lower().startswith("token") else "requests"


def limit_figure(body: str, limit: str) -> float | None:
    """The figure a 429's body gives ``limit`` (``"tokens"`` or ``"requests"``), per second
    ("1200 requests per minute" is 20.0, "250000 tokens per second" 250000.0), or None when it
    gives none, or one no account has (under a thousandth or over a billion a second: a garbled
    or hostile body)."""
    for m in _LIMIT_FIGURE.finditer(body[:2000]):
        if not m.group(2).lower().startswith(limit[:5]):
            continue
        figure = float(m.group(1).replace(",", ""))
        if m.group(3).lower().startswith("m"):
            figure /= 60.0
        low, high = _FIGURE_RANGE
        return figure if low <= figure <= high else None
    return None


def outcome_of(error: BaseException, *, retry_after_ms: str | None = None) -> Outcome:
    """The outcome of a request that raised ``error`` after the transport's own retries.

    ``retry_after_ms`` is the response's ``retry-after-ms`` header when the caller has it (the
    error carries ``Retry-After`` only)."""
    if isinstance(error, HTTPStatusError):
        status = error.status
        if status in STORM_STATUSES:
            wait = retry_after_seconds(error.retry_after, retry_after_ms)
            limit = limit_named(error.body) if status == 429 else ""
            figure = limit_figure(error.body, limit) if limit else None
            return Outcome(
                OutcomeKind.RATE_LIMITED,
                retry_after=wait,
                signature=f"HTTP {status}",
                limit=limit,
                limit_rate=figure,
            )
        if status in _SYSTEMATIC_STATUSES:
            return Outcome.systematic(error.message, f"HTTP {status}")
        kind = error_type(error.body) if status == 400 else None
        if kind in _SYSTEMATIC_ERROR_TYPES:
            return Outcome.systematic(error.message, f"HTTP 400 {kind}")
        return Outcome.failed(error.message)
    if isinstance(error, TransportError):
        if error.kind in ("connection refused", "timeout"):
            return Outcome.systematic(error.message, error.kind)
        return Outcome.failed(error.message)
    return Outcome.failed(f"{type(error).__name__}")


class FailFast:
    """Stops admissions after ``threshold`` consecutive identical systematic failures.

    "In a row" means no success between them; any success resets the count, so a key revoked
    or funds exhausted mid-run stops it too, not only a wrong key at the start. Admitted
    requests finish; every later ``acquire`` raises :class:`RunStopped` with the same line."""

    def __init__(self, threshold: int = DEFAULT_THRESHOLD) -> None:
        if threshold < 1:
            raise ConfigError("classifier: the fail-fast threshold must be at least 1")
        self.threshold = threshold
        self.stopped: RunStopped | None = None
        self._signature = ""
        self._streak = 0

    async def acquire(self, ticket: Ticket) -> None:
        if self.stopped is not None:
            # A fresh error per caller: one shared instance would gather every traceback.
            raise RunStopped(self.stopped.message, self.stopped.kind)

    async def release(self, ticket: Ticket, usage: ClassifierUsage, outcome: Outcome) -> None:
        if outcome.kind is OutcomeKind.SUCCESS:
            self._streak = 0
        elif outcome.kind is OutcomeKind.SYSTEMATIC:
            same = outcome.signature == self._signature
            self._streak = self._streak + 1 if same else 1
            self._signature = outcome.signature
            if self._streak >= self.threshold and self.stopped is None:
                self.stopped = RunStopped(
                    f"classifier: stopped scheduling after {self._streak} requests failed the "
                    f"same way ({outcome.signature}): {outcome.cause.removeprefix('classifier: ')}",
                    "systematic",
                )
