"""``gates:`` in a question file (issue 35 item 2): named §8B policies, in the JSON Schema,
checked by ``check-criteria``, and kept out of the canonical bytes and the question-set digest
("so editing a gate never misses a recording")."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from clirun import error_line, run_cli
from toolnexus import NEEDS_INPUT, NoulAnswer
from toolnexus.cli.schema_cmd import schema_text
from toolnexus.core.yamlread import read_yaml
from toolnexus.questionfile.load import (
    lint_text,
    load_question_file,
)

VALIDATOR = jsonschema.Draft202012Validator(json.loads(schema_text()))

QUESTIONS = """\
questions:
  addresses_task: {type: noul, instructions: Does the change address the task?}
  evidence_supports: {type: noul, instructions: Does the evidence support the change?}
  unrelated_changes: {type: noul, instructions: Does the change carry unrelated edits?}
  needs_clarification: {type: noul, instructions: Does the task need clarification?}
  desk: {type: choice, instructions: Which desk?, criteria: {billing: money, tech: bugs}}
  urgency: {type: score, instructions: How urgent?, criteria: [low, mid, high]}
"""
#: The issue's example, verbatim.
MERGE = """\
gates:
  merge:                       # SPEC §8B Policy: first-match rules, then the default
    rules:
      - {question: addresses_task, below: 0.5, action: hold}
      - {question: evidence_supports, below: 0.5, action: hold}
      - {question: unrelated_changes, at_least: 0.5, action: hold}
      - {question: needs_clarification, at_least: 0.5, action: clarify}
    default: permit
    thresholds: {"yes": 0.8, "no": 0.2}   # seed 004's inclusive cut-points instead of bands
"""


def _write(tmp_path: Path, text: str, name: str = "q.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, "utf-8")
    return path


def test_the_issue_example_is_valid_and_means_what_it_says(tmp_path: Path) -> None:
    """Issue 35 item 2: "this example must be valid and mean what it says"."""
    text = QUESTIONS + MERGE
    VALIDATOR.validate(read_yaml(text).value)
    (_, questions), gates = load_question_file(_write(tmp_path, text))
    merge = gates["merge"]
    assert merge.default == "permit" and merge.bands is None
    assert dict(merge.thresholds or {}) == {"yes": 0.8, "no": 0.2}
    keys = ("addresses_task", "evidence_supports", "unrelated_changes", "needs_clarification")

    def run(*ps: float) -> tuple[str, str]:
        got = merge.decide({k: NoulAnswer(p) for k, p in zip(keys, ps, strict=True)}, questions)
        return got.action, got.reason

    assert run(0.8, 0.8, 0.2, 0.2) == ("permit", "no rule fired")  # inclusive at both cuts
    assert run(0.2, 0.9, 0.1, 0.1) == ("hold", '"addresses_task" below 0.5')
    assert run(0.9, 0.9, 0.8, 0.1) == ("hold", '"unrelated_changes" at_least 0.5')
    assert run(0.9, 0.9, 0.1, 0.9) == ("clarify", '"needs_clarification" at_least 0.5')
    assert run(0.5, 0.9, 0.1, 0.1) == (NEEDS_INPUT, 'uncertain answer "addresses_task"')


def _digests(path: Path) -> tuple[str, str, str]:
    return tuple(  # type: ignore[return-value]
        run_cli("canonical", *flag, str(path)).out
        for flag in ((), ("--sha256",), ("--questions-sha256",))
    )


def test_a_gate_never_changes_the_canonical_bytes_or_the_digest(tmp_path: Path) -> None:
    """Issue 35 item 2: gates are "kept out of the question-set digest and the canonical bytes,
    so editing a gate never misses a recording"."""
    plain = _digests(_write(tmp_path, QUESTIONS, "plain.yaml"))
    gated = _digests(_write(tmp_path, QUESTIONS + MERGE, "gated.yaml"))
    edited = _digests(
        _write(tmp_path, QUESTIONS + MERGE.replace("below: 0.5", "below: 0.4"), "edited.yaml")
    )
    assert plain[0].startswith("{")
    assert plain == gated == edited


GOOD = [
    pytest.param(MERGE, id="issue-example"),
    pytest.param(
        "gates:\n  g:\n    rules:\n"
        "      - {question: desk, is: billing, action: route, target: b}\n"
        "    bands: {low: 0.2, high: 0.6}\n    skip_uncertain: true\n",
        id="choice-is-with-bands-and-skip",
    ),
    pytest.param(
        "gates:\n  g: {rules: [{question: urgency, at_least: 1.5, action: page}]}\n",
        id="score-at-least-default-escalates",
    ),
    pytest.param("gates:\n  g: {rules: [], default: permit}\n", id="no-rules-only-a-default"),
]


@pytest.mark.parametrize("gates", GOOD)
def test_schema_and_loader_both_accept(gates: str) -> None:
    text = QUESTIONS + gates
    VALIDATOR.validate(read_yaml(text).value)
    assert not lint_text(text, "f.yaml", strict=True).errors


#: (gates text, the loader's message fragment). Every one is also refused by the schema.
SHAPE = [
    pytest.param(
        "gates:\n  g: {rules: [{question: addresses_task, below: 0.5, at_least: 0.6, "
        "action: h}]}\n",
        "exactly one of below, at_least, is (got below and at_least)",
        id="two-conditions",
    ),
    pytest.param(
        "gates:\n  g: {rules: [{question: addresses_task, action: h}]}\n",
        "exactly one of below, at_least, is (got none)",
        id="no-condition",
    ),
    pytest.param(
        "gates:\n  g: {rules: [{question: addresses_task, over: 0.5, action: h}]}\n",
        "unknown field 'over'",
        id="unknown-rule-field",
    ),
    pytest.param(
        "gates:\n  g: {rules: [{question: addresses_task, below: 0.5}]}\n",
        "action must be a non-empty string",
        id="no-action",
    ),
    pytest.param(
        "gates:\n  g: {rules: [], bands: {low: 0.3, high: 0.7}, thresholds: {yes: 0.8}}\n",
        "bands (exclusive) or thresholds (inclusive), not both",
        id="bands-and-thresholds",
    ),
    pytest.param(
        "gates:\n  g: {rules: [], thresholds: {maybe: 0.5}}\n",
        "unknown threshold 'maybe'",
        id="unknown-threshold",
    ),
    pytest.param("gates:\n  g: {default: permit}\n", "rules must be a list", id="no-rules"),
    pytest.param(
        'gates:\n  g: {rules: [], skip_uncertain: "true"}\n',
        "skip_uncertain is true or false",
        id="skip-uncertain-not-bool",
    ),
]


@pytest.mark.parametrize(("gates", "fragment"), SHAPE)
def test_schema_and_loader_both_reject(gates: str, fragment: str) -> None:
    text = QUESTIONS + gates
    assert list(VALIDATOR.iter_errors(read_yaml(text).value)), "the schema accepted it"
    errors = lint_text(text, "f.yaml", strict=True).errors
    assert any(fragment in e.message for e in errors), errors


#: What only the loader can see: the rule against the file's own questions.
SEMANTIC = [
    pytest.param(
        "  - {question: addresses_tsk, below: 0.5, action: h}\n",
        "no question 'addresses_tsk' in this file; did you mean 'addresses_task'?",
        id="unknown-question",
    ),
    pytest.param(
        "  - {question: desk, below: 0.5, action: h}\n",
        "below reads a noul or a score; 'desk' is a choice",
        id="below-on-a-choice",
    ),
    pytest.param(
        "  - {question: urgency, is: high, action: h}\n",
        "is reads a choice; 'urgency' is a score",
        id="is-on-a-score",
    ),
    pytest.param(
        "  - {question: desk, is: sales, action: h}\n",
        "'desk' does not offer 'sales' (offered: billing, tech)",
        id="option-not-offered",
    ),
]


@pytest.mark.parametrize(("rule", "fragment"), SEMANTIC)
def test_a_gate_that_cannot_be_applied_is_one_located_line(
    tmp_path: Path, rule: str, fragment: str
) -> None:
    """House rule: "Every user-facing failure is one line naming the file:line"; the rule's
    line is the file's 9th (after 7 question lines and ``gates:`` / ``g:`` / ``rules:``)."""
    path = _write(tmp_path, QUESTIONS + "gates:\n  g:\n    rules:\n  " + rule)
    ran = run_cli("eval", str(path), "--state-text", "x")
    assert ran.code == 2
    line = error_line(ran.stderr)
    assert line.startswith(f"{path}:11:")
    assert fragment in line
    checked = run_cli("check-criteria", str(path))
    assert checked.code == 1 and "TN080" in checked.out + checked.stderr


def test_gates_must_be_a_mapping() -> None:
    errors = lint_text(QUESTIONS + "gates: [merge]\n", "f.yaml", strict=True).errors
    assert errors and errors[0].message.startswith("gates must be a mapping")
