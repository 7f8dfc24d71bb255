"""Reading a record back, derived from its fields (issue 30 item 2: "Typed records, derived
once ... the codecs ... derive from its fields"; the last stop left ``record_from_object``
written by hand beside the fields).

The reader is compiled from each field's metadata (``records.fields.compile_from_object``), and
each answer comes back as its type's record through the registry (``answer_record``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from toolnexus.core.decision import parse_decision
from toolnexus.core.qtypes import registry
from toolnexus.core.qtypes.choice import ChoiceRecord
from toolnexus.core.qtypes.noul import NoulRecord
from toolnexus.core.qtypes.score import ScoreRecord
from toolnexus.records.codec import JsonCodec, JsonlCodec
from toolnexus.records.decision import record
from toolnexus.records.fields import compile_from_object, wire
from toolnexus.records.model import DecisionRecord, ErrorRecord, record_from_object
from typed_sample import BODY, QS


@dataclass(frozen=True)
class _Widened(DecisionRecord):
    """Two more fields, as a later version would add them: neither names a reader."""

    latency_ms: int | None = field(default=None, metadata=wire(omit_none=True, after="invalid"))
    region: str = ""


def _widened() -> _Widened:
    base = record("s1", "sha", parse_decision(BODY, QS), QS)
    fields = {name: getattr(base, name) for name in vars(base)}
    return _Widened(**fields, latency_ms=42, region="eu")


def _through_parquet(obj: Mapping[str, Any]) -> dict[str, Any]:
    pytest.importorskip("pyarrow")
    from toolnexus.records.arrow import records_to_table, table_to_records

    return next(table_to_records(records_to_table([obj], QS)))


def _through_jsonl(obj: Mapping[str, Any]) -> Any:
    return json.loads(JsonlCodec().encode(_Widened.from_object(obj)))


def _through_json(obj: Mapping[str, Any]) -> Any:
    line = JsonCodec().encode(_Widened.from_object(obj), first=False)
    return json.loads(line.removeprefix(b","))


@pytest.mark.parametrize(
    "through",
    [
        pytest.param(dict, id="json-object"),
        pytest.param(_through_jsonl, id="jsonl-line"),
        pytest.param(_through_json, id="json-line"),
        pytest.param(_through_parquet, id="parquet"),
    ],
)
def test_a_field_added_to_the_record_class_is_read_back_without_touching_the_reader(
    through: Any,
) -> None:
    """Issue 30 item 2, read direction (brief: "a field added to a synthetic record subclass
    is read back without touching the reader"): the subclass's fields come back from each
    format's object, and so does everything else, answers as their types' records."""
    rec = _widened()
    back = _Widened.from_object(through(rec.to_object()))
    assert back.latency_ms == 42 and back.region == "eu"
    assert back == rec
    assert back.to_object() == rec.to_object()
    assert [type(a) for a in back.answers.values()] == [NoulRecord, ChoiceRecord, ScoreRecord]


def test_a_field_whose_annotation_has_no_reader_must_name_one() -> None:
    """The reader is derived or said, never guessed: a field of a type with no plain reading
    is refused when its class is compiled, naming the field and the way out."""

    @dataclass(frozen=True)
    class Tagged(DecisionRecord):
        tags: Mapping[str, int] = field(default_factory=dict)

    with pytest.raises(TypeError, match=r"Tagged\.tags: .*wire\(read=\.\.\.\)"):
        compile_from_object(Tagged)

    @dataclass(frozen=True)
    class Said(DecisionRecord):
        tags: Mapping[str, int] = field(default_factory=dict, metadata=wire(read=dict))

    assert compile_from_object(Said)({"id": "a", "tags": {"x": 1}}).tags == {"x": 1}


@pytest.mark.parametrize(
    ("answer", "cls"),
    [
        pytest.param(BODY["answers"]["holds"], NoulRecord, id="noul"),
        pytest.param(BODY["answers"]["pick"], ChoiceRecord, id="choice"),
        pytest.param(BODY["answers"]["grade"], ScoreRecord, id="score"),
        pytest.param({"type": "box", "box": [1, 2, 3, 4]}, registry.AnswerRecord, id="raw-box"),
        pytest.param({"type": 7}, registry.AnswerRecord, id="no-type"),
    ],
)
def test_each_answer_read_back_is_its_types_record(
    answer: dict[str, Any], cls: type[registry.AnswerRecord]
) -> None:
    """Brief item 1: "per-type answer read-back through the qtypes registry (answer_record)":
    a run's line read back holds each answer as its type's record (raw for the rest), and is
    written back byte for byte."""
    line = json.dumps({"id": "a", "schema_version": 1, "answers": {"q": answer}}).encode()
    got = JsonlCodec().decode(line)
    assert isinstance(got, DecisionRecord)
    assert type(got.answers["q"]) is cls and got.answers["q"] == answer
    again = JsonlCodec().encode(got)
    assert json.loads(again)["answers"] == {"q": answer}


def test_an_error_record_reads_its_nested_fields_from_the_metadata() -> None:
    """``error: {code, message}`` comes back through the fields' ``nest`` (ErrorRecord's reader
    is compiled like DecisionRecord's); a message of several lines is one line, as before."""
    got = record_from_object({"id": 3, "error": {"code": "http_503", "message": "down\n now"}})
    assert got == ErrorRecord(3, "http_503", "down now", schema_version=None)
    assert ErrorRecord.from_object({"id": 3, "error": "not an object"}).code == ""


@pytest.fixture
def headcount() -> Any:
    import qtype_headcount

    qtype_headcount.register()
    try:
        yield qtype_headcount
    finally:
        qtype_headcount.unregister()


def test_a_registered_types_csv_cells_are_read_with_their_kinds(headcount: Any) -> None:
    """Issue 30 item 4 (a type registered from one module needs no other edit) for the CSV
    reader: the test's fourth type's count and flag come back from a CSV run as a number and
    a boolean, as its JSONL line has them (on main they came back as the text "3" and
    "false": the cells were read by a list of the built-in field names)."""
    from toolnexus.records.csvcodec import (
        CsvCodec,
        csv_header,
    )
    from toolnexus.records.decision import sample_record

    qs = {"people": headcount.HeadcountQuestion("How many?", 12), "holds": QS["holds"]}
    body = {"model": "m", "answers": {"people": {"type": "headcount", "headcount": 3,
                                                 "confidence": 0.8},
                                      "holds": {"type": "noul", "noul": 0.9}}}  # fmt: skip
    rec = record("s1", "sha", parse_decision(body, qs), qs)
    codec = CsvCodec(csv_header(sample_record(qs, questions_sha256="sha").to_object()))
    back = codec.decode(codec.encode(rec))
    assert isinstance(back, DecisionRecord)
    assert back.answers["people"] == {**rec.answers["people"]}
    assert back.answers["people"]["headcount"] == 3
    assert back.answers["people"]["none_seen"] is False
    assert JsonlCodec().encode(back) == JsonlCodec().encode(rec)
