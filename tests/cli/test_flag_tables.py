"""Issue 45 item 2: "One definition per field. Each CLI flag table is generated from the values
class it fills (name, type, default, help, environment variable), for ``batch``, ``filter``,
``serve`` and ``mcp``." Each command's options are ``options.option_table`` of its values
class (and of ``BackendSettings``), parameter for parameter: nothing declared a second time."""

from __future__ import annotations

import importlib
import inspect
import typing
from typing import Any

import pytest
from typer.models import OptionInfo

from toolnexus.cli.options import BackendSettings, option_table


def _values(module: str, name: str) -> Any:
    return getattr(importlib.import_module(f"toolnexus.{module}"), name)


def _said(annotation: Any) -> tuple[Any, dict[str, Any]]:
    """An option's type and what its ``typer.Option`` says (evaluating a class's string
    annotations makes a new ``OptionInfo`` each time: compared by what it holds)."""
    kind, option = typing.get_args(annotation)
    return kind, {k: v for k, v in vars(option).items() if not callable(v)}


@pytest.mark.parametrize(
    ("command", "values", "backend"),
    [
        pytest.param("cli.batch_cmd:batch_command", "cli.batch_options:BatchFlags", True,
                     id="batch"),
        pytest.param("cli.filter_cmd:filter_command", "cli.filter_options:FilterFlags", True,
                     id="filter"),
        pytest.param("cli.serve_cmd:serve", "serve.options:ServeOptions", False, id="serve"),
        pytest.param("cli.mcp_cmd:mcp_command", "cli.mcp_cmd:McpFlags", True, id="mcp"),
    ],
)  # fmt: skip
def test_each_commands_flag_table_is_generated_from_the_values_class_it_fills(
    command: str, values: str, backend: bool
) -> None:
    cmd = _values(*command.split(":"))
    table = option_table(_values(*values.split(":")))
    if backend:
        table += option_table(BackendSettings)
    params = inspect.signature(cmd).parameters
    for name, kind, default in table:
        # the values class's own declaration: type, flag, help, metavar, environment variable
        assert _said(params[name].annotation) == _said(kind), name
        assert params[name].default == default, name
    options = [
        n for n, p in params.items()
        if any(isinstance(a, OptionInfo) for a in typing.get_args(p.annotation))
    ]  # fmt: skip
    assert sorted(options) == sorted(n for n, _, _ in table)
