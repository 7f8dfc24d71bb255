"""Issue 33 item 5: "auth messages that name the real cause, from what may be read without
showing a body (the status, WWW-Authenticate, detail.error_type, whether a key was sent): 401
(key missing or rejected), 403 (forbidden for this key), a server that rejects any
Authorization header, a server that asks for another header"."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest

from toolnexus.core.errors import HTTPStatusError
from toolnexus.transport import SystemOneTransport

BASE = "http://127.0.0.1:9/v1"
SECRET = "sk-auth-cause-7d1e"


def _fail(monkeypatch: pytest.MonkeyPatch, key: bool, response: httpx.Response) -> str:
    if key:
        monkeypatch.setenv("CAUSE_KEY", SECRET)
    else:
        monkeypatch.delenv("CAUSE_KEY", raising=False)

    async def go() -> str:
        t = SystemOneTransport(
            transport=httpx.MockTransport(lambda _: response),
            base_url=BASE,
            api_key_env="CAUSE_KEY",
        )
        try:
            with pytest.raises(HTTPStatusError) as info:
                await t.post("systemone", b"{}")
        finally:
            await t.aclose()
        assert info.value.body == ""
        return str(info.value)

    return asyncio.run(go())


def _reply(code: int, body: Any, **headers: str) -> httpx.Response:
    return httpx.Response(code, content=json.dumps(body).encode(), headers=headers)


AUTH_ERROR = {"detail": {"error_type": "authentication_error", "message": f"bad {SECRET}"}}


@pytest.mark.parametrize(
    ("key", "response", "says", "never"),
    [
        pytest.param(
            False,
            _reply(401, AUTH_ERROR),
            "HTTP 401: authentication failed: no API key was sent (CAUSE_KEY is not set)",
            "rejected",
            id="401-key-missing",
        ),
        pytest.param(
            True,
            _reply(401, AUTH_ERROR, **{"WWW-Authenticate": 'Bearer realm="api"'}),
            "HTTP 401: authentication failed: the API key in the environment variable "
            "CAUSE_KEY was rejected",
            "forbidden",
            id="401-key-rejected",
        ),
        pytest.param(
            True,
            _reply(401, AUTH_ERROR),
            "or the server takes no key and refuses any Authorization header (then unset "
            "CAUSE_KEY)",
            "forbidden",
            id="401-a-server-that-refuses-any-authorization-header",
        ),
        pytest.param(
            True,
            _reply(401, {"detail": "no"}, **{"WWW-Authenticate": 'ApiKey header="x-api-key"'}),
            "the server asks for ApiKey credentials (WWW-Authenticate), not the Bearer key",
            "rejected",
            id="401-asks-for-another-scheme",
        ),
        pytest.param(
            True,
            _reply(403, {"detail": {"error_type": "authentication_error", "message": "Must!"}}),
            "the server says it was given no key: it reads the key from another header "
            "(such as x-api-key)",
            "Must!",
            id="403-wants-another-header",
        ),
        pytest.param(
            True,
            _reply(403, {"detail": {"error_type": "permission_error", "message": "no"}}),
            "HTTP 403: forbidden: the API key in the environment variable CAUSE_KEY was "
            "accepted, but this key may not make this request",
            "authentication failed",
            id="403-forbidden-for-this-key",
        ),
    ],
)
def test_an_auth_failure_names_its_cause_and_shows_no_body(
    monkeypatch: pytest.MonkeyPatch, key: bool, response: httpx.Response, says: str, never: str
) -> None:
    message = _fail(monkeypatch, key, response)
    assert says in message
    assert never not in message
    assert SECRET not in message and "bad" not in message and "\n" not in message


def test_an_error_type_that_is_not_an_identifier_is_never_read() -> None:
    """Only a plain identifier of ``detail.error_type`` is read: an echoed header is not."""
    from toolnexus.transport.authcause import error_type

    assert error_type(json.dumps(AUTH_ERROR).encode()) == "authentication_error"
    assert error_type(json.dumps({"detail": {"error_type": f"Bearer {SECRET}"}}).encode()) is None
    assert error_type(b"Unauthorized") is None
