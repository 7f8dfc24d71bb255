"""backends.py: seed 004's table as data, and resolution at construction."""

from __future__ import annotations

from typing import Any

import pytest

from toolnexus import ConfigError, create_classifier
from toolnexus.config.backends import BACKEND_NAMES, BACKENDS, resolve_backend


def test_backend_names_order() -> None:
    """seed 004 backend-names: 'The five backend values, in the order every port's error
    message lists them'."""
    assert BACKEND_NAMES == ("typesafe", "openrouter", "cloudflare", "vercel", "custom")
    assert tuple(b.name for b in BACKENDS) == BACKEND_NAMES


@pytest.mark.parametrize(
    ("name", "base_url", "model", "key_env"),
    [
        pytest.param(
            "typesafe",
            "https://api.typesafe.ai/v1",
            "jev-latest",
            "TYPESAFE_API_KEY",
            id="typesafe",
        ),
        pytest.param(
            "openrouter",
            "https://openrouter.ai/api/v1",
            "typesafe/jev-1.13",
            "OPENROUTER_API_KEY",
            id="openrouter",
        ),
        pytest.param(
            "vercel",
            "https://ai-gateway.vercel.sh/typesafe/v1",
            "jev-latest",
            "AI_GATEWAY_API_KEY",
            id="vercel",
        ),
    ],
)
def test_a_row_sets_url_model_and_key_env_as_a_unit(
    name: str, base_url: str, model: str, key_env: str
) -> None:
    r = resolve_backend(name)
    assert (r.base_url, r.model, r.api_key_env, r.wire) == (base_url, model, key_env, "systemone")


def test_cloudflare_is_account_and_gateway_scoped_and_stays_unexpanded() -> None:
    r = resolve_backend("cloudflare")
    assert r.base_url.startswith("https://gateway.ai.cloudflare.com/v1/${")
    assert "${CLOUDFLARE_ACCOUNT_ID}" in r.base_url and "${CLOUDFLARE_GATEWAY_ID}" in r.base_url


@pytest.mark.parametrize(
    "explicit",
    [
        pytest.param({"base_url": "http://127.0.0.1:9/v1"}, id="base_url"),
        pytest.param({"model": "jev-1.13.0"}, id="model"),
        pytest.param({"api_key_env": "MY_KEY"}, id="api_key_env"),
    ],
)
def test_an_explicit_option_wins_over_the_row(explicit: dict[str, str]) -> None:
    """seed 004: 'An explicit :base-url / :model / :api-key-env still wins'."""
    r = resolve_backend("typesafe", **explicit)
    ((field, value),) = explicit.items()
    assert getattr(r, field) == value


def test_unknown_backend_lists_backend_names() -> None:
    with pytest.raises(ConfigError, match="typesafe, openrouter, cloudflare, vercel, custom"):
        resolve_backend("azure")


@pytest.mark.parametrize(
    "kw",
    [
        pytest.param({}, id="neither"),
        pytest.param({"base_url": "https://h/v1"}, id="no-supports"),
        pytest.param({"supports": {"images": False}}, id="no-base-url"),
    ],
)
def test_custom_requires_base_url_and_supports(kw: dict[str, Any]) -> None:
    """seed 004: 'custom requires :base-url and :supports (systemone style)'."""
    with pytest.raises(ConfigError, match="backend 'custom' requires"):
        resolve_backend("custom", **kw)


def test_custom_with_both_resolves() -> None:
    r = resolve_backend("custom", base_url="https://h/v1/", supports={"images": True})
    assert r.base_url == "https://h/v1" and r.images is True


@pytest.mark.parametrize(
    ("model", "instead"),
    [
        pytest.param("jev-1.13.0", "typesafe/jev-1.13", id="pinned"),
        pytest.param("jev-latest", "typesafe/jev-1.13", id="alias"),
        pytest.param("jev-1.14", "typesafe/jev-1.14", id="minor"),
    ],
)
def test_typesafe_spelling_on_openrouter_fails_at_construction(model: str, instead: str) -> None:
    """Issue 3: 'A TypeSafe-only model spelling sent to OpenRouter fails at construction with a
    message saying what to use instead'."""
    with pytest.raises(ConfigError, match=f"use '{instead}' instead"):
        create_classifier(backend="openrouter", model=model)


def test_openrouter_spelling_is_accepted() -> None:
    assert resolve_backend("openrouter", model="typesafe/jev-1.13").model == "typesafe/jev-1.13"


def test_supports_overrides_the_image_column() -> None:
    assert resolve_backend("openrouter").images is False
    assert resolve_backend("openrouter", supports={"images": True}).images is True
    assert resolve_backend("typesafe", model="jev-1.14.0").images is True


@pytest.mark.parametrize(
    "kw",
    [
        pytest.param({"base_url": "api.typesafe.ai/v1"}, id="no-scheme"),
        pytest.param({"model": ""}, id="empty-model"),
        pytest.param({"supports": {"images": "yes"}}, id="supports-not-bool"),
    ],
)
def test_bad_values_fail_at_construction(kw: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        create_classifier(**kw)


def test_the_classifier_reports_the_rows_model() -> None:
    """The metric event and repr name the model actually requested, the row's unit."""
    assert create_classifier(backend="openrouter").model == "typesafe/jev-1.13"
    assert create_classifier().model == "jev-latest"


# --- $TYPESAFE_BASE_URL (issue 17 item 17) ------------------------------------------------------


def _sent_url(monkeypatch: pytest.MonkeyPatch, value: str | None, **options: Any) -> str:
    """The URL one evaluate POSTs to with ``$TYPESAFE_BASE_URL`` set to ``value``."""
    import asyncio

    import httpx

    if value is not None:
        monkeypatch.setenv("TYPESAFE_BASE_URL", value)
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        return httpx.Response(
            200, json={"model": "m", "answers": {"q": {"type": "noul", "noul": 0.5}}}
        )

    judge = create_classifier(transport=httpx.MockTransport(handler), **options)
    asyncio.run(judge.evaluate("s", {"q": {"type": "noul", "instructions": "Holds?"}}))
    return seen[0]


@pytest.mark.parametrize(
    ("value", "options", "expected"),
    [
        pytest.param(
            "http://127.0.0.1:8123", {}, "http://127.0.0.1:8123/v1/systemone", id="host-root"
        ),
        pytest.param(
            "http://127.0.0.1:8123/", {}, "http://127.0.0.1:8123/v1/systemone", id="slash"
        ),
        pytest.param(
            "http://127.0.0.1:8123/v1", {}, "http://127.0.0.1:8123/v1/systemone", id="ends-in-v1"
        ),
        pytest.param(
            "http://127.0.0.1:8123/v1/", {}, "http://127.0.0.1:8123/v1/systemone", id="v1-slash"
        ),
        pytest.param(
            "http://127.0.0.1:8123/gw", {}, "http://127.0.0.1:8123/gw/v1/systemone", id="a-path"
        ),
        pytest.param(
            "http://127.0.0.1:8123",
            {"base_url": "http://127.0.0.1:9"},
            "http://127.0.0.1:9/systemone",
            id="base_url-verbatim-without-v1",
        ),
        pytest.param(None, {}, "https://api.typesafe.ai/v1/systemone", id="unset"),
        pytest.param("", {}, "https://api.typesafe.ai/v1/systemone", id="empty-is-unset"),
        pytest.param(
            "http://127.0.0.1:8123",
            {"base_url": "http://127.0.0.1:9/v1"},
            "http://127.0.0.1:9/v1/systemone",
            id="base_url-wins",
        ),
        pytest.param(
            "http://127.0.0.1:8123",
            {"backend": "openrouter"},
            "https://openrouter.ai/api/v1/systemone",
            id="other-backends-ignore-it",
        ),
    ],
)
def test_typesafe_base_url_is_read_as_the_official_sdk_reads_it(
    monkeypatch: pytest.MonkeyPatch, value: str | None, options: dict[str, Any], expected: str
) -> None:
    """Issue 17 item 17: the library honours "the official SDK's TYPESAFE_BASE_URL convention"
    when no base_url is given. The SDK reads it as a host root and appends /v1/systemone
    (reference/system-one-wire.md), so one variable points both at the same server."""
    assert _sent_url(monkeypatch, value, **options) == expected


@pytest.mark.parametrize(
    ("base_url", "hint"),
    [
        pytest.param("http://x.invalid/v1/v1", "holds /v1 twice", id="v1-twice"),
        pytest.param("http://x.invalid", "has no path", id="no-path"),
        pytest.param("http://x.invalid/", "has no path", id="no-path-slash"),
        pytest.param("http://x.invalid/v1", None, id="v1-no-hint"),
        pytest.param("http://x.invalid/api/v1", None, id="gateway-path-no-hint"),
    ],
)
def test_a_404_names_the_other_spelling_of_the_base_url(base_url: str, hint: str | None) -> None:
    """Issue 43 item 8: "a 404 whose URL holds /v1/v1, or whose base has no path at all, adds
    one hint line naming the other spelling"; base_url= keeps seed 004's rule verbatim."""
    import asyncio

    import httpx

    from toolnexus import ClassifierError

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(404, json={"detail": "Not Found"})

    async def go() -> str:
        async with create_classifier(
            base_url=base_url, transport=httpx.MockTransport(handler), retries=0
        ) as judge:
            try:
                await judge.evaluate("s", {"q": {"type": "noul", "instructions": "Holds?"}})
            except ClassifierError as e:
                return str(e)
        raise AssertionError("a 404 must fail")

    message = asyncio.run(go())
    assert "HTTP 404" in message and "\n" not in message
    if hint is None:
        assert "hint" not in message, message
    else:
        assert f"hint: the base URL {hint}" in message, message
        assert "--base-url / base_url=" in message and "$TYPESAFE_BASE_URL" in message


def test_the_serve_page_names_exactly_the_routes_served() -> None:
    """Issue 43 item 8: "the README's serve section (now docs/how-to/serve.md) says routes
    are served 'the same under /v1' (they are /systemone and /v1/systemone)": the sentence
    names what a real ``toolnexus serve`` answers, no more and no less."""
    import re

    import httpx

    from paths import REPO
    from serving import ThreadedServer
    from toolnexus.serve import ServeOptions

    page = (REPO / "docs" / "how-to" / "serve.md").read_text(encoding="utf-8")
    sentence = page[page.index("\nRoutes: ") :].split("(see", 1)[0]
    named = set(re.findall(r"`(GET|POST) (/[\w/]*)`", sentence))
    candidates = {
        (method, prefix + path)
        for method, path in (("POST", "/systemone"), ("GET", "/models"), ("GET", "/_stats"))
        for prefix in ("", "/v1", "/v1/v1")
    }
    with ThreadedServer(ServeOptions(synthetic=True)) as server, httpx.Client() as client:
        served = {
            (method, path)
            for method, path in candidates
            if client.request(method, server.url + path, content=b"{}").status_code != 404
        }
    assert named == served, sentence
