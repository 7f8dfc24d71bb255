"""The backend options are declared once, as ``BackendSettings`` fields: ``eval`` and ``batch``
take exactly that set (same flags, environment variables, panel), after their own options."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
import typer.main

from toolnexus.cli import batch_cmd, eval_cmd
from toolnexus.cli.options import BackendSettings, backend_options

NAMES = [f.name for f in fields(BackendSettings)]


@pytest.mark.parametrize(
    "command", [eval_cmd.eval_command, batch_cmd.batch_command], ids=["eval", "batch"]
)
def test_each_command_takes_every_backend_field_as_its_last_options(command: Any) -> None:
    app = typer.Typer()
    app.command()(command)
    completion = {"install_completion", "show_completion"}  # typer's, on a one-command app
    params = [p for p in typer.main.get_command(app).params if p.name not in completion]
    tail = params[-len(NAMES) :]
    assert [p.name for p in tail] == NAMES
    assert "backend_values" not in {p.name for p in params}
    assert all(p.envvar and str(p.envvar).startswith("TOOLNEXUS_") for p in tail)


def test_the_values_reach_the_command_as_one_mapping(tmp_path: Path) -> None:
    seen: dict[str, Any] = {}

    @backend_options
    def probe(name: str, *, backend_values: Any) -> str:
        seen.update(backend_values)
        return name

    assert probe(name="x", model="m", retries=1) == "x"
    assert seen == {n: {"model": "m", "retries": 1}.get(n) for n in NAMES}
    assert BackendSettings(**seen).model == "m"
