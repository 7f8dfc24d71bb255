"""No test talks to the network: every socket a test process connects goes to this machine.

The non-negotiable says "No test talks to the internet"; this makes it a check instead of a
habit. While the suite runs, ``socket.socket.connect`` (and ``connect_ex``, which asyncio,
aiohttp and httpx all end in) refuses any address that is not loopback (127.0.0.0/8, ::1) or a
Unix socket, with an error naming the address, so a test that would reach out fails on the
spot instead of passing on a machine with a network. Nothing is looked up past this machine
either: ``getaddrinfo`` answers only loopback names and addresses.

Library code may catch the error as a connection failure and a test might still pass, so every
attempt is also written down, with the test that made it, and a run with any attempt fails at
the end, naming them.

Subprocesses the tests start are outside this process; they talk to loopback servers the
tests start (and ``test_pre_commit_hook_for_real`` runs pip with its index switched off).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from typing import Any

import pytest

_LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


class NetworkUse(OSError):
    """A test tried to reach past this machine."""


#: every attempt of this run: (test node id, what it tried)
ATTEMPTS: list[tuple[str, str]] = []
_current = ["(outside a test)"]


def _refuse(what: str) -> NetworkUse:
    ATTEMPTS.append((_current[0], what))
    return NetworkUse(f"a test {what}: tests stay on loopback")


def _is_local_host(host: Any) -> bool:
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    if not isinstance(host, str):
        return False
    if host.lower() in _LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def _checked_connect(original: Callable[..., Any]) -> Callable[..., Any]:
    def connect(self: socket.socket, address: Any) -> Any:
        if self.family in (socket.AF_INET, socket.AF_INET6) and not _is_local_host(address[0]):
            raise _refuse(f"connected to {address!r}")
        return original(self, address)

    return connect


def _checked_getaddrinfo(original: Callable[..., Any]) -> Callable[..., Any]:
    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host is not None and not _is_local_host(host):
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


class NetworkPolicy:
    """Names the test of each attempt, and fails a run that made any."""

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Any:
        _current[0] = item.nodeid
        try:
            return (yield)
        finally:
            _current[0] = "(outside a test)"

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if ATTEMPTS and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if ATTEMPTS:
            terminalreporter.section("tests that tried to reach the network")
            for nodeid, what in ATTEMPTS:
                terminalreporter.line(f"{nodeid}: {what}")


def register(config: pytest.Config) -> None:
    install()
    if not config.pluginmanager.has_plugin("no-network"):
        config.pluginmanager.register(NetworkPolicy(), "no-network")


def pytest_configure(config: pytest.Config) -> None:
    """``python -m pytest -p no_network`` loads it on its own."""
    register(config)
