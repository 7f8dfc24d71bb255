"""A batch record's ``gates``: each question-file policy over one decision, precompiled once per
run (issue 35, Speed: "gates add <= 5% to batch's CPU per record").

``Policy.decide`` is the one rule; it builds a ``GateResult`` (a frozen dataclass) per gate and
record, and reads each answer through the generic band code. A record needs three fields of it
(action, escalated, reason), and the answers a question file's gates read are almost always
noul probabilities. So :class:`CompiledGate` walks the policy's rules over noul answers with
each cut-point and reason prepared once, and returns a copy of a prepared ``{action,
escalated, reason}``. Whatever it does not prepare for (a choice or score answer, a rule with
``is`` or no condition, a check against the questions of an invalid decision) goes to
``Policy.decide`` for the whole record: the same result by construction, and a property test
holds the two equal.

Each prepared outcome carries its JSON text too, and :func:`gate_records` returns the record's
gates as a :class:`~toolnexus.records.model.GateOutcomes` holding their whole JSON text: the
codecs write it instead of encoding the objects again (their encoding cost more than evaluating
the gates: bench/gates.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from ..core import DEFAULT_BANDS, NEEDS_INPUT, NO_RULE_FIRED, Answer, NoulAnswer, Policy, Question
from .model import GateOutcomes

__all__ = [
    "CompiledGate",
    "GateSet",
    "compiled",
    "gate_records",
]

#: one gate's record fields ``{action, escalated, reason}`` and their JSON text
_Outcome = tuple[dict[str, Any], str]
#: a rule on noul answers, prepared: key, below (or None), at_least (or None), and its
#: outcomes: fired, missing, invalid, uncertain
_Step = tuple[str, float | None, float | None, _Outcome, _Outcome, _Outcome, _Outcome]


def _text(value: Any) -> str:
    """The JSON text the record codecs write for ``value`` (``codec._json_line``'s first try: a
    text that is not UTF-8 is found there and the record encoded again whole)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _outcome(action: str, escalated: bool, reason: str) -> _Outcome:
    fields = {"action": action, "escalated": escalated, "reason": reason}
    return fields, _text(fields)


def _escalated(reason: str) -> _Outcome:
    return _outcome(NEEDS_INPUT, True, reason)


class CompiledGate:
    """One policy ready for records: :meth:`record` is ``{action, escalated, reason}`` of
    ``policy.decide(answers, questions)``, a fresh dict each call; :meth:`outcome` is the
    prepared dict (not to be changed) and its JSON text."""

    __slots__ = ("_default", "_no", "_policy", "_steps", "_yes", "inclusive", "skip")

    def __init__(self, policy: Policy) -> None:
        self._policy = policy
        cuts = getattr(policy, "_cuts", None)
        self.inclusive = cuts is not None
        bands = policy.bands or DEFAULT_BANDS
        # inclusive: certain when p >= yes or p <= no; exclusive: when p > high or p < low
        self._yes: float = cuts["yes"] if cuts else bands.high
        self._no: float = cuts["no"] if cuts else bands.low
        self.skip = policy.skip_uncertain
        steps: list[_Step] = []
        general = False
        for rule in policy.rules:
            if rule.is_ is not None or (rule.below is None and rule.at_least is None):
                general = True  # a choice rule or a misfit: the general path
                break
            key = rule.question
            steps.append(
                (
                    key,
                    rule.below,
                    rule.at_least,
                    _outcome(rule.action, False, rule.condition),
                    _escalated(f'missing answer "{key}"'),
                    _escalated(f'invalid answer "{key}"'),
                    _escalated(f'uncertain answer "{key}"'),
                )
            )
        self._steps: list[_Step] | None = None if general else steps
        if policy.default:
            self._default = _outcome(policy.default, False, NO_RULE_FIRED)
        else:
            self._default = _escalated(NO_RULE_FIRED)

    def record(
        self, answers: Mapping[str, Answer], questions: Mapping[str, Question] | None = None
    ) -> dict[str, Any]:
        return self.outcome(answers, questions)[0].copy()

    def outcome(
        self, answers: Mapping[str, Answer], questions: Mapping[str, Question] | None = None
    ) -> _Outcome:
        steps = self._steps
        if steps is None or questions is not None:
            return self._general(answers, questions)
        yes, no, inclusive = self._yes, self._no, self.inclusive
        for key, below, at_least, fired, missing, invalid, uncertain in steps:
            answer = answers.get(key)
            if answer is None:
                return missing
            if type(answer) is not NoulAnswer:
                return self._general(answers, None)
            p = answer.noul
            if not 0.0 <= p <= 1.0:
                return invalid
            if not ((p >= yes or p <= no) if inclusive else (p > yes or p < no)):
                if self.skip:
                    continue
                return uncertain
            if (p < below) if below is not None else (p >= at_least):  # type: ignore[operator]
                return fired
        return self._default

    def _general(
        self, answers: Mapping[str, Answer], questions: Mapping[str, Question] | None
    ) -> _Outcome:
        got = self._policy.decide(answers, questions)
        return _outcome(got.action, got.escalated, got.reason)


def compiled(policy: Policy) -> CompiledGate:
    """``policy`` compiled, once per Policy object: kept on it (a frozen dataclass; the cache
    is no field, so equality and the question file's digest never see it)."""
    got = policy.__dict__.get("_compiled")
    if got is None:
        got = CompiledGate(policy)
        object.__setattr__(policy, "_compiled", got)
    return got


class GateSet(Mapping[str, Policy]):
    """A question file's gates, fixed and compiled once for a run (``batch`` and ``eval``
    build one as they start): a read-only mapping of the policies by name, in the file's
    order, that :func:`gate_records` walks without looking anything up per record."""

    __slots__ = ("_compiled", "_policies")

    def __init__(self, gates: Mapping[str, Policy]) -> None:
        self._policies = dict(gates)
        # per gate: its name, the JSON text of its key (``"name":``) and its outcome
        self._compiled: list[tuple[str, str, Callable[..., _Outcome]]] = [
            (name, _text(name) + ":", compiled(p).outcome) for name, p in self._policies.items()
        ]

    def __getitem__(self, name: str) -> Policy:
        return self._policies[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._policies)

    def __len__(self) -> int:
        return len(self._policies)


def gate_records(
    gates: Mapping[str, Policy],
    answers: Mapping[str, Answer],
    questions: Mapping[str, Question] | None,
) -> GateOutcomes:
    """Each gate over ``answers``: ``{action, escalated, reason}`` by gate name, in the file's
    order. A gate reads the wire answers, never a recalibrated one: what it decides is what
    ``toolnexus.gate`` decides on the same reply. ``questions``: check answers against them
    (an invalid decision's record). A :class:`GateSet` is walked as compiled; any other
    mapping is compiled policy by policy. The result carries its JSON text (``GateOutcomes``)."""
    walk = gates._compiled if type(gates) is GateSet else GateSet(gates)._compiled
    out, parts = {}, []
    for name, key, outcome in walk:
        fields, text = outcome(answers, questions)
        out[name] = fields.copy()
        parts.append(key + text)
    got = GateOutcomes(out)
    got.json = "{" + ",".join(parts) + "}"
    return got
