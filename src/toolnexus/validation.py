"""``validate_decision`` and ``threshold_band`` (seed 004): reading a decoded Decision against its
questions. Pure. Split from ``decision.py`` to keep each module small; decoding never needs it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal, TypeAlias

from .decision import (
    Answer,
    ChoiceAnswer,
    Decision,
    NoulAnswer,
    RawAnswer,
    ScoreAnswer,
)
from .errors import ConfigError, InvalidDecision
from .questions import ChoiceQuestion, Question, RawQuestion, ScoreQuestion

__all__ = [
    "DEFAULT_THRESHOLDS",
    "FLAGS",
    "Band",
    "Checked",
    "threshold_band",
    "validate_decision",
]

#: Every flag an answer or a decision can carry, in the order records list them: a choice
#: ``near_uniform``, a backend that is not ``calibrated``, an ``uncertain`` band
#: (``threshold_band``), a reply that fails ``validate_decision``. The names are also the
#: ``--fail-on`` conditions. The one list: records, the CLI and the report derive from it.
FLAGS = ("near-uniform", "uncalibrated", "uncertain", "invalid")

#: Inclusive cut-points (seed 004 ``default-thresholds``): noul ``p >= yes`` is yes, ``p <= no``
#: is no; choice/score ``confidence >= min_confidence`` is yes. A threshold tuned against one
#: backend does not transfer to another.
DEFAULT_THRESHOLDS: Mapping[str, float] = MappingProxyType(
    {"yes": 0.8, "no": 0.2, "min_confidence": 0.6}
)

#: validate_decision's tolerance on the sum of a probability map.
_SUM_TOLERANCE = 0.02
#: Two-decimal wire values summed in binary floating point overshoot by ~1e-17 (0.5 + 0.52 is
#: 1.0200000000000000178); the spec's bound is on the decimal values, so allow that much.
_FLOAT_SLACK = 1e-9


def _invalid(key: str, what: str) -> InvalidDecision:
    return InvalidDecision(f'classifier: invalid decision: "{key}" {what}', key)


def _check_distribution(
    key: str, probs: Mapping[str, float], offered: set[str], noun: str
) -> InvalidDecision | None:
    for k in sorted(probs):
        if k not in offered:
            return _invalid(key, f"has a probability for {noun} {k!r}, which was not offered")
    for k in sorted(probs):
        if not 0.0 <= probs[k] <= 1.0:
            return _invalid(key, f"probability for {k!r} is {probs[k]}, outside 0..1")
    if probs:
        total = math.fsum(probs.values())
        if abs(total - 1.0) > _SUM_TOLERANCE + _FLOAT_SLACK:
            return _invalid(key, f"probabilities sum to {total:.4g}, not 1 ± {_SUM_TOLERANCE}")
    return None


def validate_decision(
    questions: Mapping[str, Question], decision: Decision
) -> InvalidDecision | None:
    """``None`` when ``decision`` answers EXACTLY ``questions`` within their schema, else the
    error (returned, not raised). Checks in seed 004's order, first failure wins: a missing
    answer (question keys ASCII), an unexpected answer (ASCII), then per key the type, noul in
    [0,1], choice offered / probability keys offered / each in [0,1] / a non-empty map sums to
    1 ± 0.02 / confidence in [0,1], score in [0, levels-1] with the same probability rules over
    level indices. A raw question only needs an answer of its own type."""
    if not isinstance(decision, Decision):
        raise ConfigError(
            f"classifier: validate_decision takes a Decision, got {type(decision).__name__}"
        )
    if not isinstance(questions, Mapping):
        raise ConfigError(
            "classifier: validate_decision takes the question set (a mapping), got "
            f"{type(questions).__name__}"
        )
    for key in sorted(questions):
        if key not in decision.answers:
            return InvalidDecision(f'classifier: invalid decision: missing answer "{key}"', key)
    for key in sorted(decision.answers):
        if key not in questions:
            return InvalidDecision(f'classifier: invalid decision: unexpected answer "{key}"', key)
    for key in sorted(questions):
        q, a = questions[key], decision.answers[key]
        if a.type != q.type:
            return _invalid(key, f"is a {a.type} answer, expected {q.type}")
        if isinstance(q, RawQuestion):
            continue
        if isinstance(a, NoulAnswer):
            if not 0.0 <= a.noul <= 1.0:
                return _invalid(key, f"noul is {a.noul}, outside 0..1")
        elif isinstance(a, ChoiceAnswer) and isinstance(q, ChoiceQuestion):
            offered = set(q.criteria)
            if a.choice not in offered:
                return _invalid(key, f"chose {a.choice!r}, which was not offered")
            err = _check_distribution(key, a.probabilities, offered, "option")
            if err:
                return err
            if not 0.0 <= a.confidence <= 1.0:
                return _invalid(key, f"confidence is {a.confidence}, outside 0..1")
        elif isinstance(a, ScoreAnswer) and isinstance(q, ScoreQuestion):
            top = len(q.criteria) - 1
            if not 0.0 <= a.score <= top:
                return _invalid(key, f"score is {a.score}, outside 0..{top}")
            offered = {str(i) for i in range(len(q.criteria))}
            err = _check_distribution(key, a.probabilities, offered, "level")
            if err:
                return err
            if not 0.0 <= a.confidence <= 1.0:
                return _invalid(key, f"confidence is {a.confidence}, outside 0..1")
    return None


@dataclass(frozen=True, slots=True)
class Checked:
    """A decision with ``validate_decision``'s verdict on it (``None``: valid), from a style that
    had to run it anyway (to decide whether to cache, or to fail on a bad llm reply). The
    classifier reuses the verdict: each answer is validated once (issue 8, the cold cache)."""

    decision: Decision
    invalid: InvalidDecision | None


Band: TypeAlias = Literal["yes", "no", "uncertain"]


def threshold_band(answer: Answer, thresholds: Mapping[str, float] | None = None) -> Band:
    """``"yes" | "no" | "uncertain"`` for one answer, INCLUSIVE cut-points (seed 004).

    noul: ``p >= yes`` is yes, else ``p <= no`` is no, else uncertain. choice/score:
    ``confidence >= min_confidence`` is yes, else uncertain. No near-uniform demotion.
    A raw answer is uncertain. ``thresholds`` merges over ``DEFAULT_THRESHOLDS``.
    """
    if thresholds is not None and not isinstance(thresholds, Mapping):
        raise ConfigError(
            f"classifier: thresholds must be a mapping, got {type(thresholds).__name__}"
        )
    t = {**DEFAULT_THRESHOLDS, **(thresholds or {})}
    for name, value in t.items():
        if name not in DEFAULT_THRESHOLDS:
            raise ConfigError(f"classifier: unknown threshold {name!r} (yes, no, min_confidence)")
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
            raise ConfigError(
                f"classifier: threshold {name} must be a number in 0..1, got {value!r}"
            )
    if not isinstance(answer, NoulAnswer | ChoiceAnswer | ScoreAnswer | RawAnswer):
        raise ConfigError(
            f"classifier: threshold_band takes an answer, got {type(answer).__name__}"
        )
    if isinstance(answer, NoulAnswer):
        if answer.noul >= t["yes"]:
            return "yes"
        if answer.noul <= t["no"]:
            return "no"
        return "uncertain"
    if isinstance(answer, ChoiceAnswer | ScoreAnswer):
        return "yes" if answer.confidence >= t["min_confidence"] else "uncertain"
    return "uncertain"
