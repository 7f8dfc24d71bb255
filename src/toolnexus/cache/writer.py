"""The SQLite side of ``SqliteCache`` that runs on a thread of its own: the schema, opening a
connection, and ``Writer``, which commits buffered entries as one transaction per batch."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

from ..core import CacheError

__all__ = ["SCHEMA", "SCHEMA_VERSION", "Entry", "Writer", "connect"]


SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    key        TEXT PRIMARY KEY,
    value      TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    expires_ms INTEGER
);
CREATE INDEX IF NOT EXISTS entries_expires ON entries(expires_ms) WHERE expires_ms IS NOT NULL;
"""
#: ``PRAGMA user_version`` of a file with SCHEMA (0 is a file from before it was numbered, or a
#: new one). A file with a higher number was written by a newer toolnexus: it is refused, never
#: read or written with this schema.
SCHEMA_VERSION = 1


#: A buffered entry: (value, created_ms, expires_ms or None).
Entry = tuple[str, int, int | None]


def connect(path: Path, busy_timeout_ms: int) -> sqlite3.Connection:
    conn = sqlite3.connect(
        path,
        timeout=busy_timeout_ms / 1000.0,
        isolation_level=None,  # autocommit; transactions are explicit
        check_same_thread=False,  # each connection is used under one lock, from any thread
    )
    conn.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
    return conn


class Writer:
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
        self.pending: dict[str, Entry] = {}
        #: taken by the writer, being committed: still served by get()
        self.inflight: dict[str, Entry] = {}
        #: a commit that failed, raised by the next set/flush/close
        self.failure: CacheError | None = None
        self.waiters = 0  # flush() calls waiting: the writer commits at once, not at the deadline
        self.stopping = False
        self.thread: threading.Thread | None = None

    def lookup(self, key: str) -> Entry | None:
        with self.cond:
            return self.pending.get(key) or self.inflight.get(key)

    def put(self, key: str, entry: Entry) -> None:
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

    def _commit_or_record(self, batch: dict[str, Entry]) -> None:
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

    def _commit(self, batch: dict[str, Entry]) -> None:
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
