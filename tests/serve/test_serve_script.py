"""The ``script`` hook of ``toolnexus serve`` (issue 11): "see how their client behaves when the
API misbehaves", with any status, headers and body bytes a test wants; and "one fake, not two"
(the hostile suite's server is this hook)."""

from __future__ import annotations

import gzip
import io
import json
from typing import Any

import httpx
import pytest

from serving import post, run_with
from toolnexus.serve import (
    Fault,
    ScriptedReply,
    ScriptedRequest,
    ServeOptions,
    Server,
    serve,
    synthesize,
)

KEY = "sk-script-secret-5b1e7c"
BODY = {
    "model": "jev-latest",
    "state": "charged twice",
    "questions": {"r": {"type": "noul", "instructions": "Refund?"}},
}
RAW = json.dumps(BODY).encode()


async def raw_post(
    url: str, data: bytes, headers: dict[str, str]
) -> tuple[int, dict[str, str], bytes]:
    """POST and return status, headers and the body bytes exactly as they came off the wire."""
    async with (
        httpx.AsyncClient(timeout=10, verify=False, trust_env=False) as client,
        client.stream("POST", url + "/v1/systemone", content=data, headers=headers) as r,
    ):
        body = b"".join([chunk async for chunk in r.aiter_raw()])
        return r.status_code, dict(r.headers), body


def test_a_script_answers_any_status_headers_and_bytes_and_none_falls_through() -> None:
    got: list[ScriptedRequest] = []

    def script(req: ScriptedRequest) -> ScriptedReply | None:
        got.append(req)
        if req.json["state"] == "normal":
            return None
        return ScriptedReply(418, b"<not json>", {"X-Odd": "yes", "Content-Type": "text/plain"})

    async def scenario(server: Server) -> list[httpx.Response]:
        auth = {"Authorization": f"Bearer {KEY}"}
        return [
            await post(server.url, BODY, headers=auth),
            await post(server.url, {**BODY, "state": "normal"}, headers=auth),
        ]

    odd, normal = run_with(ServeOptions(synthetic=True, script=script), scenario)
    assert odd.status_code == 418 and odd.content == b"<not json>"
    assert odd.headers["x-odd"] == "yes" and odd.headers["content-type"] == "text/plain"
    assert odd.headers["x-typesafe-request-id"].startswith("req_serve_")
    assert normal.status_code == 200
    assert normal.json()["answers"] == synthesize({**BODY, "state": "normal"})["answers"]
    assert [r.key for r in got] == [KEY, KEY] and got[0].body == RAW
    assert got[0].headers["authorization"] == f"Bearer {KEY}"  # case-insensitive look-up
    assert got[0].endpoint == "systemone"


def test_gzip_a_lying_content_encoding_and_the_script_own_request_id() -> None:
    replies = iter(
        [
            ScriptedReply(200, RAW, gzip=True),
            ScriptedReply(200, b"plain bytes", {"Content-Encoding": "gzip"}),
            ScriptedReply(503, b"{}", {"x-typesafe-request-id": "req-mine"}),
        ]
    )

    async def scenario(server: Server) -> list[tuple[int, dict[str, str], bytes]]:
        return [await raw_post(server.url, RAW, {}) for _ in range(3)]

    (s1, h1, b1), (s2, h2, b2), (s3, h3, _) = run_with(
        ServeOptions(synthetic=True, script=lambda _req: next(replies)), scenario
    )
    assert s1 == 200 and h1["content-encoding"] == "gzip" and gzip.decompress(b1) == RAW
    assert h1["content-type"] == "application/json"
    assert s2 == 200 and h2["content-encoding"] == "gzip" and b2 == b"plain bytes"
    assert s3 == 503 and h3["x-typesafe-request-id"] == "req-mine"


def test_scripted_replies_are_counted_and_logged_without_authorization_or_body() -> None:
    log = io.StringIO()
    secret_body = b'{"secret-body": "do not log me"}'

    async def scenario(server: Server) -> dict[str, Any]:
        await post(server.url, RAW, headers={"Authorization": f"Bearer {KEY}"})
        await post(server.url, RAW)
        async with httpx.AsyncClient(trust_env=False) as client:
            return (await client.get(server.url + "/_stats")).json()

    options = ServeOptions(
        synthetic=True,
        access_log=log,
        script=lambda req: ScriptedReply(500, secret_body) if req.key else None,
    )
    stats = run_with(options, scenario)
    assert stats["routes"]["POST /v1/systemone"] == {"answered": 1, "scripted": 1}
    text = log.getvalue()
    assert " 500 " in text and " scripted" in text
    assert KEY not in text and "Bearer" not in text and "secret-body" not in text
    assert "charged twice" not in text


def test_faults_and_the_key_check_come_before_the_script(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCRIPT_TEST_KEY", KEY)
    calls: list[str] = []

    def script(req: ScriptedRequest) -> ScriptedReply:
        calls.append(req.key)
        return ScriptedReply(200, b"{}")

    async def scenario(server: Server) -> list[int]:
        server.push(Fault.http(429))
        auth = {"Authorization": f"Bearer {KEY}"}
        return [
            (await post(server.url, RAW, headers=auth)).status_code,
            (await post(server.url, RAW)).status_code,
            (await post(server.url, RAW, headers=auth)).status_code,
        ]

    options = ServeOptions(synthetic=True, require_key_env="SCRIPT_TEST_KEY", script=script)
    assert run_with(options, scenario) == [429, 401, 200]
    assert calls == [KEY]


def test_the_script_sees_a_zstd_body_decoded() -> None:
    from backports import zstd

    seen: list[bytes] = []

    def script(req: ScriptedRequest) -> None:
        seen.append(req.body)

    async def scenario(server: Server) -> int:
        sent = await post(server.url, zstd.compress(RAW), headers={"Content-Encoding": "zstd"})
        return sent.status_code

    assert run_with(ServeOptions(synthetic=True, script=script), scenario) == 200
    assert seen == [RAW]


def test_serve_takes_a_script_too() -> None:
    async def go() -> httpx.Response:
        async with serve(synthetic=True, script=lambda _r: ScriptedReply(502, b"gateway")) as url:
            return await post(url, RAW)

    import asyncio

    r = asyncio.run(go())
    assert r.status_code == 502 and r.content == b"gateway"


def test_the_access_log_shows_a_hostile_path_without_obeying_it() -> None:
    """A client's path is percent-decoded before it is logged: an ESC in it would reach the
    operator's terminal (a clipboard write, a cleared screen). The log shows it as escapes.
    (A request id with controls cannot come back: aiohttp refuses them in any header.)"""
    log = io.StringIO()

    async def scenario(server: Server) -> None:
        async with httpx.AsyncClient(trust_env=False) as client:
            await client.get(server.url + "/%1b]52;c;ZXZpbA==%07%1b[2J%E2%80%AE")

    run_with(ServeOptions(synthetic=True, access_log=log), scenario)
    text = log.getvalue()
    assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text
    assert "/\\x1b]52;c;ZXZpbA==\\x07\\x1b[2J\\u202e" in text
