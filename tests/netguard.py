"""The network guard itself, standard library only, so that it also loads in every Python
process a test starts (``guard_site/sitecustomize.py``), with or without pytest.

``socket.socket.connect`` and ``connect_ex`` (where asyncio, aiohttp and httpx all end) refuse
any address that is not this machine's (loopback 127.0.0.0/8 and ::1, this host's name and its
own interface addresses) or a Unix socket, and ``getaddrinfo`` answers only such names and
addresses, each with a :class:`NetworkUse` naming what was tried. The machine's own addresses are
allowed because Ray binds and looks them up on every start (shared/reference/engines.md), and a
connection to them never leaves the machine.

Cloud metadata probes (``169.254.169.254``, ``metadata.google.internal``: Ray's accelerator and
cloud detection asks them on every start) are refused like everything else, but counted apart, in
:data:`PROBES`, and do not fail the run: the code that makes them carries on when they fail, and
nothing left the machine.

Every other refusal is also written down: in :data:`ATTEMPTS` in this process, and as a line in
the file ``$NETGUARD_LOG`` (when set) from any process, so the test run can fail on attempts that
code under test caught and swallowed.
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
#: cloud metadata endpoints that libraries probe on start (refused, counted apart)
_PROBE_NAMES = frozenset({"metadata.google.internal", "metadata.google.internal.", "metadata"})


class NetworkUse(OSError):
    """A test tried to reach past this machine."""


#: every refusal in this process: (who, what was tried); ``who`` is set by the pytest plugin
ATTEMPTS: list[tuple[str, str]] = []
#: refused cloud metadata probes in this process (they do not fail the run)
PROBES: list[str] = []
current = ["(outside a test)"]
_OWN: list[frozenset[str]] = []


def _own_addresses() -> frozenset[str]:
    """This host's name and the addresses of its own interfaces (read from the kernel: no
    lookup leaves the machine), computed once."""
    if _OWN:
        return _OWN[0]
    own = {socket.gethostname().lower()}
    try:
        import fcntl
        import struct

        probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            for _, name in socket.if_nameindex():
                req = struct.pack("256s", name.encode()[:15])
                try:
                    addr = fcntl.ioctl(probe.fileno(), 0x8915, req)  # SIOCGIFADDR
                except OSError:
                    continue
                own.add(socket.inet_ntoa(addr[20:24]))
        finally:
            probe.close()
    except (ImportError, OSError):
        pass
    try:
        with open("/proc/net/if_inet6", encoding="ascii") as f:
            for line in f:
                hexaddr = line.split()[0]
                own.add(socket.inet_ntop(socket.AF_INET6, bytes.fromhex(hexaddr)))
    except (OSError, ValueError):
        pass
    _OWN.append(frozenset(own))
    return _OWN[0]


def _is_probe(host: Any) -> bool:
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    if not isinstance(host, str):
        return False
    if host.lower() in _PROBE_NAMES:
        return True
    import ipaddress

    try:
        return ipaddress.ip_address(host.split("%", 1)[0]).is_link_local
    except ValueError:
        return False


def _refuse(what: str, host: Any = None) -> NetworkUse:
    if host is not None and _is_probe(host):
        PROBES.append(what)
        return NetworkUse(f"a test {what}: a cloud metadata probe, refused")
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
        if ipaddress.ip_address(host.split("%", 1)[0]).is_loopback:
            return True
    except ValueError:
        pass
    return host.split("%", 1)[0].lower() in _own_addresses()


def _checked_connect(original: Callable[..., Any]) -> Callable[..., Any]:
    def connect(self: socket.socket, address: Any) -> Any:
        if self.family in (socket.AF_INET, socket.AF_INET6) and not is_local_host(address[0]):
            raise _refuse(f"connected to {address!r}", address[0])
        return original(self, address)

    return connect


def _checked_getaddrinfo(original: Callable[..., Any]) -> Callable[..., Any]:
    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host is not None and not is_local_host(host):
            raise _refuse(f"looked up {host!r}", host)
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
