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
from types import MappingProxyType
from typing import Any

from .answers import Answer, ChoiceAnswer, NoulAnswer, ScoreAnswer
from .errors import ConfigError
from .questions import Question
from .validation import Band, threshold_band
from .validity import validate_answers

__all__ = [
    "DEFAULT_BANDS",
    "NEEDS_INPUT",
    "Bands",
    "GateResult",
    "JudgedAnswer",
    "Policy",
    "Request",
    "Rule",
    "decide",
    "read_answer",
]

#: The action of every escalation (§8B): the gate declines to decide and asks for input.
NEEDS_INPUT = "needs_input"
#: The Request id and reason of the no-rule-fired escalation (a Policy with an empty default).
DEFAULT_REQUEST_ID = "gate:default"
NO_RULE_FIRED = "no rule fired"


def _unit(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(f"classifier: {name} must be a number in 0..1, got {value!r}")
    if not 0 <= value <= 1:
        raise ConfigError(f"classifier: {name} must be a number in 0..1, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class Bands:
    """§8B's cut-points, EXCLUSIVE on the confident side: noul ``p < low`` is no, ``p > high``
    is yes, else uncertain; a choice is sure iff ``confidence > high`` and not near-uniform, a
    score iff ``confidence > high``. A threshold tuned against one backend does not transfer
    to another."""

    low: float = 0.30
    high: float = 0.70

    def __post_init__(self) -> None:
        object.__setattr__(self, "low", _unit("bands.low", self.low))
        object.__setattr__(self, "high", _unit("bands.high", self.high))
        if self.low > self.high:
            raise ConfigError(
                f"classifier: bands.low ({self.low}) must not be above bands.high ({self.high})"
            )


#: §8B's default bands, the default of ask / gate (seed 004: they stay the default, beside
#: the inclusive ``DEFAULT_THRESHOLDS``).
DEFAULT_BANDS = Bands()


def as_bands(value: Bands | Mapping[str, Any] | None) -> Bands | None:
    if value is None or isinstance(value, Bands):
        return value
    if isinstance(value, Mapping):
        unknown = sorted(set(value) - {"low", "high"})
        if unknown:
            raise ConfigError(f"classifier: unknown band {unknown[0]!r} (low, high)")
        return Bands(**value)
    raise ConfigError(f"classifier: bands must be Bands or a mapping, got {type(value).__name__}")


def _thresholds(value: Mapping[str, Any] | None) -> Mapping[str, float] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ConfigError(f"classifier: thresholds must be a mapping, got {type(value).__name__}")
    threshold_band(NoulAnswer(0.5), value)  # the one check of names and ranges
    return MappingProxyType(dict(value))


@dataclass(frozen=True)
class JudgedAnswer:
    """One answer as ``ask`` reads it: a noul carries ``band`` (yes | no | uncertain), a
    choice or score carries ``sure``; a raw answer is uncertain (``sure`` False)."""

    answer: Answer
    band: Band | None = None
    sure: bool | None = None

    def value(self) -> float | None:
        """The one number: noul probability, score value, choice confidence (None: raw)."""
        a = self.answer
        if isinstance(a, NoulAnswer):
            return a.noul
        if isinstance(a, ScoreAnswer):
            return a.score
        if isinstance(a, ChoiceAnswer):
            return a.confidence
        return None

    def choice(self) -> str | None:
        """The picked option of a choice answer (None for every other type)."""
        return self.answer.choice if isinstance(self.answer, ChoiceAnswer) else None

    @property
    def certain(self) -> bool:
        """A noul on a confident side, or a sure choice/score."""
        return self.band in ("yes", "no") or self.sure is True


def read_answer(
    answer: Answer, bands: Bands | None = None, thresholds: Mapping[str, float] | None = None
) -> JudgedAnswer:
    """``answer`` against the exclusive ``bands`` (default ``DEFAULT_BANDS``) or, given,
    seed 004's inclusive ``thresholds`` (``threshold_band``: no near-uniform demotion)."""
    if thresholds is not None:
        band = threshold_band(answer, thresholds)
        if isinstance(answer, NoulAnswer):
            return JudgedAnswer(answer, band=band)
        return JudgedAnswer(answer, sure=band == "yes")
    b = bands or DEFAULT_BANDS
    if isinstance(answer, NoulAnswer):
        p = answer.noul
        return JudgedAnswer(
            answer, band="no" if p < b.low else "yes" if p > b.high else "uncertain"
        )
    if isinstance(answer, ChoiceAnswer):
        return JudgedAnswer(answer, sure=answer.confidence > b.high and not answer.near_uniform)
    if isinstance(answer, ScoreAnswer):
        return JudgedAnswer(answer, sure=answer.confidence > b.high)
    return JudgedAnswer(answer, sure=False)


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

    def describe(self) -> str:
        """The condition in words: ``"addresses_task" below 0.5``."""
        if self.below is not None:
            return f'"{self.question}" below {self.below:g}'
        if self.at_least is not None:
            return f'"{self.question}" at_least {self.at_least:g}'
        if self.is_ is not None:
            return f'"{self.question}" is "{self.is_}"'
        return f'"{self.question}" (no condition)'


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
    """What a gate decided: ``action`` (``needs_input`` when ``escalated``), ``target``, the
    Request of an escalation, ``reason`` (the escalation's exact reason; for a fired rule its
    condition; ``no rule fired`` for the default), ``question`` (the rule's key, ``""`` for
    the default) and ``rule`` (the 0-based index of the rule that fired or escalated)."""

    action: str
    target: str = ""
    escalated: bool = False
    request: Request | None = None
    reason: str = ""
    question: str = ""
    rule: int | None = None


def _escalate(
    reason: str, question: str, rule: int | None, answers: Mapping[str, Answer]
) -> GateResult:
    rid = DEFAULT_REQUEST_ID if rule is None else f"gate:{rule}:{question}"
    request = Request(
        id=rid,
        kind="input",
        prompt=f"The gate cannot decide ({reason}). Decide, or supply the input it needs.",
        data={
            "question": question,
            "reason": reason,
            "answers": {k: a.to_wire() for k, a in answers.items()},
        },
    )
    return GateResult(NEEDS_INPUT, "", True, request, reason, question, rule)


def _invalid(key: str, answer: Answer, questions: Mapping[str, Question] | None) -> bool:
    """An answer outside its schema: against its question when known, else its own ranges."""
    if questions is not None and key in questions:
        return validate_answers({key: questions[key]}, {key: answer}) is not None
    if isinstance(answer, NoulAnswer):
        return not 0.0 <= answer.noul <= 1.0
    if isinstance(answer, ChoiceAnswer | ScoreAnswer):
        return not 0.0 <= answer.confidence <= 1.0
    return False


def _misfit(rule: Rule, answer: Answer) -> str | None:
    """Why ``rule`` cannot be read on ``answer`` (None: it fits)."""
    if rule.below is None and rule.at_least is None and rule.is_ is None:
        return "has no condition"
    if rule.is_ is not None:
        return None if isinstance(answer, ChoiceAnswer) else f"is on a {answer.type} answer"
    if isinstance(answer, NoulAnswer | ScoreAnswer):
        return None
    which = "below" if rule.below is not None else "at_least"
    return f"{which} on a {answer.type} answer"


def _fires(rule: Rule, judged: JudgedAnswer) -> bool:
    if rule.is_ is not None:
        return judged.choice() == rule.is_
    value = judged.value()
    assert value is not None  # _misfit let only a noul or score through
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
    for i, rule in enumerate(rules if isinstance(rules, tuple) else as_rules(rules)):
        key = rule.question
        answer = answers.get(key)
        if answer is None:
            return _escalate(f'missing answer "{key}"', key, i, answers)
        if _invalid(key, answer, questions):
            return _escalate(f'invalid answer "{key}"', key, i, answers)
        judged = read_answer(answer, bands, thresholds)
        if not judged.certain:
            if skip_uncertain:
                continue
            return _escalate(f'uncertain answer "{key}"', key, i, answers)
        misfit = _misfit(rule, answer)
        if misfit is not None:
            return _escalate(f'rule {i} does not fit answer "{key}": {misfit}', key, i, answers)
        if _fires(rule, judged):
            return GateResult(rule.action, rule.target, False, None, rule.describe(), key, i)
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
        object.__setattr__(self, "thresholds", _thresholds(self.thresholds))
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
            thresholds=self.thresholds,
            skip_uncertain=self.skip_uncertain,
            questions=questions,
        )
