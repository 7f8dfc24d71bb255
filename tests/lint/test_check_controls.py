"""Issue 34 item 2: the controls linters have — --select/--ignore by code or prefix, --level,
inline suppressions (reported when they suppress nothing), --list-rules, --explain, a
[tool.toolnexus.check-criteria] table in pyproject.toml — and the text/JSON/SARIF outputs,
locked by golden files (UPDATE_GOLDEN=1 rewrites them after a deliberate change)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from clirun import error_line, run_cli
from paths import REPO, docs_text
from toolnexus.questionfile.codes import CODES
from toolnexus.questionfile.rules import RULES

SAMPLE = "tests/fixtures/check/sample.yaml"
GOLDEN = REPO / "tests" / "golden"

#: sample.yaml's findings at the default level, by code.
DEFAULT = ["TN050", "TN040", "TN090"]


def _codes(out: str) -> list[str]:
    return [line.split(": ")[1].split()[0] for line in out.splitlines()]


@pytest.fixture(autouse=True)
def _in_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)


@pytest.mark.parametrize(
    ("name", "args"),
    [
        pytest.param("check-criteria.txt", [], id="text"),
        pytest.param("check-criteria.json", ["--level", "info", "--format", "json"], id="json"),
        pytest.param("check-criteria.sarif", ["--level", "info", "--format", "sarif"], id="sarif"),
    ],
)
def test_golden_outputs(name: str, args: list[str]) -> None:
    """Issue 34 acceptance: "golden text/JSON/SARIF outputs"."""
    ran = run_cli("check-criteria", *args, SAMPLE)
    assert ran.code == 1
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(ran.out, encoding="utf-8")
    assert ran.out == path.read_text(encoding="utf-8")


def _sarif() -> dict[str, Any]:
    return json.loads(run_cli("check-criteria", "--format", "sarif", SAMPLE).out)


def test_sarif_has_the_structure_sarif_2_1_0_requires() -> None:
    """Issue 34 item 2: "SARIF 2.1.0 (... with a `helpUri` per rule; the schema cannot be
    fetched offline, so a test checks its required structure by hand)"."""
    log = _sarif()
    assert log["version"] == "2.1.0"
    assert log["$schema"].endswith("sarif-2.1.0.json")
    (run,) = log["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "toolnexus check-criteria"
    assert [r["id"] for r in driver["rules"]] == list(CODES)
    for rule in driver["rules"]:
        assert rule["helpUri"].startswith("https://") and rule["helpUri"].endswith(
            "#" + rule["id"].lower()
        )
        assert rule["shortDescription"]["text"]
        assert rule["defaultConfiguration"]["level"] in ("note", "warning", "error")
    assert [r["ruleId"] for r in run["results"]] == DEFAULT
    for result in run["results"]:
        assert driver["rules"][result["ruleIndex"]]["id"] == result["ruleId"]
        assert result["level"] in ("note", "warning", "error")
        assert result["message"]["text"]
        (location,) = result["locations"]
        physical = location["physicalLocation"]
        assert physical["artifactLocation"]["uri"] == SAMPLE
        assert physical["region"]["startLine"] >= 1 and physical["region"]["startColumn"] >= 1


@pytest.mark.parametrize(
    ("args", "codes", "exit_code"),
    [
        pytest.param([], DEFAULT, 1, id="default-warning"),
        pytest.param(["--level", "info"], [*DEFAULT, "TN061"], 1, id="info-shown"),
        pytest.param(["--level", "error"], [], 0, id="error-only"),
        pytest.param(["--select", "TN05"], ["TN050"], 1, id="select-prefix"),
        pytest.param(["--select", "TN040,TN090"], ["TN040", "TN090"], 1, id="select-comma"),
        pytest.param(["--select", "TN040", "--select", "TN090"], ["TN040", "TN090"], 1, id="rep"),
        pytest.param(["--ignore", "TN04", "--ignore", "TN05"], ["TN090"], 1, id="ignore-prefix"),
        pytest.param(["--ignore", "tn050,TN040,TN090"], [], 0, id="ignore-all-lowercase"),
        pytest.param(["--select", "TN061", "--level", "info"], ["TN061"], 0, id="info-never-fails"),
    ],
)
def test_select_ignore_and_level(args: list[str], codes: list[str], exit_code: int) -> None:
    """Issue 34 item 2: "`--select` / `--ignore` by code or prefix, a minimum severity ...
    default `warning` ... 1 when a finding at or above `warning` remains; info findings are
    shown only at `--level info` and never fail"."""
    ran = run_cli("check-criteria", *args, SAMPLE)
    assert (_codes(ran.out), ran.code) == (codes, exit_code), ran.out + ran.stderr


def test_errors_that_stop_eval_loading_cannot_be_ignored(tmp_path: Path) -> None:
    """One loader, one verdict (issue 31 item 4): an error that makes eval refuse the file is
    reported whatever --ignore, --select or --level say, and is never suppressed."""
    path = tmp_path / "q.yaml"
    path.write_text(
        "questions:\n  d:  # toolnexus: ignore[TN025] not really\n    type: noul\n",
        encoding="utf-8",
    )
    ran = run_cli("check-criteria", "--ignore", "TN025", "--select", "TN05", str(path))
    assert ran.code == 1
    assert _codes(ran.out) == ["TN025"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            ["--select", "TN5"],
            "--select: no rule code is or starts with 'TN5' (see check-criteria --list-rules)",
            id="select-unknown",
        ),
        pytest.param(
            ["--ignore", "E501"],
            "--ignore: no rule code is or starts with 'E501' (see check-criteria --list-rules)",
            id="ignore-foreign",
        ),
        pytest.param(
            ["--as", "yaml"], "--as says how to read --state: give --state FILE too", id="as-alone"
        ),
    ],
)
def test_unknown_codes_are_usage_errors(args: list[str], message: str) -> None:
    """And `--as` says how to read `--state`: alone it is a usage error too."""
    ran = run_cli("check-criteria", *args, SAMPLE)
    assert (ran.code, error_line(ran.stderr)) == (2, message)


def test_a_suppression_on_a_question_key_covers_the_question_and_nothing_else(
    tmp_path: Path,
) -> None:
    """Issue 34 item 2: "an inline suppression on the line of a key (`# toolnexus:
    ignore[TNxxx] reason`) that is itself reported if it suppresses nothing"."""
    path = tmp_path / "q.yaml"
    path.write_text(
        "model: jev-1.13.0\nquestions:\n"
        "  a:  # toolnexus: ignore[TN050, TN062] closed set, and the vendor's wording\n"
        "    type: choice\n    instructions: Isn't it billing or shipping?\n"
        "    criteria: {billing: money, shipping: a parcel}\n"
        "  b:\n    type: choice\n    instructions: Which desk?\n"
        "    criteria: {billing: money, shipping: a parcel}\n"
        "  c:\n    type: noul\n    instructions: Is it about money?\n"
        "    # toolnexus: ignore[TN050] no key on this line\n"
        "  d:  # toolnexus: ignore[TN050]\n    type: noul\n    instructions: Is it a parcel?\n",
        encoding="utf-8",
    )
    ran = run_cli("check-criteria", "--level", "info", str(path))
    assert [line.split(": ", 1)[0].split(":", 1)[1] + " " + c for line, c in zip(
        ran.out.splitlines(), _codes(ran.out), strict=True
    )] == ["7:3 TN050", "14:5 TN090", "15:7 TN090", "15:7 TN091"]  # fmt: skip


def test_a_suppression_naming_an_unknown_code_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "q.yaml"
    path.write_text(
        "questions:\n  a:  # toolnexus: ignore[TN999] why\n"
        "    type: noul\n    instructions: Is it about money?\n",
        encoding="utf-8",
    )
    ran = run_cli("check-criteria", str(path))
    assert ran.out == f"{path}:2:7: TN091 suppression names unknown code 'TN999'\n"


def test_the_suppression_comment_never_reaches_the_request_bytes(tmp_path: Path) -> None:
    """Issue 34 item 1: the suppression "never reaches the request bytes": support-triage.yaml
    (seed 001's example 1, replayed by `make demo`) carries one, and its canonical request and
    question-set digest equal those of the same file without the comment."""
    shipped = REPO / "questions" / "support-triage.yaml"
    text = shipped.read_text(encoding="utf-8")
    assert "# toolnexus: ignore[TN050]" in text
    bare = tmp_path / "bare.yaml"
    bare.write_text(text.replace("  # toolnexus: ignore[TN050]", "  #"), encoding="utf-8")
    for args in ([], ["--questions-sha256"], ["--sha256"]):
        with_comment = run_cli("canonical", *args, str(shipped))
        without = run_cli("canonical", *args, str(bare))
        assert with_comment.code == 0
        assert with_comment.out == without.out


def test_list_rules_and_explain_come_from_the_one_rule_table() -> None:
    """Issue 34 item 2: `--list-rules`, `--explain CODE`."""
    ran = run_cli("check-criteria", "--list-rules")
    assert ran.code == 0
    assert ran.out.splitlines() == [f"{r.code}  {r.severity:<7}  {r.summary}" for r in RULES]
    listed = json.loads(run_cli("check-criteria", "--list-rules", "--format", "json").out)
    assert [r["code"] for r in listed] == list(CODES)
    explained = run_cli("check-criteria", "--explain", "tn050")
    assert explained.code == 0
    assert explained.out.startswith("TN050 (warning; the file still loads): choice has no option")
    assert "0 of 30 out-of-scope messages" in explained.out
    assert "# toolnexus: ignore[TN050] <why>" in explained.out
    missing = run_cli("check-criteria", "--explain", "TN999")
    assert missing.code == 2
    assert "no such rule code" in error_line(missing.stderr)


def test_every_rule_has_a_severity_rationale_and_fix() -> None:
    """Issue 34 item 1: "a severity that follows what has been measured, a one-paragraph
    rationale citing its evidence, and the fix"; info rules say the evidence contradicts or
    does not confirm the vendor."""
    for rule in RULES:
        assert rule.rationale and rule.fix, rule.code
        if rule.severity == "info":
            words = rule.rationale.lower()
            assert "contradict" in words or "not confirmed" in words or "not measured" in words


def _project(tmp_path: Path, table: str) -> Path:
    (tmp_path / "pyproject.toml").write_text(
        f"[project]\nname = 'x'\n\n[tool.toolnexus.check-criteria]\n{table}", encoding="utf-8"
    )
    sub = tmp_path / "deep" / "er"
    sub.mkdir(parents=True)
    target = sub / "sample.yaml"
    target.write_text((REPO / SAMPLE).read_text(encoding="utf-8"), encoding="utf-8")
    return sub


@pytest.mark.parametrize(
    ("table", "args", "codes"),
    [
        pytest.param('ignore = ["TN04"]\n', [], ["TN050", "TN090"], id="ignore"),
        pytest.param('select = "TN050"\nlevel = "info"\n', [], ["TN050"], id="select-level"),
        pytest.param('level = "info"\n', ["--level", "warning"], DEFAULT, id="flag-wins"),
        pytest.param('ignore = ["TN05"]\n', ["--ignore", "TN040"], ["TN050", "TN090"], id="fl"),
    ],
)
def test_pyproject_table_found_by_walking_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, table: str, args: list[str], codes: list[str]
) -> None:
    """Issue 34 item 2: "a `[tool.toolnexus.check-criteria]` table in `pyproject.toml`"; the
    nearest one from the working directory up, and a flag wins over it."""
    monkeypatch.chdir(_project(tmp_path, table))
    ran = run_cli("check-criteria", *args, "sample.yaml")
    assert _codes(ran.out) == codes, ran.out + ran.stderr


@pytest.mark.parametrize(
    ("table", "words"),
    [
        pytest.param("selct = []\n", "unknown key 'selct' (known: select, ignore, level, strict)"),
        pytest.param('level = "loud"\n', "level takes info, warning or error, got 'loud'"),
        pytest.param("select = [1]\n", "select takes a list of codes"),
        pytest.param("level = \n", "not valid TOML"),
    ],
)
def test_a_broken_config_is_one_line_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, table: str, words: str
) -> None:
    monkeypatch.chdir(_project(tmp_path, table))
    ran = run_cli("check-criteria", "sample.yaml")
    assert ran.code == 2
    assert str(tmp_path / "pyproject.toml") in error_line(ran.stderr)
    assert words in error_line(ran.stderr)
    assert "Traceback" not in ran.stderr


def test_the_readme_rule_table_is_the_rule_table() -> None:
    """The lint-rules page's table and each rule's helpUri anchor are RULES, rendered (one
    definition): the page asks the docs' build hook for it (issue 46: "lint rules from the rules
    table")."""
    import sys

    sys.path.insert(0, str(REPO / "docs" / "hooks"))
    try:
        import reference
    finally:
        sys.path.remove(str(REPO / "docs" / "hooks"))
    page = (REPO / "docs" / "reference" / "lint-rules.md").read_text(encoding="utf-8")
    readme = reference.render(page)
    for rule in RULES:
        row = f'| <a id="{rule.code.lower()}"></a>{rule.code} | {rule.severity} | {rule.summary} |'
        assert row in readme, rule.code


def test_every_question_set_in_the_readme_is_clean(tmp_path: Path) -> None:
    """Issue 34 item 3: "every question set in the README passes clean at the default level"."""
    import re

    readme = docs_text()
    sets = [b for b in re.findall(r"```ya?ml\n(.*?)```", readme, re.S) if "\nquestions:" in b
            or b.startswith("questions:")]  # fmt: skip
    assert len(sets) >= 2
    for i, text in enumerate(sets):
        (tmp_path / f"set{i}.yaml").write_text(text, encoding="utf-8")
    ran = run_cli("check-criteria", str(tmp_path))
    assert (ran.code, ran.out) == (0, "")


def test_sarif_uris_are_percent_encoded(tmp_path: Path) -> None:
    """A SARIF artifactLocation.uri is a URI reference: a space in a path is %20."""
    path = tmp_path / "my set.yaml"
    path.write_text((REPO / SAMPLE).read_text(encoding="utf-8"), encoding="utf-8")
    log = json.loads(run_cli("check-criteria", "--format", "sarif", str(path)).out)
    uris = {
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        for r in log["runs"][0]["results"]
    }
    assert uris == {path.as_posix().replace(" ", "%20")}
