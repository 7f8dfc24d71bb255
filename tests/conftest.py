"""Autouse isolation: no test sees the developer's credentials, settings or caches."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from pathlib import Path
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


#: The variable that holds the API key on the Ray "node" (see ``ray_api_key``). Not a
#: ``*_API_KEY`` name: ``_isolate_env`` would hide it from the tests that start a server with it.
RAY_KEY_ENV = "RAY_NODE_TYPESAFE_KEY"


@pytest.fixture(scope="session")
def ray_api_key() -> str:
    """The key the Ray workers authenticate with: in the environment before ``ray.init``, as
    an operator puts it in each node's environment, so every worker inherits it and nothing
    ships it. Random per run, so a grep of Ray's files for it finds only a leak."""
    return secrets.token_hex(16)


@pytest.fixture(scope="session")
def ray_session(tmp_path_factory: pytest.TempPathFactory, ray_api_key: str) -> Iterator[Path]:
    """One local Ray instance for the whole run (2.8-3.9 s to start: never per test), on 2
    CPUs, no dashboard, usage stats off, its temp directory (every worker's logs and task
    metadata) under the run's own tmp, which tests grep for secrets. Yields that directory."""
    ray = pytest.importorskip("ray", reason="platform: the ray extra is not installed")
    temp = tmp_path_factory.mktemp("ray")
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    os.environ[RAY_KEY_ENV] = ray_api_key
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        _temp_dir=str(temp),
        configure_logging=False,
    )
    try:
        yield temp
    finally:
        ray.shutdown()


@pytest.fixture
def server() -> Iterator[Any]:
    """A loopback System One server (tests/loopback.py's ``Loopback``) for one test; a test
    file that means another server by ``server`` defines its own fixture, which wins."""
    from loopback import Loopback

    with Loopback() as s:
        yield s
