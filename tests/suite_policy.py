"""A pytest plugin for this suite: a skip fails the run unless it names a platform reason, and
tests may leave one-line notes that the terminal summary prints.

Issue 8: "a skip anywhere fails the run unless it names a platform reason". A skip whose reason
contains ``platform:`` (e.g. ``platform: git is not installed``) is allowed; any other skip
(a ``skipif``, ``pytest.skip()``, an empty parameter set, a module skipped at collection) turns a
passing run into a failing one, and the summary names each such skip and its reason. An xfail is
not a skip: the test ran.

tests/conftest.py registers it; ``python -m pytest -p suite_policy`` loads it on its own.
"""

from __future__ import annotations

from typing import Any

import pytest

#: The marker a skip reason must contain to be allowed.
PLATFORM = "platform:"

_NOTES = pytest.StashKey[list[str]]()
_PENDING = pytest.StashKey[list[str]]()
#: The name notes travel under in a report's ``user_properties``: under pytest-xdist a test
#: runs in a worker, and only its reports reach the process that prints the summary.
_NOTE = "suite-policy-note"


def note(config: pytest.Config, text: str) -> None:
    """Leave a line for the terminal summary (e.g. which check a test could run here)."""
    config.stash.setdefault(_PENDING, []).append(text)


def _reason(report: pytest.CollectReport | pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


class SkipPolicy:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.unexplained: list[str] = []

    def _check(self, report: pytest.CollectReport | pytest.TestReport) -> None:
        reason = _reason(report)
        if PLATFORM not in reason:
            self.unexplained.append(f"{report.nodeid}: {reason}")

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.skipped:
            self._check(report)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        outcome = yield
        pending = self.config.stash.get(_PENDING, [])
        if pending:
            report: pytest.TestReport = outcome.get_result()
            report.user_properties.extend((_NOTE, line) for line in pending)
            pending.clear()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.skipped and not hasattr(report, "wasxfail"):
            self._check(report)
        for name, value in report.user_properties:
            if name == _NOTE:
                self.config.stash.setdefault(_NOTES, []).append(str(value))

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.unexplained and session.exitstatus in (
            pytest.ExitCode.OK,
            pytest.ExitCode.NO_TESTS_COLLECTED,
        ):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        for line in self.config.stash.get(_NOTES, []):
            terminalreporter.write_line(f"note: {line}")
        if self.unexplained:
            terminalreporter.section("skips without a platform reason (each fails the run)")
            for line in self.unexplained:
                terminalreporter.write_line(line)
            terminalreporter.write_line(
                f"A skip must name a platform reason ('{PLATFORM} ...'); otherwise make the "
                "test run here (copy its fixture into tests/fixtures/) or delete it."
            )


def register(config: pytest.Config) -> None:
    if not config.pluginmanager.has_plugin("suite-policy"):
        config.pluginmanager.register(SkipPolicy(config), "suite-policy")


def pytest_configure(config: pytest.Config) -> None:
    register(config)
