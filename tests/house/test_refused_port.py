"""Issue 45: "one of four fresh-clone runs this week failed one test of 4,049 ... so a test still
depends on something outside itself". The tests of a refused connection found their port by
binding port 0 and closing the socket: until the connect, that port was anyone's, and a server
the other xdist worker started on port 0 could be given it. ``serving.refused_port`` holds it."""

from __future__ import annotations

import socket

import pytest

from serving import refused_port


@pytest.mark.parametrize(
    "reuse", [pytest.param(False, id="plain"), pytest.param(True, id="reuseaddr")]
)
def test_a_refused_port_is_nobody_elses_while_it_is_held(reuse: bool) -> None:
    """A server starting meanwhile (asyncio's and aiohttp's set ``SO_REUSEADDR``) cannot bind
    it, and a connection to it is refused."""
    with refused_port() as port:
        with socket.socket() as other:
            if reuse:
                other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            with pytest.raises(OSError):
                other.bind(("127.0.0.1", port))
        with socket.socket() as client, pytest.raises(ConnectionRefusedError):
            client.connect(("127.0.0.1", port))


def test_no_test_closes_a_port_to_call_it_refused() -> None:
    """The pattern that raced: a socket bound to port 0 inside a helper that returns its port
    (the socket closed on return). Every test of a refused connection uses ``refused_port``."""
    from pathlib import Path

    tests = Path(__file__).resolve().parents[1]
    here = Path(__file__).resolve()
    texts = {p: p.read_text(encoding="utf-8") for p in tests.rglob("*.py") if p != here}
    raced = [
        p.relative_to(tests).as_posix()
        for p, text in texts.items()
        if "closed again below" in text or "def _closed_port" in text
    ]
    assert raced == []
