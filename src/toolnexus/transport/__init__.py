"""The one place HTTP is spoken for System One (and the llm style's chat endpoint).

Split by concern:

- ``redaction``: redaction and safe error messages (pure: no I/O, no HTTP library).
- ``retry``: the retry loop (and, in a batch, the hand-off to the run's scheduler).
- ``endpoint``: the URL, ``${NAME}`` expansion and the credential, resolved once per request.
- ``adapter``: the interface the loop sends through; ``aiohttp_adapter`` (the default, one
  connection pool per classifier) and ``httpx_adapter`` (an injected httpx transport or client:
  ``httpx.MockTransport`` in unit tests) implement it.
- ``multipart``: the multipart body of an image request, by httpx's encoder (imported only
  when a request carries images: the default path does not load httpx).

Every request takes the same path: ``SystemOneTransport.post`` -> ``Adapter.send``. Only the
adapter differs, so what the unit tests check of retries and errors is what production runs.
Every aiohttp and httpx exception is translated in its adapter, and only there.
"""

from __future__ import annotations

from ..core.defaults import DEFAULT_RETRYABLE_STATUSES
from .adapter import Adapter, SendError
from .endpoint import expand_env
from .redaction import redact, scrub, server_message
from .retry import (
    REQUEST_ID_HEADER,
    RETRY_COUNT_HEADER,
    Reply,
    SystemOneTransport,
)

__all__ = [
    "DEFAULT_RETRYABLE_STATUSES",
    "REQUEST_ID_HEADER",
    "RETRY_COUNT_HEADER",
    "Adapter",
    "Reply",
    "SendError",
    "SystemOneTransport",
    "expand_env",
    "redact",
    "scrub",
    "server_message",
]
