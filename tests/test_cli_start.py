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


# The console entry point (``toolnexus.cli:main``), reporting which modules of a family were
# ever imported.
ENTRY_PROBE = """
import atexit, json, sys
def report():
    seen = sorted(m for m in sys.modules if m.split(".")[0] in set(sys.argv[2].split(",")))
    with open(sys.argv[1], "w") as f:
        json.dump(seen, f)
atexit.register(report)
from toolnexus.cli import main
main(sys.argv[3:])
"""


def _imported(tmp_path: object, families: str, args: list[str]) -> list[str]:
    report = os.path.join(str(tmp_path), "modules.json")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLNEXUS_")}
    done = subprocess.run(
        [sys.executable, "-c", ENTRY_PROBE, report, families, *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr
    with open(report, encoding="utf-8") as f:
        seen: list[str] = json.load(f)
    return seen


def test_version_imports_neither_typer_nor_the_library(tmp_path: object) -> None:
    """Issue 8 §7: "toolnexus --version answers without importing typer or the library"."""
    seen = _imported(tmp_path, "typer,click,rich,yaml,httpx,typing", ["--version"])
    assert seen == []
    lib = _imported(tmp_path, "toolnexus", ["--version"])
    assert lib == ["toolnexus", "toolnexus.cli"]


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["check-criteria", "questions/"], id="check-criteria"),
        pytest.param(["check-criteria", "--format", "json", "questions/"], id="check-json"),
        pytest.param(["canonical", "questions/guard.yaml"], id="canonical"),
        pytest.param(["canonical", "--sha256", "questions/guard.yaml"], id="canonical-sha256"),
    ],
)
def test_offline_commands_run_without_typer(tmp_path: object, args: list[str]) -> None:
    """The plain forms of the offline commands never import typer (nor httpx)."""
    assert _imported(tmp_path, "typer,httpx,httpcore,aiohttp", args) == []


def test_the_entry_probe_can_see_typer(tmp_path: object) -> None:
    """Not blind: anything the fast path hands on to the Typer app imports typer."""
    assert "typer" in _imported(tmp_path, "typer", ["check-criteria", "--help"])


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["--version"], id="version"),
        pytest.param(["batch", "--help"], id="batch-help"),
        pytest.param(["report", "tests/golden/report-inputs/run.jsonl"], id="report-jsonl"),
        pytest.param(
            [
                *("eval", "questions/guard.yaml", "examples/states/guard-git-status.yaml"),
                *("--replay", "recordings/"),
            ],
            id="eval-replay",
        ),
    ],
)
def test_no_parquet_path_imports_pyarrow(tmp_path: object, args: list[str]) -> None:
    """Issue 21 item 6: 'the core and the CLI's start-up never import pyarrow unless a
    Parquet/Arrow path is used'."""
    assert _imported(tmp_path, "pyarrow", args) == []


def test_the_core_never_imports_pyarrow() -> None:
    """The library and every batch/report module load without pyarrow (it is imported on a
    Parquet path only)."""
    code = (
        "import sys, toolnexus, toolnexus.batch, toolnexus.records, toolnexus.records.parquet, "
        "toolnexus.arrowrecords, toolnexus.cli.batch_run, toolnexus.cli.batch_arrow, "
        "toolnexus.report.reader; print(sorted(m for m in sys.modules if 'pyarrow' in m))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]"


def test_the_pyarrow_probe_is_not_blind(tmp_path: object) -> None:
    """A Parquet path does import pyarrow, and the probe sees it."""
    pytest.importorskip("pyarrow", reason="platform: the parquet extra is not installed")
    import pyarrow as pa
    import pyarrow.parquet as pq

    run = os.path.join(str(tmp_path), "labels.parquet")
    pq.write_table(pa.table({"id": ["t0"], "urgent": ["yes"]}), run)
    args = ["report", "tests/golden/report-inputs/run.jsonl", "--labels", run]
    assert "pyarrow" in _imported(tmp_path, "pyarrow", args)
