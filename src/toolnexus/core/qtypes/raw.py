"""The open end of the union (seed 004 ``raw-question``): a System One question type the
library does not model (e.g. Jev 1.14 ``box``), sent AS WRITTEN with no client-side limits, its
answer kept as received. Registered under ``raw``; :func:`registry.of` returns it for any type
nobody registered. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import QuestionError
from . import registry
from .draws import Draws

__all__ = ["PLACEHOLDER", "PLACEHOLDER_FIELD", "RAW", "RawAnswer", "RawQuestion"]

#: ``serve --synthetic``'s answer field for a question type System One does not define, and its
#: fixed value: the real API answers such a question 422; the placeholder lets the raw path be
#: tested.
PLACEHOLDER_FIELD = "placeholder"
PLACEHOLDER = "toolnexus serve --synthetic: no model answers this question type"


@dataclass(frozen=True)
class RawQuestion:
    """The open end of the union (seed 004 ``raw-question``): a System One question type the
    library does not model yet (e.g. Jev 1.14 ``box``), sent AS WRITTEN with no client-side
    limits. ``type`` must be non-empty. Its answer decodes to a ``RawAnswer``."""

    type: str
    instructions: Any
    criteria: Any = None

    def __post_init__(self) -> None:
        if not isinstance(self.type, str) or not self.type:
            raise QuestionError("classifier: a raw question needs a non-empty type")


@dataclass(frozen=True)
class RawAnswer:
    """An answer of a type the library does not model: its wire ``type`` and the whole answer
    object as received."""

    type: str
    value: Mapping[str, Any]

    def to_wire(self) -> dict[str, Any]:
        return dict(self.value)


def _from_wire(obj: Mapping[str, Any], key: str, where: str) -> RawQuestion:
    criteria = obj.get("criteria") if "criteria" in obj else None
    return RawQuestion(obj["type"], obj.get("instructions"), criteria)


def _to_wire(question: RawQuestion) -> dict[str, Any]:
    out: dict[str, Any] = {"type": question.type, "instructions": question.instructions}
    if question.criteria is not None:
        out["criteria"] = question.criteria
    return out


def _decode(obj: Mapping[str, Any], key: str, question: Any) -> RawAnswer:
    return RawAnswer(obj["type"], dict(obj))


def _validate(question: Any, answer: Any) -> str | None:
    return None  # a raw question only needs an answer of its own type


def _sample(question: RawQuestion) -> dict[str, Any]:
    return {"type": question.type}


def _synthetic(question: Mapping[str, Any], rng: Draws) -> dict[str, Any]:
    qtype = question.get("type")
    if qtype == "box":
        # Jev 1.14's box: edges as fractions with top < bottom and left < right.
        top = rng.randint(0, 80)
        bottom = rng.randint(top + 10, 100)
        left = rng.randint(0, 80)
        right = rng.randint(left + 10, 100)
        return {
            "type": "box",
            "box": {
                "top": top / 100,
                "bottom": bottom / 100,
                "left": left / 100,
                "right": right / 100,
            },
            "confidence": rng.randint(50, 99) / 100,
        }
    return {"type": qtype, PLACEHOLDER_FIELD: PLACEHOLDER}


def _text(record: Mapping[str, Any]) -> str:
    return "(raw answer)"


RAW = registry.register(
    registry.QuestionType(
        name=registry.RAW_NAME,
        question=RawQuestion,
        answer=RawAnswer,
        from_wire=_from_wire,
        to_wire=_to_wire,
        decode=_decode,
        validate=_validate,
        sample=_sample,
        synthetic=_synthetic,
        text=_text,
        describe=lambda a: f"raw {a.type} answer {dict(a.value)!r}",
        is_modelled=False,
    )
)
