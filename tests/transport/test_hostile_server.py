"""Hostile round 3, the server's side (issue 17, acceptance: "attack the result once more
as a hostile user and a hostile server would, with inputs that are not in this list").

Each test says in its docstring what it tried and what held, or what was found and fixed with
it. The server is ``hostile_server.HostileServer`` (``toolnexus serve`` with a script hook) or
a raw socket server; the client is the CLI in-process or the library.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path

import pytest

from clirun import error_line, run_cli
from hostile_cli import run_batch, write_jsonl, write_questions
from hostile_server import HostileServer, Reply, Request, server_fixture, valid_answer

server = server_fixture("tnk-round3-server-0123456789")


# --- what held ---------------------------------------------------------------------------------

ESCAPES = "\x1b[2J\x1b]0;owned\x07\u202e"


def test_terminal_escapes_from_a_server_are_shown_escaped(
    tmp_path: Path, server: HostileServer
) -> None:
    """Tried: a server that puts a clear-screen, a window-title OSC sequence, BEL and U+202E in
    a 400 body, in an answer key it was never asked, and in the model name of a 200. Held: the
    one error line and the table show each as an escape (``\\x1b``, ``\\u202e``), never raw, so
    a server cannot repaint or retitle the user's terminal."""
    q = write_questions(tmp_path)
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
    q = write_questions(tmp_path)
    ran = run_cli(
        "eval", str(q), "--state-text", "x", "--base-url", server.base_url, "--format", "json"
    )
    assert ran.code == 3
    line = error_line(ran.stderr)
    assert 'unexpected answer "k0"' in line and len(line) < 300, line[:300]


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
    q = write_questions(tmp_path)
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
    q, inp, out = write_questions(tmp_path), write_jsonl(tmp_path, 2), tmp_path / "out.jsonl"
    ran = run_batch(q, inp, server, "-o", str(out))
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
        q = write_questions(tmp_path)
        ran = run_cli("eval", str(q), "--state-text", "x", "--base-url", server.base_url)
        assert thief.seen == []
    assert ran.code == 3
    line = error_line(ran.stderr)
    assert f"HTTP {status}" in line and "request id" in line
    assert key[3:11] not in line
