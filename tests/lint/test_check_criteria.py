"""``toolnexus check-criteria``: offline lint, ``path:line:col: CODE message``, exit 0 clean /
1 findings / 2 usage or unreadable file (issue 4), and the pre-commit hook, run for real."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from clirun import error_line, run_cli
from paths import CONFORMANCE, REPO, load_json
from toolnexus.questionfile.codes import CODES

TOOLNEXUS = Path(sys.executable).with_name("toolnexus")
PRE_COMMIT = Path(sys.executable).with_name("pre-commit")
#: where `make install` puts the wheels the hook's environment is installed from, offline
WHEELHOUSE = Path(sys.prefix) / "wheelhouse"

GOOD = (
    "questions:\n  d: {type: choice, instructions: x, criteria: {a: means a, b: means b, "
    "other: none of these}}\n"
)
BAD = "questions:\n  d: {type: choice, instructions: x, criteria: {a: a, b: b, other: other}}\n"
BAD_LINE = "2:48: TN002 question 'd': every option description equals its own option id"
NOT_A_SET = "jobs:\n  build: {runs-on: ubuntu}\n"


def _write(tmp_path: Path, **files: str) -> dict[str, Path]:
    out = {}
    for name, text in files.items():
        path = tmp_path / f"{name}.yaml"
        path.write_text(text, encoding="utf-8")
        out[name] = path
    return out


def test_shipped_question_sets_are_clean() -> None:
    ran = run_cli("check-criteria", str(REPO / "questions"))
    assert (ran.code, ran.out, ran.stderr) == (0, "", "")


def test_finding_line_and_exit_1(tmp_path: Path) -> None:
    paths = _write(tmp_path, good=GOOD, bad=BAD)
    ran = run_cli("check-criteria", str(paths["good"]), str(paths["bad"]))
    assert ran.code == 1
    assert ran.out == f"{paths['bad']}:{BAD_LINE}\n"
    assert ran.stderr == ""


def test_every_finding_of_every_file_in_argument_order(tmp_path: Path) -> None:
    paths = _write(
        tmp_path,
        z=BAD,
        a="questions:\n  d: {type: noul}\n  e: {type: nul, instructions: x}\n",
    )
    ran = run_cli("check-criteria", str(paths["z"]), str(paths["a"]))
    assert ran.out.splitlines() == [
        f"{paths['z']}:{BAD_LINE}",
        f"{paths['a']}:2:3: TN025 question 'd': missing instructions",
        f"{paths['a']}:3:13: TN024 question 'e': unknown type 'nul' (expected noul, choice or "
        "score; did you mean 'noul'?); for a type the library does not model, add raw: true",
    ]


def test_not_a_question_set_is_skipped_unless_strict(tmp_path: Path) -> None:
    """Issue 4: "YAML files that are not question sets ... are skipped unless --strict"."""
    paths = _write(tmp_path, ci=NOT_A_SET)
    assert run_cli("check-criteria", str(paths["ci"])).code == 0
    ran = run_cli("check-criteria", "--strict", str(paths["ci"]))
    assert ran.code == 1
    assert ran.out == (
        f"{paths['ci']}:1:1: TN020 not a question set: no top-level 'questions' mapping\n"
    )


def test_a_file_declaring_the_schema_is_checked_even_when_broken(tmp_path: Path) -> None:
    text = "# yaml-language-server: $schema=../question-set.schema.json\nquestion:\n  d: 1\n"
    paths = _write(tmp_path, typo=text)
    ran = run_cli("check-criteria", str(paths["typo"]))
    assert ran.code == 1
    assert "TN020 not a question set" in ran.out


def test_yaml_syntax_errors_are_reported_even_in_unknown_files(tmp_path: Path) -> None:
    """A file that does not parse cannot be told apart from a broken question set."""
    paths = _write(tmp_path, broken="questions: [\n")
    ran = run_cli("check-criteria", str(paths["broken"]))
    assert ran.code == 1
    assert ran.out.startswith(f"{paths['broken']}:2:1: TN900 YAML syntax error: ")


def test_directories_expand_to_their_yaml_files_sorted(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.yml").write_text(BAD, encoding="utf-8")
    (tmp_path / "a.yaml").write_text(BAD, encoding="utf-8")
    (tmp_path / "notes.txt").write_text(BAD, encoding="utf-8")
    ran = run_cli("check-criteria", str(tmp_path))
    assert [line.split(":")[0] for line in ran.out.splitlines()] == [
        str(tmp_path / "a.yaml"),
        str(tmp_path / "sub" / "b.yml"),
    ]


def test_json_format_is_a_list_of_findings(tmp_path: Path) -> None:
    paths = _write(tmp_path, bad=BAD)
    ran = run_cli("check-criteria", "--format", "json", str(paths["bad"]))
    assert ran.code == 1
    assert json.loads(ran.out) == [
        {
            "path": str(paths["bad"]),
            "line": 2,
            "col": 48,
            "code": "TN002",
            "severity": "warning",
            "message": "question 'd': every option description equals its own option id",
        }
    ]
    clean = run_cli("check-criteria", "--format", "json", str(REPO / "questions"))
    assert (clean.code, json.loads(clean.out)) == (0, [])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            ["--format", "xml", "q.yaml"],
            "Invalid value for '--format': 'xml' is not one of 'text', 'json', 'sarif'; "
            "see 'toolnexus check-criteria --help'",
            id="format",
        ),
    ],
)
def test_usage_errors_exit_2(args: list[str], message: str) -> None:
    ran = run_cli("check-criteria", *args)
    assert ran.code == 2
    assert error_line(ran.stderr) == message


def test_no_files_is_a_usage_error() -> None:
    ran = run_cli("check-criteria")
    assert ran.code == 2
    assert "Missing argument" in ran.stderr


def test_unreadable_file_exits_2_after_reporting_the_others(tmp_path: Path) -> None:
    paths = _write(tmp_path, bad=BAD)
    missing = tmp_path / "gone.yaml"
    ran = run_cli("check-criteria", str(missing), str(paths["bad"]))
    assert ran.code == 2
    assert ran.out == f"{paths['bad']}:{BAD_LINE}\n"
    assert error_line(ran.stderr) == f"{missing}: cannot read: No such file or directory"


def test_help_documents_every_code_and_the_exit_codes() -> None:
    ran = run_cli("check-criteria", "--help")
    assert ran.code == 0
    for code, text in CODES.items():
        assert f"{code}  {text}" in ran.out
    assert "0 clean; 1 findings; 2 usage error or unreadable file" in ran.out


def test_degenerate_fixture_warns_for_exactly_the_degenerate_keys() -> None:
    """degenerate.json: warnings for all_empty, all_identical, keys_as_criteria; none for
    described; one code per seed rule."""
    expect = load_json(CONFORMANCE / "degenerate.json")["expect"]
    ran = run_cli(
        "check-criteria",
        "--select",
        "TN00",
        "--format",
        "json",
        str(REPO / "tests/conformance_yaml/degenerate.yaml"),
    )
    found = {f["message"].split("'")[1]: f["code"] for f in json.loads(ran.out)}
    assert sorted(found) == sorted(expect["warnings"])
    assert found == {"all_empty": "TN001", "keys_as_criteria": "TN002", "all_identical": "TN003"}
    assert not set(found) & set(expect["noWarning"])


# --- real processes -----------------------------------------------------------------------------


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("TOOLNEXUS_")}


def test_subprocess_exit_codes(tmp_path: Path) -> None:
    paths = _write(tmp_path, good=GOOD, bad=BAD)
    runs = {
        name: subprocess.run(
            [str(TOOLNEXUS), "check-criteria", *args],
            capture_output=True,
            text=True,
            env=_env(),
            timeout=60,
            check=False,
        )
        for name, args in {
            "clean": [str(paths["good"])],
            "findings": [str(paths["bad"])],
            "unreadable": [str(tmp_path / "gone.yaml")],
        }.items()
    }
    assert {name: r.returncode for name, r in runs.items()} == {
        "clean": 0,
        "findings": 1,
        "unreadable": 2,
    }
    assert runs["findings"].stdout == f"{paths['bad']}:{BAD_LINE}\n"
    assert "Traceback" not in runs["unreadable"].stderr


@pytest.mark.skipif(shutil.which("git") is None, reason="platform: git is not installed")
# pip builds and installs the package inside pre-commit's environment: 11 s on an idle machine,
# and on a busy one it outlasted the suite's 120 s per test (at load 12). `make test-slow` runs
# it, with the 600 s its own subprocess is given; the suite keeps the command the hook runs (its
# exit codes and lines, above) and the hook ids the README names (tests/readme). No verdict
# depends on speed.
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_pre_commit_hook_for_real(tmp_path: Path) -> None:
    """`pre-commit try-repo` installs THIS repository's hook into its own environment (pip, from
    the committed HEAD plus tracked changes) and runs it on a temporary git repository. pip's
    index is switched off: the dependencies come from the wheelhouse `make install` fills, so
    this test, like every other, never talks to the network."""
    assert PRE_COMMIT.exists(), f"{PRE_COMMIT}: pre-commit is a dev dependency (make install)"
    assert (WHEELHOUSE / ".built").exists(), f"{WHEELHOUSE}: make install builds it"
    work = tmp_path / "work"
    work.mkdir()
    (work / "good.yaml").write_text(GOOD, encoding="utf-8")
    (work / "bad.yaml").write_text(BAD, encoding="utf-8")
    (work / "workflow.yaml").write_text(NOT_A_SET, encoding="utf-8")
    env = {
        **_env(),
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "NO_COLOR": "1",
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(WHEELHOUSE),
        "PIP_CONFIG_FILE": os.devnull,
    }
    for cmd in (["git", "init", "-q"], ["git", "add", "."], ["git", "commit", "-qm", "sets"]):
        subprocess.run(cmd, cwd=work, env=env, check=True, capture_output=True, timeout=60)
    done = subprocess.run(
        [str(PRE_COMMIT), "try-repo", str(REPO), "toolnexus-check-criteria", "--all-files"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"bad.yaml:{BAD_LINE}" in done.stdout
    assert "good.yaml" not in done.stdout.split("toolnexus check-criteria")[-1]
    # Issue 43 item 5: a named file that is not a question set is skipped, never silently.
    hook = done.stdout.split("toolnexus check-criteria")[-1]
    assert "workflow.yaml: skipped, not a question set (--strict checks it)" in hook
    assert "workflow.yaml:1" not in hook


# --- issue 17 item 16: ids and labels that a CSV or a terminal shows wrongly ---------------


def _choice(option: str) -> str:
    return (
        "questions:\n  d:\n    type: choice\n    instructions: Which?\n    criteria:\n"
        f'      "{option}": pick this one\n      other: pick the other one\n'
    )


def _score(level: str) -> str:
    return (
        "questions:\n  s:\n    type: score\n    instructions: How much?\n    criteria:\n"
        f'      - low\n      - "{level}"\n'
    )


@pytest.mark.parametrize(
    ("text", "code", "message"),
    [
        pytest.param(_choice("a\\nb"), "TN028", "option 'a\\nb' contains a newline", id="id-lf"),
        pytest.param(_choice("a\\rb"), "TN028", "contains a newline", id="id-cr"),
        pytest.param(_choice("a\\u2028b"), "TN028", "contains a newline", id="id-u2028"),
        pytest.param(
            _choice("a\\tb"),
            "TN026",
            "option 'a\\tb' holds a control character (U+0009)",
            id="id-tab",
        ),
        pytest.param(
            _choice("ok\\u202Eevil"),
            "TN026",
            "holds a bidirectional character (U+202E)",
            id="id-bidi-override",
        ),
        pytest.param(
            _choice("x\\u2066y"), "TN026", "bidirectional character (U+2066)", id="isolate"
        ),
        pytest.param(_choice("\\x1b[31m"), "TN026", "control character (U+001B)", id="id-escape"),
        pytest.param(_choice("   "), "TN027", "option '   ' is whitespace only", id="id-spaces"),
        pytest.param(_choice("\\u00a0"), "TN027", "is whitespace only", id="id-nbsp"),
        pytest.param(_score("a\\nb"), "TN028", "level 1 'a\\nb' contains a newline", id="level-lf"),
        pytest.param(_score("x\\u200Fy"), "TN026", "level 1 'x\\u200fy' holds a bidi", id="rlm"),
        pytest.param(_score("\\t "), "TN027", "is whitespace only", id="level-tab-space"),
        pytest.param(_score("  "), "TN027", "level 1 '  ' is whitespace only", id="level-spaces"),
    ],
)
def test_ids_and_labels_with_invisible_or_line_breaking_characters_are_flagged(
    tmp_path: Path, text: str, code: str, message: str
) -> None:
    """Issue 17 item 16: "check-criteria does not flag option ids or level labels that hold
    control or bidirectional characters, are whitespace only, or contain a newline (CSV writes
    them raw)"."""
    path = tmp_path / "q.yaml"
    path.write_text(text, encoding="utf-8")
    ran = run_cli("check-criteria", str(path))
    assert ran.code == 1, ran.out + ran.stderr
    assert f": {code} " in ran.out and message in ran.out, ran.out
    assert "Traceback" not in ran.stderr
    assert ran.out.count("\n") == 1, "one finding, one line: the text is shown escaped"
