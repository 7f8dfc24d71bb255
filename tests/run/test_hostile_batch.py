"""Hostile runs (issue 9, "Batch data safety" and "Strict JSON"): duplicate ids, outputs aimed
at inputs, two processes on one output, resumes onto the wrong file, ids built to break
formats. Nothing finished is lost, nothing is overwritten, and every JSON written parses with
a strict parser.
"""

from __future__ import annotations

import csv
import fcntl
import io
import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clirun import error_line, run_cli
from hostile_server import HostileServer, Reply, qfile_fixture, server_fixture, valid_answer
from paths import TESTS
from toolnexus.run.codecs import sink_for
from toolnexus.run.resume import LINES

KEY = "tn-batch-key-0123456789"
QUESTIONS = "questions:\n  q: {type: noul, instructions: Is it so?}\n"
OTHER_QUESTIONS = "questions:\n  q: {type: noul, instructions: Is it really so?}\n"


def strict_loads(text: str) -> Any:
    def refuse(name: str) -> Any:
        raise ValueError(f"{name} in JSON output")

    return json.loads(text, parse_constant=refuse)


server = server_fixture(KEY)


qfile = qfile_fixture(QUESTIONS)


def _batch(server: HostileServer, qfile: Path, *args: str, input: bytes | None = None):
    return run_cli(
        "batch",
        str(qfile),
        *args,
        "--id-field",
        "id",
        "--state-field",
        "text",
        "--base-url",
        server.base_url,
        "--retries",
        "0",
        input=input,
    )


def _jsonl(path: Path) -> list[dict[str, Any]]:
    # split on LF only: str.splitlines would also split inside an id holding U+2028
    return [strict_loads(line) for line in path.read_text().split("\n") if line]


def _write_lines(path: Path, *rows: dict[str, Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


# --- duplicate ids ----------------------------------------------------------------------------


def test_ids_that_differ_only_as_7_and_quoted_7_are_one_id(
    server: HostileServer, qfile: Path, tmp_path: Path
) -> None:
    """Issue 9: "Detect duplicates (the second gets an error record naming the line of the
    first), and no compaction may ever drop a finished decision"."""
    inp = _write_lines(
        tmp_path / "in.jsonl",
        {"id": 7, "text": "a"},
        {"id": 8, "text": "b"},
        {"id": "7", "text": "c"},
    )
    out = tmp_path / "out.jsonl"
    ran = _batch(server, qfile, str(inp), "-o", str(out))
    assert ran.code == 2, ran.stderr
    records = _jsonl(out)
    assert len(server.seen) == 2
    dup = [r for r in records if "error" in r]
    assert len(dup) == 1 and dup[0]["error"]["code"] == "duplicate_id"
    assert f"{inp}:1" in dup[0]["error"]["message"] and f"{inp}:3" in dup[0]["error"]["message"]
    decisions = [r for r in records if "error" not in r]
    assert sorted(str(r["id"]) for r in decisions) == ["7", "8"]

    for flags in (["--resume"], ["--resume", "--retry-errors"], ["--retry-errors"]):
        ran = _batch(server, qfile, str(inp), "-o", str(out), *flags)
        assert "Traceback" not in ran.stderr
        after = _jsonl(out)
        finished = [r for r in after if "error" not in r]
        assert sorted(str(r["id"]) for r in finished) == ["7", "8"], (flags, after)
    assert len(server.seen) == 2, "a finished decision was sent again"


def test_compaction_keeps_a_finished_decision_over_a_later_error(
    server: HostileServer, qfile: Path, tmp_path: Path
) -> None:
    inp = _write_lines(tmp_path / "in.jsonl", {"id": "a", "text": "x"}, {"id": "b", "text": "y"})
    out = tmp_path / "out.jsonl"
    assert _batch(server, qfile, str(inp), "-o", str(out)).code == 0
    good = _jsonl(out)
    # A later error record for "a" (what a duplicate line or a stray run leaves behind).
    with out.open("a") as f:
        f.write(json.dumps({"id": "a", "error": {"code": "backend_http", "message": "x"}}) + "\n")
    ran = _batch(server, qfile, str(inp), "-o", str(out), "--resume", "--retry-errors")
    assert ran.code == 0, ran.stderr
    after = _jsonl(out)
    assert [r for r in after if r["id"] == "a"] == [r for r in good if r["id"] == "a"]
    assert len(server.seen) == 2


# --- outputs aimed at inputs ------------------------------------------------------------------


def test_output_onto_the_question_file_is_refused_before_writing(
    server: HostileServer, qfile: Path, tmp_path: Path
) -> None:
    """Issue 9: "-o onto the question file, onto an input file, or into a directory input is
    refused before anything is written"."""
    inp = _write_lines(tmp_path / "in.jsonl", {"id": 1, "text": "x"})
    before = qfile.read_bytes()
    ran = _batch(server, qfile, str(inp), "-o", str(qfile))
    assert ran.code == 2
    assert "question file" in error_line(ran.stderr)
    assert qfile.read_bytes() == before
    assert server.seen == []


def test_output_onto_an_input_is_refused_before_writing(
    server: HostileServer, qfile: Path, tmp_path: Path
) -> None:
    inp = _write_lines(tmp_path / "in.jsonl", {"id": 1, "text": "x"})
    before = inp.read_bytes()
    ran = _batch(server, qfile, str(inp), "-o", str(inp))
    assert ran.code == 2
    assert inp.read_bytes() == before
    assert server.seen == []


def test_output_into_a_directory_input_is_refused_before_writing(
    server: HostileServer, qfile: Path, tmp_path: Path
) -> None:
    states = tmp_path / "states"
    states.mkdir()
    (states / "one.txt").write_text("ticket one")
    target = states / "out.jsonl"
    ran = run_cli(
        "batch", str(qfile), str(states), "-o", str(target), "--base-url", server.base_url
    )
    assert ran.code == 2
    assert "inside the input directory" in error_line(ran.stderr)
    assert not target.exists()
    assert server.seen == []


# --- two processes on one output -------------------------------------------------------------


def test_a_second_process_on_one_output_is_refused_naming_the_file(
    server: HostileServer, qfile: Path, tmp_path: Path
) -> None:
    """Issue 9: "Two processes on one --output: the second is refused with a clear message
    naming the file (an advisory lock held for the run)"."""
    inp = _write_lines(tmp_path / "in.jsonl", {"id": 1, "text": "x"})
    out = tmp_path / "out.jsonl"
    out.write_text('{"id": 0, "answers": {}}\n')
    holder = os.open(out, os.O_RDONLY)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)  # what a running batch holds
        ran = _batch(server, qfile, str(inp), "-o", str(out))
    finally:
        os.close(holder)
    assert ran.code == 2
    line = error_line(ran.stderr)
    assert str(out) in line and "another" in line
    assert out.read_text() == '{"id": 0, "answers": {}}\n'
    assert server.seen == []
    # Once the holder is gone, the same run goes through (--overwrite: issue 17 §11 refuses a
    # plain re-run onto a file that holds records).
    assert _batch(server, qfile, str(inp), "-o", str(out), "--overwrite").code == 0


# --- resume onto the wrong file ---------------------------------------------------------------


def test_resume_onto_another_question_sets_output_is_refused(
    server: HostileServer, qfile: Path, tmp_path: Path
) -> None:
    """Issue 9: "--resume onto an output from a different question set, or in a different
    format, is refused (each record carries the sha256 of the canonical question set)"."""
    inp = _write_lines(tmp_path / "in.jsonl", {"id": 1, "text": "x"}, {"id": 2, "text": "y"})
    out = tmp_path / "out.jsonl"
    assert _batch(server, qfile, str(inp), "-o", str(out)).code == 0
    sha = {r["questions_sha256"] for r in _jsonl(out)}
    assert len(sha) == 1 and len(next(iter(sha))) == 64
    other = tmp_path / "other.yaml"
    other.write_text(OTHER_QUESTIONS)
    before = out.read_bytes()
    ran = _batch(server, other, str(inp), "-o", str(out), "--resume")
    assert ran.code == 2
    assert "another question set" in error_line(ran.stderr)
    assert out.read_bytes() == before
    assert len(server.seen) == 2


@pytest.mark.parametrize(("first", "second"), [("jsonl", "csv"), ("csv", "json"), ("json", "csv")])
def test_resume_in_another_format_is_refused(
    server: HostileServer, qfile: Path, tmp_path: Path, first: str, second: str
) -> None:
    inp = _write_lines(tmp_path / "in.jsonl", {"id": 1, "text": "x"})
    out = tmp_path / "out.data"
    assert _batch(server, qfile, str(inp), "-o", str(out), "--format", first).code == 0
    before = out.read_bytes()
    ran = _batch(server, qfile, str(inp), "-o", str(out), "--format", second, "--resume")
    assert ran.code == 2
    assert f"written as {first}" in error_line(ran.stderr)
    assert out.read_bytes() == before


# --- ids through every format -----------------------------------------------------------------

HARD_IDS = [
    "line\nbreak",
    "cr\rlf\r\n",
    "back\\slash",
    "literal \\n two chars",
    'quote " and, comma',
    "tab\there",
    "ünïcode ✓",
    " padded ",
    "\u2028separator",
]


def _ids_in(path: Path, fmt: str) -> list[str]:
    from toolnexus.run.resume import read_ids

    return read_ids(str(path), fmt, sink_for(fmt).framing or LINES)


@pytest.mark.parametrize("fmt", ["jsonl", "json", "csv"])
def test_ids_round_trip_losslessly_through_every_format(
    server: HostileServer, qfile: Path, tmp_path: Path, fmt: str
) -> None:
    """Issue 9: "Ids round-trip losslessly through every output format (an id containing a
    newline was written as the two characters \\n in CSV and re-sent on every resume)"."""
    inp = _write_lines(tmp_path / "in.jsonl", *({"id": i, "text": "x"} for i in HARD_IDS))
    out = tmp_path / f"out.{fmt}"
    assert _batch(server, qfile, str(inp), "-o", str(out), "--format", fmt).code == 0
    assert sorted(_ids_in(out, fmt)) == sorted(HARD_IDS)
    sent = len(server.seen)
    ran = _batch(server, qfile, str(inp), "-o", str(out), "--format", fmt, "--resume")
    assert ran.code == 0, ran.stderr
    assert len(server.seen) == sent, "an id was not recognised on resume and was sent again"
    if fmt == "csv":
        rows = list(csv.reader(io.StringIO(out.read_text())))
        assert all(len(r) == len(rows[0]) for r in rows)
        assert out.read_bytes().count(b"\n") == len(HARD_IDS) + 1  # one line per record
    else:
        body = out.read_text()
        parsed = strict_loads(body) if fmt == "json" else _jsonl(out)
        assert sorted(r["id"] for r in parsed) == sorted(HARD_IDS)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ids=st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=4, unique=True))
def test_any_ids_survive_csv_and_resume(ids: list[str]) -> None:
    """Hypothesis drives the ids: whatever text they hold, CSV reads them back and a resume
    sends nothing again."""
    import tempfile

    with (
        tempfile.TemporaryDirectory() as tmp,
        HostileServer() as server,
        pytest.MonkeyPatch.context() as mp,
    ):
        mp.setenv("TYPESAFE_API_KEY", KEY)
        d = Path(tmp)
        q = d / "q.yaml"
        q.write_text(QUESTIONS)
        inp = _write_lines(d / "in.jsonl", *({"id": i, "text": "x"} for i in ids))
        out = d / "out.csv"
        first = _batch(server, q, str(inp), "-o", str(out), "--format", "csv")
        assert first.code in (0, 2), first.stderr
        assert "Traceback" not in first.stderr
        sent = len(server.seen)
        again = _batch(server, q, str(inp), "-o", str(out), "--format", "csv", "--resume")
        assert "Traceback" not in again.stderr
        assert len(server.seen) == sent
        assert set(_ids_in(out, "csv")) == set(ids)


# --- strict JSON ------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["jsonl", "json"])
def test_a_nan_cost_never_reaches_json_output(
    server: HostileServer, qfile: Path, tmp_path: Path, fmt: str
) -> None:
    """Issue 9: "No NaN/Infinity ever in JSON, JSONL or summary output"."""

    def answer(req: Any) -> Reply:
        body = json.dumps(valid_answer(req.json))
        return Reply(
            200, body.replace('"output_tokens": 1}', '"output_tokens": 1, "cost": NaN}').encode()
        )

    server.answer = answer
    inp = _write_lines(tmp_path / "in.jsonl", {"id": 1, "text": "x"})
    out = tmp_path / "out"
    ran = _batch(server, qfile, str(inp), "-o", str(out), "--format", fmt)
    assert ran.code == 3
    # The record says what was wrong; no NaN VALUE is written (a strict parser reads it all).
    records = strict_loads(out.read_text()) if fmt == "json" else _jsonl(out)
    assert records[0]["error"]["code"] == "backend_response"
    assert "cost nan" not in ran.stderr.lower()
    ran = run_cli(
        "eval", str(qfile), "--state-text", "x", "--format", "json", "--base-url", server.base_url
    )
    assert ran.code == 3 and "NaN" not in ran.out


# --- any line ---------------------------------------------------------------------------------

_LINE = st.one_of(
    st.binary(max_size=60).filter(lambda b: b"\n" not in b and b"\r" not in b),
    st.integers(min_value=1, max_value=400).map(lambda n: b"[" * n + b"]" * n),
    st.sampled_from(
        [
            b'{"id": 1, "text": "a"}',
            b'{"id": "1", "text": "b"}',
            b'{"id": null, "text": "c"}',
            b'{"id": 2, "text": NaN}',
            b'{"id": 3, "text": ' + b"9" * 400 + b"}",
            b'{"id": 4}',
            b'{"id": [4], "text": "d"}',
            b'{"id": 5, "text": 5}',
        ]
    ),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=st.lists(_LINE, min_size=1, max_size=6))
def test_any_line_becomes_a_record_never_the_end_of_the_batch(lines: list[bytes]) -> None:
    """Hypothesis drives the JSONL on stdin: "a bad item in a batch becomes that item's error
    record, never the end of the batch". One record per non-blank line, strict JSON, no
    traceback, and a documented exit code."""
    import tempfile

    with (
        HostileServer() as server,
        pytest.MonkeyPatch.context() as mp,
        tempfile.TemporaryDirectory() as tmp,
    ):
        mp.setenv("TYPESAFE_API_KEY", KEY)
        q = TESTS / "fixtures" / "hostile-noul.yaml"
        out = Path(tmp) / "out.jsonl"
        ran = run_cli(
            "batch",
            str(q),
            "-",
            "-o",
            str(out),
            "--id-field",
            "id",
            "--state-field",
            "text",
            "--base-url",
            server.base_url,
            input=b"\n".join(lines) + b"\n",
        )
        assert "Traceback" not in ran.stderr
        assert ran.code in (0, 2, 3), ran.stderr
        records = _jsonl(out)
        assert len(records) == sum(1 for line in lines if line.strip())
