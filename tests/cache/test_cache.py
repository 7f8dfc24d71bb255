"""Caches: seed 004 ``memory-cache`` and the persistent ``SqliteCache``.

Seed 004: "An in-process {:get :set} cache, safe for concurrent use. ttl-ms 0 => no expiry;
max 0 => unbounded; over max the OLDEST-INSERTED entries go first."
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from toolnexus.cache import Cache, MemoryCache, SqliteCache, memory_cache
from toolnexus.core.errors import CacheError, ClassifierError, ConfigError


class FakeClock:
    """Milliseconds that move only when a test says so: TTL tests never sleep."""

    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


# --- the protocol ---------------------------------------------------------------------------


def test_both_caches_satisfy_the_cache_protocol(tmp_path: Path) -> None:
    """seed 004 :cache: any object with get(key) -> string|nil and set(key, value)."""
    with SqliteCache(tmp_path / "c.db") as sq:
        assert isinstance(sq, Cache)
    assert isinstance(memory_cache(), Cache)
    assert not isinstance(object(), Cache)


# --- memory cache ---------------------------------------------------------------------------


def test_memory_cache_roundtrip_and_miss() -> None:
    c = memory_cache()
    assert c.get("k") is None
    c.set("k", "v")
    assert c.get("k") == "v"
    c.set("k", "w")
    assert c.get("k") == "w"


@pytest.mark.parametrize(
    ("max_entries", "inserts", "reads", "expected"),
    [
        pytest.param(2, ["a", "b", "c"], ["b"], {"a": None, "b": "b", "c": "c"}, id="oldest-goes"),
        # Insertion order, not LRU: reading "a" does not save it.
        pytest.param(
            2, ["a", "b", "c"], ["a"], {"a": None, "b": "b", "c": "c"}, id="get-does-not-renew"
        ),
        # Re-setting "a" is a new insertion: it becomes the youngest, so "b" goes.
        pytest.param(
            2, ["a", "b", "a", "c"], [], {"a": "a", "b": None, "c": "c"}, id="reset-is-newest"
        ),
        pytest.param(0, ["a", "b", "c", "d"], [], {k: k for k in "abcd"}, id="max-0-unbounded"),
        pytest.param(1, ["a", "b"], [], {"a": None, "b": "b"}, id="max-1"),
    ],
)
def test_memory_cache_evicts_oldest_inserted_first(
    max_entries: int, inserts: list[str], reads: list[str], expected: dict[str, str | None]
) -> None:
    """seed 004: over max the OLDEST-INSERTED entries go first; max 0 => unbounded."""
    c = memory_cache(max_entries=max_entries)
    for i, k in enumerate(inserts):
        if i == len(inserts) - 1:
            for r in reads:
                c.get(r)
        c.set(k, k)
    assert {k: c.get(k) for k in expected} == expected


@pytest.mark.parametrize(
    ("ttl_ms", "advance_ms", "hit"),
    [
        pytest.param(100, 99, True, id="before-expiry"),
        pytest.param(100, 100, False, id="at-expiry"),
        pytest.param(100, 5000, False, id="long-after"),
        pytest.param(0, 10**12, True, id="ttl-0-never-expires"),
    ],
)
def test_memory_cache_ttl(ttl_ms: int, advance_ms: int, hit: bool) -> None:
    """seed 004: ttl-ms 0 => no expiry; an expired entry is not returned."""
    clock = FakeClock()
    c = MemoryCache(ttl_ms=ttl_ms, clock=clock)
    c.set("k", "v")
    clock.now += advance_ms
    assert c.get("k") == ("v" if hit else None)
    assert len(c) == (1 if hit else 0)


def test_memory_cache_reset_refreshes_ttl() -> None:
    clock = FakeClock()
    c = MemoryCache(ttl_ms=100, clock=clock)
    c.set("k", "v1")
    clock.now += 80
    c.set("k", "v2")
    clock.now += 80
    assert c.get("k") == "v2"


def test_memory_cache_is_thread_safe() -> None:
    """seed 004: safe for concurrent use. 8 threads x 500 writes with a bound of 100."""
    c = memory_cache(max_entries=100)
    errors: list[BaseException] = []

    def work(t: int) -> None:
        try:
            for i in range(500):
                c.set(f"{t}-{i}", str(i))
                c.get(f"{t}-{i - 1}")
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=30)
    assert not errors
    assert len(c) == 100


def test_memory_cache_is_task_safe() -> None:
    c = memory_cache()

    async def main() -> None:
        async def task(t: int) -> None:
            for i in range(100):
                c.set(f"{t}-{i}", str(i))
                await asyncio.sleep(0)
                assert c.get(f"{t}-{i}") == str(i)

        await asyncio.gather(*(task(t) for t in range(20)))

    asyncio.run(main())
    assert len(c) == 2000


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        pytest.param({"ttl_ms": -1}, "ttl_ms", id="negative-ttl"),
        pytest.param({"max_entries": -1}, "max_entries", id="negative-max"),
        pytest.param({"ttl_ms": 1.5}, "ttl_ms", id="fractional-ttl"),
        pytest.param({"max_entries": True}, "max_entries", id="bool-max"),
    ],
)
def test_memory_cache_rejects_bad_limits(kwargs: dict[str, object], fragment: str) -> None:
    with pytest.raises(ClassifierError, match=fragment):
        memory_cache(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("key", "value"),
    [pytest.param(1, "v", id="int-key"), pytest.param("k", b"v", id="bytes-value")],
)
def test_caches_take_strings_only(tmp_path: Path, key: object, value: object) -> None:
    """seed 004: set(key, value: string)."""
    with SqliteCache(tmp_path / "c.db") as sq:
        for c in (memory_cache(), sq):
            with pytest.raises(ClassifierError, match="must be a string"):
                c.set(key, value)  # type: ignore[arg-type]


# --- SQLite cache ---------------------------------------------------------------------------


def test_sqlite_creates_parents_uses_wal_and_persists_across_reopen(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "cache.db"
    with SqliteCache(path) as c:
        c.set("k", '{"model":"jev-1.13.0"}')
        c.set("k2", "ünïcode ✓")
    assert path.exists()
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    with SqliteCache(path) as again:
        assert again.get("k") == '{"model":"jev-1.13.0"}'
        assert again.get("k2") == "ünïcode ✓"
        assert again.get("absent") is None


def test_sqlite_set_replaces(tmp_path: Path) -> None:
    with SqliteCache(tmp_path / "c.db") as c:
        c.set("k", "one")
        c.set("k", "two")
        assert c.get("k") == "two"
        assert c.stats().entries == 1


@pytest.mark.parametrize(
    ("ttl_ms", "advance_ms", "hit"),
    [
        pytest.param(1000, 999, True, id="before-expiry"),
        pytest.param(1000, 1000, False, id="at-expiry"),
        pytest.param(0, 10**12, True, id="ttl-0-never-expires"),
    ],
)
def test_sqlite_ttl(tmp_path: Path, ttl_ms: int, advance_ms: int, hit: bool) -> None:
    """TTL support: an expired entry is not returned."""
    clock = FakeClock()
    with SqliteCache(tmp_path / "c.db", ttl_ms=ttl_ms, clock=clock) as c:
        c.set("k", "v")
        clock.now += advance_ms
        assert c.get("k") == ("v" if hit else None)


def test_sqlite_expired_entries_are_purged_lazily(tmp_path: Path) -> None:
    """An expired entry stays on disk until a read of it or a later set purges it."""
    clock = FakeClock()
    path = tmp_path / "c.db"
    with SqliteCache(path, ttl_ms=100, clock=clock) as c:
        c.set("a", "1")
        c.set("b", "2")
        clock.now += 100
        assert c.stats().to_dict() | {"bytes": 0} == {
            "path": str(path),
            "entries": 0,
            "expired": 2,
            "bytes": 0,
        }
        assert c.get("a") is None  # read purges "a"
        assert c.stats().expired == 1
        c.set("c", "3")  # a set purges the rest
        s = c.stats()
        assert (s.entries, s.expired) == (1, 0)


def test_sqlite_ttl_is_read_from_the_entry_not_the_reader(tmp_path: Path) -> None:
    """Expiry is stamped at write time: a reader opened without a TTL still honours it."""
    clock = FakeClock()
    path = tmp_path / "c.db"
    with SqliteCache(path, ttl_ms=50, clock=clock) as writer:
        writer.set("k", "v")
    clock.now += 60
    with SqliteCache(path, clock=clock) as reader:
        assert reader.get("k") is None


def test_sqlite_stats_and_clear(tmp_path: Path) -> None:
    """For `toolnexus cache stats|clear`: entries, bytes on disk, path; clear empties."""
    path = tmp_path / "c.db"
    with SqliteCache(path) as c:
        for i in range(50):
            c.set(f"{i:064x}", "x" * 1000)
        s = c.stats()
        assert (s.path, s.entries, s.expired) == (str(path), 50, 0)
        assert s.bytes >= 50 * 1000
        assert c.clear() == 50
        assert c.get(f"{0:064x}") is None
        after = c.stats()
        assert after.entries == 0
        assert after.bytes < s.bytes


def test_sqlite_close_is_idempotent_and_final(tmp_path: Path) -> None:
    c = SqliteCache(tmp_path / "c.db")
    c.close()
    c.close()
    with pytest.raises(ClassifierError, match="is closed"):
        c.get("k")
    with pytest.raises(ClassifierError, match="is closed"):
        c.set("k", "v")


def test_sqlite_open_failure_is_a_classifier_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(ClassifierError, match="cannot open"):
        SqliteCache(blocker / "c.db")


def test_sqlite_is_thread_safe(tmp_path: Path) -> None:
    """One cache object shared by 8 threads: every write lands, no sqlite error escapes."""
    errors: list[BaseException] = []
    with SqliteCache(tmp_path / "c.db") as c:

        def work(t: int) -> None:
            try:
                for i in range(100):
                    c.set(f"{t}-{i}", str(i))
                    assert c.get(f"{t}-{i}") == str(i)
            except BaseException as e:  # pragma: no cover - reported below
                errors.append(e)

        threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(timeout=60)
        assert not errors
        assert c.stats().entries == 800


def _process_writer(path: str, tag: str, n: int) -> None:
    """Runs in a child process: its own SqliteCache on the shared file. It waits up to 60 s
    for the other's lock (5 s by default): the test is about losing nothing, and a loaded
    machine can hold a commit past 5 s (issue 29 item 2); 60 s is only a hang guard."""
    with SqliteCache(path, busy_timeout_ms=60_000) as c:
        for i in range(n):
            c.set(f"{tag}-{i}", f"{tag}:{i}")
            c.set("shared", f"{tag}:{i}")


def test_sqlite_is_safe_across_processes(tmp_path: Path) -> None:
    """Two processes write the same file at once: every entry lands whole, none is lost."""
    path = str(tmp_path / "c.db")
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_process_writer, args=(path, tag, 200)) for tag in ("p", "q")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=60)
    for p in procs:
        if p.is_alive():  # pragma: no cover - only on a hang
            p.terminate()
            p.join()
    assert [p.exitcode for p in procs] == [0, 0]
    with SqliteCache(path) as c:
        for tag in ("p", "q"):
            for i in range(200):
                assert c.get(f"{tag}-{i}") == f"{tag}:{i}"
        assert c.get("shared") in {"p:199", "q:199"}
        assert c.stats().entries == 401


# --- batched writes (issue 8: "The SQLite decision cache writes in batches off the event loop's
# critical path") ------------------------------------------------------------------------------

#: Long enough that no batch is committed by its deadline while a test looks.
NEVER_MS = 600_000


def _committed(path: Path) -> dict[str, str]:
    """What another connection (as another process would) sees committed in the file."""
    with sqlite3.connect(path) as raw:
        return dict(raw.execute("SELECT key, value FROM entries").fetchall())


def _wait_for(predicate: Callable[[], bool], what: str) -> None:
    """Poll (no fixed sleep): the writer thread commits on its own schedule."""
    deadline = time.monotonic() + 30
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.005)


def test_set_is_buffered_read_your_writes_and_committed_by_flush(tmp_path: Path) -> None:
    """A set returns before the disk is touched; this process reads it at once; flush()
    commits it for everybody else."""
    path = tmp_path / "c.db"
    with SqliteCache(path, flush_ms=NEVER_MS) as c:
        c.set("k", "v1")
        c.set("k", "v2")
        assert c.get("k") == "v2"
        assert _committed(path) == {}
        c.flush()
        assert _committed(path) == {"k": "v2"}


def test_close_commits_what_is_buffered(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    c = SqliteCache(path, flush_ms=NEVER_MS)
    for i in range(100):
        c.set(f"k{i}", str(i))
    c.close()
    assert _committed(path) == {f"k{i}": str(i) for i in range(100)}


def test_a_batch_is_committed_by_its_deadline_without_a_flush(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    with SqliteCache(path, flush_ms=1) as c:
        c.set("k", "v")
        _wait_for(lambda: _committed(path) == {"k": "v"}, "the deadline commit")


def test_a_full_batch_is_committed_at_once(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    with SqliteCache(path, flush_ms=NEVER_MS, batch_size=10) as c:
        for i in range(10):
            c.set(f"k{i}", "v")
        _wait_for(lambda: len(_committed(path)) == 10, "the full batch")


def test_one_transaction_per_batch_not_per_set(tmp_path: Path) -> None:
    """1,000 sets in batches of 500 take at most 2 write transactions (1,000 before)."""
    with SqliteCache(tmp_path / "c.db", flush_ms=NEVER_MS, batch_size=500) as c:
        statements: list[str] = []
        conn = c._writer.conn
        assert conn is not None
        conn.set_trace_callback(statements.append)
        for i in range(1000):
            c.set(f"{i:064x}", "x" * 100)
        c.flush()
        assert c.stats().entries == 1000
    assert 1 <= statements.count("BEGIN IMMEDIATE") <= 2


def test_readers_in_other_threads_see_every_write_while_batches_commit(tmp_path: Path) -> None:
    """Concurrent readers never see a missing or wrong value, whether the entry is still
    buffered, being committed, or committed."""
    errors: list[str] = []
    with SqliteCache(tmp_path / "c.db", flush_ms=1, batch_size=16) as c:
        # One semaphore per reader: reader r reads k{i} only after k{i} was set.
        written = [threading.Semaphore(0) for _ in range(4)]

        def read(sem: threading.Semaphore) -> None:
            for i in range(300):
                sem.acquire()
                got = c.get(f"k{i}")
                if got != str(i):
                    errors.append(f"k{i}: {got!r}")

        readers = [threading.Thread(target=read, args=(sem,)) for sem in written]
        for r in readers:
            r.start()
        for i in range(300):
            c.set(f"k{i}", str(i))
            for sem in written:
                sem.release()
        for r in readers:
            r.join(timeout=60)
    assert errors == []


def _child_reads(path: str, keys: list[str], out: multiprocessing.Queue[list[str | None]]) -> None:
    with SqliteCache(path) as c:
        out.put([c.get(k) for k in keys])


def test_a_second_process_sees_a_batch_once_it_is_committed(tmp_path: Path) -> None:
    """Another process opening the same file sees committed batches only: nothing before the
    flush, everything after it."""
    path = tmp_path / "c.db"
    ctx = multiprocessing.get_context("spawn")
    keys = [f"k{i}" for i in range(50)]

    def child_view() -> list[str | None]:
        out: multiprocessing.Queue[list[str | None]] = ctx.Queue()
        proc = ctx.Process(target=_child_reads, args=(str(path), keys, out))
        proc.start()
        got = out.get(timeout=60)
        proc.join(timeout=60)
        assert proc.exitcode == 0
        return got

    with SqliteCache(path, flush_ms=NEVER_MS) as c:
        for k in keys:
            c.set(k, k.upper())
        assert child_view() == [None] * 50
        c.flush()
        assert child_view() == [k.upper() for k in keys]


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )


def test_a_cache_never_closed_is_committed_at_interpreter_exit(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    done = _python(
        "from toolnexus.cache import SqliteCache\n"
        f"c = SqliteCache({str(path)!r}, flush_ms={NEVER_MS})\n"
        "for i in range(20): c.set(f'k{i}', 'v')\n"
    )
    assert done.returncode == 0, done.stderr
    assert len(_committed(path)) == 20


def test_a_crash_loses_only_the_uncommitted_batch_and_never_corrupts(tmp_path: Path) -> None:
    """A process killed mid-run (os._exit: no close, no exit hooks) leaves a sound file with
    every flushed entry; only what was still buffered is lost."""
    path = tmp_path / "c.db"
    done = _python(
        "import os\n"
        "from toolnexus.cache import SqliteCache\n"
        f"c = SqliteCache({str(path)!r}, flush_ms={NEVER_MS})\n"
        "c.set('kept', 'v'); c.flush()\n"
        "for i in range(50): c.set(f'lost{i}', 'v')\n"
        "os._exit(0)\n"
    )
    assert done.returncode == 0, done.stderr
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert _committed(path) == {"kept": "v"}
    with SqliteCache(path) as again:
        again.set("after", "v")
        assert again.get("kept") == "v" and again.get("lost0") is None


def test_a_failed_background_write_is_raised_by_the_next_flush(tmp_path: Path) -> None:
    """A batch that cannot be committed (here: another connection holds the write lock past the
    busy timeout) is one CacheError naming the cache, raised once, not a silent loss."""
    path = tmp_path / "c.db"
    with SqliteCache(path, busy_timeout_ms=50, flush_ms=NEVER_MS) as c:
        blocker = sqlite3.connect(path, isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")
        c.set("k", "v")
        with pytest.raises(CacheError, match=rf"cache {path}: write of 1 entries failed: .*locked"):
            c.flush()
        blocker.execute("ROLLBACK")
        blocker.close()
        c.flush()  # reported once; the cache goes on working
        c.set("k2", "v2")
        c.flush()
        assert _committed(path) == {"k2": "v2"}


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        pytest.param({"flush_ms": -1}, "flush_ms must be a whole number >= 0", id="flush-ms"),
        pytest.param({"batch_size": 0}, "batch_size must be a whole number >= 1", id="batch-0"),
        pytest.param({"batch_size": True}, "batch_size must be a whole number", id="batch-bool"),
    ],
)
def test_sqlite_batching_options_are_checked(
    tmp_path: Path, kwargs: dict[str, object], fragment: str
) -> None:
    with pytest.raises(ConfigError, match=fragment):
        SqliteCache(tmp_path / "c.db", **kwargs)  # type: ignore[arg-type]


def test_a_failed_final_write_is_raised_by_close(tmp_path: Path) -> None:
    """What close() could not commit is not lost silently: close raises it."""
    path = tmp_path / "c.db"
    c = SqliteCache(path, busy_timeout_ms=50, flush_ms=NEVER_MS)
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    c.set("k", "v")
    try:
        with pytest.raises(CacheError, match="write of 1 entries failed"):
            c.close()
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    c.close()  # closed for good: a second close is quiet
    assert _committed(path) == {}


def test_the_classifier_caches_under_seed_004_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """The style builds decision keys from the question set it encoded once: the keys must be
    exactly ``decision_cache_key`` and ``model_cache_key`` (seed 004), for any state."""
    from loopback import synthesize
    from toolnexus import create_classifier
    from toolnexus.core.canonical import decision_cache_key, model_cache_key
    from toolnexus.core.questions import normalize_questions

    questions = {
        "refund": {"type": "noul", "instructions": "Refund?"},
        "team": {"type": "choice", "instructions": "Team?", "criteria": {"b": "Billing", "t": "T"}},
    }
    served = "jev-1.13.0"  # what the loopback's synthesize says answered "jev-latest"

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=synthesize(json.loads(request.content)))

    monkeypatch.setenv("HOST", "example.invalid")
    monkeypatch.setenv("TYPESAFE_API_KEY", "sk-test-secret-value")
    states: list[object] = ["plain", {"b": [1, 2.5, None], "a": "ünï <&>"}, ["x", {}], ""]
    cache = memory_cache()
    endpoint = "https://${HOST}/v1"

    async def run() -> None:
        async with create_classifier(
            base_url=endpoint, transport=httpx.MockTransport(answer), cache=cache
        ) as judge:
            for state in states:
                await judge.evaluate(state, questions)

    asyncio.run(run())
    qs = normalize_questions(questions)
    want = {model_cache_key(endpoint, "jev-latest")} | {
        decision_cache_key(endpoint, served, s, qs) for s in states
    }
    assert set(cache._entries) == want
    assert "sk-test" not in repr(cache._entries)
