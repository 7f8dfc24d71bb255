"""``toolnexus serve --proxy URL --record DIR``, and the record-then-replay round trip (issue 11):
serve A ``--synthetic``; serve B ``--proxy A --record DIR``; a client batch through B; then
serve C ``--replay DIR`` answers the same batch with 0 misses and identical decisions."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from imagegen import png
from serving import multipart, post
from toolnexus import RunStopped, create_classifier
from toolnexus.serve import ServeOptions, Server

KEY = "sk-proxy-test-5f1e0c"
QUESTIONS: dict[str, Any] = {
    "refund": {"type": "noul", "instructions": "Is a refund requested?"},
    "team": {
        "type": "choice",
        "instructions": "Which team?",
        "criteria": {"billing": "Payments", "technical": "Software"},
    },
    "urgency": {
        "type": "score",
        "instructions": "How urgent?",
        "criteria": ["Routine", "Today", "Outage"],
    },
}
STATES = [f"ticket {i}: charged twice for INV-{i}" for i in range(12)] + [{"ticket": 99}]


async def batch(url: str) -> list[dict[str, Any]]:
    async with create_classifier(base_url=f"{url}/v1", api_key_env="PROXY_TEST_KEY") as c:
        decisions = await c.evaluate_batch(STATES, QUESTIONS, concurrency=4)
    return [d.to_wire() for d in decisions]


def test_record_then_replay_round_trip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The issue's acceptance, with the caller's own key forwarded and never recorded."""
    monkeypatch.setenv("PROXY_TEST_KEY", KEY)
    monkeypatch.setenv("UPSTREAM_KEY", KEY)
    record = tmp_path / "rec"

    async def go() -> tuple[list[Any], list[Any], list[Any], dict[str, Any], dict[str, Any]]:
        async with Server(ServeOptions(synthetic=True, require_key_env="UPSTREAM_KEY")) as a:
            direct = await batch(a.url)
            async with Server(ServeOptions(proxy=a.url, record=record)) as b:
                proxied = await batch(b.url)
                b_stats = dict(b.stats)
        async with Server(ServeOptions(replay=record)) as c:
            replayed = await batch(c.url)
            c_stats = {f"{r} {o}": n for (r, o), n in c.stats.items()}
        return direct, proxied, replayed, {f"{r} {o}": n for (r, o), n in b_stats.items()}, c_stats

    direct, proxied, replayed, b_stats, c_stats = asyncio.run(go())
    assert proxied == direct  # the proxy hands the upstream's answer back unchanged
    assert replayed == direct  # identical decisions ...
    assert c_stats == {"POST /v1/systemone answered": len(STATES)}  # ... and 0 misses
    assert b_stats == {"POST /v1/systemone proxied:200 recorded": len(STATES)}
    files = sorted(record.glob("*.json"))
    assert len(files) == len(STATES)
    for f in files:
        text = f.read_text(encoding="utf-8")
        assert KEY not in text and "Bearer" not in text and "uthorization" not in text
        rec = json.loads(text)
        assert rec["endpoint"] == f"{rec['endpoint'].rsplit('/v1/', 1)[0]}/v1/systemone"
        assert rec["model"] == "jev-latest" and rec["served_model"] == "jev-1.13.0"


def test_the_upstreams_errors_come_back_unchanged_and_are_not_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("UPSTREAM_KEY", KEY)
    monkeypatch.setenv("PROXY_TEST_KEY", "sk-wrong")
    record = tmp_path / "rec"

    async def go() -> tuple[RunStopped, httpx.Response]:
        upstream = ServeOptions(synthetic=True, require_key_env="UPSTREAM_KEY")
        async with Server(upstream) as a, Server(ServeOptions(proxy=a.url, record=record)) as b:
            # Every request failing 401 stops the batch (issue 19's fail fast), naming the 401.
            with pytest.raises(RunStopped) as info:
                await batch(b.url)
            bad = await post(
                b.url,
                {"model": "jev-latest", "state": 5, "questions": {}},
                headers={"Authorization": f"Bearer {KEY}"},
            )
            return info.value, bad

    error, bad = asyncio.run(go())
    assert "(HTTP 401)" in error.message and "authentication failed" in error.message
    assert bad.status_code == 422 and bad.json()["detail"][0]["loc"][:2] == ["body", "state"]
    assert not record.exists() or not list(record.glob("*.json"))


def test_an_unreachable_upstream_is_a_502_naming_it() -> None:
    async def go() -> httpx.Response:
        async with Server(ServeOptions(synthetic=True)) as gone:
            url = gone.url  # free again once it stops
        async with Server(ServeOptions(proxy=url)) as b:
            return await post(b.url, {"model": "jev-latest", "state": "x", "questions": QUESTIONS})

    r = asyncio.run(go())
    assert r.status_code == 502 and "proxy: no answer from http://127.0.0.1:" in r.json()["detail"]
    assert r.headers["x-typesafe-request-id"]


def test_an_unreachable_upstream_with_a_key_in_its_url_names_it_redacted() -> None:
    """Issue 17 item 1: the 502 that names the upstream names it without its credentials."""
    key = "sk-gone-4c1d9e7a2b"

    async def go() -> httpx.Response:
        async with Server(ServeOptions(synthetic=True)) as gone:
            host = gone.url.removeprefix("http://")
        async with Server(ServeOptions(proxy=f"http://u:{key}@{host}/v1?k={key}")) as b:
            return await post(b.url, {"model": "jev-latest", "state": "x", "questions": QUESTIONS})

    r = asyncio.run(go())
    detail = r.json()["detail"]
    assert r.status_code == 502
    assert detail.startswith("proxy: no answer from http://«redacted»@127.0.0.1:")
    assert "/v1/systemone?k=«redacted»" in detail
    assert all(key[i : i + 8] not in r.text for i in range(len(key) - 7))


def test_an_image_exchange_is_recorded_by_image_hash_and_replays(tmp_path: Path) -> None:
    """Wire reference: 'key on the image bytes (e.g. their sha256)'; the SDK's placeholder is
    random per run, so the replay of another placeholder for the same bytes must still hit."""
    image = png(24, 24)
    record = tmp_path / "rec"

    def request(placeholder: str) -> bytes:
        body = {
            "model": "jev-latest",
            "state": f"What is in {placeholder}?",
            "questions": QUESTIONS,
            "assets": {placeholder: {"type": "image", "part": "asset-0"}},
        }
        return multipart(body, [image])

    ctype = {"Content-Type": "multipart/form-data; boundary=b0undary"}

    async def go() -> tuple[httpx.Response, httpx.Response]:
        async with (
            Server(ServeOptions(synthetic=True)) as a,
            Server(ServeOptions(proxy=a.url, record=record)) as b,
        ):
            first = await post(b.url, request("<image:" + "a" * 32 + ">"), headers=ctype)
        async with Server(ServeOptions(replay=record)) as c:
            again = await post(c.url, request("<image:" + "b" * 32 + ">"), headers=ctype)
        return first, again

    first, again = asyncio.run(go())
    assert first.status_code == 200 and again.status_code == 200, again.text
    assert again.json() == first.json()
    (rec,) = [json.loads(f.read_text(encoding="utf-8")) for f in record.glob("*.json")]
    (asset,) = rec["assets"].values()
    import hashlib

    assert asset == {"sha256": hashlib.sha256(image).hexdigest(), "type": "image"}


def test_models_are_forwarded_with_the_callers_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UPSTREAM_KEY", KEY)

    async def go() -> list[httpx.Response]:
        upstream = ServeOptions(synthetic=True, require_key_env="UPSTREAM_KEY")
        auth = {"Authorization": f"Bearer {KEY}"}
        async with (
            Server(upstream) as a,
            Server(ServeOptions(proxy=a.url)) as b,
            httpx.AsyncClient(trust_env=False) as c,
        ):
            return [await c.get(f"{b.url}/v1/models", headers=auth), await c.get(f"{b.url}/models")]

    ok, anonymous = asyncio.run(go())
    assert ok.status_code == 200 and ok.json()["models"][0]["name"] == "jev-latest"
    assert anonymous.status_code == 401  # the proxy adds no key of its own


URL_KEY = "sk-url-9b7e41d2c06f5a38"


def slices(secret: str, width: int = 8) -> set[str]:
    """Every ``width``-character slice of ``secret``: what the hostile suite greps for."""
    return {secret[i : i + width] for i in range(len(secret) - width + 1)}


@pytest.mark.parametrize(
    ("spelled", "upstream_sees"),
    [
        pytest.param("user:{key}@{host}/v1", "basic", id="userinfo"),
        pytest.param("user:{pct}@{host}/v1", "basic", id="userinfo-percent-encoded"),
        pytest.param("{host}/v1?api_key={key}&x=1", "query", id="query-string"),
    ],
)
def test_a_key_in_the_proxy_url_is_never_printed_logged_or_recorded(
    tmp_path: Path, spelled: str, upstream_sees: str
) -> None:
    """Issue 17 item 1: "`toolnexus serve --proxy http://user:KEY@… --record DIR` prints the key
    in its start-up banner and writes it into every recording": the banner, the access log and
    every recording are grepped for any 8-character slice of the key (as sent and
    percent-encoded); the upstream still gets the credentials; the caller's own Authorization
    no longer breaks the request (aiohttp refused to combine it with URL credentials: a 500)."""
    import subprocess
    import sys

    from serving import ThreadedServer

    pct = URL_KEY.replace("-", "%2D")
    record = tmp_path / "rec"
    with ThreadedServer(ServeOptions(synthetic=True)) as upstream:
        host = upstream.url.removeprefix("http://")
        seen: list[str] = []
        upstream.server.on_request = lambda _raw, headers: seen.append(
            headers.get("authorization", "")
        )
        url = "http://" + spelled.format(key=URL_KEY, pct=pct, host=host)
        cmd = [sys.executable, "-m", "toolnexus", "serve", "--port", "0"]
        with subprocess.Popen(
            [*cmd, "--proxy", url, "--record", str(record)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        ) as proc:
            assert proc.stdout is not None
            base = proc.stdout.readline().strip()
            statuses = []
            for headers in ({}, {"Authorization": "Bearer caller-key"}):
                body = {"model": "jev-latest", "state": "hi", "questions": QUESTIONS}
                r = httpx.post(f"{base}/v1/systemone", json=body, headers=headers, timeout=10)
                statuses.append(r.status_code)
            proc.terminate()
            out, err = proc.communicate(timeout=15)
    assert statuses == [200, 200], err
    if upstream_sees == "basic":  # percent-decoded, in place of the caller's bearer key
        import base64

        basic = "Basic " + base64.b64encode(f"user:{URL_KEY}".encode()).decode()
        assert seen == [basic, basic]
    outputs = {"stdout": base + out, "stderr": err}
    files = sorted(record.glob("*.json"))
    assert len(files) == 1  # the two requests are one exchange; the second overwrote nothing
    outputs.update({f.name: f.read_text(encoding="utf-8") for f in files})
    assert "«redacted»" in err and "«redacted»" in outputs[files[0].name]
    for name, text in outputs.items():
        for piece in slices(URL_KEY) | slices(pct):
            assert piece not in text, f"{name} holds {piece!r} of the key"
