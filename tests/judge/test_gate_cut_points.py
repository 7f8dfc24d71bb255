"""Issue 42 item 4: "Swapped cut-points switch escalation off." One check wherever a pair is
read (the loader, ``check-criteria`` TN080, ``Policy``, a thresholds file); the loader also
refuses bounds no answer of the rule's question type can meet, a gate named ``""`` and an action
named ``needs_input``. ``threshold_band`` keeps seed 004's reading of any values."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from clirun import error_line, run_cli
from toolnexus import ConfigError, NoulAnswer, Policy, threshold_band
from toolnexus.core.bands import Bands
from toolnexus.questionfile.load import lint_text

QUESTIONS = """\
questions:
  addresses_task: {type: noul, instructions: Does the change address the task?}
  urgency: {type: score, instructions: How urgent?, criteria: [low, mid, high]}
gates:
"""
RULE = "{question: addresses_task, below: 0.5, action: hold}"

REFUSED = [
    pytest.param(
        f'  g: {{rules: [{RULE}], thresholds: {{"yes": 0.2, "no": 0.8}}}}\n',
        "no (0.8) is above yes (0.2)",
        id="swapped-thresholds",
    ),
    pytest.param(
        f'  g: {{rules: [{RULE}], thresholds: {{"no": 0.9}}}}\n',
        "no (0.9) is above yes (0.8)",
        id="no-above-the-default-yes",
    ),
    pytest.param(
        f"  g: {{rules: [{RULE}], bands: {{low: 0.7, high: 0.3}}}}\n",
        "bands.low (0.7) must not be above bands.high (0.3)",
        id="swapped-bands",
    ),
    pytest.param(
        "  g: {rules: [{question: addresses_task, below: 1.5, action: hold}]}\n",
        "below 1.5 is outside 0..1",
        id="noul-bound-above-1",
    ),
    pytest.param(
        "  g: {rules: [{question: addresses_task, at_least: -0.1, action: hold}]}\n",
        "at_least -0.1 is outside 0..1",
        id="noul-bound-below-0",
    ),
    pytest.param(
        "  g: {rules: [{question: urgency, at_least: 3, action: hold}]}\n",
        "at_least 3 is outside the score's levels 0..2",
        id="score-level-past-the-last",
    ),
    pytest.param(f'  "": {{rules: [{RULE}]}}\n', "a gate needs a name", id="gate-named-empty"),
    pytest.param(
        "  g: {rules: [{question: addresses_task, below: 0.5, action: needs_input}]}\n",
        "action 'needs_input' is the action of every escalation",
        id="rule-action-needs_input",
    ),
    pytest.param(
        f"  g: {{rules: [{RULE}], default: needs_input}}\n",
        "default 'needs_input' is the action of every escalation",
        id="default-needs_input",
    ),
]


@pytest.mark.parametrize(("gate", "fragment"), REFUSED)
def test_check_criteria_refuses_a_gate_no_answer_can_use(gate: str, fragment: str) -> None:
    """Issue 42 item 4: "The loader, check-criteria (TN080) and the CLI also refuse bounds no
    answer of the rule's question type can meet ..., a gate named "", and an action named
    needs_input"; swapped cut-points are refused "wherever a pair is read"."""
    errors = lint_text(QUESTIONS + gate, "f.yaml", strict=True).errors
    assert [e.code for e in errors] == ["TN080"], errors
    assert fragment in errors[0].message


def test_the_loader_refuses_swapped_cut_points_in_one_located_line(tmp_path: Path) -> None:
    """Issue 42 item 4: a gate with thresholds {"yes": 0.2, "no": 0.8} "is accepted by the
    loader" and every answer then reads as sure; now eval stops at the file's line, exit 2."""
    path = tmp_path / "q.yaml"
    swapped = '{"yes": 0.2, "no": 0.8}'
    path.write_text(QUESTIONS + f"  g: {{rules: [{RULE}], thresholds: {swapped}}}\n")
    ran = run_cli("eval", str(path), "--state-text", "x")
    assert ran.code == 2
    line = error_line(ran.stderr)
    assert line.startswith(f"{path}:5:") and "no (0.8) is above yes (0.2)" in line


def test_a_thresholds_file_with_a_swapped_question_pair_is_refused(tmp_path: Path) -> None:
    """One check wherever a pair is read: a thresholds file's per-question pair too."""
    from toolnexus.core.errors import RunError
    from toolnexus.questionfile.thresholds import read_thresholds

    path = tmp_path / "t.yaml"
    path.write_text('questions:\n  a: {"yes": 0.2, "no": 0.8}\n')
    with pytest.raises(RunError, match=r"question 'a': no \(0.8\) is above yes \(0.2\)"):
        read_thresholds(path)


def test_policy_refuses_swapped_thresholds_and_bands() -> None:
    """Issue 42 item 4: "In the library, Policy and bands construction refuse low > high"."""
    with pytest.raises(ConfigError, match=r"no \(0.8\) is above yes \(0.2\)"):
        Policy(rules=(), thresholds={"yes": 0.2, "no": 0.8})
    with pytest.raises(ConfigError, match="must not be above"):
        Policy(rules=(), bands={"low": 0.8, "high": 0.2})
    with pytest.raises(ConfigError, match="must not be above"):
        Bands(0.8, 0.2)
    equal = {"yes": 0.5, "no": 0.5}
    assert Policy(rules=(), thresholds=equal).thresholds == equal


def test_threshold_band_keeps_seed_004_reading_of_any_values() -> None:
    """Issue 42 item 4: "threshold_band and gate() keep their seed and SPEC §8B behaviour": the
    inclusive rule, p >= yes first, is read for any values (no refusal there)."""
    swapped = {"yes": 0.2, "no": 0.8}
    assert threshold_band(NoulAnswer(0.5), swapped) == "yes"
    assert threshold_band(NoulAnswer(0.1), swapped) == "no"


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        pytest.param({"thresholds": {"yes": 0.2, "no": 0.8}},
                     "thresholds: no (0.8) is above yes (0.2)", id="run-pair"),
        pytest.param({"question_thresholds": {"a": {"yes": 0.2, "no": 0.8}}},
                     "question_thresholds['a']: no (0.8) is above yes (0.2)", id="question-pair"),
        pytest.param({"thresholds": {"no": 0.5}, "question_thresholds": {"a": {"yes": 0.4}}},
                     "question_thresholds['a']: no (0.5) is above yes (0.4)", id="merged-pair"),
        pytest.param({"question_thresholds": {"b": {"yes": 0.9}}},
                     "question_thresholds['b']: 'b' is not a question of the question set",
                     id="issue-42-item-3-unknown-key"),
    ],
)  # fmt: skip
def test_a_scripts_run_config_is_checked_as_the_cli_flag_is(fields: dict, said: str) -> None:
    """Issue 42 item 4, "one check wherever a pair is read": a script's RunConfig too, before
    anything is read (item 3: a question's cut-points only for a question of the set)."""
    from toolnexus import NoulQuestion
    from toolnexus.core.errors import RunError
    from toolnexus.run import RunConfig
    from toolnexus.run.safety import check_config

    with pytest.raises(RunError, match=re.escape(said)):
        check_config(RunConfig({"a": NoulQuestion("A?")}, ("in.jsonl",), **fields))
