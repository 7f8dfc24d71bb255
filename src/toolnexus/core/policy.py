"""SPEC §8B's judge layer, the pure part: how an answer reads against bands (or seed 004's
inclusive thresholds), the ``below`` / ``at_least`` / ``is`` rules, and what a ``Policy``
decides over a Decision's answers. No I/O: ``judge.py`` puts ``ask`` / ``gate`` / ``Tape`` on
a classifier; eval, batch and report apply the same ``decide`` to recorded answers.

A gate never authorises; it only declines to decide. Whatever it cannot read (a missing,
invalid, uncertain or unsure answer, a rule that does not fit its answer) escalates to
``needs_input`` with a §10 Request, and the action it returns is the caller's own word.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .answers import Answer
from .bands import DEFAULT_BANDS, Bands, as_bands, as_thresholds, is_certain
from .errors import ConfigError
from .qtypes import registry
from .questions import Question
from .validation import merged_thresholds, swapped_cut_points
from .validity import validate_answers

__all__ = [
    "NEEDS_INPUT",
    "GateResult",
    "Policy",
    "Request",
    "Rule",
    "decide",
]

#: The action of every escalation (§8B): the gate declines to decide and asks for input.
NEEDS_INPUT = "needs_input"
#: The Request id and reason of the no-rule-fired escalation (a Policy with an empty default).
DEFAULT_REQUEST_ID = "gate:default"
NO_RULE_FIRED = "no rule fired"


_CONDITIONS = ("below", "at_least", "is_")


@dataclass(frozen=True)
class Rule:
    """One first-match rule: when the answer at ``question`` is ``below`` a number (``<``),
    ``at_least`` one (``>=``), or ``is_`` an option (a choice's pick), the gate returns
    ``action`` (and ``target``). ``below`` / ``at_least`` read the one number (noul
    probability, score value); ``is_`` reads a choice. A rule with no condition, or whose
    condition does not fit its answer's type, escalates when it is reached (§8B)."""

    question: str
    action: str
    below: float | None = None
    at_least: float | None = None
    is_: str | None = None
    target: str = ""
    #: the condition in words, ``"addresses_task" below 0.5``: a fired rule's reason
    condition: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.question, str):
            raise ConfigError(
                f"classifier: a rule's question must be a key (a string), got {self.question!r}"
            )
        if not isinstance(self.action, str) or not self.action:
            raise ConfigError(
                f'classifier: the rule on "{self.question}" needs an action (a non-empty string)'
            )
        if not isinstance(self.target, str):
            raise ConfigError(f'classifier: the rule on "{self.question}": target is a string')
        given = [c for c in _CONDITIONS if getattr(self, c) is not None]
        if len(given) > 1:
            raise ConfigError(
                f'classifier: the rule on "{self.question}" has {" and ".join(given)}; '
                "a rule takes one of below, at_least, is_"
            )
        for name in ("below", "at_least"):
            v = getattr(self, name)
            if v is not None:
                if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
                    raise ConfigError(
                        f'classifier: the rule on "{self.question}": {name} must be a number, '
                        f"got {v!r}"
                    )
                object.__setattr__(self, name, float(v))
        if self.is_ is not None and not isinstance(self.is_, str):
            raise ConfigError(f'classifier: the rule on "{self.question}": is_ must be a string')
        object.__setattr__(self, "condition", self._condition())

    def _condition(self) -> str:
        if self.below is not None:
            return f'"{self.question}" below {self.below:g}'
        if self.at_least is not None:
            return f'"{self.question}" at_least {self.at_least:g}'
        if self.is_ is not None:
            return f'"{self.question}" is "{self.is_}"'
        return f'"{self.question}" (no condition)'

    @classmethod
    def from_mapping(cls, obj: Mapping[str, Any]) -> Rule:
        """A rule from its wire spelling (``is`` for ``is_``), as in gate-cases and YAML."""
        if not isinstance(obj, Mapping):
            raise ConfigError(f"classifier: a rule must be a mapping, got {type(obj).__name__}")
        fields = dict(obj)
        if "is" in fields:
            if "is_" in fields:
                raise ConfigError("classifier: a rule takes is or is_, not both")
            fields["is_"] = fields.pop("is")
        unknown = sorted(set(fields) - {"question", "action", "target", *_CONDITIONS})
        if unknown:
            raise ConfigError(
                f"classifier: unknown rule field {unknown[0]!r} "
                "(question, below, at_least, is, action, target)"
            )
        for needed in ("question", "action"):
            if needed not in fields:
                raise ConfigError(f"classifier: a rule needs {needed}")
        return cls(**fields)


def as_rules(value: Iterable[Rule | Mapping[str, Any]]) -> tuple[Rule, ...]:
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        raise ConfigError(f"classifier: rules must be a list of Rule, got {type(value).__name__}")
    return tuple(r if isinstance(r, Rule) else Rule.from_mapping(r) for r in value)


@dataclass(frozen=True)
class Request:
    """A §10 Request: what an escalation asks for. ``id`` is ``gate:<i>:<key>`` (``i`` the
    rule's 0-based index as given) or ``gate:default``; ``data`` carries ``question``,
    ``reason`` and ``answers`` (the wire answers). ``prompt`` is free text."""

    id: str
    kind: str
    prompt: str
    data: Mapping[str, Any]


@dataclass(frozen=True)
class GateResult:
    """What a gate decided: ``action`` (``needs_input`` when ``escalated``), ``target``,
    ``reason`` (the escalation's exact reason; for a fired rule its condition; ``no rule
    fired`` for the default), ``question`` (the rule's key, ``""`` for the default), ``rule``
    (the 0-based index of the rule that fired or escalated) and, for an escalation, the §10
    ``request``."""

    action: str
    target: str = ""
    escalated: bool = False
    reason: str = ""
    question: str = ""
    rule: int | None = None
    #: the answers an escalation's Request carries (built when asked for: a batch record
    #: needs only the action and the reason)
    answers: Mapping[str, Answer] | None = field(default=None, repr=False, compare=False)

    @property
    def request(self) -> Request | None:
        """The §10 Request of an escalation (``kind`` input), None otherwise."""
        if not self.escalated:
            return None
        rule, question = self.rule, self.question
        return Request(
            id=DEFAULT_REQUEST_ID if rule is None else f"gate:{rule}:{question}",
            kind="input",
            prompt=f"The gate cannot decide ({self.reason}). Decide, or supply the input it needs.",
            data={
                "question": question,
                "reason": self.reason,
                "answers": {k: a.to_wire() for k, a in (self.answers or {}).items()},
            },
        )


class _Cuts(dict[str, float]):
    """Thresholds already merged over the defaults and checked (a Policy merges once)."""


def _escalate(
    reason: str, question: str, rule: int | None, answers: Mapping[str, Answer]
) -> GateResult:
    return GateResult(NEEDS_INPUT, "", True, reason, question, rule, answers)


def _invalid(key: str, answer: Answer, questions: Mapping[str, Question] | None) -> bool:
    """An answer outside its schema: against its question when known, else its own ranges."""
    if questions is not None and key in questions:
        return validate_answers({key: questions[key]}, {key: answer}) is not None
    qtype = registry.of_answer(answer)
    if qtype is None:
        return False
    p = qtype.probability(answer)  # a noul's; else a choice's or a score's confidence
    p = p if p is not None else qtype.confidence(answer)
    return p is not None and not 0.0 <= p <= 1.0


def _misfit(rule: Rule, answer: Answer) -> str | None:
    """Why ``rule`` cannot be read on ``answer`` (None: it fits)."""
    if rule.below is None and rule.at_least is None and rule.is_ is None:
        return "has no condition"
    qtype = registry.of_answer(answer)
    if rule.is_ is not None:
        picks = qtype is not None and qtype.option(answer) is not None  # a choice
        return None if picks else f"is on a {answer.type} answer"
    if qtype is not None and qtype.gauge(answer) is not None:  # a noul or a score
        return None
    which = "below" if rule.below is not None else "at_least"
    return f"{which} on a {answer.type} answer"


def _fires(rule: Rule, answer: Answer) -> bool:
    qtype = registry.of_answer(answer)
    if rule.is_ is not None:
        return qtype is not None and qtype.option(answer) == rule.is_
    # _misfit let only a type with a gauge through (a noul's probability, a score's value)
    gauge = qtype.gauge(answer) if qtype is not None else None
    value = gauge if gauge is not None else 0.0
    if rule.below is not None:
        return value < rule.below
    assert rule.at_least is not None
    return value >= rule.at_least


def decide(
    rules: Iterable[Rule | Mapping[str, Any]],
    answers: Mapping[str, Answer],
    *,
    default: str | None = None,
    bands: Bands | None = None,
    thresholds: Mapping[str, float] | None = None,
    skip_uncertain: bool = False,
    questions: Mapping[str, Question] | None = None,
) -> GateResult:
    """The first rule that fires, in order (§8B). Per rule: a missing answer escalates
    (``missing answer "<key>"``), then an invalid one (``invalid answer "<key>"``; against
    ``questions`` when given), then an uncertain/unsure one (``uncertain answer "<key>"``,
    skipped instead under ``skip_uncertain``), then a rule that does not fit its answer.
    When no rule fires: ``default`` None is the plain gate (action ``""``), a non-empty
    default is that action, an empty one escalates (``no rule fired``, ``gate:default``)."""
    cuts = (
        thresholds
        if isinstance(thresholds, _Cuts) or thresholds is None
        else _Cuts(merged_thresholds(thresholds))
    )
    b = bands or DEFAULT_BANDS
    for i, rule in enumerate(rules if isinstance(rules, tuple) else as_rules(rules)):
        key = rule.question
        answer = answers.get(key)
        if answer is None:
            return _escalate(f'missing answer "{key}"', key, i, answers)
        if _invalid(key, answer, questions):
            return _escalate(f'invalid answer "{key}"', key, i, answers)
        if not is_certain(answer, cuts, b):
            if skip_uncertain:
                continue
            return _escalate(f'uncertain answer "{key}"', key, i, answers)
        misfit = _misfit(rule, answer)
        if misfit is not None:
            return _escalate(f'rule {i} does not fit answer "{key}": {misfit}', key, i, answers)
        if _fires(rule, answer):
            return GateResult(rule.action, rule.target, False, rule.condition, key, i)
    if default is None:
        return GateResult("", reason=NO_RULE_FIRED)
    if default:
        return GateResult(default, reason=NO_RULE_FIRED)
    return _escalate(NO_RULE_FIRED, "", None, answers)


@dataclass(frozen=True)
class Policy:
    """§8B ``Policy{rules, default, bands, skipUncertain}``: first-match ``rules``, then
    ``default`` (non-empty: the no-rule-fired action; empty: escalate, ``no rule fired``).
    ``bands`` are exclusive (default ``DEFAULT_BANDS``); ``thresholds`` instead reads answers
    with seed 004's inclusive cut-points (``threshold_band``; merged over
    ``DEFAULT_THRESHOLDS``). ``skip_uncertain`` skips a PRESENT uncertain/unsure answer's rule
    instead of escalating; a missing answer still escalates."""

    rules: tuple[Rule, ...] = field(default=())
    default: str = ""
    bands: Bands | None = None
    skip_uncertain: bool = False
    thresholds: Mapping[str, float] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "rules", as_rules(self.rules))
        if not isinstance(self.default, str):
            raise ConfigError(
                f"classifier: a policy's default is an action (a string), got {self.default!r}"
            )
        if not isinstance(self.skip_uncertain, bool):
            raise ConfigError("classifier: skip_uncertain is True or False")
        object.__setattr__(self, "bands", as_bands(self.bands))
        object.__setattr__(self, "thresholds", as_thresholds(self.thresholds))
        cuts = None if self.thresholds is None else _Cuts(merged_thresholds(self.thresholds))
        swapped = None if cuts is None else swapped_cut_points(cuts)
        if swapped is not None:
            # issue 42 item 4: swapped cut-points read every answer as sure, so nothing would
            # escalate; decide() and threshold_band keep reading any values (seed 004)
            raise ConfigError(f"classifier: thresholds: {swapped}")
        object.__setattr__(self, "_cuts", cuts)
        if self.bands is not None and self.thresholds is not None:
            raise ConfigError(
                "classifier: a policy reads answers with bands (exclusive) or thresholds "
                "(inclusive), not both"
            )

    def decide(
        self, answers: Mapping[str, Answer] | Any, questions: Mapping[str, Question] | None = None
    ) -> GateResult:
        """The policy over a Decision (or its answers), with no request: pure."""
        got = getattr(answers, "answers", answers)
        if not isinstance(got, Mapping):
            raise ConfigError(
                f"classifier: decide takes a Decision or its answers, got {type(answers).__name__}"
            )
        return decide(
            self.rules,
            got,
            default=self.default,
            bands=self.bands,
            thresholds=self._cuts,  # type: ignore[attr-defined]  # set in __post_init__
            skip_uncertain=self.skip_uncertain,
            questions=questions,
        )
