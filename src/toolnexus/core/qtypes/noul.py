"""The noul type (seed 001): the probability that a statement holds, one number in 0..1 and no
confidence. Its question, its answer and every hook, registered with the type registry. Pure.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from ..errors import QuestionError
from . import registry
from .draws import Draws
from .values import (
    check_instructions,
    closed_schema,
    fixed,
    got,
    json_kind,
    number,
    number_schema,
    tag_schema,
)

__all__ = ["NOUL", "NoulAnswer", "NoulCriteria", "NoulQuestion", "NoulRecord"]


@dataclass(frozen=True)
class NoulCriteria:
    """What the true and the false case mean. ``NoulCriteria()`` sends two empty strings."""

    true: str = ""
    false: str = ""


@dataclass(frozen=True)
class NoulQuestion:
    """The probability that a statement holds: one number in 0..1, no confidence.

    ``criteria=None`` means the field is ABSENT from the request, which is not the same value as
    ``NoulCriteria()`` (both keys present, empty).
    """

    instructions: Any
    criteria: NoulCriteria | None = None
    type: Literal["noul"] = "noul"

    def __post_init__(self) -> None:
        check_instructions("Noul", self.instructions)
        if self.criteria is not None and not isinstance(self.criteria, NoulCriteria):
            raise QuestionError(
                "classifier: NoulQuestion criteria must be NoulCriteria(true=..., false=...) or "
                f"None, got {type(self.criteria).__name__}"
            )


@dataclass(frozen=True)
class NoulAnswer:
    """The probability that the statement holds. No confidence: the number IS the answer."""

    type: ClassVar[Literal["noul"]] = "noul"
    noul: float

    def to_wire(self) -> dict[str, Any]:
        return {"type": "noul", "noul": self.noul}


def _from_wire(obj: Mapping[str, Any], key: str, where: str) -> NoulQuestion:
    instructions = obj.get("instructions")
    if "criteria" not in obj:
        return NoulQuestion(instructions)
    criteria = obj.get("criteria")
    if not isinstance(criteria, Mapping) or not set(criteria) <= {"true", "false"}:
        raise QuestionError(
            f"classifier: {where}noul criteria must be an object with 'true' and 'false'",
            key,
        )
    true, false = criteria.get("true", ""), criteria.get("false", "")
    if not isinstance(true, str) or not isinstance(false, str):
        raise QuestionError(f"classifier: {where}noul criteria values must be strings", key)
    return NoulQuestion(instructions, NoulCriteria(true=true, false=false))


def _to_wire(question: NoulQuestion) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "noul", "instructions": question.instructions}
    if question.criteria is not None:
        out["criteria"] = {"true": question.criteria.true, "false": question.criteria.false}
    return out


#: Decoded answers by value. The wire prints a probability to two decimals
#: (``reference/system-one-wire.md``), so a run's noul answers take at most 101 values: each is
#: one frozen object, not one per state that the collector walks until the run ends (issue 32
#: pack CPU). Bounded for a server that prints more digits; -0.0 keeps its own key.
_SHARED: dict[object, NoulAnswer] = {}
_SHARED_MAX = 1024
_NEGATIVE_ZERO = "-0.0"


def _decode(obj: Mapping[str, Any], key: str, question: Any) -> NoulAnswer:
    p = number(obj.get("noul"), "noul", key)
    shared = p if p or math.copysign(1.0, p) > 0 else _NEGATIVE_ZERO
    answer = _SHARED.get(shared)
    if answer is None:
        answer = NoulAnswer(p)
        if len(_SHARED) < _SHARED_MAX:
            _SHARED[shared] = answer
    return answer


def _validate(question: Any, answer: NoulAnswer) -> str | None:
    if not 0.0 <= answer.noul <= 1.0:
        return f"noul is {answer.noul}, outside 0..1"
    return None


def _band(answer: NoulAnswer, t: Mapping[str, float]) -> registry.Band:
    # Inclusive cut-points (seed 004): p >= yes is yes, else p <= no is no.
    if answer.noul >= t["yes"]:
        return "yes"
    if answer.noul <= t["no"]:
        return "no"
    return "uncertain"


def _sample(question: Any) -> dict[str, Any]:
    return {"type": "noul", "noul": 0.5}


def _synthetic(question: Mapping[str, Any], rng: Draws) -> dict[str, Any]:
    return {"type": "noul", "noul": rng.randint(0, 100) / 100}


class NoulRecord(registry.AnswerRecord):
    """A noul answer's record: ``type``, ``noul``, ``band``, ``flags``."""

    __slots__ = ()

    @property
    def noul(self) -> float | None:
        """The wire probability that the criterion holds."""
        return registry.number(self.get("noul"))


def _text(record: NoulRecord) -> str:
    return fixed(record.noul)


def _lint(obj: Mapping[str, Any], sink: registry.LintSink, where: str) -> None:
    if "criteria" not in obj:
        return
    criteria = obj["criteria"]
    if criteria is None:
        sink.add(
            ("criteria",),
            "TN020",
            f"{where}noul criteria is null: omit it for no criteria, or write {{}} for two "
            "empty strings",
        )
        return
    if not isinstance(criteria, dict):
        sink.add(
            ("criteria",),
            "TN020",
            f"{where}noul criteria must be a mapping with true and false, "
            f"got {json_kind(criteria, yaml=True)}",
        )
        return
    sink.unknown_fields(criteria, ("criteria",), ("true", "false"), f"{where}noul criteria: ")
    for side in ("true", "false"):
        if side in criteria and not isinstance(criteria[side], str):
            sink.add(
                ("criteria", side),
                "TN020",
                f"{where}noul criteria {side!r} must be a string, {got(criteria[side])}",
            )


_LLM = registry.LlmHooks(
    prompt='- "noul": the probability that the statement in the instructions holds for the state, '
    'reading "criteria.true" and "criteria.false" as what each outcome means: '
    '{"type": "noul", "noul": <number 0..1>}',
    schema=lambda q: closed_schema({"type": tag_schema("noul"), "noul": number_schema()}),
)


def _api_fields(q: Mapping[str, Any], loc: list[Any], sink: registry.ApiSink) -> None:
    """The API schema's NoulCriteria: ``"true"`` and ``"false"``, each text or null, either may
    be absent; ``criteria`` itself may be absent or null."""
    criteria = q.get("criteria")
    if criteria is None:
        return
    if not isinstance(criteria, dict):
        sink.error(
            "model_type",
            [*loc, "criteria"],
            "Input should be a valid dictionary or instance of NoulCriteria",
            criteria,
        )
        return
    for side in ("true", "false"):
        sink.text(criteria.get(side), [*loc, "criteria", side])


def _api_rule(q: Mapping[str, Any]) -> str | None:
    sides = q.get("criteria") or {}
    if q.get("instructions") is None and not any(
        sides.get(side) is not None for side in ("true", "false")
    ):
        return "A noul question needs instructions or criteria."
    return None


NOUL = registry.register(
    registry.QuestionType(
        name="noul",
        question=NoulQuestion,
        answer=NoulAnswer,
        from_wire=_from_wire,
        to_wire=_to_wire,
        decode=_decode,
        validate=_validate,
        sample=_sample,
        synthetic=_synthetic,
        text=_text,
        band=_band,
        arrow=lambda pa: [("noul", pa.float64())],
        recalibrated=("noul",),
        llm=_LLM,
        lint=_lint,
        where_fields={"noul": True},
        probability=lambda a: a.noul,
        gauged=True,
        floor_thresholds=lambda f: {"yes": f / 100, "no": (100 - f) / 100},
        value=lambda a: a.noul,
        gauge=lambda a: a.noul,
        describe=lambda a: f"noul {a.noul:.3g}",
        api_fields=_api_fields,
        api_rule=_api_rule,
        answer_record=NoulRecord,
        output_tokens=lambda q: 19,  # fitted: a noul answer bills about 20 (budget.py)
    )
)
