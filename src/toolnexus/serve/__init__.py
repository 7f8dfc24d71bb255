"""``toolnexus serve``: a local System One server for tests, demos and fault drills.

It answers ``POST /v1/systemone`` and ``GET /v1/models`` (and the same under ``/v1`` for a
toolnexus base URL) from exactly one source: recordings (``replay``), a deterministic synthetic
model (``synthetic``), or a real endpoint it forwards to and records (``proxy`` + ``record``).
It injects faults on request, and enforces an account's limits per key (``rate_limit``,
``token_limit``: 429 with ``Retry-After`` and ``retry-after-ms``, see ``limits.py``). From a
test suite::

    from toolnexus.serve import serve

    async with serve(synthetic=True, faults="429,503", fault_rate=0.2) as url:
        client = TypeSafeClient(base_url=url, api_key="anything")          # official SDK
        judge = create_classifier(base_url=f"{url}/v1", api_key_env=...)    # toolnexus

This package imports aiohttp.web, so ``import toolnexus`` never imports it: ``serve`` is
exported from here, not from the top-level namespace (where it would also shadow this
subpackage's name).
"""

from __future__ import annotations

TYPE_CHECKING = False

# Names are imported on first use (PEP 562): the CLI builds ``toolnexus serve``'s flags from
# ``serve.options`` on every start, and must not pay for aiohttp.web to do it. The imports below
# are what a reader and mypy see; ``_LAZY`` is the same list for the runtime (a test holds them
# equal).
if TYPE_CHECKING:
    from ..core import PLACEHOLDER, PLACEHOLDER_FIELD
    from .faults import CLI_FAULTS, Fault, parse_faults
    from .foreground import run as run
    from .limits import Limits, key_label
    from .options import DEFAULT_MAX_BODY_BYTES, ServeOptions
    from .proxy import upstream_base as upstream_base
    from .replay import ReplayIndex
    from .rules import Reject
    from .script import Script, ScriptedReply, ScriptedRequest
    from .server import MODELS, Server, serve
    from .synthetic import input_tokens, synthesize
    from .wire import WireRequest, read_request

_LAZY: dict[str, tuple[str, ...]] = {
    # what a synthetic answer of a raw question type says: defined in the core, named here too
    ".core": (
        "PLACEHOLDER",
        "PLACEHOLDER_FIELD",
    ),
    "faults": (
        "CLI_FAULTS",
        "Fault",
        "parse_faults",
    ),
    "foreground": ("run",),  # what `toolnexus serve` runs, until SIGINT or SIGTERM
    "limits": (
        "Limits",
        "key_label",
    ),
    "options": (
        "DEFAULT_MAX_BODY_BYTES",
        "ServeOptions",
    ),
    "proxy": ("upstream_base",),
    "replay": ("ReplayIndex",),
    "rules": ("Reject",),
    "script": (
        "Script",
        "ScriptedReply",
        "ScriptedRequest",
    ),
    "server": (
        "MODELS",
        "Server",
        "serve",
    ),
    "synthetic": (
        "input_tokens",
        "synthesize",
    ),
    "wire": (
        "WireRequest",
        "read_request",
    ),
}
_WHERE = {name: module for module, names in _LAZY.items() for name in names}
__all__ = [
    "CLI_FAULTS",
    "DEFAULT_MAX_BODY_BYTES",
    "MODELS",
    "PLACEHOLDER",
    "PLACEHOLDER_FIELD",
    "Fault",
    "Limits",
    "Reject",
    "ReplayIndex",
    "Script",
    "ScriptedReply",
    "ScriptedRequest",
    "ServeOptions",
    "Server",
    "WireRequest",
    "input_tokens",
    "key_label",
    "parse_faults",
    "read_request",
    "serve",
    "synthesize",
]

if not TYPE_CHECKING:  # mypy resolves the names through the imports above

    def __getattr__(name: str) -> object:
        module = _WHERE.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        from importlib import import_module

        value = getattr(import_module(f".{module}", __name__), name)
        globals()[name] = value
        return value
