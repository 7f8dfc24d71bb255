"""The answers of a decision, as values (seeds 000, 003): noul, choice, score and raw answers,
the usage, ``near_uniform``, and the one reading of a score's structure (level, label,
description, levels) for decoded and hand-built answers alike. Pure. Decoding a body into them
is ``decision.py``, which re-exports every name here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, TypeAlias

from .errors import ConfigError, DecisionError
from .questions import Question, ScoreQuestion, level_label

__all__ = [
    "MAX_LEVEL_DIGITS",
    "NEAR_UNIFORM_TOLERANCE",
    "Answer",
    "ChoiceAnswer",
    "ClassifierUsage",
    "NoulAnswer",
    "RawAnswer",
    "ScoreAnswer",
    "ScoreLevels",
    "near_uniform",
    "score_structure",
]

#: The ABSOLUTE tolerance on max|p - 1/n|, compared INCLUSIVELY (seeds 000/004).
NEAR_UNIFORM_TOLERANCE = 0.05


def near_uniform(probabilities: Mapping[str, float]) -> bool:
    """``max over i of |p_i - 1/n| <= 0.05``, n = entries in the map, values AS RETURNED.

    n == 1 is trivially uniform; an empty map has no distribution at all and is ``False``.
    """
    n = len(probabilities)
    if n == 0:
        return False
    if n == 1:
        # Stated by seed 000, not derived: {"only": 0.02} deviates 0.98 from 1/1, yet a single
        # option is trivially uniform (there is nothing to rank against).
        return True
    mean = 1.0 / n
    return max(abs(float(p) - mean) for p in probabilities.values()) <= NEAR_UNIFORM_TOLERANCE


@dataclass(frozen=True)
class NoulAnswer:
    """The probability that the statement holds. No confidence: the number IS the answer."""

    type: ClassVar[Literal["noul"]] = "noul"
    noul: float

    def to_wire(self) -> dict[str, Any]:
        return {"type": "noul", "noul": self.noul}


@dataclass(frozen=True)
class ChoiceAnswer:
    """The picked option, a probability per offered option, and a confidence that reports on
    the QUESTION, not the answer. ``near_uniform`` is DERIVED from ``probabilities`` and never
    read from the wire."""

    type: ClassVar[Literal["choice"]] = "choice"
    choice: str
    probabilities: Mapping[str, float]
    confidence: float
    near_uniform: bool = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "near_uniform", near_uniform(self.probabilities))

    def to_wire(self) -> dict[str, Any]:
        return {
            "type": "choice",
            "choice": self.choice,
            "probabilities": dict(self.probabilities),
            "confidence": self.confidence,
        }


#: Every level's ``(label, probability)`` in level order (seed 003 ``levels``).
ScoreLevels: TypeAlias = tuple[tuple[str, float], ...]


@dataclass(frozen=True)
class ScoreAnswer:
    """A point on an ordered rubric, plus the structure to use it (seed 003).

    ``score`` is the probability-weighted mean of level indices (it may fall between levels);
    ``level`` is the argmax of ``probabilities`` (lowest index wins a tie). They can disagree and
    the disagreement is information: do not use ``round(score)`` as a level.
    ``legend`` and ``probabilities`` are keyed by level index as the wire writes it (``"0"``).
    ``levels`` pairs every level's label, in level order, with its probability (0.0 for a level
    the response left out); ``ordered_legend()`` is the labels alone (seed 000's ``levels()``).

    Built by hand (a custom style) with only ``score``, ``legend``, ``probabilities`` and
    ``confidence``, the derived fields are filled by the same decoder ``parse_decision`` uses.
    """

    type: ClassVar[Literal["score"]] = "score"
    score: float
    legend: Mapping[str, Any]
    probabilities: Mapping[str, float]
    confidence: float
    level: int = 0
    label: str = ""
    description: Any = None
    levels: ScoreLevels = ()

    def __post_init__(self) -> None:
        # Built by hand: derive level/label/description/levels with the decoder itself, as
        # decoding without a known question does. Decoding passes them in, so this is skipped.
        if self.levels or not self.probabilities:
            return
        try:
            level, label, description, levels = score_structure(
                "", dict(self.probabilities), dict(self.legend), None
            )
        except DecisionError as e:
            raise ConfigError(
                "classifier: ScoreAnswer: " + e.detail.removeprefix('answer "": ')
            ) from None
        object.__setattr__(self, "level", level)
        object.__setattr__(self, "label", label)
        object.__setattr__(self, "description", description)
        object.__setattr__(self, "levels", levels)

    def ordered_legend(self) -> list[str]:
        """Every level's label in LEVEL order ("2" before "10"), which the ``legend`` mapping
        itself loses (seed 000 ``levels()``, seed 004 ``levels``). Taken from ``levels``, so a
        reply without a legend still gives the question's labels, never ``[]``."""
        return [label for label, _ in self.levels]

    def normalized(self) -> float:
        """``score / top level index``, so scales of different sizes can be weighed together.
        A single-level scale returns 0.0. No clamping: a score outside the rubric gives a value
        outside 0..1 rather than an error."""
        top = len(self.levels) - 1
        if top <= 0:
            return 0.0
        return self.score / top

    def to_wire(self) -> dict[str, Any]:
        return {
            "type": "score",
            "score": self.score,
            "legend": dict(self.legend),
            "probabilities": dict(self.probabilities),
            "confidence": self.confidence,
        }


@dataclass(frozen=True)
class RawAnswer:
    """An answer of a type the library does not model: its wire ``type`` and the whole answer
    object as received."""

    type: str
    value: Mapping[str, Any]

    def to_wire(self) -> dict[str, Any]:
        return dict(self.value)


Answer: TypeAlias = NoulAnswer | ChoiceAnswer | ScoreAnswer | RawAnswer


@dataclass(frozen=True)
class ClassifierUsage:
    """Tokens the backend billed. ``cost`` is ``None`` when not reported, NOT zero: printing
    $0.00 for an unreported cost would be a lie about money.

    ``reported`` is False when the response had no ``usage`` or a ``null`` token count (issue
    33): the counts then read 0 but are unknown, so records flag ``usage-missing`` and spend
    caps charge the request at its estimate. Not a wire field."""

    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = None
    reported: bool = True

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
        }
        if self.cost is not None:
            out["cost"] = self.cost
        return out


#: A level key longer than this is no level index: a rubric has far fewer levels, and int() of
#: thousands of digits is a ValueError (CPython's 4300-digit limit) and quadratic work.
MAX_LEVEL_DIGITS = 9


def _level_index(raw: str, key: str, what: str) -> int:
    if len(raw) > MAX_LEVEL_DIGITS or not raw.isascii() or not raw.isdigit():
        shown = raw if len(raw) <= 40 else f"{raw[:20]}…({len(raw)} characters)"
        raise DecisionError(
            f'classifier: answer "{key}": {what} key {shown!r} is not a level index', key
        )
    return int(raw)


def score_structure(
    key: str, probs: Mapping[str, float], legend: Mapping[str, Any], question: Question | None
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
