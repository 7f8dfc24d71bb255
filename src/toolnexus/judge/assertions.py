"""Assertion helpers for tests over decisions: what is expected of one answer, and on failure
the answer's whole distribution, so a failing test says what the model saw (issue 36 item 1).

    assert_answer(d, "desk", choice="billing", min_confidence=0.6)
    assert_answer(d, "refund", band="yes")            # seed 004's inclusive thresholds
    assert_answer(d, "urgency", level=2)              # or level="high": the level's label
    assert_gate(d, policy, action="permit")          # SPEC §8B's gate over the same decision

Pure: answers and thresholds only, no I/O, cheap to import (the pytest plugin re-exports it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ..core import Answer, Decision, registry, threshold_band

if TYPE_CHECKING:
    from ..core import Bands, GateResult, Policy, Rule

__all__ = ["assert_answer", "assert_gate", "describe_answer"]


def describe_answer(answer: Answer) -> str:
    """One line: the answer and its distribution, most probable option first (its type's
    ``describe`` hook)."""
    qtype = registry.of_answer(answer)
    return qtype.describe(answer) if qtype is not None else repr(answer)


class _Reading:
    """One answer through its type's readings (``qtypes/registry.py``): None where the type
    has no such reading (an answer of no registered type has none)."""

    def __init__(self, answer: Answer) -> None:
        qtype = registry.of_answer(answer)
        self.option = qtype.option(answer) if qtype is not None else None
        self.confidence = qtype.confidence(answer) if qtype is not None else None
        self.level = qtype.level(answer) if qtype is not None else None
        self.probability = qtype.probability(answer) if qtype is not None else None


def _checks(
    answer: Answer,
    *,
    choice: str | None,
    min_confidence: float | None,
    band: str | None,
    level: int | str | None,
    noul_at_least: float | None,
    thresholds: Mapping[str, float] | None,
) -> list[str]:
    """What ``answer`` fails of the expectations given, one phrase each."""
    failed = []
    read = _Reading(answer)
    if choice is not None and read.option != choice:
        picked = read.option if read.option is not None else f"a {answer.type} answer"
        failed.append(f"expected choice {choice!r}, got {picked!r}")
    if min_confidence is not None:
        confidence = read.confidence
        if confidence is None or confidence < min_confidence:
            failed.append(f"expected confidence >= {min_confidence}, got {confidence}")
    if band is not None:
        got_band = threshold_band(answer, thresholds)
        if got_band != band:
            failed.append(f"expected band {band!r}, got {got_band!r}")
    if level is not None:
        if read.level is None:
            failed.append(f"expected level {level!r}, got a {answer.type} answer")
        elif level not in read.level:
            failed.append(f"expected level {level!r}, got {read.level[0]} {read.level[1]!r}")
    if noul_at_least is not None and not (
        read.probability is not None and read.probability >= noul_at_least
    ):
        got: Any = read.probability if read.probability is not None else f"a {answer.type} answer"
        failed.append(f"expected noul >= {noul_at_least}, got {got}")
    return failed


def assert_answer(
    decision: Decision,
    key: str,
    *,
    choice: str | None = None,
    min_confidence: float | None = None,
    band: str | None = None,
    level: int | str | None = None,
    noul_at_least: float | None = None,
    thresholds: Mapping[str, float] | None = None,
) -> None:
    """Assert what the answer under ``key`` must be; every expectation given must hold.

    ``choice``: the picked option; ``min_confidence``: a choice or score's confidence at least
    this; ``band``: ``yes | no | uncertain`` under seed 004's inclusive ``thresholds`` (the
    defaults unless given); ``level``: a score's level index or label; ``noul_at_least``: the
    noul probability at least this. Raises AssertionError naming the key, what failed, and the
    answer's distribution."""
    __tracebackhide__ = True
    if not isinstance(decision, Decision):
        raise TypeError(f"assert_answer takes a Decision, got {type(decision).__name__}")
    answer = decision.answers.get(key)
    if answer is None:
        keys = ", ".join(sorted(decision.answers)) or "none"
        raise AssertionError(f"answer {key!r}: absent from the decision (answers: {keys})")
    failed = _checks(
        answer,
        choice=choice,
        min_confidence=min_confidence,
        band=band,
        level=level,
        noul_at_least=noul_at_least,
        thresholds=thresholds,
    )
    if failed:
        raise AssertionError(f"answer {key!r}: {'; '.join(failed)}\n  {describe_answer(answer)}")


def gate_result(
    decision: Decision,
    gate: Policy | Iterable[Rule | Mapping[str, Any]],
    *,
    questions: Mapping[str, Any] | None = None,
    bands: Bands | Mapping[str, float] | None = None,
) -> GateResult:
    """What ``toolnexus.gate`` decides over ``decision``, with no request: a ``Policy`` (its
    default and bands), or a list of rules (the plain gate: no rule fired is action ``""``)."""
    from ..core import Policy, as_bands, as_rules, decide

    if isinstance(gate, Policy):
        return gate.decide(decision, questions)
    return decide(as_rules(gate), decision.answers, bands=as_bands(bands), questions=questions)


def assert_gate(
    decision: Decision,
    gate: Policy | Iterable[Rule | Mapping[str, Any]],
    *,
    action: str,
    questions: Mapping[str, Any] | None = None,
    bands: Bands | Mapping[str, float] | None = None,
) -> None:
    """Assert the action SPEC §8B's gate takes over ``decision`` (``needs_input`` when it
    escalates). ``gate`` is a ``Policy`` (a question file's ``gates:`` entry) or a list of rules.
    Raises AssertionError with the action taken, its reason, and the distribution of every
    answer the gate's rules read."""
    __tracebackhide__ = True
    if not isinstance(decision, Decision):
        raise TypeError(f"assert_gate takes a Decision, got {type(decision).__name__}")
    got = gate_result(decision, gate, questions=questions, bands=bands)
    if got.action == action:
        return
    from ..core import Policy, as_rules

    rules = gate.rules if isinstance(gate, Policy) else as_rules(gate)
    read = dict.fromkeys(r.question for r in rules)
    lines = [
        f"  {k}: {describe_answer(decision.answers[k])}" if k in decision.answers else
        f"  {k}: absent"
        for k in read
    ]  # fmt: skip
    why = f" ({got.reason})" if got.reason else ""
    raise AssertionError(
        f"gate: expected action {action!r}, got {got.action!r}{why}\n" + "\n".join(lines)
    )
