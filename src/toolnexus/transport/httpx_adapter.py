"""The adapter for an injected httpx transport (``transport=``) or client (``http_client=``).

This is the test seam: unit tests pass ``httpx.MockTransport(handler)`` and go through the SAME
retry loop as the default aiohttp adapter; a host may pass ``httpx.AsyncHTTPTransport(http2=True)``
for HTTP/2, or a ready ``httpx.AsyncClient`` that it owns and closes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from ..config import TransportKind
from ..core import ConfigError
from .adapter import MAX_BODY_BYTES, Answer, BodyTooLarge, SendError, cause_chain, os_error_kind

__all__ = ["HttpxAdapter", "failure_kind"]


def failure_kind(exc: BaseException) -> TransportKind:
    """The ``TransportError.kind`` of an httpx or OS failure: every one is mapped here."""
    chain = cause_chain(exc)
    kind = os_error_kind(chain)
    if kind is not None:
        return kind
    for e in chain:
        if isinstance(e, TimeoutError | httpx.TimeoutException):
            return "timeout"
        if isinstance(e, httpx.RemoteProtocolError):
            return "connection reset" if "disconnected" in str(e).lower() else "protocol error"
    return "network error"


def _another_loops(exc: RuntimeError) -> bool:
    """True for asyncio's "Event loop is closed" / "attached to a different loop": a pooled
    connection born in another event loop, not a failure of this request."""
    text = str(exc).lower()
    return "event loop is closed" in text or "different loop" in text


class HttpxAdapter:
    """POSTs through an httpx transport or client. With a transport, requests go straight to it:
    ``httpx.AsyncClient.send`` adds a cookie-jar pass over every response (measured ~0.2 ms CPU
    per request) and auth/redirect machinery that a System One POST never uses. A host's own
    client is used as given, through its ``send()``, and left open."""

    def __init__(
        self,
        transport: httpx.AsyncBaseTransport | None = None,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        self._transport = transport
        self._client = client
        self._extensions: tuple[float, dict[str, Any]] | None = None
        #: Whether the transport may hold connections: a second aclose, with no send since the
        #: first, closes nothing (a host's transport is closed once per use, never twice).
        self._open = True

    def _timeout(self, timeout: float) -> dict[str, Any]:
        if self._extensions is None or self._extensions[0] != timeout:
            per_phase = dict.fromkeys(("connect", "read", "write", "pool"), timeout)
            self._extensions = (timeout, {"timeout": per_phase})
        return self._extensions[1]

    @classmethod
    def checked(cls, transport: Any, client: Any) -> HttpxAdapter:
        """The adapter for the ``transport=`` or ``http_client=`` option (one of them set), or a
        ConfigError naming what was passed instead."""
        if client is not None:
            if not isinstance(client, httpx.AsyncClient):
                raise ConfigError(
                    "classifier: http_client must be an httpx.AsyncClient, got "
                    f"{type(client).__name__}"
                )
            return cls(client=client)
        if not isinstance(transport, httpx.AsyncBaseTransport):
            raise ConfigError(
                "classifier: transport must be an httpx async transport "
                f"(httpx.AsyncBaseTransport), got {type(transport).__name__}"
            )
        return cls(transport=transport)

    async def send(
        self, url: str, headers: Mapping[str, str], body: bytes, timeout: float
    ) -> Answer:
        request = httpx.Request(
            "POST", url, content=body, headers=headers, extensions=self._timeout(timeout)
        )
        self._open = True
        try:
            if self._client is not None:
                response = await self._client.send(request, stream=True)
            else:
                assert self._transport is not None
                response = await self._transport.handle_async_request(request)
            try:
                # Decoded chunk by chunk, so a gzip bomb stops at the cap, not in memory.
                received = bytearray()
                async for chunk in response.aiter_bytes():
                    received += chunk
                    if len(received) > MAX_BODY_BYTES:
                        raise BodyTooLarge(response.status_code, response.headers)
            finally:
                await response.aclose()
        except (httpx.HTTPError, OSError, TimeoutError) as e:
            raise SendError(failure_kind(e)) from e
        except RuntimeError as e:
            if not _another_loops(e):
                raise
            # A host's transport keeps its pool across event loops (two asyncio.run calls): a
            # pooled connection of a closed loop fails with "Event loop is closed". httpcore
            # drops that connection, so this is a network error, and the retry gets a new one.
            raise SendError("network error") from e
        return response.status_code, response.headers, bytes(received)

    async def aclose(self) -> None:
        if not self._open:
            return
        self._open = False
        if self._transport is not None:
            try:
                await self._transport.aclose()
            except RuntimeError as e:
                # Connections of a loop that is closed now: they went with it.
                if not _another_loops(e):
                    raise
