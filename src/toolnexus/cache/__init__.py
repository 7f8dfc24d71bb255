"""Decision caches: the ``Cache`` protocol, an in-process memory cache, a SQLite cache.

A cache is opt-in and serves the ``systemone`` style only (seed 004 ``:cache``). The classifier
stores DECISION WIRE BODIES (the JSON text of a reply) and the served-model entries of
``model_cache_key``, under keys that are sha256 hex digests from ``canonical.decision_cache_key``
and ``canonical.model_cache_key``. A key is a digest of the endpoint (``${ENV}`` unexpanded),
model, questions and state: it never contains a credential, and neither does a value, so a cache
file holds nothing secret that the state itself did not.

toolnexus persists nothing by itself: a host persists by handing ``create_classifier`` an object
with ``get``/``set``; ``SqliteCache`` is the one the CLI uses.

Split by concern: ``memory`` holds the protocol, the checks every cache shares and the
in-process cache; ``sqlite`` the persistent one, built on them.
"""

from __future__ import annotations

from .memory import Cache, MemoryCache, memory_cache
from .sqlite import CacheStats, SqliteCache

__all__ = [
    "Cache",
    "CacheStats",
    "MemoryCache",
    "SqliteCache",
    "memory_cache",
]
