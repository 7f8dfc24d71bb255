"""Running one server until SIGINT or SIGTERM: what ``toolnexus serve`` does.

The URL goes to stdout, alone on its line and flushed, so a script can read it (``--port 0``
picks a free port); the mode and how to point a client at it go to stderr with the access log.
A signal stops accepting connections, lets in-flight requests finish (a stalled one is cut
short), and returns 0.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from typing import IO

from .options import ServeOptions
from .server import Server

__all__ = ["run"]


async def _main(options: ServeOptions, out: IO[str], err: IO[str]) -> int:
    server = Server(options)
    await server.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        out.write(server.url + "\n")
        out.flush()
        err.write(
            f"toolnexus serve: {server.mode} on {server.url}\n"
            f"  official SDK: TypeSafeClient(base_url={server.url!r}, api_key=...)\n"
            f"  toolnexus:    --base-url {server.url}/v1\n"
            "  SIGINT/SIGTERM (Ctrl-C) stops it\n"
        )
        err.flush()
        await stop.wait()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        await server.stop()
    err.write("toolnexus serve: stopped\n")
    err.flush()
    return 0


def run(options: ServeOptions, out: IO[str] | None = None, err: IO[str] | None = None) -> int:
    """Serve until SIGINT/SIGTERM; return the exit code (0). Raises ``ConfigError`` for options
    that cannot work and ``OSError`` when the address cannot be bound, before printing a URL."""
    return asyncio.run(_main(options, out or sys.stdout, err or sys.stderr))
