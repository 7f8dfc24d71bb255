"""``filter --where``: one condition over a decision, ``KEY[.FIELD] OP VALUE``.

Read with the grammar ``report --fail-on`` reads (``toolnexus.core.comparisons``: the same tokenizer
and operators). KEY is a question key of the set; keys may contain dots, so the longest key that
the left side starts with wins (``a.b.level`` with keys ``a`` and ``a.b`` is ``a.b``'s level).
FIELD defaults by the question's type, and each type has its own:

- noul: ``noul`` (the probability of yes; the default);
- choice: ``choice`` (the option picked; the default, compared with ``==`` / ``!=`` and an option
  of the question), ``confidence``, or an option's name (its probability);
- score: ``score`` (the expected level, the default), ``level``, ``label`` (``==`` / ``!=``),
  ``confidence``.

A bad condition is a :class:`CliError` naming the column at fault and what would be right.

``--gate NAME --action ACTION`` (:class:`GateCondition`) holds when the question file's gate
``NAME`` (a ``gates:`` policy, SPEC §8B) gives ``ACTION`` on the decision: one of its rules'
actions, its default, or ``needs_input`` (the gate escalated).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core import OPERATORS, ConfigError, Decision, Question, parse_comparison, registry
from .errors import CliError

if TYPE_CHECKING:
    from ..core import Policy

__all__ = ["GateCondition", "Where", "parse_gate", "parse_where"]

_TEXT_OPS = ("==", "!=")


@dataclass(frozen=True)
class Where:
    """One parsed ``--where``: question ``key``'s ``field`` compared with ``value``."""

    text: str
    key: str
    field: str
    op: str
    value: float | str
    #: the field is an option's probability (a choice question)
    option: bool = False

    def measure(self, decision: Decision) -> float | str | None:
        """The field's value in ``decision``, or None when the decision has no such answer."""
        answer: Any = decision.answers.get(self.key)
        if answer is None:
            return None
        if self.option:
            return float(answer.probabilities.get(self.field, 0.0))
        value = getattr(answer, self.field, None)
        return value if isinstance(value, str) else None if value is None else float(value)

    def holds(self, decision: Decision) -> bool:
        measured = self.measure(decision)
        if measured is None:
            return False
        return OPERATORS[self.op](measured, self.value)


def _fail(text: str, column: int, why: str) -> CliError:
    return CliError(f"--where {text!r}: column {column}: {why}")


def _key_of(left: str, keys: list[str]) -> tuple[str, str | None] | None:
    """The longest question key ``left`` is or starts with (``key.``), and the rest."""
    for key in sorted(keys, key=len, reverse=True):
        if left == key:
            return key, None
        if left.startswith(key + "."):
            return key, left[len(key) + 1 :]
    return None


def parse_where(text: str, questions: Mapping[str, Question]) -> Where:
    """``text`` as a condition over ``questions``; see the module docstring."""
    try:
        c = parse_comparison(text)
    except ConfigError as e:
        raise CliError(f"--where {text!r}: {e.detail}") from None
    left, op = c.left, c.op.text
    found = _key_of(left.text, list(questions))
    if found is None:
        raise _fail(
            text,
            left.column,
            f"{left.text!r} is not a question key (keys: {', '.join(questions)})",
        )
    key, field = found
    q = questions[key]
    # Each type says which of its answer's fields --where reads (its where_fields, qtypes/).
    qtype = registry.of_question(q)
    fields = qtype.where_fields if qtype is not None else None
    if fields is None:
        raise _fail(
            text, left.column, f"question {key!r} is of type {q.type}, which --where cannot read"
        )
    offers = qtype.offers(q) if qtype is not None else None  # a choice's: each a probability
    options = list(offers) if offers is not None else []
    name = field if field is not None else next(iter(fields))
    at = left.column + len(key) + 1
    option = name not in fields and name in options
    if name not in fields and not option:
        known = ", ".join(fields) + (f", or an option ({', '.join(options)})" if options else "")
        raise _fail(
            text, at, f"{name!r} is not a field of {q.type} question {key!r} (fields: {known})"
        )
    number = option or fields[name]
    right = c.right
    if number:
        try:
            value: float | str = float(right.text)
        except ValueError:
            raise _fail(
                text, right.column, f"{right.text!r} is not a number ({key}.{name} is one)"
            ) from None
    else:
        if op not in _TEXT_OPS:
            raise _fail(
                text, c.op.column, f"{key}.{name} is text: compare it with == or !=, not {op}"
            )
        value = right.text
        if options and value not in options:  # a type with options: its text field is the pick
            raise _fail(
                text,
                right.column,
                f"{value!r} is not an option of {key!r} (options: {', '.join(options)})",
            )
    return Where(c.text, key, name, op, value, option=option)


@dataclass(frozen=True)
class GateCondition:
    """``--gate NAME --action ACTION``: the gate's action on a decision is ``action``."""

    name: str
    action: str
    policy: Policy
    questions: Mapping[str, Question]

    def holds(self, decision: Decision) -> bool:
        # Policy.decide, the one rule: what eval/batch records and ``toolnexus.gate`` decide.
        return self.policy.decide(decision.answers, self.questions).action == self.action


def parse_gate(
    name: str, action: str, gates: Mapping[str, Policy], questions: Mapping[str, Question]
) -> GateCondition:
    """``--gate NAME --action ACTION`` against the question file's ``gates:``; an unknown gate
    or an action it never gives is one line naming what it has."""
    from ..core import NEEDS_INPUT

    if name not in gates:
        have = f"its gates: {', '.join(gates)}" if gates else "it has no gates: section"
        raise CliError(f"--gate {name!r}: no such gate in the question file ({have})")
    policy = gates[name]
    actions = [*dict.fromkeys(r.action for r in policy.rules)]
    actions += [a for a in (policy.default, NEEDS_INPUT) if a and a not in actions]
    if action not in actions:
        raise CliError(
            f"--action {action!r}: gate {name!r} never gives it (its actions: {', '.join(actions)})"
        )
    return GateCondition(name, action, policy, questions)
