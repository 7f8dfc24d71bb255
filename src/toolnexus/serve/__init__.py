"""``toolnexus serve``: a local System One server for tests, demos and fault drills.

It answers ``POST /v1/systemone`` and ``GET /v1/models`` (and the same under ``/v1`` for a
toolnexus base URL) from exactly one source: recordings (``replay``), a deterministic synthetic
model (``synthetic``), or a real endpoint it forwards to and records (``proxy`` + ``record``).
It injects faults on request. From a test suite::

    from toolnexus.serve import serve

    async with serve(synthetic=True, faults="429,503", fault_rate=0.2) as url:
        client = TypeSafeClient(base_url=url, api_key="anything")          # official SDK
        judge = create_classifier(base_url=f"{url}/v1", api_key_env=...)    # toolnexus

This package imports aiohttp.web, so ``import toolnexus`` never imports it: ``serve`` is
exported from here, not from the top-level namespace (where it would also shadow this
subpackage's name).
"""

from __future__ import annotations

from .faults import CLI_FAULTS, Fault, parse_faults
from .options import DEFAULT_MAX_BODY_BYTES, ServeOptions
from .replay import ReplayIndex
from .rules import Reject
from .script import Script, ScriptedReply, ScriptedRequest
from .server import MODELS, Server, serve
from .synthetic import PLACEHOLDER, PLACEHOLDER_FIELD, synthesize
from .wire import WireRequest, read_request

__all__ = [
    "CLI_FAULTS",
    "DEFAULT_MAX_BODY_BYTES",
    "MODELS",
    "PLACEHOLDER",
    "PLACEHOLDER_FIELD",
    "Fault",
    "Reject",
    "ReplayIndex",
    "Script",
    "ScriptedReply",
    "ScriptedRequest",
    "ServeOptions",
    "Server",
    "WireRequest",
    "parse_faults",
    "read_request",
    "serve",
    "synthesize",
]
