"""Whether decoded answers answer exactly their questions (seed 004 ``validate-decision``):
the checks alone, over the answers, so that ``Decision.validate`` and
``validation.validate_decision`` are one rule. Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from . import observe as probe
from .answers import Answer
from .errors import ConfigError, InvalidDecision
from .qtypes import registry
from .questions import Question

__all__ = ["answers_validator", "validate_answers"]


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
    if probe.observer is not None:
        probe.observer("validate.answers", answers)
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


def answers_validator(
    questions: Mapping[str, Question],
) -> Callable[[Mapping[str, Answer]], InvalidDecision | None]:
    """``validate_answers(questions, answers)`` for many ``answers`` over one question set (a
    packed reply's states, issue 32 pack CPU): the keys are sorted and each question's type
    looked up once, not three sorts per state. Answers with exactly the questions' keys are
    checked key by key in the same order; any other set of keys goes through
    :func:`validate_answers` itself, so the verdict and its message are the same. Build it
    where it is used: a later change to a mutable ``questions`` is not seen."""
    if not isinstance(questions, Mapping):
        raise ConfigError(
            "classifier: validate_decision takes the question set (a mapping), got "
            f"{type(questions).__name__}"
        )
    checks = [
        (key, q := questions[key], q.type, registry.of_question(q)) for key in sorted(questions)
    ]
    keys = frozenset(questions)

    def validate(answers: Mapping[str, Answer]) -> InvalidDecision | None:
        if answers.keys() != keys:
            return validate_answers(questions, answers)  # a missing or unexpected answer
        for key, q, qtype_name, qtype in checks:
            a = answers[key]
            if a.type != qtype_name:
                return _invalid(key, f"is a {a.type} answer, expected {qtype_name}")
            problem = qtype.validate(q, a) if qtype is not None else None
            if problem is not None:
                return _invalid(key, problem)
        return None

    return validate
