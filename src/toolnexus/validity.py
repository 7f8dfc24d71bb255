"""Whether decoded answers answer exactly their questions (seed 004 ``validate-decision``):
the checks alone, over the answers, so that ``Decision.validate`` and
``validation.validate_decision`` are one rule. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping

from .answers import Answer
from .errors import ConfigError, InvalidDecision
from .qtypes import registry
from .questions import Question

__all__ = ["validate_answers"]


def _invalid(key: str, what: str) -> InvalidDecision:
    return InvalidDecision(f'classifier: invalid decision: "{key}" {what}', key)


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
        # Each type checks its own answers (qtypes/); a raw question only needs its type.
        qtype = registry.of_question(q)
        problem = qtype.validate(q, a) if qtype is not None else None
        if problem is not None:
            return _invalid(key, problem)
    return None
