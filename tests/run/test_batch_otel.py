"""``batch`` under OpenTelemetry (issue 23 item 3): 'when an SDK is configured (OTEL_* environment
variables with the SDK installed, or running under opentelemetry-instrument, or --otel), batch
has one parent span for the run with the per-state spans under it, and flushes on exit, on
Ctrl-C and on SIGTERM'. Run as a subprocess with the SDK's console exporter."""

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

pytest.importorskip("opentelemetry.sdk", reason="platform: opentelemetry-sdk is not installed")

from loopback import Loopback

QUESTIONS = "questions:\n  urgent:\n    type: noul\n    instructions: a human today?\n"
STATE = "ticket-state-text-K4p9"


def _files(tmp_path: Path, n: int) -> tuple[Path, Path]:
    q = tmp_path / "q.yaml"
    q.write_text(QUESTIONS, encoding="utf-8")
    inp = tmp_path / "in.jsonl"
    inp.write_text(
        "".join(json.dumps({"id": f"t{i}", "text": f"{STATE} {i}"}) + "\n" for i in range(n)),
        encoding="utf-8",
    )
    return q, inp


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "TYPESAFE_"))}
    return {**env, "OTEL_METRICS_EXPORTER": "none", "OTEL_LOGS_EXPORTER": "none", **extra}


def _spans(stdout: str) -> list[dict[str, Any]]:
    """The console exporter's span objects, one JSON document after another."""
    decoder, spans, i = json.JSONDecoder(), [], 0
    while (i := stdout.find("{", i)) != -1:
        obj, i = decoder.raw_decode(stdout, i)
        spans.append(obj)
    return spans


def _batch(server: Loopback, tmp_path: Path, n: int, *flags: str, env: dict[str, str]) -> Any:
    q, inp = _files(tmp_path, n)
    args = [sys.executable, "-m", "toolnexus", "batch", str(q), str(inp), "--id-field", "id"]
    args += ["--state-field", "text", "--base-url", server.base_url]
    args += ["-o", str(tmp_path / "out.jsonl"), *flags]
    return subprocess.run(args, capture_output=True, text=True, env=env, timeout=60)


def _check_tree(spans: list[dict[str, Any]], n: int) -> None:
    (run,) = [s for s in spans if s["name"] == "toolnexus batch"]
    states = [s for s in spans if s["name"] == "systemone jev-latest"]
    assert run["parent_id"] is None and len(states) == n
    run_id = run["context"]["span_id"]
    assert all(s["parent_id"] == run_id for s in states)
    ids = {s["context"]["span_id"] for s in states}
    attempts = [s for s in spans if s["name"] == "POST"]
    assert len(attempts) == n and all(a["parent_id"] in ids for a in attempts)
    assert run["attributes"]["toolnexus.batch.ok"] == n


@pytest.mark.parametrize(
    ("flags", "env"),
    [
        pytest.param((), {"OTEL_TRACES_EXPORTER": "console"}, id="otel-env-with-the-sdk"),
        pytest.param(("--otel",), {"OTEL_TRACES_EXPORTER": "console"}, id="otel-flag"),
    ],
)
def test_one_run_span_with_the_state_spans_under_it(
    server: Loopback, tmp_path: Path, flags: tuple[str, ...], env: dict[str, str]
) -> None:
    done = _batch(server, tmp_path, 4, *flags, env=_env(**env))
    assert done.returncode == 0, done.stderr
    spans = _spans(done.stdout)
    _check_tree(spans, 4)
    assert STATE not in done.stdout  # no state in any span by default


def test_without_otel_settings_nothing_of_opentelemetry_is_imported(
    server: Loopback, tmp_path: Path
) -> None:
    """'never merely because it is installed'."""
    q, inp = _files(tmp_path, 2)
    code = (
        "import sys\nfrom toolnexus.cli.app import main\n"
        f"try:\n    main(['batch', {str(q)!r}, {str(inp)!r}, '--id-field', 'id', '--state-field', "
        f"'text', '--base-url', {server.base_url!r}, '-o', {str(tmp_path / 'o.jsonl')!r}])\n"
        "except SystemExit:\n    pass\n"
        "print('opentelemetry' in sys.modules)\n"
    )
    env = _env(OTEL_METRICS_EXPORTER="none", OTEL_TRACES_EXPORTER="none")  # "none" is off
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.stdout.strip().splitlines()[-1] == "False", done.stderr
    assert server.total == 2


@pytest.mark.parametrize(
    "sig", [pytest.param(signal.SIGTERM, id="sigterm"), pytest.param(signal.SIGINT, id="ctrl-c")]
)
def test_spans_are_flushed_when_the_run_is_stopped(tmp_path: Path, sig: signal.Signals) -> None:
    """'flushed on exit, on Ctrl-C and on SIGTERM'. The server answers 8 requests and holds the
    rest, so the signal stops a run still going, whatever the machine's speed (issue 29)."""
    with Loopback() as server:
        server.hold(8)
        q, inp = _files(tmp_path, 40)
        args = [sys.executable, "-m", "toolnexus", "batch", str(q), str(inp), "--id-field", "id"]
        args += ["--state-field", "text", "--base-url", server.base_url, "--concurrency", "4"]
        args += ["-o", str(tmp_path / "out.jsonl")]
        env = _env(OTEL_TRACES_EXPORTER="console", OTEL_BSP_SCHEDULE_DELAY="600000")
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        out = tmp_path / "out.jsonl"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (not out.exists() or out.stat().st_size == 0):
            time.sleep(0.05)
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig, stderr
    spans = _spans(stdout.decode())
    (run,) = [s for s in spans if s["name"] == "toolnexus batch"]
    written = len(out.read_text().splitlines())
    assert run["attributes"]["toolnexus.batch.states"] == written
    assert len([s for s in spans if s["name"] == "systemone jev-latest"]) >= written
