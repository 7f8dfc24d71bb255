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


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["check-criteria", "questions/"], id="check-criteria"),
        pytest.param(["canonical", "questions/guard.yaml"], id="canonical"),
    ],
)
def test_offline_commands_never_import_the_records(tmp_path: object, args: list[str]) -> None:
    """``canonical`` and ``check-criteria`` print no record: the records, their codecs and the
    report stay out of their start-up (issue 30's acceptance: start-up no worse than before the
    structure pass; the render package imported them eagerly and cost about 5%)."""
    seen = _imported(tmp_path, "toolnexus", args)
    assert [m for m in seen if m.startswith(("toolnexus.records", "toolnexus.report"))] == []
    assert "toolnexus.cli.render" in seen  # not blind: the package that used to import them


def test_the_entry_probe_can_see_typer(tmp_path: object) -> None:
    """Not blind: anything the fast path hands on to the Typer app imports typer."""
    assert "typer" in _imported(tmp_path, "typer", ["check-criteria", "--help"])


#: The optional engines: only ``toolnexus.arrow`` / ``records.arrow`` and ``toolnexus.ray`` bring
#: them in (issue 21 item 6, issue 22 item 6).
ENGINES = "pyarrow,ray,mcp,mcp_types"

IMPORT_PROBE = """
import importlib, json, sys
for name in sys.argv[3:]:
    importlib.import_module(name)
seen = sorted(m for m in sys.modules if m.split(".")[0] in set(sys.argv[2].split(",")))
with open(sys.argv[1], "w") as f:
    json.dump(seen, f)
"""


def _imported_by(tmp_path: object, families: str, modules: list[str]) -> list[str]:
    report = os.path.join(str(tmp_path), "modules.json")
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_PROBE, report, families, *modules],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    with open(report, encoding="utf-8") as f:
        seen: list[str] = json.load(f)
    return seen


@pytest.mark.parametrize(
    "modules",
    [
        pytest.param(["toolnexus"], id="import-toolnexus"),
        pytest.param(["toolnexus.cli"], id="import-toolnexus.cli"),
        pytest.param(["toolnexus.cli.app"], id="import-toolnexus.cli.app"),
    ],
)
def test_the_library_and_the_cli_never_import_pyarrow_or_ray(
    tmp_path: object, modules: list[str]
) -> None:
    """Issue 21: "the core and the CLI's start-up never import pyarrow unless a Parquet/Arrow
    path is used"; issue 22: "nothing imports ray unless this path is used"."""
    assert _imported_by(tmp_path, ENGINES, modules) == []


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["--help"], id="help"),
        pytest.param(["check-criteria", "questions/"], id="check-criteria"),
        pytest.param(["schema"], id="schema"),
    ],
)
def test_cli_start_never_imports_pyarrow_or_ray(tmp_path: object, args: list[str]) -> None:
    assert _imported(tmp_path, ENGINES, args) == []


def test_the_engine_modules_import_their_extra_only_when_called(tmp_path: object) -> None:
    """Importing ``toolnexus.arrow``, ``toolnexus.ray`` and the MCP server's modules is free
    (issue 36: "the CLI's start-up and the core never import mcp unless that path is used");
    the probe is not blind."""
    free = ["toolnexus.arrow", "toolnexus.ray", "toolnexus.cli.mcp_server", "toolnexus.cli.mcp_cmd"]
    assert _imported_by(tmp_path, ENGINES, free) == []
    seen = _imported_by(tmp_path, ENGINES, ["toolnexus.ray", "pyarrow", "ray", "mcp"])
    assert {"pyarrow", "ray", "mcp"} <= set(seen)


@pytest.mark.parametrize(
    "args",
    [
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
    Parquet/Arrow path is used': batch and report over JSONL do not."""
    assert _imported(tmp_path, ENGINES, args) == []


def test_the_batch_and_report_modules_never_import_pyarrow(tmp_path: object) -> None:
    """Every module of the Parquet paths loads without pyarrow: it is imported when called."""
    modules = [
        *("toolnexus.evaluate.batch", "toolnexus.records", "toolnexus.records.parquet"),
        *("toolnexus.records.arrowrows", "toolnexus.records.arrowcolumns"),
        *("toolnexus.records.arrow", "toolnexus.run.engine"),
        *("toolnexus.run.arrowin", "toolnexus.run.parquet", "toolnexus.report.reader"),
    ]
    assert _imported_by(tmp_path, ENGINES, modules) == []


def test_the_pyarrow_probe_is_not_blind(tmp_path: object) -> None:
    """A Parquet path does import pyarrow, and the probe sees it."""
    pytest.importorskip("pyarrow", reason="platform: the parquet extra is not installed")
    import pyarrow as pa
    import pyarrow.parquet as pq

    run = os.path.join(str(tmp_path), "labels.parquet")
    pq.write_table(pa.table({"id": ["t0"], "urgent": ["yes"]}), run)
    args = ["report", "tests/golden/report-inputs/run.jsonl", "--labels", run]
    assert "pyarrow" in _imported(tmp_path, "pyarrow", args)


# --- one command registered per run (cli/app.py: "main registers only the command it runs") --

COMMAND_MODULES = """
import atexit, json, sys
def report():
    loaded = sorted(m for m in sys.modules if m.startswith("toolnexus.cli.") and m.endswith("_cmd"))
    with open(sys.argv[1], "w") as f:
        json.dump(loaded, f)
atexit.register(report)
import toolnexus.cli.app
toolnexus.cli.app.main(sys.argv[2:])
"""


def _modules_of(tmp_path: object, *args: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    seen = os.path.join(str(tmp_path), "cmds.json")
    done = subprocess.run(
        [sys.executable, "-c", COMMAND_MODULES, seen, *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    with open(seen, encoding="utf-8") as f:
        return done, json.load(f)


@pytest.mark.parametrize(
    ("args", "modules"),
    [
        pytest.param(
            ["schema", "report"], ["toolnexus.cli.schema_cmd"], id="a-command-imports-only-its-own"
        ),
        pytest.param(["diff", "--help"], ["toolnexus.cli.diff_cmd"], id="its-help-too"),
    ],
)
def test_a_command_run_imports_no_other_command_module(
    tmp_path: object, args: list[str], modules: list[str]
) -> None:
    done, loaded = _modules_of(tmp_path, *args)
    assert done.returncode == 0, done.stderr
    assert loaded == modules


def test_the_root_help_lists_every_command_in_the_tables_order(tmp_path: object) -> None:
    from toolnexus.cli.app import COMMANDS

    done, loaded = _modules_of(tmp_path, "--help")
    assert done.returncode == 0, done.stderr
    assert len(loaded) == len(COMMANDS)
    # typer's order: the commands as the table sorts them, then those with subcommands
    assert _listed(done.stdout) == [n for n in COMMANDS if n != "cache"] + ["cache"]


def _listed(help_text: str) -> list[str]:
    from toolnexus.cli.app import COMMANDS

    words = [line.split() for line in help_text.splitlines() if line.startswith("  ")]
    return [w[0] for w in words if w and w[0] in COMMANDS]


def test_the_help_lists_the_same_whatever_a_process_registered_first() -> None:
    """In one process (the tests' own), a command registered alone before the others does not
    move up the root's list."""
    from clirun import run_cli
    from toolnexus.cli.app import COMMANDS

    run_cli("serve", "--help")
    assert _listed(run_cli("--help").out) == [n for n in COMMANDS if n != "cache"] + ["cache"]


def test_an_unknown_option_still_names_the_commands_that_take_it(tmp_path: object) -> None:
    """Only ``eval`` is registered for ``toolnexus eval --cache``; the suggestion still looks at
    every command."""
    done, _ = _modules_of(tmp_path, "eval", "--cache", "x")
    assert done.returncode == 2
    assert done.stderr == (
        "toolnexus: No such option: --cache; toolnexus batch takes it; "
        "see 'toolnexus eval --help'\n"
    )
