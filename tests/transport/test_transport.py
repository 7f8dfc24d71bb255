"""transport/ (the retry loop and redaction) with httpx.MockTransport: retries (seed 004 +
SPEC-8B Appendix A), ${NAME} expansion, error bodies, request ids, 401/403 never shown. Nothing
sleeps: the transport's ``sleep`` is replaced by a recorder, so a Retry-After of 2 s costs
nothing."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from toolnexus.config import (
    ErrorInfo,
    RetryPolicy,
    Timeout,
    Verdict,
)
from toolnexus.core.errors import (
    ClassifierError,
    ConfigError,
    HookError,
    HTTPStatusError,
    TransportError,
)
from toolnexus.transport import (
    RETRY_COUNT_HEADER,
    SystemOneTransport,
    redact,
    server_message,
)

BASE = "https://api.example.test/v1"
ENDPOINT = BASE + "/systemone"
OK_BODY = b'{"model":"jev-1.13.0","answers":{}}'

Handler = Callable[[httpx.Request], httpx.Response]


class Recorder:
    """A sleep that records the delays instead of waiting."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def scripted(*responses: httpx.Response | Exception) -> tuple[Handler, list[httpx.Request]]:
    """A handler answering with ``responses`` in order (the last one repeats)."""
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        r = responses[min(len(seen), len(responses)) - 1]
        if isinstance(r, Exception):
            raise r
        return r

    return handler, seen


#: The seed-named options a test may give ``make``: they become one RetryPolicy, as
#: ``ClassifierOptions`` builds it.
_RETRY_OPTIONS = ("retries", "retry_base_ms", "retryable_statuses", "on_error")


def make(handler: Handler, **kw: Any) -> tuple[SystemOneTransport, Recorder]:
    sleep = Recorder()
    retry: dict[str, Any] = {"retry_base_ms": 10}
    retry.update({k: kw.pop(k) for k in _RETRY_OPTIONS if k in kw})
    opts: dict[str, Any] = {"base_url": BASE, "api_key_env": "TYPESAFE_API_KEY"}
    opts.update(kw)
    transport = SystemOneTransport(
        transport=httpx.MockTransport(handler),
        sleep=sleep,
        retry=RetryPolicy.of(**retry),
        **opts,
    )
    return transport, sleep


def post(t: SystemOneTransport, body: bytes = b"{}") -> Any:
    async def go() -> Any:
        try:
            return await t.post("systemone", body)
        finally:
            await t.aclose()

    return asyncio.run(go())


def status(code: int, body: Any = None, **headers: str) -> httpx.Response:
    raw = body if isinstance(body, bytes) else json.dumps(body or {"detail": "x"}).encode()
    return httpx.Response(code, content=raw, headers=headers)


# --- which statuses are retried ----------------------------------------------------------


@pytest.mark.parametrize(
    "code",
    [pytest.param(c, id=str(c)) for c in (408, 429, 500, 502, 503, 504, 529)],
)
def test_each_default_retryable_status_is_retried_then_succeeds(code: int) -> None:
    """seed 004: 'retries on 408/429/500/502/503/504/529 + network'."""
    handler, seen = scripted(status(code), httpx.Response(200, content=OK_BODY))
    t, sleep = make(handler)
    reply = post(t)
    assert reply.status == 200 and len(seen) == 2
    assert sleep.delays == [0.01]


@pytest.mark.parametrize(
    "code",
    [pytest.param(c, id=str(c)) for c in (400, 401, 404, 422, 501, 505, 520)],
)
def test_other_statuses_are_terminal_after_one_attempt(code: int) -> None:
    """Appendix A: 'That set is exhaustive, not shorthand for 5xx: 501, 505, 520-527 terminal'."""
    handler, seen = scripted(status(code))
    t, sleep = make(handler)
    with pytest.raises(HTTPStatusError) as info:
        post(t)
    assert info.value.status == code and len(seen) == 1 and sleep.delays == []


def test_budget_is_retries_plus_one_attempts_and_backoff_doubles() -> None:
    """'the delay is base * 2^attempt with no jitter'; default budget 2 => 3 attempts."""
    handler, seen = scripted(status(503))
    t, sleep = make(handler, retries=2, retry_base_ms=10)
    with pytest.raises(HTTPStatusError) as info:
        post(t)
    assert len(seen) == 3 and info.value.attempts == 3
    assert sleep.delays == [0.01, 0.02]


def test_retries_zero_means_exactly_one_attempt() -> None:
    """Appendix A: '"No retries" (exactly one attempt) must be expressible'."""
    handler, seen = scripted(status(503), httpx.Response(200, content=OK_BODY))
    t, sleep = make(handler, retries=0)
    with pytest.raises(HTTPStatusError):
        post(t)
    assert len(seen) == 1 and sleep.delays == []


def test_retries_are_labelled_with_the_retry_count_header() -> None:
    handler, seen = scripted(status(500), status(500), httpx.Response(200, content=OK_BODY))
    t, _ = make(handler)
    post(t)
    assert [r.headers.get(RETRY_COUNT_HEADER) for r in seen] == [None, "1", "2"]


def test_network_errors_are_retried() -> None:
    handler, seen = scripted(
        httpx.ConnectError("refused"),
        httpx.ReadError("reset"),
        httpx.Response(200, content=OK_BODY),
    )
    t, sleep = make(handler)
    assert post(t).status == 200 and len(seen) == 3 and sleep.delays == [0.01, 0.02]


# --- Retry-After ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        pytest.param("0", 0.0, id="zero-means-now"),
        pytest.param("2", 2.0, id="two-seconds"),
        pytest.param("2147483647", 2147483647.0, id="max"),
        pytest.param("2147483648", 0.01, id="out-of-range"),
        pytest.param("Wed, 21 Oct 2015 07:28:00 GMT", 0.01, id="http-date"),
        pytest.param("1.5", 0.01, id="fractional"),
        pytest.param("-1", 0.01, id="signed"),
        pytest.param("", 0.01, id="empty"),
        pytest.param("soon", 0.01, id="garbage"),
    ],
)
def test_retry_after_delay_seconds_wins_every_other_form_falls_back(
    header: str, expected: float
) -> None:
    """Appendix A: 'Retry-After is honored only in its delay-seconds form ... including 0. Every
    other value ... falls back to backoff'."""
    handler, _ = scripted(
        status(429, **{"Retry-After": header}), httpx.Response(200, content=OK_BODY)
    )
    t, sleep = make(handler, retry_base_ms=10)
    post(t)
    assert sleep.delays == [expected]


def test_retry_after_non_ascii_digits_fall_back() -> None:
    """Appendix A: 'a run of ASCII digits' (str.isdigit would accept ARABIC-INDIC ONE)."""
    assert RetryPolicy.of(retry_base_ms=10).delay(0, "\u0661") == 0.01


@pytest.mark.parametrize(
    ("base", "attempt", "expected"),
    [
        pytest.param(None, 0, 0.5, id="absent-is-500ms"),
        pytest.param(0, 1, 1.0, id="zero-is-500ms"),
        pytest.param(100, 3, 0.8, id="base-times-2-pow-attempt"),
    ],
)
def test_backoff_base(base: int | None, attempt: int, expected: float) -> None:
    """seed 004: 'absent, zero or negative => 500'; the value is given in ms and held in s."""
    assert RetryPolicy.of(retry_base_ms=base).delay(attempt) == expected


def test_a_negative_backoff_base_is_refused_where_it_is_given() -> None:
    """A negative base is a typo: refused once, at the edge, rather than silently 500 ms."""
    with pytest.raises(ConfigError, match="retry_base_ms must be a whole number"):
        RetryPolicy.of(retry_base_ms=-3)


# --- on_error and retryable_statuses ---------------------------------------------------------


def test_on_error_fail_overrides_a_retryable_status() -> None:
    infos: list[ErrorInfo] = []

    def on_error(info: ErrorInfo) -> Verdict:
        infos.append(info)
        return "fail"

    handler, seen = scripted(status(503, **{"x-typesafe-request-id": "req_1", "Retry-After": "7"}))
    t, _ = make(handler, on_error=on_error)
    with pytest.raises(HTTPStatusError):
        post(t)
    assert len(seen) == 1
    assert infos == [
        ErrorInfo(
            attempt=0,
            kind="http status",
            retryable=True,
            wait=7.0,
            status=503,
            retry_after="7",
            request_id="req_1",
        )
    ]


def test_on_error_retry_overrides_a_terminal_status_but_stays_bounded() -> None:
    """Appendix A: 'A "retry" is always bounded by retries'."""
    infos: list[ErrorInfo] = []

    def on_error(info: ErrorInfo) -> Verdict:
        infos.append(info)
        return "retry"

    handler, seen = scripted(status(400))
    t, sleep = make(handler, on_error=on_error, retries=2)
    with pytest.raises(HTTPStatusError):
        post(t)
    assert len(seen) == 3
    assert [(i.attempt, i.retryable) for i in infos] == [(0, False), (1, False), (2, False)]
    # ``wait`` is what the loop then slept: the backoff, doubling.
    assert [i.wait for i in infos[:2]] == sleep.delays == [0.01, 0.02]


def test_on_error_receives_the_transport_failure_kind() -> None:
    """issue 8: 'on_error receives a frozen, typed ErrorInfo dataclass (status, attempt,
    retry_after, request_id, exception kind)'."""
    infos: list[ErrorInfo] = []

    def on_error(info: ErrorInfo) -> Verdict:
        infos.append(info)
        return "fail"

    handler, _ = scripted(httpx.ReadTimeout("slow"))
    t, _ = make(handler, on_error=on_error)
    with pytest.raises(TransportError):
        post(t)
    assert infos == [ErrorInfo(attempt=0, kind="timeout", retryable=True, wait=0.01)]
    assert infos[0].status is None and infos[0].request_id is None


def test_error_info_is_frozen() -> None:
    info = ErrorInfo(attempt=0, kind="timeout", retryable=True, wait=0.5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        info.attempt = 1  # type: ignore[misc]


def test_on_error_that_raises_is_a_hook_error_naming_only_the_type() -> None:
    def on_error(info: ErrorInfo) -> Verdict:
        raise RuntimeError("Authorization: Bearer sk-hook")

    handler, _ = scripted(status(503))
    t, _ = make(handler, on_error=on_error)
    with pytest.raises(HookError) as info:
        post(t)
    assert str(info.value) == "classifier: on_error raised RuntimeError"


def test_on_error_with_a_bad_verdict_is_an_error() -> None:
    handler, _ = scripted(status(503))
    t, _ = make(handler, on_error=lambda info: "maybe")
    with pytest.raises(ClassifierError, match="on_error must return 'retry' or 'fail'"):
        post(t)


def test_retryable_statuses_widens_the_set() -> None:
    """seed 004: 'Example: a Cloudflare-fronted origin that answers 520-527'."""
    handler, seen = scripted(status(520), httpx.Response(200, content=OK_BODY))
    t, _ = make(handler, retryable_statuses=[520])
    assert post(t).status == 200 and len(seen) == 2


def test_retryable_statuses_cannot_remove_429() -> None:
    """seed 004: 'It can only widen: a host cannot remove 429'."""
    handler, seen = scripted(status(429), httpx.Response(200, content=OK_BODY))
    t, _ = make(handler, retryable_statuses=[520])
    assert post(t).status == 200 and len(seen) == 2


# --- ${NAME} expansion, credentials ---------------------------------------------------------


def test_headers_and_url_expand_at_call_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """seed 004: 'values expand ${ENV_VAR} from the environment AT CALL TIME'."""
    handler, seen = scripted(httpx.Response(200, content=OK_BODY))
    t, _ = make(
        handler,
        base_url="https://gw.example.test/v1/${ACCOUNT}",
        headers={"X-Gateway": "token ${GW_TOKEN}", "X-Plain": "p"},
    )
    monkeypatch.setenv("ACCOUNT", "acct-7")  # set AFTER construction
    monkeypatch.setenv("GW_TOKEN", "gw-secret")
    post(t)
    assert str(seen[0].url) == "https://gw.example.test/v1/acct-7/systemone"
    assert seen[0].headers["x-gateway"] == "token gw-secret"
    assert seen[0].headers["x-plain"] == "p"


def test_errors_show_the_url_unexpanded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCOUNT", "acct-7")
    handler, _ = scripted(status(400, {"detail": "bad"}))
    t, _ = make(handler, base_url="https://gw.example.test/v1/${ACCOUNT}")
    with pytest.raises(HTTPStatusError) as info:
        post(t)
    assert "https://gw.example.test/v1/${ACCOUNT}/systemone" in str(info.value)
    assert "acct-7" not in str(info.value)


def test_an_unset_reference_names_the_variable() -> None:
    handler, seen = scripted(httpx.Response(200, content=OK_BODY))
    t, _ = make(handler, headers={"X-Gateway": "${NOT_SET_ANYWHERE}"})
    with pytest.raises(ClassifierError, match=r"\$\{NOT_SET_ANYWHERE\}, which is not set"):
        post(t)
    assert seen == []


@pytest.mark.parametrize(
    ("value", "sent"),
    [
        pytest.param("sk-live", "Bearer sk-live", id="set"),
        pytest.param("", None, id="empty-sends-none"),
        pytest.param(None, None, id="unset-sends-none"),
    ],
)
def test_authorization_only_when_the_key_variable_is_set_and_non_empty(
    monkeypatch: pytest.MonkeyPatch, value: str | None, sent: str | None
) -> None:
    handler, seen = scripted(httpx.Response(200, content=OK_BODY))
    t, _ = make(handler)
    if value is not None:
        monkeypatch.setenv("TYPESAFE_API_KEY", value)  # read at call time, after construction
    post(t)
    assert seen[0].headers.get("authorization") == sent
    assert seen[0].headers["content-type"] == "application/json"


def test_the_body_is_sent_byte_for_byte() -> None:
    handler, seen = scripted(httpx.Response(200, content=OK_BODY))
    t, _ = make(handler)
    post(t, b'{"b":1,"a":2}')
    assert seen[0].content == b'{"b":1,"a":2}' and seen[0].method == "POST"


# --- error bodies -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "message"),
    [
        pytest.param(
            {"detail": "Too many choices. Must have at most 255 choices."},
            "Too many choices. Must have at most 255 choices.",
            id="1-detail-string",
        ),
        pytest.param(
            {"detail": {"error_type": "api_usage_error", "message": "Unknown model: x"}},
            "Unknown model: x",
            id="2-detail-object-message",
        ),
        pytest.param(
            {"detail": {"error_type": "max_tokens_exceeded"}},
            "max_tokens_exceeded",
            id="3-detail-object-no-message",
        ),
        pytest.param(
            {
                "detail": [
                    {
                        "type": "missing",
                        "loc": ["body", "state"],
                        "msg": "Field required",
                        "input": {"secret": "input"},
                    }
                ]
            },
            "body.state: Field required",
            id="4-detail-validation-list",
        ),
        pytest.param(
            {"error": {"type": "insufficient_funds", "message": "Add credits to continue"}},
            "Add credits to continue",
            id="5-gateway-error-object",
        ),
        pytest.param(b"upstream connect error", "upstream connect error", id="plain-text"),
    ],
)
def test_each_error_body_shape_gives_the_server_message(body: Any, message: str) -> None:
    handler, _ = scripted(status(400, body, **{"x-typesafe-request-id": "req_123"}))
    t, _ = make(handler)
    with pytest.raises(HTTPStatusError) as info:
        post(t)
    assert (
        str(info.value) == f"classifier: POST {ENDPOINT}: HTTP 400: {message} (request id req_123)"
    )
    assert info.value.request_id == "req_123"


def test_no_request_id_no_suffix_and_empty_body_uses_the_reason_phrase() -> None:
    handler, _ = scripted(httpx.Response(502, content=b""))
    t, _ = make(handler, retries=0)
    with pytest.raises(HTTPStatusError) as info:
        post(t)
    assert str(info.value) == f"classifier: POST {ENDPOINT}: HTTP 502: Bad Gateway"


def test_the_message_excerpt_is_capped_at_200_characters_but_body_is_whole() -> None:
    long = "x" * 500
    handler, _ = scripted(status(400, {"detail": long}))
    t, _ = make(handler)
    with pytest.raises(HTTPStatusError) as info:
        post(t)
    excerpt = str(info.value).split("HTTP 400: ", 1)[1]
    assert len(excerpt) == 200 and excerpt.endswith("…")
    assert long in info.value.body


def test_account_identifiers_are_redacted_in_message_and_body() -> None:
    """Appendix A: 'user_id, account_id, org_id and organization are replaced with «redacted»'."""
    body = {
        "error": {"message": "quota for org_id", "user_id": "u-42", "org_id": "o-9"},
        "organization": {"name": "Acme"},
        "account_id": 77,
    }
    handler, _ = scripted(status(400, body))
    t, _ = make(handler)
    with pytest.raises(HTTPStatusError) as info:
        post(t)
    for leaked in ("u-42", "o-9", "Acme", "77"):
        assert leaked not in info.value.body and leaked not in str(info.value)
    assert info.value.body.count("«redacted»") == 4


def test_redact_also_handles_non_json_bodies() -> None:
    text = redact("denied: user_id=u-42, account_id: 'a-1' org_id=\"o-2\" ok")
    assert "u-42" not in text and "a-1" not in text and "o-2" not in text
    assert text.count("«redacted»") == 3


@pytest.mark.parametrize("code", [pytest.param(401, id="401"), pytest.param(403, id="403")])
def test_auth_failure_body_is_never_shown(monkeypatch: pytest.MonkeyPatch, code: int) -> None:
    """Appendix A: 'An authentication failure names the status and the endpoint and nothing
    else'; the message says which variable to check, by NAME."""
    monkeypatch.setenv("TYPESAFE_API_KEY", "sk-echoed-back")
    body = {"detail": "invalid key sk-echoed-back for user_id u-1"}
    handler, _ = scripted(status(code, body, **{"x-typesafe-request-id": "req_9"}))
    t, _ = make(handler)
    with pytest.raises(HTTPStatusError) as info:
        post(t)
    msg = str(info.value)
    # Issue 33: a 403 with a key sent is "forbidden for this key", not "key rejected".
    cause = "authentication failed" if code == 401 else "forbidden"
    assert msg.startswith(f"classifier: POST {ENDPOINT}: HTTP {code}: {cause}")
    assert "TYPESAFE_API_KEY" in msg and "(request id req_9)" in msg
    assert "sk-echoed-back" not in msg and "invalid key" not in msg and info.value.body == ""


def test_a_secret_echoed_in_a_non_auth_body_is_scrubbed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TYPESAFE_API_KEY", "sk-echoed-back")
    monkeypatch.setenv("GW_TOKEN", "gw-token-value")
    body = {"detail": "upstream rejected Bearer sk-echoed-back and gw-token-value"}
    handler, _ = scripted(status(500, body))
    t, _ = make(handler, retries=0, headers={"X-Gw": "${GW_TOKEN}"})
    with pytest.raises(HTTPStatusError) as info:
        post(t)
    for secret in ("sk-echoed-back", "gw-token-value"):
        assert secret not in str(info.value) and secret not in info.value.body


def test_server_message_unknown_shape_falls_back_to_text() -> None:
    assert server_message('{"weird": true}') == '{"weird": true}'


# --- transport failures -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        pytest.param(httpx.ReadTimeout("slow"), "timeout", id="timeout"),
        pytest.param(
            httpx.ConnectError("x", request=None).with_traceback(None),
            "network error",
            id="connect",
        ),
        pytest.param(
            httpx.RemoteProtocolError("Server disconnected"), "connection reset", id="disconnected"
        ),
    ],
)
def test_transport_failures_name_their_kind(exc: Exception, kind: str) -> None:
    handler, _ = scripted(exc)
    t, _ = make(handler, retries=0)
    with pytest.raises(TransportError) as info:
        post(t)
    assert info.value.kind == kind and info.value.endpoint == ENDPOINT
    assert str(info.value).startswith(f"classifier: POST {ENDPOINT}: ")


def test_refused_is_read_from_the_cause_chain() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        try:
            raise ConnectionRefusedError(111, "Connection refused")
        except ConnectionRefusedError as e:
            raise httpx.ConnectError("All connection attempts failed") from e

    t, _ = make(handler, retries=0)
    with pytest.raises(TransportError) as info:
        post(t)
    assert info.value.kind == "connection refused"


def test_timeout_bounds_one_request() -> None:
    """seed 004: ':timeout-ms per REQUEST'. A handler that never answers in time."""

    async def handler(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(5)
        return httpx.Response(200, content=OK_BODY)

    t = SystemOneTransport(
        base_url=BASE,
        api_key_env="K",
        timeout=Timeout(0.05),
        retry=RetryPolicy(retries=0),
        transport=httpx.MockTransport(handler),
    )
    with pytest.raises(TransportError) as info:
        post(t)
    assert info.value.kind == "timeout" and "no answer within 0.05 s" in str(info.value)


def test_a_host_http_client_is_used_and_left_open() -> None:
    handler, seen = scripted(httpx.Response(200, content=OK_BODY))

    async def go() -> bool:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            t = SystemOneTransport(base_url=BASE, api_key_env="K", http_client=client)
            await t.post("systemone", b"{}")
            await t.aclose()
            return client.is_closed

    assert asyncio.run(go()) is False and len(seen) == 1


def test_repr_carries_no_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TYPESAFE_API_KEY", "sk-repr-secret")
    handler, _ = scripted(httpx.Response(200, content=OK_BODY))
    t, _ = make(handler, headers={"X": "${TYPESAFE_API_KEY}"})
    assert "sk-repr-secret" not in repr(t)


@pytest.mark.parametrize(
    ("url", "secrets"),
    [
        pytest.param("http://127.0.0.1:8080/v1", [], id="plain-has-none"),
        pytest.param(
            "https://u:p%2Dw@h/x", ["u:p%2Dw", "u", "p%2Dw", "u:p-w", "p-w"], id="userinfo"
        ),
        pytest.param("https://h/x?key=sk-1&a=${K}", ["sk-1"], id="query-a-reference-kept"),
        pytest.param("https://h/x#frag", ["frag"], id="fragment"),
        pytest.param("u:k@h", ["u:k", "u", "k"], id="no-scheme"),
    ],
)
def test_url_secrets_of_a_plain_url_are_none_and_every_marker_still_looked_at(
    url: str, secrets: list[str]
) -> None:
    """url_secrets is asked once per request: a URL without ``@``, ``?`` or ``#`` returns at
    once, and one with any of them is read as before."""
    from toolnexus.core.urls import url_secrets

    assert url_secrets(url) == secrets
