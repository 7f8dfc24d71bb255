"""Issue 3 acceptance: 'A test scans every error message, metric event, repr and cache file
produced by a run with TYPESAFE_API_KEY=sk-test-SECRET and asserts the secret never appears.'

Seed 004 / SPEC-8B: 'No credential value and no expanded header value appears in any log,
metric, error message or returned value'. The server here is hostile on purpose: its 401 and its
500 echo the Authorization header and the gateway header back in the body.
"""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from loopback import Fault, Loopback
from toolnexus import ClassifierError, create_classifier

SECRET = "sk-test-SECRET"
HEADER_SECRET = "gw-test-HEADER-SECRET"

QUESTIONS: dict[str, Any] = {
    "refund": {"type": "noul", "instructions": "Is a refund requested?"},
    "team": {
        "type": "choice",
        "instructions": "Which team?",
        "criteria": {"billing": "Payments and refunds", "technical": "Software failures"},
    },
}


def make_cache(tmp_path: Path) -> Any:
    """toolnexus.cache.SqliteCache when it exists, so its FILE is scanned too."""
    try:
        from toolnexus.cache import SqliteCache
    except ImportError:  # cache.py not landed yet: a dict-backed object with get/set
        return None
    return SqliteCache(tmp_path / "decisions.sqlite")


def everything_said(e: BaseException) -> list[str]:
    """An error as a host could see it: message, repr, every field, and its causes."""
    out = [str(e), repr(e)]
    out += [repr(v) for v in vars(e).values()]
    if isinstance(e.__cause__, BaseException):
        out += everything_said(e.__cause__)
    return out


def test_the_secret_never_appears(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TYPESAFE_API_KEY", SECRET)
    monkeypatch.setenv("GW_TOKEN", HEADER_SECRET)
    events: list[dict[str, Any]] = []
    said: list[str] = []
    cache = make_cache(tmp_path)

    class DictCache:
        def __init__(self) -> None:
            self.data: dict[str, str] = {}

        def get(self, key: str) -> str | None:
            return self.data.get(key)

        def set(self, key: str, value: str) -> None:
            self.data[key] = value

    fallback = DictCache()

    async def scenario(server: Loopback) -> None:
        options: dict[str, Any] = {
            "base_url": server.base_url,
            "headers": {"X-Gateway-Token": "${GW_TOKEN}"},
            "on_metric": events.append,
            "retry_base_ms": 1,
            "timeout": 0.3,
            "cache": cache if cache is not None else fallback,
        }
        async with create_classifier(**options) as c:
            said.append(repr(c))
            said.append(repr(c.pipeline.style))
            # successes, then the same state again from the cache
            for _ in range(2):
                d = await c.evaluate({"ticket": 1}, QUESTIONS)
                said.append(repr(d))
            # 401 echoing the Authorization header; 500s echoing it (retried, then failing);
            # a stall past the timeout (it ends only when the server stops, so on any machine);
            # a transient 429 that succeeds on retry.
            server.push(Fault.echo_auth(401))
            server.push(*[Fault.echo_auth(500)] * 3)
            server.push(*[Fault.stall(600)] * 3)
            server.push(Fault.http(429, retry_after="0"))
            for i in range(2, 6):
                try:
                    said.append(repr(await c.evaluate({"ticket": i}, QUESTIONS)))
                except ClassifierError as e:
                    said.extend(everything_said(e))
            # a batch that fails closed
            server.push(Fault.echo_auth(403))
            try:
                await c.evaluate_batch([{"ticket": 9}], QUESTIONS)
            except ClassifierError as e:
                said.extend(everything_said(e))

    with Loopback() as server:
        asyncio.run(scenario(server))
        seen_headers = list(server.headers)

    # The run really exercised what it claims to: the key and the header were SENT ...
    assert any(h.get("authorization") == f"Bearer {SECRET}" for h in seen_headers)
    assert any(h.get("x-gateway-token") == HEADER_SECRET for h in seen_headers)
    # ... the failures happened, with the server echoing the credential ...
    kinds = " ".join(said)
    assert "HTTP 401" in kinds and "HTTP 500" in kinds and "HTTP 403" in kinds
    assert "no answer within" in kinds
    assert any(e.get("cached") for e in events)
    # ... and the secrets appear nowhere a host can look.
    said.extend(repr(e) for e in events)
    for text in said:
        assert SECRET not in text and HEADER_SECRET not in text, text
    if cache is not None:
        cache.close()
        files = list(tmp_path.glob("decisions.sqlite*"))
        assert files
        for f in files:
            data = f.read_bytes()
            assert SECRET.encode() not in data and HEADER_SECRET.encode() not in data
    else:
        for k, v in fallback.data.items():
            assert SECRET not in k + v and HEADER_SECRET not in k + v


def test_options_repr_does_not_expand_references(monkeypatch: pytest.MonkeyPatch) -> None:
    """The options carry the variable NAMES; expanded values exist only inside one call."""
    monkeypatch.setenv("TYPESAFE_API_KEY", SECRET)
    monkeypatch.setenv("GW_TOKEN", HEADER_SECRET)
    c = create_classifier(headers={"X-Gateway-Token": "${GW_TOKEN}"})
    text = repr(c) + repr(c.options) + repr(dataclasses.asdict(c.options))
    assert SECRET not in text and HEADER_SECRET not in text


URL_SECRET = "sk-url-SECRET-7d6c"


@pytest.mark.parametrize(
    "credentials",
    [
        pytest.param(f"user:{URL_SECRET}", id="userinfo"),
        pytest.param("user:" + URL_SECRET.replace("-", "%2D"), id="percent-encoded"),
    ],
)
def test_a_key_in_the_base_url_never_appears(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, credentials: str
) -> None:
    """Issue 17 item 1, library side: a key written into the base URL (sent as Basic auth)
    reaches no error, metric event, repr or cache file, as written or percent-decoded, even
    when the server echoes the Authorization header back."""
    monkeypatch.delenv("TYPESAFE_API_KEY", raising=False)
    events: list[dict[str, Any]] = []
    said: list[str] = []
    cache = make_cache(tmp_path)

    async def scenario(server: Loopback) -> None:
        url = server.base_url.replace("http://", f"http://{credentials}@")
        options: dict[str, Any] = {"base_url": url, "on_metric": events.append, "cache": cache}
        async with create_classifier(retries=0, **options) as c:
            said.extend([repr(c), repr(c.pipeline.style)])
            for _ in range(2):  # live, then from the cache
                said.append(repr(await c.evaluate({"ticket": 1}, QUESTIONS)))
            server.push(Fault.echo_auth(500))
            with pytest.raises(ClassifierError) as e:
                await c.evaluate({"ticket": 2}, QUESTIONS)
            said.extend(everything_said(e.value))

    with Loopback() as server:
        asyncio.run(scenario(server))
        assert any(h.get("authorization", "").startswith("Basic ") for h in server.headers)
    said.extend(repr(e) for e in events)
    cache.close()
    stored = b"".join(f.read_bytes() for f in tmp_path.glob("decisions.sqlite*"))
    for form in (URL_SECRET, credentials.partition(":")[2]):
        for text in said:
            assert form not in text, text
        assert form.encode() not in stored
    assert any(e.get("cached") for e in events)
