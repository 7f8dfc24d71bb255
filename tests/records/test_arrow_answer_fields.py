"""A run stored by columns (Parquet / Arrow) learns each answer's fields from its type (issue 30
item 2: "the Arrow schema ... derive[s] from its fields"; item 4: a type registered from one
module needs no edit elsewhere). The last stop still named answer fields in the Arrow writer
and reader (``probabilities``, ``legend``; ``label``, ``level``, ``band`` kept when null): a type
with a map of its own, or a derived field written null, was stored or read back wrong.

``tally`` is registered here alone: its answer is a map (``tally``: item -> count; a type's
struct has a field named after the type, ``records.arrow.struct_kind``) and a derived ``top``
(null for an empty tally, so its record class lists it in ``written_null``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import pytest

from toolnexus import NoulQuestion
from toolnexus.core.decision import parse_decision
from toolnexus.core.qtypes import registry
from toolnexus.records.decision import record

pytest.importorskip("pyarrow")

NAME = "tally"


@dataclass(frozen=True)
class TallyQuestion:
    instructions: Any
    type: Literal["tally"] = "tally"


@dataclass(frozen=True)
class TallyAnswer:
    type: ClassVar[Literal["tally"]] = "tally"
    tally: Mapping[str, int]

    def to_wire(self) -> dict[str, Any]:
        return {"type": NAME, "tally": self.tally}


class TallyRecord(registry.AnswerRecord):
    __slots__ = ()
    written_null = registry.AnswerRecord.written_null | {"top"}


def _record(answer: TallyAnswer, out: dict[str, Any], flags: list[str]) -> None:
    counts = answer.tally if isinstance(answer.tally, Mapping) else {}
    out["top"] = max(counts, key=counts.__getitem__) if counts else None


TALLY = registry.QuestionType(
    name=NAME,
    question=TallyQuestion,
    answer=TallyAnswer,
    from_wire=lambda obj, key, where: TallyQuestion(obj.get("instructions")),
    to_wire=lambda q: {"type": NAME, "instructions": q.instructions},
    decode=lambda obj, key, q: TallyAnswer(obj.get("tally")),
    validate=lambda q, a: None if isinstance(a.tally, Mapping) else "tally is not an object",
    sample=lambda q: {"type": NAME, "tally": {}},
    synthetic=lambda q, rng: {"type": NAME, "tally": {}},
    text=lambda a: str(a.get("top")),
    record=_record,
    arrow=lambda pa: [("tally", pa.map_(pa.string(), pa.int64())), ("top", pa.string())],
    answer_record=TallyRecord,
)
QS: dict[str, Any] = {"t": TallyQuestion("Count the fruit"), "holds": NoulQuestion("Ripe?")}


@pytest.fixture
def tally() -> Iterator[None]:
    registry.register(TALLY)
    try:
        yield
    finally:
        registry.unregister(NAME)


def _object(counts: Any) -> dict[str, Any]:
    body = {"model": "m", "answers": {"t": {"type": NAME, "tally": counts},
                                      "holds": {"type": "noul", "noul": 0.5}}}  # fmt: skip
    return record("s1", "sha", parse_decision(body, QS), QS).to_object()


@pytest.mark.parametrize(
    "counts",
    [
        pytest.param({"apple": 3, "pear": 5}, id="a-map-of-its-own"),
        pytest.param({}, id="derived-field-written-null"),
        pytest.param([["apple", 3]], id="not-a-map-kept-as-json"),
    ],
)
def test_a_registered_types_answer_round_trips_through_arrow(tally: None, counts: Any) -> None:
    """Brief item 2: "derive [the answer-field names in records/arrowcolumns.py] from each
    type's record class in qtypes/ (registry), so the test-registered 4th type needs no edit
    there": its map is stored as a map and read back as an object, its derived field written
    null stays null, and an answer whose map is not one is its JSON text, all as JSONL has it."""
    from toolnexus.records.arrow import records_to_table, table_to_records

    obj = _object(counts)
    table = records_to_table([obj], QS)
    back = next(table_to_records(table))
    assert back == obj
    assert json.dumps(back) == json.dumps(obj)  # key order too
    stored = table.column("answers").to_pylist()[0]["t"]
    assert (stored["json"] is None) is isinstance(counts, dict)
