"""``toolnexus batch`` inputs and outputs, without a server.

Rules under test (issue 5): "Input is read lazily"; "A malformed line or row becomes an error
record for that state (line number in the message); it never stops the batch"; "Every record in
the output file is a complete line, even when the process is killed"; "--resume reads the ids
already present"; "--ordered keeps input order (with a bounded reorder buffer)"; "--shard I/N
processes only the states whose id hashes to shard I".
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

from toolnexus.cli.batch_options import parse_shard
from toolnexus.cli.errors import CliError
from toolnexus.core.errors import RunError
from toolnexus.records import DecisionRecord, ErrorRecord
from toolnexus.records.csvcodec import flatten
from toolnexus.run.codecs import iter_inputs, sink_for
from toolnexus.run.inputs import read_jsonl
from toolnexus.run.items import (
    InputItem,
    InputSpec,
)
from toolnexus.run.output import OutputWriter, ReorderBuffer, encode_line
from toolnexus.run.resume import LINES, compact, read_prior
from toolnexus.run.select import shard_of


def _jsonl(text: str, spec: InputSpec) -> list[InputItem]:
    return list(read_jsonl(io.BytesIO(text.encode("utf-8")), "in.jsonl", spec))


@pytest.mark.parametrize(
    ("text", "spec", "want"),
    [
        pytest.param(
            '"a"\n{"x": 1}\n\n[1]\n',
            InputSpec(),
            [("in.jsonl:1", "a"), ("in.jsonl:2", {"x": 1}), ("in.jsonl:4", [1])],
            id="any-json-value-id-is-path-and-line-blank-lines-counted",
        ),
        pytest.param(
            '{"id": "t1", "state": "charged twice"}\n{"id": 7, "state": {"a": 1}}\n',
            InputSpec(id_field="id", state_fields=("state",)),
            [("t1", "charged twice"), (7, {"a": 1})],
            id="id-and-state-fields",
        ),
        pytest.param(
            '{"id": "t1", "body": "x"}\n',
            InputSpec(id_field="id"),
            [("t1", {"id": "t1", "body": "x"})],
            id="id-field-only-state-is-the-whole-object",
        ),
    ],
)
def test_jsonl_states(text: str, spec: InputSpec, want: list[tuple[Any, Any]]) -> None:
    got = _jsonl(text, spec)
    assert [(i.id, i.state) for i in got] == want
    assert all(i.error is None for i in got)


@pytest.mark.parametrize(
    ("text", "spec", "code", "fragment"),
    [
        pytest.param(
            '"ok"\n{bad\n',
            InputSpec(),
            "malformed_input",
            "in.jsonl:2: invalid JSON",
            id="bad-json",
        ),
        pytest.param('"ok"\n\xff\n', InputSpec(), "malformed_input", "in.jsonl:2: ", id="not-utf8"),
        pytest.param(
            "3\n", InputSpec(), "invalid_state", "in.jsonl:1: a state must be", id="number-state"
        ),
        pytest.param("null\n", InputSpec(), "invalid_state", "got null", id="null-state"),
        pytest.param(
            '{"state": "x"}\n',
            InputSpec(id_field="id", state_fields=("state",)),
            "malformed_input",
            "id field 'id' missing",
            id="missing-id",
        ),
        pytest.param(
            '{"id": true, "state": "x"}\n',
            InputSpec(id_field="id", state_fields=("state",)),
            "malformed_input",
            "not a string or integer",
            id="bool-id",
        ),
        pytest.param(
            '{"id": "a"}\n',
            InputSpec(id_field="id", state_fields=("state",)),
            "malformed_input",
            "state field 'state' missing",
            id="missing-state",
        ),
        pytest.param(
            '"just text"\n',
            InputSpec(id_field="id"),
            "malformed_input",
            "expected an object",
            id="not-an-object",
        ),
    ],
)
def test_a_malformed_line_is_an_error_item_with_its_line(
    text: str, spec: InputSpec, code: str, fragment: str
) -> None:
    """'A malformed line or row becomes an error record for that state (line number in the
    message); it never stops the batch.'"""
    raw = text.encode("latin-1") if "\xff" in text else text.encode()
    after = b'{"id": "z", "state": "after"}\n' if spec.id_field else b'"after"\n'
    items = list(read_jsonl(io.BytesIO(raw + after), "in.jsonl", spec))
    bad = [i for i in items if i.error is not None]
    assert len(bad) == 1
    assert bad[0].error is not None and bad[0].error[0] == code
    assert fragment in bad[0].error[1]
    assert "\n" not in bad[0].error[1]
    # The batch goes on: the line after the bad one is still read.
    assert items[-1].state in ("after", {"id": "z", "state": "after"})


def test_jsonl_reading_is_lazy() -> None:
    """'Input is read lazily': the reader hands on one state before reading the next."""

    class Lines(io.RawIOBase):
        served = 0

        def __iter__(self) -> Any:
            return self

        def __next__(self) -> bytes:
            Lines.served += 1
            return b'"s"\n'

    it = read_jsonl(Lines(), "endless", InputSpec())  # type: ignore[arg-type]
    assert [next(it).state for _ in range(3)] == ["s", "s", "s"]
    assert Lines.served == 3


def test_csv_rows(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text(
        'id,body,team\n1,"charged, twice",billing\n2,only two\n3,"multi\nline",ops\n4,x,y,extra\n',
        encoding="utf-8",
    )
    items = list(iter_inputs([str(path)], InputSpec(id_field="id", state_fields=("body",))))
    assert [(i.id, i.state) for i in items[:1]] == [("1", "charged, twice")]
    assert items[1].error == ("malformed_input", f"{path}:3: row has 2 fields, the header has 3")
    assert (items[2].id, items[2].state) == ("3", "multi\nline")
    # The quoted newline made row 3 two lines long: row 4 starts on line 6.
    assert items[3].error is not None and items[3].error[1].startswith(f"{path}:6: row has 4")
    whole = list(iter_inputs([str(path)], InputSpec()))
    assert whole[0].id == f"{path}:2"
    assert whole[0].state == {"id": "1", "body": "charged, twice", "team": "billing"}


def test_csv_unknown_column_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("id,body\n1,x\n", encoding="utf-8")
    with pytest.raises(RunError, match="--state-field 'text' is not a column"):
        list(iter_inputs([str(path)], InputSpec(state_fields=("text",))))


def test_directory_and_glob(tmp_path: Path) -> None:
    d = tmp_path / "states"
    (d / "sub").mkdir(parents=True)
    (d / "b.txt").write_text("charged twice\n", encoding="utf-8")
    (d / "a.json").write_text('{"cmd": "ls"}', encoding="utf-8")
    (d / "sub" / "c.yaml").write_text("- one\n- two\n", encoding="utf-8")
    (d / "sub" / "d.json").write_text("42", encoding="utf-8")
    (d / "sub" / "e.json").write_text("{oops", encoding="utf-8")
    (d / ".hidden.txt").write_text("skip me", encoding="utf-8")
    # Issue 17 §9: subfolders only when asked (--recursive).
    top = list(iter_inputs([str(d)], InputSpec()))
    assert [Path(str(i.id)).name for i in top] == ["a.json", "b.txt"]
    items = list(iter_inputs([str(d)], InputSpec(recursive=True)))
    assert [Path(str(i.id)).name for i in items] == [
        "a.json",
        "b.txt",
        "c.yaml",
        "d.json",
        "e.json",
    ]
    assert [i.state for i in items[:3]] == [{"cmd": "ls"}, "charged twice", ["one", "two"]]
    assert items[3].error is not None and items[3].error[0] == "invalid_state"
    assert items[4].error is not None and items[4].error[0] == "malformed_input"
    assert f"{d}/sub/e.json:1:2" in items[4].error[1]
    globbed = list(iter_inputs([str(d / "*.txt")], InputSpec()))
    assert [(i.id, i.state) for i in globbed] == [(str(d / "b.txt"), "charged twice")]


def test_stdin_is_jsonl() -> None:
    items = list(iter_inputs(["-"], InputSpec(), stdin=io.BytesIO(b'"a"\n"b"\n')))
    assert [(i.id, i.state) for i in items] == [("-:1", "a"), ("-:2", "b")]


# --- shards ------------------------------------------------------------------------------


def test_shard_is_sha256_of_the_id_text() -> None:
    """'--shard I/N ... by a stable hash of the id' (sha256, not the salted hash())."""
    key = "ticket-17"
    want = int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") % 3 + 1
    assert shard_of(key, 3) == want
    spread = {shard_of(f"t{i}", 3) for i in range(100)}
    assert spread == {1, 2, 3}


@pytest.mark.parametrize(
    "text",
    [pytest.param(t, id=t or "empty") for t in ["0/3", "4/3", "1/0", "a/b", "3", "1/-1", ""]],
)
def test_bad_shard_is_a_usage_error(text: str) -> None:
    with pytest.raises(CliError, match="--shard takes I/N"):
        parse_shard(text)


# --- output ------------------------------------------------------------------------------


def _ok(i: str) -> DecisionRecord:
    return DecisionRecord(i, model="m", answers={"q": {"type": "noul", "noul": 0.5, "flags": []}})


COLUMNS = [
    "id",
    "error.code",
    "error.message",
    "model",
    "answers.q.type",
    "answers.q.noul",
    "answers.q.flags",
]


@pytest.mark.parametrize("fmt", ["jsonl", "json", "csv"])
def test_resume_reads_ids_and_drops_a_cut_short_line(tmp_path: Path, fmt: str) -> None:
    """'Every record ... is a complete line, even when the process is killed': a resumed run
    cuts a short last line off, and the last record of an id is the one that counts."""
    out = tmp_path / f"out.{fmt}"
    w = OutputWriter(str(out), fmt, COLUMNS)
    w.write(_ok("a"))
    w.write(ErrorRecord("b", "backend_http", "HTTP 500"))
    w.close(finished=False)  # killed: a json array stays open
    whole = out.read_bytes()
    with open(out, "ab") as f:  # a kill in the middle of a write
        f.write(encode_line(_ok("c"), fmt, COLUMNS, first=False)[:-7])
    prior = read_prior(str(out), fmt, framing=sink_for(fmt).framing or LINES)
    assert prior.ok == {"a"} and prior.errors == {"b"}
    assert prior.keep_bytes == len(whole)
    w = OutputWriter(str(out), fmt, COLUMNS, prior)
    w.write(_ok("b"))  # --retry-errors: the new record supersedes the error
    w.write(_ok("c"))
    w.close()
    prior = read_prior(str(out), fmt, framing=sink_for(fmt).framing or LINES)
    assert prior.ok == {"a", "b", "c"} and prior.errors == set() and prior.repeated == {"b"}
    compact(str(out), fmt, prior.repeated, COLUMNS, sink_for(fmt).framing or LINES)
    after = read_prior(str(out), fmt, framing=sink_for(fmt).framing or LINES)
    assert after.records == 3 and after.repeated == set() and after.ok == {"a", "b", "c"}
    text = out.read_text(encoding="utf-8")
    if fmt == "json":
        assert [r["id"] for r in json.loads(text)] == ["a", "b", "c"]
    if fmt == "jsonl":
        assert [json.loads(line)["id"] for line in text.splitlines()] == ["a", "b", "c"]
    if fmt == "csv":
        assert text.splitlines()[0] == ",".join(COLUMNS)
        assert len(text.splitlines()) == 4


def test_csv_rows_stay_one_physical_line(tmp_path: Path) -> None:
    record = DecisionRecord("x", model="two\nlines")
    line = encode_line(record, "csv", COLUMNS)
    assert line.count(b"\n") == 1 and b"two\\nlines" in line


def test_flatten_keeps_deep_maps_whole() -> None:
    flat = flatten({"a": {"b": {"c": {"d": 1}}}, "usage": {"cost": None}})
    assert flat == {"a.b.c": {"d": 1}, "usage.cost": None}


def test_error_record_is_one_line() -> None:
    assert ErrorRecord(3, "backend_http", "HTTP 500:\n  boom").to_object() == {
        "id": 3,
        "schema_version": 2,
        "error": {"code": "backend_http", "message": "HTTP 500: boom"},
    }


def test_reorder_buffer_releases_in_order_and_bounds_what_it_holds() -> None:
    """'--ordered keeps input order (with a bounded reorder buffer)'."""

    async def run() -> tuple[list[int], int, bool]:
        buf = ReorderBuffer(window=3)
        seqs = [await buf.admit() for _ in range(3)]
        blocked = asyncio.ensure_future(buf.admit())  # a 4th would exceed the window
        await asyncio.sleep(0)
        was_blocked = not blocked.done()
        out: list[int] = []
        out += await buf.done(seqs[2], 2)
        out += await buf.done(seqs[1], 1)
        assert out == []  # 0 is still running: nothing may leave
        out += await buf.done(seqs[0], 0)
        seq3 = await blocked
        out += await buf.done(seq3, 3)
        return out, buf.peak, was_blocked

    out, peak, was_blocked = asyncio.run(run())
    assert out == [0, 1, 2, 3]
    assert was_blocked
    assert peak <= 3
