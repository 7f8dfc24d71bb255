"""What a 401/403 means, told from what may be read without showing its body (issue 33 item 5).
Pure: no I/O, no environment, no HTTP library.

A 401/403 body is never shown: gateways echo credentials into it. Four facts are read instead:
the status, the ``WWW-Authenticate`` scheme, ``detail.error_type`` (only when it is a plain
identifier, never quoted otherwise) and whether toolnexus sent a key. They separate:

- 401, no key sent: the key is missing;
- 401 whose ``WWW-Authenticate`` names a scheme other than Bearer: the server asks for another
  kind of credential, or another header;
- 401, key sent: the key was rejected — or the server takes no key and refuses any
  ``Authorization`` header; one answer cannot tell these apart (jevcompat's reference server
  answers both 401 ``authentication_error`` without ``WWW-Authenticate``), so both are named;
- 403 ``authentication_error`` with a key sent: the server found no credential where it looks,
  so it reads the key from another header (``x-api-key``, say);
- any other 403 with a key sent: the key was accepted and is forbidden this request.
"""

from __future__ import annotations

import re
from typing import Any

from ..core import loads

__all__ = ["auth_failure_cause", "error_type"]

#: An ``error_type`` worth reading: a short identifier (``authentication_error``). Anything
#: else (a sentence, an echoed header) is ignored, so no body text can reach a message.
_IDENTIFIER = re.compile(r"[a-z][a-z0-9_.-]{0,39}")
#: An auth scheme token (RFC 7235): the first word of ``WWW-Authenticate``.
_SCHEME = re.compile(r"\s*([A-Za-z][A-Za-z0-9!#$%&'*+.^_`|~-]{0,31})(?:\s|,|$)")


def error_type(content: bytes) -> str | None:
    """``detail.error_type`` (or a gateway's ``error.type``) of an error body, when it is a
    plain identifier; else ``None``."""
    try:
        body: Any = loads(content)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    if not isinstance(body, dict):
        return None
    for outer, inner in (("detail", "error_type"), ("error", "type")):
        value = body.get(outer)
        found = value.get(inner) if isinstance(value, dict) else None
        if isinstance(found, str) and _IDENTIFIER.fullmatch(found.lower()):
            return found.lower()
    return None


def _scheme(www_authenticate: str | None) -> str | None:
    if not www_authenticate:
        return None
    m = _SCHEME.match(www_authenticate)
    return m.group(1) if m else None


def auth_failure_cause(
    status: int,
    content: bytes,
    *,
    www_authenticate: str | None,
    api_key_env: str,
    key_is_set: bool,
    url_credentials: bool,
) -> str:
    """The cause and the fix of a 401/403, as the words after ``HTTP {status}: `` (module
    docstring). Nothing of the body is quoted."""
    if url_credentials:
        sent = "the credentials (user:pass@) in the base URL"
    else:
        sent = f"the API key in the environment variable {api_key_env}"
    scheme = _scheme(www_authenticate)
    kind = error_type(content)
    if not key_is_set and not url_credentials:
        return (
            f"authentication failed: no API key was sent ({api_key_env} is not set); set "
            f"{api_key_env} to your key"
        )
    if scheme is not None and scheme.lower() != "bearer":
        return (
            f"authentication failed: the server asks for {scheme} credentials "
            "(WWW-Authenticate), not the Bearer key toolnexus sends; send what it asks for "
            "with headers={...} (a value may be ${NAME})"
        )
    if status == 403 and kind == "authentication_error":
        return (
            f"authentication failed: {sent} was sent as Authorization: Bearer, and the server "
            "says it was given no key: it reads the key from another header (such as "
            f"x-api-key); send it there with headers={{...: '${{{api_key_env}}}'}}"
        )
    if status == 403:
        return (
            f"forbidden: {sent} was accepted, but this key may not make this request (its "
            "model, endpoint or account permissions); check the key's access"
        )
    # With user:pass@ no key was sent: the way to send no Authorization is to drop the pair.
    drop = "drop user:pass@ from the base URL" if url_credentials else f"unset {api_key_env}"
    return (
        f"authentication failed: {sent} was rejected (a wrong, expired or revoked key), or "
        f"the server takes no key and refuses any Authorization header (then {drop}); "
        f"check {sent}"
    )
