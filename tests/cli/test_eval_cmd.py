"""`toolnexus eval` (issue 4): every option and exit code, through Typer's CliRunner and through
real subprocesses. "Exit codes: 0 ok; 1 a --fail-on near-uniform,uncalibrated,uncertain,invalid
condition met; 2 usage or input error; 3 backend failure." "One error boundary: an input or
backend error is one line on stderr, never a traceback." "Warnings (degenerate criteria),
progress and diagnostics go to stderr, results to stdout."
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from loopback import Fault, Loopback
from paths import REPO, TESTS
from serving import refused_port
from toolnexus.cli.app import get_app
from toolnexus.styles.recordings import read_recording

RECORDINGS = REPO / "recordings"
STATES = REPO / "examples" / "states"
QUESTIONS = REPO / "questions"
SECRET = "sk-test-SECRET-0123456789"

NOUL_YAML = """model: jev-1.13.0
questions:
  refund: {type: noul, instructions: "Is a refund requested?"}
"""
# The noul_small live capture: this state with this question is answered 0.99.
NOUL_STATE = "Invoice INV-104 was charged twice. Please refund the duplicate."

FLAT_YAML = """questions:
  desk:
    type: choice
    instructions: Which desk?
    criteria: {billing: billing, shipping: shipping}
"""


def run(args: list[str], env: dict[str, str] | None = None, input: str | None = None) -> Any:
    runner = CliRunner()
    return runner.invoke(get_app(), args, env=env, input=input, catch_exceptions=False)


def toolnexus(
    args: list[str], env: dict[str, str] | None = None, input: str | None = None
) -> subprocess.CompletedProcess[str]:
    """The real console entry point in a subprocess (`python -m toolnexus`)."""
    full_env = {**os.environ, "COLUMNS": "100", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "toolnexus", *args],
        capture_output=True,
        text=True,
        env=full_env,
        input=input,
        timeout=60,
        cwd=REPO,
    )


@pytest.fixture
def noul_set(tmp_path: Path) -> Path:
    path = tmp_path / "noul.yaml"
    path.write_text(NOUL_YAML, encoding="utf-8")
    return path


def _flat_recording(tmp_path: Path) -> tuple[Path, Path]:
    """A question file plus a replay dir whose recording is flat and uncalibrated, with a
    degenerate question (ids as descriptions)."""
    from toolnexus.questionfile.load import load_question_set
    from toolnexus.styles.recordings import write_recording

    qpath = tmp_path / "flat.yaml"
    qpath.write_text(FLAT_YAML, encoding="utf-8")
    _, qs = load_question_set(qpath)
    body = {
        "model": "gpt-4o-mini",
        "calibrated": False,
        "answers": {
            "desk": {
                "type": "choice",
                "choice": "billing",
                "confidence": 0.02,
                "probabilities": {"billing": 0.51, "shipping": 0.49},
            }
        },
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }
    rec = tmp_path / "rec"
    write_recording(rec, model="m", endpoint="e", state="s", questions=qs, response=body)
    return qpath, rec


# --- happy paths, formats -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("questions", "state"),
    [
        pytest.param("support-triage.yaml", "support-ticket.txt", id="support-triage"),
        pytest.param("mixed-batch.yaml", "cafe-duplicate-charge.json", id="mixed-batch"),
        pytest.param("score-ten.yaml", "outage-70-percent.txt", id="score-ten"),
        pytest.param("choice-small.yaml", "cafe-duplicate-charge.json", id="choice-small"),
        pytest.param("choice-wide.yaml", "warehouse-sku.json", id="choice-wide"),
        pytest.param("noul-small.yaml", "invoice-refund.txt", id="noul-small"),
        pytest.param("score-short.yaml", "cafe-duplicate-charge.json", id="score-short"),
        pytest.param("shell-risk.yaml", "rm-build.txt", id="shell-risk"),
        pytest.param("guard.yaml", "guard-git-status.yaml", id="guard-allow"),
        pytest.param("guard.yaml", "guard-rm-build.yaml", id="guard-ask"),
        pytest.param("guard.yaml", "guard-rmtree.json", id="guard-deny"),
    ],
)
def test_every_shipped_set_replays_its_recording(questions: str, state: str) -> None:
    """`make demo`'s promise: the shipped sets answer from recordings/ with no network."""
    r = run(
        [
            "eval",
            str(QUESTIONS / questions),
            str(STATES / state),
            "--replay",
            str(RECORDINGS),
            "--format",
            "json",
        ]
    )
    assert r.exit_code == 0, r.stderr
    record = json.loads(r.stdout)
    assert record["invalid"] is None
    assert record["model"] in {read_recording(p).served_model for p in RECORDINGS.glob("*.json")}


@pytest.mark.parametrize(
    ("fmt", "check"),
    [
        pytest.param(
            "json", lambda out: json.loads(out)["answers"]["refund"]["noul"] == 0.99, id="json"
        ),
        pytest.param(
            "jsonl", lambda out: out.count("\n") == 1 and json.loads(out)["flags"] == [], id="jsonl"
        ),
        pytest.param(
            "csv",
            lambda out: (
                "answers.refund.noul" in out.splitlines()[0]
                and ",noul,0.99," in out.splitlines()[1]
            ),
            id="csv",
        ),
        pytest.param(
            "table", lambda out: "refund" in out and "cost not reported" in out, id="table"
        ),
    ],
)
def test_formats(noul_set: Path, fmt: str, check: Any) -> None:
    r = run(
        [
            "eval",
            str(noul_set),
            "--state-text",
            NOUL_STATE,
            "--replay",
            str(RECORDINGS),
            "--format",
            fmt,
        ]
    )
    assert r.exit_code == 0, r.stderr
    assert check(r.stdout), r.stdout
    assert r.stderr == ""


def test_default_format_is_json_when_stdout_is_not_a_terminal(noul_set: Path) -> None:
    p = toolnexus(["eval", str(noul_set), "--state-text", NOUL_STATE, "--replay", str(RECORDINGS)])
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["answers"]["refund"]["band"] == "yes"


def test_state_from_stdin_and_as(noul_set: Path) -> None:
    r = run(["eval", str(noul_set), "-", "--replay", str(RECORDINGS)], input=NOUL_STATE + "\n")
    assert r.exit_code == 0, r.stderr
    r = run(
        ["eval", str(noul_set), "-", "--as", "json", "--replay", str(RECORDINGS)],
        input=json.dumps(NOUL_STATE),
    )
    assert r.exit_code == 0, r.stderr


def test_golden_table_through_a_subprocess() -> None:
    """The real entry point, COLUMNS=100, NO_COLOR: the mixed capture's table, byte for byte."""
    p = toolnexus(
        [
            "eval",
            "questions/mixed-batch.yaml",
            "examples/states/cafe-duplicate-charge.json",
            "--replay",
            "recordings/",
            "--format",
            "table",
        ],
        env={"NO_COLOR": "1"},
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout == (TESTS / "golden" / "mixed-batch.table.txt").read_text()
    assert p.stderr == ""


# --- --fail-on and --thresholds ------------------------------------------------------------


@pytest.mark.parametrize(
    ("fail_on", "code"),
    [
        pytest.param(None, 0, id="none"),
        pytest.param("near-uniform", 1, id="near-uniform"),
        pytest.param("uncalibrated", 1, id="uncalibrated"),
        pytest.param("uncertain", 1, id="uncertain"),
        pytest.param("invalid", 0, id="invalid-not-met"),
        pytest.param("invalid,near-uniform", 1, id="any-of-two"),
    ],
)
def test_fail_on_matrix_flat_uncalibrated(tmp_path: Path, fail_on: str | None, code: int) -> None:
    qpath, rec = _flat_recording(tmp_path)
    args = ["eval", str(qpath), "--state-text", "s", "--replay", str(rec), "--format", "json"]
    r = run(args + (["--fail-on", fail_on] if fail_on else []))
    assert r.exit_code == code, r.stderr
    record = json.loads(r.stdout)
    assert record["flags"] == ["near-uniform", "uncalibrated", "uncertain"]
    if code:
        assert r.stderr.splitlines()[-1].startswith("toolnexus: --fail-on met: ")


@pytest.mark.parametrize(
    ("fail_on", "code"),
    [
        pytest.param("near-uniform,uncalibrated,invalid", 0, id="clean-decision"),
        pytest.param("uncertain", 0, id="refund-0.99-is-yes"),
    ],
)
def test_fail_on_matrix_clean(noul_set: Path, fail_on: str, code: int) -> None:
    r = run(
        [
            "eval",
            str(noul_set),
            "--state-text",
            NOUL_STATE,
            "--replay",
            str(RECORDINGS),
            "--fail-on",
            fail_on,
        ]
    )
    assert r.exit_code == code, r.stderr


def test_fail_on_invalid_is_met_by_a_decision_that_fails_validation(tmp_path: Path) -> None:
    from toolnexus.questionfile.load import load_question_set
    from toolnexus.styles.recordings import write_recording

    qpath = tmp_path / "q.yaml"
    qpath.write_text(NOUL_YAML, encoding="utf-8")
    _, qs = load_question_set(qpath)
    body = {"model": "m", "answers": {"refund": {"type": "noul", "noul": 1.5}}}
    write_recording(
        tmp_path / "rec", model="m", endpoint="e", state="s", questions=qs, response=body
    )
    r = run(
        [
            "eval",
            str(qpath),
            "--state-text",
            "s",
            "--replay",
            str(tmp_path / "rec"),
            "--fail-on",
            "invalid",
            "--format",
            "json",
        ]
    )
    # Issue 9: an invalid decision is a backend failure, exit 3, whatever --fail-on asks.
    assert r.exit_code == 3
    assert json.loads(r.stdout)["invalid"] == (
        'classifier: invalid decision: "refund" noul is 1.5, outside 0..1'
    )


def test_thresholds_move_the_band(noul_set: Path) -> None:
    args = [
        "eval",
        str(noul_set),
        "--state-text",
        NOUL_STATE,
        "--replay",
        str(RECORDINGS),
        "--format",
        "json",
        "--fail-on",
        "uncertain",
    ]
    r = run([*args, "--thresholds", "yes=0.995,no=0.1"])
    assert r.exit_code == 1
    record = json.loads(r.stdout)
    assert record["answers"]["refund"]["band"] == "uncertain"
    assert record["thresholds"] == {"yes": 0.995, "no": 0.1, "min_confidence": 0.6}


# --- warnings and stream separation ------------------------------------------------------


def test_degenerate_warning_is_one_stderr_line_and_stdout_stays_json(tmp_path: Path) -> None:
    qpath, rec = _flat_recording(tmp_path)
    p = toolnexus(["eval", str(qpath), "--state-text", "s", "--replay", str(rec)])
    assert p.returncode == 0, p.stderr
    json.loads(p.stdout)  # nothing but the record on stdout
    lines = p.stderr.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith('toolnexus: warning: question "desk": degenerate choice criteria')


# --- exit 2: usage and input ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "expect"),
    [
        pytest.param(
            ["--format", "xml"],
            "Invalid value for '--format': 'xml' is not one of 'table', 'json', 'jsonl', 'csv'",
            id="format",
        ),
        pytest.param(
            ["--fail-on", "wobbly"], "--fail-on: unknown condition 'wobbly'", id="fail-on"
        ),
        pytest.param(
            ["--thresholds", "yes=2"], "--thresholds: yes must be within 0..1", id="threshold-range"
        ),
        pytest.param(
            ["--thresholds", "maybe=0.5"], "--thresholds: expected NAME=VALUE", id="threshold-name"
        ),
        pytest.param(["--as", "xml"], "--as takes text, json, yaml", id="as"),
        pytest.param(
            ["--timeout", "0"], "--timeout must be a number of seconds above 0", id="timeout"
        ),
        pytest.param(["--retries", "-1"], "--retries must be a whole number >= 0", id="retries"),
        pytest.param(
            ["--record", "x"], "--replay and --record exclude each other", id="replay-and-record"
        ),
        pytest.param(["--as", "json"], "--state-text:1:1: invalid JSON", id="state-syntax"),
    ],
)
def test_usage_errors_exit_2_with_one_line(noul_set: Path, extra: list[str], expect: str) -> None:
    r = run(
        ["eval", str(noul_set), "--state-text", "not json", "--replay", str(RECORDINGS), *extra]
    )
    assert r.exit_code == 2
    assert r.stdout == ""
    assert r.stderr.count("\n") == 1 and expect in r.stderr, r.stderr


@pytest.mark.parametrize(
    ("args", "expect"),
    [
        pytest.param(
            ["{q}", "--state-text", "x", "--replay", "{tmp}/nowhere"],
            "no such directory of recordings",
            id="replay-dir-missing",
        ),
        pytest.param(
            ["{q}", "{tmp}/absent.txt"], "absent.txt: no such state file", id="state-missing"
        ),
        pytest.param(
            ["{q}", "{tmp}/n.json"],
            "n.json: a state must be a string, an object or an array, got a number",
            id="state-number",
        ),
        pytest.param(
            ["{tmp}/bad.yaml", "--state-text", "x"],
            "bad.yaml:2:13: question 'q': unknown type 'nope'",
            id="question-file-error",
        ),
        pytest.param(
            ["{q}", "--state-text", "never recorded", "--replay", "recordings/"],
            "no recording in recordings for state 'never recorded' with question-set digest ",
            id="replay-miss-suggests-record",
        ),
    ],
)
def test_input_errors_exit_2_through_the_real_entry_point(
    tmp_path: Path, noul_set: Path, args: list[str], expect: str
) -> None:
    (tmp_path / "n.json").write_text("42")
    (tmp_path / "bad.yaml").write_text("questions:\n  q: {type: nope, instructions: x}\n")
    argv = ["eval", *(a.format(q=noul_set, tmp=tmp_path) for a in args)]
    p = toolnexus(argv)
    assert p.returncode == 2, p.stderr
    assert p.stdout == ""
    assert p.stderr.count("\n") == 1 and expect in p.stderr, p.stderr
    assert "Traceback" not in p.stderr
    if "no recording" in expect:
        assert p.stderr.rstrip().endswith("run it once live with --record recordings to add one")


def test_click_usage_errors_exit_2(noul_set: Path) -> None:
    p = toolnexus(["eval", str(noul_set), "--state-text", "x", "--no-such-option"])
    assert p.returncode == 2
    assert "No such option" in p.stderr and p.stdout == ""
    p = toolnexus(["eval"])
    assert p.returncode == 2 and "Missing argument" in p.stderr


def test_a_key_is_never_accepted_as_api_key_env(noul_set: Path) -> None:
    """--api-key-env takes a NAME; a pasted key is refused and never echoed."""
    r = run(["eval", str(noul_set), "--state-text", "x", "--api-key-env", SECRET])
    assert r.exit_code == 2
    assert "NAME of an environment variable" in r.stderr
    assert SECRET not in r.stderr + r.stdout


# --- environment fallbacks -----------------------------------------------------------------


def test_options_fall_back_to_toolnexus_env_vars(noul_set: Path) -> None:
    env = {"TOOLNEXUS_REPLAY": str(RECORDINGS), "TOOLNEXUS_TIMEOUT": "5"}
    r = run(["eval", str(noul_set), "--state-text", NOUL_STATE, "--format", "json"], env=env)
    assert r.exit_code == 0, r.stderr
    r = run(
        ["eval", str(noul_set), "--state-text", NOUL_STATE], env={"TOOLNEXUS_RETRIES": "-3", **env}
    )
    assert r.exit_code == 2 and "--retries must be a whole number >= 0" in r.stderr


# --- live: loopback server, exit 3, --record ------------------------------------------------

# tests/loopback.py passes shutdown_timeout to aiohttp's TCPSite, which this aiohttp deprecates;
# the warning is raised in the server's thread, not by the code under test.
loopback_warning = pytest.mark.filterwarnings("ignore:shutdown_timeout:DeprecationWarning")


@loopback_warning
def test_live_eval_records_an_exchange_that_then_replays(tmp_path: Path, noul_set: Path) -> None:
    rec = tmp_path / "rec"
    with Loopback() as server:
        r = run(
            [
                "eval",
                str(noul_set),
                "--state-text",
                NOUL_STATE,
                "--format",
                "json",
                "--base-url",
                server.base_url,
                "--record",
                str(rec),
            ],
            env={"TYPESAFE_API_KEY": SECRET},
        )
    assert r.exit_code == 0, r.stderr
    live = json.loads(r.stdout)
    (written,) = rec.glob("*.json")
    text = written.read_text()
    assert SECRET not in text and "authorization" not in text.lower()
    obj = json.loads(text)
    assert obj["model"] == "jev-1.13.0", "the requested model: the question file's"
    assert obj["endpoint"] == f"{server.base_url}/systemone"
    assert obj["state"] == NOUL_STATE
    r = run(
        [
            "eval",
            str(noul_set),
            "--state-text",
            NOUL_STATE,
            "--format",
            "json",
            "--replay",
            str(rec),
        ]
    )
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["answers"] == live["answers"]


@loopback_warning
def test_model_flag_beats_env_beats_question_file(tmp_path: Path, noul_set: Path) -> None:
    rec = tmp_path / "rec"
    with Loopback() as server:
        base = [
            "eval",
            str(noul_set),
            "--state-text",
            NOUL_STATE,
            "--base-url",
            server.base_url,
            "--record",
            str(rec),
        ]
        # Pinned ids the server accepts (it answers 400 to a model it does not know, as the API).
        env = {"TOOLNEXUS_MODEL": "jev-1.13.7"}
        assert run(base, env=env).exit_code == 0
        assert run([*base, "--model", "jev-1.13.8"], env=env).exit_code == 0
    models = sorted(json.loads(p.read_text())["model"] for p in rec.glob("*.json"))
    assert models == ["jev-1.13.7", "jev-1.13.8"]  # env, then flag


@loopback_warning
def test_http_500_with_no_retries_exits_3(noul_set: Path) -> None:
    with Loopback() as server:
        server.push(Fault.http(500, body={"detail": "boom"}))
        p = toolnexus(
            [
                "eval",
                str(noul_set),
                "--state-text",
                NOUL_STATE,
                "--base-url",
                server.base_url,
                "--retries",
                "0",
            ],
            env={"TYPESAFE_API_KEY": SECRET},
        )
    assert p.returncode == 3, p.stderr
    assert p.stdout == ""
    assert p.stderr.count("\n") == 1 and "HTTP 500" in p.stderr
    assert SECRET not in p.stderr


def test_a_closed_port_exits_3_with_one_line(noul_set: Path) -> None:
    with refused_port() as port:  # held: no other test's server can be given it meanwhile
        p = toolnexus(
            [
                "eval",
                str(noul_set),
                "--state-text",
                "x",
                "--base-url",
                f"http://127.0.0.1:{port}/v1",
                "--retries",
                "0",
            ],
            env={"TYPESAFE_API_KEY": SECRET},
        )
    assert p.returncode == 3, p.stderr
    assert p.stderr.count("\n") == 1 and "Traceback" not in p.stderr
    assert "connection refused" in p.stderr
    assert SECRET not in p.stderr + p.stdout


@loopback_warning
def test_a_401_body_never_reaches_the_user(noul_set: Path) -> None:
    with Loopback() as server:
        server.push(Fault.echo_auth(401))
        p = toolnexus(
            [
                "eval",
                str(noul_set),
                "--state-text",
                NOUL_STATE,
                "--base-url",
                server.base_url,
                "--retries",
                "0",
            ],
            env={"TYPESAFE_API_KEY": SECRET},
        )
    assert p.returncode == 3
    assert SECRET not in p.stderr + p.stdout


# --- option resolution ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "file_model", "want"),
    [
        pytest.param({}, None, {"style": "systemone"}, id="default-systemone"),
        pytest.param(
            {},
            "jev-1.13.0",
            {"style": "systemone", "model": "jev-1.13.0"},
            id="question-file-model",
        ),
        pytest.param(
            {"model": "flag"}, "file", {"style": "systemone", "model": "flag"}, id="flag-beats-file"
        ),
        pytest.param(
            {
                "llm_model": "gpt-4o-mini",
                "llm_base_url": "http://x/v1",
                "llm_api_key_env": "OPENAI_API_KEY",
            },
            None,
            {
                "style": "llm",
                "llm_model": "gpt-4o-mini",
                "llm_base_url": "http://x/v1",
                "llm_api_key_env": "OPENAI_API_KEY",
            },
            id="llm-model-selects-llm",
        ),
        pytest.param(
            {
                "backend": "custom",
                "base_url": "http://h/v1",
                "retries": 0,
                "timeout": 2.5,
                "api_key_env": "MY_KEY",
            },
            None,
            {
                "style": "systemone",
                "backend": "custom",
                "base_url": "http://h/v1",
                "retries": 0,
                "timeout": 2.5,
                "api_key_env": "MY_KEY",
                "supports": {"images": False},
            },
            id="custom-backend",
        ),
    ],
)
def test_classifier_options_follow_the_flags(
    settings: dict[str, Any], file_model: str | None, want: dict[str, Any]
) -> None:
    """Style: --replay -> static; --llm-model set -> llm; else systemone."""
    from toolnexus.cli.backend import classifier_options
    from toolnexus.cli.options import BackendSettings

    assert classifier_options(BackendSettings(**settings), file_model=file_model) == want


def test_replay_selects_static_with_every_recording() -> None:
    from toolnexus.cli.backend import classifier_options
    from toolnexus.cli.options import BackendSettings

    opts = classifier_options(BackendSettings(replay=RECORDINGS, llm_model="ignored"))
    assert opts["style"] == "static"
    assert len(opts["decisions"]) == len(list(RECORDINGS.glob("*.json")))


def test_help_lists_the_exit_codes() -> None:
    p = toolnexus(["eval", "--help"])
    assert p.returncode == 0
    assert "Exit codes: 0 ok; 1 a --fail-on condition met; 2 usage or input error; 3" in " ".join(
        p.stdout.split()
    )
    for flag in (
        "--backend",
        "--base-url",
        "--model",
        "--api-key-env",
        "--timeout",
        "--retries",
        "--llm-base-url",
        "--llm-model",
        "--llm-api-key-env",
        "--replay",
        "--record",
        "--state-text",
        "--as",
        "--format",
        "--fail-on",
        "--thresholds",
    ):
        assert flag in p.stdout


# --- the boundary's other exits -----------------------------------------------------------


def test_ctrl_c_exits_130_with_one_line(noul_set: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr("toolnexus.cli.eval_cmd.run_eval", interrupted)
    r = run(["eval", str(noul_set), "--state-text", "x"])
    assert r.exit_code == 130
    assert r.stderr == "toolnexus: interrupted\n"


class _ClosedPipe(io.StringIO):
    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


def test_a_closed_stdout_pipe_is_quiet(
    noul_set: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`toolnexus eval ... | head`: the reader left early; exit 0, no traceback, no noise."""
    from toolnexus.cli.app import main

    monkeypatch.setattr("sys.stdout", _ClosedPipe())
    with pytest.raises(SystemExit) as e:
        main(
            [
                "eval",
                str(noul_set),
                "--state-text",
                NOUL_STATE,
                "--replay",
                str(RECORDINGS),
                "--format",
                "json",
            ]
        )
    assert e.value.code == 0
    assert capsys.readouterr().err == ""
