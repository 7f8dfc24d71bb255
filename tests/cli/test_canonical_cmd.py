"""``toolnexus canonical``: "the exact canonical bytes, nothing added, so diff and sha256sum work"
(issue 4), checked against every conformance fixture and every live capture."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from clirun import error_line, run_cli
from paths import CONFORMANCE, RECORDINGS_LIVE, REPO, conformance_files, load_json
from toolnexus.core.canonical import canonical_json, canonical_request
from toolnexus.core.questions import normalize_questions
from toolnexus.questionfile.load import load_question_set

YAML_DIR = REPO / "tests" / "conformance_yaml"
TOOLNEXUS = Path(sys.executable).with_name("toolnexus")

sys.path.insert(0, str(YAML_DIR))
import generate  # noqa: E402  (the generator lives beside the YAML it wrote)


def _entries(fixture: Path) -> list[dict[str, Any]]:
    data = load_json(fixture)
    return list(data["entries"]) if "entries" in data else [data]


FIXTURES = [
    pytest.param(path, id=path.stem)
    for path in conformance_files()
    if all("canonical" in e for e in _entries(path))
]


def test_every_fixture_with_canonical_bytes_has_a_yaml_twin() -> None:
    assert FIXTURES, f"no fixture with `canonical` under {CONFORMANCE}"
    assert sorted(p.stem for p in YAML_DIR.glob("*.yaml")) == sorted(
        p.values[0].stem for p in FIXTURES
    )


@pytest.mark.parametrize("fixture", FIXTURES)
def test_canonical_prints_exactly_the_fixture_bytes(fixture: Path) -> None:
    """Seed 001: canonical_request's bytes are what every port emits; nothing is added."""
    yaml_path = YAML_DIR / f"{fixture.stem}.yaml"
    for entry in _entries(fixture):
        ran = run_cli("canonical", str(yaml_path))
        assert ran.code == 0, ran.stderr
        assert ran.stdout == entry["canonical"].encode("utf-8")
        assert len(ran.stdout) == entry.get("canonicalBytes", len(ran.stdout))
        digest = run_cli("canonical", "--sha256", str(yaml_path))
        assert digest.out == entry["canonicalSha256"] + "\n"


@pytest.mark.parametrize("fixture", FIXTURES)
def test_yaml_twin_is_what_the_generator_writes_from_the_fixture(fixture: Path) -> None:
    """The YAML still matches its fixture: regenerating it changes nothing."""
    request = _entries(fixture)[0]["request"]
    expected = generate.question_set_yaml(
        request["model"],
        request["questions"],
        generate.conformance_header(fixture.name),
        "../../src/toolnexus/question-set.schema.json",
    )
    assert (YAML_DIR / f"{fixture.stem}.yaml").read_text(encoding="utf-8") == expected


CAPTURES = [pytest.param(name, stem, id=stem) for name, stem in generate.CAPTURES.items()]


@pytest.mark.parametrize(("name", "stem"), CAPTURES)
def test_shipped_capture_sets_equal_the_captured_request(name: str, stem: str) -> None:
    """questions/<capture>.yaml sends the questions the live capture sent, byte for byte."""
    request = load_json(RECORDINGS_LIVE / f"hfiguera_{name}.json")["request"]
    qset = load_question_set(REPO / "questions" / f"{stem}.yaml")
    assert qset.model == request["model"] == "jev-latest"
    assert canonical_request(qset.model, qset.questions) == canonical_json(
        {"model": request["model"], "questions": request["questions"]}
    )


def test_guard_set_equals_the_decisions_fixture() -> None:
    entry = _entries(CONFORMANCE / "decisions.json")[0]
    ran = run_cli("canonical", str(REPO / "questions" / "guard.yaml"))
    assert ran.stdout == entry["canonical"].encode("utf-8")


def _seed_questions(example: str) -> dict[str, Any]:
    """The QUESTIONS a seed example builds, executed up to its recorded response."""
    source = (REPO / "tests" / "seed_examples" / example).read_text(encoding="utf-8")
    namespace: dict[str, Any] = {}
    exec(source.split("RECORDED =")[0], namespace)
    return dict(namespace["QUESTIONS"])


def test_support_triage_is_seed_001_example_1() -> None:
    qset = load_question_set(REPO / "questions" / "support-triage.yaml")
    seed = _seed_questions("seed001_example1_all_three_types.py")
    assert canonical_request("m", qset.questions) == canonical_request("m", seed)


def test_shell_risk_is_seed_000_example_1() -> None:
    """Seed 000 example 1: risk, "How destructive is this shell command?", 3 ordered levels."""
    qset = load_question_set(REPO / "questions" / "shell-risk.yaml")
    expected = normalize_questions(
        {
            "risk": {
                "type": "score",
                "instructions": "How destructive is this shell command?",
                "criteria": ["harmless", "reversible", "destructive"],
            }
        }
    )
    assert qset.model == "typesafe/jev-1.13"
    assert canonical_request("m", qset.questions) == canonical_request("m", expected)


# --- the model: flag > env > question file > default (issue 4) --------------------------------

NOUL = "questions:\n  d: {type: noul, instructions: x}\n"


@pytest.mark.parametrize(
    ("file_model", "env", "flag", "expected"),
    [
        pytest.param(None, None, None, "jev-latest", id="default"),
        pytest.param("file-m", None, None, "file-m", id="file-over-default"),
        pytest.param("file-m", "env-m", None, "env-m", id="env-over-file"),
        pytest.param("file-m", "env-m", "flag-m", "flag-m", id="flag-over-all"),
    ],
)
def test_model_precedence(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    file_model: str | None,
    env: str | None,
    flag: str | None,
    expected: str,
) -> None:
    path = tmp_path / "q.yaml"
    path.write_text((f"model: {file_model}\n" if file_model else "") + NOUL, encoding="utf-8")
    if env:
        monkeypatch.setenv("TOOLNEXUS_MODEL", env)
    ran = run_cli("canonical", str(path), *(["--model", flag] if flag else []))
    assert json.loads(ran.stdout)["model"] == expected


# --- output forms -------------------------------------------------------------------------------


def test_pretty_is_indented_and_the_same_value(tmp_path: Path) -> None:
    path = REPO / "questions" / "support-triage.yaml"
    exact = run_cli("canonical", str(path)).stdout
    pretty = run_cli("canonical", "--pretty", str(path)).out
    assert pretty.startswith('{\n  "model": "jev-latest",\n  "questions": {\n')
    assert pretty.endswith("}\n")
    assert json.loads(pretty) == json.loads(exact)


def test_no_trailing_newline_so_sha256sum_agrees() -> None:
    path = REPO / "questions" / "guard.yaml"
    exact = run_cli("canonical", str(path)).stdout
    assert not exact.endswith(b"\n")
    digest = run_cli("canonical", "--sha256", str(path)).out
    assert digest == hashlib.sha256(exact).hexdigest() + "\n"


@pytest.mark.parametrize(
    ("suffix", "content", "state"),
    [
        pytest.param(".json", '{"b": 1, "a": [2, 1]}', {"a": [2, 1], "b": 1}, id="json"),
        pytest.param(".txt", "charged twice\n", "charged twice", id="text"),
        pytest.param(".yaml", "cmd: ls\n", {"cmd": "ls"}, id="yaml"),
    ],
)
def test_state_prints_the_whole_body(tmp_path: Path, suffix: str, content: str, state: Any) -> None:
    """--state FILE: {model, questions, state}, canonical; the state as the state reader
    reads it."""
    questions = REPO / "questions" / "noul-small.yaml"
    state_path = tmp_path / f"state{suffix}"
    state_path.write_text(content, encoding="utf-8")
    ran = run_cli("canonical", str(questions), "--state", str(state_path))
    assert ran.code == 0, ran.stderr
    qset = load_question_set(questions)
    from toolnexus.core.questions import questions_to_wire

    assert ran.stdout == canonical_json(
        {"model": "jev-latest", "questions": questions_to_wire(qset.questions), "state": state}
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            ["--sha256", "--pretty"], "--sha256 and --pretty do not combine: pick one", id="both"
        ),
        pytest.param(
            ["--state", "-", "-"],
            "the question set and the state cannot both come from stdin",
            id="two-stdins",
        ),
    ],
)
def test_usage_errors_exit_2(args: list[str], message: str) -> None:
    if "-" not in args:
        args = [*args, str(REPO / "questions" / "guard.yaml")]
    ran = run_cli("canonical", *args)
    assert ran.code == 2
    assert error_line(ran.stderr) == message


def test_missing_question_file_exits_2(tmp_path: Path) -> None:
    ran = run_cli("canonical", str(tmp_path / "nope.yaml"))
    assert ran.code == 2
    assert (
        error_line(ran.stderr)
        == f"{tmp_path / 'nope.yaml'}: cannot read: No such file or directory"
    )


# --- real subprocesses --------------------------------------------------------------------------


def _run(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLNEXUS_")}
    return subprocess.run(
        [str(TOOLNEXUS), *args], cwd=cwd, capture_output=True, env=env, timeout=60, check=False
    )


def test_subprocess_bytes_equal_the_fixture() -> None:
    fixture = load_json(CONFORMANCE / "hardened.json")
    done = _run("canonical", "tests/conformance_yaml/hardened.yaml")
    assert done.returncode == 0, done.stderr
    assert done.stdout == fixture["canonical"].encode("utf-8")


def test_subprocess_located_error_is_one_line_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("questions:\n  d: {type: noul}\n", encoding="utf-8")
    done = _run("canonical", str(path))
    assert done.returncode == 2
    assert done.stdout == b""
    line = error_line(done.stderr.decode("utf-8"))
    assert line == f"{path}:2:3: question 'd': missing instructions"


# --- packed requests (issue 20) ----------------------------------------------------------------

REFUND_YAML = """model: jev-1.13.0
questions:
  refund:
    type: noul
    instructions: Is the customer asking for money back?
    criteria: {"true": "yes", "false": "no"}
"""
#: A packed request: the questions are test_packing.py's golden bytes, the state holds the
#: file's states in order. (The README's own example runs over a shipped question set, and the
#: README runner checks its printed bytes: tests/readme/test_readme_examples.py.)
PACKED_README = (
    b'{"model":"jev-1.13.0","questions":{"0:refund":{"criteria":{"false":"no","true":"yes"},'
    b'"instructions":"For states[0] only: Is the customer asking for money back?",'
    b'"type":"noul"},"1:refund":{"criteria":{"false":"no","true":"yes"},'
    b'"instructions":"For states[1] only: Is the customer asking for money back?",'
    b'"type":"noul"}},"state":{"states":["charged twice",{"ticket":"app crashes"}]}}'
)


def _pack_files(tmp_path: Path, states: str) -> tuple[str, str]:
    (tmp_path / "q.yaml").write_text(REFUND_YAML, encoding="utf-8")
    (tmp_path / "states.jsonl").write_text(states, encoding="utf-8")
    return str(tmp_path / "q.yaml"), str(tmp_path / "states.jsonl")


def test_pack_states_prints_the_packed_request(tmp_path: Path) -> None:
    """Issue 20 item 1: "`canonical` prints a packed request (`toolnexus canonical Q
    --pack-states FILE`) so its bytes can be diffed like any other"."""
    q, states = _pack_files(tmp_path, '"charged twice"\n\n{"ticket": "app crashes"}\n')
    ran = run_cli("canonical", q, "--pack-states", states)
    assert ran.code == 0, ran.stderr
    assert ran.stdout == PACKED_README
    digest = run_cli("canonical", "--sha256", q, "--pack-states", states)
    assert digest.out == hashlib.sha256(PACKED_README).hexdigest() + "\n"


def test_pack_states_of_one_state_prints_that_states_own_request(tmp_path: Path) -> None:
    """A pack of one is never packed: it is today's request, byte for byte."""
    q, states = _pack_files(tmp_path, '{"ticket": "app crashes"}\n')
    (tmp_path / "one.json").write_text('{"ticket": "app crashes"}', encoding="utf-8")
    alone = run_cli("canonical", q, "--state", str(tmp_path / "one.json"))
    assert run_cli("canonical", q, "--pack-states", states).stdout == alone.stdout


@pytest.mark.parametrize(
    ("states", "extra", "message"),
    [
        pytest.param('"a"\n3\n', [], "states.jsonl:2: a state must be a string", id="number"),
        pytest.param('"a"\n{oops\n', [], "states.jsonl:2:2: invalid JSON", id="bad-json"),
        pytest.param("\n\n", [], "states.jsonl: no states", id="empty"),
        pytest.param('"a"\n', ["--state", "-"], "--pack-states holds the states", id="and-state"),
    ],
)
def test_pack_states_input_errors_are_one_line(
    tmp_path: Path, states: str, extra: list[str], message: str
) -> None:
    q, path = _pack_files(tmp_path, states)
    ran = run_cli("canonical", q, "--pack-states", path, *extra)
    assert ran.code == 2
    assert message in error_line(ran.stderr)
