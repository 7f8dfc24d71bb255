"""Issue 31 item 4 and issue 33 item 4: ``check-criteria`` and ``eval`` read question files with
one loader and give the same verdict on every hostile file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clirun import error_line, run_cli

Q = "questions:\n"

HOSTILE = [
    pytest.param(
        "questions: []\n", "1:12: TN012 no questions: write at least one", id="empty-list"
    ),
    pytest.param("questions:\n", "1:11: TN012 no questions: write at least one", id="null"),
    pytest.param("questions: ~\n", "1:12: TN012 no questions: write at least one", id="tilde"),
    pytest.param(
        "questions: [1, 2, 3]\n",
        "1:12: TN020 'questions' must be a mapping of question key to question, got a list",
        id="list-of-ints",
    ),
    pytest.param(
        "questions: yes\n",
        "1:12: TN020 'questions' must be a mapping of question key to question, got a boolean",
        id="boolean",
    ),
    pytest.param("questions: {}\n", "1:12: TN012 no questions: write at least one", id="empty-map"),
]


@pytest.mark.parametrize(("text", "finding"), HOSTILE)
def test_a_top_level_questions_key_of_any_value_is_a_question_file(
    tmp_path: Path, text: str, finding: str
) -> None:
    """Issue 31 item 4: "A YAML file with a top-level `questions` key of any value is a question
    file ... both commands use one loader and give the same verdict on every hostile file"."""
    path = tmp_path / "q.yaml"
    path.write_text(text, encoding="utf-8")
    lint = run_cli("check-criteria", str(path))
    assert (lint.code, lint.out) == (1, f"{path}:{finding}\n")
    canonical = run_cli("canonical", str(path))
    code, _, message = finding.partition(" ")[2].partition(" ")
    assert canonical.code == 2
    assert error_line(canonical.stderr) == f"{path}:{finding.split(' ')[0]} {message}"
    assert code.startswith("TN")


def test_null_option_description_loads_is_sent_as_null_and_counts_as_empty(
    tmp_path: Path,
) -> None:
    """Issue 33 item 4: "The YAML loader accepts a `null` option description, as the wire does
    (seed 004's degenerate rule counts it as empty); `check-criteria` still reports degenerate
    sets"."""
    one = tmp_path / "one.yaml"
    one.write_text(
        Q + "  d: {type: choice, instructions: x, criteria: {a: ~, b: means b, c: means c}}\n",
        encoding="utf-8",
    )
    ran = run_cli("canonical", str(one))
    assert ran.code == 0, ran.stderr
    body = json.loads(ran.out)
    assert body["questions"]["d"]["criteria"] == {"a": None, "b": "means b", "c": "means c"}
    lint = run_cli("check-criteria", "--select", "TN00,TN02", str(one))
    assert lint.out == f"{one}:2:52: TN023 question 'd': option 'a' has an empty description\n"
    every = tmp_path / "every.yaml"
    every.write_text(
        Q + "  d: {type: choice, instructions: x, criteria: {a: ~, b: ''}}\n", encoding="utf-8"
    )
    lint = run_cli("check-criteria", "--select", "TN00,TN02", str(every))
    assert lint.code == 1
    assert lint.out == f"{every}:2:48: TN001 question 'd': every option description is empty\n"
    assert run_cli("canonical", str(every)).code == 0
