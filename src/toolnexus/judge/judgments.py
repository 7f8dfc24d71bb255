"""SPEC §8B's simple judgments over any classifier: ``ask``, ``gate`` and ``Tape``. A thin
layer; the wire is unchanged (the request is the one ``evaluate`` sends). The reading of the
answers and the rules are pure, in ``policy.py``; ``toolnexus.sync`` has the blocking ``ask``,
``gate`` and ``Tape``.

    result = await gate(judge, state, QUESTIONS, Policy(rules=[Rule("fixable", "fail", below=0.3)]))
    if result.escalated:
        ...  # result.request: a §10 Request (kind "input"); the gate declined to decide

A gate never authorises: its action is the caller's own word, taken only when every answer it
read was certain; everything else escalates to ``needs_input``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..classifier import Classifier, create_classifier
from ..core import (
    Bands,
    ConfigError,
    Decision,
    GateResult,
    JudgedAnswer,
    Policy,
    Question,
    QuestionError,
    Rule,
    TapeMiss,
    as_bands,
    as_rules,
    decide,
    read_answer,
)

__all__ = ["Tape", "ask", "gate"]


def question_map(questions: Mapping[str, Any] | Sequence[tuple[str, Any]]) -> dict[str, Any]:
    """The question set as a mapping. §8B's ordered list of ``(name, question)`` pairs is
    accepted too; a duplicate name is an error naming the key, before any request."""
    if isinstance(questions, Mapping):
        return dict(questions)
    if isinstance(questions, str | bytes) or not isinstance(questions, Iterable):
        raise ConfigError(
            "classifier: questions must be a mapping or a list of (name, question) pairs, got "
            f"{type(questions).__name__}"
        )
    out: dict[str, Any] = {}
    for item in questions:
        if not isinstance(item, tuple) or len(item) != 2:
            raise ConfigError("classifier: a question list holds (name, question) pairs")
        name, question = item
        if name in out:
            raise QuestionError(f'classifier: question "{name}" appears twice', name)
        out[name] = question
    return out


def _classifier(classifier: Any) -> Classifier:
    if not isinstance(classifier, Classifier):
        raise ConfigError(
            "classifier: ask/gate take a Classifier (toolnexus.sync has the blocking ones), got "
            f"{type(classifier).__name__}"
        )
    return classifier


async def _evaluate(
    classifier: Any, state: Any, questions: Any
) -> tuple[Decision, dict[str, Question]]:
    c = _classifier(classifier)
    qs = c.prepare(question_map(questions))
    return await c.evaluate(state, qs), qs


async def ask(
    classifier: Classifier,
    state: Any,
    questions: Mapping[str, Any] | Sequence[tuple[str, Any]],
    bands: Bands | Mapping[str, float] | None = None,
    *,
    thresholds: Mapping[str, float] | None = None,
) -> dict[str, JudgedAnswer]:
    """Each answer with its reading: a noul's ``band`` (yes | no | uncertain), a choice or
    score's ``sure``. ``bands`` are §8B's exclusive cut-points (default 0.30 / 0.70);
    ``thresholds`` reads with seed 004's inclusive ones instead. A missing answer is absent."""
    b = as_bands(bands)
    if b is not None and thresholds is not None:
        raise ConfigError("classifier: ask takes bands or thresholds, not both")
    t = Policy(thresholds=thresholds).thresholds  # checked once, as a Policy checks it
    decision, _ = await _evaluate(classifier, state, questions)
    return {k: read_answer(a, b, t) for k, a in decision.answers.items()}


async def gate(
    classifier: Classifier,
    state: Any,
    questions: Mapping[str, Any] | Sequence[tuple[str, Any]],
    rules: Policy | Iterable[Rule | Mapping[str, Any]],
    bands: Bands | Mapping[str, float] | None = None,
) -> GateResult:
    """Evaluate once and apply ``rules``: a ``Policy``, or a list of rules (the plain gate:
    when no rule fires the action is ``""``, nothing escalates). ``bands`` overrides the
    default bands of a list of rules; a Policy carries its own."""
    if isinstance(rules, Policy):
        if bands is not None:
            raise ConfigError("classifier: a Policy carries its bands; pass them in the Policy")
        policy, default = rules, rules.default
    else:
        policy, default = Policy(rules=as_rules(rules), bands=as_bands(bands)), None
    decision, qs = await _evaluate(classifier, state, questions)
    return decide(
        policy.rules,
        decision.answers,
        default=default,
        bands=policy.bands,
        thresholds=policy.thresholds,
        skip_uncertain=policy.skip_uncertain,
        questions=qs,
    )


class Tape:
    """Live decisions recorded by call name, replayed by call name with no network (§8B).

    ``Tape(live).call(name)`` is a classifier that forwards to ``live`` and records each
    decision under ``name``; ``Tape(recorded={name: decision}).call(name)`` is a classifier
    that replays it. Replay is keyed by the call name, not by the request. Getting a replaying
    classifier for an unrecorded name never fails; evaluating it raises ``TapeMiss``
    (``tape: no recorded decision for call "<name>"``) and sends nothing."""

    def __init__(
        self,
        live: Classifier | None = None,
        *,
        recorded: Mapping[str, Decision] | None = None,
    ) -> None:
        if live is not None and not isinstance(live, Classifier):
            raise ConfigError(f"classifier: Tape records a Classifier, got {type(live).__name__}")
        for name, d in (recorded or {}).items():
            if not isinstance(name, str) or not isinstance(d, Decision):
                raise ConfigError("classifier: Tape(recorded=...) maps call names to Decisions")
        self._live = live
        self._decisions: dict[str, Decision] = dict(recorded or {})

    @property
    def recorded(self) -> dict[str, Decision]:
        """The decisions on the tape, by call name (a copy)."""
        return dict(self._decisions)

    def call(self, name: str) -> Classifier:
        """A classifier for the call ``name``: recording when the tape has a live classifier,
        else replaying."""
        if not isinstance(name, str):
            raise ConfigError(f"classifier: a call name is a string, got {type(name).__name__}")
        live = self._live

        async def record(state: Any, questions: Mapping[str, Question]) -> Decision:
            assert live is not None
            decision = await live.evaluate(state, questions)
            self._decisions[name] = decision
            return decision

        async def replay(state: Any, questions: Mapping[str, Question]) -> Decision:
            decision = self._decisions.get(name)
            if decision is None:
                raise TapeMiss(name)
            return decision

        return create_classifier(style="custom", evaluate=record if live is not None else replay)
