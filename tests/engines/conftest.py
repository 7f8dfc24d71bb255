"""Fixtures that only the tests in tests/engines/ use (tests/conftest.py keeps the shared ones)."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

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
