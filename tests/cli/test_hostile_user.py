"""Hostile round 3, the user's side (issue 17, acceptance: "attack the result once more
as a hostile user and a hostile server would, with inputs that are not in this list").

Each test says in its docstring what it tried and what held, or what was found and fixed with
it. The user is the CLI in-process (``clirun.run_cli``): inputs, files and outputs a
hostile or careless user hands it; the server is a well-behaved ``HostileServer``.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from clirun import error_line, run_cli
from hostile_cli import run_batch, write_jsonl, write_questions
from hostile_server import HostileServer, server_fixture

server = server_fixture("tnk-round3-user-0123456789")


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
    q = write_questions(tmp_path, NEWLINE_KEY)
    out = tmp_path / "out.csv"
    ran = run_batch(q, write_jsonl(tmp_path, 3), server, "--format", "csv", "-o", str(out))
    assert ran.code == 0, ran.stderr
    lines = out.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 4, lines  # a header and three rows, each one line
    assert "answers.a\\nb\\\\c.noul" in lines[0]
    ran = run_batch(
        q, write_jsonl(tmp_path, 5), server, "--format", "csv", "-o", str(out), "--resume"
    )
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
    q = write_questions(
        tmp_path, f'questions:\n  "{key}":\n    type: noul\n    instructions: Refund?\n'
    )
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

    q, inp, cdir = write_questions(tmp_path), write_jsonl(tmp_path, 1), tmp_path / "cache"
    args = ("--cache", "--cache-dir", str(cdir), "--overwrite", "-o", str(tmp_path / "o.jsonl"))
    assert run_batch(q, inp, server, *args).code == 0
    db = cdir / "decisions.sqlite3"
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] >= 1
        conn.execute("PRAGMA user_version=0")  # a file from before the schema had a number
    assert "1 cached" in run_batch(q, inp, server, *args).stderr
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA user_version=999")
    ran = run_batch(q, inp, server, *args)
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
    q = write_questions(tmp_path)
    inp = tmp_path / "in.jsonl"
    inp.write_text("".join(json.dumps({"id": i, "text": "x"}) + "\n" for i in [1, "2", 3]))
    out = tmp_path / "out.jsonl"
    assert run_batch(q, inp, server, "-o", str(out)).code == 0
    labels = tmp_path / "labels.jsonl"
    labels.write_text(f'{{"id": 1, "refund": "yes"}}\n{{"id": {label_id}, "refund": "no"}}\n')
    ran = run_cli("report", str(out), "--labels", str(labels), "--format", "json")
    assert ran.code == 2
    line = error_line(ran.stderr)
    assert line.startswith(f"{labels}:2: id ") and words in line and len(line) < 300, line
    bad = tmp_path / "bad.jsonl"
    bad.write_text(f'{{"id": {label_id}, "text": "x"}}\n')
    bad_out = tmp_path / "bad-out.jsonl"
    assert run_batch(q, bad, server, "-o", str(bad_out)).code == 2
    record = json.loads(bad_out.read_text())
    message = record["error"]["message"]
    assert record["error"]["code"] == "malformed_input" and message.startswith(f"{bad}:1: ")
    assert len(message) < 300, message  # the 10,000 numbers are not repeated back


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
    q = write_questions(tmp_path)
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
    q, inp, out = write_questions(tmp_path), write_jsonl(tmp_path, 4), tmp_path / "out.jsonl"
    assert run_batch(q, inp, server, "-o", str(out)).code == 0
    lines = out.read_bytes().splitlines(keepends=True)
    out.write_bytes(b"".join(lines[:2]) + lines[2][:30])
    ran = run_batch(q, inp, server, "-o", str(out), "--resume")
    assert ran.code == 0 and "2 skipped" in ran.stderr, ran.stderr
    records = [json.loads(line) for line in out.read_bytes().splitlines()]
    assert sorted(r["id"] for r in records) == ["t0", "t1", "t2", "t3"]
    assert run_cli("report", str(out), "--format", "json").code == 0


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
    q = write_questions(tmp_path)
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

    q, inp = write_questions(tmp_path), write_jsonl(tmp_path, 2)
    old = b'{"id":"old","error":{"code":"backend_http","message":"x"}}\n'
    out = tmp_path / "out.jsonl"
    out.write_bytes(old)
    out.chmod(0o644)
    assert run_batch(q, inp, server, "-o", str(out), "--overwrite").code == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o644
    assert out.read_bytes() != old
    real = tmp_path / "elsewhere" / "real.jsonl"
    real.parent.mkdir()
    real.write_bytes(old)
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)
    assert run_batch(q, inp, server, "-o", str(link), "--overwrite").code == 0
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert [json.loads(line)["id"] for line in real.read_bytes().splitlines()] == ["t0", "t1"]
    assert sorted(p.name for p in real.parent.iterdir()) == ["real.jsonl"]  # no temporary left
