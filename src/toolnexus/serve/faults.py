"""Injected failures: what ``--faults``, ``--fault-rate`` and the test API ask the server for.

A :class:`Fault` is one misbehaviour. ``--faults 429,500,502,503,504,529,reset,stall`` names the
kinds to draw from and ``--fault-rate R`` the share of API requests that get one (drawn from a
generator seeded with ``--seed``). Statuses answer the API's body shapes; 429 and 503 carry
``Retry-After`` (whole seconds, rounded up) and ``retry-after-ms`` (which the official SDK
prefers). ``reset`` aborts the connection with a TCP RST before any byte of an answer; ``stall``
sends nothing for ``stall_seconds`` (cut short when the server stops), then answers normally.

Tests (and ``tests/loopback.py``) also use the kinds ``truncated`` (a 200 whose JSON is cut in
half), ``not_json`` (a 200 HTML page), ``echo_auth`` (a 401/403 whose body echoes the
Authorization header, as some gateways do) and ``http`` with any status and body.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from ..core import DEFAULT_SERVE_RETRY_AFTER_MS, DEFAULT_SERVE_STALL_SECONDS
from .limits import rate_limit_body

__all__ = ["CLI_FAULTS", "DEFAULT_RETRY_AFTER_MS", "DEFAULT_STALL_SECONDS", "Fault", "parse_faults"]

#: The kinds ``--faults`` accepts.
CLI_FAULTS = ("429", "500", "502", "503", "504", "529", "reset", "stall")
#: How long a 429/503 asks the client to wait, and how long a stall lasts (defined in defaults).
DEFAULT_RETRY_AFTER_MS = DEFAULT_SERVE_RETRY_AFTER_MS
DEFAULT_STALL_SECONDS = DEFAULT_SERVE_STALL_SECONDS

_BODIES: dict[int, Any] = {
    429: rate_limit_body(1200, "requests per minute"),
    500: {"detail": "Internal Server Error"},
    502: {"detail": "Bad Gateway"},
    503: {"detail": "Service Unavailable"},
    504: {"detail": "Gateway Timeout"},
    529: {"detail": {"error_type": "overloaded_error", "message": "Overloaded"}},
}


@dataclass(frozen=True)
class Fault:
    """One injected failure. Build with the class methods, not the constructor.

    ``retry_after`` is the ``Retry-After`` header value verbatim, ``retry_after_ms`` the
    ``retry-after-ms`` one; either may be ``None`` (header absent)."""

    kind: str
    status: int = 0
    retry_after: str | None = None
    retry_after_ms: str | None = None
    body: bytes = b""
    seconds: float = 0.0

    @classmethod
    def http(
        cls,
        status: int,
        *,
        retry_after: str | None = None,
        retry_after_ms: str | None = None,
        body: Any = None,
    ) -> Fault:
        """Answer ``status`` with ``body`` (JSON-encoded unless bytes; default: the API's body
        for that status, or ``{"detail": "injected HTTP <status>"}``)."""
        if body is None:
            body = _BODIES.get(status, {"detail": f"injected HTTP {status}"})
        raw = body if isinstance(body, bytes) else json.dumps(body).encode("utf-8")
        return cls(
            "http", status=status, retry_after=retry_after, retry_after_ms=retry_after_ms, body=raw
        )

    @classmethod
    def reset(cls) -> Fault:
        """Abort the connection with a TCP RST before any response byte."""
        return cls("reset")

    @classmethod
    def stall(cls, seconds: float = DEFAULT_STALL_SECONDS) -> Fault:
        """Send nothing for ``seconds`` (ended early when the server stops), then answer."""
        return cls("stall", seconds=seconds)

    @classmethod
    def truncated(cls) -> Fault:
        """A 200 whose JSON body is cut in half (with an honest Content-Length)."""
        return cls("truncated")

    @classmethod
    def not_json(cls) -> Fault:
        """A 200 whose body is an HTML page."""
        return cls("not_json")

    @classmethod
    def echo_auth(cls, status: int = 401) -> Fault:
        """A 401/403 whose body echoes the Authorization header the client sent."""
        return cls("echo_auth", status=status)


def _cli_fault(kind: str, retry_after_ms: int, stall_seconds: float) -> Fault:
    if kind == "reset":
        return Fault.reset()
    if kind == "stall":
        return Fault.stall(stall_seconds)
    status = int(kind)
    if status in (429, 503):
        return Fault.http(
            status,
            retry_after=str(math.ceil(retry_after_ms / 1000)),
            retry_after_ms=str(retry_after_ms),
        )
    return Fault.http(status)


def parse_faults(
    spec: str,
    *,
    retry_after_ms: int = DEFAULT_RETRY_AFTER_MS,
    stall_seconds: float = DEFAULT_STALL_SECONDS,
) -> tuple[Fault, ...]:
    """``"429,503,reset"`` as faults. Raises ``ValueError`` naming an unknown kind."""
    kinds = [k.strip().lower() for k in spec.split(",") if k.strip()]
    if not kinds:
        raise ValueError(f"--faults names no fault; choose from {','.join(CLI_FAULTS)}")
    for k in kinds:
        if k not in CLI_FAULTS:
            raise ValueError(f"--faults: unknown fault {k!r}; choose from {','.join(CLI_FAULTS)}")
    return tuple(_cli_fault(k, retry_after_ms, stall_seconds) for k in kinds)
