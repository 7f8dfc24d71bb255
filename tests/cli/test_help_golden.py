"""Every command's ``--help``, byte for byte (issue 44, acceptance: "Behaviour unchanged: every
command's `--help` byte-identical before and after (a golden), including option names,
environment variables and defaults").

Each command and subcommand of the Typer app prints its help at a fixed width (``COLUMNS=100``,
``NO_COLOR``) and the text must equal ``tests/golden/help/<command path>.txt``. After a change
that means to alter a help text, rewrite the goldens and read their diff::

    .venv/bin/python tests/cli/test_help_golden.py --regen
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "help"
#: The terminal the goldens are printed for.
ENV = {"COLUMNS": "100", "LINES": "50", "NO_COLOR": "1", "TERM": "dumb"}


def _paths(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    yield path
    for name in sorted(getattr(command, "commands", {})):
        yield from _paths(command.commands[name], (*path, name))


def command_paths() -> list[tuple[str, ...]]:
    """Every command path of the app: ``()`` (the root), ``("cache",)``, ``("cache", "clear")``."""
    import typer

    from toolnexus.cli.app import get_app

    return list(_paths(typer.main.get_command(get_app())))


def help_of(path: tuple[str, ...]) -> str:
    from typer.testing import CliRunner

    from toolnexus.cli.app import get_app

    result = CliRunner().invoke(get_app(), [*path, "--help"], env=ENV, prog_name="toolnexus")
    assert result.exit_code == 0, result.output
    return result.output


def golden_file(path: tuple[str, ...]) -> Path:
    return GOLDEN / ("-".join(("toolnexus", *path)) + ".txt")


@pytest.mark.parametrize("path", command_paths(), ids=lambda p: " ".join(p) or "toolnexus")
def test_help_is_byte_identical_to_its_golden(path: tuple[str, ...]) -> None:
    """'every command's `--help` byte-identical before and after (a golden)'."""
    golden = golden_file(path)
    assert golden.is_file(), f"no golden for {path}: run python {__file__} --regen"
    assert help_of(path) == golden.read_text(encoding="utf-8")


def test_every_golden_names_a_command() -> None:
    """A command that is gone leaves no golden behind."""
    expected = {golden_file(p).name for p in command_paths()}
    assert {p.name for p in GOLDEN.glob("*.txt")} == expected


def regen() -> None:
    GOLDEN.mkdir(parents=True, exist_ok=True)
    for old in GOLDEN.glob("*.txt"):
        old.unlink()
    for path in command_paths():
        golden_file(path).write_text(help_of(path), encoding="utf-8")
        print(golden_file(path).relative_to(GOLDEN.parents[1]))


if __name__ == "__main__":
    if sys.argv[1:] != ["--regen"]:
        sys.exit(f"usage: python {sys.argv[0]} --regen")
    regen()
