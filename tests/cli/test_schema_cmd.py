"""The question-set JSON Schema: shipped in the package, printed by ``toolnexus schema``, and in
agreement with the loader (issue 4: "A test validates every file in questions/ against it")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from clirun import run_cli
from paths import REPO
from toolnexus.cli.schema_cmd import schema_text
from toolnexus.core.yamlread import read_yaml
from toolnexus.questionfile.load import lint_text

SCHEMA: dict[str, Any] = json.loads(schema_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
SHIPPED = sorted((REPO / "questions").glob("*.yaml")) + sorted(
    (REPO / "tests" / "conformance_yaml").glob("*.yaml")
)


def _data(text: str) -> Any:
    # The loader's reading (keys as written), which is what editors see for quoted keys too.
    return read_yaml(text).value


def test_schema_is_a_valid_draft_2020_12_schema_with_an_id() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert SCHEMA["$id"]
    assert SCHEMA["description"]


def test_toolnexus_schema_prints_the_shipped_file() -> None:
    ran = run_cli("schema")
    assert ran.code == 0
    shipped = (REPO / "src" / "toolnexus" / "question-set.schema.json").read_text("utf-8")
    assert ran.out == shipped
    assert json.loads(ran.out) == SCHEMA


@pytest.mark.parametrize("path", [pytest.param(p, id=p.name) for p in SHIPPED])
def test_every_shipped_question_file_validates(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    VALIDATOR.validate(_data(text))
    # And each names the schema for editors (yaml-language-server modeline, first line).
    first = text.splitlines()[0]
    assert first.startswith("# yaml-language-server: $schema=")
    target = (path.parent / first.split("$schema=", 1)[1]).resolve()
    assert target == (REPO / "src" / "toolnexus" / "question-set.schema.json").resolve()


def test_questions_dir_holds_the_issue_4_sets() -> None:
    names = {p.name for p in (REPO / "questions").glob("*.yaml")}
    assert names >= {
        "support-triage.yaml",
        "shell-risk.yaml",
        "guard.yaml",
        "choice-small.yaml",
        "choice-wide.yaml",
        "mixed-batch.yaml",
        "noul-small.yaml",
        "score-short.yaml",
        "score-ten.yaml",
    }


Q = "questions:\n"
# Bad files the schema can express: the schema and the loader must both reject each.
BAD = [
    pytest.param("- a\n", id="not-a-mapping"),
    pytest.param("model: m\n", id="no-questions"),
    pytest.param("questions: {}\n", id="empty-questions"),
    pytest.param("modle: m\n" + Q + "  d: {type: noul, instructions: x}\n", id="unknown-top"),
    pytest.param(Q + "  d: {type: choise, instructions: x, criteria: {a: b}}\n", id="typo-type"),
    pytest.param(Q + "  d: {type: noul, raw: true, instructions: x}\n", id="raw-modelled"),
    pytest.param(Q + "  d: {type: noul}\n", id="no-instructions"),
    pytest.param(Q + "  d: {type: noul, instructions: ' '}\n", id="blank-instructions"),
    pytest.param(Q + "  d: {type: noul, instructions: x, critera: {}}\n", id="unknown-field"),
    pytest.param(Q + "  d: {type: noul, instructions: x, criteria: {maybe: y}}\n", id="noul-side"),
    pytest.param(Q + "  d:\n    type: noul\n    instructions: x\n    criteria:\n", id="noul-null"),
    pytest.param(Q + "  d: {type: choice, instructions: x}\n", id="choice-no-criteria"),
    pytest.param(Q + "  d: {type: choice, instructions: x, criteria: {}}\n", id="choice-zero"),
    pytest.param(
        Q
        + "  d: {type: choice, instructions: x, criteria: {"
        + ", ".join(f"o{i}: m" for i in range(256))
        + "}}\n",
        id="choice-256",
    ),
    pytest.param(Q + "  d: {type: choice, instructions: x, criteria: {a: 1}}\n", id="choice-num"),
    pytest.param("questions: []\n", id="questions-empty-list"),
    pytest.param("questions:\n", id="questions-null"),
    pytest.param("questions: [1, 2, 3]\n", id="questions-list"),
    pytest.param(Q + "  u: {type: score, instructions: x, criteria: [a]}\n", id="score-one"),
    pytest.param(
        Q + "  u: {type: score, instructions: x, criteria: [a,b,c,d,e,f,g,h,i,j,k]}\n",
        id="score-eleven",
    ),
    pytest.param(
        Q + "  u: {type: score, instructions: x, criteria: [a, {label: b, x: 1}]}\n",
        id="score-level-field",
    ),
    pytest.param(
        Q + "  u: {type: score, instructions: x, criteria: [a, {description: b}]}\n",
        id="score-level-no-label",
    ),
]


@pytest.mark.parametrize("text", BAD)
def test_schema_and_loader_both_reject(text: str) -> None:
    assert list(VALIDATOR.iter_errors(_data(text))), "the schema accepted a bad file"
    assert lint_text(text, "f.yaml", strict=True).errors, "the loader accepted a bad file"


GOOD = [
    pytest.param(Q + "  d: {type: noul, instructions: x}\n", id="noul-absent"),
    pytest.param(Q + "  d: {type: noul, instructions: x, criteria: {}}\n", id="noul-empty"),
    pytest.param(Q + "  d: {type: noul, instructions: {task: t}}\n", id="structured-instr"),
    pytest.param(Q + "  d: {type: box, raw: true, instructions: x}\n", id="raw-box"),
    pytest.param(
        Q + "  u: {type: score, instructions: x, criteria: [a, {label: b, description: c}]}\n",
        id="structured-level",
    ),
    pytest.param(
        "model: m\n" + Q + "  d: {type: choice, instructions: x, criteria: {a: b}}\n",
        id="choice-one-option",
    ),
    pytest.param(
        Q + "  d: {type: choice, instructions: x, criteria: {a: ~, b: c}}\n",
        id="choice-null-description-issue-33-item-4",
    ),
]


@pytest.mark.parametrize("text", GOOD)
def test_schema_and_loader_both_accept(text: str) -> None:
    VALIDATOR.validate(_data(text))
    assert not lint_text(text, "f.yaml", strict=True).errors
