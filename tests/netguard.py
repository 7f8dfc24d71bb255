"""The network guard itself, standard library only, so that it also loads in every Python
process a test starts (``guard_site/sitecustomize.py``), with or without pytest.

``socket.socket.connect`` and ``connect_ex`` (where asyncio, aiohttp and httpx all end) refuse
any address that is not loopback (127.0.0.0/8, ::1) or a Unix socket, and ``getaddrinfo``
answers only loopback names and addresses, each with a :class:`NetworkUse` naming what was
tried. Every refusal is also written down: in :data:`ATTEMPTS` in this process, and as a line
in the file ``$NETGUARD_LOG`` (when set) from any process, so the test run can
fail on attempts that code under test caught and swallowed.
"""

from __future__ import annotations

import os
import socket

TYPE_CHECKING = False
if TYPE_CHECKING:  # not at run time: the start-up tests count what a child process imports
    from collections.abc import Callable
    from typing import Any

#: where every process of a test run writes its refusals, one per line
LOG_ENV = "NETGUARD_LOG"  # not TOOLNEXUS_*: conftest clears those for every test
_LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


class NetworkUse(OSError):
    """A test tried to reach past this machine."""


#: every refusal in this process: (who, what was tried); ``who`` is set by the pytest plugin
ATTEMPTS: list[tuple[str, str]] = []
current = ["(outside a test)"]


def _refuse(what: str) -> NetworkUse:
    ATTEMPTS.append((current[0], what))
    log = os.environ.get(LOG_ENV)
    if log:
        try:
            with open(log, "a", encoding="utf-8") as f:
                f.write(f"pid {os.getpid()}: {what}\n")
        except OSError:
            pass
    return NetworkUse(f"a test {what}: tests stay on loopback")


def is_local_host(host: Any) -> bool:
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    if not isinstance(host, str):
        return False
    if host.lower() in _LOCAL_NAMES:
        return True
    import ipaddress  # here: a child process that never connects never pays for it

    try:
        return ipaddress.ip_address(host.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def _checked_connect(original: Callable[..., Any]) -> Callable[..., Any]:
    def connect(self: socket.socket, address: Any) -> Any:
        if self.family in (socket.AF_INET, socket.AF_INET6) and not is_local_host(address[0]):
            raise _refuse(f"connected to {address!r}")
        return original(self, address)

    return connect


def _checked_getaddrinfo(original: Callable[..., Any]) -> Callable[..., Any]:
    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host is not None and not is_local_host(host):
            raise _refuse(f"looked up {host!r}")
        return original(host, *args, **kwargs)

    return getaddrinfo


def install() -> None:
    """Guard this process's sockets (idempotent)."""
    if getattr(socket.socket.connect, "_no_network", False):
        return
    for name in ("connect", "connect_ex"):
        guarded = _checked_connect(getattr(socket.socket, name))
        guarded._no_network = True  # type: ignore[attr-defined]
        setattr(socket.socket, name, guarded)
    socket.getaddrinfo = _checked_getaddrinfo(socket.getaddrinfo)
