"""The shape of the house (conventions): pure modules never import httpx, rich or typer; only
cli/ imports typer and rich; only the transport's two adapters and llm.py import httpx or aiohttp
(the retry loop and the redaction module speak neither). Read from the source, so a lazy import
inside a function counts."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from paths import REPO

SRC = REPO / "src" / "toolnexus"
PURE = {
    "questions.py",
    "canonical.py",
    "decision.py",
    "answers.py",
    "validation.py",
    "validity.py",
    "consistency.py",
    "failures.py",
    "records/decision.py",
    "policy.py",
    "bands.py",
}
HTTP = {
    "transport/aiohttp_adapter.py",
    "transport/httpx_adapter.py",
    "transport/multipart.py",
    "llm.py",
}
#: Redaction and safe messages: pure, like the core (issue 8 §4); ``urls.py`` is redaction's URL
#: half, moved down to the core rank for ``backends`` (issue 30 item 3).
PURE_TRANSPORT = {
    "transport/redaction.py",
    "transport/adapter.py",
    "transport/authcause.py",
    "urls.py",
}


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


MODULES = sorted(SRC.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(SRC)))
def test_module_imports_follow_the_layers(path: Path) -> None:
    rel = path.relative_to(SRC)
    imported = _imports(path)
    in_cli = rel.parts[0] == "cli"
    if not in_cli:
        assert not imported & {"typer", "rich"}, f"{rel} imports a CLI library"
    # serve/ is the local System One server: it speaks HTTP (aiohttp.web) by definition.
    if str(rel) not in HTTP and rel.parts[0] != "serve":
        assert not imported & {"httpx", "aiohttp"}, f"{rel} imports HTTP"
    if str(rel) in PURE:
        assert imported <= {
            "__future__", "collections", "dataclasses", "enum", "hashlib", "json", "math",
            "types", "typing",
        }, f"{rel} is pure but imports {sorted(imported)}"  # fmt: skip
    if str(rel) in ("images.py", "imagelimits.py"):
        # Pure too, plus what reading an Image from a path or base64 text needs.
        assert imported <= {
            "__future__", "base64", "binascii", "collections", "dataclasses", "hashlib", "os",
            "pathlib", "re", "struct", "typing",
        }, f"{rel} is pure but imports {sorted(imported)}"  # fmt: skip
    if str(rel) == "assets.py":
        # Pure too: lifting images out of a state reads no file itself (an Image does).
        assert imported <= {
            "__future__", "collections", "dataclasses", "os", "re", "typing",
        }, f"{rel} is pure but imports {sorted(imported)}"  # fmt: skip
    if str(rel) in PURE_TRANSPORT:
        # base64: the redaction scrubs a key's base64 spellings too (issue 43 item 1).
        assert imported <= {
            "__future__", "base64", "collections", "errno", "http", "json", "re", "typing",
        }, f"{rel} is pure but imports {sorted(imported)}"  # fmt: skip


def test_the_layer_test_sees_every_module() -> None:
    seen = {str(p.relative_to(SRC)) for p in MODULES}
    assert {"questions.py", "canonical.py", "decision.py"} | HTTP | PURE_TRANSPORT <= seen


def _reaches_cli(path: Path) -> bool:
    """Whether ``path`` imports ``toolnexus.cli`` (relatively or absolutely, even lazily)."""
    rel = path.relative_to(SRC)
    depth = len(rel.parts) - 1  # how many packages below toolnexus the module sits
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level == 0 and (node.module or "").startswith("toolnexus.cli"):
                return True
            if node.level == depth + 1 and (node.module or "").split(".")[0] == "cli":
                return True
        elif isinstance(node, ast.Import) and any(
            a.name.startswith("toolnexus.cli") for a in node.names
        ):
            return True
    return False


def _is_app(path: Path) -> bool:
    """An application on top of the library (tests/house/test_layers.py's ``APP`` rank): cli/,
    serve/, ``__main__`` and the pytest plugin's modules, which may build on the CLI's backend
    flags (the plugin replays exactly what ``eval --replay`` loads)."""
    from test_layers import APP, rank_of

    parts = ["toolnexus", *path.relative_to(SRC).with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()
    return rank_of(".".join(parts)) == APP and parts[1] != "serve"


@pytest.mark.parametrize(
    "path",
    [p for p in MODULES if not _is_app(p)],
    ids=lambda p: str(p.relative_to(SRC)),
)
def test_the_library_never_imports_the_cli(path: Path) -> None:
    """The CLI is built on the library, never the reverse: what both need (the failure table,
    decision records) lives in the core (``failures.py``, ``records/decision.py``). Only the
    other applications may build on it."""
    assert not _reaches_cli(path)
