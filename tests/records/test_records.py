"""The one record model and its codecs (issue 16 §2): "any record, any id (newline, CR, ``\\``,
U+2028, lone surrogates, control characters) written in each format and read back by ``report``
and by ``--resume`` is the same record"."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolnexus.records import (
    CODECS,
    DecisionRecord,
    ErrorRecord,
    Record,
    RecordUsage,
    record_from_object,
)
from toolnexus.records.csvcodec import csv_header
from toolnexus.report.runs import iter_records
from toolnexus.run.codecs import sink_for
from toolnexus.run.output import OutputWriter
from toolnexus.run.resume import LINES, read_ids, read_prior

FORMATS = sorted(CODECS)

#: Any id text: every code point, lone surrogates and controls included.
ANY_TEXT = st.text(st.characters(exclude_categories=()), max_size=12)
IDS = st.one_of(
    ANY_TEXT,
    st.sampled_from(["a\\b\nc", "\r", "\\n", "\u2028", "\ud800", "\x00\x1b[2J", "7"]),
    st.integers(min_value=-(2**70), max_value=2**70),
)
#: Text of other cells: a CSV cell other than the id writes a newline as ``\n`` (one physical
#: line a row), and UTF-8 only, so those two are not round-tripped there.
CELL_TEXT = st.text(
    st.characters(exclude_categories=("Cs",), exclude_characters="\r\n"), min_size=1, max_size=8
)
FLOATS = st.floats(allow_nan=False, allow_infinity=False)
FLAGS = st.lists(st.sampled_from(["near-uniform", "uncalibrated", "uncertain", "invalid"]))
KEYS = st.from_regex(r"[a-z][a-z0-9_.]{0,6}", fullmatch=True)


@st.composite
def answers(draw: Any) -> dict[str, Any]:
    kind = draw(st.sampled_from(["noul", "choice", "score"]))
    out: dict[str, Any] = {"type": kind}
    if kind == "noul":
        out["noul"] = draw(FLOATS)
    elif kind == "choice":
        out["choice"] = draw(CELL_TEXT)
        out["probabilities"] = draw(st.dictionaries(CELL_TEXT, FLOATS, max_size=3))
        out["confidence"] = draw(FLOATS)
        out["near_uniform"] = draw(st.booleans())
    else:
        out["score"] = draw(FLOATS)
        out["legend"] = draw(st.dictionaries(st.sampled_from("0123"), CELL_TEXT, max_size=3))
        out["probabilities"] = draw(st.dictionaries(st.sampled_from("0123"), FLOATS, max_size=3))
        out["confidence"] = draw(FLOATS)
        out["level"] = draw(st.integers(0, 255))
        out["label"] = draw(CELL_TEXT)
    out["band"] = draw(st.sampled_from(["yes", "no", "uncertain"]))
    out["flags"] = draw(FLAGS)
    return out


DECISIONS = st.builds(
    DecisionRecord,
    id=IDS,
    questions_sha256=st.one_of(st.none(), st.from_regex(r"[0-9a-f]{64}", fullmatch=True)),
    model=CELL_TEXT,
    calibrated=st.booleans(),
    cached=st.booleans(),
    usage=st.builds(
        RecordUsage,
        st.integers(0, 10**9),
        st.integers(0, 10**9),
        st.one_of(st.none(), FLOATS),
    ),
    thresholds=st.fixed_dictionaries({"yes": FLOATS, "no": FLOATS, "min_confidence": FLOATS}),
    answers=st.dictionaries(KEYS, answers(), max_size=3),
    flags=FLAGS.map(tuple),
    invalid=st.one_of(st.none(), CELL_TEXT),
)
ERRORS = st.builds(
    ErrorRecord,
    id=IDS,
    code=st.from_regex(r"[a-z_]{1,12}", fullmatch=True),
    message=st.text(st.characters(exclude_categories=("Cs",)), max_size=20),
    questions_sha256=st.one_of(st.none(), st.from_regex(r"[0-9a-f]{64}", fullmatch=True)),
)


def _columns(records: list[Record]) -> list[str]:
    """A header holding every column of these records (batch learns it from the question set)."""
    columns: list[str] = []
    for r in records:
        columns += [c for c in csv_header(r.to_object()) if c not in columns]
    return columns


def _as_read(record: Record, fmt: str) -> Record:
    """What a format can carry of ``record``: CSV has no integer type for an id (``7`` and
    ``"7"`` are one id to --resume, which keys by text)."""
    if fmt == "csv" and isinstance(record.id, int):
        obj = record.to_object()
        obj["id"] = str(record.id)
        back = record_from_object(obj)
        assert back is not None
        return back
    return record


@pytest.mark.parametrize("fmt", FORMATS)
@settings(max_examples=150, deadline=None)
@given(records=st.lists(st.one_of(DECISIONS, ERRORS), min_size=1, max_size=4))
def test_any_record_reads_back_the_same_by_report_and_by_resume(
    fmt: str, records: list[Record]
) -> None:
    """Issue 16 §2: one codec per format; report and --resume read back what batch wrote."""
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / f"run.{fmt}")
        writer = OutputWriter(path, fmt, _columns(records))
        for r in records:
            writer.write(r)
        writer.close()
        by_report = [record_from_object(obj) for _, obj in iter_records(path, fmt)]
        assert by_report == [_as_read(r, fmt) for r in records]
        assert read_ids(path, fmt, sink_for(fmt).framing or LINES) == [r.key for r in records]
        prior = read_prior(path, fmt, framing=sink_for(fmt).framing or LINES)
        assert prior.records == len(records)
        assert prior.ok | prior.errors == {r.key for r in records}


@pytest.mark.parametrize(
    "item_id",
    [
        pytest.param("a\\b\nc", id="backslash-and-newline"),
        pytest.param("x\r\ny", id="crlf"),
        pytest.param("\\n", id="literal-backslash-n"),
        pytest.param("line\u2028sep", id="u2028"),
        pytest.param("\udcff", id="lone-surrogate"),
        pytest.param("\x07\x1b[31m", id="controls"),
    ],
)
def test_a_csv_run_reports_the_ids_a_jsonl_run_reports(tmp_path: Path, item_id: str) -> None:
    """Issue 16: "report reads a CSV run's escaped ids verbatim (a\\b + newline + c comes back
    as a\\\\b\\\\nc)"; the same batch reports the same ids from CSV and from JSONL."""
    record = DecisionRecord(item_id, model="m", answers={"q": {"type": "noul", "noul": 0.5}})
    ids = {}
    for fmt in ("jsonl", "csv"):
        path = str(tmp_path / f"run.{fmt}")
        writer = OutputWriter(path, fmt, _columns([record]))
        writer.write(record)
        writer.close()
        ids[fmt] = [obj["id"] for _, obj in iter_records(path, fmt)]
    assert ids["csv"] == ids["jsonl"] == [item_id]
