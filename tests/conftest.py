"""Autouse isolation: no test sees the developer's credentials, settings or caches."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

# Tests never assert on wall-clock time (non-negotiable 5), and a hypothesis deadline is such an
# assertion: 200 ms per example, which a loaded CI machine misses now and then. Off for every
# property test, with the "too slow" health check, for the same reason.
settings.register_profile("toolnexus", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("toolnexus")


@pytest.fixture(autouse=True)
def _isolate_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """No test sees the developer's credentials, TOOLNEXUS_* settings or cache directory."""
    for name in list(os.environ):
        if name.startswith(("TOOLNEXUS_", "TYPESAFE_")) or name.endswith("_API_KEY"):
            monkeypatch.delenv(name, raising=False)
    cache = tmp_path_factory.mktemp("cache")
    monkeypatch.setenv("TOOLNEXUS_CACHE_DIR", str(cache))
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    monkeypatch.setenv("NO_COLOR", "1")


def pytest_configure(config: pytest.Config) -> None:
    """Issue 8: a skip anywhere fails the run unless it names a platform reason. And no test
    talks to the network (``no_network``): a socket to anything but loopback is an error."""
    import no_network
    import suite_policy

    suite_policy.register(config)
    no_network.register(config)


@pytest.fixture
def server() -> Iterator[Any]:
    """A loopback System One server (tests/loopback.py's ``Loopback``) for one test; a test
    file that means another server by ``server`` defines its own fixture, which wins."""
    from loopback import Loopback

    with Loopback() as s:
        yield s
