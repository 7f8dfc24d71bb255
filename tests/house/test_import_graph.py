"""No import cycles (issue 8 §1): 'A test reads the imports of every module under src/toolnexus
(with ast, including imports inside functions) and fails on any cycle, naming it.'

Every import statement counts, wherever it sits: at the top, inside a function (a lazy import
only hides a loop: ``toolnexus/__init__`` loads the module anyway) and under ``if TYPE_CHECKING:``
(a loop in the types is the same design loop, and mypy follows it). An edge goes to the module
that a name comes from: ``from .transport import redact`` is an edge to ``toolnexus.transport``,
``from . import errors`` an edge to ``toolnexus.core.errors``. Importing ``a.b`` also runs ``a``'s
``__init__``; that implicit edge is NOT counted, or every package that re-exports its submodules
would be a cycle by construction (the convention of import-linter and pydeps).
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

import toolnexus

SRC = Path(toolnexus.__file__).resolve().parent
PACKAGE = "toolnexus"


def module_name(path: Path) -> str:
    parts = [PACKAGE, *path.relative_to(SRC).with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(SRC.rglob("*.py"))}


def _resolve(current: str, is_package: bool, level: int, target: str | None) -> str:
    """The absolute name of a relative import's base (``from ..x import y`` -> ``toolnexus.x``)."""
    if level == 0:
        return target or ""
    base = current.split(".")
    # In a package's __init__, "." is the package itself; in a module, it is the parent.
    drop = level - 1 if is_package else level
    base = base[: len(base) - drop] if drop else base
    return ".".join([*base, target] if target else base)


def imports_of(name: str, path: Path, known: set[str]) -> Iterator[tuple[str, int]]:
    """``(imported module, line)`` for every import of a package module in ``path``."""
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == PACKAGE:
                    yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(name, is_package, node.level, node.module)
            if base.split(".")[0] != PACKAGE:
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                # `from . import errors` names a submodule; `from .errors import X` a name.
                yield (sub if sub in known else base), node.lineno


def graph() -> dict[str, dict[str, int]]:
    """module -> {imported module: first line}, package modules only."""
    mods = modules()
    known = set(mods)
    edges: dict[str, dict[str, int]] = {m: {} for m in mods}
    for name, path in mods.items():
        for target, line in imports_of(name, path, known):
            if target in known and target != name:
                edges[name].setdefault(target, line)
    return edges


def components(edges: dict[str, dict[str, int]]) -> dict[str, int]:
    """Each module's strongly connected component (Tarjan's algorithm): two modules share one
    exactly when each reaches the other, so every cycle lies inside one component."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    component: dict[str, int] = {}

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component[w] = index[v]
                if w == v:
                    break

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return component


def cycles(edges: dict[str, dict[str, int]]) -> list[list[str]]:
    """Every elementary cycle, each once, as ``[a, b, ..., a]`` starting from its smallest
    module name: a failure names each loop in import order. A depth-first search from each
    module through larger names of its own strongly connected component only: an acyclic
    graph (the house's, when this passes) is walked in linear time. Searching every path, as
    this did, took 14 s once the house had 244 modules."""
    component = components(edges)
    found: list[list[str]] = []
    for start in sorted(edges):
        path = [start]
        mine = component[start]

        def walk(v: str, start: str = start, path: list[str] = path, mine: int = mine) -> None:
            for w in sorted(edges.get(v, {})):
                if w == start:
                    found.append([*path, start])
                elif w > start and w not in path and component.get(w) == mine:
                    path.append(w)
                    walk(w)
                    path.pop()

        walk(start)
    return found


def describe(loop: list[str], edges: dict[str, dict[str, int]]) -> str:
    hops = [f"{a} (line {edges[a][b]})" for a, b in itertools.pairwise(loop)]
    return " -> ".join([*hops, loop[-1]])


def test_the_module_graph_has_no_cycle() -> None:
    """issue 8 §1: 'the module graph of src/toolnexus has no cycle'."""
    edges = graph()
    found = cycles(edges)
    assert not found, "import cycles:\n" + "\n".join(describe(c, edges) for c in found)


def test_the_graph_sees_every_kind_of_import() -> None:
    """The reader itself: a lazy import, a TYPE_CHECKING import and a relative package import
    are all edges; a third-party import is not."""
    edges = graph()
    assert "toolnexus.core.errors" in edges["toolnexus.core.questions"]
    # cli/app.py imports `from .. import __version__`: an edge to the package itself.
    assert "toolnexus" in edges["toolnexus.cli.app"]
    assert not any(t.split(".")[0] != PACKAGE for e in edges.values() for t in e)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        pytest.param("from .b import x\n", ["toolnexus.b"], id="top-level"),
        pytest.param("def f():\n    from .b import x\n", ["toolnexus.b"], id="inside-function"),
        pytest.param(
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import X\n",
            ["toolnexus.b"],
            id="type-checking",
        ),
        pytest.param("from . import b\n", ["toolnexus.b"], id="submodule-by-name"),
        pytest.param("import toolnexus.b\n", ["toolnexus.b"], id="absolute"),
    ],
)
def test_every_import_counts(tmp_path: Path, source: str, expected: list[str]) -> None:
    path = tmp_path / "a.py"
    path.write_text(source, encoding="utf-8")
    got = [t for t, _ in imports_of("toolnexus.a", path, {"toolnexus.a", "toolnexus.b"})]
    assert got == expected


def test_a_cycle_is_found_and_named() -> None:
    edges = {
        "toolnexus.a": {"toolnexus.b": 3},
        "toolnexus.b": {"toolnexus.c": 5},
        "toolnexus.c": {"toolnexus.a": 9},
        "toolnexus.d": {"toolnexus.a": 1},
    }
    found = cycles(edges)
    assert found == [["toolnexus.a", "toolnexus.b", "toolnexus.c", "toolnexus.a"]]
    assert describe(found[0], edges) == (
        "toolnexus.a (line 3) -> toolnexus.b (line 5) -> toolnexus.c (line 9) -> toolnexus.a"
    )
