"""The ``--proxy URL --record DIR`` answer source: forward to a real System One endpoint with
the caller's own Authorization header, hand back its answer unchanged, and record every 200.

``URL`` is a base URL as ``toolnexus --base-url`` takes it (``https://api.typesafe.ai/v1``,
``https://openrouter.ai/api/v1``); a bare host root (no path) gets ``/v1`` appended, so the URL
another ``toolnexus serve`` prints works as it is. Only the headers the wire defines are
forwarded; the Authorization header goes to the upstream and nowhere else: it is never logged,
recorded, or echoed. Credentials written into ``URL`` (``user:KEY@``, percent-encoded or not,
or any query-string value such as ``?api_key=KEY``) are the operator's: they go to the upstream
(``user:KEY@`` as HTTP Basic auth, which then replaces the caller's Authorization) and are shown
as «redacted» everywhere serve prints, logs or records the URL (:func:`shown_url`). A recording
holds the request's model, state, questions, the response and, for images, each placeholder's
sha256 (``assets``), never a header or a key.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

import aiohttp

from ..core import (
    DecisionError,
    redact_url,
    url_secrets,
)
from ..styles import write_wire_recording
from ..transport import scrub_value
from .wire import WireRequest

__all__ = [
    "FORWARDED_HEADERS",
    "Upstream",
    "credentials",
    "record_exchange",
    "shown_url",
    "upstream_base",
]

#: Request headers passed to the upstream (lower case). Everything else stays here.
FORWARDED_HEADERS = (
    "authorization",
    "accept",
    "content-type",
    "content-encoding",
    "user-agent",
    "x-typesafe-sdk",
    "x-typesafe-runtime",
    "x-typesafe-retry-count",
    "typesafe-danger-zone-images",
)
#: Response headers passed back to the caller (lower case).
RETURNED_HEADERS = ("content-type", "x-typesafe-request-id", "retry-after", "retry-after-ms")


def shown_url(url: str) -> str:
    """``url`` as serve prints, logs and records it: the transport's one credential redaction
    (userinfo, every query value and the fragment «redacted»)."""
    return redact_url(url)


def upstream_base(url: str) -> str:
    """The upstream's base URL, ending before ``/systemone`` (credentials and query kept)."""
    url = url.rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"--proxy {shown_url(url)!r}: not an http(s) URL")
    if parts.path in ("", "/"):
        parts = parts._replace(path="/v1")
    return urlunsplit(parts)


class Upstream:
    """One pooled client session to the upstream endpoint. ``shown`` is its base URL with
    credentials «redacted», the only form that is printed or recorded."""

    def __init__(self, base: str, timeout: float = 60.0) -> None:
        self._parts = urlsplit(upstream_base(base))
        #: the base URL as printed: credentials «redacted»
        self.shown = shown_url(urlunsplit(self._parts))
        user, password = self._parts.username, self._parts.password
        #: the Authorization header the URL's userinfo stands for (RFC 7617), or None
        self._auth: str | None = None
        if user is not None or password is not None:
            pair = f"{unquote(user or '')}:{unquote(password or '')}".encode()
            self._auth = "Basic " + base64.b64encode(pair).decode("ascii")
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._session: aiohttp.ClientSession | None = None

    def secrets(self, authorization: str | None) -> list[str]:
        """The credentials of one exchange through this upstream (:func:`credentials`)."""
        return credentials(authorization, urlunsplit(self._parts))

    def url(self, endpoint: str, *, shown: bool = False) -> str:
        """The upstream URL of ``endpoint`` (``systemone``, ``models``): as sent (userinfo goes
        as Basic auth instead), or ``shown`` with credentials «redacted»."""
        p = self._parts
        netloc = p.netloc if shown else p.netloc.rpartition("@")[2]
        url = urlunsplit((p.scheme, netloc, f"{p.path}/{endpoint}", p.query, ""))
        return shown_url(url) if shown else url

    async def start(self) -> None:
        self._session = aiohttp.ClientSession(timeout=self._timeout, auto_decompress=True)

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def forward(
        self, method: str, endpoint: str, headers: Mapping[str, str], body: bytes | None
    ) -> tuple[int, bytes, dict[str, str]]:
        """``(status, body, headers)`` from the upstream; raises ``aiohttp.ClientError`` or
        ``TimeoutError`` when it gives no answer."""
        assert self._session is not None, "Upstream.start() first"
        sent = {k: v for k, v in headers.items() if k.lower() in FORWARDED_HEADERS}
        if self._auth is not None:  # the URL's credentials replace the caller's
            sent = {k: v for k, v in sent.items() if k.lower() != "authorization"}
            sent["Authorization"] = self._auth
        async with self._session.request(
            method, self.url(endpoint), headers=sent, data=body, allow_redirects=False
        ) as resp:
            raw = await resp.read()
            back = {k: v for k, v in resp.headers.items() if k.lower() in RETURNED_HEADERS}
            return resp.status, raw, back


def credentials(authorization: str | None, upstream: str) -> list[str]:
    """Every credential an exchange carried: the caller's Authorization (a Bearer token, or a
    Basic pair and each of its parts) and the secrets of the upstream URL. What a recording
    must never hold, however the upstream spelled its echo."""
    found = url_secrets(upstream)
    if authorization:
        scheme, _, token = authorization.strip().partition(" ")
        token = token.strip()
        found += [authorization.strip(), token]
        if scheme.lower() == "basic" and token:
            try:
                pair = base64.b64decode(token, validate=True).decode("utf-8")
            except ValueError:
                pair = ""
            user, _, password = pair.partition(":")
            found += [pair, user, password]
    return [v for v in dict.fromkeys(found) if v]


def record_exchange(
    directory: str | Path,
    endpoint: str,
    request: WireRequest,
    response_body: bytes,
    secrets: list[str] | None = None,
) -> Path:
    """Write one exchange as ``--record`` does (``recordings.write_wire_recording``: the
    request's questions exactly as received, never through the typed question round trip, issue
    33; image hashes under ``assets``), every string of the response scrubbed of ``secrets`` as
    decoded (an upstream may echo the key in ``\\u`` escapes: issue 29). Raises
    ``ClassifierError`` when the upstream's 200 body is not a JSON object."""
    try:
        response: Any = json.loads(response_body)
    except (ValueError, UnicodeDecodeError) as e:
        raise DecisionError(f"classifier: the upstream's 200 body is not JSON: {e}") from None
    if not isinstance(response, Mapping):
        raise DecisionError("classifier: the upstream's 200 body is not a JSON object")
    if secrets:
        response = scrub_value(response, secrets)
    assets = {i.placeholder: {"sha256": i.sha256, "type": "image"} for i in request.images}
    return write_wire_recording(
        directory,
        model=request.model,
        endpoint=endpoint,
        state=request.state,
        questions=request.questions,
        response=response,
        assets=assets or None,
    )
