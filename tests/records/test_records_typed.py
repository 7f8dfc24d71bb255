"""Typed records, derived once (issue 30 item 2).

"``decision_record`` returns a typed record (one answer-record type per question type, and an
error record); the JSONL/JSON/CSV/Parquet codecs, the Arrow schema, the CSV columns and every
renderer derive from its fields. The renderer reads attributes. A decision is validated once on
every path."
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from toolnexus.core.decision import parse_decision
from toolnexus.core.qtypes import registry
from toolnexus.core.qtypes.choice import ChoiceRecord
from toolnexus.core.qtypes.noul import NoulRecord
from toolnexus.core.qtypes.score import ScoreRecord
from toolnexus.evaluate.batchgroups import StateResult
from toolnexus.records import model
from toolnexus.records.codec import JsonlCodec
from toolnexus.records.csvcodec import (
    CsvCodec,
    csv_header,
)
from toolnexus.records.decision import decision_record, record, record_body, sample_record
from toolnexus.records.fields import wire, wire_fields
from toolnexus.records.model import ASKED_KEYS, RECORD_KEYS, DecisionRecord, ErrorRecord
from toolnexus.run.stream import result_record
from typed_sample import BODY, QS


def _decision() -> Any:
    return parse_decision(BODY, QS)


def test_the_batch_path_builds_the_typed_record_without_a_dict_read_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Item 2: "decision_record returns a dict, DecisionRecord is parsed back from that dict":
    the batch's ``result_record`` no longer reads a JSON object back, and writes the same
    object as reading one back gives."""
    expected = DecisionRecord.from_body("s1", "sha", decision_record(_decision(), QS)).to_object()

    def no_read_back(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the batch path read a record back from a dict")

    monkeypatch.setattr(model, "_decision", no_read_back)
    got = result_record("s1", StateResult(_decision()), QS, "sha")
    assert isinstance(got, DecisionRecord)
    assert got.to_object() == expected
    assert json.dumps(got.to_object()) == json.dumps(expected)  # key order too


@pytest.mark.parametrize(
    ("key", "cls", "attrs"),
    [
        pytest.param("holds", NoulRecord, {"type": "noul", "noul": 0.9, "band": "yes"}, id="noul"),
        pytest.param(
            "pick",
            ChoiceRecord,
            {"type": "choice", "choice": "a", "near_uniform": False, "confidence": 0.7},
            id="choice",
        ),
        pytest.param(
            "grade",
            ScoreRecord,
            {"type": "score", "score": 2.0, "level": 2, "label": "good"},
            id="score",
        ),
    ],
)
def test_each_answer_is_its_types_answer_record(
    key: str, cls: type[registry.AnswerRecord], attrs: dict[str, Any]
) -> None:
    """Item 2: "one answer-record type per question type", read by attribute."""
    answer = record("s", None, _decision(), QS).answers[key]
    assert type(answer) is cls
    assert registry.of(answer.type).answer_record is cls
    for name, value in attrs.items():
        assert getattr(answer, name) == value, name
    # read back from a run, an answer's object becomes its type's record again
    again = registry.answer_record(json.loads(json.dumps(answer)))
    assert type(again) is cls and again == answer


def test_record_keys_and_the_arrow_columns_derive_from_the_record_fields() -> None:
    """Item 2: "RECORD_KEYS / to_object / CSV columns / Arrow schema derive from the record
    classes' fields": every field of DecisionRecord is in exactly the lists its metadata says."""
    pytest.importorskip("pyarrow")
    from toolnexus.records.arrow import RUN_COLUMNS, run_schema

    fields = wire_fields(DecisionRecord)
    names = [f.name for f in fields]
    assert tuple(f.name for f in fields if not (f.head or f.extra)) == RECORD_KEYS
    assert ASKED_KEYS == ("packed", "position", "reasked")
    # every field is a typed Arrow column but ``gates``, which a Parquet run keeps in ``extra``
    assert [c for c in RUN_COLUMNS if c not in ("error", "extra")] == [
        n for n in names if n != "gates"
    ]
    assert run_schema(QS).names == list(RUN_COLUMNS)
    # a full record writes every field, in wire order
    full = DecisionRecord("a", "sha", packed=1, position=0, reasked=False, gates={},
                          recalibrated={"file": "f", "sha256": "s"})  # fmt: skip
    assert list(full.to_object()) == names


@dataclass(frozen=True)
class _Widened(DecisionRecord):
    """A record class with one more field, as a later version would add it."""

    latency_ms: int | None = field(default=None, metadata=wire(omit_none=True, after="invalid"))


def test_a_field_added_to_the_record_class_reaches_every_codec() -> None:
    """Item 2: "a field added to the record class appears in every codec": the JSON object,
    the JSONL and JSON lines, and the CSV columns and row, with nothing else edited."""
    rec = _Widened("a", "sha", "m", latency_ms=42)
    obj = rec.to_object()
    assert list(obj)[list(obj).index("invalid") + 1] == "latency_ms"
    assert json.loads(JsonlCodec().encode(rec))["latency_ms"] == 42
    columns = csv_header(obj)
    assert "latency_ms" in columns
    row = CsvCodec(columns).encode(rec).decode()
    assert row.rstrip("\r\n").split(",")[columns.index("latency_ms")] == "42"
    # and left out when None, as the other optional keys are
    assert "latency_ms" not in _Widened("a").to_object()


def test_the_error_record_derives_its_object_from_its_fields() -> None:
    """Item 2 for the error record: ``error: {code, message}`` after the head keys."""
    assert model.ERROR_FIELDS == ("code", "message")
    assert json.dumps(ErrorRecord("a", "http_503", "down", "sha").to_object()) == (
        '{"id": "a", "schema_version": 2, "questions_sha256": "sha", '
        '"error": {"code": "http_503", "message": "down"}}'
    )


def test_the_csv_sample_is_a_typed_record() -> None:
    """The CSV columns are learnt from a typed record of the question set."""
    sample = sample_record(QS, questions_sha256="sha")
    assert isinstance(sample, DecisionRecord)
    assert csv_header(sample.to_object())[:4] == ["id", "error.code", "error.message",
                                                   "schema_version"]  # fmt: skip


class _Shouting(NoulRecord):
    """An answer record whose attributes differ from its string keys: a renderer that reads
    ``a.get("type")`` / ``a["band"]`` shows the keys, one that reads attributes shows these."""

    __slots__ = ()

    @property
    def band(self) -> str:
        return "no"

    @property
    def flags(self) -> tuple[str, ...]:
        return ("near-uniform",)


def test_the_table_renderer_reads_attributes() -> None:
    """Item 3: "The table/eval renderers read attributes, not ``a.get("type")``": the typed
    record is printed as is, its header and each row from attributes."""
    from toolnexus.cli.render.decision import make_console, print_table

    rec = record("s", None, _decision(), {"holds": QS["holds"]})
    answer = rec.answers["holds"]
    shouting = DecisionRecord("s", model="typed-model", answers={"holds": _Shouting(answer)})
    out = io.StringIO()
    print_table(shouting, {"holds": QS["holds"]}, make_console(out, width=120))
    text = out.getvalue()
    assert "model typed-model" in text
    row = next(line for line in text.splitlines() if line.startswith("holds"))
    assert " no " in row and "near-uniform" in row and "yes" not in row


def test_eval_json_is_the_typed_records_body() -> None:
    """``eval --format json`` prints the record without the state's head keys, as before."""
    rec = record("s", "sha", _decision(), QS)
    body = record_body(rec)
    assert body == decision_record(_decision(), QS)
    assert list(body)[:3] == ["model", "calibrated", "cached"]
