"""Run the real console entry point in-process, through Typer's CliRunner isolation.

``toolnexus.cli.app.main`` is the one error boundary; ``CliRunner.invoke(app)`` would bypass it,
so the tests call ``main`` inside the runner's stdin/stdout/stderr isolation instead.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

from typer.testing import CliRunner

from toolnexus.cli.app import main

if TYPE_CHECKING:
    import pytest


@dataclass
class Ran:
    code: int
    stdout: bytes
    stderr: str

    @property
    def out(self) -> str:
        return self.stdout.decode("utf-8")


def run_cli(*args: str, input: str | bytes | None = None) -> Ran:
    """``toolnexus *args`` in-process; the exit code is what the process would exit with."""
    runner = CliRunner()
    with runner.isolation(input=input) as (out, err, _):
        try:
            main(list(args))
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        # A real process flushes its text streams at exit; the isolation's wrappers need it here.
        sys.stdout.flush()
        sys.stderr.flush()
        return Ran(code, out.getvalue(), err.getvalue().decode("utf-8"))


def error_line(stderr: str) -> str:
    """The one diagnostic line, without the boundary's ``toolnexus: `` prefix; fails unless the
    whole of stderr is exactly one line and carries no traceback."""
    assert "Traceback" not in stderr, stderr
    assert stderr.endswith("\n") and stderr.count("\n") == 1, repr(stderr)
    return re.sub(r"^toolnexus: ", "", stderr[:-1])


def run_main(capfd: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``toolnexus *args`` through the real entry point, its output read from the process's
    own file descriptors (``capfd``): (exit code, stdout, stderr)."""
    try:
        main(list(args))
        code = 0
    except SystemExit as e:
        code = int(e.code or 0)
    out, err = capfd.readouterr()
    return code, out, err
