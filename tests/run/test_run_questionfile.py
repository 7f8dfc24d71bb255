"""A library run loads its question file without ``toolnexus.cli`` (issue 30, run2 brief item 1:
"a library user should never import from ``toolnexus.cli``"): ``RunConfig.from_question_file``
loads it as ``batch`` does, through ``toolnexus.questionfile``, with the same one-line errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from paths import REPO as ROOT
from toolnexus import ClassifierError
from toolnexus.questionfile import QuestionFileError, load_question_file
from toolnexus.run import RunConfig

QUESTIONS = ROOT / "questions" / "support-triage.yaml"
#: a file that names its model
MODELLED = ROOT / "questions" / "guard.yaml"


def test_from_question_file_is_the_config_batch_builds(monkeypatch: pytest.MonkeyPatch) -> None:
    """The file's questions, gates and path, and its ``model`` in ``classifier``: what
    ``batch QUESTIONS INPUT`` hands the run."""
    monkeypatch.delenv("TOOLNEXUS_MODEL", raising=False)
    (model, questions), gates = load_question_file(QUESTIONS)
    cfg = RunConfig.from_question_file(QUESTIONS, "in.jsonl", id_field="id", output="o.jsonl")
    assert cfg.questions == questions and cfg.gates == gates
    assert cfg.questions_path == str(QUESTIONS)
    assert cfg.inputs == ("in.jsonl",) and (cfg.id_field, cfg.output) == ("id", "o.jsonl")
    assert dict(cfg.classifier) == ({"model": model} if model else {})


@pytest.mark.parametrize(
    ("given", "env", "expected"),
    [
        pytest.param({"model": "jev-flag"}, "jev-env", "jev-flag", id="classifier-model-wins"),
        pytest.param({}, "jev-env", "jev-env", id="env-beats-the-file"),
        pytest.param({}, None, "typesafe/jev-1.13", id="the-files-model-when-nothing-else"),
    ],
)
def test_the_model_order_is_the_clis(
    monkeypatch: pytest.MonkeyPatch, given: dict[str, str], env: str | None, expected: str
) -> None:
    """``--model`` > ``$TOOLNEXUS_MODEL`` > the file's ``model`` (issue 4), for a script too."""
    if env is None:
        monkeypatch.delenv("TOOLNEXUS_MODEL", raising=False)
    else:
        monkeypatch.setenv("TOOLNEXUS_MODEL", env)
    cfg = RunConfig.from_question_file(MODELLED, ("in.jsonl",), classifier=given)
    assert cfg.classifier["model"] == expected


def test_a_bad_file_is_batchs_one_line_in_the_library_tree(tmp_path: Path) -> None:
    """The error ``batch`` prints, byte for byte, raised as a ``ClassifierError``."""
    bad = tmp_path / "set.yaml"
    bad.write_text("questions:\n  q: {type: choise, instructions: x}\n", encoding="utf-8")
    with pytest.raises(QuestionFileError) as info:
        RunConfig.from_question_file(bad, "in.jsonl")
    assert isinstance(info.value, ClassifierError)
    ran = subprocess.run(
        [sys.executable, "-m", "toolnexus", "canonical", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ran.returncode == 2
    assert ran.stderr == f"toolnexus: {info.value}\n"
    assert str(info.value).startswith(f"{bad}:2:")


def test_loading_a_question_file_imports_nothing_from_the_cli() -> None:
    """A script's run config, from a file, loads no ``toolnexus.cli`` module."""
    code = (
        "import sys\n"
        "from toolnexus.run import RunConfig\n"
        f"RunConfig.from_question_file({str(QUESTIONS)!r}, 'in.jsonl')\n"
        "print(sorted(m for m in sys.modules if m.startswith('toolnexus.cli')))\n"
    )
    ran = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert ran.stdout == "[]\n"
