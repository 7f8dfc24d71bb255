"""A fourth question type, registered by a test (issue 30 item 4: "prove the registry with a
fourth type that a test registers (question, answer, record, rendering, synthetic answer)").

``headcount``: how many of something the state shows, out of ``criteria.max``. Its answer is
``{"type": "headcount", "headcount": <int 0..max>, "confidence": <0..1>}``. Everything the library
needs to ask, decode, validate, record, render, synthesize and report it is in this one module:
:func:`register` adds it, :func:`unregister` takes it away again. No file under src/ names it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from toolnexus.core.errors import DecisionError, QuestionError
from toolnexus.core.qtypes import registry
from toolnexus.core.qtypes.values import number

NAME = "headcount"


@dataclass(frozen=True)
class HeadcountQuestion:
    """How many, out of at most ``max``."""

    instructions: Any
    max: int = 10
    type: Literal["headcount"] = "headcount"


@dataclass(frozen=True)
class HeadcountAnswer:
    """The count the model saw, and its confidence in it."""

    type: ClassVar[Literal["headcount"]] = "headcount"
    headcount: int
    confidence: float

    def to_wire(self) -> dict[str, Any]:
        return {"type": NAME, "headcount": self.headcount, "confidence": self.confidence}


def _from_wire(obj: Mapping[str, Any], key: str, where: str) -> HeadcountQuestion:
    criteria = obj.get("criteria")
    top = criteria.get("max") if isinstance(criteria, Mapping) else None
    if isinstance(top, bool) or not isinstance(top, int) or top < 1:
        raise QuestionError(f"classifier: {where}headcount criteria must be {{max: <count>}}", key)
    return HeadcountQuestion(obj.get("instructions"), top)


def _to_wire(question: HeadcountQuestion) -> dict[str, Any]:
    return {"type": NAME, "instructions": question.instructions, "criteria": {"max": question.max}}


def _decode(obj: Mapping[str, Any], key: str, question: Any) -> HeadcountAnswer:
    headcount = obj.get("headcount")
    if isinstance(headcount, bool) or not isinstance(headcount, int):
        raise DecisionError(f'classifier: answer "{key}": headcount must be a whole number', key)
    return HeadcountAnswer(headcount, number(obj.get("confidence"), "confidence", key))


def _validate(question: HeadcountQuestion, answer: HeadcountAnswer) -> str | None:
    if not 0 <= answer.headcount <= question.max:
        return f"headcount is {answer.headcount}, outside 0..{question.max}"
    return None


def _record(answer: HeadcountAnswer, out: dict[str, Any], flags: list[str]) -> None:
    out["none_seen"] = answer.headcount == 0


def _band(answer: HeadcountAnswer, t: Mapping[str, float]) -> registry.Band:
    return "yes" if answer.confidence >= t["min_confidence"] else "uncertain"


def _synthetic(question: Mapping[str, Any], rng: Any) -> dict[str, Any]:
    return {
        "type": NAME,
        "headcount": rng.randint(0, question["criteria"]["max"]),
        "confidence": rng.randint(50, 99) / 100,
    }


def _lint(obj: Mapping[str, Any], sink: registry.LintSink, where: str) -> None:
    criteria = obj.get("criteria")
    top = criteria.get("max") if isinstance(criteria, Mapping) else None
    if isinstance(top, bool) or not isinstance(top, int) or top < 1:
        sink.add(("criteria",), "TN020", f"{where}a headcount needs criteria {{max: <count>}}")


LLM = registry.LlmHooks(
    prompt='- "headcount": how many the instructions ask about, at most "criteria.max": '
    '{"type": "headcount", "headcount": <whole number>, "confidence": <number 0..1>}',
    schema=lambda q: {
        "type": "object",
        "properties": {
            "type": {"type": "string", "enum": [NAME]},
            "headcount": {"type": "integer"},
            "confidence": {"type": "number"},
        },
        "required": ["type", "headcount", "confidence"],
        "additionalProperties": False,
    },
)


HEADCOUNT = registry.QuestionType(
    name=NAME,
    question=HeadcountQuestion,
    answer=HeadcountAnswer,
    from_wire=_from_wire,
    to_wire=_to_wire,
    decode=_decode,
    validate=_validate,
    sample=lambda q: {"type": NAME, "headcount": 0, "confidence": 0.5},
    synthetic=_synthetic,
    text=lambda a: f"{a.get('headcount')} counted",
    record=_record,
    band=_band,
    llm=LLM,
    lint=_lint,
    where_fields={"headcount": True, "confidence": True},
    arrow=lambda pa: [
        ("headcount", pa.int64()),
        ("confidence", pa.float64()),
        ("none_seen", pa.bool_()),
    ],
)


def register() -> None:
    registry.register(HEADCOUNT)


def unregister() -> None:
    registry.unregister(NAME)


def attach_report() -> None:
    """The type's report accumulator, attached from the report layer (its ``report`` hook):
    it counts the answers and their confidence, as every modelled type does."""
    from toolnexus.core.qtypes.registry import REPORT, attach
    from toolnexus.report.accumulators import QuestionStats

    class HeadcountStats(QuestionStats):
        type = NAME

        def add(self, answer: Mapping[str, Any], label: str | None, sid: str = "") -> None:
            self._count_common(answer, sid)
            self.confidences.append(answer["confidence"])

    attach(NAME, REPORT, HeadcountStats)
