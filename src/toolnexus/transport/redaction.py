"""Redaction and safe error messages. Pure: no I/O, no environment, no HTTP library.

Errors never carry a credential or an expanded header value: an HTTP error names the status, the
endpoint as configured (``${NAME}`` unexpanded), the server's own message (five body shapes,
account identifiers «redacted», any credential or expanded value scrubbed, capped at 200
characters) and the ``x-typesafe-request-id``; a 401/403 body is never shown. The llm style quotes
replies through :func:`scrub` too, so there is one scrubbing rule.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from http import HTTPStatus
from typing import Any

from ..config import TransportKind
from ..core import (
    REDACTED,
    HTTPStatusError,
    StaticMiss,
    TransportError,
    loads,
)
from ..core import redact_url as redact_url  # the public path (below)
from .authcause import auth_failure_cause

# ``toolnexus.transport.redaction.redact_url`` is a public import path (README, "Public import
# paths"; tests/core/test_public_paths.py). The function is defined in ``core/urls.py``, a floor
# below: ``config`` (floor 1) names endpoints through it, and may not import ``transport``
# (floor 2). So it is bound here by name and left out of ``__all__``, which lists only what this
# module defines (tests/house/test_reexports.py).
__all__ = [
    "base_url_hint",
    "cap",
    "http_status_error",
    "redact",
    "replay_miss",
    "scrub",
    "scrub_bytes",
    "scrub_escaped",
    "scrub_value",
    "secret_forms",
    "server_message",
    "spellings",
    "transport_error",
]

#: The longest server message an error quotes.
MESSAGE_CAP = 200
#: A value shorter than this is not scrubbed: replacing every "a" in a message hides nothing.
MIN_SECRET = 3
_ACCOUNT_FIELDS = frozenset({"user_id", "account_id", "org_id", "organization"})
_ACCOUNT_TEXT = re.compile(
    r"""(["']?\b(?:user_id|account_id|org_id|organization)\b["']?\s*[:=]\s*)("[^"]*"|'[^']*'|[^\s,;&}\]]+)"""
)


def scrub(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every ``secrets`` value (three characters or more) replaced by «redacted», in
    every spelling a server may echo it in (:func:`spellings`: as sent, base64, percent-encoded,
    in any letter case). The one redaction of text: error lines, batch records, MCP results,
    exceptions, logs and the decoded strings of a body all pass through it (issue 43 item 1)."""
    pattern = _pattern(tuple(s for s in secrets if len(s) >= MIN_SECRET))
    return text if pattern is None else pattern.sub(REDACTED, text)


#: A base64 or percent-encoded spelling shorter than this is not scrubbed (a 3-character user
#: name's base64 is 4 letters: replacing those everywhere would hide the message, not a key).
MIN_ENCODED = 8


def spellings(secret: str) -> list[str]:
    """Every text spelling of ``secret`` a server may echo (issue 43 item 1: a 500 body echoing
    the key base64-encoded, percent-encoded or upper-cased reached every error): as sent; its
    base64 (standard and URL-safe, padded or not, and the run of characters it leaves at each
    of the three alignments inside a longer base64 text, so ``Basic base64(user:KEY)`` and
    ``base64("Bearer KEY")`` lose it too); each of those percent-encoded (``%2B``/``%2b``,
    ``+`` for a space), as a query string or a Basic header echoed in a URL spells them. Letter
    case is not part of a spelling: :func:`scrub` matches without it."""
    import base64

    raw = secret.encode("utf-8", "surrogatepass")
    found = {secret}
    encoded: set[str] = set()
    for k in range(3):
        text = base64.b64encode(b"\0" * k + raw).decode("ascii")
        # the characters made of the secret's bits alone, whatever bytes surround it
        encoded.add(text[-(-8 * k // 6) : 8 * (k + len(raw)) // 6])
        if k == 0:
            encoded.update((text, text.rstrip("=")))
    encoded |= {e.replace("+", "-").replace("/", "_") for e in encoded}
    found |= {e for e in encoded if len(e) >= MIN_ENCODED}
    for form in list(found):
        for quoted in (_quote(form), _quote(form).replace("%20", "+")):
            found.update((quoted, _UPPER_HEX.sub(lambda m: m.group().lower(), quoted)))
    return sorted(found, key=len, reverse=True)


_UPPER_HEX = re.compile(r"%[0-9A-F]{2}")
#: What percent-encoding leaves as it is (RFC 3986's unreserved characters).
_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def _quote(text: str) -> str:
    """``text`` percent-encoded as UTF-8, every reserved character escaped (``urllib.parse.quote``
    with ``safe=""``; this module stays on the few standard modules the layering test allows)."""
    return "".join(
        chr(b) if b in _UNRESERVED else f"%{b:02X}" for b in text.encode("utf-8", "surrogatepass")
    )


def _pattern(secrets: tuple[str, ...]) -> re.Pattern[str] | None:
    if secrets not in _PATTERNS:
        forms = sorted({f for s in secrets for f in spellings(s)}, key=len, reverse=True)
        pattern = re.compile("|".join(map(re.escape, forms)), re.IGNORECASE) if forms else None
        _remember(_PATTERNS, secrets, pattern)
    return _PATTERNS[secrets]


#: Compiled once per set of secrets (a transport's set is the same for every request).
_PATTERNS: dict[tuple[str, ...], re.Pattern[str] | None] = {}
_FORMS: dict[tuple[str, ...], tuple[bytes, ...]] = {}
_BYTE_PATTERNS: dict[tuple[str, ...], tuple[tuple[bytes, ...], re.Pattern[bytes] | None]] = {}
_KEPT = 64


def _remember(cache: dict[tuple[str, ...], Any], key: tuple[str, ...], value: Any) -> None:
    if len(cache) >= _KEPT:
        cache.clear()  # a process that rotates keys: start over rather than grow
    cache[key] = value


def secret_forms(secrets: Iterable[str]) -> list[bytes]:
    """Every byte form in which a server can echo a secret: each of its :func:`spellings` (and
    that spelling upper- and lower-cased: a non-ASCII letter's case is not matched in bytes),
    as sent and JSON-escaped (ASCII-only ``\\u00e9``, raw UTF-8, and with ``/`` escaped as
    ``\\/``), longest first."""
    return list(_byte_forms(tuple(s for s in secrets if len(s) >= MIN_SECRET)))


def _byte_forms(secrets: tuple[str, ...]) -> tuple[bytes, ...]:
    if secrets in _FORMS:
        return _FORMS[secrets]
    forms: set[bytes] = set()
    for secret in secrets:
        for spelled in spellings(secret):
            for cased in {spelled, spelled.upper(), spelled.lower()}:
                for text in (
                    cased,
                    json.dumps(cased)[1:-1],
                    json.dumps(cased, ensure_ascii=False)[1:-1],
                ):
                    forms.add(text.encode("utf-8", "surrogatepass"))
                    forms.add(text.replace("/", "\\/").encode("utf-8", "surrogatepass"))
    _remember(_FORMS, secrets, tuple(sorted(forms, key=len, reverse=True)))
    return _FORMS[secrets]


def _byte_pattern(secrets: tuple[str, ...]) -> tuple[tuple[bytes, ...], re.Pattern[bytes] | None]:
    if secrets not in _BYTE_PATTERNS:
        forms = _byte_forms(secrets)
        lowered = tuple(dict.fromkeys(f.lower() for f in forms))
        pattern = re.compile(b"|".join(map(re.escape, forms)), re.IGNORECASE) if forms else None
        _remember(_BYTE_PATTERNS, secrets, (lowered, pattern))
    return _BYTE_PATTERNS[secrets]


_REDACTED_BYTES = REDACTED.encode("utf-8")


def scrub_bytes(data: bytes, secrets: Iterable[str]) -> bytes:
    """Raw answer bytes with every form of every secret replaced by «redacted»: run on EVERY
    answer, whatever its status, before anything decodes, cuts, stores or prints it. The byte
    forms first (looked for in the lower-cased bytes, one ``in`` each: the common, cheap case
    finds none), then every JSON string that carries an escape is decoded and scrubbed as the
    decoder would see it (issue 29)."""
    secrets = [s for s in secrets if len(s) >= MIN_SECRET]
    lowered, pattern = _byte_pattern(tuple(secrets))
    if pattern is not None:
        low = data.lower()
        if any(form in low for form in lowered):
            data = pattern.sub(_REDACTED_BYTES, data)
    return scrub_escaped(data, secrets)


# One JSON string literal, escapes included. Matched left to right over a JSON text it tokenizes
# exactly: outside a string there is no quote, and inside one a quote is always escaped.
_LITERAL = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_LITERAL_TEXT = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
#: How deep JSON text inside a JSON string is searched (an llm reply's content is one level).
_NESTING = 3


def scrub_escaped(data: bytes, secrets: Iterable[str]) -> bytes:
    """``data`` (a JSON text, or anything) with every string literal that holds an escape and
    decodes to text containing a secret rewritten, scrubbed, as a plain JSON string.

    JSON lets a server spell each character of a key as ``\\u0073``, in either case of hex,
    ``\\/`` for a slash, a surrogate pair for a character past the BMP, or any mix of these with
    plain characters: no finite list of byte forms covers them, so the literal is decoded and
    the decoded text is what is compared (issue 29 item 1). Literals without an escape were
    covered by the literal forms; the other bytes are left as they were."""
    if b"\\" not in data:
        return data
    found = [s for s in secrets if len(s) >= MIN_SECRET]
    if not found:
        return data

    def one(m: re.Match[bytes]) -> bytes:
        literal = m.group()
        if b"\\" not in literal:
            return literal
        try:
            text = json.loads(literal)
        except ValueError:
            return literal
        clean = _scrub_decoded(text, found, _NESTING)
        return literal if clean == text else _encode_literal(clean)

    return _LITERAL.sub(one, data)


def _scrub_decoded(text: str, secrets: list[str], depth: int) -> str:
    """A decoded string scrubbed, and any JSON text inside it (escaped once more) too."""
    text = scrub(text, secrets)
    if depth > 1 and "\\" in text:

        def one(m: re.Match[str]) -> str:
            literal = m.group()
            if "\\" not in literal:
                return literal
            try:
                inner = json.loads(literal)
            except ValueError:
                return literal
            clean = _scrub_decoded(inner, secrets, depth - 1)
            return literal if clean == inner else json.dumps(clean, ensure_ascii=False)

        text = _LITERAL_TEXT.sub(one, text)
    return text


def _encode_literal(text: str) -> bytes:
    try:
        return json.dumps(text, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: only the escaped form is valid UTF-8
        return json.dumps(text).encode("ascii")


def scrub_value(value: Any, secrets: Iterable[str]) -> Any:
    """A decoded JSON value with every string in it (object keys included) scrubbed: for
    bodies that were decoded somewhere the transport's byte scrub never saw (a host's own chat
    client, a proxied answer about to be recorded). A copy; ``value`` is left as it was."""
    found = [s for s in secrets if len(s) >= MIN_SECRET]
    return _walk(value, found) if found else value


def _walk(value: Any, secrets: list[str]) -> Any:
    if isinstance(value, str):
        return scrub(value, secrets)
    if isinstance(value, dict):
        return {_walk(k, secrets): _walk(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk(v, secrets) for v in value]
    return value


def _redact_value(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: (REDACTED if k in _ACCOUNT_FIELDS else _redact_value(v)) for k, v in value.items()
        }
    if isinstance(value, list):
        return [_redact_value(v) for v in value]
    return value


def redact(body: str, secrets: Iterable[str] = ()) -> str:
    """The body with account identifiers (user_id, account_id, org_id, organization) replaced by
    «redacted» (replaced, not dropped: the shape survives) and every ``secrets`` value scrubbed."""
    try:
        parsed = loads(body)
    except ValueError:
        text = _ACCOUNT_TEXT.sub(lambda m: m.group(1) + '"' + REDACTED + '"', body)
    else:
        text = json.dumps(_redact_value(parsed), ensure_ascii=False)
    return scrub(text, secrets)


def server_message(body: str) -> str:
    """The server's own message from any of the five body shapes of the wire notes (the body
    is already redacted); the raw text for anything else."""
    try:
        parsed = loads(body)
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


def cap(text: str) -> str:
    """``text`` cut to at most 200 characters, an ellipsis marking the cut."""
    return text if len(text) <= MESSAGE_CAP else text[: MESSAGE_CAP - 1] + "…"


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "no message"


def http_status_error(
    status: int,
    content: bytes,
    *,
    endpoint: str,
    request_id: str | None,
    retry_after: str | None,
    secrets: Iterable[str],
    api_key_env: str,
    key_is_set: bool,
    attempts: int,
    retry_after_ms: str | None = None,
    url_credentials: bool = False,
    www_authenticate: str | None = None,
) -> HTTPStatusError:
    """The error for a non-2xx answer: its message is safe to show anywhere. With
    ``url_credentials`` (the base URL's ``user:pass@`` was sent) an auth failure names those,
    not the key's variable. A status that was retried says after how many attempts, as a
    network error does (issue 17 item 14); a terminal status, sent once, does not: "after 1
    attempt" would suggest retries were tried."""
    tries = f" (after {attempts} attempts)" if attempts > 1 else ""
    suffix = tries + (f" (request id {request_id})" if request_id else "")
    if status in (401, 403):
        # Never shown: an auth failure body routinely echoes the credential or header sent.
        # The cause is told from the status, WWW-Authenticate, detail.error_type and whether a
        # key was sent (issue 33: a 403, a server refusing any Authorization and one wanting
        # x-api-key all read "key rejected").
        cause = auth_failure_cause(
            status,
            content,
            www_authenticate=www_authenticate,
            api_key_env=api_key_env,
            key_is_set=key_is_set,
            url_credentials=url_credentials,
        )
        return HTTPStatusError(
            f"classifier: POST {endpoint}: HTTP {status}: {cause}{suffix}",
            status=status,
            endpoint=endpoint,
            request_id=request_id,
            body="",
            retry_after=retry_after,
            attempts=attempts,
            retry_after_ms=retry_after_ms,
        )
    body = redact(content.decode("utf-8", errors="replace"), secrets)
    if status == 404:
        suffix += base_url_hint(endpoint)
    message = server_message(body) or _reason(status)
    # A plain body such as aiohttp's "307: Temporary Redirect" repeats the status the line
    # already says (issue 31 item 13).
    message = message.removeprefix(f"{status}: ").removeprefix(f"{status} ") or _reason(status)
    return HTTPStatusError(
        f"classifier: POST {endpoint}: HTTP {status}: {cap(message)}{suffix}",
        status=status,
        endpoint=endpoint,
        request_id=request_id,
        body=body,
        retry_after=retry_after,
        attempts=attempts,
        retry_after_ms=retry_after_ms,
    )


_DOUBLED_V1 = re.compile(r"/v1/v1(?:/|$)")


def base_url_hint(endpoint: str) -> str:
    """The hint a 404 from ``endpoint`` (``{base}/systemone``) earns when its base URL looks
    spelled for the other rule (issue 43 item 8), or ``""``: ``--base-url`` / ``base_url=`` are
    used as given (seed 004: ``POST {baseUrl}/systemone``, so they include ``/v1``), while
    ``$TYPESAFE_BASE_URL`` is a host root that ``/v1`` is added to. A base holding ``/v1/v1``
    or no path at all names the other spelling."""
    head = endpoint.split("?", 1)[0].split("#", 1)[0]
    _, sep, rest = head.partition("://")
    base, _, last = rest.rpartition("/")
    if not sep or last != "systemone" or not base:  # ``${BASE}/systemone``: the path is unknown
        return ""
    path = base.partition("/")[2]
    if _DOUBLED_V1.search("/" + path):
        return (
            "; hint: the base URL holds /v1 twice: --base-url / base_url= are used as given "
            "and include /v1 (https://host/v1), $TYPESAFE_BASE_URL is a host root "
            "(https://host); drop one /v1"
        )
    if not path:
        return (
            "; hint: the base URL has no path: --base-url / base_url= are used as given, "
            "POST {base_url}/systemone, and the API answers under /v1 "
            "(https://host/v1); a host root is $TYPESAFE_BASE_URL's spelling"
        )
    return ""


def transport_error(
    kind: TransportKind, *, endpoint: str, timeout: float, attempts: int
) -> TransportError:
    """The error for an attempt that got no HTTP answer."""
    detail = f"no answer within {timeout:g} s" if kind == "timeout" else kind
    return TransportError(
        f"classifier: POST {endpoint}: {detail} (after {attempts} attempt"
        f"{'s' if attempts > 1 else ''})",
        kind=kind,
        endpoint=endpoint,
        attempts=attempts,
    )


def replay_miss(failure: HTTPStatusError) -> StaticMiss | None:
    """A ``toolnexus serve --replay`` miss (409, ``error_type`` ``replay_miss``) as the
    StaticMiss ``eval --replay DIR`` raises: an input problem (exit 2), its advice whole
    (issue 31 item 10: it was cut at 200 characters, "record it once with `toolnex...", and
    exited 3)."""
    try:
        body = json.loads(failure.body)
    except ValueError:
        return None
    detail = body.get("detail") if isinstance(body, dict) else None
    if not isinstance(detail, dict) or detail.get("error_type") != "replay_miss":
        return None
    message = detail.get("message")
    if not isinstance(message, str):
        return None
    rid = f" (request id {failure.request_id})" if failure.request_id else ""
    digest, preview = body.get("questions_sha256"), body.get("state_preview")
    return StaticMiss(
        f"classifier: POST {failure.endpoint}: HTTP 409: {' '.join(message.split())}{rid}",
        digest if isinstance(digest, str) else "",
        preview if isinstance(preview, str) else "",
    )
