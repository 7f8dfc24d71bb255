"""``toolnexus serve`` as a process (issue 11 "Operations"): prints its URL (``--port 0`` picks
a free port), one access-log line per request on stderr with no Authorization and no body,
SIGINT/SIGTERM finish in-flight requests and exit 0, and every start-up failure is one line
and exit 2, never a traceback."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from clirun import error_line, run_cli

TOOLNEXUS = [sys.executable, "-m", "toolnexus"]
SECRET = "sk-cli-serve-secret-91c2"
BODY = {
    "model": "jev-latest",
    "state": "charged twice",
    "questions": {"r": {"type": "noul", "instructions": "Refund?"}},
}


@contextmanager
def serving(*args: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    with subprocess.Popen(
        [*TOOLNEXUS, "serve", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            assert proc.stdout is not None
            url = proc.stdout.readline().strip()
            assert url.startswith("http://127.0.0.1:"), url
            yield proc, url
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_finishes_the_request_in_flight_and_exits_0(sig: signal.Signals) -> None:
    """'SIGINT/SIGTERM finish in-flight requests and exit 0'. The request stalls until the
    server stops (60 s only as a hang guard), so it is in flight when the signal lands by
    construction; a 600 ms latency was outlasted by a busy machine (issue 29 item 2)."""
    stall = ["--faults", "stall", "--fault-rate", "1", "--stall-seconds", "60"]
    with serving("--synthetic", *stall) as (proc, url):
        got: dict[str, httpx.Response] = {}

        def client() -> None:
            got["r"] = httpx.post(
                url + "/v1/systemone",
                json=BODY,
                # A hang guard only: on a loaded machine the wait for in-flight, the signal and
                # the server's shutdown took past 10 s once.
                timeout=60,
                headers={"Authorization": f"Bearer {SECRET}"},
            )

        t = threading.Thread(target=client)
        t.start()
        # The signal goes only once the request is being served (the stall holds it in
        # flight): a condition, not a count of polls, with a deadline so a wedged server fails
        # the test instead of hanging it.
        deadline = time.monotonic() + 30
        with httpx.Client(timeout=5, trust_env=False) as stats:
            while not stats.get(url + "/_stats").json()["in_flight"]:
                assert t.is_alive(), "the request ended before it was seen in flight"
                assert time.monotonic() < deadline, "the request never became in flight"
                t.join(0.005)  # wakes at once if the client thread ends
        proc.send_signal(sig)
        t.join(60)
        code = proc.wait(60)
        err = proc.stderr.read() if proc.stderr else ""
    assert got["r"].status_code == 200 and got["r"].json()["answers"]["r"]["type"] == "noul"
    assert code == 0, err
    log = [line for line in err.splitlines() if '"POST /v1/systemone"' in line]
    assert len(log) == 1 and " 200 " in log[0] and "answered" in log[0]
    assert SECRET not in err and "Bearer" not in err and "charged twice" not in err
    assert "Traceback" not in err


def test_replay_of_the_shipped_recordings_from_the_command_line() -> None:
    rec = json.loads(next(Path("recordings").glob("0470*.json")).read_text(encoding="utf-8"))
    with serving("--replay", "recordings") as (proc, url):
        r = httpx.post(
            url + "/v1/systemone",
            timeout=10,
            json={"model": rec["model"], "state": rec["state"], "questions": rec["questions"]},
        )
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(15) == 0
    assert r.json() == rec["response"]


@pytest.mark.parametrize(
    ("args", "expect"),
    [
        pytest.param([], "exactly one answer source", id="no-source"),
        pytest.param(
            ["--synthetic", "--replay", "recordings"], "exactly one answer source", id="two-sources"
        ),
        pytest.param(
            ["--replay", "no/such/dir"],
            "replay directory no/such/dir does not exist",
            id="bad-replay-dir",
        ),
        pytest.param(
            ["--replay", "questions/support-triage.yaml"],
            "replay directory questions/support-triage.yaml is not a directory",
            id="replay-of-a-file-issue-17-14",
        ),
        *(
            pytest.param(
                ["--synthetic", flag, value],
                f"{flag} {value} is out of range ({allowed})",
                id=f"{flag.strip('-')}-{value}-named-issue-17-14",
            )
            for flag, value, allowed in (
                ("--port", "70000", "0..65535"),
                ("--port", "-1", "0..65535"),
                ("--max-body-bytes", "0", "1 or more"),
            )
        ),
        pytest.param(
            ["--synthetic", "--faults", "429,teapot"], "unknown fault 'teapot'", id="bad-fault"
        ),
        pytest.param(
            ["--synthetic", "--fault-rate", "1.5"], "--fault-rate 1.5 is not in 0..1", id="bad-rate"
        ),
        *(
            pytest.param(
                ["--synthetic", flag, value],
                f"{flag} {shown} is not a finite number of 0 or more",
                id=f"{flag.strip('-')}-{value}",
            )
            for flag in ("--latency-ms", "--stall-seconds")
            for value, shown in (("inf", "inf"), ("nan", "nan"), ("-1", "-1.0"))
        ),
        pytest.param(
            ["--synthetic", "--require-key-env", "SERVE_NO_SUCH_VAR"],
            "SERVE_NO_SUCH_VAR names a variable that is not set",
            id="unset-key-env",
        ),
        pytest.param(["--proxy", "ftp://x"], "not an http(s) URL", id="bad-proxy"),
        pytest.param(
            ["--synthetic", "--record", "x"],
            "--record DIR goes with --proxy",
            id="record-without-proxy",
        ),
    ],
)
def test_start_up_errors_are_one_line_and_exit_2(args: list[str], expect: str) -> None:
    """Issue 17 item 14: "`serve --replay somefile.yaml` says 'does not exist' for a file that
    exists (say it is not a directory); a bad port says '--latency-ms, --max-body-bytes or
    --port out of range' (name the one)"."""
    ran = run_cli("serve", "--port", "0", *args)
    assert ran.code == 2
    line = error_line(ran.stderr)
    assert expect in line and ran.out == ""


def test_a_broken_recording_names_its_file(tmp_path: Path) -> None:
    (tmp_path / "broken.json").write_text("{", encoding="utf-8")
    ran = run_cli("serve", "--port", "0", "--replay", str(tmp_path))
    assert ran.code == 2 and "broken.json" in error_line(ran.stderr)


def test_a_port_in_use_is_one_line_and_exit_2() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        ran = subprocess.run(
            [*TOOLNEXUS, "serve", "--synthetic", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=30,
            env={**os.environ, "PYTHONWARNINGS": ""},
        )
    assert ran.returncode == 2 and ran.stdout == ""
    line = error_line(ran.stderr)
    assert f"cannot listen on 127.0.0.1:{port}: address already in use" in line
    assert "--port 0" in line


def test_rate_limit_from_the_command_line_answers_429_and_counts_it() -> None:
    """Issue 19 item 5, as the scheduler's bench runs it: `serve --rate-limit N/min` per key;
    1/min is a burst of one request, so the second is a 429 with both headers (its wait, about
    60 s, is far past anything this test could take), and /_stats counts it."""
    with serving("--synthetic", "--rate-limit", "1/min") as (proc, url):
        auth = {"Authorization": f"Bearer {SECRET}"}
        first = httpx.post(url + "/v1/systemone", json=BODY, headers=auth, timeout=10)
        second = httpx.post(url + "/v1/systemone", json=BODY, headers=auth, timeout=10)
        stats = httpx.get(url + "/_stats", timeout=10).json()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(15) == 0
        err = proc.stderr.read() if proc.stderr else ""
    assert (first.status_code, second.status_code) == (200, 429)
    assert int(second.headers["retry-after"]) >= 59
    assert int(second.headers["retry-after-ms"]) > 58_000
    assert second.json() == {"detail": "Rate limit exceeded: 1 requests per minute."}
    assert stats["limited"] == {"requests": 1, "tokens": 0}
    assert stats["statuses"] == {"200": 1, "429": 1}
    assert "synthetic (seed 0), limits per key 1/min on http" in err
    assert " 429 " in err and "limited:requests" in err and SECRET not in err
