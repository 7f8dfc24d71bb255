"""Fast start is tested (conventions, habit 8): importing the CLI, ``check-criteria`` and
``canonical`` never import httpx (nor aiohttp, which only the live transports need)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from paths import REPO

# Runs the real entry point in a fresh interpreter and reports, at exit, which network modules
# were ever imported. atexit runs after main()'s sys.exit, so the whole command is covered.
PROBE = """
import atexit, json, sys
def report():
    heavy = sorted(m for m in sys.modules if m.split(".")[0] in {"httpx", "httpcore", "aiohttp"})
    with open(sys.argv[1], "w") as f:
        json.dump(heavy, f)
atexit.register(report)
import toolnexus.cli.app
if len(sys.argv) > 2:
    toolnexus.cli.app.main(sys.argv[2:])
"""


@pytest.mark.parametrize(
    "args",
    [
        pytest.param([], id="import-toolnexus.cli.app"),
        pytest.param(["--version"], id="version"),
        pytest.param(["check-criteria", "questions/"], id="check-criteria"),
        pytest.param(["canonical", "questions/support-triage.yaml"], id="canonical"),
        pytest.param(["canonical", "--sha256", "questions/guard.yaml"], id="canonical-sha256"),
        pytest.param(["schema"], id="schema"),
    ],
)
def test_never_imports_httpx(tmp_path: object, args: list[str]) -> None:
    report = os.path.join(str(tmp_path), "modules.json")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLNEXUS_")}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, report, *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    with open(report, encoding="utf-8") as f:
        assert json.load(f) == []


def test_the_probe_can_see_httpx(tmp_path: object) -> None:
    """The probe is not blind: when httpx IS imported, it is reported."""
    report = os.path.join(str(tmp_path), "modules.json")
    probe = PROBE.replace("import toolnexus.cli.app\n", "import toolnexus.cli.app, httpx\n")
    done = subprocess.run(
        [sys.executable, "-c", probe, report],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    with open(report, encoding="utf-8") as f:
        assert "httpx" in json.load(f)
