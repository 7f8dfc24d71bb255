"""Question types, the client-side limits, ``choice_over``, degenerate criteria, chunking.

Pure: no I/O, no httpx, no rich. The projection of a question onto the wire is written by hand
(``question_to_wire``) because ``dataclasses.asdict`` cannot tell an absent criteria from an empty
one, and seed 001 says both are legal, different values, preserved on the wire.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from .errors import QuestionError

__all__ = [
    "MAX_CHOICE_OPTIONS",
    "MAX_SCORE_LEVELS",
    "MIN_SCORE_LEVELS",
    "ChoiceQuestion",
    "NoulCriteria",
    "NoulQuestion",
    "Question",
    "RawQuestion",
    "ScoreQuestion",
    "check_limits",
    "choice_over",
    "chunk_questions",
    "degenerate_criteria",
    "level_label",
    "normalize_questions",
    "question_from_wire",
    "question_to_wire",
    "questions_to_wire",
]

#: The client-side cap on a choice's named options (seed 001: 1..255).
MAX_CHOICE_OPTIONS = 255
#: A score rubric has at least this many ordered levels.
MIN_SCORE_LEVELS = 2
#: A score rubric has at most this many ordered levels.
MAX_SCORE_LEVELS = 10

#: Instructions are usually a string; the wire also carries structured instructions
#: (a live capture sends ``{"task": ..., "context": [...]}``), transmitted as written.
Instructions: TypeAlias = Any
#: A score level: a plain string, or a structured ``{"label": ..., "description": ...}`` (seed 003).
ScoreLevel: TypeAlias = str | Mapping[str, Any]


def _check_instructions(kind: str, instructions: Any) -> None:
    # Structured instructions (content parts) are lists or objects; None, numbers and booleans
    # are a mistake that would otherwise reach the wire as null or 5.
    if isinstance(instructions, bool) or not isinstance(instructions, str | list | tuple | Mapping):
        raise QuestionError(
            f"classifier: {kind}Question instructions must be a string (or structured "
            f"content parts), got {type(instructions).__name__}"
        )


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

    instructions: Instructions
    criteria: NoulCriteria | None = None
    type: Literal["noul"] = "noul"

    def __post_init__(self) -> None:
        _check_instructions("Noul", self.instructions)
        if self.criteria is not None and not isinstance(self.criteria, NoulCriteria):
            raise QuestionError(
                "classifier: NoulQuestion criteria must be NoulCriteria(true=..., false=...) or "
                f"None, got {type(self.criteria).__name__}"
            )


@dataclass(frozen=True)
class ChoiceQuestion:
    """One option out of a named set of 1..255. ``criteria`` maps an option id to what PICKING
    it would mean: the only thing that differentiates one option from another to the model."""

    instructions: Instructions
    criteria: Mapping[str, Any] = field(default_factory=dict)
    type: Literal["choice"] = "choice"

    def __post_init__(self) -> None:
        _check_instructions("Choice", self.instructions)
        if not isinstance(self.criteria, Mapping):
            raise QuestionError(
                "classifier: ChoiceQuestion criteria must map option ids to descriptions, got "
                f"{type(self.criteria).__name__}"
            )


@dataclass(frozen=True)
class ScoreQuestion:
    """A rating against an ORDERED rubric of 2..10 levels. The list order IS the level
    numbering, so it is never sorted."""

    instructions: Instructions
    criteria: list[ScoreLevel] | tuple[ScoreLevel, ...] = field(default_factory=list)
    type: Literal["score"] = "score"

    def __post_init__(self) -> None:
        _check_instructions("Score", self.instructions)
        # A string is iterable: "abc" once became three levels a, b, c.
        if not isinstance(self.criteria, list | tuple):
            raise QuestionError(
                "classifier: ScoreQuestion criteria must be a list of levels in order, got "
                f"{type(self.criteria).__name__}"
            )


@dataclass(frozen=True)
class RawQuestion:
    """The open end of the union (seed 004 ``raw-question``): a System One question type the
    library does not model yet (e.g. Jev 1.14 ``box``), sent AS WRITTEN with no client-side
    limits. ``type`` must be non-empty. Its answer decodes to a ``RawAnswer``."""

    type: str
    instructions: Instructions
    criteria: Any = None

    def __post_init__(self) -> None:
        if not isinstance(self.type, str) or not self.type:
            raise QuestionError("classifier: a raw question needs a non-empty type")


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


def level_label(level: Any, index: int | None = None) -> str:
    """The label of one score level: the string itself, or a structured level's ``label``
    (seed 003: "label is always a string"). Anything else (a wire legend entry with no string
    label: a question's own levels are checked) is named by its level ``index``, as a level
    the legend leaves out is; never by Python's text for a dict."""
    if isinstance(level, str):
        return level
    if isinstance(level, Mapping):
        label = level.get("label")
        if isinstance(label, str):
            return label
    if index is not None:
        return str(index)
    return json.dumps(level, ensure_ascii=False, sort_keys=True, default=repr)


def question_to_wire(question: Question) -> dict[str, Any]:
    """The question as the wire carries it. Absent criteria stays absent."""
    if isinstance(question, NoulQuestion):
        out: dict[str, Any] = {"type": "noul", "instructions": question.instructions}
        if question.criteria is not None:
            out["criteria"] = {"true": question.criteria.true, "false": question.criteria.false}
        return out
    if isinstance(question, ChoiceQuestion):
        return {
            "type": "choice",
            "instructions": question.instructions,
            "criteria": {str(k): v for k, v in question.criteria.items()},
        }
    if isinstance(question, ScoreQuestion):
        return {
            "type": "score",
            "instructions": question.instructions,
            "criteria": [dict(c) if isinstance(c, Mapping) else c for c in question.criteria],
        }
    if isinstance(question, RawQuestion):
        raw: dict[str, Any] = {"type": question.type, "instructions": question.instructions}
        if question.criteria is not None:
            raw["criteria"] = question.criteria
        return raw
    raise QuestionError(f"classifier: not a question: {type(question).__name__}")


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
    instructions = obj.get("instructions")
    has_criteria = "criteria" in obj
    criteria = obj.get("criteria")
    if qtype == "noul":
        if not has_criteria:
            return NoulQuestion(instructions)
        if not isinstance(criteria, Mapping) or not set(criteria) <= {"true", "false"}:
            raise QuestionError(
                f"classifier: {where}noul criteria must be an object with 'true' and 'false'",
                key,
            )
        true, false = criteria.get("true", ""), criteria.get("false", "")
        if not isinstance(true, str) or not isinstance(false, str):
            raise QuestionError(f"classifier: {where}noul criteria values must be strings", key)
        return NoulQuestion(instructions, NoulCriteria(true=true, false=false))
    if qtype == "choice":
        if not isinstance(criteria, Mapping):
            raise QuestionError(
                f"classifier: {where}choice criteria must be an object of option: description",
                key,
            )
        return ChoiceQuestion(instructions, {str(k): v for k, v in criteria.items()})
    if qtype == "score":
        if not isinstance(criteria, list | tuple):
            raise QuestionError(
                f"classifier: {where}score criteria must be an ordered list of levels", key
            )
        for i, level in enumerate(criteria):
            if isinstance(level, Mapping):
                if not isinstance(level.get("label"), str):
                    raise QuestionError(
                        f"classifier: {where}score level {i} needs a string 'label'", key
                    )
            elif not isinstance(level, str):
                raise QuestionError(
                    f"classifier: {where}score level {i} must be a string or "
                    "{label, description}",
                    key,
                )
        return ScoreQuestion(instructions, list(criteria))
    return RawQuestion(qtype, instructions, criteria if has_criteria else None)


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
        if isinstance(q, NoulQuestion | ChoiceQuestion | ScoreQuestion | RawQuestion):
            out[key] = q
            continue
        if not wire and isinstance(q, Mapping):
            qtype = q.get("type")
            raw = q.get("raw", False)
            if qtype not in ("noul", "choice", "score") and raw is not True:
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
        if isinstance(q, ChoiceQuestion):
            n = len(q.criteria)
            if not 1 <= n <= MAX_CHOICE_OPTIONS:
                raise QuestionError(
                    f"classifier: question {key!r}: a choice takes 1..{MAX_CHOICE_OPTIONS} "
                    f"named options, got {n}",
                    key,
                )
        elif isinstance(q, ScoreQuestion):
            n = len(q.criteria)
            if not MIN_SCORE_LEVELS <= n <= MAX_SCORE_LEVELS:
                raise QuestionError(
                    f"classifier: question {key!r}: a score takes "
                    f"{MIN_SCORE_LEVELS}..{MAX_SCORE_LEVELS} ordered levels, got {n}",
                    key,
                )


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
