"""Issue 43 item 2: "Every command with stdout closed (``>&-``) ends in a traceback ('NoneType'
object has no attribute 'buffer'); for ``filter`` the exit 1 then reads as "no line matched".
One line, exit 2, as ``> /dev/full`` already does."

In-process over every command of the Typer app (the entry point sees ``sys.stdout is None``, as
Python sets it when descriptor 1 is closed), then one real process started with ``>&-``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import typer

from clirun import error_line
from paths import REPO
from toolnexus.cli import main
from toolnexus.cli.app import get_app


def _paths(group: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    for name, command in sorted(getattr(group, "commands", {}).items()):
        yield (*path, name)
        yield from _paths(command, (*path, name))


COMMANDS = list(_paths(typer.main.get_command(get_app())))


def test_the_matrix_covers_every_command() -> None:
    assert {p[0] for p in COMMANDS} >= {"batch", "eval", "filter", "report", "mcp", "serve"}


@pytest.mark.parametrize("command", [pytest.param(c, id=" ".join(c)) for c in COMMANDS])
@pytest.mark.parametrize(
    "extra", [pytest.param((), id="bare"), pytest.param(("--help",), id="help")]
)
def test_a_closed_stdout_is_one_line_and_exit_2(
    command: tuple[str, ...],
    extra: tuple[str, ...],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """'One line, exit 2, as > /dev/full already does' — for every command."""
    monkeypatch.setattr(sys, "stdout", None)
    with pytest.raises(SystemExit) as exit_:
        main([*command, *extra])
    monkeypatch.undo()
    assert exit_.value.code == 2
    line = error_line(capsys.readouterr().err)
    assert line.startswith("stdout is closed (>&-)"), line


def test_version_with_a_closed_stdout(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdout", None)
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    monkeypatch.undo()
    assert exit_.value.code == 2
    assert error_line(capsys.readouterr().err).startswith("stdout is closed")


def test_filter_with_stdout_closed_in_a_real_process_is_not_no_line_matched() -> None:
    """'for filter the exit 1 then reads as "no line matched"': a real ``>&-``."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    done = subprocess.run(
        ["sh", "-c", f'exec "{sys.executable}" -m toolnexus filter q.yaml "q" >&-'],
        input=b"a line\n",
        stderr=subprocess.PIPE,
        env=env,
        check=False,
    )
    assert done.returncode == 2
    line = error_line(done.stderr.decode())
    assert line.startswith("stdout is closed (>&-)"), line
