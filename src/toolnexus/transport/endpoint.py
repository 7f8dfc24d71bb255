"""Where a request goes and what it carries: the base URL checked at construction, the path
joined to it, and, at EVERY call, ``${NAME}`` references expanded from the environment, a
``user:pass@`` in the URL turned into Basic auth and the key read from ``api_key_env`` into a
Bearer token. Nothing resolved here is stored; every value resolved joins the request's secrets,
which the retry loop (``retry.py``) scrubs from anything a reply quotes back.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from ..core import (
    ENV_REF,
    ConfigError,
    url_secrets,
    userinfo,
)

__all__ = ["check_url", "expand_env", "joined", "prepare", "trimmed"]


def expand_env(template: str, what: str, found: list[str] | None = None) -> str:
    """``${NAME}`` references expanded from the environment NOW. An unset variable is a
    ConfigError naming the variable and ``what`` (never a value). Expanded values are appended to
    ``found`` so that errors can scrub them."""
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

    return ENV_REF.sub(sub, template)


_USERINFO_AT = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)[^/?#@]*@")


def _basic_auth(url: str, secrets: list[str]) -> str | None:
    """``Authorization: Basic ...`` for a ``user:pass@`` written into ``url`` (what a browser
    or curl would send), or None; the credentials and their encoding join ``secrets``."""
    creds = userinfo(url)
    if not creds:
        return None
    from base64 import b64encode
    from urllib.parse import unquote

    encoded = b64encode(unquote(creds[0]).encode("utf-8")).decode("ascii")
    secrets += [*creds, encoded]
    return f"Basic {encoded}"


def check_url(shown: str, raw: str) -> None:
    """A base URL that can never be requested is refused now, naming it (credentials hidden),
    instead of failing inside the HTTP library at the first request."""
    from urllib.parse import urlsplit

    probe = ENV_REF.sub("0", raw)  # a ${NAME} can only be judged once expanded
    try:
        parts = urlsplit(probe)
        _ = parts.port
    except ValueError as e:
        raise ConfigError(f"classifier: base_url {shown!r} is not a valid URL: {e}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"classifier: base_url {shown!r} is not an http(s) URL with a host, "
            "like https://api.typesafe.ai/v1"
        )


def trimmed(base_url: str) -> str:
    """``base_url`` without the trailing ``/`` of its path (a query string is kept whole)."""
    head, mark, rest = base_url.partition("?")
    return head.rstrip("/") + mark + rest


def joined(base_url: str, path: str) -> str:
    """``{base_url}/{path}``, the path joined BEFORE a query string or fragment (issue 31 item
    5: ``.../v1?api_key=...`` once became ``.../v1?api_key=.../systemone``, a 404)."""
    cut = min((i for i in (base_url.find("?"), base_url.find("#")) if i >= 0), default=-1)
    if cut < 0:
        return f"{base_url}/{path}"
    return f"{base_url[:cut].rstrip('/')}/{path}{base_url[cut:]}"


def prepare(
    base_url: str, shown: str, path: str, header_templates: Mapping[str, str], api_key_env: str
) -> tuple[str, dict[str, str], list[str]]:
    """The URL, headers and secrets of one request to ``{base_url}/{path}``, resolved from the
    environment NOW: ``${NAME}`` references expanded, a ``user:pass@`` in the URL sent as Basic
    auth (and cut from the URL), the key in ``api_key_env`` sent as a Bearer token. ``shown`` is
    the base URL as errors may name it (credentials hidden). The secrets list is every value a
    reply must not quote back."""
    secrets: list[str] = []
    url = expand_env(joined(base_url, path), "base_url", secrets)
    secrets += url_secrets(url)
    basic = _basic_auth(url, secrets)
    if basic is not None:
        url = _USERINFO_AT.sub(r"\1", url, count=1)
    headers = {"Content-Type": "application/json"}
    for name, template in header_templates.items():
        value = expand_env(template, f"header {name}", secrets)
        if not value.isascii() or "\r" in value or "\n" in value:
            # Named, never shown: the value may be the credential itself.
            raise ConfigError(
                f"classifier: header {name}: its value is not one line of ASCII text, "
                "which is all an HTTP header can carry"
            )
        headers[name] = value
    key = os.environ.get(api_key_env)
    if basic is not None:
        if key or any(name.lower() == "authorization" for name in headers):
            raise ConfigError(
                f"classifier: base_url {shown!r} carries credentials (user:pass@) "
                f"and an Authorization is set too (${api_key_env} or a header); a "
                "request carries one: drop one of them"
            )
        headers["Authorization"] = basic
    if key:
        secrets.append(key)
        # A host's own Authorization header (e.g. a gateway token) is not overwritten.
        if not any(name.lower() == "authorization" for name in headers):
            headers["Authorization"] = f"Bearer {key}"
    return url, headers, secrets
