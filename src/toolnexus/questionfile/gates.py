"""The ``gates:`` section of a question file: named SPEC §8B policies, each finding located at
the YAML node it is about (issue 35 item 2).

    gates:
      merge:                       # first-match rules, then the default
        rules:
          - {question: addresses_task, below: 0.5, action: hold}
          - {question: needs_clarification, at_least: 0.5, action: clarify}
        default: permit            # absent or "": no rule fired escalates to needs_input
        thresholds: {"yes": 0.8, "no": 0.2}   # seed 004's inclusive cut-points, or
        # bands: {low: 0.3, high: 0.7}        # §8B's exclusive ones (the default)
        skip_uncertain: false

Gates are never sent and never part of the canonical request or the question-set digest:
editing a gate keeps every recording and cache entry matching. ``policy.Policy`` is the one
definition of what a gate means; this module only adds positions and the checks a file
author wants before a run (a rule on an unknown question, a condition its question's type
cannot meet, an option the choice does not offer).
"""

from __future__ import annotations

from typing import Any

from ..core import NEEDS_INPUT, ConfigError, Policy, Question, Rule, registry
from .checker import Checker, _kind, _suggest

__all__ = ["GATE_CODE", "check_gates"]

#: The finding code of a gate that cannot be applied as written.
GATE_CODE = "TN080"
_GATE_FIELDS = ("rules", "default", "bands", "thresholds", "skip_uncertain")
_RULE_FIELDS = ("question", "below", "at_least", "is", "action", "target")


def check_gates(checker: Checker, data: Any, questions: dict[str, Question]) -> dict[str, Policy]:
    """The file's gates by name (in file order); each problem becomes a finding of
    ``checker``. A gate with any problem is left out."""
    if not isinstance(data, dict) or "gates" not in data:
        return {}
    gates = data["gates"]
    at = checker.doc.at
    if not isinstance(gates, dict):
        checker.add(
            at(("gates",)), "TN020", f"gates must be a mapping of names, got {_kind(gates)}"
        )
        return {}
    out: dict[str, Policy] = {}
    for name, obj in gates.items():
        if str(name) == "":
            # issue 42 item 4: a gate named "" cannot be named by filter --gate or --fail-on
            checker.add(
                checker.doc.key_at(("gates", name)), GATE_CODE, "a gate needs a name, got ''"
            )
            continue
        policy = _gate(checker, str(name), obj, questions)
        if policy is not None:
            out[str(name)] = policy
    return out


def _gate(checker: Checker, name: str, obj: Any, questions: dict[str, Question]) -> Policy | None:
    path = ("gates", name)
    where = f"gate {name!r}: "
    before = len(checker.findings)
    if not isinstance(obj, dict):
        checker.add(
            checker.doc.at(path), "TN020", f"{where}must be a mapping with rules, got {_kind(obj)}"
        )
        return None
    checker.unknown_fields(obj, path, _GATE_FIELDS, where)
    rules_raw = obj.get("rules")
    if not isinstance(rules_raw, list):
        checker.add(
            checker.doc.key_at(path if "rules" not in obj else (*path, "rules")),
            "TN020",
            f"{where}rules must be a list of rules, got {_kind(rules_raw)}",
        )
        rules_raw = []
    rules = []
    for i, raw in enumerate(rules_raw):
        rule = _rule(checker, f"{where}rule {i}: ", raw, (*path, "rules", i), questions)
        if rule is not None:
            rules.append(rule)
    if "default" in obj and not isinstance(obj["default"], str):
        checker.add(
            checker.doc.at((*path, "default")),
            "TN020",
            f"{where}default must be an action (a string), got {_kind(obj['default'])}",
        )
    if obj.get("default") == NEEDS_INPUT:
        checker.add(checker.doc.at((*path, "default")), GATE_CODE, _needs_input(where, "default"))
    if "skip_uncertain" in obj and not isinstance(obj["skip_uncertain"], bool):
        checker.add(
            checker.doc.at((*path, "skip_uncertain")),
            "TN020",
            f"{where}skip_uncertain is true or false",
        )
    if len(checker.findings) > before:
        return None
    try:
        return Policy(
            rules=tuple(rules),
            default=obj.get("default", ""),
            bands=obj.get("bands"),
            thresholds=obj.get("thresholds"),
            skip_uncertain=obj.get("skip_uncertain", False),
        )
    except ConfigError as e:
        # bands / thresholds: the Policy's own checks and wording, at the node they are about
        field = next((f for f in ("thresholds", "bands") if f in obj), None)
        node = (*path, field) if field else path
        checker.add(checker.doc.at(node), GATE_CODE, f"{where}{e.detail}")
        return None


def _needs_input(where: str, field: str) -> str:
    return (
        f"{where}{field} {NEEDS_INPUT!r} is the action of every escalation: name the action "
        "(e.g. review), so filter --gate ... --action tells the two apart"
    )


def _unmeetable(q: Question, value: float) -> str | None:
    """Why a ``below`` / ``at_least`` bound is outside every value an answer of ``q``'s type
    can take (issue 42 item 4): a noul probability is in 0..1; a score's value is a level
    index, 0..the last level."""
    if registry.answers_probability(q.type):
        return None if 0.0 <= value <= 1.0 else f"is outside 0..1, where a {q.type} answer lies"
    levels = q.criteria
    assert isinstance(levels, list | tuple)  # a gauged type other than a probability: a score
    last = len(levels) - 1
    if 0 <= value <= last:
        return None
    return f"is outside the score's levels 0..{last}: no answer can be there"


def _rule(
    checker: Checker, where: str, obj: Any, path: tuple[Any, ...], questions: dict[str, Question]
) -> Rule | None:
    at = checker.doc.at
    if not isinstance(obj, dict):
        checker.add(at(path), "TN020", f"{where}must be a mapping, got {_kind(obj)}")
        return None
    before = len(checker.findings)
    checker.unknown_fields(obj, path, _RULE_FIELDS, where)
    for needed in ("question", "action"):
        if not isinstance(obj.get(needed), str) or not obj.get(needed):
            checker.add(
                checker.doc.key_at(path if needed not in obj else (*path, needed)),
                "TN020",
                f"{where}{needed} must be a non-empty string",
            )
    conditions = [c for c in ("below", "at_least", "is") if c in obj]
    if len(conditions) != 1:
        got = " and ".join(conditions) if conditions else "none"
        checker.add(
            at(path),
            GATE_CODE,
            f"{where}a rule takes exactly one of below, at_least, is (got {got})",
        )
    if len(checker.findings) > before:
        return None
    if obj["action"] == NEEDS_INPUT:
        checker.add(at((*path, "action")), GATE_CODE, _needs_input(where, "action"))
        return None
    key, cond = obj["question"], conditions[0]
    value = obj[cond]
    q = questions.get(key)
    if q is None:
        checker.add(
            at((*path, "question")),
            GATE_CODE,
            f"{where}no question {key!r} in this file{_suggest(key, tuple(questions))}",
        )
        return None
    qtype = registry.of_question(q)
    offers = qtype.offers(q) if qtype is not None else None
    if cond == "is":
        if offers is None:
            checker.add(
                at((*path, "is")), GATE_CODE, f"{where}is reads a choice; {key!r} is a {q.type}"
            )
        elif not isinstance(value, str) or value not in offers:
            offered = ", ".join(offers)
            checker.add(
                at((*path, "is")),
                GATE_CODE,
                f"{where}{key!r} does not offer {value!r} (offered: {offered})",
            )
    elif qtype is None or not qtype.gauged:
        checker.add(
            at((*path, cond)),
            GATE_CODE,
            f"{where}{cond} reads a noul or a score; {key!r} is a {q.type} (a choice takes is)",
        )
    elif isinstance(value, bool) or not isinstance(value, int | float):
        checker.add(
            at((*path, cond)), "TN020", f"{where}{cond} must be a number, got {_kind(value)}"
        )
    else:
        unmet = _unmeetable(q, value)
        if unmet is not None:
            checker.add(at((*path, cond)), GATE_CODE, f"{where}{cond} {value!r} {unmet}")
    if len(checker.findings) > before:
        return None
    try:
        return Rule.from_mapping(obj)
    except ConfigError as e:
        checker.add(at(path), GATE_CODE, f"{where}{e.detail}")
        return None
