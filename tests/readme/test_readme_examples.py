"""Every example in the README and the documentation site runs as written (issue 17 item 17;
issue 46 item 4: "the README runner runs every code block of every page"), offline.

The pages run in ``RUN_ORDER`` (the order their text had in the one-page README, so a command
still finds what the commands before it wrote), then any other page of ``docs/``, sorted: a new
page is run without being listed.

Each fenced ``python`` block runs as a script and each command line of a ``sh`` block runs in
bash (so does each ``$ `` line of a block with no language, whose other lines are the output it
must print), in order, in one scratch folder that holds copies of what a fresh clone ships
(``questions/``, ``examples/``, ``recordings/``), as a user would after ``make demo``. What needs a
System One server gets a real one on 127.0.0.1: ``toolnexus serve --replay recordings/`` that
answers what it has no recording for synthetically. The library finds it through
``TYPESAFE_BASE_URL`` (the official SDK's convention, which ``create_classifier`` honours) and the
CLI through ``TOOLNEXUS_BASE_URL``; the key is a dummy in ``TYPESAFE_API_KEY``.

A ``sql`` block runs with DuckDB against the run the block above it made (that block is run again
in a folder of its own first), and a ``yaml`` block headed by a file name (``# questions/x.yaml``)
must be that shipped file, byte for byte (issue 31 item 24).

A command exits 0, or 1 where 1 is what it documents for a finding (``--fail-on`` met, ``diff``
of different sets, ``check-criteria`` findings). ``NOT_RUNNABLE`` names the few lines this test
cannot run and why; a test keeps that list honest (every entry still matches a README line).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from paths import REPO as ROOT
from serving import ThreadedServer
from toolnexus.serve.options import ServeOptions

# One worker runs them all, in README order, in one scratch folder: a command reads what the
# commands above it wrote (``make test`` runs ``-n 2 --dist loadfile``: a file on one worker).

README = ROOT / "README.md"
DOCS = ROOT / "docs"
#: The pages in the order their commands build on each other (see the module docstring).
RUN_ORDER = (
    "README.md",
    "docs/tutorials/first-tickets.md",
    "docs/how-to/library.md",
    "docs/how-to/record-and-replay.md",
    "docs/how-to/resume-and-retry.md",
    "docs/explanation/wire.md",
    "docs/how-to/batch.md",
    "docs/explanation/pacing.md",
    "docs/how-to/pack-states.md",
    "docs/explanation/packing.md",
    "docs/explanation/confidence.md",
    "docs/how-to/decide-in-code.md",
    "docs/reference/question-types.md",
    "docs/reference/errors.md",
    "docs/how-to/command-line.md",
    "docs/how-to/opentelemetry.md",
    "docs/how-to/parquet-and-duckdb.md",
    "docs/reference/exit-codes.md",
    "docs/explanation/security.md",
    "docs/how-to/gates-in-a-pipeline.md",
    "docs/how-to/lint.md",
    "docs/reference/lint-rules.md",
    "docs/how-to/images.md",
    "docs/how-to/ray.md",
    "docs/how-to/serve.md",
    "docs/explanation/conformance.md",
    "docs/how-to/pytest-plugin.md",
    "docs/how-to/mcp.md",
    "docs/tutorials/labels-to-gate.md",
    "docs/explanation/calibration.md",
    "docs/how-to/review-edits.md",
    "CONTRIBUTING.md",
)
BIN = Path(sys.executable).parent
SHIPPED = ("questions", "examples", "recordings")
DUMMY_KEY = "sk-readme-example-key"

#: Lines the test cannot run, by a prefix of the command, with the reason.
NOT_RUNNABLE: dict[str, str] = {
    "make ": "the Makefile itself: `make test` runs this test",
    "pip install .": "installs into the running environment: tests/readme/test_wheel_install.py"
    " installs a wheel of the checkout into a fresh venv instead (make test-slow)",
    "git config": "changes the developer's git configuration",
    "toolnexus serve --proxy https://": "forwards to a remote host: no network in the suite",
    "questions/*.yaml diff=toolnexus": "a line of .gitattributes, not a command",
}

#: Python blocks the test cannot run, by a line of the block, with the reason.
NOT_RUNNABLE_PYTHON: dict[str, str] = {}

#: Python blocks too slow for `make test` (issue 46 item 4: "blocks that need Ray ... run in
#: make test-slow"), by a line of the block, with the reason.
SLOW_PYTHON: dict[str, str] = {
    "from toolnexus.ray import evaluate_dataset": "starts a local Ray instance (10-20 s)",
}

#: Exit 1 is a documented finding for these commands, not a failure.
_FINDING_EXIT_1 = re.compile(r"--fail-on|toolnexus diff|toolnexus check-criteria")


@dataclass(frozen=True)
class Block:
    line: int
    #: the fence's language; "" for a block with none
    lang: str
    text: str
    #: the page, relative to the checkout (``README.md``, ``docs/how-to/batch.md``)
    page: str = "README.md"

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def pages(root: Path = ROOT) -> list[str]:
    """Every page the runner runs, in run order: ``RUN_ORDER``, then the other pages sorted."""
    found = {"README.md", "CONTRIBUTING.md"} | {
        p.relative_to(root).as_posix() for p in (root / "docs").rglob("*.md")
    }
    found = {p for p in found if (root / p).is_file()}
    return [p for p in RUN_ORDER if p in found] + sorted(found - set(RUN_ORDER))


def page_blocks(path: Path, page: str) -> list[Block]:
    """Every fenced block of one page, an indented one (inside a list item) dedented."""
    blocks: list[Block] = []
    lang: str | None = None
    start = indent = 0
    body: list[str] = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if lang is None:
            m = re.fullmatch(r"( *)```(\w*)\s*", line)
            if m:
                indent, lang, start, body = len(m.group(1)), m.group(2), n, []
        elif line.strip() == "```":
            blocks.append(Block(start, lang, "\n".join(body) + "\n", page))
            lang = None
        else:
            body.append(line[indent:] if line[:indent].isspace() else line)
    return blocks


def readme_blocks(root: Path = ROOT) -> list[Block]:
    """Every fenced block of every page, in run order."""
    return [b for page in pages(root) for b in page_blocks(root / page, page)]


def is_prompt_block(block: Block) -> bool:
    """A block with no language that shows a terminal: its first line starts with ``$ ``."""
    return block.lang == "" and block.text.lstrip().startswith("$ ")


def runs_in_shell(block: Block) -> bool:
    return block.lang == "sh" or is_prompt_block(block)


def commands(block: Block) -> Iterator[tuple[int, str]]:
    """(README line, command) of each command of a sh block; continuation lines joined. In a
    ``$ `` block, the ``$ `` lines only."""
    for line, command, _ in commands_with_output(block):
        yield line, command


def commands_with_output(block: Block) -> Iterator[tuple[int, str, str | None]]:
    """(README line, command, the output it shows or None) of each command of a block that
    runs in the shell: a ``$ `` block shows what each command prints on the lines after it."""
    if is_prompt_block(block):
        lines = block.text.splitlines()
        for i, raw in enumerate(lines):
            if raw.startswith("$ "):
                shown = []
                for after in lines[i + 1 :]:
                    if after.startswith("$ "):
                        break
                    shown.append(after)
                yield block.line + i + 1, raw[2:].strip(), "\n".join(shown) or None
        return
    pending = ""
    first = 0
    for offset, raw in enumerate(block.text.splitlines(), 1):
        line = raw.rstrip()
        if not pending:
            first = block.line + offset
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        text = (pending + line).strip()
        pending = ""
        if text and not text.startswith("#"):
            yield first, text, None


def _not_runnable(command: str) -> str | None:
    for prefix, why in NOT_RUNNABLE.items():
        if command.startswith(prefix):
            return why
    return None


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh clone's files, committed on ``main`` (``diff REV:path`` reads git)."""
    work = tmp_path_factory.mktemp("readme")
    for name in SHIPPED:
        shutil.copytree(ROOT / name, work / name, ignore=shutil.ignore_patterns("__pycache__"))
    who = ["-c", "user.name=readme", "-c", "user.email=readme@example.invalid"]
    for args in (
        ["init", "-q", "-b", "main"],
        ["add", "-A"],
        [*who, "commit", "-q", "-m", "clone"],
    ):
        subprocess.run(["git", *args], cwd=work, check=True, capture_output=True)
    return work


@pytest.fixture(scope="module")
def server() -> Iterator[ThreadedServer]:
    options = ServeOptions(replay=str(ROOT / "recordings"), replay_fallback_synthetic=True)
    with ThreadedServer(options) as s:
        yield s


def _env(server: ThreadedServer) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(
        # The official SDK's variable is a host root (create_classifier appends /v1); the CLI's
        # is the full base.
        TYPESAFE_BASE_URL=server.url,
        TOOLNEXUS_BASE_URL=f"{server.url}/v1",
        TYPESAFE_API_KEY=DUMMY_KEY,
        PATH=os.pathsep.join([str(BIN), env.get("PATH", "")]),
        COLUMNS="100",
    )
    return env


def _cases(lang: str) -> list[pytest.ParameterSet]:
    out = []
    for block in readme_blocks():
        if lang == "python" and block.lang == "python":
            if any(line in block.text.splitlines() for line in NOT_RUNNABLE_PYTHON):
                continue
            slow = any(line in block.text.splitlines() for line in SLOW_PYTHON)
            marks = [pytest.mark.slow] if slow else []
            out.append(pytest.param(block.where, block.text, id=block.where, marks=marks))
        elif lang == "sh" and runs_in_shell(block):
            for line, command, shown in commands_with_output(block):
                if _not_runnable(command) is not None:
                    continue
                where = f"{block.page}:{line}"
                out.append(pytest.param(where, command, shown, id=where))
    return out


@pytest.mark.parametrize("where, source", _cases("python"))
def test_python_example_runs(
    where: str, source: str, workdir: Path, server: ThreadedServer
) -> None:
    check_python(where, source, workdir, _env(server))


def check_python(where: str, source: str, workdir: Path, env: dict[str, str]) -> None:
    """Run one python block as a script in ``workdir``: it exits 0, with no traceback or key."""
    script = workdir / ("doc_" + re.sub(r"\W", "_", where) + ".py")
    script.write_text(source, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, f"{where} exited {done.returncode}:\n{done.stderr}"
    assert "Traceback" not in done.stderr
    assert DUMMY_KEY not in done.stdout + done.stderr


@pytest.mark.parametrize("where, command, shown", _cases("sh"))
def test_shell_example_runs(
    where: str, command: str, shown: str | None, workdir: Path, server: ThreadedServer
) -> None:
    if command.startswith("toolnexus serve"):
        _check_serve(where, command, workdir, server)
        return
    done = _run_command(where, command, workdir, server)
    if shown is not None:
        assert done.stdout.rstrip("\n") == shown, (
            f"{where}: `{command}` printed what the page does not show"
        )


def _run_command(
    where: str, command: str, cwd: Path, server: ThreadedServer
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        ["bash", "-o", "pipefail", "-c", command],
        cwd=cwd,
        env=_env(server),
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    allowed = {0, 1} if _FINDING_EXIT_1.search(command) else {0}
    assert done.returncode in allowed, (
        f"{where}: `{command}` exited {done.returncode}:\n{done.stderr}"
    )
    assert "Traceback" not in done.stderr
    assert DUMMY_KEY not in done.stdout + done.stderr
    return done


def _sql_cases() -> list[pytest.ParameterSet]:
    """Each sql block with the shell block above it (the one that made the run it reads)."""
    out = []
    blocks = readme_blocks()
    for i, block in enumerate(blocks):
        if block.lang != "sql":
            continue
        above = next(
            (b for b in reversed(blocks[:i]) if runs_in_shell(b) and b.page == block.page), None
        )
        out.append(pytest.param(block, above, id=block.where))
    return out


@pytest.mark.parametrize("block, above", _sql_cases())
def test_sql_example_runs_against_the_run_above_it(
    block: Block, above: Block | None, tmp_path: Path, server: ThreadedServer
) -> None:
    """Issue 31 item 24: "sql blocks (run with the duckdb package against the run the block
    above made)"; the query must return rows (a query of a missing field is an error)."""
    pytest.importorskip("duckdb", reason="platform: duckdb is not installed")
    assert above is not None, f"{block.where}: no shell block above makes its run"
    for name in SHIPPED:
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    for line, command in commands(above):
        if _not_runnable(command) is None:
            _run_command(f"{above.page}:{line}", command, tmp_path, server)
    query = "import duckdb, sys\nrows = duckdb.sql(sys.stdin.read()).fetchall()\nprint(len(rows))\n"
    done = subprocess.run(
        [sys.executable, "-c", query],
        input=block.text,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, f"{block.where}: the query failed:\n{done.stderr}"
    assert int(done.stdout) > 0, f"{block.where}: the query returned no row"


def _yaml_cases() -> list[pytest.ParameterSet]:
    out = []
    for block in readme_blocks():
        m = re.match(r"# (\S+\.ya?ml)\n", block.text)
        if block.lang == "yaml" and m:
            out.append(pytest.param(block, m.group(1), id=f"{block.where}:{m.group(1)}"))
    return out


@pytest.mark.parametrize("block, name", _yaml_cases())
def test_yaml_example_is_the_file_it_names(block: Block, name: str) -> None:
    """Issue 31 item 24: "yaml blocks headed by a file name (equal to that file)". A file the
    repository ships is shown whole; the one a user writes (``.pre-commit-config.yaml``) names
    a hook the repository ships, at the tag of this version."""
    body = block.text.split("\n", 1)[1]
    shipped = ROOT / name
    if shipped.is_file():
        assert body == shipped.read_text(encoding="utf-8"), (
            f"{block.where}: the block headed {name} is not that file"
        )
        return
    assert name == ".pre-commit-config.yaml", (
        f"{block.where}: {name} is not a file the repository ships"
    )
    import tomllib

    import yaml

    config = yaml.safe_load(body)
    hooks = {h["id"] for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    for repo in config["repos"]:
        assert repo["rev"] == f"v{version}", f"{block.where}: rev is not v{version}"
        assert {h["id"] for h in repo["hooks"]} <= hooks


def _check_serve(where: str, command: str, workdir: Path, server: ThreadedServer) -> None:
    """A serve example starts (on a free port instead of its own) and prints its URL first."""
    args = re.sub(r"#.*$", "", command).split()
    if "--port" in args:
        at = args.index("--port")
        del args[at : at + 2]
    with subprocess.Popen(
        [*args, "--port", "0"],
        cwd=workdir,
        env=_env(server),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    assert first.startswith("http://127.0.0.1:"), (
        f"{where}: `{command}` printed {first!r}; stderr: {err}"
    )
    assert "Traceback" not in err


def test_the_not_runnable_list_still_matches_the_readme() -> None:
    """Each entry names a line the README still has; a stale entry hides nothing."""
    lines = [c for b in readme_blocks() if runs_in_shell(b) for _, c in commands(b)]
    for prefix in NOT_RUNNABLE:
        assert any(c.startswith(prefix) for c in lines), f"no README command starts {prefix!r}"
    python = [b.text.splitlines() for b in readme_blocks() if b.lang == "python"]
    for line in [*NOT_RUNNABLE_PYTHON, *SLOW_PYTHON]:
        assert any(line in block for block in python), f"no python block has {line!r}"


def test_every_python_and_shell_block_is_found() -> None:
    blocks = readme_blocks()
    assert sum(b.lang == "python" for b in blocks) >= 5
    assert sum(b.lang == "sh" for b in blocks) >= 5
    assert sum(is_prompt_block(b) for b in blocks) >= 1
    assert sum(b.lang == "sql" for b in blocks) >= 1
    assert len(_yaml_cases()) >= 2
