"""No re-exports behind the front doors (issue 44): "names in a non-front module's __all__ it
imports rather than defines: 0" and "re-exports in use: 0". A room's ``__init__.py`` is its front
door and names what the room offers, each from the module that defines it; every other module's
``__all__`` lists only what that module defines, and no module imports a name through a private
module that merely imports it (importers name the defining module, or its room's door).

Read with ``ast``: a module defines a name by a ``def``, ``class`` or assignment at its top level
(also inside a top-level ``if`` / ``try``, e.g. ``if TYPE_CHECKING:`` or a fallback).
"""

from __future__ import annotations

import ast

import pytest
from test_import_graph import _resolve, modules


def top_level(tree: ast.Module) -> list[ast.stmt]:
    """The module's statements, with the bodies of its top-level ``if`` / ``try`` flattened."""
    found: list[ast.stmt] = []
    for node in tree.body:
        found.append(node)
        if isinstance(node, ast.If):
            found += [*node.body, *node.orelse]
        elif isinstance(node, ast.Try):
            found += [*node.body, *node.orelse, *node.finalbody]
            found += [s for handler in node.handlers for s in handler.body]
    return found


def defined(tree: ast.Module) -> set[str]:
    """The names a module defines itself (not the ones it imports)."""
    names: set[str] = set()
    for node in top_level(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
    return names


def declared(tree: ast.Module) -> list[str]:
    """The literal ``__all__`` of a module ([] if it has none)."""
    for node in top_level(tree):
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
            and isinstance(node.value, ast.List | ast.Tuple)
        ):
            return [e.value for e in node.value.elts if isinstance(e, ast.Constant)]
    return []


def imported_not_defined(source: str) -> list[str]:
    """The names in a non-front module's ``__all__`` that it does not define."""
    tree = ast.parse(source)
    mine = defined(tree)
    return [name for name in declared(tree) if name not in mine]


def reexports_in_use(sources: dict[str, tuple[str, bool]]) -> list[str]:
    """``importer imports name from module`` for each import (anywhere in a file) of a name
    through a non-front module that does not define it. ``sources``: module -> (text, is a
    package's ``__init__``)."""
    trees = {m: ast.parse(text) for m, (text, _) in sources.items()}
    own = {m: defined(tree) for m, tree in trees.items()}
    fronts = {m for m, (_, is_package) in sources.items() if is_package}
    found = []
    for importer, tree in sorted(trees.items()):
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            base = _resolve(importer, importer in fronts, node.level, node.module)
            if base not in trees or base in fronts:
                continue
            for alias in node.names:
                if alias.name not in own[base] and f"{base}.{alias.name}" not in trees:
                    found.append(
                        f"{importer} imports {alias.name} from {base} (line {node.lineno})"
                    )
    return found


def _house() -> dict[str, tuple[str, bool]]:
    return {
        m: (p.read_text(encoding="utf-8"), p.name == "__init__.py") for m, p in modules().items()
    }


def test_a_private_module_s_all_lists_only_what_it_defines() -> None:
    """'names in a non-front module's __all__ it imports rather than defines: 0' (issue 44)."""
    found = [
        f"{m}: {name}"
        for m, (text, is_package) in sorted(_house().items())
        if not is_package
        for name in imported_not_defined(text)
    ]
    assert not found, "import these from the module that defines them:\n" + "\n".join(found)


def test_no_name_is_imported_through_a_module_that_only_imports_it() -> None:
    """'re-exports in use: 0' (issue 44): every import names the defining module or a door."""
    found = reexports_in_use(_house())
    assert not found, "\n".join(found)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        pytest.param(
            "from ..core import FLAGS\n__all__ = ['FLAGS', 'record']\ndef record(): ...\n",
            ["FLAGS"],
            id="an-imported-name-in-all-is-found",
        ),
        pytest.param(
            "from ..core import redact_url as redact_url\n__all__ = ['scrub']\ndef scrub(): ...\n",
            [],
            id="an-imported-name-outside-all-passes",
        ),
        pytest.param(
            "TYPE_CHECKING = False\nif TYPE_CHECKING:\n    X = int\nelse:\n    X = object\n"
            "A, (B, C) = 1, (2, 3)\n__all__ = ['A', 'B', 'C', 'X']\n",
            [],
            id="names-assigned-under-if-and-by-unpacking-are-defined",
        ),
    ],
)
def test_a_planted_all_is_read(source: str, expected: list[str]) -> None:
    assert imported_not_defined(source) == expected


@pytest.mark.parametrize(
    ("sources", "expected"),
    [
        pytest.param(
            {
                "toolnexus.core": ("FLAGS = ()\n", True),
                "toolnexus.records.decision": ("from ..core import FLAGS\n", False),
                "toolnexus.cli.render": (
                    "def f():\n    from ...records.decision import FLAGS\n",
                    True,
                ),
            },
            ["toolnexus.cli.render imports FLAGS from toolnexus.records.decision (line 2)"],
            id="through-a-private-module-inside-a-function-is-found",
        ),
        pytest.param(
            {
                "toolnexus.core": ("from .validation import FLAGS\n", True),
                "toolnexus.core.validation": ("FLAGS = ()\n", False),
                "toolnexus.serve": ("from ..core import FLAGS\n", True),
                "toolnexus.serve.rules": ("from .. import synthetic\n", False),
                "toolnexus.serve.synthetic": ("", False),
            },
            [],
            id="a-door-and-a-submodule-pass",
        ),
    ],
)
def test_a_planted_reexport_in_use_is_found(
    sources: dict[str, tuple[str, bool]], expected: list[str]
) -> None:
    assert reexports_in_use(sources) == expected
