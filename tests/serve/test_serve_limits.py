"""``toolnexus serve --rate-limit N/min --token-limit N/s`` (issue 19 item 5): "`toolnexus serve`
enforces an account's limits like the live API ...: `--rate-limit N/min` per key (a token bucket
whose burst is at most one second of the rate; over it a 429 with `Retry-After` and
`retry-after-ms`) and `--token-limit N/s`; the synthetic model's `usage.input_tokens` follows a
documented function of the request (a fixed per-request overhead plus its size) so token effects
are measurable; `/_stats` counts 429s sent." The buckets run on an injected clock: no sleeps."""

from __future__ import annotations

import asyncio
import io
import json
from typing import Any

import httpx
import pytest

from clirun import error_line, run_cli
from serving import post
from toolnexus import ConfigError
from toolnexus.serve import Limits, ServeOptions, Server, input_tokens, key_label

KEY_A = "sk-limits-a-3e91f07c55d2"
KEY_B = "sk-limits-b-82c4d6e0a1f9"
QUESTIONS: dict[str, Any] = {
    "refund": {"type": "noul", "instructions": "Is a refund requested?"},
    "team": {"type": "choice", "instructions": "Which team?", "criteria": {"a": "A", "b": "B"}},
}
BODY = {"model": "jev-latest", "state": "charged twice for INV-7", "questions": QUESTIONS}


class Clock:
    """Seconds that move only when a test says so."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_burst_is_one_second_of_the_rate_then_429_with_both_headers() -> None:
    clock = Clock()
    gate = Limits(3000 / 60, None, clock)
    assert [gate.admit(KEY_A) for _ in range(50)] == [None] * 50  # 3000/min: 50 in one second
    refused = gate.admit(KEY_A)
    assert refused is not None and refused.limit == "requests"
    assert refused.headers == {"Retry-After": "1", "retry-after-ms": "20"}
    assert refused.body == {"detail": "Rate limit exceeded: 3000 requests per minute."}


def test_the_bucket_refills_at_the_rate_and_never_past_one_second() -> None:
    clock = Clock()
    gate = Limits(3000 / 60, None, clock)
    for _ in range(50):
        gate.admit(KEY_A)
    clock.now += 0.02  # one request's worth
    assert gate.admit(KEY_A) is None and gate.admit(KEY_A) is not None
    clock.now += 3600  # an idle hour refills one second's burst, no more
    admitted = [gate.admit(KEY_A) is None for _ in range(60)]
    assert admitted == [True] * 50 + [False] * 10


def test_a_slow_rate_still_admits_one_request_and_asks_for_the_real_wait() -> None:
    gate = Limits(10 / 60, None, Clock())
    assert gate.admit(KEY_A) is None
    refused = gate.admit(KEY_A)
    assert refused is not None and refused.headers == {"Retry-After": "6", "retry-after-ms": "6000"}


def test_the_token_limit_charges_the_requests_tokens_and_a_huge_request_is_slowed_not_barred() -> (
    None
):
    clock = Clock()
    gate = Limits(None, 1000, clock)
    assert gate.admit(KEY_A, 400) is None and gate.admit(KEY_A, 400) is None
    refused = gate.admit(KEY_A, 400)  # 200 left: 0.2 s until 400
    assert refused is not None and refused.limit == "tokens"
    assert refused.headers == {"Retry-After": "1", "retry-after-ms": "200"}
    assert refused.body == {"detail": "Rate limit exceeded: 1000 tokens per second."}
    clock.now += 1
    assert gate.admit(KEY_A, 5000) is None  # over the whole bucket: admitted when full ...
    assert gate.admit(KEY_A, 1) is not None  # ... and the debt is paid off before the next
    clock.now += 4.001
    assert gate.admit(KEY_A, 1) is None


def test_input_tokens_is_the_documented_function_of_the_request() -> None:
    """README and docstring: 96 + (S + sum(K + Q + 4)) // 4 + 258 per image."""
    canon = json.dumps(BODY["state"], separators=(",", ":"), ensure_ascii=False).encode()
    size = len(canon) + sum(
        len(k) + 4 + len(json.dumps(q, sort_keys=True, separators=(",", ":")).encode())
        for k, q in QUESTIONS.items()
    )
    assert input_tokens(canon, QUESTIONS) == 96 + size // 4
    assert input_tokens(canon, QUESTIONS, images=2) == 96 + size // 4 + 2 * 258


async def _as(url: str, key: str) -> httpx.Response:
    return await post(url, BODY, headers={"Authorization": f"Bearer {key}"})


def _limited_server(clock: Clock, log: io.StringIO, **limits: str) -> Server:
    return Server(ServeOptions(synthetic=True, access_log=log, **limits), clock=clock)


def test_a_server_refuses_per_key_refills_and_counts_it_in_stats() -> None:
    """120/min is a burst of 2 per key; the third request of key A is a 429 shaped like the
    live API's, key B is not slowed by A, and half a second later A is admitted again.
    /_stats: the 429s sent, by limit, by status and per key (named by key_label)."""
    clock = Clock()
    log = io.StringIO()

    async def go() -> tuple[list[httpx.Response], dict[str, Any]]:
        async with _limited_server(clock, log, rate_limit="120/min") as server:
            got = [await _as(server.url, KEY_A) for _ in range(3)]
            got.append(await _as(server.url, KEY_B))
            clock.now += 0.5
            got.append(await _as(server.url, KEY_A))
            async with httpx.AsyncClient(trust_env=False) as c:
                stats = (await c.get(server.url + "/_stats")).json()
        return got, stats

    got, stats = asyncio.run(go())
    assert [r.status_code for r in got] == [200, 200, 429, 200, 200]
    refused = got[2]
    assert refused.headers["retry-after"] == "1" and refused.headers["retry-after-ms"] == "500"
    assert refused.json() == {"detail": "Rate limit exceeded: 120 requests per minute."}
    assert refused.headers["x-typesafe-request-id"].startswith("req_serve_")
    assert stats["limited"] == {"requests": 1, "tokens": 0}
    assert stats["statuses"] == {"200": 4, "429": 1}
    assert stats["keys"] == {
        key_label(KEY_A): {"requests": 4, "limited": 1},
        key_label(KEY_B): {"requests": 1, "limited": 0},
    }
    assert stats["routes"]["POST /v1/systemone"] == {"answered": 4, "limited:requests": 1}
    text = log.getvalue() + json.dumps(stats)
    for key in (KEY_A, KEY_B):  # "never logged"
        assert all(key[i : i + 8] not in text for i in range(len(key) - 7))


def test_a_token_limit_refuses_by_the_requests_own_usage() -> None:
    """Two requests' usage.input_tokens fit a --token-limit of exactly twice that; the third is
    a 429 naming tokens per second, counted under limited.tokens."""
    clock = Clock()

    async def go() -> tuple[int, list[httpx.Response], dict[str, Any]]:
        async with Server(ServeOptions(synthetic=True)) as probe:
            tokens = (await _as(probe.url, KEY_A)).json()["usage"]["input_tokens"]
        limit = f"{2 * tokens}/s"
        async with _limited_server(clock, io.StringIO(), token_limit=limit) as server:
            got = [await _as(server.url, KEY_A) for _ in range(3)]
            async with httpx.AsyncClient(trust_env=False) as c:
                stats = (await c.get(server.url + "/_stats")).json()
        return tokens, got, stats

    tokens, got, stats = asyncio.run(go())
    assert [r.status_code for r in got] == [200, 200, 429]
    assert all(r.json()["usage"]["input_tokens"] == tokens for r in got[:2])
    assert got[2].json() == {"detail": f"Rate limit exceeded: {2 * tokens} tokens per second."}
    assert int(got[2].headers["retry-after-ms"]) == 500  # half the bucket, at twice-tokens/s
    assert stats["limited"] == {"requests": 0, "tokens": 1}


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        pytest.param(
            "rate_limit", "10/hour", "--rate-limit '10/hour' is not a rate above 0", id="hour"
        ),
        pytest.param("rate_limit", "0/min", "--rate-limit '0/min' is not a rate", id="zero"),
        pytest.param("token_limit", "lots", "--token-limit 'lots' is not a rate", id="words"),
    ],
)
def test_a_limit_that_is_not_a_rate_is_refused_before_binding(
    field: str, value: str, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        Server(ServeOptions(synthetic=True, **{field: value}))


def test_the_cli_refuses_a_bad_rate_in_one_line() -> None:
    ran = run_cli("serve", "--port", "0", "--synthetic", "--rate-limit", "5/fortnight")
    assert ran.code == 2 and "such as 1200/min" in error_line(ran.stderr)
