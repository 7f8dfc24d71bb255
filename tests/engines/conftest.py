"""Fixtures that only the tests in tests/engines/ use (tests/conftest.py keeps the shared ones)."""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
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


@pytest.fixture(scope="module")
def ray_session(ray_api_key: str) -> Iterator[Path]:
    """One local Ray instance for the one file that needs it, tests/engines/test_ray_dataset.py
    (2.8-3.9 s to start, 5-8 s beside the suite: never per test; every test that needs Ray is
    in that file, so a run starts Ray once whichever xdist worker takes it, and stops it when
    the file is done rather than leaving its daemons idle beside the rest of the run), on 2
    CPUs, no dashboard, usage stats off, its temp directory (every worker's logs and task
    metadata) in a directory of the run's own, which tests grep for secrets. Yields that
    directory. Not under pytest's tmp: Ray puts its AF_UNIX sockets in it, and a socket path
    has at most 107 bytes, which ``/tmp/pytest-of-root/pytest-1003/popen-gw0/ray0/session_<date>_
    <pid>/sockets/plasma_store`` passed once pytest's run counter reached four digits."""
    ray = pytest.importorskip("ray", reason="platform: the ray extra is not installed")
    temp = Path(tempfile.mkdtemp(prefix="tn-ray-"))
    before = {k: os.environ.get(k) for k in ("RAY_USAGE_STATS_ENABLED", RAY_KEY_ENV)}
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
        shutil.rmtree(temp, ignore_errors=True)
        # The key leaves the worker's environment with Ray: the tests after this file (on the
        # same xdist worker, in an order that varies) start with the environment they had.
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
