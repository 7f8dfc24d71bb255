"""The exception tree (issue 8 §2): intermediate bases a caller catches, the specific class
raised everywhere, and the tree drawn in ``errors.py``'s docstring."""

from __future__ import annotations

import ast
import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import httpx
import pytest

import toolnexus
from toolnexus.core import errors
from toolnexus.core.errors import (
    BackendError,
    CacheError,
    ClassifierError,
    ConfigError,
    DecisionError,
    HookError,
    HostBackendError,
    HTTPStatusError,
    InvalidDecision,
    InvalidState,
    TransportError,
)

SRC = Path(toolnexus.__file__).parent
QS = {"ok": toolnexus.NoulQuestion("Is it ok?")}
OK_BODY = b'{"model":"jev-1.13.0","answers":{"ok":{"type":"noul","noul":0.9}}}'


@pytest.mark.parametrize(
    ("child", "base"),
    [
        pytest.param(TransportError, BackendError, id="transport-is-backend"),
        pytest.param(HTTPStatusError, BackendError, id="http-status-is-backend"),
        pytest.param(DecisionError, BackendError, id="undecodable-is-backend"),
        pytest.param(InvalidDecision, BackendError, id="invalid-decision-is-backend"),
        pytest.param(HostBackendError, BackendError, id="host-backend-is-backend"),
        pytest.param(ConfigError, ValueError, id="config-keeps-value-error"),
        pytest.param(InvalidState, TypeError, id="invalid-state-keeps-type-error"),
        pytest.param(CacheError, ClassifierError, id="cache-is-classifier-error"),
        pytest.param(HookError, ClassifierError, id="hook-is-classifier-error"),
    ],
)
def test_intermediate_bases(child: type[BaseException], base: type[BaseException]) -> None:
    """issue 8: 'BackendError over every failure that came from the far side (transport, HTTP
    status, undecodable or invalid decision)'; 'Keep the stdlib mix-ins'."""
    assert issubclass(child, base)


@pytest.mark.parametrize(
    "family",
    [
        pytest.param(ConfigError, id="config"),
        pytest.param(CacheError, id="cache"),
        pytest.param(HookError, id="hook"),
    ],
)
def test_families_are_disjoint_from_backend_errors(family: type[ClassifierError]) -> None:
    """A caller that retries on BackendError never retries a wrong call."""
    assert not issubclass(family, BackendError) and not issubclass(BackendError, family)


def test_the_docstring_draws_every_class() -> None:
    """issue 8: 'Draw the tree in errors.py's docstring.'"""
    doc = errors.__doc__ or ""
    for name in errors.__all__:
        if isinstance(getattr(errors, name), type):
            assert f" {name}" in doc, name


def test_every_error_class_is_public() -> None:
    for name in errors.__all__:
        assert getattr(toolnexus, name) is getattr(errors, name), name


def _bare_classifier_error_calls() -> list[str]:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                f = node.func
                name = (
                    f.id
                    if isinstance(f, ast.Name)
                    else f.attr
                    if isinstance(f, ast.Attribute)
                    else ""
                )
                if name == "ClassifierError":
                    found.append(f"{path.relative_to(SRC)}:{node.lineno}")
    return found


def test_no_bare_classifier_error_is_raised_in_src() -> None:
    """issue 8: 'Raise the specific class everywhere; no bare ClassifierError(...) remains in
    src/.'"""
    assert _bare_classifier_error_calls() == []


# --- each family, raised where it happens ---------------------------------------------------


def _evaluate(**options: Any) -> toolnexus.Decision:
    async def go() -> toolnexus.Decision:
        async with toolnexus.create_classifier(**options) as c:
            return await c.evaluate("state", QS)

    return asyncio.run(go())


def _mock(handler: Any = None) -> httpx.MockTransport:
    return httpx.MockTransport(handler or (lambda r: httpx.Response(200, content=OK_BODY)))


def test_an_unset_reference_in_the_base_url_is_a_config_error() -> None:
    """The same failure the CLI reports for an unset ${CLOUDFLARE_ACCOUNT_ID}: nothing sent."""
    sent: list[httpx.Request] = []
    with pytest.raises(ConfigError, match=r"\$\{NOT_SET_ANYWHERE\}"):
        _evaluate(
            base_url="https://gw.example.test/${NOT_SET_ANYWHERE}/v1",
            transport=_mock(lambda r: sent.append(r) or httpx.Response(200, content=OK_BODY)),
        )
    assert sent == []


def test_a_custom_evaluate_that_raises_is_a_host_backend_error() -> None:
    def boom(state: Any, questions: Any) -> Any:
        raise RuntimeError("backend exploded")

    with pytest.raises(HostBackendError, match="custom evaluate failed") as info:
        _evaluate(style="custom", evaluate=boom)
    assert isinstance(info.value.__cause__, RuntimeError)


def test_a_body_transform_that_raises_is_a_hook_error() -> None:
    def bad(body: dict[str, Any]) -> Any:
        raise KeyError("nope")

    with pytest.raises(HookError, match="body_transform raised KeyError"):
        _evaluate(body_transform=bad, transport=_mock())


def test_an_on_error_with_a_bad_verdict_is_a_hook_error() -> None:
    with pytest.raises(HookError, match="on_error must return"):
        _evaluate(
            on_error=lambda info: "maybe",
            transport=_mock(lambda r: httpx.Response(503)),
            retry_base_ms=1,
        )


def test_a_host_cache_that_raises_is_a_cache_error() -> None:
    class Broken:
        def get(self, key: str) -> str | None:
            raise OSError("disk gone")

        def set(self, key: str, value: str) -> None:
            raise OSError("disk gone")

    with pytest.raises(CacheError, match="cache get failed: OSError"):
        _evaluate(cache=Broken(), transport=_mock())


def test_sqlite_failures_are_cache_errors(tmp_path: Path) -> None:
    """issue 8: 'a CacheError for a cache that cannot be read or written'."""
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(CacheError, match="cannot open") as opened:
        toolnexus.SqliteCache(blocker / "c.db")
    assert opened.value.path == str(blocker / "c.db")
    cache = toolnexus.SqliteCache(tmp_path / "c.db")
    cache.close()
    with pytest.raises(CacheError, match="is closed"):
        cache.get("k")
    # A file that is not a database: the sqlite3 error is translated, never leaked.
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not a sqlite database" * 100)
    with pytest.raises(CacheError) as info:
        toolnexus.SqliteCache(junk)
    assert not isinstance(info.value, sqlite3.Error)


@pytest.mark.parametrize(
    ("call", "fragment"),
    [
        pytest.param(lambda: toolnexus.memory_cache(ttl_ms=-1), "ttl_ms", id="cache-ttl"),
        pytest.param(lambda: toolnexus.canonical_json(float("nan")), "not canonical", id="nan"),
        pytest.param(lambda: toolnexus.create_classifier(stlye="x"), "unknown option", id="opt"),
    ],
)
def test_wrong_arguments_are_config_errors(call: Any, fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment) as info:
        call()
    assert isinstance(info.value, ValueError)
