"""The one interface the retry loop sends through, and the failure kinds it understands.

An adapter moves bytes: one POST, one answer, no retries, no error messages. Each adapter maps
its own library's exceptions to a :class:`SendError` with a kind, in ONE function
(``aiohttp_adapter.failure_kind``, ``httpx_adapter.failure_kind``), so the retry loop never sees
a third-party exception. Imports no HTTP library.
"""

from __future__ import annotations

import errno
from collections.abc import Mapping
from typing import Protocol, TypeAlias

from ..config import TransportKind

__all__ = [
    "MAX_BODY_BYTES",
    "Adapter",
    "Answer",
    "BodyTooLarge",
    "SendError",
    "cause_chain",
    "os_error_kind",
]

#: The most body bytes, AFTER content decoding, that an adapter reads from one answer. A System
#: One answer is a few kilobytes; a gzip bomb of 2 MB once became 4.8 GB of memory.
MAX_BODY_BYTES = 8 << 20

#: One HTTP answer: status, headers (case-insensitive lookups), the whole body.
Answer: TypeAlias = tuple[int, Mapping[str, str], bytes]


class SendError(Exception):
    """An attempt got no HTTP answer. ``kind`` is a ``TransportError.kind``; the library's own
    exception is the ``__cause__``. Raised by adapters, caught by the retry loop, never public."""

    def __init__(self, kind: TransportKind) -> None:
        super().__init__(kind)
        self.kind = kind


class BodyTooLarge(Exception):
    """An answer whose decoded body passed :data:`MAX_BODY_BYTES`; reading stopped there.
    Carries the status and headers, so the error can name them. Never public."""

    def __init__(self, status: int, headers: Mapping[str, str]) -> None:
        super().__init__(status)
        self.status = status
        self.headers = headers


class Adapter(Protocol):
    """What the retry loop needs from an HTTP client."""

    async def send(
        self, url: str, headers: Mapping[str, str], body: bytes, timeout: float
    ) -> Answer:
        """POST ``body`` to ``url``; the answer, whatever its status. Redirects are not
        followed. A failure without an HTTP answer raises :class:`SendError`."""
        ...

    async def aclose(self) -> None:
        """Release the connection pool this adapter owns (never one the host passed in)."""
        ...


def cause_chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and every ``__cause__``/``__context__`` behind it, each once."""
    chain: list[BaseException] = []
    seen: BaseException | None = exc
    while seen is not None and seen not in chain:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    return chain


def os_error_kind(
    chain: list[BaseException], resets: tuple[type[BaseException], ...] = ()
) -> TransportKind | None:
    """The kind "connection refused" / "connection reset" when an OS error in ``chain`` (or one of a
    library's ``resets`` classes) says so, nearest first: a library's own classes are too coarse
    (a refused connect and a DNS failure share one)."""
    reset_types: tuple[type[BaseException], ...] = (
        ConnectionResetError,
        BrokenPipeError,
        *resets,
    )
    for e in chain:
        if isinstance(e, ConnectionRefusedError):
            return "connection refused"
        if isinstance(e, reset_types):
            return "connection reset"
        if isinstance(e, OSError) and e.errno == errno.ECONNREFUSED:
            return "connection refused"
        if isinstance(e, OSError) and e.errno in (errno.ECONNRESET, errno.EPIPE):
            return "connection reset"
    return None
