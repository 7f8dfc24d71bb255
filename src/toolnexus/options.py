"""Option types shared by the classifier, its styles and the transport.

Small and dependency-free on purpose: it imports only ``errors`` and ``defaults`` from the package,
so every other module can import it without forming a cycle (a test checks the module graph).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, TypeAlias

__all__ = [
    "ErrorInfo",
    "FailureKind",
    "OnError",
    "TransportKind",
    "Verdict",
]

#: What ``on_error`` answers: retry (still bounded by ``retries``) or fail now.
Verdict: TypeAlias = Literal["retry", "fail"]

#: Why an attempt got no HTTP answer (``TransportError.kind``).
TransportKind: TypeAlias = Literal[
    "timeout",
    "connection refused",
    "connection reset",
    "network error",
    "protocol error",
]
#: Why an attempt failed: a non-2xx HTTP status, or a transport failure.
FailureKind: TypeAlias = Literal["http status", TransportKind]


@dataclass(frozen=True, slots=True)
class ErrorInfo:
    """One failed attempt, as ``on_error`` sees it. Typed and frozen: a hook reads fields, it
    cannot change what the retry loop does next except through its verdict.

    ``attempt`` is zero-based (0 = the first request). ``retryable`` is the default verdict: the
    status is in the retryable set (``DEFAULT_RETRYABLE_STATUSES`` plus ``retryable_statuses``),
    or the failure is a network error. ``wait`` is the seconds the loop sleeps before the next
    attempt if the verdict is "retry" (a numeric ``Retry-After`` wins, else the backoff).
    ``status``, ``retry_after`` (the raw header, verbatim) and ``request_id`` are ``None`` when
    there was no HTTP answer.
    """

    attempt: int
    kind: FailureKind
    retryable: bool
    wait: float
    status: int | None = None
    retry_after: str | None = None
    request_id: str | None = None


#: ``on_error(info) -> "retry" | "fail"``: runs on EVERY failed attempt and has the final say.
OnError: TypeAlias = Callable[[ErrorInfo], Verdict]
