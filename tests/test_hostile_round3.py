"""Hostile round 3 (issue 17, acceptance: "attack the result once more as a hostile user and a
hostile server would, with inputs that are not in this list").

Each test says in its docstring what it tried and what held (or what was fixed with it). The
server side is ``hostile_server.HostileServer`` (``toolnexus serve`` with a script hook); the
user side is the CLI in-process (``clirun.run_cli``) or the library.
"""

from __future__ import annotations

import asyncio
import contextlib
import csv
import io
import json
from pathlib import Path

import pytest

from clirun import Ran, error_line, run_cli
from hostile_server import HostileServer, Reply, Request, valid_answer

Q = "questions:\n  refund:\n    type: noul\n    instructions: Refund?\n"


@pytest.fixture
def server() -> HostileServer:
    with HostileServer() as s:
        yield s


def _qfile(tmp_path: Path, text: str = Q) -> Path:
    path = tmp_path / "q.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _jsonl(tmp_path: Path, n: int) -> Path:
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps({"id": f"t{i}", "text": "x"}) + "\n" for i in range(n)))
    return path


def _batch(q: Path, inp: Path, server: HostileServer, *extra: str) -> Ran:
    return run_cli(
        "batch", str(q), str(inp), "--id-field", "id", "--state-field", "text",
        "--base-url", server.base_url, "--retries", "0", *extra,
    )  # fmt: skip


# --- CSV: a row is one line, the header too ---------------------------------------------------

NEWLINE_KEY = 'questions:\n  "a\\nb\\\\c":\n    type: noul\n    instructions: Refund?\n'


def test_a_question_key_with_a_newline_keeps_the_csv_header_one_line(
    tmp_path: Path, server: HostileServer
) -> None:
    """Tried: a question key holding a newline and a backslash (``"a\\nb\\\\c"``), written by
    ``batch --format csv`` and ``eval --format csv``, then ``--resume`` and ``report`` on it.
    Found: the header wrote the key raw inside a quoted cell, so the header took two physical
    lines (the README: "a newline inside a cell is written \\n, so a row is always one line"),
    and ``--resume``, which reads line by line, read a broken header. Fixed: header cells are
    escaped as ids are (losslessly) and read back unescaped."""
    q = _qfile(tmp_path, NEWLINE_KEY)
    out = tmp_path / "out.csv"
    ran = _batch(q, _jsonl(tmp_path, 3), server, "--format", "csv", "-o", str(out))
    assert ran.code == 0, ran.stderr
    lines = out.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 4, lines  # a header and three rows, each one line
    assert "answers.a\\nb\\\\c.noul" in lines[0]
    ran = _batch(q, _jsonl(tmp_path, 5), server, "--format", "csv", "-o", str(out), "--resume")
    assert ran.code == 0, ran.stderr
    assert "3 skipped" in ran.stderr
    rows = list(csv.DictReader(io.StringIO(out.read_text(encoding="utf-8"))))
    assert [r["answers.a\\nb\\\\c.noul"] for r in rows] == ["0.9"] * 5
    report = run_cli("report", str(out), "--format", "json")
    assert report.code == 0, report.stderr
    assert list(json.loads(report.out)["questions"]) == ["a\nb\\c"]
    ran = run_cli(
        "eval", str(q), "--state-text", "x", "--base-url", server.base_url, "--format", "csv"
    )
    assert ran.code == 0 and ran.out.count("\n") == 2, ran.out


# --- check-criteria: a question key is shown as its options are -----------------------------


@pytest.mark.parametrize(
    ("key", "code", "words"),
    [
        pytest.param("a\\nb", "TN028", "question key 'a\\nb' contains a newline", id="lf"),
        pytest.param("ok\\u202Eevil", "TN026", "bidirectional character (U+202E)", id="bidi"),
        pytest.param("a\\0b", "TN026", "control character (U+0000)", id="nul"),
        pytest.param("\\x1b[2J", "TN026", "control character (U+001B)", id="escape"),
        pytest.param("   ", "TN027", "question key '   ' is whitespace only", id="spaces"),
    ],
)
def test_a_question_key_with_invisible_or_line_breaking_characters_is_flagged(
    tmp_path: Path, key: str, code: str, words: str
) -> None:
    """Tried: question KEYS (not option ids, item 16's case) holding a newline, U+202E, NUL, an
    escape sequence, or only spaces. Found: ``check-criteria`` passed them all with exit 0,
    while a key becomes a CSV column, a table row and a ``--fail-on`` name. Fixed: TN026-8 apply
    to question keys too (advisory: the file still loads)."""
    q = _qfile(tmp_path, f'questions:\n  "{key}":\n    type: noul\n    instructions: Refund?\n')
    ran = run_cli("check-criteria", str(q))
    assert ran.code == 1, ran.out + ran.stderr
    assert f": {code} " in ran.out and words in ran.out, ran.out
    assert ran.out.count("\n") == 1 and "Traceback" not in ran.stderr


# --- a cache from a newer toolnexus -----------------------------------------------------------


def test_a_cache_file_written_by_a_newer_schema_is_refused_not_used(
    tmp_path: Path, server: HostileServer
) -> None:
    """Tried: a cache file whose SQLite ``user_version`` says a later schema wrote it (a newer
    toolnexus sharing ``~/.cache``), then ``batch --cache``. Found: it was read and written as
    if it were this schema's (the schema carried no number). Fixed: the schema is numbered
    (``SCHEMA_VERSION``); a higher number is one line naming the file and the fix, exit 2, and
    ``cache clear`` removes it. A file from before the number (user_version 0) still opens."""
    import sqlite3

    q, inp, cdir = _qfile(tmp_path), _jsonl(tmp_path, 1), tmp_path / "cache"
    args = ("--cache", "--cache-dir", str(cdir), "--overwrite", "-o", str(tmp_path / "o.jsonl"))
    assert _batch(q, inp, server, *args).code == 0
    db = cdir / "decisions.sqlite3"
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] >= 1
        conn.execute("PRAGMA user_version=0")  # a file from before the schema had a number
    assert "1 cached" in _batch(q, inp, server, *args).stderr
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA user_version=999")
    ran = _batch(q, inp, server, *args)
    assert ran.code == 2
    line = error_line(ran.stderr)
    assert str(db) in line and "newer toolnexus" in line and "cache clear" in line, line
    cleared = run_cli("cache", "clear", "--cache-dir", str(cdir))
    assert cleared.code == 0 and not db.exists()


# --- ids of every JSON type --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("label_id", "words"),
    [
        pytest.param("[1]", "not a string or integer: [1]", id="list"),
        pytest.param('{"a": 1}', "not a string or integer: {'a': 1}", id="object"),
        pytest.param("3.0", "not a string or integer: 3.0", id="float"),
        pytest.param("true", "not a string or integer: True", id="bool"),
        pytest.param("1e400", "not a string or integer: inf", id="overflowing-number"),
        pytest.param(
            json.dumps(list(range(10_000))), "not a string or integer: [0, 1, 2", id="huge"
        ),
    ],
)
def test_label_ids_of_every_json_type_follow_the_batch_id_rule(
    tmp_path: Path, server: HostileServer, label_id: str, words: str
) -> None:
    """Tried: a JSONL labels file whose ids are a list, an object, 3.0, true, 1e400 and a list
    of 10,000 numbers, against a run whose ids are 1, "2" and 3. Found: a list, an object or
    1e400 was called "no 'id'" (it was there), 3.0 and true were accepted as the ids "3.0" and
    "true" that no batch id can be, so they silently labelled nothing. Fixed: labels follow
    batch's rule (an id is a string or an integer, records.model.id_problem, one definition for
    both), naming the line; the value shown is cut, never 10,000 numbers long."""
    q = _qfile(tmp_path)
    inp = tmp_path / "in.jsonl"
    inp.write_text("".join(json.dumps({"id": i, "text": "x"}) + "\n" for i in [1, "2", 3]))
    out = tmp_path / "out.jsonl"
    assert _batch(q, inp, server, "-o", str(out)).code == 0
    labels = tmp_path / "labels.jsonl"
    labels.write_text(f'{{"id": 1, "refund": "yes"}}\n{{"id": {label_id}, "refund": "no"}}\n')
    ran = run_cli("report", str(out), "--labels", str(labels), "--format", "json")
    assert ran.code == 2
    line = error_line(ran.stderr)
    assert line.startswith(f"{labels}:2: id ") and words in line and len(line) < 300, line
    bad = tmp_path / "bad.jsonl"
    bad.write_text(f'{{"id": {label_id}, "text": "x"}}\n')
    bad_out = tmp_path / "bad-out.jsonl"
    assert _batch(q, bad, server, "-o", str(bad_out)).code == 2
    record = json.loads(bad_out.read_text())
    message = record["error"]["message"]
    assert record["error"]["code"] == "malformed_input" and message.startswith(f"{bad}:1: ")
    assert len(message) < 300, message  # the 10,000 numbers are not repeated back


# --- what held ---------------------------------------------------------------------------------

ESCAPES = "\x1b[2J\x1b]0;owned\x07\u202e"


def test_terminal_escapes_from_a_server_are_shown_escaped(
    tmp_path: Path, server: HostileServer
) -> None:
    """Tried: a server that puts a clear-screen, a window-title OSC sequence, BEL and U+202E in
    a 400 body, in an answer key it was never asked, and in the model name of a 200. Held: the
    one error line and the table show each as an escape (``\\x1b``, ``\\u202e``), never raw, so
    a server cannot repaint or retitle the user's terminal."""
    q = _qfile(tmp_path)
    base = ("--base-url", server.base_url, "--retries", "0")
    server.answer = lambda r: Reply(400, json.dumps({"detail": ESCAPES}).encode())
    ran = run_cli("eval", str(q), "--state-text", "x", *base)
    assert ran.code == 3 and "\\x1b" in error_line(ran.stderr)

    def extra_key(r: Request) -> Reply:
        body = valid_answer(r.json)
        body["model"] = "jev" + ESCAPES
        body["answers"][ESCAPES] = {"type": "noul", "noul": 0.5}
        return Reply(200, json.dumps(body).encode())

    server.answer = extra_key
    ran = run_cli("eval", str(q), "--state-text", "x", *base, "--format", "table")
    assert ran.code == 3 and "\\x1b" in ran.out
    for shown in (ran.out, ran.stderr):
        assert not any(c in shown for c in "\x1b\x07\u202e"), repr(shown)


@pytest.mark.parametrize(
    "returned",
    [
        pytest.param(None, id="none"),
        pytest.param([{"answers": {}}], id="list"),
        pytest.param("refund: yes", id="str"),
        pytest.param(0.9, id="float"),
        pytest.param(object(), id="object"),
    ],
)
def test_a_custom_evaluate_returning_no_decision_is_one_backend_error(returned: object) -> None:
    """Tried: a ``custom`` evaluate that returns None, a list, a string, a number or an
    arbitrary object. Held: ``evaluate`` raises ``HostBackendError`` (a ``BackendError``) that
    names the type it got and what was expected; ``states(...)`` turns it into that state's
    error, never an exception out of the batch."""
    from toolnexus import HostBackendError, NoulQuestion
    from toolnexus.sync import create_classifier

    questions = {"refund": NoulQuestion("Refund?")}
    with create_classifier(style="custom", evaluate=lambda s, q: returned) as judge:
        with pytest.raises(HostBackendError, match="expected a Decision or a response body"):
            judge.evaluate("x", questions)
        results = judge.states(["x", "y"]).evaluate(**questions)
    assert [type(r.error) for r in results] == [HostBackendError, HostBackendError]


@pytest.mark.parametrize(
    ("retry_after", "wait"),
    [
        pytest.param("999999999", 999999999.0, id="a-billion-seconds"),
        pytest.param("-5", 0.5, id="negative"),
        pytest.param("Thu, 01 Jan 1970 00:00:00 GMT", 0.5, id="http-date-1970"),
        pytest.param("1e9", 0.5, id="exponent"),
        pytest.param("9" * 5000, 0.5, id="5000-digits"),
    ],
)
def test_a_hostile_retry_after_is_shown_to_on_error_before_any_wait(
    retry_after: str, wait: float
) -> None:
    """Tried: a 503 with ``Retry-After`` of 10^9 seconds, negative, an HTTP date in 1970, an
    exponent, and 5,000 digits. Held: the delay-seconds rule (SPEC-8B Appendix A: digits in
    0..2147483647 are waited exactly; any other form falls back to backoff, never negative, never
    raises) gives ``info.wait`` BEFORE the wait, so an ``on_error`` can refuse a 31-year sleep;
    "fail" ends the call after one attempt with the raw header (cut if huge) kept on the error."""
    import httpx

    from toolnexus import ErrorInfo, HTTPStatusError, NoulQuestion, Verdict
    from toolnexus.sync import create_classifier

    seen: list[tuple[float, str | None]] = []

    def on_error(info: ErrorInfo) -> Verdict:
        seen.append((info.wait, info.retry_after))
        return "fail" if info.wait > 60 else "retry"

    sent: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(1)
        return httpx.Response(503, content=b"{}", headers={"retry-after": retry_after})

    judge = create_classifier(
        base_url="http://127.0.0.1:9/v1",
        api_key_env="PATH",
        transport=httpx.MockTransport(handler),
        on_error=on_error,
        retries=0,
    )
    with judge, pytest.raises(HTTPStatusError) as caught:
        judge.evaluate("x", {"refund": NoulQuestion("Refund?")})
    assert len(seen) == 1 and seen[0][0] == wait and len(sent) == 1
    shown = caught.value.retry_after  # raw, cut to a bounded length (5,000 digits are not kept)
    assert shown == seen[0][1] and shown and retry_after.startswith(shown) and len(shown) <= 300


def test_an_image_that_claims_a_billion_pixels_a_side_is_refused_before_sending(
    tmp_path: Path, server: HostileServer
) -> None:
    """Tried: a 133-byte PNG whose IHDR claims 10^9 x 10^9 pixels (a decompression bomb by its
    header). Held: ``eval`` reads only the header, refuses it naming the file, its size and the
    image_max_side limit, exit 2, and nothing is sent."""
    import struct
    import zlib

    ihdr = struct.pack(">IIBBBBB", 10**9, 10**9, 8, 2, 0, 0, 0)
    chunk = struct.pack(">I", 13) + b"IHDR" + ihdr + struct.pack(">I", zlib.crc32(b"IHDR" + ihdr))
    image = tmp_path / "bomb.png"
    image.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk + b"\0" * 100)
    q = _qfile(tmp_path)
    ran = run_cli(
        "eval", str(q), str(image), "--base-url", server.base_url, "--model", "jev-1.14.0"
    )
    assert ran.code == 2
    line = error_line(ran.stderr)
    assert str(image) in line and "1000000000x1000000000" in line and "image_max_side" in line
    assert server.seen == []


def test_resume_after_a_kill_mid_line_drops_the_short_line_and_reruns_its_state(
    tmp_path: Path, server: HostileServer
) -> None:
    """Tried: an output whose last record was cut mid-line (what a SIGKILL during a write
    leaves), then ``--resume``. Held: the short line is not glued to the next record: the file
    ends as one complete record per id, the cut one re-run, and ``report`` reads it whole."""
    q, inp, out = _qfile(tmp_path), _jsonl(tmp_path, 4), tmp_path / "out.jsonl"
    assert _batch(q, inp, server, "-o", str(out)).code == 0
    lines = out.read_bytes().splitlines(keepends=True)
    out.write_bytes(b"".join(lines[:2]) + lines[2][:30])
    ran = _batch(q, inp, server, "-o", str(out), "--resume")
    assert ran.code == 0 and "2 skipped" in ran.stderr, ran.stderr
    records = [json.loads(line) for line in out.read_bytes().splitlines()]
    assert sorted(r["id"] for r in records) == ["t0", "t1", "t2", "t3"]
    assert run_cli("report", str(out), "--format", "json").code == 0


def test_a_reply_with_100000_unexpected_answers_is_one_short_line(
    tmp_path: Path, server: HostileServer
) -> None:
    """Tried: a 200 whose decision answers the question asked plus 100,000 it was never asked
    (4 MB, under the 8 MB body cap). Held: exit 3 and one error line that names the first
    unexpected key, not a megabyte listing all of them."""

    def flood(r: Request) -> Reply:
        body = valid_answer(r.json)
        body["answers"].update({f"k{i}": {"type": "noul", "noul": 0.5} for i in range(100_000)})
        return Reply(200, json.dumps(body).encode())

    server.answer = flood
    q = _qfile(tmp_path)
    ran = run_cli(
        "eval", str(q), "--state-text", "x", "--base-url", server.base_url, "--format", "json"
    )
    assert ran.code == 3
    line = error_line(ran.stderr)
    assert 'unexpected answer "k0"' in line and len(line) < 300, line[:300]


@pytest.mark.parametrize("kind", ["symlink-out", "not-json", "invalid-response"])
def test_a_hostile_recording_is_one_line_that_never_shows_its_content(
    tmp_path: Path, kind: str
) -> None:
    """Tried: a recordings directory holding a symlink to a file outside it (with a secret in
    it), a file that is not JSON, and a recording whose response is not a decision; then
    ``eval --replay`` and ``serve --replay``. Held: each is one line naming the recording, exit
    2, and no byte of the target's content is shown."""
    import subprocess
    import sys

    rec = tmp_path / "rec"
    rec.mkdir()
    secret = "root-secret-0123456789"
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps({"password": secret}))
    target = rec / "zz.json"
    if kind == "symlink-out":
        target.symlink_to(outside)
    elif kind == "not-json":
        target.write_text(f"password={secret}\n")
    else:
        recording = {"model": "m", "endpoint": "e", "state": "x", "questions": {}}
        target.write_text(json.dumps({**recording, "response": {"answers": secret}}))
    q = _qfile(tmp_path)
    ran = run_cli("eval", str(q), "--state-text", "x", "--replay", str(rec))
    assert ran.code == 2
    line = error_line(ran.stderr)
    assert "zz.json" in line and secret not in line, line
    served = subprocess.run(
        [sys.executable, "-m", "toolnexus", "serve", "--replay", str(rec), "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert served.returncode == 2 and served.stdout == ""
    assert "zz.json" in error_line(served.stderr) and secret not in served.stderr


# --- --overwrite onto a file with its own mode, or through a symlink --------------------------


def test_overwrite_keeps_the_outputs_mode_and_writes_through_a_symlink(
    tmp_path: Path, server: HostileServer
) -> None:
    """Tried: ``--overwrite`` onto an output that is mode 0644 (a CI job's other users read it)
    and onto ``-o link.jsonl``, a symlink to the real output elsewhere. Found: the new file
    took the temporary file's mode (0600: nobody else could read the results any more), and
    the symlink itself was replaced by a regular file while its target kept the old records.
    Fixed: the temporary file is made beside the symlink's target with the old file's mode, and
    replaces the target."""
    import os
    import stat

    q, inp = _qfile(tmp_path), _jsonl(tmp_path, 2)
    old = b'{"id":"old","error":{"code":"backend_http","message":"x"}}\n'
    out = tmp_path / "out.jsonl"
    out.write_bytes(old)
    out.chmod(0o644)
    assert _batch(q, inp, server, "-o", str(out), "--overwrite").code == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o644
    assert out.read_bytes() != old
    real = tmp_path / "elsewhere" / "real.jsonl"
    real.parent.mkdir()
    real.write_bytes(old)
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)
    assert _batch(q, inp, server, "-o", str(link), "--overwrite").code == 0
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert [json.loads(line)["id"] for line in real.read_bytes().splitlines()] == ["t0", "t1"]
    assert sorted(p.name for p in real.parent.iterdir()) == ["real.jsonl"]  # no temporary left


@pytest.mark.parametrize("encoding", ["zstd", "deflate"])
def test_a_zstd_or_deflate_bomb_stops_at_the_decoded_body_cap(
    tmp_path: Path, server: HostileServer, encoding: str
) -> None:
    """Tried: a 200 whose body is 64 MiB of spaces compressed to a few kilobytes, under
    ``Content-Encoding: zstd`` and ``deflate`` (the client accepts both; issue 9 tried gzip).
    Held: decoding stops at the 8 MB cap and the call is one line naming the status and the
    request id, exit 3; memory never holds the 64 MiB."""
    import zlib

    from backports import zstd

    raw = b" " * (64 << 20)
    body = zstd.compress(raw) if encoding == "zstd" else zlib.compress(raw, 9)
    headers = {"Content-Encoding": encoding, "x-typesafe-request-id": "req-bomb"}
    server.answer = lambda r: Reply(200, body, headers)
    q = _qfile(tmp_path)
    ran = run_cli(
        "eval", str(q), "--state-text", "x", "--base-url", server.base_url, "--retries", "0"
    )
    assert ran.code == 3
    line = error_line(ran.stderr)
    assert "HTTP 200" in line and "larger than 8 MB once decoded" in line and "req-bomb" in line


# --- the sync API used after close() ------------------------------------------------------------

AFTER_CLOSE = """
import sys
from toolnexus import NoulQuestion
from toolnexus.sync import create_classifier

judge = create_classifier(base_url=sys.argv[1], api_key_env="PATH", retries=0)
questions = {"refund": NoulQuestion("Refund?")}
judge.evaluate("x", questions)
judge.close()
print(judge.evaluate("x", questions).noul("refund").noul)  # a pool opened after close()
judge.close()
bound = judge.state("y")
judge.close()
print(bound.evaluate(**questions).noul("refund").noul)  # and one never closed by hand
"""


def test_the_sync_api_used_after_close_leaves_no_unclosed_pool_at_exit(
    tmp_path: Path, server: HostileServer
) -> None:
    """Tried: a ``toolnexus.sync`` classifier called after ``close()``, closed again, and
    called once more through a state bound before the last close. Found: the second
    ``close()`` did nothing (a one-shot flag) and a closed classifier was no longer closed at
    exit, so the pool the later call opened leaked: "Unclosed client session" and "Unclosed
    connector" at exit, which the README says never happens. Fixed: ``close()`` closes the
    pool every time it is called, and exit still closes a classifier that was closed and then
    used again. Each call after close() answers (a pool per use, as per loop)."""
    import subprocess
    import sys

    script = tmp_path / "after_close.py"
    script.write_text(AFTER_CLOSE)
    done = subprocess.run(
        [sys.executable, "-X", "dev", "-W", "default", str(script), server.base_url],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0.9", "0.9"]
    assert "Unclosed" not in done.stderr and "ResourceWarning" not in done.stderr, done.stderr


# --- a server that drips its answer -------------------------------------------------------------


class _Dripper:
    """A raw HTTP server on 127.0.0.1 that answers 200 with a chunked body of ``chunks`` bytes,
    one every ``gap`` seconds: each read waits less than any timeout, the whole never ends."""

    def __init__(self, chunks: int, gap: float) -> None:
        import threading

        self.chunks, self.gap = chunks, gap
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.port = 0
        self.handlers: set[asyncio.Task[None]] = set()

    def _run(self) -> None:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            task = asyncio.current_task()
            assert task is not None
            self.handlers.add(task)
            try:
                await reader.readuntil(b"\r\n\r\n")
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")
                writer.write(b"Transfer-Encoding: chunked\r\n\r\n")
                for _ in range(self.chunks):
                    writer.write(b"1\r\n \r\n")
                    await writer.drain()
                    await asyncio.sleep(self.gap)
                writer.write(b"0\r\n\r\n")
                await writer.drain()
            except (ConnectionError, asyncio.IncompleteReadError):
                pass
            finally:
                writer.close()

        async def main() -> None:
            server = await asyncio.start_server(handle, "127.0.0.1", 0)
            self.port = server.sockets[0].getsockname()[1]
            self.ready.set()
            try:
                async with server:
                    await server.serve_forever()
            finally:  # the drips still running end here, before the loop closes
                for task in self.handlers:
                    task.cancel()
                await asyncio.gather(*self.handlers, return_exceptions=True)

        asyncio.set_event_loop(self.loop)
        self.main = self.loop.create_task(main())
        with contextlib.suppress(asyncio.CancelledError):
            self.loop.run_until_complete(self.main)

    def __enter__(self) -> _Dripper:
        self.thread.start()
        self.ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        self.loop.call_soon_threadsafe(self.main.cancel)
        self.thread.join(10)
        self.loop.close()


@pytest.mark.parametrize("adapter", ["aiohttp", "httpx"])
def test_a_server_that_drips_its_answer_meets_the_per_request_timeout(adapter: str) -> None:
    """Tried: a server that sends its 200 one byte every 50 ms for 40 s, with ``timeout=0.5``:
    every read arrives well inside the timeout, so a per-read timeout alone would never fire.
    Held, through the aiohttp adapter and an injected httpx transport: the attempt is bounded as
    a whole (seed 004: ``timeout-ms`` is "per REQUEST"), and the drip is one transport error of
    kind ``timeout``, not a 40-second wait."""
    import httpx

    from toolnexus import NoulQuestion, TransportError
    from toolnexus.sync import create_classifier

    with _Dripper(chunks=800, gap=0.05) as drip:
        base = f"http://127.0.0.1:{drip.port}/v1"
        extra = {"transport": httpx.AsyncHTTPTransport()} if adapter == "httpx" else {}
        judge = create_classifier(
            base_url=base, api_key_env="PATH", timeout=0.5, retries=0, **extra
        )
        with judge, pytest.raises(TransportError) as caught:
            judge.evaluate("x", {"refund": NoulQuestion("Refund?")})
    assert caught.value.kind == "timeout", caught.value


# --- usage a server made up ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "usage",
    [
        pytest.param({"input_tokens": -5, "output_tokens": 1}, id="negative-tokens"),
        pytest.param({"input_tokens": 2**53 + 1, "output_tokens": 1}, id="tokens-past-2**53"),
        pytest.param({"input_tokens": 1, "output_tokens": 1, "cost": -1.0}, id="negative-cost"),
        pytest.param({"input_tokens": 1, "output_tokens": 1, "cost": 1e308}, id="cost-1e308"),
    ],
)
def test_usage_a_server_made_up_never_reaches_a_record_report_refuses(
    tmp_path: Path, server: HostileServer, usage: dict[str, object]
) -> None:
    """Tried: a 200 whose ``usage`` is negative, past 2**53 tokens, a negative cost, or a cost
    of 1e308 (two of them sum to infinity). Found: the decoder took them; ``batch`` wrote them
    and printed ``tokens -10 in`` or ``cost inf``, and ``report`` then refused batch's own
    output (``usage.input_tokens is -5, not a token count``) or printed ``Infinity`` into its
    JSON. Fixed: one rule for a usage figure (``decision.MAX_USAGE``: 0..2**53), which the
    decoder and the report both apply: such a reply is a ``backend_response`` error record,
    and the run reads back."""

    def reply(r: Request) -> Reply:
        body = valid_answer(r.json)
        body["usage"] = usage
        return Reply(200, json.dumps(body).encode())

    server.answer = reply
    q, inp, out = _qfile(tmp_path), _jsonl(tmp_path, 2), tmp_path / "out.jsonl"
    ran = _batch(q, inp, server, "-o", str(out))
    assert ran.code == 3 and "backend_response 2" in ran.stderr, ran.stderr
    assert "-10" not in ran.stderr and "inf" not in ran.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert {r["error"]["code"] for r in records} == {"backend_response"}
    assert "usage." in records[0]["error"]["message"]
    report = run_cli("report", str(out), "--format", "json")
    assert report.code == 0, report.stderr
    assert "Infinity" not in report.out


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_a_redirect_is_never_followed_so_the_key_stays_home(
    tmp_path: Path, server: HostileServer, monkeypatch: pytest.MonkeyPatch, status: int
) -> None:
    """Tried: a server that answers every POST with a redirect to another server (a thief on
    another port), the key in ``$TYPESAFE_API_KEY``. Held: the redirect is not followed (one
    line naming the status and the request id, exit 3), the thief receives nothing, and no
    part of the key is printed."""
    key = "sk-redirect-secret-0123456789"
    monkeypatch.setenv("TYPESAFE_API_KEY", key)
    with HostileServer() as thief:
        location = f"{thief.base_url}/systemone"
        server.answer = lambda r: Reply(status, b"", {"Location": location})
        q = _qfile(tmp_path)
        ran = run_cli("eval", str(q), "--state-text", "x", "--base-url", server.base_url)
        assert thief.seen == []
    assert ran.code == 3
    line = error_line(ran.stderr)
    assert f"HTTP {status}" in line and "request id" in line
    assert key[3:11] not in line
