"""The public import paths (issue 44 item 2): "The README lists, once, every import path a user
may rely on ... A test holds the public list." Every other module is a room's private inside."""

from __future__ import annotations

import importlib
import re
import tomllib

import pytest

from paths import REPO

#: What the README promises, in its order.
PUBLIC = [
    "toolnexus",
    "toolnexus.sync",
    "toolnexus.run",
    "toolnexus.run.register_reader",
    "toolnexus.run.register_sink",
    "toolnexus.questionfile",
    "toolnexus.serve",
    "toolnexus.arrow",
    "toolnexus.ray",
    "toolnexus.pytest_plugin",
    "toolnexus.classifier",
    "toolnexus.transport.redaction.redact_url",
]


def readme_list() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    found = re.findall(r"^## Public import paths\n\n(.*?)\n\n", text, re.S | re.M)
    assert len(found) == 1, "the README lists the public paths once"
    return re.findall(r"`(toolnexus[\w.]*)`", found[0])


def test_the_readme_lists_the_public_paths_once() -> None:
    assert readme_list() == PUBLIC


@pytest.mark.parametrize("path", PUBLIC)
def test_each_public_path_imports(path: str) -> None:
    """A module imports; a deeper name is an attribute of the module before its last dot.
    (The arrow and ray engines import their extra only when called.)"""
    try:
        importlib.import_module(path)
    except ModuleNotFoundError:
        module, _, name = path.rpartition(".")
        assert getattr(importlib.import_module(module), name)


def test_the_pytest_entry_point_keeps_its_name() -> None:
    """'the pytest11 entry point keeps that name' (issue 44 item 2)."""
    meta = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    plugins = meta["project"]["entry-points"]["pytest11"]
    assert plugins == {"toolnexus.pytest_plugin": "toolnexus.pytest_plugin"}
