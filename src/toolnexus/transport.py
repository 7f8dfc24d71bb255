"""The one place httpx is used for System One: one POST, retries, and errors safe to show.

One shared connection pool per classifier (keep-alive), closed by ``aclose()``. The transport is
injectable: ``transport=`` any httpx transport (``httpx.MockTransport`` in unit tests,
``httpx.AsyncHTTPTransport()`` for httpx's own pool), or ``http_client=`` a ready
``httpx.AsyncClient`` that the host owns and closes. The DEFAULT transport is
:class:`AiohttpTransport`, chosen by measurement (``bench/batch.py``: 2,000 states, a 20 ms
server, concurrency 16, 2 cores): toolnexus on httpx's own pool cost ~3.1 ms CPU per request and
~3.5x the ideal wall time; on the aiohttp pool ~0.7 ms and ~1.2x, against a bare-aiohttp floor
(precomputed bytes, no decoding) of ~0.3 ms and ~1.4x. httpx stays the API and the test seam;
aiohttp only moves the bytes.

Retries (seed 004 + SPEC-8B Appendix A, verbatim):

- budget ``retries`` (default 2). ``retries=0`` means exactly one attempt, no retry at all.
- retryable by default: HTTP 408/429/500/502/503/504/529 and network errors (timeout, refused,
  reset). Every other status, 501 and 520-527 included, is terminal. ``retryable_statuses`` only
  ADDS to that set.
- ``on_error(info) -> "retry" | "fail"`` runs on EVERY failed attempt and has the final say;
  ``info = {"error"?, "status"?, "attempt", "retryable"}`` (``error`` is the translated
  TransportError, ``attempt`` zero-based). A "retry" is still bounded by ``retries``.
- the wait: a ``Retry-After`` in delay-seconds form (ASCII digits only, 0..2147483647, 0 = now)
  wins; anything else (a date, fractional, signed, too big, empty, garbage) falls back to
  ``retry_base_ms * 2**attempt`` (absent, zero or negative base => 500 ms). No jitter.
- every retry carries ``X-TypeSafe-Retry-Count: <n>``, as the official SDK labels them.
- a per-request timeout counts as a network error and is retried like one (the official SDK does
  the same; note the wire notes' warning that a retried POST may bill twice: an ``on_error`` that
  answers "fail" when ``info["error"].kind == "timeout"`` opts out). Cancellation of the calling
  task is never retried.

Errors never carry a credential or an expanded header value: an HTTP error names the status, the
endpoint as configured (``${NAME}`` unexpanded), the server's own message (five body shapes, account
identifiers «redacted», any credential or expanded value scrubbed, capped at 200 characters) and
the ``x-typesafe-request-id``; a 401/403 body is never shown. Every httpx and aiohttp exception is
translated here, and only here.
"""

from __future__ import annotations

import asyncio
import errno
import json
import os
import re
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

import aiohttp
import httpx

from .errors import ClassifierError, ConfigError, HookError, HTTPStatusError, TransportError

__all__ = [
    "DEFAULT_RETRYABLE_STATUSES",
    "RETRY_COUNT_HEADER",
    "AiohttpTransport",
    "Reply",
    "SystemOneTransport",
    "expand_env",
    "redact",
    "retry_delay",
    "server_message",
]

#: Retryable by default (seed 004: SPEC-8B Appendix A's set plus 408). Exhaustive, not "5xx".
DEFAULT_RETRYABLE_STATUSES = frozenset({408, 429, 500, 502, 503, 504, 529})
RETRY_COUNT_HEADER = "X-TypeSafe-Retry-Count"
REQUEST_ID_HEADER = "x-typesafe-request-id"
_DEFAULT_BASE_MS = 500
_RETRY_AFTER_MAX = 2147483647
_MESSAGE_CAP = 200
_REDACTED = "«redacted»"
_ACCOUNT_FIELDS = frozenset({"user_id", "account_id", "org_id", "organization"})
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_DIGITS = re.compile(r"[0-9]+", re.ASCII)
_ACCOUNT_TEXT = re.compile(
    r"""(["']?\b(?:user_id|account_id|org_id|organization)\b["']?\s*[:=]\s*)("[^"]*"|'[^']*'|[^\s,;&}\]]+)"""
)

OnError = Callable[[Mapping[str, Any]], str]
Sleep = Callable[[float], Any]


# --- pure helpers ---------------------------------------------------------------------------


def expand_env(template: str, what: str, found: list[str] | None = None) -> str:
    """``${NAME}`` references expanded from the environment NOW. An unset variable is an error
    naming the variable and ``what`` (never a value). Expanded values are appended to ``found``
    so that errors can scrub them."""
    if "${" not in template:
        return template

    def sub(m: re.Match[str]) -> str:
        value = os.environ.get(m.group(1))
        if value is None:
            raise ConfigError(
                f"classifier: {what} refers to ${{{m.group(1)}}}, which is not set in the "
                "environment"
            )
        if found is not None and value:
            found.append(value)
        return value

    return _ENV_REF.sub(sub, template)


def retry_delay(attempt: int, retry_after: str | None, retry_base_ms: int | None) -> float:
    """Seconds to wait before retry number ``attempt + 1`` (``attempt`` zero-based).

    ``Retry-After`` wins only in delay-seconds form: ASCII digits, 0..2147483647, including 0.
    Every other form falls back to ``base * 2**attempt`` ms, never raises, never goes negative.
    """
    if retry_after is not None:
        value = retry_after.strip(" \t")
        if _DIGITS.fullmatch(value) and int(value) <= _RETRY_AFTER_MAX:
            return float(int(value))
    base = retry_base_ms if retry_base_ms is not None and retry_base_ms > 0 else _DEFAULT_BASE_MS
    return float(base * (1 << attempt)) / 1000.0


def _redact_value(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: (_REDACTED if k in _ACCOUNT_FIELDS else _redact_value(v)) for k, v in value.items()
        }
    if isinstance(value, list):
        return [_redact_value(v) for v in value]
    return value


def redact(body: str, secrets: Iterable[str] = ()) -> str:
    """The body with account identifiers (user_id, account_id, org_id, organization) replaced by
    «redacted» (replaced, not dropped: the shape survives) and every ``secrets`` value scrubbed."""
    try:
        parsed = json.loads(body)
    except ValueError:
        text = _ACCOUNT_TEXT.sub(lambda m: m.group(1) + '"' + _REDACTED + '"', body)
    else:
        text = json.dumps(_redact_value(parsed), ensure_ascii=False)
    for secret in secrets:
        if len(secret) >= 3:
            text = text.replace(secret, _REDACTED)
    return text


def server_message(body: str) -> str:
    """The server's own message from any of the five body shapes of the wire notes (the body
    is already redacted); the raw text for anything else."""
    try:
        parsed = json.loads(body)
    except ValueError:
        return " ".join(body.split())
    if isinstance(parsed, dict):
        detail = parsed.get("detail")
        if isinstance(detail, str):  # 1. {"detail": "..."}
            return detail
        if isinstance(detail, dict):  # 2./3. {"detail": {"error_type", "message"?}}
            msg = detail.get("message")
            if isinstance(msg, str) and msg:
                return msg
            if isinstance(detail.get("error_type"), str):
                return str(detail["error_type"])
        if isinstance(detail, list):  # 4. FastAPI validation: [{type, loc, msg, input}]
            parts = []
            for item in detail:
                if isinstance(item, dict) and "msg" in item:
                    loc = item.get("loc")
                    where = ".".join(str(p) for p in loc) if isinstance(loc, list) else ""
                    parts.append(f"{where}: {item['msg']}" if where else str(item["msg"]))
            if parts:
                return "; ".join(parts)
        error = parsed.get("error")  # 5. gateways: {"error": {"type", "message"}}
        if isinstance(error, dict):
            for field in ("message", "type"):
                if isinstance(error.get(field), str) and error[field]:
                    return str(error[field])
        if isinstance(error, str):
            return error
    return " ".join(body.split())


def _cap(text: str) -> str:
    return text if len(text) <= _MESSAGE_CAP else text[: _MESSAGE_CAP - 1] + "…"


def _kind_of(exc: BaseException) -> str:
    """The kind of a transport failure, read from the whole cause chain: httpx's own classes
    are too coarse (httpx-aiohttp maps every aiohttp connection error to ConnectTimeout)."""
    chain: list[BaseException] = []
    seen: BaseException | None = exc
    while seen is not None and seen not in chain:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    for e in chain:
        if isinstance(e, ConnectionRefusedError):
            return "connection refused"
        if isinstance(e, ConnectionResetError | BrokenPipeError | aiohttp.ServerDisconnectedError):
            return "connection reset"
        if isinstance(e, OSError) and e.errno == errno.ECONNREFUSED:
            return "connection refused"
        if isinstance(e, OSError) and e.errno in (errno.ECONNRESET, errno.EPIPE):
            return "connection reset"
    for e in chain:
        if isinstance(e, TimeoutError | httpx.TimeoutException | aiohttp.ServerTimeoutError):
            return "timeout"
        if isinstance(e, httpx.RemoteProtocolError) and "disconnected" in str(e).lower():
            return "connection reset"
        if isinstance(e, httpx.RemoteProtocolError | aiohttp.ClientPayloadError):
            return "protocol error"
    return "network error"


# --- the default transport ------------------------------------------------------------------


class AiohttpTransport(httpx.AsyncBaseTransport):
    """An httpx transport over one aiohttp connection pool, reading each body eagerly (a System
    One answer is small and never streamed). aiohttp failures leave here as httpx exceptions with
    the aiohttp one as ``__cause__``, so this is interchangeable with any httpx transport."""

    def __init__(self, *, max_connections: int = 100) -> None:
        self._session: aiohttp.ClientSession | None = None
        self._max_connections = max_connections

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None:
            # Created on first use: an aiohttp session must be born inside the running loop.
            # Proxy variables are honoured only when one is set: aiohttp's trust_env looks the
            # proxy up in a worker thread on EVERY request (measured: ~0.1 ms CPU each).
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self._max_connections),
                trust_env=any(n.lower().endswith("_proxy") and v for n, v in os.environ.items()),
            )
        return self._session

    async def post_raw(
        self, url: str, headers: Mapping[str, str], body: bytes, timeout: float
    ) -> tuple[int, Mapping[str, str], bytes]:
        """POST without building httpx Request/Response objects: (status, headers, body).

        The hot path of ``SystemOneTransport.post`` when no transport was injected; measured at
        ~0.1 ms CPU per request less than going through ``handle_async_request``. Failures leave
        as aiohttp/OS exceptions, which ``post`` classifies exactly like the httpx ones.
        """
        async with self._open().post(
            url,
            headers=headers,
            data=body,
            allow_redirects=False,
            timeout=aiohttp.ClientTimeout(sock_connect=timeout, sock_read=timeout),
        ) as resp:
            return resp.status, resp.headers, await resp.read()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        timeout = request.extensions.get("timeout", {})
        try:
            async with self._open().request(
                request.method,
                str(request.url),
                headers=request.headers,
                data=request.content,
                allow_redirects=False,
                auto_decompress=True,
                timeout=aiohttp.ClientTimeout(
                    sock_connect=timeout.get("connect"), sock_read=timeout.get("read")
                ),
            ) as resp:
                content = await resp.read()
                return httpx.Response(
                    resp.status,
                    headers=resp.raw_headers,
                    content=content,
                    request=request,
                )
        except (TimeoutError, aiohttp.ServerTimeoutError) as e:
            raise httpx.TimeoutException("timeout", request=request) from e
        except aiohttp.ClientConnectorError as e:
            raise httpx.ConnectError("connect failed", request=request) from e
        except aiohttp.ClientPayloadError as e:
            raise httpx.RemoteProtocolError("incomplete body", request=request) from e
        except (aiohttp.ClientError, OSError) as e:
            raise httpx.NetworkError("network error", request=request) from e

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


# --- the System One POST ----------------------------------------------------------------------


@dataclass(frozen=True)
class Reply:
    """A 2xx answer: its body bytes and the server's request id (or None)."""

    status: int
    content: bytes
    request_id: str | None
    endpoint: str


class SystemOneTransport:
    """POSTs canonical bytes to ``{base_url}/<path>`` with retries; see the module docstring.

    ``base_url`` and ``headers`` may hold ``${NAME}`` references; they, and the credential read
    from the variable named ``api_key_env``, are resolved at EVERY call and never stored.
    """

    def __init__(
        self,
        *,
        base_url: str,
        api_key_env: str,
        headers: Mapping[str, str] | None = None,
        timeout: float = 10.0,
        retries: int = 2,
        retry_base_ms: int | None = _DEFAULT_BASE_MS,
        retryable_statuses: Collection[int] = (),
        on_error: OnError | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        http_client: httpx.AsyncClient | None = None,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        if transport is not None and http_client is not None:
            raise ConfigError("classifier: give transport= or http_client=, not both")
        if http_client is not None and not isinstance(http_client, httpx.AsyncClient):
            raise ConfigError(
                "classifier: http_client must be an httpx.AsyncClient, got "
                f"{type(http_client).__name__}"
            )
        if transport is not None and not isinstance(transport, httpx.AsyncBaseTransport):
            raise ConfigError(
                "classifier: transport must be an httpx async transport "
                f"(httpx.AsyncBaseTransport), got {type(transport).__name__}"
            )
        if on_error is not None and not callable(on_error):
            raise ConfigError("classifier: on_error must be callable")
        self.base_url = base_url.rstrip("/")
        self.api_key_env = api_key_env
        self._headers = dict(headers or {})
        for name, value in self._headers.items():
            if not isinstance(name, str) or not isinstance(value, str):
                raise ConfigError("classifier: headers must map header names to strings")
        self.timeout = float(timeout)
        self.retries = retries
        self.retry_base_ms = retry_base_ms
        self.retryable = DEFAULT_RETRYABLE_STATUSES | frozenset(retryable_statuses)
        self.on_error = on_error
        self.sleep = sleep
        # With a transport (ours or injected) requests go straight to it: httpx.AsyncClient.send
        # adds a cookie-jar pass over every response (measured ~0.2 ms CPU per request) and
        # auth/redirect machinery that a System One POST never uses (redirects are not followed
        # either way). A host's own http_client is used as given, through its send().
        self._client = http_client
        self._transport: httpx.AsyncBaseTransport | None = (
            None if http_client is not None else (transport or AiohttpTransport())
        )
        self._timeout_ext = {
            "timeout": {
                "connect": self.timeout,
                "read": self.timeout,
                "write": self.timeout,
                "pool": self.timeout,
            }
        }
        self._url_cache: dict[str, httpx.URL] = {}

    def __repr__(self) -> str:
        return f"SystemOneTransport(base_url={self.base_url!r}, api_key_env={self.api_key_env!r})"

    def endpoint(self, path: str) -> str:
        """The endpoint as configured, ``${NAME}`` unexpanded: what errors and keys show."""
        return f"{self.base_url}/{path}"

    async def aclose(self) -> None:
        """Close the connection pool; a host's own http_client is left for the host to close.
        Safe to call twice."""
        if self._transport is not None:
            await self._transport.aclose()

    def scrub(self, text: str) -> str:
        """``text`` with account identifiers redacted and every value this transport would
        send as a credential or expanded reference (as the environment holds them now)
        scrubbed: for quoting a reply body in an error."""
        secrets = [v for v in (os.environ.get(self.api_key_env),) if v]
        for template in (self.base_url, *self._headers.values()):
            for name in _ENV_REF.findall(template):
                value = os.environ.get(name)
                if value:
                    secrets.append(value)
        return redact(text, secrets)

    def _prepare(self, path: str) -> tuple[httpx.URL, dict[str, str], list[str]]:
        secrets: list[str] = []
        raw_url = expand_env(self.endpoint(path), "base_url", secrets)
        url = self._url_cache.get(raw_url)
        if url is None:
            url = httpx.URL(raw_url)
            if not secrets:  # an expanded URL is not kept: it may carry account ids
                self._url_cache[raw_url] = url
        headers = {"Content-Type": "application/json"}
        for name, template in self._headers.items():
            headers[name] = expand_env(template, f"header {name}", secrets)
        key = os.environ.get(self.api_key_env)
        if key:
            secrets.append(key)
            # A host's own Authorization header (e.g. a gateway token) is not overwritten.
            if not any(name.lower() == "authorization" for name in headers):
                headers["Authorization"] = f"Bearer {key}"
        return url, headers, secrets

    async def post(
        self, path: str, body: bytes, extra_headers: Mapping[str, str] | None = None
    ) -> Reply:
        """POST ``body`` (already canonical bytes) with retries. Returns the 2xx reply; raises
        HTTPStatusError, TransportError or ClassifierError, never a third-party exception."""
        endpoint = self.endpoint(path)
        url, headers, secrets = self._prepare(path)
        if extra_headers:
            headers.update(extra_headers)
        attempt = 0
        while True:
            if attempt:
                headers[RETRY_COUNT_HEADER] = str(attempt)
            failure: ClassifierError
            retry_after: str | None = None
            try:
                async with asyncio.timeout(self.timeout):
                    status, resp_headers, content = await self._send(url, headers, body)
            except (httpx.HTTPError, aiohttp.ClientError, OSError, TimeoutError) as e:
                kind = _kind_of(e)
                detail = f"no answer within {self.timeout:g} s" if kind == "timeout" else kind
                failure = TransportError(
                    f"classifier: POST {endpoint}: {detail} (after {attempt + 1} attempt"
                    f"{'s' if attempt else ''})",
                    kind=kind,
                    endpoint=endpoint,
                    attempts=attempt + 1,
                )
                info: dict[str, Any] = {"error": failure, "attempt": attempt, "retryable": True}
            else:
                request_id = resp_headers.get(REQUEST_ID_HEADER)
                if 200 <= status < 300:
                    return Reply(status, content, request_id, endpoint)
                retry_after = resp_headers.get("retry-after")
                failure = self._status_error(
                    status, resp_headers, content, endpoint, secrets, attempt + 1
                )
                info = {"status": status, "attempt": attempt, "retryable": status in self.retryable}
            verdict = self._verdict(info)
            if verdict == "fail" or attempt >= self.retries:
                raise failure
            await self.sleep(retry_delay(attempt, retry_after, self.retry_base_ms))
            attempt += 1

    async def _send(
        self, url: httpx.URL, headers: Mapping[str, str], body: bytes
    ) -> tuple[int, Mapping[str, str], bytes]:
        """One attempt: (status, case-insensitive headers, body)."""
        if isinstance(self._transport, AiohttpTransport):
            return await self._transport.post_raw(str(url), headers, body, self.timeout)
        request = httpx.Request(
            "POST", url, content=body, headers=headers, extensions=self._timeout_ext
        )
        if self._transport is not None:
            response = await self._transport.handle_async_request(request)
        else:
            assert self._client is not None
            response = await self._client.send(request)
        await response.aread()
        return response.status_code, response.headers, response.content

    def _verdict(self, info: Mapping[str, Any]) -> str:
        if self.on_error is None:
            return "retry" if info["retryable"] else "fail"
        try:
            verdict = self.on_error(info)
        except Exception as e:
            raise HookError(f"classifier: on_error raised {type(e).__name__}") from None
        if verdict not in ("retry", "fail"):
            raise HookError(f"classifier: on_error must return 'retry' or 'fail', got {verdict!r}")
        return str(verdict)

    def _status_error(
        self,
        status: int,
        headers: Mapping[str, str],
        content: bytes,
        endpoint: str,
        secrets: list[str],
        attempts: int,
    ) -> HTTPStatusError:
        request_id = headers.get(REQUEST_ID_HEADER)
        suffix = f" (request id {request_id})" if request_id else ""
        if status in (401, 403):
            # Never shown: an auth failure body routinely echoes the credential or header sent.
            state = "is set but was rejected" if os.environ.get(self.api_key_env) else "is not set"
            return HTTPStatusError(
                f"classifier: POST {endpoint}: HTTP {status}: authentication failed; check the "
                f"API key in the environment variable {self.api_key_env} (it {state}){suffix}",
                status=status,
                endpoint=endpoint,
                request_id=request_id,
                body="",
                retry_after=headers.get("retry-after"),
                attempts=attempts,
            )
        body = redact(content.decode("utf-8", errors="replace"), secrets)
        message = server_message(body) or _reason(status)
        return HTTPStatusError(
            f"classifier: POST {endpoint}: HTTP {status}: {_cap(message)}{suffix}",
            status=status,
            endpoint=endpoint,
            request_id=request_id,
            body=body,
            retry_after=headers.get("retry-after"),
            attempts=attempts,
        )


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "no message"
