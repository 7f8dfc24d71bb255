"""``SqliteCache``: the persistent decision cache (one SQLite file, batched writes on a thread
of its own, safe for several threads and processes) and its ``CacheStats``. Re-exported by
``toolnexus.cache``."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
import weakref
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from ..core import CacheError, ConfigError
from .memory import Clock, check_item, check_limits, wall_ms
from .writer import SCHEMA, SCHEMA_VERSION, Writer, connect

__all__ = ["CacheStats", "SqliteCache"]


def _open(path: Path, busy_timeout_ms: int) -> sqlite3.Connection:
    """The read connection, with WAL on and the schema in place.

    Two processes opening one new file at once: switching to WAL takes an exclusive lock, and
    SQLite answers "database is locked" at once instead of calling the busy handler when
    waiting could deadlock, so ``busy_timeout`` alone does not cover it (measured: one of two
    processes failed to open). The whole sequence is retried, with a short growing pause,
    until the busy timeout has passed.
    """
    deadline = time.monotonic() + busy_timeout_ms / 1000
    pause = 0.005
    while True:
        conn = connect(path, busy_timeout_ms)
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise NewerSchema(version)
            conn.execute("PRAGMA journal_mode=WAL")
            # NORMAL is durable across application crashes in WAL mode; a lost entry after a
            # power cut costs one request, which is what a cache miss costs anyway.
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.executescript(SCHEMA)
            if version < SCHEMA_VERSION:
                conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            return conn
        except sqlite3.OperationalError as e:
            conn.close()
            if "locked" not in str(e) and "busy" not in str(e):
                raise
            if time.monotonic() >= deadline:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 0.1)
        except BaseException:
            conn.close()
            raise


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


def _shutdown(writer: Writer, reader: sqlite3.Connection) -> CacheError | None:
    try:
        return writer.close()
    finally:
        reader.close()


class NewerSchema(sqlite3.DatabaseError):
    """A cache file whose schema number is above ``SCHEMA_VERSION``."""

    def __init__(self, version: int) -> None:
        super().__init__(f"schema {version}, this toolnexus reads up to {SCHEMA_VERSION}")
        self.version = version


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
        check_limits(ttl_ms)
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
        self._clock = clock or wall_ms
        self._lock = threading.Lock()  # guards the read connection
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn: sqlite3.Connection | None = _open(self.path, busy_timeout_ms)
            writes = connect(self.path, busy_timeout_ms)
            writes.execute("PRAGMA synchronous=NORMAL")
        except (OSError, sqlite3.Error) as e:
            raise self._error("cannot open", e) from None
        self._writer = Writer(
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
        if isinstance(e, NewerSchema):
            return CacheError(
                f"classifier: cache {self.path} was written by a newer toolnexus ({e}); "
                "upgrade, or delete that file (`toolnexus cache clear` does) and the cache "
                "starts empty",
                str(self.path),
                damaged=True,
            )
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
        check_item(key)
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
        check_item(key, value, setting=True)
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
