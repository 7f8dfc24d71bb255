"""No test talks to the network, checked (the non-negotiable: "No test talks to the internet").

This pytest plugin installs the guard of ``netguard.py`` in the test process and, through
``guard_site/sitecustomize.py`` first on PYTHONPATH, in every Python process the tests start
(the CLI run as a subprocess, ``toolnexus serve``, pip under ``pre-commit``). A socket to
anything but loopback, or a name looked up past this machine, raises ``NetworkUse`` there.
Code under test may catch that as a connection failure and a test might still pass, so every
refusal is also written down (in this process with the test's node id; from child processes in
a log file) and a run with any refusal fails at the end, naming them.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

import netguard
from netguard import ATTEMPTS, NetworkUse

__all__ = ["ATTEMPTS", "NetworkUse", "register"]

GUARD_SITE = Path(__file__).parent / "guard_site"


class NetworkPolicy:
    """Names the test of each refusal, and fails a run that had any."""

    def __init__(self) -> None:
        fd, self.log = tempfile.mkstemp(prefix="toolnexus-network-", suffix=".log")
        os.close(fd)
        os.environ[netguard.LOG_ENV] = self.log
        path = os.environ.get("PYTHONPATH")
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(GUARD_SITE), path]))

    def children(self) -> list[str]:
        try:
            text = Path(self.log).read_text(encoding="utf-8")
        except OSError:
            return []
        own = f"pid {os.getpid()}: "
        return [line for line in text.splitlines() if not line.startswith(own)]

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Any:
        netguard.current[0] = item.nodeid
        try:
            return (yield)
        finally:
            netguard.current[0] = "(outside a test)"

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if (ATTEMPTS or self.children()) and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        children = self.children()
        if ATTEMPTS or children:
            terminalreporter.section("tests that tried to reach the network")
            for nodeid, what in ATTEMPTS:
                terminalreporter.line(f"{nodeid}: {what}")
            for line in children:
                terminalreporter.line(f"a process a test started, {line}")

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        Path(self.log).unlink(missing_ok=True)


def register(config: pytest.Config) -> None:
    netguard.install()
    if not config.pluginmanager.has_plugin("no-network"):
        config.pluginmanager.register(NetworkPolicy(), "no-network")


def pytest_configure(config: pytest.Config) -> None:
    """``python -m pytest -p no_network`` loads it on its own."""
    register(config)
