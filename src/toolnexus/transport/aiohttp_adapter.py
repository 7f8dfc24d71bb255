"""The default adapter: one aiohttp connection pool, each body read eagerly.

Chosen by measurement (``bench/batch.py``: 2,000 states, a 20 ms server, concurrency 16, 2 cores):
toolnexus on httpx's own pool cost ~3.1 ms CPU per request and ~3.5x the ideal wall time; on the
aiohttp pool ~0.7 ms and ~1.2x, against a bare-aiohttp floor (precomputed bytes, no decoding) of
~0.3 ms and ~1.4x. No httpx Request/Response objects are built on this path.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import weakref
from collections.abc import AsyncGenerator, Mapping

import aiohttp

from ..config import TransportKind
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
    size = resp.content_length
    if size is not None and "Content-Encoding" not in resp.headers:
        # Sized and not coded: aiohttp reads exactly the declared length, so the cap is checked
        # on the header and the body read in one call (issue 32: a chunk iterator per reply).
        # A coded body (a bomb's 2 MB that decode to gigabytes) is still read chunk by chunk.
        if size > MAX_BODY_BYTES:
            raise BodyTooLarge(resp.status, resp.headers)
        return await resp.read()
    chunks: list[bytes] = []
    size = 0
    async for chunk in resp.content.iter_chunked(1 << 16):
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise BodyTooLarge(resp.status, resp.headers)
        chunks.append(chunk)
    return b"".join(chunks)


#: Every adapter alive, for the exit hook below (weakly: an adapter is never kept alive by it).
_ADAPTERS: weakref.WeakSet[AiohttpAdapter] = weakref.WeakSet()


@atexit.register
def _close_orphans_at_exit() -> None:
    """At exit, pools whose loop was closed by hand are closed (see ``_close_orphans``)."""
    orphaned = [a for a in list(_ADAPTERS) if any(loop.is_closed() for loop in a._pools)]
    if orphaned:

        async def close_all() -> None:
            for adapter in orphaned:
                await adapter._close_orphans()

        asyncio.run(close_all())


class AiohttpAdapter:
    """POSTs through one aiohttp ``ClientSession`` PER EVENT LOOP, each created on first use
    inside its loop (an aiohttp session must be born there, and is never used from another).

    A classifier is often built once and used from several loops (two ``asyncio.run`` calls, a
    sync facade's thread): each loop gets its own pool, and a pool is closed when its loop shuts
    down, through an async generator the loop finalizes (``asyncio.run`` and ``asyncio.Runner``
    call ``shutdown_asyncgens``). So a classifier that is never closed, as the seeds' examples
    never close theirs, leaves no "Unclosed client session" / "Unclosed connector" at exit, and
    the second loop never meets the first loop's closed sockets ("Event loop is closed")."""

    def __init__(self, *, max_connections: int = 100) -> None:
        # loop -> (its session, the generator whose finalization closes it); the generator is
        # held here because a loop keeps only a weak reference to it.
        self._pools: dict[
            asyncio.AbstractEventLoop, tuple[aiohttp.ClientSession, AsyncGenerator[None]]
        ] = {}
        self._max_connections = max_connections
        #: one ClientTimeout per timeout value: every request of a run has the same (issue 32)
        self._timeouts: dict[float, aiohttp.ClientTimeout] = {}
        _ADAPTERS.add(self)

    def _timeout(self, seconds: float) -> aiohttp.ClientTimeout:
        made = self._timeouts.get(seconds)
        if made is None:
            if len(self._timeouts) >= 8:  # a host varying its timeout keeps a few, not all
                self._timeouts.clear()
            made = aiohttp.ClientTimeout(sock_connect=seconds, sock_read=seconds)
            self._timeouts[seconds] = made
        return made

    async def _open(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        pool = self._pools.get(loop)
        if pool is not None:
            return pool[0]
        await self._close_orphans()
        # Proxy variables are honoured only when one is set: aiohttp's trust_env looks the
        # proxy up in a worker thread on EVERY request (measured: ~0.1 ms CPU each).
        session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=self._max_connections),
            trust_env=any(n.lower().endswith("_proxy") and v for n, v in os.environ.items()),
        )
        holder = self._hold(loop, session)
        self._pools[loop] = (session, holder)
        await anext(holder)  # started: the loop now finalizes it at shutdown
        return session

    async def _close_orphans(self) -> None:
        """Close the pools of loops that were closed without finalizing them (a loop closed by
        hand rather than by ``asyncio.run``). Their loop is gone, so aiohttp closes only its
        bookkeeping (no I/O, from any loop), and nothing warns about them at exit."""
        for loop, (_, holder) in list(self._pools.items()):
            if loop.is_closed():
                await holder.aclose()

    async def _hold(
        self, loop: asyncio.AbstractEventLoop, session: aiohttp.ClientSession
    ) -> AsyncGenerator[None]:
        try:
            yield
        finally:
            if self._pools.get(loop, (None,))[0] is session:
                del self._pools[loop]
            await session.close()

    async def send(
        self, url: str, headers: Mapping[str, str], body: bytes, timeout: float
    ) -> Answer:
        try:
            session = await self._open()
            async with session.post(
                url,
                headers=headers,
                data=body,
                allow_redirects=False,
                timeout=self._timeout(timeout),
            ) as resp:
                return resp.status, resp.headers, await _read_capped(resp)
        except (aiohttp.ClientError, OSError, TimeoutError, ValueError) as e:
            # ValueError: aiohttp refuses some URLs and headers only when sending.
            raise SendError(failure_kind(e)) from e

    async def aclose(self) -> None:
        """Close this loop's pool now, and those of loops closed by hand; a pool of another loop
        that is still running is closed in that loop (its own shutdown would close it anyway)."""
        current = asyncio.get_running_loop()
        for loop, (_, holder) in list(self._pools.items()):
            if loop is current or loop.is_closed():
                await holder.aclose()
            elif loop.is_running():
                asyncio.run_coroutine_threadsafe(holder.aclose(), loop)
