"""``toolnexus filter`` end to end against ``toolnexus serve`` on 127.0.0.1 (issue 36 item 3):
"writes the input lines that pass, unchanged, in input order"; ``-v`` inverts, ``-c`` counts,
``--with-answers`` writes JSONL with the decision; "a line whose evaluation fails is dropped and
reported on stderr (``--on-error keep`` keeps it)"; "exit codes as grep's"; "a bad ``--where``
is one line naming the column"; and the key never appears in what it writes."""

from __future__ import annotations

import asyncio
import json
import os
import select
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from clirun import error_line, run_cli
from serving import ThreadedServer
from toolnexus.core.comparisons import parse_comparison
from toolnexus.core.errors import ConfigError
from toolnexus.core.failures import (
    EXIT_BACKEND,
    EXIT_BUDGET,
    EXIT_CONDITION,
    EXIT_OK,
    EXIT_STOPPED,
    EXIT_USAGE,
)
from toolnexus.serve import ScriptedReply, ScriptedRequest, ServeOptions

QUESTIONS = """\
questions:
  refund:
    type: noul
    instructions: Is the customer asking for money back?
  desk:
    type: choice
    instructions: Which desk should own this ticket?
    criteria:
      billing: own it here when money moved
      technical: own it here when the product itself errors
  urgency.v2:
    type: score
    instructions: How fast does this ticket need a human?
    criteria:
      - waiting on an answer
      - will chase today
      - blocked right now
gates:
  route:
    rules:
      - {question: refund, at_least: 0.7, action: refund}
      - {question: desk, is: technical, action: engineer}
    default: review
    skip_uncertain: true
"""
KEY_ENV = "FILTER_TEST_SECRET"
KEY = "sk-filter-secret-8c41d9"
#: 30 lines, one of them with CRLF and the last without a newline: written back byte for byte
LINES = [
    f"ticket {i}: charged twice for invoice {i * 37}, please help\n".encode() for i in range(28)
]
LINES += [b"ticket 28: the app errors on login\r\n", b"ticket 29: parcel late"]
INPUT = b"".join(LINES)


@pytest.fixture
def qfile(tmp_path: Path) -> Path:
    path = tmp_path / "q.yaml"
    path.write_text(QUESTIONS, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def server() -> Iterator[ThreadedServer]:
    with ThreadedServer(ServeOptions(synthetic=True, latency_ms=2)) as s:
        yield s


def _filter(qfile: Path, url: str, *args: str, input: bytes = INPUT) -> Any:
    return run_cli(
        "filter", str(qfile), "--base-url", url + "/v1", "--api-key-env", KEY_ENV, *args,
        input=input,
    )  # fmt: skip


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)


@pytest.fixture
def answers(qfile: Path, server: ThreadedServer) -> list[dict[str, Any]]:
    """Every line's decision (each line passes ``refund >= 0``), in input order."""
    ran = _filter(qfile, server.url, "--where", "refund >= 0", "--with-answers")
    assert ran.code == EXIT_OK, ran.stderr
    rows = [json.loads(line) for line in ran.out.splitlines()]
    assert [r["line"] for r in rows] == [raw.decode().rstrip("\r\n") for raw in LINES]
    return [r["decision"] for r in rows]


@pytest.mark.parametrize(
    ("flags", "invert", "count"),
    [
        pytest.param([], False, False, id="the-lines-that-pass"),
        pytest.param(["-v"], True, False, id="v-inverts"),
        pytest.param(["-c"], False, True, id="c-counts"),
        pytest.param(["-v", "-c"], True, True, id="v-c-counts-the-rest"),
    ],
)
def test_lines_that_pass_leave_unchanged_in_input_order(
    qfile: Path,
    server: ThreadedServer,
    answers: list[dict[str, Any]],
    flags: list[str],
    invert: bool,
    count: bool,
) -> None:
    """'writes the input lines that pass, unchanged (byte for byte, newline included), in
    input order', with several requests in flight (--concurrency 8, packs of 3)."""
    cut = sorted(a["answers"]["refund"]["noul"] for a in answers)[len(answers) // 2]
    where = ["--where", f"refund >= {cut}", "--where", "urgency.v2.level >= 0"]
    ran = _filter(qfile, server.url, *where, "--concurrency", "8", "--pack", "3", *flags)
    passing = [(a["answers"]["refund"]["noul"] >= cut) != invert for a in answers]
    want = [raw for raw, ok in zip(LINES, passing, strict=True) if ok]
    assert 0 < len(want) < len(LINES)
    assert ran.code == EXIT_OK, ran.stderr
    assert ran.stdout == (f"{len(want)}\n".encode() if count else b"".join(want))
    assert ran.stderr == ""
    assert KEY.encode() not in ran.stdout


def test_lines_are_packed_by_default(qfile: Path, server: ThreadedServer) -> None:
    """'packed (--pack N|auto, default auto, as batch has it)': 30 lines, a few requests."""
    before = len(server.seen)
    ran = _filter(qfile, server.url, "--where", "refund >= 0")
    assert ran.code == EXIT_OK and ran.stdout == INPUT, ran.stderr
    assert len(server.seen) - before < len(LINES) // 5


@pytest.mark.parametrize(
    ("where", "field"),
    [
        pytest.param("desk == billing", None, id="choice"),
        pytest.param("desk.confidence >= 0.5", "confidence", id="choice-confidence"),
        pytest.param("desk.technical < 0.3", "technical", id="option-probability"),
        pytest.param("urgency.v2.score > 0.8", "score", id="dotted-key-longest-first"),
        pytest.param("urgency.v2 != 0.5", "score", id="score-default-field"),
    ],
)
def test_where_reads_each_answer_field(
    qfile: Path,
    server: ThreadedServer,
    answers: list[dict[str, Any]],
    where: str,
    field: str | None,
) -> None:
    """``--where``: ``desk == billing`` (choice), ``desk.confidence >= 0.6``,
    ``urgency.score > 1.2``; 'keys may contain dots: match the longest known key first'."""
    left, op, value = where.split()
    key = "urgency.v2" if left.startswith("urgency.v2") else left.split(".")[0]
    ops = {"==": str.__eq__, ">=": float.__ge__, "<": float.__lt__, ">": float.__gt__}

    def holds(a: dict[str, Any]) -> bool:
        ans = a["answers"][key]
        if field is None:
            return bool(ans["choice"] == value)
        got = ans["probabilities"][field] if field == "technical" else ans[field]
        return float(got) != float(value) if op == "!=" else bool(ops[op](float(got), float(value)))

    want = [raw for raw, a in zip(LINES, answers, strict=True) if holds(a)]
    ran = _filter(qfile, server.url, "--where", where)
    assert ran.stdout == b"".join(want)
    assert ran.code == (EXIT_OK if want else EXIT_CONDITION), ran.stderr


def test_input_order_is_kept_when_the_first_line_finishes_last(qfile: Path) -> None:
    """'output must be reordered to input order with a bounded reorder buffer': the first
    line's first request answers 500 and is retried after a backoff, while the others, four
    in flight, are answered; the lines still leave in input order."""
    failed: list[bool] = []

    def first_fails_once(req: ScriptedRequest) -> ScriptedReply | None:
        if req.json.get("state") == LINES[0].decode().rstrip("\n") and not failed:
            failed.append(True)
            return ScriptedReply(500, b'{"error": "once"}')
        return None

    with ThreadedServer(ServeOptions(synthetic=True, script=first_fails_once)) as srv:
        ran = _filter(qfile, srv.url, "--where", "refund >= 0", "--pack", "1",
                      "--concurrency", "4", "--retries", "1")  # fmt: skip
    assert ran.code == EXIT_OK, ran.stderr
    assert failed and ran.stdout == INPUT


def test_with_answers_writes_the_line_and_batch_record_body(
    qfile: Path, server: ThreadedServer
) -> None:
    """'--with-answers writes JSONL {"line": <original line>, "decision": {...}}' in batch's
    record shape (records/decision.py)."""
    ran = _filter(qfile, server.url, "--where", "refund >= 0", "--with-answers",
                  input=b"charged twice\n")  # fmt: skip
    assert ran.code == EXIT_OK, ran.stderr
    (row,) = [json.loads(line) for line in ran.out.splitlines()]
    assert row["line"] == "charged twice"
    assert list(row["decision"]["answers"]) == ["refund", "desk", "urgency.v2"]
    assert {"model", "usage", "flags", "invalid"} <= set(row["decision"])


def test_none_passing_exits_1(qfile: Path, server: ThreadedServer) -> None:
    """'Exit codes as grep's: ... 1 none passed'."""
    ran = _filter(qfile, server.url, "--where", "refund > 1")
    assert (ran.code, ran.stdout, ran.stderr) == (EXIT_CONDITION, b"", "")


@pytest.mark.parametrize(
    ("where", "message"),
    [
        pytest.param("refnd >= 0.8", "column 1: 'refnd' is not a question key", id="unknown-key"),
        pytest.param("refund => 0.8", "column 8: '=' is not an operator", id="bad-operator"),
        pytest.param("refund >= high", "column 11: 'high' is not a number", id="not-a-number"),
        pytest.param("desk == legal", "column 9: 'legal' is not an option of 'desk'", id="option"),
        pytest.param("desk > billing", "column 6: desk.choice is text", id="text-ordered"),
        pytest.param("desk.colour >= 1", "column 6: 'colour' is not a field", id="field"),
        pytest.param("refund >=", "column 10: expected a value after '>='", id="no-value"),
        pytest.param("refund 0.8", "column 8: expected an operator", id="no-operator"),
    ],
)
def test_a_bad_where_is_one_line_naming_the_column_exit_2(
    qfile: Path, where: str, message: str
) -> None:
    """'A bad --where is one line naming the column/token at fault and exits 2' (nothing is
    read or sent: no server is given)."""
    ran = run_cli("filter", str(qfile), "--where", where, input=INPUT)
    assert ran.code == EXIT_USAGE
    assert ran.stdout == b""
    line = error_line(ran.stderr)
    assert line.startswith(f"--where {where!r}: ") and message in line, line


@pytest.mark.parametrize("action", ["refund", "engineer", "review", "needs_input"])
def test_gate_keeps_the_lines_whose_action_is_the_one_asked(
    qfile: Path, server: ThreadedServer, answers: list[dict[str, Any]], action: str
) -> None:
    """'--gate NAME --action permit: keep lines whose gate action equals' (the question file's
    gates:, the action its records carry)."""
    want = [raw for raw, a in zip(LINES, answers, strict=True)
            if a["gates"]["route"]["action"] == action]  # fmt: skip
    ran = _filter(qfile, server.url, "--gate", "route", "--action", action)
    assert ran.stdout == b"".join(want)
    assert ran.code == (EXIT_OK if want else EXIT_CONDITION), ran.stderr


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        pytest.param(["--gate", "rout", "--action", "refund"],
                     "--gate 'rout': no such gate in the question file (its gates: route)",
                     id="unknown-gate"),
        pytest.param(["--gate", "route", "--action", "permit"],
                     "--action 'permit': gate 'route' never gives it (its actions: refund, "
                     "engineer, review, needs_input)", id="unknown-action"),
        pytest.param(["--gate", "route"],
                     "--gate and --action go together: --gate NAME --action ACTION",
                     id="no-action"),
    ],
)  # fmt: skip
def test_a_bad_gate_is_one_line_exit_2(qfile: Path, flags: list[str], message: str) -> None:
    """A gate the file does not have, or an action it never gives, is one line, exit 2."""
    ran = run_cli("filter", str(qfile), *flags, input=INPUT)
    assert (ran.code, ran.stdout) == (EXIT_USAGE, b"")
    assert error_line(ran.stderr) == message


@pytest.mark.parametrize(
    ("text", "column"),
    [
        pytest.param("ece=0.1", 4, id="lone-equals"),
        pytest.param("a >= 1 2", 8, id="extra-token"),
        pytest.param(">= 1", 1, id="no-name"),
    ],
)
def test_one_grammar_for_fail_on_and_where(text: str, column: int) -> None:
    """'Use ONE expression grammar shared with report's --fail-on': the tokenizer names the
    column at fault for both; report keeps its own message for what it refuses."""
    with pytest.raises(ConfigError, match=f"column {column}:"):
        parse_comparison(text)
    ok = parse_comparison("urgency.level>=2")
    assert (ok.left.text, ok.op.text, ok.right.text, ok.right.column) == (
        "urgency.level",
        ">=",
        "2",
        16,
    )
    ran = run_cli("report", "--fail-on", "ece=0.1", "nothing.jsonl")
    assert ran.code == EXIT_USAGE and "is not NAME>NUMBER" in ran.stderr


def _failing_line(req: ScriptedRequest) -> ScriptedReply | None:
    """A server that fails (HTTP 500) every request whose state mentions FAIL."""
    if "FAIL" in json.dumps(req.json.get("state")):
        return ScriptedReply(500, b'{"error": "boom"}')
    return None


@pytest.mark.parametrize(
    ("on_error", "kept"),
    [pytest.param("drop", False, id="dropped"), pytest.param("keep", True, id="kept")],
)
def test_a_line_that_fails_is_said_on_stderr_and_dropped_or_kept(
    qfile: Path, on_error: str, kept: bool
) -> None:
    """'A line whose evaluation fails is dropped and reported on stderr as one line with its
    line number (--on-error keep keeps it)'; exit 3 after writing what passed."""
    lines = [b"first fine\n", b"second FAIL\n", b"third fine\n"]
    with ThreadedServer(ServeOptions(synthetic=True, script=_failing_line)) as srv:
        ran = _filter(qfile, srv.url, "--where", "refund >= 0", "--pack", "1", "--retries", "0",
                      "--on-error", on_error, input=b"".join(lines))  # fmt: skip
    assert ran.code == EXIT_BACKEND, ran.stderr
    assert ran.stdout == b"".join(lines if kept else [lines[0], lines[2]])
    (said,) = ran.stderr.splitlines()
    assert said.startswith("toolnexus: stdin:2: ") and "500" in said
    assert KEY not in ran.stderr and KEY.encode() not in ran.stdout


def test_a_wrong_key_stops_the_run_exit_4_and_never_shows_the_key(
    qfile: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """'4 a systematic stop (rejected key etc., as batch)'; the key appears in no output."""
    monkeypatch.setenv("FILTER_TEST_RIGHT", "the-right-key")
    with ThreadedServer(ServeOptions(synthetic=True, require_key_env="FILTER_TEST_RIGHT")) as srv:
        ran = _filter(qfile, srv.url, "--where", "refund >= 0", "--pack", "1", "--concurrency", "2")
    assert ran.code == EXIT_STOPPED, ran.stderr
    assert ran.stdout == b""
    assert "401" in ran.stderr and "Traceback" not in ran.stderr
    assert KEY not in ran.stderr


def test_a_spend_cap_stops_the_run_exit_5_after_writing_what_passed(
    qfile: Path, server: ThreadedServer
) -> None:
    """'--max-cost / --max-tokens as batch has them ... 5 a spend cap', here --max-requests."""
    ran = _filter(qfile, server.url, "--where", "refund >= 0", "--pack", "1",
                  "--concurrency", "1", "--max-requests", "2")  # fmt: skip
    assert ran.code == EXIT_BUDGET, ran.stderr
    assert ran.stdout == b"".join(LINES[:2])
    assert "--max-requests 2" in ran.stderr


def test_a_cost_cap_without_a_price_is_refused_before_the_first_request(
    qfile: Path, server: ThreadedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 42 item 7: "``--max-cost`` requires ``--price`` (or ``TOOLNEXUS_PRICE``); without
    it, exit 2 naming both": batch's one check, here."""
    monkeypatch.delenv("TOOLNEXUS_PRICE", raising=False)
    before = len(server.seen)
    ran = _filter(qfile, server.url, "--where", "refund >= 0", "--max-cost", "1")
    assert ran.code == EXIT_USAGE
    line = error_line(ran.stderr)
    assert "--max-cost" in line and "--price" in line and "TOOLNEXUS_PRICE" in line
    assert ran.stdout == b"" and len(server.seen) == before


def test_dry_run_sends_nothing_and_prints_the_estimate(qfile: Path, server: ThreadedServer) -> None:
    """'--dry-run as batch has it': batch's estimate over the lines, nothing sent."""
    before = len(server.seen)
    ran = _filter(qfile, server.url, "--where", "refund >= 0", "--dry-run", "--pack", "5")
    assert ran.code == EXIT_OK, ran.stderr
    assert ran.out.startswith(f"states to send: {len(LINES)} ")
    assert f"requests: {len(LINES) // 5} (pack 5" in ran.out
    assert len(server.seen) == before


def test_state_field_reads_jsonl_by_a_dotted_path(qfile: Path, server: ThreadedServer) -> None:
    """JSONL with ``--state-field`` (a dotted path); a line without it is an input error
    (exit 2) said with its line number, the others still filtered."""
    rows = [b'{"t": {"body": "charged twice"}}\n', b'{"t": {}}\n', b'{"t": {"body": "late"}}\n']
    ran = _filter(qfile, server.url, "--where", "refund >= 0", "--state-field", "t.body",
                  input=b"".join(rows))  # fmt: skip
    assert ran.code == EXIT_USAGE
    assert ran.stdout == rows[0] + rows[2]
    assert error_line(ran.stderr).startswith("stdin:2: state field 't.body' missing")


def test_the_first_line_comes_out_before_the_input_ends(
    qfile: Path, server: ThreadedServer
) -> None:
    """'a part-filled pack is sent after a short flush delay, so the first line comes out
    before the input ends': 3 lines into a pipe that stays open, the first output line read,
    only then stdin closed. (The 60 s select is a hang guard, not a timing verdict.)"""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "toolnexus", "filter", str(qfile), "--where", "refund >= 0",
         "--base-url", server.url + "/v1", "--api-key-env", KEY_ENV],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(b"one\ntwo\nthree\n")
        proc.stdin.flush()
        ready, _, _ = select.select([proc.stdout], [], [], 60)
        assert ready, "no output while the input stayed open"
        first = proc.stdout.readline()
        assert proc.poll() is None  # still running: its input has not ended
        proc.stdin.close()
        rest = proc.stdout.read()
        assert proc.wait(60) == EXIT_OK
    finally:
        proc.kill()
        proc.wait()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    assert first + rest == b"one\ntwo\nthree\n"


@pytest.mark.parametrize(
    "flush",
    [
        pytest.param(-0.01, id="negative"),
        pytest.param(True, id="bool"),
        pytest.param("1", id="text"),
    ],
)
def test_batch_options_flush_takes_seconds(flush: Any) -> None:
    """``BatchOptions.flush`` (the part-filled pack's delay) is checked where it is built."""
    from toolnexus.config import BatchOptions

    with pytest.raises(ConfigError, match="flush takes seconds"):
        BatchOptions(pack="auto", flush=flush)


def test_evaluate_stream_sends_a_part_filled_pack_after_the_flush() -> None:
    """'a part-filled pack is sent after a short flush delay' (``BatchOptions.flush``): two
    states, then a source that waits; both results come out before it ends. (The 60 s is a
    hang guard: without the flush the stream waits for a full pack forever.)"""
    from toolnexus import NoulQuestion, create_classifier
    from toolnexus.config import BatchOptions

    async def evaluate(state: Any, questions: Any) -> dict[str, Any]:
        return {"model": "stub", "answers": {"holds": {"type": "noul", "noul": 0.5}}}

    judge = create_classifier(style="custom", evaluate=evaluate)
    more = asyncio.Event()

    async def source() -> AsyncIterator[tuple[str, str]]:
        yield "a", "one"
        yield "b", "two"
        await more.wait()
        yield "c", "three"

    async def run() -> tuple[list[str], list[str]]:
        options = BatchOptions(pack="auto", flush=0.01)
        stream = judge.evaluate_stream(source(), {"holds": NoulQuestion("Holds?")}, options=options)
        first = [(await anext(stream))[0], (await anext(stream))[0]]
        more.set()
        return first, [k async for k, _ in stream]

    first, rest = asyncio.run(asyncio.wait_for(run(), 60))
    assert sorted(first) == ["a", "b"] and rest == ["c"]
