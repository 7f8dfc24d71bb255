"""The ``Cache`` protocol, the clocks and argument checks every cache shares, and the
in-process ``MemoryCache``. Re-exported by ``toolnexus.cache``."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Protocol, runtime_checkable

from ..core import ConfigError

__all__ = [
    "Cache",
    "Clock",
    "MemoryCache",
    "check_item",
    "check_limits",
    "memory_cache",
    "monotonic_ms",
    "wall_ms",
]

#: A clock in milliseconds. Injected by tests so TTL expiry is checked without sleeping.
Clock = Callable[[], float]


def wall_ms() -> float:
    # Wall time, not monotonic: a SQLite entry's expiry is read by other processes, which share
    # no monotonic origin with the writer.
    return time.time() * 1000.0


def monotonic_ms() -> float:
    return time.monotonic() * 1000.0


@runtime_checkable
class Cache(Protocol):
    """What ``create_classifier(cache=...)`` needs: two methods over strings.

    ``get`` returns the stored string or ``None`` (absent or expired); ``set`` stores one.
    Implementations must be safe to call from several tasks at once.
    """

    def get(self, key: str) -> str | None: ...

    def set(self, key: str, value: str) -> None: ...


def check_limits(ttl_ms: int, max_entries: int | None = None) -> None:
    if isinstance(ttl_ms, bool) or not isinstance(ttl_ms, int) or ttl_ms < 0:
        raise ConfigError(f"classifier: cache ttl_ms must be a whole number >= 0, got {ttl_ms!r}")
    if max_entries is not None and (
        isinstance(max_entries, bool) or not isinstance(max_entries, int) or max_entries < 0
    ):
        raise ConfigError(
            f"classifier: cache max_entries must be a whole number >= 0, got {max_entries!r}"
        )


def check_item(key: object, value: object | None = None, *, setting: bool = False) -> None:
    if not isinstance(key, str):
        raise ConfigError(f"classifier: cache key must be a string, got {type(key).__name__}")
    if setting and not isinstance(value, str):
        raise ConfigError(f"classifier: cache value must be a string, got {type(value).__name__}")


class MemoryCache:
    """An in-process cache, safe for concurrent use from threads and asyncio tasks.

    ``ttl_ms=0`` means no expiry; ``max_entries=0`` means unbounded. Over ``max_entries`` the
    OLDEST-INSERTED entries go first: insertion order, not LRU, so a ``get`` never reorders.
    Re-setting a key that is present counts as a NEW insertion: it takes the new value, a fresh
    TTL, and moves to the newest position (the entry was written now, so it is the youngest).
    """

    def __init__(self, ttl_ms: int = 0, max_entries: int = 0, *, clock: Clock | None = None):
        check_limits(ttl_ms, max_entries)
        self.ttl_ms = ttl_ms
        self.max_entries = max_entries
        self._clock = clock or monotonic_ms
        # key -> (value, expires_at_ms or None); the dict's order IS the insertion order.
        self._entries: OrderedDict[str, tuple[str, float | None]] = OrderedDict()
        # A plain lock is task-safe too: nothing awaits while holding it.
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"MemoryCache(ttl_ms={self.ttl_ms}, max_entries={self.max_entries})"

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def get(self, key: str) -> str | None:
        check_item(key)
        with self._lock:
            hit = self._entries.get(key)
            if hit is None:
                return None
            value, expires = hit
            if expires is not None and self._clock() >= expires:
                del self._entries[key]
                return None
            return value

    def set(self, key: str, value: str) -> None:
        check_item(key, value, setting=True)
        with self._lock:
            expires = self._clock() + self.ttl_ms if self.ttl_ms else None
            self._entries.pop(key, None)
            self._entries[key] = (value, expires)
            if self.max_entries:
                while len(self._entries) > self.max_entries:
                    self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


def memory_cache(ttl_ms: int = 0, max_entries: int = 0) -> MemoryCache:
    """Seed 004 ``memory-cache``: an in-process ``get``/``set`` cache, safe for concurrent use.
    ``ttl_ms`` 0 => no expiry; ``max_entries`` 0 => unbounded; over max the OLDEST-INSERTED
    entries go first (see ``MemoryCache`` for re-setting a key)."""
    return MemoryCache(ttl_ms, max_entries)
