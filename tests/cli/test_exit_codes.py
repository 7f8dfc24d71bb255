"""Issue 8 §2: "One function maps an exception to the CLI's exit code and to the batch record's
``error.code`` ... after this they agree, and a test runs the same failures through both."

Each case below is run through ``toolnexus eval`` (one state) and ``toolnexus batch`` (the same
state as the only JSONL line) against the real loopback server: both must exit with the same
code, and batch's record must carry the code that ``failure_of`` gives.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from clirun import run_main
from loopback import Fault, Loopback
from paths import REPO, docs_text
from toolnexus.cli.errors import (
    CliError,
    failure_of,
)
from toolnexus.core import errors as lib
from toolnexus.core.failures import (
    CONDITION_FOR_CODE,
    EXIT_BACKEND,
    EXIT_FOR_CODE,
    EXIT_USAGE,
    FAILURES,
    Failure,
)

QUESTIONS = """\
questions:
  urgent:
    type: noul
    instructions: Does this ticket need a human today?
"""

STATE = "ticket 7: the invoice was charged twice"


@dataclass(frozen=True)
class Case:
    """One failure: what the server does (or which options), and what both commands must say."""

    code: str
    exit_code: int
    faults: tuple[Fault, ...] = ()
    args: tuple[str, ...] = ()
    unset: tuple[str, ...] = ()
    set_env: tuple[tuple[str, str], ...] = ()
    state: Any = STATE
    live: bool = True  # False: the options never reach the loopback server


CASES = [
    pytest.param(Case("backend_http", EXIT_BACKEND, faults=(Fault.http(500),)), id="http-500"),
    pytest.param(Case("backend_http", EXIT_BACKEND, faults=(Fault.echo_auth(401),)), id="http-401"),
    pytest.param(Case("backend_transport", EXIT_BACKEND, faults=(Fault.reset(),)), id="reset"),
    pytest.param(Case("backend_response", EXIT_BACKEND, faults=(Fault.not_json(),)), id="not-json"),
    pytest.param(
        Case("backend_response", EXIT_BACKEND, faults=(Fault.truncated(),)), id="truncated"
    ),
    pytest.param(
        # The example: eval exited 2, batch recorded backend_error and exited 3.
        Case(
            "config_error",
            EXIT_USAGE,
            args=("--backend", "cloudflare"),
            unset=("CLOUDFLARE_ACCOUNT_ID", "CLOUDFLARE_GATEWAY_ID"),
            set_env=(("TYPESAFE_API_KEY", "sk-test-not-sent"),),
            live=False,
        ),
        id="unset-cloudflare-account-id",
    ),
    pytest.param(
        Case("replay_miss", EXIT_USAGE, args=("--replay", "{empty}"), live=False),
        id="replay-miss",
    ),
    pytest.param(
        # Issue 9: "An invalid decision ... is a backend failure: eval exits 3 and batch exits 3".
        Case(
            "invalid_decision",
            EXIT_BACKEND,
            faults=(Fault.http(200, body={"model": "jev-1.13.0", "answers": {}}),),
        ),
        id="invalid-decision",
    ),
    pytest.param(
        Case(
            "invalid_decision",
            EXIT_BACKEND,
            faults=(Fault.http(200, body={"model": "jev-1.13.0", "answers": {}}),),
            args=("--fail-on", "invalid"),
        ),
        id="invalid-decision-fail-on-invalid",
    ),
]


@dataclass
class Ran:
    code: int
    out: str
    stderr: str


def _run(capfd: pytest.CaptureFixture[str], *args: str) -> Ran:
    """The console entry point in-process (``clirun.run_main``); batch writes records with
    ``os.write`` on fd 1, so the capture is at the file-descriptor level."""
    return Ran(*run_main(capfd, *args))


def _options(case: Case, server: Loopback, empty: Path) -> list[str]:
    args = [a.replace("{empty}", str(empty)) for a in case.args]
    if "--backend" not in args:
        args += ["--base-url", server.base_url]
    return [*args, "--retries", "0"]


@pytest.mark.parametrize("case", CASES)
def test_eval_and_batch_agree_on_a_failure(
    case: Case,
    server: Loopback,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    for name in case.unset:
        monkeypatch.delenv(name, raising=False)
    for name, value in case.set_env:
        monkeypatch.setenv(name, value)
    questions = tmp_path / "q.yaml"
    questions.write_text(QUESTIONS, encoding="utf-8")
    state = tmp_path / "state.json"
    state.write_text(json.dumps(case.state), encoding="utf-8")
    lines = tmp_path / "in.jsonl"
    lines.write_text(json.dumps({"id": "s1", "state": case.state}) + "\n", encoding="utf-8")
    empty = tmp_path / "recordings"
    empty.mkdir()
    # A corpus that answers another question set: every request here is a miss.
    shutil.copy(sorted((REPO / "recordings").glob("*.json"))[0], empty)
    options = _options(case, server, empty)

    server.push(*case.faults)
    ran_eval = _run(capfd, "eval", str(questions), str(state), "--format", "json", *options)
    server.push(*case.faults)
    ran_batch = _run(
        capfd,
        "batch",
        str(questions),
        str(lines),
        "--id-field",
        "id",
        "--state-field",
        "state",
        *options,
    )

    # batch's one stderr line is its summary; the record carries the failure.
    ran_batch.stderr = "".join(
        line for line in ran_batch.stderr.splitlines(True) if "toolnexus: batch:" not in line
    )
    assert "Traceback" not in ran_eval.stderr + ran_batch.stderr
    assert (ran_eval.code, ran_batch.code) == (case.exit_code, case.exit_code), (
        ran_eval.stderr + ran_batch.stderr
    )
    (record,) = [json.loads(line) for line in ran_batch.out.splitlines()]
    assert record["error"]["code"] == case.code
    assert server.total == (2 if case.live else 0)
    if case.code == "invalid_decision":
        # eval prints System One's reply flagged: the same `invalid` condition.
        assert "invalid" in json.loads(ran_eval.out)["flags"]
    else:
        assert ran_eval.out == ""
        assert ran_eval.stderr.count("\n") == 1, ran_eval.stderr


@pytest.mark.parametrize(
    ("error", "code", "exit_code"),
    [
        pytest.param(lib.HTTPStatusError("x", status=503, endpoint="e"), "backend_http", 3),
        pytest.param(lib.TransportError("x", "timeout", "e"), "backend_transport", 3),
        pytest.param(lib.DecisionError("x"), "backend_response", 3),
        pytest.param(lib.HostBackendError("x"), "backend_error", 3),
        pytest.param(lib.InvalidDecision("x"), "invalid_decision", 3),
        pytest.param(lib.ConfigError("x"), "config_error", 2),
        pytest.param(lib.StaticMiss("x", "0" * 64, "s"), "replay_miss", 2),
        pytest.param(lib.ClassifierUnsupported("b", "m", "images"), "unsupported", 2),
        pytest.param(lib.InvalidState("x"), "invalid_state", 2),
        pytest.param(lib.CacheError("x"), "cache_error", 2),
        pytest.param(lib.HookError("x"), "hook_error", 2),
        pytest.param(lib.QuestionError("x"), "invalid_question", 2),
        pytest.param(
            lib.BatchError("x", 3, lib.TransportError("x", "timeout", "e")),
            "backend_transport",
            3,
            id="batch-error-is-its-cause",
        ),
        pytest.param(CliError("x", 2), "usage", 2),
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, BaseException) else None,
)
def test_failure_of_maps_each_family(error: BaseException, code: str, exit_code: int) -> None:
    assert failure_of(error) == Failure(code, exit_code, CONDITION_FOR_CODE.get(code))


def test_a_bug_is_not_ours_to_map() -> None:
    """A non-library exception keeps its traceback: the boundary re-raises it."""
    assert failure_of(RuntimeError("bug")) is None


def test_every_family_has_its_own_row_and_codes_are_unique() -> None:
    rows = {cls for cls, _ in FAILURES}
    assert {lib.BackendError, lib.ConfigError, lib.CacheError, lib.ClassifierError} <= rows
    codes = [f.code for _, f in FAILURES]
    assert len(codes) == len(set(codes))
    assert set(EXIT_FOR_CODE) == {*codes, "malformed_input", "duplicate_id"}


def test_the_readme_lists_every_record_code_with_its_exit_code() -> None:
    """The README's exit-code paragraph says which record codes exit 3 and which exit 2: it
    names every code of the failure table, each under the exit code ``failure_of`` gives."""
    import re

    text = " ".join(docs_text().split())
    start = text.index("One table maps each failure")
    paragraph = text[start : text.index("`batch` writes every record, then exits", start)]
    backend, _, rest = paragraph.partition(" exit 3;")
    said = {
        **{c: EXIT_BACKEND for c in re.findall(r"`([a-z_]+)`", backend) if c in EXIT_FOR_CODE},
        **{c: EXIT_USAGE for c in re.findall(r"`([a-z_]+)`", rest) if c in EXIT_FOR_CODE},
    }
    assert said == EXIT_FOR_CODE
