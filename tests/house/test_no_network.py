"""The suite's network guard (tests/no_network.py) refuses what it says it refuses: "socket.socket
.connect (and connect_ex ...) refuses any address that is not loopback ... getaddrinfo answers
only loopback names", and writes every attempt down, so that a run with one fails even when the
code under test swallowed the error."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import netguard
import no_network
from paths import TESTS


def own(address: str) -> bool:
    return address in netguard._own_addresses()


@pytest.fixture
def attempts() -> Iterator[list[tuple[str, str]]]:
    """The attempts these tests make on purpose are taken back off the run's record."""
    before = len(no_network.ATTEMPTS)
    yield no_network.ATTEMPTS
    del no_network.ATTEMPTS[before:]


@pytest.mark.parametrize(
    ("family", "address"),
    [
        (socket.AF_INET, (next(a for a in ("192.0.2.1", "198.51.100.1") if not own(a)), 443)),
        (socket.AF_INET6, ("2001:db8::1", 443, 0, 0)),
    ],
)
def test_a_connection_past_loopback_is_refused_and_written_down(
    attempts: list[tuple[str, str]], family: int, address: tuple[object, ...]
) -> None:
    with socket.socket(family, socket.SOCK_STREAM) as s:
        with pytest.raises(no_network.NetworkUse, match="tests stay on loopback"):
            s.connect(address)
        with pytest.raises(no_network.NetworkUse):
            s.connect_ex(address)
    assert "test_a_connection_past_loopback_is_refused" in attempts[-1][0]
    assert attempts[-1][1] == f"connected to {address!r}"


def test_a_name_is_not_looked_up(attempts: list[tuple[str, str]]) -> None:
    with pytest.raises(no_network.NetworkUse):
        socket.getaddrinfo("api.typesafe.ai", 443)
    assert attempts[-1][1] == "looked up 'api.typesafe.ai'"


def test_the_machines_own_addresses_are_not_the_network() -> None:
    """Ray binds and looks up this host's own interface addresses (engines.md): allowed, since
    a connection to them never leaves the machine."""
    own = netguard._own_addresses()
    assert socket.gethostname().lower() in own
    assert all(netguard.is_local_host(a) for a in own)


@pytest.mark.parametrize("host", ["169.254.169.254", "metadata.google.internal"])
def test_cloud_metadata_probes_are_refused_and_counted_apart(
    attempts: list[tuple[str, str]], host: str
) -> None:
    """Ray probes cloud metadata on every start: refused (nothing leaves the machine), but
    not a failure of the run, since the prober carries on without an answer."""
    before = len(attempts)
    with pytest.raises(no_network.NetworkUse, match="cloud metadata probe, refused"):
        socket.getaddrinfo(host, 80)
    assert len(attempts) == before
    assert netguard.PROBES[-1] == f"looked up {host!r}"


def test_loopback_still_connects() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        assert socket.getaddrinfo("localhost", port)
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            conn, _ = server.accept()
            conn.close()


def test_a_run_whose_code_swallowed_the_refusal_still_fails(tmp_path: Path) -> None:
    """A library that catches OSError as 'connection failed' would let the test pass; the run
    fails at the end anyway, naming the test and what it tried."""
    (tmp_path / "test_swallow.py").write_text(
        "import socket\n"
        "def test_swallowed():\n"
        "    try:\n"
        "        socket.create_connection(('192.0.2.1', 80), timeout=1)\n"
        "    except OSError:\n"
        "        pass\n",
        encoding="utf-8",
    )
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no_network", "-p", "no:cacheprovider",
         "test_swallow.py"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert "1 passed" in ran.stdout
    assert "test_swallow.py::test_swallowed: looked up '192.0.2.1'" in ran.stdout


@pytest.fixture
def child_log() -> Iterator[list[str]]:
    """The refusals child processes write during the test, taken back off the run's record."""
    log = Path(os.environ[netguard.LOG_ENV])
    size = log.stat().st_size
    lines: list[str] = []
    yield lines
    with open(log, "r+b") as f:
        f.seek(size)
        lines.extend(f.read().decode().splitlines())
        f.truncate(size)


def test_a_process_a_test_starts_is_guarded_too(child_log: list[str]) -> None:
    """The CLI run as a subprocess, ``toolnexus serve``, pip: every Python child of the run
    loads the guard (guard_site/sitecustomize.py on PYTHONPATH) and writes its refusals down."""
    code = (
        "import socket\n"
        "try:\n"
        "    socket.create_connection(('192.0.2.1', 80), timeout=1)\n"
        "except OSError as e:\n"
        "    print(type(e).__name__)\n"
    )
    ran = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert (ran.returncode, ran.stdout.strip(), ran.stderr) == (0, "NetworkUse", "")
    child_log.clear()
    # the fixture reads the log after the test; read it here to check what was written
    log = Path(os.environ[netguard.LOG_ENV]).read_text(encoding="utf-8")
    assert "looked up '192.0.2.1'" in log.splitlines()[-1]
