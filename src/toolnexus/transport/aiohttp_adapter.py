"""The default adapter: one aiohttp connection pool, each body read eagerly.

Chosen by measurement (``bench/batch.py``: 2,000 states, a 20 ms server, concurrency 16, 2 cores):
toolnexus on httpx's own pool cost ~3.1 ms CPU per request and ~3.5x the ideal wall time; on the
aiohttp pool ~0.7 ms and ~1.2x, against a bare-aiohttp floor (precomputed bytes, no decoding) of
~0.3 ms and ~1.4x. No httpx Request/Response objects are built on this path.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import aiohttp

from ..options import TransportKind
from .adapter import MAX_BODY_BYTES, Answer, BodyTooLarge, SendError, cause_chain, os_error_kind

__all__ = ["AiohttpAdapter", "failure_kind"]


def failure_kind(exc: BaseException) -> TransportKind:
    """The ``TransportError.kind`` of an aiohttp or OS failure: every one is mapped here."""
    chain = cause_chain(exc)
    kind = os_error_kind(chain, resets=(aiohttp.ServerDisconnectedError,))
    if kind is not None:
        return kind
    for e in chain:
        if isinstance(e, TimeoutError | aiohttp.ServerTimeoutError):
            return "timeout"
        if isinstance(e, aiohttp.ClientPayloadError):
            return "protocol error"
    return "network error"


async def _read_capped(resp: aiohttp.ClientResponse) -> bytes:
    """The decoded body, read chunk by chunk so that no more than the cap is ever held."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in resp.content.iter_chunked(1 << 16):
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise BodyTooLarge(resp.status, resp.headers)
        chunks.append(chunk)
    return b"".join(chunks)


class AiohttpAdapter:
    """POSTs through one aiohttp ``ClientSession``, created on first use inside the running loop
    (an aiohttp session must be born there)."""

    def __init__(self, *, max_connections: int = 100) -> None:
        self._session: aiohttp.ClientSession | None = None
        self._max_connections = max_connections

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None:
            # Proxy variables are honoured only when one is set: aiohttp's trust_env looks the
            # proxy up in a worker thread on EVERY request (measured: ~0.1 ms CPU each).
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self._max_connections),
                trust_env=any(n.lower().endswith("_proxy") and v for n, v in os.environ.items()),
            )
        return self._session

    async def send(
        self, url: str, headers: Mapping[str, str], body: bytes, timeout: float
    ) -> Answer:
        try:
            async with self._open().post(
                url,
                headers=headers,
                data=body,
                allow_redirects=False,
                timeout=aiohttp.ClientTimeout(sock_connect=timeout, sock_read=timeout),
            ) as resp:
                return resp.status, resp.headers, await _read_capped(resp)
        except (aiohttp.ClientError, OSError, TimeoutError, ValueError) as e:
            # ValueError: aiohttp refuses some URLs and headers only when sending.
            raise SendError(failure_kind(e)) from e

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
