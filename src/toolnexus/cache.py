"""Decision caches: the ``Cache`` protocol, an in-process memory cache, a SQLite cache.

A cache is opt-in and serves the ``systemone`` style only (seed 004 ``:cache``). The classifier
stores DECISION WIRE BODIES (the JSON text of a reply) and the served-model entries of
``model_cache_key``, under keys that are sha256 hex digests from ``canonical.decision_cache_key``
and ``canonical.model_cache_key``. A key is a digest of the endpoint (``${ENV}`` unexpanded),
model, questions and state: it never contains a credential, and neither does a value, so a cache
file holds nothing secret that the state itself did not.

toolnexus persists nothing by itself: a host persists by handing ``create_classifier`` an object
with ``get``/``set``; ``SqliteCache`` is the one the CLI uses.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol, runtime_checkable

from .errors import CacheError, ConfigError

__all__ = [
    "Cache",
    "CacheStats",
    "MemoryCache",
    "SqliteCache",
    "memory_cache",
]

#: A clock in milliseconds. Injected by tests so TTL expiry is checked without sleeping.
Clock = Callable[[], float]


def _wall_ms() -> float:
    # Wall time, not monotonic: a SQLite entry's expiry is read by other processes, which share
    # no monotonic origin with the writer.
    return time.time() * 1000.0


def _monotonic_ms() -> float:
    return time.monotonic() * 1000.0


@runtime_checkable
class Cache(Protocol):
    """What ``create_classifier(cache=...)`` needs: two methods over strings.

    ``get`` returns the stored string or ``None`` (absent or expired); ``set`` stores one.
    Implementations must be safe to call from several tasks at once.
    """

    def get(self, key: str) -> str | None: ...

    def set(self, key: str, value: str) -> None: ...


def _check_limits(ttl_ms: int, max_entries: int | None = None) -> None:
    if isinstance(ttl_ms, bool) or not isinstance(ttl_ms, int) or ttl_ms < 0:
        raise ConfigError(f"classifier: cache ttl_ms must be a whole number >= 0, got {ttl_ms!r}")
    if max_entries is not None and (
        isinstance(max_entries, bool) or not isinstance(max_entries, int) or max_entries < 0
    ):
        raise ConfigError(
            f"classifier: cache max_entries must be a whole number >= 0, got {max_entries!r}"
        )


def _check_item(key: object, value: object | None = None, *, setting: bool = False) -> None:
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
        _check_limits(ttl_ms, max_entries)
        self.ttl_ms = ttl_ms
        self.max_entries = max_entries
        self._clock = clock or _monotonic_ms
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
        _check_item(key)
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
        _check_item(key, value, setting=True)
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


@dataclass(frozen=True)
class CacheStats:
    """What ``toolnexus cache stats`` shows. ``entries`` are live (unexpired) entries;
    ``expired`` are stored but past their TTL, awaiting the lazy purge; ``bytes`` is the size on
    disk of the database with its WAL and shared-memory files."""

    path: str
    entries: int
    expired: int
    bytes: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "entries": self.entries,
            "expired": self.expired,
            "bytes": self.bytes,
        }


_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    key        TEXT PRIMARY KEY,
    value      TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    expires_ms INTEGER
);
CREATE INDEX IF NOT EXISTS entries_expires ON entries(expires_ms) WHERE expires_ms IS NOT NULL;
"""


class SqliteCache:
    """The persistent cache for hosts and the CLI: one SQLite file, safe for several threads and
    several processes at once.

    - WAL mode, so readers never block the writer; a busy timeout (``busy_timeout_ms``) so a
      process waits its turn instead of failing on a locked database.
    - Each ``set`` is its own ``BEGIN IMMEDIATE`` transaction with ``INSERT OR REPLACE``: another
      process sees the old value or the new one, never half of one.
    - ``ttl_ms`` (0 = no expiry) stamps each entry on write with a WALL-CLOCK expiry (processes
      share no other clock). An expired entry is never returned; it is deleted when read, and
      every ``set`` purges whatever else has expired.
    - One connection shared by the threads of this process, guarded by a lock.

    Values are the decision wire bodies the classifier caches; keys are sha256 hex digests. The
    parent directory is created. Use as a context manager, or call ``close()``.
    """

    def __init__(
        self,
        path: str | Path,
        ttl_ms: int = 0,
        *,
        busy_timeout_ms: int = 5000,
        clock: Clock | None = None,
    ) -> None:
        _check_limits(ttl_ms)
        self.path = Path(path).expanduser()
        self.ttl_ms = ttl_ms
        self._clock = clock or _wall_ms
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn: sqlite3.Connection | None = sqlite3.connect(
                self.path,
                timeout=busy_timeout_ms / 1000.0,
                isolation_level=None,  # autocommit; transactions are explicit below
                check_same_thread=False,  # shared across threads under self._lock
            )
            self._conn.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
            self._conn.execute("PRAGMA journal_mode=WAL")
            # NORMAL is durable across application crashes in WAL mode; a lost entry after a
            # power cut costs one request, which is what a cache miss costs anyway.
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.executescript(_SCHEMA)
        except (OSError, sqlite3.Error) as e:
            raise self._error("cannot open", e) from None

    def __repr__(self) -> str:
        return f"SqliteCache(path={str(self.path)!r}, ttl_ms={self.ttl_ms})"

    def __enter__(self) -> SqliteCache:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _error(self, what: str, e: BaseException) -> CacheError:
        return CacheError(f"classifier: cache {self.path}: {what}: {e}", str(self.path))

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise CacheError(f"classifier: cache {self.path} is closed", str(self.path))
        return self._conn

    def _now(self) -> int:
        return int(self._clock())

    def get(self, key: str) -> str | None:
        """The stored value, or ``None`` when absent or expired (an expired entry is deleted)."""
        _check_item(key)
        with self._lock:
            conn = self._connection()
            try:
                row = conn.execute(
                    "SELECT value, expires_ms FROM entries WHERE key = ?", (key,)
                ).fetchone()
                if row is None:
                    return None
                value, expires = row
                if expires is not None and self._now() >= expires:
                    # Conditional on the expiry we read: another process may have re-set it.
                    conn.execute(
                        "DELETE FROM entries WHERE key = ? AND expires_ms = ?", (key, expires)
                    )
                    return None
                return str(value)
            except sqlite3.Error as e:
                raise self._error("read failed", e) from None

    def set(self, key: str, value: str) -> None:
        """Store ``value`` under ``key`` atomically, replacing any previous value."""
        _check_item(key, value, setting=True)
        with self._lock:
            conn = self._connection()
            now = self._now()
            expires = now + self.ttl_ms if self.ttl_ms else None
            try:
                # IMMEDIATE takes the write lock up front, so the busy timeout applies here
                # rather than as a failed lock upgrade in the middle of the transaction.
                conn.execute("BEGIN IMMEDIATE")
                try:
                    conn.execute(
                        "INSERT OR REPLACE INTO entries (key, value, created_ms, expires_ms) "
                        "VALUES (?, ?, ?, ?)",
                        (key, value, now, expires),
                    )
                    conn.execute(
                        "DELETE FROM entries WHERE expires_ms IS NOT NULL AND expires_ms <= ?",
                        (now,),
                    )
                    conn.execute("COMMIT")
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
            except sqlite3.Error as e:
                raise self._error("write failed", e) from None

    def stats(self) -> CacheStats:
        """Live and expired entry counts, and the bytes on disk (database + WAL + shm)."""
        with self._lock:
            conn = self._connection()
            try:
                live, expired = conn.execute(
                    "SELECT "
                    "COALESCE(SUM(expires_ms IS NULL OR expires_ms > ?), 0), "
                    "COALESCE(SUM(expires_ms IS NOT NULL AND expires_ms <= ?), 0) "
                    "FROM entries",
                    (self._now(), self._now()),
                ).fetchone()
            except sqlite3.Error as e:
                raise self._error("stats failed", e) from None
        size = 0
        for suffix in ("", "-wal", "-shm"):
            f = self.path.with_name(self.path.name + suffix)
            if f.exists():
                size += f.stat().st_size
        return CacheStats(str(self.path), int(live), int(expired), size)

    def clear(self) -> int:
        """Delete every entry; returns how many were removed. The file is then compacted when no
        other process holds it open mid-read (otherwise it shrinks on a later clear)."""
        with self._lock:
            conn = self._connection()
            try:
                removed = conn.execute("DELETE FROM entries").rowcount
            except sqlite3.Error as e:
                raise self._error("clear failed", e) from None
            try:
                conn.execute("VACUUM")
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except sqlite3.OperationalError:
                # Another process is reading: the entries are gone, only the shrink waits.
                pass
            return int(removed)

    def close(self) -> None:
        """Close the connection. Safe to call twice; ``get``/``set`` afterwards are errors."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
