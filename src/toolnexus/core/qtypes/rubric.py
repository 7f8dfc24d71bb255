"""A score's rubric (seeds 001, 003): the question's ordered levels, a level's label, and the
one reading of a score answer's structure (level, label, description, levels) against them.
Pure. The score type itself (its answer and hooks) is ``score.py``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from ..errors import DecisionError, QuestionError
from .values import check_instructions

__all__ = [
    "MAX_LEVEL_DIGITS",
    "MAX_SCORE_LEVELS",
    "MIN_SCORE_LEVELS",
    "ScoreLevel",
    "ScoreLevels",
    "ScoreQuestion",
    "level_label",
    "score_structure",
]

#: A score rubric has at least this many ordered levels.
MIN_SCORE_LEVELS = 2
#: A score rubric has at most this many ordered levels.
MAX_SCORE_LEVELS = 10
#: A level key longer than this is no level index: a rubric has far fewer levels, and int() of
#: thousands of digits is a ValueError (CPython's 4300-digit limit) and quadratic work.
MAX_LEVEL_DIGITS = 9

#: A score level: a plain string, or a structured ``{"label": ..., "description": ...}`` (seed 003).
ScoreLevel: TypeAlias = str | Mapping[str, Any]
#: Every level's ``(label, probability)`` in level order (seed 003 ``levels``).
ScoreLevels: TypeAlias = tuple[tuple[str, float], ...]


@dataclass(frozen=True)
class ScoreQuestion:
    """A rating against an ORDERED rubric of 2..10 levels. The list order IS the level
    numbering, so it is never sorted."""

    instructions: Any
    criteria: list[ScoreLevel] | tuple[ScoreLevel, ...] = field(default_factory=list)
    type: Literal["score"] = "score"

    def __post_init__(self) -> None:
        check_instructions("Score", self.instructions)
        # A string is iterable: "abc" once became three levels a, b, c.
        if not isinstance(self.criteria, list | tuple):
            raise QuestionError(
                "classifier: ScoreQuestion criteria must be a list of levels in order, got "
                f"{type(self.criteria).__name__}"
            )


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


def _level_index(raw: str, key: str, what: str) -> int:
    if len(raw) > MAX_LEVEL_DIGITS or not raw.isascii() or not raw.isdigit():
        shown = raw if len(raw) <= 40 else f"{raw[:20]}…({len(raw)} characters)"
        raise DecisionError(
            f'classifier: answer "{key}": {what} key {shown!r} is not a level index', key
        )
    return int(raw)


def score_structure(
    key: str, probs: Mapping[str, float], legend: Mapping[str, Any], question: Any
) -> tuple[int, str, Any, ScoreLevels]:
    """level (argmax, lowest index wins a tie), its label and description, and every level's
    (label, probability) with 0.0 for a level the response left out; checked against the
    question's rubric when there is one (seed 003). The one place a score's structure is read,
    for decoded and hand-built answers alike."""
    by_index = {_level_index(k, key, "probability"): p for k, p in probs.items()}
    legend_by_index = {_level_index(k, key, "legend"): v for k, v in legend.items()}

    levels_src: list[Any]
    if isinstance(question, ScoreQuestion):
        n = len(question.criteria)
        levels_src = list(question.criteria)
        for idx in sorted(by_index):
            if idx >= n:
                raise DecisionError(
                    f'classifier: answer "{key}": probability for level {idx} is outside '
                    f"0..{n - 1} of the question's {n} levels",
                    key,
                )
        for idx in sorted(legend_by_index):
            if idx >= n:
                raise DecisionError(
                    f'classifier: answer "{key}": legend level {idx} is outside 0..{n - 1} '
                    f"of the question's {n} levels",
                    key,
                )
            sent = level_label(levels_src[idx])
            got = level_label(legend_by_index[idx])
            if sent != got:
                raise DecisionError(
                    f'classifier: answer "{key}": legend level {idx} is {got!r} but the '
                    f"question's level {idx} is {sent!r}",
                    key,
                )
    else:
        n = max([*by_index, *legend_by_index]) + 1
        levels_src = [legend_by_index.get(i, str(i)) for i in range(n)]

    level = min(by_index, key=lambda i: (-by_index[i], i))
    labels = [level_label(x, i) for i, x in enumerate(levels_src)]
    levels = tuple((labels[i], by_index.get(i, 0.0)) for i in range(len(levels_src)))
    label = labels[level] if level < len(labels) else str(level)
    description = levels_src[level] if level < len(levels_src) else None
    return level, label, description, levels
