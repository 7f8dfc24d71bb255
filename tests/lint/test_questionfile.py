"""Question-set YAML files: every bad input is one located line, and every good one loads to the
questions the core would build (issue 4: "Loading errors say path:line:col: message")."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clirun import error_line, run_cli
from toolnexus.core.canonical import canonical_request
from toolnexus.core.qtypes.choice import ChoiceQuestion
from toolnexus.core.qtypes.noul import (
    NoulCriteria,
    NoulQuestion,
)
from toolnexus.core.qtypes.raw import RawQuestion
from toolnexus.core.qtypes.rubric import ScoreQuestion
from toolnexus.core.questions import (
    degenerate_criteria,
    question_to_wire,
)
from toolnexus.questionfile.checker import DEGENERATE_CODES
from toolnexus.questionfile.codes import CODES, WARNING_CODES
from toolnexus.questionfile.load import (
    QuestionFileError,
    QuestionSet,
    lint_text,
    load_question_set,
    resolve_model,
)

Q = "questions:\n"

# (text, line, col, code, message): the ONE finding each bad file must produce, exactly.
BAD = [
    pytest.param(
        Q + "  a: {type: noul, instructions: x}\n  a: {type: noul, instructions: y}\n",
        3,
        3,
        "TN021",
        "duplicate key 'a' (first at line 2); YAML would silently keep only the last one",
        id="duplicate-question-key-at-second-occurrence",
    ),
    pytest.param(
        Q + "  d:\n    type: choice\n    instructions: x\n    criteria:\n      a: one\n"
        "      b: two\n      a: three\n",
        8,
        7,
        "TN021",
        "duplicate key 'a' (first at line 6); YAML would silently keep only the last one",
        id="duplicate-option-key-nested",
    ),
    pytest.param(
        Q + "  d: {type: choise, instructions: x, criteria: {a: one, b: two}}\n",
        2,
        13,
        "TN024",
        "question 'd': unknown type 'choise' (expected noul, choice or score; did you mean "
        "'choice'?); for a type the library does not model, add raw: true",
        id="unknown-type-typo",
    ),
    pytest.param(
        Q + "  d: {type: box, instructions: x}\n",
        2,
        13,
        "TN024",
        "question 'd': unknown type 'box' (expected noul, choice or score); for a type the "
        "library does not model, add raw: true",
        id="unknown-type-without-raw",
    ),
    pytest.param(
        Q + "  d: {instructions: x}\n",
        2,
        3,
        "TN024",
        "question 'd': missing type (noul, choice or score)",
        id="missing-type",
    ),
    pytest.param(
        Q + "  d: {type: 3, instructions: x}\n",
        2,
        13,
        "TN024",
        "question 'd': type must be noul, choice or score, got a number",
        id="type-not-string",
    ),
    pytest.param(
        Q + "  d: {type: noul}\n",
        2,
        3,
        "TN025",
        "question 'd': missing instructions",
        id="missing-instructions",
    ),
    pytest.param(
        Q + "  d: {type: noul, instructions: '  '}\n",
        2,
        33,
        "TN025",
        "question 'd': empty instructions",
        id="blank-instructions",
    ),
    pytest.param(
        Q + "  d: {type: noul, instructions: {}}\n",
        2,
        33,
        "TN025",
        "question 'd': empty instructions",
        id="empty-structured-instructions",
    ),
    pytest.param(
        Q + "  d: {type: noul, instructions: 42}\n",
        2,
        33,
        "TN020",
        "question 'd': instructions must be a string or a mapping, got a number; quote it",
        id="instructions-number",
    ),
    pytest.param(
        Q + "  d: {type: noul, instructions: x, critera: {}}\n",
        2,
        36,
        "TN020",
        "question 'd': unknown field 'critera' (expected type, instructions, criteria, raw); "
        "did you mean 'criteria'?",
        id="unknown-field-typo",
    ),
    pytest.param(
        Q + "  d:\n    type: noul\n    instructions: x\n    criteria:\n",
        5,
        14,
        "TN020",
        "question 'd': noul criteria is null: omit it for no criteria, or write {} for two "
        "empty strings",
        id="noul-criteria-null-is-ambiguous",
    ),
    pytest.param(
        Q + "  d: {type: noul, instructions: x, criteria: [a]}\n",
        2,
        46,
        "TN020",
        "question 'd': noul criteria must be a mapping with true and false, got a list",
        id="noul-criteria-list",
    ),
    pytest.param(
        Q + "  d: {type: noul, instructions: x, criteria: {true: a, maybe: b}}\n",
        2,
        56,
        "TN020",
        "question 'd': noul criteria: unknown field 'maybe' (expected true, false)",
        id="noul-criteria-unknown-side",
    ),
    pytest.param(
        Q + "  d: {type: noul, instructions: x, criteria: {true: yes}}\n",
        2,
        53,
        "TN020",
        "question 'd': noul criteria 'true' must be a string, got a boolean; quote it",
        id="noul-criteria-bool-value",
    ),
    pytest.param(
        Q + "  d: {type: choice, instructions: x, criteria: [a, b]}\n",
        2,
        48,
        "TN020",
        "question 'd': a choice needs criteria: a mapping of option id to what picking it "
        "means (got a list)",
        id="choice-criteria-list",
    ),
    pytest.param(
        Q + "  d: {type: choice, instructions: x}\n",
        2,
        3,
        "TN020",
        "question 'd': a choice needs criteria: a mapping of option id to what picking it "
        "means (missing)",
        id="choice-criteria-missing",
    ),
    pytest.param(
        Q + "  d: {type: choice, instructions: x, criteria: {a: no}}\n",
        2,
        52,
        "TN020",
        "question 'd': option 'a' description must be a string or null, got a boolean; quote it",
        id="choice-description-yaml11-bool",
    ),
    pytest.param(
        Q + "  d: {type: choice, instructions: x, criteria: {}}\n",
        2,
        48,
        "TN010",
        "question 'd': a choice takes 1..255 named options, got 0",
        id="choice-limit-zero-options",
    ),
    pytest.param(
        Q
        + "  d:\n    type: choice\n    instructions: x\n    criteria:\n"
        + "".join(f"      o{i}: means {i}\n" for i in range(256)),
        6,
        7,
        "TN010",
        "question 'd': a choice takes 1..255 named options, got 256",
        id="choice-limit-256-options",
    ),
    pytest.param(
        Q + "  u: {type: score, instructions: x, criteria: [only]}\n",
        2,
        47,
        "TN011",
        "question 'u': a score takes 2..10 ordered levels, got 1",
        id="score-limit-one-level",
    ),
    pytest.param(
        Q + "  u: {type: score, instructions: x, criteria: [a,b,c,d,e,f,g,h,i,j,k]}\n",
        2,
        47,
        "TN011",
        "question 'u': a score takes 2..10 ordered levels, got 11",
        id="score-limit-eleven-levels",
    ),
    pytest.param(
        Q + "  u: {type: score, instructions: x, criteria: {a: b}}\n",
        2,
        47,
        "TN020",
        "question 'u': a score needs criteria: an ordered list of levels (got a mapping)",
        id="score-criteria-mapping",
    ),
    pytest.param(
        Q + "  u: {type: score, instructions: x, criteria: [a, 3]}\n",
        2,
        51,
        "TN020",
        "question 'u': level 1 must be a string or {label, description}, got a number",
        id="score-level-number",
    ),
    pytest.param(
        Q + "  u: {type: score, instructions: x, criteria: [a, {description: d}]}\n",
        2,
        51,
        "TN020",
        "question 'u': level 1 needs a non-empty string label",
        id="score-structured-level-without-label",
    ),
    pytest.param(
        Q + "  u: {type: score, instructions: x, criteria: [a, {label: b, descripton: d}]}\n",
        2,
        62,
        "TN020",
        "question 'u': level 1: unknown field 'descripton' (expected label, description); "
        "did you mean 'description'?",
        id="score-structured-level-typo",
    ),
    pytest.param(
        Q + "  u: {type: noul, raw: true, instructions: x}\n",
        2,
        24,
        "TN020",
        "question 'u': raw: true is for types the library does not model; 'noul' is "
        "modelled, drop raw",
        id="raw-on-a-modelled-type",
    ),
    pytest.param(
        Q + "  u: {type: box, raw: 1, instructions: x}\n",
        2,
        23,
        "TN020",
        "question 'u': raw must be true or false",
        id="raw-not-boolean",
    ),
    pytest.param(
        "- a\n- b\n",
        1,
        1,
        "TN020",
        "not a question set: no top-level 'questions' mapping, got a list",
        id="top-level-not-a-mapping",
    ),
    pytest.param(
        "model: m\n",
        1,
        1,
        "TN020",
        "not a question set: no top-level 'questions' mapping",
        id="no-questions-key",
    ),
    pytest.param(
        "questions: {}\n",
        1,
        12,
        "TN012",
        "no questions: write at least one",
        id="empty-question-set",
    ),
    pytest.param(
        Q + "  '': {type: noul, instructions: x}\n",
        2,
        3,
        "TN012",
        "a question key cannot be empty",
        id="empty-question-key",
    ),
    pytest.param(
        "modle: m\n" + Q + "  d: {type: noul, instructions: x}\n",
        1,
        1,
        "TN020",
        "unknown field 'modle' (expected model, questions, gates); did you mean 'model'?",
        id="unknown-top-level-field",
    ),
    pytest.param(
        "model: ''\n" + Q + "  d: {type: noul, instructions: x}\n",
        1,
        8,
        "TN020",
        "model must be a non-empty string",
        id="empty-model",
    ),
    pytest.param(
        Q + "  d: hello\n",
        2,
        6,
        "TN020",
        "question 'd': must be a mapping of type, instructions, criteria, got a string",
        id="question-not-a-mapping",
    ),
    pytest.param(
        Q + "  d: {type: noul, instructions: x\n",
        3,
        1,
        "TN900",
        "YAML syntax error: expected ',' or '}', but got '<stream end>' (while parsing a flow "
        "mapping)",
        id="yaml-syntax-error",
    ),
    pytest.param(
        Q + "\td: 1\n",
        2,
        1,
        "TN900",
        "YAML syntax error: found character '\\t' that cannot start any token (while "
        "scanning for the next token): indent with spaces, YAML does not take tabs there",
        id="yaml-tab-indent",
    ),
    pytest.param(
        Q + '  d: {type: noul, instructions: "a\x07"}\n',
        2,
        35,
        "TN900",
        "YAML cannot contain character #x0007: remove it, or write it as \\x07 inside double "
        "quotes",
        id="yaml-control-character",
    ),
    pytest.param(
        Q + "  d: {type: choice, instructions: x, criteria: {a: 2024-01-01, b: two}}\n",
        2,
        52,
        "TN020",
        "'2024-01-01' reads as a YAML timestamp: quote it",
        id="timestamp-not-json",
    ),
    pytest.param(
        Q + "  d: {type: noul, instructions: {t: .nan}}\n",
        2,
        37,
        "TN020",
        ".nan is not a JSON number",
        id="nan-not-json",
    ),
    pytest.param(
        Q + "  d: {type: noul, instructions: !!python/object:os.system x}\n",
        2,
        33,
        "TN020",
        "unknown YAML tag tag:yaml.org,2002:python/object:os.system: not a JSON value",
        id="python-tag-never-constructed",
    ),
    pytest.param(
        Q + "  d: {type: noul, instructions: x}\n---\nb: 1\n",
        4,
        1,
        "TN020",
        "a question set is a single YAML document; this starts a second one",
        id="two-yaml-documents",
    ),
    pytest.param(
        Q + "  d: {type: noul, instructions: {x: &a [*a]}}\n",
        2,
        37,
        "TN020",
        "a recursive alias cannot be written as JSON",
        id="recursive-alias",
    ),
]


@pytest.mark.parametrize(("text", "line", "col", "code", "message"), BAD)
def test_lint_reports_exactly_one_located_finding(
    text: str, line: int, col: int, code: str, message: str
) -> None:
    """Each bad input is ONE finding, at the node PyYAML marked, 1-based."""
    lint = lint_text(text, "f.yaml", strict=True)
    assert [str(f) for f in lint.findings] == [f"f.yaml:{line}:{col}: {code} {message}"]
    assert code in CODES


@pytest.mark.parametrize(("text", "line", "col", "code", "message"), BAD)
def test_load_raises_one_line_path_line_col(
    tmp_path: Path, text: str, line: int, col: int, code: str, message: str
) -> None:
    path = tmp_path / "set.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(QuestionFileError) as info:
        load_question_set(path)
    assert info.value.message == f"{path}:{line}:{col}: {message}"
    assert info.value.code == 2


@pytest.mark.parametrize(("text", "line", "col", "code", "message"), BAD)
def test_canonical_cli_prints_the_located_line_and_exits_2(
    tmp_path: Path, text: str, line: int, col: int, code: str, message: str
) -> None:
    """Through the console entry point (the one error boundary): one line, exit 2."""
    path = tmp_path / "set.yaml"
    path.write_text(text, encoding="utf-8")
    ran = run_cli("canonical", str(path))
    assert ran.code == 2
    assert ran.stdout == b""
    assert error_line(ran.stderr) == f"{path}:{line}:{col}: {message}"


def test_lint_collects_every_finding_not_just_the_first() -> None:
    text = (
        Q
        + "  a: {type: choise, instructions: x, criteria: {p: one, q: two}}\n"
        + "  b: {type: noul}\n"
        + "  c: {type: choice, instructions: x, criteria: {p: p, q: q}}\n"
        + "  a: {type: noul, instructions: x}\n"
    )
    codes = [(f.line, f.code) for f in lint_text(text, "f.yaml").findings]
    assert codes == [(2, "TN024"), (3, "TN025"), (4, "TN002"), (5, "TN021")]


# Advisory findings: the file still loads (the classifier warns at run time, SPEC 8B).
WARN = [
    pytest.param({"a": "", "b": ""}, "TN001", "every option description is empty", id="all-empty"),
    pytest.param(
        {"a": "a", "b": "b"},
        "TN002",
        "every option description equals its own option id",
        id="equals-key",
    ),
    pytest.param(
        {"a": "x", "b": "x"}, "TN003", "every option description is identical", id="identical"
    ),
]


@pytest.mark.parametrize(("criteria", "code", "reason"), WARN)
def test_each_degenerate_seed_rule_has_its_own_code(
    tmp_path: Path, criteria: dict[str, str], code: str, reason: str
) -> None:
    """Seed 001: degenerate if every description is empty, or equals its key, or is identical."""
    assert degenerate_criteria(criteria) == reason
    assert DEGENERATE_CODES[reason] == code
    text = (
        Q
        + "  d:\n    type: choice\n    instructions: x\n    criteria: "
        + json.dumps(criteria)
        + "\n"
    )
    lint = lint_text(text, "f.yaml")
    assert [str(f) for f in lint.findings] == [f"f.yaml:5:15: {code} question 'd': {reason}"]
    path = tmp_path / "d.yaml"
    path.write_text(text, encoding="utf-8")
    assert set(load_question_set(path).questions) == {"d"}


def test_degenerate_codes_cover_exactly_the_core_reasons() -> None:
    assert set(DEGENERATE_CODES.values()) == {"TN001", "TN002", "TN003"} <= WARNING_CODES


@pytest.mark.parametrize(
    "criteria",
    [
        pytest.param({"only": ""}, id="empty"),
        pytest.param({"only": "only"}, id="equals-key"),
    ],
)
def test_single_option_choice_is_never_reported(criteria: dict[str, str]) -> None:
    """Seed 001: "A single-option choice is never reported — there is nothing to differentiate"."""
    text = Q + "  d: {type: choice, instructions: x, criteria: " + json.dumps(criteria) + "}\n"
    assert lint_text(text, "f.yaml").findings == []


def test_empty_description_and_duplicate_score_level_are_advisory() -> None:
    text = (
        Q
        + "  d: {type: choice, instructions: x, criteria: {a: means a, b: ''}}\n"
        + "  u:\n    type: score\n    instructions: x\n    criteria:\n"
        + "      - low\n      - {label: low, description: again}\n      - ''\n"
    )
    findings = lint_text(text, "f.yaml").findings
    assert [str(f) for f in findings] == [
        "f.yaml:2:64: TN023 question 'd': option 'b' has an empty description",
        "f.yaml:8:9: TN022 question 'u': level 1 repeats level 0 ('low')",
        "f.yaml:9:9: TN023 question 'u': level 2 is empty",
    ]
    assert not any(f.is_error for f in findings)


# --- good files: what they load to ------------------------------------------------------------


def _load(tmp_path: Path, text: str) -> QuestionSet:
    path = tmp_path / "set.yaml"
    path.write_text(text, encoding="utf-8")
    return load_question_set(path)


def test_noul_criteria_absent_empty_and_partial_stay_different(tmp_path: Path) -> None:
    """Seed 001: "Absent is not empty": absent sends no criteria, {} sends two empty strings."""
    qs = _load(
        tmp_path,
        Q
        + "  absent: {type: noul, instructions: x}\n"
        + "  empty: {type: noul, instructions: x, criteria: {}}\n"
        + "  partial: {type: noul, instructions: x, criteria: {true: holds}}\n",
    ).questions
    assert qs["absent"] == NoulQuestion("x")
    assert qs["empty"] == NoulQuestion("x", NoulCriteria())
    assert qs["partial"] == NoulQuestion("x", NoulCriteria(true="holds"))
    assert b"criteria" not in canonical_request("m", {"q": qs["absent"]})
    assert b'"criteria":{"false":"","true":""}' in canonical_request("m", {"q": qs["empty"]})


def test_keys_are_the_text_written_not_yaml11_booleans_or_numbers(tmp_path: Path) -> None:
    qs = _load(
        tmp_path,
        Q + "  d: {type: choice, instructions: x, criteria: {no: n, yes: y, 1.0: f, 0x10: h, "
        "~: t}}\n",
    ).questions
    assert isinstance(qs["d"], ChoiceQuestion)
    assert list(qs["d"].criteria) == ["no", "yes", "1.0", "0x10", "~"]


def test_structured_levels_instructions_and_raw_types_are_sent_as_written(
    tmp_path: Path,
) -> None:
    qs = _load(
        tmp_path,
        Q
        + "  u:\n    type: score\n    instructions: {task: rate it, context: [a, b]}\n"
        + "    criteria:\n      - {label: low, description: {why: calm}}\n      - high\n"
        + "  where:\n    type: box\n    raw: true\n    instructions: Where is the cat?\n"
        + "    criteria: {units: px}\n",
    ).questions
    assert qs["u"] == ScoreQuestion(
        {"task": "rate it", "context": ["a", "b"]},
        [{"label": "low", "description": {"why": "calm"}}, "high"],
    )
    assert qs["where"] == RawQuestion("box", "Where is the cat?", {"units": "px"})
    assert question_to_wire(qs["where"]) == {
        "type": "box",
        "instructions": "Where is the cat?",
        "criteria": {"units": "px"},
    }


def test_merge_keys_work_and_explicit_keys_win(tmp_path: Path) -> None:
    """A merged key under an explicit one is YAML's override rule, not a duplicate."""
    qs = _load(
        tmp_path,
        Q
        + "  a: &base {type: choice, instructions: shared, criteria: {p: one, q: two}}\n"
        + "  b:\n    <<: *base\n    instructions: mine\n",
    ).questions
    assert qs["b"] == ChoiceQuestion("mine", {"p": "one", "q": "two"})


def test_file_model_and_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 4: flag > env > question file > default."""
    qset = _load(tmp_path, "model: from-file\n" + Q + "  d: {type: noul, instructions: x}\n")
    assert qset.model == "from-file"
    assert resolve_model(None, None) == "jev-latest"
    assert resolve_model(None, "from-file") == "from-file"
    monkeypatch.setenv("TOOLNEXUS_MODEL", "from-env")
    assert resolve_model(None, "from-file") == "from-env"
    assert resolve_model("from-flag", "from-file") == "from-flag"


def test_alias_bomb_is_a_finding_not_a_hang() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 7)]
    findings = lint_text("\n".join(lines) + "\n", "f.yaml", strict=True).findings
    assert [f.code for f in findings] == ["TN900"]
    assert "alias bomb" in findings[0].message


# --- unreadable files --------------------------------------------------------------------------


def test_missing_file_names_the_path_and_reason(tmp_path: Path) -> None:
    path = tmp_path / "nope.yaml"
    with pytest.raises(QuestionFileError) as info:
        load_question_set(path)
    assert info.value.message == f"{path}: cannot read: No such file or directory"
    assert info.value.finding is None


def test_directory_is_unreadable(tmp_path: Path) -> None:
    with pytest.raises(QuestionFileError) as info:
        load_question_set(tmp_path)
    assert info.value.message == f"{tmp_path}: cannot read: Is a directory"


def test_not_utf8_is_located_at_the_first_bad_byte(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(Q.encode() + b"  d: {type: noul, instructions: caf\xe9}\n")
    with pytest.raises(QuestionFileError) as info:
        load_question_set(path)
    assert info.value.message == (
        f"{path}:2:36: not UTF-8 text: save it as UTF-8 (from Windows-1252: iconv -f cp1252 -t "
        "utf-8)"
    )


def test_stdin_dash_reads_the_question_set() -> None:
    ran = run_cli("canonical", "-", input=Q + "  d: {type: noul, instructions: x}\n")
    assert ran.code == 0, ran.stderr
    assert (
        ran.stdout == b'{"model":"jev-latest","questions":{"d":{"instructions":"x","type":"noul"}}}'
    )


def test_stdin_errors_are_named_stdin() -> None:
    ran = run_cli("canonical", "-", input=Q + "  d: {type: nul, instructions: x}\n")
    assert ran.code == 2
    assert error_line(ran.stderr).startswith("<stdin>:2:13: question 'd': unknown type 'nul'")


# --- hypothesis: nothing but the documented error escapes --------------------------------------

_json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
_json_values = st.recursive(
    _json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
_question_like = st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from(["noul", "choice", "score", "box", ""]) | _json_scalars,
        "instructions": _json_values,
        "criteria": _json_values,
        "raw": _json_values,
    },
)
_question_sets = st.fixed_dictionaries(
    {"questions": st.dictionaries(st.text(max_size=6), _question_like, max_size=4)},
    optional={"model": _json_values},
)
_yaml_tokens = st.lists(
    st.sampled_from([*list("ab :-{}[],'\"\n\t#&*!|>?%@`~.0\\ex"), "questions:", "type: ", "\n  "]),
    max_size=40,
).map("".join)


def _must_only_raise_documented(text: str, tmp_path: Path) -> None:
    lint = lint_text(text, "f.yaml")
    assert all(re.fullmatch(r"TN\d{3}", f.code) and f.code in CODES for f in lint.findings)
    path = tmp_path / "h.yaml"
    path.write_text(text, encoding="utf-8")
    try:
        load_question_set(path)
    except QuestionFileError as e:
        assert "\n" not in e.message


@settings(
    max_examples=150,
    deadline=None,
    # too_slow as in the suite's profile (tests/conftest.py): a list here replaces the
    # profile's, and generation time is the machine's speed, not a verdict (issue 29 item 2).
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(text=_yaml_tokens | st.text(max_size=60))
def test_random_yaml_text_never_escapes_as_another_exception(text: str, tmp_path: Path) -> None:
    _must_only_raise_documented(text, tmp_path)


@settings(
    max_examples=150,
    deadline=None,
    # too_slow as in the suite's profile (tests/conftest.py): a list here replaces the
    # profile's, and generation time is the machine's speed, not a verdict (issue 29 item 2).
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=_question_sets | _json_values)
def test_random_structures_never_escape_as_another_exception(data: object, tmp_path: Path) -> None:
    _must_only_raise_documented(yaml.safe_dump(data, allow_unicode=True), tmp_path)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=_question_sets)
def test_random_question_sets_through_the_cli_never_print_a_traceback(
    data: object, tmp_path: Path
) -> None:
    path = tmp_path / "h.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    for args in (["canonical", str(path)], ["check-criteria", str(path)]):
        ran = run_cli(*args)
        assert ran.code in (0, 1, 2)
        assert "Traceback" not in ran.stderr
        if ran.code == 2 and args[0] == "canonical":
            error_line(ran.stderr)
