"""Issue 8 §1, the CLI side (pipx's ``commands/*.py`` never import ``main.py``): no module of
``toolnexus.cli`` imports ``cli/app.py`` except the entry point, and ``cli/errors.py`` (CliError,
the exit codes, the one failure table) imports nothing else from ``cli/``. Read with ``ast``, so
an import inside a function counts."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from paths import REPO

CLI = REPO / "src" / "toolnexus" / "cli"


def _cli_imports(path: Path) -> set[str]:
    """The ``toolnexus.cli`` modules ``path`` imports, by their first name inside the package."""
    # The package ``path`` is in, as parts below toolnexus.cli (``render/x.py`` -> ["render"]).
    package = list(path.relative_to(CLI).parent.parts)
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            up = node.level - 1
            if up > len(package):
                continue  # above toolnexus.cli: the library
            base = package[: len(package) - up]
            target = base + (node.module.split(".") if node.module else [])
            names.update([target[0]] if target else [a.name for a in node.names])
        elif node.module:
            parts = node.module.split(".")
            if parts[:2] == ["toolnexus", "cli"] and len(parts) > 2:
                names.add(parts[2])
    return names


MODULES = sorted(p for p in CLI.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(CLI)))
def test_only_the_entry_point_imports_app(path: Path) -> None:
    if path.relative_to(CLI) == Path("__init__.py"):
        return  # the console entry point hands what it does not answer itself to the app
    assert "app" not in _cli_imports(path), f"{path.name} imports cli/app.py"


def test_errors_imports_nothing_from_the_cli() -> None:
    assert _cli_imports(CLI / "errors.py") == set()


def test_the_scan_sees_an_import_of_app() -> None:
    assert "app" in _cli_imports(CLI / "__init__.py")
    # from ...questionfile.codes: three dots climb above cli/ to the library's questionfile
    assert "questionfile" not in _cli_imports(CLI / "render" / "lint.py")
