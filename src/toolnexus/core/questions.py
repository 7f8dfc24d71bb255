"""Question sets: the client-side limits, ``choice_over``, degenerate criteria, chunking, and the
wire form of a question. The question types themselves live one module each in ``qtypes/``;
this module dispatches through their registry.

Pure: no I/O, no httpx, no rich. The projection of a question onto the wire is written by hand
(each type's ``to_wire``) because ``dataclasses.asdict`` cannot tell an absent criteria from an
empty one, and seed 001 says both are legal, different values, preserved on the wire.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from typing import Any, TypeAlias

from .errors import QuestionError
from .qtypes import registry
from .qtypes.choice import ChoiceQuestion
from .qtypes.noul import NoulQuestion
from .qtypes.raw import RawQuestion
from .qtypes.rubric import ScoreQuestion

__all__ = [
    "Question",
    "check_limits",
    "choice_over",
    "chunk_questions",
    "degenerate_criteria",
    "normalize_questions",
    "question_from_wire",
    "question_to_wire",
    "questions_to_wire",
]

#: Instructions are usually a string; the wire also carries structured instructions
#: (a live capture sends ``{"task": ..., "context": [...]}``), transmitted as written.
Instructions: TypeAlias = Any

Question: TypeAlias = NoulQuestion | ChoiceQuestion | ScoreQuestion | RawQuestion


def _plain_name(key: object) -> str:
    """A key as it reaches the wire: a str as is, an Enum as its value, anything else str(key).

    SPEC 8B: a convenience constructor must coerce a non-string key to its PLAIN NAME, never to
    the host's printed form (``Desk.BILLING`` must not become ``"Desk.BILLING"``).
    """
    if isinstance(key, enum.Enum):
        value = key.value
        return value if isinstance(value, str) else str(value)
    if isinstance(key, str):
        return key
    return str(key)


def choice_over(
    instructions: Instructions, items: Mapping[Any, Any] | Iterable[tuple[Any, Any]]
) -> ChoiceQuestion:
    """A choice over any (name, description) pairs: a toolkit's tools, a skill inventory, an
    agent card's skills. Each description must say what picking that option would MEAN."""
    pairs = items.items() if isinstance(items, Mapping) else items
    criteria: dict[str, Any] = {}
    for name, description in pairs:
        criteria[_plain_name(name)] = description
    return ChoiceQuestion(instructions, criteria)


def question_to_wire(question: Question) -> dict[str, Any]:
    """The question as the wire carries it. Absent criteria stays absent."""
    qtype = registry.of_question(question)
    if qtype is None:
        raise QuestionError(f"classifier: not a question: {type(question).__name__}")
    return qtype.to_wire(question)


def questions_to_wire(questions: Mapping[str, Question]) -> dict[str, dict[str, Any]]:
    """Every question of a set in wire form, under the caller's keys."""
    return {key: question_to_wire(q) for key, q in questions.items()}


def question_from_wire(obj: Any, key: str = "") -> Question:
    """A question from its wire (or YAML/JSON file) form. Shapes are checked; limits are not
    (``check_limits`` does that, so a file can be linted for both separately)."""
    where = f"question {key!r}: " if key else ""
    if not isinstance(obj, Mapping):
        raise QuestionError(f"classifier: {where}a question must be an object", key)
    qtype = obj.get("type")
    if not isinstance(qtype, str) or not qtype:
        raise QuestionError(f"classifier: {where}missing or empty 'type'", key)
    # Each type reads its own criteria; a type nobody registered is a raw question.
    return registry.of(qtype).from_wire(obj, key, where)  # type: ignore[no-any-return]


def normalize_questions(questions: Mapping[str, Any], *, wire: bool = True) -> dict[str, Question]:
    """Accept question objects or their wire-form mappings; return question objects.

    ``wire=False`` is a host's own question set: there a mapping whose type the library does not
    model is refused unless it says ``"raw": True`` (``{"type": "choise"}`` is a typo, not a new
    type; a raw question is built explicitly). Recorded wire forms (``wire=True``) keep theirs.
    """
    if not isinstance(questions, Mapping):
        raise QuestionError(
            "classifier: questions must be a mapping of key -> question, got "
            f"{type(questions).__name__}"
        )
    out: dict[str, Question] = {}
    for key, q in questions.items():
        if not isinstance(key, str):
            raise QuestionError(f"classifier: question key {key!r} must be a string", str(key))
        if isinstance(q, registry.question_classes()):
            # A registered type's question: the built-in union, or a type a test registers.
            out[key] = q  # type: ignore[assignment]
            continue
        if not wire and isinstance(q, Mapping):
            qtype = q.get("type")
            raw = q.get("raw", False)
            if not registry.modelled(qtype) and raw is not True:
                raise QuestionError(
                    f"classifier: question {key!r}: unknown type {qtype!r} (noul, choice or "
                    "score); a type the library does not model is written RawQuestion(type, "
                    'instructions) or {..., "raw": True}',
                    key,
                )
        out[key] = question_from_wire(q, key)
    return out


def check_limits(questions: Mapping[str, Question]) -> None:
    """Enforce the client-side limits before any request (seed 001).

    Keys are walked in sorted order, so the same malformed set always names the same key first.
    The error names the question key and the limit; no request is sent.
    """
    if not questions:
        raise QuestionError("classifier: no questions: pass at least one question")
    for key in sorted(questions):
        q = questions[key]
        if key == "":
            raise QuestionError("classifier: a question key cannot be empty", key)
        qtype = registry.of_question(q)
        if qtype is not None:
            qtype.limits(key, q)


def _is_empty(value: Any) -> bool:
    return value is None or value == ""


def degenerate_criteria(criteria: Mapping[str, Any]) -> str | None:
    """A reason string when a choice's criteria are degenerate, else ``None`` (SPEC 8B).

    Degenerate <=> ANY of: (1) every value is empty (empty string or absent), (2) every value
    equals its own key, (3) every value is identical to every other value. A single-option
    choice (n = 1) is NEVER reported: the n < 2 gate comes first, for all three rules.
    """
    n = len(criteria)
    if n < 2:
        return None
    values = list(criteria.values())
    if all(_is_empty(v) for v in values):
        return "every option description is empty"
    if all(v == k for k, v in criteria.items()):
        return "every option description equals its own option id"
    first = values[0]
    if all(v == first for v in values[1:]):
        return "every option description is identical"
    return None


def chunk_questions(questions: Mapping[str, Question], size: int) -> list[dict[str, Question]]:
    """Split a question map into consecutive chunks of ``size``, keys in ASCII order.

    A helper, NOT automatic: joint calibration across a split is unproven, so the host decides
    to split and merges. ``size < 1`` is an error.
    """
    if not isinstance(size, int) or isinstance(size, bool) or size < 1:
        raise QuestionError(f"classifier: chunk size must be at least 1, got {size!r}")
    keys = sorted(questions)
    return [{k: questions[k] for k in keys[i : i + size]} for i in range(0, len(keys), size)]
