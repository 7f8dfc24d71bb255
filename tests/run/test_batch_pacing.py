"""``toolnexus batch`` paces itself through the run's one scheduler (issue 19), against a real
``toolnexus serve`` with ``--rate-limit``, ``--require-key-env`` and scripted failures.

Issue 19: "the run stops scheduling with one line naming the cause, writes what it has, and
exits with the documented code: today a missing key writes one 401 error record per line, 300
requests for 300 states"."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from clirun import run_cli
from serving import HeldClock, ThreadedServer
from toolnexus.core.failures import (
    EXIT_OK,
    EXIT_STOPPED,
    EXIT_USAGE,
)
from toolnexus.run.pace import STATE_FIELD_PROBE
from toolnexus.serve import ServeOptions
from toolnexus.serve.script import ScriptedReply, ScriptedRequest

KEY_ENV = "WIRE_CLI_KEY"
QUESTIONS = 'questions:\n  refund:\n    type: noul\n    instructions: "Is a refund requested?"\n'


@pytest.fixture
def qfile(tmp_path: Path) -> Path:
    path = tmp_path / "q.yaml"
    path.write_text(QUESTIONS, encoding="utf-8")
    return path


def _input(tmp_path: Path, n: int, field: str = "text") -> Path:
    path = tmp_path / "in.jsonl"
    lines = (json.dumps({"id": f"t{i}", field: f"ticket {i}: charged twice"}) for i in range(n))
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _statuses(server: ThreadedServer) -> dict[str, int]:
    stats: dict[str, Any] = server.server.traffic.body(server.server.in_flight)
    return dict(stats["statuses"])


def _batch(qfile: Path, src: Path, out: Path, server: ThreadedServer, *more: str) -> Any:
    return run_cli(
        "batch", str(qfile), str(src), "--id-field", "id", "--state-field", "text",
        "-o", str(out), "--base-url", server.url + "/v1", *more,
    )  # fmt: skip


def test_concurrency_64_against_a_rate_limit_writes_no_429_record(
    qfile: Path, tmp_path: Path
) -> None:
    """'0 error records from 429 at concurrency 64' (CLI), ``--retries 0``: before the
    scheduler every 429 became a ``backend_http`` record."""
    src, out = _input(tmp_path, 160), tmp_path / "out.jsonl"
    # 100 requests pass, the next 20 are refused whatever the machine's speed, then time runs.
    options = ServeOptions(synthetic=True, rate_limit="6000/min")
    with ThreadedServer(options, limits_clock=HeldClock(120)) as server:
        ran = _batch(qfile, src, out, server, "--concurrency", "64", "--retries", "0")
        statuses = _statuses(server)
    assert ran.code == EXIT_OK, ran.stderr
    assert statuses.get("429", 0) >= 20, "the held clock refuses requests 101..120"
    records = _records(out)
    assert len(records) == 160 and not [r for r in records if "error" in r]
    assert f"{statuses['429']} answered 429 and were sent again" in ran.stderr


def test_a_wrong_key_stops_the_batch_in_one_line_and_exits_4(
    qfile: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """'a wrong key against serve --require-key-env: at most 5 requests before the run stops';
    the stop is one line naming the cause, and the exit code is the documented 4. Then the
    right key and ``--resume`` finish the run with every id once."""
    monkeypatch.setenv(KEY_ENV, "the-right-key")
    monkeypatch.setenv("TYPESAFE_API_KEY", "a-wrong-key")
    src, out = _input(tmp_path, 300), tmp_path / "out.jsonl"
    with ThreadedServer(ServeOptions(synthetic=True, require_key_env=KEY_ENV)) as server:
        ran = _batch(qfile, src, out, server)
        sent = sum(_statuses(server).values())
        monkeypatch.setenv("TYPESAFE_API_KEY", "the-right-key")
        resumed = _batch(qfile, src, out, server, "--resume", "--retry-errors")
    assert ran.code == EXIT_STOPPED, ran.stderr
    assert sent <= 5
    stop = [line for line in ran.stderr.splitlines() if "stopped scheduling" in line]
    assert len(stop) == 1 and "(HTTP 401)" in stop[0] and "TYPESAFE_API_KEY" in stop[0]
    assert "a-wrong-key" not in ran.stderr
    assert "batch stopped:" in ran.stderr
    assert resumed.code == EXIT_OK, resumed.stderr
    ids = [r["id"] for r in _records(out)]
    assert sorted(ids) == sorted(f"t{i}" for i in range(300))


def test_an_unset_key_is_refused_before_the_first_request(qfile: Path, tmp_path: Path) -> None:
    """'A key that is unset is refused before the first request': the backend's own endpoint
    (no --base-url) and no $TYPESAFE_API_KEY is one line, exit 2, nothing sent (the suite's
    network guard would fail a request to api.typesafe.ai)."""
    src, out = _input(tmp_path, 3), tmp_path / "out.jsonl"
    ran = run_cli("batch", str(qfile), str(src), "--id-field", "id", "--state-field", "text",
                  "-o", str(out))  # fmt: skip
    assert ran.code == EXIT_USAGE
    assert "$TYPESAFE_API_KEY is not set" in ran.stderr and "nothing was sent" in ran.stderr
    assert "Traceback" not in ran.stderr


def test_a_state_field_no_record_has_stops_the_run(qfile: Path, tmp_path: Path) -> None:
    """'A typo in --state-field (none of the first 100 input records has that field) is the
    same kind of stop'."""
    src, out = _input(tmp_path, STATE_FIELD_PROBE + 50, field="txt"), tmp_path / "out.jsonl"
    with ThreadedServer(ServeOptions(synthetic=True)) as server:
        ran = _batch(qfile, src, out, server)
        sent = sum(_statuses(server).values())
    assert ran.code == EXIT_STOPPED, ran.stderr
    assert sent == 0
    assert "--state-field 'text': none of the first 100 input records has that field" in (
        ran.stderr
    )


def _throttle_after(n: int) -> Any:
    """A script: the first ``n`` requests are answered, then every one is a 429 asking for 60 s
    (a run sits in its backoff) until ``release()``."""
    seen: list[int] = []
    state = {"open": False}

    def script(req: ScriptedRequest) -> ScriptedReply | None:
        seen.append(1)
        if len(seen) <= n or state["open"]:
            return None
        return ScriptedReply(429, b"{}", headers={"Retry-After": "60", "retry-after-ms": "60000"})

    def release() -> None:
        state["open"] = True

    return script, release


def test_kill_9_mid_backoff_then_resume_writes_every_id_once(qfile: Path, tmp_path: Path) -> None:
    """'kill -9 mid-backoff and --resume': the run is killed while the whole run waits out a
    Retry-After; what it wrote survives, and --resume completes it with every id once."""
    script, release = _throttle_after(20)
    src, out = _input(tmp_path, 60), tmp_path / "out.jsonl"
    with ThreadedServer(ServeOptions(synthetic=True, script=script)) as server:
        url = server.url + "/v1"
        args = [sys.executable, "-m", "toolnexus", "batch", str(qfile), str(src), "--id-field",
                "id", "--state-field", "text", "-o", str(out), "--base-url", url]  # fmt: skip
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and _statuses(server).get("429", 0) == 0:
                time.sleep(0.02)
            assert _statuses(server).get("429", 0) > 0, "the run never reached its backoff"
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        release()
        resumed = subprocess.run([*args, "--resume"], capture_output=True, text=True, timeout=120)
    assert resumed.returncode == EXIT_OK, resumed.stderr
    records = _records(out)
    assert sorted(r["id"] for r in records) == sorted(f"t{i}" for i in range(60))
    assert not [r for r in records if "error" in r]


def test_pack_shows_states_and_requests_in_the_summary(qfile: Path, tmp_path: Path) -> None:
    """'--pack N|auto (shown in the summary: states, requests, states per request)'."""
    src, out = _input(tmp_path, 24), tmp_path / "out.jsonl"
    with ThreadedServer(ServeOptions(synthetic=True)) as server:
        ran = _batch(qfile, src, out, server, "--pack", "4")
        sent = sum(_statuses(server).values())
    assert ran.code == EXIT_OK, ran.stderr
    assert sent == 6
    assert "24 states, 24 ok" in ran.stderr and "6 requests (4.00 states per request)" in ran.stderr
    assert len(_records(out)) == 24


def test_extra_admission_members_given_to_run_batch_see_every_request(
    qfile: Path, tmp_path: Path
) -> None:
    """The CLI's seam for issue 23's budget: ``RunConfig(admission=...)`` chains the members
    after the run's limiter, and each sees every request the server received."""
    from toolnexus.questionfile.load import load_question_set
    from toolnexus.run import RunConfig, run_batch

    seen: list[str] = []

    class Member:
        async def acquire(self, ticket: Any) -> None:
            seen.append("acquire")

        async def release(self, ticket: Any, usage: Any, outcome: Any) -> None:
            seen.append(outcome.kind.value)

    src, out = _input(tmp_path, 30), tmp_path / "out.jsonl"
    with ThreadedServer(ServeOptions(synthetic=True)) as server:
        cfg = RunConfig(
            load_question_set(qfile).questions,
            (str(src),),
            classifier={"base_url": server.url + "/v1"},
            id_field="id",
            state_fields=("text",),
            output=str(out),
            admission=(Member(),),
        )
        summary = run_batch(cfg)
        sent = sum(_statuses(server).values())
    assert summary.ok == 30 and summary.exit_code() == EXIT_OK
    assert sent == 30 == seen.count("acquire") == seen.count("success") == summary.requests


def test_evaluate_table_rides_the_limit_through_the_same_scheduler(tmp_path: Path) -> None:
    """'later the engine adapters' send through the one scheduler: ``evaluate_table`` at
    concurrency 64 against a limited server, ``retries=0``, gives no error row."""
    pa = pytest.importorskip("pyarrow", reason="platform: the parquet extra is not installed")
    from toolnexus.arrow import evaluate_table

    questions = {"refund": {"type": "noul", "instructions": "Is a refund requested?"}}
    table = pa.table({"text": [f"ticket {i}: charged twice" for i in range(120)]})
    options = ServeOptions(synthetic=True, rate_limit="6000/min")
    with ThreadedServer(options, limits_clock=HeldClock(110)) as server:
        out = evaluate_table(
            table, questions, state_column="text", concurrency=64, base_url=server.url, retries=0
        )
        throttled = _statuses(server).get("429", 0)
    assert throttled >= 10, "the held clock refuses requests 101..110"
    assert out.num_rows == 120
    assert out.column("error").null_count == 120
