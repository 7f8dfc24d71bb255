"""``toolnexus batch`` and ``toolnexus cache`` against the real loopback server (issue 5's
acceptance list): JSONL, CSV, directory and stdin inputs; ordered and unordered output;
per-state errors with line numbers; a SIGKILLed run resumed with no second request for a
finished state; --retry-errors; --shard over 3 shards; the cache serving a second run.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from clirun import run_main as _cli
from loopback import Fault, Loopback
from toolnexus.core.canonical import canonical_json
from toolnexus.core.questions import questions_to_wire
from toolnexus.questionfile.load import load_question_set

QUESTIONS = """\
questions:
  urgent:
    type: noul
    instructions: Does this ticket need a human today?
  desk:
    type: choice
    instructions: Which desk should own this ticket?
    criteria:
      billing: own it here when money moved
      technical: own it here when the product itself errors
"""


@pytest.fixture
def qfile(tmp_path: Path) -> Path:
    path = tmp_path / "q.yaml"
    path.write_text(QUESTIONS, encoding="utf-8")
    return path


def _states(n: int) -> list[str]:
    return [f"ticket {i}: please help" for i in range(n)]


def _jsonl_input(tmp_path: Path, states: list[Any], name: str = "in.jsonl") -> Path:
    path = tmp_path / name
    with open(path, "w", encoding="utf-8") as f:
        for i, s in enumerate(states):
            f.write(json.dumps({"id": f"t{i}", "text": s}) + "\n")
    return path


def _body(qfile: Path, state: Any) -> bytes:
    """The exact bytes the classifier sends for ``state`` (the server counts per body)."""
    _, qs = load_question_set(qfile)
    return canonical_json(
        {"model": "jev-latest", "questions": questions_to_wire(qs), "state": state}
    )


def _records(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()]


def _base(server: Loopback) -> list[str]:
    return ["--base-url", server.base_url]


def test_jsonl_unordered_every_state_once(
    server: Loopback, qfile: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    states = _states(30)
    src = _jsonl_input(tmp_path, states)
    code, out, err = _cli(
        capfd,
        "batch",
        str(qfile),
        str(src),
        "--id-field",
        "id",
        "--state-field",
        "text",
        "--concurrency",
        "8",
        *_base(server),
    )
    assert code == 0, err
    records = _records(out)
    assert sorted(r["id"] for r in records) == sorted(f"t{i}" for i in range(30))
    assert all(
        "answers" in r and r["answers"]["desk"]["choice"] in ("billing", "technical")
        for r in records
    )
    assert server.total == 30
    assert "batch: 30 states, 30 ok, 0 failed" in err


def _release_when(server: Loopback, ready: Callable[[], bool]) -> threading.Thread:
    """Release the server's held requests once ``ready()`` holds. The deadline is only a hang
    guard: past it they are released anyway, and the test's own assertions say what happened."""

    def watch() -> None:
        deadline = time.monotonic() + 60
        while not ready() and time.monotonic() < deadline:
            time.sleep(0.01)
        server.release()

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    return watcher


def _lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def test_ordered_output_keeps_input_order_unordered_does_not(
    qfile: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """'--ordered keeps input order ..., otherwise completion order'. The first state answers
    last by construction: the server holds it until the other eleven are written (unordered)
    or have all arrived (ordered, which writes nothing before it), not for a fixed 0.3 s that
    a busy machine can outlast (issue 29 item 2)."""
    states = _states(12)
    src = _jsonl_input(tmp_path, states)
    args = ["batch", str(qfile), str(src), "--id-field", "id", "--state-field", "text"]
    args += ["--concurrency", "4"]
    first = _body(qfile, states[0])
    ordered, unordered = tmp_path / "ordered.jsonl", tmp_path / "unordered.jsonl"
    with Loopback() as server:
        server.hold_body(first)
        watcher = _release_when(server, lambda: server.total >= 12)
        code, _, err = _cli(capfd, *args, "--ordered", "-o", str(ordered), *_base(server))
        watcher.join()
        assert code == 0, err
        server.hold_body(first)
        watcher = _release_when(server, lambda: _lines(unordered) >= 11)
        code, _, err = _cli(capfd, *args, "-o", str(unordered), *_base(server))
        watcher.join()
        assert code == 0, err
    assert [r["id"] for r in _records(ordered.read_text())] == [f"t{i}" for i in range(12)]
    ids = [r["id"] for r in _records(unordered.read_text())]
    assert sorted(ids) == sorted(f"t{i}" for i in range(12)) and ids[-1] == "t0"


def test_per_state_errors_carry_line_numbers_and_never_stop_the_batch(
    server: Loopback, qfile: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "mixed.jsonl"
    src.write_text('"fine one"\n{broken\n42\n\n"fine two"\n', encoding="utf-8")
    code, out, err = _cli(capfd, "batch", str(qfile), str(src), "--ordered", *_base(server))
    records = _records(out)
    assert [r["id"] for r in records] == [f"{src}:1", f"{src}:2", f"{src}:3", f"{src}:5"]
    assert records[1]["error"]["code"] == "malformed_input"
    assert records[1]["error"]["message"].startswith(f"{src}:2: invalid JSON")
    assert records[2]["error"] == {
        "code": "invalid_state",
        "message": f"{src}:3: a state must be a string, an object or an array, got a number",
    }
    assert "answers" in records[0] and "answers" in records[3]
    assert code == 2  # the inputs could not supply every state
    assert server.total == 2  # nothing sent for a malformed line
    assert "2 failed (invalid_state 1, malformed_input 1)" in err


def test_backend_failure_is_an_error_record_and_exit_3(
    server: Loopback, qfile: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    src = _jsonl_input(tmp_path, _states(5))
    server.push(Fault.http(500))
    code, out, _ = _cli(
        capfd,
        "batch",
        str(qfile),
        str(src),
        "--id-field",
        "id",
        "--state-field",
        "text",
        "--concurrency",
        "1",
        "--retries",
        "0",
        *_base(server),
    )
    assert code == 3
    records = _records(out)
    errors = [r for r in records if "error" in r]
    assert len(records) == 5 and len(errors) == 1
    assert errors[0]["error"]["code"] == "backend_http"
    assert "HTTP 500" in errors[0]["error"]["message"]


def test_fail_on_uncertain_exits_1(
    server: Loopback, qfile: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    src = _jsonl_input(tmp_path, _states(20))
    args = [
        "batch",
        str(qfile),
        str(src),
        "--id-field",
        "id",
        "--state-field",
        "text",
        *_base(server),
    ]
    code, out, _ = _cli(capfd, *args)
    uncertain = [r for r in _records(out) if "uncertain" in r["flags"]]
    assert code == 0 and uncertain  # synthesized noul answers spread over 0..1
    code, _, err = _cli(capfd, *args, "--fail-on", "uncertain")
    assert code == 1
    assert "--fail-on met: uncertain" in err


def test_csv_input_and_csv_output(
    server: Loopback, qfile: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "tickets.csv"
    src.write_text("ticket,body\nA-1,charged twice\nA-2,app crashes\nA-3\n", encoding="utf-8")
    out_path = tmp_path / "out.csv"
    code, _, err = _cli(
        capfd,
        "batch",
        str(qfile),
        str(src),
        "--id-field",
        "ticket",
        "--state-field",
        "body",
        "--format",
        "csv",
        "-o",
        str(out_path),
        "--ordered",
        *_base(server),
    )
    assert code == 2, err  # A-3 is a short row
    import csv

    rows = list(csv.DictReader(out_path.read_text(encoding="utf-8").splitlines()))
    assert [r["id"] for r in rows] == ["A-1", "A-2", f"{src}:4"]
    assert rows[0]["answers.desk.choice"] in ("billing", "technical")
    assert (
        rows[2]["error.code"] == "malformed_input"
        and f"{src}:4: row has 1 fields" in rows[2]["error.message"]
    )
    assert server.count(_body(qfile, "charged twice")) == 1


def test_directory_input_json_output(
    server: Loopback, qfile: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    d = tmp_path / "states"
    d.mkdir()
    (d / "one.txt").write_text("charged twice\n", encoding="utf-8")
    (d / "two.json").write_text('{"cmd": "rm -rf /"}', encoding="utf-8")
    code, out, _ = _cli(
        capfd, "batch", str(qfile), str(d), "--format", "json", "--ordered", *_base(server)
    )
    assert code == 0
    records = json.loads(out)
    assert [r["id"] for r in records] == [str(d / "one.txt"), str(d / "two.json")]
    assert server.count(_body(qfile, "charged twice")) == 1
    assert server.count(_body(qfile, {"cmd": "rm -rf /"})) == 1


def _subprocess(*args: str, **kw: Any) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "toolnexus", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kw,
    )


def test_stdin_input(server: Loopback, qfile: Path, capfd: pytest.CaptureFixture[str]) -> None:
    proc = _subprocess("batch", str(qfile), "-", "--ordered", *_base(server), stdin=subprocess.PIPE)
    out, err = proc.communicate('"charged twice"\n{"cmd": "ls"}\n', timeout=60)
    assert proc.returncode == 0, err
    records = _records(out)
    assert [r["id"] for r in records] == ["-:1", "-:2"]
    assert server.count(_body(qfile, {"cmd": "ls"})) == 1


def _wait_for_lines(path: Path, n: int, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if path.exists() and path.read_bytes().count(b"\n") >= n:
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.01)
    raise AssertionError("the batch never wrote enough records")


def test_sigkill_then_resume_finishes_without_paying_twice(
    qfile: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """'a re-run after an interruption (kill -9) finishes the work without paying twice for a
    finished state'; every record a complete line. The server answers 12 requests and holds
    the rest, so the kill lands mid-run whatever the machine's speed (issue 29 item 2)."""
    states = _states(40)
    src = _jsonl_input(tmp_path, states)
    out_path = tmp_path / "out.jsonl"
    args = [
        "batch",
        str(qfile),
        str(src),
        "--id-field",
        "id",
        "--state-field",
        "text",
        "--concurrency",
        "4",
        "-o",
        str(out_path),
    ]
    with Loopback() as server:
        server.hold(12)
        proc = _subprocess(*args, *_base(server))
        _wait_for_lines(out_path, 8, proc)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
        first = out_path.read_bytes()
        lines = first.decode().splitlines(keepends=True)
        complete = [json.loads(line) for line in lines if line.endswith("\n")]
        finished = {r["id"] for r in complete}
        assert 8 <= len(finished) <= 12
        server.release()
        code, _, err = _cli(capfd, *args, "--resume", *_base(server))
        assert code == 0, err
        records = _records(out_path.read_text(encoding="utf-8"))
        assert Counter(r["id"] for r in records) == Counter(f"t{i}" for i in range(40))
        for i, s in enumerate(states):
            if f"t{i}" in finished:
                assert server.count(_body(qfile, s)) == 1, f"t{i} was paid for twice"
        assert f"{len(finished)} skipped" in err


def test_sigterm_fsyncs_and_exits_143(qfile: Path, tmp_path: Path) -> None:
    """SIGTERM mid-run: exit 143, what was written fsynced and whole. The server answers 8
    requests and holds the rest, so the run is still going when the signal lands, whatever
    the machine's speed (issue 29 item 2)."""
    src = _jsonl_input(tmp_path, _states(40))
    out_path = tmp_path / "out.json"
    with Loopback() as server:
        server.hold(8)
        proc = _subprocess(
            "batch",
            str(qfile),
            str(src),
            "--id-field",
            "id",
            "--state-field",
            "text",
            "--format",
            "json",
            "--concurrency",
            "2",
            "-o",
            str(out_path),
            *_base(server),
        )
        _wait_for_lines(out_path, 4, proc)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 143, err
    assert "batch interrupted by SIGTERM" in err
    lines = out_path.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "["
    assert all(json.loads(line.removeprefix(",")) for line in lines[1:])


def test_retry_errors_reruns_only_errors_and_leaves_one_record_per_id(
    server: Loopback, qfile: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    states = _states(10)
    src = _jsonl_input(tmp_path, states)
    out_path = tmp_path / "out.jsonl"
    args = [
        "batch",
        str(qfile),
        str(src),
        "--id-field",
        "id",
        "--state-field",
        "text",
        "--retries",
        "0",
        "--concurrency",
        "1",
        "-o",
        str(out_path),
        *_base(server),
    ]
    # 504, not 503: in a batch a 503 is a storm the run waits out and re-sends (issue 32).
    server.push(Fault.http(504), Fault.http(500), Fault.http(502))
    code, _, _ = _cli(capfd, *args)
    assert code == 3
    first = _records(out_path.read_text(encoding="utf-8"))
    failed = {r["id"] for r in first if "error" in r}
    assert len(failed) == 3
    before = server.total
    code, _, err = _cli(capfd, *args, "--retry-errors")
    assert code == 0, err
    assert server.total - before == 3  # only the errors were re-run
    records = _records(out_path.read_text(encoding="utf-8"))
    assert Counter(r["id"] for r in records) == Counter(f"t{i}" for i in range(10))
    assert all("error" not in r for r in records)


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_three_shards_cover_every_state_once(
    server: Loopback, qfile: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str], fmt: str
) -> None:
    src = _jsonl_input(tmp_path, _states(30))
    ids: list[str] = []
    for i in (1, 2, 3):
        out_path = tmp_path / f"shard{i}.{fmt}"
        code, _, _ = _cli(
            capfd,
            "batch",
            str(qfile),
            str(src),
            "--id-field",
            "id",
            "--state-field",
            "text",
            "--shard",
            f"{i}/3",
            "--format",
            fmt,
            "-o",
            str(out_path),
            *_base(server),
        )
        assert code == 0
        text = out_path.read_text(encoding="utf-8")
        if fmt == "csv":
            ids += [line.split(",")[0] for line in text.splitlines()[1:]]
        else:
            ids += [r["id"] for r in _records(text)]
    assert Counter(ids) == Counter(f"t{i}" for i in range(30))
    assert server.total == 30


def test_cache_serves_a_second_run_with_zero_requests(
    server: Loopback, qfile: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    src = _jsonl_input(tmp_path, _states(15))
    cache_dir = tmp_path / "cache"
    args = [
        "batch",
        str(qfile),
        str(src),
        "--id-field",
        "id",
        "--state-field",
        "text",
        "--cache",
        "--cache-dir",
        str(cache_dir),
        *_base(server),
    ]
    code, _, _ = _cli(capfd, *args)
    assert code == 0 and server.total == 15
    code, second, err = _cli(capfd, *args)
    assert code == 0
    assert server.total == 15  # nothing sent the second time
    assert "15 cached" in err
    assert all(r["cached"] for r in _records(second))
    code, out, _ = _cli(capfd, "cache", "stats", "--cache-dir", str(cache_dir), "--format", "json")
    assert code == 0 and json.loads(out)["entries"] >= 15
    code, _, err = _cli(capfd, "cache", "clear", "--cache-dir", str(cache_dir))
    assert code == 0 and "removed" in err
    code, out, _ = _cli(capfd, "cache", "stats", "--cache-dir", str(cache_dir), "--format", "json")
    assert json.loads(out)["entries"] == 0


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        pytest.param(["--resume"], "need --output FILE", id="resume-without-output"),
        pytest.param(["--concurrency", "0"], "--concurrency takes 1..1000", id="concurrency-0"),
        pytest.param(["--rate", "0"], "--rate must be a positive", id="rate-0"),
        pytest.param(
            ["--format", "xml"],
            "Invalid value for '--format': 'xml' is not one of 'jsonl', 'csv', 'json'",
            id="bad-format",
        ),
        pytest.param(["--shard", "4/3"], "--shard takes I/N", id="bad-shard"),
        pytest.param(["--fail-on", "nope"], "--fail-on: unknown condition", id="bad-fail-on"),
    ],
)
def test_usage_errors_exit_2(
    qfile: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    src = _jsonl_input(tmp_path, _states(1))
    code, out, err = _cli(capfd, "batch", str(qfile), str(src), *extra)
    assert code == 2
    assert message in err and err.count("\n") == 1
    assert out == ""


def test_missing_input_and_output_equal_to_input(
    qfile: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _cli(capfd, "batch", str(qfile), str(tmp_path / "nope.jsonl"))
    assert code == 2 and "no such input" in err
    src = _jsonl_input(tmp_path, _states(1))
    code, _, err = _cli(capfd, "batch", str(qfile), str(src), "-o", str(src))
    assert code == 2 and "is also an input" in err
    assert src.read_text(encoding="utf-8").count("\n") == 1  # untouched


def test_rate_caps_requests_per_minute(
    server: Loopback, qfile: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """'--rate R caps requests per minute': at 1200/min, 4 states are spaced by 0.05 s, so the
    run cannot take less than 0.15 s. Only a LOWER bound is asserted (a sleep never returns
    early), so a slow machine cannot make this flaky."""
    src = _jsonl_input(tmp_path, _states(4))
    started = time.monotonic()
    code, _, _ = _cli(capfd, "batch", str(qfile), str(src), "--rate", "1200", *_base(server))
    assert code == 0
    assert time.monotonic() - started >= 0.15
    assert server.total == 4


def test_progress_bar_on_a_terminal_stderr_only(
    server: Loopback, qfile: Path, tmp_path: Path
) -> None:
    """Issue 5: 'A live progress bar on stderr when stderr is a terminal (done / failed /
    cached / rate / ETA), silent otherwise'. stderr is a real pseudo-terminal here; stdout is
    a file, and the records there stay clean of progress output."""
    import os
    import pty

    server.latency = 0.02
    src = _jsonl_input(tmp_path, _states(40))
    out = tmp_path / "out.jsonl"
    master, slave = pty.openpty()
    env = {**os.environ, "COLUMNS": "120", "TERM": "xterm"}
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "toolnexus", "batch", str(qfile), str(src), "--id-field", "id",
         "--state-field", "text", "--concurrency", "2", "--base-url", server.base_url,
         "--output", str(out)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=slave, env=env,
    )  # fmt: skip
    os.close(slave)
    chunks: list[bytes] = []
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the child closed its end of the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    assert proc.wait(timeout=60) == 0
    screen = b"".join(chunks).decode("utf-8", errors="replace")
    import re

    # The live line (only the bar writes these): "<done>/40 ... <n> failed, <n> cached, <r>/s"
    assert re.search(r"\b\d+/40\b", screen), screen
    assert re.search(r"\d+ failed, \d+ cached, [\d.]+/s", screen), screen
    assert "40 states, 40 ok, 0 failed" in screen  # the summary line survives the bar
    lines = out.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 40 and all(json.loads(line)["id"] for line in lines)
