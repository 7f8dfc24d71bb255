"""A URL's secrets and the one form in which a URL is shown. Pure: the standard library only.

A URL can carry a credential in ``user:pass@`` and in its query or fragment (``?key=...``);
:func:`redact_url` hides both and :func:`url_secrets` lists them for scrubbing. They sit here, in
the core rank, because ``backends`` (config) names endpoints through them as ``transport``
does; ``toolnexus.transport.redaction.redact_url`` is the public path (issue 30 item 3).
"""

from __future__ import annotations

import re

from .envname import ENV_REF

__all__ = ["REDACTED", "redact_url", "url_secrets", "userinfo"]

REDACTED = "«redacted»"

# The scheme is optional so that a refused URL without one (``user:key@host``) is hidden too.
_USERINFO = re.compile(r"^((?:[A-Za-z][A-Za-z0-9+.-]*://)?)([^/?#@]*)@")


def userinfo(url: str) -> list[str]:
    """The credentials written into ``url`` (``user:pass@``): the pair, and each part."""
    m = _USERINFO.match(url)
    if m is None:
        return []
    user, _, password = m.group(2).partition(":")
    return [v for v in (m.group(2), user, password) if v]


def _query_values(url: str) -> list[str]:
    """The value of every query parameter of ``url`` (a bare one whole) and its fragment."""
    _, mark, rest = url.partition("?")
    query, _, fragment = rest.partition("#") if mark else ("", "", url.partition("#")[2])
    found = [part.partition("=")[2] if "=" in part else part for part in re.split("[&;]", query)]
    return [v for v in (*found, fragment) if v and not ENV_REF.fullmatch(v)]


def url_secrets(url: str) -> list[str]:
    """Every secret a URL can carry, as written and percent-decoded (``sk%2D...`` is sent as
    ``sk-...`` in Basic auth and may be echoed so): ``user:pass@`` and its parts, and each
    query value (``?key=...``). What a quoted reply must not show."""
    if "@" not in url and "?" not in url and "#" not in url:
        return []  # the common URL: nothing to look for (asked once per request)
    found = userinfo(url) + _query_values(url)
    return list(dict.fromkeys([*found, *(_percent_decoded(v) for v in found)]))


_PERCENT = re.compile(r"(?:%[0-9A-Fa-f]{2})+")


def _percent_decoded(text: str) -> str:
    """``text`` with ``%XX`` escapes decoded as UTF-8 (``urllib.parse.unquote``'s rule; this
    module stays on the pure standard library the layering test allows)."""
    return _PERCENT.sub(
        lambda m: bytes.fromhex(m.group().replace("%", "")).decode("utf-8", "replace"), text
    )


def redact_url(url: str) -> str:
    """The one form in which a URL is stored, keyed or shown: ``user:pass@`` as
    ``«redacted»@``, every query value and the fragment as «redacted» (a ``${NAME}``
    reference is kept: it names a variable, it holds no secret). Recordings, cache keys,
    metric events and every error name an endpoint through this."""
    url = _USERINFO.sub(lambda m: m.group(1) + REDACTED + "@", url, count=1)
    head, hash_mark, fragment = url.partition("#")
    base, mark, query = head.partition("?")

    def one(part: str) -> str:
        name, eq, value = part.partition("=")
        if not eq:
            return part if not part or ENV_REF.fullmatch(part) else REDACTED
        return part if not value or ENV_REF.fullmatch(value) else name + "=" + REDACTED

    if mark:
        base += "?" + "".join(
            one(p) if i % 2 == 0 else p for i, p in enumerate(re.split("([&;])", query))
        )
    if hash_mark:
        base += "#" + (REDACTED if fragment and not ENV_REF.fullmatch(fragment) else fragment)
    return base
