"""Whether decoded answers answer exactly their questions (seed 004 ``validate-decision``):
the checks alone, over the answers, so that ``Decision.validate`` and
``validation.validate_decision`` are one rule. Pure.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from .answers import Answer, ChoiceAnswer, NoulAnswer, ScoreAnswer
from .errors import ConfigError, InvalidDecision
from .questions import ChoiceQuestion, Question, RawQuestion, ScoreQuestion

__all__ = ["validate_answers"]

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


def validate_answers(
    questions: Mapping[str, Question], answers: Mapping[str, Answer]
) -> InvalidDecision | None:
    """``None`` when ``answers`` answer EXACTLY ``questions`` within their schema, else the
    error (returned, not raised). Checks in seed 004's order, first failure wins: a missing
    answer (question keys ASCII), an unexpected answer (ASCII), then per key the type, noul in
    [0,1], choice offered / probability keys offered / each in [0,1] / a non-empty map sums to
    1 ± 0.02 / confidence in [0,1], score in [0, levels-1] with the same probability rules over
    level indices. A raw question only needs an answer of its own type."""
    if not isinstance(questions, Mapping):
        raise ConfigError(
            "classifier: validate_decision takes the question set (a mapping), got "
            f"{type(questions).__name__}"
        )
    for key in sorted(questions):
        if key not in answers:
            return InvalidDecision(f'classifier: invalid decision: missing answer "{key}"', key)
    for key in sorted(answers):
        if key not in questions:
            return InvalidDecision(f'classifier: invalid decision: unexpected answer "{key}"', key)
    for key in sorted(questions):
        q, a = questions[key], answers[key]
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
