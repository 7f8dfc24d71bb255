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

import os
import sqlite3
import threading
import time
import weakref
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


#: A buffered entry: (value, created_ms, expires_ms or None).
_Entry = tuple[str, int, int | None]


def _connect(path: Path, busy_timeout_ms: int) -> sqlite3.Connection:
    conn = sqlite3.connect(
        path,
        timeout=busy_timeout_ms / 1000.0,
        isolation_level=None,  # autocommit; transactions are explicit
        check_same_thread=False,  # each connection is used under one lock, from any thread
    )
    conn.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
    return conn


class _Writer:
    """The write side of a ``SqliteCache``: a buffer of entries not yet committed, a connection
    of its own, and a daemon thread that commits the buffer, one transaction per batch.

    It holds no reference to its ``SqliteCache``, so a cache that nobody closed is still flushed
    by ``weakref.finalize`` when it is collected or when the interpreter exits.
    """

    def __init__(
        self,
        path: Path,
        conn: sqlite3.Connection,
        *,
        flush_ms: int,
        batch_size: int,
        error: Callable[[str, BaseException], CacheError],
    ) -> None:
        self.path = path
        self.conn: sqlite3.Connection | None = conn
        self.flush_s = flush_ms / 1000.0
        self.batch_size = batch_size
        self.error = error
        self.cond = threading.Condition()
        #: set() but not yet taken by the writer; newest value per key
        self.pending: dict[str, _Entry] = {}
        #: taken by the writer, being committed: still served by get()
        self.inflight: dict[str, _Entry] = {}
        #: a commit that failed, raised by the next set/flush/close
        self.failure: CacheError | None = None
        self.waiters = 0  # flush() calls waiting: the writer commits at once, not at the deadline
        self.stopping = False
        self.thread: threading.Thread | None = None

    def lookup(self, key: str) -> _Entry | None:
        with self.cond:
            return self.pending.get(key) or self.inflight.get(key)

    def put(self, key: str, entry: _Entry) -> None:
        with self.cond:
            self._raise_failure()
            # Back-pressure, so memory stays bounded if the disk cannot keep up: the writer
            # commits a batch in far less time than a batch of requests takes.
            while len(self.pending) >= 16 * self.batch_size and self.thread is not None:
                self.cond.wait(0.1)
                self._raise_failure()
            self.pending[key] = entry
            if self.thread is None:
                self.thread = threading.Thread(
                    target=self._run, name=f"toolnexus-cache-writer {self.path.name}", daemon=True
                )
                self.thread.start()
            # Wake the writer only when it has something new to decide: a first entry to wait
            # on, or a full batch. A wake-up per set would cost a thread switch per answer.
            if len(self.pending) == 1 or len(self.pending) >= self.batch_size:
                self.cond.notify_all()

    def discard_pending(self) -> None:
        with self.cond:
            self.pending.clear()

    def flush(self) -> None:
        """Return once every entry put so far is committed (or raise why it was not)."""
        with self.cond:
            self.waiters += 1
            self.cond.notify_all()
            try:
                while (self.pending or self.inflight) and self._alive():
                    self.cond.wait(0.1)
            finally:
                self.waiters -= 1
            if self.pending:  # the thread is gone (interpreter shutdown): commit here
                batch, self.pending = self.pending, {}
                self._commit_or_record(batch)
            self._raise_failure()

    def close(self) -> CacheError | None:
        """Flush, stop the thread and close the connection; the failure, if any, is returned."""
        failure = None
        try:
            self.flush()
        except CacheError as e:
            failure = e
        with self.cond:
            self.stopping = True
            self.cond.notify_all()
        if self.thread is not None and self.thread is not threading.current_thread():
            self.thread.join()
        with self.cond:
            if self.conn is not None:
                self.conn.close()
                self.conn = None
            failure, self.failure = failure or self.failure, None
        return failure

    def _alive(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    def _raise_failure(self) -> None:
        if self.failure is not None:
            failure, self.failure = self.failure, None
            raise failure

    def _run(self) -> None:
        while True:
            with self.cond:
                while not self.pending and not self.stopping:
                    self.cond.wait()
                if not self.pending:
                    return
                # Let the batch fill: commit when it is full, when someone flushes, when the
                # cache closes, or flush_ms after the batch started.
                deadline = time.monotonic() + self.flush_s
                while len(self.pending) < self.batch_size and not (self.stopping or self.waiters):
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    self.cond.wait(left)
                batch, self.pending = self.pending, {}
                self.inflight = batch
            self._commit_or_record(batch)

    def _commit_or_record(self, batch: dict[str, _Entry]) -> None:
        failure = None
        try:
            self._commit(batch)
        except sqlite3.Error as e:
            failure = self.error(f"write of {len(batch)} entries failed", e)
        with self.cond:
            self.inflight = {}
            if failure is not None and self.failure is None:
                self.failure = failure
            self.cond.notify_all()

    def _commit(self, batch: dict[str, _Entry]) -> None:
        conn = self.conn
        if conn is None:
            raise sqlite3.ProgrammingError("the cache is closed")
        # IMMEDIATE takes the write lock up front, so the busy timeout applies here rather than
        # as a failed lock upgrade in the middle of the transaction.
        items = batch.items()
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany(
                "INSERT OR REPLACE INTO entries (key, value, created_ms, expires_ms) "
                "VALUES (?, ?, ?, ?)",
                [(key, value, created, expires) for key, (value, created, expires) in items],
            )
            # What a set at the batch's last write time would have purged: never its own
            # entries, whose expiry is after their creation.
            newest = max(created for _, created, _ in batch.values())
            conn.execute(
                "DELETE FROM entries WHERE expires_ms IS NOT NULL AND expires_ms <= ?", (newest,)
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise


def _shutdown(writer: _Writer, reader: sqlite3.Connection) -> CacheError | None:
    try:
        return writer.close()
    finally:
        reader.close()


def _is_damage(e: BaseException) -> bool:
    """A file that is not a readable cache, as opposed to a busy or unwritable one."""
    if isinstance(e, sqlite3.OperationalError):
        text = str(e)
        return text.startswith(("no such column", "no such table", "table entries has"))
    return isinstance(e, sqlite3.DatabaseError) and not isinstance(e, sqlite3.IntegrityError)


class SqliteCache:
    """The persistent cache for hosts and the CLI: one SQLite file, safe for several threads and
    several processes at once.

    - Writes are batched off the caller's thread: ``set`` buffers the entry and returns, and a
      writer thread commits the buffer as ONE ``BEGIN IMMEDIATE`` transaction of
      ``INSERT OR REPLACE``s, as soon as ``batch_size`` entries wait or ``flush_ms`` after the
      first of them. So an event loop that caches each answer never waits on the disk.
    - Reads see this process's own writes at once (``get`` looks in the buffer first); another
      process sees an entry once its batch is committed: the old value or the new one, never
      half of one. ``flush()`` waits until everything set so far is committed; ``close()``
      flushes, and so does interpreter exit (or garbage collection) for a cache never closed.
    - A crash (a kill, a power cut) loses at most the entries not yet committed, which costs one
      request each on the next run; a batch is one transaction, so the file is never left
      half-written. WAL mode, so readers never block the writer; a busy timeout
      (``busy_timeout_ms``) so a process waits its turn instead of failing on a locked database.
    - ``ttl_ms`` (0 = no expiry) stamps each entry at ``set`` time with a WALL-CLOCK expiry
      (processes share no other clock). An expired entry is never returned; it is deleted when
      read, and each committed batch purges whatever had expired when its last entry was set.
    - A write that fails in the background (disk full, a lock held past the busy timeout) is
      raised as ``CacheError`` by the next ``set``, ``flush`` or ``close``.

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
        flush_ms: int = 50,
        batch_size: int = 512,
    ) -> None:
        _check_limits(ttl_ms)
        for name, value, low in (("flush_ms", flush_ms, 0), ("batch_size", batch_size, 1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ConfigError(
                    f"classifier: cache {name} must be a whole number >= {low}, got {value!r}"
                )
        if not isinstance(path, str | os.PathLike) or str(path) == "":
            raise ConfigError(
                f"classifier: SqliteCache takes a file path, got {type(path).__name__}"
            )
        self.path = Path(path).expanduser()
        self.ttl_ms = ttl_ms
        self._clock = clock or _wall_ms
        self._lock = threading.Lock()  # guards the read connection
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn: sqlite3.Connection | None = _connect(self.path, busy_timeout_ms)
            self._conn.execute("PRAGMA journal_mode=WAL")
            # NORMAL is durable across application crashes in WAL mode; a lost entry after a
            # power cut costs one request, which is what a cache miss costs anyway.
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.executescript(_SCHEMA)
            writes = _connect(self.path, busy_timeout_ms)
            writes.execute("PRAGMA synchronous=NORMAL")
        except (OSError, sqlite3.Error) as e:
            raise self._error("cannot open", e) from None
        self._writer = _Writer(
            self.path, writes, flush_ms=flush_ms, batch_size=batch_size, error=self._error
        )
        self._finalizer = weakref.finalize(self, _shutdown, self._writer, self._conn)

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
        if _is_damage(e):
            return CacheError(
                f"classifier: cache {self.path} is damaged ({e}); delete that file "
                "(`toolnexus cache clear` does) and the cache starts empty",
                str(self.path),
                damaged=True,
            )
        return CacheError(f"classifier: cache {self.path}: {what}: {e}", str(self.path))

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise CacheError(f"classifier: cache {self.path} is closed", str(self.path))
        return self._conn

    def _now(self) -> int:
        return int(self._clock())

    def get(self, key: str) -> str | None:
        """The stored value, or ``None`` when absent or expired (an expired entry is deleted).
        An entry this process set is seen at once, committed or not."""
        _check_item(key)
        with self._lock:
            self._connection()
        buffered = self._writer.lookup(key)
        if buffered is not None:
            value, _, expires = buffered
            return None if expires is not None and self._now() >= expires else value
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
        """Store ``value`` under ``key``, replacing any previous value. Buffered: committed
        atomically with its batch shortly after (see the class docstring)."""
        _check_item(key, value, setting=True)
        with self._lock:
            self._connection()
        now = self._now()
        self._writer.put(key, (value, now, now + self.ttl_ms if self.ttl_ms else None))

    def flush(self) -> None:
        """Wait until every entry set so far is committed to the file."""
        with self._lock:
            self._connection()
        self._writer.flush()

    def stats(self) -> CacheStats:
        """Live and expired entry counts, and the bytes on disk (database + WAL + shm)."""
        self.flush()
        with self._lock:
            conn = self._connection()
            try:
                # Only entries a get() could return are claimed: a damaged file is an error
                # (quick_check), and a row whose key or value is not text is not counted.
                check = conn.execute("PRAGMA quick_check").fetchone()
                if check is None or check[0] != "ok":
                    raise sqlite3.DatabaseError(
                        f"quick_check: {check[0] if check else 'no answer'}"
                    )
                live, expired = conn.execute(
                    "SELECT "
                    "COALESCE(SUM(expires_ms IS NULL OR expires_ms > ?), 0), "
                    "COALESCE(SUM(expires_ms IS NOT NULL AND expires_ms <= ?), 0) "
                    "FROM entries WHERE typeof(key) = 'text' AND typeof(value) = 'text'",
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
        """Delete every entry (buffered ones too); returns how many committed entries were
        removed. The file is then compacted when no other process holds it open mid-read
        (otherwise it shrinks on a later clear)."""
        self._writer.discard_pending()
        self.flush()  # a batch being committed lands before the delete, not after it
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
        """Commit what is buffered and close. Safe to call twice; ``get``/``set`` afterwards
        are errors. Raises ``CacheError`` if a buffered write could not be committed."""
        with self._lock:
            if self._conn is None:
                return
            self._conn = None
        failure = self._finalizer()
        if failure is not None:
            raise failure
