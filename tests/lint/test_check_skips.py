"""Issue 43 item 5, "a lint that stays quiet": "an explicitly named YAML file with no top-level
`questions` is still skipped, but never silently (one stderr line: `FILE: skipped, not a question
set (--strict checks it)`); a file whose top-level key is within edit distance 2 of `questions`,
`gates` or `model` is checked and gets TN020 naming the key it probably meant; over MCP, whatever
is sent is always checked as a question file"."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from clirun import run_cli
from toolnexus.questionfile.checker import edit_distance

NOT_A_SET = "jobs:\n  build: {runs-on: ubuntu}\n"
QUESTION = "  a: {type: noul, instructions: Is it?}\n"
GATE = "  g: {rules: [{question: a, at_least: 0.5, action: x}], default: y}\n"


@pytest.mark.parametrize(
    ("text", "key", "meant"),
    [
        pytest.param("question:\n" + QUESTION, "question", "questions", id="question"),
        pytest.param("qeustions:\n" + QUESTION, "qeustions", "questions", id="swapped-letters"),
        pytest.param("Questions:\n" + QUESTION, "Questions", "questions", id="capital"),
        pytest.param("questionz:\n" + QUESTION, "questionz", "questions", id="questionz"),
        pytest.param("gate:\n" + GATE, "gate", "gates", id="gate"),
        pytest.param("modle: jev-1.13.0\n", "modle", "model", id="modle"),
    ],
)
def test_a_misspelled_top_level_key_is_checked_and_named(
    tmp_path: Path, text: str, key: str, meant: str
) -> None:
    path = tmp_path / "typo.yaml"
    path.write_text(text, encoding="utf-8")
    ran = run_cli("check-criteria", str(path))
    assert ran.code == 1
    assert ran.out == (
        f"{path}:1:1: TN020 not a question set: unknown top-level key {key!r}; did you mean "
        f"{meant!r}?\n"
    )
    assert "skipped" not in ran.stderr


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(NOT_A_SET, id="ci-config"),
        pytest.param("mode: fast\nnotes: [a]\ngames: 3\n", id="five-letter-neighbours"),
        pytest.param("model: resnet50\nnames: [cat]\n", id="a-model-key-that-is-no-jev-model"),
        pytest.param("hello\n", id="a-string"),
        pytest.param("question: What is a refund?\nanswer: Money back.\n", id="an-faq-entry"),
        pytest.param("gate: B12\nterminal: 2\n", id="a-gate-that-is-no-gates-section"),
    ],
)
def test_a_named_file_that_is_not_a_set_is_skipped_with_one_line(tmp_path: Path, text: str) -> None:
    path = tmp_path / "other.yaml"
    path.write_text(text, encoding="utf-8")
    ran = run_cli("check-criteria", str(path))
    assert (ran.code, ran.out) == (0, "")
    assert ran.stderr == f"{path}: skipped, not a question set (--strict checks it)\n"


def test_eval_names_the_key_meant(tmp_path: Path) -> None:
    """The loader is one: ``eval`` refuses the typo with the same line the hook shows."""
    from toolnexus.questionfile import QuestionFileError, load_question_set

    path = tmp_path / "typo.yaml"
    path.write_text("question:\n" + QUESTION, encoding="utf-8")
    with pytest.raises(QuestionFileError) as caught:
        load_question_set(path)
    assert str(caught.value) == (
        f"{path}:1:1: not a question set: unknown top-level key 'question'; did you mean "
        "'questions'?"
    )


def test_a_file_found_under_a_directory_is_skipped_quietly(tmp_path: Path) -> None:
    """A directory means every YAML file under it: only the files the caller named are said."""
    (tmp_path / "ci.yaml").write_text(NOT_A_SET, encoding="utf-8")
    ran = run_cli("check-criteria", str(tmp_path))
    assert (ran.code, ran.out, ran.stderr) == (0, "", "")


@pytest.mark.parametrize(
    ("a", "b", "distance"),
    [
        pytest.param("question", "questions", 1, id="deletion"),
        pytest.param("qeustions", "questions", 1, id="swap"),
        pytest.param("qusetionz", "questions", 2, id="swap-and-substitution"),
        pytest.param("quests", "questions", 3, id="three-deletions-is-too-far"),
        pytest.param("gates", "gates", 0, id="same"),
        pytest.param("", "model", 5, id="empty"),
    ],
)
def test_edit_distance(a: str, b: str, distance: int) -> None:
    assert edit_distance(a, b) == distance


def _mcp_check(text: str) -> tuple[Any, str, bool]:
    from toolnexus.cli.mcp_server import McpApp

    app = McpApp(tools={}, backends={}, scheduler=None)  # type: ignore[arg-type]
    return asyncio.run(app.call("check-criteria", {"yaml": text}))


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        pytest.param("question:\n" + QUESTION, "did you mean 'questions'?", id="typo"),
        pytest.param("hello", "not a question set", id="a-string"),
        pytest.param(NOT_A_SET, "not a question set", id="another-yaml-file"),
        pytest.param("!!python/object:os.system {}\n", "unknown YAML tag", id="python-object-tag"),
        pytest.param(
            "questions: !!python/object/apply:os.system\n  a: 1\n",
            "unknown YAML tag",
            id="python-tag-on-questions",
        ),
    ],
)
def test_over_mcp_whatever_is_sent_is_checked_as_a_question_file(text: str, fragment: str) -> None:
    structured, said, is_error = _mcp_check(text)
    assert not is_error
    assert said != "no findings"
    assert structured["failed"] is True
    assert fragment in said


def test_a_tag_on_a_mapping_is_an_error_for_eval_too(tmp_path: Path) -> None:
    """The loader is one: a tagged mapping stops ``eval`` as it fails the hook."""
    from toolnexus.questionfile import QuestionFileError, load_question_set

    path = tmp_path / "q.yaml"
    path.write_text("questions: !!python/object:x\n" + QUESTION, encoding="utf-8")
    with pytest.raises(QuestionFileError, match="unknown YAML tag"):
        load_question_set(path)
