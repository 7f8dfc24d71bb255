"""The typer-free fast path of ``check-criteria`` and ``canonical`` (``cli/offline.py``) says
exactly what the Typer app says: the same command line, run both ways, gives the same exit code,
stdout and stderr. Anything it does not recognise is handed to the app (``None``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from paths import REPO
from toolnexus.cli.app import main as app_main
from toolnexus.cli.offline import _LINT_FORMATS, FAST_COMMANDS, fast_main
from toolnexus.cli.render import LintFormat

BAD = "questions:\n  d:\n    type: choice\n    instructions: Which?\n    criteria: {a: a, b: b}\n"


def _both(args: list[str]) -> tuple[tuple[int, bytes, str], tuple[int, bytes, str]]:
    runner = CliRunner()
    out = []
    for fast in (True, False):
        with runner.isolation() as (stdout, stderr, _):
            try:
                if fast:
                    code = fast_main(args)
                    assert code is not None, "the fast path handed a plain form to the app"
                else:
                    app_main(args)
                    code = 0
            except SystemExit as e:
                code = int(e.code or 0)
            sys.stdout.flush()
            sys.stderr.flush()
            out.append((code, stdout.getvalue(), stderr.getvalue().decode("utf-8")))
    return out[0], out[1]


@pytest.fixture
def bad_file(tmp_path: Path) -> Path:
    path = tmp_path / "bad.yaml"
    path.write_text(BAD, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["check-criteria", "questions/"], id="clean-dir"),
        pytest.param(["check-criteria", "{bad}"], id="findings"),
        pytest.param(["check-criteria", "--format", "json", "{bad}"], id="findings-json"),
        pytest.param(["check-criteria", "--format=json", "--strict", "{bad}"], id="format-eq"),
        pytest.param(["check-criteria", "{bad}", "nope.yaml"], id="unreadable"),
        pytest.param(["check-criteria", "--select", "TN05", "{bad}"], id="select"),
        pytest.param(["check-criteria", "--ignore=TN002", "{bad}"], id="ignore"),
        pytest.param(["check-criteria", "--level", "info", "questions/"], id="level-info"),
        pytest.param(["check-criteria", "--level", "error", "{bad}"], id="level-error"),
        pytest.param(["check-criteria", "--format", "sarif", "{bad}"], id="sarif"),
        pytest.param(["check-criteria", "--select", "TN9x", "{bad}"], id="select-unknown"),
        pytest.param(["check-criteria", "--list-rules"], id="list-rules"),
        pytest.param(["check-criteria", "--list-rules", "--format", "json"], id="rules-json"),
        pytest.param(["check-criteria", "--explain", "TN050"], id="explain"),
        pytest.param(["check-criteria", "--explain", "TN999"], id="explain-unknown"),
        pytest.param(["check-criteria", "--state", "{pack}", "--as", "json", "{bad}"], id="state"),
        pytest.param(["canonical", "questions/guard.yaml"], id="canonical"),
        pytest.param(["canonical", "--sha256", "questions/guard.yaml"], id="sha256"),
        pytest.param(
            ["canonical", "--pretty", "--model", "m1", "questions/guard.yaml"], id="pretty"
        ),
        pytest.param(["canonical", "--sha256", "--pretty", "questions/guard.yaml"], id="conflict"),
        pytest.param(["canonical", "nope.yaml"], id="missing"),
        pytest.param(["canonical", "{bad}"], id="canonical-bad"),
        pytest.param(
            ["canonical", "questions/guard.yaml", "--pack-states", "{pack}"], id="pack-states"
        ),
    ],
)
def test_fast_path_says_what_the_app_says(
    args: list[str], bad_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    pack = bad_file.with_name("states.jsonl")
    pack.write_text('"one"\n{"two": 2}\n', encoding="utf-8")
    args = [a.replace("{bad}", str(bad_file)).replace("{pack}", str(pack)) for a in args]
    fast, app = _both(args)
    assert fast == app


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["check-criteria", "--help"], id="help"),
        pytest.param(["check-criteria", "--format", "xml", "q.yaml"], id="bad-format"),
        pytest.param(["check-criteria"], id="no-files"),
        pytest.param(["check-criteria", "--nope", "q.yaml"], id="unknown-option"),
        pytest.param(["check-criteria", "--format"], id="missing-value"),
        pytest.param(["canonical", "a.yaml", "b.yaml"], id="two-files"),
        pytest.param(["canonical", "--model", "--sha256", "a.yaml"], id="flag-as-value"),
        pytest.param(["canonical", "--sha256", "--sha256", "a.yaml"], id="repeated"),
        pytest.param(["eval", "q.yaml"], id="not-offline"),
    ],
)
def test_anything_else_goes_to_the_app(args: list[str]) -> None:
    assert fast_main(args) is None


def test_the_fast_path_knows_the_lint_formats() -> None:
    from typing import get_args

    assert get_args(LintFormat) == _LINT_FORMATS
    assert {"check-criteria", "canonical"} == FAST_COMMANDS
